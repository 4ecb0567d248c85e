#![cfg_attr(fuzzing, no_main)]
#![forbid(unsafe_code)]
gguf_fuzz::target!(bytes gguf_fuzz::parse_validate::run);
