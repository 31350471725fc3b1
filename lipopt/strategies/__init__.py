"""Strategies: each runs one kind of plan node and returns a :class:`~lipopt.bracket.Bracket`.

``mip`` (one model), ``region_search``, ``domain_split``, ``race``; with ``refine`` (one model
maximised with its no-good-cut refinements), ``pieces`` (a union of MIPs), ``decompose`` (the ℓ1
candidates) and ``halves`` (sign and gate splits) beneath them. docs/architecture.md shows how
they fit together and how to add one.
"""
