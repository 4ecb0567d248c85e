//! The hostile environment, through the binary: work bounded by the bytes
//! that exist (shared and overlapping tensor ranges, many tensors, sparse
//! files), special files (devices, FIFOs), time limits, output that streams
//! and cannot be forged by file names, and command lines that file names
//! cannot hijack. Each test asserts the exit code, that the run ends (a
//! generous deadline, not a timing assertion) and the size of the output.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};

use gguf_validate_testkit as support;

use support::cli::{BIN, clean, code, command, stdout};
use support::root;
use support::tmp::TempDir;

/// Runs longer than this are a hang (the test fails; it never waits on).
const DEADLINE: Duration = Duration::from_secs(120);

/// Drains a pipe on its own thread (a full pipe would block the child).
fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// Waits for `child` at most [`DEADLINE`]; kills it and fails on a hang.
fn finish(mut child: Child) -> Output {
    let start = Instant::now();
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let stdout = out.join().expect("stdout");
            let stderr = err.join().expect("stderr");
            return Output { status, stdout, stderr };
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("gguf-validate did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The binary in `dir`, failing the test past [`DEADLINE`].
fn run_in(dir: &Path, args: &[&str]) -> Output {
    finish(command().args(args).current_dir(dir).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn"))
}

/// `n` F32 tensor infos of `elements` each at data offset `offset_of(i)`,
/// written without data; the file is then extended to `data_len` bytes of
/// data (sparse: nothing is written) and `dense` bytes are written at the
/// start of the data section.
fn tensors_file(path: &Path, n: usize, elements: u64, offset_of: impl Fn(usize) -> u64, data_len: u64, dense: &[u8]) {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    for i in 0..n {
        m.tensor(OwnedTensor {
            name: format!("t{i}").into_bytes(),
            dims: vec![elements],
            type_id: GgmlType::F32.id(),
            offset: offset_of(i),
            data: Vec::new(),
        });
    }
    let mut bytes = m.to_bytes();
    let data_start = bytes.len() as u64;
    bytes.extend_from_slice(dense);
    let mut f = std::fs::File::create(path).expect("create");
    f.write_all(&bytes).expect("write");
    f.set_len(data_start + data_len).expect("extend");
}

#[test]
fn many_tensors_over_one_sparse_region_scan_it_once() {
    // 50,000 infos, each claiming the same 1 GiB (a sparse file): before,
    // one task per 8 MiB of declared data (6,400,000 tasks) and a scan of
    // 50 TiB; now the region is read once.
    let dir = TempDir::new("hostile-sparse");
    let path = dir.join("shared.gguf");
    let gib = 1u64 << 30;
    tensors_file(&path, 50_000, gib / 4, |_| 0, gib, &[]);
    let o = run_in(&dir, &["--check-data", "--format", "json", "shared.gguf"]);
    assert_eq!(code(&o), 1, "overlapping tensors are invalid");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let data = &v["files"][0]["data"];
    assert_eq!(data["bytes_checked"], gib);
    assert_eq!(data["bytes_claimed"], 50_000 * gib);
    assert!(o.stdout.len() < 200_000, "{} bytes of output", o.stdout.len());
}

#[test]
fn many_tensors_over_one_dense_region_scan_it_once() {
    let dir = TempDir::new("hostile-dense");
    let path = dir.join("dense.gguf");
    let region = 16u64 << 20;
    let mut dense: Vec<u8> = (0..region / 4).flat_map(|i| (i as f32).to_le_bytes()).collect();
    dense[4000..4004].copy_from_slice(&f32::NAN.to_le_bytes());
    // 20,000 tensors, each starting one element further into the region.
    tensors_file(&path, 20_000, region / 4 - 20_000, |i| i as u64 * 4, region, &dense);
    let o = run_in(&dir, &["--check-data", "--profile", "spec", "--format", "json", "dense.gguf"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let data = &v["files"][0]["data"];
    // The union of the ranges ends one element short of the region.
    assert_eq!(data["bytes_checked"], region - 4, "the union of the ranges, once");
    assert_eq!(data["findings"], 1, "the NaN counts once, for the first tensor that claims it");
    assert_eq!(data["per_tensor"][0]["name"], "t0");
    assert!(o.stdout.len() < 200_000);
}

#[test]
fn many_empty_tensors_give_a_small_report() {
    let dir = TempDir::new("hostile-empty");
    let path = dir.join("empty.gguf");
    tensors_file(&path, 200_000, 0, |_| 0, 0, &[]);
    let o = run_in(&dir, &["--check-data", "--format", "json", "empty.gguf"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["files"][0]["data"]["tensors_checked"], 200_000);
    assert_eq!(v["files"][0]["data"]["per_tensor"].as_array().map(Vec::len), Some(0));
    assert!(o.stdout.len() < 50_000, "{} bytes of JSON for 200,000 clean tensors", o.stdout.len());
}

#[test]
fn max_data_findings_is_honoured_exactly_or_refused() {
    let dir = TempDir::new("hostile-findings");
    let path = dir.join("nan.gguf");
    let nans: Vec<u8> = (0..3000).flat_map(|_| f32::NAN.to_le_bytes()).collect();
    tensors_file(&path, 1, 3000, |_| 0, nans.len() as u64, &nans);
    let o = run_in(&dir, &["--check-data", "--max-data-findings", "1000", "--format", "json", "nan.gguf"]);
    assert_eq!(code(&o), 1);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let f = &v["files"][0];
    let listed = f["diagnostics"].as_array().unwrap().iter().filter(|d| d["rule"] == "data-non-finite").count();
    assert_eq!(listed, 1000);
    assert_eq!(f["data"]["per_tensor"][0]["listed"], 1000);
    assert_eq!(f["suppressed"]["data-non-finite"], 2000);
    let o = run_in(&dir, &["--check-data", "--max-data-findings", "10001", "nan.gguf"]);
    assert_eq!(code(&o), 2, "above the limit is refused, not silently capped");
    assert!(String::from_utf8_lossy(&o.stderr).contains("above the limit"));
}

#[cfg(unix)]
#[test]
fn devices_and_links_to_them_are_refused_at_once() {
    let dir = TempDir::new("hostile-devices");
    std::os::unix::fs::symlink("/dev/zero", dir.join("model.gguf")).expect("symlink");
    for target in ["/dev/zero", "/dev/urandom", "model.gguf"] {
        let o = run_in(&dir, &[target]);
        assert_eq!(code(&o), 2, "{target}");
        assert!(stdout(&o).contains("character device, not a regular file"), "{}", stdout(&o));
    }
    // With consent, a device is read up to the limit, never without end.
    let o = run_in(&dir, &["--allow-special-files", "--special-file-limit", "1000000", "/dev/zero"]);
    assert_eq!(code(&o), 2);
    assert!(stdout(&o).contains("more than 1000000 bytes"), "{}", stdout(&o));
    // A block device node, where this test may make one (root).
    let node = dir.join("disk.gguf");
    let made = Command::new("mknod").arg(&node).args(["b", "7", "200"]).status().is_ok_and(|s| s.success());
    if made {
        let o = run_in(&dir, &["disk.gguf"]);
        assert_eq!(code(&o), 2);
        assert!(stdout(&o).contains("block device"), "{}", stdout(&o));
    }
}

#[cfg(unix)]
fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo").arg(path).status().is_ok_and(|s| s.success())
}

#[cfg(unix)]
#[test]
fn a_fifo_never_hangs_the_run_and_the_other_files_are_reported() {
    let dir = TempDir::new("hostile-fifo");
    if !mkfifo(&dir.join("pipe.gguf")) {
        return;
    }
    std::fs::copy(root().join("corpus/gguf/y_base.gguf"), dir.join("a.gguf")).unwrap();
    std::fs::copy(root().join("corpus/gguf/n_key_empty.gguf"), dir.join("b.gguf")).unwrap();
    let o = run_in(&dir, &["a.gguf", "pipe.gguf", "b.gguf"]);
    assert_eq!(code(&o), 2);
    let out = stdout(&o);
    assert!(out.contains("a.gguf: valid"), "{out}");
    assert!(out.contains("pipe.gguf: ERROR cannot read the file: is a FIFO"), "{out}");
    assert!(out.contains("b.gguf: INVALID"), "{out}");
    // Allowed but with no writer: the time limit gives up on it, the
    // process exits although the read is still blocked, and JSON has it.
    let o = run_in(&dir, &["--allow-special-files", "--timeout", "1", "--format", "json", "a.gguf", "pipe.gguf"]);
    assert_eq!(code(&o), 2);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a complete JSON document");
    assert_eq!(v["files"][0]["valid"], true);
    assert!(v["files"][1]["error"].as_str().unwrap().contains("timed out"), "{v}");
}

#[cfg(unix)]
#[test]
fn an_allowed_fifo_with_a_writer_is_validated() {
    let dir = TempDir::new("hostile-fifo-writer");
    let pipe = dir.join("pipe.gguf");
    if !mkfifo(&pipe) {
        return;
    }
    let bytes = std::fs::read(root().join("corpus/gguf/y_base.gguf")).unwrap();
    let child = command()
        .args(["--allow-special-files", "--timeout", "60", "pipe.gguf"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::OpenOptions::new().write(true).open(&pipe).unwrap().write_all(&bytes).unwrap();
    let o = finish(child);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
}

#[test]
fn a_file_named_like_a_subcommand_or_option_cannot_hijack_the_command_line() {
    let dir = TempDir::new("hostile-hijack");
    std::fs::copy(root().join("corpus/gguf/y_base.gguf"), dir.join("dump")).unwrap();
    std::fs::copy(root().join("corpus/gguf/n_key_empty.gguf"), dir.join("bad.gguf")).unwrap();
    // What `gguf-validate *` expands to.
    let o = run_in(&dir, &["bad.gguf", "dump"]);
    assert_eq!(code(&o), 1, "not a subcommand when not first");
    let o = run_in(&dir, &["dump", "bad.gguf"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("both a subcommand and a file") && err.contains("./dump") && err.contains("--"), "{err}");
    assert_eq!(code(&run_in(&dir, &["--", "dump", "bad.gguf"])), 1);
    assert_eq!(code(&run_in(&dir, &["./dump", "bad.gguf"])), 1);
    // An option that is also a file name.
    std::fs::copy(root().join("corpus/gguf/y_base.gguf"), dir.join("--help")).unwrap();
    let o = run_in(&dir, &["--help", "bad.gguf"]);
    assert_eq!(code(&o), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("both an option and a file"));
}

#[cfg(unix)]
#[test]
fn file_names_cannot_forge_output_lines() {
    use std::os::unix::ffi::OsStrExt;
    let dir = TempDir::new("hostile-names");
    let forged = "x.gguf: valid\n\x1b[32mok\u{202e}.gguf";
    std::fs::copy(root().join("corpus/gguf/n_key_empty.gguf"), dir.join(forged)).unwrap();
    let raw = std::ffi::OsStr::from_bytes(b"bad\xff.gguf");
    std::fs::copy(root().join("corpus/gguf/n_key_empty.gguf"), dir.join(raw)).unwrap();
    let o = finish(
        command().arg(forged).arg(raw).current_dir(&dir).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap(),
    );
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    assert!(!out.contains('\x1b') && !out.contains('\u{202e}'), "{out:?}");
    assert!(!out.lines().any(|l| l == "x.gguf: valid"), "{out}");
    assert!(out.contains("x.gguf: valid\\n\\u{1b}[32mok\\u{202e}.gguf: INVALID"), "{out}");
    assert!(out.contains("bad\\xff.gguf: INVALID"), "{out}");
    // JSON: exact for UTF-8 paths (JSON escapes them), escaped otherwise.
    let o = finish(
        command()
            .args(["--format", "json"])
            .arg(forged)
            .arg(raw)
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["files"][0]["path"], forged);
    assert_eq!(v["files"][1]["path"], "bad\\xff.gguf");
}

#[test]
fn metadata_validation_of_a_large_sparse_file_reads_only_the_metadata() {
    // 4 GiB of declared data, sparse: validation (no --check-data) must not
    // read it, with or without the old --no-mmap flag.
    let dir = TempDir::new("hostile-large");
    let path = dir.join("large.gguf");
    tensors_file(&path, 1, 1 << 30, |_| 0, 4 << 30, &[]);
    for extra in [&[][..], &["--no-mmap"][..]] {
        let mut args = extra.to_vec();
        args.push("large.gguf");
        match peak_rss_kb(&dir, &args) {
            Some((rc, kb)) => {
                assert_eq!(rc, 0);
                assert!(kb < 100_000, "peak RSS {kb} kB for a 4 GiB file");
            }
            None => assert_eq!(code(&run_in(&dir, &args)), 0),
        }
    }
}

/// Peak RSS in kB of a run of the binary, when `/usr/bin/time` is there.
fn peak_rss_kb(dir: &Path, args: &[&str]) -> Option<(i32, u64)> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return None;
    }
    let mut c = Command::new(time);
    clean(&mut c).args(["-f", "maxrss_kb=%M"]).arg(&*BIN).args(args);
    let o = finish(c.current_dir(dir).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    let kb = err.lines().find_map(|l| l.strip_prefix("maxrss_kb="))?.trim().parse().ok()?;
    Some((code(&o), kb))
}

#[test]
fn many_keys_cost_a_small_multiple_of_the_file() {
    let dir = TempDir::new("hostile-keys");
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    for i in 0..500_000u32 {
        m.kv(&format!("bench.k{i}"), OwnedValue::U8(7));
    }
    let bytes = m.to_bytes();
    std::fs::write(dir.join("keys.gguf"), &bytes).unwrap();
    // 500,000 keys are past the default cap of 65,536 (`metadata-limit`):
    // raised here to measure what each parsed pair costs.
    let Some((rc, kb)) = peak_rss_kb(&dir, &["--max-metadata", "2GiB", "keys.gguf"]) else { return };
    assert_eq!(rc, 0);
    let file_kb = bytes.len() as u64 / 1024;
    // Metadata, one 72-byte entry per pair and a sort order: about 4x the
    // file (it was 7x), plus the process's own few MB.
    assert!(kb < 6 * file_kb + 8_000, "peak RSS {kb} kB for a {file_kb} kB file of 500,000 keys");
}

#[test]
fn many_unknown_type_ids_keep_the_summary_small() {
    let dir = TempDir::new("hostile-types");
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    for i in 0..20_000u32 {
        m.tensor(OwnedTensor {
            name: format!("t{i}").into_bytes(),
            dims: vec![32],
            type_id: 1_000 + i,
            offset: 0,
            data: Vec::new(),
        });
    }
    std::fs::write(dir.join("types.gguf"), m.to_bytes()).unwrap();
    let o = run_in(&dir, &["--format", "json", "types.gguf"]);
    assert_eq!(code(&o), 1);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let types = v["files"][0]["summary"]["tensor_types"].as_object().unwrap();
    assert!(types.len() <= gguf_validate_core::limits::MAX_SUMMARY_TYPE_KEYS + 1, "{} keys", types.len());
    let total: u64 = types.values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(total, 20_000, "every tensor counted");
    assert!(o.stdout.len() < 100_000, "{} bytes", o.stdout.len());
}
