//! `gguf-validate hash`: byte-for-byte equal to llama.cpp's llama-gguf-hash
//! (golden output in `corpus/hash/`), digests equal to ones computed here
//! over the tensors' byte ranges, manifests that catch a tampered tensor,
//! digests that ignore metadata, and split sets hashed as one model.

use gguf_validate_testkit as support;

use std::path::Path;
use std::process::{Command, Output};

use gguf_validate_core::write::{GgufModel, OwnedValue};
use sha2::Digest as _;
use support::cli::{code, command, stderr, stdout};
use support::root;
use support::tmp::TempDir;

/// `gguf-validate hash ARGS` in `dir`.
fn hash_in(dir: &Path, args: &[&str]) -> Output {
    command().arg("hash").args(args).current_dir(dir).output().expect("run gguf-validate")
}

/// `gguf-validate hash ARGS` in the workspace root.
fn hash(args: &[&str]) -> Output {
    hash_in(root(), args)
}

const TINY: &str = "corpus/gguf-py/llama_tiny.gguf";

/// The golden files and the llama-gguf-hash flags that made them (see
/// corpus/hash/README.md); our flags differ only in spelling.
const TINY_GOLDEN: [(&str, &[&str]); 6] = [
    ("xxh64", &[]),
    ("sha1", &["--algo", "sha1"]),
    ("sha256", &["--algo", "sha256"]),
    ("uuid", &["--uuid"]),
    ("all", &["--all"]),
    ("all-uuid-no-layer", &["--all", "--uuid", "--no-layer"]),
];

#[test]
fn output_is_llama_gguf_hash_byte_for_byte() {
    for (name, flags) in TINY_GOLDEN {
        let mut args = flags.to_vec();
        args.push(TINY);
        let o = hash(&args);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let golden = std::fs::read(root().join(format!("corpus/hash/llama_tiny.{name}.txt"))).unwrap();
        assert!(o.stdout == golden, "{name}:\n{}\nwant:\n{}", stdout(&o), String::from_utf8_lossy(&golden));
    }
}

/// gemma-3-270m (253 MB), when `GGUF_VALIDATE_GEMMA` points at it (CI).
#[test]
#[ignore = "needs the reference files: source .ci/reference.sh && fetch_reference, then cargo test -- --ignored"]
fn gemma_is_llama_gguf_hash_byte_for_byte() {
    let path = support::reference::gemma();
    let dir = path.parent().unwrap();
    let file = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(file, "gemma-3-270m-q4_k_m.gguf", "the golden files name the file so");
    // One pass with every algorithm; its lines are the per-algorithm
    // golden files interleaved: per tensor xxh64, sha1, sha256, then the
    // whole-model lines in that order and uuid.
    let golden: Vec<Vec<String>> = ["xxh64", "sha1", "sha256", "uuid"]
        .iter()
        .map(|a| {
            let text =
                std::fs::read_to_string(root().join(format!("corpus/hash/gemma-3-270m-q4_k_m.{a}.txt"))).unwrap();
            text.lines().map(|l| format!("{l}\n")).collect()
        })
        .collect();
    let n = golden[0].len() - 1;
    let mut want = String::new();
    for i in 0..=n {
        golden[..3].iter().for_each(|g| want.push_str(&g[i]));
    }
    want.push_str(&golden[3][0]);
    let o = hash_in(dir, &["--all", "--uuid", file]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o) == want, "differs from llama-gguf-hash");
}

