"""The cache pinned by value: every refusal and warning word for word, the on-disk format, compaction's result and
layout, stale temp files, and the races (a shard vanishing mid-lookup or mid-compaction, a namespace cleared
mid-write) made to happen on demand instead of hoped for. Written from the survivors of the cache's mutation run
(tests/README.md); test_cache.py holds the behaviour through encode and across processes."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat import cache as cache_module
from bertfeat import locks
from bertfeat import namespace as namespace_module
from bertfeat import shards as shard_module
from bertfeat.cache import Cache, _key_array, open_cache
from bertfeat.cli import main
from bertfeat.encode import encode, text_key
from bertfeat.exceptions import CacheError, CacheWarning
from tests import _cache_workers as workers
from tests.conftest import CountingBackend, make_recipe

F = workers.N_FEATURES
WHAT_TO_DO = ("Pass a writable directory on this machine (est.set_params(cache_dir=...), or <step>__cache_dir=... "
              "for a Pipeline), or cache_dir=None to run without a cache.")


def recipe16():
    return make_recipe(hidden_size=F)


def shards(root, recipe) -> list[Path]:
    return sorted((Path(root) / recipe.fingerprint()).glob("shard-*.parquet"))


def two_shards(root, n: int):
    """``(recipe, cache)``: a cache under ``root`` holding recipe16()'s texts 0..2n-1 in two shards of n rows."""
    recipe, cache = recipe16(), Cache(root)
    cache.store(recipe, *workers.rows(range(n)))
    cache.store(recipe, *workers.rows(range(n, 2 * n)))
    return recipe, cache


def shard_name(i: int) -> str:
    return f"shard-{i:020d}-abcdefabcdef.parquet"


def message_of(record) -> str:
    [w] = [w for w in record if issubclass(w.category, CacheWarning)]
    return str(w.message)


# -- open_cache: every refusal word for word -----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["", "   ", b""])
def test_an_empty_cache_dir_is_refused_not_taken_as_the_working_directory(tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    shown = os.fsdecode(path)
    with pytest.raises(CacheError) as err:
        open_cache(path)
    assert str(err.value) == f"cache_dir={shown!r} is empty; pass a directory path, or cache_dir=None for no cache."
    assert not (tmp_path / cache_module.MARKER).exists()


@pytest.mark.parametrize("url", ["s3://bucket/bertfeat-cache", "gs://b/c", "hdfs://nn:8020/c", "file:///tmp/c",
                                 "dbfs:/Volumes/main/default/cache", "abfss://c@acct.dfs.core.windows.net/cache"])
@pytest.mark.parametrize("create", [True, False])
def test_a_url_is_refused_not_made_a_local_folder_named_after_its_scheme(tmp_path, monkeypatch, url, create):
    # Before, abspath made 's3://bucket/bertfeat-cache' the folder ./s3:/bucket/bertfeat-cache of the working
    # directory: each Ray or Spark worker filled a cache of its own there, shared with nobody, without a word.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CacheError) as err:
        open_cache(url, create=create)
    assert str(err.value) == (
        f"cache_dir={url!r} is a URL, but the cache is a directory of files read and written with ordinary file "
        "calls. Pass a path: a local directory, or a shared filesystem mounted at the same path on every worker (an "
        "object store mounted with s3fs, gcsfuse or blobfuse; /dbfs/... on Databricks)."
    )
    assert os.listdir(tmp_path) == []


def test_paths_that_only_look_like_urls_are_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for path in ("C:/cache", "s3:bucket", "my cache:/x", "./s3://b"):
        assert open_cache(path).root == os.path.abspath(path)


def test_a_bytes_path_is_shown_decoded(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(CacheError) as err:
        open_cache(os.fsencode(blocker))
    assert str(err.value) == f"cache_dir={str(blocker)!r} ({blocker}) exists but is not a directory. {WHAT_TO_DO}"


def test_refusals_of_a_path_that_cannot_be_a_cache_word_for_word(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(CacheError) as err:
        open_cache(str(blocker / "cache"))
    assert str(err.value) == (
        f"cache_dir={str(blocker / 'cache')!r} ({blocker / 'cache'}) does not exist and cannot be created (Not a "
        f"directory). A pickled pipeline keeps the cache path of the machine it was fitted on. {WHAT_TO_DO}"
    )
    with pytest.raises(CacheError) as err:
        open_cache(tmp_path / "nope", create=False)
    assert str(err.value) == f"{tmp_path / 'nope'} does not exist, so it holds no bertfeat cache."
    (tmp_path / "plain").mkdir()
    with pytest.raises(CacheError) as err:
        open_cache(tmp_path / "plain", create=False)
    assert str(err.value) == (f"{tmp_path / 'plain'} is not a bertfeat cache (it has no bertfeat-cache.json); point "
                              "at the cache_dir you used.")


def test_a_directory_another_job_creates_at_the_same_moment_is_used(tmp_path, monkeypatch):
    real = os.makedirs

    def another_job_wins_the_race(path, *args, **kwargs):
        real(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "makedirs", another_job_wins_the_race)
    cache = open_cache(tmp_path / "shared" / "cache")
    assert cache.root == str(tmp_path / "shared" / "cache")


def test_a_directory_this_user_cannot_write_is_refused(tmp_path, monkeypatch):
    # (the tests may run as root, for whom every directory is writable: the permission check is faked)
    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: not mode & os.W_OK)
    with pytest.raises(CacheError) as err:
        open_cache(tmp_path / "ro")
    assert str(err.value) == f"cache_dir={str(tmp_path / 'ro')!r} ({tmp_path / 'ro'}) is not writable by this user. " \
                             f"{WHAT_TO_DO}"


def test_a_directory_that_cannot_be_written_is_refused_with_the_reason(tmp_path, monkeypatch):
    def read_only(path, text):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(cache_module, "_write_atomic", read_only)
    with pytest.raises(CacheError) as err:
        open_cache(tmp_path)
    assert str(err.value) == f"cache_dir={str(tmp_path)!r} ({tmp_path}) cannot be written (Read-only file system). " \
                             f"{WHAT_TO_DO}"


@pytest.mark.parametrize("code, strerror, where", [(errno.ENOSPC, "No space left on device", "makedirs"),
                                                     (errno.EDQUOT, "Disk quota exceeded", "marker")])
def test_a_cache_dir_on_a_full_disk_is_refused_saying_to_free_space(tmp_path, monkeypatch, code, strerror, where):
    # told to "Pass a writable directory on this machine", and where the folder had to be made that "A pickled
    # pipeline keeps the cache path of the machine it was fitted on": neither is what is wrong
    def full(*args, **kwargs):
        raise OSError(code, strerror)

    monkeypatch.setattr(*(os, "makedirs") if where == "makedirs" else (cache_module, "_write_atomic"), full)
    root = tmp_path / "c"
    if where == "marker":
        root.mkdir()
    with pytest.raises(CacheError) as err:
        open_cache(root)
    did = "does not exist and cannot be created" if where == "makedirs" else "cannot be written"
    assert str(err.value) == (
        f"cache_dir={str(root)!r} ({root}) {did} ({strerror}): "
        f"{'its disk is full' if code == errno.ENOSPC else 'its disk quota is exceeded'}. Free some space there, or "
        "pass another directory (est.set_params(cache_dir=...), or <step>__cache_dir=... for a Pipeline), or "
        "cache_dir=None to run without a cache.")


def read_only_mount(monkeypatch):
    """What a read-only mount (a team cache mounted read-only, a dataset volume) answers, faked (the tests may run as
    root, who may write anywhere): no write access, and statvfs's read-only flag; nothing bertfeat writes there may
    land (each write raises EROFS, as the kernel's does)."""
    def refused(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    real_statvfs = os.statvfs
    monkeypatch.setattr(os, "access", lambda path, mode: not mode & os.W_OK)
    monkeypatch.setattr(os, "statvfs", lambda path: os.statvfs_result(
        tuple(real_statvfs(path))[:8] + (os.ST_RDONLY, real_statvfs(path).f_namemax)))
    monkeypatch.setattr(pq, "write_table", refused)
    monkeypatch.setattr(cache_module, "_write_atomic", refused)  # the marker
    monkeypatch.setattr(namespace_module, "_write_atomic", refused)  # a recipe.json


def read_only_cache(monkeypatch, root) -> None:
    """The cache folder ``root`` as a read-only mount answers, and every other path as it is: for a whole job (the
    engines' tests), whose output must be written. No write access there, and statvfs's read-only flag; bertfeat
    writes nothing there (a test looks)."""
    real_access, real_statvfs = os.access, os.statvfs
    inside = lambda path: os.path.realpath(path).startswith(os.path.realpath(root))  # noqa: E731
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
        not mode & os.W_OK if inside(path) else real_access(path, mode, **kw)))
    monkeypatch.setattr(os, "statvfs", lambda path: os.statvfs_result(
        tuple(real_statvfs(path))[:8] + (os.ST_RDONLY if inside(path) else 0, real_statvfs(path).f_namemax)))


def test_a_complete_cache_on_a_read_only_mount_answers_and_stores_nothing(tmp_path, monkeypatch):
    # A team's cache mounted read-only (or a dataset volume holding one) was refused whole, "is not writable by this
    # user", though nothing needs writing to read it: every run embedded every text again. Now it answers what it
    # holds, the texts it does not hold are embedded and not stored, and one CacheWarning per process says so.
    recipe = make_recipe()
    held = [f"t{i}" for i in range(6)]
    expected, _ = encode(held + ["new one", "new two"], recipe, CountingBackend)
    encode(held, recipe, CountingBackend, cache=open_cache(tmp_path / "team"))
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "team").rglob("*"))
    read_only_mount(monkeypatch)
    backend = CountingBackend()
    with pytest.warns(CacheWarning) as record:
        out, stats = encode(held + ["new one"], recipe, lambda: backend, cache=open_cache(tmp_path / "team"))
        again, stats_again = encode(held + ["new two"], recipe, lambda: backend,
                                    cache=open_cache(tmp_path / "team"))
    np.testing.assert_array_equal(out, expected[:7])
    np.testing.assert_array_equal(again, expected[[0, 1, 2, 3, 4, 5, 7]])
    assert backend.tokenized == ["new one", "new two"]  # the six held texts came from the cache, both times
    assert (stats.cache_hits, stats.cache_new, stats_again.cache_hits, stats_again.cache_new) == (6, 0, 6, 0)
    assert message_of(record) == (  # one warning for the two calls
        f"bertfeat cache: cache_dir={str(tmp_path / 'team')!r} ({tmp_path / 'team'}) is on a read-only file system: "
        "the vectors it holds are used, and those of texts it does not hold are computed and not stored. To keep "
        "them, pass a folder this user may write to as cache_dir= (a copy of this one keeps its vectors).")
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "team").rglob("*")) == before


def test_a_read_only_cache_that_becomes_writable_stores_again(tmp_path, monkeypatch):
    # the same folder, opened again in one process: its state is looked at each time (a remount, chmod)
    recipe = make_recipe()
    open_cache(tmp_path / "team")
    with monkeypatch.context() as m:
        read_only_mount(m)
        with pytest.warns(CacheWarning, match="read-only"):
            assert encode(["a"], recipe, CountingBackend, cache=open_cache(tmp_path / "team"))[1].cache_new == 0
    assert encode(["a"], recipe, CountingBackend, cache=open_cache(tmp_path / "team"))[1].cache_new == 1
    assert encode(["a"], recipe, CountingBackend, cache=open_cache(tmp_path / "team"))[1].cache_hits == 1


