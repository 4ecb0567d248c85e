//! The library's pipeline as a caller that is not the CLI uses it (the
//! Python bindings will): inputs in, typed outcomes out, in input order,
//! nothing printed, stoppable.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use gguf_validate_core::pipeline::{Input, Item, Outcome, Pipeline, Settings, json};
use gguf_validate_core::rules::Profile;
use gguf_validate_core::{Options, Validator};
use gguf_validate_testkit as support;

fn sample() -> PathBuf {
    support::root().join("corpus/samples/tiny-llama.gguf")
}

fn set_shards(set: &str) -> Vec<Input> {
    let dir = support::root().join("corpus/split").join(set);
    (1..=3).map(|k| Input::Path(dir.join(format!("tiny-0000{k}-of-00003.gguf")))).collect()
}

/// What `run` hands out, as `(kind, name, valid)`.
fn run_all(pipeline: &Pipeline, inputs: &[Input], jobs: usize) -> Vec<(&'static str, String, bool)> {
    let mut seen = Vec::new();
    let r: Result<Vec<String>, ()> = pipeline.run(inputs, jobs, |item| {
        seen.push(match item {
            Item::File { input, outcome, .. } => ("file", input.json_name(), outcome.is_valid()),
            Item::Set(s) => ("set", s.name.clone(), s.valid),
        });
        ControlFlow::Continue(())
    });
    assert!(r.is_ok());
    seen
}

#[test]
fn bytes_in_memory_give_the_report_of_the_file_on_disk() {
    let pipeline = Pipeline::new(Settings::default());
    let on_disk = pipeline.validate(&Input::Path(sample()));
    let bytes = std::fs::read(sample()).unwrap();
    let in_memory = pipeline.validate(&Input::bytes("tiny-llama.gguf", bytes));
    let as_json = |o: &Outcome| json::file("x", o, Profile::Strict, None);
    assert!(on_disk.outcome.is_valid());
    assert_eq!(as_json(&on_disk.outcome), as_json(&in_memory.outcome));
}

#[test]
fn a_shard_brings_its_set_once_in_input_order() {
    let pipeline = Pipeline::new(Settings::default());
    let shards = set_shards("y_valid");
    // The second shard named first, then all three again, then a file.
    let inputs = vec![shards[1].clone(), shards[0].clone(), shards[2].clone(), Input::Path(sample())];
    for jobs in [1, 2] {
        let seen = run_all(&pipeline, &inputs, jobs);
        let kinds: Vec<&str> = seen.iter().map(|s| s.0).collect();
        assert_eq!(kinds, ["file", "file", "file", "set", "file"], "jobs {jobs}: {seen:?}");
        assert!(seen[0].1.ends_with("tiny-00001-of-00003.gguf"), "shards in position order: {seen:?}");
        assert!(seen.iter().all(|s| s.2), "{seen:?}");
        assert!(seen[4].1.ends_with("tiny-llama.gguf"));
    }
}

/// The validator of a run under `--container-only`, as the command line
/// builds it: nothing after the report.
fn container_only() -> Validator {
    Validator::new(Options { container_only: true, ..Options::default() }).report_only(true)
}

#[test]
fn container_only_runs_validate_shards_alone() {
    let settings = Settings { validator: container_only(), ..Settings::default() };
    let seen = run_all(&Pipeline::new(settings), &set_shards("y_valid")[..1], 1);
    assert_eq!(seen.len(), 1, "{seen:?}");
}

