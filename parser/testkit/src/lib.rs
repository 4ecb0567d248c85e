//! What the integration tests and benchmarks of the workspace share (each
//! test file has `use gguf_validate_testkit as support;`): the binary runner
//! and its output readers ([`cli`]), temporary directories removed on drop
//! ([`tmp`]), the loopback HTTP server ([`http`]), the reference files
//! ([`reference`](mod@reference)) and the workspace root ([`root`]).
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::len_without_is_empty, missing_docs)]

pub mod cli;
pub mod http;
pub mod reference;
pub mod tmp;

/// The workspace root (the corpus is `root()/corpus`), where the CLI tests
/// run the binary.
pub fn root() -> &'static std::path::Path {
    std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}
