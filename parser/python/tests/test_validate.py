"""`validate`, `validate_many` and the wheel's `gguf-validate` command against
the command line: same verdicts, same JSON, same exit codes."""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import gguf_validate as gv
from conftest import ROOT, cli_entries, run_cli


def corpus_files() -> list[str]:
    files = sorted((ROOT / "corpus" / "gguf").glob("*.gguf")) + sorted((ROOT / "corpus" / "legacy").glob("*"))
    return [str(p.relative_to(ROOT)) for p in files if p.is_file()]


@pytest.fixture(autouse=True)
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("profile", ["strict", "spec", "ggml"])
def test_corpus_json_equals_the_cli(cli: list[str], profile: str) -> None:
    files = corpus_files()
    assert len(files) > 300
    out = run_cli(cli, "--format", "json", "--no-config", "--allow-empty", "--profile", profile, *files)
    expected = json.loads(out.stdout)["files"]
    got = list(gv.validate_many(files, jobs=2, profile=profile))
    # Entry by entry in the same order: files, and a split set's entry
    # after its shards.
    assert len(got) == len(expected)
    for item, want in zip(got, expected, strict=True):
        assert isinstance(item, gv.SetReport if want.get("kind") == "split-set" else gv.Report), item
        assert item.to_dict() == want, want["path"]
        assert item.valid == want["valid"]
    # Both verdicts occur, so the comparison means something.
    assert {r.valid for r in got if isinstance(r, gv.Report)} == {True, False}


def test_validate_one_equals_validate_many(cli: list[str]) -> None:
    files = corpus_files()[:40]
    many = [r.to_dict() for r in gv.validate_many(files, jobs=3)]
    one = [gv.validate(f).to_dict() for f in files]
    assert many == one


def test_report_fields_follow_the_entry() -> None:
    r = gv.validate("corpus/gguf/i_alignment_1.gguf")
    d = r.to_dict()
    assert r.path == d["path"] and r.profile == "strict" and r.format == "gguf"
    assert not r.valid and not bool(r)
    assert r.errors == d["counts"]["errors"] == sum(x.severity == "error" for x in r.diagnostics)
    assert [x.rule for x in r.diagnostics] == [x["rule"] for x in d["diagnostics"]]
    assert "alignment-multiple-of-8" in {x.rule for x in r.diagnostics}
    assert r.examined[0]["layer"] == "container"
    assert r.remote is None
    assert gv.Report._of(__import__("json").loads(r.to_json())) == r


