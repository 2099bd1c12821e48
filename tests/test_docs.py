"""Docs run: every Python block of README.md (and of the docs pages in RUNNABLE_DOCS) executes, and the docstring examples pass as doctests."""

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNNABLE_DOCS = ["README.md", "docs/cache.md", "docs/performance.md"]  # docs/ray.md's blocks need a cluster's data
README_BLOCKS = [
    (f"{doc}-{i}", block)
    for doc in RUNNABLE_DOCS
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), flags=re.S))
]


def test_readme_has_python_examples():
    assert len(README_BLOCKS) >= 2


@pytest.mark.parametrize("block", [b for _, b in README_BLOCKS], ids=[name for name, _ in README_BLOCKS])
def test_readme_python_block_runs(block, capsys, tmp_path, monkeypatch):
    """Run the block in a fresh folder (with data/); where a print line carries its output in a comment, the
    output must match."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").symlink_to(ROOT / "data")
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    shown = [c.split(":")[0] if c.startswith("(") else c
             for c in re.findall(r"^print\(.*\)\s+#\s*(.*?)\s*$", block, flags=re.M)]
    for expected in shown:
        assert expected in printed, (expected, printed)


MODULES = ["bertfeat.batching", "bertfeat.models", "bertfeat.embedder", "bertfeat.encode", "bertfeat.union"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
