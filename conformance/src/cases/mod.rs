//! Case definitions, one module per part of the file.

pub mod adapter;
pub mod diffusion;
pub mod header;
pub mod imatrix;
pub mod keys;
pub mod kv;
pub mod layout;
pub mod model;
pub mod projector;
pub mod security;
pub mod template;
pub mod tensors;
pub mod test_gguf;
pub mod types;
