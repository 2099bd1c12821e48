"""The one data path every feature takes: texts -> float32 matrix, for one recipe.

validate + missing policy -> dedup -> cache lookup -> tokenize misses -> plan batches -> forward + pool ->
combine long-text windows -> normalize -> cache write -> reassemble in input order.

The estimator, the CLI, the R package and the distributed runner all call :func:`encode`. The model is reached
through a zero-argument callable, so a run answered entirely from the cache never loads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import sys
import time
from collections.abc import Callable, Sequence
from collections import deque
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from bertfeat.batching import (
    TokenSeqs, Units, make_units, plan_batches, prefetched, split_prefix, unique_strings, with_heads,
)
from bertfeat.journal import batch_key
from bertfeat.journal import current as current_journal
from bertfeat.pooling import WindowCombiner, average_layers, l2_normalize
from bertfeat.recipe import Recipe
from bertfeat.tokens import all_tokens, head_tokens


@dataclass
class EncodeStats:
    """What one or more :func:`encode` calls did. ``truncated`` and ``chunked`` count rows, not distinct texts."""

    rows: int = 0
    missing: int = 0
    unique: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    cache_new: int = 0
    truncated: int = 0
    chunked: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    batches: int = 0
    seconds: float = 0.0

    def __iadd__(self, other: "EncodeStats") -> "EncodeStats":
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def to_dict(self) -> dict:
        return asdict(self)


def text_key(text: str) -> bytes:
    """The cache key of a text: the first 16 bytes of the sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:16]


# A row of several items (tags, tokens) or fields is no one text, and converted to a string its repr ("['a', 'cat']")
# would be embedded, brackets and quotes: what to do instead, for values and for whole columns (bertfeat.inputs)
# why a row of items or a record is refused, and how to make it text; each engine says its own how (Spark's:
# spark._refuse_nested_texts)
LIST_WHY = ("a row of several items (tags, tokens) is no one text, and converted to a string its repr (brackets, "
            "quotes) would be embedded.")
RECORD_WHY = "a record of several fields is no one text, and converted to a string its repr would be embedded."
JOIN_ITEMS = (f"{LIST_WHY} Join each row's items into one text first (pandas: df[col].str.join(' '); "
              "polars: pl.col(col).list.join(' ')), or embed the items as texts of their own.")
TAKE_FIELD = (f"{RECORD_WHY} Take the field that holds the text first (pandas: df[col].str.get('field'); polars: "
              "pl.col(col).struct.field('field')).")


def _is_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # array-likes: not a scalar, so not a missing marker
        return False


def _describe_value(value) -> str:
    if isinstance(value, (np.number, np.bool_)):  # the value it holds, not np.float64(1.5)
        value = value.item()
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def split_missing(texts: Sequence, missing: str, row_name: Callable[[int], str]) -> tuple[list[str], np.ndarray]:
    """Check every value is a string or a missing marker (None, NaN, pd.NA); apply the ``missing="error"`` policy.

    Empty and blank texts (:func:`bertfeat.inputs.is_blank`: only whitespace, control, format, private-use and
    replacement characters and lone combining marks) count as missing. Returns the present texts and a boolean
    mask of the missing rows.
    """
    from bertfeat.inputs import is_blank

    present: list[str] = []
    is_missing = np.zeros(len(texts), dtype=bool)
    for i, value in enumerate(texts):
        if isinstance(value, str):
            if not is_blank(value):
                present.append(value)
                continue
            if missing == "error":
                raise ValueError(
                    f"{row_name(i)} is blank ({_describe_value(value)}): bertfeat treats empty texts and texts of only "
                    "whitespace, control, invisible or replacement characters as missing, and missing='error'. Pass "
                    "missing='zero' for a zero vector, missing='nan' for a row of NaN, or drop or fill those rows first."
                )
            is_missing[i] = True
            continue
        if isinstance(value, (bytes, bytearray)):
            raise TypeError(f"{row_name(i)} holds bytes, not a string: decode it first (for example b.decode('utf-8')).")
        if isinstance(value, (list, tuple, np.ndarray, dict)):
            raise TypeError(f"{row_name(i)} holds {type(value).__name__} {_describe_value(value)}, not a string: "
                            + (JOIN_ITEMS if not isinstance(value, dict) else TAKE_FIELD))
        if not _is_missing(value):
            raise TypeError(
                f"{row_name(i)} holds {type(value).__name__} {_describe_value(value)}, not a string: bertfeat embeds "
                "text. Convert the column to strings first (for example df[col].astype('string'), which keeps a "
                "missing value missing) if that is what you mean."
            )
        if missing == "error":
            raise ValueError(
                f"{row_name(i)} is missing ({_describe_value(value)}) and missing='error'. Pass missing='zero' for a "
                "zero vector, missing='nan' for a row of NaN, or fill the missing texts first."
            )
        is_missing[i] = True
    return present, is_missing


