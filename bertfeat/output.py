"""Where a job writes: the output paths, the checks on ``--out`` made before any work, atomic writes that leave
no temp file behind when they fail, the lock that keeps two jobs off one output, and the recipe's local paths made
absolute for a cluster engine's workers.

A job writing ``<out>`` (a symbolic link there followed: :meth:`OutputPaths.of`) owns ``<out>.partial/`` (its
finished parts, for resume), ``<out>.manifest.json`` and a lock file ``.<out>.lock``, held (:mod:`bertfeat.locks`:
``flock``, ``msvcrt.locking`` on Windows) for the whole job and removed at its end. A second job on the same
``<out>`` is refused at once with a message naming the lock and the process holding it, so two jobs never interleave
their parts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat import locks
from bertfeat.exceptions import NoLockWarning, user_stacklevel
# atomic_write_bytes: output's name of it since before flush.py, which the engines import
from bertfeat.flush import atomic_write_bytes, file_to_disk, naming  # noqa: F401
from bertfeat.sources import SameFiles, absolute


@dataclass
class OutputPaths:
    out: Path

    @classmethod
    def of(cls, out) -> "OutputPaths":
        """The paths of a job writing ``out``. A symbolic link at ``out`` (to a file or folder on a bigger disk,
        dangling before the first run) is followed, to the end of a chain of links: the output is put in place
        where it points and the link stays; renamed over the link, the features landed beside it while the file
        it points to kept the earlier ones. The manifest, ``.partial`` folder and lock go beside that file too, so
        two jobs reaching one output by two names take one lock."""
        out = Path(out)
        return cls(Path(os.path.realpath(out)) if out.is_symlink() else out)

    @property
    def partial(self) -> Path:
        return self.out.with_name(self.out.name + ".partial")

    @property
    def manifest(self) -> Path:
        return self.out.with_name(self.out.name + ".manifest.json")

    @property
    def lock(self) -> Path:
        return self.out.with_name(f".{self.out.name}.lock")

    def tmp(self, path: Path) -> Path:
        return path.with_name(f".{path.name}.tmp-{os.getpid()}")

    def part(self, k: int) -> Path:
        return self.partial / f"part-{k:06d}.parquet"

    def part_stats(self, k: int) -> Path:
        return self.partial / f"part-{k:06d}.json"

    def part_hashes(self, k: int) -> Path:
        return self.partial / f"part-{k:06d}.hashes.npy"

    def part_journal(self, k: int) -> Path:
        """The batches of unfinished part ``k`` finished so far (:mod:`bertfeat.journal`)."""
        return self.partial / f"part-{k:06d}.journal"


_Paths = OutputPaths  # the name ray.py and older callers import


def own_files(paths: OutputPaths | None, params: dict) -> list:
    """What a job writes that its input, a folder or glob holding it, must not read back: its out= and parts (where
    it has one: ``paths``), and its cache_dir (a cache in the input folder, whose shards are parquet files)."""
    own = [] if paths is None else [paths.out, paths.partial]
    cache_dir = params.get("cache_dir")
    if isinstance(cache_dir, (str, os.PathLike)) and os.fspath(cache_dir).strip() and "://" not in os.fspath(cache_dir):
        own.append(Path(absolute(os.path.expanduser(os.fspath(cache_dir)))))
    return own


def check_output(paths: OutputPaths, reader, overwrite: bool, *, file_output: bool = False) -> None:
    """``--out`` is neither an input file nor a folder holding one, its folder exists and is writable, and an
    existing output is replaced only with ``overwrite`` (both engines); with ``file_output`` (the local engine) an
    existing folder at ``--out`` is refused, since a file cannot replace it."""
    out, partial = paths.out.resolve(), paths.partial.resolve()
    same = SameFiles()  # by name, and by the file it is: Data.parquet is data.parquet where case is ignored
    for f in reader.files:
        f = f.resolve()
        if same(f, out):
            raise ValueError(f"out={str(paths.out)!r} is the input file; write the features to another path.")
        if same.within(f, out) or same.within(f, partial):
            raise ValueError(f"out={str(paths.out)!r} holds the input file {str(f)!r}; write the features elsewhere.")
    if not paths.out.parent.exists():
        raise FileNotFoundError(f"the folder of out={str(paths.out)!r} does not exist; create it first.")
    if paths.out.exists() and not overwrite:
        raise FileExistsError(f"output {str(paths.out)!r} exists; pass overwrite=True to replace it.")
    if paths.partial.is_symlink():  # rmtree refuses a link: a rerun of another job crashed, a finished one left it
        raise FileExistsError(
            f"{str(paths.partial)!r} is a symbolic link, and bertfeat makes and removes that folder itself (the parts "
            "of an unfinished job): remove the link. To keep the parts on another disk, make out= a link to a file "
            "there: they are kept beside the file it points to."
        )
    if paths.partial.exists() and not paths.partial.is_dir():
        raise FileExistsError(
            f"{str(paths.partial)!r} is not a folder, and bertfeat keeps the parts of an unfinished job for out= "
            "there: move it away (or choose another out=), then run again."
        )
    if file_output and paths.out.is_dir():
        raise FileExistsError(
            f"output {str(paths.out)!r} is a folder and the output is one parquet file: overwrite=True replaces files "
            "only. Choose a file path for out= (or remove the folder yourself)."
        )
    if not os.access(paths.out.parent, os.W_OK):
        raise PermissionError(
            f"the folder of out={str(paths.out)!r} is not writable (read-only filesystem or no permission); "
            "write the features elsewhere."
        )


def check_folder_output(paths: OutputPaths, reader, overwrite: bool) -> None:
    """:func:`check_output` for an output folder (the cluster engines'): ``overwrite`` replaces only a folder of
    parquet files, never one holding anything else. A folder left without its manifest by a run stopped after
    moving it into place (its work folder, and so its cache, kept until the manifest is written) is refused saying
    so, and what to do."""
    try:
        check_output(paths, reader, overwrite)
    except FileExistsError:
        if (overwrite or not paths.out.is_dir() or paths.manifest.exists() or paths.partial.is_symlink()
                or not paths.partial.is_dir()):
            raise
        raise FileExistsError(
            f"output {str(paths.out)!r} exists without its manifest ({paths.manifest.name}), and {paths.partial.name} "
            "beside it holds the work of a run on this out= stopped before writing it (as it put its output in "
            "place). Pass overwrite=True to write both again: the texts that run embedded come from its cache, so "
            "the same job runs the model for none of them."
        ) from None
    if overwrite and paths.out.is_dir():
        others = [p.name for p in paths.out.rglob("*") if p.is_file() and not p.name.endswith(".parquet")]
        if others:
            raise FileExistsError(
                f"output {str(paths.out)!r} exists and holds files other than parquet ({others[:3]}), so it is "
                "not a bertfeat output: bertfeat will not delete it. Choose another out=."
            )


def replace_output(new: Path, out: Path) -> None:
    """Put ``new`` (a folder: Ray's and Spark's output) at ``out``; an old output is moved aside first and removed only
    once the new one is in place, and put back where the new one cannot be. On Windows a file held open in either
    (a notebook reading the old output, an antivirus the new one) past :data:`bertfeat.locks.HELD_OPEN_SECONDS` is
    named, saying what to do, as the local engine names its ``out`` held open (:func:`job_os_error`)."""
    old = None
    try:
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            _move(out, old)
        try:
            _move(new, out)
        except OSError:
            if old is not None:
                with contextlib.suppress(OSError):
                    _move(old, out)
            raise
    except PermissionError as exc:
        if not locks.WINDOWS:
            raise
        held = OSError(
            f"out={str(out)!r} holds a file another program has open (a notebook, an R session or a viewer reading it, "
            "an antivirus scanning it), and Windows cannot replace a folder with a file in use "
            f"({exc.strerror or exc}); close it there, then run the same command again: the texts embedded are kept "
            "in the cache, so none is embedded again.")
        held.errno = exc.errno
        raise held from None
    if old is not None:
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()


# gcsfuse refuses to rename a folder holding more objects than its --rename-dir-limit (0 unless the mount sets it),
# with EMFILE, "Too many open files" (its internal/fs/fs.go): there a folder is moved file by file, as gcsfuse's own
# folder rename, where allowed, moves it (object by object, not at once)
_FOLDER_RENAME_REFUSED = frozenset({errno.EMFILE})


def _move(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``, which does not exist; a folder the file system will not rename is moved file by
    file (:data:`_FOLDER_RENAME_REFUSED`), all or nothing (:func:`_move_files`)."""
    try:
        locks.retried(os.replace, src, dst)
    except OSError as exc:
        if exc.errno not in _FOLDER_RENAME_REFUSED or src.is_symlink() or not src.is_dir():
            raise
        _move_files(src, dst)


def _move_files(src: Path, dst: Path) -> None:
    """Move the folder ``src`` to ``dst`` file by file. Where one move fails (a network error), the files moved are
    put back and the folders made removed before the error is raised, so ``dst`` never holds part of an output (which
    would look like one) and the caller can put an old output back there."""
    moved: list[tuple[Path, Path]] = []
    dst.mkdir()
    try:
        for folder, subfolders, names in os.walk(src):
            within = dst / Path(folder).relative_to(src)
            for name in subfolders:
                if (Path(folder) / name).is_symlink():  # not walked into: moved as the link it is
                    names.append(name)
                else:
                    (within / name).mkdir()
            for name in names:
                locks.retried(os.replace, Path(folder) / name, within / name)
                moved.append((Path(folder) / name, within / name))
    except OSError:
        for back, moved_to in reversed(moved):
            with contextlib.suppress(OSError):
                os.replace(moved_to, back)
        for folder, _, _ in sorted(os.walk(dst), reverse=True):  # the deepest first; one still holding a file stays
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise
    shutil.rmtree(src)  # its folders, emptied


def absolute_paths(params: dict) -> dict:
    """The recipe ``params`` with its local paths (cache_dir, a model folder) made absolute: a worker of a cluster
    engine (a Ray actor, a Spark task) on another node starts in another working directory."""
    out = dict(params)
    if out.get("cache_dir") is not None and os.fsdecode(os.fspath(out["cache_dir"])).strip():  # "" stays refusable
        out["cache_dir"] = absolute(os.path.expanduser(os.fspath(out["cache_dir"])))
    model = out.get("model", "default")
    if isinstance(model, (str, os.PathLike)) and os.fspath(model) != "default" and Path(model).expanduser().is_dir():
        out["model"] = str(Path(model).expanduser().resolve())
    return out


@contextlib.contextmanager
def job_lock(paths: OutputPaths):
    """Hold the output's lock for a job; refuse at once if another process holds it. Where the filesystem refuses
    flock (:data:`bertfeat.locks.UNSUPPORTED`), the job runs unlocked, with a :class:`NoLockWarning`."""
    if not locks.available():
        yield
        return
    unlocked = None  # why the filesystem refused to lock, where it did
    while True:
        try:
            fd = locks.open_lock_file(paths.lock)
        except OSError as exc:
            raise os_error_message(exc, f"the lock file of out={str(paths.out)!r}") from None
        try:
            taken = locks.lock(fd, wait=False)
        except OSError as exc:
            locks.close(fd)
            if exc.errno not in locks.UNSUPPORTED:
                raise os_error_message(exc, f"the lock file of out={str(paths.out)!r}") from None
            _remove(paths.lock)  # this filesystem does not lock (Lustre without -o flock): run unlocked
            unlocked = exc.strerror or str(exc)
            break
        if not taken:
            holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
            locks.close(fd)
            raise FileExistsError(
                f"another bertfeat job ({holder}) is writing out={str(paths.out)!r} (it holds {str(paths.lock)!r}); "
                "wait for it to finish, or choose another out=."
            ) from None
        # the holder before us may have removed the file after we opened it: then ours is a stale inode, and we lock
        # the file a later job would open. A stat that fails otherwise leaves us unsure that we hold this out='s lock:
        # refuse, saying which file, rather than run beside another job
        try:
            same = locks.still_held(fd, paths.lock)
        except OSError as exc:
            locks.release(fd)
            raise os_error_message(exc, f"the lock file of out={str(paths.out)!r}") from None
        if same:
            break
        locks.release(fd)
    if unlocked is not None:
        warnings.warn(f"the filesystem of out={str(paths.out)!r} does not support flock locks ({unlocked}), so no "
                      "lock keeps a second job off this output: run one job per out= at a time.", NoLockWarning,
                      stacklevel=user_stacklevel())
        yield
        return
    try:
        try:  # a disk full to the last block makes the empty file and refuses this line
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode())
        except OSError as exc:
            raise os_error_message(exc, f"the lock file of out={str(paths.out)!r}") from None
        yield
    finally:
        locks.release(fd, paths.lock)


