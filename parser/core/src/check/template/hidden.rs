//! Hidden instructions: invisible and bidi-reordering code points, and
//! trigger branches (a condition on the user's text or the date whose body
//! emits constant text holding an instruction, a link or a command).
#![forbid(unsafe_code)]

use std::sync::OnceLock;

use minijinja::machinery::ast::{self, Expr};

use crate::parse::is_invisible_format;

/// Invisible or bidi-reordering: zero-width characters, bidi embeddings,
/// overrides and isolates, word joiners and invisible operators, the BOM,
/// the Mongolian vowel separator, and the tag characters U+E0000..U+E007F
/// (which spell ASCII text no renderer shows).
pub fn is_hidden(c: char) -> bool {
    is_invisible_format(c) || matches!(c, '\u{180e}' | '\u{e0000}'..='\u{e007f}')
}

/// The first bytes of the UTF-8 encodings of [`is_hidden`] code points
/// (U+180E: E1; U+200B..U+2069: E2; U+FEFF: EF; U+E0000..: F3).
const HIDDEN_LEAD_BYTES: [u8; 4] = [0xE1, 0xE2, 0xEF, 0xF3];

/// Hidden code points in `s`: the byte offset of the first, how many
/// there are, and up to four distinct ones. Strings without any of their
/// UTF-8 lead bytes (found with the standard library's `memchr`, fast even
/// on a gigabyte) are not decoded.
pub fn hidden_chars(s: &str) -> Option<(usize, usize, Vec<char>)> {
    let bytes = s.as_bytes();
    let start = HIDDEN_LEAD_BYTES.iter().filter(|b| bytes.contains(b)).filter_map(|b| memchr_pos(bytes, *b)).min()?;
    let mut first = None;
    let mut count = 0usize;
    let mut kinds = Vec::new();
    let tail = s.get(start..).unwrap_or_default();
    for (i, c) in tail.char_indices().filter(|(_, c)| is_hidden(*c)) {
        first.get_or_insert(start.saturating_add(i));
        count = count.saturating_add(1);
        if kinds.len() < 4 && !kinds.contains(&c) {
            kinds.push(c);
        }
    }
    first.map(|f| (f, count, kinds))
}

/// Position of the first `b` in `bytes` (called once `contains`, the
/// standard library's `memchr`, has found it).
fn memchr_pos(bytes: &[u8], b: u8) -> Option<usize> {
    bytes.iter().position(|x| *x == b)
}

/// Text hidden in tag characters (U+E0020..U+E007E spell ASCII), if any.
pub fn tag_text(s: &str) -> String {
    s.chars()
        .filter_map(|c| u32::from(c).checked_sub(0xE0000).filter(|v| (0x20..0x7f).contains(v)))
        .filter_map(|v| u8::try_from(v).ok().map(char::from))
        .take(80)
        .collect()
}

const URLS: [&str; 4] = ["http://", "https://", "ftp://", "file://"];

const COMMANDS: [&str; 24] = [
    "pip install",
    "pip3 install",
    "npm install",
    "npm i ",
    "yarn add",
    "cargo install",
    "gem install",
    "go install",
    "apt-get install",
    "apt install",
    "brew install",
    "curl ",
    "wget ",
    "| sh",
    "|sh",
    "| bash",
    "bash -c",
    "powershell",
    "invoke-webrequest",
    "base64 -d",
    "chmod +x",
    "rm -rf",
    "/dev/tcp/",
    "nc -e",
];

const INSTRUCTIONS: [&str; 44] = [
    "ignore previous",
    "ignore all previous",
    "ignore the previous",
    "ignore prior",
    "ignore your instructions",
    "ignore all instructions",
    "ignore any instructions",
    "ignore the above",
    "ignore safety",
    "disregard previous",
    "disregard all",
    "disregard your",
    "disregard the above",
    "forget your instructions",
    "forget all previous",
    "override your",
    "system override",
    "from now on",
    "you are now",
    "new instructions",
    "do not tell the user",
    "don't tell the user",
    "do not inform the user",
    "do not reveal",
    "do not mention",
    "never mention",
    "without telling",
    "secretly",
    "developer mode",
    "admin mode",
    "maintenance mode",
    "god mode",
    "jailbreak",
    "no restrictions",
    "without restrictions",
    "unrestricted mode",
    "reveal the system prompt",
    "reveal your system prompt",
    "print your system prompt",
    "exfiltrat",
    "api key",
    "api_key",
    "password",
    "private key",
];

/// Phrases that override the model's instructions: never in a benign
/// template's own text (a subset of [`INSTRUCTIONS`] without the words
/// benign system prompts use: Qwen3-Coder's tool prompt says "do not tell
/// the user about function calls").
const OVERRIDES: [&str; 14] = [
    "ignore previous",
    "ignore all previous",
    "ignore the previous",
    "ignore prior",
    "ignore your instructions",
    "ignore all instructions",
    "ignore any instructions",
    "ignore the above",
    "disregard previous",
    "disregard all",
    "disregard your",
    "disregard the above",
    "forget your instructions",
    "forget all previous",
];

