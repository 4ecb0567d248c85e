"""`hash`, `dump` and `derive` take every source `validate` takes (a path,
a URL read through the same HTTP client, bytes-like) and agree with the
command line on the same file; `validate_many` yields split sets as the
command line's JSON has them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gguf_validate as gv
from conftest import ROOT, run_cli

SAMPLE = "corpus/samples/tiny-llama.gguf"
SPLIT = ["corpus/split/y_two_shards/tiny-00001-of-00002.gguf", "corpus/split/i_shard_missing/tiny-00001-of-00003.gguf"]


@pytest.fixture(autouse=True)
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def sources(server: str, rel: str) -> dict[str, object]:
    """The same file as a path, a URL on the loopback server and bytes-like."""
    data = (ROOT / rel).read_bytes()
    return {
        "path": rel,
        "pathlib": Path(rel),
        "url": f"{server}/{rel.removeprefix('corpus/')}",
        "bytes": data,
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "numpy": np.frombuffer(data, dtype=np.uint8),
    }


def cli_hash(cli: list[str], algo: str, target: str, *flags: str) -> list[list[str]]:
    out = run_cli(cli, "hash", "--algo", algo, *flags, target)
    assert out.returncode == 0, out.stderr
    return [line.split() for line in out.stdout.splitlines()]


@pytest.mark.parametrize("algo", ["xxh64", "sha1", "sha256", "uuid"])
def test_hash_of_every_source_equals_the_cli(cli: list[str], server: str, algo: str) -> None:
    model = cli_hash(cli, algo, SAMPLE)[-1]
    assert model[0] == algo and model[2] == SAMPLE
    for kind, src in sources(server, SAMPLE).items():
        assert gv.hash(src, algo) == model[1], kind
    # The URL also through the command line: the same digest.
    assert cli_hash(cli, algo, sources(server, SAMPLE)["url"])[-1][1] == model[1]  # type: ignore[arg-type]


def test_hash_per_tensor_of_a_url_and_bytes(cli: list[str], server: str) -> None:
    lines = cli_hash(cli, "xxh64", SAMPLE)
    want = {(name.split(":", 1)[1] if ":" in name else ""): digest for _, digest, name in lines}
    for kind, src in sources(server, SAMPLE).items():
        assert gv.hash(src, "xxh64", per_tensor=True) == want, kind


def test_hash_of_a_shard_is_its_split_set_as_on_the_command_line(cli: list[str], server: str) -> None:
    second = "corpus/split/y_two_shards/tiny-00002-of-00002.gguf"
    lines = cli_hash(cli, "sha256", second)
    # The set is named after its first shard and hashed as one model.
    assert lines[-1][2] == SPLIT[0]
    assert gv.hash(second, "sha256") == gv.hash(SPLIT[0], "sha256") == lines[-1][1]
    assert gv.hash(f"{server}/split/y_two_shards/tiny-00002-of-00002.gguf", "sha256") == lines[-1][1]
    # Bytes are one file: the shard alone, as `--no-split` has it.
    alone = cli_hash(cli, "sha256", second, "--no-split")[-1][1]
    assert alone != lines[-1][1]
    assert gv.hash((ROOT / second).read_bytes(), "sha256") == alone
    with pytest.raises(gv.UnreadableError, match="missing"):
        gv.hash(SPLIT[1])


def test_hash_errors(server: str) -> None:
    with pytest.raises(gv.UnreadableError) as e:
        gv.hash(f"{server}/samples/no-such-file.gguf")
    assert e.value.code == 2
    with pytest.raises(gv.UnreadableError):
        gv.hash(b"not a gguf file")
    with pytest.raises(gv.UsageError):
        gv.hash(b"GGUF", "md5")


def test_dump_of_every_source_equals_the_cli(cli: list[str], server: str) -> None:
    want = json.loads(run_cli(cli, "dump", SAMPLE).stdout)
    full = json.loads(run_cli(cli, "dump", "--full", SAMPLE).stdout)
    for kind, src in sources(server, SAMPLE).items():
        got = gv.dump(src)
        name = {"url": src, "bytes": "<bytes>"}.get(kind, "<bytes>" if not isinstance(src, (str, Path)) else SAMPLE)
        assert got.pop("path") == name, kind
        assert got == {k: v for k, v in want.items() if k != "path"}, kind
        got_full = gv.dump(src, full=True)
        got_full.pop("path")
        assert got_full == {k: v for k, v in full.items() if k != "path"}, kind
    with pytest.raises(gv.NotGGUFError):
        gv.dump(b"GGML" + bytes(64))
    with pytest.raises(gv.UnreadableError):
        gv.dump(f"{server}/samples/no-such-file.gguf")


def test_derive_of_every_source_equals_the_cli(cli: list[str], server: str) -> None:
    out = run_cli(cli, "derive", "--json", SAMPLE, SAMPLE)
    want = json.loads(out.stdout)["tensors"]
    assert {t["status"] for t in want} >= {"identical", "not-derivable"}
    srcs = sources(server, SAMPLE)
    for kind, src in srcs.items():
        assert gv.derive(src, src) == want, kind
    # Mixed kinds in one call.
    assert gv.derive(srcs["url"], srcs["bytes"]) == want
    with pytest.raises(gv.UnreadableError):
        gv.derive(SAMPLE, SAMPLE, imatrix=b"\x00\x00\x00\x00")
    with pytest.raises(gv.UnreadableError):
        gv.derive(f"{server}/samples/no-such-file.gguf", SAMPLE)


def test_validate_many_yields_split_sets_like_the_cli(cli: list[str]) -> None:
    files = ["corpus/samples/tiny-llama.gguf", *SPLIT, "corpus/gguf/i_alignment_1.gguf"]
    out = run_cli(cli, "--format", "json", "--no-config", *files)
    want = json.loads(out.stdout)["files"]
    got = list(gv.validate_many(files, jobs=2))
    assert [type(x).__name__ for x in got] == [
        "SetReport" if e.get("kind") == "split-set" else "Report" for e in want
    ]
    assert [x.to_dict() for x in got if not isinstance(x, gv.UnreadableError)] == want
    sets = [x for x in got if isinstance(x, gv.SetReport)]
    assert [s.valid for s in sets] == [True, False]
    ok, missing = sets
    assert len(ok.shards) == 2 and ok.summary["shard_count"] == 2 and bool(ok)
    assert missing.errors >= 1 and missing.errors == sum(d.severity == "error" for d in missing.diagnostics)
    # Each shard names its set; the set follows its shards.
    shards = [x for x in got if isinstance(x, gv.Report) and x.split_set == ok.path]
    assert [s.path for s in shards] == [sh["name"] for sh in ok.shards]
    assert got.index(ok) == got.index(shards[-1]) + 1
    assert gv.SetReport._of(json.loads(ok.to_json())) == ok


def test_options_are_validates_keywords() -> None:
    import inspect

    params = inspect.signature(gv.validate).parameters
    keywords = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
    assert keywords == list(gv.Options.__annotations__)
    # validate_many takes them, with validate's defaults.
    f = "corpus/gguf/i_alignment_1.gguf"
    assert next(gv.validate_many([f], profile="spec")).to_dict() == gv.validate(f, profile="spec").to_dict()  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="no_such_option"):
        list(gv.validate_many([f], no_such_option=True))  # type: ignore[call-arg]
