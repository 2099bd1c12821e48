"""How a CSV file's values are quoted (``--quoting``), where the file cannot tell: ``csv`` (RFC 4180: ``"`` quotes a
value, ``""`` inside is one), ``none`` (no quoting: every character as written, ``"`` too, as ``cut``, ``paste`` and
awk write a TSV), or ``backslash`` (no quoting; a backslash escapes the next character), as database text exports
write: PostgreSQL's COPY text format (``\\copy t TO 'f.tsv'``), MySQL's ``SELECT ... INTO OUTFILE`` and
``mysql --batch``, Snowflake's and Redshift's unloads with an escape, Hive's text tables.

Read as CSV, such a file's value beginning with ``"`` joined the rows up to the next quote into one value, silently,
and its escapes were embedded as two characters (``\\n`` for a line break). Under ``backslash`` a value is read as
PostgreSQL's ``COPY FROM`` reads its text format: ``\\b \\f \\n \\r \\t \\v``, ``\\`` and 1 to 3 octal digits
(``\\0``, MySQL's NUL) or ``\\x`` and 1 or 2 hex digits, each a byte of the file's UTF-8 text (``caf\\303\\251`` is
``café``), ``\\N`` alone as a missing value (:data:`bertfeat.readers.ESCAPED_NULLS` holds it, with ``NULL`` and an
empty field: an ``NA`` or ``None`` is a text there), and any other character
after a backslash as itself: a backslash, a quote, and the delimiter or a line break that MySQL's INTO OUTFILE and
Redshift's ESCAPE write after one, which are part of the value, not its end.

pyarrow, which reads the file, splits a value at every delimiter and line break; :class:`EscapedBytes` rewrites the
bytes it is given so that none escaped is left (a backslash and a line break become ``\\n``, a backslash and the
delimiter a backslash and the unit separator U+001F, which no exporter writes after one), pair by pair, so an
escaped backslash before a delimiter stays one (``\\\\<tab>`` ends its value); a bare carriage return no line feed
follows becomes ``\\r`` too, as MySQL escapes none (a text's Windows line break); and where the file's first line ends
with CRLF (INTO OUTFILE ... LINES TERMINATED BY '\\r\\n', which escapes the CR and no LF), a line feed no carriage
return comes before becomes ``\\n``, as it does where the first line ends with a lone CR (LINES TERMINATED BY '\\r',
pandas' ``to_csv(lineterminator='\\r')`` with an escapechar, which escape or quote a text's CR and leave its LF as
written), each bare CR there a line end. :func:`decode` then reads each value.

``csv-backslash`` is CSV's quoting with a backslash escaping the next character, as MySQL's ``SELECT ... INTO OUTFILE
... FIELDS ENCLOSED BY '"'`` writes with its default ``ESCAPED BY '\\\\'``: a quote, a backslash and a line feed inside
a quoted value written after a backslash, a NUL as ``\\0``, NULL as ``\\N`` unquoted (Redshift's ``UNLOAD ... ADDQUOTES
ESCAPE`` writes the same, the delimiter and a CR escaped too). Read as CSV, its texts kept their backslashes
(``C:\\\\dir`` embedded with two), and a ``\\"`` ended its value. :class:`EscapedBytes` rewrites an escaped quote too
(a backslash and U+001E), so that pyarrow reads the quotes, and :func:`decode_quoted` reads each value as MySQL's
``LOAD DATA`` reads it: ``\\0`` a NUL, ``\\b``, ``\\n``, ``\\r``, ``\\t``, ``\\Z`` (Ctrl-Z), any other character after a
backslash itself (no octal or hex escape: ``\\012`` is a NUL and ``12``). R's ``write.table()`` escapes a quote but
no backslash (``C:\\dir`` as written, and a text's ``\\"`` as ``\\\\"``, which no reader tells from an escaped
backslash and a closing quote): no reading reads it right, so its ``\\"`` is refused under ``csv``.
"""

from __future__ import annotations

import re

from bertfeat.line_ends import LineEnds
from bertfeat.quotes import HeaderEnd

