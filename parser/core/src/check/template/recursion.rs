//! Macros that call themselves without end (`template-recursion`).
//! llama.cpp's Jinja engine renders a macro call by recursing on the C++
//! stack, so a macro that calls itself on a path without a condition
//! exhausts the stack and crashes the server (llama.cpp #19085); Jinja2
//! raises `RecursionError` on every request.
//!
//! Two classes, both decided from the AST alone:
//! - **unconditional**: a cycle of macro calls (a macro calling itself,
//!   directly or through others) in which no call sits under an `if`, a
//!   `for`, an `x if c else y` or the right side of `and`/`or`, and which
//!   the template calls from outside the cycle;
//! - **counted**: a macro whose call to itself sits under a guard
//!   comparing an integer parameter with a constant (`n > 0`) and passes
//!   that parameter changed by a constant (`n - 1`), called from outside
//!   with a constant: the depth is counted step by step, and a count past
//!   [`limits::MAX_TEMPLATE_MACRO_RECURSION`] (or a guard the steps never
//!   leave) is reported.
//!
//! Recursion over data (a nested JSON schema) has no depth the template
//! fixes and is not reported.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::{HashMap, HashSet};

use minijinja::machinery::ast::{self, BinOpKind, CallArg, CompareOpKind, Expr, Stmt};

use super::Kind;
use crate::limits;

/// Most macros and call sites followed (the template is at most
/// [`limits::MAX_TEMPLATE_BYTES`], so these bound nothing real).
const MAX_SITES: usize = 1 << 16;

/// The test of an `if` a call sits under, and the branch it is in.
#[derive(Clone, Copy)]
struct Guard<'t, 's> {
    test: &'t Expr<'s>,
    holds: bool,
}

/// One call of a macro name.
struct Site<'t, 's> {
    callee: &'s str,
    caller: Option<&'s str>,
    offset: usize,
    conditional: bool,
    args: Vec<&'t Expr<'s>>,
    /// The innermost `if` around the call, inside its macro.
    guard: Option<Guard<'t, 's>>,
}

#[derive(Default)]
struct Collector<'t, 's> {
    macros: HashMap<&'s str, &'t ast::Macro<'s>>,
    sites: Vec<Site<'t, 's>>,
    caller: Option<&'s str>,
    conditional: u32,
    guards: Vec<Guard<'t, 's>>,
    depth: u32,
    gave_up: bool,
}

impl<'t, 's> Collector<'t, 's> {
    fn stmts(&mut self, body: &'t [Stmt<'s>]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn enter(&mut self) -> bool {
        if self.depth >= limits::MAX_TEMPLATE_AST_DEPTH || self.sites.len() >= MAX_SITES {
            self.gave_up = true;
            return false;
        }
        self.depth = self.depth.saturating_add(1);
        true
    }

    fn stmt(&mut self, s: &'t Stmt<'s>) {
        if !self.enter() {
            return;
        }
        match s {
            Stmt::Template(t) => self.stmts(&t.children),
            Stmt::EmitExpr(e) => self.expr(&e.expr),
            Stmt::EmitRaw(_) | Stmt::Continue(_) | Stmt::Break(_) => {}
            Stmt::ForLoop(f) => {
                self.expr(&f.iter);
                self.conditional = self.conditional.saturating_add(1);
                if let Some(e) = &f.filter_expr {
                    self.expr(e);
                }
                self.stmts(&f.body);
                self.stmts(&f.else_body);
                self.conditional = self.conditional.saturating_sub(1);
            }
            Stmt::IfCond(c) => {
                self.expr(&c.expr);
                self.conditional = self.conditional.saturating_add(1);
                for (body, holds) in [(&c.true_body, true), (&c.false_body, false)] {
                    self.guards.push(Guard { test: &c.expr, holds });
                    self.stmts(body);
                    self.guards.pop();
                }
                self.conditional = self.conditional.saturating_sub(1);
            }
            Stmt::WithBlock(w) => {
                for (_, e) in &w.assignments {
                    self.expr(e);
                }
                self.stmts(&w.body);
            }
            Stmt::Set(x) => self.expr(&x.expr),
            Stmt::SetBlock(x) => {
                if let Some(f) = &x.filter {
                    self.expr(f);
                }
                self.stmts(&x.body);
            }
            Stmt::AutoEscape(a) => self.stmts(&a.body),
            Stmt::FilterBlock(f) => {
                self.expr(&f.filter);
                self.stmts(&f.body);
            }
            Stmt::Block(b) => self.stmts(&b.body),
            Stmt::Import(_) | Stmt::FromImport(_) | Stmt::Extends(_) | Stmt::Include(_) => {}
            Stmt::Macro(m) => self.macro_def(m),
            Stmt::CallBlock(cb) => {
                self.call(&cb.call, offset(&cb.call.span()));
                self.macro_def(&cb.macro_decl);
            }
            Stmt::Do(d) => self.call(&d.call, offset(&d.call.span())),
        }
        self.depth = self.depth.saturating_sub(1);
    }

