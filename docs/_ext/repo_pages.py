"""MkDocs hooks: the repository's own pages that the docs link to (``../benchmarks/...``,
``../models/README.md``) become pages of the site, so their links are links of the site and
are checked like the others (mkdocs.yml's ``validation``). The links stay as written in the
Markdown, where they resolve on disk (tests/docs/test_docs.py): here each relative link is read as a
path of the repository and pointed at that file's place in the site (docs/X is X, any other
file keeps its repository path)."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

ROOT = Path(__file__).resolve().parents[2]
#: a Markdown link's relative target: ``](target)`` or ``](target#anchor)``
LINK = re.compile(r"(\]\()(?!https?:|mailto:|#|/)([^)#\s]+)")
#: repository folders whose linked files join the site
INCLUDED = ("benchmarks/", "models/")


def _repo_path(src_uri: str) -> str:
    """The repository path of a site file (docs/X for the docs' own files)."""
    return src_uri if src_uri.startswith(INCLUDED) else f"docs/{src_uri}"


def _site_path(repo_path: str) -> str | None:
    """Where a repository file lies in the site, or None if it is not one the site includes."""
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    return repo_path if repo_path.startswith(INCLUDED) else None


def _linked(repo_path: str) -> list[str]:
    """The repository files a Markdown file of the repository links to (existing ones)."""
    text = re.sub(r"```.*?```|`[^`\n]*`", "", (ROOT / repo_path).read_text(), flags=re.S)
    base = posixpath.dirname(repo_path)
    found = (posixpath.normpath(posixpath.join(base, m[2])) for m in LINK.finditer(text))
    return [path for path in found if not path.startswith("..") and (ROOT / path).is_file()]


def on_files(files: Files, config: Any) -> Files:
    """Add every file of benchmarks/ and models/ reached by links from the docs (recursively
    through the Markdown pages added)."""
    todo = [_repo_path(f.src_uri) for f in files.documentation_pages()]
    seen = set(todo)
    while todo:
        for path in _linked(todo.pop()):
            if path in seen or not path.startswith(INCLUDED):
                continue
            seen.add(path)
            files.append(
                File.generated(
                    config, path, abs_src_path=str(ROOT / path), inclusion=InclusionLevel.NOT_IN_NAV
                )
            )
            if path.endswith(".md"):
                todo.append(path)
    return files


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Point each relative link of the page at its target's place in the site."""
    here = _repo_path(page.file.src_uri)

    def relink(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(here), match[2]))
        site = _site_path(target)
        if site is None:
            return match[0]
        start = posixpath.dirname(page.file.src_uri) or "."
        return match[1] + posixpath.relpath(site, start)

    return LINK.sub(relink, markdown)
