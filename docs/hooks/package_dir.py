"""MkDocs hook: let mkdocstrings find ``medmon.*`` as the installed package lays it out.

The sub-packages of ``medmon`` live in folders at the repository root (``monitor/``, ``probes/``,
...) and are mapped under ``medmon`` by ``[tool.setuptools.package-dir]`` in ``pyproject.toml``.
griffe, which reads the sources for mkdocstrings, finds ``medmon`` (the root folder) but not
sub-packages mapped from elsewhere. This hook builds the installed layout as a tree of symbolic
links in a temporary folder, from that same mapping, and gives it to the Python handler as its
search path, so ``::: medmon.probes.scoring`` reads the real sources.
"""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority

_trees: list[Path] = []


def _package_tree(root: Path) -> Path:
    """``<tmp>/medmon/...`` laid out as installed, built of links to the repository's folders."""
    mapping = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-dir"]
    tree = Path(tempfile.mkdtemp(prefix="medmon-docs-"))
    _trees.append(tree)
    # Shortest names first: the top package's folder is made before its mapped sub-packages.
    for name in sorted(mapping, key=lambda n: n.count(".")):
        target = tree.joinpath(*name.split("."))
        source = (root / mapping[name]).resolve()
        if "." not in name:  # the top package: its own files, beside the mapped sub-packages
            target.mkdir(parents=True, exist_ok=True)
            for entry in source.iterdir():
                if entry.name != "__pycache__" and not (target / entry.name).exists():
                    (target / entry.name).symlink_to(entry)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()
            target.symlink_to(source, target_is_directory=True)
    return tree


@event_priority(100)  # before mkdocstrings' own on_config, which starts the handler
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    root = Path(config.config_file_path).resolve().parent
    plugin = config.plugins["mkdocstrings"]
    python = plugin.config.handlers.setdefault("python", {})  # read when the handler starts
    python["paths"] = [str(_package_tree(root))]
    return config


def on_shutdown() -> None:
    while _trees:
        shutil.rmtree(_trees.pop(), ignore_errors=True)
