//! Values with units on the command line: durations (`30`, `500ms`,
//! `2m`) and byte sizes (`512M`, `1GiB`). Used by `cli` and `remote`.

/// Seconds from `30`, `30s`, `500ms`, `2m`, `1.5h`.
pub fn parse_timeout(s: &str) -> Result<f64, String> {
    parse_duration(s, 1e9)
}

/// Seconds from a duration, at most `max` seconds.
pub fn parse_duration(s: &str, max: f64) -> Result<f64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    match num.parse::<f64>().map(|n| n * scale) {
        Ok(t) if t.is_finite() && t > 0.0 && t <= max => Ok(t),
        _ => Err(format!("`{s}` is not a duration above 0 (seconds, or with a unit: 500ms, 30s, 2m, 1h)")),
    }
}

/// A byte size: a number with an optional unit (K/KB = 1000, KiB = 1024, ... up to T).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || format!("`{s}` is not a size (a number of bytes, optionally with a unit: 512M, 1GiB)");
    let n: u64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "ki" | "kib" => 1 << 10,
        "mi" | "mib" => 1 << 20,
        "gi" | "gib" => 1 << 30,
        "ti" | "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    match n.checked_mul(mult) {
        Some(0) | None => Err(format!("`{s}` is not a size above 0 that fits in 64 bits")),
        Some(v) => Ok(v),
    }
}
