//! Baseline files (`--baseline`, `--write-baseline`) through
//! [`Baseline::parse`] and [`Baseline::apply`], on the reports of a few
//! real files under names with awkward characters (newlines, `|`, `#`,
//! spaces, carriage returns).
//!
//! - no panic; the same baseline and the same report twice;
//! - a finding is set aside only if its identity is in the baseline (and,
//!   independently of the parser, is a line of the text), and every listed
//!   finding whose identity is in it is set aside; counts and verdict
//!   follow, and what was set aside is listed;
//! - applying again sets nothing more aside;
//! - write then read (the `--write-baseline` format) gives back exactly the
//!   report's identities, and that baseline sets aside every listed
//!   finding.
#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::sync::OnceLock;

use arbitrary::Unstructured;
use gguf_validate_core::config::Baseline;
use gguf_validate_core::write::{GgufModel, OwnedValue};
use gguf_validate_core::{Options, Profile, Report, Validator};

/// Names the reports are applied under (as `render::json_path` gives them:
/// UTF-8 paths as they are).
pub const NAMES: [&str; 9] = [
    "models/a.gguf",
    "dir with space/b.gguf",
    "new\nline.gguf",
    "cr\r.gguf",
    "trailing-cr.gguf\r",
    "pipe|name.gguf",
    "#hash.gguf",
    " lead and trail .gguf ",
    "C:\\win\\path.gguf",
];

/// The header `--write-baseline` starts a file with.
pub const HEADER: &str = "# gguf-validate baseline: rule|file|field path of each accepted finding\n";

/// A file whose keys make awkward field paths: an empty key (a path that
/// ends in a space), control characters, `|`, `#`, invalid UTF-8.
fn odd_keys() -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("llama"));
    for key in [&b""[..], b"a\nb", b"x|y", b"#c", b"Upper.Case", b"trail\r", b"\xff\xfe", b" sp "] {
        m.kvs.push((key.to_vec(), OwnedValue::U32(1)));
    }
    m.to_bytes()
}

/// The reports: real files under `strict` and `ggml`.
pub fn reports() -> &'static [(Options, Report)] {
    static R: OnceLock<Vec<(Options, Report)>> = OnceLock::new();
    R.get_or_init(|| {
        let files: [Vec<u8>; 4] = [
            include_bytes!("../../corpus/gguf/i_key_uppercase.gguf").to_vec(),
            include_bytes!("../../corpus/gguf/n_key_empty.gguf").to_vec(),
            include_bytes!("../../corpus/gguf/i_key_escape_sequence.gguf").to_vec(),
            odd_keys(),
        ];
        let mut out = Vec::new();
        for f in &files {
            for p in [Profile::Strict, Profile::Ggml] {
                let opts = Options::new(p);
                out.push((opts.clone(), Validator::new(opts.clone()).validate_bytes(f).report));
            }
        }
        out
    })
}

/// The property: `data` (lossy UTF-8) as a baseline file.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    check(&text, &[]);
}

/// Builds a baseline from identities of the reports, variants of them,
/// comments and noise, and checks it; the lines in `clean` must be taken.
pub fn run_built(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut text = String::new();
    let mut clean = Vec::new();
    let eol = if u.arbitrary()? { "\n" } else { "\r\n" };
    for _ in 0..u.int_in_range(0..=12u8)? {
        let (_, r) = u.choose(reports())?;
        let name = if u.ratio(1u8, 4)? { u.arbitrary::<&str>()? } else { u.choose(&NAMES)? };
        let ids = Baseline::of_report(name, r);
        let id = if ids.is_empty() { String::new() } else { u.choose(&ids)?.clone() };
        let line = match u.int_in_range(0..=9u8)? {
            0..=4 => {
                clean.push(id.clone());
                id
            }
            5 => format!(" {id}"),
            6 => format!("# {id}"),
            7 => format!("{id}\r"),
            8 => String::new(),
            _ => u.arbitrary::<String>()?,
        };
        text.push_str(&line);
        text.push_str(eol);
    }
    clean.retain(|id| !id.contains('\n') && !id.contains('\r') && !id.trim().is_empty());
    check(&text, &clean);
    let (opts, report) = u.choose(reports())?;
    round_trip(u.arbitrary::<&str>()?, report, opts);
    Ok(())
}

