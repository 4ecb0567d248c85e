//! Holds `gguf-validate` to every conformance case under every profile,
//! snapshots the JSON reports, and checks that corpus/gguf is up to date.

use std::collections::BTreeSet;

use gguf_conformance::{Verdict, all_cases};
use gguf_validate_core::rules::{Group, Level, Profile, RULES, RuleId};
use gguf_validate_core::{Options, Validator};

fn reported(report: &gguf_validate_core::Report) -> BTreeSet<String> {
    // Suppressed findings are counted per rule; listed ones carry the id.
    let mut ids: BTreeSet<String> = report.diagnostics.iter().map(|d| d.rule.to_string()).collect();
    ids.extend(report.suppressed.keys().map(|k| k.to_string()));
    ids
}

/// Checks one file under every profile against its verdicts and the rule
/// ids `strict` reports; returns one message per (profile, problem).
fn check_file(
    name: &str,
    bytes: &[u8],
    verdicts: [Verdict; 3],
    rules: &[String],
    also: &[(Profile, &str)],
) -> Vec<(Profile, String)> {
    let mut failures = Vec::new();
    for (i, profile) in Profile::ALL.into_iter().enumerate() {
        let report = Validator::new(Options::new(profile)).validate_bytes(bytes).report;
        let want_valid = verdicts[i] == Verdict::Accept;
        if report.valid != want_valid {
            failures.push((
                profile,
                format!("{name}: {profile}: valid={} expected {want_valid}: {:?}", report.valid, report.diagnostics),
            ));
        }
        let mut want: BTreeSet<String> = rules
            .iter()
            .filter(|r| RuleId::from_id(r).is_some_and(|id| id.rule().level(profile) != Level::Allow))
            .cloned()
            .collect();
        want.extend(also.iter().filter(|(p, _)| *p == profile).map(|(_, r)| r.to_string()));
        let mut got = reported(&report);
        // Scope infos (an architecture llama.cpp does not know, a part of the
        // model layer not checked) accompany most container cases, which use
        // a neutral architecture on purpose: compared only where a case
        // lists them.
        for scope in ["model-architecture-unknown", "model-not-checked"] {
            if !want.contains(scope) {
                got.remove(scope);
            }
        }
        if got != want {
            failures.push((profile, format!("{name}: {profile}: rules {got:?}, expected {want:?}")));
        }
        for d in &report.diagnostics {
            if d.offset > bytes.len() as u64 {
                failures.push((profile, format!("{name}: {profile}: offset {} past the end", d.offset)));
            }
        }
    }
    failures
}

/// Applies `conformance/xfail.json`: failures of listed (file, profile)
/// pairs are tolerated, and a listed pair that passes is itself a failure
/// (remove the entry). `file` is relative to `corpus/`.
fn apply_xfail(results: Vec<(String, Vec<(Profile, String)>)>) -> Vec<String> {
    let xfail = gguf_conformance::read_xfail().expect("conformance/xfail.json");
    for e in &xfail.xfail {
        assert!(!e.reason.trim().is_empty(), "xfail entry for {} has no reason", e.file);
        assert!(e.profile.parse::<Profile>().is_ok(), "xfail entry for {}: bad profile {}", e.file, e.profile);
    }
    let mut out = Vec::new();
    for (file, failures) in &results {
        for p in Profile::ALL {
            let listed = xfail.xfail.iter().any(|e| e.file == *file && e.profile == p.name());
            let fails: Vec<&String> = failures.iter().filter(|(fp, _)| *fp == p).map(|(_, m)| m).collect();
            if !listed {
                out.extend(fails.into_iter().cloned());
            } else if fails.is_empty() {
                out.push(format!("{file}: {p}: passes but is listed in conformance/xfail.json; remove the entry"));
            }
        }
    }
    let known: BTreeSet<&str> = results.iter().map(|(f, _)| f.as_str()).collect();
    for e in &xfail.xfail {
        if !known.contains(e.file.as_str()) {
            out.push(format!("xfail entry for unknown file {}", e.file));
        }
    }
    out
}

