//! Many files: the CLI validating a folder of 1,000 small files (the
//! conformance corpus, copied round-robin) with one job and with one per
//! CPU, and the gemma-3-270m file alone, in files per second.
//!
//! ```text
//! GGUF_VALIDATE_GEMMA=path/to/gemma-3-270m-q4_k_m.gguf cargo bench -p gguf-validate-core --bench many
//! ```
//! Figures are medians of 5 runs of the release binary; the machine may be
//! shared, so compare the ratio within one run.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bin() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Where cargo builds (CARGO_TARGET_DIR when set, as cargo itself does).
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let b = target.join("release/gguf-validate");
    if !b.exists() {
        let ok = Command::new("cargo")
            .args(["build", "--release", "-q", "-p", "gguf-validate"])
            .current_dir(&root)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "cargo build --release");
    }
    b
}

/// Median seconds of the binary over `args`.
fn time_s(bin: &Path, args: &[&str]) -> f64 {
    let mut v = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let status = Command::new(bin).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
        assert!(status.code().is_some(), "the binary ran");
        v.push(t.elapsed().as_secs_f64());
    }
    median(v)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = bin();
    let dir = std::env::temp_dir().join(format!("gguf-validate-bench-many-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("corpus/gguf"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    sources.sort();
    let mut bytes = 0u64;
    for i in 0..1000 {
        let src = &sources[i % sources.len()];
        let dst = dir.join(format!("{i:04}-{}", src.file_name().unwrap().to_string_lossy()));
        bytes += std::fs::copy(src, dst).unwrap();
    }
    let d = dir.to_str().unwrap();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let one = time_s(&bin, &["--quiet", "--jobs", "1", d]);
    let all = time_s(&bin, &["--quiet", d]);
    println!("1,000 small files ({} KiB in all), median of 5 runs:", bytes / 1024);
    println!("  --jobs 1        {:8.1} ms   {:7.0} files/s", one * 1e3, 1000.0 / one);
    println!("  --jobs {cpus:<2}       {:8.1} ms   {:7.0} files/s   ({:.2}x)", all * 1e3, 1000.0 / all, one / all);
    if let Some(gemma) = std::env::var_os("GGUF_VALIDATE_GEMMA") {
        let g = time_s(&bin, &[gemma.to_str().unwrap()]);
        println!("gemma-3-270m (253 MB, metadata): {:.1} ms per file ({:.0} files/s)", g * 1e3, 1.0 / g);
    }
    std::fs::remove_dir_all(&dir).ok();
}
