//! `--every-profile`: one validation judged under strict, spec and ggml.
//! Each profile's section is exactly what `--profile P` prints, and its
//! line gives what that run exits with, for every file of the corpus (a
//! run per corpus folder, split sets and files that are not GGUF among
//! them), with overrides, `--deny-warnings` and `--check-data` too.

use gguf_validate_testkit as support;

use support::cli::{code, run_in, stdout};
use support::root;

const PROFILES: [&str; 3] = ["strict", "spec", "ggml"];

/// The sections of an `--every-profile` output: (profile, exit code, text).
fn sections(out: &str) -> Vec<(String, i32, String)> {
    let mut found: Vec<(String, i32, String)> = Vec::new();
    for line in out.split_inclusive('\n') {
        let head = line.strip_prefix("== profile ").and_then(|r| r.strip_suffix(") ==\n"));
        match head.and_then(|h| h.split_once(" (exit ")) {
            Some((p, c)) => found.push((p.to_string(), c.parse().expect("exit code"), String::new())),
            None => found.last_mut().expect("a section line first").2.push_str(line),
        }
    }
    found
}

/// The corpus files of `dir` (relative to the root), sorted.
fn files_of(dir: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut dirs = vec![root().join(dir)];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("corpus dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if !p.extension().is_some_and(|x| x == "md" || x == "json" || x == "snap") {
                files.push(p.strip_prefix(root()).expect("under the root").to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    files
}

/// Each section against its profile's own run of the same arguments.
fn same_as_each_profile(args: &[&str]) {
    same_as_each_profile_in(root(), &[&["--no-config"], args].concat());
}

/// [`same_as_each_profile`] in `dir` (where a config may be found).
fn same_as_each_profile_in(dir: &std::path::Path, args: &[&str]) {
    let every = run_in(dir, &[&["--every-profile", "--color", "never"], args].concat());
    let got = sections(&stdout(&every));
    assert_eq!(got.iter().map(|(p, ..)| p.as_str()).collect::<Vec<_>>(), PROFILES);
    let mut worst = 0;
    for (profile, exit, text) in &got {
        let own = run_in(dir, &[&["--profile", profile, "--color", "never"], args].concat());
        assert_eq!(*text, stdout(&own), "{profile}: {:?}", &args[..args.len().min(4)]);
        assert_eq!(*exit, code(&own), "{profile}: {:?}", &args[..args.len().min(4)]);
        worst = worst.max(*exit);
    }
    assert_eq!(code(&every), worst, "the run exits with the worst profile's code");
}

#[test]
fn each_profile_section_is_that_profiles_own_run_on_every_corpus_file() {
    let mut n = 0;
    for dir in ["corpus/gguf", "corpus/gguf-py", "corpus/regressions", "corpus/legacy", "corpus/models", "corpus/split"]
    {
        let files = files_of(dir);
        assert!(!files.is_empty(), "{dir} has files");
        n += files.len();
        let args: Vec<&str> = files.iter().map(String::as_str).collect();
        same_as_each_profile(&[&["-j", "2"], args.as_slice()].concat());
    }
    assert!(n > 900, "{n} corpus files");
    // Levels of the command line and warnings that fail a file apply under
    // every profile as in each profile's run.
    let some = files_of("corpus/gguf");
    let args: Vec<&str> = some.iter().take(120).map(String::as_str).collect();
    let extra = ["--deny-warnings", "--deny", "key-naming", "--allow", "tensor-data-out-of-bounds"];
    same_as_each_profile(&[&extra[..], args.as_slice()].concat());
    // The data scan's findings, under each profile.
    let models = files_of("corpus/models");
    let scanned: Vec<&str> = models.iter().chain(some.iter().take(120)).map(String::as_str).collect();
    same_as_each_profile(&[&["--check-data"], scanned.as_slice()].concat());
    // A file that cannot be read, and the quiet output.
    same_as_each_profile(&["-q", "corpus/gguf/does-not-exist.gguf", some[0].as_str(), some[1].as_str()]);
}

/// A config's levels and suppressions (one applied, one expired, one
/// pinned to other metadata) and a baseline apply under every profile as
/// in each profile's run.
#[test]
fn a_config_and_a_baseline_apply_under_every_profile() {
    let d = support::tmp::TempDir::new("every-profile-config");
    std::fs::create_dir_all(d.join("models")).expect("dir");
    let copies = [
        ("i_key_uppercase.gguf", "a.gguf"),
        ("n_key_empty.gguf", "bad.gguf"),
        ("i_key_uppercase.gguf", "c.gguf"),
        ("n_tensor_offset_misaligned.gguf", "d.gguf"),
    ];
    for (from, to) in copies {
        std::fs::copy(root().join("corpus/gguf").join(from), d.join("models").join(to)).expect("copy");
    }
    std::fs::write(
        d.join("gguf-validate.toml"),
        "profile = \"spec\"\n[rules]\nkey-naming = \"error\"\n\
         [[suppress]]\nrule = \"key-empty\"\npaths = [\"models/bad.gguf\"]\nreason = \"upstream file, reported\"\n\
         [[suppress]]\nrule = \"key-naming\"\npaths = [\"models/a.gguf\"]\nreason = \"old\"\nuntil = \"2001-01-01\"\n\
         [[suppress]]\nrule = \"key-naming\"\npaths = [\"models/c.gguf\"]\nreason = \"pinned\"\nsha256 = \"00\"\n",
    )
    .expect("config");
    let models: Vec<String> = std::fs::read_dir(d.join("models"))
        .expect("models")
        .flatten()
        .map(|e| format!("models/{}", e.file_name().to_string_lossy()))
        .collect();
    let mut models: Vec<&str> = models.iter().map(String::as_str).collect();
    models.sort_unstable();
    assert_eq!(models.len(), 4, "{models:?}");
    same_as_each_profile_in(&d, &models);
    // A baseline written by a strict run, read under every profile.
    let o = run_in(&d, &[&["--profile", "strict", "--write-baseline", "base.txt"], models.as_slice()].concat());
    assert!(d.join("base.txt").exists(), "{}", String::from_utf8_lossy(&o.stderr));
    same_as_each_profile_in(&d, &[&["--baseline", "base.txt"], models.as_slice()].concat());
}

#[test]
fn every_profile_refuses_what_it_cannot_print() {
    for extra in [&["--format", "json"][..], &["--profile", "spec"], &["--write-baseline", "b.txt"]] {
        let o = run_in(root(), &[&["--every-profile"], extra, &["corpus/gguf/n_key_empty.gguf"]].concat());
        assert_eq!(code(&o), 2, "{extra:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stdout.is_empty(), "{extra:?}");
    }
}
