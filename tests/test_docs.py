"""The docs match the code: every CLI option is documented, every README link resolves."""

import re
from pathlib import Path

import pytest

from lipopt.cli import make_parser

ROOT = Path(__file__).resolve().parent.parent


def _subcommand_options(name: str) -> set[str]:
    parser = make_parser()
    sub = next(a for a in parser._subparsers._actions if a.choices and name in a.choices)  # noqa: SLF001
    return {
        opt
        for action in sub.choices[name]._actions
        for opt in action.option_strings  # noqa: SLF001
        if opt.startswith("--") and opt != "--help"
    }


@pytest.mark.parametrize("command", ["solve", "certify", "export", "compare", "batch", "report"])
def test_every_cli_option_is_in_the_cli_reference(command):
    text = (ROOT / "docs" / "cli.md").read_text()
    missing = sorted(opt for opt in _subcommand_options(command) if opt not in text)
    assert not missing, f"docs/cli.md does not mention {missing} of 'lipopt {command}'"


@pytest.mark.parametrize(
    "page", ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/*.md"))]
)
def test_links_resolve(page):
    """Every relative link of the README and the docs names a file that exists (the docs
    site leaves links outside docs/ to this check)."""
    source = ROOT / page
    text = re.sub(r"`[^`\n]*`", "", source.read_text())  # code spans hold no links,
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", "", text, flags=re.S)  # nor does math
    for target in re.findall(r"\]\((?!https?:|mailto:|#)([^)#\s]+)(?:#[^)\s]*)?\)", text):
        assert (source.parent / target).exists(), f"{page}: {target}"


def test_cli_reference_help_blocks_are_current():
    import importlib.util

    spec = importlib.util.spec_from_file_location("regen", ROOT / "docs" / "regen_cli_help.py")
    regen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regen)
    page = (ROOT / "docs" / "cli.md").read_text()
    assert regen.render(page) == page, "docs/cli.md is stale: run python docs/regen_cli_help.py"