def test_a_read_only_folder_that_is_no_cache_yet_is_refused_naming_the_read_only_file_system(tmp_path, monkeypatch):
    (tmp_path / "ro").mkdir()
    read_only_mount(monkeypatch)
    with pytest.raises(CacheError) as err:
        open_cache(tmp_path / "ro")
    assert str(err.value) == f"cache_dir={str(tmp_path / 'ro')!r} ({tmp_path / 'ro'}) is on a read-only file " \
                             f"system. {WHAT_TO_DO}"


def test_the_marker_file_says_the_format(tmp_path):
    open_cache(tmp_path / "c")
    assert (tmp_path / "c" / "bertfeat-cache.json").read_text() == '{"bertfeat_cache_format": 1}\n'


@pytest.mark.parametrize("create", [True, False])
def test_a_cache_of_a_newer_format_is_refused_not_compacted_away(tmp_path, create):
    # The format was written but never read: a bertfeat of today, sharing a cache with a newer one (a Python
    # virtualenv and R's), took shards it cannot read for corrupt ones, and `cache compact` deleted them.
    recipe = recipe16()
    fp = recipe.fingerprint()
    root = tmp_path / "c"
    Cache(root).store(recipe, *workers.rows(range(4)))
    (root / "bertfeat-cache.json").write_text('{"bertfeat_cache_format": 2}\n')
    newer = pa.table({"key": pa.array(workers.rows(range(4))[0], pa.binary(16)),
                      "vector": pa.array([np.ones(F, np.float16)] * 4, pa.list_(pa.float16()))},
                     metadata={"bertfeat.fingerprint": fp, "bertfeat.cache_format": "2"})
    pq.write_table(newer, root / fp / shard_name(1))
    with pytest.raises(CacheError) as err:
        open_cache(root, create=create).compact()
    assert str(err.value) == (
        f"{root} is a bertfeat cache of format 2 (bertfeat-cache.json), written by a newer bertfeat; this one reads "
        "format 1 and would misread or delete its shards. Upgrade bertfeat in this environment (the R package uses "
        "the Python one it is pointed at), or use another cache_dir."
    )
    assert len(shards(root, recipe)) == 2


@pytest.mark.parametrize("marker", ['{"bertfeat_cache_format": 1}\n', "", "[1]", '{"bertfeat_cache_format": "9"}'])
def test_a_marker_of_this_format_or_one_that_cannot_be_read_still_marks_a_cache(tmp_path, marker):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(4)))
    (tmp_path / "bertfeat-cache.json").write_text(marker)
    assert open_cache(tmp_path, create=False).lookup(recipe, workers.rows(range(4))[0])[0].all()


def test_the_caches_marker_and_recipe_file_are_flushed_before_they_are_renamed_into_place(tmp_path, monkeypatch):
    """The marker and ``recipe.json`` were renamed into place unflushed (a shard is flushed first): after a power cut
    each could be there empty, read as absent, where the shards beside them were whole."""
    real_fsync, real_replace, flushed, renamed = os.fsync, os.replace, set(), []

    def fsync(fd):
        flushed.add(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def replace(src, dst, *args, **kwargs):
        renamed.append((os.fspath(src), os.path.basename(dst)))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    recipe = recipe16()
    open_cache(tmp_path / "c").store(recipe, *workers.rows(range(4)))
    assert {dst for _, dst in renamed} >= {"bertfeat-cache.json", "recipe.json"}
    assert [src for src, _ in renamed if src not in flushed] == []


@pytest.mark.parametrize("left", ["empty", "cut short"])
def test_a_recipe_file_a_power_cut_left_unreadable_is_written_again_by_the_next_store(tmp_path, left):
    """A ``recipe.json`` left empty (renamed unflushed by an older bertfeat before a power cut) or cut short was
    never written again (a store looked only for the file): ``cache info`` said "(recipe.json missing)" for good,
    ``compact`` took the vector width from a shard, and the token counts a cache-only run needs were never noted."""
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(4)))
    path = tmp_path / recipe.fingerprint() / "recipe.json"
    whole = json.loads(path.read_text())
    path.write_text("" if left == "empty" else path.read_text()[:20])
    Cache(tmp_path).store(recipe, *workers.rows(range(4, 8)))
    assert json.loads(path.read_text()) == whole
    info = Cache(tmp_path).info()[0]
    assert (info.recipe, info.n_features, info.rows) == (whole, F, 8)


def test_an_empty_marker_is_written_again_where_the_cache_is_opened_to_be_written(tmp_path):
    """An empty marker (renamed unflushed by an older bertfeat before a power cut) still marks a cache, but says no
    format, so a newer bertfeat's cache could not be told from it; opened to be written, it is written again."""
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(4)))
    (tmp_path / "bertfeat-cache.json").write_text("")
    assert open_cache(tmp_path, create=False).lookup(recipe, workers.rows(range(4))[0])[0].all()
    assert (tmp_path / "bertfeat-cache.json").read_text() == ""  # only looked at: nothing written
    assert open_cache(tmp_path).lookup(recipe, workers.rows(range(4))[0])[0].all()
    assert (tmp_path / "bertfeat-cache.json").read_text() == '{"bertfeat_cache_format": 1}\n'


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_gets_its_own_cache_object(tmp_path):
    parent = open_cache(tmp_path)
    pid = os.fork()
    if pid == 0:  # the child: its thread locks must not be the parent's (a lock held at fork stays held forever)
        os._exit(0 if open_cache(tmp_path) is not parent else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert open_cache(tmp_path) is parent


# -- Cache.store: its refusals, an empty batch, a failed write ------------------------------------------------------


def test_store_refuses_token_counts_that_are_not_one_integer_per_key(tmp_path):
    recipe = recipe16()
    keys, vectors, n_tokens = workers.rows(range(3))
    cache = Cache(tmp_path)
    with pytest.raises(ValueError) as err:
        cache.store(recipe, keys, vectors, n_tokens.astype(np.float64))
    assert str(err.value) == "n_tokens must be 3 integers; got float64 (3,)."
    with pytest.raises(ValueError) as err:
        cache.store(recipe, keys, vectors, n_tokens[:2])
    assert str(err.value) == "n_tokens must be 3 integers; got int64 (2,)."
    assert not shards(tmp_path, recipe)


def test_store_and_lookup_of_no_keys(tmp_path):
    recipe = recipe16()
    cache = Cache(tmp_path)
    assert cache.store(recipe, [], np.empty((0, F), np.float32), np.empty(0, np.int64)) == 0
    cache.store(recipe, *workers.rows(range(5)))
    found, got, tokens = cache.lookup(recipe, [])
    assert found.shape == (0,) and got.shape == (0, F) and tokens.shape == (0,)
    assert found.dtype == bool and got.dtype == np.float32 and tokens.dtype == np.int64


def test_a_failed_cache_write_warns_once_and_keeps_the_vectors(tmp_path, monkeypatch):
    recipe = make_recipe()
    texts = [f"t{i}" for i in range(6)]

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", disk_full)
    with pytest.warns(CacheWarning) as record:
        out, stats = encode(texts, recipe, CountingBackend, cache=Cache(tmp_path))  # the warning points here
    ns = tmp_path / recipe.fingerprint()
    assert message_of(record) == (
        f"bertfeat cache: could not write new rows to {ns} ([Errno 28] No space left on device); they are not "
        "cached. Check the free space and permissions of the cache directory."
    )
    assert stats.cache_new == 0
    np.testing.assert_array_equal(out, encode(texts, recipe, CountingBackend)[0])
    assert not list(ns.glob(".tmp-*")), "the failed write's temporary file was left behind"


def test_a_failed_cache_write_keeps_the_vectors_where_warnings_are_errors(tmp_path, monkeypatch, caplog):
    # docs/cache.md: "a CacheWarning says so and the transform still returns its vectors". Where warnings are errors
    # (python -W error, PYTHONWARNINGS=error as CI runs) the warning was raised from store: the vectors computed were
    # lost (a file job stopped at its first chunk). Now the notice goes to the bertfeat logger there.
    import logging

    recipe = make_recipe()
    texts = [f"t{i}" for i in range(6)]
    monkeypatch.setattr(pq, "write_table", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="bertfeat"):
        warnings.simplefilter("error")
        out, stats = encode(texts, recipe, CountingBackend, cache=Cache(tmp_path))
    assert [r.getMessage() for r in caplog.records] == [
        f"bertfeat cache: could not write new rows to {tmp_path / recipe.fingerprint()} ([Errno 28] full); they are "
        "not cached. Check the free space and permissions of the cache directory."]
    assert stats.cache_new == 0
    np.testing.assert_array_equal(out, encode(texts, recipe, CountingBackend)[0])


def test_cache_warnings_point_at_the_callers_line(tmp_path, monkeypatch, tiny_bert):
    """Each CacheWarning names the user's line, through a Pipeline (under mutmut a trampoline frame sits in between:
    deselected there, checked with scripts/plant_mutants.py)."""
    from sklearn.pipeline import make_pipeline

    from bertfeat import BertEmbedder

    pipe = make_pipeline(BertEmbedder(tiny_bert, cache_dir=str(tmp_path)))
    real_write = pq.write_table
    monkeypatch.setattr(pq, "write_table", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    with pytest.warns(CacheWarning, match="could not write") as record:
        pipe.fit_transform(["a"]); line = sys._getframe().f_lineno  # noqa: E702
    assert (record[0].filename, record[0].lineno) == (__file__, line)

    monkeypatch.setattr(pq, "write_table", real_write)
    pipe.fit_transform(["b"])
    [shard] = list(tmp_path.glob("*/shard-*.parquet"))
    shard.write_bytes(b"PAR1 not parquet PAR1")
    cache_module._OPEN.clear()  # a fresh process: nothing indexed yet
    with pytest.warns(CacheWarning, match="ignoring unreadable shard") as record:
        pipe.fit_transform(["b"]); line = sys._getframe().f_lineno  # noqa: E702
    assert (record[0].filename, record[0].lineno) == (__file__, line)


# -- reading shards: what is refused, and how it is reported --------------------------------------------------------


def plain_table(n=3, *, key=None, n_tokens=None, vector=None, metadata=None):
    keys, vectors, tokens = workers.rows(range(n))
    arrays = {
        "key": key if key is not None else pa.array(keys, pa.binary(16)),
        "n_tokens": n_tokens if n_tokens is not None else pa.array(tokens, pa.int64()),
        "vector": vector if vector is not None else pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), F),
    }
    table = pa.table(arrays)
    return table.replace_schema_metadata(metadata) if metadata is not None else table


