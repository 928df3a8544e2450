import numpy as np
import pytest

from ctsne.datasets import (
    derive_adult_sample,
    load_adult,
    make_cca_example,
    make_scaled,
    make_synthetic,
)


def test_make_synthetic_shapes_and_seed():
    a = make_synthetic(n=300, random_state=3)
    b = make_synthetic(n=300, random_state=3)
    c = make_synthetic(n=300, random_state=4)
    assert a.X.shape == (300, 10) and len(a.feature_names) == 10
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, c.X)
    assert set(np.unique(a.f14)) == set(range(5)) and set(np.unique(a.f56)) == set(range(4))
    np.testing.assert_array_equal(a.f16, a.f14 * 4 + a.f56)
    # The clusters live where the docstring says: f14 explains dims 1–4, not 5–6.
    between = [np.var([a.X[a.f14 == c, j].mean() for c in range(5)]) for j in range(10)]
    assert min(between[:4]) > 5 * max(between[4:])


def test_make_cca_example():
    d = make_cca_example(n=1000, random_state=0)
    assert d.X.shape == (1000, 5)
    assert np.all(np.bincount(d.cluster) == 100)
    assert np.all(np.bincount(d.cluster, weights=d.subcluster) == 20)
    # The two parts of each cluster differ along the split axis only.
    for c in range(10):
        m = d.cluster == c
        gap = d.X[m & (d.subcluster == 1)].mean(0) - d.X[m & (d.subcluster == 0)].mean(0)
        assert np.argmax(np.abs(gap)) == d.split_axis[c]
        assert abs(gap[d.split_axis[c]]) == pytest.approx(3.0, abs=0.5)
    np.testing.assert_array_equal(make_cca_example(random_state=0).X, d.X)


def test_make_scaled_dtype_and_structure():
    d = make_scaled(5000, 16, n_classes=3, random_state=1, chunk_size=1000)
    assert d.X.shape == (5000, 16) and d.X.dtype == np.float32
    assert set(np.unique(d.labels)) == {0, 1, 2}
    np.testing.assert_array_equal(make_scaled(5000, 16, n_classes=3, random_state=1).X, d.X)
    # Within a (label, sublabel) cell the noise is unit variance.
    cell = (d.labels == 0) & (d.sublabels == 0)
    assert d.X[cell].std(0).mean() == pytest.approx(1.0, abs=0.1)
    assert make_scaled(10, 3, dtype=np.float64).X.dtype == np.float64


def test_load_adult():
    d = load_adult()
    assert d.X.shape == (1000, 6)
    assert set(d.gender) == {"Male", "Female"} and set(d.ethnicity) == {"White", "Other"}
    assert set(d.income) == {">50K", "<=50K"}
    np.testing.assert_array_equal(d.X[:, 4], d.gender == "Male")
    assert 17 <= d.X[:, 0].min() and d.X[:, 0].max() <= 90
    assert len(np.unique(d.ethnicity_gender)) == 4
    z = load_adult(standardize=True).X
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(z.std(0), 1)


def test_derive_adult_sample(tmp_path):
    src = tmp_path / "adult.csv"
    lines = ["age, workclass, fnlwgt, education, education-num, marital-status, occupation, "
             "relationship, race, sex, capital-gain, capital-loss, hours-per-week, "
             "native-country, Salary"]
    races = ["White", "Black", "Asian-Pac-Islander", "Other"]
    for i in range(20):
        lines.append(f"{20 + i}, Private, 1, HS-grad, 9, Never-married, Sales, Own-child, "
                     f"{races[i % 4]}, {'Male' if i % 2 else 'Female'}, 0, 0, {30 + i}, "
                     f"United-States, {'>50K' if i % 3 else '<=50K'}")
    src.write_text("\n".join(lines) + "\n\n")
    out = tmp_path / "sample.csv"
    rows = derive_adult_sample(src, out, n=8, random_state=1)
    assert rows[0] == ["age", "education-num", "hours-per-week", "ethnicity", "gender",
                       "income"]
    assert len(rows) == 9 and out.read_text().count("\n") == 9
    for r in rows[1:]:
        i = int(r[0]) - 20
        assert r[2] == str(30 + i)
        assert r[3] == ("White" if i % 4 == 0 else "Other")
    assert rows == derive_adult_sample(src, None, n=8, random_state=1)
