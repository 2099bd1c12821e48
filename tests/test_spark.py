"""Real jobs on a local Spark session (local[2], two attempts per task, started once for this file): the Spark
engine's output equals the single-machine CLI's row for row, with the same schema and metadata, for CSV and parquet
input and both layouts; a rerun is answered by the shared cache; a retried task is counted once.

Needs pyspark and Java (scripts/setup.sh installs both; BERTFEAT_SKIP_SPARK=1 skips these tests).
"""

import json
import os
import re
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat.cli import main
from tests._spark_sessions import ROOT, local_session, require_spark

require_spark()

import bertfeat.spark as bspark  # noqa: E402
from tests.test_cli import make_frame  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    """One local Spark session for this file: two cores, and a second attempt for a failed task."""
    with local_session() as session:
        yield session


def features(table: pa.Table, skip: int) -> np.ndarray:
    cols = table.columns[skip:]
    if pa.types.is_fixed_size_list(cols[0].type) or pa.types.is_list(cols[0].type):
        return np.hstack([np.stack(c.to_numpy(zero_copy_only=False)) for c in cols])
    return np.column_stack([c.to_numpy() for c in cols])


def test_parquet_job_matches_the_local_engine_and_a_rerun_hits_the_cache(tiny_bert, spark, tmp_path):
    df = make_frame(150, seed=3).drop_duplicates("review").reset_index(drop=True)  # distinct texts: hits == rows
    (tmp_path / "in").mkdir()
    df.iloc[:60].to_parquet(tmp_path / "in" / "b.parquet")  # file names sorted, not Spark's largest-first order
    df.iloc[60:].to_parquet(tmp_path / "in" / "a-0.parquet")
    common = [str(tmp_path / "in"), "--text-col", "review", "--id-col", "id", "--model", tiny_bert,
              "--chunk-rows", "40", "--quiet"]
    assert main(["embed", *common, "--out", str(tmp_path / "local.parquet")]) == 0
    spark_args = [*common, "--out", str(tmp_path / "spark_out"), "--engine", "spark", "--cache-dir",
                  str(tmp_path / "c")]
    assert main(["embed", *spark_args]) == 0

    local = pq.read_table(tmp_path / "local.parquet")
    out = tmp_path / "spark_out"
    assert out.is_dir() and not (tmp_path / "spark_out.partial").exists()
    assert all(f.name.startswith("part-") and f.suffix == ".parquet" for f in out.iterdir())
    got = pq.read_table(out)
    assert got.schema.equals(local.schema, check_metadata=True)  # names, types and the b"bertfeat" metadata
    assert got.column("id").to_pylist() == local.column("id").to_pylist()  # the input's order
    assert np.abs(features(got, 1) - features(local, 1)).max() <= 1e-5

    manifest = json.loads((tmp_path / "spark_out.manifest.json").read_text())
    local_manifest = json.loads((tmp_path / "local.parquet.manifest.json").read_text())
    assert manifest["engine"] == "spark" and manifest["provenance"] == local_manifest["provenance"]
    assert manifest["provenance"] == json.loads(got.schema.metadata[b"bertfeat"])
    for key in ("rows", "texts", "unique_texts", "embedded", "missing", "truncated", "tokens"):
        assert manifest["counts"][key] == local_manifest["counts"][key], key
    assert manifest["counts"]["embedded"] == len(df) and manifest["counts"]["cache_hits"] == 0
    assert manifest["input"] == local_manifest["input"] and manifest["cache_dir"] == str(tmp_path / "c")
    # the timing the local engine records: the workers' machine (measured where the model ran: in a worker), and
    # the forward passes of this job's batches by arrangement (each worker process counts its own)
    machine, local_machine = manifest["timing"]["machine"], local_manifest["timing"]["machine"]
    assert {k: machine[k] for k in ("cpu", "arch", "flags")} == {k: local_machine[k] for k in ("cpu", "arch", "flags")}
    assert machine["threads"] == 1 and set(machine["matmul_gflops"]) == {"float32", "bfloat16"}
    passes = manifest["timing"]["forward_pass"]
    assert set(passes) == set(local_manifest["timing"]["forward_pass"]) and sum(passes.values()) >= 4, passes
    s = manifest["spark"]
    assert s["partitions"] == 4 == s["files"] and s["task_cpus"] == 1  # 150 rows / 40 a partition
    assert {w["threads"] for w in s["workers"]} == {1} and {w["device"] for w in s["workers"]} == {"cpu"}
    assert len(s["workers"]) <= 2 and all(w["loads"] >= 1 for w in s["workers"])
    # a worker's count of model loads covers its whole life, earlier tests' jobs included (Spark reuses its Python
    # workers), so what is read is that it does not grow for the same recipe: not per task, not per job
    loads = {w["pid"]: w["loads"] for w in s["workers"]}

    # the same command again (replacing the output): every text comes from the shared cache
    assert main(["embed", *spark_args, "--overwrite"]) == 0
    again = json.loads((tmp_path / "spark_out.manifest.json").read_text())
    assert again["counts"]["embedded"] == 0 and again["counts"]["cache_hits"] == again["counts"]["rows"] == len(df)
    assert again["timing"]["forward_pass"] == {}  # no batch ran the model
    loads_again = {w["pid"]: w["loads"] for w in again["spark"]["workers"]}
    assert loads.keys() & loads_again.keys()  # workers reused, so the next line reads something
    assert all(loads_again[pid] == loads[pid] for pid in loads.keys() & loads_again.keys())
    assert pq.read_table(out).equals(got)


