#![cfg_attr(fuzzing, no_main)]
gguf_fuzz::target!(bytes gguf_fuzz::config_file::run);
