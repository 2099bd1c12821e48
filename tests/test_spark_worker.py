"""What runs inside Spark's Python workers, called in this process with a stand-in for Spark's TaskContext.

tests/test_spark.py runs the same functions in real Spark jobs, where a test sees only the job's output; here each
one is read value by value: the part file a task writes and what it yields, the threads and GPU a task takes, the
featurizer a worker keeps between tasks, the input's types restored.
"""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")

import bertfeat.spark as bspark  # noqa: E402
import bertfeat.spark_session as bsession  # noqa: E402
from bertfeat.arrow import ArrowFeaturizer  # noqa: E402
from bertfeat.encode import EncodeStats  # noqa: E402
from bertfeat.files import text_hashes  # noqa: E402
from bertfeat.worker_recipe import libraries  # noqa: E402


class FakeTask:
    """The parts of pyspark.TaskContext the worker functions read."""

    def __init__(self, partition=3, attempt=1, attempt_id=77, cpus=2, gpus=None):
        self.partition, self.attempt, self.attempt_id = partition, attempt, attempt_id
        self._cpus, self.gpus = cpus, gpus

    def partitionId(self):
        return self.partition

    def attemptNumber(self):
        return self.attempt

    def taskAttemptId(self):
        return self.attempt_id

    def cpus(self):
        return self._cpus

    def resources(self):
        return {} if self.gpus is None else {"gpu": SimpleNamespace(addresses=self.gpus)}


@pytest.fixture
def in_task(monkeypatch):
    """Run the worker functions as inside a Spark task: returns a setter for the task they see."""
    import bertfeat.backend  # noqa: F401 - imported first here, it would keep the patched set_threads for good
    import bertfeat.hardware

    threads = []

    def set_threads(n=None):  # torch's threads left alone; the task's own counts recorded
        if n is not None:  # not limit_threads_to_allotted_cores()'s call, which another test's state can bring
            threads.append(n)
        return n

    monkeypatch.setattr(bertfeat.hardware, "set_threads", set_threads)
    monkeypatch.setattr(bspark, "_WORKER", {"key": None, "featurizer": None, "loads": 0})

    def use(task):
        monkeypatch.setattr(pyspark.TaskContext, "get", classmethod(lambda cls: task))
        return threads

    use(FakeTask())
    return use


# -- the task's resources -----------------------------------------------------------------------------------------


def test_a_task_takes_its_cpus_as_threads_and_the_gpu_spark_gave_it(in_task):
    in_task(FakeTask(cpus=3))
    assert bspark._task_resources("auto") == (3, "cpu")  # no GPU assigned: the CPU, never a GPU another task holds
    in_task(FakeTask(cpus=0))
    assert bspark._task_resources("auto") == (1, "cpu")
    in_task(FakeTask(cpus=4, gpus=["1", "2"]))
    assert bspark._task_resources("auto") == (4, "cuda:1")
    assert bspark._task_resources("cpu") == (4, "cpu")  # a device the user named is kept
    assert bspark._task_resources("cuda:0") == (4, "cuda:0")
    in_task(FakeTask(cpus=2, gpus=[]))
    assert bspark._task_resources("auto") == (2, "cpu")
    in_task(None)  # called outside a task: this process's cores
    assert bspark._task_resources("auto") == (max(1, os.cpu_count() or 1), "cpu")
    assert bspark._task_resources("mps") == (max(1, os.cpu_count() or 1), "mps")


def test_a_gpu_device_the_user_named_is_the_tasks_assigned_gpu_or_refused_where_spark_gave_none(in_task):
    """``device="cuda"`` on an executor whose task Spark gave GPU 1 ran on GPU 0, beside the tasks given GPU 0 (Spark
    hides no GPU from a task, as Ray does); a task Spark gave no GPU, on an executor without one, failed in the
    model's load with "torch sees no CUDA GPU here", naming neither the Spark task nor Spark's GPU settings."""
    in_task(FakeTask(cpus=2, gpus=["1"]))
    assert bspark._task_resources("cuda") == (2, "cuda:1")
    assert bspark._task_resources("cuda:0") == (2, "cuda:0")  # an ordinal the user named is kept
    in_task(FakeTask(cpus=2))  # and this process sees no GPU (conftest)
    with pytest.raises(ValueError) as err:
        bspark._task_resources("cuda")
    assert str(err.value) == (
        "device='cuda' was asked for, but torch sees no CUDA GPU here; pass device='cpu' or device='auto'. (in a "
        f"Spark task on host {socket.gethostname()!r}, which Spark assigned no GPU: give the executors GPUs with "
        "spark.executor.resource.gpu.amount and spark.task.resource.gpu.amount, or pass "
        "device='auto' to use a GPU where Spark assigns one)")
    with pytest.raises(ValueError, match=r"^device='mps' was asked for, but MPS is not available here"):
        bspark._task_resources("mps")
    assert bspark._task_resources("cpu") == (2, "cpu")


