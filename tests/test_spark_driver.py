"""The Spark engine's driver, read value by value in this process: what ``embed_files`` sends a job and makes of its
results (the output, the manifest, the session and options it leaves behind), the session ``_session`` asks for,
and the DataFrame ``embed_dataframe`` builds.

Spark itself is stood in for: ``LocalJob`` does what ``_run_job`` asks of Spark (read the files in order, number the
rows, range-partition them, run the real ``_write_partition`` once per partition in a stand-in task context, count
the distinct texts), and ``FakeSession`` / ``FakeBuilder`` record what the driver asks of a session. tests/test_spark.py
runs the same paths in real Spark jobs; these run in milliseconds, so that every branch of the driver has a
value-level test a mutation run can afford.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")

import bertfeat.spark as bspark  # noqa: E402
import bertfeat.spark_session as bsession  # noqa: E402
from bertfeat.cli import main  # noqa: E402
from bertfeat.hardware import run_facts  # noqa: E402
from bertfeat.started_by_jobs import StartedByJobs  # noqa: E402
from bertfeat.worker_recipe import libraries  # noqa: E402
from tests.test_cli import make_frame  # noqa: E402
from tests.test_spark_worker import FakeConf, FakeTask, in_task  # noqa: E402,F401

MANIFEST_KEYS = {"output", "engine", "input", "provenance", "counts", "timing", "chunk_rows", "reading", "cache_dir",
                 "spark"}


class FakeSession:
    """The parts of a SparkSession ``embed_files`` reads; after ``stop`` it has no context left to read."""

    def __init__(self, master="local[3]", parallelism=3, conf=None, static=()):
        self.conf = FakeConf({"spark.task.cpus": "3"} if conf is None else conf, static)
        self.cluster = dict(self.conf.values)  # the configuration a new session beside this one starts from
        self.sessions = []  # the sessions made beside this one (newSession)
        self.sparkContext = SimpleNamespace(master=master, defaultParallelism=parallelism, _jsc="its JVM context")
        self.stopped = 0
        self.jobs = []  # the device each small job (_ask_a_task's) asks about, and the profile it runs under

    def newSession(self):
        """A session sharing this one's SparkContext, with its own options: the cluster's, not this one's since."""
        other = type(self)(conf=dict(self.cluster), static=self.conf.static)
        if "sparkContext" in vars(self):  # a Connect session has none
            other.sparkContext = self.sparkContext
        other.jobs = self.jobs  # run on the same SparkContext (or Connect server)
        self.sessions.append(other)
        return other

    def range(self, start, end, step, partitions):
        """A DataFrame of ``range(start, end, step)`` in ``partitions`` partitions: ``.mapInArrow(f, schema)
        .collect()`` runs ``f`` here over each partition's one batch, in the task TaskContext.get gives (the
        ``in_task`` fixture's)."""
        assert (start, end, step, partitions) == (0, 1, 1, 1)  # one row in one task
        values = pa.record_batch([pa.array(range(start, end, step), pa.int64())], names=["id"])

        def mapped(f, schema, profile=None):
            assert schema == "dtype string"
            self.jobs.append([f.keywords["device"]])
            if profile is not None:
                self.jobs.append(("withResources", profile))
            rows = [row for out in f(iter([values])) for row in out.to_pylist()]
            return SimpleNamespace(collect=lambda: rows)

        return SimpleNamespace(mapInArrow=mapped)

    def stop(self):
        self.stopped += 1
        self.sparkContext = None


class LocalJob:
    """Stands in for ``bspark._run_job``: Spark's part of a job, done in this process with the real task function.

    ``attempts`` gives a partition's attempt number (a task Spark retried), ``pids`` the worker process a partition's
    report names (several workers), ``drop`` partitions whose part file is lost after the job, ``fail`` an error
    raised after the first partition ran, ``fail_first`` one raised before any, ``during`` a hook called with the
    job's arguments before any task runs.
    """

    def __init__(self, in_task, cpus=3, attempts=None, pids=None, drop=(), fail=None, during=None, fail_first=None):
        self.in_task, self.cpus = in_task, cpus
        self.attempts, self.pids, self.drop = attempts or {}, pids or {}, set(drop)
        self.fail, self.during, self.fail_first = fail, during, fail_first
        self.calls = []

    def __call__(self, spark, files, counts, input_schema, text_cols, keep_cols, layout, batch_rows, data_dir,
                 params, read_schema=None, expected=None, auto_dtype=None):
        call = {"files": list(files), "counts": list(counts), "input_schema": input_schema, "text_cols": text_cols,
                "keep_cols": keep_cols, "layout": layout, "batch_rows": batch_rows, "data_dir": data_dir,
                "params": params, "conf": dict(spark.conf.values), "read_schema": read_schema,
                "expected": expected, "auto_dtype": auto_dtype}
        self.calls.append(call)
        if self.during is not None:
            self.during(call)
        if self.fail_first is not None:  # what Spark reports when another task fails before any of these runs
            raise self.fail_first
        columns = list(dict.fromkeys(keep_cols + text_cols))
        table = pa.concat_tables([pq.read_table(f, columns=columns).replace_schema_metadata(None) for f in files])
        spec = bspark._task_spec(text_cols, keep_cols, layout, params, data_dir, input_schema, expected, auto_dtype)
        table = table.append_column(spec["row_col"], pa.array(np.arange(table.num_rows), pa.int64()))
        total = int(sum(counts))
        partitions = bspark._partitions(spark, total, batch_rows)
        data_dir.mkdir(parents=True, exist_ok=True)
        stats, hashes = [], set()
        for k, rows in enumerate(np.array_split(np.arange(total), partitions)):
            if self.fail is not None and k == 1:
                raise self.fail
            self.in_task(FakeTask(partition=k, attempt=self.attempts.get(k, 0), attempt_id=100 + k, cpus=self.cpus))
            batches = table.take(rows).to_batches(max_chunksize=batch_rows) if len(rows) else []
            for out in bspark._write_partition(iter(batches), spec):
                hashes.update(h for h in out.column("hash").to_pylist() if h is not None)
                for s in out.column("stats").to_pylist():
                    if s is not None:
                        report = json.loads(s)
                        report["worker"]["pid"] = self.pids.get(k, report["worker"]["pid"])
                        stats.append(json.dumps(report))
        for k in self.drop:
            (data_dir / f"part-{k:06d}.parquet").unlink()
        self.stats = [json.loads(s) for s in stats]
        return {"stats": stats, "distinct": len(hashes)}, partitions


@pytest.fixture
def spark_job(monkeypatch, in_task):  # noqa: F811
    """Run ``embed_files`` against a stand-in session and job: returns a setter ``(session, started, job)``. Spark
    reads parquet input as it is unless ``readable=False`` (what ``_spark_schema`` answers)."""
    asked = []

    def use(session=None, started=False, readable=True, **job):
        session = session or FakeSession()
        local = LocalJob(in_task, **job)

        def fake_session(master, quiet):
            asked.append((master, quiet))
            return session, started

        monkeypatch.setattr(bspark, "_session", fake_session)
        monkeypatch.setattr(bspark, "_run_job", local)
        monkeypatch.setattr(bspark, "_spark_schema", lambda spark, files, columns, widened: (
            ("read as", [f.name for f in files], columns) if readable else None))
        return SimpleNamespace(session=session, job=local, asked=asked)

    return use


def features(table: pa.Table, skip: int) -> np.ndarray:
    return np.column_stack([c.to_numpy() for c in table.columns[skip:]])


def assert_counts(counts, local, reports):
    """The manifest's counts: the input's as the local engine counts them; the work, the tasks' reports summed
    (partitions are not the local engine's chunks, so each embeds and looks up its own distinct texts)."""
    same = ("rows", "texts", "unique_texts", "missing", "truncated", "chunked", "rows_resumed")
    assert {k: counts[k] for k in same} == {k: local[k] for k in same}
    assert counts["unique_texts_exact"] is True and counts["chunks"] == len(reports)
    summed = {k: sum(r["stats"][k] for r in reports) for k in ("unique", "cache_hits", "tokens")}
    assert counts["embedded"] == summed["unique"] - summed["cache_hits"]
    assert counts["cache_hits"] == summed["cache_hits"] and counts["tokens"] == summed["tokens"]


def local_run(tmp_path, args):
    """The local engine's output table and manifest for the same input and recipe."""
    out = tmp_path / "local.parquet"
    assert main(["embed", *args, "--out", str(out), "--quiet"]) == 0
    return pq.read_table(out), json.loads((tmp_path / "local.parquet.manifest.json").read_text())


# -- a whole job ---------------------------------------------------------------------------------------------------


def test_a_job_writes_the_local_engines_output_in_input_order_with_its_manifest(tiny_bert, tmp_path, spark_job,
                                                                                  capsys):
    df = make_frame(150, seed=3)
    (tmp_path / "in").mkdir()
    df.iloc[:90].to_parquet(tmp_path / "in" / "b.parquet")
    df.iloc[90:].to_parquet(tmp_path / "in" / "a.parquet")  # sorts first: the input's first 60 rows
    fake = spark_job()
    out = tmp_path / "out"
    manifest = bspark.embed_files(str(tmp_path / "in"), str(out), "review", keep_cols="id", batch_rows=40,
                                  model=tiny_bert, quiet=True)
    local, local_manifest = local_run(tmp_path, [str(tmp_path / "in"), "--text-col", "review", "--id-col", "id",
                                                 "--model", tiny_bert, "--chunk-rows", "40"])
    assert capsys.readouterr().err == ""  # quiet

    got = pq.read_table(out)
    assert got.schema.equals(local.schema, check_metadata=True)
    assert got.column("id").to_pylist() == df.iloc[90:]["id"].tolist() + df.iloc[:90]["id"].tolist()
    assert np.abs(features(got, 1) - features(local, 1)).max() <= 1e-5
    assert sorted(f.name for f in out.iterdir()) == [f"part-{k:06d}.parquet" for k in range(4)]
    assert not (tmp_path / "out.partial").exists()

    # what the job was asked: the input's own files in input order, the run-private cache, absolute paths
    (call,) = fake.job.calls
    assert call["files"] == [tmp_path / "in" / "a.parquet", tmp_path / "in" / "b.parquet"]
    assert call["counts"] == [60, 90] and call["batch_rows"] == 40 and call["layout"] == "columns"
    assert call["text_cols"] == ["review"] and call["keep_cols"] == ["id"]
    assert call["input_schema"].names == ["id", "review"]  # the columns the job reads, as the input types them
    assert call["data_dir"] == tmp_path / "out.partial" / "data"
    assert call["params"] == {"model": str(Path(tiny_bert).resolve()),  # dtype="auto" fixed for CPU tasks
                              "cache_dir": str((tmp_path / "out.partial" / "cache").resolve()), "dtype": "float32"}
    assert call["read_schema"] == ("read as", ["a.parquet", "b.parquet"], ["id", "review"])  # Spark's, asked
    # Spark's batches are the job's batch_rows, and nanosecond timestamps are read as numbers, for this job only
    assert call["conf"]["spark.sql.execution.arrow.maxRecordsPerBatch"] == "40"
    assert call["conf"]["spark.sql.legacy.parquet.nanosAsLong"] == "true"
    assert call["conf"]["spark.sql.caseSensitive"] == "true"  # names as written: `Text` and `text` are two
    assert fake.session.conf.values == {"spark.task.cpus": "3"} and fake.session.stopped == 0  # not ours to stop
    assert fake.asked == [(None, True)]

    assert manifest == json.loads((tmp_path / "out.manifest.json").read_text())
    assert set(manifest) == MANIFEST_KEYS
    assert manifest["output"] == str(out) and manifest["engine"] == "spark"
    assert manifest["input"] == local_manifest["input"] and manifest["provenance"] == local_manifest["provenance"]
    assert manifest["provenance"] == json.loads(got.schema.metadata[b"bertfeat"])
    assert_counts(manifest["counts"], local_manifest["counts"], fake.job.stats)
    assert manifest["counts"]["rows"] == 150 and manifest["counts"]["unique_texts"] == df["review"].nunique()
    timing = manifest["timing"]
    assert set(timing) == {"seconds", "embed_seconds", "spark_start_seconds", "machine", "forward_pass"}
    assert timing["embed_seconds"] == round(sum(s["stats"]["seconds"] for s in fake.job.stats), 3) > 0
    assert timing["seconds"] >= timing["embed_seconds"] and 0 <= timing["spark_start_seconds"] < timing["seconds"]
    assert all(round(v, 3) == v for k, v in timing.items() if k.endswith("seconds"))
    # as the local engine's: the machine the tasks ran on (one here: the facts themselves), the forward passes
    # summed over the partitions by arrangement (each partition's own, though one worker ran them all)
    assert timing["machine"] == local_manifest["timing"]["machine"] == run_facts(32, 37)
    assert set(timing["forward_pass"]) == set(local_manifest["timing"]["forward_pass"])
    per_task = [s["forward_pass"] for s in fake.job.stats]
    assert all(sum(p.values()) >= 1 for p in per_task)
    assert sum(timing["forward_pass"].values()) == sum(sum(p.values()) for p in per_task)
    assert manifest["chunk_rows"] == 40 and manifest["cache_dir"] is None
    assert manifest["spark"] == {
        "master": "local[3]", "task_cpus": 3, "partitions": 4, "files": 4, "csv_staged": False, "staged": False,
        "retried_tasks": 0,
        "workers": [{"host": socket.gethostname(), "pid": os.getpid(), "threads": 3, "device": "cpu", "loads": 1,
                     "dtype": "float32", "libraries": libraries(), "forward_pass": timing["forward_pass"]}]}  # the one worker's own passes: all of them


def test_csv_input_is_staged_in_input_order_and_kept_columns_stay_text(tiny_bert, tmp_path, spark_job):
    df = make_frame(70, seed=4)
    df["zip"] = [f"{i:05d}" for i in range(70)]  # 00007 stays 00007, as the local engine reads it
    df.loc[5, "title"] = None
    df.to_csv(tmp_path / "in.csv", index=False)
    staged = tmp_path / "out.partial" / "input"
    seen = {}
    fake = spark_job(during=lambda call: seen.update(
        {f.name: pq.read_table(f).column("zip").to_pylist() for f in call["files"]}))
    args = dict(keep_cols=["id", "zip"], layout="list", missing="zero", batch_rows=25, model=tiny_bert, quiet=True)
    manifest = bspark.embed_files(tmp_path / "in.csv", tmp_path / "out", ["review", "title"], **args)
    local, local_manifest = local_run(tmp_path, [
        str(tmp_path / "in.csv"), "--text-col", "review", "--text-col", "title", "--keep-col", "id", "--keep-col",
        "zip", "--layout", "list", "--missing", "zero", "--model", tiny_bert, "--chunk-rows", "25"])

    (call,) = fake.job.calls
    assert call["files"] == [staged / f"rows-{k:06d}.parquet" for k in range(3)] and call["counts"] == [25, 25, 20]
    assert seen == {f"rows-{k:06d}.parquet": df["zip"].tolist()[25 * k:25 * k + 25] for k in range(3)}
    assert call["text_cols"] == ["review", "title"] and call["keep_cols"] == ["id", "zip"]
    got = pq.read_table(tmp_path / "out")
    assert got.schema.equals(local.schema, check_metadata=True)
    assert got.select(["id", "zip"]).equals(local.select(["id", "zip"]))
    assert got.column("zip").to_pylist()[:8] == ["00000", "00001", "00002", "00003", "00004", "00005", "00006",
                                                 "00007"]
    for name in ("review_embedding", "title_embedding"):
        a = np.stack(got.column(name).to_numpy(zero_copy_only=False))
        b = np.stack(local.column(name).to_numpy(zero_copy_only=False))
        assert np.abs(a - b).max() <= 1e-5
    assert_counts(manifest["counts"], local_manifest["counts"], fake.job.stats)
    assert manifest["counts"]["missing"] == 1 and manifest["counts"]["texts"] == 140
    assert manifest["spark"]["csv_staged"] is True and manifest["spark"]["partitions"] == 3
    assert not (tmp_path / "out.partial").exists()  # the staged copy too


