#!/usr/bin/env python3
"""Writes parser/core/src/check/clip_table.rs: the contract libmtmd holds a
multimodal projector (mmproj) file to, per projector type.

Facts come from the llama.cpp tree vendored by the PyPI sdist of
llama-cpp-python==0.3.36 (vendor/llama.cpp, ggml-org/llama.cpp@0c1e57098):
- tools/mtmd/clip-impl.h: the KEY_* and TN_* name macros, the
  projector_type enum and PROJECTOR_TYPE_NAMES (enum -> name);
- tools/mtmd/clip-model.h: `has_deepstack()` (which tensor counts a
  deepstack layer);
- tools/mtmd/clip.cpp: clip_model_loader (its constructor, load_hparams and
  load_tensors: every get_u32/get_i32/get_f32/get_bool/get_string/
  get_arr_int/get_arr_f32 and every get_tensor, with its `required`
  argument), clip_n_mmproj_embd (the output width), the graph builder
  dispatch (clip_get_graph_builder) and which builders run build_vit;
- tools/mtmd/models/*.cpp: the graph builders (only whether build() calls
  build_vit at its top level);
- tools/mtmd/mtmd.cpp: init_vision / init_audio (which projector types
  libmtmd accepts as a vision or an audio encoder).

How: the loader functions are parsed into statements (blocks, if/else,
for, switch/case, lambdas) and walked once per projector type and
modality, with `model.proj_type` and the modality known. A condition the
walk can decide (on the projector type or the modality) picks its branch;
a condition it cannot (a key's value, a tensor's presence) keeps both
branches and turns each required read under it into "not checked" with
the C condition as the reason. Loops give the tensor names their `{}`:
over the layers (`block_count`), a literal count or list, a count read from
a key, an array key's length; any other loop's required tensors are "not
checked" with the reason. Nothing is listed by hand: a projector type
appears with what the walk found, or with the reason it was not found.

Value bounds (`bounds`): the GGML_ASSERTs of load_hparams whose condition
compares hyper-parameters (`hparams.F`) with constants or with each other
(`&&`, `||`, parentheses, `%`): the process aborts at load when one fails;
and those of the image preprocessor each type gets (mtmd.cpp init_vision:
`std::make_unique<mtmd_image_preprocessor_X>`, mtmd-image.cpp
`mtmd_image_preprocessor_X::preprocess`): libmtmd loads the projector and
aborts at the first image. The condition is kept as data (clauses of
comparisons); the library evaluates it where the file gives every field it
names. What the source does not say in such a form is written by hand in
HAND_BOUNDS, each fact with its citation (file, function, a line of it),
and the generator fails when the cited line is no longer in that function.
Looked for and not a bound of the pinned tree (so not in the table): a
product of DOTS_OCR's image_min_pixels and image_max_pixels (llama.cpp
#27224; mtmd-image.cpp calc_size_preserved_ratio compares them with the
product of the image's aligned sides, which is the image's, not the
file's), and MiniCPM-V's position buckets (#27166; clip.cpp builds them on
a fixed 70 x 70 grid whatever the file says). granite_speech's
audio_chunk_size is a load_hparams GGML_ASSERT (0 < size <= 8192) and comes
out of the walk like the others.

Token lookups (`lookups`): the texts mtmd.cpp init_vision / init_audio
pass to lookup_token in a type's case outside any `if`; the ids go,
unchecked, around the slices and overview of a tiled image, so a text
model without one aborts at that image (projector-text-tokens).

Shapes: only where a GGML_ASSERT is certain. The encoder layers of the
types whose graph builder calls build_vit at its top level multiply the
layer input, `embedding_length` wide, by attn_q / attn_k / attn_v / attn_qkv
(ggml_mul_mat asserts a->ne[0] == b->ne[0]): their ne[0] is
`embedding_length`. Every other shape is left unknown.

Encoding: the table holds no pointer (each `&'static str` or slice in a
static would be a relocation the dynamic loader applies at every start of
the program): strings are byte offsets into one string, lists index ranges
into flat arrays of plain data (see "rendering" below).

Re-run after a version bump:

    python3 conformance/tools/mtmd/gen_clip_table.py LLAMA_CPP_DIR [OUT]

With --check, compares instead of writing and exits 1 on a difference.
"""
import pathlib
import re
import sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from generated import write_or_check  # noqa: E402

VERSION = "llama-cpp-python==0.3.36 (vendor/llama.cpp, ggml-org/llama.cpp@0c1e57098bba43ac29e6e3b677cdceebdd22334f)"
SOURCES = [
    "tools/mtmd/clip-impl.h",
    "tools/mtmd/clip-model.h",
    "tools/mtmd/clip.cpp",
    "tools/mtmd/models/*.cpp",
    "tools/mtmd/mtmd.cpp",
    "tools/mtmd/mtmd-image.cpp",
]


class GenError(Exception):
    pass


# ---------------------------------------------------------------- lexing


def strip_comments(text: str) -> str:
    """Removes // and /* */ comments, keeping string and char literals."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def skip_literal(text: str, i: int) -> int:
    q = text[i]
    j = i + 1
    while j < len(text) and text[j] != q:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def matching(text: str, i: int) -> int:
    """Index just after the bracket matching the one at text[i]."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = []
    j = i
    while j < len(text):
        c = text[j]
        if c in "\"'":
            j = skip_literal(text, j)
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")}]":
            if not stack or stack.pop() != c:
                raise GenError(f"unbalanced bracket at {j}")
            if not stack:
                return j + 1
        j += 1
    raise GenError("unterminated bracket")


def scan_to(text: str, i: int, stops: str) -> int:
    """Index of the first char in `stops` at bracket depth 0 from i."""
    j = i
    while j < len(text):
        c = text[j]
        if c in "\"'":
            j = skip_literal(text, j)
            continue
        if c in "({[":
            j = matching(text, j)
            continue
        if c in stops:
            return j
        j += 1
    raise GenError(f"no {stops!r} after {i}")


def split_args(s: str):
    """Top-level comma-separated parts of an argument list."""
    parts = split_top(s, ",")
    return [] if parts == [""] else parts


def body_of(text: str, signature: str) -> str:
    m = re.search(signature, text)
    if not m:
        raise GenError(f"not found: {signature}")
    i = text.index("{", m.end())
    return text[i + 1:matching(text, i) - 1]


# ---------------------------------------------------------------- statements
# A statement is one of:
#   ("block", [stmts]), ("if", cond, then, else_or_None), ("for", header, body),
#   ("switch", expr, [(labels, [stmts])]), ("stmt", text)


def parse_stmts(text: str):
    out = []
    i = 0
    n = len(text)
    while True:
        while i < n and text[i] in " \t\r\n;":
            i += 1
        if i >= n:
            return out
        stmt, i = parse_stmt(text, i)
        out.append(stmt)


def parse_stmt(text: str, i: int):
    while text[i] in " \t\r\n":
        i += 1
    m = re.compile(r"(if|for|while|switch|else)\b").match(text, i)
    if text[i] == "{":
        j = matching(text, i)
        return ("block", parse_stmts(text[i + 1:j - 1])), j
    if m and m.group(1) in ("if", "for", "while", "switch"):
        kw = m.group(1)
        p = text.index("(", m.end())
        q = matching(text, p)
        head = text[p + 1:q - 1].strip()
        if kw == "switch":
            b = text.index("{", q)
            e = matching(text, b)
            return ("switch", head, parse_cases(text[b + 1:e - 1])), e
        body, j = parse_stmt(text, q)
        if kw == "if":
            k = j
            while k < len(text) and text[k] in " \t\r\n":
                k += 1
            if text.startswith("else", k) and not re.match(r"\w", text[k + 4:k + 5] or " "):
                els, j = parse_stmt(text, k + 4)
                return ("if", head, body, els), j
            return ("if", head, body, None), j
        return ("for", head if kw == "for" else f"; {head} ;", body), j
    j = scan_to(text, i, ";")
    return ("stmt", text[i:j].strip()), j + 1


def parse_cases(text: str):
    """The case groups of a switch body: (labels, statements)."""
    groups = []
    i, n = 0, len(text)
    labels, stmts = [], []
    while True:
        while i < n and text[i] in " \t\r\n;":
            i += 1
        if i >= n:
            break
        m = re.compile(r"case\s+([\w:]+)\s*:|default\s*:").match(text, i)
        if m:
            if stmts:
                groups.append((labels, stmts))
                labels, stmts = [], []
            labels.append(m.group(1) or "default")
            i = m.end()
            continue
        s, i = parse_stmt(text, i)
        stmts.append(s)
    if labels:
        groups.append((labels, stmts))
    return groups


# ---------------------------------------------------------------- values

class Unknown:
    """A value the walk cannot know (a key's value, a tensor's presence)."""

    def __init__(self, text, tensor_absent=None):
        self.text = text
        self.tensor_absent = tensor_absent  # name of a tensor whose absence makes it true

    def __repr__(self):
        return f"Unknown({self.text!r})"


class Loop:
    """A loop variable: how many values, from where."""

    def __init__(self, kind, arg=None, offset=0):
        self.kind, self.arg, self.offset = kind, arg, offset

    def shifted(self, k):
        return Loop(self.kind, self.arg, self.offset + k)


class TensorRef:
    def __init__(self, name, loops):
        self.name, self.loops = name, loops


