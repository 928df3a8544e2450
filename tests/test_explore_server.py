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
    assert s.feature_names == ["a", "b", "grp=x", "grp=y"]
    assert list(s.labels) == ["grp"]  # a one-hot encoded text column stays a label
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
