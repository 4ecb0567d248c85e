//! The AST walk: constant folding of every expression (through `{% set %}`
//! chains, namespaces, loops over constant lists and macro calls with
//! constant arguments), and the chains of attribute access, item access,
//! filters and calls that reach Python internals.
//!
//! A chain (`x.a[b]|attr(c)(d)`) is reported once, at its outermost node,
//! when one of its links is
//! - a Python internal: a dunder or private name (`__class__`,
//!   `_TemplateReference__context`) or a frame/function attribute (`mro`,
//!   `f_globals`, ...), however the name was built;
//! - a module or function that runs code (`os`, `subprocess`, `popen`,
//!   `eval`, `getattr`, ...), or a call to `.system()` / `.open()`;
//! - `|attr` with a name that is not a constant;
//! - on a Jinja global (`cycler`, `joiner`, `lipsum`, `namespace`, `self`,
//!   ...), item access with a name that is not a constant.
//!
//! A `namespace()` counter, `raise_exception`, `strftime_now`, tool-schema
//! loops and `|selectattr('type')` have none of these links.
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};

use minijinja::machinery::Span;
use minijinja::machinery::ast::{self, CallArg, Expr, Stmt};

use super::fold::{self, Budget, C, Fold, Val};
use super::taint::{self, Probe};
use super::{Kind, hidden, tokens};
use crate::limits;

/// Jinja globals whose attributes lead to Python internals.
const JINJA_GLOBALS: [&str; 13] = [
    "cycler",
    "joiner",
    "lipsum",
    "namespace",
    "self",
    "range",
    "dict",
    "config",
    "request",
    "session",
    "g",
    "url_for",
    "get_flashed_messages",
];

/// Python attributes of frames, functions and generators.
const INTERNAL: [&str; 17] = [
    "mro",
    "func_globals",
    "func_code",
    "func_closure",
    "f_globals",
    "f_locals",
    "f_back",
    "f_builtins",
    "gi_frame",
    "gi_code",
    "cr_frame",
    "ag_frame",
    "tb_frame",
    "tb_next",
    "co_code",
    "im_func",
    "im_self",
];

/// Modules and functions that run code or reach the OS.
const DANGEROUS: [&str; 36] = [
    "os",
    "sys",
    "subprocess",
    "popen",
    "popen2",
    "spawnl",
    "spawnlp",
    "spawnv",
    "spawnvp",
    "execl",
    "execlp",
    "execv",
    "execve",
    "execvp",
    "eval",
    "exec",
    "execfile",
    "check_output",
    "check_call",
    "getoutput",
    "getstatusoutput",
    "Popen",
    "builtins",
    "importlib",
    "import_module",
    "load_module",
    "environ",
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "locals",
    "compile",
    "fork",
    "ctypes",
    "pty",
];

/// Methods that act on the OS only when called (`os.system(...)`).
const DANGEROUS_WHEN_CALLED: [&str; 7] = ["system", "open", "remove", "unlink", "rmtree", "kill", "read_text"];

/// Functions that run code or reach the OS when called by name.
const DANGEROUS_CALLS: [&str; 14] = [
    "eval",
    "exec",
    "execfile",
    "open",
    "__import__",
    "import_module",
    "getattr",
    "setattr",
    "delattr",
    "compile",
    "globals",
    "locals",
    "vars",
    "breakpoint",
];

/// A Python internal: a dunder or private name, or a frame / function
/// attribute.
pub(crate) fn is_internal(name: &str) -> bool {
    (name.len() > 1 && name.starts_with('_')) || INTERNAL.contains(&name)
}

/// A module or function that runs code or reaches the OS.
pub(crate) fn is_dangerous(name: &str) -> bool {
    DANGEROUS.contains(&name)
}

fn off(span: Span) -> usize {
    usize::try_from(span.start_offset).unwrap_or(usize::MAX)
}

fn end(span: Span) -> usize {
    usize::try_from(span.end_offset).unwrap_or(usize::MAX)
}

/// A chain of postfix operations being walked outwards.
#[derive(Debug)]
struct Chain {
    start: usize,
    end: usize,
    hits: Vec<String>,
    global: Option<&'static str>,
}

/// An expression's value and the chain it ends, if any.
#[derive(Debug)]
struct Ev {
    val: Val,
    chain: Option<Chain>,
}

impl Ev {
    fn of(val: Val) -> Ev {
        Ev { val, chain: None }
    }
}

/// How a name was used.
#[derive(Clone, Copy)]
enum How {
    Attr,
    Item,
    AttrFilter,
    Kwarg,
}

/// The walk's state.
pub(super) struct Walker<'t, 's> {
    src: &'s str,
    env: HashMap<String, Val>,
    macros: HashMap<&'s str, &'t ast::Macro<'s>>,
    inlining: Vec<&'s str>,
    budget: Budget,
    depth: u32,
    cond: u32,
    emitting: u32,
    /// Text and sources emitted in the branches being judged (innermost last).
    collectors: Vec<Collected>,
    /// What the condition being evaluated compares (while one is).
    probe: Option<Probe>,
    /// Under a `not` in the condition being evaluated.
    negated: bool,
    /// Inside a branch taken on the message content or the date.
    trig: u32,
    /// Evaluating what is not output: `raise_exception(...)`'s message
    /// (it ends the rendering), the operands of a comparison, a subscript,
    /// the needle of `.startswith()` / `.split()` / `|replace`'s first
    /// argument. Its constants are not a branch's emitted text.
    quiet: u32,
    /// Inside a macro's body walked at its definition (with unknown
    /// arguments): what it emits is judged where it is called.
    defining: u32,
    /// What was reported, to report it once.
    seen: HashSet<(Kind, usize, String)>,
    /// Findings: kind, byte offset in the template, message.
    pub findings: Vec<(Kind, usize, String)>,
    /// Special-token spellings emitted, with byte offsets.
    pub emitted: Vec<(String, usize)>,
}

/// The finding when the work budget runs out.
const OUT_OF_FUEL: &str =
    "the analysis ran out of its work budget here; the rest of the template was not examined for code execution";

