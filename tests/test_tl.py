"""ctsne.tl / ctsne.pl against a real scanpy install, on scanpy's bundled pbmc68k_reduced."""

import json
import sys
import warnings

import matplotlib
import numpy as np
import pytest
import scanpy as sc
import scipy.sparse as sp
from scipy.optimize import brentq

import ctsne
from ctsne.metrics import knn_label_homogeneity

matplotlib.use("Agg")
# no iterations: P and the start only
QUICK = {"n_iter": 0, "early_exaggeration_iter": 0, "random_state": 0, "n_jobs": 1}


@pytest.fixture(scope="module")
def pbmc():
    return sc.datasets.pbmc68k_reduced()  # 700 cells, ships inside scanpy (no download)


@pytest.fixture(scope="module")
def fitted(pbmc):
    a = pbmc.copy()
    opts = {"n_iter": 250, "early_exaggeration_iter": 100, "random_state": 0, "n_jobs": 1}
    ctsne.tl.ctsne(a, prior="bulk_labels", **opts)
    ctsne.tl.ctsne(a, prior=None, key_added="X_plain", **opts)
    return a


def test_writes_embedding_and_a_json_record(fitted):
    a = fitted
    assert a.obsm["X_ctsne"].shape == (700, 2)
    assert np.all(np.isfinite(a.obsm["X_ctsne"]))
    rec = json.loads(json.dumps(a.uns["X_ctsne"]))
    p = rec["params"]
    assert p["prior"] == "bulk_labels" and p["beta"] == 0.01 and p["perplexity"] == 30.0
    assert p["representation"] == "obsm['X_pca']" and p["use_rep"] is None
    assert rec["n_iter"] == 350 and rec["kl_divergence"] > 0 and rec["timings"]["total"] > 0
    # α' from the paper's Eq. 4 with the class sizes, computed here by hand
    sizes = a.obs["bulk_labels"].value_counts().to_numpy().astype(float)
    n = sizes.sum()
    rho = np.sum(sizes * (sizes - 1)) / (n * (n - 1))
    assert rec["beta"] == 0.01
    assert rec["alpha"] == pytest.approx((1 - 0.01 * (1 - rho)) / rho, rel=1e-12)
    assert rec["alpha"] != 1.0 and a.uns["X_plain"]["alpha"] == 1.0


def test_prior_is_factored_out(fitted):
    codes = fitted.obs["bulk_labels"].cat.codes.to_numpy()
    plain = knn_label_homogeneity(fitted.obsm["X_plain"], codes, k=10)
    cond = knn_label_homogeneity(fitted.obsm["X_ctsne"], codes, k=10)
    assert cond < 0.8 * plain, (plain, cond)  # measured 0.75 -> 0.42


def test_default_representation_follows_scanpy(pbmc):
    a = pbmc.copy()
    ctsne.tl.ctsne(a, prior="phase", **QUICK)
    ctsne.tl.ctsne(a, prior="phase", use_rep="X_pca", key_added="explicit", **QUICK)
    np.testing.assert_array_equal(a.obsm["X_ctsne"], a.obsm["explicit"])
    assert a.uns["X_ctsne"]["params"]["representation"] == "obsm['X_pca']"
    # ≤ 50 variables: .X itself, even with an X_pca present
    small = pbmc[:, :40].copy()
    ctsne.tl.ctsne(small, **QUICK)
    ctsne.tl.ctsne(small, use_rep="X_pca", key_added="pca", **QUICK)
    assert small.uns["X_ctsne"]["params"]["representation"] == "X"
    assert not np.allclose(small.obsm["X_ctsne"], small.obsm["pca"])
    # many variables and no X_pca: an error naming the fix, no silent PCA
    big = pbmc.copy()
    del big.obsm["X_pca"]
    with pytest.raises(ValueError, match="sc.pp.pca"):
        ctsne.tl.ctsne(big, **QUICK)


def test_copy_leaves_the_input_untouched(pbmc):
    a = pbmc.copy()
    keys = (set(a.obsm), set(a.uns))
    out = ctsne.tl.ctsne(a, prior=["phase", "bulk_labels"], copy=True, **QUICK)
    assert (set(a.obsm), set(a.uns)) == keys
    assert out.obsm["X_ctsne"].shape == (700, 2) and out is not a
    assert ctsne.tl.ctsne(a, prior="phase", **QUICK) is None and "X_ctsne" in a.obsm


def test_sparse_layer(pbmc):
    a = pbmc.copy()
    a.layers["sparse"] = sp.csr_matrix(a.X)
    # a random start and a few steps: the result depends on the data through P only
    # (a PCA start of all 765 genes would cost more than the rest of this file)
    opts = {**QUICK, "n_iter": 10, "init": "random"}
    ctsne.tl.ctsne(a, prior="phase", layer="sparse", key_added="from_layer", **opts)
    ctsne.tl.ctsne(a, prior="phase", use_rep="X", key_added="from_x", **opts)
    ctsne.tl.ctsne(a, prior="phase", use_rep="X_pca", key_added="from_pca", **opts)
    assert not np.allclose(a.obsm["from_layer"], a.obsm["from_pca"])
    np.testing.assert_allclose(a.obsm["from_layer"], a.obsm["from_x"], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="not both"):
        ctsne.tl.ctsne(a, layer="sparse", use_rep="X_pca", **QUICK)
    with pytest.raises(KeyError, match="no_such"):
        ctsne.tl.ctsne(a, prior="no_such", **QUICK)


