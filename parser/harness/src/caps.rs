//! What a writer under test claims to support. The harness generates only
//! what is claimed; a claim the writer then breaks is a finding.
//!
//! A capabilities file is TOML; every member is optional and defaults to
//! the most the format allows:
//!
//! ```toml
//! value_types = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64",
//!                "f32", "f64", "bool", "string", "array"]
//! tensor_types = ["f32", "f16", "q4_0"]   # ggml names; omitted = every live type
//! versions = [3]            # GGUF versions the writer can be asked to write
//! big_endian = false        # writes big-endian files when asked
//! alignment = true          # honours general.alignment
//! nested_arrays = false     # arrays of arrays
//! nul_in_strings = true     # strings (values) with NUL bytes
//! zero_dims = true          # tensors with a dimension of 0
//! scalar_tensors = false    # tensors with n_dims = 0
//! max_dims = 4
//! tensors = true            # false: metadata-only writers (headers)
//! ```

use serde::Deserialize;

use gguf_validate_core::limits;
use gguf_validate_core::types::{GgmlType, ValueType};

/// A writer's claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Value types of metadata (`array` = arrays of the other listed types).
    pub value_types: Vec<ValueType>,
    /// Tensor types.
    pub tensor_types: Vec<GgmlType>,
    /// GGUF versions it writes on request.
    pub versions: Vec<u32>,
    /// Writes big-endian files when asked.
    pub big_endian: bool,
    /// Honours `general.alignment`.
    pub alignment: bool,
    /// Writes arrays of arrays.
    pub nested_arrays: bool,
    /// Keeps NUL bytes inside string values.
    pub nul_in_strings: bool,
    /// Writes tensors with a dimension of 0.
    pub zero_dims: bool,
    /// Writes tensors with no dimensions (`n_dims` = 0).
    pub scalar_tensors: bool,
    /// Most dimensions of a tensor (1..=4).
    pub max_dims: u32,
    /// Writes tensors at all (false for header-only writers).
    pub tensors: bool,
}

impl Default for Capabilities {
    /// Everything the format allows (the project's own writer's claims).
    fn default() -> Capabilities {
        Capabilities {
            value_types: ValueType::ALL.to_vec(),
            tensor_types: GgmlType::ALL.to_vec(),
            versions: vec![3],
            big_endian: false,
            alignment: true,
            nested_arrays: false,
            nul_in_strings: true,
            zero_dims: true,
            scalar_tensors: false,
            max_dims: limits::MAX_DIMS,
            tensors: true,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    value_types: Option<Vec<String>>,
    tensor_types: Option<Vec<String>>,
    versions: Option<Vec<u32>>,
    big_endian: Option<bool>,
    alignment: Option<bool>,
    nested_arrays: Option<bool>,
    nul_in_strings: Option<bool>,
    zero_dims: Option<bool>,
    scalar_tensors: Option<bool>,
    max_dims: Option<u32>,
    tensors: Option<bool>,
}

impl Capabilities {
    /// Parses a capabilities file (TOML).
    pub fn from_toml(text: &str) -> Result<Capabilities, String> {
        let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let d = Capabilities::default();
        let value_types = match f.value_types {
            None => d.value_types,
            Some(names) => names
                .iter()
                .map(|n| {
                    ValueType::ALL
                        .into_iter()
                        .find(|t| t.name() == n)
                        .ok_or_else(|| format!("unknown value type `{n}`"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let tensor_types = match f.tensor_types {
            None => d.tensor_types,
            Some(names) => names
                .iter()
                .map(|n| GgmlType::from_name(n).ok_or_else(|| format!("unknown ggml type `{n}`")))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let versions = f.versions.unwrap_or(d.versions);
        if let Some(v) = versions.iter().find(|v| !(2..=3).contains(*v)) {
            return Err(format!("version {v}: only GGUF 2 and 3 can be asked for"));
        }
        let max_dims = f.max_dims.unwrap_or(d.max_dims);
        if !(1..=limits::MAX_DIMS).contains(&max_dims) {
            return Err(format!("max_dims {max_dims} is not within 1..={}", limits::MAX_DIMS));
        }
        if value_types.is_empty() || tensor_types.is_empty() || versions.is_empty() {
            return Err("value_types, tensor_types and versions must not be empty".into());
        }
        Ok(Capabilities {
            value_types,
            tensor_types,
            versions,
            big_endian: f.big_endian.unwrap_or(d.big_endian),
            alignment: f.alignment.unwrap_or(d.alignment),
            nested_arrays: f.nested_arrays.unwrap_or(d.nested_arrays),
            nul_in_strings: f.nul_in_strings.unwrap_or(d.nul_in_strings),
            zero_dims: f.zero_dims.unwrap_or(d.zero_dims),
            scalar_tensors: f.scalar_tensors.unwrap_or(d.scalar_tensors),
            max_dims,
            tensors: f.tensors.unwrap_or(d.tensors),
        })
    }

    /// A one-line summary for reports.
    pub fn summary(&self) -> String {
        let vt = if self.value_types.len() == ValueType::ALL.len() {
            "all".to_string()
        } else {
            self.value_types.iter().map(|t| t.name()).collect::<Vec<_>>().join(",")
        };
        let tt = if self.tensor_types.len() == GgmlType::ALL.len() {
            format!("all {}", GgmlType::ALL.len())
        } else {
            format!("{}", self.tensor_types.len())
        };
        let flag = |b: bool, s: &str| if b { s.to_string() } else { format!("no {s}") };
        if !self.tensors {
            return format!(
                "value types {vt}; no tensors; versions {:?}; {}, {}, {}, {}",
                self.versions,
                flag(self.alignment, "alignment"),
                flag(self.big_endian, "big-endian"),
                flag(self.nested_arrays, "nested arrays"),
                flag(self.nul_in_strings, "NUL in strings"),
            );
        }
        format!(
            "value types {vt}; tensor types {tt}; versions {:?}; {}, {}, {}, {}, {}, {}; up to {} dims",
            self.versions,
            flag(self.alignment, "alignment"),
            flag(self.big_endian, "big-endian"),
            flag(self.nested_arrays, "nested arrays"),
            flag(self.nul_in_strings, "NUL in strings"),
            flag(self.zero_dims, "zero dims"),
            flag(self.scalar_tensors, "scalar tensors"),
            self.max_dims
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_claims_and_refuses_unknown_names() {
        let c = Capabilities::from_toml("tensor_types = [\"f32\", \"Q4_K\"]\nnested_arrays = true\nversions = [2, 3]")
            .unwrap();
        assert_eq!(c.tensor_types, vec![GgmlType::F32, GgmlType::Q4_K]);
        assert!(c.nested_arrays && c.alignment);
        assert_eq!(c.versions, vec![2, 3]);
        assert!(Capabilities::from_toml("tensor_types = [\"q9_9\"]").unwrap_err().contains("q9_9"));
        assert!(Capabilities::from_toml("versions = [1]").is_err());
        assert!(Capabilities::from_toml("colour = true").is_err());
        assert_eq!(Capabilities::from_toml("").unwrap(), Capabilities::default());
    }
}
