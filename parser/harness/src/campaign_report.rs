//! What the campaigns' reports share: durations serialised as seconds, and
//! the pieces of their text (times, mismatch lines). The texts themselves
//! are rendered by the campaign that owns the report
//! ([`writer::campaign_text`](crate::writer::campaign_text),
//! [`writer::finding_text`](crate::writer::finding_text),
//! [`quant::quant_text`](crate::quant::quant_text)), which also
//! writes them to findings directories as `summary.txt` and `report.txt`.
//! This module uses no other campaign module, so both campaigns can use it.

use std::time::Duration;

use crate::Mismatch;

/// Serialises a duration as seconds (f64, millisecond precision).
pub fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

/// A time in seconds, or `T s` without timings (for snapshots).
pub fn time(d: f64, timings: bool) -> String {
    if timings { format!("{d:.1} s") } else { "T s".to_string() }
}

/// One mismatch on one line: path, expected, got, offset.
pub fn mismatch_line(m: &Mismatch) -> String {
    let at = m.offset.map(|o| format!(" (offset 0x{o:x})")).unwrap_or_default();
    format!("{}: expected {}, got {}{at}", m.path, m.expected, m.got)
}
