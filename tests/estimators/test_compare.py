"""lipopt.compare: running every method, the table and the JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lipopt import Box
from lipopt.compare import Unavailable, compare, format_table, parse_methods, to_json
from lipopt.estimators import ESTIMATORS, Estimate, Kind, lipsdp
from lipopt.estimators.base import EstimatorUnavailable
from tests.helpers import random_network

NET = random_network(np.random.default_rng(0), [3, 8, 8, 2])
BOX = Box(np.zeros(3), np.ones(3))
C = [1.0, -1.0]


@pytest.fixture(scope="module")
def results():
    return compare(NET, BOX, "linf", C)


def test_every_method_in_order(results):
    assert [r.name for r in results] == list(ESTIMATORS)
    assert list(ESTIMATORS) == [
        "naive",
        "random",
        "attack",
        "fastlip",
        "liplp",
        "clever",
        "seqlip",
        "lipsdp",
        "eclipse-fast",
        "eclipse",
        "eclipse-local",
        "shor",
        "hr2",
        "lipopt3",
        "lipopt4",
        "lipmip",
    ]


def test_table_has_relative_errors_against_the_exact(results):
    table = format_table(results)
    lines = table.splitlines()
    assert lines[0].split() == ["method", "value", "guarantee", "rel.", "error", "seconds"]
    exact_line = next(line for line in lines if line.startswith("lipmip"))
    assert "exact" in exact_line and "+0.00%" in exact_line
    assert any(line.startswith("fastlip") and "upper" in line for line in lines)


def test_json_shape(results):
    data = json.loads(json.dumps(to_json(results)))
    names = [m["name"] for m in data["methods"]]
    assert names == list(ESTIMATORS)
    kinds = {m["name"]: m["kind"] for m in data["methods"]}
    assert kinds["random"] == "lower" and kinds["lipmip"] == "exact"
    assert kinds["clever"] == "heuristic" and kinds["fastlip"] == "upper"
    exact = data["exact"]
    for m in data["methods"]:
        assert {"name", "value", "kind", "seconds"} <= set(m)
        if m["value"] is None:  # not run here (e.g. lipsdp without cvxpy): say why
            assert m["reason"], m
            continue
        if m["name"] in ("shor", "hr2", "lipopt3", "lipopt4"):  # proven, and by how much
            assert m["proof_correction"] >= 0, m
        else:
            assert "proof_correction" not in m
        if m["kind"] == "upper":
            assert m["value"] >= exact * (1 - 1e-6)
        if m["kind"] == "lower":
            assert m["value"] <= exact * (1 + 1e-6)


def test_unavailable_methods_are_listed_with_their_reason(monkeypatch):
    def missing(*args, **kwargs):
        raise EstimatorUnavailable("LipSDP needs cvxpy: pip install 'lipopt[sdp]'")

    monkeypatch.setitem(ESTIMATORS, "lipsdp", missing)
    out = compare(NET, BOX, "linf", C, methods="fastlip,lipsdp")
    assert isinstance(out[1], Unavailable) and "lipopt[sdp]" in out[1].reason
    assert out[1].kind is Kind.UPPER
    table = format_table(out)
    assert "lipsdp" in table and "not run" in table and "relative errors need" in table
    data = to_json(out)
    assert data["methods"][1]["value"] is None and "reason" in data["methods"][1]
    assert data["exact"] is None


def test_progress_messages_and_options():
    messages: list[str] = []
    out = compare(
        NET,
        BOX,
        "l1",
        C,
        methods=["random", "lipmip"],
        progress=messages.append,
        options={"random": {"samples": 10}},
    )
    assert all(isinstance(r, Estimate) for r in out)
    assert out[0].detail["samples"] == 10
    assert messages[0] == "random: running" and messages[-1].startswith("lipmip: ")


def test_lipmip_time_limited_is_labelled(monkeypatch):
    fake = Estimate("lipmip", 9.0, Kind.UPPER, 1.0, {"status": "time_limit"})
    table = format_table([fake])
    assert "upper (time_limit)" in table
    assert to_json([fake])["methods"][0]["status"] == "time_limit"


def test_bad_method_names():
    with pytest.raises(ValueError, match="unknown method"):
        parse_methods("fastlip,nope")
    with pytest.raises(ValueError, match="no methods"):
        parse_methods(" , ")
    assert parse_methods("FastLip, liplp,fastlip") == ["fastlip", "liplp"]
    with pytest.raises(ValueError, match="unknown method"):
        compare(NET, BOX, "linf", C, methods=["fastlip"], options={"bogus": {}})


def test_lipsdp_kind_is_upper_by_default():
    assert lipsdp.KIND is Kind.UPPER


# ------------------------------------------------------------------ the `lipopt compare` CLI
@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory):
    from tests.helpers import save_onnx

    return str(save_onnx(NET, tmp_path_factory.mktemp("compare") / "net.onnx"))


def _cli(capsys, *argv):
    from lipopt.cli import main

    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_json_guarantees_hold_against_the_oracle(onnx_model, capsys):
    from tests.oracle import brute_force_lipschitz, from_lipopt

    code, out, err = _cli(
        capsys,
        "compare",
        onnx_model,
        "--box",
        "0,1",
        "--c",
        "1,-1",
        "--json",
        "--methods",
        "random,attack,fastlip,liplp,naive,lipmip",
    )
    assert code == 0, err
    data = json.loads(out)
    truth = brute_force_lipschitz(*from_lipopt(NET, BOX), np.array(C), "linf").value
    values = {m["name"]: m for m in data["methods"]}
    assert values["lipmip"]["kind"] == "exact"
    assert values["lipmip"]["value"] == pytest.approx(truth, rel=1e-6)
    for m in data["methods"]:
        if m["kind"] == "upper":
            assert m["value"] >= truth * (1 - 1e-6), m
        if m["kind"] == "lower":
            assert m["value"] <= truth * (1 + 1e-6), m
    assert "lipmip: running" in err  # progress on stderr, results alone on stdout


def test_cli_table_and_quiet(onnx_model, capsys):
    code, out, err = _cli(
        capsys,
        "compare",
        onnx_model,
        "--center",
        "0.5,0.5,0.5",
        "--radius",
        "0.1",
        "--norm",
        "l1",
        "--c",
        "1,-1",
        "--methods",
        "fastlip,lipmip",
        "--quiet",
    )
    assert code == 0 and err == ""
    assert out.splitlines()[0].split()[:3] == ["method", "value", "guarantee"]
    assert any(line.startswith("lipmip") and "exact" in line for line in out.splitlines())


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--box", "0,1", "--c", "1,-1", "--methods", "fastlip,nope"], "unknown method"),
        (["--box", "0,1"], "pass --c"),
        (["--box", "0,1", "--c", "1,-1", "--time-limit", "0"], "--time-limit must be positive"),
        (["--c", "1,-1"], "no domain given"),
    ],
)
def test_cli_bad_input_is_one_line(onnx_model, capsys, argv, message):
    code, out, err = _cli(capsys, "compare", onnx_model, *argv, "--quiet")
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_method_that_fails_is_listed_with_its_reason(monkeypatch):
    from lipopt.estimators.base import EstimatorFailed

    def failing(*args, **kwargs):
        raise EstimatorFailed("LipSDP: the SDP solver SCS ended with status infeasible")

    monkeypatch.setitem(ESTIMATORS, "lipsdp", failing)
    out = compare(NET, BOX, "linf", C, methods="lipsdp,fastlip")
    assert isinstance(out[0], Unavailable) and "infeasible" in out[0].reason
    assert isinstance(out[1], Estimate)