/// Most bytes a trigger branch's collected text keeps.
const MAX_COLLECTED: usize = 1 << 16;

/// How a trigger condition was found to read the content or the date.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Reach {
    /// It names `content` (or a date call) beside a comparison.
    Syntactic,
    /// It reads a value set in a branch on the content or the date.
    Flag,
    /// It compares a value read from the content or the date with constant text.
    Direct,
}

/// What a branch emits: its constant text, and the sources of the values
/// it emits or assigns.
#[derive(Debug, Default)]
struct Collected {
    text: String,
    taint: u8,
}

impl<'t, 's> Walker<'t, 's> {
    pub fn new(src: &'s str) -> Walker<'t, 's> {
        Walker {
            src,
            env: HashMap::new(),
            macros: HashMap::new(),
            inlining: Vec::new(),
            budget: Budget::for_template(src.len()),
            depth: 0,
            cond: 0,
            emitting: 0,
            collectors: Vec::new(),
            probe: None,
            negated: false,
            trig: 0,
            quiet: 0,
            defining: 0,
            seen: HashSet::new(),
            findings: Vec::new(),
            emitted: Vec::new(),
        }
    }

    /// Walks the template.
    pub fn run(&mut self, tmpl: &'t Stmt<'s>) {
        self.stmt(tmpl);
    }

    fn finding(&mut self, kind: Kind, at: usize, message: String) {
        if self.seen.insert((kind, at, message.clone())) {
            self.findings.push((kind, at, message));
        }
    }

    /// A bound was hit: reported once per kind of bound (at its first place).
    fn limit(&mut self, at: usize, what: &str) {
        if self.seen.insert((Kind::AnalysisLimit, 0, what.to_string())) {
            self.findings.push((Kind::AnalysisLimit, at, what.to_string()));
        }
    }

    fn enter(&mut self, at: usize) -> bool {
        if !self.budget.spend(1) {
            self.limit(at, OUT_OF_FUEL);
            return false;
        }
        if self.depth >= limits::MAX_TEMPLATE_AST_DEPTH {
            self.limit(at, "the template nests deeper than the analysis walks; the nested part was not examined");
            return false;
        }
        self.depth = self.depth.saturating_add(1);
        true
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn emit_text(&mut self, text: &str, at: usize) {
        tokens::candidates(text, at, &mut self.emitted);
        if self.quiet > 0 {
            return;
        }
        // Outside a watched branch (which its judgment covers), constant
        // text reaches every prompt.
        if self.collectors.is_empty() && self.defining == 0 {
            if let Some(what) = hidden::injected(text) {
                self.finding(
                    Kind::Injected,
                    at,
                    format!("the template writes constant text holding {what} into the prompt, whatever the conversation: an instruction the user never sees"),
                );
            }
        }
        for c in &mut self.collectors {
            if c.text.len() < MAX_COLLECTED {
                c.text.push_str(text);
                c.text.push('\n');
            }
        }
    }

    /// A value from `taint`'s sources is emitted (or assigned).
    fn emit_taint(&mut self, taint: u8) {
        for c in &mut self.collectors {
            c.taint |= taint;
        }
    }

    /// Evaluates a condition and what it compares with constant text (an
    /// inner probe's findings are the outer one's too).
    fn probe(&mut self, e: &'t Expr<'s>) -> (Val, Probe) {
        let outer = self.probe.replace(Probe::default());
        let negated = std::mem::replace(&mut self.negated, false);
        let v = self.quiet_value(e);
        self.negated = negated;
        let p = std::mem::replace(&mut self.probe, outer).unwrap_or_default();
        if let Some(o) = self.probe.as_mut() {
            o.merge(&p);
        }
        (v, p)
    }

    /// Records `a` compared with `b` (either way round) in the probe.
    fn compared(&mut self, a: &Val, b: &Val, negated: bool) {
        let negated = negated != self.negated;
        if let Some(p) = self.probe.as_mut() {
            p.compared(a, b, negated);
            p.compared(b, a, negated);
        }
    }

    /// Walks `body` collecting what it emits.
    fn collect(&mut self, body: &'t [Stmt<'s>]) -> Collected {
        self.collectors.push(Collected::default());
        self.stmts(body);
        self.collectors.pop().unwrap_or_default()
    }

    /// A trigger branch: reported when it emits constant text holding an
    /// instruction, a URL or a command; for a condition that reads the
    /// content or the date (directly or through a flag set on them), a
    /// system or assistant turn opened with constant text; and for one
    /// that compares them directly, prose that tells the model what to do.
    fn judge_trigger(&mut self, at: usize, cond: Span, tests: &str, reach: Reach, text: &str) {
        let what = hidden::suspicious(text)
            .or_else(|| if reach >= Reach::Flag { taint::turn_with_prose(text) } else { None })
            .or_else(|| match reach {
                Reach::Direct => taint::instruction(text).map(|p| format!("an instruction to the model (`{p}`)")),
                _ => None,
            });
        if let Some(what) = what {
            let cond = excerpt(self.src, off(cond), end(cond));
            self.finding(
                Kind::Trigger,
                at,
                format!(
                    "a branch taken when {tests} matches (`{cond}`) emits constant text holding {what}: an instruction injected only when the trigger appears"
                ),
            );
        }
    }

    /// A branch on a custom role or another message field: reported when
    /// it emits constant text instead of what the message says (or
    /// constant text holding an instruction, a URL or a command).
    fn judge_role_branch(&mut self, at: usize, cond: Span, field: &taint::FieldTest, body: &Collected) {
        let keeps = body.taint & taint::USER_DATA != 0;
        let what = match hidden::suspicious(&body.text) {
            Some(s) => Some(format!("emits constant text holding {s}")),
            None if !keeps => taint::prose(&body.text)
                .map(|p| format!("emits constant text (`{p}`) in place of the message's content")),
            None => None,
        };
        let Some(what) = what else { return };
        let cond = excerpt(self.src, off(cond), end(cond));
        let on = if field.role {
            format!("the message role is `{}`, a role outside the chat roles", field.value)
        } else {
            format!("a message field (other than its role and content) is `{}`", field.value)
        };
        let taken = if field.negated { "not taken" } else { "taken" };
        self.finding(
            Kind::RoleBranch,
            at,
            format!(
                "a branch {taken} when {on} (`{cond}`) {what}: a message sent under that value is replaced by text the template wrote"
            ),
        );
    }