def tokenize(expr: str):
    return re.findall(r'"(?:\\.|[^"\\])*"|\d+\.?\d*f?|[A-Za-z_][\w]*(?:(?:\.|->)[A-Za-z_]\w*|\[\d+\])*(?:\(\))?|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:(),{}]', expr)


class Walker:
    def __init__(self, macros, ptype, modality, hparams_fields=None, list_len=None):
        self.macros = macros
        self.ptype = ptype
        self.modality = modality
        self.env = {}
        self.hfields = hparams_fields or {}
        self.list_len = list_len or {}
        self.reads = []          # (key, kind, required, field)
        self.tensors = []        # (name, loops, need, field)
        self.refused = None      # reason the type never loads
        self.value_checks = []   # C conditions of throws/asserts the table does not evaluate
        self.min_len = []        # (key, n): an array read throws below n elements
        self.even = []           # keys whose length must be even
        self.assigned = set()    # hparams fields the walk assigns without reading a key
        self.asserts = []        # GGML_ASSERT conditions of the type's own code, under no undecided condition
        self.defaults = {}       # hparams field -> the literal it holds when its optional key is absent
        self.limit_calls = []    # N_MAX of hparams.set_limit_image_tokens(N_MIN, N_MAX) calls
        self.fields = {}         # model field -> tensor name
        self.retype = []         # (tensor field, new type)
        self.counters = {}       # model counter -> layer field that increments it
        self.lambdas = {}
        self.sizes = {}

    # ---- expressions

    def ev(self, expr):
        toks = tokenize(expr)
        self.toks, self.pos = toks, 0
        try:
            v = self.ternary()
        except (IndexError, GenError):
            return Unknown(expr)
        if self.pos != len(toks):
            return Unknown(expr)
        return v

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self):
        t = self.toks[self.pos]
        self.pos += 1
        return t

    def ternary(self):
        c = self.lor()
        if self.peek() == "?":
            self.take()
            a = self.ternary()
            if self.take() != ":":
                raise GenError("ternary")
            b = self.ternary()
            if c is True:
                return a
            if c is False:
                return b
            return Unknown("?:")
        return c

    def lor(self):
        v = self.land()
        while self.peek() == "||":
            self.take()
            w = self.land()
            if v is True or w is True:
                v = True
            elif v is False:
                v = w
            elif w is False:
                pass
            else:
                v = Unknown("||")
        return v

    def land(self):
        v = self.cmp()
        while self.peek() == "&&":
            self.take()
            w = self.cmp()
            if v is False or w is False:
                v = False
            elif v is True:
                v = w
            elif w is True or isinstance(w, str):
                pass
            else:
                v = Unknown(f"{getattr(v, 'text', v)} && {getattr(w, 'text', w)}")
        return v

    def cmp(self):
        v = self.add()
        while self.peek() in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()
            w = self.add()
            if op in ("==", "!=") and (w == "nullptr" or v == "nullptr"):
                t = v if w == "nullptr" else w
                if isinstance(t, TensorRef):
                    v = Unknown(f"{t.name} {'absent' if op == '==' else 'present'}",
                                tensor_absent=t.name if op == "==" else None)
                    if op == "!=":
                        v.tensor_present = t.name
                    continue
                v = Unknown(op)
                continue
            if isinstance(v, (int, str)) and isinstance(w, (int, str)) and not isinstance(v, bool) and not isinstance(w, bool):
                v = {"==": v == w, "!=": v != w, "<": v < w, ">": v > w, "<=": v <= w, ">=": v >= w}[op]
            else:
                v = Unknown(op)
        return v

    def add(self):
        v = self.unary()
        while self.peek() in ("+", "-", "*", "/", "%"):
            op = self.take()
            w = self.unary()
            if isinstance(v, Loop) and isinstance(w, int) and op in "+-":
                v = v.shifted(w if op == "+" else -w)
            elif isinstance(v, int) and isinstance(w, int) and not isinstance(v, bool):
                v = {"+": v + w, "-": v - w, "*": v * w, "/": v // w if w else 0, "%": v % w if w else 0}[op]
            else:
                v = Unknown(op)
        return v

    def unary(self):
        t = self.peek()
        if t == "!":
            self.take()
            v = self.unary()
            if isinstance(v, bool):
                return not v
            if isinstance(v, TensorRef):
                u = Unknown(f"!{v.name}", tensor_absent=v.name)
                return u
            if isinstance(v, Unknown) and getattr(v, "tensor_present", None):
                return Unknown(f"{v.tensor_present} absent", tensor_absent=v.tensor_present)
            return Unknown("!")
        if t == "(":
            self.take()
            # a C cast: (int), (int32_t), (size_t)
            if self.peek() in ("int", "int32_t", "size_t", "int64_t", "uint32_t") and self.toks[self.pos + 1] == ")":
                self.take()
                self.take()
                return self.unary()
            v = self.ternary()
            if self.take() != ")":
                raise GenError(")")
            return v
        return self.atom()

    def atom(self):
        t = self.take()
        if t.startswith('"'):
            s = bytes(t[1:-1], "utf-8").decode("unicode_escape")
            # adjacent literals
            while self.peek() and self.peek().startswith('"'):
                s += bytes(self.take()[1:-1], "utf-8").decode("unicode_escape")
            return s
        if re.fullmatch(r"\d+", t):
            return int(t)
        if re.fullmatch(r"\d+\.?\d*f?", t):
            return Unknown(t)
        if t in ("true", "false"):
            return t == "true"
        if t == "nullptr":
            return "nullptr"
        if t == "{":
            items = []
            while self.peek() != "}":
                items.append(self.ternary())
                if self.peek() == ",":
                    self.take()
            self.take()
            return ("list", items)
        if t == "string_format" and self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.ternary())
                if self.peek() == ",":
                    self.take()
            self.take()
            return self.format(args)
        if t in self.macros:
            return self.macros[t]
        if t == "model.proj_type":
            return ("ptype",)
        if t.startswith("PROJECTOR_TYPE_"):
            return ("enum", t)
        if t in self.env:
            return self.env[t]
        if t.endswith(".size()"):
            base = t[:-len(".size()")]
            if base in self.sizes:
                return self.sizes[base]
            if base in self.env and isinstance(self.env[base], tuple) and self.env[base][0] == "list":
                return len(self.env[base][1])
            if base.startswith("hparams.") and base[len("hparams."):] in self.hfields:
                f = self.hfields[base[len("hparams."):]]
                if isinstance(f, tuple) and f[0] == "list":
                    return len(f[1])
                if isinstance(f, tuple) and f[0] == "key":
                    return Loop("arraylen", f[1])
            return Unknown(t)
        if t == "hparams.n_layer":
            return Loop("layers")
        if t.startswith("hparams.") and t[len("hparams."):] in self.hfields:
            f = self.hfields[t[len("hparams."):]]
            if isinstance(f, int):
                return f
            if isinstance(f, tuple) and f[0] == "key" and f[2]:
                return Loop("key", f[1])
            if f == "n_layer":
                return Loop("layers")
            return Unknown(t)
        if t == "hparams.n_layer":
            return Loop("layers")
        if t.startswith("model.") and t[len("model."):] in self.fields:
            return TensorRef(self.fields[t[len("model."):]], [])
        if t.startswith("model.") and t[len("model."):] in getattr(self, "hfields_model", {}):
            return self.sub_eval(self.hfields_model[t[len("model."):]])
        if t in getattr(self, "fields_local", {}):
            return TensorRef(self.fields_local[t], [])
        return Unknown(t)

    def sub_eval(self, expr):
        saved = (self.toks, self.pos)
        v = self.ev(expr)
        self.toks, self.pos = saved
        return v

    def format(self, args):
        if not args or not isinstance(args[0], str):
            return Unknown("format")
        fmt, rest = args[0], list(args[1:])
        out, loops = [], []
        i = 0
        while i < len(fmt):
            if fmt[i] == "%" and i + 1 < len(fmt):
                spec = fmt[i + 1]
                if not rest:
                    return Unknown("format")
                a = rest.pop(0)
                if spec == "s":
                    if not isinstance(a, str):
                        return Unknown("format %s")
                    out.append(a)
                elif spec == "d":
                    if isinstance(a, bool):
                        return Unknown("format %d")
                    if isinstance(a, int):
                        out.append(str(a))
                    elif isinstance(a, Loop):
                        out.append("{}")
                        loops.append(a)
                    else:
                        return Unknown("format %d")
                else:
                    return Unknown("format")
                i += 2
            else:
                out.append(fmt[i])
                i += 1
        name = "".join(out)
        return TensorRef(name, loops) if loops else name

    # ---- projector type comparisons are folded before evaluating

    def fold_types(self, expr):
        def rep(m):
            a, op, b = m.group(1), m.group(2), m.group(3)
            eq = (b == self.ptype)
            return "true" if (eq if op == "==" else not eq) else "false"
        return re.sub(r"(model\.proj_type|proj_type)\s*(==|!=)\s*(PROJECTOR_TYPE_\w+)", rep, expr)

    def cond(self, expr):
        folded = self.fold_types(expr.strip())
        v = self.ev(folded)
        if isinstance(v, Unknown):
            # name the condition as the source writes it, with what the
            # walk knows substituted for local names
            text = " ".join(expr.split())
            for var, val in self.env.items():
                if isinstance(val, Unknown) and re.fullmatch(r"\w+", var) and val.text != var:
                    text = re.sub(rf"\b{var}\b", f"({val.text})", text)
            u = Unknown(text, tensor_absent=v.tensor_absent)
            if getattr(v, "tensor_present", None):
                u.tensor_present = v.tensor_present
            return u
        return v


