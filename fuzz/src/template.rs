//! The chat-template analysis on arbitrary text.
//!
//! - no panic and no stack overflow (libFuzzer's `-timeout` and
//!   `-rss_limit_mb` turn a hang or a memory blow-up into a finding too);
//! - the same analysis twice;
//! - every finding and special token lies inside the text, on a line and
//!   column that exist, and findings come in offset order.
//!
//! The smoke test builds Jinja-like text from fragments (tags, dunders,
//! string builders, deep nesting), since random bytes rarely parse.
#![forbid(unsafe_code)]

use gguf_validate_core::template::analyse;

/// The property.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let a = analyse(&text);
    assert_eq!(a, analyse(&text), "two analyses differ");
    let lines = text.split('\n').count();
    let mut last = 0;
    for f in &a.findings {
        assert!(f.offset <= text.len(), "finding at {} past the {}-byte text", f.offset, text.len());
        assert!(f.offset >= last, "findings out of order");
        last = f.offset;
        assert!(f.line >= 1 && f.line <= lines && f.column >= 1, "bad position {}:{}", f.line, f.column);
        assert!(!f.message.is_empty());
    }
    for t in &a.special_tokens {
        assert!(t.offset <= text.len() && t.line >= 1 && t.line <= lines);
        assert!(!t.text.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use crate::SplitMix64;

    const FRAGMENTS: [&str; 48] = [
        "{{ ",
        " }}",
        "{% ",
        " %}",
        "{%- ",
        " -%}",
        "if ",
        "endif",
        "for ",
        " in ",
        "endfor",
        "set ",
        "macro ",
        "endmacro",
        "x",
        "messages",
        "lipsum",
        "cycler",
        "namespace(n=0)",
        ".",
        "__class__",
        "__glo",
        "bals__",
        "(",
        ")",
        "[",
        "]",
        "'",
        "'__'",
        " ~ ",
        " + ",
        " * ",
        "10**9",
        "|attr(",
        "|join",
        "|reverse",
        "|replace('a','b')",
        " % ",
        ".format(",
        "[::-1]",
        ", ",
        "not ",
        "\u{200b}",
        "<|im_start|>",
        "strftime_now('%Y')",
        " == ",
        "'https://example.invalid'",
        "\n",
    ];

    #[test]
    fn long_line_regression() {
        // F11 (template, cargo fuzz in CI): a line past 65,535 columns made
        // minijinja's u16 column counter overflow (a panic with overflow
        // checks); such templates now stop at template-analysis-limit.
        super::run(include_bytes!("../tests/data/template_long_line.bin"));
        let long = format!("{{{{ x }}}}{}", "a".repeat(70_000));
        super::run(long.as_bytes());
    }

    #[test]
    fn smoke() {
        let mut rng = SplitMix64::new(crate::smoke_seed() ^ 0x7e41);
        for _ in 0..400 {
            let n = rng.below(64);
            let mut s = String::new();
            for _ in 0..n {
                let i = usize::try_from(rng.below(FRAGMENTS.len() as u64)).unwrap_or(0);
                s.push_str(FRAGMENTS[i]);
            }
            super::run(s.as_bytes());
        }
        for _ in 0..100 {
            super::run(&rng.bytes_below(512));
        }
    }

    #[test]
    fn hostile_shapes_stay_bounded() {
        let t = std::time::Instant::now();
        for s in [
            format!("{{{{ {}x{} }}}}", "(".repeat(100_000), ")".repeat(100_000)),
            format!("{{{{ {}x }}}}", "not ".repeat(100_000)),
            format!("{{{{ {}x }}}}", "-".repeat(100_000)),
            format!("{{{{ x{} }}}}", ".a".repeat(100_000)),
            format!("{{{{ {} }}}}", vec!["'a'"; 50_000].join(" ~ ")),
            "{% if x %}".repeat(50_000),
            "{% for a in [1,2] %}".repeat(120) + &"{% endfor %}".repeat(120),
            format!("{{% set a = 'ab' %}}{}{{{{ x[a] }}}}", "{% set a = a ~ a %}".repeat(5_000)),
            "{{ x['a' * 10**9] }}".repeat(1000),
            "[".repeat(300_000),
        ] {
            super::run(s.as_bytes());
        }
        assert!(t.elapsed().as_secs() < 60, "hostile shapes took {:?}", t.elapsed());
    }
}
