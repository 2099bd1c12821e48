"""bertfeat.readers on hostile files: quotes, BOMs, duplicate headers, leading zeros, compression, big fields, TSV,
parquet directories that disagree. No model: these read only."""

import bz2
import csv
import gzip
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bertfeat import readers
from bertfeat.readers import CSV_NULLS, InputReader


def read(path, columns, text_cols=None, chunk_rows=1000, **kw):
    kw.setdefault("infer_types", False)  # the policy of bertfeat embed
    reader = InputReader(str(path), columns, chunk_rows, text_cols or [columns[-1]], **kw)
    batches = list(reader.batches())
    return pa.Table.from_batches(batches, schema=reader.schema), batches


def test_a_quote_left_open_is_an_error_naming_the_line_it_opened(tmp_path):
    src = tmp_path / "q.csv"
    src.write_text('id,review\n1,"fine"\n2,"unclosed quote\n3,x,y,z\n4,more\n')
    with pytest.raises(ValueError, match=r"quote opened at line 3 is never closed"):
        read(src, ["id", "review"])
    # a quote inside an unquoted value is legal (pyarrow and Python's csv read it as a character), odd count or not
    ok = tmp_path / "ok.csv"
    ok.write_text('id,review\n1,5" screen\n2,"a ""quoted"" word"\n')
    table, _ = read(ok, ["id", "review"])
    assert table.column("review").to_pylist() == ['5" screen', 'a "quoted" word']


def test_a_quote_opened_after_a_closed_multiline_value_names_its_own_line(tmp_path):
    src = tmp_path / "q.csv"
    src.write_text('a,b,c\n1,"two\nlines","open\nstill open\n')
    with pytest.raises(ValueError, match=r"quote opened at line 3 is never closed"):
        read(src, ["a", "b", "c"])


def test_csv_kept_columns_keep_their_text_unless_types_are_inferred(tmp_path):
    src = tmp_path / "z.csv"
    src.write_text("id,zip,text\n007,02134,hello\n010,,hi\n")
    table, _ = read(src, ["id", "zip", "text"], infer_types=False)
    assert table.column("id").to_pylist() == ["007", "010"]
    assert table.column("zip").to_pylist() == ["02134", None]  # an unquoted empty field is still missing
    inferred, _ = read(src, ["id", "zip", "text"], infer_types=True)
    assert inferred.column("id").to_pylist() == [7, 10]


def test_inferred_integers_past_int64_are_read_as_written_not_as_floats(tmp_path):
    # pyarrow infers a column of integers past int64 (20-digit order numbers, SIM card ids) as double: under
    # infer_types 18446744073709551617 came out as 1.8446744073709552e+19, another number, silently
    src = tmp_path / "big.csv"
    src.write_text("order,neg,small,ratio,text\n18446744073709551617,-9223372036854775809,5,1.5,a\n"
                   "00012345678901234567890,,-6,2,b\n,7,,,c\n")
    table, _ = read(src, ["order", "neg", "small", "ratio", "text"], infer_types=True)
    assert table.column("order").to_pylist() == ["18446744073709551617", "00012345678901234567890", None]
    assert table.column("neg").to_pylist() == ["-9223372036854775809", None, "7"]
    assert table.schema.field("order").type == pa.string() and table.schema.field("neg").type == pa.string()
    # integers that fit stay integers, and a column with a fraction stays float
    assert table.column("small").to_pylist() == [5, -6, None] and table.schema.field("small").type == pa.int64()
    assert table.column("ratio").to_pylist() == [1.5, 2.0, None]


def test_a_column_numeric_for_a_megabyte_then_text_reads_whole(tmp_path):
    src = tmp_path / "late.csv"
    n = 200_000  # well past pyarrow's 1 MB block
    with open(src, "w") as fh:
        fh.write("id,text\n")
        fh.writelines(f"{i},t\n" for i in range(n))
        fh.write("A123,t\n")
    table, _ = read(src, ["id", "text"], chunk_rows=50_000, infer_types=False)
    ids = table.column("id").to_pylist()
    assert len(ids) == n + 1 and ids[0] == "0" and ids[-1] == "A123"
    with pytest.raises(ValueError, match=r"invalid value 'A123' .* drop infer_types"):
        read(src, ["id", "text"], chunk_rows=50_000, infer_types=True)


def test_duplicate_column_names_are_refused(tmp_path):
    src = tmp_path / "d.csv"
    src.write_text("id,text,text\n1,a,b\n")
    with pytest.raises(ValueError, match=r"two columns named 'text' \(columns 2 and 3\)"):
        read(src, ["text"])
    t = pa.Table.from_arrays([pa.array([1]), pa.array(["a"]), pa.array(["b"])], names=["id", "text", "text"])
    pq.write_table(t, tmp_path / "d.parquet")
    with pytest.raises(ValueError, match=r"two columns named 'text'"):
        read(tmp_path / "d.parquet", ["text"])


def test_parquet_files_whose_column_types_differ_are_named_before_any_read(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    pd.DataFrame({"id": [1, 2], "text": ["a", "b"]}).to_parquet(d / "a.parquet")
    pd.DataFrame({"id": ["007", "8"], "text": ["c", "d"]}).to_parquet(d / "b.parquet")
    with pytest.raises(ValueError, match=r"column 'id' is (large_)?string in .*b\.parquet but int64 in .*a\.parquet"):
        InputReader(str(d), ["id", "text"], 1, ["text"])
    # string vs large_string (pandas versions differ) is no disagreement: both are text
    pq.write_table(pa.table({"id": [3], "text": pa.array(["c"], pa.string())}), d / "b.parquet")
    pq.write_table(pa.table({"id": [4], "text": pa.array(["d"], pa.large_string())}), d / "c.parquet")
    table, _ = read(d, ["id", "text"])
    assert table.column("text").to_pylist() == ["a", "b", "c", "d"]
    (d / "c.parquet").unlink()
    # an all-missing column (null type) in one file is no disagreement: it reads as the other files' type
    pq.write_table(pa.table({"id": pa.array([None, None], pa.null()), "text": ["e", "f"]}), d / "b.parquet")
    table, _ = read(d, ["id", "text"])
    assert table.column("id").type == pa.int64() and table.column("id").to_pylist() == [1, 2, None, None]


def test_a_header_name_spanning_lines_and_crlf_line_ends_read_as_written(tmp_path):
    src = tmp_path / "h.csv"
    src.write_bytes(b'\r\nid,"long\r\nname",text\r\n1,a,"b\r\nc"\r\n2,d,e\r\n')
    table, _ = read(src, ["id", "long\r\nname", "text"])
    assert table.to_pylist() == [{"id": "1", "long\r\nname": "a", "text": "b\r\nc"},
                                 {"id": "2", "long\r\nname": "d", "text": "e"}]


def test_a_utf8_bom_does_not_hide_the_first_column(tmp_path):
    src = tmp_path / "bom.csv"
    src.write_bytes("\ufeffid,text\n1,hello\n".encode("utf-8"))
    table, _ = read(src, ["id", "text"])
    assert table.column_names == ["id", "text"] and table.column("id").to_pylist() == ["1"]


@pytest.mark.parametrize("name", ["f.csv", "f.csv.gz", "f.csv.bz2", "f.csv.zst", "f.tsv", "f.tsv.gz", "f.tsv.bz2",
                                  "f.tsv.zst"])
def test_every_documented_suffix_is_read_with_its_delimiter(tmp_path, name):
    sep = "\t" if ".tsv" in name else ","
    data = f"id{sep}text\n1{sep}\"a, b\tc\"\n2{sep}caf\u00e9\n".encode("utf-8")
    path = tmp_path / name
    if name.endswith(".gz"):
        data = gzip.compress(data)
    elif name.endswith(".bz2"):
        data = bz2.compress(data)
    elif name.endswith(".zst"):
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as z:
            z.write(data)
        data = sink.getvalue().to_pybytes()
    path.write_bytes(data)
    table, _ = read(path, ["id", "text"])
    assert table.column("text").to_pylist() == ["a, b\tc", "caf\u00e9"]


def test_tsv_is_split_on_tabs_and_a_declared_delimiter_is_used(tmp_path):
    tsv = tmp_path / "t.tsv"
    tsv.write_text("id\ttext\n1\tone, two, three\n2\tfour\n")
    table, _ = read(tsv, ["id", "text"])
    assert table.column("text").to_pylist() == ["one, two, three", "four"]
    semi = tmp_path / "s.csv"
    semi.write_text("id;text\n1;one, two\n")
    table, _ = read(semi, ["id", "text"], delimiter=";")
    assert table.column("text").to_pylist() == ["one, two"]
    with pytest.raises(ValueError, match=r"delimiter='ab' is not valid"):
        read(semi, ["id", "text"], delimiter="ab")


def test_a_field_longer_than_a_read_block_is_read(tmp_path):
    src = tmp_path / "big.csv"
    big = "word " * 700_000  # 3.5 MB, over pyarrow's 1 MB block
    src.write_text(f'id,text\n1,"{big}"\n2,small\n')
    table, _ = read(src, ["id", "text"])
    assert table.column("text").to_pylist() == [big, "small"]


def test_chunks_are_cut_by_text_characters_as_well_as_rows(tmp_path):
    src = tmp_path / "c.parquet"
    texts = ["x" * 10] * 7 + ["y" * 100] + ["z" * 10] * 4
    pd.DataFrame({"text": texts}).to_parquet(src)
    _, batches = read(src, ["text"], chunk_rows=5, chunk_chars=35)
    sizes = [b.num_rows for b in batches]
    # 3 rows of 10 chars fit in 35; the 100-char row is a chunk of its own; rows never exceed 5
    assert sizes == [3, 3, 1, 1, 3, 1]
    assert sum(sizes) == len(texts)
    assert [t for b in batches for t in b.column("text").to_pylist()] == texts


# -- property: random tables read back exactly, the oracle being Python's csv module -----------------------------

cell = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12),
    st.sampled_from(["007", "0", "-1.5", "NA", "", "a,b", 'say "hi"', "two\nlines", "\ufeffbom", " ", "TRUE",
                     "a\r\nb", "a\rb"]),
)


