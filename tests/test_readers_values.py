"""bertfeat.readers by value: which files an input names, every refusal word for word, the chunk cuts at their
bounds, the read restarted with a bigger block after rows were delivered, progress, the job's fingerprint. No model."""

import bz2
import gzip
import io
import os
import random
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat import csv_stream, readers
from bertfeat.csv_problems import split_unquoted
from bertfeat.readers import InputReader, _codec, resolve_input
from bertfeat.utf8 import plain_text as _plain_text


def refusal(call, *args, **kw) -> str:
    """The message of the ValueError, less the "Row #N: " pyarrow puts in its own when it parses on one thread (one
    CPU, or OMP_NUM_THREADS=1 as under mutmut): bertfeat's messages give the line, which does not depend on that."""
    with pytest.raises(ValueError) as info:
        call(*args, **kw)
    return re.sub(r"(CSV parse error|In CSV column #\d+): Row #\d+: ", r"\1: ", str(info.value))


def refusal_while_reading(reader) -> tuple[str, list[int]]:
    """The refusal that stops reading ``reader``, and the sizes of the chunks it delivered before it."""
    delivered = []

    def read_on():
        for batch in reader.batches():
            delivered.append(batch.num_rows)

    return refusal(read_on), delivered


def read_all(reader):
    batches = list(reader.batches())
    return pa.Table.from_batches(batches, schema=reader.schema), [b.num_rows for b in batches]


def csv_reader(path, columns, chunk_rows=1000, text_cols=None, **kw):
    kw.setdefault("infer_types", False)
    return InputReader(str(path), columns, chunk_rows, text_cols or [columns[-1]], **kw)


def write_parquet(path, **columns):
    pq.write_table(pa.table(columns), path)
    return path


# -- which files ---------------------------------------------------------------------------------------------------

def test_an_input_names_one_csv_or_parquet_files_and_anything_else_is_refused_word_for_word(tmp_path):
    # (absolute paths: a test that changes the working folder breaks mutmut's bookkeeping)
    one = tmp_path / "one.CSV"
    one.write_text("t\na\n")
    assert resolve_input(str(one)) == ("csv", [one])  # suffixes in any case
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    for name in ("b.parquet", "a.PQ", "sub/c.parq"):
        write_parquet(d / name, t=["x"])
    (d / "notes.txt").write_text("not data")
    assert resolve_input(str(d)) == ("parquet", [d / "a.PQ", d / "b.parquet", d / "sub" / "c.parq"])  # sorted, nested
    (d / "x.parquet.dir").mkdir()  # a folder the glob matches is not a file
    assert resolve_input(f"{d}/*.parquet*") == ("parquet", [d / "b.parquet"])

    with pytest.raises(FileNotFoundError) as info:
        resolve_input(f"{tmp_path}/nope/*.parquet")
    assert str(info.value) == f"input '{tmp_path}/nope/*.parquet' matches no files."
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(f"{tmp_path}/empty")
    assert str(info.value) == (f"input directory '{tmp_path}/empty' holds no parquet files (.parquet, .pq, .parq); "
                               "pass a CSV or parquet file, or a folder or glob of parquet files.")
    # a folder of CSV files (one export a month): said so, with what to do, where it read as if the folder were empty
    csvs = tmp_path / "monthly"
    csvs.mkdir()
    for m in ("01", "02"):
        (csvs / f"2024-{m}.csv").write_text("text\na\n")
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(str(csvs))
    assert str(info.value) == (
        f"input directory '{csvs}' holds no parquet files (.parquet, .pq, .parq) but 2 CSV file(s) ['2024-01.csv', "
        "'2024-02.csv']: a folder or glob is read as parquet files, a CSV as one file; embed each CSV file on its own, "
        "or join them into one CSV file (one header) first.")
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(f"{tmp_path}/gone.csv")
    assert str(info.value) == f"input '{tmp_path}/gone.csv' does not exist."
    (tmp_path / "two.csv").write_text("t\nb\n")
    assert refusal(resolve_input, f"{tmp_path}/*.[cC][sS][vV]") == (
        f"input '{tmp_path}/*.[cC][sS][vV]': expected one CSV file (.csv, .csv.gz, .csv.bz2, .csv.zst, .tsv, .tsv.gz, "
        ".tsv.bz2, .tsv.zst) or parquet files (.parquet, .pq, .parq), got ['one.CSV', 'two.csv']; embed each CSV file "
        "on its own, or join them into one CSV file (one header) first.")
    assert refusal(resolve_input, f"{d}/*").endswith(  # mixed kinds (the folder sub/ it matches read as a folder)
        "got ['a.PQ', 'b.parquet', 'c.parq', 'notes.txt'].")
    (tmp_path / "data.json").write_text("{}")
    assert "got ['data.json']; it is JSON (an array of records), which bertfeat does not read: convert it to parquet " \
           "first (python -c " in refusal(resolve_input, f"{tmp_path}/data.json")  # by its suffix (tests/test_exports)


def test_codecs_and_delimiters_follow_the_suffix_in_any_case(tmp_path):
    assert [_codec(Path(n)) for n in ("a.csv.GZ", "a.csv.bz2", "a.tsv.ZST", "a.csv", "a.gz.csv")] == [
        "gzip", "bz2", "zstd", None, None]
    for name, sep in (("a.TSV.gz", "\t"), ("a.tsv", "\t"), ("a.csv.gz", ","), ("a.tsv.csv", ","), ("tsv.csv", ",")):
        data = f"x{sep}y\n1{sep}2\n".encode()
        (tmp_path / name).write_bytes(gzip.compress(data) if name.lower().endswith(".gz") else data)
        reader = csv_reader(tmp_path / name, ["x", "y"])
        assert reader.delimiter == sep, name
        assert read_all(reader)[0].to_pylist() == [{"x": "1", "y": "2"}]


