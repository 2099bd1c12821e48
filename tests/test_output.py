"""Where a job writes (bertfeat/output.py), unit by unit: the paths beside ``--out``, every refusal of ``--out``
word for word, the swap that replaces an output, the lock, atomic writes, the one-line OS errors, the recipe's
paths made absolute for remote workers and the check of what a cluster's workers wrote. The CLI and engine tests
reach these through whole jobs; here each is pinned by value, so a changed message, a dropped condition or a lost
field fails a test that names it."""

import errno
import json
import os
import re
import shutil
import socket
from ast import literal_eval
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat import locks, output
from bertfeat.output import (
    OutputPaths, absolute_paths, atomic_write_bytes, check_folder_output, check_output, check_written, job_lock,
    os_error_message, replace_output, write_part,
)
from tests.conftest import lock_stat_fails


def reader(*files):
    return SimpleNamespace(files=[Path(f) for f in files])


def refused(exc_type, message, *args, **kw):
    """Call check_output/check_folder_output and return the refusal's text, which must match ``message`` whole."""
    check = kw.pop("check", check_output)
    with pytest.raises(exc_type) as info:
        check(*args, **kw)
    assert str(info.value) == message
    return str(info.value)


def test_the_paths_beside_out(tmp_path, monkeypatch):
    paths = OutputPaths(tmp_path / "f.parquet")
    assert paths.partial == tmp_path / "f.parquet.partial"
    assert paths.manifest == tmp_path / "f.parquet.manifest.json"
    assert paths.lock == tmp_path / ".f.parquet.lock"
    assert paths.tmp(tmp_path / "x.json") == tmp_path / f".x.json.tmp-{os.getpid()}"
    assert paths.part(7) == tmp_path / "f.parquet.partial" / "part-000007.parquet"
    assert paths.part_stats(7) == tmp_path / "f.parquet.partial" / "part-000007.json"
    assert paths.part_hashes(7) == tmp_path / "f.parquet.partial" / "part-000007.hashes.npy"
    assert paths.part_journal(123456) == tmp_path / "f.parquet.partial" / "part-123456.journal"


def test_a_folder_output_stopped_before_its_manifest_is_refused_saying_so_and_what_to_do(tmp_path):
    """(found by the file systems and engines hunt, 2026-11-27, session 17) Ray's and Spark's jobs move their
    output folder into place, then write its manifest: a run stopped between the two left the folder without it,
    and the rerun was refused "exists; pass overwrite=True to replace it", as if it were any other output (and the
    run's cache, in its work folder, was removed before the manifest was written, so overwrite ran the model again
    for every text). Now the work folder goes only after the manifest, and such an output is refused saying what
    happened and that overwrite takes the texts from the cache."""
    out = tmp_path / "feats"
    out.mkdir()
    (out / "part-00000.parquet").write_bytes(b"PAR1")
    paths = OutputPaths(out)
    (paths.partial / "cache").mkdir(parents=True)
    src = reader(tmp_path / "in.parquet")
    refused(FileExistsError, f"output {str(out)!r} exists without its manifest (feats.manifest.json), and "
            "feats.partial beside it holds the work of a run on this out= stopped before writing it (as it put its "
            "output in place). Pass overwrite=True to write both again: the texts that run embedded come from its "
            "cache, so the same job runs the model for none of them.",
            paths, src, False, check=check_folder_output)
    check_folder_output(paths, src, True)
    paths.manifest.write_text("{}")  # a finished output: the usual refusal
    refused(FileExistsError, f"output {str(out)!r} exists; pass overwrite=True to replace it.", paths, src, False,
            check=check_folder_output)
    paths.manifest.unlink()
    shutil.rmtree(paths.partial)  # no work folder: not known as a stopped run's
    refused(FileExistsError, f"output {str(out)!r} exists; pass overwrite=True to replace it.", paths, src, False,
            check=check_folder_output)


# -- check_output: each refusal whole, and what is not refused ----------------------------------------------------