    fn emit_val(&mut self, v: &Val, at: usize) {
        let texts: Vec<String> = v.strings().map(String::from).collect();
        for t in texts {
            self.emit_text(&t, at);
        }
    }

    // ---- statements ----

    fn stmts(&mut self, body: &'t [Stmt<'s>]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &'t Stmt<'s>) {
        let at = stmt_offset(s);
        if !self.enter(at) {
            return;
        }
        match s {
            Stmt::Template(t) => self.stmts(&t.children),
            Stmt::EmitRaw(r) => self.emit_text(r.raw, at),
            Stmt::EmitExpr(e) => {
                self.emitting = self.emitting.saturating_add(1);
                let v = self.value(&e.expr);
                self.emitting = self.emitting.saturating_sub(1);
                self.emit_val(&v, at);
                self.emit_taint(v.taint);
            }
            Stmt::ForLoop(f) => {
                let iter = self.value(&f.iter);
                let item = elements(&iter);
                self.assign(&f.target, item);
                self.set("loop", Val::runtime());
                // `{% for m in messages if 'x' in m.content %}`: the body
                // is a branch on the filter.
                let trigger = match &f.filter_expr {
                    Some(x) => {
                        let (_, p) = self.probe(x);
                        (p.text || p.date).then_some((x.span(), p.date))
                    }
                    None => None,
                };
                if trigger.is_some() {
                    self.trig = self.trig.saturating_add(1);
                    self.collectors.push(Collected::default());
                }
                self.cond = self.cond.saturating_add(1);
                self.stmts(&f.body);
                // Values built across iterations of a constant loop: a
                // second pass sees what the first assigned.
                if !iter.alts.is_empty() {
                    self.stmts(&f.body);
                }
                if let Some((span, date)) = trigger {
                    self.trig = self.trig.saturating_sub(1);
                    let body = self.collectors.pop().unwrap_or_default();
                    let tests = if date { "the date (`strftime_now`)" } else { "the message content" };
                    self.judge_trigger(at, span, tests, Reach::Direct, &body.text);
                }
                self.stmts(&f.else_body);
                self.cond = self.cond.saturating_sub(1);
            }
            Stmt::IfCond(c) => {
                let (_, probe) = self.probe(&c.expr);
                let syntactic = hidden::trigger_condition(&c.expr);
                let tests = if probe.date {
                    Some("the date (`strftime_now`)")
                } else if probe.text {
                    Some("the message content")
                } else if syntactic.is_some() {
                    syntactic
                } else if probe.flag {
                    Some("a value set in a branch on the message content or the date")
                } else {
                    None
                };
                let direct = probe.text || probe.date;
                if direct || syntactic.is_some() {
                    self.trig = self.trig.saturating_add(1);
                }
                let watch = tests.is_some() || !probe.fields.is_empty();
                self.cond = self.cond.saturating_add(1);
                let (yes, no) = if watch {
                    (self.collect(&c.true_body), self.collect(&c.false_body))
                } else {
                    self.stmts(&c.true_body);
                    self.stmts(&c.false_body);
                    (Collected::default(), Collected::default())
                };
                self.cond = self.cond.saturating_sub(1);
                if direct || syntactic.is_some() {
                    self.trig = self.trig.saturating_sub(1);
                }
                if let Some(tests) = tests {
                    let text = format!("{}{}", yes.text, no.text);
                    let reach = if direct {
                        Reach::Direct
                    } else if probe.flag {
                        Reach::Flag
                    } else {
                        Reach::Syntactic
                    };
                    self.judge_trigger(at, c.expr.span(), tests, reach, &text);
                } else if let Some(field) = probe.fields.iter().find(|f| !f.negated) {
                    self.judge_role_branch(at, c.expr.span(), field, &yes);
                } else if let Some(field) = probe.fields.first() {
                    self.judge_role_branch(at, c.expr.span(), field, &no);
                }
            }
            Stmt::WithBlock(w) => {
                for (t, e) in &w.assignments {
                    let v = self.value(e);
                    self.assign(t, v);
                }
                self.stmts(&w.body);
            }
            Stmt::Set(st) => {
                self.emitting = self.emitting.saturating_add(1);
                let v = self.value(&st.expr);
                self.emitting = self.emitting.saturating_sub(1);
                self.emit_val(&v, at);
                self.emit_taint(v.taint);
                self.namespace_fields(&st.target, &st.expr);
                self.assign(&st.target, v);
            }
            Stmt::SetBlock(sb) => {
                let body = self.collect(&sb.body);
                self.emit_taint(body.taint);
                if let Some(f) = &sb.filter {
                    self.value(f);
                }
                self.assign(&sb.target, Val::tainted(body.taint));
            }
            Stmt::AutoEscape(a) => {
                self.value(&a.enabled);
                self.stmts(&a.body);
            }
            Stmt::FilterBlock(f) => {
                self.value(&f.filter);
                self.stmts(&f.body);
            }
            Stmt::Block(b) => self.stmts(&b.body),
            Stmt::Import(i) => {
                self.value(&i.expr);
                self.assign(&i.name, Val::runtime());
            }
            Stmt::FromImport(f) => {
                self.value(&f.expr);
                for (name, alias) in &f.names {
                    self.assign(alias.as_ref().unwrap_or(name), Val::runtime());
                }
            }
            Stmt::Extends(e) => {
                self.value(&e.name);
            }
            Stmt::Include(i) => {
                self.value(&i.name);
            }
            Stmt::Macro(m) => {
                self.macros.insert(m.name, m);
                self.macro_body(m, None);
            }
            Stmt::CallBlock(cb) => {
                let ev = self.call(&cb.call.expr, &cb.call.args, cb.call.span());
                self.close(ev);
                self.macro_body(&cb.macro_decl, None);
            }
            Stmt::Do(d) => {
                let ev = self.call(&d.call.expr, &d.call.args, d.call.span());
                self.close(ev);
            }
            Stmt::Continue(_) | Stmt::Break(_) => {}
        }
        self.leave();
    }

    /// A copy of the variables, paid for from the work budget (`None`
    /// when it runs out).
    fn save_env(&mut self, at: usize) -> Option<HashMap<String, Val>> {
        let cost = self.env.iter().fold(0usize, |n, (k, v)| n.saturating_add(k.len()).saturating_add(weight(v)));
        if !self.budget.spend(cost) {
            self.limit(at, OUT_OF_FUEL);
            return None;
        }
        Some(self.env.clone())
    }

    /// Walks a macro's body with its parameters bound to `args` (a call
    /// with known arguments) or to run-time values.
    fn macro_body(&mut self, m: &'t ast::Macro<'s>, args: Option<Vec<Val>>) {
        let mut saved = Vec::new();
        let first_default = m.args.len().saturating_sub(m.defaults.len());
        for (i, p) in m.args.iter().enumerate() {
            let Expr::Var(v) = p else { continue };
            let given = args.as_ref().and_then(|a| a.get(i)).cloned();
            let val = match given {
                Some(v) => v,
                None => match i.checked_sub(first_default).and_then(|d| m.defaults.get(d)) {
                    Some(d) => self.value(d).union(Val::runtime()),
                    None => Val::runtime(),
                },
            };
            saved.push((v.id.to_string(), self.env.insert(v.id.to_string(), val)));
        }
        for name in ["varargs", "kwargs", "caller"] {
            saved.push((name.to_string(), self.env.insert(name.to_string(), Val::runtime())));
        }
        let defining = u32::from(args.is_none());
        self.defining = self.defining.saturating_add(defining);
        self.cond = self.cond.saturating_add(1);
        self.stmts(&m.body);
        self.cond = self.cond.saturating_sub(1);
        self.defining = self.defining.saturating_sub(defining);
        for (k, old) in saved.into_iter().rev() {
            match old {
                Some(v) => self.env.insert(k, v),
                None => self.env.remove(&k),
            };
        }
    }

    fn set(&mut self, key: &str, mut v: Val) {
        if self.trig > 0 {
            v.taint |= taint::TRIG;
        }
        let v = match (self.cond > 0, self.env.remove(key)) {
            (true, Some(old)) => old.union(v),
            _ => v,
        };
        self.env.insert(key.to_string(), v);
    }

    fn assign(&mut self, target: &'t Expr<'s>, v: Val) {
        match target {
            Expr::Var(name) => self.set(name.id, v),
            Expr::GetAttr(g) => {
                if let Expr::Var(ns) = &g.expr {
                    self.set(&format!("{}.{}", ns.id, g.name), v);
                }
            }
            Expr::Tuple(t) => {
                let parts = match v.single() {
                    Some(C::List(items)) if items.len() == t.items.len() => Some(items.clone()),
                    _ => None,
                };
                for (i, item) in t.items.iter().enumerate() {
                    let part = parts.as_ref().and_then(|p| p.get(i)).cloned().map_or_else(Val::runtime, Val::one);
                    let part = part.with_taint(v.taint);
                    self.assign(item, part);
                }
            }
            _ => {}
        }
    }

    /// `{% set ns = namespace(a='x') %}`: the fields, as `ns.a`.
    fn namespace_fields(&mut self, target: &'t Expr<'s>, e: &'t Expr<'s>) {
        let (Expr::Var(t), Expr::Call(c)) = (target, e) else { return };
        if !matches!(&c.expr, Expr::Var(v) if v.id == "namespace") {
            return;
        }
        for a in &c.args {
            if let CallArg::Kwarg(name, x) = a {
                let v = self.value(x);
                self.set(&format!("{}.{name}", t.id), v);
            }
        }
    }

    // ---- expressions ----

    fn value(&mut self, e: &'t Expr<'s>) -> Val {
        let ev = self.expr(e);
        self.close(ev)
    }

    /// Ends a chain: reports it if it reached an internal.
    fn close(&mut self, ev: Ev) -> Val {
        if let Some(ch) = ev.chain
            && !ch.hits.is_empty()
        {
            let text = excerpt(self.src, ch.start, ch.end);
            let root = match ch.global {
                Some(g) => format!(" from the Jinja global `{g}`"),
                None => String::new(),
            };
            self.finding(
                Kind::CodeExecution,
                ch.start,
                format!(
                    "`{text}` reaches Python internals{root} through {}: an unsandboxed renderer runs this as code",
                    ch.hits.join(", ")
                ),
            );
        }
        ev.val
    }

    fn link(inner: Ev, inner_start: usize, span: Span) -> (Val, Chain) {
        let global = inner.val.global;
        let mut chain = inner.chain.unwrap_or(Chain { start: inner_start, end: 0, hits: Vec::new(), global });
        chain.end = end(span);
        (inner.val, chain)
    }

    /// Checks a name used for attribute or item access.
    fn check_name(&mut self, chain: &mut Chain, name: &Val, how: How, folded: bool, at: usize) {
        let how_text = |s: &str| match how {
            How::Attr => format!("`.{s}`"),
            How::Item => format!("`['{s}']`"),
            How::AttrFilter => format!("`|attr('{s}')`"),
            How::Kwarg => format!("`attribute='{s}'`"),
        };
        for s in name.strings() {
            if is_internal(s) || is_dangerous(s) {
                let built = if folded { " (name built from constants)" } else { "" };
                let hit = format!("{}{built}", how_text(s));
                if !chain.hits.contains(&hit) {
                    chain.hits.push(hit);
                }
            }
        }
        if name.limit {
            self.limit(
                at,
                "an attribute or item name could not be folded within the analysis bounds, so whether it names a Python internal is unknown",
            );
        }
        if name.runtime {
            match (how, chain.global) {
                (How::AttrFilter, _) => chain.hits.push("`|attr` with a name that is not a constant".to_string()),
                (How::Item, Some(g)) => {
                    chain.hits.push(format!("item access on `{g}` with a name that is not a constant"))
                }
                _ => {}
            }
        }
    }

    /// `'{0.__class__}'.format(x)` (and `|attr('format')`): a format
    /// field that walks to an internal (the str.format sandbox escape).
    fn format_fields(chain: &mut Chain, recv: &Val) {
        for s in recv.strings() {
            for field in format_field_names(s) {
                if field.split(['.', '[', ']']).any(is_internal) {
                    let hit = format!("the format field `{{{field}}}`");
                    if !chain.hits.contains(&hit) {
                        chain.hits.push(hit);
                    }
                }
            }
        }
    }

    fn expr(&mut self, e: &'t Expr<'s>) -> Ev {
        let at = off(e.span());
        if !self.enter(at) {
            return Ev::of(Val::limit());
        }
        let ev = self.expr_inner(e, at);
        self.leave();
        if ev.val.taint & taint::TRIG != 0
            && let Some(p) = self.probe.as_mut()
        {
            p.flag = true;
        }
        ev
    }

    fn expr_inner(&mut self, e: &'t Expr<'s>, at: usize) -> Ev {
        match e {
            Expr::Var(v) => {
                let val = self.lookup(v.id);
                if !self.budget.spend(weight(&val)) {
                    self.limit(at, OUT_OF_FUEL);
                    return Ev::of(Val::limit());
                }
                Ev::of(val)
            }
            Expr::Const(c) => {
                let val = const_of(&c.value);
                if self.emitting > 0
                    && let Some(C::Str(s)) = val.single()
                {
                    let s = s.clone();
                    self.emit_text(&s, at);
                }
                Ev::of(val)
            }
            Expr::Slice(s) => {
                let inner = self.expr(&s.expr);
                let (val, chain) = Self::link(inner, off(s.expr.span()), s.span());
                let mut opt = |x: &'t Option<Expr<'s>>| x.as_ref().map(|x| self.quiet_value(x));
                let (a, b, c) = (opt(&s.start), opt(&s.stop), opt(&s.step));
                let none = Val::one(C::None);
                let vals =
                    [&val, a.as_ref().unwrap_or(&none), b.as_ref().unwrap_or(&none), c.as_ref().unwrap_or(&none)];
                let out = Val::combine(&vals, &mut self.budget, &mut |p, bud| match p {
                    [x, a, b, c] => fold::slice(x, Some(a), Some(b), Some(c), bud),
                    _ => Fold::Unknown,
                });
                Ev { val: out, chain: Some(chain) }
            }
            Expr::UnaryOp(u) => {
                let not = matches!(u.op, ast::UnaryOpKind::Not);
                self.negated ^= not;
                let v = self.value(&u.expr);
                self.negated ^= not;
                Ev::of(Val::combine(&[&v], &mut self.budget, &mut |p, _| match p {
                    [x] if not => fold::not(x),
                    [x] => fold::neg(x),
                    _ => Fold::Unknown,
                }))
            }
            Expr::BinOp(b) => {
                use ast::BinOpKind as K;
                let comparison = matches!(b.op, K::Eq | K::Ne | K::Lt | K::Lte | K::Gt | K::Gte | K::In);
                let (l, r) = if comparison {
                    (self.quiet_value(&b.left), self.quiet_value(&b.right))
                } else {
                    (self.value(&b.left), self.value(&b.right))
                };
                if comparison {
                    self.compared(&l, &r, matches!(b.op, K::Ne));
                }
                let op = match b.op {
                    K::Concat => "~",
                    K::Add => "+",
                    K::Sub => "-",
                    K::Mul => "*",
                    K::Div => "/",
                    K::FloorDiv => "//",
                    K::Rem => "%",
                    K::Pow => "**",
                    K::ScAnd => "and",
                    K::ScOr => "or",
                    _ => return Ev::of(Val::runtime()),
                };
                Ev::of(Val::combine(&[&l, &r], &mut self.budget, &mut |p, bud| match (op, p) {
                    ("~", [x, y]) => fold::concat(x, y, bud),
                    ("and", [x, y]) => fold::logic(true, x, y),
                    ("or", [x, y]) => fold::logic(false, x, y),
                    (op, [x, y]) => fold::arith(op, x, y, bud),
                    _ => Fold::Unknown,
                }))
            }
            Expr::Compare(c) => {
                let mut prev = self.quiet_value(&c.expr);
                for o in &c.ops {
                    let v = self.quiet_value(&o.expr);
                    let ne = matches!(o.op, ast::CompareOpKind::Ne | ast::CompareOpKind::NotIn);
                    self.compared(&prev, &v, ne);
                    prev = v;
                }
                Ev::of(Val::runtime())
            }
            Expr::IfExpr(i) => {
                let (_, p) = self.probe(&i.test_expr);
                let t = self.value(&i.true_expr);
                let f = match &i.false_expr {
                    Some(x) => self.value(x),
                    None => Val::one(C::Str(String::new())),
                };
                if p.text || p.date {
                    // An inline trigger: `{{ 'text' if 'x' in content }}`.
                    let text: Vec<&str> = t.strings().chain(f.strings()).collect();
                    let tests = if p.date { "the date (`strftime_now`)" } else { "the message content" };
                    self.judge_trigger(at, i.test_expr.span(), tests, Reach::Direct, &text.join("\n"));
                }
                Ev::of(t.union(f))
            }
            Expr::Filter(f) => self.filter(f, at),
            Expr::Test(t) => {
                let v = self.quiet_value(&t.expr);
                let (pos, _) = self.args(&t.args, &|_| true);
                if taint::is_compare_test(t.name)
                    && let Some(arg) = pos.first()
                {
                    self.compared(&v, arg, matches!(t.name, "ne" | "!="));
                }
                Ev::of(Val::runtime())
            }
            Expr::GetAttr(g) => {
                let inner = self.expr(&g.expr);
                let ns_field = match &g.expr {
                    Expr::Var(v) => self.env.get(&format!("{}.{}", v.id, g.name)).cloned(),
                    _ => None,
                };
                let (recv, mut chain) = Self::link(inner, off(g.expr.span()), g.span());
                self.check_name(&mut chain, &Val::one(C::Str(g.name.to_string())), How::Attr, false, at);
                let key = Val::one(C::Str(g.name.to_string()));
                let val = match ns_field {
                    Some(v) => v,
                    None => Val::combine(&[&recv, &key], &mut self.budget, &mut |p, _| match p {
                        [x, k] => fold::item(x, k),
                        _ => Fold::Unknown,
                    })
                    .with_taint(taint::item(recv.taint, Some(g.name))),
                };
                Ev { val, chain: Some(chain) }
            }
            Expr::GetItem(g) => {
                let inner = self.expr(&g.expr);
                let (recv, mut chain) = Self::link(inner, off(g.expr.span()), g.span());
                let key = self.quiet_value(&g.subscript_expr);
                let folded = !matches!(g.subscript_expr, Expr::Const(_));
                self.check_name(&mut chain, &key, How::Item, folded, at);
                let name = match key.single() {
                    Some(C::Str(k)) => Some(k.as_str()),
                    _ => None,
                };
                let t = taint::item(recv.taint, name);
                let val = Val::combine(&[&recv, &key], &mut self.budget, &mut |p, _| match p {
                    [x, k] => fold::item(x, k),
                    _ => Fold::Unknown,
                })
                .with_taint(t);
                Ev { val, chain: Some(chain) }
            }
            Expr::Call(c) => self.call(&c.expr, &c.args, c.span()),
            Expr::List(l) => self.sequence(&l.items),
            Expr::Tuple(t) => self.sequence(&t.items),
            Expr::Map(m) => {
                let mut fields = Vec::new();
                let mut known = true;
                let mut t = 0u8;
                for (k, v) in m.keys.iter().zip(&m.values) {
                    let k = self.value(k);
                    let v = self.value(v);
                    t |= v.taint;
                    match (k.single(), v.single()) {
                        (Some(C::Str(k)), Some(v)) => fields.push((k.clone(), v.clone())),
                        _ => known = false,
                    }
                }
                Ev::of(if known && fields.len() <= limits::MAX_TEMPLATE_FOLD_LIST {
                    Val::one(C::Map(fields))
                } else {
                    Val::tainted(t)
                })
            }
        }
    }

    fn sequence(&mut self, items: &'t [Expr<'s>]) -> Ev {
        let vals: Vec<Val> = items.iter().map(|x| self.value(x)).collect();
        if vals.len() > limits::MAX_TEMPLATE_FOLD_LIST {
            return Ev::of(Val::runtime());
        }
        let refs: Vec<&Val> = vals.iter().collect();
        Ev::of(Val::combine(&refs, &mut self.budget, &mut |p, _| {
            Fold::Const(C::List(p.iter().map(|c| (*c).clone()).collect()))
        }))
    }

    fn lookup(&self, name: &str) -> Val {
        if let Some(v) = self.env.get(name) {
            return v.clone();
        }
        match JINJA_GLOBALS.iter().find(|g| **g == name) {
            Some(g) => Val::global(g),
            None => Val::tainted(match name {
                "messages" => taint::MSGS,
                "message" => taint::MSG,
                "content" | "user_input" | "query" | "prompt" => taint::TEXT,
                _ => 0,
            }),
        }
    }

    /// Evaluates `e` as something that is not output ([`Walker::quiet`]).
    fn quiet_value(&mut self, e: &'t Expr<'s>) -> Val {
        self.quiet = self.quiet.saturating_add(1);
        let v = self.value(e);
        self.quiet = self.quiet.saturating_sub(1);
        v
    }

    /// Positional and keyword argument values; `quiet(i)`: the `i`th
    /// argument (keywords count from `usize::MAX`) is not output.
    fn args(&mut self, args: &'t [CallArg<'s>], quiet: &dyn Fn(usize) -> bool) -> (Vec<Val>, Vec<(&'s str, Val)>) {
        let mut pos = Vec::new();
        let mut kw = Vec::new();
        for a in args {
            match a {
                CallArg::Pos(e) if quiet(pos.len()) => {
                    let v = self.quiet_value(e);
                    pos.push(v);
                }
                CallArg::Pos(e) => pos.push(self.value(e)),
                CallArg::Kwarg(n, e) => {
                    let v = if quiet(usize::MAX) { self.quiet_value(e) } else { self.value(e) };
                    kw.push((*n, v));
                }
                CallArg::PosSplat(e) | CallArg::KwargSplat(e) => {
                    self.value(e);
                    pos.push(Val::runtime());
                }
            }
        }
        (pos, kw)
    }

    /// Folds `name(this, *pos, **kw)` over every combination.
    fn apply(&mut self, name: &str, this: &Val, pos: &[Val], kw: &[(&'s str, Val)], method: bool) -> Val {
        let mut vals: Vec<&Val> = vec![this];
        vals.extend(pos.iter());
        vals.extend(kw.iter().map(|(_, v)| v));
        let npos = pos.len();
        let names: Vec<&str> = kw.iter().map(|(n, _)| *n).collect();
        Val::combine(&vals, &mut self.budget, &mut |p, bud| {
            let Some((this, rest)) = p.split_first() else { return Fold::Unknown };
            let (pargs, kargs) = rest.split_at(npos.min(rest.len()));
            let kw: Vec<(&str, &C)> = names.iter().copied().zip(kargs.iter().copied()).collect();
            fold::apply(name, this, pargs, &kw, method, bud)
        })
    }

    fn filter(&mut self, f: &'t ast::Spanned<ast::Filter<'s>>, at: usize) -> Ev {
        let (this, mut chain) = match &f.expr {
            Some(x) => {
                let inner = self.expr(x);
                let (v, c) = Self::link(inner, off(x.span()), f.span());
                (v, Some(c))
            }
            None => (Val::runtime(), None),
        };
        let (pos, kw) = self.args(&f.args, &|i| quiet_filter_arg(f.name, i));
        if let Some(chain) = chain.as_mut() {
            let folded = |i: usize| !matches!(f.args.get(i), Some(CallArg::Pos(Expr::Const(_))));
            match f.name {
                "attr" => {
                    let name = pos.first().cloned().unwrap_or_else(Val::runtime);
                    self.check_name(chain, &name, How::AttrFilter, folded(0), at);
                    if name.strings().any(|n| matches!(n, "format" | "format_map")) {
                        Self::format_fields(chain, &this);
                    }
                }
                "selectattr" | "rejectattr" => {
                    if let Some(name) = pos.first() {
                        self.check_name(chain, name, How::Kwarg, folded(0), at);
                    }
                }
                "map" if pos.first().is_some_and(|p| p.strings().any(|s| s == "attr")) => {
                    let name = pos.get(1).cloned().unwrap_or_else(Val::runtime);
                    self.check_name(chain, &name, How::AttrFilter, folded(1), at);
                }
                _ => {}
            }
            for (k, v) in &kw {
                if *k == "attribute" {
                    self.check_name(chain, v, How::Kwarg, true, at);
                }
            }
        }
        let attribute = kw.iter().find(|(k, _)| *k == "attribute").map(|(_, v)| v).or_else(|| match f.name {
            "map" if pos.first().is_some_and(|p| p.strings().any(|s| s == "attr")) => pos.get(1),
            _ => None,
        });
        let attribute = match attribute.and_then(Val::single) {
            Some(C::Str(a)) => Some(a.clone()),
            _ => None,
        };
        let args_taint = pos.iter().chain(kw.iter().map(|(_, v)| v)).fold(0u8, |t, v| t | v.taint);
        let t = taint::filter(f.name, this.taint, attribute.as_deref()) | args_taint;
        if taint::is_compare_filter(f.name)
            && let Some(arg) = pos.first()
        {
            self.compared(&this, arg, false);
        }
        let val = self.apply(f.name, &this, &pos, &kw, false).with_taint(t);
        Ev { val, chain }
    }

    fn call(&mut self, callee: &'t Expr<'s>, args: &'t [CallArg<'s>], span: Span) -> Ev {
        let at = off(callee.span());
        match callee {
            Expr::GetAttr(g) => {
                let inner = self.expr(&g.expr);
                let (recv, mut chain) = Self::link(inner, off(g.expr.span()), span);
                self.check_name(&mut chain, &Val::one(C::Str(g.name.to_string())), How::Attr, false, at);
                if DANGEROUS_WHEN_CALLED.contains(&g.name) {
                    chain.hits.push(format!("a call to `.{}()`", g.name));
                }
                if matches!(g.name, "format" | "format_map") {
                    Self::format_fields(&mut chain, &recv);
                }
                let (pos, kw) = self.args(args, &|i| quiet_method_arg(g.name, i));
                if taint::is_compare_method(g.name)
                    && let Some(arg) = pos.first()
                {
                    self.compared(&recv, arg, false);
                }
                let arg0 = match pos.first().and_then(Val::single) {
                    Some(C::Str(a)) => Some(a.as_str()),
                    _ => None,
                };
                let args_taint = pos.iter().chain(kw.iter().map(|(_, v)| v)).fold(0u8, |t, v| t | v.taint);
                let t = taint::method(g.name, recv.taint, arg0) | args_taint;
                let val = self.apply(g.name, &recv, &pos, &kw, true).with_taint(t);
                Ev { val, chain: Some(chain) }
            }
            Expr::Var(v) => {
                let quiet = matches!(v.id, "raise_exception" | "strftime_now");
                let (pos, kw) = self.args(args, &|_| quiet);
                let shadowed = self.env.contains_key(v.id);
                let mut chain = Chain { start: at, end: end(span), hits: Vec::new(), global: None };
                if JINJA_GLOBALS.contains(&v.id) && !shadowed {
                    chain.global = JINJA_GLOBALS.iter().copied().find(|g| *g == v.id);
                }
                if DANGEROUS_CALLS.contains(&v.id) && !shadowed && !self.macros.contains_key(v.id) {
                    chain.hits.push(format!("a call to `{}()`", v.id));
                }
                let args_taint = pos.iter().chain(kw.iter().map(|(_, v)| v)).fold(0u8, |t, v| t | v.taint);
                let val = match v.id {
                    _ if shadowed => Val::tainted(args_taint),
                    "strftime_now" => Val::tainted(taint::DATE),
                    "namespace" => Val::runtime(),
                    "dict" if pos.is_empty() => {
                        let fields: Option<Vec<(String, C)>> =
                            kw.iter().map(|(k, v)| v.single().map(|c| (k.to_string(), c.clone()))).collect();
                        fields.map_or_else(Val::runtime, |f| Val::one(C::Map(f)))
                    }
                    "range" => {
                        let refs: Vec<&Val> = pos.iter().collect();
                        Val::combine(&refs, &mut self.budget, &mut |p, bud| fold::range(p, bud))
                    }
                    name => {
                        // Inlined with constant arguments (to fold names
                        // built from them), or to follow the messages into
                        // the macro and collect what a watched branch emits;
                        // then what it assigned is forgotten (its side
                        // effects are not what is followed, and repeated
                        // calls must not pile up alternatives).
                        let constant = pos.iter().any(|p| !p.alts.is_empty());
                        let follow = pos.iter().any(|p| p.taint != 0) || !self.collectors.is_empty();
                        if let Some(m) = self.macros.get(name).copied()
                            && !self.inlining.contains(&m.name)
                            && self.inlining.len() < 4
                            && (constant || follow)
                        {
                            let saved = if constant { None } else { self.save_env(at) };
                            if constant || saved.is_some() {
                                self.inlining.push(m.name);
                                self.macro_body(m, Some(pos));
                                self.inlining.pop();
                            }
                            if let Some(env) = saved {
                                self.env = env;
                            }
                        }
                        Val::tainted(args_taint)
                    }
                };
                Ev { val, chain: Some(chain) }
            }
            other => {
                let inner = self.expr(other);
                let (recv, chain) = Self::link(inner, at, span);
                let (pos, kw) = self.args(args, &|_| false);
                let t = pos.iter().chain(kw.iter().map(|(_, v)| v)).fold(recv.taint, |t, v| t | v.taint);
                Ev { val: Val::tainted(t), chain: Some(chain) }
            }
        }
    }
}

/// Whether a filter's `i`th argument is not output: all but `|default`'s,
/// `|join`'s, `|format`'s and `|replace`'s replacement.
fn quiet_filter_arg(name: &str, i: usize) -> bool {
    match name {
        "default" | "d" | "join" | "format" => false,
        "replace" => i == 0,
        _ => true,
    }
}

/// Whether a method's `i`th argument is not output: all but `.format()`'s,
/// `.join()`'s, `.replace()`'s replacement and `.get()`'s default.
fn quiet_method_arg(name: &str, i: usize) -> bool {
    match name {
        "format" | "format_map" | "join" => false,
        "replace" | "get" => i == 0,
        _ => true,
    }
}

/// Work units to copy a value (its strings' bytes and list items).
fn weight(v: &Val) -> usize {
    fn of(c: &C) -> usize {
        match c {
            C::Str(s) => s.len(),
            C::List(l) => l.iter().map(of).fold(l.len(), usize::saturating_add),
            C::Map(m) => m.iter().map(|(k, v)| k.len().saturating_add(of(v))).fold(m.len(), usize::saturating_add),
            _ => 1,
        }
    }
    v.alts.iter().map(of).fold(1, usize::saturating_add)
}

/// The field names of a `str.format` string (`{0.__class__}` gives
/// `0.__class__`), at most 64.
fn format_field_names(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        let tail = rest.get(i.saturating_add(1)..).unwrap_or_default();
        if let Some(t) = tail.strip_prefix('{') {
            rest = t;
            continue;
        }
        let Some(close) = tail.find('}') else { break };
        let field = tail.get(..close).unwrap_or_default();
        out.push(field.split([':', '!']).next().unwrap_or_default());
        if out.len() >= 64 {
            break;
        }
        rest = tail.get(close.saturating_add(1)..).unwrap_or_default();
    }
    out
}