def _unquoted_records(body: str, backslash: bool) -> tuple[list[int], bool, bool]:
    """The records of the TSV ``body`` read with no quotes, character by character: each one's count of values,
    whether the last ended with a line break, and whether a line break was escaped; with ``backslash``, a backslash
    escapes the character after it (at the very end, nothing: no export writes that), as MySQL's INTO OUTFILE."""
    fields, records, ended, joined, i = 1, [], False, False, 0
    while i < len(body):
        c = body[i]
        if backslash and c == "\\":
            joined |= body[i + 1:i + 2] == "\n"
            ended, i = False, i + 2
            continue
        if c == "\t":
            fields += 1
        elif c == "\n":
            records.append(fields)
            fields = 1
        ended, i = c == "\n", i + 1
    return records, ended, joined


def _unquoted(value: str, sep: str, quoting: int) -> bool:
    """Whether Python's csv module (pandas writes through it) writes the text ``value`` unquoted."""
    buf = io.StringIO()
    csv.writer(buf, delimiter=sep, quoting=quoting, lineterminator="\n").writerow([value, "x"])
    return not buf.getvalue().startswith('"')


def _another_reading(data: str, text_col: int) -> bool:
    """Whether the TSV ``data`` (its header first) reads as a table other than the one written where its values are
    never quoted, every record of the header's width: as a TSV that quotes nothing (its quotes the texts' own), as
    MySQL's INTO OUTFILE writes one (a backslash escapes the next character: one escaping a line break joins two
    lines), or as PostgreSQL's COPY text format and mysql --batch write one (a backslash and n, t or r in the text
    column, and no backslash those exports would never write: before another character, or alone at a value's end).
    Written here apart from bertfeat."""
    lines = data.split("\n")
    width, body = lines[0].count("\t") + 1, "\n".join(lines[1:])
    records, ended, _ = _unquoted_records(body, backslash=False)
    if ended and set(records) == {width} and '"' in body:
        return True
    records, ended, joined = _unquoted_records(body, backslash=True)
    if not (ended and set(records) == {width}):
        return False
    if joined or '"' in body:
        return True
    texts = [line.split("\t")[text_col] for line in lines[1:] if line.count("\t") == width - 1]
    return (any(re.search(r"(^|[^\\])(\\\\)*\\[ntr]", t) for t in texts)
            and not any(re.search(r"(^|[^\\])(\\\\)*\\([^\\ntrbfvN0]|$)", t) for t in texts))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(cell, min_size=3, max_size=3), min_size=1, max_size=12),
       quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC]),
       sep=st.sampled_from([",", "\t", ";"]), bom=st.booleans(), writer=st.sampled_from(["csv", "pandas"]))
# a text ending with a backslash, in the last row (once refused as MySQL's escaped line break: none can end a file),
# in a row further up, and in a quoted value (its backslash before a quote, no line break)
@example(rows=[["", "", ""]] * 11 + [["", "", "\\"]], quoting=csv.QUOTE_MINIMAL, sep="\t", bom=False, writer="csv")
@example(rows=[["", "", "a\\"], ["1", "2", "b"]], quoting=csv.QUOTE_MINIMAL, sep="\t", bom=False, writer="csv")
@example(rows=[["1", "2", "b\\"]], quoting=csv.QUOTE_ALL, sep="\t", bom=False, writer="pandas")
# a text a database's export could have written too: MySQL's (an escaped tab and line break), PostgreSQL's ("\n")
@example(rows=[["a\\", "b\\", "c\\"], ["d", "e", "f"]], quoting=csv.QUOTE_MINIMAL, sep="\t", bom=False,
         writer="csv")
@example(rows=[["1", "2", "one\\ntwo"]], quoting=csv.QUOTE_MINIMAL, sep="\t", bom=False, writer="csv")
# a quoted text holding a line break and a tab (once refused as rows a TSV that quotes nothing read into one value,
# where its lines are no rows of the header's width unquoted), and a text a TSV that quotes nothing could hold too
@example(rows=[["", "", ""], ["", "", "\n0\t"]], quoting=csv.QUOTE_MINIMAL, sep="\t", bom=False, writer="csv")
@example(rows=[["", "", "x\ny\tz\tw"]], quoting=csv.QUOTE_MINIMAL, sep="\t", bom=False, writer="csv")
# a quoted text holding a line break and a backslash and n (once refused as PostgreSQL's escape: no export quotes)
@example(rows=[["", "", "\n\\n"]], quoting=csv.QUOTE_MINIMAL, sep="\t", bom=False, writer="csv")
# a lone CR, which Python's csv module and pandas write unquoted where their line terminator is "\n" (once read as a
# line end: a ragged row), also ending a value before the delimiter, and ending the row's last value (read as a CRLF)
@example(rows=[["", "\r", ""], ["1", "a\rb", "c\r"]], quoting=csv.QUOTE_MINIMAL, sep=",", bom=False, writer="pandas")
@example(rows=[["\r\r", "x\r", "\ry"]], quoting=csv.QUOTE_MINIMAL, sep="\t", bom=True, writer="csv")
# a row starting "sep=" then a lone CR: Python's csv module, which looks for a repeated header or Excel's sep= line,
# read it as the line 'sep=,' (split at the lone CR where the reader does not), and the file was refused
@example(rows=[["", "", ""], ["sep=", "\r", ""]], quoting=csv.QUOTE_MINIMAL, sep=",", bom=False, writer="csv")
# a quoted text ending with a backslash and CRLF, in a file of LF lines: MySQL's backslash escapes the CR there, so
# its LF ends the row (once read as MySQL's escaped line break, two rows joined, and the file refused)
@example(rows=[["", "\\\r\n", "\\"]], quoting=csv.QUOTE_ALL, sep="\t", bom=False, writer="csv")
def test_random_tables_read_back_as_pythons_csv_module_reads_them(tmp_path, rows, quoting, sep, bom, writer):
    path = tmp_path / ("p.tsv" if sep == "\t" else "p.csv")
    header = ["id", "label", "text"]
    buf = io.StringIO()
    if writer == "csv":
        w = csv.writer(buf, delimiter=sep, quoting=quoting, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    else:
        pd.DataFrame(rows, columns=header, dtype=object).to_csv(buf, sep=sep, index=False, quoting=quoting,
                                                                lineterminator="\n")
    data = buf.getvalue()
    path.write_bytes(("\ufeff" if bom else "").encode() + data.encode("utf-8"))

    # the oracle: the rows written, as Python's csv module reads them back, but for a lone CR, which it writes unquoted
    # (its line terminator "\n" holds none) and reads as a line end; a value is missing when it was written unquoted
    # and is an NA marker; a CR ending a row's last value, unquoted, is read as the CRLF that ends the row
    oracle = [[w[:-1] if j == 2 and w.endswith("\r") and _unquoted(w, sep, quoting) else w
               for j, w in enumerate(row)] for row in rows]
    unquoted_missing = quoting == csv.QUOTE_MINIMAL or (quoting == csv.QUOTE_NONNUMERIC and writer == "pandas")
    # every table these writers produce is well-formed: it must read, no error allowed, but for a TSV a database's
    # backslash-escaped export could have written too, where bertfeat asks which it is and its answer reads it
    try:
        table, _ = read(path, header, text_cols=["text"], delimiter=None if sep != ";" else ";", chunk_rows=5)
    except ValueError as exc:
        if not (sep == "\t" and "pass quoting='csv'" in str(exc) and _another_reading(data, 2)):
            raise
        table, _ = read(path, header, text_cols=["text"], chunk_rows=5, quoting="csv")
    got = [[table.column(c)[i].as_py() for c in header] for i in range(table.num_rows)]
    assert len(got) == len(oracle)
    for got_row, want_row in zip(got, oracle):
        for g, w in zip(got_row, want_row):
            if g is None:
                # missing only where the writer left the value unquoted and it is an NA marker
                assert unquoted_missing and w in CSV_NULLS, (g, w)
            else:
                assert g == w
    assert np.all([isinstance(v, (str, type(None))) for r in got for v in r])  # kept columns stay text


@pytest.mark.parametrize("body, line", [
    ('1,5" screen\n2,"open\n3,more\n4,x\n', 3),  # a literal quote before: the file's quote count is even
    ('1,"a ""b"" c"\n2,x" y\n3,"open\n4,z\n', 4),
    ('1,x\n2,"open "" still open\n3,y\n', 3),  # a doubled quote inside the open value
    ('1,a"b"c\n2,"open', 3),  # no line break at the end
])
def test_a_quote_left_open_is_found_whatever_other_quotes_the_file_holds(tmp_path, body, line):
    src = tmp_path / "q.csv"
    src.write_text("id,review\n" + body)
    with pytest.raises(ValueError, match=rf"quote opened at line {line} is never closed"):
        read(src, ["id", "review"])



def test_an_open_quote_is_refused_before_any_row_is_delivered_and_a_bom_opens_no_quote(tmp_path):
    src = tmp_path / "q.csv"
    src.write_text('id,review\n1,5" screen\n2,"open\n3,more\n')
    reader = InputReader(str(src), ["id", "review"], 1, ["review"], infer_types=False)
    delivered = []
    with pytest.raises(ValueError, match="quote opened at line 3"):
        for batch in reader.batches():
            delivered.append(batch)
    assert delivered == []  # the garbled last row (the rest of the file as one text) never reaches the caller
    # a quoted first name right after a BOM is a quoted value: read as the quotes say, not as a quote left open
    bom = tmp_path / "bom.csv"
    bom.write_bytes('\ufeff"a\n"",",label,text\n1,2,3\n'.encode())
    table, _ = read(bom, ['a\n",', "label", "text"])
    assert table.to_pylist() == [{'a\n",': "1", "label": "2", "text": "3"}]

# -- property: a quote left open is found wherever it is, and only then --------------------------------------------


def line_breaks(text: str) -> int:
    """Line breaks as Python's csv module counts lines (newline=""): CRLF, a lone CR or a lone LF, each one."""
    return len(re.findall(r"\r\n|\r|\n", text))


unquoted_field = st.text("xy5 \"'", min_size=1, max_size=6).map(lambda s: "x" + s)  # a quote inside is a character
quoted_field = st.text("xy,;\t\n\r\"", max_size=6).map(lambda s: '"' + s.replace('"', '""') + '"')
open_field = st.text("xy,;\t\n\r\"", max_size=6).map(lambda s: '"' + s.replace('"', '""'))  # never closes


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(st.one_of(unquoted_field, quoted_field), min_size=3, max_size=3), max_size=6),
       open_at=st.none() | st.integers(0, 2), sep=st.sampled_from([",", "\t"]),
       eol=st.sampled_from(["\n", "\r\n", "\r"]),
       bom=st.booleans(), first_name=st.none() | quoted_field.filter(lambda f: len(f) > 2),
       cut=st.integers(1, 8) | st.integers(9, 4096), data=st.data())
