"""``bab=True``: the activation branch and bound answers instead of the plan (issue 45). Its
answers against the brute-force oracle, its brackets when stopped, the command line, the plan
and the refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

import lipopt
from lipopt.cli import main
from lipopt.plan import describe
from tests import oracle
from tests.helpers import box_or_ball, random_network, save_onnx

CASES = [
    ([3, 10, 10, 1], "box", "linf"),
    ([3, 8, 8, 2], "linf_ball", "linf"),
    ([4, 8, 6, 2], "box", "l1"),
    ([2, 10, 10, 1], "linf_ball", "l1"),
]


@pytest.mark.parametrize("widths, kind, norm", CASES)
def test_bab_is_exact_against_the_oracle(widths, kind, norm):
    rng = np.random.default_rng(sum(widths))
    net = random_network(rng, widths)
    c = rng.normal(size=widths[-1])
    domain = box_or_ball(kind, widths[0])
    result = lipopt.lipschitz(net, domain, norm=norm, c=c, bab=True)
    truth = oracle.brute_force_lipschitz(*oracle.from_lipopt(net, domain), c=c, input_norm=norm)
    assert result.status == "optimal", result.message
    assert result.value == pytest.approx(truth.value, rel=1e-6, abs=1e-9)
    assert result.exact_certified and result.model_stats["bab_nodes"] >= 1
    grad = net.gradients(np.asarray(result.witness)[None, :], c)[0]
    assert float(np.abs(grad).sum() if norm == "linf" else np.abs(grad).max()) == pytest.approx(
        result.lower, rel=1e-9
    )


def test_a_stopped_bab_brackets_the_constant():
    rng = np.random.default_rng(5)
    net = random_network(rng, [4, 12, 12, 1])
    domain = lipopt.Box(np.zeros(4), np.ones(4))
    truth = oracle.brute_force_lipschitz(
        *oracle.from_lipopt(net, domain), c=[1.0], input_norm="linf"
    )
    result = lipopt.lipschitz(net, domain, bab=True, time_limit=0.05)
    assert result.lower is not None
    assert result.lower <= truth.value * (1 + 1e-9) + 1e-12
    assert truth.value <= result.upper * (1 + 1e-9) + 1e-12


def test_the_command_line_takes_bab(tmp_path, capsys):
    net = random_network(np.random.default_rng(2), [2, 8, 8, 1])
    path = str(save_onnx(net, tmp_path / "net.onnx"))
    code = main(["solve", path, "--box", "0,1", "--bab", "--json", "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "optimal" and out["bab_nodes"] >= 1
    assert out["solver"].startswith("activation branch and bound")


def test_the_plan_names_it_and_the_refusals_are_one_line():
    net = random_network(np.random.default_rng(1), [2, 6, 1])
    box = lipopt.Box(np.zeros(2), np.ones(2))
    from lipopt.config import SolveConfig
    from lipopt.plan import facts_here, plan
    from lipopt.policy import Policy
    from lipopt.query import Query

    node = plan(Query(net, box, lipopt.InputNorm.LINF, np.ones(1)), SolveConfig(bab=True),
                facts_here(frozenset()), Policy.current())  # fmt: skip
    assert describe(node).startswith("activation branch and bound")
    with pytest.raises(lipopt.LipschitzError, match="needs mode 'exact'"):
        lipopt.lipschitz(net, box, bab=True, mode="lp")
    with pytest.raises(lipopt.LipschitzError, match="must be True or False"):
        lipopt.lipschitz(net, box, bab="yes")
