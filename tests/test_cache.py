"""The parquet cache on its own and through :func:`bertfeat.encode.encode`, with the counting fake backend."""

from __future__ import annotations

import contextlib
import errno
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from bertfeat import cache as cache_module
from bertfeat import locks
from bertfeat.cache import Cache, open_cache
from bertfeat.encode import encode, text_key
from bertfeat.exceptions import CacheError, CacheWarning
from bertfeat.recipe import FORMAT_VERSION
from tests import _cache_workers as workers
from tests.conftest import CountingBackend, lock_stat_fails, make_recipe

REPO = Path(__file__).resolve().parents[1]
TEXTS = [f"text number {i}" for i in range(40)]


def no_model():
    raise AssertionError("the model was asked for, but every text should have come from the cache")


def shards_of(root, recipe) -> list[Path]:
    return sorted((Path(root) / recipe.fingerprint()).glob("shard-*.parquet"))


# -- the encode path: hits skip the model, any recipe change misses -----------------------------------------------


def test_second_encode_of_same_texts_runs_no_forward_pass(tmp_path):
    recipe = make_recipe()
    cache = Cache(tmp_path)
    backend = CountingBackend()
    first, stats1 = encode(TEXTS + TEXTS[:5], recipe, lambda: backend, cache=cache)
    assert (stats1.cache_hits, stats1.cache_misses, stats1.cache_new) == (0, 40, 40)
    assert backend.rows == 40

    second, stats2 = encode(TEXTS + TEXTS[:5], recipe, no_model, cache=cache)
    assert (stats2.cache_hits, stats2.cache_misses, stats2.cache_new) == (40, 0, 0)
    assert second.view(np.uint32).tolist() == first.view(np.uint32).tolist()


def test_only_missing_texts_reach_the_model(tmp_path):
    recipe = make_recipe()
    cache = Cache(tmp_path)
    encode(TEXTS[:30], recipe, CountingBackend, cache=cache)
    backend = CountingBackend()
    out, stats = encode(TEXTS, recipe, lambda: backend, cache=cache)
    assert sorted(backend.tokenized) == sorted(TEXTS[30:])
    assert (stats.cache_hits, stats.cache_misses, stats.cache_new) == (30, 10, 10)
    fresh, _ = encode(TEXTS, recipe, CountingBackend)
    np.testing.assert_array_equal(out, fresh)


class _StopsAtBatch(CountingBackend):
    """A counting backend whose ``at``-th forward pass raises ``stop`` (Ctrl-C, a MemoryError, a model failing)."""

    def __init__(self, at: int, stop: type):
        super().__init__()
        self.at, self.stop = at, stop

    def forward(self, units, pooling, layer_groups):
        if self.forward_calls + 1 == self.at:
            raise self.stop("stopped at a batch (simulated)")
        return super().forward(units, pooling, layer_groups)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, MemoryError, RuntimeError])
