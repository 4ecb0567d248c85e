//! The command line on split sets (corpus/split, written by
//! `gguf-conformance generate`): one shard brings its siblings, all shards
//! give one set, a missing sibling is a finding, exit codes.

use gguf_validate_testkit as support;

use support::cli::{code, json_lines, run};
use support::root;
use support::tmp::TempDir;

fn sets(v: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    v.iter().filter(|e| e["kind"] == "split-set").collect()
}

const VALID: [&str; 3] = [
    "corpus/split/y_valid/tiny-00001-of-00003.gguf",
    "corpus/split/y_valid/tiny-00002-of-00003.gguf",
    "corpus/split/y_valid/tiny-00003-of-00003.gguf",
];

#[test]
fn one_shard_finds_its_siblings() {
    let o = run(&["--format", "jsonl", VALID[1]]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
    let v = json_lines(&o);
    // Each shard's own report, in position order, then the set.
    let paths: Vec<&str> = v.iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, [VALID[0], VALID[1], VALID[2], "corpus/split/y_valid/tiny-*-of-00003.gguf"]);
    for shard in &v[..3] {
        assert_eq!(shard["split_set"], "corpus/split/y_valid/tiny-*-of-00003.gguf");
        assert_eq!(shard["valid"], true);
    }
    let set = sets(&v)[0];
    assert_eq!(set["valid"], true);
    assert_eq!(set["summary"]["shard_count"], 3);
    assert_eq!(set["summary"]["tensor_count"], 20);
    assert_eq!(set["summary"]["architecture"], "llama");
    assert_eq!(set["shards"].as_array().unwrap().len(), 3);
}

#[test]
fn all_shards_given_are_one_set() {
    let o = run(&["--format", "jsonl", VALID[2], VALID[0], VALID[1]]);
    assert_eq!(code(&o), 0);
    let v = json_lines(&o);
    assert_eq!(v.len(), 4, "three shards and one set, not three sets");
    assert_eq!(sets(&v).len(), 1);
    // The JSON document holds the same entries in `files`.
    let o = run(&["--format", "json", VALID[0], VALID[1], VALID[2]]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["schema_version"], gguf_validate_core::pipeline::json::JSON_SCHEMA_VERSION);
    assert_eq!(doc["files"].as_array().unwrap().len(), 4);
}

#[test]
fn a_missing_sibling_is_a_finding_and_exit_1() {
    let o = run(&["--format", "jsonl", "corpus/split/i_shard_missing/tiny-00001-of-00003.gguf"]);
    assert_eq!(code(&o), 1);
    let v = json_lines(&o);
    let set = sets(&v)[0];
    assert_eq!(set["valid"], false);
    assert_eq!(set["summary"]["shards_missing"], 1);
    let rules: Vec<&str> = set["diagnostics"].as_array().unwrap().iter().map(|d| d["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["split-shard-missing"]);
    assert!(set["diagnostics"][0]["message"].as_str().unwrap().contains("tiny-00002-of-00003.gguf"));
    // The shards themselves are valid files.
    assert!(v.iter().filter(|e| e.get("kind").is_none()).all(|e| e["valid"] == true));
    // Under spec the split rules are not reported: exit 0.
    let o = run(&["--profile", "spec", "corpus/split/i_shard_missing/tiny-00003-of-00003.gguf"]);
    assert_eq!(code(&o), 0);
}

#[test]
fn human_output_reports_the_set_once() {
    let o = run(&["--color", "never", VALID[0], VALID[1]]);
    assert_eq!(code(&o), 0);
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.matches(": split set ").count(), 1, "{text}");
    assert!(text.contains("tiny-*-of-00003.gguf: split set valid (profile strict)"), "{text}");
    assert!(text.contains("3 of 3 shards | 20 tensors (split.tensors.count 20) | architecture llama"), "{text}");
    let o = run(&["--color", "never", "corpus/split/i_tensor_duplicate/tiny-00003-of-00003.gguf"]);
    assert_eq!(code(&o), 1);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("error[split-tensor-duplicate]"), "{text}");
}

#[test]
fn container_only_validates_shards_as_files() {
    let o = run(&["--format", "jsonl", "--container-only", VALID[0]]);
    assert_eq!(code(&o), 0);
    let v = json_lines(&o);
    assert_eq!(v.len(), 1, "no siblings and no set with --container-only");
}

#[test]
fn a_shard_with_another_name_is_a_set_of_one() {
    // A shard whose name does not follow NAME-0000k-of-0000n.gguf: its
    // siblings cannot be found (llama.cpp cannot find them either).
    let dir = TempDir::new("split-cli");
    let renamed = dir.join("renamed.gguf");
    std::fs::copy(root().join(VALID[0]), &renamed).unwrap();
    let o = run(&["--format", "jsonl", renamed.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let v = json_lines(&o);
    let set = sets(&v)[0];
    let rules: Vec<&str> = set["diagnostics"].as_array().unwrap().iter().map(|d| d["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["split-shard-missing", "split-shard-missing"]);
}
