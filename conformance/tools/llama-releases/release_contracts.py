"""What a llama.cpp release's model loader needs of a model beyond the names
(gen_release_facts.py reads those): per architecture, the hyper-parameter
keys it requires, the tensors it requires, every tensor it creates, and the
shapes it checks. Read from the release's own source, for the releases
whose loader is one `switch (arch)` in `load_hparams` and `load_tensors`
(src/llama.cpp, then src/llama-model.cpp: b3889 to b8390). Later releases
give every architecture a class of its own (src/models/*.cpp); their
contract is the pinned tree's (conformance/tools/llama-arch/), and a
release of them that the switch reader meets yields nothing here.

What the reading cannot see, it leaves out rather than guesses, so that a
fact here is one the release's loader holds every file to:

- a key is required when `ml.get_key`, `get_arr`, `get_key_or_arr` or
  `get_arr_n` reads it without `required = false` in a statement outside
  any condition, loop or early exit of the architecture's case (or of the
  common part of load_hparams before the switch);
- a tensor is required when `create_tensor` creates it without
  `TENSOR_NOT_REQUIRED`, outside any condition, at the case's top level or
  at the top level of its `for (int i = 0; i < n_layer; ++i)` loop (then
  for every layer);
- the tensors a case creates (anywhere in it) are the complete list only
  when every creation names a literal tensor and suffix and nothing else
  creates tensors there; a file tensor outside a complete list is refused
  (`wrong number of tensors`);
- a shape is kept when every creation of the tensor in the case gives the
  same dimensions; a dimension naming a variable the case declares itself
  is written `?` (not evaluated).
"""
import pathlib
import re
import sys

# The argument splitter of the pinned tree's generator (conformance/tools/llama-arch/).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "llama-arch"))
from gen_arch_table import split_args  # noqa: E402

LAYER_LOOP = re.compile(r"^for\s*\(\s*(?:int|int32_t|uint32_t|int64_t)\s+i\s*=\s*0\s*;\s*i\s*<\s*n_layer\s*;\s*(?:\+\+i|i\+\+)\s*\)$")
KEY_READS = ("get_key", "get_arr", "get_key_or_arr", "get_arr_n")
# Arguments of a read call, without `required`.
KEY_ARGS = {"get_key": 2, "get_arr": 2, "get_key_or_arr": 3, "get_arr_n": 2}


COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip_comments(text: str) -> str:
    """The text without comments; string and character literals kept whole
    (a `//` inside a string is not a comment)."""
    return COMMENT_OR_LITERAL.sub(lambda m: " " if m.group(0)[0] == "/" else m.group(0), text)


def matching(text: str, at: int, open_c: str, close_c: str) -> int:
    """Index of the bracket closing the one at `at` (string literals skipped)."""
    depth = 0
    i = at
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced")


def function_body(text: str, signature: str):
    m = re.search(signature, text)
    if not m:
        return None
    at = text.index("{", m.end())
    return text[at + 1:matching(text, at, "{", "}")]


def arch_switch(body: str):
    """The cases of the first `switch` over the architecture: {ARCH_ENUM: case body}."""
    m = re.search(r"switch\s*\(\s*(?:model\.)?arch\s*\)\s*\{", body)
    if not m:
        return {}
    start = m.end() - 1
    sw = body[start + 1:matching(body, start, "{", "}")]
    cases, labels, i = {}, [], 0
    while i < len(sw):
        lm = re.compile(r"\s*case\s+(LLM_ARCH_\w+)\s*:").match(sw, i)
        if lm:
            labels.append(lm.group(1))
            i = lm.end()
            continue
        dm = re.compile(r"\s*default\s*:").match(sw, i)
        if dm:
            labels = []
            i = dm.end()
            continue
        c = sw[i]
        if c == "{":
            end = matching(sw, i, "{", "}")
            for label in labels:
                cases[label] = sw[i + 1:end]
            labels = []
            i = end + 1
            continue
        if c == ";":
            labels = []
        i += 1
    return cases


