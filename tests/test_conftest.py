"""The ``requires_solver`` gate: skip where a solver is missing, but fail in CI for CBC."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import solver_gate

ROOT = Path(__file__).resolve().parent.parent


def test_gate_runs_skips_or_fails():
    assert solver_gate("cbc", ["highs", "cbc"], {"CI": "true"}) is None
    assert solver_gate("cbc", ["highs"], {})[0] == "skip"
    action, reason = solver_gate("cbc", ["highs"], {"CI": "true"})
    assert action == "fail" and "apt-get install coinor-cbc" in reason
    assert solver_gate("gurobi", ["highs"], {"CI": "true"})[0] == "skip"  # licence: optional


def test_ci_run_without_cbc_fails_the_cbc_tests(tmp_path):
    """A real pytest run with no ``cbc`` on PATH: its CBC test skips locally, errors under CI."""
    (tmp_path / "test_needs_cbc.py").write_text(
        "import pytest\n\n@pytest.mark.requires_solver('cbc')\ndef test_x():\n    pass\n"
    )
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "tests.conftest",
        "-p",
        "no:cacheprovider",
        str(tmp_path / "test_needs_cbc.py"),
    ]
    env = {**os.environ, "PATH": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)
    local = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert local.returncode == 0 and "1 skipped" in local.stdout, local.stdout
    ci = subprocess.run(
        command, env={**env, "CI": "true"}, cwd=tmp_path, capture_output=True, text=True
    )
    assert ci.returncode == 1 and "1 error" in ci.stdout, ci.stdout
    assert "CI must test solver 'cbc'" in ci.stdout
