//! Bounded parsing: what is checked on the token stream before minijinja's
//! recursive parser sees a template, and what is judged when it refuses one.
//!
//! - [`prepare`] turns `{% generation %}` / `{% endgeneration %}` (a
//!   transformers extension llama.cpp ignores) into comments of the same
//!   length, and refuses a tag whose expression could nest deeper than
//!   [`limits::MAX_TEMPLATE_TAG_NESTING`]: every level of an expression
//!   tree takes at least one operator, `.`, `[`, `(`, `{`, `|`, `not`, `is`
//!   or `if` token of its tag, so counting them bounds the depth the parser
//!   recurses to (and the depth of the tree it builds and drops) before it
//!   runs. Statement nesting is bounded by minijinja itself (150).
//! - [`llama_accepts`] approximates llama.cpp's engine
//!   (`common/jinja/parser.cpp`): the statements it knows, with their blocks
//!   closed in order.
//! - [`token_scan`] looks for Python internals in the tokens of a template
//!   that did not parse, so a template that only minijinja refuses is not
//!   left unexamined.
#![forbid(unsafe_code)]

use minijinja::machinery::{Token, tokenize};

use crate::limits;

use super::chains::{is_dangerous, is_internal};

/// Why a template was not handed to the parser.
#[derive(Debug)]
pub(super) struct TooDeep {
    /// Byte offset of the tag.
    pub offset: usize,
    /// Nesting tokens counted in it.
    pub count: usize,
}

fn offset(span: &minijinja::machinery::Span) -> usize {
    usize::try_from(span.start_offset).unwrap_or(usize::MAX)
}

fn end_offset(span: &minijinja::machinery::Span) -> usize {
    usize::try_from(span.end_offset).unwrap_or(usize::MAX)
}

fn nests(t: &Token<'_>) -> bool {
    match t {
        Token::Ident(w) => matches!(*w, "not" | "and" | "or" | "in" | "is" | "if"),
        Token::TemplateData(_)
        | Token::VariableStart
        | Token::VariableEnd
        | Token::BlockStart
        | Token::BlockEnd
        | Token::Str(_)
        | Token::String(_)
        | Token::Int(_)
        | Token::Int128(_)
        | Token::Float(_)
        | Token::Comma
        | Token::Colon
        | Token::Assign
        | Token::BracketClose
        | Token::ParenClose
        | Token::BraceClose => false,
        _ => true,
    }
}

/// The template as the parser should see it, or the first tag that nests
/// too deep. A lexer error is left for the parser to report.
pub(super) fn prepare(src: &str) -> Result<String, TooDeep> {
    let mut out = src.as_bytes().to_vec();
    let mut count = 0usize;
    let mut tag_start = 0usize;
    // Position of the last `{%`, and whether the tag so far is exactly
    // `{% generation` / `{% endgeneration`.
    let mut block: Option<(usize, bool)> = None;
    let mut prev_block_start = false;
    for tok in tokenize(src, false, Default::default()) {
        let Ok((tok, span)) = tok else { break };
        match tok {
            Token::VariableStart | Token::BlockStart => {
                count = 0;
                tag_start = offset(&span);
                block = matches!(tok, Token::BlockStart).then_some((tag_start, false));
                prev_block_start = matches!(tok, Token::BlockStart);
                continue;
            }
            Token::Ident(w) if prev_block_start => {
                block = block.map(|(at, _)| (at, matches!(w, "generation" | "endgeneration")));
            }
            Token::BlockEnd => {
                if let Some((at, true)) = block {
                    let end = end_offset(&span);
                    // `{%` -> `{#` and `%}` -> `#}`: a comment of the same length.
                    if let Some(b) = out.get_mut(at.saturating_add(1)) {
                        *b = b'#';
                    }
                    if let Some(b) = end.checked_sub(2).and_then(|i| out.get_mut(i)) {
                        *b = b'#';
                    }
                }
                block = None;
            }
            // Anything else inside the tag: not a bare `{% generation %}`.
            _ => block = block.map(|(at, _)| (at, false)),
        }
        prev_block_start = false;
        if nests(&tok) {
            count = count.saturating_add(1);
            if count > limits::MAX_TEMPLATE_TAG_NESTING {
                return Err(TooDeep { offset: tag_start, count });
            }
        }
    }
    // Only ASCII bytes were replaced, so this stays UTF-8.
    Ok(String::from_utf8(out).unwrap_or_else(|_| src.to_string()))
}