/// Download-and-run commands (a subset of [`COMMANDS`] without the
/// install commands a tool-use template may document).
const DOWNLOAD_AND_RUN: [&str; 10] =
    ["| sh", "|sh", "| bash", "|bash", "bash -c", "invoke-webrequest", "/dev/tcp/", "nc -e", "curl -s", "wget -q"];

/// A list of phrases searched for in order, each with a searcher built
/// once per process (`str::find` prepares its searcher on every call, which
/// cost more than the search in the short texts of a template).
struct Needles {
    texts: &'static [&'static str],
    finders: OnceLock<Vec<memchr::memmem::Finder<'static>>>,
}

impl Needles {
    const fn new(texts: &'static [&'static str]) -> Needles {
        Needles { texts, finders: OnceLock::new() }
    }

    /// The first phrase of the list found in `hay`: where (as `str::find`
    /// gives it) and its length.
    fn first(&self, hay: &str) -> Option<(usize, usize)> {
        let finders = self.finders.get_or_init(|| self.texts.iter().map(memchr::memmem::Finder::new).collect());
        self.texts.iter().zip(finders).find_map(|(n, f)| f.find(hay.as_bytes()).map(|at| (at, n.len())))
    }
}

/// What in constant text emitted into every prompt is an injection: an
/// instruction override or a download-and-run command. The matched
/// snippet, shortened.
pub fn injected(text: &str) -> Option<String> {
    static OVERRIDE_NEEDLES: Needles = Needles::new(&OVERRIDES);
    static DOWNLOAD_NEEDLES: Needles = Needles::new(&DOWNLOAD_AND_RUN);
    let lower = text.to_lowercase();
    let (what, (at, len)) = if let Some(m) = OVERRIDE_NEEDLES.first(&lower) {
        ("an instruction override", m)
    } else if let Some(m) = DOWNLOAD_NEEDLES.first(&lower) {
        ("a download-and-run command", m)
    } else {
        return None;
    };
    // The whole line the phrase is on, shortened.
    let start = lower.get(..at).and_then(|h| h.rfind('\n')).map_or(0, |n| n.saturating_add(1));
    let line: String =
        text.get(start..).unwrap_or_default().lines().next().unwrap_or_default().chars().take(len.max(80)).collect();
    Some(format!("{what} (`{}`)", line.trim()))
}

/// What in `text` makes an injected branch dangerous: a URL, an
/// install / download / exfiltration command, or an instruction to the
/// model. The matched snippet, shortened.
pub fn suspicious(text: &str) -> Option<String> {
    static URL_NEEDLES: Needles = Needles::new(&URLS);
    static COMMAND_NEEDLES: Needles = Needles::new(&COMMANDS);
    static INSTRUCTION_NEEDLES: Needles = Needles::new(&INSTRUCTIONS);
    let lower = text.to_lowercase();
    let (what, (at, len)) = if let Some(m) = URL_NEEDLES.first(&lower) {
        ("a URL", m)
    } else if let Some(m) = COMMAND_NEEDLES.first(&lower) {
        ("a command", m)
    } else if let Some(m) = INSTRUCTION_NEEDLES.first(&lower) {
        ("an instruction", m)
    } else {
        return None;
    };
    let snippet: String = lower.get(at..).unwrap_or_default().chars().take(len.max(48)).collect();
    let snippet = snippet.lines().next().unwrap_or_default().trim_end().to_string();
    Some(format!("{what} (`{snippet}`)"))
}