#[test]
fn every_case_meets_its_expectations() {
    let mut results = Vec::new();
    for case in all_cases() {
        let bytes = (case.build)();
        let rules: Vec<String> = case.rules.iter().map(|r| r.to_string()).collect();
        results.push((
            format!("gguf/{}", case.file_name()),
            check_file(&case.file_name(), &bytes, case.verdicts, &rules, &case.also),
        ));
    }
    for e in gguf_py_manifest().cases {
        let bytes =
            std::fs::read(gguf_conformance::gguf_py_dir().join(&e.file)).expect("gguf-py file listed in the manifest");
        let verdicts = ["strict", "spec", "ggml"].map(|p| e.verdict[p]);
        results.push((format!("gguf-py/{}", e.file), check_file(&e.file, &bytes, verdicts, &e.rules, &[])));
    }
    // Fuzz regressions and legacy-format files carry their own sidecar
    // expectations (their rule lists are checked by fuzz/tests/regressions.rs
    // and the legacy tests); here: the verdict under every profile.
    let root = gguf_conformance::workspace_root();
    for f in gguf_conformance::matrix::load_corpus(&root).expect("corpus loads") {
        if f.set != "regressions" && f.set != "legacy" {
            continue;
        }
        let bytes = std::fs::read(root.join("corpus").join(&f.file)).expect("corpus file");
        let mut failures = Vec::new();
        for profile in Profile::ALL {
            let report = Validator::new(Options::new(profile)).validate_bytes(&bytes).report;
            let want_valid = f.expected.get(profile.name()) == Some(&Verdict::Accept);
            if report.valid != want_valid {
                failures
                    .push((profile, format!("{}: {profile}: valid={} expected {want_valid}", f.file, report.valid)));
            }
        }
        results.push((f.file.clone(), failures));
    }
    let failures = apply_xfail(results);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

fn gguf_py_manifest() -> gguf_conformance::Manifest {
    gguf_conformance::read_manifest(&gguf_conformance::gguf_py_dir().join("manifest.json"))
        .expect("corpus/gguf-py/manifest.json")
}

#[test]
fn gguf_py_manifest_lists_every_file() {
    let listed: BTreeSet<String> = gguf_py_manifest().cases.iter().map(|e| e.file.clone()).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(gguf_conformance::gguf_py_dir())
        .expect("corpus/gguf-py")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".gguf"))
        .collect();
    assert_eq!(listed, on_disk, "corpus/gguf-py/manifest.json and the .gguf files differ");
    for e in gguf_py_manifest().cases {
        for r in &e.rules {
            assert!(RuleId::from_id(r).is_some(), "{}: unknown rule {r}", e.file);
        }
        let size = std::fs::metadata(gguf_conformance::gguf_py_dir().join(&e.file)).map(|m| m.len()).unwrap_or(0);
        assert_eq!(size, e.size, "{}: size in manifest", e.file);
    }
}

#[test]
fn the_matrix_corpus_loads_with_expectations() {
    // Every case the matrix runs has an expectation: a verdict for every
    // profile (gguf, gguf-py, regressions, legacy, split sets), its
    // loader's verdict (the tiny models: libllama; projectors: libmtmd;
    // adapters, control vectors and importance matrices: their loaders; diffusion models:
    // stable-diffusion.cpp), or a valid model (the bundled sample).
    let files = gguf_conformance::matrix::load_corpus(&gguf_conformance::workspace_root()).expect("corpus loads");
    assert!(files.len() >= all_cases().len());
    for f in &files {
        match f.set.as_str() {
            "models" => {
                let by = f.reference.as_ref().map(|r| r.by.as_str());
                let want = if f.file.starts_with("models/mmproj/mmproj-") {
                    "libmtmd"
                } else if f.file.starts_with("models/lora/lora-") {
                    "llama_adapter_lora_init + llama_decode"
                } else if f.file.starts_with("models/cvec/") {
                    "common_control_vector_load"
                } else if f.file.starts_with("models/imatrix/") {
                    "llama-quantize --imatrix"
                } else {
                    "libllama"
                };
                assert_eq!(by, Some(want), "{}: no {want} verdict", f.file);
            }
            "diffusion" => {
                let by = f.reference.as_ref().map(|r| r.by.as_str());
                assert_eq!(by, Some("stable-diffusion.cpp"), "{}: no stable-diffusion.cpp verdict", f.file);
            }
            "samples" => assert_eq!(f.prefix, "y", "{}", f.file),
            _ => {
                for p in Profile::ALL {
                    assert!(f.expected.contains_key(p.name()), "{}: no {p} verdict", f.file);
                }
            }
        }
    }
}

