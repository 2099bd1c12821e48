"""Every bfloat16 product route torch offers on this CPU, against float32, at a model's own shapes (issue 13).

issue 13 asks, for CPUs with AVX512-BF16 but no AMX (where torch's bf16 matmul ran at half the fp32 rate), for a
bf16 route that is fast there: oneDNN's other kernels, weight layouts, fp32 accumulation. This prints, for each
product of one encoder layer (Q/K/V in one product, the attention output, the two feed-forward products) at a
worker's token budget, the rate of each route, and the best bf16 route as a share of the best fp32 one:

- ``fp32 linear``: ``F.linear`` in float32 (MKL's or oneDNN's sgemm, torch decides);
- ``fp32 packed``: oneDNN's packed (blocked) weights, float32, as bertfeat's onednn-float32 rung runs them;
- ``bf16 linear``: ``F.linear`` on bfloat16 tensors (oneDNN's matmul, plain weight layout);
- ``bf16 packed``: oneDNN's packed bfloat16 weights, as bertfeat's onednn-bfloat16 rung runs them;
- ``bf16 packed + cast``: the same with the float32 activations cast to bfloat16 first, the whole cost the fused
  bf16 pass pays per product (its residual stream stays float32);
- ``fp32 in, bf16 math``: float32 tensors with ``torch.backends.mkldnn.matmul.fp32_precision = "bf16"``, oneDNN
  converting inside its kernel (float32 accumulation and output);
- ``fp32 packed + post-op``: the product exactly as bertfeat's onednn-float32 rung calls it in its layer, with GELU
  fused into the first feed-forward product and the residual add into the attention-output and second feed-forward
  products (against ``fp32 packed``, what the fused post-ops cost on this CPU).

Each rate is the fastest of repeated calls after a warm-up, on ``--threads`` threads (default 1: each of
bertfeat's CPU workers runs its batch on one thread). Run with ``ONEDNN_VERBOSE=1`` to see which kernel each route
gets (``brg_matmul:avx512_core_bf16``, ``...amx...``). To stand in for a CPU without AMX on one that has it, set
``ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16`` (oneDNN then never uses AMX)::

    PYTHONPATH=. python -m benchmarks.bf16_routes
    PYTHONPATH=. python -m benchmarks.bf16_routes --hidden 768 --tokens 1024 --threads 2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time


def _fastest(fn, seconds: float) -> float:
    fn()
    best, n, start = float("inf"), 0, time.perf_counter()
    while n < 3 or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
        n += 1
    return best


@contextlib.contextmanager
def _fp32_precision(value: str):
    import torch

    matmul = torch.backends.mkldnn.matmul
    old = matmul.fp32_precision
    matmul.fp32_precision = value
    try:
        yield
    finally:
        matmul.fp32_precision = old


def routes(x, w, b, post: str | None = None):
    """``{name: callable}`` computing ``x @ w.T + b`` by each route this torch offers on this CPU (float32
    ``x``/``w``/``b`` in; a route oneDNN refuses here is left out). ``post`` (``"gelu"`` or ``"add"``) adds the
    route ``fp32 packed + post-op``: GELU of the product, or the product plus a residual of its shape."""
    import torch
    import torch.nn.functional as F

    bf = torch.bfloat16
    xb, wb, bb = x.to(bf), w.to(bf), b.to(bf)
    out = {"fp32 linear": lambda: F.linear(x, w, b), "bf16 linear": lambda: F.linear(xb, wb, bb)}
    pointwise = torch.ops.mkldnn._linear_pointwise
    for name, (xx, ww, bias) in {"fp32 packed": (x, w, b), "bf16 packed": (xb, wb, bb)}.items():
        try:
            packed = torch.ops.mkldnn._reorder_linear_weight(ww, None)
            pointwise(xx, packed, bias, "none", [], "")
        except (RuntimeError, AttributeError):
            continue
        out[name] = (lambda xx, packed, bias: lambda: pointwise(xx, packed, bias, "none", [], ""))(xx, packed, bias)
        if name == "fp32 packed":
            if post == "gelu":
                out["fp32 packed + post-op"] = (lambda packed: lambda: pointwise(x, packed, b, "gelu", [], "none"))(packed)
            elif post == "add":
                residual = torch.ones(x.shape[0], w.shape[0])
                out["fp32 packed + post-op"] = (lambda packed: lambda: pointwise.binary(x, residual, packed, b, "add"))(
                    packed)
            else:
                out["fp32 packed + post-op"] = out[name]
        if name == "bf16 packed":
            out["bf16 packed + cast"] = (lambda packed: lambda: pointwise(x.to(bf), packed, bb, "none", [], ""))(packed)
    if hasattr(torch.backends.mkldnn, "matmul") and hasattr(torch.backends.mkldnn.matmul, "fp32_precision"):
        def implicit():
            with _fp32_precision("bf16"):
                return torch.addmm(b, x, w.t())
        try:
            implicit()
            out["fp32 in, bf16 math"] = implicit
        except RuntimeError:
            pass
    return out


def layer_shapes(hidden: int, intermediate: int) -> dict[str, tuple[int, int, str | None]]:
    """(in, out) features of each product of one encoder layer, and the post-op the fused pass gives it."""
    return {"qkv": (hidden, 3 * hidden, None), "attn out": (hidden, hidden, "add"),
            "ffn in": (hidden, intermediate, "gelu"), "ffn out": (intermediate, hidden, "add")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=384, help="hidden size (default 384: MiniLM; 768: base)")
    parser.add_argument("--intermediate", type=int, default=None, help="default 4 x hidden")
    parser.add_argument("--tokens", type=int, default=1024, help="rows of each product (default 1024: a worker's "
                        "token budget)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=0.3, help="time per route and shape")
    args = parser.parse_args(argv)

    import torch

    from bertfeat.hardware import cpu_flags, cpu_id, cpu_model

    torch.set_num_threads(args.threads)
    intermediate = args.intermediate or 4 * args.hidden
    print(f"cpu {cpu_model()} ({cpu_id()}), flags {' '.join(cpu_flags())}; torch {torch.__version__}, "
          f"{args.threads} thread(s); ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', 'unset')}; "
          f"{args.tokens} tokens, hidden {args.hidden}, intermediate {intermediate}")
    gen = torch.Generator().manual_seed(0)
    table: dict[str, dict[str, float]] = {}
    flops_total, time_total = 0.0, {}
    with torch.inference_mode():
        for shape, (k, n, post) in layer_shapes(args.hidden, intermediate).items():
            x = torch.randn(args.tokens, k, generator=gen)
            w = torch.randn(n, k, generator=gen) / k ** 0.5
            b = torch.randn(n, generator=gen)
            flops = 2.0 * args.tokens * k * n
            flops_total += flops
            for name, fn in routes(x, w, b, post).items():
                t = _fastest(fn, args.seconds)
                table.setdefault(name, {})[shape] = flops / t / 1e9
                time_total[name] = time_total.get(name, 0.0) + t
    shapes = list(layer_shapes(args.hidden, intermediate))
    print("\n| route | " + " | ".join(f"{s} GFLOP/s" for s in shapes) + " | layer GFLOP/s | x best fp32 |")
    print("|---|" + "---|" * (len(shapes) + 2))
    layer = {name: flops_total / t / 1e9 for name, t in time_total.items()}
    best_fp32 = max(v for name, v in layer.items() if name in ("fp32 linear", "fp32 packed"))
    for name, rates in table.items():
        cells = " | ".join(f"{rates[s]:,.0f}" if s in rates else "-" for s in shapes)
        print(f"| {name} | {cells} | {layer[name]:,.0f} | {layer[name] / best_fp32:.2f} |")


if __name__ == "__main__":
    main()