@pytest.mark.parametrize("change, why", [
    ("no metadata", "it belongs to recipe '(none)', not to '{fp}'"),
    ("other metadata", "it belongs to recipe '(none)', not to '{fp}'"),
    ("other recipe", "it belongs to recipe '0123456789abcdef0123456789abcdef', not to '{fp}'"),
    ("columns", "unexpected columns ['key', 'n_tokens', 'vector', 'extra']"),
    ("key type", "unexpected column types: key fixed_size_binary[8], n_tokens int64, vector "
                 "fixed_size_list<element: float>[16]"),
    ("n_tokens type", "unexpected column types: key fixed_size_binary[16], n_tokens int32, vector "
                      "fixed_size_list<element: float>[16]"),
    ("vector list", "unexpected column types: key fixed_size_binary[16], n_tokens int64, vector list<element: float>"),
    ("vector floats", "unexpected column types: key fixed_size_binary[16], n_tokens int64, vector "
                      "fixed_size_list<element: double>[16]"),
    ("width", "vectors of 8 floats where the recipe has 16"),
    ("null key", "null keys"),
])
def test_a_shard_of_the_wrong_shape_is_reported_word_for_word_and_ignored(tmp_path, change, why):
    recipe = recipe16()
    fp = recipe.fingerprint()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(10, 20)))
    meta = {"bertfeat.fingerprint": fp}
    keys, vectors, tokens = workers.rows(range(3))
    if change == "no metadata":
        table = plain_table()
    elif change == "other metadata":
        table = plain_table(metadata={"pandas": "{}"})
    elif change == "other recipe":
        table = plain_table(metadata={"bertfeat.fingerprint": "0123456789abcdef0123456789abcdef"})
    elif change == "columns":
        table = plain_table(metadata=meta).append_column("extra", pa.array([1, 2, 3]))
    elif change == "key type":
        table = plain_table(key=pa.array([k[:8] for k in keys], pa.binary(8)), metadata=meta)
    elif change == "n_tokens type":
        table = plain_table(n_tokens=pa.array(tokens, pa.int32()), metadata=meta)
    elif change == "vector list":
        table = plain_table(vector=pa.array(list(vectors), pa.list_(pa.float32())), metadata=meta)
    elif change == "vector floats":
        table = plain_table(vector=pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel().astype(np.float64)), F),
                            metadata=meta)
    elif change == "width":
        table = plain_table(vector=pa.FixedSizeListArray.from_arrays(pa.array(vectors[:, :8].ravel()), 8),
                            metadata=meta)
    else:
        table = plain_table(key=pa.array([keys[0], None, keys[2]], pa.binary(16)), metadata=meta)
    path = tmp_path / fp / shard_name(1)
    pq.write_table(table, path)

    reader = Cache(tmp_path)
    with pytest.warns(CacheWarning) as record:
        found, got, got_tokens = reader.lookup(recipe, workers.rows(range(20))[0])
    assert message_of(record) == (
        f"bertfeat cache: ignoring unreadable shard {path} (ValueError: {why.format(fp=fp)}); its texts will be "
        f"recomputed. `bertfeat cache compact {tmp_path}` removes it."
    )
    assert found.tolist() == [False] * 10 + [True] * 10
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # reported once per process, not at every look
        reader.lookup(recipe, workers.rows(range(20))[0])
        assert reader.info()[0].corrupt == [path.name]
        result = reader.compact()[0]
    assert result.corrupt_removed == [path.name] and not path.exists()


@pytest.mark.parametrize("operation", ["compact", "info then compact"])
def test_a_compaction_in_a_new_process_takes_the_width_from_the_recipe_not_from_a_damaged_shard(tmp_path,
                                                                                               operation):
    # `bertfeat cache compact` starts with no recipe in hand: the oldest shard, 8 floats wide under a 16-float
    # recipe, set the width, so the sound shard was deleted as corrupt and the damaged one kept, rewritten.
    recipe = recipe16()
    fp = recipe.fingerprint()
    Cache(tmp_path).store(recipe, *workers.rows(range(10, 20)))
    keys, vectors, tokens = workers.rows(range(3))
    narrow = cache_module._shard_table(cache_module._key_array(keys), np.ascontiguousarray(vectors[:, :8]),
                                       np.asarray(tokens, np.int64), fp)
    damaged = tmp_path / fp / shard_name(1)
    pq.write_table(narrow, damaged)
    maintainer = Cache(tmp_path)
    with pytest.warns(CacheWarning) as record:
        if operation == "info then compact":
            assert maintainer.info()[0].corrupt == [damaged.name]
        result = maintainer.compact()[0]
    assert "(ValueError: vectors of 8 floats where the recipe has 16)" in message_of(record)
    assert (result.corrupt_removed, result.rows) == ([damaged.name], 10)
    found, got, _ = Cache(tmp_path).lookup(recipe, workers.rows(range(10, 20))[0])
    assert found.all()
    np.testing.assert_array_equal(got, workers.rows(range(10, 20))[1])


@pytest.mark.parametrize("recipe_file", ["missing", "another namespace's"])
def test_a_recipe_file_that_does_not_name_its_namespace_sets_no_width(tmp_path, recipe_file):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(5)))
    path = tmp_path / recipe.fingerprint() / "recipe.json"
    if recipe_file == "missing":
        path.unlink()
    else:
        path.write_text(json.dumps(dict(make_recipe(hidden_size=8).to_dict(), n_features=8)))
    result = Cache(tmp_path).compact()[0]
    assert (result.corrupt_removed, result.rows) == ([], 5)
    assert Cache(tmp_path).lookup(recipe, workers.rows(range(5))[0])[0].all()


def test_a_key_count_that_disagrees_with_the_footer_is_reported(tmp_path, monkeypatch):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(4)))
    real = namespace_module._keys_from_column
    monkeypatch.setattr(namespace_module, "_keys_from_column", lambda column: real(column)[:3])
    with pytest.warns(CacheWarning) as record:
        found, _, _ = Cache(tmp_path).lookup(recipe, workers.rows(range(4))[0])
    assert "(ValueError: 3 keys for 4 rows)" in message_of(record)
    assert not found.any()


def flip_a_bit_in(path: Path, column: int, row_group: int = 0, back: int = 3) -> None:
    meta = pq.read_metadata(path).row_group(row_group).column(column)
    data = bytearray(path.read_bytes())
    data[meta.data_page_offset + meta.total_compressed_size - back] ^= 0x40
    path.write_bytes(bytes(data))


def test_a_flipped_bit_in_the_key_column_is_caught_when_the_shard_is_indexed(tmp_path):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(20)))
    [shard] = shards(tmp_path, recipe)
    flip_a_bit_in(shard, column=0)
    with pytest.warns(CacheWarning, match=r"ignoring unreadable shard .*CRC"):
        found, _, _ = Cache(tmp_path).lookup(recipe, workers.rows(range(20))[0])
    assert not found.any()


def _compact_with_a_vector_page_of_the_first_shard_damaged(tmp_path, recipe):
    """Compact a cache of two shards whose first has its second row group's vector page damaged (its keys sound, so
    both are indexed first): the damaged shard is named and removed; the compaction's result."""
    first, second = shards(tmp_path, recipe)
    flip_a_bit_in(first, column=2, row_group=1)
    cache = Cache(tmp_path, row_group_rows=8)
    cache.lookup(recipe, workers.rows([39])[0])  # indexes both (their key columns are sound)
    with pytest.warns(CacheWarning) as record:
        result = cache.compact()[0]
    assert f"ignoring unreadable shard {first} (OSError:" in message_of(record)
    assert result.corrupt_removed == [first.name]
    return result


def test_compaction_verifies_what_it_copies_and_drops_a_shard_with_a_corrupt_page(tmp_path):
    """A shard whose keys read fine but whose vector page is damaged must not be copied into the merged shard,
    where it would get fresh checksums and be served as sound forever."""
    recipe = recipe16()
    cache = Cache(tmp_path, row_group_rows=8)
    cache.store(recipe, *workers.rows(range(0, 20)))
    cache.store(recipe, *workers.rows(range(20, 40)))
    result = _compact_with_a_vector_page_of_the_first_shard_damaged(tmp_path, recipe)
    # the sound row group before the damaged one was copied (its checksums verified); the rest is recomputed
    assert (result.shards_before, result.shards_after, result.rows) == (2, 1, 28)
    keys = workers.rows(range(40))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.tolist() == [True] * 8 + [False] * 12 + [True] * 20
    workers.check_found(keys, found, got, tokens)


def test_a_key_whose_first_copy_is_in_a_shard_found_corrupt_during_compaction_keeps_its_good_later_copy(tmp_path):
    """The first copy of keys 8-19 sits in a row group found damaged only while compacting: their sound copies in
    the newer shard are kept, not deleted with the shard they were duplicates in (cache rows must not be lost)."""
    recipe = recipe16()
    Cache(tmp_path, row_group_rows=8).store(recipe, *workers.rows(range(0, 20)))
    Cache(tmp_path / "other", row_group_rows=8).store(recipe, *workers.rows(range(0, 40)))
    [later] = shards(tmp_path / "other", recipe)  # a second copy of 0-19 (as a racing writer leaves), and 20-39
    later.rename(tmp_path / recipe.fingerprint() / later.name)
    result = _compact_with_a_vector_page_of_the_first_shard_damaged(tmp_path, recipe)
    # 0-7 from the first shard's sound row group, 8-39 from the second; the second's copies of 0-7 dropped
    assert (result.shards_before, result.shards_after, result.rows, result.duplicates_dropped) == (2, 1, 40, 8)
    keys = workers.rows(range(40))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)


# -- the index: which copy answers, what a reader sees after others change the cache -------------------------------


def write_copy(root, recipe, ids, name: str, variant: int) -> None:
    """A shard holding ``ids``: their true rows (``variant`` 0), or vectors with other bits, as a racing writer with
    another result (a nondeterministic GPU kernel) would leave."""
    keys, vectors, tokens = workers.rows(ids)
    vectors = (vectors.view(np.uint32) ^ np.uint32(variant)).view(np.float32)
    table = cache_module._shard_table(cache_module._key_array(keys), vectors, tokens, recipe.fingerprint())
    os.makedirs(Path(root) / recipe.fingerprint(), exist_ok=True)
    pq.write_table(table, Path(root) / recipe.fingerprint() / name)


def test_when_copies_of_a_key_disagree_the_oldest_shard_answers_and_compaction_keeps_it(tmp_path):
    recipe = recipe16()
    ids = range(300)  # enough keys that an unstable sort would mix the copies' order
    write_copy(tmp_path, recipe, ids, shard_name(1), 0)
    write_copy(tmp_path, recipe, ids, shard_name(2), 1)
    keys = workers.rows(ids)[0]
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)  # both shards indexed in one refresh
    workers.check_found(keys, found, got, tokens)

    reader = Cache(tmp_path)
    reader.lookup(recipe, keys[:1])
    write_copy(tmp_path, recipe, ids, shard_name(3), 2)  # a newer copy, indexed by a later refresh
    found, got, tokens = reader.lookup(recipe, keys)
    workers.check_found(keys, found, got, tokens)

    result = Cache(tmp_path).compact()[0]
    assert (result.rows, result.duplicates_dropped) == (300, 600)
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    workers.check_found(keys, found, got, tokens)


def test_a_shard_named_older_that_lands_later_still_answers_first_in_every_process(tmp_path):
    # A writer names its shard when it commits; another host's clock behind ours (a shared network cache), or a
    # writer paused between naming and renaming, lands a shard named older after a newer one was indexed. The
    # process that indexed the newer one first answered with its copy, a new process with the older one.
    recipe = recipe16()
    ids = range(300)
    keys = workers.rows(ids)[0]
    write_copy(tmp_path, recipe, ids, shard_name(5), 1)
    reader = Cache(tmp_path)
    reader.lookup(recipe, keys[:1])  # indexes the shard named 5
    write_copy(tmp_path, recipe, ids, shard_name(2), 0)  # named older, lands later
    found, got, tokens = reader.lookup(recipe, keys)
    workers.check_found(keys, found, got, tokens)
    fresh = Cache(tmp_path).lookup(recipe, keys)[1]
    np.testing.assert_array_equal(got.view(np.uint32), fresh.view(np.uint32))
    result = reader.compact()[0]  # and compaction, in that process, keeps the copy of the older name
    assert (result.rows, result.duplicates_dropped) == (300, 300)
    workers.check_found(keys, *Cache(tmp_path).lookup(recipe, keys))


