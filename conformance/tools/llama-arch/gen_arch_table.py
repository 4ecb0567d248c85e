#!/usr/bin/env python3
"""Writes parser/core/src/check/llama_arch_table.rs: per architecture llama.cpp
knows, the tensor names its loader creates and the hyper-parameter keys it
requires, plus the value type llama.cpp reads every key with.

Facts come from the llama.cpp tree vendored by the PyPI sdist of
llama-cpp-python==0.3.36 (vendor/llama.cpp):
- src/llama-arch.cpp: LLM_ARCH_NAMES (enum -> name), LLM_KV_NAMES (enum ->
  key format), LLM_TENSOR_NAMES (enum -> tensor name format);
- src/llama-model.cpp: llama_model_mapping (arch enum -> model class), the
  common llama_model_base::load_hparams, and the helper methods
  (create_tensor_qkv, ...) that create tensors for a class;
- src/models/*.cpp: each class's load_arch_hparams / load_arch_tensors;
- src/llama-hparams.h: the C type of every hparams field a key is read into
  (llama.cpp's GKV::get_kv refuses a value whose GGUF type differs).

What the extraction cannot see, it leaves out rather than guesses:
- a tensor name is listed when any `tn(LLM_TENSOR_X, "suffix", ...)` of the
  class (or a helper it calls) names it: the union over every branch, so
  "not in the list" means llama.cpp never creates it for that architecture;
- a key is "required" only when it is read with required=true in a
  statement at the top level of the function (not inside any `if`/loop);
- a key's types are the union of the C types it is read into anywhere;
- a key read with required=true under a condition (an `if`, a `switch`
  case, after an early `return`, in the architecture's load_arch_hparams or
  the common load_hparams) is listed in `conditional_keys` with the
  condition translated by loader_conditions.py, or `when: None` (with the
  C text and source line) when it cannot be translated.

Re-run after a version bump:

    python3 conformance/tools/llama-arch/gen_arch_table.py LLAMA_CPP_DIR [OUT]

With --check, compares instead of writing and exits 1 on a difference.
"""
import hashlib
import pathlib
import re
import sys

import loader_conditions as lc
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from generated import write_or_check  # noqa: E402

VERSION = "llama-cpp-python==0.3.36 (vendor/llama.cpp)"


def table(text: str, name: str) -> dict:
    start = text.index(name)
    body = text[start:text.index("};", start)]
    return dict(re.findall(r'\{\s*(LLM_\w+)\s*,\s*"([^"]*)"\s*\}', body))


def body_of(text: str, signature: str):
    """Body (between the braces) of the function whose header matches."""
    m = re.search(signature, text)
    if not m:
        return None
    i = text.index("{", m.end())
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    return None