def test_outside_a_task_the_threads_are_this_processs_cores_at_least_one(in_task, monkeypatch):
    in_task(None)
    for cores, threads in ((1, 1), (None, 1), (6, 6)):
        monkeypatch.setattr(bspark.os, "cpu_count", lambda cores=cores: cores)
        assert bspark._task_resources("auto") == (threads, "cpu")


# -- the input's types ----------------------------------------------------------------------------------------------


def test_spark_types_arrow_cannot_carry_are_named_as_no_text():
    from pyspark.sql.types import BinaryType, CalendarIntervalType, MapType, StringType, StructField, StructType

    schema = bspark._arrow_schema(StructType([StructField("t", StringType()), StructField("b", BinaryType()),
                                              StructField("m", MapType(StringType(), CalendarIntervalType()))]))
    assert schema == pa.schema([("t", pa.string()), ("b", pa.binary()), ("m", pa.struct([]))])


def test_columns_get_back_the_inputs_types_where_they_can(in_task):
    input_schema = pa.schema([("id", pa.int64()), ("code", pa.int64()), ("text", pa.string()), ("n", pa.int16())])
    batch = pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["a", "b"]),
                             pa.array(["x", "y"], pa.large_string()), pa.array([5, 6], pa.int16()), pa.array([9, 9])],
                            names=["id", "code", "text", "n", "other"])
    out = bspark._as_input_types(batch, input_schema, ["text", "id", "code", "n"])
    assert out.schema == pa.schema([("text", pa.string()), ("id", pa.int64()), ("code", pa.string()),
                                    ("n", pa.int16())])  # "a" is no int64: Spark's type is kept
    assert out.to_pydict() == {"text": ["x", "y"], "id": [1, 2], "code": ["a", "b"], "n": [5, 6]}
    # a column all None in the input (parquet's null type), which Spark reads as int32: a text column so read was
    # refused as "holds int32 values", a kept one came out int32
    batch = pa.record_batch([pa.nulls(2, pa.int32()), pa.nulls(2, pa.int32())], names=["text", "id"])
    out = bspark._as_input_types(batch, pa.schema([("text", pa.null()), ("id", pa.null())]), ["text", "id"])
    assert out.schema == pa.schema([("text", pa.null()), ("id", pa.null())]) and out.num_rows == 2


def test_a_category_column_gets_back_a_dictionary_that_holds_a_partitions_labels(in_task, tmp_path):
    """(found by a schemas hunt, 2026-11-26, session 8) Spark hands a task a category column as strings; the input's
    type was pandas' int8 dictionary, which cannot index a partition of more than 127 labels from several files,
    so that partition's part file kept Spark's string type beside the others' dictionaries (the local engine failed
    on such input). The reader's 32-bit dictionary holds them."""
    from bertfeat.readers import InputReader
    from tests.test_schemas import write_categories

    schema = InputReader(str(write_categories(tmp_path / "in")), ["id", "label", "review"], 100, ["review"]).schema
    labels = [f"L{k}_{i}" for k in range(2) for i in range(100)]
    batch = pa.record_batch([pa.array(range(200)), pa.array(labels)], names=["id", "label"])
    out = bspark._as_input_types(batch, schema, ["id", "label"])
    assert out.schema.field("label").type == pa.dictionary(pa.int32(), pa.string())
    assert out.column("label").to_pylist() == labels


# -- the featurizer a worker keeps --------------------------------------------------------------------------------


def spec_for(tiny_bert, tmp_path, **params):
    """The spec the driver sends each task (``_run_job`` builds it with the same function)."""
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    return bspark._task_spec(["text"], ["id"], "columns", {"model": tiny_bert, "pooling": "mean", **params}, tmp_path,
                             schema)


def test_a_worker_loads_the_model_once_and_again_only_for_another_recipe(tiny_bert, tmp_path, in_task):
    threads = in_task(FakeTask(cpus=2))
    spec = spec_for(tiny_bert, tmp_path)
    first, info = bspark._worker_featurizer(spec)
    assert info == {"host": socket.gethostname(), "pid": os.getpid(), "threads": 2, "device": "cpu", "loads": 1,
                    "dtype": "float32", "libraries": libraries()}  # its dtype and libraries decide its numbers too
    assert (first.text_cols, first.keep_cols, first.layout) == (["text"], ["id"], "columns")
    assert first.embedder.device == "cpu" and first.embedder.pooling == "mean" and first.embedder.model == tiny_bert
    again, info = bspark._worker_featurizer(spec_for(tiny_bert, tmp_path))  # the next task, the same recipe
    assert again is first and info["loads"] == 1
    other, info = bspark._worker_featurizer(spec_for(tiny_bert, tmp_path, pooling="cls"))
    assert other is not first and other.embedder.pooling == "cls" and info["loads"] == 2
    assert threads == [2, 2, 2]


