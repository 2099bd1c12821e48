"""Text that is not UTF-8. Arrow strings: a file written from raw bytes can hold them, Arrow's readers do not
check, and Python cannot read them (nor can parquet readers once they are written out). CSV files: written in
another encoding (Excel's Windows-1252; UTF-16 and files that hold no text at all are told by their first bytes,
:mod:`bertfeat.sniff`). Finding the first bad value or line, to name it."""

from __future__ import annotations

import pyarrow as pa


def plain_text(t: pa.DataType) -> bool:
    """A string type: string, large_string or string_view (pyarrow versions and pandas differ in which)."""
    return pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view",
                                                                           lambda _: False)(t)


def first_invalid_utf8(array) -> int | None:
    """The position of the first value of a string array (or chunked array) that is not valid UTF-8, or None."""
    if isinstance(array, pa.ChunkedArray):
        offset = 0
        for chunk in array.chunks:
            found = first_invalid_utf8(chunk)
            if found is not None:
                return offset + found
            offset += len(chunk)
        return None
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if not plain_text(array.type):
        return None
    try:
        array.validate(full=True)
        return None
    except pa.ArrowInvalid:
        pass
    lo, hi = 0, len(array)  # the first bad value is in [lo, hi): halve until one is left
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            array.slice(lo, mid - lo).validate(full=True)
            lo = mid
        except pa.ArrowInvalid:
            hi = mid
    return lo


def invalid_values(batch) -> tuple[str, int | None, str] | None:
    """``(column, row or None, what is wrong)`` for the first column of ``batch`` whose values Arrow finds invalid
    (a string that is not UTF-8, which Python cannot read and parquet readers refuse), or None. Arrow's own readers
    do not check this; a file written from raw bytes can hold it."""
    for name, column in zip(batch.schema.names, batch.columns):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as exc:
            row = first_invalid_utf8(column)
            if row is not None:
                return name, row, "holds bytes that are not UTF-8 text; re-encode that column's text as UTF-8."
            return name, None, f"holds invalid values: {str(exc).splitlines()[0]}."
    return None


def not_utf8_csv(path, fh) -> str | None:
    """What to tell a user whose CSV ``path`` is not UTF-8, read from ``fh`` (its decompressed bytes from the start,
    in a reader with ``peek``, as every one :func:`bertfeat.csv_stream.open_decompressed` gives is): the first line
    UTF-8 cannot decode, the byte, and how to convert the file; None if every line decodes.

    Python's decoder names a position in one of its own read pieces, which says nothing about where the byte is.
    """
    convert = "bertfeat reads CSV files as UTF-8: convert the file first, for example with iconv -f"
    from bertfeat.sniff import HEAD, not_csv_text

    said = not_csv_text(path, fh.peek(HEAD)[:HEAD])  # peek: the bytes stay for the lines below
    if said:
        return said
    mac = None  # whether lines end with a lone CR: Excel for Mac's "CSV (Macintosh)", in Mac Roman
    for number, line in enumerate(_lines(fh), start=1):
        if mac is None and line.endswith((b"\r", b"\n")):
            mac = not line.endswith(b"\n")
        try:
            line.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            at = line[max(0, exc.start - 40):exc.start + 20].rstrip(b"\r\n").decode("utf-8", "backslashreplace")
            said = (f"{path} is not UTF-8: line {number} holds byte 0x{line[exc.start]:02x}, which UTF-8 cannot "
                    f"decode (at '{at}'). {convert}")
            if mac:  # iconv -f cp1252 would turn its accents into other letters (Mac Roman's é is Windows' Ž)
                return (f"{said} macintosh -t utf-8 (its lines end with a lone CR, as Excel for Mac's \"CSV "
                        "(Macintosh)\" writes it, in Mac Roman).")
            return (f"{said} cp1252 -t utf-8 (if it was written as Windows-1252 or Latin-1, as Excel and R's "
                    "write.csv do on Windows).")
    return None


def _lines(fh, piece: int = 1 << 16):
    """The lines of the binary stream ``fh``, each with its end, ended as editors and Python's csv module end them:
    LF, CRLF or a lone CR (iterating a binary file splits at LF only, so a file of lone CRs was one line)."""
    rest = bytearray()  # the start of a line: cut short by the piece, or ended by a CR whose LF may come next
    for data in iter(lambda: fh.read(piece), b""):
        held_cr = rest.endswith(b"\r")
        rest += data
        if not held_cr and b"\n" not in data and b"\r" not in data:
            continue  # a long line goes on: split once it ends, never each piece again
        lines = bytes(rest).splitlines(keepends=True)  # bytes split at LF, CRLF and CR only
        rest = bytearray() if lines[-1].endswith(b"\n") else bytearray(lines.pop())
        yield from lines
    if rest:
        yield bytes(rest)
