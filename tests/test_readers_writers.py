"""bertfeat.readers against the CSV writers users use, each an oracle: pandas' to_csv in each quoting mode and line
terminator, pyarrow.csv.write_csv, polars' write_csv, an Excel-style export (BOM, ``sep=;``, CRLF, decimal commas).
Every table they write reads back as written: missing only where the writer wrote a null, or an NA marker unquoted.
R's writers are in test_exports.py and r-bridge's tests. No model."""

import csv
import io
import re

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

from bertfeat.readers import CSV_NULLS, InputReader

# texts no writer is kind to: its delimiters, quotes, line breaks of each kind (a lone CR, which pandas writes
# unquoted), tabs, backslashes (a database export's escapes too), NA markers, spaces, a BOM, formulas; then a null
TEXTS = ["plain", "a,b", "a;b", 'say "hi"', '"q"', "two\nlines", "crlf\r\nin", "lone\rcr", "ends\r", "tab\there",
         "back\\slash", "C:\\", "one\\ntwo", "\\N", "NA", "null", "", " sp ", "\ufeffbom", "caf\u00e9 \u4e2d",
         'x\\"y', "=1+2", "it's", None]


def written(null_quoted: bool, markers_quoted: bool, empty_quoted: bool | None = None) -> list:
    """The texts as a writer's file holds them: a null as an empty text where the writer quotes it (``""``), an NA
    marker or an empty text as missing where the writer leaves it unquoted (``empty_quoted``: the empty text apart)."""
    def one(text):
        if text is None:
            return "" if null_quoted else None
        if text == "" and empty_quoted is not None:
            return "" if empty_quoted else None
        return None if text in CSV_NULLS and not markers_quoted else text
    return [one(t) for t in TEXTS]


def read_back(path, **kw) -> list:
    # the text column in the middle: a CR ending a row's last value reads as its CRLF (docs/cli.md), none here
    reader = InputReader(str(path), ["id", "text", "n"], 7, ["text"], infer_types=False, **kw)
    table = pa.Table.from_batches(list(reader.batches()), schema=reader.schema)
    assert table.column("id").to_pylist() == [str(i) for i in range(len(TEXTS))]
    assert table.column("n").to_pylist() == ["1,5"] * len(TEXTS)  # a decimal comma, kept as written
    return table.column("text").to_pylist()


FRAME = pd.DataFrame({"id": [str(i) for i in range(len(TEXTS))], "text": TEXTS, "n": "1,5"})


@pytest.mark.parametrize("sep", [",", "\t", ";"])
@pytest.mark.parametrize("lineterminator", ["\n", "\r\n"])
@pytest.mark.parametrize("quoting", [csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC])
def test_what_pandas_to_csv_writes_reads_back_as_written(tmp_path, sep, lineterminator, quoting):
    src = tmp_path / ("pandas.tsv" if sep == "\t" else "pandas.csv")
    FRAME.to_csv(src, index=False, sep=sep, lineterminator=lineterminator, quoting=quoting)
    quotes = quoting != csv.QUOTE_MINIMAL
    assert read_back(src, delimiter=";" if sep == ";" else None) == written(quotes, quotes)


@pytest.mark.parametrize("lineterminator", ["\n", "\r\n"])
def test_what_pandas_writes_with_an_escapechar_and_no_quotes_reads_back_under_quoting_backslash(tmp_path,
                                                                                               lineterminator):
    """to_csv(sep='\\t', quoting=csv.QUOTE_NONE, escapechar='\\\\'), as MySQL's INTO OUTFILE writes: a backslash
    before the delimiter, a line break, a quote or a backslash (a text's CR too where the line terminator holds one)."""
    src = tmp_path / "pandas.tsv"
    FRAME.to_csv(src, index=False, sep="\t", lineterminator=lineterminator, quoting=csv.QUOTE_NONE, escapechar="\\")
    # the text \N is written \\N, escaped: a text, where an unescaped \N is the export's null; NA and null are texts
    # there (session 17: no such export writes its NULL so), an empty field missing as a null is
    assert read_back(src, quoting="backslash") == [None if t == "" else t for t in TEXTS]


