"""Shared pieces of the benchmarks: real texts, token and FLOP counts, matmul rates, peak memory, tables.

Nothing here writes into the repository; nothing reaches the network.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
AUSTEN = REPO / "data" / "austen.csv.gz"
# the bundled model's tokenizer files (benchmarks/assets/README.md): random-weight models need no more
TOKENIZER = REPO / "benchmarks" / "assets" / "minilm-tokenizer"


# -- data ------------------------------------------------------------------------------------------------------


def austen_texts(n: int, dup_frac: float = 0.0, seed: int = 0) -> list[str]:
    """``n`` Jane Austen paragraphs in random order, ``dup_frac`` of them repeats of the others.

    Without duplicates every text is distinct: the 9,747 distinct paragraphs are sampled without replacement, and
    past that they come round again with a ``" (k)"`` suffix, so the length distribution stays Austen's. Repeats
    are drawn uniformly from the distinct texts, so their lengths follow the same distribution.
    """
    import pandas as pd

    pool = pd.read_csv(AUSTEN)["text"].drop_duplicates().tolist()
    rng = np.random.default_rng(seed)
    n_unique = n - int(round(n * dup_frac))
    order = rng.permutation(len(pool))
    unique = []
    for k in range(n_unique):
        text = pool[order[k % len(pool)]]
        unique.append(text if k < len(pool) else f"{text} ({k // len(pool)})")
    repeats = [unique[i] for i in rng.integers(0, n_unique, n - n_unique)]
    texts = unique + repeats
    return [texts[i] for i in rng.permutation(len(texts))]


def token_lengths(tokenizer, texts: list[str], max_length: int) -> np.ndarray:
    """Real tokens per text as the model sees it: content tokens plus [CLS]/[SEP], truncated to ``max_length``."""
    ids = tokenizer(texts, add_special_tokens=True, truncation=True, max_length=max_length)["input_ids"]
    return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))


def bert_flops(lengths: np.ndarray, hidden: int, intermediate: int, layers: int) -> float:
    """FLOPs of a BERT encoder forward over sequences of ``lengths`` real tokens (no padding counted).

    Per layer and token: ``2 * (4 h^2 + 2 h i)`` for the Q/K/V/output and feed-forward products; per layer and
    sequence of ``n`` tokens: ``4 n^2 h`` for the attention scores and their weighted sum.
    """
    n = lengths.astype(np.float64)
    per_layer = 2.0 * n.sum() * (4 * hidden * hidden + 2 * hidden * intermediate) + 4.0 * hidden * (n * n).sum()
    return layers * per_layer


# -- machine ---------------------------------------------------------------------------------------------------


def matmul_rate(dtype: str, device: str = "cpu", size: int | None = None, repeats: int = 5,
                clock=time.perf_counter) -> float:
    """Measured FLOP/s of one square product in ``dtype`` (median of ``repeats`` after a warm-up), by the fastest
    route bertfeat's CPU path uses (:func:`bertfeat.hardware.product_routes`: a plain product and, on CPU, oneDNN's
    packed linear). The second matters on AMD CPUs with AVX-512, where MKL's sgemm behind ``torch.matmul`` ran at 219
    GFLOP/s on a 2-core Zen 5 and oneDNN's packed product at about 500: a reference rate from ``matmul`` alone made
    bertfeat's fused pass look like 159% of the machine's rate."""
    import torch

    from bertfeat.hardware import product_routes

    size = size or (2048 if device == "cpu" else 8192)
    dt = getattr(torch, dtype)
    a = torch.randn(size, size, device=device).to(dt)
    b = torch.randn(size, size, device=device).to(dt)
    routes = product_routes(a, b)  # b as a (out, in) weight: the same FLOPs as a @ b
    best = 0.0
    with torch.inference_mode():
        for run in routes:
            times = []
            try:
                run()
            except RuntimeError:  # a packed route that checked out but has no kernel at this size
                continue
            for i in range(repeats + 1):
                _sync(device)
                t0 = clock()
                run()
                _sync(device)
                if i:
                    times.append(clock() - t0)
            best = max(best, 2.0 * size**3 / statistics.median(times))
    return best


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def device_batches(backend, texts: list[str], max_length: int, budget: int | None = None) -> list:
    """``texts`` as bertfeat's planner batches them (truncated at ``max_length``, length-sorted, ``budget`` tokens a
    batch, the backend's default when None), padded and already on the backend's device: ``[(ids, mask), ...]``.
    What is left to time is the model alone (:func:`model_pass`)."""
    import torch

    from bertfeat.batching import TokenSeqs, make_units, plan_batches

    units = make_units(TokenSeqs.from_lists(backend.tokenize(texts)), max_length - backend.n_special, "truncate", 0)
    lengths = units.ids.length + backend.n_special
    batches = []
    for idx in plan_batches(lengths, budget or backend.default_batch_tokens):
        ids, mask = backend._pad(units.ids[idx])
        batches.append((torch.from_numpy(ids).to(backend.device), torch.from_numpy(mask).to(backend.device)))
    return batches


def model_pass(backend, batches: list, model=None, numerics=None):
    """A callable running the model alone over ``batches`` (:func:`device_batches`) and mean-pooling the last layer,
    returning the pooled blocks, still on the device. ``model`` (default: the backend's transformers model, or its
    fused CPU pass where it has one) and ``numerics`` (default: the backend's own arithmetic) let a benchmark time
    variants of either."""
    import torch

    from bertfeat.pooling import pool_blocks

    last = backend.spec.num_layers
    fast = backend.fast if model is None else None
    model = backend.model if model is None else model
    numerics = numerics or (lambda: backend._numerics(fast))

    def run() -> list:
        outs = []
        with torch.inference_mode(), numerics():
            for ids, mask in batches:
                hidden = fast(ids, mask, [last]) if fast is not None else \
                    {last: model(input_ids=ids, attention_mask=mask).last_hidden_state}
                outs.append(pool_blocks(hidden, mask, ("mean",), ((last,),)))
        return outs

    return run


def machine_summary(device: str, hidden: int = 384, intermediate: int = 1536) -> dict:
    """The machine class a figure belongs to: CPU model and generation, the instruction sets that decide float32 /
    bfloat16 speed, threads, bertfeat's measured product rates per dtype at the model's shape, and versions."""
    import platform

    import torch

    from bertfeat.hardware import machine_report

    m = machine_report(hidden, intermediate)
    info = {
        "cpu": m["cpu"],
        "cpu_id": m["cpu_id"],
        "flags": "not listed by this OS" if m["flags"] is None else " ".join(m["flags"]) or "none",
        "native dtypes": "not known" if m["native_dtypes"] is None else "/".join(m["native_dtypes"]),
        "matmul GFLOP/s (fp32/bf16/fp16)": "/".join(f"{r:.0f}" if r else "n/a" for r in m["matmul_gflops"].values()),
        "fastest dtype": m["fastest_dtype"],
        "threads": torch.get_num_threads(),
        "cores": m["allotted_cores"],
        "python": platform.python_version(),
        "torch": torch.__version__,
    }
    for name in ("transformers", "sentence_transformers", "numpy"):
        try:
            info[name] = __import__(name).__version__
        except ImportError:
            info[name] = "missing"
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return info


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


# -- timing ----------------------------------------------------------------------------------------------------


@dataclass
class Timing:
    seconds: list
    loads: list

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def timed(fn, *args, clock=time.perf_counter):
    """Run ``fn(*args)``; return its result, the seconds on ``clock`` and the 1-minute load average around it.

    ``time.process_time`` as the clock counts CPU seconds of this process only, which other processes on a busy
    machine do not inflate; it is a fair measure of work only with one thread (an idle OpenMP thread spins).
    """
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    t0 = clock()
    out = fn(*args)
    seconds = clock() - t0
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return out, seconds, (load0 + load1) / 2


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return float((a * b).sum(axis=1).min())


# -- peak memory, one system per child process -------------------------------------------------------------------


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB.

    On Linux this is ``VmHWM`` from /proc/self/status: ``ru_maxrss`` survives ``exec``, so a child started from a
    big parent would report the parent's size. Elsewhere ``ru_maxrss`` (KiB on Linux, bytes on macOS).
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return maxrss_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def maxrss_mib(maxrss: int) -> float:
    """An rusage's ``ru_maxrss`` in MiB: it is KiB on Linux, bytes on macOS."""
    return maxrss / 1024 / (1024 if sys.platform == "darwin" else 1)


def child_peak_rss(module: str, system: str, texts: list[str], options: dict) -> dict:
    """Run ``system`` once on ``texts`` in a fresh interpreter and return its peak RSS (and after-import RSS).

    A child per system keeps the figures honest: one process's ``ru_maxrss`` only ever grows, so systems measured
    in turn inside the parent would each inherit the peak of the ones before.
    """
    with tempfile.TemporaryDirectory(prefix="bertfeat-bench-") as tmp:
        path = Path(tmp) / "job.json"
        path.write_text(json.dumps({"system": system, "texts": texts, "options": options}))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        proc = subprocess.run(
            [sys.executable, "-m", module, "--child", str(path)], capture_output=True, text=True, env=env, cwd=REPO
        )
        if proc.returncode != 0:
            raise RuntimeError(f"child for {system} failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


# -- output ----------------------------------------------------------------------------------------------------


def markdown_table(header: list[str], rows: list[list]) -> str:
    def cell(x):
        if isinstance(x, float):
            if x != x:
                return "n/a"
            if x == 0:
                return "0"
            return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}" if abs(x) >= 0.01 else f"{x:.2e}"
        return str(x)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)