@pytest.mark.parametrize("fails", ["insert", "lexsort"])
def test_an_index_update_stopped_half_way_is_read_again_not_kept_half_done(tmp_path, monkeypatch, fails):
    # A MemoryError (or Ctrl-C in a notebook) while a shard joined the process's index left the shard marked as
    # indexed without its keys ("insert"), or its copies in another order than their shards' names ("lexsort"):
    # every later lookup of the process missed its rows (the model run again for them, stored again) or answered
    # another copy than a fresh process does, for good.
    recipe = recipe16()
    ids = range(300)
    keys = workers.rows(ids)[0]
    write_copy(tmp_path, recipe, range(100), shard_name(5), int(fails == "lexsort"))  # other bits: answers second
    reader = Cache(tmp_path)
    reader.lookup(recipe, keys[:1])  # indexes the shard named 5
    # a newer shard ("insert"); a shard named older that lands later ("lexsort"), whose copies answer first
    write_copy(tmp_path, recipe, ids, shard_name(7 if fails == "insert" else 2), 0)
    real, calls = getattr(np, fails), []

    def runs_out(*args, **kwargs):
        calls.append(1)
        raise MemoryError

    monkeypatch.setattr(np, fails, runs_out)
    with pytest.raises(MemoryError):
        reader.lookup(recipe, keys)
    monkeypatch.setattr(np, fails, real)
    assert calls
    found, got, tokens = reader.lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)
    fresh = Cache(tmp_path).lookup(recipe, keys)[1]
    np.testing.assert_array_equal(got.view(np.uint32), fresh.view(np.uint32))


def test_a_store_stopped_half_way_leaves_no_temp_file_and_no_lock(tmp_path, monkeypatch):
    # docs/cache.md: a call stopped half-way in a process that goes on holds no lock after it, leaves no temp file
    recipe = recipe16()
    keys, vectors, tokens = workers.rows(range(50))
    cache = Cache(tmp_path)
    cache.store(recipe, keys[:10], vectors[:10], tokens[:10])
    real = pq.write_table

    def interrupted(table, where, **kwargs):
        real(table.slice(0, 1), where, **kwargs)  # a part of the shard on disk
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cache.store(recipe, keys, vectors, tokens)
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / recipe.fingerprint()).iterdir() if p.name.startswith(".tmp")) == []
    assert cache.store(recipe, keys, vectors, tokens) == 40
    workers.check_found(keys, *cache.lookup(recipe, keys))
    assert cache.clear() == [recipe.fingerprint()]  # takes the exclusive locks: none is still held


def test_a_first_lookup_builds_the_index_with_few_temporaries(tmp_path):
    # The index holds 24 bytes a row, but a new process's first lookup in a 1M-row namespace added about 130 MB to
    # it: the key column read whole beside its copy, then gathered from lists, sorted and inserted into the empty
    # index (numpy alone peaked at 112 bytes a row). Keys are now read a batch at a time into one array, sorted
    # once and taken as the index (about 50 bytes a row at the peak; docs/cache.md gives the measured figures).
    recipe = recipe16()
    n = 200_000
    rng = np.random.default_rng(0)
    keys = np.frombuffer(rng.bytes(16 * n), dtype="S16")
    for i, part in enumerate((slice(0, n // 2), slice(n // 2, n))):
        table = cache_module._shard_table(keys[part], np.zeros((n // 2, F), np.float32), np.ones(n // 2, np.int64),
                                          recipe.fingerprint())
        os.makedirs(tmp_path / recipe.fingerprint(), exist_ok=True)
        pq.write_table(table, tmp_path / recipe.fingerprint() / shard_name(i + 1))
    cache = Cache(tmp_path)
    tracemalloc.start()
    try:
        found = cache.lookup(recipe, [keys[5:6].tobytes(), keys[-1:].tobytes(), b"x" * 16])[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    ns = cache._namespace(recipe.fingerprint())
    assert found.tolist() == [True, True, False] and len(ns.keys) == n
    assert ns.keys.nbytes + ns.shard_of.nbytes + ns.row_of.nbytes == 24 * n
    assert peak < 60 * n, f"{peak / n:.0f} bytes a row at the peak of building the index"


def test_a_shard_named_older_that_lands_later_sorts_only_the_copies_of_its_keys(tmp_path, monkeypatch):
    # On a cache shared by hosts whose clocks differ, shards named older than the newest land all the time. Each one
    # sorted the whole index again (0.5 s a lookup at 1M rows, 50 times an ordinary one); only the copies of the
    # keys it brings can change order. Its copies go between those of older and of newer names.
    recipe = recipe16()
    write_copy(tmp_path, recipe, range(5005), shard_name(1), 0)
    write_copy(tmp_path, recipe, range(5000, 5010), shard_name(5), 2)
    reader = Cache(tmp_path)
    reader.lookup(recipe, workers.rows([0])[0])
    sorted_sizes = []
    for name in ("lexsort", "argsort", "sort"):
        real = getattr(np, name)

        def spy(a, *args, _real=real, **kwargs):
            sorted_sizes.append(max(len(x) for x in a) if isinstance(a, tuple) else len(a))
            return _real(a, *args, **kwargs)

        monkeypatch.setattr(namespace_module.np, name, spy)
    write_copy(tmp_path, recipe, list(range(5000, 5010)) + list(range(6000, 6010)), shard_name(3), 1)
    keys, vectors, _ = workers.rows(range(5000, 5010))
    found, got, _ = reader.lookup(recipe, keys)
    monkeypatch.undo()
    assert sorted_sizes and max(sorted_sizes) <= 40, f"sorted {max(sorted_sizes)} entries for 20 new keys"
    ns = reader._namespace(recipe.fingerprint())
    copies = [[ns.shards[int(s)].name for s in ns.shard_of[np.searchsorted(ns.keys, k):np.searchsorted(
        ns.keys, k, side="right")]] for k in _key_array(keys)]
    assert copies == [[shard_name(1), shard_name(3), shard_name(5)]] * 5 + [[shard_name(3), shard_name(5)]] * 5
    bits = vectors.view(np.uint32)
    assert found.all() and got.view(np.uint32).tolist() == np.concatenate([bits[:5], bits[5:] ^ 1]).tolist()
    np.testing.assert_array_equal(got.view(np.uint32), Cache(tmp_path).lookup(recipe, keys)[1].view(np.uint32))
    assert reader.compact()[0].duplicates_dropped == 15
    np.testing.assert_array_equal(got.view(np.uint32), Cache(tmp_path).lookup(recipe, keys)[1].view(np.uint32))


def test_a_shard_this_user_may_not_read_is_recomputed_but_never_deleted_as_corrupt(tmp_path, monkeypatch):
    # A cache shared by two users, one of whom writes with umask 077: the other cannot open those shards. They were
    # taken for corrupt ones, and that user's `cache compact` deleted them (removing needs only the folder's rights).
    # Simulated, as root may read any file.
    recipe, cache = two_shards(tmp_path, 10)
    theirs = shards(tmp_path, recipe)[1]
    real = pq.ParquetFile

    def open_as_another_user(source, *args, **kwargs):
        if os.fspath(source) == str(theirs):
            raise PermissionError(13, "Permission denied", str(theirs))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", open_as_another_user)
    mine = Cache(tmp_path)
    with pytest.warns(CacheWarning) as record:
        found, _, _ = mine.lookup(recipe, workers.rows(range(20))[0])
    assert found.tolist() == [True] * 10 + [False] * 10
    assert message_of(record) == (
        f"bertfeat cache: cannot read shard {theirs} (PermissionError: [Errno 13] Permission denied: "
        f"'{theirs}'); its texts will be recomputed. It is not corrupt, and compact leaves it alone: give this user "
        "read access to the cache's files."
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # said once per process
        mine.store(recipe, *workers.rows(range(10, 20)))
        assert mine.info()[0].corrupt == []
        result = mine.compact()[0]
    assert result.corrupt_removed == [] and theirs.exists()
    monkeypatch.undo()
    assert Cache(tmp_path).lookup(recipe, workers.rows(range(20))[0])[0].all()


def test_a_copy_written_during_a_compaction_does_not_outrank_the_oldest_copy(tmp_path, monkeypatch):
    # The merged shard was named when it was put in place, so a differing copy of a key written (by a racing job)
    # while the merge ran counted as older than the merged shard's copy: after the compaction every process answered
    # with the racing copy, not the oldest shard's, and the next compaction kept it. The merged shard now takes the
    # time of the oldest shard it replaces (docs/cache.md, "Several jobs at once").
    recipe = recipe16()
    ids = range(300)
    keys = workers.rows(ids)[0]
    write_copy(tmp_path, recipe, ids, shard_name(1), 0)
    write_copy(tmp_path, recipe, ids, shard_name(2), 1)
    reader = Cache(tmp_path)
    workers.check_found(keys, *reader.lookup(recipe, keys))
    real = cache_module._RowGroupWriter.close
    racing = []

    def a_copy_lands_before_the_rename(writer, *args, **kwargs):
        if not racing:
            racing.append(f"shard-{time.time_ns():020d}-0123456789ab.parquet")
            write_copy(tmp_path, recipe, ids, racing[0], 2)
            workers.check_found(keys, *reader.lookup(recipe, keys))  # the reader indexes it, after the old ones
        return real(writer, *args, **kwargs)

    # after the old shards are read into the merged one, before it is put in place
    monkeypatch.setattr(cache_module._RowGroupWriter, "close", a_copy_lands_before_the_rename)
    compacting = Cache(tmp_path)
    result = compacting.compact()[0]
    monkeypatch.undo()
    assert racing and (result.rows, result.duplicates_dropped) == (300, 300)
    workers.check_found(keys, *reader.lookup(recipe, keys))  # the old shards swapped for the merged one
    workers.check_found(keys, *compacting.lookup(recipe, keys))
    workers.check_found(keys, *Cache(tmp_path).lookup(recipe, keys))
    [merged] = [p.name for p in shards(tmp_path, recipe) if p.name != racing[0]]
    assert merged.startswith(shard_name(1)[:27]) and merged != shard_name(1)  # the oldest's time, a name of its own
    assert Cache(tmp_path).compact()[0].duplicates_dropped == 300
    workers.check_found(keys, *Cache(tmp_path).lookup(recipe, keys))


def test_a_shard_that_becomes_unreadable_during_a_compaction_is_kept(tmp_path, monkeypatch):
    recipe, cache = two_shards(tmp_path, 10)
    theirs = shards(tmp_path, recipe)[1]
    real = pq.ParquetFile

    def denied_once_indexed(source, *args, **kwargs):  # the footer read by the index, the rows refused
        if os.fspath(source) == str(theirs) and kwargs.get("metadata") is not None:
            raise PermissionError(13, "Permission denied", str(theirs))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", denied_once_indexed)
    with pytest.warns(CacheWarning, match="cannot read shard .* It is not corrupt") as said:
        result = Cache(tmp_path).compact()[0]
    assert [str(w.message) for w in said] == [
        f"bertfeat cache: cannot read shard {theirs} (PermissionError: [Errno 13] Permission denied: '{theirs}'); its "
        "texts will be recomputed. It is not corrupt, and compact leaves it alone: give this user read access to the "
        "cache's files."]
    assert result.corrupt_removed == [] and theirs.exists()
    monkeypatch.undo()
    assert Cache(tmp_path).lookup(recipe, workers.rows(range(20))[0])[0].all()


def test_a_reader_forgets_shards_another_process_compacted_away(tmp_path):
    recipe = recipe16()
    writer = Cache(tmp_path)
    for start in (0, 10, 20):
        writer.store(recipe, *workers.rows(range(start, start + 10)))
    reader = Cache(tmp_path)
    assert reader.info()[0].shards == 3
    Cache(tmp_path).compact()
    info = reader.info()[0]
    assert (info.shards, info.rows, info.stored_rows) == (1, 30, 30)


def test_info_of_a_namespace_without_readable_shards_reads_the_recipe_file(tmp_path):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(5)))
    [shard] = shards(tmp_path, recipe)
    shard.unlink()
    info = Cache(tmp_path).info()[0]
    assert (info.n_features, info.rows, info.stored_rows, info.shards, info.bytes) == (F, 0, 0, 0, 0)
    assert info.recipe["fingerprint"] == recipe.fingerprint()


def test_info_of_a_namespace_whose_recipe_file_is_gone(tmp_path):
    recipe = recipe16()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(5)))
    (tmp_path / recipe.fingerprint() / "recipe.json").unlink()
    cache.lookup(recipe, workers.rows([0])[0])
    info = cache.info()[0]
    assert (info.recipe, info.n_features, info.rows) == (None, F, 5)


def test_a_lookup_after_info_on_an_empty_namespace(tmp_path):
    recipe = recipe16()
    (tmp_path / recipe.fingerprint()).mkdir()
    cache = Cache(tmp_path)
    assert cache.info() == []  # a folder that holds nothing is no namespace to list
    assert cache._namespace(recipe.fingerprint()).info().n_features is None
    found, got, tokens = cache.lookup(recipe, workers.rows(range(3))[0])
    assert found.tolist() == [False] * 3 and got.shape == (0, F)
    cache.store(recipe, *workers.rows(range(3)))
    assert cache.lookup(recipe, workers.rows(range(3))[0])[0].all()


def test_a_corrupt_shard_someone_deleted_is_no_longer_listed(tmp_path):
    recipe, cache = two_shards(tmp_path, 5)
    first = shards(tmp_path, recipe)[0]
    first.write_bytes(b"")
    reader = Cache(tmp_path)
    with pytest.warns(CacheWarning):
        assert reader.info()[0].corrupt == [first.name]
    first.unlink()
    info = reader.info()[0]
    assert (info.corrupt, info.shards, info.rows) == ([], 1, 5)
    assert info.bytes == shards(tmp_path, recipe)[0].stat().st_size


# -- races made deterministic: a shard vanishing between the index and the read --------------------------------------


def vanish_after_refresh(monkeypatch, action, times=1):
    """Run ``action(namespace)`` right after the next ``times`` index refreshes, as another process would between
    a reader's listing and its read."""
    real = cache_module._Namespace.refresh
    calls = []

    def refresh(ns):
        real(ns)
        calls.append(ns.fingerprint)
        if len(calls) <= times:
            action(ns)

    monkeypatch.setattr(cache_module._Namespace, "refresh", refresh)
    return calls


def test_a_shard_compacted_away_mid_lookup_is_read_from_the_merged_shard(tmp_path, monkeypatch):
    recipe = recipe16()
    writer = Cache(tmp_path)
    for start in range(0, 60, 20):
        writer.store(recipe, *workers.rows(range(start, start + 20)))
    reader = Cache(tmp_path)
    reader.lookup(recipe, workers.rows([0])[0])  # its index: three shards
    other = Cache(tmp_path)
    calls = vanish_after_refresh(monkeypatch, lambda ns: other._namespace(ns.fingerprint).compact())
    keys = workers.rows(range(70))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # a compacted shard is not a corrupt one
        found, got, tokens = reader.lookup(recipe, keys)
    assert found.tolist() == [True] * 60 + [False] * 10
    workers.check_found(keys, found, got, tokens)
    assert len(calls) == 4  # the reader's, the compaction's two, and the reader's second pass


def test_a_lookup_that_keeps_losing_its_shards_gives_up_after_four_passes(tmp_path, monkeypatch):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(10)))

    def rename_every_shard(ns):
        for name in os.listdir(ns.dir):
            if name.startswith("shard-"):
                os.rename(os.path.join(ns.dir, name), os.path.join(ns.dir, f"shard-{time.time_ns():020d}-"
                                                                           "0123456789ab.parquet"))

    calls = vanish_after_refresh(monkeypatch, rename_every_shard, times=100)
    found, got, _ = Cache(tmp_path).lookup(recipe, workers.rows(range(10))[0])
    assert len(calls) == 4 and not found.any() and got.shape == (0, F)  # recomputed, never an endless loop
    monkeypatch.undo()
    assert Cache(tmp_path).lookup(recipe, workers.rows(range(10))[0])[0].all()


def test_a_shard_vanishing_during_compaction_stops_it_with_a_clear_error(tmp_path, monkeypatch):
    recipe, cache = two_shards(tmp_path, 5)
    from bertfeat import compaction

    real = compaction._copy_rows

    def deleted_by_hand(shard, keep, writer):
        os.unlink(shard.path)
        return real(shard, keep, writer)

    monkeypatch.setattr(compaction, "_copy_rows", deleted_by_hand)
    first = shards(tmp_path, recipe)[0]
    with pytest.raises(CacheError) as err:
        cache.compact()
    assert str(err.value) == f"{first} vanished during compaction; run compact again."
    assert not list((tmp_path / recipe.fingerprint()).glob(".tmp-*"))


def test_info_while_a_shard_vanishes_counts_the_bytes_that_remain(tmp_path, monkeypatch):
    recipe, cache = two_shards(tmp_path, 5)
    first, second = shards(tmp_path, recipe)
    vanish_after_refresh(monkeypatch, lambda ns: first.unlink())
    info = Cache(tmp_path).info()[0]
    assert info.bytes == second.stat().st_size


def test_a_namespace_cleared_while_a_shard_is_written_is_recreated(tmp_path, monkeypatch):
    recipe = recipe16()
    real = cache_module._TempShard.__enter__
    cleared = []

    def cleared_meanwhile(tmp):
        if not cleared:
            cleared.append(tmp.dir)
            shutil.rmtree(tmp.dir)  # another process's `bertfeat cache clear`
        return real(tmp)

    monkeypatch.setattr(cache_module._TempShard, "__enter__", cleared_meanwhile)
    cache = Cache(tmp_path)
    assert cache.store(recipe, *workers.rows(range(8))) == 8
    assert cleared
    keys = workers.rows(range(8))[0]
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, got, tokens)
    assert json.loads((tmp_path / recipe.fingerprint() / "recipe.json").read_text())["n_features"] == F


