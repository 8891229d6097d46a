"""Every Python snippet in the README runs: those fenced as ```python everywhere, those fenced as
```python gpu where a GPU (and PyTorch) is usable."""
import os
import re
from pathlib import Path

import pytest

import ridge

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```python( gpu)?\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def snippets():
    text = README.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        marks = [pytest.mark.gpu] if match.group(1) else []
        found.append(pytest.param(match.group(2), id=f"README.md:{line}", marks=marks))
    return found


def test_the_readme_has_snippets_of_both_kinds():
    kinds = {bool(m.group(1)) for m in FENCE.finditer(README.read_text(encoding="utf-8"))}
    assert kinds == {True, False}


@pytest.mark.parametrize("code", snippets())
def test_readme_snippet_runs(code, tmp_path, monkeypatch):
    if "import torch" in code and ridge.device_count() > 0:
        pytest.importorskip("torch", reason="the snippet uses PyTorch, which is not installed here")
    # Run where the README's reader would (the checkout), but write into a scratch folder.
    (tmp_path / "results").symlink_to(README.parent / "results")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "results" not in p.parts]
    for path in written:
        assert path.stat().st_size > 0, f"{path} is empty"
