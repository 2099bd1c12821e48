"""``embed_file`` as a whole, in this process, by value: what each run of a resumed job reports, its progress lines,
the options it hands to the reader and the output checks, what a stopped or failed job leaves behind, and how
``_finish`` joins the parts. (The provenance and the manifest of one job field by field: tests/test_arrow.py; kills
and checkpoints: tests/test_checkpoints.py and tests/test_cli_files.py.)"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat import files
from bertfeat.arrow import ArrowFeaturizer
from bertfeat.encode import EncodeStats
from bertfeat.exceptions import TruncationWarning
from bertfeat.files import CHUNK_CHARS, embed_file
from bertfeat.output import OutputPaths
from bertfeat.readers import InputReader
from tests.conftest import assert_same_output, flushes_refused
from tests.test_cli_files import frame

ROWS = 23  # chunks of 5: 5, 5, 5, 5, 3


_CALL = ArrowFeaturizer.__call__


class _Killed(KeyboardInterrupt):
    pass


def _die_in_chunk(monkeypatch, k: int):
    """Stop the job (as Ctrl-C does) when chunk ``k`` starts; returns the rows of each chunk the featurizer got."""
    real = _CALL
    calls = []

    def featurize(self, batch, first_row=0):
        if len(calls) == k:
            raise _Killed()
        calls.append(batch.num_rows)
        return real(self, batch, first_row)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", featurize)
    return calls


def _revive(monkeypatch):
    monkeypatch.setattr(ArrowFeaturizer, "__call__", _CALL)


def _stopped_in_chunk(monkeypatch, k: int, *args, **job):
    """Run ``embed_file(*args, **job)``, stopped (as by Ctrl-C) when chunk ``k`` starts; the featurizer is whole
    again afterwards, for the rerun."""
    _die_in_chunk(monkeypatch, k)
    with pytest.raises(_Killed):
        embed_file(*args, **job)
    _revive(monkeypatch)


def _src(tmp_path, kind="parquet", n=ROWS):
    src = tmp_path / f"in.{kind}"
    if not src.exists():
        df = frame(n, seed=3)
        df.to_parquet(src) if kind == "parquet" else df.to_csv(src, index=False)
    return src


def _distinct_per_chunk(texts: list[str], chunk_rows: int) -> int:
    return sum(len(set(texts[i:i + chunk_rows])) for i in range(0, len(texts), chunk_rows))


# -- a resumed job: what each run did --------------------------------------------------------------------------------

def test_a_resumed_job_reports_exactly_what_each_run_did(tiny_bert, tmp_path, monkeypatch):
    src = _src(tmp_path)
    texts = pd.read_parquet(src)["review"].tolist()
    job = dict(input=str(src), text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    reference = tmp_path / "ref.parquet"
    ref = embed_file(out=str(reference), **job)

    out = tmp_path / "out.parquet"
    _stopped_in_chunk(monkeypatch, 3, out=str(out), **job)  # chunks 0, 1 and 2 (15 rows) finished
    manifest = embed_file(out=str(out), **job)

    assert manifest["this_run"] == {"rows": 8, "embedded": _distinct_per_chunk(texts[15:], 5), "cache_hits": 0,
                                    "chunks": 2, "rows_resumed": 15, "chunks_resumed": 3, "batches_resumed": 0}
    # counts are whole numbers in the file too (an R or JSON reader must not get 8.0)
    saved = json.loads(out.with_name("out.parquet.manifest.json").read_text())
    assert all(type(v) is int for v in saved["this_run"].values())
    assert manifest["counts"] == {**ref["counts"], "rows_resumed": 15} and manifest["counts"]["chunks"] == 5
    assert_same_output(out, reference)


def test_after_a_resume_seconds_is_this_runs_time_and_embed_seconds_every_chunks(tiny_bert, tmp_path, monkeypatch):
    """docs/cli.md: timing.seconds is this run's wall-clock time, as the summary line says it; embed_seconds (and
    slowest_chunk_seconds) cover every chunk of the output, those an earlier run finished included, as counts do. The
    earlier run's chunks are made to have taken 100 s each, so the two cannot be confused."""
    job = dict(input=str(_src(tmp_path)), text_cols="review", model=tiny_bert, quiet=True, chunk_rows=5)
    out = tmp_path / "out.parquet"
    _stopped_in_chunk(monkeypatch, 3, out=str(out), **job)  # chunks 0, 1 and 2 finished
    paths = OutputPaths(out)
    for k in range(3):
        stats = json.loads(paths.part_stats(k).read_text())
        paths.part_stats(k).write_text(json.dumps({**stats, "seconds": 100.0}))
    this_run = []
    write_chunk = files._write_chunk
    monkeypatch.setattr(files, "_write_chunk", lambda paths, k, result, hashes, stats: (
        this_run.append(stats.seconds), write_chunk(paths, k, result, hashes, stats))[1])
    manifest = embed_file(out=str(out), **job)
    timing = manifest["timing"]
    assert len(this_run) == 2 and manifest["this_run"]["chunks_resumed"] == 3
    assert timing["embed_seconds"] == round(300.0 + sum(this_run), 3)
    assert timing["slowest_chunk_seconds"] == 100.0
    assert sum(this_run) <= timing["seconds"] < 100


def test_checkpointed_batches_count_when_the_unfinished_chunk_is_not_the_last(tiny_bert, tmp_path, monkeypatch):
    """Only one chunk of a run can come from a checkpoint; the chunks after it must not reset its count."""
    from tests.test_checkpoints import _count_forward
    from tests.test_checkpoints import _Killed as _KilledForward

    src = _src(tmp_path, n=60)
    job = dict(input=str(src), text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=20,
               batch_tokens=48, checkpoint_seconds=0)
    calls = _count_forward(monkeypatch)
    embed_file(out=str(tmp_path / "ref.parquet"), **job)
    per_chunk = len(calls) / 3
    assert per_chunk >= 4, "the test needs chunks of several batches"
    out = tmp_path / "out.parquet"
    _count_forward(monkeypatch, die_after=3)  # in chunk 0, after 3 batches were saved
    with pytest.raises(_KilledForward):
        embed_file(out=str(out), **job)
    journal = tmp_path / "out.parquet.partial" / "part-000000.journal"
    assert len(list(journal.glob("*.npz"))) == 3
    _count_forward(monkeypatch)
    manifest = embed_file(out=str(out), **job)
    assert manifest["this_run"]["batches_resumed"] == 3 and manifest["this_run"]["chunks"] == 3
    assert_same_output(out, tmp_path / "ref.parquet")


def test_a_finished_chunk_leaves_no_checkpoint_behind(tiny_bert, tmp_path, monkeypatch):
    src = _src(tmp_path)
    _stopped_in_chunk(monkeypatch, 3, str(src), str(tmp_path / "out.parquet"), "review", model=tiny_bert, quiet=True,
                      chunk_rows=5, checkpoint_seconds=0)
    partial = tmp_path / "out.parquet.partial"
    assert sorted(p.name for p in partial.iterdir()) == sorted(["state.json"] + [
        f"part-{k:06d}.{ext}" for k in range(3) for ext in ("hashes.npy", "json", "parquet")])


# -- progress --------------------------------------------------------------------------------------------------------

_LINE = re.compile(r"bertfeat embed: ([\d,]+)(?: / ([\d,]+) \((\d+\.\d)%\))? rows, [\d,.]+ rows/s(?:, ETA \S+)?")


def _progress(err: str) -> list[tuple]:
    lines = [line for line in err.splitlines() if not line.startswith("bertfeat embed: wrote")]
    parsed = [_LINE.fullmatch(line) for line in lines]
    assert all(parsed), lines
    return [(int(m[1].replace(",", "")), m[2] and int(m[2].replace(",", ""))) for m in parsed]


def _resumed_progress(tmp_path, tiny_bert, monkeypatch, capsys, kind: str) -> list[tuple]:
    """The progress lines of a job stopped in chunk 2 and rerun with a line for every chunk."""
    job = dict(input=str(_src(tmp_path, kind)), out=str(tmp_path / "out.parquet"), text_cols="review", model=tiny_bert,
               chunk_rows=5, progress_every=0)
    _stopped_in_chunk(monkeypatch, 2, **job, quiet=True)
    if kind == "csv":  # a small file is read in one block; say a quarter of the bytes were read at every chunk
        monkeypatch.setattr(InputReader, "fraction_done", lambda self: 0.25)
    capsys.readouterr()
    embed_file(**job)
    return _progress(capsys.readouterr().err)


def test_progress_lines_of_a_resumed_parquet_job_count_every_chunk_against_the_total(tiny_bert, tmp_path,
                                                                                     monkeypatch, capsys):
    # the two resumed chunks count too, and the total is the file's row count
    assert _resumed_progress(tmp_path, tiny_bert, monkeypatch, capsys, "parquet") == [
        (5, ROWS), (10, ROWS), (15, ROWS), (20, ROWS), (23, ROWS)]


def test_progress_lines_of_a_csv_job_estimate_the_total_from_the_bytes_read(tiny_bert, tmp_path, monkeypatch,
                                                                           capsys):
    assert _resumed_progress(tmp_path, tiny_bert, monkeypatch, capsys, "csv") == [
        (5, 20), (10, 40), (15, 60), (20, 80), (23, 92)]


def test_a_quiet_job_prints_nothing_and_a_loud_one_its_summary(tiny_bert, tmp_path, capsys):
    src = _src(tmp_path)
    embed_file(str(src), str(tmp_path / "q.parquet"), "review", model=tiny_bert, chunk_rows=5, quiet=True,
               progress_every=0)
    assert capsys.readouterr().err == ""
    m = embed_file(str(src), str(tmp_path / "l.parquet"), "review", model=tiny_bert, chunk_rows=5,
                   progress_every=1e9)
    err = capsys.readouterr().err
    assert m["provenance"]["dims"] == 64  # the default pooling, cls+mean, of the tiny BERT's 32 dims
    assert err.startswith(f"bertfeat embed: wrote {tmp_path / 'l.parquet'} ({ROWS} rows x 64 dims per text column)")
    assert err.count("\n") == 1


def test_the_default_progress_interval_is_ten_seconds(tiny_bert, tmp_path, monkeypatch):
    seen = []
    real = files.Progress

    def recording(total, quiet, every=None, stream=None):
        seen.append(every)
        return real(total, quiet, every=every, stream=stream)

    monkeypatch.setattr(files, "Progress", recording)
    embed_file(str(_src(tmp_path)), str(tmp_path / "o.parquet"), "review", model=tiny_bert, quiet=True)
    assert seen == [10.0]


