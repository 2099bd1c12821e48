"""Where the fused CPU pass's time goes, op by op, and the best rate its arrangement can reach on this machine.

issue 13 asks for exact mode at >= 90% of the machine's fp32 product rate. This benchmark says whether that is
reachable with the kernels torch has here: it plans the benchmark's texts into bertfeat's own CPU batches (token
budget, length sort), then on one thread times, for every batch shape, each op of one encoder layer as the fused
pass calls it (the four products, attention, GELU, layer norms and residual adds) and the fused pass itself. From
those it reports each op's share of the time and its rate, and the *ceiling*: the pass's FLOPs over the sum of its
ops' times, scaled to the workers bertfeat runs side by side (by how fast the products run with every worker busy),
as a share of the square-product reference rate that ``bench_encode`` reports against. A ceiling under 90% means no
amount of glue removal reaches the target with these kernels; only faster kernels for the ops that are not products.

Examples
--------
The bundled model on the benchmark's 1,000 Austen paragraphs::

    PYTHONPATH=. python -m benchmarks.bench_ceiling --n 1000

Base-size RoBERTa (random weights)::

    PYTHONPATH=. python -m benchmarks.bench_ceiling --model roberta-base-random --n 400
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.bench_encode import model_path  # noqa: E402

OPS = ("products", "attention", "gelu", "norms+adds")


def _median_time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def batch_shapes(lengths: np.ndarray, budget: int) -> list[np.ndarray]:
    """The real lengths of each batch bertfeat's planner makes of ``lengths`` at ``budget`` tokens."""
    from bertfeat.batching import plan_batches

    return [lengths[b] for b in plan_batches(lengths, budget)]


def layer_ops(fast, batch_lengths: np.ndarray) -> dict:
    """Closures running each op of one encoder layer on a batch of these lengths, as ``_FastBert.__call__`` does."""
    import torch
    import torch.nn.functional as F

    batch, tokens = len(batch_lengths), int(batch_lengths.max())
    h, heads = fast.hidden, fast.heads
    qkv_wb, out_wb, norm1, up_wb, down_wb, norm2 = fast.layers[0]
    mask = torch.zeros(batch, tokens, dtype=torch.long)
    for i, n in enumerate(batch_lengths):
        mask[i, :n] = 1
    keys = None if bool(mask.all()) else mask.bool()[:, None, None, :]
    scores_mask = fast._attention_bias(keys, tokens)
    x = torch.randn(batch, tokens, h)
    inter = fast._linear(x, up_wb)
    qkv = fast._linear(x, qkv_wb).view(batch, tokens, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
    ids = torch.randint(1000, 2000, (batch, tokens))

    fused = fast.onednn and not fast.low  # oneDNN's rungs run GELU and the residual add inside the products

    def products():
        fast._linear(x, qkv_wb)
        fast._linear_add(x, out_wb, x) if fused else fast._linear(x, out_wb)
        fast._linear(x, up_wb, gelu=fast.onednn)
        fast._linear_add(inter, down_wb, x) if fused else fast._linear(inter, down_wb)

    def rest():
        for norm in (norm1, norm2):
            F.layer_norm(x if fused else x + x, (h,), *norm, fast.eps)

    return {
        "products": products,
        "attention": lambda: F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=scores_mask),
        "gelu": (lambda: None) if fast.onednn else (lambda: F.gelu(inter)),
        "norms+adds": rest,
        "fused pass": lambda: fast(ids, mask, [len(fast.layers)]),
    }


