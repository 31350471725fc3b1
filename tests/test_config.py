"""SolveConfig is the one declaration of every option: lipschitz()'s signature and docstring, the
command line's flags, the batch's options and the sub-questions' inheritance follow from it."""

from __future__ import annotations

import argparse
import inspect
import re
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from lipopt import config as config_module
from lipopt import configure as configure_module
from lipopt.batch.instances import SolveOptions
from lipopt.cli import make_parser
from lipopt.cli.common import add_config_arguments, config_options
from lipopt.cli.solve import _solve_options
from lipopt.config import LEVER_DEFAULTS, LEVERS, OWN, SolveConfig
from lipopt.lipschitz import lipschitz
from lipopt.options import Group, Kind, declarations, option
from lipopt.query import LipschitzError

#: lipschitz()'s parameters that are the question, not options of how to answer it
QUESTION = ("network", "domain", "norm", "c", "output_norm", "progress")


def _documented(function) -> list[str]:
    """The parameter names of a Google-style ``Args:`` section, in order."""
    args = inspect.getdoc(function).split("Args:\n", 1)[1]
    return re.findall(r"^    (\w+): ", args, flags=re.M)


def test_lipschitz_signature_is_the_declarations():
    parameters = inspect.signature(lipschitz).parameters
    options = {name: p.default for name, p in parameters.items() if name not in QUESTION}
    assert options == LEVER_DEFAULTS
    assert set(LEVERS) == set(options)


def test_lipschitz_documents_every_parameter_once():
    documented = _documented(lipschitz)
    assert sorted(documented) == sorted(inspect.signature(lipschitz).parameters)
    assert len(documented) == len(set(documented))


def test_every_option_is_declared_and_the_defaults_are_the_public_ones():
    declared = declarations(SolveConfig)
    assert list(declared) == [f.name for f in fields(SolveConfig)]
    assert LEVER_DEFAULTS["formulation"] == "auto"  # one default, no patch
    assert OWN == {"split", "regions", "formulation", "time_limit"}


def test_a_sub_question_sets_its_own_options():
    parent = SolveConfig(gap=0.1, bounds="interval")
    child = parent.sub(split=False, regions=False, formulation=None, time_limit=5.0)
    assert (child.gap, child.bounds, child.time_limit) == (0.1, "interval", 5.0)
    with pytest.raises(TypeError, match="formulation, time_limit"):
        parent.sub(split=False, regions=False)


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("gap", 1.0, "gap must be in"),
        ("time_limit", 0.0, "time limit must be positive"),
        ("workers", True, "workers must be a whole number"),
        ("threads", 0, "threads must be at least 1"),
        ("split", "yes", "split must be True, False, 'auto' or SplitOptions"),
        ("decompose", 1, "decompose must be True, False or 'auto'"),
        ("attack", "no", "attack must be True, False or 'auto'"),
        ("products", 1, "products must be True or False"),
    ],
)
def test_the_declared_validators_refuse_with_the_old_messages(option, value, message):
    configure_module.check_declared(LEVER_DEFAULTS, tuple(LEVER_DEFAULTS))  # the defaults pass
    with pytest.raises(LipschitzError, match=re.escape(message)):
        configure_module.check_declared({**LEVER_DEFAULTS, option: value}, (option,))


def test_solve_passes_on_every_option_that_has_a_flag():
    args = make_parser(show_all=True).parse_args(["solve", "m.onnx", "--box", "0,1"])
    passed = set(_solve_options(args, print)) - {"progress"}
    flagged = {name for name, (spec, _) in declarations(SolveConfig).items() if spec.flag}
    assert passed == flagged
    assert {name: getattr(args, name) for name in passed} == {
        name: getattr(LEVER_DEFAULTS[name], "value", LEVER_DEFAULTS[name]) for name in passed
    }


def test_the_batch_takes_the_options_declared_for_it_with_their_defaults():
    batch = config_options(batch=True)
    own = [f for f in fields(SolveOptions) if f.name not in ("norm", "c", "output_norm")]
    assert [f.name for f in own] == list(batch)
    assert {f.name: f.default for f in own} == {name: LEVER_DEFAULTS[name] for name in batch}


@dataclass(frozen=True)
class _Extended(SolveConfig):
    """A SolveConfig with one option more, declared as every option is."""

    example_flag: bool = option(
        False, kind=Kind.FLAG, group=Group.SPEED, help="an example lever (off by default)"
    )


