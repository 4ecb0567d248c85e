//! `gguf-conformance`: generate the corpus, check it is up to date, run the
//! cross-reader matrix and the template scanners matrix, check that the
//! committed results cover the corpus and that their markdown and HTML are
//! regenerated from them, and write the web report.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use gguf_conformance::{matrix, releases, templates, web};

#[derive(Debug, Parser)]
#[command(name = "gguf-conformance", version, about = "GGUF conformance corpus tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write every case to corpus/gguf/ with manifest.json, the split sets
    /// to corpus/split/ and the fix cases to corpus/fixes/ (deterministic).
    Generate {
        /// Only check that corpus/gguf/ and corpus/split/ are up to date; exit 1 if not.
        #[arg(long)]
        check: bool,
    },
    /// Run reader adapters over the corpus and write MATRIX.md, matrix.json
    /// and matrix.html (JSONTestSuite-style classification); with --check,
    /// run nothing and check the committed ones instead.
    Matrix {
        /// Readers configuration (name, command, version command, profile).
        #[arg(long, default_value = "conformance/readers.json")]
        readers: PathBuf,
        /// Only these readers (repeatable; by name).
        #[arg(long = "reader")]
        only: Vec<String>,
        /// Only corpus files whose path (relative to corpus/) contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Per-file time limit in seconds (a reader may set its own).
        #[arg(long, default_value_t = 10)]
        timeout: u64,
        /// Adapter processes run at once.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Directory for MATRIX.md, matrix.json and matrix.html.
        #[arg(long, default_value = "conformance")]
        out: PathBuf,
        /// Keep the other readers' results of the existing matrix.json (run
        /// some readers again, or add one).
        #[arg(long)]
        merge: bool,
        /// Run nothing: exit 1 if a corpus case is missing from matrix.json
        /// (listing them), or MATRIX.md, matrix.html or TEMPLATES.md differ
        /// from what their JSON gives.
        #[arg(long, conflicts_with_all = ["render", "merge"])]
        check: bool,
        /// Run nothing: rewrite MATRIX.md, matrix.html and TEMPLATES.md from
        /// matrix.json and templates.json (the cases' expectations refreshed
        /// from the corpus and the cells classified again; captured texts
        /// made readable again).
        #[arg(long)]
        render: bool,
    },
    /// Run template scanners over the corpus's template cases and llama.cpp's
    /// real templates and write TEMPLATES.md and templates.json.
    Templates {
        /// Scanners configuration (same shape as readers.json).
        #[arg(long, default_value = "conformance/scanners.json")]
        scanners: PathBuf,
        /// llama.cpp's `models/templates/` (default:
        /// $GGUF_VALIDATE_LLAMA_CPP/models/templates, from .ci/reference.sh).
        #[arg(long)]
        templates: Option<PathBuf>,
        /// Where the real templates are written wrapped in GGUF files.
        #[arg(long, default_value = "target/template-cases")]
        work: PathBuf,
        /// Only these scanners (repeatable; by name).
        #[arg(long = "scanner")]
        only: Vec<String>,
        /// Per-file time limit in seconds.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        /// Scanner processes run at once.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Directory for TEMPLATES.md and templates.json.
        #[arg(long, default_value = "conformance")]
        out: PathBuf,
    },
    /// Write the web report (one static index.html, everything inline) from
    /// matrix.json, templates.json and WRITERS.json.
    Report {
        /// Output directory.
        #[arg(long, default_value = "target/conformance-report")]
        out: PathBuf,
    },
}

/// The only place that prints.
#[allow(clippy::disallowed_macros)]
fn report(ok: bool, msg: &str) {
    if ok {
        println!("{msg}");
    } else {
        eprintln!("gguf-conformance: {msg}");
    }
}

/// The workspace root, without `..` (captured paths are shown relative to it).
fn root() -> PathBuf {
    let r = gguf_conformance::workspace_root();
    r.canonicalize().unwrap_or(r)
}

fn abs(root: &std::path::Path, p: PathBuf) -> PathBuf {
    if p.is_absolute() { p } else { root.join(p) }
}

/// Progress on stderr, every 50 runs.
#[allow(clippy::disallowed_macros)]
fn progress(done: usize, total: usize) {
    if done % 50 == 0 || done == total {
        eprintln!("  {done}/{total}");
    }
}

