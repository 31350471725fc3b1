"""The keys of a result as JSON (``lipopt solve --json``, :meth:`LipschitzResult.to_dict`), each
with its meaning: the one place they are written down. docs/cli.md's table is generated from
here (``python docs/regen_cli_help.py``), and the tests check that every key a solve emits is
here."""

from __future__ import annotations

from lipopt.status import Status, listed

#: top-level keys, in the order the table lists them
RESULT_KEYS: dict[str, str] = {
    "value": "certified upper bound on the constant; the exact constant when `status` is "
    "`optimal` (the same as `upper`)",
    "upper": "the same as `value`",
    "lower": "value attained at `witness`, recomputed in numpy (`null` if no witness)",
    "status": f"{listed(Status)} ([statuses](#statuses-and-exit-status))",
    "witness": "the input where `lower` is attained (list of numbers, or `null`)",
    "exact_certified": "the witness's region is proven full-dimensional and `lower` matches "
    "`value`: true exactly when `status` is `optimal`",
    "timings": "seconds per stage (below); they add up to `seconds`",
    "solver": "solver name and version; `region search (HiGHS LPs)` where the region search "
    "answered alone, `... bounds only` where bound propagation did",
    "norm": "input norm, `linf` or `l1`",
    "c": "output weighting (`null` with `--output-norm`)",
    "output_norm": "output norm (`null` with `--c`)",
    "nodes": "branch-and-bound nodes as reported by the solver (`0`: solved at the root; "
    "`null` where not reported)",
    "refinements": "re-solves that excluded lower-dimensional activation patterns",
    "message": 'notes on this answer (how it was found, why it stopped), or `""`',
    "gap": "(upper − lower) / \\|upper\\|, or `null`",
    "tolerance": "`optimal` means \\|value − lower\\| ≤ tolerance · max(1, \\|value\\|) (1e-6), "
    "with `lower` attained inside a full-dimensional region: its point's pre-activations clear "
    "of 0 by 1e-9 of their magnitude, or a margin LP's ball of radius > 1e-9",
    "seconds": "sum of `timings`",
    "model": "the ONNX path as given (the CLI adds it)",
}

#: keys of the model's statistics, flattened into the top level; the first four always
MODEL_KEYS: dict[str, str] = {
    "variables": "variables of the model as built (0 where no model was built)",
    "constraints": "constraints of the model as built",
    "binaries": "binary variables of the model as built",
    "unstable_neurons": "neurons whose sign the bounds leave open",
    "relaxed_binaries": "`--mode lp`: the would-be binaries, relaxed to [0, 1]",
    "regions": "the region search: linear regions reached",
    "region_nodes": "the region search: nodes explored",
    "region_lps": "the region search: LPs solved",
    "parts": "the domain split: parts made",
    "parts_solved": "the domain split: parts solved by a MIP",
    "parts_pruned": "the domain split: parts pruned by their bounds",
    "candidates": "the ℓ1 decomposition: candidate MIPs (one per gradient entry and sign)",
    "candidates_solved": "the ℓ1 decomposition: candidates solved",
    "candidates_cut_off": "the ℓ1 decomposition: candidates shown below the value reached",
    "gate_products": "the ℓ1 decomposition: 1 where its candidates used gate products",
    "sign_split_entry": "`--sign-split`: the gradient entry whose sign was split on",
    "gate_split_neuron": "`--gate-split`: the first-layer neuron whose gate was split on",
    "halves_cut_off": "the sign or gate split: halves shown below the value reached",
    "bab_nodes": "`--bab`: parts bounded by the activation branch and bound",
    "bab_pruned": "`--bab`: parts pruned by their bound",
    "bab_leaves": "`--bab`: parts of one activation pattern checked by a margin LP",
    "bab_parts_solved": "`--bab`: parts answered by their MIP (in this process or a worker)",
    "bab_regrouped": "`--bab`: parts whose sign-group bound was lower than their own (ℓ∞ input)",
    "bab_parked": "`--bab`: open parts parked under the memory cap (bounds rebuilt when reached)",
}

#: keys of ``timings``, in the order the summary's ``time`` line lists them
TIMING_KEYS: dict[str, str] = {
    "bounds": "bound propagation (and sub-network tangent bounds)",
    "build": "building the model",
    "solve": "the solver (and, where the solver failed or proved nothing, the time up to it)",
    "verify": "checking witnesses and regions",
    "regions": "the linear-region search",
    "split": "the domain split's own work",
    "probe": "the backward model's first seconds before a race",
    "race": "the race's wall time beyond the answering racer's stages",
    "attack": "the gradient attack, the pattern climb and checking a start point",
    "sampling": "the ℓ1 decomposition's sampled start and the climb from it",
    "bab": "`--bab`: the activation branch and bound (its bounds, start and leaf LPs)",
}


def markdown_table() -> str:
    """The table of docs/cli.md: every key with its meaning, then the model's and the
    timings' keys."""
    rows = ["| key | meaning |", "|---|---|"]
    rows += [f"| `{key}` | {meaning} |" for key, meaning in RESULT_KEYS.items()]
    rows += [f"| `{key}` | {meaning} |" for key, meaning in MODEL_KEYS.items()]
    rows += [f"| `timings.{key}` | {meaning} |" for key, meaning in TIMING_KEYS.items()]
    return "\n".join(rows)