def test_parquet_spark_cannot_read_as_it_is_is_staged_and_its_types_come_back(tiny_bert, tmp_path, spark_job):
    """Where Spark cannot read the files as they are (``_spark_schema`` finds no schema: a float16 or time column, a
    shard whose column is all None), the driver stages them as it stages a CSV: the local engine's reader, its one
    type per column (null -> string), one file per chunk, in types Spark reads; the tasks give them their types back."""
    import datetime

    (tmp_path / "in").mkdir()
    half = pa.array(np.linspace(0, 1, 7, dtype=np.float16))
    times = pa.array([datetime.time(9, i, 30, 5) for i in range(7)])
    table = pa.table({"id": range(7), "review": [f"text {i}" for i in range(7)], "score": half, "at": times})
    pq.write_table(table.slice(0, 4), tmp_path / "in" / "a.parquet")
    pq.write_table(table.slice(4).set_column(1, "review", pa.nulls(3)), tmp_path / "in" / "b.parquet")
    seen = {}
    fake = spark_job(readable=False, during=lambda call: seen.update(
        {f.name: pq.read_schema(f) for f in call["files"]}))
    args = dict(keep_cols=["id", "score", "at"], missing="zero", batch_rows=3, model=tiny_bert, quiet=True)
    manifest = bspark.embed_files(tmp_path / "in", tmp_path / "out", "review", **args)
    local, _ = local_run(tmp_path, [str(tmp_path / "in"), "--text-col", "review", *[
        x for k in ("id", "score", "at") for x in ("--keep-col", k)], "--missing", "zero", "--model", tiny_bert,
        "--chunk-rows", "3"])

    (call,) = fake.job.calls
    staged = tmp_path / "out.partial" / "input"
    assert call["files"] == [staged / f"rows-{k:06d}.parquet" for k in range(3)] and call["counts"] == [3, 3, 1]
    assert call["read_schema"] is None  # Spark reads the staged files' own schema
    assert {str(s) for s in seen.values()} == {str(pa.schema(
        [("id", pa.int64()), ("score", pa.float32()), ("at", pa.int64()), ("review", pa.string())]))}
    got = pq.read_table(tmp_path / "out")
    assert got.schema.equals(local.schema, check_metadata=True)
    assert got.select(["id", "score", "at"]).equals(local.select(["id", "score", "at"]))
    assert got.column("at").to_pylist() == times.to_pylist()
    assert np.abs(features(got, 3) - features(local, 3)).max() <= 1e-5
    assert manifest["spark"]["staged"] is True and manifest["spark"]["csv_staged"] is False
    assert manifest["counts"]["missing"] == 3 and not (tmp_path / "out.partial").exists()


def test_files_whose_types_differ_are_staged_in_the_local_engines_wider_types(tiny_bert, tmp_path, spark_job):
    """(found by a schemas hunt, 2026-11-26, session 8) files whose types differ losslessly (int32 and int64 ids, a
    category text beside a string, tests/test_schemas.py), which Spark reads as different types (``_spark_schema``
    finds none): staged by the local engine's reader in its one wider type per column, and the output's types and
    values are the local engine's."""
    from tests.test_schemas import WIDENED, mixed_rows, write_mixed_types

    src = write_mixed_types(tmp_path / "in")
    keep = ["id", "n", "score", "at"]
    seen = {}
    fake = spark_job(readable=False, during=lambda call: seen.update(
        {f.name: pq.read_schema(f) for f in call["files"]}))
    manifest = bspark.embed_files(src, tmp_path / "out", "review", keep_cols=keep, batch_rows=2, model=tiny_bert,
                                  quiet=True)
    local, _ = local_run(tmp_path, [str(src), "--text-col", "review", *[x for k in keep for x in ("--keep-col", k)],
                                    "--model", tiny_bert, "--chunk-rows", "2"])
    (call,) = fake.job.calls
    assert call["input_schema"] == pa.schema([WIDENED.field(c) for c in keep + ["review"]])
    assert len(seen) == 3 and {s.field("id").type for s in seen.values()} == {pa.int64()}  # staged in one type
    got = pq.read_table(tmp_path / "out")
    assert got.schema.equals(local.schema, check_metadata=True)
    assert got.select(keep).to_pydict() == local.select(keep).to_pydict() == {c: mixed_rows()[c] for c in keep}
    assert np.abs(features(got, 4) - features(local, 4)).max() <= 1e-5
    assert manifest["spark"]["staged"] is True


def test_a_session_the_job_started_is_stopped_after_its_settings_are_read(tiny_bert, tmp_path, spark_job):
    make_frame(20).to_parquet(tmp_path / "in.parquet")
    session = FakeSession(master="spark://head:7077", parallelism=2,
                          conf={"spark.task.cpus": "4", "spark.sql.execution.arrow.maxRecordsPerBatch": "5000"})
    fake = spark_job(session=session, started=True, cpus=4)
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                                  master="spark://head:7077", batch_rows=15)
    assert session.stopped == 1 and fake.asked == [("spark://head:7077", True)]
    assert fake.job.calls[0]["conf"]["spark.sql.execution.arrow.maxRecordsPerBatch"] == "15"
    assert session.conf.values["spark.sql.execution.arrow.maxRecordsPerBatch"] == "5000"  # the caller's, back
    assert manifest["spark"]["master"] == "spark://head:7077" and manifest["spark"]["task_cpus"] == 4
    assert manifest["spark"]["partitions"] == 2 and manifest["spark"]["files"] == 2  # the cluster's parallelism
    assert {w["threads"] for w in manifest["spark"]["workers"]} == {4}


def test_a_bad_text_is_the_inputs_first_whichever_task_spark_heard_of_first(tiny_bert, tmp_path, spark_job):
    """Spark's tasks run at once, and the job failed with the mistake of the task Spark heard of first: with rows 2
    and 3 missing, the local engine said row 2 and the Spark engine row 2 or row 3, as the race went. The driver now
    finds the input's first bad text, as the Ray engine's does."""
    df = make_frame(8, seed=5)
    df.loc[[2, 3, 6], "review"] = None
    df.to_parquet(tmp_path / "in.parquet")
    with pytest.raises(ValueError) as local:
        main_raising(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--model", tiny_bert,
                      "--out", str(tmp_path / "local.parquet"), "--quiet", "--chunk-rows", "3"])
    assert str(local.value).startswith("row 2 of column 'review' is missing (None) and missing='error'.")
    later = ValueError(str(local.value).replace("row 2 ", "row 6 ", 1))  # the task of rows 6-7 failed first
    spark_job(fail_first=later)
    with pytest.raises(ValueError) as got:
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                           batch_rows=3)
    assert str(got.value) == str(local.value)
    spark_job(fail_first=RuntimeError("row 6: Spark's own failure"))  # not a mistake: passed on as raised
    with pytest.raises(RuntimeError, match="^row 6: Spark's own failure$"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    spark_job(fail_first=TypeError("row 1 holds bytes b'x', not a string"))  # one the checks cannot find: as raised
    with pytest.raises(TypeError, match="^row 1 holds bytes"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                           missing="zero")


def test_texts_the_tokenizer_drops_whole_are_missing_in_the_count_and_the_first_is_the_one_named(
        drops_characters, tmp_path, spark_job):
    """A text the tokenizer drops whole is missing (encode.py), but unique_texts counted it, and under missing='error'
    the driver's re-check (arrow.first_refused) looked for blank and missing texts only: it named row 5 (blank), or
    the failing task's row, where the local engine names row 2, the first text of no token."""
    import pandas as pd

    from tests.conftest import DROPPED

    texts = ["the cat sat", "a dog ran", DROPPED[0], "the cat sat", "a cat", "", DROPPED[1], DROPPED[0]]
    pd.DataFrame({"id": range(8), "review": texts}).to_parquet(tmp_path / "in.parquet")
    job = dict(model=drops_characters, pooling="mean", quiet=True, batch_rows=3)
    spark_job()
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", missing="zero", **job)
    assert (manifest["counts"]["missing"], manifest["counts"]["unique_texts"]) == (4, 3)
    with pytest.raises(ValueError) as local:
        main_raising(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--model", drops_characters,
                      "--pooling", "mean", "--out", str(tmp_path / "local.parquet"), "--quiet", "--chunk-rows", "3"])
    assert str(local.value).startswith("row 2 of column 'review' ('\u03a9') gives no token to this model's tokenizer")
    spark_job(fail_first=ValueError(str(local.value).replace("row 2 ", "row 6 ", 1)))  # rows 6-7's task first
    with pytest.raises(ValueError) as got:
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out2", "review", **job)
    assert str(got.value) == str(local.value)


def main_raising(argv):
    """``bertfeat`` with BERTFEAT_DEBUG: the error raised, not its line."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BERTFEAT_DEBUG", "1")
        return main(argv)


def test_a_failed_job_stops_its_session_restores_the_options_and_keeps_its_cache(tiny_bert, tmp_path, spark_job):
    make_frame(30).to_parquet(tmp_path / "in.parquet")
    session = FakeSession(conf={})
    spark_job(session=session, started=True, fail=RuntimeError("planted: the cluster went away"))
    with pytest.raises(RuntimeError, match="planted: the cluster went away"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                           batch_rows=10)
    assert session.stopped == 1 and session.conf.values == {}  # unset again: the caller had none
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.manifest.json").exists()
    cache = tmp_path / "out.partial" / "cache"
    assert cache.is_dir() and any(cache.rglob("*.parquet"))  # the first partition's texts, for the rerun


def test_a_rerun_after_a_dead_run_rewrites_its_files_and_answers_from_its_cache(tiny_bert, tmp_path, spark_job):
    df = make_frame(30, seed=2).drop_duplicates("review")
    df.to_parquet(tmp_path / "in.parquet")
    spark_job(fail=RuntimeError("planted"))
    with pytest.raises(RuntimeError, match="planted"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                           batch_rows=10)
    partial = tmp_path / "out.partial"
    (partial / "data" / "part-000007.parquet").write_bytes(b"a dead attempt's file")
    (partial / "input").mkdir()
    (partial / "input" / "rows-000000.parquet").write_bytes(b"a dead run's staging")
    seen = {}
    fake = spark_job(during=lambda call: seen.update(
        data=sorted(p.name for p in call["data_dir"].glob("*")), staged=(partial / "input").exists()))
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                                  batch_rows=10)
    assert seen == {"data": [], "staged": False}  # cleared before the job
    assert fake.job.calls[0]["params"]["cache_dir"] == str((partial / "cache").resolve())
    assert manifest["counts"]["cache_hits"] == 10 and manifest["counts"]["embedded"] == len(df) - 10
    assert pq.read_table(tmp_path / "out").num_rows == len(df) and not partial.exists()


def test_a_users_cache_is_kept_named_and_answers_a_rerun(tiny_bert, tmp_path, spark_job):
    make_frame(24, seed=5).drop_duplicates("review").to_parquet(tmp_path / "in.parquet")
    rows = pq.read_metadata(tmp_path / "in.parquet").num_rows
    cache = tmp_path / "my cache"
    fake = spark_job()
    first = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                               cache_dir=str(cache))
    assert fake.job.calls[0]["params"]["cache_dir"] == str(cache.resolve())
    assert first["cache_dir"] == str(cache) and first["counts"]["embedded"] == rows
    written = pq.read_table(tmp_path / "out")
    again = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                               cache_dir=cache, overwrite=True)
    assert again["counts"]["embedded"] == 0 and again["counts"]["cache_hits"] == rows
    assert again["cache_dir"] == str(cache) and cache.is_dir()
    assert pq.read_table(tmp_path / "out").equals(written)  # the cache's vectors are the embedded ones


def test_retried_tasks_and_each_worker_are_counted_once_from_the_tasks_reports(tiny_bert, tmp_path, spark_job):
    make_frame(40).to_parquet(tmp_path / "in.parquet")
    fake = spark_job(attempts={1: 1, 3: 2}, pids={0: 300, 1: 200, 2: 300, 3: 100})
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                                  batch_rows=10)
    assert manifest["spark"]["retried_tasks"] == 2
    assert [w["pid"] for w in manifest["spark"]["workers"]] == [100, 200, 300]  # one entry per process, sorted
    # each worker's own forward passes, by rung (on CPUs of different kinds the fused pass differs by node)
    passes = {pid: {} for pid in (100, 200, 300)}
    for s in fake.job.stats:
        for rung, n in s["forward_pass"].items():
            passes[s["worker"]["pid"]][rung] = passes[s["worker"]["pid"]].get(rung, 0) + n
    assert [w["forward_pass"] for w in manifest["spark"]["workers"]] == [passes[100], passes[200], passes[300]]
    assert sum(sum(p.values()) for p in passes.values()) == sum(manifest["timing"]["forward_pass"].values()) >= 4
    assert manifest["counts"]["chunks"] == 4 and manifest["counts"]["rows"] == 40


def test_a_job_that_wrote_fewer_rows_than_the_input_fails_and_leaves_no_output(tiny_bert, tmp_path, spark_job):
    make_frame(40).to_parquet(tmp_path / "in.parquet")
    spark_job(drop=[2])
    with pytest.raises(RuntimeError, match=r"the Spark tasks wrote 30 rows for 40 input rows in .*; not renamed"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                           batch_rows=10)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.manifest.json").exists()


def test_the_summary_line_is_printed_unless_quiet(tiny_bert, tmp_path, spark_job, capsys):
    make_frame(12).to_parquet(tmp_path / "in.parquet")
    spark_job()
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert)
    dims = manifest["provenance"]["dims"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"bertfeat embed: wrote {tmp_path / 'out'} (12 rows x {dims} dims")
    assert err[0].endswith(", 0 truncated, 0 missing")


def test_an_existing_output_is_replaced_only_when_asked(tiny_bert, tmp_path, spark_job):
    make_frame(12).to_parquet(tmp_path / "in.parquet")
    fake = spark_job()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "part-000000.parquet").write_bytes(b"old")
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert fake.job.calls == [] and (tmp_path / "out" / "part-000000.parquet").read_bytes() == b"old"
    bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                       overwrite=True)
    assert pq.read_table(tmp_path / "out").num_rows == 12


def test_a_job_stopped_before_its_manifest_is_refused_saying_so_and_overwrite_takes_its_texts_from_the_cache(
        tiny_bert, tmp_path, spark_job, monkeypatch):
    """(found by the file systems and engines hunt, 2026-11-27, session 17) A job stopped after moving its output
    folder into place, before its manifest: the rerun was refused "exists; pass overwrite=True to replace it", as for
    any other output, and the job's cache had been removed with its work folder before the manifest, so overwrite
    embedded every text again. Now the work folder goes after the manifest: the rerun says what happened, and with
    overwrite takes every text from the cache."""
    make_frame(12).to_parquet(tmp_path / "in.parquet")
    spark_job()
    out = tmp_path / "out"
    manifest_path = tmp_path / "out.manifest.json"
    real = bspark._atomic_write_bytes

    def stopped_at_the_manifest(path, data):
        if Path(path) == manifest_path:
            raise KeyboardInterrupt
        return real(path, data)

    monkeypatch.setattr(bspark, "_atomic_write_bytes", stopped_at_the_manifest)
    with pytest.raises(KeyboardInterrupt):
        bspark.embed_files(tmp_path / "in.parquet", out, "review", model=tiny_bert, quiet=True)
    monkeypatch.setattr(bspark, "_atomic_write_bytes", real)
    written = pq.read_table(out)
    assert not manifest_path.exists() and (tmp_path / "out.partial" / "cache").is_dir()
    with pytest.raises(FileExistsError) as info:
        bspark.embed_files(tmp_path / "in.parquet", out, "review", model=tiny_bert, quiet=True)
    assert str(info.value).startswith(f"output {str(out)!r} exists without its manifest (out.manifest.json), and "
                                      "out.partial beside it holds the work of a run on this out= stopped before "
                                      "writing it")
    manifest = bspark.embed_files(tmp_path / "in.parquet", out, "review", model=tiny_bert, quiet=True,
                                  overwrite=True)
    assert manifest["counts"]["embedded"] == 0 and manifest["counts"]["cache_hits"] > 0  # the model ran for none
    assert json.loads(manifest_path.read_text()) == manifest and not (tmp_path / "out.partial").exists()
    assert pq.read_table(out).equals(written)


def test_an_output_another_job_put_in_place_while_the_model_loaded_is_not_replaced(tiny_bert, tmp_path, spark_job,
                                                                                     monkeypatch):
    """--out was checked before the model loaded and the lock taken after: a job on the same --out that finished
    in between had its output replaced by this one's, without --overwrite and without a word."""
    make_frame(12).to_parquet(tmp_path / "in.parquet")
    fake = spark_job()
    out = tmp_path / "out"
    real = bspark._checked_featurizer

    def the_other_job_finishes_meanwhile(*args):
        out.mkdir()
        (out / "part-000000.parquet").write_bytes(b"the other job's")
        return real(*args)

    monkeypatch.setattr(bspark, "_checked_featurizer", the_other_job_finishes_meanwhile)
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        bspark.embed_files(tmp_path / "in.parquet", out, "review", model=tiny_bert, quiet=True)
    assert fake.job.calls == [] and (out / "part-000000.parquet").read_bytes() == b"the other job's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out"]


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_an_input_rewritten_while_the_job_ran_fails_it_and_puts_nothing_in_place(tiny_bert, tmp_path, spark_job, kind):
    """An input rewritten while the job ran (as many rows, other texts) gave an output of no one version of it,
    with the manifest recording the fingerprint of the new one, taken at the end."""
    src = tmp_path / f"in.{kind}"

    def write(seed):
        df = make_frame(12, seed=seed)
        df.to_parquet(src) if kind == "parquet" else df.to_csv(src, index=False)

    write(1)
    spark_job(during=lambda call: write(2))
    with pytest.raises(ValueError, match=r"changed while the job read it .*run the same command again"):
        bspark.embed_files(src, tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.manifest.json").exists()
    spark_job()
    manifest = bspark.embed_files(src, tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert manifest["input"]["files"][0][1:] == [src.stat().st_size, src.stat().st_mtime_ns]


# -- refused before Spark starts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_rows", [0, -3, 2.5, "10", None, True])
def test_batch_rows_must_be_a_positive_whole_number(tiny_bert, tmp_path, spark_job, batch_rows):
    make_frame(5).to_parquet(tmp_path / "in.parquet")
    fake = spark_job()
    message = f"batch_rows={batch_rows!r} is not valid: expected a positive number of rows."
    with pytest.raises(ValueError) as err:
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, batch_rows=batch_rows)
    assert str(err.value) == message
    assert fake.asked == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_one_row_batches_are_a_valid_job(tiny_bert, tmp_path, spark_job):
    make_frame(3).to_parquet(tmp_path / "in.parquet")
    fake = spark_job(session=FakeSession(parallelism=1))
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                                  batch_rows=1)
    assert fake.job.calls[0]["batch_rows"] == 1 and manifest["spark"]["partitions"] == 3


