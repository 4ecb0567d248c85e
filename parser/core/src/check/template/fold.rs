//! Constant folding: the values a template can compute without any input.
//!
//! A [`Val`] is the set of constants an expression may evaluate to (one per
//! branch that assigned it, at most [`limits::MAX_TEMPLATE_ALTERNATIVES`]),
//! plus flags: it may also be a run-time value (the messages, a loop
//! variable), a folding bound was hit, or it is a Jinja global. Every
//! operation checks the size of its result before building it, so
//! `'a' * 10**9` or a doubling `{% set %}` chain costs nothing.
#![forbid(unsafe_code)]

use crate::limits;

/// A constant.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum C {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<C>),
    /// A dict with string keys, in insertion order.
    Map(Vec<(String, C)>),
}

/// What folding one operation gave.
pub(super) enum Fold {
    /// A constant.
    Const(C),
    /// Not computable without input, or not an operation the folder knows.
    Unknown,
    /// The result would exceed a folding bound.
    TooBig,
}

/// The abstract value of an expression.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Val {
    /// Constants it may be.
    pub alts: Vec<C>,
    /// It may be a run-time value.
    pub runtime: bool,
    /// A folding bound was hit on the way.
    pub limit: bool,
    /// It is this Jinja global (`lipsum`, `cycler`, ...).
    pub global: Option<&'static str>,
    /// Where it comes from (`taint::MSGS`, `taint::TEXT`, ...).
    pub taint: u8,
}

impl Val {
    pub fn runtime() -> Val {
        Val { runtime: true, ..Val::default() }
    }

    pub fn limit() -> Val {
        Val { limit: true, ..Val::default() }
    }

    pub fn one(c: C) -> Val {
        Val { alts: vec![c], ..Val::default() }
    }

    pub fn global(name: &'static str) -> Val {
        Val { runtime: true, global: Some(name), ..Val::default() }
    }

    /// A run-time value from `taint`'s sources.
    pub fn tainted(taint: u8) -> Val {
        Val { runtime: true, taint, ..Val::default() }
    }

    /// The same value, from `taint`'s sources instead.
    pub fn with_taint(mut self, taint: u8) -> Val {
        self.taint = taint;
        self
    }

    /// The constant, when the value is exactly one.
    pub fn single(&self) -> Option<&C> {
        match self.alts.as_slice() {
            [c] if !self.runtime && !self.limit && self.global.is_none() => Some(c),
            _ => None,
        }
    }

    /// Either this or `other`.
    pub fn union(mut self, other: Val) -> Val {
        self.runtime |= other.runtime;
        self.limit |= other.limit;
        self.taint |= other.taint;
        self.global = self.global.or(other.global);
        for c in other.alts {
            if !self.alts.contains(&c) {
                self.alts.push(c);
            }
        }
        if self.alts.len() > limits::MAX_TEMPLATE_ALTERNATIVES {
            self.alts.clear();
            self.limit = true;
        }
        self
    }

    /// The string constants it may be.
    pub fn strings(&self) -> impl Iterator<Item = &str> {
        self.alts.iter().filter_map(|c| match c {
            C::Str(s) => Some(s.as_str()),
            _ => None,
        })
    }