/// The values of a loop variable over `iter`: its elements when it is a
/// constant list (or string), else a run-time value. A long constant list
/// keeps only its Python-internal strings (and is a run-time value too).
fn elements(iter: &Val) -> Val {
    let mut out = Val {
        runtime: iter.runtime || iter.global.is_some(),
        limit: iter.limit,
        taint: taint::elements(iter.taint),
        ..Val::default()
    };
    for c in &iter.alts {
        let items: Vec<C> = match c {
            C::List(v) => v.clone(),
            C::Str(s) => s.chars().map(|ch| C::Str(ch.into())).collect(),
            C::Map(m) => m.iter().map(|(k, _)| C::Str(k.clone())).collect(),
            _ => {
                out.runtime = true;
                continue;
            }
        };
        if items.len() <= limits::MAX_TEMPLATE_ALTERNATIVES {
            for i in items {
                out = out.union(Val::one(i));
            }
        } else {
            out.runtime = true;
            for i in items {
                if matches!(&i, C::Str(s) if is_internal(s) || is_dangerous(s)) {
                    out = out.union(Val::one(i));
                }
            }
        }
    }
    if out.alts.is_empty() && !out.limit {
        out.runtime = true;
    }
    out
}

fn const_of(v: &minijinja::Value) -> Val {
    use minijinja::value::ValueKind;
    match v.kind() {
        ValueKind::None | ValueKind::Undefined => Val::one(C::None),
        ValueKind::Bool => Val::one(C::Bool(v.is_true())),
        ValueKind::String => v.as_str().map_or_else(Val::runtime, |s| Val::one(C::Str(s.to_string()))),
        ValueKind::Number => match v.as_i64() {
            Some(i) => Val::one(C::Int(i)),
            None => f64::try_from(v.clone()).map_or_else(|_| Val::runtime(), |f| Val::one(C::Float(f))),
        },
        _ => Val::runtime(),
    }
}

