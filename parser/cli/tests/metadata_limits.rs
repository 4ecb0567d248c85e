//! What a file's metadata may declare (`limits::MetadataLimits`,
//! `metadata-limit`): each cap at its boundary in memory with small caps,
//! then the declared sizes that used to take the tool down, as sparse files
//! made by the tests (a 1 TiB file whose first string claims 2^40 bytes,
//! 2^31 keys over 64 GiB, an array of 2^36 strings, 2^32-1 dimensions, a
//! run of 60 MiB strings) validated from disk and over HTTP from a loopback
//! server, each under a memory ceiling (`ulimit -v`) with its reads counted.

use gguf_validate_testkit as support;

use std::path::PathBuf;
use std::process::{Command, Output};

use gguf_validate_core::limits::{self, MetadataLimits};
use gguf_validate_core::types::ValueType;
use gguf_validate_core::write::{GgufModel, OwnedValue};
use gguf_validate_core::{Options, Profile, Validator};
use support::cli::{BIN, clean};
use support::root;
use support::tmp::TempDir;

/// Errors and warnings (infos aside) of `bytes` under `limits`.
fn rules_with(bytes: &[u8], limits: MetadataLimits) -> Vec<&'static str> {
    let opts = Options { limits, ..Options::new(Profile::Strict) };
    Validator::new(opts.clone())
        .validate_bytes(bytes)
        .report
        .diagnostics
        .iter()
        .filter(|d| d.severity != gguf_validate_core::rules::Level::Info)
        .map(|d| d.rule.id())
        .collect()
}

fn caps(f: impl FnOnce(&mut MetadataLimits)) -> MetadataLimits {
    let mut l = MetadataLimits::UNBOUNDED;
    f(&mut l);
    l
}

fn model(f: impl FnOnce(&mut GgufModel)) -> Vec<u8> {
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    f(&mut m);
    m.to_bytes()
}

/// The metadata's length (header, key/values, tensor infos) of a file
/// without tensors.
fn metadata_len(bytes: &[u8]) -> u64 {
    gguf_validate_core::parse::parse_bytes(bytes).unwrap().file.infos_end
}

#[test]
fn defaults_are_the_documented_ones_and_scale_together() {
    let d = MetadataLimits::default();
    assert_eq!(d, MetadataLimits::DEFAULT);
    assert_eq!(d.bytes, 256 << 20);
    assert_eq!((d.string_bytes, d.array_len, d.kv_count, d.tensor_count), (64 << 20, 16 << 20, 65_536, 262_144));
    assert_eq!(MetadataLimits::with_total(256 << 20), d);
    let big = MetadataLimits::with_total(1 << 30);
    assert_eq!(
        (big.string_bytes, big.array_len, big.kv_count, big.tensor_count),
        (256 << 20, 64 << 20, 262_144, 1 << 20)
    );
    let tiny = MetadataLimits::with_total(100);
    assert_eq!((tiny.bytes, tiny.kv_count, tiny.tensor_count), (100, 1, 1), "every cap at least 1");
    assert_eq!(Options::default().limits, d, "validation applies the defaults unless told otherwise");
}

#[test]
fn string_length_at_its_cap_and_one_past() {
    let bytes = model(|m| {
        m.kv("custom.s", OwnedValue::str("x".repeat(100).as_str()));
    });
    assert_eq!(rules_with(&bytes, caps(|l| l.string_bytes = 100)), Vec::<&str>::new());
    assert_eq!(rules_with(&bytes, caps(|l| l.string_bytes = 99)), vec!["metadata-limit"]);
    // Keys and tensor names are strings too.
    let long_key = format!("custom.{}", "k".repeat(93));
    let bytes = model(|m| {
        m.kv(&long_key, OwnedValue::U8(1));
    });
    assert_eq!(rules_with(&bytes, caps(|l| l.string_bytes = 100)), Vec::<&str>::new());
    assert_eq!(rules_with(&bytes, caps(|l| l.string_bytes = 99)), vec!["metadata-limit"]);
}

