"""A scikit-learn Pipeline that mixes a text column with numeric columns: is this fine-food review 5 stars?

ColumnTransformer: BertEmbedder on the review text, the numeric columns passed through; then StandardScaler and a
LogisticRegression. Prints the held-out ROC AUC on the published test split.

    python examples/pipeline_columntransformer.py            # all 4,000 train / 1,000 test reviews
    python examples/pipeline_columntransformer.py --n-train 300 --n-test 100
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import fine_foods  # noqa: E402

from bertfeat import BertEmbedder  # noqa: E402


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-train", type=int, default=None)
    ap.add_argument("--n-test", type=int, default=None)
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args(argv)
    train, test = fine_foods(args.n_train, args.n_test)

    features = ColumnTransformer([
        ("text", BertEmbedder(long_text="chunk", cache_dir=args.cache_dir), "review"),
        ("numbers", "passthrough", ["n_words", "n_exclaim"]),
    ])
    model = make_pipeline(features, StandardScaler(), LogisticRegression(C=0.05, max_iter=2000))
    t0 = time.perf_counter()
    model.fit(train, train["great"])
    auc = roc_auc_score(test["great"], model.predict_proba(test)[:, 1])
    names = model[0].get_feature_names_out()
    print(f"train {len(train)} / test {len(test)} reviews; {len(names)} features ({names[0]} ... {names[-1]})")
    print(f"held-out ROC AUC: {auc:.3f}  ({time.perf_counter() - t0:.0f} s)")
    return auc


if __name__ == "__main__":
    main()
