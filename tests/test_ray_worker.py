"""The Ray engine's functions called in this process, without a Ray cluster: the actor body with a stand-in for the
job's counting actor, the write sink, the data context, the cluster's nodes, and a whole file job run on a stand-in
for Ray (``FakeRay``) that keeps Ray's contract: actors built from a class and its keyword arguments, batches of
``batch_size`` rows sent to them in turn, their output handed to the sink's write tasks.

tests/test_ray.py runs real jobs on a local cluster, where a test sees only the output; here each value the driver
computes and hands to Ray is read, in seconds (so that mutation testing can afford to run them for every mutant).
"""

from __future__ import annotations

import copy
import errno
import json
import logging
import os
import socket
import sys
import warnings
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bertfeat.ray as bray
import bertfeat.ray_dataset as ray_dataset
import bertfeat.ray_files as ray_files
import bertfeat.ray_plan as ray_plan
import bertfeat.ray_session as ray_session
from bertfeat.encode import EncodeStats
from bertfeat.exceptions import TruncationWarning
from bertfeat.files import PARQUET_SUFFIXES, text_hashes
from bertfeat.hardware import run_facts
from bertfeat.worker_recipe import libraries


# -- stand-ins -------------------------------------------------------------------------------------------------------


class Ref:
    """What ``.remote()`` returns: the value, already computed (``FakeRay.get`` unwraps it)."""

    def __init__(self, value):
        self.value = value


class Handle:
    """An actor handle: ``handle.method.remote(*args)`` runs the method on the object, here."""

    def __init__(self, obj):
        self.obj = obj

    def __getattr__(self, name):
        method = getattr(self.obj, name)
        return SimpleNamespace(remote=lambda *a, **k: Ref(method(*a, **k)))


class Recorder:
    """A JobCounts stand-in that records the calls: what an actor tells the job."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return SimpleNamespace(remote=lambda *a: Ref(self.calls.append((name, a))))


class FakeDataset:
    """The parts of a Ray Dataset the engine uses, over one arrow table; map_batches runs the actors here."""

    def __init__(self, ray, table: pa.Table, known_schema=True, context=None):
        self.ray, self.table, self.known_schema = ray, table, known_schema
        # Ray's: a copy of the process's DataContext taken as the dataset is read, shared by the datasets made from it
        self.context = copy.deepcopy(ray.data.DataContext.get_current()) if context is None else context

    def schema(self, fetch_if_missing=True):
        assert fetch_if_missing is False  # the engine must not run the dataset to learn its columns
        return self.table.schema if self.known_schema else None

    def select_columns(self, cols):
        self.ray.selected.append(list(cols))
        return FakeDataset(self.ray, self.table.select(cols), self.known_schema, self.context)

    def map_batches(self, fn, **kwargs):
        self.ray.mapped.append(kwargs)
        return Mapped(self.ray, self.table, fn, kwargs, self.context)


class Mapped:
    def __init__(self, ray, table, fn, kwargs, context):
        self.ray, self.table, self.fn, self.kw, self.context = ray, table, fn, kwargs, context

    def write_datasink(self, sink):
        """Runs the job, with the order and progress options of its own context (recorded in ``ray.ran_with``)."""
        opts = self.context.execution_options
        self.ray.ran_with.append((opts.preserve_order, self.context.enable_progress_bars,
                                  self.context.print_on_execution_start))
        self.ray.ran_on.append(self.context)
        if self.ray.during is not None:
            self.ray.during()
        kw = self.kw
        assert kw["batch_format"] == "pyarrow"
        actors = [self.fn(**kw["fn_constructor_kwargs"]) for _ in range(kw["compute"].size)]
        size = kw["batch_size"]
        outs = []
        for k, start in enumerate(range(0, self.table.num_rows, size)):
            batch = self.table.slice(start, size)
            actor = actors[k % len(actors)]
            try:
                if k in self.ray.retried:  # a worker that died after its batch: Ray runs the batch again
                    actor(batch)
                outs.append(actor(batch))
            except Exception as exc:  # Ray hands the driver its own error, with only the text of the worker's
                raise RuntimeError(f"RayTaskError(ValueError): {exc}") from None
        for task, start in enumerate(range(0, len(outs), 2)):  # each write task takes the blocks of two batches
            sink.write(iter(outs[start:start + 2]), SimpleNamespace(task_idx=task))
            if task in self.ray.rewritten:  # a write task Ray retries
                sink.write(iter(outs[start:start + 2]), SimpleNamespace(task_idx=task))


class FakeRay(ModuleType):
    """``ray`` for the engine's driver: a cluster of ``nodes`` (CPUs, GPUs), actors and tasks run in this process."""

    def __init__(self, data_module, cpus=(2.0,), gpus=(0.0,), initialized=False, version="2.60.0"):
        super().__init__("ray")
        self.__version__ = version  # of a Ray whose datasets run on their own DataContext, unless told
        self.cpus, self.gpus = cpus, gpus
        self.initialized = initialized
        self.inits, self.shutdowns, self.killed, self.actor_options = [], 0, [], []
        self.selected, self.mapped, self.read, self.retried, self.rewritten = [], [], [], set(), set()
        self.ran_with, self.during = [], None  # each job's (order, progress bars, start line); a hook as it runs
        self.ran_on = []  # each job's DataContext
        self.data = SimpleNamespace(DataContext=data_module.DataContext, Datasink=data_module.Datasink,
                                    ActorPoolStrategy=lambda size: SimpleNamespace(size=size),
                                    read_parquet=self.read_parquet)

    def is_initialized(self):
        return self.initialized

    def init(self, **kwargs):
        self.inits.append(kwargs)
        self.initialized = True
        logging.getLogger("ray").setLevel(kwargs.get("logging_level", logging.INFO))  # as Ray's setup_logger does

    def shutdown(self):
        self.shutdowns += 1
        self.initialized = False

    def nodes(self):
        return [{"Alive": True, "Resources": {"CPU": c, "GPU": g}} for c, g in zip(self.cpus, self.gpus)]

    def remote(self, **options):
        """``ray.remote(**options)``: an actor class (``.remote()`` gives a handle) or a task (an object ref)."""
        self.actor_options.append(options)
        return lambda f: SimpleNamespace(remote=lambda *a, **k: Handle(f(*a, **k)) if isinstance(f, type)
                                         else Ref(f(*a, **k)))

    def get(self, ref):
        return ref.value

    def kill(self, handle):
        self.killed.append(handle)

    def read_parquet(self, paths, schema=None, partitioning="hive", **kwargs):
        """Ray's read: each file in ``schema``, its columns cast to its types (pyarrow's dataset scan does it for Ray)
        where it is given, else as written."""
        self.read.append((list(paths), {"partitioning": partitioning, **kwargs, "schema": schema}))
        tables = [pq.read_table(p) for p in paths]
        if schema is not None:
            tables = [t.select(schema.names).cast(schema) for t in tables]
        return FakeDataset(self, pa.concat_tables(tables))


@pytest.fixture
def ray_data():
    return pytest.importorskip("ray.data", reason="Ray Data is an optional extra: pip install 'bertfeat[ray]'")


@pytest.fixture
def fake_ray(ray_data, monkeypatch):
    """Install a FakeRay as ``ray``: returns a function that makes one (nodes, initialized) and installs it."""
    import ray.data.block  # noqa: F401  (the sink imports BlockAccessor from it: the real one)

    # the real data context, made while ``ray`` is still the real package: making it imports more of ray, which
    # would fail under the fake (so a test that ran first, alone or in another order, failed)
    ray.data.DataContext.get_current()

    def install(**kwargs):
        fake = FakeRay(ray_data, **kwargs)
        monkeypatch.setitem(sys.modules, "ray", fake)
        monkeypatch.setitem(sys.modules, "ray.data", fake.data)
        return fake

    return install


@pytest.fixture
def quiet_threads(monkeypatch):
    """Actors set torch's threads; keep this process's."""
    import bertfeat.backend

    seen = []
    monkeypatch.setattr(bertfeat.backend, "set_threads", lambda n: seen.append(n) or n)
    return seen


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    words = ["the cat", "sat on", "a mat", "dogs run", "far away", "quite", "slowly", "ok"]
    texts = [" ".join(rng.choice(words, size=rng.integers(1, 6))) for _ in range(n)]
    return pd.DataFrame({"id": np.arange(100, 100 + n), "review": texts, "title": [t[:7] for t in texts]})


# -- pure parts ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device, gpus, want", [
    ("auto", 0, "cpu"),
    ("cpu", 0, "cpu"),
    ("mps", 0, "mps"),
    ("auto", 1, "cuda"),
    ("cuda", 1, "cuda"),
    ("auto", 0.5, "cuda"),
    ("cuda", 1.0, "cuda"),
])
def test_worker_device(device, gpus, want):
    assert bray.worker_device(device, gpus) == want


@pytest.mark.parametrize("device, gpus, message", [
    (None, 0, "device=None is not valid: expected 'auto', 'cpu', 'cuda' or 'mps'."),
    (0, 1, "device=0 is not valid: expected 'auto', 'cpu', 'cuda' or 'mps'."),
    ("auto", 1.5, "gpus_per_worker=1.5 is not supported: a worker runs one model on one GPU, so it would leave the "
                  "others idle. Pass gpus_per_worker=1 (one worker per GPU) or a fraction such as 0.5 (workers "
                  "sharing a GPU)."),
    ("cpu", 1, "device='cpu' does not go with gpus_per_worker=1: Ray gives each worker its GPU(s) and hides the "
               "others, so leave device='auto'."),
    ("cuda:1", 0.5, "device='cuda:1' does not go with gpus_per_worker=0.5: Ray gives each worker its GPU(s)"),
    ("cuda", 0, "device='cuda' needs GPUs from Ray: pass gpus_per_worker=1, one GPU per "
                "worker."),
    ("cuda:0", 0, "device='cuda:0' needs GPUs from Ray"),
    # a GPU count that is no count, refused as such whatever the device: beside device='cpu' it was told to leave
    # device='auto', or failed formatting it (embed_parquet and the command check the device with it first)
    ("cpu", -1, "gpus_per_worker=-1 is not valid: expected a number >= 0 (0 = CPU only)."),
    ("cpu", "1", "gpus_per_worker='1' is not valid: expected a number >= 0 (0 = CPU only)."),
    ("auto", "0.5", "gpus_per_worker='0.5' is not valid: expected a number >= 0 (0 = CPU only)."),
    ("mps", True, "gpus_per_worker=True is not valid: expected a number >= 0 (0 = CPU only)."),
    ("cpu", float("nan"), "gpus_per_worker=nan is not valid: expected a number >= 0 (0 = CPU only)."),
    ("cpu", None, "gpus_per_worker=None is not valid: expected a number >= 0 (0 = CPU only)."),
    # spellings no worker runs on, refused before Ray starts (they reached the actors, which failed at their start)
    ("gpu", 0, "device='gpu' is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'."),
    ("CUDA", 1, "device='CUDA' is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'."),
    ("xpu", 0, "device='xpu' is not supported: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'."),
])
def test_worker_device_refusals_word_for_word(device, gpus, message):
    with pytest.raises(ValueError) as info:
        bray.worker_device(device, gpus)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("x, want", [
    (1, True), (0.5, True), (np.int64(2), True), (np.float32(0.25), True), (0, True),
    (True, False), (float("nan"), False), (float("inf"), False), ("1", False), (None, False),
])
def test_is_number(x, want):
    assert ray_plan._is_number(x) is want