def test_csv_job_in_list_layout_with_kept_columns_matches_the_local_engine(tiny_bert, spark, tmp_path):
    df = make_frame(70, seed=4)
    df.loc[5, "title"] = None  # a missing text, written as an empty field: missing='zero' as locally
    df.to_csv(tmp_path / "in.csv", index=False)
    common = ["embed", str(tmp_path / "in.csv"), "--text-col", "review", "--text-col", "title", "--keep-col", "id",
              "--keep-col", "stars", "--layout", "list", "--missing", "zero", "--model", tiny_bert,
              "--chunk-rows", "25", "--pooling", "mean", "--quiet"]
    assert main([*common, "--out", str(tmp_path / "local.parquet")]) == 0
    assert main([*common, "--out", str(tmp_path / "spark_out"), "--engine", "spark"]) == 0
    local, got = pq.read_table(tmp_path / "local.parquet"), pq.read_table(tmp_path / "spark_out")
    assert got.schema.equals(local.schema, check_metadata=True)
    assert got.select(["id", "stars"]).equals(local.select(["id", "stars"]))
    assert np.abs(features(got, 2) - features(local, 2)).max() <= 1e-5
    manifest = json.loads((tmp_path / "spark_out.manifest.json").read_text())
    assert manifest["counts"]["missing"] == 1 and manifest["spark"]["csv_staged"]
    assert manifest["cache_dir"] is None and not (tmp_path / "spark_out.partial").exists()


def test_embed_dataframe_is_lazy_and_equals_the_core(tiny_bert, spark):
    from pyspark.sql.types import ArrayType, FloatType

    from bertfeat.arrow import ArrowFeaturizer

    df = make_frame(60, seed=5)[["id", "review", "title"]]
    table = pa.Table.from_pandas(df, preserve_index=False)
    sdf = spark.createDataFrame(df).repartition(3)
    with pytest.raises(ValueError, match=r"column\(s\) \['body'\] not found"):  # checked before any task runs
        bspark.embed_dataframe(sdf, "body", model=tiny_bert)
    with pytest.raises(TypeError, match="text column 'id' holds int64 values, not text"):
        bspark.embed_dataframe(sdf, "id", model=tiny_bert)
    for layout in ("columns", "list"):
        feats = bspark.embed_dataframe(sdf, ["review", "title"], keep_cols="id", layout=layout, model=tiny_bert)
        want = ArrowFeaturizer(["review", "title"], ["id"], layout=layout, model=tiny_bert)(table)
        assert feats.columns == want.schema.names
        first = feats.schema[want.schema.names[1]]
        assert json.loads(first.metadata["bertfeat"]) == json.loads(want.schema.metadata[b"bertfeat"])
        assert first.dataType == (ArrayType(FloatType(), False) if layout == "list" else FloatType())
        # the provenance is on each embedding column (list), or on the first feature column only (columns)
        tagged = [f.name for f in feats.schema.fields if "bertfeat" in f.metadata]
        assert tagged == (["review_embedding", "title_embedding"] if layout == "list" else [want.schema.names[1]])
        got = feats.toArrow().sort_by("id")
        assert got.column("id").to_pylist() == df["id"].tolist()
        assert np.abs(features(got, 1) - features(pa.Table.from_batches([want]), 1)).max() <= 1e-5


def test_the_task_the_driver_asks_for_dtype_auto_answers_for_the_device_it_runs_on(spark):
    """A driver without a GPU asks a task of the session what ``dtype="auto"`` is where the tasks run (a cluster of
    T4s: float16, test_spark_driver.py): here a real one-task job, float32 on a task Spark gives no GPU, and a
    ``device="cuda"`` that task cannot use is its own refusal, not Spark's Java traceback."""
    from bertfeat import gpu

    assert bspark._ask_a_task(spark, "auto") == "float32"
    if gpu.device_count() == 0:
        with pytest.raises(ValueError, match=r"^device='cuda' was asked for, .* which Spark assigned no GPU"):
            bspark._ask_a_task(spark, "cuda")


