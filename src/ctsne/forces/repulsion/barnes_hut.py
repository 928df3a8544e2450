"""Barnes-Hut repulsion on a compressed 2^d-tree (d = 1, 2, 3), parallel over point groups.

Tree. Points are quantised on a 2^L grid over their bounding cube and sorted by Morton
(Z-order) key, so every cell is a contiguous run ``[lo, hi)`` of the sorted points. The
tree is *compressed*: a node's cell is the smallest cell holding all its points (the
common key prefix of its first and last point), so there are no single-child chains,
fewer than 2m nodes, and a tight cluster gets a small cell whatever the embedding's span.
Leaves hold up to ``BH_LEAF_SIZE`` points (:mod:`ctsne.tuning`). Each node keeps its count,
centre of mass and second moments about that centre.

Opening criterion. A cell of side s (cells are cubes, so s is also the largest side) is
summarised when

    s < θ · dist(centre of mass, target)

and it never holds the target. Summaries are quadrupole-corrected: the second-order
Taylor term of the kernel about the centre of mass, from the cell's second moments, is
added (the first-order term vanishes about the centre of mass): monopole-only BH
underestimates Z systematically (t is subharmonic far from a cell), and reaches the
quadrupole's accuracy only at a much smaller θ. At that accuracy the side (the looser,
cheaper measure than the diagonal) is the one used.

Traversal. Points are taken in groups of at most ``BH_GROUP`` consecutive points in key
order (whole subtrees, merged while they fit). The tree is walked once per group, with
the distance measured from a cell's centre of mass to the group's bounding box, into a
list of far cells and a list of near points (taken exactly); each member then sweeps both
lists in tight, vectorised loops: a few more interactions for far fewer branchy tree
walks. It runs in parallel over groups.

Coincident points. The grid depth is capped (L levels); a cell at the cap is a leaf
however many points it holds. It is always summarised, also for its own points (through
the centre of mass of the *others*), so m duplicates cost O(m), not O(m²); the capped cell
is 2^-L of the span, far below any scale t-SNE resolves.
"""

from __future__ import annotations

import numba
import numpy as np

from ..._parallel import threaded
from ...tuning import BH_GROUP, BH_LEAF_SIZE, BH_PARALLEL_WALK_FROM, BH_SINGLE_FROM
from ._zorder import bounding_box, key_order, morton_keys, sort_points, unsort

__all__ = ["repulsion_bh"]

# Grid depth per output dimension: d·L key bits must fit a non-negative int64, and L stays
# inside float64's 52-bit mantissa so the quantisation is meaningful.
_LEVELS = {1: 40, 2: 31, 3: 21}
# Leaves hold up to BH_LEAF_SIZE points (below it an exact loop beats descending further),
# and BH_GROUP points share one tree walk (ctsne.tuning).
# Starting capacity of a group's far-cell and near-point lists (grown by _grow when full);
# read inside the walk, so kept here: numba compiles its value into the cached kernel.
_LIST_START = 256
# Row layout of the per-node summary table: centre (3), count, moments xx yy zz xy xz yz,
# trace. Output dimensions below 3 are padded with zeros, which add nothing to any sum.
_NF = 11
# From BH_PARALLEL_WALK_FROM points the traversal runs on the thread pool (below, a launch
# costs more than it saves); from BH_SINGLE_FROM points the float32 sweeps are used.
# From this opening angle on (d ≤ 2), the sweeps run in float32: the angle's error dwarfs
# float32 rounding. Smaller angles, and θ = 0, stay in float64.
_SINGLE_FROM_THETA = 0.3
# Floating-point reassociation lets LLVM vectorise the sums over interaction lists; the
# functions compiled with it are inlined into their one caller (ctsne._parallel's note).
_FAST = {"reassoc", "contract", "arcp", "nsz"}


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
    """Contiguous point ranges ``[start, stop)`` of at most ``group_size`` points.

    Subtrees small enough (or leaves) are taken in key order and runs of consecutive
    ones are merged up to the size limit: neighbours in key order are mostly neighbours
    in space, and fuller groups share each tree walk among more points. A capped leaf
    larger than the limit stays a group of its own.
    """
    n = hi[0] - lo[0]
    bounds = np.empty(n + 1, dtype=np.int64)
    stack = np.empty(hi.shape[0], dtype=np.int64)
    bounds[0] = 0
    ng, top = 0, 1
    stack[0] = 0
    while top > 0:
        top -= 1
        node = stack[top]
        a, b = lo[node], hi[node]
        if b - a <= group_size or nchild[node] == 0:
            if b - bounds[ng] > group_size and a > bounds[ng]:
                ng += 1  # the open group is full: close it where this node starts
                bounds[ng] = a
        else:
            # Pushed in reverse so they pop in key order.
            for c in range(first[node] + nchild[node] - 1, first[node] - 1, -1):
                stack[top] = c
                top += 1
    ng += 1
    bounds[ng] = n
    return bounds[:ng + 1]