def test_a_declared_delimiter_is_checked_and_refused_for_parquet(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text("x,y\n1,2\n")
    for bad in ('"', "\n", "\r", "", ",,", 9):
        assert refusal(csv_reader, src, ["x"], delimiter=bad) == (
            f"delimiter={bad!r} is not valid: expected one ASCII character other than a quote or a line break (',' or "
            "';', or delimiter='\\t' for a tab).")
    for good in ("|", ";", "X", " "):  # any other single character is taken as given
        (tmp_path / "g.csv").write_text(f"x{good}y\n1{good}2\n")
        assert read_all(csv_reader(tmp_path / "g.csv", ["x", "y"], delimiter=good))[0].to_pylist() == [
            {"x": "1", "y": "2"}], good
    pq_file = write_parquet(tmp_path / "a.parquet", x=["1"])
    assert refusal(InputReader, str(pq_file), ["x"], 10, ["x"], delimiter=",") == (
        f"delimiter=',' applies to CSV input only, and {str(pq_file)!r} is parquet.")
    # infer_types=True too: parquet has its types, and a job recorded `reading.infer_types: true` for it (the
    # local engine's and Spark's manifest), silently, where the command line refuses --infer-types
    assert refusal(InputReader, str(pq_file), ["x"], 10, ["x"], infer_types=True) == (
        f"infer_types=True applies to CSV input only, and {str(pq_file)!r} is parquet, whose columns have their "
        "types; drop infer_types.")


def test_the_fingerprint_names_every_file_with_its_size_and_mtime(tmp_path):
    a = tmp_path / "aX.csv"  # (an X: a pattern is told by *, ? or [ alone)
    a.write_text("t\nx\n")
    os.utime(a, ns=(1_000_000_000_123, 2_000_000_000_456))
    relative = os.path.relpath(a)  # a path as typed is resolved, so the same file read from elsewhere is one job
    assert csv_reader(relative, ["t"]).fingerprint() == {
        "path": str(a.resolve()), "files": [[str(a.resolve()), 4, 2_000_000_000_456]],
        "identity": [a.stat().st_ctime_ns]}  # which file it is: see test_files_job.py
    p = tmp_path / "p"
    p.mkdir()
    write_parquet(p / "1.parquet", t=["x"])
    write_parquet(p / "2.parquet", t=["y", "z"])
    pattern = os.path.relpath(p) + "/*.parquet"
    glob_print = InputReader(pattern, ["t"], 10, ["t"]).fingerprint()
    # a pattern is made absolute (it names the same files read from another folder), not resolved: its * may match
    # a link, which resolving would turn into another path
    assert glob_print["path"] == str(p / "*.parquet") == os.path.abspath(pattern)
    assert [f[0] for f in glob_print["files"]] == [str(p.resolve() / n) for n in ("1.parquet", "2.parquet")]
    assert [f[1] for f in glob_print["files"]] == [os.path.getsize(p / n) for n in ("1.parquet", "2.parquet")]
    assert InputReader(os.path.relpath(p), ["t"], 10, ["t"]).fingerprint()["path"] == str(p.resolve())


# -- refusals, word for word ---------------------------------------------------------------------------------------

def test_headers_that_cannot_be_read_are_refused_word_for_word(tmp_path):
    cases = {
        "empty.csv": b"",
        "blank.csv": b"\n\n",
        "commas.csv": b",,\n1,2,3\n",
        "bad-header.csv": b'"a"b,c\n1,2\n',
        "latin1.csv": "caf\u00e9,b\n1,2\n".encode("latin-1"),
        "broken.csv.gz": b"not gzip at all",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    p = {name: str(tmp_path / name) for name in cases}
    assert refusal(csv_reader, p["empty.csv"], ["a"]) == f"{p['empty.csv']} is empty: no header line."
    assert refusal(csv_reader, p["blank.csv"], ["a"]) == f"{p['blank.csv']} is empty: no header line."
    assert refusal(csv_reader, p["commas.csv"], ["a"]) == (
        f"{p['commas.csv']} is malformed: line 1, where the header belongs, names no columns (it holds only delimiters "
        "or spaces); remove that line so the header comes first.")
    assert refusal(csv_reader, p["bad-header.csv"], ["a"]) == (
        f"{p['bad-header.csv']} has a malformed header: ',' expected after '\"'.")
    assert refusal(csv_reader, p["latin1.csv"], ["b"]) == (
        f"{p['latin1.csv']} is not UTF-8: line 1 holds byte 0xe9, which UTF-8 cannot decode (at 'caf\\xe9,b'). "
        "bertfeat reads CSV files as UTF-8: convert the file first, for example with iconv -f cp1252 -t utf-8 (if "
        "it was written as Windows-1252 or Latin-1, as Excel and R's write.csv do on Windows).")
    assert refusal(csv_reader, p["broken.csv.gz"], ["a"]) == (
        f"{p['broken.csv.gz']} is not gzip-compressed: its first bytes are text (a download that a browser or curl "
        "--compressed decompressed keeps its name); rename it broken.csv.")
    src = tmp_path / "a.csv"
    src.write_text("id,text\n1,a\n")
    assert refusal(csv_reader, src, ["text", "label", "x"]) == (
        f"column(s) ['label', 'x'] not found in {src}; it has columns ['id', 'text'].")


@pytest.mark.parametrize("name, blank", [("r.tsv", ""), ("r.csv", "\n\n")])
def test_rows_one_field_wider_than_the_header_as_rs_write_table_writes_them_say_how_to_write_them(tmp_path, name,
                                                                                                   blank):
    """(found by a files hunt, 2026-11-27, session 11) R's ``write.table(df, file)`` writes each row's name before
    its fields but no header cell above them (``read.table`` takes that to mean row names), so every row holds one
    field more than the header: refused "malformed at line 2: CSV parse error: Expected 2 columns, got 3", nothing
    said of why or what to do."""
    sep = "\t" if name.endswith(".tsv") else ","
    src = tmp_path / name  # what write.table(data.frame(id = 1:2, text = ...), sep = sep) writes
    src.write_text(blank + sep.join(['"id"', '"text"']) + "\n" + sep.join(['"1"', "1", '"a cat"']) + "\n"
                   + sep.join(['"2"', "2", '"a dog"']) + "\n")
    line, row = 2 + blank.count("\n"), sep.join(['"1"', "1", '"a cat"'])
    assert refusal(lambda: read_all(csv_reader(src, ["id", "text"]))) == (
        f"{src} is malformed at line {line}: CSV parse error: Expected 2 columns, got 3: "
        f"{row}. The header names one column fewer than the rows hold, as R's "
        "write.table() writes a data frame with its row names: write it with row.names = FALSE (or with "
        "write.csv(), which names the row names' column \"\").")
    # one row wider further on is a ragged row, no such file: no word of R; nor rows ending with a delimiter (of files
    # that quote nothing: told so, session 15)
    src.write_text(f"id{sep}text\n1{sep}a\n2{sep}b{sep}c\n")
    assert refusal(lambda: read_all(csv_reader(src, ["id", "text"]))) == (
        f"{src} is malformed at line 3: CSV parse error: Expected 2 columns, got 3: 2{sep}b{sep}c{split_unquoted(sep)}")
    src.write_text(f"id{sep}text\n1{sep}a{sep}\n2{sep}b{sep}\n")
    assert refusal(lambda: read_all(csv_reader(src, ["id", "text"]))) == (
        f"{src} is malformed at line 2: CSV parse error: Expected 2 columns, got 3: 1{sep}a{sep}{split_unquoted(sep)}")


@pytest.mark.parametrize("sep", [",", "\t"])
def test_a_row_of_another_width_is_refused_with_its_line(tmp_path, sep):
    src = tmp_path / ("w.tsv" if sep == "\t" else "w.csv")
    src.write_text(sep.join(["id", "text"]) + "\n" + f"1{sep}a\n2{sep}\"two\nlines\"\n3{sep}b{sep}extra\n4{sep}c\n")
    assert refusal(lambda: read_all(csv_reader(src, ["id", "text"]))) == (
        f"{src} is malformed at line 5: CSV parse error: Expected 2 columns, got 3: 3{sep}b{sep}extra")


def test_a_bad_row_after_the_first_read_block_is_refused_with_its_line(tmp_path):
    src = tmp_path / "late.csv"
    n = 150_000  # about 2 MB: the bad row comes after pyarrow's first 1 MB block, while batches are delivered
    with open(src, "w") as fh:
        fh.write("id,text\n")
        fh.writelines(f"{i},row {i}\n" for i in range(n))
        fh.write("x,y,z\n")
    reader = csv_reader(src, ["id", "text"], chunk_rows=10_000)
    message, delivered = refusal_while_reading(reader)
    assert message == (f"{src} is malformed at line {n + 2}: CSV parse error: Expected 2 columns, got 3: x,y,z"
                       f"{split_unquoted(',')}")  # a file that quotes nothing: told so (session 15)
    assert delivered and sum(delivered) < n  # the refusal came mid-file, as the reading went
    assert reader._counting.closed


def test_text_that_is_not_utf8_past_the_header_is_refused(tmp_path):
    src = tmp_path / "l.csv"
    # past the first 8 KB, which the header's reading decodes (and refuses as "cannot read ... as UTF-8 CSV")
    src.write_bytes(("id,text\n" + "".join(f"{i},ok\n" for i in range(5000)) + "5000,caf\u00e9\n").encode("latin-1"))
    assert refusal(lambda: read_all(csv_reader(src, ["id", "text"]))).startswith(
        f"{src} is not UTF-8: line 5002 holds byte 0xe9, which UTF-8 cannot decode (at '5000,caf\\xe9'). bertfeat "
        "reads CSV files as UTF-8: convert the file first")


def test_a_file_that_is_not_utf8_is_named_by_its_line_and_told_how_to_convert(tmp_path):
    """The decoder's 'position 6138' was an offset into one of its own read pieces, and no word said what to do;
    a UTF-16 file (Excel's "Unicode text") read as one undecodable first byte."""
    import gzip

    src = tmp_path / "u16.csv"
    src.write_bytes("id,text\n1,caf\u00e9\n".encode("utf-16"))
    assert refusal(csv_reader, src, ["text"]) == (
        f"{src} is UTF-16 (it begins with a UTF-16 byte order mark), not UTF-8: bertfeat reads CSV files as UTF-8: "
        f"convert it first (iconv -f utf-16 -t utf-8 {src} > {tmp_path}/u16-utf8.csv) and pass {tmp_path}/u16-utf8.csv.")
    gz = tmp_path / "l.csv.gz"
    lines = "id,text\n" + "".join(f"{i},fine\n" for i in range(3000)) + "3000,a long text of \u00e9t\u00e9 heat\n"
    gz.write_bytes(gzip.compress(lines.encode("latin-1")))
    assert refusal(lambda: read_all(csv_reader(gz, ["id", "text"]))).startswith(
        f"{gz} is not UTF-8: line 3002 holds byte 0xe9, which UTF-8 cannot decode (at '3000,a long text of \\xe9t\\xe9 "
        "heat'). bertfeat reads CSV files as UTF-8")




@pytest.mark.parametrize("name, hint", [
    ("export.tab", "if it is text separated by tabs, name it export.tsv (or by commas, export.csv); if it holds one "
     "text a line and no header, put one first and read it without quoting: (echo text; cat export.tab) > "
     "export.tsv, then pass text_cols='text' and quoting='none'."),
    ("export.TXT", "if it is text separated by tabs, name it export.tsv (or by commas, export.csv); if it holds one "
     "text a line and no header, put one first and read it without quoting: (echo text; cat export.TXT) > "
     "export.tsv, then pass text_cols='text' and quoting='none'."),
    ("reviews.csv.xz", "decompress it (xz -d), or compress it again as reviews.csv.gz, .bz2 or .zst."),
    ("reviews.tsv.lz4", "decompress it (lz4 -d), or compress it again as reviews.tsv.gz, .bz2 or .zst."),
    ("reviews.zip", "unzip it and name the CSV file, or the folder of parquet files, it holds."),
    ("reviews.csv.zip", "unzip it and name the CSV file, or the folder of parquet files, it holds."),
    ("book.xlsx", 'save it from Excel as "CSV UTF-8" (book.csv).'),
    ("reviews.gz", "if it is a compressed CSV file, name it reviews.csv.gz (or .tsv.gz)."),
])
def test_a_file_of_a_suffix_bertfeat_does_not_read_is_told_what_to_do(tmp_path, name, hint):
    """A tab-separated export named .tab or .txt, an xz or zip download, a workbook: each was refused "expected one
    CSV file (...) or parquet files (...), got ['export.tab']", with nothing said of what to do."""
    src = tmp_path / name
    src.write_bytes(b"id\ttext\n1\ta\n")
    assert refusal(resolve_input, str(src)) == (
        f"input {str(src)!r}: expected one CSV file (.csv, .csv.gz, .csv.bz2, .csv.zst, .tsv, .tsv.gz, .tsv.bz2, "
        f".tsv.zst) or parquet files (.parquet, .pq, .parq), got [{name!r}]; {hint}")


def test_parquet_files_without_a_parquet_suffix_are_said_to_be_parquet_with_what_to_do(tmp_path):
    """Hive and Impala name a table's parquet files 000000_0: a folder of them was "holds no parquet files", which
    it does, and one such file "expected one CSV file ... or parquet files ..., got ['000000_0']", nothing said of
    the suffix bertfeat tells parquet by."""
    table = tmp_path / "warehouse" / "reviews"
    table.mkdir(parents=True)
    for name in ("000000_0", "000001_0", "000002_0_copy_1"):
        write_parquet(table / name, text=["a"])
    (table / "_SUCCESS").write_text("")
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(str(table))
    assert str(info.value) == (
        f"input directory {str(table)!r} holds no parquet files (.parquet, .pq, .parq) but 3 file(s) of parquet "
        "without such a suffix ['000000_0', '000001_0', '000002_0_copy_1'] (as Hive and Impala name them): bertfeat "
        "tells parquet by its suffix: rename them with one (000000_0.parquet), or link them under such names in "
        "another folder and pass that.")
    assert refusal(resolve_input, str(table / "000000_0")).endswith(
        "got ['000000_0']; it is a parquet file (its first bytes say so): name it 000000_0.parquet.")
    assert refusal(resolve_input, f"{table}/0*").endswith(
        "got ['000000_0', '000001_0', '000002_0_copy_1']; those without a parquet suffix are parquet files (their "
        "first bytes say so; Hive and Impala name them so): rename them with one (000000_0.parquet).")

def test_a_file_that_is_no_csv_text_is_named_as_what_it_is_not_told_to_convert_from_cp1252(tmp_path):
    """A compressed file without its suffix (a download saved as .csv), an Excel workbook renamed .csv, a zip, a
    parquet file under a .csv name: each was "not UTF-8: line 1 holds byte 0x8b ... iconv -f cp1252 -t utf-8",
    advice that turns the bytes into garbage text; a UTF-32 file was said to be UTF-16."""
    import io
    import lzma
    import zipfile

    data = b"id,text\n1,a\n"
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("in.csv", data)
    parquet = io.BytesIO()
    pq.write_table(pa.table({"id": [1], "text": ["a"]}), parquet)
    compressed = ("is compressed ({}: its first bytes say so), but its name does not end with {}, so it was read as "
                  "text: rename it {}.")
    for name, blob, said in [
        ("g.csv", gzip.compress(data), compressed.format("gzip", ".gz", "g.csv.gz")),
        ("b.tsv", bz2.compress(data), compressed.format("bz2", ".bz2", "b.tsv.bz2")),
        ("z.csv", b"\x28\xb5\x2f\xfd" + b"\0" * 20, compressed.format("zstd", ".zst", "z.csv.zst")),
        ("x.csv", lzma.compress(data), "is xz-compressed (its first bytes say so), which bertfeat does not read: "
                                       "decompress it (xz -d), or compress it again as .gz, .bz2 or .zst."),
        ("w.csv", zipped.getvalue(), "is a zip archive (its first bytes say so; an Excel .xlsx workbook is one too), "
                                     "not CSV text: unzip it, or save the workbook from Excel as \"CSV UTF-8\"."),
        ("o.csv", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600,
         "is an Excel .xls workbook (its first bytes say so), not CSV text: save it from Excel as \"CSV UTF-8\"."),
        ("p.csv", parquet.getvalue(), "is a parquet file (its first bytes say so), not CSV text: name it p.parquet."),
        ("in.csv.gz", gzip.compress(parquet.getvalue()),
         "is a parquet file compressed as gzip (its first bytes say so), not CSV text: decompress it and name it "
         "in.parquet."),
        ("twice.csv.gz", gzip.compress(gzip.compress(data)),
         "is compressed twice (gzip data in its gzip compression; its first bytes say so): decompress it, then "
         "compress it once."),
        ("u32.csv", "id,text\n1,a\n".encode("utf-32"),
         "is UTF-32 (it begins with a UTF-32 byte order mark), not UTF-8: bertfeat reads CSV files as UTF-8: convert "
         f"it first (iconv -f utf-32 -t utf-8 {tmp_path}/u32.csv > {tmp_path}/u32-utf8.csv) and pass "
         f"{tmp_path}/u32-utf8.csv."),
    ]:
        src = tmp_path / name
        src.write_bytes(blob)
        assert refusal(csv_reader, src, ["text"]) == f"{src} {said}", name



def test_a_zstd_file_compressed_with_a_long_window_is_refused_saying_how_to_read_it(tmp_path):
    """``zstd --long=31`` (what big exports use; streamed input keeps the whole window) writes frames needing more
    than the 128 MiB window pyarrow's zstd reader allows: refused "cannot read ... as UTF-8 CSV: ZSTD decompress
    failed: Frame requires too much memory for decoding", as if the file were not CSV, nothing said of what to do.
    The frame is built by hand (a 2 GiB window descriptor, one raw block), as zstd --long=31 writes its header."""
    data = b"id,text\n1,a\n2,b\n"
    block = (1 | len(data) << 3).to_bytes(3, "little") + data  # the last block, raw
    for log, readable in ((27, True), (31, False)):
        src = tmp_path / f"w{log}.csv.zst"
        src.write_bytes(b"\x28\xb5\x2f\xfd" + bytes([0x00, (log - 10) << 3]) + block)
        if readable:
            assert read_all(csv_reader(src, ["id", "text"]))[0].column("id").to_pylist() == ["1", "2"]
            continue
        said = (f"{src} cannot be read: it was compressed with zstd's long window (--long=28 or more, or --ultra), "
                "more than the 128 MiB pyarrow's zstd reader takes. Decompress it (zstd -d --long=31) and pass the CSV "
                "file, or compress it again with --long=27 at most.")
        assert refusal(csv_reader, src, ["id", "text"]) == said
    # such a frame past the first read block (concatenated files): refused as the reading meets it
    rows = b"".join(b"%d,some words\n" % i for i in range(200_000))
    pieces = [rows[i:i + 100_000] for i in range(0, len(rows), 100_000)]
    first = b"".join((int(k == len(pieces) - 1) | len(p) << 3).to_bytes(3, "little") + p for k, p in enumerate(pieces))
    src.write_bytes(b"\x28\xb5\x2f\xfd" + bytes([0x00, 17 << 3]) + (1 | 8 << 3).to_bytes(3, "little") + b"id,text\n"
                    + b"\x28\xb5\x2f\xfd" + bytes([0x00, 17 << 3]) + first
                    + b"\x28\xb5\x2f\xfd" + bytes([0x00, 21 << 3]) + block)
    assert refusal(lambda: read_all(csv_reader(src, ["id", "text"], chunk_rows=1000))) == said

def test_a_utf16_file_without_a_byte_order_mark_is_told_so(tmp_path):
    """UTF-16 without its byte order mark (PowerShell's and some .NET exports' "Unicode" without a BOM) was read as
    UTF-8, every other byte a NUL: "column(s) ['id', 'text'] not found ...; it has columns ['i\\x00d\\x00',
    '\\x00t\\x00e\\x00x\\x00t\\x00']", nothing said of why."""
    for order in ("le", "be"):
        src = tmp_path / f"{order}.csv"
        src.write_bytes("id,text\n1,caf\u00e9\n".encode(f"utf-16-{order}"))
        assert refusal(csv_reader, src, ["id", "text"]) == (
            f"{src} is UTF-16 without a byte order mark (every other byte is 0), not UTF-8: bertfeat reads CSV files "
            f"as UTF-8: convert it first (iconv -f utf-16{order} -t utf-8 {src} > {tmp_path}/{order}-utf8.csv) and "
            f"pass {tmp_path}/{order}-utf8.csv.")
    src = tmp_path / "nul.csv"  # a NUL here and there in UTF-8 text is no such file
    src.write_bytes(b"id,text\n1,a\x00b\n2,c\x00\x00d\n")
    assert read_all(csv_reader(src, ["id", "text"]))[0].column("text").to_pylist() == ["a\x00b", "c\x00\x00d"]

def test_a_mac_csv_with_lone_cr_line_ends_is_named_by_its_line_and_told_its_encoding(tmp_path):
    """(found by a files hunt, 2026-11-27, session 11) Excel for Mac's "CSV (Macintosh)" is Mac Roman with lone CR line
    ends: every byte UTF-8 cannot decode was said to be on line 1 (lines were split at LF only), and the advice,
    iconv -f cp1252, turns its accents into other letters (Mac Roman's 0x8e, é, is Windows-1252's Ž) without a
    word."""
    src = tmp_path / "mac.csv"
    src.write_bytes(("id,text\r" + "".join(f"{i},plain\r" for i in range(3000)) + "3000,caf\u00e9 au lait\r"
                     ).encode("mac_roman"))
    assert refusal(lambda: read_all(csv_reader(src, ["id", "text"]))) == (
        f"{src} is not UTF-8: line 3002 holds byte 0x8e, which UTF-8 cannot decode (at '3000,caf\\x8e au lait'). "
        "bertfeat reads CSV files as UTF-8: convert the file first, for example with iconv -f macintosh -t utf-8 (its "
        "lines end with a lone CR, as Excel for Mac's \"CSV (Macintosh)\" writes it, in Mac Roman).")
    # converted so, it reads right
    (tmp_path / "ok.csv").write_text(src.read_bytes().decode("mac_roman"))
    assert read_all(csv_reader(tmp_path / "ok.csv", ["id", "text"]))[0].column("text").to_pylist()[-1] == (
        "caf\u00e9 au lait")
    # CRLF and LF files: Windows-1252, lines as before; a CRLF split between two read pieces is one line end
    for eol in ("\r\n", "\n"):
        # (the CR of line 2's CRLF the last byte of a 64 KiB piece)
        src.write_bytes(("id,text" + eol + "x" * 65_525 + "," + eol + "2,caf\u00e9" + eol).encode("cp1252"))
        assert refusal(csv_reader, src, ["id", "text"]).startswith(
            f"{src} is not UTF-8: line 3 holds byte 0xe9, which UTF-8 cannot decode (at '2,caf\\xe9'). bertfeat reads "
            "CSV files as UTF-8: convert the file first, for example with iconv -f cp1252 -t utf-8 (if"), eol


@pytest.mark.parametrize("quoting", ["csv", "none", None])
def test_a_lone_cr_pythons_csv_module_and_pandas_leave_unquoted_is_part_of_its_value(tmp_path, quoting):
    """(found by a CSV writers hunt, 2026-11-27, session 14) Python's csv module and pandas' to_csv quote a value
    holding a character of their line terminator, and '\\n' (the default on Linux and macOS) holds no CR: a text's
    lone carriage return (an old Mac's line break, a web form's) was written unquoted, and read as a line end. A file
    of several columns was refused 'Expected 3 columns, got 2' with nothing said of why; a file of one column gave two
    rows for one, silently. A CR no LF follows is now part of its value where the file's first line ends with LF or
    CRLF; a file whose lines end with a lone CR (Excel for Mac's) is read as before."""
    texts = ["a\rb", "\rstarts", "two\r\rCRs", "\ufdd0 and \ufdd0\r!", "plain", "quoted, \r too"]
    # (a CR ending a row's last value is written before the LF that ends the row: read as a CRLF line end, the reading
    # of a file whose lines end with CRLF; ending any other value, it is kept)
    frame = pd.DataFrame({"id": [str(i) for i in range(len(texts))], "label": "ends\r", "text": texts})
    src = tmp_path / "pandas.csv"
    frame.to_csv(src, index=False, lineterminator="\n")
    assert b",a\rb\n" in src.read_bytes()  # as pandas writes it: unquoted
    if quoting == "none":
        frame.to_csv(src, index=False, lineterminator="\n", sep="\t")  # no value holds a quote or a tab
        src = src.rename(tmp_path / "pandas.tsv")
    table, _ = read_all(csv_reader(src, ["id", "label", "text"], quoting=quoting))
    assert table.column("text").to_pylist() == texts
    assert table.column("label").to_pylist() == ["ends\r"] * len(texts)
    one = tmp_path / ("one.tsv" if quoting == "none" else "one.csv")  # a file of one column: no ragged row tells
    frame[["text"]].to_csv(one, index=False, lineterminator="\n", sep="\t" if quoting == "none" else ",")
    assert read_all(csv_reader(one, ["text"], quoting=quoting))[0].column("text").to_pylist() == texts
    crlf = tmp_path / "crlf.csv"  # lines ending with CRLF: a lone CR is a value's own there too
    crlf.write_bytes(b"id,text\r\n1,a\rb\r\n2,c\r\n")
    assert read_all(csv_reader(crlf, ["id", "text"], quoting=quoting))[0].column("text").to_pylist() == ["a\rb", "c"]
    if quoting != "none":  # lines counted as the reader ends them: a lone CR in a value is no line end
        bad = tmp_path / "bad.csv"
        bad.write_bytes(b'id,text\n1,a\rb\n2,"c\rd",extra\n')
        assert refusal(lambda: read_all(csv_reader(bad, ["id", "text"], quoting=quoting))) == (
            f'{bad} is malformed at line 3: CSV parse error: Expected 2 columns, got 3: 2,"c\\rd",extra')
        bad.write_bytes(b'id,text\n1,a\rb\n2,"x\ry" z\n3,"open\r\n4,x\n')
        assert refusal(csv_reader, bad, ["id", "text"], quoting=quoting).startswith(
            f"{bad} is malformed at line 3: a quoted value (opened at line 3) has more text after its closing quote")
        bad.write_bytes(b'id,text\n1,a\rb\n2,x\r\n3,"open\rstill\n4,x\n')
        assert refusal(lambda: read_all(csv_reader(bad, ["id", "text"], quoting=quoting))).startswith(
            f"{bad} is malformed: a quote opened at line 4 is never closed")
    if quoting != "none":  # a lone CR that ended a line (line ends mixed): refused, saying so and how to convert
        hint = ("Line 2 holds a carriage return alone, read as part of its value, as Python's csv module and pandas "
                "write a text's CR (unquoted) where lines end with LF or CRLF, as this file's first line does; if it "
                "ends a line (line ends mixed by joining or editing files), give every line one end first, for example "
                "with tr '\\r' '\\n' < in.csv > out.csv (every CR a line end: the blank lines it leaves are skipped).")
        mixed = tmp_path / "mixed.csv"
        mixed.write_bytes(b"id,text\n1,spe\rc,ial\n2,b\n")
        assert refusal(csv_reader, mixed, ["id", "text"], quoting=quoting) == (
            f"{mixed} is malformed at line 2: CSV parse error: Expected 2 columns, got 3: 1,spe\\rc,ial. {hint}")
        mixed.write_bytes(b'text\n"a"\rb\nc\n')  # one column: the quotes were dropped, 'a\rb' read, silently
        # (there a blank line is a missing value, session 17: tr would leave one for each CRLF)
        one = hint.replace("with tr '\\r' '\\n' < in.csv > out.csv (every CR a line end: the blank lines it leaves are "
                           "skipped).", "with perl -pe 's/\\r\\n?/\\n/g' < in.csv > out.csv (each CRLF and each CR "
                           "alone one line end; tr '\\r' '\\n' would leave a blank line for each CRLF, in a file of one "
                           "column a row whose value is missing).")
        assert one != hint
        assert refusal(csv_reader, mixed, ["text"], quoting=quoting).endswith(f"at line 2. {one}")
    quote = tmp_path / ("quote.tsv" if quoting == "none" else "quote.csv")  # a quote after a lone CR opens no value
    quote.write_bytes(b'id\ttext\n1\tsaid\r"hi\n2\tb\n'.replace(b"\t", b"\t" if quoting == "none" else b","))
    assert read_all(csv_reader(quote, ["id", "text"], quoting=quoting))[0].column("text").to_pylist() == [
        'said\r"hi', "b"]  # (the quote scanner took the CR for a line end: "a quote is left open at the end")
    mac = tmp_path / "mac.csv"  # Excel for Mac: lone CR line ends, a cell's line break a quoted LF
    mac.write_bytes(b'id,text\r1,"two\nlines"\r2,b\r3,c\r')
    assert read_all(csv_reader(mac, ["id", "text"], quoting="csv" if quoting == "none" else quoting))[0].to_pydict() == {
        "id": ["1", "2", "3"], "text": ["two\nlines", "b", "c"]}


def test_a_files_own_marks_in_a_piece_with_no_cr_are_read_as_written_beside_a_later_lone_cr(tmp_path, monkeypatch):
    """(found by a review of session 14's merged work, 2026-11-27, session 14) LoneCR looked for the three bytes of
    U+FDD0 in every piece of every CSV whose lines end with LF, a scan that cost 0.03 s a 50 MB file (an eighth of
    reading it); it now looks for U+FDD0's first byte first. A piece holding the file's own U+FDD0 and no CR must
    still have it kept apart from the pairs standing for a lone CR, as each batch may be read back once a later piece
    holds one: here the first rows hold U+FDD0 U+FDD2 (the pair standing for a CR) and U+FDD0 U+FDD1, the last a
    lone CR, in 4 KB pieces."""
    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 12)
    own = ["x\ufdd0\ufdd2y", "\ufdd0\ufdd1", "\ufdd0", "\uff0c fullwidth: no mark"]
    texts = own + [f"row {i}" for i in range(2_000)] + ["a\rb"]
    src = tmp_path / "marks.csv"
    src.write_bytes(("text\n" + "".join(f"{t}\n" for t in texts)).encode())
    assert src.stat().st_size > 4 * (1 << 12) and src.read_bytes().count(b"\r") == 1
    assert read_all(csv_reader(src, ["text"]))[0].column("text").to_pylist() == texts


def test_a_line_feed_outside_quotes_in_a_file_of_lone_cr_lines_is_refused_naming_its_line(tmp_path, monkeypatch):
    """(found by a CSV dialects hunt, 2026-11-27, session 15) pandas' to_csv(lineterminator='\\r') (Python's csv
    module with that terminator) quotes a value holding a CR and leaves one holding a line feed unquoted: pyarrow
    ended the row there, so a file of one column read the text 'two\\nlines' as the two texts 'two' and 'lines',
    silently, and a wider one was refused 'Expected 2 columns, got 1' with nothing said of why. Now a file of one
    column is refused naming the line, before any row past it is delivered, and a wider one's ragged row is refused
    so; a line feed inside a quoted value (Excel for Mac's), or ending a CRLF, is read, and a wider file whose line
    ends are mixed but whose rows each have the header's width reads as before."""
    texts = ["plain", "two\nlines", "c"]
    one = tmp_path / "one.csv"
    pd.DataFrame({"text": texts}).to_csv(one, index=False, lineterminator="\r")
    assert one.read_bytes() == b"text\rplain\rtwo\nlines\rc\r"
    said = ("ends with a line feed alone, outside a quoted value, where the file's lines end with a carriage return "
            "alone (as its first line does): pandas' to_csv() and Python's csv module with a line terminator of a lone "
            "CR write a text's line break so, unquoted, and line ends mixed by joining or editing files leave one; "
            "read as a line end it would cut its row in two (in a file of one column, one text into two). Pass "
            "quoting='csv-backslash', which reads such a line feed as part of its value, where the file holds no "
            "backslash or its backslashes escape the character after them (pandas' to_csv() with an escapechar); else "
            "write the file again with the default line terminator (a line feed, with which those writers quote such a "
            "value) or with every value quoted (csv.QUOTE_ALL); if each line feed ends a line, give every line one end "
            "first, for example with tr '\\r' '\\n' < in.csv > out.csv.")
    assert refusal(lambda: read_all(csv_reader(one, ["text"]))) == f"{one}: line 3 {said}"
    # (session 16) the reading it names reads it, as pandas wrote it; so with an escapechar, a text's \ and " escaped
    assert read_all(csv_reader(one, ["text"], quoting="csv-backslash"))[0].column("text").to_pylist() == texts
    wide = tmp_path / "wide.csv"
    frame = pd.DataFrame({"id": ["1", "2", "3"], "text": texts})
    frame.to_csv(wide, index=False, lineterminator="\r")
    assert refusal(lambda: read_all(csv_reader(wide, ["id", "text"]))) == f"{wide}: line 3 {said}"
    frame.assign(text=["C:\\dir", "two\nlines", 'say "hi"']).to_csv(wide, index=False, lineterminator="\r",
                                                                     escapechar="\\", doublequote=False)
    assert refusal(lambda: read_all(csv_reader(wide, ["id", "text"]))) == f"{wide}: line 3 {said}"
    assert read_all(csv_reader(wide, ["id", "text"], quoting="csv-backslash"))[0].column("text").to_pylist() == [
        "C:\\dir", "two\nlines", 'say "hi"']
    tsv = tmp_path / "none.tsv"  # quoting none: no value is quoted; after a BOM, the lines the same
    tsv.write_bytes("\ufeffid\ttext\r1\tplain\r2\tx\ny\r".encode())
    assert refusal(lambda: read_all(csv_reader(tsv, ["id", "text"], quoting="none"))) == f"{tsv}: line 3 {said}".replace(
        "quoting='csv-backslash'", "quoting='backslash'")
    assert read_all(csv_reader(tsv, ["id", "text"], quoting="backslash"))[0].column("text").to_pylist() == [
        "plain", "x\ny"]
    pd.DataFrame({"text": texts}).to_csv(one, index=False, lineterminator="\r", quoting=1)  # quoted: read
    assert read_all(csv_reader(one, ["text"]))[0].column("text").to_pylist() == texts
    # a CRLF ends a line there too, and in a wider file line ends mixed read as before where every row has its width
    mixed = tmp_path / "mixed.csv"
    mixed.write_bytes(b"id,text\r1,a\r\n2,b\n3,c\r")
    assert read_all(csv_reader(mixed, ["id", "text"]))[0].column("text").to_pylist() == ["a", "b", "c"]
    one.write_bytes(b"text\ra\r\nb\r")
    assert read_all(csv_reader(one, ["text"]))[0].column("text").to_pylist() == ["a", "b"]
    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 12)  # past the first read blocks: before its rows are delivered
    far = tmp_path / "far.csv"
    far.write_bytes(b"id,text\r" + b"".join(b"%d,row %d\r" % (i, i) for i in range(2_000)) + b'x,"q\nq"\ry,a\nb\r')
    delivered = []
    with pytest.raises(ValueError) as info:  # (pyarrow may read blocks ahead: then refused at construction)
        for batch in csv_reader(far, ["id", "text"]).batches():
            delivered.extend(batch.column("id").to_pylist())
    assert str(info.value) == f"{far}: line 2004 {said}" and "y" not in delivered