/// Name and absolute byte range of each tensor, through the data scan's
/// view of the file (not the hash module's).
fn ranges(bytes: &[u8]) -> Vec<(String, std::ops::Range<usize>)> {
    let ts = gguf_validate_core::Validator::default().validate_bytes(bytes).layout().tensors;
    ts.iter().map(|t| (t.name.clone(), t.offset as usize..(t.offset + t.nbytes) as usize)).collect()
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn digests_are_those_of_each_tensors_bytes() {
    let bytes = std::fs::read(root().join(TINY)).unwrap();
    let o = hash(&["--algo", "sha256", TINY]);
    assert_eq!(code(&o), 0);
    let mut want = String::new();
    let mut all = sha2::Sha256::new();
    for (name, r) in ranges(&bytes) {
        want.push_str(&format!("sha256    {}  {TINY}:{name}\n", hex(&sha2::Sha256::digest(&bytes[r.clone()]))));
        all.update(&bytes[r]);
    }
    want.push_str(&format!("sha256    {}  {TINY}\n", hex(&all.finalize())));
    assert_eq!(stdout(&o), want);
}

/// `sha256sum` over a `dd`-extracted range (where both tools exist).
#[test]
fn a_tensor_digest_equals_sha256sum_of_its_bytes() {
    let bytes = std::fs::read(root().join(TINY)).unwrap();
    let (name, r) = ranges(&bytes).into_iter().max_by_key(|(_, r)| r.len()).unwrap();
    let dir = TempDir::new("hash-dd");
    let out = dir.join("tensor.bin");
    let dd = Command::new("dd")
        .arg(format!("if={}", root().join(TINY).display()))
        .arg(format!("of={}", out.display()))
        .args(["bs=1", &format!("skip={}", r.start), &format!("count={}", r.len()), "status=none"])
        .status();
    let sum = Command::new("sha256sum").arg(&out).output();
    let (Ok(dd), Ok(sum)) = (dd, sum) else { return };
    assert!(dd.success());
    let sum = String::from_utf8(sum.stdout).unwrap();
    let o = hash(&["--algo", "sha256", TINY]);
    let line = stdout(&o).lines().find(|l| l.ends_with(&format!(":{name}"))).unwrap().to_string();
    assert_eq!(line.split_whitespace().nth(1), sum.split_whitespace().next(), "{name}");
}

#[test]
fn text_output_snapshot() {
    let o = hash(&["--all", "--uuid", TINY]);
    assert_eq!(code(&o), 0);
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn editing_metadata_leaves_the_digests_unchanged() {
    let bytes = std::fs::read(root().join(TINY)).unwrap();
    let parsed = gguf_validate_core::parse::parse_bytes(&bytes).unwrap();
    let mut m = GgufModel::from_parsed(&parsed, &bytes);
    m.kv("general.name", OwnedValue::str("renamed"));
    m.kv("x.padding", OwnedValue::str(&"z".repeat(5000)));
    let edited = m.canonical().unwrap().to_bytes();
    assert_ne!(ranges(&edited)[0].1.start, ranges(&bytes)[0].1.start, "the data moved");
    let dir = TempDir::new("hash-meta");
    std::fs::copy(root().join(TINY), dir.join("a.gguf")).unwrap();
    std::fs::write(dir.join("b.gguf"), &edited).unwrap();
    let a = stdout(&hash_in(&dir, &["--all", "--uuid", "a.gguf"]));
    let b = stdout(&hash_in(&dir, &["--all", "--uuid", "b.gguf"]));
    assert_eq!(a.replace("a.gguf", "b.gguf"), b);
}

#[test]
fn check_passes_and_names_a_tampered_tensor() {
    let dir = TempDir::new("hash-check");
    let model = dir.join("model.gguf");
    std::fs::copy(root().join(TINY), &model).unwrap();
    let manifest = dir.join("model.manifest");
    let o = hash_in(&dir, &["--all", "--uuid", "model.gguf"]);
    std::fs::write(&manifest, &o.stdout).unwrap();

    let o = hash_in(&dir, &["--check", "model.manifest", "model.gguf"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "model.gguf: OK (xxh64, sha1, sha256, uuid: 37 digests match)\n");

    // One byte of one tensor changed.
    let mut bytes = std::fs::read(&model).unwrap();
    let (name, r) = ranges(&bytes).into_iter().nth(3).unwrap();
    bytes[r.start + 5] ^= 0x40;
    std::fs::write(&model, &bytes).unwrap();
    let o = hash_in(&dir, &["--check", "model.manifest", "model.gguf"]);
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    for algo in ["xxh64", "sha1", "sha256"] {
        assert!(out.contains(&format!("model.gguf: {algo} MISMATCH tensor `{name}`")), "{out}");
    }
    assert!(out.contains("uuid MISMATCH whole model"), "{out}");
    assert!(out.ends_with("model.gguf: FAILED (xxh64, sha1, sha256, uuid: 7 mismatched, 0 missing from the file, 0 not in the manifest, 30 match)\n"), "{out}");
    insta::assert_snapshot!("check_tampered", out);

    // --no-layer compares the whole-model digests only.
    let o = hash_in(&dir, &["--check", "model.manifest", "--no-layer", "model.gguf"]);
    assert_eq!(code(&o), 1);
    assert_eq!(stdout(&o).lines().filter(|l| l.contains("MISMATCH whole model")).count(), 4, "{}", stdout(&o));
    assert!(!stdout(&o).contains("tensor"), "{}", stdout(&o));

    // A moved file is still checked against a one-model manifest.
    std::fs::create_dir_all(dir.join("moved")).unwrap();
    std::fs::copy(root().join(TINY), dir.join("moved/renamed.gguf")).unwrap();
    let o = hash_in(&dir, &["-c", "model.manifest", "moved/renamed.gguf"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
}

#[test]
fn check_reports_missing_and_extra_tensors() {
    let dir = TempDir::new("hash-missing");
    std::fs::copy(root().join(TINY), dir.join("m.gguf")).unwrap();
    let text = stdout(&hash_in(&dir, &["--algo", "sha256", "m.gguf"]));
    let dropped = text.lines().nth(2).unwrap().rsplit_once(':').unwrap().1.to_string();
    let mut edited: String = text.lines().enumerate().filter(|(i, _)| *i != 2).map(|(_, l)| format!("{l}\n")).collect();
    edited.push_str(&format!("sha256    {}  m.gguf:blk.9.not_here\n", "0".repeat(64)));
    std::fs::write(dir.join("m.manifest"), edited).unwrap();
    let o = hash_in(&dir, &["--check", "m.manifest", "m.gguf"]);
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    assert!(out.contains("m.gguf: sha256 tensor `blk.9.not_here` is in the manifest but not in the file"), "{out}");
    assert!(
        out.contains(&format!("m.gguf: sha256 tensor `{dropped}` is in the file but not in the manifest")),
        "{out}"
    );
}

#[test]
fn unreadable_files_and_manifests_exit_2() {
    let dir = TempDir::new("hash-unreadable");
    let o = hash_in(&dir, &["does-not-exist.gguf"]);
    assert_eq!(code(&o), 2);
    // A tensor past the end of the file is an error, not a read.
    let bytes = std::fs::read(root().join(TINY)).unwrap();
    std::fs::write(dir.join("cut.gguf"), &bytes[..bytes.len() - 100]).unwrap();
    let o = hash_in(&dir, &["cut.gguf"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("lie past the end of the file"), "{}", stderr(&o));
    std::fs::write(dir.join("bad.manifest"), "sha256  nothex  m.gguf\n").unwrap();
    std::fs::copy(root().join(TINY), dir.join("m.gguf")).unwrap();
    let o = hash_in(&dir, &["--check", "bad.manifest", "m.gguf"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("bad.manifest: line 1: `nothex` is not a sha256 digest"), "{}", stderr(&o));
    let o = hash_in(&dir, &["--check", "none.manifest", "m.gguf"]);
    assert_eq!(code(&o), 2);
    let o = hash_in(&dir, &["--check", "m.gguf", "m.gguf"]);
    assert_eq!(code(&o), 2, "a GGUF file is no manifest");
}

#[test]
fn a_split_set_is_hashed_as_one_model() {
    let bytes = std::fs::read(root().join(TINY)).unwrap();
    let parsed = gguf_validate_core::parse::parse_bytes(&bytes).unwrap();
    let whole = GgufModel::from_parsed(&parsed, &bytes);
    let dir = TempDir::new("hash-split");
    std::fs::write(dir.join("merged.gguf"), &bytes).unwrap();
    // Three shards of 4, 4 and 3 tensors (gguf-split keeps the metadata in all).
    assert_eq!(whole.tensors.len(), 11);
    for (k, tensors) in whole.tensors.chunks(4).enumerate() {
        let mut shard = whole.clone();
        shard.tensors = tensors.to_vec();
        shard.kv("split.no", OwnedValue::U16(k as u16));
        shard.kv("split.count", OwnedValue::U16(3));
        std::fs::write(dir.join(format!("m-{:05}-of-00003.gguf", k + 1)), shard.canonical().unwrap().to_bytes())
            .unwrap();
    }
    let merged = stdout(&hash_in(&dir, &["--all", "--uuid", "merged.gguf"]));
    let set = hash_in(&dir, &["--all", "--uuid", "m-00002-of-00003.gguf", "m-00001-of-00003.gguf"]);
    assert_eq!(code(&set), 0, "{}", stderr(&set));
    assert_eq!(stdout(&set), merged.replace("merged.gguf", "m-00001-of-00003.gguf"), "one model, named once");
    // Each shard on its own, as llama-gguf-hash does.
    let o = hash_in(&dir, &["--no-split", "m-00001-of-00003.gguf", "m-00003-of-00003.gguf"]);
    assert_eq!(stdout(&o).lines().count(), 5 + 4);
    // A manifest of the merged file checks the set.
    std::fs::write(dir.join("merged.manifest"), &merged).unwrap();
    let o = hash_in(&dir, &["--check", "merged.manifest", "m-00001-of-00003.gguf"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    std::fs::remove_file(dir.join("m-00003-of-00003.gguf")).unwrap();
    let o = hash_in(&dir, &["m-00001-of-00003.gguf"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("shard of the split set m-00001-of-00003.gguf is missing"), "{}", stderr(&o));
}