def test_a_worker_that_keeps_a_model_embeds_for_no_task_whose_driver_it_disagrees_with(tiny_bert, tmp_path, in_task):
    """A Python worker keeps the model of its last recipe for the tasks after (``spark.python.worker.reuse``). A
    task of another recipe loads and checks its own model (the kept one is never used for it); a task of the same
    recipe whose driver tokenized the probe texts into other ids than those the kept model was checked against
    (another driver environment, workers kept) was embedded with the kept model unchecked: now refused."""
    from bertfeat.arrow import ArrowFeaturizer
    from bertfeat.worker_recipe import driver_recipe

    in_task(FakeTask(cpus=1))

    def spec(**params):
        sent = spec_for(tiny_bert, tmp_path, **params)
        recipe = ArrowFeaturizer(["text"], ["id"], **{**sent["params"], "device": "cpu"}).recipe
        return dict(sent, expected=driver_recipe(recipe, "float32", sent["params"]))

    kept, info = bspark._worker_featurizer(spec())
    assert info["loads"] == 1 and bspark._worker_featurizer(spec())[0] is kept  # the same driver: kept, checked
    other = spec(pooling="cls")
    other["expected"]["tokenization"] = "0" * 64  # a driver whose environment tokenizes otherwise
    with pytest.raises(ValueError, match=r"^a Spark task on host .* tokenizes texts into other ids than the driver"):
        bspark._worker_featurizer(other)
    kept, info = bspark._worker_featurizer(spec())
    again = spec()
    again["expected"]["tokenization"] = "0" * 64
    with pytest.raises(ValueError, match=r"^a Spark task on host .* tokenizes texts into other ids than the driver"):
        bspark._worker_featurizer(again)
    assert bspark._worker_featurizer(spec())[0] is not kept  # nothing kept from the refused task


def test_the_same_recipe_on_another_device_is_another_featurizer(tmp_path, in_task, monkeypatch):
    import bertfeat.arrow

    built = []
    monkeypatch.setattr(bertfeat.arrow, "ArrowFeaturizer", lambda *args, **kw: built.append(kw) or object())
    in_task(FakeTask(cpus=1))
    cpu, _ = bspark._worker_featurizer(spec_for("m", tmp_path))
    in_task(FakeTask(cpus=1, gpus=["0"]))  # a task given a GPU
    gpu, info = bspark._worker_featurizer(spec_for("m", tmp_path))
    assert gpu is not cpu and info["device"] == "cuda:0" and info["loads"] == 2
    assert [kw["device"] for kw in built] == ["cpu", "cuda:0"]
    assert bspark._worker_featurizer(spec_for("m", tmp_path))[0] is gpu and len(built) == 2
    bspark._worker_featurizer(spec_for("m", tmp_path, device="cpu"))  # the user's device beats the task's GPU
    assert built[-1]["device"] == "cpu"


def test_the_recipe_key_ignores_order_reads_any_value_and_survives_a_failed_load(tmp_path, in_task, monkeypatch):
    from pathlib import Path

    import bertfeat.arrow

    built = []

    def featurizer(*args, **kw):
        if kw["model"] == "bad":
            raise ValueError("model 'bad' cannot be loaded")
        built.append(kw)
        return object()

    monkeypatch.setattr(bertfeat.arrow, "ArrowFeaturizer", featurizer)
    spec = spec_for("m", tmp_path, cache_dir=Path("/c"), max_length=16)  # a Path: not JSON, read as its text
    first, _ = bspark._worker_featurizer(spec)
    reordered = dict(spec, params=dict(reversed(list(spec["params"].items()))))
    assert bspark._worker_featurizer(reordered)[0] is first and len(built) == 1  # the same recipe, in another order
    with pytest.raises(ValueError, match="cannot be loaded"):
        bspark._worker_featurizer(spec_for("bad", tmp_path))
    again, info = bspark._worker_featurizer(spec)  # the recipe it held before the failure: loaded again, not None
    assert again is not None and again is not first and len(built) == 2 and info["loads"] == 2


def test_embed_partition_yields_spark_ready_batches(tiny_bert, tmp_path, in_task):
    spec = dict(spec_for(tiny_bert, tmp_path), layout="list")
    batches = [pa.record_batch([pa.array([1, 2]), pa.array(["a cat", "a dog"])], names=["id", "text"]),
               pa.record_batch([pa.array([3]), pa.array(["the mat"])], names=["id", "text"])]
    out = list(bspark._embed_partition(iter(batches), spec))
    reference = ArrowFeaturizer(["text"], ["id"], layout="list", model=tiny_bert, pooling="mean", device="cpu")
    for got, batch in zip(out, batches):
        want = reference(batch)
        assert got.schema.field(1).type == pa.list_(pa.float32())  # Spark has no fixed-size lists
        assert got.column(0).to_pylist() == want.column(0).to_pylist()
        np.testing.assert_array_equal(np.array(got.column(1).to_pylist(), dtype=np.float32),
                                      np.stack(want.column(1).to_numpy(zero_copy_only=False)))
    assert len(out) == 2