@pytest.mark.parametrize("recipe", [
    make_recipe(normalize=True), make_recipe(long_text="chunk", stride=2),
    make_recipe(long_text="chunk", stride=3, layers=(1, 2, 3), pooling=("mean", "max")),
], ids=["truncate", "chunk", "chunk-layers"])
def test_a_call_stopped_half_way_caches_the_texts_it_finished_and_only_those(tmp_path, stop, recipe):
    # A transform stopped half-way (Ctrl-C in a notebook, a batch the model fails on) threw away every vector it had
    # computed: the next call ran the model again for all of them. The texts whose windows all came back are cached
    # now, with the very vectors an uninterrupted run gives; no text of an unfinished batch is.
    texts = [f"text {i} " * (i % 6 + 1) for i in range(60)]  # up to 54 characters: several windows at max_length 16
    want, _ = encode(texts, recipe, CountingBackend, batch_tokens=64)
    total = CountingBackend()
    encode(texts, recipe, lambda: total, batch_tokens=64)
    stopped = _StopsAtBatch(at=total.forward_calls // 2, stop=stop)
    with pytest.raises(stop):
        encode(texts, recipe, lambda: stopped, cache=Cache(tmp_path), batch_tokens=64)
    rerun = CountingBackend()
    got, stats = encode(texts, recipe, lambda: rerun, cache=Cache(tmp_path), batch_tokens=64)
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()  # what was cached is exactly right
    assert stats.cache_hits > 0 and rerun.rows < total.rows  # and the finished work was not done again
    assert stats.cache_hits + stats.cache_misses == len(set(texts))


class _ChunkedStops(CountingBackend):
    """Chunks of 8 texts tokenized ahead in a background thread (as on a GPU); the ``at``-th forward pass or the
    ``tokenize_at``-th tokenization (in that thread) raises ``stop``."""

    chunk_texts, prefetch = 8, True

    def __init__(self, at=None, tokenize_at=None, stop=KeyboardInterrupt):
        super().__init__()
        self.at, self.tokenize_at, self.stop, self.tokenize_calls = at, tokenize_at, stop, 0

    def tokenize(self, texts):
        self.tokenize_calls += 1
        if self.tokenize_calls == self.tokenize_at:
            raise self.stop("stopped while tokenizing a chunk (simulated)")
        return super().tokenize(texts)

    def forward(self, units, pooling, layer_groups):
        if self.forward_calls + 1 == self.at:
            raise self.stop("stopped at a batch (simulated)")
        return super().forward(units, pooling, layer_groups)


@pytest.mark.parametrize("all_layers", [False, True], ids=["recipe", "all-layers"])
@pytest.mark.parametrize("where", ["batch", "tokenizing"])
def test_a_call_stopped_in_a_later_chunk_or_its_tokenizing_thread_caches_only_finished_texts(tmp_path, where,
                                                                                                   all_layers):
    """(review hunt, 2026-11-26, session 8) the stopped call's on_stop with several chunks, tokenized ahead in the
    prefetch thread: stopped at each batch, or while a later chunk is tokenized in that thread (the exception comes
    through the thread), with the layers averaged after the windows and normalized, or all layers cached
    (cache_all_layers): the texts kept are exactly a whole run's, and a later call runs the model for the rest
    only."""
    recipe = make_recipe(long_text="chunk", stride=3, layers=(1, 2, 3), pooling=("mean", "max"), normalize=True)
    texts = [f"text {i} " * (i % 6 + 1) for i in range(40)] + ["text 1 ", "text 2 text 2 "]  # repeats too
    want, _ = encode(texts, recipe, CountingBackend, batch_tokens=64, all_layers=all_layers)
    whole = _ChunkedStops()
    encode(texts, recipe, lambda: whole, batch_tokens=64, all_layers=all_layers)
    stops = range(2, whole.forward_calls, max(1, whole.forward_calls // 5)) if where == "batch" else range(
        2, whole.tokenize_calls + 1)
    for k, n in enumerate(stops):
        stopped = _ChunkedStops(**({"at": n} if where == "batch" else {"tokenize_at": n}))
        with pytest.raises(KeyboardInterrupt):
            encode(texts, recipe, lambda: stopped, cache=Cache(tmp_path / str(k)), batch_tokens=64,
                   all_layers=all_layers)
        rerun = _ChunkedStops()
        got, stats = encode(texts, recipe, lambda: rerun, cache=Cache(tmp_path / str(k)), batch_tokens=64,
                            all_layers=all_layers)
        assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist(), n
        assert stats.cache_hits > 0 and rerun.rows < whole.rows, n  # chunks before the stop were kept


def _stopped_run_with_a_broken_store(tmp_path, monkeypatch):
    """A run that a Ctrl-C stops at batch 5, whose cache cannot store the texts finished before: call it to run."""
    def broken_store(*args):
        raise ValueError("store broke (simulated)")

    cache = Cache(tmp_path)
    monkeypatch.setattr(cache, "store", broken_store)
    texts = [f"text {i} " * (i % 6 + 1) for i in range(60)]
    stops = _StopsAtBatch(at=5, stop=KeyboardInterrupt)
    return lambda: encode(texts, make_recipe(), lambda: stops, cache=cache, batch_tokens=64)


def test_a_stopped_call_whose_finished_texts_cannot_be_kept_raises_what_stopped_it_and_says_so(tmp_path, monkeypatch):
    run = _stopped_run_with_a_broken_store(tmp_path, monkeypatch)
    with pytest.warns(CacheWarning, match="could not be kept .ValueError: store broke"), \
            pytest.raises(KeyboardInterrupt):
        run()


def test_a_stopped_call_whose_finished_texts_cannot_be_kept_raises_what_stopped_it_where_warnings_are_errors(
        tmp_path, monkeypatch, caplog):
    # Where warnings are errors (python -W error) the "could not be kept" notice, warned while the stop was handled,
    # was raised in place of what stopped the run: a Ctrl-C came out as a CacheWarning (an Exception, which a
    # service's `except Exception` then caught, and `except KeyboardInterrupt` missed). Now the notice is logged.
    import logging

    run = _stopped_run_with_a_broken_store(tmp_path, monkeypatch)
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="bertfeat"):
        warnings.simplefilter("error")
        with pytest.raises(KeyboardInterrupt):
            run()
    assert [r.getMessage() for r in caplog.records] == [
        "bertfeat: the texts finished before the run stopped could not be kept (ValueError: store broke "
        "(simulated)); the next call embeds them again."]


class _DropsOmega(CountingBackend):
    """Tokenizes in chunks of 8 texts, as a GPU does, and drops the text "Ω" whole."""

    chunk_texts = 8

    def tokenize(self, texts):
        return [[] if t == "\u03a9" else ids for t, ids in zip(texts, super().tokenize(texts))]


def test_a_refusal_of_a_later_chunk_still_caches_nothing(tmp_path):
    # missing='error' refuses a text the tokenizer drops whole saying "Nothing was cached.", though the chunks
    # before it ran
    backend = _DropsOmega()
    with pytest.raises(ValueError, match="Nothing was cached"):
        encode(TEXTS + ["\u03a9"], make_recipe(), lambda: backend, cache=Cache(tmp_path), missing="error")
    assert backend.rows >= 8
    assert not shards_of(tmp_path, make_recipe())


# One changed value per field that goes into the fingerprint; test_every_fingerprint_field_is_covered keeps this
# list complete when Recipe grows a field.
RECIPE_CHANGES = {
    "weights_sha256": "x" * 64,
    "tokenizer_sha256": "y" * 64,
    "config_sha256": "z" * 64,
    "hidden_size": 8,
    "num_layers": 4,
    "pooling": ("max",),
    "layers": (2,),
    "layer_agg": "concat",
    "max_length": 17,
    "long_text": "chunk",
    "stride": 3,
    "normalize": True,
    "dtype": "bfloat16",
    "format_version": FORMAT_VERSION + 1,
}


def test_every_fingerprint_field_is_covered():
    assert set(RECIPE_CHANGES) == set(make_recipe().key_dict())


@pytest.mark.parametrize("field", sorted(RECIPE_CHANGES))
def test_changing_any_recipe_field_misses(tmp_path, field):
    base = make_recipe()
    changed = make_recipe(**{field: RECIPE_CHANGES[field]})
    assert changed.fingerprint() != base.fingerprint()
    cache = Cache(tmp_path)
    encode(TEXTS, base, CountingBackend, cache=cache)
    backend = CountingBackend(hidden_size=changed.hidden_size)
    _, stats = encode(TEXTS, changed, lambda: backend, cache=cache)
    assert stats.cache_hits == 0
    assert backend.rows >= len(TEXTS)
    # and the original recipe still hits: the new namespace did not disturb it
    _, again = encode(TEXTS, base, no_model, cache=cache)
    assert again.cache_hits == len(TEXTS)


def test_the_display_name_alone_does_not_split_the_cache(tmp_path):
    cache = Cache(tmp_path)
    encode(TEXTS, make_recipe(model="/venv-a/model"), CountingBackend, cache=cache)
    _, stats = encode(TEXTS, make_recipe(model="/venv-b/model"), no_model, cache=cache)
    assert stats.cache_hits == len(TEXTS)


# -- storage ---------------------------------------------------------------------------------------------------------


def test_vectors_come_back_bit_identical_including_special_values(tmp_path):
    recipe = make_recipe(hidden_size=6)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((50, 6)).astype(np.float32)
    vectors[0] = [np.nan, -0.0, np.inf, -np.inf, 1e-45, np.finfo(np.float32).max]
    keys = [text_key(f"t{i}") for i in range(50)]
    n_tokens = rng.integers(0, 10_000, 50)
    cache = Cache(tmp_path, row_group_rows=7)
    assert cache.store(recipe, keys, vectors, n_tokens) == 50

    order = rng.permutation(50)
    query = [keys[i] for i in order] + [text_key("absent")]
    found, got, got_tokens = Cache(tmp_path).lookup(recipe, query)
    assert found.tolist() == [True] * 50 + [False]
    assert got.dtype == np.float32
    assert got.view(np.uint32).tolist() == vectors[order].view(np.uint32).tolist()
    assert got_tokens.dtype == np.int64  # counts, not floats (2,048.0 tokens in a manifest)
    assert got_tokens.tolist() == n_tokens[order].tolist()


def test_store_writes_only_rows_not_yet_stored(tmp_path):
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(tmp_path)
    assert cache.store(recipe, *workers.rows(range(10))) == 10
    assert cache.store(recipe, *workers.rows(range(10))) == 0
    assert cache.store(recipe, *workers.rows([5, 6, 10, 10, 11])) == 2  # duplicates within a batch count once
    assert len(shards_of(tmp_path, recipe)) == 2
    assert cache.info()[0].rows == 12


def test_store_rejects_vectors_of_the_wrong_shape(tmp_path):
    recipe = make_recipe()
    with pytest.raises(ValueError, match=r"float32 of shape \(2, 4\)"):
        Cache(tmp_path).store(recipe, [text_key("a"), text_key("b")], np.zeros((2, 5), np.float32), [1, 2])
    with pytest.raises(ValueError, match="16 bytes"):
        Cache(tmp_path).lookup(recipe, [b"short"])


def test_recipe_is_written_per_namespace_in_human_terms(tmp_path):
    recipe = make_recipe(pooling=("cls", "mean"))
    Cache(tmp_path).store(recipe, [text_key("a")], np.ones((1, 8), np.float32), np.array([3]))
    written = json.loads((tmp_path / recipe.fingerprint() / "recipe.json").read_text())
    assert written["pooling"] == ["cls", "mean"]
    assert written["model"] == "counting-fake"
    assert written["n_features"] == 8
    assert written["fingerprint"] == recipe.fingerprint()


class ReadLog:
    """Records every parquet read the cache makes: which file, which row groups, which columns."""

    def __init__(self, monkeypatch):
        self.calls = []
        real_init = pq.ParquetFile.__init__
        log = self

        def init(pf, source, *args, **kwargs):
            pf._logged_source = str(source)
            real_init(pf, source, *args, **kwargs)

        monkeypatch.setattr(pq.ParquetFile, "__init__", init)
        for method in ("read", "read_row_groups", "read_row_group", "iter_batches"):
            real = getattr(pq.ParquetFile, method)

            def wrapped(pf, *args, _real=real, _method=method, **kwargs):
                groups = args[0] if args and _method.startswith("read_row_group") else None
                log.calls.append((_method, Path(pf._logged_source).name, groups, kwargs.get("columns")))
                return _real(pf, *args, **kwargs)

            monkeypatch.setattr(pq.ParquetFile, method, wrapped)
        monkeypatch.setattr(pq, "read_table", lambda *a, **k: pytest.fail("read_table reads a whole file"))


def test_lookup_reads_only_the_row_groups_holding_the_keys(tmp_path, monkeypatch):
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    writer = Cache(tmp_path, row_group_rows=10)
    for s in range(20):  # 20 shards x 10 row groups x 10 rows
        writer.store(recipe, *workers.rows(range(s * 100, (s + 1) * 100)))
    cache = Cache(tmp_path)
    cache.lookup(recipe, workers.rows([0])[0])  # builds the index
    names = [p.name for p in shards_of(tmp_path, recipe)]

    log = ReadLog(monkeypatch)
    wanted = [1234, 1237, 517]  # shard 12 row group 3 (twice), shard 5 row group 1
    keys = workers.rows(wanted)[0] + [text_key("not cached")]
    found, got, _ = cache.lookup(recipe, keys)
    assert found.tolist() == [True, True, True, False]
    workers.check_found(keys, found, got, _)
    assert sorted(log.calls) == sorted([
        ("read_row_groups", names[12], [3], ["n_tokens", "vector"]),
        ("read_row_groups", names[5], [1], ["n_tokens", "vector"]),
    ])

    # A new shard is indexed by reading its key column alone.
    writer.store(recipe, *workers.rows(range(5000, 5100)))
    log.calls.clear()
    new_name = (set(p.name for p in shards_of(tmp_path, recipe)) - set(names)).pop()
    found, got, _ = cache.lookup(recipe, workers.rows([5050])[0])
    assert found.all()
    assert log.calls == [("iter_batches", new_name, None, ["key"]),  # a batch of keys at a time, into one array
                         ("read_row_groups", new_name, [5], ["n_tokens", "vector"])]


def test_open_cache_is_shared_per_directory_and_process(tmp_path):
    a = open_cache(tmp_path / "c")
    assert open_cache(str(tmp_path / "c")) is a
    assert (tmp_path / "c" / cache_module.MARKER).exists()
    (tmp_path / "linked").symlink_to("c", target_is_directory=True)  # the same folder by another name: one cache
    assert open_cache(tmp_path / "linked") is a and open_cache(tmp_path / "linked" / ".." / "c") is a


def test_a_long_life_keeps_the_caches_used_last_not_every_cache_ever_opened(tmp_path):
    """A service or notebook that opens a cache of its own per job (a temporary folder, deleted after) kept every
    cache it ever opened, with its index (24 bytes a row), though the folder was gone: the same count of caches in
    memory after 20 jobs as after 2, and a cache someone holds is still the one open_cache gives (one set of locks)."""
    import gc
    import weakref

    recipe = make_recipe()
    held = open_cache(tmp_path / "held")  # a call running in another thread holds its cache meanwhile
    opened = []

    def jobs(n):
        for _ in range(n):
            folder = tmp_path / f"job{len(opened)}"
            cache = open_cache(folder)
            keys = [text_key(f"text {i}") for i in range(100)]
            cache.store(recipe, keys, np.ones((100, recipe.n_features), np.float32), np.ones(100, np.int64))
            assert cache.lookup(recipe, keys)[0].all()
            opened.append(weakref.ref(cache))
            del cache
            shutil.rmtree(folder)
        gc.collect()
        return sum(ref() is not None for ref in opened)

    assert jobs(2) == 2
    assert jobs(18) == cache_module.CACHES_KEPT  # the held one is kept by its holder, not as one used last
    assert open_cache(tmp_path / "held") is held
    assert opened[-1]() is open_cache(tmp_path / f"job{len(opened) - 1}")  # used last: kept, index and all


def test_a_cache_dir_whose_dotdot_follows_a_link_is_the_folder_the_system_names(tmp_path, monkeypatch):
    """``lnk/../c`` with ``lnk -> real/sub`` is ``real/c`` to the system (and to ``ls``, R and every other program),
    but the cache's root was made absolute by text (``os.path.abspath``), which drops ``lnk/..``: the cache was made
    and filled in ``./c``, another folder, and a cluster engine's workers were sent there too."""
    from bertfeat.output import absolute_paths

    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "lnk").symlink_to(Path("real") / "sub", target_is_directory=True)
    given = tmp_path / "lnk" / ".." / "c"
    recipe = make_recipe()
    encode(TEXTS[:3], recipe, CountingBackend, cache=open_cache(given))
    assert shards_of(tmp_path / "real" / "c", recipe) and not (tmp_path / "c").exists()
    assert Path(absolute_paths({"cache_dir": str(given)})["cache_dir"]) == tmp_path / "real" / "c"
    # the siblings that made a path absolute by text: a relative model folder's fitted place, the probe's output folder
    from bertfeat.embedder import _relative_model_dir
    from bertfeat.probe import _check_writable

    (tmp_path / "real" / "m").mkdir()
    monkeypatch.chdir(tmp_path)
    assert _relative_model_dir(os.path.join("lnk", "..", "m")) == str(tmp_path / "real" / "m")
    _check_writable(given / "probe.json", "--json")  # real/c exists; ./c, which the text names, does not


