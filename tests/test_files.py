"""bertfeat.files and bertfeat.resume by value, without a model: progress lines and bar, durations, the summary
line, which parts a rerun reuses and why a folder is started over, a part written whole or not at all, and
embed_file's argument checks."""

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat import files
from bertfeat.encode import EncodeStats
from bertfeat.files import Progress, _duration, _has_progress, _write_chunk, embed_file, print_summary
from bertfeat.output import OutputPaths
from bertfeat.resume import STATE_VERSION, finished_parts, prepare_partial


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(files.time, "perf_counter", c)
    return c


class Terminal(io.StringIO):
    def isatty(self):
        return True


# -- progress ------------------------------------------------------------------------------------------------------

def test_durations_read_as_hours_minutes_seconds():
    assert [_duration(s) for s in (0, 59.9, 60, 61, 3599, 3600, 3661.9, 90061, 3 * 3600 + 59 * 60)] == [
        "0s", "59s", "1m00s", "1m01s", "59m59s", "1h00m", "1h01m", "25h01m", "3h59m"]


def test_progress_log_lines_every_interval_with_the_total_and_eta(clock):
    out = io.StringIO()
    p = Progress(1000, quiet=False, every=10.0, stream=out)
    clock.now += 5
    p.update(100)
    assert out.getvalue() == ""  # within the interval: no line
    clock.now += 5
    p.update(150)
    # 250 rows in 10 s: 25 rows/s, 750 to go: 30 s
    assert out.getvalue() == "bertfeat embed: 250 / 1,000 (25.0%) rows, 25 rows/s, ETA 30s\n"
    clock.now += 9.9
    p.update(10)
    assert out.getvalue().count("\n") == 1  # the interval counts from the last line, not the start
    clock.now += 0.1
    p.update(0)
    assert out.getvalue().splitlines()[-1] == "bertfeat embed: 260 / 1,000 (26.0%) rows, 13 rows/s, ETA 56s"
    p.close()


def test_progress_estimates_a_csv_total_from_the_bytes_read_and_stays_silent_when_quiet(clock):
    out = io.StringIO()
    p = Progress(None, quiet=False, every=0.0, stream=out)
    clock.now += 2
    p.update(500, 0.25)  # a quarter of the file gave 500 rows: about 2,000 in all
    assert out.getvalue() == "bertfeat embed: 500 / 2,000 (25.0%) rows, 250 rows/s, ETA 6s\n"
    clock.now += 2
    p.update(500, 1.0)  # all read: no estimate to make, no total to show
    assert out.getvalue().splitlines()[-1] == "bertfeat embed: 1,000 rows, 250 rows/s"
    clock.now += 2
    p.update(10, None)
    assert out.getvalue().splitlines()[-1] == "bertfeat embed: 1,010 rows, 168 rows/s"
    quiet_out = Terminal()
    q = Progress(10, quiet=True, every=0.0, stream=quiet_out)
    q.update(7, 0.5)
    q.close()
    assert q.done == 7 and q.bar is None and quiet_out.getvalue() == ""


class Flushes(io.StringIO):
    def __init__(self):
        super().__init__()
        self.flushes = []

    def flush(self):
        self.flushes.append(self.getvalue())


def test_progress_lines_come_every_ten_seconds_unless_told(clock):
    out = io.StringIO()
    p = Progress(None, quiet=False, stream=out)
    clock.now += 9.99
    p.update(1)
    assert out.getvalue() == ""
    clock.now += 0.01
    p.update(1)
    assert out.getvalue() == "bertfeat embed: 2 rows, 0.2 rows/s\n"  # a big model on a slow CPU: not "0 rows/s"


@pytest.mark.parametrize("rows, seconds, shown", [(1, 40, "0.025"), (37, 10, "3.7"), (95, 10, "9.5"), (100, 10, "10"),
                                                  (12_345, 10, "1,234")])
def test_a_progress_lines_rate_keeps_two_digits_below_ten_rows_a_second(clock, rows, seconds, shown):
    """(session 14) A run slower than a row a second (a large model, long texts in chunk mode, a slow CPU) was
    reported at "0 rows/s", found by the packaging hunt's 3-text embed; a rate below ten keeps two digits."""
    out = io.StringIO()
    p = Progress(None, quiet=False, stream=out)
    clock.now += seconds
    p.update(rows)
    assert out.getvalue() == f"bertfeat embed: {rows:,} rows, {shown} rows/s\n"


