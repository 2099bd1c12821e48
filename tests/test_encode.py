"""The one data path with the counting fake backend: dedup, order, batching, missing policy, errors."""

import math

import numpy as np
import pandas as pd
import pytest

from bertfeat.encode import encode, split_missing
from tests.conftest import DROPPED, CountingBackend, make_recipe


def run(texts, **kw):
    backend = CountingBackend()
    recipe = kw.pop("recipe", make_recipe())
    out, stats = encode(texts, recipe, lambda: backend, **kw)
    return out, stats, backend


def test_identical_texts_are_embedded_once_and_order_is_restored():
    texts = ["ccc", "a", "bb", "a", "ccc", "dddd"]
    out, stats, backend = run(texts)
    assert backend.rows == 4 and stats.unique == 4 and stats.rows == 6
    alone = {t: run([t])[0][0] for t in set(texts)}
    for i, t in enumerate(texts):
        np.testing.assert_array_equal(out[i], alone[t])


def test_batches_are_sorted_by_length_and_fit_the_token_budget():
    texts = ["x" * n for n in (3, 14, 1, 7, 9, 2, 5)]
    _, stats, backend = run(texts, batch_tokens=24)
    for lengths in backend.batches:
        assert len(lengths) * max(lengths) <= 24 or len(lengths) == 1
    flat = [n for b in backend.batches for n in b]
    assert flat == sorted(flat, reverse=True)
    assert stats.batches == len(backend.batches)
    assert stats.tokens == sum(flat) and stats.padded_tokens >= stats.tokens


def test_the_model_is_not_loaded_when_nothing_needs_embedding():
    def explode():
        raise AssertionError("model loaded")

    out, stats = encode([None, float("nan")], make_recipe(), explode, missing="zero")
    assert out.shape == (2, 4) and not out.any()
    out, _ = encode([], make_recipe(), explode)
    assert out.shape == (0, 4)


@pytest.mark.parametrize("marker", [None, float("nan"), np.nan, pd.NA, pd.NaT, np.float32("nan")])
def test_missing_zero_and_nan(marker):
    out, stats, _ = run(["a", marker, "b"], missing="zero")
    assert not out[1].any() and out[0].any() and stats.missing == 1
    out, _, _ = run(["a", marker], missing="nan")
    assert np.isnan(out[1]).all() and np.isfinite(out[0]).all()


def test_missing_error_names_the_row():
    with pytest.raises(ValueError, match=r"row 2 is missing \(None\) and missing='error'.*missing='zero'"):
        run(["a", "b", None])


@pytest.mark.parametrize("value, shown", [(3, "int 3"), (2.5, "float 2.5"), (["a"], "list"), (b"x", "bytes")])
def test_non_text_values_are_named(value, shown):
    with pytest.raises(TypeError, match=rf"row 1 holds {shown}"):
        run(["a", value])


def test_invalid_unicode_is_an_error_naming_the_row():
    with pytest.raises(ValueError) as info:
        run(["fine", "bad \ud800 surrogate"])
    assert str(info.value) == (
        "row 1 is not valid Unicode (surrogates not allowed at position 4), so it cannot be tokenized; it usually "
        "comes from bytes decoded with the wrong codec. Clean it first, for example "
        "s.encode('utf-8', 'replace').decode('utf-8').")


def test_the_all_layers_route_passes_on_the_batch_budget_row_names_and_progress(progress_bars):
    import bertfeat.encode as enc

    texts = [f"text number {i}" for i in range(10)]
    backend = CountingBackend()
    enc.encode(texts, make_recipe(), lambda: backend, all_layers=True, batch_tokens=40, progress=True)
    assert max(sum(b) for b in backend.batches) <= 40 and backend.forward_calls > 3
    enc.encode(texts, make_recipe(), lambda: CountingBackend(), all_layers=True)
    enc.encode(texts, make_recipe(), lambda: CountingBackend())
    assert [b.asked for b in progress_bars] == [True, False, False]  # asked for; then encode's default: no bar
    with pytest.raises(ValueError, match=r"^line 8 is missing"):
        enc.encode(["a", None], make_recipe(), lambda: CountingBackend(), all_layers=True,
                   row_name=lambda i: f"line {i + 7}")