def test_an_input_without_rows_is_refused_and_leaves_nothing(tiny_bert, tmp_path, spark_job):
    fake = spark_job()
    make_frame(5).iloc[:0].to_parquet(tmp_path / "empty.parquet")
    with pytest.raises(ValueError, match=r"^input '.*empty.parquet' has no rows to embed\.$"):
        bspark.embed_files(tmp_path / "empty.parquet", tmp_path / "out", "review", model=tiny_bert)
    (tmp_path / "empty.csv").write_text("id,review\n")
    with pytest.raises(ValueError, match=r"^input '.*empty.csv' has no rows to embed\.$"):
        bspark.embed_files(tmp_path / "empty.csv", tmp_path / "out", "review", model=tiny_bert)
    assert fake.asked == [] and sorted(p.name for p in tmp_path.iterdir()) == ["empty.csv", "empty.parquet"]


def test_a_csv_the_local_engine_refuses_mid_file_is_refused_as_it_stages_and_leaves_nothing(tiny_bert, tmp_path,
                                                                                            spark_job):
    """(files hunt, 2026-11-27, session 11) the Spark engine stages a CSV file through the local engine's reader: a
    header repeated by files joined with cat, or a run of NUL bytes, past the first read block (rows staged before
    it) is refused with the local engine's message, and the staged rows go."""
    fake = spark_job()
    rows = "".join(f"{i},row {i}\n" for i in range(150_000))  # past pyarrow's 1 MB read block
    for name, tail, said in [("joined.csv", "id,review\n1,again\n", r"repeats its header at line 150002 "),
                             ("cut.csv", "\0" * 4096, r"holds a run of NUL bytes \(0x00\) from line 150002: ")]:
        (tmp_path / name).write_text("id,review\n" + rows + tail)
        with pytest.raises(ValueError, match=rf"^{re.escape(str(tmp_path / name))} {said}"):
            bspark.embed_files(tmp_path / name, tmp_path / "out", "review", keep_cols=["id"], model=tiny_bert,
                               batch_rows=10_000, quiet=True)
    assert fake.job.calls == [] and sorted(p.name for p in tmp_path.iterdir()) == ["cut.csv", "joined.csv"]


def test_column_and_recipe_mistakes_are_refused_before_anything_is_written(tiny_bert, tmp_path, spark_job):
    fake = spark_job()
    make_frame(5).to_parquet(tmp_path / "in.parquet")
    with pytest.raises(ValueError, match=r"column\(s\) \['body'\] not found"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "body", model=tiny_bert)
    with pytest.raises(TypeError, match="text column 'id' holds int64 values, not text"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "id", model=tiny_bert)
    with pytest.raises(ValueError, match="pooling='median' is not valid"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, pooling="median")
    assert fake.asked == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_a_gpu_a_local_master_cannot_give_is_refused_before_anything_is_written(tiny_bert, tmp_path, spark_job,
                                                                             monkeypatch):
    """``--engine spark --device cuda`` on a machine without a GPU started Spark and failed in every task (a Java stack
    trace per task, then the error); Ray refuses it up front. A local master runs the tasks on this machine, so its
    GPUs are known before Spark starts; a cluster's executors may have GPUs the driver has not, so there the driver
    checks only the spelling (each task checks its own GPU)."""
    fake = spark_job()
    make_frame(5).to_parquet(tmp_path / "in.parquet")
    masters = []
    monkeypatch.setattr(bspark, "_job_master", lambda master, quiet: masters.append(master) or master or "local[*]")
    for device, says in (("cuda", "torch sees no CUDA GPU here"), ("cuda:1", "torch sees no CUDA GPU here"),
                         ("mps", "MPS is not available here")):
        with pytest.raises(ValueError) as err:
            bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, device=device)
        assert str(err.value).startswith(f"Spark master 'local[*]' runs the tasks on this machine: device={device!r} "
                                         f"was asked for, but {says}")
    with pytest.raises(ValueError, match=r"^device='gpu' is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N'"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, device="gpu",
                           master="yarn")
    assert fake.asked == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]
    assert masters == [None, None, None]  # asked only for a GPU spelling bertfeat knows
    assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--out", str(tmp_path / "out"),
                 "--model", tiny_bert, "--engine", "spark", "--master", "local[2]", "--device", "cuda"]) == 2
    assert masters[-1] == "local[2]" and fake.asked == []
    # on a cluster the driver cannot know the executors' GPUs: the job goes to Spark, whose tasks check theirs
    fake = spark_job(session=FakeSession(master="yarn"))
    with pytest.raises(ValueError, match=r"which Spark assigned no GPU: give the executors GPUs"):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, device="cuda",
                           master="yarn")
    assert fake.asked == [("yarn", False)]


def test_a_slow_dtype_a_task_finds_is_said_by_the_driver_once_per_host(tiny_bert, tmp_path, spark_job, monkeypatch):
    """``--engine spark --dtype bfloat16`` on executors where bfloat16 is slower than float32: each task's
    SlowDtypeWarning went to its executor's log (on a local master, Python's raw warning line in Spark's output), never
    to the user who chose the dtype, as the local engine and R say it. The driver now says it, once per host."""
    import bertfeat.backend
    import bertfeat.hardware
    from bertfeat.exceptions import SlowDtypeWarning

    said = "dtype='bfloat16' runs slower than float32 on this CPU: measured 1 GFLOP/s against 2 GFLOP/s."
    monkeypatch.setattr(bertfeat.hardware, "slow_dtype_message", lambda dtype, rates: said)
    monkeypatch.setattr(bertfeat.backend, "_REGISTRY", {})  # a model loaded by another test warns no more
    fake = spark_job()
    make_frame(12).to_parquet(tmp_path / "in.parquet")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, dtype="bfloat16",
                           batch_rows=4, quiet=True)
    assert len(fake.job.stats) == 3 and fake.job.stats[0]["notes"] == [["SlowDtypeWarning", said]]  # the loading task
    slow = [str(w.message) for w in caught if issubclass(w.category, SlowDtypeWarning)]
    assert slow == [f"{said} (a Spark task on host {socket.gethostname()!r})"]

def test_a_slow_dtype_said_where_warnings_are_errors_comes_after_the_manifest(tiny_bert, tmp_path, spark_job,
                                                                              monkeypatch):
    """The driver said the tasks' SlowDtypeWarning after putting the features in place (the earlier manifest
    removed) and before writing the new manifest: where the driver's warnings are errors (python -W error; the
    executors, other processes, recording theirs), the job stopped on its own notice with every feature written and
    no manifest beside them. Now it is said once the job's output is whole."""
    import bertfeat.backend
    import bertfeat.hardware
    from bertfeat.exceptions import SlowDtypeWarning

    said = "dtype='bfloat16' runs slower than float32 on this CPU: measured 1 GFLOP/s against 2 GFLOP/s."
    monkeypatch.setattr(bertfeat.hardware, "slow_dtype_message", lambda dtype, rates: said)
    monkeypatch.setattr(bertfeat.backend, "_REGISTRY", {})
    spark_job()
    make_frame(12).to_parquet(tmp_path / "in.parquet")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r".*\(a Spark task on host", category=SlowDtypeWarning)  # the driver's
        with pytest.raises(SlowDtypeWarning, match=r"\(a Spark task on host"):
            bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert,
                               dtype="bfloat16", batch_rows=4, quiet=True)
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    assert manifest["counts"]["rows"] == 12 and manifest["provenance"]["dtype"] == "bfloat16"


def test_a_read_only_cache_a_task_reads_is_said_by_the_driver_as_the_local_engine_says_it(tiny_bert, tmp_path,
                                                                                          spark_job, monkeypatch):
    """A complete cache on a read-only mount (session 15: read, not refused) is said to the local engine's user, one
    CacheWarning: the texts it does not hold are embedded and not stored, and how to keep them. On the Spark engine
    each task's CacheWarning went to its executor's log, which no one reads (only a slow dtype was carried to the
    driver): a job that stored nothing said nothing. The driver now says it, once per host, after the output."""
    from bertfeat.exceptions import CacheWarning
    from bertfeat.files import embed_file
    from tests.test_cache_values import read_only_cache

    team = tmp_path / "team"
    make_frame(12).to_parquet(tmp_path / "held.parquet")
    make_frame(16).to_parquet(tmp_path / "in.parquet")  # its first 12 rows are held (the same seed)
    embed_file(tmp_path / "held.parquet", tmp_path / "held-out.parquet", "review", model=tiny_bert, quiet=True,
               cache_dir=str(team))
    before = sorted(p.relative_to(team) for p in team.rglob("*"))
    read_only_cache(monkeypatch, team)
    local_said = f"bertfeat cache: cache_dir={str(team)!r} ({team}) is on a read-only file system: the vectors it " \
                 "holds are used, and those of texts it does not hold are computed and not stored. To keep them, " \
                 "pass a folder this user may write to as cache_dir= (a copy of this one keeps its vectors)."
    spark_job()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert,
                                      batch_rows=4, quiet=True, cache_dir=str(team))
    said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert said == [f"{local_said} (a Spark task on host {socket.gethostname()!r})"]
    assert sorted(p.relative_to(team) for p in team.rglob("*")) == before  # nothing stored
    assert manifest["counts"]["cache_hits"] > 0 and manifest["counts"]["rows"] == 16
    embed_file(tmp_path / "in.parquet", tmp_path / "local.parquet", "review", model=tiny_bert, quiet=True)
    np.testing.assert_allclose(features(pq.read_table(tmp_path / "out"), 0),  # other batches: float32's last bits
                               features(pq.read_table(tmp_path / "local.parquet"), 0), rtol=0, atol=1e-6)


def test_embed_dataframe_refuses_a_gpu_its_local_session_has_not(tiny_bert):
    sdf = FakeDataFrame(spark_schema(), session=FakeSession(master="local[2]"))
    with pytest.raises(ValueError, match=r"^Spark master 'local\[2\]' runs the tasks on this machine: device='cuda' "):
        bspark.embed_dataframe(sdf, "review", keep_cols="id", model=tiny_bert, device="cuda")
    with pytest.raises(ValueError, match=r"^device='CUDA' is not valid"):
        bspark.embed_dataframe(sdf, "review", keep_cols="id", model=tiny_bert, device="CUDA")


