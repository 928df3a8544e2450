"""The explorer page's layout and its guard against what a page may send (issue 59, items 8
and 15): square maps that use the width, a legend of a few types without scrolling, a
help panel over the page, the view kept across a reload, values the page never offered
refused with a status line, and a capped websocket message.

The Python tests drive the document's callbacks directly; the browser tests use the
headless Chromium of test_explore_browser (skipped without it, as there). Screenshots:
/tmp/explorer_shots/explorer-1280x800.png, -1920x1080.png and their -help variants.
"""

import asyncio
import html
import os
import re
import time
import urllib.request

import numpy as np
import pytest
import test_explore_browser as browser
from test_explore_browser import _MODEL, _click, _frame, _open, _severe, _viewport, _wait

from ctsne import ConditionalTSNE, explore
from ctsne.interfaces.explorer.columns import LEGEND_ROWS, choice_options, legend_height
from ctsne.interfaces.explorer.controller import Explorer
from ctsne.interfaces.explorer.inputs import requested_view
from ctsne.interfaces.explorer.server import MESSAGE_FLOOR, message_cap
from ctsne.interfaces.explorer.session import Session, Step

driver = browser.driver  # the browser fixture, shared with test_explore_browser
SHOTS = "/tmp/explorer_shots"
TYPES = ["B cells", "CD4 T", "CD8 T", "NK", "Monocytes", "Dendritic", "Platelets"]


def _cells(n=700, seed=0):
    """Seven cell types along x0 and two batches; step 1 (parent 0) has its own map."""
    rng = np.random.default_rng(seed)
    t = rng.integers(0, len(TYPES), n)
    X = rng.normal(size=(n, 5))
    X[:, 0] += 5 * t
    data = {"cell_type": np.array(TYPES)[t],
            "batch": np.array(["b1", "b2"])[rng.integers(0, 2, n)]}
    return X, data


def _page(tmp_path, view=None, **kw):
    """A page (no server) on a session of two steps; step 1 is shown."""
    from bokeh.document import Document

    from ctsne.interfaces.explorer.app import _Page

    X, data = _cells(120)
    labels = {k: v.astype(object) for k, v in data.items()}
    s = Session(X, [f"x{j}" for j in range(5)], np.arange(len(X)), labels)
    s.add_step(Step([], 1.0, X[:, [0, 1]]))
    s.add_step(Step(["batch"], 0.01, X[:, [1, 0]], parent=0))
    return _Page(Document(), Explorer(s, ConditionalTSNE(), tmp_path), view=view, **kw)


# ------------------------------------------------------------------ without a browser
def test_crafted_widget_values_are_refused_with_a_status_line(tmp_path):
    """Item 15: values the page never offers, set as a crafted websocket message would
    set them, raise nothing: the status line says "refused" and the widget gets its last
    good value back; the page goes on working."""
    page = _page(tmp_path)
    good = page.history.value
    assert good.startswith("1: ")
    crafted = [(page.history, "value", "999: x"), (page.history, "value", "-1: x"),
               (page.history, "value", "1: not the title"), (page.history, "value", ""),
               (page.color, "value", "nope"), (page.marker, "value", "nope"),
               (page.hover_cols, "value", ["cell_type", "nope"]),
               (page.backend, "value", "svg"), (page.method, "value", "pca"),
               (page.prior, "value", ["nope"]), (page.beta, "value", -1.0),
               (page.beta, "value", None), (page.cluster_method, "value", "nope"),
               (page.cluster_param, "value", None),
               (page.legend_source.selected, "indices", [99]),
               (page.source.selected, "indices", [-1]),
               (page.source.selected, "indices", [0, 10 ** 6])]
    for widget, prop, value in crafted:
        before = getattr(widget, prop)
        page.status.text = ""
        setattr(widget, prop, value)  # runs the page's callbacks, as a message would
        assert "refused" in page.status.text, (prop, value, page.status.text)
        assert getattr(widget, prop) == before, (prop, value)
    assert page.step_b == 1 and page.history.value == good
    assert page.color.value == "cell_type" and page.selected_rows.size == 0
    # and the page still works: a good value after the refusals
    page.color.value = "batch"
    assert sorted(page.legend_source.data["level"]) == ["b1", "b2"]
    # a box outline that is not one: refused too (on a subsample, where outlines count)
    from types import SimpleNamespace

    page = _page(tmp_path, max_points=60)
    for geometry in ({"type": "rect", "x0": "a", "x1": None}, {"type": "poly", "x": [1]},
                     {"type": "poly", "x": [0, 1, 1], "y": [0, 1]}):
        page.status.text = ""
        page._guarded(page._geometry, SimpleNamespace(final=True, geometry=geometry), "b")
        assert "refused" in page.status.text, geometry