def test_a_quote_left_open_is_found_wherever_it_is_and_only_then(tmp_path, rows, open_at, sep, eol, bom, first_name,
                                                                 cut, data):
    from bertfeat.quotes import QuoteScanner

    header = [first_name or "id", "label", "text"]  # a quoted name right after the BOM opens a value
    names = next(csv.reader([sep.join(header)], delimiter=sep))
    text = eol.join(sep.join(r) for r in [header, *rows]) + eol
    if open_at is not None:  # a last record whose field open_at opens a quote that is never closed
        text += "".join(data.draw(st.one_of(unquoted_field, quoted_field)) + sep for _ in range(open_at))
        # lines as the reader ends them: where they end with LF or CRLF, a lone CR is a value's, no line end
        line = (line_breaks(text) if eol == "\r" else text.count("\n")) + 1
        text += data.draw(open_field) + data.draw(st.sampled_from(["", eol, eol + "x" + sep + "y"]))
    raw = ("\ufeff" if bom else "").encode() + text.encode()
    path = tmp_path / ("p.tsv" if sep == "\t" else "p.csv")
    path.write_bytes(raw)

    scanner = QuoteScanner(sep)  # fed in pieces of any size, it sees what the whole file shows
    for i in range(0, len(raw), cut):
        scanner.feed(raw[i:i + cut])
    assert scanner.ends_open == (open_at is not None)
    # quoting="csv" declared: a TSV read without it refuses a quoted value holding a line break, a field and a tab,
    # which these well-formed files may hold (tests/test_exports.py)
    if open_at is not None:
        with pytest.raises(ValueError, match=rf"quote opened at line {line} is never closed"):
            read(path, names, quoting="csv")
    else:
        table, _ = read(path, names, quoting="csv")
        oracle = list(csv.reader(io.StringIO(text, newline=""), delimiter=sep))[1:]
        assert [list(r.values()) for r in table.to_pylist()] == oracle


@settings(max_examples=1500, deadline=None)
@given(before=st.lists(st.sampled_from(["x", '"', "\n", ",", "\r\n", "\r"]), max_size=12),
       fields=st.lists(st.one_of(unquoted_field, quoted_field), max_size=4), opened=open_field,
       after=st.sampled_from(["", "\n", "\nx,y\n"]))
def test_the_line_of_an_open_quote_is_the_line_of_the_quote_that_never_closes(before, fields, opened, after):
    from bertfeat.quotes import open_quote_line

    # complete records first (any text: they are skipped by line count), then a record whose last field never closes
    head = "".join(before).replace('"', "") + "\n"
    record = "".join(f + "," for f in fields)
    text = head + record + opened + after
    record_start = line_breaks(head)
    want = line_breaks(head + record) + 1
    assert open_quote_line(lambda: io.StringIO(text, newline=""), record_start, ",") == want


@settings(max_examples=1500, deadline=None)
@given(records=st.lists(st.lists(st.one_of(unquoted_field, quoted_field), min_size=1, max_size=3), max_size=4),
       eol=st.sampled_from(["\n", "\r\n", "\r"]), fields=st.lists(st.one_of(unquoted_field, quoted_field), max_size=3),
       opened=open_field, after=st.sampled_from(["", "\n", "\nx,y\n"]))
def test_the_line_of_an_open_quote_counts_the_complete_records_before_it(records, eol, fields, opened, after):
    """From any record start, however many complete records (quoted line breaks included) come before the one whose
    quote never closes: the line is that quote's line, as Python's csv module counts lines."""
    from bertfeat.quotes import open_quote_line

    head = "id\n"
    done = "".join(",".join(r) + eol for r in records)
    text = head + done + "".join(f + "," for f in fields) + opened + after
    want = line_breaks(head + done + "".join(f + "," for f in fields)) + 1
    assert open_quote_line(lambda: io.StringIO(text, newline=""), 1, ",") == want


# -- hostile CSVs found on 2026-11-25 ------------------------------------------------------------------------------


@pytest.mark.parametrize("body, line, opened", [
    # a stray opening quote: pyarrow read rows 2 and 3 into row 1's text and delivered ids 1 and 4, without a word
    ('1,"Best ever\n2,ok\n3,"Meh" said I\n4,fine\n', 4, 2),
    ('1,"Meh" said I\n2,fine\n', 2, 2),  # pyarrow kept 'Meh said I': the quotes silently dropped
    ('1,"a" ,b\n', 2, 2),  # a space after the closing quote
])
def test_a_quoted_value_followed_by_more_text_is_an_error_naming_its_lines(tmp_path, body, line, opened):
    src = tmp_path / "q.csv"
    src.write_text("id,review\n" + body)
    with pytest.raises(ValueError, match=rf"malformed at line {line}: .*opened at line {opened}"):
        InputReader(str(src), ["id", "review"], 1, ["review"], infer_types=False)  # in the first block: before any work
    # further into the file than pyarrow reads at the start (read blocks made small): refused before the rows read
    # into one value are delivered
    import bertfeat.readers

    far = tmp_path / "far.csv"
    far.write_text("id,review\n" + "".join(f"{i},row {i}\n" for i in range(20_000)) + body.replace("1,", "x,", 1))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bertfeat.readers, "BLOCK_BYTES", 1 << 12)
        reader = InputReader(str(far), ["id", "review"], 1000, ["review"], infer_types=False)
        delivered = []
        with pytest.raises(ValueError, match=rf"malformed at line {20_000 + line}: .*opened at line {20_000 + opened}"):
            for batch in reader.batches():
                delivered.extend(batch.column("id").to_pylist())
    assert "x" not in delivered and 0 < len(delivered) < 20_000
    # the same value written as a CSV writer writes it reads back as written
    ok = tmp_path / "ok.csv"
    ok.write_text('id,review\n1,"""Meh"" said I"\n2,"a",b\n')
    with pytest.raises(ValueError, match="Expected 2 columns, got 3"):  # row 2 really has three fields
        read(ok, ["id", "review"])
    ok.write_text('id,review\n1,"""Meh"" said I"\n2,"a"\r\n3,"b"')
    table, _ = read(ok, ["id", "review"])
    assert table.column("review").to_pylist() == ['"Meh" said I', "a", "b"]


def test_a_closing_quote_at_the_end_of_a_read_piece_is_judged_by_the_next_byte():
    from bertfeat.quotes import QuoteScanner

    for pieces, bad in [([b'1,"ab"', b"c\n"], True), ([b'1,"ab"', b",c\n"], False), ([b'1,"ab"', b'"c"\n'], False),
                        ([b'1,"ab"', b"\r\n"], False), ([b'1,"ab"'], False), ([b'1,"a', b'b"x'], True)]:
        scanner = QuoteScanner(",")
        for piece in pieces:
            scanner.feed(piece)
        assert (scanner.closed_early is not None) == bad, pieces


