"""The explorer page on laptop and desktop screens with many, long label names (issue 51,
items 8 and 9), in headless Chromium; the browser set-up is test_explore_browser's."""

import time

import numpy as np
import test_explore_browser as browser
from test_explore_browser import _MODEL, _data, _open, _severe, _viewport, _wait

driver = browser.driver  # the browser fixture, shared with test_explore_browser


# ------------------------------------------------------------------ issue 51, items 8, 9
# Whatever a view of the page draws beyond the window, and any text that runs past the
# edge of its side panel (hidden there) or of the window. Table cells cut their text on
# purpose (the cell's tooltip holds it), so only a table's box is checked.
_SPILL = """
const W = document.documentElement.clientWidth;
const box = n => { const m = Bokeh.documents[0].get_model_by_name(n);
                   const v = m && Bokeh.index.find_one(m);
                   return v ? v.el.getBoundingClientRect() : null; };
const panels = ["left_panel", "right_panel"].map(box).filter(r => r);
const out = [];
for (const m of Bokeh.documents[0].all_models) {
  const v = Bokeh.index.find_one(m);
  if (!v || !v.el) continue;
  const r = v.el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) continue;
  if (r.right > W + 0.5 || r.left < -0.5)
    out.push(["outside the window", m.type, m.name, r.left, r.right]);
  if (m.type === "DataTable") continue;
  const panel = panels.find(p => r.left >= p.left - 1 && r.left < p.right
                                 && r.top >= p.top - 1 && r.top < p.bottom);
  const edge = Math.min(W, panel ? panel.right : W);
  for (const root of [v.el, v.shadow_el].filter(x => x)) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let t;
    while ((t = walk.nextNode())) {
      if (!t.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(t);
      for (const q of range.getClientRects())
        if (q.width > 0 && q.right > edge + 1) {
          out.push(["text past the edge", m.type, m.name, t.textContent.slice(0, 40),
                    q.right, edge]);
          break;
        }
    }
  }
}
const e = document.documentElement;
return [out, [e.scrollWidth, e.clientWidth]];"""


def _ranges_warnings(d) -> int:
    return sum("could not set initial ranges" in e["message"] for e in d.get_log("browser"))


def test_page_fits_with_many_long_label_names(driver, tmp_path):
    """Issue 51, item 9: with a whole-number ``digit``, a text ``thickness`` and 25 label
    columns with long names and long values, a long prior, marker and colour, and a
    ranking of long feature names, the page at 1280×800 and 1920×1080 has no horizontal
    scroll, no view beyond the window and no text running past its panel (the "keep the
    prior" line, the next prior, the ranking's headline and the marker legend did).
    Item 8: a page with one map (the other hidden) logs no "could not set initial ranges"
    (the hidden map did, at every change of the points). Screenshots:
    /tmp/ctsne-explore-long-labels-1280x800.png, -1920x1080.png."""
    from ctsne.interfaces.cli.main import build_parser
    from ctsne.interfaces.explorer.command import start
    from ctsne.interfaces.explorer.session import Step

    d = driver
    X, g = _data(n=300)
    rng = np.random.default_rng(1)
    long = [f"an_extraordinarily_long_label_column_name_{k:02d}_describing_the_cohort"
            for k in range(25)]
    feats = [f"a_feature_with_a_very_long_name_measuring_something_{j}" for j in range(4)]
    values = [np.array([f"level_{v}_with_a_rather_long_value_text_for_this_row"
                        for v in (g if k == 0 else rng.integers(0, 4, len(X)))])
              for k in range(len(long))]
    thick = np.array(["thin", "medium", "thick"])[np.arange(len(X)) % 3]
    data = tmp_path / "d.csv"
    data.write_text(",".join([*feats, "digit", "thickness", *long]) + "\n" + "".join(
        ",".join([*(f"{v:.5f}" for v in X[i]), str(g[i]), thick[i], *(c[i] for c in values)])
        + "\n" for i in range(len(X))))
    emb = tmp_path / "e.csv"
    emb.write_text("id,ctsne1,ctsne2\n" + "".join(f"{i},{X[i, 0]},{X[i, 1]}\n"
                                              for i in range(len(X))))
    handle = start(build_parser().parse_args(
        ["explore", str(data), "--embedding", str(emb), "--labels", "digit", "--no-browser",
         "--out", str(tmp_path / "out")]))
    try:
        # one map: the left one hidden, the points changed several times
        _viewport(d, 1280, 800)
        _open(d, handle.url)
        for name in (long[1], "thickness", long[0]):
            d.execute_script(f"{_MODEL}('color').value = arguments[0];", name)
            time.sleep(0.5)
        d.execute_script(f"{_MODEL}('points').selected.indices = [1, 2, 3];")
        time.sleep(1.0)
        assert _ranges_warnings(d) == 0
        # two maps, the right one factoring out two long columns
        handle.explorer.session.add_step(Step([long[0], long[1]], 0.01, X[:, [1, 2]] * 3,
                                              parent=0))
        for width, height in ((1280, 800), (1920, 1080)):
            _viewport(d, width, height)
            _open(d, handle.url)
            d.execute_script(f"{_MODEL}('marker').value = arguments[0];"
                             f"{_MODEL}('color').value = arguments[1];", long[0], long[1])
            d.execute_script(f"{_MODEL}('points').selected.indices = [...Array(60).keys()];")
            _wait(d, f"return {_MODEL}('ranking_info').text.includes('<b>60</b>')", 30,
                  "the ranking")
            time.sleep(1.0)
            d.save_screenshot(f"/tmp/ctsne-explore-long-labels-{width}x{height}.png")
            spill, (scroll_w, client_w) = d.execute_script(_SPILL)
            assert scroll_w <= client_w, f"horizontal scroll at {width}×{height}"
            assert spill == [], (width, height, spill)
            assert d.execute_script(f"return {_MODEL}('keep_prior').visible")
            assert _ranges_warnings(d) == 0
            assert _severe(d) == []
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        handle.stop()
