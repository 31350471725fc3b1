"""The nodes of a plan: which strategy answers a query, with what, and what runs after it.

A plan is a small tree of frozen values made by :func:`lipopt.plan.plan` before anything is
solved; :mod:`lipopt.driver` runs it. Decisions that need a solve first (does the problem look
hard after bounds, who leads the race, how much time is left) are named guards inside the
strategies, with their thresholds in the :class:`~lipopt.policy.Policy`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from lipopt.config import SolveConfig
from lipopt.formulation.build import Formulation
from lipopt.search.activation_bab import ActivationBabOptions
from lipopt.search.regions import RegionOptions
from lipopt.search.split import SplitOptions
from lipopt.solvers.registry import capabilities


@dataclass(frozen=True)
class Mip:
    """One model maximised: bounds, build, start points, then the model whole, or as a union
    (``decompose``: one MIP per ℓ1 candidate; ``split``: two halves, ``"sign"`` or ``"gate"``).

    Attributes:
        config: the options (``formulation`` resolved, ``decompose`` a bool).
        solver: the adapter's name.
        subnets: bound the forward model's tangents by sub-network constants first.
        attack: the gradient attack and pattern climb give the first cutoff.
        products: the ℓ1 candidates of two hidden layers maximised as gate products.
        l2: the query's input norm is ℓ2 (see :attr:`l2_objective`).
        l2_ball: the domain is an ℓ2 ball (see :attr:`ball_encoding`).
    """

    config: SolveConfig
    solver: str
    decompose: bool
    subnets: bool
    attack: bool
    split: str | None
    products: bool
    l2: bool = False
    l2_ball: bool = False

    @property
    def formulation(self) -> Formulation:
        assert self.config.formulation is not None
        return self.config.formulation

    @property
    def quadratic_rows(self) -> bool:
        """The model may use quadratic rows: exact mode on a solver that takes them (SCIP), for
        the ℓ2 input norm's ``t <= ||g||_2^2`` and the ℓ2 output norm's ball (the LP mode's
        relaxation must stay an LP)."""
        return self.config.exact and capabilities(self.solver).quadratic

    @property
    def l2_objective(self) -> str | None:
        """The ℓ2 input norm's objective: ``"quadratic"`` (``t <= ||g||_2^2``) where the model
        may use quadratic rows, else ``"chords"`` (refined at each solution, any MIP solver);
        None for ℓ∞ and ℓ1."""
        if not self.l2:
            return None
        return "quadratic" if self.quadratic_rows else "chords"

    @property
    def ball_encoding(self) -> str | None:
        """How the model takes an ℓ2-ball domain: ``"quadratic row"`` (``||x - c||_2^2 <= ρ^2``)
        where it may use quadratic rows, ``"tangent cuts"`` (its bounding box, cut at each
        solution outside it) in exact mode elsewhere, ``"bounding box"`` in the LP relaxation;
        None for the other domains."""
        if not self.l2_ball:
            return None
        if not self.config.exact:
            return "bounding box"
        return "quadratic row" if self.quadratic_rows else "tangent cuts"


@dataclass(frozen=True)
class RegionSearch:
    """The linear regions searched directly (:mod:`lipopt.search.regions`).

    Attributes:
        options: the search's limits (``regions="auto"``: raised at run time where few neurons
            are unstable).
        bounds: the bound propagation method.
        fallback: ``regions="auto"``: what answers after an unfinished search (its bounds kept).
        race_now: where the formulations race: raced at once instead of searching when the
            problem looks hard after bounds (``auto_region_unstable_share`` of the policy).
    """

    options: RegionOptions
    bounds: str
    fallback: Node | None = None
    race_now: Race | None = None


@dataclass(frozen=True)
class DomainSplit:
    """Branch and bound on the input box (:mod:`lipopt.search.split`); each part answered by
    ``part``."""

    options: SplitOptions
    part: Mip


@dataclass(frozen=True)
class Racer:
    """One racer: its model, solver, and whether it searches regions before its MIP; ``bab``:
    the racer is the branch and bound on the activations (:class:`ActivationBab`, its part
    MIPs on ``solver``), not a MIP of ``formulation``."""

    name: str
    formulation: Formulation
    solver: str
    regions: bool | str
    bab: bool = False


@dataclass(frozen=True)
class Race:
    """The two formulations raced on two processes (:mod:`lipopt.strategies.race`).

    Attributes:
        config: the caller's options (the base of every sub-question).
        probe: first the backward model alone for ``race_after`` seconds.
        racers: the two racers.
        instead: ``sign_split``: the backward model split on a gradient sign instead of racing.
        split_leader: stop the racers at the decision and split the leader.
        bab_racer: the activation branch and bound, which runs alone on every core instead of
            the race (on a Dask cluster: takes the forward racer's place, and the leader split
            is off) where at least ``bab_from_share`` of the neurons with a kink (None: no share
            rule), or at least ``bab_from_count`` of them, are unstable under linear bounds when
            the race starts; None: never.
    """

    config: SolveConfig
    probe: bool
    racers: tuple[Racer, ...]
    instead: bool
    split_leader: bool
    bab_racer: Racer | None = None
    bab_from_share: float | None = 1.0
    bab_from_count: int | None = None

    @property
    def bab_runs_alone(self) -> bool:
        """Where taken, the branch and bound runs alone instead of the race: everywhere but on a
        Dask cluster (there its own search keeps one process, so it races)."""
        return self.config.scheduler is None

    def bab_by_count(self, unstable: int) -> bool:
        """The count rule: the branch and bound is offered and ``unstable`` neurons reach
        ``bab_from_count``."""
        count = self.bab_from_count
        return self.bab_racer is not None and count is not None and unstable >= count


@dataclass(frozen=True)
class ActivationBab:
    """Branch and bound on the activations (:mod:`lipopt.search.activation_bab`): Jacobian
    bounds on each part, margin LPs at the leaves; ``solver``: the adapter of its MIPs on
    small parts (the user's solver; HiGHS for ``auto``); ``workers``: processes that solve those
    parts side by side (None: one per core; 1: in turn, here); ``scheduler``: a Dask
    scheduler's address to solve them on instead; ``attack``: start from the gradient attack
    and the pattern climb (False, ``attack=False``: from the search's own short attack)."""

    options: ActivationBabOptions
    solver: str = "highs"
    workers: int | None = None
    scheduler: str | None = None
    attack: bool = True


@dataclass(frozen=True)
class BabAfter:
    """``first`` for ``share`` of the time limit; if it has not finished, ``bab`` for the rest
    from its best point, the better bounds of both kept (a meet)."""

    first: Node
    bab: ActivationBab
    share: float


@dataclass(frozen=True)
class UnionParts:
    """A union of input sets: each part planned and answered as a sub-question under
    ``config``, the maximum kept (:mod:`lipopt.strategies.union_parts`)."""

    config: SolveConfig


Node = Union[Mip, RegionSearch, DomainSplit, Race, ActivationBab, BabAfter, UnionParts]
