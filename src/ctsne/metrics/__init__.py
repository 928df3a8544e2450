"""Measures of how much of a labelling, or of the input neighbourhoods, an embedding shows.

All measures work on the k-nearest-neighbour graph of the embedding, except the
silhouettes. Grouped by concept:

* :mod:`.neighborhoods`: kNN label homogeneity, the paper's Laplacian score,
  neighbourhood preservation;
* :mod:`.integration`: how well a factored-out prior mixes (LISI, iLISI, cLISI) and
  whether the neighbours found across its classes share a complementary label;
* :mod:`.scib`: scIB-style scoring of an integrated map (silhouettes, structure kept
  within each batch, the overall 0.4·batch + 0.6·bio).
"""

from .integration import CrossClassAgreement, clisi, cross_class_agreement, ilisi, lisi
from .neighborhoods import (
    knn_label_homogeneity,
    label_codes,
    laplacian_score,
    neighborhood_preservation,
)
from .scib import (
    IntegrationScore,
    batch_silhouette,
    integration_score,
    label_silhouette,
    silhouette_samples,
    within_batch_preservation,
)

__all__ = [
    "CrossClassAgreement",
    "IntegrationScore",
    "batch_silhouette",
    "clisi",
    "cross_class_agreement",
    "ilisi",
    "integration_score",
    "knn_label_homogeneity",
    "label_codes",
    "label_silhouette",
    "laplacian_score",
    "lisi",
    "neighborhood_preservation",
    "silhouette_samples",
    "within_batch_preservation",
]
