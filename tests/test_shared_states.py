"""Shared-state conditioning: the weights, the states found, every estimator and engine."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_affinities
from sklearn.metrics import adjusted_rand_score

from ctsne import ConditionalLargeVis, ConditionalTSNE, ConditionalUMAP
from ctsne.estimator.states import choose_conditioning, estimate_states, held_by
from ctsne.forces.gradient import ConditionalGradient
from ctsne.forces.objective import exact_objective
from ctsne.metrics import cross_class_agreement
from ctsne.prior import make_prior
from ctsne.shared_states import SharedStatePrior, shared_state_table, with_states


def _design(rng, layout, per=120, d=10, shift=2.0):
    """Batches × types: ``layout[b]`` lists the types batch b holds; each type a Gaussian
    at its own centre, each batch shifted (a batch effect smaller than the types' gaps)."""
    n_types = 1 + max(t for types in layout for t in types)
    centres = rng.normal(scale=6.0, size=(n_types, d))
    shifts = rng.normal(scale=shift, size=(len(layout), d))
    parts = [(b, t) for b, types in enumerate(layout) for t in types]
    X = np.vstack([centres[t] + shifts[b] + rng.normal(size=(per, d)) for b, t in parts])
    batch = np.repeat([b for b, _ in parts], per)
    label = np.repeat([t for _, t in parts], per)
    return X, batch, label


# a type in one batch only (2 in batch 0, 3 in batch 1), two types every batch holds
CONFOUNDED = [[0, 1, 2], [0, 1, 3], [0, 1]]
# a type shared by two of three batches
TWO_OF_THREE = [[0, 1], [0, 1, 2], [0, 2]]


def _weights_by_definition(c, s, a, b):
    same_c = c[:, None] == c[None, :]
    same_s = s[:, None] == s[None, :]
    return np.where(same_c, a, np.where(same_s, b, 1.0))


def test_the_four_terms_sum_to_the_shared_state_weights():
    rng = np.random.default_rng(0)
    c, s = rng.integers(0, 3, 200), rng.integers(0, 4, 200)
    prior = with_states(make_prior(c, 200, beta=0.05), s)
    W = np.zeros((200, 200))
    for term in prior.terms():
        same = (np.ones((200, 200), bool) if term.codes is None
                else term.codes[:, None] == term.codes[None, :])
        W += term.coef * same
    ref = _weights_by_definition(c, s, prior.alphas[0], prior.betas[0])
    np.testing.assert_allclose(W, ref, rtol=1e-12)
    np.testing.assert_array_equal(prior.pair_weights(np.arange(200)), ref)
    groups, G = prior.group_weights()  # the SGD layouts' table reads the same weights
    np.testing.assert_array_equal(G[groups][:, groups], ref)
    # new points of unknown state: the paper's weights against each group
    _, rows = prior.group_weights([np.array([0, 2, -1])])
    assert rows.shape == (3, groups.max() + 1)
    assert set(np.unique(rows)) <= {prior.alphas[0], prior.betas[0]}


def test_the_gradient_and_kl_with_states_are_the_exact_objectives():
    rng = np.random.default_rng(1)
    n = 150
    P = sp.csr_matrix(random_affinities(n, rng))
    c, s = rng.integers(0, 3, n), rng.integers(0, 4, n)
    prior = with_states(make_prior(c, n, beta=0.1), s)
    Y = rng.normal(size=(n, 2))
    kl, grad = exact_objective(P, Y, prior)  # dense, w_ij from pair_weights
    g = ConditionalGradient(P, prior, 2, "exact")
    got, got_kl = g(Y, 1.0, True)
    np.testing.assert_allclose(got, grad, rtol=1e-9, atol=1e-12)
    assert got_kl == pytest.approx(kl, rel=1e-10)
    # and the dense objective is its own finite differences
    eps, (i, k) = 1e-6, (7, 1)
    Yp, Ym = Y.copy(), Y.copy()
    Yp[i, k] += eps
    Ym[i, k] -= eps
    fd = (exact_objective(P, Yp, prior)[0] - exact_objective(P, Ym, prior)[0]) / (2 * eps)
    assert fd == pytest.approx(grad[i, k], rel=1e-5)


@pytest.mark.parametrize("layout", [CONFOUNDED, TWO_OF_THREE])
def test_the_states_found_split_no_type_and_name_their_holders(layout):
    X, batch, label = _design(np.random.default_rng(2), layout)
    states, aligned = estimate_states(X, batch, random_state=0)
    assert aligned.shape == (len(X), X.shape[1])
    # a state never spans two types (a type may span several states)
    for k in np.unique(states):
        assert len(np.unique(label[states == k])) == 1
    prior = with_states(make_prior(batch, len(batch)), states)
    table = shared_state_table(prior)
    held = held_by(table)
    for t in np.unique(label):
        holders = {b for b, types in enumerate(layout) if t in types}
        mine = np.unique(states[label == t])
        # no state of the type is held by a batch that lacks the type ...
        assert all(set(np.flatnonzero(held[k])) <= holders for k in mine)
        # ... and most of a shared type's points lie in states its batches share
        if len(holders) > 1:
            shared = [k for k in mine if held[k].sum() >= 2]
            assert np.isin(states[label == t], shared).mean() > 0.5
    assert choose_conditioning(table)[0] == "states"


def test_auto_keeps_the_papers_weights_where_every_batch_holds_every_type():
    X, batch, _ = _design(np.random.default_rng(3), [[0, 1, 2]] * 3)
    model = ConditionalTSNE(conditioning="auto", random_state=0, n_iter=50,
                            early_exaggeration_iter=50).fit(X, batch)
    assert model.conditioning_ == "classes" and model.states_ is None
    assert type(model.prior_) is not SharedStatePrior


def test_a_type_one_batch_holds_stays_apart_and_shared_types_mix():
    X, batch, label = _design(np.random.default_rng(4), CONFOUNDED)
    common = dict(random_state=0, n_jobs=1)
    paper = ConditionalTSNE(conditioning="classes", **common).fit(X, batch)
    shared = ConditionalTSNE(**common).fit(X, batch)  # the default, "auto"
    assert shared.conditioning_ == "states"
    found = shared.shared_states_
    assert found.table.shape == (len(np.unique(shared.states_)), 3)
    assert f"{len(found.table)} states, " in repr(found)
    before = cross_class_agreement(paper.embedding_, batch, label).agreement
    after = cross_class_agreement(shared.embedding_, batch, label)
    assert after.agreement >= 0.95 > before
    # the batches still mix where they share a type: cross-batch neighbours exist there
    assert after.coverage > 0.5
    # the default's graph: the standard one of the space Harmony aligned
    assert shared.affinities_ == "standard" and paper.affinities_ == "balanced"


def test_every_estimator_reads_the_same_states():
    X, batch, _ = _design(np.random.default_rng(5), TWO_OF_THREE, per=60)
    fits = [cls(conditioning="states", random_state=0, n_epochs=20).fit(X, batch)
            for cls in (ConditionalUMAP, ConditionalLargeVis)]
    fits.append(ConditionalTSNE(conditioning="states", random_state=0, n_iter=20,
                                early_exaggeration_iter=20).fit(X, batch))
    for fit in fits[1:]:
        np.testing.assert_array_equal(fit.states_, fits[0].states_)
        assert isinstance(fit.prior_, SharedStatePrior)


def test_given_states_and_their_errors():
    X, batch, label = _design(np.random.default_rng(6), CONFOUNDED, per=40)
    model = ConditionalTSNE(random_state=0, n_iter=20, early_exaggeration_iter=20)
    model.fit(X, batch, states=np.array([f"t{t}" for t in label]))
    assert model.conditioning_ == "states"
    assert adjusted_rand_score(label, model.states_) == 1.0
    with pytest.raises(ValueError, match="give a prior too"):
        model.fit(X, states=label)
    with pytest.raises(ValueError, match="one state per row"):
        model.fit(X, batch, states=label[:-1])
    with pytest.raises(ValueError, match="conditioning must be"):
        ConditionalTSNE(conditioning="cells").fit(X, batch)


def test_the_torch_engine_reads_the_same_weights():
    torch = pytest.importorskip("torch")
    from ctsne.torch_engine.gradient import TorchGradient

    rng = np.random.default_rng(7)
    n = 120
    P = sp.csr_matrix(random_affinities(n, rng))
    prior = with_states(make_prior(rng.integers(0, 3, n), n, beta=0.1), rng.integers(0, 3, n))
    Y = rng.normal(size=(n, 2))
    ref, ref_kl = ConditionalGradient(P, prior, 2, "exact")(Y, 1.0, True)
    tg = TorchGradient(P, prior, 2, "exact", torch.device("cpu"), torch.float64)
    got, got_kl = tg(torch.as_tensor(Y), 1.0, True)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-13)
    assert got_kl == pytest.approx(ref_kl, rel=1e-12)


