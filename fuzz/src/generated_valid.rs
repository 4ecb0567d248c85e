//! A generated file is valid, and the writer and parser agree on it.
//!
//! - zero errors under every profile of [`Config::valid_under`] (warnings
//!   and infos allowed): the generator's idea of "valid" and the
//!   validator's must match, so a failure is a bug in one of them;
//! - the report's summary matches what was generated (counts, alignment,
//!   data size, parameters, architecture);
//! - round trip: parse → [`GgufModel::from_parsed`] → `to_bytes` gives the
//!   same bytes, and the `dump` JSON of both is identical.
#![forbid(unsafe_code)]

use arbitrary::{Result, Unstructured};
use gguf_validate_core::parse;
use gguf_validate_core::smith::{self, Config};
use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::{GgufModel, OwnedValue};
use gguf_validate_core::{Options, Validator};

/// The property.
pub fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let (cfg, model) = smith::arbitrary_file(u)?;
    let bytes = model.to_bytes();
    crate::log_case("generated_valid", &bytes, &cfg);
    check(&cfg, &model, &bytes);
    Ok(())
}

/// Checks one generated file.
pub fn check(cfg: &Config, model: &GgufModel, bytes: &[u8]) {
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    for profile in cfg.valid_under() {
        let opts = Options::new(profile);
        let r = Validator::new(opts.clone()).validate_bytes(bytes).report;
        crate::parse_validate::check_report(&r, len, &opts);
        assert!(r.counts.errors == 0, "generated file invalid under {profile}: {:#?}\n{cfg:#?}", r.diagnostics);
        check_summary(cfg, model, &r.summary);
    }

    let parsed = parse::parse_bytes(bytes).unwrap_or_else(|| panic!("generated file does not parse"));
    assert!(parsed.fatal.is_none(), "decoding failed: {:?}", parsed.fatal);
    let back = GgufModel::from_parsed(&parsed, bytes);
    let again = back.to_bytes();
    assert!(again == bytes, "round trip changed the file ({} -> {} bytes)", bytes.len(), again.len());
    let reparsed = parse::parse_bytes(&again).unwrap_or_else(|| panic!("rewritten file does not parse"));
    assert_eq!(
        gguf_validate_core::dump::dump(&parsed, true),
        gguf_validate_core::dump::dump(&reparsed, true),
        "dump JSON differs after the round trip"
    );
    assert_eq!(back.tensors, model.tensors, "tensors differ after the round trip");
}

fn check_summary(cfg: &Config, model: &GgufModel, s: &gguf_validate_core::report::Summary) {
    let n = |x: usize| Some(u64::try_from(x).unwrap_or(u64::MAX));
    assert_eq!(s.tensor_count, n(model.tensors.len()));
    assert_eq!(s.kv_count, n(model.kvs.len()));
    assert_eq!(s.alignment, Some(cfg.effective_alignment()));
    let data: usize = model.tensors.iter().map(|t| t.data.len()).sum();
    assert_eq!(s.data_size, n(data));
    let params: u64 = model.tensors.iter().map(|t| t.dims.iter().product::<u64>()).sum();
    assert_eq!(s.parameters, Some(params));
    let types = model.tensors.iter().filter_map(|t| GgmlType::from_id(t.type_id)).count();
    assert_eq!(s.tensor_types.values().sum::<u64>(), u64::try_from(types).unwrap_or(0));
    let arch = model.kvs.iter().find_map(|(k, v)| match v {
        OwnedValue::String(s) if k == b"general.architecture" => Some(String::from_utf8_lossy(s).into_owned()),
        _ => None,
    });
    assert_eq!(s.architecture, arch);
}

#[cfg(test)]
mod tests {
    #[test]
    fn smoke() {
        crate::test_n_times(300, super::run);
    }
}
