"""The cache killed mid-operation: a `clear` or a `compact` stopped by SIGKILL (an OOM kill, a power loss)
at a rename of its swap leaves a cache the next lookup, store, compact, info and clear see whole (docs/cache.md,
"Several jobs at once"). The kills land at chosen renames of a child process (a hook in the child only)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from bertfeat.cache import Cache
from bertfeat.exceptions import CacheWarning
from tests import _cache_workers as workers
from tests.conftest import make_recipe

REPO = Path(__file__).resolve().parent.parent

# Runs `Cache(root).<operation>()` and SIGKILLs itself just after its Nth rename of a shard (a shard renamed aside to
# be removed, or a merged shard renamed into place).
_KILLED_AT_RENAME = r"""
import os, signal, sys
operation, nth, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
replace, seen = os.replace, [0]
def killing_replace(src, dst, *args, **kwargs):
    replace(src, dst, *args, **kwargs)
    if "shard-" in os.path.basename(os.fspath(src)) + os.path.basename(os.fspath(dst)):
        seen[0] += 1
        if seen[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)
os.replace = killing_replace
from bertfeat.cache import Cache
getattr(Cache(root), operation)()
"""


def _three_shards(root):
    """A namespace of three shards holding texts 0-9, 10-14 and 20-29 (a store writes only texts not stored yet)."""
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(root)
    for ids in (range(10), range(5, 15), range(20, 30)):
        cache.store(recipe, *workers.rows(ids))
    return recipe


def _killed_at(root, operation: str, nth: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _KILLED_AT_RENAME, operation, str(nth), str(root)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr  # the kill landed inside the operation


def _seen(root, recipe, ids=range(30)):
    """What a fresh process finds of texts ``ids``: the found mask, each found row checked bit for bit."""
    keys = workers.rows(ids)[0]
    found, vectors, n_tokens = Cache(root).lookup(recipe, keys)
    workers.check_found(keys, found, vectors, n_tokens)
    return found


def _info(root):
    return [(i.rows, i.stored_rows, i.shards) for i in Cache(root).info()]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
@pytest.mark.parametrize("nth", [1, 2])
def test_a_clear_killed_between_its_renames_is_a_clear_to_every_later_call(tmp_path, nth):
    """(found by a cache crash consistency hunt, 2026-11-27, session 17) A `clear` killed with SIGKILL after it had
    renamed some of a namespace's files aside (an OOM kill, a power loss) left it half cleared: the shards it had not
    reached answered for their texts, the others' texts were missed, and recipe.json could be gone beside live shards
    (info then said the recipe was missing). Now a clear notes itself in the namespace (clearing.json) before it
    touches a file: every reader sees a cleared namespace from then on, and the next store, compact or clear ends
    the removal."""
    recipe = _three_shards(tmp_path)
    _killed_at(tmp_path, "clear", nth)
    assert not _seen(tmp_path, recipe).any()  # none of the namespace's texts: the clear was under way
    assert _info(tmp_path) == []  # as after a clear that ended
    # a store refills it, and the rows of no shard the clear left come back
    cache = Cache(tmp_path)
    assert cache.store(recipe, *workers.rows(range(3))) == 3
    assert _seen(tmp_path, recipe).tolist() == [i < 3 for i in range(30)]
    assert _info(tmp_path) == [(3, 3, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        (result,) = cache.compact()
    assert result.temp_removed >= nth  # the files the dead clear renamed aside
    assert not [n for n in os.listdir(tmp_path / recipe.fingerprint()) if n.startswith(".tmp-")]
    assert _info(tmp_path) == [(3, 3, 1)]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_clear_killed_after_its_renames_is_ended_by_the_next_clear(tmp_path):
    recipe = _three_shards(tmp_path)
    _killed_at(tmp_path, "clear", 3)
    assert not _seen(tmp_path, recipe).any()
    assert Cache(tmp_path).clear() == [recipe.fingerprint()]
    assert not (tmp_path / recipe.fingerprint()).exists()
    assert _info(tmp_path) == []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_compaction_killed_in_its_swap_never_shows_a_row_twice(tmp_path, nth):
    """(found by a cache crash consistency hunt, 2026-11-27, session 17) A compaction killed in its swap, after the
    merged shard was renamed into place and before (or while) the old shards went, left the merged shard beside them:
    every row stored twice (info's stored_rows and bytes doubled, lookups reading both) until the next compact. Now
    the swap is noted first (compacting.json: the merged shard and those it replaces); readers that find the merged
    shard in place leave the old ones out, and the next compact removes them."""
    recipe = _three_shards(tmp_path)
    _killed_at(tmp_path, "compact", nth)  # 1: the merged shard in place; 2, 3: one or two old shards renamed aside
    assert _seen(tmp_path, recipe).tolist() == [i < 15 or i >= 20 for i in range(30)]
    assert _info(tmp_path) == [(25, 25, 1)]
    cache = Cache(tmp_path)
    (result,) = cache.compact()
    assert (result.shards_after, result.rows) == (1, 25)
    assert not [n for n in os.listdir(tmp_path / recipe.fingerprint())
                if n.startswith(".tmp-") or n == "compacting.json"]
    assert len(list((tmp_path / recipe.fingerprint()).glob("shard-*.parquet"))) == 1
    assert _seen(tmp_path, recipe).sum() == 25
    assert cache.store(recipe, *workers.rows(range(40))) == 15
    assert _info(tmp_path) == [(40, 40, 2)]
