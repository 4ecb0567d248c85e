//! A strict-valid generated file with exactly one fault injected
//! ([`gguf_validate_core::smith::mutate`]) is rejected under `strict` with the
//! rule the fault targets, and with no error outside the fault's known
//! consequences. Faults documented as harmless (an upper-case key, bytes
//! appended, version 2) must leave the file valid and raise their warning
//! or info. The mutant must also pass every [`crate::parse_validate`]
//! invariant.
#![forbid(unsafe_code)]

use arbitrary::{Result, Unstructured};
use gguf_validate_core::smith::{self, Config, mutate};
use gguf_validate_core::{Options, Profile, Validator};

/// The property.
pub fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let cfg = Config::arbitrary_for(u, Profile::Strict)?;
    let model = smith::generate(u, &cfg)?;
    let Some(m) = mutate::mutate(u, &model)? else { return Ok(()) };
    crate::log_case("one_fault", &m.bytes, &(&m.fault, &m.detail, &m.expected));
    let report = Validator::new(Options::new(Profile::Strict)).validate_bytes(&m.bytes).report;
    if let Err(why) = m.expected.check(&report) {
        panic!("{:?} ({}): {why}\n{:#?}", m.fault, m.detail, report.diagnostics);
    }
    crate::parse_validate::run(&m.bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke() {
        crate::test_n_times(400, run);
    }

    /// F-one_fault-1 (CI fuzz run): renaming `tokenizer.ggml.merges` of a
    /// gpt2 vocabulary makes the file lose its merges: the expectation now
    /// allows `tokenizer-merges-missing`.
    #[test]
    fn renamed_merges_regression() {
        crate::run_unstructured(include_bytes!("../tests/data/one_fault_renamed_merges.bin"), run);
        // And renaming token types has no tokenizer consequence (the
        // generator never writes byte-token spellings).
        crate::run_unstructured(include_bytes!("../tests/data/one_fault_renamed_token_type.bin"), run);
    }

    /// F-one_fault-2 (local run after a CI failure): a row length that is
    /// no multiple of the block, in an empty tensor of type id 42, was
    /// taken for PrismML's group-128 Q2_0 (0 elements fit any layout).
    /// A dialect's rows are whole blocks too, and its sizes must reach the
    /// file's end.
    #[test]
    fn dialect_needs_whole_blocks_regression() {
        crate::run_unstructured(include_bytes!("../tests/data/one_fault_dialect_empty_tensor.bin"), run);
    }

    /// Every fault kind applies to some generated file and is caught.
    #[test]
    fn every_fault_kind() {
        let mut rng = crate::SplitMix64::new(crate::smoke_seed());
        for fault in mutate::Fault::ALL {
            let mut hit = false;
            for _ in 0..200 {
                let buf = rng.bytes_below(8192);
                let mut u = Unstructured::new(&buf);
                let Ok(cfg) = Config::arbitrary_for(&mut u, Profile::Strict) else { continue };
                let Ok(model) = smith::generate(&mut u, &cfg) else { continue };
                let Ok(Some(m)) = mutate::inject(&mut u, &model, fault) else { continue };
                let report = Validator::new(Options::new(Profile::Strict)).validate_bytes(&m.bytes).report;
                if let Err(why) = m.expected.check(&report) {
                    panic!("{fault:?} ({}): {why}\n{:#?}", m.detail, report.diagnostics);
                }
                hit = true;
                break;
            }
            assert!(hit, "{fault:?} never applied");
        }
    }
}
