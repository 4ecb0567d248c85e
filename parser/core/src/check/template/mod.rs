//! Chat templates: code execution, hidden instructions, parse failures and
//! special tokens, found by parsing each template and walking its AST.
//!
//! - [`analyse`] is the whole analysis of one template, a pure function of
//!   its text: findings with line and column, and the special tokens it
//!   emits. Work and memory stay linear in the template's length
//!   ([`limits::MAX_TEMPLATE_BYTES`] and the bounds beside it); a bound
//!   that is hit is itself a finding.
//! - `bound`: what is checked before the parser runs (nesting depth),
//!   and what is judged when it refuses a template (llama.cpp's engine,
//!   a token scan).
//! - `fold`: constant folding; `chains`: the AST walk and the chains
//!   that reach Python internals; `hidden`: invisible characters and
//!   trigger branches; `taint`: where values come from (the messages,
//!   their content, role and fields, the date) for the trigger and
//!   role-branch findings; `tokens`: special-token spellings.
//! - `check` (crate-internal) finds the templates of a GGUF file
//!   (`tokenizer.chat_template`, `tokenizer.chat_template.<name>`, keys
//!   aliasing them through a NUL, and any other metadata string that looks
//!   like Jinja, outside the vocabulary) and reports through the sink.
//!
//! The parser is minijinja's (`unstable_machinery`, pinned): the one Jinja
//! parser in Rust that exposes its AST, with no dependencies of its own.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

mod bound;
mod chains;
mod fold;
mod hidden;
mod recursion;
mod taint;
mod tokens;

use crate::limits;
use crate::parse::{GgufFile, KeyValue, Str, Value};
use crate::report::Sink;
use crate::rules::RuleId;
use crate::types::ValueType;

use super::kv::kv_path;

pub use hidden::is_hidden;

/// The kind of a finding (one rule each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A chain reaching Python internals (`template-code-execution`).
    CodeExecution,
    /// Neither minijinja nor llama.cpp's engine parses it (`template-unparseable`).
    Unparseable,
    /// minijinja refuses it, llama.cpp's engine accepts it (`template-syntax`).
    Syntax,
    /// Invisible or bidi-reordering code points (`template-hidden-text`).
    HiddenText,
    /// A trigger branch emitting an instruction, URL or command (`template-trigger`).
    Trigger,
    /// Constant text, emitted whatever the conversation, that overrides the
    /// model's instructions or runs a download (`template-injected-instruction`).
    Injected,
    /// A branch on a custom role or another message field that replaces
    /// the message's content with constant text (`template-role-branch`).
    RoleBranch,
    /// A bound of the analysis was hit (`template-analysis-limit`).
    AnalysisLimit,
    /// A macro that calls itself without end, or deeper than the limit
    /// from constant arguments (`template-recursion`).
    Recursion,
}

impl Kind {
    /// The rule this kind of finding is reported under.
    pub fn rule(self) -> RuleId {
        match self {
            Kind::CodeExecution => RuleId::TemplateCodeExecution,
            Kind::Unparseable => RuleId::TemplateUnparseable,
            Kind::Syntax => RuleId::TemplateSyntax,
            Kind::HiddenText => RuleId::TemplateHiddenText,
            Kind::Trigger => RuleId::TemplateTrigger,
            Kind::Injected => RuleId::TemplateInjectedInstruction,
            Kind::RoleBranch => RuleId::TemplateRoleBranch,
            Kind::AnalysisLimit => RuleId::TemplateAnalysisLimit,
            Kind::Recursion => RuleId::TemplateRecursion,
        }
    }
}

/// One finding in a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What was found.
    pub kind: Kind,
    /// Byte offset in the template.
    pub offset: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What fired, with the template text involved.
    pub message: String,
}

/// A special-token spelling the template emits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecialToken {
    /// The token, e.g. `<|im_start|>`.
    pub text: String,
    /// Byte offset in the template of its first occurrence.
    pub offset: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// The analysis of one template.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Findings, in template order.
    pub findings: Vec<Finding>,
    /// Special-token spellings it emits, first occurrence each.
    pub special_tokens: Vec<SpecialToken>,
}

