//! The CLI contract: exit codes, flags, and the human and JSON output
//! (insta snapshots). Files come from the committed corpus.

use gguf_validate_testkit as support;

use support::cli::{code, run, stdout};
use support::root;

#[test]
fn exit_0_for_valid_files() {
    let o = run(&["corpus/gguf-py/llama_tiny.gguf", "corpus/gguf/y_base.gguf"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
}

#[test]
fn exit_1_when_any_file_is_invalid() {
    let o = run(&["corpus/gguf/y_base.gguf", "corpus/gguf/n_key_empty.gguf"]);
    assert_eq!(code(&o), 1);
}

#[test]
fn exit_2_for_unreadable_file_even_with_invalid_ones() {
    let o = run(&["corpus/gguf/n_key_empty.gguf", "does/not/exist.gguf"]);
    assert_eq!(code(&o), 2);
    assert!(stdout(&o).contains("does/not/exist.gguf: ERROR cannot read the file"));
    // A directory is walked (see cli_many.rs), not read as a file.
    let o = run(&["corpus/gguf"]);
    assert_eq!(code(&o), 1, "the corpus holds invalid files");
}

#[test]
fn exit_2_for_usage_errors() {
    assert_eq!(code(&run(&[])), 2);
    assert_eq!(code(&run(&["--profile", "lenient", "corpus/gguf/y_base.gguf"])), 2);
    let o = run(&["--allow", "no-such-rule", "corpus/gguf/y_base.gguf"]);
    assert_eq!(code(&o), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown rule `no-such-rule`"));
    let o = run(&["--allow", "file-truncated", "corpus/gguf/y_base.gguf"]);
    assert_eq!(code(&o), 2, "fatal rules cannot be allowed");
}

#[test]
fn profiles_change_the_verdict() {
    // alignment 24: multiple of 8 (spec) but not a power of two (ggml).
    let f = "corpus/gguf/i_alignment_24.gguf";
    assert_eq!(code(&run(&[f])), 1);
    assert_eq!(code(&run(&["--profile", "spec", f])), 0);
    assert_eq!(code(&run(&["--profile", "ggml", f])), 1);
}

#[test]
fn deny_warnings_and_overrides() {
    let warn_only = "corpus/gguf/i_key_uppercase.gguf";
    assert_eq!(code(&run(&[warn_only])), 0);
    assert_eq!(code(&run(&["--deny-warnings", warn_only])), 1);
    assert_eq!(code(&run(&["--deny-warnings", "--allow", "key-naming", warn_only])), 0);
    assert_eq!(code(&run(&["--deny", "key-naming", warn_only])), 1);
    // Later flags win: deny then allow leaves the rule allowed, and back.
    assert_eq!(code(&run(&["--deny", "key-naming", "--allow", "key-naming", warn_only])), 0);
    assert_eq!(code(&run(&["--allow", "key-naming", "--deny", "key-naming", warn_only])), 1);
    // An error downgraded to a warning no longer fails the file.
    assert_eq!(code(&run(&["--warn", "bool-value", "corpus/gguf/i_bool_2.gguf"])), 0);
}

#[test]
fn human_output() {
    let o = run(&[
        "--color",
        "never",
        "corpus/gguf-py/llama_tiny_be.gguf",
        "corpus/gguf/n_tensor_offset_max.gguf",
        "corpus/gguf/n_legacy_ggjt_v3.gguf",
        "corpus/gguf/n_version_1.gguf",
    ]);
    insta::assert_snapshot!("human_output", stdout(&o));
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let plain = stdout(&run(&["corpus/gguf/n_key_empty.gguf"]));
    assert!(!plain.contains('\x1b'), "no colour into a pipe");
    let coloured = stdout(&run(&["--color", "always", "corpus/gguf/n_key_empty.gguf"]));
    assert!(coloured.contains("\x1b[1;31m"));
}

#[test]
fn json_output() {
    let o = run(&["--format", "json", "corpus/gguf/i_alignment_24.gguf", "missing.gguf"]);
    assert_eq!(code(&o), 2);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let files = v["files"].as_array().expect("files array");
    assert_eq!(files.len(), 2);
    let f = &files[0];
    for key in ["path", "valid", "profile", "format", "version", "byte_order", "summary", "diagnostics"] {
        assert!(f.get(key).is_some(), "missing {key}");
    }
    let d = &f["diagnostics"][0];
    for key in ["rule", "severity", "offset", "path", "message"] {
        assert!(d.get(key).is_some(), "missing diagnostic {key}");
    }
    assert_eq!(files[1]["valid"], false);
    insta::assert_json_snapshot!("json_output", v, { ".tool_version" => "[version]" });
}

#[test]
fn rules_subcommand_lists_the_catalogue() {
    let o = run(&["rules", "--format", "json"]);
    assert_eq!(code(&o), 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), gguf_validate_core::RULES.len());
    let text = stdout(&run(&["rules"]));
    for r in gguf_validate_core::RULES {
        assert!(text.contains(r.id), "{} missing from `rules`", r.id);
    }
}

#[test]
fn docs_rules_md_is_generated_from_the_catalogue() {
    let on_disk = std::fs::read_to_string(root().join("parser/docs/rules.md")).unwrap_or_default();
    let generated = stdout(&run(&["rules", "--format", "markdown"]));
    assert!(
        on_disk == generated,
        "parser/docs/rules.md is stale: run `cargo run -p gguf-validate -- rules --format markdown > parser/docs/rules.md`"
    );
}

#[test]
fn dump_is_canonical_json() {
    let o = run(&["dump", "corpus/gguf-py/all_value_types.gguf"]);
    assert_eq!(code(&o), 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    insta::assert_json_snapshot!("dump_all_value_types", v);
    let o = run(&["dump", "corpus/gguf/n_magic_bad.gguf"]);
    assert_eq!(code(&o), 1);
}

#[test]
fn dump_summarises_long_arrays_unless_full() {
    let short: serde_json::Value =
        serde_json::from_slice(&run(&["dump", "corpus/gguf-py/llama_tiny.gguf"]).stdout).unwrap();
    let full: serde_json::Value =
        serde_json::from_slice(&run(&["dump", "--full", "corpus/gguf-py/llama_tiny.gguf"]).stdout).unwrap();
    let tokens = |v: &serde_json::Value| {
        v["kv"].as_array().unwrap().iter().find(|kv| kv["key"] == "tokenizer.ggml.tokens").unwrap()["value"].clone()
    };
    assert_eq!(tokens(&short)["values"].as_array().unwrap().len(), 16);
    assert_eq!(tokens(&short)["truncated"], true);
    assert_eq!(tokens(&full)["values"].as_array().unwrap().len(), 320);
}

#[test]
fn readme_example_matches_the_binary() {
    // The README shows `$ gguf-validate FILE` followed by its output; keep
    // it honest.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let block = readme.split("```text\n$ gguf-validate ").nth(1).expect("example block in README");
    let block = block.split("```").next().unwrap();
    let (args, shown) = block.split_once('\n').unwrap();
    let o = run(&args.split_whitespace().collect::<Vec<_>>());
    assert_eq!(stdout(&o), shown, "README example is stale");
}

#[test]
fn readme_is_short_and_its_links_into_the_book_resolve() {
    // The README is the pitch, the set-up and links into the book
    // (parser/docs/); .ci/run checks the same bound.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= 200,
        "README.md has {} lines; the manual belongs in parser/docs/",
        readme.lines().count()
    );
    for link in readme.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
        if link.contains("://") {
            continue;
        }
        let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
        let text = std::fs::read_to_string(root().join(file))
            .unwrap_or_else(|_| panic!("README links to {link}: no such file"));
        if !anchor.is_empty() {
            // A heading whose GitHub/mdBook id is the anchor, or an explicit one.
            let heading = text.lines().filter_map(|l| l.strip_prefix('#')).any(|h| {
                let id: String = h
                    .trim_start_matches('#')
                    .trim()
                    .to_lowercase()
                    .chars()
                    .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                id == anchor
            });
            assert!(heading || text.contains(&format!("id=\"{anchor}\"")), "README links to {link}: no such anchor");
        }
    }
}