@pytest.mark.parametrize("header", ["t", "id", "text"])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["", "bom"])
@pytest.mark.parametrize("compress", [None, gzip.compress], ids=["", "gz"])
def test_a_problem_is_named_at_the_editors_line_whatever_the_headers_length(tmp_path, header, bom, compress):
    """(found by a review of session 16's CSV work, 2026-11-27, session 17) the refusals that name a line from a byte's
    offset (a quote escaped with a backslash in a value not quoted, a lone-CR file's line feed outside quotes) read the
    file's first 3 bytes to leave out a byte order mark, and where there was none counted no line end in them: a file
    of one column whose header line is under 3 bytes with its end ("t\n", "id\n", "t\r\n", "t\r") was named one
    line short (line 3 for the editor's 4). Each is named at the line an editor shows, with a BOM or without, as
    written or gzipped."""
    def editors_line(data: bytes, marker: str) -> int:
        lines = data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return next(number for number, text in enumerate(lines, 1) if marker in text)

    for end in ("\n", "\r\n"):
        data = bom + (header + end + end.join(["hello", "world", 'say \\"hi\\" there', "more"]) + end).encode()
        src = tmp_path / ("escaped.csv" + (".gz" if compress else ""))
        src.write_bytes(compress(data) if compress else data)
        said = refusal(lambda: read_all(csv_reader(src, [header])))
        assert said.startswith(f"{src}: line {editors_line(data, 'say')} holds a quote escaped with a backslash"), said
    data = bom + (header + "\rhello\rwor\nld\rmore\r").encode()  # pandas' to_csv(lineterminator='\r')'s text LF
    src = tmp_path / ("lone_cr.csv" + (".gz" if compress else ""))
    src.write_bytes(compress(data) if compress else data)
    said = refusal(lambda: read_all(csv_reader(src, [header])))
    assert said.startswith(f"{src}: line {editors_line(data, 'wor')} ends with a line feed alone"), said


@pytest.mark.parametrize("quoting", [None, "csv-backslash"])
def test_a_stray_quote_is_named_at_its_line_not_at_a_quoted_value_after_the_one_it_closed_early(tmp_path, quoting):
    """(found by a CSV dialects hunt, 2026-11-27, session 15) a stray quote at line 3 ran into line 4's '"3","x"':
    the value it opened closes at line 4's first quote, with text after it, and the refusal named line 4 as where the
    value opened and told the user to remove a stray quote there, the line of '"x"', a quoted value after the one
    closed early (open_quote_line read the whole line). Under quoting='csv-backslash' an escaped quote (\\")
    before the stray one (here before a comma) opens and closes nothing, and the hint of R's write.table() is given
    only where a quote follows escaped backslashes (\\\\"), as R writes a text's backslash before a quote."""
    src = tmp_path / "stray.csv"
    src.write_text('"id","text"\n"1","a \\"q\\" b"\n"2","open \\", here\n"3","x"\n"4","y"\n' if quoting else
                   'id,text\n1,a\n2,"open here\n"3","x"\n4,y\n')
    said = refusal(csv_reader, src, ["id", "text"], quoting=quoting)
    assert said == (
        f"{src} is malformed at line 4: a quoted value (opened at line 3) has more text after its closing quote (',' "
        "expected after '\"'); quote the whole value and double each quote inside it (\"\"), or remove a stray quote "
        "at line 3."), said
    if quoting:
        src.write_text('"id","text"\n"1","R\'s \\\\"q\\""\n')  # R's write.table() of the text R's \"q"
        assert refusal(csv_reader, src, ["id", "text"], quoting=quoting).endswith(
            "and read it with no quoting.")


def test_an_escaped_exports_refusals_name_the_line_an_editor_shows_where_a_value_holds_a_line_end(tmp_path):
    """(found by a CSV leftovers hunt, 2026-11-27, session 16) under quoting='csv-backslash' and 'backslash' the reader
    reads a value's own line end as MySQL and pandas write it (a LF no CR comes before where lines end with CRLF or a
    lone CR, a bare CR where they end with LF or CRLF), but the re-reading that finds a problem's line gave Python's
    csv module the file split at each: the record ended there, so a ragged row was named at the line of the text's
    second half ('lines', line 3) where the row of three fields is at line 5, and a quote left open after it (or
    closed early) was "left open at the end of the file". Now every re-reading splits lines as the reader does, and
    numbers them as an editor shows them (every LF a line; a value's lone CR none, as docs/cli.md says)."""
    def refused(name, data, quoting):
        src = tmp_path / name
        src.write_bytes(data)
        return refusal(lambda: read_all(csv_reader(src, ["id", "text"], quoting=quoting))), src

    ragged = "CSV parse error: Expected 2 columns, got 3: 3\tx\tz"
    # MySQL's INTO OUTFILE (no ENCLOSED BY) with LINES TERMINATED BY '\r\n' or '\r': a text's LF as written, its CR
    # after a backslash; mysql --batch, LF lines: a text's CRLF as a bare CR and \n
    for name, data, line in [
            ("crlf.tsv", b"id\ttext\r\n1\ttwo\nlines\r\n2\tok\r\n3\tx\tz\r\n", 5),
            ("cr.tsv", b"id\ttext\r1\ttwo\nlines\r2\tok\r3\tx\tz\r", 5),
            ("crlf_in_text.tsv", b"id\ttext\r\n1\ttwo\\\r\nlines\r\n2\tok\r\n3\tx\tz\r\n", 5),
            ("batch.tsv", b"id\ttext\n1\ta\r\\nb\n2\tok\n3\tx\tz\n", 4)]:
        said, src = refused(name, data, "backslash")
        assert said == f"{src} is malformed at line {line}: {ragged}", said
    # pandas' to_csv(lineterminator='\r', escapechar='\\', doublequote=False), a row then edited by hand
    frame = pd.DataFrame({"id": ["1", "2"], "text": ["two\nlines", "C:\\dir"]})
    written = frame.to_csv(index=False, lineterminator="\r", escapechar="\\", doublequote=False).encode()
    assert written == b"id,text\r1,two\nlines\r2,C:\\\\dir\r"
    said, src = refused("early.csv", written + b'3,"bad" x"\r4,y\r', "csv-backslash")
    assert said == (
        f"{src} is malformed at line 5: a quoted value (opened at line 5) has more text after its closing quote (',' "
        "expected after '\"'); quote the whole value and double each quote inside it (\"\"), or remove a stray quote "
        "at line 5."), said
    said, src = refused("open.csv", written + b'3,"open\r4,y\r', "csv-backslash")
    assert said == (f"{src} is malformed: a quote opened at line 5 is never closed, so the rest of the file would be "
                    "one value; close the quote (or double it, \"\", inside a quoted value)."), said
    # MySQL's INTO OUTFILE ... ENCLOSED BY '"' LINES TERMINATED BY '\r\n': a text's LF as written, inside quotes
    said, src = refused("enclosed.csv", b'"id","text"\r\n"1","two\nlines"\r\n"2","open\r\n"3","x"\r\n',
                        "csv-backslash")
    assert said.startswith(f"{src} is malformed at line 5: a quoted value (opened at line 4) has more text"), said
    # ... LINES TERMINATED BY '\n': a text's CR as written, inside quotes, a value's (no line, as in a CSV read so)
    said, src = refused("enclosed_cr.csv", b'"id","text"\n"1","a\rb"\n"2","open\n"3","x"\n', "csv-backslash")
    assert said.startswith(f"{src} is malformed at line 4: a quoted value (opened at line 3) has more text"), said
    said, src = refused("enclosed_cr.csv", b'"id","text"\n"1","a\rb"\n"2","open\n', "csv-backslash")
    assert said.startswith(f"{src} is malformed: a quote opened at line 3 is never closed"), said


@pytest.mark.parametrize("quoting", ["backslash", "csv-backslash"])
def test_an_escaped_export_whose_last_line_ends_with_a_values_line_feed_is_named_at_its_ragged_row(tmp_path, quoting):
    """(found by a review of session 16's CSV work, 2026-11-27, session 17) where the header's line ends with CRLF (a
    header typed in a Windows editor before rows a Linux export wrote) a LF alone is a value's under an escaped reading
    (as MySQL's INTO OUTFILE ... LINES TERMINATED BY '\\r\\n' writes a text's), so the rows run into one, too wide;
    the re-reading that names its line carried the file's last line on past its LF too (line_ends' continued), into
    the end of the file, and under 'csv-backslash' Python's csv module said "unexpected end of data": refused as "a
    quote opened at line 2 is never closed" in a file that holds no quote. The last line ends the last record, as the
    reader ends it: named at its line."""
    for data, line in [(b"id\ttext\r\n1\ta\n2\tb\n", 3), (b"id\ttext\r\n1\ta\n2\tb\n3\tc", 4),
                       (b"id\ttext\r1\ta\n2\tb\n", 3)]:
        src = tmp_path / "mixed.tsv"
        src.write_bytes(data)
        said = refusal(lambda: read_all(csv_reader(src, ["id", "text"], quoting=quoting)))
        assert said.startswith(f"{src} is malformed at line {line}: CSV parse error: Expected 2 columns, got "), said
        assert "quote" not in said


