"""Which torch device and floating-point type a fit runs on, checked before any work.

torch is optional: :func:`load_torch` imports it or raises an ImportError that names the
extra to install. ``device="cuda"`` on a machine without CUDA is refused here, at the
start of ``fit``, not after the neighbour search.
"""

from __future__ import annotations

__all__ = ["BACKENDS", "PRECISIONS", "TORCH_METHODS", "check_torch_options", "load_torch",
           "resolve_device", "working_dtype"]

# The estimator's engines: the numba one (the default) and this package.
BACKENDS = ("numba", "torch")
# The repulsion methods the torch engine has (no Barnes-Hut: its tree walk does not map
# onto tensor operations; the batched FFT replaces it).
TORCH_METHODS = ("auto", "exact", "fft")

# "auto": float32 on a GPU (the repulsion, attraction and steps are accurate enough there,
# see the modules; float64 runs at half speed or less on most GPUs) and float64 on the CPU,
# where it costs little and matches the numba engine to rounding.
PRECISIONS = ("auto", "float32", "float64")


def load_torch():
    """The ``torch`` module, or ImportError naming what to install."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - the message is what matters
        raise ImportError("backend='torch' needs PyTorch: pip install 'ctsne[gpu]' (or a "
                          "torch build for your CUDA version from pytorch.org)") from exc
    return torch


def resolve_device(device: str | None):
    """The ``torch.device`` for ``device`` ("cpu", "cuda", "cuda:1", or None for CUDA where
    available, else the CPU); a CUDA device that is not there raises RuntimeError.

    Parameters
    ----------
    device : str or None

    Returns
    -------
    torch.device
    """
    torch = load_torch()
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}") from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"device={device!r} but this PyTorch ({torch.__version__}) sees no CUDA "
                "device: install a CUDA build of torch on a machine with an NVIDIA GPU, or "
                "use device='cpu'")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise RuntimeError(f"device={device!r} but only {torch.cuda.device_count()} "
                               "CUDA device(s) are visible")
    elif dev.type != "cpu":
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return dev


def working_dtype(precision: str, device):
    """The floating-point type of the embedding and the forces for ``precision`` on
    ``device`` ("auto": float32 on CUDA, float64 on the CPU)."""
    torch = load_torch()
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "auto":
        precision = "float32" if device.type == "cuda" else "float64"
    return torch.float32 if precision == "float32" else torch.float64


def check_torch_options(device: str | None, precision: str, method: str,
                        n_components: int):
    """Everything about a torch fit that can be refused before any work: torch itself,
    the device, the precision, and the method for ``n_components``; returns
    ``(torch.device, dtype)``."""
    if method not in TORCH_METHODS:
        raise ValueError(f"backend='torch' supports method in {TORCH_METHODS}, got "
                         f"{method!r} (Barnes-Hut runs on backend='numba')")
    if method == "fft" and n_components > 2:
        raise ValueError(f"method='fft' supports n_components ≤ 2, got {n_components}; "
                         "use method='exact' or 'auto'")
    dev = resolve_device(device)
    return dev, working_dtype(precision, dev)