    /// Applies `f` to every combination of the alternatives of `vals`
    /// (bounded), collecting the results.
    pub fn combine(vals: &[&Val], budget: &mut Budget, f: &mut dyn FnMut(&[&C], &mut Budget) -> Fold) -> Val {
        let mut out = Val::default();
        for v in vals {
            out.runtime |= v.runtime || v.global.is_some();
            out.limit |= v.limit;
            out.taint |= v.taint;
        }
        let total = vals.iter().try_fold(1usize, |acc, v| acc.checked_mul(v.alts.len()));
        match total {
            Some(0) => return out,
            Some(n) if n <= limits::MAX_TEMPLATE_ALTERNATIVES => {}
            _ => {
                out.limit = true;
                return out;
            }
        }
        let mut idx = vec![0usize; vals.len()];
        loop {
            let picked: Vec<&C> = vals.iter().zip(&idx).filter_map(|(v, &i)| v.alts.get(i)).collect();
            match f(&picked, budget) {
                Fold::Const(c) => {
                    if !out.alts.contains(&c) {
                        out.alts.push(c);
                    }
                }
                Fold::Unknown => out.runtime = true,
                Fold::TooBig => out.limit = true,
            }
            // Next combination (odometer).
            let mut k = 0;
            loop {
                let Some((slot, v)) = idx.get_mut(k).zip(vals.get(k)) else { return out };
                *slot = slot.saturating_add(1);
                if *slot < v.alts.len() {
                    break;
                }
                *slot = 0;
                k = k.saturating_add(1);
            }
        }
    }
}

/// The analysis' work budget ([`limits::TEMPLATE_FUEL_BASE`]).
#[derive(Debug)]
pub(super) struct Budget {
    left: u64,
    /// Set once the budget ran out.
    pub exhausted: bool,
}

impl Budget {
    pub fn for_template(len: usize) -> Budget {
        let per = u64::try_from(len).unwrap_or(u64::MAX).saturating_mul(limits::TEMPLATE_FUEL_PER_BYTE);
        Budget { left: limits::TEMPLATE_FUEL_BASE.saturating_add(per), exhausted: false }
    }

    /// Spends `n` units; false (and exhausted from then on) when there
    /// are not that many left.
    pub fn spend(&mut self, n: usize) -> bool {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        if self.exhausted || n > self.left {
            self.exhausted = true;
            return false;
        }
        self.left = self.left.saturating_sub(n);
        true
    }
}

fn string(s: String, budget: &mut Budget) -> Fold {
    if s.len() > limits::MAX_TEMPLATE_FOLD_STRING || !budget.spend(s.len()) {
        return Fold::TooBig;
    }
    Fold::Const(C::Str(s))
}

fn list(items: Vec<C>, budget: &mut Budget) -> Fold {
    if items.len() > limits::MAX_TEMPLATE_FOLD_LIST || !budget.spend(items.len()) {
        return Fold::TooBig;
    }
    Fold::Const(C::List(items))
}

/// Jinja's `string` of a scalar (Python spellings).
pub(super) fn text(c: &C) -> Option<String> {
    Some(match c {
        C::None => "None".into(),
        C::Bool(true) => "True".into(),
        C::Bool(false) => "False".into(),
        C::Int(i) => i.to_string(),
        C::Float(f) => f.to_string(),
        C::Str(s) => s.clone(),
        C::List(_) | C::Map(_) => return None,
    })
}

fn truthy(c: &C) -> bool {
    match c {
        C::None => false,
        C::Bool(b) => *b,
        C::Int(i) => *i != 0,
        C::Float(f) => *f != 0.0,
        C::Str(s) => !s.is_empty(),
        C::List(l) => !l.is_empty(),
        C::Map(m) => !m.is_empty(),
    }
}

/// `a ~ b`.
pub(super) fn concat(a: &C, b: &C, budget: &mut Budget) -> Fold {
    let (Some(x), Some(y)) = (text(a), text(b)) else { return Fold::Unknown };
    if x.len().saturating_add(y.len()) > limits::MAX_TEMPLATE_FOLD_STRING {
        return Fold::TooBig;
    }
    string(x + &y, budget)
}

fn repeat_len(len: usize, n: i64) -> Option<usize> {
    let n = usize::try_from(n.max(0)).ok()?;
    len.checked_mul(n)
}

