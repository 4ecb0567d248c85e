//! `gguf-validate`: a strict validator for GGUF model files.
//!
//! Layers, each depending only on the ones above it:
//! - [`types`], [`limits`]: the type tables and named limits;
//! - [`parse`]: a nom parser over `&[u8]` that builds a borrowed [`parse::GgufFile`];
//! - [`rules`]: the rule catalogue (ids, citations, severities per profile);
//! - [`validate`]: runs the rules over a parsed file and yields a [`report::Report`];
//! - [`numerics`]: dequantize / reference-quantize for every ggml type;
//! - [`check_data`]: the `--check-data` scan of tensor values (rayon, in place);
//! - [`split_set`], [`split_name`]: split sets (`gguf-split` shards) validated
//!   as a whole, and their shard names;
//! - [`hash`]: digests of tensor data and manifests (llama-gguf-hash's layout);
//! - [`imatrix`]: llama.cpp importance-matrix files (GGUF and legacy `.dat`);
//! - `harness` (feature `harness`): fuzzing of third-party GGUF writers and
//!   quantizers against what they were asked to write;
//! - [`io`]: the only module that opens files; the [`io::ByteSource`] every
//!   layer reads through (positioned reads, no memory map, no `unsafe`);
//! - [`remote`]: URLs (`http(s)://`, `hf://`) resolved for the front end,
//!   and with the `remote` feature the [`io::ByteSource`] over HTTP range
//!   requests.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::todo, clippy::unimplemented)]
#![warn(missing_docs)]

pub mod check;
pub mod check_data;
pub mod config;
pub mod data;
pub mod derive;
pub mod dump;
#[cfg(feature = "harness")]
pub mod harness;
pub mod hash;
pub mod imatrix;
pub mod io;
pub mod legacy;
pub mod limits;
/// Dequantize / quantize for every ggml type: the `gguf-numerics` crate.
pub use gguf_numerics as numerics;
pub mod parse;
pub mod remote;
pub mod report;
pub mod rules;
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
pub use validate::{NeedMoreData, Validated, validate_bytes, validate_prefix, validate_source};
