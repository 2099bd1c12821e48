"""bertfeat.counts by value: the distinct-text counter (exact, then HyperLogLog), the text hashes every engine
shares, the manifest's counts, and the forward-pass, machine and slow-dtype bookkeeping of Ray and Spark jobs.
Torch-free and fast: no model runs here."""

from __future__ import annotations

import hashlib
import math
import sys
import types
import warnings

import numpy as np
import pytest

from bertfeat.counts import (
    DistinctCounter, add_passes, count_own_pass, driver_says, forward_passes, job_counts, keep_machine, keep_note,
    machines_facts, own_passes, passes_since, say_notes, text_hashes,
)
from bertfeat.encode import EncodeStats
from bertfeat.exceptions import CacheWarning, SlowDtypeWarning

M = 1 << DistinctCounter.P  # 16,384 registers


def _random_hashes(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)


def _hll(registers: np.ndarray) -> float:
    """The HyperLogLog estimate (Flajolet et al. 2007) with its small-range linear counting, computed here apart."""
    m = len(registers)
    raw = 0.7213 / (1 + 1.079 / m) * m * m / sum(2.0 ** -int(r) for r in registers)
    zeros = int((registers == 0).sum())
    return m * math.log(m / zeros) if raw <= 2.5 * m and zeros else raw


def test_the_count_is_exact_up_to_the_limit_and_an_estimate_past_it():
    a, b, d, e = (np.uint64(i << 50) for i in (5, 7, 9, 11))  # four registers
    c = DistinctCounter(exact_limit=3)
    assert c.count() == (0, True)
    c.add(np.array([a, b, a]))
    c.add(np.array([b, d]))  # a repeat is counted once
    assert c.count() == (3, True) and c.exact.tolist() == [a, b, d]
    c.add(np.array([d, e]))  # the fourth: past the limit, the exact set is dropped
    assert c.exact is None
    assert c.count() == (4, False)  # four registers set: linear counting says 4.0005
    c.add(np.array([a, b, d, e]))
    assert c.count() == (4, False)


def test_hashes_are_kept_as_64_bit_integers_in_16_kib_of_registers():
    """Two hashes a float64 cannot tell apart are two texts; a plain list of ints is read as hashes too; the
    registers stay one byte each (docs: bounded memory)."""
    c = DistinctCounter()
    c.add(np.array([2**63 + 1, 2**63 + 2], dtype=np.uint64))
    c.add([1 << 50, 2 << 50])
    assert c.count() == (4, True) and c.exact.dtype == np.uint64
    assert c.registers.dtype == np.uint8 and c.registers.nbytes == 16_384


def test_the_default_limit_is_250_000_distinct_texts():
    hashes = np.unique(_random_hashes(250_010))[:250_001]
    c = DistinctCounter()
    c.add(hashes[:250_000])
    assert c.count() == (250_000, True)
    c.add(hashes[250_000:])
    assert c.exact is None and c.count()[1] is False
    assert abs(c.count()[0] / 250_001 - 1) < 0.03  # docs/cli.md: about 0.8% error


@pytest.mark.parametrize("n", [300, 5_000, 100_000])
def test_the_estimate_is_within_a_few_percent(n):
    """Below 2.5 x 16,384 by linear counting, above it by the HyperLogLog sum (3% is about four standard errors)."""
    c = DistinctCounter(exact_limit=0)
    c.add(_random_hashes(n, seed=n))
    got, exact = c.count()
    assert not exact and abs(got / n - 1) < 0.03, got


def test_each_hash_sets_its_register_to_the_rank_of_its_remaining_50_bits():
    """The top 14 bits pick the register; the rank is one more than the leading zeros of the other 50 bits."""
    c = DistinctCounter(exact_limit=0)
    h = [(5 << 50) | (1 << 49),  # first bit set: rank 1
         (6 << 50) | 1,  # 49 zeros, then a one: rank 50
         7 << 50,  # all 50 zero: rank 51
         (8 << 50) | (1 << 40),  # 9 zeros: rank 10
         (8 << 50) | (1 << 45),  # the same register, a lower rank: the highest stays
         (2**14 - 1) << 50]  # the last register
    c.add(np.array(h, dtype=np.uint64))
    assert {int(i): int(r) for i, r in enumerate(c.registers) if r} == {5: 1, 6: 50, 7: 51, 8: 10, M - 1: 51}
    c.add(np.array([], dtype=np.uint64))  # nothing added changes nothing
    assert int(c.registers.sum()) == 1 + 50 + 51 + 10 + 51