/// The arithmetic operators.
pub(super) fn arith(op: &str, a: &C, b: &C, budget: &mut Budget) -> Fold {
    let float = |x: &C| match x {
        C::Int(i) => i32::try_from(*i).ok().map(f64::from),
        C::Float(f) => Some(*f),
        C::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match (op, a, b) {
        ("+", C::Str(_), C::Str(_)) => concat(a, b, budget),
        ("+", C::List(x), C::List(y)) => {
            if x.len().saturating_add(y.len()) > limits::MAX_TEMPLATE_FOLD_LIST {
                return Fold::TooBig;
            }
            list(x.iter().chain(y).cloned().collect(), budget)
        }
        ("*", C::Str(s), C::Int(n)) | ("*", C::Int(n), C::Str(s)) => match repeat_len(s.len(), *n) {
            Some(l) if l <= limits::MAX_TEMPLATE_FOLD_STRING => {
                string(s.repeat(l.checked_div(s.len()).unwrap_or(0)), budget)
            }
            _ => Fold::TooBig,
        },
        ("*", C::List(v), C::Int(n)) | ("*", C::Int(n), C::List(v)) => match repeat_len(v.len(), *n) {
            Some(l) if l <= limits::MAX_TEMPLATE_FOLD_LIST => {
                let times = l.checked_div(v.len()).unwrap_or(0);
                list(std::iter::repeat_n(v.iter().cloned(), times).flatten().collect(), budget)
            }
            _ => Fold::TooBig,
        },
        ("%", C::Str(f), args) => printf(f, args, budget),
        (_, C::Int(x), C::Int(y)) => {
            let r = match op {
                "+" => x.checked_add(*y),
                "-" => x.checked_sub(*y),
                "*" => x.checked_mul(*y),
                "//" => x.checked_div_euclid(*y),
                "%" => x.checked_rem_euclid(*y),
                "**" => match u32::try_from(*y) {
                    Ok(e) => x.checked_pow(e),
                    Err(_) => return Fold::Unknown,
                },
                "/" => {
                    return match (float(a), float(b)) {
                        (Some(p), Some(q)) if q != 0.0 => Fold::Const(C::Float(p / q)),
                        _ => Fold::Unknown,
                    };
                }
                _ => return Fold::Unknown,
            };
            match r {
                Some(v) => Fold::Const(C::Int(v)),
                None if *y == 0 => Fold::Unknown,
                None => Fold::TooBig,
            }
        }
        _ => match (float(a), float(b)) {
            (Some(x), Some(y)) => {
                let r = match op {
                    "+" => x + y,
                    "-" => x - y,
                    "*" => x * y,
                    "/" => x / y,
                    "**" => x.powf(y),
                    _ => return Fold::Unknown,
                };
                if r.is_finite() { Fold::Const(C::Float(r)) } else { Fold::Unknown }
            }
            _ => Fold::Unknown,
        },
    }
}

/// Python's `fmt % args`: `%s`, `%r`, `%d`, `%i`, `%c`, `%x`, `%%` and
/// `%(name)s` with a dict.
pub(super) fn printf(fmt: &str, args: &C, budget: &mut Budget) -> Fold {
    let positional: Vec<&C> = match args {
        C::List(v) => v.iter().collect(),
        C::Map(_) => Vec::new(),
        other => vec![other],
    };
    let mut next = positional.into_iter();
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if out.len() > limits::MAX_TEMPLATE_FOLD_STRING {
            return Fold::TooBig;
        }
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut arg = None;
        if chars.peek() == Some(&'(') {
            let _ = chars.next();
            let name: String = chars.by_ref().take_while(|c| *c != ')').collect();
            let C::Map(m) = args else { return Fold::Unknown };
            arg = m.iter().find(|(k, _)| *k == name).map(|(_, v)| v);
            if arg.is_none() {
                return Fold::Unknown;
            }
        }
        // Flags, width and precision are ignored.
        while chars.peek().is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | ' ' | '#' | '.')) {
            let _ = chars.next();
        }
        let Some(conv) = chars.next() else { return Fold::Unknown };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let Some(a) = arg.or_else(|| next.next()) else { return Fold::Unknown };
        match (conv, a) {
            ('s' | 'r', a) => match text(a) {
                Some(t) if conv == 's' => out.push_str(&t),
                Some(t) => out.push_str(&format!("'{t}'")),
                None => return Fold::Unknown,
            },
            ('d' | 'i', C::Int(i)) => out.push_str(&i.to_string()),
            ('x', C::Int(i)) => out.push_str(&format!("{i:x}")),
            ('c', C::Int(i)) => match u32::try_from(*i).ok().and_then(char::from_u32) {
                Some(ch) => out.push(ch),
                None => return Fold::Unknown,
            },
            ('c', C::Str(s)) if s.chars().count() == 1 => out.push_str(s),
            _ => return Fold::Unknown,
        }
    }
    string(out, budget)
}