@numba.njit(cache=True)
def _grow(buf, size):
    new = np.empty((buf.shape[0], 2 * buf.shape[1]))
    # element by element: a slice assignment compiles numba's shape-mismatch error, whose
    # message formatting is costly to compile
    for r in range(buf.shape[0]):
        for c in range(size):
            new[r, c] = buf[r, c]
    return new


@threaded(BH_PARALLEL_WALK_FROM, fastmath=_FAST, error_model="numpy")
def _traverse(Y3, walk, summ, groups, group_size, stack_size, F, zrow, start, stop):
    """Per-point force and t row sums (sorted order) into F and zrow (zeroed), one tree
    walk per group, for groups ``start … stop − 1`` (of the order below), float64 sweeps.
    The float32 sweeps are another kernel (:func:`_traverse_single`), not a flag of this
    one: a run needs one of them, and each is costly to compile."""
    ng = groups.shape[0] - 1
    half = (ng + 1) // 2
    for it in range(start, stop):
        # Even groups first, then odd: a static split hands each thread both dense and
        # sparse regions of the Morton order.
        gi = 2 * it if it < half else 2 * (it - half) + 1
        glo, ghi = groups[gi], groups[gi + 1]
        cells, nc, near, nn = _walk_group(Y3, walk, summ, glo, ghi, group_size, stack_size, F,
                                          zrow)
        for i in range(glo, ghi):
            _sweep(Y3, i, cells, nc, near, nn, F, zrow)


@threaded(BH_PARALLEL_WALK_FROM, fastmath=_FAST, error_model="numpy")
def _traverse_single(Y3, walk, summ, groups, group_size, stack_size, F, zrow, start, stop):
    """:func:`_traverse` with the float32 sweeps (:func:`_sweep_group_single`)."""
    ng = groups.shape[0] - 1
    half = (ng + 1) // 2
    for it in range(start, stop):
        gi = 2 * it if it < half else 2 * (it - half) + 1
        glo, ghi = groups[gi], groups[gi + 1]
        cells, nc, near, nn = _walk_group(Y3, walk, summ, glo, ghi, group_size, stack_size, F,
                                          zrow)
        _sweep_group_single(Y3, glo, ghi, cells, nc, near, nn, F, zrow)