def test_a_bad_text_fails_the_job_with_the_local_engines_message(tiny_bert, spark, tmp_path, capsys):
    src = tmp_path / "bad.parquet"
    df = pd.DataFrame({"id": range(90), "text": [f"text {i}" for i in range(90)]})
    df.loc[57, "text"] = None
    df.to_parquet(src)
    args = ["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--model", tiny_bert, "--quiet"]
    assert main(args) == 2
    local = capsys.readouterr().err.strip().splitlines()
    assert main([*args, "--engine", "spark"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # one line, word for word the local engine's; the row is the input's, though Spark's second partition (rows
    # 45-89) holds it as its 13th row
    assert err == local and err[0].startswith("bertfeat embed: error: row 57 is missing (None) and --missing error")
    # the failed job keeps its run-private cache, so that the same command, once the input is fixed, resumes
    assert not (tmp_path / "o").exists() and (tmp_path / "o.partial" / "cache").is_dir()
    with pytest.raises(TypeError, match="text column 'id' holds int64 values"):  # before Spark runs anything
        bspark.embed_files(src, tmp_path / "o2", "id", model=tiny_bert, quiet=True)
    assert not (tmp_path / "o2").exists() and not (tmp_path / "o2.partial").exists()


def test_a_retried_task_is_counted_once(tiny_bert, spark, tmp_path, monkeypatch):
    real = bspark._write_partition

    def dies_once(batches, spec):
        """Partition 1's first attempt does all its work, writes its part, then dies before its last result."""
        from pyspark import TaskContext

        out = list(real(batches, spec))
        tc = TaskContext.get()
        yield from out[:-1]
        if tc.partitionId() == 1 and tc.attemptNumber() == 0:
            raise RuntimeError("planted: the first attempt of partition 1 dies")
        yield out[-1]

    monkeypatch.setattr(bspark, "_write_partition", dies_once)
    df = make_frame(100, seed=6)
    df.to_parquet(tmp_path / "in.parquet")
    manifest = bspark.embed_files(tmp_path / "in.parquet", tmp_path / "out", "review", keep_cols="id",
                                  batch_rows=30, model=tiny_bert, quiet=True)
    assert manifest["spark"]["retried_tasks"] == 1  # the planted failure happened, and Spark ran the task again
    assert manifest["counts"]["rows"] == manifest["counts"]["texts"] == 100
    assert manifest["counts"]["unique_texts"] == df["review"].nunique()
    assert manifest["counts"]["chunks"] == manifest["spark"]["files"] == 4
    got = pq.read_table(tmp_path / "out")
    assert got.column("id").to_pylist() == df["id"].tolist()
    want = bspark._checked_featurizer(["review"], ["id"], "columns", {"model": tiny_bert},
                                      pa.schema([("id", pa.int64()), ("review", pa.string())]), lambda: "local[1]")
    want = want(pa.Table.from_pandas(df[["id", "review"]], preserve_index=False))
    assert np.abs(features(got, 1) - features(pa.Table.from_batches([want]), 1)).max() <= 1e-5


def test_paths_with_spaces_plus_signs_and_unicode_keep_the_input_order(tiny_bert, spark, tmp_path):
    """Row numbers come from Spark's file URLs decoded by Spark itself: every character a path may hold must map back
    to the file bertfeat listed (a '+' is a plus, '%20' a space), or the rows would lose their place."""
    from bertfeat.spark import embed_files

    df = make_frame(30, seed=8)
    folder = tmp_path / "in put+é %41"
    folder.mkdir()
    df.iloc[:12].to_parquet(folder / "b c+1.parquet")
    df.iloc[12:].to_parquet(folder / "a%20ü.parquet")  # sorts first, so it holds the first rows
    manifest = embed_files(str(folder), str(tmp_path / "out"), "review", keep_cols="id", model=tiny_bert, quiet=True,
                           batch_rows=7)
    want = df.iloc[12:]["id"].tolist() + df.iloc[:12]["id"].tolist()
    assert pq.read_table(tmp_path / "out").column("id").to_pylist() == want
    assert manifest["counts"]["rows"] == 30


def test_an_input_file_spark_would_skip_is_refused_before_spark_starts(tiny_bert, tmp_path):
    from bertfeat.spark import embed_files

    make_frame(5).to_parquet(tmp_path / "_hidden.parquet")
    with pytest.raises(ValueError, match=r"Spark skips input file\(s\) .*_hidden.parquet.*rename them"):
        embed_files(str(tmp_path / "_hidden.parquet"), str(tmp_path / "out"), "review", model=tiny_bert, quiet=True,
                    master="local[1]")
    assert not list(tmp_path.glob("out*"))


def test_spark_submit_runs_the_job_on_the_master_spark_submit_was_given(tiny_bert, tmp_path):
    """docs/spark.md's spark-submit command: the master is spark-submit's (``yarn`` on a cluster), not replaced by
    ``local[*]``, which would run the whole job on the driver's machine without a word."""
    import subprocess

    import pyspark

    import bertfeat

    make_frame(12, seed=9).to_parquet(tmp_path / "in.parquet")
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         str(Path(bertfeat.__file__).parent / "__main__.py"), "embed", str(tmp_path / "in.parquet"), "--text-col",
         "review", "--id-col", "id", "--out", str(tmp_path / "out"), "--engine", "spark", "--model", tiny_bert,
         "--quiet"],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    assert manifest["spark"]["master"] == "local[1]"
    assert manifest["counts"]["rows"] == 12 and pq.read_table(tmp_path / "out").num_rows == 12


def test_a_local_job_started_outside_spark_submit_runs_its_workers_on_this_python(tiny_bert, tmp_path):
    """`bertfeat embed --engine spark` run as a program (a venv's `bin/bertfeat`, not activated; R; cron) with no
    PYSPARK_PYTHON: Spark's local workers must run this interpreter, where bertfeat and torch are installed. pyspark
    starts them with `python3` from PATH unless PYSPARK_PYTHON says otherwise (its `spark.pyspark.python` is read by
    spark-submit alone), so the job failed in every task with `No module named 'sklearn'` (or ran another Python)."""
    import subprocess

    make_frame(6, seed=9).to_parquet(tmp_path / "in.parquet")
    stray = tmp_path / "bin"
    stray.mkdir()
    (stray / "python3").write_text("#!/bin/sh\necho 'not the python bertfeat runs in' >&2\nexit 3\n")
    (stray / "python3").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    env.update(HF_HUB_OFFLINE="1", PATH=os.pathsep.join([str(stray), os.environ.get("PATH", "")]),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    run = subprocess.run(
        [sys.executable, "-m", "bertfeat", "embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--id-col",
         "id", "--out", str(tmp_path / "out"), "--engine", "spark", "--master", "local[1]", "--model", tiny_bert,
         "--quiet"],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert pq.read_table(tmp_path / "out").column("id").to_pylist() == make_frame(6, seed=9)["id"].tolist()
    assert jvm_lines(run.stderr) == []  # --quiet: Spark's WARN lines at start, before the session had a level
    assert "FutureWarning" not in run.stderr  # pyspark's pandas-version notice (pandas 3), twice before


def jvm_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` a Spark driver's JVM logged (log4j's, and a Java stack trace's)."""
    jvm = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d [A-Z]+ |\s+at [\w.$]+\(|Using Spark's|Setting default log "
                     r"level|To adjust logging level|org\.apache\.spark\.)")
    return [line for line in stderr.splitlines() if jvm.search(line)]


def test_a_quiet_job_that_fails_says_its_error_without_the_jvms_lines(tiny_bert, tmp_path):
    """``--quiet`` with a bad text: Spark's JVM logged the failed task at ERROR (the worker's whole traceback, the
    bertfeat error marked for the driver, a Java stack trace: 45 lines) before the job's own error said it again;
    its WARN lines at start came before any level was set. A job that starts its session quietly now starts its JVM
    logging fatal errors only."""
    import subprocess

    pd.DataFrame({"id": [1, 2, 3], "review": ["a text", "", "another"]}).to_parquet(tmp_path / "in.parquet")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, "-m", "bertfeat", "embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--id-col",
         "id", "--out", str(tmp_path / "out"), "--engine", "spark", "--master", "local[1]", "--model", tiny_bert,
         "--missing", "error", "--quiet"],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 2, run.stderr[-3000:]
    assert jvm_lines(run.stderr) == [], run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if "error" in line.lower() and "Warning" not in line]
    assert errors == ["bertfeat embed: error: row 1 of column 'review' is blank (''): bertfeat treats empty texts "
                      "and texts of only whitespace, control, invisible or replacement characters as missing, and "
                      "--missing error. Pass --missing zero for a zero vector, --missing nan for a row of NaN, or drop "
                      "or fill those rows first."], run.stderr[-3000:]


def test_input_columns_named_like_the_jobs_own_are_the_users_and_kept(tiny_bert, spark, tmp_path):
    """A job carries each row's file, index and number through Spark in columns of its own; an input column of the
    same name, in any case (Spark's names are case-insensitive by default), is the user's and comes out as written,
    as in the local engine. It used to fail the job: AMBIGUOUS_REFERENCE `_file`."""
    df = make_frame(20, seed=10)
    df["_file"] = [f"f{i}" for i in range(20)]
    df["_INDEX"] = np.arange(100, 120)
    df["_bertfeat_row"] = np.arange(20)[::-1]
    df["_metadata"] = [f"m{i}" for i in range(20)]  # the name of Spark's hidden file-metadata column
    df.to_parquet(tmp_path / "in.parquet")
    keep = ["id", "_file", "_INDEX", "_bertfeat_row", "_metadata"]
    args = ["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--model", tiny_bert, "--quiet",
            "--chunk-rows", "7", *[x for k in keep for x in ("--keep-col", k)]]
    assert main([*args, "--out", str(tmp_path / "local.parquet")]) == 0
    local = pq.read_table(tmp_path / "local.parquet")
    # and in a session whose names are case-sensitive (a setting some teams use), where every name the job uses
    # must be spelled exactly
    for case_sensitive in ("false", "true"):
        spark.conf.set("spark.sql.caseSensitive", case_sensitive)
        try:
            out = tmp_path / f"spark_out_{case_sensitive}"
            assert main([*args, "--out", str(out), "--engine", "spark"]) == 0
        finally:
            spark.conf.unset("spark.sql.caseSensitive")
        got = pq.read_table(out)
        assert got.schema.equals(local.schema, check_metadata=True)
        assert got.select(keep).equals(local.select(keep))
        assert got.column("_bertfeat_row").to_pylist() == list(range(19, -1, -1))
        assert np.abs(features(got, len(keep)) - features(local, len(keep))).max() <= 1e-5


def test_an_output_folder_inside_the_input_folder_is_never_read_as_input(tiny_bert, spark, tmp_path):
    """--out inside the input folder: the rerun read the first run's output parts as input and was refused."""
    folder = tmp_path / "data"
    folder.mkdir()
    df = make_frame(12, seed=6)
    df.to_parquet(folder / "in.parquet")
    args = ["embed", str(folder), "--text-col", "review", "--id-col", "id", "--model", tiny_bert, "--quiet",
            "--engine", "spark", "--out", str(folder / "features")]
    assert main(args) == 0
    assert main([*args, "--overwrite"]) == 0
    assert pq.read_table(folder / "features").column("id").to_pylist() == df["id"].tolist()


def test_a_second_spark_job_on_the_same_output_is_refused_and_a_killed_runs_leftovers_go(tiny_bert, spark, tmp_path,
                                                                                           capsys):
    """The Spark engine took no lock: a second job on one --out deleted the first's output parts mid-run. And an
    earlier output moved aside by a killed run (``.<out>.old-<pid>``) stayed for good."""
    from bertfeat.output import OutputPaths, job_lock

    src = tmp_path / "in.parquet"
    make_frame(6, seed=2).to_parquet(src)
    out = tmp_path / "features"
    args = ["embed", str(src), "--text-col", "review", "--model", tiny_bert, "--quiet", "--engine", "spark",
            "--out", str(out)]
    with job_lock(OutputPaths(out)):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert f"pid {os.getpid()}" in err and ".features.lock" in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists() and not (tmp_path / "features.partial").exists()
    (tmp_path / ".features.old-999999").mkdir()  # what a run killed inside replace_output leaves
    (tmp_path / ".features.old-999999" / "part-0.parquet").write_bytes(b"an earlier output")
    assert main(args) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["features", "features.manifest.json", "in.parquet"]


def test_input_files_named_with_a_time_come_out_as_the_local_engines(tiny_bert, spark, tmp_path):
    """A ':' in an input file's name (a time: ``2024-01-01T00:00:00.parquet``) failed the job with Hadoop's Java
    traceback ('Relative path in absolute URI'); such files are now staged by the driver and read as named."""
    folder = tmp_path / "in"
    folder.mkdir()
    df = make_frame(6, seed=3)
    df.iloc[:4].to_parquet(folder / "2024-01-01T00:00:00.parquet", index=False)
    df.iloc[4:].to_parquet(folder / "2024-01-02T00:00:00.parquet", index=False)
    args = ["embed", str(folder), "--text-col", "review", "--id-col", "id", "--model", tiny_bert, "--quiet"]
    assert main([*args, "--out", str(tmp_path / "local.parquet")]) == 0
    assert main([*args, "--out", str(tmp_path / "spark"), "--engine", "spark"]) == 0
    local, got = pq.read_table(tmp_path / "local.parquet"), pq.read_table(tmp_path / "spark")
    assert got.schema.equals(local.schema, check_metadata=True)
    assert got.column("id").to_pylist() == df["id"].tolist()
    assert np.abs(features(got, 1) - features(local, 1)).max() <= 1e-5
    assert json.loads((tmp_path / "spark.manifest.json").read_text())["spark"]["staged"] is True


def test_paths_hadoop_would_read_as_patterns_are_read_as_named(tiny_bert, spark, tmp_path):
    """Spark reads a path as a Hadoop glob: the input file ``reviews[1].parquet`` read ``reviews1.parquet`` beside
    it, another file, and a folder named with braces (the CSV staged under ``<out>.partial``) was "path does not
    exist". Each file is read as named."""
    from bertfeat.spark import embed_files

    df = make_frame(12, seed=9)
    df.iloc[:6].to_parquet(tmp_path / "reviews[1].parquet")
    df.iloc[6:].to_parquet(tmp_path / "reviews1.parquet")  # what the name matches as a pattern
    embed_files(str(tmp_path / "reviews[1].parquet"), str(tmp_path / "out"), "review", keep_cols="id",
                model=tiny_bert, quiet=True, batch_rows=4)
    assert pq.read_table(tmp_path / "out").column("id").to_pylist() == df.iloc[:6]["id"].tolist()
    runs = tmp_path / "runs{a,b}"
    runs.mkdir()
    df.to_csv(runs / "in.csv", index=False)
    embed_files(str(runs / "in.csv"), str(runs / "out"), "review", keep_cols="id", model=tiny_bert, quiet=True,
                batch_rows=5)
    assert pq.read_table(runs / "out").column("id").to_pylist() == [str(i) for i in df["id"]]


def test_a_csv_of_another_delimiter_is_read_as_the_local_engine_reads_it(tiny_bert, spark, tmp_path, capsys):
    # --delimiter and --infer-types were refused with --engine spark ("applies to the local engine only"), while
    # the Spark job's own check, on a ';'-separated header, told the user to pass --delimiter ';'
    df = make_frame(12, seed=5)
    df.to_csv(tmp_path / "in.csv", index=False, sep=";")
    common = ["embed", str(tmp_path / "in.csv"), "--text-col", "review", "--keep-col", "id", "--keep-col", "stars",
              "--model", tiny_bert, "--pooling", "mean", "--quiet"]
    assert main([*common, "--out", str(tmp_path / "no"), "--engine", "spark"]) == 2
    err = capsys.readouterr().err
    assert "pass --delimiter ';'" in err, err
    for extra in ([], ["--infer-types"]):
        flags = ["--delimiter", ";", *extra]
        assert main([*common, *flags, "--out", str(tmp_path / f"local{len(extra)}.parquet")]) == 0
        assert main([*common, *flags, "--out", str(tmp_path / f"spark{len(extra)}"), "--engine", "spark"]) == 0
        local, got = pq.read_table(tmp_path / f"local{len(extra)}.parquet"), pq.read_table(tmp_path / f"spark{len(extra)}")
        assert got.schema.equals(local.schema, check_metadata=True)
        assert got.select(["id", "stars"]).equals(local.select(["id", "stars"]))
        assert np.abs(features(got, 2) - features(local, 2)).max() <= 1e-5
        # how the CSV was read is recorded as the local engine records it (it was missing from Spark's manifest)
        reading = [json.loads(Path(f"{tmp_path}/{name}{len(extra)}{suffix}.manifest.json").read_text())["reading"]
                   for name, suffix in (("local", ".parquet"), ("spark", ""))]
        assert reading[0] == reading[1] == {"delimiter": ";", "infer_types": bool(extra), "quoting": "csv"}
    assert pa.types.is_integer(got.schema.field("stars").type)  # --infer-types reached the reader


def test_parquet_columns_spark_cannot_read_as_they_are_come_out_as_the_local_engines(tiny_bert, spark, tmp_path):
    """Parquet files the local engine reads and Spark does not: pandas' datetime64[ns] (a kept date, or one the job
    does not read), a float16 or time-of-day column (kept or not), a column all None in one shard (parquet's null
    type, beside strings in the others), a shard of no rows. Each failed the Spark job with Spark's own error
    (PARQUET_TYPE_ILLEGAL, UNSUPPORTED_TIME_TYPE, PARQUET_COLUMN_DATA_TYPE_MISMATCH), where the local engine read
    them; a text or kept column all None in every file was refused as "holds int32 values", or came out int32. The
    first folder is read by Spark where it is; the second is staged by the driver, as a CSV is."""
    import datetime

    def check(folder, keep, *flags, staged):
        args = ["embed", str(folder), "--text-col", "review", *[x for k in keep for x in ("--keep-col", k)],
                "--model", tiny_bert, "--quiet", "--chunk-rows", "4", *flags]
        name = folder.name
        assert main([*args, "--out", str(tmp_path / f"{name}.parquet")]) == 0
        assert main([*args, "--out", str(tmp_path / name / "spark_out"), "--engine", "spark"]) == 0
        local, got = pq.read_table(tmp_path / f"{name}.parquet"), pq.read_table(tmp_path / name / "spark_out")
        assert got.schema.equals(local.schema, check_metadata=True)
        assert got.select(keep).equals(local.select(keep))
        assert np.abs(features(got, len(keep)) - features(local, len(keep))).max() <= 1e-5
        assert json.loads((tmp_path / name / "spark_out.manifest.json").read_text())["spark"]["staged"] is staged
        return got

    df = make_frame(10, seed=11)
    df["when"] = pd.to_datetime([f"2024-03-{d:02d} 10:00:00.123456789" for d in range(1, 11)]).as_unit("ns")
    df["added"] = df["when"].dt.tz_localize("Europe/Paris")
    df["notes"] = df["empty"] = None  # all None in every file: parquet's null type, which Spark reads as int32
    plain = tmp_path / "plain"
    plain.mkdir()
    df.iloc[:6].to_parquet(plain / "a.parquet")
    df.iloc[6:].to_parquet(plain / "b.parquet")
    got = check(plain, ["id", "added", "empty"], "--text-col", "notes", "--missing", "zero", staged=False)
    assert got.column("added").type == pa.timestamp("ns", "Europe/Paris") and got.column("empty").type == pa.null()
    assert got.column("added").to_pylist() == pa.array(df["added"]).to_pylist()  # to the nanosecond

    odd = tmp_path / "odd"
    odd.mkdir()
    half = pa.array(np.linspace(0, 1, 10, dtype=np.float16))
    times = pa.array([datetime.time(9, i, 30, 5) for i in range(10)])
    table = pa.table({"id": df["id"], "review": df["review"], "score": half, "at": times, "unread": half})
    pq.write_table(table.slice(0, 5), odd / "a.parquet")
    pq.write_table(table.slice(0, 0), odd / "b.parquet")
    no_text = table.slice(5, 2).set_column(1, "review", pa.nulls(2))  # a shard whose texts are all None
    pq.write_table(no_text, odd / "c.parquet")
    assert pq.read_schema(odd / "c.parquet").field("review").type == pa.null()
    pq.write_table(table.slice(7), odd / "d.parquet")
    got = check(odd, ["id", "score", "at"], "--missing", "zero", staged=True)
    assert got.column("score").type == pa.float16() and got.column("at").type == pa.time64("us")
    assert got.column("at").to_pylist() == times.to_pylist()



def test_parquet_files_of_a_codec_spark_cannot_decompress_come_out_as_the_local_engines(tiny_bert, spark, tmp_path):
    """(found by a many files that differ hunt, 2026-11-26, session 8) a folder whose files were written on different
    days with different codecs: one written with pandas' or pyarrow's ``compression="brotli"`` failed the Spark job in
    its tasks with a Java traceback (``ClassNotFoundException: org.apache.hadoop.io.compress.BrotliCodec``: Spark
    ships no brotli codec), where the local engine reads it. Such files are staged by the driver, as a CSV is;
    files of the codecs Spark reads (snappy, zstd, gzip, lz4, none) are read where they are."""
    df = make_frame(12, seed=13)
    for name, codecs in (("mixed", ("snappy", "brotli", "zstd")), ("spark", ("gzip", "lz4", "none"))):
        folder = tmp_path / name
        folder.mkdir()
        for k, codec in enumerate(codecs):
            pq.write_table(pa.Table.from_pandas(df.iloc[4 * k:4 * k + 4], preserve_index=False),
                           folder / f"part-{k}.parquet", compression=codec)
        args = ["embed", str(folder), "--text-col", "review", "--id-col", "id", "--model", tiny_bert, "--quiet",
                "--chunk-rows", "4"]
        assert main([*args, "--out", str(tmp_path / f"{name}.parquet")]) == 0
        assert main([*args, "--out", str(tmp_path / f"{name}_spark"), "--engine", "spark"]) == 0
        local, got = pq.read_table(tmp_path / f"{name}.parquet"), pq.read_table(tmp_path / f"{name}_spark")
        assert got.column("id").to_pylist() == local.column("id").to_pylist() == df["id"].tolist()
        assert np.abs(features(got, 1) - features(local, 1)).max() <= 1e-5
        staged = json.loads((tmp_path / f"{name}_spark.manifest.json").read_text())["spark"]["staged"]
        assert staged is (name == "mixed"), name

def test_column_names_spark_would_parse_or_fold_are_read_as_written(tiny_bert, spark, tmp_path):
    """Column names the local engine reads as written: a dot (``user.id``, Spark's path to a field), a backtick,
    a space, non-ASCII, and ``Text`` beside ``text`` in a case-insensitive session (Spark's default). The job
    failed with UNRESOLVED_COLUMN `user`.`id` (pyspark's ``mapInArrow`` looks every column up by its bare name),
    INVALID_ATTRIBUTE_NAME_SYNTAX, or COLUMN_ALREADY_EXISTS `text`; ``embed_dataframe`` alike."""
    from bertfeat.arrow import ArrowFeaturizer

    df = make_frame(9, seed=12)
    frame = pd.DataFrame({"user.id": df["id"], "my review": df["review"], "a`b": df["title"], "café": df["stars"],
                          "Text": df["title"].str.upper(), "text": df["review"]})
    frame.to_parquet(tmp_path / "in.parquet")
    keep = ["user.id", "café", "Text"]
    args = ["embed", str(tmp_path / "in.parquet"), "--text-col", "my review", "--text-col", "a`b", "--text-col", "text",
            *[x for k in keep for x in ("--keep-col", k)], "--model", tiny_bert, "--quiet", "--chunk-rows", "4"]
    assert main([*args, "--out", str(tmp_path / "local.parquet")]) == 0
    assert spark.conf.get("spark.sql.caseSensitive") == "false"
    assert main([*args, "--out", str(tmp_path / "spark_out"), "--engine", "spark"]) == 0
    assert spark.conf.get("spark.sql.caseSensitive") == "false"  # the session's own, back
    local, got = pq.read_table(tmp_path / "local.parquet"), pq.read_table(tmp_path / "spark_out")
    assert got.schema.equals(local.schema, check_metadata=True)
    assert got.select(keep).equals(local.select(keep))
    assert np.abs(features(got, len(keep)) - features(local, len(keep))).max() <= 1e-5

    from bertfeat.spark import embed_dataframe

    sdf = spark.createDataFrame(frame.drop(columns=["Text"]))
    out = embed_dataframe(sdf, ["my review", "a`b"], keep_cols=["user.id", "café"], model=tiny_bert).toPandas()
    want = ArrowFeaturizer(["my review", "a`b"], ["user.id", "café"], model=tiny_bert)(
        pa.Table.from_pandas(frame.drop(columns=["Text"]), preserve_index=False))
    assert list(out.columns) == want.schema.names and out["user.id"].tolist() == df["id"].tolist()
    assert np.abs(out.iloc[:, 2:].to_numpy() - features(pa.Table.from_batches([want]), 2)).max() <= 1e-5


def test_files_whose_types_differ_come_out_in_the_local_engines_wider_types(tiny_bert, spark, tmp_path):
    """(found by a schemas hunt, 2026-11-26, session 8) files of one dataset in other types (tests/test_schemas.py):
    those Spark reads as other types (int32 and int64 ids, float32 and float64, millisecond and nanosecond times)
    are staged in the local engine's wider types; a category text beside a string, which Spark reads as one type,
    is read where it is. Either way the output's types and values are the local engine's."""
    from tests.test_schemas import mixed_rows, write_mixed_types

    mixed = write_mixed_types(tmp_path / "mixed")
    texts = tmp_path / "texts"
    texts.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "review": pa.array(["the cat", "sat on"]).dictionary_encode()}),
                   texts / "a.parquet")
    pq.write_table(pa.table({"id": [3], "review": pa.array(["a mat"])}), texts / "b.parquet")
    # types Spark's reader reads in the wider one itself: no longer every row through the driver (staged)
    widens = tmp_path / "widens"
    widens.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()), "score": pa.array([0.5, 0.25], pa.float32()),
                             "price": pa.array([Decimal("1.5"), None], pa.decimal128(5, 1)),
                             "review": ["the cat", "sat on"]}), widens / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([2**40], pa.int64()), "score": pa.array([0.1]),
                             "price": pa.array([Decimal("12.25")], pa.decimal128(7, 2)), "review": ["a mat"]}),
                   widens / "b.parquet")
    for folder, keep in ((mixed, ["id", "n", "score", "at"]), (texts, ["id"]), (widens, ["id", "score", "price"])):
        args = ["embed", str(folder), "--text-col", "review", *[x for k in keep for x in ("--keep-col", k)],
                "--model", tiny_bert, "--quiet", "--chunk-rows", "2"]
        assert main([*args, "--out", str(tmp_path / f"{folder.name}.parquet")]) == 0
        assert main([*args, "--out", str(tmp_path / f"{folder.name}_spark"), "--engine", "spark"]) == 0
        local = pq.read_table(tmp_path / f"{folder.name}.parquet")
        got = pq.read_table(tmp_path / f"{folder.name}_spark")
        assert got.schema.equals(local.schema, check_metadata=True), folder.name
        assert got.select(keep).to_pydict() == local.select(keep).to_pydict()
        assert np.abs(features(got, len(keep)) - features(local, len(keep))).max() <= 1e-5
        staged = json.loads((tmp_path / f"{folder.name}_spark.manifest.json").read_text())["spark"]["staged"]
        assert staged is (folder == mixed), folder.name  # the times: Spark reads nanoseconds as numbers
    assert local.select(["id", "score", "price"]).to_pydict() == {
        "id": [1, 2, 2**40], "score": [0.5, 0.25, 0.1], "price": [Decimal("1.50"), None, Decimal("12.25")]}
    assert pq.read_table(tmp_path / "texts.parquet").column("id").to_pylist() == [1, 2, 3]
    assert pq.read_table(tmp_path / "mixed_spark").select(["id", "n"]).to_pydict() == {
        c: mixed_rows()[c] for c in ("id", "n")}