@pytest.mark.parametrize("sep", [",", "\t", ";"])
@pytest.mark.parametrize("lineterminator", ["\n", "\r\n"])
@pytest.mark.parametrize("quoting", [csv.QUOTE_MINIMAL, csv.QUOTE_ALL])
def test_what_pandas_writes_with_an_escapechar_and_quotes_reads_back_under_quoting_csv_backslash(
        tmp_path, sep, lineterminator, quoting):
    """(found by a CSV dialects hunt, 2026-11-27, session 15) to_csv(escapechar='\\\\', doublequote=False), as Python's
    csv module writes with an escapechar: a quote and a backslash escaped, a value quoted where it holds the
    delimiter or a line break (the quote escaped inside it too). No quoting read it: as CSV a text kept its escaping
    backslashes (C:\\\\ embedded as two), or was refused; quoting='csv-backslash' reads it as written."""
    src = tmp_path / ("pandas.tsv" if sep == "\t" else "pandas.csv")
    FRAME.to_csv(src, index=False, sep=sep, lineterminator=lineterminator, quoting=quoting, escapechar="\\",
                 doublequote=False)
    quotes = quoting != csv.QUOTE_MINIMAL
    got = read_back(src, quoting="csv-backslash", delimiter=";" if sep == ";" else None)
    # the text \N is written \\N, escaped: a text, where an unescaped \N would be missing
    assert got == [t if t == "\\N" else w for t, w in zip(TEXTS, written(quotes, quotes))]


def mysql_outfile(texts: list, lines: bytes = b"\n", enclosed: bool = True) -> bytes:
    """A header and rows (an id, a text, n) as MySQL's SELECT ... INTO OUTFILE ... FIELDS TERMINATED BY ','
    [OPTIONALLY] ENCLOSED BY '"' LINES TERMINATED BY ``lines`` writes them with its default ESCAPED BY '\\\\' (the
    byte format of its manual's SELECT ... INTO section, as select_export::send_data writes it): a value enclosed
    (``enclosed``; OPTIONALLY ENCLOSED leaves the id and n bare), its backslash, quote and the line terminator's
    first byte written after a backslash, a NUL as \\0, no other character escaped (the comma, a CR where lines end
    with LF); NULL as \\N, not enclosed. The header is the user's (a UNION's first row), enclosed alike."""
    def value(v, quoted=True):
        if v is None:
            return b"\\N"
        out = bytearray()
        for byte in v.encode():
            if byte == 0:
                out += b"\\0"
            elif byte in (ord("\\"), ord('"'), lines[0]):
                out += b"\\" + bytes([byte])
            else:
                out.append(byte)
        return b'"' + bytes(out) + b'"' if quoted else bytes(out)

    rows = [("id", "text", "n")] + [(str(i), t, "1,5") for i, t in enumerate(texts)]
    return b"".join(b",".join([value(i, enclosed), value(t), value(n)]) + lines for i, t, n in rows)


