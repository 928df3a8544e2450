"""Size thresholds, cost models and block sizes: how a pass runs, not what it computes.

Each name decides which implementation serves a call (a numpy twin, one compiled build on
one thread or in parts on ctsne's threads, numba's ``prange`` twin), where a cost model
sends a group, or how large a pass's parts, blocks or leaves are. Changing one changes
speed and compile time, not the result, except where its line says the result moves (in
its last bits, or within the method's accuracy). Beside each value, the benchmark
(``benchmarks/``) that measures its trade-off; BENCHMARKS.md has the current figures.

Not here: constants that define results (tolerances, the prior's defaults, error
models), and sizes read inside a numba kernel's body (e.g. ``neighbors.kdtree.LEAF_SIZE``):
numba compiles a global's value into the cached kernel and checks only the kernel's own
file for changes, so such a size stays beside its kernel, where an edit recompiles it.

No imports: the modules that read these import this one at no cost.
"""

# --- the input affinities: passes over the (n, k) neighbour tables, once per fit -----------

# (n, k) passes on the threads from here; below, a pass takes milliseconds: not worth a build
PARALLEL_FROM_ENTRIES = 200_000  # bench_compile.py, bench_threads.py
# (n, k) passes in numpy twins below: ~0.25 s more at 10⁶ entries, 2-6 CPU-s less compile each
NUMPY_BELOW_ENTRIES = 1_000_000  # bench_compile.py --n 5000
# Most parts of C's rows in the transpose: each part holds a counter per point (8 bytes)
TRANSPOSE_PARTS = 8  # bench_balanced.py (the symmetrisation)
# Cᵀ values gathered per thread before the merge (256 KB): the gather's cache misses overlap
SYMMETRY_GATHER = 32_768  # bench_balanced.py (the symmetrisation)
# The prior-mixing sums in numpy below: no ~1 CPU-s build, ~30 ns an entry (30 ms at 10⁶)
MIXING_NUMPY_BELOW = 1_000_000  # bench_compile.py, bench_auto_real.py
# Rows a part of the table's class sums, on any thread count (their order: the sums' last bits)
MIXING_TABLE_ROWS = 4096  # bench_auto_real.py
# Most class sums the parts keep (parts × classes): with many classes, longer parts
MIXING_PART_CELLS = 1 << 21  # bench_auto_real.py
# Rows per Gram block of the trust's search; × POOLED_SAMPLE, the most pairs it sums directly
TRUST_ROWS = 500  # bench_auto_real.py
# Rows per Gram block of the trust's pooled lists: the block stays in cache until it is read
TRUST_POOLED_ROWS = 128  # bench_auto_real.py (priors of many classes, > 15 features)

# --- the neighbour searches -----------------------------------------------------------------

# Queries × neighbours from which a block-tree search runs on the threads
KDTREE_PARALLEL_FROM_WORK = 200_000  # bench_threads.py, bench_knn.py --exact
# Pairs × features from which a brute scan runs compiled, below in numpy (above: 1.3 s a 5k fit)
BRUTE_PARALLEL_FROM = 1e7  # bench_compile.py --n 5000
# Pairs per chunk of the numpy scan: its distance table stays within the L2 cache
BRUTE_SMALL_CHUNK = 1 << 16  # bench_compile.py (the small fits it serves)

# --- neighbours: which search answers a fit (exact, or pynndescent within its recall) -------

# Points up to which "auto" is exact at any width: brute force ≥ 1.46× pynndescent's speed at 40k
APPROX_ABOVE = 40_000  # bench_knn.py --wide (above: lists within pynndescent's recall)
# Most features for the k-d trees (scipy's, the block tree): beyond, trees prune too little
TREE_DIMS = 15  # bench_knn.py, bench_knn.py --wide (lists: the same but for rounding-close ties)
# Points up to which "auto" is exact in ≤ TREE_DIMS features: scipy's tree 2× faster at 250k, ~n²
TREE_MAX_N = 400_000  # bench_knn.py --n 100000 250000 500000 (above: pynndescent's recall)
# Fewest features for the block tree: in fewer scipy's tree is as fast or faster
BLOCK_TREE_DIMS = 8  # bench_knn.py --exact, bench_tree_ties.py
# Search size from which the block tree serves: below, scipy's takes < 1 s and nothing compiles
BLOCK_TREE_FROM = 20_000  # bench_knn.py --exact, bench_compile.py
# Points up to which "auto" is exact with the block tree: 1.3-14× pynndescent's speed at 500k
BLOCK_TREE_MAX_N = 1_000_000  # bench_knn.py --n 500000, --sets (above: pynndescent's recall)
# pynndescent in ≤ TREE_DIMS features: 4 trees, 2 rounds, 1.06-1.8× faster than its defaults
LOW_DIM_DESCENT = {"n_trees": 4, "n_iters": 2}  # bench_knn.py --sets (recall ≥ 0.998, not 1)
# Queries per search call: one call's (n, k + 1) answer and temporaries would take GBs at 10⁶
QUERY_CHUNK = 20_000  # bench_knn.py (a memory bound; the lists do not depend on it)
# Leaf size of scipy's tree: with k ≈ 90 a query reads many leaves; 0.77-0.93× its 16's time
KD_LEAF_SIZE = 64  # bench_knn.py, bench_tree_ties.py

