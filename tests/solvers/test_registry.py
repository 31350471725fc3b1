"""The registry: adapters by name, availability checked when asked, one-line errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

import lipopt
from lipopt import Box, SolverError
from lipopt.solvers import registry
from lipopt.solvers.cbc import CbcSolver
from lipopt.solvers.gurobi import GurobiSolver
from tests.helpers import random_network


def _usable(message: str) -> set[str]:
    """The solver names listed in ``(usable: a, b)`` of an error message."""
    listed = message.split("(usable: ")[1].split(")")[0]
    return {name.strip() for name in listed.split(",")}


def _solve(solver: str) -> None:
    net = random_network(np.random.default_rng(0), [2, 4, 1])
    lipopt.lipschitz(net, Box([0.0, 0.0], [1.0, 1.0]), solver=solver)


def test_registry_knows_every_adapter_with_an_install_hint():
    assert set(registry.ADAPTERS) == {"highs", "scip", "cbc", "gurobi"}
    assert set(registry.INSTALL_HINTS) == set(registry.ADAPTERS)
    for name, make in registry.ADAPTERS.items():
        assert make().name == name


def test_registry_available_lists_highs_first():
    usable = registry.available()
    assert usable[0] == "highs"
    assert set(usable) <= set(registry.ADAPTERS)


@pytest.mark.requires_solver("cbc")
def test_registry_get_is_case_insensitive():
    assert registry.get(" CBC ").name == "cbc"


def test_registry_unknown_solver_names_known_and_usable_ones():
    with pytest.raises(SolverError) as info:
        _solve("cplex")
    message = str(info.value)
    assert "unknown solver 'cplex'" in message
    assert "known solvers: auto, highs, scip, cbc, gurobi" in message
    assert "usable here: highs" in message
    assert "\n" not in message


def test_registry_missing_cbc_says_how_to_install(monkeypatch):
    monkeypatch.setitem(registry.ADAPTERS, "cbc", lambda: CbcSolver(path="/nonexistent/bin/cbc"))
    with pytest.raises(SolverError) as info:
        _solve("cbc")
    message = str(info.value)
    assert "'cbc' is not installed" in message
    assert "apt-get install coinor-cbc" in message
    assert "highs" in _usable(message) and "cbc" not in _usable(message)
    assert "\n" not in message


def test_registry_missing_gurobi_says_how_to_install(monkeypatch):
    monkeypatch.setattr(GurobiSolver, "available", lambda self: False)
    with pytest.raises(SolverError) as info:
        _solve("gurobi")
    message = str(info.value)
    assert "'gurobi' is not installed" in message
    assert 'pip install "lipopt[gurobi]"' in message
    assert "highs" in _usable(message) and "gurobi" not in _usable(message)
    assert "\n" not in message


def test_cbc_install_hint_is_the_registrys():
    assert CbcSolver.install_hint == registry.INSTALL_HINTS["cbc"]


def _fake_cbc(folder, banner: str, status: int = 0):
    folder.mkdir()
    fake = folder / "cbc"
    fake.write_text(f"#!/bin/sh\necho '{banner}'\nexit {status}\n")
    fake.chmod(0o755)
    return str(fake)


def test_cbc_uses_the_first_sound_cbc_on_path(monkeypatch, tmp_path):
    """The adapter takes a ``cbc`` from PATH, skipping what does not run as CBC (e.g. a stale
    pyenv shim) and the build known to claim wrong optima; unusable when nothing is left."""
    from lipopt.solvers import cbc

    broken = _fake_cbc(tmp_path / "shim", "pyenv: cbc: command not found", status=127)
    wrong = _fake_cbc(tmp_path / "wheel", "CBC devel (git:146ce89) — COIN-OR Branch and Cut")
    good = _fake_cbc(tmp_path / "debian", "Welcome to the CBC MILP Solver \nVersion: 2.10.8 ")
    folders = [str(tmp_path / name) for name in ("shim", "wheel")]
    monkeypatch.setenv("PATH", os.pathsep.join(folders))
    assert cbc.on_path() == [broken, wrong]
    assert cbc.executable() is None
    assert not CbcSolver().available()
    monkeypatch.setenv("PATH", os.pathsep.join([*folders, str(tmp_path / "debian")]))
    assert cbc.executable() == good
    assert CbcSolver().available()
    assert CbcSolver().version() == "2.10.8"


def test_registry_auto_is_highs():
    assert registry.get(" Auto ").name == "highs"
