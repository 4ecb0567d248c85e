//! The library's module graph has no cycle and no arrow back up its layers
//! (ARCHITECTURE.md, "Layers of the library"), and no crate of the workspace
//! has a module cycle.
//!
//! Every `parser/core/src/**/*.rs` file of the library is read,
//! comments and literals blanked, and every path that starts with `crate::`,
//! `super::` or `self::` (in `use` trees, in expressions, and in strings
//! that are a whole path, like serde's `serialize_with`) resolved to the
//! file that defines its module: a file is one module, a `mod.rs` is its
//! folder's module, inline modules belong to their file, and names
//! re-exported by `lib.rs` (`crate::Validator`, `crate::template`)
//! resolve to where they come from. Code under `#[cfg(test)]` is left out:
//! a unit test may build its input with the writer or judge it with
//! `validate` without making the module depend on them.
//!
//! A module may use its parent and its parent may use it; any other arrow
//! joins two different children of their closest common module (two
//! top-level modules for `check/keys.rs -> report.rs`, `keys` and `split`
//! for `check/keys.rs -> check/split.rs`). At every level, the arrows
//! between children must have no cycle. A cycle is reported with its
//! modules and, for each arrow, the line that makes it.
//!
//! Standard library only: this is a lexer, not a Rust parser, which is
//! enough for the paths above.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module: its path from the crate root (`[]` is the crate root).
type Module = Vec<String>;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every library source file, with its module.
fn library_files() -> Vec<(PathBuf, Module)> {
    crate_files(&src_dir())
}

/// Every source file of the crate whose root (`lib.rs` or `main.rs`) is in
/// `src`, with its module; `src/bin/` (other crates: binaries of their own)
/// aside.
fn crate_files(src: &Path) -> Vec<(PathBuf, Module)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|p| !p.starts_with(src.join("bin")))
        .map(|p| {
            let rel = p.strip_prefix(src).unwrap();
            let mut m: Module = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            let last = m.pop().unwrap();
            let root = m.is_empty() && (last == "lib.rs" || last == "main.rs");
            if last != "mod.rs" && !root {
                m.push(last.trim_end_matches(".rs").to_string());
            }
            (p, m)
        })
        .collect()
}

/// The `src/` folder of every member of the workspace (its root
/// `Cargo.toml`'s `members`).
fn workspace_crates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest.split("members = [").nth(1).and_then(|m| m.split(']').next()).expect("workspace members");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m).join("src"))
        .collect()
}