def test_a_declared_field_is_all_a_flag_needs():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser, config_options(declaration=_Extended), declaration=_Extended)
    assert parser.parse_args(["--example-flag"]).example_flag is True
    assert parser.parse_args([]).example_flag is False
    assert "an example lever" in parser.format_help()


def test_lipopt_solve_lists_a_new_declared_option(monkeypatch):
    monkeypatch.setattr(config_module, "SolveConfig", _Extended)
    args = make_parser(show_all=True).parse_args(["solve", "m", "--box", "0,1", "--example-flag"])
    assert args.example_flag is True
    assert _solve_options(args, print)["example_flag"] is True


def _regen_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "regen_cli_help.py"
    spec = importlib.util.spec_from_file_location("regen_cli_help", path)
    regen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regen)
    return regen


def test_the_docs_option_table_gets_a_row_for_a_new_declared_option(monkeypatch):
    """docs/cli.md's table of solving options is written from the declarations: a new field
    is a new row, with its flag, help and shown default."""
    monkeypatch.setattr(config_module, "SolveConfig", _Extended)
    regen = _regen_module()
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    rows = regen.solving_tables(page).split("<!-- /solve-options -->")[0].splitlines()
    assert "| `--example-flag` | an example lever (off by default) |  |" in rows
    assert any(row.startswith("| `--time-limit SECONDS` | stop after this long") for row in rows)


#: the policy's constants the options' help states, set to values found nowhere else in it
ODD_POLICY = {
    "AUTO_SPLIT_MAX_DIM": 7, "AUTO_DECOMPOSE_MIN_DIM": 9, "AUTO_REGION_NODES": 4321,
    "AUTO_REGION_NODES_FEW_UNSTABLE": 65_432, "AUTO_REGION_PROJECTED_LIMIT": 123_457,
    "AUTO_REGION_UNSTABLE_SHARE": 0.83, "AUTO_REGIONS_FIRST_MIN_DIM": 5,
    "AUTO_REGIONS_FIRST_MAX_HIDDEN": 41, "BAB_MIP_AT": 19, "BAB_RACE_MIN_UNSTABLE": 67,
    "BAB_RACE_MIN_INPUTS": 29, "BAB_RACE_UNSTABLE_SHARE": 0.61, "RACE_AFTER": 6.5,
    "BAB_ATTACK_RESTARTS": 11, "DECOMPOSE_SAMPLES": 2345, "CLIMB_SAMPLED_STARTS": 4,
    "LEADER_AFTER": 33.0, "EARLY_LEADER_AFTER": 12.0, "DECISIVE_RATIO": 1.45,
}  # fmt: skip

#: what the help must then say, per option (help, off, shown and docs together)
ODD_SAID = {
    "split": ["at most 7 inputs", "<= 7 inputs"],
    "decompose": ["≥ 9 dimensions", ">= 9 dimensions", "best of 2345 random"],
    "regions": ["for 4321 nodes", "65 432", "123 457", "83%", "5-7 inputs", "41 "],
    "bab": ["at most 19 unstable", "67+", "from 29 inputs 61%"],
    "formulation": ["finished in 6.5 s", "83% or more", "83%% or more"],
    "attack": ["4 best of 2345", "(11 searches)"],
    "split_leader": ["after 33 s", "from 12 s on", "1.45 times", "93 s"],
}


def test_the_options_help_states_the_policy_it_runs_on():
    """The help and docs of the options follow lipopt.policy, not numbers copied into them:
    with every constant they state set to an odd value (in a fresh interpreter, before
    lipopt.config is imported), each option says the new value and no longer the old."""
    import json
    import subprocess
    import sys

    from lipopt import policy

    script = (
        "import json, sys\nimport lipopt.policy as p\n"
        "for k, v in json.loads(sys.argv[1]).items(): setattr(p, k, v)\n"
        "from lipopt.config import SolveConfig\nfrom lipopt.options import declarations\n"
        "print(json.dumps({n: ' '.join(str(getattr(o, a) or '') for a in "
        "('help', 'off', 'shown', 'doc')) for n, (o, _) in declarations(SolveConfig).items()}))"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, json.dumps(ODD_POLICY)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    said = json.loads(run.stdout)
    for name, phrases in ODD_SAID.items():
        for phrase in phrases:
            assert phrase in said[name], (name, phrase)
    assert f"{policy.BAB_RACE_MIN_UNSTABLE}+" not in said["bab"]
    assert f"for {policy.AUTO_REGION_NODES} nodes" not in said["regions"]
    assert f"finished in {policy.RACE_AFTER:g} s" not in said["formulation"]
