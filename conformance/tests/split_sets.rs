//! Holds `gguf-validate` to every split-set case (corpus/split) under every
//! profile: the set's verdict and the exact rule ids of the set and its
//! shards, and checks that corpus/split is up to date.

use std::collections::BTreeSet;

use gguf_conformance::Verdict;
use gguf_conformance::split::{check_split, split_cases, split_dir};
use gguf_validate_core::io::{ByteSource, SliceSource};
use gguf_validate_core::rules::{Level, Profile, RuleId};
use gguf_validate_core::split_set::{SetReport, ShardInput, check_set};
use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue};
use gguf_validate_core::{Options, Validated, Validator};

/// Shards validated as files, and their set judged.
struct Set {
    shards: Vec<Validated>,
    set: SetReport,
}

/// Validates every shard (named sources), then the set from what their
/// validations kept (`every_profile`: judged under every profile too).
fn validate_set(shards: &[(&str, &dyn ByteSource)], opts: &Options, every_profile: bool) -> Set {
    let validator = Validator::new(opts.clone()).with_every_profile(every_profile);
    let validated: Vec<Validated> =
        shards.iter().map(|(_, src)| validator.validate(*src).expect("in memory")).collect();
    let inputs: Vec<ShardInput<'_>> = shards
        .iter()
        .zip(&validated)
        .map(|((name, src), v)| ShardInput {
            name,
            file_len: src.len(),
            report: Some(&v.report),
            profiles: &v.profiles,
            validated: Some(v),
        })
        .collect();
    let set = check_set(&inputs, opts, every_profile);
    Set { shards: validated, set }
}

/// Rule ids of a set and its shards (listed or only counted).
fn rules_of(v: &Set) -> BTreeSet<String> {
    let mut ids: BTreeSet<String> = v.set.diagnostics.iter().map(|d| d.rule.to_string()).collect();
    ids.extend(v.set.suppressed.keys().map(|k| k.to_string()));
    for s in &v.shards {
        ids.extend(s.report.diagnostics.iter().map(|d| d.rule.to_string()));
        ids.extend(s.report.suppressed.keys().map(|k| k.to_string()));
    }
    // Scope infos are compared only where a case lists them.
    ids.remove("model-not-checked");
    ids
}