def remove_stale_temps(paths: OutputPaths) -> None:
    """Remove what a killed run left beside ``--out``: its joined output and manifest under temp names, and an
    earlier output it had moved aside (:func:`replace_output`). Call it holding the job's lock: then no live job
    is writing them. A name in another case is the killed run's where the file system ignores case (macOS,
    Windows: ``--out Out.parquet`` is ``out.parquet``), which it does where that case names our lock file too."""
    out, manifest = paths.out.name, paths.manifest.name
    starts = (f".{out}.tmp-", f".{manifest}.tmp-", f".{out}.old-")
    folded = tuple(s.lower() for s in starts)
    same = SameFiles()
    try:
        names = os.listdir(paths.out.parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(starts):
            if not name.lower().startswith(folded) or len(name.lower()) != len(name):
                continue
            if not same(paths.out.parent / f".{name[1:1 + len(out)]}.lock", paths.lock):
                continue  # another output's, whose job may be running
        f = paths.out.parent / name
        if f.is_dir() and not f.is_symlink():
            shutil.rmtree(f, ignore_errors=True)
        else:
            _remove(f)


_atomic_write_bytes = atomic_write_bytes  # the name ray_files.py and spark.py import (through files)


def write_part(path: Path, batch: pa.RecordBatch) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with naming(tmp):
            pq.write_table(pa.Table.from_batches([batch]), tmp, row_group_size=max(1, batch.num_rows))
        file_to_disk(tmp)
        locks.retried(os.replace, tmp, path)  # Windows: an antivirus may be reading the new file
    finally:
        _remove(tmp)


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


_OS_HINTS = {
    errno.ENOSPC: "the disk is full: free some space, then run the same command again to resume",
    errno.EDQUOT: "the disk quota is exceeded: free some space, then run the same command again to resume",
    errno.EROFS: "the filesystem is read-only: write elsewhere",
    errno.EACCES: "write elsewhere, or fix the permissions",
    errno.EPERM: "write elsewhere, or fix the permissions",
}


def os_error_message(exc: OSError, what: str | None = None) -> OSError:
    """An OSError whose text is one line saying what failed, why, and (for a full disk, a read-only filesystem or
    missing permission) what to do."""
    where = what or (repr(os.fsdecode(exc.filename)) if exc.filename else "a file")
    hint = _OS_HINTS.get(exc.errno)
    new = OSError(f"{where}: {exc.strerror or exc}" + (f"; {hint}." if hint else "."))
    new.errno = exc.errno
    return new


def job_os_error(exc: OSError, paths: OutputPaths) -> OSError:
    """:func:`os_error_message` for a job writing ``paths``, where a file is missing because the folder of
    ``--out``, or the job's ``.partial`` folder, was removed while it ran (a cleanup, a user's ``rm -r``): that is
    what to say, not the name of the temp file the next write did not find."""
    if exc.errno == errno.ENOENT or isinstance(exc, FileNotFoundError):  # pyarrow's carry no errno
        if not paths.out.parent.is_dir():
            gone = (f"the folder of out=, {str(paths.out.parent)!r}, was removed while the job ran, so nothing was "
                    "written at out=; create it again, then run the same command to start the job over.")
        elif not paths.partial.is_dir():
            gone = (f"{str(paths.partial)!r}, where the job keeps its finished parts, was removed while the job ran "
                    "(its parts with it), so nothing was written at out=; run the same command again to start the "
                    "job over.")
        else:
            gone = None
        if gone:
            new = OSError(gone)
            new.errno = exc.errno
            return new
    if (locks.WINDOWS and isinstance(exc, PermissionError)
            and str(paths.out) in (os.fsdecode(exc.filename or ""),
                                   os.fsdecode(getattr(exc, "filename2", None) or ""))):
        new = OSError(
            f"out={str(paths.out)!r} is held open by another program (a notebook, an R session or a viewer reading "
            f"it), and Windows cannot replace a file in use ({exc.strerror or exc}); close it there, then run the same "
            "command again: the finished parts are kept, so nothing is embedded again.")
        new.errno = exc.errno
        return new
    return os_error_message(exc)


def check_written(files: list[Path], data_dir: Path, expected_rows: int, workers: str) -> dict:
    """The common provenance of the parquet ``files`` a distributed job wrote into ``data_dir``; fails loudly
    (RuntimeError, nothing renamed) when they disagree on the recipe or do not hold ``expected_rows`` rows.
    ``workers`` names them in the message ("the Ray workers", "the Spark tasks")."""
    import json

    metas = {pq.read_schema(f).metadata.get(b"bertfeat") for f in files} if files else set()
    if len(metas) != 1:
        raise RuntimeError(
            f"{workers} wrote {len(files)} file(s) with {len(metas)} different recipes in {data_dir}; each worker "
            "checks its model files, dtype and bertfeat against the driver's before it embeds, so this is a bug: "
            "report it with the 'bertfeat' schema metadata of two of the files."
        )
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    if rows != expected_rows:
        raise RuntimeError(f"{workers} wrote {rows} rows for {expected_rows} input rows in {data_dir}; not renamed.")
    return json.loads(metas.pop())