fn check(text: &str, clean: &[String]) {
    let b = Baseline::parse(text);
    assert_eq!(b, Baseline::parse(text), "parsed differently twice");
    assert!(b.len() <= text.lines().count(), "{} identities from {} lines", b.len(), text.lines().count());
    for id in clean {
        assert!(b.contains(id), "the line `{}` was not taken", id.escape_debug());
    }
    let lines: BTreeSet<&str> = text.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    for (opts, report) in reports() {
        for name in NAMES {
            check_apply(&b, &lines, name, report, opts);
        }
    }
    // The round trip does not depend on the input: once per process.
    static ROUND_TRIPS: std::sync::Once = std::sync::Once::new();
    ROUND_TRIPS.call_once(|| {
        for (opts, report) in reports() {
            NAMES.iter().for_each(|name| round_trip(name, report, opts));
        }
    });
}

fn check_apply(b: &Baseline, lines: &BTreeSet<&str>, name: &str, report: &Report, opts: &Options) {
    let mut after = report.clone();
    b.apply(name, &mut after, opts);
    let mut again = report.clone();
    b.apply(name, &mut again, opts);
    assert_eq!(after, again, "applying is not deterministic");
    crate::config_file::check_consistent(&after, opts);
    let mut gone = 0u64;
    for d in &report.diagnostics {
        let id = Baseline::identity(d.rule, name, &d.path);
        let kept = after.diagnostics.contains(d);
        assert_eq!(
            !kept,
            b.contains(&id),
            "`{}` in the baseline: {}, kept: {kept}",
            id.escape_debug(),
            b.contains(&id)
        );
        if !kept {
            assert!(
                lines.contains(id.as_str()),
                "`{}` set aside but no line of the baseline is its identity",
                id.escape_debug()
            );
            assert!(
                after.applied.iter().any(|a| a.source == "baseline" && a.set_aside.contains(d)),
                "not listed as set aside"
            );
            gone += 1;
        }
    }
    assert_eq!(after.diagnostics.len() as u64 + gone, report.diagnostics.len() as u64, "findings added");
    assert_eq!(after.applied.iter().map(|a| a.findings).sum::<u64>(), gone, "set-aside counts");
    assert_eq!(after.suppressed, report.suppressed, "unlisted counts changed");
    let mut twice = after.clone();
    b.apply(name, &mut twice, opts);
    assert_eq!(twice, after, "a second application set more aside");
}

/// What `--write-baseline` writes for `report`, read back.
fn round_trip(name: &str, report: &Report, opts: &Options) {
    let ids = Baseline::of_report(name, report);
    let mut text = HEADER.to_string();
    for id in &ids {
        text.push_str(id);
        text.push('\n');
    }
    let b = Baseline::parse(&text);
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(
        b.len(),
        distinct.len(),
        "{} identities written, {} read back:\n{}",
        distinct.len(),
        b.len(),
        text.escape_debug()
    );
    for id in &ids {
        assert!(b.contains(id), "`{}` written but not read back", id.escape_debug());
    }
    let mut after = report.clone();
    b.apply(name, &mut after, opts);
    assert!(after.diagnostics.is_empty(), "the written baseline leaves {} findings", after.diagnostics.len());
}

/// The seeds committed under `fuzz/seeds/baseline/`.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    crate::config_file::read_dir(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/baseline"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_taken() {
        let seeds = seeds();
        assert!(seeds.len() >= 2, "seeds missing");
        for (name, s) in seeds {
            let b = Baseline::parse(std::str::from_utf8(&s).unwrap());
            assert!(!b.is_empty(), "{name}: no identity");
            run(&s);
        }
    }

    #[test]
    fn the_reports_have_findings_with_awkward_paths() {
        let paths: Vec<&str> =
            reports().iter().flat_map(|(_, r)| r.diagnostics.iter().map(|d| d.path.as_str())).collect();
        assert!(paths.iter().any(|p| p.ends_with(' ')), "{paths:?}");
        assert!(paths.iter().any(|p| p.contains('|')), "{paths:?}");
    }

    #[test]
    fn smoke() {
        crate::test_n_times(300, run_built);
        let mut rng = crate::SplitMix64::new(crate::smoke_seed());
        for _ in 0..100 {
            run(&rng.bytes_below(512));
        }
    }

    /// The corpus of the 10-minute cargo-fuzz run, minimised to its edges
    /// (`-merge=1 -use_counters=0`), under fuzz/seeds/baseline/min/.
    #[test]
    fn minimised_corpus() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/baseline/min");
        let files = crate::config_file::read_dir(&dir);
        assert!(files.len() >= 50, "{} files in {}", files.len(), dir.display());
        for (_, data) in files {
            run(&data);
        }
    }

    /// Findings kept under fuzz/regressions/baseline/.
    #[test]
    fn regressions() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions/baseline");
        for (_, data) in crate::config_file::read_dir(&dir) {
            run(&data);
        }
    }
}