def test_progress_lines_are_flushed_and_a_rate_needs_no_whole_second(clock):
    out = Flushes()
    p = Progress(None, quiet=False, every=0.1, stream=out)
    clock.now += 0.5
    p.update(100)
    assert out.getvalue() == "bertfeat embed: 100 rows, 200 rows/s\n"  # 100 rows in half a second
    assert out.flushes == [out.getvalue()]  # each line reaches a log file or a pipe as it is printed


def test_progress_on_a_terminal_is_a_bar_whose_total_follows_the_estimate(clock):
    term = Terminal()
    p = Progress(None, quiet=False, stream=term)
    assert p.bar is not None and p.bar.total is None
    p.update(100, 0.1)
    assert p.bar.total == 1000 and p.bar.n == 100
    p.update(100, 0.4)
    assert p.bar.total == 500 and p.bar.n == 200
    p.update(50, 1.0)
    assert p.bar.total == 500 and p.bar.n == 250  # read to the end: the last estimate stands
    p.close()
    assert "bertfeat embed" in term.getvalue() and "250" in term.getvalue()
    known = Progress(40, quiet=False, stream=Terminal())
    assert known.bar.total == 40  # known from the start (parquet), before any row
    known.update(10, None)
    assert known.bar.total == 40 and known.bar.n == 10
    known.close()
    # what the bar says: its name, rows counted with k/M, and it follows the terminal's width
    big = Progress(None, quiet=False, stream=Terminal())
    big.update(12_345)
    assert (big.bar.desc, big.bar.unit, big.bar.unit_scale, callable(big.bar.dynamic_ncols)) == (
        "bertfeat embed", "rows", True, True)
    big.close()
    assert "bertfeat embed: " in big.stream.getvalue() and "12.3krows" in big.stream.getvalue()


def test_progress_within_a_chunk_moves_the_count_and_the_chunks_end_does_not_count_it_twice(clock):
    out = io.StringIO()
    p = Progress(100, quiet=False, every=0.0, stream=out)
    clock.now += 1
    p.within(0.414, rows=50)  # the running chunk of 50 rows: its model passes two fifths done
    p.within(0.2, rows=50)  # a second text column's pass starts again from 0: the count never goes back
    p.within(1.0, rows=50)  # its passes all done: left to the chunk's end, which shows it once
    p.update(50)  # the chunk of 50 rows finished
    p.within(0.1, rows=50)
    assert [line.split(" rows,")[0] for line in out.getvalue().splitlines()] == [
        "bertfeat embed: 20 / 100 (20.0%)", "bertfeat embed: 50 / 100 (50.0%)", "bertfeat embed: 55 / 100 (55.0%)"]
    bar = Progress(100, quiet=False, stream=Terminal())
    bar.within(0.6, rows=50)
    assert bar.bar.n == 30
    bar.update(50)
    assert bar.bar.n == 50
    bar.close()
    quiet = Progress(100, quiet=True, every=0.0, stream=out)
    quiet.within(0.5, rows=60)
    assert quiet.running == 0


# -- the summary line ----------------------------------------------------------------------------------------------

def _manifest(**this_run):
    return {"output": "o.parquet", "provenance": {"dims": 384}, "timing": {"seconds": 125.4},
            "counts": {"rows": 12345, "embedded": 2000, "cache_hits": 300, "truncated": 4, "missing": 5},
            "this_run": this_run or None}


def test_the_summary_says_what_this_run_did_and_what_it_resumed():
    out = io.StringIO()
    print_summary(_manifest(), out)
    assert out.getvalue() == ("bertfeat embed: wrote o.parquet (12,345 rows x 384 dims per text column) in 2m05s; "
                              "2,000 texts embedded, 300 from cache, 4 truncated, 5 missing\n")
    out = io.StringIO()
    print_summary(_manifest(rows=1000, embedded=900, cache_hits=100, rows_resumed=11345, chunks_resumed=11,
                            batches_resumed=0), out)
    assert out.getvalue() == ("bertfeat embed: wrote o.parquet (12,345 rows x 384 dims per text column) in 2m05s; "
                              "this run embedded 1,000 rows (900 texts embedded, 100 from cache) and resumed 11,345 "
                              "rows (11 chunks) from an earlier run, 4 truncated, 5 missing\n")
    out = io.StringIO()
    print_summary(_manifest(rows=1000, embedded=900, cache_hits=100, rows_resumed=0, chunks_resumed=0,
                            batches_resumed=1234), out)
    assert out.getvalue() == ("bertfeat embed: wrote o.parquet (12,345 rows x 384 dims per text column) in 2m05s; "
                              "2,000 texts embedded, 300 from cache; 1,234 batches of an unfinished chunk came from "
                              "the killed run's checkpoint, 4 truncated, 5 missing\n")