def test_bytes_like_inputs_match_the_path() -> None:
    path = ROOT / "corpus/gguf/i_alignment_1.gguf"
    data = path.read_bytes()
    want = gv.validate(path).to_dict()
    del want["path"]
    as_f32 = np.frombuffer(data[: len(data) // 4 * 4], dtype=np.uint8).copy()
    inputs = [data, bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)]
    for src in inputs:
        got = gv.validate(src).to_dict()
        assert got.pop("path") == "<bytes>"
        assert got == want, type(src)
    # A buffer of another item type is read as its bytes.
    f32 = as_f32.view(np.float32)
    r = gv.validate(f32)
    assert r.to_dict()["summary"]["file_size"] == f32.nbytes


def test_url_against_a_loopback_server(cli: list[str], server: str) -> None:
    url = f"{server}/gguf/i_alignment_1.gguf"
    r = gv.validate(url)
    expected = cli_entries(cli, [url])[url]
    assert r.to_dict() == expected
    assert r.remote is not None and r.remote["bytes_fetched"] > 0
    local = gv.validate("corpus/gguf/i_alignment_1.gguf")
    assert [d.rule for d in r.diagnostics] == [d.rule for d in local.diagnostics]
    with pytest.raises(gv.UnreadableError) as e:
        gv.validate(f"{server}/gguf/no-such-file.gguf")
    assert e.value.code == 2


def test_unreadable_and_usage_errors() -> None:
    with pytest.raises(gv.UnreadableError) as e:
        gv.validate("corpus/no-such-file.gguf")
    assert e.value.code == 2 and "no-such-file.gguf: No such file" in str(e.value)
    assert isinstance(e.value, gv.GGUFValidateError)
    with pytest.raises(gv.UsageError):
        gv.validate("corpus/gguf/i_alignment_1.gguf", profile="lenient")
    with pytest.raises(gv.UsageError):
        gv.validate(12345)  # type: ignore[arg-type]
    with pytest.raises(gv.UsageError):
        gv.validate("corpus/gguf/i_alignment_1.gguf", timeout=-1)
    with pytest.raises(gv.UsageError):
        gv.validate("corpus/gguf/i_alignment_1.gguf", config="corpus/no-such-config.toml")


def test_garbage_is_a_report_not_an_exception() -> None:
    for data in [b"", b"GGUF", b"\x00" * 100, b"GGUF\x03\x00\x00\x00" + b"\xff" * 64]:
        r = gv.validate(data)
        assert not r.valid and r.errors >= 1


def test_validate_many_streams_unreadable_items_in_order() -> None:
    files = ["corpus/gguf/i_alignment_1.gguf", "corpus/missing.gguf", b"GGUF"]
    items = list(gv.validate_many(files, jobs=2))
    assert isinstance(items[0], gv.Report) and items[0].path == files[0]
    assert isinstance(items[1], gv.UnreadableError) and items[1].code == 2
    assert isinstance(items[2], gv.Report) and not items[2].valid
    # Stopping early is fine (the worker stops with the reader).
    it = gv.validate_many(corpus_files(), jobs=2)
    assert isinstance(next(it), gv.Report)
    del it


def test_threads_give_the_same_results() -> None:
    files = corpus_files()[:60]
    sequential = [gv.validate(f).to_dict() for f in files]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda f: gv.validate(f).to_dict(), files))
    assert threaded == sequential


def test_pickling_reports_and_errors() -> None:
    r = gv.validate("corpus/gguf/i_alignment_1.gguf")
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.to_dict() == r.to_dict()
    for err in [gv.UnreadableError("gone"), gv.UsageError("bad"), gv.NotGGUFError("no")]:
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and back.args == err.args and back.code == err.code


def test_console_script_exit_codes_match(cli: list[str]) -> None:
    valid = next(f for f, e in cli_entries(cli, corpus_files()).items() if e["valid"])
    cases = [
        [valid],
        ["corpus/gguf/i_alignment_1.gguf"],
        ["corpus/missing.gguf"],
        ["--help"],
        ["--version"],
        ["--no-such-flag"],
        ["rules", "--format", "json"],
    ]
    want_codes = [0, 1, 2, 0, 0, 2, 0]
    for args, want in zip(cases, want_codes, strict=True):
        script = run_cli(cli, *args)
        module = subprocess.run(
            [sys.executable, "-m", "gguf_validate", *args], cwd=ROOT, capture_output=True, text=True, check=False
        )
        assert script.returncode == module.returncode == want, (args, script.stderr)
        assert script.stdout == module.stdout, args
    binary = os.environ.get("GGUF_VALIDATE_CARGO_BIN")
    if binary:
        for args, want in zip(cases, want_codes, strict=True):
            out = subprocess.run([binary, *args], cwd=ROOT, capture_output=True, text=True, check=False)
            assert out.returncode == want, args



def test_console_script_is_the_binary() -> None:
    """The wheel's `gguf-validate` is the command line's own binary (no Python
    start-up), and `python -m gguf_validate` finds it."""
    from gguf_validate.__main__ import binary

    exe = binary()
    assert exe is not None, "no gguf-validate binary next to the interpreter or on PATH"
    head = Path(exe).read_bytes()[:4]
    assert head in (b"\x7fELF", b"\xcf\xfa\xed\xfe") or head[:2] == b"MZ", f"{exe} is not a binary: {head!r}"


