//! The llama.cpp releases users run, and what each knows (`table.rs`,
//! generated from the releases' own sources by
//! `conformance/tools/llama-releases/`: every fact once, with the runs of
//! releases that know it). [`Release`] names one, [`Releases`] the ones a
//! validation is judged against (`--llama-cpp R`, `R..`).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

#[rustfmt::skip]
pub(crate) mod table;

/// What one row of a release's model-loader contract says
/// (`table::CONTRACT_ROWS`), for one architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Term {
    /// A key the loader requires (after `ARCH.`, or `=` and the whole key).
    Key,
    /// A tensor the loader requires (`{}`: in every layer).
    Tensor,
    /// A tensor the loader may create.
    Creates,
    /// The tensors it may create are all listed: another is refused.
    Complete,
    /// The shape it checks a tensor against: `pattern=dims`.
    Shape,
}

/// One row of an architecture's model-loader contract: `term` of `item`,
/// in the releases `first..=last` (indices of [`Release`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ContractRow {
    pub(crate) term: Term,
    pub(crate) item: &'static str,
    pub(crate) first: u8,
    pub(crate) last: u8,
}

/// The contract rows of `arch`, sorted by term and item (none for an
/// architecture no read release has rows for).
pub(crate) fn contract(arch: &str) -> Vec<ContractRow> {
    let Ok(at) = table::CONTRACT_ARCHES.binary_search_by(|(a, ..)| (*a).cmp(arch)) else {
        return Vec::new();
    };
    let Some((_, start, end)) = table::CONTRACT_ARCHES.get(at) else {
        return Vec::new();
    };
    let rows = table::CONTRACT_ROWS.get(usize::from(*start)..usize::from(*end)).unwrap_or_default();
    rows.iter()
        .filter_map(|&(term, at, len, first, last)| {
            let at = usize::try_from(at).ok()?;
            let item = table::CONTRACT_ITEMS.get(at..at.checked_add(usize::from(len))?)?;
            Some(ContractRow { term, item, first, last })
        })
        .collect()
}

/// The architectures with contract rows, sorted.
#[cfg(test)]
pub(crate) fn contract_arches() -> impl Iterator<Item = &'static str> {
    table::CONTRACT_ARCHES.iter().map(|(a, ..)| *a)
}

/// Release `i`'s bit in a mask of releases (the table holds at most 128).
pub(crate) fn bit(i: u8) -> u128 {
    1u128.checked_shl(u32::from(i)).unwrap_or(0)
}

/// The bits of releases `first..=last`.
pub(crate) fn run(first: u8, last: u8) -> u128 {
    (first..=last).fold(0, |m, i| m | bit(i))
}

/// The releases that know `name` in `facts` (sorted by name, as the
/// generator writes them: found by binary search).
pub(crate) fn known(facts: &[(&str, u8, u8)], name: &str) -> u128 {
    let start = facts.partition_point(|(n, ..)| *n < name);
    let runs = facts.get(start..).unwrap_or_default().iter().take_while(|(n, ..)| *n == name);
    runs.fold(0, |mask, (_, first, last)| mask | run(*first, *last))
}

/// The first release of the newest run of releases in `mask`: since when
/// the newest releases that have it have had it.
pub(crate) fn since(mask: u128) -> Option<Release> {
    let newest = Release::all().rev().find(|r| mask & bit(r.0) != 0)?;
    Release::all().rev().skip_while(|r| *r > newest).take_while(|r| mask & bit(r.0) != 0).last()
}

/// The loader fix that disables a special-token default outside the
/// vocabulary (gen_release_facts.py `FIXES`).
pub(crate) const SPECIAL_TOKEN_DEFAULT_FIX: &str = "special-token-default-disabled";

/// The releases that have the loader fix `name` (gen_release_facts.py
/// `FIXES`).
pub(crate) fn fixed_in(name: &str) -> u128 {
    known(table::LOADER_FIXES, name)
}

/// A llama.cpp release of the table ([`Release::all`], oldest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release(pub(crate) u8);

impl Release {
    /// The release of this tag (`b4600`, `v0.5.0`).
    pub fn named(tag: &str) -> Option<Release> {
        table::RELEASES.iter().position(|(t, _)| *t == tag).and_then(|i| u8::try_from(i).ok()).map(Release)
    }

    /// Its tag.
    pub fn name(self) -> &'static str {
        table::RELEASES.get(usize::from(self.0)).map_or("", |(t, _)| t)
    }

    /// The node-llama-cpp version that carries it (its source and its
    /// prebuilt loader, on the npm registry).
    pub fn node_llama_cpp(self) -> &'static str {
        table::RELEASES.get(usize::from(self.0)).map_or("", |(_, v)| v)
    }

    /// Whether the contract of its model loader (the keys and tensors it
    /// requires per architecture, the tensors it creates, their shapes) is
    /// read from its own source; for the others it is the pinned tree's.
    pub fn model_contract_read(self) -> bool {
        table::CONTRACTS_READ.iter().any(|(first, last)| (*first..=*last).contains(&self.0))
    }

    /// Every known release, oldest first.
    pub fn all() -> impl DoubleEndedIterator<Item = Release> {
        (0..table::RELEASES.len()).filter_map(|i| u8::try_from(i).ok()).map(Release)
    }

    /// The newest known release.
    pub fn newest() -> Release {
        Release::all().next_back().unwrap_or(Release(0))
    }

    /// The known tags, oldest first, as a usage error lists them.
    pub fn known() -> String {
        Release::all().map(Release::name).collect::<Vec<_>>().join(", ")
    }
}

/// The releases a validation is judged against: one (`b4600`), or every
/// known release from one to the newest (`b4600..`: a support window, the
/// file must load in all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Releases {
    /// The oldest judged.
    pub from: Release,
    /// The newest judged.
    pub to: Release,
}

impl std::str::FromStr for Releases {
    type Err = String;

    fn from_str(s: &str) -> Result<Releases, String> {
        let (name, open) = match s.strip_suffix("..") {
            Some(from) => (from, true),
            None => (s, false),
        };
        let unknown =
            || format!("unknown llama.cpp release `{s}`; known releases (oldest first): {}", Release::known());
        let from = Release::named(name).ok_or_else(unknown)?;
        Ok(Releases { from, to: if open { Release::newest() } else { from } })
    }
}

impl std::fmt::Display for Releases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.from == self.to, self.to == Release::newest()) {
            (true, _) => write!(f, "{}", self.from.name()),
            (false, true) => write!(f, "{}..", self.from.name()),
            (false, false) => write!(f, "{}..{}", self.from.name(), self.to.name()),
        }
    }
}

impl Releases {
    /// The releases judged, oldest first.
    pub fn iter(self) -> impl Iterator<Item = Release> {
        Release::all().filter(move |r| *r >= self.from && *r <= self.to)
    }
}

/// The tree the library's own tables come from, which a validation not
/// judged against releases is judged against.
pub const PINNED: &str = "llama-cpp-python 0.3.36 (0c1e570)";
