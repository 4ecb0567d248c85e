//! Special tokens a template emits, to be looked up in the vocabulary.
//!
//! Candidates are the spellings special tokens use and ordinary text does
//! not: `<|name|>`, DeepSeek's `<｜name｜>` (U+FF5C), and `<x_of_y>` (Gemma's
//! `<start_of_turn>`). Tags such as `<think>` or `[INST]` are text in some
//! vocabularies by design, so they are not judged.
#![forbid(unsafe_code)]

/// Most distinct candidates kept per template.
const MAX_CANDIDATES: usize = 256;

/// Longest candidate (bytes).
const MAX_TOKEN_LEN: usize = 64;

fn inner_ok(inner: &str) -> bool {
    !inner.is_empty() && inner.len() <= MAX_TOKEN_LEN && !inner.chars().any(|c| c.is_whitespace() || "<>{}".contains(c))
}

/// Special-token spellings in `text`, with their byte offsets, appended to
/// `out` (distinct, bounded).
pub(super) fn candidates(text: &str, base: usize, out: &mut Vec<(String, usize)>) {
    let mut rest = text;
    let mut at = 0usize;
    while let Some(i) = rest.find('<') {
        if out.len() >= MAX_CANDIDATES {
            return;
        }
        let tail = rest.get(i..).unwrap_or_default();
        let mut found = None;
        for (open, close) in [("<|", "|>"), ("<\u{ff5c}", "\u{ff5c}>")] {
            if let Some(body) = tail.strip_prefix(open) {
                let window = body.get(..body.len().min(MAX_TOKEN_LEN.saturating_add(close.len()))).unwrap_or(body);
                let window = floor_char(body, window.len());
                if let Some(end) = window.find(close)
                    && inner_ok(body.get(..end).unwrap_or_default())
                {
                    found = tail.get(..open.len().saturating_add(end).saturating_add(close.len()));
                }
            }
        }
        if found.is_none()
            && let Some(body) = tail.strip_prefix('<')
        {
            let name: &str = body.split('>').next().unwrap_or_default();
            if name.len() < body.len()
                && name.len() <= MAX_TOKEN_LEN
                && name.contains("_of_")
                && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            {
                found = tail.get(..name.len().saturating_add(2));
            }
        }
        let step = i.saturating_add(found.map_or(1, str::len));
        if let Some(tok) = found
            && !out.iter().any(|(t, _)| t == tok)
        {
            out.push((tok.to_string(), base.saturating_add(at).saturating_add(i)));
        }
        // `<` is ASCII and `found` a slice of `tail`: both end on a char boundary.
        rest = rest.get(step..).unwrap_or_default();
        at = at.saturating_add(step);
    }
}

fn floor_char(s: &str, mut i: usize) -> &str {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i = i.saturating_sub(1);
    }
    s.get(..i).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        candidates(text, 0, &mut out);
        out.into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn special_token_spellings() {
        assert_eq!(all("<|im_start|>user\n{x}<|im_end|><|im_start|>"), ["<|im_start|>", "<|im_end|>"]);
        assert_eq!(all("<start_of_turn>user<end_of_turn>"), ["<start_of_turn>", "<end_of_turn>"]);
        assert_eq!(all("<\u{ff5c}User\u{ff5c}>hi"), ["<\u{ff5c}User\u{ff5c}>"]);
        assert!(all("<think> a < b <| not a token |> <tools></tools> [INST]").is_empty());
        assert!(all("<|").is_empty() && all("<").is_empty() && all("é<é").is_empty());
    }
}