# -- corruption: detected, reported, ignored, recomputed -------------------------------------------------------------


def _two_shards(root):
    recipe = make_recipe()
    cache = Cache(root, row_group_rows=4)
    encode(TEXTS[:20], recipe, CountingBackend, cache=cache)
    encode(TEXTS[20:], recipe, CountingBackend, cache=cache)
    return recipe, shards_of(root, recipe)


def test_a_damaged_shard_under_warnings_as_errors_is_reported_on_every_call_not_once_then_silently(tmp_path):
    """Under -W error (PYTHONWARNINGS=error, as CI runs) a damaged shard was set aside before its warning was
    raised: the first call failed with the warning, and every later call of the process went on silently without
    the shard, its texts recomputed. The warning now comes first, so each call says it until the shard is compacted
    away; with warnings shown, it is said once and the shard set aside, as before."""
    recipe, (first, _) = _two_shards(tmp_path)
    data = first.read_bytes()
    first.write_bytes(data[: len(data) // 2])
    cache = Cache(tmp_path)
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(CacheWarning, match=first.name):
                encode(TEXTS, recipe, CountingBackend, cache=cache)
    with pytest.warns(CacheWarning, match=first.name):
        _, stats = encode(TEXTS, recipe, CountingBackend, cache=cache)
    assert (stats.cache_hits, stats.cache_misses) == (20, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per process where it was shown
        _, stats = encode(TEXTS, recipe, CountingBackend, cache=cache)
    assert stats.cache_hits == 40  # the recomputed texts were cached anew


def test_a_damaged_shard_listed_by_info_where_warnings_are_errors_still_stops_each_later_call(tmp_path, caplog):
    """Cache.info() under -W error logs a damaged shard instead of raising (it must finish its listing), and it set the
    shard aside for the process as if the warning had been shown: every later call then went on silently without it,
    where before info each call raised until compact. A shard only logged is now not set aside: later calls still
    stop on it; where the warning was shown, it is said once per process, as for a lookup."""
    import logging

    recipe, (first, _) = _two_shards(tmp_path)
    first.write_bytes(first.read_bytes()[:50])
    cache = Cache(tmp_path)
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="bertfeat"):
        warnings.simplefilter("error")
        assert cache.info()[0].corrupt == [first.name]
        assert cache.info()[0].corrupt == [first.name]  # and said again by a second listing
        for _ in range(2):
            with pytest.raises(CacheWarning, match=first.name):
                encode(TEXTS, recipe, CountingBackend, cache=cache)
    assert [("ignoring unreadable shard" in r.getMessage() and first.name in r.getMessage()) for r in caplog.records] \
        == [True, True]  # logged by each listing, the lookups' stops raised
    with pytest.warns(CacheWarning, match=first.name):
        cache.info()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # shown once: set aside for the process
        _, stats = encode(TEXTS, recipe, CountingBackend, cache=cache)
    assert (stats.cache_hits, stats.cache_misses) == (20, 20)


def test_truncated_shard_is_reported_ignored_and_its_texts_recomputed(tmp_path):
    recipe, (first, second) = _two_shards(tmp_path)
    data = first.read_bytes()
    first.write_bytes(data[: len(data) // 2])

    backend = CountingBackend()
    with pytest.warns(CacheWarning, match=first.name):
        out, stats = encode(TEXTS, recipe, lambda: backend, cache=Cache(tmp_path))
    assert sorted(backend.tokenized) == sorted(TEXTS[:20])
    assert (stats.cache_hits, stats.cache_misses, stats.cache_new) == (20, 20, 20)
    np.testing.assert_array_equal(out, encode(TEXTS, recipe, CountingBackend)[0])

    cache = Cache(tmp_path)
    with pytest.warns(CacheWarning):
        info = cache.info()[0]
    assert info.corrupt == [first.name]
    assert info.rows == 40
    result = cache.compact()[0]
    assert result.corrupt_removed == [first.name]
    assert not first.exists()
    _, stats = encode(TEXTS, recipe, no_model, cache=Cache(tmp_path))
    assert stats.cache_hits == 40


def test_flipped_bit_in_a_vector_page_is_caught_not_returned(tmp_path):
    recipe, (first, _) = _two_shards(tmp_path)
    meta = pq.read_metadata(first)
    column = meta.row_group(2).column(2)
    assert column.path_in_schema.startswith("vector")
    data = bytearray(first.read_bytes())
    data[column.data_page_offset + column.total_compressed_size - 3] ^= 0x40  # inside the float values
    first.write_bytes(bytes(data))

    backend = CountingBackend()
    with pytest.warns(CacheWarning, match="CRC|checksum"):
        out, stats = encode(TEXTS, recipe, lambda: backend, cache=Cache(tmp_path))
    np.testing.assert_array_equal(out, encode(TEXTS, recipe, CountingBackend)[0])
    assert stats.cache_misses > 0 and backend.rows == stats.cache_misses


def test_compact_of_a_namespace_whose_shards_are_all_corrupt_removes_them(tmp_path):
    recipe, shards = _two_shards(tmp_path)
    for shard in shards:
        shard.write_bytes(b"")
    (tmp_path / recipe.fingerprint() / "recipe.json").unlink()  # nothing left to tell the vector width
    with pytest.warns(CacheWarning):
        result = Cache(tmp_path).compact()[0]
    assert (result.shards_before, result.shards_after, result.rows) == (2, 0, 0)
    assert sorted(result.corrupt_removed) == [s.name for s in shards]
    assert not list((tmp_path / recipe.fingerprint()).glob("shard-*"))


@pytest.mark.parametrize("kind", ["garbage", "other recipe", "empty"])
def test_foreign_or_broken_files_named_like_shards_are_ignored(tmp_path, kind):
    recipe, (first, _) = _two_shards(tmp_path)
    intruder = first.with_name("shard-00000000000000000001-abcdefabcdef.parquet")
    if kind == "garbage":
        intruder.write_bytes(b"PAR1 this is not a parquet file PAR1")
    elif kind == "empty":
        intruder.write_bytes(b"")
    else:
        other = make_recipe(normalize=True)
        Cache(tmp_path / "other").store(other, [text_key(TEXTS[0])], np.full((1, 4), 9, np.float32), [1])
        shutil.copy(shards_of(tmp_path / "other", other)[0], intruder)
    with pytest.warns(CacheWarning, match=intruder.name):
        out, stats = encode(TEXTS, recipe, no_model, cache=Cache(tmp_path))
    assert stats.cache_hits == 40
    np.testing.assert_array_equal(out, encode(TEXTS, recipe, CountingBackend)[0])


def test_temp_files_are_never_read_and_compact_removes_dead_ones(tmp_path):
    recipe, (first, _) = _two_shards(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    temp = first.with_name(f".tmp-{cache_module._HOST}-{int(dead.stdout)}-0123456789ab.parquet")
    temp.write_bytes(first.read_bytes()[:100])
    cache = Cache(tmp_path)
    _, stats = encode(TEXTS, recipe, no_model, cache=cache)
    assert stats.cache_hits == 40
    assert cache.info()[0].temp_files == 1
    assert cache.compact()[0].temp_removed == 1
    assert not temp.exists()


@pytest.mark.parametrize("name", [f".recipe.json.tmp-{os.getpid()}-0123abcd",
                                  f"recipe.json.{os.getpid()}-0123abcd.tmp"])
def test_what_a_writer_killed_while_writing_recipe_json_leaves_is_removed_by_compact_and_clear(tmp_path, name):
    # `recipe.json.<pid>-<id>.tmp` was no temp file to compact and no cache file to clear: it stayed for good, and
    # after a clear it kept the namespace's folder, listed by `cache info` as an empty namespace. (The second name
    # is an older bertfeat's; each small file is now written as `.<name>.tmp-<pid>-<id>`, flush.atomic_write_bytes.)
    recipe, (first, _) = _two_shards(tmp_path)
    old, fresh = first.with_name(name), first.with_name(name.replace("0123abcd", "4567cdef"))
    old.write_text('{"mod')
    fresh.write_text('{"mod')
    an_hour_ago = time.time() - cache_module._STALE_TMP_SECONDS - 60
    os.utime(old, (an_hour_ago, an_hour_ago))
    cache = Cache(tmp_path)
    assert cache.info()[0].temp_files == 2
    assert cache.compact()[0].temp_removed == 1  # no host in its name: only its age says its writer is dead
    assert not old.exists() and fresh.exists()
    assert cache.clear() == [recipe.fingerprint()]
    assert not first.parent.exists() and cache.info() == []


# -- compaction ------------------------------------------------------------------------------------------------------


def test_compact_merges_shards_and_drops_duplicates(tmp_path):
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(tmp_path, row_group_rows=16)
    for start in (0, 50, 100):
        cache.store(recipe, *workers.rows(range(start, start + 50)))
    # what two writers racing on the same texts leave behind: the same rows in two shards
    first = shards_of(tmp_path, recipe)[0]
    shutil.copy(first, first.with_name("shard-99999999999999999999-abcdefabcdef.parquet"))
    info = cache.info()[0]
    assert (info.rows, info.stored_rows, info.shards) == (150, 200, 4)

    result = cache.compact()[0]
    assert (result.shards_before, result.shards_after, result.rows, result.duplicates_dropped) == (4, 1, 150, 50)
    assert result.bytes_after < result.bytes_before
    assert len(shards_of(tmp_path, recipe)) == 1
    keys = workers.rows(range(150))[0]
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)
    assert cache.compact()[0].shards_after == 1  # nothing left to do


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), "closed"])
@pytest.mark.parametrize("when", ["write", "close"])
def test_a_compaction_that_cannot_write_blames_no_shard_and_deletes_nothing(tmp_path, monkeypatch, failure, when):
    """A full disk while writing the merged shard: the shards being copied were reported as corrupt ("its texts
    will be recomputed"), and had the close succeeded they would have been deleted with their rows unmerged."""
    import pyarrow as pa

    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(tmp_path, row_group_rows=16)
    for start in (0, 50, 100):
        cache.store(recipe, *workers.rows(range(start, start + 50)))
    before = sorted(p.name for p in shards_of(tmp_path, recipe))
    real = getattr(cache_module._RowGroupWriter, when)
    calls = []

    def failing(self, *args):
        calls.append(1)
        if len(calls) == (2 if when == "write" else 1):  # a later row group's write, or the final one
            raise failure if isinstance(failure, OSError) else pa.ArrowInvalid("Operation on closed file")
        return real(self, *args)

    monkeypatch.setattr(cache_module._RowGroupWriter, when, failing)
    real_abort, aborted = cache_module._RowGroupWriter.abort, []
    monkeypatch.setattr(cache_module._RowGroupWriter, "abort",
                        lambda self: aborted.append(1) or real_abort(self))  # its file let go of, not left open
    why = "OSError: [Errno 28] No space left on device" if isinstance(failure, OSError) else \
        "ArrowInvalid: Operation on closed file"
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # no shard may be reported unreadable
        with pytest.raises(CacheError, match=r"could not write the merged shard .*; no shard was removed") as refused:
            cache.compact()
        assert re.fullmatch(
            rf"compacting {re.escape(str(tmp_path / recipe.fingerprint()))} could not write the merged shard "
            rf"\({re.escape(why)}\); no shard was removed and the cache is as it was\. Free some space on its disk "
            r"\(the merged shard needs up to [1-9][\d,]* bytes\) and run compact again\.", str(refused.value))
        assert aborted == [1]
        monkeypatch.setattr(cache_module._RowGroupWriter, when, real)
        assert sorted(p.name for p in shards_of(tmp_path, recipe)) == before
        assert not [n for n in os.listdir(tmp_path / recipe.fingerprint()) if ".tmp" in n]
        info = cache.info()[0]
        assert info.corrupt == [] and info.rows == 150
        keys = workers.rows(range(150))[0]
        found, got, tokens = cache.lookup(recipe, keys)
        assert found.all()
        workers.check_found(keys, found, got, tokens)
        assert cache.compact()[0].shards_after == 1  # and it works once the disk has room


def test_reader_holding_an_old_index_survives_a_compaction(tmp_path):
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    writer = Cache(tmp_path)
    for start in range(0, 100, 20):
        writer.store(recipe, *workers.rows(range(start, start + 20)))
    reader = Cache(tmp_path)
    keys = workers.rows(range(100))[0]
    assert reader.lookup(recipe, keys)[0].all()  # its index now points at five shards...
    Cache(tmp_path).compact()  # ...which another process merges and deletes
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # a compacted shard is not a corrupt one
        found, got, tokens = reader.lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)