def test_history_back_says_which_step_is_shown(tmp_path):
    """Item 8: going back in History, the status line names the step now shown (it still
    named the run that made the later step); the first step shows alone."""
    page = _page(tmp_path)
    page._say("step 1 done in 3.0 s: ct-SNE, prior batch, β'=0.01")
    page.history.value = page.history.options[0]
    assert page.step_b == 0 and not page.fig_a.visible
    assert "showing step 0: t-SNE" in page.status.text and "step 1" not in page.status.text
    page.history.value = page.history.options[1]
    assert "showing step 1: " in page.status.text and "its parent: step 0" in page.status.text


def test_help_names_only_the_exports_the_page_has(tmp_path, monkeypatch):
    """Item 8: without pyarrow there is no Parquet button, and the help names none."""
    from ctsne.interfaces.explorer import app

    monkeypatch.setattr(app, "available_exports", lambda: ["csv", "png", "svg", "json"])
    page = _page(tmp_path)
    assert "export_parquet" not in {b.name for b in page.exports.values()}
    assert "Parquet" not in page.help.text and "CSV" in page.help.text
    monkeypatch.setattr(app, "available_exports",
                        lambda: ["csv", "parquet", "png", "svg", "json"])
    assert "Parquet" in _page(tmp_path).help.text


def test_the_address_gives_the_view_of_a_new_page(tmp_path):
    """Item 8: a reload opens the colour, marker and step of the address's query (the
    page writes them there); what the session lacks is said, not applied."""
    from types import SimpleNamespace

    request = SimpleNamespace(arguments={"color": [b"batch"], "step": [b"0"],
                                         "token": [b"secret"]})
    doc = SimpleNamespace(session_context=SimpleNamespace(request=request))
    assert requested_view(doc) == {"color": "batch", "step": "0"}
    assert requested_view(SimpleNamespace(session_context=None)) == {}
    page = _page(tmp_path, view={"color": "batch", "marker": "batch", "step": "0"})
    assert page.color.value == "batch" and page.marker.value == "batch"
    assert page.step_b == 0 and page.history.value.startswith("0: ")
    assert sorted(page.legend_source.data["level"]) == ["b1", "b2"]
    page = _page(tmp_path, view={"color": "nope", "step": "-1"})
    assert page.color.value == "cell_type" and page.step_b == 1
    said = html.unescape(page.status.text)
    assert "'nope'" in said and "'-1'" in said


def test_legend_height_and_escaped_choice_labels(tmp_path):
    """A legend of up to LEGEND_ROWS levels is as tall as its rows; names with markup
    reach the MultiChoice lists (which write labels as HTML) escaped."""
    page = _page(tmp_path)
    assert page.legend.height == legend_height(7) > legend_height(6)
    assert legend_height(LEGEND_ROWS + 5) == legend_height(LEGEND_ROWS)
    assert choice_options(["g", "<i>x</i>"]) == ["g", ("<i>x</i>", "&lt;i&gt;x&lt;/i&gt;")]
    assert page.legend.reorderable is False and page.rank_table.reorderable is False


