"""``bertfeat embed`` against hostile files, failing disks, signals and a second job: one line, exit 2, nothing
left behind; resume byte-identical, whatever the chunking."""

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from bertfeat.cli import main
from tests.conftest import assert_same_output

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the cat sat on mat a dog ran in park statistics meets text glmnet loves numeric features frozen".split()


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    import numpy as np

    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(1, 12))) for _ in range(n)]
    return pd.DataFrame({"id": [f"{i:04d}" for i in range(n)], "review": texts})


def run_cli(*args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("BERTFEAT_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "bertfeat", *map(str, args)], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _write(folder: Path, setup: str) -> str:
    """Make the input of one error case in ``folder``; returns its path."""
    df = frame(6)
    if setup == "unclosed":
        (folder / "in.csv").write_text('id,review\n1,"fine"\n2,"unclosed quote\n3,x,y,z\n')
    elif setup == "joined":  # two files joined with cat
        (folder / "in.csv").write_text("id,review\n1,a cat\n2,a dog\nid,review\n3,a mat\n")
    elif setup == "dup":
        (folder / "in.csv").write_text("id,review,review\n1,a,b\n")
    elif setup == "types":
        (folder / "in").mkdir()
        pd.DataFrame({"id": [1], "review": ["a"]}).to_parquet(folder / "in" / "a.parquet")
        pd.DataFrame({"id": ["007"], "review": ["b"]}).to_parquet(folder / "in" / "b.parquet")
        return str(folder / "in")
    elif setup == "empty":
        (folder / "in.csv").write_text("id,review\n")
    elif setup == "late-missing":  # the missing text comes after some chunks were written
        (folder / "in.csv").write_text("id,review\n" + "".join(f"{i},text {i}\n" for i in range(9)) + "9,\n")
    elif setup == "parquet":
        df.to_parquet(folder / "in.parquet")
        return str(folder / "in.parquet")
    elif setup == "bad-utf8":
        (folder / "in.csv").write_bytes(b"id,review\n1,caf\xe9\n")
    else:
        df.to_csv(folder / "in.csv", index=False)
    return str(folder / "in.csv")


# (setup, extra arguments, expected message, what --out is before the run)
ERROR_CASES = [
    ("csv", ["--text-col", "body"], r"column\(s\) 'body' not found", None),
    ("unclosed", ["--text-col", "review", "--chunk-rows", "1"], r"quote opened at line 3 is never closed", None),
    ("dup", ["--text-col", "review"], r"two columns named 'review'", None),
    ("joined", ["--text-col", "review", "--id-col", "id", "--chunk-rows", "1"], r"repeats its header at line 4 ",
     None),
    ("types", ["--text-col", "review", "--id-col", "id"], r"column 'id' is (large_)?string in .*b\.parquet", None),
    ("empty", ["--text-col", "review"], r"has no rows to embed", None),
    ("late-missing", ["--text-col", "review", "--chunk-rows", "3"], r"missing", None),
    ("bad-utf8", ["--text-col", "review"], r"UTF-8", None),
    ("parquet", ["--text-col", "review", "--delimiter", ";"], r"--delimiter applies to CSV input only", None),
    ("csv", ["--text-col", "review", "--delimiter", "ab"],
     r"--delimiter ab is not valid: expected one ASCII character other than a quote or a line break \(',' or ';', or "
     r"--delimiter tab for a tab\)", None),
    ("csv", ["--text-col", "review", "--chunk-chars", "9", "--engine", "ray"], r"--chunk-chars applies to the local",
     None),
    ("csv", ["--text-col", "review", "--checkpoint-every", "5", "--engine", "spark"],
     r"--checkpoint-every applies to the local", None),
    ("csv", ["--text-col", "review", "--checkpoint-every", "-1"], r"--checkpoint-every: expected a number >= 0", None),
    ("csv", ["--text-col", "review", "--overwrite"], r"is a folder and the output is one parquet file", "dir"),
    ("csv", ["--text-col", "review"], r"exists; pass --overwrite", "file"),
    ("csv", ["--text-col", "review", "--out-in-missing-folder"], r"does not exist; create it first", None),
]


@pytest.mark.parametrize("setup, args, message, existing", ERROR_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ERROR_CASES)])
def test_every_embed_error_is_one_line_exit_2_and_leaves_nothing(tiny_bert, tmp_path, setup, args, message,
                                                                   existing):
    import re

    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    source = _write(tmp_path / "src", setup)
    out = tmp_path / "dst" / "f.parquet"
    if "--out-in-missing-folder" in args:
        args = [a for a in args if a != "--out-in-missing-folder"]
        out = tmp_path / "dst" / "nope" / "f.parquet"
    if existing == "dir":
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    elif existing == "file":
        out.write_bytes(b"precious")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = run_cli("embed", source, "--out", out, "--model", tiny_bert, "--quiet", *args)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    assert re.search(message, err), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert after == before, "a failed run must leave nothing at --out or beside it"
    if existing == "file":
        assert out.read_bytes() == b"precious"


@pytest.mark.parametrize("name, content", [("empty.csv", b"id,review\n"), ("blank.csv", b"id,review\r\n\r\n\n"),
                                           ("sep.csv", b"sep=;\nid;review\n"), ("empty.parquet", None)])