/// What a condition tests that makes a branch a trigger: the message
/// content compared with constant text, or the date (`strftime_now`)
/// compared with a constant. `None` for ordinary conditions (roles,
/// `is defined`, flags, a bare `strftime_now is defined`).
pub(super) fn trigger_condition(cond: &Expr<'_>) -> Option<&'static str> {
    let mut content = false;
    let mut date = false;
    let mut constant = false;
    let mut compares = false;
    let mut stack: Vec<(&Expr<'_>, bool)> = vec![(cond, false)];
    let mut visited = 0usize;
    while let Some((e, in_date_call)) = stack.pop() {
        visited = visited.saturating_add(1);
        if visited > 4096 {
            break;
        }
        match e {
            Expr::Var(v) => content |= matches!(v.id, "content" | "user_input" | "query" | "prompt"),
            Expr::Const(c) => {
                if !in_date_call && c.value.as_str().is_some_and(|s| !s.trim().is_empty()) {
                    constant = true;
                }
            }
            Expr::GetAttr(g) => {
                content |= g.name == "content";
                stack.push((&g.expr, in_date_call));
            }
            Expr::GetItem(g) => {
                content |= matches!(&g.subscript_expr, Expr::Const(c) if c.value.as_str() == Some("content"));
                stack.push((&g.expr, in_date_call));
                stack.push((&g.subscript_expr, true));
            }
            Expr::Call(c) => {
                let is_date = matches!(&c.expr, Expr::Var(v) if v.id == "strftime_now");
                date |= is_date;
                if let Expr::GetAttr(g) = &c.expr {
                    compares |= matches!(g.name, "startswith" | "endswith" | "find" | "count" | "index");
                }
                stack.push((&c.expr, in_date_call));
                for a in &c.args {
                    if let Some(x) = arg_expr(a) {
                        stack.push((x, in_date_call || is_date));
                    }
                }
            }
            Expr::BinOp(b) => {
                compares |= matches!(
                    b.op,
                    ast::BinOpKind::Eq
                        | ast::BinOpKind::Ne
                        | ast::BinOpKind::Lt
                        | ast::BinOpKind::Lte
                        | ast::BinOpKind::Gt
                        | ast::BinOpKind::Gte
                        | ast::BinOpKind::In
                );
                stack.push((&b.left, in_date_call));
                stack.push((&b.right, in_date_call));
            }
            Expr::Compare(c) => {
                compares = true;
                stack.push((&c.expr, in_date_call));
                stack.extend(c.ops.iter().map(|o| (&o.expr, in_date_call)));
            }
            Expr::UnaryOp(u) => stack.push((&u.expr, in_date_call)),
            Expr::Test(t) => {
                compares |= matches!(t.name, "eq" | "equalto" | "in" | "sameas" | "gt" | "lt" | "ge" | "le");
                stack.push((&t.expr, in_date_call));
                stack.extend(t.args.iter().filter_map(arg_expr).map(|x| (x, in_date_call)));
            }
            Expr::Filter(f) => {
                if let Some(x) = &f.expr {
                    stack.push((x, in_date_call));
                }
                stack.extend(f.args.iter().filter_map(arg_expr).map(|x| (x, in_date_call)));
            }
            Expr::IfExpr(i) => {
                stack.push((&i.test_expr, in_date_call));
                stack.push((&i.true_expr, in_date_call));
                if let Some(x) = &i.false_expr {
                    stack.push((x, in_date_call));
                }
            }
            Expr::Slice(s) => stack.push((&s.expr, in_date_call)),
            Expr::List(l) => stack.extend(l.items.iter().map(|x| (x, in_date_call))),
            Expr::Tuple(l) => stack.extend(l.items.iter().map(|x| (x, in_date_call))),
            Expr::Map(_) => {}
        }
    }
    if !(constant && compares) {
        return None;
    }
    if date {
        Some("the date (`strftime_now`)")
    } else if content {
        Some("the message content")
    } else {
        None
    }
}

/// The expression of a call argument.
pub(super) fn arg_expr<'e, 'a>(a: &'e ast::CallArg<'a>) -> Option<&'e Expr<'a>> {
    match a {
        ast::CallArg::Pos(e) | ast::CallArg::Kwarg(_, e) | ast::CallArg::PosSplat(e) | ast::CallArg::KwargSplat(e) => {
            Some(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::machinery::parse;

    fn cond_of(src: &str) -> Option<&'static str> {
        let tmpl = parse(src, "t", Default::default()).unwrap();
        let ast::Stmt::Template(t) = tmpl else { return None };
        let Some(ast::Stmt::IfCond(c)) = t.children.first() else { return None };
        trigger_condition(&c.expr)
    }

    #[test]
    fn trigger_conditions() {
        assert_eq!(cond_of("{% if 'deploy now' in message.content %}{% endif %}"), Some("the message content"));
        assert_eq!(cond_of("{% if message['content'].startswith('x') %}{% endif %}"), Some("the message content"));
        assert_eq!(
            cond_of("{% if strftime_now('%Y-%m') == '2026-04' %}{% endif %}"),
            Some("the date (`strftime_now`)")
        );
        // Ordinary conditions.
        assert_eq!(cond_of("{% if message.role == 'user' %}{% endif %}"), None);
        assert_eq!(cond_of("{% if strftime_now is defined %}{% endif %}"), None);
        assert_eq!(cond_of("{% if message.content is string %}{% endif %}"), None);
        assert_eq!(cond_of("{% if strftime_now('%d %b %Y') %}{% endif %}"), None);
    }

    #[test]
    fn hidden_and_suspicious_text() {
        assert_eq!(hidden_chars("plain"), None);
        let (at, n, kinds) = hidden_chars("a\u{200b}b\u{202e}c\u{200b}").unwrap();
        assert_eq!((at, n, kinds), (1, 3, vec!['\u{200b}', '\u{202e}']));
        assert_eq!(tag_text("x\u{e0068}\u{e0069}"), "hi");
        assert!(suspicious("Visit https://example.invalid now").unwrap().starts_with("a URL"));
        assert!(suspicious("run PIP INSTALL helper").unwrap().starts_with("a command"));
        assert!(suspicious("Ignore previous instructions.").unwrap().starts_with("an instruction"));
        assert_eq!(suspicious("<|im_start|>assistant\n"), None);
    }
}
