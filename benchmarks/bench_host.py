"""Host-side cost per 1,000 texts: tokenize, plan (windows, lengths, token-budget batches) and pad, no model.

This is the ceiling of what the CPU side can feed a GPU. ``before`` is a frozen copy of the per-token Python-list
planning and padding of commit cb5be2e; ``after`` is bertfeat's current :mod:`bertfeat.batching`. Tokenization is
the same call for both and reported on its own line. Needs no model weights (the bundled tokenizer files are in
``benchmarks/assets``).

Examples
--------
On an idle machine::

    PYTHONPATH=. python -m benchmarks.bench_host --n 20000 --repeats 5

Tokenization uses the tokenizer's own threads unless ``TOKENIZERS_PARALLELISM=false`` is set.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from benchmarks import common

PREFIX, SUFFIX, PAD = [101], [102], 0


# -- before: the list-based planning and padding of cb5be2e, kept here only to be measured against ---------------


def make_units_before(token_ids, window, long_text, stride):
    from bertfeat.batching import split_windows

    ids, owner = [], []
    starts = np.empty(len(token_ids) + 1, dtype=np.int64)
    for i, toks in enumerate(token_ids):
        starts[i] = len(ids)
        if long_text == "chunk":
            for a, b in split_windows(len(toks), window, stride):
                ids.append(list(toks[a:b]))
                owner.append(i)
        else:
            ids.append(list(toks[:window]))
            owner.append(i)
    starts[len(token_ids)] = len(ids)
    return ids, np.asarray(owner, dtype=np.int64), starts


def pad_before(units):
    lengths = [len(u) for u in units]
    n_special = len(PREFIX) + len(SUFFIX)
    longest = max(1, max(lengths) + n_special)
    ids = np.full((len(units), longest), PAD, dtype=np.int64)
    mask = np.zeros((len(units), longest), dtype=np.int64)
    p = len(PREFIX)
    ids[:, :p] = PREFIX
    for i, u in enumerate(units):
        ids[i, p : p + lengths[i]] = u
        ids[i, p + lengths[i] : p + lengths[i] + len(SUFFIX)] = SUFFIX
        mask[i, : lengths[i] + n_special] = 1
    mask[:, 0] = 1
    return ids, mask


def host_before(token_ids, window, long_text, stride, budget):
    from bertfeat.batching import plan_batches

    ids, _, _ = make_units_before(token_ids, window, long_text, stride)
    lengths = np.fromiter((len(u) + 2 for u in ids), dtype=np.int64, count=len(ids))
    for batch in plan_batches(lengths, budget):
        pad_before([ids[k] for k in batch])


def host_after(token_ids, window, long_text, stride, budget):
    from bertfeat.batching import TokenSeqs, make_units, pad_batch, plan_batches

    units = make_units(TokenSeqs.from_lists(token_ids), window, long_text, stride)
    lengths = units.ids.length + 2
    for batch in plan_batches(lengths, budget):
        pad_batch(units.ids[batch], PREFIX, SUFFIX, PAD)


def tokenizer():
    """The bundled tokenizer as bertfeat's backend calls it (:class:`bertfeat.tokens.ContentTokenizer`)."""
    from transformers import AutoTokenizer

    from bertfeat.tokens import ContentTokenizer

    return ContentTokenizer(AutoTokenizer.from_pretrained(str(common.TOKENIZER)))


def tokenize(tok, texts):
    return tok(texts)


def measure(texts, repeats: int = 3, max_length: int = 256, long_text: str = "truncate",
            budget: int = 32768) -> dict:
    """Median seconds per 1,000 texts of each stage, and the host-side ceiling in tokens/s."""
    tok = tokenizer()
    window, stride = max_length - 2, (max_length - 2) // 4 if long_text == "chunk" else 0
    token_ids = tokenize(tok, texts)
    real_tokens = sum(min(len(t), window) + 2 for t in token_ids)
    host_before(token_ids[:50], window, long_text, stride, budget)  # warm-up: imports, first-call costs
    host_after(token_ids[:50], window, long_text, stride, budget)
    times = {"tokenize": [], "plan+pad before": [], "plan+pad after": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        token_ids = tokenize(tok, texts)
        times["tokenize"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        host_before(token_ids, window, long_text, stride, budget)
        times["plan+pad before"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        host_after(token_ids, window, long_text, stride, budget)
        times["plan+pad after"].append(time.perf_counter() - t0)
    per_k = {k: statistics.median(v) * 1000 / len(texts) for k, v in times.items()}
    total_after = per_k["tokenize"] + per_k["plan+pad after"]
    return {
        "ms_per_1000_texts": {k: round(v * 1000, 3) for k, v in per_k.items()},
        "tokens_per_text": real_tokens / len(texts),
        "host_ceiling_tokens_per_s": real_tokens / len(texts) * 1000 / total_after,
        "host_ceiling_before_tokens_per_s": real_tokens / len(texts) * 1000
        / (per_k["tokenize"] + per_k["plan+pad before"]),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="Austen paragraphs (default 20,000)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--long-text", choices=["truncate", "chunk"], default="truncate")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = measure(common.austen_texts(args.n), args.repeats, args.max_length, args.long_text)
    rows = [[k, v] for k, v in result["ms_per_1000_texts"].items()]
    print(common.markdown_table(["stage", "ms per 1,000 texts"], rows))
    print(f"\n{result['tokens_per_text']:.1f} tokens per text; host ceiling (tokenize + plan + pad): "
          f"{result['host_ceiling_tokens_per_s']:,.0f} tokens/s (before: {result['host_ceiling_before_tokens_per_s']:,.0f})")
    print(f"machine: {common.machine_summary('cpu')}; load average {common.loadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