#[test]
fn case_names_are_unique_and_rules_exist() {
    let mut seen = BTreeSet::new();
    for case in all_cases() {
        assert!(seen.insert(case.slug.clone()), "duplicate slug {}", case.slug);
        for r in &case.rules {
            assert!(RuleId::from_id(r).is_some(), "{}: unknown rule {r}", case.slug);
        }
    }
    assert!(seen.len() >= 150, "only {} cases", seen.len());
}

/// Rules of the GGUF catalogue that no corpus case breaks, and why. (The
/// `rwkv` and `legacy` groups have their own corpus in corpus/legacy/; the
/// `data` group runs only with `--check-data`, like llama.cpp
/// `--check-tensors`, and is tested by parser/core/tests/check_data.rs.)
const NOT_IN_CORPUS: &[(&str, &str)] = &[
    (
        "model-architecture-refused",
        "reported only when judged for llama.cpp (`--loader llama.cpp`), which the corpus is not: parser/cli/tests/loader.rs breaks it (a FLUX file) and holds its boundary (a llama model)",
    ),
    (
        "size-32-bit",
        "needs a tensor of 4 GiB of data; parser/core/tests/pairing.rs breaks it (2^32 bytes) and holds its boundary (2^32 - 32) on sparse files; the wrapping cases of the corpus (data-size-overflow) report it too",
    ),
    (
        "projector-text-width",
        "needs a projector and its text model: conformance/tests/llama_models.rs pairs libmtmd's converter projectors (corpus/models/mmproj) with their text models and with another's",
    ),
    (
        "projector-text-tokens",
        "needs a projector and its text model: conformance/tests/llama_models.rs breaks it with two converter projectors paired with a text model lacking their looked-up tokens (libmtmd aborts at the first tiled image) and holds its boundary with their own text models (libmtmd runs them)",
    ),
    (
        "adapter-base-tensor",
        "needs an adapter and its base: corpus/models/lora (an adapter for a 4-layer llama against a 2-layer one; conformance/tests/llama_models.rs) and parser/core/tests/pairing.rs",
    ),
    (
        "adapter-base-shape",
        "needs an adapter and its base: corpus/models/lora (an adapter for a wider llama; conformance/tests/llama_models.rs) and parser/core/tests/pairing.rs",
    ),
    (
        "adapter-expert-unused",
        "needs an expert adapter and its base: corpus/models/lora (an adapter for a qwen3moe of 8 experts against one of 4; conformance/tests/llama_models.rs) and parser/core/tests/pairing.rs",
    ),
    (
        "model-tensor-extra",
        "needs a whole model of a known architecture (read after its tensors are created): corpus/models/llama__tensor_extra_* break it three ways and hold its boundary, each with libllama's verdict (conformance/tests/llama_models.rs)",
    ),
    (
        "model-tensor-extra-unknown",
        "needs a whole model of a known architecture: corpus/models/llama__tensor_extra_unknown_name breaks it and llama__tensor_extra_prec holds its boundary (conformance/tests/llama_models.rs)",
    ),
    (
        "control-vector-width",
        "needs a control vector and its base: parser/core/tests/pairing.rs breaks it and holds its boundary",
    ),
    (
        "imatrix-model-size",
        "needs an importance matrix and its model: corpus/models/imatrix (llama-quantize --imatrix on each against its model; conformance/tests/llama_models.rs) and parser/core/tests/pairing.rs",
    ),
    (
        "imatrix-expert-count",
        "needs an importance matrix and its model: corpus/models/imatrix (conformance/tests/llama_models.rs) and parser/core/tests/pairing.rs",
    ),
    (
        "imatrix-tensor-unknown",
        "needs an importance matrix and its model: corpus/models/imatrix (conformance/tests/llama_models.rs) and parser/core/tests/pairing.rs",
    ),
    ("string-length-limit", "needs a string over 1 GiB; parser/core/tests/limits.rs builds one in memory"),
    ("array-length-limit", "needs an array over 2^30 elements; parser/core/tests/limits.rs builds one in memory"),
    (
        "metadata-limit",
        "needs metadata past this tool's caps (256 MiB by default); parser/cli/tests/metadata_limits.rs breaks each cap at its boundary in memory and with sparse files",
    ),
    (
        "llama-cpp-release",
        "judged only against llama.cpp releases asked for (--llama-cpp): parser/core/src/check/releases.rs breaks it for every architecture a release brought, at the release before, and holds its boundary at that release",
    ),
    (
        "suppression-not-applied",
        "about the run's config, not the file: parser/cli/tests/config.rs breaks it (expiry, pin)",
    ),
];

