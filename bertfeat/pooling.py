"""Pooling as pure functions: token vectors -> one vector per sequence, layers -> blocks, windows -> texts.

The torch functions take ``(hidden_states, attention_mask)`` and never write into their inputs; they compute in
float32 whatever the model's dtype. The numpy functions combine long-text windows and normalize, after the model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pool_tokens(hidden, mask, how: str):
    """Pool one layer's ``hidden`` (batch, tokens, dim) over the tokens where ``mask`` (batch, tokens) is 1.

    ``"cls"`` is the first token; ``"mean"`` the masked mean (sum over mask / clamp(count, 1e-9)); ``"max"`` the
    masked elementwise max.
    """
    if how == "cls":
        return hidden[:, 0].float()
    keep = mask.unsqueeze(-1).bool()
    if how == "mean":
        # where, not a product: a padded position that overflowed to inf (float16) times 0 would be NaN
        total = hidden.float().where(keep, 0.0).sum(dim=1)
        return total / keep.sum(dim=1).float().clamp(min=1e-9)
    if how == "max":
        return hidden.float().masked_fill(~keep, float("-inf")).amax(dim=1)
    raise ValueError(f"unknown pooling {how!r}")


def pool_blocks(hidden_states: Sequence, mask, pooling: Sequence[str], layer_groups: Sequence[Sequence[int]],
                skip: int = 0):
    """Pool every (pooling, layer group) block: returns (batch, n_blocks, dim) float32, pooling-major.

    A group of several layers is the mean of each layer's pooled vector. ``skip``: the first positions of every
    sequence, attended to but left out of mean and max pooling (CLS pooling still reads the first token): a prompt
    that a model's pooling leaves out (sentence-transformers' ``"include_prompt": false``, which masks the first
    token and the prompt's).
    """
    import torch

    if skip:
        mask = mask.clone()  # never written into: the caller's mask
        mask[:, :skip] = 0
    blocks = []
    for how in pooling:
        for group in layer_groups:
            pooled = [pool_tokens(hidden_states[layer], mask, how) for layer in group]
            blocks.append(pooled[0] if len(pooled) == 1 else torch.stack(pooled).mean(dim=0))
    return torch.stack(blocks, dim=1)


def combine_windows(vectors: np.ndarray, starts: np.ndarray, weights: np.ndarray, pooling: Sequence[str]) -> np.ndarray:
    """Combine per-window block vectors (units, blocks, dim) into per-text vectors (texts, blocks, dim).

    Text ``i`` owns windows ``starts[i]:starts[i+1]``. CLS and mean blocks are averaged across windows weighted by
    ``weights`` (each window's token count); max blocks take the elementwise max. A text with one window keeps it
    bit for bit. All windows at once: :class:`WindowCombiner` takes them a batch at a time.
    """
    combiner = WindowCombiner(starts, weights, pooling)
    combiner.add(np.arange(len(vectors)), vectors)
    return combiner.result()


class WindowCombiner:
    """:func:`combine_windows` with the windows' vectors given a batch at a time, in any grouping, so that only the
    texts' vectors are held, never every window's (a 5 MB text has 8,000 windows of 256 tokens: with every layer and
    pooling of MiniLM, 260 MB of window vectors, copied twice more to combine them).

    Each text's windows must come in their own order (the batches of :func:`bertfeat.batching.plan_batches` give
    them so: longest first, ties in order, and a text's last window is its shortest): the weighted sums are then
    added up in the order :func:`combine_windows` adds them, so the vectors are the same to the bit.
    """

    def __init__(self, starts: np.ndarray, weights: np.ndarray, pooling: Sequence[str]):
        counts = np.diff(starts)
        self.owner = np.repeat(np.arange(len(counts)), counts)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.multi = np.flatnonzero(counts > 1)  # texts of several windows, each with a slot of sums
        self.slot = np.full(len(counts), -1, dtype=np.int64)
        self.slot[self.multi] = np.arange(len(self.multi))
        self.pooling = list(pooling)
        self.out = self.sums = None
        self.total_weight = np.zeros(len(self.multi), dtype=np.float64)

    def add(self, units: np.ndarray, vectors: np.ndarray) -> None:
        """Take the block vectors (len(units), blocks, dim) of windows ``units``."""
        units = np.asarray(units, dtype=np.int64)
        if self.out is None:
            n_blocks = vectors.shape[1]
            self._is_max = [self.pooling[b // (n_blocks // len(self.pooling))] == "max" for b in range(n_blocks)]
            self.out = np.empty((len(self.slot),) + vectors.shape[1:], dtype=vectors.dtype)
            self.sums = np.zeros((len(self.multi),) + vectors.shape[1:], dtype=np.float64)
            self.sums[:, self._is_max] = -np.inf
        owner = self.owner[units]
        slot = self.slot[owner]
        one = slot < 0
        self.out[owner[one]] = vectors[one]
        many = np.flatnonzero(~one)
        if not len(many):
            return
        slot = slot[many]
        w = self.weights[units[many]][:, None]
        for b, is_max in enumerate(self._is_max):
            col = vectors[many, b, :]
            if is_max:
                np.maximum.at(self.sums[:, b], slot, col)
            else:
                np.add.at(self.sums[:, b], slot, col.astype(np.float64) * w)
        np.add.at(self.total_weight, slot, w[:, 0])

    def result_of(self, texts: np.ndarray) -> np.ndarray:
        """The vectors (len(texts), blocks, dim) of ``texts``, every window of which was added, as :meth:`result`
        gives them (a run stopped half-way keeps the texts it finished)."""
        out = self.out[texts]
        slot = self.slot[texts]
        many = np.flatnonzero(slot >= 0)
        for b, is_max in enumerate(self._is_max):
            sums = self.sums[slot[many], b]
            out[many, b, :] = sums if is_max else sums / self.total_weight[slot[many]][:, None]
        return out

    def result(self) -> np.ndarray:
        """The texts' vectors (texts, blocks, dim), once every window was added."""
        for b, is_max in enumerate(self._is_max):
            sums = self.sums[:, b]
            self.out[self.multi, b, :] = sums if is_max else sums / self.total_weight[:, None]
        return self.out


def average_layers(blocks: np.ndarray, pool_index: Sequence[int], layer_groups: Sequence[Sequence[int]]) -> np.ndarray:
    """Per-layer pooled vectors -> blocks: ``blocks`` (n, poolings, layers, dim) -> (n, len(pool_index) *
    len(layer_groups), dim), pooling-major.

    ``pool_index`` picks poolings and each group in ``layer_groups`` lists indices on the layer axis; a group of
    several layers is their mean (summed in the group's order in float32, then divided). This is how a recipe's
    features are derived from the all-layers recipe, and how chunked texts average layers after combining windows,
    so the two agree.
    """
    n, _, _, dim = blocks.shape
    out = np.empty((n, len(pool_index) * len(layer_groups), dim), dtype=np.float32)
    b = 0
    for p in pool_index:
        for group in layer_groups:
            acc = blocks[:, p, group[0], :].astype(np.float32, copy=True)
            for layer in group[1:]:
                acc += blocks[:, p, layer, :]
            if len(group) > 1:
                acc /= np.float32(len(group))
            out[:, b] = acc
            b += 1
    return out


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """L2-normalize along the last axis (each block separately), leaving all-zero vectors at zero."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