def test_embed_dataframe_refuses_a_kept_column_named_like_a_feature_in_another_case_where_spark_reads_any_case(
        tiny_bert):
    """(found by the Ray and Spark hunt, 2026-11-27, session 16) a kept ``Review_mean_00`` beside the feature
    ``review_mean_00``: ``embed_dataframe`` returned a DataFrame that Spark, reading names in any case by default,
    could not write (``COLUMN_ALREADY_EXISTS`` at ``write.parquet``, the embedding's stage planned and lost) nor
    select from (``AMBIGUOUS_REFERENCE``). The exact name was refused already; now the name in another case too,
    before anything runs, unless the session reads names as written."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("Review_mean_00", LongType()), StructField("review", StringType())])
    sdf = FakeDataFrame(schema, session=FakeSession(master="local[2]", conf={}))
    with pytest.raises(ValueError) as info:
        bspark.embed_dataframe(sdf, "review", keep_cols="Review_mean_00", model=tiny_bert, pooling="mean")
    assert str(info.value) == (
        "the output's columns [['Review_mean_00', 'review_mean_00']] differ in case only, and this Spark session "
        "reads column names in any case (spark.sql.caseSensitive is false): it could neither write nor select them. "
        "Rename the kept column(s) ['Review_mean_00'] first.")
    assert sdf.log == []  # nothing mapped
    exact = FakeDataFrame(schema, session=FakeSession(master="local[2]", conf={"spark.sql.caseSensitive": "true"}))
    bspark.embed_dataframe(exact, "review", keep_cols="Review_mean_00", model=tiny_bert, pooling="mean")
    _, _, out = exact.log[-1]  # a session that reads names as written keeps both, as the local engine does
    assert out.names[:2] == ["Review_mean_00", "review_mean_00"]
    other = FakeDataFrame(schema, session=FakeSession(master="local[2]", conf={}))
    bspark.embed_dataframe(other, "review", keep_cols="Review_mean_00", model=tiny_bert, pooling="cls")
    assert other.log[-1][2].names[:2] == ["Review_mean_00", "review_cls_00"]  # no twin: as before


def test_embed_dataframe_reads_column_names_in_any_case_as_the_session_does(tiny_bert):
    """(found by the file systems and engines hunt, 2026-11-27, session 17) Spark reads column names in any case by
    default (``spark.sql.caseSensitive`` false), but ``embed_dataframe(sdf, "REVIEW")`` was refused "column(s)
    ['REVIEW'] not found; the input has columns ['id', 'review', 'title']", and a DataFrame holding ``Text`` beside
    ``text`` failed at Spark's ``selectExpr`` with its own ``AMBIGUOUS_REFERENCE``. Now a name is read as the session
    reads it: in any case, the DataFrame's own name then naming the output's columns; a name two columns answer to
    is refused naming both and what to do; a session reading names as written reads them so."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    sdf = FakeDataFrame(spark_schema(), session=FakeSession(master="local[2]", conf={}))
    bspark.embed_dataframe(sdf, "REVIEW", keep_cols="Id", model=tiny_bert, pooling="cls")
    (_, cols), (_, _, out) = sdf.log
    assert cols == ("`id` AS _bertfeat_col0", "`review` AS _bertfeat_col1")
    assert out.names[:2] == ["id", "review_cls_00"] and out["id"].dataType == LongType()
    exact = FakeDataFrame(spark_schema(), session=FakeSession(master="local[2]",
                                                              conf={"spark.sql.caseSensitive": "true"}))
    with pytest.raises(ValueError, match=r"^column\(s\) \['REVIEW'\] not found; the input has columns "):
        bspark.embed_dataframe(exact, "REVIEW", keep_cols="id", model=tiny_bert)
    twins = StructType([StructField("id", LongType()), StructField("Text", StringType()),
                        StructField("text", StringType())])
    sdf = FakeDataFrame(twins, session=FakeSession(master="local[2]", conf={}))
    for text_cols, keep_cols, said in [("text", "id", "text_cols='text'"), ("id", ["TEXT"], "keep_cols='TEXT'")]:
        with pytest.raises(ValueError) as info:
            bspark.embed_dataframe(sdf, text_cols, keep_cols=keep_cols, model=tiny_bert)
        assert str(info.value) == (
            f"{said} names the columns ['Text', 'text'] of this DataFrame, which differ in case only, and this Spark "
            "session reads column names in any case (spark.sql.caseSensitive is false), so it cannot tell which is "
            "meant. Set spark.conf.set('spark.sql.caseSensitive', 'true') to read names as written, or drop or "
            "rename one of them first.")
    assert sdf.log == []  # nothing selected or mapped
    sdf = FakeDataFrame(spark_schema(), session=FakeSession(master="local[2]", conf={}))
    with pytest.raises(ValueError) as info:  # a column named twice: an output schema of two id fields
        bspark.embed_dataframe(sdf, "review", keep_cols=["id", "ID"], model=tiny_bert)
    assert str(info.value) == ("keep_cols=['id', 'ID'] names column 'id' more than once (this Spark session reads "
                               "column names in any case); name each column once.")
    assert sdf.log == []
    exact = FakeDataFrame(twins, session=FakeSession(master="local[2]", conf={"spark.sql.caseSensitive": "true"}))
    bspark.embed_dataframe(exact, "text", keep_cols=["id", "Text"], model=tiny_bert, pooling="cls")
    (_, cols), (_, _, out) = exact.log
    assert cols == ("`id` AS _bertfeat_col0", "`Text` AS _bertfeat_col1", "`text` AS _bertfeat_col2")
    assert out.names[:3] == ["id", "Text", "text_cls_00"]


def dataframe_job(tiny_bert, conf, **recipe):
    """The provenance ``embed_dataframe`` writes in the first feature field of a DataFrame of (id, review, title),
    and the function each task runs, as it hands them to ``mapInArrow``."""
    sdf = FakeDataFrame(spark_schema(), session=FakeSession(master="local[2]", conf=conf))
    bspark.embed_dataframe(sdf, "review", keep_cols="id", model=tiny_bert, **recipe)
    _, func, schema = sdf.log[-1]
    return json.loads(schema.fields[1].metadata["bertfeat"]), func


def test_embed_dataframe_records_the_dtype_its_gpu_tasks_run_not_the_drivers(tiny_bert, in_task, monkeypatch):  # noqa: F811
    """``dtype="auto"`` on a CPU driver (Databricks' default) with GPU tasks: the field metadata, written by the driver
    ahead of the tasks, said float32 while every task ran (and cached) bfloat16, silently. The driver now fixes the
    dtype for the device the tasks run on, and a task whose GPU would choose otherwise (a T4: float16) is refused
    with the dtype to pass, never run in a recipe the metadata does not name."""
    import bertfeat.gpu

    provenance, _ = dataframe_job(tiny_bert, {})  # tasks without GPUs: float32, as before
    assert provenance["dtype"] == "float32"
    gpu_conf = {"spark.task.resource.gpu.amount": "1"}
    in_task(FakeTask(cpus=1, gpus=["0"]))  # the task the driver (no GPU) asks: an A100's
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: True)
    provenance, task = dataframe_job(tiny_bert, gpu_conf)
    assert provenance["dtype"] == "bfloat16"
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: False)  # a T4's: float16, not refused
    assert dataframe_job(tiny_bert, gpu_conf)[0]["dtype"] == "float16"
    monkeypatch.setattr(bertfeat.gpu, "device_count", lambda: 1)
    for native, runs in ((True, "bfloat16"), (False, None)):  # an A100's task; a T4's
        monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index, native=native: native)
        monkeypatch.setattr(bspark, "_WORKER", {"key": None, "featurizer": None, "loads": 0})
        in_task(FakeTask(cpus=1, gpus=["0"]))
        if runs is None:
            with pytest.raises(ValueError) as err:
                bspark._worker_featurizer(task.keywords["spec"])
            assert str(err.value) == (
                "dtype='auto' was fixed on the Spark driver as 'bfloat16' for tasks on a GPU (the output's metadata "
                "names it), but this task's GPU (cuda:0) runs 'float16' for dtype='auto': pass dtype='float16' "
                "to run every task in it, or dtype='bfloat16' to run this one as the others.")
        else:
            featurizer, info = bspark._worker_featurizer(task.keywords["spec"])
            assert info["device"] == "cuda:0" and featurizer.recipe.dtype == runs
            assert featurizer.recipe.fingerprint() == provenance["recipe_fingerprint"]
    # a driver with a GPU answers for its own kind (the executors' kind on a cluster of one instance type)
    provenance, _ = dataframe_job(tiny_bert, gpu_conf, device="cuda")
    assert provenance["dtype"] == "float16"
    provenance, _ = dataframe_job(tiny_bert, gpu_conf, dtype="float32")  # the user's dtype stands
    assert provenance["dtype"] == "float32"


def test_embed_dataframe_under_stage_level_gpu_scheduling_runs_the_gpus_dtype(tiny_bert, in_task, monkeypatch):  # noqa: F811
    """A GPU for the embedding stage alone (stage-level scheduling, the rest of the job on CPUs): the session names
    no task GPU, so ``dtype="auto"`` was fixed as float32 for CPU tasks and every GPU task ran float32 (right, but
    slow), and ``embed_dataframe`` had no way to give its stage the profile. ``resource_profile=`` now goes to
    ``mapInArrow``, and its GPU request makes ``dtype="auto"`` the GPU's choice, asked of a task run under it."""
    import bertfeat.gpu
    from pyspark.resource import ResourceProfileBuilder, TaskResourceRequests

    profile = ResourceProfileBuilder().require(TaskResourceRequests().cpus(1).resource("gpu", 1)).build
    in_task(FakeTask(cpus=1, gpus=["0"]))
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: True)
    session = FakeSession(master="spark://h:7077", conf={})
    sdf = FakeDataFrame(spark_schema(), session=session)
    bspark.embed_dataframe(sdf, "review", keep_cols="id", model=tiny_bert, resource_profile=profile)
    _, func, schema, given = sdf.log[-1]
    assert given is profile and json.loads(schema.fields[1].metadata["bertfeat"])["dtype"] == "bfloat16"
    assert func.keywords["spec"]["auto_dtype"] == "bfloat16"
    assert session.jobs == [["auto"], ("withResources", profile)]  # the task asked ran under the stage's profile
    cpus = ResourceProfileBuilder().require(TaskResourceRequests().cpus(2)).build  # a profile without a GPU
    sdf = FakeDataFrame(spark_schema(), session=FakeSession(master="spark://h:7077", conf={}))
    bspark.embed_dataframe(sdf, "review", keep_cols="id", model=tiny_bert, resource_profile=cpus)
    assert json.loads(sdf.log[-1][2].fields[1].metadata["bertfeat"])["dtype"] == "float32"
    assert sdf.sparkSession.jobs == [] and sdf.log[-1][3] is cpus


def test_the_master_a_job_will_run_on_is_known_before_it_starts(pyspark_stand_in):
    log = pyspark_stand_in(active=FakeSession(master="local[2]"))
    assert bsession._job_master("yarn") == "yarn" and bsession._job_master(None) == "local[2]" and log == []
    log = pyspark_stand_in(conf={"spark.master": "yarn"})
    assert bsession._job_master(None) == "yarn" and log == [("java",), ("jvm",), ("conf",)]
    pyspark_stand_in()
    assert bsession._job_master(None) == "local[*]"