def test_truncation_and_chunk_counts_are_rows():
    long = "y" * 40  # 42 tokens with specials > max_length 16
    _, stats, _ = run(["short", long, long])
    assert stats.truncated == 2 and stats.chunked == 0
    _, stats, backend = run(["short", long], recipe=make_recipe(long_text="chunk", stride=2))
    assert stats.chunked == 1 and stats.truncated == 0
    # 40 content tokens in windows of 16 - 2 = 14 sharing 2: [0,14) [12,26) [24,38) [36,40)
    assert backend.rows == 1 + 4
    assert sorted(n for b in backend.batches for n in b) == [4 + 2, 5 + 2, 16, 16, 16]


def test_split_missing_keeps_present_texts_in_order():
    present, mask = split_missing(["a", None, "b", math.nan], "zero", lambda i: f"row {i}")
    assert present == ["a", "b"] and mask.tolist() == [False, True, False, True]


def test_every_chunk_goes_to_the_model_as_one_stream_of_batches():
    """One forward_batches call (one executor, batches in flight across chunk ends) whatever the chunking."""
    backend = CountingBackend()
    calls = []

    def forward_batches(batches, pooling, groups):
        calls.append(1)
        for units in batches:
            yield backend.forward(units, pooling, groups)

    backend.forward_batches = forward_batches
    texts = [f"text {i} " * (i % 4 + 1) for i in range(50)]
    plain, _ = encode(texts, make_recipe(), lambda: backend)
    backend.prefetch, backend.chunk_texts = True, 8
    chunked, stats = encode(texts, make_recipe(), lambda: backend)
    assert calls == [1, 1] and stats.batches > 4
    np.testing.assert_array_equal(chunked, plain)


@pytest.mark.parametrize("long_text", ["truncate", "chunk"])
def test_a_text_of_exactly_max_length_tokens_is_neither_truncated_nor_chunked(long_text):
    recipe = make_recipe(long_text=long_text, stride=2 if long_text == "chunk" else 0)  # max_length 16
    exact, over = "x" * 14, "x" * 15  # 16 and 17 tokens with the 2 specials
    _, stats, backend = run([exact, over], recipe=recipe)
    assert (stats.truncated, stats.chunked) == ((1, 0) if long_text == "truncate" else (0, 1))
    # the exact text went to the model whole, as one unit of 16 tokens; the longer one as 16 (cut) or 16 + 5 (windows)
    units = sorted(n for b in backend.batches for n in b)
    assert units == ([16, 16] if long_text == "truncate" else [5, 16, 16])


def test_encode_stats_add_every_field_and_round_trip_through_a_dict():
    from dataclasses import fields

    from bertfeat.encode import EncodeStats

    a = EncodeStats(**{f.name: i + 1 for i, f in enumerate(fields(EncodeStats))})
    b = EncodeStats(**{f.name: 10 * (i + 1) for i, f in enumerate(fields(EncodeStats))})
    total = EncodeStats()
    total += a
    result = total.__iadd__(b)
    assert result is total  # in place, as += expects
    assert total.to_dict() == {f.name: 11 * (i + 1) for i, f in enumerate(fields(EncodeStats))}
    assert EncodeStats(**total.to_dict()) == total


@pytest.mark.parametrize("value", [["a", "b"], ("a",), np.array(["a"]), {"a": 1}])
def test_a_cell_holding_a_list_or_array_is_an_error_never_missing(value):
    with pytest.raises(TypeError, match=rf"row 1 holds {type(value).__name__} .*not a string"):
        split_missing(["fine", value], "zero", lambda i: f"row {i}")


def test_a_long_value_is_cut_to_forty_characters_in_messages():
    from bertfeat.encode import _describe_value

    assert _describe_value("x" * 38) == repr("x" * 38)  # 40 characters with its quotes: whole
    cut = _describe_value("x" * 39)
    assert cut == repr("x" * 39)[:37] + "..." and len(cut) == 40
    import re

    with pytest.raises(ValueError, match=re.escape(f"row 0 is blank ({repr(chr(9) * 100)[:37]}...): ")):
        split_missing(["\t" * 100], "error", lambda i: f"row {i}")


