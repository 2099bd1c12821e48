"""One type per column for the parquet files of one input whose types differ: what each engine reads them as.

Files of one dataset written by different tools or on different days give a column other types: Spark writes
``int32`` for an IntegerType column where pandas writes ``int64``, pandas writes an integer column with a missing
value as ``double``, a ``category`` column as ``dictionary<string>``, a datetime as ``timestamp[ns]`` where another
tool writes ``[us]`` or ``[ms]``. As pyarrow's ``unify_schemas(promote_options="permissive")`` and Spark's
``mergeSchema`` do, a widening that loses nothing is read, in the wider type, on every engine:

- integers of any widths: the widest (an unsigned one and a signed one: the signed one wider than it);
- floating point of any widths: the widest;
- decimals: one with the most digits before the point and after it (up to 38 digits, as far as Spark's go);
- integers and floating point: ``float64`` (``float32`` beside 8- and 16-bit integers), once every integer value
  is found to be a whole number float64 holds exactly (up to 2**53: an int64 id beyond it would become another id);
- timestamps of one time zone (or of none; ``UTC`` under any of its names) in different units: the finest unit
  (and the first file's name of the zone), once every value is found within its range (``timestamp[ns]`` ends in
  2262);
- text as ``string``, ``large_string``, ``string_view`` or ``dictionary<string>`` (pandas' category): the first
  plain string type of the first file with one, or where every file has a dictionary, a
  dictionary with 32-bit indices (:func:`roomy`: pandas' 8-bit codes of one file cannot index the categories of
  all);
- a column all missing in one file (``null``): the other files' type.

Any other pair (text and numbers, timestamps of two time zones or with and without one, dates and timestamps) is
refused by :func:`widened`'s caller, naming the column, the types and the files, and what to do.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat.utf8 import plain_text


def _text(t: pa.DataType) -> bool:
    return plain_text(t) or (pa.types.is_dictionary(t) and plain_text(t.value_type))


def _width(t: pa.DataType) -> int:
    return t.bit_width


# The names of UTC: a file Spark or polars wrote reads as "UTC", one pandas wrote with zoneinfo's "Etc/UTC" as that,
# the same instants in the same zone.
_UTC = frozenset({"UTC", "Etc/UTC", "UCT", "Etc/UCT", "Universal", "Etc/Universal", "Zulu", "Etc/Zulu", "Z",
                  "+00:00", "GMT", "Etc/GMT", "Etc/GMT+0", "Etc/GMT-0", "Etc/GMT0", "GMT0", "Greenwich",
                  "Etc/Greenwich"})


def widened(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type a column that is ``a`` in the files so far and ``b`` in the next is read as, or None where no type
    holds both without loss (``a`` wins a tie: the first file's type)."""
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    if _text(a) and _text(b):
        for t in (a, b):
            if plain_text(t):
                return t
        return roomy(a)  # two dictionaries of other index widths (or value types): their values, int32 indices
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        signed = [t for t in (a, b) if pa.types.is_signed_integer(t)]
        if len(signed) != 1:  # both signed, or both unsigned: the wider
            return a if _width(a) >= _width(b) else b
        other = b if signed[0] is a else a
        if _width(signed[0]) > _width(other):
            return signed[0]
        return {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}.get(_width(other))  # uint64 with a signed: none
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return a if _width(a) >= _width(b) else b
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in (a, b)):  # one integer, one floating point
        integer, floating = (a, b) if pa.types.is_integer(a) else (b, a)
        if _width(integer) <= 16 and _width(floating) >= 32:
            return floating
        return pa.float64()
    if pa.types.is_decimal(a) and pa.types.is_decimal(b):  # the most digits before and after the point
        scale = max(a.scale, b.scale)
        precision = max(a.precision - a.scale, b.precision - b.scale) + scale
        return pa.decimal128(precision, scale) if precision <= 38 else None  # Spark's decimals end at 38 digits
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b) and (a.tz == b.tz or {a.tz, b.tz} <= _UTC):
        return pa.timestamp(max((a, b), key=lambda t: ["s", "ms", "us", "ns"].index(t.unit)).unit, a.tz)
    return None


def roomy(t: pa.DataType) -> pa.DataType:
    """``t``, a dictionary with indices of at least 32 bits (pyarrow's default): pandas writes a category column's
    codes as int8 while it has fewer than 128 categories, and two files' (or row groups') categories together can
    be more than that, which a chunk that joins them cannot index (pyarrow: "These dictionaries cannot be combined.
    The unified dictionary requires a larger index type")."""
    if pa.types.is_dictionary(t) and t.index_type.bit_width < 32:
        return pa.dictionary(pa.int32(), t.value_type, t.ordered)
    return t


def may_lose(t: pa.DataType, wider: pa.DataType) -> bool:
    """Whether reading a ``t`` column as ``wider`` can change a value (then each file's values are checked):
    integers of more than 53 bits (or 24, to float32) as floating point, and timestamps in a finer unit."""
    if pa.types.is_integer(t) and pa.types.is_floating(wider):
        return _width(t) > (53 if _width(wider) == 64 else 24)
    return pa.types.is_timestamp(t) and t != wider


def lost_value(path, column: str, t: pa.DataType, wider: pa.DataType, batch_rows: int = 1 << 20) -> str | None:
    """The first value of ``column`` (type ``t``) in the parquet file ``path`` that ``wider`` cannot hold as it
    is, as its message, or None when every one can. Reads that one column, a batch at a time (bounded memory)."""
    with pq.ParquetFile(path, pre_buffer=False) as pf:
        for batch in pf.iter_batches(batch_size=batch_rows, columns=[column]):
            try:
                batch.column(0).cast(wider, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                return str(exc).splitlines()[0]
    return None


def refusal(column: str, t: pa.DataType, where, other: pa.DataType, other_where, lost: str | None = None,
            wider: pa.DataType | None = None) -> str:
    """The message refusing a column that is ``t`` in file ``where`` and ``other`` in file ``other_where``: no type
    holds both, or (``lost``: what :func:`lost_value` found) read as ``wider`` a value of ``where`` would change."""
    if lost is not None:
        why = (f"read as {wider}, a value of it would change ({lost}), so the files are refused rather than read "
               "with another value")
    else:
        why = "no type holds the values of both without changing some, so bertfeat will not cast one to the other"
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(other) and t.tz != other.tz:
        fix = ("give every file the one time zone (pandas: .dt.tz_localize('UTC') for the files without one, "
               ".dt.tz_convert('UTC') for the others), then write them again")
    elif lost is not None:
        fix = (f"write {column!r} as int64 in every file (pandas makes a column of whole numbers with a missing "
               f"value float; df[{column!r}].astype('Int64') keeps them whole)" if pa.types.is_integer(t) else
               "write the column in one type in every file (pandas: .astype('datetime64[us]'))")
    else:
        fix = f"rewrite the files with one type for {column!r} (pandas: df[{column!r}].astype(...), then to_parquet)"
    return (f"column {column!r} is {t} in {where} but {other} in {other_where}: {why}. To read them, {fix}; or "
            "embed the files of each type as inputs of their own.")
