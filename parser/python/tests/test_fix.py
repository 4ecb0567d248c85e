"""`gguf_validate.fix` and `edit`: the command line's `fix` and `edit` on
paths (written to `output`, or in place) and on bytes (rewritten in
memory), with the same fixes, reports and tensor-data digests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import gguf_validate as gv

ROOT = Path(__file__).resolve().parents[3]
FIXES = ROOT / "corpus" / "fixes"
MANIFEST = json.loads((FIXES / "manifest.json").read_text())["cases"]
BIN = ROOT / "target" / "release" / "gguf-validate"


def cases_with(kind: str) -> list[str]:
    return sorted(slug for slug, c in MANIFEST.items() if c.get("kind") == kind)


@pytest.mark.parametrize("slug", cases_with("safe") + cases_with("unsafe"))
def test_fixing_bytes_gives_the_committed_fixed_file(slug: str) -> None:
    unsafe = MANIFEST[slug]["kind"] == "unsafe"
    r = gv.fix((FIXES / f"{slug}.gguf").read_bytes(), unsafe=unsafe)
    assert r.valid and r.report.valid
    assert r.before is not None and MANIFEST[slug]["rule"] in {d.rule for d in r.before.diagnostics}
    assert r.data == (FIXES / f"{slug}.fixed.gguf").read_bytes()
    assert r.tensor_data["unchanged"] is True
    assert any(f["rule"] == MANIFEST[slug]["rule"] and f["applied"] for f in r.fixes)
    assert not r.written


def test_an_unsafe_fix_is_held_back_unless_asked(tmp_path: Path) -> None:
    broken = (FIXES / "token_id_out_of_range.gguf").read_bytes()
    held = gv.fix(broken)
    assert not held.valid
    assert held.data == broken
    assert [(f["rule"], f["kind"], f["applied"]) for f in held.fixes] == [("token-id-range", "unsafe", False)]
    made = gv.fix(broken, unsafe=True)
    assert made.valid and made.changes[0]["key"] == "tokenizer.ggml.eos_token_id" and made.changes[0]["after"] is None


def test_fixing_a_path_matches_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "out.gguf"
    r = gv.fix(FIXES / "tensor_data_order.gguf", out)
    assert r.written and r.output == str(out)
    assert out.read_bytes() == (FIXES / "tensor_data_order.fixed.gguf").read_bytes()
    if BIN.exists():
        cli_out = tmp_path / "cli.gguf"
        o = subprocess.run(
            [BIN, "fix", FIXES / "tensor_data_order.gguf", "-o", cli_out, "--format", "json"],
            capture_output=True,
            check=False,
        )
        assert o.returncode == 0, o.stderr
        doc = json.loads(o.stdout)["files"][0]
        assert doc["fixes"] == list(r.fixes)
        assert doc["tensor_data"]["after"] == r.tensor_data["after"]
        assert cli_out.read_bytes() == out.read_bytes()


def test_dry_run_and_in_place(tmp_path: Path) -> None:
    copy = tmp_path / "m.gguf"
    shutil.copy(FIXES / "trailing_bytes.gguf", copy)
    dry = gv.fix(copy, dry_run=True)
    assert not dry.written and dry.fixes[0]["rule"] == "trailing-bytes"
    assert copy.read_bytes() == (FIXES / "trailing_bytes.gguf").read_bytes()
    done = gv.fix(copy, in_place=True)
    assert done.written and done.valid
    assert copy.read_bytes() == (FIXES / "trailing_bytes.fixed.gguf").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gguf"]


def test_fix_needs_somewhere_to_write() -> None:
    with pytest.raises(gv.UsageError, match="output"):
        gv.fix(FIXES / "trailing_bytes.gguf")


def test_edit_bytes_and_paths(tmp_path: Path) -> None:
    tiny = ROOT / "corpus" / "samples" / "tiny-llama.gguf"
    r = gv.edit(tiny.read_bytes(), set={"general.name": "str:renamed"}, special_tokens={"eos": 2})
    assert r.valid and r.data is not None
    assert {c["key"] for c in r.changes} == {"general.name", "tokenizer.ggml.eos_token_id"}
    assert r.tensor_data["unchanged"] is True
    assert "renamed" in json.dumps(gv.dump(r.data))
    out = tmp_path / "e.gguf"
    w = gv.edit(tiny, out, remove=["general.name"])
    assert w.written and out.exists()
    with pytest.raises(gv.UsageError, match="pre-tokenizer"):
        gv.edit(tiny.read_bytes(), pre_tokenizer="no-such-pre-tokenizer")
    with pytest.raises(gv.UsageError, match="nothing to change"):
        gv.edit(tiny.read_bytes())


def test_rules_list_their_fixes() -> None:
    by_id = {r["id"]: r for r in gv.rules()}
    assert [f["kind"] for f in by_id["key-duplicate"]["fixes"]] == ["safe", "unsafe"]
    assert by_id["magic"]["fixes"] == []