#[test]
fn every_split_set_meets_its_expectations() {
    let mut failures = Vec::new();
    for case in split_cases() {
        let shards = (case.build)();
        let sources: Vec<SliceSource<'_>> = shards.iter().map(|(_, b)| SliceSource(b)).collect();
        let named: Vec<(&str, &dyn ByteSource)> =
            shards.iter().zip(&sources).map(|((n, _), s)| (n.as_str(), s as &dyn ByteSource)).collect();
        for (i, profile) in Profile::ALL.into_iter().enumerate() {
            let v = validate_set(&named, &Options::new(profile), false);
            let want_valid = case.verdicts[i] == Verdict::Accept;
            if v.set.valid != want_valid {
                failures.push(format!(
                    "{}: {profile}: valid={} expected {want_valid}: {:#?}",
                    case.slug, v.set.valid, v.set
                ));
            }
            let want: BTreeSet<String> = case
                .rules
                .iter()
                .filter(|r| RuleId::from_id(r).is_some_and(|id| id.rule().level(profile) != Level::Allow))
                .map(|r| r.to_string())
                .collect();
            let got = rules_of(&v);
            if got != want {
                failures.push(format!("{}: {profile}: rules {got:?}, expected {want:?}", case.slug));
            }
            // Every set-level offset lies inside the shard its path names.
            for d in &v.set.diagnostics {
                if let Some(rest) = d.path.strip_prefix("shard[") {
                    let slot: usize = rest.split(']').next().unwrap().parse().unwrap();
                    assert!(d.offset <= v.set.shards[slot].file_size, "{}: {d:?}", case.slug);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_lone_later_shard_has_no_model_layer_errors() {
    // The second shard of the tiny llama holds tensors but no metadata: as a
    // file it is a valid shard (architecture, hyper-parameters, vocabulary
    // and tensors are the set's business).
    let shards = gguf_conformance::split::split_tiny(3);
    for (k, m) in shards.into_iter().enumerate() {
        let bytes = gguf_conformance::build::bytes(m);
        for profile in Profile::ALL {
            let r = Validator::new(Options::new(profile)).validate_bytes(&bytes).report;
            assert!(r.valid, "shard {k}: {profile}: {:?}", r.diagnostics);
            assert!(r.diagnostics.is_empty(), "shard {k}: {profile}: {:?}", r.diagnostics);
            let model = r.summary.examined.iter().find(|e| e.layer == "model").unwrap();
            assert!(!model.checked, "shard {k}: the model layer moves to the set");
        }
    }
}

#[test]
fn the_set_summary_describes_the_set() {
    let shards = (split_cases()[0].build)();
    let sources: Vec<SliceSource<'_>> = shards.iter().map(|(_, b)| SliceSource(b)).collect();
    // Given in any order: the set is the same.
    let named: Vec<(&str, &dyn ByteSource)> =
        shards.iter().zip(&sources).rev().map(|((n, _), s)| (n.as_str(), s as &dyn ByteSource)).collect();
    let v = validate_set(&named, &Options::default(), false);
    let s = &v.set.summary;
    assert_eq!(v.set.name, "tiny-*-of-00003.gguf");
    assert_eq!((s.shard_count, s.shards_present, s.shards_missing), (Some(3), 3, 0));
    assert_eq!((s.tensor_count, s.tensors_expected), (20, Some(20)));
    assert_eq!(s.total_size, shards.iter().map(|(_, b)| b.len() as u64).sum::<u64>());
    assert_eq!(s.architecture.as_deref(), Some("llama"));
    let names: Vec<&str> = v.set.shards.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["tiny-00001-of-00003.gguf", "tiny-00002-of-00003.gguf", "tiny-00003-of-00003.gguf"]);
    let model = s.examined.iter().find(|e| e.layer == "model").unwrap();
    assert!(model.checked && model.note.is_none(), "{model:?}");
}

#[test]
fn split_directory_is_up_to_date() {
    if let Err(e) = check_split(&split_dir()) {
        panic!("{e}");
    }
}

fn shard(no: u16, count: u16, tensors: i32, ty: GgmlType, name: &str) -> Vec<u8> {
    let mut m = GgufModel::new();
    if no == 0 {
        m.kv("general.architecture", OwnedValue::str("plain"));
    }
    m.kv("split.no", OwnedValue::U16(no));
    m.kv("split.count", OwnedValue::U16(count));
    m.kv("split.tensors.count", OwnedValue::I32(tensors));
    m.tensor(OwnedTensor::zeroed(name, &[32], ty).unwrap());
    m.canonical();
    m.to_bytes()
}

fn ids(r: &SetReport) -> Vec<&'static str> {
    let mut v: Vec<&str> = r.diagnostics.iter().filter(|d| d.severity != Level::Info).map(|d| d.rule.id()).collect();
    v.dedup();
    v
}

/// Every split set of the corpus: judged under every profile in one
/// pass, each profile's set report is the one a run of that profile
/// alone gives.
#[test]
fn a_set_judged_under_every_profile_is_judged_as_under_each_alone() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/split");
    let mut sets = 0;
    for dir in std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
        let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
        names.sort();
        let bytes: Vec<(String, Vec<u8>)> =
            names.iter().map(|p| (p.display().to_string(), std::fs::read(p).unwrap())).collect();
        let sources: Vec<(&str, SliceSource<'_>)> = bytes.iter().map(|(n, b)| (n.as_str(), SliceSource(b))).collect();
        let named: Vec<(&str, &dyn ByteSource)> = sources.iter().map(|(n, s)| (*n, s as &dyn ByteSource)).collect();
        let every = validate_set(&named, &Options::default(), true);
        assert_eq!(every.set.profiles.len(), Profile::ALL.len());
        for (profile, under) in Profile::ALL.iter().zip(&every.set.profiles) {
            let alone = validate_set(&named, &Options::new(*profile), false);
            assert_eq!(*under, alone.set, "{} under {profile:?}", dir.display());
        }
        sets += 1;
    }
    assert!(sets >= 10, "{sets} sets");
}

#[test]
fn a_count_of_65535_costs_the_shards_that_exist() {
    let b = shard(0, u16::MAX, 1, GgmlType::F32, "a");
    let src = SliceSource(&b);
    let v = validate_set(&[("m-00001-of-65535.gguf", &src)], &Options::default(), false);
    let r = &v.set;
    assert_eq!(r.summary.shards_missing, 65_534);
    let listed = r.diagnostics.iter().filter(|d| d.rule == RuleId::SplitShardMissing).count();
    assert_eq!(listed, gguf_validate_core::limits::MAX_DIAGNOSTICS_PER_RULE);
    assert_eq!(r.counts.errors, 65_534);
    assert_eq!(r.suppressed.get("split-shard-missing"), Some(&(65_534 - 50)));
    assert!(!r.valid);
}

#[test]
fn the_quantization_version_belongs_in_the_first_shard() {
    // The first shard holds F32 only, the second Q8_0: the first must
    // say general.quantization_version; a later shard never has to.
    let (a, b) = (shard(0, 2, 2, GgmlType::F32, "a"), shard(1, 2, 2, GgmlType::Q8_0, "b"));
    let (sa, sb) = (SliceSource(&a), SliceSource(&b));
    let v = validate_set(&[("m-00001-of-00002.gguf", &sa), ("m-00002-of-00002.gguf", &sb)], &Options::default(), false);
    assert!(v.shards.iter().all(|s| s.report.valid));
    assert_eq!(ids(&v.set), ["quantization-version-missing"]);
    assert_eq!(v.set.diagnostics[0].path, "shard[0] kv");
}

#[test]
fn a_later_shard_without_split_no_and_names_that_say_nothing() {
    // Names that are not shard names: positions come from split.no.
    let a = shard(0, 2, 2, GgmlType::F32, "a");
    let mut m = GgufModel::new();
    m.kv("split.count", OwnedValue::U16(2));
    m.tensor(OwnedTensor::zeroed("b", &[32], GgmlType::F32).unwrap());
    m.canonical();
    let b = m.to_bytes();
    let (sa, sb) = (SliceSource(&a), SliceSource(&b));
    let v = validate_set(&[("second", &sb), ("first", &sa)], &Options::default(), false);
    assert_eq!(v.set.name, "second");
    let names: Vec<&str> = v.set.shards.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["first", "second"], "the shard with split.no 0 comes first");
    // "second" has no position: position 1 is missing, and its index too.
    assert_eq!(ids(&v.set), ["split-shard-missing", "split-index"]);
}
