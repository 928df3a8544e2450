"""Stage 2, input affinities: neighbour lists turned into a fit's input graph.

The modes a fit's ``affinities=`` takes, as objects (or by name):
:class:`~ctsne.affinities.modes.Auto`, :class:`~ctsne.affinities.modes.Standard`,
:class:`~ctsne.affinities.modes.Balanced`, :class:`~ctsne.affinities.modes.Revised`,
:class:`~ctsne.affinities.modes.Precomputed` (loaded on first use, so that importing the
cheap modules below loads no numba).

- :mod:`~ctsne.affinities.modes`: the modes; the "auto" rule, written once.
- :mod:`~ctsne.affinities.graphs`: how lists become weights (t-SNE's P, UMAP's graph).
- :mod:`~ctsne.affinities.calibration`: per-row perplexity calibration (the binary search).
- :mod:`~ctsne.affinities.symmetry`: P = (P_cond + P_condᵀ) / 2n on sparse rows.
- :mod:`~ctsne.affinities.standard`: t-SNE's P from X.
- :mod:`~ctsne.affinities.balanced`: P conditioned on the prior (label-balanced, revised).
- :mod:`~ctsne.affinities.mixing`: how much of P connects different classes (diagnostic).
- :mod:`~ctsne.affinities.cross_share`, :mod:`~ctsne.affinities.counterpart`: the rule
  of "auto" and the counterpart trust it reads.
- :mod:`~ctsne.affinities.precomputed`: P from neighbours found elsewhere.
- :mod:`~ctsne.affinities.options`: the modes' names and defaults (cheap to import).
- :mod:`~ctsne.affinities.fuzzy`: UMAP's fuzzy graph from the same neighbour lists.
"""

__all__ = ["AffinityMode", "Auto", "Balanced", "Precomputed", "Revised", "Standard"]


def __getattr__(name: str):
    if name in __all__:
        from . import modes

        return getattr(modes, name)
    raise AttributeError(f"module 'ctsne.affinities' has no attribute {name!r}")