/// Line starts, to turn byte offsets into line and column. Indexed only
/// for templates the analysis examines ([`limits::MAX_TEMPLATE_BYTES`]);
/// a larger one has at most two findings, whose lines are counted.
struct Lines<'s> {
    src: &'s str,
    starts: Option<Vec<usize>>,
}

impl<'s> Lines<'s> {
    fn new(src: &'s str) -> Lines<'s> {
        let starts = (src.len() <= limits::MAX_TEMPLATE_BYTES).then(|| {
            let mut v = vec![0];
            v.extend(memchr::memchr_iter(b'\n', src.as_bytes()).map(|i| i.saturating_add(1)));
            v
        });
        Lines { src, starts }
    }

    fn at(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.src.len());
        while !self.src.is_char_boundary(offset) {
            offset = offset.saturating_sub(1);
        }
        let before = self.src.get(..offset).unwrap_or_default();
        let (line, start) = match &self.starts {
            Some(starts) => {
                let line = starts.partition_point(|s| *s <= offset).max(1);
                (line, starts.get(line.saturating_sub(1)).copied().unwrap_or(0))
            }
            None => {
                (before.matches('\n').count().saturating_add(1), before.rfind('\n').map_or(0, |i| i.saturating_add(1)))
            }
        };
        let col = self.src.get(start..offset).map_or(1, |s| s.chars().count().saturating_add(1));
        (line, col)
    }
}

/// The characters of the template's widest line, when some line has more
/// than [`limits::MAX_TEMPLATE_LINE_CHARS`] (a line has at most as many
/// characters as bytes, so only longer lines are counted); otherwise at
/// most that bound.
fn widest_line(src: &str) -> usize {
    let bytes = src.as_bytes();
    let mut widest = 0usize;
    let mut start = 0usize;
    for end in memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len())) {
        if end.saturating_sub(start) > limits::MAX_TEMPLATE_LINE_CHARS {
            widest = widest.max(src.get(start..end).map_or(0, |l| l.chars().count()));
        }
        start = end.saturating_add(1);
    }
    widest
}

/// Analyses one template: code-execution chains, parse failures, hidden
/// characters, trigger branches, and the special tokens it emits.
pub fn analyse(src: &str) -> Analysis {
    let lines = Lines::new(src);
    let mut raw: Vec<(Kind, usize, String)> = Vec::new();
    let mut emitted = Vec::new();
    if let Some((at, count, kinds)) = hidden::hidden_chars(src) {
        raw.push((Kind::HiddenText, at, hidden_message(src, count, &kinds)));
    }
    if src.len() > limits::MAX_TEMPLATE_BYTES {
        raw.push((
            Kind::AnalysisLimit,
            0,
            format!(
                "the template is {} bytes, more than the {} the analysis examines; it was not checked for code execution",
                src.len(),
                limits::MAX_TEMPLATE_BYTES
            ),
        ));
        return finish(&lines, raw, emitted);
    }
    // minijinja counts columns in a u16 (saturating), and a syntax error at
    // a saturated column overflows it (a panic with overflow checks): a
    // line that long is never handed to it.
    let widest = widest_line(src);
    if widest > limits::MAX_TEMPLATE_LINE_CHARS {
        raw.push((
            Kind::AnalysisLimit,
            0,
            format!(
                "a line of the template has {widest} characters, more than the {} the analysis examines; it was not checked for code execution",
                limits::MAX_TEMPLATE_LINE_CHARS
            ),
        ));
        return finish(&lines, raw, emitted);
    }
    let prepared = match bound::prepare(src) {
        Ok(p) => p,
        Err(deep) => {
            raw.push((
                Kind::AnalysisLimit,
                deep.offset,
                format!(
                    "a tag holds more than {} nesting operators ({} counted before stopping); the template was not parsed or checked for code execution",
                    limits::MAX_TEMPLATE_TAG_NESTING,
                    deep.count
                ),
            ));
            return finish(&lines, raw, emitted);
        }
    };
    match minijinja::machinery::parse(&prepared, "template", Default::default()) {
        Ok(ast) => {
            let mut w = chains::Walker::new(&prepared);
            w.run(&ast);
            raw.append(&mut w.findings);
            recursion::check(&ast, &mut raw);
            emitted = std::mem::take(&mut w.emitted);
        }
        Err(e) => {
            let at = e.range().map_or(0, |r| r.start);
            let why = e.detail().unwrap_or("syntax error").to_string();
            if why.contains("recursion") {
                raw.push((
                    Kind::AnalysisLimit,
                    at,
                    format!(
                        "the template nests deeper than the parser goes ({why}); it was not checked for code execution"
                    ),
                ));
            } else if bound::llama_accepts(&prepared) {
                raw.push((
                    Kind::Syntax,
                    at,
                    format!("minijinja (and so Jinja2-compatible renderers) refuses the template: {why}; llama.cpp's engine accepts it; it was checked by a token scan only"),
                ));
            } else {
                raw.push((
                    Kind::Unparseable,
                    at,
                    format!("the template does not parse ({why}), in minijinja nor in llama.cpp's engine; it was checked by a token scan only"),
                ));
            }
            for (at, what) in bound::token_scan(&prepared) {
                raw.push((
                    Kind::CodeExecution,
                    at,
                    format!("the unparsed template names the Python internal {what}: an unsandboxed renderer runs such a name as code"),
                ));
            }
        }
    }
    finish(&lines, raw, emitted)
}

