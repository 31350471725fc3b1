"""The docs run (issue 33): every ```python block of docs/*.md runs as written, the blocks of a
page in order in one namespace (a reader's session), from a folder where ``models/`` is the
bundled models' folder, so files the examples write land there. A block in doctest form runs
its ``>>>`` lines. The README's blocks are run by tests/test_readme.py."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(p.name for p in (ROOT / "docs").glob("*.md") if "```python" in p.read_text())


def code_of(block: str) -> str:
    """A block's code: as written, or its ``>>>``/``...`` lines where it is in doctest form."""
    lines = block.splitlines()
    if not any(line.startswith(">>> ") for line in lines):
        return block
    return "\n".join(line[4:] for line in lines if line.startswith((">>> ", "... ")))


@pytest.mark.parametrize("page", PAGES)
def test_the_python_of_a_docs_page_runs(page, tmp_path, monkeypatch, capsys):
    text = (ROOT / "docs" / page).read_text()
    if 'solver="cbc"' in text and shutil.which("cbc") is None and not os.environ.get("CI"):
        pytest.skip("CBC is not on PATH here (CI installs it)")
    (tmp_path / "models").symlink_to(ROOT / "models")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for number, block in enumerate(re.findall(r"```python\n(.+?)\n```", text, re.S)):
        exec(compile(code_of(block), f"docs/{page} block {number}", "exec"), namespace)  # noqa: S102