def test_the_summary_of_a_chunk_job_says_how_many_texts_were_chunked():
    manifest = _manifest()
    manifest["provenance"]["long_text"] = "chunk"
    manifest["counts"].update(truncated=0, chunked=7)
    out = io.StringIO()
    print_summary(manifest, out)
    assert out.getvalue().endswith("2,000 texts embedded, 300 from cache, 7 chunked, 5 missing\n")


# -- resume --------------------------------------------------------------------------------------------------------

def _part(paths: OutputPaths, k: int, *, parquet=True, hashes=True, stats=True, readable=True, stats_readable=True):
    paths.partial.mkdir(parents=True, exist_ok=True)
    if parquet:
        if readable:
            pq.write_table(pa.table({"x": [k]}), paths.part(k))
        else:
            paths.part(k).write_bytes(b"PAR1 torn")
    if hashes:
        np.save(paths.part_hashes(k), np.zeros(1, np.uint64))
    if stats:
        paths.part_stats(k).write_text(json.dumps(EncodeStats(rows=1).to_dict()) if stats_readable else "{}")


def test_a_part_counts_as_finished_only_when_its_stats_hashes_and_readable_parquet_are_all_there(tmp_path):
    paths = OutputPaths(tmp_path / "o.parquet")
    _part(paths, 0)
    _part(paths, 1, hashes=False)
    _part(paths, 2, parquet=False)
    _part(paths, 3, readable=False)
    _part(paths, 4, stats=False)  # the stats file is written last: without it the part is not finished
    _part(paths, 5, stats_readable=False)  # stats the job's counts cannot add up (session 16)
    _part(paths, 12)
    (paths.partial / "part-abcdef.json").write_text("{}")  # not a part
    # (each with the digest of its rows, None for these: written without one, as an older bertfeat wrote a part)
    assert finished_parts(paths) == {0: None, 12: None}
    _part(paths, 123_456)  # six digits: a job of a billion rows in chunks of 10,000
    assert finished_parts(paths) == {0: None, 12: None, 123_456: None}


def test_rows_digest_tells_rows_by_their_values_not_by_how_they_lie_in_memory():
    """A resumed part is reused only where the chunk read at its place has its rows' digest (session 16): the same
    rows must give the same digest however the reader holds them (a slice of a bigger batch, pieces joined, a bitmap
    of no nulls, built anew), or an unchanged input would not resume; any other value, name or type another digest."""
    from bertfeat.resume import rows_digest

    n = 50
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 4, dtype=np.float32)), 4)
    batch = pa.RecordBatch.from_pydict({"id": [f"{i:04d}" for i in range(n)], "review": [f"t {i}" for i in range(n)],
                                        "vec": vectors})
    digest = rows_digest(batch)
    # a chunk is a slice of what the reader read, whose other rows (in the same buffers) may be anything: Arrow's stream
    # format writes the whole data buffer of a text column sliced from its first row, so an id changed in a CSV's row
    # 7 changed the digest of chunk 0 (rows 0-4), and an unchanged part was embedded again
    wider = pa.RecordBatch.from_pydict({c: ([f"other {i}" for i in range(3)] + batch.column(c).to_pylist()
                                            + [f"after {i}" for i in range(3)]) for c in ("id", "review")}
                                       | {"vec": pa.concat_arrays([vectors.slice(0, 3), vectors, vectors.slice(0, 3)])})
    longer = pa.Table.from_batches([batch, wider.slice(0, 3)]).combine_chunks().to_batches()[0]
    joined = pa.Table.from_batches([batch.slice(0, 20), batch.slice(20)]).combine_chunks().to_batches()[0]
    bitmap = pa.RecordBatch.from_arrays(
        [pa.array(batch.column(0).to_pylist() + [None]).slice(0, n), batch.column(1), vectors],
        names=batch.schema.names)
    assert bitmap.column(0).buffers()[0] is not None and bitmap.column(0).null_count == 0
    rebuilt = pa.RecordBatch.from_pylist(batch.to_pylist(), schema=batch.schema)
    for same in (wider.slice(3, n), longer.slice(0, n), joined, bitmap, rebuilt):
        assert rows_digest(same) == digest
    texts = batch.column(1).to_pylist()
    others = [
        batch.set_column(1, "review", pa.array(texts[:-1] + ["t 48"])),  # one value
        batch.set_column(0, "id", pa.array(batch.column(0).to_pylist()[:-1] + [None])),  # a value missing
        batch.rename_columns(["id", "text", "vec"]),  # a name
        batch.set_column(0, "id", batch.column(0).cast(pa.large_string())),  # a type
        batch.slice(1),  # a row fewer
    ]
    assert len({rows_digest(b) for b in others} | {digest}) == len(others) + 1


