//! `gguf-validate edit FILE -o OUT`: typed `--set`, `--remove`,
//! `--chat-template`, `--pre-tokenizer`, `--special-token`; the changes and
//! the tensor-data digest before and after in the report; refusals that
//! write nothing (no OUT, no temporary file left behind); `--force`.

use gguf_validate_testkit as support;

use std::path::{Path, PathBuf};
use std::process::Output;

use gguf_validate_core::parse::parse_bytes;
use gguf_validate_core::rewrite::value_of;
use gguf_validate_core::write::OwnedValue;
use support::cli::{code, command, json, stderr, stdout};
use support::root;
use support::tmp::TempDir;

const TINY: &str = "corpus/samples/tiny-llama.gguf";
const QWEN2: &str = "corpus/models/qwen2__complete.gguf";

fn input(rel: &str) -> PathBuf {
    root().join(rel)
}

/// `gguf-validate edit FILE -o OUT ARGS`.
fn edit(file: &Path, out: &Path, args: &[&str]) -> Output {
    command().arg("edit").arg(file).arg("-o").arg(out).args(args).output().expect("run gguf-validate")
}

/// The value of `key` in the GGUF file at `path`.
fn value(path: &Path, key: &str) -> Option<OwnedValue> {
    let bytes = std::fs::read(path).ok()?;
    let parsed = parse_bytes(&bytes)?;
    value_of(&parsed, key)
}

/// `hash --algo sha256 --no-layer`'s digest of a file.
fn sha256(path: &Path) -> String {
    let o = command().args(["hash", "--algo", "sha256", "--no-layer"]).arg(path).output().expect("run hash");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o).split_whitespace().nth(1).unwrap_or_default().to_string()
}

/// The files in `dir` (a refused edit leaves none).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn set_types_values_by_prefix_and_by_the_keys_well_known_type() {
    let dir = TempDir::new("edit-set");
    let out = dir.join("out.gguf");
    let o = edit(
        &input(TINY),
        &out,
        &[
            "--set",
            "general.name=Renamed",
            "--set",
            "general.description=str:u32:not a number",
            "--set",
            "x.count=u32:7",
            "--set",
            "x.delta=i32:-3",
            "--set",
            "x.scale=f32:0.25",
            "--set",
            "x.flag=bool:true",
            "--set",
            "llama.context_length=4096",
        ],
    );
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(value(&out, "general.name"), Some(OwnedValue::str("Renamed")));
    assert_eq!(value(&out, "general.description"), Some(OwnedValue::str("u32:not a number")));
    assert_eq!(value(&out, "x.count"), Some(OwnedValue::U32(7)));
    assert_eq!(value(&out, "x.delta"), Some(OwnedValue::I32(-3)));
    assert_eq!(value(&out, "x.scale"), Some(OwnedValue::F32(0.25)));
    assert_eq!(value(&out, "x.flag"), Some(OwnedValue::Bool(1)));
    assert_eq!(value(&out, "llama.context_length"), Some(OwnedValue::U32(4096)));
    let text = stdout(&o);
    assert!(text.contains("general.name: string \"tiny llama\" -> string \"Renamed\""), "{text}");
    assert!(text.contains("x.count: (absent) -> u32 7"), "{text}");
    assert!(text.contains("(unchanged)"), "{text}");
    assert_eq!(sha256(&out), sha256(&input(TINY)));
    assert_eq!(listing(&dir), ["out.gguf"]);
}

