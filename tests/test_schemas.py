"""Parquet files of one input whose column types differ (bertfeat/schemas.py): the type each pair is read as, the
values read in it on the local engine, and each refusal word for word. The Ray and Spark engines read the same
folder in tests/test_ray_worker.py and tests/test_spark_driver.py (against the local engine's output), and in real
jobs in tests/test_ray.py and tests/test_spark.py."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat.readers import InputReader
from bertfeat.schemas import _text, lost_value, may_lose, roomy, widened

WIDENED = pa.schema([("id", pa.int64()), ("n", pa.float64()), ("score", pa.float64()), ("at", pa.timestamp("ns")),
                     ("review", pa.string())])


def write_mixed_types(folder):
    """One dataset's two files as two tools write it: Spark's int32 id, float32 score, millisecond times and a pandas
    category text, beside pandas' int64 id, its count with a missing value (float), float64 and nanoseconds. Read
    as ``WIDENED``; the values are ``MIXED_ROWS``."""
    folder.mkdir()
    ms = [datetime.datetime(2024, 1, d, 9, 30, 15, 123000) for d in (1, 2, 3)]
    pq.write_table(pa.table({
        "id": pa.array([1, 2, 3], pa.int32()), "n": pa.array([10, 11, 2**40], pa.int64()),
        "score": pa.array([0.5, 0.25, 1.5], pa.float32()), "at": pa.array(ms, pa.timestamp("ms")),
        "review": pa.array(["the cat", "sat on", "the cat"]).dictionary_encode()}), folder / "a.parquet")
    pq.write_table(pa.table({
        "review": pa.array(["a mat", "dogs run"]), "id": pa.array([4, 2**40], pa.int64()),
        "n": pa.array([12.0, None]), "score": pa.array([0.1, 2.0]),
        "at": pa.array([1_704_067_200_000_000_001, 1_704_067_200_000_000_002], pa.timestamp("ns"))}),
        folder / "b.parquet")
    return folder


def mixed_rows():
    ms = [datetime.datetime(2024, 1, d, 9, 30, 15, 123000) for d in (1, 2, 3)]
    ns = pa.array([1_704_067_200_000_000_001, 1_704_067_200_000_000_002], pa.timestamp("ns")).to_pylist()
    return {"id": [1, 2, 3, 4, 2**40], "n": [10.0, 11.0, float(2**40), 12.0, None],
            "score": [0.5, 0.25, 1.5, 0.1, 2.0], "at": ms + ns,
            "review": ["the cat", "sat on", "the cat", "a mat", "dogs run"]}


# string_view is pyarrow 16's (the floor is 15): there its row is a skip, not an error collecting the whole file
_STRING_VIEW = ([(pa.string_view(), pa.string(), pa.string_view())] if hasattr(pa, "string_view") else
                [pytest.param(None, None, None, marks=pytest.mark.skip(reason=f"pyarrow {pa.__version__} has no "
                                                                              "string_view (pyarrow 16 on)"))])


@pytest.mark.parametrize("a, b, want", [
    (pa.int32(), pa.int64(), pa.int64()),
    (pa.int64(), pa.int8(), pa.int64()),
    (pa.uint16(), pa.uint32(), pa.uint32()),
    (pa.uint32(), pa.int32(), pa.int64()),
    (pa.uint8(), pa.int64(), pa.int64()),
    (pa.uint8(), pa.int8(), pa.int16()),  # an unsigned one as wide as the signed one: the next signed width
    (pa.uint16(), pa.int16(), pa.int32()),
    (pa.uint16(), pa.int8(), pa.int32()),
    (pa.uint64(), pa.int64(), None),
    (pa.float32(), pa.float64(), pa.float64()),
    (pa.float16(), pa.float32(), pa.float32()),
    (pa.int64(), pa.float64(), pa.float64()),
    (pa.int32(), pa.float32(), pa.float64()),
    (pa.int16(), pa.float32(), pa.float32()),
    (pa.float64(), pa.uint64(), pa.float64()),
    (pa.decimal128(10, 2), pa.decimal128(12, 2), pa.decimal128(12, 2)),
    (pa.decimal128(10, 2), pa.decimal128(9, 4), pa.decimal128(12, 4)),
    (pa.decimal128(38, 0), pa.decimal128(10, 2), None),
    (pa.decimal128(36, 0), pa.decimal128(10, 2), pa.decimal128(38, 2)),  # 38 digits: Spark's most
    (pa.decimal128(37, 0), pa.decimal128(10, 2), None),  # 39
    (pa.decimal128(5, 1), pa.int32(), None),
    (pa.timestamp("ms"), pa.timestamp("ns"), pa.timestamp("ns")),
    (pa.timestamp("us", "UTC"), pa.timestamp("s", "UTC"), pa.timestamp("us", "UTC")),
    (pa.timestamp("us", "UTC"), pa.timestamp("us"), None),
    (pa.timestamp("us", "UTC"), pa.timestamp("us", "Europe/Paris"), None),
    (pa.timestamp("us", "UTC"), pa.timestamp("ns", "Etc/UTC"), pa.timestamp("ns", "UTC")),
    (pa.timestamp("ms", "+00:00"), pa.timestamp("ms", "UTC"), pa.timestamp("ms", "+00:00")),
    (pa.dictionary(pa.int32(), pa.string()), pa.string(), pa.string()),
    (pa.large_string(), pa.dictionary(pa.int8(), pa.string()), pa.large_string()),
    (pa.string(), pa.large_string(), pa.string()),
    *_STRING_VIEW,
    (pa.dictionary(pa.int8(), pa.string()), pa.dictionary(pa.int32(), pa.string()),
     pa.dictionary(pa.int32(), pa.string())),
    (pa.null(), pa.int32(), pa.int32()),
    (pa.float64(), pa.null(), pa.float64()),
    (pa.string(), pa.int64(), None),
    (pa.dictionary(pa.int32(), pa.int64()), pa.int64(), None),
    (pa.date32(), pa.timestamp("ms"), None),
    (pa.bool_(), pa.int8(), None),
])
def test_the_type_two_files_types_are_read_as(a, b, want):
    assert widened(a, b) == want
    if not (_text(a) and _text(b)) and not (pa.types.is_timestamp(a) and a.tz != b.tz):  # in either order (text
        assert widened(b, a) == want  # takes the first file's plain type, UTC the first file's name of it)


def test_only_wide_integers_as_floating_point_and_timestamps_in_finer_units_have_their_values_checked():
    assert may_lose(pa.int64(), pa.float64()) and may_lose(pa.uint64(), pa.float64())
    assert may_lose(pa.int32(), pa.float32()) and not may_lose(pa.int32(), pa.float64())
    assert not may_lose(pa.int32(), pa.int64()) and not may_lose(pa.float32(), pa.float64())
    assert may_lose(pa.timestamp("us"), pa.timestamp("ns")) and not may_lose(pa.timestamp("ns"), pa.timestamp("ns"))
    # a column whose type is the one read (every file's int64 id beside the others') is never read twice
    assert not may_lose(pa.int64(), pa.int64()) and not may_lose(pa.uint32(), pa.uint32())


def test_a_dictionary_is_read_with_32_bit_indices_keeping_its_order_flag():
    """pandas writes an ordered category (``pd.Categorical(..., ordered=True)``: sizes, grades) as an ordered
    dictionary; a kept column read with wider indices is still ordered in the output."""
    assert roomy(pa.dictionary(pa.int8(), pa.string(), ordered=True)) == pa.dictionary(pa.int32(), pa.string(),
                                                                                        ordered=True)
    assert roomy(pa.dictionary(pa.int16(), pa.large_string())) == pa.dictionary(pa.int32(), pa.large_string())
    assert roomy(pa.dictionary(pa.int64(), pa.string())) == pa.dictionary(pa.int64(), pa.string())
    assert roomy(pa.string()) == pa.string()


def test_the_values_are_checked_batch_by_batch_to_the_last(tmp_path):
    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3, 4, 2**53 + 1], "x": [0] * 5}), path, row_group_size=2)
    assert lost_value(path, "id", pa.int64(), pa.float64(), batch_rows=2) == (
        "Integer value 9007199254740993 not in range: -9007199254740992 to 9007199254740992")
    assert lost_value(path, "x", pa.int64(), pa.float64(), batch_rows=2) is None


def test_files_whose_types_differ_without_loss_are_read_in_the_wider_type(tmp_path):
    """(found by a schemas hunt, 2026-11-26, session 8) one dataset's files written by Spark (int32 ids, float32,
    millisecond times) and by pandas (int64, a count with a missing value as double, nanoseconds, a category text)
    were refused "column 'id' is int64 in b.parquet but int32 in a.parquet; bertfeat will not cast one to the
    other", where pyarrow's unify_schemas(promote_options="permissive") and Spark's mergeSchema read them. Read now
    in the wider type, every value as it was."""
    folder = write_mixed_types(tmp_path / "in")
    reader = InputReader(str(folder), ["id", "n", "score", "at", "review"], 2, ["review"])
    assert reader.schema == WIDENED
    batches = list(reader.batches())
    assert [b.num_rows for b in batches] == [2, 2, 1] and all(b.schema == WIDENED for b in batches)
    assert pa.Table.from_batches(batches).to_pydict() == mixed_rows()


def test_decimals_of_other_precisions_and_scales_are_read_in_one_that_holds_both(tmp_path):
    """Spark writes a DecimalType(p, s) as its source had it: two extracts of one table on different days differ."""
    from decimal import Decimal

    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"price": pa.array([Decimal("12345678.91")], pa.decimal128(10, 2)), "text": ["a"]}),
                   d / "a.parquet")
    pq.write_table(pa.table({"price": pa.array([Decimal("12345.6789")], pa.decimal128(9, 4)), "text": ["b"]}),
                   d / "b.parquet")
    reader = InputReader(str(d), ["price", "text"], 10, ["text"])
    assert reader.schema.field("price").type == pa.decimal128(12, 4)
    assert [v for b in reader.batches() for v in b.column("price").to_pylist()] == [
        Decimal("12345678.9100"), Decimal("12345.6789")]


def test_timestamps_in_utc_under_other_names_are_one_zone(tmp_path):
    """(found by a schemas hunt, 2026-11-26, session 8) a file Spark wrote reads as tz "UTC", one pandas wrote with
    zoneinfo's UTC as "Etc/UTC": the same instants in the same zone were refused as two time zones."""
    import zoneinfo

    import pandas as pd

    d = tmp_path / "in"
    d.mkdir()
    at = pd.Timestamp("2024-03-01 12:00", tz=zoneinfo.ZoneInfo("Etc/UTC"))
    pd.DataFrame({"at": [at], "text": ["a"]}).to_parquet(d / "a.parquet", index=False)
    pq.write_table(pa.table({"at": pa.array([0], pa.timestamp("us", "UTC")), "text": ["b"]}), d / "b.parquet")
    written = pq.read_schema(d / "a.parquet").field("at").type
    assert written.tz == "Etc/UTC" and written.unit in ("us", "ns")  # pandas 3 writes us, pandas 2 ns
    reader = InputReader(str(d), ["at", "text"], 10, ["text"])
    assert reader.schema.field("at").type == written
    assert [v for b in reader.batches() for v in b.column("at").to_pylist()] == [
        at, datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)]