@pytest.mark.parametrize("quoting", ["backslash", "csv-backslash"])
def test_rows_an_escaped_reading_runs_into_one_at_a_line_feed_alone_are_told_the_line_ends_are_mixed(tmp_path, quoting):
    """(found by a review of session 16's CSV work, 2026-11-27, session 17) PostgreSQL's \\copy ... TO writes no header
    (before 15) and ends lines with LF; a header typed before it in a Windows editor ends with CRLF, and under
    quoting='backslash' (as the docs advise for such an export) a LF alone is then a value's, as MySQL's INTO OUTFILE
    ... LINES TERMINATED BY '\\r\\n' writes a text's: the rows ran into one, refused "Expected 2 columns, got 3"
    with R's write.table() row names for why (a file of one row too wide) or nothing, never the line ends. Now the
    line that ends with a LF alone is named, what the reading makes of it, and what to do; a ragged row of an export
    whose lines each end with CRLF is told nothing of line ends."""
    for name, data, ragged, first in [
            ("windows_header.tsv", b"id\ttext\r\n1\ta\n2\tb\n3\tc\n", 4, 2),
            ("appended.tsv", b"id\ttext\r\n1\ta\r\n2\tb\r\n3\tc\n4\td\r\n", 5, 4),
            ("lone_cr_header.tsv", b"id\ttext\r1\ta\n2\tb\n", 3, 2)]:
        src = tmp_path / name
        src.write_bytes(data)
        said = refusal(lambda: read_all(csv_reader(src, ["id", "text"], quoting=quoting)))
        crlf = data.startswith(b"id\ttext\r\n")
        header_end = "CRLF" if crlf else "a carriage return alone"
        fix = ("sed 's/\\r$//' < in.csv > out.csv" if crlf else
               "tr '\\r' '\\n' < in.csv > out.csv (every CR a line end: the blank lines it leaves are skipped)")
        assert said.startswith(f"{src} is malformed at line {ragged}: CSV parse error: Expected 2 columns, got "), said
        assert said.endswith(
            f". Line {first} ends with a line feed alone, where the file's first line ends with {header_end}: under "
            f"quoting={quoting!r} such a line feed is part of its value, as MySQL's SELECT ... INTO OUTFILE ... LINES "
            "TERMINATED BY writes a line break inside a value, so the lines after it were read into its row; if each "
            "line feed ends a line (line ends mixed by joining or editing files), give every line one end first, for "
            f"example with {fix}."), said
        assert "row names" not in said
    src = tmp_path / "mysql.tsv"  # each line ends with CRLF: a ragged row is a ragged row
    src.write_bytes(b"id\ttext\r\n1\ttwo\nlines\r\n2\tx\ty\r\n")
    said = refusal(lambda: read_all(csv_reader(src, ["id", "text"], quoting=quoting)))
    assert said == f"{src} is malformed at line 4: CSV parse error: Expected 2 columns, got 3: 2\tx\ty", said


@pytest.mark.parametrize("quoting", ["backslash", "csv-backslash"])
def test_a_file_of_one_column_whose_last_line_ends_with_a_line_feed_alone_is_refused_not_read_as_one_text(
        tmp_path, quoting):
    """(found by a review of session 16's CSV work, 2026-11-27, session 17) the test above's file of one column: no row
    comes out too wide, and its rows were read as one text ('a\\nb\\nc\\n' for the three), silently. An export that
    ends its lines with CRLF or a lone CR ends its last line so too: a file whose last line ends with a LF alone is
    refused, before that row is delivered, naming the lines read into it; MySQL's own, a text's LF inside, is read."""
    for data, lines, crlf in [(b"text\r\na\nb\nc\n", "2 to 4", True), (b"text\r\nok\r\na\nb\n", "3 to 4", True),
                              (b"text\ra\nb\n", "2 to 3", False)]:
        src = tmp_path / "one.csv"
        src.write_bytes(data)
        delivered = []

        def read_on():
            for batch in csv_reader(src, ["text"], chunk_rows=1, quoting=quoting).batches():
                delivered.extend(batch.column("text").to_pylist())

        said = refusal(read_on)
        # a file of one column: tr '\r' '\n' would leave a blank line for each CRLF, there a row whose value is missing
        # (found by a review of session 17's CSV work: the advice said they were skipped)
        header_end, fix = (("CRLF", "sed 's/\\r$//' < in.csv > out.csv") if crlf else (
            "a carriage return alone",
            "perl -pe 's/\\r\\n?/\\n/g' < in.csv > out.csv (each CRLF and each CR alone one line end; tr '\\r' "
            "'\\n' would leave a blank line for each CRLF, in a file of one column a row whose value is missing)"))
        assert said == (
            f"{src}: its last line ends with a line feed alone, where its first line ends with {header_end}, as an "
            f"export that ends lines so ends every line, the last too: under quoting={quoting!r} a line feed alone is "
            "part of its value, as MySQL's SELECT ... INTO OUTFILE ... LINES TERMINATED BY writes a line break inside "
            f"a value, so lines {lines} would be read as one row. If each line feed ends a line (line ends mixed by "
            f"joining or editing files), give every line one end first, for example with {fix}."), said
        assert all("\n" not in text for text in delivered)
    src = tmp_path / "mysql.csv"  # MySQL's INTO OUTFILE ... LINES TERMINATED BY '\r\n': a text's LF as written
    src.write_bytes(b"text\r\ntwo\nlines\r\nok\r\n")
    assert read_all(csv_reader(src, ["text"], quoting=quoting))[0].column("text").to_pylist() == ["two\nlines", "ok"]


@pytest.mark.parametrize("quoting", ["backslash", "csv-backslash"])
def test_a_file_of_one_column_whose_last_line_has_no_end_after_a_line_feed_alone_is_refused_not_read_as_one_text(
        tmp_path, quoting):
    """(found by a review of session 17's CSV work, 2026-11-27, session 17) the test above's refusal looked at the last
    byte only: the same file with no line end after its last line (an editor's save, a header typed before rows
    pasted in) was read as one text ('a\nb\nc' for the three), silently. No export that ends its lines with CRLF or a
    lone CR leaves its last line without one, so a last line holding a line feed alone and no end is refused as the
    test above's is; a last line with no end and no such line feed (an export's last row, its end cut) is read."""
    for data, lines, crlf in [(b"text\r\na\nb\nc", "2 to 4", True), (b"text\r\nok\r\na\nb", "3 to 4", True),
                              (b"text\ra\nb\nc", "2 to 4", False)]:
        for name, write in [("one.csv", Path.write_bytes), ("one.csv.gz", lambda p, d: p.write_bytes(gzip.compress(d)))]:
            src = tmp_path / name
            write(src, data)
            delivered = []

            def read_on():
                for batch in csv_reader(src, ["text"], chunk_rows=1, quoting=quoting).batches():
                    delivered.extend(batch.column("text").to_pylist())

            said = refusal(read_on)
            header_end, typed = ("CRLF", "\\r\\n") if crlf else ("a carriage return alone", "\\r")
            assert said.startswith(
                f"{src}: its last line holds no line end and comes after a line feed alone, where its first line "
                f"ends with {header_end}, as an export that ends lines so ends every line, the last too: under "
                f"quoting={quoting!r} a line feed alone is part of its value, as MySQL's SELECT ... INTO OUTFILE ... "
                f"LINES TERMINATED BY writes a line break inside a value, so lines {lines} would be read as one "
                "row. If each line feed ends a line"), said
            assert said.endswith(f"; if it is such an export whose last line end was cut off, end its last line as "
                                 f"the others end, for example with printf '{typed}' >> "
                                 "in.csv."), said
            assert all("\n" not in text for text in delivered), delivered
    for data, want in [(b"text\r\ntwo\nlines\r\nok", ["two\nlines", "ok"]), (b"text\r\na\r\nb", ["a", "b"]),
                       (b"text\ra\rb", ["a", "b"]), (b"text\r\na\r\nb\\\nc", ["a", "b\nc"])]:
        src = tmp_path / "export.csv"  # no line feed alone in its last line, or one escaped: read as before
        src.write_bytes(data)
        assert read_all(csv_reader(src, ["text"], quoting=quoting))[0].column("text").to_pylist() == want, data


@pytest.mark.parametrize("quoting", ["backslash", "csv-backslash"])
def test_a_ragged_row_of_any_escaped_export_is_named_at_the_line_an_editor_shows(tmp_path, quoting):
    """(session 16, the test above as a property) MySQL's INTO OUTFILE, without ENCLOSED BY ('backslash') and with it
    ('csv-backslash'), of random texts of line breaks of each kind, tabs, commas, quotes and backslashes, in lines
    ending with LF, CRLF or a lone CR, one row of three fields among them: refused naming that row at the line an
    editor shows (each LF a line, a lone CR only where lines end with one). At the session's start a scratch run of
    300 such files each named 126 ('backslash') and 45 ('csv-backslash') elsewhere."""
    rng = random.Random(16)
    alphabet = ["a", " ", "\n", "\r", "\r\n", "\t", "\\", ",", '"']
    src = tmp_path / ("outfile.tsv" if quoting == "backslash" else "outfile.csv")
    for _ in range(40):
        term = rng.choice(["\n", "\r\n", "\r"])
        escaped = ("\\", "\t" if quoting == "backslash" else '"', term[0])  # what INTO OUTFILE escapes

        def value(v):
            v = "".join("\\" + c if c in escaped else c for c in v)
            return v if quoting == "backslash" else f'"{v}"'

        sep = "\t" if quoting == "backslash" else ","
        rows = [sep.join(map(value, [str(i), "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))]))
                for i in range(rng.randint(1, 6))]
        ragged = sep.join(map(value, "xyz"))
        rows.insert(rng.randint(0, len(rows)), ragged)
        text = term.join([sep.join(map(value, ["id", "text"])), *rows]) + term
        src.write_bytes(text.encode())
        before = text[:text.index(ragged)]
        line = before.count("\n") + (len(re.findall("\r(?!\n)", before)) if term == "\r" else 0) + 1
        said = refusal(lambda: read_all(csv_reader(src, ["id", "text"], quoting=quoting)))
        # (a hint may follow: R's row names where the row is the first)
        assert said.startswith(f"{src} is malformed at line {line}: CSV parse error: Expected 2 columns, got 3: "
                               f"{ragged}"), (text, said)


def test_a_files_own_mark_split_between_read_pieces_is_read_as_written(tmp_path, monkeypatch):
    """(found by a CSV dialects hunt, 2026-11-27, session 15) LoneCR escaped a U+FDD0 of the file's own only where a
    read piece held its three bytes whole: one cut by pyarrow's read block after its first or second byte reached
    pyarrow as written, and once any lone CR had been marked, the text's U+FDD0 U+FDD2 came back as a CR and its
    U+FDD0 U+FDD1 as U+FDD0, silently. Here each cut of the mark at a 4 KB block's end, and LoneCR fed one, two
    and three bytes at a time."""
    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 12)
    for cut in (1, 2):
        for own in ("x\ufdd0\ufdd2y", "\ufdd0\ufdd1", "\ufdd0"):
            pad = "p" * ((1 << 12) - len("text\n") - len("\n") - len("x".encode()[:own.startswith("x")]) - cut)
            texts = [pad, own, "a\rb"]
            src = tmp_path / "marks.csv"
            src.write_bytes(("text\n" + "".join(f"{t}\n" for t in texts)).encode())
            assert src.read_bytes()[(1 << 12) - cut:(1 << 12) - cut + 3] == "\ufdd0".encode()
            assert read_all(csv_reader(src, ["text"]))[0].column("text").to_pylist() == texts, (cut, own)
    data = "text\nx\ufdd0\ufdd2y\n\ufdd0\ufdd1\ufdd0\na\rb\n".encode()
    whole = csv_stream.LoneCR().rewrite(data)
    for size in (1, 2, 3):
        cuts = [at for at in range(size, len(data), size) if data[at - 1:at] != b"\r"]  # as _CountingFile cuts
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
        lone = csv_stream.LoneCR()
        assert b"".join(lone.rewrite(p) for p in pieces) == whole, size
    assert whole.count("\ufdd1".encode()) == 4 and whole.count("\ufdd0".encode()) == 4  # 3 escaped, 1 CR


def test_the_lines_of_a_byte_stream_are_split_as_bytes_splitlines_splits_them_whatever_the_pieces():
    from bertfeat.utf8 import _lines

    rng = random.Random(3)
    cases = [b"a\r\nb\rc\nd", b"", b"\r\n", b"a\r", b"\r\r\n\n", b"x" * 70_000 + b"\r" + b"\ny"]
    cases += [bytes(rng.choice(b"ab\r\n") for _ in range(rng.randint(0, 40))) for _ in range(300)]
    for data in cases:
        for piece in (1, 2, 3, 7, 1 << 16):
            assert list(_lines(io.BytesIO(data), piece)) == data.splitlines(keepends=True), (data, piece)


@pytest.mark.parametrize("name, encoding, out", [
    ("export.txt", "utf-16", "export.tsv"),  # Excel's "Unicode Text"
    ("export.csv", "utf-16", "export.tsv"),  # the same renamed .csv: its tabs name the converted file
    ("export.tsv", "utf-16", "export-utf8.tsv"),  # never the input's own name
    ("export.tsv.gz", "utf-16", "export.tsv"),
    ("export.TAB", "utf-32", "export.tsv"),
    ("out file.txt", "utf-16-le", "out file.tsv"),  # Windows PowerShell's Out-File, BOM and all; a space quoted
])
def test_a_utf16_or_utf32_export_is_told_how_to_convert_it_to_a_file_bertfeat_reads_in_one_refusal(
        tmp_path, name, encoding, out):
    """(found by a files hunt, 2026-11-27, session 11) Excel's "Unicode Text" is UTF-16 separated by tabs, saved as
    .txt: it was told to take the name .tsv, then, renamed, refused as UTF-16 ("convert the file first, for example
    with iconv -f utf-16 -t utf-8"): two refusals, and neither said which file to write or pass; the same file named
    .csv, converted, was then read as one column holding tabs. Now one refusal gives the whole command, naming a
    file bertfeat reads, which reads the rows right."""
    import shlex

    first = "the_first_column_of_a_wide_export"  # its tab past the first 64 bytes, which tell the encoding
    text = f"{first}\tid\ttext\r\nx\t1\tcaf\u00e9 au lait\r\ny\t2\t\"two\tfields\"\r\n"
    data = ("\ufeff" + text).encode("utf-16-le") if encoding == "utf-16-le" else text.encode(encoding)
    src = tmp_path / name
    src.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    seen = f"{encoding[:6].upper()} (it begins with a {encoding[:6].upper()} byte order mark)"
    iconv = f"iconv -f {encoding[:6]} -t utf-8"
    command = (f"gzip -dc {src} | {iconv} > {tmp_path}/{out}" if name.endswith(".gz")
               else f"{iconv} {shlex.quote(str(src))} > {shlex.quote(str(tmp_path / out))}")
    said = refusal(csv_reader, src, ["id", "text"])
    convert = f"convert it first ({command}) and pass {shlex.quote(str(tmp_path / out))}."
    if name.lower().endswith((".txt", ".tab")):
        assert said.endswith(f"got [{name!r}]; it is {seen}, and bertfeat reads CSV files as UTF-8: {convert}")
    else:
        assert said == f"{src} is {seen}, not UTF-8: bertfeat reads CSV files as UTF-8: {convert}"
    (tmp_path / out).write_text(data.decode(encoding if encoding != "utf-16-le" else "utf-16").lstrip("\ufeff"))
    assert read_all(csv_reader(tmp_path / out, ["id", "text"]))[0].to_pylist() == [
        {"id": "1", "text": "caf\u00e9 au lait"}, {"id": "2", "text": "two\tfields"}]


def test_the_open_quote_and_the_inferred_type_refusals_say_what_to_do(tmp_path):
    src = tmp_path / "q.csv"
    src.write_text('id,text\n1,"open\n2,b\n')
    assert refusal(read_all, csv_reader(src, ["id", "text"])) == (
        f"{src} is malformed: a quote opened at line 2 is never closed, so the rest of the file would be one value; "
        "close the quote (or double it, \"\", inside a quoted value).")
    late = tmp_path / "late.csv"
    with open(late, "w") as fh:
        fh.write("id,text\n")
        fh.writelines(f"{i},t\n" for i in range(200_000))
        fh.write("A123,t\n")
    assert refusal(read_all, csv_reader(late, ["id", "text"], chunk_rows=50_000, infer_types=True)) == (
        f"{late}: In CSV column #0: CSV conversion error to int64: invalid value 'A123' (a type inferred "
        "from the start of the file does not hold further on); drop infer_types= to read kept columns "
        "as written, as text.")


# -- parquet files that disagree -------------------------------------------------------------------------------------

def test_parquet_files_that_disagree_are_refused_naming_both(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    a = write_parquet(d / "a.parquet", id=[1], text=["x"])
    b = write_parquet(d / "b.parquet", id=[2], text=["y"], extra=[0])
    assert refusal(InputReader, str(d), ["text"], 10, ["text"]) == (
        f"parquet file {b} has columns ['id', 'text', 'extra'], unlike {a} (['id', 'text']).")
    # the first column agrees, the second does not: every column is compared
    write_parquet(b, id=[2], text=[3])
    assert refusal(InputReader, str(d), ["id", "text"], 10, ["text"]) == (
        f"column 'text' is int64 in {b} but string in {a}: no type holds the values of both without changing some, "
        "so bertfeat will not cast one to the other. To read them, rewrite the files with one type for 'text' "
        "(pandas: df['text'].astype(...), then to_parquet); or embed the files of each type as inputs of their own.")
    c = d / "c.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array(["a"]), pa.array(["b"])], names=["id", "text", "id"]), c)
    b.unlink()
    assert refusal(InputReader, str(d), ["text"], 10, ["text"]) == (
        f"{c} has two columns named 'id' (columns 1 and 3); rename one so each column can be told apart.")
    a.unlink()  # the first file now
    assert refusal(InputReader, str(d), ["text"], 10, ["text"]) == (
        f"{c} has two columns named 'id' (columns 1 and 3); rename one so each column can be told apart.")



def test_parquet_files_with_the_same_columns_in_another_order_are_read_by_name(tmp_path):
    """(found by a many files that differ hunt, 2026-11-26, session 8) docs/cli.md asks the files of a folder for
    "the same column names", but a file whose columns came in another order (written from a dict, or by another
    tool on another day) was refused "has columns ['text', 'id'], unlike ... (['id', 'text'])", nothing said of what
    to do, though every engine reads the columns by name. Read now, each value under its own column; another set
    of columns is still refused."""
    d = tmp_path / "in"
    d.mkdir()
    write_parquet(d / "a.parquet", id=[1, 2], text=["x", "y"], label=["p", "q"])
    pq.write_table(pa.table({"label": ["r"], "text": ["z"], "id": [3]}), d / "b.parquet")
    pq.write_table(pa.table({"text": ["w"], "label": [None], "id": [4]}), d / "c.parquet")  # and a null-typed one
    reader = InputReader(str(d), ["id", "label", "text"], 10, ["text"])
    table, _ = read_all(reader)
    assert table.to_pylist() == [{"id": 1, "label": "p", "text": "x"}, {"id": 2, "label": "q", "text": "y"},
                                 {"id": 3, "label": "r", "text": "z"}, {"id": 4, "label": None, "text": "w"}]
    assert reader.schema == pa.schema([("id", pa.int64()), ("label", pa.string()), ("text", pa.string())])
    write_parquet(d / "b.parquet", label=["r"], text=["z"])
    assert refusal(InputReader, str(d), ["text"], 10, ["text"]) == (
        f"parquet file {d / 'b.parquet'} has columns ['label', 'text'], unlike {d / 'a.parquet'} (['id', 'text', "
        "'label']).")


def test_a_pandas_index_column_in_some_files_only_is_no_disagreement(tmp_path):
    """(found by a many files that differ hunt, 2026-11-26, session 8) pandas writes a frame's index into the file as
    the column ``__index_level_0__`` where it is not a plain range (a filtered frame: ``df[df.stars > 3]``) and not
    where it is (a fresh frame), so one dataset's files written on different days differ by it: the folder was
    refused "has columns ['id', 'text'], unlike ... (['id', 'text', '__index_level_0__'])", a column the user never
    made and bertfeat never reads. It is left out of the comparison unless the job reads it."""
    d = tmp_path / "in"
    d.mkdir()
    filtered = pd.DataFrame({"id": [2, 4], "text": ["b", "d"]}, index=[1, 3])
    pq.write_table(pa.Table.from_pandas(filtered, preserve_index=True), d / "a.parquet")  # as pandas 2 wrote it
    assert pq.read_schema(d / "a.parquet").names == ["id", "text", "__index_level_0__"]
    write_parquet(d / "b.parquet", id=[5], text=["e"])
    table, _ = read_all(InputReader(str(d), ["id", "text"], 10, ["text"]))
    assert table.to_pylist() == [{"id": 2, "text": "b"}, {"id": 4, "text": "d"}, {"id": 5, "text": "e"}]
    # kept by name, it must be in every file; any other extra column is still refused
    assert refusal(InputReader, str(d), ["__index_level_0__", "text"], 10, ["text"]).startswith(
        f"parquet file {d / 'b.parquet'} has columns ['id', 'text'], unlike")
    write_parquet(d / "b.parquet", id=[5], text=["e"], __index_level_0__=[0], other=[1])
    assert refusal(InputReader, str(d), ["text"], 10, ["text"]).startswith(
        f"parquet file {d / 'b.parquet'} has columns ['id', 'text', '__index_level_0__', 'other'], unlike")

def test_a_column_all_missing_in_the_first_files_takes_the_type_of_the_first_typed_one(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"id": pa.array([None], pa.null()), "text": ["a"]}), d / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([None, None], pa.null()), "text": ["b", "c"]}), d / "b.parquet")
    write_parquet(d / "c.parquet", id=[7], text=["d"])
    write_parquet(d / "d.parquet", id=[8], text=["e"])
    table, _ = read_all(InputReader(str(d), ["id", "text"], 10, ["text"]))
    assert table.schema == pa.schema([("id", pa.int64()), ("text", pa.string())])
    assert table.to_pylist() == [{"id": None, "text": "a"}, {"id": None, "text": "b"}, {"id": None, "text": "c"},
                                 {"id": 7, "text": "d"}, {"id": 8, "text": "e"}]
    write_parquet(d / "d.parquet", id=["8"], text=["e"])
    assert refusal(InputReader, str(d), ["id", "text"], 10, ["text"]).startswith(
        f"column 'id' is string in {d / 'd.parquet'} but int64 in {d / 'c.parquet'}:")  # the first typed file
    write_parquet(d / "c.parquet", id=[7], text=[9])  # in the file where a column takes its type, the next column
    assert refusal(InputReader, str(d), ["id", "text"], 10, ["text"]).startswith(  # is compared too
        f"column 'text' is int64 in {d / 'c.parquet'} but string in {d / 'a.parquet'}:")


