"""Real jobs on a local Ray cluster (2 CPUs, started once for this file): the Ray engine's output equals the
single-machine CLI's, row for row, with the same schema and metadata, and a rerun is answered by the cache.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat.cli import main

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'bertfeat[ray]'")
pytest.importorskip("ray.data", reason="Ray Data is missing: pip install 'ray[data]'")

from tests.test_cli import make_frame  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray cluster for this file's tests; its workers import this checkout of bertfeat."""
    with pytest.MonkeyPatch.context() as mp:
        # workers inherit the environment of the cluster's start: this checkout, offline
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        mp.setenv("HF_HUB_OFFLINE", "1")
        ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False, logging_level="warning")
        try:
            yield ray
        finally:
            ray.shutdown()


def features(table: pa.Table, skip: int) -> np.ndarray:
    cols = table.columns[skip:]
    if pa.types.is_fixed_size_list(cols[0].type):
        return np.hstack([np.stack(c.to_numpy(zero_copy_only=False)) for c in cols])
    return np.column_stack([c.to_numpy() for c in cols])


def test_cli_ray_engine_matches_the_local_engine_and_a_rerun_hits_the_cache(tiny_bert, ray_cluster, tmp_path):
    df = make_frame(150, seed=3).drop_duplicates("review").reset_index(drop=True)  # distinct texts: hits == rows
    (tmp_path / "in").mkdir()
    half = len(df) // 2
    df.iloc[:half].to_parquet(tmp_path / "in" / "a.parquet")
    df.iloc[half:].to_parquet(tmp_path / "in" / "b.parquet")
    common = [str(tmp_path / "in"), "--text-col", "review", "--id-col", "id", "--model", tiny_bert,
              "--chunk-rows", "40", "--quiet"]
    assert main(["embed", *common, "--out", str(tmp_path / "local.parquet")]) == 0
    ray_args = [*common, "--out", str(tmp_path / "ray_out"), "--engine", "ray", "--cache-dir", str(tmp_path / "c")]
    assert main(["embed", *ray_args]) == 0

    local = pq.read_table(tmp_path / "local.parquet")
    out = tmp_path / "ray_out"
    assert out.is_dir() and not (tmp_path / "ray_out.partial").exists()
    assert all(f.suffix == ".parquet" for f in out.iterdir())
    got = pq.read_table(out)
    assert got.schema.equals(local.schema, check_metadata=True)  # column names, types and the b"bertfeat" metadata
    assert got.column("id").to_pylist() == local.column("id").to_pylist() == df["id"].tolist()  # input order kept
    assert np.abs(features(got, 1) - features(local, 1)).max() <= 1e-5

    manifest = json.loads((tmp_path / "ray_out.manifest.json").read_text())
    local_manifest = json.loads((tmp_path / "local.parquet.manifest.json").read_text())
    assert manifest["engine"] == "ray" and manifest["provenance"] == local_manifest["provenance"]
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
    workers = manifest["ray"]["workers"]
    assert len(workers) == manifest["ray"]["num_workers"] == 1  # one actor, constructed (and loading) once
    assert workers[0]["threads"] == manifest["ray"]["threads"] == 1 and workers[0]["device"] == "cpu"

    # the same command again (replacing the output): every text comes from the shared cache
    assert main(["embed", *ray_args, "--overwrite"]) == 0
    again = json.loads((tmp_path / "ray_out.manifest.json").read_text())
    assert again["counts"]["embedded"] == 0 and again["counts"]["cache_hits"] == again["counts"]["rows"] == len(df)
    assert again["timing"]["forward_pass"] == {}  # no batch ran the model
    rerun = pq.read_table(out)
    assert rerun.column("id").to_pylist() == df["id"].tolist()  # input order kept again
    assert rerun.equals(got)


def test_embed_dataset_on_two_fractional_workers_in_list_layout(tiny_bert, ray_cluster):
    from bertfeat.arrow import ArrowFeaturizer
    from bertfeat.ray import embed_dataset

    df = make_frame(90, seed=4)[["id", "review", "title"]]
    table = pa.Table.from_pandas(df, preserve_index=False)
    ds = ray.data.from_arrow([table.slice(k, 15) for k in range(0, 90, 15)])  # six blocks for two workers
    with pytest.raises(ValueError, match=r"column\(s\) \['body'\] not found"):  # checked before any actor starts
        embed_dataset(ds, "body", model=tiny_bert)
    # two actors with half a CPU each on the 2-CPU cluster leave a whole CPU to the read tasks
    feats = embed_dataset(ds, ["review", "title"], keep_cols="id", num_workers=2, batch_rows=16, layout="list",
                          model=tiny_bert)
    blocks = [b for b in ray.get(feats.to_arrow_refs()) if b.num_rows]
    got = pa.concat_tables(blocks).sort_by("id")  # rows may come back in another order: compare by id
    want = ArrowFeaturizer(["review", "title"], ["id"], layout="list", model=tiny_bert)(table)
    assert all(b.schema.equals(want.schema, check_metadata=True) for b in blocks)
    assert got.column("id").to_pylist() == df["id"].tolist()
    assert np.abs(features(got, 1) - features(pa.Table.from_batches([want]), 1)).max() <= 1e-5