def test_out_is_the_input_file(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a\n")
    out = str(src)
    refused(ValueError, f"out={out!r} is the input file; write the features to another path.",
            OutputPaths(src), reader(src), True)
    # the same file reached by another spelling of its path is still the input
    refused(ValueError, f"out={str(tmp_path / 'sub' / '..' / 'in.csv')!r} is the input file; write the features "
            "to another path.", OutputPaths(tmp_path / "sub" / ".." / "in.csv"), reader(src), True)


def test_out_is_a_folder_holding_the_input(tmp_path):
    out = tmp_path / "feats"
    (out / "deep").mkdir(parents=True)
    src = out / "deep" / "in.csv"
    src.write_text("a\n")
    refused(ValueError, f"out={str(out)!r} holds the input file {str(src)!r}; write the features elsewhere.",
            OutputPaths(out), reader(tmp_path / "other.csv", src), True)


def test_out_partial_folder_holding_the_input_is_refused_too(tmp_path):
    out = tmp_path / "f.parquet"
    src = tmp_path / "f.parquet.partial" / "in.csv"  # a resume would delete it with the finished parts
    src.parent.mkdir()
    src.write_text("a\n")
    refused(ValueError, f"out={str(out)!r} holds the input file {str(src)!r}; write the features elsewhere.",
            OutputPaths(out), reader(src), False)


def test_an_input_beside_out_or_with_a_similar_name_is_not_refused(tmp_path):
    out = tmp_path / "f"
    for name in ["in.csv", "f.csv", "fx/in.csv"]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("a\n")
    check_output(OutputPaths(out), reader(*(tmp_path / n for n in ["in.csv", "f.csv", "fx/in.csv"])), False)


def test_an_input_reached_by_a_chain_of_relative_links_across_outs_folder_is_still_the_output(tmp_path, monkeypatch):
    """Relative links are read from the folder of the link, not the working folder: an input folder holding a chain
    of them into the job's own ``.partial`` parts (``in/l1 -> ../hop/l2 -> ../out.parquet.partial``) must not be
    read back, and an ``--out`` that is such a chain to the input file must be refused as the input."""
    from bertfeat.readers import resolve_input

    monkeypatch.chdir(tmp_path)
    for d in ("in", "hop", "out.parquet.partial", "o", "m"):
        os.mkdir(d)
    for f in ("in/a.parquet", "out.parquet.partial/part-000000.parquet"):
        pq.write_table(pa.table({"text": ["x"]}), f)
    os.symlink("../hop/l2", "in/l1")
    os.symlink("../out.parquet.partial", "hop/l2")
    paths = OutputPaths.of("out.parquet")
    for given in ("in", "in/**/*.parquet"):
        assert resolve_input(given, [paths.out, paths.partial])[1] == [Path("in/a.parquet")], given
    with pytest.raises(FileNotFoundError, match="matches no files"):  # only the parts match it
        resolve_input("in/*/*.parquet", [paths.out, paths.partial])
    os.symlink("../m/l2", "o/link")
    os.symlink("../in/a.parquet", "m/l2")
    refused(ValueError, f"out={str(tmp_path / 'in' / 'a.parquet')!r} is the input file; write the features to "
            "another path.", OutputPaths.of("o/link"), reader("in/a.parquet"), True)


def test_an_out_naming_the_input_in_another_case_is_the_input_where_the_filesystem_ignores_case(case_insensitive):
    """macOS's file system (and Windows') ignores case: ``--out Data.parquet`` for the input ``data.parquet`` is the
    input file, but check_output compared names, so it was told "exists; pass overwrite=True", and with it the
    input was replaced by its features. A folder output (Ray, Spark) holding the input was missed alike, and
    ``overwrite`` removed it, input and all."""
    tmp_path = case_insensitive
    src = tmp_path / "data.parquet"
    pq.write_table(pa.table({"text": ["x"]}), src)
    assert (tmp_path / "Data.parquet").exists()
    for overwrite in (False, True):
        refused(ValueError, f"out={str(tmp_path / 'Data.parquet')!r} is the input file; write the features to "
                "another path.", OutputPaths(tmp_path / "Data.parquet"), reader(src), overwrite)
    (tmp_path / "in").mkdir()
    inside = tmp_path / "in" / "a.parquet"
    pq.write_table(pa.table({"text": ["x"]}), inside)
    refused(ValueError, f"out={str(tmp_path / 'IN')!r} holds the input file {str(inside)!r}; write the features "
            "elsewhere.", OutputPaths(tmp_path / "IN"), reader(inside), True, check=check_folder_output)
    check_output(OutputPaths(tmp_path / "data2.parquet"), reader(src, inside), True)  # another name is another file


def test_where_the_file_system_gives_no_file_ids_an_output_and_its_parts_are_not_the_input(no_file_ids):
    """(found by a review of session 14's merged work, 2026-11-27, session 14) SameFiles, which tells a file named in
    another case apart where case is ignored, compared ``(st_dev, st_ino)``, which a file system without file ids
    gives as ``(drive, 0)`` for every file (sshfs-win, Google Drive for desktop on Windows): a rerun with
    overwrite=True was refused "out=... is the input file", and a stopped job's resume "out=... holds the input file",
    its parts' folder taken for each folder above the input. A file id of 0 tells nothing: the names decide."""
    src = no_file_ids / "data.parquet"
    pq.write_table(pa.table({"text": ["x"]}), src)
    out = OutputPaths(no_file_ids / "features.parquet")
    pq.write_table(pa.table({"f0": [1.0]}), out.out)
    out.partial.mkdir()  # a stopped job's parts: its resume
    check_output(out, reader(src), True)
    refused(FileExistsError, f"output {str(out.out)!r} exists; pass overwrite=True to replace it.", out, reader(src),
            False)
    refused(ValueError, f"out={str(src)!r} is the input file; write the features to another path.",
            OutputPaths(src), reader(src), True)  # by its name
    (no_file_ids / "in").mkdir()
    inside = no_file_ids / "in" / "a.parquet"
    pq.write_table(pa.table({"text": ["x"]}), inside)
    refused(ValueError, f"out={str(no_file_ids / 'in')!r} holds the input file {str(inside)!r}; write the features "
            "elsewhere.", OutputPaths(no_file_ids / "in"), reader(inside), True, check=check_folder_output)
    check_folder_output(OutputPaths(no_file_ids / "feats"), reader(inside), True)


def test_the_folder_of_out_must_exist(tmp_path):
    out = tmp_path / "missing" / "f.parquet"
    refused(FileNotFoundError, f"the folder of out={str(out)!r} does not exist; create it first.",
            OutputPaths(out), reader(), True)


def test_an_existing_output_needs_overwrite(tmp_path):
    out = tmp_path / "f.parquet"
    out.write_bytes(b"old")
    refused(FileExistsError, f"output {str(out)!r} exists; pass overwrite=True to replace it.",
            OutputPaths(out), reader(), False)
    check_output(OutputPaths(out), reader(), True)
    check_output(OutputPaths(out), reader(), True, file_output=True)
    assert out.read_bytes() == b"old"  # a check changes nothing


def test_a_folder_at_out_is_refused_for_a_file_output_only(tmp_path):
    out = tmp_path / "feats"
    out.mkdir()
    refused(FileExistsError, f"output {str(out)!r} is a folder and the output is one parquet file: overwrite=True "
            "replaces files only. Choose a file path for out= (or remove the folder yourself).",
            OutputPaths(out), reader(), True, file_output=True)
    check_output(OutputPaths(out), reader(), True)  # the engines write a folder: replacing one is theirs to do
    refused(FileExistsError, f"output {str(out)!r} exists; pass overwrite=True to replace it.",
            OutputPaths(out), reader(), False, file_output=True)  # without --overwrite, the plainer refusal first


@pytest.mark.parametrize("file_output", [True, False])
def test_a_file_where_the_jobs_partial_folder_goes_is_refused_and_kept(tmp_path, file_output):
    """Every engine keeps an unfinished job in <out>.partial/: a file there (a download, an old export) must neither
    be deleted nor end the job with a bare "Not a directory"."""
    out = tmp_path / "feats.parquet"
    partial = tmp_path / "feats.parquet.partial"
    partial.write_bytes(b"someone's file")
    refused(FileExistsError, f"{str(partial)!r} is not a folder, and bertfeat keeps the parts of an unfinished job "
            "for out= there: move it away (or choose another out=), then run again.",
            OutputPaths(out), reader(), False, file_output=file_output)
    assert partial.read_bytes() == b"someone's file"
    partial.unlink()
    partial.mkdir()  # a folder there is an earlier run's: resume decides what to keep
    check_output(OutputPaths(out), reader(), False, file_output=file_output)


def test_an_unwritable_folder_is_refused(tmp_path, monkeypatch):
    out = tmp_path / "f.parquet"
    asked = []

    real = os.access

    def access(path, mode, **kw):  # the tests run as root, who may write anywhere: "no" to this folder's write check
        if Path(path) != tmp_path:
            return real(path, mode, **kw)
        asked.append((Path(path), mode))
        return mode != os.W_OK

    monkeypatch.setattr(output.os, "access", access)
    refused(PermissionError, f"the folder of out={str(out)!r} is not writable (read-only filesystem or no "
            "permission); write the features elsewhere.", OutputPaths(out), reader(), True)
    assert asked == [(tmp_path, os.W_OK)]


# -- check_folder_output: --overwrite replaces a folder of parquet files only ----------------------------------------

def test_folder_output_replaces_only_a_folder_of_parquet_files(tmp_path):
    out = tmp_path / "feats"
    (out / "sub").mkdir(parents=True)
    for name in ["part-0.parquet", "sub/part-1.parquet"]:
        (out / name).write_bytes(b"PAR1")
    check_folder_output(OutputPaths(out), reader(), True)  # a bertfeat output: may be replaced
    refused(FileExistsError, f"output {str(out)!r} exists; pass overwrite=True to replace it.",
            OutputPaths(out), reader(), False, check=check_folder_output)
    (out / "sub" / "notes.txt").write_text("mine")  # one other file, even in a subfolder, and it is not ours
    refused(FileExistsError, f"output {str(out)!r} exists and holds files other than parquet (['notes.txt']), so it "
            "is not a bertfeat output: bertfeat will not delete it. Choose another out=.",
            OutputPaths(out), reader(), True, check=check_folder_output)


def test_folder_output_names_at_most_three_other_files(tmp_path):
    out = tmp_path / "feats"
    out.mkdir()
    names = [f"{c}.txt" for c in "abcde"]
    for n in names:
        (out / n).write_text("x")
    with pytest.raises(FileExistsError) as info:
        check_folder_output(OutputPaths(out), reader(), True)
    listed = re.search(r"other than parquet \((\[.*?\])\)", str(info.value)).group(1)
    assert len(literal_eval(listed)) == 3 and set(literal_eval(listed)) <= set(names)


def test_folder_output_runs_the_common_checks_first(tmp_path):
    out = tmp_path / "feats"
    out.mkdir()
    src = out / "in.csv"
    src.write_text("a\n")
    refused(ValueError, f"out={str(out)!r} holds the input file {str(src)!r}; write the features elsewhere.",
            OutputPaths(out), reader(src), True, check=check_folder_output)
    check_folder_output(OutputPaths(tmp_path / "new"), reader(src), False)  # nothing there yet: nothing to refuse


# -- replace_output -----------------------------------------------------------------------------------------------

def old_output(out: Path, old: str | None) -> Path:
    """``out`` as an earlier run left it: nothing (None), a ``"file"``, or a ``"folder"`` holding a part."""
    if old == "file":
        out.write_bytes(b"old")
    elif old == "folder":
        (out / "sub").mkdir(parents=True)
        (out / "sub" / "part.parquet").write_bytes(b"old")
    return out


@pytest.mark.parametrize("old", [None, "file", "folder"])
@pytest.mark.parametrize("new", ["file", "folder"])
def test_replace_output_puts_the_new_output_in_place_and_leaves_nothing_else(tmp_path, old, new):
    out = old_output(tmp_path / "out", old)
    made = tmp_path / ".new"
    if new == "file":
        made.write_bytes(b"new")
    else:
        made.mkdir()
        (made / "part-0.parquet").write_bytes(b"new")
    replace_output(made, out)
    if new == "file":
        assert out.read_bytes() == b"new"
    else:
        assert sorted(p.name for p in out.iterdir()) == ["part-0.parquet"]
        assert (out / "part-0.parquet").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # neither the new name nor the old copy is left


def test_replace_output_keeps_the_old_output_when_the_new_one_cannot_be_put_in_place(tmp_path):
    out = tmp_path / "out"
    out.write_bytes(b"old")
    with pytest.raises(FileNotFoundError):
        replace_output(tmp_path / "never-written", out)
    # the old output was moved aside, not deleted, and put back where it was (session 14's review: it was left under
    # its aside name, which the next run removes)
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def gcsfuse_folder_renames(monkeypatch) -> list:
    """``os.replace`` as gcsfuse answers it for a folder holding more objects than its ``--rename-dir-limit`` (0
    unless the mount sets it): EMFILE, "Too many open files" (internal/fs/fs.go); a file, or an empty folder, is
    renamed. Returns the folders refused."""
    real, refused = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if os.path.isdir(src) and os.listdir(src):
            refused.append(os.fspath(src))
            raise OSError(errno.EMFILE, "Too many open files")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(output.os, "replace", replace)
    return refused


@pytest.mark.parametrize("old", [None, "file", "folder"])
def test_a_folder_output_is_put_in_place_where_gcsfuse_will_not_rename_a_folder(tmp_path, monkeypatch, old):
    # Ray's and Spark's output is a folder of parquet files, renamed into place at the end: on a bucket mounted with
    # gcsfuse (rename-dir-limit 0 by default) every such job embedded its whole input and then failed with "[Errno 24]
    # Too many open files", which says to raise a limit the job never reached. Now the folder is moved file by file.
    out = old_output(tmp_path / "out", old)
    made = tmp_path / ".partial" / "data"
    (made / "year=1").mkdir(parents=True)
    (made / "part-0.parquet").write_bytes(b"new 0")
    (made / "year=1" / "part-1.parquet").write_bytes(b"new 1")
    refused = gcsfuse_folder_renames(monkeypatch)
    replace_output(made, out)
    assert str(made) in refused
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["part-0.parquet", "year=1",
                                                                      "year=1/part-1.parquet"]
    assert (out / "part-0.parquet").read_bytes() == b"new 0"
    assert (out / "year=1/part-1.parquet").read_bytes() == b"new 1"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".partial", "out"] and not made.exists()


