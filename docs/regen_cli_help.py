"""Rewrite the ``--help`` blocks of docs/cli.md from the parser, and its table of JSON keys from
lipopt/schema.py (run after changing either).

    python docs/regen_cli_help.py

tests/test_docs.py fails while a block is stale. Each block is the first code block after its
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


def render(page: str) -> str:
    """``page`` with every help block replaced by the parser's current output, and the JSON
    keys' table by :func:`lipopt.schema.markdown_table`."""
    from lipopt.schema import markdown_table

    head, rest = page.split(KEYS_START, 1)
    page = head + KEYS_START + markdown_table() + KEYS_END + rest.split(KEYS_END, 1)[1]
    for title, argv in COMMANDS.items():
        pattern = re.compile(r"(## `" + re.escape(title) + r"`.*?```\n)(.*?)(\n```)", re.S)
        text = help_text(argv)
        page = pattern.sub(lambda m, text=text: m.group(1) + text + m.group(3), page, count=1)
    return page


if __name__ == "__main__":
    PAGE.write_text(render(PAGE.read_text()))
    print(f"rewrote the help blocks of {PAGE}")