def _dense_reference_P(graph, perplexity):
    """Perplexity calibration of each stored row by root finding, then (C + Cᵀ) / 2n."""
    G = sp.csr_matrix(graph)
    n = G.shape[0]
    C = np.zeros((n, n))
    for i in range(n):
        cols = G.indices[G.indptr[i]:G.indptr[i + 1]]
        d2 = G.data[G.indptr[i]:G.indptr[i + 1]].astype(float) ** 2
        d2 = d2 - d2.min()

        def entropy_gap(log_b, d2=d2):
            w = np.exp(-d2 * np.exp(log_b))
            p = w / w.sum()
            return -np.sum(p * np.log(np.where(p > 0, p, 1))) - np.log(perplexity)

        p = np.exp(-d2 * np.exp(brentq(entropy_gap, -30, 30, xtol=1e-13)))
        C[i, cols] = p / p.sum()
    return (C + C.T) / (2 * n)


def test_neighbor_graph_reuse_gives_the_calibrated_P(pbmc, monkeypatch):
    from ctsne import ConditionalTSNE

    fitted = []
    real_fit = ConditionalTSNE.fit_transform

    def spy(self, *args, **kwargs):
        fitted.append(self)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(ConditionalTSNE, "fit_transform", spy)
    a = pbmc.copy()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*neighbours per point.*")
        ctsne.tl.ctsne(a, prior="phase", neighbors_key="neighbors", perplexity=3.0, **QUICK)
    P = fitted[-1].P_.toarray()
    np.testing.assert_allclose(P, _dense_reference_P(a.obsp["distances"], 3.0),
                               rtol=1e-6, atol=1e-12)
    rec = a.uns["X_ctsne"]
    assert rec["neighbor_graph"] == {"neighbors_key": "neighbors",
                                     "distances_key": "distances", "n_neighbors": 9}
    # scanpy's graph holds 9 neighbours; perplexity 30 needs 90: lowered to 3, with a warning
    with pytest.warns(UserWarning, match=r"9 neighbours per point .* perplexity 3 "):
        ctsne.tl.ctsne(a, neighbors_key="neighbors", key_added="low", **QUICK)
    assert a.uns["low"]["perplexity"] == 3.0 and a.uns["low"]["params"]["perplexity"] == 30.0
    np.testing.assert_allclose(fitted[-1].P_.toarray(), P, rtol=1e-12)
    with pytest.raises(KeyError, match="sc.pp.neighbors"):
        ctsne.tl.ctsne(a, neighbors_key="other", **QUICK)


def test_plot_wrapper(fitted, monkeypatch):
    ax = ctsne.pl.ctsne(fitted, color="bulk_labels", show=False)
    assert len(ax.collections) >= 1
    ax = ctsne.pl.ctsne(fitted, color="phase", key_added="X_plain", show=False)
    assert ax.get_xlabel().lower().startswith("plain")
    monkeypatch.setitem(sys.modules, "scanpy", None)
    with pytest.raises(ImportError, match="pip install scanpy"):
        ctsne.pl.ctsne(fitted, color="phase")


@pytest.mark.parametrize("module", ["ctsne.tl", "ctsne.pl"])
def test_docstring_examples_run(module):
    """Issue 51, item 7: every example in the docstrings of tl and pl runs as written
    (tl.cumap's said ``ctsne.pl.ctsne(adata, basis=key_added)``, which raised)."""
    import doctest
    import importlib

    mod = importlib.import_module(module)
    tests = [t for t in doctest.DocTestFinder().find(mod) if t.examples]
    assert tests, f"{module} has no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_plot_takes_scanpys_basis(fitted):
    """``basis=`` as scanpy spells it ("plain" or "X_plain"), and a clear error for a key
    that is not there or for both names given."""
    for basis in ("plain", "X_plain"):
        ax = ctsne.pl.ctsne(fitted, basis=basis, color="phase", show=False)
        assert ax.get_xlabel().lower().startswith("plain")
    with pytest.raises(KeyError, match="no 'X_cumap'.*holds: .*X_ctsne"):
        ctsne.pl.ctsne(fitted, basis="cumap", show=False)
    with pytest.raises(TypeError, match="not both"):
        ctsne.pl.ctsne(fitted, key_added="X_plain", basis="plain")


def test_record_has_the_method(fitted):
    assert fitted.uns["X_ctsne"]["method"] == "ConditionalTSNE"
    assert "callbacks" not in fitted.uns["X_ctsne"]["params"]


def test_an_anndata_of_pcs_only_uses_its_pcs():
    # built from PCs: n_vars = 0, the data in obsm["X_pca"] (scanpy's rule takes it)
    anndata = pytest.importorskip("anndata")
    import pandas as pd

    import ctsne

    rng = np.random.default_rng(0)
    pcs = rng.normal(size=(120, 6))
    obs = pd.DataFrame({"batch": rng.integers(0, 2, 120).astype(str)},
                       index=[f"c{i}" for i in range(120)])
    adata = anndata.AnnData(np.zeros((120, 0)), obs=obs, obsm={"X_pca": pcs})
    ctsne.tl.ctsne(adata, prior="batch", random_state=0, n_iter=20, early_exaggeration_iter=20)
    assert adata.uns["X_ctsne"]["params"]["representation"] == "obsm['X_pca']"
    bare = anndata.AnnData(np.zeros((120, 0)), obs=obs, obsm={"X_umap": pcs[:, :2]})
    with pytest.raises(ValueError, match=r"pass use_rep= .*'X_umap'"):
        ctsne.tl.ctsne(bare, prior="batch")
