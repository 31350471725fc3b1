"""The activation branch and bound's tuned thresholds, each with the measurement behind it: part
of :mod:`lipopt.policy`, which imports every one of them (read and patch them there; a
:class:`~lipopt.policy.Policy` snapshot reads that module's values)."""

from __future__ import annotations

#: ``bab=True``: a part with at most this many unstable neurons goes to the MIP on its bounds
#: (lipopt.strategies.bab_parts), not split further (0: never). benchmarks/activation_bab.py
#: --bab-only, 15 s, six random unit boxes: at 8 two finish in 1.7, 5.4 s, the others stop at
#: 15.2, 15.9, 31.5, 23.9; at 16 0.4, 6.5 s and 15.1, 16.0, 32.0, 24.2; at 24 1.0, 1.0 s but 15.2,
#: 16.1, 41.9, 31.8 ([16,16,16,2]: a few part MIPs of 17-24 unstable took the whole limit)
BAB_MIP_AT = 16

#: the planned activation branch and bound splits by the ``score`` rule (the unstable neuron
#: with the largest ``min(-l, u) · max(|ly|, |uy|)``) where its root has at least this many
#: unstable neurons with a kink, else by the ``layer`` rule (the earliest layer's best). At 30 s
#: (results/bab_branching.md) from 32 unstable on score's bracket was tighter on 10 of 11 cases
#: (digits CNN at 0.1: ratio 2.84 -> 2.23; MLP at 0.1: 1.48 -> 1.36, 1.74 -> 1.54), looser on
#: one (MLP at 0.05, 34 unstable: 1.007 -> 1.039). Layer is kept below 32 for the searches that
#: finish: on the test network of docs/performance.md it closed in 511 parts against 2587
BAB_SCORE_MIN_UNSTABLE = 32

#: the activation branch and bound's margin LPs on nodes whose first layers are stable (they
#: drop parts holding no interior point, and offer points) take at most this share of its time;
#: past it nodes are kept unchecked. On the 784-input MNIST-shaped MLP at radius 0.05 each LP
#: took about 80 ms against about 2 ms to bound a node: 206 nodes in 20 s checking every one,
#: 5079 at 0.5 and 6119 at 0.25 (upper bound 16.1 -> 10.6 and 10.2); the digits MLP at 0.1,
#: 2906 -> 5424 and 7859 (665.1 -> 648.9 and 639.0); the CNNs' checks take 0.1-0.2 s in all
#: (benchmarks/results/bab_prefix_share.md). 0.5, not 0.25: in the race on the speed suite's
#: [10,20,20,1] unit box (ℓ∞, seed 0) 0.25 took 21.1 s (median of 3) against 18.2 s, 0.5 17.0 s
BAB_PREFIX_LP_SHARE = 0.5

#: the activation branch and bound tightens each child's unstable ranges over the input-space
#: cut its split implies (lipopt.bounds.split_cuts) on networks with at most this many inputs.
#: The search alone 20 s (results/bab_split_cuts.md), upper bound without / with the cuts: on
#: the 64-input digits networks lower on all 7 cases (MLP at 0.1: 596.4 -> 502.3, 647.5 ->
#: 557.8; CNN at 0.05: 378.5 -> 333.5; at 0.1: 828.0 -> 816.1); on the 784-input MNIST-shaped
#: ones (each cut sorts 784 breakpoints per row) higher on 2 of 3 (MLP at 0.05: 10.69 -> 11.70).
#: Nothing was measured between 64 and 784 inputs; 128 keeps to the side that was
BAB_CUT_MAX_INPUTS = 128

#: the branch and bound bounds each node it takes from the heap (ℓ∞ input) by lipopt.bounds.
#: sign_groups too, groups of this many entries; after PROBE of them they stop where their mean
#: relative gain is under MIN_GAIN (0.0 on the digits CNN at 0.05, 0.026-0.032 where they paid).
#: Search alone 30 s, upper bound without / with groups of 8 (consecutive): digits MLP at 0.1
#: 543.0 / 500.0, bundled digits CNN at 0.05 1221.8 / 859.7, digits CNN at 0.1 800.0 / 799.6.
#: The order is chosen on the root (lipopt.bounds.sign_order): the best candidate, then at most
#: SWAPS swaps within SHARE of the time left (docs/performance.md)
BAB_SIGN_GROUP = 8
BAB_SIGN_GROUP_PROBE = 16
BAB_SIGN_GROUP_MIN_GAIN = 0.01
BAB_SIGN_ORDER_SWAPS = 200
BAB_SIGN_ORDER_SHARE = 0.05

#: the activation branch and bound's node bounds hold each sparse matrix of at most this many
#: entries dense (not the sign groups', of 1000s of rows). results/scale_dense_layers*.md, 60 s,
#: parts before / after: bundled digits CNN at 0.05 399-407 / 501-550; digits CNN 1552-2394 /
#: 1984-2805 at 0.05, 436-1968 / 492-2048 at 0.1 (1 << 18, its 131 072-entry layer dense: fewer)
BAB_DENSE_MAX_ENTRIES = 1 << 16

#: the branch and bound's open nodes hold at most this many bytes of bounds; past it the lowest
#: are parked, their bounds rebuilt from their splits when reached (lipopt.search.bab_heap)
BAB_HEAP_MAX_BYTES = 1 << 30

#: a node with at most MAX_UNSTABLE unstable neurons may get one LP over the network's relaxation
#: as it leaves the heap, dropped where it proves the node empty (split_empty), while that LP
#: finds at least MIN_RATE x its cost in nodes of the recent nodes of its size empty
#: (lipopt.search.bab_empty). Digits MLP at 0.1, search alone 30 s: of the 300 open nodes of
#: highest bound it proved 184/184 empty under 10 unstable, 45/55 at 10-19, 9/16 at 20-29, 2/32
#: at 30-39, 0/13 above (another image: 97/166 at 30-39). results/scale_empty_lp.md, 60 s: that
#: MLP 462.7 -> 460.1, 452.9 -> 454.0, 514.2 -> 511.3; the digits CNN's rows within 0.35 %
BAB_EMPTY_LP_MAX_UNSTABLE = 64
BAB_EMPTY_LP_MIN_RATE = 0.25

__all__ = [
    "BAB_MIP_AT",
    "BAB_SCORE_MIN_UNSTABLE",
    "BAB_PREFIX_LP_SHARE",
    "BAB_CUT_MAX_INPUTS",
    "BAB_SIGN_GROUP",
    "BAB_SIGN_GROUP_PROBE",
    "BAB_SIGN_GROUP_MIN_GAIN",
    "BAB_SIGN_ORDER_SWAPS",
    "BAB_SIGN_ORDER_SHARE",
    "BAB_DENSE_MAX_ENTRIES",
    "BAB_HEAP_MAX_BYTES",
    "BAB_EMPTY_LP_MAX_UNSTABLE",
    "BAB_EMPTY_LP_MIN_RATE",
]