#[test]
fn string_arrays_are_held_to_the_string_cap_element_by_element() {
    let elems = vec![OwnedValue::str("a"), OwnedValue::str(&"b".repeat(40)), OwnedValue::str("c")];
    let bytes = model(|m| {
        m.kv("custom.list", OwnedValue::Array(ValueType::String, elems));
    });
    assert_eq!(rules_with(&bytes, caps(|l| l.string_bytes = 40)), Vec::<&str>::new());
    let opts = Options { limits: caps(|l| l.string_bytes = 39), ..Options::new(Profile::Strict) };
    let r = Validator::new(opts.clone()).validate_bytes(&bytes).report;
    let d = r.diagnostics.iter().find(|d| d.rule == "metadata-limit").expect("metadata-limit");
    assert_eq!(d.path, "kv[1] custom.list[1]", "the element that is over the cap");
    assert!(d.message.contains("string length 40 is over the limit of 39"), "{}", d.message);
}

#[test]
fn array_length_at_its_cap_and_one_past() {
    let array = |n: usize| OwnedValue::Array(ValueType::U8, vec![OwnedValue::U8(0); n]);
    let bytes = model(|m| {
        m.kv("custom.a", array(1000));
    });
    assert_eq!(rules_with(&bytes, caps(|l| l.array_len = 1000)), Vec::<&str>::new());
    assert_eq!(rules_with(&bytes, caps(|l| l.array_len = 999)), vec!["metadata-limit"]);
    // Nested arrays: every level is held to the cap.
    let nested = OwnedValue::Array(ValueType::Array, vec![array(3), array(5)]);
    let bytes = model(|m| {
        m.kv("custom.n", nested);
    });
    assert!(!rules_with(&bytes, caps(|l| l.array_len = 5)).contains(&"metadata-limit"));
    assert!(rules_with(&bytes, caps(|l| l.array_len = 4)).contains(&"metadata-limit"));
}

#[test]
fn key_and_tensor_counts_at_their_caps_and_one_past() {
    let bytes = model(|m| {
        for i in 0..9 {
            m.kv(&format!("custom.k{i}"), OwnedValue::U8(1));
        }
    });
    assert_eq!(rules_with(&bytes, caps(|l| l.kv_count = 10)), Vec::<&str>::new());
    assert_eq!(rules_with(&bytes, caps(|l| l.kv_count = 9)), vec!["metadata-limit"]);
    let bytes = model(|m| {
        for i in 0..4 {
            m.tensor(
                gguf_validate_core::write::OwnedTensor::zeroed(
                    &format!("t{i}"),
                    &[8],
                    gguf_validate_core::types::GgmlType::F32,
                )
                .unwrap(),
            );
        }
    });
    assert!(!rules_with(&bytes, caps(|l| l.tensor_count = 4)).contains(&"metadata-limit"));
    assert!(rules_with(&bytes, caps(|l| l.tensor_count = 3)).contains(&"metadata-limit"));
}

#[test]
fn total_metadata_at_its_cap_and_one_byte_under() {
    let bytes = model(|m| {
        for i in 0..20 {
            m.kv(&format!("custom.k{i:02}"), OwnedValue::str("some text"));
        }
    });
    let n = metadata_len(&bytes);
    assert_eq!(rules_with(&bytes, caps(|l| l.bytes = n)), Vec::<&str>::new());
    assert_eq!(rules_with(&bytes, caps(|l| l.bytes = n - 1)), vec!["metadata-limit"]);
}

