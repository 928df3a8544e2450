"""ctsne explore without a browser: session logic, P-sharing refit, controller, save/load."""

import csv
import json

import numpy as np
import pytest

from ctsne import ConditionalTSNE
from ctsne.affinities.mixing import prior_mixing
from ctsne.interfaces.explorer import session as session_mod
from ctsne.interfaces.explorer.controller import Explorer
from ctsne.interfaces.explorer.refit import RefitJob, fit_sharing_affinities
from ctsne.interfaces.explorer.session import Session, Step, cluster_labels, prior_labels


def _data(n=150, seed=0):
    """Three groups in x0-x1, two in x3; x2 is noise."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, n)
    h = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 4 * g
    X[:, 1] -= 3 * g
    X[:, 3] += 5 * h
    labels = {"g": np.array([f"g{v}" for v in g], dtype=object), "h": h.astype(float)}
    return X, g, h, labels


def _session(n=150):
    X, g, h, labels = _data(n)
    s = Session(X, ["x0", "x1", "x2", "x3"], np.arange(n) + 1000, labels)
    s.add_step(Step([], 1.0, np.c_[X[:, 0], X[:, 3]]))
    return s, g, h


def _small_model(**kw):
    return ConditionalTSNE(method="exact", perplexity=10, n_iter=60, early_exaggeration_iter=40,
                           random_state=0, **kw)


def test_prior_labels_keeps_few_levels_and_bins_many_into_quantiles():
    text = np.array(["a", None, "b"], dtype=object)
    assert prior_labels(text) is text
    few = prior_labels(np.array([1.0, 2.0, np.nan, 1.0]))
    assert list(few[[0, 1, 3]]) == [1.0, 2.0, 1.0] and few[2] is None
    many = prior_labels(np.arange(100, dtype=float))
    # 100 distinct values in 5 quantile bins of 20 each, in order
    assert list(many) == [f"q{k // 20 + 1}" for k in range(100)]


def test_ranking_of_a_selection_finds_the_planted_feature():
    s, g, h = _session()
    sel = np.flatnonzero(h == 1)  # h moved x3 by +5
    r = s.rank(sel)
    assert r.top == "x3" and r.weights[0] > 0
    X = s.X
    want = (X[h == 1, 3].mean() - X[h == 0, 3].mean()) / X[:, 3].std()
    assert r.mean_difference[0] == pytest.approx(want)
    assert (r.n_selected, r.n_total) == (int((h == 1).sum()), 150)
    assert 0.95 < r.auc <= 1.0
    with pytest.raises(ValueError, match="some but not all"):
        s.rank([])


def test_ranking_subsamples_large_data_but_counts_all(monkeypatch):
    monkeypatch.setattr(session_mod, "RANK_SAMPLE", 60)
    s, g, h = _session(400)
    r = s.rank(np.flatnonzero(g == 2))
    assert (r.n_selected, r.n_total) == (int((g == 2).sum()), 400)
    assert set(r.feature_names[:2]) == {"x0", "x1"}


def test_labels_from_selection_clusters_and_legend_levels():
    s, g, h = _session()
    name = s.label_from_selection([0, 5])
    assert name == "selection1" and s.derived == ["selection1"]
    assert list(s.labels[name][:6]) == ["selected", "rest", "rest", "rest", "rest", "selected"]
    assert s.label_from_selection([1]) == "selection2"
    assert np.array_equal(s.select_levels("g", ["g1"]), np.flatnonzero(g == 1))
    assert np.array_equal(s.select_levels("h", [1]), np.flatnonzero(h == 1))
    assert s.feature_column("g=g1") == "g"
    assert s.feature_column("x2") == "x2" and "x2" in s.derived  # a numeric feature ...
    assert sorted(set(s.prior_arrays(["x2"])[0])) == ["q1", "q2", "q3", "q4", "q5"]  # binned
    with pytest.raises(ValueError, match="neither"):
        s.feature_column("x9")
    arrays = s.prior_arrays(["g", "selection1"])
    assert len(arrays) == 2 and arrays[0][0] == s.labels["g"][0]
    with pytest.raises(ValueError, match="no label column 'nope'"):
        s.prior_arrays(["nope"])


def test_clustering_the_map_recovers_separated_groups():
    rng = np.random.default_rng(1)
    truth = np.repeat([0, 1, 2], 50)
    Y = rng.normal(scale=0.3, size=(150, 2)) + np.array([[0, 0], [10, 0], [0, 10]])[truth]
    for method, param in (("kmeans", 3), ("dbscan", 1.5)):
        c = cluster_labels(Y, method, param)
        # the same partition up to renaming: each cluster id maps to exactly one group
        pairs = set(zip(c.tolist(), truth.tolist(), strict=True))
        assert len(pairs) == 3 and len({a for a, _ in pairs}) == 3
    with pytest.raises(ValueError, match="2 ≤ k"):
        cluster_labels(Y, "kmeans", 1)
    with pytest.raises(ValueError, match="eps > 0"):
        cluster_labels(Y, "dbscan", 0)


def test_refit_shares_P_and_matches_a_full_fit_with_the_same_prior():
    X, g, h, labels = _data()
    base = _small_model(beta=0.01).fit(X)
    mixed = np.random.default_rng(1).integers(0, 2, len(X))  # a prior P crosses freely
    model = fit_sharing_affinities(base, X, mixed, beta=0.05)
    assert model.P_ is base.P_ and model.affinities_ == "standard"
    # independent route: the estimator's own fit (its own kNN and P) with the same prior
    full = _small_model(beta=0.05)
    Y_full = full.fit_transform(X, mixed)
    assert full.affinities_ == "standard"
    assert abs(full.P_ - base.P_).max() == 0
    np.testing.assert_allclose(model.embedding_, Y_full, rtol=1e-8, atol=1e-10)
    assert model.kl_divergence_ == pytest.approx(full.kl_divergence_, rel=1e-8)
    assert model.beta_ == pytest.approx(0.05)


def test_refit_balances_a_separating_prior_as_a_fit_would():
    X, g, h, labels = _data()
    base = _small_model(beta=0.01).fit(X)
    with pytest.warns(UserWarning, match="separates the data"):
        _small_model(affinities="standard").fit(X, g)  # g separates: the standard P warns
    # the paper's weights: the balanced P of a separating prior, as a fit builds it
    base.set_params(conditioning="classes")
    model = fit_sharing_affinities(base, X, g, beta=0.05)
    full = _small_model(beta=0.05, conditioning="classes").fit(X, g)
    assert model.affinities_ == full.affinities_ == "balanced"
    assert abs(model.P_ - full.P_).max() < 1e-12
    assert fit_sharing_affinities(base, X, g, beta=0.1).P_ is model.P_  # kept for the prior


def test_refit_conditions_on_shared_states_as_a_fit_would():
    """Under the default conditioning ("auto") a refit chooses as a fit does; where it
    chooses shared states, its states, prior and P (the standard P of Harmony's aligned
    space) are the fit's, and the map is the fit's."""
    # three batches; types 0 and 1 in every batch, type 2 in batch 0 only, type 3 in 1
    rng = np.random.default_rng(2)
    centres = rng.normal(scale=6.0, size=(4, 6))
    parts = [(b, t) for b, types in enumerate([[0, 1, 2], [0, 1, 3], [0, 1]])
             for t in types]
    X = np.vstack([centres[t] + rng.normal(scale=2.0, size=6) + rng.normal(size=(40, 6))
                   for _, t in parts])
    g = np.repeat([b for b, _ in parts], 40)
    base = _small_model().fit(X)
    model = fit_sharing_affinities(base, X, g, beta=0.05)
    full = _small_model(beta=0.05).fit(X, g)
    assert model.conditioning_ == full.conditioning_ == "states"
    assert model.affinities_ == full.affinities_
    assert abs(model.P_ - full.P_).max() < 1e-12
    np.testing.assert_array_equal(model.states_, full.states_)
    assert model.shared_states_.reason == full.shared_states_.reason
    np.testing.assert_allclose(model.embedding_, full.embedding_, rtol=1e-10, atol=1e-10)
    twin = fit_sharing_affinities(base, X, g, beta=0.05)
    assert twin.P_ is model.P_  # kept for the same prior


def test_refit_under_auto_runs_the_estimators_rule():
    # batches of the same groups, shifted: P is not "separated" by them, yet the rule
    # switches (the batches hold counterparts and the standard P falls short of mixing)
    rng = np.random.default_rng(0)
    n = 300
    g, b = rng.integers(0, 3, n), rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 4 * g
    X[:, 1] -= 3 * g
    X[:, 2] += 2.5 * b
    base = _small_model().fit(X)
    assert not prior_mixing(base.P_, b).separates
    model = fit_sharing_affinities(base, X, b, beta=0.01)
    full = _small_model().fit(X, b)
    assert model.affinities_ == full.affinities_ == "balanced"
    assert abs(model.P_ - full.P_).max() < 1e-12


def test_refit_job_reports_progress_and_cancels():
    X, g, h, labels = _data()
    base = _small_model().fit(X)
    seen = []
    job = RefitJob(base, X, g, 0.01, every=10)
    job._report_orig = job._report

    def report(it, kl, Y):
        seen.append((it, kl))
        if it >= 20:
            job.cancel()
        return job._report_orig(it, kl, Y)

    job._report = report
    job.start()
    assert job.wait(60)
    assert job.error is None and job.cancelled
    assert [it for it, _ in seen] == [10, 20]
    assert job.model.n_iter_ == 20 < job.total == 100
    assert job.embedding.shape == (150, 2) and np.isfinite(job.kl)


def test_explorer_factor_out_poll_export_and_session_roundtrip(tmp_path):
    s, g, h = _session()
    ex = Explorer(s, _small_model(), tmp_path)  # unfitted: P is computed on first use
    with pytest.raises(ValueError, match="at least one label"):
        ex.factor_out([], 0.01, 0)
    with pytest.raises(ValueError, match="positive"):
        ex.factor_out(["g"], 0.0, 0)
    s.steps[0].selection = np.flatnonzero(h == 1)
    s.steps[0].ranking = s.rank(s.steps[0].selection)
    job = ex.factor_out(["g"], 0.02, 0)
    with pytest.raises(ValueError, match="in progress"):
        ex.factor_out(["g"], 0.02, 0)
    assert job.wait(60)
    k = ex.poll()
    assert k == 1 and ex.poll() is None
    step = s.steps[1]
    assert (step.prior, step.beta, step.parent, step.complete) == (["g"], 0.02, 0, True)
    assert step.n_iter == 100 and np.isfinite(step.kl)

    path = ex.export("csv", 1)
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 150 and rows[3]["id"] == "1003" and rows[3]["g"] == s.labels["g"][3]
    assert float(rows[3]["step1_2"]) == pytest.approx(step.embedding[3, 1], rel=1e-6)
    png = ex.export("png", 1, "g")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = ex.export("json", 1)
    assert json.loads(saved.read_text())["format"] == session_mod.SESSION_FORMAT

    s2, _, _ = _session()
    s2.steps = []
    s2.load_steps(saved)
    assert len(s2.steps) == 2 and s2.steps[1].prior == ["g"] and s2.steps[1].parent == 0
    np.testing.assert_allclose(s2.steps[1].embedding, step.embedding, atol=1e-5)
    assert np.array_equal(s2.steps[0].selection, s.steps[0].selection)
    assert s2.steps[0].ranking.feature_names == s.steps[0].ranking.feature_names
    other = Session(s.X + 1, s.feature_names, s.ids)
    with pytest.raises(ValueError, match="different data"):
        other.load_steps(saved)
    with pytest.raises(ValueError, match="not a ctsne explore session"):
        other.load_steps({"format": "x"})


# ------------------------------------------------------------------ issue 22 items 3, 8, 9
def test_background_maps_are_the_foreground_maps():
    """The first map and a factor-out whose P is not yet built run in job threads (the
    page is served meanwhile; no Bokeh callback builds P); their maps are those of the
    same calls made in the foreground, and the model's callbacks are restored."""
    from ctsne.interfaces.explorer.refit import FirstMapJob

    X, g, h, labels = _data()
    model = _small_model(beta=0.05)
    first = FirstMapJob(model, X, [h], every=20)
    assert first.phase.startswith("neighbours and affinities")
    assert first.start().wait(60) and first.error is None and first.iteration == 100
    direct = _small_model(beta=0.05).fit(X, [h])
    np.testing.assert_array_equal(first.model.embedding_, direct.embedding_)
    assert model.callbacks is None and model.callbacks_every_iters == 50

    unfitted = _small_model()
    job = RefitJob(unfitted, X, g, 0.02)
    assert "affinities" in job.phase  # P is built by the job
    assert job.start().wait(60) and job.error is None
    np.testing.assert_array_equal(
        job.model.embedding_, fit_sharing_affinities(_small_model(), X, g, 0.02).embedding_)
    assert RefitJob(unfitted, X, g, 0.02).phase == "starting"  # now shared: not again


