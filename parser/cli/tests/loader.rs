//! `--loader`: which program a file is judged against. Unset, a diffusion
//! model is judged for stable-diffusion.cpp (with ComfyUI-GGUF's refusals
//! as warnings) and anything else for llama.cpp; set, every file is judged
//! for that loader, from the command line or the config, and the JSON
//! report names it (`summary.loader`).

use gguf_validate_testkit as support;

use support::cli::{code, run, run_in, stdout};
use support::root;

fn corpus(name: &str) -> String {
    root().join("corpus/gguf").join(name).to_string_lossy().into_owned()
}

fn sample() -> String {
    root().join("corpus/samples/tiny-llama.gguf").to_string_lossy().into_owned()
}

/// (exit code, loader, rule ids with their severity) of one JSON run.
fn judged(args: &[&str]) -> (i32, String, Vec<String>) {
    let out = run(&[&["--no-config", "--format", "json"], args].concat());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json report");
    let file = &v["files"][0];
    let loader = file["summary"]["loader"].as_str().unwrap_or("-").to_string();
    let rules = file["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| format!("{}:{}", d["severity"].as_str().unwrap_or("?"), d["rule"].as_str().unwrap_or("?")))
        .collect();
    (code(&out), loader, rules)
}

#[test]
fn a_diffusion_model_is_judged_for_stable_diffusion_cpp_unless_told_otherwise() {
    let flux = corpus("y_diffusion_flux_tiny.gguf");
    assert_eq!(judged(&[&flux]), (0, "sd.cpp".to_string(), vec![]));
    // judged for llama.cpp, FLUX is an architecture it refuses
    let (exit, loader, rules) = judged(&["--loader", "llama.cpp", &flux]);
    assert_eq!((exit, loader.as_str()), (1, "llama.cpp"));
    assert!(rules.contains(&"error:model-architecture-refused".to_string()), "{rules:?}");
    // the boundary: a llama model judged for llama.cpp has no such finding
    let (exit, loader, rules) = judged(&["--loader", "llama.cpp", &sample()]);
    assert_eq!((exit, loader.as_str()), (0, "llama.cpp"), "{rules:?}");
    // a llama model judged for stable-diffusion.cpp is no model it knows
    let (exit, loader, rules) = judged(&["--loader", "sd.cpp", &sample()]);
    assert_eq!((exit, loader.as_str()), (1, "sd.cpp"));
    assert!(rules.contains(&"error:diffusion-version-unknown".to_string()), "{rules:?}");
}

#[test]
fn comfyui_gguf_turns_its_refusals_into_errors_and_stable_diffusion_cpp_s_into_warnings() {
    let orig_shape = corpus("y_diffusion_comfyui_orig_shape_u32.gguf");
    assert_eq!(judged(&[&orig_shape]).2, vec!["warning:comfyui-orig-shape".to_string()]);
    let (exit, loader, rules) = judged(&["--loader", "comfyui-gguf", &orig_shape]);
    assert_eq!((exit, loader.as_str(), rules), (1, "comfyui-gguf", vec!["error:comfyui-orig-shape".to_string()]));
    let crash = corpus("i_diffusion_flux_two_tensors.gguf");
    assert_eq!(judged(&[&crash]).2, vec!["error:diffusion-crash".to_string()]);
    let (exit, _, rules) = judged(&["--loader", "comfyui-gguf", &crash]);
    assert_eq!((exit, rules), (0, vec!["warning:diffusion-crash".to_string()]));
    // the command line's own levels stay above the loader's
    let (exit, _, rules) = judged(&["--loader", "comfyui-gguf", "--allow", "comfyui-orig-shape", &orig_shape]);
    assert_eq!((exit, rules), (0, vec![]));
}

#[test]
fn the_config_sets_the_loader_and_the_command_line_overrides_it() {
    let tmp = support::tmp::TempDir::new("loader-config");
    let dir = tmp.path();
    std::fs::write(dir.join("gguf-validate.toml"), "loader = \"comfyui-gguf\"\n").expect("config");
    let orig_shape = corpus("y_diffusion_comfyui_orig_shape_u32.gguf");
    let out = run_in(dir, &["--format", "json", &orig_shape]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let out = run_in(dir, &["--format", "json", "--loader", "sd.cpp", &orig_shape]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let bad = run(&["--no-config", "--loader", "ollama", &orig_shape]);
    assert_eq!(code(&bad), 2);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("llama.cpp, sd.cpp, comfyui-gguf"));
}
