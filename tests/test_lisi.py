"""Integration measures: LISI (against harmonypy and a dense bisection-free reference) and
cross-class neighbour agreement (hand-computed)."""

import harmonypy
import numpy as np
import pytest
from scipy.optimize import brentq

from ctsne.metrics import clisi, cross_class_agreement, ilisi, lisi


def _dense_lisi(Y, labels, perplexity):
    """LISI from the definition: all distances, k = ⌊3·perplexity⌋ nearest, exp(−β·d)
    with β solved by Brent's method (not bisection) for the target entropy."""
    n = len(Y)
    d = np.sqrt(((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    k = int(min(n - 1, 3 * perplexity))
    out = np.empty(n)
    for i in range(n):
        nn = np.argsort(d[i])[:k]
        di = d[i, nn] - d[i, nn].min()

        def gap(beta, di=di):
            w = np.exp(-beta * di)
            return np.log(w.sum()) + beta * (di * w).sum() / w.sum() - np.log(perplexity)

        hi = 1.0
        while gap(hi) > 0:
            hi *= 2
        w = np.exp(-brentq(gap, 0.0, hi, xtol=1e-13) * di)
        w /= w.sum()
        mass = np.array([w[labels[nn] == lab].sum() for lab in np.unique(labels)])
        out[i] = 1.0 / (mass ** 2).sum()
    return out


def test_lisi_matches_harmonypy(rng):
    # Two offset blobs (batch) and three types: partly mixed, so values vary over (1, L).
    n = 500
    Y = rng.normal(size=(n, 2))
    batch = np.repeat(["b1", "b2"], n // 2)
    Y[batch == "b2"] += 1.5
    types = rng.integers(0, 3, n)
    meta = {"batch": batch, "type": types}
    for perplexity in (30, 7):
        ref = harmonypy.compute_lisi(Y, meta, ["batch", "type"], perplexity)
        np.testing.assert_allclose(lisi(Y, batch, perplexity), ref[:, 0], atol=1e-4)
        np.testing.assert_allclose(lisi(Y, types, perplexity), ref[:, 1], atol=1e-4)
        assert ref[:, 0].min() < 1.1 and ref[:, 0].max() > 1.8  # the case is not trivial


def test_lisi_matches_dense_definition(rng):
    Y = rng.normal(size=(150, 3))
    labels = rng.integers(0, 4, 150)
    np.testing.assert_allclose(lisi(Y, labels, 10), _dense_lisi(Y, labels, 10), rtol=1e-6)


def test_lisi_uniform_weights_hand_computed():
    # n − 1 = 3 neighbours cannot reach perplexity 10, so the weights become uniform:
    # point 0 sees a, b, b → masses 1/3, 2/3 → 1/(1/9 + 4/9) = 1.8; likewise for all.
    Y = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    labels = np.array(["a", "a", "b", "b"])
    np.testing.assert_allclose(lisi(Y, labels, perplexity=10), 1.8, rtol=1e-9)


def test_ilisi_clisi_extremes(rng):
    # Two far-apart blobs, each one batch; inside each, types alternate at random.
    Y = rng.normal(size=(200, 2))
    batch = np.repeat([0, 1], 100)
    Y[batch == 1] += 100.0
    assert ilisi(Y, batch, perplexity=10) == pytest.approx(1.0)
    assert ilisi(Y, batch, perplexity=10, normalize=True) == pytest.approx(0.0, abs=1e-12)
    # Blob-pure labels: cLISI 1, normalised 1.
    assert clisi(Y, batch, perplexity=10) == pytest.approx(1.0)
    assert clisi(Y, batch, perplexity=10, normalize=True) == pytest.approx(1.0)
    # The median of the per-point values, normalised as documented.
    types = rng.integers(0, 2, 200)
    med = float(np.median(lisi(Y, types, 10)))
    assert clisi(Y, types, perplexity=10) == pytest.approx(med)
    assert clisi(Y, types, perplexity=10, normalize=True) == pytest.approx(2.0 - med)
    assert ilisi(Y, types, perplexity=10, normalize=True) == pytest.approx(med - 1.0)
    assert 1.7 < med <= 2.0  # random binary types mix well


def test_lisi_bad_input():
    Y = np.zeros((5, 2))
    with pytest.raises(ValueError, match="perplexity"):
        lisi(Y, np.arange(5), perplexity=0)
    with pytest.raises(ValueError, match="one entry per row"):
        lisi(Y, np.arange(4))
    with pytest.raises(ValueError, match="at least 2 distinct"):
        ilisi(Y + np.arange(5)[:, None], np.zeros(5), normalize=True)


def test_cross_class_agreement_hand_computed():
    # Points on a line; k = 2 nearest other points:
    #   q0 -0.5: q1, q2   q1 0: q0, q2   q2 1: q1, q0        (no other-class neighbour)
    #   q3 3.4 (b, x): q2, q4 → other class: q2 (y)          → 0/1
    #   q4 6   (b, y): q3, q5 → other class: q5 (x)          → 0/1
    #   q5 10  (a, x): q4, q3 → other class: q4 (y), q3 (x)  → 1/2
    # agreement (0 + 0 + 1/2)/3 = 1/6; coverage 3/6.
    # Chance: q3: a-points with x are q1, q5 → 2 of 4 a-points; q4: a-points with y
    # q0, q2 → 2/4; q5: b-points with x q3 → 1/2. Mean 1/2.
    Y = np.array([-0.5, 0.0, 1.0, 3.4, 6.0, 10.0])[:, None]
    prior = np.array(["a", "a", "a", "b", "b", "a"])
    comp = np.array(["y", "x", "y", "x", "y", "x"])
    res = cross_class_agreement(Y, prior, comp, k=2)
    assert res.agreement == pytest.approx(1 / 6)
    assert res.coverage == pytest.approx(0.5)
    assert res.chance == pytest.approx(0.5)
    # k = 1: only q3 → q2 (y vs x: 0) and q5 → q4 (y vs x: 0) cross; q4 → q3 stays in b.
    res = cross_class_agreement(Y, prior, comp, k=1)
    assert (res.agreement, res.coverage) == pytest.approx((0.0, 2 / 6))


def test_cross_class_agreement_without_crossings():
    Y = np.arange(6.0)[:, None]
    res = cross_class_agreement(Y, np.zeros(6), np.arange(6) % 2, k=2)
    assert res.coverage == 0.0 and np.isnan(res.agreement) and np.isnan(res.chance)
    with pytest.raises(ValueError, match="k must be"):
        cross_class_agreement(Y, np.zeros(6), np.zeros(6), k=6)
