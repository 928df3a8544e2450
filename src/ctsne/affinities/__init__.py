"""Stage 2, input affinities P: neighbour lists turned into a sparse joint distribution.

- :mod:`~ctsne.affinities.calibration`: per-row perplexity calibration (the binary search).
- :mod:`~ctsne.affinities.symmetry`: P = (P_cond + P_condᵀ) / 2n on sparse rows.
- :mod:`~ctsne.affinities.standard`: t-SNE's P from X.
- :mod:`~ctsne.affinities.balanced`: P conditioned on the prior (label-balanced, revised).
- :mod:`~ctsne.affinities.mixing`: how much of P connects different classes (diagnostic).
- :mod:`~ctsne.affinities.precomputed`: P from neighbours found elsewhere.
- :mod:`~ctsne.affinities.options`: the modes' names and defaults (cheap to import).
- :mod:`~ctsne.affinities.modes`: which P a fit uses ("auto", "standard", ...).
- :mod:`~ctsne.affinities.fuzzy`: UMAP's fuzzy graph from the same neighbour lists.
"""