def test_a_directory_fsync_the_filesystem_refuses_does_not_fail_the_write(tmp_path, monkeypatch):
    real = os.fsync

    def no_directory_fsync(fd):  # some network filesystems answer EINVAL for a directory
        if os.path.isdir(f"/proc/self/fd/{fd}") or not os.path.exists(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd)

    monkeypatch.setattr(os, "fsync", no_directory_fsync)
    recipe = recipe16()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert Cache(tmp_path).store(recipe, *workers.rows(range(4))) == 4
    assert Cache(tmp_path).lookup(recipe, workers.rows(range(4))[0])[0].all()


# -- compaction's result and the layout it writes --------------------------------------------------------------------


def test_compacting_a_single_clean_shard_leaves_it_untouched(tmp_path):
    recipe = recipe16()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(30)))
    [shard] = shards(tmp_path, recipe)
    before = shard.stat()
    result = cache.compact()[0]
    assert result.to_dict() == dict(fingerprint=recipe.fingerprint(), shards_before=1, shards_after=1, rows=30,
                                    duplicates_dropped=0, corrupt_removed=[], temp_removed=0,
                                    bytes_before=before.st_size, bytes_after=before.st_size)
    assert shards(tmp_path, recipe) == [shard] and shard.stat().st_ino == before.st_ino


def test_compacting_an_empty_namespace(tmp_path):
    recipe = recipe16()
    (tmp_path / recipe.fingerprint()).mkdir()
    assert Cache(tmp_path).compact()[0].to_dict() == dict(
        fingerprint=recipe.fingerprint(), shards_before=0, shards_after=0, rows=0, duplicates_dropped=0,
        corrupt_removed=[], temp_removed=0, bytes_before=0, bytes_after=0)


def test_compact_of_one_namespace_leaves_the_others_alone(tmp_path):
    a, b = recipe16(), make_recipe(hidden_size=F, normalize=True)
    cache = Cache(tmp_path)
    for recipe in (a, b):
        cache.store(recipe, *workers.rows(range(5)))
        cache.store(recipe, *workers.rows(range(5, 10)))
    [result] = cache.compact(b.fingerprint())
    assert result.fingerprint == b.fingerprint()
    assert (len(shards(tmp_path, a)), len(shards(tmp_path, b))) == (2, 1)


def test_the_merged_shard_is_written_like_a_new_one(tmp_path):
    """Row groups of exactly ``row_group_rows`` (the last one excepted, none empty), the same compression and no
    statistics, and page checksums: a flipped bit in the merged shard is caught like one in a new shard."""
    recipe = recipe16()
    cache = Cache(tmp_path, row_group_rows=16)
    for start, n in ((0, 5), (5, 40), (45, 3), (48, 16), (64, 7)):
        cache.store(recipe, *workers.rows(range(start, start + n)))
    fresh = pq.read_metadata(shards(tmp_path, recipe)[1])
    assert cache.compact()[0].rows == 71
    [merged] = shards(tmp_path, recipe)
    meta = pq.read_metadata(merged)
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [16, 16, 16, 16, 7]
    for c in range(3):
        assert meta.row_group(0).column(c).compression == fresh.row_group(0).column(c).compression
        assert not meta.row_group(0).column(c).is_stats_set
    assert [meta.row_group(0).column(c).compression for c in range(3)] == ["UNCOMPRESSED", "ZSTD", "UNCOMPRESSED"]
    keys = workers.rows(range(71))[0]
    found, got, tokens = Cache(tmp_path).lookup(recipe, keys)
    workers.check_found(keys, found, got, tokens)
    assert found.all()

    flip_a_bit_in(merged, column=2, row_group=2)
    with pytest.warns(CacheWarning, match="CRC|checksum"):
        found, _, _ = Cache(tmp_path).lookup(recipe, keys)
    assert not found[32:48].any()


def test_the_row_group_writer_holds_less_than_one_row_group(tmp_path):
    """Compaction's memory bound: rows wait in memory only until a whole row group can be written."""
    writer = cache_module._RowGroupWriter(str(tmp_path / "out.parquet"), "f" * 32, F, 16)
    keys, vectors, tokens = workers.rows(range(100))
    table = cache_module._shard_table(cache_module._key_array(keys), vectors, tokens, "f" * 32)
    held = []
    for start, n in ((0, 5), (5, 11), (16, 40), (56, 3)):
        writer.write(table.slice(start, n))
        held.append((writer.n_pending, sum(t.num_rows for t in writer.pending)))
    writer.close()
    assert held == [(5, 5), (0, 0), (8, 8), (11, 11)]
    assert writer.n_rows == 59
    meta = pq.read_metadata(tmp_path / "out.parquet")
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [16, 16, 16, 11]
    assert pq.read_table(tmp_path / "out.parquet").column("key").to_pylist() == keys[:59]


@pytest.mark.parametrize("n_features, rows", [(384, 170), (768, 85), (1, 65536), (0, 65536), (4097, 16),
                                              (100_000, 16)])
def test_row_groups_hold_about_256_kib_of_vectors(n_features, rows):
    assert cache_module._row_group_rows(n_features, None) == rows
    assert cache_module._row_group_rows(n_features, 7) == 7


def test_the_shard_format(tmp_path):
    """The on-disk schema other tools may read (docs/cache.md): no column may hold a null."""
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(3)))
    schema = pq.read_schema(shards(tmp_path, recipe)[0])
    assert schema.equals(pa.schema(
        [pa.field("key", pa.binary(16), nullable=False), pa.field("n_tokens", pa.int64(), nullable=False),
         pa.field("vector", pa.list_(pa.float32(), F), nullable=False)],
    ))
    assert schema.metadata == {b"bertfeat.fingerprint": recipe.fingerprint().encode(),
                               b"bertfeat.cache_format": b"1"}
    recipe_text = (tmp_path / recipe.fingerprint() / "recipe.json").read_text()
    expected = dict(recipe.to_dict(), n_features=F)
    assert recipe_text == json.dumps(expected, indent=2, sort_keys=True) + "\n"  # for people: indented, sorted


