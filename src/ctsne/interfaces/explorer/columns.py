"""Per-point columns as the page sends them: colour levels, palettes, coordinates."""

from __future__ import annotations

import numpy as np

from .session import MAX_PRIOR_LEVELS

__all__ = ["levels", "palette", "xy"]


def palette(k: int) -> list[str]:
    """k distinct colours: Category10, Category20, then evenly spaced Turbo."""
    from bokeh.palettes import Category10, Category20, Turbo256

    if k <= 10:
        return list(Category10[10][:max(k, 1)])
    if k <= 20:
        return list(Category20[20][:k])
    return [Turbo256[int(i)] for i in np.linspace(0, 255, k)]


def xy(Y: np.ndarray, which: str) -> dict:
    """Map coordinates as float32 columns (half the bytes to the browser; WebGL draws
    float32 anyway)."""
    return {f"x{which}": Y[:, 0].astype(np.float32), f"y{which}": Y[:, 1].astype(np.float32)}


def levels(values: np.ndarray) -> tuple[np.ndarray, list] | None:
    """(codes, levels) for a categorical column, None for a continuous one."""
    if values.dtype == object:
        text = np.array(["(missing)" if v is None else str(v) for v in values])
        lv, codes = np.unique(text, return_inverse=True)
        return codes, list(lv)
    finite = np.isfinite(values)
    lv = np.unique(values[finite])
    if len(lv) > MAX_PRIOR_LEVELS:
        return None
    codes = np.searchsorted(lv, np.where(finite, values, lv[0] if len(lv) else 0))
    return codes, [f"{v:g}" for v in lv]
