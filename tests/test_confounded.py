"""A batch that holds only some cell types: kept apart by shared-state conditioning.

The design of issue 50: batch A holds type 1 only, batch B both types, batch C type 2
only; each batch shifted. A map that factors the batch out without over-correcting puts
each point's cross-batch neighbours in its own type (agreement near 1, as Harmony → t-SNE
does) while A's and B's type-1 cells still mix. ct-SNE's default does not: with β' = 0.01
two points of different batches do not repel, so A's type-1 cells spread over C's type-2
cells (agreement ~0.6 on this set). The default's shared-state weights (β' only between
batches in the same state) keep them apart.
"""

import numpy as np

from ctsne import ConditionalTSNE
from ctsne.metrics import cross_class_agreement


def _confounded(rng, per=150, d=10):
    types = np.zeros((2, d))
    types[1, 0] = 10.0
    offsets = rng.normal(size=(3, d))
    offsets *= 5.0 / np.linalg.norm(offsets, axis=1, keepdims=True)
    parts = [(0, 0, per), (1, 0, per // 2), (1, 1, per // 2), (2, 1, per)]
    X = np.vstack([types[t] + offsets[b] + rng.normal(size=(m, d)) for b, t, m in parts])
    batch = np.concatenate([np.full(m, b) for b, _, m in parts])
    label = np.concatenate([np.full(m, t) for _, t, m in parts])
    return X, batch, label


def test_the_default_keeps_types_apart_that_only_one_batch_holds():
    X, batch, label = _confounded(np.random.default_rng(0))
    model = ConditionalTSNE(random_state=0, n_jobs=1, method="exact")
    Y = model.fit_transform(X, batch)
    assert model.conditioning_ == "states"
    assert cross_class_agreement(Y, batch, label).agreement >= 0.95
    # the paper's weights, one argument away, lay A's type-1 cells over C's type-2 cells
    paper = model.set_params(conditioning="classes").fit_transform(X, batch)
    assert cross_class_agreement(paper, batch, label).agreement < 0.9


def test_a_map_that_mixes_only_within_types_passes_the_check():
    # the check above can pass: a layout with the batches mixed inside each type and the
    # types apart has every cross-batch neighbour in its own type
    rng = np.random.default_rng(0)
    X, batch, label = _confounded(rng)
    Y = np.c_[10.0 * label, np.zeros(len(label))] + rng.normal(size=(len(label), 2))
    result = cross_class_agreement(Y, batch, label)
    assert result.coverage > 0.9 and result.agreement >= 0.95
