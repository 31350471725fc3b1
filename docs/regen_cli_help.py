"""Rewrite the ``--help`` blocks of docs/cli.md from the parser, its table of JSON keys from
lipopt/schema.py, and its statuses' verdicts and table from lipopt/status.py and
lipopt/cli/exits.py (run after changing any of them).

    python docs/regen_cli_help.py

tests/docs/test_docs.py fails while a block is stale. Each block is the first code block after its
``## `lipopt ... --help` `` heading, rendered at 80 columns.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

PAGE = Path(__file__).with_name("cli.md")
COMMANDS = {
    "lipopt --help": ["--help"],
    "lipopt solve --help": ["solve", "--help"],
    "lipopt solve --help-all": ["solve", "--help-all"],
}


def help_text(argv: list[str]) -> str:
    """The parser's help for ``argv``, wrapped at 80 columns."""
    os.environ["COLUMNS"] = "80"
    from lipopt.cli import make_parser

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        make_parser(show_all="--help-all" in argv).parse_args(argv)
    return out.getvalue().rstrip("\n")


#: the JSON keys' table sits between these two lines
KEYS_START = "<!-- json-keys: generated from lipopt/schema.py by docs/regen_cli_help.py -->\n"
KEYS_END = "\n<!-- /json-keys -->"
#: the summary's verdict of each status, and the statuses' table
VERDICTS = ("<!-- verdicts: generated from lipopt/status.py by docs/regen_cli_help.py -->\n",
            "\n<!-- /verdicts -->")  # fmt: skip
STATUSES = ("<!-- statuses: generated from lipopt/status.py by docs/regen_cli_help.py -->\n",
            "\n<!-- /statuses -->")  # fmt: skip


def verdicts() -> str:
    """The list of what ``lipopt solve``'s summary says after each status."""
    from lipopt.status import Status

    lines = [f"- `{status}: {status.facts.verdict}`" for status in Status]
    return ";\n".join(lines) + "."


def between(page: str, markers: tuple[str, str], text: str) -> str:
    """``page`` with ``text`` between the two marker lines."""
    start, end = markers
    head, rest = page.split(start, 1)
    return head + start + text + end + rest.split(end, 1)[1]


def render(page: str) -> str:
    """``page`` with every help block replaced by the parser's current output, and the JSON
    keys' table by :func:`lipopt.schema.markdown_table`, the statuses' by
    :func:`lipopt.cli.exits.statuses_table` and :func:`verdicts`."""
    from lipopt.cli.exits import statuses_table
    from lipopt.schema import markdown_table

    page = between(page, (KEYS_START, KEYS_END), markdown_table())
    page = between(page, VERDICTS, verdicts())
    page = between(page, STATUSES, statuses_table())
    for title, argv in COMMANDS.items():
        pattern = re.compile(r"(## `" + re.escape(title) + r"`.*?```\n)(.*?)(\n```)", re.S)
        text = help_text(argv)
        page = pattern.sub(lambda m, text=text: m.group(1) + text + m.group(3), page, count=1)
    return page


if __name__ == "__main__":
    PAGE.write_text(render(PAGE.read_text()))
    print(f"rewrote the help blocks of {PAGE}")