def test_an_input_without_rows_is_refused_before_the_model_is_resolved(tmp_path, capsys, monkeypatch, name, content):
    """(found by a hunt, session 11) A header-only CSV or an empty parquet was refused "has no rows to embed" only
    after the model was resolved: torch's import (seconds) and, for a hub model not yet cached, its download."""
    import bertfeat.models

    def resolved(*args, **kwargs):
        raise AssertionError("the model was resolved for an input without rows")

    monkeypatch.setattr(bertfeat.models, "resolve_model", resolved)
    src = tmp_path / name
    if content is None:
        pd.DataFrame({"id": pd.Series([], dtype="int64"), "review": pd.Series([], dtype=object)}).to_parquet(src)
    else:
        src.write_bytes(content)
    assert main(["embed", str(src), "--text-col", "review", "--model", "someone/some-model",
                 "--out", str(tmp_path / "f.parquet")]) == 2
    assert capsys.readouterr().err == f"bertfeat embed: error: input {str(src)!r} has no rows to embed.\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_a_second_job_on_the_same_output_is_refused_while_the_first_holds_the_lock(tiny_bert, tmp_path, capsys):
    from bertfeat.output import OutputPaths, job_lock

    src = tmp_path / "in.csv"
    frame(8).to_csv(src, index=False)
    out = tmp_path / "f.parquet"
    with job_lock(OutputPaths(out)):  # the first job, holding the lock for as long as the test needs
        code = main(["embed", str(src), "--text-col", "review", "--out", str(out), "--model", tiny_bert, "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and f"pid {os.getpid()}" in err and ".f.parquet.lock" in err, err
        assert "wait for it to finish" in err and len(err.strip().splitlines()) == 1
        assert not out.exists() and not (tmp_path / "f.parquet.partial").exists()
    assert main(["embed", str(src), "--text-col", "review", "--out", str(out), "--model", tiny_bert, "--quiet"]) == 0
    assert pq.read_table(out).num_rows == 8
    assert not (tmp_path / ".f.parquet.lock").exists()


def disk_full_at_the_second_part(real, leave: bytes | None = None):
    """``pq.write_table`` that fails with a full disk at its second call (leaving ``leave`` where it wrote)."""
    calls = []

    def write_table(table, where, **kw):
        calls.append(where)
        if len(calls) == 2:
            if leave is not None:
                Path(where).write_bytes(leave)  # what a write cut short leaves
            raise OSError(errno.ENOSPC, "No space left on device", str(where))
        return real(table, where, **kw)

    return write_table


def test_a_full_disk_is_one_line_and_leaves_no_temp_file(tiny_bert, tmp_path, capsys, monkeypatch):
    src = tmp_path / "in.csv"
    frame(12).to_csv(src, index=False)
    out = tmp_path / "f.parquet"
    real = pq.write_table
    monkeypatch.setattr(pq, "write_table", disk_full_at_the_second_part(real, leave=b"half a part"))
    args = ["embed", str(src), "--text-col", "review", "--out", str(out), "--model", tiny_bert, "--quiet",
            "--chunk-rows", "4"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "disk is full" in err and "resume" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    # the finished part is kept for the resume the message promises; the half-written one is gone
    partial = tmp_path / "f.parquet.partial"
    assert sorted(p.name for p in partial.iterdir() if p.name.startswith(("part", "."))) == [
        "part-000000.hashes.npy", "part-000000.json", "part-000000.parquet"]

    monkeypatch.setattr(pq, "write_table", real)
    assert main(args) == 0
    assert pq.read_table(out).num_rows == 12
    assert "rows_resumed" in json.loads((tmp_path / "f.parquet.manifest.json").read_text())["counts"]


def test_a_failed_final_write_leaves_no_temp_file(tiny_bert, tmp_path, capsys, monkeypatch):
    import bertfeat.files

    src = tmp_path / "in.csv"
    frame(5).to_csv(src, index=False)
    out = tmp_path / "f.parquet"

    def full(path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(bertfeat.files, "file_to_disk", full)
    assert main(["embed", str(src), "--text-col", "review", "--out", str(out), "--model", tiny_bert, "--quiet"]) == 2
    assert "disk is full" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".f.parquet.tmp-*"))


def test_a_read_only_output_folder_is_refused_before_any_work(tiny_bert, tmp_path, capsys, monkeypatch):
    src = tmp_path / "in.csv"
    frame(5).to_csv(src, index=False)
    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == ro else real_access(p, mode, **kw))
    assert main(["embed", str(src), "--text-col", "review", "--out", str(ro / "f.parquet"), "--model", tiny_bert]) == 2
    err = capsys.readouterr().err
    assert "not writable (read-only filesystem or no permission)" in err and len(err.strip().splitlines()) == 1
    assert list(ro.iterdir()) == []


def test_sigterm_is_handled_like_ctrl_c_and_the_resumed_summary_says_what_this_run_did(tiny_bert, tmp_path):
    src = tmp_path / "in.parquet"
    frame(1200, seed=3).to_parquet(src)
    # --chunk-chars, not --chunk-rows, cuts these chunks: the character bound must resume byte-identically too
    args = [src, "--text-col", "review", "--id-col", "id", "--model", tiny_bert, "--chunk-chars", "1200",
            "--batch-tokens", "256"]
    reference = tmp_path / "ref.parquet"
    ref = run_cli("embed", *args, "--out", reference, "--quiet")
    assert ref.wait(timeout=600) == 0, ref.stderr.read()
    assert pq.ParquetFile(reference).metadata.num_row_groups > 20

    out = tmp_path / "f.parquet"
    proc = run_cli("embed", *args, "--out", out, "--quiet")
    partial = tmp_path / "f.parquet.partial"
    deadline = time.time() + 300
    while not (partial / "part-000002.json").exists():
        assert proc.poll() is None, "the run finished before it could be stopped"
        assert time.time() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143
    assert err.strip() == "bertfeat embed: terminated (SIGTERM); run the same command again to resume"
    assert not out.exists() and not list(tmp_path.glob(".*tmp-*")) and not list(partial.glob(".*tmp-*"))
    finished = len(list(partial.glob("part-*.json")))
    assert finished >= 3

    again = run_cli("embed", *args, "--out", out)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert_same_output(out, reference)
    manifest = json.loads((tmp_path / "f.parquet.manifest.json").read_text())
    run = manifest["this_run"]
    assert run["chunks_resumed"] == finished and run["rows"] + run["rows_resumed"] == 1200
    assert run["chunks"] + finished == manifest["counts"]["chunks"]
    assert f"this run embedded {run['rows']:,} rows" in err and f"resumed {run['rows_resumed']:,} rows" in err


def _stopped_mid_job(proc, partial: Path, parts: int = 1) -> None:
    """Wait until ``proc`` (an embed) has finished ``parts`` parts in ``partial`` and is still running."""
    deadline = time.time() + 300
    while not (partial / f"part-{parts - 1:06d}.json").exists():
        assert proc.poll() is None, "the run finished before it could be stopped"
        assert time.time() < deadline
        time.sleep(0.01)


def test_sighup_stops_like_sigterm_keeping_the_work_and_nohup_runs_on(tiny_bert, tmp_path):
    """A closed terminal or a dropped ssh connection sends SIGHUP, whose default ends the process at once: the
    batches since the last checkpoint lost. Now it stops as SIGTERM does, one line, exit 129 (128 + SIGHUP), the
    finished parts kept for the rerun; under ``nohup`` (SIGHUP ignored) the job runs on to its end."""
    src = tmp_path / "in.parquet"
    frame(600, seed=4).to_parquet(src)
    args = [src, "--text-col", "review", "--id-col", "id", "--model", tiny_bert, "--chunk-rows", "20",
            "--batch-tokens", "256", "--quiet"]
    out = tmp_path / "f.parquet"
    proc = run_cli("embed", *args, "--out", out)
    partial = tmp_path / "f.parquet.partial"
    _stopped_mid_job(proc, partial, parts=2)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (129, "bertfeat embed: hung up (SIGHUP); run the same command again to resume\n")
    assert not out.exists() and not list(tmp_path.glob(".*tmp-*"))
    finished = len(list(partial.glob("part-*.json")))
    assert finished >= 2
    again = run_cli("embed", *args, "--out", out)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert json.loads((tmp_path / "f.parquet.manifest.json").read_text())["this_run"]["chunks_resumed"] == finished

    nohup = tmp_path / "nohup.parquet"
    proc = run_cli("embed", *args, "--out", nohup, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    _stopped_mid_job(proc, tmp_path / "nohup.parquet.partial")
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=600)
    assert (proc.returncode, err) == (0, "")
    assert_same_output(nohup, out)


class _Killed(KeyboardInterrupt):
    pass


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_resume_with_other_chunking_starts_over_and_rows_line_up(tiny_bert, tmp_path, kind, monkeypatch, capsys):
    """Parts written under one --chunk-rows must never be reused at another's row offsets."""
    from bertfeat.arrow import ArrowFeaturizer
    from bertfeat.files import embed_file

    df = frame(40, seed=5)
    src = tmp_path / f"in.{kind}"
    df.to_csv(src, index=False) if kind == "csv" else df.to_parquet(src)
    reference = tmp_path / "ref.parquet"
    embed_file(str(src), str(reference), "review", keep_cols="id", chunk_rows=7, model=tiny_bert, quiet=True)

    real = ArrowFeaturizer.__call__
    calls = []

    def dies_on_the_third_chunk(self, batch, first_row=0):
        calls.append(batch.num_rows)
        if len(calls) == 3:
            raise _Killed()
        return real(self, batch, first_row)

    out = tmp_path / "f.parquet"
    monkeypatch.setattr(ArrowFeaturizer, "__call__", dies_on_the_third_chunk)
    with pytest.raises(_Killed):
        embed_file(str(src), str(out), "review", keep_cols="id", chunk_rows=10, model=tiny_bert, quiet=True)
    assert len(list((tmp_path / "f.parquet.partial").glob("part-*.json"))) == 2
    monkeypatch.setattr(ArrowFeaturizer, "__call__", real)

    manifest = embed_file(str(src), str(out), "review", keep_cols="id", chunk_rows=7, model=tiny_bert)
    err = capsys.readouterr().err
    assert "holds parts of another job (other chunk_rows); starting over" in err
    assert manifest["counts"]["rows_resumed"] == 0
    assert pq.read_table(out).column("id").to_pylist() == df["id"].tolist()
    assert_same_output(out, reference)


def test_cache_clear_on_a_read_only_filesystem_is_one_line(tiny_bert, tmp_path, capsys, monkeypatch):
    from bertfeat import BertEmbedder

    BertEmbedder(tiny_bert, cache_dir=tmp_path / "cache").fit_transform(["a cached text"])
    def read_only(real):
        def call(path, *a, **kw):
            if str(tmp_path / "cache") in str(path):
                raise OSError(errno.EROFS, "Read-only file system", str(path))
            return real(path, *a, **kw)
        return call

    for name in ("unlink", "replace"):  # a read-only filesystem renames nothing either
        monkeypatch.setattr(os, name, read_only(getattr(os, name)))
    assert main(["cache", "clear", str(tmp_path / "cache"), "--yes"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bertfeat cache: error: cannot clear the cache in {tmp_path / 'cache'}: Read-only file "
                          "system ("), err
    assert err.rstrip().endswith("; the cache can still be read (lookups, cache info), but compacting or clearing it "
                                 "needs write access to its directory."), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_output_inside_the_input_folder_resumes_and_reruns(tiny_bert, tmp_path, capsys, monkeypatch):
    """--out inside the input folder: the job's own parts and its finished output are not read as input, so a
    stopped job resumes and a finished one can be run again with --overwrite (both were refused with "columns
    unlike", forever)."""
    folder = tmp_path / "data"
    folder.mkdir()
    frame(12, seed=5).to_parquet(folder / "a.parquet")
    out = folder / "f.parquet"
    real = pq.write_table
    monkeypatch.setattr(pq, "write_table", disk_full_at_the_second_part(real))
    args = ["embed", str(folder), "--text-col", "review", "--id-col", "id", "--out", str(out), "--model", tiny_bert,
            "--quiet", "--chunk-rows", "4"]
    assert main(args) == 2
    assert "disk is full" in capsys.readouterr().err
    monkeypatch.setattr(pq, "write_table", real)
    assert main(args) == 0, capsys.readouterr().err
    manifest = json.loads((folder / "f.parquet.manifest.json").read_text())
    assert manifest["counts"]["rows_resumed"] == 4
    first = pq.read_table(out)
    assert first.column("id").to_pylist() == frame(12, seed=5)["id"].tolist()
    assert main(args + ["--overwrite"]) == 0, capsys.readouterr().err
    assert pq.read_table(out).equals(first)


def test_an_empty_id_column_name_is_kept_like_any_other(tiny_bert, tmp_path):
    """pandas' to_csv() writes the index under an empty name: --id-col '' copied nothing, silently."""
    src = tmp_path / "idx.csv"
    src.write_text(",text\n0,hello\n1,cat\n")
    out = tmp_path / "f.parquet"
    assert main(["embed", str(src), "--text-col", "text", "--id-col", "", "--out", str(out), "--model", tiny_bert,
                 "--quiet"]) == 0
    table = pq.read_table(out)
    assert table.column_names[0] == "" and table.column("").to_pylist() == ["0", "1"]


def test_a_killed_runs_temp_files_beside_the_output_are_removed_by_the_next(tiny_bert, tmp_path):
    """A run killed while joining its parts leaves ``.<out>.tmp-<pid>``, as big as the output; nothing removed it."""
    from bertfeat.files import embed_file

    src = tmp_path / "in.csv"
    frame(6).to_csv(src, index=False)
    out = tmp_path / "f.parquet"
    for name in (".f.parquet.tmp-999999", ".f.parquet.manifest.json.tmp-999998"):
        (tmp_path / name).write_bytes(b"what a killed run left")
    keep = tmp_path / ".g.parquet.tmp-999997"  # another output's: not this job's to remove
    keep.write_bytes(b"not ours")
    embed_file(str(src), str(out), "review", model=tiny_bert, quiet=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".g.parquet.tmp-999997", "f.parquet",
                                                          "f.parquet.manifest.json", "in.csv"]


@pytest.mark.parametrize("earlier_output", [False, True])
@pytest.mark.parametrize("stopped_at", ["manifest", "rename"])
def test_a_run_stopped_after_its_output_was_in_place_is_finished_by_the_same_command(tiny_bert, tmp_path,
                                                                                       monkeypatch, earlier_output,
                                                                                       stopped_at):
    """Killed between putting the output in place and writing its manifest: the same command was refused ("exists;
    pass --overwrite"), and over an earlier output the earlier recipe's manifest stayed beside the new features."""
    import bertfeat.files
    from bertfeat.files import embed_file

    src = tmp_path / "in.csv"
    frame(9).to_csv(src, index=False)
    out = tmp_path / "f.parquet"
    manifest_path = tmp_path / "f.parquet.manifest.json"
    args = dict(model=tiny_bert, quiet=True, chunk_rows=4, keep_cols="id")
    if earlier_output:
        embed_file(str(src), str(out), "review", pooling="cls", **args)
    real_write, real_replace = bertfeat.files.atomic_write_bytes, os.replace

    def killed_at_the_manifest(path, data):
        if Path(path) == manifest_path:
            raise KeyboardInterrupt  # stands in for SIGKILL: the manifest is never written
        return real_write(path, data)

    def killed_at_the_rename(src_path, dst_path):
        if Path(dst_path) == out:
            raise KeyboardInterrupt  # the whole output joined under its temp name, never renamed
        return real_replace(src_path, dst_path)

    if stopped_at == "manifest":
        monkeypatch.setattr(bertfeat.files, "atomic_write_bytes", killed_at_the_manifest)
    else:
        monkeypatch.setattr(os, "replace", killed_at_the_rename)
    with pytest.raises(KeyboardInterrupt):
        embed_file(str(src), str(out), "review", pooling="mean", overwrite=earlier_output, **args)
    assert not manifest_path.exists()  # never a manifest describing other features than the file beside it
    monkeypatch.setattr(bertfeat.files, "atomic_write_bytes", real_write)
    monkeypatch.setattr(os, "replace", real_replace)
    if stopped_at == "rename" and not earlier_output:
        assert not out.exists()
    written = out.read_bytes() if stopped_at == "manifest" else None
    manifest = embed_file(str(src), str(out), "review", pooling="mean", overwrite=earlier_output, **args)
    assert json.loads(manifest_path.read_text()) == manifest and manifest["provenance"]["pooling"] == ["mean"]
    assert pq.read_schema(out).names[1].startswith("review_mean")  # the features of this job, not an earlier one's
    assert not (tmp_path / "f.parquet.partial").exists() and manifest["counts"]["rows"] == 9
    if written is not None:
        assert out.read_bytes() == written  # finished, not embedded again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.parquet", "f.parquet.manifest.json", "in.csv"]


@pytest.mark.parametrize("engine", ["local", "ray", "spark"])
def test_a_dash_for_standard_input_or_output_is_refused_saying_to_name_a_file(tiny_bert, tmp_path, capsys,
                                                                               monkeypatch, engine):
    # `-` (the Unix name of stdin/stdout) was read as a file name: "input '-' does not exist", and `--out -` wrote a
    # file named "-" (with "-.manifest.json") in the working folder, where the user looked for the output on stdout
    monkeypatch.chdir(tmp_path)
    frame(3).to_parquet("in.parquet")
    common = ["--text-col", "review", "--model", tiny_bert, "--quiet"]
    if engine != "local":
        common += ["--engine", engine]
    assert main(["embed", "-", "--out", "f.parquet", *common]) == 2
    err = capsys.readouterr().err
    assert "input '-' (standard input) cannot be read" in err and "write the data to a file" in err, err
    assert main(["embed", "in.parquet", "--out", "-", *common]) == 2
    err = capsys.readouterr().err
    assert "out '-' (standard output) cannot be written" in err and "name the file" in err, err
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]


def test_a_url_for_the_input_or_the_output_is_refused_not_made_a_local_folder(tiny_bert, tmp_path, capsys,
                                                                             monkeypatch):
    # `--out s3://bucket/f.parquet` was written to ./s3:/bucket/f.parquet of the working folder, and the job said it
    # wrote it there as if that were the bucket; an input URL was said not to exist, as if the object were missing
    from bertfeat.sources import FOLDER_OUTPUT, output_path

    monkeypatch.chdir(tmp_path)
    frame(3).to_parquet("in.parquet")
    common = ["--text-col", "review", "--model", tiny_bert, "--quiet"]
    mounted = ("with ordinary file calls; pass the path of the store mounted as a filesystem (s3fs, gcsfuse, "
               "blobfuse; /dbfs/... on Databricks), or a local copy; from Python, bertfeat.ray.embed_dataset reads "
               "and writes object stores through Ray Data.")
    assert main(["embed", "in.parquet", "--out", "s3://bucket/f.parquet", *common]) == 2
    assert capsys.readouterr().err == ("bertfeat embed: error: --out 's3://bucket/f.parquet' is a URL, but bertfeat "
                                       f"writes parquet, one file with its manifest beside it, {mounted}\n")
    assert main(["embed", "gs://bucket/in.parquet", "--out", "f.parquet", *common]) == 2
    assert capsys.readouterr().err == ("bertfeat embed: error: input 'gs://bucket/in.parquet' is a URL, but bertfeat "
                                       f"reads files {mounted}\n")
    with pytest.raises(ValueError, match="^out 'dbfs:/Volumes/x' is a URL, but bertfeat writes parquet, a folder"):
        output_path("dbfs:/Volumes/x", "out", "a path", FOLDER_OUTPUT)  # the Ray and Spark engines' check
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]


