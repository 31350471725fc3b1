"""Small ReLU networks that are *not* in general position (issue 31), for the fuzz tests and
``benchmarks/degenerate.py``: zero biases, integer weights, duplicated, mirrored, dead and zero
neurons, exact zeros and neurons scaled by 1e±6, over boxes and balls, with both input norms and
every output norm.

Like :mod:`tests.oracle` this module imports nothing from lipopt: a case is plain numpy weights,
an oracle domain spec and the question's norms, so the oracle can judge it independently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Weights = list[tuple[np.ndarray, np.ndarray]]

#: the ways a case leaves general position
FEATURES = (
    "zero_bias", "integer", "duplicate", "mirror", "dead", "zero_neuron", "exact_zeros", "scaled",
)  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One question: weights, domain (an oracle spec), input norm, and ``c`` or an output norm."""

    seed: int
    features: tuple[str, ...]
    weights: Weights
    domain: tuple
    norm: str
    c: np.ndarray | None
    output_norm: str | None

    @property
    def widths(self) -> list[int]:
        return [self.weights[0][0].shape[1]] + [w.shape[0] for w, _ in self.weights]

    def describe(self) -> str:
        """One line that names the case well enough to rebuild it from its seed."""
        fixed = self.c is not None
        objective = f"c={self.c.tolist()}" if fixed else f"output_norm={self.output_norm}"
        return (f"seed {self.seed}: widths {self.widths}, {'+'.join(self.features)}, "
                f"{self.domain[0]} domain, norm {self.norm}, {objective}")


def _widths(rng: np.random.Generator) -> list[int]:
    d = int(rng.integers(1, 4))
    hidden = [int(rng.integers(2, 6)) for _ in range(int(rng.integers(1, 3)))]
    return [d, *hidden, int(rng.integers(1, 4))]


def _base_weights(rng: np.random.Generator, widths: list[int], integer: bool) -> Weights:
    weights: Weights = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=False):
        if integer:
            w = rng.integers(-2, 3, size=(fan_out, fan_in)).astype(float)
            b = rng.integers(-1, 2, size=fan_out).astype(float)
        else:
            w = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_out, fan_in))
            b = rng.normal(0.0, 0.5, size=fan_out)
        weights.append((w, b))
    return weights


def _degrade(rng: np.random.Generator, weights: Weights, feature: str) -> None:
    """Apply one feature in place to one hidden layer (or to all, for biases and zeros)."""
    if feature == "zero_bias":
        for _, b in weights:
            b[:] = 0.0
        return
    if feature == "exact_zeros":
        for w, _ in weights:
            w[rng.random(w.shape) < 0.3] = 0.0
        return
    k = int(rng.integers(0, len(weights) - 1))  # a hidden layer
    w, b = weights[k]
    i, j = (int(v) for v in rng.choice(w.shape[0], size=2, replace=w.shape[0] < 2))
    if feature == "duplicate":
        w[j], b[j] = w[i], b[i]
    elif feature == "mirror":
        w[j], b[j] = -w[i], -b[i]
    elif feature == "dead":
        w[j], b[j] = 0.0, -1.0
    elif feature == "zero_neuron":
        w[j], b[j] = 0.0, 0.0
    elif feature == "scaled":
        factor = 1e6 if rng.random() < 0.5 else 1e-6
        w[j], b[j] = w[j] * factor, b[j] * factor
        weights[k + 1][0][:, j] /= factor


def _domain(rng: np.random.Generator, d: int) -> tuple:
    kind = ("box", "linf", "l1")[int(rng.integers(0, 3))]
    if kind == "box":
        lower = -rng.uniform(0.2, 1.0, size=d) if rng.random() < 0.7 else rng.uniform(-1, 0.5, d)
        return ("box", lower, lower + rng.uniform(0.5, 2.0, size=d))
    center = np.zeros(d) if rng.random() < 0.5 else rng.uniform(-0.5, 0.5, size=d)
    return (kind, center, float(rng.uniform(0.2, 1.0)))


def _objective(rng: np.random.Generator, m: int) -> tuple[np.ndarray | None, str | None]:
    if rng.random() < 0.5:
        c = rng.integers(-1, 2, size=m).astype(float)
        if not c.any():
            c[0] = 1.0
        return c, None
    return None, ("abs",) if m == 1 else ("l1", "linf", "cross")[int(rng.integers(0, 3))]


def degenerate_case(seed: int) -> Case:
    """The case of ``seed``: random widths (1-3 inputs, one or two hidden layers of 2-5, 1-3
    outputs), one to three of :data:`FEATURES`, a box or ball, an input norm and an objective."""
    rng = np.random.default_rng(seed)
    widths = _widths(rng)
    chosen = rng.choice(len(FEATURES), size=int(rng.integers(1, 4)), replace=False)
    features = tuple(FEATURES[i] for i in sorted(chosen))
    weights = _base_weights(rng, widths, "integer" in features)
    for feature in features:
        if feature != "integer":
            _degrade(rng, weights, feature)
    domain = _domain(rng, widths[0])
    norm = "linf" if rng.random() < 0.5 else "l1"
    c, output_norm = _objective(rng, widths[-1])
    if output_norm is not None and isinstance(output_norm, tuple):
        output_norm = output_norm[0]
    return Case(seed, features, weights, domain, norm, c, output_norm)


#: an optimal answer must equal the truth to this, relative (absolute below 1)
EXACT_TOLERANCE = 1e-6
#: a bracket may miss the truth by float rounding only
BRACKET_SLACK = 1e-9


def verdict(truth: float, status: str, upper: float, lower: float | None) -> str:
    """How an answer compares with the oracle's ``truth``: ``exact`` (optimal and equal),
    ``bracket`` (not optimal, and ``lower <= truth <= upper``), or what is wrong with it."""
    scale = max(1.0, abs(truth))
    if upper < truth - BRACKET_SLACK * scale:
        return "wrong: upper below the truth"
    if lower is not None and lower > truth + BRACKET_SLACK * scale:
        return "wrong: lower above the truth"
    if status != "optimal":
        return "bracket"
    exact = upper <= truth + EXACT_TOLERANCE * scale
    return "exact" if exact else "wrong: optimal above the truth"
