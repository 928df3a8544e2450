"""Baselines that remove known labels from the data before plain t-SNE (paper App. C).

- :mod:`~ctsne.baselines.cca`: canonical correlation analysis between the data and the
  label indicators, then t-SNE on what is left (two variants).
- :mod:`~ctsne.baselines.aae`: an adversarially censored auto-encoder (Edwards and
  Storkey, 2015), then t-SNE on its code; needs the optional ``torch`` dependency.
"""

from .cca import CCAProjection, cca_tsne, label_indicators

__all__ = ["CCAProjection", "cca_tsne", "label_indicators", "AdversarialCensor", "aae_tsne"]


def __getattr__(name: str):
    # The AAE module is cheap to import (torch is imported inside it only when used),
    # but load it lazily anyway so ``import ctsne.baselines`` never touches it.
    if name in ("AdversarialCensor", "aae_tsne"):
        from . import aae

        return getattr(aae, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