def test_a_file_named_dash_is_read_and_written_as_dot_slash_dash(tiny_bert, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    frame(3).to_csv("-", index=False)
    assert main(["embed", "-", "--out", "f.parquet", "--text-col", "review", "--model", tiny_bert, "--quiet"]) == 2
    assert "(standard input)" in capsys.readouterr().err  # `-` means stdin, whatever lies in the folder
    # a CSV by its suffix only: a file named "-" holds no kind
    os.rename("-", "in.csv")
    assert main(["embed", "in.csv", "--out", "./-", "--text-col", "review", "--model", tiny_bert, "--quiet"]) == 0
    assert pq.read_table("-").num_rows == 3


@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_the_probe_refuses_a_dash_for_its_input_and_output_files(tmp_path, capsys, monkeypatch, option):
    monkeypatch.chdir(tmp_path)
    frame(4).assign(y=[0, 1, 0, 1]).to_csv("in.csv", index=False)
    assert main(["probe", "-", "--text-col", "review", "--label-col", "y"]) == 2
    assert "input '-' (standard input) cannot be read" in capsys.readouterr().err
    assert main(["probe", "in.csv", "--text-col", "review", "--label-col", "y", option, "-"]) == 2
    err = capsys.readouterr().err
    assert "'-' (standard output) cannot be written" in err and "name the file" in err, err
    assert sorted(os.listdir(tmp_path)) == ["in.csv"]


@pytest.mark.parametrize("engine", ["local", "ray", "spark"])
@pytest.mark.parametrize("out", ["features.csv", "features.TSV", "features.csv.gz"])
def test_the_python_api_refuses_an_output_named_as_a_csv_file_as_the_command_line_does(tiny_bert, tmp_path, engine,
                                                                                     out):
    # the refusal lived in the command line only: embed_file(out="features.csv") wrote parquet bytes under the .csv
    # name (read_csv of it fails or reads garbage), and ray's and spark's a folder of parquet under it
    from bertfeat.files import embed_file
    from bertfeat.ray import embed_parquet
    from bertfeat.spark import embed_files

    frame(3).to_parquet(tmp_path / "in.parquet")
    job = {"local": embed_file, "ray": embed_parquet, "spark": embed_files}[engine]
    with pytest.raises(ValueError) as info:
        job(tmp_path / "in.parquet", tmp_path / out, "review", quiet=True, model=tiny_bert)
    stem = out[:out.lower().index(".csv") if ".csv" in out.lower() else out.lower().index(".tsv")]
    assert str(info.value).startswith(f"out {str(tmp_path / out)!r} is named as a CSV file, but bertfeat writes ")
    assert f"name it {str(tmp_path / stem)}.parquet and read it with pandas.read_parquet" in str(info.value)
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]