/// `fmt.format(*pos, **kw)`: `{}`, `{0}`, `{name}`, `{{`, `}}`; conversions
/// and format specs are ignored.
pub(super) fn format(fmt: &str, pos: &[&C], kw: &[(&str, &C)], budget: &mut Budget) -> Fold {
    let mut out = String::new();
    let mut auto = 0usize;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if out.len() > limits::MAX_TEMPLATE_FOLD_STRING {
            return Fold::TooBig;
        }
        match c {
            '{' if chars.peek() == Some(&'{') => {
                let _ = chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                let _ = chars.next();
                out.push('}');
            }
            '{' => {
                let field: String = chars.by_ref().take_while(|c| *c != '}').collect();
                let name = field.split([':', '!']).next().unwrap_or_default();
                let arg = if name.is_empty() {
                    let a = pos.get(auto).copied();
                    auto = auto.saturating_add(1);
                    a
                } else if let Ok(i) = name.parse::<usize>() {
                    pos.get(i).copied()
                } else {
                    kw.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
                };
                match arg.and_then(text) {
                    Some(t) => out.push_str(&t),
                    None => return Fold::Unknown,
                }
            }
            c => out.push(c),
        }
    }
    string(out, budget)
}

fn index(len: usize, i: i64) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { len.checked_add(i)? } else { i };
    usize::try_from(i).ok().filter(|i| i64::try_from(*i).is_ok_and(|x| x < len))
}

/// `c[i]`.
pub(super) fn item(c: &C, key: &C) -> Fold {
    match (c, key) {
        (C::Str(s), C::Int(i)) => {
            let chars: Vec<char> = s.chars().collect();
            match index(chars.len(), *i).and_then(|i| chars.get(i)) {
                Some(ch) => Fold::Const(C::Str(ch.to_string())),
                None => Fold::Unknown,
            }
        }
        (C::List(v), C::Int(i)) => match index(v.len(), *i).and_then(|i| v.get(i)) {
            Some(x) => Fold::Const(x.clone()),
            None => Fold::Unknown,
        },
        (C::Map(m), C::Str(k)) => match m.iter().find(|(n, _)| n == k) {
            Some((_, v)) => Fold::Const(v.clone()),
            None => Fold::Unknown,
        },
        _ => Fold::Unknown,
    }
}

/// Python slice semantics over a sequence of length `len`.
fn slice_indices(len: usize, start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> Option<Vec<usize>> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return None;
    }
    let n = i64::try_from(len).ok()?;
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64| if v < 0 { v.saturating_add(n) } else { v };
    let mut out = Vec::new();
    if step > 0 {
        let mut i = clamp(start.map_or(0, norm), 0, n);
        let end = clamp(stop.map_or(n, norm), 0, n);
        while i < end {
            out.push(usize::try_from(i).ok()?);
            i = i.checked_add(step)?;
        }
    } else {
        let mut i = clamp(start.map_or(n.saturating_sub(1), norm), -1, n.saturating_sub(1));
        let end = clamp(stop.map_or(-1, norm), -1, n.saturating_sub(1));
        while i > end {
            out.push(usize::try_from(i).ok()?);
            i = i.checked_add(step)?;
        }
    }
    Some(out)
}

