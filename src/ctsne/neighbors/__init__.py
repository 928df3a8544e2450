"""Stage 1, neighbour lists: each point's k nearest neighbours in the input space.

- :mod:`~ctsne.neighbors.search`: exact (scikit-learn) or approximate (pynndescent) search,
  and the rule that chooses between them.
- :mod:`~ctsne.neighbors.descent`: pynndescent's index, with numba's cache switched on for
  its functions (a new process compiles half as much).
- :mod:`~ctsne.neighbors.brute`: exact brute-force search for queries far from the data.
- :mod:`~ctsne.neighbors.kdtree`: ctsne's own exact k-d tree, searched a leaf of queries
  at a time.
- :mod:`~ctsne.neighbors.by_class`: lists drawn from a point's own class and from each other
  class separately (what the label-balanced P needs), and their far searches.
- :mod:`~ctsne.neighbors.pooled`: each point's nearest points of all other classes pooled
  (many classes).
- :mod:`~ctsne.neighbors.representatives`: far lists shared through representatives.
- :mod:`~ctsne.neighbors.own_first`: the standard lists found class by class where a prior
  separates the data.
- :mod:`~ctsne.neighbors.merged`: the standard lists merged from the balanced lists, the
  same order in many features.

Nothing here knows about t-SNE: any neighbour embedding can use these lists.
"""
