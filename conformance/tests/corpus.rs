//! Holds `gguf-validate` to every conformance case under every profile,
//! snapshots the JSON reports, and checks that corpus/gguf is up to date.

use std::collections::BTreeSet;

use gguf_conformance::{Verdict, all_cases};
use gguf_validate::rules::{Level, Profile, RULES, RuleId};
use gguf_validate::{Options, validate_bytes};

fn reported(report: &gguf_validate::Report) -> BTreeSet<String> {
    // Suppressed findings are counted per rule; listed ones carry the id.
    let mut ids: BTreeSet<String> = report.diagnostics.iter().map(|d| d.rule.to_string()).collect();
    ids.extend(report.suppressed.keys().map(|k| k.to_string()));
    ids
}

#[test]
fn every_case_meets_its_expectations() {
    let mut failures = Vec::new();
    for case in all_cases() {
        let bytes = (case.build)();
        for (i, profile) in Profile::ALL.into_iter().enumerate() {
            let report = validate_bytes(&bytes, &Options::new(profile));
            let want_valid = case.verdicts[i] == Verdict::Accept;
            if report.valid != want_valid {
                failures.push(format!(
                    "{}: {profile}: valid={} expected {want_valid}: {:?}",
                    case.file_name(),
                    report.valid,
                    report.diagnostics
                ));
            }
            let want: BTreeSet<String> = case
                .rules
                .iter()
                .filter(|r| RuleId::from_id(r).is_some_and(|id| id.rule().level(profile) != Level::Allow))
                .map(|r| r.to_string())
                .collect();
            let got = reported(&report);
            if got != want {
                failures.push(format!("{}: {profile}: rules {got:?}, expected {want:?}", case.file_name()));
            }
            for d in &report.diagnostics {
                if d.offset > bytes.len() as u64 {
                    failures.push(format!("{}: offset {} past the end", case.file_name(), d.offset));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn case_names_are_unique_and_rules_exist() {
    let mut seen = BTreeSet::new();
    for case in all_cases() {
        assert!(seen.insert(case.slug.clone()), "duplicate slug {}", case.slug);
        for r in &case.rules {
            assert!(RuleId::from_id(r).is_some(), "{}: unknown rule {r}", case.slug);
        }
    }
    assert!(seen.len() >= 150, "only {} cases", seen.len());
}

/// Rules of the GGUF catalogue that no corpus case breaks, and why.
const NOT_IN_CORPUS: &[(&str, &str)] = &[
    ("string-length-limit", "needs a string over 1 GiB; parser/tests/limits.rs builds one in memory"),
    ("array-length-limit", "needs an array over 2^30 elements; parser/tests/limits.rs builds one in memory"),
];

#[test]
fn every_gguf_rule_has_a_breaking_case() {
    let covered: BTreeSet<&str> = all_cases().iter().flat_map(|c| c.rules.clone()).collect();
    let mut missing = Vec::new();
    for r in RULES.iter().filter(|r| !matches!(r.group, "rwkv" | "legacy")) {
        if !covered.contains(r.id) && !NOT_IN_CORPUS.iter().any(|(id, _)| *id == r.id) {
            missing.push(r.id);
        }
    }
    assert!(missing.is_empty(), "rules without a corpus case: {missing:?}");
}

#[test]
fn json_reports_snapshot() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/reports");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for case in all_cases() {
            let bytes = (case.build)();
            let reports: Vec<serde_json::Value> = Profile::ALL
                .into_iter()
                .map(|p| serde_json::to_value(validate_bytes(&bytes, &Options::new(p))).unwrap())
                .collect();
            insta::assert_json_snapshot!(case.file_name().trim_end_matches(".gguf").to_string(), reports);
        }
    });
}

#[test]
fn corpus_directory_is_up_to_date() {
    if let Err(e) = gguf_conformance::check_corpus(&gguf_conformance::corpus_dir()) {
        panic!("{e}");
    }
}