def test_the_line_of_a_ragged_row_counts_blank_lines_before_the_header(tmp_path):
    for eol in ("\n", "\r\n"):
        src = tmp_path / "r.csv"
        src.write_bytes(eol.join(["", "id,text", "1,a", "2,b", "3,c,d", "4,e", ""]).encode())
        with pytest.raises(ValueError, match=r"malformed at line 5: .*Expected 2 columns, got 3"):
            read(src, ["id", "text"])


@pytest.mark.parametrize("content", [b"id,text", b"\xef\xbb\xbfid,text", b"id,text\r", b"\nid,text"])
def test_a_header_with_no_line_break_after_it_is_a_file_with_no_rows(tmp_path, content):
    src = tmp_path / "h.csv"
    src.write_bytes(content)
    table, batches = read(src, ["id", "text"])
    assert batches == [] and table.num_rows == 0 and table.column_names == ["id", "text"]


def test_a_first_line_of_spaces_is_named_as_what_it_is(tmp_path):
    src = tmp_path / "ws.csv"
    src.write_text(" \nid,text\n1,a\n")
    with pytest.raises(ValueError, match=r"line 1, where the header belongs, names no columns \(it holds only "
                                         r"delimiters or spaces\)"):
        read(src, ["id", "text"])


def test_a_delimiter_outside_ascii_is_refused_naming_the_option(tmp_path):
    src = tmp_path / "d.csv"
    src.write_text("id§text\n1§a\n")
    with pytest.raises(ValueError, match=r"delimiter='§' is not valid: .*ASCII"):
        read(src, ["id", "text"], delimiter="§")


def _parquet_with_bytes(path, column: str, values: list[bytes], other: str):
    """A parquet file whose string column ``column`` holds ``values`` as raw bytes (invalid UTF-8 included)."""
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    import numpy as np

    bad = pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(np.array(offsets, np.int32).tobytes()),
                                                           pa.py_buffer(b"".join(values))])
    good = pa.array([f"v{i}" for i in range(len(values))])
    cols = {column: bad, other: good}
    pq.write_table(pa.table({k: cols[k] for k in sorted(cols)}), path)


@pytest.mark.parametrize("column", ["id", "text"])
def test_invalid_utf8_in_a_parquet_string_column_names_the_file_column_and_row(tmp_path, column):
    src = tmp_path / "bad.parquet"
    _parquet_with_bytes(src, column, [b"fine", b"caf\xe9", b"ok"], "text" if column == "id" else "id")
    # the second row: row 1 of that file, counted from 0 as every error naming a row counts (docs/cli.md's "Lines
    # and rows"; it said "row 2" before the leftovers hunt of session 10 made the rule one)
    with pytest.raises(ValueError, match=rf"bad\.parquet.*column '{column}' at row 1 of that file .*UTF-8"):
        read(src, ["id", "text"], text_cols=["text"])


def test_a_damaged_parquet_file_in_a_folder_is_named(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    for name in ("a", "b"):
        pq.write_table(pa.table({"id": ["1"], "text": ["x"]}), folder / f"{name}.parquet")
    whole = (folder / "b.parquet").read_bytes()
    (folder / "c.parquet").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"c\.parquet"):
        read(folder, ["id", "text"])


def test_a_folder_input_leaves_out_the_jobs_own_output_and_parts(tmp_path):
    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    (folder / "out.parquet.partial").mkdir(parents=True)
    for f in ("a.parquet", "out.parquet", "out.parquet.partial/part-000000.parquet", "sub/b.parquet"):
        (folder / f).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": ["1"], "text": ["x"]}), folder / f)
    out = folder / "out.parquet"
    partial = folder / "out.parquet.partial"
    for named in (str(folder), str(folder / "**" / "*.parquet")):
        _, files = resolve_input(named, exclude=[out, partial])
        assert [f.relative_to(folder).as_posix() for f in files] == ["a.parquet", "sub/b.parquet"], named
    # an output folder (the cluster engines') inside the input folder is left out too, but never the input itself
    _, files = resolve_input(str(folder), exclude=[folder / "sub"])
    assert [f.relative_to(folder).as_posix() for f in files] == ["a.parquet", "out.parquet",
                                                                   "out.parquet.partial/part-000000.parquet"]
    _, files = resolve_input(str(folder / "sub"), exclude=[folder / "sub"])
    assert [f.relative_to(folder).as_posix() for f in files] == ["sub/b.parquet"]


def test_a_folder_input_leaves_out_the_jobs_own_output_named_in_another_case_where_case_is_ignored(case_insensitive):
    """On macOS (and Windows) ``--out d/Out.parquet`` is the file ``d/out.parquet`` an earlier run wrote; the folder's
    listing names it as written, and the job's own output and parts were left out by name, so they were read back
    as input."""
    from bertfeat.readers import resolve_input

    folder = case_insensitive / "d"
    for f in ("a.parquet", "out.parquet", "out.parquet.partial/part-000000.parquet"):
        (folder / f).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": ["1"], "text": ["x"]}), folder / f)
    for named in (str(folder), str(folder / "*.parquet"), str(folder / "**" / "*.parquet")):
        _, files = resolve_input(named, exclude=[folder / "Out.parquet", folder / "Out.parquet.partial"])
        assert [f.relative_to(folder).as_posix() for f in files] == ["a.parquet"], named
    _, files = resolve_input(str(folder), exclude=[case_insensitive / "D"])  # the input itself is never left out
    assert len(files) == 3


def test_where_the_file_system_gives_no_file_ids_every_file_of_a_folder_or_glob_input_is_read(no_file_ids):
    """(found by a review of session 14's merged work, 2026-11-27, session 14) bertfeat told files apart by
    ``(st_dev, st_ino)``, which a file system without file ids gives as ``(drive, 0)`` for every file (on Windows, a
    drive of sshfs-win or Google Drive for desktop): a folder input read its top folder's files only, every subfolder
    taken for one already read; a glob kept one file of all it matched (every other one taken for it by a second
    name); and session 14's SameFiles took each file for the job's own output, leaving every one out. Each ran on, the
    rows of the files left out missing from the features without a word. A file id of 0 now tells nothing: such files
    are told apart by their paths, and a link back to a folder still ends the walk."""
    import os

    from bertfeat.readers import resolve_input

    folder = no_file_ids / "d"
    for f in ("a.parquet", "b.parquet", "sub/c.parquet", "sub/deeper/d.parquet"):
        (folder / f).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [f], "text": ["x"]}), folder / f)
    os.symlink(folder, folder / "sub" / "loop")  # back to the top: the walk still ends, nothing read twice
    assert os.stat(folder / "a.parquet").st_ino == os.stat(folder / "sub").st_ino == 0
    every = ["a.parquet", "b.parquet", "sub/c.parquet", "sub/deeper/d.parquet"]
    for named, want in ((folder, every), (folder / "**" / "*.parquet", every), (folder / "*.parquet", every[:2])):
        _, files = resolve_input(str(named), exclude=[folder / "out.parquet", folder / "out.parquet.partial"])
        assert [f.relative_to(folder).as_posix() for f in files] == want, named
    _, files = resolve_input(str(folder), exclude=[folder / "sub"])  # a folder output inside it is still left out
    assert [f.relative_to(folder).as_posix() for f in files] == every[:2]


def test_a_subfolder_that_cannot_be_listed_is_refused_not_left_out(tmp_path, monkeypatch):
    """A folder walk skips a subfolder it cannot list (os.walk and Path.rglob alike, silently): a partition another
    user owns with mode 700 was left out of the job. It is refused now, naming the folder. (Tests run as root, who
    may list anything, so the refusal is planted in os.scandir.)"""
    import os

    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    for f in (folder / "a.parquet", folder / "private" / "b.parquet"):
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [f.stem], "text": ["x"]}), f)
    scandir = os.scandir

    def refusing(path="."):
        if os.fspath(path).endswith("private"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    for named in (folder, folder / "**" / "*.parquet"):  # a glob's ** walks the folders too
        with pytest.raises(PermissionError, match=r"input folder '.*private' cannot be listed \(Permission denied\): "
                                                  r"its files would be left out"):
            resolve_input(str(named))


def test_a_folder_input_follows_symlinked_subfolders_and_reads_each_folder_once(tmp_path):
    """(found by the versions users bring hunt, 2026-11-26, session 7) a folder input skipped the parquet files under a
    symlinked subfolder (``Path.rglob`` does not follow links; a glob of the same folder does): a dataset with some
    partitions linked in from another disk was read in part, silently. Links are followed now; a folder reached twice
    (a second link to it, or a loop back to an ancestor) is read once."""
    import os

    from bertfeat.readers import resolve_input

    folder, elsewhere = tmp_path / "d", tmp_path / "other-disk" / "2026"
    for f in (folder / "a.parquet", folder / "sub" / "b.parquet", elsewhere / "c.parquet"):
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [f.stem], "text": ["x"]}), f)
    os.symlink(elsewhere, folder / "linked")
    os.symlink(elsewhere, folder / "sub" / "again")  # the same folder by a second link: read once
    os.symlink(folder, folder / "sub" / "loop")  # back to the top: no endless walk, nothing read twice
    _, files = resolve_input(str(folder))
    assert [f.relative_to(folder).as_posix() for f in files] == ["a.parquet", "linked/c.parquet", "sub/b.parquet"]
    _, globbed = resolve_input(str(folder / "*" / "*.parquet"))
    assert {f.name for f in globbed} == {"b.parquet", "c.parquet"}  # a glob followed the link already


