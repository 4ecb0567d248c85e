"""Keys llama.cpp's `load_hparams` requires only under a condition.

A required read (`ml.get_key(KEY, var)`, `get_arr`, `get_key_or_arr`,
`get_arr_n` without a `false` `required` argument) inside an `if`, an `else`,
a `switch` case, a loop, or after an early `return` / `throw` is required
only when the conditions on the way to it hold. This module walks a
function body statement by statement, keeps those conditions, and
translates each into a small expression the validator evaluates:

    expr  := or ; or := and ('||' and)* ; and := not ('&&' not)*
    not   := '!' not | cmp ; cmp := atom (('=='|'!='|'<'|'<='|'>'|'>=') atom)?
    atom  := INT | NAME | 'key(' KEY [',' expr] ')' | 'len(' KEY [',' expr] ')'
           | 'has(' KEY ')' | '(' expr ')'

NAME is one of the hyper-parameters the validator reads as llama.cpp does
(`n_layer`, `n_layer_all`, `n_embd`, `n_expert`, `n_expert_used`, `n_vocab`);
`key(K, d)` is the integer value of key K (d when it is absent), `len(K, d)`
the length of array K, `has(K)` 1 when K is present. KEY may contain
`{arch}`. A comparison of `arch` with an LLM_ARCH_ value is decided per
architecture when the table is generated.

What cannot be translated (a loop, a C call or a variable the walk cannot
follow) is kept with the C text of its condition and the source line, and
the validator does not evaluate it.
"""
from __future__ import annotations

import re

# ------------------------------------------------------------ source walking