QUOTINGS = ("csv", "none", "backslash", "csv-backslash")
# an escape, or a carriage return no line feed follows: MySQL escapes no CR (mysql --batch writes a text's CRLF as a
# bare CR and \\n, INTO OUTFILE as a bare CR, a backslash and the LF), where pyarrow would end the row
_PAIR = re.compile(rb"\\(.)|\r(?!\n)", re.S)
# where lines end with CRLF: also a line feed that ends no CRLF (INTO OUTFILE ... LINES TERMINATED BY '\r\n' escapes
# the CR of a text's CRLF, and leaves its lone LF as written), after an escaped CR too; a CRLF, each line's end, is no
# match (matched whole, each a call of _pair, a 50 MB export took 0.21 s to rewrite, 0.16 s so; the lookbehind after
# the LF, where before it the pattern would lose its first bytes' set and take 0.69 s)
_PAIR_CRLF = re.compile(rb"\\\r\n|\\(.)|\r(?!\n)|\n(?<!\r\n)", re.S)
# where lines end with a lone CR (MySQL's LINES TERMINATED BY '\r', pandas' lineterminator='\r', which escape or quote
# a text's CR and leave its LF as written): a line feed no CR comes before is a value's own, a bare CR each line's end
_PAIR_CR = re.compile(rb"\\\r\n|\\(.)|\n(?<!\r\n)", re.S)
_SEPARATOR = 0x1F  # what stands for an escaped delimiter between the two steps
_QUOTE = 0x1E  # what stands for an escaped quote between the two steps (csv-backslash): no exporter's after one
_LETTERS = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.S)
_ESCAPE_QUOTED = re.compile(r"\\(.)", re.S)
# MySQL's LOAD DATA: what a backslash and a letter (or 0) stand for; any other character after one is itself
_LOAD_DATA = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", chr(_QUOTE): '"'}


def checked(quoting) -> str:
    """``quoting`` where it is one of :data:`QUOTINGS` (None: ``csv``), else a ValueError saying what each means."""
    if quoting is None:
        return "csv"
    if not isinstance(quoting, str) or quoting not in QUOTINGS:
        raise ValueError(f"quoting={quoting!r} is not valid: expected 'csv' (\" quotes a value, the default), 'none' "
                         "(no quoting: \" is a plain character), 'backslash' (no quoting, backslash escapes, \\N "
                         "missing: PostgreSQL's COPY text format, MySQL's INTO OUTFILE and mysql --batch) or "
                         "'csv-backslash' (\" quotes a value, backslash escapes, \\N missing: MySQL's INTO OUTFILE "
                         "... ENCLOSED BY '\"', and pandas' to_csv and Python's csv module with an escapechar).")
    return quoting


class EscapedBytes:
    """Rewrites a backslash-escaped stream, fed in pieces of any size, so that a value holds no delimiter or line
    break of its own: ``rewrite`` returns the bytes ready so far (a trailing backslash waits for the byte it
    escapes, a trailing carriage return for the byte that tells whether it ends a line), and ``rewrite(b"")`` at the
    end returns what waits. A carriage return no line feed follows is a value's own (escaped as ``\\r``) once the
    stream has shown a line feed: a file whose lines end with a bare CR keeps them. Where the stream's first line feed
    ends a CRLF, or its first line (outside a quoted name) ends with a lone CR, a line feed no (unescaped) carriage
    return comes before is a value's own too (``\\n``)."""

    def __init__(self, delimiter: str, quoted: bool = False):
        self._to = {ord("\n"): b"\\n", ord("\r"): b"\\r", ord(delimiter): b"\\" + bytes([_SEPARATOR])}
        if quoted:  # csv-backslash: an escaped quote would end its quoted value for pyarrow
            self._to[ord('"')] = b"\\" + bytes([_QUOTE])
        if delimiter == "\t":
            self._to[ord("\t")] = b"\\t"
        self.held = b""
        self._lf_seen = False
        self._cr_from = -1  # past which, in the piece being rewritten, a bare CR is a value's own
        self._crlf = False  # whether the stream's first line feed ends a CRLF: a lone LF is then a value's own
        # whether the first line (the header) ends with a lone CR, as each line then does: None until its end is seen
        self._lone_cr: bool | None = None
        self._header = HeaderEnd(quoted, escapes=True)  # where the header's line ends (its quoted names' breaks none)
        self._last = b""  # the stream's last bytes (ends_with_value_lf)
        # whether a line feed read as a value's came after the stream's last line end (ends_with_value_lf)
        self._lf_unended = False
        self._lf_at = -1  # where, in the piece being rewritten, the last line feed read as a value's is
        self._line_end = -1  # where, in the piece being rewritten, its last line end is
        self._offset = 0  # where in the piece the part being rewritten starts

    def rewrite(self, data: bytes) -> bytes:
        if data:
            self._last = (self._last + data)[-64:]
        return self._rewrite(data)

    @property
    def ends_with_value_lf(self) -> bool:
        """Whether the stream so far ends with a line feed alone (no CR before it, no backslash) where such a line feed
        is a value's (lines end with CRLF or a lone CR), or ends with no line end after such a line feed: an export
        that ends its lines so ends its last line so too, and a file whose lines after a CRLF header end with LF alone
        (mixed by joining or editing) is read as one row from its last CRLF on."""
        last = self._last
        if not (self._crlf or self._lone_cr):
            return False
        if last and not last.endswith((b"\n", b"\r")):
            return self._lf_unended  # no line end at all after the last: an editor's save, never such an export's
        if not last.endswith(b"\n") or last.endswith(b"\r\n"):
            return False
        return (len(last) - 1 - len(last[:-1].rstrip(b"\\"))) % 2 == 0

    def _rewrite(self, data: bytes) -> bytes:
        out = self._rewrite_piece(data)
        if self._crlf or self._lone_cr:  # a line end after the piece's last value's line feed ends that line
            self._lf_unended = self._lf_at > self._line_end or self._lf_unended and self._line_end < 0
        self._lf_at = -1
        return out

    def _rewrite_piece(self, data: bytes) -> bytes:
        self._line_end = -1  # where, in the piece, its last line end is (an escaped CR's among them: fewer refused)
        if not data:
            out, self.held = self.held, b""
            return out
        data = self.held + data
        trailing = len(data) - len(data.rstrip(b"\\"))
        if trailing % 2:  # a backslash whose escaped byte is in the next piece
            data, self.held = data[:-1], b"\\"
        elif data.endswith(b"\r") and (len(data) - 1 - len(data[:-1].rstrip(b"\\"))) % 2 == 0:
            data, self.held = data[:-1], b"\r"  # a bare CR: a line end where a line feed comes next
        else:
            self.held = b""
        if self._lone_cr is None:
            end = self._header.find(data)
            self._lone_cr = None if end is None else data[end] == 0x0D and data[end + 1:end + 2] != b"\n"
            if self._lone_cr:  # the header's line breaks inside a quoted name are pyarrow's to skip, as written
                self._cr_from = len(data)
                self._line_end = data.rfind(b"\r")
                head = _PAIR.sub(self._pair, data[:end])
                self._offset = end
                try:
                    return head + _PAIR_CR.sub(self._pair, data[end:])
                finally:
                    self._offset = 0
        if self._lone_cr:
            self._line_end = data.rfind(b"\r")
            return _PAIR_CR.sub(self._pair, data)
        if self._lf_seen:
            self._cr_from = -1
        else:
            first = data.find(b"\n")
            self._lf_seen = first >= 0
            self._cr_from = first if self._lf_seen else len(data)
            self._crlf = first > 0 and data[first - 1] == 0x0D  # the header's line end (a held CR is in data)
        self._line_end = data.rfind(b"\r\n")
        return (_PAIR_CRLF if self._crlf else _PAIR).sub(self._pair, data)

    def line_ends(self) -> LineEnds:
        """Where the stream's lines end, as rewritten so far: a bare CR is a value's where the header's line ends with
        LF or CRLF, a lone LF where it ends with CRLF or a lone CR."""
        return LineEnds(cr_in_values=self._lone_cr is False, lf_in_values=bool(self._crlf or self._lone_cr))

    def _pair(self, match: re.Match) -> bytes:
        if match[1] is not None:
            return self._to.get(match[1][0], match[0])
        if match[0] == b"\r":  # a bare CR
            return b"\\r" if match.start() > self._cr_from else match[0]
        # where lines end with CRLF: a lone LF, or an escaped CR and a lone LF
        self._lf_at = match.end() - 1 + self._offset
        return b"\\n" if match[0] == b"\n" else b"\\r\\n"