def test_split_missing_keeps_every_row_in_place_and_its_refusals_say_exactly_what_to_do():
    rows = ["a", " ", "b", None, "\u200b", float("nan"), "c"]
    present, is_missing = split_missing(rows, "zero", lambda i: f"row {i}")
    assert present == ["a", "b", "c"]  # rows after a blank or a missing one are still read
    assert is_missing.tolist() == [False, True, False, True, True, True, False]
    name = lambda i: f"row {i}"  # noqa: E731
    cases = [
        (["a", "  "], ValueError, "row 1 is blank ('  '): bertfeat treats empty texts and texts of only whitespace, "
         "control, invisible or replacement characters as missing, and missing='error'. Pass missing='zero' for a "
         "zero vector, missing='nan' for a row of NaN, or drop or fill those rows first."),
        (["a", float("nan")], ValueError, "row 1 is missing (nan) and missing='error'. Pass missing='zero' for a zero "
         "vector, missing='nan' for a row of NaN, or fill the missing texts first."),
        (["a", 3], TypeError, "row 1 holds int 3, not a string: bertfeat embeds text. Convert the column to strings "
         "first (for example df[col].astype('string'), which keeps a missing value missing) if that is what you mean."),
    ]
    for texts, kind, message in cases:
        with pytest.raises(kind) as info:
            split_missing(texts, "error", name)
        assert str(info.value) == message


def test_encode_returns_float32_and_its_own_time():
    import time

    t0 = time.perf_counter()
    X, stats = encode(["one text", None, "another"], make_recipe(), lambda: CountingBackend(), missing="nan")
    assert X.dtype == np.float32 and np.isnan(X[1]).all()
    assert 0 <= stats.seconds <= time.perf_counter() - t0




@pytest.mark.parametrize("prefix", [None, "query: "])
@pytest.mark.parametrize("missing", ["zero", "nan"])
def test_a_text_the_tokenizer_drops_whole_is_missing_never_the_empty_texts_vector(drops_characters, tmp_path,
                                                                                   missing, prefix):
    """A text that is not blank but of which the tokenizer keeps no token got the empty text's [CLS] [SEP] vector,
    the same for every such text, silently; it now follows missing= as a blank text does, and is never cached."""
    from bertfeat import BertEmbedder

    texts = ["the cat sat", DROPPED[0], "a dog \U0001f600 ran", DROPPED[1], "", DROPPED[2], "the cat sat"]
    kept = [0, 2, 6]
    est = BertEmbedder(drops_characters, pooling="mean", missing=missing, prefix=prefix,
                       cache_dir=str(tmp_path / "c")).fit(texts)
    for run in range(2):  # the second answered by the cache where it can
        X = est.transform(texts)
        fill = 0.0 if missing == "zero" else np.nan
        np.testing.assert_array_equal(X[[1, 3, 4, 5]], np.full((4, X.shape[1]), fill, dtype=np.float32))
        alone = BertEmbedder(drops_characters, pooling="mean", prefix=prefix).fit_transform(
            [texts[i] for i in kept])
        np.testing.assert_allclose(X[kept], alone, atol=1e-5)
        assert est.stats_.missing == 4
        assert (est.stats_.cache_hits, est.stats_.cache_new) == ((2, 0) if run else (0, 2))


def test_a_text_the_tokenizer_drops_whole_is_refused_under_missing_error_naming_its_row(drops_characters, tmp_path):
    from bertfeat import BertEmbedder

    est = BertEmbedder(drops_characters, pooling="mean", cache_dir=str(tmp_path / "c")).fit(["the cat"])
    with pytest.raises(ValueError) as err:
        est.transform(pd.DataFrame({"text": ["the cat", DROPPED[1], DROPPED[0]]}, index=[10, 11, 12]))
    assert str(err.value) == (
        "row 1 (index 11) ('\U0001f600') gives no token to this model's tokenizer, which drops every character of it, "
        "so its vector would be the empty text's, alike for every such text: bertfeat treats it as missing, and "
        "missing='error' (1 other row(s) are alike). Pass missing='zero' for a zero vector, missing='nan' for a row "
        "of NaN, or drop or fill those rows first. Nothing was cached."
    )
    assert not list((tmp_path / "c").rglob("*.parquet"))


