"""The first-GPU-run check: everything about bertfeat's GPU path that cannot be tested on a CPU, in one command.

    PYTHONPATH=. python -m benchmarks.gpu_check            # 90 s on an H200 or H100; --quick for a smoke run

It runs the test suite's GPU tests, then measures and prints one table of checks, each PASS or FAIL against a
stated bound (see docs/performance.md, "The GPU check", for what each line means). Models are random-weight BERTs of
the BERT-base and MiniLM shapes built on the spot with the bundled tokenizer files in ``benchmarks/assets``: no
network, no model weights. Without a GPU it says so and exits 0; with one it exits 1 if any check fails.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from benchmarks import common  # noqa: E402

SHAPES = {  # the check's names for bench_encode's random-weight shapes
    "bert-base": "bert-base-random",  # BertConfig() defaults: hidden 768, 12 layers, 12 heads, intermediate 3072
    "minilm": "minilm-random",  # hidden 384, 6 layers, 12 heads, intermediate 1536
}


# -- the table (pure: tested on CPU) ------------------------------------------------------------------------------


@dataclass
class Check:
    """One line of the table: a measured ``value`` against ``op bound``; ``ok`` is None when it could not run."""

    name: str
    value: float | None
    op: str
    bound: float | None
    ok: bool | None
    detail: str = ""


def check(name: str, value, op: str, bound, detail: str = "") -> Check:
    """Judge ``value op bound`` (``op`` one of ``>=``, ``<=``, ``==``); a missing or NaN value fails."""
    if op not in (">=", "<=", "=="):
        raise ValueError(f"op={op!r} is not one of '>=', '<=', '=='")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Check(name, None, op, bound, False, detail or "not measured")
    value = float(value)
    ok = value >= bound if op == ">=" else value <= bound if op == "<=" else value == bound
    return Check(name, value, op, bound, bool(ok), detail)


def failed(name: str, exc: BaseException) -> Check:
    """A check whose measurement raised: FAIL, with the error's first line."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return Check(name, None, "", None, False, f"{type(exc).__name__}: {first}"[:160])


def skipped(name: str, why: str) -> Check:
    return Check(name, None, "", None, None, why)


def _number(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0 or 1e-3 <= abs(x) < 1e6:
        return f"{x:,.4f}".rstrip("0").rstrip(".") if abs(x) < 10 else f"{x:,.1f}"
    return f"{x:.2e}"


def table(checks: list[Check]) -> str:
    """The checks as a markdown table: check, value, bound, PASS / FAIL / SKIP, detail."""
    rows = ["| check | value | bound | result | detail |", "|---|---|---|---|---|"]
    for c in checks:
        result = "SKIP" if c.ok is None else "PASS" if c.ok else "FAIL"
        bound = f"{c.op} {_number(c.bound)}" if c.op else "-"
        rows.append(f"| {c.name} | {_number(c.value)} | {bound} | {result} | {c.detail} |")
    return "\n".join(rows)


def exit_code(checks: list[Check]) -> int:
    """0 when no check failed (skipped ones do not count), else 1."""
    return 1 if any(c.ok is False for c in checks) else 0


# -- measurements (need a GPU) ------------------------------------------------------------------------------------


def random_model(shape: str, root: Path) -> str:
    """A random-weight BERT of a named shape (:data:`SHAPES`) with the bundled tokenizer, saved under ``root``: the
    builder ``bench_encode`` uses, so the two benchmarks measure the same models."""
    from benchmarks.bench_encode import random_model as build
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    return build(SHAPES[shape], root)


def embed(path, texts, device, dtype, **kwargs) -> np.ndarray:
    from bertfeat import BertEmbedder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # truncation warnings: expected
        return BertEmbedder(model=path, device=device, dtype=dtype, **kwargs).fit_transform(texts)


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


def gpu_tests() -> Check:
    paths = [str(common.REPO), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "tests"],
                          cwd=common.REPO, env=env, capture_output=True, text=True, timeout=300)
    last = (proc.stdout.strip().splitlines() or ["no output"])[-1]
    return check("GPU tests (pytest -m gpu)", proc.returncode, "==", 0, last)