def test_another_jobs_leftovers_are_reported_unless_quiet(tiny_bert, tmp_path, monkeypatch, capsys):
    src = _src(tmp_path)
    out = tmp_path / "out.parquet"
    _stopped_in_chunk(monkeypatch, 1, str(src), str(out), "review", model=tiny_bert, quiet=True, chunk_rows=5)
    capsys.readouterr()
    embed_file(str(src), str(out), "review", model=tiny_bert, chunk_rows=7, progress_every=1e9)
    assert capsys.readouterr().err.startswith(
        f"bertfeat embed: {tmp_path / 'out.parquet.partial'} holds parts of another job (other chunk_rows); "
        "starting over.\n")
    _stopped_in_chunk(monkeypatch, 1, str(src), str(tmp_path / "q.parquet"), "review", model=tiny_bert, quiet=True,
                      chunk_rows=5)
    capsys.readouterr()
    embed_file(str(src), str(tmp_path / "q.parquet"), "review", model=tiny_bert, quiet=True, chunk_rows=7)
    assert capsys.readouterr().err == ""


# -- warnings ----------------------------------------------------------------------------------------------------------

def test_only_truncation_warnings_are_held_back_for_the_summary(tiny_bert, tmp_path, monkeypatch):
    src = tmp_path / "in.parquet"
    pd.DataFrame({"review": ["word " * 200, "short"]}).to_parquet(src)
    real = ArrowFeaturizer.__call__

    def also_warns(self, batch, first_row=0):
        warnings.warn("something else to know", UserWarning)
        return real(self, batch, first_row)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", also_warns)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manifest = embed_file(str(src), str(tmp_path / "o.parquet"), "review", model=tiny_bert, quiet=True,
                              max_length=16)
    assert manifest["counts"]["truncated"] == 1
    assert [(w.category, str(w.message)) for w in caught] == [(UserWarning, "something else to know")]
    assert not any(issubclass(w.category, TruncationWarning) for w in caught)


# -- options handed on -------------------------------------------------------------------------------------------------

def test_chunks_of_one_row_and_of_few_characters(tiny_bert, tmp_path):
    src = _src(tmp_path, n=3)
    m = embed_file(str(src), str(tmp_path / "a.parquet"), "review", model=tiny_bert, quiet=True, chunk_rows=1)
    assert m["counts"]["chunks"] == 3 and m["chunk_rows"] == 1
    assert pq.ParquetFile(tmp_path / "a.parquet").metadata.num_row_groups == 3
    m = embed_file(str(src), str(tmp_path / "b.parquet"), "review", model=tiny_bert, quiet=True, chunk_chars=1)
    assert m["counts"]["chunks"] == 3 and m["chunk_chars"] == 1
    m = embed_file(str(src), str(tmp_path / "c.parquet"), "review", model=tiny_bert, quiet=True)
    assert m["counts"]["chunks"] == 1 and (m["chunk_rows"], m["chunk_chars"]) == (10_000, CHUNK_CHARS)


def test_the_delimiter_and_type_inference_reach_the_reader(tiny_bert, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("id;review\n1;a, b and c\n2;d\n")
    m = embed_file(str(src), str(tmp_path / "a.parquet"), "review", keep_cols="id", model=tiny_bert, quiet=True,
                   delimiter=";", infer_types=True)
    assert m["reading"] == {"delimiter": ";", "infer_types": True, "quoting": "csv"}
    table = pq.read_table(tmp_path / "a.parquet")
    assert table.column("id").to_pylist() == [1, 2] and table.schema.field("id").type == pa.int64()
    m = embed_file(str(src), str(tmp_path / "b.parquet"), "review", keep_cols="id", model=tiny_bert, quiet=True,
                   delimiter=";")
    assert m["reading"] == {"delimiter": ";", "infer_types": False, "quoting": "csv"}
    assert pq.read_table(tmp_path / "b.parquet").column("id").to_pylist() == ["1", "2"]
    src.write_text('id;review\n1;"a" b\n')  # quoting reaches the reader: a quote opens no quoted value
    m = embed_file(str(src), str(tmp_path / "c.parquet"), "review", keep_cols="id", model=tiny_bert, quiet=True,
                   delimiter=";", quoting="none")
    assert m["reading"] == {"delimiter": ";", "infer_types": False, "quoting": "none"}


def test_an_existing_output_is_replaced_only_when_asked_and_never_a_folder(tiny_bert, tmp_path):
    src = _src(tmp_path, n=3)
    out = tmp_path / "o.parquet"
    out.write_bytes(b"old")
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True)
    assert out.read_bytes() == b"old"
    embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True, overwrite=True)
    assert pq.read_table(out).num_rows == 3
    folder = tmp_path / "d.parquet"
    folder.mkdir()
    with pytest.raises(FileExistsError, match="is a folder and the output is one parquet file"):
        embed_file(str(src), str(folder), "review", model=tiny_bert, quiet=True, overwrite=True)
    assert not (tmp_path / "d.parquet.partial").exists()


# -- what a stopped or failed job leaves -------------------------------------------------------------------------------

def _fail_in_chunk(monkeypatch, k: int, exc: BaseException):
    real = _CALL
    calls = []

    def featurize(self, batch, first_row=0):
        if len(calls) == k:
            raise exc
        calls.append(1)
        return real(self, batch, first_row)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", featurize)


@pytest.mark.parametrize("k", [0, 2])
def test_a_mistake_in_the_data_leaves_nothing_to_resume(tiny_bert, tmp_path, monkeypatch, k):
    _fail_in_chunk(monkeypatch, k, ValueError("row 7: not a text"))
    with pytest.raises(ValueError, match="^row 7: not a text$"):
        embed_file(str(_src(tmp_path)), str(tmp_path / "o.parquet"), "review", model=tiny_bert, quiet=True,
                   chunk_rows=5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


@pytest.mark.parametrize("exc", [OSError(5, "Input/output error"), _Killed()], ids=["os-error", "stopped"])
def test_a_stopped_job_keeps_its_folder_only_when_it_holds_work(tiny_bert, tmp_path, monkeypatch, exc):
    src = _src(tmp_path)
    _fail_in_chunk(monkeypatch, 0, exc)
    with pytest.raises(type(exc)):
        embed_file(str(src), str(tmp_path / "o.parquet"), "review", model=tiny_bert, quiet=True, chunk_rows=5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]  # nothing done: nothing to resume

    _fail_in_chunk(monkeypatch, 1, exc)
    with pytest.raises(type(exc)):
        embed_file(str(src), str(tmp_path / "o.parquet"), "review", model=tiny_bert, quiet=True, chunk_rows=5)
    assert (tmp_path / "o.parquet.partial" / "part-000000.json").exists()  # chunk 0 is kept for the rerun


# -- joining the parts -----------------------------------------------------------------------------------------------

class _Featurizer:
    text_cols = ["t"]

    def product_shape(self):
        return None, None  # no model: no rates measured

    def provenance(self):
        return {"dims": 1}


def test_each_part_becomes_one_row_group_whatever_its_size(tmp_path):
    """One row group per chunk, also past parquet writers' default of 1,048,576 rows a group."""
    paths = OutputPaths(tmp_path / "o.parquet")
    paths.partial.mkdir()
    schema = pa.schema([("f", pa.float32())], metadata={b"bertfeat": b"{}"})
    sizes = [1_100_000, 1, 5]
    for k, n in enumerate(sizes):
        pq.write_table(pa.table({"f": np.zeros(n, np.float32)}), paths.part(k))
        paths.part_stats(k).write_text(json.dumps(EncodeStats(rows=n, unique=1, seconds=0.25 * (k + 1)).to_dict()))
        np.save(paths.part_hashes(k), np.array([k], np.uint64))
    state = {"input": {"path": "in.csv"}, "chunk_rows": 2_000_000, "chunk_chars": CHUNK_CHARS,
             "reading": {"delimiter": ",", "infer_types": False}}
    manifest = files._finish(paths, 3, schema, _Featurizer(), state, 0, 0, EncodeStats(), 0.0, None, 0, 30.0)
    meta = pq.ParquetFile(paths.out).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == sizes
    assert pq.read_schema(paths.out).metadata == {b"bertfeat": b"{}"}
    assert manifest["timing"]["slowest_chunk_seconds"] == 0.75 and manifest["timing"]["embed_seconds"] == 1.5
    assert not paths.partial.exists()


# -- paths as Python users pass them ---------------------------------------------------------------------------------

def test_the_manifest_names_every_path_absolute_so_it_reads_the_same_from_any_folder(tiny_bert, tmp_path, monkeypatch):
    """The manifest recorded ``output`` (and ``cache_dir``, and a glob input) as typed, relative to a folder it does
    not name, beside the input's absolute path: read after a ``cd`` (or by a pipeline elsewhere) it named no file.
    Now each is absolute, links followed, as the input file is."""
    (tmp_path / "data").mkdir()
    frame(3).to_parquet(tmp_path / "data" / "a.parquet")
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "work").symlink_to(real)  # a folder reached through a link: recorded where it lies
    monkeypatch.chdir(tmp_path)
    manifest = embed_file("data/*.parquet", "work/f.parquet", "review", model=tiny_bert, quiet=True,
                          cache_dir="work/cache")
    assert manifest["output"] == str(real / "f.parquet") and manifest["cache_dir"] == str(real / "cache")
    assert manifest["input"]["path"] == str(tmp_path / "data" / "*.parquet")
    assert manifest["input"]["files"][0][0] == str(tmp_path / "data" / "a.parquet")
    monkeypatch.chdir(real)
    assert json.loads((real / "f.parquet.manifest.json").read_text()) == manifest
    assert Path(manifest["output"]).is_file() and Path(manifest["cache_dir"]).is_dir()


def test_paths_may_be_path_objects(tiny_bert, tmp_path):
    src = _src(tmp_path, "csv", n=3)
    by_str = embed_file(str(src), str(tmp_path / "a.parquet"), "review", model=tiny_bert, quiet=True)
    by_path = embed_file(src, tmp_path / "b.parquet", "review", model=tiny_bert, quiet=True)
    assert by_path["input"] == by_str["input"] and by_path["output"] == str(tmp_path / "b.parquet")
    assert_same_output(tmp_path / "b.parquet", tmp_path / "a.parquet")


@pytest.mark.parametrize("bad", [3, None, ["a.csv"]])
def test_an_input_that_is_no_path_is_refused_saying_so(tmp_path, bad):
    with pytest.raises(TypeError) as info:
        embed_file(bad, str(tmp_path / "o.parquet"), "review")
    assert str(info.value) == (f"input={bad!r} is not valid: expected the path of a CSV or parquet file, a folder "
                               "or a glob (a str or pathlib.Path).")
    with pytest.raises(TypeError) as info:
        embed_file(str(_src(tmp_path, n=3)), bad, "review")
    assert str(info.value) == (f"out={bad!r} is not valid: expected the path of the parquet file to write (a str or "
                               "pathlib.Path).")