def test_keys_and_vectors_are_read_from_sliced_arrays():
    keys, vectors, _ = workers.rows(range(10))
    key_array = pa.array(keys, pa.binary(16))
    assert cache_module._keys_from_column(key_array.slice(3, 5)).tolist() == keys[3:8]
    assert cache_module._keys_from_column(pa.chunked_array([key_array[:4], key_array[4:]])).tolist() == keys
    vector_array = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), F)
    np.testing.assert_array_equal(cache_module._vectors_from_column(vector_array.slice(2, 3), F), vectors[2:5])


# -- temporary files: whose are removed, and when -------------------------------------------------------------------


def temp_file(ns: Path, host: str, pid: int, age_s: float, now: float) -> Path:
    path = ns / f".tmp-{host}-{pid}-{os.urandom(6).hex()}.parquet"
    path.write_bytes(b"partial")
    os.utime(path, (now - age_s, now - age_s))
    return path


def test_compact_removes_only_the_temp_files_of_dead_or_long_gone_writers(tmp_path, monkeypatch):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(3)))
    ns = tmp_path / recipe.fingerprint()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        now = time.time()
        monkeypatch.setattr(time, "time", lambda: now)
        host = cache_module._HOST
        kept = [
            temp_file(ns, host, live.pid, 60, now),  # a writer at work here
            temp_file(ns, "other-host", dead_pid, 60, now),  # another machine's writer: its pid means nothing here
            temp_file(ns, "other-host", live.pid, 3600, now),  # exactly an hour: not yet older than the limit
        ]
        removed = [
            temp_file(ns, host, dead_pid, 60, now),  # this host's dead writer
            temp_file(ns, host, dead_pid, 5, now),
            temp_file(ns, "other-host", live.pid, 3601, now),  # older than an hour, whoever wrote it
            ns / ".tmp-not-our-pattern.parquet",
        ]
        removed[-1].write_bytes(b"x")
        os.utime(removed[-1], (now - 7200, now - 7200))
        result = Cache(tmp_path).compact()[0]
        assert result.temp_removed == 4
        assert all(p.exists() for p in kept) and not any(p.exists() for p in removed)
        assert live.poll() is None, "checking whether the writer is alive signalled it"
    finally:
        live.kill()
        live.wait()


def test_a_live_writers_temp_file_is_kept_by_a_compaction_that_cannot_see_its_process(tmp_path, monkeypatch):
    """Containers run with `--network host` share the hostname and not their process ids: a compaction in one
    judged a live writer's temp file in another dead (its pid is no process there) and deleted it under the writer,
    whose store wrote it again once and, deleted again, cached nothing ("could not write new rows ... No such file
    or directory ... Check the free space and permissions"). Now a writer holds a lock on its temp file while it
    writes, and a temp file whose lock is held is kept, whatever its name says."""
    from bertfeat import compaction as compaction_module

    recipe = recipe16()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(3)))
    monkeypatch.setattr(compaction_module, "_pid_alive", lambda pid: False)  # the other container's view
    real, results = namespace_module.file_to_disk, []

    def compacted_meanwhile(path):
        results.append(Cache(tmp_path).compact()[0])
        return real(path)

    monkeypatch.setattr(namespace_module, "file_to_disk", compacted_meanwhile)
    open_before = set(locks._OPEN_HERE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert cache.store(recipe, *workers.rows(range(3, 6))) == 3
    assert [r.temp_removed for r in results] == [0]
    assert locks._OPEN_HERE == open_before  # the temp file's lock let go with it
    keys = workers.rows(range(6))[0]
    found, vectors, n_tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, vectors, n_tokens)
    monkeypatch.setattr(namespace_module, "file_to_disk", real)
    dead = temp_file(tmp_path / recipe.fingerprint(), cache_module._HOST, 1, 5, time.time())  # its writer gone
    assert Cache(tmp_path).compact()[0].temp_removed == 1 and not dead.exists()


@pytest.mark.skipif(locks.fcntl is None, reason="temp files are locked where flock is (POSIX)")
def test_a_writer_whose_lock_a_compaction_probes_at_that_moment_still_holds_it(tmp_path, monkeypatch):
    """A compaction asks whether a temp file is being written by taking its lock for a moment (being_written). A
    writer that tried its lock in that moment, just after creating its file, was refused it and wrote on unlocked
    (the refusal went unread), so a later compaction in a container that cannot see its process (the test above)
    deleted the file under it: its rows not cached. Now the writer waits out the probe and holds its lock."""
    from bertfeat import compaction as compaction_module

    recipe = recipe16()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(3)))
    monkeypatch.setattr(compaction_module, "_pid_alive", lambda pid: False)  # the other container's view
    real_open, probes = locks.open_lock_file, []

    def probed_as_created(path):
        fd = real_open(path)  # the writer's file, created and not yet locked
        if not os.path.basename(path).startswith(".tmp-"):
            return fd  # a lock file
        probe = os.open(path, os.O_RDWR)  # a compaction's being_written, holding the lock as the writer locks
        assert locks.lock(probe, exclusive=True, wait=False)
        probes.append(compaction_module.being_written(path))  # empty: taken as being written
        let_go = threading.Timer(0.2, os.close, (probe,))  # the probe lets go a moment later
        let_go.start()
        probes.append(let_go)
        return fd

    monkeypatch.setattr(shard_module.locks, "open_lock_file", probed_as_created)
    real_flush, results = namespace_module.file_to_disk, []

    def compacted_meanwhile(path):
        probes[-1].join()  # the probe is over: a compaction now finds the file written and its pid gone
        results.append(Cache(tmp_path).compact()[0])
        return real_flush(path)

    monkeypatch.setattr(namespace_module, "file_to_disk", compacted_meanwhile)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert cache.store(recipe, *workers.rows(range(3, 6))) == 3
    assert probes[0] is True and [r.temp_removed for r in results] == [0]
    keys = workers.rows(range(6))[0]
    found, vectors, n_tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, vectors, n_tokens)


def test_a_temp_file_that_vanishes_meanwhile_does_not_stop_the_cleanup(tmp_path, monkeypatch):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(3)))
    ns = tmp_path / recipe.fingerprint()
    now = time.time()
    stale = [temp_file(ns, "other-host", 1, 7200, now) for _ in range(3)]
    real = cache_module._Namespace._temp_files
    monkeypatch.setattr(cache_module._Namespace, "_temp_files",
                        lambda self: [".tmp-committed-meanwhile-1-0123456789ab.parquet"] + real(self))
    assert Cache(tmp_path).compact()[0].temp_removed == 3
    assert not any(p.exists() for p in stale)


def test_a_temp_file_removed_by_another_cleanup_first_is_not_counted(tmp_path, monkeypatch):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(3)))
    ns = tmp_path / recipe.fingerprint()
    now = time.time()
    [a, b] = [temp_file(ns, "other-host", 1, 7200, now) for _ in range(2)]
    real = os.path.getmtime

    def other_cleanup_wins(path):
        mtime = real(path)
        if Path(path) == a:
            a.unlink()
        return mtime

    monkeypatch.setattr(os.path, "getmtime", other_cleanup_wins)
    assert Cache(tmp_path).compact()[0].temp_removed == 1
    assert not b.exists()


@pytest.mark.parametrize("answer, alive", [(None, True), (ProcessLookupError, False), (PermissionError, True)])
def test_a_writer_is_alive_unless_the_system_says_there_is_no_such_process(monkeypatch, answer, alive):
    sent = []

    def kill(pid, sig):
        sent.append((pid, sig))
        if answer is not None:
            raise answer()

    monkeypatch.setattr(os, "kill", kill)
    assert cache_module._pid_alive(4242) is alive
    assert sent == [(4242, 0)]  # signal 0: a check, nothing delivered


class _FakeWinapi:
    """Windows' ``_winapi`` as :func:`bertfeat.shards._pid_alive` asks it: processes by pid, ``None`` for one that
    is not there, ``"denied"`` for one of another user, else whether it has exited; every handle opened and closed."""

    def __init__(self, processes):
        self.processes, self.opened, self.closed = processes, [], []

    def OpenProcess(self, access, inherit, pid):
        state = self.processes.get(pid)
        if state is None or state == "denied":
            err = OSError(22 if state is None else 13, "The parameter is incorrect" if state is None else "denied")
            err.winerror = 87 if state is None else 5
            raise err
        self.opened.append((access, inherit, pid))
        return f"handle-{pid}"

    def WaitForSingleObject(self, handle, milliseconds):
        assert milliseconds == 0, "a check must not wait for the process"
        return 0 if self.processes[int(handle.split("-")[1])] == "exited" else 0x102  # WAIT_OBJECT_0, WAIT_TIMEOUT

    def CloseHandle(self, handle):
        self.closed.append(handle)


def test_on_windows_a_writer_is_asked_for_without_a_signal_or_a_console_ctrl_c(monkeypatch):
    # Windows has no signal 0: os.kill(pid, 0) sends CTRL_C_EVENT (0) to the console process group `pid` (a Ctrl-C
    # for every job of this console, the compacting one too), and any other signal terminates the process
    def kill(pid, sig):
        raise AssertionError(f"os.kill({pid}, {sig}) on Windows: a Ctrl-C or a kill, not a question")

    winapi = _FakeWinapi({100: "running", 200: "exited", 400: "denied"})
    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "_winapi", winapi)
    answers = {pid: cache_module._pid_alive(pid) for pid in (100, 200, 300, 400)}
    assert answers == {100: True, 200: False, 300: False, 400: True}  # another user's process may be a writer
    assert [pid for _, _, pid in winapi.opened] == [100, 200]
    assert all(access == 0x00100000 and inherit is False for access, inherit, _ in winapi.opened)  # SYNCHRONIZE only
    assert winapi.closed == ["handle-100", "handle-200"]  # no handle left open


def test_on_windows_compact_removes_the_dead_writers_temp_files_and_keeps_the_live_ones(tmp_path, monkeypatch):
    recipe = recipe16()
    Cache(tmp_path).store(recipe, *workers.rows(range(3)))
    ns = tmp_path / recipe.fingerprint()
    now = time.time()
    host = cache_module._HOST
    live, dead = temp_file(ns, host, 100, 60, now), temp_file(ns, host, 300, 60, now)

    def kill(pid, sig):
        raise AssertionError(f"os.kill({pid}, {sig}) on Windows")

    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setitem(sys.modules, "_winapi", _FakeWinapi({100: "running"}))
    assert Cache(tmp_path).compact()[0].temp_removed == 1
    assert live.exists() and not dead.exists()


def test_the_cache_writes_and_compacts_where_fsync_needs_a_handle_that_may_write(tmp_path, windows_fsync):
    """Every shard was flushed through a read-only handle, which Windows refuses ([Errno 9] Bad file descriptor): a
    cache_dir on Windows failed at its first store, and `bertfeat cache compact` there could not write the merged
    shard."""
    recipe = recipe16()
    cache = Cache(tmp_path)
    assert cache.store(recipe, *workers.rows(range(3))) == 3
    assert cache.store(recipe, *workers.rows(range(3, 5))) == 2
    flushed = len(windows_fsync)
    assert flushed >= 2  # each shard flushed before its rename
    result = Cache(tmp_path).compact()[0]
    assert result.shards_after == 1 and result.rows == 5 and len(windows_fsync) > flushed
    keys = workers.rows(range(5))[0]
    found, vectors, n_tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, vectors, n_tokens)