# ---------------------------------------------------------------- walking

READERS = {
    "get_u32": "U32", "get_i32": "I32", "get_f32": "F32", "get_bool": "Bool",
    "get_string": "Str", "get_arr_int": "ArrInt", "get_arr_f32": "ArrF32",
}


def walk(w: Walker, stmts, under=None, loops=()):
    """Walks statements; `under` is the C text of an undecided condition
    the statements are under (or None)."""
    for s in stmts:
        if walk_one(w, s, under, loops) == "stop":
            return "stop"
    return None


def refuse(w, under, reason, text):
    if under is None:
        if w.refused is None:
            w.refused = reason
        return "stop"
    if w.case_depth:
        w.value_checks.append(text)
    return None


def walk_one(w: Walker, s, under, loops):
    kind = s[0]
    if kind == "block":
        return walk(w, s[1], under, loops)
    if kind == "switch":
        head = s[1]
        if head not in ("model.proj_type", "ctx->proj_type()", "ctx->model.proj_type"):
            for labels, body in s[2]:
                walk(w, body, under or head, loops)
            return None
        chosen = None
        for labels, body in s[2]:
            if w.ptype in labels:
                chosen = body
        if chosen is None:
            for labels, body in s[2]:
                if "default" in labels:
                    chosen = body
        if chosen is None:
            return None
        w.case_depth += 1
        r = walk(w, chosen, under, loops)
        w.case_depth -= 1
        return r
    if kind == "if":
        c = w.cond(s[1])
        # a throw when required tensors are absent: `if (!a || !b) throw`
        if isinstance(c, Unknown) and body_throws(s[2]):
            names = [w.fields.get(f) for f in re.findall(r"!\s*model\.(\w+)", s[1])]
            if names and all(names) and re.fullmatch(r"\s*(!\s*model\.\w+\s*(\|\|\s*)?)+", s[1]):
                for n in names:
                    w.tensors.append((n, list(loops), "Required", None))
                return None
            m = re.fullmatch(r"\s*(\w+)\.size\(\)\s*<\s*(\d+)\s*\|\|\s*(\w+)\.size\(\)\s*<\s*\2\s*", s[1])
            ms = re.fullmatch(r"\s*(\w+)\.size\(\)\s*%\s*2\s*!=\s*0\s*", s[1])
            if m and m.group(1) in w.arrays and m.group(3) in w.arrays:
                w.min_len.append((w.arrays[m.group(1)], int(m.group(2))))
                w.min_len.append((w.arrays[m.group(3)], int(m.group(2))))
                return None
            if ms and ms.group(1) in w.arrays:
                w.even.append(w.arrays[ms.group(1)])
                return None
        if c is True:
            return walk_one(w, s[2], under, loops)
        if c is False:
            return walk_one(w, s[3], under, loops) if s[3] else None
        text = s[1].strip()
        if isinstance(c, Unknown) and c.tensor_absent and is_break(s[2]):
            w.probe_break = c.tensor_absent
            return None
        if is_break(s[2]):
            w.probe_break = text
            return None
        sub = text if under is None else f"{under} && {text}"
        walk_one(w, s[2], sub, loops)
        if s[3]:
            walk_one(w, s[3], f"!({text})" if under is None else f"{under} && !({text})", loops)
        return None
    if kind == "for":
        return walk_for(w, s, under, loops)
    text = s[1]
    return walk_stmt(w, text, under, loops)


def body_throws(s):
    if s[0] == "stmt":
        return s[1].startswith("throw ")
    if s[0] == "block":
        return any(body_throws(x) for x in s[1])
    return False


def is_break(s):
    if s[0] == "stmt":
        return s[1] == "break"
    if s[0] == "block":
        return len(s[1]) == 1 and is_break(s[1][0])
    return False


def walk_for(w: Walker, s, under, loops):
    head, body = s[1], s[2]
    m = re.fullmatch(r"(?:const\s+)?(?:int|size_t|int32_t|int64_t)\s+(\w+)\s*:\s*(\{.*\})", head.strip(), re.S)
    if m:
        items = [int(x) for x in re.findall(r"\d+", m.group(2))]
        var, lp = m.group(1), Loop("list", tuple(items))
        return walk_loop(w, var, lp, body, under, loops)
    m = re.fullmatch(r"(?:int|size_t|int32_t|int64_t)\s+(\w+)\s*=\s*0\s*;\s*(.*?)\s*;\s*(?:\+\+\w+|\w+\+\+)", head.strip(), re.S)
    if m:
        var, cond = m.group(1), m.group(2)
        if cond == "":
            # a probing loop: runs while a tensor it asks for exists
            return walk_loop(w, var, Loop("probe"), body, under, loops)
        mm = re.fullmatch(rf"{var}\s*<\s*(.+)", cond)
        if mm:
            bound = w.cond(mm.group(1))
            if isinstance(bound, bool):
                bound = Unknown(mm.group(1))
            if isinstance(bound, int):
                if bound <= 0:
                    return None
                return walk_loop(w, var, Loop("fixed", bound), body, under, loops)
            if isinstance(bound, Loop) and bound.offset == 0:
                return walk_loop(w, var, bound, body, under, loops)
            return walk_loop(w, var, Loop("unknown", mm.group(1).strip()), body, under, loops)
    # any other loop (over loaded tensors, ...): what it reads is not listed
    if w.case_depth:
        w.value_checks.append(f"loop `for ({head.strip()})` not followed")
    return None


def walk_loop(w, var, lp, body, under, loops):
    saved = w.env.get(var)
    w.env[var] = Loop(lp.kind, lp.arg)
    w.loop_vars = getattr(w, "loop_vars", {})
    w.loop_vars[var] = lp
    old_probe = getattr(w, "probe_break", None)
    w.probe_break = None
    start = len(w.tensors)
    walk_one(w, body, under, loops + (lp,))
    if lp.kind == "probe":
        probe = w.probe_break
        # tensors of a probing loop: the probe is optional; the others are
        # required only for the indices the probe finds
        for k in range(start, len(w.tensors)):
            n, lps, need, field = w.tensors[k]
            if need == "Required":
                w.tensors[k] = (n, lps, ("NotChecked", f"required only for the indices where `{probe}` exists (found by probing)"), field)
    w.probe_break = old_probe
    if saved is None:
        w.env.pop(var, None)
    else:
        w.env[var] = saved
    return None


def need_of(w, req, under):
    if req is True:
        need = "Required"
    elif req is False:
        return "Optional"
    elif isinstance(req, Unknown) and req.tensor_absent and under is None:
        return ("UnlessTensor", req.tensor_absent)
    else:
        return ("NotChecked", f"required when `{getattr(req, 'text', req)}`")
    if under is not None:
        return ("NotChecked", f"required when `{under}`")
    return need