@pytest.mark.parametrize("prefix", [None, "query: "])
def test_a_cache_an_older_bertfeat_filled_with_dropped_texts_does_not_answer_them(drops_characters, tmp_path,
                                                                                 monkeypatch, prefix):
    """An older bertfeat embedded a text the tokenizer drops whole ([CLS] [SEP] only) and cached it; that cache
    answered the text with a vector when every text came from it, where a fresh run treats it as missing or
    refuses it. The answer must not depend on the cache: a cached row with no token of the text's own is missing."""
    import bertfeat.encode as enc
    from bertfeat import BertEmbedder

    run_model = enc._run_model

    def old_run_model(*args, **kwargs):  # the old behaviour: every text embedded and cached, dropped or not
        kwargs["planned"] = None
        vectors, tokens, run, content = run_model(*args, **kwargs)
        return vectors, tokens, run, np.maximum(content, 1)

    texts = ["the cat sat", DROPPED[0], DROPPED[1], "a dog ran"]
    cache = str(tmp_path / "c")
    with monkeypatch.context() as m:
        m.setattr(enc, "_run_model", old_run_model)
        BertEmbedder(drops_characters, pooling="mean", prefix=prefix, missing="nan", cache_dir=cache).fit_transform(
            texts)
    est = BertEmbedder(drops_characters, pooling="mean", prefix=prefix, missing="nan", cache_dir=cache).fit(texts)
    fresh = BertEmbedder(drops_characters, pooling="mean", prefix=prefix, missing="nan").fit_transform(texts)
    X = est.transform(texts)
    assert np.isnan(X[[1, 2]]).all() and np.isnan(fresh[[1, 2]]).all()
    np.testing.assert_allclose(X[[0, 3]], fresh[[0, 3]], atol=1e-5)
    assert est.stats_.missing == 2 and est.stats_.unique == 2
    with pytest.raises(ValueError, match="gives no token to this model's tokenizer"):
        BertEmbedder(drops_characters, pooling="mean", prefix=prefix, cache_dir=cache).fit_transform(texts)


@pytest.mark.parametrize("prefix", ["", "query: "])
def test_truncate_tokenizes_only_the_head_of_a_long_text(prefix):
    """Under long_text="truncate" only the first window of tokens is embedded, but a 1,000,000-character text was
    tokenized whole (a 5 MB text held 600 MB of token encodings and took 6 s on MiniLM's tokenizer; 50 MB, 9 GB of
    memory and 105 s, for one 64-token window). Its head is tokenized instead, and its vector, the truncated count and
    a cache hit are those of the whole text."""
    from tests.conftest import CountingBackend

    recipe = make_recipe(prefix=prefix)  # max_length 16
    text = "".join(chr(97 + i % 23) for i in range(1_000_000))
    backend = CountingBackend()
    out, stats = encode(["short", text], recipe, lambda: backend)
    assert max(map(len, backend.tokenized)) < 10_000, "the long text was tokenized whole"
    want, want_stats, _ = run(["short", text[:100]], recipe=recipe)  # 100 characters: truncated all the same
    np.testing.assert_array_equal(out, want)
    assert (stats.truncated, stats.missing, stats.tokens) == (1, 0, want_stats.tokens)


class _AsciiOnly(CountingBackend):
    """A counting backend whose tokenizer drops every character outside ASCII (as a BPE with no unknown token does:
    tests/tiny_encoders.py "bpe-no-unk"), optionally in chunks of ``chunk_texts`` texts, prefetched as on a GPU."""

    def __init__(self, chunk_texts=0, prefetch=False):
        super().__init__()
        self.chunk_texts, self.prefetch = chunk_texts, prefetch

    def tokenize(self, texts):
        self.tokenized.extend(texts)
        return [[ord(c) % 251 + 5 for c in t if ord(c) < 128] for t in texts]