def test_a_glob_through_symlinks_reads_each_file_once_and_ends(tmp_path):
    """A ``**`` glob through a link back to an ancestor read each file once per turn of the loop until the path
    grew too long (3 files read 123 times, the rows repeated, silently), and with two such links it never ended;
    a glob reaching one folder by two names (a link beside it) read its files twice. A glob reads each folder once,
    as a folder input does, and each file once (the first name in sorted order)."""
    import os

    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    for f in (folder / "a.parquet", folder / "sub" / "b.parquet", folder / ".hidden" / "h.parquet"):
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [f.stem], "text": ["x"]}), f)
    os.symlink("..", folder / "sub" / "loop")  # a relative link back to the top
    os.symlink("sub", folder / "again")  # the same folder by a second name
    os.symlink("a.parquet", folder / "z.parquet")  # the same file by a second name
    for pattern, want in (("**/*.parquet", ["a.parquet", "sub/b.parquet"]), ("*/*.parquet", ["sub/b.parquet"]),
                          ("**", ["a.parquet", "sub/b.parquet"]), ("sub/**/b.parquet", ["sub/b.parquet"]),
                          (".hidden/*.parquet", [".hidden/h.parquet"])):
        _, files = resolve_input(str(folder / pattern))
        got = sorted(os.path.realpath(f)[len(str(folder.resolve())) + 1:] for f in files)
        assert got == want, pattern
        assert len(files) == len({os.path.realpath(f) for f in files}), pattern


def test_a_dangling_link_among_the_input_files_is_refused_not_left_out(tmp_path):
    """A partition linked in from a disk that is not mounted (a dangling link named ``*.parquet``) was left out of a
    folder or glob input without a word: part of the data set unread."""
    import os

    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a"], "text": ["x"]}), folder / "a.parquet")
    os.symlink(tmp_path / "unmounted" / "b.parquet", folder / "b.parquet")
    for named in (folder, folder / "*.parquet", folder / "**"):
        with pytest.raises(FileNotFoundError, match=r"b\.parquet' is a symbolic link to .*unmounted/b\.parquet"
                                                    r"', which does not exist"):
            resolve_input(str(named))
    (folder / "notes.txt").symlink_to(tmp_path / "gone.txt")  # not an input file by its name: no matter
    (folder / "b.parquet").unlink()
    assert [f.name for f in resolve_input(str(folder))[1]] == ["a.parquet"]


def test_the_refusal_of_a_dangling_link_says_what_to_do_word_for_word(tmp_path):
    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "b.parquet").symlink_to(tmp_path / "unmounted" / "b.parquet")
    with pytest.raises(FileNotFoundError) as err:
        resolve_input(str(folder / "*.parquet"))
    assert str(err.value) == (
        f"input file {str(folder / 'b.parquet')!r} is a symbolic link to {str(tmp_path / 'unmounted' / 'b.parquet')!r}, "
        "which does not exist (a disk not mounted, a file moved?): its rows would be left out of the job; mount or "
        "restore it, or remove the link.")


def test_a_glob_with_two_links_back_to_an_ancestor_ends_reading_each_file_once(tmp_path):
    """Python's glob follows each link back to an ancestor round and round: with two of them the paths it walks
    double at every level until the system's limit of 40 links in a path, which never ends in practice."""
    import os

    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    (folder / "sub").mkdir(parents=True)
    for f in (folder / "a.parquet", folder / "sub" / "b.parquet"):
        pq.write_table(pa.table({"id": [f.stem], "text": ["x"]}), f)
    os.symlink("..", folder / "sub" / "up")
    os.symlink("..", folder / "sub" / "up2")
    top = os.path.realpath(folder)
    for pattern, want in (("**/*.parquet", ["a.parquet", "sub/b.parquet"]), ("**/b.parquet", ["sub/b.parquet"]),
                          ("*/**/*.parquet", ["a.parquet", "sub/b.parquet"])):  # a.parquet as sub/up/a.parquet
        _, files = resolve_input(str(folder / pattern))
        assert sorted(os.path.relpath(os.path.realpath(f), top) for f in files) == want, pattern
    # a folder input: the second name of a folder (read first, in sorted order) leaves the folders after it read
    os.symlink("sub", folder / "again")
    (folder / "zz").mkdir()
    pq.write_table(pa.table({"id": ["c"], "text": ["x"]}), folder / "zz" / "c.parquet")
    assert [os.path.relpath(f, folder) for f in resolve_input(str(folder))[1]] == [
        "a.parquet", "again/b.parquet", "zz/c.parquet"]


def test_a_glob_matching_only_the_jobs_own_parts_names_the_first_five(tmp_path):
    from bertfeat.readers import resolve_input

    parts = tmp_path / "out.parquet.partial"
    parts.mkdir()
    for i in range(6):
        pq.write_table(pa.table({"id": [i], "text": ["x"]}), parts / f"part-{i}.parquet")
    pattern = str(tmp_path / "**" / "*.parquet")
    with pytest.raises(FileNotFoundError) as err:
        resolve_input(pattern, exclude=(tmp_path / "out.parquet", parts))
    own = [str(parts / f"part-{i}.parquet") for i in range(5)]
    assert str(err.value) == (
        f"input {pattern!r} matches no files but the job's own output {own}, which is never read as input.")


def test_a_glob_or_folder_reads_regular_files_only_not_a_pipe_named_like_parquet(tmp_path):
    """A named pipe (or a socket) named ``*.parquet`` beside the files is no input file: opened, a pipe blocks until
    something writes into it."""
    import os

    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a"], "text": ["x"]}), folder / "a.parquet")
    os.mkfifo(folder / "b.parquet")
    for named in (folder, folder / "*.parquet", folder / "**" / "*.parquet", folder / "[ab].parquet"):
        assert [f.name for f in resolve_input(str(named))[1]] == ["a.parquet"], named


def test_a_glob_relative_to_the_working_folder_is_searched_there(tmp_path, monkeypatch):
    """``bertfeat embed '*.parquet' --out ...`` run in the data's folder: a pattern whose first part is a wildcard
    is searched from the working folder."""
    from bertfeat.readers import resolve_input

    (tmp_path / "sub").mkdir()
    for f in (tmp_path / "a.parquet", tmp_path / "sub" / "b.parquet"):
        pq.write_table(pa.table({"id": [f.stem], "text": ["x"]}), f)
    monkeypatch.chdir(tmp_path)
    assert resolve_input("*.parquet") == ("parquet", [Path("a.parquet")])
    assert resolve_input("*/*.parquet") == ("parquet", [Path("sub/b.parquet")])
    assert resolve_input("**/*.parquet") == ("parquet", [Path("a.parquet"), Path("sub/b.parquet")])


@pytest.mark.parametrize("tail, message", [
    ('3,"open\n4,more\n', r"quote opened at line 4 is never closed"),
    ('3,"closed" early\n', r"malformed at line 4: a quoted value \(opened at line 4\)"),
    ("3,a,b\n", r"malformed at line 4: .*Expected 2 columns, got 3"),
])
def test_a_field_over_pythons_csv_limit_does_not_hide_the_problem_after_it(tmp_path, tail, message):
    """The line of a problem is found by re-reading with Python's csv module, which refuses fields over 128 KiB
    unless told otherwise: the message named that limit instead of the problem."""
    src = tmp_path / "big.csv"
    src.write_text("id,review\n1,short\n2," + "x" * 200_000 + "\n" + tail)
    with pytest.raises(ValueError, match=message):
        read(src, ["id", "review"])


@pytest.mark.parametrize("codec", ["", ".gz"])
@pytest.mark.parametrize("breaks", ["\r\n", "\r\r\n", "\r\n\r\n"])
def test_a_line_break_inside_a_quoted_value_split_by_a_read_block_is_read_whole(tmp_path, codec, breaks):
    """pyarrow drops a '\\n' that starts a read block after a block that ended with '\\r', quoted or not
    (apache/arrow#51368, open in pyarrow 26): a value with a CRLF (a web form's, Excel's) that a block boundary
    splits came back with its '\\n' gone, silently, in text and kept columns alike. Every split is tried, at the
    default block size, and a CRLF between records split the same way must not cost a row either."""
    head = 'id,note,text\n1,"'
    for at in range(1, len(breaks) + 1):  # the block ends after the first `at` characters of the break
        pad = "x" * (readers.BLOCK_BYTES - len(head) - at)
        note = f"{pad}{breaks}after"
        body = f'{head}{note}",one\r\n2,"plain",two\r\n'
        src = tmp_path / f"crlf{at}.csv{codec}"
        src.write_bytes(gzip.compress(body.encode()) if codec else body.encode())
        table, _ = read(src, ["id", "note", "text"])
        got = table.column("note").to_pylist()
        assert [got[0][:len(pad)] == pad, got[0][len(pad):], got[1:]] == [True, f"{breaks}after", ["plain"]], at
        assert table.column("id").to_pylist() == ["1", "2"]
    # a record's own CRLF split by the block boundary: no row lost, none added
    first = "y" * (readers.BLOCK_BYTES - len("id,note,text\r\n1,,") - 1)
    src = tmp_path / f"sep.csv{codec}"
    body = f"id,note,text\r\n1,,{first}\r\n2,b,c\r\n"
    src.write_bytes(gzip.compress(body.encode()) if codec else body.encode())
    assert body.encode()[readers.BLOCK_BYTES - 1:readers.BLOCK_BYTES + 1] == b"\r\n"
    table, _ = read(src, ["id", "note", "text"])
    got = table.column("text").to_pylist()
    assert [len(got), got[0] == first, got[1:]] == [2, True, ["c"]]