def test_cluster_nodes_counts_only_live_nodes_and_reads_missing_resources_as_none():
    ray = SimpleNamespace(nodes=lambda: [
        {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 2.0}},
        {"Alive": False, "Resources": {"CPU": 64.0, "GPU": 8.0}},  # a dead node's resources are not there
        {"Alive": True, "Resources": {"CPU": 4}},  # no GPU key: none
        {"Alive": True, "Resources": {"GPU": 1}},  # no CPU key: none
        {"Resources": {"CPU": 16.0}},  # no Alive flag: not known to be up
    ])
    cpus, gpus = ray_plan._cluster_nodes(ray)
    assert cpus == [8.0, 4.0, 0.0] and gpus == [2.0, 0.0, 1.0]
    assert all(type(x) is float for x in cpus + gpus)


def test_job_counts_keeps_distinct_texts_every_worker_and_the_first_mistake():
    counts = bray.JobCounts()
    assert counts.first_mistake() is None
    distinct, workers = counts.report()
    assert distinct.count() == (0, True) and workers == []
    counts.add_texts(text_hashes(["a", "b", "a"]))
    counts.add_texts(text_hashes(["b", "c"]))  # a retried batch, or the same text in two batches: counted once
    counts.add_worker({"pid": 1})
    counts.add_worker({"pid": 2})
    first, second = ValueError("first"), TypeError("second")
    counts.add_mistake(first)
    counts.add_mistake(second)
    distinct, workers = counts.report()
    assert distinct.count() == (3, True) and workers == [{"pid": 1}, {"pid": 2}]
    assert counts.first_mistake() is first


def test_the_job_keeps_one_machine_per_host_and_the_manifest_names_them_by_host_when_several():
    from bertfeat.counts import machines_facts

    counts = bray.JobCounts()
    counts.add_machine("b", {"cpu": "B"})
    counts.add_machine("a", {"cpu": "A"})
    counts.add_machine("a", {"cpu": "A, a second actor"})  # the first actor's facts for its host stand
    assert machines_facts(counts.machines_report()) == {"a": {"cpu": "A"}, "b": {"cpu": "B"}}
    assert machines_facts({"a": {"cpu": "A"}}) == {"cpu": "A"}  # one machine: the facts, as the local engine's
    assert machines_facts({}) == {}
    # (found reviewing the merge) an actor whose first batch came from the cache never loaded torch: its facts lack
    # the threads and product rates, and they stood for its host though another actor there ran the model
    counts.add_machine("c", {"cpu": "C"})
    counts.add_machine("c", {"cpu": "C", "threads": 2, "matmul_gflops": {"float32": 100.0}})
    counts.add_machine("c", {"cpu": "C, a third actor", "threads": 4, "matmul_gflops": {"float32": 90.0}})
    assert counts.machines_report()["c"] == {"cpu": "C", "threads": 2, "matmul_gflops": {"float32": 100.0}}


def test_stats_file_sits_beside_its_data_file():
    assert ray_files._stats_file(Path("/d/part-000003-ab.parquet")) == Path("/d/part-000003-ab.stats.json")


def test_written_stats_sums_every_batch_and_leaves_only_the_data(tmp_path):
    a = EncodeStats(rows=10, unique=8, cache_hits=2, missing=1, truncated=3, tokens=100, seconds=1.5)
    b = EncodeStats(rows=5, unique=5, chunked=2, tokens=40, seconds=0.5)
    c = EncodeStats(rows=7, unique=1, cache_hits=1, tokens=9)
    (tmp_path / "part-000000-x.stats.json").write_text(json.dumps([json.dumps(a.to_dict()), json.dumps(b.to_dict())]))
    (tmp_path / "part-000001-x.stats.json").write_text(json.dumps([json.dumps(c.to_dict())]))
    (tmp_path / "part-000000-x.parquet").write_bytes(b"data")
    totals, batches, passes, by_worker = ray_files._written_stats(tmp_path)
    assert batches == 3 and passes == {} and by_worker == {}  # stats of no forward pass (an older bertfeat's, or answered by the cache)
    assert totals.to_dict() == dict(rows=22, missing=1, unique=14, cache_hits=3, cache_misses=0, cache_new=0,
                                    truncated=3, chunked=2, tokens=149, padded_tokens=0, batches=0, seconds=2.0)
    assert [p.name for p in tmp_path.iterdir()] == ["part-000000-x.parquet"]
    assert ray_files._written_stats(tmp_path)[1] == 0  # nothing left to count


def test_written_stats_sums_the_forward_passes_that_ran_the_batches_written(tmp_path):
    a = {**EncodeStats(rows=2, unique=2).to_dict(), "forward_pass": {"onednn-float32": 2}}
    b = {**EncodeStats(rows=1, unique=1).to_dict(), "forward_pass": {"onednn-float32": 1, "torch-float32": 1}}
    c = {**EncodeStats(rows=1, unique=1, cache_hits=1).to_dict(), "forward_pass": {}}
    (tmp_path / "part-000000-x.stats.json").write_text(json.dumps([json.dumps(a), json.dumps(b)]))
    (tmp_path / "part-000001-x.stats.json").write_text(json.dumps([json.dumps(c)]))
    totals, batches, passes, by_worker = ray_files._written_stats(tmp_path)
    assert batches == 3 and totals.rows == 4 and totals.cache_hits == 1
    assert passes == {"onednn-float32": 3, "torch-float32": 1}


def test_written_stats_keeps_each_workers_forward_passes_apart(tmp_path):
    """On a cluster of CPUs of different kinds the fused pass's rung differs by node (an AVX-512 host runs
    onednn-float32, an AVX2 one torch-float32): the manifest summed them over the job, naming no worker that ran
    either. Each worker's entry now has its own."""
    a = {**EncodeStats(rows=2, unique=2).to_dict(), "forward_pass": {"onednn-float32": 2}, "worker": ["zen4", 11]}
    b = {**EncodeStats(rows=1, unique=1).to_dict(), "forward_pass": {"torch-float32": 1}, "worker": ["avx2", 7]}
    c = {**EncodeStats(rows=1, unique=1).to_dict(), "forward_pass": {"onednn-float32": 1}, "worker": ["zen4", 11]}
    (tmp_path / "part-000000-x.stats.json").write_text(json.dumps([json.dumps(a), json.dumps(b), json.dumps(c)]))
    totals, batches, passes, by_worker = ray_files._written_stats(tmp_path)
    assert batches == 3 and totals.rows == 4 and passes == {"onednn-float32": 3, "torch-float32": 1}
    assert by_worker == {("zen4", 11): {"onednn-float32": 3}, ("avx2", 7): {"torch-float32": 1}}


def test_check_written_returns_the_files_in_name_order_and_refuses_a_short_output(tmp_path, tiny_bert):
    from bertfeat.arrow import ArrowFeaturizer

    featurizer = ArrowFeaturizer(["review"], ["id"], model=tiny_bert)
    table = pa.table({"id": [1, 2, 3, 4], "review": ["a b", "c", "d e f", "g"]})
    for name, rows in (("part-000001-x.parquet", slice(2, 4)), ("part-000000-x.parquet", slice(0, 2))):
        pq.write_table(pa.Table.from_batches([featurizer(table[rows])]), tmp_path / name)
    files, provenance = ray_files._check_written(tmp_path, 4)
    assert [f.name for f in files] == ["part-000000-x.parquet", "part-000001-x.parquet"]
    assert provenance == json.loads(pq.read_schema(files[0]).metadata[b"bertfeat"])
    with pytest.raises(RuntimeError, match="the Ray workers"):
        ray_files._check_written(tmp_path, 5)


def test_known_schema_reads_what_ray_knows_without_running_the_dataset():
    schema = pa.schema([("text", pa.string())])

    class Dataset:
        def __init__(self, answer):
            self.answer = answer

        def schema(self, fetch_if_missing=True):
            if fetch_if_missing:
                raise AssertionError("the dataset would be run to learn its schema")
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    assert ray_dataset._known_schema(Dataset(schema)) is schema
    assert ray_dataset._known_schema(Dataset(SimpleNamespace(base_schema=schema))) is schema  # Ray's Schema wrapper
    assert ray_dataset._known_schema(Dataset(None)) is None  # not known until it runs
    assert ray_dataset._known_schema(Dataset(SimpleNamespace(base_schema="not arrow"))) is None
    assert ray_dataset._known_schema(Dataset(TypeError("unexpected keyword"))) is None  # a Ray without fetch_if_missing


@pytest.mark.parametrize("quiet", [False, True])
@pytest.mark.parametrize("preserve_order", [False, True])
def test_the_jobs_order_and_progress_are_set_on_its_datasets_own_context_never_the_processes(ray_data,
                                                                                             preserve_order, quiet):
    """The options were set on DataContext.get_current(), every thread's, for the job's length: another thread's
    datasets made meanwhile ran with them, and its own change was put back at the end. Now the dataset's copy."""
    current = ray_data.DataContext.get_current()
    before = (current.execution_options.preserve_order, current.enable_progress_bars, current.print_on_execution_start)
    own = copy.deepcopy(current)
    own.execution_options.preserve_order = not preserve_order
    own.enable_progress_bars = own.print_on_execution_start = True
    ds = SimpleNamespace(context=own)
    assert ray_session._job_context(ds, preserve_order, quiet) is ds
    assert (own.execution_options.preserve_order, own.enable_progress_bars, own.print_on_execution_start) == (
        preserve_order, not quiet, not quiet)
    assert (current.execution_options.preserve_order, current.enable_progress_bars,
            current.print_on_execution_start) == before