def exactness(models: dict, texts: list[str]) -> list[Check]:
    out = []
    for shape, path in models.items():
        kw = dict(pooling="cls+mean", layers=-1, max_length=128)
        cpu = embed(path, texts, "cpu", "float32", **kw)
        gpu = embed(path, texts, "cuda", "float32", **kw)
        out.append(check(f"{shape}: GPU float32 vs CPU float32, max abs diff", float(np.abs(gpu - cpu).max()), "<=",
                         1e-5, f"{len(texts)} texts, CLS + mean of the last layer"))
    return out


def whole_batches(models: dict, device: str = "cuda") -> list[Check]:
    """A BERT's batches run whole on the device: its load-time padding check (padded and unpadded probes, float32)
    must not find padding moving real tokens there, or every length would run in a pass of its own."""
    from bertfeat.backend import get_backend
    from bertfeat.models import resolve_model

    out = []
    for shape, path in models.items():
        for dtype in ("float32", "bfloat16"):
            split = get_backend(resolve_model(path), device, dtype).one_length_per_pass
            out.append(check(f"{shape} {dtype}: batches run whole (padding moves no real token)", int(split), "==", 0,
                             "load-time probe, float32 on the device"))
    return out


def half_precision(path: str, texts: list[str], device: str = "cuda") -> list[Check]:
    """Cosines with float32 at 12 layers, batch dependence in half precision, finite output. (``device`` is for
    the test that runs these same calls on CPU, so an argument BertEmbedder refuses fails there, not on a GPU.)"""
    from transformers import AutoConfig

    every_layer = list(range(AutoConfig.from_pretrained(path).num_hidden_layers + 1))  # 0 is the embeddings
    out = []
    kw = dict(pooling="cls+mean", layers=-1, max_length=256)
    fp32 = embed(path, texts, device, "float32", **kw)
    for dtype, bound in (("bfloat16", 0.999), ("float16", 0.9999)):
        x = embed(path, texts, device, dtype, **kw)
        out.append(check(f"bert-base {dtype} vs float32, min cosine", min_cosine(x, fp32), ">=", bound,
                         "12 layers, CLS + mean"))
        alone = np.vstack([embed(path, [t], device, dtype, **kw) for t in texts[:64]])
        out.append(check(f"bert-base {dtype}: a text alone vs in a batch, min cosine", min_cosine(alone, x[:64]),
                         ">=", 0.9999, f"max abs diff {np.abs(alone - x[:64]).max():.2e}; 64 texts"))
    long_texts = [" ".join(texts[i:i + 8]) for i in range(0, len(texts), 8)]
    finite = True
    detail = "float16 and bfloat16, 512-token windows, chunked"
    try:
        for dtype in ("float16", "bfloat16"):
            x = embed(path, long_texts + texts, device, dtype, pooling="mean+max", layers=every_layer,
                      layer_agg="concat", max_length=512, long_text="chunk")
            finite = finite and bool(np.isfinite(x).all())
    except ValueError as exc:  # bertfeat refuses non-finite features
        finite, detail = False, str(exc).splitlines()[0][:160]
    out.append(check("no NaN or inf in half precision", float(finite), "==", 1.0, detail))
    return out


