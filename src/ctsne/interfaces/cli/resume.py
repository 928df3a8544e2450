"""``ctsne embed --resume``: what a saved model was fitted on, and what may change.

P (the neighbours and the perplexity calibration of the input) is kept when resuming, so
the input and every option that shaped P or the embedding's size must match the saved
model; the prior and its weight only change the repulsion and can be replaced.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

from ..files.formats import DataError
from ..files.models import provenance
from .shared import fmt

if TYPE_CHECKING:  # pragma: no cover
    from ...estimator.tsne import ConditionalTSNE

__all__ = ["check_resume", "fingerprint", "load_for_resume"]


def _digest(X: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(X, dtype=np.float64).tobytes(),
                           digest_size=16).hexdigest()


def fingerprint(X: np.ndarray, args) -> dict:
    """What the CLI stores with a saved model: the input's shape and hash, the priors."""
    return {"shape": tuple(X.shape), "X": _digest(X), "prior": list(args.prior)}


def check_resume(model, X: np.ndarray, args) -> list[str]:
    """Raise DataError if INPUT or options differ from what ``model`` was fitted on.

    Returns notes on what was given but is not used (options of the first fit only).
    """
    n, p = len(model.embedding_), model.n_features_in_
    if X.shape != (n, p):
        raise DataError(f"the model was fitted on {n} × {p} features, the input gives "
                        f"{X.shape[0]} × {X.shape[1]}: use the same INPUT and options as then")
    saved = provenance(model).get("cli_fingerprint")
    if saved is not None and saved["X"] != _digest(X):
        raise DataError("INPUT holds other values than the data the model was fitted on "
                        "(same shape, different content): use the same INPUT and feature "
                        "options, or start a new embedding without --resume")
    if args.perplexity is not None and args.perplexity != model.perplexity:
        raise DataError(f"--perplexity {args.perplexity:g} differs from the model's "
                        f"{model.perplexity:g}: the affinities are kept when resuming; drop "
                        "--perplexity or start a new embedding without --resume")
    if args.dims is not None and args.dims != model.n_components:
        raise DataError(f"--dims {args.dims} differs from the model's {model.n_components}; "
                        "drop --dims or start a new embedding without --resume")
    notes = []
    for flag, value in (("--seed", args.seed),
                        ("--exaggeration-iter", args.exaggeration_iter)):
        if value is not None:
            notes.append(f"{flag} applies to a new embedding; it is not used with --resume")
    return notes


def load_for_resume(args, X: np.ndarray, prior, note, model=None) -> ConditionalTSNE:
    """The model saved at ``args.resume`` (``model``, if already loaded), checked against
    INPUT (``X``) and the options, with the new prior and weights applied;
    ``note(message)`` reports what changed."""
    from ...prior import make_prior
    from ..files.models import load_model

    if model is None:
        model = load_model(args.resume)
    for msg in check_resume(model, X, args):
        note(f"note: {msg}")
    saved = provenance(model).get("cli_fingerprint", {}).get("prior")
    if prior is None and model.prior_ is not None:
        raise DataError(f"the model factors out a prior ({', '.join(saved or ['?'])}); pass "
                        "--prior again (other columns replace it, the affinities stay)")
    changes = []
    if args.method is not None and args.method != model.method:
        changes.append(f"--method {args.method}")
        model.set_params(method=args.method)
    for flag, name in (("--backend", "backend"), ("--device", "device")):
        value = getattr(args, name, None)
        if value is not None and value != getattr(model, name):
            changes.append(f"{flag} {value}")
            model.set_params(**{name: value})
    if args.beta is not None or args.alpha is not None:
        model.set_params(beta=args.beta, alpha=args.alpha)
    if args.combine is not None:
        model.set_params(combine=args.combine)
    if prior is not None:
        # the model's weight if it has one, else make_prior's default, as in a new fit
        weight = {} if model.alpha is None and model.beta is None else {"beta": model.beta}
        new = make_prior(prior, len(X), alpha=model.alpha, combine=model.combine,
                         missing=model.missing, **weight)
        old = model.prior_
        same = (old is not None and len(old.codes) == len(new.codes)
                and all(np.array_equal(a, b) for a, b in zip(old.codes, new.codes,
                                                               strict=True)))
        if not same:
            changes.append(f"the prior {', '.join(args.prior)}")
        if not (same and np.allclose(old.betas, new.betas)):
            if same:
                changes.append(f"β' {fmt(new.betas[0] if len(new.betas) == 1 else new.betas)}")
            model.set_prior(new)
    if changes:
        note(f"resuming with {' and '.join(changes)} (the affinities P are kept)")
    model.set_params(verbose=not args.quiet, n_jobs=args.threads)
    return model