def test_a_rerun_of_the_same_job_reuses_its_parts_and_another_job_starts_over_saying_why(tmp_path, capsys):
    paths = OutputPaths(tmp_path / "o.parquet")
    state = {"version": STATE_VERSION, "input": {"path": "a.csv"}, "chunk_rows": 10, "chunk_chars": 100}
    assert prepare_partial(paths, state) == {}
    assert json.loads((paths.partial / "state.json").read_text()) == state
    _part(paths, 0)
    _part(paths, 1, stats=False)
    assert prepare_partial(paths, state, quiet=False) == {0: None}
    assert capsys.readouterr().err == ""

    other = {**state, "chunk_rows": 20, "chunk_chars": 50}
    assert prepare_partial(paths, other, quiet=False) == {}
    assert capsys.readouterr().err == (f"bertfeat embed: {paths.partial} holds parts of another job (other chunk_rows, "
                                       "chunk_chars); starting over.\n")
    assert sorted(p.name for p in paths.partial.iterdir()) == ["state.json"]
    assert json.loads((paths.partial / "state.json").read_text()) == other

    (paths.partial / "state.json").write_text("{torn")
    _part(paths, 0)
    assert prepare_partial(paths, other, quiet=False) == {}
    assert "holds parts of another job (no readable state.json); starting over." in capsys.readouterr().err
    assert not paths.part(0).exists()

    (paths.partial / "state.json").write_text(json.dumps({**other, "retired": 1}))  # a key this version has not
    assert prepare_partial(paths, other, quiet=False) == {}
    assert "(another state version)" in capsys.readouterr().err
    (paths.partial / "state.json").unlink()
    assert prepare_partial(paths, other, quiet=True) == {}
    assert capsys.readouterr().err == ""
    assert prepare_partial(paths, state) == {}  # quiet unless asked: the library's callers print their own
    assert capsys.readouterr().err == ""
    # tuples in a state compare as the JSON lists they are saved as
    with_tuple = {**state, "layers": (-1, -2)}
    prepare_partial(paths, with_tuple)
    _part(paths, 0)
    assert prepare_partial(paths, with_tuple) == {0: None}


def test_a_part_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    paths = OutputPaths(tmp_path / "o.parquet")
    paths.partial.mkdir()
    batch = pa.RecordBatch.from_pydict({"x": [1, 2]})  # pa.record_batch takes a dict from pyarrow 16 on
    stats = EncodeStats(rows=2, unique=2, seconds=0.5)
    _write_chunk(paths, 3, batch, np.array([7, 8], np.uint64), stats)
    assert pq.read_table(paths.part(3)).to_pylist() == [{"x": 1}, {"x": 2}]
    assert np.load(paths.part_hashes(3)).tolist() == [7, 8]
    assert EncodeStats(**json.loads(paths.part_stats(3).read_text())) == stats
    assert finished_parts(paths) == {3: None}  # (the job adds the digest of its rows to the batch: _run)
    assert sorted(p.name for p in paths.partial.iterdir()) == [
        "part-000003.hashes.npy", "part-000003.json", "part-000003.parquet"]

    def full_disk(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "atomic_write_bytes", full_disk)  # the last of the three writes fails
    with pytest.raises(OSError):
        _write_chunk(paths, 4, batch, np.array([9], np.uint64), stats)
    assert sorted(p.name for p in paths.partial.iterdir()) == [  # part 4 left nothing, not even a temp file
        "part-000003.hashes.npy", "part-000003.json", "part-000003.parquet"]