def test_reader_whose_listing_is_compacted_away_before_it_opens_the_shards_finds_the_merged_one(tmp_path):
    # The listing named two shards; another process merged and deleted them before this one read their keys. The
    # reader indexed nothing and took all 10 cached rows for misses, to be recomputed.
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    Cache(tmp_path).store(recipe, *workers.rows(range(5)))
    Cache(tmp_path).store(recipe, *workers.rows(range(5, 10)))
    reader = Cache(tmp_path)
    namespace = reader._namespace(recipe.fingerprint(), recipe.n_features)
    opened, compacted = namespace._open, []

    def open_after_a_compaction(name):
        if not compacted:
            compacted.append(Cache(tmp_path).compact()[0])
        return opened(name)

    namespace._open = open_after_a_compaction
    keys = workers.rows(range(10))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        found, got, tokens = reader.lookup(recipe, keys)
    assert (compacted[0].shards_before, compacted[0].shards_after) == (2, 1)
    assert found.all()
    workers.check_found(keys, found, got, tokens)


@contextlib.contextmanager
def compacting_in_a_thread(cache, monkeypatch):
    """``cache.compact()`` run in a thread of its own and held inside its merge (at its first copy of rows) while the
    block runs; yields a dict whose "result" is the compaction's once the block has ended."""
    import threading

    import bertfeat.compaction

    inside, go_on = threading.Event(), threading.Event()
    real = bertfeat.compaction._copy_rows

    def paused(*args, **kwargs):
        inside.set()
        assert go_on.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(bertfeat.compaction, "_copy_rows", paused)
    compacted = {}
    compactor = threading.Thread(target=lambda: compacted.update(result=cache.compact()[0]))
    compactor.start()
    try:
        assert inside.wait(30)
        yield compacted
    finally:
        go_on.set()
        compactor.join(30)


