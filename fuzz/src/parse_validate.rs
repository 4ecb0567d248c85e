//! Raw bytes under every profile.
//!
//! - no panic (libFuzzer's `-timeout` and `-rss_limit_mb` turn a hang or a
//!   memory blow-up into a finding too);
//! - the same report twice (no hidden state, no iteration-order effects);
//! - every diagnostic's offset lies inside the file (`<=` its length: a
//!   missing field is reported at the end of the file);
//! - each diagnostic's severity is what the options say for its rule, the
//!   list is in offset order and `valid` agrees with the counts;
//! - every lazily decoded array is walked to its end and dumped (gimli's
//!   "drain every iterator");
//! - a file valid under `strict` round-trips through the writer byte for
//!   byte (`GgufModel::from_parsed` then `to_bytes`).
#![forbid(unsafe_code)]

use gguf_validate_core::parse::{self, Parsed, Value};
use gguf_validate_core::write::GgufModel;
use gguf_validate_core::{Level, Options, Profile, Report, RuleId, Validator};

/// The property.
pub fn run(data: &[u8]) {
    let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
    let mut strict_valid = false;
    for profile in Profile::ALL {
        let opts = Options::new(profile);
        let first = Validator::new(opts.clone()).validate_bytes(data).report;
        let second = Validator::new(opts.clone()).validate_bytes(data).report;
        assert_eq!(first, second, "two runs under {profile} differ");
        check_report(&first, len, &opts);
        if profile == Profile::Strict {
            strict_valid = first.valid;
        }
    }
    if let Some(parsed) = parse::parse_bytes(data) {
        drain(&parsed);
        let _ = gguf_validate_core::dump::dump(&parsed, true);
        if strict_valid {
            let back = GgufModel::from_parsed(&parsed, data).to_bytes();
            assert!(
                back == data,
                "a strict-valid file of {} bytes is written back as {} bytes{}",
                data.len(),
                back.len(),
                first_difference(data, &back)
            );
        }
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!(", first difference at {i}"),
        None => String::new(),
    }
}

/// The report-level invariants shared with the other properties.
pub fn check_report(r: &Report, len: u64, opts: &Options) {
    assert_eq!(r.profile, opts.profile);
    assert_eq!(r.summary.file_size, len);
    let mut last = 0u64;
    let mut errors = 0u64;
    for d in &r.diagnostics {
        assert!(d.offset <= len, "`{}` at offset {} is outside the {len}-byte file: {}", d.rule, d.offset, d.message);
        // In offset order, a finding that follows from a cause placed at
        // its cause's offset (right after it).
        let at = d.caused_by.map_or(d.offset, |c| c.offset);
        assert!(at >= last, "diagnostics out of order at `{}`", d.rule);
        last = at;
        if let Some(c) = d.caused_by {
            assert!(c.offset <= len, "`{}` follows from a cause outside the file", d.rule);
            assert!(
                !r.diagnostics.iter().any(|o| o.caused_by.is_some() && o.rule == c.rule && o.offset == c.offset),
                "`{}` follows from a finding that itself follows from another",
                d.rule
            );
        }
        let rule = RuleId::from_id(d.rule.id()).unwrap_or_else(|| panic!("unknown rule id `{}`", d.rule.id()));
        // A rule the file's own loader reads past is at most a warning
        // under strict, unless the run sets its level.
        let want = opts.level_tolerating(opts.profile, rule, &r.summary.tolerated);
        assert_eq!(d.severity, want, "`{}` reported at the wrong level", d.rule);
        assert_ne!(d.severity, Level::Allow);
        errors += u64::from(d.severity == Level::Error);
    }
    assert!(r.counts.errors >= errors, "counts.errors {} < {errors} listed", r.counts.errors);
    assert_eq!(r.valid, r.counts.errors == 0 && !(opts.deny_warnings && r.counts.warnings > 0));
}

/// Decodes every element of every array (and nested array).
fn drain(parsed: &Parsed<'_>) {
    for kv in &parsed.file.kvs {
        drain_value(&kv.value);
    }
    for t in &parsed.file.tensors {
        assert_eq!(t.dims().count(), usize::try_from(t.n_dims).unwrap_or(usize::MAX), "dims of tensor {}", t.index);
    }
}

fn drain_value(v: &Value<'_>) {
    if let Value::Array(a) = v {
        let mut n = 0u64;
        for e in a.iter() {
            assert_eq!(e.index, n);
            drain_value(&e.value);
            n += 1;
        }
        assert_eq!(n, a.len, "array at {} yields {n} of its {} elements", a.offset, a.len);
        if a.elem_type == gguf_validate_core::types::ValueType::String {
            assert_eq!(a.strings().count() as u64, a.len);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn smoke() {
        for file in crate::smoke_files(300) {
            super::run(&file);
        }
    }

    /// Every file of the repository's corpus (the CI fuzz run's seeds) up
    /// to 1 MiB holds the property: its first run starts from them.
    #[test]
    fn corpus_seeds() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
        let mut dirs = vec![root];
        let mut seen = 0usize;
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "gguf")
                    && entry.metadata().is_ok_and(|m| m.len() <= 1 << 20)
                    && let Ok(data) = std::fs::read(&path)
                {
                    let caught = std::panic::catch_unwind(|| super::run(&data));
                    assert!(caught.is_ok(), "{}", path.display());
                    seen += 1;
                }
            }
        }
        assert!(seen > 500, "only {seen} corpus files found");
    }

    #[test]
    fn corner_inputs() {
        for data in
            [&b""[..], b"GGUF", b"GGUF\x03\0\0\0", b"GGUF\x03\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", b"GGUF\0\0\0\x03"]
        {
            super::run(data);
        }
    }
}