    /// A macro's body is walked as its own: calls in it belong to it, and
    /// conditions outside it do not guard them.
    fn macro_def(&mut self, m: &'t ast::Macro<'s>) {
        self.macros.insert(m.name, m);
        let saved = (self.caller.replace(m.name), self.conditional, std::mem::take(&mut self.guards));
        self.conditional = 0;
        for d in &m.defaults {
            self.expr(d);
        }
        self.stmts(&m.body);
        self.caller = saved.0;
        self.conditional = saved.1;
        self.guards = saved.2;
    }

    fn call(&mut self, c: &'t ast::Call<'s>, at: usize) {
        if let Expr::Var(v) = &c.expr {
            let args = c.args.iter().filter_map(|a| if let CallArg::Pos(e) = a { Some(e) } else { None }).collect();
            self.sites.push(Site {
                callee: v.id,
                caller: self.caller,
                offset: at,
                conditional: self.conditional > 0,
                args,
                guard: self.guards.last().copied(),
            });
        } else {
            self.expr(&c.expr);
        }
        for a in &c.args {
            match a {
                CallArg::Pos(e) | CallArg::Kwarg(_, e) | CallArg::PosSplat(e) | CallArg::KwargSplat(e) => self.expr(e),
            }
        }
    }

    fn conditionally(&mut self, e: &'t Expr<'s>) {
        self.conditional = self.conditional.saturating_add(1);
        self.expr(e);
        self.conditional = self.conditional.saturating_sub(1);
    }

    fn expr(&mut self, e: &'t Expr<'s>) {
        if !self.enter() {
            return;
        }
        match e {
            Expr::Var(_) | Expr::Const(_) => {}
            Expr::Slice(s) => {
                self.expr(&s.expr);
                for x in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                    self.expr(x);
                }
            }
            Expr::UnaryOp(u) => self.expr(&u.expr),
            Expr::BinOp(b) => {
                self.expr(&b.left);
                if matches!(b.op, BinOpKind::ScAnd | BinOpKind::ScOr) {
                    self.conditionally(&b.right);
                } else {
                    self.expr(&b.right);
                }
            }
            Expr::Compare(c) => {
                self.expr(&c.expr);
                for op in &c.ops {
                    self.expr(&op.expr);
                }
            }
            Expr::IfExpr(i) => {
                self.expr(&i.test_expr);
                self.conditionally(&i.true_expr);
                if let Some(f) = &i.false_expr {
                    self.conditionally(f);
                }
            }
            Expr::Filter(f) => {
                if let Some(x) = &f.expr {
                    self.expr(x);
                }
                self.args(&f.args);
            }
            Expr::Test(t) => {
                self.expr(&t.expr);
                self.args(&t.args);
            }
            Expr::GetAttr(g) => self.expr(&g.expr),
            Expr::GetItem(g) => {
                self.expr(&g.expr);
                self.expr(&g.subscript_expr);
            }
            Expr::Call(c) => self.call(c, offset(&c.span())),
            Expr::List(l) => l.items.iter().for_each(|x| self.expr(x)),
            Expr::Tuple(t) => t.items.iter().for_each(|x| self.expr(x)),
            Expr::Map(m) => {
                m.keys.iter().chain(m.values.iter()).for_each(|x| self.expr(x));
            }
        }
        self.depth = self.depth.saturating_sub(1);
    }

    fn args(&mut self, args: &'t [CallArg<'s>]) {
        for a in args {
            match a {
                CallArg::Pos(e) | CallArg::Kwarg(_, e) | CallArg::PosSplat(e) | CallArg::KwargSplat(e) => self.expr(e),
            }
        }
    }
}

fn offset(span: &minijinja::machinery::Span) -> usize {
    usize::try_from(span.start_offset).unwrap_or(usize::MAX)
}