def test_no_partition_columns_are_asked_for_under_the_name_the_installed_ray_takes():
    """(found by a dependency floors hunt, 2026-11-27, session 11) Ray 2.10 (inside ray[data]>=2.9) names no
    ``partitioning`` parameter of read_parquet: bertfeat's ``partitioning=None`` went on to pyarrow's
    ``Fragment.to_batches`` and every parquet job failed with "to_batches() got an unexpected keyword argument
    'partitioning'". Both signatures are stood in for here; a real Ray 2.10 ran the job on the floor venv."""
    def newer(paths, *, partitioning="hive", schema=None, **arrow_parquet_args):
        pass

    def older(paths, *, schema=None, **arrow_parquet_args):  # Ray 2.10.0's, less what bertfeat does not pass
        pass

    assert ray_files._without_partition_columns(newer) == {"partitioning": None}
    assert ray_files._without_partition_columns(older) == {"dataset_kwargs": {"partitioning": None}}


def test_a_quiet_job_puts_ray_datas_log_level_back_unless_another_thread_set_it_meanwhile():
    import threading

    log = logging.getLogger("ray.data")
    saved = log.level
    log.setLevel(15)
    try:
        with ray_session._process_settings(False):
            assert log.level == 15  # not quiet: not touched
        with ray_session._process_settings(True):
            assert log.level == logging.CRITICAL
        assert log.level == 15
        with pytest.raises(KeyError):  # put back when the job fails too, and the failure passes through
            with ray_session._process_settings(True):
                raise KeyError("job failed")
        assert log.level == 15
        with ray_session._process_settings(True):
            other = threading.Thread(target=log.setLevel, args=(logging.DEBUG,))  # another thread's, meanwhile
            other.start()
            other.join()
        assert log.level == logging.DEBUG  # that thread's level stays
    finally:
        log.setLevel(saved)


def test_a_file_job_leaves_the_processes_data_context_alone_even_while_it_runs(tiny_bert, fake_ray, quiet_threads,
                                                                               tmp_path, ray_data):
    """A file job set its order and progress options on the process's DataContext (every thread's) for its length
    and put the old values back after: another thread's datasets made meanwhile ran without progress bars and in
    order, and a setting that thread made during the job was undone. They are now the job's dataset's own."""
    import threading

    src = write_input(tmp_path, frame(6, seed=2))
    current = ray_data.DataContext.get_current()
    saved = (current.execution_options.preserve_order, current.enable_progress_bars, current.print_on_execution_start)
    current.execution_options.preserve_order, current.enable_progress_bars = False, True
    current.print_on_execution_start = True
    ray = fake_ray(cpus=(2.0,))
    seen = []

    def meanwhile():
        seen.append((current.execution_options.preserve_order, current.enable_progress_bars,
                     current.print_on_execution_start))
        other = threading.Thread(target=setattr, args=(current, "enable_progress_bars", False))
        other.start()
        other.join()

    ray.during = meanwhile
    try:
        bray.embed_parquet(src, tmp_path / "out", "review", keep_cols="id", model=tiny_bert, quiet=True,
                           num_workers=1)
        assert ray.ran_with == [(True, False, False)]  # the job's own: in order, quiet
        assert seen == [(False, True, True)]  # the process's, while the job ran: the user's
        assert (current.execution_options.preserve_order, current.enable_progress_bars,
                current.print_on_execution_start) == (False, False, True)  # the other thread's change stays
    finally:
        current.execution_options.preserve_order, current.enable_progress_bars = saved[:2]
        current.print_on_execution_start = saved[2]


@pytest.mark.parametrize("version", ["2.11.0", "2.53.0", "2.54.0"])
def test_a_file_job_sets_its_options_where_the_installed_ray_reads_them(tiny_bert, fake_ray, quiet_threads, tmp_path,
                                                                          ray_data, version):
    """(found by a versions in between hunt, 2026-11-27, session 12) Ray Data before 2.54 does not run a dataset on
    its own DataContext, where the job set its options: a write ran on a fresh copy of the process's (2.11 to 2.4x),
    so a job kept the input order only where the process's context said so, and progress bars were decided by the
    process's (to 2.53; 2.11 to 2.2x draw a bar per operator where ``verbose_progress`` says so), so ``--quiet`` drew
    them over standard error. On such a Ray the job's options are the process's for its length and put back after;
    from 2.54 on the process's context is left alone."""
    src = write_input(tmp_path, frame(6, seed=2))
    current = ray_data.DataContext.get_current()
    names = [(current.execution_options, "preserve_order"), (current, "enable_progress_bars"),
             (current, "print_on_execution_start"), (current.execution_options, "verbose_progress")]
    saved = [getattr(obj, name) for obj, name in names]
    users = (False, True, True, True)
    for (obj, name), value in zip(names, users):
        setattr(obj, name, value)
    ray = fake_ray(cpus=(2.0,), version=version)
    seen = []
    ray.during = lambda: seen.append(tuple(getattr(obj, name) for obj, name in names))
    try:
        bray.embed_parquet(src, tmp_path / "out", "review", keep_cols="id", model=tiny_bert, quiet=True,
                           num_workers=1)
        own = ray.ran_on[0]
        assert (own.execution_options.preserve_order, own.enable_progress_bars, own.print_on_execution_start,
                own.execution_options.verbose_progress) == (True, False, False, False)  # the job's own context
        bray.embed_parquet(src, tmp_path / "loud", "review", keep_cols="id", model=tiny_bert, num_workers=1)
        older = version != "2.54.0"
        assert seen == [(True, False, False, False) if older else users,  # quiet
                        (True, True, True, True) if older else users]  # not quiet: the order only
        assert tuple(getattr(obj, name) for obj, name in names) == users  # put back
    finally:
        for (obj, name), value in zip(names, saved):
            setattr(obj, name, value)


# -- the actor -------------------------------------------------------------------------------------------------------


def test_the_actor_reports_itself_every_distinct_text_and_its_counts_with_the_first_row(tiny_bert, fake_ray,
                                                                                       quiet_threads):
    from bertfeat.arrow import ArrowFeaturizer

    fake_ray()
    collector = Recorder()
    table = pa.table({"id": [1, 2, 3], "review": ["the cat", "a dog", "the cat"], "title": ["x", "the cat", "y"]})
    actor = bray.RayFeaturizer(["review", "title"], ["id"], "columns", threads=3, params={"model": tiny_bert},
                               collector=collector)
    assert quiet_threads == [3] and actor.threads == 3
    assert collector.calls == [("add_worker", ({"host": socket.gethostname(), "pid": os.getpid(), "device": "auto",
                                                "threads": 3, "dtype": "float32", "libraries": libraries()},))]
    out = actor(table)
    first_stats = actor.featurizer.embedder.stats_.to_dict()
    name, (hashes,) = collector.calls[1]
    assert name == "add_texts" and len(collector.calls) == 3
    # the machine the model ran on, once per actor, as the local engine's manifest records it
    assert collector.calls[2] == ("add_machine", (socket.gethostname(), run_facts(32, 37)))  # tiny_bert: 32 x 37
    assert "matmul_gflops" in collector.calls[2][1][1]  # measured after the model ran
    actor(table)
    assert [name for name, _ in collector.calls[3:]] == ["add_texts"]  # told once
    np.testing.assert_array_equal(hashes, np.concatenate([text_hashes(["the cat", "a dog", "the cat"]),
                                                          text_hashes(["x", "the cat", "y"])]))
    want = pa.Table.from_batches([ArrowFeaturizer(["review", "title"], ["id"], model=tiny_bert)(table)])
    assert out.column_names == want.column_names + [bray.STATS_COL]
    assert out.schema.field(bray.STATS_COL).type == pa.string()
    stats = out.column(bray.STATS_COL).to_pylist()
    assert stats[1:] == [None, None]
    counted = json.loads(stats[0])
    # the forward passes that ran this batch travel with its counts: one batch of the tiny model, on one arrangement
    passes = counted.pop("forward_pass")
    assert len(passes) == 1 and list(passes.values()) == [1], passes
    assert counted.pop("worker") == [socket.gethostname(), os.getpid()]  # and the worker that ran them
    assert counted == first_stats
    assert json.loads(stats[0])["rows"] == 6  # two text columns of three rows
    np.testing.assert_allclose(np.column_stack(out.columns[1:-1]), np.column_stack(want.columns[1:]), atol=1e-5)


def test_the_actor_reports_no_text_the_tokenizer_drops_whole_among_the_distinct_texts(drops_characters, fake_ray,
                                                                                      quiet_threads):
    # the job's unique_texts counted such a text, which the job reads as missing
    from tests.conftest import DROPPED

    fake_ray()
    collector = Recorder()
    table = pa.table({"review": ["the cat", DROPPED[0], "", "a dog"], "title": [DROPPED[1], "x", "the cat", None]})
    actor = bray.RayFeaturizer(["review", "title"], [], "columns", threads=1,
                               params={"model": drops_characters, "missing": "zero"}, collector=collector)
    actor(table)
    name, (hashes,) = collector.calls[1]
    assert name == "add_texts"
    np.testing.assert_array_equal(np.unique(hashes), np.sort(text_hashes(["the cat", "a dog", "x"])))


def test_the_actor_of_a_dataset_job_adds_no_counts_and_an_empty_batch_no_stats(tiny_bert, fake_ray, quiet_threads):
    fake_ray()
    table = pa.table({"review": ["a", "b"]})
    alone = bray.RayFeaturizer(["review"], [], "list", threads=1, params={"model": tiny_bert})
    assert alone.collector is None and alone(table).column_names == ["review_embedding"]
    collector = Recorder()
    actor = bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert}, collector=collector)
    out = actor(table.slice(0, 0))
    assert out.num_rows == 0 and bray.STATS_COL not in out.column_names
    assert [name for name, _ in collector.calls] == ["add_worker", "add_texts"]


def test_the_actor_warns_of_truncation_once_and_passes_other_warnings_on(tiny_bert, fake_ray, quiet_threads):
    from bertfeat.arrow import ArrowFeaturizer

    fake_ray()
    long = "word " * 200  # past the tiny model's 64 tokens
    batch = pa.table({"review": [long, "short"]})
    with pytest.warns(TruncationWarning) as core:
        ArrowFeaturizer(["review"], [], model=tiny_bert)(batch)
    actor = bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert})
    other = UserWarning("something else")

    class AlsoWarns:
        def __init__(self, inner):
            self.inner, self.text_cols, self.embedder = inner, inner.text_cols, inner.embedder

        def __call__(self, table):
            warnings.warn(other)
            return self.inner(table)

    actor.featurizer = AlsoWarns(actor.featurizer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        actor(batch)
        actor(batch)
    truncation = [w for w in caught if issubclass(w.category, TruncationWarning)]
    assert [str(w.message) for w in truncation] == [f"{core[0].message} (warned once per Ray worker)"]
    assert [w.message for w in caught if w.category is UserWarning] == [other, other]
    assert actor.truncation_warned is True


def test_the_actor_hands_a_bad_input_to_the_job_as_raised(tiny_bert, fake_ray, quiet_threads):
    fake_ray()
    collector = Recorder()
    actor = bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert}, collector=collector)
    with pytest.raises(ValueError, match=r"missing \(None\) and missing='error'") as info:
        actor(pa.table({"review": ["fine", None]}))
    assert collector.calls[-1] == ("add_mistake", (info.value,))
    with pytest.raises(ValueError) as info:  # a bad parameter, when the actor is built
        bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert, "pooling": 3},
                           collector=collector)
    assert collector.calls[-1] == ("add_mistake", (info.value,))
    with pytest.raises(ValueError):  # with no job to tell, raised all the same
        bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert, "pooling": "most"})