def strip_comments_keep_lines(text: str) -> str:
    """Comments replaced by spaces; newlines kept (line numbers stay right)."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:j]))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _match(s: str, i: int, o: str, c: str) -> int:
    d = 0
    for j in range(i, len(s)):
        if s[j] == o:
            d += 1
        elif s[j] == c:
            d -= 1
            if d == 0:
                return j
    return len(s)


def _ws(s: str, i: int) -> int:
    while i < len(s) and s[i].isspace():
        i += 1
    return i


class Walker:
    """Statements of a function body with the conditions that reach them.

    A condition is ("if", C) (C holds), ("not", C) (C does not hold),
    ("case", VAR, labels, all_labels) or ("loop", HEAD)."""

    def __init__(self, text: str, offset: int):
        self.text = text
        self.offset = offset          # of text[0] in the file, for line numbers
        self.out: list[tuple[str, list, int]] = []

    def block(self, lo: int, hi: int, conds: list) -> bool:
        """Statements of text[lo:hi]; True when the block always leaves."""
        i = lo
        conds = list(conds)
        while True:
            i = _ws(self.text, i)
            if i >= hi:
                return False
            i, leaves, after = self.stmt(i, hi, conds)
            if leaves:
                return True
            conds = conds + after

    def stmt(self, i: int, hi: int, conds: list):
        """One statement at text[i:]: (end, always leaves, conditions the
        statements after it gain (from an early return))."""
        s = self.text
        m = re.match(r"(if|while|for|switch)\s*\(", s[i:hi])
        if m:
            kw = m.group(1)
            p = i + m.end() - 1
            q = _match(s, p, "(", ")")
            cond = " ".join(s[p + 1:q].split())
            if kw == "if":
                j, then_leaves, _ = self.stmt(_ws(s, q + 1), hi, conds + [("if", cond)])
                k = _ws(s, j)
                else_leaves = False
                if re.match(r"else\b", s[k:hi]):
                    j, else_leaves, _ = self.stmt(_ws(s, k + 4), hi, conds + [("not", cond)])
                if then_leaves and else_leaves:
                    return j, True, []
                if then_leaves:
                    return j, False, [("not", cond)]
                if else_leaves:
                    return j, False, [("if", cond)]
                return j, False, []
            if kw == "switch":
                k = _ws(s, q + 1)
                e = _match(s, k, "{", "}")
                self.switch(k + 1, e, cond, conds)
                return e + 1, False, []
            j, _, _ = self.stmt(_ws(s, q + 1), hi, conds + [("loop", f"{kw} ({cond})")])
            return j, False, []
        if re.match(r"do\b", s[i:hi]):
            j, _, _ = self.stmt(_ws(s, i + 2), hi, conds + [("loop", "do")])
            k = _ws(s, j)
            m = re.match(r"while\s*\(", s[k:hi])
            if m:
                q = _match(s, k + m.end() - 1, "(", ")")
                j = s.index(";", q) + 1
            return j, False, []
        if s[i] == "{":
            e = _match(s, i, "{", "}")
            return e + 1, self.block(i + 1, e, conds), []
        d = 0
        j = i
        while j < hi:
            c = s[j]
            if c in "({[":
                d += 1
            elif c in ")}]":
                d -= 1
            elif c == ";" and d == 0:
                break
            j += 1
        text = " ".join(s[i:j].split())
        self.out.append((text, conds, self.offset + i))
        # Only a `return` makes what follows conditional: after a `throw` the
        # file is refused either way.
        return j + 1, bool(re.match(r"return\b", text)), []

    def switch(self, lo: int, hi: int, var: str, conds: list) -> None:
        s = self.text
        i = lo
        labels: list[str] = []
        all_labels = [x.strip() for x in re.findall(r"case\s+([^:]+):", s[lo:hi])]
        fell = True
        while True:
            i = _ws(s, i)
            if i >= hi:
                return
            m = re.match(r"case\s+([^:]+):|default\s*:", s[i:hi])
            if m:
                if not fell:
                    labels = []
                labels.append(m.group(1).strip() if m.group(1) else "default")
                fell = True
                i += m.end()
                continue
            before = len(self.out)
            i, leaves, _ = self.stmt(i, hi, conds + [("case", var, tuple(labels), tuple(all_labels))])
            last = self.out[-1][0] if len(self.out) > before else ""
            fell = not (leaves or re.match(r"break\b", last))


# ------------------------------------------------------------ translation

READ_CALL = re.compile(r"ml\.(get_key_or_arr|get_key|get_arr_n|get_arr)\(")


def split_args(s: str) -> list[str]:
    out, depth, cur = [], 0, []
    for c in s:
        if c in "({[<":
            depth += 1
        elif c in ")}]>":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def read_calls(stmt: str):
    """(call, kv enum, target, required, start, end) of every loader read."""
    res = []
    for m in READ_CALL.finditer(stmt):
        p = m.end() - 1
        q = _match(stmt, p, "(", ")")
        args = split_args(stmt[p + 1:q])
        if len(args) < 2:
            continue
        call = m.group(1)
        flag_at = 3 if call == "get_key_or_arr" and len(args) >= 4 else 2
        if call == "get_key_or_arr" and len(args) == 3 and args[2] in ("false", "true"):
            flag_at = 2
        flag = args[flag_at] if len(args) > flag_at else "true"
        required = flag not in ("false", "0")
        res.append((call, args[0], args[1], required, m.start(), q + 1))
    return res


# Hyper-parameters the validator evaluates, by the C names llama.cpp uses.
HPARAM_NAMES = {
    # strict judges a full load, never a vocab_only one
    "hparams.vocab_only": "0",
    "hparams.n_layer()": "n_layer",
    "hparams.n_layer_all": "n_layer_all",
    "hparams.n_embd": "n_embd",
    "hparams.n_expert": "n_expert",
    "hparams.n_expert_used()": "n_expert_used",
    "n_layer": "n_layer",
    "n_embd": "n_embd",
    "n_expert": "n_expert",
    "n_expert_used": "n_expert_used",
}

TOKEN = re.compile(r"\s*(\d+[uUlL]*|&&|\|\||==|!=|<=|>=|[<>!()]|ml\.\w+\(|[A-Za-z_][\w.]*(?:\(\))?(?:->\w+)?)")


class Untranslatable(Exception):
    pass


class Translator:
    """C condition -> expression of the module docstring, with an
    environment of what each variable holds (an expression, or None when
    it cannot be followed)."""

    def __init__(self, arch_enum: str, kv_names: dict, arch_enums: dict, env: dict):
        self.arch_enum = arch_enum
        self.kv_names = kv_names
        self.arch_enums = arch_enums
        self.env = env

    def key(self, kv: str) -> str:
        fmt = self.kv_names.get(kv)
        if fmt is None:
            raise Untranslatable(kv)
        return fmt.replace("%s", "{arch}")

    def value_of(self, name: str) -> str:
        if name in self.env:
            v = self.env[name]
            if v is None:
                raise Untranslatable(name)
            return v
        if name in HPARAM_NAMES:
            return HPARAM_NAMES[name]
        raise Untranslatable(name)

    def translate(self, c: str) -> str:
        self.s = c
        self.toks = []
        i = 0
        while i < len(c):
            m = TOKEN.match(c, i)
            if not m or m.end() == i:
                if c[i:].strip() == "":
                    break
                raise Untranslatable(c[i:])
            tok = m.group(1)
            if tok == "ml.get_arch(":
                q = _match(c, m.end() - 1, "(", ")")
                self.toks.append(("tok", "arch"))
                i = q + 1
                continue
            if tok.startswith("ml."):
                q = _match(c, m.end() - 1, "(", ")")
                self.toks.append(("call", c[m.start(1):q + 1]))
                i = q + 1
                continue
            self.toks.append(("tok", tok))
            i = m.end()
        self.at = 0
        e = self.or_()
        if self.at != len(self.toks):
            raise Untranslatable(c)
        return e

    def peek(self):
        return self.toks[self.at] if self.at < len(self.toks) else (None, None)

    def take(self):
        t = self.peek()
        self.at += 1
        return t

    def or_(self):
        parts = [self.and_()]
        while self.peek() == ("tok", "||"):
            self.take()
            parts.append(self.and_())
        if "1" in parts:
            return "1"
        parts = [p for p in parts if p != "0"] or ["0"]
        return parts[0] if len(parts) == 1 else " || ".join(parts)

    def and_(self):
        parts = [self.not_()]
        while self.peek() == ("tok", "&&"):
            self.take()
            parts.append(self.not_())
        if "0" in parts:
            return "0"
        parts = [p for p in parts if p != "1"] or ["1"]
        wrap = [f"({p})" if len(_split_top(p, " || ")) > 1 else p for p in parts]
        return wrap[0] if len(wrap) == 1 else " && ".join(wrap)

    def not_(self):
        if self.peek() == ("tok", "!"):
            self.take()
            inner = self.not_()
            if inner in ("0", "1"):
                return "1" if inner == "0" else "0"
            return f"!{inner}" if _atomic(inner) else f"!({inner})"
        return self.cmp()

    def cmp(self):
        # `arch == LLM_ARCH_X` is decided now.
        k, t = self.peek()
        if t == "arch" and self.at + 2 < len(self.toks) and self.toks[self.at + 1][1] in ("==", "!="):
            op = self.toks[self.at + 1][1]
            other = self.toks[self.at + 2][1]
            if other in self.arch_enums:
                self.at += 3
                eq = other == self.arch_enum
                return "1" if eq == (op == "==") else "0"
        left = self.atom()
        k, t = self.peek()
        if t in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            right = self.atom()
            if left.isdigit() and right.isdigit():
                a, b = int(left), int(right)
                r = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[t]
                return "1" if r else "0"
            return f"{left} {t} {right}"
        return left

    def atom(self):
        k, t = self.take()
        if k is None:
            raise Untranslatable(self.s)
        if k == "call":
            return self.call(t)
        if t == "(":
            e = self.or_()
            if self.take() != ("tok", ")"):
                raise Untranslatable(self.s)
            return e if _atomic(e) else f"({e})"
        if re.fullmatch(r"\d+[uUlL]*", t):
            return str(int(t.rstrip("uUlL")))
        if t in ("true", "false"):
            return "1" if t == "true" else "0"
        v = self.value_of(t)
        return v if _atomic(v) else f"({v})"

    def call(self, text: str):
        """A loader read inside a condition: true when the key is present
        (required=false); it also sets its target."""
        calls = read_calls(text)
        if len(calls) != 1 or calls[0][3]:
            raise Untranslatable(text)
        call, kv, target, _req, _s, _e = calls[0]
        key = self.key(kv)
        # Read on the right of `&&`, the target holds the key's value (the
        # key is present there); elsewhere the validator finds the key
        # absent, the value unknown, and decides nothing.
        if call == "get_key":
            self.env[target] = f"key({key})"
        elif call == "get_arr_n":
            self.env[target] = f"len({key})"
        else:
            self.env[target] = None
        return f"has({key})"


def _wrapped(e: str) -> bool:
    if not (e.startswith("(") and e.endswith(")")):
        return False
    return _match(e, 0, "(", ")") == len(e) - 1


def _atomic(e: str) -> bool:
    if _wrapped(e) or re.fullmatch(r"[\w.]+", e):
        return True
    m = re.fullmatch(r"(key|len|has)\(", e[:4]) if len(e) > 4 else None
    return bool(m) and _match(e, 3, "(", ")") == len(e) - 1


def negate(e: str) -> str:
    if e == "1":
        return "0"
    if e == "0":
        return "1"
    return f"!{e}" if _atomic(e) else f"!({e})"


def simplify(parts: list[str]) -> str | None:
    """Conjunction of conditions; None when one is constant false."""
    parts = [p for p in parts if p != "1"]
    if "0" in parts:
        return None
    if not parts:
        return "1"
    parts = [p[1:-1] if _wrapped(p) else p for p in parts]
    wrap = [f"({p})" if len(_split_top(p, " || ")) > 1 else p for p in parts]
    return " && ".join(wrap)


# ------------------------------------------------------------ English

def _names(e: str) -> str:
    e = re.sub(r"key\(\{arch\}\.([\w.]+), len\(([\w.{}]+), \d+\)\)", r"\1 (else the length of \2)", e)
    e = re.sub(r"key\(\{arch\}\.([\w.]+)(?:, \d+)?\)", r"\1", e)
    e = re.sub(r"len\(([\w.{}]+), [^()]*\)", r"the length of \1", e)
    e = re.sub(r"has\(\{arch\}\.([\w.]+)\)", r"\1 is present", e)
    e = e.replace("{arch}.", "")
    return e


def english(e: str) -> str:
    """A readable rendering of a translated condition for messages."""
    if e == "1":
        return "always"
    neg = _push_not(e)
    s = _names(neg)
    # `x != a && x != b` -> `x is not a or b`
    def group(m):
        return m.group(0)
    for name in set(re.findall(r"([\w.]+) != \d+", s)):
        pat = re.compile(r"(?:\b" + re.escape(name) + r" != (\d+))(?: && " + re.escape(name) + r" != (\d+))+")
        s = pat.sub(lambda m: name + " is not " + " or ".join(re.findall(r"!= (\d+)", m.group(0))), s)
    s = s.replace(" != ", " is not ").replace(" == ", " is ").replace(" > ", " is above ").replace(" < ", " is below ")
    # n_layer is block_count less the nextn (MTP) layers: said once.
    s = re.sub(r"\bn_layer\b", "n_layer (block_count less nextn_predict_layers)", s, count=1)
    s = s.replace(" >= ", " is at least ").replace(" <= ", " is at most ").replace(" && ", ", and ").replace(" || ", " or ")
    return s


def _push_not(e: str) -> str:
    """De Morgan on the outermost `!( ... )` of the whole expression."""
    e = e.strip()
    if e.startswith("!(") and _match(e, 1, "(", ")") == len(e) - 1:
        inner = e[2:-1]
        parts = _split_top(inner, " || ")
        if len(parts) > 1:
            return " && ".join(_neg_simple(p) for p in parts)
        parts = _split_top(inner, " && ")
        if len(parts) > 1:
            return "(" + " || ".join(_neg_simple(p) for p in parts) + ")"
        return _neg_simple(inner)
    parts = _split_top(e, " && ")
    if len(parts) > 1:
        return " && ".join(_push_not(p) for p in parts)
    return e


def _neg_simple(p: str) -> str:
    p = p.strip()
    for a, b in ((" == ", " != "), (" != ", " == "), (" >= ", " < "), (" <= ", " > "), (" > ", " <= "), (" < ", " >= ")):
        if len(_split_top(p, a)) == 2 and " && " not in p and " || " not in p:
            return p.replace(a, b)
    if _wrapped(p):
        return _push_not("!" + p)
    return "not " + p


def _split_top(e: str, sep: str) -> list[str]:
    out, depth, cur, i = [], 0, [], 0
    while i < len(e):
        c = e[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if depth == 0 and e.startswith(sep, i):
            out.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


# ------------------------------------------------------------ per function

ASSIGN = re.compile(r"^([\w.\[\]]+)\s*(=|\+=|-=|\*=|/=|\|=|&=)\s*(.*)$")
DECL = re.compile(r"^(?:const\s+)?(?:bool|u?int\d*_t|int|auto|size_t|float)\s+(\w+)\s*(?:=\s*(.*))?$")


def conditional_reads(text: str, lo: int, hi: int, arch_enum: str, kv_names: dict, arch_enums: dict,
                      defaults: dict, base_env: dict):
    """Every required read of the function body text[lo:hi] reached under a
    condition: (key format, expression or None, C condition text, line)."""
    w = Walker(text, 0)
    w.block(lo, hi, [])

    def line_of(at: int) -> int:
        return text.count("\n", 0, at) + 1
    env = dict(base_env)
    res = []
    for stmt, conds, at in w.out:
        tr = Translator(arch_enum, kv_names, arch_enums, env)
        # The conditions, translated against the environment as it stands.
        parts, texts, ok = [], [], True
        for c in conds:
            if c[0] == "loop":
                ok = False
                texts.append(c[1])
                continue
            if c[0] == "case":
                _, var, labels, all_labels = c
                if "default" in labels:
                    ctext = " && ".join(f"{var} != {x}" for x in all_labels) or "1"
                else:
                    ctext = " || ".join(f"{var} == {x}" for x in labels)
            else:
                ctext = c[1] if c[0] == "if" else f"!({c[1]})"
            texts.append(ctext)
            try:
                e = Translator(arch_enum, kv_names, arch_enums, dict(env)).translate(ctext)
                parts.append(e)
            except Untranslatable:
                ok = False
        for call, kv, target, req, s, e in read_calls(stmt):
            if req and conds:
                fmt = kv_names.get(kv)
                if fmt is None:
                    continue
                when = simplify(parts) if ok else ""
                if when is None:
                    continue        # never required for this architecture
                res.append((fmt.replace("%s", "{arch}"), when if ok else None, " && ".join(texts), line_of(at)))
        # Update the environment after the statement.
        _update_env(stmt, conds, env, tr, defaults)
    return res


def _update_env(stmt: str, conds: list, env: dict, tr: Translator, defaults: dict) -> None:
    reads = read_calls(stmt)
    if reads:
        rest = stmt
        for r in reversed(reads):
            rest = rest[:r[4]] + rest[r[5]:]
        simple_or = re.fullmatch(r"[\s|]*", rest) is not None
        targets = {r[2] for r in reads}
        if conds or not simple_or or len(targets) != 1 or any(r[3] for r in reads):
            for r in reads:
                if r[3] and not conds and r[0] == "get_key":
                    env[r[2]] = _fresh(tr, r[1], r[0])
                else:
                    env[r[2]] = None if conds or r[3] else env.get(r[2])
            return
        # `get(A, v, false) || get(B, v, false)`: the first present wins.
        target = reads[0][2]
        prev = env[target] if target in env else defaults.get(target.split(".")[-1]) if target.startswith("hparams.") else None
        if prev is None:
            env[target] = None
            return
        expr = prev
        for call, kv, _t, _r, _s, _e in reversed(reads):
            fmt = tr.kv_names.get(kv)
            if fmt is None or call not in ("get_key", "get_arr_n"):
                env[target] = None
                return
            key = fmt.replace("%s", "{arch}")
            expr = f"{'key' if call == 'get_key' else 'len'}({key}, {expr})"
        env[target] = expr
        return
    m = DECL.match(stmt)
    if m:
        name, rhs = m.group(1), m.group(2)
        if rhs is None:
            env[name] = None
            return
        if conds:
            env[name] = None
            return
        try:
            env[name] = Translator(tr.arch_enum, tr.kv_names, tr.arch_enums, dict(env)).translate(rhs)
        except Untranslatable:
            env[name] = None
        return
    m = ASSIGN.match(stmt)
    if m:
        env[m.group(1)] = None
        return
    m = re.match(r"^([\w.]+)\s*(\+\+|--)$|^(\+\+|--)([\w.]+)$", stmt)
    if m:
        env[m.group(1) or m.group(4)] = None
        return
    # Anything else that mentions a tracked name by reference (a call that
    # may write it) makes it unknown.
    if re.match(r"(throw|GGML_ASSERT|GGML_ABORT|LLAMA_LOG_\w+)\b", stmt):
        return
    for name in list(env):
        if re.search(r"[&(,]\s*" + re.escape(name) + r"\b", stmt) and "(" in stmt:
            env[name] = None


def _fresh(tr: Translator, kv: str, call: str):
    fmt = tr.kv_names.get(kv)
    if fmt is None:
        return None
    return f"key({fmt.replace('%s', '{arch}')})"


def body_span(text: str, signature: str):
    """(lo, hi) of the body of the function whose header matches, or None."""
    m = re.search(signature, text)
    if not m:
        return None
    i = text.index("{", m.end())
    return i + 1, _match(text, i, "{", "}")


def literal_defaults(hparams_h: str) -> dict:
    """hparams fields with a literal integer or bool initializer."""
    out = {}
    for m in re.finditer(r"^\s*(?:bool|u?int\d+_t)\s+(\w+)\s*=\s*(\d+|true|false)[uU]?\s*;", hparams_h, re.M):
        v = m.group(2)
        out[m.group(1)] = "1" if v == "true" else "0" if v == "false" else str(int(v))
    return out
