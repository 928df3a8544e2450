"""Checks of a fit's inputs: the parameters (from :data:`~.parameters.PARAMETERS`), X, P.

Also the thread limit a fit runs under (``n_jobs``). Importing this module loads no numba,
scipy or scikit-learn (they load where a check needs them), so that the command line can
check its options (:func:`check_options`) before it loads the library or reads the data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..affinities.options import check_affinity_params, n_neighbors_for
from .parameters import MAX_DIMS, PARAMETERS, check_table

if TYPE_CHECKING:  # pragma: no cover
    import scipy.sparse as sp

__all__ = ["DescribedInput", "check_P", "check_X", "check_feature_names", "check_options",
           "check_metric", "check_one_weight", "check_params", "check_perplexity", "threads"]


def _dims_fit_method(p: Mapping[str, Any]) -> None:
    limit = MAX_DIMS.get(p["method"])
    if limit is not None and p["n_components"] > limit:
        # name every engine that can draw this many dimensions
        able = [f"'{m}'" for m, most in MAX_DIMS.items() if most >= p["n_components"]]
        raise ValueError(
            f"method={p['method']!r} supports up to {limit} output dimensions, got "
            f"n_components={p['n_components']}; use method={' or '.join([*able, repr('exact')])}"
            " or fewer components"
        )


def check_one_weight(p: Mapping[str, Any]) -> None:
    """Refuse ``beta`` and ``alpha`` together (Eq. 4 gives one from the other)."""
    if p["beta"] is not None and p["alpha"] is not None:
        raise ValueError(f"give beta or alpha, not both (got beta={p['beta']!r}, "
                         f"alpha={p['alpha']!r}): the other follows from the class sizes")


# Rules over several parameters, after each parameter's own check.
RULES: tuple[Callable[[Mapping[str, Any]], None], ...] = (
    _dims_fit_method,
    lambda p: check_affinity_params(p["affinities"], p["within_weight"]),
    check_one_weight,
)


def check_options(params: Mapping[str, Any], names: Mapping[str, str] | None = None) -> None:
    """Raise ValueError naming the first parameter that the table or a rule refuses.

    The checks that need no data, so that a caller can run them before it reads any
    (the command line does, right after parsing its options).

    Parameters
    ----------
    params : mapping
        ``estimator.get_params()``: a value for every parameter of the table.
    names : mapping, optional
        Parameter -> how the messages call it (the command line's option, "--dims" for
        ``n_components``); default the parameter's name.
    """
    check_table(PARAMETERS, params, names)
    for rule in RULES:
        rule(params)


def check_perplexity(perplexity: float, n: int) -> None:
    """Raise ValueError when ``n`` points are too few for ``perplexity`` (a valid one)."""
    if perplexity >= n_neighbors_for(perplexity, n):
        raise ValueError(
            f"perplexity={perplexity} is too large for {n} points: it must be below "
            f"n − 1 = {n - 1} (the neighbours available); "
            f"use perplexity ≤ {max(1, (n - 2) // 3)} or more points"
        )


def check_params(params: Mapping[str, Any], n: int, *, builds_affinities: bool = True) -> None:
    """Raise ValueError naming the first parameter that the table or a rule refuses.

    Parameters
    ----------
    params : mapping
        ``estimator.get_params()``.
    n : int
        Number of points to embed.
    builds_affinities : bool
        False when P is given (``fit_affinities``): the perplexity is then not used, so
        it is not checked against ``n``.
    """
    check_options(params)
    if n < 3:
        raise ValueError(f"t-SNE needs at least 3 points, got n_samples={n}")
    if builds_affinities:
        check_perplexity(params["perplexity"], n)
        check_metric(params["metric"])


# scikit-learn's names that need more than a name, are no distance between rows of X, or
# that the approximate search (pynndescent) does not know
_NOT_SEARCHABLE = ("precomputed", "nan_euclidean", "mahalanobis", "seuclidean", "haversine",
                   "cityblock")


def check_metric(metric) -> None:
    """Refuse a metric name the neighbour searches do not know, before any work, with the
    closest names (the names both scikit-learn's exact and pynndescent's approximate
    search take, less those that need extra arguments)."""
    if callable(metric):
        return
    from sklearn.neighbors import VALID_METRICS

    known = sorted(m for m in VALID_METRICS["brute"]
                   if isinstance(m, str) and m not in _NOT_SEARCHABLE)
    if metric in known:
        return
    import difflib

    close = difflib.get_close_matches(str(metric), known, n=3)
    hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
    raise ValueError(f"metric={metric!r} is not a metric the neighbour search knows; {hint}"
                     f"use one of {', '.join(known)}, or a callable")


@contextlib.contextmanager
def threads(n_jobs: int | None):
    """Apply ``n_jobs`` for the duration of a fit: numba's thread count (None, -1: all)."""
    if n_jobs is None or n_jobs == -1:
        yield
        return
    import numba

    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_jobs), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


