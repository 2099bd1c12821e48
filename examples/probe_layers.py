"""Which layer and pooling make the best features for this task, and does stacking with TF-IDF pay? The probe.

One embedding pass keeps CLS, mean and max pooling of every layer; cross-validated logistic regression scores each
choice, TF-IDF alone and the best few side by side with TF-IDF. Prints the table and the recommended features as
Python code, and saves the plot.

    python examples/probe_layers.py --n 5000 --plot probe.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import DATA  # noqa: E402

from bertfeat import probe  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="reviews to use (default: all 5,000)")
    ap.add_argument("--cv", type=int, default=5)
    ap.add_argument("--plot", default="probe.png")
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args(argv)
    df = pd.read_csv(DATA / "fine_foods.csv.gz").head(args.n)
    result = probe(df["review"], df["score"], cv=args.cv, plot=args.plot, cache_dir=args.cache_dir,
                   long_text="chunk")
    print(result.table[["rank", "kind", "candidate", "n_features", "score", "std_err"]].head(12)
          .to_string(index=False))
    if result.baseline:
        print(f"{result.baseline['name']}: {result.baseline['score']:.3f}")
    print(f"recommended ({result.recommended_kind}):\n{result.code()}")
    print(f"plot saved to {args.plot}")
    return result


if __name__ == "__main__":
    main()
