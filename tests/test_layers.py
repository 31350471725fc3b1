"""The package's shape, measured from the source: layers import downward only (import-linter's
contract in pyproject.toml), no import cycle, and the size limits of docs/architecture.md."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "lipopt"

#: public functions whose signatures are documented API, kept as they were (issue 26 keeps
#: lipschitz()'s; build_model, gradient_attack and pattern_climb are called by users and docs)
PUBLIC_SIGNATURES = {
    "lipopt/lipschitz.py:lipschitz",
    "lipopt/lipschitz.py:build_model",
    "lipopt/heuristics/attack.py:gradient_attack",
    "lipopt/heuristics/climb.py:pattern_climb",
}


def test_layers_import_downward_only():
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail("lint-imports (import-linter, the dev extra) is not installed")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=PACKAGE.parent, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _code_lines(node: ast.AST) -> int:
    """Lines of a function's code, its docstring excluded."""
    body = node.body  # type: ignore[attr-defined]
    first = body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    start = body[1].lineno if docstring and len(body) > 1 else first.lineno
    return node.end_lineno - start + 1  # type: ignore[attr-defined,operator]


def test_no_module_over_400_lines():
    long = {str(p.relative_to(PACKAGE.parent)): n for p in _modules()
            if (n := len(p.read_text().splitlines())) > 400}  # fmt: skip
    assert not long


def test_no_function_over_60_lines_or_8_parameters():
    broken = []
    for path in _modules():
        name = str(path.relative_to(PACKAGE.parent))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
            count -= bool(args.args) and args.args[0].arg in ("self", "cls")
            if count > 8 and f"{name}:{node.name}" not in PUBLIC_SIGNATURES:
                broken.append(f"{name}:{node.name} has {count} parameters")
            if _code_lines(node) > 60:
                broken.append(f"{name}:{node.name} has {_code_lines(node)} lines of code")
    assert not broken, "\n".join(broken)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The lipopt modules ``path`` imports anywhere (functions included), as module names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found |= {name for name in names if name in modules}
    return found


def test_no_import_cycle_even_inside_functions():
    paths = {_module_name(p): p for p in _modules()}
    graph = {name: _imports(path, set(paths)) - {name} for name, path in paths.items()}
    # a package's __init__ importing its own submodules is not a cycle of the design
    for name in graph:
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(graph[name]):
            if state.get(nxt) == 1:
                pytest.fail("import cycle: " + " -> ".join(trail[trail.index(nxt) :] + [nxt]))
            if nxt not in state:
                visit(nxt, [*trail, nxt])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