#[test]
fn every_gguf_rule_has_a_breaking_case() {
    let cases = all_cases();
    let mut covered: BTreeSet<&str> = cases.iter().flat_map(|c| c.rules.clone()).collect();
    // Rules only another profile reports (`also_under`).
    covered.extend(cases.iter().flat_map(|c| c.also.iter().map(|(_, r)| *r)));
    // Set-level split rules are broken by the split sets of corpus/split
    // (tests/split_sets.rs).
    covered.extend(gguf_conformance::split::split_cases().iter().flat_map(|c| c.rules.iter().copied()));
    let mut missing = Vec::new();
    for r in RULES.iter().filter(|r| !matches!(r.group, Group::Rwkv | Group::Legacy | Group::Data)) {
        if !covered.contains(r.id) && !NOT_IN_CORPUS.iter().any(|(id, _)| *id == r.id) {
            missing.push(r.id);
        }
    }
    assert!(missing.is_empty(), "rules without a corpus case: {missing:?}");
}

/// The JSON reports of a file under every profile.
fn reports_of(path: &std::path::Path) -> Vec<serde_json::Value> {
    let bytes = std::fs::read(path).unwrap();
    Profile::ALL
        .into_iter()
        .map(|p| serde_json::to_value(Validator::new(Options::new(p)).validate_bytes(&bytes).report).unwrap())
        .collect()
}

/// Runs `f` with the snapshots of `snapshots/reports/`, named without the
/// module.
fn in_reports(f: impl FnOnce()) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/reports");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(f);
}

/// One snapshot per corpus file (`insta::glob!`, so every case that
/// changes is reported, not only the first).
#[test]
fn corpus_report() {
    in_reports(|| insta::glob!("../../corpus/gguf", "*.gguf", |path| insta::assert_json_snapshot!(reports_of(path))));
}

/// One snapshot per file written by gguf-py.
#[test]
fn gguf_py_report() {
    in_reports(|| {
        insta::glob!("../../corpus/gguf-py", "*.gguf", |path| insta::assert_json_snapshot!(reports_of(path)))
    });
}

#[test]
fn corpus_directory_is_up_to_date() {
    if let Err(e) = gguf_conformance::check_corpus(&gguf_conformance::corpus_dir()) {
        panic!("{e}");
    }
}

/// One pass judged under every profile (`Validator::with_every_profile`,
/// what the hub scan and the matrix use) gives exactly the report of each profile's
/// own run, for every file of the corpus, with the default options and with
/// overrides and `deny_warnings`.
#[test]
fn one_pass_judges_every_profile_as_its_own_run_would() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if !p.extension().is_some_and(|x| x == "md" || x == "json" || x == "snap") {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    assert!(files.len() > 900, "{} corpus files", files.len());
    let variants = [
        Options::default(),
        Options {
            deny_warnings: true,
            overrides: vec![
                (RuleId::KeyNaming, Level::Error),
                (RuleId::ModelHeadCount, Level::Allow),
                (RuleId::TensorDataOutOfBounds, Level::Info),
            ],
            ..Options::default()
        },
    ];
    let mut compared = 0usize;
    for path in &files {
        let bytes = std::fs::read(path).expect("read");
        for base in &variants {
            let one = Validator::new(base.clone()).with_every_profile(true).validate_bytes(&bytes);
            assert_eq!(one.profiles.len(), 3, "{}", path.display());
            for (p, judged) in Profile::ALL.iter().zip(&one.profiles) {
                let own = Validator::new(Options { profile: *p, ..base.clone() }).validate_bytes(&bytes).report;
                assert_eq!(*judged, own, "{} under {p}", path.display());
                compared += 1;
            }
            assert_eq!(one.report, Validator::new(base.clone()).validate_bytes(&bytes).report, "{}", path.display());
        }
    }
    assert!(compared > 5000, "{compared} reports compared");
}