@pytest.mark.parametrize("engine", ["local", "ray", "spark"])
@pytest.mark.parametrize("out, what", [("features.feather", "an Arrow IPC (Feather) file"),
                                       ("features.arrow", "an Arrow IPC (Feather) file"),
                                       ("features.JSON", "a JSON file"), ("features.jsonl", "a JSON Lines file"),
                                       ("features.orc", "an ORC file"), ("features.xlsx", "an Excel workbook"),
                                       ("features.rds", "an R data file"), ("features.RData", "an R data file"),
                                       ("features.npy", "a NumPy array file"), ("features.pkl", "a Python pickle"),
                                       ("features.pt", "a PyTorch file"), ("features.h5", "an HDF5 file"),
                                       ("features.json.gz", "a JSON file"),
                                       ("features.jsonl.zst", "a JSON Lines file")])
def test_an_output_named_as_another_data_format_is_refused_as_a_csv_name_is(tiny_bert, tmp_path, engine, out, what,
                                                                            capsys):
    """``--out features.feather`` (or .arrow, .json, .orc, .xlsx) wrote parquet bytes under that name, silently:
    ``pandas.read_feather`` and R's ``arrow::read_feather`` of it fail ("Not an Arrow file"), a JSON reader reads
    garbage. Refused before any work, as a name with a CSV suffix is, saying the name to give. So are the names of
    the formats embeddings are kept in otherwise (R's ``readRDS`` said 'unknown input format' of ``features.rds``;
    ``numpy.load``, ``pickle``, ``torch.load``, ``h5py``) and a compressed JSON's (``.json.gz``)."""
    frame(3).to_parquet(tmp_path / "in.parquet")
    stem = str(tmp_path / out.split(".", 1)[0])
    said = (f"{str(tmp_path / out)!r} is named as {what}, but bertfeat writes parquet, "
            f"{'one file' if engine == 'local' else 'a folder of files'} with its manifest beside it; name it "
            f"{stem}.parquet and read it with pandas.read_parquet, polars.read_parquet or R's arrow::read_parquet.")
    assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--out", str(tmp_path / out),
                 "--model", tiny_bert, "--engine", engine]) == 2
    assert capsys.readouterr().err == f"bertfeat embed: error: --out {said}\n"
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]