def test_a_stopped_job_has_progress_when_a_part_or_a_checkpointed_batch_is_left(tmp_path):
    paths = OutputPaths(tmp_path / "o.parquet")
    paths.partial.mkdir()
    (paths.partial / "state.json").write_text("{}")
    assert not _has_progress(paths)
    paths.part_journal(0).mkdir()
    assert not _has_progress(paths)  # an empty journal holds nothing
    (paths.part_journal(0) / ".b.npz.tmp-123").write_bytes(b"")
    assert not _has_progress(paths)  # nor does a batch a kill caught half-written
    (paths.part_journal(0) / "b.npz").write_bytes(b"")
    assert _has_progress(paths)
    (paths.part_journal(0) / "b.npz").unlink()
    paths.part_stats(2).write_text("{}")
    assert _has_progress(paths)


# -- arguments -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, bad", [("chunk_rows", 0), ("chunk_rows", True), ("chunk_rows", 2.0),
                                       ("chunk_chars", -1), ("chunk_chars", "10")])
def test_chunk_sizes_are_positive_ints(tmp_path, name, bad):
    src = tmp_path / "a.csv"
    src.write_text("text\na\n")
    with pytest.raises(ValueError) as info:
        embed_file(str(src), str(tmp_path / "o.parquet"), "text", **{name: bad})
    assert str(info.value) == f"{name}={bad!r} is not valid: expected a positive int."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


@pytest.mark.parametrize("bad", [-1, float("inf"), float("nan"), True, "5"])
def test_checkpoint_seconds_are_finite_and_not_negative(tmp_path, bad):
    with pytest.raises(ValueError) as info:
        embed_file(str(tmp_path / "a.csv"), str(tmp_path / "o.parquet"), "text", checkpoint_seconds=bad)
    assert str(info.value) == (f"checkpoint_seconds={bad!r} is not valid: expected seconds >= 0 (0 saves after every "
                               "batch).")


def test_the_path_helpers_name_the_files_of_a_job(tmp_path):
    paths = OutputPaths(tmp_path / "o.parquet")
    assert (paths.partial, paths.manifest) == (tmp_path / "o.parquet.partial", tmp_path / "o.parquet.manifest.json")
    assert [p.name for p in (paths.part(7), paths.part_stats(7), paths.part_hashes(7), paths.part_journal(7))] == [
        "part-000007.parquet", "part-000007.json", "part-000007.hashes.npy", "part-000007.journal"]
    assert isinstance(paths.partial, Path)


def test_a_job_leaves_the_warnings_filters_of_the_process_as_they_are(tiny_bert, tmp_path, monkeypatch):
    """embed_file silenced its per-chunk TruncationWarning with warnings.catch_warnings(), which saves the process's
    filters and puts them back when each chunk ends: a filter another thread of a long-lived process (a web service,
    a notebook's background job) set while a chunk ran was undone, and that thread's own truncation warnings were
    ignored meanwhile. Now the job asks its embedder not to warn and touches no filter."""
    import threading
    import warnings

    import pandas as pd

    from bertfeat.arrow import ArrowFeaturizer
    from bertfeat.exceptions import TruncationWarning

    src = tmp_path / "in.parquet"
    pd.DataFrame({"review": ["the cat sat on the mat " * 20, "a dog"] * 3}).to_parquet(src)
    in_chunk, go = threading.Event(), threading.Event()
    real = ArrowFeaturizer.__call__

    def held(self, *args, **kwargs):
        in_chunk.set()
        assert go.wait(30)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ArrowFeaturizer, "__call__", held)
    out = {}
    job = threading.Thread(target=lambda: out.update(m=embed_file(
        src, tmp_path / "out.parquet", "review", model=tiny_bert, max_length=8, chunk_rows=100, quiet=True)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        job.start()
        try:
            assert in_chunk.wait(60)
            warnings.filterwarnings("error", message="set by another thread")  # while the chunk runs
            warnings.warn("another thread's truncation", TruncationWarning)
        finally:
            go.set()
            job.join(60)
        assert out["m"]["counts"]["truncated"] == 3
        ours = [str(w.message) for w in caught if w.category is TruncationWarning]
        kept = [f for f in warnings.filters if f[1] is not None and f[1].pattern == "set by another thread"]
    assert (ours, len(kept)) == (["another thread's truncation"], 1)