# --- neighbours: lists by class (the balanced P's, and the orders "auto" finds lists in) -----

# Classes up to this size find their own lists by brute force: no search's fixed cost each
BRUTE_UP_TO = 2_000  # bench_balanced.py --classes 500
# Pairs up to which an approximate class's far and rest queries are brute-forced (~8× its graph)
BRUTE_PAIRS = 2e9  # bench_balanced.py --dims 50 (exact lists where pynndescent's would be)
# Far (point, query) pairs scanned exactly up to here; above, the tolerant tree (~2.5× faster)
SCAN_MAX_PAIRS = 4e8  # bench_balanced.py (above: lists within FAR_EPS's recall, ~0.9)
# Far searches over more pairs ask representatives only: ~2.7× faster at the same recall
REPS_FROM_PAIRS = 1e8  # bench_representatives.py (the far lists move: its TV distances)
# Neighbours own_class_rows tests one at a time (a column gathered row by row: a line an entry)
OWN_ROWS_SCREEN = 8  # bench_balanced.py --keep, bench_auto_real.py --diamonds
# ... while one keeps at most this share of the rows; then the rest are read whole
OWN_ROWS_SCREEN_KEEPS = 0.9  # bench_balanced.py --keep, bench_auto_real.py --diamonds
# Own-class points a skipping query may read: up to it, skipping is 1.1-3.2× faster than bits
SKIP_OWN_UP_TO = 10_000  # bench_pooled.py, --blobs (pooled lists move: exact, not the bits')
# Points sampled for a class's mean reads: 64 cost 4× for a mean telling ~200 from ~10,000
SKIP_SAMPLE = 16  # bench_pooled.py, bench_auto_real.py
# Fewest class bits (9+ classes) for skipping: with fewer bit searches a class apart costs 2×
SKIP_OWN_FROM_BITS = 4  # bench_pooled.py
# Points per block of the sample's distances: SKIP_SAMPLE × 4,096 float64 (0.5 MB) in cache
SKIP_SAMPLE_CHUNK = 4_096  # bench_pooled.py
# Merged entries (askers × k) from which the bits' merge and merged.py's merge use numba's pool
POOLED_PARALLEL_FROM_ENTRIES = 20_000  # bench_threads.py, bench_pooled.py
# Candidate distances (points × REPS_PER_POINT × k) from which that pass uses numba's pool
PARALLEL_FROM_CANDIDATES = 20_000  # bench_threads.py, bench_representatives.py
# Tasks a thread of the candidates' pass: each marks seen points over all n (4 bytes a point)
REPS_TASKS_PER_THREAD = 4  # bench_representatives.py
# Points (< BLOCK_TREE_DIMS features) from which the standard lists may come class by class
OWN_FIRST_FROM = TREE_MAX_N + 1  # bench_balanced.py --n 1000000 (exact, ~0.6× pynndescent's time)
# ... and with more: below, the block tree over all points takes ~0.65× the class trees' time
OWN_FIRST_BLOCK_FROM = BLOCK_TREE_MAX_N + 1  # bench_balanced.py --n 250000 500000
# Most classes for it: each point asks every other class's tree (30 classes: 1.35× the standard)
OWN_FIRST_CLASSES_UP_TO = 10  # bench_balanced.py --classes 30
# Share of probed points near another class up to which it runs: above, the standard P stays
OWN_FIRST_UP_TO = 0.5  # bench_balanced.py --keep
# Points its probe asks (a fixed seed: the order is a property of the data, not of a run)
OWN_FIRST_PROBE_SAMPLE = 1_000  # bench_balanced.py --n 1000000 --keep
# Pairs of the exact search of merged lists' unsure points; above, the standard search runs
MERGE_SEARCH_PAIRS = 1e9  # bench_balanced.py --dims 50 (4·10⁸ pairs: ~0.9 s)
# Points of the apart probe and of "auto"'s sampled rows: a share's standard error ≤ 0.03
MERGE_PROBE_SAMPLE = 300  # bench_balanced.py --dims 50, bench_auto_real.py
# Probed rows per block of the probe's distances (rows × n float64: 13 MB at 50,000 points)
MERGE_PROBE_ROWS = 32  # bench_balanced.py --dims 50