/// Whether llama.cpp's engine would parse the template, approximately: it
/// lexes, every statement is one it knows, and blocks close in order.
pub(super) fn llama_accepts(src: &str) -> bool {
    let mut stack: Vec<&str> = Vec::new();
    let mut after_block_start = false;
    for tok in tokenize(src, false, Default::default()) {
        let Ok((tok, _)) = tok else { return false };
        if after_block_start {
            after_block_start = false;
            let Token::Ident(name) = tok else { return false };
            match name {
                "if" | "for" | "macro" | "call" | "filter" => stack.push(name),
                // A block `set` (no `=`) is closed by `endset`; telling the
                // two apart needs the rest of the tag, so both are accepted.
                "set" | "break" | "continue" | "generation" | "endgeneration" => {}
                "elif" => {
                    if stack.last() != Some(&"if") {
                        return false;
                    }
                }
                "else" => {
                    if !matches!(stack.last(), Some(&"if") | Some(&"for")) {
                        return false;
                    }
                }
                "endset" => {}
                _ => match name.strip_prefix("end") {
                    Some(what) if stack.last() == Some(&what) => {
                        stack.pop();
                    }
                    _ => return false,
                },
            }
        }
        if matches!(tok, Token::BlockStart) {
            after_block_start = true;
        }
    }
    stack.is_empty()
}

/// Python internals named in the tokens of a template (attribute names
/// after `.`, string literals, `|attr`): byte offset and what was seen.
/// For templates that do not parse.
pub(super) fn token_scan(src: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut prev: Option<Token<'_>> = None;
    for tok in tokenize(src, false, Default::default()) {
        let Ok((tok, span)) = tok else { break };
        let at = offset(&span);
        let name: Option<&str> = match &tok {
            Token::Ident(n) if matches!(prev, Some(Token::Dot)) => Some(n),
            Token::Ident(n) if is_internal(n) => Some(n),
            Token::Str(s) => Some(s),
            Token::String(s) => Some(s),
            _ => None,
        };
        if let Some(n) = name.filter(|n| is_internal(n) || (matches!(prev, Some(Token::Dot)) && is_dangerous(n))) {
            out.push((at, format!("`{n}`")));
        }
        if matches!(tok, Token::Ident("attr")) && matches!(prev, Some(Token::Pipe)) {
            out.push((at, "`|attr`".to_string()));
        }
        if out.len() >= 16 {
            break;
        }
        prev = Some(tok);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_tags_become_comments_of_the_same_length() {
        let src = "a{%- generation -%}b{% endgeneration %}c{% if x %}{% endif %}";
        let p = prepare(src).unwrap();
        assert_eq!(p, "a{#- generation -#}b{# endgeneration #}c{% if x %}{% endif %}");
    }

    #[test]
    fn deep_tags_are_refused_before_parsing() {
        let deep = format!("{{{{ {}x{} }}}}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(matches!(prepare(&deep), Err(TooDeep { offset: 0, .. })));
        let nots = format!("{{{{ {} x }}}}", "not ".repeat(100_000));
        assert!(prepare(&nots).is_err());
        let chain = format!("{{{{ x{} }}}}", ".a".repeat(100_000));
        assert!(prepare(&chain).is_err());
        // Many shallow tags are fine.
        let wide = "{{ a + b }}".repeat(10_000);
        assert!(prepare(&wide).is_ok());
    }

    #[test]
    fn llama_engine_statements() {
        assert!(llama_accepts("{% if a %}{% elif b %}{% else %}{% endif %}{% for x in y %}{% break %}{% endfor %}"));
        assert!(llama_accepts("{% generation %}x{% endgeneration %}{% set a = 1 %}"));
        assert!(!llama_accepts("{% with a = 1 %}{% endwith %}"));
        assert!(!llama_accepts("{% if a %}{% endfor %}"));
        assert!(!llama_accepts("{% if a %}"));
        assert!(!llama_accepts("{{ 'unterminated }}"));
    }

    #[test]
    fn token_scan_finds_internals() {
        let hits = token_scan("{% with %}{{ x.__class__ }}{{ y|attr('a') }}{{ z['__globals__'] }}");
        let seen: Vec<&str> = hits.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(seen, ["`__class__`", "`|attr`", "`__globals__`"]);
    }
}
