//! `--check-data` throughput on a real model (`cargo bench --bench check_data`).
//!
//! Set `GGUF_VALIDATE_GEMMA=/path/to/model.gguf` (the gemma-3-270m Q4_K_M
//! file on the reference machine); without it the benchmark prints a note
//! and exits. The file is read once to warm the page cache, then each of
//! `RUNS` runs times, side by side:
//! - `scan (memory)`: `check_data` over a copy of the whole file already in
//!   memory: the cost of the checks alone, what a memory map of a cached
//!   file could at best give;
//! - `scan (pread)`: `check_data` over the open file, read with positioned
//!   reads in chunks (what the CLI does: a file that shrinks gives an
//!   error, never SIGBUS);
//! - `validate+scan`: what `gguf-validate --check-data FILE` does after
//!   opening the file: metadata validation, the data view, the scan, the
//!   merge into the report.
//!
//! Reported: median and min over the runs, GB/s of tensor data (10^9 B/s),
//! and the process's peak RSS split into file-backed and anonymous pages.
#![allow(clippy::disallowed_macros, clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use gguf_validate_core::data_scan::{DataOptions, check_data};
use gguf_validate_core::io::{OpenPolicy, SliceSource, open};
use gguf_validate_core::{Options, Validator};

const RUNS: usize = 11;

fn median(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort_unstable();
    (v[v.len() / 2], v[0])
}

fn status_kb(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(key)).map(|l| l[key.len()..].trim().to_string()))
        .unwrap_or_else(|| "?".into())
}

fn main() {
    let Some(path) = std::env::var_os("GGUF_VALIDATE_GEMMA") else {
        println!("check_data bench: GGUF_VALIDATE_GEMMA is not set; skipping");
        return;
    };
    let path = std::path::PathBuf::from(path);
    // Warm the page cache through a small buffer (so that it does not
    // count towards the peak RSS).
    let mut file_len = 0usize;
    {
        use std::io::Read;
        let mut f = std::fs::File::open(&path).expect("open model");
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf).expect("read model");
            if n == 0 {
                break;
            }
            file_len += n;
        }
    }
    let opts = Options::default();
    let dopts = DataOptions::default();
    let whole_file = std::fs::read(&path).expect("read model");
    let mut in_memory = Vec::new();
    let mut pread = Vec::new();
    let mut whole = Vec::new();
    let mut data_bytes = 0;
    for _ in 0..RUNS {
        let src = SliceSource(&whole_file);
        let tensors = Validator::new(opts.clone()).validate(&src).expect("read").layout().tensors;
        let t = Instant::now();
        let r = check_data(&src, &tensors, &dopts, &|_| {}, None).expect("read");
        in_memory.push(t.elapsed());
        assert_eq!(r.findings, 0);
        data_bytes = r.bytes_checked;

        let src = open(&path, &OpenPolicy::default()).expect("open");
        let t = Instant::now();
        let r = check_data(&src, &tensors, &dopts, &|_| {}, None).expect("read");
        pread.push(t.elapsed());
        assert_eq!(r.bytes_checked, data_bytes);

        let t = Instant::now();
        let src = open(&path, &OpenPolicy::default()).expect("open");
        let v = Validator::new(opts.clone()).validate(&src).expect("read");
        let tensors = v.layout().tensors;
        let mut report = v.report;
        let mut r = check_data(&src, &tensors, &dopts, &|_| {}, None).expect("read");
        r.merge_into(&mut report, &opts);
        whole.push(t.elapsed());
        assert!(report.valid);
    }
    drop(whole_file);
    let threads = rayon::current_num_threads();
    println!("file {} ({file_len} B, {data_bytes} B of tensor data), {threads} threads, {RUNS} runs", path.display());
    println!("{:<15} {:>11} {:>11} {:>13}", "phase", "median_ms", "min_ms", "GB/s (median)");
    let ratio = median(pread.clone()).0.as_secs_f64() / median(in_memory.clone()).0.as_secs_f64();
    for (name, v) in [("scan (memory)", in_memory), ("scan (pread)", pread), ("validate+scan", whole)] {
        let (med, min) = median(v);
        let gbs = data_bytes as f64 / med.as_secs_f64() / 1e9;
        println!("{name:<15} {:>11.2} {:>11.2} {gbs:>13.2}", med.as_secs_f64() * 1e3, min.as_secs_f64() * 1e3);
    }
    println!("pread / memory time ratio (medians): {ratio:.2}");
    println!("peak RSS {} (includes the in-memory copy of the file)", status_kb("VmHWM:"));
}
