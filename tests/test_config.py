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