def test_websocket_messages_are_capped(tmp_path):
    """Item 15: the server reads websocket messages up to ``message_cap(max_points)``
    (it read up to 1 GiB): a valid request padded to just under the cap is answered, the
    same just over it closes the connection unanswered (Tornado's "message too big")."""
    import json

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import WebSocketClosedError, websocket_connect

    assert message_cap(200_000) == MESSAGE_FLOOR < 1 << 30
    assert message_cap(5_000_000) > 16 * 5_000_000
    rng = np.random.default_rng(0)
    h = explore(rng.normal(size=(30, 3)), embedding=rng.normal(size=(30, 2)),
                out_dir=tmp_path / "out")
    server = h.server
    assert server.max_message_size == MESSAGE_FLOOR
    assert server._server._tornado.settings["websocket_max_message_size"] == MESSAGE_FLOOR

    async def pull(size):
        """Bokeh's PULL-DOC-REQ, its metadata frame padded to ``size`` bytes: (answered,
        closed)."""
        with urllib.request.urlopen(h.url, timeout=30) as r:
            session_token = re.search(r'"token":"([^"]+)"', r.read().decode()).group(1)
        ws = await websocket_connect(HTTPRequest(
            f"ws://127.0.0.1:{server.port}/explore/ws",
            headers={"Cookie": f"{server.cookie_name}={server.token}",
                     "Origin": f"http://127.0.0.1:{server.port}"}),
            subprotocols=["bokeh", session_token])
        for _ in range(3):  # the server's ACK (header, metadata, content): it is ready
            assert await asyncio.wait_for(ws.read_message(), 10) is not None
        try:
            for frame in (json.dumps({"msgid": "t1", "msgtype": "PULL-DOC-REQ"}),
                          json.dumps({"pad": "x" * (size - 11)}), "{}"):
                await ws.write_message(frame)
        except WebSocketClosedError:
            pass
        answered = False
        while True:
            try:
                message = await asyncio.wait_for(ws.read_message(), 5)
            except asyncio.TimeoutError:
                ws.close()
                return answered, False
            if message is None:
                return answered, True
            answered = answered or "PULL-DOC-REPLY" in str(message)
            if answered:
                ws.close()
                return answered, False

    try:
        assert asyncio.run(pull(MESSAGE_FLOOR - 100)) == (True, False)
        assert asyncio.run(pull(MESSAGE_FLOOR + 1)) == (False, True)
    finally:
        h.stop()


# ------------------------------------------------------------------ in a browser
def _rect(d, name):
    return d.execute_script(f"""const v = Bokeh.index.find_one({_MODEL}(arguments[0]));
        const r = v.el.getBoundingClientRect();
        return [r.left, r.top, r.width, r.height];""", name)


_LEGEND = f"""
const root = Bokeh.index.find_one({_MODEL}('legend_table')).shadow_el;
const vp = root.querySelector('.slick-viewport');
const box = vp.getBoundingClientRect();
const rows = [...root.querySelectorAll('.slick-row')].map(r => r.getBoundingClientRect())
    .filter(r => r.height > 0);
return [rows.length, vp.scrollHeight, vp.clientHeight, box.bottom,
        Math.max(...rows.map(r => r.bottom))];"""


def test_two_square_maps_a_whole_legend_and_help_over_the_page(driver, tmp_path):
    """Item 8: at 1280×800 and 1920×1080, with two maps, each map is square and takes
    its half of the centre column's width (350×643 px before); a 7-type legend shows
    every row without a scroll bar; the help opens over the page, so the Cluster button
    stays where it was, inside the window; the help names Parquet only with its button;
    the console has no "jquery-ui is required" warning; a column name with markup shows
    as text in the Hover list. Screenshots under /tmp/explorer_shots/."""
    d = driver
    os.makedirs(SHOTS, exist_ok=True)
    X, data = _cells()
    data["<i>tag</i>"] = data["batch"]
    handle = explore(X, data=data, embedding=X[:, [0, 1]], out_dir=tmp_path / "out")
    handle.explorer.session.add_step(Step(["batch"], 0.01, np.c_[X[:, 1], X[:, 0]],
                                          parent=0))
    try:
        for width, height in ((1280, 800), (1920, 1080)):
            _viewport(d, width, height)
            _open(d, handle.url)
            d.save_screenshot(f"{SHOTS}/explorer-{width}x{height}.png")
            logs = d.get_log("browser")
            centre = _rect(d, "centre")
            for fig in ("fig_map_a", "fig_map_b"):
                fw, fh = _frame(d, fig)[4:]
                left, top, w, h = _rect(d, fig)
                assert abs(fw - fh) <= 0.03 * fw, (width, fig, fw, fh)
                assert w >= 0.47 * centre[2], (width, fig, w, centre)  # its half
                assert top + h <= height, (width, fig, top, h)
            n_rows, scroll_h, client_h, bottom, last = d.execute_script(_LEGEND)
            assert n_rows == len(TYPES) and scroll_h <= client_h + 1, (width, n_rows)
            assert last <= bottom + 1 and bottom <= height, (width, last, bottom)
            assert d.execute_script(f"return {_MODEL}('legend').data.level.length") == 7
            cluster = _rect(d, "cluster")
            # the help, opened by a click on its summary line
            from selenium.webdriver.common.action_chains import ActionChains

            x, y = d.execute_script(f"""const s = Bokeh.index.find_one({_MODEL}('help'))
                .shadow_el.querySelector('summary').getBoundingClientRect();
                return [s.left + 10, s.top + s.height / 2];""")
            chain = ActionChains(d)
            chain.w3c_actions.pointer_action.move_to_location(int(x), int(y)).click()
            chain.perform()
            time.sleep(0.5)
            panel = d.execute_script(f"""const e = Bokeh.index.find_one({_MODEL}('help'))
                .shadow_el.querySelector('details');
                const r = e.querySelector('div').getBoundingClientRect();
                return [e.open, r.height, e.textContent];""")
            assert panel[0] and panel[1] > 100
            d.save_screenshot(f"{SHOTS}/explorer-{width}x{height}-help.png")
            assert _rect(d, "cluster") == cluster and cluster[1] + cluster[3] <= height
            has_parquet = d.execute_script(f"return {_MODEL}('export_parquet') != null")
            assert ("Parquet" in panel[2]) == has_parquet
            # the markup in a column name is text in the Hover list, not markup
            tags = d.execute_script(f"""const r = Bokeh.index.find_one(
                {_MODEL}('hover_columns')).shadow_el;
                return [r.querySelectorAll('i').length, r.textContent]""")
            assert tags[0] == 0 and "<i>tag</i>" in tags[1]
            logs += d.get_log("browser")
            assert not [e for e in logs if "jquery-ui" in e["message"]]
            assert [e for e in logs if e["level"] == "SEVERE"] == []
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        handle.stop()