/// Every file under `corpus/` but the notes, expectations and snapshots
/// (`.md`, `.json`, `.snap`), sorted: more than 900 of them.
fn corpus_model_files() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if !p.extension().is_some_and(|x| x == "md" || x == "json" || x == "snap") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 900, "{} corpus files", files.len());
    files
}

/// What every step takes from the validation's own parse
/// (`Validated::parsed`: the data's layout, `dump`'s description, `hash`'s
/// tensor ranges, the hub scan's facts) is what a second parse of the
/// metadata gives, on every corpus file; keeping it changes nothing of the
/// report, and a report-only validation gives the same report.
#[test]
fn what_steps_take_from_the_validations_parse_is_a_second_parses() {
    use gguf_validate_core::{dump, hash, parse, pipeline};
    let files = corpus_model_files();
    let container = Validator::new(Options { container_only: true, ..Options::default() });
    let (mut parsed_files, mut with_tensors) = (0usize, 0usize);
    for path in &files {
        let bytes = std::fs::read(path).expect("read");
        let len = bytes.len() as u64;
        let src = gguf_validate_core::io::SliceSource(&bytes);
        let validated = container.validate(&src).expect("in memory");
        let report_only = container.clone().report_only(true).validate(&src).expect("in memory");
        assert_eq!(report_only.report, validated.report, "{}", path.display());
        assert!(report_only.parsed().is_none() && report_only.metadata.is_empty(), "{}", path.display());
        let full = Validator::new(Options::default()).validate(&src).expect("in memory");
        assert_eq!(full.report, Validator::new(Options::default()).validate_bytes(&bytes).report);
        let Some(kept) = validated.parsed() else {
            assert!(parse::parse_prefix(&validated.metadata, len).is_none(), "{}", path.display());
            continue;
        };
        parsed_files += 1;
        let second = parse::parse_prefix(&validated.metadata, len).expect("a parse parses again");
        if second.fatal.is_none() && kept.fatal.is_none() {
            assert_eq!(kept, second, "{}", path.display());
        }
        let layout = validated.layout();
        with_tensors += usize::from(!layout.tensors.is_empty());
        if kept.fatal.is_none() {
            assert_eq!(layout.tensors, gguf_validate_core::data::gguf_tensors(&second, len), "{}", path.display());
            assert_eq!(dump::dump(&kept, true), dump::dump(&second, true), "{}", path.display());
            assert_eq!(hash::ranges_of(&kept, len).ok(), hash::ranges_of(&second, len).ok(), "{}", path.display());
        }
        // The steps themselves: dump's description and the scan's facts.
        let input = pipeline::Input::bytes("f.gguf", bytes.clone());
        let (value, _) = pipeline::commands::dump(&input, true, None, None).expect("dump");
        let mut expected = dump::describe(&validated, true).expect("described").0;
        if let Some(o) = expected.as_object_mut() {
            o.insert("path".into(), serde_json::json!("f.gguf"));
            o.insert("file_size".into(), serde_json::json!(len));
        }
        assert_eq!(value, expected, "{}", path.display());
        assert_eq!(pipeline::scan::facts(&full), pipeline::scan::facts(&validated), "{}", path.display());
    }
    assert!(parsed_files > 700 && with_tensors > 400, "{parsed_files} parsed, {with_tensors} with tensors");
}