def test_quiet_launches_from_two_threads_leave_the_processes_environment_as_it_was(pyspark_stand_in, monkeypatch):
    """_launch_jvm sets SPARK_SUBMIT_OPTS for the launch and puts it back; two jobs' launches at once (two threads'
    first jobs asking their master) each saved what the other had set, and the last to put it back left the quiet
    option in the process's environment for good, where every spark-submit the process starts later reads it."""
    import threading
    import time

    log = pyspark_stand_in()
    context = pyspark.SparkContext

    def launch():  # the JVM takes a while to start; then the process has its gateway
        opts = os.environ.get("SPARK_SUBMIT_OPTS") if context._gateway is None else None
        log.append(("jvm",) if opts is None else ("jvm", opts))
        time.sleep(0.2)
        context._gateway = object()

    monkeypatch.setattr(context, "_ensure_initialized", staticmethod(launch))
    threads = [threading.Thread(target=bsession._launch_jvm, args=(True,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "SPARK_SUBMIT_OPTS" not in os.environ
    assert log == [("jvm", f'"-Dlog4j2.configurationFile={bsession.QUIET_LOG4J}"'), ("jvm",)]  # one launch


def test_a_quiet_job_that_asks_the_master_first_launches_the_jvm_quietly(pyspark_stand_in, tmp_path):
    """A GPU device is checked against the master before the job's session starts, and where the process had no JVM
    that question launched it without the quiet logging configuration (_launch_jvm found it running and left it),
    so a quiet job with device='cuda' printed Spark's start-up WARN lines."""
    quiet = ("jvm", f'"-Dlog4j2.configurationFile={bsession.QUIET_LOG4J}"')
    log = pyspark_stand_in()
    assert bsession._job_master(None, quiet=True) == "local[*]" and quiet in log
    log.clear()
    assert bsession._job_master(None) == "local[*]" and log == [("java",), ("jvm",), ("conf",)]  # not quiet: Spark's
    pq.write_table(pa.table({"review": ["a cat"]}), tmp_path / "in.parquet")
    log = pyspark_stand_in()
    log.clear()
    with pytest.raises(ValueError, match="runs the tasks on this machine"):  # no GPU here: refused, after the JVM
        bspark.embed_files(str(tmp_path / "in.parquet"), str(tmp_path / "out"), "review", device="cuda", quiet=True)
    assert quiet in log and ("jvm",) not in log


@pytest.mark.parametrize("option, value, says", [
    ("chunk_rows", 500, "chunk_rows= is the local engine's name (bertfeat.files.embed_file): the Spark engine's is "
                        "batch_rows=, rows per batch sent to a worker; pass batch_rows=500."),
    ("chunk_chars", 10_000, "chunk_chars= bounds the local engine's chunks (bertfeat.files.embed_file): the Spark "
                            "engine reads batches of batch_rows= rows, so a smaller batch_rows= bounds a batch's "
                            "memory; drop chunk_chars=."),
    ("checkpoint_seconds", 5, "checkpoint_seconds= applies to the local engine (bertfeat.files.embed_file): the Spark "
                              "engine resumes a stopped job through its cache; drop checkpoint_seconds=."),
    ("progress_every", 1.0, "progress_every= applies to the local engine (bertfeat.files.embed_file): the Spark "
                            "engine shows Spark's own progress (quiet=True hides it); drop progress_every=."),
])
def test_the_local_engines_file_options_are_refused_by_name_not_as_a_bertembedder_parameter(
        tiny_bert, tmp_path, spark_job, option, value, says):
    """A job moved from ``bertfeat.files.embed_file`` keeps its options: they used to reach BertEmbedder, which
    said "BertEmbedder.__init__() got an unexpected keyword argument 'chunk_rows'"."""
    fake = spark_job()
    make_frame(5).to_parquet(tmp_path / "in.parquet")
    with pytest.raises(TypeError) as info:
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, **{option: value})
    assert str(info.value) == says
    assert fake.asked == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_embed_dataframe_refuses_the_local_engines_file_options_by_name():
    with pytest.raises(TypeError) as info:
        bspark.embed_dataframe(object(), "review", chunk_rows=500)  # refused before the DataFrame is read
    assert str(info.value) == (
        "chunk_rows= is the local engine's name (bertfeat.files.embed_file): a DataFrame goes to the Spark engine in "
        "Arrow batches of spark.sql.execution.arrow.maxRecordsPerBatch rows; set that option of the session instead.")
    with pytest.raises(TypeError, match=r"^checkpoint_seconds= applies to the local engine"):
        bspark.embed_dataframe(object(), "review", checkpoint_seconds=5)
    # (found reviewing the merge) chunk_chars= was told that "a smaller batch_rows=" bounds a batch's memory, an
    # option embed_dataframe has not; delimiter= reached BertEmbedder as an unexpected keyword argument
    with pytest.raises(TypeError) as info:
        bspark.embed_dataframe(object(), "review", chunk_chars=10_000)
    assert str(info.value) == (
        "chunk_chars= bounds the local engine's chunks (bertfeat.files.embed_file); drop chunk_chars=: a DataFrame "
        "goes to the Spark engine in Arrow batches of spark.sql.execution.arrow.maxRecordsPerBatch rows; set that "
        "option of the session instead.")
    with pytest.raises(TypeError) as info:
        bspark.embed_dataframe(object(), "review", delimiter=";")
    assert str(info.value) == ("delimiter= applies to reading a CSV file, and the data given to the Spark engine is "
                               "read already; drop delimiter=.")


# -- the session a job asks for -----------------------------------------------------------------------------------


class FakeBuilder:
    def __init__(self, log):
        self.log = log
        self.level = "INFO"  # the JVM's root log level (log4j2's), as its configuration set it

    def appName(self, name):
        self.log.append(("appName", name))
        return self

    def master(self, url):
        self.log.append(("master", url))
        return self

    def remote(self, url):
        self.log.append(("remote", url))
        return self

    def config(self, key, value):
        self.log.append(("config", key, value))
        return self

    def getOrCreate(self):
        self.log.append(("getOrCreate",))
        session = FakeSession(master=None)

        def set_level(level):
            self.log.append(("setLogLevel", level))
            self.level = level

        session.sparkContext.setLogLevel = set_level
        root = SimpleNamespace(getLevel=lambda: self.level)
        log4j = SimpleNamespace(LogManager=SimpleNamespace(getRootLogger=lambda: root))
        session.sparkContext._jvm = SimpleNamespace(org=SimpleNamespace(apache=SimpleNamespace(
            logging=SimpleNamespace(log4j=log4j))))
        return session


@pytest.fixture
def pyspark_stand_in(monkeypatch):
    """``pyspark``'s session, context and configuration as ``_session`` sees them: returns the log of what it asked,
    and a setter for the active session and the JVM's configuration."""
    log, state = [], {"active": None, "conf": {}, "default": None}

    class Session:
        builder = FakeBuilder(log)

        @staticmethod
        def getActiveSession():  # this thread's
            return state["active"]

        @staticmethod
        def active():  # this thread's, else the process's default session (another thread's)
            from pyspark.errors import PySparkRuntimeError

            session = state["active"] or state["default"]
            if session is None:
                raise PySparkRuntimeError(errorClass="NO_ACTIVE_OR_DEFAULT_SESSION", messageParameters={})
            return session

    class Context:
        _gateway = None  # no JVM yet; spark-submit's when it started this process

        @staticmethod
        def _ensure_initialized():  # the JVM, started with the options the launcher reads, if it starts now
            opts = os.environ.get("SPARK_SUBMIT_OPTS") if Context._gateway is None else None
            log.append(("jvm",) if opts is None else ("jvm", opts))

    class Conf:
        def __init__(self):
            log.append(("conf",))

        def get(self, key, default=None):
            return state["conf"].get(key, default)

        def contains(self, key):
            return key in state["conf"]

    monkeypatch.setattr(pyspark.sql, "SparkSession", Session)
    monkeypatch.setattr(pyspark, "SparkContext", Context)
    monkeypatch.setattr(pyspark, "SparkConf", Conf)
    monkeypatch.setattr(bsession, "require_java", lambda: log.append(("java",)) or "/usr/bin/java")
    monkeypatch.setattr(bsession, "_QUIET_JVM", {"launched": False})
    for var in ("PYSPARK_PYTHON", "SPARK_SUBMIT_OPTS"):
        monkeypatch.delenv(var, raising=False)

    def use(active=None, conf=None, jvm=False, default=None):
        state["active"], state["conf"], state["default"] = active, conf or {}, default
        Context._gateway = object() if jvm else None
        return log

    return use


def test_the_active_session_is_used_and_never_stopped(pyspark_stand_in):
    active = FakeSession(master="local[2]")
    log = pyspark_stand_in(active=active)
    assert bsession._session(None, True) == (active, False)
    assert bsession._session("local[2]", False) == (active, False)  # the same master, named
    assert log == []  # no JVM, no builder


def test_a_session_another_thread_made_is_used_and_never_stopped(pyspark_stand_in):
    """pyspark's active session is per thread: called from a worker thread (a notebook's background job, a web
    service's request), ``getActiveSession()`` said None, so the job built a session of its own, and the builder
    handed back the user's session, which the job then set to log fatal errors only, gave its pythonExec, and stopped
    at the end (the user's Spark gone). The session another thread made is now the process's, used as it is."""
    users = FakeSession(master="local[2]")
    log = pyspark_stand_in(default=users)
    assert bsession._session(None, True) == (users, False) and bsession._job_master(None) == "local[2]"
    assert bsession.running_session() is users and log == []  # no JVM, no builder, no log level
    with pytest.raises(ValueError, match=r"^master='yarn', but this process already has a Spark session on"):
        bsession._session("yarn", True)
    dead = FakeSession(master="local[2]")
    dead.sparkContext._jsc = None  # its SparkContext stopped (sc.stop()): pyspark still holds the session
    log = pyspark_stand_in(default=dead)
    session, started = bsession._session(None, False)
    assert session is not dead and started is True and ("getOrCreate",) in log
    pyspark_stand_in()
    assert bsession.running_session() is None


def test_another_master_than_the_active_sessions_is_refused(pyspark_stand_in):
    log = pyspark_stand_in(active=FakeSession(master="local[2]"))
    with pytest.raises(ValueError) as err:
        bsession._session("yarn", True)
    assert str(err.value) == ("master='yarn', but this process already has a Spark session on 'local[2]'; drop "
                              "master= to use it, or stop it first.")
    assert log == []


@pytest.mark.parametrize("conf, python", [
    ({"spark.master": "local[*]"}, sys.executable),  # plain python: spark-submit's default master
    ({"spark.master": "local[3]"}, sys.executable),  # spark-defaults.conf
    ({"spark.master": "yarn"}, None),  # spark-submit --master yarn, or EMR's spark-defaults.conf: the cluster's own
    ({"spark.master": "local[2]", "spark.pyspark.python": "/opt/py"}, None),  # the user's interpreter, kept
    ({}, sys.executable),
])
def test_without_master_the_configured_one_is_used_and_local_workers_run_this_python(pyspark_stand_in, conf,
                                                                                       python):
    log = pyspark_stand_in(conf=conf)
    session, started = bsession._session(None, True)
    assert started is True and isinstance(session, FakeSession)
    want = [("java",), ("jvm", f'"-Dlog4j2.configurationFile={bsession.QUIET_LOG4J}"'), ("conf",),
            ("appName", "bertfeat embed")]
    if python is not None:
        want.append(("config", "spark.pyspark.python", python))
    want += [("config", "spark.ui.showConsoleProgress", "false"), ("getOrCreate",), ("setLogLevel", "FATAL")]
    assert log == want  # never ("master", ...): spark-submit's or the configuration's master stands
    # what pyspark starts the local workers with (it reads no spark.pyspark.python): this python, or the one named
    want_exec = None if conf.get("spark.master") == "yarn" else conf.get("spark.pyspark.python", sys.executable)
    assert getattr(session.sparkContext, "pythonExec", None) == want_exec


@pytest.mark.parametrize("master, conf, python", [
    ("local[4]", {"spark.master": "yarn"}, sys.executable),
    ("spark://head:7077", {"spark.master": "local[*]"}, None),
    ("local[1]", {"spark.pyspark.python": "/opt/py"}, None),
])
def test_a_named_master_is_asked_for(pyspark_stand_in, master, conf, python):
    log = pyspark_stand_in(conf=conf)
    bsession._session(master, False)
    want = [("java",), ("jvm",), ("conf",), ("appName", "bertfeat embed"), ("master", master)]
    if python is not None:
        want.append(("config", "spark.pyspark.python", python))
    want += [("config", "spark.ui.showConsoleProgress", "true"), ("getOrCreate",)]  # not quiet: progress, logs
    assert log == want


def test_a_quiet_job_starts_its_jvm_logging_fatal_errors_only_and_leaves_the_environment(pyspark_stand_in,
                                                                                        monkeypatch):
    """``--quiet`` showed Spark's JVM lines: its WARN lines at start (before any level could be set) and a failed
    task's ERROR lines (its whole traceback, said again by the job's error). A JVM the job starts gets a log4j
    configuration of fatal errors only, through the launcher's SPARK_SUBMIT_OPTS (the user's own kept ahead of it,
    and put back after); a JVM already running (spark-submit's) is set to FATAL once the session is there; a later
    job that is not quiet gets Spark's level back in that quiet JVM."""
    assert "rootLogger.level = fatal" in bsession.QUIET_LOG4J.read_text()
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1")
    log = pyspark_stand_in(conf={"spark.master": "yarn"})
    bsession._session(None, True)
    assert ("jvm", f'-Dmine=1 "-Dlog4j2.configurationFile={bsession.QUIET_LOG4J}"') in log
    assert os.environ["SPARK_SUBMIT_OPTS"] == "-Dmine=1" and log[-1] == ("setLogLevel", "FATAL")
    log = pyspark_stand_in(conf={"spark.master": "yarn"}, jvm=True)  # the quiet JVM of the job above
    log.clear()
    bsession._session(None, False)
    assert ("jvm",) in log and log[-1] == ("setLogLevel", "WARN")
    monkeypatch.setattr(bsession, "_QUIET_JVM", {"launched": False})
    log.clear()
    bsession._session(None, True)  # spark-submit's JVM: its level once the session is there
    assert ("jvm",) in log and log[-1] == ("setLogLevel", "FATAL")
    log.clear()
    bsession._session(None, False)
    assert ("jvm",) in log and log[-1] == ("getOrCreate",)  # not quiet, in a JVM not ours: its own level


def test_a_quiet_job_puts_the_jvms_log_level_back_before_it_stops_its_session(pyspark_stand_in):
    """A quiet job that started its session set the JVM's log level to FATAL and stopped the session: the JVM stays
    with the process, so a session the user made later (a spark-submit script's next step, a notebook's next cell)
    logged fatal errors only, its failed tasks unsaid. The level is now put back as the session stops: spark-submit's
    JVM's own from before the job, and Spark's WARN in a JVM the quiet job launched with its fatal-only log4j."""
    log = pyspark_stand_in(conf={"spark.master": "yarn"}, jvm=True)  # spark-submit's JVM, logging at INFO
    session, started = bsession._session(None, True)
    assert started and log[-1] == ("setLogLevel", "FATAL")
    bsession._stop(session)
    assert log[-1] == ("setLogLevel", "INFO") and session.stopped == 1
    log = pyspark_stand_in(conf={"spark.master": "local[*]"})  # no JVM yet: the quiet job launches it, fatal-only
    session, _ = bsession._session(None, True)
    assert bsession._QUIET_JVM["launched"] and log[-1] == ("setLogLevel", "FATAL")
    bsession._stop(session)
    assert log[-1] == ("setLogLevel", "WARN") and session.stopped == 1
    log.clear()
    session, _ = bsession._session(None, False)  # not quiet: Spark's level at start, nothing to put back
    bsession._stop(session)
    assert [e for e in log if e[0] == "setLogLevel"] == [("setLogLevel", "WARN")] and session.stopped == 1
    session, _ = bsession._session(None, True)

    def gone(level):
        raise ConnectionError("planted: the JVM went away with the job")

    session.sparkContext.setLogLevel = gone
    with pytest.raises(ConnectionError):
        bsession._stop(session)
    assert session.stopped == 1  # stopped all the same


def test_pyspark_python_in_the_environment_is_left_to_spark(pyspark_stand_in, monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other/python")
    log = pyspark_stand_in(conf={"spark.master": "local[*]"})
    bsession._session(None, True)
    assert not [e for e in log if e[:2] == ("config", "spark.pyspark.python")]


# -- embed_dataframe: the DataFrame it builds -----------------------------------------------------------------------


class FakeDataFrame:
    """A Spark DataFrame's schema, ``select`` and ``mapInArrow``, recorded: nothing runs until the test runs the
    function ``mapInArrow`` was given."""

    def __init__(self, schema, log=None, session=None):
        self.schema, self.log = schema, [] if log is None else log
        self.sparkSession = session or FakeSession()

    def selectExpr(self, *cols):
        self.log.append(("selectExpr", cols))
        return FakeDataFrame(self.schema, self.log, self.sparkSession)

    def mapInArrow(self, fn, schema, profile=None):
        self.log.append(("mapInArrow", fn, schema) if profile is None else ("mapInArrow", fn, schema, profile))
        return "the mapped DataFrame"


def spark_schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("id", LongType(), nullable=False), StructField("review", StringType()),
                       StructField("title", StringType())])


@pytest.mark.parametrize("layout", ["columns", "list"])
def test_embed_dataframe_maps_the_selected_columns_to_the_cores_output(tiny_bert, in_task, layout):  # noqa: F811
    from pyspark.sql.types import ArrayType, FloatType, LongType

    from bertfeat.arrow import ArrowFeaturizer

    df = make_frame(9, seed=7)[["id", "review", "title"]]
    sdf = FakeDataFrame(spark_schema())
    got = bspark.embed_dataframe(sdf, ["review", "title"], keep_cols="id", layout=layout, model=tiny_bert,
                                 pooling="cls")
    assert got == "the mapped DataFrame"
    (select, cols), (_, fn, schema) = sdf.log
    # each column under a name of the job's own (pyspark's mapInArrow looks the input's names up as paths)
    assert select == "selectExpr" and cols == ("`id` AS _bertfeat_col0", "`review` AS _bertfeat_col1",
                                               "`title` AS _bertfeat_col2")
    from bertfeat.worker_recipe import libraries, tokenization

    reference = ArrowFeaturizer(["review", "title"], ["id"], layout=layout, model=tiny_bert, pooling="cls")
    want = reference(pa.Table.from_pandas(df, preserve_index=False))
    assert schema.names == want.schema.names
    assert schema["id"].dataType == LongType() and schema["id"].nullable is False  # the input's field, as it was
    kind = ArrayType(FloatType(), containsNull=False) if layout == "list" else FloatType()
    features_ = schema.fields[1:]
    assert all(f.dataType == kind and f.nullable for f in features_)
    provenance = json.loads(want.schema.metadata[b"bertfeat"])
    tagged = [(f.name, json.loads(f.metadata["bertfeat"])) for f in features_ if f.metadata]
    named = [f.name for f in features_] if layout == "list" else [features_[0].name]
    assert tagged == [(n, provenance) for n in named]
    assert all(set(f.metadata) <= {"bertfeat"} for f in features_)

    # the function Spark would run on each partition: the core's output, ready for Spark
    aliased = pa.Table.from_pandas(df, preserve_index=False).rename_columns([c[-14:] for c in cols])
    batches = aliased.to_batches(max_chunksize=4)
    assert fn.keywords["spec"] == {"text_cols": ["review", "title"], "keep_cols": ["id"], "layout": layout,
                                   # dtype="auto" as the driver fixed it for CPU tasks (no GPU to check against)
                                   "params": {"model": str(Path(tiny_bert).resolve()), "pooling": "cls",
                                              "dtype": "float32"}, "auto_dtype": None,
                                   # the driver's recipe, which each task checks its own against
                                   "expected": {**reference.recipe.key_dict(), "model": reference.recipe.model,
                                                "bertfeat_version": provenance["bertfeat_version"],
                                                # and the ids this environment's tokenizer gives its probe texts
                                                "tokenization": tokenization({"model": tiny_bert}),
                                                "libraries": libraries()},
                                   "names": {"_bertfeat_col0": "id", "_bertfeat_col1": "review",
                                             "_bertfeat_col2": "title"}}
    out = pa.Table.from_batches(list(fn(iter(batches))))
    assert out.num_rows == 9 and out.column("id").to_pylist() == df["id"].tolist()
    assert out.schema.names == want.schema.names
    if layout == "list":
        assert pa.types.is_list(out.column("review_embedding").type)  # Spark takes variable-size lists
        a = np.stack(out.column("review_embedding").to_numpy(zero_copy_only=False))
        b = np.stack(want.column("review_embedding").to_numpy(zero_copy_only=False))
    else:
        a, b = features(out, 1), features(pa.Table.from_batches([want]), 1)
    assert np.abs(a - b).max() <= 1e-5


def test_embed_dataframe_selects_a_column_once_and_checks_before_any_task(tiny_bert):
    sdf = FakeDataFrame(spark_schema())
    bspark.embed_dataframe(sdf, "review", keep_cols=["review", "id"], model=tiny_bert)
    (_, cols), (_, _, schema) = sdf.log
    assert cols == ("`review` AS _bertfeat_col0", "`id` AS _bertfeat_col1")  # kept first, each once
    assert schema.names[:2] == ["review", "id"] and schema.names[2].startswith("review_")
    with pytest.raises(ValueError, match=r"column\(s\) \['body'\] not found"):
        bspark.embed_dataframe(FakeDataFrame(spark_schema()), "body", model=tiny_bert)
    with pytest.raises(TypeError, match="text column 'id' holds int64 values, not text"):
        bspark.embed_dataframe(FakeDataFrame(spark_schema()), "id", model=tiny_bert)
    with pytest.raises(ValueError, match="layout='wide' is not valid"):
        bspark.embed_dataframe(FakeDataFrame(spark_schema()), "review", layout="wide", model=tiny_bert)



def test_embed_dataframe_tells_how_to_join_a_list_column_or_take_a_field_in_spark(tiny_bert):
    """A Spark DataFrame whose text column holds arrays (tags, tokens) or structs was told pandas' and polars' ways
    (df[col].str.join(' '), pl.col(col).list.join(' ')) and to "write the file again", of no file; now Spark's."""
    from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

    schema = StructType([StructField("id", LongType()), StructField("tags", ArrayType(StringType())),
                         StructField("meta", StructType([StructField("text", StringType())]))])
    with pytest.raises(TypeError) as info:
        bspark.embed_dataframe(FakeDataFrame(schema), "tags", model=tiny_bert)
    said = items = str(info.value)
    assert said.startswith("text column 'tags' holds list<element: string> values, not text: a row of several items")
    assert said.endswith("Join each row's items into one text first: sdf.withColumn('tags', "
                         "F.concat_ws(' ', 'tags')) (from pyspark.sql import functions as F), or embed the items as "
                         "texts of their own (F.explode).")
    with pytest.raises(TypeError) as info:
        bspark.embed_dataframe(FakeDataFrame(schema), "meta", model=tiny_bert)
    said = str(info.value)
    assert said.endswith("Take the field that holds the text first: sdf.withColumn('meta', F.col('meta').getField("
                         "'field')) (from pyspark.sql import functions as F).")
    for said in (items, said):
        assert "str.join" not in said and "pandas" not in said and "write the file" not in said

# -- what the manifest says, value by value ----------------------------------------------------------------------


def test_the_defaults_batch_10000_rows_and_a_session_without_task_cpus_counts_one(tiny_bert, tmp_path, spark_job):
    make_frame(6).to_parquet(tmp_path / "in.parquet")
    fake = spark_job(session=FakeSession(parallelism=1, conf={}), cpus=1)
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert fake.job.calls[0]["batch_rows"] == 10_000 and manifest["chunk_rows"] == 10_000
    assert fake.job.calls[0]["conf"] == {"spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
                                         "spark.sql.legacy.parquet.nanosAsLong": "true",
                                         "spark.sql.caseSensitive": "true"}
    assert manifest["spark"]["task_cpus"] == 1  # Spark's default, when the session's configuration has none


def test_the_timing_is_read_from_the_clock_in_milliseconds(tiny_bert, tmp_path, spark_job, monkeypatch):
    """Start, session started, end: the whole job and the session's start, each rounded to the millisecond."""
    make_frame(6).to_parquet(tmp_path / "in.parquet")
    ticks = iter([1000.0, 1002.5, 1002.7504321, 1007.1234567])
    monkeypatch.setattr(bspark, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    fake = spark_job()
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert manifest["timing"] == {"seconds": 7.123, "spark_start_seconds": 0.25,
                                  "embed_seconds": round(sum(s["stats"]["seconds"] for s in fake.job.stats), 3),
                                  "machine": run_facts(32, 37), "forward_pass": manifest["timing"]["forward_pass"]}
    assert next(ticks, "all read") == "all read"


def test_the_manifest_file_is_the_local_engines_layout(tiny_bert, tmp_path, spark_job):
    make_frame(6).to_parquet(tmp_path / "in.parquet")
    spark_job()
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    text = (tmp_path / "out.manifest.json").read_text()
    assert text == json.dumps(manifest, indent=2) and text.startswith('{\n  "output": ')  # as bertfeat embed writes


@pytest.mark.parametrize("name", ["empty.parquet", "empty.csv"])
def test_an_empty_input_leaves_an_earlier_runs_partial_folder_alone(tiny_bert, tmp_path, spark_job, monkeypatch,
                                                                    name):
    """Refused before anything is touched: the cache a dead run of the same --out kept is still there to resume.
    (session 11) A header-only CSV was refused only once staged, after the model was resolved, and the refusal
    removed the whole partial folder, the earlier run's cache with it."""
    import bertfeat.models

    def resolved(*args, **kwargs):
        raise AssertionError("the model was resolved for an input without rows")

    fake = spark_job()
    make_frame(5).iloc[:0].to_parquet(tmp_path / "empty.parquet")
    (tmp_path / "empty.csv").write_text("id,review\n")
    monkeypatch.setattr(bertfeat.models, "resolve_model", resolved)
    kept = tmp_path / "out.partial" / "cache" / "kept"
    kept.parent.mkdir(parents=True)
    kept.write_text("an earlier run's")
    with pytest.raises(ValueError, match="has no rows to embed"):
        bspark.embed_files(tmp_path / name, tmp_path / "out", "review", model=tiny_bert)
    assert kept.read_text() == "an earlier run's" and fake.asked == []


def test_a_hidden_parquet_file_is_refused_but_a_hidden_csv_is_staged(tiny_bert, tmp_path, spark_job):
    """Spark skips parquet files named _x or .x; a CSV file is never given to Spark (the driver stages it)."""
    fake = spark_job()
    make_frame(5).to_parquet(tmp_path / ".hidden.parquet")
    with pytest.raises(ValueError, match=r"Spark skips input file\(s\) \['.*/\.hidden\.parquet'\]"):
        bspark.embed_files(tmp_path / ".hidden.parquet", tmp_path / "out", "review", model=tiny_bert)
    assert fake.asked == [] and not list(tmp_path.glob("out*"))
    make_frame(5).to_csv(tmp_path / "_hidden.csv", index=False)
    manifest = bspark.embed_files(tmp_path / "_hidden.csv", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert manifest["counts"]["rows"] == 5 and manifest["spark"]["csv_staged"] is True


def test_an_output_folder_that_is_a_symlink_is_written_where_it_points_and_the_link_stays(tiny_bert, tmp_path,
                                                                                          spark_job):
    """``--out`` a link to a folder on a bigger disk: the job's folder was renamed over the link at its very end
    (``NotADirectoryError``, a dangling link on the first run). The link is followed, as on the other engines."""
    make_frame(12).to_parquet(tmp_path / "in.parquet")
    spark_job()
    (tmp_path / "big").mkdir()
    target, link = tmp_path / "big" / "out", tmp_path / "out"
    link.symlink_to(target, target_is_directory=True)
    manifest = bspark.embed_files(tmp_path / "in.parquet", link, "review", model=tiny_bert, quiet=True)
    assert link.is_symlink() and target.is_dir() and manifest["output"] == str(target)
    assert pq.read_table(link).num_rows == 12 and (tmp_path / "big" / "out.manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big", "in.parquet", "out"]


def test_a_task_whose_node_holds_another_copy_of_the_model_fails_the_job_before_it_embeds(tmp_path, spark_job,
                                                                                            in_task):  # noqa: F811
    """A cluster's model folder is a local copy on each node, one of them stale: the driver checked and named one
    model, and that node's tasks embedded with another, silently in ``embed_dataframe`` (its metadata is the
    driver's), and in ``embed_files`` refused only once every task had run ("dtype='auto' may differ"). Each task
    now compares the model files it read with the driver's before it embeds anything."""
    from tests.conftest import build_tiny_bert

    model = build_tiny_bert(tmp_path / "model")
    df = make_frame(12, seed=2)
    df.to_parquet(tmp_path / "in.parquet", index=False)
    stale = lambda call: build_tiny_bert(tmp_path / "model", seed=1)  # noqa: E731 - the node's copy: other weights
    spark_job(during=stale)
    with pytest.raises(ValueError) as err:
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=model, quiet=True)
    said = str(bspark._mistake_in(RuntimeError(str(err.value))))
    assert said.startswith(f"a Spark task on host {socket.gethostname()!r} read other model files at {model!r} "
                           "than the driver did (weights: sha256 ")
    assert "config" not in said and "tokenizer files" not in said  # only what differs is named
    assert said.endswith("that node's copy of the model is stale or another version, and its vectors would be "
                         "another model's. Make the model the same on every node (put it on a filesystem every "
                         "node mounts, or copy it to each node again), then run the job again; nothing was embedded "
                         "by this worker.")
    assert not (tmp_path / "out").exists() and not list((tmp_path / "out.partial" / "data").glob("part-*"))

    build_tiny_bert(tmp_path / "model")  # the copy put right: the job runs (the Python worker that read the stale
    # copy for the last job reads the files again, not the model it kept)
    spark_job()
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=model, quiet=True)
    assert manifest["counts"]["rows"] == 12
    # the model updated in place on every node between two jobs of one application: the Python worker that kept
    # the old one for the last job reads the new one (it embedded with the old, under the new one's name, silently)
    build_tiny_bert(tmp_path / "model", seed=2)
    spark_job()
    again = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=model, quiet=True,
                               overwrite=True)
    assert again["provenance"]["weights_sha256"] != manifest["provenance"]["weights_sha256"]
    assert bspark._WORKER["featurizer"].recipe.weights_sha256 == again["provenance"]["weights_sha256"]

    provenance, task = dataframe_job(model, {})  # embed_dataframe: the driver's metadata, then a stale node's task
    build_tiny_bert(tmp_path / "model", seed=1)
    with pytest.raises(ValueError, match=r"read other model files at .* than the driver did \(weights: sha256 "):
        list(task(iter([pa.record_batch({"_bertfeat_col0": [1], "_bertfeat_col1": ["a text"]})])))