/// An integer constant.
fn int(e: &Expr<'_>) -> Option<i64> {
    match e {
        Expr::Const(c) => c.value.as_i64(),
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOpKind::Neg) => int(&u.expr).and_then(i64::checked_neg),
        _ => None,
    }
}

fn var<'s>(e: &Expr<'s>) -> Option<&'s str> {
    if let Expr::Var(v) = e { Some(v.id) } else { None }
}

/// `param ± k`, as the step of a counted recursion.
fn step(e: &Expr<'_>, param: &str) -> Option<i64> {
    match e {
        Expr::Var(v) if v.id == param => Some(0),
        Expr::BinOp(b) if var(&b.left) == Some(param) => match b.op {
            BinOpKind::Add => int(&b.right),
            BinOpKind::Sub => int(&b.right).and_then(i64::checked_neg),
            _ => None,
        },
        Expr::BinOp(b) if var(&b.right) == Some(param) && matches!(b.op, BinOpKind::Add) => int(&b.left),
        _ => None,
    }
}

#[derive(Clone, Copy)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
}

impl Cmp {
    fn flip(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::Lte => Cmp::Gte,
            Cmp::Gt => Cmp::Lt,
            Cmp::Gte => Cmp::Lte,
            other => other,
        }
    }

    fn holds(self, a: i64, b: i64) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Lte => a <= b,
            Cmp::Gt => a > b,
            Cmp::Gte => a >= b,
        }
    }
}

/// A guard `param CMP constant` (either side), as a test of the parameter.
fn comparison(test: &Expr<'_>, param: &str) -> Option<(Cmp, i64)> {
    let (left, op, right) = match test {
        Expr::BinOp(b) => {
            let op = match b.op {
                BinOpKind::Eq => Cmp::Eq,
                BinOpKind::Ne => Cmp::Ne,
                BinOpKind::Lt => Cmp::Lt,
                BinOpKind::Lte => Cmp::Lte,
                BinOpKind::Gt => Cmp::Gt,
                BinOpKind::Gte => Cmp::Gte,
                _ => return None,
            };
            (&b.left, op, &b.right)
        }
        Expr::Compare(c) => {
            let [only] = c.ops.as_slice() else { return None };
            let op = match only.op {
                CompareOpKind::Eq => Cmp::Eq,
                CompareOpKind::Ne => Cmp::Ne,
                CompareOpKind::Lt => Cmp::Lt,
                CompareOpKind::Lte => Cmp::Lte,
                CompareOpKind::Gt => Cmp::Gt,
                CompareOpKind::Gte => Cmp::Gte,
                _ => return None,
            };
            (&c.expr, op, &only.expr)
        }
        _ => return None,
    };
    if var(left) == Some(param) {
        Some((op, int(right)?))
    } else if var(right) == Some(param) {
        Some((op.flip(), int(left)?))
    } else {
        None
    }
}

/// How deep a counted recursion from `start` goes: `None` past the limit
/// (or never leaving its guard).
fn depth(start: i64, step: i64, guard: (Cmp, i64), holds: bool) -> Option<u32> {
    let mut n = start;
    for d in 0..=limits::MAX_TEMPLATE_MACRO_RECURSION {
        if guard.0.holds(n, guard.1) != holds {
            return Some(d);
        }
        n = n.checked_add(step)?;
    }
    None
}

