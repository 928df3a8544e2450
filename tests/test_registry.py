"""One table of methods (ctsne.estimator.registry), and every place users meet a method
agrees with it: ctsne.tl and ctsne.pl, the command line's --algorithm, the explorer's
menu, saved models and the .h5ad keys."""

import inspect
import subprocess
import sys

import numpy as np
import pytest

import ctsne
from ctsne.estimator import registry
from ctsne.interfaces.cli.main import build_parser
from ctsne.interfaces.explorer import methods as explorer_methods
from ctsne.interfaces.files import formats, models

METHODS = registry.METHODS
IDS = [m.key for m in METHODS]
N = 150
# a short run of each method
FAST = {"tsne": {"n_iter": 30, "early_exaggeration_iter": 20, "perplexity": 10},
        "umap": {"n_epochs": 20, "n_neighbors": 10},
        "largevis": {"n_epochs": 20, "perplexity": 10}}


def test_the_table():
    assert [m.key for m in METHODS] == ["tsne", "umap", "largevis"]
    for attr in ("key", "class_name", "tool", "obsm_key", "title", "conditional_title"):
        values = [getattr(m, attr) for m in METHODS]
        assert len(set(values)) == len(values), attr
    assert set(FAST) == set(IDS)  # a new method needs a short run here


@pytest.mark.parametrize("m", METHODS, ids=IDS)
def test_lookups(m):
    assert registry.method(m.key) is m
    assert registry.by_class_name(m.class_name) is m
    assert m.estimator.__name__ == m.class_name
    assert registry.of_model(m.estimator()) is m

    class Mine(m.estimator):  # a user's subclass is its base's method
        pass

    assert registry.of_model(Mine()) is m
    with pytest.raises(AttributeError):
        m.key = "other"  # frozen


def test_unknown_names():
    with pytest.raises(ValueError, match="tsne, umap, largevis.*'pca'"):
        registry.method("pca")
    assert registry.by_class_name("TSNE") is None
    assert registry.of_model(object()) is None


def test_importing_the_registry_imports_no_estimator():
    code = ("import sys, ctsne.estimator.registry; "
            "print([m for m in sys.modules if m.startswith('ctsne.estimator.')])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert res.stdout.strip() == "['ctsne.estimator.registry']"


@pytest.mark.parametrize("m", METHODS, ids=IDS)
def test_every_place_names_the_method(m):
    for module in (ctsne.tl, ctsne.pl):
        tool = getattr(module, m.tool)
        assert callable(tool) and m.tool in module.__all__
        assert inspect.signature(tool).parameters["key_added"].default == m.obsm_key
    parser = build_parser()
    args = parser.parse_args(["embed", "in.csv", "-o", "out.csv", "--algorithm", m.key])
    assert args.algorithm == m.key
    assert parser.parse_args(["explore", "in.csv", "--algorithm", m.key]).algorithm == m.key
    assert explorer_methods.METHODS[m.key] == (m.title, m.conditional_title)
    assert explorer_methods.check_method(m.key) == m.key
    assert explorer_methods.method_title(m.key, False) == m.title
    assert explorer_methods.method_title(m.key, True) == m.conditional_title
    assert models.METHODS[m.class_name] == (m.key, m.conditional_title)
    assert formats.EMBEDDING_KEYS[m.key] == m.obsm_key


def test_the_lists_hold_every_method_and_no_other():
    assert list(explorer_methods.METHODS) == IDS
    assert list(formats.EMBEDDING_KEYS) == IDS
    assert list(models.METHODS) == [m.class_name for m in METHODS]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["embed", "in.csv", "-o", "out.csv", "--algorithm", "pca"])


@pytest.fixture(scope="module")
def data():
    """Three groups of 50 points in 6 dimensions, and a prior unrelated to them."""
    rng = np.random.default_rng(0)
    group = np.arange(N) % 3
    X = rng.normal(size=(N, 6)) + 4 * group[:, None]
    batch = np.array(["a", "b"])[rng.integers(0, 2, N)]
    return X, batch


@pytest.mark.parametrize("m", METHODS, ids=IDS)
def test_saved_model_is_known_by_its_class(m, data, tmp_path):
    X, batch = data
    model = m.estimator(random_state=0, n_jobs=1, **FAST[m.key]).fit(X, batch)
    models.save_model(model, tmp_path / "m.pkl")
    loaded = models.load_model(tmp_path / "m.pkl")
    assert type(loaded).__name__ == m.class_name
    assert models.method_of(loaded) == (m.key, m.conditional_title)
    assert registry.of_model(loaded) is m


@pytest.mark.parametrize("m", METHODS, ids=IDS)
def test_tl_and_pl_of_every_method(m, data):
    ad = pytest.importorskip("anndata")
    import pandas as pd

    X, batch = data
    adata = ad.AnnData(X=X, obs=pd.DataFrame({"batch": pd.Categorical(batch)},
                                             index=[f"c{i}" for i in range(N)]))
    assert getattr(ctsne.tl, m.tool)(adata, prior="batch", random_state=0, n_jobs=1,
                                     **FAST[m.key]) is None
    assert list(adata.obsm) == [m.obsm_key]
    Y = adata.obsm[m.obsm_key]
    assert Y.shape == (N, 2) and np.all(np.isfinite(Y))
    assert adata.uns[m.obsm_key]["method"] == m.class_name
    assert adata.uns[m.obsm_key]["params"]["prior"] == "batch"

    pytest.importorskip("scanpy")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = getattr(ctsne.pl, m.tool)(adata, color="batch", show=False)
    assert len(ax.collections) >= 1
    assert ax.get_xlabel().lower().startswith(m.obsm_key[2:])
    plt.close("all")
    other = next(o for o in METHODS if o is not m)
    with pytest.raises(KeyError, match=f"no '{other.obsm_key}'.*ctsne.tl.{other.tool}"):
        getattr(ctsne.pl, m.tool)(adata, key_added=other.obsm_key, show=False)
