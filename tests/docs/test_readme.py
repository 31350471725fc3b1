"""The README's two set-up commands stay true (CI runs the test command verbatim). Its other
examples run in tests/docs/test_docs_run.py."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