def test_the_states_are_said_and_drawn(capsys, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from ctsne.plotting import plot_states

    X, batch, _ = _design(np.random.default_rng(4), CONFOUNDED, per=60)
    model = ConditionalTSNE(random_state=0, verbose=True, n_iter=20,
                            early_exaggeration_iter=20).fit(X, batch)
    err = capsys.readouterr().err
    k = len(model.shared_states_.table)
    assert f"conditioning states: {k} states" in err
    # the states of the type batch 0 holds alone are grouped as held by 0 only
    assert "held by all classes: " in err and "held by 0 only: " in err
    assert "held by 1 only: " in err
    ax = plot_states(model)
    assert len(ax.images) == 1 and ax.images[0].get_array().shape == (k, 3)
    ax.figure.savefig(tmp_path / "states.png")
    plain = ConditionalTSNE(conditioning="classes", n_iter=20,
                            early_exaggeration_iter=20).fit(X, batch)
    with pytest.raises(ValueError, match="found no shared states"):
        plot_states(plain)


def test_tl_keeps_the_states_and_says_which_weights():
    anndata = pytest.importorskip("anndata")
    import pandas as pd

    import ctsne

    X, batch, label = _design(np.random.default_rng(4), CONFOUNDED, per=50)
    adata = anndata.AnnData(X, obs=pd.DataFrame({"batch": batch.astype(str)},
                                                index=[f"c{i}" for i in range(len(X))]))
    ctsne.tl.cumap(adata, prior="batch", random_state=0, n_epochs=30)
    record = adata.uns["X_cumap"]
    assert record["conditioning"] == "states"
    states = adata.obs["cumap_state"].cat.codes.to_numpy()
    assert len(record["shared_states"]["points"]) == len(np.unique(states))
    # no state spans two types
    assert all(len(np.unique(label[states == k])) == 1 for k in np.unique(states))
    # a re-run with the paper's weights leaves no states column of the run before
    ctsne.tl.cumap(adata, prior="batch", random_state=0, n_epochs=30,
                   conditioning="classes")
    assert "cumap_state" not in adata.obs
    assert adata.uns["X_cumap"]["conditioning"] == "classes"


def test_another_prior_on_the_fitted_map_says_it_has_the_papers_weights():
    X, batch, _ = _design(np.random.default_rng(4), CONFOUNDED, per=60)
    model = ConditionalTSNE(random_state=0, n_iter=20, early_exaggeration_iter=20).fit(X, batch)
    assert model.conditioning_ == "states"
    model.set_prior(batch % 2)  # set_prior applies the paper's weights
    assert model.conditioning_ == "classes" and model.states_ is None
    assert model.shared_states_ is None and type(model.prior_) is not SharedStatePrior
    # an encoded prior with states keeps them (fit_affinities takes it as is)
    again = ConditionalTSNE(random_state=0, n_iter=20, early_exaggeration_iter=20)
    shared = with_states(make_prior(batch, len(batch)), batch)
    again.fit_affinities(model.P_, shared, init="random")
    assert again.conditioning_ == "states" and again.shared_states_.table.shape == (3, 3)


def test_tl_takes_scanpys_batch_key_and_the_cli_says_how_it_conditioned(tmp_path, capsys):
    anndata = pytest.importorskip("anndata")
    import pandas as pd

    import ctsne
    from ctsne.interfaces.cli.main import main

    X, batch, _ = _design(np.random.default_rng(4), CONFOUNDED, per=50)
    obs = pd.DataFrame({"batch": batch.astype(str)}, index=[f"c{i}" for i in range(len(X))])
    adata = anndata.AnnData(X, obs=obs)
    ctsne.tl.clargevis(adata, batch_key="batch", random_state=0, n_epochs=30)
    assert adata.uns["X_clargevis"]["params"]["prior"] == "batch"
    assert adata.uns["X_clargevis"]["conditioning"] == "states"
    with pytest.raises(ValueError, match="prior= or batch_key="):
        ctsne.tl.ctsne(adata, prior="batch", batch_key="batch")
    table = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    table["batch"] = batch.astype(str)
    table.to_csv(tmp_path / "d.csv", index=False)
    for how in ("classes", "states"):
        assert main(["embed", str(tmp_path / "d.csv"), "--prior", "batch", "--conditioning",
                     how, "--n-iter", "50", "-o", str(tmp_path / f"{how}.csv")]) == 0
        assert f"conditioning {how}" in capsys.readouterr().err


def test_the_tsne_counterpart_of_a_shared_state_map_is_plain_tsne():
    """The P of Harmony's aligned space encodes the prior: the counterpart builds the
    standard P of the data, as a plain fit from the same start does."""
    X, batch, _ = _design(np.random.default_rng(4), CONFOUNDED, per=40)
    common = dict(random_state=0, n_iter=60, early_exaggeration_iter=30, n_jobs=1)
    model = ConditionalTSNE(**common).fit(X, batch)
    assert model.conditioning_ == "states"
    twin = model.tsne_counterpart()
    plain = ConditionalTSNE(**common, init=model.initial_embedding_).fit(X)
    np.testing.assert_array_equal(twin.embedding_, plain.embedding_)
    model.fit_affinities(model.P_, batch, X=X)  # a given P: handed over as it is
    assert model.tsne_counterpart().P_ is model.P_


def test_new_points_take_the_state_of_their_own_class_neighbours():
    """Placing new points (UMAP, LargeVis): a new point's state is the one its reference
    neighbours of its own class hold most weight in; its weights against each group are
    then the fitted ones (unknown state: the paper's α' or β')."""
    c = np.array([0, 0, 0, 1, 1, 1])
    s = np.array([0, 0, 1, 0, 1, 1])
    prior = with_states(make_prior(c, 6, beta=0.1), s)
    idx = np.array([[0, 2, 3], [3, 4, 0], [3, 4, 5], [0, 1, 2]])
    w = np.array([[0.2, 0.7, 1.0], [1.0, 0.1, 0.5], [0.3, 0.3, 0.3], [1.0, 1.0, 1.0]])
    new_c = np.array([0, 0, 0, -1])
    got = prior.states_of(new_c, idx, w)
    # row 0: own-class neighbours 0 (state 0, 0.2) and 2 (state 1, 0.7) -> 1;
    # row 1: own class only point 0 -> 0; row 2: no neighbour of class 0; row 3: unknown
    np.testing.assert_array_equal(got, [1, 0, -1, -1])
    groups, rows = prior.group_weights([new_c, got])
    _, gc, gs = prior._groups()
    a, b = prior.alphas[0], prior.betas[0]
    want = np.array([[a if ci == cj else (b if (si < 0 or si == sj) else 1.0)
                      for cj, sj in zip(gc, gs, strict=True)]
                     for ci, si in zip(new_c, got, strict=True)])
    want[3] = np.where(gc == -1, a, b)  # an unknown class: β' to every group
    np.testing.assert_allclose(rows, want)


def test_auto_keeps_the_papers_weights_for_batches_that_copy_each_other(capsys):
    """The same clusters in every batch, shifted 40 apart: Harmony cannot align such a
    shift (its states are each one batch's), but the classes' counterpart trust (each
    centred on its mean) says they are copies, so "auto" keeps the paper's weights."""
    from ctsne.affinities.counterpart import counterpart_trust
    from ctsne.affinities.cross_share import TRUST_FROM

    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, 900)
    X = rng.normal(scale=3.0, size=(4, 5))[rng.integers(0, 4, 900)] + rng.normal(size=(900, 5))
    X[:, 0] += 40.0 * codes
    assert counterpart_trust(X, codes)[1] >= TRUST_FROM
    model = ConditionalTSNE(random_state=0, verbose=True, n_iter=20,
                            early_exaggeration_iter=20).fit(X, codes)
    assert model.conditioning_ == "classes" and model.states_ is None
    assert "counterpart trust" in capsys.readouterr().err
    # where a type is one batch's alone, the trust is low and states are used
    Xc, batch, _ = _design(np.random.default_rng(2), CONFOUNDED, per=60)
    assert counterpart_trust(Xc, batch)[1] < TRUST_FROM