def test_the_users_session_comes_back_as_it_was(tiny_bert, spark, tmp_path):
    """A job on the user's own active session (a notebook's, spark-submit's), and an ``embed_dataframe`` on it, leave
    it as it was: its options (none set, changed or left set, the three a job sets for itself included), its log
    level, the active session, its temporary views and functions, and what those return."""
    from pyspark.sql import SparkSession
    from pyspark.sql.types import IntegerType

    def log_level():
        return str(spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())

    def state():
        return {"conf": dict(spark.conf.getAll), "level": log_level(),
                "active": SparkSession.getActiveSession() is spark,
                "views": sorted(t.name for t in spark.catalog.listTables() if t.isTemporary),
                "functions": sorted(f.name for f in spark.catalog.listFunctions() if f.isTemporary),
                "mine": [tuple(r) for r in spark.sql("SELECT plus_one(id) FROM my_view ORDER BY id").collect()]}

    spark.udf.register("plus_one", lambda x: x + 1, IntegerType())
    spark.createDataFrame([(1,), (2,)], "id int").createOrReplaceTempView("my_view")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "123")  # the user's, for their own UDFs
    try:
        before = state()
        assert before["active"] and before["views"] == ["my_view"] and "plus_one" in before["functions"]
        df = make_frame(12, seed=4)
        df.to_parquet(tmp_path / "in.parquet", index=False)
        assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--id-col", "id", "--model",
                     tiny_bert, "--quiet", "--chunk-rows", "5", "--out", str(tmp_path / "out"), "--engine",
                     "spark"]) == 0
        assert state() == before
        feats = bspark.embed_dataframe(spark.createDataFrame(df[["id", "review"]]), "review", keep_cols="id",
                                       model=tiny_bert)
        assert feats.count() == 12 and state() == before
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.catalog.dropTempView("my_view")


