#![cfg_attr(fuzzing, no_main)]
#![forbid(unsafe_code)]
gguf_fuzz::target!(unstructured gguf_fuzz::one_fault::run);