@pytest.mark.parametrize("engine", ["local", "ray", "spark"])
def test_an_output_that_is_a_device_or_a_pipe_is_refused_not_replaced(tiny_bert, tmp_path, engine, capsys):
    """``--out /dev/null`` (a dry run, a benchmark) was "exists; pass --overwrite", and with --overwrite, run as root
    (a container, CI), the parquet file was renamed over the device: /dev/null became a regular file for every
    program of the machine. A named pipe (or /dev/stdout into a pipe) was replaced so too. Refused before any work,
    whatever overwrite says; a link to one alike. (The test uses a pipe, and a device of its own where it runs as
    root, never /dev/null: a regression must not break the machine.)"""
    frame(3).to_parquet(tmp_path / "in.parquet")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link").symlink_to(tmp_path / "pipe")
    cases = [("pipe", "a named pipe"), ("link", "a named pipe")]
    if os.geteuid() == 0:
        os.mknod(tmp_path / "null", 0o666 | __import__("stat").S_IFCHR, os.makedev(1, 3))
        cases.append(("null", "a character device"))
    for name, what in cases:
        out = str(tmp_path / name)
        assert main(["embed", str(tmp_path / "in.parquet"), "--text-col", "review", "--out", out, "--model", tiny_bert,
                     "--engine", engine, "--overwrite"]) == 2
        assert capsys.readouterr().err == (
            f"bertfeat embed: error: --out {out!r} is {what}, not a file: bertfeat writes its output under another "
            "name and renames it into place, which would replace it; name a file to write (to discard the features, "
            "one in a folder of mktemp -d).\n")
    assert (tmp_path / "pipe").is_fifo() and (tmp_path / "link").is_symlink()
    assert os.geteuid() != 0 or (tmp_path / "null").is_char_device()
    assert sorted(os.listdir(tmp_path)) == sorted(["in.parquet", "pipe", "link"] + ["null"] * (os.geteuid() == 0))


