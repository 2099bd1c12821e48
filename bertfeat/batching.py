"""Torch-free planning: dedup, long-text windows, token-length sort and token-budget batches, order restore, and
a prefetching iterator that overlaps planning with the model.

Every function here works on plain lists and numpy arrays, so it is tested without a model.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def unique_strings(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Return the distinct texts in first-seen order and, for each input, the index of its distinct text.

    Examples
    --------
    >>> uniques, inverse = unique_strings(["b", "a", "b"])
    >>> uniques, inverse.tolist()
    (['b', 'a'], [0, 1, 0])
    """
    index: dict[str, int] = {}
    inverse = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64, count=len(texts))
    return list(index), inverse


def split_windows(n_tokens: int, window: int, stride: int) -> list[tuple[int, int]]:
    """Cut ``n_tokens`` content tokens into ``[start, end)`` windows of at most ``window`` tokens.

    Consecutive windows share ``stride`` tokens. A text that fits gives one window, an empty text one empty window.

    Examples
    --------
    >>> split_windows(10, window=4, stride=1)
    [(0, 4), (3, 7), (6, 10)]
    >>> split_windows(3, window=4, stride=1)
    [(0, 3)]
    """
    if window < 1 or not 0 <= stride < window:
        raise ValueError(f"need window >= 1 and 0 <= stride < window, got window={window}, stride={stride}")
    spans = []
    start = 0
    while True:
        end = min(start + window, n_tokens)
        spans.append((start, end))
        if end >= n_tokens:
            return spans
        start = end - stride


@dataclass
class Units:
    """The token sequences actually sent to the model, and which text each belongs to.

    ``owner`` is non-decreasing and every text owns at least one unit, so the units of text ``i`` are
    ``starts[i]:starts[i + 1]``.
    """

    ids: list[list[int]]
    owner: np.ndarray
    starts: np.ndarray
    n_truncated: int
    n_chunked: int


def make_units(token_ids: Sequence[Sequence[int]], window: int, long_text: str, stride: int) -> Units:
    """Turn each text's content token ids (no special tokens) into one unit (truncate) or its windows (chunk)."""
    ids: list[list[int]] = []
    owner: list[int] = []
    starts = np.empty(len(token_ids) + 1, dtype=np.int64)
    n_long = 0
    for i, toks in enumerate(token_ids):
        starts[i] = len(ids)
        n = len(toks)
        if n > window:
            n_long += 1
        if long_text == "chunk":
            for a, b in split_windows(n, window, stride):
                ids.append(list(toks[a:b]))
                owner.append(i)
        else:
            ids.append(list(toks[:window]))
            owner.append(i)
    starts[len(token_ids)] = len(ids)
    chunk = long_text == "chunk"
    return Units(ids, np.asarray(owner, dtype=np.int64), starts,
                 n_truncated=0 if chunk else n_long, n_chunked=n_long if chunk else 0)


def plan_batches(lengths: Sequence[int], token_budget: int, max_batch_size: int | None = None) -> list[np.ndarray]:
    """Sort by length, longest first, and cut into batches whose padded size (rows x longest) fits the budget.

    A sequence longer than the budget still gets a batch of its own. Returns arrays of positions into ``lengths``;
    concatenated they are a permutation, which :func:`restore_order` undoes.

    Examples
    --------
    >>> [b.tolist() for b in plan_batches([3, 9, 4, 8], token_budget=18)]
    [[1, 3], [2, 0]]
    """
    if token_budget < 1:
        raise ValueError(f"token_budget must be a positive number of tokens, got {token_budget}")
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    batches = []
    start = 0
    while start < len(order):
        size = max(1, token_budget // max(int(lengths[order[start]]), 1))
        if max_batch_size:
            size = min(size, max_batch_size)
        batches.append(order[start:start + size])
        start += size
    return batches


def restore_order(batches: Sequence[np.ndarray], results: Sequence[np.ndarray]) -> np.ndarray:
    """Put per-batch result rows back in input order: the inverse of :func:`plan_batches`' permutation."""
    perm = np.concatenate(batches)
    stacked = np.concatenate(results, axis=0)
    out = np.empty_like(stacked)
    out[perm] = stacked
    return out


def prefetched(items: Iterable[T], depth: int = 1) -> Iterator[T]:
    """Yield ``items`` in order while a background thread computes up to ``depth`` of them ahead.

    For overlapping torch-free work (tokenizing and planning the next chunk of texts) with the model running the
    current one: the tokenizer and torch both release the GIL. An exception in the producer is raised here, at the
    item where it happened; closing the generator early stops the producer.
    """
    import queue
    import threading

    done = object()
    ready: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for item in items:
                if not put((item, None)):
                    return
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put((done, exc))
            return
        put((done, None))

    worker = threading.Thread(target=produce, name="bertfeat-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item, exc = ready.get()
            if item is done:
                if exc is not None:
                    raise exc
                return
            yield item
    finally:
        stop.set()
        worker.join()
