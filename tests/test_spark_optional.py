"""The Spark engine's parts that need no Spark session: the optional import, the Java check, the CLI flags, the
worker's error marking. These run whether or not pyspark or Java is installed; tests/test_spark.py runs real jobs.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bertfeat.spark as bspark
from bertfeat.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_import_bertfeat_never_imports_pyspark():
    code = ("import sys, bertfeat, bertfeat.spark, bertfeat.cli, bertfeat.cli.embed; "
            "print(sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.') or m == 'py4j'))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_missing_pyspark_says_how_to_install_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # what an environment without pyspark looks like
    with pytest.raises(ImportError, match=r"pip install 'bertfeat\[spark\]'"):
        bspark.require_spark()
    with pytest.raises(ImportError, match=r"pip install 'bertfeat\[spark\]'"):
        bspark.embed_dataframe(object(), "text")
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": ["a", "b"]}), src)
    code = main(["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--engine", "spark"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'bertfeat[spark]'" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.partial").exists()


def test_missing_java_says_how_to_get_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(RuntimeError, match=r"JAVA_HOME=.*has no bin/java.*apt-get install default-jre-headless"):
        bspark.require_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="no JAVA_HOME and no java on PATH"):
        bspark.require_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return  # without pyspark the CLI stops at the pyspark check (tested above)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": ["a"]}), src)
    code = main(["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--engine", "spark"])
    err = capsys.readouterr().err
    assert code == 2 and "needs Java" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()
    # a Spark Connect server's session needs no Java here (--master sc://..., or pyspark's SPARK_REMOTE): the job
    # goes on (it was refused "needs Java" before it asked the server)
    jobs = []
    monkeypatch.setattr(bspark, "embed_files", lambda *a, master=None, **k: jobs.append(master) or {})
    args = ["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--engine", "spark"]
    assert main([*args, "--master", "sc://cluster:15002"]) == 0
    monkeypatch.setenv("SPARK_REMOTE", "sc://cluster:15002")
    assert main(args) == 0 and jobs == ["sc://cluster:15002", None]


def test_java_is_found_under_java_home_or_on_path(monkeypatch, tmp_path):
    for folder in ("jdk/bin", "path"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "java").write_text("#!/bin/sh\n")
        (tmp_path / folder / "java").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert bspark.require_java() == str(tmp_path / "jdk" / "bin" / "java")  # JAVA_HOME first, as Spark reads it
    monkeypatch.delenv("JAVA_HOME")
    assert bspark.require_java() == str(tmp_path / "path" / "java")
    (tmp_path / "path" / "java").chmod(0o644)  # there, but not runnable
    with pytest.raises(RuntimeError) as info:
        bspark.require_java()
    assert str(info.value) == ("the Spark engine needs Java to start Spark, and none was found (no JAVA_HOME and no "
                               f"java on PATH): {bspark.JAVA_HINT}.")


@pytest.mark.parametrize("args, message", [
    (["--master", "local[2]"], "--master applies to --engine spark only; add --engine spark or drop --master"),
    (["--master", "local[2]", "--engine", "ray"], "--master applies to --engine spark only"),
    (["--engine", "spark", "--num-workers", "2"], "--num-workers applies to --engine ray only"),
])
def test_engine_flags_for_another_engine_are_rejected_before_work(tmp_path, capsys, args, message):
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": ["a", "b"]}), src)
    code = main(["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--model", "nowhere", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not any(p.name.startswith("o") for p in tmp_path.iterdir())


def test_a_workers_mistake_names_the_input_row_and_comes_back_as_raised():
    rows = np.array([40, 41, 57, 58])
    marked = bspark._marked(ValueError("row 2 is missing (None) and missing='error'. Pass missing='zero'"), rows)
    # what the driver sees: Spark's wrapping, the worker's traceback, the marked error somewhere inside
    spark_error = RuntimeError(f"An exception was thrown from the Python worker:\nTraceback...\nValueError: {marked}\n"
                               "\tat org.apache.spark...")
    found = bspark._mistake_in(spark_error)
    assert type(found) is ValueError
    assert str(found) == "row 57 is missing (None) and missing='error'. Pass missing='zero'"
    found = bspark._mistake_in(RuntimeError(str(bspark._marked(TypeError("row 0 of column 'title' holds int"), rows))))
    assert type(found) is TypeError and str(found) == "row 40 of column 'title' holds int"
    assert bspark._mistake_in(RuntimeError("Python worker exited unexpectedly (crashed)")) is None
    # a row number past the batch (no row of it to name) is left as the worker wrote it
    found = bspark._mistake_in(RuntimeError(str(bspark._marked(ValueError("row 4 is blank"), rows))))
    assert type(found) is ValueError and str(found) == "row 4 is blank"


def test_list_columns_go_to_spark_as_variable_size_lists():
    block = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(6, dtype=np.float32)), 3)
    batch = pa.record_batch([pa.array([1, 2]), block], names=["id", "review_embedding"])
    out = bspark._for_spark(batch)
    assert out.schema.field("review_embedding").type == pa.list_(pa.float32())
    assert out.column(1).to_pylist() == [[0, 1, 2], [3, 4, 5]] and out.column(0).equals(batch.column(0))
