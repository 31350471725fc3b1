"""The command line: outputs, examples in help, and one clear line for each bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from lipopt.cli import main
from lipopt.network import Affine, Network, ReLU
from tests.helpers import random_network, save_onnx


@pytest.fixture
def two_output_model(tmp_path):
    net = random_network(np.random.default_rng(3), [3, 6, 6, 2])
    return str(save_onnx(net, tmp_path / "net.onnx")), net


@pytest.fixture
def one_output_model(tmp_path):
    net = random_network(np.random.default_rng(4), [2, 5, 1])
    return str(save_onnx(net, tmp_path / "one.onnx")), net


def _run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_json_has_the_promised_keys(two_output_model, capsys):
    path, net = two_output_model
    code, out, _ = _run(capsys, "solve", path, "--box", "-1,1", "--c", "1,-1", "--json")
    assert code == 0
    data = json.loads(out)
    for key in (
        "value",
        "lower",
        "upper",
        "status",
        "witness",
        "exact_certified",
        "solver",
        "seconds",
        "variables",
        "constraints",
        "binaries",
        "unstable_neurons",
    ):
        assert key in data, key
    assert data["status"] == "optimal" and data["exact_certified"] is True
    witness = np.array(data["witness"])
    assert np.all(witness >= -1) and np.all(witness <= 1)
    grad = net.gradients(witness, [1.0, -1.0])
    assert np.abs(grad).sum() == pytest.approx(data["lower"], rel=1e-9)


def test_cli_human_summary(one_output_model, capsys):
    path, _ = one_output_model
    code, out, err = _run(
        capsys, "solve", path, "--center", "-0.5,0.2", "--radius", "0.3", "--norm", "l1"
    )
    assert code == 0
    assert "value" in out and "optimal" in out and "exact" in out
    assert "lipopt:" in err  # progress messages go to stderr


def test_cli_quiet_prints_no_progress(one_output_model, capsys):
    path, _ = one_output_model
    code, _, err = _run(capsys, "solve", path, "--box", "0,1", "--quiet")
    assert code == 0 and err == ""


def test_cli_l1_ball_and_file_inputs(one_output_model, tmp_path, capsys):
    path, _ = one_output_model
    np.save(tmp_path / "x.npy", np.array([0.1, -0.2]))
    (tmp_path / "b.json").write_text(json.dumps({"lower": [-1, 0], "upper": [0, 2]}))
    code, out, _ = _run(
        capsys,
        "solve",
        path,
        "--center",
        str(tmp_path / "x.npy"),
        "--radius",
        "0.5",
        "--ball",
        "l1",
        "--json",
    )
    assert code == 0 and json.loads(out)["status"] == "optimal"
    code, out, _ = _run(capsys, "solve", path, "--box", str(tmp_path / "b.json"), "--json")
    witness = json.loads(out)["witness"]
    assert -1 <= witness[0] <= 0 and 0 <= witness[1] <= 2


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--box", "1,0"], "lower < upper"),
        (["--box", "0,1,2"], "LO,HI"),
        (["--center", "0.1,0.2", "--radius", "0.1"], "takes 3 inputs"),
        (["--center", "0.1,0.2,0.3", "--radius", "-0.1"], "positive"),
        (["--center", "0.1,nan,0.3", "--radius", "0.1"], "NaN"),
        (["--center", "0.1,0.2,0.3"], "both --center and --radius"),
        ([], "no domain"),
        (["--box", "0,1", "--center", "0,0,0", "--radius", "1"], "not both"),
        (["--box", "0,1", "--c", "1,2,3"], "3 entries"),
        (["--box", "0,1", "--c", "1,-1", "--solver", "nosuch"], "unknown solver"),
        (["--box", "0,1", "--c", "1,-1", "--time-limit", "-5"], "positive"),
        (["--box", "0,1", "--c", "1,-1", "--gap", "2"], "gap"),
        (["--box", "0,1"], "pass c"),
        (["--box", "0,1", "--output-norm", "linf", "--formulation", "forward"], "fixed c"),
        (["--box", "0,1", "--c", "1,-1", "--workers", "0"], "workers must be at least 1"),
    ],
)
def test_cli_bad_input_is_one_clear_line(two_output_model, capsys, args, fragment):
    path, _ = two_output_model
    code, out, err = _run(capsys, "solve", path, "--quiet", *args)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert fragment in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "content, fragment",
    [(None, "no such ONNX file"), (b"not an onnx file", "ONNX")],
)
def test_cli_bad_model_file(tmp_path, capsys, content, fragment):
    path = tmp_path / "bad.onnx"
    if content is not None:
        path.write_bytes(content)
    code, _, err = _run(capsys, "solve", str(path), "--box", "0,1", "--quiet")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert fragment in err


def test_cli_unknown_option_is_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["solve", "x.onnx", "--frobnicate"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--frobnicate" in err


@pytest.mark.parametrize("argv", [["--help"], ["solve", "--help"]])
def test_cli_help_shows_examples(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "lipopt solve" in out and "--box 0,1" in out


def test_cli_console_entry_point_runs_without_traceback(tmp_path):
    """The module runs as a program; a bad input exits 2 with one line on stderr."""
    net = Network.from_layers(
        [Affine(np.eye(2), np.zeros(2)), ReLU(), Affine(np.ones((1, 2)), [0.0])]
    )
    path = save_onnx(net, tmp_path / "n.onnx")
    ok = subprocess.run(
        [sys.executable, "-m", "lipopt.cli", "solve", str(path), "--box", "-1,1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["value"] == pytest.approx(2.0)
    bad = subprocess.run(
        [sys.executable, "-m", "lipopt.cli", "solve", str(path), "--box", "1,-1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1].startswith("lipopt solve: error:")


def test_cli_output_norm(two_output_model, capsys):
    path, _ = two_output_model
    code, out, _ = _run(capsys, "solve", path, "--box", "0,1", "--output-norm", "cross", "--json")
    data = json.loads(out)
    assert code == 0 and data["output_norm"] == "cross" and data["c"] is None


@pytest.mark.parametrize("method", ["cross", "pairwise", "naive"])
def test_cli_certify(two_output_model, capsys, method):
    path, net = two_output_model
    code, out, _ = _run(
        capsys,
        "certify",
        path,
        "--center",
        "0.2,-0.4,0.5",
        "--radius",
        "0.2",
        "--method",
        method,
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["predicted"] == int(np.argmax(net.forward([0.2, -0.4, 0.5])))
    assert 0 <= data["radius"] <= 0.2 and data["method"] == method
    code, out, _ = _run(capsys, "certify", path, "--center", "0.2,-0.4,0.5", "--radius", "0.2")
    assert code == 0 and "radius" in out and "predicted" in out


def test_cli_certify_bad_center(two_output_model, capsys):
    path, _ = two_output_model
    code, _, err = _run(
        capsys, "certify", path, "--center", "0.2,0.1", "--radius", "0.2", "--quiet"
    )
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_cli_json_stays_valid_with_verbose(one_output_model, capsys):
    path, _ = one_output_model
    code, out, err = _run(capsys, "solve", path, "--box", "0,1", "--json", "--verbose")
    assert code == 0 and json.loads(out)["status"] == "optimal"


def test_cli_ball_with_box_is_an_error(one_output_model, capsys):
    path, _ = one_output_model
    code, _, err = _run(capsys, "solve", path, "--box", "0,1", "--ball", "l1", "--quiet")
    assert code == 2 and "--ball" in err


def test_cli_lp_mode_reports_no_binaries(two_output_model, capsys):
    path, _ = two_output_model
    code, out, _ = _run(
        capsys, "solve", path, "--box", "0,1", "--c", "1,-1", "--mode", "lp", "--json"
    )
    data = json.loads(out)
    assert data["status"] == "relaxation" and data["binaries"] == 0 and data["relaxed_binaries"] > 0


@pytest.mark.parametrize(
    "levers",
    [
        ["--bounds", "interval", "--no-split"],
        ["--bounds", "lp", "--split"],
        ["--regions"],
        ["--no-split", "--no-regions"],
        ["--no-split", "--no-regions", "--formulation", "forward"],
        ["--no-split", "--no-regions", "--formulation", "backward"],
        ["--no-split", "--no-regions", "--norm", "l1", "--decompose", "--workers", "1"],
        ["--no-split", "--no-regions", "--norm", "l1", "--decompose", "--workers", "2"],
    ],
)
def test_cli_speed_levers_keep_the_value(one_output_model, capsys, levers):
    path, _ = one_output_model
    norm = levers[levers.index("--norm") : levers.index("--norm") + 2] if "--norm" in levers else []
    _, base, _ = _run(capsys, "solve", path, "--box", "0,1", "--json", *norm)
    code, out, _ = _run(capsys, "solve", path, "--box", "0,1", "--json", *levers)
    assert code == 0
    assert json.loads(out)["value"] == pytest.approx(json.loads(base)["value"], rel=1e-6)


def test_cli_region_search_summary_and_refusal(one_output_model, capsys):
    path, net = one_output_model
    code, out, _ = _run(capsys, "solve", path, "--box", "0,1", "--regions", "--quiet")
    assert code == 0
    assert "no MIP needed" in out and "[optimal: exact]" in out
    assert re.search(r"\b1 linear region reached|\b\d+ linear regions reached", out)
    code, _, err = _run(
        capsys, "solve", path, "--box", "0,1", "--regions", "--output-norm", "abs", "--quiet"
    )
    assert code != 0 and "fixed c" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cli_solvers_lists_every_adapter_and_the_default(capsys, monkeypatch):
    from lipopt.solvers import registry
    from lipopt.solvers.cbc import CbcSolver

    monkeypatch.setattr(CbcSolver, "available", lambda self: False)
    assert main(["solvers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    by_name = {line.split()[0]: line.split()[1] for line in lines[:-1]}
    assert list(by_name) == list(registry.ADAPTERS)
    assert by_name["highs"] == "usable" and by_name["cbc"] == "missing"
    assert "apt-get install coinor-cbc" in lines[list(by_name).index("cbc")]
    assert lines[-1].startswith("default: auto = highs")


def test_cli_time_line_shows_every_stage_that_ran():
    from lipopt.cli import _format_stages

    timings = {"race": 0.5, "bounds": 0.01, "solve": 15.0, "regions": 4.6, "probe": 5.0}
    line = _format_stages(timings)
    assert line == (
        "bounds 0.01, build 0.00, solve 15.00, verify 0.00, regions 4.60, probe 5.00, race 0.50"
    )
    parts = [float(part.split()[1]) for part in line.split(", ")]
    assert sum(parts) == sum(timings.values())  # the parts add up to the total
    assert _format_stages({"bounds": 1.0, "later": 2.0}).endswith("later 2.00")


def test_cli_subnet_bounds_switch(tmp_path, capsys):
    net = random_network(np.random.default_rng(6), [3, 8, 8, 2])
    path = str(save_onnx(net, tmp_path / "deep.onnx"))
    base = ["solve", path, "--box", "0,1", "--c", "1,-1", "--json", "--no-regions", "--no-split"]
    values = {}
    for switch in ("--subnet-bounds", "--no-subnet-bounds"):
        code, out, err = _run(capsys, *base, "--formulation", "forward", switch)
        assert code == 0
        assert ("sub-network MIPs" in err) == (switch == "--subnet-bounds")
        values[switch] = json.loads(out)["value"]
    _, out, err = _run(capsys, *base, "--formulation", "backward")
    assert "sub-network MIPs" not in err  # the backward model has no tangents
    assert values["--subnet-bounds"] == pytest.approx(json.loads(out)["value"], rel=1e-6)
    assert values["--no-subnet-bounds"] == pytest.approx(json.loads(out)["value"], rel=1e-6)
    with pytest.raises(SystemExit) as info:
        main([*base, "--subnet-bounds", "--no-subnet-bounds"])
    assert info.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_cli_attack_switch(tmp_path, capsys):
    net = random_network(np.random.default_rng(7), [3, 8, 8, 2])
    path = str(save_onnx(net, tmp_path / "net.onnx"))
    base = ["solve", path, "--box", "0,1", "--c", "1,-1", "--json", "--no-regions", "--no-split"]
    values = {}
    for switch in ("--attack", "--no-attack"):
        code, out, err = _run(capsys, *base, "--formulation", "backward", switch)
        assert code == 0
        assert ("attack: " in err) == (switch == "--attack")
        values[switch] = json.loads(out)["value"]
    assert values["--attack"] == pytest.approx(values["--no-attack"], rel=1e-6)
    code, out, err = _run(capsys, *base, "--attack", "--mode", "lp")
    assert code != 0 and "needs mode 'exact'" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as info:
        main([*base, "--attack", "--no-attack"])
    assert info.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_cli_sign_split(tmp_path, capsys):
    """--sign-split splits the backward model's search (progress names the entry) without
    changing the value; with the l1 norm it is a clear error."""
    net = random_network(np.random.default_rng(7), [3, 8, 8, 2])
    path = str(save_onnx(net, tmp_path / "net.onnx"))
    base = ["solve", path, "--box", "0,1", "--c", "1,-1", "--json", "--no-regions", "--no-split"]
    values = {}
    for extra in ([], ["--sign-split"]):
        code, out, err = _run(capsys, *base, "--formulation", "backward", *extra)
        assert code == 0
        assert ("splitting the search on the sign of g[" in err) == bool(extra)
        values[bool(extra)] = json.loads(out)["value"]
    assert values[True] == pytest.approx(values[False], rel=1e-6)
    code, out, err = _run(capsys, *base, "--sign-split", "--norm", "l1")
    assert code != 0 and "sign split needs" in err and "Traceback" not in err


def test_cli_gate_split(tmp_path, capsys):
    """--gate-split splits the domain on a first-layer neuron's hyperplane (progress names it)
    without changing the value; without a named formulation it is a clear error."""
    net = random_network(np.random.default_rng(7), [3, 8, 8, 2])
    path = str(save_onnx(net, tmp_path / "net.onnx"))
    base = ["solve", path, "--box", "0,1", "--c", "1,-1", "--json", "--no-regions", "--no-split"]
    values = {}
    for extra in ([], ["--gate-split"]):
        code, out, err = _run(capsys, *base, "--formulation", "forward", *extra)
        assert code == 0
        assert ("of the first layer" in err) == bool(extra)
        values[bool(extra)] = json.loads(out)["value"]
    assert values[True] == pytest.approx(values[False], rel=1e-6)
    code, out, err = _run(capsys, *base, "--gate-split")
    assert code != 0 and "needs formulation" in err and "Traceback" not in err


def test_cli_no_split_leader(tmp_path, capsys, monkeypatch):
    """--no-split-leader hands split_leader=False to lipschitz(); the default is True; the
    value is the same either way."""
    import lipopt.cli.solve as cli_module

    seen: list[bool] = []
    real = cli_module.lipschitz

    def spy(*args, **kwargs):
        seen.append(kwargs["split_leader"])
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_module, "lipschitz", spy)
    net = random_network(np.random.default_rng(7), [3, 8, 8, 2])
    path = str(save_onnx(net, tmp_path / "net.onnx"))
    base = ["solve", path, "--box", "0,1", "--c", "1,-1", "--json", "--no-split"]
    values = []
    for extra in ([], ["--no-split-leader"]):
        code, out, _ = _run(capsys, *base, *extra)
        assert code == 0
        values.append(json.loads(out)["value"])
    assert seen == [True, False]
    assert values[0] == pytest.approx(values[1], rel=1e-6)