def decode(value: str, delimiter: str) -> str:
    """A value of a backslash-escaped export, as PostgreSQL's COPY FROM reads its text format (the module's
    docstring), after :class:`EscapedBytes`. An octal or hex escape is a byte of the file's UTF-8 text (past 255 an
    octal one keeps its low byte, as there): ``caf\\303\\251`` is ``café``. A ValueError says where escaped bytes
    are no UTF-8, which COPY FROM into a UTF-8 database refuses too."""
    high = False

    def one(m: re.Match) -> str:
        nonlocal high
        if m[1] or m[2]:
            byte = int(m[1], 8) & 0xFF if m[1] else int(m[2], 16)
            if byte < 0x80:
                return chr(byte)
            high = True
            return chr(0xDC00 + byte)  # the byte as surrogateescape holds it, joined with its neighbours below
        c = m[3]
        return delimiter if ord(c) == _SEPARATOR else _LETTERS.get(c, c)

    out = _ESCAPE.sub(one, value)
    if not high:
        return out
    try:  # the text pyarrow read holds no surrogate of its own (UTF-8 cannot), so each one is an escaped byte
        return out.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"holds escaped bytes that are no UTF-8 (the first, {exc.object[exc.start]:#04x}, in "
                         f"{value!r})") from None


def decode_quoted(value: str, delimiter: str) -> str:
    """A value of a quoted export with backslash escapes (``csv-backslash``), as MySQL's LOAD DATA reads it (the
    module's docstring), after :class:`EscapedBytes`: ``C:\\\\dir`` is ``C:\\dir``, ``say \\"hi\\"`` is ``say "hi"``,
    ``\\0`` a NUL."""

    def one(m: re.Match) -> str:
        c = m[1]
        return delimiter if ord(c) == _SEPARATOR else _LOAD_DATA.get(c, c)

    return _ESCAPE_QUOTED.sub(one, value)
