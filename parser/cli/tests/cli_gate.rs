//! The CLI as a release gate: a run that validates nothing fails (and says
//! what the ignore rules skipped), every output format reports the count,
//! and the small traps of a pipeline (comments in `--files-from`, a
//! mistyped subcommand, durations with units, plurals, labels, one cause
//! before its symptoms) behave as a release engineer expects.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use gguf_validate_testkit as support;

use support::cli::{code, command, run, run_in, stderr, stdout};
use support::root;
use support::tmp::TempDir;

/// A fresh temporary directory, a git repository whose `.gitignore`
/// ignores `*.gguf` (as model repositories often do), holding `models/`
/// with two copies of the bundled sample.
fn ignored_models(name: &str) -> TempDir {
    let d = TempDir::new(&format!("gate-{name}"));
    std::fs::create_dir_all(d.join("models")).unwrap();
    // The ignore crate honours .gitignore inside a git repository: a
    // `.git` directory is enough.
    std::fs::create_dir_all(d.join(".git")).unwrap();
    std::fs::write(d.join(".gitignore"), "*.gguf\n").unwrap();
    let sample = root().join("corpus/samples/tiny-llama.gguf");
    std::fs::copy(&sample, d.join("models/a.gguf")).unwrap();
    std::fs::copy(&sample, d.join("models/b model.gguf")).unwrap();
    d
}

