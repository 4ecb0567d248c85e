#!/usr/bin/env python3
"""Writes parser/core/src/check/diffusion_table.rs: what the two loaders of
diffusion-model GGUF files hold a file to.

stable-diffusion.cpp, as vendored by the PyPI sdist of
stable-diffusion-cpp-python==0.4.7 (vendor/stable-diffusion.cpp):
- src/model.cpp, ModelLoader::get_sd_version: the tests, in evaluation
  order, that map tensor names (and a few ne[] values) to an SDVersion; the
  loop runs over the tensors in file order and some tests return at once;
- src/model_io/gguf_io.cpp + gguf_reader_ext.h: the GGUF reader (no
  metadata key is read; a file ggml refuses is re-read by a lenient reader);
- src/stable-diffusion.cpp: the prefix given to a diffusion-model file;
- src/flux.hpp, src/mmdit.hpp, src/unet.hpp, src/wan.hpp, src/qwen_image.hpp:
  the tensors each builder creates, its hyper-parameters and where they come
  from, and the divisions (and loops) sized by values read from the file;
- src/model.cpp, ModelLoader::load_tensors: how the file's tensors are
  matched with the builder's.

ComfyUI-GGUF (city96/ComfyUI-GGUF, a checkout of one commit):
- loader.py: the architecture lists, the compatibility mode for files
  without general.architecture, the comfy.gguf.orig_shape.* contract and
  the refusals;
- dequant.py: the quant types it dequantizes itself;
- tools/convert.py: the architecture detection the compat mode reuses and
  what the converter writes.

Every fact is matched by a pattern over the source (or, for ComfyUI-GGUF,
read with the ast module); a pattern that no longer matches stops the
generator: read the source again. The per-family tensor lists are written
here by hand from the builders' constructors and each of their block names
is checked to occur in the family's source.

    python3 conformance/tools/sd-cpp/gen_diffusion_table.py \\
        --sd-src SDIST_DIR/vendor/stable-diffusion.cpp --comfy-src COMFY_DIR [--out OUT] [--check]

COMFY_DIR is a plain checkout (e.g. `git archive COMMIT | tar -x`).
"""
import argparse
import json
import ast
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from generated import write_or_check  # noqa: E402

SD_PACKAGE = "stable-diffusion-cpp-python==0.4.7 (PyPI sdist, vendor/stable-diffusion.cpp)"
# The sdist names no commit (SDCPP_BUILD_COMMIT comes from `git` at build
# time and is "unknown" in an sdist). The commit below is the only commit on
# leejet/stable-diffusion.cpp master whose src/, docs/ and
# examples/server/main.cpp trees equal the sdist's (git tree comparison).
SD_COMMIT = "90e87bc846f17059771efb8aaa31e9ef0cab6f78 (master-596-90e87bc)"
COMFY_REPO = "city96/ComfyUI-GGUF"
COMFY_COMMIT = "795e45156ece99afbc3efef911e63fcb46e6a20d"

SD_FILES = {
    "model": "src/model.cpp",
    "gguf_io": "src/model_io/gguf_io.cpp",
    "gguf_ext": "src/model_io/gguf_reader_ext.h",
    "tstore": "src/model_io/tensor_storage.h",
    "sd": "src/stable-diffusion.cpp",
    "names": "src/name_conversion.cpp",
    "extend": "src/ggml_extend.hpp",
    "flux": "src/flux.hpp",
    "mmdit": "src/mmdit.hpp",
    "unet": "src/unet.hpp",
    "wan": "src/wan.hpp",
    "qwen": "src/qwen_image.hpp",
    "ggml_h": "ggml/include/ggml.h",
    "cmake": "CMakeLists.txt",
}
COMFY_FILES = {
    "loader": "loader.py",
    "dequant": "dequant.py",
    "convert": "tools/convert.py",
}


class GenError(Exception):
    pass


