//! Remote validation of gemma-3-270m against a loopback HTTP server (the
//! test server of `gguf_validate_testkit::http`, serving the file from disk
//! with range requests): bytes and requests used, and the time next to
//! validating the file on disk; the same for a copy truncated to 100 MB
//! (the missing data is reported from the size the server gives), and
//! `--check-data` (the data section streamed in ranges) next to local.
//!
//! ```text
//! GGUF_VALIDATE_GEMMA=path/to/gemma-3-270m-q4_k_m.gguf cargo bench -p gguf-validate --bench remote
//! ```
//! Times are medians of 5 runs of the release binary (3 for the data
//! scans); the machine may be shared, so compare within one run.
#![allow(clippy::disallowed_macros)]

use gguf_validate_testkit::http;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use http::{Body, File, Server};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median seconds of the binary over `args`, and the last run's stdout.
fn time_s(runs: usize, args: &[&str]) -> (f64, Vec<u8>) {
    let bin = env!("CARGO_BIN_EXE_gguf-validate");
    let mut v = Vec::new();
    let mut out = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let o = Command::new(bin)
            .args(args)
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY")
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.code().is_some(), "the binary ran");
        v.push(t.elapsed().as_secs_f64());
        out = o.stdout;
    }
    (median(v), out)
}

fn remote_of(stdout: &[u8]) -> (serde_json::Value, serde_json::Value) {
    let v: serde_json::Value = serde_json::from_slice(stdout).unwrap();
    let f = v["files"][0].clone();
    (f["summary"]["remote"].clone(), f)
}

fn main() {
    let Some(gemma) = std::env::var_os("GGUF_VALIDATE_GEMMA") else {
        println!("GGUF_VALIDATE_GEMMA not set: skipping the remote benchmark");
        return;
    };
    let path = Path::new(&gemma).to_path_buf();
    let len = std::fs::metadata(&path).unwrap().len();
    let cut_len = 100_000_000u64.min(len);
    let server = Server::start();
    server.file("/gemma.gguf", File::of(Body::Disk { path: path.clone(), len }));
    server.file("/gemma-cut.gguf", File::of(Body::Disk { path: path.clone(), len: cut_len }));
    let cut_dir = std::env::temp_dir().join(format!("gguf-remote-bench-{}", std::process::id()));
    std::fs::create_dir_all(&cut_dir).unwrap();
    let cut_local = cut_dir.join("gemma-cut.gguf");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&cut_local).unwrap();
        let mut r = std::io::Read::take(std::fs::File::open(&path).unwrap(), cut_len);
        std::io::copy(&mut r, &mut f).unwrap();
        f.flush().unwrap();
    }
    let local = path.to_str().unwrap();
    let (t_local, out) = time_s(5, &["--format", "json", local]);
    let (_, lf) = remote_of(&out);
    let metadata = lf["summary"]["data_offset"].as_u64().unwrap();
    println!("gemma-3-270m: {len} bytes, metadata (header, key/values, tensor infos) {metadata} bytes");
    println!("{:<34} {:>9} {:>12} {:>9} {:>12}", "", "median", "fetched", "requests", "x metadata");
    println!("{:<34} {:>7.1}ms", "local file", t_local * 1e3);
    for (label, url, local) in [
        ("over HTTP (ranges)", server.url("/gemma.gguf"), local.to_string()),
        ("truncated to 100 MB, over HTTP", server.url("/gemma-cut.gguf"), cut_local.to_str().unwrap().to_string()),
    ] {
        server.clear_log();
        let (t, out) = time_s(5, &["--format", "json", &url]);
        let (remote, f) = remote_of(&out);
        let log = server.log();
        let served: u64 = log.iter().map(|l| l.body_bytes).sum::<u64>() / 5;
        let fetched = remote["bytes_fetched"].as_u64().unwrap();
        let requests = remote["requests"].as_u64().unwrap();
        assert_eq!(served, fetched, "the server sent what the report says");
        assert_eq!(log.len() as u64, requests * 5);
        println!(
            "{label:<34} {:>7.1}ms {fetched:>12} {requests:>9} {:>11.2}x   valid: {}",
            t * 1e3,
            fetched as f64 / metadata as f64,
            f["valid"]
        );
        let (t_local_cut, out) = time_s(5, &["--format", "json", &local]);
        let (_, lf) = remote_of(&out);
        let rules = |f: &serde_json::Value| -> Vec<String> {
            f["diagnostics"].as_array().unwrap().iter().map(|d| d["rule"].as_str().unwrap().to_string()).collect()
        };
        assert_eq!(rules(&f), rules(&lf), "same findings as on disk");
        let mut kinds = rules(&f);
        kinds.dedup();
        let findings = if kinds.is_empty() {
            "no findings".to_string()
        } else {
            format!("{} errors, {} warnings: {}", f["counts"]["errors"], f["counts"]["warnings"], kinds.join(", "))
        };
        println!("{:<34} {:>7.1}ms   (the same {findings})", "  the same bytes on disk", t_local_cut * 1e3);
    }
    // The data scan: the data section in ranges, next to the file on disk.
    server.clear_log();
    let (t_remote, out) = time_s(3, &["--check-data", "--format", "json", &server.url("/gemma.gguf")]);
    let (remote, _) = remote_of(&out);
    let (t_disk, _) = time_s(3, &["--check-data", "--format", "json", local]);
    println!(
        "--check-data over HTTP: {:.0} ms ({} bytes in {} requests), on disk {:.0} ms",
        t_remote * 1e3,
        remote["bytes_fetched"],
        remote["requests"],
        t_disk * 1e3
    );
    std::fs::remove_dir_all(&cut_dir).ok();
}