#[test]
fn a_run_over_ignored_files_fails_and_says_what_was_skipped() {
    let d = ignored_models("ignored");
    let o = run_in(&d, &["models/"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing to validate"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 .gguf files under the given directories are skipped by ignore rules"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--no-ignore"), "{}", stderr(&o));
    assert!(stdout(&o).contains("0 files: 0 valid, 0 invalid, 0 unreadable; 2 .gguf files skipped by ignore rules"));
    // --no-ignore validates them; naming a file validates it whatever the ignore files say.
    let o = run_in(&d, &["-q", "--no-ignore", "models/"]);
    assert_eq!((code(&o), stdout(&o).trim()), (0, "2 files: 2 valid, 0 invalid, 0 unreadable"));
    let o = run_in(&d, &["-q", "models/a.gguf"]);
    assert_eq!((code(&o), stdout(&o).trim()), (0, "1 file: 1 valid, 0 invalid, 0 unreadable"));
    // --allow-empty keeps the old behaviour, still saying what was skipped.
    let o = run_in(&d, &["--allow-empty", "models/"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("2 .gguf files skipped by ignore rules"));
}

#[test]
fn every_output_format_reports_the_count_and_the_skipped_files() {
    let d = ignored_models("formats");
    let json: serde_json::Value = serde_json::from_slice(&run_in(&d, &["--format", "json", "models/"]).stdout).unwrap();
    assert_eq!(json["totals"]["files"], 0);
    assert_eq!(json["totals"]["skipped_by_ignore"], 2);
    assert_eq!(json["skipped_by_ignore"], serde_json::json!(["models/a.gguf", "models/b model.gguf"]));
    let sarif = stdout(&run_in(&d, &["--format", "sarif", "models/"]));
    let sarif: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let notes = &sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"];
    assert!(
        notes[0]["message"]["text"].as_str().unwrap().starts_with("2 .gguf files skipped by ignore rules"),
        "{notes}"
    );
    let junit = stdout(&run_in(&d, &["--format", "junit", "models/"]));
    assert!(junit.contains(r#"<property name="skipped-by-ignore" value="2"/>"#), "{junit}");
    let gh = run_in(&d, &["--format", "github", "models/"]);
    assert!(stdout(&gh).starts_with("::notice title=gguf-validate::2 .gguf files skipped"), "{}", stdout(&gh));
    let jsonl = run_in(&d, &["--format", "jsonl", "models/"]);
    assert!(stderr(&jsonl).contains("2 .gguf files skipped by ignore rules"), "{}", stderr(&jsonl));
    for format in ["human", "json", "jsonl", "sarif", "junit", "github"] {
        assert_eq!(code(&run_in(&d, &["--format", format, "models/"])), 2, "{format}");
    }
}

#[test]
fn an_empty_directory_and_an_empty_list_fail() {
    let d = TempDir::new("gate-empty");
    let o = run(&["--format", "json", d.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let want = format!("nothing to validate: the directory `{}` holds no .gguf file; --allow-empty", d.display());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"], serde_json::json!([]), "the document is still whole");
    let mut c = command()
        .args(["--files-from", "-", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(c.stdin.take());
    let out = c.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("nothing to validate: the list read from standard input names no file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(code(&run(&["--allow-empty", "-q", d.to_str().unwrap()])), 0);
}

#[test]
fn files_from_skips_comments_and_blank_lines() {
    let mut c = command()
        .args(["--files-from", "-", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let list = "# models to publish\n\n   \n  corpus/samples/tiny-llama.gguf  \r\n\t# corpus/gguf/n_key_empty.gguf\ncorpus/gguf/n_key_empty.gguf\n";
    c.stdin.take().unwrap().write_all(list.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let paths: Vec<&str> = v["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["corpus/samples/tiny-llama.gguf", "corpus/gguf/n_key_empty.gguf"]);
    assert_eq!(code(&o), 1, "the invalid one decides");
}

#[test]
fn a_mistyped_subcommand_validates_nothing() {
    for (typo, want) in [("hsah", "hash"), ("rule", "rules"), ("dupm", "dump"), ("derve", "derive")] {
        let o = run(&[typo, "corpus/samples/tiny-llama.gguf"]);
        assert_eq!(code(&o), 2, "{typo}");
        assert!(stderr(&o).contains(&format!("did you mean `{want}`?")), "{typo}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{typo}: nothing validated, got {}", stdout(&o));
    }
    let o = run(&["modles", "corpus/samples/tiny-llama.gguf"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("`modles` is neither a subcommand nor an existing file"), "{}", stderr(&o));
    // A file of that name is validated (and ./name always was).
    let d = TempDir::new("gate-word");
    std::fs::copy(root().join("corpus/samples/tiny-llama.gguf"), d.join("hsah")).unwrap();
    assert_eq!(code(&run_in(&d, &["-q", "hsah"])), 0);
}

#[test]
fn durations_take_units() {
    for t in ["5", "5s", "2.5s", "500ms", "2m", "1h", "0.5"] {
        let o = run(&["-q", "--timeout", t, "corpus/samples/tiny-llama.gguf"]);
        assert_eq!(code(&o), 0, "--timeout {t}: {}", stderr(&o));
    }
    // The HTTP durations take the same units (at most 10^6 s).
    for flag in ["--http-timeout", "--http-deadline"] {
        for t in ["500ms", "30s", "2m", "45"] {
            let o = run(&[flag, t, "-q", "corpus/samples/tiny-llama.gguf"]);
            assert_eq!(code(&o), 0, "{flag} {t}: {}", stderr(&o));
        }
        let o = run(&[flag, "300h", "corpus/samples/tiny-llama.gguf"]);
        assert_eq!(code(&o), 2, "{flag} 300h is past 10^6 s");
    }
    for t in ["0", "5x", "-1s", "s", "1e400"] {
        let o = run(&[&format!("--timeout={t}"), "corpus/samples/tiny-llama.gguf"]);
        assert_eq!(code(&o), 2, "--timeout {t}");
        assert!(stderr(&o).contains("is not a duration above 0"), "{t}: {}", stderr(&o));
    }
}

#[test]
fn labels_say_what_the_file_is() {
    let o = run(&["corpus/samples/tiny-llama.gguf"]);
    assert!(stdout(&o).contains("split (a single file, not a shard of a split set)"), "{}", stdout(&o));
    let d = TempDir::new("gate-label");
    std::fs::write(d.join("empty.gguf"), b"").unwrap();
    std::fs::write(d.join("junk.gguf"), b"not a model file at all, just text").unwrap();
    let o = run_in(&d, &["empty.gguf", "junk.gguf"]);
    let text = stdout(&o);
    assert!(
        text.contains("empty.gguf: INVALID (profile strict): 1 error, 0 warnings\n  empty file (0 bytes)\n"),
        "{text}"
    );
    assert!(
        text.contains("junk.gguf: INVALID (profile strict): 1 error, 0 warnings\n  unknown format | file 34 B\n"),
        "{text}"
    );
    assert!(text.contains("\n2 files: 0 valid, 2 invalid, 0 unreadable\n"), "{text}");
}

/// A model of `n` F32 tensors of 64 elements each, cut `cut` bytes before
/// its end.
fn truncated_model(dir: &Path, n: usize, cut: usize) -> PathBuf {
    use gguf_validate_core::types::GgmlType;
    use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    for i in 0..n {
        m.tensor(OwnedTensor::zeroed(&format!("w{i}"), &[64], GgmlType::F32).unwrap());
    }
    m.canonical();
    let mut bytes = m.to_bytes();
    bytes.truncate(bytes.len() - cut);
    let path = dir.join(format!("cut-{n}-{cut}.gguf"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_truncated_file_is_one_cause_with_its_symptoms_under_it() {
    let d = TempDir::new("gate-cut");
    // 100 tensors of 256 bytes, the last 80 and a half missing.
    let path = truncated_model(&d, 100, 80 * 256 + 128);
    let o = run_in(&d, &[path.file_name().unwrap().to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    insta::assert_snapshot!("truncated_human", stdout(&o));
    let o = run_in(&d, &["--format", "json", path.file_name().unwrap().to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = &v["files"][0];
    let diags = file["diagnostics"].as_array().unwrap();
    let cause = diags.iter().find(|d| d["path"] == "data section").expect("the cause");
    assert_eq!(cause["rule"], "tensor-data-out-of-bounds");
    assert_eq!(cause["path"], "data section");
    assert!(
        cause["message"]
            .as_str()
            .unwrap()
            .starts_with("the file ends at 8,576 of the 29,184 bytes its tensors need: 81 of 100 tensors"),
        "{cause}"
    );
    let children: Vec<_> = diags.iter().filter(|d| d.get("caused_by").is_some()).collect();
    assert_eq!(children.len(), 49, "50 listed per rule: the cause and 49 tensors");
    for c in &children {
        assert_eq!(c["caused_by"], serde_json::json!({"rule": cause["rule"], "offset": cause["offset"]}));
    }
    // Every finding counted: the cause and the 81 tensors past the end.
    assert_eq!(file["counts"]["errors"], 82);
    // One tensor past the end is its own cause: nothing to fold.
    let path = truncated_model(&d, 3, 100);
    let o = run_in(&d, &["--format", "json", path.file_name().unwrap().to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let diags: Vec<_> =
        v["files"][0]["diagnostics"].as_array().unwrap().iter().filter(|d| d["severity"] != "info").collect();
    assert_eq!(diags.len(), 1);
    assert!(diags[0].get("caused_by").is_none());
    assert_eq!(diags[0]["path"], "tensor[2] w2/offset");
}

#[test]
fn offsets_all_shifted_by_one_amount_are_one_cause() {
    use gguf_validate_core::types::GgmlType;
    use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};
    let d = TempDir::new("gate-shift");
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    for i in 0..5 {
        m.tensor(OwnedTensor::zeroed(&format!("w{i}"), &[64], GgmlType::F32).unwrap());
    }
    m.canonical();
    for t in &mut m.tensors {
        t.offset += 16;
    }
    std::fs::write(d.join("shifted.gguf"), m.to_bytes()).unwrap();
    let o = run_in(&d, &["--format", "json", "shifted.gguf"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let diags = v["files"][0]["diagnostics"].as_array().unwrap();
    let cause = diags
        .iter()
        .find(|x| x["rule"] == "tensor-offset-misaligned" && x["path"] == "data section")
        .expect("one cause");
    assert!(cause["message"].as_str().unwrap().starts_with("every tensor's data offset is 16 bytes past"), "{cause}");
    let children = diags.iter().filter(|x| x["rule"] == "tensor-offset-misaligned" && x.get("caused_by").is_some());
    assert_eq!(children.count(), 5);
    let human = stdout(&run_in(&d, &["shifted.gguf"]));
    assert!(human.contains("└ 5 [tensor-offset-misaligned] findings follow from it"), "{human}");
    // Offsets misaligned by different amounts have no single cause.
    m.tensors[2].offset += 4;
    std::fs::write(d.join("mixed.gguf"), m.to_bytes()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&run_in(&d, &["--format", "json", "mixed.gguf"]).stdout).unwrap();
    assert!(v["files"][0]["diagnostics"].as_array().unwrap().iter().all(|x| x.get("caused_by").is_none()));
}
