#![cfg_attr(fuzzing, no_main)]
gguf_fuzz::target!(unstructured gguf_fuzz::generated_valid::run);