def test_the_cache_writes_and_compacts_where_the_file_system_cannot_flush_a_file(tmp_path, cannot_flush):
    """An SMB/CIFS mount, a VirtualBox shared folder or a FUSE file system without a flush answers fsync on a file
    with EINVAL (the bytes written went through): a cache_dir there stored nothing, a CacheWarning at each call
    advising free space and permissions, and `bertfeat cache compact` could not write the merged shard."""
    recipe = recipe16()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no CacheWarning
        cache = Cache(tmp_path)
        assert cache.store(recipe, *workers.rows(range(3))) == 3
        assert cache.store(recipe, *workers.rows(range(3, 5))) == 2
        result = Cache(tmp_path).compact()[0]
    assert result.shards_after == 1 and result.rows == 5 and len(cannot_flush) >= 3
    keys = workers.rows(range(5))[0]
    found, vectors, n_tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, vectors, n_tokens)
    assert [p.name for p in (tmp_path / recipe.fingerprint()).iterdir() if p.name.startswith(".tmp")] == []


@pytest.mark.parametrize("whose", ["shard", "recipe.json"])
def test_a_shard_whose_flush_fails_is_not_stored_and_the_warning_names_it(tmp_path, monkeypatch, whose):
    # EIO at the flush: the bytes did not reach the disk; ENOSPC or EDQUOT, as NFS reports them at the flush. A first
    # store writes recipe.json first, flushed too since session 16: a failed flush there names that file
    recipe = recipe16()
    real_fsync = os.fsync
    failing = r"\.tmp-[^']+\.parquet" if whose == "shard" else r"\.recipe\.json\.tmp-\d+-[0-9a-f]{8}"

    def fsync(fd):
        if re.fullmatch(failing, os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))) is None:
            return real_fsync(fd)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.warns(CacheWarning) as record:
        assert Cache(tmp_path).store(recipe, *workers.rows(range(3))) == 0
    ns = re.escape(str(tmp_path / recipe.fingerprint()))
    assert re.fullmatch(rf"bertfeat cache: could not write new rows to {ns} "
                        rf"\(\[Errno 5\] Input/output error: '{ns}/"
                        rf"{failing}'\); they are not cached\. Check the free space and permissions of the "
                        r"cache directory\.", message_of(record)), message_of(record)
    assert sorted(p.name for p in (tmp_path / recipe.fingerprint()).iterdir()) == (
        [".lock", "recipe.json"] if whose == "shard" else [".lock"])


def held_open_on_windows(monkeypatch, held: set, tries: dict | None = None,
                         strerror="The process cannot access the file because it is being used by another process"):
    """Windows, where files named in ``held`` are open in another process: renaming or removing one is refused with
    PermissionError 13 (WinError 32), each time or, where ``tries`` gives a count for it, that many times."""
    monkeypatch.setattr(locks, "WINDOWS", True)
    monkeypatch.setattr(locks, "HELD_OPEN_SECONDS", 0.2)
    refused = []

    def refusing(real):
        def call(src, *args, **kw):
            name = os.path.basename(os.fspath(src))
            if name in held and (tries is None or tries.get(name, 0) > 0):
                if tries is not None:
                    tries[name] -= 1
                refused.append(name)
                raise PermissionError(errno.EACCES, strerror, os.fspath(src))
            return real(src, *args, **kw)
        return call

    for name in ("replace", "rename", "unlink", "remove"):
        monkeypatch.setattr(os, name, refusing(getattr(os, name)))
    return refused


def three_shards(root):
    recipe, cache = recipe16(), Cache(root)
    for lo in (0, 4, 8):
        cache.store(recipe, *workers.rows(range(lo, lo + 6)))  # overlapping: compaction drops duplicates
    return recipe, cache


@pytest.mark.parametrize("action", ["compact", "clear"])
def test_on_windows_a_shard_another_process_holds_open_stops_compact_and_clear_with_the_cache_as_it_was(
        tmp_path, monkeypatch, capsys, action):
    """Windows cannot rename or remove a file another process holds open (a job reading the cache): `compact`
    committed its merged shard, removed the shards before the held one, and failed on it with a bare PermissionError
    (the command line advising "write access to its directory"), the cache half compacted, its rows twice; `clear`
    removed some files and not others. Now every file is renamed aside first and put back where one is held:
    nothing is removed, and the refusal says which file and to run it again once the other jobs end."""
    recipe, cache = three_shards(tmp_path)
    ns = tmp_path / recipe.fingerprint()
    before = sorted(p.name for p in ns.iterdir()) + [".compact.lock"]  # and the lock file each takes
    names = [p.name for p in shards(tmp_path, recipe)]
    refused = held_open_on_windows(monkeypatch, {names[1]})  # the second: the first was already moved aside
    with pytest.raises(CacheError) as info:
        getattr(Cache(tmp_path), action)()
    said = {"compact": f"compacting {ns} could not remove the shards it merged: ",
            "clear": f"clearing {ns} could not remove its files: "}[action]
    assert str(info.value) == said + (
        f"{names[1]} is held open by another process (The process cannot access the file because it is being used "
        "by another process): Windows cannot remove a file in use, and a job or session reading or writing this "
        "cache holds its files open. " + {
            "compact": "No shard was removed and every cached row is kept; run compact again once the other jobs "
                       "using this cache have ended.",
            "clear": "Nothing was removed; run clear again once the other jobs using this cache have ended."}[action])
    assert len(refused) > 1  # tried again before it stood
    assert sorted(p.name for p in ns.iterdir()) == sorted(before)  # nothing removed, nothing added
    found, _, _ = Cache(tmp_path).lookup(recipe, workers.rows(range(14))[0])
    assert found.all()
    open_cache(tmp_path)  # marks it a cache, as a cache_dir is: the command line takes no other
    assert main(["cache", action, str(tmp_path), *(["--yes"] if action == "clear" else [])]) == 2
    err = capsys.readouterr().err
    assert err == f"bertfeat cache: error: {info.value}\n"
    assert sorted(p.name for p in ns.iterdir()) == sorted(before)

    monkeypatch.undo()  # the other job has ended
    _compacted_or_cleared(action, tmp_path, recipe)


def _compacted_or_cleared(action: str, tmp_path, recipe) -> None:
    """Run ``action`` on the cache of three_shards(): compact merges its 3 shards into 1 holding the 14 rows, and
    leaves no temp file; clear removes its namespace."""
    ns = tmp_path / recipe.fingerprint()
    if action == "compact":
        result = Cache(tmp_path).compact()[0]
        assert (result.shards_before, result.shards_after, result.rows) == (3, 1, 14)
        assert not list(ns.glob(".tmp-*"))
    else:
        assert Cache(tmp_path).clear() == [recipe.fingerprint()] and not ns.exists()


@pytest.mark.parametrize("action", ["compact", "clear"])
def test_a_shard_this_user_may_not_remove_stops_compact_and_clear_with_the_cache_as_it_was(tmp_path, monkeypatch,
                                                                                          action):
    """POSIX refuses for want of rights (a shared cache's folder with the sticky bit, another user's shard): not
    tried again, and nothing removed either."""
    recipe, cache = three_shards(tmp_path)
    ns = tmp_path / recipe.fingerprint()
    before = sorted(p.name for p in ns.iterdir()) + [".compact.lock"]
    names = [p.name for p in shards(tmp_path, recipe)]
    refused = held_open_on_windows(monkeypatch, {names[2]}, strerror="Operation not permitted")
    monkeypatch.setattr(locks, "WINDOWS", False)
    with pytest.raises(CacheError) as info:
        getattr(Cache(tmp_path), action)()
    assert str(info.value).endswith(
        f"this user may not remove {names[2]} (Operation not permitted): the folder's permissions, or its sticky "
        "bit where another user wrote the file, keep it. " + {
            "compact": "No shard was removed and every cached row is kept; ",
            "clear": "Nothing was removed; "}[action]
        + f"run {action} as the user who wrote the cache's files, or one who may write to its folder.")
    assert refused == [names[2]]  # once: waiting gives no rights
    assert sorted(p.name for p in ns.iterdir()) == sorted(before)


@pytest.mark.parametrize("action", ["compact", "clear"])
def test_on_windows_a_file_held_open_for_a_moment_is_tried_again(tmp_path, monkeypatch, action):
    """A reader's short read, or an antivirus scanning a new file, holds a file open for a moment: tried again, it
    goes."""
    recipe, cache = three_shards(tmp_path)
    names = [p.name for p in shards(tmp_path, recipe)]
    refused = held_open_on_windows(monkeypatch, {names[0]}, tries={names[0]: 2})
    _compacted_or_cleared(action, tmp_path, recipe)
    assert refused == [names[0]] * 2


# -- clear ----------------------------------------------------------------------------------------------------------


def test_clear_removes_a_namespace_with_its_temp_files_and_lock_files(tmp_path):
    recipe = recipe16()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(3)))
    cache.compact()  # leaves .compact.lock
    ns = tmp_path / recipe.fingerprint()
    temp_file(ns, cache_module._HOST, os.getpid(), 0, time.time())
    assert cache.clear() == [recipe.fingerprint()]
    assert not ns.exists()
    assert cache.lookup(recipe, workers.rows(range(3))[0])[0].tolist() == [False] * 3
    assert cache.store(recipe, *workers.rows(range(3))) == 3


def test_clear_keeps_a_file_it_did_not_write(tmp_path):
    recipe = recipe16()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(3)))
    note = tmp_path / recipe.fingerprint() / "NOTES.txt"
    note.write_text("mine")
    assert cache.clear(recipe.fingerprint()) == [recipe.fingerprint()]
    assert note.read_text() == "mine"
    assert sorted(p.name for p in note.parent.iterdir()) == ["NOTES.txt"]


def test_clear_while_a_writer_commits_its_temp_file(tmp_path, monkeypatch):
    recipe = recipe16()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(3)))
    ns = tmp_path / recipe.fingerprint()
    temp = temp_file(ns, cache_module._HOST, os.getpid(), 0, time.time())
    real = os.unlink

    def renamed_first(path, *args, **kwargs):
        if Path(path) == temp and temp.exists():
            real(path)  # the writer renamed it into place a moment before
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", renamed_first)
    assert cache.clear() == [recipe.fingerprint()]
    assert not ns.exists()