fn hidden_message(text: &str, count: usize, kinds: &[char]) -> String {
    let names: Vec<String> = kinds.iter().map(|c| format!("U+{:04X}", u32::from(*c))).collect();
    let tag = hidden::tag_text(text);
    let spelled = if tag.is_empty() { String::new() } else { format!("; the tag characters spell `{tag}`") };
    format!(
        "{count} invisible or bidi-reordering code point(s) ({}){spelled}: text a reviewer does not see but the model reads",
        names.join(", ")
    )
}

/// Line and column of increasing offsets, each line's columns counted
/// once (linear in the template, however many findings share a line).
struct Cursor<'l, 's> {
    lines: &'l Lines<'s>,
    last: Option<(usize, usize, usize)>,
}

impl Cursor<'_, '_> {
    fn at(&mut self, offset: usize) -> (usize, usize) {
        let (line, col) = match self.last {
            Some((o, l, c)) if o <= offset => {
                let between = self.lines.src.get(o..offset).unwrap_or("\n");
                if between.contains('\n') {
                    self.lines.at(offset)
                } else {
                    (l, c.saturating_add(between.chars().count()))
                }
            }
            _ => self.lines.at(offset),
        };
        self.last = Some((offset, line, col));
        (line, col)
    }
}

fn finish(lines: &Lines<'_>, mut raw: Vec<(Kind, usize, String)>, mut emitted: Vec<(String, usize)>) -> Analysis {
    raw.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut cursor = Cursor { lines, last: None };
    let findings = raw
        .into_iter()
        .map(|(kind, offset, message)| {
            let (line, column) = cursor.at(offset);
            Finding { kind, offset, line, column, message }
        })
        .collect();
    emitted.sort_by_key(|(_, offset)| *offset);
    let mut cursor = Cursor { lines, last: None };
    let special_tokens = emitted
        .into_iter()
        .map(|(text, offset)| {
            let (line, column) = cursor.at(offset);
            SpecialToken { text, offset, line, column }
        })
        .collect();
    Analysis { findings, special_tokens }
}