def test_a_job_run_from_another_thread_uses_the_users_session_and_leaves_it_running(tiny_bert, spark, tmp_path):
    """pyspark's active session is per thread: a job run from a worker thread (a notebook's background job, a web
    service's request) found none, took the session the builder handed back (the user's) for one of its own, set it
    to log fatal errors only, and stopped it when it ended: the user's SparkContext gone. Now it is used as the
    process's session, and left running."""
    import threading

    df = make_frame(8, seed=6)
    df.to_parquet(tmp_path / "in.parquet", index=False)
    done = {}

    def job():
        done["code"] = main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--id-col", "id",
                             "--model", tiny_bert, "--quiet", "--chunk-rows", "4", "--out", str(tmp_path / "out"),
                             "--engine", "spark"])

    worker = threading.Thread(target=job)
    worker.start()
    worker.join()
    assert done == {"code": 0}
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    assert manifest["spark"]["master"] == "local[2,2]"  # the user's session's
    assert spark.sparkContext._jsc is not None and spark.range(3).count() == 3  # still running
    level = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel()
    assert str(level) == "ERROR"  # the fixture's, not the quiet job's FATAL
    assert pq.read_table(tmp_path / "out").column("id").to_pylist() == df["id"].tolist()


def test_a_job_leaves_the_users_session_options_alone_while_it_runs(tiny_bert, spark, tmp_path, monkeypatch):
    """The job's options (names as written, Arrow batch rows, nanoseconds as numbers) were set on the user's session
    for the job's length: another thread's queries on it saw them, and an option it set meanwhile was undone. The
    job runs in a session of its own (newSession), here in a real Spark job."""
    run_job, seen = bspark._run_job, {}

    def watched(job, *args, **kwargs):
        seen["users"] = spark.conf.get("spark.sql.caseSensitive")
        seen["job"] = job.conf.get("spark.sql.caseSensitive")
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "77")  # another thread's, meanwhile
        return run_job(job, *args, **kwargs)

    monkeypatch.setattr(bspark, "_run_job", watched)
    make_frame(6, seed=2).to_parquet(tmp_path / "in.parquet", index=False)
    try:
        assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--model", tiny_bert, "--quiet",
                     "--out", str(tmp_path / "out"), "--engine", "spark"]) == 0
        assert seen == {"users": "false", "job": "true"}
        assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "77"
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