def test_a_compaction_in_another_thread_lets_lookups_and_stores_run_while_it_merges(tmp_path, monkeypatch):
    """docs/cache.md: readers take no lock while reading, and a compaction holds a lock only for its swap. In one
    process (a service compacting its cache in a thread of its own) every lookup and store of that namespace waited
    for the whole merge, minutes on a big cache: a request stalled until the compaction ended. They now run beside
    it; a shard stored meanwhile is left alone and keeps its rows."""
    import threading

    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(tmp_path)
    for start in range(0, 40, 10):
        cache.store(recipe, *workers.rows(range(start, start + 15)))
    during = {}

    def request():
        during["lookup"] = cache.lookup(recipe, workers.rows(range(50))[0])
        during["stored"] = cache.store(recipe, *workers.rows(range(50, 65)))

    with compacting_in_a_thread(cache, monkeypatch) as compacted:
        thread = threading.Thread(target=request)
        thread.start()
        thread.join(10)
        ran_beside = not thread.is_alive()
    thread.join(30)
    assert ran_beside, "a lookup waited for another thread's whole compaction"
    found, got, tokens = during["lookup"]
    assert found.tolist() == [True] * 45 + [False] * 5
    workers.check_found(workers.rows(range(50))[0], found, got, tokens)
    assert during["stored"] == 15
    result = compacted["result"]
    assert (result.shards_before, result.shards_after, result.rows, result.duplicates_dropped) == (4, 2, 45, 0)
    keys = workers.rows([*range(45), *range(50, 65)])[0]
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)  # a new process: every row, the merged and the new
    assert found.all()
    workers.check_found(keys, found, got, tokens)
    assert len(shards_of(tmp_path, recipe)) == 2


