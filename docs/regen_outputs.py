"""Run every example of the README and the docs, and write their real output into the pages
(issue 33: numbers shown as output are regenerated, not typed).

    python docs/regen_outputs.py              # every page
    python docs/regen_outputs.py docs/cli.md  # one page

tests/docs/test_docs_run.py runs the same examples and fails when a page's output is stale. What is
run, page by page in document order, in a scratch folder where ``models/`` is the bundled
models' folder (so files an example writes land there):

- every ```python block, in one namespace per page (a reader's session); a block in doctest form
  runs its ``>>>`` lines;
- every ```console block: each ``$ lipopt ...`` line is a command, and the lines after it, up to
  the next ``$``, are its output (stderr, then stdout, as a terminal shows them).

An HTML comment on the line just before a block's opening fence says more:

- ``<!-- output -->``: the block is the stdout of the python block above it;
- ``<!-- run: commands -->``: a console block of commands only; each must exit 0, no output
  is written;
- ``<!-- run: exit N -->``: every command of the block exits with status N (default 0);
- ``<!-- run: volatile -->``: the output changes from run to run (a time limit, the machine's
  solvers): it is rewritten here, but the tests check only the exit status.

Outputs are compared with times masked (:func:`masked`: a number followed by `` s``, every
number of a ``time`` line, of a ``seconds`` line (``lipopt report``'s quantiles) or of a time
in JSON) and numbers equal to 1e-7 relative
(:func:`same_output`).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(
    r"^(?:<!-- (?P<directive>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)\n?```$", re.S | re.M
)


def pages() -> list[Path]:
    """The README and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass
class Block:
    """One fenced block of a page: its language, body, directive and where the body sits."""

    lang: str
    body: str
    directive: str
    start: int
    end: int

    @property
    def expected_exit(self) -> int:
        found = re.fullmatch(r"run: exit (\d+)", self.directive)
        return int(found.group(1)) if found else 0


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown page, in order."""
    return [
        Block(
            m.group("lang"),
            m.group("body"),
            m.group("directive") or "",
            m.start("body"),
            m.start("body") + len(m.group("body")),
        )
        for m in FENCE.finditer(text)
    ]


@dataclass
class Ran:
    """One block as run: what the page shows and what the run printed, and the exit statuses."""

    block: Block
    shown: str
    printed: str
    exits: list[tuple[str, int]] = field(default_factory=list)

    @property
    def compared(self) -> bool:
        return self.block.directive not in ("run: volatile", "run: commands")


def python_code(body: str) -> str:
    """A python block's code: as written, or its ``>>>``/``...`` lines in doctest form."""
    lines = body.splitlines()
    if not any(line.startswith(">>> ") for line in lines):
        return body
    return "\n".join(line[4:] for line in lines if line.startswith((">>> ", "... ")))


def lipopt_command() -> list[str]:
    """How to call the ``lipopt`` command of this interpreter's environment."""
    script = Path(sys.executable).with_name("lipopt")
    if script.is_file():
        return [str(script)]
    found = shutil.which("lipopt")
    if found is None:
        raise RuntimeError("the lipopt command is not installed (pip install -e .)")
    return [found]


def run_command(line: str, workdir: Path) -> tuple[str, int]:
    """Run one ``lipopt ...`` line in ``workdir``: its stderr then its stdout, and exit status."""
    words = shlex.split(line, comments=True)
    if words[0] != "lipopt":
        raise ValueError(f"only lipopt commands run in the docs, not {line!r}")
    env = dict(os.environ, COLUMNS="80")
    done = subprocess.run(
        lipopt_command() + words[1:],
        cwd=workdir,
        env=env,
        text=True,
        capture_output=True,
        timeout=600,
        check=False,
    )
    return done.stderr + done.stdout, done.returncode


