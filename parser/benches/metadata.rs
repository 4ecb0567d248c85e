//! Metadata validation benchmark: full strict validation of a real model's
//! metadata (no tensor data read), with ggml's reader and gguf-py timed in
//! the same run when a reference Python is available.
//!
//! ```text
//! GGUF_VALIDATE_GEMMA=path/to/gemma-3-270m-q4_k_m.gguf \
//! GGUF_REF_PYTHON=path/to/venv/bin/python \
//!   cargo bench -p gguf-validate-core --bench metadata
//! ```
//! Without `GGUF_VALIDATE_GEMMA` it measures the largest gguf-py sample.
//! Figures are medians; the machine may be shared, so compare the ratio.
#![allow(clippy::disallowed_macros)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use gguf_validate_core::io::{OpenPolicy, open};
use gguf_validate_core::{Options, Profile, Validator};

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of `f` over `runs` runs.
fn time_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        f();
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    median(v)
}

/// The chat-template rules' share of the metadata validation: every
/// `template-*` rule over the parsed metadata of the file, and
/// `template::analyse` on llama.cpp's templates (`GGUF_VALIDATE_TEMPLATES`,
/// default: `$GGUF_VALIDATE_LLAMA_CPP/models/templates`), side by side with the full
/// validation's median.
fn template_stage(path: &std::path::Path, full_ms: f64) {
    use gguf_validate_core::template;
    let file_len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut buf = Vec::new();
    let mut f = std::fs::File::open(path).expect("open");
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut f, 16 << 20), &mut buf).expect("read");
    let Some(parsed) = gguf_validate_core::parse::parse_prefix(&buf, file_len) else {
        println!("template stage: metadata not within the first 16 MiB; not measured");
        return;
    };
    let templates = parsed.file.kvs.iter().filter(|kv| template::is_template_key(kv.key.bytes)).count();
    let stage = time_ms(50, || {
        std::hint::black_box(template::file_findings(&parsed.file));
    });
    println!(
        "template rules over this file's metadata ({templates} template keys, every other string scanned): median {stage:.3} ms = {:.2}% of the metadata validation ({full_ms:.3} ms)",
        100.0 * stage / full_ms
    );
    let dir = std::env::var_os("GGUF_VALIDATE_TEMPLATES").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("GGUF_VALIDATE_LLAMA_CPP").map(PathBuf::from).unwrap_or_default().join("models/templates")
    });
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("set GGUF_VALIDATE_LLAMA_CPP (or GGUF_VALIDATE_TEMPLATES) to time the analysis of real templates");
        return;
    };
    let mut sources: Vec<(String, String)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jinja"))
        .filter_map(|e| Some((e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).ok()?)))
        .collect();
    sources.sort();
    let total_bytes: usize = sources.iter().map(|(_, s)| s.len()).sum();
    let all = time_ms(10, || {
        for (_, s) in &sources {
            std::hint::black_box(template::analyse(s));
        }
    });
    println!(
        "template::analyse over {} llama.cpp templates ({total_bytes} bytes): median {all:.3} ms in all, {:.3} ms per template = {:.2}% of the metadata validation per template",
        sources.len(),
        all / sources.len().max(1) as f64,
        100.0 * all / sources.len().max(1) as f64 / full_ms
    );
    if let Some((name, s)) = sources.iter().find(|(n, _)| n.contains("gemma")) {
        let one = time_ms(50, || {
            std::hint::black_box(template::analyse(s));
        });
        println!(
            "template::analyse on {name} ({} bytes, a gemma template): median {one:.3} ms = {:.2}% of the metadata validation",
            s.len(),
            100.0 * one / full_ms
        );
    }
}

