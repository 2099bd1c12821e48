"""Which files an input names: a CSV or parquet file, or a folder or glob of parquet files (leaving out the job's
own output, and names a dataset's readers hide: starting with '.' or '_'), their kinds by suffix and their
compression."""

from __future__ import annotations

import glob
import heapq
import os
import re
from pathlib import Path

CSV_SUFFIXES = tuple(f"{base}{codec}" for base in (".csv", ".tsv") for codec in ("", ".gz", ".bz2", ".zst"))
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
# what a job writes at its output path, as output_path's refusals say it: the local engine's, the cluster engines'
FILE_OUTPUT = "parquet, one file with its manifest beside it"
FOLDER_OUTPUT = "parquet, a folder of files with its manifest beside it"
# s3://, gs://, hdfs://, file:/, dbfs:/ (two or more letters: C:/ is a Windows drive)
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
_MOUNT = ("the store mounted as a filesystem (s3fs, gcsfuse, blobfuse; /dbfs/... on Databricks), or a local copy; "
          "from Python, bertfeat.ray.embed_dataset reads and writes object stores through Ray Data.")


def path_text(value, name: str, expected: str) -> str:
    """A path argument as text (a ``pathlib.Path`` is as good as a str), a leading ``~`` or ``~user`` read as that
    home folder, as the model and the cache folder are (a shell leaves ``--out=~/f.parquet`` and a quoted
    ``'~/in.csv'`` as written, and R and Python callers pass ``"~/..."``); anything else is refused, naming it."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(f"{name}={value!r} is not valid: expected {expected} (a str or pathlib.Path).")
    return os.path.expanduser(os.fsdecode(value))


def absolute(path):
    """``path`` made absolute as the system reads it: ``os.path.abspath`` drops a ``..`` with the name before it, by
    text, but after a link to a folder (``lnk/..``, ``lnk -> real/sub``) the system goes up from where the link points
    (``real``). The part up to the last ``..`` is resolved by the system; the rest, and a path without ``..``, keep
    their names (a linked folder stays named as given). Bytes stay bytes."""
    if isinstance(path, bytes):
        return os.fsencode(absolute(os.fsdecode(path)))
    parts = Path(path).parts
    if ".." not in parts:
        return os.path.abspath(path)
    last = len(parts) - parts[::-1].index("..")
    return os.path.normpath(os.path.join(os.path.realpath(os.path.join(*parts[:last])), *parts[last:]))


def is_url(path) -> bool:
    """Whether ``path`` is a URL (``s3://bucket/x``, ``dbfs:/x``), which bertfeat's file calls cannot reach:
    ``pathlib`` and ``abspath`` would make it the local path ``s3:/bucket/x``, a folder named after the scheme."""
    return isinstance(path, str) and _URL_RE.match(path) is not None


def locale_refusal(path: str, name: str) -> str | None:
    """Why ``path`` cannot be used where the trouble is this process's locale, not the name, or None.

    Python decodes file names in the locale's character set: in a C locale without its UTF-8 mode (``PYTHONUTF8=0``,
    or Python embedded in R running in a C locale: cron, bare containers) that is ASCII, so a UTF-8 name's bytes come
    as surrogates (``'caf\\udcc3\\udca9'``), and a name given as text (``'café'``, as R passes it) cannot be encoded
    for the system at all. Renaming would not help; a UTF-8 locale does."""
    import sys

    encoding = sys.getfilesystemencoding()
    if encoding.lower().replace("-", "").replace("_", "") in ("utf8", "cp65001"):
        return None
    try:
        raw = os.fsencode(path)
    except UnicodeEncodeError:
        raw = None
    else:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None  # not UTF-8 bytes: a name in another encoding, as utf8_path says
        if raw.decode("utf-8") == path:
            return None  # plain ASCII
    shown = path if raw is None else raw.decode("utf-8")
    return (f"{name} {shown!r} has a UTF-8 name, but this Python reads and writes file names as {encoding} (its "
            "locale's character set; Python's UTF-8 mode is off), so it cannot name that file. Run it in a UTF-8 "
            "locale: export LANG=C.UTF-8 (or PYTHONUTF8=1) before starting Python or R, or choose an ASCII path.")


def utf8_path(path: str, name: str, does: str) -> str:
    """``path`` where its name is UTF-8, else a ValueError naming it and its bytes: a name in another encoding (Latin-1
    from a Windows zip) reaches Python surrogate-escaped (``'caf\\udce9'``), and pyarrow, Ray and Spark take UTF-8
    paths only (pyarrow's own error names neither the path nor what to do). ``does``: what bertfeat does there."""
    refusal = locale_refusal(path, name)
    if refusal:
        raise ValueError(refusal)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name} {path!r} (the bytes {os.fsencode(path)!r}) is not a UTF-8 name, and bertfeat {does} "
                         "with pyarrow, which takes UTF-8 paths only; rename it (convmv -f latin1 -t utf8 renames "
                         "files from Latin-1) or choose another path.") from None
    return path