def test_placing_new_points_repels_with_the_shared_state_weights():
    """ConditionalTSNE.transform's repulsion with states, exact (θ = 0), against the dense
    sums with the weights by definition; a new point of unknown state (ANY) is in every
    state (the paper's α' or β'), one of unknown class (−1) shares no class."""
    from ctsne.forces.repulsion.reference import ANY, ReferenceRepulsion

    rng = np.random.default_rng(3)
    n, m = 300, 40
    Y_ref, Y_new = rng.normal(size=(n, 2)) * 4, rng.normal(size=(m, 2)) * 4
    c, s = rng.integers(0, 3, n), rng.integers(0, 5, n)
    prior = with_states(make_prior(c, n, beta=0.05), s)
    c_new, s_new = rng.integers(0, 3, m), rng.integers(0, 5, m)
    c_new[:5] = -1
    s_new[3:9] = ANY
    a, b = prior.alphas[0], prior.betas[0]
    same_c = (c_new[:, None] == prior.codes[0][None, :]) & (c_new >= 0)[:, None]
    same_s = (s_new[:, None] == prior.states[None, :]) | (s_new == ANY)[:, None]
    W = np.where(same_c, a, np.where(same_s, b, 1.0))
    diff = Y_new[:, None, :] - Y_ref[None, :, :]
    t = 1 / (1 + (diff**2).sum(-1))
    rep = ReferenceRepulsion(Y_ref, [prior.codes[0], prior.states], [c_new, s_new],
                             prior.column_terms(), theta=0.0)
    F, Z = rep(Y_new)
    np.testing.assert_allclose(Z, (W * t).sum(1), rtol=1e-10)
    np.testing.assert_allclose(F, np.einsum("ij,ijd->id", W * t**2, diff), rtol=1e-9,
                               atol=1e-12)
    # restricted to some new points: the same rows
    keep = np.array([1, 4, 7, 30])
    F2, Z2 = rep.restrict(keep)(Y_new[keep])
    np.testing.assert_allclose(Z2, Z[keep], rtol=1e-12)


def test_transform_places_a_type_one_batch_holds_beside_its_own_type():
    """New cells of a type only batch 0 holds, placed into a shared-state map, land among
    that type's reference cells (as the fit put them), not over the shared types."""
    X, batch, label = _design(np.random.default_rng(8), CONFOUNDED, per=60)
    held = np.ones(len(X), bool)
    new = np.flatnonzero(label == 2)[::4]  # every 4th cell of batch 0's own type
    held[new] = False
    model = ConditionalTSNE(random_state=0, conditioning="states", n_iter=300)
    Y = model.fit_transform(X[held], batch[held], states=label[held])
    Y_new = model.transform(X[new], batch[new])
    centres = np.stack([Y[label[held] == t].mean(0) for t in range(4)])
    nearest = np.argmin(((Y_new[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    assert np.mean(nearest == 2) >= 0.9