def tree(folder: Path) -> dict:
    """Every file under ``folder`` (relative name: bytes)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("failing", ["new", "old"])
def test_a_folder_moved_file_by_file_that_fails_midway_is_put_back_whole(tmp_path, monkeypatch, failing):
    # Where gcsfuse renames no folder, the output is moved file by file; one file's move failing there (a network
    # error, EIO) left --out holding the files moved so far, which looked like an output, the rest in .partial, and the
    # old output under its aside name (its own move back refused: --out was no longer empty). Now a folder's move is
    # all or nothing: the files moved are put back, then the old output, and the error is raised.
    out = old_output(tmp_path / "out", "folder")
    (out / "sub" / "other.parquet").write_bytes(b"old 2")
    made = tmp_path / ".partial" / "data"
    (made / "year=1").mkdir(parents=True)
    (made / "part-0.parquet").write_bytes(b"new 0")
    (made / "year=1" / "part-1.parquet").write_bytes(b"new 1")
    (made / "year=1" / "part-2.parquet").write_bytes(b"new 2")
    old_files, new_files = tree(out), tree(made)
    gcsfuse_folder_renames(monkeypatch)
    gcsfuse, moved = output.os.replace, []

    def replace(src, dst, *args, **kwargs):
        if os.path.isfile(src) and Path(src).is_relative_to(made if failing == "new" else out):
            moved.append(src)
            if len(moved) == 2:  # the second file of the folder: some moved, some not
                raise OSError(errno.EIO, "Input/output error")
        return gcsfuse(src, dst, *args, **kwargs)

    monkeypatch.setattr(output.os, "replace", replace)
    with pytest.raises(OSError) as err:
        replace_output(made, out)
    assert err.value.errno == errno.EIO and len(moved) == 2
    assert (tree(out), tree(made)) == (old_files, new_files)  # each folder whole, where it was
    assert sorted(p.name for p in tmp_path.iterdir()) == [".partial", "out"]


# -- absolute_paths -----------------------------------------------------------------------------------------------

def test_absolute_paths_makes_the_cache_dir_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert absolute_paths({"cache_dir": "c"})["cache_dir"] == str(tmp_path / "c")
    assert absolute_paths({"cache_dir": Path("a/../c")})["cache_dir"] == str(tmp_path / "c")
    assert absolute_paths({"cache_dir": "~/c"})["cache_dir"] == str(tmp_path / "home" / "c")
    assert absolute_paths({"cache_dir": b"c"})["cache_dir"] == os.fsencode(str(tmp_path / "c"))
    for kept in [None, "", "  ", b""]:  # no cache, or a refusable one: left for the recipe's own check
        assert absolute_paths({"cache_dir": kept})["cache_dir"] == kept
    assert "cache_dir" not in absolute_paths({"model": "default"})


def test_absolute_paths_resolves_a_local_model_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "models" / "m").mkdir(parents=True)
    (tmp_path / "home" / "m").mkdir(parents=True)
    (tmp_path / "default").mkdir()  # a folder named "default" beside the job does not replace the bundled model
    want = str(tmp_path / "models" / "m")
    assert absolute_paths({"model": "models/m"})["model"] == want
    assert absolute_paths({"model": Path("models/m")})["model"] == want
    assert absolute_paths({"model": "models/../models/m"})["model"] == want
    assert absolute_paths({"model": "~/m"})["model"] == str(tmp_path / "home" / "m")
    assert absolute_paths({"model": "default"})["model"] == "default"
    assert absolute_paths({}) == {}  # no model given means the default: nothing added
    hub = "sentence-transformers/all-MiniLM-L6-v2"  # a hub name, not a folder here: left for the worker to fetch
    assert absolute_paths({"model": hub})["model"] == hub
    model = object()  # an already loaded model object passes through untouched
    assert absolute_paths({"model": model})["model"] is model


def test_absolute_paths_copies_and_keeps_the_other_fields(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m").mkdir()
    params = {"model": "m", "cache_dir": "c", "pooling": "mean", "layers": [-1]}
    got = absolute_paths(params)
    assert got == {"model": str(tmp_path / "m"), "cache_dir": str(tmp_path / "c"), "pooling": "mean", "layers": [-1]}
    assert params == {"model": "m", "cache_dir": "c", "pooling": "mean", "layers": [-1]}  # the caller's dict kept


# -- job_lock -----------------------------------------------------------------------------------------------------

def test_job_lock_writes_its_holder_refuses_a_second_job_and_removes_the_file(tmp_path):
    paths = OutputPaths(tmp_path / "f.parquet")
    holder = f"pid {os.getpid()} on {socket.gethostname()}"
    with job_lock(paths):
        assert paths.lock.read_text() == holder
        with pytest.raises(FileExistsError) as info, job_lock(paths):  # another open file: flock refuses it
            pass
        assert str(info.value) == (
            f"another bertfeat job ({holder}) is writing out={str(paths.out)!r} (it holds {str(paths.lock)!r}); "
            "wait for it to finish, or choose another out=.")
        assert paths.lock.read_text() == holder  # the refused job neither truncated nor removed the holder's file
    assert not paths.lock.exists()
    with job_lock(paths):  # free again
        assert paths.lock.read_text() == holder


def test_job_lock_overwrites_a_stale_holder_line(tmp_path):
    paths = OutputPaths(tmp_path / "f.parquet")
    paths.lock.write_text("pid 1 on a-crashed-job-with-a-longer-line-than-ours-" + "x" * 100)
    with job_lock(paths):  # nobody holds the lock: the crashed job's file is taken over, its line replaced whole
        assert paths.lock.read_text() == f"pid {os.getpid()} on {socket.gethostname()}"


def test_job_lock_says_a_holder_without_a_line_is_another_process(tmp_path):
    import fcntl

    paths = OutputPaths(tmp_path / "f.parquet")
    paths.lock.write_text("")
    fd = os.open(paths.lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, but its holder has not written its line yet
    try:
        with pytest.raises(FileExistsError, match=r"^another bertfeat job \(another process\) is writing"), \
                job_lock(paths):
            pass
    finally:
        os.close(fd)


def test_job_lock_retries_when_the_holder_removed_the_file_it_opened(tmp_path, monkeypatch):
    """Between our open and our flock the previous holder may finish and unlink the lock file: the inode we locked
    is then no lock at all, and the job must take the lock again on a new file."""
    paths = OutputPaths(tmp_path / "f.parquet")
    real_flock = locks.fcntl.flock
    calls = []

    def flock(fd, op):
        calls.append(op)
        real_flock(fd, op)
        if len(calls) == 1:  # the previous holder ends now, removing the file we just locked
            os.unlink(paths.lock)

    monkeypatch.setattr(locks.fcntl, "flock", flock)
    with job_lock(paths):
        assert len(calls) == 2  # locked again, on the file that now exists
        assert paths.lock.read_text().startswith(f"pid {os.getpid()} ")
    assert not paths.lock.exists()


@pytest.mark.skipif(locks.fcntl is None, reason="flock is POSIX")
def test_job_lock_whose_lock_file_nfs_calls_stale_locks_the_file_there_now(tmp_path, monkeypatch):
    """ESTALE: another NFS client removed the lock file we opened (its job ended). It escaped job_lock as a bare
    "[Errno 116] Stale file handle" and left the file open and locked for the life of the process (a notebook's
    next job on this out= was refused as another job's); it is a file gone, as ENOENT: lock the one there now."""
    import fcntl

    paths = OutputPaths(tmp_path / "f.parquet")
    calls = lock_stat_fails(monkeypatch, paths.lock, errno.ESTALE, 1)
    with job_lock(paths):
        assert len(calls) == 2  # asked again after locking afresh
        assert paths.lock.read_text().startswith(f"pid {os.getpid()} ")
        fd = os.open(paths.lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert not paths.lock.exists()


@pytest.mark.skipif(locks.fcntl is None, reason="flock is POSIX")
def test_job_lock_unsure_it_holds_the_lock_file_refuses_in_one_line_and_lets_go(tmp_path, monkeypatch):
    """A stat of the lock file failing otherwise (a permission lost, an I/O error) escaped bare, the file left open
    and locked until the process ended; it is now one line naming the lock file, and nothing is held."""
    import fcntl

    paths = OutputPaths(tmp_path / "f.parquet")
    lock_stat_fails(monkeypatch, paths.lock, errno.EACCES, 1)
    with pytest.raises(OSError) as info, job_lock(paths):
        pass
    assert str(info.value) == (f"the lock file of out={str(paths.out)!r}: Permission denied; write elsewhere, or fix "
                               "the permissions.")
    assert info.value.errno == errno.EACCES
    fd = os.open(paths.lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: the refused job let go of it
    finally:
        os.close(fd)


def test_job_lock_where_flock_is_refused_warns_at_the_callers_line(tmp_path, monkeypatch):
    """The NoLockWarning of a job on a filesystem that refuses flock named contextlib.py:137 as its line (raised as
    the job's lock, a context manager, is entered), not the caller's ``embed_file``."""
    import fcntl

    from bertfeat.exceptions import NoLockWarning

    def refused(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refused)
    with pytest.warns(NoLockWarning) as record:
        with job_lock(OutputPaths(tmp_path / "o.parquet")):
            pass
    assert [(r.filename, str(r.message)) for r in record] == [(__file__, (
        f"the filesystem of out={str(tmp_path / 'o.parquet')!r} does not support flock locks (No locks available), "
        "so no lock keeps a second job off this output: run one job per out= at a time."))]


def test_job_lock_on_an_unwritable_folder_is_one_line(tmp_path, monkeypatch):
    paths = OutputPaths(tmp_path / "f.parquet")

    real = os.open

    def no(path, flags, mode=0o777, **kw):
        if Path(path) == paths.lock:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, mode, **kw)

    monkeypatch.setattr(output.os, "open", no)
    with pytest.raises(OSError) as info, job_lock(paths):
        pass
    assert str(info.value) == (f"the lock file of out={str(paths.out)!r}: Permission denied; write elsewhere, or fix "
                               "the permissions.")
    assert info.value.errno == errno.EACCES


def test_job_lock_on_a_full_disk_is_one_line_naming_the_lock_file(tmp_path, monkeypatch):
    # A disk full to the last block still makes the (empty) lock file, and then refuses its holder line: every engine's
    # job stopped with a bare "[Errno 28] No space left on device", naming no file and saying nothing to do.
    paths = OutputPaths(tmp_path / "f.parquet")
    real = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}") == str(paths.lock):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(output.os, "write", full)
    ran = []
    with pytest.raises(OSError) as info, job_lock(paths):
        ran.append(True)
    assert str(info.value) == (f"the lock file of out={str(paths.out)!r}: No space left on device; the disk is full: "
                               "free some space, then run the same command again to resume.")
    assert info.value.errno == errno.ENOSPC and ran == [] and sorted(tmp_path.iterdir()) == []


# -- atomic writes ------------------------------------------------------------------------------------------------

def test_atomic_write_bytes_writes_whole_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b"old")
    atomic_write_bytes(path, b"new bytes")
    assert path.read_bytes() == b"new bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_atomic_write_bytes_that_fails_keeps_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    path.write_bytes(b"old")

    def fail(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output.os, "fsync", fail)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_atomic_writes_reach_the_disk_before_the_rename(tmp_path, monkeypatch):
    order = []
    real_fsync, real_replace = output.os.fsync, output.os.replace
    monkeypatch.setattr(output.os, "fsync", lambda fd: (order.append(("fsync", os.fstat(fd).st_size)),
                                                        real_fsync(fd)))
    monkeypatch.setattr(output.os, "replace", lambda a, b: (order.append(("replace", Path(b).name)),
                                                            real_replace(a, b)))
    atomic_write_bytes(tmp_path / "m.json", b"12345")
    batch = pa.RecordBatch.from_pydict({"x": pa.array([1, 2, 3], pa.int64())})
    write_part(tmp_path / "part-000000.parquet", batch)
    size = (tmp_path / "part-000000.parquet").stat().st_size
    assert order == [("fsync", 5), ("replace", "m.json"), ("fsync", size), ("replace", "part-000000.parquet")]