def test_a_shard_another_thread_could_not_read_during_a_compaction_is_not_deleted_by_it(tmp_path, monkeypatch):
    """A compaction deletes as corrupt only the shards it found unreadable itself (it looks again as it starts). With
    other threads' lookups running beside the merge, one that failed to read a shard (a moment's I/O error) marked
    it for the process: the compaction must not take that for its own finding and delete a sound shard's rows."""
    import threading

    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(10)))
    cache.store(recipe, *workers.rows(range(10, 20)))
    with compacting_in_a_thread(cache, monkeypatch) as compacted:
        Cache(tmp_path).store(recipe, *workers.rows(range(20, 30)))  # another process's shard, new to the merge
        namespace = cache._namespace(recipe.fingerprint())
        read_rows = namespace._read_rows

        def failing(shard, rows):
            if len(rows) == 10 and shard.name == max(shards.name for shards in namespace.shards.values()):
                raise OSError(errno.EIO, "Input/output error")  # once: a moment's error
            return read_rows(shard, rows)

        monkeypatch.setattr(namespace, "_read_rows", failing)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CacheWarning)
            thread = threading.Thread(target=lambda: cache.lookup(recipe, workers.rows(range(20, 30))[0]))
            thread.start()
            thread.join(30)
        assert [str(w.message).startswith("bertfeat cache: ignoring unreadable shard") for w in caught] == [True]
        monkeypatch.setattr(namespace, "_read_rows", read_rows)
    assert compacted["result"].corrupt_removed == []
    keys = workers.rows(range(30))[0]
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)


# -- several processes at once ---------------------------------------------------------------------------------------


def test_concurrent_writers_and_a_compactor_lose_and_corrupt_nothing(tmp_path):
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    ctx = multiprocessing.get_context("spawn")
    n_workers, rounds, batch = 3, 6, 400
    with ctx.Pool(n_workers + 1) as pool:
        writes = [pool.apply_async(workers.writer, (str(tmp_path), recipe, w, rounds, batch, 64))
                  for w in range(n_workers)]
        compactions = pool.apply_async(workers.compactor, (str(tmp_path), recipe, 5))
        written = sum(w.get(timeout=120) for w in writes)
        compactions.get(timeout=120)

    expected = set()
    for w in range(n_workers):
        for r in range(rounds):
            start = w * batch // 2 + r * batch // 4
            expected.update(range(start, start + batch))
    assert written >= len(expected)  # racing writers may both write a text; none may be missing
    keys = workers.rows(sorted(expected))[0]
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)
    info = Cache(tmp_path).info()[0]
    assert info.rows == len(expected) and not info.corrupt and info.temp_files == 0

def test_the_token_counts_noted_beside_a_namespace_are_not_lost_to_a_first_writer(tmp_path):
    # note_tokens rewrote recipe.json without the cache's lock, and a first store wrote it where it saw none: a store
    # that saw no recipe.json, slowed before writing it (while another process stored and noted the counts), wrote
    # the plain recipe over the noted one, and every later cached run with a prefix had to load the model to learn
    # them again. Both now write under the namespace's lock, the first store checking again once it holds it.
    import threading

    recipe = make_recipe(hidden_size=workers.N_FEATURES, prefix="q: ")
    ctx = multiprocessing.get_context("spawn")
    held, go = ctx.Event(), ctx.Event()
    first = ctx.Process(target=workers.first_store_held, args=(str(tmp_path), recipe, held, go))
    first.start()
    try:
        assert held.wait(60)
        cache = Cache(tmp_path)

        def store_and_note():
            cache.store(recipe, *workers.rows(range(5, 10)))
            cache.note_tokens(recipe, n_special=2, prefix_tokens=3)

        here = threading.Thread(target=store_and_note)
        here.start()
        here.join(0.5)  # runs through where nothing holds it back; waits for the first writer's lock where it does
        go.set()
        here.join(30)
        first.join(30)
    finally:
        go.set()
        first.join(30)
    assert first.exitcode == 0 and not here.is_alive()
    noted = json.loads((tmp_path / recipe.fingerprint() / "recipe.json").read_text())
    assert (noted["n_special"], noted["prefix_tokens"]) == (2, 3)
    assert Cache(tmp_path).tokens_noted(recipe) == {"n_special": 2, "prefix_tokens": 3}
    assert Cache(tmp_path).lookup(recipe, workers.rows(range(10))[0])[0].all()


def flock_waiters(path) -> list[tuple[int, str]]:
    """(pid, "READ" or "WRITE") of every process blocked waiting for the flock on ``path``, read from /proc/locks."""
    inode = os.stat(path).st_ino
    waiters = []
    with open("/proc/locks") as fh:
        for line in fh:
            parts = line.split()
            if "->" not in parts or "FLOCK" not in parts:
                continue
            i = parts.index("FLOCK")  # "7: -> FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF"
            if int(parts[i + 4].split(":")[-1]) == inode:
                waiters.append((int(parts[i + 3]), parts[i + 2]))
    return waiters