/// Reading through a source: the buffer never grows past the cap, and the
/// verdict is the same whatever the first read's size.
#[test]
fn a_source_reads_no_more_than_the_cap() {
    use gguf_validate_core::io::{ByteSource, ReadError, SliceSource};
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Debug)]
    struct Counted<'a>(SliceSource<'a>, AtomicU64, u64);
    impl ByteSource for Counted<'_> {
        fn len(&self) -> u64 {
            self.0.len()
        }
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
            self.1.fetch_add(buf.len() as u64, Ordering::Relaxed);
            self.0.read_exact_at(offset, buf)
        }
        fn first_read(&self) -> u64 {
            self.2
        }
    }
    let bytes = model(|m| {
        for i in 0..2000 {
            m.kv(&format!("custom.k{i:04}"), OwnedValue::str("some text that takes room"));
        }
    });
    let n = metadata_len(&bytes);
    for first in [64, 4096, 1 << 20] {
        let cap = n / 2;
        let src = Counted(SliceSource(&bytes), AtomicU64::new(0), first);
        let opts = Options { limits: caps(|l| l.bytes = cap), ..Options::new(Profile::Strict) };
        let v = Validator::new(opts).validate(&src).unwrap();
        assert!(v.report.diagnostics.iter().any(|d| d.rule == "metadata-limit"), "first read {first}");
        assert!(v.metadata.len() as u64 <= cap, "buffer {} over the cap {cap}", v.metadata.len());
        assert!(src.1.load(Ordering::Relaxed) <= cap, "read {} bytes", src.1.load(Ordering::Relaxed));
    }
}

// ---- declared sizes in sparse files, from disk and over HTTP ----

/// A sparse file: `head` at offset 0, holes up to `len` (created by the
/// test in its own temporary directory, removed when dropped).
struct Sparse {
    path: PathBuf,
    _dir: TempDir,
}

impl Sparse {
    fn new(name: &str, parts: &[(u64, Vec<u8>)], len: u64) -> Sparse {
        use std::os::unix::fs::FileExt;
        let dir = TempDir::new("sparse");
        let path = dir.join(name);
        let f = std::fs::File::create(&path).unwrap();
        for (at, bytes) in parts {
            f.write_all_at(bytes, *at).unwrap();
        }
        f.set_len(len).unwrap_or_else(|e| panic!("this file system cannot hold a sparse file of {len} bytes: {e}"));
        Sparse { path, _dir: dir }
    }
}

fn header(tensors: u64, kvs: u64) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&tensors.to_le_bytes());
    b.extend_from_slice(&kvs.to_le_bytes());
    b
}