def test_plain_text_types():
    assert [_plain_text(t) for t in (pa.string(), pa.large_string(), pa.binary(), pa.int64(),
                                     pa.dictionary(pa.int32(), pa.string()))] == [True, True, False, False, False]
    if hasattr(pa, "string_view"):  # pyarrow 16 on
        assert _plain_text(pa.string_view())


# -- chunks --------------------------------------------------------------------------------------------------------

def test_chunks_are_cut_at_chunk_rows_when_characters_do_not_bind(tmp_path):
    src = write_parquet(tmp_path / "r.parquet", text=[f"t{i}" for i in range(12)])
    table, sizes = read_all(InputReader(str(src), ["text"], 5, ["text"]))
    assert sizes == [5, 5, 2] and table.column("text").to_pylist() == [f"t{i}" for i in range(12)]
    csv_src = tmp_path / "r.csv"
    csv_src.write_text("text\n" + "".join(f"t{i}\n" for i in range(10)))
    assert read_all(csv_reader(csv_src, ["text"], chunk_rows=5))[1] == [5, 5]
    # both bounds set: whichever cuts first (a CSV block gives many rows at once, so both are in reach)
    tens = tmp_path / "tens.csv"
    tens.write_text("text\n" + "".join(f"{i:010d}\n" for i in range(10)))
    assert read_all(csv_reader(tens, ["text"], chunk_rows=2, chunk_chars=35))[1] == [2] * 5
    assert read_all(csv_reader(tens, ["text"], chunk_rows=4, chunk_chars=35))[1] == [3, 3, 3, 1]


def test_chunk_characters_add_up_over_text_columns_and_missing_texts_count_none(tmp_path):
    src = write_parquet(tmp_path / "c.parquet", a=["x" * 10, None, "x" * 10, "x" * 10, "x" * 10],
                        b=["y" * 5, "y" * 5, None, "y" * 5, "y" * 5], id=[1, 2, 3, 4, 5])
    # rows hold 15, 5, 10, 15, 15 characters: 30 fit exactly (a bound, not a limit to stay under), 31 do not
    assert read_all(InputReader(str(src), ["id", "a", "b"], 100, ["a", "b"], chunk_chars=30))[1] == [3, 2]
    assert read_all(InputReader(str(src), ["id", "a", "b"], 100, ["a", "b"], chunk_chars=29))[1] == [2, 2, 1]
    # only the text columns count
    assert read_all(InputReader(str(src), ["id", "a", "b"], 100, ["a"], chunk_chars=20))[1] == [3, 2]


def test_an_input_with_no_rows_gives_no_chunks(tmp_path):
    header_only = tmp_path / "h.csv"
    header_only.write_text("id,text\n")
    table, sizes = read_all(csv_reader(header_only, ["id", "text"]))
    assert sizes == [] and table.num_rows == 0
    empty = write_parquet(tmp_path / "e.parquet", text=pa.array([], pa.string()))
    assert read_all(InputReader(str(empty), ["text"], 10, ["text"]))[1] == []


def test_a_field_bigger_than_the_block_after_rows_were_delivered_restarts_without_losing_or_repeating_a_row(
        tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 16)  # 64 KB blocks: the same logic as at 1 MB, on a small file
    src = tmp_path / "mid.csv"
    n = 100_000  # 1.3 MB of rows, then a 300 KB field: pyarrow fails on it after delivering every row before it,
    # and the read restarts with 512 KB blocks, skipping those rows (several blocks of them); a field with line breaks
    # and quotes (one without is given to pyarrow whole: test_readers_scale.py)
    big = 'say ""hi""\n' * 30_000
    with open(src, "w") as fh:
        fh.write("id,text\n")
        fh.writelines(f"{i},row {i}\n" for i in range(n))
        fh.write(f'big,"{big}"\n')
        fh.writelines(f"t{i},tail {i}\n" for i in range(50_000))  # more than one 512 KB block after the restart
    reader = csv_reader(src, ["id", "text"], chunk_rows=7_000)
    opened = []
    original = reader._open_csv
    reader._open_csv = lambda block: opened.append(block) or original(block)
    fractions = []
    batches = []
    for batch in reader.batches():
        batches.append(batch)
        fractions.append(reader.fraction_done())
    table = pa.Table.from_batches(batches)
    assert opened == [1 << 16, 1 << 19]  # one restart, with an 8x bigger block
    assert table.column("id").to_pylist() == [str(i) for i in range(n)] + ["big"] + [f"t{i}" for i in range(50_000)]
    assert table.column("text").to_pylist()[n] == big.replace('""', '"')
    assert [b.num_rows for b in batches] == [7_000] * 21 + [3_001]
    assert fractions[-1] == 1.0 and all(0 < f <= 1 for f in fractions)  # 1.0 to the last chunk, after the close
    assert reader._counting.closed  # the file is closed once read


def test_progress_is_a_fraction_of_the_compressed_bytes_and_none_for_parquet(tmp_path):
    src = tmp_path / "p.csv.bz2"
    rng = random.Random(0)  # text that does not compress much, so the compressed bytes are read as the rows go
    src.write_bytes(bz2.compress(("text\n" + "".join(f"{rng.getrandbits(128):032x}\n" for _ in range(200_000))).encode()))
    reader = csv_reader(src, ["text"], chunk_rows=20_000)
    assert reader.total_rows is None  # unknown for a CSV: progress estimates it from the fraction read
    assert reader.fraction_done() == 0.0  # nothing read yet
    fractions = [reader.fraction_done() for _ in reader.batches()]
    assert len(fractions) == 10 and 0 < fractions[0] < 0.7 and fractions == sorted(fractions)
    assert fractions[-1] == 1.0  # the last chunk comes after the file is closed
    pq_src = write_parquet(tmp_path / "p.parquet", text=["a", "b"])
    pq_reader = InputReader(str(pq_src), ["text"], 1, ["text"])
    assert [pq_reader.fraction_done() for _ in pq_reader.batches()] == [None, None]
    assert pq_reader.total_rows == 2


def test_pandas_written_parquet_with_an_index_reads_the_named_columns_only(tmp_path):
    src = tmp_path / "i.parquet"
    pd.DataFrame({"text": ["a", "b"], "id": [1, 2]}, index=[10, 11]).to_parquet(src)
    table, _ = read_all(InputReader(str(src), ["id", "text"], 10, ["text"]))
    assert table.column_names == ["id", "text"] and table.to_pylist() == [{"id": 1, "text": "a"}, {"id": 2, "text": "b"}]


# -- the quote scanner on its own (the file-level cases are in test_readers.py) ----------------------------------

@pytest.mark.parametrize("pieces, ends_open", [
    ([b'"a'], True),  # a file shorter than a BOM
    ([b'x\r"open'], True),  # a bare CR ends a line too
    ([b'x\r"closed"'], False),
    ([b'"a"', b'"'], True),  # a doubled quote split between pieces: still open
    ([b'"a"', b"", b'"', b'"'], False),
    ([b'"a"'], False),  # a final quote closes
    ([b"\xef", b"\xbb", b"\xbf", b'"x'], True),  # a BOM one byte at a time: the quote after it opens a value
    ([b"\xef\xbb", b'"x'], False),  # not a BOM: the quote is inside a field
    ([b'a;"b', b'"'], False),  # the declared delimiter starts a field
    ([b'a,"b'], False),  # a comma does not, with another delimiter
])
def test_the_quote_scanner_follows_quotes_across_pieces(pieces, ends_open):
    from bertfeat.quotes import QuoteScanner

    scanner = QuoteScanner(";")
    for piece in pieces:
        scanner.feed(piece)
    assert scanner.ends_open is ends_open


# -- what the CSV options promise (survivors of the readers mutation run, 2026-11-24) ---------------------------------


def test_quoted_values_with_line_breaks_across_read_blocks(tmp_path, monkeypatch):
    """A quoted value holding line breaks stays one value wherever a read block ends, and is read in blocks of the
    usual size: pyarrow splits blocks inside such a value unless told values may hold newlines, and the reader's
    retry with ever bigger blocks (up to 2 GiB) would hide that at the cost of the memory bound."""
    import csv as pycsv
    import io

    rng = random.Random(1)
    rows = [(str(i), "line one\nline, two\r\n\"three\"" + "x" * rng.randrange(0, 300)) for i in range(20_000)]
    buf = io.StringIO(newline="")
    pycsv.writer(buf, lineterminator="\n").writerows([("id", "text"), *rows])
    src = tmp_path / "multiline.csv"
    src.write_text(buf.getvalue(), newline="")
    assert src.stat().st_size > 3 * readers.BLOCK_BYTES
    blocks = []
    real = InputReader._open_csv
    monkeypatch.setattr(InputReader, "_open_csv", lambda self, block=readers.BLOCK_BYTES: (blocks.append(block),
                                                                                          real(self, block))[1])
    table, _ = read_all(csv_reader(src, ["id", "text"], chunk_rows=5000))
    assert blocks == [readers.BLOCK_BYTES] * 2  # the schema's read and the rows' read, never a bigger block
    assert table.column("id").to_pylist() == [r[0] for r in rows]
    assert table.column("text").to_pylist() == [r[1] for r in rows]


def test_exactly_the_documented_markers_are_missing_when_unquoted(tmp_path):
    markers = ["", "NA", "N/A", "NaN", "nan", "NULL", "null", "None", "<NA>", "\\N"]  # docs/cli.md, "missing values"
    # other tools' markers are text here, and \N only as a whole value (\\N: an escaped backslash, then N)
    texts = ["#N/A", "n/a", "-nan", "NONE", "na", "none", "#NA", "1.#IND", "\\n", "N", "\\\\N", "a\\N"]
    src = tmp_path / "na.csv"
    src.write_text("id,text\n" + "".join(f"{i},{v}\n" for i, v in enumerate(markers + texts))
                   + "".join(f'q{i},"{v}"\n' for i, v in enumerate(markers)))
    table, _ = read_all(csv_reader(src, ["id", "text"]))
    assert table.column("text").to_pylist() == [None] * len(markers) + texts + markers  # quoted: always text


def test_text_that_is_not_utf8_after_the_first_read_block_is_refused_mid_file(tmp_path):
    src = tmp_path / "late-latin1.csv"
    head = "id,text\n" + "".join(f"{i},row {i}\n" for i in range(150_000))  # about 2 MB: past the first block
    src.write_bytes(head.encode() + "150000,caf\u00e9\n".encode("latin-1"))
    reader = csv_reader(src, ["id", "text"], chunk_rows=10_000)
    message, delivered = refusal_while_reading(reader)
    assert message.startswith(f"{src} is not UTF-8: line 150002 holds byte 0xe9, which UTF-8 cannot decode (at "
                              "'150000,caf\\xe9'). bertfeat reads CSV files as UTF-8: convert the file first")
    assert delivered and sum(delivered) < 150_000  # refused as the reading went, not before it started


@pytest.mark.parametrize("pieces", [['"a"', '"",x\n'], ['x,"a"', '"","b"\n'], ['"a"', '"', '",x\n']])
def test_a_doubled_quote_split_between_pieces_then_a_closing_quote(pieces):
    from bertfeat.quotes import QuoteScanner

    scanner = QuoteScanner(",")
    for piece in pieces:
        scanner.feed(piece.encode())
    assert not scanner.ends_open


LFS_POINTER = (b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1"
               b"258daaa5e2ca24d17e2393\nsize 1048576\n")


@pytest.mark.parametrize("name", ["reviews.csv", "reviews.tsv", "reviews.csv.gz", "reviews.parquet", "d/part-1.parquet"])
def test_a_git_lfs_pointer_in_place_of_the_data_is_told_to_fetch_it(tmp_path, name):
    """(found by a files hunt, 2026-11-27, session 11) a data file kept in Git LFS and cloned without it (git-lfs
    not installed, GIT_LFS_SKIP_SMUDGE=1, a CI checkout) is a 130-byte pointer: as a CSV it read as a header
    'version https://git-lfs.github.com/spec/v1' ("column(s) ['text'] not found ..."), as a .csv.gz "Not a gzipped
    file", as parquet "The file is damaged, cut short or not parquet; write it again": nothing said it is a pointer,
    nor to fetch the data."""
    src = tmp_path / name
    src.parent.mkdir(exist_ok=True)
    if name.startswith("d/"):
        write_parquet(tmp_path / "d" / "part-0.parquet", text=["a"])
    src.write_bytes(LFS_POINTER)
    said = refusal(InputReader, str(tmp_path / "d" if name.startswith("d/") else src), ["text"], 10, ["text"])
    assert said == (f"{src} is a Git LFS pointer (its first bytes say so), not the data it stands for (1,048,576 "
                    "bytes): fetch the data (git lfs pull, after git lfs install where Git LFS is new), then run "
                    "again."), said


