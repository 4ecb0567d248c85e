//! Differential: validating a growing prefix of a file, and validating it
//! through a `ByteSource` (as the CLI does: metadata by doubling reads,
//! padding read in place), give exactly the report of the whole buffer.
//!
//! The file is the raw input (so the corpus seeds it directly); the
//! profile and the chunk sizes come from a hash of it. Each
//! `NeedMoreData(n)` must ask for more than the prefix holds and no more
//! than the file has, so the loop always terminates.
#![forbid(unsafe_code)]

use gguf_validate_core::io::SliceSource;
use gguf_validate_core::{NeedMoreData, Options, Profile, Validator};

/// The property.
pub fn run(data: &[u8]) {
    let mut rng = crate::SplitMix64::new(fnv1a(data));
    let profile = Profile::ALL.get(usize::try_from(rng.below(3)).unwrap_or(0)).copied().unwrap_or_default();
    let validator = Validator::new(Options::new(profile));
    let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
    // The whole file as a prefix: nothing read past it, nothing asked for.
    let whole = match validator.validate_prefix(data, len) {
        Ok(v) => v.report,
        Err(NeedMoreData(n)) => panic!("NeedMoreData({n}) with the whole {len}-byte file"),
    };
    // Read through a source (the metadata read in rounds, padding in
    // place): the same report. An in-memory source never fails to read.
    match validator.validate(&SliceSource(data)) {
        Ok(v) => {
            assert_eq!(v.report, whole, "a source gives another report ({profile})");
            assert!(v.metadata.len() <= data.len(), "read more than the file");
        }
        Err(e) => panic!("validating an in-memory source failed: {e}"),
    }
    // Start anywhere from an empty prefix to the whole file.
    let mut have = usize::try_from(rng.below(len.saturating_add(1).min(256))).unwrap_or(0);
    let mut rounds = 0u32;
    loop {
        let prefix = data.get(..have).unwrap_or(data);
        match validator.validate_prefix(prefix, len) {
            Ok(v) => {
                assert_eq!(v.report, whole, "prefix of {have} of {len} bytes gives another report ({profile})");
                break;
            }
            Err(NeedMoreData(n)) => {
                assert!(have < data.len(), "NeedMoreData({n}) with the whole {len}-byte file");
                assert!(
                    n > u64::try_from(have).unwrap_or(u64::MAX),
                    "NeedMoreData({n}) does not ask for more than the {have} bytes given"
                );
                assert!(n <= len, "NeedMoreData({n}) asks for more than the {len}-byte file");
                // Sometimes exactly what was asked for, sometimes more.
                let extra = if rng.below(2) == 0 { 0 } else { rng.below(512) };
                let next = n.saturating_add(extra).min(len);
                have = usize::try_from(next).unwrap_or(data.len());
            }
        }
        rounds += 1;
        assert!(rounds <= 200_000, "no convergence");
    }
}

/// FNV-1a of the input: the schedule depends on the bytes only.
fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use gguf_validate_core::{Options, Validator};

    /// Fuzz finding: a GGUF v1 prefix longer than its 16-byte header was
    /// answered with `NeedMoreData(16)` again and again.
    #[test]
    fn gguf_v1_prefix_completes() {
        let mut file = b"GGUF\x01\0\0\0\0\0\0\0\x01\0\0\0".to_vec();
        file.resize(200, 0);
        let r = Validator::new(Options::default()).validate_prefix(&file[..64], 200);
        assert!(r.is_ok(), "{r:?}");
        super::run(&file);
    }

    #[test]
    fn smoke() {
        for file in crate::smoke_files(300) {
            super::run(&file);
        }
    }
}