class Src:
    """A source file with line lookup."""

    def __init__(self, root: pathlib.Path, rel: str):
        self.rel = rel
        self.text = (root / rel).read_text()

    def find(self, pattern: str, what: str, flags: int = 0, start: int = 0) -> re.Match:
        m = re.compile(pattern, flags).search(self.text, start)
        if not m:
            raise GenError(f"{self.rel}: {what}: pattern not found ({pattern})")
        return m

    def line(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def at(self, pattern: str, what: str, flags: int = 0) -> str:
        """`file:line` of the first match."""
        m = self.find(pattern, what, flags)
        return f"{self.rel}:{self.line(m.start())}"


def balanced(text: str, open_pos: int) -> int:
    """Index just past the brace/paren matching text[open_pos]."""
    pairs = {"{": "}", "(": ")"}
    o = text[open_pos]
    c = pairs[o]
    depth = 0
    i = open_pos
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = text.index('"', i + 1)
            while text[j - 1] == "\\":
                j = text.index('"', j + 1)
            i = j
        elif ch == o:
            depth += 1
        elif ch == c:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise GenError("unbalanced braces")


def ctor_body(src: "Src", m: re.Match) -> str:
    """The body of the constructor whose signature starts at m (skips the
    parameter list, with its `= {}` defaults, and the initializer list)."""
    t = src.text
    open_paren = t.index("(", m.start())
    after = balanced(t, open_paren)
    body_start = t.index("{", after)
    return t[body_start:balanced(t, body_start)]


def strip_comments(code: str) -> str:
    return re.sub(r"//[^\n]*", "", code)


# ---------------------------------------------------------------- detection

NAME_TEST = re.compile(
    r'tensor_storage\.name\.find\("([^"]+)"\)\s*!=\s*std::string::npos'
    r'|tensor_storage\.name\s*==\s*"([^"]+)"')


def parse_cond_names(cond: str) -> list[tuple[str, str]]:
    """`a || b || ...` over name tests -> [(kind, needle)]."""
    parts = [p.strip() for p in cond.split("||")]
    out = []
    for p in parts:
        m = NAME_TEST.fullmatch(p)
        if not m:
            raise GenError(f"get_sd_version: unknown name test {p!r}")
        out.append(("contains", m.group(1)) if m.group(1) else ("equals", m.group(2)))
    return out


def split_statements(body: str) -> list[tuple[str, str | None, str | None]]:
    """Top-level statements of a C block: (kind, a, b) with kind in
    {'if', 'else if', 'else', 'stmt'}; for an if, a = condition, b = body."""
    out = []
    i = 0
    body = strip_comments(body)
    n = len(body)
    while i < n:
        if body[i].isspace():
            i += 1
            continue
        m = re.compile(r"(else\s+if|if)\s*\(").match(body, i)
        if m:
            cond_open = m.end() - 1
            cond_end = balanced(body, cond_open)
            cond = body[cond_open + 1:cond_end - 1]
            j = cond_end
            while body[j].isspace():
                j += 1
            if body[j] == "{":
                end = balanced(body, j)
                blk = body[j + 1:end - 1]
            else:
                end = body.index(";", j) + 1
                blk = body[j:end]
            kind = "else if" if m.group(1).startswith("else") else "if"
            out.append((kind, " ".join(cond.split()), blk))
            i = end
            continue
        m = re.compile(r"else\s*\{").match(body, i)
        if m:
            end = balanced(body, m.end() - 1)
            out.append(("else", None, body[m.end():end - 1]))
            i = end
            continue
        end = body.index(";", i) + 1
        out.append(("stmt", " ".join(body[i:end].split()), None))
        i = end
    return out


def loop_actions(body: str) -> list[str]:
    """The effects of one name test's block, as short strings."""
    acts = []
    for kind, a, b in split_statements(body):
        if kind == "stmt":
            if m := re.fullmatch(r"return (VERSION_\w+);", a):
                acts.append(f"return {m.group(1)}")
            elif m := re.fullmatch(r"(\w+) = true;", a):
                acts.append(f"set {m.group(1)}")
            elif m := re.fullmatch(r"(\w+) = tensor_storage\.ne\[(\d)\];", a):
                acts.append(f"store {m.group(1)} = ne[{m.group(2)}]")
            elif m := re.fullmatch(r"(\w+) = tensor_storage;", a):
                acts.append(f"store {m.group(1)} = this tensor")
            else:
                raise GenError(f"get_sd_version: unknown statement {a!r}")
        elif kind == "if":
            if m := re.fullmatch(r"\w+", a):
                for inner in loop_actions(b):
                    acts.append(f"{inner} if {a}")
            elif NAME_TEST.search(a):
                tests = parse_cond_names(a)
                if len(tests) != 1:
                    raise GenError(f"get_sd_version: nested test {a!r}")
                inner_stmts = split_statements(b)
                if (len(inner_stmts) != 1 or inner_stmts[0][0] != "if"):
                    raise GenError(f"get_sd_version: nested body {b!r}")
                c2, b2 = inner_stmts[0][1], inner_stmts[0][2]
                m2 = re.fullmatch(r"tensor_storage\.ne\[(\d)\] == (\d+)", c2)
                if not m2:
                    raise GenError(f"get_sd_version: nested shape test {c2!r}")
                for inner in loop_actions(b2):
                    acts.append(f"{inner} if name {tests[0][0]} \"{tests[0][1]}\" and ne[{m2.group(1)}] == {m2.group(2)}")
            else:
                raise GenError(f"get_sd_version: unknown inner if {a!r}")
        else:
            raise GenError(f"get_sd_version: unexpected {kind}")
    if not acts:
        raise GenError("get_sd_version: a test without effect")
    return acts


def flatten_decide(body: str, outer: list[str], rows: list, defs: list) -> None:
    prev: list[str] = []
    for kind, a, b in split_statements(body):
        if kind == "stmt":
            if m := re.fullmatch(r"return (VERSION_\w+);", a):
                rows.append((list(outer), m.group(1)))
            elif m := re.fullmatch(r"return (\w+) \? (VERSION_\w+) : (VERSION_\w+);", a):
                rows.append((outer + [m.group(1)], m.group(2)))
                rows.append((outer + [f"!{m.group(1)}"], m.group(3)))
            elif m := re.fullmatch(r"bool (\w+) = (.+);", a):
                defs.append((m.group(1), m.group(2)))
            elif a.startswith("LOG_"):
                continue
            else:
                raise GenError(f"get_sd_version decision: unknown statement {a!r}")
            prev = []
        elif kind == "if":
            flatten_decide(b, outer + [a], rows, defs)
            prev = [a]
        elif kind == "else if":
            if not prev:
                raise GenError("else if without if")
            flatten_decide(b, outer + [f"!({p})" for p in prev] + [a], rows, defs)
            prev = prev + [a]
        else:
            raise GenError("get_sd_version decision: bare else")


def detection(model: Src) -> dict:
    m = model.find(r"SDVersion ModelLoader::get_sd_version\(\) \{", "get_sd_version")
    fn_end = balanced(model.text, m.end() - 1)
    fn = model.text[m.end():fn_end - 1]
    fn_line = model.line(m.start())
    loop = re.search(r"for \(auto& \[name, tensor_storage\] : tensor_storage_map\) \{", fn)
    if not loop:
        raise GenError("get_sd_version: the loop over tensors")
    head = fn[:loop.start()]
    loop_end = balanced(fn, loop.end() - 1)
    loop_body = fn[loop.end():loop_end - 1]
    tail = fn[loop_end:]

    vars_ = []
    for decl in re.finditer(r"(bool|int64_t)\s+(\w+)\s*=\s*([^;]+);", head):
        vars_.append((decl.group(2), decl.group(1), decl.group(3).strip()))
    ts = re.search(r"TensorStorage ([\w, ]+);", head)
    if not ts:
        raise GenError("get_sd_version: the TensorStorage locals")
    for name in [x.strip() for x in ts.group(1).split(",")]:
        vars_.append((name, "TensorStorage", "ne = [1, 1, 1, 1, 1] (default TensorStorage)"))

    tests = []
    for group, (kind, cond, body) in enumerate(split_statements(loop_body)):
        if kind != "if":
            raise GenError(f"get_sd_version loop: unexpected {kind} {cond}")
        names = parse_cond_names(cond)
        acts = loop_actions(body)
        for k, needle in names:
            tests.append((group, k, needle, acts))

    rows: list = []
    defs: list = []
    flatten_decide(tail, [], rows, defs)
    if rows[-1][0]:
        raise GenError("get_sd_version: no final fallback return")
    return {"vars": vars_, "tests": tests, "defs": defs, "decide": rows, "line": fn_line}


# ------------------------------------------------------------ sd.cpp facts

def loader_facts(s: dict[str, Src]) -> dict:
    f = {}
    sd = s["sd"]
    f["diffusion_prefix"] = sd.find(
        r'init_from_file\(sd_ctx_params->diffusion_model_path, "([^"]+)"\)', "diffusion model prefix").group(1)
    f["diffusion_prefix_at"] = sd.at(r'init_from_file\(sd_ctx_params->diffusion_model_path', "prefix")
    s["model"].find(r"if \(!starts_with\(tensor_storage\.name, prefix\)\) \{\s*tensor_storage\.name = prefix \+ tensor_storage\.name;",
                    "prefix added unless present")
    f["version_fail_at"] = sd.at(r'get sd version from file failed', "version failure")
    # the ggml it builds takes longer tensor names than ggml's default (64)
    f["max_name"] = int(s["cmake"].find(r"add_definitions\(-DGGML_MAX_NAME=(\d+)\)", "GGML_MAX_NAME").group(1))
    f["max_name_at"] = s["cmake"].at(r"add_definitions\(-DGGML_MAX_NAME=", "GGML_MAX_NAME")
    gi = s["gguf_io"]
    gi.find(r"ctx_gguf_ = gguf_init_from_file\(file_path\.c_str\(\), \{true, &ctx_meta_\}\);\s*if \(!ctx_gguf_\) \{\s*GGUFReader gguf_reader;",
            "the fallback reader")
    f["fallback_at"] = gi.at(r"GGUFReader gguf_reader;", "fallback")
    f["size_check_at"] = gi.at(r'size mismatch for tensor', "size check")
    if "gguf_get_val" in gi.text or "gguf_find_key" in gi.text:
        raise GenError("gguf_io.cpp reads metadata now: re-read it")
    ext = s["gguf_ext"]
    ext.find(r'if \(key == "general\.alignment"\) \{\s*uint32_t align_val = 0;', "alignment read as u32")
    ext.find(r"info\.shape\[GGML_MAX_DIMS - 1\] \*= info\.shape\[i\];", "dims folded")
    f["fold_at"] = ext.at(r"info\.shape\[GGML_MAX_DIMS - 1\] \*= info\.shape\[i\];", "fold")
    f["ext_type_at"] = ext.at(r"info\.type = static_cast<ggml_type>\(type\);", "type unchecked")
    f["key_len_max"] = int(ext.find(r"if \(key_len > (\d+)\)", "key length cap").group(1))
    f["default_align"] = int(ext.find(r"size_t alignment_ = (\d+);", "default alignment").group(1))
    model = s["model"]
    f["unknown_at"] = model.at(r"unknown tensor '%s' in model file", "unknown tensor")
    f["shape_at"] = model.at(r"has wrong shape in model file", "wrong shape")
    f["missing_at"] = model.at(r"tensor '%s' not in model file", "missing tensor")
    model.find(r"real->ne\[0\] != tensor_storage\.ne\[0\] \|\|\s*real->ne\[1\] != tensor_storage\.ne\[1\] \|\|\s*"
               r"real->ne\[2\] != tensor_storage\.ne\[2\] \|\|\s*real->ne\[3\] != tensor_storage\.ne\[3\]", "4-dim compare")
    f["convert_div_at"] = model.at(r"\(int\)tensor_storage\.nelements\(\) / \(int\)tensor_storage\.ne\[0\]", "convert rows")
    f["no_dequant_at"] = model.at(r"unsupported for integer quantization: no dequantization available", "no to_float")
    ts = s["tstore"]
    f["nbytes_at"] = ts.at(r"return nelements\(\) \* ggml_type_size\(type\) / ggml_blck_size\(type\);", "nbytes")
    ex = s["extend"]
    f["linear_blck_at"] = ex.at(r"if \(in_features % ggml_blck_size\(wtype\) != 0 \|\| force_f32\)", "Linear block size")
    ex.find(r"enum ggml_type wtype = GGML_TYPE_F16;\s*params\[\"weight\"\]\s*= ggml_new_tensor_4d\(ctx, wtype, kernel_size\.second, kernel_size\.first, in_channels, out_channels\);",
            "Conv2d weight F16 [kw, kh, in, out]")
    # ggml type ids with block size 0 (deprecated/removed)
    gh = s["ggml_h"].text
    ids = {}
    for mm in re.finditer(r"^\s*(?://\s*)?GGML_TYPE_(\w+)\s*=\s*(\d+),", gh, re.M):
        ids[mm.group(1)] = int(mm.group(2))
    if ids.get("COUNT") is None:
        raise GenError("ggml.h: GGML_TYPE_COUNT")
    removed = sorted(v for k, v in ids.items()
                     if re.search(rf"//\s*GGML_TYPE_{k}\s*=", gh))
    f["ggml_ids"] = ids
    f["zero_block_types"] = removed
    return f


def flux_facts(src: Src) -> dict:
    t = src.text
    params = {}
    m = src.find(r"struct FluxParams \{(.*?)\n\s*\};", "FluxParams", re.S)
    for mm in re.finditer(r"^\s*(int64_t|int|float|bool|SDVersion)\s+(\w+)\s*=\s*([^;]+);", m.group(1), re.M):
        params[mm.group(2)] = mm.group(3).strip()
    body = strip_comments(ctor_body(src, src.find(r"FluxRunner\(ggml_backend_t backend,", "FluxRunner")))
    runner_zero = re.findall(r"flux_params\.(\w+)\s*=\s*(0|false);", body.split("if (version ==")[0])
    rules = []
    for mm in re.finditer(r'tensor_name\.find\("([^"]+)"\) != std::string::npos\) \{\s*(?:LOG_DEBUG\([^;]*\);\s*)?flux_params\.([\w.]+) = (true|\d+);', body):
        rules.append((mm.group(2), f"{mm.group(3)} when a name contains \"{mm.group(1)}\""))
    for mm in re.finditer(r'ends_with\(tensor_name, "([^"]+)"\)\) \{\s*((?:[\w.]+\s*=\s*pair\.second\.ne\[\d\];\s*)+)\}', body):
        for a in re.finditer(r"([\w.]+)\s*=\s*pair\.second\.ne\[(\d)\];", mm.group(2)):
            name = a.group(1).replace("flux_params.", "")
            rules.append((name, f"ne[{a.group(2)}] of the tensor whose name ends with \"{mm.group(1)}\""))
    for prefix in ("double_blocks.", "single_blocks."):
        src.find(rf'size_t \w+ = tensor_name\.find\("{re.escape(prefix)}"\);', f"{prefix} depth")
    rules.append(("depth", "max N + 1 over names containing \"double_blocks.N\" (atoi of the text after it; 0 if none)"))
    rules.append(("depth_single_blocks", "max N + 1 over names containing \"single_blocks.N\" (atoi; 0 if none)"))
    nh = src.find(r"flux_params\.num_heads = static_cast<int>\(flux_params\.hidden_size / head_dim\);", "num_heads division")
    rules.append(("num_heads", "int(hidden_size / head_dim) (head_dim starts at 0)"))
    src.find(r"int64_t head_dim\s*= 0;", "head_dim starts at 0")
    return {"defaults": params, "runner_zero": runner_zero, "rules": rules,
            "num_heads_at": f"{src.rel}:{src.line(nh.start())}",
            "sa_div_at": src.at(r"int64_t head_dim = dim / num_heads;", "SelfAttention head_dim"),
            "ss_div_at": src.at(r"int64_t head_dim = hidden_size / num_heads;", "SingleStreamBlock head_dim"),
            "depth_atoi_at": src.at(r'int block_depth = atoi\(tensor_name\.substr\(14', "depth atoi")}


def mmdit_facts(src: Src) -> dict:
    d = {}
    m = src.find(r"struct MMDiT : public GGMLBlock \{(.*?)void init_params", "MMDiT fields", re.S)
    for mm in re.finditer(r"^\s*(int64_t|int|float)\s+(\w+)\s*=\s*([^;]+);", m.group(1), re.M):
        d[mm.group(2)] = mm.group(3).split("//")[0].strip()
    src.find(r"hidden_size\s*= 64 \* depth;", "hidden = 64 * depth")
    src.find(r"int64_t num_heads\s*= depth;", "num_heads = depth")
    src.find(r'new Linear\(4096, context_embedder_out_dim, true, true\)', "context_embedder 4096")
    return {"defaults": d, "depth_atoi_at": src.at(r"atoi\(tensor_name\.substr\(13", "joint depth atoi"),
            "d_head_at": src.at(r"int64_t d_head = dim / num_heads;", "d_head")}


def wan_facts(src: Src) -> dict:
    t = src.text
    src.find(r"wan_params\.num_layers = 0;", "num_layers starts at 0")
    abort = src.find(r'GGML_ABORT\("invalid num_layers\(%d\) of wan", wan_params\.num_layers\);', "abort on num_layers")
    body = ctor_body(src, src.find(r"WanRunner\(ggml_backend_t backend,", "WanRunner"))
    configs = []
    for nl in re.findall(r"wan_params\.num_layers == (\d+)", body):
        configs.append(int(nl))
    descs = re.findall(r'desc\s*=\s*"([^"]+)";', body)
    step = src.find(r"int step = params\.num_layers / params\.vace_layers;", "vace step")
    loop = src.find(r"for \(int i = 0; i < params\.num_layers; i \+= step\)", "vace loop")
    return {"configs": configs, "descs": descs, "abort_at": f"{src.rel}:{src.line(abort.start())}",
            "step_at": f"{src.rel}:{src.line(step.start())}", "loop_at": f"{src.rel}:{src.line(loop.start())}",
            "head_div_at": src.at(r"head_dim\s*= dim / num_heads;", "Wan head_dim")}


def qwen_facts(src: Src) -> dict:
    d = {}
    m = src.find(r"struct QwenImageParams \{(.*?)\n\s*\};", "QwenImageParams", re.S)
    for mm in re.finditer(r"^\s*(int64_t|int|bool)\s+(\w+)\s*=\s*([^;]+);", m.group(1), re.M):
        d[mm.group(2)] = mm.group(3).strip()
    src.find(r"qwen_image_params\.num_layers\s*= 0;", "num_layers starts at 0")
    src.find(r'tensor_name\.find\("transformer_blocks\."\)', "num_layers from transformer_blocks.N")
    return {"defaults": d}


def unet_facts(src: Src) -> dict:
    d = {}
    m = src.find(r"class UnetModelBlock : public GGMLBlock \{(.*?)UnetModelBlock\(SDVersion", "UNet fields", re.S)
    for mm in re.finditer(r"^\s*(int|bool|std::vector<int>)\s+(\w+)\s*=\s*([^;]+);", m.group(1), re.M):
        d[mm.group(2)] = mm.group(3).split("//")[0].strip()
    body = ctor_body(src, src.find(r"UnetModelBlock\(SDVersion version = VERSION_SD1, const String2TensorStorage& tensor_storage_map = \{\}\)", "UNet ctor"))
    if "tensor_storage_map" in body:
        raise GenError("unet.hpp: the UNet builder reads the file now: re-read it")
    return {"defaults": d, "d_head_at": src.at(r"int d_head = ch / num_heads;", "UNet d_head")}


# ------------------------------------------------------- per-family tensors
# (name template, ne[] expressions in ggml order, condition). Names are
# relative to the "model.diffusion_model." prefix. {i} is a block index.

FLUX_TENSORS = [
    ("img_in.weight", ["in_channels", "hidden_size"], "not CHROMA_RADIANCE"),
    ("img_in.bias", ["hidden_size"], "not CHROMA_RADIANCE"),
    ("time_in.in_layer.weight", ["256", "hidden_size"], "not is_chroma"),
    ("time_in.in_layer.bias", ["hidden_size"], "not is_chroma"),
    ("time_in.out_layer.weight", ["hidden_size", "hidden_size"], "not is_chroma"),
    ("time_in.out_layer.bias", ["hidden_size"], "not is_chroma"),
    ("vector_in.in_layer.weight", ["vec_in_dim", "hidden_size"], "not is_chroma and vec_in_dim > 0"),
    ("vector_in.in_layer.bias", ["hidden_size"], "not is_chroma and vec_in_dim > 0"),
    ("vector_in.out_layer.weight", ["hidden_size", "hidden_size"], "not is_chroma and vec_in_dim > 0"),
    ("vector_in.out_layer.bias", ["hidden_size"], "not is_chroma and vec_in_dim > 0"),
    ("guidance_in.in_layer.weight", ["256", "hidden_size"], "not is_chroma and guidance_embed"),
    ("guidance_in.in_layer.bias", ["hidden_size"], "not is_chroma and guidance_embed"),
    ("guidance_in.out_layer.weight", ["hidden_size", "hidden_size"], "not is_chroma and guidance_embed"),
    ("guidance_in.out_layer.bias", ["hidden_size"], "not is_chroma and guidance_embed"),
    ("txt_in.weight", ["context_in_dim", "hidden_size"], "always"),
    ("txt_in.bias", ["hidden_size"], "always"),
    ("double_blocks.{i}.img_mod.lin.weight", ["hidden_size", "6*hidden_size"], "i < depth, not is_chroma"),
    ("double_blocks.{i}.img_mod.lin.bias", ["6*hidden_size"], "i < depth, not is_chroma"),
    ("double_blocks.{i}.img_attn.qkv.weight", ["hidden_size", "3*hidden_size"], "i < depth"),
    ("double_blocks.{i}.img_attn.qkv.bias", ["3*hidden_size"], "i < depth, qkv_bias"),
    ("double_blocks.{i}.img_attn.norm.query_norm.scale", ["hidden_size/num_heads"], "i < depth"),
    ("double_blocks.{i}.img_attn.norm.key_norm.scale", ["hidden_size/num_heads"], "i < depth"),
    ("double_blocks.{i}.img_attn.proj.weight", ["hidden_size", "hidden_size"], "i < depth"),
    ("double_blocks.{i}.img_attn.proj.bias", ["hidden_size"], "i < depth"),
    ("double_blocks.{i}.img_mlp.0.weight", ["hidden_size", "mlp_hidden_dim"], "i < depth"),
    ("double_blocks.{i}.img_mlp.0.bias", ["mlp_hidden_dim"], "i < depth"),
    ("double_blocks.{i}.img_mlp.2.weight", ["mlp_hidden_dim", "hidden_size"], "i < depth"),
    ("double_blocks.{i}.img_mlp.2.bias", ["hidden_size"], "i < depth"),
    ("double_blocks.{i}.txt_mod.lin.weight", ["hidden_size", "6*hidden_size"], "i < depth, not is_chroma"),
    ("double_blocks.{i}.txt_mod.lin.bias", ["6*hidden_size"], "i < depth, not is_chroma"),
    ("double_blocks.{i}.txt_attn.qkv.weight", ["hidden_size", "3*hidden_size"], "i < depth"),
    ("double_blocks.{i}.txt_attn.qkv.bias", ["3*hidden_size"], "i < depth, qkv_bias"),
    ("double_blocks.{i}.txt_attn.norm.query_norm.scale", ["hidden_size/num_heads"], "i < depth"),
    ("double_blocks.{i}.txt_attn.norm.key_norm.scale", ["hidden_size/num_heads"], "i < depth"),
    ("double_blocks.{i}.txt_attn.proj.weight", ["hidden_size", "hidden_size"], "i < depth"),
    ("double_blocks.{i}.txt_attn.proj.bias", ["hidden_size"], "i < depth"),
    ("double_blocks.{i}.txt_mlp.0.weight", ["hidden_size", "mlp_hidden_dim"], "i < depth"),
    ("double_blocks.{i}.txt_mlp.0.bias", ["mlp_hidden_dim"], "i < depth"),
    ("double_blocks.{i}.txt_mlp.2.weight", ["mlp_hidden_dim", "hidden_size"], "i < depth"),
    ("double_blocks.{i}.txt_mlp.2.bias", ["hidden_size"], "i < depth"),
    ("single_blocks.{i}.linear1.weight", ["hidden_size", "3*hidden_size+mlp_hidden_dim"], "i < depth_single_blocks"),
    ("single_blocks.{i}.linear1.bias", ["3*hidden_size+mlp_hidden_dim"], "i < depth_single_blocks"),
    ("single_blocks.{i}.linear2.weight", ["hidden_size+mlp_hidden_dim", "hidden_size"], "i < depth_single_blocks"),
    ("single_blocks.{i}.linear2.bias", ["hidden_size"], "i < depth_single_blocks"),
    ("single_blocks.{i}.norm.query_norm.scale", ["hidden_size/num_heads"], "i < depth_single_blocks"),
    ("single_blocks.{i}.norm.key_norm.scale", ["hidden_size/num_heads"], "i < depth_single_blocks"),
    ("single_blocks.{i}.modulation.lin.weight", ["hidden_size", "3*hidden_size"], "i < depth_single_blocks, not is_chroma"),
    ("single_blocks.{i}.modulation.lin.bias", ["3*hidden_size"], "i < depth_single_blocks, not is_chroma"),
    # LastLayer(hidden_size, 1, out_channels): patch size 1 (src/flux.hpp, Flux::Flux)
    ("final_layer.linear.weight", ["hidden_size", "out_channels"], "not CHROMA_RADIANCE"),
    ("final_layer.linear.bias", ["out_channels"], "not CHROMA_RADIANCE"),
    ("final_layer.adaLN_modulation.1.weight", ["hidden_size", "2*hidden_size"], "not CHROMA_RADIANCE, not is_chroma"),
    ("final_layer.adaLN_modulation.1.bias", ["2*hidden_size"], "not CHROMA_RADIANCE, not is_chroma"),
]
FLUX_DERIVED = [
    ("mlp_hidden_dim", "int64(hidden_size * mlp_ratio)"),
    ("block head_dim", "hidden_size / num_heads (the norms' length; == file head_dim only when head_dim divides hidden_size)"),
    ("in_channels by version", "FLUX 64, FLUX_FILL 384, FLUX_CONTROLS 128, FLEX_2 196 (hard-coded, not read)"),
]

SD3_TENSORS = [
    ("pos_embed", ["hidden_size", "num_patchs", "1"], "always (F32)"),
    ("x_embedder.proj.weight", ["patch_size", "patch_size", "in_channels", "hidden_size"], "always"),
    ("x_embedder.proj.bias", ["hidden_size"], "always"),
    ("t_embedder.mlp.0.weight", ["256", "hidden_size"], "always"),
    ("t_embedder.mlp.0.bias", ["hidden_size"], "always"),
    ("t_embedder.mlp.2.weight", ["hidden_size", "hidden_size"], "always"),
    ("t_embedder.mlp.2.bias", ["hidden_size"], "always"),
    ("y_embedder.mlp.0.weight", ["adm_in_channels", "hidden_size"], "always"),
    ("y_embedder.mlp.0.bias", ["hidden_size"], "always"),
    ("y_embedder.mlp.2.weight", ["hidden_size", "hidden_size"], "always"),
    ("y_embedder.mlp.2.bias", ["hidden_size"], "always"),
    ("context_embedder.weight", ["4096", "hidden_size"], "always"),
    ("context_embedder.bias", ["hidden_size"], "always"),
    ("joint_blocks.{i}.{b}.attn.qkv.weight", ["hidden_size", "3*hidden_size"], "i < depth; b in context_block, x_block"),
    ("joint_blocks.{i}.{b}.attn.qkv.bias", ["3*hidden_size"], "i < depth; b in context_block, x_block"),
    ("joint_blocks.{i}.{b}.attn.proj.weight", ["hidden_size", "hidden_size"], "i < depth; not (b == context_block and i == depth-1)"),
    ("joint_blocks.{i}.{b}.attn.proj.bias", ["hidden_size"], "i < depth; not (b == context_block and i == depth-1)"),
    ("joint_blocks.{i}.{b}.attn.ln_q.weight", ["hidden_size/num_heads"], "qk_norm is rms or ln"),
    ("joint_blocks.{i}.{b}.attn.ln_k.weight", ["hidden_size/num_heads"], "qk_norm is rms or ln"),
    ("joint_blocks.{i}.{b}.attn.ln_q.bias", ["hidden_size/num_heads"], "qk_norm is ln"),
    ("joint_blocks.{i}.{b}.attn.ln_k.bias", ["hidden_size/num_heads"], "qk_norm is ln"),
    ("joint_blocks.{i}.x_block.attn2.qkv.weight", ["hidden_size", "3*hidden_size"], "i <= d_self"),
    ("joint_blocks.{i}.x_block.attn2.qkv.bias", ["3*hidden_size"], "i <= d_self"),
    ("joint_blocks.{i}.x_block.attn2.proj.weight", ["hidden_size", "hidden_size"], "i <= d_self"),
    ("joint_blocks.{i}.x_block.attn2.proj.bias", ["hidden_size"], "i <= d_self"),
    ("joint_blocks.{i}.{b}.mlp.fc1.weight", ["hidden_size", "4*hidden_size"], "not pre_only (context_block of the last block is pre_only)"),
    ("joint_blocks.{i}.{b}.mlp.fc1.bias", ["4*hidden_size"], "not pre_only"),
    ("joint_blocks.{i}.{b}.mlp.fc2.weight", ["4*hidden_size", "hidden_size"], "not pre_only"),
    ("joint_blocks.{i}.{b}.mlp.fc2.bias", ["hidden_size"], "not pre_only"),
    ("joint_blocks.{i}.{b}.adaLN_modulation.1.weight", ["hidden_size", "n_mods*hidden_size"], "n_mods = 2 if pre_only, 9 if x_block and i <= d_self, else 6"),
    ("joint_blocks.{i}.{b}.adaLN_modulation.1.bias", ["n_mods*hidden_size"], "as the weight"),
    ("final_layer.linear.weight", ["hidden_size", "patch_size*patch_size*out_channels"], "always"),
    ("final_layer.linear.bias", ["patch_size*patch_size*out_channels"], "always"),
    ("final_layer.adaLN_modulation.1.weight", ["hidden_size", "2*hidden_size"], "always"),
    ("final_layer.adaLN_modulation.1.bias", ["2*hidden_size"], "always"),
]

WAN_TENSORS = [
    ("patch_embedding.weight", ["2", "2", "1", "in_dim*dim"], "always (Conv3d, F16; a 5-dim file tensor is folded into ne[3])"),
    ("patch_embedding.bias", ["dim"], "always"),
    ("text_embedding.0.weight", ["text_dim", "dim"], "always"),
    ("text_embedding.0.bias", ["dim"], "always"),
    ("text_embedding.2.weight", ["dim", "dim"], "always"),
    ("text_embedding.2.bias", ["dim"], "always"),
    ("time_embedding.0.weight", ["freq_dim", "dim"], "always"),
    ("time_embedding.0.bias", ["dim"], "always"),
    ("time_embedding.2.weight", ["dim", "dim"], "always"),
    ("time_embedding.2.bias", ["dim"], "always"),
    ("time_projection.1.weight", ["dim", "6*dim"], "always"),
    ("time_projection.1.bias", ["6*dim"], "always"),
    ("blocks.{i}.modulation", ["dim", "6", "1"], "i < num_layers"),
    ("blocks.{i}.self_attn.{p}.weight", ["dim", "dim"], "p in q, k, v, o"),
    ("blocks.{i}.self_attn.{p}.bias", ["dim"], "p in q, k, v, o"),
    ("blocks.{i}.self_attn.norm_q.weight", ["dim"], "qk_norm (true)"),
    ("blocks.{i}.self_attn.norm_k.weight", ["dim"], "qk_norm (true)"),
    ("blocks.{i}.norm3.weight", ["dim"], "cross_attn_norm (true)"),
    ("blocks.{i}.norm3.bias", ["dim"], "cross_attn_norm (true)"),
    ("blocks.{i}.cross_attn.{p}.weight", ["dim", "dim"], "p in q, k, v, o"),
    ("blocks.{i}.cross_attn.{p}.bias", ["dim"], "p in q, k, v, o"),
    ("blocks.{i}.cross_attn.norm_q.weight", ["dim"], "qk_norm"),
    ("blocks.{i}.cross_attn.norm_k.weight", ["dim"], "qk_norm"),
    ("blocks.{i}.cross_attn.k_img.weight", ["dim", "dim"], "model_type i2v"),
    ("blocks.{i}.cross_attn.k_img.bias", ["dim"], "model_type i2v"),
    ("blocks.{i}.cross_attn.v_img.weight", ["dim", "dim"], "model_type i2v"),
    ("blocks.{i}.cross_attn.v_img.bias", ["dim"], "model_type i2v"),
    ("blocks.{i}.cross_attn.norm_k_img.weight", ["dim"], "model_type i2v and qk_norm"),
    ("blocks.{i}.ffn.0.weight", ["dim", "ffn_dim"], "always"),
    ("blocks.{i}.ffn.0.bias", ["ffn_dim"], "always"),
    ("blocks.{i}.ffn.2.weight", ["ffn_dim", "dim"], "always"),
    ("blocks.{i}.ffn.2.bias", ["dim"], "always"),
    ("head.modulation", ["dim", "2", "1"], "always"),
    ("head.head.weight", ["dim", "out_dim*4"], "always (out_dim * patch 1*2*2)"),
    ("head.head.bias", ["out_dim*4"], "always"),
    ("img_emb.proj.0.weight", ["1280"], "model_type i2v"),
    ("img_emb.proj.0.bias", ["1280"], "model_type i2v"),
    ("img_emb.proj.1.weight", ["1280", "1280"], "model_type i2v"),
    ("img_emb.proj.1.bias", ["1280"], "model_type i2v"),
    ("img_emb.proj.3.weight", ["1280", "dim"], "model_type i2v"),
    ("img_emb.proj.3.bias", ["dim"], "model_type i2v"),
    ("img_emb.proj.4.weight", ["dim"], "model_type i2v"),
    ("img_emb.proj.4.bias", ["dim"], "model_type i2v"),
    ("img_emb.emb_pos", ["1280", "flf_pos_embed_token_number", "1"], "model_type i2v and flf_pos_embed_token_number > 0"),
    ("vace_blocks.{i}.*", ["(as blocks.{i})"], "i < vace_layers; plus vace_blocks.0.before_proj.{weight,bias} and vace_blocks.{i}.after_proj.{weight,bias} [dim, dim]/[dim]"),
    ("vace_patch_embedding.weight", ["2", "2", "1", "96*dim"], "vace_layers > 0"),
    ("vace_patch_embedding.bias", ["dim"], "vace_layers > 0"),
]

QWEN_TENSORS = [
    ("img_in.weight", ["in_channels", "num_attention_heads*attention_head_dim"], "always"),
    ("img_in.bias", ["num_attention_heads*attention_head_dim"], "always"),
    ("txt_in.weight", ["joint_attention_dim", "num_attention_heads*attention_head_dim"], "always"),
    ("txt_in.bias", ["num_attention_heads*attention_head_dim"], "always"),
    ("txt_norm.weight", ["joint_attention_dim"], "always"),
    ("transformer_blocks.{i}.img_mod.1.weight", ["inner_dim", "6*inner_dim"], "i < num_layers"),
    ("transformer_blocks.{i}.txt_mod.1.weight", ["inner_dim", "6*inner_dim"], "i < num_layers"),
    ("transformer_blocks.{i}.attn.{to_q,to_k,to_v,add_q_proj,add_k_proj,add_v_proj}.weight", ["inner_dim", "inner_dim"], "i < num_layers"),
    ("transformer_blocks.{i}.attn.{norm_q,norm_k,norm_added_q,norm_added_k}.weight", ["attention_head_dim"], "i < num_layers"),
    ("transformer_blocks.{i}.attn.{to_out.0,to_add_out}.weight", ["inner_dim", "inner_dim"], "i < num_layers"),
    ("proj_out.weight", ["inner_dim", "patch_size*patch_size*out_channels"], "always"),
    ("norm_out.linear.weight", ["inner_dim", "2*inner_dim"], "always"),
]

# name pieces whose `blocks["..."]` / `params["..."]` must occur in the
# family's source (a renamed block stops the generator).
ANCHORS = {
    "flux": ["img_in", "time_in", "vector_in", "guidance_in", "txt_in", "in_layer", "out_layer", "img_mod",
             "img_attn", "img_mlp", "txt_mod", "txt_attn", "txt_mlp", "qkv", "norm", "proj", "query_norm",
             "key_norm", "lin", "0", "2", "linear1", "linear2", "modulation", "final_layer", "linear",
             "adaLN_modulation.1"],
    "mmdit": ["x_embedder", "t_embedder", "y_embedder", "context_embedder", "proj", "mlp.0", "mlp.2", "qkv",
              "ln_q", "ln_k", "attn", "attn2", "mlp", "fc1", "fc2", "adaLN_modulation.1", "context_block",
              "x_block", "final_layer", "linear"],
    "wan": ["patch_embedding", "text_embedding.0", "text_embedding.2", "time_embedding.0", "time_embedding.2",
            "time_projection.1", "self_attn", "cross_attn", "norm3", "q", "k", "v", "o", "norm_q", "norm_k",
            "k_img", "v_img", "norm_k_img", "ffn.0", "ffn.2", "head", "img_emb", "proj.0", "proj.1", "proj.3",
            "proj.4", "before_proj", "after_proj", "vace_patch_embedding"],
    "qwen": ["img_in", "txt_in", "txt_norm", "img_mod.1", "txt_mod.1", "attn", "to_q", "to_k", "to_v",
             "add_q_proj", "add_k_proj", "add_v_proj", "norm_q", "norm_k", "norm_added_q", "norm_added_k",
             "to_out.0", "to_add_out", "proj_out", "norm_out", "linear"],
}


def check_anchors(s: dict[str, Src]) -> None:
    for fam, keys in ANCHORS.items():
        text = s[fam].text
        for k in keys:
            if f'blocks["{k}"]' not in text and f'params["{k}"]' not in text:
                raise GenError(f"{s[fam].rel}: no block or param named {k!r}")
    for k in ["modulation", "emb_pos", "pos_embed"]:
        if not any(f'params["{k}"]' in s[f].text for f in ("wan", "mmdit")):
            raise GenError(f"no param {k}")


# ------------------------------------------------------------ ComfyUI-GGUF

def py_str(node: ast.AST) -> str:
    """A str constant, or an f-string rendered with {expr} placeholders."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            else:
                out.append("{" + ast.unparse(v.value) + "}")
        return "".join(out)
    raise GenError(f"not a string: {ast.unparse(node)}")


def comfy_facts(root: pathlib.Path) -> dict:
    loader_src = (root / COMFY_FILES["loader"]).read_text()
    loader = ast.parse(loader_src)
    lists = {}
    for node in loader.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Set):
            name = node.targets[0].id
            lists[name] = [e.value for e in node.value.elts]
    for need in ("IMG_ARCH_LIST", "TXT_ARCH_LIST", "VIS_TYPE_LIST"):
        if need not in lists:
            raise GenError(f"loader.py: {need}")
    raises = []
    for fn in [n for n in loader.body if isinstance(n, ast.FunctionDef)]:
        if fn.name not in ("get_orig_shape", "get_field", "gguf_sd_loader"):
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call) and n.exc.args:
                raises.append((fn.name, n.exc.func.id, py_str(n.exc.args[0])))
    if len(raises) < 5:
        raise GenError(f"loader.py: refusals {raises}")
    compat = re.search(r'if arch_str in \[None, "pig", "cow"\]:', loader_src)
    if not compat:
        raise GenError("loader.py: the compat test")
    if 'compat = "sd.cpp" if arch_str is None else arch_str' not in loader_src:
        raise GenError("loader.py: the compat name")
    if not re.search(r'field_key = f"comfy\.gguf\.orig_shape\.\{tensor_name\}"', loader_src):
        raise GenError("loader.py: orig_shape key")
    if "field.types[0] != gguf.GGUFValueType.ARRAY or field.types[1] != gguf.GGUFValueType.INT32" not in loader_src:
        raise GenError("loader.py: orig_shape type test")
    if 'handle_prefix="model.diffusion_model."' not in loader_src:
        raise GenError("loader.py: prefix")
    if 'if compat == "sd.cpp" and arch_str == "sdxl":' not in loader_src:
        raise GenError("loader.py: sdxl squeeze")
    dq = ast.parse((root / COMFY_FILES["dequant"]).read_text())
    fast = []
    torch_types = []
    for node in dq.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "dequantize_functions":
            fast = [k.attr for k in node.value.keys]
        if isinstance(node, ast.Assign) and node.targets[0].id == "TORCH_COMPATIBLE_QTYPES":
            torch_types = [e.attr for e in node.value.elts if isinstance(e, ast.Attribute)]
    if not fast or not torch_types:
        raise GenError("dequant.py: dequantize_functions / TORCH_COMPATIBLE_QTYPES")
    conv_src = (root / COMFY_FILES["convert"]).read_text()
    conv = ast.parse(conv_src)
    classes = {}
    order = []
    for node in conv.body:
        if isinstance(node, ast.ClassDef):
            attrs = {}
            for st in node.body:
                if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                    attrs[st.targets[0].id] = ast.literal_eval(st.value) if not isinstance(st.value, ast.Call) else None
            base = node.bases[0].id if node.bases else None
            classes[node.name] = (attrs, base)
        if isinstance(node, ast.Assign) and node.targets[0].id == "arch_list":
            order = [e.id for e in node.value.elts]

    def attr(cls, name):
        while cls:
            a, base = classes[cls]
            if name in a:
                return a[name]
            cls = base
        raise GenError(f"convert.py: {name}")

    detect = []
    for cls in order:
        detect.append((attr(cls, "arch"), [list(x) for x in attr(cls, "keys_detect")], list(attr(cls, "keys_banned"))))
    if not detect:
        raise GenError("convert.py: arch_list")
    consts = {k: int(v) for k, v in re.findall(r"^(QUANTIZATION_THRESHOLD|REARRANGE_THRESHOLD|MAX_TENSOR_NAME_LENGTH|MAX_TENSOR_DIMS) = (\d+)$", conv_src, re.M)}
    if len(consts) != 4:
        raise GenError(f"convert.py: constants {consts}")
    for pat in (r'writer\.add_array\(f"comfy\.gguf\.orig_shape\.\{key\}", tuple\(int\(dim\) for dim in orig_shape\)\)',
                r"data = data\.reshape\(n_params // 256, 256\)",
                r"writer = gguf\.GGUFWriter\(path=None, arch=model_arch\.arch\)",
                r"writer\.add_quantization_version\(gguf\.GGML_QUANT_VERSION\)",
                r'assert model_arch is not None, "Unknown model architecture!"'):
        if not re.search(pat, conv_src):
            raise GenError(f"convert.py: {pat}")
    conv_msgs = [py_str(n.exc.args[0]) if isinstance(n, ast.Raise) else py_str(n.msg)
                 for n in ast.walk(conv)
                 if (isinstance(n, ast.Assert) and n.msg is not None)]
    return {"lists": lists, "raises": raises, "fast": fast, "torch": torch_types, "detect": detect,
            "consts": consts, "assert_msgs": conv_msgs}


# ---------------------------------------------------------------- rendering

def q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def strs(items) -> str:
    return "&[" + ", ".join(q(i) for i in items) + "]"


def render(sd_root: pathlib.Path, cf: dict) -> str:
    s = {k: Src(sd_root, v) for k, v in SD_FILES.items()}
    det = detection(s["model"])
    lf = loader_facts(s)
    fx = flux_facts(s["flux"])
    md = mmdit_facts(s["mmdit"])
    wn = wan_facts(s["wan"])
    qw = qwen_facts(s["qwen"])
    un = unet_facts(s["unet"])
    check_anchors(s)
    ids = lf["ggml_ids"]

    o = []
    w = o.append
    w("// Generated by conformance/tools/sd-cpp/gen_diffusion_table.py. Do not edit by hand:")
    w("// re-run the generator (with --check it compares instead of writing).")
    w("//")
    w(f"// stable-diffusion.cpp: {SD_PACKAGE},")
    w(f"//   vendored commit {SD_COMMIT};")
    w("//   files: " + ", ".join(SD_FILES.values()) + ".")
    w(f"// ComfyUI-GGUF: {COMFY_REPO} at {COMFY_COMMIT};")
    w("//   files: " + ", ".join(COMFY_FILES.values()) + ".")
    w("")
    w("//! What the two loaders of diffusion-model GGUF files (stable-diffusion.cpp")
    w("//! and ComfyUI-GGUF) hold a file to: stable-diffusion.cpp's version")
    w("//! detection (to replay), the tensors its builders create, the divisions by")
    w("//! values read from the file, and ComfyUI-GGUF's architecture contract.")
    w("#![allow(dead_code)]")
    w("#![allow(clippy::type_complexity)] // rows of the source's facts, as the generator reads them")
    w("")
    w("// ============================== stable-diffusion.cpp: reading the file")
    w("")
    w("/// The prefix stable-diffusion.cpp puts before every tensor name of a file given")
    w(f"/// as `--diffusion-model` ({lf['diffusion_prefix_at']}), unless the name already")
    w("/// starts with it. A full checkpoint (`--model`) gets no prefix. Detection sees")
    w("/// the prefixed names, after `convert_tensors_name` (src/name_conversion.cpp) has")
    w("/// mapped diffusers/ComfyUI names (e.g. `transformer_blocks.N.attn.to_q` of FLUX")
    w("/// or SD3, `unet.`/`transformer.`/`diffusion_model.` prefixes) to the original ones.")
    w("/// (The conversion itself is chosen by a first detection over the unconverted")
    w("/// names; GGUF files with original names detect the same both times.)")
    w(f"pub(crate) const DIFFUSION_PREFIX: &str = {q(lf['diffusion_prefix'])};")
    w("/// Whether stable-diffusion.cpp reads any GGUF metadata key: it does not (no")
    w("/// `general.architecture`, no key at all, in src/model_io/gguf_io.cpp); the")
    w("/// version comes from tensor names and shapes only.")
    w("pub(crate) const READS_METADATA: bool = false;")
    w(f"/// GGML_MAX_NAME of the ggml stable-diffusion.cpp builds ({lf['max_name_at']}): its")
    w("/// `gguf_init_from_file` takes tensor names up to one byte less (ggml's default is 64).")
    w(f"pub(crate) const GGML_MAX_NAME: u64 = {lf['max_name']};")
    w("/// A file `gguf_init_from_file` (ggml) refuses is read again by")
    w(f"/// stable-diffusion.cpp's own lenient reader ({lf['fallback_at']}, class in")
    w("/// src/model_io/gguf_reader_ext.h). Facts about that reader, as (fact, where):")
    w("pub(crate) const FALLBACK_READER: &[(&str, &str)] = &[")
    w(f"    (\"tensor type ids are not checked: any u32 is cast to ggml_type\", {q(lf['ext_type_at'])}),")
    w(f"    (\"more than 4 dims are folded: ne[3] *= ne[4..] (a 5-dim tensor loads as 4-dim)\", {q(lf['fold_at'])}),")
    w("    (\"ne values are not checked (negative, zero or overflowing products pass)\", \"src/model_io/gguf_reader_ext.h\"),")
    w("    (\"general.alignment is read as u32 whatever its declared type; a value not a power of two is ignored\", \"src/model_io/gguf_reader_ext.h\"),")
    w(f"    (\"key names longer than {lf['key_len_max']} bytes fail the read\", \"src/model_io/gguf_reader_ext.h\"),")
    w(f"    (\"default alignment {lf['default_align']}\", \"src/model_io/gguf_reader_ext.h\"),")
    w("    (\"no per-tensor size check (the ggml path checks ggml_nbytes against the storage size)\", " + q(lf["size_check_at"]) + "),")
    w("];")
    w("/// How the file's tensors are matched with the builder's (ModelLoader::load_tensors),")
    w("/// as (rule, where).")
    w("pub(crate) const LOAD_RULES: &[(&str, &str)] = &[")
    w(f"    (\"a file tensor the builder did not create is logged ('unknown tensor') and skipped\", {q(lf['unknown_at'])}),")
    w(f"    (\"ne[0..4] must equal the builder's, else 'has wrong shape in model file' and the load fails\", {q(lf['shape_at'])}),")
    w(f"    (\"every builder tensor must be in a file, else 'tensor not in model file' and the load fails\", {q(lf['missing_at'])}),")
    w("    (\"types may differ: the loader converts (Conv2d weights are always F16, norms and biases F32; a Linear weight takes the file's type when in_features % block size == 0, else F32)\", " + q(lf["linear_blck_at"]) + "),")
    w(f"    (\"converting from a type without to_float throws std::runtime_error inside a loader thread (std::terminate)\", {q(lf['no_dequant_at'])}),")
    w(f"    (\"no version found (VERSION_COUNT): 'get sd version from file failed', init fails\", {q(lf['version_fail_at'])}),")
    w("];")
    w("")
    w("// ============================== stable-diffusion.cpp: version detection")
    w("")
    w(f"/// Locals of ModelLoader::get_sd_version (src/model.cpp:{det['line']}), as")
    w("/// (name, type, initial value).")
    w("pub(crate) const DETECT_VARS: &[(&str, &str, &str)] = &[")
    for n, t, i in det["vars"]:
        w(f"    ({q(n)}, {q(t)}, {q(i)}),")
    w("];")
    w("/// The loop over the tensors, in FILE ORDER (tensor_storage_map is an ordered")
    w("/// map in insertion order); for each tensor every test below runs in this order,")
    w("/// and a `return` ends detection at once. Rows are (group, kind, needle, actions):")
    w("/// kind `contains` is a substring test on the (prefixed, converted) name, `equals`")
    w("/// an exact one; rows of one group are OR-ed into one test. Actions: `return V`,")
    w("/// `set FLAG` (to true), `store VAR = ne[k]` (the tensor's ne[k]), `store VAR =")
    w("/// this tensor`, each possibly followed by `if FLAG` or `if name contains \"X\" and")
    w("/// ne[k] == N`.")
    w("pub(crate) const DETECT_TESTS: &[(u16, &str, &str, &[&str])] = &[")
    for g, k, needle, acts in det["tests"]:
        w(f"    ({g}, {q(k)}, {q(needle)}, {strs(acts)}),")
    w("];")
    w("/// Definitions evaluated after the loop, as (name, C expression).")
    w("pub(crate) const DETECT_DEFS: &[(&str, &str)] = &[")
    for n, e in det["defs"]:
        w(f"    ({q(n)}, {q(e)}),")
    w("];")
    w("/// After the loop: the first row whose conditions (C expressions over")
    w("/// DETECT_VARS and DETECT_DEFS, all true) hold gives the version. The last row")
    w("/// (no condition) is VERSION_COUNT: no version, the load fails.")
    w("pub(crate) const DETECT_DECIDE: &[(&[&str], &str)] = &[")
    for conds, v in det["decide"]:
        w(f"    ({strs(conds)}, {q(v)}),")
    w("];")
    w("")
    w("// ============================== stable-diffusion.cpp: builders")
    w("")
    w("/// Hyper-parameters per family, as (family, parameter, value or default, how")
    w("/// obtained). `hard-coded` values are never read from the file.")
    w("pub(crate) const HYPERPARAMS: &[(&str, &str, &str, &str)] = &[")
    fd = fx["defaults"]
    inferred = {r[0] for r in fx["rules"]}
    zeroed = {n: v for n, v in fx["runner_zero"]}
    for name, val in fd.items():
        if name in ("version", "axes_dim", "axes_dim_sum", "theta", "ref_index_scale"):
            continue
        start = zeroed.get(name, val)
        how = "; ".join(r[1] for r in fx["rules"] if r[0] == name) if name in inferred else "hard-coded (per version in FluxRunner)"
        w(f"    (\"flux\", {q(name)}, {q(str(start))}, {q(how)}),")
    for name, how in fx["rules"]:
        if name not in fd:
            w(f"    (\"flux\", {q(name)}, \"\", {q(how)}),")
    for name, how in FLUX_DERIVED:
        w(f"    (\"flux\", {q(name)}, \"\", {q(how)}),")
    for name, val in md["defaults"].items():
        how = "hard-coded"
        if name == "depth":
            how = "max(24, max N + 1 over names containing \"joint_blocks.N\") (atoi)"
        if name == "d_self":
            how = "max N over joint_blocks.N names containing \"attn2\" (-1: none); d_self >= 0 doubles pos_embed_max_size and quadruples num_patchs"
        if name in ("context_embedder_out_dim",):
            how = "64 * depth"
        w(f"    (\"sd3\", {q(name)}, {q(val)}, {q(how)}),")
    w("    (\"sd3\", \"hidden_size\", \"\", \"64 * depth\"),")
    w("    (\"sd3\", \"num_heads\", \"\", \"depth\"),")
    w("    (\"sd3\", \"qk_norm\", \"\\\"\\\"\", \"\\\"ln\\\" if a joint_blocks name containing \\\"attn.ln\\\" contains \\\".bias\\\", else \\\"rms\\\" if one contains \\\"attn.ln\\\" (last such name wins)\"),")
    for name, val in un["defaults"].items():
        w(f"    (\"unet\", {q(name)}, {q(val)}, \"hard-coded, set per SDVersion in UnetModelBlock (SD2/SDXL/SVD/inpaint/pix2pix/tiny variants); nothing read from the file\"),")
    w(f"    (\"wan\", \"num_layers\", \"0\", \"max N + 1 over names containing \\\"blocks.N\\\" (not vace_blocks.); must be one of {wn['configs']}\"),")
    w("    (\"wan\", \"vace_layers\", \"0\", \"max N + 1 over names containing \\\"vace_blocks.N\\\"\"),")
    w("    (\"wan\", \"model_type\", \"t2v\", \"i2v when a name contains \\\"img_emb\\\"\"),")
    w("    (\"wan\", \"flf_pos_embed_token_number\", \"0\", \"514 when a name contains \\\"img_emb.emb_pos\\\"\"),")
    w("    (\"wan\", \"dim/ffn_dim/num_heads/in_dim/out_dim\", \"\", \"hard-coded per (num_layers, version, model_type, vace): see WAN_CONFIGS\"),")
    for name, val in qw["defaults"].items():
        how = "max N + 1 over names containing \"transformer_blocks.N\" (atoi)" if name == "num_layers" else "hard-coded"
        if name == "num_layers":
            val = "0"
        if name == "zero_cond_t":
            how = "true when a name contains \"__index_timestep_zero__\" (or the option)"
        w(f"    (\"qwen_image\", {q(name)}, {q(val)}, {q(how)}),")
    w("];")
    w("/// Wan configurations (src/wan.hpp WanRunner): (num_layers, condition, desc,")
    w("/// dim, ffn_dim, num_heads, in_dim, out_dim). Any other num_layers aborts.")
    w("pub(crate) const WAN_CONFIGS: &[(u32, &str, &str, u64, u64, u64, u64, u64)] = &[")
    wan_rows = [
        (30, "version == WAN2_2_TI2V", "Wan2.2-TI2V-5B", 3072, 14336, 24, 48, 48),
        (30, "vace_layers > 0", "Wan2.1-VACE-1.3B", 1536, 8960, 12, 16, 16),
        (30, "model_type == i2v", "Wan2.1-I2V-1.3B", 1536, 8960, 12, 36, 16),
        (30, "otherwise", "Wan2.1-T2V-1.3B", 1536, 8960, 12, 16, 16),
        (40, "model_type == t2v and version == WAN2_2_I2V", "Wan2.2-I2V-14B", 5120, 13824, 40, 36, 16),
        (40, "model_type == t2v and vace_layers > 0", "Wan2.x-VACE-14B", 5120, 13824, 40, 16, 16),
        (40, "model_type == t2v", "Wan2.x-T2V-14B", 5120, 13824, 40, 16, 16),
        (40, "model_type == i2v and flf_pos_embed_token_number > 0", "Wan2.1-FLF2V-14B", 5120, 13824, 40, 36, 16),
        (40, "model_type == i2v", "Wan2.1-I2V-14B", 5120, 13824, 40, 36, 16),
    ]
    if sorted(set(wn["descs"])) != sorted({r[2] for r in wan_rows}) or wn["configs"] != [30, 40]:
        raise GenError(f"wan.hpp: configurations changed: {wn['configs']} {wn['descs']}")
    for r in wan_rows:
        for v in r[3:]:
            if not re.search(rf"wan_params\.\w+\s*=\s*{v};", s["wan"].text):
                raise GenError(f"wan.hpp: value {v} of {r[2]}")
    for r in wan_rows:
        w(f"    ({r[0]}, {q(r[1])}, {q(r[2])}, {r[3]}, {r[4]}, {r[5]}, {r[6]}, {r[7]}),")
    w("];")
    w("/// Wan's fixed values: text_dim, freq_dim, patch (t, h, w).")
    wd = {k: v for k, v in re.findall(r"^\s*(?:int64_t|int)\s+(text_dim|freq_dim)\s*=\s*(\d+);", s["wan"].text, re.M)}
    if set(wd) != {"text_dim", "freq_dim"}:
        raise GenError("wan.hpp: text_dim/freq_dim")
    s["wan"].find(r"std::tuple<int, int, int> patch_size\s*= \{1, 2, 2\};", "wan patch size")
    w(f"pub(crate) const WAN_FIXED: (u64, u64, [u64; 3]) = ({wd['text_dim']}, {wd['freq_dim']}, [1, 2, 2]);")
    w("")
    for const, rows, note in (
        ("FLUX_TENSORS", FLUX_TENSORS, "FLUX family (FLUX, FLUX_FILL, FLUX_CONTROLS, FLEX_2, Chroma; src/flux.hpp).\n/// FLUX2/OVIS/Chroma-Radiance variants change flags (no biases, shared\n/// modulation, yak MLP, nerf blocks) and are not spelled out."),
        ("SD3_TENSORS", SD3_TENSORS, "SD3 (MMDiT, src/mmdit.hpp); {b} is context_block or x_block."),
        ("WAN_TENSORS", WAN_TENSORS, "Wan 2.x (src/wan.hpp); {p} is one of q, k, v, o."),
        ("QWEN_IMAGE_TENSORS", QWEN_TENSORS, "Qwen-Image (src/qwen_image.hpp): the solid part only (the MLPs,\n/// the modulation biases, time_text_embed and norm_out are not spelled out);\n/// inner_dim = num_attention_heads * attention_head_dim."),
    ):
        w(f"/// Tensors the builder creates for the {note}")
        w("/// Rows: (name relative to DIFFUSION_PREFIX, ne[] in ggml order as expressions of")
        w("/// HYPERPARAMS, condition).")
        w(f"pub(crate) const {const}: &[(&str, &[&str], &str)] = &[")
        for name, shape, cond in rows:
            w(f"    ({q(name)}, {strs(shape)}, {q(cond)}),")
        w("];")
    w("/// The UNet (SD1/SD2/SDXL/SVD, src/unet.hpp): every hyper-parameter is")
    w("/// hard-coded per SDVersion (the builder never reads the file), so the")
    w("/// tensor set is a function of the detected version alone. Only the fixed")
    w("/// ends are spelled out here; the input/middle/output blocks (ResBlock,")
    w("/// SpatialTransformer per channel_mult/attention_resolutions/")
    w("/// transformer_depth) are not expanded.")
    w("pub(crate) const UNET_TENSORS: &[(&str, &[&str], &str)] = &[")
    for name, shape, cond in (
        ("time_embed.0.weight", ["model_channels", "time_embed_dim"], "always"),
        ("time_embed.0.bias", ["time_embed_dim"], "always"),
        ("time_embed.2.weight", ["time_embed_dim", "time_embed_dim"], "always"),
        ("time_embed.2.bias", ["time_embed_dim"], "always"),
        ("label_emb.0.0.weight", ["adm_in_channels", "time_embed_dim"], "SDXL family or SVD"),
        ("label_emb.0.2.weight", ["time_embed_dim", "time_embed_dim"], "SDXL family or SVD"),
        ("input_blocks.0.0.weight", ["3", "3", "in_channels", "model_channels"], "always (in_channels 4; 9 inpaint; 8 pix2pix/SVD)"),
        ("input_blocks.0.0.bias", ["model_channels"], "always"),
        ("middle_block.1.*", ["(SpatialTransformer)"], "not tiny, not SDXL_SSD1B/SDXL_VEGA"),
        ("out.0.weight", ["model_channels"], "always"),
        ("out.0.bias", ["model_channels"], "always"),
        ("out.2.weight", ["3", "3", "model_channels", "out_channels"], "always"),
        ("out.2.bias", ["out_channels"], "always"),
    ):
        w(f"    ({q(name)}, {strs(shape)}, {q(cond)}),")
    w("];")
    w("")
    w("// ============================== stable-diffusion.cpp: divisions and sizes from the file")
    w("")
    w("/// Preconditions a file must meet so that building the model does not crash")
    w("/// or hang, as (family, where, expression, requirement, what happens otherwise).")
    w("/// The issue's 2-tensor FLUX file (double_blocks.0.img_attn.qkv.weight +")
    w("/// img_in.weight, nothing else) is detected as FLUX, has no key_norm tensor, so")
    w("/// head_dim stays 0 and the first row divides by zero (SIGFPE).")
    w("pub(crate) const PRECONDITIONS: &[(&str, &str, &str, &str, &str)] = &[")
    pre = [
        ("flux", fx["num_heads_at"], "num_heads = hidden_size / head_dim",
         "head_dim > 0: a tensor named ...double_blocks.0.txt_attn.norm.key_norm.scale or ...single_blocks.0.norm.key_norm.scale with ne[0] > 0 (head_dim starts at 0; the last such tensor in file order wins)",
         "integer division by zero: SIGFPE"),
        ("flux", fx["num_heads_at"], "num_heads = int(hidden_size / head_dim)",
         "hidden_size (txt_in.weight ne[1], 3072 without txt_in.weight) / head_dim fits a positive int (also excludes INT64_MIN / -1, reachable through the lenient reader's negative ne)",
         "num_heads 0 or negative or truncated; 0 reaches the next rows"),
        ("flux", fx["sa_div_at"], "SelfAttention head_dim = hidden_size / num_heads",
         "num_heads != 0, i.e. head_dim <= hidden_size, whenever depth > 0",
         "integer division by zero: SIGFPE"),
        ("flux", fx["ss_div_at"], "SingleStreamBlock head_dim = hidden_size / num_heads",
         "num_heads != 0 whenever depth_single_blocks > 0",
         "integer division by zero: SIGFPE"),
        ("flux", fx["depth_atoi_at"], "depth = atoi(N) + 1 over double_blocks.N / single_blocks.N",
         "N small (the real models have 19 / 38): the builder allocates N + 1 blocks",
         "a huge N allocates that many blocks (memory exhaustion); atoi overflow is undefined"),
        ("sd3", md["depth_atoi_at"], "depth = max(24, atoi(N) + 1) over joint_blocks.N; hidden_size = 64 * depth",
         "N small (24 or 38 in real models)",
         "a huge N allocates N + 1 blocks of 64 * depth width (memory exhaustion)"),
        ("wan", wn["abort_at"], "num_layers = max blocks.N + 1",
         "num_layers is 30 or 40",
         "GGML_ABORT (process abort)"),
        ("wan", wn["step_at"], "step = num_layers / vace_layers (vace_layers > 0)",
         "vace_layers <= num_layers",
         f"step == 0: the loop at {wn['loop_at']} never advances (hang)"),
        ("any", lf["nbytes_at"], "nbytes = nelements * type_size / blck_size(type)",
         f"the tensor type has a nonzero block size and is < {ids['COUNT']} (only reachable through the lenient reader, which takes any type id: ids {lf['zero_block_types']} have block size 0, ids >= {ids['COUNT']} read past ggml's type table)",
         "integer division by zero (SIGFPE) or out-of-bounds read"),
        ("any", lf["linear_blck_at"], "in_features % ggml_blck_size(wtype) (Linear weight type taken from the file)",
         "as above: a file type with block size 0 at a Linear weight",
         "integer modulo by zero: SIGFPE"),
        ("any", lf["convert_div_at"], "rows = nelements / ne[0] when converting a tensor to the builder's type",
         "ne[0] != 0 (the shape must already equal the builder's, so only a builder dim of 0 reaches it)",
         "integer division by zero: SIGFPE"),
    ]
    for r in pre:
        w("    (" + ", ".join(q(x) for x in r) + "),")
    w("];")
    w("")
    w("// ============================== ComfyUI-GGUF")
    w("")
    lists = cf["lists"]
    w("/// Architectures (`general.architecture`) ComfyUI-GGUF's UNet loader accepts")
    w("/// (IMG_ARCH_LIST in loader.py; a Python set, listed in source order).")
    w(f"pub(crate) const COMFY_IMG_ARCHS: &[&str] = {strs(lists['IMG_ARCH_LIST'])};")
    w("/// Architectures its text-encoder loader accepts (TXT_ARCH_LIST).")
    w(f"pub(crate) const COMFY_TXT_ARCHS: &[&str] = {strs(lists['TXT_ARCH_LIST'])};")
    w("/// `general.type` values a text-encoder file with another architecture may have")
    w("/// (VIS_TYPE_LIST).")
    w(f"pub(crate) const COMFY_VIS_TYPES: &[&str] = {strs(lists['VIS_TYPE_LIST'])};")
    w("/// `general.architecture` values that put a UNet file in compatibility mode")
    w("/// (the architecture is then detected from the tensor names with")
    w("/// tools/convert.py's detect_arch); an absent key is mode \"sd.cpp\" (a text")
    w("/// model in compat mode is refused). Both keys general.architecture and")
    w("/// general.type, when present, must be a single STRING.")
    w("pub(crate) const COMFY_COMPAT_ARCHS: &[&str] = &[\"pig\", \"cow\"];")
    w("/// The prefix stripped from tensor names (only when some tensor has it; tensors")
    w("/// without it are then dropped).")
    w("pub(crate) const COMFY_PREFIX: &str = \"model.diffusion_model.\";")
    w("/// detect_arch (tools/convert.py) in order: (arch, key sets, banned keys). The")
    w("/// first arch with a key set entirely present among the (prefix-stripped) tensor")
    w("/// names wins; a banned key present then refuses (\"Model architecture not")
    w("/// allowed for conversion!\"); no match refuses (\"Unknown model architecture!\").")
    w("pub(crate) const COMFY_DETECT: &[(&str, &[&[&str]], &[&str])] = &[")
    for arch, sets, banned in cf["detect"]:
        w(f"    ({q(arch)}, &[{', '.join(strs(x) for x in sets)}], {strs(banned)}),")
    w("];")
    w("/// The per-tensor original-shape key: `comfy.gguf.orig_shape.<tensor name>`")
    w("/// (the file's tensor name, before the prefix is stripped). When present it must")
    w("/// be an ARRAY of INT32 (else TypeError); its values become the tensor's shape,")
    w("/// unchecked against the element count (F32/F16 tensors are .view()-ed to it, a")
    w("/// mismatch raises there; quantized ones fail only when dequantized). The")
    w("/// converter writes it only for shape_fix archs (sd1, sdxl) when a tensor of")
    w(f"/// at least {cf['consts']['REARRANGE_THRESHOLD']} elements, a multiple of 256, has a last dim not a multiple of 256; the")
    w("/// tensor is then stored as (n/256, 256).")
    w("pub(crate) const COMFY_ORIG_SHAPE_PREFIX: &str = \"comfy.gguf.orig_shape.\";")
    w("pub(crate) const COMFY_ORIG_SHAPE_TYPE: (&str, &str) = (\"ARRAY\", \"INT32\");")
    w("/// Types ComfyUI-GGUF uses as plain torch tensors (no dequantization).")
    w(f"pub(crate) const COMFY_TORCH_TYPES: &[(&str, u32)] = &[{', '.join(f'({q(t)}, {ids[t]})' for t in cf['torch'])}];")
    w("/// Types its own torch dequantizer handles (dequant.py dequantize_functions), as")
    w("/// (ggml type name, id). Any other type falls back to gguf-py's numpy")
    w("/// dequantizer (slow; raises for types gguf-py cannot dequantize).")
    w(f"pub(crate) const COMFY_DEQUANT_TYPES: &[(&str, u32)] = &[{', '.join(f'({q(t)}, {ids[t]})' for t in cf['fast'])}];")
    w("/// Refusals raised while loading, as (function, exception, message template).")
    w("pub(crate) const COMFY_REFUSALS: &[(&str, &str, &str)] = &[")
    for fn, exc, msg in cf["raises"]:
        w(f"    ({q(fn)}, {q(exc)}, {q(msg)}),")
    for msg in cf["assert_msgs"]:
        w(f"    (\"detect_arch\", \"AssertionError -> ValueError('This model is not currently supported - (...)')\", {q(msg)}),")
    w("];")
    w("/// What tools/convert.py writes: general.architecture = the detected arch,")
    w("/// general.quantization_version, general.file_type (F16 or BF16); names as in")
    w("/// the checkpoint with the prefix stripped; limits as (name, value).")
    w("pub(crate) const COMFY_CONVERT_LIMITS: &[(&str, u64)] = &[")
    for k, v in cf["consts"].items():
        w(f"    ({q(k)}, {v}),")
    w("];")
    return "\n".join(o) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sd-src", required=True, type=pathlib.Path, help="vendor/stable-diffusion.cpp of the sdist")
    ap.add_argument("--comfy-src", type=pathlib.Path,
                    help="a ComfyUI-GGUF checkout (at COMFY_COMMIT): its facts are read and written to "
                         "--comfy-facts; without it they are read from there")
    ap.add_argument("--comfy-facts", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent / "comfyui-gguf-facts.json",
                    help="ComfyUI-GGUF's facts as data (it is not on a registry CI reaches)")
    ap.add_argument("--out", type=pathlib.Path,
                    default=pathlib.Path(__file__).resolve().parents[3] / "parser/core/src/check/diffusion_table.rs")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    try:
        if a.comfy_src is not None:
            cf = comfy_facts(a.comfy_src)
            facts = json.dumps({"repo": COMFY_REPO, "commit": COMFY_COMMIT, "facts": cf}, indent=1, sort_keys=True) + "\n"
            rc = write_or_check(a.comfy_facts, facts, "conformance/tools/sd-cpp/gen_diffusion_table.py", a.check)
            if rc != 0:
                return rc
        saved = json.loads(a.comfy_facts.read_text())
        if saved.get("commit") != COMFY_COMMIT:
            raise GenError(f"{a.comfy_facts} is of ComfyUI-GGUF {saved.get('commit')}, not {COMFY_COMMIT}")
        new = render(a.sd_src, saved["facts"])
    except (GenError, OSError, ValueError, KeyError, SyntaxError) as e:
        print(f"gen_diffusion_table.py: cannot read the sources: {e}", file=sys.stderr)
        return 2
    return write_or_check(a.out, new, "conformance/tools/sd-cpp/gen_diffusion_table.py", a.check)


if __name__ == "__main__":
    sys.exit(main())