def test_a_bad_text_fails_the_job_with_the_local_engines_message(tiny_bert, ray_cluster, tmp_path, capsys):
    src = tmp_path / "in.parquet"
    pd.DataFrame({"id": range(7), "text": ["fine", "ok", "also", "fine", "yes", None, "no"]}).to_parquet(src)
    args = ["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--model", tiny_bert, "--quiet",
            "--chunk-rows", "2"]
    assert main(args) == 2
    local = capsys.readouterr().err.strip().splitlines()
    assert main([*args, "--engine", "ray"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # the row in the input, though it is the second of the third batch of 2
    assert err[-1] == local[-1] and "error: row 5 is missing (None) and --missing error" in err[-1]
    assert not (tmp_path / "o").exists()


def test_ray_job_errors_before_any_work(tiny_bert, ray_cluster, tmp_path):
    from bertfeat.ray import embed_parquet

    src = tmp_path / "in.parquet"
    pd.DataFrame({"text": ["a"], "n": [1]}).to_parquet(src)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        embed_parquet(src, tmp_path / "out", "text", model=tiny_bert)
    with pytest.raises(FileExistsError, match="holds files other than parquet"):
        embed_parquet(src, tmp_path / "out", "text", model=tiny_bert, overwrite=True)
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    with pytest.raises(TypeError, match="text column 'n' holds int64 values"):
        embed_parquet(src, tmp_path / "o2", "n", model=tiny_bert)
    pd.DataFrame({"text": pd.Series([], dtype=object)}).to_parquet(tmp_path / "empty.parquet")
    with pytest.raises(ValueError, match="has no rows to embed"):
        embed_parquet(tmp_path / "empty.parquet", tmp_path / "o3", "text", model=tiny_bert)
    assert not any((tmp_path / n).exists() for n in ("o2", "o2.partial", "o3", "o3.partial"))


def test_rerun_after_a_killed_job_embeds_only_what_is_left(tiny_bert, ray_cluster, tmp_path):
    from bertfeat import BertEmbedder
    from bertfeat.ray import embed_parquet

    df = make_frame(80, seed=5).drop_duplicates("review").reset_index(drop=True)
    df.to_parquet(tmp_path / "in.parquet")
    out = tmp_path / "out"
    # what a killed run leaves: its run-private cache holding the texts it finished, and a half-written data folder
    BertEmbedder(tiny_bert, cache_dir=tmp_path / "out.partial" / "cache").fit_transform(df["review"][:30])
    (tmp_path / "out.partial" / "data").mkdir()
    df.iloc[:5].to_parquet(tmp_path / "out.partial" / "data" / "left-over.parquet")
    manifest = embed_parquet(tmp_path / "in.parquet", out, "review", keep_cols="id", model=tiny_bert, quiet=True)
    assert manifest["counts"]["cache_hits"] == 30 and manifest["counts"]["embedded"] == len(df) - 30
    assert pq.read_table(out).column("id").to_pylist() == df["id"].tolist()  # nothing of the dead run's files
    assert manifest["cache_dir"] is None and not (tmp_path / "out.partial").exists()


def test_rerun_with_other_batch_rows_after_a_dead_run_lines_up_and_a_second_job_is_refused(tiny_bert, ray_cluster,
                                                                                            tmp_path):
    from bertfeat.output import OutputPaths, job_lock
    from bertfeat.ray import embed_parquet

    df = make_frame(30, seed=7)
    df.to_parquet(tmp_path / "in.parquet")
    out = tmp_path / "out"
    # a dead run with batch_rows=7 left data files whose rows would sit at other offsets under batch_rows=4
    dead = tmp_path / "out.partial" / "data"
    dead.mkdir(parents=True)
    embed_parquet(tmp_path / "in.parquet", tmp_path / "dead", "review", keep_cols="id", model=tiny_bert,
                  batch_rows=7, quiet=True)
    for f in sorted((tmp_path / "dead").glob("*.parquet"))[:2]:
        os.replace(f, dead / f.name)
    with job_lock(OutputPaths(out)):
        with pytest.raises(FileExistsError, match=r"another bertfeat job \(pid \d+ .*\) is writing out='"):
            embed_parquet(tmp_path / "in.parquet", out, "review", keep_cols="id", model=tiny_bert, quiet=True)
    manifest = embed_parquet(tmp_path / "in.parquet", out, "review", keep_cols="id", model=tiny_bert, batch_rows=4,
                             quiet=True)
    assert pq.read_table(out).column("id").to_pylist() == df["id"].tolist()
    assert manifest["counts"]["rows"] == 30 and manifest["chunk_rows"] == 4
    assert not (tmp_path / ".out.lock").exists()


def test_a_batch_ray_retries_is_counted_once(tiny_bert, ray_cluster, tmp_path, monkeypatch):
    """A worker that dies after finishing a batch (counted, cached) and before handing it back: Ray restarts it and
    retries the batch. Its rows are written once, and so are its counts."""
    import bertfeat.ray_dataset
    from bertfeat.ray import embed_parquet
    from tests._ray_faults import DiesOnceAfterItsSecondBatch

    df = make_frame(60, seed=9)
    df.loc[[3, 17, 41], "review"] = None
    df.loc[[5, 33], "review"] = "a long review " * 40  # truncated at the tiny model's 64 tokens
    df.to_parquet(tmp_path / "in.parquet")
    params = dict(keep_cols="id", model=tiny_bert, batch_rows=10, quiet=True, missing="zero", num_workers=1)
    clean = embed_parquet(tmp_path / "in.parquet", tmp_path / "clean", "review", **params)

    monkeypatch.setattr(bertfeat.ray_dataset, "RayFeaturizer", DiesOnceAfterItsSecondBatch)
    manifest = embed_parquet(tmp_path / "in.parquet", tmp_path / "out", "review", **params)
    assert (tmp_path / "a-worker-died-here").exists(), "the worker was meant to die once"
    assert not (tmp_path / "out.partial").exists()
    assert pq.read_table(tmp_path / "out").column("id").to_pylist() == df["id"].tolist()
    got, want = manifest["counts"], clean["counts"]
    for field in ("rows", "texts", "unique_texts", "missing", "truncated", "chunks"):
        assert got[field] == want[field], field
    # the retried batch found its texts in the run-private cache the dead attempt filled: hits, not embeddings
    assert got["embedded"] + got["cache_hits"] == want["embedded"] + want["cache_hits"]
    assert not list((tmp_path / "out").glob("*.json"))


def test_an_output_folder_inside_the_input_folder_is_never_read_as_input(tiny_bert, ray_cluster, tmp_path):
    """--out inside the input folder: the rerun read the first run's output parts as input and was refused."""
    from bertfeat.ray import embed_parquet

    folder = tmp_path / "data"
    folder.mkdir()
    df = make_frame(12, seed=6)
    df.to_parquet(folder / "in.parquet")
    first = embed_parquet(folder, folder / "features", "review", keep_cols="id", model=tiny_bert, quiet=True)
    again = embed_parquet(folder, folder / "features", "review", keep_cols="id", model=tiny_bert, quiet=True,
                          overwrite=True)
    assert first["counts"]["rows"] == again["counts"]["rows"] == 12
    assert pq.read_table(folder / "features").column("id").to_pylist() == df["id"].tolist()


def test_files_whose_types_differ_come_out_in_the_local_engines_wider_types(tiny_bert, ray_cluster, tmp_path):
    """(found by a schemas hunt, 2026-11-26, session 8) files of one dataset in other types (int32 and int64 ids, a
    category text beside a string, tests/test_schemas.py): Ray reads them in the local engine's wider types, and
    the output's types and values are the local engine's."""
    from tests.test_schemas import mixed_rows, write_mixed_types

    src = write_mixed_types(tmp_path / "in")
    keep = ["id", "n", "score", "at"]
    args = ["embed", str(src), "--text-col", "review", *[x for k in keep for x in ("--keep-col", k)], "--model",
            tiny_bert, "--quiet", "--chunk-rows", "2"]
    assert main([*args, "--out", str(tmp_path / "local.parquet")]) == 0
    assert main([*args, "--out", str(tmp_path / "ray_out"), "--engine", "ray"]) == 0
    local, got = pq.read_table(tmp_path / "local.parquet"), pq.read_table(tmp_path / "ray_out")
    assert got.schema.equals(local.schema, check_metadata=True)
    assert got.select(keep).to_pydict() == local.select(keep).to_pydict() == {c: mixed_rows()[c] for c in keep}
    assert np.abs(features(got, len(keep)) - features(local, len(keep))).max() <= 1e-5


def test_a_quiet_job_leaves_the_processes_data_context_alone_and_runs_with_its_own(tiny_bert, ray_cluster, tmp_path,
                                                                                  monkeypatch):
    """A file job set its order and progress options on ``DataContext.get_current()`` (the process's, every
    thread's) for its length: another thread's datasets made meanwhile ran in order and without progress bars, and
    its own change was put back when the job ended. They are set on the job's dataset's own copy now: the job still
    keeps the input order, and the process's context is the user's throughout (after the job only, on a Ray before
    2.54, which runs the job on the process's)."""
    import bertfeat.ray as bray
    import bertfeat.ray_files as ray_files
    import bertfeat.ray_session as ray_session

    current = ray.data.DataContext.get_current()
    monkeypatch.setattr(current.execution_options, "preserve_order", False)
    monkeypatch.setattr(current, "enable_progress_bars", True)
    embed_dataset, seen = ray_files.embed_dataset, {}

    def watched(ds, *args, **kwargs):
        seen["process"] = current.execution_options.preserve_order, current.enable_progress_bars
        seen["job"] = ds.context.execution_options.preserve_order, ds.context.enable_progress_bars
        return embed_dataset(ds, *args, **kwargs)

    monkeypatch.setattr(ray_files, "embed_dataset", watched)
    df = make_frame(40, seed=8)
    for k in range(3):
        df.iloc[k::3].to_parquet(tmp_path / f"in-{k}.parquet")
    bray.embed_parquet(tmp_path, tmp_path / "out", "review", keep_cols="id", model=tiny_bert, quiet=True,
                       batch_rows=4)
    # a Ray before 2.54 runs a dataset on the process's context: the job's options are there for its length too
    older = ray_session._runs_on_the_processes_context(ray)
    assert seen == {"process": (True, False) if older else (False, True), "job": (True, False)}
    assert (current.execution_options.preserve_order, current.enable_progress_bars) == (False, True)
    want = pd.concat([df.iloc[k::3] for k in range(3)])["id"].tolist()
    assert pq.read_table(tmp_path / "out").column("id").to_pylist() == want  # the input's order, file by file


def test_a_quiet_job_writes_nothing_on_standard_error(tiny_bert, ray_cluster, tmp_path, capsys, monkeypatch):
    """(found by a versions in between hunt, 2026-11-27, session 12) on Ray 2.11 to 2.53, which decide on progress
    bars from the process's DataContext, not the dataset's own (and 2.11 to 2.2x on a bar per operator from
    ``verbose_progress``), a ``--quiet`` job drew them on standard error. Ray 2.53 (and others of 2.4x-2.5x)
    draws them only where standard output is a terminal (elsewhere it logs them, which ``--quiet`` silences): one it
    is here."""
    monkeypatch.setattr(ray.data.DataContext.get_current(), "enable_progress_bars", True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    src = tmp_path / "in.parquet"
    make_frame(12, seed=3).to_parquet(src)
    assert main(["embed", str(src), "--text-col", "review", "--out", str(tmp_path / "o"), "--model", tiny_bert,
                 "--quiet", "--chunk-rows", "4", "--engine", "ray"]) == 0
    out = capsys.readouterr()
    assert (out.out, out.err) == ("", "")
    assert ray.data.DataContext.get_current().enable_progress_bars is True
    assert pq.read_table(tmp_path / "o").num_rows == 12


def test_a_job_runs_in_input_order_whatever_the_processes_context_says(tiny_bert, ray_cluster, tmp_path, monkeypatch):
    """(found by a versions in between hunt, 2026-11-27, session 12) Ray 2.11 to 2.4x ran a dataset's write on a
    fresh copy of the process's DataContext, not the dataset's own, where the job asked for the input order: a
    process whose context said ``preserve_order = False`` (Ray's default) got the rows in the order the batches
    finished. Every execution of the job is read here as Ray starts it."""
    from ray.data._internal.execution.streaming_executor import StreamingExecutor

    monkeypatch.setattr(ray.data.DataContext.get_current().execution_options, "preserve_order", False)
    ran, execute = [], StreamingExecutor.execute

    def watched(self, *args, **kwargs):
        ran.append(self._options.preserve_order)
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(StreamingExecutor, "execute", watched)
    src = tmp_path / "in.parquet"
    make_frame(12, seed=4).to_parquet(src)
    assert main(["embed", str(src), "--text-col", "review", "--id-col", "id", "--out", str(tmp_path / "o"),
                 "--model", tiny_bert, "--quiet", "--chunk-rows", "3", "--engine", "ray"]) == 0
    assert ran and all(ran)
    assert ray.data.DataContext.get_current().execution_options.preserve_order is False
    assert pq.read_table(tmp_path / "o").column("id").to_pylist() == list(range(12))