def encode(
    texts: Sequence,
    recipe: Recipe,
    backend: Callable[[], object],
    *,
    cache=None,
    batch_tokens: int | None = None,
    missing: str = "error",
    row_name: Callable[[int], str] | None = None,
    progress: bool = False,
    all_layers: bool = False,
    return_missing: bool = False,
    _pooling_asked: Sequence[str] | None = None,
):
    """Embed ``texts`` with ``recipe``: returns a (len(texts), recipe.n_features) float32 array and its stats.

    ``backend`` is called (at most once) only when some text is not in ``cache``. A cache is any object with
    ``lookup(recipe, keys) -> (found_mask, vectors, n_tokens)`` and ``store(recipe, keys, vectors, n_tokens) -> int``,
    where ``n_tokens`` is each text's full token count, special tokens included (under ``long_text="truncate"``,
    ``max_length + 1`` for a longer text: only its head is tokenized, :func:`bertfeat.tokens.head_tokens`).
    ``tokens_noted(recipe)`` and ``note_tokens(recipe, *, n_special, prefix_tokens)`` (:class:`bertfeat.cache.Cache`'s)
    are optional: without them a run with a prefix that the cache answers whole may load the model to count the
    prefix's tokens.

    With ``all_layers=True`` the texts are embedded (and cached) under ``recipe.all_layers()`` and this recipe's
    features are derived from those (:func:`derive`), so every pooling/layers choice shares one forward pass.

    With ``return_missing=True`` a third value is returned: the boolean mask of the texts read as missing (None, NaN,
    blank, or dropped whole by the tokenizer), the rows ``missing=`` fills.
    """
    if all_layers:
        base = recipe.all_layers()
        X, stats, is_missing = encode(texts, base, backend, cache=cache, batch_tokens=batch_tokens, missing=missing,
                                      row_name=row_name, progress=progress, return_missing=True,
                                      _pooling_asked=recipe.pooling)
        return (derive(X, base, recipe), stats) + ((is_missing,) if return_missing else ())
    t0 = time.perf_counter()
    row_name = row_name or (lambda i: f"row {i}")
    stats = EncodeStats(rows=len(texts))
    present, is_missing = split_missing(texts, missing, row_name)
    stats.missing = int(is_missing.sum())
    uniques, inverse = unique_strings(present)
    stats.unique = len(uniques)

    n_features = recipe.n_features
    vectors = np.empty((len(uniques), n_features), dtype=np.float32)
    n_tokens = np.zeros(len(uniques), dtype=np.int64)
    todo = np.arange(len(uniques))
    keys: list[bytes] = []
    if uniques:
        present_rows = np.flatnonzero(~is_missing)
        keys = []
        for j, text in enumerate(uniques):
            try:
                keys.append(text_key(text))
            except UnicodeEncodeError as exc:
                row = present_rows[int(np.argmax(inverse == j))]
                raise ValueError(
                    f"{row_name(int(row))} is not valid Unicode ({exc.reason} at position {exc.start}), so it cannot "
                    "be tokenized; it usually comes from bytes decoded with the wrong codec. Clean it first, for "
                    "example s.encode('utf-8', 'replace').decode('utf-8')."
                ) from None
    if cache is not None and uniques:
        found, cached_vectors, cached_tokens = cache.lookup(recipe, keys)
        vectors[found] = cached_vectors
        n_tokens[found] = cached_tokens
        todo = np.flatnonzero(~found)
        stats.cache_hits = int(found.sum())
        stats.cache_misses = len(todo)

    dropped = np.zeros(len(uniques), dtype=bool)  # texts of which the tokenizer keeps no token: missing too
    model = None
    if stats.cache_hits:
        # A cache an older bertfeat filled holds the texts the tokenizer drops whole, embedded as the empty text
        # ([CLS] [SEP]): such a row counts the special tokens and the prefix's, fewer than any text of its own. Only
        # the hits that short are checked, with the tokenizer, so a cached run loads the model only where one may be.
        fewest = int(n_tokens[found].min())
        noted = getattr(cache, "tokens_noted", None)  # optional: a cache of one's own may have lookup and store only
        bound = _no_content_tokens_at_most(recipe, noted(recipe) if recipe.prefix and noted is not None else {})
        suspect = np.flatnonzero(found & (n_tokens == fewest)) if fewest <= bound else []
        if len(suspect):
            model = backend()
            dropped[suspect[dropped_texts([uniques[j] for j in suspect], recipe, model)]] = True
            stats.cache_hits -= int(dropped.sum())
            if missing == "error" and dropped.any():
                _refuse_dropped(uniques, dropped, inverse, is_missing, row_name, all_seen=not len(todo))
    if len(todo):
        model = model or backend()
        check_cls_pooling(recipe.pooling if _pooling_asked is None else _pooling_asked,
                          getattr(model, "spec", None), model)

        def refuse_dropped(lo: int, content: np.ndarray) -> None:
            """Under missing="error", refuse a text the tokenizer dropped whole once its chunk is tokenized, before
            the model runs it: uniques are in first-seen order and chunks go in order, so it is the first such row."""
            if (content == 0).any():
                found = np.zeros(len(uniques), dtype=bool)
                found[todo[lo:lo + len(content)]] = content == 0
                _refuse_dropped(uniques, found, inverse, is_missing, row_name,
                                all_seen=lo + len(content) == len(todo))

        def keep(done: np.ndarray, vectors: np.ndarray, full: np.ndarray, content: np.ndarray) -> None:
            """The run stopped half-way (a failed batch, Ctrl-C): cache the texts it finished, so that the next call
            runs the model for the others only. A text the tokenizer dropped, or a non-finite vector, is never
            cached."""
            ok = (content > 0) & np.isfinite(vectors).all(axis=1)
            if ok.any():
                cache.store(recipe, [keys[j] for j in todo[done[ok]]], vectors[ok], full[ok])

        new_vectors, new_tokens, run, content = _run_model(
            [uniques[j] for j in todo], recipe, model, batch_tokens or model.default_batch_tokens, progress,
            planned=refuse_dropped if missing == "error" else None, on_stop=keep if cache is not None else None,
        )
        _check_finite(new_vectors, todo, inverse, is_missing, row_name, recipe)
        dropped[todo] = content == 0
        vectors[todo] = new_vectors
        n_tokens[todo] = new_tokens
        stats.tokens, stats.padded_tokens, stats.batches = run
        kept = content > 0
        if cache is not None and kept.any():  # a dropped text is never cached: it has no vector of its own
            stats.cache_new = cache.store(recipe, [keys[j] for j in todo[kept]], new_vectors[kept], new_tokens[kept])
    if model is not None and recipe.prefix and hasattr(cache, "note_tokens"):  # for the runs the cache answers whole
        cache.note_tokens(recipe, n_special=model.n_special, prefix_tokens=len(prefix_tokens(recipe, model)))
    if dropped.any():
        is_missing = is_missing.copy()
        is_missing[np.flatnonzero(~is_missing)[dropped[inverse]]] = True
        inverse = inverse[~dropped[inverse]]
        stats.missing = int(is_missing.sum())
        stats.unique -= int(dropped.sum())

    # n_tokens counts special tokens too, so "too long" needs no model to judge (cache hits included).
    long_rows = int((n_tokens[inverse] > recipe.max_length).sum())
    if recipe.long_text == "chunk":
        stats.chunked = long_rows
    else:
        stats.truncated = long_rows

    out = np.empty((len(texts), n_features), dtype=np.float32)
    out[~is_missing] = vectors[inverse]
    out[is_missing] = 0.0 if missing == "zero" else np.nan
    stats.seconds = time.perf_counter() - t0
    return (out, stats, is_missing) if return_missing else (out, stats)