@pytest.mark.parametrize("sizes", [(1,), (2,), (3,), (7,), (-1,), (10, 1, 3, 1, 2)])
def test_the_csv_file_wrapper_gives_every_byte_once_and_more_than_asked_only_to_a_record_end(tmp_path, sizes):
    """The wrapper pyarrow reads through holds a piece's trailing '\\r' back for the next piece (arrow#51368): the
    pieces still join to the file, none is longer than the read asked for unless no record could end in what was
    asked (no line end, or inside a quoted value, no quote: then read on), and no CRLF is split between two."""
    data = b'a,b\r\n1,"x\r\ny"\r\n2,"p\r\r\nq"\r\n\r3,z\r'
    src = tmp_path / "cr.csv"
    src.write_bytes(data)
    inside, record_ends = False, set()  # the line ends outside quotes (a doubled quote toggles twice)
    for at, byte in enumerate(data):
        inside = inside != (byte == ord('"'))
        if byte in b"\r\n" and not inside:
            record_ends.add(at)
    f = readers._CountingFile(src, ",")
    pieces, given = [], 0
    for i in range(len(data) + 2):
        n = sizes[i % len(sizes)]
        piece = f.read(n)
        if not piece:
            break
        # longer than asked: read on past what held no record's end
        assert n < 0 or len(piece) <= n or not record_ends & set(range(given, given + len(piece) - n)), (n, piece)
        pieces.append(piece)
        given += len(piece)
    assert b"".join(pieces) == data and f.eof and f.read(0) == b""
    if 1 not in sizes:  # what pyarrow trips on: a piece ending in '\r' before one starting with '\n' (one-byte reads must)
        assert not any(a.endswith(b"\r") and b.startswith(b"\n") for a, b in zip(pieces, pieces[1:])), pieces


def test_a_glob_reads_a_file_that_any_of_its_names_lets_the_pattern_match(tmp_path):
    """A folder reached by two names (a link beside it) was read under the first name in sorted order only, and a
    ``**`` pattern was matched against that name alone: a folder reached first through a hidden link (``.x -> sub``)
    was skipped by ``**`` (which passes no hidden name), and a pattern naming the second name (``**/b/*.parquet``
    with ``b -> a``) matched nothing there; the files were left out of the job, silently. A file is read when any
    of its names matches, once (glob.glob's answer, each file once)."""
    import glob
    import os

    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    for f in (folder / "sub" / "s.parquet", folder / "a" / "f.parquet", folder / ".only" / "h.parquet"):
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [f.stem], "text": ["x"]}), f)
    os.symlink("sub", folder / ".x")  # sorts before sub: the folder was read as .x only
    os.symlink("a", folder / "b")  # the folder is a first: a pattern naming b missed it
    for loop in (False, True):
        if loop:  # a link back to the top: the same answers, and the walk ends (glob.glob's would not, here)
            os.symlink("..", folder / "a" / "up")
        for pattern, want in (("**/*.parquet", ["a/f.parquet", "sub/s.parquet"]), ("**/b/*.parquet", ["a/f.parquet"]),
                              ("**/.x/*.parquet", ["sub/s.parquet"]), ("**/sub/**", ["sub/s.parquet"]),
                              ("*/*.parquet", ["a/f.parquet", "sub/s.parquet"]),
                              ("**/.*/*.parquet", [".only/h.parquet", "sub/s.parquet"]),
                              ("b/**/*.parquet", ["a/f.parquet", "sub/s.parquet"] if loop else ["a/f.parquet"])):
            _, files = resolve_input(str(folder / pattern))
            got = sorted(os.path.realpath(f)[len(str(folder.resolve())) + 1:] for f in files)
            assert got == want, pattern
            assert len(files) == len({os.path.realpath(f) for f in files}), pattern
            if not loop:  # as glob.glob reads it, each file once
                said = {os.path.realpath(f)[len(str(folder.resolve())) + 1:]
                        for f in glob.glob(str(folder / pattern), recursive=True) if os.path.isfile(f)}
                assert sorted(said) == want, pattern


def test_a_file_a_double_star_glob_reaches_by_two_names_is_read_under_the_first_in_sorted_order(tmp_path):
    """docs/cli.md: a file that a folder or glob reaches by two names "is read once, under the first name in sorted
    order". A ``**`` walk kept the name it met first, walking the last folder name first: with ``x -> real`` beside
    ``w``, ``d/**/*.parquet`` read ``x/f.parquet`` after ``w/g.parquet`` where the folder ``d`` and ``d/*/*.parquet``
    read ``real/f.parquet`` before it: the same files in another order (the output's rows follow the files' order)
    and under another name in the manifest; a ``..`` after ``**`` alike (``a/b/../a.parquet`` for
    ``a/../a/a.parquet``)."""
    import glob
    import os

    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    for f in (folder / "real" / "f.parquet", folder / "w" / "g.parquet", folder / "real" / "b" / "h.parquet"):
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"text": [f.stem]}), f)
    os.symlink("real", folder / "x")

    def names(pattern):
        return [f.relative_to(folder).as_posix() for f in resolve_input(str(folder / pattern))[1]]

    want = ["real/b/h.parquet", "real/f.parquet", "w/g.parquet"]
    assert names(".") == want
    assert names("**/*.parquet") == want
    assert names("*/*.parquet") == ["real/f.parquet", "w/g.parquet"] == names("**/*.parquet")[1:]
    for pattern in ("**/b/../*.parquet", "*/**/../*/*.parquet", "**/*/*.parquet"):  # as glob.glob names them
        said = {}
        for f in sorted(glob.glob(str(folder / pattern), recursive=True)):
            said.setdefault(os.path.realpath(f), Path(f).relative_to(folder).as_posix())
        assert names(pattern) == sorted(said.values()), pattern
    assert names("**/b/../*.parquet") == ["real/b/../f.parquet"]


def test_a_folder_input_leaves_out_the_names_a_datasets_readers_hide(tmp_path):
    """(found by a many files that differ hunt, 2026-11-26, session 8) a folder input read every parquet file under
    it, also those pyarrow.dataset, pandas.read_parquet, Spark and Dask leave out (a name starting with '_' or '.'):
    the copies a failed Spark attempt left under _temporary/ and a tool's hidden temporary file came out as rows of
    the input, twice over, silently. A glob's wildcard matches such a name only where its pattern part starts
    with the same character, as a glob's '*' already never matched a dot."""
    from bertfeat.readers import resolve_input

    folder = tmp_path / "d"
    kept = {"part-0.parquet": [1, 2], "year=2024/part-1.parquet": [3]}
    hidden = {"_temporary/0/_temporary/attempt_1/part-0.parquet": [1, 2], ".part-1.parquet": [3],
              "_x.parquet": [9], "sub/_tmp/part-2.parquet": [4], ".spark-staging-1/part-3.parquet": [5]}
    for name, ids in {**kept, **hidden}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": ids, "text": [f"t{i}" for i in ids]}), folder / name)
    for name in ("_SUCCESS", "_metadata", "_common_metadata", ".part-0.parquet.crc"):
        (folder / name).write_bytes(b"")
    import pyarrow.dataset as ds

    table, _ = read(folder, ["id", "text"])
    assert table.column("id").to_pylist() == [1, 2, 3]
    assert sorted(ds.dataset(folder, format="parquet").to_table(columns=["id"]).column("id").to_pylist()) == [1, 2, 3]
    for pattern in ("**/*.parquet", "*/*.parquet", "*.parquet"):
        _, files = resolve_input(str(folder / pattern))
        assert not any(p.startswith(("_", ".")) for f in files for p in f.relative_to(folder).parts), pattern
    # named where asked for: a literal name, or a pattern part starting with '_'
    _, files = resolve_input(str(folder / "_*.parquet"))
    assert files == [folder / "_x.parquet"]
    _, files = resolve_input(str(folder / "_temporary" / "*" / "_temporary" / "*" / "*.parquet"))
    assert files == [folder / "_temporary/0/_temporary/attempt_1/part-0.parquet"]
    # a folder holding only hidden parquet files says so, and what to do
    only = tmp_path / "only"
    (only / "_temporary").mkdir(parents=True)
    pq.write_table(pa.table({"text": ["a"]}), only / "_temporary" / "p.parquet")
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(str(only))
    assert str(info.value) == (
        f"input directory '{only}' holds no parquet files (.parquet, .pq, .parq) but hidden ones "
        "['_temporary/p.parquet']: names starting with '.' or '_' (Spark's _temporary, a tool's temporary files) are "
        "left out of a folder, as pyarrow, pandas and Spark leave them out; rename them, or name them in a glob, "
        "where a pattern part starting with '.' or '_' matches them (_*.parquet).")


