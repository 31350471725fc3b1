"""Small queries start fast (issue 45, item 6): ``import lipopt`` imports its public names on
first use, a model is built with ``pyomo.core`` (not ``pyomo.environ`` and its plugins), and
``lipopt solve`` loads neither the batch machinery nor the optional heavy packages. Each check
runs in a fresh process and reads ``sys.modules``; benchmarks/startup.py measures the time."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from tests.helpers import random_network, save_onnx

#: what a small solve must not load: Pyomo's plugins, lipopt's batch and estimator layers, the
#: optional packages of other commands, and scipy.optimize (~0.3 s: the margin LP goes to highspy
#: directly; only an ℓ2 ball's margin uses it)
NOT_FOR_A_SOLVE = (
    "pyomo.environ",
    "scipy.optimize",
    "pyomo.gdp",
    "lipopt.batch",
    "lipopt.io.vnnlib",
    "lipopt.estimators",
    "lipopt.compare_run",
    "torch",
    "cvxpy",
    "dask",
    "matplotlib",
)


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_import_lipopt_loads_no_third_party_package():
    out = _run(
        """
        import sys
        import lipopt
        print(sorted(m for m in sys.modules if m.split(".")[0] in
                     ("lipopt", "numpy", "scipy", "pyomo", "onnx", "highspy")))
        """
    )
    assert out.strip() == "['lipopt']"


def test_the_public_names_resolve_on_first_use():
    out = _run(
        """
        import lipopt
        import lipopt.certify  # the submodules named as the functions: the functions stay
        import lipopt.lipschitz
        from lipopt import certify
        print(callable(lipopt.certify), callable(lipopt.lipschitz), callable(certify),
              lipopt.Box.__name__, "Network" in dir(lipopt))
        """
    )
    assert out.split() == ["True", "True", "True", "Box", "True"]


def _solve_then(model: Path, setup: str, report: str) -> str:
    """Code that runs ``setup``, then ``lipopt solve model --box 0,1`` (which must be exact),
    then ``report`` (its indentation that of this string's lines)."""
    return f"""
        import contextlib, io, runpy, sys
        {setup}
        sys.argv = ["lipopt", "solve", {str(model)!r}, "--box", "0,1", "--json"]
        answer = io.StringIO()
        with contextlib.redirect_stdout(answer):
            try:
                runpy.run_module("lipopt.cli", run_name="__main__")
            except SystemExit as stop:
                assert stop.code == 0, stop.code
        assert '"status": "optimal"' in answer.getvalue(), answer.getvalue()
        {report}
        """


#: what a solve printed of Pyomo and SciPy's deferred extras: those it imported for real
LOADED_FOR_REAL = (
    "from lipopt.lazy import _Unloaded; "
    "print([m for m in ('pyomo.core', 'scipy.stats') "
    "if m in sys.modules and not isinstance(sys.modules[m], _Unloaded)])"
)


def test_a_small_solve_loads_only_what_it_runs(tmp_path: Path):
    """Nothing of :data:`NOT_FOR_A_SOLVE`; and as the [2,8,8,1] plan searches the regions
    before any split (planner.searches_first) and the search finishes, no model is built and
    Pyomo stays unloaded too (lazy.SEARCH_MODULES)."""
    model = save_onnx(random_network(np.random.default_rng(0), [2, 8, 8, 1]), tmp_path / "t.onnx")
    report = f"print([m for m in {NOT_FOR_A_SOLVE!r} if m in sys.modules]); {LOADED_FOR_REAL}"
    assert _run(_solve_then(model, "", report)).split("\n")[:2] == ["[]", "[]"]


def test_the_split_after_a_stopped_search_loads_pyomo_but_not_scipys_extras(tmp_path: Path):
    model = save_onnx(random_network(np.random.default_rng(0), [2, 8, 8, 1]), tmp_path / "t.onnx")
    setup = "from lipopt import policy; policy.AUTO_REGION_NODES = 1; "
    setup += "policy.AUTO_REGION_NODES_FEW_UNSTABLE = 1"
    assert _run(_solve_then(model, setup, LOADED_FOR_REAL)).strip() == "['pyomo.core']"


def test_a_solver_check_that_imports_pyomo_keeps_scipys_extras_deferred():
    """Gurobi's availability check imports Pyomo's Gurobi interface, before the solve loads
    its modules: SciPy's extras are deferred before it (driver.answer), not loaded (~1 s)."""
    out = _run(
        """
        import sys
        import numpy as np
        import lipopt
        from tests.helpers import random_network
        net = random_network(np.random.default_rng(0), [2, 8, 8, 1])
        try:
            lipopt.lipschitz(net, lipopt.Box(np.zeros(2), np.ones(2)), solver="gurobi")
        except lipopt.LipschitzError as err:  # not installed or licensed here: still checked
            print("unavailable:", err, file=sys.stderr)
        from lipopt.lazy import _Unloaded
        print("pyomo.common.dependencies" in sys.modules,
              isinstance(sys.modules.get("scipy.stats"), _Unloaded))
        """
    )
    assert out.split()[-1] == "True"  # scipy.stats still the stand-in