/// Whether a string looks like a Jinja template: a `{{` or `{%` followed
/// later by `}}` or `%}`. Searches with `str::find(char)` (the standard
/// library's `memchr`), so a gigabyte of text costs milliseconds.
pub fn looks_like_jinja(s: &str) -> bool {
    let Some(open) = find_pair(s, 0, '{', |next| matches!(next, b'{' | b'%')) else { return false };
    // A closer after the opener: `}` preceded by `}` or `%`.
    let mut at = open.saturating_add(2);
    while let Some(i) = s.get(at..).and_then(|t| t.find('}')) {
        let close = at.saturating_add(i);
        if close >= open.saturating_add(3) && matches!(s.as_bytes().get(close.saturating_sub(1)), Some(b'}' | b'%')) {
            return true;
        }
        at = close.saturating_add(1);
    }
    false
}

/// The first `c` at or after `from` whose next byte satisfies `next`.
fn find_pair(s: &str, from: usize, c: char, next: impl Fn(u8) -> bool) -> Option<usize> {
    let mut at = from;
    while let Some(i) = s.get(at..).and_then(|t| t.find(c)) {
        let pos = at.saturating_add(i);
        if s.as_bytes().get(pos.saturating_add(1)).is_some_and(|b| next(*b)) {
            return Some(pos);
        }
        at = pos.saturating_add(1);
    }
    None
}

/// `tokenizer.chat_template`, `tokenizer.chat_template.<name>`, or a key
/// that a C-string reader sees as one of those (cut at a NUL).
pub fn is_template_key(key: &[u8]) -> bool {
    // Cut at a NUL, the key is this name only if it starts with it.
    if !key.starts_with(b"tokenizer.chat_template") {
        return false;
    }
    let key = key.split(|b| *b == 0).next().unwrap_or_default();
    key == b"tokenizer.chat_template" || key.starts_with(b"tokenizer.chat_template.")
}

/// Keys whose values are the vocabulary or tokenizer data: they hold `{{`,
/// `{%` and invisible characters legitimately and are not free text.
fn is_vocabulary_key(key: &[u8]) -> bool {
    key.starts_with(b"tokenizer.ggml.") || key == b"tokenizer.huggingface.json" || key == b"tokenizer.rwkv.world"
}

/// One template finding in a file, ready for the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileFinding {
    /// The rule.
    pub rule: RuleId,
    /// Absolute offset: the string value's (or the key's type field for a
    /// value of the wrong type, or the character's for hidden text outside
    /// templates).
    pub offset: u64,
    /// `kv[12] tokenizer.chat_template @3:14`.
    pub path: String,
    /// What fired.
    pub message: String,
}

/// Findings collected in file order, with [`Sink`]'s calling convention.
#[derive(Debug, Default)]
struct Out(Vec<FileFinding>);

impl Out {
    fn emit(&mut self, rule: RuleId, offset: u64, path: impl FnOnce() -> String, message: impl FnOnce() -> String) {
        self.0.push(FileFinding { rule, offset, path: path(), message: message() });
    }
}

/// Runs the `template-*` rules over a file.
pub(crate) fn check(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    for f in file_findings(file) {
        sink.emit(f.rule, f.offset, || f.path, || f.message);
    }
}

