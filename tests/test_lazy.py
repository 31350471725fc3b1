"""A solve loads no SciPy subpackage it does not use (issue 45, item 6): Pyomo imports
``scipy.stats``, ``scipy.integrate`` and ``scipy.spatial`` as soon as SciPy is loaded, which
lipopt.lazy defers to their first use; those modules still work in full afterwards."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SOLVE = """
import sys
import numpy as np
import lipopt
net = lipopt.Network.from_layers([
    lipopt.Affine(np.array([[1.0, -2.0], [0.5, 1.0]]), np.array([0.1, -0.2])),
    lipopt.ReLU(),
    lipopt.Affine(np.array([[1.0, 1.0]]), np.zeros(1)),
])
result = lipopt.lipschitz(net, lipopt.Box([0.0, 0.0], [1.0, 1.0]))
assert result.status == "optimal", result.status
"""


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_solve_imports_no_scipy_stats_spatial_or_integrate():
    out = _run(
        SOLVE
        + """
heavy = ("scipy.stats._stats_py", "scipy.spatial._qhull", "scipy.integrate._quadpack_py")
loaded = [m for m in heavy if m in sys.modules]
print(loaded)
"""
    )
    assert out.strip() == "[]"


def test_the_deferred_subpackages_work_in_full_after_a_solve():
    out = _run(
        SOLVE
        + """
from scipy import stats
import scipy.stats.distributions as distributions
from scipy.stats import qmc
from scipy.spatial import distance
import scipy.integrate
print(stats.norm.cdf(0.0), distributions.norm.cdf(0.0), qmc.Sobol.__name__,
      distance.euclidean([0, 0], [3, 4]), round(scipy.integrate.quad(lambda x: x, 0, 1)[0], 9))
"""
    )
    assert out.split() == ["0.5", "0.5", "Sobol", "5.0", "0.5"]


def test_a_submodule_imported_first_loads_its_package():
    out = _run(
        SOLVE
        + """
import scipy.stats.distributions as distributions
import scipy.stats
print(distributions.norm is scipy.stats.norm, "scipy.stats._stats_py" in sys.modules)
"""
    )
    assert out.split() == ["True", "True"]
