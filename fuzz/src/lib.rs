//! Fuzz properties of `gguf-validate`, one module per property (the
//! layout of wasm-tools' `fuzz/` crate).
//!
//! Each module exposes `run`, taking either raw bytes or an
//! [`Unstructured`]. The cargo-fuzz targets in `fuzz_targets/` are
//! two-line shims over these functions ([`target!`]), and every module has
//! a seeded `smoke` test, so `cargo test` runs each property a few hundred
//! times on every commit.
//!
//! | module | input | property |
//! |---|---|---|
//! | [`parse_validate`] | raw bytes | every profile: no panic, offsets inside the file, same report twice, internal consistency; strict-valid files round-trip through the writer |
//! | [`generated_valid`] | `Unstructured` | a generated file has zero errors under its profile(s), and parse → model → bytes is the identity (dump JSON too) |
//! | [`one_fault`] | `Unstructured` | a generated file with one injected fault is rejected with the expected rule |
//! | [`incremental`] | raw bytes | validating a growing prefix gives the whole-buffer report |
//! | [`dequant`] | `Unstructured` | dequantize never panics; output finite when the scales are |
//! | [`quant_roundtrip`] | `Unstructured` | quantize then dequantize stays within the type's error bound |
//! | [`imatrix`] | raw bytes | llama.cpp importance-matrix files: no panic, deterministic, weights bounded by the bytes and finite |
//! | [`remote_response`] | raw bytes (responses) | remote reads against a scripted server: no panic, bounded connections, requests, bytes and time, no secret in a message |
//! | [`config_file`] | raw bytes, and `Unstructured` | `gguf-validate.toml`: no panic, deterministic, errors name the file, applied reports stay consistent, a discovered config never weakens a security rule; generated configs match a model of the format |
//! | [`baseline`] | raw bytes | baselines: a finding is set aside exactly when its identity is in the baseline; write then read gives the same identities |
//! | [`template`] | raw bytes (as text) | the chat-template analysis: no panic, bounded, deterministic, positions inside the text |
#![forbid(unsafe_code)]

use arbitrary::Unstructured;
// The seeded smoke tests draw from the workspace's one generator.
use gguf_validate_core::seeded::SplitMix64;

pub mod baseline;
pub mod config_file;
pub mod dequant;
pub mod generated_valid;
pub mod imatrix;
pub mod incremental;
pub mod one_fault;
pub mod parse_validate;
pub mod quant_roundtrip;
pub mod remote_response;
pub mod template;

/// Defines the libFuzzer entry point of a `fuzz_targets/` shim: `bytes`
/// for a `fn(&[u8])` property, `unstructured` for a
/// `fn(&mut Unstructured) -> arbitrary::Result<()>` one. Outside cargo-fuzz
/// (no `--cfg fuzzing`) it defines an empty `main`, so the targets build
/// with the rest of the workspace.
#[macro_export]
macro_rules! target {
    (bytes $prop:path) => {
        #[cfg(fuzzing)]
        libfuzzer_sys::fuzz_target!(|data: &[u8]| $prop(data));
        #[cfg(not(fuzzing))]
        fn main() {}
    };
    (unstructured $prop:path) => {
        #[cfg(fuzzing)]
        libfuzzer_sys::fuzz_target!(|data: &[u8]| $crate::run_unstructured(data, $prop));
        #[cfg(not(fuzzing))]
        fn main() {}
    };
}

/// Runs an `Unstructured` property on raw bytes. Running out of input is
/// not a failure.
pub fn run_unstructured(data: &[u8], run: impl Fn(&mut Unstructured<'_>) -> arbitrary::Result<()>) {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
}

/// Seed of the smoke tests: `GGUF_FUZZ_SEED`, or a fixed value so that
/// `cargo test` is deterministic.
pub fn smoke_seed() -> u64 {
    std::env::var("GGUF_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x6767_7566)
}

/// Runs an `Unstructured` property `n` times on seeded random input (as
/// wasm-tools' `test_n_times`).
pub fn test_n_times(n: u32, run: impl Fn(&mut Unstructured<'_>) -> arbitrary::Result<()>) {
    let mut rng = SplitMix64::new(smoke_seed());
    for _ in 0..n {
        let buf = rng.bytes_below(8192);
        run_unstructured(&buf, &run);
    }
}

/// Inputs for the byte-level properties' smoke tests: generated files
/// (valid under some profile), single-fault mutants and raw random bytes,
/// in turn.
pub fn smoke_files(n: u32) -> Vec<Vec<u8>> {
    use gguf_validate_core::smith;
    let mut rng = SplitMix64::new(smoke_seed() ^ 0x5eed);
    let mut out = Vec::new();
    for i in 0..n {
        let buf = rng.bytes_below(8192);
        let mut u = Unstructured::new(&buf);
        let file = match i % 3 {
            0 => smith::arbitrary_file(&mut u).ok().map(|(_, m)| m.to_bytes()),
            1 => smith::arbitrary_file(&mut u)
                .ok()
                .and_then(|(_, m)| smith::mutate::mutate(&mut u, &m).ok().flatten())
                .map(|m| m.bytes),
            _ => None,
        };
        out.push(file.unwrap_or(buf));
    }
    out
}

/// Writes a test case to `$GGUF_FUZZ_LOG/<name>-<n>.gguf` (and what it is
/// to `.txt`) when that variable is set
/// (like wasm-tools' `log_wasm` under `RUST_LOG=debug`): normal runs pay
/// nothing.
pub fn log_case(name: &str, bytes: &[u8], what: &dyn std::fmt::Debug) {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let Some(dir) = std::env::var_os("GGUF_FUZZ_LOG") else { return };
    let dir = std::path::PathBuf::from(dir);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{name}-{n}.gguf")), bytes);
    let _ = std::fs::write(dir.join(format!("{name}-{n}.txt")), format!("{what:#?}\n"));
}
