"""Where bertfeat's GPU pass spends its time, and what the levers give: one short run on a GPU machine.

    PYTHONPATH=. python -m benchmarks.gpu_levers            # about 2 minutes on one H100/H200
    PYTHONPATH=. python -m benchmarks.gpu_levers --device cpu --n 200 --shape minilm   # a smoke run without a GPU

A random-weight BERT of the BERT-base shape (the bundled tokenizer files, no weights needed), Austen paragraphs,
max_length 256, mean of the last layer, the dtype asked for. It prints, each as tokens/s and as a share of the
card's measured matmul peak in that dtype:

- the host alone: tokenizing the texts (:mod:`bertfeat.tokens`, and transformers' own call);
- ``BertEmbedder.transform`` end to end at several token budgets and batches in flight, with no model behind it
  (the host's part alone), and with transformers' tokenizer call in place of bertfeat's direct one;
- the model pass alone over the same planned batches, already on the device (no tokenizing, no copies, one sync
  at the end), with bertfeat's arithmetic (autocast over float32 weights, no flash attention) and with the others
  (weights cast to the dtype; flash attention allowed), so that each choice's cost is seen;
- where the time of one end-to-end pass goes (torch.profiler, the top operations by device time and host time).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.gpu_check import SHAPES, random_model  # noqa: E402


def best_of(fn, repeats: int, device: str) -> float:
    times = []
    for _ in range(repeats):
        common._sync(device)
        t0 = time.perf_counter()
        fn()
        common._sync(device)
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--shape", default="bert-base", choices=sorted(SHAPES))
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--budgets", default="default,65536,131072")
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--profile-n", type=int, default=5000)
    parser.add_argument("--no-model-pass", dest="model_pass", action="store_false",
                        help="skip the model pass alone (the end-to-end rows and the profile only)")
    parser.add_argument("--no-end-to-end", dest="end_to_end", action="store_false",
                        help="skip the tokenizing and end-to-end rows (the model pass alone and the profile only)")
    parser.add_argument("--compile", action="store_true",
                        help="add a row for the model pass compiled by torch.compile (dynamic shapes), with its largest "
                             "difference from bertfeat's arithmetic")
    args = parser.parse_args(argv)

    import torch

    from bertfeat import BertEmbedder, gpu
    from bertfeat.backend import get_backend
    from bertfeat.models import resolve_model

    warnings.simplefilter("ignore")
    texts = common.austen_texts(args.n)
    max_length = 256
    with tempfile.TemporaryDirectory(prefix="bertfeat-gpu-levers-") as tmp:
        path = random_model(args.shape, Path(tmp))
        backend = get_backend(resolve_model(path), args.device, args.dtype)
        cfg = backend.config
        lengths = common.token_lengths(backend.tokenizer, texts, max_length)
        flops = common.bert_flops(lengths, cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers)
        peak = common.matmul_rate(args.dtype, args.device)
        n_tok = int(lengths.sum())
        print(f"{args.shape} {args.dtype} on {args.device} "
              f"({torch.cuda.get_device_name() if args.device.startswith('cuda') else 'cpu'}); {len(texts):,} texts, "
              f"{n_tok:,} tokens, {flops / 1e12:.2f} TFLOP a pass; {args.dtype} matmul peak {peak / 1e12:.1f} TFLOP/s; "
              f"default budget {backend.default_batch_tokens:,} tokens, {backend.workers} in flight")
        rows = []

        def report(name: str, seconds: float, note: str = "") -> None:
            # on CPU (a smoke run) one median square product is no reference: bench_encode and bench_ceiling
            # measure the CPU pass against the machine's rate
            share = f"{100 * flops / seconds / peak:.1f}" if args.device.startswith("cuda") else "-"
            rows.append([name, f"{seconds:.3f}", f"{n_tok / seconds:,.0f}", share, note])
            print(f"  {name}: {seconds:.3f} s, {n_tok / seconds:,.0f} tokens/s, {share}% of peak {note}", flush=True)

        def embedder(batch_tokens=None):
            """A fitted BertEmbedder of the benchmark's recipe, warmed up on 2,000 of the texts."""
            emb = BertEmbedder(model=path, device=args.device, dtype=args.dtype, pooling="mean", layers=-1,
                               max_length=max_length, batch_tokens=batch_tokens).fit(["warm"])
            emb.transform(texts[:2000])
            return emb

        content = backend.content_tokens
        if args.end_to_end:
            report("tokenize alone (host), bertfeat.tokens" + (" (direct)" if content.direct else ""),
                   best_of(lambda: backend.tokenize(texts), args.repeats, "cpu"))
            report("tokenize alone (host), transformers' call",
                   best_of(lambda: content._by_transformers(texts), args.repeats, "cpu"))

            # -- end to end ----------------------------------------------------------------------------------------
            workers0 = backend.workers
            for workers in [int(w) for w in args.workers.split(",")]:
                for budget in args.budgets.split(","):
                    bt = None if budget == "default" else int(budget)
                    if workers != workers0 and budget != "default":
                        continue
                    backend.workers = workers
                    emb = embedder(bt)
                    report(f"transform, budget {budget}, {workers} in flight",
                           best_of(lambda: emb.transform(texts), args.repeats, args.device))
            backend.workers = workers0
            # the host's part alone: tokenize, plan and pad every batch as transform does, with no model behind it
            forward = backend._forward
            backend._forward = lambda units, pooling, groups: (
                backend._pad(units), np.zeros((len(units), 1, cfg.hidden_size), np.float32))[1]
            emb = embedder()
            report("transform with no model (the host's part alone: tokenize, plan, pad)",
                   best_of(lambda: emb.transform(texts), args.repeats, args.device))
            backend._forward = forward
            if content.direct:  # the same end to end with transformers' tokenizer call, as before bertfeat.tokens
                rust, content._rust = content._rust, None
                emb = embedder()
                report(f"transform, budget default, {workers0} in flight, transformers' tokenizer call",
                       best_of(lambda: emb.transform(texts), args.repeats, args.device))
                content._rust = rust

        # -- the model pass alone, batches already on the device ------------------------------------------------
        budgets = [backend.default_batch_tokens] + [int(b) for b in args.budgets.split(",") if b != "default"]
        if backend.model is None or not args.model_pass:  # None: the fused CPU pass, not this one
            budgets = []
        for budget in budgets:
            batches = common.device_batches(backend, texts, max_length, budget)

            def run_of(model, numerics=None):
                return common.model_pass(backend, batches, model, numerics)

            def autocast_flash():
                return torch.autocast(torch.device(args.device).type, dtype=backend.torch_dtype)

            reference = run_of(backend.model)()  # warm-up, and the outputs to compare with
            report(f"model pass alone, budget {budget:,}, bertfeat's arithmetic",
                   best_of(run_of(backend.model), args.repeats, args.device), f"{len(batches)} batches")
            if args.dtype != "float32":
                # autocast caches its casts of float32 weights only for weights that require grad, and bertfeat's
                # are frozen: every product casts its weight again in every batch. Holding each linear's weight
                # and bias in the dtype already is the same arithmetic (the same rounding of the same numbers).
                held = copy.deepcopy(backend.model)
                for module in held.modules():
                    if isinstance(module, torch.nn.Linear):
                        module.weight.data = module.weight.data.to(backend.torch_dtype)
                        if module.bias is not None:
                            module.bias.data = module.bias.data.to(backend.torch_dtype)
                outs = run_of(held)()
                same = all(torch.equal(a, b) for a, b in zip(outs, reference))
                report(f"model pass alone, budget {budget:,}, bertfeat's arithmetic, linear weights held in "
                       f"{args.dtype}", best_of(run_of(held), args.repeats, args.device),
                       f"same bytes as bertfeat's arithmetic: {same}")
                del held, outs
            if args.compile:
                compiled = torch.compile(backend.model, dynamic=True)
                t0 = time.perf_counter()
                outs = run_of(compiled)()
                first = time.perf_counter() - t0
                diff = max(float((a - b).abs().max()) for a, b in zip(outs, reference))
                report(f"model pass alone, budget {budget:,}, bertfeat's arithmetic, torch.compile (dynamic)",
                       best_of(run_of(compiled), args.repeats, args.device),
                       f"first pass with compiling {first:.1f} s; max abs diff {diff:.2e}")
                del compiled, outs
            if args.device.startswith("cuda") and args.dtype != "float32":
                run_of(backend.model, autocast_flash)()
                report(f"model pass alone, budget {budget:,}, autocast, flash allowed",
                       best_of(run_of(backend.model, autocast_flash), args.repeats, args.device))
                low = copy.deepcopy(backend.model).to(backend.torch_dtype)
                run_of(low, contextlib.nullcontext)()
                report(f"model pass alone, budget {budget:,}, weights in {args.dtype}, flash allowed",
                       best_of(run_of(low, contextlib.nullcontext), args.repeats, args.device))
                with gpu.held_flag("no_flash_attention").held():
                    report(f"model pass alone, budget {budget:,}, weights in {args.dtype}, no flash",
                           best_of(run_of(low, contextlib.nullcontext), args.repeats, args.device))
                del low
            del batches

        print("\n| what | seconds | tokens/s | % of peak | note |\n|---|---|---|---|---|")
        for r in rows:
            print("| " + " | ".join(r) + " |")

        # -- where one end-to-end pass spends its time -------------------------------------------------------------
        if args.profile_n:
            from torch.profiler import ProfilerActivity, profile

            emb = embedder()
            sub = texts[: args.profile_n]
            emb.transform(sub)
            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device.startswith("cuda") else [])
            common._sync(args.device)
            t0 = time.perf_counter()
            with profile(activities=activities) as prof:
                emb.transform(sub)
                common._sync(args.device)
            wall = time.perf_counter() - t0
            events = prof.key_averages()
            device_us = sum(e.self_device_time_total for e in events) if args.device.startswith("cuda") else 0
            print(f"\nprofile: {len(sub):,} texts, wall {wall:.3f} s under the profiler; kernels busy "
                  f"{device_us / 1e6:.3f} s ({100 * device_us / 1e6 / wall:.0f}% of the wall)")
            key = "self_device_time_total" if args.device.startswith("cuda") else "self_cpu_time_total"
            print(events.table(sort_by=key, row_limit=18, max_name_column_width=60))
            print(events.table(sort_by="self_cpu_time_total", row_limit=18, max_name_column_width=60))


if __name__ == "__main__":
    main()
