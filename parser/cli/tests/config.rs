//! `gguf-validate.toml`, `--config`, baselines: one test per precedence
//! rule, security rules a discovered config cannot lower, suppressions with
//! reasons, pins and expiry.
use gguf_validate_testkit as support;

use support::cli::{json, run_in};
use support::root;
use support::tmp::TempDir;

/// A project: `models/a.gguf` with one `key-naming` warning and
/// `models/bad.gguf` with a `key-empty` error; `config` as gguf-validate.toml.
fn project(name: &str, config: Option<&str>) -> TempDir {
    let d = TempDir::new(&format!("config-{name}"));
    std::fs::create_dir_all(d.join("models")).unwrap();
    std::fs::copy(root().join("corpus/gguf/i_key_uppercase.gguf"), d.join("models/a.gguf")).unwrap();
    std::fs::copy(root().join("corpus/gguf/n_key_empty.gguf"), d.join("models/bad.gguf")).unwrap();
    if let Some(c) = config {
        std::fs::write(d.join("gguf-validate.toml"), c).unwrap();
    }
    d
}

/// Rule ids of a file's findings, infos aside.
fn rules_of(v: &serde_json::Value, file: usize) -> Vec<String> {
    v["files"][file]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] != "info")
        .map(|d| d["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_config_sets_profile_and_levels_and_flags_win() {
    let d = project("levels", Some("profile = \"spec\"\n[rules]\nkey-naming = \"error\"\n"));
    let o = run_in(&d, &["--format", "json", "models/a.gguf"]);
    let v = json(&o);
    assert_eq!(v["files"][0]["profile"], "spec", "profile from the config");
    assert_eq!(o.status.code(), Some(1), "key-naming raised to an error by the config");
    let o = run_in(&d, &["--format", "json", "--profile", "strict", "--warn", "key-naming", "models/a.gguf"]);
    let v = json(&o);
    assert_eq!(v["files"][0]["profile"], "strict", "--profile wins over the config");
    assert_eq!(o.status.code(), Some(0), "--warn wins over [rules]");
    let o = run_in(&d, &["--no-config", "--format", "json", "models/a.gguf"]);
    assert_eq!(json(&o)["files"][0]["profile"], "strict", "--no-config ignores it");
}

#[test]
fn a_config_in_a_parent_is_found_and_overrides_apply_per_path() {
    let d = project(
        "parent",
        Some(
            "[rules]\nkey-naming = \"error\"\n[[overrides]]\npaths = [\"models/a.gguf\"]\nrules = { key-naming = \"allow\" }\n",
        ),
    );
    let o = run_in(&d.join("models"), &["--format", "json", "a.gguf"]);
    assert_eq!(o.status.code(), Some(0), "the override for models/a.gguf applies (config in the parent)");
    assert!(!rules_of(&json(&o), 0).contains(&"key-naming".to_string()));
}

#[test]
fn suppressions_need_a_reason_and_are_listed() {
    let d = project(
        "suppress",
        Some(
            "[[suppress]]\nrule = \"key-empty\"\npaths = [\"models/bad.gguf\"]\nreason = \"upstream file, reported\"\n",
        ),
    );
    let o = run_in(&d, &["--format", "json", "models/bad.gguf"]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(
        v["files"][0]["suppressions_applied"],
        serde_json::json!([{"rule": "key-empty", "source": "config", "reason": "upstream file, reported", "findings": 1}])
    );
    std::fs::write(
        d.join("gguf-validate.toml"),
        "[[suppress]]\nrule = \"key-empty\"\npaths = [\"x\"]\nreason = \"\"\n",
    )
    .unwrap();
    let o = run_in(&d, &["models/bad.gguf"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs a reason"));
}

#[test]
fn expired_and_mispinned_suppressions_are_findings() {
    let d = project(
        "expired",
        Some(
            "[[suppress]]\nrule = \"key-empty\"\npaths = [\"models/bad.gguf\"]\nreason = \"old\"\nuntil = \"2001-01-01\"\n\
             [[suppress]]\nrule = \"key-naming\"\npaths = [\"models/a.gguf\"]\nreason = \"pinned\"\nsha256 = \"00\"\n",
        ),
    );
    let o = run_in(&d, &["--format", "json", "models/bad.gguf", "models/a.gguf"]);
    let v = json(&o);
    assert!(rules_of(&v, 0).contains(&"key-empty".to_string()), "expired: the finding counts again");
    assert!(rules_of(&v, 0).contains(&"suppression-not-applied".to_string()));
    assert!(rules_of(&v, 1).contains(&"suppression-not-applied".to_string()), "pin mismatch");
    // The right pin applies.
    let sha = {
        use std::io::Read;
        let mut b = Vec::new();
        std::fs::File::open(d.join("models/a.gguf")).unwrap().read_to_end(&mut b).unwrap();
        let parsed = gguf_validate_core::parse::parse_bytes(&b).unwrap();
        gguf_validate_core::config::metadata_sha256(&b, parsed.file.infos_end).unwrap()
    };
    std::fs::write(
        d.join("gguf-validate.toml"),
        format!("[[suppress]]\nrule = \"key-naming\"\npaths = [\"models/a.gguf\"]\nreason = \"pinned\"\nsha256 = \"{sha}\"\n"),
    )
    .unwrap();
    let v = json(&run_in(&d, &["--format", "json", "models/a.gguf"]));
    assert!(rules_of(&v, 0).is_empty(), "{v}");
}

#[test]
fn a_discovered_config_cannot_weaken_a_security_rule_but_an_explicit_one_can() {
    let cfg = "[rules]\ntemplate-code-execution = \"allow\"\n[[suppress]]\nrule = \"key-control\"\npaths = [\"**\"]\nreason = \"x\"\n";
    let d = project("security", Some(cfg));
    std::fs::copy(root().join("corpus/gguf/i_key_escape_sequence.gguf"), d.join("models/ctl.gguf")).unwrap();
    let o = run_in(&d, &["models/ctl.gguf"]);
    assert_eq!(o.status.code(), Some(1), "key-control still an error");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot lower a security rule"), "{err}");
    let explicit = d.join("explicit.toml");
    std::fs::write(&explicit, cfg).unwrap();
    let o = run_in(&d, &["--config", explicit.to_str().unwrap(), "models/ctl.gguf"]);
    assert_eq!(o.status.code(), Some(0), "--config is trusted");
}

#[test]
fn a_baseline_accepts_todays_findings_and_fails_only_on_new_ones() {
    let d = project("baseline", None);
    let o = run_in(&d, &["--write-baseline", "base.txt", "models/bad.gguf"]);
    assert_eq!(o.status.code(), Some(1));
    let text = std::fs::read_to_string(d.join("base.txt")).unwrap();
    assert!(text.lines().any(|l| l.starts_with("key-empty|models/bad.gguf|")), "{text}");
    let o = run_in(&d, &["--format", "json", "--baseline", "base.txt", "models/bad.gguf", "models/a.gguf"]);
    assert_eq!(o.status.code(), Some(0), "known findings accepted");
    let v = json(&o);
    assert_eq!(v["files"][0]["suppressions_applied"][0]["source"], "baseline");
    // A new finding is not in the baseline.
    let o = run_in(&d, &["--baseline", "base.txt", "--deny", "key-naming", "models/a.gguf"]);
    assert_eq!(o.status.code(), Some(1));
}