@pytest.mark.parametrize("chunking, run_before", [
    ({}, 0),  # all tokenized at once (the CPU's way): nothing runs
    ({"chunk_texts": 2}, 2),  # distinct texts in chunks [0, 1], [2, "ΩΩ"]: the first chunk's 2 texts ran
    ({"chunk_texts": 2, "prefetch": True}, 3),  # [0], [1, 2], ["ΩΩ", 4] (a GPU's: the first chunk an eighth)
])
def test_a_dropped_text_under_missing_error_is_refused_before_the_model_runs_its_texts(chunking, run_before):
    """Under missing="error" a text the tokenizer drops whole was refused only once every batch of the texts had run
    through the model (the whole of a transform, hours on a large one on CPU). It is refused once tokenized, before
    any batch holding it (or after it) is run; in chunks (a GPU's), the chunks before it only; the first such row is
    named, whatever the chunking."""
    backend = _AsciiOnly(**chunking)
    texts = ["a cat", "a dog", "the cat", "a cat", "\u03a9\u03a9", "some dog", "\U0001f600", "a bird", "an ox"]
    with pytest.raises(ValueError) as refused:
        encode(texts, make_recipe(), lambda: backend, missing="error")
    # the rows alike are counted where all were tokenized; in chunks, only those seen (none after "ΩΩ"'s chunk)
    alike = "" if chunking else " (1 other row(s) are alike)"
    assert str(refused.value).startswith(
        f"row 4 ('\u03a9\u03a9') gives no token to this model's tokenizer, which drops every character of it, so its "
        f"vector would be the empty text's, alike for every such text: bertfeat treats it as missing, and "
        f"missing='error'{alike}. Pass missing='zero'")
    assert backend.rows == run_before
    X, stats = encode(texts, make_recipe(), lambda: _AsciiOnly(**chunking), missing="nan")
    assert np.isnan(X[[4, 6]]).all() and not np.isnan(np.delete(X, [4, 6], axis=0)).any()
    assert (stats.missing, stats.unique) == (2, 6)


@pytest.mark.parametrize("prefix", ["", "q: "])
def test_chunk_tokenizes_a_long_text_in_pieces_and_embeds_every_window_as_whole(monkeypatch, prefix):
    """Under long_text="chunk" a long text was tokenized whole: its token encodings held about 400 bytes a token
    (a 5 MB text, 620 MB for 6 MB of ids), and with a prefix every window became a Python list. It is tokenized in
    pieces (bertfeat.tokens.all_tokens), and its windows, vector, counts and cache hit are those of the whole text."""
    import bertfeat.tokens

    recipe = make_recipe(long_text="chunk", stride=3, prefix=prefix, pooling=("mean", "max", "cls"))
    text = " ".join(f"w{i % 997}" for i in range(60_000))  # 290,000 characters
    texts = ["short", text, "other"]
    backend = CountingBackend()
    out, stats = encode(texts, recipe, lambda: backend)
    assert max(map(len, backend.tokenized)) < 200_000, "the long text was tokenized whole"
    monkeypatch.setattr(bertfeat.tokens, "PIECE_CHARS", 10**9)  # every text tokenized whole, as before
    whole = CountingBackend()
    want, want_stats = encode(texts, recipe, lambda: whole)
    assert text in whole.tokenized or prefix + text in whole.tokenized
    np.testing.assert_array_equal(out, want)
    assert whole.batches == backend.batches and backend.rows > 10_000
    assert stats.to_dict() | {"seconds": 0} == want_stats.to_dict() | {"seconds": 0}
    assert stats.chunked == 1


def test_a_long_texts_window_vectors_are_combined_as_they_come_back_not_held():
    """Under long_text="chunk" every window's pooled vectors were held until the last batch of the chunk came back,
    then copied twice to combine them: with every layer and pooling of MiniLM (the probe), a 5 MB text held 760 MB.
    Each batch is combined into its texts' vectors as it comes back and dropped; the vectors are combine_windows'."""
    import weakref

    from bertfeat.batching import make_units
    from bertfeat.pooling import combine_windows

    class Tracking(CountingBackend):
        def __init__(self):
            super().__init__()
            self.returned, self.most_alive, self.units = [], 0, []

        def forward(self, units, pooling, layer_groups):
            self.most_alive = max(self.most_alive, sum(r() is not None for r in self.returned))
            out = super().forward(units, pooling, layer_groups)
            self.returned.append(weakref.ref(out))
            self.units.append((list(units), out.copy()))
            return out

    recipe = make_recipe(long_text="chunk", stride=3, pooling=("cls", "mean", "max"), layers=(1, 2), layer_agg="concat")
    texts = [" ".join(f"w{i}" for i in range(700)), "short", "x" * 40]
    backend = Tracking()
    out, stats = encode(texts, recipe, lambda: backend, batch_tokens=64)
    assert stats.batches > 50 and stats.chunked == 2
    assert backend.most_alive <= 2, f"{backend.most_alive} batches' window vectors held at once"
    # the same vectors as every window's combined at once
    tokenized = CountingBackend().tokenize(texts)
    units = make_units(tokenized, 14, "chunk", 3)
    by_unit = {tuple(u): v for batch, vectors in backend.units for u, v in zip(batch, vectors)}
    every = np.stack([by_unit[tuple(u)] for u in units.ids.tolist()])
    want = combine_windows(every, units.starts, units.ids.length + 2, recipe.pooling)
    np.testing.assert_array_equal(out, want.reshape(len(texts), -1))


