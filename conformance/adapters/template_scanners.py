#!/usr/bin/env python3
"""Template scanner adapters for the template scanners matrix
(`gguf-conformance templates`, conformance/scanners.json).

    template_scanners.py SCANNER FILE      exit 0 no alarm, 1 alarm
    template_scanners.py SCANNER --version

SCANNER is one of:
  gguf-validate  `gguf-validate --profile strict --format json FILE`
                 ($GGUF_VALIDATE_BIN, default target/release/gguf-validate):
                 an alarm is a finding (any severity) of template-code-execution,
                 template-hidden-text, template-trigger, template-role-branch or
                 template-injected-instruction.
  c4nary         `c4nary scan --json FILE` (PyPI c4nary==0.3.1): an alarm is a
                 FAIL or WARN finding of a template rule (TPL*, but TPL100
                 "matches a known-good template" and TPL101 "no template") or of
                 the rules on hidden codepoints and injection idioms in metadata
                 strings (MET020, MET021). Its metadata and tokenizer rules
                 (MET005 architecture/quantization and the like) are not about
                 templates and do not count.
  glyphhound     `glyphhound scan --source gguf --format json FILE` (PyPI
                 glyphhound==0.1.0): an alarm is any finding. When it cannot
                 scan (exit 2 without a report), a template it refuses (does
                 not parse, nests too deeply, is not a string) is an alarm:
                 its CI gate fails closed; a file where it finds no
                 `tokenizer.chat_template` is no alarm (it scanned nothing).
  modelaudit     modelaudit's GGUF scanner (PyPI modelaudit==0.2.54, in process,
                 no telemetry): an alarm is a warning or critical issue about the
                 template (its message names SSTI, a template, Jinja, or hidden
                 or invisible characters).

The scanners' own programs are found next to this Python ($GGUF_PEERS_BIN
overrides the directory). Anything that cannot be run or parsed exits 3 (a
crash for the matrix), with the reason on stderr. Each finding that counts is
printed on stderr, one line each.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

BIN = Path(os.environ.get("GGUF_PEERS_BIN", Path(sys.executable).parent))
ALARM_RULES = {
    "template-code-execution",
    "template-hidden-text",
    "template-trigger",
    "template-role-branch",
    "template-injected-instruction",
}
MODELAUDIT_TEMPLATE = re.compile(r"ssti|template|jinja|hidden|invisible|zero-width|bidi|unicode", re.I)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def gguf_validate(path):
    exe = os.environ.get("GGUF_VALIDATE_BIN", "target/release/gguf-validate")
    p = run([exe, "--profile", "strict", "--format", "json", path])
    if p.returncode not in (0, 1):
        raise RuntimeError(f"gguf-validate exited {p.returncode}: {p.stderr.strip()[-300:]}")
    report = json.loads(p.stdout)
    hits = []
    for f in report.get("files", []):
        for d in f.get("diagnostics", []):
            if d.get("rule") in ALARM_RULES:
                hits.append(f"{d['rule']} ({d.get('severity')}): {d.get('message', '')[:160]}")
    return hits


def c4nary(path):
    p = run([str(BIN / "c4nary"), "scan", "--json", "--fail-on", "none", path])
    if not p.stdout.strip():
        raise RuntimeError(f"c4nary exited {p.returncode}: {p.stderr.strip()[-300:]}")
    report = json.loads(p.stdout)
    hits = []
    for f in report.get("findings", []):
        rule, sev = f.get("rule_id", ""), f.get("severity", "")
        counts = (rule.startswith("TPL") and rule not in ("TPL100", "TPL101")) or rule in ("MET020", "MET021")
        if counts and sev in ("FAIL", "WARN"):
            hits.append(f"{rule} {sev}: {f.get('title', '')}")
    return hits


def glyphhound(path):
    p = run([str(BIN / "glyphhound"), "scan", "--source", "gguf", "--format", "json", path])
    if not p.stdout.strip():
        why = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        if p.returncode == 2 and "no 'tokenizer.chat_template' found" in why:
            print(f"glyphhound: nothing scanned: {why}", file=sys.stderr)
            return []
        if p.returncode == 2 and any(m in why for m in ("did not parse", "too deeply nested", "is not a string")):
            return [f"refused (fails closed): {why}"]
        raise RuntimeError(f"glyphhound exited {p.returncode}: {p.stderr.strip()[-300:]}")
    report = json.loads(p.stdout)
    return [f"{f.get('rule_id')} {f.get('severity')} {f.get('sink_kind')}: {f.get('evidence')}" for f in report.get("findings", [])]


def modelaudit(path):
    os.environ.setdefault("PROMPTFOO_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("NO_ANALYTICS", "1")
    import logging

    logging.disable(logging.CRITICAL)
    from modelaudit.scanners.gguf_scanner import GgufScanner

    result = GgufScanner().scan(path)
    hits = []
    for issue in result.issues:
        sev = getattr(issue.severity, "value", str(issue.severity))
        if sev in ("warning", "critical") and MODELAUDIT_TEMPLATE.search(issue.message or ""):
            hits.append(f"{sev}: {issue.message}")
    return hits


SCANNERS = {"gguf-validate": gguf_validate, "c4nary": c4nary, "glyphhound": glyphhound, "modelaudit": modelaudit}


def version(name):
    from importlib.metadata import version as v

    if name == "gguf-validate":
        exe = os.environ.get("GGUF_VALIDATE_BIN", "target/release/gguf-validate")
        return run([exe, "--version"]).stdout.strip() + " --profile strict"
    return f"{name} {v(name)}"


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in SCANNERS:
        print(__doc__, file=sys.stderr)
        return 2
    name, arg = sys.argv[1], sys.argv[2]
    if arg == "--version":
        print(version(name))
        return 0
    try:
        hits = SCANNERS[name](arg)
    except Exception as e:  # the scanner could not be run or its output not read
        print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    for h in hits:
        print(h, file=sys.stderr)
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
