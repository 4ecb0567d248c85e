//! `hash` throughput on a real model, side by side with `sha256sum` on the
//! same file in the same run (`cargo bench --bench hash`).
//!
//! Set `GGUF_VALIDATE_GEMMA=/path/to/model.gguf` (the gemma-3-270m Q4_K_M
//! file on the reference machine); without it the benchmark prints a note
//! and exits. The file is read once to warm the page cache, then each of
//! `RUNS` runs times, one after the other:
//! - `sha256sum`: coreutils over the whole file (a child process);
//! - `sha256 1-chain`: the `sha2` crate over the whole file in 1 MiB reads,
//!   in this process: one digest chain on one core;
//! - `hash sha256`, `hash xxh64`, `hash all+uuid`: what `gguf-validate
//!   hash [--algo sha256 | --all --uuid] FILE` does after parsing arguments:
//!   open, read the metadata, hash every tensor and the whole model
//!   (`sha256` is two chains over every byte: per tensor and whole model).
//!
//! Reported: median and min over the runs, GB/s of bytes read (the file
//! for `sha256sum` and the single chain, the tensor data for `hash`), the
//! ratio of each median to `sha256sum`'s, and the peak RSS.
#![allow(clippy::disallowed_macros, clippy::expect_used, clippy::unwrap_used)]

use std::io::Read;
use std::time::{Duration, Instant};

use gguf_validate_core::hash::{Algo, Algos, HashOptions, Part, hash_model, tensor_ranges};
use gguf_validate_core::io::{ByteSource, OpenPolicy, open};
use sha2::Digest as _;

const RUNS: usize = 7;

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

fn hash_file(path: &std::path::Path, algos: Algos) -> u64 {
    let src = open(path, &OpenPolicy::default()).expect("open");
    let tensors = tensor_ranges(&src).expect("tensor ranges");
    let parts = [Part { source: &src as &dyn ByteSource, tensors }];
    let d = hash_model(&parts, &HashOptions { algos, per_tensor: true }, &|_| {}, None).expect("hash");
    d.bytes
}

fn main() {
    let Some(path) = std::env::var_os("GGUF_VALIDATE_GEMMA") else {
        println!("hash bench: GGUF_VALIDATE_GEMMA is not set; skipping");
        return;
    };
    let path = std::path::PathBuf::from(path);
    let mut file_len = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    {
        let mut f = std::fs::File::open(&path).expect("open model");
        loop {
            let n = f.read(&mut buf).expect("read model");
            if n == 0 {
                break;
            }
            file_len += n as u64;
        }
    }
    let sha256sum_ok = std::process::Command::new("sha256sum").arg("--version").output().is_ok();
    let all = Algos::ALL_HASHES.with(Algo::Uuid);
    let mut times: Vec<(&str, Vec<Duration>, u64)> = vec![
        ("sha256sum", Vec::new(), file_len),
        ("sha256 1-chain", Vec::new(), file_len),
        ("hash sha256", Vec::new(), 0),
        ("hash xxh64", Vec::new(), 0),
        ("hash all+uuid", Vec::new(), 0),
    ];
    for _ in 0..RUNS {
        if sha256sum_ok {
            let t = Instant::now();
            let o = std::process::Command::new("sha256sum").arg(&path).output().expect("sha256sum");
            times[0].1.push(t.elapsed());
            assert!(o.status.success());
        }

        let t = Instant::now();
        let mut f = std::fs::File::open(&path).expect("open model");
        let mut h = sha2::Sha256::new();
        loop {
            let n = f.read(&mut buf).expect("read model");
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        std::hint::black_box(h.finalize());
        times[1].1.push(t.elapsed());

        for (i, algos) in [(2, Algos::NONE.with(Algo::Sha256)), (3, Algos::DEFAULT), (4, all)] {
            let t = Instant::now();
            let n = hash_file(&path, algos);
            times[i].1.push(t.elapsed());
            times[i].2 = n;
        }
    }
    let threads = rayon::current_num_threads();
    println!("file {} ({file_len} B, {} B of tensor data), {threads} threads, {RUNS} runs", path.display(), times[2].2);
    let base = (!times[0].1.is_empty()).then(|| median(times[0].1.clone()).0.as_secs_f64());
    println!("{:<15} {:>10} {:>10} {:>8} {:>14}", "what", "median_ms", "min_ms", "GB/s", "/ sha256sum");
    for (name, v, bytes) in times {
        if v.is_empty() {
            println!("{name:<15} (not installed)");
            continue;
        }
        let (med, min) = median(v);
        let gbs = bytes as f64 / med.as_secs_f64() / 1e9;
        let ratio = base.map_or("?".to_string(), |b| format!("{:.2}", med.as_secs_f64() / b));
        println!(
            "{name:<15} {:>10.1} {:>10.1} {gbs:>8.2} {ratio:>14}",
            med.as_secs_f64() * 1e3,
            min.as_secs_f64() * 1e3
        );
    }
    println!("peak RSS {}", status_kb("VmHWM:"));
}