def test_batches_back_out_of_order_are_combined_in_plan_order_and_dropped():
    """A rerun's journal answers some batches of a chunk while earlier ones still run: each text's windows are still
    added up in their plan order (float sums depend on it; a resumed job's output must be the same bytes)."""
    from bertfeat.batching import make_units, plan_batches
    from bertfeat.encode import _Step

    units = make_units([[7] * 40, [8] * 3, [9] * 30], 14, "chunk", 3)
    lengths = units.ids.length + 2
    batches = plan_batches(lengths, 32)
    assert len(batches) >= 4
    step = _Step(units, lengths, batches, lengths, units.ids.length, ("mean", "max"))
    added, add = [], step.combiner.add
    step.combiner.add = lambda batch, vectors: (added.append(batch.tolist()), add(batch, vectors))
    rng = np.random.default_rng(0)
    results = [rng.standard_normal((len(b), 2, 4)).astype(np.float32) for b in batches]
    for i in [2, 0, 3, 1] + list(range(4, len(batches))):
        step.put(i, results[i])
    assert added == [b.tolist() for b in batches] and step.waiting == 0
    assert all(r is None for r in step.results)


def test_a_cached_run_of_one_token_texts_still_never_loads_the_model(tmp_path):
    """The check of old caches' dropped texts looks only at hits with no more tokens than a dropped text can have:
    a text of one token counts more, so a run the cache answers whole still never calls the backend."""
    from bertfeat.cache import Cache

    cache, recipe = Cache(tmp_path / "c"), make_recipe()
    first, _ = encode(["a", "b", "c d"], recipe, lambda: CountingBackend(), cache=cache)

    def no_model():
        raise AssertionError("the model was loaded for a run the cache answers whole")

    again, stats = encode(["a", "b", "c d"], recipe, no_model, cache=cache)
    np.testing.assert_array_equal(again, first)
    assert stats.cache_hits == 3


def test_a_cached_run_with_a_prefix_loads_the_model_only_for_texts_as_short_as_a_dropped_one(tmp_path):
    """With a prefix, which hits an older bertfeat may have filled with a dropped text was known only as a bound on
    the prefix's bytes (17 tokens for "query: "): a run the cache answered whole, of texts of a few tokens each,
    still loaded the model (seconds) to check them. The prefix's token count, learnt the first time the model runs,
    is kept beside the namespace (recipe.json): a text of two tokens or more is then never a suspect."""
    import json

    from bertfeat.cache import Cache

    recipe = make_recipe(prefix="query: ", max_length=32)
    texts = ["ab", "cd e", "a text"]
    first, _ = encode(texts, recipe, lambda: CountingBackend(), cache=Cache(tmp_path / "c"))
    written = json.loads((tmp_path / "c" / recipe.fingerprint() / "recipe.json").read_text())
    assert written["prefix_tokens"] == 7 and written["n_special"] == 2  # one token a character: "query: "

    def no_model():
        raise AssertionError("the model was loaded for a run the cache answers whole")

    again, stats = encode(texts, recipe, no_model, cache=Cache(tmp_path / "c"))  # another process: read from disk
    np.testing.assert_array_equal(again, first)
    assert stats.cache_hits == 3
    # a one-token text counts one more than the prefix alone, as a SentencePiece word marker may: still checked
    encode(["z"], recipe, lambda: CountingBackend(), cache=Cache(tmp_path / "c"))
    loads = []
    encode(["z"], recipe, lambda: loads.append(1) or CountingBackend(), cache=Cache(tmp_path / "c"))
    assert loads == [1]


class _OwnCache:
    """A user's cache with only what encode's docstring asks: lookup and store."""

    def __init__(self):
        self.rows = {}

    def lookup(self, recipe, keys):
        found = np.array([k in self.rows for k in keys], dtype=bool)
        got = [self.rows[k] for k in keys if k in self.rows]
        vectors = np.array([v for v, _ in got], dtype=np.float32).reshape(len(got), recipe.n_features)
        return found, vectors, np.array([n for _, n in got], dtype=np.int64)

    def store(self, recipe, keys, vectors, n_tokens):
        new = [k for k in keys if k not in self.rows]
        self.rows.update({k: (v, int(n)) for k, v, n in zip(keys, vectors, n_tokens) if k in new})
        return len(new)


