//! Dequantize and reference-quantize for every ggml type.
#![forbid(unsafe_code)]