def run_console(block: Block, workdir: Path) -> Ran:
    """Every ``$`` command of a console block, with its output as a terminal shows it."""
    printed: list[str] = []
    exits: list[tuple[str, int]] = []
    for line in block.body.splitlines():
        if not line.startswith("$ "):
            continue
        output, status = run_command(line[2:], workdir)
        exits.append((line[2:], status))
        if printed and printed[-1] != line and block.directive != "run: commands":
            printed.append("")  # a blank line after the previous command's output
        printed.append(line)
        if block.directive != "run: commands" and output.strip():
            printed.append(output.rstrip("\n"))
    return Ran(block, block.body, "\n".join(printed), exits)


def run_python(block: Block, namespace: dict, page: str) -> str:
    """Execute a python block in the page's namespace; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(python_code(block.body), page, "exec"), namespace)  # noqa: S102 - our docs
    return out.getvalue().rstrip("\n")


def run_page(path: Path, workdir: Path) -> list[Ran]:
    """Run a page's examples in order in ``workdir``: its console blocks, its python blocks,
    and the output blocks that show what the python above them printed."""
    text = path.read_text()
    namespace: dict[str, object] = {}
    last_printed = ""
    ran: list[Ran] = []
    for block in blocks(text):
        if block.lang == "python":
            last_printed = run_python(block, namespace, str(path.relative_to(ROOT)))
        elif block.lang == "console":
            ran.append(run_console(block, workdir))
        elif block.directive == "output":
            ran.append(Ran(block, block.body, last_printed))
    return ran


def _timed_json_key(line: str) -> bool:
    """Whether a line of indented JSON holds a time: ``"seconds"`` or a stage of ``timings``."""
    from lipopt.schema import TIMING_KEYS

    found = re.match(r'\s*"(\w+)": [\d.e+-]+,?$', line)
    return found is not None and (found.group(1) == "seconds" or found.group(1) in TIMING_KEYS)


def masked(text: str) -> str:
    """``text`` with times hidden: a number followed by `` s``, every number of a ``time``
    or ``seconds`` line or of a JSON time, and trailing spaces."""
    lines = []
    for line in text.splitlines():
        if re.match(r"\s*(time|seconds)\s", line) or _timed_json_key(line):
            line = re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "#", line)
        lines.append(re.sub(r"\d+(\.\d+)? s\b", "# s", line).rstrip())
    return "\n".join(lines)


NUMBER = re.compile(r"-?\d+\.?\d*(?:e[+-]?\d+)?")


def same_output(shown: str, printed: str, rel: float = 1e-7) -> bool:
    """Whether a page shows what the run printed: the same text once times are masked, numbers
    equal to ``rel`` relative (1e-9 absolute), so the last digits of a float may differ."""
    shown, printed = masked(shown), masked(printed)
    if NUMBER.split(shown) != NUMBER.split(printed):
        return False
    pairs = zip(NUMBER.findall(shown), NUMBER.findall(printed))
    return all(math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-9) for a, b in pairs)


@contextlib.contextmanager
def scratch_folder():
    """A temporary folder with ``models/`` linked to the bundled models, as the cwd."""
    before = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="lipopt-docs-") as folder:
        workdir = Path(folder)
        (workdir / "models").symlink_to(ROOT / "models")
        os.chdir(workdir)
        try:
            yield workdir
        finally:
            os.chdir(before)


def rewritten(text: str, ran: list[Ran]) -> str:
    """``text`` with every run block's body replaced by what the run printed."""
    for one in sorted(ran, key=lambda r: r.block.start, reverse=True):
        body = one.printed + ("\n" if not one.block.body else "")  # an empty block had none
        text = text[: one.block.start] + body + text[one.block.end :]
    return text


def main(argv: list[str]) -> int:
    """Rewrite the pages named in ``argv`` (default: all) from real runs."""
    chosen = [Path(a).resolve() for a in argv] or pages()
    for path in chosen:
        before = path.read_text()
        with scratch_folder() as workdir:
            ran = run_page(path, workdir)
        if path.read_text() != before:
            print(f"{path.name} changed while its examples ran; not rewritten", file=sys.stderr)
            continue
        for one in ran:
            for command, status in one.exits:
                if status != one.block.expected_exit:
                    print(f"{path.name}: '{command}' exited {status}", file=sys.stderr)
        path.write_text(rewritten(before, ran))
        print(f"rewrote {len(ran)} output blocks of {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
