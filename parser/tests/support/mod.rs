//! Helpers shared by the integration tests (each file has `mod support;`)
//! and benchmarks: the binary runner and its output readers (`cli`),
//! temporary directories removed on drop (`tmp`), the loopback HTTP server
//! (`http`), the reference files (`reference`) and the workspace root.
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "remote")]
pub mod http;
pub mod reference;
pub mod tmp;

/// The workspace root (the corpus is `root()/corpus`), where the CLI tests
/// run the binary.
#[allow(dead_code)]
pub fn root() -> &'static std::path::Path {
    std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}