@contextlib.contextmanager
def holding_flock(path, *, exclusive: bool):
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="reads blocked flock waiters from Linux's /proc/locks")
@pytest.mark.parametrize("operation, lock_file, held, waits_as", [
    ("lookup", ".lock", "exclusive", "READ"),  # a reader's listing waits for a compaction's swap
    ("compact", ".lock", "shared", "WRITE"),  # the swap waits for readers' listings
    ("compact", ".compact.lock", "exclusive", "WRITE"),  # one compaction at a time
    ("clear", ".compact.lock", "exclusive", "WRITE"),  # no clear under a running compaction
    ("clear", ".lock", "shared", "WRITE"),  # the removal waits for readers' listings
])
def test_cache_operations_wait_for_the_advisory_lock(tmp_path, operation, lock_file, held, waits_as):
    """Deterministic: hold the lock here, and see the other process blocked on it in /proc/locks, rather than
    hoping two jobs collide. Fails if the operation completes (or never blocks) while the lock is held."""
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(0, 100)))
    cache.store(recipe, *workers.rows(range(50, 150)))  # two shards, overlapping: compaction has work to do
    ns = tmp_path / recipe.fingerprint()
    # a shard written elsewhere, moved in while the lock is held, as a compaction's swap would
    other = tmp_path.parent / f"{tmp_path.name}-other"
    Cache(other).store(recipe, *workers.rows(range(150, 200)))
    [moved_in] = shards_of(other, recipe)

    env = dict(os.environ, PYTHONPATH=str(REPO))
    with holding_flock(ns / lock_file, exclusive=held == "exclusive"):
        proc = subprocess.Popen([sys.executable, "-m", "tests._cache_workers", "locked-operation", str(tmp_path),
                                 operation, "200"], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            deadline = time.time() + 120
            while (proc.pid, waits_as) not in flock_waiters(ns / lock_file):
                assert proc.poll() is None, f"{operation} finished while {lock_file} was held: it never took the lock"
                assert time.time() < deadline, f"{operation} neither finished nor waited for {lock_file}"
                time.sleep(0.01)
            if operation == "lookup":
                shutil.move(moved_in, ns / moved_in.name)
        except BaseException:
            proc.kill()
            raise
    assert proc.wait(timeout=120) == 0
    done = json.loads(proc.stdout.read().split("done ", 1)[1])
    if operation == "lookup":  # it listed the shards after the swap, not before
        assert done == {"found": 200}
    elif operation == "compact":
        assert done == {"shards_after": [1]}
        found, _, _ = Cache(tmp_path).lookup(recipe, workers.rows(range(150))[0])
        assert found.all()
    else:
        assert done == {"cleared": 1} and not ns.exists()


@pytest.mark.skipif(locks.fcntl is None, reason="flock is POSIX")
@pytest.mark.parametrize("operation", ["compact", "clear"])
def test_a_compaction_or_clear_waiting_for_another_says_who_it_waits_for(tmp_path, operation):
    """`bertfeat cache clear` or a second `compact` while a compaction ran in another terminal waited for the whole
    merge without a word, and looked hung. It now says who holds .compact.lock and that it waits; the holder writes
    its line there as it takes the lock, and empties it as it lets go (never naming a process that ended)."""
    import threading

    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    Cache(tmp_path).store(recipe, *workers.rows(range(10)))
    Cache(tmp_path).store(recipe, *workers.rows(range(5, 15)))
    folder = tmp_path / recipe.fingerprint()
    lock = folder / ".compact.lock"
    done = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheWarning)
        with holding_flock(lock, exclusive=True):
            lock.write_text("pid 4242 on elsewhere")
            thread = threading.Thread(target=lambda: done.update(result=getattr(Cache(tmp_path), operation)()))
            thread.start()
            deadline = time.time() + 30
            while not caught and time.time() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)
            waited = thread.is_alive() and not done
            lock.write_text("")  # as the holder lets go
        thread.join(30)
    assert waited
    assert [str(w.message) for w in caught] == [
        f"bertfeat cache: pid 4242 on elsewhere is compacting or clearing {folder} (it holds .compact.lock); this "
        f"{'compaction' if operation == 'compact' else 'clear'} waits for it to end."]
    if operation == "compact":
        assert [r.shards_after for r in done["result"]] == [1] and lock.read_text() == ""
        # the line is the holder's while it holds the lock
        seen = []
        real = cache_module._Namespace.refresh

        def refresh(ns):
            seen.append(lock.read_text())
            return real(ns)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(cache_module._Namespace, "refresh", refresh)
            Cache(tmp_path).compact()
        import socket

        assert seen[0] == f"pid {os.getpid()} on {socket.gethostname()}" and lock.read_text() == ""
    else:
        assert done["result"] == [recipe.fingerprint()] and not folder.exists()


