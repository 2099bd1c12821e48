#!/usr/bin/env bash
# The main job on the bundled default model, offline: set up, then embed the shipped Jane Austen paragraphs and
# report the cross-validated accuracy of a LogisticRegression on the features.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python examples/austen_logreg.py "$@"