#[test]
fn remove_chat_template_pre_tokenizer_and_special_tokens() {
    let dir = TempDir::new("edit-keys");
    let template = dir.join("t.jinja");
    std::fs::write(&template, "{% for m in messages %}{{ m['content'] }}{% endfor %}").unwrap();
    let out = dir.join("out.gguf");
    let o = edit(
        &input(QWEN2),
        &out,
        &[
            "--remove",
            "general.name",
            "--chat-template",
            template.to_str().unwrap(),
            "--pre-tokenizer",
            "qwen2",
            "--special-token",
            "eot=1",
            "--special-token",
            "pad=0",
            "--format",
            "json",
        ],
    );
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(value(&out, "general.name"), None);
    assert_eq!(
        value(&out, "tokenizer.chat_template"),
        Some(OwnedValue::str("{% for m in messages %}{{ m['content'] }}{% endfor %}"))
    );
    assert_eq!(value(&out, "tokenizer.ggml.pre"), Some(OwnedValue::str("qwen2")));
    assert_eq!(value(&out, "tokenizer.ggml.eot_token_id"), Some(OwnedValue::U32(1)));
    assert_eq!(value(&out, "tokenizer.ggml.padding_token_id"), Some(OwnedValue::U32(0)));
    let doc = json(&o);
    assert_eq!(doc["written"], true);
    assert_eq!(doc["valid"], true);
    let removed = doc["changes"].as_array().unwrap().iter().find(|c| c["key"] == "general.name").cloned();
    assert!(removed.as_ref().is_some_and(|c| c["after"].is_null() && c["before"]["type"] == "string"), "{removed:?}");
    let td = &doc["tensor_data"];
    assert_eq!(td["algorithm"], "sha256");
    assert_eq!(td["before"], td["after"]);
    assert_eq!(td["unchanged"], true);
    assert_eq!(td["before"].as_str().unwrap(), sha256(&input(QWEN2)));
    assert_eq!(td["after"].as_str().unwrap(), sha256(&out));
    assert_eq!(doc["report"]["valid"], true);
    // The result validates as the command said.
    let v = command().arg(&out).output().unwrap();
    assert_eq!(code(&v), 0, "{}", stdout(&v));
}

