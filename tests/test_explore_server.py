"""The explore server: the token gate (urllib against the running server), local BokehJS,
and ``ctsne explore`` from the command line."""

import re
import urllib.error
import urllib.request

import numpy as np
import pytest

import ctsne.interfaces.explorer as pkg
from ctsne import explore
from ctsne.interfaces.cli.main import main
from ctsne.interfaces.explorer import command as command_mod


def _get(url, headers=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                    timeout=30) as r:
            return r.status, r.read().decode(), r.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError as exc:
        return exc.code, "", []


@pytest.fixture(scope="module")
def handle(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    Y = rng.normal(size=(60, 2))
    h = explore(X, data={"g": np.repeat(["a", "b"], 30)}, embedding=Y,
                out_dir=tmp_path_factory.mktemp("out"))
    yield h
    h.stop()


def test_every_request_needs_the_token(handle):
    server = handle.server
    base = f"http://127.0.0.1:{server.port}"
    status, page, cookies = _get(handle.url)
    assert status == 200 and "Bokeh" in page
    assert cookies and cookies[0].startswith(f"{server.cookie_name}={server.token};")
    assert "HttpOnly" in cookies[0] and "SameSite=Strict" in cookies[0]
    scripts = re.findall(r'<script[^>]+src="([^"]+)"', page)
    assert scripts and all(s.startswith("/static/") for s in scripts)  # no CDN
    assert "cdn.bokeh.org" not in page
    wrong = "x" * len(server.token)
    for url in (base + "/explore", base + f"/explore?token={wrong}", base + scripts[0],
                base + "/explore/ws", base + "/", base + "/nothing"):
        assert _get(url)[0] == 403, url
    assert _get(base + "/explore", {"Cookie": f"{server.cookie_name}={wrong}"})[0] == 403
    # the page's own requests carry the cookie
    assert _get(base + scripts[0], {"Cookie": f"{server.cookie_name}={server.token}"})[0] == 200
    assert _get(base + "/explore", {"Cookie": f"{server.cookie_name}={server.token}"})[0] == 200


def test_server_listens_on_loopback_only(handle):
    assert handle.url.startswith("http://127.0.0.1:")
    assert handle.server.address == "127.0.0.1"


def test_cli_serves_a_precomputed_map_until_ctrl_c(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(1)
    n = 40
    data = tmp_path / "d.csv"
    data.write_text("name,a,b,grp\n" + "".join(
        f"r{i},{rng.normal():.4f},{rng.normal():.4f},{'xy'[i % 2]}\n" for i in range(n)))
    emb = tmp_path / "e.csv"
    emb.write_text("id,ctsne1,ctsne2\n" + "".join(
        f"r{i},{i},{-i}\n" for i in reversed(range(n))))
    seen = {}

    def stop_now(seconds):
        seen["status"] = _get(seen["url"])[0]
        raise KeyboardInterrupt

    real_serve = pkg.serve

    def spy_serve(*args, **kw):  # command.run imports serve from the package when it runs
        h = real_serve(*args, **kw)
        seen["url"], seen["session"] = h.url, h.explorer.session
        return h

    monkeypatch.setattr(pkg, "serve", spy_serve)
    monkeypatch.setattr(command_mod.time, "sleep", stop_now)
    code = main(["explore", str(data), "--id", "name", "--embedding", str(emb),
                 "--no-browser", "--out", str(tmp_path / "out")])
    assert code == 0 and seen["status"] == 200
    out = capsys.readouterr().out
    assert seen["url"] in out
    s = seen["session"]
    assert s.feature_names == ["a", "b"]  # a text column is a label, not a feature
    assert list(s.labels) == ["grp"]
    # the map was aligned by id: row r5 sits at (5, -5) though the file lists it reversed
    row = list(s.ids).index("r5")
    assert tuple(s.steps[0].embedding[row]) == (5.0, -5.0)


def test_cli_names_a_missing_prior_column_before_serving(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,2\n3,4\n5,7\n")
    assert main(["explore", str(data), "--prior", "nope", "--no-browser"]) == 2
    assert "no column 'nope'" in capsys.readouterr().err


def test_page_logic_without_a_browser(tmp_path):
    """The document's callbacks, driven from Python as the browser's edits would be."""
    import time

    from bokeh.document import Document

    from ctsne import ConditionalTSNE
    from ctsne.interfaces.explorer.app import _Page
    from ctsne.interfaces.explorer.controller import Explorer
    from ctsne.interfaces.explorer.session import Session, Step

    rng = np.random.default_rng(2)
    n = 120
    g = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, 3))
    X[:, 1] += 6 * g
    s = Session(X, ["a", "b", "c"], np.arange(n),
                {"g": np.array([f"g{v}" for v in g], dtype=object), "v": X[:, 0].copy()})
    s.add_step(Step([], 1.0, X[:, [1, 2]]))
    ex = Explorer(s, ConditionalTSNE(method="exact", perplexity=10, n_iter=40,
                                     early_exaggeration_iter=20, random_state=0), tmp_path)
    page = _Page(Document(), ex)
    assert page.color.value == "g" and page.legend_source.data["count"] == [40, 40, 40]
    page.color.value = "v"  # continuous: colour bar over the 1-99 % range, no legend
    lo, hi = np.percentile(X[:, 0], [1, 99])
    assert page.colorbar.visible and page.legend_source.data["level"] == []
    assert (page.mapper.low, page.mapper.high) == pytest.approx((lo, hi), rel=1e-6)
    page.color.value = "g"
    page.legend_source.selected.indices = [2]  # a click on the legend row g2
    assert page.source.selected.indices == list(range(80, 120))
    deadline = time.monotonic() + 30
    while page.rank_future is not None and time.monotonic() < deadline:
        page._poll()
        time.sleep(0.05)
    assert page.rank_source.data["feature"][0] == "b"  # g moved feature b
    page._add_selection()
    assert page.prior.value == ["selection1"]
    page.cluster_param.value = 3
    page._cluster()
    assert page.color.value == "clusters1" and len(page.legend_source.data["level"]) == 3
    page.prior.value = ["g"]
    page._factor_out()
    assert page.go.disabled and not page.stop.disabled
    while page.job is not None and time.monotonic() < deadline + 30:
        page._poll()
        time.sleep(0.05)
    assert len(s.steps) == 2 and page.history.value.startswith("1: ct-SNE, prior g")
    assert page.fig_a.visible and not page.go.disabled
    np.testing.assert_allclose(page.source.data["xb"], s.steps[1].embedding[:, 0], rtol=1e-6)
    np.testing.assert_allclose(page.source.data["xa"], X[:, 1], rtol=1e-6)
    page.history.value = page.history.options[0]  # back to step 0
    assert not page.fig_a.visible and page.prior.value == []
    page._export("svg")
    assert (tmp_path / "step0.svg").read_text().lstrip().startswith("<?xml")


def test_page_draws_a_subsample_but_selects_every_point(tmp_path):
    from types import SimpleNamespace

    from bokeh.document import Document

    from ctsne import ConditionalTSNE
    from ctsne.interfaces.explorer.app import _Page
    from ctsne.interfaces.explorer.controller import Explorer
    from ctsne.interfaces.explorer.session import Session, Step

    rng = np.random.default_rng(3)
    n = 300
    g = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 5 * g
    s = Session(X, ["a", "b", "c"], np.arange(n),
                {"g": np.array([f"g{v}" for v in g], dtype=object)})
    Y = X[:, :2]
    s.add_step(Step([], 1.0, Y))
    page = _Page(Document(), Explorer(s, ConditionalTSNE(), tmp_path), max_points=70)
    shown = page.shown
    assert len(shown) == 70 == len(page.source.data["xb"]) and np.all(np.diff(shown) > 0)
    np.testing.assert_allclose(page.source.data["xb"], Y[shown, 0], rtol=1e-6)
    assert list(page.source.data["id"]) == shown.tolist()
    assert page.legend_source.data["count"] == [100, 100, 100]  # counts over all points

    page.legend_source.selected.indices = [1]
    assert page.selected_rows.tolist() == list(range(100, 200))
    assert page.source.selected.indices == np.flatnonzero((shown >= 100) & (shown < 200)).tolist()

    x0, x1, y0, y1 = 2.0, 8.0, -1.0, 1.5
    by_hand = np.flatnonzero((Y[:, 0] >= x0) & (Y[:, 0] <= x1) & (Y[:, 1] >= y0)
                             & (Y[:, 1] <= y1))
    page._geometry(SimpleNamespace(final=True, geometry={
        "type": "rect", "x0": x1, "x1": x0, "y0": y0, "y1": y1}), "b")
    assert np.array_equal(page.selected_rows, by_hand) and len(by_hand) > 30
    page._geometry(SimpleNamespace(final=True, geometry={
        "type": "poly", "x": [x0, x1, x1, x0], "y": [y0, y0, y1, y1]}), "b")
    assert np.array_equal(page.selected_rows, by_hand)
    assert np.array_equal(s.steps[0].selection, by_hand)
    # the browser's own index update (drawn points only) does not replace it
    page.source.selected.indices = [0, 1]
    assert np.array_equal(page.selected_rows, by_hand)


# ----------------------------------------------------------------- features and labels
def _labelled_csv(path, n=120, seed=0):
    """Two float features, a sparse count (0 on all but two rows: a feature), a balanced
    whole-number ``digit`` column and a text ``thickness`` column (both labels)."""
    rng = np.random.default_rng(seed)
    digit = np.arange(n) % 4
    a = rng.normal(size=n) + 3 * digit
    b = rng.normal(size=n)
    sparse = np.zeros(n, dtype=int)
    sparse[[3, 50]] = [1, 2]
    thick = np.array(["thin", "medium", "thick"])[np.arange(n) % 3]
    path.write_text("a,b,sparse,digit,thickness\n" + "".join(
        f"{a[i]:.4f},{b[i]:.4f},{sparse[i]},{digit[i]},{thick[i]}\n" for i in range(n)))
    return digit


def _serve_cli(monkeypatch, argv):
    """Run ``ctsne explore`` until its server is up; return (code, session, page)."""
    from bokeh.document import Document

    from ctsne.interfaces.explorer.app import _Page

    seen = {}
    real_serve = pkg.serve

    def spy_serve(*args, **kw):
        h = real_serve(*args, **kw)
        seen["handle"] = h
        return h

    def stop_now(seconds):
        raise KeyboardInterrupt

    real_sleep = command_mod.time.sleep  # the time module's: restored for the caller
    monkeypatch.setattr(pkg, "serve", spy_serve)
    monkeypatch.setattr(command_mod.time, "sleep", stop_now)
    try:
        code = main(["explore", *argv, "--no-browser"])
    finally:
        monkeypatch.setattr(command_mod.time, "sleep", real_sleep)
    ex = seen["handle"].explorer
    return code, ex.session, _Page(Document(), ex)


def test_cli_keeps_label_columns_out_of_the_features(tmp_path, monkeypatch, capsys):
    """Issue 22, item 2, as issue 51 item 5 settled it: a text column is a label (offered
    as a prior), a whole-number column stays a feature unless ``--labels`` makes it a
    label (the old rule also took 0/1 pixels and counts for labels); ``--features``
    names the features; stderr says which are which."""
    data = tmp_path / "d.csv"
    _labelled_csv(data)
    emb = tmp_path / "e.csv"
    emb.write_text("id,ctsne1,ctsne2\n" + "".join(f"{i},{i},{-i}\n" for i in range(120)))
    common = [str(data), "--embedding", str(emb), "--out", str(tmp_path / "out")]
    code, s, _ = _serve_cli(monkeypatch, common)
    assert code == 0
    assert s.feature_names == ["a", "b", "sparse", "digit"] and list(s.labels) == ["thickness"]
    err = capsys.readouterr().err
    assert "columns: 4 features (numeric: a, b, sparse, digit)" in err
    assert "thickness (text)" in err and "--labels COL" in err

    code, s, page = _serve_cli(monkeypatch, [*common, "--labels", "digit"])
    assert code == 0
    assert s.feature_names == ["a", "b", "sparse"]
    assert list(s.labels) == ["digit", "thickness"]
    assert "digit (--labels)" in capsys.readouterr().err
    # the page says which columns are which, and any column can be a prior
    text = page.columns_info.text
    assert "3 features" in text and "sparse" in text and "digit" in text and "labels" in text
    assert {"digit", "thickness", "a", "sparse"} <= set(page.prior.options)
    assert page.color.value == "digit"
    # a ranking ranks the features only
    page.legend_source.selected.indices = [3]
    import time

    deadline = time.monotonic() + 30
    while page.rank_future is not None and time.monotonic() < deadline:
        page._poll()
        time.sleep(0.05)
    assert sorted(page.rank_source.data["feature"]) == ["a", "b", "sparse"]
    # a feature chosen as a prior is made a label (binned when continuous)
    assert page.ex.resolve_prior(["a", "digit"]) == ["a", "digit"] and "a" in s.labels

    code, s2, _ = _serve_cli(monkeypatch, [*common, "--features", "a", "b", "digit"])
    assert code == 0 and s2.feature_names == ["a", "b", "digit"]
    assert "named by --features" in capsys.readouterr().err


def test_cli_refuses_input_with_only_label_columns(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("g,h\n" + "".join(f"{'pq'[i % 2]},{'xy'[i % 2]}\n" for i in range(20)))
    assert main(["explore", str(data), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert "no numeric feature column: g, h hold text" in err and "--features" in err


# ----------------------------------------------------------------- stale state (item 6)
def _page3(tmp_path, n=120, n_iter=40):
    """A page on three groups along feature b (labels g; v continuous)."""
    from bokeh.document import Document

    from ctsne import ConditionalTSNE
    from ctsne.interfaces.explorer.app import _Page
    from ctsne.interfaces.explorer.controller import Explorer
    from ctsne.interfaces.explorer.session import Session, Step

    rng = np.random.default_rng(2)
    g = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, 3))
    X[:, 1] += 6 * g
    s = Session(X, ["a", "b", "c"], np.arange(n),
                {"g": np.array([f"g{v}" for v in g], dtype=object)})
    s.add_step(Step([], 1.0, X[:, [1, 2]]))
    ex = Explorer(s, ConditionalTSNE(method="exact", perplexity=10, n_iter=n_iter,
                                     early_exaggeration_iter=20, random_state=0), tmp_path)
    return _Page(Document(), ex), s


def _settle(page, timeout=60.0):
    """Run the page's periodic callback until no ranking or run is pending."""
    import time

    deadline = time.monotonic() + timeout
    def busy():
        return page.rank_future is not None or getattr(page, "job", None) is not None

    while busy() and time.monotonic() < deadline:
        page._poll()
        time.sleep(0.05)
    assert not busy()


PROMPT = "Select points"


def test_ranking_headline_and_table_describe_the_shown_selection(tmp_path):
    """Issue 22, item 6: the headline (and table) never describe a selection that is no
    longer the one shown."""
    from ctsne.interfaces.explorer.session import Step

    page, s = _page3(tmp_path)
    page.legend_source.selected.indices = [2]
    assert "ranking 40 selected points" in page.rank_info.text
    assert page.rank_source.data["feature"] == []  # not the previous ranking meanwhile
    _settle(page)
    assert "<b>40</b> of 120" in page.rank_info.text and page.rank_source.data["feature"]

    page.source.selected.indices = []  # a click on empty space clears the selection
    assert PROMPT in page.rank_info.text and page.rank_source.data["feature"] == []

    # a ranking that finishes after its selection was cleared is not shown
    page.legend_source.selected.indices = [0]
    page.source.selected.indices = []
    _settle(page)
    assert PROMPT in page.rank_info.text and page.rank_source.data["feature"] == []
    assert s.steps[0].ranking is None or len(s.steps[0].selection) == 0

    # a step without a ranking does not show the ranking of the step shown before
    page.legend_source.selected.indices = [2]
    _settle(page)
    assert "<b>40</b> of 120" in page.rank_info.text
    s.add_step(Step(["g"], 0.01, s.steps[0].embedding[:, ::-1].copy(), parent=0))
    page._refresh_options()
    page.history.value = page.history.options[1]
    assert PROMPT in page.rank_info.text and page.rank_source.data["feature"] == []
    page.history.value = page.history.options[0]  # back: its selection and ranking
    assert "<b>40</b> of 120" in page.rank_info.text
    assert page.rank_source.data["feature"][0] == "b"


def test_cluster_selects_nothing_after_a_legend_click(tmp_path):
    """Issue 22, item 6: the legend row clicked before "Cluster" does not stay selected
    in the new legend (the browser then selected that row's cluster)."""
    page, s = _page3(tmp_path)
    page.legend_source.selected.indices = [2]
    _settle(page)
    page.source.selected.indices = []
    assert page.legend_source.selected.indices == []  # the legend follows the map
    page.legend_source.selected.indices = [1]
    _settle(page)
    page.cluster_param.value = 3
    page._cluster()
    assert page.color.value == "clusters1"
    assert page.legend_source.selected.indices == []
    assert page.selected_rows.tolist() == list(range(40, 80))  # the selection is kept
    assert page.rank_future is None
    # clicking the same legend row twice, with the map cleared in between, selects again
    page.legend_source.selected.indices = [0]
    first = page.selected_rows.copy()
    page.source.selected.indices = []
    page.legend_source.selected.indices = [0]
    assert np.array_equal(page.selected_rows, first) and len(first)


def test_prior_box_holds_the_new_columns_of_the_next_map(tmp_path):
    """Issue 22, item 6: the prior box does not silently carry the shown map's columns;
    the page says what the next map factors out (kept prior + new columns), and the
    progress of a run starts from zero (item 3: not the previous run's last line)."""
    page, s = _page3(tmp_path)
    page.prior.value = ["g"]
    page._factor_out()
    _settle(page)
    assert len(s.steps) == 2 and s.steps[1].prior == ["g"]
    done = re.search(r"iteration (\d+) / \1\b", page.progress.text)
    assert done, page.progress.text  # the run's last line: iteration N / N
    # step 1 shown: the box is empty, the kept prior is said
    assert page.prior.value == []
    page.history.value = page.history.options[0]
    assert not page.keep_prior.visible and page.next_prior.text == ""  # t-SNE: none kept
    page.prior.value = ["g"]
    assert "g" in page.next_prior.text
    page.history.value = page.history.options[1]
    assert page.prior.value == []
    assert page.keep_prior.visible and page.keep_prior.active and "g" in page.keep_prior.label
    page.legend_source.selected.indices = [0]
    _settle(page)
    page._add_selection()
    assert page.prior.value == ["selection1"]
    assert "g &amp; selection1" in page.next_prior.text or "g & selection1" in page.next_prior.text
    page._factor_out()
    assert done.group(0) not in page.progress.text  # the previous run's progress is gone
    _settle(page)
    assert s.steps[2].prior == ["g", "selection1"] and s.steps[2].parent == 1
    assert page.prior.value == []
    # without the kept prior: only the box's columns
    page.history.value = page.history.options[1]
    page.keep_prior.active = False
    page.prior.value = ["selection1"]
    assert "g" not in page.next_prior.text.replace("β", "")
    page._factor_out()
    _settle(page)
    assert s.steps[3].prior == ["selection1"] and s.steps[3].parent == 1


# ----------------------------------------------------------------- exports (item 8)
def test_page_exports_reopen_with_explore_embedding(tmp_path, monkeypatch, capsys):
    """Issue 22, item 8: the page's CSV holds the shown step as ctsne1/ctsne2 and reopens
    with ``explore --embedding``; an export of an older page (step columns only) opens
    with its last step; a file without coordinates names what explore reads (there is no
    --coords option in explore). Parquet is offered only with pyarrow."""
    import importlib.util

    from ctsne.interfaces.explorer.controller import available_exports
    from ctsne.interfaces.explorer.session import Step

    data = tmp_path / "d.csv"
    _labelled_csv(data)
    emb = tmp_path / "e.csv"
    emb.write_text("id,ctsne1,ctsne2\n" + "".join(f"{i},{i},{-i}\n" for i in range(120)))
    common = [str(data), "--out", str(tmp_path / "out")]
    code, s, page = _serve_cli(monkeypatch, [*common, "--embedding", str(emb)])
    Y1 = np.random.default_rng(4).normal(size=(120, 2))
    s.add_step(Step(["digit"], 0.05, Y1, parent=0))
    page._refresh_options()
    page.history.value = page.history.options[0]  # step 0 shown: its map is exported
    page._export("csv")
    got = page.download.data
    assert got["name"] == ["embeddings.csv"] and got["type"] == ["text/csv"]
    import base64

    sent = base64.b64decode(got["b64"][0])
    path = tmp_path / "out" / "embeddings.csv"
    assert sent == path.read_bytes()
    header = sent.decode().splitlines()[0].split(",")
    assert header[:3] == ["id", "ctsne1", "ctsne2"] and "step1_1" in header
    code, s2, _ = _serve_cli(monkeypatch, [*common, "--embedding", str(path)])
    assert code == 0
    np.testing.assert_allclose(s2.steps[0].embedding, s.steps[0].embedding, rtol=1e-9)
    # an older page's export: step columns only -> the last step
    old = tmp_path / "old.csv"
    lines = sent.decode().splitlines()
    keep = [k for k, c in enumerate(header) if c not in ("ctsne1", "ctsne2")]
    old.write_text("\n".join(",".join(line.split(",")[k] for k in keep) for line in lines))
    code, s3, _ = _serve_cli(monkeypatch, [*common, "--embedding", str(old)])
    np.testing.assert_allclose(s3.steps[0].embedding, Y1, rtol=1e-9)
    # no coordinates at all
    bad = tmp_path / "bad.csv"
    bad.write_text("id,u,v\n" + "".join(f"{i},{i},{i}\n" for i in range(120)))
    capsys.readouterr()
    assert main(["explore", *common, "--embedding", str(bad), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert "ctsne1, ctsne2" in err and "--coords" not in err

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real(name, *a))
    assert available_exports() == ["csv", "png", "svg", "json"]
    from bokeh.document import Document

    from ctsne.interfaces.explorer.app import _Page

    assert list(_Page(Document(), page.ex).exports) == ["csv", "png", "svg", "json"]


def test_cli_first_map_in_the_background_with_the_chosen_algorithm(tmp_path, capsys):
    """Issue 22, item 9 and issue 19: without --embedding, ``explore`` serves at once and
    computes the first map in the background (here with --algorithm largevis and a
    prior); the page made meanwhile waits for it, then shows it."""
    from bokeh.document import Document

    from ctsne.interfaces.cli.main import build_parser
    from ctsne.interfaces.explorer.app import _Page
    from ctsne.interfaces.explorer.command import start

    data = tmp_path / "d.csv"
    _labelled_csv(data)
    args = build_parser().parse_args(["explore", str(data), "--prior", "thickness",
                                      "--beta", "0.1", "--threads", "1", "--no-browser",
                                      "--out", str(tmp_path / "out")])
    args.algorithm = "largevis"  # what --algorithm largevis sets (the parser: cli/main.py)
    handle = start(args)
    try:
        ex = handle.explorer
        page = _Page(Document(), ex)
        assert page.method.value == "largevis" and page.go.disabled
        assert ex.job is not None and ex.job.wait(120)
        _settle(page)
        step = ex.session.steps[0]
        assert step.method == "largevis" and step.prior == ["thickness"] and step.beta == 0.1
        assert page.history.options == ["0: conditional LargeVis, prior thickness, β'=0.1"]
        assert not page.go.disabled and np.isfinite(step.embedding).all()
    finally:
        handle.stop()


def test_cli_explore_chooses_the_torch_engine_for_its_maps(tmp_path, monkeypatch):
    data = tmp_path / "d.csv"
    data.write_text("a,b\n" + "".join(f"{i % 7},{i % 5}\n" for i in range(30)))
    seen = {}

    def capture(*args, **kw):  # stands in for serving the page: (session, model, …)
        seen["model"] = args[1]
        raise KeyboardInterrupt

    monkeypatch.setattr(pkg, "serve", capture)
    # main reports the interruption as a Ctrl-C would be; the model was made before
    main(["explore", str(data), "--engine", "torch", "--device", "cpu", "--no-browser",
          "--out", str(tmp_path / "out")])
    assert (seen["model"].backend, seen["model"].device) == ("torch", "cpu")


def test_cli_explore_refuses_a_device_without_the_torch_engine(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,2\n3,4\n5,7\n")
    assert main(["explore", str(data), "--device", "cuda", "--no-browser"]) == 2
    assert "--engine torch" in capsys.readouterr().err