/// Every template finding of a file: the templates it holds (and Jinja in
/// other values) analysed, free text scanned for hidden characters, and
/// emitted special tokens looked up in the vocabulary.
pub fn file_findings(file: &GgufFile<'_>) -> Vec<FileFinding> {
    let mut out = Out::default();
    let sink = &mut out;
    let mut emitted: Vec<(String, KeyValue<'_>, SpecialToken)> = Vec::new();
    // Keys first: only templates, strings and arrays are decoded.
    for (i, key, value_type) in file.kvs.keys_and_types() {
        let wanted = is_template_key(key)
            || (matches!(value_type, Some(ValueType::String | ValueType::Array)) && !is_vocabulary_key(key));
        if !wanted {
            continue;
        }
        let Some(kv) = file.kvs.get(i) else { continue };
        if is_template_key(kv.key.bytes) {
            match kv.value {
                Value::String(s) => {
                    let a = analyse(&String::from_utf8_lossy(s.bytes));
                    report(&kv, None, &a, sink);
                    emitted.extend(a.special_tokens.into_iter().map(|t| (t.text.clone(), kv, t)));
                }
                v => sink.emit(
                    RuleId::TemplateValueType,
                    kv.type_offset(),
                    || kv_path(&kv),
                    || {
                        format!(
                            "`{}` is a {}; a chat template is a string (llama.cpp aborts reading it as one)",
                            kv.key.display(),
                            type_name(&v)
                        )
                    },
                ),
            }
            continue;
        }
        match kv.value {
            Value::String(s) => free_text(&kv, None, s, sink),
            Value::Array(a) if a.elem_type == ValueType::String => {
                for (i, s) in a.strings() {
                    free_text(&kv, Some(i), s, sink);
                }
            }
            _ => {}
        }
    }
    special_tokens(file, &emitted, sink);
    out.0
}

/// Any other string: hidden characters, and the template analysis when it
/// looks like Jinja (without parse findings: it need not be a template).
fn free_text(kv: &KeyValue<'_>, index: Option<u64>, s: Str<'_>, sink: &mut Out) {
    let text = String::from_utf8_lossy(s.bytes);
    if looks_like_jinja(&text) {
        let mut a = analyse(&text);
        a.findings.retain(|f| !matches!(f.kind, Kind::Syntax | Kind::Unparseable));
        report(kv, index, &a, sink);
    } else if let Some((at, count, kinds)) = hidden::hidden_chars(&text) {
        let path = || match index {
            Some(i) => format!("{}[{i}]", kv_path(kv)),
            None => kv_path(kv),
        };
        let offset = s.content_offset().saturating_add(u64::try_from(at).unwrap_or(0));
        sink.emit(RuleId::TemplateHiddenText, offset, path, || hidden_message(&text, count, &kinds));
    }
}

fn report(kv: &KeyValue<'_>, index: Option<u64>, a: &Analysis, sink: &mut Out) {
    let offset = match (index, kv.value) {
        (None, Value::String(s)) => s.offset,
        _ => kv.value_offset(),
    };
    for f in &a.findings {
        sink.emit(
            f.kind.rule(),
            offset,
            || match index {
                Some(i) => format!("{}[{i}] @{}:{}", kv_path(kv), f.line, f.column),
                None => format!("{} @{}:{}", kv_path(kv), f.line, f.column),
            },
            || f.message.clone(),
        );
    }
}

fn type_name(v: &Value<'_>) -> String {
    match v {
        Value::Array(a) => format!("array of {}", a.elem_type.name()),
        v => v.value_type().name().to_string(),
    }
}

/// Emitted special tokens the vocabulary lacks (only when the file has one).
fn special_tokens(file: &GgufFile<'_>, emitted: &[(String, KeyValue<'_>, SpecialToken)], sink: &mut Out) {
    if emitted.is_empty() {
        return;
    }
    let Some(tokens) = file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().copied()) else { return };
    if tokens.elem_type != ValueType::String {
        return;
    }
    let wanted: std::collections::HashSet<&[u8]> = emitted.iter().map(|(t, _, _)| t.as_bytes()).collect();
    let mut found: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
    for (_, s) in tokens.strings() {
        if wanted.contains(s.bytes) {
            found.insert(s.bytes);
        }
    }
    for (text, kv, t) in emitted {
        if found.contains(text.as_bytes()) {
            continue;
        }
        let offset = kv.value.as_string().map_or(kv.value_offset(), |s| s.offset);
        sink.emit(
            RuleId::TemplateSpecialToken,
            offset,
            || format!("{} @{}:{}", kv_path(kv), t.line, t.column),
            || {
                format!(
                    "the template emits `{}`, which `tokenizer.ggml.tokens` does not hold: it is tokenised as plain text",
                    crate::parse::quote_bytes(text.as_bytes())
                )
            },
        );
    }
}

#[cfg(test)]
mod tests;
