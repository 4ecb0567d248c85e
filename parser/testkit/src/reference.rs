//! Real files that are not part of the repository (gemma-3-270m,
//! llama.cpp's vocabularies and templates), fetched by `.ci/reference.sh`
//! and named by environment variables. Tests that need them are
//! `#[ignore = REASON]`: plain `cargo test` lists them as ignored with the
//! reason, and `cargo test -- --ignored` (what `.ci/run` does after the
//! suite) runs them, failing when a file is missing.

use std::path::PathBuf;

/// The path in `var`, which must be set and exist.
pub fn path(var: &str) -> PathBuf {
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        panic!("{var} is not set: run `source .ci/reference.sh && fetch_reference` first (this test needs the reference files)")
    });
    assert!(p.exists(), "{var}={} does not exist (source .ci/reference.sh && fetch_reference)", p.display());
    p
}

/// gemma-3-270m-q4_k_m.gguf (`GGUF_VALIDATE_GEMMA`).
pub fn gemma() -> PathBuf {
    path("GGUF_VALIDATE_GEMMA")
}

/// llama.cpp's tree as vendored by llama-cpp-python (`GGUF_VALIDATE_LLAMA_CPP`).
pub fn llama_cpp() -> PathBuf {
    path("GGUF_VALIDATE_LLAMA_CPP")
}
