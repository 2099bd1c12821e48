#!/usr/bin/env bash
# The whole test suite, Python and R, offline. Does the set-up first (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$ROOT/.venv/bin/python" -m pytest "$@"
if [ "${BERTFEAT_SKIP_R:-0}" != 1 ] && [ -d r-bridge/tests ]; then
  echo "== R tests (r-bridge) =="
  # NOT_CRAN=true: testthat runs the snapshot tests (r-bridge/tests/testthat/_snaps) only when it is set
  # TZ: without it R asks timedatectl, which fails noisily in containers
  RETICULATE_PYTHON="$ROOT/.venv/bin/python" R_LIBS="$ROOT/.rlib" NOT_CRAN=true TZ="${TZ:-UTC}" \
    Rscript -e 'res <- testthat::test_dir("r-bridge/tests/testthat", package = "bertfeat", load_package = "installed", reporter = "summary", stop_on_failure = TRUE)'
fi