def _rmtree_that_fails_unless_told_to_ignore(monkeypatch):
    """shutil.rmtree on a filesystem that will not let a folder go (permissions, a busy NFS file)."""
    import shutil

    real = shutil.rmtree

    def rmtree(path, ignore_errors=False, **kw):
        if not ignore_errors:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, ignore_errors=True, **kw)

    monkeypatch.setattr(shutil, "rmtree", rmtree)


@pytest.mark.parametrize("exc", [ValueError("row 3: not a text"), OSError(5, "Input/output error"), _Killed()],
                         ids=["data", "os-error", "stopped"])
def test_a_cleanup_that_fails_never_hides_why_the_job_stopped(tiny_bert, tmp_path, monkeypatch, exc):
    _fail_in_chunk(monkeypatch, 0, exc)
    _rmtree_that_fails_unless_told_to_ignore(monkeypatch)
    with pytest.raises(type(exc)) as info:
        embed_file(str(_src(tmp_path)), str(tmp_path / "o.parquet"), "review", model=tiny_bert, quiet=True,
                   chunk_rows=5)
    assert str(info.value) == {"data": "row 3: not a text", "os-error": "a file: Input/output error.",
                               "stopped": ""}[{ValueError: "data", OSError: "os-error", _Killed: "stopped"}[type(exc)]]


def test_a_finished_job_whose_folder_cannot_be_removed_still_succeeds(tiny_bert, tmp_path, monkeypatch):
    _rmtree_that_fails_unless_told_to_ignore(monkeypatch)
    manifest = embed_file(str(_src(tmp_path)), str(tmp_path / "o.parquet"), "review", model=tiny_bert, quiet=True,
                          chunk_rows=5)
    assert manifest["counts"]["rows"] == ROWS and pq.read_table(tmp_path / "o.parquet").num_rows == ROWS


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_the_cluster_engines_refuse_an_input_that_is_no_path_alike(tmp_path, engine):
    """Ray and Spark used to str() their input, so None read as a missing file named 'None'. Each engine asks for its
    extra first (test_ray_optional.py, test_spark_optional.py say how): without it there is no input check to run."""
    if engine == "ray":
        pytest.importorskip("ray.data", reason="Ray Data is an optional extra: pip install 'bertfeat[ray]'")
        from bertfeat.ray import embed_parquet as run
    else:
        pytest.importorskip("pyspark", reason="pyspark is an optional extra: pip install 'bertfeat[spark]'")
        from bertfeat.spark import embed_files as run
    with pytest.raises(TypeError) as info:
        run(None, str(tmp_path / "o"), "review")
    assert str(info.value) == ("input=None is not valid: expected the path of a CSV or parquet file, a folder or a "
                               "glob (a str or pathlib.Path).")



@pytest.mark.parametrize("engine, option", [("ray", "chunk_chars"), ("ray dataset", "checkpoint_seconds"),
                                            ("spark", "chunk_chars"), ("spark", "checkpoint_seconds")])
def test_the_cluster_engines_refuse_the_local_engines_chunk_bound_saying_what_bounds_theirs(tmp_path, engine, option):
    """``bertfeat embed --engine ray --chunk-chars N`` is refused, but from Python ``embed_parquet(..., chunk_chars=N)``
    failed with "BertEmbedder.__init__() got an unexpected keyword argument 'chunk_chars'": neither that Ray and
    Spark have no such bound nor what bounds their memory."""
    src = _src(tmp_path)
    if engine == "ray dataset":
        from bertfeat.ray import embed_dataset

        def run(src, out, col, **kw):
            return embed_dataset(None, col, **kw)
    elif engine == "ray":
        from bertfeat.ray import embed_parquet as run
    else:
        from bertfeat.spark import embed_files as run
    name = "Ray" if engine.startswith("ray") else "Spark"
    with pytest.raises(TypeError) as info:
        run(str(src), str(tmp_path / "o"), "review", **{option: 5})
    says = {
        "chunk_chars": f"chunk_chars= bounds the local engine's chunks (bertfeat.files.embed_file): the {name} engine "
                       "reads batches of batch_rows= rows, so a smaller batch_rows= bounds a batch's memory; drop "
                       "chunk_chars=.",
        "checkpoint_seconds": "checkpoint_seconds= applies to the local engine (bertfeat.files.embed_file): the "
                              f"{name} engine resumes a stopped job through its cache; drop checkpoint_seconds=.",
    }
    assert str(info.value) == says[option]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]
    with pytest.raises(TypeError) as info:  # the local engine's name for a batch's rows
        run(str(src), str(tmp_path / "o"), "review", chunk_rows=5)
    assert str(info.value) == (f"chunk_rows= is the local engine's name (bertfeat.files.embed_file): the {name} "
                               "engine's is batch_rows=, rows per batch sent to a worker; pass batch_rows=5.")


@pytest.mark.parametrize("option, value, instead", [
    ("batch_rows", 5, "the local engine's batch is chunk_rows="),
    ("num_workers", 2, "it is bertfeat.ray.embed_parquet's"),
    ("master", "local[2]", "it is bertfeat.spark.embed_files'"),
])
def test_the_local_engine_refuses_a_cluster_engines_option_saying_whose_it_is(tmp_path, option, value, instead):
    """The mirror of the refusal above: ``embed_file(..., batch_rows=5)`` (Ray's and Spark's name for the rows of a
    batch) failed with "BertEmbedder.__init__() got an unexpected keyword argument 'batch_rows'"."""
    src = _src(tmp_path)
    with pytest.raises(TypeError) as info:
        embed_file(str(src), str(tmp_path / "o.parquet"), "review", **{option: value})
    assert str(info.value) == f"{option}= is not an option of the local engine (bertfeat.files.embed_file): {instead}."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]

# -- a mistake is named by its row in the input, not in its chunk -----------------------------------------------------

@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_a_bad_text_is_named_by_its_row_in_the_input_not_in_its_chunk(tiny_bert, tmp_path, kind):
    df = frame(ROWS, seed=3)
    df["title"] = df["review"].str[:9]
    df.loc[13, "title"] = None  # the fourth row of the third chunk of 5
    src = tmp_path / f"in.{kind}"
    df.to_parquet(src) if kind == "parquet" else df.to_csv(src, index=False)
    with pytest.raises(ValueError) as info:
        embed_file(src, tmp_path / "o.parquet", ["review", "title"], model=tiny_bert, quiet=True, chunk_rows=5)
    assert str(info.value).startswith("row 13 of column 'title' is missing (None) and missing='error'.")
    with pytest.raises(ValueError) as whole:  # the same words as when the whole input is one chunk
        embed_file(src, tmp_path / "o.parquet", ["review", "title"], model=tiny_bert, quiet=True, chunk_rows=100)
    assert str(info.value) == str(whole.value)


