"""The docs match the code: every CLI option is documented, every README link resolves."""

import re
from pathlib import Path

import pytest

from lipopt.cli import make_parser

ROOT = Path(__file__).resolve().parents[2]


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


def _section(page: str, heading: str) -> str:
    """The text of ``page`` from the heading line starting with ``heading`` to the next one."""
    text = (ROOT / "docs" / page).read_text()
    start = text.index(f"\n{heading}")
    following = re.search(r"\n#{1,3} ", text[start + 1 :])
    return text[start : start + 1 + following.start()] if following else text[start:]


def test_getting_started_names_every_parameter_of_lipschitz():
    import inspect

    import lipopt

    section = _section("getting-started.md", "### `lipopt.lipschitz(")
    named = set(re.findall(r"`(\w+)[`=]", section))
    missing = [p for p in inspect.signature(lipopt.lipschitz).parameters if p not in named]
    assert not missing, f"getting-started.md's lipschitz() list lacks {missing}"
    for norm in lipopt.InputNorm:
        assert f'"{norm.value}"' in section, f"norm {norm.value!r} is not described"


def test_getting_started_result_table_is_the_code_s():
    import dataclasses

    from lipopt import InputNorm, LipschitzResult
    from lipopt.batch.report import STATUS_ORDER
    from lipopt.batch.tasks import FAILED

    rows = {
        m[1]: m[2]
        for m in re.finditer(
            r"^\| `(\w+)` \| (.*) \|$",
            _section("getting-started.md", "### `LipschitzResult`"),
            re.M,
        )
    }
    fields = [f.name for f in dataclasses.fields(LipschitzResult)]
    assert [f for f in fields if f not in rows] == []
    statuses = [s for s in STATUS_ORDER if s != FAILED]
    assert [s for s in statuses if f"`{s}`" not in rows["status"]] == []
    assert [n.value for n in InputNorm if f"`{n.value}`" not in rows["norm"]] == []


def test_getting_started_exports_from_torch_as_torch_advises():
    """torch 2.13 warns that the TorchScript exporter (dynamo=False) is deprecated: the page
    exports with the default exporter, and shows lipopt.from_torch in an example that runs and
    whose output is checked (tests/docs/test_docs_run.py)."""
    text = (ROOT / "docs" / "getting-started.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    exports = [b for b in blocks if "torch.onnx.export(" in b]
    assert exports and all("dynamo=True" in b and "dynamo=False" not in b for b in exports)
    shown = re.search(r"```python\n[^`]*lipopt\.from_torch\([^`]*```\n\n[^`]*<!-- output -->", text)
    assert shown, "no example of lipopt.from_torch with its output"
