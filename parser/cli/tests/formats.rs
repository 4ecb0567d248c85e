//! Pipeline report formats: SARIF (checked against the official schema),
//! JUnit and GitHub annotations, and the side outputs beside stdout.

use gguf_validate_testkit as support;

use support::cli::{run, run_in};
use support::root;
use support::tmp::TempDir;

const INVALID: &str = "corpus/gguf/i_model_tensor_shape_attn_q.gguf";
const VALID: &str = "corpus/samples/tiny-llama.gguf";
const MISSING: &str = "corpus/does-not-exist.gguf";

fn sarif_of(args: &[&str]) -> serde_json::Value {
    let o = run(args);
    serde_json::from_slice(&o.stdout).expect("SARIF is JSON")
}

#[test]
fn sarif_validates_against_the_official_schema() {
    let text = std::fs::read_to_string(root().join("parser/cli/tests/data/sarif-2.1.0-rtm.5.json")).unwrap();
    // The official schema's `run.language` pattern ends in an unbalanced
    // `]` (a literal in ECMAScript regexes, a syntax error in Rust's):
    // escape it, leaving the file itself as published.
    let text = text.replace(r#"-[a-zA-Z]{2}]?$"#, r#"-[a-zA-Z]{2}\\]?$"#);
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::draft4::new(&schema).expect("schema compiles");
    let log = sarif_of(&["--format", "sarif", INVALID, VALID, MISSING]);
    let errors: Vec<String> = validator.iter_errors(&log).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // And it is not vacuous: a broken log fails.
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]["level"] = serde_json::json!("fatal");
    assert!(!validator.is_valid(&broken));
}

#[test]
fn sarif_results_carry_region_line_fingerprint_and_the_catalogue() {
    let log = sarif_of(&["--format", "sarif", INVALID, VALID, MISSING]);
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), gguf_validate_core::rules::RULES.len(), "the whole catalogue");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let r = &results[0];
    assert_eq!(r["ruleId"], "model-tensor-shape");
    assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"], "model-tensor-shape");
    assert_eq!(r["level"], "error");
    let region = &r["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], 1);
    assert_eq!(region["byteOffset"], 0x19ce);
    assert_eq!(region["byteLength"], 16);
    assert_eq!(
        r["partialFingerprints"]["ggufFinding/v1"],
        format!("model-tensor-shape|{INVALID}|tensor[3] blk.0.attn_q.weight/dims")
    );
    assert_eq!(run["invocations"][0]["executionSuccessful"], false, "one file was unreadable");
    let note = &run["invocations"][0]["toolExecutionNotifications"][0];
    assert!(note["message"]["text"].as_str().unwrap().contains(MISSING));
    insta::assert_json_snapshot!("sarif_results", results);
    // The rule a result names, as code scanning shows it (helpUri included).
    insta::assert_json_snapshot!("sarif_rule_of_the_result", rules[r["ruleIndex"].as_u64().unwrap() as usize]);
}

#[test]
fn sarif_help_uris_lead_to_the_rules_reference_anchors() {
    // Every rule's helpUri is the book's rules chapter at the rule's own
    // anchor, and parser/docs/rules.md (that chapter) has the anchor.
    let log = sarif_of(&["--format", "sarif", VALID]);
    let rules = log["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    let chapter = std::fs::read_to_string(root().join("parser/docs/rules.md")).unwrap();
    for rule in rules {
        let id = rule["id"].as_str().unwrap();
        assert_eq!(
            rule["helpUri"].as_str().unwrap(),
            format!("https://gguf-validate.github.io/gguf-validate/rules.html#{id}"),
            "{id}"
        );
        assert!(chapter.contains(&format!("<a id=\"{id}\"></a>")), "no anchor for {id} in parser/docs/rules.md");
    }
}

#[test]
fn sarif_fingerprints_ignore_offsets() {
    // The same finding at another offset keeps its identity.
    let a = sarif_of(&["--format", "sarif", "corpus/gguf/n_key_empty.gguf"]);
    let dir = TempDir::new("formats-fp");
    let shifted = dir.join("n_key_empty.gguf");
    std::fs::copy(root().join("corpus/gguf/n_key_empty.gguf"), &shifted).unwrap();
    let b = sarif_of(&["--format", "sarif", shifted.to_str().unwrap()]);
    let fp = |v: &serde_json::Value| {
        let results = v["runs"][0]["results"].as_array().unwrap().clone();
        let r = results.into_iter().find(|r| r["ruleId"] == "key-empty").expect("key-empty finding");
        r["partialFingerprints"]["ggufFinding/v1"].clone()
    };
    let ra = fp(&a);
    assert!(ra.as_str().unwrap().starts_with("key-empty|corpus/gguf/n_key_empty.gguf|"), "{ra}");
    assert_eq!(
        ra.as_str().unwrap().split('|').nth(2),
        fp(&b).as_str().unwrap().split('|').nth(2),
        "field path, not offset"
    );
}

#[test]
fn junit_has_one_case_per_file_with_failure_and_error() {
    let o = run(&["--format", "junit", INVALID, VALID, MISSING]);
    assert_eq!(o.status.code(), Some(2), "an unreadable file wins");
    let xml = String::from_utf8(o.stdout).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 3);
    assert!(xml.contains(
        r#"<testsuite name="gguf-validate --profile strict" tests="3" skipped="0" errors="1" failures="1">"#
    ));
    insta::assert_snapshot!("junit", xml);
}

#[test]
fn github_annotations_one_line_per_finding() {
    let o = run(&["--format", "github", INVALID, VALID]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.starts_with(&format!("::error file={INVALID},title=model-tensor-shape at 0x19ce::")), "{text}");
}

#[test]
fn side_outputs_are_written_beside_the_human_report() {
    let dir = TempDir::new("formats-side");
    let (sarif, junit) = (dir.join("out.sarif"), dir.join("out.xml"));
    let o =
        run(&["--output-sarif", sarif.to_str().unwrap(), "--output-junit", junit.to_str().unwrap(), INVALID, VALID]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8(o.stdout).unwrap().contains("INVALID (profile strict)"), "human report on stdout");
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 1);
    assert!(std::fs::read_to_string(&junit).unwrap().contains("<testcase "));
}

#[test]
fn suppressed_findings_are_sarif_suppressions() {
    let dir = TempDir::new("formats-sarif-supp");
    std::fs::copy(root().join("corpus/gguf/n_key_empty.gguf"), dir.join("bad.gguf")).unwrap();
    std::fs::write(
        dir.join("gguf-validate.toml"),
        "[[suppress]]\nrule = \"key-empty\"\npaths = [\"bad.gguf\"]\nreason = \"upstream file, reported\"\n",
    )
    .unwrap();
    let o = run_in(&dir, &["--format", "sarif", "bad.gguf"]);
    assert_eq!(o.status.code(), Some(0));
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    let r = results.iter().find(|r| r["ruleId"] == "key-empty").expect("the suppressed finding is still a result");
    assert_eq!(
        r["suppressions"],
        serde_json::json!([{"kind": "external", "status": "accepted", "justification": "upstream file, reported (config)"}])
    );
}

#[test]
fn summary_of_many_files() {
    let o = run(&["--quiet", "--color", "never", INVALID, VALID, MISSING]);
    insta::assert_snapshot!("quiet_summary", String::from_utf8(o.stdout).unwrap());
}