@pytest.mark.parametrize("out", ["features/", "features//", "new/"])
def test_an_output_ending_with_a_slash_is_refused_by_the_local_engine_which_writes_one_file(tiny_bert, tmp_path,
                                                                                           capsys, out):
    # `--out features/` (the Ray and Spark examples' folder output) wrote one parquet file named `features`, with
    # `features.manifest.json` beside it, silently: a slash names a folder, and the local engine writes a file
    from bertfeat.files import embed_file

    frame(3).to_parquet(tmp_path / "in.parquet")
    (tmp_path / "features").mkdir()
    target = f"{tmp_path}/{out}"  # (a pathlib.Path drops the slash)
    assert main(["embed", str(tmp_path / "in.parquet"), "--out", target, "--text-col", "review", "--model", tiny_bert,
                 "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"bertfeat embed: error: --out {target!r} ends with a slash, naming a folder, but bertfeat writes "
                   f"parquet, one file with its manifest beside it; name the file "
                   f"({target.rstrip('/')}/features.parquet), or write a folder of parquet files with --engine ray "
                   "or --engine spark (bertfeat.ray.embed_parquet, bertfeat.spark.embed_files).")
    with pytest.raises(ValueError, match=rf"^out {re.escape(repr(target))} ends with a slash, naming a folder"):
        embed_file(tmp_path / "in.parquet", target, "review", model=tiny_bert, quiet=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["features", "in.parquet"]
    assert not any((tmp_path / "features").iterdir())


def test_a_job_whose_output_appeared_while_it_waited_for_the_lock_is_refused_not_written_over(tiny_bert, tmp_path,
                                                                                             monkeypatch):
    """Two jobs started at once on one --out (other inputs): the second checked that --out did not exist, loaded its
    model, and took the lock after the first had finished, then put its own features over the first's output without
    --overwrite and without a word. The check is made again under the lock."""
    import bertfeat.files
    from bertfeat.files import embed_file

    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    frame(5, seed=1).to_csv(first, index=False)
    frame(7, seed=2).to_csv(second, index=False)
    out = tmp_path / "f.parquet"
    real_lock = bertfeat.files.job_lock

    def the_other_job_finishes_first(paths):
        monkeypatch.setattr(bertfeat.files, "job_lock", real_lock)
        embed_file(str(first), str(out), "review", model=tiny_bert, quiet=True)  # done while the second waited
        return real_lock(paths)

    monkeypatch.setattr(bertfeat.files, "job_lock", the_other_job_finishes_first)
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        embed_file(str(second), str(out), "review", model=tiny_bert, quiet=True)
    assert pq.read_table(out).num_rows == 5  # the first job's output, whole
    manifest = json.loads((tmp_path / "f.parquet.manifest.json").read_text())
    assert manifest["input"]["path"] == str(first)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.parquet", "f.parquet.manifest.json", "first.csv",
                                                          "second.csv"]


@pytest.mark.parametrize("code", [errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK])
def test_a_filesystem_without_flock_runs_the_job_with_a_warning_and_the_cache_unlocked(tiny_bert, tmp_path, capsys,
                                                                                        monkeypatch, code):
    """On a filesystem that refuses flock (Lustre mounted without -o flock, NFS without its lock daemon) every
    ``bertfeat embed`` failed with "[Errno 38] Function not implemented", naming neither the lock nor what to do, and
    so did any job with a --cache-dir there. Now the job runs unlocked, as where flock is missing, and says so."""
    import fcntl

    from bertfeat.exceptions import NoLockWarning

    def refused(fd, operation):
        raise OSError(code, os.strerror(code))

    src = tmp_path / "in.csv"
    frame(8).to_csv(src, index=False)
    monkeypatch.setattr(fcntl, "flock", refused)
    args = ["embed", str(src), "--text-col", "review", "--model", tiny_bert, "--cache-dir", str(tmp_path / "c")]
    with pytest.warns(NoLockWarning, match=r"the filesystem of out=.*f\.parquet' does not support flock locks "
                      r"\(.+\), so no lock keeps a second job off this output: run one job per out= at a time"):
        assert main([*args, "--out", str(tmp_path / "f.parquet"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert pq.read_table(tmp_path / "f.parquet").num_rows == 8
    assert main([*args, "--out", str(tmp_path / "g.parquet"), "--quiet"]) == 0
    manifest = json.loads((tmp_path / "g.parquet.manifest.json").read_text())
    assert manifest["counts"]["embedded"] == 0 and manifest["counts"]["cache_hits"] > 0  # the cache answered
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "f.parquet", "f.parquet.manifest.json", "g.parquet",
                                                          "g.parquet.manifest.json", "in.csv"]


def test_a_csv_input_whose_name_is_not_utf8_is_named_in_valid_unicode_in_the_manifest(tiny_bert, tmp_path,
                                                                                     monkeypatch):
    """A CSV input named in Latin-1 (``in\\xe9.csv``) was written into the manifest as Python's surrogate escape,
    ``"in\\udce9.csv"``: a lone surrogate, which R's jsonlite reads as invalid UTF-8 bytes, jq as U+FFFD and
    JavaScript as an ill-formed string. Each byte that is not UTF-8 is now written as the text ``\\xNN``, so every
    string of the manifest is valid Unicode and reads alike everywhere; a rerun still resumes (the job's state
    names it so too)."""
    monkeypatch.chdir(tmp_path)
    name = os.fsdecode(b"in\xe9 caf\xc3\xa9.csv")  # a Latin-1 byte, and UTF-8 (kept as it is) in one name
    frame(12).to_csv(name, index=False)
    args = ["embed", name, "--text-col", "review", "--model", tiny_bert, "--quiet", "--chunk-rows", "5"]
    assert main([*args, "--out", "f.parquet"]) == 0
    raw = Path("f.parquet.manifest.json").read_bytes()
    manifest = json.loads(raw)
    written = str(tmp_path) + "/in\\xe9 caf\u00e9.csv"
    assert manifest["input"]["path"] == written and manifest["input"]["files"][0][0] == written

    def strings(v):
        if isinstance(v, dict):
            return [s for k, x in v.items() for s in [k, *strings(x)]]
        return [s for x in v for s in strings(x)] if isinstance(v, list) else [v] if isinstance(v, str) else []

    for s in strings(manifest):
        s.encode("utf-8")  # no lone surrogate: valid Unicode
    assert b"\\ud" not in raw.lower()
    # the same job, stopped after its first chunk, resumes under that name
    import bertfeat.arrow

    real, calls = bertfeat.arrow.ArrowFeaturizer.__call__, []

    def stop_at_chunk_1(self, batch, first_row=0):
        if calls:
            raise KeyboardInterrupt()
        calls.append(1)
        return real(self, batch, first_row)

    monkeypatch.setattr(bertfeat.arrow.ArrowFeaturizer, "__call__", stop_at_chunk_1)
    assert main([*args, "--out", "g.parquet"]) == 130
    monkeypatch.setattr(bertfeat.arrow.ArrowFeaturizer, "__call__", real)
    assert main([*args, "--out", "g.parquet"]) == 0
    assert json.loads(Path("g.parquet.manifest.json").read_text())["counts"]["rows_resumed"] == 5


def test_a_name_that_is_not_utf8_is_refused_early_for_the_output_and_a_parquet_input_and_read_as_csv(
        tiny_bert, tmp_path, capsys, monkeypatch):
    # Latin-1 bytes from a Windows zip reach Python as a surrogate-escaped str ('caf\udce9'): pyarrow takes only
    # UTF-8 paths, and --out 'caf\udce9.parquet' failed after the model had run with "'utf-8' codec can't encode
    # character '\udce9' in position 3: surrogates not allowed", naming neither the path nor what to do
    from bertfeat.sources import FOLDER_OUTPUT, output_path

    monkeypatch.chdir(tmp_path)
    frame(3).to_csv(os.fsdecode(b"in\xe9.csv"), index=False)
    frame(3).to_parquet("in.parquet")
    common = ["--text-col", "review", "--model", tiny_bert, "--quiet"]
    bad_out = os.fsdecode(b"caf\xe9.parquet")
    assert main(["embed", "in.parquet", "--out", bad_out, *common]) == 2
    assert capsys.readouterr().err == (
        "bertfeat embed: error: --out $'caf\\xe9.parquet' (the bytes b'caf\\xe9.parquet') is not a UTF-8 name, and "
        "bertfeat writes parquet, one file with its manifest beside it, with pyarrow, which takes UTF-8 paths only; "
        "rename it (convmv -f latin1 -t utf8 renames files from Latin-1) or choose another path.\n")
    with pytest.raises(ValueError, match="^out 'caf.*is not a UTF-8 name, and bertfeat writes parquet, a folder"):
        output_path(bad_out, "out", "a path", FOLDER_OUTPUT)  # the Ray and Spark engines' check
    os.rename("in.parquet", os.fsdecode(b"in\xe9.parquet"))
    assert main(["embed", os.fsdecode(b"in\xe9.parquet"), "--out", "f.parquet", *common]) == 2
    assert capsys.readouterr().err == (
        "bertfeat embed: error: input file $'in\\xe9.parquet' (the bytes b'in\\xe9.parquet') is not a UTF-8 name, "
        "and bertfeat reads parquet files with pyarrow, which takes UTF-8 paths only; rename it (convmv -f latin1 -t "
        "utf8 renames files from Latin-1) or choose another path.\n")
    assert sorted(os.listdir(tmp_path)) == sorted([os.fsdecode(b"in\xe9.csv"), os.fsdecode(b"in\xe9.parquet")])
    # a CSV file is opened by Python, which takes any name: it reads, and the manifest names it in valid Unicode
    # (see test_a_csv_input_whose_name_is_not_utf8_is_named_in_valid_unicode_in_the_manifest)
    assert main(["embed", os.fsdecode(b"in\xe9.csv"), "--out", "f.parquet", *common]) == 0
    manifest = json.loads(Path("f.parquet.manifest.json").read_text())
    assert manifest["input"]["path"] == str(tmp_path) + "/in\\xe9.csv"
    assert pq.read_table("f.parquet").num_rows == 3


def test_excel_and_old_mac_exports_of_one_table_embed_as_the_plain_csv_does(tiny_bert, tmp_path, capsys):
    """(files hunt, 2026-11-26, session 10) one table as Windows, old Mac (a bare CR ends each line, also inside a
    quoted value), mixed line ends (since session 14 refused, saying how to convert them), Excel's 'sep=;' first line
    after a BOM, blank columns at the right, and a gzip of
    the old Mac file: every row comes out, in order, with its id and the vectors of the texts pandas reads."""
    import gzip

    import numpy as np

    from bertfeat import BertEmbedder

    texts = ["plain words", "a, comma", 'a "quote" in it', "two\nlines", "sp\u00e9cial", "last one"]

    def table(eol, sep=",", inner="\n", tail=""):
        rows = [f"id{sep}text{tail}"] + [
            f"{i}{sep}" + ('"' + t.replace('"', '""').replace("\n", inner) + '"' if any(c in t for c in ',"\n')
                           else t) + tail for i, t in enumerate(texts, start=1)]
        return eol.join(rows) + eol

    files = {
        "plain.csv": table("\n").encode(),
        "windows.csv": table("\r\n", inner="\r\n").encode(),
        "mac.csv": table("\r", inner="\r").encode(),
        "excel.csv": b"\xef\xbb\xbfsep=;\r\n" + table("\r\n", sep=";", inner="\r\n").encode(),
        "blank_columns.csv": table("\r\n", inner="\r\n", tail=",,").encode(),
        "mac.csv.gz": gzip.compress(table("\r", inner="\r").encode()),
    }
    outputs = {}
    for name, data in files.items():
        src = tmp_path / name
        src.write_bytes(data)
        out = tmp_path / f"{name}.parquet"
        assert main(["embed", str(src), "--text-col", "text", "--keep-col", "id", "--keep-col", "text", "--out",
                     str(out), "--model", tiny_bert, "--chunk-rows", "4", "--quiet"]) == 0, name
        outputs[name] = pq.read_table(out).replace_schema_metadata(None)
        assert outputs[name].column("id").to_pylist() == [str(i) for i in range(1, 7)], name
        if "sep=" not in data.decode("utf-8", "replace")[:10]:  # pandas reads the rest as bertfeat does
            read = pd.read_csv(src, dtype=str, keep_default_na=False)
            assert read["id"].tolist() == outputs[name].column("id").to_pylist(), name
    for name, got in outputs.items():
        # the texts as each file writes them: a line break inside a value is that file's own (\n, \r\n, \r)
        inner = {"plain.csv": "\n", "mac.csv": "\r", "mac.csv.gz": "\r"}.get(name, "\r\n")
        expected = BertEmbedder(model=tiny_bert, columns=["text"]).fit_transform(
            pd.DataFrame({"text": [t.replace("\n", inner) for t in texts]}))
        assert got.column("text").to_pylist() == [t.replace("\n", inner) for t in texts], name
        features = got.drop(["id", "text"]).to_pandas().to_numpy()
        np.testing.assert_allclose(features, expected, rtol=1e-5, atol=1e-6, err_msg=name)
        assert got.column_names == outputs["plain.csv"].column_names, name
    # (CSV writers hunt, 2026-11-27, session 14) line ends mixed, a lone CR ending some lines where the first ends with
    # CRLF: a lone CR there is read as its value's, as Python's csv module and pandas write a text's CR unquoted, so
    # the file is refused, naming the line and how to give every line one end; so converted, every row comes out
    mixed = tmp_path / "mixed.csv"
    mixed.write_bytes(b"id,text\r\n1,plain words\n2,\"a, comma\"\r3,\"a \"\"quote\"\" in it\"\r\n4,\"two\r\nlines\"\n"
                      b"5,sp\xc3\xa9cial\r6,last one")
    out = tmp_path / "mixed.parquet"
    args = ["--text-col", "text", "--keep-col", "id", "--out", str(out), "--model", tiny_bert, "--quiet"]
    assert main(["embed", str(mixed), *args]) == 2
    assert "Line 3 holds a carriage return alone, read as part of its value" in capsys.readouterr().err
    mixed.write_bytes(mixed.read_bytes().replace(b"\r", b"\n"))  # tr '\r' '\n' < in.csv > out.csv
    assert main(["embed", str(mixed), *args]) == 0
    assert pq.read_table(out).column("id").to_pylist() == [str(i) for i in range(1, 7)]


def test_every_error_naming_a_place_counts_csv_lines_from_1_as_editors_do_and_rows_from_0(tiny_bert, tmp_path, capsys):
    """docs/cli.md's one rule: a CSV problem names the line of the file (1-based, a quoted value's line breaks
    counted, as an editor shows it); a row is counted from 0 (pandas' iloc, pyarrow's slice), in the whole input or,
    said "of that file", in the parquet file named. The parquet file's invalid UTF-8 said "row 3" of the row that the
    missing-text error and the Ray and Spark engines call row 2."""
    import numpy as np
    import pyarrow as pa

    def error(source):
        assert main(["embed", str(source), "--text-col", "review", "--out", str(tmp_path / "o.parquet"),
                     "--model", tiny_bert, "--quiet"]) == 2
        return capsys.readouterr().err

    head = b'id,review\n0,"a cat\nsat"\n1,dog\n'  # the third record (row 2) is on line 5
    for name, record, said in [("missing", b"2,\n", "row 2 of column 'review' is missing"),
                               ("utf8", b"2,caf\xe9\n", "is not UTF-8: line 5 holds byte 0xe9"),
                               ("fields", b"2,dog,extra\n", "is malformed at line 5: CSV parse error"),
                               ("quote", b'2,"a "b" c\n', "is malformed at line 5: a quoted value (opened at line 5)")]:
        (tmp_path / f"{name}.csv").write_bytes(head + record + b"3,end\n")
        assert said in error(tmp_path / f"{name}.csv"), name
    values = [b"a", b"b", b"caf\xe9", b"d"]
    offsets = np.cumsum([0] + [len(v) for v in values]).astype(np.int32)
    not_utf8 = pa.Array.from_buffers(pa.string(), 4, [None, pa.py_buffer(offsets.tobytes()),
                                                      pa.py_buffer(b"".join(values))])
    (tmp_path / "two").mkdir()
    pq.write_table(pa.table({"id": ["0", "1"], "review": ["a", "b"]}), tmp_path / "two" / "a.parquet")
    for column, said in [(not_utf8, "b.parquet: column 'review' at row 2 of that file holds bytes that are not UTF-8"),
                         (pa.array(["a", "b", None, "d"]), "row 4 of column 'review' is missing")]:  # of the input
        pq.write_table(pa.table({"id": ["0", "1", "2", "3"], "review": column}), tmp_path / "two" / "b.parquet")
        assert said in error(tmp_path / "two"), said