def test_a_cache_of_ones_own_with_lookup_and_store_only_still_works_with_a_prefix(counting_backend):
    # encode's docstring: a cache is any object with lookup and store. Since the token counts a run notes beside
    # the cache (session 8), a recipe with a prefix also called tokens_noted and note_tokens on it: AttributeError
    # "'_OwnCache' object has no attribute 'note_tokens'" at the first call, after the model had run
    recipe = make_recipe(prefix="query: ")
    cache = _OwnCache()
    texts = ["a b c", "d e", "f"]
    first, stats = encode(texts, recipe, lambda: counting_backend, cache=cache)
    assert stats.cache_new == 3
    again, stats = encode(texts + ["g h"], recipe, lambda: counting_backend, cache=cache)
    assert stats.cache_hits == 3 and stats.cache_new == 1
    want, _ = encode(texts + ["g h"], recipe, lambda: counting_backend)
    np.testing.assert_array_equal(again, want)
    np.testing.assert_array_equal(first, want[:3])


def test_first_token_fault_reads_the_tokenizer_the_config_and_the_loaded_model_as_documented(monkeypatch):
    """encode.first_token_fault, the one rule fit, `bertfeat info` and the probe apply to CLS pooling, by value on
    stand-ins: without a loaded model from the tokenizer's files and config.json alone, with one from its prefix ids
    and its probe. (Whole models: test_architectures.py, test_prompts.py.)"""
    from types import SimpleNamespace

    import bertfeat.model_files as model_files
    from bertfeat.encode import first_token_fault

    def spec(special_first, causal=False):
        return SimpleNamespace(special_first=special_first, causal=causal)

    monkeypatch.setattr(model_files, "tokenizer_puts_token_first", lambda *a: pytest.fail("asked past the file"))
    assert first_token_fault(spec(True)) is None  # a BERT: [CLS] first, an encoder
    assert first_token_fault(spec(True, causal=True)) == "causal"  # a BOS token before a decoder's text
    asked = []
    # tokenizer.json does not tell, or says nothing goes first (which a tokenizer class may override: transformers
    # 5's BertTokenizer builds [CLS] text [SEP] whatever its file says): the tokenizer is asked, with the job's trust
    for said in (None, False):
        for answer in (True, False):
            monkeypatch.setattr(model_files, "tokenizer_puts_token_first",
                                lambda s, trust, answer=answer: asked.append((s.special_first, trust)) or answer)
            assert first_token_fault(spec(said), trust_remote_code=True) == (None if answer else "nothing first")
            assert first_token_fault(spec(said)) == (None if answer else "nothing first")
            # GPT-2's tokenizer, XLNet's <cls> last: the tokenizer is read before config.json's decoder families
            assert first_token_fault(spec(said, causal=True)) == ("causal" if answer else "nothing first")
    # the model's own code is run only where the job allowed it: the probe, which takes no trust_remote_code, asks so
    assert asked == ([(None, True), (None, False), (None, False)] * 2
                     + [(False, True), (False, False), (False, False)] * 2)
    monkeypatch.setattr(model_files, "tokenizer_puts_token_first", lambda *a: pytest.fail("asked with a model"))

    def model(**attrs):
        return SimpleNamespace(**attrs)

    assert first_token_fault(spec(True), model(prefix=[101])) is None
    assert first_token_fault(spec(True), model(prefix=[])) == "nothing first"  # the loaded tokenizer puts nothing
    assert first_token_fault(spec(False), model()) is None  # a backend with no prefix is not judged on it
    assert first_token_fault(spec(True), model(prefix=[1], first_token_sees_text=False)) == "causal"  # the probe
    assert first_token_fault(spec(True), model(prefix=[1], first_token_sees_text=True)) is None
    assert first_token_fault(spec(True, causal=True), model(prefix=[1])) == "causal"
    assert first_token_fault(None, model(prefix=[1])) is None  # a backend of one's own: no spec
    assert first_token_fault(None, model(prefix=[])) == "nothing first"
