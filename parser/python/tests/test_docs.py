"""Every Python example of the book's Python page runs against the
installed wheel (in a folder with `model.gguf`, a valid file,
`broken.gguf`, an invalid one, and the valid split set
`big-0000k-of-00002.gguf`)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PAGE = ROOT / "parser" / "docs" / "src" / "python.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)


def test_the_page_has_examples() -> None:
    assert len(EXAMPLES) >= 7


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_example_runs(code: str, tmp_path: Path) -> None:
    shutil.copy(ROOT / "corpus/samples/tiny-llama.gguf", tmp_path / "model.gguf")
    shutil.copy(ROOT / "corpus/gguf/i_alignment_1.gguf", tmp_path / "broken.gguf")
    for k in (1, 2):
        shutil.copy(ROOT / f"corpus/split/y_two_shards/tiny-0000{k}-of-00002.gguf", tmp_path / f"big-0000{k}-of-00002.gguf")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