#[test]
fn the_digest_is_equal_when_the_metadata_grows_and_shrinks() {
    let dir = TempDir::new("edit-digest");
    let grown = dir.join("grown.gguf");
    let long = format!("general.description={}", "a long description ".repeat(400));
    let o = edit(&input(QWEN2), &grown, &["--set", &long, "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    assert!(doc["tensor_data"]["data_start"]["after"].as_u64() > doc["tensor_data"]["data_start"]["before"].as_u64());
    let shrunk = dir.join("shrunk.gguf");
    let o = edit(&grown, &shrunk, &["--remove", "general.description", "--remove", "general.name", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    assert!(doc["tensor_data"]["data_start"]["after"].as_u64() < doc["tensor_data"]["data_start"]["before"].as_u64());
    let base = sha256(&input(QWEN2));
    assert_eq!(sha256(&grown), base);
    assert_eq!(sha256(&shrunk), base);
    assert!(std::fs::metadata(&grown).unwrap().len() > std::fs::metadata(&shrunk).unwrap().len());
}

#[test]
fn refusals_write_nothing() {
    let dir = TempDir::new("edit-refuse");
    let out = dir.join("out.gguf");
    let tiny = input(TINY);
    let cases: [(&[&str], &str); 10] = [
        (&["--set", "general.alignment=u32:64"], "alignment"),
        (&["--set", "x.count=7"], "prefix"),
        (&["--set", "x.count=u32:-1"], "not a u32"),
        (&["--set", "no-equals-sign"], "KEY=VALUE"),
        (&["--remove", "no.such.key"], "no such key"),
        (&["--pre-tokenizer", "not-a-pre-tokenizer"], "llama-bpe"),
        (&["--special-token", "eos=100000"], "outside the vocabulary"),
        (&["--special-token", "nope=1"], "fim_pre"),
        (&["--set", "general.name=a", "--remove", "general.name"], "changed twice"),
        (&[], "nothing to change"),
    ];
    for (args, says) in cases {
        let o = edit(&tiny, &out, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(listing(&dir).is_empty(), "{args:?}: {:?}", listing(&dir));
    }
    // OUT is FILE: refused, FILE unchanged.
    let copy = dir.join("m.gguf");
    std::fs::copy(&tiny, &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let o = edit(&copy, &copy, &["--set", "general.name=x"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is the input itself"), "{}", stderr(&o));
    let o = edit(&copy, &dir.join(".").join("m.gguf"), &["--set", "general.name=x"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    assert_eq!(listing(&dir), ["m.gguf"]);
    // Not a GGUF file.
    let junk = dir.join("junk.bin");
    std::fs::write(&junk, b"not a model").unwrap();
    let o = edit(&junk, &out, &["--set", "general.name=x"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(listing(&dir), ["junk.bin", "m.gguf"]);
}

#[test]
fn an_invalid_result_is_refused_unless_forced() {
    let dir = TempDir::new("edit-force");
    let out = dir.join("out.gguf");
    // An id outside the vocabulary, set as a raw value: token-id-range, an
    // error under strict.
    let args = ["--set", "tokenizer.ggml.eos_token_id=99999"];
    let o = edit(&input(TINY), &out, &args);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("token-id-range"), "{}", stdout(&o));
    assert!(stderr(&o).contains("nothing was written"), "{}", stderr(&o));
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
    let o = edit(&input(TINY), &out, &[&args[..], &["--format", "json"]].concat());
    assert_eq!(code(&o), 1);
    assert_eq!(json(&o)["written"], false);
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));
    // --allow lowers the rule: written, exit 0.
    let o = edit(&input(TINY), &out, &[&args[..], &["--allow", "token-id-range"]].concat());
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    std::fs::remove_file(&out).unwrap();
    // --force writes it, and still exits 1: the file is invalid.
    let o = edit(&input(TINY), &out, &[&args[..], &["--force", "--format", "json"]].concat());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["written"], true);
    assert_eq!(doc["valid"], false);
    assert_eq!(doc["tensor_data"]["unchanged"], true);
    assert_eq!(listing(&dir), ["out.gguf"]);
    assert_eq!(value(&out, "tokenizer.ggml.eos_token_id"), Some(OwnedValue::U32(99999)));
    let v = command().arg(&out).output().unwrap();
    assert_eq!(code(&v), 1);
}

#[test]
fn an_existing_out_is_replaced_only_by_a_complete_valid_result() {
    let dir = TempDir::new("edit-replace");
    let out = dir.join("out.gguf");
    std::fs::write(&out, b"previous").unwrap();
    // Refused: the previous OUT stays as it was.
    let o = edit(&input(TINY), &out, &["--set", "tokenizer.ggml.eos_token_id=99999"]);
    assert_eq!(code(&o), 1);
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");
    let o = edit(&input(TINY), &out, &["--set", "general.name=new"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(value(&out, "general.name"), Some(OwnedValue::str("new")));
    assert_eq!(listing(&dir), ["out.gguf"]);
}

/// A BPE vocabulary without `tokenizer.ggml.pre` is a warning that names
/// `edit --pre-tokenizer`; the edit it names takes the warning away and
/// leaves the tensor data as it was.
#[test]
fn the_missing_pre_tokenizer_warning_names_the_edit_that_removes_it() {
    let file = input("corpus/gguf/y_tokenizer_bpe_no_pre.gguf");
    let o = command().args(["--no-config", "--format", "json"]).arg(&file).output().expect("run");
    let v = json(&o);
    let rules = |v: &serde_json::Value| -> Vec<String> {
        v["files"][0]["diagnostics"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|d| format!("{}:{}", d["severity"].as_str().unwrap_or(""), d["rule"].as_str().unwrap_or("")))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(rules(&v).contains(&"warning:tokenizer-pre-missing".to_string()), "{:?}", rules(&v));
    let msg = v["files"][0]["diagnostics"]
        .as_array()
        .and_then(|a| a.iter().find(|d| d["rule"] == "tokenizer-pre-missing"))
        .map(|d| d["message"].to_string());
    assert!(msg.unwrap_or_default().contains("--pre-tokenizer NAME"));
    let tmp = TempDir::new("edit-pre");
    let out = tmp.path().join("fixed.gguf");
    let o = edit(&file, &out, &["--pre-tokenizer", "qwen2"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = command().args(["--no-config", "--format", "json"]).arg(&out).output().expect("run");
    let after = rules(&json(&o));
    assert!(
        !after.iter().any(|r| r.contains("tokenizer-pre-missing"))
            && !after.iter().any(|r| r.starts_with("warning:") || r.starts_with("error:")),
        "{after:?}"
    );
    assert_eq!(sha256(&file), sha256(&out));
}

/// `--in-place` replaces FILE only by renaming a complete, validated and
/// synced file over it: the process killed at seeded moments (a bounded
/// number of runs, spread over an uninterrupted run's time) leaves FILE
/// either byte for byte as it was or completely edited, never in between.
#[test]
fn an_interrupted_in_place_edit_leaves_the_file_intact() {
    let m = big_model();
    interrupted_in_place(
        "edit-in-place",
        &m.to_bytes(),
        &["edit", "--in-place", "--set", "general.name=str:after"],
        54,
    );
}

/// The same for `fix --in-place` (bytes after the data: the tensor data
/// laid out again, every tensor copied on its own).
#[test]
fn an_interrupted_in_place_fix_leaves_the_file_intact() {
    let mut m = big_model();
    m.trailing = b"appended by a tool".to_vec();
    interrupted_in_place("fix-in-place", &m.to_bytes(), &["fix", "--in-place"], 55);
}

/// 32 MiB of tensor data, so that the copy takes a moment.
fn big_model() -> gguf_validate_core::write::GgufModel {
    use gguf_validate_core::types::GgmlType;
    use gguf_validate_core::write::{GgufModel, OwnedTensor};
    let mut m = GgufModel::new();
    m.kv("general.architecture", OwnedValue::str("plain"));
    m.kv("general.name", OwnedValue::str("before"));
    m.tensor(OwnedTensor::zeroed("big", &[4096, 2048], GgmlType::F32).expect("tensor"));
    m.canonical();
    m
}

fn interrupted_in_place(name: &str, original: &[u8], args: &[&str], seed: u64) {
    use gguf_validate_core::seeded::SplitMix64;
    let tmp = TempDir::new(name);
    let path = tmp.path().join("model.gguf");
    let run = |path: &Path| {
        let (sub, rest) = args.split_first().expect("a subcommand");
        command().arg(sub).arg(path).args(rest).stdout(std::process::Stdio::null()).spawn().expect("run gguf-validate")
    };
    // one uninterrupted run: how long it takes, and what it writes
    std::fs::write(&path, original).unwrap();
    let t0 = std::time::Instant::now();
    let status = run(&path).wait().unwrap();
    let full = t0.elapsed();
    assert!(status.success());
    let edited = std::fs::read(&path).unwrap();
    assert!(edited != original, "{args:?} changed nothing");
    let mut rng = SplitMix64::new(seed);
    let (mut intact, mut done) = (0, 0);
    for _ in 0..12 {
        std::fs::write(&path, original).unwrap();
        let at = std::time::Duration::from_micros(rng.below(u64::try_from(full.as_micros()).unwrap_or(1).max(1)));
        let mut child = run(&path);
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        let now = std::fs::read(&path).unwrap();
        if now == original {
            intact += 1;
        } else {
            assert!(now == edited, "killed after {at:?}: the file is neither the original nor the edited one");
            done += 1;
        }
        // a killed run leaves at most its temporary file, named for FILE, beside it
        for name in listing(tmp.path()) {
            assert!(
                name == "model.gguf" || (name.starts_with(".model.gguf.edit-") && name.ends_with(".tmp")),
                "{name}"
            );
        }
    }
    assert_eq!(intact + done, 12);
    assert!(intact > 0, "no kill came before the rename ({done} runs finished)");
}

/// `--chat-template NAME=FILE`: the spec's named template
/// (`tokenizer.chat_template.NAME`), its name listed in
/// `tokenizer.chat_templates` once; a bad name is refused.
#[test]
fn a_named_chat_template_is_set_and_listed() {
    let dir = TempDir::new("edit-named-template");
    let template = dir.join("tools.jinja");
    std::fs::write(&template, "{% for m in messages %}{{ m['content'] }}{% endfor %}").unwrap();
    let out = dir.join("out.gguf");
    let named = format!("tool_use={}", template.display());
    let o =
        edit(&input(TINY), &out, &["--chat-template", &named, "--chat-template", &named.replace("tool_use", "rag")]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        value(&out, "tokenizer.chat_template.tool_use"),
        Some(OwnedValue::str("{% for m in messages %}{{ m['content'] }}{% endfor %}"))
    );
    assert_eq!(
        value(&out, "tokenizer.chat_templates"),
        Some(OwnedValue::Array(
            gguf_validate_core::types::ValueType::String,
            vec![OwnedValue::str("tool_use"), OwnedValue::str("rag")]
        ))
    );
    // The file as a whole is a plain template (a path with `=` that exists).
    let odd = dir.join("a=b.jinja");
    std::fs::write(&odd, "{{ 1 }}").unwrap();
    let o = edit(&input(TINY), &dir.join("plain.gguf"), &["--chat-template", odd.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(value(&dir.join("plain.gguf"), "tokenizer.chat_template"), Some(OwnedValue::str("{{ 1 }}")));
}