def test_a_bad_text_in_embed_dataframe_is_named_as_its_batchs_row_with_its_kept_columns(tiny_bert, tmp_path, in_task):
    """(found by the Ray and Spark hunt, 2026-11-27, session 16) ``embed_dataframe`` over a DataFrame whose second
    row's text is None failed "row 0 of column 'text' is missing (None) ...": the row of the Arrow batch Spark sent
    the task, said as if it were the DataFrame's (its first row, which is fine), with nothing to find the row by.
    Ray's ``embed_dataset`` said so, with the row's kept columns, since session 11; now Spark's task says it alike."""
    in_task(FakeTask(cpus=1))
    names = {"_bertfeat_col0": "id", "_bertfeat_col1": "text"}  # the names the columns travel under
    spec = dict(spec_for(tiny_bert, tmp_path), names=names)
    fine = pa.record_batch([pa.array([1]), pa.array(["a cat"])], names=list(names))
    bad = pa.record_batch([pa.array([2, 3]), pa.array([None, "a dog"])], names=list(names))
    out = bspark._embed_partition(iter([fine, bad]), spec)
    assert next(out).column(0).to_pylist() == [1]
    with pytest.raises(ValueError) as info:
        next(out)
    assert str(info.value).startswith("row 0 ") and "is missing (None) and missing='error'" in str(info.value)
    assert str(info.value).endswith(" or fill the missing texts first. (row 0 of the batch of 2 rows Spark sent this "
                                    "task, not of the DataFrame, which numbers no rows; that row has id=2)")
    bare = dict(spec, keep_cols=[], names={"_bertfeat_col0": "text"})
    with pytest.raises(ValueError) as info:  # a blank text, without kept columns
        next(bspark._embed_partition(iter([pa.record_batch([pa.array(["a", " "])], names=["_bertfeat_col0"])]), bare))
    assert str(info.value).endswith(" (row 1 of the batch of 2 rows Spark sent this task, not of the DataFrame, which "
                                    "numbers no rows)")
    with pytest.raises(ValueError, match="^pooling='most' is not valid"):  # no row named: as raised
        next(bspark._embed_partition(iter([fine]), dict(spec, params={**spec["params"], "pooling": "most"})))


# -- one task's part file -------------------------------------------------------------------------------------------


def rows_batch(ids, texts, rows):
    return pa.record_batch([pa.array(ids, pa.int32()), pa.array(texts, pa.large_string()), pa.array(rows, pa.int64())],
                           names=["id", "text", "_bertfeat_row"])



def test_a_task_writes_its_part_file_where_fsync_needs_a_handle_that_may_write(tiny_bert, tmp_path, in_task,
                                                                               windows_fsync):
    """A task flushed its part through a read-only handle, which Windows refuses ([Errno 9] Bad file descriptor): a
    Spark job on Windows executors failed in every task."""
    in_task(FakeTask(partition=0, attempt=0, attempt_id=5, cpus=1))
    spec = spec_for(tiny_bert, tmp_path)
    out = list(bspark._write_partition(iter([rows_batch([10, 11], ["a cat sat", "a dog ran"], [20, 21])]), spec))
    assert [b.num_rows for b in out] == [2, 1] and len(windows_fsync) == 1
    assert pq.read_table(Path(spec["data_dir"]) / "part-000000.parquet").num_rows == 2

@pytest.mark.parametrize("failing", ["__init__", "write_table"])
def test_a_full_disk_at_a_tasks_write_is_said_of_its_part_file(tiny_bert, tmp_path, in_task, monkeypatch, failing):
    """pyarrow's error for a full disk names no file ("[Errno 28] Error writing bytes to file ..."): the local
    engine's writes name theirs (flush.naming, session 15), a task's did not, so a job failed naming no file. Opening
    the file writes too (parquet's magic bytes), and fails so on a full disk."""
    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    in_task(FakeTask(partition=2, attempt=0, attempt_id=9, cpus=1))
    spec = spec_for(tiny_bert, tmp_path)
    monkeypatch.setattr(pq.ParquetWriter, failing, full)
    with pytest.raises(OSError) as err:
        list(bspark._write_partition(iter([rows_batch([10], ["a cat sat"], [20])]), spec))
    tmp = Path(spec["data_dir"]) / ".part-000002.parquet.tmp-9"
    assert (err.value.errno, err.value.filename) == (errno.ENOSPC, str(tmp))
    assert str(err.value) == (f"[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device: "
                              f"'{tmp}'")
    assert list(Path(spec["data_dir"]).iterdir()) == []  # the attempt's temp file removed


