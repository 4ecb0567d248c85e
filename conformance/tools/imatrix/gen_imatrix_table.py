#!/usr/bin/env python3
"""Writes parser/core/src/check/imatrix_table.rs: the contract llama-quantize
holds an importance matrix (`general.type` = `imatrix`) to.

Facts come from the llama.cpp tree vendored by the PyPI sdist of
llama-cpp-python==0.3.36 (vendor/llama.cpp, == llama.cpp v0.5.0):
- common/imatrix-loader.h: the key names (LLM_KV_IMATRIX_*);
- common/imatrix-loader.cpp (common_imatrix_load): which keys make
  `has_metadata`, which are read with gguf_get_val_u32 (GGML_ASSERT on the
  type: any other type aborts the process), which is read only when it is
  an array of strings, the two tensor suffixes, the one tensor type it
  accepts, that a file without tensors is refused;
- tools/imatrix/imatrix.cpp (save_imatrix): what the writer sets
  (general.type, the keys' types) and the shapes of the two tensors;
- tools/quantize/quantize.cpp (load_imatrix): that a GGUF file without the
  metadata is refused and that the sums are split into as many slices as
  there are counts (an integer division by the count of counts);
- src/llama-quant.cpp: the size an entry must have for a tensor it
  quantizes (ne[0] * ne[2]) and the tensors a wrong size is forgiven for
  (tensor_name_match_token_embd).

Every fact is matched by a pattern over the source; a pattern that no
longer matches stops the generator (the contract changed: read the source
again).

    python3 conformance/tools/imatrix/gen_imatrix_table.py LLAMA_CPP_DIR [OUT] [--check]

With --check, compares instead of writing and exits 1 on a difference.
"""
import pathlib
import re
import sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from generated import write_or_check  # noqa: E402

VERSION = "llama-cpp-python==0.3.36 (vendor/llama.cpp, llama.cpp v0.5.0)"
SOURCES = [
    "common/imatrix-loader.h",
    "common/imatrix-loader.cpp",
    "tools/imatrix/imatrix.cpp",
    "tools/quantize/quantize.cpp",
    "src/llama-quant.cpp",
]


class GenError(Exception):
    pass


def find(pattern: str, text: str, what: str, flags: int = 0) -> re.Match:
    m = re.search(pattern, text, flags)
    if not m:
        raise GenError(f"{what}: pattern not found ({pattern})")
    return m


def facts(root: pathlib.Path) -> dict:
    header = (root / SOURCES[0]).read_text()
    loader = (root / SOURCES[1]).read_text()
    writer = (root / SOURCES[2]).read_text()
    quantize = (root / SOURCES[3]).read_text()
    quant = (root / SOURCES[4]).read_text()

    consts = dict(re.findall(r'constexpr const char \* (LLM_KV_IMATRIX_\w+)\s*=\s*"([^"]+)"', header))
    if len(consts) < 3:
        raise GenError(f"imatrix-loader.h: key constants {consts}")

    # `x_key = gguf_find_key(ctx_gguf, LLM_KV_...)`: the loader's variables.
    var_key = {v: consts[c] for v, c in re.findall(r"(\w+_key)\s*=\s*gguf_find_key\(ctx_gguf,\s*(LLM_KV_IMATRIX_\w+)\)", loader)}
    if len(var_key) != len(consts):
        raise GenError(f"imatrix-loader.cpp: gguf_find_key of {var_key}")

    has_meta = find(r"has_metadata\s*=\s*\(([^;]*)\);", loader, "has_metadata").group(1)
    required = [var_key[v] for v in re.findall(r"(\w+_key)\s*!=\s*-1", has_meta)]
    if not required or "||" in has_meta:
        raise GenError(f"has_metadata is not a conjunction of presences: {has_meta}")

    u32 = [var_key[v] for v in re.findall(r"gguf_get_val_u32\(ctx_gguf,\s*(\w+_key)\)", loader)]
    if not u32:
        raise GenError("imatrix-loader.cpp: no gguf_get_val_u32")
    strings = []
    for v in var_key:
        if re.search(rf"{v}\) == GGUF_TYPE_ARRAY\s*&&\s*gguf_get_arr_type\(ctx_gguf, {v}\) == GGUF_TYPE_STRING", loader):
            strings.append(var_key[v])
    if not strings:
        raise GenError("imatrix-loader.cpp: no key read as an array of strings")

    sums = find(r'in_sum2_suffix\{\s*"([^"]+)"\s*\}', loader, "the sums suffix").group(1)
    counts = find(r'counts_suffix\{\s*"([^"]+)"\s*\}', loader, "the counts suffix").group(1)
    find(r"if \(!in_sum2 \|\| !counts\)", loader, "the pair check")
    find(r"mismatched sums and counts", loader, "the pair message")
    ttype = find(r"in_sum2->type != GGML_TYPE_(\w+) \|\| counts->type != GGML_TYPE_(\w+)", loader, "the tensor type")
    if ttype.group(1) != ttype.group(2):
        raise GenError(f"sums and counts of different types: {ttype.groups()}")
    min_tensors = int(find(r"if \(n_entries < (\d+)\)", loader, "the tensor count").group(1))

    general_type = find(r'gguf_set_val_str\(ctx_gguf, "general.type", "([^"]+)"\)', writer, "general.type").group(1)
    written = {}
    for fn, c in re.findall(r"gguf_set_(val_u32|arr_str)\(ctx_gguf,\s*(LLM_KV_IMATRIX_\w+)", writer):
        written[consts[c]] = {"val_u32": "u32", "arr_str": "array[string]"}[fn]
    for k in u32:
        if written.get(k) != "u32":
            raise GenError(f"the writer does not write {k} as u32: {written}")
    for k in strings:
        if written.get(k) != "array[string]":
            raise GenError(f"the writer does not write {k} as an array of strings: {written}")
    sums_shape = find(r"in_sum2\s*=\s*ggml_new_tensor_2d\(ctx, GGML_TYPE_(\w+), ([^,]+), (\w+)\)", writer, "the sums shape")
    counts_shape = find(r"counts\s*=\s*ggml_new_tensor_2d\(ctx, GGML_TYPE_(\w+), ([^,]+), (\w+)\)", writer, "the counts shape")
    if sums_shape.group(2).replace(" ", "") != "nval/nmat" or counts_shape.group(2).strip() != "1":
        raise GenError(f"writer shapes changed: {sums_shape.groups()} {counts_shape.groups()}")

    find(r"!loaded\.is_legacy && !loaded\.has_metadata", quantize, "the metadata refusal")
    find(r"ne0\s*=\s*\(int64_t\) entry\.sums\.size\(\) / ncounts", quantize, "the slices (sums / counts)")

    find(r"it->second\.size\(\) == \(size_t\)tensor->ne\[0\]\*tensor->ne\[2\]", quant, "the entry size")
    find(r"if \(!tensor_name_match_token_embd\(tensor->name\)\)\s*\{\s*throw", quant, "the size refusal")
    body = find(r"static bool tensor_name_match_token_embd\(const char \* tensor_name\) \{(.*?)\n\}", quant,
                "tensor_name_match_token_embd", re.S).group(1)
    exempt = re.findall(r'std::strcmp\(tensor_name, "([^"]+)"\) == 0', body)
    if not exempt:
        raise GenError("tensor_name_match_token_embd names no tensor")

    return {
        "general_type": general_type,
        "required": required,
        "u32": u32,
        "strings": strings,
        "sums": sums,
        "counts": counts,
        "ttype": ttype.group(1),
        "min_tensors": min_tensors,
        "exempt": exempt,
    }


