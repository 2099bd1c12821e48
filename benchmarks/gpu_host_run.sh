#!/usr/bin/env bash
# Everything a lent GPU machine is for, in one call: the GPU check (benchmarks/gpu_check.py, on cores 2-15) and,
# beside it on cores 0-1, the Xeon-class stand-in (benchmarks/standin_xeon_no_amx.sh). Writes to $OUT:
#   machine.txt, gpu_check.txt, standin_all.txt and the stand-in's standin_{info,encode,tests}.txt
#
#     OUT=/tmp/gpu-host bash benchmarks/gpu_host_run.sh [seconds for each half, default 360] [--quick]
#
# The two halves run at once so that one lease covers both; the stand-in's figures are ratios within its own run,
# on its own two cores, but they share the host's memory bandwidth and L3 with the GPU check's host side.
set -u
LIMIT=${1:-360}
QUICK=${2:-}
OUT=${OUT:-/tmp/gpu-host}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=.
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  lscpu | grep -E "^(Model name|Vendor ID|CPU family|Model|CPU\(s\)|Thread|Core|Flags)"
  python3 -c "import sys, torch, transformers, sentence_transformers, sklearn, pandas, pyarrow
print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda,
      'transformers', transformers.__version__, 'sentence-transformers', sentence_transformers.__version__,
      'sklearn', sklearn.__version__, 'pandas', pandas.__version__, 'pyarrow', pyarrow.__version__)"
  python3 -c "import ray" 2>/dev/null && echo "ray: installed" || echo "ray: not installed"
} > "$OUT/machine.txt" 2>&1
CHECK=(taskset -c 2-15); command -v taskset >/dev/null || CHECK=()
(timeout "$LIMIT" "${CHECK[@]}" python3 -m benchmarks.gpu_check $QUICK > "$OUT/gpu_check.txt" 2>&1
 echo "gpu_check exit $?" >> "$OUT/gpu_check.txt") &
(OUT=$OUT timeout "$LIMIT" bash benchmarks/standin_xeon_no_amx.sh > "$OUT/standin_all.txt" 2>&1
 echo "stand-in exit $?" >> "$OUT/standin_all.txt") &
wait
cat "$OUT/machine.txt" "$OUT/gpu_check.txt"; tail -5 "$OUT/standin_all.txt"