def strip_comments(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def top_level_statements(body: str):
    """Statements at brace depth 0 of a function body, outside parentheses
    of if/for/while headers (a statement after `if (...)` without braces
    is skipped too)."""
    out = []
    depth = 0
    cur = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "{":
            depth += 1
            cur = []
        elif c == "}":
            depth -= 1
            cur = []
        elif c == ";":
            if depth == 0:
                stmt = "".join(cur).strip()
                out.append(stmt)
            cur = []
        elif depth == 0:
            cur.append(c)
        i += 1
    return [s for s in out if not re.match(r"(if|else|for|while|switch)\b", s)]


# C type of a target -> GGUF value types llama.cpp accepts for a scalar read.
SCALAR = {
    "uint32_t": "u32",
    "int32_t": "i32",
    "uint16_t": "u16",
    "uint64_t": "u64",
    "float": "f32",
    "double": "f64",
    "bool": "bool",
    "std::string": "string",
    "enum llama_pooling_type": "u32",
    "llama_pooling_type": "u32",
}


def field_types(hparams_h: str) -> dict:
    types = {}
    for m in re.finditer(r"^\s*((?:enum\s+)?[\w:]+(?:<[^;>]*>)?)\s+(\w+)(?:\s*=[^;]*)?;", hparams_h, re.M):
        types[m.group(2)] = m.group(1)
    # Nested structs (hparams.posnet.n_embd): field names are unique enough.
    return types


def local_type(body: str, var: str):
    m = re.search(r"((?:enum\s+)?[\w:]+(?:<[^;>]*>)?)\s+" + re.escape(var) + r"\b\s*(?:=[^;]*|\([^;]*\)|\{[^;]*\})?;", body)
    return m.group(1) if m else None


def elem_and_arr(ctype: str):
    m = re.match(r"std::(?:array|vector)<\s*([\w:]+)", ctype)
    return m.group(1) if m else None


def accepted(call: str, ctype: str):
    """GGUF types (as our value-type names) llama.cpp accepts for a read."""
    elem = elem_and_arr(ctype)
    if call == "get_key":
        t = SCALAR.get(ctype)
        return {t} if t else None
    if call == "get_key_or_arr":
        if elem is None:
            return None
        scalar = SCALAR.get(elem)
        if scalar is None:
            return None
        arr = {"f32"} if elem == "float" else {"u32", "i32", "bool"} if elem in ("uint32_t", "int32_t") else None
        if arr is None:
            return None
        return {scalar} | {f"array[{a}]" for a in sorted(arr)}
    if call == "get_arr":
        if elem is None:
            return None
        arr = {"f32"} if elem == "float" else {"u32", "i32", "bool"} if elem in ("uint32_t", "int32_t") else {"u64"} if elem == "uint64_t" else {"string"} if elem == "std::string" else None
        return {f"array[{a}]" for a in arr} if arr else None
    return None


READ = re.compile(r"ml\.(get_key_or_arr|get_key|get_arr)\(\s*(LLM_KV_\w+)\s*,\s*([\w.\->\[\]]+)([^;]*)\)\s*;?")


def reads(body: str, fields: dict):
    """(call, kv enum, accepted types or None, required) for every read."""
    out = []
    for m in READ.finditer(body):
        call, kv, target, rest = m.groups()
        args = [a.strip() for a in rest.split(",") if a.strip()]
        if call == "get_key_or_arr":
            required = not (len(args) >= 2 and args[1] == "false")
        else:
            required = not (args and args[0].startswith("false"))
        name = target.split(".")[-1].split("->")[-1].split("[")[0]
        ctype = fields.get(name) if target.startswith("hparams") else local_type(body, name)
        types = accepted(call, ctype) if ctype else None
        out.append((call, kv, types, required))
    return out


def statements(body: str):
    """(statement, condition) for every statement of a function body.
    condition is None outside any conditional block; "dense" / "moe" inside
    blocks that only test whether the model has experts; "other" inside any
    other if/else/switch/while/lambda. Braces inside parentheses are
    initializer lists, not blocks."""
    DENSE = {"n_expert == 0", "hparams.n_expert == 0"}
    MOE = {"n_expert > 0", "hparams.n_expert > 0", "n_expert != 0", "hparams.n_expert != 0"}
    out = []
    stack = []  # per open brace: None (initializer), "loop", "plain" or a condition tag
    cur = []
    paren = 0
    last_if = None  # tag of the if block just closed (for a following else)
    for c in body:
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        if paren > 0 or (c == ")" and paren == 0 and False):
            cur.append(c)
            continue
        if c == "{":
            head = " ".join("".join(cur).split())
            m = re.match(r"if \((.*)\)$", head)
            if m:
                cond = m.group(1).strip()
                tag = "dense" if cond in DENSE else "moe" if cond in MOE else "other"
                stack.append(("if", tag))
            elif re.match(r"else$", head):
                tag = {"dense": "moe", "moe": "dense"}.get(last_if, "other")
                stack.append(("else", tag))
            elif re.match(r"(else\b|if\b|switch\b|while\b|do\b|case\b)", head) or "[" in head:
                stack.append(("cond", "other"))
            elif re.match(r"for\b", head) or head == "":
                stack.append(("loop", None))
            else:
                cur.append(c)
                stack.append(None)
                continue
            cur = []
            last_if = None
        elif c == "}":
            if stack:
                kind = stack.pop()
                if kind is None:
                    cur.append(c)
                    continue
                last_if = kind[1] if kind[0] == "if" else None
            cur = []
        elif c == ";":
            stmt = " ".join("".join(cur).split())
            tags = {k[1] for k in stack if k and k[1]}
            if re.match(r"(else\b|if\b|while\b|switch\b)", stmt):
                tags.add("other")
            cond = None if not tags else tags.pop() if len(tags) == 1 else "other"
            out.append((stmt, cond))
            cur = []
            last_if = None
        else:
            if not c.isspace():
                pass
            cur.append(c)
    return out


def split_args(s: str):
    """Top-level comma-separated arguments of an argument list."""
    out, depth, cur = [], 0, []
    for c in s:
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def call_args(stmt: str, name: str):
    """Arguments of every call `name(...)` in a statement."""
    res = []
    for m in re.finditer(r"\b" + name + r"\(", stmt):
        depth, i = 1, m.end()
        while i < len(stmt) and depth:
            if stmt[i] == "(":
                depth += 1
            elif stmt[i] == ")":
                depth -= 1
            i += 1
        res.append(split_args(stmt[m.end():i - 1]))
    return res


def render(root: pathlib.Path) -> str:
    src = root / "src"
    arch_cpp = (src / "llama-arch.cpp").read_text()
    model_cpp = strip_comments((src / "llama-model.cpp").read_text())
    hparams_h = strip_comments((src / "llama-hparams.h").read_text())
    arch_names = table(arch_cpp, "LLM_ARCH_NAMES")
    kv_names = table(arch_cpp, "LLM_KV_NAMES")
    tensor_names = table(arch_cpp, "LLM_TENSOR_NAMES")
    fields = field_types(hparams_h)

    mapping = body_of(model_cpp, r"static llama_model \* llama_model_mapping\(")
    arch_class = {}
    pending = []
    for m in re.finditer(r"case\s+(LLM_ARCH_\w+)\s*:|return new (llama_model_\w+)\(", mapping):
        if m.group(1):
            pending.append(m.group(1))
        else:
            for a in pending:
                arch_class[a] = m.group(2)
            pending = []

    sources = {}
    for f in sorted((src / "models").glob("*.cpp")):
        sources[f.name] = strip_comments(f.read_text())
    all_models = "\n".join(sources.values())
    headers = strip_comments((src / "models" / "models.h").read_text()) + strip_comments((src / "llama-model.h").read_text())

    # Helper methods of llama_model_base that create tensors.
    helpers = {}
    for m in re.finditer(r"void llama_model_base::(create_tensor_\w+)\(", model_cpp):
        helpers[m.group(1)] = body_of(model_cpp[m.start():], r"void llama_model_base::" + m.group(1) + r"\(")

    def tensor_pats(body: str, seen=()):
        pats = set()
        for m in re.finditer(r"\btn\(\s*(LLM_TENSOR_\w+)\s*(?:,\s*\"(\w+)\")?", body):
            fmt = tensor_names.get(m.group(1))
            if fmt is None:
                continue
            name = fmt.replace("%d", "{}")
            if m.group(2):
                name += "." + m.group(2)
            pats.add(name)
        for h, hb in helpers.items():
            if h not in seen and re.search(r"\b" + h + r"\(", body):
                pats |= tensor_pats(hb, seen + (h,))
        return pats

    helper_params = {}
    for h in helpers:
        m = re.search(r"void llama_model_base::" + h + r"\(([^)]*)\)", model_cpp)
        helper_params[h] = [a.split()[-1].lstrip("&*") for a in split_args(m.group(1))] if m else []

    TN = re.compile(r"tn\(\s*(LLM_TENSOR_\w+)\s*(?:,\s*\"(\w+)\")?\s*(?:,\s*[^,)]+)*\)$")

    LOCAL = re.compile(r"\b(?:const\s+)?(?:int64_t|int32_t|uint32_t|int|auto|size_t|float|uint64_t)\s+(\w+)\s*=\s*([^;]+);")
    # Locals whose definition means what the validator's variable of the
    # same name means (llama.cpp's own fallback for the expert FFN size).
    KNOWN_LOCALS = {"n_ff_exp": "hparams.n_ff_exp() ? hparams.n_ff_exp() : n_ff / n_expert_used"}
    # llama_hparams' per-layer accessors called with the loop's layer
    # (`hparams.n_head_kv(i)`): written `NAME@layer`, which the model layer
    # evaluates with that layer's element of a per-layer array (the plain
    # names, and LLAMA_LOAD_LOCALS, are layer 0's, as in llama.cpp).
    PER_LAYER = re.compile(r"hparams\.(n_head|n_head_kv|n_ff|n_ff_exp|n_expert_used|n_embd_k_gqa|n_embd_v_gqa|n_embd_head_k|n_embd_head_v|n_rot)\(\s*(?:i|il)\s*\)")

    def per_layer(text: str) -> str:
        return PER_LAYER.sub(lambda mm: mm.group(1) + "@layer", text)

    LAMBDA = re.compile(r"auto\s+(\w+)\s*=\s*\[&\]\s*\(\s*llm_tensor\s+(\w+)\s*\)\s*\{")

    def expand_tensor_lambdas(body: str) -> str:
        """A lambda of a tensor id (`auto conv = [&](llm_tensor tid) {...};`,
        called as `conv(LLM_TENSOR_SSM_CONV1D_Q)`) is written out once per
        id it is called with, each copy in an `if` block (so not required),
        in place of its definition; its calls are left as they are."""
        while True:
            m = LAMBDA.search(body)
            if not m:
                return body
            name, param = m.group(1), m.group(2)
            depth, j = 1, m.end()
            while j < len(body) and depth:
                depth += {"{": 1, "}": -1}.get(body[j], 0)
                j += 1
            inner = body[m.end():j - 1]
            end = body.index(";", j) + 1
            ids = sorted(set(re.findall(r"\b" + name + r"\(\s*(LLM_TENSOR_\w+)\s*\)", body[end:])))
            copies = "".join("if (lambda_" + name + ") {" + re.sub(r"\b" + param + r"\b", t, inner) + "}" for t in ids)
            body = body[:m.start()] + copies + body[end:]

    def field_keys(hp: str) -> dict:
        """hparams fields the architecture reads from a scalar integer key
        and never assigns otherwise: a shape's `hparams.FIELD` becomes
        `kv:KEY:DEFAULT` (`kv:KEY` without a literal default), which the
        model layer evaluates from the file."""
        out = {}
        for m in READ.finditer(hp):
            call, kv, target, _rest = m.groups()
            field = target[len("hparams."):] if target.startswith("hparams.") else None
            fmt = kv_names.get(kv)
            if call != "get_key" or not field or not re.fullmatch(r"\w+", field) or not fmt or not fmt.startswith("%s."):
                continue
            if SCALAR.get(fields.get(field, "")) not in ("u32", "i32", "u64", "u16"):
                continue
            if re.search(r"\bhparams\." + field + r"\s*=[^=]", hp + base_text):
                continue
            d = defaults.get(field)
            out[field] = f"kv:{fmt[3:]}" + (f":{d}" if d is not None else "")
        return out

    def keys_for_fields(text: str, fk: dict) -> str:
        if not fk:
            return text
        return re.sub(r"\bhparams\.(\w+)\b(?!\s*\()", lambda mm: fk.get(mm.group(1), mm.group(0)), text)

    def substitute(text: str, subst: dict) -> str:
        return re.sub(r"[\w@]+", lambda mm: "(" + subst[mm.group(0)] + ")" if mm.group(0) in subst else mm.group(0), text)

    def shapes(body: str, cond_outer=False, subst=None, depth=0, fk=None):
        """(name, dims, required) for every create_tensor of a body."""
        out = []
        subst = dict(subst or {})
        for m in LOCAL.finditer(body):
            var, rhs = m.group(1), " ".join(m.group(2).split())
            if depth > 0:
                # A helper's local: substitute its definition (in terms of
                # the caller's arguments).
                subst[var] = substitute(rhs, subst)
            elif PER_LAYER.fullmatch(rhs):
                # `const int64_t n_head_kv = hparams.n_head_kv(i);`
                subst[var] = per_layer(rhs)
            elif KNOWN_LOCALS.get(var) != rhs:
                # Any other local shadows or adds a name: not evaluated.
                subst[var] = "local:" + var
        for stmt, cond in statements(body):
            if cond_outer:
                cond = cond_outer if cond in (None, cond_outer) else "other"
            for args in call_args(stmt, "create_tensor"):
                if len(args) < 3:
                    continue
                m = TN.match(args[0].strip())
                if not m or m.group(1) not in tensor_names:
                    continue
                name = tensor_names[m.group(1)].replace("%d", "{}") + ("." + m.group(2) if m.group(2) else "")
                dims_src = keys_for_fields(per_layer(args[1].strip()), fk)
                flags = args[2].strip()
                if subst:
                    dims_src = substitute(dims_src, subst)
                    flags = substitute(flags, subst)
                dims = [" ".join(d.split()) for d in split_args(dims_src.strip("{} "))] if dims_src.startswith("{") else None
                if "TENSOR_DUPLICATED" in flags and "?" not in flags:
                    continue
                # "always", "dense" (only without experts), "moe" or "no".
                required = ("always" if cond is None else cond if cond in ("dense", "moe") else "no") if flags.strip("() ") == "0" else "no"
                out.append((name, dims, required))
            if depth == 0:
                for h in helpers:
                    for args in call_args(stmt, h):
                        params = helper_params[h]
                        if len(args) != len(params):
                            continue
                        # The caller's locals go through the helper's
                        # parameters (jamba passes a per-layer n_embd_gqa).
                        sub = dict(zip(params, (substitute(keys_for_fields(per_layer(a), fk), subst) for a in args)))
                        out += shapes(helpers[h], cond, sub, depth + 1, fk)
        return out

    def parent(cls: str):
        m = re.search(r"struct " + cls + r"\s*:\s*public\s+(\w+)", headers)
        return m.group(1) if m else None

    def method(cls: str, name: str):
        c = cls
        while c and c != "llama_model_base":
            b = body_of(all_models, r"\b" + c + r"::" + name + r"\(")
            if b is not None:
                return b
            c = parent(c)
        return None

    base_hparams = body_of(model_cpp, r"void llama_model_base::load_hparams\(")
    key_types = {}

    def note(kv, types):
        fmt = kv_names.get(kv)
        if fmt is None or types is None:
            return
        key_types.setdefault(fmt.replace("%s", "{arch}"), set()).update(types)

    base_required = []
    for stmt in top_level_statements(base_hparams):
        for call, kv, types, req in reads(stmt + ";", fields):
            if req and kv in kv_names:
                base_required.append(kv_names[kv].replace("%s.", ""))
    for call, kv, types, req in reads(base_hparams, fields):
        note(kv, types)
    # Helpers of llama_model_base that read keys for a model class
    # (load_swa_pattern reads ARCH.attention.sliding_window_pattern as an
    # array, else as a number into its parameter): the parameter list is
    # kept with the body so a parameter's C type is found.
    for m in re.finditer(r"void llama_model_base::(\w+)\(\s*llama_model_loader\s*&\s*ml[^)]*\)", model_cpp):
        if m.group(1) == "load_hparams":
            continue
        b = body_of(model_cpp[m.start():], r"void llama_model_base::" + m.group(1) + r"\(")
        for call, kv, types, req in reads(m.group(0).replace(",", ";") + ";\n" + (b or ""), fields):
            note(kv, types)

    # Keys required under a condition (loader_conditions.py): the sources
    # with comments blanked but lines kept, so conditions cite lines.
    raw_sources = {f"src/models/{f.name}": lc.strip_comments_keep_lines(f.read_text())
                   for f in sorted((src / "models").glob("*.cpp"))}
    model_cpp_lines = lc.strip_comments_keep_lines((src / "llama-model.cpp").read_text())
    base_span = lc.body_span(model_cpp_lines, r"void llama_model_base::load_hparams\(")
    base_text = model_cpp_lines[base_span[0]:base_span[1]] if base_span else ""
    defaults = {k: v for k, v in lc.literal_defaults(hparams_h).items()
                if not re.search(r"\bhparams\." + k + r"\b", base_text)}

    def locate(cls: str, name: str):
        c = cls
        while c and c != "llama_model_base":
            for path, text in raw_sources.items():
                span = lc.body_span(text, r"\b" + c + r"::" + name + r"\(")
                if span:
                    return path, text, span
            c = parent(c)
        return None

    conditional_stats = {"translated": 0, "total": 0}

    def conditional(enum: str, cls: str, required: set) -> list:
        out = []
        sources = []
        if base_span:
            sources.append(("src/llama-model.cpp", model_cpp_lines, base_span))
        loc = locate(cls, "load_arch_hparams")
        if loc:
            sources.append(loc)
        for path, text, (lo, hi) in sources:
            for key, when, ctext, line in lc.conditional_reads(text, lo, hi, enum, kv_names, arch_names, defaults, {}):
                short = key[len("{arch}."):] if key.startswith("{arch}.") else None
                if when == "1" and (short in required or key[len("{arch}."):] in base_required):
                    continue
                if when is None:
                    because = ctext
                elif when == "1":
                    because = f"the architecture is `{arch_names[enum]}`" if "LLM_ARCH_" in ctext else "always"
                else:
                    because = lc.english(when)
                entry = (key, when, because, f"{path}:{line}: {ctext}")
                if entry not in out:
                    out.append(entry)
        return out

    def expert_gating(cls: str, hp: str) -> str:
        """How the class's graph gets its experts' gating function:
        `Unused` (a fixed one, or no experts), `DefaultsNone` (it reads
        `ARCH.expert_gating_func` and replaces NONE by a default), or
        `AsRead` (the value read, NONE when absent, goes to build_moe_ffn)."""
        loc = locate(cls, "load_arch_hparams")
        text = loc[1] if loc else ""
        used = "LLM_KV_EXPERT_GATING_FUNC" in hp or re.search(
            r"llama_expert_gating_func_type>?\)?\s*\(?\s*hparams\.expert_gating_func", text)
        if not used:
            return "Unused"
        if re.search(r"if\s*\(\s*hparams\.expert_gating_func\s*==\s*LLAMA_EXPERT_GATING_FUNC_TYPE_NONE\s*\)", hp):
            return "DefaultsNone"
        return "AsRead"

    def logits_written(cls: str):
        """The token ids past which the class's graph writes into its
        logits by literal (chameleon masks image tokens 4..8196 with
        ggml_set_1d): a smaller vocabulary aborts or writes past them.
        None when the graph writes no such range."""
        loc = locate(cls, "load_arch_hparams")
        text = loc[1] if loc else ""
        m = re.search(r"ggml_set_1d\(\s*ctx0\s*,\s*cur\s*,\s*(\w+)\s*,\s*ggml_element_size\(cur\)\s*\*\s*(\w+)\s*\)", text)
        if not m:
            return None
        ints = {n: int(v) for n, v in re.findall(r"\bint\s+(\w+)\s*=\s*(\d+)\s*;", text)}
        for n, a, b in re.findall(r"\bint\s+(\w+)\s*=\s*(\w+)\s*-\s*(\w+)\s*;", text):
            if a in ints and b in ints:
                ints[n] = ints[a] - ints[b]
        size = re.search(r"\b" + m.group(1) + r"\s*=\s*ggml_new_tensor_1d\(\s*ctx0\s*,\s*GGML_TYPE_F32\s*,\s*(\w+)\s*\)", text)
        if not size or size.group(1) not in ints or m.group(2) not in ints:
            raise SystemExit(f"{cls}: ggml_set_1d on the logits with sizes this script cannot read")
        return ints[m.group(2)] + ints[size.group(1)]

    def layer_inputs(cls: str, hp: str):
        """Graph inputs built for a kind of layer the file might not have
        (a mask or scale no layer uses has no buffer, and llama.cpp aborts
        when it sets it at the first evaluation):
        - `swa`: (pattern, dense_first, when) for a class whose attention
          has no KV cache (build_attn_inp_no_cache builds a full and a
          sliding-window mask) and whose load_arch_hparams sets its
          sliding-window layers with load_swa_pattern; when is `always` or
          `window` (only with ARCH.attention.sliding_window > 0);
        - `nope`: (step, when) for a class whose attention-temperature
          input is used only by its NoPE layers, (il + 1) % step == 0; when
          is `not_window_0` (the loader ropes every layer when
          ARCH.attention.sliding_window is 0)."""
        loc = locate(cls, "load_arch_hparams")
        text = strip_comments(loc[1]) if loc else ""
        swa = None
        call = re.search(r"load_swa_pattern\(\s*ml\s*,\s*(\d+)\s*(?:,\s*(?:/\*[^*]*\*/\s*)?(true|false))?\s*\)", hp)
        if call and "build_attn_inp_no_cache" in text:
            if any("load_swa_pattern" in st for st in top_level_statements(hp)):
                when = "always"
            elif re.search(r"if\s*\(\s*found_swa\s*&&\s*hparams\.n_swa\s*>\s*0\s*\)\s*\{[^{}]*load_swa_pattern", hp):
                when = "window"
            else:
                raise SystemExit(f"{cls}: load_swa_pattern under a condition this script does not read")
            swa = (int(call.group(1)), call.group(2) == "true", when)
        nope = None
        if "build_inp_attn_scale()" in text and re.search(r"\(il \+ 1\) % hparams\.n_no_rope_layer_step", text) \
                and re.search(r"else if \(inp_attn_scale\)", text):
            step = int(lc.literal_defaults(hparams_h).get("n_no_rope_layer_step", "0"))
            if not re.search(r"found_swa\s*&&\s*hparams\.n_swa\s*==\s*0[^{}]*\{[^{}]*n_no_rope_layer_step\s*=\s*hparams\.n_layer\(\)", hp):
                raise SystemExit(f"{cls}: NoPE layers set in a way this script does not read")
            # With sliding_window 0 the loader leaves f_attn_temp_scale at
            # its default 0, which llm_graph_input_attn_temp::set_input
            # asserts against: the model layer reports that too.
            if not re.search(r"\}\s*else\s*\{[^{}]*hparams\.f_attn_temp_scale\s*=", hp) \
                    or not re.search(r"float\s+f_attn_temp_scale\s*=\s*0\.0f\s*;", hparams_h) \
                    or "GGML_ASSERT(f_attn_temp_scale != 0.0f)" not in (src / "llama-graph.cpp").read_text():
                raise SystemExit(f"{cls}: the attention-temperature scale is set in a way this script does not read")
            nope = (step, "not_window_0")
        return swa, nope

    arches = []
    for enum, name in arch_names.items():
        cls = arch_class.get(enum)
        if cls is None:
            continue
        hp = method(cls, "load_arch_hparams") or ""
        ts = method(cls, "load_arch_tensors")
        for call, kv, types, req in reads(hp, fields):
            note(kv, types)
        required = []
        for stmt in top_level_statements(hp):
            for call, kv, types, req in reads(stmt + ";", fields):
                fmt = kv_names.get(kv)
                if req and fmt and fmt.startswith("%s."):
                    required.append(fmt[3:])
        ts = expand_tensor_lambdas(ts) if ts else ts
        tensors = sorted(tensor_pats(ts)) if ts else []
        # Complete when every tn() names a literal tensor id and a literal
        # suffix or none (`tn(LLM_TENSOR_SSM_A, i)`: the int overload, the
        # layer): then a name outside `tensors` is never created.
        complete = bool(ts) and not re.search(
            r"\btn\((?!\s*LLM_TENSOR_)|\btn\(\s*LLM_TENSOR_\w+\s*,(?!\s*\")(?!\s*\w+\s*[,)])", ts)
        merged = {}
        for tname, dims, req in shapes(ts, fk=field_keys(hp)) if ts else []:
            e = merged.setdefault(tname, [[], set()])
            if dims is not None and dims not in e[0]:
                e[0].append(dims)
            e[1].add(req)
        cond = conditional(enum, cls, set(required))
        gating = expert_gating(cls, hp)
        logits = logits_written(cls)
        swa_inputs, nope_inputs = layer_inputs(cls, hp)
        conditional_stats["total"] += len(cond)
        conditional_stats["translated"] += sum(1 for c in cond if c[1] is not None)
        arches.append((name, cls, sorted(set(required)), tensors, complete, merged, cond, gating, logits,
                       swa_inputs, nope_inputs))

    # The generic pass of llama_model_base::load_tensors after the per-model
    # function: optional `.scale` / `.input_scale` tensors for every model.
    lt = body_of(model_cpp, r"bool llama_model_base::load_tensors\(")
    generic = {}
    if lt and "load_arch_tensors(ml);" in lt:
        for tname, dims, _req in shapes(lt[lt.index("load_arch_tensors(ml);"):]):
            e = generic.setdefault(tname, [])
            if dims is not None and dims not in e:
                e.append(dims)

    # Tokenizers (src/llama-vocab.cpp load): the tokenizer.ggml.model values
    # it knows (any other: "unknown tokenizer"), the models whose branch
    # throws "cannot find tokenizer merges", and for BPE vocabularies the
    # tokenizer.ggml.pre values it knows (any other: "unknown pre-tokenizer").
    vocab_cpp = strip_comments((src / "llama-vocab.cpp").read_text())
    unknown_at = vocab_cpp.index("unknown tokenizer: ")
    load_start = vocab_cpp.rindex('tokenizer_model == "no_vocab"', 0, unknown_at)
    models_part = vocab_cpp[load_start:unknown_at]
    tok_models = sorted(set(re.findall(r'tokenizer_model == "([^"]+)"', models_part)))
    merges_models = set()
    for m in re.finditer(r'if \(((?:\s*\|\|\s*|tokenizer_model == "[^"]+")+)\)\s*\{', models_part):
        branch_end = models_part.find("} else if", m.end())
        branch = models_part[m.end():branch_end if branch_end > 0 else len(models_part)]
        if "cannot find tokenizer merges" in branch:
            merges_models |= set(re.findall(r'"([^"]+)"', m.group(1)))
    # The special-token ids each tokenizer model's branch gives by default
    # (`special_X_id = N;`): what the loader takes for an absent
    # tokenizer.ggml.X_token_id key (or one outside the vocabulary).
    # The key each slot is read from (special_token_types: { LLM_KV_X, special_Y_id }).
    slot_key = {}
    for kv, slot in re.findall(r"\{\s*(LLM_KV_TOKENIZER_\w+_ID)\s*,\s*special_(\w+?)_id\s*\}", vocab_cpp):
        slot_key.setdefault(slot, kv_names[kv])
    default_ids = {}
    for m in re.finditer(r'if \(((?:\s*\|\|\s*|tokenizer_model == "[^"]+")+)\)\s*\{', models_part):
        branch_end = models_part.find("} else if", m.end())
        branch = models_part[m.end():branch_end if branch_end > 0 else len(models_part)]
        ids = sorted((slot_key[slot], int(n)) for slot, n in re.findall(r"\bspecial_(\w+?)_id\s*=\s*(\d+)\s*;", branch))
        for name in re.findall(r'"([^"]+)"', m.group(1)):
            if ids:
                default_ids[name] = ids
    bpe_start = vocab_cpp.index("if (type == LLAMA_VOCAB_TYPE_BPE)", unknown_at)
    bpe_end = vocab_cpp.index("unknown pre-tokenizer type", bpe_start)
    pre_names = sorted(set(re.findall(r'tokenizer_pre == "([^"]+)"', vocab_cpp[bpe_start:bpe_end])))
    merges_exempt_pre = sorted(set(re.findall(r'tokenizer_pre == "([^"]+)"', vocab_cpp[vocab_cpp.index("const bool is_kimi_k2", load_start):vocab_cpp.index("const bool is_kimi_k2", load_start) + 80])))

    # The gating functions build_moe_ffn's switch handles (llama-graph.cpp;
    # any other value reaches GGML_ABORT), with their enum values.
    hparams_enum = body_of(hparams_h, r"enum llama_expert_gating_func_type\s*") or ""
    gating_values = {n: int(v) for n, v in re.findall(r"LLAMA_EXPERT_GATING_FUNC_TYPE_(\w+)\s*=\s*(\d+)", hparams_enum)}
    graph_cpp = strip_comments((src / "llama-graph.cpp").read_text())
    moe = graph_cpp[graph_cpp.index("switch (gating_op)"):]
    moe = moe[:moe.index("GGML_ABORT")]
    gating_handled = sorted((gating_values[n], n) for n in set(re.findall(r"case LLAMA_EXPERT_GATING_FUNC_TYPE_(\w+):", moe)))

    digest = hashlib.sha256()
    digest.update((src / "llama-vocab.cpp").read_bytes())
    for p in ["llama-arch.cpp", "llama-model.cpp", "llama-hparams.h", "llama-model.h", "llama-graph.cpp"]:
        digest.update((src / p).read_bytes())
    for f in sorted((src / "models").glob("*")):
        digest.update(f.read_bytes())

    def strs(xs):
        return "&[" + ", ".join(f'"{x}"' for x in xs) + "]"

    lines = [
        "//! Per architecture llama.cpp knows: the tensors its loader creates and",
        "//! the hyper-parameter keys it requires; and the value types llama.cpp",
        "//! reads keys with.",
        "//!",
        f"//! Generated by `conformance/tools/llama-arch/gen_arch_table.py` from {VERSION};",
        f"//! sha256 of the sources read: {digest.hexdigest()}. Do not edit by hand.",
        "//!",
        f"//! Conditionally required keys (one per architecture and key): {conditional_stats['translated']} of",
        f"//! {conditional_stats['total']} conditions translated; the others have `when: None`.",
        "",
        "/// One architecture: its name, llama.cpp's model class, the keys",
        "/// (after `ARCH.`) it reads with required=true, and every tensor name",
        "/// it may create (`{}` is the layer, or layer then expert).",
        "pub(crate) struct ArchTable {",
        "    pub(crate) name: &'static str,",
        "    pub(crate) class: &'static str,",
        "    pub(crate) required_keys: &'static [&'static str],",
        "    pub(crate) tensors: &'static [&'static str],",
        "    /// True when every tensor the class creates has a literal name, so",
        "    /// a name outside `tensors` is one llama.cpp never creates.",
        "    pub(crate) complete: bool,",
        "    /// Shapes of the tensors created with `create_tensor`.",
        "    pub(crate) shapes: &'static [TensorShape],",
        "    /// Keys `load_hparams` requires only under a condition.",
        "    pub(crate) conditional_keys: &'static [ConditionalKey],",
        "    /// How the graph of an expert layer gets its gating function.",
        "    pub(crate) expert_gating: ExpertGating,",
        "    /// The end of a range of logits the graph writes by literal token",
        "    /// ids (`ggml_set_1d` on the logits): the vocabulary it needs.",
        "    pub(crate) logits_written: Option<u64>,",
        "    /// Attention without a KV cache that builds a full and a",
        "    /// sliding-window mask: every one must have a layer using it.",
        "    pub(crate) swa_masks: Option<SwaMasks>,",
        "    /// The graph's attention-temperature input is used only by NoPE",
        "    /// layers, `(il + 1) % step == 0` (unless",
        "    /// `ARCH.attention.sliding_window` is 0: every layer then ropes).",
        "    pub(crate) nope_step: Option<u64>,",
        "}",
        "",
        "/// How a class's graph gets the gating function of its experts",
        "/// (`build_moe_ffn` aborts on a value its switch does not handle).",
        "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
        "pub(crate) enum ExpertGating {",
        "    /// A fixed function, or no experts.",
        "    Unused,",
        "    /// `ARCH.expert_gating_func` as read: NONE (0) when absent.",
        "    AsRead,",
        "    /// As read, with NONE replaced by the architecture's default.",
        "    DefaultsNone,",
        "}",
        "",
        "/// Which layers use sliding-window attention when the file has no",
        "/// `ARCH.attention.sliding_window_pattern` array",
        "/// (`llama_hparams::set_swa_pattern`, the pattern length from",
        "/// `ARCH.attention.sliding_window_pattern` when it is a number).",
        "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
        "pub(crate) struct SwaMasks {",
        "    pub(crate) pattern: u64,",
        "    pub(crate) dense_first: bool,",
        "    pub(crate) when: SwaWhen,",
        "}",
        "",
        "/// When the loader turns sliding-window attention on.",
        "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
        "pub(crate) enum SwaWhen {",
        "    Always,",
        "    /// Only with `ARCH.attention.sliding_window` present and > 0.",
        "    WithWindow,",
        "}",
        "",
        "/// The `expert_gating_func` values `build_moe_ffn` handles",
        "/// (`src/llama-graph.cpp`; any other aborts), with their names.",
        "pub(crate) const EXPERT_GATING_FUNCS: &[(u64, &str)] = &[" + ", ".join(f'({v}, "{n.lower()}")' for v, n in gating_handled) + "];",
        "",
        "/// A key llama.cpp's `load_hparams` reads with required=true under a",
        "/// condition (an `if`, a `switch` case, after an early `return`).",
        "pub(crate) struct ConditionalKey {",
        "    /// The key (`{arch}` is the architecture).",
        "    pub(crate) key: &'static str,",
        "    /// The condition as an expression the model layer evaluates",
        "    /// (`loader_conditions.py` gives the grammar); `None`: not",
        "    /// translated, so not evaluated.",
        "    pub(crate) when: Option<&'static str>,",
        "    /// The condition in words (the C text when not translated).",
        "    pub(crate) because: &'static str,",
        "    /// Where llama.cpp reads it: file, line and the C condition.",
        "    pub(crate) source: &'static str,",
        "}",
        "",
        "/// When llama.cpp requires a tensor (created with flags 0).",
        "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
        "pub(crate) enum Required {",
        "    /// Outside any condition.",
        "    Always,",
        "    /// Only under a test that the model has no experts.",
        "    Dense,",
        "    /// Only under a test that the model has experts.",
        "    Moe,",
        "    /// Optional, or under a condition the table does not evaluate.",
        "    No,",
        "}",
        "",
        "/// A tensor as `load_arch_tensors` creates it: its name, when it is",
        "/// required, and its",
        "/// shape expressions (one list per `create_tensor` call that names it;",
        "/// a tensor matches when it matches one of them).",
        "pub(crate) struct TensorShape {",
        "    pub(crate) name: &'static str,",
        "    pub(crate) required: Required,",
        "    pub(crate) dims: &'static [&'static [&'static str]],",
        "}",
        "",
        "/// Keys (after `ARCH.`) every architecture's hyper-parameters require",
        "/// (`llama_model_base::load_hparams`).",
        f"pub(crate) const BASE_REQUIRED_KEYS: &[&str] = {strs(sorted(set(base_required)))};",
        "",
        "/// Optional tensors every model may carry (the generic pass of",
        "/// `llama_model_base::load_tensors`: per-tensor `.scale` and",
        "/// `.input_scale`, created only when their weight exists).",
        "pub(crate) const GENERIC_SHAPES: &[TensorShape] = &[",
    ]
    for tname in sorted(generic):
        alts_s = "&[" + ", ".join(strs(a) for a in generic[tname]) + "]"
        lines.append(f'    TensorShape {{ name: "{tname}", required: Required::No, dims: {alts_s} }},')
    lines += [
        "];",
        "",
        "/// Every architecture with a model class, in `LLM_ARCH_NAMES` order.",
        "pub(crate) const ARCH_TABLE: &[ArchTable] = &[",
    ]
    def rs(x: str) -> str:
        return '"' + x.replace("\\", "\\\\").replace('"', '\\"') + '"'

    for name, cls, req, tensors, complete, merged, cond, gating, logits, swa_inputs, nope_inputs in arches:
        lines.append(f'    ArchTable {{')
        lines.append(f'        name: "{name}",')
        lines.append(f'        class: "{cls}",')
        lines.append(f'        complete: {"true" if complete else "false"},')
        lines.append(f'        required_keys: {strs(req)},')
        lines.append(f'        tensors: {strs(tensors)},')
        lines.append(f'        shapes: &[')
        for tname in sorted(merged):
            alts, reqs = merged[tname]
            req = "Always" if "always" in reqs else "Dense" if reqs == {"dense"} else "Moe" if reqs == {"moe"} else "No"
            alts_s = "&[" + ", ".join(strs(a) for a in alts) + "]"
            lines.append(f'            TensorShape {{ name: "{tname}", required: Required::{req}, dims: {alts_s} }},')
        lines.append(f'        ],')
        if cond:
            lines.append(f'        conditional_keys: &[')
            for key, when, because, source in cond:
                w = f"Some({rs(when)})" if when is not None else "None"
                lines.append(f'            ConditionalKey {{ key: {rs(key)}, when: {w}, because: {rs(because)}, source: {rs(source)} }},')
            lines.append(f'        ],')
        else:
            lines.append(f'        conditional_keys: &[],')
        lines.append(f'        expert_gating: ExpertGating::{gating},')
        lines.append(f'        logits_written: {"None" if logits is None else f"Some({logits})"},')
        if swa_inputs:
            n, dense_first, when = swa_inputs
            w = "Always" if when == "always" else "WithWindow"
            lines.append(f'        swa_masks: Some(SwaMasks {{ pattern: {n}, dense_first: {"true" if dense_first else "false"}, when: SwaWhen::{w} }}),')
        else:
            lines.append('        swa_masks: None,')
        lines.append(f'        nope_step: {"None" if nope_inputs is None else f"Some({nope_inputs[0]})"},')
        lines.append(f'    }},')
    lines += [
        "];",
        "",
        "/// Keys llama.cpp reads with a fixed type (`{arch}` is the architecture),",
        "/// with every value type some read accepts (`array[T]` for arrays).",
        "pub(crate) const LOADER_KEY_TYPES: &[(&str, &[&str])] = &[",
    ]
    for k in sorted(key_types):
        lines.append(f'    ("{k}", {strs(sorted(key_types[k]))}),')
    lines += [
        "];",
        "",
        "/// `tokenizer.ggml.model` values llama.cpp's vocabulary loader knows.",
        f"pub(crate) const TOKENIZER_MODELS: &[&str] = {strs(tok_models)};",
        "",
        "/// Tokenizer models whose vocabulary llama.cpp refuses without",
        "/// `tokenizer.ggml.merges`.",
        f"pub(crate) const MERGES_REQUIRED: &[&str] = {strs(sorted(merges_models))};",
        "",
        "/// The special-token ids a tokenizer model's vocabulary takes by default",
        "/// (for an absent key, or one outside the vocabulary): (model, [(key, id)]).",
        "pub(crate) const TOKENIZER_DEFAULT_IDS: &[(&str, &[(&str, u32)])] = &[",
        *[f'    ("{name}", &[' + ", ".join(f'("{key}", {n})' for key, n in ids) + "])," for name, ids in sorted(default_ids.items())],
        "];",
        "",
        "/// Pre-tokenizers that make llama.cpp skip the merges requirement.",
        f"pub(crate) const MERGES_EXEMPT_PRE: &[&str] = {strs(merges_exempt_pre)};",
        "",
        "/// `tokenizer.ggml.pre` values llama.cpp knows for BPE vocabularies.",
        f"pub(crate) const BPE_PRE_TOKENIZERS: &[&str] = {strs(pre_names)};",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv
    root = pathlib.Path(args[0])
    out = pathlib.Path(args[1]) if len(args) > 1 else pathlib.Path(__file__).resolve().parents[3] / "parser/core/src/check/llama_arch_table.rs"
    new = render(root)
    return write_or_check(out, new, "gen_arch_table.py", check)


if __name__ == "__main__":
    sys.exit(main())
