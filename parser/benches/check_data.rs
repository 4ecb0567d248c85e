//! `--check-data` throughput on a real model (`cargo bench --bench check_data`).
//!
//! Set `GGUF_VALIDATE_GEMMA=/path/to/model.gguf` (the gemma-3-270m Q4_K_M
//! file on the reference machine); without it the benchmark prints a note
//! and exits. The file is read once to warm the page cache, then each of
//! `RUNS` runs maps it afresh (as the CLI does, so page-table setup is
//! counted) and times:
//! - `scan`: `check_data` over every tensor;
//! - `validate+scan`: what `gguf-validate --check-data FILE` does after
//!   opening the file: metadata validation, the data view, the scan, the
//!   merge into the report.
//!
//! Reported: median and min over the runs, GB/s of tensor data (10^9 B/s),
//! and the process's peak RSS split into file-backed and anonymous pages.
#![allow(clippy::disallowed_macros, clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use gguf_validate::check_data::{DataOptions, check_data};
use gguf_validate::data::gguf_tensors;
use gguf_validate::{Options, io as gio, parse, validate_bytes};

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
    let mut scan = Vec::new();
    let mut whole = Vec::new();
    let mut data_bytes = 0;
    let mut mapped_rss = (String::new(), String::new());
    for _ in 0..RUNS {
        let bytes = gio::open(&path).expect("map");
        let parsed = parse::parse_bytes(&bytes).expect("gguf");
        let tensors = gguf_tensors(&parsed, bytes.len() as u64);
        let t = Instant::now();
        let r = check_data(&bytes, &tensors, &dopts, &|_| {});
        scan.push(t.elapsed());
        assert_eq!(r.findings, 0);
        data_bytes = r.bytes_checked;
        mapped_rss = (status_kb("RssFile:"), status_kb("RssAnon:"));
        drop(bytes);

        let bytes = gio::open(&path).expect("map");
        let t = Instant::now();
        let mut report = validate_bytes(&bytes, &opts);
        let parsed = parse::parse_bytes(&bytes).expect("gguf");
        let tensors = gguf_tensors(&parsed, bytes.len() as u64);
        let mut r = check_data(&bytes, &tensors, &dopts, &|_| {});
        r.set_gguf_indices(&parsed);
        r.merge_into(&mut report, &opts);
        whole.push(t.elapsed());
        assert!(report.valid);
    }
    let threads = rayon::current_num_threads();
    println!("file {} ({file_len} B, {data_bytes} B of tensor data), {threads} threads, {RUNS} runs", path.display());
    println!("{:<14} {:>11} {:>11} {:>13}", "phase", "median_ms", "min_ms", "GB/s (median)");
    for (name, v) in [("scan", scan), ("validate+scan", whole)] {
        let (med, min) = median(v);
        let gbs = data_bytes as f64 / med.as_secs_f64() / 1e9;
        println!("{name:<14} {:>11.2} {:>11.2} {gbs:>13.2}", med.as_secs_f64() * 1e3, min.as_secs_f64() * 1e3);
    }
    println!(
        "peak RSS {} (after a scan, while mapped: file-backed {}, anonymous {})",
        status_kb("VmHWM:"),
        mapped_rss.0,
        mapped_rss.1
    );
}