fn stmt_offset(s: &Stmt<'_>) -> usize {
    let span = match s {
        Stmt::Template(x) => x.span(),
        Stmt::EmitExpr(x) => x.span(),
        Stmt::EmitRaw(x) => x.span(),
        Stmt::ForLoop(x) => x.span(),
        Stmt::IfCond(x) => x.span(),
        Stmt::WithBlock(x) => x.span(),
        Stmt::Set(x) => x.span(),
        Stmt::SetBlock(x) => x.span(),
        Stmt::AutoEscape(x) => x.span(),
        Stmt::FilterBlock(x) => x.span(),
        Stmt::Block(x) => x.span(),
        Stmt::Import(x) => x.span(),
        Stmt::FromImport(x) => x.span(),
        Stmt::Extends(x) => x.span(),
        Stmt::Include(x) => x.span(),
        Stmt::Macro(x) => x.span(),
        Stmt::CallBlock(x) => x.span(),
        Stmt::Continue(x) => x.span(),
        Stmt::Break(x) => x.span(),
        Stmt::Do(x) => x.span(),
    };
    off(span)
}

/// The source between two offsets on one line, shortened.
pub(super) fn excerpt(src: &str, start: usize, end: usize) -> String {
    let mut s = start.min(src.len());
    while !src.is_char_boundary(s) {
        s = s.saturating_sub(1);
    }
    let text = src.get(s..).unwrap_or_default();
    let len = end.saturating_sub(start);
    let mut out = String::new();
    for (i, c) in text.char_indices() {
        if i >= len {
            break;
        }
        if out.chars().count() >= 120 {
            out.push('…');
            break;
        }
        if c.is_whitespace() {
            out.push(' ');
        } else if c.is_control() || hidden::is_hidden(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}
