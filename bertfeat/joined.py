"""CSV files joined with ``cat``: each file's header is left in the middle of the whole, as a line of data.

Read as a row, a repeated header is embedded as a text (its text column's name, ``text``) beside an id that is the
id column's name, without a word; under ``--infer-types`` it fails a numeric column's type, with advice about
types. Files whose columns came in other orders leave the header's names in another order, and every row after it
is read into the wrong columns. Files exported for Excel leave their first line, ``sep=;``, there too: read as a
row of a name ``sep=`` and an empty text, it stopped a job as a missing text with no word of why. :func:`may_hold_header` tells, from the columns a job reads, whether a batch may
hold such a row (cheap, so every batch is asked); a :class:`Watch` re-reads the file to make sure (the whole
record, every column, is the header's names), as far as the rows read and on from there, and :func:`refusal` says
what to do.
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


class Watch:
    """The records of a CSV file read by Python's csv module, to make sure of a row that may repeat its header, as
    far as the rows a reader has delivered and on from there when asked of more rows: a text that is a column's name
    (``ID``) early in a file made sure of by reading the whole file, once, 5M short rows read in 7.7 s instead of
    0.99 s. ``opener()`` opens the file as text (``newline=""``), read with ``dialect`` (its delimiter, how it quotes:
    ``csv.reader``'s keyword arguments), whose first line is an Excel ``sep=`` line where ``sep_line``;
    ``lines``/``field`` escape and unescape what Python's csv module cannot read (NUL before 3.11). The caller
    lifts Python's csv field limit around :meth:`until` (pyarrow reads longer fields)."""

    def __init__(self, opener, dialect: dict, sep_line: bool, lines=lambda fh: fh, field=lambda f: f):
        self._opener, self._dialect, self._sep_line, self._lines, self._field = opener, dialect, sep_line, lines, field
        self._fh = self._records = None
        self.rows = 0  # records read past the header; blank lines are none, as they are no row of pyarrow's
        self.done = False  # the whole file read, or a record found, or Python's csv cannot read on

    def until(self, rows: int | None) -> tuple[int, list[str]] | None:
        """``(line, names)`` of the first record among the file's first ``rows`` rows (every row where None) that
        holds the header's names, each once (in its order or another; in any case, spaces around them or not:
        :func:`name_key`), or of an Excel ``sep=;`` line (:func:`sep_record`; ``names`` is then that line alone);
        else None, and where the file is read to its end (or Python's csv cannot read it on: the read proper names
        that problem), :attr:`done`. Read on from the row where the last call stopped."""
        if self.done or (rows is not None and self.rows >= rows):
            return None
        try:
            if self._records is None and not self._start():
                return self._end(None)
            records = self._records
            for row in records:
                excel = sep_record(row, records.dialect.delimiter)
                if excel:
                    return self._end((self._last_end + 1, [excel]))
                if row and len(row) == len(self._wanted):
                    names = [row[0].removeprefix(BOM), *row[1:]]
                    if sorted(map(name_key, names)) == self._wanted:  # where the record starts, blank lines passed
                        return self._end((self._last_end + 1, [self._field(n) for n in names]))
                self._last_end = records.line_num
                if row:
                    self.rows += 1
                    if rows is not None and self.rows >= rows:
                        return None
        except (csv.Error, UnicodeDecodeError):
            pass
        return self._end(None)

    def _start(self) -> bool:
        """Open the file and read its header; False where it has none, or a header of one column, whose every line
        is a whole record: there a text that is the column's name is a text."""
        self._fh = self._opener()
        self._records = csv.reader(self._lines(self._fh), **self._dialect)
        if self._sep_line:
            next(self._records, None)
        for first in self._records:
            if first:
                break
        else:
            return False
        self._wanted = sorted(map(name_key, first))
        self._last_end = self._records.line_num
        return len(first) > 1

    def _end(self, found):
        self.done = True
        self.close()
        return found

    def close(self) -> None:
        """Close the file; a later :meth:`until` not :attr:`done` reads it again from its header."""
        if self._fh is not None:
            self._fh.close()
        self._fh = self._records = None
        self.rows = 0