@pytest.mark.parametrize("lines", [b"\n", b"\r\n"])
@pytest.mark.parametrize("enclosed", [True, False])
def test_what_mysql_into_outfile_enclosed_by_a_quote_writes_reads_back_under_quoting_csv_backslash(
        tmp_path, monkeypatch, lines, enclosed):
    """(found by a CSV dialects hunt, 2026-11-27, session 15) MySQL's INTO OUTFILE ... ENCLOSED BY '"' escapes a
    backslash as \\\\ inside a quoted value: a file of it holding no \\" was read as CSV with each backslash doubled
    (C:\\\\dir embedded as written), silently, its NUL as \\0 and a line break as a backslash and the break. Read
    under quoting='csv-backslash' as MySQL's LOAD DATA reads it back: every text as the table held it, \\N missing,
    the text \\N a text; in 1 KB read blocks, so escapes and quotes fall across them."""
    from bertfeat import readers

    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 10)
    texts = [*TEXTS[:-1], "nul\0byte", "ends\\", '\\"', "x" * 1500 + '"\\', None]
    src = tmp_path / "outfile.csv"
    src.write_bytes(mysql_outfile(texts, lines, enclosed))
    reader = InputReader(str(src), ["id", "text", "n"], 7, ["text"], quoting="csv-backslash")
    table = pa.Table.from_batches(list(reader.batches()), schema=reader.schema)
    assert table.column("id").to_pylist() == [str(i) for i in range(len(texts))]
    assert table.column("n").to_pylist() == ["1,5"] * len(texts)
    assert table.column("text").to_pylist() == texts
    with pytest.raises(ValueError, match="pass quoting='csv-backslash'"):  # as CSV: refused at its \"
        list(InputReader(str(src), ["id", "text"], 7, ["text"]).batches())


@pytest.mark.parametrize("sep", [",", "\t"])
@pytest.mark.parametrize("quoting", [csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONE])
def test_what_pandas_and_mysql_write_with_lines_ending_in_a_lone_cr_reads_back_under_escapes(
        tmp_path, monkeypatch, sep, quoting):
    """(found by a CSV dialects hunt, continued, 2026-11-27, session 15) a file whose lines end with a lone CR, from
    pandas' to_csv(escapechar='\\\\', lineterminator='\\r') or MySQL's INTO OUTFILE ... LINES TERMINATED BY '\\r',
    which escape a text's CR (or quote it) and write its line feed as it is: under quoting='csv-backslash' and
    'backslash' every bare CR after that line feed was taken for a value's own, so the rows after it read as one
    (a file of one column gave ['two', 'lines\\ra "q" b'], two columns two rows where there were three), silently,
    or were refused with pyarrow's bare width message. A line feed is now a value's own there, as a lone one is in a
    file of CRLF lines, and each CR a line end; an escaped line feed (a backslash and LF) too, in 1 KB read blocks.
    A header's quoted name holding a LF there was refused ("Could not skip initial 2 rows"): it is left as written."""
    from bertfeat import readers

    three = ["one", "two\nlines", 'a "q" b']  # one column and two: read as ['two', 'lines\ra "q" b'] and 2 rows
    for frame in (pd.DataFrame({"text": three}), pd.DataFrame({"id": ["0", "1", "2"], "text": three})):
        short = tmp_path / "short.csv"
        frame.to_csv(short, index=False, lineterminator="\r", escapechar="\\", doublequote=False)
        short.write_bytes(short.read_bytes() + (b"3," if "id" in frame else b"") + b"esc\\\naped\r")  # \ and LF
        reader = InputReader(str(short), list(frame.columns), 7, ["text"], quoting="csv-backslash")
        table = pa.Table.from_batches(list(reader.batches()), schema=reader.schema)
        assert table.column("text").to_pylist() == [*three, "esc\naped"]
    short.write_bytes(b'"id","the\ntext"\r1,two\nlines\r')  # a header's quoted name holding a LF: pyarrow's to skip
    reader = InputReader(str(short), ["the\ntext"], 7, ["the\ntext"], quoting="csv-backslash")
    assert [t for b in reader.batches() for t in b.column("the\ntext").to_pylist()] == ["two\nlines"]
    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 10)
    src = tmp_path / ("pandas.tsv" if sep == "\t" else "pandas.csv")
    escaping = "backslash" if quoting == csv.QUOTE_NONE else "csv-backslash"
    frame = FRAME.assign(text=[t + "x" * 1500 if t == "plain" else t for t in TEXTS]) if sep == "," else FRAME
    frame.to_csv(src, index=False, sep=sep, lineterminator="\r", quoting=quoting, escapechar="\\", doublequote=False)
    assert b"two\nlines" in src.read_bytes()  # the line feed as written, unquoted (QUOTE_ALL: quoted)
    if quoting == csv.QUOTE_NONE and sep == ",":  # a comma escaped, where "1,5" is read back as written
        assert b"1\\,5" in src.read_bytes()
    # the text \\N is written \\\\N, escaped: a text, where an unescaped \\N would be missing
    quotes = quoting == csv.QUOTE_ALL
    want = [t if t in ("\\N", "plain" + "x" * 1500) else w
            for t, w in zip(frame.text.tolist(), written(quotes, quotes))]
    if escaping == "backslash":  # NA and null are texts there, as the frame held them (session 17)
        want = [t if isinstance(t, str) and t else None for t in frame.text.tolist()]
    assert read_back(src, quoting=escaping) == want
    mysql = tmp_path / "outfile.csv"
    mysql.write_bytes(mysql_outfile(TEXTS[:-1], b"\r", quoting != csv.QUOTE_MINIMAL))
    reader = InputReader(str(mysql), ["id", "text", "n"], 7, ["text"], quoting="csv-backslash")
    table = pa.Table.from_batches(list(reader.batches()), schema=reader.schema)
    assert table.column("text").to_pylist() == TEXTS[:-1]
    assert table.column("n").to_pylist() == ["1,5"] * (len(TEXTS) - 1)


