"""Repulsion engines and the ct-SNE per-class composition.

Every engine answers the same question for a point set G (rows of ``Y``):

    F_i = Σ_{j∈G, j≠i} t_ij² (y_i − y_j)      Z = Σ_{k≠l ∈ G} t_kl,   t = 1/(1 + |Δy|²)

and returns ``(F, Z)``. :mod:`ctsne.forces.repulsion.conditional` turns any of them into the
ct-SNE repulsion without the engines knowing about labels.
:mod:`ctsne.forces.repulsion.reference` answers another question, the repulsion on new
points from a fixed reference map (``ConditionalTSNE.transform``).
"""

from .conditional import ConditionalRepulsion

__all__ = ["ConditionalRepulsion"]
