"""Code run in child processes by the cache tests (importable without pytest, so spawned children start fast)."""

from __future__ import annotations

import hashlib
import sys
import warnings

import numpy as np

N_FEATURES = 16


def key_of(i: int) -> bytes:
    return hashlib.sha256(f"text {i}".encode()).digest()[:16]


def vector_of(key: bytes) -> np.ndarray:
    """A vector that is a fixed function of the key, so any reader can check a row it got back, bit for bit."""
    return np.frombuffer(hashlib.sha256(key).digest() * 2, dtype=np.float32).copy()


def rows(ids):
    keys = [key_of(int(i)) for i in ids]
    vectors = np.stack([vector_of(k) for k in keys]) if keys else np.empty((0, N_FEATURES), np.float32)
    n_tokens = np.array([k[0] for k in keys], dtype=np.int64)
    return keys, vectors, n_tokens


def check_found(keys, found, vectors, n_tokens) -> None:
    """Every row a lookup returned must be exactly the row that was stored for its key."""
    expect = rows([])[1] if not found.any() else np.stack([vector_of(k) for k, f in zip(keys, found) if f])
    assert vectors.view(np.uint32).tolist() == expect.view(np.uint32).tolist(), "a lookup returned a wrong vector"
    assert n_tokens.tolist() == [k[0] for k, f in zip(keys, found) if f], "a lookup returned a wrong n_tokens"


def writer(root: str, recipe, worker: int, rounds: int, batch: int, row_group_rows: int) -> int:
    """Store overlapping ranges of texts (each worker's range overlaps its neighbours'), checking lookups as it goes."""
    from bertfeat.cache import Cache
    from bertfeat.exceptions import CacheWarning

    warnings.simplefilter("error", CacheWarning)  # no shard may ever look corrupt to a concurrent reader
    cache = Cache(root, row_group_rows=row_group_rows)
    rng = np.random.default_rng(worker)
    written = 0
    for r in range(rounds):
        start = worker * batch // 2 + r * batch // 4
        ids = rng.permutation(np.arange(start, start + batch))
        keys, vectors, n_tokens = rows(ids)
        found, got, got_tokens = cache.lookup(recipe, keys)
        check_found(keys, found, got, got_tokens)
        written += cache.store(recipe, keys, vectors, n_tokens)
    return written


def compactor(root: str, recipe, times: int) -> int:
    from bertfeat.cache import Cache
    from bertfeat.exceptions import CacheWarning

    warnings.simplefilter("error", CacheWarning)
    cache = Cache(root)
    done = 0
    for _ in range(times):
        done += len(cache.compact())
        keys, _, _ = rows(range(64))
        found, got, got_tokens = cache.lookup(recipe, keys)
        check_found(keys, found, got, got_tokens)
    return done


def killed_writer_main(root: str, mode: str) -> None:
    """Store batches of 2,000 texts forever, printing each committed batch; the test kills this process.

    In ``stall`` mode the fourth batch stops after its temporary file is written and before it is renamed, so the
    kill is sure to land inside a write.
    """
    import bertfeat.cache as cache_module
    import bertfeat.namespace as namespace_module
    from tests.conftest import make_recipe

    recipe = make_recipe(hidden_size=N_FEATURES)
    cache = cache_module.Cache(root, row_group_rows=100)
    batch = 0
    while True:
        if mode == "stall" and batch == 3:
            real_fsync = namespace_module.file_to_disk

            def fsync_then_stall(path):
                real_fsync(path)
                print("stalled", flush=True)
                import time

                time.sleep(600)

            namespace_module.file_to_disk = fsync_then_stall
        cache.store(recipe, *rows(range(batch * 2000, (batch + 1) * 2000)))
        print(f"committed {batch}", flush=True)
        batch += 1


def locked_operation_main(root: str, operation: str, n_keys: int) -> None:
    """Print "ready", run one cache operation that must take a lock, then print "done" and what it saw."""
    import json

    from bertfeat.cache import Cache
    from tests.conftest import make_recipe

    recipe = make_recipe(hidden_size=N_FEATURES)
    cache = Cache(root)
    print("ready", flush=True)
    if operation == "lookup":
        keys = rows(range(n_keys))[0]
        found, got, got_tokens = cache.lookup(recipe, keys)
        check_found(keys, found, got, got_tokens)
        result = {"found": int(found.sum())}
    elif operation == "compact":
        result = {"shards_after": [r.shards_after for r in cache.compact()]}
    else:
        result = {"cleared": len(cache.clear())}
    print("done " + json.dumps(result), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "locked-operation":
        locked_operation_main(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        killed_writer_main(sys.argv[1], sys.argv[2])


def first_store_held(root: str, recipe, held, go) -> None:
    """Store the first rows of ``recipe``'s namespace, stopping just before recipe.json is written (``held`` set)
    until ``go``: a first writer slow between seeing no recipe.json and writing one."""
    from bertfeat import cache as cache_module
    from bertfeat import namespace as namespace_module

    real = namespace_module._write_atomic

    def write_atomic(path, text):
        if path.endswith("recipe.json"):
            held.set()
            go.wait(30)
        real(path, text)

    namespace_module._write_atomic = write_atomic
    cache_module.Cache(root).store(recipe, *rows(range(5)))