def test_embed_files_fixes_dtype_auto_once_for_gpu_tasks_and_a_gpu_that_would_choose_otherwise_is_refused(
        tiny_bert, tmp_path, spark_job, in_task, monkeypatch):  # noqa: F811
    """The sibling of ``embed_dataframe``'s fixed dtype in a file job: each GPU task resolved ``dtype="auto"`` for its
    own GPU, so executors mixing A100s (bfloat16) and T4s (float16) ran every partition in two recipes, refused only
    by the final check once all had run. The driver now fixes it for the tasks' device, and a task whose GPU would
    choose otherwise is refused before its model loads."""
    import bertfeat.gpu

    make_frame(6, seed=1).to_parquet(tmp_path / "in.parquet", index=False)
    gpus = FakeSession(conf={"spark.task.cpus": "1", "spark.task.resource.gpu.amount": "1"})
    native = []  # what the GPU of the task the driver asks says: True where bfloat16 is native (an A100)
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: native.pop(0))
    in_task(FakeTask(cpus=1, gpus=["0"]))  # the driver (the suite's: no GPU) asks a task Spark gives a GPU
    native[:] = [True]
    fake = spark_job(session=gpus, fail_first=RuntimeError("the tasks are run below"))
    with pytest.raises(RuntimeError):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert native == [] and gpus.jobs == [["auto"]]  # one task asked, of the job's device
    (call,) = fake.job.calls
    assert call["params"]["dtype"] == "bfloat16" and call["auto_dtype"] == "bfloat16"
    assert call["expected"]["dtype"] == "bfloat16"
    spec = bspark._task_spec(["review"], [], "columns", call["params"], tmp_path / "d", call["input_schema"],
                             call["expected"], call["auto_dtype"])
    monkeypatch.setattr(bertfeat.gpu, "device_count", lambda: 1)
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: False)  # a T4's task
    in_task(FakeTask(cpus=1, gpus=["0"]))
    with pytest.raises(ValueError) as err:
        bspark._worker_featurizer(spec)
    assert str(err.value) == (
        "dtype='auto' was fixed on the Spark driver as 'bfloat16' for tasks on a GPU (the output's metadata names "
        "it), but this task's GPU (cuda:0) runs 'float16' for dtype='auto': pass dtype='float16' "
        "to run every task in it, or dtype='bfloat16' to run this one as the others.")
    # a cluster of T4s under a driver without a GPU: the task asked says float16, and every task runs it (the guess
    # of bfloat16 refused them all)
    monkeypatch.setattr(bertfeat.gpu, "device_count", lambda: 0)
    native[:] = [False]
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: native.pop(0))
    fake = spark_job(session=gpus, fail_first=RuntimeError("the tasks are run below"))
    with pytest.raises(RuntimeError):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    (call,) = fake.job.calls
    assert call["params"]["dtype"] == "float16" and call["auto_dtype"] == "float16"
    assert call["expected"]["dtype"] == "float16"
    spec = bspark._task_spec(["review"], [], "columns", call["params"], tmp_path / "d", call["input_schema"],
                             call["expected"], call["auto_dtype"])
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: False)  # the job's T4 tasks: not refused
    assert bspark._check_fixed_dtype(spec, "cuda:0") is None and spec["params"]["dtype"] == "float16"
    # a task that gets no GPU where device='cuda' is asked for: the tasks' own refusal, before the job, not Spark's
    in_task(FakeTask(cpus=1))
    monkeypatch.setattr(bertfeat.gpu, "device_count", lambda: 0)
    with pytest.raises(ValueError, match=r"in a Spark task on host .*, which Spark assigned no GPU: give the "
                                         r"executors GPUs with spark.executor.resource.gpu.amount"):
        bspark._fixed_auto_dtype({"device": "cuda"}, FakeSession(master="spark://h:7077"))
    asked = len(gpus.jobs)
    fake = spark_job(fail_first=RuntimeError("stop"))  # CPU tasks: float32, as before; the user's dtype stands
    with pytest.raises(RuntimeError):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert fake.job.calls[0]["params"]["dtype"] == "float32" and fake.job.calls[0]["auto_dtype"] is None
    assert fake.session.jobs == []  # no task asked
    fake = spark_job(session=gpus, fail_first=RuntimeError("stop"))
    with pytest.raises(RuntimeError):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True,
                           dtype="float16")
    assert fake.job.calls[0]["params"]["dtype"] == "float16" and fake.job.calls[0]["auto_dtype"] is None
    assert len(gpus.jobs) == asked