#[test]
fn a_url_without_an_opener_is_unreadable_not_a_panic() {
    let v = Pipeline::new(Settings::default()).validate(&Input::from_path("https://127.0.0.1:9/x.gguf".into()));
    match v.outcome {
        Outcome::Unreadable(why) => assert!(why.contains("no HTTP source"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_file_is_unreadable() {
    let v = Pipeline::new(Settings::default()).validate(&Input::Path("/nonexistent/x.gguf".into()));
    assert!(matches!(v.outcome, Outcome::Unreadable(_)), "{:?}", v.outcome);
}

#[test]
fn the_caller_stops_a_run() {
    let pipeline = Pipeline::new(Settings::default());
    let inputs = vec![Input::Path(sample()); 5];
    let mut n = 0;
    let r = pipeline.run(&inputs, 1, |_| {
        n += 1;
        if n == 2 { ControlFlow::Break("enough") } else { ControlFlow::Continue(()) }
    });
    assert_eq!(r, Err("enough"));
    assert_eq!(n, 2);
    // Cancelled before it starts: nothing is validated.
    pipeline.cancel.store(true, Ordering::Relaxed);
    assert!(run_all(&pipeline, &inputs, 1).is_empty());
}

#[test]
fn a_time_limit_gives_up_on_a_file_that_never_comes() {
    // A FIFO with no writer: opened only because special files are
    // allowed, and given up on at the time limit.
    let dir = support::tmp::TempDir::new("pipeline-fifo");
    let fifo = dir.join("never.gguf");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return;
    }
    let mut settings = Settings::default();
    settings.policy.special_files = true;
    settings.timeout = Some(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let v = Pipeline::new(settings).validate(&Input::Path(fifo));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    match v.outcome {
        Outcome::Unreadable(why) => assert!(why.contains("timed out") || why.contains("no answer"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// A file with a vocabulary of 20,000 tokens (one of invalid UTF-8 when
/// `bad`), written to a temporary file.
fn vocabulary_file(name: &str, bad: bool) -> PathBuf {
    use gguf_validate_core::types::ValueType as T;
    use gguf_validate_core::write::{GgufModel, OwnedValue as V};
    let mut m = GgufModel::new();
    m.kv("general.architecture", V::str("llama"));
    let tokens = (0..20_000)
        .map(|i| if bad && i == 12_345 { V::String(b"\xff".to_vec()) } else { V::str(&format!("t{i}")) })
        .collect();
    m.kv("tokenizer.ggml.tokens", V::Array(T::String, tokens));
    m.kv("tokenizer.ggml.scores", V::Array(T::F32, vec![V::F32(0.5); 20_000]));
    let path = std::env::temp_dir().join(format!("gguf-validate-{}-{name}.gguf", std::process::id()));
    std::fs::write(&path, m.to_bytes()).unwrap();
    path
}

#[test]
fn container_only_reads_lean_with_the_report_of_the_whole_metadata() {
    let lean = Settings { validator: container_only(), ..Settings::default() };
    // A metadata hash needs the metadata: the whole of it is read.
    let mut whole = lean.clone();
    whole.metadata_hash = true;
    for bad in [false, true] {
        let path = vocabulary_file(if bad { "bad" } else { "good" }, bad);
        let input = Input::Path(path.clone());
        let (a, b) = (Pipeline::new(lean.clone()).validate(&input), Pipeline::new(whole.clone()).validate(&input));
        let as_json = |o: &Outcome| json::file("x", o, Profile::Strict, None);
        assert_eq!(as_json(&a.outcome), as_json(&b.outcome));
        assert_eq!(a.outcome.is_valid(), !bad);
        std::fs::remove_file(path).unwrap();
    }
    // A shard read lean keeps no metadata (a run under `--container-only`
    // checks no set); a set judged from it reads its shards' metadata
    // then, and every corpus set's report is the one a set of shards read
    // whole gets.
    let mut judged = 0;
    for set in std::fs::read_dir(support::root().join("corpus/split")).unwrap() {
        let set = set.unwrap().path();
        if !set.is_dir() {
            continue;
        }
        let mut shards: Vec<PathBuf> = std::fs::read_dir(&set).unwrap().map(|e| e.unwrap().path()).collect();
        shards.sort();
        let Some(first) = shards.first().map(|p| Input::Path(p.clone())) else { continue };
        let set_of = |settings: &Settings| {
            let v = gguf_validate_core::pipeline::validate_input(&first, settings);
            let kept = v.validated.as_ref().is_some_and(|v| !v.metadata.is_empty());
            let run = gguf_validate_core::pipeline::validate_set(&first, v, settings, &mut |_| None);
            (kept, json::set(&run.report))
        };
        let ((lean_kept, lean_set), (whole_kept, whole_set)) = (set_of(&lean), set_of(&whole));
        assert!(!lean_kept, "{}", set.display());
        judged += usize::from(whole_kept);
        assert_eq!(lean_set, whole_set, "{}", set.display());
    }
    assert!(judged >= 10, "{judged} sets judged from shards read whole");
}

/// A source that counts its reads from the first byte (one a validation).
#[derive(Debug)]
struct HeaderReads(gguf_validate_core::io::MemSource, std::sync::atomic::AtomicUsize);

impl gguf_validate_core::io::ByteSource for HeaderReads {
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn sized_reads(&self) -> bool {
        true
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), gguf_validate_core::io::ReadError> {
        if offset == 0 {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
        self.0.read_exact_at(offset, buf)
    }
}

/// Under `--container-only` a run reads a shard once (it checks no set),
/// and a full run once as well (its set takes that validation).
#[test]
fn a_run_reads_a_shard_once() {
    use gguf_validate_core::pipeline::SharedSource;
    let bytes = std::fs::read(support::root().join("corpus/split/y_valid/tiny-00001-of-00003.gguf")).unwrap();
    for container_only in [true, false] {
        let counted = std::sync::Arc::new(HeaderReads(gguf_validate_core::io::MemSource(bytes.clone()), 0.into()));
        let input = Input::Source { name: "tiny-00001-of-00003.gguf".into(), source: SharedSource(counted.clone()) };
        let validator = Validator::new(Options { container_only, ..Options::default() }).report_only(container_only);
        let settings = Settings { validator, ..Settings::default() };
        let seen = run_all(&Pipeline::new(settings), &[input], 1);
        assert!(!seen.is_empty() && seen[0].2, "{seen:?}");
        assert_eq!(counted.1.load(Ordering::Relaxed), 1, "container_only {container_only}: {seen:?}");
    }
}
