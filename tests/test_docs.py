"""The documentation: the MkDocs site builds with ``--strict`` (a broken link, a missing page or a
reference to code that no longer exists fails), the README stays a front page, and every relative
link in the README and the docs points at a file that exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README_MAX_LINES = 220

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _relative_links(markdown: str) -> list[str]:
    """Targets of the inline links and images outside code, without external URLs or bare anchors."""
    text = _INLINE_CODE.sub("", _FENCE.sub("", markdown))
    return [
        target
        for target in _LINK.findall(text)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith("#")
    ]


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)]


@pytest.mark.process
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1", "DO_NOT_TRACK": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert (site / "index.html").is_file()
    scoring = (site / "reference" / "scoring" / "index.html").read_text("utf-8")
    assert "register" in scoring and "looks_like_refusal" in scoring, "the scorer reference was not generated"


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text("utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_the_readme_shows_the_dashboard() -> None:
    assert "docs/images/overview.png" in _relative_links((ROOT / "README.md").read_text("utf-8"))


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_existing_files(page: Path) -> None:
    missing = []
    for target in _relative_links(page.read_text("utf-8")):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if path and not (page.parent / path).exists():
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)} links to files that do not exist: {missing}"


PACKAGE_FOLDERS = ("medmon", "monitor", "probes", "baselines", "alerts", "dashboards")


def _layout_tree() -> dict[str, str]:
    """docs/layout.md's tree, folder -> its description (the folder's line and the indented lines after it)."""
    text = (DOCS / "layout.md").read_text("utf-8")
    block = text.split("## The tree", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    tree: dict[str, str] = {}
    folder = ""
    for line in block.splitlines():
        if line and not line[0].isspace():
            folder, _, rest = line.partition(" ")
            tree[folder] = rest
        elif folder:
            tree[folder] += " " + line.strip()
    return tree


def test_the_layout_names_every_module() -> None:
    """Every module of the package is named in its folder's line of docs/layout.md (migrations' revisions aside)."""
    tree = _layout_tree()
    missing = []
    for top in PACKAGE_FOLDERS:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if path.name == "__init__.py" or "versions" in rel.parts:
                continue
            folder = f"{rel.parent.as_posix()}/"
            if not re.search(rf"(?<![\w.]){re.escape(path.stem)}(\.py)?\b", tree.get(folder, "")):
                missing.append(str(rel))
    assert not missing, f"docs/layout.md's tree does not name these modules in their folder's line: {missing}"
