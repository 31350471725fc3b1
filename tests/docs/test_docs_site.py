"""The docs site (MkDocs, Material theme, API reference by mkdocstrings) builds with
``--strict``, with every link and anchor checked: a broken page, a dead link or anchor, a page
missing from the site or a docstring griffe cannot read fails the suite (issues 33, 44). The
site is built once per module, and what a reader meets is checked on its HTML: math typeset by
MathJax, no raw Sphinx roles, every public name in the API reference, no scripts published."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import require_module

ROOT = Path(__file__).resolve().parents[2]
#: a Sphinx role left as text: ``:class:`x``` in Markdown, ``:class:<code>x</code>`` rendered
RAW_ROLE = re.compile(r":(?:py:)?[a-z]+:(?:<code>|`)")


@dataclass(frozen=True)
class Site:
    """A built site: its folder and the build's log (stderr)."""

    root: Path
    log: str

    def page(self, name: str) -> str:
        """The HTML of page ``name`` (``api`` is api/index.html)."""
        return (self.root / name / "index.html").read_text()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    require_module("mkdocs")
    require_module("material")
    require_module("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Site(out, done.stderr)


def test_the_docs_site_builds_strict(site):
    api = site.page("api")
    assert "Box" in api and "LipschitzResult" in api and "solver_error" in api


def test_links_and_anchors_are_validated_as_warnings():
    """--strict turns warnings into errors, so a dead link or anchor must be a warning."""
    require_module("mkdocs")
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"))
    assert config["strict"]
    links = config["validation"]["links"]
    assert links["not_found"] == links["anchors"] == 30  # logging.WARNING


def test_no_link_of_the_docs_is_dead_or_left_unchecked(site):
    """Not even an INFO line: links into benchmarks/ and models/ are pages of the site."""
    dead = [line for line in site.log.splitlines() if "contains a link" in line]
    assert not dead, "\n".join(dead)
    degenerate = site.root / "benchmarks" / "results" / "degenerate" / "index.html"
    assert degenerate.is_file()
    assert 'href="../benchmarks/results/degenerate/' in site.page("getting-started")


def test_math_is_marked_for_mathjax_and_mathjax_is_loaded(site):
    page = site.page("getting-started")
    spans = re.findall(r'<span class="arithmatex">(.*?)</span>', page)
    assert any(r"\(f_1 - f_2\)" in span for span in spans)
    outside = re.sub(r'<span class="arithmatex">.*?</span>', "", page)
    assert r"\(" not in outside, "math outside arithmatex's spans is shown raw"
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert any(re.search(r"mathjax@3[^/]*/es5/tex-mml-chtml\.js$", src) for src in scripts)
    config = next(src for src in scripts if src.endswith("javascripts/mathjax.js"))
    shipped = (site.root / "getting-started" / config).resolve().read_text()
    assert "processHtmlClass" in shipped and "arithmatex" in shipped


def test_no_page_shows_a_raw_sphinx_role(site):
    shown = [site.root / "search" / "search_index.json", *site.root.rglob("*.html")]
    raw = {
        path.relative_to(site.root).as_posix(): RAW_ROLE.findall(path.read_text()) for path in shown
    }
    raw = {path: roles for path, roles in raw.items() if roles}
    assert not raw, raw


def test_the_raw_role_pattern_catches_every_role():
    for role in ("class", "func", "mod", "data", "meth", "attr", "exc", "obj", "py:class"):
        assert RAW_ROLE.search(f"see :{role}:<code>~lipopt.Box</code> and")
        assert RAW_ROLE.search(f"see :{role}:`lipopt.Box` and")
    assert not RAW_ROLE.search("ratio: <code>2</code>, 1:2 <code>x</code>")


def test_the_api_reference_lists_every_public_name(site):
    import lipopt

    ids = set(re.findall(r'id="(lipopt\.[\w.]+)"', site.page("api")))
    missing = [name for name in lipopt.__all__ if not any(i.endswith(f".{name}") for i in ids)]
    assert not missing, f"docs/api.md lacks {missing} of lipopt.__all__"


def test_the_docs_scripts_are_not_published(site):
    published = sorted(p.relative_to(site.root).as_posix() for p in site.root.rglob("*.py"))
    assert not published, published
    assert not (site.root / "regen_outputs.py").exists()
    assert not (site.root / "regen_cli_help.py").exists()