def test_a_quiet_job_leaves_the_users_next_session_logging_at_sparks_level(tiny_bert, tmp_path):
    """``embed_files(quiet=True)`` in a process with no session launched the JVM with a fatal-only log4j and left
    it so: the user's next session in that process (a script's next step, a notebook's next cell) logged fatal
    errors only, its failed tasks unsaid. The level is put back when the job's session stops."""
    import subprocess

    make_frame(6, seed=9).to_parquet(tmp_path / "in.parquet")
    code = (f"import bertfeat.spark as s; s.embed_files({str(tmp_path / 'in.parquet')!r}, {str(tmp_path / 'out')!r}, "
            f"'review', model={tiny_bert!r}, quiet=True, master='local[1]'); "
            "from pyspark.sql import SparkSession; spark = SparkSession.builder.getOrCreate(); "
            "print('level', spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-1] == "level WARN"


def test_the_users_runtime_settings_reach_the_job_and_its_options_never_reach_the_user(tiny_bert, spark, tmp_path,
                                                                                       monkeypatch):
    """The job's own session (newSession) started from the cluster's configuration: a storage key set with
    ``spark.conf.set`` (Databricks' documented way to reach ADLS; fs.s3a.* alike) never reached the Hadoop
    configuration its reads use, and its queries ran in the cluster's time zone. They now carry the user's settings,
    the job's options on top, and the user's session shows none of the job's, during the job and after."""
    run_job, seen = bspark._run_job, {}
    key = "fs.azure.account.key.bertfeat.dfs.core.windows.net"

    def watched(job, *args, **kwargs):
        seen["hadoop"] = job._jsparkSession.sessionState().newHadoopConf().get(key)  # what a read of the job gets
        seen["time"] = job.sql("SELECT CAST(TIMESTAMP '2020-01-01 00:00:00 UTC' AS STRING) AS t").first().t
        seen["users"] = (spark.conf.get("spark.sql.caseSensitive"),
                         spark.conf.get("spark.sql.legacy.parquet.nanosAsLong"))
        seen["job"] = job.conf.get("spark.sql.caseSensitive")
        return run_job(job, *args, **kwargs)

    monkeypatch.setattr(bspark, "_run_job", watched)
    make_frame(6, seed=4).to_parquet(tmp_path / "in.parquet", index=False)
    before = dict(spark.conf.getAll)
    spark.conf.set(key, "the account's key")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--model", tiny_bert, "--quiet",
                     "--out", str(tmp_path / "out"), "--engine", "spark"]) == 0
        assert seen == {"hadoop": "the account's key", "time": "2020-01-01 09:00:00", "users": ("false", "false"),
                        "job": "true"}
        assert dict(spark.conf.getAll) == {**before, key: "the account's key",
                                           "spark.sql.session.timeZone": "Asia/Tokyo"}
    finally:
        spark.conf.unset(key)
        spark.conf.unset("spark.sql.session.timeZone")
    assert pq.read_table(tmp_path / "out").num_rows == 6


