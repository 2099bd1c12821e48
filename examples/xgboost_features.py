"""Gradient boosting on frozen BERT features: xgboost on fine-food reviews (5 stars or not).

Embeds the reviews once with BertEmbedder (optionally through the cache), fits an XGBClassifier, and prints the
held-out ROC AUC on the published test split. Needs `pip install xgboost` (or the smaller `xgboost-cpu`).

    python examples/xgboost_features.py --cache-dir ~/.cache/bertfeat
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import fine_foods  # noqa: E402

from bertfeat import BertEmbedder  # noqa: E402


def main(argv=None) -> float:
    from xgboost import XGBClassifier

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-train", type=int, default=None)
    ap.add_argument("--n-test", type=int, default=None)
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args(argv)
    train, test = fine_foods(args.n_train, args.n_test)

    t0 = time.perf_counter()
    embedder = BertEmbedder(long_text="chunk", cache_dir=args.cache_dir).fit(train["review"])
    X_train, X_test = embedder.transform(train["review"]), embedder.transform(test["review"])
    t_embed = time.perf_counter() - t0
    booster = XGBClassifier(n_estimators=400, max_depth=3, learning_rate=0.05, subsample=0.8, colsample_bytree=0.5,
                            n_jobs=2, random_state=0)
    booster.fit(X_train, train["great"])
    auc = roc_auc_score(test["great"], booster.predict_proba(X_test)[:, 1])
    print(f"train {len(train)} / test {len(test)} reviews, {X_train.shape[1]} features; embedding {t_embed:.0f} s")
    print(f"xgboost held-out ROC AUC: {auc:.3f}")
    return auc


if __name__ == "__main__":
    main()