def test_a_file_matches_a_glob_only_by_its_last_part_or_a_trailing_double_star(tmp_path):
    """(found by a review hunt, 2026-11-26, session 8) ``exports/*/**`` (every file of every subfolder, as bash's
    globstar and Python's glob read it) also read the files beside the subfolders, ``exports/all.parquet`` (the
    years joined, an old export), so its rows came into the job twice over, silently: the walk let a file be taken
    by ``*`` and the ``**`` after it match nothing, where glob matches a part that is not the last with folders
    only. Checked against glob.glob(recursive=True), which reads each such file once here."""
    import glob
    import os

    from bertfeat.readers import resolve_input

    d = tmp_path / "exports"
    for f in (d / "all.parquet", d / "2024" / "a.parquet", d / "2024" / "q" / "b.parquet", d / "2025" / "c.parquet"):
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [f.stem], "text": ["x"]}), f)
    for pattern in ("*/**", "*/**/**", "**/*/**", "2024/**", "**", "*/**/*.parquet", "**/*.parquet", "*/*/**"):
        _, files = resolve_input(str(d / pattern))
        got = sorted(f.relative_to(d).as_posix() for f in files)
        said = sorted({Path(f).relative_to(d).as_posix() for f in glob.glob(str(d / pattern), recursive=True)
                       if os.path.isfile(f)})
        assert got == said, pattern
    assert "all.parquet" not in [f.name for f in resolve_input(str(d / "*/**"))[1]]


_TREE_NAMES = st.sampled_from(["a", "b", "Hq", "x.parquet", "y.pq", "Hz.parquet", "c.csv"])
_PATTERN_PARTS = st.sampled_from(["*", "**", "a", "b", "Hq", "H*", "*.parquet", "[ab]", "?", "x.parquet", "*z*",
                                  "Hz.parquet", "*.pq", "[H]q", "?q"])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=st.lists(st.tuples(st.lists(_TREE_NAMES, min_size=1, max_size=3), st.booleans()), max_size=8),
       pattern=st.lists(_PATTERN_PARTS, min_size=1, max_size=4), hide=st.sampled_from([".", "_"]))
@example(tree=[(["x.parquet"], False), (["a", "y.pq"], False)], pattern=["*", "**"], hide=".")  # no file by '*'
@example(tree=[(["Hq", "x.parquet"], False), (["a", "Hz.parquet"], False)], pattern=["**", "*.parquet"], hide="_")
@example(tree=[(["Hq", "x.parquet"], False), (["b", "Hz.parquet"], False)], pattern=["H*", "*"], hide="_")
@example(tree=[(["a", "Hq", "x.parquet"], False)], pattern=["a", "Hq", "*.parquet"], hide="_")  # named literally
@example(tree=[(["a", "x.parquet", "y.pq"], False), (["a", "x.parquet", "Hz.parquet"], False)],
         pattern=["*", "*.parquet"], hide="_")  # a folder matched: its visible parquet files
def test_a_glob_matches_what_python_glob_matches_with_names_starting_with_underscore_hidden_as_dotted_ones(
        tree, pattern, hide):
    """(review hunt, 2026-11-26, session 8) the merged glob walk (_step/_skips/_file_ends) against
    glob.glob(recursive=True) on random trees and patterns (** at the start, middle and end, classes, hidden names
    named literally or by a pattern part starting with the same character, folders matched). '_' names are hidden
    as glob hides dotted ones: the reference is glob.glob over the same tree with a leading '_' written as '.'; a
    folder matched counts as its visible parquet files."""
    import glob
    import os
    import shutil
    import tempfile

    from bertfeat.sources import PARQUET_SUFFIXES, _glob, parquet_under

    def dotted(part):  # the reference tree: a leading '_' as glob's hidden '.'
        return "." + part[1:] if hide == "_" and part.startswith("_") else part

    base = Path(tempfile.mkdtemp())
    try:
        for side, rename in (("ours", str), ("ref", dotted)):
            for parts, is_dir in tree:
                p = base.joinpath(side, *(rename(n.replace("H", hide)) for n in parts))
                try:
                    if is_dir:
                        p.mkdir(parents=True, exist_ok=True)
                    elif not p.exists():
                        p.parent.mkdir(parents=True, exist_ok=True)
                        p.write_text("x")
                except (FileExistsError, NotADirectoryError):  # a name taken by a file and by a folder
                    pass
            (base / side).mkdir(exist_ok=True)
        ours = [n.replace("H", hide) for n in pattern]
        files, folders = _glob(str(base.joinpath("ours", *ours)))
        got = {f.relative_to(base / "ours").as_posix() for f in files + [g for d in folders for g in parquet_under(d)]}
        want = set()
        for f in glob.glob(str(base.joinpath("ref", *map(dotted, ours))), recursive=True):
            if os.path.isfile(f):
                want.add(f)
            elif os.path.isdir(f):
                for root, dirs, names in os.walk(f):
                    dirs[:] = [n for n in dirs if not n.startswith((".", "_"))]
                    want |= {os.path.join(root, n) for n in names
                             if not n.startswith((".", "_")) and n.endswith(PARQUET_SUFFIXES)}
        undo = (lambda part: "_" + part[1:] if part.startswith(".") else part) if hide == "_" else str
        want = {"/".join(map(undo, Path(f).relative_to(base / "ref").parts)) for f in want}
        assert got == want
    finally:
        shutil.rmtree(base)


def test_input_found_is_resolve_inputs_rule_for_what_an_input_names(tmp_path, monkeypatch):
    # R's pre-check of bf_embed_file()'s input (bertfeat._r.input_found) called the private sources._glob; the rule
    # now lives beside resolve_input as sources.input_found, and says found exactly where resolve_input finds files
    from bertfeat import _r, sources

    assert _r.input_found is sources.input_found
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "_hidden").mkdir()
    pd.DataFrame({"t": ["x"]}).to_parquet(tmp_path / "a" / "b" / "x.parquet")
    pd.DataFrame({"t": ["y"]}).to_parquet(tmp_path / "_hidden" / "y.parquet")
    monkeypatch.chdir(tmp_path)
    for path in ("**/*.parquet", "a/**/x.parquet", "*/*/x.parquet", "a", "*/y.parquet", "*.parquet", "nope*/x.parquet",
                 "a/b/x.parquet", "a/b/z.parquet"):
        try:
            sources.resolve_input(path)
            read = True
        except FileNotFoundError:
            read = False
        assert sources.input_found(path) is read, path
    assert sources.input_found("s3://bucket/data/*.parquet")  # the command's to refuse, saying how to reach it


def test_a_dot_dot_after_a_double_star_goes_up_as_glob_goes_and_braces_are_said_to_be_no_glob(tmp_path):
    """``data/**/../b/*.parquet`` (``..`` after ``**``) "matched no files", though Python's glob matches it and
    ``data/*/../b/*.parquet`` was read; each file is read once whatever names reach it. ``data/{a,b}/*.parquet``
    (bash's braces, which Python's glob does not expand) "matched no files" without a word of why."""
    import glob
    import os

    from bertfeat.sources import resolve_input

    d = tmp_path / "data"
    for sub in ("a", "b", "a/deep"):
        (d / sub).mkdir(parents=True)
    for name in ("a/1.parquet", "b/2.parquet", "b/3.parquet", "a/deep/4.parquet"):
        pd.DataFrame({"t": [name]}).to_parquet(d / name)
    for pattern, want in [
        ("**/../b/*.parquet", ["b/2.parquet", "b/3.parquet"]),
        ("*/../b/*.parquet", ["b/2.parquet", "b/3.parquet"]),
        ("a/**/../*.parquet", ["a/1.parquet"]),  # a/deep/.. is a; a/.. is data, which holds no parquet file
        ("**/deep/../../b/2.parquet", ["b/2.parquet"]),
        ("**/..", ["a/1.parquet", "a/deep/4.parquet", "b/2.parquet", "b/3.parquet"]),  # folders, read as folders
    ]:
        kind, files = resolve_input(f"{d}/{pattern}")
        assert kind == "parquet"
        assert sorted(f.resolve().relative_to(d).as_posix() for f in files) == want, pattern
        matched = {os.path.realpath(f) for f in glob.glob(f"{d}/{pattern}", recursive=True)}
        if pattern != "**/..":  # (glob gives the folders themselves)
            assert matched == {str(d / w) for w in want}, pattern
    with pytest.raises(FileNotFoundError) as info:
        resolve_input(f"{d}/{{a,b}}/*.parquet")
    assert str(info.value) == (
        f"input '{d}/{{a,b}}/*.parquet' matches no files; braces ({{a,b}}) are not glob syntax here (a shell expands "
        "them in an unquoted word; bertfeat, like Python's glob, reads them as written): pass a pattern that matches "
        "both (a folder's name by '*' or '[ab]'), or their folder.")