@pytest.mark.parametrize("sep", [",", "\t"])
@pytest.mark.parametrize("style", ["needed", "all_valid"])
@pytest.mark.parametrize("eol", ["\n", "\r"])
def test_what_pyarrow_write_csv_writes_reads_back_as_written(tmp_path, sep, style, eol):
    src = tmp_path / ("pyarrow.tsv" if sep == "\t" else "pyarrow.csv")
    try:
        options = pcsv.WriteOptions(quoting_style=style, delimiter=sep, eol=eol)
    except TypeError:  # an older pyarrow than the installed one, without eol
        pytest.skip("this pyarrow's WriteOptions has no eol")
    pcsv.write_csv(pa.Table.from_pandas(FRAME, preserve_index=False), src, options)
    assert read_back(src) == written(False, True)  # pyarrow quotes every text that needs it: "NA" too


@pytest.mark.parametrize("sep", [",", "\t"])
@pytest.mark.parametrize("lineterminator", ["\n", "\r\n", "\r"])  # a lone CR: polars quotes a text's LF and CR
@pytest.mark.parametrize("style", ["necessary", "always", "non_numeric"])
def test_what_polars_write_csv_writes_reads_back_as_written(tmp_path, sep, lineterminator, style):
    pl = pytest.importorskip("polars")
    src = tmp_path / ("polars.tsv" if sep == "\t" else "polars.csv")
    pl.from_pandas(FRAME).write_csv(src, separator=sep, line_terminator=lineterminator, quote_style=style)
    # polars quotes an empty text ("") and leaves a null empty; "always" quotes the null too
    assert read_back(src) == written(style == "always", style != "necessary", empty_quoted=True)



