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


def test_the_model_pass_alone_is_bertfeats_own_pass_without_the_host(tiny_bert):
    """benchmarks.common.device_batches + model_pass: the batches bertfeat plans, and the vectors it computes from
    them (what gpu_check's host-ceiling line and gpu_levers time as "the model alone")."""
    import numpy as np
    import torch

    from benchmarks import common
    from bertfeat import BertEmbedder
    from bertfeat.backend import get_backend
    from bertfeat.batching import plan_batches
    from bertfeat.models import resolve_model
    from tests.conftest import TINY_SENTENCES

    texts = [t * k for k, t in enumerate(TINY_SENTENCES, 1)]
    backend = get_backend(resolve_model(tiny_bert), "cpu", "float32")
    batches = common.device_batches(backend, texts, 32, budget=96)
    lengths = np.array([min(len(t), 32 - backend.n_special) + backend.n_special for t in backend.tokenize(texts)])
    plan = plan_batches(lengths, 96)
    assert [len(ids) for ids, _ in batches] == [len(b) for b in plan] and len(batches) > 1
    assert all(ids.shape[0] * ids.shape[1] <= 96 or ids.shape[0] == 1 for ids, _ in batches)
    assert sum(int(mask.sum()) for _, mask in batches) == int(lengths.sum())
    got = torch.cat([out[:, 0] for out in common.model_pass(backend, batches)()]).numpy()
    want = BertEmbedder(model=tiny_bert, pooling="mean", layers=-1, max_length=32, device="cpu").fit_transform(texts)
    np.testing.assert_allclose(got, want[np.concatenate(plan)], atol=1e-5)
    # a model handed in explicitly runs instead, in the backend's arithmetic: the transformers model, same vectors
    from bertfeat.backend import load_checked_model

    model = load_checked_model(backend.spec, torch.float32, backend.tokenizer).eval()
    other = torch.cat([out[:, 0] for out in common.model_pass(backend, batches, model)()]).numpy()
    np.testing.assert_allclose(other, got, atol=1e-5)
    with torch.no_grad():
        model.encoder.layer[-1].output.dense.weight.mul_(2)  # and a changed model gives other vectors
    changed = torch.cat([out[:, 0] for out in common.model_pass(backend, batches, model)()]).numpy()
    assert np.abs(changed - got).max() > 1e-3


def test_the_host_ceiling_line_divides_by_the_model_alone(tmp_path, monkeypatch):
    from benchmarks import bench_host, gpu_check
    from benchmarks.common import austen_texts
    from tests.conftest import build_tiny_bert

    build_tiny_bert(tmp_path, max_positions=512)  # gpu_check's texts run to 256 tokens

    monkeypatch.setattr(bench_host, "measure", lambda texts, repeats: {"host_ceiling_tokens_per_s": 3_000_000.0})
    line = gpu_check.host_ceiling(austen_texts(10), 1_500_000.0)
    assert line.name == "host ceiling / model pass alone, tokens/s" and line.value == 2.0 and line.ok
    assert not gpu_check.host_ceiling(austen_texts(10), 2_500_000.0).ok  # 1.2x: the host would hold the GPU back
    rate = gpu_check.model_rate(str(tmp_path), austen_texts(40), device="cpu", dtype="float32")
    assert 0 < rate < float("inf")


def test_the_whole_batches_line_reads_the_backends_padding_check(tmp_path):
    from benchmarks import gpu_check
    from tests.conftest import build_tiny_bert

    from tests.tiny_encoders import PADDING_SEEN, build_tiny_encoder

    build_tiny_bert(tmp_path / "bert")
    seen = sorted(PADDING_SEEN)[0]  # a family whose real tokens see padding: its batches are split by length
    models = {"tiny": str(tmp_path / "bert"), seen: build_tiny_encoder(tmp_path / seen, seen)}
    lines = gpu_check.whole_batches(models, device="cpu")
    assert [(line.name, line.value, line.ok) for line in lines] == [
        ("tiny float32: batches run whole (padding moves no real token)", 0, True),
        ("tiny bfloat16: batches run whole (padding moves no real token)", 0, True),
        (f"{seen} float32: batches run whole (padding moves no real token)", 1, False),
        (f"{seen} bfloat16: batches run whole (padding moves no real token)", 1, False)]
