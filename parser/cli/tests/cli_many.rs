//! Many files in one run: directory walks, `--files-from`, `--jobs` (input
//! order kept), `--quiet` and the closing summary.
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use gguf_validate_testkit as support;

use support::cli::{command, run, stdout};
use support::root;
use support::tmp::TempDir;

fn copy(from: &str, to: &Path) {
    std::fs::copy(root().join(from), to).unwrap();
}

/// The paths a JSON run reported, in order.
fn reported(o: &Output) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_directory_is_walked_for_gguf_and_known_magics_only() {
    let d = TempDir::new("many-walk");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    copy("corpus/samples/tiny-llama.gguf", &d.join("a.gguf"));
    copy("corpus/gguf/n_key_empty.gguf", &d.join("sub/b.GGUF"));
    copy("corpus/legacy/n_ggjt_v1_q4_0.bin", &d.join("sub/old-model.bin"));
    std::fs::write(d.join("pytorch_model.bin"), b"PK\x03\x04 not a ggml file").unwrap();
    std::fs::write(d.join("notes.txt"), b"hello").unwrap();
    std::fs::create_dir_all(d.join(".hidden")).unwrap();
    copy("corpus/samples/tiny-llama.gguf", &d.join(".hidden/c.gguf"));
    std::fs::write(d.join(".ignore"), b"ignored.gguf\n").unwrap();
    copy("corpus/samples/tiny-llama.gguf", &d.join("ignored.gguf"));
    let o = run(&["--format", "json", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let names: Vec<String> =
        reported(&o).iter().map(|p| p.strip_prefix(d.to_str().unwrap()).unwrap().to_string()).collect();
    assert_eq!(names, ["/a.gguf", "/sub/b.GGUF", "/sub/old-model.bin"]);
    let all = run(&["--format", "json", "--no-ignore", d.to_str().unwrap()]);
    assert_eq!(reported(&all).len(), 5, "hidden and ignored files with --no-ignore");
}

#[cfg(unix)]
#[test]
fn a_fifo_or_link_in_a_walked_directory_is_never_opened() {
    let d = TempDir::new("many-fifo");
    let fifo = d.join("pipe.gguf");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::os::unix::fs::symlink(root().join("corpus/samples/tiny-llama.gguf"), d.join("link.gguf")).unwrap();
    copy("corpus/samples/tiny-llama.gguf", &d.join("real.gguf"));
    let t = std::time::Instant::now();
    let o = run(&["--format", "json", d.to_str().unwrap()]);
    assert!(t.elapsed().as_secs() < 20, "no hang on the FIFO");
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(reported(&o), [d.join("real.gguf").to_str().unwrap()]);
}

#[test]
fn files_from_a_list_and_stdin() {
    let d = TempDir::new("many-list");
    let list = d.join("list.txt");
    std::fs::write(&list, "corpus/samples/tiny-llama.gguf\r\n\ncorpus/gguf/n_key_empty.gguf\n").unwrap();
    let o = run(&["--format", "json", "--files-from", list.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(reported(&o), ["corpus/samples/tiny-llama.gguf", "corpus/gguf/n_key_empty.gguf"]);
    let mut child = command()
        .args(["--format", "json", "corpus/gguf/y_base.gguf", "--files-from", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"corpus/samples/tiny-llama.gguf\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(reported(&o), ["corpus/gguf/y_base.gguf", "corpus/samples/tiny-llama.gguf"], "arguments first");
    let missing = run(&["--files-from", "no/such/list.txt"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn parallel_runs_keep_input_order_and_results() {
    let one = run(&["--format", "json", "--jobs", "1", "corpus/gguf"]);
    let many = run(&["--format", "json", "--jobs", "4", "corpus/gguf"]);
    assert_eq!(one.status.code(), many.status.code());
    assert!(reported(&one).len() > 250);
    // Identical documents: same files, same order, same findings.
    assert_eq!(stdout(&one), stdout(&many));
}

#[test]
fn quiet_prints_only_invalid_files_and_the_summary() {
    let o = run(&["--quiet", "corpus/samples/tiny-llama.gguf", "corpus/gguf/n_key_empty.gguf", "no/such.gguf"]);
    assert_eq!(o.status.code(), Some(2));
    let text = stdout(&o);
    assert!(!text.contains("tiny-llama.gguf"), "{text}");
    assert!(text.contains("corpus/gguf/n_key_empty.gguf: INVALID"), "{text}");
    assert!(text.contains("no/such.gguf: ERROR"), "{text}");
    assert!(text.ends_with("3 files: 1 valid, 1 invalid, 1 unreadable\n"), "{text}");
}

#[test]
fn json_ends_with_totals() {
    let o = run(&["--format", "json", "corpus/samples/tiny-llama.gguf", "corpus/gguf/n_key_empty.gguf"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema_version"], gguf_validate_core::pipeline::json::JSON_SCHEMA_VERSION);
    assert_eq!(
        v["totals"],
        serde_json::json!({"files": 2, "valid": 1, "invalid": 1, "unreadable": 0, "split_sets": 0, "split_sets_invalid": 0, "skipped_by_ignore": 0})
    );
}