@pytest.mark.parametrize("fill", ["few", "some_zeros_large", "some_zeros_above_2_5_m", "no_zeros", "no_zeros_small"])
def test_the_estimate_is_the_hyperloglog_formula_with_linear_counting_for_small_counts(fill):
    c = DistinctCounter(exact_limit=0)
    c.exact = None
    if fill == "few":  # 100 registers at 3, the rest 0: linear counting
        c.registers[:100] = 3
    elif fill == "some_zeros_large":  # high registers and 10 zeros: the raw sum, zeros or not
        c.registers[:] = 12
        c.registers[:10] = 0
    elif fill == "some_zeros_above_2_5_m":  # every register 2 but 10: raw estimate 47,182 > 2.5 m, used
        c.registers[:] = 2
        c.registers[:10] = 0
    elif fill == "no_zeros":  # every register 2: raw estimate 4 * alpha * m = 47,268 > 2.5 m
        c.registers[:] = 2
    else:  # every register 1: raw estimate 2 * alpha * m = 23,634 <= 2.5 m, but no zero for linear counting
        c.registers[:] = 1
    want = _hll(c.registers)
    assert c.count() == (int(round(want)), False)
    assert pytest.approx(want, rel=1e-5) == {"few": 100.306, "some_zeros_large": 13_831_679,
                                             "some_zeros_above_2_5_m": 47_182, "no_zeros": 47_268,
                                             "no_zeros_small": 23_634}[fill]