def _no_content_tokens_at_most(recipe: Recipe, noted: dict) -> int:
    """A bound on the tokens of a text the tokenizer drops whole, special tokens and prefix included, known without
    the tokenizer: two special tokens (BERT's [CLS] [SEP], RoBERTa's <s> </s>) and at most two tokens per UTF-8 byte
    of the prefix, plus one (a SentencePiece word marker); where an earlier run noted them beside the cache
    (:meth:`bertfeat.cache.Cache.note_tokens`), the model's special tokens and the prefix's own, plus that one. A text
    of its own tokens always counts more than the same text dropped, so no text of its own is ever taken for a
    dropped one: the bound only decides which hits are checked."""
    if recipe.prefix and noted:
        return noted["n_special"] + noted["prefix_tokens"] + 1
    return 2 + (2 * len(recipe.prefix.encode("utf-8")) + 1 if recipe.prefix else 0)


def dropped_texts(texts: Sequence[str], recipe: Recipe, model) -> np.ndarray:
    """Which of ``texts`` (present, not blank) the tokenizer reduces to no token at all, read as :func:`encode` reads
    them (after the recipe's prefix), tokenizing only a text's head where that suffices (:func:`head_tokens`)."""
    prefix = prefix_tokens(recipe, model)
    rest = read_tokens(texts, recipe, model, prefix, keep=len(prefix) + 1)[1]
    return np.array([not ids for ids in rest], dtype=bool)


