"""Which Jane Austen novel is this paragraph from? Frozen MiniLM features + LogisticRegression, cross-validated.

Embeds paragraphs of the six novels (data/austen.csv.gz, public domain, from Debian's r-cran-janeaustenr) with the
bundled default model, then reports 5-fold cross-validated accuracy of a LogisticRegression on the features.

    python examples/austen_logreg.py --per-book 150
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bertfeat import BertEmbedder

DATA = Path(__file__).resolve().parent.parent / "data" / "austen.csv.gz"


def load_austen(per_book: int | None = None, seed: int = 0, min_words: int = 20) -> pd.DataFrame:
    """Paragraphs of at least ``min_words`` words, ``per_book`` of each novel sampled reproducibly (None: all)."""
    df = pd.read_csv(DATA)
    df = df[df["n_words"] >= min_words]
    if per_book is not None:
        df = df.groupby("book", group_keys=False).sample(n=per_book, random_state=seed)
    return df.reset_index(drop=True)


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-book", type=int, default=150, help="paragraphs per novel (default 150)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--cache-dir", default=None, help="reuse embeddings across runs")
    args = ap.parse_args(argv)

    df = load_austen(args.per_book)
    t0 = time.perf_counter()
    embedder = BertEmbedder(pooling="mean", layers=-1, long_text="chunk", cache_dir=args.cache_dir)
    X = embedder.fit_transform(df["text"])
    seconds = time.perf_counter() - t0
    y = df["book"].to_numpy()

    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))
    cv = StratifiedKFold(n_splits=args.folds, shuffle=True, random_state=0)
    scores = cross_val_score(clf, X, y, cv=cv)
    chance = pd.Series(y).value_counts(normalize=True).max()
    print(f"texts: {len(df)} paragraphs of {df['book'].nunique()} novels; features: {X.shape[1]} "
          f"({embedder.recipe_.model}, {'+'.join(embedder.recipe_.pooling)} pooling)")
    print(f"embedding: {seconds:.1f} s, {embedder.stats_.tokens} tokens, {embedder.stats_.chunked} long texts chunked")
    print(f"{args.folds}-fold CV accuracy: {scores.mean():.3f} +/- {scores.std(ddof=1) / np.sqrt(len(scores)):.3f} "
          f"(majority class: {chance:.3f})")
    return float(scores.mean())


if __name__ == "__main__":
    main()