def test_a_resumed_job_names_a_bad_text_by_its_row_in_the_input(tiny_bert, tmp_path, monkeypatch):
    df = frame(ROWS, seed=3)
    df.loc[21, "review"] = "  "  # blank: the second row of the fifth chunk
    df.to_parquet(tmp_path / "in.parquet")
    job = dict(model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_in_chunk(monkeypatch, 3, tmp_path / "in.parquet", tmp_path / "o.parquet", "review", **job)
    with pytest.raises(ValueError) as info:  # chunks 0-2 come from the stopped run, unread by the featurizer
        embed_file(tmp_path / "in.parquet", tmp_path / "o.parquet", "review", **job)
    assert str(info.value).startswith("row 21 of column 'review' is blank ('  '):")


def test_blank_texts_are_missing_in_the_distinct_count_too(tiny_bert, tmp_path):
    """unique_texts counted each distinct blank text ("", "  ", a tab) that the job treated as missing."""
    src = tmp_path / "u.csv"
    src.write_text('id,text\n1,the cat\n2,""\n3,"  "\n4,"\t"\n5,the cat\n6,"\x00"\n')
    manifest = embed_file(str(src), str(tmp_path / "u.parquet"), "text", keep_cols="id", model=tiny_bert,
                          missing="zero", quiet=True)
    counts = manifest["counts"]
    assert (counts["rows"], counts["missing"], counts["unique_texts"], counts["embedded"]) == (6, 4, 1, 1)


def test_a_prefix_is_recorded_and_the_record_reproduces_the_features(tiny_bert, tmp_path):
    """The provenance left the prefix out: the recipe it recorded gave other features (by up to 0.5)."""
    from bertfeat import BertEmbedder

    src = tmp_path / "p.csv"
    pd.DataFrame({"id": [1, 2], "text": ["the cat sat on the mat", "a dog ran in the park"]}).to_csv(src, index=False)
    out = tmp_path / "p.parquet"
    manifest = embed_file(str(src), str(out), "text", model=tiny_bert, prefix="query: ", pooling="mean", quiet=True)
    m = json.loads(pq.read_schema(out).metadata[b"bertfeat"])
    assert m["prefix"] == manifest["provenance"]["prefix"] == "query: "
    assert m["long_text"] == "truncate" and m["stride"] is None  # recorded as 0, which BertEmbedder refuses there
    est = BertEmbedder(m["model"], pooling="+".join(m["pooling"]), layers=m["layers"], layer_agg=m["layer_agg"],
                       max_length=m["max_length"], long_text=m["long_text"], stride=m["stride"],
                       normalize=m["normalize"], dtype=m["dtype"], prefix=m["prefix"] or None)
    expected = est.fit_transform(["the cat sat on the mat", "a dog ran in the park"])
    assert est.recipe_.fingerprint() == m["recipe_fingerprint"]
    got = pq.read_table(out).drop_columns([]).to_pandas().to_numpy(dtype=np.float32)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_whether_the_prefix_was_pooled_is_recorded(tiny_bert, tmp_path):
    """A model whose Pooling config says "include_prompt": false leaves the prefix (and the first token) out of mean
    pooling: other vectors than the same prefix pooled with the text (Recipe.pool_prefix, in the fingerprint), but the
    provenance recorded only the prefix, so a file's record could not say which of the two its vectors are."""
    from tests.test_prompts import _instructor_folder

    src = tmp_path / "p.csv"
    pd.DataFrame({"text": ["the cat sat on the mat", "a dog ran in the park"]}).to_csv(src, index=False)
    recorded = {}
    for include_prompt in (False, True):
        model = _instructor_folder(tiny_bert, tmp_path / f"m-{include_prompt}", include_prompt=include_prompt)
        out = tmp_path / f"p-{include_prompt}.parquet"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the model's prompts note
            manifest = embed_file(str(src), str(out), "text", model=str(model), prefix="query: ", pooling="mean",
                                  quiet=True)
        m = json.loads(pq.read_schema(out).metadata[b"bertfeat"])
        assert m == manifest["provenance"] and m["prefix"] == "query: "
        recorded[include_prompt] = m
    assert recorded[False]["pool_prefix"] is False and recorded[True]["pool_prefix"] is True
    # the two records differ in the fingerprint and, now, in a field that says why
    differ = {k for k in recorded[True] if recorded[True][k] != recorded[False][k]}
    assert differ == {"model", "model_label", "recipe_fingerprint", "pool_prefix"}
    # no prefix: nothing to leave out, pooled as ever
    manifest = embed_file(str(src), str(tmp_path / "none.parquet"), "text", model=str(tmp_path / "m-False"),
                          pooling="mean", quiet=True, prompt_name=None)
    assert manifest["provenance"]["pool_prefix"] is True and manifest["provenance"]["prefix"] == ""


def test_a_text_the_tokenizer_drops_whole_is_missing_in_a_file_job_and_named_by_its_input_row(drops_characters,
                                                                                                 tmp_path):
    """A file's text of which the tokenizer keeps no token got the empty text's vector, counted as embedded; now
    it is missing (a zero row, counted so) or, under missing='error', refused naming its row in the input."""
    from tests.test_encode import DROPPED

    src = tmp_path / "d.csv"
    pd.DataFrame({"id": range(8), "text": ["the cat sat"] * 6 + [DROPPED[1], "a dog ran"]}).to_csv(src, index=False)
    manifest = embed_file(str(src), str(tmp_path / "d.parquet"), "text", keep_cols="id", model=drops_characters,
                          pooling="mean", missing="zero", chunk_rows=5, quiet=True)
    counts = manifest["counts"]
    assert (counts["rows"], counts["missing"], counts["embedded"]) == (8, 1, 3)  # the cat sat: once per chunk
    got = pq.read_table(tmp_path / "d.parquet").to_pandas().set_index("id")
    assert (got.loc["6"] == 0).all() and (got.loc["7"] != 0).any()
    with pytest.raises(ValueError, match=r"^row 6 \('\U0001f600'\) gives no token to this model's tokenizer"):
        embed_file(str(src), str(tmp_path / "e.parquet"), "text", model=drops_characters, pooling="mean",
                   chunk_rows=5, quiet=True)


def test_a_text_the_tokenizer_drops_whole_is_missing_in_the_distinct_count_too(drops_characters, tmp_path):
    """unique_texts counted each distinct text the tokenizer drops whole (by is_blank only), though the job reads it
    as missing: 4 distinct texts for 2 embedded. Both text columns, across chunks."""
    from tests.conftest import DROPPED

    df = pd.DataFrame({"id": range(7),
                       "a": ["the cat sat", DROPPED[0], "a dog ran", DROPPED[0], DROPPED[1], "the cat sat", ""],
                       "b": [DROPPED[2], "the cat sat", "a cat", DROPPED[1], "a cat", "a cat", "  "]})
    df.to_parquet(tmp_path / "in.parquet")
    manifest = embed_file(str(tmp_path / "in.parquet"), str(tmp_path / "d.parquet"), ["a", "b"], keep_cols="id",
                          model=drops_characters, pooling="mean", missing="nan", chunk_rows=3, quiet=True)
    counts = manifest["counts"]
    assert (counts["texts"], counts["missing"], counts["unique_texts"]) == (14, 7, 3), counts


@pytest.mark.parametrize("change", ["copy finishing", "rewritten in place"])
def test_an_input_that_changes_while_the_job_reads_it_fails_the_job_instead_of_a_mixed_output(tiny_bert, tmp_path,
                                                                                              monkeypatch, change):
    """A CSV still being copied in (its last line cut mid-text) was read up to where the copy had got, its cut text
    embedded as a whole one, and the job finished with the rows read, while its manifest recorded the size it had
    at the start; a file rewritten while read gave the first chunks of one version and the rest of another. The
    input is fingerprinted again once read: a changed input fails the job, leaving nothing, and the rerun reads it
    whole."""
    src, out = tmp_path / "in.csv", tmp_path / "f.parquet"
    whole = frame(ROWS).to_csv(index=False)
    src.write_text(whole[:len(whole) - 7] if change == "copy finishing" else whole)
    calls = []

    def featurize(self, batch, first_row=0):
        if not calls:  # while the first chunk is embedded, the file changes under the job
            src.write_text(whole if change == "copy finishing" else whole.replace("the", "a"))
        calls.append(batch.num_rows)
        return _CALL(self, batch, first_row)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", featurize)
    with pytest.raises(ValueError, match=r"changed while the job read it .*run the same command again"):
        embed_file(str(src), str(out), "review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
    _revive(monkeypatch)
    manifest = embed_file(str(src), str(out), "review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    assert manifest["counts"]["rows"] == ROWS and manifest["input"]["files"][0][1] == len(src.read_bytes())
    assert pq.read_table(out, columns=["id"]).column("id").to_pylist() == [f"{i:04d}" for i in range(ROWS)]


@pytest.mark.parametrize("how", ["cp -p (rewritten in place)", "rsync -t (renamed over it)"])
def test_an_input_replaced_by_another_of_the_same_size_and_mtime_is_not_resumed(tiny_bert, tmp_path, monkeypatch,
                                                                               how, capsys):
    """A job's input replaced, between a stopped run and its rerun, by another file of the same size and the same
    modification time (``cp -p``, ``rsync -t``, ``touch -r``, an export rerun within the filesystem's mtime
    granularity) was taken for the same input: the rerun kept the first run's parts and embedded the rest of the new
    file, so the output mixed two inputs, silently. The change time (which no tool can set) is in the
    job's fingerprint: the rerun starts over, and its output is the new input's."""
    src, out = tmp_path / "in.csv", tmp_path / "out.parquet"
    header, *lines = frame(ROWS, seed=3).to_csv(index=False).splitlines(keepends=True)
    src.write_text(header + "".join(lines))
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_in_chunk(monkeypatch, 3, str(src), str(out), **job)  # chunks 0, 1 and 2 finished
    before = src.stat()
    other = header + "".join(reversed(lines))  # another input, of the same size
    if how.startswith("cp"):
        src.write_text(other)
    else:
        (tmp_path / "new.csv").write_text(other)
        os.replace(tmp_path / "new.csv", src)
    os.utime(src, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (src.stat().st_size, src.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    manifest = embed_file(str(src), str(out), **{**job, "quiet": False}, progress_every=1e9)
    assert ("holds parts of another job (other input: same names, sizes and modification times, but another change "
            "time (another file put there, cp -p, rsync -t, touch -r; or chmod, chown, a new hard link)); starting "
            "over.") in capsys.readouterr().err
    assert manifest["counts"]["rows_resumed"] == 0
    ids = pq.read_table(out, columns=["id"]).column("id").to_pylist()
    assert ids == [f"{i:04d}" for i in reversed(range(ROWS))]
    reference = tmp_path / "ref.parquet"
    embed_file(str(src), str(reference), **job)
    assert_same_output(out, reference)


def test_the_same_input_untouched_still_resumes_after_it_was_read_again(tiny_bert, tmp_path, monkeypatch):
    """What must still resume: the same file after a crash, read (its access time changed), copied elsewhere."""
    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"
    job = dict(text_cols="review", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_in_chunk(monkeypatch, 3, str(src), str(out), **job)
    src.read_bytes()
    (tmp_path / "copy.csv").write_bytes(src.read_bytes())
    assert embed_file(str(src), str(out), **job)["counts"]["rows_resumed"] == 15


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_manifests_rates_are_measured_at_the_models_own_feed_forward_shape(tiny_bert, tmp_path, monkeypatch,
                                                                                dtype):
    """The manifest's matmul_gflops were measured at 4 x hidden (32 x 128 here), not at the model's own feed-forward
    shape (32 x 37; TinyBERT's 312 x 1200) that ``bertfeat info`` and the SlowDtypeWarning measure: a second
    measurement, of products the model never runs."""
    from bertfeat import hardware

    shapes = []

    def rates(hidden, intermediate, dtypes):
        shapes.append((hidden, intermediate))
        return {d: 1.0 for d in dtypes}

    monkeypatch.setattr(hardware, "dtype_rates", rates)
    manifest = embed_file(str(_src(tmp_path)), str(tmp_path / "out.parquet"), "review", model=tiny_bert, quiet=True,
                          chunk_rows=5, dtype=dtype)
    assert manifest["timing"]["machine"]["matmul_gflops"] == {"float32": 1.0, "bfloat16": 1.0}
    assert set(shapes) == {(32, 37)}


def test_a_run_the_cache_answers_whole_measures_its_rates_at_the_models_own_shape_too(tiny_bert, tmp_path,
                                                                                     monkeypatch):
    """(found by a review of session 13's merged work, 2026-11-27, session 13) The leftovers hunt measured the
    manifest's rates at the model's feed-forward width where this job loaded the model, and fell back to 4 x hidden
    where the cache answered every text: in a process that had imported torch (R's bf_embed_file(), a notebook, a
    second job), that run's manifest measured products the model never runs (32 x 128 here, not 32 x 37). The width
    is read from the model's config.json there, as bertfeat info reads it."""
    from bertfeat import hardware

    shapes = []

    def rates(hidden, intermediate, dtypes):
        shapes.append((hidden, intermediate))
        return {d: 1.0 for d in dtypes}

    monkeypatch.setattr(hardware, "dtype_rates", rates)
    job = dict(model=tiny_bert, quiet=True, chunk_rows=5, cache_dir=str(tmp_path / "cache"))
    embed_file(str(_src(tmp_path)), str(tmp_path / "first.parquet"), "review", **job)
    manifest = embed_file(str(_src(tmp_path)), str(tmp_path / "again.parquet"), "review", **job)
    assert manifest["this_run"]["embedded"] == 0 and manifest["timing"]["forward_pass"] == {}  # the model never ran
    assert manifest["timing"]["machine"]["matmul_gflops"] == {"float32": 1.0, "bfloat16": 1.0}
    assert set(shapes) == {(32, 37)}


def _written_before_quoting_was_recorded(state: dict) -> dict:
    """A job's state as bertfeat wrote it before ``reading`` recorded ``quoting`` (before 2026-11-27)."""
    return {**state, "reading": {k: v for k, v in state["reading"].items() if k != "quoting"}}


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_run_stopped_before_the_state_recorded_quoting_resumes(tiny_bert, tmp_path, monkeypatch, kind, capsys):
    """A stopped run whose state.json has no ``quoting`` (written before --quoting was): its CSV was read with
    quotes, as a CSV is read by default now, and a parquet has none. Its rerun said "holds parts of another job
    (other reading); starting over" and embedded every part again; it resumes now, and with another quoting
    declared it still starts over."""
    src, out = _src(tmp_path, kind), tmp_path / "out.parquet"
    state_file = tmp_path / "out.parquet.partial" / "state.json"
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)

    def stopped_the_old_way():
        _stopped_in_chunk(monkeypatch, 3, str(src), str(out), **job)  # chunks 0, 1 and 2 finished
        state = json.loads(state_file.read_text())
        assert "quoting" in state["reading"]
        state_file.write_text(json.dumps(_written_before_quoting_was_recorded(state), indent=1))

    stopped_the_old_way()
    manifest = embed_file(str(src), str(out), **{**job, "quiet": False}, progress_every=1e9)
    assert "starting over" not in capsys.readouterr().err
    assert manifest["counts"]["rows_resumed"] == 15
    assert manifest["reading"]["quoting"] == {"csv": "csv", "parquet": None}[kind]  # the manifest says it now
    reference = tmp_path / "ref.parquet"
    embed_file(str(src), str(reference), **job)
    assert_same_output(out, reference)
    if kind == "csv":
        for quoting, resumed in (("csv", 15), ("none", 0)):
            out.unlink()
            Path(str(out) + ".manifest.json").unlink()
            stopped_the_old_way()
            assert embed_file(str(src), str(out), **job, quoting=quoting)["counts"]["rows_resumed"] == resumed


def _stopped_before_its_manifest(monkeypatch, source: str, out: Path, **job) -> None:
    """``embed_file(source, out, **job)`` stopped (KeyboardInterrupt stands in for SIGKILL) as it writes its manifest:
    the output in place, its finished.json written, no manifest."""
    manifest_path = Path(str(out) + ".manifest.json")
    real_write = files.atomic_write_bytes

    def killed_at_the_manifest(path, data):
        if Path(path) == manifest_path:
            raise KeyboardInterrupt
        return real_write(path, data)

    monkeypatch.setattr(files, "atomic_write_bytes", killed_at_the_manifest)
    with pytest.raises(KeyboardInterrupt):
        embed_file(source, str(out), **job)
    monkeypatch.setattr(files, "atomic_write_bytes", real_write)


def test_a_run_stopped_at_its_manifest_before_the_state_recorded_quoting_is_finished(tiny_bert, tmp_path,
                                                                                    monkeypatch):
    """The same for a run stopped after its output was in place, before its manifest: its finished.json names a
    state with no ``quoting``. The rerun was refused ("exists; pass --overwrite"); now it writes the manifest and
    leaves the output as it was."""
    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"
    manifest_path = Path(str(out) + ".manifest.json")
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_before_its_manifest(monkeypatch, str(src), out, **job)
    marker_file = tmp_path / "out.parquet.partial" / files.FINISHED
    marker = json.loads(marker_file.read_text())
    marker_file.write_text(json.dumps({**marker, "state": _written_before_quoting_was_recorded(marker["state"])}))
    written = out.read_bytes()
    manifest = embed_file(str(src), str(out), **job)
    assert json.loads(manifest_path.read_text()) == manifest and manifest["counts"]["rows"] == ROWS
    assert out.read_bytes() == written and not marker_file.parent.exists()


@pytest.mark.parametrize("then", ["rerun", "another file of its size put there"])
def test_a_run_stopped_at_its_manifest_where_the_rename_copied_the_output_is_finished(tiny_bert, tmp_path,
                                                                                      monkeypatch, then):
    """s3fs and gcsfuse rename a file by copying it (a new inode, a new mtime), and finished.json named the output
    by inode: a run stopped after its output was in place, before its manifest, was refused on rerun ("exists;
    pass overwrite=True"), its output left without a manifest. Now the output is also known by its bytes' digest,
    so the rerun writes the manifest; a file of the same size put there meanwhile is still refused, left as it is."""
    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"
    manifest_path = Path(str(out) + ".manifest.json")
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    real_replace = os.replace

    def copying_rename(a, b, *args, **kwargs):  # what s3fs and gcsfuse do: copy, then remove the source
        if Path(b) != out:
            return real_replace(a, b, *args, **kwargs)
        shutil.copyfile(a, b)
        os.unlink(a)

    monkeypatch.setattr(os, "replace", copying_rename)
    _stopped_before_its_manifest(monkeypatch, str(src), out, **job)
    marker_file = tmp_path / "out.parquet.partial" / files.FINISHED
    assert marker_file.exists() and not manifest_path.exists()
    written = out.read_bytes()
    if then == "rerun":
        manifest = embed_file(str(src), str(out), **job)
        assert json.loads(manifest_path.read_text()) == manifest and manifest["counts"]["rows"] == ROWS
        assert out.read_bytes() == written and not marker_file.parent.exists()
        return
    other = bytearray(written)
    other[len(other) // 2] ^= 1
    out.unlink()
    out.write_bytes(bytes(other))
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        embed_file(str(src), str(out), **job)
    assert out.read_bytes() == bytes(other) and not manifest_path.exists()


def _stat_as_sshfs(monkeypatch, src):
    """Make ``os.stat`` of ``src`` answer as on sshfs and gcsfuse (:class:`_ChangeTimeIsModificationTime`); returns
    the real ``os.stat``."""
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda path, *args, **kwargs: (
        _ChangeTimeIsModificationTime(real_stat(path, *args, **kwargs)) if os.fspath(path) == str(src)
        else real_stat(path, *args, **kwargs)))
    return real_stat


class _ChangeTimeIsModificationTime:
    """``os.stat`` of ``path`` as sshfs and gcsfuse answer it: the change time is the modification time."""

    def __init__(self, st):
        self._st = st

    def __getattr__(self, name):
        if name in ("st_ctime", "st_ctime_ns"):
            name = name.replace("ctime", "mtime")
        return getattr(self._st, name)


@pytest.mark.parametrize("changed", ["no row", "a text of a finished chunk", "an id of a finished chunk",
                                     "a text of the unfinished chunk"])
def test_a_file_put_at_the_inputs_path_with_its_size_and_times_resumes_only_the_parts_of_its_own_rows(
        tiny_bert, tmp_path, monkeypatch, capsys, changed):
    """On sshfs and gcsfuse, which give the modification time as the change time, another file put at the input's
    path with its size and mtime (``cp -p``, ``rsync -t``) had the first file's fingerprint, so the rerun resumed
    the first file's parts: its output mixed two inputs, silently. Each part now records a digest of the rows it
    was made of, which the rerun reads anyway: a part is resumed only where the rows read now are those rows, and
    embedded again otherwise. Its output is then the file's now, byte for byte."""
    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"
    real_stat = _stat_as_sshfs(monkeypatch, src)
    job = dict(input=str(src), text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_in_chunk(monkeypatch, 3, out=str(out), **job)  # chunks 0, 1 and 2 finished
    df = pd.read_csv(src, dtype=str)
    row = 17 if "unfinished" in changed else 7  # chunk 3, or chunk 1
    if "text" in changed:
        df.loc[row, "review"] = df.loc[row, "review"][::-1]
        assert df.loc[row, "review"] != frame(ROWS, seed=3).loc[row, "review"]
    elif "id" in changed:
        df.loc[row, "id"] = "9999"
    st = real_stat(src)
    df.to_csv(tmp_path / "new.csv", index=False)
    os.replace(tmp_path / "new.csv", src)  # another file put there, with the first's size and mtime
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (real_stat(src).st_size, real_stat(src).st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    capsys.readouterr()
    manifest = embed_file(out=str(out), **{**job, "quiet": False})
    said = [line for line in capsys.readouterr().err.splitlines() if "other rows" in line]
    embed_file(**{**job, "input": str(src)}, out=str(tmp_path / "ref.parquet"))
    assert_same_output(out, tmp_path / "ref.parquet")  # the file's now, whole
    resumed = {"no row": 3, "a text of the unfinished chunk": 3}.get(changed, 2)
    assert (manifest["this_run"]["chunks_resumed"], manifest["this_run"]["chunks"]) == (resumed, 5 - resumed)
    assert said == ([] if resumed == 3 else [
        f"bertfeat embed: part 1 in {out}.partial was made of other rows than the input holds there now (another "
        "file put at its path with its size and times?); embedding such parts again."])


def test_a_missing_file_in_the_first_chunk_is_named_not_blamed_on_a_removed_partial_folder(tiny_bert, tmp_path,
                                                                                          monkeypatch):
    """(found reviewing the merge) a file not found in the first chunk for another reason (a model's weights file
    gone when first read, a Hugging Face cache cleaned) was told "'<out>.partial', where the job keeps its finished
    parts, was removed while the job ran": the job had removed its own empty .partial before it looked."""
    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"

    def featurize(self, batch, first_row=0):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/models/m/model.safetensors")

    monkeypatch.setattr(ArrowFeaturizer, "__call__", featurize)
    with pytest.raises(OSError) as info:
        embed_file(str(src), str(out), text_cols="review", model=tiny_bert, quiet=True, chunk_rows=5)
    assert "/models/m/model.safetensors" in str(info.value)
    assert "removed while the job ran" not in str(info.value)
    assert not Path(str(out) + ".partial").exists() and not out.exists()


def test_an_input_file_that_cannot_be_read_again_is_not_said_to_be_removed(tiny_bert, tmp_path, monkeypatch):
    """(found reviewing the merge) the job's second look at its input (has it changed while read?) took any OSError
    for a removed file: permissions taken away mid-job (EACCES) or an NFS handle gone stale (ESTALE) were told "was
    removed or renamed while the job read it"."""
    from bertfeat.readers import InputReader

    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"

    real = InputReader.fingerprint
    calls = []

    def fingerprint(self):
        calls.append(1)
        if len(calls) > 1:  # the second look, after the last chunk
            raise PermissionError(errno.EACCES, "Permission denied", str(src))
        return real(self)

    monkeypatch.setattr(InputReader, "fingerprint", fingerprint)
    with pytest.raises(OSError) as info:
        embed_file(str(src), str(out), text_cols="review", model=tiny_bert, quiet=True, chunk_rows=5)
    assert "Permission denied" in str(info.value) and "removed or renamed" not in str(info.value)
    assert not out.exists()


def test_an_untouched_input_whose_inode_number_changed_still_resumes(tiny_bert, tmp_path, monkeypatch):
    """(found reviewing the merge) FUSE mounts of object stores (s3fs, gcsfuse, /dbfs: where docs send cloud users)
    and SMB without server inode numbers make inode numbers up per mount: with the inode in the fingerprint, the same
    untouched file lost its resume after a remount (and could fail a job as "changed while read"). Here every stat
    of the rerun gives another inode number; size, mtime and change time are the file's own."""
    import pathlib

    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"
    job = dict(text_cols="review", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_in_chunk(monkeypatch, 3, str(src), str(out), **job)
    real_stat = pathlib.Path.stat

    def remounted(self, *args, **kwargs):
        st = real_stat(self, *args, **kwargs)
        if self.name != src.name:
            return st
        fields = list(st)
        fields[1] += 1_000_003  # st_ino
        return os.stat_result(fields + [st.st_atime, st.st_mtime, st.st_ctime],
                              {"st_atime_ns": st.st_atime_ns, "st_mtime_ns": st.st_mtime_ns,
                               "st_ctime_ns": st.st_ctime_ns})

    monkeypatch.setattr(pathlib.Path, "stat", remounted)
    assert src.stat().st_ino != real_stat(src).st_ino
    assert embed_file(str(src), str(out), **job)["counts"]["rows_resumed"] == 15


@pytest.mark.parametrize("checkpoint_seconds", [30, 0])
@pytest.mark.parametrize("removed", ["the folder of --out", "the job's .partial folder"])
def test_an_output_folder_removed_while_the_job_runs_is_named_as_what_happened(tiny_bert, tmp_path, monkeypatch,
                                                                               removed, checkpoint_seconds):
    """The folder of ``--out`` (or the job's ``.partial`` folder) removed while the job ran: the error named the temp
    file of the next part's write (``'.../.part-000001.hashes.npy.tmp-123.npy': No such file or directory``), not what
    happened and what to do. A checkpoint saved while the chunk ran made the folders again (``mkdir(parents=True)``),
    so the job ran on to its end and failed there with "a file: .../part-000000.parquet.", leaving a ``.partial``
    of parts without the first ones."""
    src, folder = _src(tmp_path), tmp_path / "features"
    folder.mkdir()
    out = folder / "out.parquet"
    calls = []

    def featurize(self, batch, first_row=0):
        calls.append(batch.num_rows)
        if len(calls) == 2:  # chunk 0 is written: its parts are there to lose
            shutil.rmtree(folder if removed.startswith("the folder") else out.with_name("out.parquet.partial"))
        return _CALL(self, batch, first_row)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", featurize)
    with pytest.raises(OSError) as caught:
        embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True, chunk_rows=5,
                   checkpoint_seconds=checkpoint_seconds)
    assert len(calls) == 2  # stopped in the chunk during which the folder went
    if removed.startswith("the folder"):
        assert not folder.exists()
        assert str(caught.value) == (
            f"the folder of out=, {str(folder)!r}, was removed while the job ran, so nothing was written at out=; "
            "create it again, then run the same command to start the job over.")
        return
    assert str(caught.value) == (
        f"{str(folder / 'out.parquet.partial')!r}, where the job keeps its finished parts, was removed while the job "
        "ran (its parts with it), so nothing was written at out=; run the same command again to start the job over.")
    assert sorted(p.name for p in folder.iterdir()) == []  # no lock file, no temp file left
    _revive(monkeypatch)
    assert embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True, chunk_rows=5)["counts"]["rows"] == ROWS


def test_an_input_removed_while_the_job_reads_it_is_named_as_removed_not_as_still_being_written(tiny_bert, tmp_path,
                                                                                                monkeypatch):
    """An input file removed (or renamed) while the job read it failed the job with "changed while the job read it
    (... is it still being copied or written?)": it says now what happened to which file."""
    src, out = _src(tmp_path, "csv"), tmp_path / "f.parquet"

    def featurize(self, batch, first_row=0):
        src.unlink(missing_ok=True)  # the rest is read through the open file
        return _CALL(self, batch, first_row)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", featurize)
    with pytest.raises(ValueError) as caught:
        embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True, chunk_rows=5)
    assert str(caught.value) == (
        f"input file {str(src.resolve())!r} was removed or renamed while the job read it; nothing was written. Put it "
        "back (or name it where it is now), then run the command again.")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_output_that_is_a_symlink_is_written_where_it_points_and_the_link_stays(tiny_bert, tmp_path):
    """``--out`` a link to a file on another disk: the output was renamed over the LINK, so the features landed
    beside the link and the file it points to kept the earlier features, silently; two jobs, one through the link
    and one through the target's own name, took two locks. The link is followed: the output, its manifest and the
    job's files go where it points."""
    src = _src(tmp_path, "csv", n=3)
    big = tmp_path / "big"
    big.mkdir()
    target = big / "features.parquet"
    link = tmp_path / "features.parquet"
    os.symlink(os.path.relpath(target, tmp_path), link)  # a relative link, as `ln -s big/features.parquet` makes
    manifest = embed_file(src, link, "review", model=tiny_bert, quiet=True)  # a dangling link: the first run
    assert link.is_symlink() and target.is_file() and manifest["output"] == str(target)
    assert (big / "features.parquet.manifest.json").is_file() and not (tmp_path / "features.parquet.manifest.json").exists()
    first = pq.read_table(target)
    manifest = embed_file(src, link, "review", model=tiny_bert, quiet=True, overwrite=True, normalize=True)
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, tmp_path)
    assert pq.read_table(link).equals(pq.read_table(target)) and not pq.read_table(target).equals(first)
    assert json.loads((big / "features.parquet.manifest.json").read_text())["provenance"]["normalize"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big", "features.parquet", "in.csv"]
    assert OutputPaths.of(link).lock == OutputPaths.of(target).lock  # one job, whichever name reaches it


def test_a_parts_folder_that_is_a_symlink_is_refused_before_any_work(tiny_bert, tmp_path):
    """``<out>.partial`` made a link to a bigger disk: the job crashed on it with "a file: Cannot call rmtree on a
    symbolic link" (``prepare_partial`` starting the folder afresh), and the end of a job would have left it (rmtree
    with ignore_errors refuses a link). Refused up front, before the model loads, saying to link --out instead."""
    src = _src(tmp_path, "csv", n=3)
    (tmp_path / "big").mkdir()
    (tmp_path / "out.parquet.partial").symlink_to(tmp_path / "big", target_is_directory=True)
    with pytest.raises(FileExistsError, match=r"out\.parquet\.partial' is a symbolic link.*remove the link.*make "
                                              r"out= a link"):
        embed_file(src, tmp_path / "out.parquet", "review", model=tiny_bert, quiet=True)
    assert not (tmp_path / "out.parquet").exists() and list((tmp_path / "big").iterdir()) == []


def test_a_linked_output_inside_the_input_folder_is_written_before_its_first_run_and_never_read(tiny_bert, tmp_path):
    """Two layouts each supported, together: an output inside the input folder (left out of the input) and an
    ``--out`` that is a link to a bigger disk, dangling before the first run. The dangling link was refused as an
    input file "which does not exist (a disk not mounted?)" before the job's own output was left out: the job could
    not start. Its own output is left out first, by where the link points; after the run, it is still not read."""
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"id": ["1", "2"], "review": ["good", "bad"]}), data / "a.parquet")
    (tmp_path / "big").mkdir()
    link = data / "features.parquet"
    os.symlink(os.path.join("..", "big", "features.parquet"), link)
    for again in (False, True):
        manifest = embed_file(data, link, "review", model=tiny_bert, quiet=True, overwrite=again)
        assert manifest["counts"]["rows"] == 2, again
        assert [f[0] for f in manifest["input"]["files"]] == [str(data / "a.parquet")], again
        assert link.is_symlink() and pq.read_table(tmp_path / "big" / "features.parquet").num_rows == 2


@pytest.mark.parametrize("cached", [False, True], ids=["run by the model", "answered by the cache"])
def test_a_jobs_manifest_counts_its_own_model_passes_not_another_threads(tiny_bert, tmp_path, monkeypatch, cached):
    """(found by a concurrency hunt, 2026-11-27) a job counted its forward passes as the process's count after it less
    the count before it: two jobs of one model in two threads of a process (a notebook's background job, a web
    service) each recorded both jobs' passes in timing.forward_pass, and a job the cache answered whole recorded the
    other's passes, and a device, where none of its own ran. Here the other job runs whole while the first is held
    at its first chunk."""
    import threading

    def job(name, texts, **params):
        src = tmp_path / f"{name}-input.parquet"
        pd.DataFrame({"text": texts}).to_parquet(src)
        return lambda out: embed_file(src, tmp_path / out, "text", model=tiny_bert, chunk_rows=8, quiet=True,
                                      batch_tokens=64, **params)

    first = job("first", [f"the cat sat on the mat {i}" for i in range(24)], cache_dir=str(tmp_path / "cache"))
    other = job("other", [f"a dog ran in the park {i}" for i in range(24)])
    alone = first("alone.parquet")  # fills the cache
    assert alone["timing"]["forward_pass"] and alone["timing"]["device"] == "cpu"
    if not cached:
        shutil.rmtree(tmp_path / "cache")

    in_chunk, go = threading.Event(), threading.Event()
    real = ArrowFeaturizer.__call__

    def held(self, *args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            in_chunk.set()
            assert go.wait(60)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", held)
    got = {}
    worker = threading.Thread(target=lambda: got.update(m=first("out.parquet")))
    worker.start()
    try:
        assert in_chunk.wait(60)
        assert other("other.parquet")["timing"]["forward_pass"]  # runs whole meanwhile, on the same model
    finally:
        go.set()
        worker.join(60)
    manifest = got["m"]
    assert manifest["counts"]["cache_hits"] == (24 if cached else 0)
    want = ({}, None) if cached else (alone["timing"]["forward_pass"], "cpu")
    assert (manifest["timing"]["forward_pass"], manifest["timing"]["device"]) == want


def test_a_job_writes_its_output_where_fsync_needs_a_handle_that_may_write(tiny_bert, tmp_path, windows_fsync):
    """Each part and the joined output were flushed through a read-only handle, which Windows refuses ([Errno 9] Bad
    file descriptor): every `bertfeat embed` on Windows failed at its first part."""
    src, out = _src(tmp_path), tmp_path / "o.parquet"
    manifest = embed_file(str(src), str(out), "review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=10)
    assert manifest["counts"]["rows"] == ROWS and pq.read_table(out).num_rows == ROWS
    assert len(windows_fsync) >= 4  # three parts and the joined output, each flushed before its rename


def test_a_job_writes_its_output_where_the_file_system_cannot_flush_a_file(tiny_bert, tmp_path, monkeypatch):
    """An SMB/CIFS mount, a VirtualBox shared folder or a FUSE file system without a flush answers fsync on a file
    with EINVAL (the bytes written went through): every `bertfeat embed` writing there failed at its first part
    saying "a file: Invalid argument." Each part, checkpoint and the joined output are now written unflushed there."""
    src = _src(tmp_path)
    job = dict(input=str(src), text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=10,
               checkpoint_seconds=0)
    embed_file(out=str(tmp_path / "ref.parquet"), **job)
    with monkeypatch.context() as m:
        refused = flushes_refused(m)
        manifest = embed_file(out=str(tmp_path / "o.parquet"), **job)
    assert len(refused) >= 4 + 3  # three parts and the joined output, and the checkpoints of each chunk's batches
    assert manifest["counts"]["rows"] == ROWS
    assert_same_output(tmp_path / "o.parquet", tmp_path / "ref.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "o.parquet", "o.parquet.manifest.json",
                                                         "ref.parquet", "ref.parquet.manifest.json"]


def test_a_flush_that_fails_fails_the_job_naming_the_file_and_the_rerun_resumes(tiny_bert, tmp_path, monkeypatch):
    """A flush that fails for want of space (NFS reports a full disk or quota at the flush, not at the write) or with
    EIO (the bytes did not reach the disk) is no file system that cannot flush: the job stops, naming the file, the
    parts before it kept, and the same command resumes."""
    src = _src(tmp_path)
    out = tmp_path / "o.parquet"
    job = dict(input=str(src), out=str(out), text_cols="review", model=tiny_bert, quiet=True, chunk_rows=10)
    real = os.fsync

    def fsync(fd):
        if ".part-000001.parquet.tmp-" in os.readlink(f"/proc/self/fd/{fd}"):  # the second part's
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
        return real(fd)

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", fsync)
        with pytest.raises(OSError) as err:
            embed_file(**job)
    assert re.fullmatch(rf"'{re.escape(str(out))}\.partial/\.part-000001\.parquet\.tmp-\d+': Disk quota exceeded; "
                        r"the disk quota is exceeded: free some space, then run the same command again to resume\.",
                        str(err.value)), str(err.value)
    assert not out.exists()
    assert sorted(p.name for p in (tmp_path / "o.parquet.partial").iterdir()) == [
        "part-000000.hashes.npy", "part-000000.json", "part-000000.parquet", "state.json"]
    assert embed_file(**job)["this_run"]["chunks_resumed"] == 1


def test_every_file_a_job_renames_into_place_is_flushed_first(tiny_bert, tmp_path, monkeypatch):
    """A file renamed into place before it is flushed may be there, empty or cut short, after a power cut (or a
    crash of the NFS client that cached its bytes): each part's text hashes (``.hashes.npy``) were renamed unflushed,
    beside a part and stats that were flushed."""
    real_fsync, real_replace, flushed, renamed = os.fsync, os.replace, set(), []

    def fsync(fd):
        flushed.add(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def replace(src, dst, *args, **kwargs):
        renamed.append(os.fspath(src))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    embed_file(str(_src(tmp_path)), str(tmp_path / "o.parquet"), "review", model=tiny_bert, quiet=True, chunk_rows=10,
               checkpoint_seconds=0)
    assert any(".hashes.npy" in f for f in renamed) and any(".journal" in f for f in renamed)
    assert [f for f in renamed if f not in flushed] == []


def test_a_part_whose_hashes_file_was_cut_short_is_embedded_again(tiny_bert, tmp_path, monkeypatch):
    """A part's ``.hashes.npy`` left empty (renamed unflushed before a power cut, or copied cut short) counted as a
    finished part, and every rerun then failed as it joined the parts, until the ``.partial`` folder was removed by
    hand. Now such a part is not finished: the rerun embeds it again."""
    src, out = _src(tmp_path), tmp_path / "o.parquet"
    job = dict(input=str(src), text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    embed_file(out=str(tmp_path / "ref.parquet"), **job)
    _stopped_in_chunk(monkeypatch, 3, out=str(out), **job)  # chunks 0, 1 and 2 finished
    OutputPaths(out).part_hashes(1).write_bytes(b"")
    manifest = embed_file(out=str(out), **job)
    assert (manifest["this_run"]["chunks_resumed"], manifest["this_run"]["chunks"]) == (2, 3)
    assert_same_output(out, tmp_path / "ref.parquet")


@pytest.mark.parametrize("changed", [False, True])
def test_a_run_stopped_at_its_manifest_is_finished_only_for_the_rows_it_read(tiny_bert, tmp_path, monkeypatch,
                                                                            changed):
    """A run stopped after its output was in place, before its manifest, is finished by the rerun without reading
    anything: on sshfs and gcsfuse (the change time is the modification time) another file put at the input's path
    with its size and mtime then got the first file's output, with a manifest, as if it were its own, silently. Now
    finished.json holds the digests of the rows each part was made of, and the rerun reads the input to compare them:
    the same rows are finished as before; other rows are refused ("exists"), and with overwrite embedded (only the
    parts of other rows again)."""
    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"
    manifest_path = Path(str(out) + ".manifest.json")
    real_stat = _stat_as_sshfs(monkeypatch, src)
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_before_its_manifest(monkeypatch, str(src), out, **job)
    written = out.read_bytes()
    if changed:
        df = pd.read_csv(src, dtype=str)
        df.loc[7, "review"] = df.loc[7, "review"][::-1]
        st = real_stat(src)
        df.to_csv(tmp_path / "new.csv", index=False)
        os.replace(tmp_path / "new.csv", src)
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert real_stat(src).st_size == st.st_size
        with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
            embed_file(str(src), str(out), **job)
        assert out.read_bytes() == written and not manifest_path.exists()
        manifest = embed_file(str(src), str(out), **job, overwrite=True)
        assert (manifest["this_run"]["chunks_resumed"], manifest["this_run"]["chunks"]) == (4, 1)
    else:
        manifest = embed_file(str(src), str(out), **job)
        assert out.read_bytes() == written
    assert json.loads(manifest_path.read_text()) == manifest
    embed_file(str(src), str(tmp_path / "ref.parquet"), **job)
    assert_same_output(out, tmp_path / "ref.parquet")


def test_a_run_stopped_at_its_manifest_whose_input_now_cannot_be_read_is_refused_as_the_job_refuses(
        tiny_bert, tmp_path, monkeypatch):
    """(found by the file systems and engines hunt, 2026-11-27, session 17) The sibling of the test above where the
    file put at the input's path with its size and mtime (sshfs, gcsfuse) is one the reader refuses (a row of three
    fields, past the first MiB): the rerun, reading it again only to compare its rows with those the stopped run's output was made of,
    failed with the reader's own error, as if this job were reading it to embed it, before the job's own handling
    of an --out it did not write. Now an input that cannot be read so is not the rows that run read: refused as any
    other ("exists; pass overwrite=True"), the output left; with overwrite the job reads it, and says what is wrong
    with it."""
    src, out = tmp_path / "in.csv", tmp_path / "out.parquet"
    # rows of 100 kB: the line made malformed below lies past the first MiB, which the job's reader reads as it opens
    pd.DataFrame({"id": range(12), "review": [f"a cat number {i}" for i in range(12)],
                  "notes": ["x" * 100_000] * 12}).to_csv(src, index=False)
    manifest_path = Path(str(out) + ".manifest.json")
    real_stat = _stat_as_sshfs(monkeypatch, src)
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_before_its_manifest(monkeypatch, str(src), out, **job)
    written = out.read_bytes()
    st = real_stat(src)
    lines = src.read_bytes().split(b"\n")
    assert lines[12].startswith(b"11,a cat")
    lines[12] = lines[12].replace(b"a cat", b"a,cat")  # row 11: a field too many, the same size
    src.write_bytes(b"\n".join(lines))
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert real_stat(src).st_size == st.st_size
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        embed_file(str(src), str(out), **job)
    assert out.read_bytes() == written and not manifest_path.exists()
    with pytest.raises(ValueError, match="is malformed at line 13"):  # the job's own reading of it says what is wrong
        embed_file(str(src), str(out), **job, overwrite=True)


def test_a_part_another_job_wrote_meanwhile_is_never_joined_into_the_output(tiny_bert, tmp_path, monkeypatch):
    """Where the filesystem refuses flock (NoLockWarning) no lock keeps a second job off one out=: a job on another
    input there writes its parts into the same ``.partial`` folder, and each job joined whatever part files it found,
    so its output held the other's rows, silently. Each part now carries the digest of its rows: a job joins only
    parts of the rows it read itself, and stops saying why; the parts are kept, and the rerun, alone, embeds again
    only the part of other rows."""
    src, out = _src(tmp_path), tmp_path / "o.parquet"
    other = tmp_path / "other" / "in.parquet"
    other.parent.mkdir()
    frame(ROWS, seed=5).to_parquet(other)
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    embed_file(str(other), str(tmp_path / "other" / "o.parquet"), **job)
    _stopped_in_chunk(monkeypatch, 4, str(other), str(tmp_path / "other.parquet"), **job)  # its parts 0 to 3
    theirs = OutputPaths(tmp_path / "other.parquet").part(1)
    real, calls = _CALL, []

    def featurize(self, batch, first_row=0):  # the other job writes its part 1 while this one embeds its chunk 3
        calls.append(batch.num_rows)
        if len(calls) == 4:
            shutil.copyfile(theirs, OutputPaths(out).part(1))
        return real(self, batch, first_row)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", featurize)
    with pytest.raises(OSError) as info:
        embed_file(str(src), str(out), **job)
    assert str(info.value) == (
        f"{str(OutputPaths(out).part(1))!r}: another job's part, written while this one ran: its rows are not those "
        "this job read there (where the filesystem refuses flock no lock keeps a second job off one out=); nothing was "
        f"put at out={str(out)!r}. Run one job per out= at a time, then run the same command again: only such parts "
        "are embedded again.")
    assert not out.exists()
    _revive(monkeypatch)
    manifest = embed_file(str(src), str(out), **job)
    embed_file(str(src), str(tmp_path / "ref.parquet"), **job)
    assert_same_output(out, tmp_path / "ref.parquet")
    assert (manifest["this_run"]["chunks_resumed"], manifest["this_run"]["chunks"]) == (4, 1)


@pytest.mark.parametrize("left", ["empty", "cut short", "not stats"])
def test_a_part_whose_stats_file_cannot_be_read_is_embedded_again(tiny_bert, tmp_path, monkeypatch, capsys, left):
    """A part's stats file (``part-N.json``, whose presence marks it finished) left empty or cut short (by an older
    bertfeat's power cut, or a copy) counted as finished, and the rerun failed as it joined the parts with a bare
    "Expecting value: line 1 column 1 (char 0)", and deleted every finished part. Now such a part is not finished:
    the rerun embeds it again, as a part whose hashes cannot be read."""
    src, out = _src(tmp_path), tmp_path / "o.parquet"
    job = dict(input=str(src), text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    embed_file(out=str(tmp_path / "ref.parquet"), **job)
    _stopped_in_chunk(monkeypatch, 3, out=str(out), **job)  # chunks 0, 1 and 2 finished
    stats = OutputPaths(out).part_stats(1)
    stats.write_text({"empty": "", "cut short": stats.read_text()[:30], "not stats": '{"rows": 5}'}[left])
    manifest = embed_file(out=str(out), **job)
    assert (manifest["this_run"]["chunks_resumed"], manifest["this_run"]["chunks"]) == (2, 3)
    assert_same_output(out, tmp_path / "ref.parquet")


@pytest.mark.parametrize("where", ["part", "joined output", "joined output opened"])
def test_a_full_disk_that_names_no_file_is_said_of_the_file_being_written(tiny_bert, tmp_path, monkeypatch, where):
    """pyarrow's error for a full disk names no file ("[Errno 28] Error writing bytes to file. Detail: [errno 28] No
    space left on device"), so the job said it of "a file": which disk is full (the output's, the cache's, another
    the user put the parts on through a link) was left to guess. Now the file being written is named. Opening the
    joined output writes too (parquet's magic bytes), and on a real full tmpfs (less than a page left) fails there,
    where no file was named yet (session 15's review)."""
    src, out = _src(tmp_path), tmp_path / "o.parquet"

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    if where == "part":
        monkeypatch.setattr(pq, "write_table", full)
        named = rf"{re.escape(str(out))}\.partial/\.part-000000\.parquet\.tmp-\d+"
    elif where == "joined output opened":
        real_init = pq.ParquetWriter.__init__
        monkeypatch.setattr(pq.ParquetWriter, "__init__", lambda self, where, *args, **kwargs: (
            full() if os.path.basename(os.fspath(where)).startswith(".o.parquet.tmp-") else
            real_init(self, where, *args, **kwargs)))
        named = rf"{re.escape(str(tmp_path))}/\.o\.parquet\.tmp-\d+"
    else:
        real = pq.ParquetWriter.write_table
        monkeypatch.setattr(pq.ParquetWriter, "write_table", lambda self, *args, **kwargs: (
            full() if os.path.basename(os.fspath(self.where)).startswith(".o.parquet.tmp-") else
            real(self, *args, **kwargs)))
        named = rf"{re.escape(str(tmp_path))}/\.o\.parquet\.tmp-\d+"
    with pytest.raises(OSError) as err:
        embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True, chunk_rows=10)
    assert re.fullmatch(rf"'{named}': Error writing bytes to file\. Detail: \[errno 28\] No space left on device; the "
                        r"disk is full: free some space, then run the same command again to resume\.",
                        str(err.value)), str(err.value)
    assert err.value.errno == errno.ENOSPC and not out.exists()


def out_held_open_on_windows(monkeypatch, out, times=None):
    """Windows, where another program (a notebook, an R session, a viewer) holds ``out`` open: replacing it is refused
    with PermissionError 13 (WinError 5, "Access is denied"), naming both paths as Windows does; each time, or the
    first ``times`` times. Returns the refusals."""
    from bertfeat import locks

    monkeypatch.setattr(locks, "WINDOWS", True)
    monkeypatch.setattr(locks, "HELD_OPEN_SECONDS", 0.2)
    real, refused = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if os.fspath(dst) == str(out) and (times is None or len(refused) < times):
            refused.append(os.fspath(src))
            raise PermissionError(errno.EACCES, "Access is denied", os.fspath(src), None, os.fspath(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return refused


def test_on_windows_an_output_another_program_holds_open_is_named_and_the_rerun_embeds_nothing_again(
        tiny_bert, tmp_path, monkeypatch):
    """Windows cannot replace a file another program holds open: the job failed at its very end with "'.o.parquet.
    tmp-123': Access is denied; write elsewhere, or fix the permissions", naming a temp file that was then gone, and
    advising what would not help. Now it names the output and says to close it there; the parts are kept, so the
    rerun embeds nothing again."""
    src, out = _src(tmp_path), tmp_path / "o.parquet"
    embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True, chunk_rows=10)
    earlier = pq.read_table(out)
    refused = out_held_open_on_windows(monkeypatch, out)
    with pytest.raises(OSError) as info:
        embed_file(str(src), str(out), "review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=10,
                   overwrite=True)
    assert str(info.value) == (
        f"out={str(out)!r} is held open by another program (a notebook, an R session or a viewer reading it), and "
        "Windows cannot replace a file in use (Access is denied); close it there, then run the same command again: "
        "the finished parts are kept, so nothing is embedded again.")
    assert len(refused) > 1  # tried again first: an antivirus scanning the new file holds it for a moment
    assert pq.read_table(out).equals(earlier)  # the earlier output untouched
    monkeypatch.undo()  # closed there
    manifest = embed_file(str(src), str(out), "review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=10,
                          overwrite=True)
    assert manifest["counts"]["rows_resumed"] == ROWS and manifest["this_run"]["embedded"] == 0
    assert pq.read_table(out).column("id").equals(pq.read_table(src).column("id"))


def test_on_windows_an_output_held_open_for_a_moment_is_replaced_when_let_go(tiny_bert, tmp_path, monkeypatch):
    src, out = _src(tmp_path), tmp_path / "o.parquet"
    refused = out_held_open_on_windows(monkeypatch, out, times=2)
    manifest = embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True, chunk_rows=10)
    assert len(refused) == 2 and manifest["counts"]["rows"] == ROWS and pq.read_table(out).num_rows == ROWS


def windows_stat(monkeypatch, path):
    """``Path.stat`` of ``path`` as Windows gives it: ``st_ctime`` is the file's creation time, which a file put at
    its path keeps (Windows' tunnelling gives a file created or renamed where one was just removed the creation time
    of the one removed). Here it never moves."""
    import pathlib

    from bertfeat import readers

    monkeypatch.setattr(readers, "CTIME_IS_CREATION", True, raising=False)  # as on Windows
    real_stat = pathlib.Path.stat

    def stat(self, *args, **kwargs):
        st = real_stat(self, *args, **kwargs)
        if self.name != path.name:
            return st
        return os.stat_result(list(st) + [st.st_atime, st.st_mtime, 1_700_000_000.0],
                              {"st_atime_ns": st.st_atime_ns, "st_mtime_ns": st.st_mtime_ns,
                               "st_ctime_ns": 1_700_000_000_000_000_000})

    monkeypatch.setattr(pathlib.Path, "stat", stat)


def test_on_windows_an_input_renamed_over_by_another_of_the_same_size_and_mtime_is_not_resumed(
        tiny_bert, tmp_path, monkeypatch, capsys):
    """Windows' st_ctime is the creation time, which a file renamed over the input keeps (tunnelling), and it was
    the input's whole identity: a file of the same size and mtime put there (robocopy, a copy renamed over it) was
    taken for the same input, and the rerun mixed the first run's parts with the new file's rows, silently. On
    Windows the file's id (st_ino, NTFS's file index, which it does not make up) is part of it."""
    src, out = tmp_path / "in.csv", tmp_path / "out.parquet"
    header, *lines = frame(ROWS, seed=3).to_csv(index=False).splitlines(keepends=True)
    src.write_text(header + "".join(lines))
    windows_stat(monkeypatch, src)
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_in_chunk(monkeypatch, 3, str(src), str(out), **job)  # chunks 0, 1 and 2 finished
    before = src.stat()
    (tmp_path / "new.csv").write_text(header + "".join(reversed(lines)))  # another input, of the same size
    os.replace(tmp_path / "new.csv", src)
    os.utime(src, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = src.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ctime_ns) == (before.st_size, before.st_mtime_ns,
                                                                     before.st_ctime_ns)
    manifest = embed_file(str(src), str(out), **{**job, "quiet": False}, progress_every=1e9)
    assert ("holds parts of another job (other input: same names, sizes and modification times, but another file "
            "(another file put there: renamed over it, robocopy)); starting over.") in capsys.readouterr().err
    assert manifest["counts"]["rows_resumed"] == 0
    assert pq.read_table(out, columns=["id"]).column("id").to_pylist() == [f"{i:04d}" for i in reversed(range(ROWS))]


def test_on_windows_the_same_input_untouched_still_resumes(tiny_bert, tmp_path, monkeypatch):
    src, out = _src(tmp_path, "csv"), tmp_path / "out.parquet"
    windows_stat(monkeypatch, src)
    job = dict(text_cols="review", model=tiny_bert, quiet=True, chunk_rows=5)
    _stopped_in_chunk(monkeypatch, 3, str(src), str(out), **job)
    src.read_bytes()
    assert embed_file(str(src), str(out), **job)["counts"]["rows_resumed"] == 15


def test_on_windows_a_job_whose_new_files_are_held_for_a_moment_completes(tiny_bert, tmp_path, monkeypatch):
    """An antivirus (Windows Defender) opens each file as it is written, and Windows refuses to rename a file held
    open: every rename of a part, its hashes, a checkpoint, the state and the manifest failed the job ("Access is
    denied") at the first one. Each is tried again for a moment first."""
    from bertfeat import locks

    monkeypatch.setattr(locks, "WINDOWS", True)
    monkeypatch.setattr(locks, "HELD_OPEN_SECONDS", 1.0)
    real, refused = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if refused.count(os.fspath(src)) < 2:
            refused.append(os.fspath(src))
            raise PermissionError(errno.EACCES, "Access is denied", os.fspath(src), None, os.fspath(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    src, out = _src(tmp_path), tmp_path / "o.parquet"
    manifest = embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True, chunk_rows=10,
                          cache_dir=str(tmp_path / "cache"))
    assert manifest["counts"]["rows"] == ROWS and pq.read_table(out).num_rows == ROWS
    # (a small file's temp name ends with an id of 8 hex digits: flush.atomic_write_bytes)
    names = {re.sub(r"\d+", "N", re.sub(r"(\.tmp-\d+)-[0-9a-f]{8}$", r"\1", Path(p).name)) for p in refused}
    assert {".part-N.parquet.tmp-N", ".state.json.tmp-N", ".o.parquet.manifest.json.tmp-N"} <= names, names
    assert any(n.startswith(".tmp-") for n in names), names  # a cache shard's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "in.parquet", "o.parquet", "o.parquet.manifest.json"]


def test_a_run_stopped_at_its_manifest_with_its_cache_in_the_input_folder_is_finished(tiny_bert, tmp_path,
                                                                                    monkeypatch):
    """(found by a review of session 16's file work, 2026-11-27, session 16) The rerun of a run stopped after its
    output was in place, before its manifest, reads the input again to compare its rows (4a3576d) with a reader of
    its own, which left out the job's out= and parts but not its cache_dir (da43c69's own_files): with the cache in
    the input folder, that reader read the cache's shards as input and the rerun failed ("column(s) ... not found"),
    the output left without a manifest at every rerun. It leaves out what the job's reader leaves out now."""
    data = tmp_path / "data"
    data.mkdir()
    frame(ROWS, seed=3).to_parquet(data / "in.parquet")
    out = tmp_path / "out.parquet"
    manifest_path = Path(str(out) + ".manifest.json")
    job = dict(text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, chunk_rows=5,
               cache_dir=str(data / "cache"))
    _stopped_before_its_manifest(monkeypatch, str(data), out, **job)
    assert any((data / "cache").rglob("*.parquet"))  # the cache's shards, beside the input
    written = out.read_bytes()
    manifest = embed_file(str(data), str(out), **job)
    assert json.loads(manifest_path.read_text()) == manifest and manifest["counts"]["rows"] == ROWS
    assert out.read_bytes() == written and not (tmp_path / "out.parquet.partial").exists()