def check_X(X) -> np.ndarray:
    """``X`` as a finite float64 array (n_samples, n_features); clear errors otherwise.

    A float64 array is returned as is (no copy).
    """
    if hasattr(X, "toarray"):
        raise TypeError("X is a sparse matrix; pass a dense array (X.toarray())")
    try:
        raw = np.asarray(X)
        complex_values = np.iscomplexobj(raw)  # float64 would drop the imaginary part
        if not complex_values:
            X = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        # numpy's class, as scikit-learn keeps it: text that is no number is a bad value
        # (ValueError), an object that is no number at all (a dict) a bad type (TypeError)
        raise type(exc)(
            f"X must be a numeric array of shape (n_samples, n_features): {exc}"
        ) from None
    if complex_values:
        raise ValueError("Complex data not supported: X has complex values; pass their real "
                         "part, modulus or both as features")
    if X.ndim != 2:
        raise ValueError(
            f"X must be 2-D (n_samples, n_features), got shape {X.shape}. "
            + ("Reshape your data: X.reshape(-1, 1) for a single feature" if X.ndim == 1
               else "Flatten the features")
        )
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                         "required: there is nothing to embed")
    if not np.all(np.isfinite(X)):
        bad = np.argwhere(~np.isfinite(X))
        rows = ", ".join(str(r) for r in np.unique(bad[:, 0])[:10])
        raise ValueError(
            f"X has {len(bad)} NaN or infinite value(s) "
            f"(rows {rows}{' …' if len(bad) > 10 else ''}); "
            "impute or drop them first"
        )
    return X


def check_feature_names(names, n_features: int) -> np.ndarray:
    """One string per feature, as the object array scikit-learn keeps in
    ``feature_names_in_``."""
    out = np.empty(len(names), dtype=object)
    out[:] = list(names)
    if len(out) != n_features:
        raise ValueError(f"{len(out)} feature names for {n_features} features; give one "
                         "name per column of X")
    if not all(isinstance(v, str) for v in out):
        raise TypeError("feature names must be strings")
    return out


# P from ctsne's own builders is symmetric to rounding; a P that is not symmetrised at all
# differs by the size of its entries.
_SYMMETRY_TOL = 1e-9
# As the exact objective's check: a normalised P sums to 1 up to rounding.
_SUM_TOL = 1e-6


def check_P(P) -> sp.csr_matrix:
    """``P`` as the input affinities of a fit: CSR float64 (n, n), n ≥ 3, finite,
    non-negative, symmetric, zero diagonal, summing to 1.

    A CSR float64 matrix in canonical form is returned as is (the same object), so that
    models given one P share it; anything else is converted.
    """
    import scipy.sparse as sp

    if not (sp.issparse(P) or hasattr(P, "__array__")):
        raise TypeError(f"P must be a sparse matrix or an array (n, n), got "
                        f"{type(P).__name__}")
    if not sp.issparse(P):
        P = np.asarray(P)
        if P.ndim != 2:
            raise ValueError(f"P must be a square matrix (n, n), got shape {P.shape}")
    if P.shape[0] != P.shape[1]:
        raise ValueError(f"P must be a square matrix (n, n), got shape {P.shape}")
    if not (sp.isspmatrix_csr(P) and P.dtype == np.float64 and P.has_canonical_format):
        P = sp.csr_matrix(P, dtype=np.float64, copy=True)
        P.sum_duplicates()  # sorts the indices as well
    n = P.shape[0]
    if n < 3:
        raise ValueError(f"t-SNE needs at least 3 points, got n_samples={n}")
    data = P.data
    if not np.all(np.isfinite(data)) or (data.size and data.min() < 0):
        raise ValueError("P must be finite and non-negative")
    if np.any(P.diagonal() != 0):
        raise ValueError("P must have a zero diagonal (a point is not its own neighbour)")
    total = float(data.sum())
    if abs(total - 1.0) > _SUM_TOL:
        raise ValueError(f"P must sum to 1 over all pairs, it sums to {total:.6g}; "
                         "divide it by its sum")
    T = P.T.tocsr()  # sorted indices, as P's
    same_pattern = (np.array_equal(T.indptr, P.indptr)
                    and np.array_equal(T.indices, P.indices))
    gap = (float(np.abs(T.data - data).max(initial=0.0)) if same_pattern
           else float(abs(P - T).max()))
    if gap > _SYMMETRY_TOL * float(data.max(initial=0.0)):
        raise ValueError(f"P must be symmetric (p_ij = p_ji), max |P − Pᵀ| is {gap:.3g}; "
                         "symmetrise it, e.g. (P + P.T) / 2")
    return P


