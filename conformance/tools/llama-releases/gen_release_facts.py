#!/usr/bin/env python3
"""Writes parser/core/src/llama_cpp/table.rs: what each llama.cpp release
users run knows, stored once per fact with the first and the last release
that knows it (not one copy per release).

The releases are those of releases.txt (oldest first), each read from its
source tree as fetch.sh lays it out (`$LLAMA_RELEASES_CACHE/src/TAG/`):

- architectures: the names of `LLM_ARCH_NAMES` (src/llama-arch.cpp, or
  src/llama.cpp before the file was split; every src/*.cpp is read, as
  the code moved between files): a model whose
  `general.architecture` a release does not list is refused at load
  (`unknown model architecture`);
- ggml types: the ids and names of `enum ggml_type` (ggml/include/ggml.h),
  without the lines commented out (types whose support was removed): a
  tensor of another id is refused by the release's GGUF reader (`invalid
  ggml type`, or a removed type's message);
- tokenizer models: the `tokenizer_model == "NAME"` branches of the
  vocabulary loader (src/llama-vocab.cpp, src/llama-model.cpp or
  src/llama.cpp, by release): another name is
  refused (`unknown tokenizer`);
- pre-tokenizers: the `tokenizer_pre == "NAME"` branches of the same
  loader: another name is refused (`unknown pre-tokenizer type`);
- projector types: the names of `PROJECTOR_TYPE_NAMES` (tools/mtmd/
  clip-impl.h, or examples/llava/clip.cpp before): the projector loader
  refuses another `clip.projector_type`.

- what a release's model loader needs of a model of each architecture
  (release_contracts.py: the keys and tensors it requires, the tensors it
  creates, the shapes it checks), for the releases whose loader is one
  `switch (arch)` (CONTRACTS_READ); later releases' are the pinned tree's.

Graph changes between releases (what a release does after loading) are not
read here: a report built on this table says so.

    python3 conformance/tools/llama-releases/gen_release_facts.py [OUT] [--check]
    python3 conformance/tools/llama-releases/gen_release_facts.py --check-releases TAG... [OUT]

With --check, compares instead of writing and exits 1 on a difference. With
--check-releases, only the releases named need be fetched: each one's facts,
read from its source, must be what the table says that release knows (CI
checks the oldest, one in the middle and the newest).
"""
import os
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import release_contracts  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DEFAULT_OUT = ROOT / "parser/core/src/llama_cpp/table.rs"


def cache_dir() -> pathlib.Path:
    base = os.environ.get("LLAMA_RELEASES_CACHE")
    if base:
        return pathlib.Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME", str(pathlib.Path.home() / ".cache"))
    return pathlib.Path(xdg) / "gguf-validate-reference" / "llama-releases"