/// The hub scan's judgement (a verdict per profile): one pass judged under
/// every profile (`Validator::with_every_profile`, what the scan does) against a
/// validation per profile (what it did before: the metadata read once, then
/// validated three times), in alternating runs.
fn judge_stage(path: &std::path::Path, runs: usize) {
    use gguf_validate_core::pipeline::scan::PrefixSource;
    let every = Validator::default().with_every_profile(true);
    let (mut one, mut three) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let src = open(path, &OpenPolicy::default()).expect("open");
        let t = Instant::now();
        std::hint::black_box(every.validate(&src).expect("judge"));
        one.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let first = Validator::new(Options::new(Profile::Strict)).validate(&src).expect("read");
        let again = PrefixSource { prefix: &first.metadata, rest: &src };
        for p in [Profile::Spec, Profile::Ggml] {
            std::hint::black_box(Validator::new(Options::new(p)).validate(&again).expect("read"));
        }
        three.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "hub-scan judge, 3 profiles: one pass median {:.3} ms (min {:.3}); a validation per profile median {:.3} ms (min {:.3})",
        median(one.clone()),
        min(&one),
        median(three.clone()),
        min(&three)
    );
}

/// A support window of every known llama.cpp release (`--llama-cpp
/// b3889..`) against the default verdict (the pinned tree; every report
/// still says which releases load the file), in alternating runs.
fn releases_stage(path: &std::path::Path, runs: usize) {
    use gguf_validate_core::llama_cpp::Release;
    let oldest = Release::all().next().expect("a release");
    let window = format!("{}..", oldest.name()).parse().expect("a window");
    let plain = Validator::default();
    let every = Validator::default().with_llama_cpp(Some(window));
    let (mut default, mut judged) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let src = open(path, &OpenPolicy::default()).expect("open");
        let t = Instant::now();
        std::hint::black_box(plain.validate(&src).expect("read"));
        default.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        std::hint::black_box(every.validate(&src).expect("read"));
        judged.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "llama.cpp releases: default median {:.3} ms (min {:.3}); --llama-cpp {window} median {:.3} ms (min {:.3})",
        median(default.clone()),
        min(&default),
        median(judged.clone()),
        min(&judged)
    );
}

fn main() {
    let path = std::env::var_os("GGUF_VALIDATE_GEMMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/gguf-py/llama_tiny.gguf")));
    let runs = 50;
    let opts = Options::new(Profile::Strict);
    let hwm_before = vm_hwm_kib();
    // Warm the page cache and check the verdict once.
    let validator = Validator::new(opts.clone());
    let first = validator.validate(&open(&path, &OpenPolicy::default()).expect("open")).expect("read");
    assert!(first.report.valid, "{:?}", first.report.diagnostics);
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let src = open(&path, &OpenPolicy::default()).expect("open");
        let report = validator.validate(&src).expect("read");
        std::hint::black_box(&report);
        drop(src);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let ours = median(times.clone());
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    let hwm = vm_hwm_kib();
    println!("file: {} ({} bytes)", path.display(), std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0));
    println!(
        "gguf-validate strict metadata validation (open + positioned reads of the metadata + parse + all rules): median {ours:.3} ms, min {best:.3} ms over {runs} runs"
    );
    if let (Some(b), Some(a)) = (hwm_before, hwm) {
        println!("peak RSS of this process: {:.1} MB (before: {:.1} MB)", a as f64 / 1024.0, b as f64 / 1024.0);
    }
    template_stage(&path, ours);
    judge_stage(&path, runs);
    releases_stage(&path, runs);
    let Some(python) = std::env::var_os("GGUF_REF_PYTHON") else {
        println!(
            "set GGUF_REF_PYTHON to a python with llama-cpp-python==0.3.36 and gguf==0.19.0 for the side-by-side comparison"
        );
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../benches/metadata_ref.py");
    let out = Command::new(python).arg(script).arg(&path).arg("20").arg("3").output().expect("run reference script");
    if !out.status.success() {
        println!("reference script failed: {}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("reference JSON");
    let ggml = v["ggml_median_ms"].as_f64().unwrap_or(f64::NAN);
    let py = v["gguf_py_median_s"].as_f64().unwrap_or(f64::NAN) * 1e3;
    println!(
        "ggml gguf_init_from_file (no_alloc, {}): median {ggml:.3} ms over 20 runs",
        v["versions"]["llama_cpp_python"]
    );
    println!("gguf-py GGUFReader + all fields ({}): median {py:.1} ms over 3 runs", v["versions"]["gguf"]);
    println!(
        "=> gguf-validate is {:.1}x faster than ggml's reader and {:.0}x faster than gguf-py",
        ggml / ours,
        py / ours
    );
}
