"""Sphinx configuration of the ctsne documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html``. Before the
pages are read, :func:`_run_tutorials` executes the tutorial scripts (at the size given by
``CTSNE_DOCS_N``, small by default) so that every figure comes from the code as it is.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
GENERATED = DOCS / "_generated"

project = "ctsne"
author = "the ctsne authors"
copyright = "the ctsne authors, BSD-3-Clause"
try:
    from importlib.metadata import version as _version

    release = _version("ctsne")
except Exception:  # pragma: no cover - building from a source tree without an install
    release = "unknown"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax from the package, copied into _static: the site reads offline (no CDN)
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build", "_generated/*.md", "_generated/*.rst"]
html_theme = "alabaster"
# wide enough at 1280 px for code lines of up to ~100 characters without a scroll bar;
# below page_width alabaster switches to its narrow layout
html_theme_options = {"page_width": "1180px", "code_font_size": "0.8em"}
html_title = f"ctsne {release}"
autodoc_typehints = "none"  # the numpydoc sections say it, once
autodoc_member_order = "bysource"
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
myst_heading_anchors = 3
# REPORT.md links to files of the repository (code, results), not to pages of this site
suppress_warnings = ["myst.xref_missing"]

# ----------------------------------------------------------------------------- tutorials
# script -> the figures it writes; the .rst pages show these files
TUTORIALS = {
    "../quickstart.py": ["synthetic.png"],
    "single_cell.py": ["single_cell_pbmc_stim.png"],
    "terminal.sh": ["adult_compare.png", "adult_scores.png", "adult_clusters.png"],
    "million.py": ["million.png"],
}
# sizes for the build (CTSNE_DOCS_N overrides them all): quick, and the figures still read
DEFAULT_N = {"million.py": "5000", "terminal.sh": "500"}
# the real data of the single-cell tutorial; it is not shipped (see that page). Without it
# the build shows the figure made earlier by the same script, kept in docs/images (made by
# `python docs/tutorials/single_cell.py PBMC_STIM` in an empty folder, then copied there).
PBMC_STIM = Path(os.environ.get("CTSNE_PBMC_STIM",
                                ROOT.parent / "shared" / "data" / "pbmc-stim"))


def _run_tutorials(app) -> None:
    """Execute each tutorial so that its figures show what the code does today."""
    from sphinx.util import logging

    log = logging.getLogger(__name__)
    GENERATED.mkdir(exist_ok=True)
    bin_dir = str(Path(sys.executable).parent)  # the `ctsne` command of this environment
    for script, figures in TUTORIALS.items():
        args = []
        if script == "single_cell.py":
            if not (PBMC_STIM / "pbmc_stim_pcs.tsv.gz").exists():
                log.info("no %s: the figures of %s made earlier", PBMC_STIM, script)
                for f in figures:
                    shutil.copyfile(DOCS / "images" / f, GENERATED / f)
                continue
            args = [str(PBMC_STIM)]
        env = {**os.environ, "CTSNE_DOCS_OUT": str(GENERATED),
               "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        # small runs: on a machine shared with other work, idle numba threads spinning at
        # every parallel region cost far more than a second core gives
        env.setdefault("NUMBA_NUM_THREADS", "1")
        env.setdefault("CTSNE_DOCS_N", DEFAULT_N.get(script, ""))
        if not env["CTSNE_DOCS_N"]:
            env.pop("CTSNE_DOCS_N")
        cmd = ["bash" if script.endswith(".sh") else sys.executable,
               str(DOCS / "tutorials" / script), *args]
        log.info("running tutorial %s", script)
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=GENERATED)
        # the printed output is shown on the pages; the rest is kept for debugging
        (GENERATED / f"{Path(script).name}.out").write_text(res.stdout)
        (GENERATED / f"{Path(script).name}.log").write_text(res.stderr)
        missing = [f for f in figures if not (GENERATED / f).exists()]
        if res.returncode != 0 or missing:
            raise RuntimeError(f"tutorial {script} failed (exit {res.returncode}, missing "
                               f"{missing}):\n{res.stderr[-3000:]}")


def _report(app) -> None:
    """REPORT.md for the site, its links rewritten to point from docs/ into the repository."""
    text = (ROOT / "REPORT.md").read_text()
    text = re.sub(r"\]\((?!https?:|#)([^)]+)\)", r"](../\1)", text)
    GENERATED.mkdir(exist_ok=True)
    (GENERATED / "REPORT.md").write_text(text)


def _cli_help(app) -> None:
    """``ctsne COMMAND --help`` of every command, as literal blocks."""
    import contextlib
    import io

    from ctsne.interfaces.cli.main import build_parser

    os.environ["COLUMNS"] = "88"  # argparse wraps to this width; no terminal here
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    parts = []
    for name, p in sub.choices.items():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            p.print_help()
        body = "\n".join("   " + line if line else "" for line in buf.getvalue().splitlines())
        parts.append(f"``ctsne {name}``\n{'~' * (len(name) + 10)}\n\n::\n\n{body}\n")
    GENERATED.mkdir(exist_ok=True)
    (GENERATED / "cli_help.rst").write_text("\n".join(parts))


def _scanpy_api(app) -> None:
    """The page of ``ctsne.tl`` / ``ctsne.pl``, or a note while they are not installed."""
    present = [m for m in ("ctsne.tl", "ctsne.pl") if importlib.util.find_spec(m)]
    text = "".join(f".. automodule:: {m}\n   :members:\n\n" for m in present) or (
        "``ctsne.tl`` and ``ctsne.pl`` are not part of this installation.\n")
    GENERATED.mkdir(exist_ok=True)
    (GENERATED / "api_scanpy.rst").write_text(text)


class _Loads(HTMLParser):
    """What an HTML page fetches when it is shown: scripts, styles, icons, images."""

    ATTRS = {"script": "src", "link": "href", "img": "src", "source": "src",
             "iframe": "src", "embed": "src", "audio": "src", "video": "src"}

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        value = dict(attrs).get(self.ATTRS.get(tag, ""))
        if value:
            self.urls.append(value)


def external_loads(html_dir: Path) -> list[str]:
    """``page: url`` for each resource of the built site that would come from the network
    (http, https or protocol-relative), in the pages and in their style sheets."""
    remote = re.compile(r"^\s*(https?:)?//", re.I)
    css_url = re.compile(r"""(?:url\(|@import)\s*['"]?((?:https?:)?//[^'")\s]+)""", re.I)
    found = []
    for page in sorted(html_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        parser = _Loads()
        parser.feed(text)
        urls = [u for u in parser.urls if remote.match(u)] + css_url.findall(text)
        found += [f"{page.relative_to(html_dir)}: {u}" for u in urls]
    for sheet in sorted(html_dir.rglob("*.css")):
        text = sheet.read_text(encoding="utf-8", errors="replace")
        found += [f"{sheet.relative_to(html_dir)}: {u}" for u in css_url.findall(text)]
    return found


def _check_offline(app, exc) -> None:
    """The site must read without a network (issue 59): warn, so -W fails the build."""
    if exc is None and app.builder.format == "html":
        from sphinx.util import logging

        for item in external_loads(Path(app.outdir)):
            logging.getLogger(__name__).warning("loads from the network: %s", item)


def setup(app):
    app.connect("build-finished", _check_offline)
    app.connect("builder-inited", _scanpy_api)
    app.connect("builder-inited", _report)
    app.connect("builder-inited", _cli_help)
    if os.environ.get("CTSNE_DOCS_SKIP_TUTORIALS") != "1":
        app.connect("builder-inited", _run_tutorials)
