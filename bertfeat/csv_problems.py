"""What is wrong with a CSV file, told in its reader's terms: the line of a problem (found by reading the file again
with Python's csv module), the quote left open or closed early, the rows a TSV's unquoted values joined, a run of NUL
bytes, a damaged or long-window compressed file, a header repeated by files joined with ``cat``, and what database
clients leave (psql's footer, backslash escapes), each refusal saying what to do. :class:`CsvProblems` is the part of
:class:`bertfeat.readers.InputReader` that words them.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import re
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bertfeat import exports, joined
from bertfeat.csv_stream import _INNER_CR, _csv_field, _csv_lines, _no_field_limit, open_decompressed, shown_as_written
from bertfeat.line_ends import LineEnds
from bertfeat.quotes import open_quote_line
from bertfeat.sources import _codec
from bertfeat.spelling import delimiter_named
from bertfeat.utf8 import not_utf8_csv


# "Row #4: ", pyarrow's count of records in its words where it parses on one thread (a one-CPU machine,
# OMP_NUM_THREADS=1 as Ray sets in its workers), not on several: a quoted value's line breaks make it no line to open
_PYARROW_ROW = re.compile(r"^(CSV parse error: )Row #\d+: ")
_QUOTED = re.compile(r'"[^"]*"')  # a quoted value (a doubled quote inside it: two of them, back to back)


class CsvProblems:
    """The refusals of :class:`bertfeat.readers.InputReader` for a CSV file's problems, each naming the file, the line
    (counted from 1, as editors count) or row (from 0) and what to do. A mixin: it reads the reader's ``path``,
    ``files``, ``delimiter``, ``quoting``, ``header``, ``sep_line``, its stream (``_counting``), what it still
    watches for (``_watch_rows``, ``_watch_escapes``, ``_header_may_repeat`` and how far: ``_header_watch``) and
    its ``_text()`` and ``_dialect()``."""

    def _not_utf8(self) -> str | None:
        with open(self.files[0], "rb") as raw, open_decompressed(self.files[0], raw) as fh:
            return not_utf8_csv(self.path, fh)

    def _damaged(self, exc: Exception, rows: int) -> str:
        long_window = _long_window(self.path, exc)
        if long_window:
            return long_window
        where = f"past its first {rows:,} rows" if rows else "in full"
        return (f"{self.path} cannot be read {where}: {exc} ({type(exc).__name__}). The "
                f"{_codec(self.files[0]) or 'file'} is truncated or damaged; copy or compress it again.")

    def _zeros(self) -> str:
        """The refusal of a CSV file holding a run of NUL bytes (:data:`bertfeat.csv_stream.NUL_RUN`), naming the line
        where it starts."""
        return (f"{self.path} holds a run of NUL bytes (0x00) from line {self._line_at(self._counting.zeros_at)}: it "
                "was not written whole (a download "
                "cut short where the whole file's room was taken first, or a write cut by a crash, leaves zeros); "
                "fetch or write it again.")

    def _lone_lf(self) -> str:
        """The refusal of a file whose lines end with a lone CR holding a line feed outside a quoted value
        (:attr:`bertfeat.quotes.QuoteScanner.lone_lf`), naming the reading that reads it as its value's where the
        file's backslashes are escapes, or it holds none (pandas' default escapes nothing, doubles a quote)."""
        line = self._line_at(self._counting.quotes.lone_lf, bom=True)
        escaped = "backslash" if self.quoting == "none" else "csv-backslash"  # (escaped readings see no such line feed)
        return (f"{self.path}: line {line} ends with a line feed alone, outside a quoted value, where the file's lines "
                "end with a carriage return alone (as its first line does): pandas' to_csv() and Python's csv module "
                "with a line terminator of a lone CR write a text's line break so, unquoted, and line ends mixed by "
                "joining or editing files leave one; read as a line end it would cut its row in two (in a file of one "
                f"column, one text into two). Pass quoting={escaped!r}, which reads such a line feed as part of its "
                "value, where the file holds no backslash or its backslashes escape the character after them (pandas' "
                "to_csv() with an escapechar); else write the file again with the default line terminator (a line "
                "feed, with which those writers quote such a value) or with every value quoted (csv.QUOTE_ALL); if "
                "each line feed ends a line, give every line one end first, for example with tr '\\r' '\\n' < in.csv "
                "> out.csv.")

    def _line_at(self, at: int, bom: bool = False) -> int:
        """The line of the byte at offset ``at`` of the decompressed file (``bom``: an offset that leaves out a UTF-8
        byte order mark, as :class:`bertfeat.quotes.QuoteScanner`'s do)."""
        line, prev, lone_cr = 1, b"", self._ends().cr_in_values
        with open_decompressed(self.files[0]) as fh:
            # none to leave out: the first bytes are the offset's, and their line ends count ("t\n", a header of one
            # letter, was counted no line)
            head = fh.read(len(codecs.BOM_UTF8)) if bom else b""
            head = b"" if head == codecs.BOM_UTF8 else head[:max(at, 0)]
            while at > 0:
                piece, head = head or fh.read(min(at, 1 << 20)), b""
                if not piece:
                    break
                at -= len(piece)
                # line ends as an editor shows them: LF, CRLF, a lone CR (where the reader ends a line there)
                line += piece.count(b"\n") + (0 if lone_cr else piece.count(b"\r") - (prev + piece).count(b"\r\n"))
                prev = piece[-1:]
        return line

    def _refuse_rows_joined(self) -> None:
        """Refuse a TSV whose quoting was not declared, where a quoted value holds a tab after a line break
        (:attr:`bertfeat.quotes.QuoteScanner.rows_joined`): rows read into one value, as a database's or a shell's
        export, which quotes nothing, leaves them after a value beginning with a quote; unless the file read with no
        quotes (as written, or with MySQL's backslash escapes) gives no rows of the header's width, as where
        Python's csv module quoted a value holding a line break and a tab: then its quotes are its own, and it is not
        asked again."""
        for backslash in (False, True):
            with self._text() as fh:
                if exports.unquoted_rows(self._rows_lines(fh), len(self.header), backslash, self._cr_ends_lines())[0]:
                    raise ValueError(self._rows_joined())
        self._watch_rows = False
        self._counting.quotes.stop_watching()

    def _lone_cr(self) -> bool:
        """Whether the reader reads a lone CR as part of its value (:class:`bertfeat.csv_stream.LoneCR`), so the
        lines Python's csv module reads must be joined there too."""
        lone_cr = self._counting.lone_cr if self._counting is not None else None
        return lone_cr is not None and lone_cr.lines_end_with_lf

    def _cr_ends_lines(self) -> bool:
        """Whether the file's header line ends with CRLF or a lone CR (:class:`bertfeat.csv_stream.LoneCR` saw it),
        so that a CR is the first byte of each line's end."""
        lone_cr = self._counting.lone_cr if self._counting is not None else None
        return lone_cr is not None and (lone_cr.crlf or lone_cr.lines_end_with_cr)

    def _ends(self) -> LineEnds:
        """Where the reader ends the file's lines (:mod:`bertfeat.line_ends`), as its stream saw them: a lone CR a
        value's where the header's line ends with LF or CRLF (:class:`bertfeat.csv_stream.LoneCR`), and in an escaped
        export a lone LF too where it ends with CRLF or a lone CR (:class:`bertfeat.escapes.EscapedBytes`)."""
        counting = self._counting
        if counting is not None and counting.escapes is not None:
            return counting.escapes.line_ends()
        return LineEnds(cr_in_values=self._lone_cr())

    def _lines(self, fh):
        """The lines of the text file ``fh``, each with its line end, as the reader ends them and an editor numbers
        them: joined at a lone CR where it reads one as part of its value (:meth:`_ends`)."""
        return self._ends().lines(fh)

    def _rows_lines(self, fh):
        """The lines of the text file ``fh`` after the header, each with its line end, as :meth:`_lines` gives them."""
        return self._ends().lines(itertools.islice(fh, self.header_lines, None))

    def _rows_joined(self) -> str:
        """The refusal of :meth:`_refuse_rows_joined`."""
        opened, tab = (self._line_at(at, bom=True) for at in self._counting.quotes.rows_joined)
        return (f"{self.path} holds a quoted value opened at line {opened} that holds a tab after a line break (at "
                f"line {tab}), as rows read into one value do: in a TSV whose values are never quoted (a database's "
                "or a shell's export: \\copy ... TO, mysql --batch, cut, paste), a value beginning with \" opens no "
                "quote. Pass quoting='none', or quoting='backslash' for PostgreSQL's and MySQL's text exports, which "
                "escape tabs and line breaks; if that value is meant to be quoted, pass quoting='csv'.")

    def _escaped_quote(self) -> str:
        """The refusal of a file whose quoting was not declared holding a quote after a backslash in a value not quoted
        (:attr:`bertfeat.quotes.QuoteScanner.escaped_quote`)."""
        line = self._line_at(self._counting.quotes.escaped_quote, bom=True)
        return (f"{self.path}: line {line} holds a quote escaped with a backslash (\\\") in a value that is not "
                "quoted, as pandas' to_csv and Python's csv module write a quote with an escapechar and doublequote "
                "off (CSV quotes such a value and doubles the quote): read as written the text would keep the "
                "backslash. Pass quoting='csv-backslash', which reads a backslash as escaping the next character "
                "(those writers escape a text's backslash too), or write the file again without an escapechar (or as "
                "parquet); if it quotes no value (csv.QUOTE_NONE), pass quoting='backslash'; if the backslashes are "
                "the texts' own, pass quoting='csv'.")

    def _refuse_escapes(self, batch: pa.RecordBatch, delivered: int) -> None:
        """Refuse a text of ``batch`` (the rows before it ``delivered``) of a file whose quoting was not declared that
        holds a backslash and an n, t or r in a TSV: the line break, tab or carriage return of a database's text
        export (PostgreSQL's COPY text format, mysql --batch), which read as written would be embedded as two
        characters; or, whatever its delimiter (MySQL's INTO OUTFILE ... FIELDS TERMINATED BY ','), a backslash
        before a carriage return (INTO OUTFILE ... LINES TERMINATED BY '\\r\\n' escapes a text's CR so), or that ends
        with a backslash, which INTO OUTFILE writes before a line break inside a value, there read as the end of the
        row (the rest of the text a row of its own), or before the delimiter. A text holding a
        backslash no such export writes alone (before another letter: LaTeX's \\alpha, a Windows path's \\Users;
        before x or a digit other than 0, as PostgreSQL's COPY TO writes no octal or hex escape and MySQL's exports
        only \\0; \\N within a longer text, as they write it only as a whole value, their NULL), or a file whose
        lines read with no quotes and MySQL's escapes are no rows of the header's width
        (:func:`bertfeat.exports.unquoted_rows`: a value Python's csv module quoted, a backslash ending the file or a
        Python-written TSV's row), or whose text ends with a backslash and no line break is escaped (the backslash
        ends a quoted value), shows the file is no such export, and its backslashes are the texts' own: it is not
        asked again."""
        for name in self.text_cols:
            # (\N alone, the exports' NULL, was read as missing before: here \N is within a longer text)
            own = pc.match_substring_regex(batch.column(name), r"(^|[^\\])(\\\\)*\\[^\\ntrbfv0\r]")
            if pc.any(pc.fill_null(own, False)).as_py():
                self._watch_escapes = False
                return
        found = {}  # each text column's texts holding a backslash and n, t or r, or ending with one
        ends = False
        # (no export but a TSV writes a line break, tab or CR as a backslash and a letter: in a comma file, where a
        # text's own "\\n" is common (code, JSON's strings), a backslash before the CR itself only)
        escaped = r"[ntr\r]" if self.delimiter == "\t" else r"\r"
        for name in self.text_cols:
            column = batch.column(name)
            two = pc.fill_null(pc.match_substring_regex(column, r"(^|[^\\])(\\\\)*\\" + escaped), False)
            last = pc.fill_null(pc.match_substring_regex(column, r"(^|[^\\])(\\\\)*\\$"), False)
            ends |= pc.any(last).as_py()
            found[name] = pc.or_(two, last)
        if not any(pc.any(one).as_py() for one in found.values()):
            return
        with self._text() as fh:
            fits, joined = exports.unquoted_rows(self._rows_lines(fh), len(self.header), True, self._cr_ends_lines(),
                                                 self.delimiter)
        if not fits or (ends and not joined):  # no such export: its lines are no rows, or its backslash ends a quote
            self._watch_escapes = False
            return
        for name in self.text_cols:
            column = batch.column(name)
            if not pc.any(found[name]).as_py():
                continue
            i = int(np.flatnonzero(found[name].to_numpy(zero_copy_only=False))[0])
            value = column[i].as_py()
            at = re.search(r"(?:^|[^\\])(?:\\\\)*(\\" + escaped + r"|\\\Z)", value, re.S)
            shown = value[max(0, at.start(1) - 20):at.end(1) + 20]
            what = (f"holds {at[1]!r} (a backslash and {at[1][1]!r}: {shown!r}), as a database's text export writes "
                    "a line break, a tab or a carriage return inside a value (PostgreSQL's \\copy ... TO and COPY ... "
                    "TO STDOUT, mysql --batch, Snowflake's unloads): read as written it would be embedded as those two "
                    "characters" if len(at[1]) == 2 and at[1] != "\\\r" else
                    f"holds a backslash before a carriage return ({shown!r}), as MySQL's INTO OUTFILE ... LINES "
                    "TERMINATED BY '\\r\\n' writes a carriage return inside a value (it escapes the first byte of its "
                    "line end): read as written the text would keep the backslash" if len(at[1]) == 2 else
                    f"ends with a backslash ({shown!r}), as MySQL's INTO OUTFILE writes one before a line break inside "
                    "a value: read as written the rest of the text would be a row of its own" if name == self.header[-1]
                    else f"ends with a backslash ({shown!r}), as MySQL's INTO OUTFILE writes one before "
                    f"{delimiter_named(self.delimiter)} inside a value: read as written the rest of the text would be "
                    "the next column's value")
            raise ValueError(
                f"{self.path}: the text of row {delivered + i:,} in column {name!r} {what}. Pass "
                "quoting='backslash' to read the file's escapes (and \\N as missing); if the backslashes are the "
                "text's own, pass quoting='csv' (or 'none') to read them as written.")

    def _refuse_footer(self, batch: pa.RecordBatch, delivered: int) -> None:
        """Refuse psql's row count footer in ``batch`` of a file of one column, the rows before it ``delivered``:
        a value ``(N rows)`` that is row N of the input, so N counts the rows before it, as psql's footer does."""
        column = batch.column(0)
        found = pc.fill_null(pc.match_substring_regex(column, r"^\(\d+ rows?\)$"), False)
        for i in np.flatnonzero(found.to_numpy(zero_copy_only=False)):
            value = column[int(i)].as_py()
            if exports.footer_rows(value) == delivered + int(i):
                raise ValueError(exports.footer_refusal(self.path, self._record_line(delivered + int(i)), value))

    def _record_line(self, row: int) -> int:
        """The line where data row ``row`` (counted from 0, the header no row) of the CSV file starts."""
        with self._text() as fh, _no_field_limit():
            reader = csv.reader(_csv_lines(fh, self._ends()), **self._dialect())
            if self.sep_line is not None:
                next(reader)
            records, last_end = -1, reader.line_num
            for record in reader:  # a blank line is a row in a file of one column, as the reader reads it
                if record or records >= 0 and len(self.header) == 1:
                    if records == row:
                        return last_end + 1
                    records += 1
                last_end = reader.line_num
        return last_end

    def _refuse_repeated_header(self, rows: int | None = None) -> None:
        """Refuse a CSV file that repeats its header within its first ``rows`` rows (all where None), read on from
        the row the last call stopped at; where the whole file is read and holds none, stop looking."""
        if self._header_watch is None:
            self._header_watch = self._header_scan()
        with _no_field_limit():  # a text past 128 KiB is no problem for pyarrow, so no end of the search
            found = self._header_watch.until(rows)
        if found:
            raise ValueError(joined.refusal(self.path, *found, self.header))
        if self._header_watch.done:
            self._header_may_repeat = False

    def _header_scan(self) -> joined.Watch:
        ends = self._ends()
        return joined.Watch(self._text, self._dialect(), self.sep_line is not None,
                            lambda fh: _csv_lines(fh, ends), lambda field: _csv_field(field, ends.cr_in_values))

    def _repeated_header(self) -> str | None:
        """The refusal of a CSV file that repeats its header anywhere further on, or None."""
        watch = self._header_scan()
        try:
            with _no_field_limit():
                found = watch.until(None)
        finally:
            watch.close()
        return None if found is None else joined.refusal(self.path, *found, self.header)

    def _csv_problem(self, exc: Exception | None) -> str:
        """Find the line of a CSV problem by re-reading with Python's csv module; ``exc`` is pyarrow's error, or None
        for what :class:`bertfeat.quotes.QuoteScanner` found: a quote left open at the end (pyarrow reads that as one
        last value holding the rest of the file) or a quoted value with more text after its closing quote."""
        line, row_names, escaped, broken, before, lone_lf, lone_cr_at = None, False, None, None, None, None, None
        value_lf, spaces_only = None, False
        try:
            with self._text() as fh, _no_field_limit():
                ends = self._ends()
                reader = csv.reader(_csv_lines(fh, ends), **self._dialect())
                if self.sep_line is not None:
                    next(reader)  # Excel's "sep=;" line, no record
                width, last_end, rows_before = None, reader.line_num, 0
                try:
                    for row in reader:
                        row = [_csv_field(field, ends.cr_in_values) for field in row]  # as the file holds them
                        if width is None:
                            width = len(row) if row else None  # blank lines before the header
                        elif len(row) != width and row:
                            line = reader.line_num
                            # a line of spaces or tabs alone (an edit by hand): a record of one value, no blank line
                            spaces_only = len(row) == 1 and not row[0].strip(" \t")
                            if len(row) == 1 and exports.footer_rows(row[0]) is not None:
                                return exports.footer_refusal(self.path, line, row[0])
                            # (not a last field left empty: a delimiter ending each row, "1,a,", is no row name)
                            row_names = rows_before == 0 and len(row) == width + 1 and row[-1] != ""
                            escaped = self._escaped_delimiter(row)
                            ends = self._escaped_delimiter([before[-1], ""]) if before and not escaped else None
                            broken = ends[:-1] if ends else None  # the last field of the record before, a "\"
                            lone_lf = self._lone_lf_line(last_end, line)
                            value_lf = self._value_lf_line(last_end + 1, line - 1)
                            lone_cr_at = self._lone_cr_line(last_end + 1, line) if self._lone_cr() else None
                            break
                        elif row:
                            rows_before += 1
                        before = row or before
                        last_end = reader.line_num
                except csv.Error as scan_exc:
                    if "expected after" in str(scan_exc):
                        at = reader.line_num
                        opened = open_quote_line(self._text, last_end, self.delimiter, until=at, ends=ends,
                                                 escapes=self.quoting == "csv-backslash")
                        return (f"{self.path} is malformed at line {at}: a quoted value (opened at line {opened}) "
                                f"has more text after its closing quote ({scan_exc}); quote the whole value and "
                                f"double each quote inside it (\"\"), or remove a stray quote at line {opened}."
                                f"{self._backslash_quote_hint(opened, at) or self._lone_cr_hint(opened, at)}"
                                f"{self._unquoted_hint()}")
                    if "end of data" not in str(scan_exc):
                        return f"{self.path} is malformed at line {reader.line_num}: {scan_exc}."
                    opened = open_quote_line(self._text, last_end, self.delimiter, ends=ends,
                                             escapes=self.quoting == "csv-backslash")
                    return (f"{self.path} is malformed: a quote opened at line {opened} is never closed, so the rest "
                            "of the file would be one value; close the quote (or double it, \"\", inside a quoted "
                            f"value).{self._unquoted_hint()}")
        except UnicodeDecodeError as scan_exc:
            return self._not_utf8() or f"{self.path} is not a readable UTF-8 CSV file: {scan_exc}"
        if exc is None:
            return f"{self.path} is malformed: a quote is left open at the end of the file."
        if "conversion error" in str(exc):  # only with infer_types: a type guessed from the first block
            joined_files = self._repeated_header()  # the header's names in a column of numbers or dates
            if joined_files:
                return joined_files
            return (f"{self.path}: {str(exc).splitlines()[0]} (a type inferred from the start of the file does not "
                    "hold further on); drop infer_types= to read kept columns as written, as text.")
        where = f" at line {line}" if line else ""
        pyarrows = shown_as_written(str(exc)).splitlines()[0]
        if line:  # pyarrow's own count, where it parses on one thread (one CPU, OMP_NUM_THREADS=1), counts records
            pyarrows = _PYARROW_ROW.sub(r"\1", pyarrows, count=1)
        said = f"{self.path} is malformed{where}: {pyarrows}"
        footer = self._last_line() if line else None
        if footer and exports.footer_rows(footer[1]) is not None:  # psql -A: a value holding the delimiter, split
            return exports.unaligned_refusal(self.path, said, *footer, self.delimiter)
        if spaces_only:
            said += (f". Line {line} holds only spaces or tabs, no row of the header's {width} columns: remove it (an "
                     "empty line is skipped, a line of spaces is a row of one value).")
        elif escaped:  # MySQL's INTO OUTFILE, Redshift's UNLOAD ... ESCAPE: not R's row names
            said += (f". A backslash comes before the delimiter there ({escaped!r}), as exports that escape their "
                     "delimiters, tabs and line breaks with a backslash write them (MySQL's INTO OUTFILE, "
                     "Redshift's UNLOAD ... ESCAPE, PostgreSQL's COPY text format): pass quoting='backslash'.")
        elif broken:  # MySQL's INTO OUTFILE: a backslash before a line break inside a value
            said += (f". The line before it ends with a backslash ({broken!r}), as exports that escape their "
                     "delimiters, tabs and line breaks with a backslash write one before a line break inside a value "
                     "(MySQL's INTO OUTFILE, Redshift's UNLOAD ... ESCAPE): pass quoting='backslash'.")
        elif lone_cr_at:  # a lone CR read as its value's, where it ended a line (line ends mixed)
            said += "." + self._lone_cr_hint(lone_cr_at, lone_cr_at)
        elif lone_lf:  # MySQL's INTO OUTFILE ... LINES TERMINATED BY '\r\n': a value's LF as written
            said += (f". Line {lone_lf} ends with a line feed alone, where the file's lines end with CRLF, as MySQL's "
                     "SELECT ... INTO OUTFILE ... LINES TERMINATED BY '\\r\\n' writes a line break inside a value (it "
                     "escapes the CR, not the LF): pass quoting='backslash'; if a line was added with another line "
                     "end, end it with CRLF as the others.")
        elif value_lf:  # an escaped reading's value LF, where line ends are mixed: rows read into one
            said += self._value_lf_hint(*value_lf)
        elif row_names:  # the first row one field wider than the header: R's write.table, every row so
            said += (". The header names one column fewer than the rows hold, as R's write.table() writes a data "
                     "frame with its row names: write it with row.names = FALSE (or with write.csv(), which names "
                     "the row names' column \"\").")
        elif line and (self.quoting == "none" or self.quoting == "csv" and self._quotes_nothing(line)):
            said += split_unquoted(self.delimiter, self.quoting == "none")
        return said

    def _quotes_nothing(self, line: int) -> bool:
        """Whether lines 1 to ``line`` of the file (counted as the reader ends lines) quote no value: none begins
        with a quote (a quote inside a text, a 12" pizza, quotes nothing; read as written, as CSV reads it)."""
        opens = re.compile(f'(?:^|{re.escape(self.delimiter)})"')
        with self._text() as fh:
            return not any(opens.search(text) for _, text in zip(range(line), self._lines(fh)))

    def _lone_cr_hint(self, first: int, last: int) -> str:
        """What to do where one of lines ``first`` to ``last`` holds a lone CR the reader read as its value's."""
        at = self._lone_cr_line(first, last) if self._lone_cr() else None
        if at is None:
            return ""
        return (f" Line {at} holds a carriage return alone, read as part of its value, as Python's csv module and "
                "pandas write a text's CR (unquoted) where lines end with LF or CRLF, as this file's first line does; "
                "if it ends a line (line ends mixed by joining or editing files), give every line one end first, for "
                f"example with {_one_line_end('a carriage return alone', len(self.header) == 1)}.")

    def _lone_cr_line(self, first: int, last: int) -> int | None:
        """The first of lines ``first`` to ``last`` (counted as the reader ends lines: :meth:`_lone_cr`) that holds a
        lone CR outside a quoted value (one that opens and closes on the line), or None."""
        with self._text() as fh:
            for number, text in enumerate(self._lines(fh), 1):
                if number >= max(first, 1) and _INNER_CR.search(_QUOTED.sub("", text)):
                    return number
                if number >= last:
                    return None
        return None

    def _lone_lf_line(self, first: int, last: int) -> int | None:
        """The first of lines ``first`` to ``last`` (the line ending the record before a ragged one, and the ragged
        one's) that ends with a line feed alone, in a file whose header line ends with CRLF; None otherwise, or where
        the file is read as a backslash-escaped export (which reads such a line feed as its value's)."""
        if self.quoting in ("backslash", "csv-backslash"):
            return None
        with self._text() as fh:
            for number, text in enumerate(self._lines(fh), 1):
                if number == self.header_lines and not text.endswith("\r\n"):
                    return None
                if number >= max(first, self.header_lines + 1) and text.endswith("\n") and not text.endswith("\r\n"):
                    return number
                if number >= last:
                    return None
        return None

    def _value_lf_line(self, first: int, last: int) -> tuple[int, str] | None:
        """Under quoting='backslash' or 'csv-backslash', where the header's line ends with CRLF or a lone CR (a line
        feed alone is then a value's: :attr:`bertfeat.line_ends.LineEnds.lf_in_values`), the first of lines ``first``
        to ``last`` (a ragged record's, but its last) that ends with a line feed alone outside a quoted value, and the
        header's line end; None otherwise."""
        if self.quoting not in ("backslash", "csv-backslash") or not self._ends().lf_in_values or first > last:
            return None
        quotes = 0  # under csv-backslash, the quotes (not escaped) since the record began: a LF inside one is a text's
        with self._text() as fh:
            for number, text in enumerate(self._lines(fh), 1):
                if number == self.header_lines:
                    header_end = "CRLF" if text.endswith("\r\n") else "a carriage return alone"
                if number < max(first, self.header_lines + 1):
                    continue
                if self.quoting == "csv-backslash":
                    quotes += _ESCAPED_CHARACTER.sub("", text).count('"')
                if text.endswith("\n") and not text.endswith("\r\n") and quotes % 2 == 0:
                    return number, header_end
                if number >= last:
                    return None
        return None

    def _value_lf_hint(self, line: int, header_end: str) -> str:
        """What a ragged row says where line ``line`` ends with a line feed the escaped reading reads as its value's
        (:meth:`_value_lf_line`)."""
        return (f". Line {line} ends with a line feed alone, where the file's first line ends with {header_end}: under "
                f"quoting={self.quoting!r} such a line feed is part of its value, as MySQL's SELECT ... INTO OUTFILE "
                "... LINES TERMINATED BY writes a line break inside a value, so the lines after it were read into its "
                "row; if each line feed ends a line (line ends mixed by joining or editing files), give every line one "
                f"end first, for example with {_one_line_end(header_end, len(self.header) == 1)}.")

    def _ends_with_value_lf(self) -> bool:
        """Whether the escaped export read ends with a line feed its reading reads as a value's
        (:attr:`bertfeat.escapes.EscapedBytes.ends_with_value_lf`)."""
        escapes = self._counting.escapes if self._counting is not None else None
        return escapes is not None and escapes.ends_with_value_lf

    def _last_line_run_on(self) -> str:
        """The refusal of an escaped export whose last line ends with a line feed alone, or with no line end after
        one, where its first ends with CRLF or a lone CR (:meth:`_ends_with_value_lf`), naming the lines read into its
        last row."""
        start = number = self.header_lines + 1
        header_end, text = "CRLF", ""
        with self._text() as fh:
            for number, text in enumerate(self._lines(fh), 1):
                if number == self.header_lines:
                    header_end = "CRLF" if text.endswith("\r\n") else "a carriage return alone"
                if number >= self.header_lines and text.endswith("\r\n" if header_end == "CRLF" else "\r"):
                    start = number + 1  # a row ends here: the last begins on the next line
        ends = ("ends with a line feed alone" if text.endswith(("\n", "\r")) else
                "holds no line end and comes after a line feed alone")
        return (f"{self.path}: its last line {ends}, where its first line ends with {header_end}, "
                "as an export that ends lines so ends every line, the last too: under "
                f"quoting={self.quoting!r} a line feed alone is part of its value, as MySQL's SELECT ... INTO OUTFILE "
                f"... LINES TERMINATED BY writes a line break inside a value, so lines {start} to {number} would be "
                "read as one row. If each line feed ends a line (line ends mixed by joining or editing files), give "
                f"every line one end first, for example with {_one_line_end(header_end, len(self.header) == 1)}"
                + ("." if text.endswith(("\n", "\r")) else
                   "; if it is such an export whose last line end was cut off, end its last line as the others end, "
                   f"for example with printf '{_END_TYPED[header_end]}' >> in.csv."))

    def _last_line(self) -> tuple[int, str] | None:
        """``(line, text)`` of the CSV file's last line that is not blank, spaces around it removed, or None."""
        last = None
        try:
            with self._text() as fh:
                for number, text in enumerate(self._lines(fh), 1):
                    if text.strip():
                        last = (number, text.strip())
        except (OSError, EOFError, UnicodeDecodeError, zlib.error):
            return None
        return last

    def _escaped_delimiter(self, row: list[str]) -> str | None:
        """The fields of the ragged ``row`` around a delimiter that a backslash escapes (a field ending with an odd
        run of backslashes), where the file is read as CSV; None otherwise."""
        if self.quoting != "csv":
            return None
        for left, right in zip(row, row[1:]):
            if (len(left) - len(left.rstrip("\\"))) % 2:
                return f"{left}{self.delimiter}{right}"[-60:]
        return None

    def _backslash_quote_hint(self, first: int, last: int) -> str | None:
        """What to do where a quote is escaped with a backslash (\\") on lines ``first`` to ``last``: R's write.table()
        writes one so by default (qmethod = "escape"), MySQL's SELECT ... INTO OUTFILE ... ENCLOSED BY '"' with its
        default ESCAPED BY '\\\\' (quotes, backslashes and NULL, \\N), pandas' to_csv with an escapechar and doublequote
        off; no CSV reader reads them as quotes (``csv-backslash`` reads MySQL's and pandas'). None where no such quote
        is there."""
        with self._text() as fh:
            lines = [text for number, text in zip(range(1, last + 1), self._lines(fh)) if number >= first]
        if self.quoting == "csv-backslash":  # read as escapes: a quote closed early after an escaped backslash, R's
            if not any(_ESCAPED_BACKSLASH_QUOTE.search(text) for text in lines):
                return None
            return (" Under quoting='csv-backslash' a backslash escapes the next character, so a backslash before a "
                    "quote that closes its value is escaped too (\\\\\"): R's write.table() escapes a quote and no "
                    "backslash (qmethod = \"escape\"): write the file with write.csv() or write.table(..., qmethod = "
                    "\"double\") and read it with no quoting.")
        if not any('\\"' in text for text in lines):
            return None
        return (" A quote there is escaped with a backslash (\\\"), which CSV does not do (it doubles a quote inside "
                "a quoted value): R's write.table() writes one so by default (qmethod = \"escape\"): write the file "
                "with write.csv() or write.table(..., qmethod = \"double\"); MySQL's SELECT ... INTO OUTFILE ... "
                "ENCLOSED BY '\"' does too (its default ESCAPED BY, a backslash, escapes quotes and backslashes): pass "
                "quoting='csv-backslash', which reads its escapes as MySQL's LOAD DATA does; so do pandas' to_csv and "
                "Python's csv module with an escapechar and doublequote off, which escape a text's backslash too: pass "
                "quoting='csv-backslash' for theirs as well, or write the file again without an escapechar.")

    def _unquoted_hint(self) -> str:
        """What to do where a quote problem may be a TSV whose values are never quoted, its quoting not declared (a
        database's or a shell's TSV quotes nothing; a CSV that quotes nothing has commas that split its values)."""
        if not self._watch_rows or self.delimiter != "\t":
            return ""
        return (" If the file's values are never quoted (a database's or a shell's export), pass quoting='none', "
                "or quoting='backslash' for PostgreSQL's and MySQL's text exports.")


# an even run of backslashes before a quote: under csv-backslash, escaped backslashes and a quote that closes its value,
# as R's write.table() writes a text's backslash before a quote (it escapes the quote, not the backslash)
_ESCAPED_BACKSLASH_QUOTE = re.compile(r'(?<!\\)(?:\\\\)+"')
# a line end as printf types it, where a file's first line ends with CRLF or a lone CR
_END_TYPED = {"CRLF": "\\r\\n", "a carriage return alone": "\\r"}


def _one_line_end(header_end: str, one_column: bool) -> str:
    """A command that gives every line of a file one line end, where its first line ends with ``header_end``: in a
    file of one column, where a blank line is a row whose value is missing, none that leaves one for a CRLF."""
    if header_end == "CRLF":
        return "sed 's/\\r$//' < in.csv > out.csv"
    if not one_column:
        return "tr '\\r' '\\n' < in.csv > out.csv (every CR a line end: the blank lines it leaves are skipped)"
    return ("perl -pe 's/\\r\\n?/\\n/g' < in.csv > out.csv (each CRLF and each CR alone one line end; tr '\\r' '\\n' "
            "would leave a blank line for each CRLF, in a file of one column a row whose value is missing)")


# a backslash and the character it escapes (csv-backslash): no quote of the value's own
_ESCAPED_CHARACTER = re.compile(r"\\.", re.S)


def split_unquoted(delimiter: str, none: bool = False) -> str:
    """What a ragged row says where no value up to its line is quoted (a writer told to quote nothing), or where
    the file is read with no quoting (``none``)."""
    unquoted = "Under quoting='none' no value is quoted" if none else "No value up to that line is quoted"
    then = " and read it without quoting='none'" if none else ""
    return (f". {unquoted}, so where a value there holds the delimiter ({delimiter_named(delimiter)}) or a line "
            "break, it was split: writers told to quote nothing write such a value as it is (R's write.table() with "
            "quote = FALSE, polars' write_csv() with the quote style never), and no reader can tell where it ends. "
            "Write the file again quoting such values (R's write.csv(), or write.table() with its default quote = "
            f"TRUE; polars' write_csv() with its default quote style){then}, or as parquet; or, if the row lacks or "
            "has a field too many, mend it.")


def _long_window(path, exc: Exception) -> str | None:
    """The refusal of a zstd frame whose window is past what pyarrow's decoder allows (2^27 bytes, zstd's default
    limit): ``zstd --long=31`` writes such frames, which are not damaged; None for any other error."""
    if "requires too much memory" not in str(exc):
        return None
    return (f"{path} cannot be read: it was compressed with zstd's long window (--long=28 or more, or --ultra), more "
            "than the 128 MiB pyarrow's zstd reader takes. Decompress it (zstd -d --long=31) and pass the CSV file, "
            "or compress it again with --long=27 at most.")
