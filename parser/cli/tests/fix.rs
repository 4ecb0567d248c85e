//! `gguf-validate fix`: the fixes of a file's findings made in a validated
//! copy (each listed with its rule, path, value before and after), unsafe
//! ones held back without `--unsafe`, `--dry-run` writing nothing,
//! `--in-place` replacing the file only when there is something to fix,
//! several files into a folder, the exit status from what is left, and
//! `rules` showing the fixes.

use gguf_validate_testkit as support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::cli::{code, command, json, stderr, stdout};
use support::root;
use support::tmp::TempDir;

fn case(slug: &str) -> PathBuf {
    root().join("corpus/fixes").join(format!("{slug}.gguf"))
}

fn fix(args: &[&std::ffi::OsStr]) -> Output {
    command().arg("fix").args(args).output().expect("run gguf-validate")
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

fn copy_to(dir: &Path, slug: &str) -> PathBuf {
    let to = dir.join(format!("{slug}.gguf"));
    std::fs::copy(case(slug), &to).expect("copy");
    to
}

#[test]
fn a_safe_fix_writes_the_committed_fixed_file_and_reports_it() {
    let dir = TempDir::new("fix-safe");
    let out = dir.join("out.gguf");
    let o = fix(&[case("standard_key_type_u64").as_os_str(), os("-o"), out.as_os_str(), os("--format"), os("json")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    let file = &doc["files"][0];
    assert_eq!(doc["valid"], true);
    assert_eq!(file["written"], true);
    assert_eq!(file["fixes"][0]["rule"], "standard-key-type");
    assert_eq!(file["fixes"][0]["kind"], "safe");
    assert_eq!(file["fixes"][0]["path"], "kv[1] llama.context_length");
    assert_eq!(file["fixes"][0]["before"], "u64 64");
    assert_eq!(file["fixes"][0]["after"], "u32 64");
    assert_eq!(file["before"]["valid"], false);
    assert_eq!(file["tensor_data"]["unchanged"], true);
    let committed = std::fs::read(root().join("corpus/fixes/standard_key_type_u64.fixed.gguf")).unwrap();
    assert!(std::fs::read(&out).unwrap() == committed, "not the committed fixed file");
}

#[test]
fn an_unsafe_fix_is_held_back_without_unsafe() {
    let dir = TempDir::new("fix-unsafe");
    let out = dir.join("out.gguf");
    let o = fix(&[case("token_id_out_of_range").as_os_str(), os("-o"), out.as_os_str()]);
    // Held back: the finding stays, nothing is written, the status says invalid.
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).contains("fix token-id-range (unsafe, held back: --unsafe makes it)"), "{}", stdout(&o));
    assert!(!out.exists());
    let o = fix(&[case("token_id_out_of_range").as_os_str(), os("-o"), out.as_os_str(), os("--unsafe")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("tokenizer.ggml.eos_token_id: u32 1000000 -> (removed)"), "{}", stdout(&o));
    assert!(out.exists());
}

#[test]
fn dry_run_writes_nothing_and_says_what_it_would_do() {
    let dir = TempDir::new("fix-dry");
    let file = copy_to(&dir, "trailing_bytes");
    let before = std::fs::read(&file).unwrap();
    let o = fix(&[file.as_os_str(), os("--dry-run"), os("--format"), os("json")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["files"][0]["dry_run"], true);
    assert_eq!(doc["files"][0]["written"], false);
    assert_eq!(doc["files"][0]["fixes"][0]["rule"], "trailing-bytes");
    assert!(std::fs::read(&file).unwrap() == before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a file was left behind");
}

#[test]
fn in_place_replaces_the_file_only_when_there_is_something_to_fix() {
    let dir = TempDir::new("fix-in-place");
    let file = copy_to(&dir, "tensor_data_gap");
    let o = fix(&[file.as_os_str(), os("--in-place")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let fixed = std::fs::read(root().join("corpus/fixes/tensor_data_gap.fixed.gguf")).unwrap();
    assert!(std::fs::read(&file).unwrap() == fixed);
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    // Again: nothing to fix, the file is left alone.
    let o = fix(&[file.as_os_str(), os("--in-place")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("no finding has a fix"), "{}", stdout(&o));
    assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), modified);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn several_files_go_into_a_folder_and_one_bad_file_loses_no_other() {
    let dir = TempDir::new("fix-many");
    let out = dir.join("fixed");
    std::fs::create_dir(&out).unwrap();
    let junk = dir.join("junk.gguf");
    std::fs::write(&junk, b"not a gguf file").unwrap();
    let o = fix(&[
        case("key_duplicate_equal").as_os_str(),
        junk.as_os_str(),
        case("standard_key_type_f32_fraction").as_os_str(),
        os("-o"),
        out.as_os_str(),
        os("--format"),
        os("json"),
    ]);
    // The unreadable file is a usage-level failure; the others are reported.
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("junk.gguf"), "{}", stderr(&o));
    let doc = json(&o);
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["written"], true);
    assert!(out.join("key_duplicate_equal.gguf").exists());
    // No fix for an f32 of 2.5: the error stays, nothing is written.
    assert_eq!(files[1]["valid"], false);
    assert_eq!(files[1]["fixes"].as_array().unwrap().len(), 0);
    assert!(!out.join("standard_key_type_f32_fraction.gguf").exists());
    // Several files need a folder.
    let o = fix(&[case("key_duplicate_equal").as_os_str(), case("trailing_bytes").as_os_str(), os("-o"), os("x.gguf")]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("OUT must be a folder"), "{}", stderr(&o));
}

#[test]
fn rules_show_which_rules_have_fixes() {
    let o = command().args(["rules", "--format", "json"]).output().unwrap();
    let rows = json(&o);
    let fixes = |id: &str| -> Vec<String> {
        let row = rows.as_array().unwrap().iter().find(|r| r["id"] == id).unwrap();
        row["fixes"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(fixes("key-duplicate"), ["safe", "unsafe"]);
    assert_eq!(fixes("token-id-range"), ["unsafe"]);
    assert_eq!(fixes("trailing-bytes"), ["safe"]);
    assert!(fixes("magic").is_empty());
    let md = std::fs::read_to_string(root().join("parser/docs/rules.md")).unwrap();
    assert!(md.contains("**Fix (safe):** the bytes after the last tensor's padding dropped."));
}

#[test]
fn a_shard_stands_for_its_split_set_which_is_judged_whole() {
    let dir = TempDir::new("fix-split");
    let from = root().join("corpus/split/y_two_shards");
    for k in 1..=2 {
        let name = format!("tiny-0000{k}-of-00002.gguf");
        std::fs::copy(from.join(&name), dir.join(&name)).unwrap();
    }
    // The second shard gets bytes after its data (trailing-bytes, a safe fix).
    let second = dir.join("tiny-00002-of-00002.gguf");
    let mut bytes = std::fs::read(&second).unwrap();
    bytes.extend_from_slice(b"appended");
    std::fs::write(&second, &bytes).unwrap();
    let out = dir.join("fixed");
    std::fs::create_dir(&out).unwrap();
    let first = dir.join("tiny-00001-of-00002.gguf");
    let o = fix(&[first.as_os_str(), os("-o"), out.as_os_str(), os("--format"), os("json")]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["files"].as_array().unwrap().len(), 2, "both shards are fixed");
    assert_eq!(doc["files"][1]["fixes"][0]["rule"], "trailing-bytes");
    assert_eq!(doc["sets"].as_array().unwrap().len(), 1);
    assert_eq!(doc["sets"][0]["valid"], true);
    let fixed_second = std::fs::read(out.join("tiny-00002-of-00002.gguf")).unwrap();
    assert!(fixed_second == std::fs::read(from.join("tiny-00002-of-00002.gguf")).unwrap());
    // A dry run: the shards as they are stand, and the set judged from
    // their validations is invalid with --deny-warnings (the second still
    // has its trailing bytes, a warning).
    let o = fix(&[first.as_os_str(), os("--dry-run"), os("--deny-warnings"), os("--format"), os("json")]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["sets"].as_array().unwrap().len(), 1);
    assert_eq!(doc["sets"][0]["valid"], false);
    // A set needs a folder.
    let o = fix(&[first.as_os_str(), os("-o"), dir.join("one.gguf").as_os_str()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("OUT must be a folder"), "{}", stderr(&o));
}
