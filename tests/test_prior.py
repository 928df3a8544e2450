"""Label encoding, several priors, the α'/β' relation and its error messages."""

import numpy as np
import pytest

from ctsne.prior import encode_labels, make_prior, weights_from_sizes


def test_any_hashable_labels_encode_to_the_same_partition():
    base = [0, 1, 0, 2, 1]
    for labels in ([5, 7, 5, 9, 7], ["a", "b", "a", "c", "b"], [(1, 2), "x", (1, 2), 3.5, "x"],
                   np.array([1.0, 2.0, 1.0, 3.0, 2.0])):
        codes, classes = encode_labels(labels)
        np.testing.assert_array_equal(codes, base)
        assert len(classes) == 3


def test_bools_and_pandas():
    pd = pytest.importorskip("pandas")
    codes, classes = encode_labels([True, False, True])
    np.testing.assert_array_equal(codes, [0, 1, 0])
    cat = pd.Categorical(["x", "y", None, "x"], categories=["unused", "y", "x"])
    codes, classes = encode_labels(cat)
    np.testing.assert_array_equal(codes, [0, 1, 2, 0])
    assert list(classes) == ["x", "y", None]  # unused category dropped, missing is a class
    codes, _ = encode_labels(pd.Series([1, None, 2, 1], dtype="Int64"))
    np.testing.assert_array_equal(codes, [0, 1, 2, 0])


def test_missing_labels_class_or_error():
    codes, classes = encode_labels(["a", None, float("nan"), "a"])
    np.testing.assert_array_equal(codes, [0, 1, 1, 0])
    with pytest.raises(ValueError, match=r"2 missing label\(s\) at rows 1, 2"):
        encode_labels(["a", None, float("nan"), "a"], missing="error")


def test_several_priors_joint_and_product():
    a = [0, 0, 1, 1, 0, 1]
    b = ["u", "v", "u", "v", "u", "u"]
    joint = make_prior([a, b], 6)
    assert len(joint.codes) == 1
    np.testing.assert_array_equal(joint.codes[0], [0, 1, 2, 3, 0, 2])
    as_matrix = make_prior(np.array([a, b], dtype=object).T, 6)
    np.testing.assert_array_equal(as_matrix.codes[0], joint.codes[0])
    prod = make_prior([a, b], 6, combine="product")
    assert len(prod.codes) == 2
    # w_ij is the product of the per-prior weights
    w = prod.pair_weights(np.arange(6))
    a1, b1 = prod.alphas[0], prod.betas[0]
    a2, b2 = prod.alphas[1], prod.betas[1]
    assert w[0, 4] == pytest.approx(a1 * a2)  # same in both
    assert w[0, 1] == pytest.approx(a1 * b2)
    assert w[0, 3] == pytest.approx(b1 * b2)
    # and the indicator expansion reproduces it
    dense = np.zeros((6, 6))
    for t in prod.terms():
        same = np.ones((6, 6), bool) if t.codes is None else t.codes[:, None] == t.codes[None]
        dense += t.coef * same
    np.testing.assert_allclose(dense, w)


def test_dataframe_prior():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"g": ["m", "f", "f", "m"], "e": [1, 1, 0, 0]})
    with pytest.warns(UserWarning, match="class of its own"):  # 4 joint classes of one
        p = make_prior(df, 4)
    assert p.n == 4 and len(p.classes[0]) == 4


def test_admissible_range_is_named():
    sizes = np.array([50, 50])
    _, _, rho = weights_from_sizes(sizes, beta=0.5)
    upper_beta = 1 / (1 - rho)
    beta_msg = f"beta must lie in the open interval \\(0, {upper_beta:.6g}\\)"
    with pytest.raises(ValueError, match=beta_msg):
        weights_from_sizes(sizes, beta=upper_beta)
    with pytest.raises(ValueError, match="beta"):
        weights_from_sizes(sizes, beta=0.0)
    alpha_msg = f"alpha must lie in the open interval \\(0, {1 / rho:.6g}\\)"
    with pytest.raises(ValueError, match=alpha_msg):
        weights_from_sizes(sizes, alpha=1 / rho + 0.1)


def test_confirmatory_mode_beta_above_one():
    a, b, _ = weights_from_sizes(np.array([30, 30, 40]), beta=1.2)
    assert b == 1.2 and 0 < a < 1


@pytest.mark.parametrize("labels", [np.zeros(10, int), np.arange(10)])
def test_uninformative_prior_warns_and_is_tsne(labels):
    with pytest.warns(UserWarning, match="carries no information"):
        p = make_prior(labels, 10)
    assert p.is_trivial
    assert all(t.codes is None for t in p.terms())


def test_wrong_length_is_rejected():
    with pytest.raises(ValueError, match="3 labels but X has 4 rows"):
        make_prior([1, 2, 3], 4)
    with pytest.raises(ValueError, match="combine"):
        make_prior([1, 2, 1, 2], 4, combine="sum")


def test_a_prior_that_only_converts_to_an_array_is_used_as_its_array():
    # scikit-learn's _NotAnArray has __array__ and no len()
    class OnlyArray:
        def __init__(self, values):
            self.values = values

        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.values)

    labels = np.array([0, 1, 1, 0, 2, 2])
    got = make_prior(OnlyArray(labels), 6)
    np.testing.assert_array_equal(got.codes[0], make_prior(labels, 6).codes[0])
