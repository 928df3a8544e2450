"""Stage 4, optimisation: where the map starts and how it moves.

- :mod:`~ctsne.optimization.initialization`: PCA, random or a given start.
- :mod:`~ctsne.optimization.optimizer`: the descent loop with momentum and gains (t-SNE),
  run on an engine's step primitives.
- :mod:`~ctsne.optimization.run`: a fit's descent (gradient, state, point order), reused.
- :mod:`~ctsne.optimization.spectral`: spectral and scaled PCA starts (UMAP-style maps).
- :mod:`~ctsne.optimization.negatives`: class-stratified negative sampling.
- :mod:`~ctsne.optimization.sgd`: UMAP's epoch SGD with negative sampling.
"""
