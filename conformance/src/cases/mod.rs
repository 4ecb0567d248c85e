//! Case definitions, one module per part of the file.

pub mod header;
pub mod keys;
pub mod kv;
pub mod layout;
pub mod tensors;
pub mod types;
