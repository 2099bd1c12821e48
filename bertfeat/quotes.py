"""Quotes in a CSV stream: whether it ends inside a quoted value, and the line where that value opened.

pyarrow reads a quote left open at the end of a file as one last value holding the rest of the file, without a
word; and a quoted value whose closing quote is followed by more text (``"Meh" said I``) as that text with the
quotes dropped, which after a stray opening quote means the rows up to the next quote read into one value. :class:`QuoteScanner` follows the stream as the reader reads it (quotes as pyarrow and Python's csv module
parse them: a quote opens a quoted value only at the start of a field; inside one, a doubled quote is a quote
character and a single one closes it; anywhere else a quote is a plain character), so the reader can refuse such a
file before it delivers its last rows. Counting quote characters cannot: one literal quote elsewhere (``5" screen``)
makes the count even. :func:`open_quote_line` names the line for the error message.
"""

from __future__ import annotations

import codecs
import re

from bertfeat.line_ends import LineEnds

QUOTE = 0x22
BACKSLASH = 0x5C
# a line break, a first field (4 KiB at most: a first field is short) and a tab: a record's start, inside a quoted value
FIRST_FIELD = 4095
_RECORD_START = re.compile(rb"[\r\n][^\t\r\n]{1,%d}\t" % FIRST_FIELD)
_FIELD = re.compile(rb"[^\t\r\n]*")