@pytest.mark.parametrize("name, blob, said", [
    ("out.parquet", b"id,text\n1,a cat\n", "is text, not parquet (its first bytes say so): if it is CSV, name it "
                                            "out.csv (or out.tsv)."),  # df.to_csv("out.parquet")
    ("d/part-1.parquet", b"\xef\xbb\xbfid\ttext\n1\ta\n", "is text, not parquet (its first bytes say so): if it is "
                                                             "CSV, name it part-1.csv (or part-1.tsv)."),
    ("out.parquet", "gzip", "is compressed (gzip: its first bytes say so): decompress it (gzip -dc {src} > "
                            "{tmp}/out.plain.parquet), and pass that."),
    ("out.pq", "zstd", "is compressed (zstd: its first bytes say so): decompress it (zstd -dc {src} > "
                       "{tmp}/out.plain.pq), and pass that."),
])
def test_a_file_named_parquet_that_is_text_or_compressed_is_told_what_it_is(tmp_path, name, blob, said):
    """(found by a files hunt, 2026-11-27, session 11) a CSV written under a .parquet name (``df.to_csv(
    "out.parquet")``), or a parquet file gzip-compressed whole (a .parquet.gz saved without its suffix), was
    "cannot read parquet file ...: Parquet magic bytes not found in footer ... The file is damaged, cut short or
    not parquet; write it again": nothing said what it is, nor what to do."""
    table = io.BytesIO()
    pq.write_table(pa.table({"text": ["a"]}), table)
    if blob == "gzip":
        blob = gzip.compress(table.getvalue())
    elif blob == "zstd":
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as z:
            z.write(table.getvalue())
        blob = sink.getvalue().to_pybytes()
    src = tmp_path / name
    src.parent.mkdir(exist_ok=True)
    if name.startswith("d/"):
        write_parquet(tmp_path / "d" / "part-0.parquet", text=["a"])
    src.write_bytes(blob)
    path = tmp_path / "d" if name.startswith("d/") else src
    assert refusal(InputReader, str(path), ["text"], 10, ["text"]) == f"{src} {said.format(src=src, tmp=tmp_path)}"
    # a parquet file cut short is still damaged
    src.write_bytes(table.getvalue()[:-20])
    assert refusal(InputReader, str(path), ["text"], 10, ["text"]).endswith(
        "The file is damaged, cut short or not parquet; write it again, or move it out of the input.")


@pytest.mark.parametrize("head", [b"<!DOCTYPE html>\n<html lang='en'>", b"\xef\xbb\xbf\r\n  <html><head>",
                                  b"<!doctype HTML><title>Sign in</title>"])
def test_a_web_page_saved_in_place_of_a_csv_file_is_told_so(tmp_path, head):
    """(same hunt) a download that got a web page (a sign-in, error or "virus scan" confirmation page, as wget of a
    shared-drive link gets) read as a CSV file whose header is '<!DOCTYPE html>'."""
    src = tmp_path / "data.csv"
    src.write_bytes(head + b"\n<body>Sign in to continue</body></html>\n")
    assert refusal(csv_reader, src, ["id", "text"]) == (
        f"{src} is a web page (HTML: its first bytes say so), not CSV text: the download got a page (a sign-in, "
        "error or confirmation page) instead of the file; download the file itself.")
    src.write_bytes(b"html,text\n<html>,a\n")  # a header that names a column html is no page
    assert read_all(csv_reader(src, ["html", "text"]))[0].to_pylist() == [{"html": "<html>", "text": "a"}]


