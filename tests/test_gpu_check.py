"""benchmarks/gpu_check.py on a machine without a GPU, and its pass/fail table logic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpu_check import Check, check, exit_code, failed, skipped, table

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_check_says_no_gpu_and_exits_0_without_one():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("no GPU:") and len(proc.stdout.strip().splitlines()) == 1


@pytest.mark.parametrize("value, op, bound, ok", [
    (0.9999, ">=", 0.999, True), (0.998, ">=", 0.999, False), (0.999, ">=", 0.999, True),
    (3e-6, "<=", 1e-5, True), (2e-5, "<=", 1e-5, False), (0, "==", 0, True), (1, "==", 0, False),
    (None, "<=", 1e-5, False), (float("nan"), ">=", 2.0, False),
])
def test_check_judges_the_value_against_its_bound(value, op, bound, ok):
    assert check("x", value, op, bound).ok is ok


def test_check_refuses_an_unknown_comparison():
    with pytest.raises(ValueError, match="op='>'"):
        check("x", 1.0, ">", 0.0)


def test_table_marks_each_line_and_exit_code_counts_failures_only():
    lines = [check("cosine", 0.99995, ">=", 0.9999), check("diff", 2e-5, "<=", 1e-5, "float32"),
             skipped("ray", "ray not installed"), failed("oom", RuntimeError("CUDA out of memory\nmore"))]
    text = table(lines).splitlines()
    assert text[0].startswith("| check | value | bound | result |") and len(text) == 2 + len(lines)
    assert "| PASS |" in text[2] and "| >= 0.9999 |" in text[2]
    assert "| FAIL |" in text[3] and "2.00e-05" in text[3] and "<= 1.00e-05" in text[3]
    assert "| SKIP |" in text[4] and "ray not installed" in text[4]
    assert "| FAIL |" in text[5] and "RuntimeError: CUDA out of memory |" in text[5]
    assert exit_code(lines) == 1
    assert exit_code(lines[:1] + lines[2:3]) == 0
    assert exit_code([Check("a", None, "", None, None)]) == 0


def test_the_half_precision_checks_run_on_cpu_with_arguments_bertembedder_takes(tmp_path):
    # the first GPU run (2026-11-26) failed a line on the harness's own argument (layers="all"); the same calls on
    # CPU, with a tiny BERT of 512 positions, find that kind of mistake without a GPU
    from benchmarks.gpu_check import half_precision
    from tests.conftest import TINY_SENTENCES, build_tiny_bert

    build_tiny_bert(tmp_path, max_positions=512)
    checks = half_precision(str(tmp_path), TINY_SENTENCES * 3, device="cpu")
    assert len(checks) == 5 and all(c.value is not None for c in checks), table(checks)
    finite = checks[-1]
    assert finite.name == "no NaN or inf in half precision" and finite.ok, finite.detail
