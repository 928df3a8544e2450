"""The prior-mixing diagnostic: P's mass across classes against random labels."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_affinities

from ctsne.affinities.mixing import prior_mixing
from ctsne.affinities.standard import joint_affinities


def test_against_a_dense_computation(rng):
    n = 40
    P = random_affinities(n, rng)
    codes = rng.integers(0, 4, n)
    codes[:4] = np.arange(4)  # every class present
    m = prior_mixing(sp.csr_matrix(P), codes)
    diff = codes[:, None] != codes[None, :]
    assert m.cross == pytest.approx(P[diff].sum(), rel=1e-12)
    sizes = np.bincount(codes)
    rho = sum(s * (s - 1) for s in sizes) / (n * (n - 1))
    assert m.expected == pytest.approx(1 - rho, rel=1e-12)
    assert m.ratio == pytest.approx(P[diff].sum() / (1 - rho), rel=1e-12)
    for c in range(4):
        rows = codes == c
        share = P[rows][:, ~rows].sum() / P[rows].sum()
        expected = 1 - (sizes[c] - 1) / (n - 1)
        assert m.class_cross[c] == pytest.approx(share, rel=1e-12)
        assert m.class_expected[c] == pytest.approx(expected, rel=1e-12)
        assert m.class_ratio[c] == pytest.approx(share / expected, rel=1e-12)
    d = json.loads(json.dumps(m.to_dict()))
    assert d["class_sizes"] == sizes.tolist() and d["ratio"] == pytest.approx(m.ratio)


def test_fully_separated_classes_have_no_cross_mass(rng):
    X = np.vstack([rng.normal(size=(150, 3)), rng.normal(size=(150, 3)) + 50.0])
    codes = np.repeat([0, 1], 150)
    m = prior_mixing(joint_affinities(X, 10.0), codes)
    assert m.cross < 1e-12 and m.ratio < 1e-12 and m.separates
    assert m.expected == pytest.approx(1 - 2 * 150 * 149 / (300 * 299))


def test_random_labels_give_the_random_share(rng):
    X = rng.normal(size=(1500, 4))
    codes = rng.integers(0, 3, 1500)
    m = prior_mixing(joint_affinities(X, 15.0), codes)
    assert m.ratio == pytest.approx(1.0, abs=0.04)
    np.testing.assert_allclose(m.class_ratio, 1.0, atol=0.06)
    assert not m.separates


def test_bad_codes_are_rejected(rng):
    with pytest.raises(ValueError, match="one class per row"):
        prior_mixing(sp.identity(5, format="csr"), np.zeros(4, dtype=int))


def test_the_table_gives_the_mixing_of_its_symmetrised_p(rng):
    from ctsne.affinities.calibration import calibrate
    from ctsne.affinities.mixing import table_mixing
    from ctsne.affinities.symmetry import symmetrize
    from ctsne.neighbors.search import nearest_neighbors

    X = rng.normal(size=(300, 4))
    codes = (X[:, 0] > 0.3).astype(np.int64) + (X[:, 1] > 1.0)
    idx, dist = nearest_neighbors(X, 12, method="exact")
    cond = calibrate(dist, 4.0)
    cond[rng.random(cond.shape) < 0.1] = 0.0
    got = table_mixing(idx, cond, codes)
    want = prior_mixing(symmetrize(idx.copy(), cond.copy()), codes)
    for name in ("cross", "expected", "ratio"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-12)
    for name in ("class_cross", "class_expected", "class_ratio"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-12)
    assert 0.05 < got.cross < 0.5
