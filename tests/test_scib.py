"""scIB-style measures against independent references: scikit-learn's silhouettes, a
dense within-batch neighbour computation, and the overall score's formula recomputed from
dense homogeneities and harmonypy-checked LISI."""

import numpy as np
import pytest
from sklearn.metrics import silhouette_samples as sk_samples
from sklearn.metrics import silhouette_score

import ctsne.metrics.scib as scib
from ctsne.metrics import (
    batch_silhouette,
    clisi,
    ilisi,
    integration_score,
    label_silhouette,
    silhouette_samples,
    within_batch_preservation,
)


def test_silhouette_samples_match_sklearn(rng, monkeypatch):
    Y = rng.normal(size=(130, 3))
    labels = rng.choice(["a", "b", "c"], 130)
    labels[0] = "solo"  # a label of one point: silhouette 0, as in scikit-learn
    monkeypatch.setattr(scib, "_SIL_CHUNK", 17)  # several chunks
    np.testing.assert_allclose(silhouette_samples(Y, labels), sk_samples(Y, labels),
                               atol=1e-9)
    assert label_silhouette(Y, labels) == pytest.approx(
        (silhouette_score(Y, labels) + 1) / 2, abs=1e-9)


def test_batch_silhouette_is_scib_definition(rng):
    # two labels; label 1 lies in one batch only and is skipped (scIB)
    Y = rng.normal(size=(90, 2))
    batch = rng.integers(0, 3, 90)
    labels = np.where(np.arange(90) < 70, 0, 1)
    batch[70:] = 2
    Y[:35, 0] += 3 * batch[:35]  # half of label 0 separated by batch
    sel = labels == 0
    ref = np.mean(1 - np.abs(sk_samples(Y[sel], batch[sel])))
    assert batch_silhouette(Y, batch, labels) == pytest.approx(ref, abs=1e-9)
    assert batch_silhouette(Y, batch) == pytest.approx(
        np.mean(1 - np.abs(sk_samples(Y, batch))), abs=1e-9)
    with pytest.raises(ValueError, match="two batches"):
        batch_silhouette(Y[70:], batch[70:], labels[70:])


def _dense_knn(Z, k):
    d = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1)[:, :k]


def test_within_batch_preservation_dense(rng):
    X = rng.normal(size=(80, 5))
    Y = X[:, :2] + 0.3 * rng.normal(size=(80, 2))
    batch = np.repeat(["p", "q", "tiny"], [45, 30, 5])  # "tiny" has ≤ k points: skipped
    k = 6
    kept = 0.0
    for b in ("p", "q"):
        rows = np.flatnonzero(batch == b)
        nx, ny = _dense_knn(X[rows], k), _dense_knn(Y[rows], k)
        kept += sum(len(set(a) & set(c)) for a, c in zip(nx, ny, strict=True)) / k
    assert within_batch_preservation(X, Y, batch, k) == pytest.approx(kept / 75)
    # a map unrelated to X keeps about k/(n_b − 1)
    assert within_batch_preservation(X, rng.normal(size=(80, 2)), batch, k) < 0.35


def test_overall_score_from_dense_components(rng):
    n, k = 120, 8
    batch = rng.integers(0, 2, n)
    labels = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 4)) + 4 * labels[:, None] + 2 * batch[:, None]
    Y = X[:, :2] + rng.normal(size=(n, 2))
    nn = _dense_knn(Y, k)
    h_b = np.mean(batch[nn] == batch[:, None])
    h_l = np.mean(labels[nn] == labels[:, None])
    chance = np.sum((np.bincount(batch) / n) ** 2)
    batch_axis = (np.clip((1 - h_b) / (1 - chance), 0, 1)
                  + ilisi(Y, batch, 10, normalize=True)) / 2
    pres = within_batch_preservation(X, Y, batch, 5)
    bio = (pres + h_l + clisi(Y, labels, 10, normalize=True)) / 3
    res = integration_score(X, Y, batch, labels, k=k, k_preservation=5, perplexity=10)
    assert res.batch_homogeneity == pytest.approx(h_b)
    assert res.label_homogeneity == pytest.approx(h_l)
    assert res.overall == pytest.approx(0.4 * batch_axis + 0.6 * bio)
    no_labels = integration_score(X, Y, batch, k=k, k_preservation=5, perplexity=10,
                                  silhouettes=False)
    assert no_labels.bio == pytest.approx(pres)
    assert np.isnan(no_labels.batch_asw) and np.isnan(no_labels.clisi)


def test_score_command_prints_the_scib_table(tmp_path, rng, capsys):
    from ctsne.interfaces.cli.main import main

    n = 150
    batch, cell = rng.integers(0, 2, n), rng.integers(0, 3, n)
    X = rng.normal(size=(n, 4)) + 3 * cell[:, None] + batch[:, None]
    Y = X[:, :2] + 0.5 * rng.normal(size=(n, 2))
    head = "x0,x1,x2,x3,batch,cell\n"
    (tmp_path / "d.csv").write_text(head + "".join(
        ",".join(f"{v:.17g}" for v in x) + f",{b},c{c}\n"
        for x, b, c in zip(X, batch, cell, strict=True)))
    (tmp_path / "e.csv").write_text("ctsne1,ctsne2\n" + "".join(
        f"{a:.17g},{b:.17g}\n" for a, b in Y))
    argv = [str(tmp_path / "e.csv"), "--prior", "batch", "--complement", "cell", "--data",
            str(tmp_path / "d.csv"), "--scib"]
    assert main(["score", *argv]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith(
        "batch ") and "e.csv" in ln][0]
    ref = integration_score(X, Y, batch, np.array([f"c{c}" for c in cell]))
    assert [float(v) for v in line.split()[-3:]] == pytest.approx(
        [ref.batch, ref.bio, ref.overall], abs=6e-4)
    assert main(["score", str(tmp_path / "e.csv"), "--prior", "batch", "--scib"]) == 2
    assert "--scib needs --prior" in capsys.readouterr().err
