"""The probe's cost against one embedding pass (issue 7): on the default model, N fine-food reviews, 2-core CPU.

Times, in one process with the model already loaded:
1. one plain embedding pass: ``BertEmbedder()`` (the default recipe) over the texts;
2. ``bertfeat.probe`` on the same texts: its embedding pass (every layer, CLS/mean/max) and its model fits.

The claim checked is that the probe costs about one embedding pass plus the fits: its embedding time over the plain
pass's should be close to 1.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/bench_probe.py --n 5000
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--cv", type=int, default=5)
    args = ap.parse_args()

    import pandas as pd

    from bertfeat import BertEmbedder, probe

    df = pd.read_csv(ROOT / "data" / "fine_foods.csv.gz").head(args.n)
    texts, y = df["review"].tolist(), df["score"].to_numpy()  # "great" vs "other"
    warnings.simplefilter("ignore")  # truncation warnings: both sides truncate alike
    BertEmbedder(dtype="float32").fit_transform(["load the model before the clock starts"])

    t0 = time.perf_counter()
    est = BertEmbedder(dtype="float32").fit(texts)
    est.transform(texts)
    plain = time.perf_counter() - t0

    t0 = time.perf_counter()
    result = probe(texts, y, cv=args.cv, baseline=False, dtype="float32")
    total = time.perf_counter() - t0

    print(f"machine   {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"data      {len(texts)} fine-food reviews ({est.stats_.tokens:,} tokens), {args.cv}-fold CV, "
          f"{len(result.table)} candidates")
    print(f"plain     {plain:.1f} s  one BertEmbedder() pass (default recipe)")
    print(f"probe     {total:.1f} s  embed {result.seconds['embed']:.1f} s + fits {result.seconds['fits']:.1f} s")
    print(f"ratio     probe embedding / plain pass = {result.seconds['embed'] / plain:.2f}")
    print(f"recommended {result.recommended}")


if __name__ == "__main__":
    main()