@pytest.mark.skipif(locks.fcntl is None, reason="flock is POSIX")
@pytest.mark.parametrize("operation", ["compact", "clear"])
def test_a_compaction_or_clear_stopped_while_it_waits_leaves_the_holders_line(tmp_path, monkeypatch, operation):
    """(found by a review of session 16's file work, 2026-11-27, session 16) A compaction or clear that waited for
    another's .compact.lock and was stopped before it held it (Ctrl-C at the "waits for it to end" it said, as one
    does at what looks hung) emptied the lock file as it went, as if it had held the lock: the holder's line was gone
    while the holder still compacted, and the next waiter said "another process is compacting". Only the holder
    empties its line now."""
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    Cache(tmp_path).store(recipe, *workers.rows(range(10)))
    Cache(tmp_path).store(recipe, *workers.rows(range(5, 15)))
    lock = tmp_path / recipe.fingerprint() / ".compact.lock"
    real_lock = locks.lock

    def interrupted(fd, *, exclusive=True, wait=True):  # Ctrl-C while it waits for the holder
        if wait:
            raise KeyboardInterrupt
        return real_lock(fd, exclusive=exclusive, wait=wait)

    monkeypatch.setattr(locks, "lock", interrupted)
    with holding_flock(lock, exclusive=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        lock.write_text("pid 4242 on elsewhere")
        with pytest.raises(KeyboardInterrupt):
            getattr(Cache(tmp_path), operation)()
        assert lock.read_text() == "pid 4242 on elsewhere"


@pytest.mark.skipif(locks.fcntl is None, reason="flock is POSIX")
@pytest.mark.parametrize("lock_file", [".lock", ".compact.lock"])
def test_clear_removes_its_lock_files_while_holding_them_and_a_waiter_locks_afresh(tmp_path, monkeypatch, lock_file):
    """`clear` removed .lock and .compact.lock after letting go of them: a compaction waiting on the old file then
    held a lock no later process could see, and a second compaction ran beside it (its shards vanishing under it:
    "vanished during compaction")."""
    import fcntl
    import threading

    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(10)))
    path = tmp_path / recipe.fingerprint() / lock_file

    def free(p):  # whether another open file description can lock it now
        fd = os.open(p, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    held_when_removed = []
    unlink = os.unlink

    def watching_unlink(p, *args, **kwargs):
        if os.fspath(p) == str(path):
            held_when_removed.append(not free(p))
        return unlink(p, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", watching_unlink)
    cache.clear()
    monkeypatch.undo()
    assert held_when_removed == [True]

    # A waiter on a lock file that is removed before it is let go locks the file a later caller opens.
    path.parent.mkdir(exist_ok=True)
    inside, leave = threading.Event(), threading.Event()

    def waiter():
        with cache_module._flock(str(path), exclusive=True):
            inside.set()
            leave.wait(30)

    with holding_flock(path, exclusive=True):
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.2)  # let it block on the file held here
        path.unlink()
    try:
        assert inside.wait(30)
        assert path.exists() and not free(path)
    finally:
        leave.set()
        thread.join(30)


@pytest.mark.skipif(locks.fcntl is None, reason="flock is POSIX")
@pytest.mark.parametrize("err, times, opened", [(errno.EACCES, 100, 1), (errno.ESTALE, 1, 2)])
def test_a_cache_lock_unsure_it_holds_its_file_keeps_the_lock_it_has(tmp_path, monkeypatch, err, times, opened):
    """Where the stat asking whether the lock file is still the one locked failed other than "gone" (a permission
    lost, an I/O error), `_flock` let go and opened the file again: looping while the stat kept failing, running
    unlocked where the open then failed. It now keeps the lock it holds; a file gone (ENOENT, or NFS's ESTALE: another
    client removed it) is locked afresh, once."""
    import fcntl

    path = tmp_path / ".lock"
    real_open, opens = os.open, []

    def counting_open(p, *a, **kw):
        if os.fspath(p) == str(path):
            opens.append(p)
            if len(opens) > 3:
                raise RuntimeError("the lock file opened again and again: the lock never held")
        return real_open(p, *a, **kw)

    lock_stat_fails(monkeypatch, path, err, times)
    monkeypatch.setattr(os, "open", counting_open)
    with cache_module._flock(str(path), exclusive=True):
        monkeypatch.undo()
        assert len(opens) == opened
        fd = os.open(path, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)


@pytest.mark.parametrize("mode", ["stall", "loop"])
def test_writer_killed_mid_write_leaves_a_cache_the_next_run_completes(tmp_path, mode):
    """SIGKILL a writer (``stall``: after its temp file is written, before the rename; ``loop``: at any moment)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "tests._cache_workers", str(tmp_path), mode], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, text=True)
    committed = -1
    try:
        for line in proc.stdout:
            if line.startswith("committed"):
                committed = int(line.split()[1])
            if line.startswith("stalled") or (mode == "loop" and committed >= 3):
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert committed >= 2
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    if mode == "stall":
        assert list((tmp_path / recipe.fingerprint()).glob(".tmp-*"))  # the kill did land inside a write

    # A fresh process reads every committed row intact...
    cache = Cache(tmp_path)
    keys, vectors, n_tokens = workers.rows(range((committed + 1) * 2000))
    found, got, tokens = cache.lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)
    # ...and completes the rest: the next batch is either whole or absent, never partial or wrong.
    keys, vectors, n_tokens = workers.rows(range(0, (committed + 3) * 2000))
    found, got, tokens = cache.lookup(recipe, keys)
    workers.check_found(keys, found, got, tokens)
    new = cache.store(recipe, keys, vectors, n_tokens)
    assert new == (~found).sum() > 0
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)
    cache.compact()
    assert not list((tmp_path / recipe.fingerprint()).glob(".tmp-*"))  # the dead writer's temp file is gone


# -- where the cache lives ---------------------------------------------------------------------------------------------


def test_missing_directory_is_created_when_possible(tmp_path):
    cache = open_cache(tmp_path / "new" / "cache")
    assert (tmp_path / "new" / "cache" / cache_module.MARKER).exists()
    assert cache.info() == []


def test_directory_that_cannot_be_created_raises_cache_error_naming_it(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(CacheError, match=r"a-file/cache.*cannot be created.*set_params\(cache_dir=") as err:
        open_cache(blocker / "cache")
    assert "cache_dir=None" in str(err.value)
    with pytest.raises(CacheError, match="exists but is not a directory"):
        open_cache(blocker)


def test_maintenance_never_creates_a_cache(tmp_path):
    with pytest.raises(CacheError, match="does not exist"):
        open_cache(tmp_path / "nope", create=False)
    assert not (tmp_path / "nope").exists()
    (tmp_path / "plain").mkdir()
    with pytest.raises(CacheError, match="not a bertfeat cache"):
        open_cache(tmp_path / "plain", create=False)


def test_lookup_in_an_empty_or_vanished_cache_finds_nothing(tmp_path):
    recipe = make_recipe()
    cache = Cache(tmp_path / "never-written")
    found, got, tokens = cache.lookup(recipe, [text_key("a")])
    assert found.tolist() == [False] and got.shape == (0, 4) and tokens.shape == (0,)
    assert not (tmp_path / "never-written").exists()


def test_the_documented_cache_key_names_every_field_of_the_recipes_fingerprint():
    """docs/cache.md ("The key") and the README list what decides a cache namespace; users read 'change any of
    these and you get a different namespace' as the whole list. Every field of the recipe's key is named in both
    (a field added to Recipe without a word here fails the first assertion)."""
    import dataclasses
    import re
    from pathlib import Path

    from bertfeat.recipe import Recipe

    root = Path(__file__).resolve().parent.parent
    said = {"weights_sha256": "weights", "tokenizer_sha256": "tokenizer", "config_sha256": "config",
            "hidden_size": "hidden size", "num_layers": "layer count", "pooling": "pooling", "layers": "layers",
            "layer_agg": "layer aggregation", "max_length": "max", "long_text": "long", "stride": "stride",
            "normalize": "normaliz", "dtype": "dtype", "prefix": "the prefix", "pool_prefix": "whether the prefix is pooled",
            "format_version": "format version",
            "model_format": "model family"}
    fields = {f.name for f in dataclasses.fields(Recipe)} - {"model", "_fingerprint"}
    assert fields == set(said)
    cache_md = (root / "docs/cache.md").read_text().split("**The namespace", 1)[1].split("Change any of these", 1)[0]
    readme = (root / "README.md").read_text().split("## The embedding cache", 1)[1].split("Re-runs, CV folds", 1)[0]
    for where, text in (("docs/cache.md", cache_md), ("README.md", readme)):
        text = re.sub(r"[\s`_-]+", " ", text).lower()
        missing = [field for field, words in said.items() if words.replace("_", " ") not in text]
        if where == "README.md":  # the README gives the short list: sizes and per-family versions are details
            missing = [f for f in missing if f not in ("hidden_size", "num_layers", "model_format")]
        assert not missing, (where, missing)


def test_a_second_ctrl_c_while_the_finished_texts_are_written_stops_that_too(tmp_path, monkeypatch):
    # docs/cache.md: the finished texts are written as the run stops; a second Ctrl-C then stops the writing, and
    # leaves no temp file
    def interrupted(table, where, **kwargs):
        open(where, "wb").close()  # the temp file begun
        raise KeyboardInterrupt("the second Ctrl-C (simulated)")

    cache = Cache(tmp_path)
    monkeypatch.setattr(pq, "write_table", interrupted)
    texts = [f"text {i} " * (i % 6 + 1) for i in range(60)]
    stops = _StopsAtBatch(at=5, stop=KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt, match="second") as info:
        encode(texts, make_recipe(), lambda: stops, cache=cache, batch_tokens=64)
    assert "stopped at a batch" in str(info.value.__context__)
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp") or p.name.startswith("shard-")]


def test_note_tokens_names_a_count_left_out(tmp_path):
    # Cache.note_tokens(recipe, prefix_tokens=1) without n_special raised a bare KeyError('n_special') from inside the
    # namespace; a cache another tool drives says which count it needs, and an unknown count is not dropped silently.
    cache = Cache(tmp_path)
    recipe = make_recipe(hidden_size=4)
    cache.store(recipe, [text_key("a")], np.ones((1, recipe.n_features), np.float32), np.array([3]))
    with pytest.raises(TypeError, match="n_special"):
        cache.note_tokens(recipe, prefix_tokens=1)
    with pytest.raises(TypeError, match="n_specials"):
        cache.note_tokens(recipe, n_specials=2, prefix_tokens=1)
    cache.note_tokens(recipe, n_special=2, prefix_tokens=1)
    assert Cache(tmp_path).tokens_noted(recipe) == {"n_special": 2, "prefix_tokens": 1}