@numba.njit(fastmath=_FAST, error_model="numpy", inline="always")
def _walk_group(Y3, walk, summ, glo, ghi, group_size, stack_size, F, zrow):
    """The far cells and near points of points ``glo:ghi`` (capped leaves holding the
    group are added into F and zrow directly): ``(cells, nc, near, nn)``.

    ``walk`` packs what the walk reads of a node into one 64-byte row: centre of mass (3),
    crit, lo, hi, first child, number of children. ``crit`` is (s/θ)²: the node is
    summarised for the group when the squared distance from its centre of mass to the
    group's bounding box exceeds it; negative values mark nodes summarised whenever they
    do not hold the group's points.
    """
    bmin = np.empty(3)
    bmax = np.empty(3)
    for k in range(3):
        bmin[k] = Y3[glo, k]
        bmax[k] = Y3[glo, k]
    for j in range(glo + 1, ghi):
        for k in range(3):
            bmin[k] = min(bmin[k], Y3[j, k])
            bmax[k] = max(bmax[k], Y3[j, k])
    cells = np.empty((_NF, _LIST_START))
    near = np.empty((3, _LIST_START))
    # int64 from the start: a literal 0 would also compile Literal[int](0) variants of the
    # sweeps while the counters' type is being inferred
    nc = np.int64(0)
    nn = np.int64(0)
    stack = np.empty(stack_size, dtype=np.int64)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        c = stack[top]
        a, b = int(walk[c, 4]), int(walk[c, 5])
        overlap = a < ghi and glo < b
        if not overlap:
            r2 = 0.0
            for k in range(3):
                gap = max(bmin[k] - walk[c, k], walk[c, k] - bmax[k], 0.0)
                r2 += gap * gap
            if walk[c, 3] < r2:
                if nc == cells.shape[1]:
                    cells = _grow(cells, nc)
                for f in range(_NF):
                    cells[f, nc] = summ[c, f]
                nc += 1
                continue
        if walk[c, 7] > 0:
            fc = int(walk[c, 6])
            for ch in range(fc, fc + int(walk[c, 7])):
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
    return cells, nc, near, nn


@numba.njit(fastmath=_FAST, error_model="numpy", inline="always")
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


@numba.njit(fastmath=_FAST, error_model="numpy", inline="always")
def _sweep_group_single(Y3, glo, ghi, cells, nc, near, nn, F, zrow):
    """``_sweep`` for d ≤ 2 (third coordinate and moments zero), for the whole group in
    float32, coordinates relative to the group's first point: twice the SIMD width.
    Rounding (~1e-7 relative per term, 2e-5 of a unit in a far cell's offset) stays far
    below the opening-angle error."""
    f32 = np.float32
    ox, oy = Y3[glo, 0], Y3[glo, 1]
    c = np.empty((7, nc), dtype=np.float32)
    for k in range(nc):
        c[0, k] = f32(cells[0, k] - ox)
        c[1, k] = f32(cells[1, k] - oy)
        c[2, k] = f32(cells[3, k])
        c[3, k] = f32(cells[4, k])
        c[4, k] = f32(cells[5, k])
        c[5, k] = f32(cells[7, k])
        c[6, k] = f32(cells[10, k])
    q = np.empty((2, nn), dtype=np.float32)
    for k in range(nn):
        q[0, k] = f32(near[0, k] - ox)
        q[1, k] = f32(near[1, k] - oy)
    one, two, four, twelve = f32(1.0), f32(2.0), f32(4.0), f32(12.0)
    for i in range(glo, ghi):
        y0 = f32(Y3[i, 0] - ox)
        y1 = f32(Y3[i, 1] - oy)
        z = f32(0.0)
        f0 = f32(0.0)
        f1 = f32(0.0)
        for k in range(nc):
            x0 = y0 - c[0, k]
            x1 = y1 - c[1, k]
            t = one / (one + x0 * x0 + x1 * x1)
            m0 = c[3, k] * x0 + c[5, k] * x1
            m1 = c[5, k] * x0 + c[4, k] * x1
            xmx = x0 * m0 + x1 * m1
            t2 = t * t
            t3 = t2 * t
            z += c[2, k] * t + (four * xmx * t - c[6, k]) * t2
            w = c[2, k] * t2 + (twelve * xmx * t - two * c[6, k]) * t3
            g = four * t3
            f0 += w * x0 - g * m0
            f1 += w * x1 - g * m1
        for k in range(nn):
            x0 = y0 - q[0, k]
            x1 = y1 - q[1, k]
            t = one / (one + x0 * x0 + x1 * x1)
            z += t
            w = t * t
            f0 += w * x0
            f1 += w * x1
        zrow[i] += np.float64(z) - 1.0
        F[i, 0] += f0
        F[i, 1] += f1


