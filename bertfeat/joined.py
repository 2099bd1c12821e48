"""CSV files joined with ``cat``: each file's header is left in the middle of the whole, as a line of data.

Read as a row, a repeated header is embedded as a text (its text column's name, ``text``) beside an id that is the
id column's name, without a word; under ``--infer-types`` it fails a numeric column's type, with advice about
types. Files whose columns came in other orders leave the header's names in another order, and every row after it
is read into the wrong columns. Files exported for Excel leave their first line, ``sep=;``, there too: read as a
row of a name ``sep=`` and an empty text, it stopped a job as a missing text with no word of why. :func:`may_hold_header` tells, from the columns a job reads, whether a batch may
hold such a row (cheap, so every batch is asked); :func:`repeated_header` re-reads the file to make sure (the whole
record, every column, is the header's names), and :func:`refusal` says what to do.
"""

from __future__ import annotations

import csv

import pyarrow as pa
import pyarrow.compute as pc

BOM = "\ufeff"  # a joined file's own byte order mark (Excel's "CSV UTF-8") stays before its header's first name
_AROUND = " \t" + BOM  # what a name may have around it and still be the header's: spaces, a tab, that mark


def name_key(name: str) -> str:
    """A header's name as a repeated header may write it: another file's export says ``Text`` or ``id , text``."""
    return name.strip(_AROUND).lower()


def may_hold_header(batch: pa.RecordBatch, header: list[str]) -> bool:
    """Whether some row of ``batch`` (the columns a job reads, of a CSV file whose header is ``header``) holds a
    name of the header in every column: the header repeated, maybe in another order, or not (a row of other
    columns that differ), in any case and with spaces around (:func:`name_key`); a missing value counts as an empty
    name (pandas writes its index's name empty). Never in
    a file of one column, whose every line is a whole record: there a text that is the column's name is a text."""
    if len(header) < 2:  # a file of one column: a text that is its name cannot be told from a header
        return False
    keys = {name_key(n) for n in header}
    names = pa.array(sorted(keys), pa.string())
    rows = None
    for column in batch.columns:
        if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
            return False  # a number, a date: no name (under infer_types a repeated header fails the type instead)
        named = pc.fill_null(pc.is_in(pc.utf8_lower(pc.utf8_trim(column, characters=_AROUND)), value_set=names), False)
        if "" in keys:
            named = pc.or_(named, pc.is_null(column))
        rows = named if rows is None else pc.and_(rows, named)
    return rows is not None and pc.any(rows).as_py() is True


def sep_record(row: list[str], delimiter: str) -> str | None:
    """The line ``sep=;`` (Excel's delimiter line, a byte order mark before it or not) that the record ``row`` was
    read from, or None: it reads as ``['sep=', '']`` where ``;`` is the delimiter, else as ``['sep=;']``."""
    first = row[0].removeprefix(BOM) if row else ""
    if len(row) > 2 or not first.startswith("sep=") or len(first) > 5 or any(row[1:]):
        return None
    if len(first) == 5:
        return first if len(row) == 1 else None
    return first + delimiter if len(row) == 2 else None


def repeated_header(records, header: list[str]) -> tuple[int, list[str]] | None:
    """``(line, names)`` of the first record after the header that holds the header's names, each once (in its order
    or another; in any case, spaces around them or not: :func:`name_key`), or of an Excel ``sep=;`` line
    (:func:`sep_record`; ``names`` is then that line alone), or None. ``records``: Python's ``csv.reader`` over the
    file, at the header's end."""
    if len(header) < 2:
        return None
    wanted = sorted(map(name_key, header))
    last_end = records.line_num
    for row in records:
        excel = sep_record(row, records.dialect.delimiter)
        if excel:
            return last_end + 1, [excel]
        if row and len(row) == len(header):
            names = [row[0].removeprefix(BOM), *row[1:]]
            if sorted(map(name_key, names)) == wanted:
                return last_end + 1, names  # the line where the record starts, blank lines before it passed
        last_end = records.line_num
    return None


def refusal(path, line: int, names: list[str], header: list[str]) -> str:
    """What to tell a user whose CSV file ``path`` repeats its ``header`` as ``names`` at ``line``, or Excel's
    ``sep=;`` line (``names`` that line alone)."""
    if len(names) == 1 and len(header) > 1:
        return (f"{path} holds Excel's delimiter line '{names[0]}' again at line {line} (as joining with cat files "
                "exported for Excel leaves each file's first line), which would be read as a row of data (a missing "
                "text), the header after it too: join the files again keeping the first one's 'sep=' line and "
                "header only (awk 'FNR > 2 || NR <= 2' a.csv b.csv > all.csv, where each file starts with both), or "
                "remove that line and the header after it.")
    if [name_key(n) for n in names] == [name_key(n) for n in header]:
        otherwise = "" if names == header else f", written otherwise ({names}, where the header has {header})"
        return (f"{path} repeats its header at line {line}{otherwise} (as joining CSV files with cat leaves each file's header), "
                "which would be read as a row of data: join the files again keeping the first one's header only "
                "(awk 'FNR > 1 || NR == 1' a.csv b.csv > all.csv), or remove that line and any other repeating the "
                "header.")
    return (f"{path} repeats its header's names in another order at line {line} ({names}, where the header has "
            f"{header}), as joining with cat files whose columns come in other orders leaves them: every row after "
            "it is in that line's order, and would be read into the wrong columns. Join the files by column name "
            "instead (pandas.concat of each file's pandas.read_csv, then to_csv), or put their columns in one order "
            "first.")


def scan(opener, dialect: dict, sep_line: bool, lines=lambda fh: fh, field=lambda f: f):
    """:func:`repeated_header` of the CSV file ``opener()`` opens as text (``newline=""``), read by Python's csv module
    with ``dialect`` (its delimiter, how it quotes: ``csv.reader``'s keyword arguments), whose first line is an
    Excel ``sep=`` line where ``sep_line``; ``lines``/``field`` escape and unescape what Python's csv module cannot
    read (NUL before 3.11). None where the file holds no such record, or Python's csv cannot read it to the end (the
    read proper names that problem)."""
    try:
        with opener() as fh:
            records = csv.reader(lines(fh), **dialect)
            if sep_line:
                next(records, None)
            for first in records:
                if first:
                    break
            else:
                return None
            found = repeated_header(records, first)
    except (csv.Error, UnicodeDecodeError):
        return None
    if found is None:
        return None
    line, names = found
    return line, [field(n) for n in names]
