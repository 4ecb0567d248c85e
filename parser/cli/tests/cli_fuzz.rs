//! `fuzz-writer`, `fuzz-quantizer` and `write-model` from the command
//! line: exit statuses, the own writer clean, a broken writer found with
//! its reproducer on disk, a command that cannot run a harness error.

use gguf_validate_testkit as support;

use support::cli::{BIN, run};
use support::tmp::TempDir;

#[test]
fn the_own_writer_passes_a_campaign() {
    let cmd = format!("'{}' write-model {{model}} {{out}}", *BIN);
    let out = run(&["fuzz-writer", "--cmd", &cmd, "--cases", "60", "--seed", "7"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("60 cases") && text.contains("no findings"), "{text}");
}

#[test]
fn a_writer_that_drops_everything_is_found_and_shrunk() {
    let findings = TempDir::new("cli-fuzz-drop");
    // Writes a header with no key/values and no tensors, whatever it is asked.
    let cmd = "printf 'GGUF\\003\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000' > {out}";
    let out = run(&["fuzz-writer", "--cmd", cmd, "--cases", "20", "--findings", findings.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| format!("{} {}", g["kind"]["class"].as_str().unwrap(), g["kind"]["what"].as_str().unwrap()))
        .collect();
    assert!(kinds.contains(&"kv missing".to_string()), "{kinds:?}");
    let missing = report["findings"].as_array().unwrap().iter().find(|g| g["kind"]["what"] == "missing").unwrap();
    // Shrunk to one key (any key shows "missing"), written to disk.
    assert_eq!(missing["shrunk"]["stats"]["after"]["kvs"], 1);
    let dir = findings.join(missing["shrunk"]["dir"].as_str().unwrap());
    for f in ["model.json", "out.gguf", "report.txt"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert!(findings.join("summary.json").is_file());
}

#[test]
fn harness_errors_exit_2() {
    let out = run(&["fuzz-writer", "--cmd", "no-such-gguf-writer {model} {out}", "--cases", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be run"));
    let caps = TempDir::new("cli-fuzz-caps");
    std::fs::write(caps.join("c.toml"), "tensor_types = [\"q9\"]").unwrap();
    let out = run(&["fuzz-writer", "--cmd", "true", "--capabilities", caps.join("c.toml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["fuzz-quantizer", "--cmd", "true", "--types", "iq2_xxs"]);
    assert_eq!(out.status.code(), Some(2), "no reference quantizer to compare with");
}

#[test]
fn write_model_writes_a_description() {
    let d = TempDir::new("cli-fuzz-write");
    let model = r#"{"format":"gguf-writer-model","format_version":1,"gguf_version":3,"byte_order":"little","alignment":32,
        "kvs":[{"key":"general.architecture","type":"string","value":"toy"},{"key":"x.f","type":"f32","value":"0x7fc00001"}],
        "tensors":[{"name":"w","type":"f32","type_id":0,"dims":[2],"nbytes":8,"data":"AACAPwAAAEA="}]}"#;
    std::fs::write(d.join("m.json"), model).unwrap();
    let out = run(&["write-model", d.join("m.json").to_str().unwrap(), d.join("o.gguf").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(d.join("o.gguf")).unwrap();
    assert!(bytes.starts_with(b"GGUF"));
    assert!(bytes.windows(4).any(|w| w == [0x01, 0x00, 0xC0, 0x7F]), "the NaN payload is kept");
    std::fs::write(d.join("bad.json"), "{\"format_version\": 9}").unwrap();
    let out = run(&["write-model", d.join("bad.json").to_str().unwrap(), d.join("o2.gguf").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_reference_quantizer_round_trip_through_the_cli_is_identical() {
    // The CLI's own `quantize` as the quantizer under test: one row per run.
    let cmd = format!("'{}' quantize --type {{type}} --input {{input}} --output {{output}}", *BIN);
    let out = run(&["fuzz-quantizer", "--cmd", &cmd, "--types", "q4_0,q8_0,q4_K", "--rows", "12"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("12 rows in 12 runs"), "{text}");
    assert!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("q"))
            .all(|l| l.split_whitespace().nth(1) == l.split_whitespace().nth(2)),
        "{text}"
    );
}