def refusal(folder) -> str:
    """The message of the ValueError a folder input of files whose types no type holds is refused with."""
    with pytest.raises(ValueError) as info:
        InputReader(str(folder), ["id", "text"], 10, ["text"])
    return str(info.value)


def test_files_whose_types_no_type_holds_without_loss_are_refused_naming_both_and_what_to_do(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    a = d / "a.parquet"
    pq.write_table(pa.table({"id": pa.array([1.5, None]), "text": ["x", "y"]}), a)
    b = d / "b.parquet"
    pq.write_table(pa.table({"id": pa.array([2, 2**53 + 1]), "text": ["z", "w"]}), b)
    assert refusal(d) == (
        f"column 'id' is int64 in {b} but double in {a}: read as double, a value of it would change (Integer value "
        "9007199254740993 not in range: -9007199254740992 to 9007199254740992), so the files are refused rather than "
        "read with another value. To read them, write 'id' as int64 in every file (pandas makes a column of whole "
        "numbers with a missing value float; df['id'].astype('Int64') keeps them whole); or embed the files of each "
        "type as inputs of their own.")
    pq.write_table(pa.table({"id": pa.array([2, 2**53]), "text": ["z", "w"]}), b)  # 2**53: a double holds it
    assert InputReader(str(d), ["id", "text"], 10, ["text"]).schema.field("id").type == pa.float64()

    pq.write_table(pa.table({"id": pa.array([1, 2]), "text": pa.array([0, 1], pa.timestamp("us", "UTC"))}), a)
    pq.write_table(pa.table({"id": pa.array([3]), "text": pa.array([2], pa.timestamp("ms"))}), b)
    assert refusal(d) == (
        f"column 'text' is timestamp[ms] in {b} but timestamp[us, tz=UTC] in {a}: no type holds the values of both "
        "without changing some, so bertfeat will not cast one to the other. To read them, give every file the one "
        "time zone (pandas: .dt.tz_localize('UTC') for the files without one, .dt.tz_convert('UTC') for the "
        "others), then write them again; or embed the files of each type as inputs of their own.")

    pq.write_table(pa.table({"id": pa.array([3]), "text": pa.array([2**62], pa.timestamp("us", "UTC"))}), b)
    pq.write_table(pa.table({"id": pa.array([3]), "text": pa.array([0], pa.timestamp("ns", "UTC"))}), d / "c.parquet")
    assert refusal(d) == (
        f"column 'text' is timestamp[us, tz=UTC] in {b} but timestamp[ns, tz=UTC] in {d / 'c.parquet'}: read as "
        "timestamp[ns, tz=UTC], a value of it would change (Casting from timestamp[us, tz=UTC] to timestamp[ns, "
        "tz=UTC] would result in out of bounds timestamp: 4611686018427387904), so the files are refused rather "
        "than read with another value. To read them, write the column in one type in every file (pandas: "
        ".astype('datetime64[us]')); or embed the files of each type as inputs of their own.")

    for f in (b, d / "c.parquet"):
        f.unlink()
    pq.write_table(pa.table({"id": pa.array(["A-3"]), "text": pa.array([0], pa.timestamp("us", "UTC"))}), b)
    assert refusal(d) == (
        f"column 'id' is string in {b} but int64 in {a}: no type holds the values of both without changing some, so "
        "bertfeat will not cast one to the other. To read them, rewrite the files with one type for 'id' (pandas: "
        "df['id'].astype(...), then to_parquet); or embed the files of each type as inputs of their own.")


def write_categories(folder, files=2, per_file=100):
    """A folder of pandas files with a category column ``label`` of other categories in each (pandas writes their
    codes as int8 below 128 categories), each file's row ``i`` labelled ``L<file>_<i>``."""
    import pandas as pd

    folder.mkdir()
    for k in range(files):
        ids = range(k * per_file, (k + 1) * per_file)
        pd.DataFrame({"id": ids, "label": pd.Categorical([f"L{k}_{i}" for i in range(per_file)]),
                      "review": [f"the cat {i % 7}" for i in ids]}).to_parquet(folder / f"{k}.parquet", index=False)
    return folder


def test_category_columns_of_other_categories_in_each_file_are_read_in_one_chunk(tmp_path):
    """(found by a schemas hunt, 2026-11-26, session 8) pandas writes a category column's codes as int8 while it
    has fewer than 128 categories: two files of 100 labels each, joined into one chunk, failed the job with
    pyarrow's "These dictionaries cannot be combined. The unified dictionary requires a larger index type" (a bare
    ArrowInvalid, after the chunks before it were written). A dictionary is now read with 32-bit indices."""
    folder = write_categories(tmp_path / "in")
    # the stored index width is read back from pyarrow 20 on; before, every dictionary came back int32 (no fault)
    read_back = pa.int8() if int(pa.__version__.split(".")[0]) >= 20 else pa.int32()
    assert pq.read_schema(folder / "0.parquet").field("label").type.index_type == read_back
    reader = InputReader(str(folder), ["id", "label", "review"], 150, ["review"])
    assert reader.schema.field("label").type == pa.dictionary(pa.int32(), pa.string())
    batches = list(reader.batches())
    assert [b.num_rows for b in batches] == [150, 50]
    assert pa.Table.from_batches(batches).column("label").to_pylist() == [
        f"L{k}_{i}" for k in range(2) for i in range(100)]
