"""Rewrite the ``--help`` blocks of docs/cli.md from the parser, its table of JSON keys from
lipopt/schema.py, its statuses' verdicts and table from lipopt/status.py and
lipopt/cli/exits.py, and the tables of the solving options of ``solve`` and ``batch`` from their
declarations in lipopt/config.py (run after changing any of them).

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
from typing import Any

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

#: the solving options of ``lipopt solve`` and of ``lipopt batch``, from their declarations
GENERATED = "generated from lipopt/config.py by docs/regen_cli_help.py -->\n"
SOLVE_OPTIONS = ("<!-- solve-options: " + GENERATED, "\n<!-- /solve-options -->")
BATCH_OPTIONS = ("<!-- batch-options: " + GENERATED, "\n<!-- /batch-options -->")


def flag_cell(name: str, spec: Any) -> str:
    """How the option's flags read in a table: ``--gap REL``, ``--mode {exact,lp}``,
    ``--decompose``, ``--no-decompose``, ``--no-products``."""
    from lipopt.options import Kind

    flag = "--" + name.replace("_", "-")
    if spec.kind is Kind.VALUE:
        return f"`{flag} {spec.metavar or name.upper()}`"
    if spec.kind is Kind.CHOICE:
        return f"`{flag} {{{','.join(spec.choices)}}}`"
    if spec.kind is Kind.SWITCH:
        return f"`{flag}`, `--no-{flag[2:]}`"
    return f"`--no-{flag[2:]}`" if spec.kind is Kind.NEGATED else f"`{flag}`"


def options_table(names: tuple[str, ...], texts: dict[str, str], shown: dict[str, str]) -> str:
    """The markdown table of the declared options ``names``: each one's flags, its meaning
    (``texts``, else the declared docs text, else its help) and its default as shown."""
    from lipopt.config import SolveConfig
    from lipopt.options import declarations

    declared = declarations(SolveConfig)
    rows = ["| option | meaning | default |", "|---|---|---|"]
    for name in names:
        spec, _ = declared[name]
        text = texts.get(name) or spec.doc or spec.help.replace("%%", "%")
        rows.append(f"| {flag_cell(name, spec)} | {text} | {shown.get(name, spec.shown)} |")
    return "\n".join(rows)


def solving_tables(page: str) -> str:
    """``page`` with the tables of ``solve``'s and ``batch``'s solving options regenerated."""
    from lipopt.cli.batch import BATCH_HELPS, BATCH_SHOWN
    from lipopt.cli.common import config_options

    page = between(page, SOLVE_OPTIONS, options_table(config_options(), {}, {}))
    batch = options_table(config_options(batch=True), BATCH_HELPS, BATCH_SHOWN)
    return between(page, BATCH_OPTIONS, batch)


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
    page = solving_tables(page)
    for title, argv in COMMANDS.items():
        pattern = re.compile(r"(## `" + re.escape(title) + r"`.*?```\n)(.*?)(\n```)", re.S)
        text = help_text(argv)
        page = pattern.sub(lambda m, text=text: m.group(1) + text + m.group(3), page, count=1)
    return page


if __name__ == "__main__":
    PAGE.write_text(render(PAGE.read_text()))
    print(f"rewrote the help blocks of {PAGE}")