def walk_stmt(w: Walker, text, under, loops):
    if text == "break" or text.startswith("return"):
        return "stop" if under is None and text == "break" and not loops else None
    if text.startswith("throw "):
        return refuse(w, under, text, text)
    if text.startswith("GGML_ASSERT") or text.startswith("GGML_ABORT"):
        inner = text[text.index("(") + 1:text.rindex(")")]
        parts = split_args(inner)
        cond = parts[0] if parts else inner
        if text.startswith("GGML_ABORT") or w.cond(cond) is False:
            return refuse(w, under, f"aborts: {text}", text)
        mf = re.fullmatch(r"model\.(\w+)\s*&&\s*\".*\"", cond.strip())
        if mf and mf.group(1) in w.fields:
            w.tensors.append((w.fields[mf.group(1)], list(loops), "Required", None))
            return None
        if w.cond(cond) is not True and w.case_depth:
            if under is None and parse_bound(cond) is not None:
                w.asserts.append(" ".join(cond.split()))
            else:
                w.value_checks.append(f"GGML_ASSERT({cond.strip()})")
        return None
    m = re.fullmatch(r"hparams\.set_limit_image_tokens\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)", text)
    if m and under is None:
        w.limit_calls.append(int(m.group(2)))
    m = re.match(r"hparams\.(\w+)\s*\(", text)
    if m:
        # a method of clip_hparams: the members it assigns are no longer the struct's initialisers
        for f in METHOD_ASSIGNS.get(m.group(1), ()):
            if f not in w.hfields or not isinstance(w.hfields[f], tuple):
                w.hfields[f] = Unknown(text)
    # lambda definitions
    m = re.fullmatch(r"auto\s+(\w+)\s*=\s*\[[^\]]*\]\s*\((.*?)\)\s*\{(.*)\}", text, re.S)
    if m:
        w.lambdas[m.group(1)] = (split_args(m.group(2)), m.group(3))
        return None
    # reads of keys
    m = re.match(r"(get_u32|get_i32|get_f32|get_bool|get_string|get_arr_int|get_arr_f32)\s*\(", text)
    if m:
        args = split_args(text[m.end():text.rindex(")")])
        key = w.cond(args[0])
        if not isinstance(key, str):
            raise GenError(f"key not resolved: {text}")
        req = w.cond(args[2]) if len(args) > 2 else True
        field = args[1].strip()
        w.arrays[field] = key
        if field.startswith("hparams."):
            f = field[len("hparams."):]
            if req is not True and isinstance(w.hfields.get(f), int) and not isinstance(w.hfields.get(f), bool):
                w.defaults[f] = w.hfields[f]  # the value when the key is absent
            elif req is not True and f not in w.hfields and f in STRUCT_DEFAULTS:
                w.defaults[f] = STRUCT_DEFAULTS[f]  # never assigned: the member's initialiser
            w.hfields[f] = ("key", key, req is True and under is None)
            # the file's value stands unless code assigns the field later
            w.assigned.discard(f)
        w.reads.append((key, READERS[m.group(1)], need_of(w, req, under), field))
        return None
    # tensors
    m = re.match(r"(?:([\w.\[\]>-]+)\s*=\s*|ggml_tensor\s*\*\s*(\w+)\s*=\s*)?(get_tensor|\w+)\s*\((.*)\)\s*$", text, re.S)
    if m and (m.group(3) == "get_tensor" or m.group(3) in w.lambdas):
        lhs = m.group(1) or m.group(2)
        fn, args = m.group(3), split_args(m.group(4))
        if fn != "get_tensor":
            params, body = w.lambdas[fn]
            rm = re.fullmatch(r"\s*return\s+get_tensor\s*\(\s*name\s*,\s*(.*)\)\s*;?\s*", body, re.S)
            if rm:
                # a wrapper: get_tensor(name, EXPR with `required`)
                reqdef = "true"
                for p in params:
                    pm = re.fullmatch(r"bool\s+required\s*=\s*(\w+)", p)
                    if pm:
                        reqdef = pm.group(1)
                req_arg = args[1] if len(args) > 1 else reqdef
                expr = re.sub(r"\brequired\b", f"({req_arg})", rm.group(1))
                args = [args[0], expr]
            else:
                return call_lambda(w, fn, args, under, loops)
        name = w.cond(args[0])
        req = w.cond(args[1]) if len(args) > 1 else True
        if isinstance(name, str):
            name = TensorRef(name, [])
        if not isinstance(name, TensorRef):
            raise GenError(f"tensor name not resolved: {text}")
        need = need_of(w, req, under)
        field = None
        if lhs:
            field = lhs
            w.local_tensor[lhs] = name.name
            if lhs.startswith("model."):
                w.fields[lhs[len("model."):]] = name.name
            elif "." in lhs:
                obj, fld = lhs.split(".", 1)
                if obj in w.aliases:
                    w.fields[f"{w.aliases[obj]}.{fld}"] = name.name
                if obj == "layer":
                    w.layer_fields[fld] = name.name
            else:
                w.fields_local[lhs] = name.name
        w.tensors.append((name.name, list(name.loops), need, field))
        return None
    if m and m.group(3) in w.lambdas:
        return call_lambda(w, m.group(3), split_args(m.group(4)), under, loops)
    # aliases: auto & qf = model.qf_proj_blocks[0];
    m = re.fullmatch(r"auto\s*&\s*(\w+)\s*=\s*model\.([\w\[\]]+)", text)
    if m:
        w.aliases[m.group(1)] = m.group(2)
        return None
    # local variables
    m = re.fullmatch(r"(?:const\s+)?(?:bool|int|int32_t|size_t|auto|char\s*\*|const\s+char\s*\*)\s*(\*?\s*\w+)\s*=\s*(.*)", text, re.S)
    if m:
        var = m.group(1).lstrip("* ").strip()
        expr = m.group(2)
        mx = re.fullmatch(r"\s*(\w+)\s*!=\s*nullptr\s*", expr) or re.fullmatch(r"\s*layer\.(\w+)\s*!=\s*nullptr\s*", expr)
        if mx:
            fld = mx.group(1)
            src = w.layer_fields.get(fld) or w.fields_local.get(fld)
            if src:
                u = Unknown(f"{src} present")
                u.tensor_present = src
                w.env[var] = u
                return None
        w.env[var] = w.cond(expr)
        return None
    # hparams assignments
    m = re.fullmatch(r"hparams\.(\w+)\s*=\s*(.*)", text, re.S)
    if m:
        v = w.cond(m.group(2))
        if isinstance(v, (int, tuple)) and not isinstance(v, bool):
            w.hfields[m.group(1)] = v
        else:
            w.hfields[m.group(1)] = Unknown(m.group(2))
        w.assigned.add(m.group(1))
        return None
    m = re.fullmatch(r"model\.proj_type\s*=\s*(PROJECTOR_TYPE_\w+)", text)
    if m and under:
        present = re.fullmatch(r"model\.(\w+)", under.strip())
        if present and present.group(1) in w.fields:
            w.retype.append((w.fields[present.group(1)], m.group(1)))
        return None
    m = re.fullmatch(r"model\.(\w+)\s*=\s*(hparams\.\w+)", text)
    if m:
        w.hfields_model[m.group(1)] = m.group(2)
        return None
    m = re.fullmatch(r"model\.(\w+)\s*\+\+", text)
    if m and under:
        hm = re.fullmatch(r"layer\.(\w+)\(\)", under.strip())
        if hm:
            w.counters[m.group(1)] = hm.group(1)
        return None
    m = re.fullmatch(r"([\w.]+)\.resize\((.*)\)", text, re.S)
    if m:
        v = w.cond(m.group(2))
        w.sizes[m.group(1)] = v
        return None
    return None


def call_lambda(w, fn, args, under, loops):
    params, body = w.lambdas[fn]
    saved = dict(w.env)
    for p, a in zip(params, args):
        pm = re.fullmatch(r"(?:const\s+)?([\w:]+)\s*&?\s*(\w+)(?:\s*=.*)?", p.strip())
        if pm:
            w.env[pm.group(2)] = w.cond(a)
    walk(w, parse_stmts(body), under, loops)
    w.env = saved
    return None


def new_walker(macros, ptype, modality, hfields=None):
    w = Walker(macros, ptype, modality, hfields)
    w.arrays = {}
    w.aliases = {}
    w.layer_fields = {}
    w.fields_local = {}
    w.local_tensor = {}
    w.hfields_model = {}
    w.in_case = False
    w.probe_break = None
    w.case_depth = 0
    # the modality is known to the walk: load_hparams' `modality` argument
    # and `model.modality` compare equal to one of these
    w.env["modality"] = w.env["model.modality"] = modality
    w.env["CLIP_MODALITY_VISION"] = "Vision"
    w.env["CLIP_MODALITY_AUDIO"] = "Audio"
    w.env["CLIP_MODALITY_GEN_AUDIO"] = "GenAudio"
    return w


# ---------------------------------------------------------------- sources


def load(root: pathlib.Path):
    mtmd = root / "tools" / "mtmd"
    impl = strip_comments((mtmd / "clip-impl.h").read_text())
    model_h = strip_comments((mtmd / "clip-model.h").read_text())
    clip = strip_comments((mtmd / "clip.cpp").read_text())
    mtmd_cpp = strip_comments((mtmd / "mtmd.cpp").read_text())
    builders = {p.name: strip_comments(p.read_text()) for p in sorted((mtmd / "models").glob("*.cpp"))}
    return impl, model_h, clip, mtmd_cpp, builders


# ---------------------------------------------------------------- value bounds

# int32_t members of struct clip_hparams (clip-model.h) with their initialisers
STRUCT_DEFAULTS = {}


# method of struct clip_hparams -> the members its body assigns
METHOD_ASSIGNS = {}


def method_assigns(model_h: str):
    body = body_of(model_h, r"struct\s+clip_hparams\b")
    out = {}
    for m in re.finditer(r"\bvoid\s+(\w+)\s*\([^)]*\)\s*\{", body):
        i = m.end() - 1
        fn = body[i:matching(body, i)]
        out.setdefault(m.group(1), set()).update(re.findall(r"(?<![\w.])(\w+)\s*=(?!=)", fn))
    return out


def struct_defaults(model_h: str):
    body = body_of(model_h, r"struct\s+clip_hparams\b")
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\bint32_t\s+(\w+)\s*=\s*(-?\d+)\s*;", body)}


def split_top(s: str, op: str):
    """Parts of `s` between top-level occurrences of the two-char operator `op`."""
    parts, j, start = [], 0, 0
    while j < len(s):
        c = s[j]
        if c in "\"'":
            j = skip_literal(s, j)
            continue
        if c in "({[":
            j = matching(s, j)
            continue
        if s.startswith(op, j):
            parts.append(s[start:j].strip())
            start = j + len(op)
            j = start
            continue
        j += 1
    parts.append(s[start:].strip())
    return parts


ATOM = re.compile(r"(?:\(int\)\s*)?hparams\.(\w+)\s*(?:%\s*(\d+)\s*)?(<=|>=|==|!=|<|>)\s*(?:(-?\d+)|hparams\.(\w+)|(INT32_MAX))")


def parse_bound(cond: str):
    """The condition as clauses (ORed) of atoms (ANDed), each atom
    (field, modulus or 0, op, ("const", n) or ("field", name)); None when
    some part is not a comparison of hyper-parameters."""
    c = cond.strip()
    while c.startswith("(") and matching(c, 0) == len(c):
        c = c[1:-1].strip()
    ors = split_top(c, "||")
    if len(ors) > 1:
        out = []
        for part in ors:
            sub = parse_bound(part)
            if sub is None:
                return None
            out += sub
        return out
    ands = split_top(c, "&&")
    if len(ands) > 1:
        out = [[]]
        for part in ands:
            if re.fullmatch(r'"[^"]*"', part):
                continue  # a message: always true
            sub = parse_bound(part)
            if sub is None:
                return None
            out = [a + b for a in out for b in sub]
        return out
    m = ATOM.fullmatch(c)
    if not m:
        return None
    field, modulus, op, num, other, imax = m.groups()
    rhs = ("const", int(num)) if num is not None else ("const", 2147483647) if imax else ("field", "hparams." + other)
    return [[(("hparams." + field,), 1, int(modulus or 0), op, rhs)]]


