"""What a data file's first bytes say it is, where it is not what its name says: a CSV file in UTF-16 or UTF-32, a
compressed file without its suffix or with another's, an archive, a workbook, parquet under a CSV name, text or a
compressed file under a parquet name, a Git LFS pointer or a web page in place of the data. Each refusal says what
the file is and what to do (rename it, convert it, decompress it, fetch it); read only where a file is first opened,
or where it cannot be read."""

from __future__ import annotations

import os
import re
from pathlib import Path

HEAD = 1024  # the bytes read to judge a file by its start: a UTF-16 file's first line, at 2 bytes a character


def wide_encoding(head: bytes) -> tuple[str, str] | None:
    """``(iconv's name, how it was seen)`` of the encoding of a text file that begins with ``head`` where it is UTF-16
    or UTF-32: by a byte order mark (Excel's "Unicode Text" and Windows PowerShell's ``Out-File`` and ``>`` write
    UTF-16 with one), or for UTF-16 without one by a 0 in every other byte (no UTF-8 text has that: its NULs are
    characters, not half of each); None otherwise."""
    for marks, name in (((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"), "UTF-32"), ((b"\xff\xfe", b"\xfe\xff"), "UTF-16")):
        if head.startswith(marks):
            return name.lower(), f"{name} (it begins with a {name} byte order mark)"
    pairs = len(head) // 2
    for order, zeros, others in (("le", head[1::2], head[0::2]), ("be", head[0::2], head[1::2])):
        if pairs >= 4 and zeros[:pairs].count(0) >= 0.9 * pairs and others[:pairs].count(0) <= 0.1 * pairs:
            return f"utf-16{order}", "UTF-16 without a byte order mark (every other byte is 0)"
    return None


_DECOMPRESS = {"gzip": "gzip -dc", "bz2": "bzip2 -dc", "zstd": "zstd -dc"}


def convert_it(path, encoding: str, head: bytes) -> str:
    """How to convert the file ``path``, in ``encoding`` and beginning with ``head``: the shell command that writes
    it (decompressed by its suffix) beside it as a UTF-8 CSV file bertfeat reads, named ``.tsv`` where its first line
    holds a tab (Excel's "Unicode Text" is separated by tabs, and a ``.txt`` name is read by no one), and that
    file's name."""
    import shlex

    from bertfeat.sources import _codec

    given = os.fsdecode(path)
    folder, file_name = os.path.split(given)
    outer = _codec(Path(file_name))
    inner = file_name[:file_name.rfind(".")] if outer else file_name
    stem, suffix = os.path.splitext(inner)
    first = head.decode(encoding, "ignore").lstrip("\ufeff")
    tabs = "\t" in first.splitlines()[0] if first else False
    out = stem + (".tsv" if tabs or suffix.lower() == ".tsv" else ".csv")
    if out == file_name:  # never the input's own name: the shell would empty it before iconv reads it
        out = f"{stem}-utf8{suffix}"
    out = os.path.join(folder, out)
    convert = f"iconv -f {encoding} -t utf-8"
    command = (f"{_DECOMPRESS[outer]} {shlex.quote(given)} | {convert} > {shlex.quote(out)}" if outer
               else f"{convert} {shlex.quote(given)} > {shlex.quote(out)}")
    return f"convert it first ({command}) and pass {shlex.quote(out)}."


def wide_text(path, head: bytes) -> tuple[str, str] | None:
    """``(how it was seen, how to convert it)`` for the text file ``path`` beginning with ``head`` (its first bytes,
    64 or more: the first 64 are judged, the rest show its first line) where it is UTF-16 or UTF-32
    (:func:`wide_encoding`, :func:`convert_it`); None otherwise. A CSV file's refusal (:func:`not_csv_text`) and a
    ``.txt`` input's (:func:`bertfeat.sources._other_suffix`) both say it."""
    found = wide_encoding(head[:64])
    if found is None:
        return None
    encoding, seen = found
    return seen, convert_it(path, encoding, head)


# The first bytes of files users name as CSV that hold no CSV text: a download saved without its .gz, a workbook
# renamed .csv. Read as text, each was "not UTF-8 ... iconv -f cp1252", which turns them into garbage.
_COMPRESSED = [(re.compile(rb"\x1f\x8b"), "gzip", ".gz"),
               (re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)"), "bz2", ".bz2"),
               (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd", ".zst")]
_SEEN = "its first bytes say so"


_LFS = re.compile(rb"version https://(git-lfs\.github\.com|hawser\.github\.com)/spec/v1\n")
_LFS_SIZE = re.compile(rb"\nsize (\d+)")
_HTML = re.compile(rb"(\xef\xbb\xbf)?\s*<(!doctype\s+html|html)[\s>]", re.IGNORECASE)


def not_data(path, head: bytes, kind: str = "CSV text") -> str | None:
    """What to tell a user whose data file ``path`` (its first bytes as stored, ``head``) holds something in its
    place: a Git LFS pointer (a repository cloned without Git LFS: the data was never fetched), or a web page (a
    download that got a sign-in, error or confirmation page); None otherwise."""
    if _LFS.match(head):
        size = _LFS_SIZE.search(head)
        of = f" ({int(size[1]):,} bytes)" if size else ""
        return (f"{path} is a Git LFS pointer ({_SEEN}), not the data it stands for{of}: fetch the data (git lfs "
                "pull, after git lfs install where Git LFS is new), then run again.")
    if _HTML.match(head):
        return (f"{path} is a web page (HTML: {_SEEN}), not {kind}: the download got a page (a sign-in, error or "
                "confirmation page) instead of the file; download the file itself.")
    return None


_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")  # in no text file (ESC aside: terminal colours)


def not_its_compression(path, raw: bytes) -> str | None:
    """What to tell a user whose compressed CSV ``path`` (by its suffix) cannot be decompressed, where its first
    bytes ``raw`` (as stored) say why: another compression's data (rename it), or text, which a browser or ``curl
    --compressed`` leaves under a ``.gz`` name when it decompresses a download sent gzip-encoded (drop the suffix);
    None otherwise (the data is of its compression, damaged, or says nothing)."""
    from bertfeat.sources import _codec

    file_name = os.path.basename(os.fsdecode(path))
    codec = _codec(Path(file_name))
    if codec is None:
        return None
    inner = file_name[:file_name.rfind(".")]
    said = not_data(path, raw)
    if said:
        return said
    for magic, other, suffix in _COMPRESSED:
        if magic.match(raw):
            if other == codec:
                return None
            return f"{path} is {other} data ({_SEEN}), not {codec}: rename it {inner}{suffix}."
    if raw and (wide_encoding(raw[:64]) or not _CONTROL.search(raw[:64])):
        return (f"{path} is not {codec}-compressed: its first bytes are text (a download that a browser or curl "
                f"--compressed decompressed keeps its name); rename it {inner}.")
    return None


def not_csv_text(path, head: bytes) -> str | None:
    """What to tell a user whose CSV ``path`` (its decompressed ``head``: the first bytes, 64 or more, of which the
    first 64 are judged and the rest show a UTF-16 file's first line) is no UTF-8 text at all: UTF-16 or UTF-32
    (:func:`wide_encoding`), or a compressed file, an archive, a workbook or parquet by its first bytes; None
    otherwise."""
    from bertfeat.sources import CSV_SUFFIXES, _codec

    file_name = os.path.basename(os.fsdecode(path))
    outer = _codec(Path(file_name))
    wide = wide_text(path, head)
    if wide:
        return f"{path} is {wide[0]}, not UTF-8: bertfeat reads CSV files as UTF-8: {wide[1]}"
    said = not_data(path, head)
    if said:
        return said
    head = head[:64]
    for magic, codec, suffix in _COMPRESSED:
        if magic.match(head):
            if outer:
                return (f"{path} is compressed twice ({codec} data in its {outer} compression; {_SEEN}): decompress "
                        "it, then compress it once.")
            return (f"{path} is compressed ({codec}: {_SEEN}), but its name does not end with {suffix}, so it was "
                    f"read as text: rename it {file_name}{suffix}.")
    if head.startswith(b"\xfd7zXZ\x00"):
        return (f"{path} is xz-compressed ({_SEEN}), which bertfeat does not read: decompress it (xz -d), or "
                "compress it again as .gz, .bz2 or .zst.")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return (f"{path} is a zip archive ({_SEEN}; an Excel .xlsx workbook is one too), not CSV text: unzip it, or "
                'save the workbook from Excel as "CSV UTF-8".')
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return f'{path} is an Excel .xls workbook ({_SEEN}), not CSV text: save it from Excel as "CSV UTF-8".'
    if head.startswith(b"PAR1") and any(b < 0x09 for b in head[4:]):
        stem = next((file_name[:-len(s)] for s in CSV_SUFFIXES[::-1] if file_name.lower().endswith(s)), file_name)
        if outer:
            return (f"{path} is a parquet file compressed as {outer} ({_SEEN}), not CSV text: decompress it and name "
                    f"it {stem}.parquet.")
        return f"{path} is a parquet file ({_SEEN}), not CSV text: name it {stem}.parquet."
    return other_format(path, head)  # Arrow, ORC, Avro, JSON: read as a header of garbage or of '{"id": 1'


def not_parquet(path, head: bytes) -> str | None:
    """What to tell a user whose parquet file ``path`` pyarrow cannot read, where its first bytes ``head`` (as
    stored) say why: a Git LFS pointer or a web page (:func:`not_data`), a compressed file (a ``.parquet.gz``
    saved without its suffix), or text (``df.to_csv("out.parquet")``); None otherwise (parquet, damaged or cut
    short, or bytes that say nothing)."""
    import shlex

    said = not_data(path, head, "parquet")
    if said or head.startswith(b"PAR1"):
        return said
    given = os.fsdecode(path)
    folder, name = os.path.split(given)
    stem, suffix = os.path.splitext(name)
    for magic, codec, _ in _COMPRESSED:
        if magic.match(head):
            plain = os.path.join(folder, f"{stem}.plain{suffix}")
            return (f"{path} is compressed ({codec}: {_SEEN}): decompress it ({_DECOMPRESS[codec]} "
                    f"{shlex.quote(given)} > {shlex.quote(plain)}), and pass that.")
    said = other_format(path, head)
    if said:
        return said
    if head and (wide_encoding(head[:64]) or not _CONTROL.search(head[:64])):
        return f"{path} is text, not parquet ({_SEEN}): if it is CSV, name it {stem}.csv (or {stem}.tsv)."
    return None


# Formats users hand over in hope or by mistake, by their first bytes: each converted to parquet, which bertfeat reads.
_FORMATS = [(re.compile(rb"ARROW1"), "an Arrow IPC (Feather) file", "pyarrow.feather", "read_table({src})"),
            (re.compile(rb"FEA1"), "a Feather (version 1) file", "pyarrow.feather", "read_table({src})"),
            (re.compile(rb"ORC"), "an ORC file", "pyarrow.orc", "read_table({src})"),
            (re.compile(rb"(\xef\xbb\xbf)?\s*\[\s*\{"), "JSON (an array of records)", "pandas",
             "Table.from_pandas(m.read_json({src}), preserve_index=False)"),
            (re.compile(rb"(\xef\xbb\xbf)?\s*\{\s*\""), "JSON Lines (one record a line)", "pyarrow.json",
             "read_json({src})")]
_BY_SUFFIX = {".arrow": 0, ".feather": 0, ".ipc": 0, ".orc": 2, ".json": 3, ".jsonl": 4, ".ndjson": 4}


def other_format(path, head: bytes, by_suffix: bool = False) -> str | None:
    """What to tell a user whose input ``path`` (its first bytes as stored, ``head``) is a data file of a format
    bertfeat does not read, by its first bytes (or, with ``by_suffix``, where they say nothing, by its suffix): an
    Arrow IPC (Feather) file, ORC, Avro, JSON or JSON Lines: what it is, and the command that converts it to parquet;
    None otherwise."""
    import json
    import shlex

    given = os.fsdecode(path)
    stem = os.path.splitext(given)[0]
    seen = f" ({_SEEN})"
    if head.startswith(b"Obj\x01") or (by_suffix and given.lower().endswith(".avro")):
        seen = seen if head.startswith(b"Obj\x01") else ""
        return (f"{path} is an Avro file, which bertfeat does not read{seen}: convert it to parquet first (with "
                "Spark, spark.read.format('avro').load(...).write.parquet(...), or with fastavro and pandas), and "
                "pass the parquet file.")
    found = next((f for f in _FORMATS if f[0].match(head)), None)
    if found is None and by_suffix:
        at = _BY_SUFFIX.get(os.path.splitext(given)[1].lower())
        found, seen = (None, "") if at is None else (_FORMATS[at], "")
    if found is None:
        return None
    _, what, module, read = found
    out = stem + ".parquet" if not given.lower().endswith(".parquet") else stem + ".converted.parquet"
    code = (f"import {module} as m, pyarrow as pa, pyarrow.parquet as pq; "
            f"pq.write_table({'pa.' if module == 'pandas' else 'm.'}{read.format(src=json.dumps(given))}, "
            f"{json.dumps(out)})")
    return (f"{path} is {what}, which bertfeat does not read{seen}: convert it to parquet first (python -c "
            f"{shlex.quote(code)}) and pass {shlex.quote(out)}.")
