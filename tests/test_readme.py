"""The README's two set-up commands stay true (CI runs the test command verbatim), and its
Python runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", section)


def test_readme_has_exactly_two_setup_commands():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    assert "lipopt solve models/" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _setup_commands()[1] in ci


def test_readme_example_model_exists():
    model = re.search(r"lipopt solve (models/\S+\.onnx)", _setup_commands()[0]).group(1)
    assert (ROOT / model).is_file()


def test_the_readmes_python_runs(monkeypatch):
    """Every ```python block of the README runs as written, from the repository's root (issue
    33: its example read ``res.model.model`` where ``res.model`` is None)."""
    blocks = re.findall(r"```python\n(.+?)\n```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    monkeypatch.chdir(ROOT)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own README
