"""The evidence behind BertEmbedder's default pooling and layers: the probe on two real labelled datasets.

    python benchmarks/evidence_defaults.py --austen 3000 --plots docs/img

Runs ``bertfeat.probe`` with the bundled model on all 5,000 fine-food reviews (great vs other, ROC AUC) and on a
stratified sample of Jane Austen paragraphs (which of 6 novels, accuracy), and prints markdown tables for
docs/defaults.md.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import pandas as pd

from bertfeat import probe

ROOT = Path(__file__).resolve().parent.parent


def datasets(n_austen: int):
    food = pd.read_csv(ROOT / "data" / "fine_foods.csv.gz")
    austen = pd.read_csv(ROOT / "data" / "austen.csv.gz")
    austen = austen[austen["n_words"] >= 20]
    per = n_austen // austen["book"].nunique()
    austen = austen.groupby("book", group_keys=False).sample(n=per, random_state=0)
    return {"fine foods (5,000 reviews, great vs other)": (food["review"], food["score"]),
            f"Austen ({len(austen):,} paragraphs, 6 novels)": (austen["text"], austen["book"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--austen", type=int, default=3000)
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "evidence"))
    ap.add_argument("--plots", default=None, help="folder for the PNG plots")
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')}\n")
    for i, (name, (texts, y)) in enumerate(datasets(args.austen).items()):
        plot = str(Path(args.plots) / f"probe-{i}.png") if args.plots else None
        if plot:
            Path(args.plots).mkdir(parents=True, exist_ok=True)
        r = probe(texts.tolist(), y.to_numpy(), cv=5, cache_dir=args.cache_dir, plot=plot, long_text="chunk")
        print(f"### {name}: 5-fold cross-validated {r.metric}\n")
        t = r.table[["rank", "candidate", "n_features", "score", "std_err"]]
        print(t.to_markdown(index=False, floatfmt=".4f"))
        if r.baseline:
            print(f"\n{r.baseline['name']}: {r.baseline['score']:.4f} +/- {r.baseline['std_err']:.4f}")
        print(f"\nrecommended (one-standard-error rule): {r.recommended}; best: {r.best}; "
              f"seconds: {r.seconds}\n", flush=True)


if __name__ == "__main__":
    main()