@pytest.mark.parametrize("name, pack, said", [
    # a download a browser or curl --compressed decompressed (Content-Encoding: gzip) keeps its .gz name
    ("plain.csv.gz", lambda b: b, "is not gzip-compressed: its first bytes are text (a download that a browser or "
                                  "curl --compressed decompressed keeps its name); rename it plain.csv."),
    ("plain.tsv.bz2", lambda b: b.replace(b",", b"\t"),
     "is not bz2-compressed: its first bytes are text (a download that a browser or curl --compressed decompressed "
     "keeps its name); rename it plain.tsv."),
    ("plain.csv.zst", lambda b: b, "is not zstd-compressed: its first bytes are text (a download that a browser or "
                                   "curl --compressed decompressed keeps its name); rename it plain.csv."),
    ("other.csv.gz", bz2.compress, "is bz2 data (its first bytes say so), not gzip: rename it other.csv.bz2."),
    ("other.csv.bz2", gzip.compress, "is gzip data (its first bytes say so), not bz2: rename it other.csv.gz."),
])
def test_a_file_whose_compression_is_not_its_suffixs_is_told_what_it_is_and_what_to_rename_it(tmp_path, name,
                                                                                                 pack, said):
    """(found by a files hunt, 2026-11-27, session 11) a CSV file named .csv.gz that is no gzip data was refused
    "cannot read plain.csv.gz as UTF-8 CSV: Not a gzipped file (b'id')" (bz2: "Invalid data stream", zstd: "ZSTD
    decompress failed: Unknown frame descriptor"), nothing said of what to do."""
    src = tmp_path / name
    src.write_bytes(pack(b"id,text\n1,a\n"))
    assert refusal(csv_reader, src, ["id", "text"]) == f"{src} {said}"
    renamed = tmp_path / said[said.rindex(" ") + 1:-1]
    src.rename(renamed)
    assert read_all(csv_reader(renamed, ["id", "text"]))[0].to_pylist() == [{"id": "1", "text": "a"}]
    # the real thing, cut short, is still told it is damaged
    cut = tmp_path / ("cut" + name[name.index("."):])
    whole = (gzip.compress if name.endswith(".gz") else bz2.compress)(b"id,text\n1,a\n" * 1000)
    if not name.endswith(".zst"):
        cut.write_bytes(whole[:len(whole) // 2])
        assert refusal(csv_reader, cut, ["id", "text"]).endswith("is truncated or damaged; copy or compress it again.")


@pytest.mark.parametrize("codec", ["gzip", "bz2"])
def test_a_compressed_file_damaged_within_the_first_block_is_refused_with_what_to_do(tmp_path, codec):
    data = ("id,text\n" + "".join(f"{i},row {i} of a small file\n" for i in range(2000))).encode()
    packed = (gzip if codec == "gzip" else bz2).compress(data)
    src = tmp_path / f"s.csv.{'gz' if codec == 'gzip' else 'bz2'}"
    src.write_bytes(packed[: len(packed) * 2 // 3])
    message = refusal(csv_reader, src, ["id", "text"])
    assert message.startswith(f"{src} cannot be read in full: ")
    assert message.endswith(f"(EOFError). The {codec} is truncated or damaged; copy or compress it again.")


@pytest.mark.parametrize("block", [None, 1 << 26])
@pytest.mark.parametrize("codec", ["gzip", "bz2"])
def test_a_compressed_file_damaged_past_the_first_block_is_refused_with_what_to_do(tmp_path, monkeypatch, codec,
                                                                                    block):
    """A download or copy cut short is refused, naming the rows delivered before the damage was met, and every row
    delivered is whole and in order (nothing silently lost). How many come before it depends on how far pyarrow has
    read ahead (session 15: none once, under heavy load, and the test's '0 < delivered' failed), so a block that
    holds the whole file, where pyarrow meets the damage before any row, is asked too: refused 'in full'. (Its
    count is of the rows read whole: those of a chunk being cut into smaller ones when it was met are among them.)"""
    if block:
        monkeypatch.setattr(readers, "BLOCK_BYTES", block)
    rng = random.Random(0)  # text that barely compresses, so the damage lies past the first read block
    data = ("id,text\n" + "".join(f"{i},{rng.getrandbits(128):032x}\n" for i in range(200_000))).encode()
    packed = (gzip if codec == "gzip" else bz2).compress(data)
    src = tmp_path / f"t.csv.{'gz' if codec == 'gzip' else 'bz2'}"
    src.write_bytes(packed[: len(packed) * 2 // 3])  # a download or copy cut short
    ids = []
    with pytest.raises(ValueError) as info:
        for batch in csv_reader(src, ["id", "text"], chunk_rows=10_000).batches():
            ids.extend(batch.column("id").to_pylist())
    assert ids == [str(i) for i in range(len(ids))] and len(ids) < 200_000  # whole rows, in order, none skipped
    read = re.match(rf"{re.escape(str(src))} cannot be read (in full|past its first ([\d,]+) rows): ", str(info.value))
    # the rows read whole before the damage: those delivered, and those of the chunk being cut when it was met
    assert read and (len(ids) <= int(read[2].replace(",", "")) < 200_000 if read[2] else not ids), str(info.value)
    assert str(info.value).endswith(f"(EOFError). The {codec} is truncated or damaged; copy or compress it again.")
    if block:
        assert not ids  # the damage met before the first row: nothing delivered, the whole file refused


# -- what the first mutation run of readers left standing ----------------------------------------------------------


def test_a_recursive_glob_reaches_nested_folders_and_a_name_with_capitals_is_no_pattern(tmp_path):
    d = tmp_path / "runs"
    for name in ("top.parquet", "2026/01/a.parquet", "2026/02/b.parquet"):
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        write_parquet(d / name, t=["x"])
    assert resolve_input(f"{d}/**/*.parquet") == (
        "parquet", [d / "2026/01/a.parquet", d / "2026/02/b.parquet", d / "top.parquet"])
    with pytest.raises(FileNotFoundError) as info:  # no *, ? or [ in it: a missing file, not an empty match
        resolve_input(f"{tmp_path}/Xmas XX reviews.csv")
    assert str(info.value) == f"input '{tmp_path}/Xmas XX reviews.csv' does not exist."


def test_a_mixed_input_lists_its_first_five_names(tmp_path):
    for name in ("a.csv", "b.parquet", "c.txt", "d.parquet", "e.json", "f.parquet", "g.csv"):
        (tmp_path / name).write_text("x")
    assert refusal(resolve_input, f"{tmp_path}/*").endswith(
        "got ['a.csv', 'b.parquet', 'c.txt', 'd.parquet', 'e.json'].")


def test_a_csv_header_with_a_repeated_name_is_refused_with_the_file(tmp_path):
    src = tmp_path / "dup.csv"
    src.write_text("id,text,text\n1,a,b\n")
    assert refusal(csv_reader, src, ["id"]) == (
        f"{src} has two columns named 'text' (columns 2 and 3); rename one so each column can be told apart.")


def test_empty_header_cells_of_columns_the_job_does_not_read_are_no_name_used_twice(tmp_path):
    """An Excel export with blank columns at the right (a cell once formatted there) ends every line with ',,':
    the whole file was refused "has two columns named '' (columns 3 and 4); rename one", a header cell with no name
    to rename, though the job reads neither (pandas reads them as 'Unnamed: 2', 'Unnamed: 3'). Where the job reads
    the column of no name (--id-col '', pandas' index), two of them are still refused."""
    src = tmp_path / "excel.csv"
    src.write_bytes(b"id,text,,\r\n1,hello,,\r\n2,\"there, you\",,\r\n")
    got, _ = read_all(csv_reader(src, ["id", "text"]))
    assert got.to_pylist() == pd.read_csv(src, dtype=str)[["id", "text"]].to_dict("records")
    assert refusal(csv_reader, src, ["", "text"]) == (
        f"{src} has two columns named '' (columns 3 and 4); rename one so each column can be told apart.")
    src.write_bytes(b",id,text,id\n,1,a,2\n")  # a name used twice is still refused, at its own positions
    assert refusal(csv_reader, src, ["text"]) == (
        f"{src} has two columns named 'id' (columns 2 and 4); rename one so each column can be told apart.")


def test_a_first_record_bigger_than_the_block_is_read_whole_with_a_bigger_block(tmp_path, monkeypatch):
    """The schema is read from the first block: a quoted value straddling it makes pyarrow refuse, and the read is
    tried again with a block 8 times bigger, as for the rows."""
    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 16)
    # 300 KB: across more than two 64 KB blocks, with line breaks and quotes (a value the stream cannot tell holds
    # no record's end, so pyarrow is not given it whole: test_readers_scale.py)
    big = 'word, "with" a line\nbreak ' * 11_000
    src = tmp_path / "big_first.csv"
    pd.DataFrame({"id": ["1", "2"], "text": [big, "small"]}).to_csv(src, index=False)
    blocks = []
    real = InputReader._open_csv
    monkeypatch.setattr(InputReader, "_open_csv", lambda self, block=readers.BLOCK_BYTES: (blocks.append(block),
                                                                                          real(self, block))[1])
    reader = csv_reader(src, ["id", "text"])
    assert blocks == [1 << 16, 1 << 19]  # the schema's read, refused, then 8x
    assert reader.schema == pa.schema([("id", pa.string()), ("text", pa.string())])
    assert read_all(reader)[0].column("text").to_pylist() == [big, "small"]


def test_a_plain_file_that_fails_mid_read_is_refused_as_damaged(tmp_path, monkeypatch):
    """An I/O error under a plain CSV (a network file system, a failing disk) is named as such, like a cut-short
    .gz, never a bare OSError."""
    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 16)  # pyarrow reads some 36 blocks ahead: fail past them
    src = tmp_path / "plain.csv"
    src.write_text("id,text\n" + "".join(f"{i},row {i}\n" for i in range(600_000)))  # 9.6 MB
    real = readers._CountingFile.read

    def fails_past_4mb(self, n=-1):
        if self.read_bytes > 4 << 20:
            raise OSError(5, "Input/output error")
        return real(self, n)

    monkeypatch.setattr(readers._CountingFile, "read", fails_past_4mb)
    message, delivered = refusal_while_reading(csv_reader(src, ["id", "text"], chunk_rows=10_000))
    rows = int(re.search(r"past its first ([\d,]+) rows", message).group(1).replace(",", ""))
    assert 0 < sum(delivered) <= rows < sum(delivered) + 10_000  # the rows read whole: delivered, or in the chunk
    assert message == (
        f"{src} cannot be read past its first {rows:,} rows: [Errno 5] Input/output error (OSError). The file is "
        "truncated or damaged; copy or compress it again.")


def test_a_problem_pythons_csv_cannot_place_is_reported_without_a_line(tmp_path):
    src = tmp_path / "fine.csv"
    src.write_text("id,text\n1,a\n2,b\n")
    reader = csv_reader(src, ["id", "text"])
    assert reader._csv_problem(pa.ArrowInvalid("CSV parse error: something pyarrow alone saw\nmore")) == (
        f"{src} is malformed: CSV parse error: something pyarrow alone saw")


@pytest.mark.parametrize("sizes, chunk_rows", [
    ([6, 6], 5),  # a chunk cut leaves 1 row, the next file's last batch brings 1: the tail of 2 must still come
    ([5, 0], 10),  # an empty last file
    ([0, 3, 0, 4, 0], 2),
    ([7], 7),
])
def test_every_row_of_every_file_comes_once_in_order_in_full_chunks(tmp_path, sizes, chunk_rows):
    d = tmp_path / "parts"
    d.mkdir()
    start = 0
    for i, n in enumerate(sizes):
        write_parquet(d / f"part-{i}.parquet", id=pa.array(range(start, start + n), pa.int64()),
                      text=pa.array([f"t{j}" for j in range(start, start + n)], pa.string()))
        start += n
    table, chunks = read_all(InputReader(str(d), ["id", "text"], chunk_rows, ["text"]))
    assert table.column("id").to_pylist() == list(range(start))
    full, rest = divmod(start, chunk_rows)
    assert chunks == [chunk_rows] * full + ([rest] if rest else [])


def test_a_full_chunk_leaves_before_the_next_batch_is_read(tmp_path, monkeypatch):
    """Memory stays bounded by one chunk: the reader hands a chunk on as soon as it has its rows, never holding it
    while it reads the next batch."""
    src = write_parquet(tmp_path / "p.parquet", text=[f"t{i}" for i in range(12)])
    reader = InputReader(str(src), ["text"], 4, ["text"])
    raw = reader._raw_batches
    read = []

    def counted():
        for b in raw():
            read.append(b.num_rows)
            yield b

    reader._raw_batches = counted
    seen = []
    for chunk in reader.batches():
        seen.append((chunk.num_rows, sum(read)))
    assert seen == [(4, 4), (4, 8), (4, 12)]


def test_kept_csv_columns_are_text_unless_types_are_asked_for(tmp_path):
    """The reader's own default is the documented policy (embed_file, the CLI, Spark): a zip code keeps its zero."""
    src = tmp_path / "zip.csv"
    src.write_text("zip,text\n01234,a\n")
    assert read_all(InputReader(str(src), ["zip", "text"], 10, ["text"]))[0].column("zip").to_pylist() == ["01234"]
    inferred = InputReader(str(src), ["zip", "text"], 10, ["text"], infer_types=True)
    assert read_all(inferred)[0].column("zip").to_pylist() == [1234]


def test_a_parquet_file_is_read_for_the_needed_columns_only(tmp_path):
    """A wide column the job does not name is never read: here 40 MB of it would hold some 7 MB of Arrow memory per
    read; reading id and text alone holds under 1 MB."""
    src = tmp_path / "wide.parquet"
    n = 20_000
    pq.write_table(pa.table({"id": pa.array(range(n)), "text": [f"t{i}" for i in range(n)],
                             "blob": ["x" * 2000 + str(i) for i in range(n)]}), src, row_group_size=5000)
    base = pa.total_allocated_bytes()
    peak, ids = 0, []
    for batch in InputReader(str(src), ["id", "text"], 1000, ["text"]).batches():
        peak = max(peak, pa.total_allocated_bytes() - base)
        ids += batch.column("id").to_pylist()
    assert ids == list(range(n))
    # pyarrow before 17 takes each column's 1 MiB read buffer (buffer_size) from its pool: the same for any file
    buffers = 2 * 2**20 if int(pa.__version__.split(".")[0]) < 17 else 0
    assert peak < 2**20 + buffers, f"{peak / 2**20:.1f} MB of Arrow memory held while reading two small columns"


def test_a_column_not_found_says_what_to_do_when_the_header_shows_why(tmp_path):
    """A European Excel export (';') or a TSV named .csv reads as one column, and a header name with spaces around
    it (or in other case) misses the name asked for: the refusal says which delimiter to pass, or the name as written
    (the bare "not found" left the user to spot a ';' in the column list)."""
    semi = tmp_path / "semi.csv"
    semi.write_bytes(b"\xef\xbb\xbfid;text\r\n1;a\r\n")
    assert refusal(csv_reader, semi, ["id", "text"]) == (
        f"column(s) ['id', 'text'] not found in {semi}; it has columns ['id;text']. The header reads as one column "
        "holding ';': if the file is separated by ';', pass delimiter=';'.")
    tabs = tmp_path / "tabs.csv"
    tabs.write_text("id\ttext\n1\ta\n")
    assert refusal(csv_reader, tabs, ["text"]).endswith(
        "The header reads as one column holding a tab: if the file is separated by tabs, pass delimiter='\\t'.")
    commas = tmp_path / "commas.tsv"
    commas.write_text("id,text\n1,a\n")
    assert refusal(csv_reader, commas, ["text"]).endswith(
        "if the file is separated by ',', pass delimiter=','.")
    spaced = tmp_path / "spaced.csv"
    spaced.write_text("id, Text \n1,a\n")
    assert refusal(csv_reader, spaced, ["id", "text"]) == (
        f"column(s) ['text'] not found in {spaced}; it has columns ['id', ' Text ']. Names must match as written, "
        "spaces and case included: ' Text ' is the name of that column.")
    pq.write_table(pa.table({"id": [1], "Review ": ["a"]}), tmp_path / "p.parquet")
    assert refusal(InputReader, str(tmp_path / "p.parquet"), ["review"], 10, ["review"]).endswith(
        "Names must match as written, spaces and case included: 'Review ' is the name of that column.")
    # nothing to suggest: the refusal stays as it was
    plain = tmp_path / "plain.csv"
    plain.write_text("id,text\n1,a\n")
    assert refusal(csv_reader, plain, ["label"]) == f"column(s) ['label'] not found in {plain}; it has columns ['id', 'text']."


def test_a_column_named_in_another_unicode_form_is_refused_saying_so_with_the_name_to_pass(tmp_path):
    """A header written by macOS or an export in NFD ('e' + a combining accent) and a name typed in NFC print alike:
    the refusal said "column(s) ['texte_é'] not found ...; it has columns ['id', 'texte_é']", nothing else. Now it
    says why and gives the name as the file writes it, in a form Python and bash read back."""
    nfd, nfc = "texte_e\u0301", "texte_\u00e9"
    path = tmp_path / "mac.csv"
    path.write_text(f"id,{nfd}\n1,a\n", encoding="utf-8")
    assert refusal(csv_reader, path, ["id", nfc]) == (
        f"column(s) ['{nfc}'] not found in {path}; it has columns ['id', '{nfd}']. '{nfd}' is that name in another "
        "Unicode form (code points texte_e\\u0301; texte_\\u00e9 was given), which prints alike: names must match as "
        "written. Pass the name as the data writes it (in Python 'texte_e\\u0301', in bash $'texte_e\\u0301'), or "
        "rename the column.")
    assert csv_reader(path, ["id", nfd]).columns == ["id", nfd]  # the advice, followed
    pq.write_table(pa.table({nfc: ["a"]}), tmp_path / "p.parquet")  # and the other way round
    assert "'texte_\u00e9' is that name in another Unicode form (code points texte_\\u00e9; texte_e\\u0301 was given)" in (
        refusal(InputReader, str(tmp_path / "p.parquet"), [nfd], 10, [nfd]))



def test_a_column_name_holding_an_invisible_character_is_refused_saying_so_with_the_name_to_pass(tmp_path):
    """pandas.read_csv(encoding="utf-8") of an Excel "CSV UTF-8" file keeps the byte order mark in the first name,
    and to_parquet writes it: --id-col id was "not found ...; it has columns ['\\ufeffid', 'text']" and nothing
    else (a zero-width space, a left-to-right mark pasted into a header alike). Now it says why and what to pass."""
    pq.write_table(pa.table({"\ufeffid": [1], "text": ["a"]}), tmp_path / "bom.parquet")
    assert refusal(InputReader, str(tmp_path / "bom.parquet"), ["id", "text"], 10, ["text"]) == (
        f"column(s) ['id'] not found in {tmp_path / 'bom.parquet'}; it has columns ['\\ufeffid', 'text']. '\\ufeffid' "
        "is that name with an invisible character (code points \\ufeffid; id was given), which prints alike: names "
        "must match as written. Pass the name as the data writes it (in Python '\\ufeffid', in bash $'\\ufeffid'), "
        "or rename the column (a byte order mark first in a name is what reading a UTF-8 CSV file with one as plain "
        "UTF-8 leaves: pandas.read_csv(..., encoding='utf-8-sig') leaves it out).")
    path = tmp_path / "zw.csv"
    path.write_text("id,re\u200bview\n1,a\n", encoding="utf-8")
    assert refusal(csv_reader, path, ["id", "review"]).endswith(
        "'re\\u200bview' is that name with an invisible character (code points re\\u200bview; review was given), which "
        "prints alike: names must match as written. Pass the name as the data writes it (in Python 're\\u200bview', "
        "in bash $'re\\u200bview'), or rename the column.")

def test_a_file_or_folder_whose_name_holds_brackets_is_read_as_named_not_as_a_pattern(tmp_path):
    """``reviews[1].csv`` (an export's or a copy's name) was taken for a glob: it read ``reviews1.csv`` beside it,
    another file, without a word, and a name no pattern of it matches was "matches no files". A path that exists is
    the file or folder it names; a pattern is a path that does not."""
    (tmp_path / "reviews[1].csv").write_text("id,text\n1,the named file\n")
    (tmp_path / "reviews1.csv").write_text("id,text\n9,another file\n")
    (tmp_path / "notes (copy) [final].csv").write_text("id,text\n5,x\n")
    reader = csv_reader(tmp_path / "reviews[1].csv", ["id", "text"])
    assert reader.files == [tmp_path / "reviews[1].csv"]
    assert read_all(reader)[0].column("text").to_pylist() == ["the named file"]
    assert reader.fingerprint()["path"] == str((tmp_path / "reviews[1].csv").resolve())
    assert resolve_input(str(tmp_path / "notes (copy) [final].csv")) == ("csv", [tmp_path / "notes (copy) [final].csv"])
    runs = tmp_path / "runs[2026]"
    runs.mkdir()
    write_parquet(runs / "a.parquet", t=["x"])
    assert resolve_input(str(runs)) == ("parquet", [runs / "a.parquet"])
    # a path that does not exist is still a pattern
    assert resolve_input(str(tmp_path / "reviews[0-9].csv")) == ("csv", [tmp_path / "reviews1.csv"])


def test_an_input_that_is_a_pipe_or_a_device_is_refused_as_what_it_is(tmp_path):
    """``zcat x.csv.gz | bertfeat embed /dev/stdin`` (or a named pipe) was "does not exist": it does. The refusal
    says what it is, and what to do."""
    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/null"):
        assert refusal(resolve_input, path) == (
            f"input {path!r} is not a file or a folder (a pipe or a device): bertfeat reads its input more than once "
            "and a rerun resumes from it, so write the data to a file first.")


@pytest.mark.parametrize("row_group_size", [None, 100])
def test_a_parquet_file_of_long_texts_is_read_a_chunk_of_characters_at_a_time(tmp_path, row_group_size):
    """``chunk_chars`` bounds what the reader holds, not only what it hands on: 400 texts of 50,000 characters (20 MB,
    in one row group, as pandas writes a small frame, or in several) at the default ``chunk_rows`` were read as one
    batch of 10,000 rows (the whole file here; of 100,000-character documents, 1 GB held for 1 MB chunks), and each
    chunk cut from it rescanned the rest (the read's time grew with the square of the rows per batch). What a parquet
    reader cannot split is a data page, so the file is written with small pages."""
    src = tmp_path / "docs.parquet"
    n, chars = 400, 50_000
    base = "".join(chr(97 + (i * 7919) % 26) + (" " if i % 6 == 5 else "") for i in range(chars))[:chars]
    pq.write_table(pa.table({"id": pa.array(range(n)), "text": [f"{i:04d}" + base[4:] for i in range(n)]}), src,
                   row_group_size=row_group_size, write_batch_size=16)  # pages of 16 texts: parquet's unit of reading
    base = pa.total_allocated_bytes()
    peak, ids, sizes = 0, [], []
    for batch in InputReader(str(src), ["id", "text"], 10_000, ["text"], chunk_chars=200_000).batches():
        peak = max(peak, pa.total_allocated_bytes() - base)  # what the reader holds while a chunk is worked on
        ids += batch.column("id").to_pylist()
        sizes.append(batch.num_rows)
    assert ids == list(range(n))
    assert sizes == [4] * 100  # 200,000 characters hold 4 texts
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MB of Arrow memory held beside 200 kB chunks"


NUL_FILES = {  # (found by a versions users bring hunt, 2026-11-26): a NUL in a text, then a malformed line
    "extra_field.csv": (b'id,text\n1,a\x00b\n2,ok,extra\n', "is malformed at line 3: CSV parse error: Expected 2 columns"),
    "open_quote.csv": (b'id,text\n1,a\x00b\n2,"ok\n', "is malformed: a quote opened at line 3 is never closed"),
    "text_after_quote.csv": (b'id,text\n1,a\x00b\n2,"ok" then\n', "is malformed at line 3: a quoted value (opened at"),
}


@pytest.mark.parametrize("name", sorted(NUL_FILES))
def test_a_nul_in_a_text_is_read_and_a_later_malformed_line_is_named_for_what_it_is(tmp_path, name):
    """pyarrow reads a NUL inside a text as any other character, and Python's csv module, which bertfeat's scans use
    to find a problem's line and read the header, does too from Python 3.11; on 3.10 (the floor) it stops at one with
    "line contains NUL": a file with a NUL in one text and a stray field or quote further on was refused as
    "malformed at line 2: line contains NUL." (the line of the NUL, which reads fine) instead of the line at fault."""
    data, message = NUL_FILES[name]
    src = tmp_path / name
    src.write_bytes(data)
    assert refusal(lambda: read_all(InputReader(str(src), ["id", "text"], 10, ["text"]))).startswith(f"{src} {message}")
    src.write_bytes(data.split(b"\n2,")[0] + b"\n")  # the NUL alone is no problem
    assert read_all(InputReader(str(src), ["id", "text"], 10, ["text"]))[0].column("text").to_pylist() == ["a\x00b"]


@pytest.mark.parametrize("escaped", [False, True])
def test_a_header_name_holding_a_nul_or_the_escape_character_is_read_as_written(tmp_path, monkeypatch, escaped):
    """The header is read with Python's csv module, which refuses a NUL before 3.11: there the lines it reads have
    NUL escaped (``escaped``, forced here on any Python) and the names unescaped, so a name is read as pyarrow reads
    its column, NUL and the escape's own private-use characters included."""
    if escaped:
        monkeypatch.setattr(csv_stream, "_CSV_TAKES_NUL", False)  # read where _csv_lines and _csv_field live
    names = ["i\x00d", "t\ue000\ue002xt", "\ue000\x00\ue001"]
    src = tmp_path / "names.csv"
    src.write_text(",".join(names) + "\n1,a\x00b,c\n", encoding="utf-8")
    rows = read_all(InputReader(str(src), names, 10, [names[1]]))[0].to_pylist()
    assert rows == [{names[0]: "1", names[1]: "a\x00b", names[2]: "c"}]


def test_a_kept_column_that_is_a_hive_partition_folder_is_refused_saying_why(tmp_path):
    """(found by a many files that differ hunt, 2026-11-26, session 8) ``--keep-col year`` on a hive-partitioned
    dataset (``year=2023/part-0.parquet``, as Spark's ``partitionBy`` and pandas' ``partition_cols`` write it, and as
    pandas reads ``year`` back) was refused "column(s) ['year'] not found ...; it has columns ['id', 'text']", nothing
    said of why or what to do: the folder names are no column to bertfeat (on every engine, Ray told so)."""
    d = tmp_path / "ds"
    for year, ids in ((2023, [1]), (2024, [2, 3])):
        (d / f"year={year}").mkdir(parents=True)
        write_parquet(d / f"year={year}" / "part-0.parquet", id=ids, text=[f"t{i}" for i in ids])
    assert pd.read_parquet(d)["year"].tolist() == [2023, 2024, 2024]  # what the user saw
    for path in (str(d), f"{d}/*/*.parquet"):
        assert refusal(InputReader, path, ["id", "year", "text"], 10, ["text"]) == (
            f"column(s) ['year'] not found in {path}; it has columns ['id', 'text']. 'year' is in the names of folders "
            "(year=2023/), not in the files: a hive-partitioned dataset's folder names are read as no column (on "
            "every engine); write the column into the files (pandas.read_parquet of the folder reads it as one, then "
            "to_parquet), or keep an id column to join it back on.")
    # a column of that name inside the files is read as written
    write_parquet(d / "year=2023" / "part-0.parquet", id=[1], year=[1999], text=["t1"])
    write_parquet(d / "year=2024" / "part-0.parquet", id=[2], year=[1999], text=["t2"])
    table, _ = read_all(InputReader(str(d), ["id", "year", "text"], 10, ["text"]))
    assert table.column("year").to_pylist() == [1999, 1999]


@pytest.mark.parametrize("chunk_chars", [None, 50])
def test_many_small_raw_batches_are_joined_once_a_chunk_not_once_each(tmp_path, monkeypatch, chunk_chars):
    """(found by a many files that differ hunt, 2026-11-26, session 8) each raw batch read (a row group, a file)
    joined every batch pending into a table again: a parquet file of one-row row groups, or a folder of one-row
    files (a streaming job's output), cost rows^2 / 2 per chunk, 20,000 rows read in 33 s where one row group took
    0.04 s. The pending batches are joined once they hold a full chunk; the chunks are the same."""
    n = 600
    table = pa.table({"id": list(range(n)), "text": [f"text {i}" for i in range(n)]})
    pq.write_table(table.slice(0, 400), tmp_path / "a.parquet", row_group_size=1)
    for k in range(400, n, 20):  # and files of 20 one-row groups each
        pq.write_table(table.slice(k, 20), tmp_path / f"b{k:04d}.parquet", row_group_size=1)
    joined = []
    real = readers._table
    monkeypatch.setattr(readers, "_table", lambda batches, schema: joined.append(len(batches)) or real(batches, schema))
    got, sizes = read_all(InputReader(str(tmp_path), ["id", "text"], 250, ["text"], chunk_chars=chunk_chars))
    assert got.equals(table.cast(got.schema))
    if chunk_chars is None:
        assert sizes == [250, 250, 100]
    else:  # "text 0".."text 9" are 6 characters, the rest 7 or 8: cut where the sum passes 50
        assert max(sizes) <= 8 and sum(sizes) == n
    assert sum(joined) <= 2 * n, sum(joined)  # each row's batch joined about once (at most twice: the rest of a cut)


def test_a_folder_a_glob_matches_is_read_as_a_folder_input_is(tmp_path):
    """(found by a many files that differ hunt, 2026-11-26, session 8) Spark writes ``features.parquet`` as a folder
    of part files: ``data/*.parquet`` over one file pandas wrote and one folder Spark wrote read the file and left the
    folder's rows out, silently (Spark's own ``spark.read.parquet("data/*.parquet")`` reads both). A folder a glob
    matches is read as a folder input is: its parquet files, hidden names (``_SUCCESS``, ``.crc``) left out."""
    d = tmp_path / "data"
    (d / "b.parquet").mkdir(parents=True)
    write_parquet(d / "a.parquet", id=[1], text=["x"])
    write_parquet(d / "b.parquet" / "part-00000-1f.snappy.parquet", id=[2], text=["y"])
    write_parquet(d / "b.parquet" / "part-00001-1f.snappy.parquet", id=[3], text=["z"])
    (d / "b.parquet" / "_SUCCESS").write_bytes(b"")
    (d / "b.parquet" / ".part-00000-1f.snappy.parquet.crc").write_bytes(b"")
    (d / "c.parquet").mkdir()  # an empty folder adds nothing
    kind, files = resolve_input(f"{d}/*.parquet")
    assert kind == "parquet" and [f.relative_to(d).as_posix() for f in files] == [
        "a.parquet", "b.parquet/part-00000-1f.snappy.parquet", "b.parquet/part-00001-1f.snappy.parquet"]
    table, _ = read_all(InputReader(f"{d}/*.parquet", ["id", "text"], 10, ["text"]))
    assert table.column("id").to_pylist() == [1, 2, 3]
    assert resolve_input(str(d)) == (kind, files)  # as the folder itself reads
    # a ** pattern alike: a folder it ends at is read as a folder, a file reached twice (in it, and as the folder's
    # file) read once
    assert resolve_input(f"{tmp_path}/**/b.parquet") == (kind, files[1:])
    assert resolve_input(f"{tmp_path}/**/*.parquet") == (kind, files)
    # the job's own output folder (Ray, Spark), matched by the glob, is still left out
    (d / "out.parquet").mkdir()
    write_parquet(d / "out.parquet" / "part-0.parquet", id=[9], text=["w"])
    assert resolve_input(f"{d}/*.parquet", exclude=[d / "out.parquet"]) == (kind, files)


def test_a_folder_a_glob_matches_holding_csv_files_is_refused_as_a_folder_input_is(tmp_path):
    """(found by a review hunt, 2026-11-26, session 8) a folder a glob matches is read as a folder input is, but a
    folder input holding CSV files is refused and a matched folder was not: ``exports/*`` over ``2024-01/`` (parquet)
    and ``2024-02/`` (the month exported as CSV, with or without parquet beside it) read January and left February's
    rows out of the job, silently, or said it matched no files at all. Refused, naming the folder and its CSV files;
    CSV files the pattern matches itself, hidden ones and the job's own output are not this refusal's."""
    d = tmp_path / "exports"
    for month in ("2024-01", "2024-02"):
        (d / month).mkdir(parents=True)
    write_parquet(d / "2024-01" / "part-0.parquet", id=[1], text=["x"])
    (d / "2024-02" / "part-0.csv").write_text("id,text\n2,y\n")
    (d / "2024-01" / "_tmp.csv").write_text("id,text\n3,z\n")  # hidden: counts for nothing
    message = refusal(resolve_input, f"{d}/*")
    assert message.startswith(f"input '{d}/*' matches the folder '{d / '2024-02'}', which holds 1 CSV file(s) "
                              "['part-0.csv']"), message
    assert "left out of the job" in message and "to_parquet" in message
    write_parquet(d / "2024-02" / "part-1.parquet", id=[4], text=["w"])  # CSV beside parquet: refused alike
    assert refusal(resolve_input, f"{d}/*") == message
    assert refusal(resolve_input, f"{tmp_path}/**/2024-*") == message.replace(f"'{d}/*'", f"'{tmp_path}/**/2024-*'")
    # the CSV file the pattern names itself is the mixed kinds' refusal, as before; the parquet files alone are read
    assert "expected one CSV file" in refusal(resolve_input, f"{d}/*/*")
    assert resolve_input(f"{d}/*/*.parquet")[1] == [d / "2024-01" / "part-0.parquet", d / "2024-02" / "part-1.parquet"]
    # the job's own output folder, matched by the glob, holds what it holds
    (d / "2024-02" / "part-0.csv").unlink()
    (d / "out").mkdir()
    (d / "out" / "notes.csv").write_text("a\n1\n")
    assert len(resolve_input(f"{d}/*", exclude=[d / "out"])[1]) == 2


def test_a_folder_whose_only_parquet_file_is_the_jobs_own_output_is_not_told_to_rename_it(tmp_path):
    """(found by a review hunt, 2026-11-26, session 8) a folder of CSV exports in which an earlier run of one of them
    wrote its output (``exports/features.parquet``), read again with that ``--out``: the refusal said the folder held
    "hidden ones ['features.parquet']: names starting with '.' or '_' ... rename them", which is not hidden, would be
    read back as input if renamed, and hid what is true (a folder of CSV files). Now the job's own output is said to be
    that, and the CSV files are named with what to do; a really hidden parquet file is still said so."""
    d = tmp_path / "exports"
    d.mkdir()
    for m in ("01", "02"):
        (d / f"2024-{m}.csv").write_text("id,text\n1,a\n")
    write_parquet(d / "features.parquet", id=[1], text=["x"])
    own = [d / "features.parquet", d / "features.parquet.partial"]
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(str(d), exclude=own)
    assert str(info.value) == (
        f"input directory '{d}' holds no parquet files (.parquet, .pq, .parq) but the job's own output "
        "['features.parquet'], which is never read as input, and 2 CSV file(s) ['2024-01.csv', '2024-02.csv']: a "
        "folder or glob is read as parquet files, a CSV as one file; embed each CSV file on its own, or join them into "
        "one CSV file (one header) first.")
    for f in d.glob("*.csv"):
        f.unlink()
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(str(d), exclude=own)
    assert str(info.value) == (
        f"input directory '{d}' holds no parquet files (.parquet, .pq, .parq) but the job's own output "
        "['features.parquet'], which is never read as input; pass a CSV or parquet file, or a folder or glob of "
        "parquet files.")
    write_parquet(d / "_part-0.parquet", id=[2], text=["y"])  # a hidden one beside: said so, as before
    with pytest.raises(FileNotFoundError, match=r"input, and hidden ones \['_part-0.parquet'\]: names starting"):
        resolve_input(str(d), exclude=own)
    # a glob that matches only the job's own output says so too, not that it matches nothing
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(f"{d}/*.parquet", exclude=own)
    assert str(info.value) == (
        f"input '{d}/*.parquet' matches no files but the job's own output ['{d}/features.parquet'], which is never "
        "read as input.")


def test_a_folder_holding_csv_files_beside_its_parquet_files_is_refused_not_read_in_part(tmp_path):
    """(found by a many files that differ hunt, 2026-11-26, session 8) a folder of monthly exports, one month
    written as CSV: the folder was read as its parquet files and that month's rows left out of the job, silently
    (pyarrow.dataset, pandas.read_parquet and Spark fail on such a folder). Refused, naming the CSV files and three
    ways out; a glob of the parquet files reads them alone, and hidden CSV files count for nothing."""
    d = tmp_path / "exports"
    (d / "2024").mkdir(parents=True)
    write_parquet(d / "2024" / "01.parquet", id=[1], text=["x"])
    (d / "2024" / "02.csv.gz").write_bytes(gzip.compress(b"id,text\n2,y\n"))
    (d / "_tmp.csv").write_text("id,text\n3,z\n")
    assert refusal(resolve_input, str(d)) == (
        f"input directory '{d}' holds parquet files and 1 CSV file(s) ['2024/02.csv.gz'], which a folder input does "
        "not read: their rows would be left out of the job. Convert them to parquet in the folder "
        "(pandas.read_csv(f).to_parquet(...)), move them out, or pass a glob of the parquet files "
        f"('{d}/**/*.parquet') to read those alone.")
    assert resolve_input(f"{d}/**/*.parquet") == ("parquet", [d / "2024" / "01.parquet"])  # the advice works
    (d / "2024" / "02.csv.gz").unlink()
    assert resolve_input(str(d)) == ("parquet", [d / "2024" / "01.parquet"])


def test_an_excel_sep_line_first_declares_the_delimiter_and_is_no_header(tmp_path):
    """Excel reads a first line ``sep=;`` as the file's delimiter, and exports made for Excel write one. It was read
    as the header: refused "has columns ['sep=;'] ... pass --delimiter ';'", and with --delimiter ';' as a header of
    columns 'sep=' and '', "not found" again, advice that led nowhere. Now the line declares the delimiter (a
    declared one must agree), lines are counted from the top of the file, and every row comes out."""
    body = b'sep=;\r\nid;text\r\n1;"a;b"\r\n2;"two\r\nlines"\r\n3;c\r\n'
    want = [{"id": "1", "text": "a;b"}, {"id": "2", "text": "two\r\nlines"}, {"id": "3", "text": "c"}]
    for name, data, sep in (("s.csv", body, ";"), ("bom.csv", b"\xef\xbb\xbf" + body, ";"),
                            ("s.csv.gz", gzip.compress(body), ";"), ("comma.csv", body.replace(b";", b","), ","),
                            ("tab.csv", body.replace(b";", b"\t"), "\t"), ("cr.tsv", body.replace(b"\r\n", b"\r"), ";")):
        src = tmp_path / name
        src.write_bytes(data)
        reader = csv_reader(src, ["id", "text"], chunk_rows=2)
        got, sizes = read_all(reader)
        assert got.to_pylist() == [{"id": r["id"], "text": r["text"].replace(";", sep).replace(
            "\r\n", "\r" if name == "cr.tsv" else "\r\n")} for r in want], name
        assert sizes == [2, 1]
        assert reader.reading()["delimiter"] == sep
    src = tmp_path / "s.csv"
    assert read_all(csv_reader(src, ["id", "text"], delimiter=";"))[0].to_pylist() == want
    assert refusal(csv_reader, src, ["id", "text"], delimiter=",") == (
        f"{src} declares its delimiter on its first line, 'sep=;' (as Excel reads it), but delimiter=',' was "
        "passed; drop delimiter= to read it as the file says, or remove that line.")
    ragged = tmp_path / "ragged.csv"
    ragged.write_bytes(b"sep=;\nid;text;n\n1;a;1\n2;b;2;extra\n")
    assert refusal(csv_reader, ragged, ["id", "text"]) == (
        f"{ragged} is malformed at line 4: CSV parse error: Expected 3 columns, got 4: 2;b;2;extra"
        f"{split_unquoted(';')}")
    stray = tmp_path / "stray.csv"
    stray.write_bytes(b'sep=;\nid;text\n1;"Meh" said I\n2;b\n')
    assert refusal(csv_reader, stray, ["id", "text"]).startswith(
        f"{stray} is malformed at line 3: a quoted value (opened at line 3) has more text after its closing quote")
    # a header that only looks like it (more than one character after sep=, or a column named so) stays a header
    named = tmp_path / "named.csv"
    named.write_bytes(b"sep=ab,text\n1,a\n")
    assert read_all(csv_reader(named, ["sep=ab", "text"]))[0].to_pylist() == [{"sep=ab": "1", "text": "a"}]


@pytest.mark.parametrize("cpus", [1, None])
def test_a_malformed_row_is_named_by_its_line_alone_on_one_cpu_as_on_several(tmp_path, cpus):
    """(found by a mutation testing hunt, 2026-11-27, session 15: scripts/mutants.sh runs with OMP_NUM_THREADS=1, and
    its clean run failed on test_exports.py's word-for-word refusal) pyarrow parses on one thread where it has one
    CPU (a one-core VM or container, OMP_NUM_THREADS=1, which Ray sets in its workers) and then puts its own count in
    its words: 'is malformed at line 7: CSV parse error: Row #4: Expected 2 columns, got 3', two numbers for one
    place, and row 4 is no line to open (it counts records: a quoted value's line breaks are not counted). The line
    bertfeat names is said alone, on one CPU as on several."""
    src = tmp_path / "bad.csv"
    src.write_bytes(b'id,text\n1,"two\nlines"\n2,"three\nline\nvalue"\n3,b,extra\n4,c\n')
    before = pa.cpu_count()
    if cpus is not None:
        pa.set_cpu_count(cpus)
    try:
        with pytest.raises(ValueError) as info:
            read_all(csv_reader(src, ["id", "text"]))
    finally:
        pa.set_cpu_count(before)
    assert str(info.value) == f"{src} is malformed at line 7: CSV parse error: Expected 2 columns, got 3: 3,b,extra"


def test_lone_cr_decides_the_line_ends_at_the_headers_end_and_marks_only_a_values_lone_cr_whatever_the_pieces():
    """csv_stream.LoneCR by value, piece by piece, as the counting file hands pyarrow the bytes (whole files: the
    tests above): where the header's line ends with LF or CRLF a lone CR after it is a value's (a pair pyarrow does
    not end a row at), a file whose lines end with a lone CR (Excel for Mac's) passes as written, and ``marked`` says
    whether a batch must be read back."""
    from bertfeat.csv_stream import _AS_CR, _AS_MARK, LoneCR

    fresh = LoneCR()
    assert (fresh.lines_end_with_lf, fresh.crlf, fresh.marked) == (False, False, False)  # nothing seen yet
    lf = LoneCR()
    assert lf.rewrite(b"id,text\n1,a\rb\n") == b"id,text\n1,a" + _AS_CR + b"b\n"
    assert (lf.lines_end_with_lf, lf.crlf, lf.marked) == (True, False, True)
    assert lf.rewrite(b"2,plain\n") == b"2,plain\n" and lf.marked  # marked stays once a value holds a pair
    crlf = LoneCR()
    assert crlf.rewrite(b"id,text\r\n1,a\rb\r\n2,c\r\n") == b"id,text\r\n1,a" + _AS_CR + b"b\r\n2,c\r\n"
    assert (crlf.lines_end_with_lf, crlf.crlf, crlf.marked) == (True, True, True)
    mac = LoneCR()
    own = "x\ufdd0\ufdd2y".encode()  # a text of the file's own, noncharacters and all
    assert mac.rewrite(b"id,text\r1,a\r") == b"id,text\r1,a\r" and mac.rewrite(b"2," + own + b"\r") == b"2," + own + b"\r"
    assert (mac.lines_end_with_lf, mac.crlf, mac.marked) == (False, False, False)  # read as written, nothing back
    plain = LoneCR()
    assert plain.rewrite(b"id,text\n1,a\n") == b"id,text\n1,a\n" and not plain.marked  # no CR, no mark: as written
    assert plain.rewrite(b"2,end\r") == b"2,end\r" and not plain.marked  # a CR ending the file is a line end
    mark = LoneCR()
    assert mark.rewrite(b"t\n" + own + b"\n") == b"t\nx" + _AS_MARK + "\ufdd2y".encode() + b"\n" and mark.marked
    lead = LoneCR()  # U+FF0C shares U+FDD0's first byte: no mark of the file's own
    assert lead.rewrite("t\n\uff0c\n".encode()) == "t\n\uff0c\n".encode() and not lead.marked
    # a header whose quoted name holds a line break ends after the quote; read without quotes, at that break
    quoted = LoneCR()
    assert quoted.rewrite(b'"a\rb",text\n1,x\ry\n') == b'"a\rb",text\n1,x' + _AS_CR + b"y\n"
    assert quoted.lines_end_with_lf
    doubled = LoneCR()  # a doubled quote inside a quoted name closes nothing
    assert doubled.rewrite(b'"a""\rb",text\n1,x\ry\n') == b'"a""\rb",text\n1,x' + _AS_CR + b"y\n"
    unquoted = LoneCR(quotes=False)
    assert unquoted.rewrite(b'"a\rb"\ttext\n1\tx\ry\n') == b'"a\rb"\ttext\n1\tx\ry\n'
    assert not unquoted.lines_end_with_lf
    # the header's end in a later piece; a piece ending at the header's LF decides; one ending with its CR waits for
    # the byte after it (a one-byte read of the counting file)
    later = LoneCR()
    assert later.rewrite(b'"id\r') == b'"id\r' and later.rewrite(b'",te') == b'",te' and not later.lines_end_with_lf
    assert later.rewrite(b"xt\n1,a\rb\n") == b"xt\n1,a" + _AS_CR + b"b\n" and later.lines_end_with_lf
    ends = LoneCR()
    assert ends.rewrite(b"id,text\n") == b"id,text\n" and ends.lines_end_with_lf
    assert ends.rewrite(b"1,a\rb\n") == b"1,a" + _AS_CR + b"b\n"
    waits = LoneCR()
    assert waits.rewrite(b"id,text\r") == b"id,text\r" and not waits.lines_end_with_lf
    assert waits.rewrite(b"\n1,a\rb\r\n") == b"\n1,a" + _AS_CR + b"b\r\n" and waits.lines_end_with_lf


@pytest.mark.parametrize("spaces", ["   ", "\t", " \t "])
def test_a_line_of_spaces_in_a_file_of_several_columns_is_refused_naming_it_not_the_quoting(tmp_path, spaces):
    """(found by session 17's review of its CSV work, left; mended after) a line holding only spaces or tabs between
    rows (an edit by hand, a text editor's indentation kept) is a record of one field: refused 'Expected 2 columns, got
    1' and told that no value up to it is quoted and to write the file again quoting values, which cannot help. Now
    the line is named as a line of spaces, to remove; an empty line is skipped as before."""
    src = tmp_path / "r.csv"
    src.write_text(f"id,text\n1,a cat\n{spaces}\n2,a dog\n")
    assert refusal(lambda: read_all(csv_reader(src, ["id", "text"]))) == (
        f"{src} is malformed at line 3: CSV parse error: Expected 2 columns, got 1: {spaces}. Line 3 holds only spaces "
        "or tabs, no row of the header's 2 columns: remove it (an empty line is skipped, a line of spaces is a row "
        "of one value).")
    src.write_text("id,text\n1,a cat\n\n2,a dog\n")
    assert read_all(csv_reader(src, ["id", "text"]))[0].column("text").to_pylist() == ["a cat", "a dog"]
