"""UMAP's similarity in the map, φ(d) = 1 / (1 + a·d^{2b}), and its fit to min_dist and spread.

UMAP asks for points to be "fully similar" (φ ≈ 1) up to a distance ``min_dist`` and then
to fall off like ``exp(−(d − min_dist)/spread)``. That target has no convenient gradient,
so a and b are chosen to fit it by least squares on a grid of distances, as umap-learn
does; the forces then use the smooth φ. (With a = b = 1, φ is t-SNE's Student-t kernel.)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CURVE_GRID_POINTS", "CURVE_GRID_SPREADS", "check_curve", "fit_curve", "phi"]

# The fit's grid: umap-learn's 300 evenly spaced distances from 0 to 3·spread, less d = 0,
# where both curves are exactly 1 (no residual) and d^{2b} has no derivative in b.
CURVE_GRID_POINTS = 300
CURVE_GRID_SPREADS = 3.0


def check_curve(spread: float, min_dist: float) -> None:
    """Refuse a ``(spread, min_dist)`` pair the curve cannot be fitted to.

    Parameters
    ----------
    spread : float
        Scale of the fall-off beyond ``min_dist``; must be finite and > 0.
    min_dist : float
        Distance up to which points count as fully similar; must be finite, ≥ 0 and
        ≤ ``spread`` (beyond it the target is a step the curve family cannot follow).

    Raises
    ------
    ValueError
        Naming the parameter and what to set it to.
    """
    for name, value in (("spread", spread), ("min_dist", min_dist)):
        try:
            finite = math.isfinite(value)
        except TypeError:
            raise ValueError(f"{name} must be a real number, got {value!r}") from None
        if not finite:
            raise ValueError(f"{name} must be a finite number, got {value}")
    if spread <= 0:
        raise ValueError(f"spread must be > 0, got {spread}; give a positive spread "
                         "(umap-learn's default is 1.0)")
    if min_dist < 0:
        raise ValueError(f"min_dist must be ≥ 0, got {min_dist}; use min_dist=0 for the "
                         "tightest packing (umap-learn's default is 0.1)")
    if min_dist > spread:
        raise ValueError(f"min_dist={min_dist} is larger than spread={spread}; lower "
                         f"min_dist or raise spread so that min_dist ≤ spread")


def phi(d: np.ndarray, a: float, b: float) -> np.ndarray:
    """φ(d) = 1 / (1 + a·d^{2b}) for distances ``d`` ≥ 0."""
    return 1.0 / (1.0 + a * np.asarray(d, dtype=np.float64) ** (2.0 * b))


def fit_curve(spread: float = 1.0, min_dist: float = 0.1) -> tuple[float, float]:
    """The ``(a, b)`` of φ closest, in least squares, to UMAP's target curve.

    The target is 1 for ``d < min_dist`` and ``exp(−(d − min_dist)/spread)`` beyond,
    sampled at :data:`CURVE_GRID_POINTS` − 1 evenly spaced distances in
    ``(0, 3·spread]``: umap-learn's ``find_ab_params`` fit.

    Parameters
    ----------
    spread : float, default 1.0
    min_dist : float, default 0.1
        Checked by :func:`check_curve`.

    Returns
    -------
    a, b : float
        Positive floats.

    Notes
    -----
    The fit is made in units of ``spread`` and converted back: with ``d = spread·u``,
    ``a·d^{2b} = (a·spread^{2b})·u^{2b}``, so b depends only on ``min_dist/spread`` and
    ``a = a₁·spread^{−2b}``. The least-squares problem is the same one, but its start
    (a = b = 1) stays close to the answer whatever the units.
    """
    from scipy.optimize import curve_fit  # scipy loads only when a UMAP fit needs it

    check_curve(spread, min_dist)
    ratio = float(min_dist) / float(spread)
    u = np.linspace(0.0, CURVE_GRID_SPREADS, CURVE_GRID_POINTS)[1:]
    target = np.where(u < ratio, 1.0, np.exp(-(u - ratio)))
    (a1, b), _ = curve_fit(phi, u, target, p0=(1.0, 1.0))
    a = a1 * float(spread) ** (-2.0 * b)
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"the curve fit for spread={spread}, min_dist={min_dist} gave "
                         f"a={a}, b={b}; choose a spread and min_dist nearer the defaults "
                         "(1.0, 0.1)")
    return float(a), float(b)