@pytest.mark.parametrize("content, columns, line", [
    (b"id,text\n1,a\n2,b\n" + b"\0" * 4096, ["id", "text"], 4),  # the zeros a cut download leaves at the end
    (b"text\n1\n2\n" + b"\0" * 4096, ["text"], 4),  # one column: it read as a blank text
    (b"id,text\n1,a\n2,b and c" + b"\0" * 100 + b"\n3,d\n", ["id", "text"], 3),  # the last line read whole, and
    (b"id,text\r\n1,a\r\n" + b"\0" * 4096 + b"2,b\r\n", ["id", "text"], 3),  # zeros glued onto the next row's id
])
def test_a_run_of_nul_bytes_is_refused_as_a_file_not_written_whole(tmp_path, content, columns, line):
    """(found by a files hunt, 2026-11-27, session 11) a download preallocated at full size and cut short (aria2's
    default, a torrent client), or a file a crash left zero-filled, ends in a run of NUL bytes: read as a row of NULs
    ("Expected 2 columns, got 1: " and 100 NUL bytes on the terminal), as a blank text (one column), or glued onto
    the next row's id, which was embedded with it without a word."""
    for name, data in (("cut.csv", content), ("cut.csv.gz", gzip.compress(content))):
        src = tmp_path / name
        src.write_bytes(data)
        with pytest.raises(ValueError) as info:
            read(src, columns)
        assert str(info.value) == (
            f"{src} holds a run of NUL bytes (0x00) from line {line}: it was not written whole (a download cut "
            "short where the whole file's room was taken first, or a write cut by a crash, leaves zeros); fetch or "
            "write it again."), name


def test_a_run_of_nul_bytes_past_the_first_read_block_is_refused_before_its_rows_are_delivered_and_short_runs_read(
        tmp_path):
    src = tmp_path / "late.csv"
    rows = b"".join(b"%d,row %d\n" % (i, i) for i in range(400_000))  # about 7 MB
    src.write_bytes(b"id,text\n" + rows + b"\0" * 70 + b"\n")
    delivered = []
    with pytest.raises(ValueError, match=r"late\.csv holds a run of NUL bytes \(0x00\) from line 400002: "):
        # refused where pyarrow's read-ahead meets it: at the start (the reader opened to find the types) or later
        for batch in InputReader(str(src), ["id", "text"], 10_000, ["text"], infer_types=False).batches():
            delivered.append(batch.num_rows)
            assert not any("\0" in (t or "") for t in batch.column("id").to_pylist()), "zeros delivered as a row"
    assert sum(delivered) < 400_000
    # NUL bytes here and there are characters of a text, read as written (a run of 63 too)
    src.write_bytes(b"id,text\n1,a\0b\n2,c" + b"\0" * 63 + b"d\n")
    assert read(src, ["id", "text"])[0].column("text").to_pylist() == ["a\0b", "c" + "\0" * 63 + "d"]


def test_same_files_tells_paths_apart_by_name_and_by_the_file_each_is_and_two_missing_files_are_not_one(tmp_path):
    """sources.SameFiles, file_id and file_key by value (whole inputs and outputs: the case-insensitive and
    no-file-id tests above): two names of one file are one, two files are two, and a path that names no file (an
    output not yet written, a name holding a NUL) is no other path's file, not even another missing one's."""
    import os
    from types import SimpleNamespace

    from bertfeat.sources import SameFiles, file_id, file_key

    a, b, link = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "link.parquet"
    a.write_bytes(b"x")
    b.write_bytes(b"x")
    link.symlink_to(a)
    st = os.stat(a)
    assert file_id(st) == (st.st_dev, st.st_ino) and file_key(a) == file_key(link) == (st.st_dev, st.st_ino)
    assert file_id(SimpleNamespace(st_dev=7, st_ino=0)) is None  # no file ids: every file would be one
    same = SameFiles()
    assert same(a, a) and same(link, a) and same(a, link)
    assert not same(a, b)
    missing, other = tmp_path / "out.parquet", tmp_path / "out.parquet.partial"
    assert same(missing, missing)  # by name
    assert not same(missing, other) and not same(other, missing)
    assert not same(a, missing) and not same(missing, a)
    assert not same(Path(str(tmp_path / "nul\0.parquet")), Path(str(tmp_path / "nul\0x.parquet")))
    (tmp_path / "d").mkdir()
    (tmp_path / "e").symlink_to(tmp_path / "d")
    assert same.within(tmp_path / "d" / "sub" / "f.parquet", tmp_path / "e")  # at any depth, by the folder it is
    assert not same.within(a, tmp_path / "d") and not same.within(tmp_path / "d", tmp_path / "d")


def test_file_key_is_the_real_path_where_the_file_system_gives_no_file_ids(no_file_ids):
    from bertfeat.sources import file_key

    a, link = no_file_ids / "a.parquet", no_file_ids / "link.parquet"
    a.write_bytes(b"x")
    link.symlink_to(a)
    (no_file_ids / "b.parquet").write_bytes(b"x")
    assert file_key(link) == file_key(a) != file_key(no_file_ids / "b.parquet")
    assert str(a) in file_key(a)


def test_an_input_folder_holding_another_jobs_output_or_parts_is_refused_saying_what_they_are(tiny_bert, tmp_path):
    """Two jobs on one input folder (another model, another pooling), the first's out= in the folder: the second was
    refused "column(s) 'text' not found in d; it has columns 'id', 'text_cls_00', ..." (the first job's features,
    named first), or "has columns [...], unlike ...", nothing said of why or what to do; and so while the first job
    ran, its parts in the folder."""
    import shutil

    from bertfeat.files import embed_file

    folder = tmp_path / "d"
    folder.mkdir()
    for name, texts in (("a.parquet", ["a cat", "a dog"]), ("b.parquet", ["a fish"])):
        pq.write_table(pa.table({"id": [name] * len(texts), "text": texts}), folder / name)
    embed_file(str(folder), str(folder / "features.parquet"), "text", keep_cols="id", model=tiny_bert, quiet=True)
    for named in (str(folder), str(folder / "*.parquet")):
        with pytest.raises(ValueError) as info:
            InputReader(named, ["id", "text"], 10, ["text"])
        assert str(info.value) == (
            f"input {named!r} holds {str(folder / 'features.parquet')!r}, the features a bertfeat job wrote there (its "
            "out=), beside the files to embed; it is no input, and its columns are another job's. Write each job's "
            "out= outside its input folder, and move what is there out of it; or name the input files alone with a "
            "glob.")
    # the first job still running: its parts
    (folder / "large.parquet.partial").mkdir()
    shutil.move(folder / "features.parquet", folder / "large.parquet.partial" / "part-000000.parquet")
    shutil.copy(folder / "large.parquet.partial" / "part-000000.parquet",
                folder / "large.parquet.partial" / "part-000001.parquet")
    with pytest.raises(ValueError) as info:
        InputReader(str(folder), ["id", "text"], 10, ["text"])
    part = folder / "large.parquet.partial" / "part-000000.parquet"
    assert str(info.value) == (
        f"input {str(folder)!r} holds {str(part)!r} (and 1 more such file), a part of the unfinished bertfeat job "
        f"writing {str(folder / 'large.parquet')!r} (its .partial folder), whose output will land there too, beside "
        "the files to embed; it is no input, and its columns are another job's. Write each job's out= outside its "
        "input folder, and move what is there out of it; or name the input files alone with a glob.")
    # read as any other: the input files alone, and an input of outputs only
    assert InputReader(str(folder / "?.parquet"), ["id", "text"], 10, ["text"]).total_rows == 3
    assert InputReader(str(folder / "large.parquet.partial"), ["id"], 10, []).total_rows == 6
    # a cache_dir in the input folder: the job's own is left out (the same command run again was refused "column(s)
    # 'id', 'text' not found in d; it has columns 'key', 'n_tokens', 'vector'"), another job's refused, saying so
    shutil.rmtree(folder / "large.parquet.partial")
    first = embed_file(str(folder), str(tmp_path / "f.parquet"), "text", keep_cols="id", model=tiny_bert, quiet=True,
                       cache_dir=str(folder / "cache"))
    again = embed_file(str(folder), str(tmp_path / "f.parquet"), "text", keep_cols="id", model=tiny_bert, quiet=True,
                       cache_dir=str(folder / "cache"), overwrite=True)
    assert (first["counts"]["rows"], again["counts"]["rows"], again["counts"]["cache_hits"]) == (3, 3, 3)
    with pytest.raises(ValueError) as info:
        embed_file(str(folder), str(tmp_path / "g.parquet"), "text", keep_cols="id", model=tiny_bert, quiet=True)
    shard = next((folder / "cache").glob("*/shard-*.parquet"))
    assert str(info.value) == (
        f"input {str(folder)!r} holds {str(shard)!r}, a shard of the bertfeat cache {str(folder / 'cache')!r} (a "
        "cache_dir= in the input folder), beside the files to embed; it is no input, and its columns are another "
        "job's. Put each job's cache_dir= outside its input folder, and move what is there out of it; or name the "
        "input files alone with a glob.")
