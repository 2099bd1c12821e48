#!/usr/bin/env bash
# The main job on the bundled default model, offline: set up, featurize a sample of Jane Austen's paragraphs with
# the `bertfeat embed` command line (streamed, cached, with provenance), then report the cross-validated accuracy
# of a LogisticRegression that tells the six novels apart from those features.
#   PER_BOOK=200 bash scripts/main.sh      (paragraphs per novel; the default 200 gives 1,200 texts)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PY=.venv/bin/python
mkdir -p out
$PY examples/austen_logreg.py --per-book "${PER_BOOK:-200}" --sample-csv out/austen_sample.csv
$PY -m bertfeat embed out/austen_sample.csv --text-col text --keep-col id --keep-col book \
    --long-text chunk --cache-dir .cache/bertfeat --out out/austen_features.parquet --overwrite
$PY examples/austen_logreg.py --features out/austen_features.parquet
