"""Does stacking pay? The probe's recommendation (unions with TF-IDF allowed) against the default, TF-IDF and the
best union, held out, on the two shipped datasets.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/evidence_unions.py --austen 3000

Outer 5-fold cross-validation: in each outer fold, ``bertfeat.probe`` (its own inner 5-fold CV) runs on the
training part only and picks its recommendation and its best union; then each of four feature sets is fitted on the
training part, with the linear model the probe scores it with, and scored on the held-out part:

- the probe's recommendation (an embedding, a union with TF-IDF, or TF-IDF alone),
- bertfeat's default ``BertEmbedder()`` (standardized, logistic regression C = 0.05 / ridge),
- TF-IDF alone (word 1-2 grams, as the probe's baseline),
- the probe's best-scoring union.

Prints markdown for docs/defaults.md: mean held-out score and standard error across the outer folds, and what the
probe recommended in each fold. Long texts are chunked throughout; the embeddings are cached in --cache-dir, so the
model runs about once per text. ``--limit`` takes a stratified subset of each dataset to check the script quickly.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent


def held_out(texts, y, *, folds, inner_cv, cache_dir, models, seed=1):
    from sklearn.metrics import get_scorer
    from sklearn.model_selection import StratifiedKFold

    from bertfeat import BertEmbedder, probe
    from bertfeat.probe import _linear_model
    from sklearn.pipeline import make_pipeline

    texts = np.asarray(texts, dtype=object)
    y = np.asarray(y)
    scores = {"probe's recommendation": [], "default BertEmbedder()": [], "TF-IDF (1-2 grams)": [], "best union": []}
    picks = []
    metric = None
    for k, (train, test) in enumerate(StratifiedKFold(folds, shuffle=True, random_state=seed).split(texts, y)):
        t0 = time.perf_counter()
        r = probe(texts[train].tolist(), y[train], model=models, cv=inner_cv, long_text="chunk", cache_dir=cache_dir)
        metric = r.metric
        t = r.table
        ranks = {
            "probe's recommendation": r.recommended_rank,
            "TF-IDF (1-2 grams)": int(t.loc[t["kind"] == "tfidf", "rank"].iloc[0]),
            "best union": int(t.loc[t["kind"] == "union", "rank"].iloc[0]),
        }
        pipes = {name: r.pipeline(rank) for name, rank in ranks.items()}
        default = BertEmbedder(long_text="chunk", cache_dir=cache_dir, cache_all_layers=True)
        pipes["default BertEmbedder()"] = make_pipeline(default, *_linear_model(r.task, "embedding",
                                                                                  r.classifier_params))
        scorer = get_scorer(metric)
        for name, pipe in pipes.items():
            pipe.fit(texts[train].tolist(), y[train])
            scores[name].append(float(scorer(pipe, texts[test].tolist(), y[test])))
        rec = t[t["rank"] == r.recommended_rank].iloc[0]
        picks.append(f"fold {k + 1}: {rec['kind']}: {rec['candidate']} (inner {rec['score']:.4f}); "
                     f"{time.perf_counter() - t0:.0f} s")
        print("  " + picks[-1], flush=True)
    return metric, {name: np.asarray(v) for name, v in scores.items()}, picks


def main() -> None:
    from benchmarks.evidence_defaults import datasets

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--austen", type=int, default=3000, help="Austen paragraphs (500 per novel at 3000)")
    ap.add_argument("--limit", type=int, default=None, help="a stratified subset of each dataset (a quick check)")
    ap.add_argument("--folds", type=int, default=5, help="outer (held-out) folds")
    ap.add_argument("--inner-cv", type=int, default=5, help="the probe's own folds")
    ap.add_argument("--model", action="append", default=None, help="repeat to let the probe choose among models")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "evidence"))
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # truncation notes and convergence chatter
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}\n")
    for name, (texts, y) in datasets(args.austen).items():
        if args.limit:
            from sklearn.model_selection import train_test_split

            texts, _, y, _ = train_test_split(texts, y, train_size=args.limit, stratify=y, random_state=0)
        print(f"### {name}{f' (subset of {args.limit})' if args.limit else ''}: held-out, {args.folds} outer folds")
        metric, scores, picks = held_out(texts.tolist(), y.to_numpy(), folds=args.folds, inner_cv=args.inner_cv,
                                         cache_dir=args.cache_dir, models=args.model or ["default"])
        print(f"\n| features | held-out {metric} | std. error |\n|---|---|---|")
        for label, s in scores.items():
            print(f"| {label} | {s.mean():.4f} | {s.std(ddof=1) / np.sqrt(len(s)):.4f} |")
        print("\nthe probe's recommendation per outer fold:\n" + "\n".join(f"- {p}" for p in picks) + "\n",
              flush=True)


if __name__ == "__main__":
    main()
