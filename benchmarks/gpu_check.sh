#!/usr/bin/env bash
# The torch engine on a lent GPU machine, in one call (see BENCHMARKS.md, "The torch engine").
#
#   bash benchmarks/gpu_check.sh [SIZES...]        # default: 100k 1M
#
# Run from the repository root on the device machine, with the wheels the image lacks in
# .whl/ (pynndescent; torchdr for the peer rows: `pip download torchdr --no-deps -d .whl`).
# Steps, each with its own time limit so one hang cannot eat the rest:
#   1. the torch tests on CUDA (CTSNE_TEST_TORCH_DEVICE=cuda: the CPU tests' tolerances),
#      t-SNE, UMAP and LargeVis;
#   2. whole t-SNE fits with a 5-class prior, P built on the device (balanced, own-class
#      share 0.85), at the sizes given;
#   3. ConditionalUMAP on the device (plain, and with the prior's balanced graph) beside
#      TorchDR's UMAP and TSNE where torchdr imports; rows go to $OUT/results.jsonl.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH="$PWD/src:/tmp/site:${PYTHONPATH:-}"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv
python3 - <<'EOF'
import numba, numpy, pynndescent, scipy, sklearn, torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "-",
      "numba", numba.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__,
      "sklearn", sklearn.__version__, "pynndescent", pynndescent.__version__)
EOF
CTSNE_TEST_TORCH_DEVICE=cuda timeout "${TEST_LIMIT:-200}" python3 -m pytest -q -p no:cacheprovider \
    tests/test_torch_engine.py tests/test_torch_estimator.py tests/test_torch_layout.py 2>&1 | tee "$OUT/tests.log" | tail -40
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(100k 1M)
timeout "${BENCH_LIMIT:-300}" python3 benchmarks/bench_torch.py --sizes "${SIZES[@]}" \
    --runners torch --device cuda --affinities balanced:0.85 --out "$OUT/results.jsonl" \
    2>&1 | tee "$OUT/bench.log"
timeout "${UMAP_LIMIT:-300}" python3 benchmarks/bench_torch_umap.py --sizes "${SIZES[@]}" \
    --runners torch-plain torch torchdr-umap torchdr-tsne cuml-umap --device cuda \
    --affinities balanced:0.85 --out "$OUT/results.jsonl" 2>&1 | tee "$OUT/umap.log"