# --- the attraction and the gradient --------------------------------------------------------

# P's non-zeros from which the attraction's passes run on the threads (~0.1 ms of serial work)
ATTRACTION_PARALLEL_FROM_NNZ = 40_000  # bench_threads.py
# ... and from which in numba's pool: 10-20 % faster, but a build of ~1.2 CPU-s more
PRANGE_FROM_NNZ = 300_000  # bench_step.py, bench_compile.py
# Points above which the attraction reads P in reverse Cuthill-McKee order: partners in cache
LOCALITY_ABOVE = 50_000  # bench_step.py, bench_vs_opentsne.py --cases 250k 1M
# Non-zeros below which P's upper triangle is taken by numpy (no build), above by a kernel (6×)
UPPER_IN_NUMPY_BELOW = 2_000_000  # bench_compile.py
# P's non-zeros from which the KL's fixed part runs compiled (~1 CPU-s build, ~20 ns a non-zero)
KL_FIXED_PARALLEL_FROM_NNZ = 1_000_000  # bench_compile.py
# Coordinates from which the gradient is assembled in place (numpy: four temporaries a step)
ASSEMBLE_IN_PLACE_FROM = 50_000  # bench_step.py

# --- the repulsion: which engine (the forces move within its accuracy), and how it runs -----

# Group sizes below which the exact kernel beats the approximations
EXACT_BELOW = {"bh": 500, "fft": 500}  # bench_bh.py, bench_fft.py: --only crossover
# Under "auto", fits this small are exact: ≤ ~1 ms a term a step, and no BH or FFT to compile
EXACT_FIT_MAX = 1_200  # bench_compile.py, bench_vs_opentsne.py --startup
# Under "auto" in 2-D, Barnes-Hut planned for groups below this, else the FFT grid
BH_BELOW = 2_000_000  # bench_bh.py --only fft
# One-thread cost of Barnes-Hut at θ = 0.5, ns per m·log₂m (× (0.5/θ)²): fft_is_cheaper
BH_NS_PER_POINT_LOG = 28.0  # bench_bh.py --only large
# One-thread cost of the FFT on its default grid, ns per point (spread and gather)...
FFT_NS_PER_POINT = 55.0  # bench_fft.py --only large
# ... and ns per node of its padded grid
FFT_NS_PER_NODE = 20.0  # bench_fft.py --only large
# Group sizes from which a term's gathers and scatters run on the threads (below: numpy)
GROUP_COPY_PARALLEL_ABOVE = 1 << 15  # bench_step.py --classes 500
# Pairs from which the exact repulsion runs on the threads (~0.1 ms of serial work)
EXACT_PARALLEL_FROM_PAIRS = 40_000  # bench_threads.py
# Points from which the Barnes-Hut walk runs on the threads (~0.1 ms of serial work)
BH_PARALLEL_WALK_FROM = 512  # bench_threads.py
# Points from which Barnes-Hut's Z-order passes run in numba's pool (~10 ns a point)
ZORDER_PARALLEL_FROM = 50_000  # bench_threads.py, bench_bh.py --only large
# Barnes-Hut leaf size: below it an exact loop beats descending (forces move within θ's error)
BH_LEAF_SIZE = 32  # bench_bh.py --only large, --only theta
# Points sharing one Barnes-Hut walk (the forces move within θ's error)
BH_GROUP = 128  # bench_bh.py --only large, --only theta
# From this many points the walk sweeps in float32 (fewer: mostly near pairs, kept in float64)
BH_SINGLE_FROM = 512  # bench_bh.py --only large
# Leaf size of a fitted map's trees (transform): below it an exact loop beats descending
REFERENCE_LEAF_SIZE = 16  # bench_transform.py
# New points from which the walk of a fitted map's trees runs on the threads
REFERENCE_PARALLEL_FROM_QUERIES = 1000  # bench_transform.py
# Most memory for a map's fields (2-D; ~25 MB a field at 100k points); past it classes walk trees
FIELD_BYTES = 1 << 30  # bench_transform.py

