"""Stage 4, optimisation: where the map starts and how it moves.

- :mod:`~ctsne.optimization.initialization`: PCA, random or a given start.
- :mod:`~ctsne.optimization.optimizer`: gradient descent with momentum and gains.
"""