def rs_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def render(root: pathlib.Path) -> str:
    f = facts(root)
    return f"""// Generated by conformance/tools/imatrix/gen_imatrix_table.py from {VERSION}:
// {", ".join(SOURCES)}.
// Do not edit by hand: re-run the generator (CI runs it with --check).

//! What llama-quantize holds an importance matrix to: the keys
//! `common_imatrix_load` reads and how, the tensor pairs it builds, and the
//! size `llama_model_quantize` wants of an entry.

/// `general.type` as llama-imatrix writes it.
pub(crate) const GENERAL_TYPE: &str = "{f["general_type"]}";
/// Keys without any of which llama-quantize refuses a GGUF importance matrix
/// ("missing imatrix metadata").
pub(crate) const REQUIRED_KEYS: [&str; {len(f["required"])}] = {rs_list(f["required"])};
/// Keys read with `gguf_get_val_u32`: any type but u32 aborts the process.
pub(crate) const U32_KEYS: [&str; {len(f["u32"])}] = {rs_list(f["u32"])};
/// Keys read only when they are an array of strings (ignored otherwise).
pub(crate) const STRING_ARRAY_KEYS: [&str; {len(f["strings"])}] = {rs_list(f["strings"])};
/// The suffix of an entry's sums of squared activations (`ne0` x `n_mat`).
pub(crate) const SUMS_SUFFIX: &str = "{f["sums"]}";
/// The suffix of an entry's token counts (`n_mat`, one per expert or one).
pub(crate) const COUNTS_SUFFIX: &str = "{f["counts"]}";
/// The one tensor type the loader accepts for both (`GGML_TYPE_{f["ttype"]}`).
pub(crate) const TENSOR_TYPE: &str = "{f["ttype"]}";
/// The fewest tensors a file may have ("no data in file" below it).
pub(crate) const MIN_TENSORS: u64 = {f["min_tensors"]};
/// Tensors llama-quantize quantizes without weights, rather than refusing,
/// when their entry has the wrong size (`tensor_name_match_token_embd`).
pub(crate) const SIZE_EXEMPT: [&str; {len(f["exempt"])}] = {rs_list(f["exempt"])};
"""


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv
    if not args:
        print("usage: gen_imatrix_table.py LLAMA_CPP_DIR [OUT] [--check]", file=sys.stderr)
        return 2
    root = pathlib.Path(args[0])
    out = pathlib.Path(args[1]) if len(args) > 1 else pathlib.Path(__file__).resolve().parents[3] / "parser/core/src/check/imatrix_table.rs"
    try:
        new = render(root)
    except (GenError, OSError, ValueError, KeyError) as e:
        print(f"gen_imatrix_table.py: cannot read the sources: {e}", file=sys.stderr)
        return 2
    return write_or_check(out, new, "conformance/tools/imatrix/gen_imatrix_table.py", check)


if __name__ == "__main__":
    sys.exit(main())
