//! The committed results are kept current and readable:
//! - `matrix.json` has a row for every case file of the corpus (the test
//!   lists the missing ones) and no row for a file that is gone; MATRIX.md,
//!   matrix.html and TEMPLATES.md are what their JSON gives (the same check
//!   as `gguf-conformance matrix --check`);
//! - `releases.json` (the llama.cpp releases' loaders on the corpus models,
//!   written by `conformance/tools/llama-releases/prove.py`) has verdicts on
//!   every corpus model file and none on a file that is gone, its counts add
//!   up, and MATRIX.md and matrix.html show one column per release of it;
//! - no committed result (matrix, templates, writers and their findings,
//!   releases) names the machine that produced it: no pip build directory,
//!   temporary directory, home directory or installed package path.

use std::path::Path;

use gguf_conformance::matrix::{Matrix, coverage};
use gguf_conformance::readable::names_a_machine;
use gguf_conformance::templates::TemplateMatrix;

fn conformance() -> std::path::PathBuf {
    gguf_conformance::workspace_root().join("conformance")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(conformance().join(name)).unwrap_or_else(|e| panic!("conformance/{name}: {e}"))
}

#[test]
fn the_matrix_covers_every_corpus_case() {
    let m = Matrix::from_json(&read("matrix.json")).expect("matrix.json");
    let (missing, gone) = coverage(&gguf_conformance::workspace_root(), &m);
    assert!(
        missing.is_empty(),
        "{} corpus case files are not in conformance/matrix.json (run `cargo run --release -p gguf-conformance -- matrix`, \
         see conformance/README.md):\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
    assert!(gone.is_empty(), "rows for files that are gone: {gone:?}");
    assert!(m.readers.len() >= 12, "{} readers", m.readers.len());
    // every row has every reader's result (a reader scoped to some files,
    // `files` in readers.json, has results on those and on no other)
    for row in &m.rows {
        for r in &m.readers {
            let runs = r.config.runs_on(&row.file.file);
            assert!(
                row.results.contains_key(&r.config.name) == runs,
                "{}: {} result of {}",
                row.file.file,
                if runs { "no" } else { "an out-of-scope" },
                r.config.name
            );
        }
    }
}

#[test]
fn markdown_and_html_are_regenerated_from_the_json() {
    let m = Matrix::read(&conformance()).expect("matrix.json and releases.json");
    let mut fresh = m.clone();
    fresh.summarise();
    assert_eq!(fresh.readers, m.readers, "the readers' summaries in matrix.json do not match its rows");
    assert!(read("MATRIX.md") == m.to_markdown(), "MATRIX.md is stale: run `gguf-conformance matrix --render`");
    assert!(read("matrix.html") == m.to_html(), "matrix.html is stale: run `gguf-conformance matrix --render`");
    let t = TemplateMatrix::from_json(&read("templates.json")).expect("templates.json");
    assert!(read("TEMPLATES.md") == t.to_markdown(), "TEMPLATES.md is stale: run `gguf-conformance matrix --render`");
    assert!(t.scanners.len() >= 4, "{} template scanners", t.scanners.len());
}

#[test]
fn the_releases_cover_every_corpus_model_and_show_in_the_matrix() {
    let m = Matrix::read(&conformance()).expect("matrix.json and releases.json");
    let r = m.releases.as_ref().expect("conformance/releases.json (prove.py --write)");
    let problems = r.problems();
    assert!(problems.is_empty(), "conformance/releases.json does not add up:\n{}", problems.join("\n"));
    let files = gguf_conformance::matrix::release_files(&gguf_conformance::workspace_root());
    let (missing, gone) = r.coverage(files.iter().map(String::as_str));
    assert!(
        missing.is_empty() && gone.is_empty(),
        "conformance/releases.json: no verdicts on {missing:?}, verdicts on files that are gone {gone:?} \
         (regenerate: `{}`)",
        r.command
    );
    assert!(r.releases.len() >= 4, "{} releases", r.releases.len());
    let html = read("matrix.html");
    let md = read("MATRIX.md");
    for rel in &r.releases {
        assert!(
            html.contains(&format!("<th class=\"rel\">llama.cpp {}</th>", rel.tag)),
            "matrix.html: no column {}",
            rel.tag
        );
        assert!(
            md.contains(&format!("| {} | {} | {} |", rel.tag, rel.node_llama_cpp, rel.files)),
            "MATRIX.md: no row {}",
            rel.tag
        );
    }
    // every verdict on a file of the matrix is a cell of its row (the older
    // releases' converter output is proven in corpus/models/RELEASES.md)
    let rows: std::collections::BTreeSet<String> = m.rows.iter().map(|row| row.file.file.clone()).collect();
    let cells = r.files.iter().filter(|v| rows.contains(v.file.strip_prefix("corpus/").unwrap_or(&v.file))).count();
    let shown = html.matches("<td class=\"c rel-").count();
    assert_eq!(shown, cells, "matrix.html shows {shown} release cells, releases.json has {cells} verdicts");
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        }
        out.push(p);
    }
}

#[test]
fn no_committed_result_names_a_machine() {
    let mut bad = Vec::new();
    // and not the checkout's own absolute path (or its parent's) on this machine
    let root = gguf_conformance::workspace_root().canonicalize().expect("root");
    let here: Vec<String> = [Some(root.as_path()), root.parent()]
        .into_iter()
        .flatten()
        .map(|p| format!("{}/", p.display()))
        .filter(|p| p.len() > 2)
        .collect();
    for name in [
        "MATRIX.md",
        "matrix.json",
        "matrix.html",
        "TEMPLATES.md",
        "templates.json",
        "WRITERS.md",
        "WRITERS.json",
        "releases.json",
        "tools/llama-releases/exceptions.json",
    ] {
        let text = read(name);
        for (i, line) in text.lines().enumerate() {
            let mut found = names_a_machine(line);
            if here.iter().any(|h| line.contains(h.as_str())) {
                found.push("the checkout's path");
            }
            if !found.is_empty() {
                bad.push(format!(
                    "conformance/{name}:{}: {found:?}: {}",
                    i + 1,
                    line.chars().take(160).collect::<String>()
                ));
            }
        }
    }
    let mut files = Vec::new();
    walk(&conformance().join("writers/findings"), &mut files);
    for p in files {
        let rel = p.strip_prefix(conformance()).unwrap_or(&p).display().to_string();
        if !names_a_machine(&format!("/{rel}")).is_empty() || rel.contains("pip-req-build") {
            bad.push(format!("{rel}: the name"));
        }
        if p.extension().is_some_and(|x| x == "txt" || x == "json") {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let found = names_a_machine(&text);
            if !found.is_empty() {
                bad.push(format!("{rel}: {found:?}"));
            }
        }
    }
    assert!(bad.is_empty(), "machine-identifying text in committed results:\n{}", bad.join("\n"));
}