def test_two_jobs_from_two_threads_share_the_session_one_started_and_both_finish(tiny_bert, tmp_path):
    """Two ``embed_files`` calls from two threads of a process with no session: the first started a session, the
    second used it (the process's default session), and the first, ending, stopped it under the second. A session a
    job started is now stopped by the last job on it: both finish, and it is stopped after them. (The second job's
    Spark work waits here until the first has ended, so the first always ends first.)"""
    import subprocess

    make_frame(6, seed=9).to_parquet(tmp_path / "a.parquet")
    make_frame(40, seed=10).to_parquet(tmp_path / "b.parquet")
    code = f"""
import threading, bertfeat.spark as s
from pyspark.sql import SparkSession
errors = []
def job(name):
    try:
        s.embed_files({str(tmp_path)!r} + f"/{{name}}.parquet", {str(tmp_path)!r} + f"/{{name}}-out", "review",
                      model={tiny_bert!r}, quiet=True, master="local[1]" if name == "a" else None, batch_rows=2)
    except Exception as e:
        errors.append(f"{{name}}: {{type(e).__name__}}: {{e}}"[:300])
real, second, first_ended = s._run_job, [], threading.Event()
def run_job(*a, **k):  # the first job's tasks start the second job; the second's run once the first has ended
    if not second:
        second.append(threading.Thread(target=job, args=("b",)))
        second[0].start()
    else:
        assert first_ended.wait(300)
    return real(*a, **k)
s._run_job = run_job
job("a")
first_ended.set()
second[0].join()
print("errors", errors)
print("stopped", SparkSession._instantiatedSession is None)
"""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-2:] == ["errors []", "stopped True"], run.stdout[-2000:]
    assert pq.read_table(tmp_path / "a-out").num_rows == 6 and pq.read_table(tmp_path / "b-out").num_rows == 40