/// Findings of `template-recursion` in the parsed template `ast`.
pub(super) fn check(ast: &Stmt<'_>, out: &mut Vec<(Kind, usize, String)>) {
    let mut c = Collector::default();
    c.stmt(ast);
    // Macros on a cycle of unconditional calls.
    let mut edges: HashMap<&str, Vec<&str>> = HashMap::new();
    for s in &c.sites {
        if let Some(from) = s.caller
            && !s.conditional
            && c.macros.contains_key(s.callee)
        {
            edges.entry(from).or_default().push(s.callee);
        }
    }
    let mut looping: HashSet<&str> = HashSet::new();
    for start in c.macros.keys() {
        // Does `start` reach itself through unconditional calls?
        let mut seen: HashSet<&str> = HashSet::new();
        let mut todo: Vec<&str> = edges.get(start).cloned().unwrap_or_default();
        while let Some(m) = todo.pop() {
            if m == *start {
                looping.insert(start);
                break;
            }
            if seen.insert(m)
                && let Some(next) = edges.get(m)
            {
                todo.extend(next.iter().copied());
            }
        }
    }
    let mut reported: HashSet<&str> = HashSet::new();
    for s in &c.sites {
        if looping.contains(s.callee)
            && s.caller.is_none_or(|from| !looping.contains(from))
            && reported.insert(s.callee)
        {
            out.push((
                Kind::Recursion,
                s.offset,
                format!(
                    "macro `{}` calls itself on a path without any condition, and the template calls it: rendering never ends (C++ Jinja engines such as llama.cpp's exhaust their stack and crash; Jinja2 raises RecursionError)",
                    s.callee
                ),
            ));
        }
    }
    // Counted recursion from constant arguments.
    for s in &c.sites {
        let Some(m) = c.macros.get(s.callee) else { continue };
        if s.caller == Some(s.callee) || reported.contains(s.callee) {
            continue;
        }
        for inner in c.sites.iter().filter(|i| i.caller == Some(s.callee) && i.callee == s.callee) {
            let Some(guard) = inner.guard else { continue };
            for (pos, param) in m.args.iter().enumerate() {
                let Some(param) = var(param) else { continue };
                let (Some(start), Some(d), Some(cmp)) = (
                    s.args.get(pos).and_then(|e| int(e)),
                    inner.args.get(pos).and_then(|e| step(e, param)),
                    comparison(guard.test, param),
                ) else {
                    continue;
                };
                if depth(start, d, cmp, guard.holds).is_none() && reported.insert(s.callee) {
                    out.push((
                        Kind::Recursion,
                        s.offset,
                        format!(
                            "macro `{}` called with {param} = {start} recurses more than {} times (limits::MAX_TEMPLATE_MACRO_RECURSION){}: C++ Jinja engines such as llama.cpp's exhaust their stack",
                            s.callee,
                            limits::MAX_TEMPLATE_MACRO_RECURSION,
                            if d == 0 { ", without end (its argument never changes)" } else { "" }
                        ),
                    ));
                }
            }
        }
    }
    if c.gave_up {
        out.push((
            Kind::AnalysisLimit,
            0,
            "the template has more macro calls or nesting than the recursion analysis follows; macro recursion was not checked in full".into(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, analyse};

    fn recursion(src: &str) -> usize {
        analyse(src).findings.iter().filter(|f| f.kind == Kind::Recursion).count()
    }

    #[test]
    fn unconditional_cycles_are_found() {
        assert_eq!(recursion("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}"), 1);
        // Through another macro, and under a call block.
        assert_eq!(
            recursion("{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}x{{ a() }}{% endmacro %}{{ a() }}"),
            1
        );
        // Called only under a condition: still never ends when it runs.
        assert_eq!(recursion("{% macro f() %}{{ f() }}{% endmacro %}{% if x %}{{ f() }}{% endif %}"), 1);
        // Defined and never called: harmless.
        assert_eq!(recursion("{% macro f() %}{{ f() }}{% endmacro %}hello"), 0);
    }

    #[test]
    fn guarded_recursion_over_data_is_not_reported() {
        let schema = "{% macro render(s) %}{% if s.properties %}{% for k, v in s.properties.items() %}{{ k }}: {{ render(v) }}{% endfor %}{% else %}{{ s.type }}{% endif %}{% endmacro %}{{ render(tools[0]) }}";
        assert_eq!(recursion(schema), 0);
        assert_eq!(recursion("{% macro f(n) %}{{ n > 0 and f(n - 1) }}{% endmacro %}{{ f(x) }}"), 0);
    }

    #[test]
    fn counted_recursion_is_bounded_by_the_limit() {
        let at = |n: u32| {
            format!("{{% macro f(n) %}}{{% if n > 0 %}}{{{{ f(n - 1) }}}}{{% endif %}}{{% endmacro %}}{{{{ f({n}) }}}}")
        };
        let limit = crate::limits::MAX_TEMPLATE_MACRO_RECURSION;
        assert_eq!(recursion(&at(limit)), 0);
        assert_eq!(recursion(&at(limit + 1)), 1);
        assert_eq!(recursion(&at(100_000)), 1);
        // A guard the steps never leave.
        assert_eq!(recursion("{% macro f(n) %}{% if n > 0 %}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(1) }}"), 1);
        assert_eq!(recursion("{% macro f(n) %}{% if n != 0 %}{{ f(n) }}{% endif %}{% endmacro %}{{ f(3) }}"), 1);
        // The else branch of the guard.
        assert_eq!(
            recursion(
                "{% macro f(n) %}{% if n <= 0 %}done{% else %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(10) }}"
            ),
            0
        );
    }
}
