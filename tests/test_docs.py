"""The documentation's code runs: the quick start and the tutorials, at a small size.

Each script runs in a subprocess from an empty folder, as a reader would run it; the
numbers it reports or writes are checked against independent computations.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
# the real data of the single-cell tutorial, not shipped: where docs/conf.py looks for it
PBMC_STIM = Path(os.environ.get("CTSNE_PBMC_STIM",
                                DOCS.parents[1] / "shared" / "data" / "pbmc-stim"))


def run(script: Path, out: Path, n: int | None = None, *args: str) -> str:
    env = {**os.environ, "CTSNE_DOCS_OUT": str(out), "NUMBA_NUM_THREADS": "1",
           # the `ctsne` command and `python` of this environment
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    if n is not None:
        env["CTSNE_DOCS_N"] = str(n)
    cmd = ["bash" if script.suffix == ".sh" else sys.executable, str(script), *args]
    res = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def assert_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path


def laplacian_reference(Y, labels, k):
    """Normalised Laplacian score from its definition: dense kNN graph, cut / volume."""
    labels = np.asarray(labels).astype(str)
    n = len(Y)
    d = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    A = np.zeros((n, n))
    A[np.arange(n)[:, None], np.argsort(d, axis=1, kind="stable")[:, :k]] = 1.0
    W = (A + A.T) / 2
    deg = W.sum(1)
    score = 0.0
    for lab in np.unique(labels):
        f = (labels == lab).astype(float)
        score += f.sum() / n * (f @ deg - f @ W @ f) / (f @ deg)
    return score


def test_quickstart(tmp_path):
    out = run(DOCS / "quickstart.py", tmp_path)
    assert_png(tmp_path / "synthetic.png")
    scores = {}
    for line in out.strip().splitlines():  # "t-SNE: Laplacian score of f14 0.04, of f56 0.71"
        name, rest = line.split(": ", 1)
        parts = rest.replace(",", "").split()
        scores[name] = (float(parts[4]), float(parts[7]))
    assert set(scores) == {"t-SNE", "ct-SNE"}
    # told f14, ct-SNE hides it and shows f56 instead
    assert scores["ct-SNE"][0] > scores["t-SNE"][0] + 0.3
    assert scores["ct-SNE"][1] < min(0.3, scores["t-SNE"][1])  # random level: about 0.75


def test_terminal_tutorial(tmp_path):
    from ctsne.interfaces.files import tables

    n = 200
    run(DOCS / "tutorials" / "terminal.sh", tmp_path, n)
    for f in ("adult_compare.png", "adult_scores.png", "adult_clusters.png"):
        assert_png(tmp_path / f)
    emb = {name: tables.read_embedding(tmp_path / f"adult_{name.lower().replace('-', '')}.csv")
           for name in ("t-SNE", "ct-SNE")}
    assert all(len(e.ids) == n for e in emb.values())
    table = tables.read_table(tmp_path / "adult_scores.csv")
    rows = list(zip(*(table.columns[c] for c in ("label", "embedding", "k", "score")),
                    strict=True))
    assert len(rows) == 3 * 2 * 5
    for label, name, k, score in rows:
        if int(k) in (10, 50):
            want = laplacian_reference(emb[name].matrix, emb[name].columns[label], int(k))
            assert score == pytest.approx(want, abs=1e-12), (label, name, k)
    by = {(lab, name, int(k)): s for lab, name, k, s in rows}
    assert by[("gender", "ct-SNE", 30)] > by[("gender", "t-SNE", 30)] + 0.1  # factored out
    assert len(tables.read_table(tmp_path / "adult_ranking.csv").columns["feature"]) > 0


def test_million_tutorial(tmp_path):
    from sklearn.neighbors import NearestNeighbors

    n = 2000
    out = run(DOCS / "tutorials" / "million.py", tmp_path, n)
    assert out.startswith(f"{n:,} points in ")
    assert_png(tmp_path / "million.png")
    Y = np.load(tmp_path / "million_embedding.npy").astype(np.float64)
    summary = json.loads((tmp_path / "million_summary.json").read_text())
    assert Y.shape == (n, 2) and summary["n"] == n
    from ctsne.datasets import make_scaled

    data = make_scaled(n, 10, n_classes=5, n_subclasses=4, random_state=0)
    sample = np.random.default_rng(0).choice(n, size=n, replace=False)
    idx = NearestNeighbors(n_neighbors=11).fit(Y[sample]).kneighbors(
        Y[sample], return_distance=False)[:, 1:]
    for name, labels in (("prior", data.labels), ("subclusters", data.sublabels)):
        lab = labels[sample]
        want = float(np.mean(lab[idx] == lab[:, None]))
        assert summary[name] == pytest.approx(want, abs=0.01)  # float32 file, ties
    assert summary["subclusters"] > summary["prior"] + 0.2


@pytest.mark.skipif(not (PBMC_STIM / "pbmc_stim_pcs.tsv.gz").exists(),
                    reason=f"the pbmc-stim data is not at {PBMC_STIM} (CTSNE_PBMC_STIM)")
def test_single_cell_tutorial(tmp_path):
    import anndata

    out = run(DOCS / "tutorials" / "single_cell.py", tmp_path, None, str(PBMC_STIM))
    assert_png(tmp_path / "single_cell_pbmc_stim.png")
    adata = anndata.read_h5ad(tmp_path / "pbmc_stim_ctsne.h5ad")
    assert adata.n_obs == 2000 and adata.uns["X_ctsne"]["params"]["prior"] == "condition"
    score = {(key, col): laplacian_reference(np.asarray(adata.obsm[key]),
                                             adata.obs[col].to_numpy(), 30)
             for key in ("X_tsne", "X_ctsne") for col in ("condition", "cell type")}
    # the printed scores, in the order t-SNE, ct-SNE: condition, cell type
    printed = [float(x) for x in re.findall(r"(?:condition|cell type) (\d\.\d\d)", out)]
    want = [score[k, c] for k in ("X_tsne", "X_ctsne") for c in ("condition", "cell type")]
    assert printed == pytest.approx(want, abs=0.006)
    # t-SNE splits the conditions; ct-SNE mixes them (0.5: ignored) and keeps the types
    assert score["X_tsne", "condition"] < 0.3 and score["X_ctsne", "condition"] > 0.42
    assert score["X_ctsne", "cell type"] < score["X_tsne", "cell type"] + 0.05 < 0.5


class _Loads(HTMLParser):
    """The URLs a page fetches to show itself (not the links a reader may follow)."""

    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "srcset", "data"):  # img, script, source, iframe, object
            self.urls += (attrs.get(name) or "").split()[:1]
        if tag == "link":
            self.urls.append(attrs.get("href") or "")
        self.urls += re.findall(r"url\(['\"]?([^'\")]+)", attrs.get("style") or "")


@pytest.mark.skipif(importlib.util.find_spec("sphinx") is None,
                    reason="sphinx is not installed (pip install -e '.[docs]')")
def test_built_site_loads_nothing_from_the_network(tmp_path):
    """Issue 59: offline, the pages must show everything (MathJax included)."""
    env = {**os.environ, "CTSNE_DOCS_SKIP_TUTORIALS": "1"}  # the figures do not matter here
    html = tmp_path / "html"
    res = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", "-d",
                          str(tmp_path / "doctrees"), str(DOCS), str(html)],
                         env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    pages = sorted(html.rglob("*.html"))
    assert len(pages) > 20
    remote = re.compile(r"^\s*(https?:)?//", re.I)
    found = []
    for page in pages:
        parser = _Loads()
        parser.feed(page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(html)}: {u}" for u in parser.urls if remote.match(u)]
    for sheet in html.rglob("*.css"):
        found += [f"{sheet.relative_to(html)}: {u}" for u in re.findall(
            r"""(?:url\(|@import)\s*['"]?((?:https?:)?//[^'")\s]+)""", sheet.read_text())]
    assert not found, "\n".join(found)
    # the math is there, for the bundled MathJax to typeset
    quick = (html / "quickstart.html").read_text(encoding="utf-8")
    assert r"\(1 - \sum_l (n_l/n)^2\)" in quick
    script = re.search(r'<script[^>]*src="([^"]*mathjax[^"]*)"', quick)
    assert script and (html / script.group(1)).is_file()