# --- the FFT repulsion and the placement field: how their grids run -----------------------

# Spread in tile order when the 2-D charge grid outgrows L2 and cache misses matter
FFT_SORT_ABOVE_BYTES = 1 << 20  # bench_fft.py
FFT_SORT_ABOVE_POINTS = 20_000  # bench_fft.py
# Kernel spectra kept for reuse: successive calls on a slowly growing layout share a grid
FFT_KERNEL_CACHE_BYTES = 256 << 20  # bench_fft.py (a memory bound)
# Stages (point stages: m·p^d, grid stages: padded nodes) on one thread below: no pool wake-up
FFT_PARALLEL_ABOVE = 1 << 16  # bench_fft.py, bench_threads.py
# 2-D grids of at least this many padded nodes are transformed in single precision: there
# the FFTs dominate, and float32 rounding stays far below the interpolation error.
FFT_SINGLE_ABOVE = 1 << 20  # bench_fft.py (results move ~1e-7)
# Query points from which the read runs in parts on ctsne's threads
FIELD_PARALLEL_FROM_QUERIES = 20_000  # bench_transform.py

# --- the optimiser's step, the SGD layout and its start -----------------------------------

# Coordinates (n·d) from which a step runs in parts on ctsne's threads
STEP_PARALLEL_FROM_COORDS = 50_000  # bench_step.py
# Below this many coordinates a step runs in numpy (`_step_small`): no kernel to compile
STEP_IN_NUMPY_BELOW = 5_000  # bench_compile.py
# Edges from which an epoch runs in parts on ctsne's threads (ctsne._parallel.Threaded)
SGD_PARALLEL_FROM_EDGES = 20_000  # bench_umap.py --layout
# Components smaller than this are solved densely (ARPACK needs more vertices than vectors)
SPECTRAL_DENSE_BELOW = 500  # ARPACK's lower limit (exact below, within SPECTRAL_TOL above)
# New points per neighbour query: bounds a brute-force search's (chunk, n_ref) block
PLACEMENT_QUERY_CHUNK = 5000  # bench_transform.py (a memory bound)

# --- the torch engine: its plans and blocks -----------------------------------------------

# method="auto": the exact O(n²) kernel up to this many points (and for d > 2), the
# batched FFT above; on a GPU the exact kernel stays cheaper than the grids' fixed cost longer.
TORCH_EXACT_UP_TO = {"cpu": 500, "cuda": 4_000}  # bench_torch.py --gradient
# The exact kernel keeps the (n, n) pair weights up to this many pairs
TORCH_KEEP_WEIGHTS_UP_TO = 1 << 24  # a memory bound
# Exact search on the device up to this many points (a GPU computes n² distances fast)
DEVICE_EXACT_UP_TO = {"cpu": 10_000, "cuda": 1_000_000}  # bench_torch.py (exact lists below)
# Distance entries per block of query rows, by device type: on a GPU, per-block launches
# dominate smaller blocks.
DEVICE_BLOCK_ENTRIES = {"cpu": 1 << 24, "cuda": 1 << 27}  # profile_torch.py
# Pairs per block of rows of the exact kernel (each pair holds d differences)
TORCH_EXACT_BLOCK_PAIRS = 1 << 22  # a memory bound
# Points per chunk of the spreading and gathering (each holds p^d stencil entries)
TORCH_POINT_CHUNK = 1 << 20  # a memory bound
# Kernel spectra kept (one per node spacing and grid size) for reuse
TORCH_SPECTRA_KEPT = 8  # a memory bound
# Bisection steps between the checks whether any row still moves (each waits for the device)
FUZZY_CHECK_EVERY = 16  # a device wait per check

# The parts of the sums whose order must not follow the thread count (a seed fixes a map on
# any number of threads): sized from the problem alone; the reasons are beside their use in
# forces/attraction.py, forces/repulsion/fft.py and optimization/optimizer.py.
ATTRACTION_BLOCK_PAIRS = 20_000
ATTRACTION_MOST_BLOCKS = 24
ATTRACTION_BUFFER_ROWS = 6.0
ATTRACTION_SUM_IN_NUMPY_BELOW = 1 << 18
FFT_MOST_CHUNKS = 32
FFT_CHUNK_COST = 16
STEP_BLOCK_ROWS = 4096
STEP_MOST_BLOCKS = 64
