#!/usr/bin/env bash
# Run on a GPU machine (one CUDA device), from the repository root, in under ~8 minutes:
#   1. the kernel tests with the Triton kernels compiled for real (no TRITON_INTERPRET);
#   2. the decode benchmark, torch and Triton, each step captured in a CUDA graph.
# Results go to ${OUT:-/tmp/kernels-gpu}/ (pytest log, bench JSON and table).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kernels-gpu}"
mkdir -p "$OUT"
PY="${PYTHON:-python}"
unset TRITON_INTERPRET
"$PY" -c "import torch, triton; assert torch.cuda.is_available(), 'needs CUDA'; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"

echo "== kernel tests on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
timeout 300 "$PY" -m pytest kernels/tests -q -x -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log"

echo "== benchmark (CUDA graphs)"
timeout 150 "$PY" -m kernels.bench --contexts 2048,8192,32768 --budget 512 --batch 8 --cuda-graphs \
    --repeats 50 --warmup 5 --json | tee "$OUT/bench.json"
timeout 60 "$PY" -m kernels.bench --contexts 32768,131072 --budget 512 --batch 8 --cuda-graphs \
    --repeats 50 --warmup 5 2>/dev/null | tee "$OUT/bench_long.txt"
