"""Where the reader ends a CSV file's lines, so that every re-reading that names a problem's line (Python's csv module
given the file's lines, the scan for where a quote opened, a byte's line, the checks of an export's rows) splits them
as the reader does, and numbers them as an editor shows them.

The stream decides from the header's line end (:class:`bertfeat.csv_stream.LoneCR`,
:class:`bertfeat.escapes.EscapedBytes`): where it ends with LF or CRLF, a lone CR is part of its value
(``cr_in_values``), as Python's csv module and pandas write a text's lone CR unquoted; in a backslash-escaped export
whose lines end with CRLF or a lone CR, so is a line feed no CR comes before (``lf_in_values``), as MySQL's INTO
OUTFILE ... LINES TERMINATED BY '\\r\\n' and pandas' ``to_csv(lineterminator='\\r')`` write a text's LF. Split at such
a LF, Python's csv module ended the record there, so a refusal named the wrong row's line or found none (a quote closed
early was told "left open at the end of the file"). Lines are numbered as editors number them: every LF ends one (a
value's too, which an editor shows as a line break), a CRLF one, a lone CR one only where the reader ends a line there
(a file whose lines end with one) -- docs/cli.md's rule that a value's lone CR ends no line.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LineEnds:
    """Where the reader ends a file's lines: at LF and CRLF, and at a lone CR but where ``cr_in_values``; a LF no CR
    comes before is a value's where ``lf_in_values`` (an escaped export's: its readings escape with a backslash)."""

    cr_in_values: bool = False
    lf_in_values: bool = False

    def lines(self, fh):
        """The lines of the text file ``fh`` (read with ``newline=""``: each ends at LF, CRLF or a lone CR), each with
        its line end, as an editor numbers them: joined where one ends with a lone CR that is its value's."""
        return lines_joined_at_lone_cr(fh) if self.cr_in_values else fh

    def split(self, line: str) -> tuple[str, bool]:
        """``line`` (of :meth:`lines`) less its line end, and whether that end ends a line for the reader (a value's
        LF, under ``lf_in_values``, is left in the text, and ends none; nor does the end of the file's last line)."""
        if line.endswith("\r\n"):
            return line[:-2], True
        if line.endswith("\n"):
            return (line, False) if self.lf_in_values else (line[:-1], True)
        if line.endswith("\r"):
            return line[:-1], True
        return line, False

    def continued(self, line: str) -> str:
        """``line`` as Python's csv module, with a backslash for its escapechar, reads on past its end where that end
        is a value's (under ``lf_in_values``: a LF no CR comes before, or a CRLF after a backslash, which the reader
        reads as escaped): a backslash before it, so that the record goes on to the next line, numbered as the
        editor's."""
        if not self.lf_in_values:
            return line
        if line.endswith("\r\n"):
            body = line[:-2]
            if (len(body) - len(body.rstrip("\\"))) % 2:  # \ CRLF: the CR escaped, and the LF then the value's
                return body + "\r\\\n"
            return line
        if line.endswith("\n"):
            body = line[:-1]
            return line if (len(body) - len(body.rstrip("\\"))) % 2 else body + "\\\n"
        return line


def lines_joined_at_lone_cr(lines):
    """``lines`` (of a text file read with ``newline=""``: each ends at LF, CRLF or a lone CR) joined where one ends
    with a lone CR, as :class:`bertfeat.csv_stream.LoneCR` has pyarrow read them."""
    held = ""
    for line in lines:
        if line.endswith("\r"):
            held += line
            continue
        yield held + line
        held = ""
    if held:
        yield held
