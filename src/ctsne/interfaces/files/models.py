"""Model files: a fitted :class:`~ctsne.ConditionalTSNE`, :class:`~ctsne.ConditionalUMAP`
or :class:`~ctsne.ConditionalLargeVis` pickled by ``ctsne embed --save-model``.

``embed --reference`` places new rows into any of them, ``explore --model`` opens its map,
and ``embed --resume`` continues a ct-SNE one (a UMAP or LargeVis run ends with its
learning rate decayed to zero, so there is nothing to continue: :func:`resumable` says
so); all load it with :func:`load_model`. What the command line stores with a model
beyond the estimator's own state (:func:`annotate`) is written in one place.

Only load files you trust: unpickling runs code.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...estimator import registry
from .formats import DataError
from .writing import atomic_path

if TYPE_CHECKING:  # pragma: no cover
    from ...estimator.tsne import ConditionalTSNE

__all__ = ["METHODS", "annotate", "load_model", "method_of", "provenance", "resumable",
           "save_model"]

# estimator class -> (the --algorithm that makes it, its name in messages)
METHODS = {m.class_name: (m.key, m.conditional_title) for m in registry.METHODS}

# Models saved before ConditionalTSNE.describe_input existed carry these attributes instead
# of ``input_provenance_``; :func:`provenance` reads both.
_OLD_ATTRIBUTES = {"cli_fingerprint": "cli_fingerprint_", "standardized": "standardized_"}


def annotate(model: ConditionalTSNE, fingerprint: dict, feature_names: Sequence[str],
             standardized: bool, ids: np.ndarray | None = None,
             labels: Mapping[str, np.ndarray] | None = None) -> None:
    """Record with ``model`` what the command line needs when it loads the model again.

    Parameters
    ----------
    model : ConditionalTSNE
        The fitted model, about to be saved.
    fingerprint : dict
        The input's shape and hash and the prior columns, which ``embed --resume``
        checks (:func:`ctsne.interfaces.cli.resume.fingerprint`).
    feature_names : sequence of str
        The feature columns, by which ``embed --reference`` lines up a new table.
    standardized : bool
        Whether the features were standardised (``embed --reference`` refuses those).
    ids : ndarray (n,), optional
        The rows' ids, which ``embed --reference --with-reference`` writes for the map's
        own points.
    labels : dict of name -> ndarray (n,), optional
        The label columns written with the map (priors, colour, marker, kept columns):
        ``embed --reference`` colours new points as the map was and writes the map's
        labels with ``--with-reference``.
    """
    extra = {}
    if ids is not None:
        extra["ids"] = np.asarray(ids)
    if labels:
        extra["labels"] = {str(k): np.asarray(v) for k, v in labels.items()}
    model.describe_input(list(feature_names), cli_fingerprint=fingerprint,
                         standardized=bool(standardized), **extra)


def provenance(model: ConditionalTSNE) -> dict:
    """What :func:`annotate` recorded with ``model`` (empty for a model saved elsewhere).

    Reads models saved by earlier versions too, which kept the same facts as attributes.
    """
    recorded = getattr(model, "input_provenance_", None)
    if recorded is not None:
        return dict(recorded)
    return {key: getattr(model, attr) for key, attr in _OLD_ATTRIBUTES.items()
            if hasattr(model, attr)}


def method_of(model) -> tuple[str, str]:
    """``(algorithm, name)`` of a fitted model: the ``--algorithm`` that makes it and its
    name in messages (the estimator's class name for a subclass of the user's own)."""
    found = registry.of_model(model)
    if found is not None:
        return found.key, found.conditional_title
    return "tsne", type(model).__name__


def resumable(model, path) -> None:
    """Raise DataError when ``model`` (loaded from ``path``) cannot be optimised further."""
    algorithm, name = method_of(model)
    if algorithm != "tsne":
        raise DataError(
            f"{path} holds a {name} map, which cannot be resumed: its SGD ran its whole "
            "schedule, the learning rate decaying to zero, and more epochs would start a "
            "new schedule rather than continue this one; fit again with a larger "
            f"--n-epochs, or place new rows into the map with --reference {path}")


def save_model(model: ConditionalTSNE, path: str | os.PathLike, force: bool = False) -> None:
    """Pickle ``model`` to ``path`` atomically (an existing file only with ``force``).

    The file holds the model with ``verbose=False`` (``model`` itself is left as it
    is): a script that loads it to ``transform`` new points should not print the
    progress that the command line showed.
    """
    quiet = model
    if getattr(model, "verbose", False):
        import copy

        quiet = copy.copy(model)  # shallow: the arrays are shared, not copied
        quiet.set_params(verbose=False)
    with atomic_path(path, force) as tmp, open(tmp, "wb") as fh:
        pickle.dump(quiet, fh, protocol=pickle.HIGHEST_PROTOCOL)


def load_model(path: str | os.PathLike, advice: str | None = None) -> ConditionalTSNE:
    """The fitted model pickled at ``path``.

    Parameters
    ----------
    path : path
        A file written by ``ctsne embed --save-model`` (or ``pickle.dump`` of a fitted
        model).
    advice : str, optional
        Added in parentheses to the error for a file that holds no fitted model.

    Returns
    -------
    ConditionalTSNE, ConditionalUMAP or ConditionalLargeVis

    Raises
    ------
    DataError
        When the file cannot be unpickled or holds something else than a fitted model.
    """
    from ...estimator.base import ConditionalEmbedding

    try:
        with open(path, "rb") as fh:
            model = pickle.load(fh)
    except (pickle.UnpicklingError, EOFError) as exc:
        # e.g. a CSV given where the model belongs: say what the file should be
        raise DataError(f"cannot load the model {path}: it is not a model file ({exc}); "
                        "give a file written by ctsne embed ... --save-model") from None
    except (OSError, AttributeError, ModuleNotFoundError) as exc:
        raise DataError(f"cannot load the model {path}: {exc}") from None
    if not isinstance(model, ConditionalEmbedding) or not hasattr(model, "embedding_"):
        what = ("an unfitted model" if isinstance(model, ConditionalEmbedding)
                else f"a {type(model).__name__}")
        classes = [m.class_name for m in registry.METHODS]
        raise DataError(f"{path} holds {what}, not a fitted ctsne model "
                        f"({', '.join(classes[:-1])} or {classes[-1]})"
                        + (f"; {advice}" if advice else ""))
    return model
