"""``LipschitzResult.to_dict`` (the CLI's ``--json`` and every batch line) never copies the
Pyomo model it carries (issue 44, item 2: ``dataclasses.asdict`` deep-copied it, which cost more
than the solve on larger networks)."""

from __future__ import annotations

import json

import numpy as np

from lipopt.result import LipschitzResult


class _UncopyableModel:
    """Stands for a large Pyomo model: copying it is an error, so a copy cannot go unseen."""

    def __deepcopy__(self, memo: dict) -> None:
        raise AssertionError("the model was deep-copied")

    def __copy__(self) -> None:
        raise AssertionError("the model was copied")


def _result(model: object) -> LipschitzResult:
    return LipschitzResult(
        value=2.0, lower=1.5, upper=2.0, status="time_limit", witness=np.array([0.25, 0.5]),
        exact_certified=False,
        model_stats={"variables": 3, "constraints": 4, "binaries": 1, "unstable_neurons": 1},
        timings={"bounds": 0.1, "solve": 2.0}, solver="highs 1.15", norm="linf",
        c=np.array([1.0, -1.0]), model=model,  # type: ignore[arg-type]
    )  # fmt: skip


def test_to_dict_leaves_the_model_out_and_never_copies_it():
    out = _result(_UncopyableModel()).to_dict()
    assert "model" not in out
    assert out["witness"] == [0.25, 0.5] and out["c"] == [1.0, -1.0]
    assert out["variables"] == 3 and out["unstable_neurons"] == 1
    assert out["gap"] == 0.25 and out["seconds"] == 2.1
    json.dumps(out)


def test_to_dict_copies_the_mutable_fields_it_returns():
    result = _result(None)
    out = result.to_dict()
    out["timings"]["solve"] = 99.0
    assert result.timings["solve"] == 2.0