def product_concurrency(fast, tokens: int, workers: int, rounds: int = 20) -> float:
    """How fast the products run with ``workers`` threads each running its own (one torch thread each), as a share
    of one thread running alone: 1.0 means no slow-down from the other workers."""
    import torch

    x = torch.randn(tokens, fast.hidden)
    weights = [w for w in (fast.layers[0][0], fast.layers[0][1], fast.layers[0][3])]

    def run(out: list):
        torch.set_num_threads(1)
        t0 = time.perf_counter()
        for _ in range(rounds):
            for w in weights:
                fast._linear(x, w)
        out.append(time.perf_counter() - t0)

    alone: list = []
    run(alone)
    run(alone)
    side: list = []
    threads = [threading.Thread(target=run, args=(side,)) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return min(alone) / statistics.median(side)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch
    from transformers import AutoConfig, AutoTokenizer

    from bertfeat import BertEmbedder
    from bertfeat.backend import DEFAULT_BATCH_TOKENS
    from bertfeat.hardware import _cpu_workers

    threads = torch.get_num_threads()
    workers = _cpu_workers(threads)
    budget = DEFAULT_BATCH_TOKENS["cpu"] * max(1, threads // workers)
    with tempfile.TemporaryDirectory() as root:
        path = model_path(args.model, Path(root))
        config = AutoConfig.from_pretrained(path)
        tokenizer = AutoTokenizer.from_pretrained(path)
        texts = common.austen_texts(args.n, 0.0, seed=args.seed)
        lengths = common.token_lengths(tokenizer, texts, args.max_length)
        embedder = BertEmbedder(model="default" if args.model == "default" else path, pooling="mean", layers=-1,
                                max_length=args.max_length, device="cpu", dtype="float32").fit(["warm"])
        backend = embedder._backend_loader()()
        fast = backend.fast
        if fast is None:
            raise SystemExit(f"{args.model} does not take bertfeat's fused CPU pass here ({backend.rung})")
        machine = common.machine_summary("cpu", config.hidden_size, config.intermediate_size)
        reference = common.matmul_rate("float32")
        batches = batch_shapes(lengths, budget)
        flops = common.bert_flops(lengths, config.hidden_size, config.intermediate_size, 1)
        product_flops = common.bert_flops(lengths, config.hidden_size, config.intermediate_size, 1) - \
            4.0 * config.hidden_size * float((lengths.astype(np.float64) ** 2).sum())

        torch.set_num_threads(1)
        spent = dict.fromkeys((*OPS, "fused pass"), 0.0)
        by_length: dict[int, dict] = {}
        with torch.inference_mode():
            for b in batches:
                for name, fn in layer_ops(fast, b).items():
                    t = _median_time(fn, args.repeats)
                    if name == "fused pass":
                        t /= len(fast.layers)  # per layer, embeddings included
                    spent[name] += t
                    bucket = by_length.setdefault(int(b.max() + 63) // 64 * 64, dict.fromkeys((*OPS, "fused pass"), 0.0))
                    bucket[name] += t
            concurrency = product_concurrency(fast, budget, workers)
        torch.set_num_threads(threads)

    ops_sum = sum(spent[o] for o in OPS)
    one_thread_product_rate = product_flops / spent["products"]
    scale = workers * concurrency / reference
    print(f"machine: {machine}")
    print(f"model {args.model}: {len(texts)} texts, {int(lengths.sum()):,} real tokens, {len(batches)} batches "
          f"(budget {budget} tokens, {workers} workers x 1 thread); rung {fast.rung}")
    if fast.onednn:
        print("oneDNN rung: GELU and the residual adds run inside the products, and are timed with them")
    print(f"reference (square fp32 product, {threads} threads): {reference / 1e9:.0f} GFLOP/s; "
          f"products with {workers} workers busy run at {concurrency:.3f} of one alone")
    print()
    rows = []
    for name in (*OPS, "fused pass"):
        share = spent[name] / spent["fused pass"]
        rows.append([name, f"{spent[name] * 1e3:.0f}", f"{100 * share:.1f}"])
    print("one encoder layer over all batches, one thread (ms; % of the fused pass):")
    print(common.markdown_table(["op", "ms", "% of fused"], rows))
    print()
    print("attention by padded length (ms per layer, all batches of that length; attention / products):")
    print(common.markdown_table(
        ["tokens up to", "products", "attention", "gelu", "attention / products"],
        [[k, f"{v['products'] * 1e3:.0f}", f"{v['attention'] * 1e3:.0f}", f"{v['gelu'] * 1e3:.0f}",
          f"{v['attention'] / v['products']:.3f}"] for k, v in sorted(by_length.items())]))
    print()
    print(f"one-thread product rate {one_thread_product_rate / 1e9:.1f} GFLOP/s; attention "
          f"{(flops - product_flops) / spent['attention'] / 1e9:.1f} GFLOP/s")
    print(f"fused pass, measured:           {100 * flops / spent['fused pass'] * scale:.1f}% of the reference")
    print(f"ceiling of its ops (no glue):   {100 * flops / ops_sum * scale:.1f}%")
    print(f"... with attention at the product rate: "
          f"{100 * flops / (ops_sum - spent['attention'] + (flops - product_flops) / one_thread_product_rate) * scale:.1f}%")
    print(f"products alone:                 {100 * one_thread_product_rate * scale:.1f}%")


if __name__ == "__main__":
    main()
