"""Arrow strings that are not UTF-8: a file written from raw bytes can hold them, Arrow's readers do not check, and
Python cannot read them (nor can parquet readers once they are written out). Finding the first one, to name it."""

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