def test_embed_files_gives_gpu_tasks_the_recipe_of_the_dtype_it_fixed_for_a_family_whose_key_holds_it(
        tmp_path, spark_job, in_task, monkeypatch):  # noqa: F811
    """The recipe a file job's tasks are checked against is the recipe of the dtype the driver fixed for them, not
    the driver's own CPU recipe with its dtype swapped: ALBERT's and ELECTRA's half-precision recipes carry a
    format of their own (recipe.LOW_PRECISION_MODEL_FORMATS), so every GPU task of such a model under
    dtype='auto' was refused as computing "another recipe than the driver" (model_format 1 here, None there)."""
    import bertfeat.gpu
    from bertfeat.arrow import ArrowFeaturizer
    from bertfeat.worker_recipe import check_worker_recipe
    from tests.tiny_encoders import build_tiny_encoder

    model = build_tiny_encoder(tmp_path / "albert", "albert")
    make_frame(6, seed=1).to_parquet(tmp_path / "in.parquet", index=False)
    gpus = FakeSession(conf={"spark.task.cpus": "1", "spark.task.resource.gpu.amount": "1"})
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: True)  # the task asked: an A100's
    in_task(FakeTask(cpus=1, gpus=["0"]))
    fake = spark_job(session=gpus, fail_first=RuntimeError("the tasks are run below"))
    with pytest.raises(RuntimeError):
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=model, quiet=True)
    (call,) = fake.job.calls
    assert call["params"]["dtype"] == "bfloat16" and call["expected"]["model_format"] == 1
    task = ArrowFeaturizer(["review"], **{**call["params"], "device": "cpu"}).recipe  # a GPU task's, in bfloat16
    check_worker_recipe(task, call["expected"], "a Spark task")  # not refused


def test_a_task_whose_libraries_tokenize_otherwise_fails_the_job_before_it_embeds(tiny_bert, tmp_path, spark_job,
                                                                                  monkeypatch):
    """Another transformers/tokenizers on an executor reads the same tokenizer files into other ids, under the same
    recipe key: its task now refuses before its first batch (test_worker_recipe.py has the check itself)."""
    from tests.test_worker_recipe import other_release

    make_frame(6, seed=1).to_parquet(tmp_path / "in.parquet", index=False)
    spark_job(during=lambda call: other_release(monkeypatch))  # the executors' environment
    with pytest.raises(ValueError) as err:
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert str(bspark._mistake_in(RuntimeError(str(err.value)))).startswith(
        f"a Spark task on host {socket.gethostname()!r} tokenizes texts into other ids than the driver")
    assert not (tmp_path / "out").exists()


PANDAS_NOTICE = ("PySpark does not yet fully support pandas >= 3.0.0. Some features may not work correctly. It is "
                 "recommended to use pandas < 3.0.0 for now.")


def test_a_quiet_command_leaves_out_pysparks_pandas_version_notice_and_nothing_else(monkeypatch, tmp_path):
    # `bertfeat embed --engine spark --quiet` printed pyspark's "FutureWarning: PySpark does not yet fully support
    # pandas >= 3.0.0" twice on stderr (at its import and at the pandas UDF), a notice about versions, not the job.
    # The command (which owns its process) leaves that one notice out, and shows every other warning; a command that
    # is not quiet shows it.
    from pyspark.sql import SparkSession

    seen = []

    def job(*args, quiet=False, **kwargs):
        seen.append(quiet)
        warnings.warn(PANDAS_NOTICE, FutureWarning)
        warnings.warn("something else pyspark says", FutureWarning)
        warnings.warn("a note of bertfeat's", UserWarning)
        return {}

    monkeypatch.setattr(bspark, "embed_files", job)
    monkeypatch.setattr(bsession, "require_java", lambda: "/usr/bin/java")
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    make_frame(3).to_parquet(tmp_path / "in.parquet", index=False)
    for quiet in (True, False):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            before = list(warnings.filters)
            assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--out", str(tmp_path / "o"),
                         "--engine", "spark", *(["--quiet"] if quiet else [])]) == 0
            assert warnings.filters == before  # the command's filter ends with it (main runs in R's process too)
        assert [str(w.message) for w in caught] == ([] if quiet else [PANDAS_NOTICE]) + [
            "something else pyspark says", "a note of bertfeat's"]
    assert seen == [True, False]


def test_a_quiet_job_of_the_api_leaves_the_warnings_filters_of_the_process_as_they_are(tiny_bert, tmp_path,
                                                                                      spark_job):
    """spark.embed_files(quiet=True) ran the whole job under warnings.catch_warnings() to hide pyspark's pandas
    notice: the filters are the process's, every thread's, so a filter another thread (a notebook's, a web service's)
    added during the job was undone when it ended, and that thread's own notices were hidden meanwhile. A library call
    now leaves them as they are: only the command line, which owns its process, leaves the notice out."""
    import threading

    make_frame(6, seed=1).to_parquet(tmp_path / "in.parquet", index=False)
    during = {}

    def meanwhile(call):
        during["filters"] = list(warnings.filters)
        warnings.warn(PANDAS_NOTICE, FutureWarning)  # pyspark's, at the job's pandas UDF: the caller's filters decide
        other = threading.Thread(target=lambda: warnings.filterwarnings("ignore", message="another thread's"))
        other.start()
        other.join()

    spark_job(during=meanwhile)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = list(warnings.filters)
        bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
        after = list(warnings.filters)
    assert during["filters"] == before  # nothing added for the job
    assert after == [("ignore", after[0][1], Warning, None, 0)] + before  # the other thread's filter stays
    assert after[0][1].pattern == "another thread's"
    assert [str(w.message) for w in caught if issubclass(w.category, FutureWarning)] == [PANDAS_NOTICE]


class FakeConnectSession(FakeSession):
    """A Spark Connect session (Spark 3.4+ ``SparkSession.builder.remote(...)``, Databricks serverless): it has no
    SparkContext, and says so as pyspark's connect session does (pyspark/sql/connect/session.py's ``__getattr__``)."""

    @property
    def sparkContext(self):
        from pyspark.errors import PySparkAttributeError

        raise PySparkAttributeError(errorClass="JVM_ATTRIBUTE_NOT_SUPPORTED",
                                    messageParameters={"attr_name": "sparkContext"})

    @sparkContext.setter
    def sparkContext(self, value):  # FakeSession's __init__ and stop set one: a Connect session keeps none
        pass

    def newSession(self):
        """pyspark 4.3's: a new session on the server, through a client (a gRPC channel) of its own."""
        other = super().newSession()
        other.session_id, other.client = f"session-{len(self.sessions)}", FakeConnectClient()
        return other


class FakeConnectClient:
    """The client of a Spark Connect session: it can release its session on the server and close its channel."""

    def __init__(self, fails=None):
        self.log, self.fails = [], fails

    def release_session(self):
        self.log.append("release_session")
        if self.fails is not None:
            raise self.fails

    def close(self):
        self.log.append("close")


def test_the_connect_stand_in_refuses_sparkcontext_as_pysparks_connect_session_does():
    from pyspark.errors import PySparkAttributeError

    with pytest.raises(PySparkAttributeError) as err:
        FakeConnectSession().sparkContext
    assert err.value.getCondition() == "JVM_ATTRIBUTE_NOT_SUPPORTED" and isinstance(err.value, AttributeError)
    assert "Attribute `sparkContext` is not supported in Spark Connect" in str(err.value)


def test_embed_dataframe_on_a_spark_connect_session_asks_its_gpu_task_without_a_sparkcontext(tiny_bert, in_task,
                                                                                             monkeypatch):  # noqa: F811
    """A Spark Connect session has no ``sparkContext``: ``dtype="auto"`` for GPU tasks asked a task through
    ``sparkContext.parallelize`` and failed with pyspark's JVM_ATTRIBUTE_NOT_SUPPORTED, and ``device="cuda"`` read
    the master from it. The task is now asked by a one-row DataFrame job (which Connect runs), and a Connect
    session's tasks check their own GPU, as a cluster's do."""
    import bertfeat.gpu

    gpu_conf = {"spark.task.resource.gpu.amount": "1"}
    in_task(FakeTask(cpus=1, gpus=["0"]))  # the task the driver (no GPU) asks: a T4's
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: False)
    for device in ("auto", "cuda"):
        session = FakeConnectSession(conf=dict(gpu_conf))
        sdf = FakeDataFrame(spark_schema(), session=session)
        assert bspark.embed_dataframe(sdf, "review", keep_cols="id", model=tiny_bert, device=device) == (
            "the mapped DataFrame")
        _, func, schema = sdf.log[-1]
        assert json.loads(schema.fields[1].metadata["bertfeat"])["dtype"] == "float16"
        assert func.keywords["spec"]["auto_dtype"] == "float16" and session.jobs == [[device]]
    # and the classic session's task is asked the same way (tests/test_spark.py runs it in a real Spark job)
    session = FakeSession(master="spark://h:7077", conf=dict(gpu_conf))
    assert bspark._ask_a_task(session, "auto") == "float16" and session.jobs == [["auto"]]


def test_embed_files_runs_on_a_spark_connect_session(tiny_bert, tmp_path, spark_job):
    """embed_files on the active Spark Connect session read ``spark.sparkContext`` for the partitions and the
    manifest's master, failing the job after the model loaded (JVM_ATTRIBUTE_NOT_SUPPORTED). Now the rows alone set
    the partitions (about batch_rows each: Connect does not say its cores), and the manifest's master is None
    (the server's, unknown to the client)."""
    df = make_frame(50, seed=5)
    df.to_parquet(tmp_path / "in.parquet", index=False)
    fake = spark_job(session=FakeConnectSession(conf={"spark.task.cpus": "2"}))
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", keep_cols="id",
                                  batch_rows=20, model=tiny_bert, quiet=True)
    assert manifest["spark"]["master"] is None and manifest["spark"]["partitions"] == 3  # ceil(50 / 20)
    assert manifest["spark"]["task_cpus"] == 2 and manifest["counts"]["rows"] == 50
    out = pq.read_table(tmp_path / "out")
    assert out.column("id").to_pylist() == df["id"].tolist()
    assert fake.asked == [(None, True)]
    assert bspark._partitions(FakeSession(parallelism=8), 50, 20) == 8  # a classic session: its cores, at least


def test_a_spark_connect_session_is_used_as_it_is_and_master_is_refused_with_it(pyspark_stand_in):
    """``_session``/``_job_master`` read the active session's master from its SparkContext: on a Spark Connect
    session, pyspark's JVM_ATTRIBUTE_NOT_SUPPORTED. The session is now used as it is; ``--master`` beside it is
    refused saying what to do; its tasks run where its server sends them (no master here: no local GPU check)."""
    active = FakeConnectSession()
    log = pyspark_stand_in(active=active)
    assert bsession._session(None, True) == (active, False)
    assert bsession._job_master(None) is None
    with pytest.raises(ValueError) as err:
        bsession._session("local[2]", True)
    assert str(err.value) == ("master='local[2]', but this process already has a Spark Connect session, whose tasks "
                              "run where its server sends them; drop master= to use it, or stop it first.")
    assert log == []
    bspark._check_device("cuda", lambda: None)  # the server's executors check their own GPU


def test_a_session_the_builder_makes_a_spark_connect_one_is_not_given_a_python_or_a_log_level(pyspark_stand_in,
                                                                                             monkeypatch):
    """With SPARK_REMOTE set, pyspark's builder makes a Spark Connect session: the local workers' Python and the
    JVM's log level, set through its SparkContext, failed the job; they are the server's, and left to it."""
    log = pyspark_stand_in(conf={"spark.master": "local[*]"})
    monkeypatch.setattr(FakeBuilder, "getOrCreate", lambda self: self.log.append(("getOrCreate",))
                        or FakeConnectSession())
    session, started = bsession._session(None, True)
    assert isinstance(session, FakeConnectSession) and started is True and log[-1] == ("getOrCreate",)


def test_a_session_of_a_spark_connect_server_is_started_without_java_or_a_jvm_here(pyspark_stand_in, monkeypatch):
    """``--master sc://HOST:15002`` went to the builder as a master: Spark's "Could not parse Master URL" and a Java
    traceback; with SPARK_REMOTE=sc://... (pyspark's own way to name a Connect server) a job needed Java here,
    launched a JVM of its own, and gave the server's session options the server refuses (a warning each: the local
    workers' Python, the console progress). A Connect server's session needs none of it: the builder is asked for it
    alone, and the tasks' master is the server's (None: no GPU check on this machine)."""
    def no_java():
        raise AssertionError("Java asked for")

    monkeypatch.setattr(bsession, "require_java", no_java)
    log = pyspark_stand_in(conf={"spark.master": "local[*]"})
    monkeypatch.setattr(FakeBuilder, "getOrCreate", lambda self: self.log.append(("getOrCreate",))
                        or FakeConnectSession())
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    session, started = bsession._session("sc://cluster:15002", True)
    assert isinstance(session, FakeConnectSession) and started is True
    assert log == [("remote", "sc://cluster:15002"), ("getOrCreate",)]
    assert bsession._job_master("sc://cluster:15002") is None
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # pyspark's builder's mark, which its stop() leaves
    bsession._job_ended(session, started)
    # stopped, and the mark gone: the user's next SparkSession.builder.getOrCreate() was CONNECT_URL_NOT_SET
    assert session.stopped == 1 and "SPARK_CONNECT_MODE_ENABLED" not in os.environ

    log.clear()
    monkeypatch.setenv("SPARK_REMOTE", "sc://cluster:15002/;token=secret")
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # the process's own before the job: left to it
    session, started = bsession._session(None, False)
    assert isinstance(session, FakeConnectSession) and started is True and log == [("getOrCreate",)]
    assert bsession._job_master(None) is None and log == [("getOrCreate",)]
    bsession._job_ended(session, started)
    assert os.environ["SPARK_CONNECT_MODE_ENABLED"] == "1"

    log.clear()
    monkeypatch.setenv("SPARK_REMOTE", "local[2]")  # a server pyspark starts in a JVM here: Java asked for
    with pytest.raises(AssertionError, match="Java asked for"):
        bsession._session(None, False)
    assert bsession.connect_url(None) is None and bsession.connect_url("spark://host:7077") is None


