#!/usr/bin/env bash
# A short GPU check after a merge that touched the device code: the GPU-marked tests, test_gpu_logic.py with the GPU
# present, one CLI job on the GPU (its manifest's timing), and gpu_check --quick. Writes to $OUT.
#
#     OUT=/tmp/gpu-after bash benchmarks/gpu_after_merge.sh
set -u
OUT=${OUT:-/tmp/gpu-after}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=.
# the whole log goes to $OUT (the tracebacks say why, which a tail of the summary did not, 2026-11-26)
python3 -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning --tb=short -rfs tests/test_gpu_logic.py \
  > "$OUT/tests.txt" 2>&1
python3 -m pytest -q -p no:cacheprovider --tb=short -rfs -m gpu tests >> "$OUT/tests.txt" 2>&1
python3 - > "$OUT/cli.txt" 2>&1 <<'PY'
import json, subprocess, sys, tempfile
from pathlib import Path
from benchmarks import common
from benchmarks.bench_encode import random_model
root = Path(tempfile.mkdtemp())
path = random_model("minilm-random", root)
src = root / "in.csv"
src.write_text("id,text\n" + "".join(f'{i},"{t.replace(chr(34), "")}"\n' for i, t in enumerate(common.austen_texts(300))))
for device in ("auto", "cuda", "cuda:0"):
    out = root / f"out-{device.replace(':', '')}.parquet"
    proc = subprocess.run([sys.executable, "-m", "bertfeat", "embed", str(src), "--text-col", "text", "--out", str(out),
                           "--model", path, "--device", device, "--quiet"], capture_output=True, text=True)
    print(device, "exit", proc.returncode, proc.stderr.strip()[-300:])
    m = json.loads(Path(str(out) + ".manifest.json").read_text())
    print(" timing:", {k: m["timing"].get(k) for k in ("device", "forward_pass")}, "dtype:", m["provenance"].get("dtype"))
proc = subprocess.run([sys.executable, "-m", "bertfeat", "embed", str(src), "--text-col", "text", "--out",
                       str(root / "bad.parquet"), "--model", path, "--device", "cuda:1", "--dtype", "float32"],
                      capture_output=True, text=True)
print("cuda:1 exit", proc.returncode, proc.stderr.strip().splitlines()[-1:])
PY
timeout ${CHECK_SECONDS:-110} python3 -m benchmarks.gpu_check --quick > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check exit $?" >> "$OUT/gpu_check.txt"
grep -E "^(FAILED|E |SKIPPED)|passed|failed" "$OUT/tests.txt"; cat "$OUT/cli.txt" "$OUT/gpu_check.txt"
