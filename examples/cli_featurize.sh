#!/usr/bin/env bash
# Featurize a CSV from the command line, then read the features back.
#   examples/cli_featurize.sh [N_ROWS] [OUT]     (defaults: all 5,000 reviews, ./reviews_features.parquet)
set -euo pipefail
N=${1:-5000}
OUT=${2:-reviews_features.parquet}
PY=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# a plain CSV with an id, a label and the text
"$PY" -c "
import pandas as pd
df = pd.read_csv('$HERE/data/fine_foods.csv.gz').head($N)
df[['id', 'score', 'review']].to_csv('$WORK/reviews.csv', index=False)
"

# the kept columns come as written, as text: id (food-0001, ...) and score ("great" or "other"); a CSV's numbers
# would need --infer-types to be read as numbers
"$PY" -m bertfeat embed "$WORK/reviews.csv" --text-col review --keep-col id --keep-col score \
    --out "$OUT" --long-text chunk --overwrite

"$PY" -c "
import json, pyarrow.parquet as pq
t = pq.read_table('$OUT')
meta = json.loads(t.schema.metadata[b'bertfeat'])
print(f'{t.num_rows} rows x {t.num_columns} columns: {t.column_names[:3]} ... {t.column_names[-1]}')
print(f'model {meta[\"model_label\"]}, pooling {meta[\"pooling\"]}, layers {meta[\"layers\"]}, {meta[\"dims\"]} dims')
print('kept: ' + ', '.join(f'{c} {t.schema.field(c).type} ({t.column(c)[0]})' for c in ('id', 'score')))
"