/// `c[start:stop:step]`.
pub(super) fn slice(c: &C, start: Option<&C>, stop: Option<&C>, step: Option<&C>, budget: &mut Budget) -> Fold {
    let int = |x: Option<&C>| -> Result<Option<i64>, ()> {
        match x {
            None | Some(C::None) => Ok(None),
            Some(C::Int(i)) => Ok(Some(*i)),
            _ => Err(()),
        }
    };
    let (Ok(a), Ok(b), Ok(s)) = (int(start), int(stop), int(step)) else { return Fold::Unknown };
    match c {
        C::Str(st) => {
            let chars: Vec<char> = st.chars().collect();
            let Some(ix) = slice_indices(chars.len(), a, b, s) else { return Fold::Unknown };
            string(ix.iter().filter_map(|i| chars.get(*i)).collect(), budget)
        }
        C::List(v) => {
            let Some(ix) = slice_indices(v.len(), a, b, s) else { return Fold::Unknown };
            list(ix.iter().filter_map(|i| v.get(*i).cloned()).collect(), budget)
        }
        _ => Fold::Unknown,
    }
}

/// `s.replace(old, new[, count])` with the result's size checked first.
fn replace(s: &str, old: &str, new: &str, count: Option<i64>, budget: &mut Budget) -> Fold {
    if old.is_empty() {
        return Fold::Unknown;
    }
    let n = s.matches(old).count();
    let n = match count {
        Some(c) if c >= 0 => n.min(usize::try_from(c).unwrap_or(usize::MAX)),
        _ => n,
    };
    let grow = new.len().saturating_sub(old.len()).saturating_mul(n);
    if s.len().saturating_add(grow) > limits::MAX_TEMPLATE_FOLD_STRING {
        return Fold::TooBig;
    }
    string(s.replacen(old, new, n), budget)
}

fn join(items: &C, sep: &str, budget: &mut Budget) -> Fold {
    let parts: Vec<String> = match items {
        C::List(v) => match v.iter().map(text).collect::<Option<Vec<_>>>() {
            Some(p) => p,
            None => return Fold::Unknown,
        },
        C::Map(m) => m.iter().map(|(k, _)| k.clone()).collect(),
        C::Str(s) => s.chars().map(String::from).collect(),
        _ => return Fold::Unknown,
    };
    let total = parts.iter().map(String::len).fold(0usize, usize::saturating_add);
    if total.saturating_add(sep.len().saturating_mul(parts.len())) > limits::MAX_TEMPLATE_FOLD_STRING {
        return Fold::TooBig;
    }
    string(parts.join(sep), budget)
}

fn as_str<'c>(c: Option<&&'c C>) -> Option<&'c str> {
    match c {
        Some(C::Str(s)) => Some(s),
        _ => None,
    }
}

fn as_int(c: Option<&&C>) -> Option<i64> {
    match c {
        Some(C::Int(i)) => Some(*i),
        _ => None,
    }
}