fn string(s: &[u8]) -> Vec<u8> {
    let mut b = (s.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(s);
    b
}

/// Bytes written at offsets of a sparse file.
type Parts = Vec<(u64, Vec<u8>)>;

/// The declared-size cases: name, parts, length, and the rule's path.
fn cases() -> Vec<(&'static str, Parts, u64, &'static str)> {
    let mut string_2_40 = header(0, 1);
    string_2_40.extend_from_slice(&(1u64 << 40).to_le_bytes());
    let mut array_2_36 = header(0, 1);
    array_2_36.extend(string(b"custom.list"));
    array_2_36.extend_from_slice(&9u32.to_le_bytes());
    array_2_36.extend_from_slice(&8u32.to_le_bytes());
    array_2_36.extend_from_slice(&(1u64 << 36).to_le_bytes());
    let mut dims = header(1, 0);
    dims.extend(string(b"t"));
    dims.extend_from_slice(&u32::MAX.to_le_bytes());
    // Eight 60 MiB strings: each under the string cap, 480 MiB in all.
    let mut strings = vec![(0, header(0, 8))];
    let mut at = 24u64;
    for i in 0..8u8 {
        let mut kv = string(&[b'k', b'0' + i]);
        kv.extend_from_slice(&8u32.to_le_bytes());
        kv.extend_from_slice(&(60u64 << 20).to_le_bytes());
        let len = kv.len() as u64;
        strings.push((at, kv));
        at += len + (60 << 20);
    }
    vec![
        ("string-2-40.gguf", vec![(0, string_2_40)], (1 << 40) + 4096, "kv[0]"),
        ("kvs-2-31.gguf", vec![(0, header(0, 1 << 31))], 64 << 30, "header.kv_count"),
        ("array-2-36.gguf", vec![(0, array_2_36)], (1 << 39) + (1 << 30), "kv[0] custom.list"),
        ("dims-2-32.gguf", vec![(0, dims)], 64 << 30, "tensor[0] t/ne"),
        ("strings-480m.gguf", strings, 8 << 30, "kv[4] k4"),
    ]
}

/// The CLI under a 1 GiB address-space ceiling: an allocation sized by a
/// declared count would abort it.
fn run_bounded(args: &[&str]) -> Output {
    let mut script = format!("ulimit -v {}; exec '{}'", 1 << 20, *BIN);
    for a in args {
        script.push_str(&format!(" '{a}'"));
    }
    clean(&mut Command::new("sh"))
        .arg("-c")
        .arg(script)
        .current_dir(root())
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap()
}

fn metadata_limit_of(out: &Output) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = &v["files"][0];
    assert_eq!(file["valid"], false);
    let d = file["diagnostics"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{d:?}");
    d[0].clone()
}

#[test]
fn sparse_files_declaring_huge_sizes_stop_at_the_caps_from_disk() {
    for (name, parts, len, path) in cases() {
        let f = Sparse::new(name, &parts, len);
        let started = std::time::Instant::now();
        let out = run_bounded(&["--format", "json", f.path.to_str().unwrap()]);
        let d = metadata_limit_of(&out);
        assert_eq!(d["rule"], "metadata-limit", "{name}: {d}");
        assert_eq!(d["path"], path, "{name}");
        // Generous: the point is minutes and gigabytes before the caps.
        assert!(started.elapsed().as_secs() < 30, "{name} took {:?}", started.elapsed());
        // `hash` reads the metadata under the same caps: a clear refusal.
        let out = run_bounded(&["hash", f.path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn raising_the_cap_lets_a_larger_metadata_through_and_lowering_it_stops_it() {
    // Five 60 MiB strings: 300 MiB of metadata, past the default total.
    let parts: Vec<_> = cases()[4].1.iter().take(6).cloned().collect();
    let mut parts = parts;
    parts[0].1[16..24].copy_from_slice(&5u64.to_le_bytes());
    let f = Sparse::new("strings-300m.gguf", &parts, 8 << 30);
    let path = f.path.to_str().unwrap();
    let d = metadata_limit_of(&run_bounded(&["--format", "json", path]));
    assert_eq!(d["path"], "kv[4] k4", "the default stops at the fifth: {d}");
    let out = run_bounded(&["--format", "json", "--max-metadata", "512MiB", path]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&str> =
        v["files"][0]["diagnostics"].as_array().unwrap().iter().map(|d| d["rule"].as_str().unwrap()).collect();
    assert!(!rules.contains(&"metadata-limit"), "{rules:?}");
    // 100 MiB: strings are capped at 25 MiB, so the first is refused.
    let d = metadata_limit_of(&run_bounded(&["--format", "json", "--max-metadata", "100M", path]));
    assert_eq!(d["path"], "kv[0] k0", "{d}");
    assert!(d["message"].as_str().unwrap().contains("string length 62914560 is over the limit of 25000000"), "{d}");
    let out = run_bounded(&["--max-metadata", "12x", path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a size"));
}

#[cfg(feature = "remote")]
#[test]
fn a_server_declaring_huge_sizes_costs_no_more_than_the_caps() {
    use support::http::{Answer, Body, File, Server};
    let server = Server::start();
    let mut sparse = Vec::new();
    for (name, parts, len, path) in cases() {
        let f = Sparse::new(name, &parts, len);
        server.route(&format!("/{name}"), Answer::File(File::of(Body::Disk { path: f.path.clone(), len })));
        sparse.push((f, name, path));
    }
    for (_f, name, path) in &sparse {
        server.clear_log();
        let url = server.url(&format!("/{name}"));
        let out = run_bounded(&["--format", "json", &url]);
        let d = metadata_limit_of(&out);
        assert_eq!(d["rule"], "metadata-limit", "{name}: {d}");
        assert_eq!(d["path"], *path, "{name}");
        let log = server.log();
        let bytes: u64 = log.iter().map(|l| l.body_bytes).sum();
        assert!(bytes <= limits::MAX_METADATA_BYTES, "{name}: {bytes} bytes fetched");
        if *name != "strings-480m.gguf" {
            // Declared sizes are refused from the first read.
            assert_eq!(log.len(), 1, "{name}: {} requests", log.len());
            assert!(bytes <= limits::REMOTE_FIRST_READ, "{name}: {bytes} bytes fetched");
        }
    }
}
