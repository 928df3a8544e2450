"""Barnes-Hut repulsion on a compressed 2^d-tree (d = 1, 2, 3), parallel over point groups.

Tree. Points are quantised on a 2^L grid over their bounding cube and sorted by Morton
(Z-order) key, so every cell is a contiguous run ``[lo, hi)`` of the sorted points. The
tree is *compressed*: a node's cell is the smallest cell holding all its points (the
common key prefix of its first and last point), so there are no single-child chains,
fewer than 2m nodes, and a tight cluster gets a small cell whatever the embedding's span.
Leaves hold up to ``_LEAF_SIZE`` points. Each node keeps its count, centre of mass and
second moments about that centre.

Opening criterion. A cell of side s (cells are cubes, so s is also the largest side) is
summarised when

    s < θ · dist(centre of mass, target)

and it never holds the target. Summaries are quadrupole-corrected: the second-order
Taylor term of the kernel about the centre of mass, from the cell's second moments, is
added (the first-order term vanishes about the centre of mass). Plain monopole BH
underestimates Z systematically (t is subharmonic far away) and at θ = 0.5 misses
Z by 2–6·10⁻³ on t-SNE-like layouts; the quadrupole term brings it to ~10⁻⁵ and the force
error to a few 10⁻⁴, for well under twice the work, which beats a monopole with a smaller
θ at equal accuracy. With the side as size the criterion is looser than with the diagonal
(faster, still ~20× inside the accuracy targets).

Traversal. Points are walked in groups (a subtree of at most ``_GROUP`` points): the tree
is descended once per group with the distance measured to the group's bounding box,
which is a stricter test than for any single member, and the resulting lists of far cells
and near points are then swept for each member in tight loops. This trades a few more
interactions for far fewer branchy tree walks.

Coincident points. The grid depth is capped (L levels); a cell at the cap is a leaf
however many points it holds. It is always summarised, also for its own points (through
the centre of mass of the *others*), so m duplicates cost O(m), not O(m²); the capped cell
is 2^-L of the span, far below any scale t-SNE resolves.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["repulsion_bh"]

# Grid depth per output dimension: d·L key bits must fit a non-negative int64, and L stays
# inside float64's 52-bit mantissa so the quantisation is meaningful.
_LEVELS = {1: 40, 2: 31, 3: 21}
# Leaves hold up to this many points; below it an exact loop beats descending further.
_LEAF_SIZE = 8
# Points sharing one tree walk.
_GROUP = 32
# Row layout of the per-node summary table: centre (3), count, moments xx yy zz xy xz yz,
# trace. Output dimensions below 3 are padded with zeros, which add nothing to any sum.
_NF = 11
# Floating-point reassociation lets LLVM vectorise the sums over interaction lists.
_FAST = {"reassoc", "contract", "arcp", "nsz"}


@numba.njit(parallel=True, cache=True)
def _morton_keys(Y, origin, scale, levels):
    n, d = Y.shape
    top = (1 << levels) - 1
    keys = np.zeros(n, dtype=np.int64)
    for i in numba.prange(n):
        key = 0
        for k in range(d):
            q = int((Y[i, k] - origin[k]) * scale)
            q = min(max(q, 0), top)
            for b in range(levels):
                if (q >> b) & 1:
                    key |= 1 << (b * d + k)
        keys[i] = key
    return keys


@numba.njit(cache=True)
def _common_level(a, b, d, levels):
    """Number of leading d-bit digits that keys ``a`` and ``b`` share."""
    x = a ^ b
    if x == 0:
        return levels
    p = 0
    while x > 1:
        x >>= 1
        p += 1
    return levels - 1 - p // d


@numba.njit(cache=True)
def _build_tree(keys, Y3, d, levels, leaf_size):
    """Compressed tree over sorted keys in breadth-first order (children contiguous).

    Returns int arrays ``lo, hi, level, first, nchild`` and the ``(nodes, _NF)`` summary.
    """
    n = keys.shape[0]
    cap = 2 * n + 1
    lo = np.empty(cap, dtype=np.int64)
    hi = np.empty(cap, dtype=np.int64)
    level = np.empty(cap, dtype=np.int64)
    first = np.zeros(cap, dtype=np.int64)
    nchild = np.zeros(cap, dtype=np.int64)
    mask = (1 << d) - 1
    lo[0], hi[0] = 0, n
    count = 1
    node = 0
    while node < count:
        a, b = lo[node], hi[node]
        lev = _common_level(keys[a], keys[b - 1], d, levels)
        level[node] = lev
        if b - a > leaf_size and lev < levels:
            # Children: runs of equal digit at the first level where the keys differ (the
            # first and last keys differ there, so there are at least two).
            shift = d * (levels - lev - 1)
            first[node] = count
            s = a
            while s < b:
                digit = (keys[s] >> shift) & mask
                left, right = s + 1, b
                while left < right:  # first index whose digit exceeds ``digit``
                    mid = (left + right) // 2
                    if ((keys[mid] >> shift) & mask) > digit:
                        right = mid
                    else:
                        left = mid + 1
                lo[count], hi[count] = s, left
                count += 1
                s = left
            nchild[node] = count - first[node]
        node += 1

    # Summaries bottom-up (reverse breadth-first order meets children first). Leaves sum
    # their points directly; parents combine children by the parallel-axis rule, which
    # avoids the cancellation of raw second moments far from the origin.
    summ = np.zeros((count, _NF))
    for node in range(count - 1, -1, -1):
        m = hi[node] - lo[node]
        if nchild[node] == 0:
            for j in range(lo[node], hi[node]):
                for k in range(3):
                    summ[node, k] += Y3[j, k]
            for k in range(3):
                summ[node, k] /= m
            for j in range(lo[node], hi[node]):
                _add_moments(summ, node, Y3[j, 0] - summ[node, 0], Y3[j, 1] - summ[node, 1],
                             Y3[j, 2] - summ[node, 2], 1.0)
        else:
            for c in range(first[node], first[node] + nchild[node]):
                for k in range(3):
                    summ[node, k] += (hi[c] - lo[c]) * summ[c, k]
            for k in range(3):
                summ[node, k] /= m
            for c in range(first[node], first[node] + nchild[node]):
                for k in range(4, 10):
                    summ[node, k] += summ[c, k]
                _add_moments(summ, node, summ[c, 0] - summ[node, 0], summ[c, 1] - summ[node, 1],
                             summ[c, 2] - summ[node, 2], hi[c] - lo[c])
        summ[node, 3] = m
        summ[node, 10] = summ[node, 4] + summ[node, 5] + summ[node, 6]
    return lo[:count], hi[:count], level[:count], first[:count], nchild[:count], summ


@numba.njit(cache=True, inline="always")
def _add_moments(summ, node, x, y, z, w):
    summ[node, 4] += w * x * x
    summ[node, 5] += w * y * y
    summ[node, 6] += w * z * z
    summ[node, 7] += w * x * y
    summ[node, 8] += w * x * z
    summ[node, 9] += w * y * z


@numba.njit(cache=True)
def _groups(lo, hi, first, nchild, group_size):
    """Nodes of at most ``group_size`` points (or leaves) covering all points, in order."""
    out = np.empty(hi[0] - lo[0], dtype=np.int64)
    stack = np.empty(hi.shape[0], dtype=np.int64)
    ng, top = 0, 1
    stack[0] = 0
    while top > 0:
        top -= 1
        node = stack[top]
        if hi[node] - lo[node] <= group_size or nchild[node] == 0:
            out[ng] = node
            ng += 1
        else:
            # Pushed in reverse so they pop in key order: neighbouring groups stay adjacent.
            for c in range(first[node] + nchild[node] - 1, first[node] - 1, -1):
                stack[top] = c
                top += 1
    return out[:ng]


@numba.njit(cache=True)
def _grow(buf, size):
    new = np.empty((buf.shape[0], 2 * buf.shape[1]))
    new[:, :size] = buf[:, :size]
    return new


@numba.njit(parallel=True, cache=True, fastmath=_FAST)
def _traverse(Y3, lo, hi, first, nchild, summ, crit, groups, group_size, stack_size):
    """Per-point force and t row sums (sorted order) by one tree walk per group.

    ``crit[node]`` is (s/θ)²: the node is summarised for a group when the squared distance
    from its centre of mass to the group's bounding box exceeds it; negative values mark
    nodes summarised whenever they do not hold the group's points.
    """
    n = Y3.shape[0]
    F = np.zeros((n, 3))
    zrow = np.zeros(n)
    ng = groups.shape[0]
    half = (ng + 1) // 2
    for it in numba.prange(ng):
        # Even groups first, then odd: a static split hands each thread both dense and
        # sparse regions of the Morton order.
        gi = 2 * it if it < half else 2 * (it - half) + 1
        g = groups[gi]
        glo, ghi = lo[g], hi[g]
        bmin = np.empty(3)
        bmax = np.empty(3)
        for k in range(3):
            bmin[k] = Y3[glo, k]
            bmax[k] = Y3[glo, k]
        for j in range(glo + 1, ghi):
            for k in range(3):
                bmin[k] = min(bmin[k], Y3[j, k])
                bmax[k] = max(bmax[k], Y3[j, k])
        cells = np.empty((_NF, 256))
        near = np.empty((3, 256))
        nc = 0
        nn = 0
        stack = np.empty(stack_size, dtype=np.int64)
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            c = stack[top]
            a, b = lo[c], hi[c]
            overlap = a < ghi and glo < b
            if not overlap:
                r2 = 0.0
                for k in range(3):
                    gap = max(bmin[k] - summ[c, k], summ[c, k] - bmax[k], 0.0)
                    r2 += gap * gap
                if crit[c] < r2:
                    if nc == cells.shape[1]:
                        cells = _grow(cells, nc)
                    for f in range(_NF):
                        cells[f, nc] = summ[c, f]
                    nc += 1
                    continue
            if nchild[c] > 0:
                for ch in range(first[c], first[c] + nchild[c]):
                    stack[top] = ch
                    top += 1
            elif overlap and b - a > group_size:
                # Only a capped leaf can exceed the group size: it is this group.
                _capped_self(Y3, summ, c, a, b, F, zrow)
            else:
                while nn + (b - a) > near.shape[1]:
                    near = _grow(near, nn)
                for j in range(a, b):
                    for k in range(3):
                        near[k, nn] = Y3[j, k]
                    nn += 1
        for i in range(glo, ghi):
            _sweep(Y3, i, cells, nc, near, nn, F, zrow)
    return F, zrow.sum()


@numba.njit(cache=True, fastmath=_FAST)
def _sweep(Y3, i, cells, nc, near, nn, F, zrow):
    """Add point ``i``'s interactions with a group's far cells and near points."""
    y0, y1, y2 = Y3[i, 0], Y3[i, 1], Y3[i, 2]
    z = 0.0
    f0 = f1 = f2 = 0.0
    for k in range(nc):
        x0 = y0 - cells[0, k]
        x1 = y1 - cells[1, k]
        x2 = y2 - cells[2, k]
        t = 1.0 / (1.0 + x0 * x0 + x1 * x1 + x2 * x2)
        # Second moments M times x, and xᵀMx, for the quadrupole terms.
        m0 = cells[4, k] * x0 + cells[7, k] * x1 + cells[8, k] * x2
        m1 = cells[7, k] * x0 + cells[5, k] * x1 + cells[9, k] * x2
        m2 = cells[8, k] * x0 + cells[9, k] * x1 + cells[6, k] * x2
        xmx = x0 * m0 + x1 * m1 + x2 * m2
        cnt, tr = cells[3, k], cells[10, k]
        t2 = t * t
        t3 = t2 * t
        z += cnt * t + (4.0 * xmx * t - tr) * t2
        w = cnt * t2 + (12.0 * xmx * t - 2.0 * tr) * t3
        q = 4.0 * t3
        f0 += w * x0 - q * m0
        f1 += w * x1 - q * m1
        f2 += w * x2 - q * m2
    for k in range(nn):
        x0 = y0 - near[0, k]
        x1 = y1 - near[1, k]
        x2 = y2 - near[2, k]
        t = 1.0 / (1.0 + x0 * x0 + x1 * x1 + x2 * x2)
        z += t
        w = t * t
        f0 += w * x0
        f1 += w * x1
        f2 += w * x2
    # The near list holds i itself once (t = 1, no force), unless i sits in a capped
    # leaf, for which _capped_self pre-added the 1.
    zrow[i] += z - 1.0
    F[i, 0] += f0
    F[i, 1] += f1
    F[i, 2] += f2


@numba.njit(cache=True)
def _capped_self(Y3, summ, c, a, b, F, zrow):
    """Points of a capped leaf against the others in it, through the others' centre."""
    others = b - a - 1
    for i in range(a, b):
        zrow[i] += 1.0
        if others == 0:
            continue
        d2 = 0.0
        x = np.empty(3)
        for k in range(3):
            x[k] = Y3[i, k] - ((b - a) * summ[c, k] - Y3[i, k]) / others
            d2 += x[k] * x[k]
        t = 1.0 / (1.0 + d2)
        zrow[i] += others * t
        for k in range(3):
            F[i, k] += others * t * t * x[k]