def recorded_name(path) -> str:
    """``path`` as a manifest and a job's state record it: valid Unicode, every byte of the name that is not UTF-8
    written as the four characters ``\\xNN`` (a CSV named in Latin-1, ``caf\\xe9.csv``). Python gives such a name as
    a lone surrogate (``'caf\\udce9.csv'``), which JSON can only write as ``"\\udce9"``: R's jsonlite reads that as
    invalid UTF-8, jq as U+FFFD, JavaScript as an ill-formed string. A UTF-8 name is kept as it is."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def recorded_path(path) -> str | None:
    """``path`` (the input, a glob of it, ``--out``, ``--cache-dir``) as a manifest records it: absolute, links
    followed (:func:`recorded_name` of it), so that every path of one manifest names its file from any folder. The
    output was recorded as typed (``f.parquet``) beside the input's absolute path, which named nothing once the
    manifest was read from another folder. A URL (a Spark cluster's ``cache_dir``) is kept as given; None stays
    None."""
    if path is None:
        return None
    if is_url(str(path)):
        return str(path)
    return recorded_name(Path(path).resolve())


def input_path(path) -> str:
    path = path_text(path, "input", "the path of a CSV or parquet file, a folder or a glob")
    if path == "-":  # the Unix name of standard input, whatever lies in the folder
        raise ValueError("input '-' (standard input) cannot be read: bertfeat reads its input more than once and a "
                         "rerun resumes from it, so write the data to a file first and pass its path (a file named "
                         "'-' is ./-).")
    try:  # a CSV is read under any name the system gives; a name given as text must be one it can take
        os.fsencode(path)
    except UnicodeEncodeError:
        raise ValueError(locale_refusal(path, "input") or f"input {path!r} cannot be named to this system.") from None
    if is_url(path):
        raise ValueError(f"input {path!r} is a URL, but bertfeat reads files with ordinary file calls; pass the path of "
                         f"{_MOUNT}")
    return path


def _not_a_file(path: str) -> str | None:
    """What ``path`` (links followed: ``/dev/stdout``) is where it is neither a file nor a folder, else None."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    for test, what in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return None


# an output's names of data formats other than parquet (and CSV, above): what a reader of that format expects there
_OTHER_FORMATS = {".feather": "an Arrow IPC (Feather) file", ".arrow": "an Arrow IPC (Feather) file",
                  ".ipc": "an Arrow IPC (Feather) file", ".orc": "an ORC file", ".avro": "an Avro file",
                  ".json": "a JSON file", ".jsonl": "a JSON Lines file", ".ndjson": "a JSON Lines file",
                  ".xlsx": "an Excel workbook", ".xlsm": "an Excel workbook", ".xls": "an Excel workbook",
                  # and the files embeddings are kept in otherwise: R's readRDS said 'unknown input format' of a
                  # features.rds (bf_embed_file()'s out=), numpy.load, pickle, torch.load, h5py fail alike
                  ".rds": "an R data file", ".rda": "an R data file", ".rdata": "an R data file",
                  ".npy": "a NumPy array file", ".npz": "a NumPy array file", ".pkl": "a Python pickle",
                  ".pickle": "a Python pickle", ".pt": "a PyTorch file", ".pth": "a PyTorch file",
                  ".h5": "an HDF5 file", ".hdf5": "an HDF5 file"}
# a JSON file compressed as a CSV may be (features.json.gz): named so, it is no parquet file either
_OTHER_FORMATS.update({f"{s}{codec}": _OTHER_FORMATS[s] for s in (".json", ".jsonl", ".ndjson")
                       for codec in (".gz", ".bz2", ".zst")})


def output_path(path, name: str, expected: str, writes: str, *, one_file: bool = False) -> str:
    """The path of a job's parquet output as text (else a TypeError saying ``expected``). Refused, naming ``name``
    and saying what bertfeat ``writes`` there: ``-`` (the Unix name of standard output), a name with a CSV suffix
    (parquet bytes under it would be read as CSV, failing or reading garbage) or another data format's (Feather,
    JSON, ORC, Avro, Excel, R's, NumPy's, a pickle: :data:`_OTHER_FORMATS`), a device, named pipe or socket (a rename
    into place would replace it), and with ``one_file`` (the local engine's output) a path ending with a slash,
    which names a folder (``pathlib`` would drop the slash and write a file of the folder's name)."""
    path = path_text(path, name, expected)
    if path == "-":
        raise ValueError(f"{name} '-' (standard output) cannot be written: bertfeat writes {writes}, put in place "
                         "when complete; name the file to write (a file named '-' is ./-).")
    if is_url(path):
        raise ValueError(f"{name} {path!r} is a URL, but bertfeat writes {writes}, with ordinary file calls; pass the "
                         f"path of {_MOUNT}")
    utf8_path(path, name, f"writes {writes},")
    what = _not_a_file(path)
    if what:  # os.replace over it: /dev/null a regular file for the whole machine, run as root
        raise ValueError(f"{name} {path!r} is {what}, not a file: bertfeat writes its output under another name and "
                         "renames it into place, which would replace it; name a file to write (to discard the "
                         "features, one in a folder of mktemp -d).")
    named_csv = next((s for s in CSV_SUFFIXES[::-1] if path.lower().endswith(s)), None)
    other = next(((s, what) for s, what in _OTHER_FORMATS.items() if path.lower().endswith(s)), None)
    if named_csv or other:  # parquet bytes under the name: read_csv, read_feather, a JSON reader fail or read garbage
        suffix, what = (named_csv, "a CSV file") if named_csv else other
        raise ValueError(f"{name} {path!r} is named as {what}, but bertfeat writes {writes}; name it "
                         f"{path[:-len(suffix)]}.parquet and read it with pandas.read_parquet, "
                         "polars.read_parquet or R's arrow::read_parquet.")
    if one_file and path.endswith(tuple({"/", os.sep})):
        raise ValueError(f"{name} {path!r} ends with a slash, naming a folder, but bertfeat writes {writes}; name "
                         f"the file ({path.rstrip('/' + os.sep)}/features.parquet), or write a folder of parquet "
                         "files with engine='ray' or engine='spark' (bertfeat.ray.embed_parquet, "
                         "bertfeat.spark.embed_files).")
    return path


def files_under(folder: Path) -> list[Path]:
    """The files in ``folder`` and its subfolders, symlinked subfolders followed (as a glob of the folder follows
    them, and as a dataset with partitions linked in from another disk needs), each folder read once: a second link
    to a folder already read, or a link back to an ancestor, adds nothing (``Path.rglob`` follows no links, and
    skipped those partitions silently). A subfolder that cannot be listed is refused, not left
    out."""
    def unreadable(exc: OSError):  # os.walk skips a folder it cannot list, silently: part of the input unread
        raise PermissionError(f"input folder {exc.filename!r} cannot be listed ({exc.strerror or exc}): its files "
                              "would be left out of the job; make it readable, or pass a folder or glob without it."
                              ) from exc

    seen, out = set(), []
    for root, dirs, names in os.walk(folder, onerror=unreadable, followlinks=True):
        key = file_key(root)
        if key in seen:
            dirs[:] = []
            continue
        seen.add(key)
        dirs.sort()  # a folder reached by two links is read under the first name in sorted order
        out += [Path(root) / n for n in sorted(names) if os.path.isfile(os.path.join(root, n))
                or _dangling(Path(root) / n)]
    return out


def parquet_under(folder: Path) -> list[Path]:
    """The parquet files a folder input reads (:func:`files_under`), sorted, less the names a dataset's readers
    hide (starting with '.' or '_' below ``folder``)."""
    return sorted(f for f in files_under(folder) if f.name.lower().endswith(PARQUET_SUFFIXES)
                  and not _hidden(f.relative_to(folder).parts))


def _dangling(path: Path) -> bool:
    return os.path.islink(path) and not os.path.exists(path)


def _refuse_dangling(files: list[Path]) -> list[Path]:
    """``files`` less the dangling links among them, refused where one is named as an input file: a partition linked
    in from a disk that is not mounted was left out of the job without a word."""
    for f in files:
        if _dangling(f) and _kind(f):
            raise FileNotFoundError(
                f"input file {str(f)!r} is a symbolic link to {os.readlink(f)!r}, which does not exist (a disk not "
                "mounted, a file moved?): its rows would be left out of the job; mount or restore it, or remove the "
                "link.")
    return [f for f in files if not _dangling(f)]


def _one_name_each(files: list[Path]) -> list[Path]:
    """``files`` (sorted) with a file reached by a second name (a link to it, a linked folder) left out: read twice,
    its rows would be in the output twice."""
    seen, out = set(), []
    for f in files:
        key = file_key(f)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _glob(pattern: str) -> tuple[list[Path], list[Path]]:
    """``(files, folders)`` that ``pattern`` matches, as ``glob.glob(recursive=True)`` matches them, but a ``**``
    reads each folder once per place in the pattern: Python's glob follows a link back to an ancestor round and round
    until the path is too long (each file read once per turn), and with two such links never ends. A file is found
    under every name the pattern matches (a folder reached by a hidden link first, ``.x -> sub``, is still matched as
    ``sub`` by ``**``); :func:`_one_name_each` then keeps one. A folder it matches is read as a folder input is
    (:func:`resolve_input`), as Spark reads it: Spark writes ``features.parquet`` as a folder, so ``data/*.parquet``
    over pandas' files and Spark's folders left the folders' rows out, silently."""
    root = _literal_root(pattern)
    want = Path(pattern).parts[len(root.parts):]
    if "**" not in Path(pattern).parts:
        found = [Path(f) for f in glob.glob(pattern, recursive=True)]
        found = [f for f in found if _matches(f.parts[len(root.parts):], want)]  # a _name only where asked for
        folders = [f for f in found if f.is_dir()]
        return [f for f in found if not f.is_dir() and (f.is_file() or _dangling(f))], folders
    if not root.is_dir():
        return [], []
    # (a folder, how much of the pattern its name has matched): finitely many, each read once, by the first of its
    # names in sorted order (a name sorts after its folder's, so the walk goes in sorted order), as docs/cli.md says
    # and as a folder input and a glob without ** name it; the last pushed first read a linked folder (x -> real) as
    # x, whose files then came after those of w
    seen, out, folders, todo = set(), [], [], [(root.parts, 0, root)]
    while todo:
        _, at, folder = heapq.heappop(todo)
        key = (file_key(folder), at)
        if key in seen:
            continue
        seen.add(key)
        try:
            with os.scandir(folder) as entries:
                names = sorted(e.name for e in entries)
        except OSError as exc:  # a folder the pattern reaches but that cannot be listed: its files unread
            raise PermissionError(f"input folder {str(folder)!r} cannot be listed ({exc.strerror or exc}): its files "
                                  "would be left out of the job; make it readable, or pass a glob without it."
                                  ) from exc
        for q in _skips(want, at):  # a ".." the pattern names (after a "**"): up from here, as glob goes
            if q < len(want) and want[q] == "..":
                if q + 1 < len(want):
                    heapq.heappush(todo, ((folder / "..").parts, q + 1, folder / ".."))
                if len(want) in _skips(want, q + 1):
                    folders.append(folder / "..")
        for name in names:
            path, after = folder / name, _step(want, at, name)
            if path.is_dir():
                for q in after:
                    if q < len(want):
                        heapq.heappush(todo, (path.parts, q, path))
                if any(len(want) in _skips(want, q) for q in after):  # a folder the pattern names, read as a folder
                    folders.append(path)  # input is
            elif (path.is_file() or _dangling(path)) and _file_ends(want, at, name):
                out.append(path)
    return out, folders


def _skips(pattern: tuple, at: int) -> set[int]:
    """The places in ``pattern`` reached from ``at`` matching nothing more: past each ``**`` (zero folders)."""
    reach = {at}
    while at < len(pattern) and pattern[at] == "**":
        at += 1
        reach.add(at)
    return reach


def _file_ends(pattern: tuple, at: int, name: str) -> bool:
    """Whether a file ``name``, met at place ``at`` in ``pattern``, is a match: taken by the pattern's last part, or
    by a ``**`` with only ``**`` after it. glob matches a part that is not the last with folders only, so in
    ``exports/*/**`` the ``*`` takes no file (``exports/all.parquet`` beside the subfolders is no match)."""
    for p in _skips(pattern, at) - {len(pattern)}:
        if pattern[p] == "**":
            if len(pattern) in _skips(pattern, p) and p in _step(pattern, p, name):  # a trailing ** takes it
                return True
        elif p == len(pattern) - 1 and p + 1 in _step(pattern, p, name):  # the last part matches it
            return True
    return False


def _step(pattern: tuple, at: int, name: str) -> set[int]:
    """The places in ``pattern`` reached from ``at`` by one more path part ``name``, as glob matches: ``**`` any
    number of parts, and a name starting with a dot, or with ``_`` (hidden from a dataset's readers, as in a folder
    input), only by a pattern part starting with it, or naming it without a wildcard."""
    import fnmatch

    hidden, reach = name.startswith(HIDDEN_PREFIXES), set()
    for p in _skips(pattern, at):
        if p == len(pattern):
            continue
        head = pattern[p]
        if head == "**":
            if not hidden:
                reach.add(p)
        elif not (hidden and not head.startswith(name[0]) and is_pattern(head)) and fnmatch.fnmatchcase(name, head):
            reach.add(p + 1)
    return reach


# Names that readers of a parquet dataset (pyarrow.dataset, pandas.read_parquet, Spark, Dask) leave out of a folder:
# a failed Spark attempt's copies under _temporary/, Delta's _delta_log/, _metadata, a tool's .part-0.parquet temp.
HIDDEN_PREFIXES = (".", "_")


def _hidden(parts) -> bool:
    """Whether a path below an input folder (its ``parts`` there) is hidden from a dataset's readers."""
    return any(part.startswith(HIDDEN_PREFIXES) for part in parts)


def _matches(parts: tuple, pattern: tuple) -> bool:
    """Whether a path's ``parts`` match a glob's ``pattern`` parts, by the rule of :func:`_step`."""
    states = {0}
    for name in parts:
        states = {q for at in states for q in _step(pattern, at, name)}
    return any(len(pattern) in _skips(pattern, q) for q in states)


def resolve_input(path, exclude=()) -> tuple[str, list[Path]]:
    """``("csv" | "parquet", files)`` for a CSV file, a parquet file, or a directory or glob of parquet files.

    ``exclude``: the job's own output paths (``--out`` and its parts folder). A folder or glob leaves out what lies
    at or under them, so an output written inside the input folder is never read back as input on a resume or a
    rerun; an excluded path that is the input folder itself (or holds it) leaves out nothing, and
    :func:`bertfeat.output.check_output` refuses that layout."""
    path = input_path(path)
    p = Path(path)
    wildcard = is_pattern(path)
    if wildcard or p.is_dir():
        if wildcard:
            files, folders = _glob(path)
            _refuse_csv_in_matched(path, folders, files, exclude)
            files = sorted(files + [f for folder in folders for f in parquet_under(folder)])
        else:
            files = parquet_under(p)
        # the job's own output first: a linked --out in the input folder dangles until the first run writes it
        matched, files = files, _leave_out(files, exclude, _literal_root(path) if wildcard else p)
        files = _one_name_each(_refuse_dangling(files))
        if not files and wildcard:
            own = sorted(str(f) for f in set(matched) - set(files))
            raise FileNotFoundError(f"input {path!r} matches no files" + (
                f" but the job's own output {own[:5]}, which is never read as input." if own else _braces(path)))
        if not files:
            raise FileNotFoundError(_no_parquet(path, p, exclude))
        if not wildcard:
            _refuse_csv_beside(path, p, exclude)
    elif p.is_file():
        files = [p]
    elif p.exists():  # a named pipe, /dev/stdin
        raise ValueError(f"input {path!r} is not a file or a folder (a pipe or a device): bertfeat reads its input "
                         "more than once and a rerun resumes from it, so write the data to a file first.")
    else:
        raise FileNotFoundError(f"input {path!r} does not exist.")
    kinds = {_kind(f) for f in files}
    if kinds == {"csv"} and len(files) == 1:
        return "csv", files
    if kinds == {"parquet"}:  # a CSV file is opened by Python, which takes any name
        for f in files:
            utf8_path(str(f), "input file", "reads parquet files")
        return "parquet", files
    hint = _ONE_CSV + "." if kinds == {"csv"} else _other_suffix(files[0]) if len(files) == 1 else _unmarked(files)
    raise ValueError(
        f"input {path!r}: expected one CSV file ({', '.join(CSV_SUFFIXES)}) or parquet files "
        f"({', '.join(PARQUET_SUFFIXES)}), got {sorted(str(f.name) for f in files)[:5]}"
        + (f"; {hint}" if hint else ".")
    )


_ARCHIVES = {".xz": "xz -d", ".lz4": "lz4 -d", ".lzma": "xz -d", ".z": "uncompress", ".7z": "7z x"}


def _is_parquet(path: Path) -> bool:
    """Whether ``path`` begins as a parquet file does (``PAR1``), whatever its name."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def _unmarked(files: list[Path]) -> str | None:
    """What to do where the files of a glob without a parquet or CSV suffix are parquet files (Hive's 000000_0)."""
    unmarked = [f for f in files if _kind(f) is None]
    if not unmarked or not all(map(_is_parquet, unmarked)):
        return None
    return ("those without a parquet suffix are parquet files (their first bytes say so; Hive and Impala name them "
            f"so): rename them with one ({unmarked[0].name}.parquet).")


def _other_suffix(path: Path) -> str | None:
    """What to do with a file whose suffix bertfeat does not read, where its suffix or its first bytes say: a
    tab-separated export named .tab or .txt, an xz or zip download, an Excel workbook, parquet without its suffix
    (Hive's 000000_0)."""
    name = path.name
    if _is_parquet(path):
        return f"it is a parquet file (its first bytes say so): name it {name}.parquet."
    lower = name.lower()
    stem, suffix = os.path.splitext(name)
    if lower.endswith((".tab", ".txt", ".dat")):
        wide = _wide_text(path)
        if wide:  # Excel's "Unicode Text": renamed .tsv, it would be refused again as UTF-16
            return wide
        return (f"if it is text separated by tabs, name it {stem}.tsv (or by commas, {stem}.csv); if it holds one text "
                f"a line and no header, put one first and read it without quoting: (echo text; cat {name}) > "
                f"{stem}.tsv, then pass text_cols='text' and quoting='none'.")
    if suffix.lower() in _ARCHIVES:
        return (f"decompress it ({_ARCHIVES[suffix.lower()]}), or compress it again as {stem}.gz, .bz2 or .zst."
                if stem.lower().endswith((".csv", ".tsv")) else f"decompress it ({_ARCHIVES[suffix.lower()]}).")
    if lower.endswith(".zip"):
        return "unzip it and name the CSV file, or the folder of parquet files, it holds."
    if _codec(Path(name)):
        return f"if it is a compressed CSV file, name it {stem}.csv{suffix} (or .tsv{suffix})."
    if lower.endswith((".xlsx", ".xlsm", ".xls")):
        return f'save it from Excel as "CSV UTF-8" ({stem}.csv).'
    from bertfeat.sniff import HEAD, other_format

    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD)
    except OSError:
        head = b""
    said = other_format(path, head, by_suffix=True)  # JSON Lines, Arrow/Feather, ORC, Avro: how to convert it
    return "it " + said[len(f"{path} "):] if said else None


def _wide_text(path: Path) -> str | None:
    """What to do with a text file bertfeat would read once renamed, but that is UTF-16 or UTF-32 (Excel's "Unicode
    Text" is UTF-16 separated by tabs, saved as .txt): convert it, to a name it reads; None for any other file."""
    from bertfeat.sniff import HEAD, wide_text

    try:
        with open(path, "rb") as fh:
            wide = wide_text(path, fh.read(HEAD))
    except OSError:
        return None
    return None if wide is None else f"it is {wide[0]}, and bertfeat reads CSV files as UTF-8: {wide[1]}"


def _braces(pattern: str) -> str:
    """The end of the refusal of a glob that matches nothing: why, where it holds bash's braces (``{a,b}``)."""
    if not re.search(r"\{[^{}]*,[^{}]*\}", pattern):
        return "."
    return ("; braces ({a,b}) are not glob syntax here (a shell expands them in an unquoted word; bertfeat, like "
            "Python's glob, reads them as written): pass a pattern that matches both (a folder's name by '*' or "
            "'[ab]'), or their folder.")


_ONE_CSV = "embed each CSV file on its own, or join them into one CSV file (one header) first"


def _csvs_under(folder: Path, exclude, root: Path) -> list[Path]:
    """The CSV files a folder input would leave out: those under ``folder`` not hidden, nor the job's own output."""
    csvs = [f for f in files_under(folder) if _kind(f) == "csv" and not _hidden(f.relative_to(folder).parts)]
    return _leave_out(csvs, exclude, root)


def _refuse_csv_in_matched(pattern: str, folders: list[Path], matched: list[Path], exclude) -> None:
    """Refuse a glob that matches a folder holding CSV files (beside parquet files or not), as a folder input holding
    them is refused (:func:`_refuse_csv_beside`): the folder is read as its parquet files, so the CSV files' rows
    would be left out of the job, or the glob said to match no files at all. A CSV file the pattern matches itself
    is refused as one of mixed kinds, as before."""
    named = {os.path.realpath(f) for f in matched}
    for folder in sorted(folders):
        csvs = [f for f in _csvs_under(folder, exclude, _literal_root(pattern)) if os.path.realpath(f) not in named]
        if csvs:
            names = [f.relative_to(folder).as_posix() for f in csvs]
            raise ValueError(
                f"input {pattern!r} matches the folder {str(folder)!r}, which holds {len(names)} CSV file(s) "
                f"{names[:5]}: a folder a glob matches is read as its parquet files, as a folder input is, so their "
                "rows would be left out of the job. Convert them to parquet in the folder "
                "(pandas.read_csv(f).to_parquet(...)), move them out, or pass a glob that matches the parquet files "
                "themselves, not the folder.")


def _refuse_csv_beside(path: str, folder: Path, exclude) -> None:
    """Refuse a folder input holding CSV files beside its parquet files: a folder is read as its parquet files, so
    the CSV files' rows (one month exported another way) would be left out of the job without a word (pyarrow,
    pandas and Spark refuse such a folder too, failing on the CSV file as parquet)."""
    csvs = _csvs_under(folder, exclude, folder)
    if csvs:
        names = [f.relative_to(folder).as_posix() for f in csvs]
        raise ValueError(
            f"input directory {path!r} holds parquet files and {len(names)} CSV file(s) {names[:5]}, which a folder "
            "input does not read: their rows would be left out of the job. Convert them to parquet in the folder "
            "(pandas.read_csv(f).to_parquet(...)), move them out, or pass a glob of the parquet files "
            f"({os.path.join(path, '**', '*.parquet')!r}) to read those alone.")


def _no_parquet(path: str, folder: Path, exclude=()) -> str:
    """The refusal of a folder with no parquet files to read, saying what it holds instead: the job's own output
    (never read as input, and not to be renamed into it), hidden parquet files, or CSV files."""
    under = files_under(folder)
    parquet = [f for f in under if _kind(f) == "parquet"]
    others = set(_leave_out(parquet, exclude, folder))
    own = [f.relative_to(folder).as_posix() for f in parquet if f not in others]
    csvs = sorted(f.name for f in _leave_out([f for f in under if _kind(f) == "csv"], exclude, folder))
    said = f"input directory {path!r} holds no parquet files ({', '.join(PARQUET_SUFFIXES)})"
    but = " but"
    if own:
        said, but = f"{said} but the job's own output {own[:5]}, which is never read as input", ", and"
    hidden = [f.relative_to(folder).as_posix() for f in parquet if f in others]
    if hidden:  # every parquet file it holds, less the job's own output, lies under a name starting with '.' or '_'
        return (f"{said}{but} hidden ones {hidden[:5]}: names starting with '.' or '_' (Spark's _temporary, a "
                "tool's temporary files) are left out of a folder, as pyarrow, pandas and Spark leave them out; "
                "rename them, or name them in a glob, where a pattern part starting with '.' or '_' matches them "
                "(_*.parquet).")
    unmarked = [f for f in under if _kind(f) is None and not _hidden(f.relative_to(folder).parts) and _is_parquet(f)]
    if unmarked and not csvs:
        names = [f.relative_to(folder).as_posix() for f in unmarked]
        return (f"{said}{but} {len(names)} file(s) of parquet without such a suffix {names[:5]} (as Hive and Impala "
                "name them): bertfeat tells parquet by its suffix: rename them with one "
                f"({names[0]}.parquet), or link them under such names in another folder and pass that.")
    if not csvs:
        return f"{said}; pass a CSV or parquet file, or a folder or glob of parquet files."
    return (f"{said}{but} {len(csvs)} CSV file(s) {csvs[:5]}: a folder or glob is read as parquet files, a CSV as "
            f"one file; {_ONE_CSV}.")


def input_found(path) -> bool:
    """Whether ``path`` names something :func:`resolve_input` reads: a file or folder, or a glob that matches a file or
    folder by the rule of :func:`resolve_input` (``**`` any depth of folders, ``_``-prefixed names hidden), for R's
    pre-check of ``bf_embed_file()``'s input, so one rule says what a glob matches (R's ``Sys.glob()`` has no ``**``).
    A folder the walk cannot read, and a URL (``s3://...``, which the command refuses saying how to reach it), are
    the command's to name: found."""
    path = str(path)
    if is_url(path):
        return True
    if not is_pattern(path):
        return os.path.exists(path)
    try:
        files, folders = _glob(path)
    except OSError:
        return True
    return bool(files or folders)


def is_pattern(path: str) -> bool:
    """Whether ``path`` is a glob: it holds ``*``, ``?`` or ``[`` and names no file or folder. A name that exists is
    read as named: ``reviews[1].csv`` taken for a pattern would read ``reviews1.csv``, another file."""
    return any(ch in path for ch in "*?[") and not os.path.lexists(path)


def _literal_root(pattern: str) -> Path:
    """The folder a glob pattern searches: its path up to the first part with a wildcard."""
    parts = []
    for part in Path(pattern).parts:
        if any(ch in part for ch in "*?["):
            break
        parts.append(part)
    return Path(*parts) if parts else Path(".")


def file_id(st: os.stat_result) -> tuple[int, int] | None:
    """The file ``st`` is ``os.stat``'s answer for, ``(st_dev, st_ino)``; None where the file system gives no file ids:
    there ``st_ino`` is 0 for every file (on Windows, a drive of sshfs-win or Google Drive for desktop; Python's docs
    say an ``st_ino`` identifies a file only "if non-zero", python/cpython#78116), and every file would be one."""
    return (st.st_dev, st.st_ino) if st.st_ino else None


def file_key(path) -> tuple:
    """What tells the file or folder at ``path`` apart from others reached by other names (links): its
    :func:`file_id`, or where the file system gives none, its real path (the links resolved)."""
    return file_id(os.stat(path)) or ("path", os.path.realpath(path))


class SameFiles:
    """Whether two resolved paths are one file: by name, and where the second exists by the file it is, as a file
    system that ignores case (macOS's, Windows') takes ``Data.parquet`` for ``data.parquet``, and ``resolve()``
    keeps the case it was given. Each path is looked at once (a glob's files share their folders)."""

    def __init__(self):
        self._ids: dict[Path, tuple | None] = {}

    def _id(self, p: Path):
        if p not in self._ids:
            try:
                self._ids[p] = file_id(os.stat(p))
            except (OSError, ValueError):
                self._ids[p] = None
        return self._ids[p]

    def __call__(self, a: Path, b: Path) -> bool:
        return a == b or (self._id(b) is not None and self._id(a) == self._id(b))

    def within(self, f: Path, folder: Path) -> bool:
        """Whether ``folder`` holds ``f`` (both resolved), at any depth."""
        return any(self(d, folder) for d in f.parents)


def _leave_out(files: list[Path], exclude, root: Path) -> list[Path]:
    root, same = root.resolve(), SameFiles()
    dropped = [e for e in (Path(x).resolve() for x in exclude) if not same(root, e) and not same.within(root, e)]
    return [f for f in files if not any(same(f.resolve(), e) or same.within(f.resolve(), e) for e in dropped)]


def _kind(f: Path) -> str | None:
    name = f.name.lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    return None


def _codec(path: Path) -> str | None:
    name = path.name.lower()
    for suffix, codec in ((".gz", "gzip"), (".bz2", "bz2"), (".zst", "zstd")):
        if name.endswith(suffix):
            return codec
    return None
