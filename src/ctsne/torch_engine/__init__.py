"""The PyTorch engine (stage 4.5, between the optimisation and the estimator): a fit on a
torch device, CPU or CUDA, for ``backend="torch"`` of ConditionalTSNE, ConditionalUMAP and
ConditionalLargeVis (``transform`` runs on the host).

Optional: torch is imported by these modules when present (``pip install ctsne[gpu]``);
without it they still import, and :func:`ctsne.torch_engine.device.load_torch` says what
to install when the engine is asked for. The stages it reuses from the numba engine are
named in each module; what runs on the device:

- ``device.py``: which device and floating-point type a fit uses, checked before any work.
- ``neighbors.py``: exact k nearest neighbours in blocks, or FAISS where it is installed.
- ``calibration.py``: the perplexity bisection, vectorised over rows.
- ``fuzzy.py``: UMAP's memberships (σ, ρ by bisection over every row) and fuzzy union.
- ``affinities.py``: the input graph: t-SNE's P (any mode) or UMAP's fuzzy graph.
- ``attraction.py``: the attractive force as a sparse (CSR) matrix product.
- ``repulsion.py``: the ct-SNE repulsion: exact in blocks, or one batched FFT.
- ``gradient.py``: the two composed, and KL(P‖R).
- ``optimizer.py``: the descent's step primitives, for :mod:`ctsne.optimization.optimizer`.
- ``layout.py``: UMAP's and LargeVis's SGD epochs as tensors.
"""
