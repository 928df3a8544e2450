"""ctsne explore in a real browser: headless Chromium driven by Selenium.

Opens the page on a small data set, checks the points are drawn with no JavaScript
errors, box-selects through synthetic pointer events, waits for the ranking, factors out,
waits for the second map, and checks that a selection made in one map is the other's.
A screenshot is kept (``tmp_path`` and ``/tmp/ctsne-explore-browser*.png``). A second test
makes two selections in a row and reads the ranking table's rendered rows after each
(screenshot: ``/tmp/ranking_after_second.png``).

Skipped only when Chromium or its driver is missing outside CI (``CI=true`` fails instead:
``.ci/run`` installs Debian's ``chromium`` and ``chromium-driver``).
"""

import os
import shutil
import time

import numpy as np
import pytest

from ctsne import explore

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def _need_browser():
    if CHROMIUM and DRIVER:
        return
    why = "headless browser tests need Debian's chromium and chromium-driver"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why + " (CI=true: they must run)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def driver():
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1600,900", "--enable-unsafe-swiftshader"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=Service(DRIVER))
    d.set_script_timeout(30)
    yield d
    d.quit()


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 6 * g  # three groups along x0: the first map shows them, ranking finds x0
    return X, g


def _wait(d, script, timeout=60.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = d.execute_script(script)
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


_MODEL = "Bokeh.documents[0].get_model_by_name"


def _screen(d, fig: str, points):
    """Viewport pixel positions of data points in figure ``fig``."""
    return d.execute_script(f"""
        const pv = Bokeh.index.find_one({_MODEL}(arguments[0]));
        const r = pv.el.getBoundingClientRect();
        return arguments[1].map(([x, y]) => [r.left + pv.frame.x_scale.compute(x),
                                              r.top + pv.frame.y_scale.compute(y)]);""",
                            fig, [list(map(float, p)) for p in points])


def _box_select(d, fig: str, lo, hi):
    """Pick the box-select tool of ``fig`` and drag a box from data point lo to hi."""
    from selenium.webdriver.common.action_chains import ActionChains

    d.execute_script(f"""const t = {_MODEL}(arguments[0]).toolbar.tools
        .find(t => t.tool_name === 'Box Select'); t.active = true;""", fig)
    (x0, y0), (x1, y1) = _screen(d, fig, [lo, hi])
    chain = ActionChains(d, duration=20)
    pointer = chain.w3c_actions.pointer_action
    pointer.move_to_location(int(x0), int(y0))
    pointer.pointer_down()
    for k in range(1, 6):
        pointer.move_to_location(int(x0 + (x1 - x0) * k / 5), int(y0 + (y1 - y0) * k / 5))
    pointer.pointer_up()
    chain.perform()


def _click(d, name: str):
    """A real pointer click on the button model ``name``."""
    from selenium.webdriver.common.action_chains import ActionChains

    x, y = d.execute_script(f"""
        const v = Bokeh.index.find_one({_MODEL}(arguments[0]));
        const b = v.shadow_el.querySelector('button').getBoundingClientRect();
        return [b.left + b.width / 2, b.top + b.height / 2];""", name)
    chain = ActionChains(d)
    chain.w3c_actions.pointer_action.move_to_location(int(x), int(y)).click()
    chain.perform()


def _inside(Y, lo, hi):
    return set(np.flatnonzero((Y[:, 0] >= lo[0]) & (Y[:, 0] <= hi[0])
                              & (Y[:, 1] >= lo[1]) & (Y[:, 1] <= hi[1])).tolist())


def _coloured_pixels(png: bytes, rect) -> int:
    """Pixels in ``rect`` (left, top, width, height) that are clearly coloured."""
    import io

    import matplotlib.image as mpimg

    img = mpimg.imread(io.BytesIO(png), format="png")[..., :3]
    left, top, w, h = (int(v) for v in rect)
    part = img[top:top + h, left:left + w]
    return int(((part.max(axis=2) - part.min(axis=2)) > 0.25).sum())


def _severe(d) -> list:
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def test_select_rank_factor_out_and_linked_selection(driver, tmp_path):
    d = driver
    X, g = _data()
    Y0 = X[:, [0, 1]]
    handle = explore(X, data={"g": np.array([f"g{v}" for v in g])}, embedding=Y0,
                     out_dir=tmp_path / "out", perplexity=15, n_iter=150,
                     early_exaggeration_iter=60, random_state=0, backend="webgl")
    try:
        d.get(handle.url)
        _wait(d, f"return window.Bokeh && Bokeh.documents.length > 0 && "
              f"Bokeh.index.find_one({_MODEL}('fig_map_b')) != null", 30, "the page")
        time.sleep(1.0)  # the first WebGL frame
        rect = d.execute_script(f"""const r = Bokeh.index.find_one({_MODEL}('fig_map_b'))
            .el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height];""")
        # canvases (Bokeh nests them in shadow roots), with a WebGL context in use
        sizes = d.execute_script(f"""
            const found = [];
            const walk = (root) => root.querySelectorAll('*').forEach(e => {{
                if (e.tagName === 'CANVAS') found.push([e.width, e.height]);
                if (e.shadowRoot) walk(e.shadowRoot); }});
            walk(Bokeh.index.find_one({_MODEL}('fig_map_b')).el.shadowRoot);
            return found;""")
        assert sizes and max(w * h for w, h in sizes) > 100_000
        assert d.execute_script(f"""return Bokeh.index.find_one({_MODEL}('fig_map_b'))
            .canvas_view.webgl != null""")
        shot = d.get_screenshot_as_png()
        assert _coloured_pixels(shot, rect) > 200  # the 240 points in three colours
        assert _severe(d) == []

        # box selection of the right-hand group, through pointer events
        ylo, yhi = Y0[:, 1].min() - 0.2, Y0[:, 1].max() + 0.2  # inside the plot's padding
        lo, hi = (X[g == 2, 0].min() - 0.1, ylo), (Y0[:, 0].max() + 0.2, yhi)
        _box_select(d, "fig_map_b", lo, hi)
        want = _inside(Y0, lo, hi)
        got = _wait(d, f"const i = {_MODEL}('points').selected.indices; "
                    "return i.length ? i : null", 10, "a selection")
        assert set(got) == want and len(want) > 20

        # the ranking fills, with the planted feature first
        feats = _wait(d, f"const f = {_MODEL}('ranking_source').data.feature; "
                      "return f.length ? f : null", 30, "the ranking")
        assert len(feats) == 4 and feats[0] == "x0"
        info = d.execute_script(f"return {_MODEL}('ranking_info').text")
        assert f"<b>{len(want)}</b> of 240" in info and "ROC AUC" in info

        # factor out g with β' 0.01: the new map appears beside the old one
        d.execute_script(f"{_MODEL}('prior').value = ['g'];")
        time.sleep(0.3)
        _click(d, "factor_out")
        _wait(d, f"return {_MODEL}('progress').text.includes('iteration')", 60,
              "live progress")
        _wait(d, f"return {_MODEL}('history').options.length == 2", 120, "the second map")
        assert d.execute_script(f"return {_MODEL}('fig_map_a').visible")
        assert "prior g" in d.execute_script(f"return {_MODEL}('title_b').text")
        Y1 = handle.explorer.session.steps[1].embedding
        assert handle.explorer.session.steps[1].prior == ["g"]

        # linked selection: box-select in the left map (step 0), the right map shows it
        d.execute_script(f"{_MODEL}('points').selected.indices = [];")
        lo2, hi2 = (Y0[:, 0].min() - 0.2, ylo), (X[g == 0, 0].max() + 0.1, yhi)
        time.sleep(0.5)
        _box_select(d, "fig_map_a", lo2, hi2)
        want2 = _inside(Y0, lo2, hi2)
        got_b = _wait(d, f"const i = {_MODEL}('map_b').data_source.selected.indices; "
                      "return i.length ? i : null", 10, "the linked selection")
        assert set(got_b) == want2 and len(want2) > 20
        # and the selected points sit where step 1 put them in the right map
        sel = sorted(want2)
        assert np.all(np.isfinite(Y1[sel]))
        time.sleep(1.0)
        path = tmp_path / "explore.png"
        d.save_screenshot(str(path))
        shutil.copy(path, "/tmp/ctsne-explore-browser.png")
        assert path.stat().st_size > 10_000
        assert _severe(d) == []
    finally:
        handle.stop()


def _rendered_ranking(d) -> list:
    """The ranking table as the browser draws it: the text of the ``feature`` cell of each
    SlickGrid row (``.slick-row`` / ``.slick-cell`` in the shadow root of the DataTable
    named "ranking"), top to bottom. Rows are absolutely positioned, so they are ordered
    by their ``top``, not by their place in the DOM."""
    return d.execute_script(f"""
        const root = Bokeh.index.find_one({_MODEL}('ranking')).shadow_el;
        const heads = [...root.querySelectorAll('.slick-header-column')]
            .map(h => h.textContent.trim());
        const col = heads.indexOf('feature');
        if (col < 0) return null;
        return [...root.querySelectorAll('.slick-row')]
            .map(r => [parseFloat(r.style.top) || 0,
                       r.querySelectorAll('.slick-cell')[col].textContent.trim()])
            .sort((a, b) => a[0] - b[0]).map(r => r[1]);""")


def _check_ranking(d, X, rows, shot=None):
    """Wait for the ranking of ``rows`` and check that the table shows it: its first
    rendered row is the source's first feature, the headline's "top:" and the top of
    ``ctsne.ranking.rank_features`` run directly; every rendered row is the source's.
    ``shot``: a path for a screenshot of the page as checked."""
    import re

    from ctsne.ranking import rank_features

    n = len(rows)
    mask = np.zeros(len(X), dtype=bool)
    mask[sorted(rows)] = True
    top = rank_features(X, mask, [f"x{j}" for j in range(X.shape[1])], cv=3,
                        random_state=0).top
    _wait(d, f"return {_MODEL}('ranking_info').text.includes('<b>{n}</b> of {len(X)}')",
          30, f"the ranking of {n} points")
    feats = d.execute_script(f"return {_MODEL}('ranking_source').data.feature")
    headline = d.execute_script(
        f"return Bokeh.index.find_one({_MODEL}('ranking_info')).shadow_el.textContent")
    m = re.search(r"top: (\S+)", headline)
    assert m and m.group(1) == feats[0] == top, (headline, feats, top)
    # the drawn rows follow the source (give the browser a moment to redraw)
    end = time.monotonic() + 5.0
    shown = None
    while time.monotonic() < end:
        shown = _rendered_ranking(d)
        if shown == list(feats):
            break
        time.sleep(0.1)
    if shot is not None:
        d.save_screenshot(str(shot))
    assert shown == list(feats), f"the table shows {shown}, the ranking is {feats}"
    assert shown[0] == top
    return top


def test_each_selection_redraws_the_ranking_table(driver, tmp_path):
    """Two selections in a row whose rankings differ in their top feature: after each,
    the table's RENDERED rows are the new ranking (issue 22, item 1: a DataTable whose
    source data is replaced by data of the same length was not redrawn)."""
    d = driver
    X, g = _data()
    h = np.random.default_rng(1).integers(0, 2, len(X))
    X[:, 1] += 6 * h  # two groups along x1 as well: a box over the top one ranks x1 first
    Y0 = X[:, [0, 1]]
    handle = explore(X, embedding=Y0, out_dir=tmp_path / "out", perplexity=15, n_iter=150,
                     random_state=0)
    try:
        # the shared browser may still show an earlier test's page, whose server is gone:
        # leave it, and drop what it logged, so that only this page's errors count
        d.get("about:blank")
        d.get_log("browser")
        d.get(handle.url)
        _wait(d, f"return window.Bokeh && Bokeh.documents.length > 0 && "
              f"Bokeh.index.find_one({_MODEL}('fig_map_b')) != null", 30, "the page")
        time.sleep(1.0)
        xlo, xhi = Y0[:, 0].min() - 0.2, Y0[:, 0].max() + 0.2
        ylo, yhi = Y0[:, 1].min() - 0.2, Y0[:, 1].max() + 0.2

        # 1: the right-hand group along x0 (all of y): x0 ranks first
        lo, hi = (X[g == 2, 0].min() - 0.1, ylo), (xhi, yhi)
        want = _inside(Y0, lo, hi)
        _box_select(d, "fig_map_b", lo, hi)
        got = _wait(d, f"const i = {_MODEL}('points').selected.indices; "
                    "return i.length ? i : null", 10, "the first selection")
        assert set(got) == want and len(want) > 20
        first = _check_ranking(d, X, want)
        assert first == "x0"

        # 2: the upper group along x1 (all of x): x1 ranks first, the table must follow
        lo2, hi2 = (xlo, X[h == 1, 1].min() - 0.1), (xhi, yhi)
        want2 = _inside(Y0, lo2, hi2)
        assert len(want2) != len(want)  # the headline tells the two rankings apart
        _box_select(d, "fig_map_b", lo2, hi2)
        _wait(d, f"const i = {_MODEL}('points').selected.indices; "
              f"return i.length == {len(want2)}", 10, "the second selection")
        assert set(d.execute_script(f"return {_MODEL}('points').selected.indices")) == want2
        try:
            second = _check_ranking(d, X, want2, shot=tmp_path / "ranking.png")
        finally:  # kept, failed or not
            if (tmp_path / "ranking.png").exists():
                shutil.copy(tmp_path / "ranking.png", "/tmp/ranking_after_second.png")
        assert second == "x1" != first
        assert _severe(d) == []
    finally:
        handle.stop()


# ------------------------------------------------------------------ issue 22, items 2, 3, 6
def _open(d, url):
    """Load the page (dropping what an earlier page logged) and wait for the maps."""
    d.get("about:blank")
    d.get_log("browser")
    d.get(url)
    _wait(d, f"return window.Bokeh && Bokeh.documents.length > 0 && "
          f"Bokeh.index.find_one({_MODEL}('fig_map_b')) != null", 30, "the page")
    time.sleep(1.0)


def _viewport(d, width, height):
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def _frame(d, fig):
    """[x_start, x_end, y_start, y_end, frame width, frame height] of figure ``fig``."""
    return d.execute_script(f"""const f = {_MODEL}(arguments[0]);
        const v = Bokeh.index.find_one(f);
        return [f.x_range.start, f.x_range.end, f.y_range.start, f.y_range.end,
                v.frame.bbox.width, v.frame.bbox.height];""", fig)


def _drawn(d, x, y):
    """[min x, max x, min y, max y] of the columns ``x``, ``y`` of the points source."""
    return d.execute_script(f"""const s = {_MODEL}('points').data;
        const x = Array.from(s[arguments[0]]), y = Array.from(s[arguments[1]]);
        return [Math.min(...x), Math.max(...x), Math.min(...y), Math.max(...y)];""", x, y)


def _framed(frame, box, fill=0.6):
    """The points' box lies inside the view and fills at least ``fill`` of it along one
    axis (not a speck in a corner, not cut off)."""
    x0, x1, y0, y1 = frame[:4]
    bx0, bx1, by0, by1 = box
    inside = x0 <= bx0 and bx1 <= x1 and y0 <= by0 and by1 <= y1
    return inside and max((bx1 - bx0) / (x1 - x0), (by1 - by0) / (y1 - y0)) >= fill


def _equal_scale(frame, rel=0.02):
    """Data units per pixel are the same along x and y."""
    x0, x1, y0, y1, w, h = frame
    return abs((x1 - x0) / w - (y1 - y0) / h) <= rel * (x1 - x0) / w


def _rects(d, names):
    return d.execute_script(f"""return arguments[0].map(n => {{
        const b = Bokeh.index.find_one({_MODEL}(n)).shadow_el.querySelector('button');
        const r = b.getBoundingClientRect();
        return [r.left, r.top, r.right, r.bottom, b.scrollWidth, b.clientWidth]; }});""",
                            names)


def _click_legend_row(d, k):
    """A real click on row ``k`` of the legend table."""
    from selenium.webdriver.common.action_chains import ActionChains

    x, y = d.execute_script(f"""
        const root = Bokeh.index.find_one({_MODEL}('legend_table')).shadow_el;
        const rows = [...root.querySelectorAll('.slick-row')]
            .sort((a, b) => (parseFloat(a.style.top) || 0) - (parseFloat(b.style.top) || 0));
        const r = rows[arguments[0]].querySelector('.slick-cell').getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2];""", k)
    chain = ActionChains(d)
    chain.w3c_actions.pointer_action.move_to_location(int(x), int(y)).click()
    chain.perform()


def _wheel(d, fig, dy):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin

    x, y, w, h = d.execute_script(f"""const r = Bokeh.index.find_one({_MODEL}(arguments[0]))
        .el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height];""", fig)
    ActionChains(d).scroll_from_origin(
        ScrollOrigin.from_viewport(int(x + w / 2), int(y + h / 2)), 0, dy).perform()


def _controls(d):
    """[name, left, top, right, bottom] of every visible named widget and table of the
    page, and the page's [scrollWidth, clientWidth]."""
    return d.execute_script("""
        const doc = Bokeh.documents[0], out = [];
        for (const m of doc.all_models) {
            if (!m.name || !("visible" in m) || !m.visible) continue;
            if (!["Button", "Select", "MultiChoice", "Spinner", "Checkbox", "DataTable",
                  "Div"].includes(m.type)) continue;
            const v = Bokeh.index.find_one(m);
            if (v == null || v.el == null) continue;
            const r = v.el.getBoundingClientRect();
            if (r.width === 0 && r.height === 0) continue;   // inside a hidden layout
            out.push([m.name, r.left, r.top, r.right, r.bottom]);
        }
        const e = document.documentElement;
        return [out, [e.scrollWidth, e.clientWidth]];""")


def _hover_at(d, fig, point):
    """Move the pointer onto data ``point`` of ``fig``; returns the pointer's viewport
    position and the hover tool's entries then, [[index, [indices hit]], ...]
    (``_current_entries``, kept by BokehJS for tests)."""
    from selenium.webdriver.common.action_chains import ActionChains

    (x, y), = _screen(d, fig, [point])
    x, y = int(round(x)), int(round(y))
    chain = ActionChains(d, duration=20)
    chain.w3c_actions.pointer_action.move_to_location(x + 3, y + 3)
    chain.w3c_actions.pointer_action.move_to_location(x, y)
    chain.perform()
    time.sleep(0.3)
    return (x, y), d.execute_script(f"""
        const v = Bokeh.index.find_one({_MODEL}(arguments[0]));
        const h = [...v.tool_views.values()].find(t => t.model.type === 'HoverTool');
        return h._current_entries.map(e => [e.vars.index, Array.from(e.vars.indices)]);""",
                                    fig)


def test_page_fits_the_window_and_hover_shows_one_point(driver, tmp_path):
    """Issue 22, items 3, 4, 7: at 1280×800 and 1920×1080 the page has no horizontal
    scroll and every control lies inside the window; the export buttons do not overlap
    ("PARQUET" was drawn under "PNG"); no map tool is pushed into the toolbar's overflow
    menu, also under a long title; each map is drawn at equal scale, framed to its own
    points, and wider at 1920 (the maps take the space). Hovering over 25 points stacked
    on one spot shows one tooltip (the nearest point), not 25. Screenshots:
    /tmp/ctsne-explore-1280x800.png, -1920x1080.png."""
    from ctsne.interfaces.explorer.controller import available_exports
    from ctsne.interfaces.explorer.session import Step

    d = driver
    X, g = _data()
    Y0 = X[:, [0, 1]].copy()  # wide: x spans ~20, y ~6
    # a stack of 25 points within a pixel or two: 0 and 20 at its two ends
    Y0[:25] = Y0[25] + np.random.default_rng(5).normal(scale=0.015, size=(25, 2))
    Y0[0], Y0[20] = Y0[25] + [0.05, 0], Y0[25] - [0.05, 0]
    Y1 = np.c_[X[:, 1] * 40 + 500, X[:, 0]]  # another map, elsewhere and much wider
    long = "a_rather_long_label_column_name_that_fills_the_title"
    data = {"g": np.array([f"g{v}" for v in g]), long: np.array([f"v{v % 2}" for v in g])}
    handle = explore(X, data=data, embedding=Y0, out_dir=tmp_path / "out")
    handle.explorer.session.add_step(Step(["g", long], 0.01, Y1, parent=0, complete=False))
    buttons = [f"export_{k}" for k in available_exports()]
    widths = {}
    try:
        for width, height in ((1280, 800), (1920, 1080)):
            _viewport(d, width, height)
            _open(d, handle.url)
            path = f"/tmp/ctsne-explore-{width}x{height}.png"
            d.save_screenshot(path)
            controls, (scroll_w, client_w) = _controls(d)
            assert scroll_w <= client_w, f"horizontal scroll at {width}×{height}"
            names = {c[0] for c in controls}
            assert {"factor_out", "prior", "ranking", "history", "color", "method",
                    "backend", *buttons} <= names, names
            for name, left, top, right, bottom in controls:
                assert left >= 0 and top >= 0 and right <= width + 0.5 \
                    and bottom <= height + 0.5, (name, left, top, right, bottom, width)
            rects = _rects(d, buttons)
            for k in range(len(buttons) - 1):  # left to right, none over the next
                assert rects[k][2] <= rects[k + 1][0], \
                    f"{buttons[k]} overlaps {buttons[k + 1]} at {width}×{height}: {rects}"
            for name, r in zip(buttons, rects, strict=True):
                assert r[4] <= r[5], f"the label of {name} is cut at {width}×{height}"
            title, clipped = d.execute_script(f"""
                const m = {_MODEL}('title_b'), v = Bokeh.index.find_one(m);
                const e = [...v.shadow_el.querySelectorAll('*')].filter(
                    x => x.scrollHeight > x.clientHeight + 1 || x.scrollWidth > x.clientWidth + 1);
                return [m.text, e.length];""")
            assert "(cancelled)" in title and long in title and clipped == 0
            for fig, cols in (("fig_map_a", ("xa", "ya")), ("fig_map_b", ("xb", "yb"))):
                frame = _frame(d, fig)
                assert _equal_scale(frame), (fig, frame)
                assert _framed(frame, _drawn(d, *cols)), (fig, frame)
                assert d.execute_script(f"""
                    const walk = (v, out) => {{ if (v.model.type === 'Toolbar') out.push(v);
                        for (const c of (v.children ? v.children() : [])) walk(c, out);
                        return out; }};
                    const t = walk(Bokeh.index.find_one({_MODEL}(arguments[0])), [])[0];
                    return t._overflow_menu.items.length""", fig) == 0, fig
            widths[width] = _frame(d, "fig_map_b")[4]
            # hover on the stack: one entry, the point nearest the pointer (computed here
            # from the points' screen positions), not the first index hit
            (px, py), entries = _hover_at(d, "fig_map_a", Y0[20])
            assert len(entries) == 1 and len(entries[0][1]) >= 8, entries
            hit = sorted(entries[0][1])
            dist = np.hypot(*(np.array(_screen(d, "fig_map_a", Y0[hit])) - [px, py]).T)
            chosen = dist[hit.index(entries[0][0])]
            # (and the first point hit, which a plain limit of one would show, is farther)
            assert chosen <= dist.min() + 0.05 and dist[0] > dist.min() + 0.3, (entries, dist)
            assert _severe(d) == []
        assert widths[1920] > widths[1280] + 250, widths  # the maps stretch
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        handle.stop()


def test_a_new_map_is_framed_to_its_own_points(driver, tmp_path):
    """Issue 22, item 3: after the user box-selected and zoomed the map, the live frames
    of the next run and the finished map are framed to their own points (they were drawn
    inside the zoomed view of the old map: a speck at the start, cut off at the end; and
    the view spanned the last selection box too), and Reset frames the new map again.
    Screenshots: /tmp/ctsne-explore-live.png, /tmp/ctsne-explore-refit.png."""
    d = driver
    X, g = _data()
    Y0 = X[:, [0, 1]]
    handle = explore(X, data={"g": np.array([f"g{v}" for v in g])}, embedding=Y0,
                     out_dir=tmp_path / "out", perplexity=15, n_iter=1500,
                     early_exaggeration_iter=100, random_state=0, backend="canvas")
    try:
        _open(d, handle.url)
        before = _frame(d, "fig_map_b")
        # a box selection out to the old map's far corner: its overlay must not count
        # in the next map's view (a DataRange1d spans it by default)
        far = (Y0[:, 0].max() + 0.15, Y0[:, 1].max() + 0.15)
        _box_select(d, "fig_map_b", (np.median(Y0[:, 0]), np.median(Y0[:, 1])), far)
        _wait(d, f"return {_MODEL}('points').selected.indices.length > 0", 10, "the box")
        _wheel(d, "fig_map_b", -400)  # zoom in: the view no longer follows the data
        _wait(d, f"return {_MODEL}('fig_map_b').x_range.end < {before[1]}", 10, "the zoom")
        d.execute_script(f"{_MODEL}('prior').value = ['g'];")
        time.sleep(0.3)
        _click(d, "factor_out")
        _wait(d, f"return {_MODEL}('progress').text.includes('iteration')", 60, "live frames")
        # while it runs, the view follows the live map
        end = time.monotonic() + 10
        ok = False
        while not ok and time.monotonic() < end and \
                d.execute_script(f"return {_MODEL}('history').options.length") == 1:
            ok = _framed(_frame(d, "fig_map_b"), _drawn(d, "xb", "yb"))
            time.sleep(0.05)
        d.save_screenshot("/tmp/ctsne-explore-live.png")
        assert ok, "no live frame was framed to its points"
        _wait(d, f"return {_MODEL}('history').options.length == 2", 120, "the new map")
        time.sleep(1.0)
        d.save_screenshot("/tmp/ctsne-explore-refit.png")
        frame = _frame(d, "fig_map_b")
        Y1 = handle.explorer.session.steps[1].embedding
        box = [Y1[:, 0].min(), Y1[:, 0].max(), Y1[:, 1].min(), Y1[:, 1].max()]
        assert _framed(frame, box, fill=0.8) and _equal_scale(frame), (frame, box)
        assert _framed(_frame(d, "fig_map_a"), _drawn(d, "xa", "ya"))
        # zoomed in, then Reset: the new map is framed again, whole and at equal scale
        _wheel(d, "fig_map_b", -400)
        _wait(d, f"return {_MODEL}('fig_map_b').x_range.end < {frame[1]}", 10, "the zoom")
        assert not _framed(_frame(d, "fig_map_b"), box)
        d.execute_script(f"""{_MODEL}('fig_map_b').toolbar.tools
            .find(t => t.type === 'ResetTool').do.emit();""")
        _wait(d, f"return {_MODEL}('fig_map_b').x_range.end >= {frame[1] - 1e-9}", 10,
              "the reset")
        frame = _frame(d, "fig_map_b")
        assert _framed(frame, box, fill=0.8) and _equal_scale(frame), (frame, box)
        assert _severe(d) == []
    finally:
        handle.stop()


def test_cluster_after_a_legend_click_selects_nothing(driver, tmp_path):
    """Issue 22, item 6: a legend row clicked before "Cluster" is not carried over into
    the clustering's legend (the browser then selected that row's cluster unasked)."""
    d = driver
    X, g = _data()
    handle = explore(X, data={"g": np.array([f"g{v}" for v in g])}, embedding=X[:, [0, 1]],
                     out_dir=tmp_path / "out")
    page_rows = lambda: d.execute_script(f"return {_MODEL}('points').selected.indices")  # noqa: E731
    try:
        _open(d, handle.url)
        _click_legend_row(d, 1)
        got = _wait(d, f"const i = {_MODEL}('points').selected.indices; "
                    "return i.length ? i : null", 10, "the legend selection")
        assert set(got) == set(np.flatnonzero(g == 1).tolist())
        d.execute_script(f"{_MODEL}('points').selected.indices = [];")  # clear it
        time.sleep(1.0)
        _click(d, "cluster")
        _wait(d, f"return {_MODEL}('color').value == 'clusters1'", 30, "the clustering")
        time.sleep(2.0)
        d.save_screenshot("/tmp/ctsne-explore-cluster.png")
        assert page_rows() == []
        assert d.execute_script(f"return {_MODEL}('legend').selected.indices") == []
        assert "Select points" in d.execute_script(f"return {_MODEL}('ranking_info').text")
        # with a legend row (cluster c2) still selected, "Cluster" keeps that selection and
        # selects no row of the new legend
        _click_legend_row(d, 2)
        want = np.flatnonzero(handle.explorer.session.labels["clusters1"] == "c2").tolist()
        _wait(d, f"return {_MODEL}('points').selected.indices.length == {len(want)}", 10,
              "the cluster's selection")
        _click(d, "cluster")
        _wait(d, f"return {_MODEL}('color').value == 'clusters2'", 30, "the clustering")
        time.sleep(2.0)
        assert sorted(page_rows()) == want
        assert d.execute_script(f"return {_MODEL}('legend').selected.indices") == []
        assert _severe(d) == []
    finally:
        handle.stop()


def test_label_columns_of_a_table_are_labels_on_the_page(driver, tmp_path, monkeypatch):
    """Issue 22, item 2 (with issue 51's rule): ``ctsne explore --labels digit`` on a
    table with a whole-number ``digit`` and a text ``thickness`` column: neither is a
    feature (ranked, mapped), both are offered as priors, and the page lists features and
    labels. Screenshot: /tmp/ctsne-explore-columns.png."""
    from ctsne.interfaces.cli.main import build_parser
    from ctsne.interfaces.explorer.command import start

    d = driver
    X, g = _data()
    thick = np.array(["thin", "medium", "thick"])[np.arange(len(X)) % 3]
    data = tmp_path / "d.csv"
    data.write_text("x0,x1,x2,x3,digit,thickness\n" + "".join(
        ",".join(f"{v:.5f}" for v in X[i]) + f",{g[i]},{thick[i]}\n" for i in range(len(X))))
    emb = tmp_path / "e.csv"
    emb.write_text("id,ctsne1,ctsne2\n" + "".join(f"{i},{X[i, 0]},{X[i, 1]}\n"
                                              for i in range(len(X))))
    args = build_parser().parse_args(["explore", str(data), "--embedding", str(emb),
                                      "--labels", "digit", "--no-browser", "--out",
                                      str(tmp_path / "out")])
    handle = start(args)
    try:
        _open(d, handle.url)
        text = d.execute_script(
            f"return Bokeh.index.find_one({_MODEL}('columns')).shadow_el.textContent")
        assert "4 features" in text and "labels" in text and "digit" in text, text
        options = d.execute_script(f"return {_MODEL}('prior').options")
        assert {"digit", "thickness", "x0"} <= set(options)
        _click_legend_row(d, 2)  # digit 2: colour is the first label, digit
        feats = _wait(d, f"const f = {_MODEL}('ranking_source').data.feature; "
                      "return f.length ? f : null", 30, "the ranking")
        assert sorted(feats) == ["x0", "x1", "x2", "x3"] and feats[0] == "x0"
        time.sleep(0.5)
        d.save_screenshot("/tmp/ctsne-explore-columns.png")
        assert _rendered_ranking(d) == list(feats)
        assert _severe(d) == []
    finally:
        handle.stop()


# ------------------------------------------------------------------ issue 22, items 3, 8, 9
def test_page_served_while_the_first_map_runs_then_umap_step_and_csv_export(driver, tmp_path):
    """Issue 22, items 3 and 9: the page is served while the first map is computed and
    shows its progress (the affinities phase, then live iterations), then frames the
    finished map to its points. Issue 19: the method box runs a conditional UMAP step,
    the same map as ``ConditionalUMAP`` fitted directly. Item 8: the CSV exported from
    the page downloads in the browser and reopens with ``explore --embedding``, giving
    the map that was shown. Screenshots: /tmp/ctsne-explore-first-map.png,
    /tmp/ctsne-explore-umap.png."""
    import threading

    from ctsne import ConditionalTSNE, ConditionalUMAP
    from ctsne.interfaces.cli.main import build_parser
    from ctsne.interfaces.explorer import serve
    from ctsne.interfaces.explorer.command import start
    from ctsne.interfaces.explorer.session import Session

    gate = threading.Event()

    class Gated(ConditionalTSNE):  # the first map waits until the page has been seen
        def fit(self, X, prior=None):
            assert gate.wait(60)
            return super().fit(X, prior)

    d = driver
    X, g = _data()
    labels = np.array([f"g{v}" for v in g], dtype=object)
    s = Session(X, [f"x{j}" for j in range(4)], np.arange(len(X)), {"g": labels})
    model = Gated(perplexity=15, n_iter=300, early_exaggeration_iter=100, random_state=0,
                  n_jobs=1)
    handle = serve(s, model, out_dir=tmp_path / "out", backend="canvas")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    d.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow",
                                                      "downloadPath": str(downloads)})
    try:
        assert s.steps == []  # serve() returned before the first map
        _open(d, handle.url)
        assert "computing the first map" in d.execute_script(f"return {_MODEL}('title_b').text")
        _wait(d, f"return {_MODEL}('progress').text.includes('affinities')", 10,
              "the first phase")
        assert d.execute_script(f"return {_MODEL}('factor_out').disabled")
        gate.set()
        _wait(d, f"return /iteration [1-9]/.test({_MODEL}('progress').text)", 60,
              "live iterations of the first map")
        _wait(d, f"return {_MODEL}('history').options.length == 1", 60, "the first map")
        time.sleep(1.0)
        d.save_screenshot("/tmp/ctsne-explore-first-map.png")
        Y0 = s.steps[0].embedding
        np.testing.assert_array_equal(Y0, model.embedding_)
        box = [Y0[:, 0].min(), Y0[:, 0].max(), Y0[:, 1].min(), Y0[:, 1].max()]
        assert _framed(_frame(d, "fig_map_b"), box, fill=0.8)
        assert "iteration 400 / 400" in d.execute_script(f"return {_MODEL}('progress').text")

        # a conditional UMAP step, chosen on the page
        d.execute_script(f"{_MODEL}('method').value = 'umap'; {_MODEL}('prior').value = ['g'];")
        _wait(d, f"return {_MODEL}('next_prior').text.includes('conditional UMAP')", 10,
              "the next map's line")
        _click(d, "factor_out")
        _wait(d, f"return {_MODEL}('history').options.length == 2", 120, "the UMAP step")
        time.sleep(1.0)
        d.save_screenshot("/tmp/ctsne-explore-umap.png")
        step = s.steps[1]
        assert step.method == "umap" and step.prior == ["g"] and step.parent == 0
        assert "conditional UMAP" in d.execute_script(f"return {_MODEL}('title_b').text")
        direct = ConditionalUMAP(beta=step.beta, random_state=0, n_jobs=1).fit(X, [labels])
        np.testing.assert_allclose(step.embedding, direct.embedding_, rtol=1e-6, atol=1e-6)

        # the page's CSV: downloaded, and reopened as the first map of a new session
        _click(d, "export_csv")
        end = time.monotonic() + 20
        while time.monotonic() < end and not list(downloads.glob("*.csv")):
            time.sleep(0.1)
        got = list(downloads.glob("*.csv"))
        assert got, "no CSV downloaded"
        data = tmp_path / "data.csv"
        data.write_text("x0,x1,x2,x3,g\n" + "".join(
            ",".join(f"{v:.17g}" for v in X[i]) + f",{labels[i]}\n" for i in range(len(X))))
        args = build_parser().parse_args(["explore", str(data), "--embedding", str(got[0]),
                                          "--no-browser", "--out", str(tmp_path / "o2")])
        again = start(args)
        try:
            np.testing.assert_allclose(again.explorer.session.steps[0].embedding,
                                       step.embedding, rtol=1e-9, atol=1e-9)
        finally:
            again.stop()

        # item 5: the Drawing switch redraws both maps with WebGL, selection kept
        d.execute_script(f"{_MODEL}('points').selected.indices = [1, 2, 3];")
        d.execute_script(f"{_MODEL}('backend').value = 'webgl';")
        _wait(d, f"const f = {_MODEL}('fig_map_b'); return f != null && "
              "f.output_backend == 'webgl' && Bokeh.index.find_one(f) != null && "
              "Bokeh.index.find_one(f).canvas_view.webgl != null", 20, "the WebGL maps")
        assert d.execute_script(f"return {_MODEL}('points').selected.indices") == [1, 2, 3]
        assert "Drawing (WebGL in software)" in d.execute_script(
            f"return {_MODEL}('backend').title")
        assert _severe(d) == []
    finally:
        gate.set()
        handle.stop()

