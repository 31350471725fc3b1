"""The policy's numbers as the options' help and docs write them (:mod:`lipopt.config`), read
from :mod:`lipopt.policy` when the help is built, so the help cannot drift from the rules."""

from __future__ import annotations

from lipopt import policy


def count(n: int) -> str:
    """A count as the help writes it: 4000, 60 000."""
    return f"{n:,}".replace(",", " ") if n >= 10_000 else str(n)


#: the ℓ1 decomposition's input count, and the random points sampled for a start
DECOMPOSE_DIMS = str(policy.AUTO_DECOMPOSE_MIN_DIM)
SAMPLES = str(policy.DECOMPOSE_SAMPLES)
#: the region search's node budgets and projection limit
REGION_NODES = count(policy.AUTO_REGION_NODES)
REGION_NODES_FEW = count(policy.AUTO_REGION_NODES_FEW_UNSTABLE)
REGION_PROJECTED = count(policy.AUTO_REGION_PROJECTED_LIMIT)
#: the unstable share from which a problem looks hard, e.g. "90%" (argparse's help doubles %)
REGION_SHARE = f"{policy.AUTO_REGION_UNSTABLE_SHARE:.0%}"
#: the largest input count the domain split takes
SPLIT_DIMS = str(policy.AUTO_SPLIT_MAX_DIM)
#: the input counts on which the region search runs before the domain split, e.g. "3-4", and
#: the most neurons with a kink on which it does so on fewer inputs
FIRST_DIMS = f"{policy.AUTO_REGIONS_FIRST_MIN_DIM}-{policy.AUTO_SPLIT_MAX_DIM}"
FIRST_KINKED = str(policy.AUTO_REGIONS_FIRST_MAX_HIDDEN)
#: the race's leader split: after how many seconds, and how many must be left for it
LEADER = f"{policy.LEADER_AFTER:g}"
LEADER_LEFT = f"{policy.LEADER_AFTER + policy.MIN_LEADER_SPLIT_SECONDS:g}"
#: the unstable share from which the branch and bound takes the race's place on many inputs
BAB_SHARE = (
    "half" if policy.BAB_RACE_UNSTABLE_SHARE == 0.5 else f"{policy.BAB_RACE_UNSTABLE_SHARE:.0%}"
)
