"""k nearest neighbours on the torch device: exact in blocks, or FAISS, or the host search.

Exact search in blocks of query rows: squared distances as one matrix product per block
(``|q|² + |r|² − 2 q·r``, in the working type), ``topk`` of a few more candidates than
asked, then the candidates' distances recomputed from coordinate differences in float64
and the k nearest kept. The margin of candidates makes the lists those of an exact search
in float64 (the numba engine's scikit-learn search) unless two distances agree to the
working type's rounding, so the P built from them matches the numba engine's P.

Which search a fit uses (:func:`search_plan`): exact on the device up to
:data:`DEVICE_EXACT_UP_TO` points, above it FAISS's IVF index where ``faiss`` imports,
else the numba engine's host search (:func:`ctsne.neighbors.search.nearest_neighbors`).

Lists restricted to classes (the label-balanced P) use the same exact blocks on each
class's rows; empty slots (a class smaller than k) hold the point itself with distance
``inf``, the convention of :mod:`ctsne.neighbors.by_class`.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from ..neighbors.class_lists import BalancedLists, block_width_for
from ..neighbors.search import nearest_neighbors
from ..tuning import DEVICE_BLOCK_ENTRIES as BLOCK_ENTRIES
from ..tuning import DEVICE_EXACT_UP_TO
from .device import load_torch

__all__ = ["DEVICE_EXACT_UP_TO", "DeviceLists", "block_knn", "other_class_knn",
           "own_class_knn", "pooled_other_knn", "search_plan", "standard_knn"]

# Candidates beyond k taken from the working-type distances before the float64 recheck.
MARGIN = 8
# FAISS's IVF index: lists (cells) per √n and cells visited per query.
FAISS_CELLS_PER_ROOT = 4
FAISS_NPROBE = 32


def search_plan(n: int, device, method: str = "auto", metric: str = "euclidean") -> str:
    """How the neighbours of ``n`` points are found: "device" (exact blocks), "faiss" or
    "host" (the numba engine's search).

    Parameters
    ----------
    n : int
    device : torch.device
    method : {"auto", "exact", "approx"}
        "exact" always searches exactly on the device (Euclidean), "approx" never.
    metric : str
        Only "euclidean" runs on the device; other metrics use the host search.
    """
    if metric != "euclidean":
        return "host"
    if method == "exact" or (method == "auto" and n <= DEVICE_EXACT_UP_TO[device.type]):
        return "device"
    return "faiss" if importlib.util.find_spec("faiss") is not None else "host"


def block_knn(Q, R, k: int, same: bool = False, work_dtype=None):
    """Each row of ``Q``'s ``k`` nearest rows of ``R``, exact.

    Parameters
    ----------
    Q : tensor (m, p), float64
    R : tensor (r, p), float64, on the same device
    k : int
        ``k ≤ r`` (``k ≤ r − 1`` with ``same``).
    same : bool
        ``Q`` is ``R``: a row is not its own neighbour.
    work_dtype : torch dtype, optional
        Type of the block distances that pick the candidates (default float64).

    Returns
    -------
    idx : tensor of int64 (m, k), dist : tensor of float64 (m, k), nearest first
    """
    torch = load_torch()
    m, r = Q.shape[0], R.shape[0]
    work_dtype = work_dtype or torch.float64
    Rw = R.to(work_dtype)
    r2 = (Rw * Rw).sum(1)
    c = min(r, k + MARGIN + int(same))
    entries = BLOCK_ENTRIES.get(Q.device.type, BLOCK_ENTRIES["cpu"])
    rows = max(1, min(m, entries // max(r, 1)))
    out_i = torch.empty((m, k), dtype=torch.int64, device=Q.device)
    out_d = torch.empty((m, k), dtype=torch.float64, device=Q.device)
    for s in range(0, m, rows):
        e = min(m, s + rows)
        q = Q[s:e].to(work_dtype)
        d2 = torch.addmm(r2[None, :], q, Rw.T, alpha=-2.0).add_((q * q).sum(1, keepdim=True))
        if same:
            d2[torch.arange(e - s, device=Q.device), torch.arange(s, e, device=Q.device)] = \
                float("inf")
        cand = torch.topk(d2, c, dim=1, largest=False, sorted=False).indices
        del d2
        exact = _distances(Q[s:e], R, cand, entries)
        if same:
            exact[cand == torch.arange(s, e, device=Q.device)[:, None]] = float("inf")
        dist, order = torch.sort(exact, dim=1)
        out_i[s:e] = torch.gather(cand, 1, order[:, :k])
        out_d[s:e] = dist[:, :k]
    return out_i, out_d


def _distances(q, R, cand, entries: int):
    """float64 distances from each row of ``q`` to its candidate rows of ``R``, from the
    coordinate differences (no cancellation), in chunks of ``entries`` differences."""
    torch = load_torch()
    m, c = cand.shape
    p = R.shape[1]
    out = torch.empty((m, c), dtype=torch.float64, device=q.device)
    step = max(1, entries // max(c * p, 1))
    for s in range(0, m, step):
        e = min(m, s + step)
        diff = R[cand[s:e]] - q[s:e, None, :]
        out[s:e] = torch.linalg.vector_norm(diff, dim=2)
    return out


def _faiss_knn(X: np.ndarray, k: int, seed: int | None):
    """k nearest other points by FAISS's IVF-Flat index (on its GPUs where it has them),
    distances recomputed in float64 on the host; returns numpy (idx, dist)."""
    import faiss

    n, p = X.shape
    x = np.ascontiguousarray(X, dtype=np.float32)
    cells = max(1, min(n // 39, int(FAISS_CELLS_PER_ROOT * np.sqrt(n))))
    quantizer = faiss.IndexFlatL2(p)
    index = faiss.IndexIVFFlat(quantizer, p, cells)
    if hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0:
        index = faiss.index_cpu_to_all_gpus(index)
    index.cp.seed = 0 if seed is None else int(seed) % (2**31)
    index.train(x)
    index.add(x)
    faiss.ParameterSpace().set_index_parameter(index, "nprobe", min(cells, FAISS_NPROBE))
    _, i = index.search(x, k + 1)
    i = i.astype(np.int64)
    rows = np.arange(n)[:, None]
    # a point's own entry, or the last one where the search missed it, is dropped
    is_self = i == rows
    is_self[~is_self.any(axis=1), -1] = True
    i = i[~is_self].reshape(n, k)
    missing = i < 0
    i = np.where(missing, rows, i)
    d = np.linalg.norm(X[i] - X[:, None, :], axis=2)
    d[missing] = np.inf
    order = np.argsort(d, axis=1, kind="stable")
    return np.take_along_axis(i, order, 1), np.take_along_axis(d, order, 1)


def standard_knn(X, k: int, plan: str, work_dtype=None, random_state=None, n_jobs=None,
                 method: str = "auto", metric: str = "euclidean"):
    """Each point's k nearest other points as device tensors (idx int64, dist float64).

    Parameters
    ----------
    X : tensor (n, p), float64, on the device
    k : int
    plan : {"device", "faiss", "host"}
        From :func:`search_plan`.
    work_dtype, random_state, n_jobs
        The block distances' type; the host search's seed and threads.
    method, metric
        The host search's (:func:`ctsne.neighbors.search.nearest_neighbors`: its rule
        decides exact or approximate under "auto", as in the numba engine).
    """
    torch = load_torch()
    if plan == "device":
        return block_knn(X, X, k, same=True, work_dtype=work_dtype)
    Xh = X.cpu().numpy()
    if plan == "faiss":
        seed = random_state if isinstance(random_state, (int, np.integer)) else None
        i, d = _faiss_knn(Xh, k, seed)
    else:
        i, d = nearest_neighbors(Xh, k, method=method, metric=metric,
                                 random_state=random_state, n_jobs=n_jobs)
    return (torch.as_tensor(np.asarray(i, dtype=np.int64), device=X.device),
            torch.as_tensor(np.asarray(d, dtype=np.float64), device=X.device))


def _empty(n: int, k: int, device):
    torch = load_torch()
    idx = torch.arange(n, device=device)[:, None].repeat(1, k)
    return idx, torch.full((n, k), float("inf"), dtype=torch.float64, device=device)


def own_class_knn(X, codes, k: int, work_dtype=None):
    """Each point's k nearest points of its own class (empty slots where the class is
    smaller than k + 1). ``codes``: int64 tensor of classes 0..L−1."""
    torch = load_torch()
    n = X.shape[0]
    idx, dist = _empty(n, k, X.device)
    for c in range(int(codes.max()) + 1):
        rows = torch.nonzero(codes == c).ravel()
        kc = min(k, len(rows) - 1)
        if kc < 1:
            continue
        i, d = block_knn(X[rows], X[rows], kc, same=True, work_dtype=work_dtype)
        idx[rows, :kc], dist[rows, :kc] = rows[i], d
    return idx, dist


def other_class_knn(X, codes, k_other: int, work_dtype=None):
    """For every other class m, each point's ``k_other`` nearest points of class m: block t
    of a point of class c holds class t if t < c, else t + 1 (as
    :func:`ctsne.neighbors.by_class.other_class_neighbors`)."""
    torch = load_torch()
    n = X.shape[0]
    L = int(codes.max()) + 1
    idx, dist = _empty(n, (L - 1) * k_other, X.device)
    for m in range(L):
        rows = torch.nonzero(codes == m).ravel()
        others = torch.nonzero(codes != m).ravel()
        km = min(k_other, len(rows))
        if km < 1 or len(others) == 0:
            continue
        i, d = block_knn(X[others], X[rows], km, work_dtype=work_dtype)
        block = torch.where(codes[others] < m, m - 1, m)
        cols = block[:, None] * k_other + torch.arange(km, device=X.device)[None, :]
        idx[others[:, None], cols] = rows[i]
        dist[others[:, None], cols] = d
    return idx, dist


def pooled_other_knn(X, codes, k: int, work_dtype=None):
    """Each point's k nearest points among all other classes (one search per class)."""
    torch = load_torch()
    n = X.shape[0]
    idx, dist = _empty(n, k, X.device)
    for c in range(int(codes.max()) + 1):
        rows = torch.nonzero(codes == c).ravel()
        others = torch.nonzero(codes != c).ravel()
        kc = min(k, len(others))
        if kc < 1 or len(rows) == 0:
            continue
        i, d = block_knn(X[rows], X[others], kc, work_dtype=work_dtype)
        idx[rows, :kc], dist[rows, :kc] = others[i], d
    return idx, dist


