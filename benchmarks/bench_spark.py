"""The Spark engine against the local CLI on one machine: throughput, and the driver's memory against input size.

1. Throughput: the same ``n`` short texts (Jane Austen paragraphs' first sentences, default 20,000) through
   ``bertfeat embed`` with the local engine and with ``--engine spark --master local[2]``, each a fresh process,
   alternating, ``--repeats`` times; the bundled MiniLM. Spark's rows/s is given with and without the start of its
   session (JVM and SparkContext, recorded in the manifest's ``timing.spark_start_seconds``). The issue's target:
   Spark's overhead <= 15% in rows/s.
2. Driver memory: ``--memory-rows`` short texts (default 100,000 and 1,000,000) through ``--engine spark`` with a
   1-layer BERT of hidden size 32 and the MiniLM tokenizer (the data path, not the model, is what is measured).
   The driver is a child Python process that runs the job and then reads the peak resident memory (VmHWM) of itself
   and of the Spark JVM it started. In ``local`` mode that JVM is also the executor (scan, shuffle), so its figure
   is an upper bound on a cluster driver's; the Python driver gathers nothing per row.

    python benchmarks/bench_spark.py                       # the issue's figures (on an idle machine)
    python benchmarks/bench_spark.py --n 300 --memory-rows 2000 4000 --repeats 1   # a smoke run
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

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cli_memory import make_input, small_model  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "PYSPARK_PYTHON": sys.executable}

DRIVER = r"""
import json, os, sys
from bertfeat.spark import embed_files

from pyspark.sql import SparkSession

args = json.loads(sys.argv[1])
# the session is started here and left running, so that its JVM's peak can be read once the job is done
spark = SparkSession.builder.master(args["master"]).config("spark.ui.showConsoleProgress", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
manifest = embed_files(args["input"], args["out"], "text", keep_cols="id", overwrite=True, quiet=True,
                       batch_rows=args["chunk_rows"], model=args["model"])

def hwm_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

def children(pid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = open(f"/proc/{p}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(p))
    return out

jvm = [p for p in children(os.getpid()) if b"java" in open(f"/proc/{p}/cmdline", "rb").read()]
print(json.dumps({"python_mb": hwm_mb(os.getpid()), "jvm_mb": max((hwm_mb(p) for p in jvm), default=None),
                  "seconds": manifest["timing"]["seconds"], "rows": manifest["counts"]["rows"]}))
"""


def texts(n: int) -> list[str]:
    """``n`` short texts: first sentences of Austen's paragraphs, cycled with a counter once they run out."""
    pool = pd.read_csv(ROOT / "data" / "austen.csv.gz")["text"].str.split(r"(?<=[.!?])\s", n=1, regex=True).str[0]
    pool = pool.dropna().drop_duplicates().tolist()
    return [pool[k % len(pool)] + ("" if k < len(pool) else f" ({k // len(pool)})") for k in range(n)]


def cli(src: Path, out: Path, *extra: str) -> tuple[float, dict]:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bertfeat", "embed", str(src), "--text-col", "text", "--id-col", "id",
                    "--out", str(out), "--overwrite", "--quiet", *extra], env=ENV, check=True)
    seconds = time.perf_counter() - t0
    return seconds, json.loads(Path(f"{out}.manifest.json").read_text())


def throughput(work: Path, n: int, repeats: int, master: str) -> None:
    src = work / f"texts-{n}.parquet"
    pd.DataFrame({"id": range(n), "text": texts(n)}).to_parquet(src)
    print(f"\n### {n:,} short texts, bundled MiniLM: local CLI vs --engine spark --master {master}\n")
    print("| run | engine | wall s | rows/s (wall) | Spark start s | rows/s (without Spark's start) |")
    print("|---|---|---|---|---|---|")
    best = {}
    for r in range(repeats):
        for engine in ("local", "spark"):
            extra = ["--engine", "spark", "--master", master] if engine == "spark" else []
            out = work / ("out-spark" if engine == "spark" else "out.parquet")
            seconds, m = cli(src, out, *extra)
            start = m["timing"].get("spark_start_seconds", 0.0)
            rate, rate_run = n / seconds, n / (seconds - start)
            best[engine] = max(best.get(engine, (0, 0)), (rate, rate_run))
            print(f"| {r + 1} | {engine} | {seconds:.1f} | {rate:,.0f} | {start:.1f} | {rate_run:,.0f} |", flush=True)
    (lw, _), (sw, sr) = best["local"], best["spark"]
    print(f"\nbest of {repeats}: Spark's overhead {100 * (1 - sw / lw):.1f}% in rows/s with its session start, "
          f"{100 * (1 - sr / lw):.1f}% without (target <= 15%).")


def memory(work: Path, rows_list: list[int], master: str, chunk_rows: int) -> None:
    model = small_model(work / "small-model")
    print(f"\n### Driver peak memory, --engine spark --master {master}, 1-layer BERT (hidden 32)\n")
    print("| rows | Python driver peak MB | Spark JVM peak MB | seconds |\n|---|---|---|---|")
    for rows in rows_list:
        src = work / f"short-{rows}.parquet"
        make_input(src, rows, "parquet")
        args = {"input": str(src), "out": str(work / "mem-out"), "master": master, "chunk_rows": chunk_rows,
                "model": model}
        res = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(args)], env=ENV, check=True,
                             capture_output=True, text=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        assert r["rows"] == rows
        print(f"| {rows:,} | {r['python_mb']:.0f} | {r['jvm_mb']:.0f} | {r['seconds']:.0f} |", flush=True)
        src.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000, help="texts for the throughput comparison")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--memory-rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--chunk-rows", type=int, default=10_000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bertfeat-spark-bench-"))
    try:
        print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
        throughput(work, args.n, args.repeats, args.master)
        memory(work, args.memory_rows, args.master, args.chunk_rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
