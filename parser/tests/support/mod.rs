//! Helpers shared by integration tests and benchmarks.
#[cfg(feature = "remote")]
pub mod http;
pub mod reference;
