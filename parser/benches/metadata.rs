//! Metadata validation benchmark: full strict validation of a real model's
//! metadata (no tensor data read), with ggml's reader and gguf-py timed in
//! the same run when a reference Python is available.
//!
//! ```text
//! GGUF_VALIDATE_GEMMA=path/to/gemma-3-270m-q4_k_m.gguf \
//! GGUF_REF_PYTHON=path/to/venv/bin/python \
//!   cargo bench -p gguf-validate --bench metadata
//! ```
//! Without `GGUF_VALIDATE_GEMMA` it measures the largest gguf-py sample.
//! Figures are medians; the machine may be shared, so compare the ratio.
#![allow(clippy::disallowed_macros)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use gguf_validate::io::{OpenPolicy, open};
use gguf_validate::{Options, Profile, validate_source};

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let path = std::env::var_os("GGUF_VALIDATE_GEMMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/gguf-py/llama_tiny.gguf")));
    let runs = 50;
    let opts = Options::new(Profile::Strict);
    let hwm_before = vm_hwm_kib();
    // Warm the page cache and check the verdict once.
    let first = validate_source(&open(&path, &OpenPolicy::default()).expect("open"), &opts).expect("read");
    assert!(first.report.valid, "{:?}", first.report.diagnostics);
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let src = open(&path, &OpenPolicy::default()).expect("open");
        let report = validate_source(&src, &opts).expect("read");
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
    let Some(python) = std::env::var_os("GGUF_REF_PYTHON") else {
        println!(
            "set GGUF_REF_PYTHON to a python with llama-cpp-python==0.3.36 and gguf==0.19.0 for the side-by-side comparison"
        );
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/metadata_ref.py");
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
