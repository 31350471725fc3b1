"""A Griffe extension for the API reference: the Sphinx roles of lipopt's docstrings
(``:class:`~lipopt.Box```, ``:func:`lipschitz```, ``:data:`OP_HANDLERS```, ...) become code
spans that link to the object where the site documents it (mkdocs-autorefs' optional
references: a link when the target is on a page, plain code when it is not)."""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

#: ``:role:`target```, ``:py:role:`~target```, ``:role:`title <target>```
ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<body>[^`]+)`")
TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$")


def _full_path(obj: griffe.Object, target: str) -> str:
    """The dotted path ``target`` names, seen from ``obj``'s scope (as written if unknown)."""
    head = target.split(".", 1)[0]
    scope: Any = obj
    while scope is not None:
        try:
            resolved = scope.resolve(head)
        except Exception:  # noqa: BLE001 - griffe's NameResolutionError and alias errors
            scope = scope.parent
            continue
        return resolved + target[len(head) :]
    return target


def _reference(obj: griffe.Object, match: re.Match[str]) -> str:
    """One role as an optional cross-reference (the autorefs tag) around a code span."""
    body = match["body"].strip()
    titled = TITLED.match(body)
    target = (titled["target"] if titled else body).lstrip("~.!").removesuffix("()")
    if titled:
        title = titled["title"]
    elif body.startswith("~"):
        title = target.rsplit(".", 1)[-1]
    else:
        title = body.lstrip(".!")
    identifier = html.escape(_full_path(obj, target), quote=True)
    return (
        f'<autoref identifier="{identifier}" optional><code>{html.escape(title)}</code></autoref>'
    )


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring once the package is loaded."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring (each object is visited once)."""
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = ROLE.sub(lambda m: _reference(obj, m), obj.docstring.value)
