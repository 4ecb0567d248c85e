"""NumPy is an optional extra (`gguf-validate[numpy]`): everything but the
numerics runs where it cannot be imported, and never imports it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import ROOT

NO_NUMPY = textwrap.dedent(
    """
    import sys
    sys.modules["numpy"] = None  # `import numpy` raises ImportError
    import gguf_validate as gv
    from gguf_validate import testing

    f = "corpus/samples/tiny-llama.gguf"
    data = open(f, "rb").read()
    assert gv.validate(f).valid and gv.validate(data).valid
    items = list(gv.validate_many([f, "corpus/split/y_two_shards/tiny-00001-of-00002.gguf"], jobs=2))
    assert len(items) == 4 and isinstance(items[-1], gv.SetReport)
    assert gv.hash(f) == gv.hash(data)
    assert gv.dump(data)["tensor_count"] > 0
    assert gv.derive(f, f) and gv.rules() and gv.ggml_types()
    testing.assert_valid(f)
    for call in (lambda: gv.dequantize("q8_0", bytes(34)), lambda: gv.quantize("q8_0", [0.0] * 32)):
        try:
            call()
        except ImportError as e:
            assert "pip install 'gguf-validate[numpy]'" in str(e), e
        else:
            raise AssertionError("no ImportError without NumPy")
    print("ok")
    """
)


def test_everything_but_the_numerics_runs_without_numpy() -> None:
    out = subprocess.run([sys.executable, "-c", NO_NUMPY], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_validation_does_not_import_numpy() -> None:
    code = (
        "import sys, gguf_validate as gv\n"
        "f = 'corpus/samples/tiny-llama.gguf'\n"
        "gv.validate(f); list(gv.validate_many([f])); gv.hash(f); gv.dump(f); gv.rules()\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_the_wheel_requires_nothing_but_offers_the_numpy_extra() -> None:
    from importlib.metadata import metadata, requires

    reqs = [r.replace(" ", "").replace('"', "'") for r in requires("gguf-validate") or []]
    # Every requirement belongs to an extra (none is installed by default) ...
    assert all(";extra==" in r for r in reqs), reqs
    # ... and NumPy is the `numpy` extra's.
    assert "numpy>=1.23;extra=='numpy'" in reqs, reqs
    assert "numpy" in (metadata("gguf-validate").get_all("Provides-Extra") or [])
