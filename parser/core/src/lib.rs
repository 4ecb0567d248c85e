//! `gguf_validate_core` (the `gguf-validate-core` package): a strict validator for GGUF model files.
//!
//! Layers, each depending only on the ones above it (ARCHITECTURE.md,
//! "Layers of the library"; `tests/module_graph.rs` checks both lists
//! against the code):
//! 1. [`types`], [`limits`], [`rules`], [`seeded`], [`llama_cpp`], [`loader`]: the type
//!    tables, the named limits, the rule catalogue (ids, citations,
//!    severities per profile), the seeded generator (SplitMix64) every
//!    reproducible random value comes from, the llama.cpp releases users run
//!    and what each knows, the loaders a file is judged against; the ggml type table and kernels are [`numerics`]
//!    (the `gguf-numerics` crate);
//! 2. [`io`], [`remote`], [`split_name`], `scratch`: reading and naming
//!    inputs, and the memory that holds them. [`io`]
//!    is the only module that opens files and defines the
//!    [`io::ByteSource`] every layer reads through (positioned reads, no
//!    memory map, no `unsafe`); [`remote`] resolves URLs (`http(s)://`,
//!    `hf://`) and redacts them (the [`io::ByteSource`] over HTTP range
//!    requests is the `gguf-validate-http` crate); [`split_name`] names the
//!    shards of a split set and finds a shard's siblings; `scratch` gives
//!    a check zeroed working memory in huge pages;
//! 3. [`parse`], [`data`]: a nom parser over `&[u8]` that builds a borrowed
//!    [`parse::GgufFile`], and where each tensor's bytes lie;
//! 4. [`report`]: diagnostics, the reporting policy and the verdict;
//! 5. [`check`], [`legacy`], [`data_scan`]: the rules over a parsed GGUF
//!    file, the pre-GGUF formats, and the `--check-data` scan of tensor
//!    values (rayon, in place);
//! 6. [`validate`] ([`Validator`], the one entry point, yielding a
//!    [`Validated`]: the reports, the metadata and its parse),
//!    [`dump`], [`hash`] (digests of tensor data and manifests in
//!    llama-gguf-hash's layout), [`split_set`] (split sets validated as a
//!    whole), [`config`] (`gguf-validate.toml`), [`imatrix`] (llama.cpp
//!    importance-matrix files), [`derive`](mod@derive) (provenance of a quant),
//!    [`write`](mod@write) (a minimal writer), [`rewrite`] (a file written
//!    again with its metadata changed and its tensor data copied byte for
//!    byte), [`fix`] (the fixes of a report's findings) and `smith` (feature
//!    `arbitrary`: valid files and single faults);
//! 7. [`pipeline`]: what front ends run: an [`pipeline::Input`] (path, URL
//!    or bytes) and the settings in, a typed [`pipeline::Outcome`] per file
//!    and a report per split set out, in input order, with the config's
//!    policy applied; URLs are opened through a [`remote::UrlOpener`] the
//!    front end passes in;
//! 8. [`output`]: a run's results as text, one renderer per format (human,
//!    JSON, JSON Lines, SARIF, JUnit, GitHub annotations).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::todo, clippy::unimplemented)]
#![warn(missing_docs)]

pub mod check;
pub mod config;
pub mod data;
pub mod data_scan;
pub mod derive;
pub mod dump;
pub mod fix;
pub mod hash;
pub mod imatrix;
pub mod io;
pub mod legacy;
pub mod limits;
pub mod llama_cpp;
pub mod loader;
/// Dequantize / quantize for every ggml type: the `gguf-numerics` crate.
pub use gguf_numerics as numerics;
pub mod output;
pub mod parse;
pub mod pipeline;
pub mod remote;
pub mod report;
pub mod rewrite;
pub mod rules;
mod scratch;
pub mod seeded;
#[cfg(feature = "arbitrary")]
pub mod smith;
pub mod split_name;
pub mod split_set;
pub mod types;
pub mod validate;
pub mod write;

pub use check::template;
pub use parse::{ByteOrder, GgufFile, Parsed};
pub use report::{Cause, Diagnostic, Options, Report};
pub use rules::{Level, Profile, RULES, RuleId};
pub use validate::{NeedMoreData, Validated, Validator};