def test_write_part_writes_the_batch_as_one_row_group_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "part-000000.parquet"
    n = 1024 * 1024 + 3  # past pyarrow's default row-group size: a part is still one row group, read back whole
    batch = pa.RecordBatch.from_pydict({"i": pa.array(range(n), pa.int32())})
    write_part(path, batch)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1 and meta.num_rows == n
    assert pq.read_table(path).column("i").to_pylist()[-3:] == [n - 3, n - 2, n - 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-000000.parquet"]
    write_part(path, pa.RecordBatch.from_pydict({"i": pa.array([], pa.int32())}))  # an empty part is a valid file too
    assert pq.read_table(path).num_rows == 0


def test_write_part_that_fails_leaves_no_temp_file(tmp_path, monkeypatch):
    def full(*a, **kw):
        Path(a[1]).write_bytes(b"PAR1 half")  # a half-written temp file, then the disk fills
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output.pq, "write_table", full)
    with pytest.raises(OSError):
        write_part(tmp_path / "part-000000.parquet", pa.RecordBatch.from_pydict({"i": pa.array([1])}))
    assert list(tmp_path.iterdir()) == []


# -- os_error_message ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("code, hint", [
    (errno.ENOSPC, "the disk is full: free some space, then run the same command again to resume"),
    (errno.EDQUOT, "the disk quota is exceeded: free some space, then run the same command again to resume"),
    (errno.EROFS, "the filesystem is read-only: write elsewhere"),
    (errno.EACCES, "write elsewhere, or fix the permissions"),
    (errno.EPERM, "write elsewhere, or fix the permissions"),
])
def test_os_error_message_says_what_to_do(code, hint):
    exc = OSError(code, os.strerror(code), "/data/out.parquet")
    new = os_error_message(exc)
    assert str(new) == f"'/data/out.parquet': {os.strerror(code)}; {hint}."
    assert new.errno == code
    assert str(os_error_message(exc, "the manifest")) == f"the manifest: {os.strerror(code)}; {hint}."


