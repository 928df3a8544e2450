"""The explore page in headless Chromium: time to first paint and frame time while panning.

    flock /tmp/ctsne-bench.lock python benchmarks/bench_explore.py            # 100k and 1M
    python benchmarks/bench_explore.py --n 100000 --repeats 3

A precomputed clustered map is served (``embedding=``: no fit), coloured by a 20-level
label. "First paint" runs from the navigation to the first animation frame after the
Bokeh document is idle (every model built and drawn once), server-side document creation
and the transfer of the columns included. Above ``--max-points`` (default 200,000, as in
``explore``) the page draws a random subsample. "Panning" drags the map with the pan tool
through 30 pointer moves, 16 ms apart, while an in-page requestAnimationFrame loop records
frame times, for WebGL and the 2-D canvas, with Bokeh's level of detail on (its default:
above 2,000 points every 10th point is drawn while interacting) or off. "Hover" moves the
pointer onto a point inside a blob and times until the hover tool has its tooltip (one
entry: the nearest point), with how many points were under the pointer. Headless Chromium
renders WebGL in software (SwiftShader) here; a desktop GPU is faster. Appends JSON lines
to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODEL = "Bokeh.documents[0].get_model_by_name"


def clustered_map(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    centres = rng.normal(size=(20, 2)) * 30
    label = rng.integers(0, 20, n)
    return centres[label] + rng.normal(size=(n, 2)) * 3, label


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1600,900", "--enable-unsafe-swiftshader"):
        opts.add_argument(arg)
    d = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    d.set_script_timeout(300)
    d.set_page_load_timeout(300)
    return d


def first_paint(d, url: str) -> float:
    t0 = time.perf_counter()
    d.get(url)
    while not d.execute_script(f"return !!(window.Bokeh && Bokeh.documents.length && "
                               f"Bokeh.documents[0].is_idle && "
                               f"Bokeh.index.find_one({MODEL}('fig_map_b')))"):
        time.sleep(0.02)
    d.execute_async_script("const done = arguments[0]; "
                           "requestAnimationFrame(() => requestAnimationFrame(done));")
    return time.perf_counter() - t0


def pan_frames(d, moves: int = 60) -> tuple[np.ndarray, float]:
    """Frame intervals (ms) while dragging the right-hand map, and how far its x range
    moved (a check that the drag panned)."""
    from selenium.webdriver.common.action_chains import ActionChains

    x_start = f"return {MODEL}('fig_map_b').x_range.start"
    before = d.execute_script(x_start)
    d.execute_script("""window.__t = []; window.__rec = true;
        const f = (t) => { window.__t.push(t); if (window.__rec) requestAnimationFrame(f); };
        requestAnimationFrame(f);""")
    x, y = d.execute_script(f"""const r = Bokeh.index.find_one({MODEL}('fig_map_b'))
        .el.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2];""")
    # two moves per command: the pointer stays pressed between them, and no one command
    # outlasts the driver's timeout when frames take seconds
    for k0 in range(0, moves, 2):
        chain = ActionChains(d, duration=16)
        p = chain.w3c_actions.pointer_action
        if k0 == 0:
            p.move_to_location(int(x), int(y))
            p.pointer_down()
        for k in range(k0, min(k0 + 2, moves)):
            p.move_to_location(int(x + 150 * np.sin(k / 8)), int(y + 100 * np.cos(k / 11)))
        if k0 + 2 >= moves:
            p.pointer_up()
        chain.perform()
    t = d.execute_script("window.__rec = false; return window.__t;")
    return np.diff(np.asarray(t, dtype=float)), abs(d.execute_script(x_start) - before)


def hover(d) -> tuple[float, int, int]:
    """Milliseconds from a pointer move onto the first point of the right-hand map (inside
    one of the blobs) until
    the hover tool has its tooltip entries; how many entries (one: the nearest point) and
    how many points the pointer hit."""
    from selenium.webdriver.common.action_chains import ActionChains

    x, y = d.execute_script(f"""const v = Bokeh.index.find_one({MODEL}('fig_map_b'));
        const s = {MODEL}('points').data, r = v.el.getBoundingClientRect();
        return [r.left + v.frame.x_scale.compute(s.xb[0]),
                r.top + v.frame.y_scale.compute(s.yb[0])];""")
    view = (f"[...Bokeh.index.find_one({MODEL}('fig_map_b')).tool_views.values()]"
            ".find(t => t.model.type === 'HoverTool')")
    ActionChains(d).move_by_offset(0, 0).perform()
    d.execute_script(f"{view}._current_entries = [];")
    t0 = time.perf_counter()
    chain = ActionChains(d)
    chain.w3c_actions.pointer_action.move_to_location(int(x), int(y))
    chain.perform()
    while not d.execute_script(f"return {view}._current_entries.length > 0"):
        if time.perf_counter() - t0 > 60:
            return float("nan"), 0, 0
        time.sleep(0.005)
    ms = 1000 * (time.perf_counter() - t0)
    entries, hit = d.execute_script(f"const e = {view}._current_entries; "
                                    "return [e.length, e.length ? e[0].vars.indices.length : 0]")
    return ms, int(entries), int(hit)


def run(n: int, repeats: int, backend: str, lod: bool, moves: int, max_points: int) -> dict:
    from ctsne import explore

    rng = np.random.default_rng(0)
    Y, label = clustered_map(n, rng)
    X = np.c_[Y, rng.normal(size=(n, 3))]
    t0 = time.perf_counter()
    handle = explore(X, data={"cluster": np.array([f"c{v}" for v in label])}, embedding=Y,
                     out_dir="/tmp/ctsne-bench-explore", backend=backend,
                     max_points=max_points)
    start_s = time.perf_counter() - t0
    paints, frames, moved, hovers = [], [], [], []
    try:
        for _ in range(repeats):
            d = browser()
            try:
                paints.append(first_paint(d, handle.url))
                if not lod:
                    d.execute_script(f"{MODEL}('fig_map_b').lod_threshold = null;")
                time.sleep(1.0)
                f, dx = pan_frames(d, moves)
                frames.append(f)
                moved.append(dx)
                time.sleep(0.5)
                hovers.append(hover(d))
            finally:
                d.quit()
    finally:
        handle.stop()
    f = np.concatenate(frames)
    return {"n": n, "drawn": min(n, max_points), "backend": backend, "lod": lod,
            "serve_start_s": start_s,
            "first_paint_s": float(np.median(paints)), "first_paint_all_s": paints,
            "pan_frame_median_ms": float(np.median(f)),
            "pan_frame_p95_ms": float(np.percentile(f, 95)), "pan_frames": int(len(f)),
            "panned_x": float(min(moved)),
            "hover_ms": float(np.median([h[0] for h in hovers])),
            "hover_entries": max(h[1] for h in hovers), "hover_hit": max(h[2] for h in hovers)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--moves", type=int, default=30, help="pointer moves of the drag")
    ap.add_argument("--max-points", type=int, default=200_000,
                    help="points drawn (a random subsample above it), as explore's option")
    ap.add_argument("--configs", nargs="+", default=["webgl:lod", "webgl:nolod",
                                                       "canvas:lod"],
                    help="BACKEND:lod|nolod (Bokeh's level of detail while panning); BACKEND "
                    "auto, webgl or canvas as explore's --backend")
    args = ap.parse_args()
    meta = {"date": datetime.date.today().isoformat(), "machine": platform.node()[:20],
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "browser": "chromium headless, SwiftShader"}
    for n in args.n:
        for config in args.configs:
            backend, lod = config.split(":")
            row = {**meta, "load_1min": os.getloadavg()[0], "case": f"explore-{n}",
                   **run(n, args.repeats, backend, lod == "lod", args.moves,
                         args.max_points)}
            print(json.dumps(row), flush=True)
            with open(HERE / "results.jsonl", "a") as fh:  # every row, not the last only
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
