//! ARCHITECTURE.md is a map of the code as it is: every file or folder it
//! names exists in the repository, and it names none of the entry points
//! the library no longer has.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file and folder of the repository (not the build output, the
/// git store, installed packages), as paths relative to the root with `/`.
fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if ["target", ".git", "node_modules", "book"].contains(&name.as_str()) {
                continue;
            }
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            if p.is_dir() {
                out.push(format!("{rel}/"));
                dirs.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out
}

/// The code spans of a Markdown text that name a file or a folder: a
/// name with a known extension, or one with a `/` in it (not a URL, a
/// glob, a pattern, an option or a name with words in it).
fn named_paths(text: &str) -> Vec<String> {
    let extensions = [".rs", ".md", ".toml", ".sh", ".py", ".json", ".yml", ".yaml", ".txt", ".pyi"];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.contains(char::is_whitespace) && !s.is_empty())
        .filter(|s| !s.contains("://") && !s.contains('*') && !s.contains('{') && !s.contains("..") && !s.contains(':'))
        .filter(|s| !s.starts_with('-') && !s.contains("PREFIX") && !s.contains("NAME") && !s.contains('?'))
        .filter(|s| s.contains('/') || extensions.iter().any(|x| s.ends_with(x)))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_path_the_architecture_names_exists() {
    let root = root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let tree = tree(&root);
    let named = named_paths(&text);
    assert!(named.len() > 80, "{} paths named", named.len());
    // Names that are not the repository's, said as such in the text: the
    // pattern a module's path takes, a hub URL's segment, a user's config.
    let not_ours = ["name.rs", "name/", "name/file.rs", "resolve/", "gguf-validate.toml"];
    let missing: Vec<&String> = named
        .iter()
        .filter(|n| !not_ours.contains(&n.as_str()))
        .filter(|n| {
            let n = n.trim_start_matches("./");
            !tree.iter().any(|p| p == n || p.ends_with(&format!("/{n}")))
        })
        .collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md names what is not in the repository: {missing:?}");
}

#[test]
fn the_architecture_names_no_entry_point_the_library_no_longer_has() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    for gone in ["validate_source", "validate_source_visiting", "Hooks", "want_layout", "all_profiles", "scan::judge"] {
        assert!(!text.contains(&format!("`{gone}")), "ARCHITECTURE.md still names `{gone}`");
    }
}

#[test]
fn a_path_that_is_not_there_is_found_missing() {
    // The check itself: a name of the tree passes, one not in it does not.
    let tree = tree(&root());
    let found = |n: &str| tree.iter().any(|p| p == n || p.ends_with(&format!("/{n}")));
    assert!(found("validate.rs") && found("parser/core/src/") && found("pipeline/companion.rs"));
    assert!(!found("no_such_module.rs") && !found("check/no_such/"));
    assert_eq!(named_paths("`a/b.rs` and `c.rs`, not `x --y` nor `https://h/p`"), ["a/b.rs", "c.rs"]);
}