def preprocessors(mtmd_cpp: str):
    """enum -> the image preprocessor classes init_vision may give it."""
    body = body_of(mtmd_cpp, r"void\s+init_vision\s*\(\s*\)")
    out = {}
    labels = []
    pending = False
    for m in re.finditer(r"case\s+(PROJECTOR_TYPE_\w+)\s*:|std::make_unique<mtmd_image_preprocessor_(\w+)>|\bbreak\b", body):
        if m.group(1):
            if not pending:
                labels = []
            labels.append(m.group(1))
            pending = True
        elif m.group(2):
            pending = False
            for lab in labels:
                out.setdefault(lab, []).append(m.group(2))
        else:
            pending = False
    return out


def preprocessor_asserts(image_cpp: str):
    """class -> the GGML_ASSERT conditions of its preprocess() body."""
    out = {}
    for m in re.finditer(r"mtmd_image_preproc_out\s+mtmd_image_preprocessor_(\w+)::preprocess\s*\(", image_cpp):
        i = image_cpp.index("{", m.end())
        body = image_cpp[i + 1:matching(image_cpp, i) - 1]
        conds = []
        for a in re.finditer(r"GGML_ASSERT\s*\(", body):
            j = a.end() - 1
            conds.append(body[j + 1:matching(body, j) - 1].strip())
        out[m.group(1)] = conds
    return out


