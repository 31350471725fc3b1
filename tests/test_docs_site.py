"""The docs site (MkDocs, Material theme, API reference by mkdocstrings) builds with
``--strict``: a broken page, a missing page in the navigation, an anchor or a docstring griffe
cannot read fails the suite (issue 33). Links from the docs to other files of the repository
are checked by tests/test_docs.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import require_module

ROOT = Path(__file__).resolve().parent.parent


def test_the_docs_site_builds_strict(tmp_path):
    require_module("mkdocs")
    require_module("material")
    require_module("mkdocstrings_handlers.python")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "api" / "index.html").read_text()
    assert "Box" in api and "LipschitzResult" in api and "solver_error" in api
