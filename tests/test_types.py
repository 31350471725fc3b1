"""The package type-checks: ``python -m mypy lipopt`` with the project's own configuration
([tool.mypy] in pyproject.toml; mypy pinned in the dev extra) reports no error (issue 43).
Where mypy is missing the test skips, except under CI (env ``CI`` set), which must run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import require_module

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_reports_no_error():
    require_module("mypy")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "lipopt"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    report = (done.stdout + done.stderr).strip()
    assert done.returncode == 0, f"mypy lipopt (exit {done.returncode}):\n{report}"
    assert report.startswith("Success: no issues found"), report