def test_python_m_without_a_binary_says_how_to_get_one(tmp_path: Path) -> None:
    code = "import sys, gguf_validate.__main__ as m; m._scripts_dirs = lambda: []; sys.exit(m.main())"
    out = subprocess.run(
        [sys.executable, "-c", code, "--version"],
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2 and out.stdout == "", out
    assert "no command-line binary" in out.stderr and "cargo install gguf-validate" in out.stderr

def test_rules_dump_hash(cli: list[str]) -> None:
    import json

    rules = gv.rules()
    assert rules == json.loads(run_cli(cli, "rules", "--format", "json").stdout)
    assert {"id", "group", "strict", "spec", "ggml", "description"} <= set(rules[0])
    f = "corpus/samples/tiny-llama.gguf"
    d = gv.dump(f)
    assert d == json.loads(run_cli(cli, "dump", f).stdout)
    assert d["file_size"] == (ROOT / f).stat().st_size
    with pytest.raises(gv.UnreadableError):
        gv.dump("corpus/missing.gguf")
    with pytest.raises(gv.NotGGUFError) as e:
        gv.dump(next((ROOT / "corpus/legacy").glob("*")))
    assert e.value.code == 1
    for algo in ("xxh64", "sha1", "sha256", "uuid"):
        lines = run_cli(cli, "hash", "--algo", algo, f).stdout.splitlines()
        model = lines[-1].split()
        assert model[0] == algo and model[2] == f
        assert gv.hash(f, algo) == model[1]
    per = gv.hash(f, "xxh64", per_tensor=True)
    lines = [line.split() for line in run_cli(cli, "hash", f).stdout.splitlines()]
    assert per == {(name.split(":", 1)[1] if ":" in name else ""): digest for _, digest, name in lines}
    with pytest.raises(gv.UsageError):
        gv.hash(f, "md5")


def test_config_explicit_discovered_or_none(cli: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    shutil.copy(ROOT / "corpus/gguf/i_alignment_1.gguf", tmp_path / "m.gguf")
    (tmp_path / "gguf-validate.toml").write_text('[rules]\nalignment-multiple-of-8 = "allow"\n')
    monkeypatch.chdir(tmp_path)
    assert not gv.validate("m.gguf").valid  # no config by default
    assert gv.validate("m.gguf", config=True).valid  # discovered, as the CLI does
    assert gv.validate("m.gguf", config=tmp_path / "gguf-validate.toml").valid
    out = run_cli(cli, "--format", "json", "m.gguf", cwd=tmp_path)
    assert gv.validate("m.gguf", config=True).to_dict() == __import__("json").loads(out.stdout)["files"][0]
    (tmp_path / "bad.toml").write_text("[rules\n")
    with pytest.raises(gv.UsageError):
        gv.validate("m.gguf", config=tmp_path / "bad.toml")


def test_timeout_and_options_reach_the_pipeline() -> None:
    f = "corpus/gguf/i_alignment_1.gguf"
    assert gv.validate(f, timeout=30).to_dict() == gv.validate(f).to_dict()
    assert gv.validate(f, profile="spec").profile == "spec"
    r = gv.validate("corpus/samples/tiny-llama.gguf", check_data=True)
    assert {"layer": "data", "checked": True} in [dict(e) for e in r.examined] or r.to_dict().get("data")
    c = gv.validate("corpus/samples/tiny-llama.gguf", container_only=True)
    assert any(e["layer"] == "model" and not e["checked"] for e in c.examined)


def test_with_models_pairs_an_adapter_with_its_base(cli: list[str]) -> None:
    """`with_models` is the command line's `--with`: the same verdicts and
    JSON for an adapter against its base and against a wrong base."""
    lora = "corpus/models/lora"
    for adapter, base, valid in [
        ("lora-llama_r8.gguf", "llama.gguf", True),
        ("lora-llama_hidden_32_r8.gguf", "llama.gguf", False),
        ("lora-qwen2_r8.gguf", "llama.gguf", False),
    ]:
        path = f"{lora}/{adapter}"
        report = gv.validate(path, with_models=[f"{lora}/{base}"])
        assert report.valid is valid, (adapter, [d.rule for d in report.diagnostics])
        pairing = [e for e in report.examined if e["layer"] == "pairing"]
        assert pairing and pairing[0]["checked"], report.examined
        entry = cli_entries(cli, [path], "--with", f"{lora}/{base}")[path]
        assert report.to_dict() == entry
    many = list(gv.validate_many([f"{lora}/lora-llama_r4.gguf"], with_models=[f"{lora}/llama.gguf"]))
    assert [r.valid for r in many] == [True]


def test_llama_cpp_judges_against_releases_as_the_cli(cli: list[str]) -> None:
    """`llama_cpp=` is the command line's `--llama-cpp`: the same verdicts
    and JSON; every report of a model says which releases load it, and a
    release name the table does not know is a usage error naming the known
    ones."""
    path = "corpus/samples/tiny-llama.gguf"
    plain = gv.validate(path)
    assert plain.llama_cpp is not None and plain.llama_cpp["loads_from"] == "b3889", plain.llama_cpp
    for releases in ["b4600", "b3889..", "v0.5.0"]:
        report = gv.validate(path, llama_cpp=releases)
        assert report.to_dict() == cli_entries(cli, [path], "--llama-cpp", releases)[path]
        assert report.valid
        assert report.llama_cpp is not None and report.llama_cpp["judged_against"][0] == releases.rstrip(".")
    with pytest.raises(gv.UsageError, match="known releases .*b3889.*v0.5.0"):
        gv.validate(path, llama_cpp="b1")


def test_dump_hash_and_derive_stop_at_their_timeout() -> None:
    """`timeout=` bounds `dump`, `hash` and `derive` as it bounds
    `validate`: against a server that accepts and never answers (with a
    20 s `http_timeout`), each gives up after about the limit."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/m.gguf"
    try:
        calls = {
            "dump": lambda: gv.dump(url, timeout=0.5, http_timeout=20),
            "hash": lambda: gv.hash(url, timeout=0.5, http_timeout=20),
            "derive": lambda: gv.derive(url, url, timeout=0.5, http_timeout=20),
        }
        for name, call in calls.items():
            started = time.monotonic()
            with pytest.raises(gv.UnreadableError, match="deadline|timed out"):
                call()
            assert time.monotonic() - started < 10, name
    finally:
        stop.set()
        t.join(5)
        for c in held:
            c.close()
        listener.close()
    sample = "corpus/samples/tiny-llama.gguf"
    assert gv.dump(sample, timeout=30) == gv.dump(sample)
    assert gv.hash(sample, timeout=30) == gv.hash(sample)
    for bad in (-1, 0, float("nan"), 1e300):
        with pytest.raises(gv.UsageError):
            gv.dump(sample, timeout=bad)


def test_loader_is_the_command_line_s(cli: list[str]) -> None:
    """`loader=` judges against a loader as `--loader` does; without it a
    diffusion model is judged for stable-diffusion.cpp (`Report.loader`)."""
    # stable-diffusion.cpp's converter writes no key; ComfyUI-GGUF's names the architecture
    keyless, flux = ROOT / "corpus/diffusion/flux__sdcpp_q8_0.gguf", ROOT / "corpus/diffusion/flux__comfy_f16.gguf"
    for f in (keyless, flux):
        r = gv.validate(f)
        assert r.valid and r.loader == "sd.cpp", r.diagnostics
    r = gv.validate(flux, loader="llama.cpp")
    assert not r.valid and r.loader == "llama.cpp"
    assert "model-architecture-refused" in {d.rule for d in r.diagnostics}
    r = gv.validate(keyless, loader="llama.cpp")
    assert "architecture-missing" in {d.rule for d in r.diagnostics}
    shape = ROOT / "corpus/gguf/y_diffusion_comfyui_orig_shape_u32.gguf"
    assert gv.validate(shape).valid
    r = gv.validate(shape, loader="comfyui-gguf")
    assert not r.valid and [d.severity for d in r.diagnostics] == ["error"]
    rel = str(shape.relative_to(ROOT))
    entry = cli_entries(cli, [rel], "--loader", "comfyui-gguf")[rel]
    assert r.diagnostics == tuple(gv.Diagnostic._of(d) for d in entry["diagnostics"])
    with pytest.raises(gv.UsageError, match="llama.cpp, sd.cpp, comfyui-gguf"):
        gv.validate(shape, loader="ollama")
