"""The hub scan records what kind of file each row is (issues 52, 53): a
model, a LoRA adapter, a multimodal projector, an importance matrix, a
control vector or a diffusion model (judged for stable-diffusion.cpp), as
the command line's report examines it; the report counts the verdicts per
kind."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from conftest import ROOT, cli_entries  # noqa: E402
from fakehub import FakeHub  # noqa: E402

from gguf_validate.scan import kind_of, scan  # noqa: E402
from gguf_validate.scan.report import write_report  # noqa: E402
from gguf_validate.scan.schema import SCHEMA  # noqa: E402

MODELS = ROOT / "corpus" / "models"

#: A corpus file of each kind, and the kind.
FILES = {
    "llama__complete.gguf": "model",
    "lora/lora-qwen3moe_r8_experts.gguf": "adapter",
    "mmproj/mmproj-gemma3.gguf": "projector",
    "imatrix/imatrix__real.gguf": "imatrix",
    "cvec/cvec__f16.gguf": "control vector",
    "imatrix/imatrix__chunk_size_string.gguf": "imatrix",
    "../diffusion/flux__sdcpp_q8_0.gguf": "diffusion",
    "../diffusion/flux__issue53_two_tensors.gguf": "diffusion",
}


@pytest.fixture()
def hub(monkeypatch: pytest.MonkeyPatch) -> Any:
    with FakeHub() as h:
        monkeypatch.setenv("HF_ENDPOINT", h.hub_url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        urls = {h.add(f"org/k{i}", Path(name).name, str(MODELS / name)): name for i, name in enumerate(FILES)}
        missing = h.add("gone/model", "model.gguf", str(MODELS / "llama__complete.gguf"), fault="404")
        yield urls, missing


def test_each_row_says_its_kind_as_the_command_line_examines_it(hub: Any, tmp_path: Path, cli: list[str]) -> None:
    urls, missing = hub
    out = tmp_path / "scan"
    scan([*urls, missing], out, concurrency=4)
    rows = {r["url"]: r for r in pq.read_table(out, schema=SCHEMA).to_pylist()}
    entries = cli_entries(cli, [str(Path("corpus/models") / n) for n in FILES])
    for url, name in urls.items():
        assert rows[url]["kind"] == FILES[name], name
        # The same as the command line's report of the file says.
        assert kind_of(entries[str(Path("corpus/models") / name)]["summary"]) == FILES[name], name
    assert rows[missing]["status"] == "unreadable" and rows[missing]["kind"] is None

    page = tmp_path / "report.html"
    fig = write_report(out, page)
    kinds = {g["key"]: g for g in fig["kinds"]}
    assert kinds["imatrix"]["files"] == 2 and kinds["model"]["files"] == 1
    # The importance matrix whose chunk size is a string is invalid under strict.
    assert kinds["imatrix"]["strict_invalid"] == 1 and kinds["imatrix"]["strict_valid"] == 1
    # stable-diffusion.cpp loads its converter's FLUX and dies on the two-tensor one (SIGFPE).
    assert kinds["diffusion"]["strict_invalid"] == 1 and kinds["diffusion"]["strict_valid"] == 1
    assert kinds[None]["unreadable"] == 1
    html = page.read_text()
    table = re.search(r'<table id="kind-table">(.*?)</table>', html, re.S)
    assert table is not None
    for k in ("model", "adapter", "projector", "imatrix", "control vector", "diffusion"):
        assert f'data-kind="{k}"' in table.group(1), k
    assert "data-kind-missing" in table.group(1)