def repulsion_bh(Y: np.ndarray, theta: float = 0.5) -> tuple[np.ndarray, float]:
    """Barnes-Hut t-SNE repulsion over all rows of ``Y``.

    Parameters
    ----------
    Y : ndarray (m, d), d in {1, 2, 3}
        Embedding coordinates.
    theta : float, default 0.5
        Opening angle: a cell of side s is summarised (quadrupole-corrected) when
        ``s < theta · distance``. 0 gives the exact sums, up to rounding.

    Returns
    -------
    F : ndarray (m, d)
        ``F_i = Σ_{j≠i} t_ij² (y_i − y_j)`` with ``t_ij = 1 / (1 + |y_i − y_j|²)``.
    Z : float
        ``Σ_{k≠l} t_kl``.
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] not in _LEVELS:
        raise ValueError(f"Barnes-Hut needs Y of shape (m, d) with d in 1, 2, 3; got {Y.shape}")
    if not theta >= 0.0:
        raise ValueError(f"theta must be non-negative, got {theta}")
    m, d = Y.shape
    if m < 2:
        return np.zeros_like(Y), 0.0
    origin = Y.min(axis=0)
    side = float(np.max(Y.max(axis=0) - origin))
    if not np.isfinite(side):
        raise ValueError("Y contains non-finite values")
    if side == 0.0:
        side = 1.0  # all points coincide: they share one capped leaf
    levels = _LEVELS[d]
    keys = _morton_keys(np.ascontiguousarray(Y), origin, float(2**levels) / side, levels)
    order = np.argsort(keys, kind="stable")
    Y3 = np.zeros((m, 3))
    Y3[:, :d] = Y[order]
    lo, hi, level, first, nchild, summ = _build_tree(keys[order], Y3, d, levels, _LEAF_SIZE)

    size = side * np.exp2(-level.astype(np.float64))
    with np.errstate(divide="ignore"):
        crit = (size / theta) ** 2 if theta > 0 else np.full(len(lo), np.inf)
    # A single point is its own exact summary; capped leaves are always summarised.
    crit[(hi - lo == 1) | ((level >= levels) & (hi - lo > 1))] = -1.0
    groups = _groups(lo, hi, first, nchild, _GROUP)
    stack_size = levels * ((1 << d) - 1) + 2
    F3, Z = _traverse(Y3, lo, hi, first, nchild, summ, crit, groups, _GROUP, stack_size)
    F = np.empty((m, d))
    F[order] = F3[:, :d]
    return F, float(Z)