def test_os_error_message_without_a_hint_a_file_name_or_a_strerror():
    exc = OSError(errno.EIO, "Input/output error")  # no file name: "a file"; no hint: the sentence just ends
    assert str(os_error_message(exc)) == "a file: Input/output error."
    assert os_error_message(exc).errno == errno.EIO
    # a path object names the file as the user typed it, not as Python's repr of the object
    for name in (Path("/data/o.parquet.partial"), b"/data/o.parquet.partial", "/data/o.parquet.partial"):
        exc = OSError(errno.ENOTDIR, "Not a directory", name)
        assert str(os_error_message(exc)) == "'/data/o.parquet.partial': Not a directory."
    bare = OSError("something odd")  # no errno, no strerror: the exception's own text
    assert str(os_error_message(bare, "the output")) == "the output: something odd."
    assert os_error_message(bare).errno is None


# -- check_written ------------------------------------------------------------------------------------------------

def _written(path, rows, recipe):
    table = pa.table({"x": pa.array(range(rows), pa.int64())})
    table = table.replace_schema_metadata({b"bertfeat": json.dumps(recipe).encode()})
    pq.write_table(table, path)
    return path


def test_check_written_returns_the_common_provenance(tmp_path):
    recipe = {"model": "m", "layers": [-1], "pooling": "mean"}
    files = [_written(tmp_path / f"{k}.parquet", k + 1, recipe) for k in range(3)]
    assert check_written(files, tmp_path, 6, "the Ray workers") == recipe