def test_explorer_first_map_in_the_background_and_a_largevis_step():
    """``Explorer.start_first`` adds the first map as step 0 once done; a LargeVis step
    is :class:`ctsne.ConditionalLargeVis` fitted directly (one thread: deterministic);
    its progress counts epochs (live frames through the estimator's callbacks); a
    cancelled graph run stops its SGD and drops its map."""
    from ctsne import ConditionalLargeVis

    X, g, h, labels = _data()
    s = Session(X, ["x0", "x1", "x2", "x3"], np.arange(len(X)), labels)
    ex = Explorer(s, _small_model(n_jobs=1))
    job = ex.start_first(["h"], 0.05)
    with pytest.raises(ValueError, match="first map already"):
        ex.start_first([], 1.0)
    assert job.wait(60) and ex.poll() == 0
    assert s.steps[0].prior == ["h"] and s.steps[0].title == "ct-SNE, prior h, β'=0.05"
    np.testing.assert_array_equal(s.steps[0].embedding,
                                  _small_model(beta=0.05, n_jobs=1).fit(X, [h]).embedding_)

    job = ex.factor_out(["g"], 0.1, 0, method="largevis")
    assert job.unit == "epoch" and job.total == 500  # the default epochs of a small set
    assert job.wait(120) and ex.poll() == 1
    assert job.iteration == 500
    step = s.steps[1]
    assert step.method == "largevis" and step.kl is None and step.complete
    assert step.title.startswith("conditional LargeVis, prior g")
    direct = ConditionalLargeVis(perplexity=10, beta=0.1, random_state=0, n_jobs=1)
    np.testing.assert_allclose(step.embedding, direct.fit(X, [labels["g"]]).embedding_,
                               rtol=1e-7, atol=1e-7)
    restored = Session(X, s.feature_names, s.ids, labels)
    restored.load_steps(s.to_dict())
    assert [st.method for st in restored.steps] == ["tsne", "largevis"]

    ex.factor_out(["g"], 0.1, 1, method="umap")
    ex.cancel()
    assert ex.job.wait(120)
    with pytest.raises(ValueError, match="dropped"):
        ex.poll()
    assert len(s.steps) == 2
    with pytest.raises(ValueError, match="method must be one of"):
        ex.factor_out(["g"], 0.1, 1, method="pca")


