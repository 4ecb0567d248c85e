//! Replays every fuzz finding kept in `corpus/regressions/`.
//!
//! Each `<kind>-<sha1>.gguf` (kind: `crash`, `oom`, `timeout`) has a JSON
//! expectation next to it, `<kind>-<sha1>.json`:
//! `{"verdict": {"strict": "reject", "spec": ..., "ggml": ...}, "rules": [...],
//! "found_by": "<target>", "fixed_in": "<commit or description>"}`, and
//! optionally `"absent": [...]`, rules the strict report must not contain.
//! The file must validate under every profile without panicking, with the
//! verdict given per profile, the listed rules among the strict errors,
//! and must pass the `parse_validate` and `incremental` properties.

use std::path::{Path, PathBuf};

use gguf_validate_core::{Level, Options, Profile, Validator};

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/regressions")
}

#[test]
fn replay_regressions() {
    let Ok(entries) = std::fs::read_dir(regressions_dir()) else { return };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    files.sort();
    for path in &files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        assert!(
            ["crash-", "oom-", "timeout-"].iter().any(|k| name.starts_with(k)),
            "{name}: regression files are named crash-/oom-/timeout-<sha1>.gguf"
        );
        let bytes = std::fs::read(path).unwrap();
        let expect_path = path.with_extension("json");
        let expect: serde_json::Value = serde_json::from_slice(
            &std::fs::read(&expect_path).unwrap_or_else(|e| panic!("{name}: no expectation file: {e}")),
        )
        .unwrap();
        for field in ["found_by", "fixed_in"] {
            assert!(expect[field].is_string(), "{name}: `{field}` missing");
        }
        for profile in Profile::ALL {
            let report = Validator::new(Options::new(profile)).validate_bytes(&bytes).report;
            let want = expect["verdict"][profile.name()]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: no verdict for {profile}"));
            let got = if report.valid { "accept" } else { "reject" };
            assert_eq!(got, want, "{name} under {profile}: {:#?}", report.diagnostics);
            if profile == Profile::Strict {
                for rule in expect["absent"].as_array().map(Vec::as_slice).unwrap_or_default() {
                    let rule = rule.as_str().unwrap();
                    assert!(
                        !report.diagnostics.iter().any(|d| d.rule == rule),
                        "{name}: `{rule}` reported: {:#?}",
                        report.diagnostics
                    );
                }
                for rule in expect["rules"].as_array().map(Vec::as_slice).unwrap_or_default() {
                    let rule = rule.as_str().unwrap();
                    assert!(
                        report.diagnostics.iter().any(|d| d.rule == rule && d.severity == Level::Error),
                        "{name}: `{rule}` not reported as an error: {:#?}",
                        report.diagnostics
                    );
                }
            }
        }
        gguf_fuzz::parse_validate::run(&bytes);
        gguf_fuzz::incremental::run(&bytes);
    }
}