def c_string(lit: str) -> str:
    """The value of a C string literal's body (the escapes mtmd.cpp uses)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}.get(m.group(1), m.group(1)), lit)


def text_lookups(mtmd_cpp: str):
    """(modality, enum) -> the token texts init_vision / init_audio looks up
    in the text model's vocabulary (`lookup_token("...")`) in the type's
    case, outside any `if`: the ids go into every tiled image's tokens
    unchecked (LLAMA_TOKEN_NULL when the vocabulary lacks the text). A
    lookup under an `if` (a version, or a lookup the code tests) is not
    listed."""
    out = {}
    for modality, fn in (("Vision", "init_vision"), ("Audio", "init_audio")):
        body = body_of(mtmd_cpp, r"void\s+" + fn + r"\s*\(\s*\)")
        for stmt in parse_stmts(body):
            if stmt[0] != "switch":
                continue
            for labels, stmts in stmt[2]:
                found = []

                def visit(ss):
                    for st in ss:
                        if st[0] == "block":
                            visit(st[1])
                        elif st[0] == "stmt":
                            found.extend(c_string(x) for x in re.findall(r'\blookup_token\s*\(\s*"((?:[^"\\]|\\.)*)"\s*\)', st[1]))
                visit(stmts)
                for lab in labels:
                    if lab.startswith("PROJECTOR_TYPE_"):
                        out[(modality, lab)] = list(dict.fromkeys(found))
    return out


# Facts the source does not state as a comparison the generator can read.
# Each: the types it applies to (enum names; "set_limit_image_tokens" = every
# type whose load_hparams calls hparams.set_limit_image_tokens(N_MIN, N_MAX)
# with literal counts, the bound then taking N_MAX), when it bites, the
# condition as parse_bound reads it (with {n_max} filled in), what happens,
# and the citation: file, function, and a line of that function that must
# still be there.
HAND_BOUNDS = [
    {
        "types": "set_limit_image_tokens",
        "when": "Load",
        "cond": "hparams.patch_size * hparams.patch_size * hparams.n_merge * hparams.n_merge * {n_max} <= INT32_MAX",
        "outcome": "clip_hparams::set_limit_image_tokens computes image_max_pixels = {n_max} x patch_size^2 x n_merge^2 in `int`: the product overflows and wraps, so libmtmd refuses the projector (\"image_max_pixels ... is less than image_min_pixels\") or sizes every image from a wrapped pixel budget",
        "cite": ("tools/mtmd/clip-model.h", "set_limit_image_tokens", "const int patch_area = patch_size * patch_size * n_merge * n_merge;"),
    },
]


def cited(root: pathlib.Path, cite):
    """Checks that the cited line is in the cited function; returns "file function"."""
    rel, fn, line = cite
    text = (root / rel).read_text()
    m = re.search(r"\b" + re.escape(fn) + r"\s*\([^;{]*\)\s*(?:const\s*)?\{", text)
    if not m:
        raise GenError(f"HAND_BOUNDS: no function {fn} in {rel}")
    i = m.end() - 1
    body = text[i:matching(text, i)]
    if " ".join(line.split()) not in " ".join(body.split()):
        raise GenError(f"HAND_BOUNDS: the cited line `{line}` is no longer in {rel} {fn}")
    return f"{rel} {fn}"


PRODUCT = re.compile(r"((?:hparams\.\w+\s*\*\s*)+)(\d+)\s*<=\s*INT32_MAX")


def hand_bound(fact, n_max):
    """A HAND_BOUNDS condition: a product of fields times a constant, at most INT32_MAX."""
    cond = fact["cond"].format(n_max=n_max)
    m = PRODUCT.fullmatch(cond)
    if not m:
        raise GenError(f"HAND_BOUNDS: cannot read {cond}")
    fields = re.findall(r"hparams\.\w+", m.group(1))
    return fields, int(m.group(2))


def macros_of(impl: str):
    return {m.group(1): m.group(2) for m in re.finditer(r'#define\s+((?:KEY|TN)_\w+)\s+"([^"]*)"', impl)}


def projector_names(impl: str):
    enum = body_of(impl, r"enum\s+projector_type\b")
    order = re.findall(r"(PROJECTOR_TYPE_\w+)", enum)
    names_body = impl[impl.index("PROJECTOR_TYPE_NAMES"):]
    names_body = names_body[:names_body.index("};")]
    names = dict(re.findall(r'\{\s*(PROJECTOR_TYPE_\w+)\s*,\s*"([^"]*)"\s*\}', names_body))
    return order, names


def case_lists(fn_body: str):
    """enum -> True for every `case PROJECTOR_TYPE_X:` in a function body's
    top-level switch over the projector type."""
    return set(re.findall(r"case\s+(PROJECTOR_TYPE_\w+)\s*:", fn_body))


def width_exprs(clip: str):
    body = body_of(clip, r"int\s+clip_n_mmproj_embd\s*\(")
    sw = parse_stmts(body)
    out = {}
    for s in sw:
        if s[0] != "switch":
            continue
        for labels, stmts in s[2]:
            ret = None
            for st in stmts:
                if st[0] == "stmt" and st[1].startswith("return"):
                    ret = st[1][len("return"):].strip()
                if st[0] == "stmt" and st[1].startswith("GGML_ABORT"):
                    ret = None
            for lab in labels:
                out[lab] = ret
    return out


def builder_map(clip: str, builders):
    body = body_of(clip, r"clip_get_graph_builder\s*\(")
    out = {}
    for s in parse_stmts(body):
        if s[0] != "switch":
            continue
        for labels, stmts in s[2]:
            text = repr(stmts)
            m = re.search(r"make_unique<(clip_graph_\w+)>", text)
            for lab in labels:
                out[lab] = m.group(1) if m else None
    vit = set()
    for name, src in builders.items():
        for m in re.finditer(r"ggml_cgraph\s*\*\s*(clip_graph_\w+)::build\s*\(\s*\)", src):
            b = body_of(src[m.start():], r"::build\s*\(\s*\)")
            depth_text = top_level_text(b)
            if re.search(r"\bbuild_vit\s*\(", depth_text):
                vit.add(m.group(1))
    return out, vit


def builder_asserts(builders):
    """The tensor fields each graph builder (`clip_graph_X::build`) asserts
    non-null outside any `if` or `switch` (in its loops too):
    `GGML_ASSERT(layer.qkv_w != nullptr)`, `model.layers[0].F` read as
    `layer.F`. A projector without such a tensor loads, and libmtmd aborts
    when it builds the graph (its warm-up, or the first image)."""
    out = {}

    def collect(stmts, found):
        for st in stmts:
            if st[0] == "stmt":
                m = re.fullmatch(r"GGML_ASSERT\s*\(\s*(model\.layers\[0\]|model|layer)\.(\w+)\s*!=\s*nullptr\s*\)", st[1])
                if m:
                    found.add(("layer." if m.group(1) != "model" else "model.") + m.group(2))
            elif st[0] == "block":
                collect(st[1], found)
            elif st[0] == "for":
                collect([st[2]], found)

    for src in builders.values():
        for m in re.finditer(r"ggml_cgraph\s*\*\s*(clip_graph_\w+)::build\s*\(\s*\)", src):
            found = set()
            collect(parse_stmts(body_of(src[m.start():], r"::build\s*\(\s*\)")), found)
            out.setdefault(m.group(1), set()).update(found)
    return out


def top_level_text(body: str) -> str:
    """The text of a function body at brace depth 0 (nested blocks blanked)."""
    out, depth, j = [], 0, 0
    while j < len(body):
        c = body[j]
        if c in "\"'":
            k = skip_literal(body, j)
            if depth == 0:
                out.append(body[j:k])
            j = k
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0:
            out.append(c)
        j += 1
    return "".join(out)


# ---------------------------------------------------------------- the table


def analyse(root: pathlib.Path):
    impl, model_h, clip, mtmd_cpp, builders = load(root)
    image_cpp = strip_comments((root / "tools" / "mtmd" / "mtmd-image.cpp").read_text())
    preproc = preprocessors(mtmd_cpp)
    pre_asserts = preprocessor_asserts(image_cpp)
    hand = [(f, cited(root, f["cite"])) for f in HAND_BOUNDS]
    lookups = text_lookups(mtmd_cpp)
    STRUCT_DEFAULTS.clear()
    STRUCT_DEFAULTS.update(struct_defaults(model_h))
    METHOD_ASSIGNS.clear()
    METHOD_ASSIGNS.update(method_assigns(model_h))
    macros = macros_of(impl)
    order, names = projector_names(impl)
    ctor = body_of(clip, r"clip_model_loader\s*\(\s*const\s+char\s*\*\s*fname")
    hp_body = parse_stmts(body_of(clip, r"void\s+load_hparams\s*\(\s*clip_model\s*&"))
    t_body = parse_stmts(body_of(clip, r"void\s+load_tensors\s*\(\s*clip_ctx\s*&"))
    widths = width_exprs(clip)
    bmap, vit_builders = builder_map(clip, builders)
    graph_needs = builder_asserts(builders)
    vision_ok = case_lists(body_of(mtmd_cpp, r"void\s+init_vision\s*\(\s*\)"))
    audio_ok = case_lists(body_of(mtmd_cpp, r"void\s+init_audio\s*\(\s*\)"))
    deepstack = re.search(r"bool\s+has_deepstack\s*\(\s*\)\s*const\s*\{\s*return\s+(\w+)\s*!=\s*nullptr", model_h)

    # reads of the constructor (every file)
    w0 = new_walker(macros, "-", "-")
    walk(w0, parse_stmts(ctor))
    common = [(k, kind, "Optional" if need == "Optional" else need, f) for k, kind, need, f in w0.reads]

    # the type the remap of `qwen2.5o` gives, per modality
    remap = {}
    m = re.search(r"if\s*\(\s*model\.proj_type\s*==\s*(PROJECTOR_TYPE_\w+)\s*\)\s*\{\s*model\.proj_type\s*=\s*modality\s*==\s*CLIP_MODALITY_VISION\s*\?\s*(PROJECTOR_TYPE_\w+)\s*:\s*(PROJECTOR_TYPE_\w+)", clip)
    if m:
        remap[m.group(1)] = (m.group(2), m.group(3))

    types = []
    for enum in order:
        if enum not in names:
            continue
        name = names[enum]
        per_mod = []
        for modality in ("Vision", "Audio"):
            eff = enum
            if enum in remap:
                eff = remap[enum][0 if modality == "Vision" else 1]
            r = analyse_one(macros, eff, modality, hp_body, t_body, widths, bmap, vit_builders, deepstack, vision_ok, audio_ok,
                            graph_needs)
            r["bounds"] = bounds_of(r, eff, modality, preproc, pre_asserts, hand)
            r["lookups"] = lookups.get((modality, eff), [])
            per_mod.append((modality, eff, r))
        types.append((name, enum, per_mod))
    # types reached only by a retype (mlp -> mlp_norm): their widths
    return macros, common, types, names


def analyse_one(macros, enum, modality, hp_body, t_body, widths, bmap, vit_builders, deepstack, vision_ok, audio_ok,
                graph_needs):
    w = new_walker(macros, enum, modality)
    w.arrays = {}
    # the modality's prefix is a ternary over is_vision / is_audio
    walk(w, hp_body)
    hp_refused = w.refused
    hp = dict(w.hfields)
    reads = w.reads
    value_checks = list(w.value_checks)
    min_len, even = list(w.min_len), list(w.even)
    assigned = set(w.assigned)
    accepted = enum in (vision_ok if modality == "Vision" else audio_ok)
    res = {
        "asserts": list(dict.fromkeys(w.asserts)), "limit_calls": list(w.limit_calls), "defaults": dict(w.defaults),
        "reads": reads, "refused": hp_refused, "value_checks": value_checks,
        "min_len": min_len, "even": even, "assigned": assigned, "accepted": accepted,
        "tensors": [], "width": None, "builder": bmap.get(enum), "vit": bmap.get(enum) in vit_builders,
    }
    if hp_refused:
        return res
    t = new_walker(macros, enum, modality, hfields=hp)
    walk(t, t_body)
    res["t_refused"] = t.refused
    res["value_checks"] += [c for c in t.value_checks if c not in res["value_checks"]]
    # A tensor the type's graph builder asserts is required whatever the
    # loader's `required` says.
    needed = graph_needs.get(res["builder"], set())
    res["tensors"] = [(n, loops, "Required" if field in needed else need, field) for n, loops, need, field in t.tensors]
    res["retype"] = t.retype
    res["width"] = resolve_width(t, enum, widths, deepstack, hp)
    res["retype_width"] = [(cond, resolve_width(t, new, widths, deepstack, hp)) for cond, new in t.retype]
    return res


def resolve_width(t, enum, widths, deepstack, hp):
    expr = widths.get(enum)
    if expr is None:
        expr = widths.get("default")
        if expr is None:
            return ("NotChecked", "clip_n_mmproj_embd has no case for this type: GGML_ABORT")
    m = re.fullmatch(r"ctx->model\.([\w\[\].]+)->ne\[(\d)\](.*)", expr)
    if m:
        field, dim, rest = m.group(1), int(m.group(2)), m.group(3).strip()
        name = t.fields.get(field)
        if name is None:
            return ("NotChecked", f"clip_n_mmproj_embd reads `{field}`, which the loader never assigns for this type")
        need = "Optional"
        for n, lps, nd, f in t.tensors:
            if n == name and not lps:
                need = nd
        factor = ("One",)
        if rest:
            fm = re.fullmatch(r"\*\s*\(\s*1\s*\+\s*ctx->model\.(\w+)\s*\)", rest)
            if fm and fm.group(1) in t.counters and deepstack and t.counters[fm.group(1)] == "has_deepstack":
                fld = deepstack.group(1)
                pat = t.layer_fields.get(fld)
                if pat is None:
                    return ("NotChecked", f"`{rest}`: counted tensor not found")
                factor = ("OnePlusLayersWith", pat)
            else:
                return ("NotChecked", f"width factor `{rest}` not understood")
        return ("Tensor", name, dim, need, factor)
    m = re.fullmatch(r"ctx->model\.(\w+)\.size\(\)\s*\*\s*ctx->model\.hparams\.(\w+)", expr)
    if m:
        size = t.sizes.get("model." + m.group(1))
        key = hp.get(m.group(2))
        if isinstance(size, Loop) and size.kind == "arraylen" and isinstance(key, tuple) and key[0] == "key":
            return ("ArrayLenTimesKey", size.arg, key[1])
        return ("NotChecked", f"`{expr}` not resolved")
    return ("NotChecked", f"`{expr}` not understood")


# ---------------------------------------------------------------- rendering
# The table holds no pointer: a `&'static str` or `&'static [T]` in a static
# is a relocation the dynamic loader applies at every start of the program
# (a PIE binary), whether or not it ever reads a projector. Every string is
# a `Text` (byte offsets into the one string TEXT) and every list a `Run`
# (an index range into one flat array of its element type), so the table is
# plain data in .rodata. Equal strings and equal runs are stored once.


def bounds_of(r, enum, modality, preproc, pre_asserts, hand):
    """The value bounds of one type under one modality: (when, clauses, source, outcome)."""
    out = []
    for cond in r["asserts"]:
        out.append(("Load", parse_bound(cond), f"clip.cpp load_hparams: GGML_ASSERT({cond})",
                    "GGML_ASSERT in load_hparams: the process aborts while libmtmd loads the projector"))
    if modality == "Vision":
        for cls in dict.fromkeys(preproc.get(enum, [])):
            for cond in pre_asserts.get(cls, []):
                clauses = parse_bound(cond)
                if clauses is None:
                    continue
                out.append(("FirstImage", clauses,
                            f"mtmd-image.cpp mtmd_image_preprocessor_{cls}::preprocess: GGML_ASSERT({' '.join(cond.split())})",
                            f"libmtmd loads the projector, then its image preprocessor ({cls}) asserts it at the first image: the process aborts"))
        for fact, where in hand:
            if fact["types"] == "set_limit_image_tokens":
                for n_max in dict.fromkeys(r["limit_calls"]):
                    fields, factor = hand_bound(fact, n_max)
                    clause = [(tuple(fields), factor, 0, "<=", ("const", 2147483647))]  # noqa: the atom form of parse_bound
                    out.append((fact["when"], [clause], f"{where} (set_limit_image_tokens(_, {n_max}))",
                                fact["outcome"].format(n_max=n_max)))
    return out


def rs(x: str) -> str:
    return '"' + x.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Encoder:
    """The text blob and the flat arrays (pools) of the rendered table."""

    POOLS = [
        # (pool, element type, static name)
        ("u32", "u32", "U32S"),
        ("index", "Index", "INDICES"),
        ("key", "KeyRead", "KEY_READS"),
        ("tensor", "TensorRead", "TENSOR_READS"),
        ("min_len", "(Text, u32)", "MIN_LENS"),
        ("atom", "Atom", "ATOMS"),
        ("clause", "Clause", "CLAUSES"),
        ("default", "(Text, i64)", "DEFAULTS"),
        ("bound", "Bound", "BOUNDS"),
        ("text", "Text", "TEXTS"),
    ]

    def __init__(self):
        self.texts = []     # (start, string), in order of first use
        self.text_at = {}   # string -> (start, end)
        self.size = 0
        self.pools = {p: [] for p, _, _ in self.POOLS}  # pool -> [(rust expr, comment or None)]

    def t(self, s: str) -> str:
        """A `Text` of `s`."""
        if s not in self.text_at:
            n = len(s.encode("utf-8"))
            self.text_at[s] = (self.size, self.size + n)
            self.texts.append((self.size, s))
            self.size += n
        a, b = self.text_at[s]
        return f"t({a}, {b})"

    def run(self, pool: str, items) -> str:
        """A `Run` of `items` ((rust expr, comment or None)) in `pool`:
        the first place the same exprs already stand in a row, else appended."""
        lst = self.pools[pool]
        exprs = [e for e, _ in items]
        n = len(exprs)
        if n == 0:
            return "r(0, 0)"
        for i in range(len(lst) - n + 1):
            if lst[i][0] == exprs[0] and all(lst[i + j][0] == exprs[j] for j in range(1, n)):
                return f"r({i}, {i + n})"
        start = len(lst)
        lst.extend(items)
        return f"r({start}, {start + n})"

    def need(self, need) -> str:
        if need == "Required":
            return "Need::Required"
        if need == "Optional":
            return "Need::Optional"
        if need[0] == "UnlessTensor":
            return f"Need::UnlessTensor({self.t(need[1])})"
        return f"Need::NotChecked({self.t(need[1])})"

    def index(self, lp: Loop) -> str:
        k = lp.kind
        if k == "layers":
            base = "Count::Layers"
        elif k == "fixed":
            base = f"Count::Fixed({lp.arg})"
        elif k == "list":
            base = f"Count::List({self.run('u32', [(str(x), None) for x in lp.arg])})"
        elif k == "key":
            base = f"Count::Key({self.t(lp.arg)})"
        elif k == "arraylen":
            base = f"Count::ArrayLen({self.t(lp.arg)})"
        elif k == "probe":
            base = "Count::Probe"
        else:
            base = f"Count::NotChecked({self.t('loop bound `' + str(lp.arg) + '` computed at run time')})"
        return f"Index {{ count: {base}, offset: {lp.offset} }}"

    def width(self, wd) -> str:
        if wd is None:
            return f"Width::NotChecked({self.t('the type never loads')})"
        if wd[0] == "NotChecked":
            return f"Width::NotChecked({self.t(wd[1])})"
        if wd[0] == "Tensor":
            _, name, dim, need, factor = wd
            f = "Factor::One" if factor[0] == "One" else f"Factor::OnePlusLayersWith({self.t(factor[1])})"
            return f"Width::Tensor {{ name: {self.t(name)}, dim: {dim}, factor: {f} }}"
        if wd[0] == "ArrayLenTimesKey":
            return f"Width::ArrayLenTimesKey {{ array: {self.t(wd[1])}, key: {self.t(wd[2])} }}"
        raise GenError(str(wd))

    def key_read(self, k, kind, need, field):
        return (f"KeyRead {{ key: {self.t(k)}, kind: KeyKind::{kind}, need: {self.need(need)}, field: {self.t(field)} }}", k)

    OPS = {"<": "Lt", "<=": "Le", ">": "Gt", ">=": "Ge", "==": "Eq", "!=": "Ne"}

    def bound(self, b, defaults) -> str:
        when, clauses, source, outcome = b
        crs = []
        fields = []
        for clause in clauses:
            atoms = []
            for lhs, factor, modulus, op, rhs in clause:
                fields += list(lhs)
                if rhs[0] == "field":
                    fields.append(rhs[1])
                    r = f"Rhs::Field({self.t(rhs[1])})"
                else:
                    r = f"Rhs::Const({rhs[1]})"
                atoms.append((f"Atom {{ lhs: {self.texts_run(lhs)}, factor: {factor}, modulus: {modulus}, op: Op::{self.OPS[op]}, rhs: {r} }}", None))
            crs.append((f"Clause {{ atoms: {self.run('atom', atoms)} }}", None))
        ds = [(f"({self.t(f)}, {defaults[f[len('hparams.'):]]})", None)
              for f in dict.fromkeys(fields) if f[len("hparams."):] in defaults]
        return (f"Bound {{ when: When::{when}, clauses: {self.run('clause', crs)}, defaults: {self.run('default', ds)}, "
                f"source: {self.t(source)}, outcome: {self.t(outcome)} }}")

    def texts_run(self, strings) -> str:
        return self.run("text", [(self.t(s), None) for s in strings])


SHAPE_TENSORS = ("attn_q", "attn_k", "attn_v", "attn_qkv")

TYPES_RS = r'''
//! The contract libmtmd (llama.cpp's tools/mtmd) holds a multimodal projector to, per
//! projector type and modality: the keys clip_model_loader reads (with the type it reads
//! them with and whether it requires them), the tensors it asks for, and where
//! clip_n_mmproj_embd reads the projector's output width. What the loader decides at run
//! time from values the generator cannot know is recorded as `NotChecked` with the reason.
//!
//! Encoding: the table holds no pointer (a pointer in a static is a relocation the
//! dynamic loader applies at every start of the program, projector or not). A string is a
//! [`Text`], byte offsets into [`TEXT`]; a list is a [`Run`], an index range into the flat
//! array of its element type. Equal strings and runs are stored once.
#![allow(dead_code)] // the types declare every variant the generator can write

use std::fmt;
use std::marker::PhantomData;

/// A string of the table: the bytes `start..end` of [`TEXT`].
#[derive(Clone, Copy)]
pub(crate) struct Text(u32, u32);

impl Text {
    /// The string (empty for offsets out of range or off a char boundary, which the
    /// generator never writes).
    pub(crate) fn as_str(self) -> &'static str {
        TEXT.get(self.0 as usize..self.1 as usize).unwrap_or("")
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The element types of the flat arrays: `all()` is the array.
pub(crate) trait Pool: Sized + 'static {
    fn all() -> &'static [Self];
}

/// A list of the table: the elements `start..end` of `T::all()`.
pub(crate) struct Run<T>(u32, u32, PhantomData<fn() -> T>);

impl<T: Pool> Run<T> {
    /// The elements (empty for a range out of bounds, which the generator never writes).
    pub(crate) fn slice(self) -> &'static [T] {
        T::all().get(self.0 as usize..self.1 as usize).unwrap_or(&[])
    }
}

impl<T> Clone for Run<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Run<T> {}

impl<T: Pool + PartialEq> PartialEq for Run<T> {
    fn eq(&self, other: &Self) -> bool {
        self.slice() == other.slice()
    }
}

impl<T: Pool + Eq> Eq for Run<T> {}

impl<T: Pool + fmt::Debug> fmt::Debug for Run<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.slice()).finish()
    }
}

const fn t(start: u32, end: u32) -> Text {
    Text(start, end)
}

const fn r<T>(start: u32, end: u32) -> Run<T> {
    Run(start, end, PhantomData)
}

/// How libmtmd reads a key: `gguf_get_val_*` (aborts on another type) or, for
/// arrays, get_arr_int / get_arr_f32 (refuse another type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyKind { U32, I32, F32, Bool, Str, ArrInt, ArrF32 }

/// Whether libmtmd needs a key or tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Always: libmtmd refuses the file without it.
    Required,
    /// Read when present.
    Optional,
    /// Required unless the named tensor (same indices) exists.
    UnlessTensor(Text),
    /// Required under a condition decided at run time: not checked (the reason).
    NotChecked(Text),
}

/// How many values a `{}` of a tensor name takes, from 0 (plus `offset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Count {
    /// `block_count` of the modality.
    Layers,
    /// A fixed count.
    Fixed(u32),
    /// The listed values only.
    List(Run<u32>),
    /// The value of a u32 key.
    Key(Text),
    /// The length of an array key.
    ArrayLen(Text),
    /// Indices from 0 while a probed tensor exists.
    Probe,
    /// Not checked (the reason).
    NotChecked(Text),
}

/// One `{}` of a tensor name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Index { pub(crate) count: Count, pub(crate) offset: u32 }

/// A key the loader reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyRead { pub(crate) key: Text, pub(crate) kind: KeyKind, pub(crate) need: Need, pub(crate) field: Text }

/// A tensor the loader asks for; `{}` in `name` for each entry of `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TensorRead {
    pub(crate) name: Text,
    pub(crate) index: Run<Index>,
    pub(crate) need: Need,
    /// `ne[0]` must equal this key's value (the encoder multiplies its
    /// `embedding_length`-wide input by it: ggml_mul_mat asserts), or None.
    pub(crate) ne0_key: Option<Text>,
}

/// A multiplier of the output width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Factor {
    One,
    /// 1 + the number of layers (below `block_count`) where this tensor exists (qwen3vl deepstack).
    OnePlusLayersWith(Text),
}

/// Where clip_n_mmproj_embd reads the output width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    /// `ne[dim]` of a tensor, times a factor.
    Tensor { name: Text, dim: u8, factor: Factor },
    /// An array key's length times a u32 key's value.
    ArrayLenTimesKey { array: Text, key: Text },
    /// Not computable from the file (the reason).
    NotChecked(Text),
}

/// The projector type as libmtmd loads it under one modality.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Contract {
    /// The projector_type enum the loader uses (after the qwen2.5o remap).
    pub(crate) enum_name: Text,
    /// Why libmtmd refuses this type under this modality (load_hparams / load_tensors
    /// throw or abort, or mtmd's init_vision / init_audio do not accept it), or None.
    pub(crate) refused: Option<Text>,
    /// Keys load_hparams reads for this type (beyond [`COMMON_KEYS`]).
    pub(crate) keys: Run<KeyRead>,
    /// Array keys the loader refuses below a length (a missing key has length 0).
    pub(crate) min_len: Run<(Text, u32)>,
    /// Array keys whose length must be even.
    pub(crate) even: Run<Text>,
    /// hparams fields whose final value the type's code sets (after any read of the file's).
    pub(crate) overrides: Run<Text>,
    pub(crate) tensors: Run<TensorRead>,
    pub(crate) width: Width,
    /// A retype: when the tensor exists, the width is read as the other type's.
    pub(crate) retype: Option<(Text, Width)>,
    /// The graph builder runs build_vit over the encoder layers.
    pub(crate) vit: bool,
    /// Run-time checks (throws, asserts) on values the table does not evaluate.
    pub(crate) not_checked: Run<Text>,
    /// Conditions on hyper-parameter values libmtmd asserts (the process
    /// aborts when one fails), at load or at the first image.
    pub(crate) bounds: Run<Bound>,
    /// Token texts libmtmd looks up in the text model's vocabulary for this
    /// type (mtmd.cpp init_vision / init_audio, `lookup_token`) and puts,
    /// unchecked, around the slices and overview of a tiled image.
    pub(crate) lookups: Run<Text>,
}

/// When a value bound bites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum When {
    /// While libmtmd loads the projector (load_hparams).
    Load,
    /// After it loaded, at the first image (the image preprocessor).
    FirstImage,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op { Lt, Le, Gt, Ge, Eq, Ne }

/// The right side of an [`Atom`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rhs {
    Const(i64),
    /// Another hyper-parameter (`hparams.F`).
    Field(Text),
}

/// `factor` times the product of the `lhs` hyper-parameters (`hparams.F`),
/// taken modulo `modulus` when it is not 0, compared with `rhs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Atom { pub(crate) lhs: Run<Text>, pub(crate) factor: i64, pub(crate) modulus: u32, pub(crate) op: Op, pub(crate) rhs: Rhs }

/// Atoms that must all hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clause { pub(crate) atoms: Run<Atom> }

/// A condition on hyper-parameter values: it holds when one of its clauses
/// holds. A field takes the file's value (the key the contract reads into
/// it), else its default when the key is absent; a bound naming a field of
/// neither is not evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bound {
    pub(crate) when: When,
    pub(crate) clauses: Run<Clause>,
    /// The value a field holds when its optional key is absent.
    pub(crate) defaults: Run<(Text, i64)>,
    /// Where: the file, function and condition of the source.
    pub(crate) source: Text,
    /// What happens when it fails.
    pub(crate) outcome: Text,
}

/// One projector type name llama.cpp knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProjectorType {
    /// The name in PROJECTOR_TYPE_NAMES (the value of `clip.projector_type`).
    pub(crate) name: Text,
    pub(crate) vision: Contract,
    pub(crate) audio: Contract,
}
'''


def render(root: pathlib.Path) -> str:
    macros, common, types, names = analyse(root)
    enc = Encoder()

    common_rows = [enc.key_read(*read) for read in common]

    type_rows = []  # lines of PROJECTOR_TYPES
    for i, (name, enum, per_mod) in enumerate(types):
        type_rows.append(f"    // {i}: {name}")
        type_rows.append("    ProjectorType {")
        type_rows.append(f"        name: {enc.t(name)},")
        for modality, eff, r in per_mod:
            type_rows.append(f"        {modality.lower()}: Contract {{")
            type_rows.append(f"            enum_name: {enc.t(eff)},")
            refused = r["refused"] or r.get("t_refused")
            if refused:
                refused = "load_hparams: " + refused if r["refused"] else "load_tensors: " + refused
            elif not r["accepted"]:
                refused = f"mtmd.cpp init_{modality.lower()} does not accept {eff} (\"unexpected {modality.lower()} projector type\")"
            type_rows.append(f"            refused: {('Some(' + enc.t(refused) + ')') if refused else 'None'},")
            keys = []
            seen = set()
            for k, kind, need, field in r["reads"]:
                if (k, kind, str(need)) in seen:
                    continue
                seen.add((k, kind, str(need)))
                keys.append(enc.key_read(k, kind, need, field))
            type_rows.append(f"            keys: {enc.run('key', keys)},")
            min_len = [(f"({enc.t(k)}, {n})", k) for k, n in r["min_len"]]
            type_rows.append(f"            min_len: {enc.run('min_len', min_len)},")
            type_rows.append(f"            even: {enc.texts_run(r['even'])},")
            type_rows.append(f"            overrides: {enc.texts_run(sorted(r['assigned']))},")
            emb = ("clip.vision.embedding_length" if modality == "Vision" else "clip.audio.embedding_length")
            tensors = []
            seen_t = set()
            for n, lps, need, field in r["tensors"]:
                key = (n, str(need))
                if key in seen_t:
                    continue
                seen_t.add(key)
                ne0 = "None"
                m = re.fullmatch(r"[va]\.blk\.\{\}\.(\w+)\.weight", n)
                if r["vit"] and m and m.group(1) in SHAPE_TENSORS and len(lps) == 1 and lps[0].kind == "layers":
                    ne0 = f"Some({enc.t(emb)})"
                idx = enc.run("index", [(enc.index(lp), None) for lp in lps])
                tensors.append((f"TensorRead {{ name: {enc.t(n)}, index: {idx}, need: {enc.need(need)}, ne0_key: {ne0} }}", n))
            type_rows.append(f"            tensors: {enc.run('tensor', tensors)},")
            type_rows.append(f"            width: {enc.width(r['width'])},")
            rt = r.get("retype_width") or []
            if rt:
                cond, wd = rt[0]
                type_rows.append(f"            retype: Some(({enc.t(cond)}, {enc.width(wd)})),")
            else:
                type_rows.append("            retype: None,")
            type_rows.append(f"            vit: {'true' if r['vit'] else 'false'},")
            checks = [" ".join(c.split()) for c in dict.fromkeys(r["value_checks"])]
            type_rows.append(f"            not_checked: {enc.texts_run(checks)},")
            bounds = [(enc.bound(b, r.get("defaults", {})), None) for b in r.get("bounds", [])]
            type_rows.append(f"            bounds: {enc.run('bound', bounds)},")
            type_rows.append(f"            lookups: {enc.texts_run(r.get('lookups', []))},")
            type_rows.append("        },")
        type_rows.append("    },")

    lines = [
        "// Generated by conformance/tools/mtmd/gen_clip_table.py from " + VERSION + ":",
        "// " + ", ".join(SOURCES) + ".",
        "// Do not edit by hand: re-run the generator (CI runs it with --check).",
    ]
    lines += TYPES_RS.rstrip("\n").split("\n")
    lines += ["", "/// Keys the loader's constructor reads from every projector file.",
              f"pub(crate) static COMMON_KEYS: [KeyRead; {len(common_rows)}] = ["]
    lines += [f"    {e}, // {c}" for e, c in common_rows]
    lines += ["];", "", "/// Every projector type name in PROJECTOR_TYPE_NAMES, in enum order.",
              f"pub(crate) static PROJECTOR_TYPES: [ProjectorType; {len(types)}] = ["]
    lines += type_rows
    lines += ["];"]
    for pool, ty, static in Encoder.POOLS:
        items = enc.pools[pool]
        lines += ["", f"static {static}: [{ty}; {len(items)}] = ["]
        for i, (e, c) in enumerate(items):
            lines.append(f"    {e}, // {i}" + (f": {c}" if c is not None else ""))
        lines += ["];", "", f"impl Pool for {ty} {{", "    fn all() -> &'static [Self] {", f"        &{static}", "    }", "}"]
    if enc.size > 0xFFFF_FFFF:
        raise GenError("the text blob exceeds u32 offsets")
    lines += ["", "/// Every string of the table, each once: a [`Text`] is a byte range of it.",
              "const TEXT: &str = concat!("]
    lines += [f"    /* {start} */ {rs(s)}," for start, s in enc.texts]
    lines += [");", ""]
    return "\n".join(lines)


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv
    if not args:
        print("usage: gen_clip_table.py LLAMA_CPP_DIR [OUT] [--check]", file=sys.stderr)
        return 2
    root = pathlib.Path(args[0])
    out = pathlib.Path(args[1]) if len(args) > 1 else pathlib.Path(__file__).resolve().parents[3] / "parser/core/src/check/clip_table.rs"
    try:
        new = render(root)
    except (GenError, OSError, ValueError) as e:
        print(f"gen_clip_table.py: cannot read the sources: {e}", file=sys.stderr)
        return 2
    return write_or_check(out, new, "conformance/tools/mtmd/gen_clip_table.py", check)


if __name__ == "__main__":
    sys.exit(main())