@numba.njit(cache=True)
def _capped_self(Y3, summ, c, a, b, F, zrow):
    """Points of a capped leaf against the others in it, through the others' centre."""
    others = b - a - 1
    for i in range(a, b):
        zrow[i] += 1.0
        if others == 0:
            continue
        # y_i minus the others' centre is m/(m − 1)·(y_i − centre of all m): no cancellation.
        scale = (b - a) / others
        x0 = scale * (Y3[i, 0] - summ[c, 0])
        x1 = scale * (Y3[i, 1] - summ[c, 1])
        x2 = scale * (Y3[i, 2] - summ[c, 2])
        t = 1.0 / (1.0 + x0 * x0 + x1 * x1 + x2 * x2)
        zrow[i] += others * t
        w = others * t * t
        F[i, 0] += w * x0
        F[i, 1] += w * x1
        F[i, 2] += w * x2


def repulsion_bh(Y: np.ndarray, theta: float = 0.5) -> tuple[np.ndarray, float]:
    """Barnes-Hut t-SNE repulsion over all rows of ``Y``.

    Parameters
    ----------
    Y : ndarray (m, d), d in {1, 2, 3}
        Embedding coordinates.
    theta : float, default 0.5
        Opening angle: a cell of side s is summarised (quadrupole-corrected) when
        ``s < theta · distance``. 0 gives the exact sums, up to rounding (and up to the
        2^-L-sized cells of coincident points, which are always summarised).

    Returns
    -------
    F : ndarray (m, d)
        ``F_i = Σ_{j≠i} t_ij² (y_i − y_j)`` with ``t_ij = 1 / (1 + |y_i − y_j|²)``.
    Z : float
        ``Σ_{k≠l} t_kl``.
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] not in _LEVELS:
        raise ValueError(f"Barnes-Hut needs Y of shape (m, d) with d in 1, 2, 3; got {Y.shape}")
    if not theta >= 0.0:
        raise ValueError(f"theta must be non-negative, got {theta}")
    m, d = Y.shape
    if m < 2:
        return np.zeros_like(Y), 0.0
    origin, top = bounding_box(Y, work=m)  # numpy's axis-0 min/max is slow for few columns
    side = float(np.max(top - origin))
    if not np.isfinite(side):
        raise ValueError("Y contains non-finite values")
    if side == 0.0:
        side = 1.0  # all points coincide: they share one capped leaf
    return _repulsion(Y, theta, side, origin)


def _repulsion(Y, theta, side, origin):
    m, d = Y.shape
    levels = _LEVELS[d]
    keys = morton_keys(Y, origin, float(2**levels) / side, levels, work=m)
    order, skeys = key_order(keys, levels * d)
    Y3 = sort_points(Y, order, work=m)
    lo, hi, level, first, nchild, summ = _build_tree(skeys, Y3, d, levels, BH_LEAF_SIZE)

    size = side * np.exp2(-level.astype(np.float64))
    with np.errstate(divide="ignore"):
        crit = (size / theta) ** 2 if theta > 0 else np.full(len(lo), np.inf)
    # A single point is its own exact summary; capped leaves are always summarised.
    crit[(hi - lo == 1) | ((level >= levels) & (hi - lo > 1))] = -1.0
    groups = _groups(lo, hi, first, nchild, BH_GROUP)
    walk = np.column_stack([summ[:, :3], crit, lo, hi, first, nchild])
    stack_size = levels * ((1 << d) - 1) + 2
    # float32 sweeps where the opening angle, not rounding, sets the error, and the
    # points are many (a few points are mostly near pairs, summed exactly in float64)
    single = d <= 2 and theta >= _SINGLE_FROM_THETA and m >= BH_SINGLE_FROM
    traverse = _traverse_single if single else _traverse
    F3, zrow = np.zeros((m, 3)), np.zeros(m)
    # groups split evenly between the threads (each thread gets dense and sparse regions
    # by the kernel's even-then-odd order); a group's sums do not depend on the split
    traverse.run(Y3, walk, summ, groups, BH_GROUP, stack_size, F3, zrow,
                 items=len(groups) - 1, work=m)
    # summed here in a fixed order, whatever the thread count
    return unsort(F3, order, d, work=m), float(zrow.sum())