fn write_matrix_files(out: &std::path::Path, m: &matrix::Matrix) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    for (name, text) in [("MATRIX.md", m.to_markdown()), ("matrix.json", m.to_json()), ("matrix.html", m.to_html())] {
        std::fs::write(out.join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

fn summary_of(m: &matrix::Matrix, out: &std::path::Path) -> String {
    let mut summary = format!("{} cases x {} readers -> {}", m.rows.len(), m.readers.len(), out.display());
    for r in &m.readers {
        let counts: Vec<String> =
            r.summary.iter().filter(|(_, n)| **n > 0).map(|(c, n)| format!("{}={n}", c.name())).collect();
        summary.push_str(&format!("\n  {:<22} {}", r.config.name, counts.join(" ")));
    }
    summary
}

struct MatrixArgs {
    readers: PathBuf,
    only: Vec<String>,
    filter: Option<String>,
    timeout: u64,
    jobs: usize,
    out: PathBuf,
    merge: bool,
}

fn run_matrix(a: MatrixArgs) -> Result<String, String> {
    let root = root();
    let readers_path = abs(&root, a.readers);
    let all = matrix::read_readers(&readers_path)?.readers;
    let order: Vec<String> = all.iter().map(|r| r.name.clone()).collect();
    let mut config = all;
    if !a.only.is_empty() {
        let unknown: Vec<&String> = a.only.iter().filter(|n| !order.contains(n)).collect();
        if !unknown.is_empty() {
            return Err(format!("unknown readers: {unknown:?}"));
        }
        config.retain(|r| a.only.contains(&r.name));
    }
    if config.is_empty() {
        return Err("no readers selected".into());
    }
    let corpus = matrix::load_corpus(&root)?;
    let mut files = corpus.clone();
    if let Some(f) = &a.filter {
        files.retain(|c| c.file.contains(f.as_str()));
    }
    let out = abs(&root, a.out);
    let mut m = matrix::run(&root, &config, files, Duration::from_secs(a.timeout), a.jobs, &progress);
    if a.merge {
        m = m.merged_into(matrix::Matrix::read(&out)?, &order, corpus);
    }
    // the release columns (prove.py's), kept
    m.releases = releases::Releases::read(&out)?;
    write_matrix_files(&out, &m)?;
    let summary = summary_of(&m, &out);
    // gguf-validate is scored against its own expectations: any wrong
    // verdict, crash or timeout there is a failure of the run.
    let own = m.own_failures();
    if own.is_empty() {
        Ok(summary)
    } else {
        Err(format!("{summary}\ngguf-validate missed its expectations:\n  {}", own.join("\n  ")))
    }
}

fn read_results(out: &std::path::Path) -> Result<(matrix::Matrix, Option<templates::TemplateMatrix>), String> {
    let m = matrix::Matrix::read(out)?;
    let t = match std::fs::read_to_string(out.join("templates.json")) {
        Ok(text) => Some(templates::TemplateMatrix::from_json(&text)?),
        Err(_) => None,
    };
    Ok((m, t))
}

fn render_matrix(out: PathBuf) -> Result<String, String> {
    let root = root();
    let out = abs(&root, out);
    let (mut m, t) = read_results(&out)?;
    m.refresh(matrix::load_corpus(&root)?);
    m.make_readable();
    write_matrix_files(&out, &m)?;
    if let Some(mut t) = t {
        t.make_readable();
        std::fs::write(out.join("TEMPLATES.md"), t.to_markdown()).map_err(|e| format!("TEMPLATES.md: {e}"))?;
        std::fs::write(out.join("templates.json"), t.to_json()).map_err(|e| format!("templates.json: {e}"))?;
    }
    Ok(format!("rendered {} from its JSON", out.display()))
}

fn check_matrix(out: PathBuf) -> Result<String, String> {
    let root = root();
    let out = abs(&root, out);
    let (m, t) = read_results(&out)?;
    let mut problems = Vec::new();
    let (missing, gone) = matrix::coverage(&root, &m);
    if !missing.is_empty() {
        problems.push(format!(
            "{} corpus case files are missing from matrix.json (run the matrix, see conformance/README.md):\n  {}",
            missing.len(),
            missing.join("\n  ")
        ));
    }
    if !gone.is_empty() {
        problems.push(format!("matrix.json has rows for files that are gone:\n  {}", gone.join("\n  ")));
    }
    let mut fresh = m.clone();
    fresh.summarise();
    if fresh.readers != m.readers {
        problems.push("matrix.json: the readers' summaries do not match the rows".into());
    }
    match &m.releases {
        Some(r) => {
            problems.extend(r.problems().into_iter().map(|p| format!("{}: {p}", releases::FILE)));
            let (missing, gone) = r.coverage(matrix::release_files(&root).iter().map(String::as_str));
            if !missing.is_empty() || !gone.is_empty() {
                problems.push(format!(
                    "{}: no verdicts on the corpus model files {missing:?}, verdicts on files that are gone {gone:?} \
                     (regenerate: `{}`)",
                    releases::FILE,
                    r.command
                ));
            }
        }
        None => problems.push(format!("{} is missing (conformance/tools/llama-releases/prove.py)", releases::FILE)),
    }
    let mut expected = vec![("MATRIX.md", m.to_markdown()), ("matrix.html", m.to_html())];
    if let Some(t) = &t {
        expected.push(("TEMPLATES.md", t.to_markdown()));
    }
    for (name, text) in expected {
        match std::fs::read_to_string(out.join(name)) {
            Ok(have) if have == text => {}
            Ok(_) => {
                problems.push(format!("{name} is not what its JSON gives (run `gguf-conformance matrix --render`)"))
            }
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    if problems.is_empty() {
        Ok(format!(
            "matrix.json covers all {} corpus case files ({} rows x {} readers); MATRIX.md, matrix.html{} are current",
            matrix::case_files(&root).len(),
            m.rows.len(),
            m.readers.len(),
            if t.is_some() { ", TEMPLATES.md" } else { "" }
        ))
    } else {
        Err(problems.join("\n"))
    }
}

struct TemplateArgs {
    scanners: PathBuf,
    templates: Option<PathBuf>,
    work: PathBuf,
    only: Vec<String>,
    timeout: u64,
    jobs: usize,
    out: PathBuf,
}

fn run_templates(a: TemplateArgs) -> Result<String, String> {
    let root = root();
    let mut config = templates::read_scanners(&abs(&root, a.scanners))?;
    if !a.only.is_empty() {
        config.retain(|r| a.only.contains(&r.name));
    }
    if config.is_empty() {
        return Err("no scanners selected".into());
    }
    let dir = match a.templates {
        Some(d) => abs(&root, d),
        None => std::env::var_os("GGUF_VALIDATE_LLAMA_CPP").map(|d| PathBuf::from(d).join("models/templates")).ok_or(
            "--templates not given and GGUF_VALIDATE_LLAMA_CPP not set (source .ci/reference.sh; fetch_reference)",
        )?,
    };
    let corpus = root.join("corpus/gguf");
    let mut cases: Vec<(templates::TemplateCase, PathBuf)> = templates::corpus_cases(&root)?
        .into_iter()
        .map(|c| {
            let file = corpus.join(c.id.trim_start_matches("gguf/"));
            (c, file)
        })
        .collect();
    let work = abs(&root, a.work);
    cases.extend(templates::probe_cases(&root.join("conformance/template-probes.json"), &work)?);
    cases.extend(templates::real_cases(&dir, &work)?);
    let source = "llama-cpp-python 0.3.36 sdist, vendor/llama.cpp models/templates".to_string();
    let t = templates::run(&root, &config, cases, source, Duration::from_secs(a.timeout), a.jobs, &progress);
    let out = abs(&root, a.out);
    for (name, text) in [("TEMPLATES.md", t.to_markdown()), ("templates.json", t.to_json())] {
        std::fs::write(out.join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    let mut summary = format!("{} cases x {} scanners -> {}", t.rows.len(), t.scanners.len(), out.display());
    for s in &t.scanners {
        let r = t.rates(&s.config.name, None);
        summary.push_str(&format!(
            "\n  {:<16} detection {}  false alarms {}  crashes/timeouts {}",
            s.config.name,
            r.detection(),
            r.false_alarm(),
            r.failures
        ));
    }
    Ok(summary)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate { check } => {
            let dir = gguf_conformance::corpus_dir();
            let split = gguf_conformance::split::split_dir();
            let fixes = gguf_conformance::fixes::fixes_dir();
            let r = if check {
                gguf_conformance::check_corpus(&dir)
                    .and_then(|n| gguf_conformance::split::check_split(&split).map(|m| (n, m)))
                    .and_then(|(n, m)| gguf_conformance::fixes::check_fixes(&fixes).map(|f| (n, m, f)))
            } else {
                gguf_conformance::write_corpus(&dir)
                    .and_then(|n| gguf_conformance::split::write_split(&split).map(|m| (n, m)))
                    .map_err(|e| e.to_string())
                    .and_then(|(n, m)| gguf_conformance::fixes::write_fixes(&fixes).map(|f| (n, m, f)))
            };
            r.map(|(n, m, f)| {
                let verb = if check { "checked" } else { "wrote" };
                format!(
                    "{verb} {n} cases in {}, {m} split sets in {} and {f} fix cases in {}",
                    dir.display(),
                    split.display(),
                    fixes.display()
                )
            })
        }
        Command::Matrix { check: true, out, .. } => check_matrix(out),
        Command::Matrix { render: true, out, .. } => render_matrix(out),
        Command::Matrix { readers, only, filter, timeout, jobs, out, merge, .. } => {
            run_matrix(MatrixArgs { readers, only, filter, timeout, jobs, out, merge })
        }
        Command::Templates { scanners, templates, work, only, timeout, jobs, out } => {
            run_templates(TemplateArgs { scanners, templates, work, only, timeout, jobs, out })
        }
        Command::Report { out } => {
            let root = root();
            web::write_report(&root, &abs(&root, out))
        }
    };
    match result {
        Ok(msg) => {
            report(true, &msg);
            ExitCode::SUCCESS
        }
        Err(e) => {
            report(false, &e);
            ExitCode::FAILURE
        }
    }
}