def test_text_hashes_are_the_first_8_bytes_of_blake2b_little_endian_of_each_distinct_present_text():
    texts = ["a", "b", "a", None, float("nan"), "", "  ", "\t", "caf\u00e9", "\ud800 lone surrogate", 3]
    got = text_hashes(texts)
    assert got.dtype == np.uint64

    def h(t):
        return int.from_bytes(hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")

    assert sorted(got.tolist()) == sorted(h(t) for t in ["a", "b", "caf\u00e9", "\ud800 lone surrogate"])
    assert text_hashes([]).tolist() == [] and text_hashes([]).dtype == np.uint64


def test_job_counts_reads_each_field_from_its_source():
    totals = EncodeStats(rows=12, missing=2, unique=9, cache_hits=4, cache_misses=5, cache_new=5, truncated=3,
                         chunked=1, tokens=77, padded_tokens=90, batches=2, seconds=1.5)
    distinct = DistinctCounter()
    distinct.add(np.arange(7, dtype=np.uint64))
    counts = job_counts(totals, distinct, 3, rows_resumed=6, chunks=4)
    assert {k for k, v in counts.items() if type(v) is not int} == {"unique_texts_exact"}  # 4, never 4.0 in JSON
    assert counts == {
        "rows": 4, "texts": 12, "unique_texts": 7, "unique_texts_exact": True, "embedded": 5, "cache_hits": 4,
        "truncated": 3, "chunked": 1, "missing": 2, "tokens": 77, "rows_resumed": 6, "chunks": 4,
    }
    assert job_counts(EncodeStats(rows=5), DistinctCounter(), 0, 0, 1)["rows"] == 5  # no text column: no division


def _recipe():
    return types.SimpleNamespace(weights_sha256="w", config_sha256="c", tokenizer_sha256="t", dtype="float32")


def test_forward_passes_asks_the_backend_for_this_recipes_model_and_dtype(monkeypatch):
    monkeypatch.delitem(sys.modules, "bertfeat.backend", raising=False)
    assert forward_passes(_recipe()) == {}  # a process that never imported the backend ran no pass
    asked = []
    fake = types.ModuleType("bertfeat.backend")
    fake.forward_passes = lambda *key: asked.append(key) or {"onednn-float32": 3}
    monkeypatch.setitem(sys.modules, "bertfeat.backend", fake)
    assert forward_passes(_recipe()) == {"onednn-float32": 3}
    assert asked == [("w", "c", "t", "float32")]


def test_passes_since_keeps_the_arrangements_that_ran_since_and_add_passes_sums(monkeypatch):
    fake = types.ModuleType("bertfeat.backend")
    fake.forward_passes = lambda *key: {"onednn-float32": 5, "torch-float32": 2, "transformers": 1}
    monkeypatch.setitem(sys.modules, "bertfeat.backend", fake)
    before = {"onednn-float32": 3, "torch-float32": 2}
    assert passes_since(before, _recipe()) == {"onednn-float32": 2, "transformers": 1}
    total = {"onednn-float32": 1}
    assert add_passes(total, {"onednn-float32": np.int64(2), "transformers": 1}) is total
    assert total == {"onednn-float32": 3, "transformers": 1} and type(total["onednn-float32"]) is int


def test_own_passes_counts_the_passes_of_its_model_run_in_its_context_only():
    import contextvars
    import threading

    model = ("w", "c", "t", "float32")
    with own_passes(_recipe()) as outer:
        count_own_pass(model, "onednn-float32")
        count_own_pass(("w", "c", "t", "bfloat16"), "onednn-bfloat16")  # another dtype: another recipe's
        with own_passes(_recipe()) as inner:
            count_own_pass(model, "torch-float32")
            # a worker thread running this call's batch in a copy of its context counts; a thread of its own not
            worker = threading.Thread(target=contextvars.copy_context().run,
                                      args=(count_own_pass, model, "onednn-float32"))
            other = threading.Thread(target=count_own_pass, args=(model, "onednn-float32"))
            for t in (worker, other):
                t.start()
                t.join()
    count_own_pass(model, "onednn-float32")  # after the block
    assert inner == {"torch-float32": 1, "onednn-float32": 1}
    assert outer == {"onednn-float32": 2, "torch-float32": 1}


def test_a_hosts_facts_are_the_first_reports_unless_a_later_one_measured_the_model():
    machines: dict = {}
    keep_machine(machines, "a", {"cpu": "A"})
    keep_machine(machines, "a", {"cpu": "A2"})  # the first report stands
    assert machines == {"a": {"cpu": "A"}}
    ran = {"cpu": "A3", "matmul_gflops": {"float32": 9.0}}
    keep_machine(machines, "a", ran)  # a worker that loaded torch replaces one that did not
    keep_machine(machines, "a", {"cpu": "A4", "matmul_gflops": {"float32": 1.0}})  # but not a second such
    keep_machine(machines, "a", {"cpu": "A5"})
    assert machines == {"a": ran}
    keep_machine(machines, "b", {"cpu": "B"})
    assert machines_facts(machines) == {"a": ran, "b": {"cpu": "B"}}
    assert list(machines_facts({"z": {}, "b": {}, "m": {}})) == ["b", "m", "z"]  # by host name, sorted
    assert machines_facts({"a": ran}) is ran and machines_facts({}) == {}


def test_slow_dtype_notes_are_kept_once_per_host_and_said_by_host_name():
    notes: dict = {}
    keep_note(notes, "b", "dtype='bfloat16' runs slower here")
    keep_note(notes, "b", "a second worker's")
    keep_note(notes, "a", "slow on a")
    keep_note(notes, "b", "cache_dir='/team' is on a read-only file system", "CacheWarning")  # another kind
    keep_note(notes, "b", "a second worker's cache", "CacheWarning")
    assert notes == {("b", "SlowDtypeWarning"): "dtype='bfloat16' runs slower here", ("a", "SlowDtypeWarning"):
                     "slow on a", ("b", "CacheWarning"): "cache_dir='/team' is on a read-only file system"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        say_notes(notes, "a Spark task")
    assert [(w.category, str(w.message)) for w in caught] == [
        (SlowDtypeWarning, "slow on a (a Spark task on host 'a')"),
        (CacheWarning, "cache_dir='/team' is on a read-only file system (a Spark task on host 'b')"),
        (SlowDtypeWarning, "dtype='bfloat16' runs slower here (a Spark task on host 'b')"),
    ]


def test_the_driver_says_a_workers_slow_dtype_and_cache_warnings_and_no_other():
    from bertfeat.exceptions import ModelNoteWarning, TruncationWarning

    assert [driver_says(c) for c in (SlowDtypeWarning, CacheWarning, TruncationWarning, ModelNoteWarning,
                                     UserWarning)] == ["SlowDtypeWarning", "CacheWarning", None, None, None]


def test_slow_dtype_notes_point_at_the_callers_line():
    """(Deselected under mutmut, whose trampoline adds a frame outside bertfeat: tests/README.md.)"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        say_notes({("a", "SlowDtypeWarning"): "slow"}, "a Ray worker")
    assert [w.filename for w in caught] == [__file__]  # the user's line, not bertfeat's