# -- the sink --------------------------------------------------------------------------------------------------------


def test_the_sink_writes_a_tasks_blocks_in_order_to_one_file_and_their_counts_beside_it(fake_ray, tmp_path):
    ray = fake_ray()
    sink = ray_files._ordered_parquet_sink(ray, tmp_path / "data")
    assert (tmp_path / "data").is_dir() and sink.get_name() == "BertfeatParquet"
    stats = [json.dumps({"rows": 2}), json.dumps({"rows": 1})]
    blocks = [
        pa.table({"id": [1, 2], bray.STATS_COL: [stats[0], None]}),
        pa.table({"id": pa.array([], pa.int64()), bray.STATS_COL: pa.array([], pa.string())}),  # empty: skipped
        pa.table({"id": [3], bray.STATS_COL: [stats[1]]}),
    ]
    sink.write(iter(blocks), SimpleNamespace(task_idx=12))
    sink.write(iter([pa.table({"id": [9]})]), SimpleNamespace(task_idx=3))  # a dataset job's rows carry no counts
    sink.write(iter([blocks[1]]), SimpleNamespace(task_idx=4))  # nothing to write: no file
    files = sorted((tmp_path / "data").iterdir())
    names = [f.name for f in files]
    assert len(names) == 3
    data3, data12, stats12 = files
    assert data3.name.startswith("part-000003-") and data3.suffix == ".parquet"
    assert data12.name.startswith("part-000012-") and data12.name.endswith(".parquet")
    assert data12.name.split("-")[2] == data3.name.split("-")[2]  # one write id for the job's files
    assert stats12 == ray_files._stats_file(data12)
    assert pq.read_table(data12).to_pydict() == {"id": [1, 2, 3]}  # the counts column taken off, order kept
    assert pq.read_table(data3).to_pydict() == {"id": [9]}
    assert json.loads(stats12.read_text()) == stats
    other = ray_files._ordered_parquet_sink(ray, tmp_path / "data")
    other.write(iter([pa.table({"id": [1]})]), SimpleNamespace(task_idx=0))
    ids = {f.name.split("-")[2] for f in (tmp_path / "data").glob("*.parquet")}
    assert len(ids) == 2  # each write has its own id: a retried job's files never collide with a dead one's


# -- embed_dataset and a whole file job on FakeRay -------------------------------------------------------------------


def test_embed_dataset_hands_ray_the_plan_and_the_actor_its_arguments(tiny_bert, fake_ray, quiet_threads, tmp_path):
    ray = fake_ray(cpus=(16.0, 16.0), gpus=(0.0, 0.0))
    table = pa.Table.from_pandas(frame(30), preserve_index=False)
    ds = FakeDataset(ray, table)
    feats = bray.embed_dataset(ds, "review", "id", num_workers=4, batch_rows=7, model=tiny_bert,
                               cache_dir=str(tmp_path / "c"))
    assert ray.inits == [{}]  # a Ray not started yet is started with its defaults
    assert ray.selected == [["id", "review"]]
    kw = ray.mapped[0]
    assert feats.fn is bray.RayFeaturizer and kw["batch_format"] == "pyarrow" and kw["batch_size"] == 7
    assert kw["compute"].size == 4 and kw["num_cpus"] == 7.0 and kw["num_gpus"] == 0.0
    from bertfeat.arrow import ArrowFeaturizer
    from bertfeat.worker_recipe import driver_recipe

    # the driver's recipe, which each actor checks its own against, dtype="auto" fixed for CPU workers
    expected = driver_recipe(ArrowFeaturizer(["review"], ["id"], model=tiny_bert).recipe, "float32",
                             {"model": str(Path(tiny_bert).resolve())})  # and the ids its tokenizer gives here
    assert expected["weights_sha256"] and expected["dtype"] == "float32"
    assert kw["fn_constructor_kwargs"] == dict(
        text_cols=["review"], keep_cols=["id"], layout="columns", threads=7, collector=None, gpu_share=0.0,
        params={"model": str(Path(tiny_bert).resolve()), "cache_dir": str((tmp_path / "c").resolve()),
                "device": "cpu", "dtype": "float32"}, expected=expected, auto_dtype=None)
    assert set(kw) == {"fn_constructor_kwargs", "batch_format", "batch_size", "compute", "num_cpus", "num_gpus"}


def test_embed_dataset_with_gpus_and_a_list_layout(tiny_bert, fake_ray, monkeypatch):
    import bertfeat.gpu

    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: True)  # the GPU the driver's task asks
    ray = fake_ray(cpus=(16.0,), gpus=(2.0,), initialized=True)
    ds = FakeDataset(ray, pa.table({"t": ["a"], "u": ["b"], "k": [1], "j": [2]}))
    collector = object()
    bray.embed_dataset(ds, ["t", "u"], ["k", "t"], gpus_per_worker=0.5, layout="list", model=tiny_bert,
                       _collector=collector)
    assert ray.inits == []  # a running Ray is used as it is
    assert ray.selected == [["k", "t", "u"]]  # each column once, kept columns first
    kw = ray.mapped[0]
    assert kw["compute"].size == 4 and kw["num_cpus"] == 1.0 and kw["num_gpus"] == 0.5 and kw["batch_size"] == 10_000
    ctor = kw["fn_constructor_kwargs"]
    assert ctor["layout"] == "list" and ctor["collector"] is collector and ctor["gpu_share"] == 0.5
    assert ctor["params"]["device"] == "cuda" and ctor["threads"] == 1 and ctor["params"]["dtype"] == "bfloat16"
    assert ctor["text_cols"] == ["t", "u"] and ctor["keep_cols"] == ["k", "t"]
    assert {"num_gpus": 0.5, "num_cpus": 0} in ray.actor_options  # dtype="auto" asked of a GPU of the cluster


def test_embed_dataset_checks_before_any_actor_starts(tiny_bert, fake_ray):
    ray = fake_ray()
    ds = FakeDataset(ray, pa.table({"review": ["a"], "n": [1]}))
    for rows in (0, -1, 1.5, "10", None, True):
        with pytest.raises(ValueError, match=rf"batch_rows={rows!r} is not valid: expected a positive number of rows"):
            bray.embed_dataset(ds, "review", batch_rows=rows, model=tiny_bert)
    # the pool's numbers too (they were refused once Ray had started)
    for option, value in [("num_workers", 0), ("cpus_per_worker", -1), ("gpus_per_worker", "1")]:
        with pytest.raises(ValueError, match=rf"^{option}={value!r} is not valid: expected"):
            bray.embed_dataset(ds, "review", model=tiny_bert, **{option: value})
    assert ray.inits == []  # refused before Ray starts
    with pytest.raises(ValueError, match=r"column\(s\) \['body'\] not found"):
        bray.embed_dataset(ds, "body", model=tiny_bert)
    with pytest.raises(TypeError, match="text column 'n' holds int64 values"):
        bray.embed_dataset(ds, "n", model=tiny_bert)
    with pytest.raises(ValueError, match="device='cuda' needs GPUs from Ray"):
        bray.embed_dataset(ds, "review", model=tiny_bert, device="cuda")
    unknown = FakeDataset(ray, pa.table({"review": [1]}), known_schema=False)  # checked by the actors then
    bray.embed_dataset(unknown, "review", model=tiny_bert)
    assert ray.mapped and not ray.mapped[:-1]