def test_a_task_writes_its_part_file_and_yields_counts_and_hashes(tiny_bert, tmp_path, in_task):
    in_task(FakeTask(partition=3, attempt=1, attempt_id=77, cpus=2))
    spec = spec_for(tiny_bert, tmp_path)
    texts = [["a cat sat", "a dog ran"], ["the mat", "a cat sat", "statistics meets text at last"]]
    batches = [rows_batch([10, 11], texts[0], [20, 21]), rows_batch([12, 13, 14], texts[1], [22, 23, 24])]
    out = list(bspark._write_partition(iter(batches), spec))

    assert [b.num_rows for b in out] == [2, 3, 1]  # one hash per text of each batch, then the task's counts
    assert all(b.schema == pa.schema([("stats", pa.string()), ("hash", pa.int64())]) for b in out)  # Spark's schema
    for got, words in zip(out[:2], texts):
        assert got.column("stats").null_count == got.num_rows
        assert got.column("hash").to_pylist() == text_hashes(words).view(np.int64).tolist()
    assert out[2].column("hash").null_count == 1
    report = json.loads(out[2].column("stats")[0].as_py())
    reference = ArrowFeaturizer(["text"], ["id"], layout="columns", model=tiny_bert, pooling="mean", device="cpu")
    want, totals = [], EncodeStats()
    for b in batches:
        want.append(reference(pa.record_batch([pa.array(b.column(0).to_pylist(), pa.int64()),
                                               pa.array(b.column(1).to_pylist())], names=["id", "text"])))
        totals += reference.embedder.stats_
    assert report["partition"] == 3 and report["attempt"] == 1
    assert report["worker"] == {"host": socket.gethostname(), "pid": os.getpid(), "threads": 2, "device": "cpu",
                                "loads": 1, "dtype": "float32", "libraries": libraries()}
    expected = totals.to_dict()
    assert report["stats"]["rows"] == 5 and report["stats"]["seconds"] > 0
    assert {k: v for k, v in report["stats"].items() if k != "seconds"} == \
        {k: v for k, v in expected.items() if k != "seconds"}  # both batches' counts, summed

    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-000003.parquet"]  # its temporary file is gone
    part = pq.ParquetFile(tmp_path / "part-000003.parquet")
    assert part.metadata.num_row_groups == 2  # one row group per batch
    written = part.read()
    assert written.schema.field("id").type == pa.int64()  # the input's type, not Spark's int32
    assert written.equals(pa.Table.from_batches(want).replace_schema_metadata(written.schema.metadata))


def test_a_texts_mistake_names_its_input_row_and_leaves_no_file(tiny_bert, tmp_path, in_task):
    spec = spec_for(tiny_bert, tmp_path)
    batches = [rows_batch([1, 2], ["fine", "also fine"], [40, 41]), rows_batch([3, 4], ["ok", None], [42, 43])]
    with pytest.raises(ValueError) as info:
        list(bspark._write_partition(iter(batches), spec))
    found = bspark._mistake_in(RuntimeError(f"worker failed: {info.value}"))
    assert type(found) is ValueError and str(found).startswith("row 43 is missing (None) and missing='error'.")
    assert list(tmp_path.iterdir()) == []  # neither the part file nor the attempt's temporary file


def test_a_row_spark_read_without_a_number_is_a_bug_report(tiny_bert, tmp_path, in_task):
    batch = rows_batch([1], ["text"], [None])
    with pytest.raises(RuntimeError) as info:
        list(bspark._write_partition(iter([batch]), spec_for(tiny_bert, tmp_path)))
    assert str(info.value) == ("Spark read rows of a file bertfeat did not list (their row numbers are unknown); "
                               "report this as a bug.")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_partition_writes_nothing_and_reports_zero_texts(tiny_bert, tmp_path, in_task):
    in_task(FakeTask(partition=0, attempt=0))
    out = list(bspark._write_partition(iter([]), spec_for(tiny_bert, tmp_path)))
    assert len(out) == 1
    report = json.loads(out[0].column("stats")[0].as_py())
    assert (report["partition"], report["attempt"], report["stats"]["rows"]) == (0, 0, 0)
    assert list(tmp_path.iterdir()) == []


def test_a_model_the_worker_cannot_load_is_the_users_mistake(tmp_path, in_task):
    spec = spec_for(str(tmp_path / "no-such-model"), tmp_path)
    with pytest.raises((ValueError, TypeError, OSError)) as info:
        list(bspark._write_partition(iter([rows_batch([1], ["a"], [0])]), spec))
    assert bspark._MISTAKE in str(info.value)  # marked, so the driver raises it as the local engine would
    assert "no-such-model" in str(bspark._mistake_in(RuntimeError(str(info.value))))