def test_reload_keeps_the_view_and_crafted_values_are_refused(driver, tmp_path):
    """Item 8: after going back in History the status line names that step; the colour,
    marker and step shown survive a reload (kept in the address). Item 15: crafted
    values set in the browser are refused there too, with the last good value back."""
    d = driver
    X, data = _cells(240)
    handle = explore(X, data=data, embedding=X[:, [0, 1]], out_dir=tmp_path / "out")
    handle.explorer.session.add_step(Step(["batch"], 0.01, X[:, [1, 0]], parent=0))
    try:
        _open(d, handle.url)
        assert d.execute_script(f"return {_MODEL}('color').value") == "cell_type"
        d.execute_script(f"{_MODEL}('color').value = 'batch';"
                         f"{_MODEL}('marker').value = 'batch';")
        d.execute_script(f"const h = {_MODEL}('history'); h.value = h.options[0];")
        _wait(d, f"return {_MODEL}('status').text.includes('showing step 0')", 10,
              "the status line")
        assert "color=batch" in d.current_url and "step=0" in d.current_url
        d.refresh()
        _wait(d, f"return window.Bokeh && Bokeh.documents.length > 0 && "
              f"{_MODEL}('color') != null", 30, "the reloaded page")
        assert d.execute_script(f"return {_MODEL}('color').value") == "batch"
        assert d.execute_script(f"return {_MODEL}('marker').value") == "batch"
        assert d.execute_script(f"return {_MODEL}('history').value").startswith("0: ")
        assert d.execute_script(f"const f = {_MODEL}('fig_map_a'); "
                                "return f == null || !f.visible")  # step 0 has no parent
        # crafted values, set in the browser: refused, the last good value back there
        for widget, value, good in (("history", "999: x", None), ("history", "-1: x", None),
                                    ("color", "nope", "batch")):
            d.execute_script(f"{_MODEL}('status').text = '';"
                             f"{_MODEL}(arguments[0]).value = arguments[1];", widget, value)
            _wait(d, f"return {_MODEL}('status').text.includes('refused')", 10,
                  f"the refusal of {value!r}")
            now, end = value, time.monotonic() + 10
            while time.monotonic() < end:
                now = d.execute_script(f"return {_MODEL}(arguments[0]).value", widget)
                if now != value:
                    break
                time.sleep(0.1)
            assert now == (good or d.execute_script(
                f"return {_MODEL}('history').options[0]")), (widget, value, now)
        _click(d, "factor_out")  # the page still answers: the prior box is empty
        _wait(d, f"return {_MODEL}('status').text.includes('factor out')", 10,
              "the page's answer")
        assert _severe(d) == []
    finally:
        handle.stop()


@pytest.mark.parametrize("value", ["999: x", "-1: x"])
def test_history_value_that_is_no_step_is_refused(tmp_path, value):
    page = _page(tmp_path)
    page.history.value = value
    assert page.step_b == 1 and "no step" in page.status.text