def test_the_text_columns_are_text_cols_as_on_spark_and_the_old_text_col_still_works_with_a_future_warning(
        tiny_bert, fake_ray, tmp_path):
    """(found by the Ray and Spark hunt, 2026-11-27, session 16) ``ray.embed_dataset`` and ``ray.embed_parquet``
    took ``text_col=`` where ``spark.embed_dataframe``, ``spark.embed_files`` and ``files.embed_file`` take
    ``text_cols=``: a call moved from one engine to the other by name failed with "BertEmbedder.__init__() got an
    unexpected keyword argument". Now ``text_cols`` everywhere; ``text_col=`` is read, with a FutureWarning."""
    ray = fake_ray()
    ds = FakeDataset(ray, pa.table({"t": ["a"], "u": ["b"], "k": [1]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns of nothing
        bray.embed_dataset(ds, text_cols=["t", "u"], keep_cols="k", model=tiny_bert)
    assert ray.mapped[-1]["fn_constructor_kwargs"]["text_cols"] == ["t", "u"]
    with pytest.warns(FutureWarning) as said:
        bray.embed_dataset(ds, text_col="u", keep_cols="k", model=tiny_bert)
    assert ray.mapped[-1]["fn_constructor_kwargs"]["text_cols"] == ["u"]
    assert [str(w.message) for w in said] == [
        "text_col= is now text_cols= in embed_dataset(), as in bertfeat.spark and bertfeat.files.embed_file; "
        "text_col= will be removed in a future version: pass text_cols=."]
    assert said[0].filename == __file__  # said of the caller's line
    with pytest.raises(TypeError) as info:
        bray.embed_dataset(ds, "t", text_col="u", model=tiny_bert)
    assert str(info.value) == "embed_dataset() got text_cols='t' and text_col='u', its old name: pass text_cols= alone."
    with pytest.raises(TypeError) as info:
        bray.embed_dataset(ds, keep_cols="k", model=tiny_bert)
    assert str(info.value) == ("embed_dataset() missing 1 required argument: 'text_cols' (the text column or columns "
                               "to embed).")
    # embed_parquet alike: the column given by either name is the one the job reads (refused here by its name)
    src = write_input(tmp_path, pd.DataFrame({bray.STATS_COL: ["a"]}), files=1)
    with pytest.raises(ValueError, match=f"column {bray.STATS_COL!r} has the name the Ray engine carries"):
        bray.embed_parquet(src, tmp_path / "o", text_cols=bray.STATS_COL, model=tiny_bert)
    with pytest.warns(FutureWarning, match=r"^text_col= is now text_cols= in embed_parquet\(\)"), \
            pytest.raises(ValueError, match=f"column {bray.STATS_COL!r} has the name the Ray engine carries"):
        bray.embed_parquet(src, tmp_path / "o", text_col=bray.STATS_COL, model=tiny_bert)
    with pytest.warns(FutureWarning), pytest.raises(TypeError, match=r"^text_col=5 is not valid: expected a column"):
        bray.embed_parquet(src, tmp_path / "o", text_col=5, model=tiny_bert)  # named as the caller named it
    assert not (tmp_path / "o.partial").exists()


def write_input(tmp_path, df, files=2):
    (tmp_path / "in").mkdir()
    step = -(-len(df) // files)
    for k in range(files):
        df.iloc[k * step:(k + 1) * step].to_parquet(tmp_path / "in" / f"{k}.parquet", index=False)
    return tmp_path / "in"


def test_a_file_job_on_fake_ray_writes_what_the_local_engine_writes(tiny_bert, fake_ray, quiet_threads, tmp_path,
                                                                    capsys):
    from bertfeat.files import embed_file

    df = frame(45, seed=1)
    df.loc[[4, 30], "review"] = None
    df.loc[7, "review"] = "long words here " * 30  # truncated at 64 tokens
    src = write_input(tmp_path, df)
    local = embed_file(src, tmp_path / "local.parquet", ["review"], keep_cols=["id"], chunk_rows=8, model=tiny_bert,
                       missing="zero", quiet=True)
    ray = fake_ray(cpus=(3.0,))
    ray.retried.add(2)  # the third batch is run twice, as when Ray restarts a dead worker
    ray.rewritten.add(1)  # and the second write task is written twice
    (tmp_path / "out.partial" / "data").mkdir(parents=True)
    (tmp_path / "out.partial" / "data" / "dead-run.parquet").write_bytes(b"left by a killed run")
    with pytest.warns(TruncationWarning, match=r"\(warned once per Ray worker\)"):
        manifest = bray.embed_parquet(src, tmp_path / "out", "review", keep_cols="id", batch_rows=8, num_workers=2,
                                      model=tiny_bert, missing="zero")
    out = tmp_path / "out"
    assert not (tmp_path / "out.partial").exists() and sorted(p.suffix for p in out.iterdir()) == [".parquet"] * 3
    got, want = pq.read_table(out), pq.read_table(tmp_path / "local.parquet")
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.column("id").to_pylist() == df["id"].tolist()
    np.testing.assert_allclose(np.column_stack(got.columns[1:]), np.column_stack(want.columns[1:]), atol=1e-5)

    # Ray was started for the job and stopped after it, the counting actor reserved no CPU and was killed
    assert ray.inits == [{"logging_level": logging.INFO, "log_to_driver": True}] and ray.shutdowns == 1
    assert ray.actor_options == [{"num_cpus": 0}] and len(ray.killed) == 1
    files = sorted(src.glob("*.parquet"))
    assert ray.read == [([str(f.resolve()) for f in files],
                         {"partitioning": None, "file_extensions": [s.lstrip(".") for s in PARQUET_SUFFIXES],
                          "schema": pa.schema([("id", pa.int64()),  # the local engine's (pandas' string type)
                                                     ("review", pq.read_schema(files[0]).field("review").type)])})]
    assert ray.mapped[0]["fn_constructor_kwargs"]["params"]["cache_dir"] == str(tmp_path / "out.partial" / "cache")

    assert manifest == json.loads((tmp_path / "out.manifest.json").read_text())
    assert manifest["output"] == str(out) and manifest["engine"] == "ray"
    assert manifest["input"] == local["input"] and manifest["provenance"] == local["provenance"]
    assert manifest["provenance"] == json.loads(got.schema.metadata[b"bertfeat"])
    counts = manifest["counts"]
    for key in ("rows", "texts", "unique_texts", "unique_texts_exact", "missing", "truncated", "chunked",
                "rows_resumed"):
        assert counts[key] == local["counts"][key], key
    assert counts["rows"] == 45 and counts["missing"] == 2 and counts["truncated"] == 1 and counts["chunks"] == 6
    # the batch run twice found its texts in the run's cache the first time left: hits, not a second embedding
    assert counts["embedded"] + counts["cache_hits"] == local["counts"]["embedded"] + local["counts"]["cache_hits"]
    assert counts["cache_hits"] > 0
    assert set(manifest["timing"]) == {"seconds", "embed_seconds", "machine", "forward_pass"}
    assert 0 < manifest["timing"]["embed_seconds"] <= manifest["timing"]["seconds"]
    # as the local engine's: the machine the workers ran on (one here: the facts themselves), and the forward
    # passes of the batches written, by arrangement (the batch run twice answered from the cache the second time)
    assert manifest["timing"]["machine"] == local["timing"]["machine"] == run_facts(32, 37)
    passes, local_passes = manifest["timing"]["forward_pass"], local["timing"]["forward_pass"]
    assert set(passes) == set(local_passes) and 0 < sum(passes.values()) <= sum(local_passes.values())
    assert manifest["chunk_rows"] == 8 and manifest["cache_dir"] is None
    workers = manifest["ray"].pop("workers")
    assert manifest["ray"] == {"num_workers": 2, "cpus": 1.0, "gpus": 0.0, "threads": 1, "device": "cpu", "files": 3,
                               "preserve_order": True}
    # each actor's own forward passes (both actors in this one process here: the job's, each)
    assert workers == [{"host": socket.gethostname(), "pid": os.getpid(), "device": "cpu", "threads": 1,
                        "dtype": "float32", "libraries": libraries(), "forward_pass": passes}] * 2
    assert libraries().startswith("transformers ") and ", torch " in libraries()  # each worker's own
    err = capsys.readouterr().err
    assert err.startswith(f"bertfeat embed: wrote {out} (45 rows x ")


def test_files_whose_types_differ_are_read_by_ray_in_the_local_engines_wider_types(tiny_bert, fake_ray,
                                                                                   quiet_threads, tmp_path):
    """(found by a schemas hunt, 2026-11-26, session 8) Ray reads each file in its own types (int32 ids in one,
    int64 in the other, a category text beside a string): the driver hands Ray the local engine's one type per
    column (tests/test_schemas.py), so each block, each part file and the output have the local engine's types and
    values."""
    from bertfeat.files import embed_file
    from tests.test_schemas import WIDENED, mixed_rows, write_mixed_types

    src = write_mixed_types(tmp_path / "in")
    keep = ["id", "n", "score", "at"]
    embed_file(src, tmp_path / "local.parquet", "review", keep_cols=keep, chunk_rows=2, model=tiny_bert, quiet=True)
    ray = fake_ray(cpus=(2.0,))
    bray.embed_parquet(src, tmp_path / "out", "review", keep_cols=keep, batch_rows=2, num_workers=1, model=tiny_bert,
                       quiet=True)
    assert ray.read[0][1]["schema"] == pa.schema([WIDENED.field(c) for c in keep + ["review"]])
    got, want = pq.read_table(tmp_path / "out"), pq.read_table(tmp_path / "local.parquet")
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.select(keep).to_pydict() == want.select(keep).to_pydict() == {c: mixed_rows()[c] for c in keep}
    np.testing.assert_allclose(np.column_stack(got.columns[4:]), np.column_stack(want.columns[4:]), atol=1e-5)


def test_category_columns_of_other_categories_in_each_file_come_out_as_the_local_engines(tiny_bert, fake_ray,
                                                                                         quiet_threads, tmp_path):
    """(found by a schemas hunt, 2026-11-26, session 8) pandas' int8 category codes of two files, joined into one
    batch, failed the job ("These dictionaries cannot be combined"); read in the local engine's 32-bit dictionary."""
    from bertfeat.files import embed_file
    from tests.test_schemas import write_categories

    src = write_categories(tmp_path / "in")
    embed_file(src, tmp_path / "local.parquet", "review", keep_cols=["id", "label"], chunk_rows=150, model=tiny_bert,
               quiet=True)
    fake_ray(cpus=(2.0,))
    bray.embed_parquet(src, tmp_path / "out", "review", keep_cols=["id", "label"], batch_rows=150, num_workers=1,
                       model=tiny_bert, quiet=True)
    got, want = pq.read_table(tmp_path / "out"), pq.read_table(tmp_path / "local.parquet")
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.select(["id", "label"]).to_pylist() == want.select(["id", "label"]).to_pylist()
    assert want.column("label").to_pylist()[98:102] == ["L0_98", "L0_99", "L1_0", "L1_1"]


def test_an_input_rewritten_while_ray_read_it_fails_the_job_and_puts_nothing_in_place(tiny_bert, fake_ray,
                                                                                        quiet_threads, tmp_path):
    """A parquet file rewritten while the job ran (as many rows, other texts) gave an output of no one version of
    the input, with the manifest recording the fingerprint of the new one, taken at the end."""
    src = write_input(tmp_path, frame(12, seed=2), files=1)
    fake_ray()
    real = ray_files._written_stats

    def rewritten_meanwhile(data_dir):
        frame(12, seed=3).to_parquet(src / "0.parquet", index=False)
        return real(data_dir)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(ray_files, "_written_stats", rewritten_meanwhile)
        with pytest.raises(ValueError, match=r"changed while the job read it .*run the same command again"):
            bray.embed_parquet(src, tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.manifest.json").exists()
    manifest = bray.embed_parquet(src, tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert manifest["input"]["files"][0][1:] == [(src / "0.parquet").stat().st_size,
                                                 (src / "0.parquet").stat().st_mtime_ns]


def test_a_job_stopped_before_its_manifest_is_refused_saying_so_and_overwrite_takes_its_texts_from_the_cache(
        tiny_bert, fake_ray, quiet_threads, tmp_path, monkeypatch):
    """(found by the file systems and engines hunt, 2026-11-27, session 17) Spark's twin
    (test_spark_driver.py's): a job stopped after moving its output folder into place, before its manifest, was
    refused "exists" on rerun, its cache removed, so overwrite embedded every text again. Now the rerun says what
    happened, and with overwrite takes every text from the cache."""
    src = write_input(tmp_path, frame(12, seed=2), files=1)
    fake_ray()
    out, manifest_path = tmp_path / "out", tmp_path / "out.manifest.json"
    real = ray_files._atomic_write_bytes

    def stopped_at_the_manifest(path, data):
        if Path(path) == manifest_path:
            raise KeyboardInterrupt
        return real(path, data)

    monkeypatch.setattr(ray_files, "_atomic_write_bytes", stopped_at_the_manifest)
    with pytest.raises(KeyboardInterrupt):
        bray.embed_parquet(src, out, "review", model=tiny_bert, quiet=True)
    monkeypatch.setattr(ray_files, "_atomic_write_bytes", real)
    written = pq.read_table(out)
    assert not manifest_path.exists() and (tmp_path / "out.partial" / "cache").is_dir()
    with pytest.raises(FileExistsError, match=r"exists without its manifest \(out\.manifest\.json\), and out\.partial"):
        bray.embed_parquet(src, out, "review", model=tiny_bert, quiet=True)
    manifest = bray.embed_parquet(src, out, "review", model=tiny_bert, quiet=True, overwrite=True)
    assert manifest["counts"]["embedded"] == 0 and manifest["counts"]["cache_hits"] > 0  # the model ran for none
    assert json.loads(manifest_path.read_text()) == manifest and not (tmp_path / "out.partial").exists()
    assert pq.read_table(out).equals(written)


def test_an_output_folder_that_is_a_symlink_is_replaced_where_it_points_and_the_link_stays(tiny_bert, fake_ray,
                                                                                          quiet_threads, tmp_path):
    """``--out`` a link to a folder on a bigger disk: the job failed at its very end, renaming its folder over the
    link (``NotADirectoryError``, a dangling link on the first run), and with --overwrite the link was moved aside
    and rmtree refused it once the new folder stood at its name. The link is followed, as the local engine's."""
    src = write_input(tmp_path, frame(12, seed=2), files=1)
    fake_ray()
    (tmp_path / "big").mkdir()
    target, link = tmp_path / "big" / "out", tmp_path / "out"
    link.symlink_to(target, target_is_directory=True)
    bray.embed_parquet(src, link, "review", model=tiny_bert, quiet=True)
    first = pq.read_table(target)
    manifest = bray.embed_parquet(src, link, "review", model=tiny_bert, quiet=True, overwrite=True, pooling="cls")
    assert link.is_symlink() and link.resolve() == target and manifest["output"] == str(target)
    assert not pq.read_table(target).equals(first) and (tmp_path / "big" / "out.manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big", "in", "out"]


def test_a_quiet_job_on_a_running_ray_with_the_users_cache(tiny_bert, fake_ray, quiet_threads, tmp_path, capsys):
    src = write_input(tmp_path, frame(12, seed=2), files=1)
    ray = fake_ray(initialized=True)
    manifest = bray.embed_parquet(src, tmp_path / "out", ["review", "title"], layout="list", preserve_order=False,
                                  quiet=True, model=tiny_bert, cache_dir=str(tmp_path / "mine"))
    assert ray.inits == [] and ray.shutdowns == 0  # a Ray the caller started is left running
    assert capsys.readouterr().err == ""
    assert manifest["cache_dir"] == str(tmp_path / "mine") and (tmp_path / "mine").is_dir()
    assert manifest["ray"]["preserve_order"] is False and manifest["chunk_rows"] == 10_000
    assert manifest["counts"]["texts"] == 24 and manifest["counts"]["rows"] == 12
    assert pq.read_table(tmp_path / "out").column_names == ["review_embedding", "title_embedding"]

    ray = fake_ray()
    bray.embed_parquet(src, tmp_path / "out2", "review", quiet=True, model=tiny_bert)
    assert ray.inits == [{"logging_level": logging.ERROR, "log_to_driver": False}] and ray.shutdowns == 1


def test_a_slow_dtype_a_worker_finds_is_said_by_the_driver_once_per_host_even_when_quiet(tiny_bert, fake_ray,
                                                                                         quiet_threads, tmp_path,
                                                                                         monkeypatch):
    """``--engine ray --dtype bfloat16 --quiet`` on CPUs where bfloat16 is slower than float32: each worker's
    SlowDtypeWarning went to its own stderr, which a quiet job does not forward (``log_to_driver=False``), so the
    user never heard of it (the local engine says it under --quiet as well). The driver now says it, once per host."""
    import bertfeat.backend
    import bertfeat.hardware
    from bertfeat.exceptions import SlowDtypeWarning

    said = "dtype='bfloat16' runs slower than float32 on this CPU: measured 1 GFLOP/s against 2 GFLOP/s."
    monkeypatch.setattr(bertfeat.hardware, "slow_dtype_message", lambda dtype, rates: said)
    monkeypatch.setattr(bertfeat.backend, "_REGISTRY", {})  # a model loaded by another test warns no more
    src = write_input(tmp_path, frame(20, seed=4), files=1)
    ray = fake_ray()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bray.embed_parquet(src, tmp_path / "out", "review", batch_rows=5, num_workers=2, model=tiny_bert,
                           dtype="bfloat16", quiet=True)
    assert ray.inits == [{"logging_level": logging.ERROR, "log_to_driver": False}]
    slow = [str(w.message) for w in caught if issubclass(w.category, SlowDtypeWarning)]
    assert slow == [f"{said} (a Ray worker on host {socket.gethostname()!r})"]

def test_a_slow_dtype_said_where_warnings_are_errors_comes_after_the_output_is_whole(tiny_bert, fake_ray,
                                                                                   quiet_threads, tmp_path,
                                                                                   monkeypatch):
    """The driver said the workers' SlowDtypeWarning before putting the written features in place: where its
    warnings are errors (python -W error; the workers, other processes, recording theirs) the job stopped on its
    own notice with every batch written, no output and no manifest. Now it is said once the output is whole."""
    import bertfeat.backend
    import bertfeat.hardware
    from bertfeat.exceptions import SlowDtypeWarning

    said = "dtype='bfloat16' runs slower than float32 on this CPU: measured 1 GFLOP/s against 2 GFLOP/s."
    monkeypatch.setattr(bertfeat.hardware, "slow_dtype_message", lambda dtype, rates: said)
    monkeypatch.setattr(bertfeat.backend, "_REGISTRY", {})
    src = write_input(tmp_path, frame(20, seed=4), files=1)
    fake_ray()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r".*\(a Ray worker on host", category=SlowDtypeWarning)  # the driver's
        with pytest.raises(SlowDtypeWarning, match=r"\(a Ray worker on host"):
            bray.embed_parquet(src, tmp_path / "out", "review", batch_rows=5, num_workers=2, model=tiny_bert,
                               dtype="bfloat16", quiet=True)
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    assert manifest["counts"]["rows"] == 20 and manifest["provenance"]["dtype"] == "bfloat16"
    assert pq.read_table(tmp_path / "out").num_rows == 20


def test_a_read_only_cache_a_worker_reads_is_said_by_the_driver_even_when_quiet(tiny_bert, fake_ray, quiet_threads,
                                                                                tmp_path, monkeypatch):
    """A complete cache on a read-only mount (session 15: read, not refused) is said to the local engine's user, one
    CacheWarning saying that new texts are not stored and how to keep them. On the Ray engine each worker's went to
    its own stderr, which a quiet job does not forward: the job stored nothing and said nothing. The driver now says
    it, once per host, as it says a slow dtype."""
    from bertfeat.exceptions import CacheWarning
    from bertfeat.files import embed_file
    from tests.test_cache_values import read_only_cache

    team = tmp_path / "team"
    df = frame(20, seed=4)
    src = write_input(tmp_path, df, files=1)
    df[:12].to_parquet(tmp_path / "held.parquet")  # a cache that holds 12 of its 20 texts
    embed_file(tmp_path / "held.parquet", tmp_path / "held-out.parquet", "review", model=tiny_bert, quiet=True,
               cache_dir=str(team))
    before = sorted(p.relative_to(team) for p in team.rglob("*"))
    read_only_cache(monkeypatch, team)
    ray = fake_ray()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manifest = bray.embed_parquet(src, tmp_path / "out", "review", batch_rows=5, num_workers=2, model=tiny_bert,
                                      quiet=True, cache_dir=str(team))
    assert ray.inits == [{"logging_level": logging.ERROR, "log_to_driver": False}]
    said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert said == [f"bertfeat cache: cache_dir={str(team)!r} ({team}) is on a read-only file system: the vectors it "
                    "holds are used, and those of texts it does not hold are computed and not stored. To keep them, "
                    "pass a folder this user may write to as cache_dir= (a copy of this one keeps its vectors). "
                    f"(a Ray worker on host {socket.gethostname()!r})"]
    assert sorted(p.relative_to(team) for p in team.rglob("*")) == before  # nothing stored
    assert manifest["counts"]["cache_hits"] > 0 and manifest["counts"]["rows"] == 20


def test_every_part_file_a_job_writes_is_flushed_before_its_output_is_put_in_place(tiny_bert, fake_ray, quiet_threads,
                                                                                   tmp_path, monkeypatch):
    """The sink wrote each part file and never flushed it, where the local engine and Spark's tasks flush each part
    before it is put in place: after a power cut (or a crash of the NFS client that cached its bytes) the output
    folder and its manifest could be there with part files empty or cut short."""
    real_fsync, flushed = os.fsync, set()

    def fsync(fd):
        flushed.add(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    fake_ray()
    src = write_input(tmp_path, frame(20, seed=4), files=2)
    bray.embed_parquet(src, tmp_path / "out", "review", batch_rows=5, num_workers=2, model=tiny_bert, quiet=True)
    parts = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert parts and all(p.endswith(".parquet") for p in parts)
    assert [p for p in parts if str(tmp_path / "out.partial" / "data" / p) not in flushed] == []


def test_a_workers_mistake_fails_the_job_as_the_local_engine_says_it(tiny_bert, fake_ray, quiet_threads, tmp_path):
    df = frame(20)
    df.loc[13, "review"] = None
    src = write_input(tmp_path, df, files=1)
    ray = fake_ray()
    with pytest.raises(ValueError) as info:  # the fourth row of the third batch: named by its row in the input
        bray.embed_parquet(src, tmp_path / "out", "review", batch_rows=5, model=tiny_bert, quiet=True)
    assert str(info.value).startswith("row 13 of column 'review' is missing (None) and missing='error'.")
    assert info.value.__suppress_context__
    from bertfeat.files import embed_file

    with pytest.raises(ValueError) as local:
        embed_file(src, tmp_path / "local.parquet", "review", chunk_rows=5, model=tiny_bert, quiet=True)
    assert str(info.value) == str(local.value)
    assert ray.shutdowns == 1 and not ray.initialized  # stopped on failure too
    assert not (tmp_path / "out").exists()


def test_a_failure_that_is_no_users_mistake_passes_through(tiny_bert, fake_ray, quiet_threads, tmp_path,
                                                           monkeypatch):
    src = write_input(tmp_path, frame(10), files=1)
    ray = fake_ray()

    def broken(self, sink):
        raise OSError("disk full")

    monkeypatch.setattr(Mapped, "write_datasink", broken)
    with pytest.raises(OSError, match="disk full"):
        bray.embed_parquet(src, tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert ray.shutdowns == 1 and not (tmp_path / "out").exists()


def test_a_file_job_is_refused_before_ray_starts(tiny_bert, fake_ray, tmp_path):
    ray = fake_ray()
    src = write_input(tmp_path, frame(5), files=1)
    for rows in (0, 2.5, None):
        with pytest.raises(ValueError, match=rf"batch_rows={rows!r} is not valid: expected a positive number of rows"):
            bray.embed_parquet(src, tmp_path / "o", "review", batch_rows=rows, model=tiny_bert)
    csv = tmp_path / "in.csv"
    csv.write_text("review\nhello\n")
    with pytest.raises(ValueError) as info:
        bray.embed_parquet(csv, tmp_path / "o", "review", model=tiny_bert)
    assert str(info.value) == (f"input {str(csv)!r} is CSV: the Ray engine reads parquet only. Convert it to parquet "
                               "first, or use the local engine (bertfeat.files.embed_file).")
    pq.write_table(pa.table({"review": pa.array([], pa.string())}), tmp_path / "empty.parquet")
    with pytest.raises(ValueError) as info:
        bray.embed_parquet(tmp_path / "empty.parquet", tmp_path / "o", "review", model=tiny_bert)
    assert str(info.value) == f"input {str(tmp_path / 'empty.parquet')!r} has no rows to embed."
    with pytest.raises(ValueError, match="does not go with gpus_per_worker=1"):
        bray.embed_parquet(src, tmp_path / "o", "review", gpus_per_worker=1, device="cpu", model=tiny_bert)
    with pytest.raises(ValueError) as info:
        bray.embed_parquet(src, tmp_path / "o", "review", gpus_per_worker="1", device="cpu", model=tiny_bert)
    assert str(info.value) == "gpus_per_worker='1' is not valid: expected a number >= 0 (0 = CPU only)."
    # the pool's other numbers too: they were refused only once Ray had started, its part folder made
    for option, value, says in [("num_workers", 0, "num_workers=0 is not valid: expected a positive int, or None for "
                                                   "the default."),
                                ("cpus_per_worker", 0, "cpus_per_worker=0 is not valid: expected a number > 0, or "
                                                       "None."),
                                ("cpus_per_worker", "2", "cpus_per_worker='2' is not valid: expected a number > 0, "
                                                         "or None."),
                                ("gpus_per_worker", -0.5, "gpus_per_worker=-0.5 is not valid: expected a number >= 0 "
                                                          "(0 = CPU only).")]:
        with pytest.raises(ValueError) as info:
            bray.embed_parquet(src, tmp_path / "o", "review", model=tiny_bert, **{option: value})
        assert str(info.value) == says
    with pytest.raises(ValueError, match=r"column\(s\) \['body'\] not found"):
        bray.embed_parquet(src, tmp_path / "o", "body", model=tiny_bert)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x.parquet").write_bytes(b"")
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        bray.embed_parquet(src, tmp_path / "taken", "review", model=tiny_bert)
    # a '?' in a path: Ray Data read it as a URL query, and left that file out of a job of several files (the job
    # then failed after all the work: "the Ray workers wrote 16 rows for 18 input rows")
    (tmp_path / "in" / "why?.parquet").write_bytes((tmp_path / "in" / os.listdir(tmp_path / "in")[0]).read_bytes())
    with pytest.raises(ValueError) as info:
        bray.embed_parquet(tmp_path / "in", tmp_path / "o", "review", model=tiny_bert)
    assert str(info.value) == (
        f"Ray cannot read input file(s) [{str(tmp_path / 'in' / 'why?.parquet')!r}]: Ray Data takes a '?' in a path "
        "for the start of a URL query. Rename them (or their folder), or use the local or Spark engine.")
    assert ray.inits == [] and ray.mapped == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.parquet", "in", "in.csv", "taken"]


@pytest.mark.parametrize("option, value, says", [
    ("chunk_rows", 500, "chunk_rows= is the local engine's name (bertfeat.files.embed_file): the Ray engine's is "
                        "batch_rows=, rows per batch sent to a worker; pass batch_rows=500."),
    ("chunk_chars", 10_000, "chunk_chars= bounds the local engine's chunks (bertfeat.files.embed_file): the Ray engine "
                            "reads batches of batch_rows= rows, so a smaller batch_rows= bounds a batch's memory; "
                            "drop chunk_chars=."),
    ("checkpoint_seconds", 5, "checkpoint_seconds= applies to the local engine (bertfeat.files.embed_file): the Ray "
                              "engine resumes a stopped job through its cache; drop checkpoint_seconds=."),
    ("progress_every", 1.0, "progress_every= applies to the local engine (bertfeat.files.embed_file): the Ray engine "
                            "shows Ray's own progress (quiet=True hides it); drop progress_every=."),
    ("delimiter", ";", "delimiter= applies to CSV input, and the Ray engine reads parquet only; drop delimiter=."),
    ("infer_types", True, "infer_types= applies to CSV input, and the Ray engine reads parquet only; drop "
                          "infer_types=."),
])
def test_the_local_engines_file_options_are_refused_by_name_not_as_a_bertembedder_parameter(
        tiny_bert, fake_ray, tmp_path, option, value, says):
    """A job moved from ``bertfeat.files.embed_file`` keeps its options: they used to reach BertEmbedder, which
    said "BertEmbedder.__init__() got an unexpected keyword argument 'chunk_rows'" (after Ray's import)."""
    ray = fake_ray()
    src = write_input(tmp_path, frame(5), files=1)
    with pytest.raises(TypeError) as info:
        bray.embed_parquet(src, tmp_path / "o", "review", model=tiny_bert, **{option: value})
    assert str(info.value) == says
    assert ray.inits == [] and not (tmp_path / "o.partial").exists()
    with pytest.raises(TypeError) as info:
        bray.embed_dataset(FakeDataset(ray, pa.table({"review": ["a"]})), "review", model=tiny_bert,
                           **{option: value})
    if option in ("delimiter", "infer_types"):  # a Dataset is read already (from CSV or not): said so, not
        # BertEmbedder's "unexpected keyword argument 'delimiter'" (found reviewing the merge)
        says = (f"{option}= applies to reading a CSV file, and the data given to the Ray engine is read already; "
                f"drop {option}=.")
    assert str(info.value) == says


def test_an_output_another_job_put_in_place_before_the_lock_was_taken_is_not_replaced(tiny_bert, fake_ray, tmp_path,
                                                                                         monkeypatch):
    """--out was checked before the lock was taken: a job on the same --out that finished in between had its output
    replaced by this one's, without --overwrite and without a word."""
    ray = fake_ray()
    src = write_input(tmp_path, frame(5), files=1)
    out = tmp_path / "out"
    real_lock = ray_files.job_lock

    def the_other_job_finishes_first(paths):
        out.mkdir()
        (out / "part-000000.parquet").write_bytes(b"the other job's")
        return real_lock(paths)

    monkeypatch.setattr(ray_files, "job_lock", the_other_job_finishes_first)
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        bray.embed_parquet(src, out, "review", model=tiny_bert, quiet=True)
    assert ray.inits == [] and (out / "part-000000.parquet").read_bytes() == b"the other job's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]


def test_a_dataset_jobs_actor_says_a_bad_rows_number_is_the_batchs_and_names_its_kept_columns(tiny_bert, fake_ray,
                                                                                              quiet_threads):
    fake_ray()
    table = pa.table({"id": [7, 8, 9], "note": ["x", "y", "z"], "review": ["fine", None, "ok"]})
    actor = bray.RayFeaturizer(["review"], ["id", "note"], "columns", threads=1, params={"model": tiny_bert})
    with pytest.raises(ValueError) as info:
        actor(table)
    assert str(info.value).startswith("row 1 of column 'review' is missing (None) and missing='error'.")
    assert str(info.value).endswith(" (row 1 of the batch of 3 rows Ray sent this worker, not of the Dataset, which "
                                    "numbers no rows; that row has id=8, note='y')")
    bare = bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert})
    with pytest.raises(ValueError) as info:
        bare(table.select(["review"]))
    assert str(info.value).endswith(" (row 1 of the batch of 3 rows Ray sent this worker, not of the Dataset, which "
                                    "numbers no rows)")
    collector = Recorder()  # a file job: the driver names the input's row, the actor's words are left as they are
    filed = bray.RayFeaturizer(["review"], ["id"], "columns", threads=1, params={"model": tiny_bert},
                               collector=collector)
    with pytest.raises(ValueError) as info:
        filed(table)
    assert str(info.value).endswith("or fill the missing texts first.")
    with pytest.raises(ValueError, match="^pooling='most' is not valid"):  # no row named: as raised
        bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert, "pooling": "most"})


def test_a_dataset_jobs_error_of_a_type_that_wants_other_arguments_is_left_as_raised(tiny_bert, fake_ray,
                                                                                    quiet_threads):
    fake_ray()

    class Picky(ValueError):
        def __init__(self, message, code):
            super().__init__(message)

    actor = bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert})
    raised = Picky("row 1 is odd", 3)

    def fails(table):
        raise raised

    actor.featurizer = type("F", (), {"__call__": lambda self, t: fails(t), "keep_cols": []})()
    with pytest.raises(Picky) as info:
        actor(pa.table({"review": ["a", "b"]}))
    assert info.value is raised


def test_a_column_named_like_the_column_the_counts_travel_in_is_refused_not_lost(tiny_bert, fake_ray, quiet_threads,
                                                                                 tmp_path):
    """A batch's counts travel to the writer in a column of their own, dropped before the file is written: an input
    column of that name would be dropped with it (or make two columns of one name), so it is refused up front."""
    ray = fake_ray()
    df = frame(6)
    df[bray.STATS_COL] = [f"v{i}" for i in range(6)]
    src = write_input(tmp_path, df, files=1)
    with pytest.raises(ValueError) as info:
        bray.embed_parquet(src, tmp_path / "o", "review", keep_cols=["id", bray.STATS_COL], model=tiny_bert,
                           quiet=True)
    assert str(info.value) == (
        "column '__bertfeat_batch_stats__' has the name the Ray engine carries each batch's counts in; rename it, or "
        "use the local or Spark engine.")
    assert ray.inits == [] and not list(tmp_path.glob("o*"))


def test_a_worker_whose_node_holds_another_copy_of_the_model_fails_the_job_before_it_embeds(fake_ray, quiet_threads,
                                                                                             tmp_path):
    """A cluster's model folder is a local copy on each node, one of them stale: the driver checked and named one
    model while that node's actors embedded with another, refused only once every batch had run ("dtype='auto' may
    differ"), and in ``embed_dataset`` never. Each actor now compares the model files it read with the driver's
    before it embeds anything."""
    from tests.conftest import build_tiny_bert

    model = build_tiny_bert(tmp_path / "model")
    src = write_input(tmp_path, frame(12), files=1)
    ray = fake_ray(cpus=(3.0,))
    pool = ray.data.ActorPoolStrategy

    def stale_node(size):  # after the driver's checks, as the actors start: the copy they read has other weights
        build_tiny_bert(tmp_path / "model", seed=1)
        return pool(size)

    ray.data.ActorPoolStrategy = stale_node
    with pytest.raises(ValueError) as err:
        bray.embed_parquet(src, tmp_path / "out", "review", batch_rows=5, model=model, quiet=True)
    assert str(err.value).startswith(f"a Ray worker on host {socket.gethostname()!r} read other model files at "
                                     f"{model!r} than the driver did (weights: sha256 ")
    assert "config" not in str(err.value) and "tokenizer files" not in str(err.value)
    assert str(err.value).endswith("; nothing was embedded by this worker.")
    assert not (tmp_path / "out").exists() and not list((tmp_path / "out.partial").glob("data/*.parquet"))

    ray.data.ActorPoolStrategy = pool  # the copy as the driver's: the job runs
    build_tiny_bert(tmp_path / "model")
    assert bray.embed_parquet(src, tmp_path / "out", "review", batch_rows=5, model=model, quiet=True)[
        "counts"]["rows"] == 12

    # embed_dataset: the actor it describes refuses a stale node's copy when it starts
    feats = bray.embed_dataset(FakeDataset(ray, pa.table({"review": ["a text"]})), "review", model=model)
    build_tiny_bert(tmp_path / "model", seed=1)
    with pytest.raises(ValueError, match=r"read other model files at .* than the driver did \(weights: sha256 "):
        feats.fn(**feats.kw["fn_constructor_kwargs"])


def test_dtype_auto_is_fixed_once_on_the_driver_and_a_gpu_that_would_choose_otherwise_refused_as_it_starts(
        tiny_bert, fake_ray, quiet_threads, tmp_path, monkeypatch):
    """``dtype="auto"`` on GPU workers was resolved by each actor for its own GPU: a cluster mixing an A100 (bfloat16)
    and a T4 (float16) embedded every batch in two recipes and was refused only by the final check, the hours of
    work lost. The driver now fixes it once and names it in every actor's recipe; an actor whose GPU would choose
    otherwise refuses as it starts. A driver without a GPU (the suite's) asks one GPU of the cluster, in a Ray task:
    a cluster of T4s runs float16, as each of its workers chose before, not a guess of bfloat16 that refuses them."""
    import bertfeat.gpu

    answers = []  # what each GPU asked says: True where bfloat16 is native (an A100), False on a T4

    def native_bf16(index):
        return answers.pop(0)

    monkeypatch.setattr(bertfeat.gpu, "native_bf16", native_bf16)
    ray = fake_ray(cpus=(4.0, 4.0), gpus=(1.0, 1.0))
    answers[:] = [True]  # the GPU the driver's task lands on: an A100
    feats = bray.embed_dataset(FakeDataset(ray, pa.table({"review": ["a text"]})), "review", gpus_per_worker=1,
                               model=tiny_bert)
    assert answers == []  # the driver asked one GPU
    assert {"num_gpus": 1.0, "num_cpus": 0} in ray.actor_options
    kw = feats.kw["fn_constructor_kwargs"]
    assert kw["params"]["device"] == "cuda" and kw["params"]["dtype"] == "bfloat16" and kw["auto_dtype"] == "bfloat16"
    assert kw["expected"]["dtype"] == "bfloat16"
    answers[:] = [False]  # a cluster of T4s: float16, as each worker chose before
    t4 = bray.embed_dataset(FakeDataset(ray, pa.table({"review": ["a text"]})), "review", gpus_per_worker=1,
                            model=tiny_bert)
    kw = t4.kw["fn_constructor_kwargs"]
    assert kw["params"]["dtype"] == "float16" and kw["auto_dtype"] == "float16" and kw["expected"]["dtype"] == "float16"
    cpu = bray.embed_dataset(FakeDataset(ray, pa.table({"review": ["a text"]})), "review", model=tiny_bert)
    assert cpu.kw["fn_constructor_kwargs"]["params"]["dtype"] == "float32"  # CPU workers: float32, as before
    assert cpu.kw["fn_constructor_kwargs"]["auto_dtype"] is None
    ours = bray.embed_dataset(FakeDataset(ray, pa.table({"review": ["a text"]})), "review", gpus_per_worker=1,
                              model=tiny_bert, dtype="float16")
    assert ours.kw["fn_constructor_kwargs"]["params"]["dtype"] == "float16"  # the user's dtype stands
    assert ours.kw["fn_constructor_kwargs"]["auto_dtype"] is None
    assert answers == []  # neither asked a GPU

    # a file job on a mixed cluster: the driver's task lands on the A100, the first actor starts on a T4: refused
    # before its model loads, nothing written
    answers[:] = [True, False]
    src = write_input(tmp_path, frame(6), files=1)
    with pytest.raises(ValueError) as err:
        bray.embed_parquet(src, tmp_path / "out", "review", gpus_per_worker=1, model=tiny_bert, quiet=True)
    assert str(err.value) == (
        "dtype='auto' was fixed on the Ray driver as 'bfloat16' for workers on a GPU (the output's metadata names "
        "it), but this worker's GPU (cuda) runs 'float16' for dtype='auto': pass dtype='float16' "
        "to run every worker in it, or dtype='bfloat16' to run this one as the others.")
    assert not (tmp_path / "out").exists()


def test_an_actor_whose_libraries_tokenize_otherwise_fails_the_job_as_it_starts(tiny_bert, fake_ray, quiet_threads,
                                                                                tmp_path, monkeypatch):
    """Another transformers/tokenizers on a node reads the same tokenizer files into other ids, under the same recipe
    key: its actor now refuses as it starts (test_worker_recipe.py has the check itself)."""
    from tests.test_worker_recipe import other_release

    ray = fake_ray(cpus=(3.0,))
    pool = ray.data.ActorPoolStrategy

    def upgraded_node(size):  # after the driver's checks, as the actors start
        other_release(monkeypatch)
        return pool(size)

    ray.data.ActorPoolStrategy = upgraded_node
    src = write_input(tmp_path, frame(6), files=1)
    with pytest.raises(ValueError, match=r"^a Ray worker on host .* tokenizes texts into other ids than the driver"):
        bray.embed_parquet(src, tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert not (tmp_path / "out").exists()


def test_a_ray_a_job_started_is_stopped_only_when_no_other_threads_job_runs_on_it(tiny_bert, fake_ray, quiet_threads,
                                                                                  tmp_path):
    """Two jobs run from two threads (concurrent.futures, a web service) in a process without Ray: the first started
    Ray, the second found it running and used it, and the first, ending, shut Ray down under the second. Ray a job
    started is now stopped when the last job on it ends."""
    import threading

    src = write_input(tmp_path, frame(6, seed=3))
    ray = fake_ray(cpus=(2.0,))
    inside, release, states = threading.Event(), threading.Event(), []

    def second_job():
        bray.embed_parquet(src, tmp_path / "second", "review", model=tiny_bert, quiet=True, num_workers=1)

    def hold_the_second():  # the second job's write: it waits, running, until the first job has ended
        inside.set()
        assert release.wait(30)
        states.append(("second running", ray.initialized, ray.shutdowns))

    def start_the_second():
        ray.during = hold_the_second
        other = threading.Thread(target=second_job)
        other.start()
        assert inside.wait(30)
        return other

    threads = []
    ray.during = lambda: threads.append(start_the_second())  # the first job's write starts the second's
    bray.embed_parquet(src, tmp_path / "first", "review", model=tiny_bert, quiet=True, num_workers=1)
    states.append(("first ended", ray.initialized, ray.shutdowns))
    release.set()
    threads[0].join(30)
    assert states == [("first ended", True, 0), ("second running", True, 0)]
    assert ray.shutdowns == 1 and not ray.initialized and len(ray.inits) == 1  # once both jobs ended
    assert pq.read_table(tmp_path / "second").num_rows == pq.read_table(tmp_path / "first").num_rows == 6


def test_a_quiet_job_that_started_ray_puts_the_ray_loggers_level_back(tiny_bert, fake_ray, quiet_threads, tmp_path):
    """ray.init(logging_level=ERROR), a quiet job's, sets the level of the process's "ray" logger, and Ray leaves it
    so after shutdown: the user's own Ray messages in that process were hidden after the job. It is put back as the
    job stops Ray, unless another thread set a level meanwhile."""
    import threading

    src = write_input(tmp_path, frame(6, seed=4))
    log = logging.getLogger("ray")
    saved = log.level
    try:
        log.setLevel(logging.INFO)
        fake_ray(cpus=(2.0,))
        bray.embed_parquet(src, tmp_path / "out", "review", model=tiny_bert, quiet=True, num_workers=1)
        assert log.level == logging.INFO
        ray = fake_ray(cpus=(2.0,))

        def meanwhile():
            other = threading.Thread(target=log.setLevel, args=(logging.DEBUG,))
            other.start()
            other.join()

        ray.during = meanwhile
        bray.embed_parquet(src, tmp_path / "again", "review", model=tiny_bert, quiet=True, num_workers=1)
        assert log.level == logging.DEBUG  # the other thread's level stays
    finally:
        log.setLevel(saved)


@pytest.mark.parametrize("failing", ["__init__", "write_table"])
def test_a_full_disk_at_the_sinks_write_is_said_of_the_file_being_written(fake_ray, tmp_path, monkeypatch, failing):
    # pyarrow's error for a full disk names no file ("[Errno 28] Error writing bytes to file ..."): the local engine's
    # writes name theirs (flush.naming, session 15), the sink's did not, so a job failed naming no file of the
    # cluster's (the output's disk, a node's). Opening the file writes too (parquet's magic bytes)
    opened = []

    def full(self, where, *args, **kwargs):
        opened.append(os.fspath(self.where if failing == "write_table" else where))
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    if failing == "write_table":
        monkeypatch.setattr(pq.ParquetWriter, failing, lambda self, *args, **kwargs: full(self, None))
    else:
        monkeypatch.setattr(pq.ParquetWriter, failing, full)
    sink = ray_files._ordered_parquet_sink(fake_ray(), tmp_path / "data")
    with pytest.raises(OSError) as err:
        sink.write(iter([pa.table({"id": [1]})]), SimpleNamespace(task_idx=7))
    (written,) = opened
    assert os.path.basename(written).startswith("part-000007-") and os.path.dirname(written) == str(tmp_path / "data")
    assert (err.value.errno, err.value.filename) == (errno.ENOSPC, written)
    assert str(err.value) == (f"[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device: "
                              f"'{written}'")