class DeviceLists:
    """A fit's neighbour lists searched on the device, as the affinity modes ask for them.

    The lists provider of :class:`ctsne.neighbors.provider.NeighborLists`'s interface
    (``X``, ``classes``, ``standard``, ``standard_for_classes``, ``searched_standard``,
    ``balanced``, ``own_class``, ``pooled_others``, ``merges_exactly``, ``index``) with the
    lists as device tensors: a mode's rule, ``"auto"``'s included, then runs as written on
    lists that never leave the device. The standard lists come from the plan's search
    (:func:`search_plan`, :func:`standard_knn`); the by-class lists from the exact blocks
    where the plan is "device", else, request by request, from the numba engine's
    by-class searches (a host :class:`~ctsne.neighbors.provider.NeighborLists`), moved to
    the device.

    Parameters
    ----------
    X : ndarray (n, p)
        At a safe scale; kept on the host too (the counterpart trust reads samples of it).
    classes : ndarray of int (n,) or None
        A single class is kept as None.
    device : torch.device
    work_dtype, random_state, n_jobs, method, metric
        As for :func:`standard_knn`.

    Attributes
    ----------
    plan : str
        Where the standard lists are searched ("device", "faiss" or "host").
    """

    def __init__(self, X: np.ndarray, classes, device, work_dtype=None, random_state=None,
                 n_jobs=None, method: str = "auto", metric: str = "euclidean"):
        torch = load_torch()
        from ..neighbors.provider import by_class

        classes = by_class(classes)
        self.X, self.classes, self.device = X, classes, device
        self.plan = search_plan(X.shape[0], device, method, metric)
        self.Xd = torch.as_tensor(np.ascontiguousarray(X, dtype=np.float64), device=device)
        self.codes = (None if classes is None else
                      torch.as_tensor(classes, device=device))
        self.search = dict(work_dtype=work_dtype)
        self.random_state, self.n_jobs = random_state, n_jobs
        self.method, self.metric = method, metric
        self._own = None
        self._host = None

    def _host_lists(self):
        """The numba engine's provider, for the by-class lists the plan cannot search."""
        if self._host is None:
            from ..neighbors.provider import NeighborLists

            self._host = NeighborLists(self.X, self.classes, method=self.method,
                                       metric=self.metric, random_state=self.random_state,
                                       n_jobs=self.n_jobs)
        return self._host

    def _to_device(self, *arrays):
        torch = load_torch()
        return tuple(torch.as_tensor(np.ascontiguousarray(a), device=self.device)
                     for a in arrays)

    def index(self):
        """None: the device's searches keep no index for a probe."""
        return None

    def merges_exactly(self, k: int) -> bool:
        """False: the device's searches merge no lists (no search is saved by guessing)."""
        return False

    def standard(self, k: int):
        """Each point's ``k`` nearest others, ``(idx, dist)`` tensors (n, k)."""
        return standard_knn(self.Xd, k, self.plan, random_state=self.random_state,
                            n_jobs=self.n_jobs, method=self.method, metric=self.metric,
                            **self.search)

    def standard_for_classes(self, k: int):
        """:meth:`standard` and True: the device's lists are each search's own answer."""
        return (*self.standard(k), True)

    searched_standard = standard

    def own_class(self, k: int):
        """Each point's ``k`` nearest points of its own class (found once)."""
        if self._own is None or self._own[0] != k:
            if self.plan == "device":
                own = own_class_knn(self.Xd, self.codes, k, **self.search)
            else:
                own = self._to_device(*self._host_lists().own_class(k))
            self._own = (k, *own)
        return self._own[1], self._own[2]

    def balanced(self, k: int) -> BalancedLists:
        """The own-class lists and the other-class ones, per class or pooled
        (:func:`ctsne.neighbors.class_lists.block_width_for`)."""
        if self.plan != "device":
            b = self._host_lists().balanced(k)
            return BalancedLists(self.codes, k, *self._to_device(
                b.own_idx, b.own_dist, b.other_idx, b.other_dist), b.block_width)
        own_i, own_d = self.own_class(k)
        width = block_width_for(k, int(self.codes.max()) + 1)
        if width is None:
            o_i, o_d = pooled_other_knn(self.Xd, self.codes, k, **self.search)
        else:
            o_i, o_d = other_class_knn(self.Xd, self.codes, width, **self.search)
        return BalancedLists(self.codes, k, own_i, own_d, o_i, o_d, width)

    def pooled_others(self, k: int, own_idx=None):
        """Each point's ``k`` nearest points of all other classes."""
        if self.plan != "device":
            host_own = None if own_idx is None else own_idx.cpu().numpy()
            return self._to_device(*self._host_lists().pooled_others(k, host_own))
        return pooled_other_knn(self.Xd, self.codes, k, **self.search)