class FakeFeaturizer:
    """Stands in for the worker's ArrowFeaturizer: warns as the real one may, and returns ``n`` rows of one column."""

    text_cols, keep_cols = ["text"], ["id"]

    def __init__(self, n=None):
        from bertfeat.encode import EncodeStats

        from tests.conftest import make_recipe

        self.n, self.embedder = n, SimpleNamespace(stats_=EncodeStats(rows=1))
        self.recipe = make_recipe()  # a model that never runs: no forward pass to count

    def __call__(self, batch):
        import warnings

        from bertfeat.exceptions import CacheWarning, ModelNoteWarning, TruncationWarning

        warnings.warn("2 texts were truncated", TruncationWarning)
        warnings.warn("a cache shard is damaged", CacheWarning)
        warnings.warn("a note of the model's", ModelNoteWarning)
        n = batch.num_rows if self.n is None else self.n
        return pa.record_batch([pa.array(np.zeros(n, np.float32))], names=["f0"])

    def product_shape(self):  # the model never loaded: its feed-forward width is not known
        return self.recipe.hidden_size, None

    def text_hashes(self, batch):  # every text embedded, as the real one reports a batch with none missing
        from bertfeat.counts import text_hashes

        return text_hashes(batch.column("text").to_pylist())


def test_truncation_is_counted_not_warned_and_other_warnings_pass(tmp_path, in_task, monkeypatch):
    """A truncation is counted in the manifest; a CacheWarning (as a slow dtype) goes to the driver with the task's
    counts, which says it (an executor's log is read by no one); any other warning is the task's own."""
    import warnings

    monkeypatch.setattr(bspark, "_worker_featurizer", lambda spec: (FakeFeaturizer(), {}))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = list(bspark._write_partition(iter([rows_batch([1], ["a"], [0])]), spec_for("m", tmp_path)))
    assert [str(w.message) for w in seen] == ["a note of the model's"]
    assert json.loads(out[-1].column("stats")[0].as_py())["notes"] == [["CacheWarning", "a cache shard is damaged"]]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_part_of_more_than_a_million_rows_is_one_row_group(tmp_path, in_task, monkeypatch):
    n = (1 << 20) + 1  # more rows than pyarrow puts in one row group by default
    monkeypatch.setattr(bspark, "_worker_featurizer", lambda spec: (FakeFeaturizer(n), {}))
    list(bspark._write_partition(iter([rows_batch([1], ["a"], [0])]), spec_for("m", tmp_path)))
    meta = pq.ParquetFile(tmp_path / "part-000003.parquet").metadata
    assert (meta.num_rows, meta.num_row_groups) == (n, 1)


# -- the driver's helpers that need no Spark session ------------------------------------------------------------------


def test_exact_counts_are_reported_as_exact():
    counted = bspark._Exact(np.int64(42))
    assert counted.count() == (42, True) and type(counted.n) is int


def test_parquet_input_is_read_where_it_is_with_each_files_row_count(tmp_path):
    from bertfeat.readers import InputReader

    (tmp_path / "in").mkdir()
    for name, n in (("a.parquet", 3), ("b.parquet", 0), ("c.parquet", 5)):
        pq.write_table(pa.table({"t": [f"x{i}" for i in range(n)]}, schema=pa.schema([("t", pa.string())])),
                       tmp_path / "in" / name)
    reader = InputReader(str(tmp_path / "in"), ["t"], 2, ["t"])
    files, counts = bspark._parquet_files(reader, tmp_path / "staged")
    assert [f.name for f in files] == ["a.parquet", "b.parquet", "c.parquet"] and counts == [3, 0, 5]
    assert not (tmp_path / "staged").exists()  # nothing copied


def test_csv_input_is_staged_as_parquet_one_file_per_chunk_in_order(tmp_path):
    from bertfeat.readers import InputReader

    src = tmp_path / "in.csv"
    src.write_text("id,t\n" + "".join(f"{i:03d},text {i}\n" for i in range(7)))
    reader = InputReader(str(src), ["id", "t"], 3, ["t"])
    files, counts = bspark._parquet_files(reader, tmp_path / "staged")
    assert [f.name for f in files] == ["rows-000000.parquet", "rows-000001.parquet", "rows-000002.parquet"]
    assert all(f.parent == tmp_path / "staged" for f in files) and counts == [3, 3, 1]
    tables = [pq.read_table(f) for f in files]
    assert [t.num_rows for t in tables] == counts
    assert [pq.ParquetFile(f).metadata.num_row_groups for f in files] == [1, 1, 1]
    assert sum((t.column("id").to_pylist() for t in tables), []) == [f"{i:03d}" for i in range(7)]  # as written
    with pytest.raises(FileExistsError):  # a staging folder is the job's own: never written into twice
        bspark._parquet_files(reader, tmp_path / "staged")


class FakeConf:
    """A session's RuntimeConfig; ``static`` keys are refused as Spark refuses a static or core option."""

    def __init__(self, values, static=()):
        self.values, self.log, self.static = dict(values), [], set(static)

    @property
    def getAll(self):  # a property in pyspark 4 (classic and Connect)
        return dict(self.values)

    def get(self, key, default):
        return self.values.get(key, default)

    def _refuse_static(self, key):
        if key in self.static:
            from pyspark.errors import AnalysisException

            raise AnalysisException(message=f"[CANNOT_MODIFY_STATIC_CONFIG] Cannot modify the value of the static "
                                            f"Spark config: \"{key}\".")

    def set(self, key, value):
        self._refuse_static(key)
        self.log.append(("set", key, value))
        self.values[key] = value

    def unset(self, key):
        self._refuse_static(key)
        self.log.append(("unset", key))
        self.values.pop(key, None)