@pytest.mark.parametrize("env", [{"SPARK_REMOTE": "local[2]"}, {"SPARK_API_MODE": "Connect", "MASTER": "local[2]"}])
@pytest.mark.parametrize("quiet", [True, False])
def test_spark_remote_local_has_the_builder_launch_its_server_with_this_python_and_no_options(pyspark_stand_in,
                                                                                              monkeypatch, quiet, env):
    """SPARK_REMOTE=local[2], pyspark's way to run a Spark Connect server here: bertfeat launched the JVM first,
    without the server's jars, so the server failed to start (Java's ``ClassNotFoundException: SparkConnectPlugin``,
    a traceback); launched by the builder, its options were refused, a warning each ("Failed to set
    spark.pyspark.python ... CANNOT_MODIFY_CONFIG"), and its Python workers ran ``python3`` on PATH ("No module
    named 'pyarrow'"). Now the builder launches it, given no option, this Python (and a quiet job's log4j file) in
    the launch's environment only; a PYSPARK_PYTHON of the user's is theirs. The same under SPARK_API_MODE=connect
    (Spark 4's API mode: the builder starts a local server on ``--master``, else MASTER's, else local), where the
    workers' Python failed the job alike."""
    log = pyspark_stand_in(conf={"spark.master": "local[*]"})
    launched = []

    def get_or_create(self):
        self.log.append(("getOrCreate",))
        launched.append({k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "SPARK_SUBMIT_OPTS")})
        return FakeConnectSession()

    monkeypatch.setattr(FakeBuilder, "getOrCreate", get_or_create)
    for var in ("SPARK_REMOTE", "SPARK_API_MODE", "MASTER", "SPARK_CONNECT_MODE_ENABLED"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert bsession._job_master(None, quiet) == "local[2]" and log == [("java",)]  # no JVM launched to ask it
    session, started = bsession._session(None, quiet)
    assert isinstance(session, FakeConnectSession) and started is True
    assert log == [("java",), ("java",), ("getOrCreate",)]  # no JVM before the builder's, no option, no app name
    log4j = (f'"-Dlog4j2.configurationFile={bsession.QUIET_LOG4J}" -Dspark.ui.showConsoleProgress=false' if quiet
             else None)  # a quiet job: fatal errors only, no progress bar
    assert launched == [{"PYSPARK_PYTHON": sys.executable, "SPARK_SUBMIT_OPTS": log4j}]
    assert "PYSPARK_PYTHON" not in os.environ and "SPARK_SUBMIT_OPTS" not in os.environ
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # the builder's mark on the process
    bsession._job_ended(session, started)
    assert session.stopped == 1 and "SPARK_CONNECT_MODE_ENABLED" not in os.environ

    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python")
    bsession._job_ended(*bsession._session(None, quiet))
    assert launched[1]["PYSPARK_PYTHON"] == "/opt/py/bin/python" == os.environ["PYSPARK_PYTHON"]
    if "SPARK_API_MODE" in env:  # a --master of the job's: the server's
        log.clear()
        bsession._job_ended(*bsession._session("local[3]", quiet))
        assert log == [("java",), ("master", "local[3]"), ("getOrCreate",)]


@pytest.mark.parametrize("remote", ["local[2]", "sc://cluster:15002"])
def test_a_master_beside_spark_remote_is_refused_saying_which_to_drop(pyspark_stand_in, monkeypatch, remote):
    """(found by a review of session 13's merged work, 2026-11-27, session 13) The leftovers hunt made a job run
    under SPARK_REMOTE (local[2]: a Spark Connect server pyspark starts here) and left the job given --master
    beside it: the builder took the master and pyspark refused them together, a traceback of
    PySparkRuntimeError [CANNOT_CONFIGURE_SPARK_CONNECT_MASTER] from `bertfeat embed --engine spark --master ...`
    (sc://... alike). Refused before the JVM or the builder, saying which to drop."""
    log = pyspark_stand_in(conf={"spark.master": "local[*]"})
    for var in ("SPARK_API_MODE", "MASTER", "SPARK_CONNECT_MODE_ENABLED"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPARK_REMOTE", remote)
    with pytest.raises(ValueError) as info:
        bsession._session("local[3]", True)
    assert str(info.value) == (
        f"master='local[3]', but SPARK_REMOTE={remote!r} names a Spark Connect server, and pyspark runs a session "
        "on one or the other: drop master= to run on that server, or unset SPARK_REMOTE to run on 'local[3]'.")
    assert all(entry[0] not in ("jvm", "getOrCreate", "master") for entry in log), log


def test_a_job_on_the_users_session_never_changes_its_options_not_even_while_it_runs(tiny_bert, tmp_path,
                                                                                      spark_job):
    """A job on the user's session set its three options on it for the job's length (_conf) and put the old values
    back after: another thread's queries on that session (a notebook's, a web service's) ran with case-sensitive
    names meanwhile, and an option that thread set during the job was undone when it ended. The job now runs in a
    session of its own beside the user's (newSession: their SparkContext, the cluster's configuration)."""
    import threading

    make_frame(6, seed=1).to_parquet(tmp_path / "in.parquet", index=False)
    users = FakeSession(conf={"spark.task.cpus": "2"})
    users.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")  # the user's own, set at run time
    before = dict(users.conf.values)
    seen = {}

    def meanwhile(call):
        seen["users"] = dict(users.conf.values)
        other = threading.Thread(target=lambda: users.conf.set("spark.sql.caseSensitive", "false"))
        other.start()
        other.join()

    fake = spark_job(session=users, during=meanwhile)
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert seen["users"] == before  # nothing of the job's on the user's session while it ran
    assert users.conf.values == {**before, "spark.sql.caseSensitive": "false"}  # the other thread's option stays
    (job,) = users.sessions
    assert fake.job.calls[0]["conf"] == {"spark.task.cpus": "2", "spark.sql.session.timeZone": "Asia/Tokyo",
                                         "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
                                         "spark.sql.legacy.parquet.nanosAsLong": "true",
                                         "spark.sql.caseSensitive": "true"}  # the user's, and the job's own on top
    assert job.stopped == 0 and users.stopped == 0  # stopping either would stop the user's SparkContext
    assert manifest["spark"]["task_cpus"] == 2 and manifest["spark"]["master"] == "local[3]"


def test_the_jobs_session_carries_the_users_runtime_settings_and_its_own_options_on_top():
    """newSession() starts from the cluster's configuration, so a job on the user's session read and wrote without
    the settings made on it since (a storage account's key, fs.s3a.*, the session time zone, binaryAsString). The
    job's session now gets each user's key whose value differs, loses each key the user's has not (unset since),
    and a key Spark lets no session change is left as it is; the job's three options go on top, and the user's
    session is never touched."""
    users = FakeSession(conf={"spark.task.cpus": "2", "spark.app.name": "notebook", "spark.sql.shuffle.partitions": "9",
                              "spark.sql.warehouse.dir": "/cluster"}, static={"spark.sql.warehouse.dir"})
    users.conf.set("fs.azure.account.key.acct.dfs.core.windows.net", "the key")
    users.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    users.conf.set("spark.sql.caseSensitive", "false")  # the user's own value of one of the job's options
    users.conf.unset("spark.sql.shuffle.partitions")
    users.conf.values["spark.sql.warehouse.dir"] = "/elsewhere"  # as a builder option before the session existed
    before = dict(users.conf.values)

    assert bsession._job_session(users, started=True) is users  # a session the job started is its own
    job = bsession._job_session(users, started=False)
    assert job is not users and users.sessions == [job]
    # the static key is refused (as Spark does) and left the cluster's; the job goes on
    assert job.conf.values == {"spark.task.cpus": "2", "spark.app.name": "notebook", "spark.sql.warehouse.dir":
                               "/cluster", "fs.azure.account.key.acct.dfs.core.windows.net": "the key",
                               "spark.sql.session.timeZone": "Asia/Tokyo", "spark.sql.caseSensitive": "false"}
    with bsession._conf(job, {"spark.sql.caseSensitive": "true"}):
        assert job.conf.values["spark.sql.caseSensitive"] == "true"
        assert users.conf.values == before
    assert users.conf.values == before and users.stopped == 0


def test_a_jobs_own_spark_connect_session_is_released_on_the_server_as_the_job_ends(tiny_bert, tmp_path, spark_job):
    """A job's own session beside the user's (newSession()) is, on Spark Connect, a session on the server, which
    keeps it for an hour of idleness unless the client releases it: each job left one more (tests/
    test_spark_connect.py counts them on a real server). It is now released and its channel closed as the job ends,
    never stopped (stop() of a local remote session stops the server under the user's); a classic one shares the
    user's SparkContext and is left to it, and a session the job started is stopped as before."""
    from bertfeat.exceptions import SparkSessionWarning

    make_frame(6, seed=1).to_parquet(tmp_path / "in.parquet", index=False)
    users = FakeConnectSession(conf={"spark.task.cpus": "2"})
    spark_job(session=users)
    bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", keep_cols="id", model=tiny_bert,
                       quiet=True)
    (job,) = users.sessions
    assert job.client.log == ["release_session", "close"] and job.stopped == 0 and users.stopped == 0

    classic = FakeSession()
    bsession._end_job_session(classic.newSession(), classic)  # has no client: nothing asked of it
    assert classic.stopped == 0 and classic.sessions[0].stopped == 0

    job = users.newSession()
    job.client = FakeConnectClient(fails=ConnectionError("the server went away"))
    with pytest.warns(SparkSessionWarning, match=f"session {job.session_id} could not be released .the server went "
                                            "away.; the server closes it once it has been idle"):
        bsession._end_job_session(job, users)
    assert job.client.log == ["release_session", "close"]


def test_a_jobs_session_the_server_cannot_release_is_one_warning_line_of_the_command(tiny_bert, tmp_path, spark_job,
                                                                                     capsys, caplog):
    """(found by a leftovers hunt, 2026-11-27, session 12) the notice that the job's own server session could not
    be released was a plain RuntimeWarning: `bertfeat embed` wrote it as Python's two lines (a path into
    spark_session.py, `RuntimeWarning:`, the source line), where every other warning of the command is one
    `bertfeat embed: warning:` line; and where warnings are errors it took the place of the job's result. The
    output is whole: the command succeeds."""
    class Unreleased(FakeConnectSession):
        def newSession(self):
            other = super().newSession()
            other.client = FakeConnectClient(fails=ConnectionError("the server went away"))
            return other

    make_frame(6, seed=1).to_parquet(tmp_path / "in.parquet", index=False)
    users = Unreleased(conf={"spark.task.cpus": "2"})
    spark_job(session=users)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        # shown as Python shows a warning outside pytest: formatted as it is raised, on standard error
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(message, category, filename, lineno, line))
        assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--out", str(tmp_path / "out"),
                     "--model", tiny_bert, "--engine", "spark", "--quiet"]) == 0
    (job,) = users.sessions
    assert capsys.readouterr().err == (
        f"bertfeat embed: warning: the Spark job's own Spark Connect session {job.session_id} could not be released "
        "(the server went away); the server closes it once it has been idle for "
        "spark.connect.session.manager.defaultSessionTimeout.\n")
    assert job.client.log == ["release_session", "close"]
    # where warnings are errors (python -W error), the notice raised in the job's finally replaced its result: the
    # command failed on a whole output, or a failed job's own error was lost. Now it is logged
    with warnings.catch_warnings(), caplog.at_level("WARNING", logger="bertfeat"):
        warnings.simplefilter("error")
        assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--out", str(tmp_path / "again"),
                     "--model", tiny_bert, "--engine", "spark", "--quiet"]) == 0
    assert [r.getMessage() for r in caplog.records if "could not be released" in r.getMessage()] == [
        f"the Spark job's own Spark Connect session {users.sessions[1].session_id} could not be released (the "
        "server went away); the server closes it once it has been idle for "
        "spark.connect.session.manager.defaultSessionTimeout."]
    assert pq.read_table(tmp_path / "again").num_rows == 6


def test_a_spark_connect_client_without_new_sessions_runs_the_job_on_the_users_session_and_puts_its_options_back(
        tiny_bert, tmp_path, spark_job):
    """pyspark's Spark Connect client before 4.3 (Databricks Connect, serverless) raises NOT_IMPLEMENTED for
    newSession(): the job failed there before reading a row. It now runs on the user's session itself, its options
    set for the job's length and put back (docs/spark.md says so)."""
    from pyspark.errors import PySparkNotImplementedError

    class OldConnectSession(FakeConnectSession):
        def newSession(self):
            raise PySparkNotImplementedError(errorClass="NOT_IMPLEMENTED",
                                             messageParameters={"feature": "newSession()"})

    make_frame(6, seed=1).to_parquet(tmp_path / "in.parquet", index=False)
    users = OldConnectSession(conf={"spark.task.cpus": "2", "spark.sql.session.timeZone": "Asia/Tokyo"})
    fake = spark_job(session=users)
    bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", model=tiny_bert, quiet=True)
    assert fake.job.calls[0]["conf"] == {"spark.task.cpus": "2", "spark.sql.session.timeZone": "Asia/Tokyo",
                                         "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
                                         "spark.sql.legacy.parquet.nanosAsLong": "true",
                                         "spark.sql.caseSensitive": "true"}
    assert users.conf.values == {"spark.task.cpus": "2", "spark.sql.session.timeZone": "Asia/Tokyo"}
    assert pq.read_table(tmp_path / "out").num_rows == 6


def test_a_session_a_job_started_is_stopped_only_when_no_other_threads_job_runs_on_it(pyspark_stand_in, monkeypatch):
    """Two jobs from two threads (concurrent.futures, a web service's requests) in a process with no Spark session:
    the first started one, the second found it running (the process's default session) and used it, and the first,
    ending, stopped it under the second: its SparkContext gone mid-job. A session a job started is now stopped by
    the last job running on it; the user's session never."""
    monkeypatch.setattr(bsession, "_STARTED", StartedByJobs())
    log = pyspark_stand_in()
    first, started = bsession._session(None, False)
    assert started is True and ("getOrCreate",) in log
    pyspark_stand_in(default=first)  # what getOrCreate made the process's default session
    second, started_too = bsession._session(None, False)
    assert second is first and started_too is False
    bsession._job_ended(first, started)  # the first job ends while the second runs
    assert first.stopped == 0
    bsession._job_ended(second, started_too)  # the last job on it ends
    assert first.stopped == 1
    users = FakeSession(master="local[2]")
    pyspark_stand_in(default=users)
    session, started = bsession._session(None, False)
    assert (session, started) == (users, False)
    bsession._job_ended(session, started)
    assert users.stopped == 0


def test_a_job_starting_while_the_last_job_stops_its_session_waits_and_starts_its_own(pyspark_stand_in, monkeypatch):
    """The last job on a session a job started stopped it after letting the count go: a job of another thread
    starting in that second found it still running, took it for the user's (not counted) and ran on it as it was
    stopped under it ("'NoneType' object has no attribute 'sc'"). The stop is now part of the job's end: a job
    starting meanwhile waits for it, then starts a session of its own."""
    import threading

    monkeypatch.setattr(bsession, "_STARTED", StartedByJobs())
    use = pyspark_stand_in
    use()
    first, started = bsession._session(None, False)
    use(default=first)  # what getOrCreate made the process's default session
    stopping, stopped = threading.Event(), threading.Event()

    def slow_stop():  # spark.stop() takes a while: the JVM's context, its executors
        stopping.set()
        stopped.wait(0.5)
        first.sparkContext = None
        use(default=None)  # stopped, it is no session of the process's any more
        first.stopped += 1

    first.stop = slow_stop
    ender = threading.Thread(target=bsession._job_ended, args=(first, started))
    ender.start()
    assert stopping.wait(5)
    second = bsession._session(None, False)  # another thread's job, starting while the first's session stops
    stopped.set()
    ender.join()
    assert first.stopped == 1
    assert second[0] is not first and second[1] is True  # its own session, which its end stops
    bsession._job_ended(*second)
    assert second[0].stopped == 1 and bsession._STARTED.jobs == 0


def test_the_input_checks_by_value_hidden_names_glob_characters_and_decimal_widening():
    """(mutation testing, session 11) spark_input's small checks, word for word and at their edges."""
    from pyspark.sql.types import DecimalType, DoubleType

    from bertfeat.spark_input import _check_visible, _hadoop_literal, _spark_widens

    files = [Path("/d/_a.parquet"), Path("/d/ok.parquet"), Path("/d/.b.parquet"), Path("/d/_c"), Path("/d/_d")]
    with pytest.raises(ValueError) as refused:
        _check_visible(files)
    assert str(refused.value) == (
        "Spark skips input file(s) ['/d/_a.parquet', '/d/.b.parquet', '/d/_c'] (names starting with '_' or '.' are "
        "hidden from Spark); rename them, or use the local engine.")
    assert _check_visible([Path("/_d/a.parquet"), Path("/d/a_b.parquet")]) is None  # the name, not its folder
    assert _hadoop_literal("/d/r[1]{a,b}*?\\x.parquet") == "/d/r\\[1\\]\\{a,b\\}\\*\\?\\\\x.parquet"
    assert _hadoop_literal("/d/plain-name_1.parquet") == "/d/plain-name_1.parquet"
    assert _spark_widens(DecimalType(10, 2), DecimalType(11, 3)) is True  # as many digits before the point
    assert _spark_widens(DecimalType(10, 2), DecimalType(10, 3)) is False  # one fewer before it
    assert _spark_widens(DecimalType(10, 2), DoubleType()) is False
