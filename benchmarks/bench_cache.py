"""Cold vs warm: embed N Austen paragraphs with the default model on CPU, then embed them again from the cache.

The cold run is one ``transform`` with the model already loaded (so loading time does not flatter the ratio). The
warm run is a new process, as when a notebook or R session is re-run: it fits a new BertEmbedder on the same
cache_dir and times its ``transform``; it also checks that torch was never imported and that the vectors are
bit-identical to the cold run's.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/bench_cache.py            # 5,000 paragraphs
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/bench_cache.py --n 500    # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_texts(path: Path, n: int) -> list[str]:
    import pandas as pd

    texts = pd.read_csv(path)["text"].head(n).tolist()
    if len(texts) < n:
        raise SystemExit(f"{path} has only {len(texts)} paragraphs; pass --n {len(texts)} or less.")
    return texts


def cold(args) -> dict:
    import numpy as np

    from bertfeat import BertEmbedder

    texts = load_texts(args.data, args.n)
    params = dict(model="default", device="cpu", dtype="float32")
    BertEmbedder(**params).fit_transform(["Load the model before the clock starts."])
    est = BertEmbedder(**params, cache_dir=args.cache_dir).fit(texts)
    t0 = time.perf_counter()
    X = est.transform(texts)
    seconds = time.perf_counter() - t0
    np.save(Path(args.cache_dir) / "cold.npy", X)
    s = est.stats_
    return dict(seconds=seconds, rows=s.rows, unique=s.unique, misses=s.cache_misses, new=s.cache_new,
                truncated=s.truncated, tokens=s.tokens, max_length=est.recipe_.max_length)


def warm(args) -> dict:
    """Run in a fresh process by :func:`main`."""
    t0 = time.perf_counter()
    import numpy as np

    from bertfeat import BertEmbedder

    imported = time.perf_counter() - t0
    texts = load_texts(args.data, args.n)
    t0 = time.perf_counter()
    est = BertEmbedder(model="default", device="cpu", dtype="float32", cache_dir=args.cache_dir).fit(texts)
    fitted = time.perf_counter() - t0
    t0 = time.perf_counter()
    X = est.transform(texts)
    seconds = time.perf_counter() - t0
    same = bool((X.view(np.uint32) == np.load(Path(args.cache_dir) / "cold.npy").view(np.uint32)).all())
    return dict(seconds=seconds, import_seconds=imported, fit_seconds=fitted, hits=est.stats_.cache_hits,
                misses=est.stats_.cache_misses, bit_identical=same, torch_imported="torch" in sys.modules)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5000, help="paragraphs to embed (default 5000)")
    parser.add_argument("--data", type=Path, default=REPO / "data" / "austen.csv.gz")
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    parser.add_argument("--warm-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.warm_child:
        print(json.dumps(warm(args)))
        return

    with tempfile.TemporaryDirectory(prefix="bench-cache-") as cache_dir:
        args.cache_dir = cache_dir
        c = cold(args)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        child = subprocess.run(
            [sys.executable, __file__, "--warm-child", "--n", str(args.n), "--data", str(args.data),
             "--cache-dir", cache_dir],
            capture_output=True, text=True, env=env, check=True,
        )
        w = json.loads(child.stdout.strip().splitlines()[-1])
        size = sum(f.stat().st_size for f in Path(cache_dir).rglob("shard-*.parquet"))

    ratio = c["seconds"] / w["seconds"]
    print(f"machine   {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}")
    print(f"data      {args.n} paragraphs of {args.data.name} ({c['unique']} distinct, {c['tokens']:,} tokens, "
          f"{c['truncated']} truncated at {c['max_length']})")
    print(f"cold      {c['seconds']:.2f} s  transform with the model loaded: {c['misses']} misses, {c['new']} new rows "
          f"({size / 2**20:.1f} MiB of shards)")
    print(f"warm      {w['seconds']:.3f} s  transform in a new process: {w['hits']} hits, {w['misses']} misses, "
          f"torch imported: {w['torch_imported']}, bit-identical: {w['bit_identical']}")
    print(f"          (that process also spent {w['import_seconds']:.2f} s importing bertfeat and "
          f"{w['fit_seconds']:.2f} s in fit)")
    print(f"ratio     {ratio:,.0f}x  (target: at least 50x)")
    if ratio < 50 or not w["bit_identical"] or w["torch_imported"] or w["misses"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