@pytest.mark.parametrize("action", ["clear", "compact"])
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_clear_or_compact_stopped_by_ctrl_c_while_it_renames_leaves_every_file_in_place(tmp_path, monkeypatch,
                                                                                          action, when):
    """Ctrl-C (KeyboardInterrupt) at the second of the renames that set a namespace's files aside (before that
    rename, or after it but before it was noted) removed the files already renamed, the namespace half cleared: the
    next lookup served some of the recipe's texts and not others, `cache info` said its recipe missing, and a shard
    renamed in the last window stayed as a temp file, its rows lost to the next compact. Now those renamed are put
    back before the interrupt goes on: every file is where it was, every row found with its vector, and the next
    call finishes the work. A compaction also took its merged shard back: left beside the old ones, every row was
    stored twice until the next compact (found by a cache crash consistency hunt, 2026-11-27, session 17)."""
    recipe, cache = three_shards(tmp_path)
    ns = tmp_path / recipe.fingerprint()
    keys, _, _ = workers.rows(range(14))
    before = sorted(p.name for p in ns.iterdir() if p.name not in (".compact.lock", ".lock"))
    real, calls = os.replace, []

    def stopped_at_the_second(src, dst, *args, **kwargs):
        if os.path.basename(os.fspath(dst)).startswith(".tmp-") and os.path.dirname(os.fspath(src)) == str(ns):
            calls.append(src)
            if len(calls) == 2:
                if when == "after":
                    real(src, dst, *args, **kwargs)
                raise KeyboardInterrupt
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", stopped_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        getattr(cache, action)()
    monkeypatch.setattr(os, "replace", real)
    after = sorted(p.name for p in ns.iterdir() if p.name not in (".compact.lock", ".lock"))
    assert after == before
    for reader in (cache, Cache(tmp_path)):
        found, vectors, n_tokens = reader.lookup(recipe, keys)
        assert found.all()
        workers.check_found(keys, found, vectors, n_tokens)
    info = Cache(tmp_path).info()[0]
    assert (info.recipe["fingerprint"], info.rows, info.temp_files) == (recipe.fingerprint(), 14, 0)
    if action == "clear":
        _compacted_or_cleared(action, tmp_path, recipe)
    else:
        _compacted_or_cleared(action, tmp_path, recipe)
        workers.check_found(keys, *Cache(tmp_path).lookup(recipe, keys))


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_second_ctrl_c_while_a_clear_puts_its_files_back_still_puts_every_one_back(tmp_path, monkeypatch, when):
    """The put-back of the test above is renames, one a file: slow where the cache has thousands of shards on NFS
    (a round trip each), where a user presses Ctrl-C again. A second KeyboardInterrupt there (before a put-back's
    rename, or after it) ended the put-back, and the files not yet put back were then deleted as if cleared: the
    namespace half cleared after all. Now the put-back finishes first, then the interrupt goes on."""
    recipe, cache = three_shards(tmp_path)
    ns = tmp_path / recipe.fingerprint()
    keys, _, _ = workers.rows(range(14))
    before = sorted(p.name for p in ns.iterdir() if p.name not in (".compact.lock", ".lock"))
    real, aside, back = os.replace, [], []

    def stopped_twice(src, dst, *args, **kwargs):
        # (the clear's own note, clearing.json, written in place by a rename too, is no file set aside or put back)
        if os.path.dirname(os.fspath(src)) == str(ns) and os.path.basename(os.fspath(dst)) != "clearing.json":
            going_aside = os.path.basename(os.fspath(dst)).startswith(".tmp-")
            if going_aside or os.path.exists(src):  # (the fourth, stopped before its rename, has nothing to put back)
                (aside if going_aside else back).append(src)
            if going_aside and len(aside) == 4 or not going_aside and len(back) == 1:
                if not going_aside and when == "after":
                    real(src, dst, *args, **kwargs)
                raise KeyboardInterrupt
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", stopped_twice)
    with pytest.raises(KeyboardInterrupt):
        cache.clear()
    monkeypatch.setattr(os, "replace", real)
    assert len(back) == 3 + (when == "before")  # each of the three set aside put back (the one stopped: again)
    assert sorted(p.name for p in ns.iterdir() if p.name not in (".compact.lock", ".lock")) == before
    found, vectors, n_tokens = Cache(tmp_path).lookup(recipe, keys)
    assert found.all()
    workers.check_found(keys, found, vectors, n_tokens)


# -- listing and naming namespaces ----------------------------------------------------------------------------------


def test_only_recipe_directories_are_namespaces(tmp_path):
    recipe = recipe16()
    cache = Cache(tmp_path)
    cache.store(recipe, *workers.rows(range(3)))
    (tmp_path / "notes").mkdir()
    (tmp_path / ("a" * 32)).write_text("a file named like a namespace")
    (tmp_path / ("A" * 32)).mkdir()
    assert cache.fingerprints() == [recipe.fingerprint()]


def test_resolve_a_fingerprint_prefix(tmp_path):
    cache = Cache(tmp_path)
    for name in ("abcdef" + "0" * 26, "abcdef" + "1" * 26, "123456" + "7" * 26):
        (tmp_path / name).mkdir()
    assert cache.resolve("123456") == "123456" + "7" * 26
    assert cache.resolve("ABCDEF1") == "abcdef" + "1" * 26

    def refusal(prefix):
        with pytest.raises(CacheError) as err:
            cache.resolve(prefix)
        return str(err.value)

    tail = f"in {tmp_path}; `bertfeat cache info {tmp_path}` lists them."
    assert refusal("12345") == f"fingerprint '12345' is too short (give at least 6 characters) {tail}"
    assert refusal("abcdef") == f"fingerprint 'abcdef' matches 2 namespaces {tail}"
    assert refusal("ffffff") == f"fingerprint 'ffffff' matches no namespace {tail}"


def test_a_shard_deleted_by_hand_during_the_swap_does_not_fail_the_compaction(tmp_path, monkeypatch):
    recipe, cache = two_shards(tmp_path, 5)
    first = shards(tmp_path, recipe)[0]
    real = os.unlink

    def gone_first(path, *args, **kwargs):
        if Path(path) == first and first.exists():
            real(path)
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", gone_first)
    result = cache.compact()[0]
    assert (result.shards_after, result.rows) == (1, 10)
    assert Cache(tmp_path).lookup(recipe, workers.rows(range(10))[0])[0].all()


def test_without_a_lock_call_every_operation_still_works(tmp_path, monkeypatch):
    """An OS with neither flock nor msvcrt.locking: the locks are no-ops (docs/cache.md says to compact and clear
    while no job runs)."""
    from bertfeat import locks

    monkeypatch.setattr(locks, "fcntl", None)
    monkeypatch.setattr(locks, "msvcrt", None)
    recipe, cache = two_shards(tmp_path, 5)
    assert cache.compact()[0].shards_after == 1
    assert cache.lookup(recipe, workers.rows(range(10))[0])[0].all()
    assert not list((tmp_path / recipe.fingerprint()).glob(".*lock"))
    assert cache.clear() == [recipe.fingerprint()] and not (tmp_path / recipe.fingerprint()).exists()


def flock_refused(monkeypatch, code: int) -> None:
    """``flock`` as a filesystem that does not lock answers it (Lustre mounted without -o flock, NFS without its
    lock daemon, some FUSE filesystems)."""
    import fcntl

    def refused(fd, operation):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fcntl, "flock", refused)


@pytest.mark.parametrize("code", [errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK])
@pytest.mark.parametrize("action", ["compact", "clear"])
def test_compact_and_clear_where_flock_is_refused_say_once_to_run_them_alone(tmp_path, monkeypatch, code, action):
    """docs/cache.md says to run compact and clear while no other job uses a cache whose filesystem refuses flock,
    but they said nothing there, where a job on such a filesystem warns (NoLockWarning): they now warn once a call,
    before any work (where warnings are errors, that stops the call), and do their work."""
    from bertfeat.exceptions import NoLockWarning

    recipe, cache = two_shards(tmp_path, 5)
    other = make_recipe(hidden_size=F, normalize=True)
    cache.store(other, *workers.rows(range(3)))
    flock_refused(monkeypatch, code)
    with pytest.warns(NoLockWarning) as record:
        done = getattr(Cache(tmp_path), action)()
    assert [str(r.message) for r in record] == [
        f"the filesystem of the cache {tmp_path} does not support flock locks ({os.strerror(code)}), so no lock keeps "
        f"other jobs off it while it is {action}ed: run this only while no other job or session uses the cache."]
    assert record[0].filename == __file__  # the caller's line
    if action == "compact":
        assert sorted((r.shards_after, r.rows) for r in done) == [(1, 3), (1, 10)]
        assert Cache(tmp_path).lookup(recipe, workers.rows(range(10))[0])[0].all()
    else:
        assert sorted(done) == sorted([recipe.fingerprint(), other.fingerprint()])
        assert Cache(tmp_path).info() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoLockWarning)  # before any work: where warnings are errors, nothing is done
        with pytest.raises(NoLockWarning):
            two_shards(tmp_path / "again", 5)[1].__getattribute__(action)()
    assert len(shards(tmp_path / "again", recipe)) == 2


def test_reads_after_indexing_reuse_the_footer_read_at_indexing(tmp_path, monkeypatch):
    """A lookup and a compaction open each shard with the footer its index already holds (parsing a footer costs a
    read and a thrift decode per shard per batch)."""
    recipe = recipe16()
    cache = Cache(tmp_path, row_group_rows=8)
    cache.store(recipe, *workers.rows(range(0, 20)))
    cache.store(recipe, *workers.rows(range(10, 30)))
    cache.lookup(recipe, workers.rows([0])[0])  # indexed: footers read once
    opened = []
    real = pq.ParquetFile.__init__

    def init(pf, source, *args, metadata=None, **kwargs):
        opened.append((Path(str(source)).name, metadata is not None))
        real(pf, source, *args, metadata=metadata, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "__init__", init)
    keys = workers.rows(range(30))[0]
    assert cache.lookup(recipe, keys)[0].all()
    names = [p.name for p in shards(tmp_path, recipe)]
    assert sorted(opened) == [(n, True) for n in names]
    opened.clear()
    cache.compact()
    [merged] = shards(tmp_path, recipe)  # named with the oldest shard's time, so it sorts among the old names
    assert sorted(opened) == sorted([(n, True) for n in names] + [(merged.name, False)])  # the new one: indexed


@pytest.mark.parametrize("operation", ["compact", "info"])
def test_compact_and_info_from_python_finish_where_warnings_are_errors_and_leave_the_filters(tmp_path, caplog,
                                                                                            operation):
    # Cache.compact() under python -W error (warnings.simplefilter("error")) stopped on its own "ignoring unreadable
    # shard" warning, before removing that shard, the one thing it was called to do, and Cache.info() before listing
    # it (the CLI got round it by changing the warnings filter for the command, which a library must not do). Now
    # their notices are said when the work is done, and where warnings are errors, logged instead of raised.
    import logging

    recipe, _ = two_shards(tmp_path, 10)
    damaged = shards(tmp_path, recipe)[0]
    damaged.write_bytes(damaged.read_bytes()[:50])
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="bertfeat"):
        warnings.simplefilter("error")
        filters = list(warnings.filters)
        if operation == "compact":
            result = Cache(tmp_path).compact()[0]
            assert result.corrupt_removed == [damaged.name] and not damaged.exists() and result.rows == 10
        else:
            assert Cache(tmp_path).info()[0].corrupt == [damaged.name]
        assert warnings.filters == filters
    assert [r.getMessage() for r in caplog.records] == [
        f"bertfeat cache: ignoring unreadable shard {damaged} (ArrowInvalid: Parquet magic bytes not found in footer. "
        f"Either the file is corrupted or this is not a parquet file.); its texts will be recomputed. `bertfeat "
        f"cache compact {tmp_path}` removes it."]
    caplog.clear()
    if operation == "info":  # said once per process, as a warning where warnings are not errors
        with pytest.warns(CacheWarning, match="ignoring unreadable shard") as record:
            Cache(tmp_path).compact()
        assert len(record) == 1 and not caplog.records


@pytest.mark.parametrize("second", [OSError(errno.ENOSPC, "No space left on device"), pa.ArrowException("flush"),
                                    pa.ArrowInvalid("closed")])
def test_a_writer_whose_close_fails_again_after_a_failed_write_is_let_go_quietly(tmp_path, second):
    """After a failed write (a full disk), closing the parquet writer fails again as it flushes: abort() lets go of
    it without raising that second failure over the first. A bug in the caller is not hidden."""
    from types import SimpleNamespace

    writer = shard_module._RowGroupWriter(str(tmp_path / "s.parquet"), "f" * 64, 4, 16)
    writer.writer.close()

    def close():
        raise second

    writer.writer = SimpleNamespace(close=close)
    writer.abort()
    writer.writer = SimpleNamespace(close=lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        writer.abort()


def test_keys_that_are_not_16_bytes_are_refused_naming_the_first_and_no_keys_are_16_byte_strings():
    good = text_key("a")
    assert _key_array([good, text_key("b")]).tolist() == [good, text_key("b")]
    assert _key_array([]).dtype == np.dtype("S16") and len(_key_array([])) == 0
    for bad in (good[:15], good + b"\0", "x" * 16, None):
        with pytest.raises(ValueError) as refused:
            _key_array([good, bad, b"\0" * 3])
        assert str(refused.value) == f"cache keys must be 16 bytes (bertfeat.encode.text_key); got {bad!r}."