class DescribedInput:
    """What every estimator keeps and checks of its data beyond X itself: the feature
    names (scikit-learn's bookkeeping), the record kept with a saved model, and the
    checks of new points against the fitted ones."""

    def _record_feature_names(self, X, *, reset: bool) -> None:
        """scikit-learn's ``feature_names_in_`` bookkeeping for X as the caller gave it."""
        try:  # scikit-learn ≥ 1.6
            from sklearn.utils.validation import validate_data
        except ImportError:  # 1.3 to 1.5 keep the same bookkeeping as a BaseEstimator method
            super()._check_feature_names(X, reset=reset)
            return
        # names only: check_X converts and counts X, with its own messages
        validate_data(self, X, skip_check_array=True, ensure_2d=False, reset=reset)

    def _new_points(self, X_new) -> np.ndarray:
        """``X_new`` for ``transform``: a fitted model that kept its training data, and
        the same features (by name when X_new has names)."""
        from sklearn.exceptions import NotFittedError

        if not hasattr(self, "embedding_"):
            raise NotFittedError("transform() places points into a fitted map; call fit() "
                                 "or fit_transform() first")
        if not hasattr(self, "training_data_"):
            raise NotFittedError("this model no longer holds its training data "
                                 "(training_data_), which transform() needs; refit it")
        if hasattr(X_new, "columns"):
            # names are compared only when X_new has them: a model whose names came from
            # describe_input (the command line's) gets arrays already aligned by name
            self._record_feature_names(X_new, reset=False)
        X_new = check_X(X_new)
        m, p = X_new.shape[1], self.n_features_in_
        if m != p:
            # scikit-learn's wording first (its checks look for it), then ours
            raise ValueError(f"X has {m} features, but {type(self).__name__} is expecting "
                             f"{p} features as input: X_new has {m} features but the model "
                             f"was fitted on {p}; give the same features, in the same order")
        return X_new

    def _reference_pair(self, X_new: np.ndarray, stacklevel: int = 4
                        ) -> tuple[np.ndarray, np.ndarray]:
        """The training data and ``X_new`` at one safe scale (by a power of two, exact, as
        the fit scales extreme data), warning about new rows far outside the training
        data's range: such a row has every training point about equally far away.
        ``stacklevel`` counts from the warning to the user's call."""
        import warnings

        from ..checks import FAR_OUTSIDE, rows_named, to_common_safe_scale

        X_ref = self.training_data_
        ref_top = float(np.max(np.abs(X_ref))) if X_ref.size else 0.0
        row_top = np.max(np.abs(X_new), axis=1) if X_new.size else np.zeros(len(X_new))
        far = np.flatnonzero(row_top > FAR_OUTSIDE * max(ref_top, np.finfo(float).tiny))
        if len(far):
            warnings.warn(f"{rows_named(far, ' of X_new')} far outside the training data "
                          f"(largest magnitude {row_top[far].max():.3g} against "
                          f"{ref_top:.3g}): every training point is about equally far from "
                          "them, so where they land says little; check them for unit or "
                          "scaling errors", UserWarning, stacklevel=stacklevel)
        return to_common_safe_scale(X_ref, X_new)

    def describe_input(self, feature_names=None, **provenance) -> DescribedInput:
        """Record what the training data was, to keep with a saved model.

        For callers that prepare X themselves (the command line reads a table, encodes
        and scales its columns): the columns' names and what is needed later to check or
        rebuild such input. A new fit removes the record.

        Parameters
        ----------
        feature_names : sequence of str, optional
            One name per column of X, stored as ``feature_names_in_`` (as scikit-learn
            does for a DataFrame); None keeps the current names, if any.
        **provenance
            Stored as the dict ``input_provenance_``, replacing an earlier one: e.g. a
            hash of X, the source file, whether the features were standardised.

        Returns
        -------
        estimator
            self.
        """
        if not hasattr(self, "n_features_in_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("describe_input() describes the data of a fitted model; "
                                 "call fit() first")
        if feature_names is not None:
            self.feature_names_in_ = check_feature_names(feature_names, self.n_features_in_)
        self.input_provenance_ = dict(provenance)
        return self
