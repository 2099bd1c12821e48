"""Torch-free planning: dedup, long-text windows, token-length sort and token-budget batches, padding, order
restore, and a prefetching iterator that overlaps planning with the model.

Token sequences travel as :class:`TokenSeqs`: one flat int32 array and a span per sequence, so that windows,
batches and padding are numpy slicing and indexing rather than a Python list per token (on a GPU the host side
would otherwise be the bottleneck). Every function here works on plain lists and numpy arrays, so it is tested
without a model.
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


class TokenSeqs:
    """Token id sequences as spans ``[start, start + length)`` of one flat int32 array.

    Windows and batches are new spans over the same array (no copies). Indexing with an int gives that sequence as
    a list; with a slice or an array of positions, a :class:`TokenSeqs` of those sequences.

    Examples
    --------
    >>> seqs = TokenSeqs.from_lists([[7, 8, 9], [], [5]])
    >>> len(seqs), seqs.length.tolist(), seqs[0], seqs[[2, 0]].tolist()
    (3, [3, 0, 1], [7, 8, 9], [[5], [7, 8, 9]])
    """

    __slots__ = ("flat", "start", "length")

    def __init__(self, flat: np.ndarray, start: np.ndarray, length: np.ndarray):
        self.flat, self.start, self.length = flat, start, length

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]]) -> "TokenSeqs":
        import itertools

        length = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
        total = int(length.sum())
        if any(isinstance(s, np.ndarray) for s in seqs):  # a long text's ids (bertfeat.tokens.all_tokens)
            flat = np.concatenate([np.asarray(s, dtype=np.int32) for s in seqs])
        else:
            flat = np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int32, count=total)
        start = np.zeros(len(seqs), dtype=np.int64)
        np.cumsum(length[:-1], out=start[1:])
        return cls(flat, start, length)

    def __len__(self) -> int:
        return len(self.start)

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            a = int(self.start[key])
            return self.flat[a:a + int(self.length[key])].tolist()
        return TokenSeqs(self.flat, self.start[key], self.length[key])

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def tolist(self) -> list[list[int]]:
        return list(self)


def pad_batch(seqs: TokenSeqs, prefix: Sequence[int], suffix: Sequence[int], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """``[prefix] + seq + [suffix]`` for each sequence, right-padded with ``pad_id`` to the longest: int64 ids and
    attention mask (n, longest). Position 0 is always attended, so a text with no tokens still has one.

    Examples
    --------
    >>> ids, mask = pad_batch(TokenSeqs.from_lists([[7, 8], [9]]), [101], [102], 0)
    >>> ids.tolist(), mask.tolist()
    ([[101, 7, 8, 102], [101, 9, 102, 0]], [[1, 1, 1, 1], [1, 1, 1, 0]])
    """
    n, p = len(seqs), len(prefix)
    lengths = seqs.length
    longest = max(1, int(lengths.max()) + p + len(suffix)) if n else 1
    cols = np.arange(longest)
    ids = np.full((n, longest), pad_id, dtype=np.int64)
    ids[:, :p] = prefix
    content = (cols >= p) & (cols < (p + lengths)[:, None])
    ids[content] = seqs.flat[(seqs.start[:, None] + (cols - p))[content]]
    rows = np.arange(n)
    for j, token in enumerate(suffix):
        ids[rows, p + lengths + j] = token
    mask = (cols < (lengths + p + len(suffix))[:, None]).astype(np.int64)
    mask[:, 0] = 1
    return ids, mask


@dataclass
class Units:
    """The token sequences actually sent to the model, and which text each belongs to.

    ``owner`` is non-decreasing and every text owns at least one unit, so the units of text ``i`` are
    ``starts[i]:starts[i + 1]``.
    """

    ids: TokenSeqs
    owner: np.ndarray
    starts: np.ndarray
    n_truncated: int
    n_chunked: int


def split_prefix(joint: Sequence[Sequence[int]], alone: Sequence[int]) -> tuple[list[list[int]], list[list[int]]]:
    """Cut each ``prefix + text``, tokenized together, into the prefix's tokens and the text's (a list, or for an
    int32 array of ids, a view of it).

    The prefix's are the longest run at the start that agrees with the prefix tokenized alone. Tokenized together
    is how sentence-transformers reads a prompt, and it differs from the two tokenized apart wherever the tokenizer
    joins a space to the word after it (byte-level BPE, SentencePiece): "query: " alone ends in a lone space token.

    Examples
    --------
    >>> split_prefix([[7, 8, 10], [7, 8, 9, 11]], alone=[7, 8, 9])
    ([[7, 8], [7, 8, 9]], [[10], [11]])
    """
    heads, rest = [], []
    for ids in joint:
        k, limit = 0, min(len(ids), len(alone))
        while k < limit and ids[k] == alone[k]:
            k += 1
        heads.append([int(i) for i in ids[:k]])
        rest.append(ids[k:] if isinstance(ids, np.ndarray) else list(ids[k:]))
    return heads, rest


def with_heads(units: TokenSeqs, heads: TokenSeqs, owner: np.ndarray) -> TokenSeqs:
    """Each unit with its text's head before it: ``heads[owner[j]] + units[j]``, in one new flat array (no list per
    unit: a long text's windows are millions of tokens).

    Examples
    --------
    >>> units, heads = TokenSeqs.from_lists([[7, 8], [8, 9], [5]]), TokenSeqs.from_lists([[1], [2, 3]])
    >>> with_heads(units, heads, [0, 0, 1]).tolist()
    [[1, 7, 8], [1, 8, 9], [2, 3, 5]]
    """
    owner = np.asarray(owner, dtype=np.int64)
    n = len(units)
    length = heads.length[owner] + units.length
    # 2n segments, a head then its unit, read from one array holding both
    seg_start = np.empty(2 * n, dtype=np.int64)
    seg_start[0::2] = heads.start[owner] + len(units.flat)
    seg_start[1::2] = units.start
    seg_length = np.empty(2 * n, dtype=np.int64)
    seg_length[0::2] = heads.length[owner]
    seg_length[1::2] = units.length
    out_start = np.zeros(2 * n, dtype=np.int64)
    np.cumsum(seg_length[:-1], out=out_start[1:])
    index = np.repeat(seg_start - out_start, seg_length) + np.arange(int(seg_length.sum()), dtype=np.int64)
    flat = np.concatenate([units.flat, heads.flat])[index]
    return TokenSeqs(flat, out_start[0::2].copy(), length)


def make_units(token_ids: Sequence[Sequence[int]] | TokenSeqs, window, long_text: str, stride: int) -> Units:
    """Turn each text's content token ids (no special tokens) into one unit (truncate) or its windows (chunk).

    ``window``: the most tokens of a unit, one for all texts or one per text (an array). Units are spans of the
    texts' own token array; only texts longer than their window are looked at one by one.
    """
    seqs = token_ids if isinstance(token_ids, TokenSeqs) else TokenSeqs.from_lists(token_ids)
    n = len(seqs)
    window = np.broadcast_to(np.asarray(window, dtype=np.int64), (n,))
    long = np.flatnonzero(seqs.length > window)
    chunk = long_text == "chunk"
    counts = np.ones(n, dtype=np.int64)
    spans = {}
    if chunk:
        for i in long:
            spans[i] = np.asarray(split_windows(int(seqs.length[i]), int(window[i]), stride), dtype=np.int64)
            counts[i] = len(spans[i])
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    start = np.repeat(seqs.start, counts)
    length = np.repeat(np.minimum(seqs.length, window), counts)
    for i, ab in spans.items():
        k = starts[i]
        start[k:k + len(ab)] = seqs.start[i] + ab[:, 0]
        length[k:k + len(ab)] = ab[:, 1] - ab[:, 0]
    return Units(TokenSeqs(seqs.flat, start, length), np.repeat(np.arange(n, dtype=np.int64), counts), starts,
                 n_truncated=0 if chunk else len(long), n_chunked=len(long) if chunk else 0)


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
    item where it happened; closing the generator early stops the producer. The producer runs in a copy of the
    caller's context, as the backend's batch workers do, so a context variable (a call's own pass counts, a
    command's warning format) reads there as in the call.
    """
    import contextvars
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

    worker = threading.Thread(target=contextvars.copy_context().run, args=(produce,), name="bertfeat-prefetch",
                              daemon=True)
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
