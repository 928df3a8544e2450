"""Stage 3, forces: the gradient of KL(P‖R) as attraction plus conditional repulsion.

- :mod:`~ctsne.forces.attraction`: attraction over P's pairs, each computed once.
- :mod:`~ctsne.forces.repulsion`: repulsion engines (exact, Barnes-Hut, FFT) and the ct-SNE
  decomposition over classes (:mod:`~ctsne.forces.repulsion.conditional`); the repulsion
  on new points from a fixed map (:mod:`~ctsne.forces.repulsion.reference`).
- :mod:`~ctsne.forces.gradient`: the two composed, as the optimiser calls them.
- :mod:`~ctsne.forces.objective`: the exact objective and gradient in plain numpy.
- :mod:`~ctsne.forces.curve`: UMAP's low-dimensional similarity and its fit.
"""