def test_check_written_refuses_recipes_that_differ(tmp_path):
    files = [_written(tmp_path / "a.parquet", 2, {"dtype": "float32"}),
             _written(tmp_path / "b.parquet", 2, {"dtype": "bfloat16"})]
    with pytest.raises(RuntimeError) as info:
        check_written(files, tmp_path, 4, "the Spark tasks")
    assert str(info.value) == (
        f"the Spark tasks wrote 2 file(s) with 2 different recipes in {tmp_path}; each worker checks its model "
        "files, dtype and bertfeat against the driver's before it embeds, so this is a bug: report it with the "
        "'bertfeat' schema metadata of two of the files.")


def test_check_written_refuses_no_files_and_a_wrong_row_count(tmp_path):
    with pytest.raises(RuntimeError) as info:
        check_written([], tmp_path, 0, "the Ray workers")
    assert str(info.value).startswith(f"the Ray workers wrote 0 file(s) with 0 different recipes in {tmp_path};")
    files = [_written(tmp_path / "a.parquet", 3, {"m": 1}), _written(tmp_path / "b.parquet", 4, {"m": 1})]
    with pytest.raises(RuntimeError) as info:
        check_written(files, tmp_path, 8, "the Ray workers")
    assert str(info.value) == f"the Ray workers wrote 7 rows for 8 input rows in {tmp_path}; not renamed."
    assert check_written(files, tmp_path, 7, "the Ray workers") == {"m": 1}


