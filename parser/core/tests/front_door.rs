//! Inputs are opened in one place: `Input::open` (`pipeline/open.rs`).
//! No other source file of the library, the command line or the Python
//! bindings opens a file or a URL itself, except for what is not an input
//! (the lines of a hash manifest) and the sniff of a directory walk's
//! entries for GGUF magic before they become inputs. A new kind of input
//! is therefore one variant of `Input` and one arm of `Input::open`
//! (ARCHITECTURE.md, "Where each change goes").

use std::path::{Path, PathBuf};

/// The calls that open a model file or a URL.
const OPENERS: [&str; 3] = ["gio::open(", "io::open(", ".open(url"];

/// Files allowed to call them, and why.
const ALLOWED: [(&str, &str); 4] = [
    ("core/src/io.rs", "where `io::open` is defined"),
    ("core/src/pipeline/open.rs", "the front door"),
    ("cli/src/hash_command.rs", "reads a hash manifest (text lines), not an input"),
    ("cli/src/inputs.rs", "sniffs a walked directory's entries for GGUF magic before they become inputs"),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The text before the file's `#[cfg(test)]` module (tests may open what
/// they like).
fn non_test_code(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

#[test]
fn inputs_are_opened_only_at_the_front_door() {
    let parser = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let parser = parser.as_path();
    let mut files = Vec::new();
    for dir in ["core/src", "cli/src", "python/src", "wasm/src", "http/src", "harness/src"] {
        rust_files(&parser.join(dir), &mut files);
    }
    assert!(files.len() > 50, "the sources were found ({} files)", files.len());
    let mut offenders = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(parser).unwrap().to_string_lossy().replace('\\', "/");
        if ALLOWED.iter().any(|(a, _)| *a == rel) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in non_test_code(&text).lines().enumerate() {
            if OPENERS.iter().any(|o| line.contains(o)) {
                offenders.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "open inputs through `Input::open` (pipeline/open.rs):\n{}", offenders.join("\n"));
}

#[test]
fn the_front_door_is_where_an_input_variant_is_opened() {
    let open = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pipeline/open.rs")).unwrap();
    let input = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pipeline/input.rs")).unwrap();
    // Every variant of `Input` has its arm in `Input::open`.
    let body = input.split("pub enum Input {").nth(1).and_then(|b| b.split("\n}").next()).unwrap();
    let variants: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|l| l.chars().next().is_some_and(char::is_uppercase))
        .filter_map(|l| l.split(['(', ' ', ',']).next())
        .collect();
    assert_eq!(variants, ["Path", "Url", "Bytes", "Source"]);
    for v in variants {
        assert!(open.contains(&format!("Input::{v}")), "Input::open has no arm for Input::{v}");
    }
}
