#!/usr/bin/env bash
# One-time (and idempotent) set-up on a fresh machine: R and Java from Debian's packages, a virtualenv in .venv with
# torch==2.13.0 (a CPU wheel here) installed before everything else, then bertfeat in editable mode with its
# test extras, and the R package of this checkout. Re-running it only fixes what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${BERTFEAT_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}

# --- R (Debian packages; CRAN is not reachable from these machines) -------------------------------------------
R_PKGS="r-base-core r-cran-reticulate r-cran-testthat r-cran-glmnet r-cran-recipes r-cran-tibble r-cran-rlang
  r-cran-generics r-cran-withr r-cran-janeaustenr"
if [ "${BERTFEAT_SKIP_R:-0}" != 1 ]; then
  need=""
  for p in $R_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"; done
  if [ -n "$need" ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "setup: installing R packages:$need"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
  fi
fi

# --- Java for the Spark engine's tests (Debian's packages; BERTFEAT_SKIP_SPARK=1 skips it, and the Spark tests) ---
if [ "${BERTFEAT_SKIP_SPARK:-0}" != 1 ] && ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "setup: installing default-jre-headless (Java for Spark)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends default-jre-headless >/dev/null
fi

# --- Python ---------------------------------------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
stamp="$VENV/.bertfeat-setup"
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # torch first and pinned: an unpinned torch would pull gigabytes of CUDA packages on these machines.
  "$VPY" -m pip install -q --disable-pip-version-check "torch==2.13.0"
  "$VPY" -m pip install -q --disable-pip-version-check -e ".[dev]"
  echo "$want" > "$stamp"
fi

# --- the R package of this checkout, pointed at this virtualenv -------------------------------------------------
if [ "${BERTFEAT_SKIP_R:-0}" != 1 ] && [ -f r-bridge/DESCRIPTION ]; then
  mkdir -p "$ROOT/.rlib"
  R CMD INSTALL --no-test-load --library="$ROOT/.rlib" r-bridge >/dev/null 2>"$ROOT/.rlib/install.log" || {
    cat "$ROOT/.rlib/install.log"; exit 1; }
fi
echo "setup: ready ($VENV)"
