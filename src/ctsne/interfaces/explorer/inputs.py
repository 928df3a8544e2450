"""What the browser sends, checked before the page acts on it, and the page's view kept
in its address.

Every widget value, selection and outline reaches the server over the websocket from
whoever holds the page, so it can be anything the property's type allows: a crafted
``history.value = "999: x"`` or ``color.value = "nope"`` raised inside the Bokeh
callback (seen only in the server's log, the page left half updated) and ``"-1: …"``
showed the last step. Here a value the page never offered is refused: the status line
says why and the widget gets its last good value back.

The colour, marker and step shown are also written into the page's address (the
browser's ``history.replaceState``): Bokeh builds a new document for every page load,
and the address's query is what reaches it, so a reload or a bookmark opens the same
view (:func:`requested_view`).

A mixin of :class:`ctsne.interfaces.explorer.app._Page`, which holds the widgets.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from .columns import prior_choices
from .methods import METHODS

__all__ = ["InputsMixin", "requested_view", "VIEW_KEYS", "ADDRESS_JS"]

log = logging.getLogger(__name__)

NONE = "(none)"
VIEW_KEYS = ("color", "marker", "step")
CLUSTER_METHODS = ("kmeans", "dbscan")
DRAWING = ("canvas", "webgl")

# In the browser, on a change of ``cb_obj.value``: write it into the address's query as
# ``key`` (for the History box only the step's number), keeping the token and the rest.
ADDRESS_JS = """
const u = new URL(window.location.href);
let v = cb_obj.value == null ? "" : String(cb_obj.value);
if (key === "step") v = v.split(":")[0];
if (v === "") u.searchParams.delete(key); else u.searchParams.set(key, v);
window.history.replaceState(window.history.state, "", u.toString());
"""


def requested_view(doc) -> dict[str, str]:
    """The view the page's address asks for.

    Parameters
    ----------
    doc : bokeh.document.Document
        A new page's document; its ``session_context.request`` is the HTTP request that
        opened the page (absent outside a server session).

    Returns
    -------
    dict of str -> str
        ``color``, ``marker`` and ``step`` as the query gives them (the last of repeated
        keys), unchecked: the page checks them like any value from the browser.
    """
    context = getattr(doc, "session_context", None)
    request = getattr(context, "request", None) if context is not None else None
    arguments = getattr(request, "arguments", None) or {}
    view = {}
    for key in VIEW_KEYS:
        values = arguments.get(key)
        if values:
            last = values[-1]
            view[key] = last.decode("utf-8", "replace") if isinstance(last, bytes) else str(last)
    return view


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value > 0


def _indices(values, n: int) -> bool:
    """Whether ``values`` are row numbers of a table of ``n`` rows (whole numbers, not
    booleans, in [0, n))."""
    try:
        a = np.asarray(values)
    except (TypeError, ValueError):
        return False
    if a.size == 0:
        return True
    return a.ndim == 1 and np.issubdtype(a.dtype, np.integer) and 0 <= a.min() \
        and a.max() < n


class InputsMixin:
    """Wiring of the page's widgets through checks (see the module docstring)."""

    _restoring = False

    # ------------------------------------------------------------------ checks
    # each returns None for a value the page offers, else why it refuses it
    def _color_ok(self, name):
        if name == NONE or name in self.s.labels or name in self.s.feature_names:
            return None
        return f"no column {name!r} to colour by"

    def _marker_ok(self, name):
        return None if name == NONE or name in self.s.labels else \
            f"no label column {name!r} to mark by"

    def _hover_ok(self, names):
        bad = [n for n in names if n not in self.s.labels]
        return None if not bad else f"no label column {bad[0]!r} to show on hover"

    def _history_ok(self, value):
        if value in self.history.options or (value == "" and not self.s.steps):
            return None
        return f"no step {value!r} in the History"

    def _prior_ok(self, names):
        allowed = set(prior_choices(list(self.s.labels), self.s.feature_names))
        bad = [n for n in names if n not in allowed]
        return None if not bad else f"no column {bad[0]!r} to factor out"

    def _choice_ok(self, allowed, what):
        return lambda v: None if v in allowed else f"{what} must be one of {list(allowed)}"

    def _positive_ok(self, what):
        return lambda v: None if _positive(v) else f"{what} must be a positive number"

    def _legend_ok(self, rows):
        n = len(self.legend_source.data.get("level", []))
        return None if _indices(rows, n) else "no such legend row"

    def _points_ok(self, indices):
        return None if _indices(indices, len(self.source.data["id"])) else \
            "selected points that the map does not have"

    # ------------------------------------------------------------------ wiring
    def _reject(self, widget, prop: str, old, why: str) -> None:
        """Give ``widget.prop`` its last good value back and say why the new one was
        refused (the restored value reaches the browser as any change does)."""
        self._restoring = True
        try:
            setattr(widget, prop, old)
        finally:
            self._restoring = False
        self._say(f"refused: {why}", error=True)

    def _guarded(self, apply, *args) -> None:
        """Run a callback's work; an unexpected error goes to the status line (and the
        server's log, with its traceback) instead of out of the Bokeh callback."""
        try:
            apply(*args)
        except Exception as exc:
            log.exception("ctsne explore: a page callback failed")
            self._say(f"could not do that: {type(exc).__name__}: {exc}", error=True)

    def _on(self, widget, prop: str, check, apply) -> None:
        """Call ``apply(new)`` when the browser (or the page) changes ``widget.prop`` to a
        value ``check`` accepts; refuse the others (:meth:`_reject`)."""
        def changed(attr, old, new):
            if self._restoring:
                return
            why = check(new)
            if why is not None:
                self._reject(widget, prop, old, why)
                return
            self._guarded(apply, new)

        widget.on_change(prop, changed)

    def _click(self, button, apply) -> None:
        button.on_click(lambda *_: self._guarded(apply))

    def _wire(self):
        from bokeh.models import CustomJS

        self._on(self.source.selected, "indices", self._points_ok, self._selected)
        self._on(self.color, "value", self._color_ok, self._set_color)
        self._on(self.marker, "value", self._marker_ok, self._set_marker)
        self._on(self.hover_cols, "value", self._hover_ok, lambda v: self._set_hover())
        self._on(self.backend, "value", self._choice_ok(DRAWING, "Drawing"),
                 self._set_backend)
        say = lambda v: self._say_next_prior()  # noqa: E731
        self._on(self.prior, "value", self._prior_ok, say)
        self._on(self.keep_prior, "active", lambda v: None, say)
        self._on(self.beta, "value", self._positive_ok("β'"), say)
        self._on(self.method, "value", self._choice_ok(tuple(METHODS), "the method"), say)
        self._on(self.cluster_method, "value",
                 self._choice_ok(CLUSTER_METHODS, "the clustering"), lambda v: None)
        self._on(self.cluster_param, "value", self._positive_ok("k / eps"), lambda v: None)
        self._on(self.legend_source.selected, "indices", self._legend_ok, self._legend_click)
        self._on(self.history, "value", self._history_ok, self._history_pick)
        for button, apply in ((self.cluster_btn, self._cluster),
                              (self.add_sel, self._add_selection),
                              (self.add_clu, self._add_clusters),
                              (self.add_top, self._add_top), (self.go, self._factor_out),
                              (self.stop, self.ex.cancel)):
            self._click(button, apply)
        for kind, b in self.exports.items():
            self._click(b, lambda k=kind: self._export(k))
        for widget, key in ((self.color, "color"), (self.marker, "marker"),
                            (self.history, "step")):
            widget.js_on_change("value", CustomJS(args={"key": key}, code=ADDRESS_JS))

    def _history_pick(self, value: str) -> None:
        """A step picked in the History box: show it, and say which on the status line
        (which still named the run that made a later step)."""
        if not value:
            return
        k = list(self.history.options).index(value)
        if k == self.step_b:  # the page itself set the box to the step it shows
            return
        self._show_step(k)
        parent = self.s.steps[k].parent
        beside = "" if parent is None else f" (beside it, its parent: step {parent})"
        self._say(f"showing step {value}{beside}")

    def _apply_view(self, view: dict[str, str]) -> None:
        """Before the page is first drawn: take the step, colour and marker that its
        address asks for (:func:`requested_view`) where the session has them."""
        refused = []
        step = view.get("step")
        if step is not None:
            if step.isdigit() and int(step) < len(self.s.steps):
                self.step_b = int(step)
            else:
                refused.append(f"step {step!r}")
        for key, widget, check in (("color", self.color, self._color_ok),
                                   ("marker", self.marker, self._marker_ok)):
            if key in view:
                if check(view[key]) is None:
                    widget.value = view[key]
                else:
                    refused.append(f"{key} {view[key]!r}")
        if refused:
            self._say(f"the page's address asks for {' and '.join(refused)}, which this "
                      "session does not have", error=True)