class QuoteScanner:
    """Feed it the decompressed bytes of a CSV file in order, in pieces of any size; :attr:`ends_open` then says
    whether the file ends inside a quoted value, and :attr:`closed_early` where a quoted value's closing quote was
    followed by something other than a delimiter, a line break or the end of the file (the byte's offset in the
    stream, BOM excluded; None while there is none); with ``watch_escapes``, :attr:`escaped_quote` where a quote after a
    backslash stands in a value not quoted. Costs one ``bytes.find`` per quote character."""

    def __init__(self, delimiter: str, watch_rows: bool = False, watch_escapes: bool = False):
        self._field_starts = {ord(delimiter), 0x0A, 0x0D}  # after these bytes a field starts
        self._opens = self._field_starts  # after these bytes a quote opens a quoted value
        self._in_quote = False
        self._quote_ends_piece = False  # inside a quoted value, the last piece ended on a quote: the next byte decides
        self._prev: int | None = None  # the last byte seen; None at the start of the file
        self._head: bytes | None = b""  # the first bytes, until they are known to be (or not be) a UTF-8 BOM
        self._offset = 0  # bytes fed before the current piece, BOM excluded
        self.closed_early: int | None = None
        # with watch_rows (a TSV whose quoting was not declared): where a quoted value holds a tab after a line break,
        # as rows read into one value do, and where that value opened (offsets as closed_early's); see rows_joined
        self._watch = watch_rows
        self._line: int | None = None  # inside a quoted value: its bytes since its last line break, no tab (_inside)
        self._opened_at = 0
        self.rows_joined: tuple[int, int] | None = None
        # with watch_escapes (a file whose quoting was not declared): where a quote after a backslash stands in a value
        # not quoted, as pandas' to_csv(escapechar='\\', doublequote=False) writes a text's quote (offsets as
        # closed_early's); CSV writers quote such a value and double the quote
        self._watch_escapes = watch_escapes
        self.escaped_quote: int | None = None
        # where a line feed stands outside a quoted value in a file whose lines end with a lone CR (offsets as
        # closed_early's): see lf_ends_no_line
        self._watch_lf = False
        self.lone_lf: int | None = None

    @property
    def ends_open(self) -> bool:
        """Whether the bytes fed so far end inside a quoted value (a final quote closes it)."""
        return self._in_quote and not self._quote_ends_piece

    def feed(self, data: bytes) -> None:
        if self._head is not None:  # a BOM is not part of the first field: a quote right after it opens one
            self._head += data
            if len(self._head) < len(codecs.BOM_UTF8) and codecs.BOM_UTF8.startswith(self._head):
                return
            data = self._head[len(codecs.BOM_UTF8):] if self._head.startswith(codecs.BOM_UTF8) else self._head
            self._head = None
        if not data:
            return
        i, n = 0, len(data)
        if self._quote_ends_piece:
            self._quote_ends_piece = False
            if data[0] == QUOTE:
                i = 1  # a doubled quote, split between two pieces: still inside
            else:
                self._in_quote = False
                self._after_closing(data, 0)
        while i < n:
            j = data.find(b'"', i)
            if self._in_quote and self._watch and self.rows_joined is None:
                self._inside(data, i, n if j < 0 else j)
            if self._watch_lf and not self._in_quote and self.lone_lf is None:
                k = lone_lf(data, i, n if j < 0 else j)
                if k >= 0:
                    self.lone_lf = self._offset + k
            if j < 0:
                break
            if self._in_quote:
                if j + 1 == n:
                    self._quote_ends_piece = True
                    break
                if data[j + 1] == QUOTE:
                    i = j + 2
                    continue
                self._in_quote = False
                self._after_closing(data, j + 1)
            else:
                prev = data[j - 1] if j else self._prev
                self._in_quote = prev is None or prev in self._opens
                self._line, self._opened_at = None, self._offset + j
                if prev == BACKSLASH and self._watch_escapes and self.escaped_quote is None:
                    self.escaped_quote = self._offset + j
            i = j + 1
        self._prev = data[-1]
        self._offset += n

    def lone_cr_in_values(self) -> None:
        """From here on a lone CR is a value's character, no line end (the file's lines end with LF or CRLF:
        :class:`bertfeat.csv_stream.LoneCR`), so a quote after one opens no quoted value, as for the reader."""
        self._opens = self._field_starts - {0x0D}

    def lf_ends_no_line(self) -> None:
        """From here on the file's lines end with a lone CR (its first line's end: Excel for Mac's), so a line feed
        outside a quoted value is no line end of the file's: :attr:`lone_lf` says where the first one is (pandas'
        to_csv with a CR line terminator writes a text's LF so, unquoted; mixed line ends leave one)."""
        self._watch_lf = True

    def stop_watching(self) -> None:
        """Watch no more for rows read into a quoted value (the file's quotes are shown to be its own)."""
        self._watch, self.rows_joined = False, None

    def _inside(self, data: bytes, start: int, end: int) -> None:
        """Follow ``data[start:end]``, inside a quoted value: a line break, a field and a tab there (a record's start,
        not an indented line, which starts with a tab) are a row read into the value where the file's values are not
        quoted (a TSV export's ``"Great`` opens no quote). What the line since the value's last line break holds is
        carried to the next piece as a count (:data:`FIRST_FIELD` bytes at most: a first field is short), so each
        byte is looked at once: searching that line again at each quote (a JSON text doubles one every few bytes)
        searched it hundreds of times over."""
        if start == end:
            return
        if self._line is not None:  # the line goes on from the piece before: its first field, if a tab ends it here
            run = _FIELD.match(data, start, end).end()
            field = self._line + run - start
            if run < end and data[run] == 0x09 and 0 < field <= FIRST_FIELD:
                self.rows_joined = (self._opened_at, self._offset + run)
                return
            self._line = field if run == end and field <= FIRST_FIELD else None
        found = _RECORD_START.search(data, start, end)
        if found is not None:
            self.rows_joined = (self._opened_at, self._offset + found.end() - 1)
            return
        last = max(data.rfind(b"\n", start, end), data.rfind(b"\r", start, end))
        if last >= 0:  # the line after it, if no tab ends it early (an indented line is no record)
            run = _FIELD.match(data, last + 1, end).end()
            self._line = end - last - 1 if run == end and end - last - 1 <= FIRST_FIELD else None

    def _after_closing(self, data: bytes, k: int) -> None:
        """A quoted value closed just before ``data[k]``: only a delimiter or a line break may come next (not a lone CR
        where it is a value's character: :meth:`lone_cr_in_values`; no piece ends with a CR but the file's last)."""
        lone_cr = data[k] == 0x0D and self._opens is not self._field_starts and data[k + 1:k + 2] not in (b"", b"\n")
        if self.closed_early is None and (data[k] not in self._field_starts or lone_cr):
            self.closed_early = self._offset + k