def test_spark_options_are_set_for_one_job_and_the_callers_put_back():
    conf = FakeConf({"a": "caller's", "c": "untouched"})
    spark = SimpleNamespace(conf=conf)
    with bsession._conf(spark, {"a": "job's", "b": "1"}) as entered:
        assert isinstance(entered, bsession._conf)
        assert conf.values == {"a": "job's", "b": "1", "c": "untouched"}
    assert conf.values == {"a": "caller's", "c": "untouched"}  # b was not set before: unset again
    assert conf.log[-2:] in ([("set", "a", "caller's"), ("unset", "b")], [("unset", "b"), ("set", "a", "caller's")])
    with pytest.raises(KeyError):  # put back when the job fails too, and the failure passes through
        with bsession._conf(spark, {"a": "job's"}):
            raise KeyError("job failed")
    assert conf.values == {"a": "caller's", "c": "untouched"}


def test_the_jobs_own_columns_never_take_an_input_columns_name_in_any_case():
    assert bspark._own_names(["id", "text"]) == {"file": "_bertfeat_file", "index": "_bertfeat_index",
                                                 "row": "_bertfeat_row"}
    assert bspark._own_names(["_BERTFEAT_FILE", "_bertfeat_row", "__bertfeat_row", "text"]) == {
        "file": "__bertfeat_file", "index": "_bertfeat_index", "row": "___bertfeat_row"}
    # the row column a task reads is the one the driver named
    spec = bspark._task_spec(["text"], ["id", "_bertfeat_row"], "columns", {}, Path("/tmp"), pa.schema([]))
    assert spec["row_col"] == "__bertfeat_row"


def test_a_task_reads_the_row_numbers_from_the_column_the_driver_named(tiny_bert, tmp_path, in_task):
    schema = pa.schema([("_bertfeat_row", pa.int64()), ("text", pa.string())])
    spec = bspark._task_spec(["text"], ["_bertfeat_row"], "columns", {"model": tiny_bert}, tmp_path, schema)
    batch = pa.record_batch([pa.array([7, 7], pa.int64()), pa.array(["a cat", None]), pa.array([40, 41], pa.int64())],
                            names=["_bertfeat_row", "text", "__bertfeat_row"])
    with pytest.raises(ValueError, match=r"^\[bertfeat-mistake\].*row 41 is missing"):
        list(bspark._write_partition(iter([batch]), spec))  # the input's row 41, not the user's column's 7


class FakeReader:
    """``spark.read`` for ``_spark_schema``: a schema per file name, or an AnalysisException for a name in ``bad``."""

    def __init__(self, schemas, bad=()):
        self.schemas, self.bad, self.asked = schemas, set(bad), []

    def parquet(self, path):
        name = Path(path).name
        self.asked.append(name)
        if name in self.bad:
            from pyspark.errors import AnalysisException

            raise AnalysisException("[PARQUET_TYPE_ILLEGAL] Illegal Parquet type: FIXED_LEN_BYTE_ARRAY (FLOAT16).")
        return SimpleNamespace(schema=self.schemas[name])


def test_spark_schema_is_the_needed_columns_as_spark_reads_every_file_or_none(tmp_path):
    from pyspark.sql.types import LongType, NullType, StringType, StructField, StructType

    for name, t in (("a.parquet", pa.string()), ("b.parquet", pa.string()), ("c.parquet", pa.null())):
        pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "t": pa.array([None], t), "x": [1.0]}),
                       tmp_path / name)
    files = [tmp_path / n for n in ("a.parquet", "b.parquet", "c.parquet")]
    full = StructType([StructField("id", LongType()), StructField("t", StringType()), StructField("x", LongType())])
    nulls = StructType([StructField("id", LongType()), StructField("t", NullType()), StructField("x", LongType())])
    read = FakeReader({"a.parquet": full, "b.parquet": full, "c.parquet": nulls})
    spark = SimpleNamespace(read=read)
    want = StructType([StructField("t", StringType()), StructField("id", LongType())])
    assert bspark._spark_schema(spark, files[:2], ["t", "id"]) == want  # only the columns asked, in that order
    assert read.asked == ["a.parquet"]  # one file of each parquet schema
    assert bspark._spark_schema(spark, files, ["t", "id"]) is None  # a null column beside strings: no one schema
    assert bspark._spark_schema(spark, files, ["id"]) == StructType([StructField("id", LongType())])
    spark = SimpleNamespace(read=FakeReader({"a.parquet": full}, bad={"b.parquet"}))
    assert bspark._spark_schema(spark, files[:2], ["t"]) == StructType([StructField("t", StringType())])  # one asked
    pq.write_table(pa.table({"id": [1], "t": ["a"], "x": pa.array([1.0], pa.float16())}), tmp_path / "b.parquet")
    assert bspark._spark_schema(spark, files[:2], ["t"]) is None  # a file Spark cannot read, even for a column unread
    spark = SimpleNamespace(read=SimpleNamespace(parquet=lambda path: 1 / 0))
    with pytest.raises(ZeroDivisionError):  # anything but Spark's refusal of the file passes through
        bspark._spark_schema(spark, files[:1], ["t"])


