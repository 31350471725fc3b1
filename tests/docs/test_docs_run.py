"""The docs run (issue 33): every example of the README and docs/*.md that a reader would copy
runs, page by page as a reader's session, and the output the page shows is what the run prints
now (times masked). docs/regen_outputs.py runs the same examples and rewrites the pages; see
its docstring for the conventions (```console blocks, ``<!-- output -->``, ``<!-- run: ... -->``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("regen_outputs", ROOT / "docs" / "regen_outputs.py")
regen = importlib.util.module_from_spec(_spec)
sys.modules["regen_outputs"] = regen  # its dataclasses look their module up there
_spec.loader.exec_module(regen)

SUBCOMMAND = re.compile(
    r"^(\$ )?lipopt (solve|certify|compare|export|solvers|batch|report)\b(?!: error)"
)


def _runnable(path: Path) -> bool:
    text = path.read_text()
    return "```python" in text or "```console" in text


PAGES = [p.relative_to(ROOT).as_posix() for p in regen.pages() if _runnable(p)]


def _needs_cbc(path: Path) -> bool:
    return "--solver cbc" in path.read_text() or 'solver="cbc"' in path.read_text()


@pytest.mark.parametrize("page", PAGES)
def test_a_pages_examples_run_and_print_what_it_shows(page, capfd):
    path = ROOT / page
    if _needs_cbc(path) and shutil.which("cbc") is None and not os.environ.get("CI"):
        pytest.skip("CBC is not on PATH here (CI installs it)")
    with regen.scratch_folder() as workdir:
        ran = regen.run_page(path, workdir)
    stale = []
    for one in ran:
        for command, status in one.exits:
            assert status == one.block.expected_exit, f"{page}: '{command}' exited {status}"
        if one.compared and not regen.same_output(one.shown, one.printed):
            stale.append(one.printed)
    assert not stale, (
        f"{page} shows stale output (run python docs/regen_outputs.py {page}); "
        f"the run printed:\n" + "\n----\n".join(stale)
    )


def test_the_masks_hide_only_times():
    shown = 'time      0.57 s (bounds 0.04, solve 0.47)\n  "seconds": 2.67,\nradius  0.0204'
    printed = 'time      9.1 s (bounds 1.00, solve 8.00)\n  "seconds": 3.1e-05,\nradius  0.0204'
    assert regen.masked(shown) == regen.masked(printed)
    assert regen.masked("value 324.29") != regen.masked("value 324.30")
    assert regen.masked('  "value": 1.5,') != regen.masked('  "value": 1.6,')
    report = "seconds    min 0.01  median 0.34  p90 0.95  max 1.18  (over 5 lines that ran)"
    assert regen.masked(report) == regen.masked(report.replace("0.34", "0.41"))
    assert regen.masked("  value    20.169 .. 324.29") != regen.masked("  value    20.169 .. 324.3")


def test_outputs_agree_to_the_last_digits_of_a_float_only():
    assert regen.same_output("value 324.29210463974005 [ok]", "value 324.2921046397401 [ok]")
    assert not regen.same_output("value 324.2921 [optimal]", "value 324.2922 [optimal]")
    assert not regen.same_output("value 324.2921 [optimal]", "value 324.2921 [upper_bound]")


def test_a_console_block_splits_commands_from_their_output():
    page = "<!-- run: exit 2 -->\n```console\n$ lipopt solve a\nerror one\n$ lipopt solve b\n```\n"
    (block,) = regen.blocks(page)
    assert block.lang == "console" and block.expected_exit == 2
    assert page[block.start : block.end] == "$ lipopt solve a\nerror one\n$ lipopt solve b"


@pytest.mark.parametrize("page", [p.relative_to(ROOT).as_posix() for p in regen.pages()])
def test_every_command_a_reader_would_copy_is_in_a_block_that_runs(page):
    """A ``lipopt`` command in a plain block would never run: it must be a ```console block
    (a synopsis with placeholders is a ```text block)."""
    for block in regen.blocks((ROOT / page).read_text()):
        if block.lang in ("console", "text"):
            continue
        copied = [line for line in block.body.splitlines() if SUBCOMMAND.match(line)]
        assert not copied, f"{page}: {copied[0]!r} is in a block that does not run"
