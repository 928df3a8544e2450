"""Perplexity calibration and the joint affinities P."""

import numpy as np
import pytest

from ctsne.affinity import calibrate, joint_affinities
from ctsne.neighbors import nearest_neighbors


def test_calibration_reaches_the_perplexity(rng):
    X = rng.normal(size=(300, 5))
    idx, dist = nearest_neighbors(X, 90, method="exact")
    P = calibrate(dist, 30.0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    H = -np.sum(np.where(P > 0, P * np.log(P), 0.0), axis=1)
    np.testing.assert_allclose(np.exp(H), 30.0, rtol=1e-5)


def test_exact_neighbours_match_brute_force(rng):
    X = rng.normal(size=(120, 4))
    idx, dist = nearest_neighbors(X, 7, method="exact")
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    np.testing.assert_allclose(dist, np.sort(D, axis=1)[:, :7], rtol=1e-10)


def test_joint_affinities_symmetric_normalised(rng):
    X = rng.normal(size=(200, 3))
    P = joint_affinities(X, perplexity=10)
    assert P.shape == (200, 200)
    assert abs(P.sum() - 1.0) < 1e-12
    assert abs(P - P.T).max() < 1e-15
    assert P.diagonal().max() == 0


def test_duplicates_do_not_break_affinities(rng):
    X = np.repeat(rng.normal(size=(20, 3)), 10, axis=0)  # every point ten times
    X = np.vstack([X, np.zeros((40, 3))])  # and a block of 40 identical points
    P = joint_affinities(X, perplexity=5)
    assert np.all(np.isfinite(P.data)) and abs(P.sum() - 1) < 1e-12
    assert P.diagonal().max() == 0


def test_approximate_neighbours_have_high_recall(rng):
    X = rng.normal(size=(2000, 10))
    exact, _ = nearest_neighbors(X, 15, method="exact")
    approx, _ = nearest_neighbors(X, 15, method="approx", random_state=0)
    recall = np.mean([len(set(a) & set(e)) / 15 for a, e in zip(approx, exact, strict=True)])
    assert recall > 0.9
    assert not np.any(approx == np.arange(2000)[:, None])


@pytest.mark.parametrize("perplexity", [1.5, 50.0])
def test_extreme_perplexities(perplexity, rng):
    X = rng.normal(size=(160, 2))
    P = joint_affinities(X, perplexity=perplexity)
    assert abs(P.sum() - 1) < 1e-12