/// A filter or method that builds or reshapes strings: `|join`,
/// `|replace`, `|reverse`, `|lower`, `|upper`, `|string`, `|first`,
/// `|last`, `|list`, `|format`, `|trim`, `|title`, `|capitalize`,
/// `|default`, `|length`, and the `str` methods of the same names plus
/// `format`, `join`, `strip`, `split`. `this` is the filtered value (or
/// the method's receiver).
pub(super) fn apply(name: &str, this: &C, args: &[&C], kw: &[(&str, &C)], method: bool, budget: &mut Budget) -> Fold {
    let arg0 = args.first();
    match (name, this) {
        ("join", C::Str(sep)) if method => match arg0 {
            Some(items) => join(items, sep, budget),
            None => Fold::Unknown,
        },
        ("join", items) if !method => join(items, as_str(arg0).unwrap_or(""), budget),
        ("replace", C::Str(s)) => match (as_str(arg0), as_str(args.get(1))) {
            (Some(old), Some(new)) => replace(s, old, new, as_int(args.get(2)), budget),
            _ => Fold::Unknown,
        },
        ("reverse", C::Str(s)) if !method => string(s.chars().rev().collect(), budget),
        ("reverse", C::List(v)) if !method => list(v.iter().rev().cloned().collect(), budget),
        ("lower", C::Str(s)) => string(s.to_lowercase(), budget),
        ("upper", C::Str(s)) => string(s.to_uppercase(), budget),
        ("trim" | "strip", C::Str(s)) if arg0.is_none() => string(s.trim().to_string(), budget),
        ("lstrip", C::Str(s)) if method && arg0.is_none() => string(s.trim_start().to_string(), budget),
        ("rstrip", C::Str(s)) if method && arg0.is_none() => string(s.trim_end().to_string(), budget),
        ("strip", C::Str(s)) => match as_str(arg0) {
            Some(chars) => string(s.trim_matches(|c| chars.contains(c)).to_string(), budget),
            None => Fold::Unknown,
        },
        ("capitalize", C::Str(s)) => {
            let mut cs = s.chars();
            let first: String = cs.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
            string(first + &cs.as_str().to_lowercase(), budget)
        }
        ("string", c) if !method => match text(c) {
            Some(t) => string(t, budget),
            None => Fold::Unknown,
        },
        ("first", C::Str(s)) if !method => s.chars().next().map_or(Fold::Unknown, |c| Fold::Const(C::Str(c.into()))),
        ("last", C::Str(s)) if !method => s.chars().last().map_or(Fold::Unknown, |c| Fold::Const(C::Str(c.into()))),
        ("first", C::List(v)) if !method => v.first().cloned().map_or(Fold::Unknown, Fold::Const),
        ("last", C::List(v)) if !method => v.last().cloned().map_or(Fold::Unknown, Fold::Const),
        ("first", C::Map(m)) if !method => m.first().map_or(Fold::Unknown, |(k, _)| Fold::Const(C::Str(k.clone()))),
        ("list", C::Str(s)) if !method => list(s.chars().map(|c| C::Str(c.into())).collect(), budget),
        ("list", C::List(v)) if !method => list(v.clone(), budget),
        ("list", C::Map(m)) if !method => list(m.iter().map(|(k, _)| C::Str(k.clone())).collect(), budget),
        ("format", C::Str(f)) if method => format(f, args, kw, budget),
        ("format", C::Str(f)) => match args {
            [one] => printf(f, one, budget),
            _ => printf(f, &C::List(args.iter().map(|c| (*c).clone()).collect()), budget),
        },
        ("split", C::Str(s)) if method => {
            let parts: Vec<C> = match as_str(arg0) {
                Some(sep) if !sep.is_empty() => s.split(sep).map(|p| C::Str(p.into())).collect(),
                None if arg0.is_none() => s.split_whitespace().map(|p| C::Str(p.into())).collect(),
                _ => return Fold::Unknown,
            };
            list(parts, budget)
        }
        ("default" | "d", c) if !method => Fold::Const(c.clone()),
        ("length" | "count", C::Str(s)) if !method => {
            Fold::Const(C::Int(i64::try_from(s.chars().count()).unwrap_or(0)))
        }
        ("length" | "count", C::List(v)) if !method => Fold::Const(C::Int(i64::try_from(v.len()).unwrap_or(0))),
        ("int", C::Int(i)) if !method => Fold::Const(C::Int(*i)),
        ("int", C::Str(s)) if !method => s.trim().parse().map_or(Fold::Unknown, |i| Fold::Const(C::Int(i))),
        ("safe", c) if !method => Fold::Const(c.clone()),
        ("bool", c) if !method => Fold::Const(C::Bool(truthy(c))),
        _ => Fold::Unknown,
    }
}

/// `not c`.
pub(super) fn not(c: &C) -> Fold {
    Fold::Const(C::Bool(!truthy(c)))
}

/// `-c`.
pub(super) fn neg(c: &C) -> Fold {
    match c {
        C::Int(i) => i.checked_neg().map_or(Fold::TooBig, |v| Fold::Const(C::Int(v))),
        C::Float(f) => Fold::Const(C::Float(-f)),
        _ => Fold::Unknown,
    }
}