def statements(body: str):
    """(statement, context) for every statement: context is the list of
    the headers of the blocks around it (`plain` for a bare block, `layers`
    for the n_layer loop, `cond` for anything else), plus `cond` after an
    early `return`/`break`/`throw` of the block or for a statement that is
    the body of a brace-less `if`/`else`/loop."""
    out = []
    stack = []  # contexts of the open blocks
    exited = [False]
    cur = []
    paren = 0
    i = 0
    while i < len(body):
        c = body[i]
        if c == '"':
            j = i + 1
            while j < len(body) and body[j] != '"':
                j += 2 if body[j] == "\\" else 1
            cur.append(body[i:j + 1])
            i = j + 1
            continue
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        if paren == 0 and c == "{":
            header = "".join(cur).strip()
            if header in ("", "do"):
                ctx = "plain" if header == "" else "cond"
            elif LAYER_LOOP.match(header):
                ctx = "layers"
            else:
                # a condition, another loop, a lambda, an initialiser
                ctx = "cond"
            stack.append(ctx)
            exited.append(exited[-1])
            cur = []
        elif paren == 0 and c == "}":
            if stack:
                stack.pop()
                exited.pop()
            cur = []
        elif paren == 0 and c == ";":
            stmt = "".join(cur).strip()
            ctx = list(stack)
            if re.match(r"(if|else|for|while|switch|case|default)\b", stmt) or exited[-1]:
                ctx.append("cond")
            out.append((stmt, ctx))
            if re.match(r"(return|break|continue|throw)\b", stmt):
                exited[-1] = True
            cur = []
        else:
            cur.append(c)
        i += 1
    return out


def unconditional(ctx: list) -> bool:
    return all(c == "plain" for c in ctx)


def in_layer_loop(ctx: list) -> bool:
    rest = [c for c in ctx if c != "plain"]
    return rest == ["layers"]


def kv_names(text: str) -> dict:
    at = text.index("LLM_KV_NAMES")
    body = text[at:text.index("};", at)]
    return dict(re.findall(r'\{\s*(LLM_KV_\w+)\s*,\s*"([^"]*)"\s*\}', body))


def tensor_names(text: str) -> dict:
    """{(arch enum or None, tensor enum): name format}: per architecture
    where the release's table is nested, else one flat table (None)."""
    at = text.index("LLM_TENSOR_NAMES")
    end = text.index("{", at)
    body = text[end:matching(text, end, "{", "}") + 1]
    names = {}
    for m in re.finditer(r"\{\s*(LLM_ARCH_\w+)\s*,\s*\{", body):
        inner_at = m.end() - 1
        inner = body[inner_at:matching(body, inner_at, "{", "}")]
        for t, n in re.findall(r'\{\s*(LLM_TENSOR_\w+)\s*,\s*"([^"]*)"\s*\}', inner):
            names[(m.group(1), t)] = n
    if not names:
        for t, n in re.findall(r'\{\s*(LLM_TENSOR_\w+)\s*,\s*"([^"]*)"\s*\}', body):
            names[(None, t)] = n
    return names


def key_of(fmt: str):
    """A key format as the table writes it: `ARCH.` keys without it, others whole."""
    if fmt.startswith("%s."):
        return fmt[3:]
    if "%" in fmt:
        return None
    return "=" + fmt


def required_keys(stmts: list, kvs: dict) -> set:
    out = set()
    for stmt, ctx in stmts:
        if not unconditional(ctx):
            continue
        m = re.match(r"(?:\(void\)\s*)?ml\.(get_key_or_arr|get_key|get_arr_n|get_arr)\s*\(", stmt)
        if not m:
            continue
        at = m.end() - 1
        try:
            args = split_args(stmt[at + 1:matching(stmt, at, "(", ")")])
        except ValueError:
            continue
        call = m.group(1)
        if not args or not re.fullmatch(r"LLM_KV_\w+", args[0]):
            continue
        # `required` is the last argument when given (an overload of
        # get_key_or_arr without the count takes it third).
        if len(args) > 2 and args[-1] == "false":
            continue
        if len(args) > KEY_ARGS[call] and args[KEY_ARGS[call]] not in ("true", "false"):
            continue
        # `a || b`: the second read is a fallback, the first not required.
        if stmt[matching(stmt, at, "(", ")") + 1:].strip():
            continue
        name = key_of(kvs.get(args[0], "%"))
        if name:
            out.add(name)
    return out


CREATE = re.compile(r"\bcreate_tensor\s*\(")