/// `src` with comments, string, byte-string, raw-string and char literals
/// replaced by spaces (newlines kept, so lines still count).
fn blank(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank_to = |out: &mut String, from: &[char]| {
        for ch in from {
            out.push(if *ch == '\n' { '\n' } else { ' ' });
        }
    };
    while i < c.len() {
        let rest = &c[i..];
        if rest.starts_with(&['/', '/']) {
            let end = rest.iter().position(|&x| x == '\n').unwrap_or(rest.len());
            blank_to(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(&['/', '*']) {
            // Block comments nest.
            let (mut depth, mut j) = (0, 0);
            loop {
                if j >= rest.len() {
                    break;
                }
                if rest[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank_to(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string(rest, i == 0 || !is_ident(c[i - 1])) {
            blank_to(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == '"' || (rest.starts_with(&['b', '"']) && (i == 0 || !is_ident(c[i - 1]))) {
            let start = if rest[0] == 'b' { 2 } else { 1 };
            let mut j = start;
            while j < rest.len() && rest[j] != '"' {
                j += if rest[j] == '\\' { 2 } else { 1 };
            }
            let len = (j + 1).min(rest.len());
            // A string that is a whole path is one (serde's
            // `serialize_with = "crate::..."`): kept, without its quotes.
            let inner: String = rest[start..j.min(rest.len())].iter().collect();
            if is_path_text(&inner) {
                blank_to(&mut out, &rest[..start]);
                out.push_str(&inner);
                blank_to(&mut out, &rest[j.min(rest.len())..len]);
            } else {
                blank_to(&mut out, &rest[..len]);
            }
            i += len;
        } else if rest[0] == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if rest.get(1) == Some(&'\\') {
                let mut j = 2;
                while j < rest.len() && rest[j] != '\'' {
                    j += 1;
                }
                blank_to(&mut out, &rest[..=j.min(rest.len() - 1)]);
                i += j + 1;
            } else if rest.get(2) == Some(&'\'') {
                blank_to(&mut out, &rest[..3]);
                i += 3;
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    out
}

/// Whether `s` is a path such as `crate::a::b` (and nothing else).
fn is_path_text(s: &str) -> bool {
    let mut parts = s.split("::");
    matches!(parts.next(), Some("crate" | "super" | "self"))
        && s.contains("::")
        && parts.all(|p| !p.is_empty() && p.chars().all(is_ident))
}

/// The length of a raw (byte) string literal at the start of `s`.
fn raw_string(s: &[char], at_word_start: bool) -> Option<usize> {
    if !at_word_start {
        return None;
    }
    let mut j = match s {
        ['r', ..] => 1,
        ['b', 'r', ..] => 2,
        _ => return None,
    };
    let hashes = s[j..].iter().take_while(|&&x| x == '#').count();
    j += hashes;
    if s.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < s.len() {
        if s[j] == '"' && s[j + 1..].iter().take(hashes).filter(|&&x| x == '#').count() == hashes {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(s.len())
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// A token: an identifier, `::`, or one punctuation character; with its line.
#[derive(Debug, Clone, PartialEq)]
struct Tok {
    text: String,
    line: usize,
}

fn tokens(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if is_ident(ch) {
            let start = i;
            while i < c.len() && is_ident(c[i]) {
                i += 1;
            }
            out.push(Tok { text: c[start..i].iter().collect(), line });
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Tok { text: "::".into(), line });
            i += 2;
        } else {
            out.push(Tok { text: ch.to_string(), line });
            i += 1;
        }
    }
    out
}

/// One use of another module: the path as written (resolved later) and
/// where it is.
#[derive(Debug)]
struct Reference {
    /// The module the path is relative to (the file's module and its
    /// inline modules), for `super::` and `self::`.
    scope: Module,
    path: Vec<String>,
    line: usize,
}

/// What a file refers to, and the file modules declared `#[cfg(test)] mod x;`
/// in it.
struct Scanned {
    references: Vec<Reference>,
    test_modules: Vec<Module>,
}

fn is_cfg_test(t: &[Tok], i: usize) -> bool {
    let want = ["#", "[", "cfg", "(", "test", ")", "]"];
    t.len() >= i + want.len() && want.iter().enumerate().all(|(k, w)| t[i + k].text == *w)
}

/// The index after the item that starts at `i` (its attributes, then up to
/// its `;` or the end of its body).
fn skip_item(t: &[Tok], mut i: usize) -> usize {
    while i < t.len() && t[i].text == "#" {
        let mut depth = 0;
        i += 1;
        while i < t.len() {
            match t[i].text.as_str() {
                "[" => depth += 1,
                "]" => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    let is_use = t[i..].iter().take(5).any(|x| x.text == "use");
    let mut depth = 0i32;
    while i < t.len() {
        match t[i].text.as_str() {
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => {
                depth -= 1;
                if depth == 0 && t[i].text == "}" && !is_use {
                    return i + 1;
                }
            }
            ";" if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Expands the use tree or path starting at `t[i]` (an identifier) into full
/// paths; returns them and the index after it.
fn path_at(t: &[Tok], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match t.get(i).map(|x| x.text.as_str()) {
            Some("{") => {
                i += 1;
                loop {
                    match t.get(i).map(|x| x.text.as_str()) {
                        Some("}") => return i + 1,
                        Some(",") => i += 1,
                        Some(s) if is_ident(s.chars().next().unwrap()) || s == "*" || s == "{" => {
                            i = path_at(t, i, &path, out);
                        }
                        _ => return i,
                    }
                }
            }
            Some("*") => {
                out.push(path);
                return i + 1;
            }
            Some(s) if is_ident(s.chars().next().unwrap()) => {
                // `a::{self, b}`: `self` is `a` itself.
                if s != "self" || path.is_empty() {
                    path.push(s.to_string());
                }
                i += 1;
                if t.get(i).map(|x| x.text.as_str()) == Some("::") {
                    i += 1;
                    continue;
                }
                if t.get(i).map(|x| x.text.as_str()) == Some("as") {
                    i += 2;
                }
                out.push(path);
                return i;
            }
            _ => {
                out.push(path);
                return i;
            }
        }
    }
}

fn scan(src: &str, module: &Module) -> Scanned {
    let t = tokens(&blank(src));
    let mut references = Vec::new();
    let mut test_modules = Vec::new();
    // Inline modules open at a brace depth.
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < t.len() {
        if is_cfg_test(&t, i) {
            let end = skip_item(&t, i);
            // `#[cfg(test)] mod name;`: a test-only file module.
            if end >= 3 && t[end - 1].text == ";" && t[end - 3].text == "mod" {
                let mut m = module.clone();
                m.extend(inline.iter().map(|(n, _)| n.clone()));
                m.push(t[end - 2].text.clone());
                test_modules.push(m);
            }
            i = end;
            continue;
        }
        let text = t[i].text.as_str();
        match text {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            "mod" if t.get(i + 2).is_some_and(|x| x.text == "{") => {
                inline.push((t[i + 1].text.clone(), depth + 1));
            }
            "crate" | "super" | "self"
                if t.get(i + 1).is_some_and(|x| x.text == "::")
                    && !(i > 0 && (t[i - 1].text == "$" || t[i - 1].text == "::")) =>
            {
                let mut paths = Vec::new();
                let line = t[i].line;
                let end = path_at(&t, i, &[], &mut paths);
                let mut scope = module.clone();
                scope.extend(inline.iter().map(|(n, _)| n.clone()));
                for path in paths {
                    references.push(Reference { scope: scope.clone(), path, line });
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Scanned { references, test_modules }
}

/// `path` made absolute (from the crate root) against `scope`.
fn absolute(scope: &Module, path: &[String]) -> Option<Vec<String>> {
    let mut base = scope.clone();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The file module that defines `path`: its longest prefix that is one,
/// through `lib.rs`'s re-exports when it names none.
fn defining_module(path: &[String], modules: &BTreeSet<Module>, reexports: &BTreeMap<String, Vec<String>>) -> Module {
    let longest = (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p)).unwrap_or_default();
    if longest.is_empty() {
        if let Some(target) = path.first().and_then(|n| reexports.get(n)) {
            let mut p = target.clone();
            p.extend(path[1..].iter().cloned());
            if p != path {
                return defining_module(&p, modules, reexports);
            }
        }
    }
    longest
}

/// `lib.rs`'s `pub use a::b::{c, d};` as name -> path.
fn lib_reexports(lib: &str) -> BTreeMap<String, Vec<String>> {
    let t = tokens(&blank(lib));
    let mut map = BTreeMap::new();
    for i in 0..t.len() {
        if t[i].text == "use" && i > 0 && t[i - 1].text == "pub" {
            let mut paths = Vec::new();
            path_at(&t, i + 1, &[], &mut paths);
            for p in paths {
                if let Some(name) = p.last() {
                    map.insert(name.clone(), p);
                }
            }
        }
    }
    map
}

fn show(m: &Module) -> String {
    if m.is_empty() { "crate".to_string() } else { m.join("::") }
}

/// One arrow between modules, with the first place that makes it.
type Arrows = BTreeMap<(Module, Module), String>;

/// The arrows between file modules of the library (parent and child
/// arrows left out).
fn arrows() -> Arrows {
    arrows_in(&src_dir())
}

/// The arrows between file modules of the crate in `src`.
fn arrows_in(src: &Path) -> Arrows {
    let files = crate_files(src);
    let src = src.to_path_buf();
    let root = ["lib.rs", "main.rs"].iter().map(|r| src.join(r)).find(|p| p.exists()).expect("lib.rs or main.rs");
    let lib = std::fs::read_to_string(root).expect("the crate root");
    let reexports = lib_reexports(&lib);
    let scanned: Vec<(PathBuf, Module, Scanned)> = files
        .iter()
        .map(|(p, m)| (p.clone(), m.clone(), scan(&std::fs::read_to_string(p).expect("read"), m)))
        .collect();
    let test_only: Vec<Module> = scanned.iter().flat_map(|(_, _, s)| s.test_modules.clone()).collect();
    let modules: BTreeSet<Module> = files.iter().map(|(_, m)| m.clone()).collect();
    let mut arrows = Arrows::new();
    for (p, from, s) in &scanned {
        if test_only.iter().any(|t| from.starts_with(t)) {
            continue;
        }
        for r in &s.references {
            let Some(abs) = absolute(&r.scope, &r.path) else { continue };
            let to = defining_module(&abs, &modules, &reexports);
            if to.starts_with(from) || from.starts_with(&to) {
                continue;
            }
            let at = format!("{}:{}", p.strip_prefix(&src).unwrap().display(), r.line);
            arrows.entry((from.clone(), to)).or_insert(at);
        }
    }
    arrows
}

/// The cycles among the children of each module: for every module, the
/// strongly connected components (of more than one child) of the arrows
/// between its children.
fn cycles(arrows: &Arrows) -> Vec<String> {
    // Arrows grouped by the closest common module of their ends, as arrows
    // between its two children.
    let mut levels: BTreeMap<Module, BTreeMap<String, BTreeMap<String, Vec<String>>>> = BTreeMap::new();
    for ((from, to), at) in arrows {
        let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        let (a, b) = (&from[common], &to[common]);
        let evidence = format!("{} -> {} ({at})", show(from), show(to));
        levels
            .entry(from[..common].to_vec())
            .or_default()
            .entry(a.clone())
            .or_default()
            .entry(b.clone())
            .or_default()
            .push(evidence);
    }
    let mut found = Vec::new();
    for (parent, graph) in &levels {
        for scc in strongly_connected(graph) {
            if scc.len() < 2 {
                continue;
            }
            let mut lines = vec![format!(
                "cycle among the children of {}: {}",
                show(parent),
                scc.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            )];
            for a in &scc {
                for b in &scc {
                    if let Some(ev) = graph.get(a).and_then(|m| m.get(b)) {
                        lines.extend(ev.iter().map(|e| format!("    {e}")));
                    }
                }
            }
            found.push(lines.join("\n"));
        }
    }
    found
}

/// Tarjan's strongly connected components of `graph` (node -> successors).
fn strongly_connected(graph: &BTreeMap<String, BTreeMap<String, Vec<String>>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, Vec<String>>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.graph.get(v) {
            for w in next.keys() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                scc.push(w.to_string());
                if w == v {
                    break;
                }
            }
            scc.sort();
            s.out.push(scc);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> =
        graph.iter().flat_map(|(a, next)| std::iter::once(a.as_str()).chain(next.keys().map(String::as_str))).collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The top-level modules of the library (files and folders of `src/`).
fn top_level_modules() -> BTreeSet<String> {
    library_files().into_iter().filter_map(|(_, m)| m.first().cloned()).collect()
}

/// The numbered items of a list in `lines` (each item's text, its
/// continuation lines joined), by number.
fn numbered_items<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<(usize, String)> {
    let mut items: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for line in lines {
        let number = line.split_once(". ").and_then(|(n, _)| n.parse::<usize>().ok());
        match number {
            Some(n) => {
                items.push((n, line.to_string()));
                open = true;
            }
            None if open && line.starts_with("   ") => items.last_mut().unwrap().1.push_str(line),
            None => open = false,
        }
    }
    items
}

/// The code spans (`...`) of `text`.
fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// Each top-level module's layer in ARCHITECTURE.md: the first item of
/// "Layers of the library" that names it as a path (`x.rs`, `x/`,
/// `x/y.rs`).
fn architecture_layers(modules: &BTreeSet<String>) -> BTreeMap<String, usize> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md")).unwrap();
    let section = doc.split("\n## Layers of the library\n").nth(1).expect("the layers section");
    let section = section.split("\n## ").next().unwrap();
    let mut layers = BTreeMap::new();
    for (n, text) in numbered_items(section.lines()) {
        for span in code_spans(&text).filter(|s| s.ends_with(".rs") || s.contains('/')) {
            let first = span.split('/').next().unwrap().trim_end_matches(".rs");
            if modules.contains(first) {
                layers.entry(first.to_string()).or_insert(n);
            }
        }
    }
    layers
}

/// Each top-level module's layer in `lib.rs`'s documentation: the first
/// numbered item that names it (`[`x`]` or `x`).
fn lib_layers(modules: &BTreeSet<String>) -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let docs = lib.lines().filter_map(|l| l.strip_prefix("//! ").or_else(|| l.strip_prefix("//!")));
    let mut layers = BTreeMap::new();
    for (n, text) in numbered_items(docs) {
        for span in code_spans(&text) {
            if modules.contains(span) {
                layers.entry(span.to_string()).or_insert(n);
            }
        }
    }
    layers
}

/// No arrow goes back up the layers of ARCHITECTURE.md, every module has a
/// layer there, and `lib.rs` lists the same layers.
#[test]
fn no_arrow_goes_back_up_the_layers() {
    let modules = top_level_modules();
    let layers = architecture_layers(&modules);
    let missing: Vec<&String> = modules.iter().filter(|m| !layers.contains_key(*m)).collect();
    assert!(missing.is_empty(), "modules ARCHITECTURE.md's layer list does not name (as `x.rs` or `x/`): {missing:?}");
    let lib = lib_layers(&modules);
    let differ: Vec<String> = modules
        .iter()
        .filter(|m| lib.get(*m) != layers.get(*m))
        .map(|m| format!("{m}: lib.rs {:?}, ARCHITECTURE.md {:?}", lib.get(m), layers.get(m)))
        .collect();
    assert!(differ.is_empty(), "lib.rs's layer list differs from ARCHITECTURE.md's:\n{}", differ.join("\n"));
    let mut up = Vec::new();
    for ((from, to), at) in &arrows() {
        let (lf, lt) = (layers[&from[0]], layers[&to[0]]);
        if from[0] != to[0] && lt > lf {
            up.push(format!("{} (layer {lf}) -> {} (layer {lt}) ({at})", show(from), show(to)));
        }
    }
    assert!(up.is_empty(), "arrows going back up the layers of ARCHITECTURE.md:\n{}", up.join("\n"));
}

#[test]
fn the_library_has_no_module_cycle() {
    let found = cycles(&arrows());
    assert!(found.is_empty(), "module cycles (see ARCHITECTURE.md, \"Layers of the library\"):\n{}", found.join("\n"));
}

/// No crate of the workspace (the CLI, the HTTP source, the harness, the
/// numerics, conformance, fuzz, the test kit) has a module cycle either.
#[test]
fn no_crate_of_the_workspace_has_a_module_cycle() {
    let crates = workspace_crates();
    assert!(crates.len() >= 8, "{crates:?}");
    let mut found = Vec::new();
    for src in &crates {
        for c in cycles(&arrows_in(src)) {
            found.push(format!("{}: {c}", src.display()));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

/// The scanner itself: paths in use trees, in expressions, through
/// `super::`, past comments, strings and test code.
#[test]
fn the_scanner_finds_paths_and_skips_the_rest() {
    let src = r##"
        use crate::a::{b::C, d, e::{self, F as G}, *};
        use super::sibling::X;
        // use crate::commented::Out;
        /* use crate::block /* nested */ ::Out; */
        const S: &str = "see crate::in_string::Out";
        #[serde(serialize_with = "crate::in_attribute::secs")]
        const R: &str = r#"crate::in_raw::Out "quoted""#;
        fn f<'a>(x: &'a u8) -> char { let _ = crate::expr::call(); 'c' }
        macro_rules! m { () => { $crate::in_macro::Out } }
        pub mod inner { use super::super::up::Y; }
        #[cfg(test)]
        mod tests { use crate::only_in_tests::Z; }
        #[cfg(test)]
        mod file_tests;
        use crate::after::W;
    "##;
    let m: Module = vec!["top".into(), "here".into()];
    let s = scan(src, &m);
    let got: Vec<String> = s.references.iter().map(|r| absolute(&r.scope, &r.path).unwrap().join("::")).collect();
    assert_eq!(
        got,
        [
            "a::b::C",
            "a::d",
            "a::e",
            "a::e::F",
            "a",
            "top::sibling::X",
            "in_attribute::secs",
            "expr::call",
            "top::up::Y",
            "after::W",
        ]
    );
    assert_eq!(s.test_modules, [vec!["top".to_string(), "here".into(), "file_tests".into()]]);
}

/// A cycle is found and shown with its arrows; parent and child arrows are
/// not cycles.
#[test]
fn cycles_are_reported_with_their_arrows() {
    let m = |s: &str| -> Module { s.split("::").map(String::from).collect() };
    let mut a = Arrows::new();
    a.insert((m("check::keys"), m("check::split")), "check/keys.rs:1".into());
    a.insert((m("check::split"), m("check::keys")), "check/split.rs:2".into());
    a.insert((m("report"), m("config")), "report.rs:3".into());
    a.insert((m("config"), m("rules")), "config.rs:4".into());
    let found = cycles(&a);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("cycle among the children of check: keys, split"), "{}", found[0]);
    assert!(found[0].contains("check::keys -> check::split (check/keys.rs:1)"), "{}", found[0]);
    a.insert((m("rules"), m("report")), "rules.rs:5".into());
    let found = cycles(&a);
    assert!(
        found.iter().any(|c| c.starts_with("cycle among the children of crate: config, report, rules")),
        "{found:?}"
    );
}

/// No module of another crate of the workspace is named like a top-level
/// module of the library: a reader of `use gguf_validate_core::validate` (or a
/// tool that draws the graph) must not take the command line's
/// `validate_command.rs` for the library's `validate.rs`.
#[test]
fn no_other_crate_names_a_module_like_the_librarys() {
    let library: BTreeSet<String> =
        library_files().into_iter().filter_map(|(_, m)| m.first().cloned()).filter(|m| m != "tests").collect();
    assert!(library.contains("validate") && library.contains("hash"), "{library:?}");
    let mut clashes = Vec::new();
    // The numerics crate is the layer under the library: its `types` (ggml
    // types) is re-exported by the library's, its `imatrix` (the weights'
    // arithmetic) is what the library's (the files) hands them to.
    const UNDER: [(&str, &str); 2] = [("numerics", "types"), ("numerics", "imatrix")];
    let parser = src_dir().join("../..");
    let own = std::fs::canonicalize(src_dir()).unwrap();
    let mut crates = 0;
    for src in workspace_crates() {
        let Ok(canon) = std::fs::canonicalize(&src) else { continue };
        // The crates beside the library under parser/ (the command line,
        // HTTP, the harness, numerics, Python, testkit).
        let Some(folder) = canon.parent().filter(|p| p.parent() == std::fs::canonicalize(&parser).ok().as_deref())
        else {
            continue;
        };
        if canon == own {
            continue;
        }
        crates += 1;
        let folder = folder.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        for (path, m) in crate_files(&src) {
            let [name] = m.as_slice() else { continue };
            if library.contains(name) && !UNDER.contains(&(folder.as_str(), name.as_str())) {
                clashes.push(format!("{} (the library has `{name}`)", path.display()));
            }
        }
    }
    assert!(crates >= 7, "{crates} crates beside the library");
    assert!(clashes.is_empty(), "modules named like the library's:\n{}", clashes.join("\n"));
}

/// The library, the command line, HTTP, the harness, numerics, Python,
/// testkit and the WebAssembly build are sibling folders under `parser/`,
/// none of them the parent of another (`parser/` itself is no crate), and
/// no two packages or library crates share a name with the Python module
/// (`gguf_validate`) or with each other.
#[test]
fn the_crates_are_sibling_folders_with_names_of_their_own() {
    let parser = std::fs::canonicalize(src_dir().join("../..")).unwrap();
    assert!(!parser.join("Cargo.toml").exists(), "parser/ is a folder of crates, not a crate");
    let mut siblings = BTreeSet::new();
    let (mut packages, mut libs) = (BTreeSet::new(), BTreeSet::new());
    for src in workspace_crates() {
        let dir = src.parent().unwrap().to_path_buf();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let field = |section: &str| -> Option<String> {
            let body = manifest.split(&format!("[{section}]\n")).nth(1)?;
            let body = body.split("\n[").next()?;
            body.lines().find_map(|l| l.strip_prefix("name = \"").map(|n| n.trim_end_matches('"').to_string()))
        };
        let package = field("package").expect("a package name");
        let lib = field("lib").unwrap_or_else(|| package.replace('-', "_"));
        assert!(packages.insert(package.clone()), "two packages named {package}");
        assert!(libs.insert(lib.clone()), "two library crates named {lib}");
        assert_ne!(lib, "gguf_validate", "{package}'s crate is named like the Python module");
        let canon = std::fs::canonicalize(&dir).unwrap();
        if canon.parent() == Some(parser.as_path()) {
            siblings.insert(canon.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    let expected = ["cli", "core", "harness", "http", "numerics", "python", "testkit", "wasm"];
    assert_eq!(siblings, expected.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>());
}

/// Every crate root of the workspace (libraries, binaries, `src/bin/`
/// files, the fuzz targets) forbids `unsafe`.
#[test]
fn every_crate_root_forbids_unsafe_code() {
    let mut roots = Vec::new();
    for src in workspace_crates() {
        for name in ["lib.rs", "main.rs"] {
            roots.push(src.join(name));
        }
        for dir in [src.join("bin"), src.join("../fuzz_targets")] {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                roots.push(e.path());
            }
        }
    }
    let roots: Vec<PathBuf> =
        roots.into_iter().filter(|p| p.extension().is_some_and(|x| x == "rs") && p.is_file()).collect();
    assert!(roots.len() >= 20, "{} crate roots found", roots.len());
    let missing: Vec<String> = roots
        .iter()
        .filter(|p| !std::fs::read_to_string(p).unwrap_or_default().contains("#![forbid(unsafe_code)]"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(missing.is_empty(), "crate roots without #![forbid(unsafe_code)]:\n{}", missing.join("\n"));
}