@pytest.mark.parametrize("lineterminator", ["\n", "\r\n"])
def test_a_null_in_a_file_of_one_column_is_a_row_where_its_writer_wrote_a_blank_line(tmp_path, lineterminator):
    """(found by a CSV writers hunt, 2026-11-27, session 17) in a file of one column, polars' and pyarrow's
    write_csv and PostgreSQL's COPY ... (FORMAT csv) write a null as a blank line (COPY's text format an empty text
    too, psql -A both), and read it back so; the reader skipped blank lines, so each such row was dropped and every
    later text's features moved onto the row before, silently (5 rows read as 4, or 3 as in the table below), and
    psql's footer '(5 rows)' no longer matched the rows read, so it was embedded as a text. Now a blank line after
    the header of a file of one column is a row whose value is missing; a wider file's blank lines are skipped as
    before (no row of its width)."""
    pl = pytest.importorskip("polars")
    texts = ["a", None, "b", "", "c", None]
    src = tmp_path / "polars.csv"
    pl.DataFrame({"text": texts}).write_csv(src, line_terminator=lineterminator)
    assert src.read_bytes().count((lineterminator * 2).encode()) == 2  # its nulls, as blank lines
    want = texts  # each null a row, missing; the empty text quoted (blank: missing when embedded, as ever)
    assert InputReader(str(src), ["text"], 4, ["text"]).schema.names == ["text"]
    for path in (src, tmp_path / "pyarrow.csv"):
        if path.name == "pyarrow.csv":
            pcsv.write_csv(pa.table({"text": texts}), path)
        reader = InputReader(str(path), ["text"], 4, ["text"])
        assert [t for b in reader.batches() for t in b.column("text").to_pylist()] == want, path.name
    copy_csv = tmp_path / "copy.csv"  # \copy one TO 'copy.csv' WITH (FORMAT csv, HEADER), PostgreSQL 15
    copy_csv.write_text("txt\na\n\nb\n\"\"\nc\n")
    reader = InputReader(str(copy_csv), ["txt"], 4, ["txt"])
    assert [t for b in reader.batches() for t in b.column("txt").to_pylist()] == ["a", None, "b", "", "c"]
    copy_text = tmp_path / "copy.tsv"  # \copy one TO 'copy.tsv' WITH (HEADER): NULL as \N, the empty text blank
    copy_text.write_text("txt\na\n\\N\nb\n\nc\n")
    reader = InputReader(str(copy_text), ["txt"], 4, ["txt"], quoting="backslash")
    assert [t for b in reader.batches() for t in b.column("txt").to_pylist()] == ["a", None, "b", None, "c"]
    psql = tmp_path / "psql.csv"  # psql -A -c 'SELECT txt AS text FROM one': its footer counts the blank rows
    psql.write_text("text\na\n\nb\n\nc\n(5 rows)\n\n")  # (a blank line after it, as psql -A -c writes)
    with pytest.raises(ValueError, match=re.escape("holds psql's row count footer '(5 rows)' at line 7 (psql")):
        list(InputReader(str(psql), ["text"], 4, ["text"]).batches())
    wide = tmp_path / "wide.csv"  # a wider file: a blank line is no row, skipped as before
    wide.write_text("id,text\n1,a\n\n2,b\n\n")
    reader = InputReader(str(wide), ["id", "text"], 4, ["text"])
    assert [t for b in reader.batches() for t in b.column("id").to_pylist()] == ["1", "2"]

def test_a_file_of_one_column_whose_every_row_is_null_has_those_rows_not_none(tmp_path):
    """(found by a review of session 17's CSV work, 2026-11-27, session 17) the test above reads a blank line after the
    header of a file of one column as a row whose value is missing, but a file holding nothing else (polars' and
    pyarrow's write_csv of a column whose values are all null: 'text\\n\\n' for one) was refused 'has no rows to
    embed', where polars reads one row and the rule read 'text\\n\\na\\n' as two. Now such a file has its rows,
    each missing; a header alone (or a wider file's blank lines) still has none."""
    pl = pytest.importorskip("polars")
    for nulls in (1, 2, 3):
        for lineterminator in ("\n", "\r\n"):
            src = tmp_path / "nulls.csv"
            pl.DataFrame({"text": pl.Series([None] * nulls, dtype=pl.String)}).write_csv(
                src, line_terminator=lineterminator)
            assert pl.read_csv(src)["text"].to_list() == [None] * nulls
            reader = InputReader(str(src), ["text"], 2, ["text"])
            assert reader.has_rows
            assert [t for b in reader.batches() for t in b.column("text").to_pylist()] == [None] * nulls
    for quoting in ("csv", "backslash", "csv-backslash"):  # the same with lines that end with a lone CR
        src = tmp_path / "cr.csv"
        src.write_bytes(b"text\r\r")  # (escaped, its header's CR was held back from pyarrow's first piece)
        assert [t for b in InputReader(str(src), ["text"], 2, ["text"], quoting=quoting).batches()
                for t in b.column("text").to_pylist()] == [None], quoting
    for body in ("text\n", "text", "id,text\n\n\n"):  # no row: refused early, 'has no rows to embed'
        src = tmp_path / "none.csv"
        src.write_text(body)
        assert not InputReader(str(src), ["text"], 2, ["text"]).has_rows, body


