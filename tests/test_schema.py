"""Every key of a result's JSON is documented in one place, lipopt/schema.py (docs/cli.md's table
is generated from it and checked current by tests/docs/test_docs.py)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import numpy as np

from lipopt import Box, LinfBall, lipschitz
from lipopt.result import LipschitzResult
from lipopt.schema import MODEL_KEYS, RESULT_KEYS, TIMING_KEYS
from tests.helpers import random_network

ROOT = Path(__file__).resolve().parent.parent


def _recorded(key: str) -> set[str]:
    """The union of ``key``'s entries over the characterisation record (373 solves, every
    lever on and off)."""
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            found.update(node.get(key, ()))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads((ROOT / "tests" / "data" / "characterisation.json").read_text()))
    return found


def test_every_recorded_model_statistic_and_stage_is_documented():
    stats, stages = _recorded("model_stats"), _recorded("stages")
    assert stats and stages
    assert stats <= set(MODEL_KEYS), sorted(stats - set(MODEL_KEYS))
    assert stages <= set(TIMING_KEYS), sorted(stages - set(TIMING_KEYS))


def test_every_field_of_a_result_is_documented():
    names = {f.name for f in fields(LipschitzResult)} - {"model_stats"}
    assert names <= set(RESULT_KEYS), sorted(names - set(RESULT_KEYS))


def test_the_json_of_solves_on_several_paths_is_documented():
    net = random_network(np.random.default_rng(0), [2, 8, 8, 2])
    box = Box([0.0, 0.0], [1.0, 1.0])
    results = [
        lipschitz(net, box, c=[1.0, -1.0]),  # the domain split
        lipschitz(net, box, c=[1.0, -1.0], split=False),  # the region search
        lipschitz(net, LinfBall([0.5, 0.5], 0.2), norm="l1", c=[1.0, -1.0], split=False),
        lipschitz(net, box, output_norm="linf", split=False, regions=False),
        lipschitz(net, box, c=[1.0, -1.0], mode="lp", split=False, regions=False),
    ]
    documented = set(RESULT_KEYS) | set(MODEL_KEYS)
    for res in results:
        out = res.to_dict()
        assert set(out) <= documented, sorted(set(out) - documented)
        assert set(out["timings"]) <= set(TIMING_KEYS), sorted(out["timings"])