def test_legend_levels_in_natural_order():
    """Issue 22, item 8: numbers ascending (2 before 10), numbered levels in natural order
    with DBSCAN's noise last, other text by frequency (not medium/thick/thin), missing
    values last; the codes follow the levels."""
    from ctsne.interfaces.explorer.columns import levels

    text = np.array(["thin"] * 5 + ["thick"] * 2 + ["medium"] * 3 + [None], dtype=object)
    codes, lv = levels(text)
    assert lv == ["thin", "medium", "thick", "(missing)"]
    assert [lv[c] for c in codes] == ["thin"] * 5 + ["thick"] * 2 + ["medium"] * 3 + \
        ["(missing)"]
    assert levels(np.array(["10", "2", "1", "2"], dtype=object))[1] == ["1", "2", "10"]
    assert levels(np.array(["noise", "c10", "c2", "c0", "noise", "noise"], dtype=object))[1] \
        == ["c0", "c2", "c10", "noise"]
    assert levels(np.array([10.0, 2.0, np.nan, 2.0]))[1] == ["2", "10"]


def test_refit_with_a_mode_object_builds_with_the_object_s_own_weight():
    from ctsne.affinities import Balanced

    X, g, h, labels = _data()
    base = _small_model(beta=0.01, affinities=Balanced(within_weight=0.6)).fit(X)
    model = fit_sharing_affinities(base, X, g, beta=0.05)
    # independent route: a full fit with the name and the same weight
    full = _small_model(beta=0.05, affinities="balanced", within_weight=0.6).fit(X, g)
    assert model.affinities_ == full.affinities_ == "balanced"
    assert abs(model.P_ - full.P_).max() < 1e-12
    other = _small_model(beta=0.05, affinities="balanced", within_weight=0.9).fit(X, g)
    assert abs(other.P_ - full.P_).max() > 1e-5  # the weight matters, so the check can fail