def test_files_with_a_colon_in_their_path_are_staged_and_a_staging_folder_with_one_refused(tmp_path):
    """Input files named with a time (``2024-01-01T00:00:00.parquet``) failed the Spark job with Hadoop's Java
    traceback ('Relative path in absolute URI'): Spark is not asked to read them, so the driver stages them (as
    files Spark cannot read otherwise); where the staging folder itself would hold a ':' (``--out`` under one),
    the job is refused before any work, saying what to do."""
    from bertfeat.files import InputReader
    from bertfeat.spark_input import _stage

    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"id": [1], "t": ["a"]}), folder / "2024-01-01T00:00:00.parquet")
    read = FakeReader({})
    assert bspark._spark_schema(SimpleNamespace(read=read), [folder / "2024-01-01T00:00:00.parquet"], ["t"]) is None
    assert read.asked == []
    reader = InputReader(str(folder), ["id", "t"], 10, ["t"])
    with pytest.raises(ValueError) as err:
        _stage(reader, tmp_path / "at 10:30" / "out.partial" / "input")
    assert str(err.value) == (
        f"the Spark engine stages this input under {str(tmp_path / 'at 10:30' / 'out.partial' / 'input')!r}, and "
        "Spark (Hadoop) reads no path with ':' in a folder or file name ('Relative path in absolute URI'): pass an "
        "out= whose path has no ':', or use the local engine.")
    assert not (tmp_path / "at 10:30").exists()
    files, counts = _stage(reader, tmp_path / "staged")
    assert counts == [1] and pq.read_table(files[0]).to_pydict() == {"id": [1], "t": ["a"]}


def test_files_spark_reads_in_the_local_engines_wider_types_are_read_by_spark_not_staged(tmp_path):
    """int32 ids beside int64 ones (Spark's files beside pandas'), float32 beside float64, decimals of other
    precisions: Spark infers other types per file, so ``_spark_schema`` found no schema and the driver staged the
    input, every row read and written again on one machine. Spark 4's parquet reader reads each in the wider type
    given (test_spark.py runs it), so the job now reads them in the local engine's wider types; a difference it does
    not widen (a long beside a double, times of two units) is still staged."""
    from pyspark.sql.types import (DecimalType, DoubleType, FloatType, IntegerType, LongType, StringType,
                                   StructField, StructType)

    for name, t in (("a.parquet", pa.int32()), ("b.parquet", pa.int64())):
        pq.write_table(pa.table({"id": pa.array([1], t), "t": ["a"]}), tmp_path / name)
    files = [tmp_path / "a.parquet", tmp_path / "b.parquet"]

    def kinds(*types):
        return SimpleNamespace(read=FakeReader({f.name: StructType([StructField("id", t), StructField("t", s)])
                                                for f, (t, s) in zip(files, types)}))

    widened = pa.schema([("id", pa.int64()), ("t", pa.string())])
    spark = kinds((IntegerType(), StringType()), (LongType(), StringType()))
    want = StructType([StructField("id", LongType()), StructField("t", StringType())])
    assert bspark._spark_schema(spark, files, ["id", "t"], widened) == want
    assert bspark._spark_schema(spark, files, ["id", "t"]) is None  # no wider types known: staged
    doubles = pa.schema([("id", pa.float64()), ("t", pa.string())])
    assert bspark._spark_schema(kinds((FloatType(), StringType()), (DoubleType(), StringType())), files, ["id"],
                                doubles) == StructType([StructField("id", DoubleType())])
    assert bspark._spark_schema(kinds((IntegerType(), StringType()), (DoubleType(), StringType())), files, ["id"],
                                doubles) == StructType([StructField("id", DoubleType())])
    assert bspark._spark_schema(kinds((LongType(), StringType()), (DoubleType(), StringType())), files, ["id"],
                                doubles) is None  # a long as a double: not Spark's
    decimals = pa.schema([("id", pa.decimal128(8, 2)), ("t", pa.string())])
    assert bspark._spark_schema(kinds((DecimalType(5, 1), StringType()), (DecimalType(7, 2), StringType())), files,
                                ["id"], decimals) == StructType([StructField("id", DecimalType(8, 2))])
    assert bspark._spark_schema(kinds((DecimalType(9, 1), StringType()), (DecimalType(7, 2), StringType())), files,
                                ["id"], decimals) is None  # 8 digits before the point do not fit 6