def forced_oom(path: str, texts: list[str]) -> list[Check]:
    """A real out-of-memory error, forced by a ballast allocation: the job completes with the same vectors, and
    the cap it set is lifted once the memory is back."""
    import torch

    from bertfeat.backend import get_backend
    from bertfeat.gpu import MemoryCap
    from bertfeat.models import resolve_model

    kw = dict(pooling="mean", layers=-1, max_length=512, batch_tokens=32768)
    reference = embed(path, texts, "cuda", "float32", **kw)
    backend = get_backend(resolve_model(path), "cuda", "float32")
    dev = torch.device(backend.device)
    torch.cuda.synchronize(dev)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    embed(path, texts[:400], "cuda", "float32", **kw)
    batch_bytes = torch.cuda.max_memory_allocated(dev) - base  # what the largest batches took
    torch.cuda.empty_cache()
    backend.memory_cap = MemoryCap(patience=2)
    free = torch.cuda.mem_get_info(dev)[0]
    ballast = torch.empty(max(0, free - batch_bytes // 3), dtype=torch.uint8, device=dev)
    try:
        got = embed(path, texts, "cuda", "float32", **kw)
        errors = backend.memory_cap.errors
    finally:
        del ballast
        torch.cuda.empty_cache()
    passes = 0  # memory back: successful batches lift the cap (patience doubles with each error met)
    while backend.memory_cap.capped and passes < 8:
        embed(path, texts, "cuda", "float32", **kw)
        passes += 1
    return [
        check("forced OOM: errors met", errors, ">=", 1, f"ballast left a third of a {batch_bytes / 2**20:,.0f} MiB batch"),
        check("forced OOM: same vectors, max abs diff", float(np.abs(got - reference).max()), "<=", 1e-5,
              "float32, every row present"),
        check("forced OOM: cap lifted after the memory is back", float(not backend.memory_cap.capped), "==", 1.0,
              f"after {passes} more pass(es) over the texts; cap now {backend.memory_cap.limit}"),
    ]


def devices(path: str, texts: list[str]) -> list[Check]:
    import torch

    from bertfeat.backend import get_backend
    from bertfeat.devices import resolve_device
    from bertfeat.models import resolve_model

    n = torch.cuda.device_count()
    first = embed(path, texts, "cuda:0", "float32")
    worst = max(float(np.abs(embed(path, texts, f"cuda:{i}", "float32") - first).max()) for i in range(n))
    out = [check(f"cuda:0 .. cuda:{n - 1} agree, max abs diff", worst, "<=", 1e-5, f"{n} GPU(s)")]
    try:
        resolve_device(f"cuda:{n}")
        refused = False
    except ValueError:
        refused = True
    spec = resolve_model(path)
    same = get_backend(spec, "cuda", "float32") is get_backend(spec, "cuda:0", "float32")
    out.append(check(f"cuda:{n} refused, 'cuda' and 'cuda:0' share one model", float(refused and same), "==", 1.0))
    return out


def ray_fractional(path: str, texts: list[str], root: Path) -> Check:
    name = "Ray engine, gpus_per_worker=0.5, 2 workers"
    try:
        import ray  # noqa: F401
    except ImportError:
        return skipped(name, "ray not installed")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bertfeat.ray import embed_parquet

    src = root / "ray-in.parquet"
    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), src)
    embed_parquet(src, root / "ray-out", "text", keep_cols="id", gpus_per_worker=0.5, num_workers=2, model=path,
                  dtype="float32", pooling="mean", layers=-1, quiet=True, batch_rows=max(1, len(texts) // 4))
    got = pq.read_table(root / "ray-out").to_pandas().sort_values("id")
    local = embed(path, texts, "cuda", "float32", pooling="mean", layers=-1)
    diff = float(np.abs(got.drop(columns="id").to_numpy(np.float32) - local).max())
    return check(name, diff, "<=", 1e-5, "max abs diff with the local engine, float32")


def speed(path: str, texts: list[str]) -> list[Check]:
    """bertfeat bf16 against sentence-transformers fp16 and against the GPU's bf16 matmul peak (BERT-base)."""
    from benchmarks.bench_encode import Bertfeat, SentenceTransformers

    from transformers import AutoTokenizer

    max_length = 256
    lengths = common.token_lengths(AutoTokenizer.from_pretrained(path), texts, max_length)
    systems = {"bertfeat": Bertfeat(path, "cuda", "bfloat16", max_length),
               "peer": SentenceTransformers(path, "cuda", "float16", max_length)}
    for run in systems.values():
        run(texts[:256])  # warm-up
    seconds = {k: [] for k in systems}
    for _ in range(2):
        for k, run in systems.items():
            common._sync("cuda")
            t0 = time.perf_counter()
            run(texts)
            common._sync("cuda")
            seconds[k].append(time.perf_counter() - t0)
    tok_s = {k: lengths.sum() / min(v) for k, v in seconds.items()}
    peak = common.matmul_rate("bfloat16", "cuda")
    achieved = common.bert_flops(lengths, 768, 3072, 12) / min(seconds["bertfeat"])
    return [
        check("tokens/s: bertfeat bf16 / sentence-transformers fp16", tok_s["bertfeat"] / tok_s["peer"], ">=", 2.0,
              f"{tok_s['bertfeat']:,.0f} vs {tok_s['peer']:,.0f} tokens/s; BERT-base, {len(texts):,} texts"),
        check("bertfeat bf16 FLOP/s / bf16 matmul peak", achieved / peak, ">=", 0.30,
              f"{achieved / 1e12:,.1f} of {peak / 1e12:,.1f} TFLOP/s"),
    ]


def model_rate(path: str, texts: list[str], device: str = "cuda", dtype: str = "bfloat16") -> float:
    """Tokens/s of the model alone: bertfeat's batches of ``texts``, already padded and on the device, through its
    forward pass and pooling in its arithmetic (what the device can consume if the host keeps up)."""
    from bertfeat.backend import get_backend
    from bertfeat.models import resolve_model

    backend = get_backend(resolve_model(path), device, dtype)
    batches = common.device_batches(backend, texts, 256)
    run = common.model_pass(backend, batches)
    run()  # warm-up
    tokens = sum(int(mask.sum()) for _, mask in batches)
    seconds = []
    for _ in range(2):
        common._sync(device)
        t0 = time.perf_counter()
        run()
        common._sync(device)
        seconds.append(time.perf_counter() - t0)
    return tokens / min(seconds)


def host_ceiling(texts: list[str], model_tokens_per_s: float | None) -> Check:
    """The host's part alone (tokenize, plan, pad) against the model's part alone: a host that cannot outrun the
    model leaves the device waiting. (Against bertfeat's end-to-end rate the line passed by construction: that rate
    is held down by the host it is compared with.)"""
    from benchmarks import bench_host

    ceiling = bench_host.measure(texts, repeats=2)["host_ceiling_tokens_per_s"]
    if not model_tokens_per_s:
        return check("host ceiling (tokenize + plan + pad), tokens/s", ceiling, ">=", 0.0, "no model rate to compare")
    return check("host ceiling / model pass alone, tokens/s", ceiling / model_tokens_per_s, ">=", 1.5,
                 f"{ceiling:,.0f} tokens/s on the host alone, {model_tokens_per_s:,.0f} for the model alone")


def run_checks(quick: bool = False) -> list[Check]:

    n = 2_000 if quick else 20_000
    texts = common.austen_texts(n)
    checks: list[Check] = []

    def attempt(name, fn, *args):
        try:
            result = fn(*args)
        except Exception as exc:  # one failed measurement must not hide the others
            checks.append(failed(name, exc))
            return None
        checks.extend(result if isinstance(result, list) else [result])
        return result

    with tempfile.TemporaryDirectory(prefix="bertfeat-gpu-check-") as tmp:
        root = Path(tmp)
        models = {shape: random_model(shape, root) for shape in SHAPES}
        attempt("GPU tests", gpu_tests)
        attempt("GPU float32 vs CPU float32", exactness, models, texts[:100])
        attempt("half precision", half_precision, models["bert-base"], texts[:400])
        attempt("batches run whole", whole_batches, models)
        attempt("forced OOM", forced_oom, models["minilm"], texts[:3000])
        attempt("cuda:N", devices, models["minilm"], texts[:50])
        attempt("Ray engine, fractional GPU", ray_fractional, models["minilm"], texts[:400], root)
        attempt("tokens/s against the peer and the peak", speed, models["bert-base"], texts)
        try:
            rate = model_rate(models["bert-base"], texts)
        except Exception as exc:
            checks.append(failed("model pass alone", exc))
            rate = None
        attempt("host ceiling", host_ceiling, texts[:5000], rate)
    return checks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 texts instead of 20,000 (a smoke run)")
    args = parser.parse_args(argv)
    import torch

    from bertfeat.gpu import cuda_available

    if not cuda_available():
        print(f"no GPU: torch {torch.__version__} sees no CUDA device here (CUDA build: {torch.version.cuda}); "
              "nothing to check. Run this on a machine with an NVIDIA GPU.")
        return 0
    t0 = time.perf_counter()
    checks = run_checks(quick=args.quick)
    print(table(checks))
    names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    print(f"\n{names}; torch {torch.__version__}, CUDA {torch.version.cuda}; {time.perf_counter() - t0:,.0f} s")
    return exit_code(checks)


if __name__ == "__main__":
    raise SystemExit(main())