def test_an_excel_style_export_reads_back_as_written(tmp_path):
    """Excel's "CSV UTF-8" where the list separator is ';' (a decimal comma locale): a BOM, a first line sep=;, CRLF
    line ends, every value holding ';', '"' or a line break quoted."""
    src = tmp_path / "excel.csv"
    body = io.StringIO()
    FRAME.to_csv(body, index=False, sep=";", lineterminator="\r\n")
    src.write_bytes(("\ufeffsep=;\r\n" + body.getvalue()).encode())
    assert read_back(src) == written(False, False)


def test_what_rs_write_csv_and_write_table_write_reads_back_as_written(tmp_path):
    """R's writers, run (skipped without R): write.csv() and write.csv2() quote every text and double a quote, and
    leave NA unquoted (missing; the text "NA" quoted, a text); write.table(quote = FALSE) as a TSV quotes nothing, so
    its texts hold no tab or line break here; write.table()'s default escapes a quote as \\" (refused, saying how to
    write it from R: tests/test_exports.py)."""
    import shutil
    import subprocess

    if shutil.which("Rscript") is None:
        pytest.skip("R is not installed")
    texts = ["plain", "a,b", "a;b", 'say "hi"', "two\nlines", "crlf\r\nin", "C:\\dir", "\\N", "NA", "", " sp ",
             "caf\u00e9", None]
    r_texts = ", ".join("NA" if t is None else '"' + t.replace("\\", "\\\\").replace('"', '\\"').replace(
        "\n", "\\n").replace("\r", "\\r") + '"' for t in texts)
    script = (f'df <- data.frame(id = as.character(seq_len({len(texts)})), text = c({r_texts}), n = "1,5", '
              'stringsAsFactors = FALSE); Encoding(df$text) <- "UTF-8"; '
              'write.csv(df, "r.csv", row.names = FALSE, fileEncoding = "UTF-8"); '
              'write.csv2(df, "r2.csv", row.names = FALSE, fileEncoding = "UTF-8"); '
              'plain <- df[!grepl("[\\t\\n\\r]", df$text) | is.na(df$text), ]; '
              'write.table(plain, "r.tsv", sep = "\\t", quote = FALSE, row.names = FALSE, fileEncoding = "UTF-8")')
    subprocess.run(["Rscript", "-e", script], cwd=tmp_path, check=True, capture_output=True, timeout=120)
    want = [None if t is None else t for t in texts]
    for name, delimiter in (("r.csv", None), ("r2.csv", ";")):
        reader = InputReader(str(tmp_path / name), ["id", "text", "n"], 5, ["text"], delimiter=delimiter)
        table = pa.Table.from_batches(list(reader.batches()), schema=reader.schema)
        assert table.column("text").to_pylist() == want, name
        assert table.column("n").to_pylist() == ["1,5"] * len(texts)
    reader = InputReader(str(tmp_path / "r.tsv"), ["id", "text"], 5, ["text"])
    got = pa.Table.from_batches(list(reader.batches()), schema=reader.schema).column("text").to_pylist()
    # unquoted: NA (R's missing) and the text "NA", an empty text and "\\N" alike are missing
    assert got == [None if t is None or t in CSV_NULLS else t for t in texts if t is None or not set(t) & set("\t\n\r")]