def releases() -> list:
    out = []
    for line in (HERE / "releases.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        version, tag = line.split()
        out.append((version, tag))
    return out


def read(tree: pathlib.Path, *names: str) -> str:
    """The text of the files that exist among `names` (relative to tree)."""
    parts = []
    for n in names:
        p = tree / n
        if p.is_file():
            parts.append(p.read_text(errors="replace"))
    return "\n".join(parts)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def sources(tree: pathlib.Path) -> str:
    """Every C++ source of the library (src/*.cpp): where a loader's code
    lives moved between files over the releases."""
    return "\n".join(p.read_text(errors="replace") for p in sorted((tree / "src").glob("*.cpp")))


def map_names(text: str, table: str) -> list:
    """The string values of the `{ ENUM, "name" }` table defined as `table`."""
    m = re.search(table + r"\s*=\s*\{", text)
    if not m:
        return []
    at = m.start()
    body = text[at:text.index("};", at)]
    return re.findall(r'\{\s*[A-Z_0-9]+\s*,\s*"([^"]+)"\s*\}', strip_comments(body))


def architectures(tree: pathlib.Path) -> list:
    return map_names(sources(tree), "LLM_ARCH_NAMES")


def ggml_types(tree: pathlib.Path) -> list:
    text = strip_comments(read(tree, "ggml/include/ggml.h"))
    at = text.index("enum ggml_type {")
    body = text[at:text.index("};", at)]
    return [(int(i), n) for n, i in re.findall(r"GGML_TYPE_(\w+)\s*=\s*(\d+)", body) if n != "COUNT"]


def vocab_branches(tree: pathlib.Path, var: str) -> list:
    text = strip_comments(sources(tree))
    return sorted(set(re.findall(var + r'\s*==\s*"([^"]+)"', text)))


def tokenizer_models(tree: pathlib.Path) -> list:
    return vocab_branches(tree, "tokenizer_model")


def pre_tokenizers(tree: pathlib.Path) -> list:
    return vocab_branches(tree, "tokenizer_pre")


def projector_types(tree: pathlib.Path) -> list:
    text = read(tree, "tools/mtmd/clip-impl.h", "examples/llava/clip-impl.h", "examples/llava/clip.cpp")
    return map_names(text, "PROJECTOR_TYPE_NAMES")


# Fixes of the loader a file's verdict depends on, each known by a line only
# the fixed loader has (in the release's src/*.cpp):
# name -> marker.
FIXES = {
    # llama_vocab::impl::load: a tokenizer model's default special-token id
    # outside the vocabulary is disabled; before, print_info read it with
    # id_to_token.at() (an exception: the load fails) or [] (past the end).
    "special-token-default-disabled": "out of vocab range, disabling",
}


def loader_fixes(tree: pathlib.Path) -> list:
    text = sources(tree)
    return sorted(name for name, marker in FIXES.items() if marker in text)


def arch_enums(tree: pathlib.Path) -> dict:
    text = strip_comments(sources(tree))
    at = text.index("LLM_ARCH_NAMES")
    body = text[at:text.index("};", at)]
    return dict(re.findall(r'\{\s*(LLM_ARCH_\w+)\s*,\s*"([^"]+)"\s*\}', body))


TERMS = ("Key", "Tensor", "Creates", "Complete", "Shape")


def contract_facts(tree: pathlib.Path) -> list:
    """(architecture, term, item) of every fact of one release's model
    loader (release_contracts.py); [] for a release it does not read."""
    out = []
    for arch, c in release_contracts.contracts(sources(tree), arch_enums(tree)).items():
        out += [(arch, "Key", k) for k in c["key"]]
        out += [(arch, "Tensor", t) for t in c["tensor"]]
        if c["creates"] is not None:
            out.append((arch, "Complete", ""))
            out += [(arch, "Creates", t) for t in c["creates"]]
        out += [(arch, "Shape", f"{t}={d}") for t, d in c["shape"].items()]
    return out


def spans(present: list) -> list:
    """Runs of consecutive release indices: [(first, last), ...]."""
    runs = []
    for i in sorted(present):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [tuple(r) for r in runs]


def facts_over(trees: list, extract, may_be_empty: bool = False) -> dict:
    """fact -> release indices that know it. A release where the extraction
    finds nothing is an error, not an empty list: the source moved and the
    generator has to follow it (unless none may be found: a fix an older
    release lacks)."""
    seen = {}
    for i, tree in enumerate(trees):
        found = extract(tree)
        if not found and not may_be_empty:
            raise SystemExit(f"{tree.name}: {extract.__name__} found nothing; the source moved")
        for fact in found:
            seen.setdefault(fact, []).append(i)
    return seen


def rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(rels: list, trees: list) -> str:
    lines = [
        "// Generated by conformance/tools/llama-releases/gen_release_facts.py from the",
        "// sources of the llama.cpp releases of conformance/tools/llama-releases/releases.txt",
        "// (each the git bundle of node-llama-cpp@VERSION on the npm registry). Do not edit.",
        "//! What each llama.cpp release knows: every fact once, with the runs of releases",
        "//! (first and last, indices into [`RELEASES`], oldest first) that know it.",
        "",
        "use super::Term::{self, *};",
        "",
        "/// The releases, oldest first: (llama.cpp tag, the node-llama-cpp version that carries it).",
        "pub(crate) const RELEASES: &[(&str, &str)] = &[",
    ]
    for version, tag in rels:
        lines.append(f"    ({rust_str(tag)}, {rust_str(version)}),")
    lines.append("];")

    def named(title: str, doc: str, seen: dict):
        lines.append("")
        lines.append(f"/// {doc}")
        lines.append(f"pub(crate) const {title}: &[(&str, u8, u8)] = &[")
        for name in sorted(seen):
            for first, last in spans(seen[name]):
                lines.append(f"    ({rust_str(name)}, {first}, {last}),")
        lines.append("];")

    named("ARCHITECTURES", "`general.architecture` names (`LLM_ARCH_NAMES`).", facts_over(trees, architectures))
    named(
        "TOKENIZER_MODELS",
        "`tokenizer.ggml.model` names the vocabulary loader takes.",
        facts_over(trees, tokenizer_models),
    )
    named(
        "PRE_TOKENIZERS",
        "`tokenizer.ggml.pre` names the vocabulary loader takes.",
        facts_over(trees, pre_tokenizers),
    )
    named("PROJECTOR_TYPES", "`clip.projector_type` names (`PROJECTOR_TYPE_NAMES`).", facts_over(trees, projector_types))
    named("LOADER_FIXES", "Fixes of the loader a verdict depends on (gen_release_facts.py `FIXES`).",
          facts_over(trees, loader_fixes, may_be_empty=True))
    types = facts_over(trees, ggml_types)
    lines.append("")
    lines.append("/// ggml types (`enum ggml_type`, lines not commented out): (id, name, first, last).")
    lines.append("pub(crate) const GGML_TYPES: &[(u32, &str, u8, u8)] = &[")
    for (tid, name) in sorted(types):
        for first, last in spans(types[(tid, name)]):
            lines.append(f"    ({tid}, {rust_str(name)}, {first}, {last}),")
    lines.append("];")

    read, contracts = [], {}
    for i, tree in enumerate(trees):
        found = contract_facts(tree)
        if found:
            read.append(i)
        for fact in found:
            contracts.setdefault(fact, []).append(i)
    lines.append("")
    lines.append("/// The releases whose model loader the contracts below are read from (runs")
    lines.append("/// of indices): one `switch (arch)` in load_hparams and load_tensors. The")
    lines.append("/// others' contract is the pinned tree's.")
    lines.append("pub(crate) const CONTRACTS_READ: &[(u8, u8)] = &[")
    for first, last in spans(read):
        lines.append(f"    ({first}, {last}),")
    lines.append("];")
    lines.append("")
    # The rows hold no pointer (an item is a span of CONTRACT_ITEMS): a
    # table of &str would cost the binary a relocation per string at start.
    order = {t: i for i, t in enumerate(TERMS)}
    rows, arches, items, at = [], [], [], {}
    for (arch, term, item) in sorted(contracts, key=lambda f: (f[0], order[f[1]], f[2])):
        if '"' in item or "\\" in item or len(item.encode()) > 0xFFFF:
            raise SystemExit(f"contract item not storable as a span: {item!r}")
        if item not in at:
            at[item] = sum(len(i.encode()) for i in items)
            items.append(item)
        if not arches or arches[-1][0] != arch:
            arches.append([arch, len(rows), len(rows)])
        for first, last in spans(contracts[(arch, term, item)]):
            rows.append(f"    ({term}, {at[item]}, {len(item.encode())}, {first}, {last}),")
        arches[-1][2] = len(rows)
    if len(rows) > 0xFFFF:
        raise SystemExit("more contract rows than a u16 indexes")
    lines.append("")
    lines.append("/// The architectures with contract rows (release_contracts.py), sorted: (architecture,")
    lines.append("/// its rows in [`CONTRACT_ROWS`] from, to).")
    lines.append("pub(crate) const CONTRACT_ARCHES: &[(&str, u16, u16)] = &[")
    for arch, start, end in arches:
        lines.append(f"    ({rust_str(arch)}, {start}, {end}),")
    lines.append("];")
    lines.append("")
    lines.append("/// Per architecture, what those loaders need of a model: (term, item as offset and")
    lines.append("/// length in [`CONTRACT_ITEMS`], first, last); items are keys after `ARCH.` (or")
    lines.append("/// `=` and the whole key), tensor patterns (`{}`: the layer), and for Shape")
    lines.append("/// `pattern=dims` (`?`: not evaluated). Sorted by term and item within an architecture.")
    lines.append("pub(crate) const CONTRACT_ROWS: &[(Term, u32, u16, u8, u8)] = &[")
    lines += rows
    lines.append("];")
    lines.append("")
    lines.append("/// The items of [`CONTRACT_ROWS`], each once.")
    lines.append("pub(crate) const CONTRACT_ITEMS: &str = concat!(")
    for item in items:
        lines.append(f"    {rust_str(item)},")
    lines.append(");")
    return "\n".join(lines) + "\n"


def table_view(text: str, tag: str) -> dict:
    """What the generated `text` says release `tag` knows, per table."""
    rel = re.findall(r'\("([^"]+)", "[^"]+"\),', text.split("];", 1)[0])
    index = rel.index(tag)
    view = {}
    for name, body in re.findall(r"pub\(crate\) const (\w+): &\[\([^)]*\)\] = &\[(.*?)\];", text, flags=re.S):
        if name in ("RELEASES", "CONTRACTS_READ", "CONTRACT_ARCHES", "CONTRACT_ROWS"):
            continue
        facts = set()
        for row in re.findall(r"\((.*)\),", body):
            parts = [p.strip() for p in row.rsplit(",", 2)]
            first, last = int(parts[1]), int(parts[2])
            if first <= index <= last:
                facts.add(parts[0])
        view[name] = facts
    view["CONTRACTS"] = {f"{rust_str(a)}, {t}, {rust_str(i)}" for a, t, i, f, l in contract_rows(text)
                         if f <= index <= l}
    return view


def contract_rows(text: str) -> list:
    """The contract rows of a generated table: (architecture, term, item,
    first, last), items read back from their spans."""
    def body(name):
        return re.search(rf"pub\(crate\) const {name}: [^=]*= (?:&\[|concat!\()(.*?)(?:\];|\);)", text, flags=re.S)[1]
    blob = "".join(re.findall(r'^\s*"(.*)",$', body("CONTRACT_ITEMS"), flags=re.M)).encode()
    rows = [tuple(p.strip() for p in r.split(",")) for r in re.findall(r"\((.*)\),", body("CONTRACT_ROWS"))]
    out = []
    for arch, start, end in re.findall(r'\("([^"]+)", (\d+), (\d+)\),', body("CONTRACT_ARCHES")):
        for term, at, length, first, last in rows[int(start):int(end)]:
            item = blob[int(at):int(at) + int(length)].decode()
            out.append((arch, term, item, int(first), int(last)))
    return out


def release_facts(tree: pathlib.Path) -> dict:
    """What one release knows, per table, written as the table writes it."""
    named = {
        "ARCHITECTURES": architectures,
        "TOKENIZER_MODELS": tokenizer_models,
        "PRE_TOKENIZERS": pre_tokenizers,
        "PROJECTOR_TYPES": projector_types,
        "LOADER_FIXES": loader_fixes,
    }
    facts = {name: {rust_str(f) for f in extract(tree)} for name, extract in named.items()}
    facts["GGML_TYPES"] = {f"{tid}, {rust_str(n)}" for tid, n in ggml_types(tree)}
    facts["CONTRACTS"] = {f"{rust_str(a)}, {t}, {rust_str(i)}" for a, t, i in contract_facts(tree)}
    return facts


def check_releases(tags: list, out: pathlib.Path) -> int:
    text = out.read_text()
    bad = 0
    for tag in tags:
        tree = cache_dir() / "src" / tag
        if not (tree / ".complete").is_file():
            print(f"{tag} is not fetched: bash conformance/tools/llama-releases/fetch.sh {tag}", file=sys.stderr)
            return 2
        want, got = release_facts(tree), table_view(text, tag)
        for name in want:
            if want[name] != got.get(name):
                extra = sorted(got.get(name, set()) - want[name])[:5]
                missing = sorted(want[name] - got.get(name, set()))[:5]
                print(f"{tag}: {name} differs from its source: in the table only {extra}, in the source only {missing}",
                      file=sys.stderr)
                bad += 1
    return 1 if bad else 0


def main(argv: list) -> int:
    if "--check-releases" in argv:
        rest = [a for a in argv if a != "--check-releases"]
        tags = [a for a in rest if not a.endswith(".rs")]
        outs = [a for a in rest if a.endswith(".rs")]
        return check_releases(tags, pathlib.Path(outs[0]) if outs else DEFAULT_OUT)
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    out = pathlib.Path(args[0]) if args else DEFAULT_OUT
    rels = releases()
    trees = []
    for version, tag in rels:
        tree = cache_dir() / "src" / tag
        if not (tree / ".complete").is_file():
            print(f"{tag} is not fetched: bash conformance/tools/llama-releases/fetch.sh {tag}", file=sys.stderr)
            return 2
        trees.append(tree)
    text = render(rels, trees)
    if check:
        if not out.is_file() or out.read_text() != text:
            print(f"{out} differs from the releases' sources: run {pathlib.Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