def tensor_facts(case: str, arch_enum: str, tnames: dict):
    """(required, created, complete, shapes) of one load_tensors case."""
    stmts = statements(case)
    declared = set(re.findall(r"\b(?:const\s+)?(?:int64_t|int32_t|uint32_t|int|auto|float|bool|size_t)\s+(\w+)\s*=", case))
    required, created, shapes = set(), set(), {}
    complete = not re.search(r"\bcreate_(?!tensor\b)\w+\s*\(|create_tensor_as_view", case)
    for stmt, ctx in stmts:
        for m in CREATE.finditer(stmt):
            at = m.end() - 1
            try:
                args = split_args(stmt[at + 1:matching(stmt, at, "(", ")")])
            except ValueError:
                complete = False
                continue
            tn_at = next((k for k, a in enumerate(args) if a.startswith("tn(")), None)
            if tn_at is None:
                complete = False
                continue
            tn_args = split_args(args[tn_at][3:-1])
            enum = tn_args[0] if tn_args else ""
            nested = any(a is not None for a, _ in tnames)
            fmt = tnames.get((arch_enum, enum)) if nested else tnames.get((None, enum))
            if fmt is None and nested and any(t == enum for _, t in tnames):
                # Not in this architecture's table: the name is
                # "__missing__", which no file tensor has.
                continue
            if fmt is None:
                complete = False
                continue
            suffix = None
            rest = tn_args[1:]
            if rest and re.fullmatch(r'"[^"]*"', rest[0]):
                suffix = rest[0][1:-1]
                rest = rest[1:]
            elif rest and rest[0].startswith('"'):
                complete = False
                continue
            name = fmt + ("." + suffix if suffix else "")
            # format() ignores indices the name has no `%d` for.
            if name.count("%d") > len(rest):
                complete = False
                continue
            rest = rest[:name.count("%d")]
            pattern = name.replace("%d", "{}")
            created.add(pattern)
            flags = args[tn_at + 2] if len(args) > tn_at + 2 else "0"
            optional = "NOT_REQUIRED" in flags
            plain_flags = re.fullmatch(r"(?:llama_model_loader::)?(?:0|TENSOR_DUPLICATED)", flags.strip()) is not None
            per_layer = rest == ["i"]
            if not optional and plain_flags:
                if (not rest and unconditional(ctx)) or (per_layer and in_layer_loop(ctx)):
                    required.add(pattern)
            dims = args[tn_at + 1] if len(args) > tn_at + 1 else ""
            if dims.startswith("{") and dims.endswith("}"):
                shown = []
                for d in split_args(dims[1:-1]):
                    d = re.sub(r"\s+", " ", d.strip())
                    names = set(re.findall(r"[A-Za-z_][\w.]*(?:\(\))?", d))
                    if any(n in declared for n in names) or "(" in d.replace("()", "") or "?" in d:
                        d = "?"
                    shown.append(d)
                shape = ",".join(shown)
            else:
                shape = None
            shapes.setdefault(pattern, set()).add(shape)
    kept = {p: next(iter(s)) for p, s in shapes.items() if len(s) == 1 and None not in s and any(d != "?" for d in next(iter(s)).split(","))}
    return required, created, complete, kept


def contracts(text: str, arch_names: dict) -> dict:
    """{architecture name: {"key": set, "tensor": set, "creates": set or
    None, "shape": {pattern: dims}}} for a release whose loader is one
    switch; {} for a release it does not recognise."""
    text = strip_comments(text)
    hp = function_body(text, r"(?:(?:static\s+)?void\s+llm_load_hparams\s*\(|void\s+llama_model::load_hparams\s*\()")
    lt = function_body(text, r"(?:static\s+bool\s+llm_load_tensors\s*\(|bool\s+llama_model::load_tensors\s*\()")
    if hp is None or lt is None:
        return {}
    hp_cases, lt_cases = arch_switch(hp), arch_switch(lt)
    if len(lt_cases) < 10:
        return {}
    kvs = kv_names(text)
    tnames = tensor_names(text)
    switch_at = re.search(r"switch\s*\(\s*(?:model\.)?arch\s*\)", hp)
    common = required_keys(statements(hp[:switch_at.start()]), kvs) if switch_at else set()
    out = {}
    for enum, name in arch_names.items():
        if enum not in lt_cases:
            continue
        keys = set(common)
        if enum in hp_cases:
            keys |= required_keys(statements(hp_cases[enum]), kvs)
        required, created, complete, shapes = tensor_facts(lt_cases[enum], enum, tnames)
        out[name] = {"key": keys, "tensor": required, "creates": created if complete else None, "shape": shapes}
    return out