/// `a and b` / `a or b`.
pub(super) fn logic(and: bool, a: &C, b: &C) -> Fold {
    Fold::Const(if truthy(a) == and { b.clone() } else { a.clone() })
}

/// `range(...)`.
pub(super) fn range(args: &[&C], budget: &mut Budget) -> Fold {
    let ints: Option<Vec<i64>> = args.iter().map(|c| if let C::Int(i) = c { Some(*i) } else { None }).collect();
    let Some(ints) = ints else { return Fold::Unknown };
    let (start, stop, step) = match ints.as_slice() {
        [stop] => (0, *stop, 1),
        [start, stop] => (*start, *stop, 1),
        [start, stop, step] if *step != 0 => (*start, *stop, *step),
        _ => return Fold::Unknown,
    };
    let mut out = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        if out.len() >= limits::MAX_TEMPLATE_FOLD_LIST {
            return Fold::TooBig;
        }
        out.push(C::Int(i));
        let Some(n) = i.checked_add(step) else { break };
        i = n;
    }
    list(out, budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> C {
        C::Str(x.into())
    }

    #[test]
    fn repetition_is_sized_before_it_is_built() {
        let mut b = Budget::for_template(10);
        assert!(matches!(arith("*", &s("a"), &C::Int(1_000_000_000), &mut b), Fold::TooBig));
        assert!(matches!(arith("*", &s("_"), &C::Int(2), &mut b), Fold::Const(C::Str(x)) if x == "__"));
        assert!(matches!(arith("**", &C::Int(10), &C::Int(9), &mut b), Fold::Const(C::Int(1_000_000_000))));
        assert!(matches!(arith("**", &C::Int(10), &C::Int(99), &mut b), Fold::TooBig));
        assert!(matches!(arith("//", &C::Int(1), &C::Int(0), &mut b), Fold::Unknown));
    }

    #[test]
    fn string_builders_fold() {
        let mut b = Budget::for_template(10);
        let f = |r: Fold| match r {
            Fold::Const(C::Str(x)) => x,
            _ => String::from("<none>"),
        };
        assert_eq!(f(printf("%sclass%s", &C::List(vec![s("__"), s("__")]), &mut b)), "__class__");
        assert_eq!(f(printf("%c%c", &C::List(vec![C::Int(95), C::Int(95)]), &mut b)), "__");
        assert_eq!(f(format("{}cla{x}", &[&s("__")], &[("x", &s("ss__"))], &mut b)), "__class__");
        assert_eq!(f(apply("reverse", &s("__ssalc__"), &[], &[], false, &mut b)), "__class__");
        assert_eq!(f(apply("replace", &s("__clXss__"), &[&s("X"), &s("a")], &[], false, &mut b)), "__class__");
        assert_eq!(f(apply("join", &C::List(vec![s("__cl"), s("ass__")]), &[], &[], false, &mut b)), "__class__");
        assert_eq!(f(slice(&s("xx__class__"), Some(&C::Int(2)), None, None, &mut b)), "__class__");
        assert_eq!(f(slice(&s("__ssalc__"), None, None, Some(&C::Int(-1)), &mut b)), "__class__");
        assert!(matches!(replace(&"a".repeat(100), "a", &"b".repeat(100), None, &mut b), Fold::TooBig));
    }

    #[test]
    fn alternatives_are_bounded() {
        let mut v = Val::one(s("a"));
        for i in 0..limits::MAX_TEMPLATE_ALTERNATIVES {
            v = v.union(Val::one(C::Int(i64::try_from(i).unwrap_or(0))));
        }
        assert!(v.limit && v.alts.is_empty());
    }

    #[test]
    fn the_budget_runs_out() {
        let mut b = Budget::for_template(0);
        let mut n = 0u64;
        while b.spend(4096) {
            n += 1;
        }
        assert!(b.exhausted && n > 0 && n < 1 << 20);
    }
}
