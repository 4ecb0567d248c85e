//! The programs a GGUF file is judged against (`--loader`): llama.cpp for
//! language models and the files its tools open (projectors, adapters,
//! control vectors, importance matrices), stable-diffusion.cpp and
//! ComfyUI-GGUF for image and video diffusion models.
//!
//! Unset, a file is judged by the loader it is for: a diffusion model
//! (an architecture of ComfyUI-GGUF's list, or no architecture and the
//! tensor names stable-diffusion.cpp detects a model by) by
//! stable-diffusion.cpp, with ComfyUI-GGUF's own refusals as warnings;
//! anything else by llama.cpp.
#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

/// A loader a file is judged against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Loader {
    /// llama.cpp (libllama and its tools; the releases of [`crate::llama_cpp`]).
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    /// stable-diffusion.cpp, as the `stable-diffusion-cpp-python` package
    /// vendors it.
    #[serde(rename = "sd.cpp")]
    SdCpp,
    /// ComfyUI-GGUF, the GGUF loader of ComfyUI.
    #[serde(rename = "comfyui-gguf")]
    ComfyuiGguf,
}

impl Loader {
    /// Every loader, in the order `--help` lists them.
    pub const ALL: [Loader; 3] = [Loader::LlamaCpp, Loader::SdCpp, Loader::ComfyuiGguf];

    /// `llama.cpp`, `sd.cpp` or `comfyui-gguf`: the name `--loader` takes.
    pub fn name(self) -> &'static str {
        match self {
            Loader::LlamaCpp => "llama.cpp",
            Loader::SdCpp => "sd.cpp",
            Loader::ComfyuiGguf => "comfyui-gguf",
        }
    }

    /// Whether the loader runs diffusion models.
    pub fn is_diffusion(self) -> bool {
        matches!(self, Loader::SdCpp | Loader::ComfyuiGguf)
    }
}

impl fmt::Display for Loader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Loader {
    type Err = String;

    fn from_str(s: &str) -> Result<Loader, String> {
        let wanted = s.trim().to_ascii_lowercase();
        let alias = match wanted.as_str() {
            "llama-cpp" | "llamacpp" => "llama.cpp",
            "sd-cpp" | "sdcpp" | "stable-diffusion.cpp" | "stable-diffusion-cpp" => "sd.cpp",
            "comfyui" | "comfyui_gguf" => "comfyui-gguf",
            other => other,
        };
        Loader::ALL.into_iter().find(|l| l.name() == alias).ok_or_else(|| {
            let names: Vec<&str> = Loader::ALL.iter().map(|l| l.name()).collect();
            format!("unknown loader `{s}` (one of: {})", names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_parse() {
        for l in Loader::ALL {
            assert_eq!(l.name().parse::<Loader>(), Ok(l));
        }
        assert_eq!("stable-diffusion.cpp".parse::<Loader>(), Ok(Loader::SdCpp));
        assert_eq!("ComfyUI".parse::<Loader>(), Ok(Loader::ComfyuiGguf));
        let e = "ollama".parse::<Loader>().unwrap_err();
        assert!(e.contains("llama.cpp, sd.cpp, comfyui-gguf"), "{e}");
        assert!(Loader::SdCpp.is_diffusion() && !Loader::LlamaCpp.is_diffusion());
    }
}