def test_on_windows_replace_output_waits_for_a_file_held_open_for_a_moment(tmp_path, monkeypatch):
    """Ray's and Spark's folder outputs are put in place by two renames, each refused on Windows while another
    process (an antivirus scanning the new files) holds them open: tried again, not failed at the job's end."""
    from bertfeat import locks

    monkeypatch.setattr(locks, "WINDOWS", True)
    monkeypatch.setattr(locks, "HELD_OPEN_SECONDS", 1.0)
    out, new = tmp_path / "o", tmp_path / ".o.tmp"
    out.mkdir()
    (out / "part-0.parquet").write_text("old")
    new.mkdir()
    (new / "part-0.parquet").write_text("new")
    real, refused = os.replace, []

    def replace(src, dst):  # each rename refused twice, then let through
        pair = (Path(src).name, Path(dst).name)
        if refused.count(pair) < 2:
            refused.append(pair)
            raise PermissionError(errno.EACCES, "Access is denied", os.fspath(src), None, os.fspath(dst))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    replace_output(new, out)
    assert (out / "part-0.parquet").read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["o"]
    assert refused == [("o", f".o.old-{os.getpid()}")] * 2 + [(".o.tmp", "o")] * 2


def test_on_windows_a_folder_output_held_open_is_named_and_kept_as_it_was(tmp_path, monkeypatch):
    """(found by a review of session 14's merged work, 2026-11-27, session 14) the local engine names an ``--out``
    another program holds open and says what to do (46b0698), but Ray's and Spark's folder swap, retried alike, let
    Windows' refusal through bare at the job's end ("[WinError 5] Access is denied: 'o' -> '.o.old-123'"); and where
    the old output was moved aside and the new one then could not be put in place, ``out`` was left with no output, the
    old one under a temp name the next run removes. Now the refusal names out= and says to close it there, and the old
    output is put back."""
    from bertfeat import locks

    monkeypatch.setattr(locks, "WINDOWS", True)
    monkeypatch.setattr(locks, "HELD_OPEN_SECONDS", 0.1)
    out, new = tmp_path / "o", tmp_path / ".o.tmp"
    real = os.replace
    for held in ("o", ".o.tmp"):  # a file of the old output held open (a notebook), or of the new (an antivirus)
        for f, text in ((out, "old"), (new, "new")):
            f.mkdir(exist_ok=True)
            (f / "part-0.parquet").write_text(text)

        def replace(src, dst, held=held):
            if Path(src).name == held:
                raise PermissionError(errno.EACCES, "Access is denied", os.fspath(src), None, os.fspath(dst))
            return real(src, dst)

        monkeypatch.setattr(os, "replace", replace)
        with pytest.raises(OSError) as info:
            replace_output(new, out)
        assert str(info.value) == (
            f"out={str(out)!r} holds a file another program has open (a notebook, an R session or a viewer reading it, "
            "an antivirus scanning it), and Windows cannot replace a folder with a file in use (Access is denied); "
            "close it there, then run the same command again: the texts embedded are kept in the cache, so none is "
            "embedded again."), held
        monkeypatch.setattr(os, "replace", real)
        assert (out / "part-0.parquet").read_text() == "old", held
        assert sorted(p.name for p in tmp_path.iterdir()) == [".o.tmp", "o"], held
    monkeypatch.setattr(locks, "WINDOWS", False)  # elsewhere a refused rename is the OS's own words
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(PermissionError, match="Access is denied"):
        replace_output(new, out)