class HeaderEnd:
    """Where a CSV stream's first line (its header) ends, fed the stream in pieces: the first line break outside a
    quoted name (``quotes``: whether ``"`` quotes one; a doubled quote toggles twice), a backslash escaping the byte
    after it where ``escapes`` (an escaped export's). :meth:`find` carries its state from piece to piece."""

    def __init__(self, quotes: bool, escapes: bool = False):
        self._quotes, self._escapes = quotes, escapes
        self._in_quote = self._escaped = False

    def find(self, data: bytes) -> int | None:
        """Where in ``data`` (the bytes after those fed so far) the header's line break is, or None."""
        for at, byte in enumerate(data):
            if self._escaped:
                self._escaped = False
            elif byte == BACKSLASH and self._escapes:
                self._escaped = True
            elif byte == QUOTE and self._quotes:
                self._in_quote = not self._in_quote
            elif byte in (0x0A, 0x0D) and not self._in_quote:
                return at
        return None


def lone_lf(data: bytes, start: int, end: int) -> int:
    """Where in ``data[start:end]`` the first line feed no CR comes before is (a CRLF ends a line in a file of lone-CR
    lines too, as pyarrow reads it), or -1."""
    k = data.find(b"\n", start, end)
    while k > 0 and data[k - 1] == 0x0D:
        k = data.find(b"\n", k + 1, end)
    return k


def open_quote_line(opener, record_start: int, delimiter: str, until: int | None = None,
                    ends: LineEnds = LineEnds(), escapes: bool = False) -> int:
    """The line where the quote left open in the record after line ``record_start`` opened (``opener()`` opens the
    file as text, with ``newline=""``); with ``until``, the line where the last quoted value opened before the end
    of line ``until``. Lines end as the reader ends them (``ends``, :mod:`bertfeat.line_ends`): at CRLF, a lone LF
    and a lone CR (old Mac exports), inside quoted values too, but at a lone CR or LF of a value's, and are numbered as
    an editor numbers them. With ``escapes`` (``quoting='csv-backslash'``), a backslash escapes the next character, a
    quote or a line end too, inside a quoted value and out."""
    line, at_field_start, in_quote, opened, prev_quote, escaped = record_start + 1, True, False, None, False, False
    with opener() as fh:
        lines = iter(ends.lines(fh))
        for _ in range(record_start):
            next(lines, "")
        for text in lines:
            body, ended = ends.split(text)
            for c in body:
                if escaped:  # the character after a backslash: neither a quote nor the delimiter
                    escaped = at_field_start = False
                    continue
                if in_quote:
                    if c == "\\" and escapes:
                        escaped = True
                    elif c == '"':
                        in_quote, prev_quote = False, True
                    continue
                if c == '"' and (at_field_start or prev_quote):
                    in_quote, opened = True, line if at_field_start else opened
                    at_field_start = prev_quote = False
                    continue
                if prev_quote and until is not None and c != delimiter:
                    return opened  # text after a closing quote: the value closed early, not one opened after it
                prev_quote = False
                escaped = c == "\\" and escapes
                at_field_start = c == delimiter
            if not ended:
                continue
            if escaped:  # a line end after a backslash: its value's, the record goes on
                escaped = False
            elif not in_quote:
                at_field_start, prev_quote = True, False
            line += 1
            if until is not None and line > until:
                return opened or record_start + 1
    return opened or record_start + 1