def read_tokens(texts: Sequence[str], recipe: Recipe, model, prefix: list[int], keep: int | None = None):
    """Each text's tokens as :func:`encode` reads them: ``(heads, rest)``, the prefix's tokens as tokenized with the
    text (which may differ from ``prefix``, the prefix's alone: :func:`bertfeat.batching.split_prefix`; None with no
    prefix) and the text's own. With ``keep``, only the first ``keep`` tokens, heads included, are wanted, so only
    a long text's head is tokenized (:func:`bertfeat.tokens.head_tokens`); without, a long text is tokenized in
    pieces and its own tokens are an int32 array (:func:`bertfeat.tokens.all_tokens`)."""
    texts = [recipe.prefix + t for t in texts] if prefix else list(texts)
    ids = all_tokens(model.tokenize, texts) if keep is None else head_tokens(model.tokenize, texts, keep)
    return split_prefix(ids, prefix) if prefix else (None, ids)


def refuse_dropped_rows(texts: Sequence[str], dropped: np.ndarray, row_name: Callable[[int], str]) -> None:
    """:func:`encode`'s refusal (``missing="error"``) of the first of ``texts`` that ``dropped`` marks, if any."""
    if dropped.any():
        n = len(texts)
        _refuse_dropped(list(texts), dropped, np.arange(n), np.zeros(n, dtype=bool), row_name)


def _refuse_dropped(uniques: list[str], dropped: np.ndarray, inverse: np.ndarray, is_missing: np.ndarray,
                    row_name: Callable[[int], str], all_seen: bool = True) -> None:
    """Refuse, under ``missing="error"``, the first row whose text the tokenizer reduced to no token at all.
    ``all_seen``: whether ``dropped`` marks every such text, or (texts tokenized in chunks) those seen so far."""
    at = np.flatnonzero(dropped[inverse])
    row = int(np.flatnonzero(~is_missing)[at[0]])
    others = len(at) - 1
    alike = (f" ({others} other row(s) are alike)" if all_seen else f" (at least {others} other row(s) are alike)"
             ) if others else ""
    raise ValueError(
        f"{row_name(row)} ({_describe_value(uniques[inverse[at[0]]])}) gives no token to this model's tokenizer, which "
        "drops every character of it, so its vector would be the empty text's, alike for every such text: bertfeat "
        f"treats it as missing, and missing='error'{alike}. Pass missing='zero' for a zero vector, missing='nan' for "
        "a row of NaN, or drop or fill those rows first. "
        "Nothing was cached."
    )


def _check_finite(vectors: np.ndarray, todo: np.ndarray, inverse: np.ndarray, is_missing: np.ndarray,
                  row_name: Callable[[int], str], recipe: Recipe) -> None:
    """Refuse NaN or infinite features (half precision overflowing) before they are cached or returned."""
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if not len(bad):
        return
    row = int(np.flatnonzero(~is_missing)[int(np.argmax(inverse == todo[bad[0]]))])
    if recipe.dtype == "float16":
        why = ("the model's activations left that dtype's range. Nothing was cached. Pass dtype='bfloat16' (float32's "
               "range, on GPUs from Ampere on) or dtype='float32'.")
    else:  # float32's range: no other dtype holds more, and the weights were checked finite at load
        why = ("the model's activations left float32's range, which no other dtype widens: its forward pass is not "
               "finite for this text. Nothing was cached. Check the model's config.json against the one it was "
               "trained with (layer_norm_eps, hidden_act), or use another model.")
    raise ValueError(
        f"{row_name(row)} (and {len(bad) - 1} other distinct text(s)) got non-finite features (NaN or inf) in "
        f"dtype={recipe.dtype!r}: {why}"
    )


def derive(X: np.ndarray, source: Recipe, recipe: Recipe) -> np.ndarray:
    """``recipe``'s features from ``source``'s: ``source`` must be ``recipe.all_layers()`` (or any recipe with
    every pooling and layer ``recipe`` needs, concatenated per layer and unnormalized).

    The result equals embedding with ``recipe`` directly up to float rounding (about 1e-7): layers are averaged
    after long-text windows are combined, as the direct path does. Missing rows stay zero or NaN.
    """
    if source.layer_agg != "concat" or source.normalize:
        raise ValueError("derive() needs a source recipe with layer_agg='concat' and normalize=False.")
    if (source.weights_sha256, source.tokenizer_sha256, source.config_sha256, source.max_length, source.long_text,
            source.stride, source.dtype, source.prefix, source.pool_prefix) != (
                recipe.weights_sha256, recipe.tokenizer_sha256, recipe.config_sha256, recipe.max_length,
                recipe.long_text, recipe.stride, recipe.dtype, recipe.prefix, recipe.pool_prefix):
        raise ValueError("derive() needs a source recipe with the same model, window, long-text handling, dtype and "
                         "prefix.")
    missing_pool = [p for p in recipe.pooling if p not in source.pooling]
    missing_layers = [layer for layer in recipe.layers if layer not in source.layers]
    if missing_pool or missing_layers:
        raise ValueError(f"derive(): the source recipe lacks pooling {missing_pool} / layers {missing_layers}.")
    blocks = X.reshape(len(X), len(source.pooling), len(source.layers), source.hidden_size)
    out = average_layers(
        blocks,
        [source.pooling.index(p) for p in recipe.pooling],
        [[source.layers.index(layer) for layer in group] for group in recipe.layer_groups],
    )
    if recipe.normalize:
        out = l2_normalize(out)
    return out.reshape(len(X), recipe.n_features)