def killed_runs_leftovers(folder):
    for name in (".Out.parquet.tmp-123", ".Out.parquet.manifest.json.tmp-123", ".Out.parquet.old-123",
                 ".other.parquet.tmp-1"):
        (folder / name).write_bytes(b"x" * 10)


def test_a_killed_runs_temp_files_named_in_another_case_are_removed_where_case_is_ignored(case_insensitive):
    """On macOS (and Windows) a run of ``--out Out.parquet`` killed and rerun as ``--out out.parquet`` is the same
    job on the same file, but the rerun looked for the killed run's temp files by name, case and all, and left
    them (a whole joined output among them) for good."""
    from bertfeat.output import remove_stale_temps

    killed_runs_leftovers(case_insensitive)
    paths = OutputPaths(case_insensitive / "out.parquet")
    with job_lock(paths):
        remove_stale_temps(paths)
        assert sorted(p.name for p in case_insensitive.iterdir()) == [".other.parquet.tmp-1", ".out.parquet.lock"]


def test_temp_files_of_an_output_named_in_another_case_are_another_jobs_where_case_counts(tmp_path):
    from bertfeat.output import remove_stale_temps

    killed_runs_leftovers(tmp_path)
    paths = OutputPaths(tmp_path / "out.parquet")
    with job_lock(paths):
        remove_stale_temps(paths)  # Out.parquet is another file, whose job may be running
        assert len(list(tmp_path.iterdir())) == 5