def _run_model(texts: list[str], recipe: Recipe, model, batch_tokens: int, progress: bool,
               planned: Callable[[int, np.ndarray], None] | None = None,
               on_stop: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None] | None = None):
    """Tokenize, window, batch by token budget, run, pool and combine: the part that needs the model.

    ``planned(lo, content)`` is called with each chunk's first text and its texts' own token counts once it is
    tokenized, before any of its batches goes to the model (it may raise: :func:`encode`'s refusal of a dropped text).

    ``on_stop(texts, vectors, full tokens, content tokens)`` is given, when the run stops half-way (a batch that fails,
    Ctrl-C, a MemoryError; not a refusal by ``planned``, nor in a file job, whose journal keeps its batches), the
    texts whose vectors were complete, as the whole run would have returned them, before the exception goes on.

    Texts go in chunks of ``model.chunk_texts`` (default: all at once, the least padding). With ``model.prefetch``
    a background thread tokenizes and plans the next chunks while the model runs, which keeps a GPU busy: the
    first chunk is an eighth of the others, so the model starts early, and the batches of every chunk go to the
    model as one stream, so the batches in flight never drain at a chunk's end. A text's vector does not depend on
    the chunking, prefetching or number of batches in flight beyond float rounding (1e-5 in float32; in half
    precision on a GPU the batch a text shares changes it slightly: docs/performance.md gives the bound).

    Several layers averaged together are pooled per layer and averaged in the model pass, except under
    ``long_text="chunk"``, where each layer is combined across windows first and averaged after (so max pooling is
    the max over all of a text's tokens, per layer, exactly as when derived from the all-layers recipe).
    """
    prefix = prefix_tokens(recipe, model)
    window = recipe.max_length - model.n_special - len(prefix)
    skip = pooled_from(recipe, model, prefix)
    per_layer = None  # the recipe the model pass computes when layers are averaged after combining windows
    if recipe.long_text == "chunk" and recipe.layer_agg == "mean" and len(recipe.layers) > 1:
        per_layer = replace(recipe, layer_agg="concat", normalize=False)
    groups = (per_layer or recipe).layer_groups
    prefetch = bool(getattr(model, "prefetch", False))
    chunk = int(getattr(model, "chunk_texts", 0) or 0) or max(1, len(texts))
    refused: list = []  # planned refused a chunk: nothing is kept

    # under "truncate" a unit is the first tokens, with the prefix's: never tokenize past them
    keep = window + len(prefix) if recipe.long_text == "truncate" else None

    def plans():
        for lo, hi in chunk_bounds(len(texts), chunk, first=max(1, chunk // 8) if prefetch else chunk):
            heads, rest = read_tokens(texts[lo:hi], recipe, model, prefix, keep)
            seqs = TokenSeqs.from_lists(rest)
            if planned is not None:
                try:
                    planned(lo, seqs.length)
                except BaseException:
                    refused.append(lo)
                    raise
            if heads is not None:  # every unit (every window of a long text) starts with the prefix's tokens
                head_lengths = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
                units = make_units(seqs, window + len(prefix) - head_lengths, recipe.long_text, recipe.stride)
                units.ids = with_heads(units.ids, TokenSeqs.from_lists(heads), units.owner)
            else:
                head_lengths = 0
                units = make_units(seqs, window, recipe.long_text, recipe.stride)
            lengths = units.ids.length + model.n_special
            texts_tokens = seqs.length + head_lengths + model.n_special
            yield _Step(units, lengths, plan_batches(lengths, batch_tokens), texts_tokens, seqs.length, recipe.pooling,
                        lo=lo, skip=skip)

    steps = prefetched(plans()) if prefetch else plans()
    open_steps: deque = deque()  # planned steps whose results are still coming back, oldest first
    bar = _progress_bar(0, progress)

    journal = current_journal()  # a file job's checkpoints within a chunk (bertfeat.journal), if any
    report = _REPORT.get()
    tally = [0, 0]  # sequences back from the model (or the journal), sequences planned: the report's fraction
    running: deque = deque()  # (step, batch index, journal key) of each batch sent to the model, in order

    def batch_stream():
        for step in steps:
            open_steps.append(step)
            bar.total += len(step.units.ids)  # sequences sent to the model, known one chunk at a time
            tally[1] += len(step.units.ids)
            bar.refresh()
            for i, batch in enumerate(step.batches):
                ids, key = step.units.ids[batch], None
                if journal is not None:
                    key = batch_key(ids, recipe.pooling, groups)
                    saved = journal.get(key)
                    if saved is not None:  # finished by a killed run: the same batch, so the same bytes
                        step.put(i, saved)
                        bar.update(len(batch))
                        tally[0] += len(batch)
                        continue
                running.append((step, i, key))
                yield ids

    def as_recipe(combined):
        if per_layer is not None:  # layers averaged after combining windows
            combined = derive(combined.reshape(len(combined), -1), per_layer, replace(recipe, normalize=False))
            combined = combined.reshape(len(combined), recipe.n_blocks, -1)
        return combined

    def finished():
        """The texts whose vectors are complete, and those vectors as the whole run returns them: every text of the
        settled steps, and in the open ones the texts whose windows all came back."""
        parts = [(lo + np.arange(len(full)), vectors, full, content) for lo, vectors, full, content in settled]
        for step in open_steps:
            done = step.finished_texts()
            if len(done):
                parts.append((step.lo + done, as_recipe(step.combiner.result_of(done)), step.full[done],
                              step.content[done]))
        if not parts:
            return None
        return (np.concatenate([p[0] for p in parts]), *assembled(parts))

    def assembled(parts):
        """The vectors, full and content token counts of ``parts`` ((texts, vectors, full, content), in order)
        joined, the vectors as the run returns them: normalized where the recipe says, float32 rows."""
        vectors = np.concatenate([p[1] for p in parts])
        if recipe.normalize:
            vectors = l2_normalize(vectors)
        return (vectors.reshape(len(vectors), -1).astype(np.float32, copy=False), np.concatenate([p[2] for p in parts]),
                np.concatenate([p[3] for p in parts]))

    def settle():
        """Pool and combine the oldest steps whose batches have all come back."""
        nonlocal tokens, padded, n_batches
        while open_steps and open_steps[0].waiting == 0:
            step = open_steps.popleft()
            for batch in step.batches:
                padded += len(batch) * int(step.lengths[batch].max())
            settled.append((step.lo, as_recipe(step.combiner.result()), step.full, step.content))  # one append
            tokens += int(step.lengths.sum())
            n_batches += len(step.batches)

    # a backend may run several batches at once (forward_batches); a plain one runs them in turn
    run = getattr(model, "forward_batches", None) or (
        lambda sequences, pooling, groups, *skip: (model.forward(units, pooling, groups, *skip)
                                                   for units in sequences)
    )
    settled = []  # (first text, vectors, full tokens, content tokens) of each step combined, in order
    tokens = padded = n_batches = 0
    # skip only where a prefix is left out of pooling: a backend of its own (a test's) need not know of it
    outputs = run(batch_stream(), recipe.pooling, groups, *([skip] if skip else []))
    try:
        try:
            for result in outputs:
                step, i, key = running.popleft()
                step.put(i, result)
                bar.update(len(step.batches[i]))
                tally[0] += len(step.batches[i])
                if report is not None:
                    report(tally[0] / max(tally[1], 1))
                if journal is not None:
                    journal.put(key, result)
                settle()
            settle()  # steps at the end that the journal answered whole
        finally:
            outputs.close()  # the batches still running end first
            bar.close()
            if hasattr(steps, "close"):
                steps.close()
    except BaseException:
        if on_stop is not None and not refused and journal is None:  # a file job's journal keeps them itself
            try:
                done = finished()
                if done is not None:
                    on_stop(*done)
            except Exception as exc:  # the failure that stopped the run is the one to raise (this, a notice)
                from bertfeat.exceptions import CacheWarning, notice

                notice(f"bertfeat: the texts finished before the run stopped could not be kept ({type(exc).__name__}: "
                       f"{exc}); the next call embeds them again.", CacheWarning)
        raise
    if open_steps:
        raise RuntimeError("bertfeat: the model returned fewer batches than were sent to it.")
    vectors, full, content = assembled(settled)  # every text, in order
    return vectors, full, (tokens, padded, n_batches), content


@dataclass
class _Step:
    """One chunk of texts, planned: its units, their padded lengths, its batches, and its texts' vectors so far."""

    units: Units
    lengths: np.ndarray
    batches: list
    full: np.ndarray  # each text's whole token count, special tokens included (truncate: at most max_length + 1)
    content: np.ndarray  # each text's own tokens (no special tokens, no prefix): 0 where the tokenizer kept none
    pooling: Sequence[str]
    lo: int = 0  # the chunk's first text
    skip: int = 0  # each unit's first positions left out of pooling (pooled_from)
    results: list = field(init=False)  # each batch's pooled output back before an earlier batch's (None otherwise)
    waiting: int = field(init=False)  # batches not yet back
    folded: int = field(init=False)  # batches combined into the texts' vectors: the first ones, in plan order
    combiner: WindowCombiner = field(init=False)

    def __post_init__(self):
        self.results = [None] * len(self.batches)
        self.waiting = len(self.batches)
        self.folded = 0
        # windows are weighted by the tokens they pool: special tokens and prefix included, unless left out (skip)
        self.combiner = WindowCombiner(self.units.starts, np.maximum(self.lengths - self.skip, 1), self.pooling)

    def finished_texts(self) -> np.ndarray:
        """The texts (of this chunk) every window of which is combined: those of the batches folded so far."""
        pending = np.ones(len(self.units.owner), dtype=bool)
        for batch in self.batches[:self.folded]:
            pending[batch] = False
        return np.setdiff1d(np.arange(len(self.full)), self.units.owner[pending])

    def put(self, i: int, result: np.ndarray) -> None:
        """Batch ``i``'s pooled output: combined into its texts' vectors in plan order (so a text's windows are
        added up in their own order, whatever order the batches come back in), then dropped."""
        self.results[i] = result
        self.waiting -= 1
        while self.folded < len(self.batches) and self.results[self.folded] is not None:
            self.combiner.add(self.batches[self.folded], self.results[self.folded])
            self.results[self.folded] = None
            self.folded += 1


def chunk_bounds(n: int, chunk: int, first: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` bounds of ``n`` texts cut into chunks of ``chunk``, the first one ``first`` long and each next
    one twice the last up to ``chunk``, so that a prefetching pipeline starts the model after a small first chunk.

    Examples
    --------
    >>> chunk_bounds(20, chunk=8, first=2)
    [(0, 2), (2, 6), (6, 14), (14, 20)]
    """
    bounds, lo, size = [], 0, max(1, min(first, chunk))
    while lo < n:
        bounds.append((lo, min(n, lo + size)))
        lo += size
        size = min(chunk, size * 2)
    return bounds


def first_token_fault(spec, model=None, trust_remote_code: bool = False) -> str | None:
    """Why the first token of each sequence holds no reading of the text, so that ``"cls"`` pooling would read no
    CLS vector: ``"nothing first"`` where the tokenizer puts no special token before the text (the first token is
    then the text's first word: GPT-2 and other decoders add nothing; XLNet puts its ``<cls>`` last), ``"causal"``
    where the model is a causal decoder (its first token, a BOS token, attends to nothing after it, so its state is
    the same for every text); None where CLS pooling reads the text's CLS token. The one rule fit, ``bertfeat info``
    and the probe apply alike.

    ``model``: a loaded backend, whose tokenizer's ids before a text (``prefix``; a backend without one is not judged
    on it) and probe (``first_token_sees_text``, run only when asked: it finds a decoder of a family config.json
    does not name) decide beside config.json. Without one: config.json and the tokenizer's files alone, read without
    the weights, so that a run the cache answers whole is judged as one that loads the model."""
    if model is None:
        if not _tokenizer_puts_token_first(spec, trust_remote_code):
            return "nothing first"
        return "causal" if spec.causal else None
    prefix = getattr(model, "prefix", None)
    if prefix is not None and not len(prefix):
        return "nothing first"
    if getattr(spec, "causal", False) or getattr(model, "first_token_sees_text", True) is False:
        return "causal"
    return None


def _tokenizer_puts_token_first(spec, trust_remote_code: bool) -> bool:
    """Whether the model's tokenizer puts a special token before a text: read from tokenizer.json where its post
    processor puts one, else asked of the tokenizer (loaded without the weights). A tokenizer class may build its
    own processor whatever the file says (transformers 5's BertTokenizer puts [CLS] text [SEP] where the file has
    none), so the file's "nothing first" is only where CLS pooling is refused, and that refusal asks the tokenizer."""
    if spec.special_first:
        return True
    from bertfeat.model_files import tokenizer_puts_token_first

    return tokenizer_puts_token_first(spec, trust_remote_code)


class ClsPoolingRefused(ValueError):
    """``"cls"`` pooling asked of a model whose first token holds no reading of the text; ``fault`` says why
    (:func:`first_token_fault`), ``model_type`` is the model's family."""

    def __init__(self, message: str, fault: str, model_type: str | None):
        super().__init__(message)
        self.fault, self.model_type = fault, model_type


def check_cls_pooling(pooling: Sequence[str], spec, model=None, trust_remote_code: bool = False) -> None:
    """Refuse ``"cls"`` in ``pooling`` where :func:`first_token_fault` finds the first token holds no reading of the
    text (``spec``: the resolved model, None for a backend of one's own; ``model``: the loaded backend, if any)."""
    if "cls" not in pooling:
        return
    fault = first_token_fault(spec, model, trust_remote_code)
    if fault is None:
        return
    from bertfeat.spelling import PROBE_POOLINGS_ASIDE

    name, model_type = getattr(spec, "name", None) or "this model", getattr(spec, "model_type", None)
    fix = f"Pass pooling='mean' (or 'max'), which pool every token of the text{PROBE_POOLINGS_ASIDE}."
    if fault == "causal":
        kind = f" (model_type {model_type!r})" if model_type else ""
        raise ClsPoolingRefused(
            f"pooling={'+'.join(pooling)!r} reads the CLS token, the first of each sequence, but {name} is a causal "
            f"decoder{kind}: each token attends only to the tokens before it, so the first token's state is the "
            f"same for every text and CLS features would be constant. {fix}", fault, model_type)
    raise ClsPoolingRefused(
        f"pooling={'+'.join(pooling)!r} reads the CLS token, the first of each sequence, but {name}'s tokenizer puts "
        f"no special token before the text, so the first token is the text's first word. {fix}", fault, model_type)


def prefix_tokens(recipe: Recipe, model) -> list[int]:
    """The token ids of ``recipe.prefix``, checked to leave each window room for the text (with no prefix too:
    the tokenizer's own special tokens may leave less room than the two that ``fit`` counted on).

    Tokenized alone, the prefix takes at least as many tokens as it does tokenized with a text (where a trailing
    space may join the text's first word: :func:`bertfeat.batching.split_prefix`), so the room is checked on these.
    """
    ids = list(model.tokenize([recipe.prefix])[0]) if recipe.prefix else []
    window = recipe.max_length - model.n_special - len(ids)
    # the stride is named only where it is what fails: windows with room, one too few for it (under "truncate"
    # there are no windows, and stride= is an error there)
    stride_fails = recipe.long_text == "chunk" and window >= 1
    if not (window < 1 or (recipe.long_text == "chunk" and recipe.stride >= window)):
        return ids
    if not ids:  # fit checked the stride against max_length - 2: a tokenizer that adds more special tokens leaves less
        said = (f"max_length={recipe.max_length} leaves {max(window, 0)} tokens for the text once this tokenizer's "
                f"{model.n_special} special tokens are added")
    else:
        said = (f"prefix={recipe.prefix!r} takes {len(ids)} tokens, which leaves {max(window, 0)} of max_length="
                f"{recipe.max_length} for the text")
    if stride_fails:
        said += f" (and stride={recipe.stride} must be below that)"
    raise ValueError(said + _what_makes_room(recipe, model, stride_fails, bool(ids)))


def _what_makes_room(recipe: Recipe, model, stride: bool, prefix: bool) -> str:
    """The end of :func:`prefix_tokens`' refusal: what to pass. A larger max_length only below the model's limit
    (its ``spec.max_length``, which fit refuses to pass), the limit named; a backend with no spec, as before."""
    limit = getattr(getattr(model, "spec", None), "max_length", None)
    at_limit = limit is not None and recipe.max_length >= limit
    ways = ([] if at_limit else ["a larger max_length" + (f" (up to the model's limit of {limit})" if limit else "")])
    ways += ["a smaller stride"] * stride + ["a shorter prefix"] * prefix
    note = " (max_length is already the model's limit)" if at_limit else ""
    if not ways:
        return f"; max_length is already the model's limit of {limit}, so this model leaves no room for any text."
    if len(ways) > 2:
        return f"; pass {', '.join(ways[:-1])}, or {ways[-1]}{note}."
    return f"; pass {' or '.join(ways)}{note}."


def pooled_from(recipe: Recipe, model, prefix: list[int]) -> int:
    """The positions of each sequence (each long-text window) left out of mean and max pooling: none, unless the
    recipe leaves its prefix out (``pool_prefix``: the model's sentence-transformers Pooling says ``"include_prompt":
    false``). Then the special tokens before the text and the prefix's tokens, ``prefix`` (tokenized alone), as
    sentence-transformers counts a prompt's length (the prompt tokenized alone, less a special token at its end):
    a prefix of no tokens (" ") still leaves out the special tokens before the text."""
    if recipe.pool_prefix or not recipe.prefix:
        return 0
    lead = getattr(model, "prefix", None)
    if lead is None:
        raise ValueError("bertfeat: this backend does not say which special tokens it puts before a text, so the "
                         "model's prompt cannot be left out of pooling.")
    return len(lead) + len(prefix)


# told, as each batch of the model pass comes back, the fraction of the pass done (a file job's progress within a
# chunk: bertfeat.files); None outside such a job
_REPORT: ContextVar["Callable[[float], None] | None"] = ContextVar("bertfeat_progress_report", default=None)


@contextlib.contextmanager
def reporting(callback: "Callable[[float], None]"):
    """Call ``callback(fraction done)`` after each batch of the model passes run inside the block."""
    token = _REPORT.set(callback)
    try:
        yield
    finally:
        _REPORT.reset(token)


def _progress_bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    # sys.stderr is None where standard error is closed (pythonw, a daemon): tqdm would write to None
    return tqdm(total=total, unit="seq", desc="bertfeat", disable=not enabled or sys.stderr is None, leave=False)
