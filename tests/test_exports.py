"""Text exports of databases and shells as `bertfeat embed` meets them: PostgreSQL's ``\\copy``/``COPY ... TO`` text
format and ``psql -A``, MySQL's ``INTO OUTFILE`` and ``mysql -B``, warehouse unloads. Each is read right or refused
naming what was seen and what to do; never embedded wrong (a ``\\N`` as a text, a ``(3 rows)`` footer as a row)."""

import io
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat import exports
from bertfeat.cli import main
from bertfeat.csv_problems import split_unquoted
from bertfeat.readers import InputReader


def read(path, columns, text_cols=None, **kw):
    reader = InputReader(str(path), columns, 1000, text_cols or [columns[-1]], **kw)
    return pa.Table.from_batches(list(reader.batches()), schema=reader.schema)


def one_line_exit_2(capsys, code) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_a_database_exports_null_marker_is_missing_never_embedded_as_a_text(tiny_bert, tmp_path, capsys):
    """(found by a database and shell exports hunt, 2026-11-27, session 12) PostgreSQL's text format, MySQL's INTO
    OUTFILE, Hive's text tables and Snowflake's unloads write NULL as \\N: it was read as the text "\\N" and embedded,
    and a kept column held the two characters."""
    src = tmp_path / "copy.tsv"  # \copy (SELECT id, title, body FROM reviews) TO 'copy.tsv' WITH (HEADER)
    src.write_text("id\ttitle\tbody\n1\t\\N\ta cat\n\\N\tthe mat\ta dog\n")
    table = read(src, ["id", "title", "body"], text_cols=["title", "body"])
    assert table.to_pydict() == {"id": ["1", None], "title": [None, "the mat"], "body": ["a cat", "a dog"]}
    quoted = tmp_path / "outfile.csv"  # INTO OUTFILE ... FIELDS TERMINATED BY ',' ENCLOSED BY '"': NULL unquoted
    quoted.write_text('id,text\n1,\\N\n2,"\\N"\n')
    assert read(quoted, ["id", "text"]).column("text").to_pylist() == [None, "\\N"]  # quoted: a text, as ever

    out = tmp_path / "f.parquet"
    args = ["embed", str(src), "--text-col", "title", "--text-col", "body", "--id-col", "id", "--out", str(out),
            "--model", tiny_bert, "--quiet"]
    err = one_line_exit_2(capsys, main(args))
    assert re.search(r"row 0 of column 'title' is missing \(None\)", err), err
    assert main([*args, "--missing", "zero"]) == 0
    features = pq.read_table(out)
    assert features.column("id").to_pylist() == ["1", None]
    title = [c for c in features.column_names if c.startswith("title_")]
    assert not any(features.column(c)[0].as_py() for c in title)  # zeros, not the vector of "\N"
    assert json.loads((tmp_path / "f.parquet.manifest.json").read_text())["counts"]["missing"] == 1


def test_a_text_such_as_na_or_none_in_a_database_text_export_is_a_text_under_quoting_backslash(tmp_path):
    """(found by a CSV writers hunt, 2026-11-27, session 17) PostgreSQL's COPY text format writes NULL as \\N and
    nothing else, and every other value as its text: under quoting='backslash' an unquoted NA, N/A, NaN, nan, null,
    None or <NA> was read as missing (CSV's markers, which every value of such a file is unquoted for), so a country
    code 'NA' (Namibia) was kept as null and a survey's answer 'None' or 'N/A' was missing (a zero vector under
    missing='zero'), silently. Now \\N is missing there, and NULL, as mysql --batch writes NULL, and an empty field
    (Redshift's UNLOAD ... ESCAPE writes NULL so); the rest are texts. Read as CSV (the default quoting), R's
    write.csv() NA stays missing."""
    src = tmp_path / "copy.tsv"  # \copy t TO 'copy.tsv' WITH (HEADER), as PostgreSQL 15 wrote it
    src.write_text("id\tcountry\ttxt\n1\tNA\tN/A\n2\t\\N\t\\N\n3\t\tNone\n4\tNULL\tsay \"hi\", ok\n"
                   "5\tnan\ttwo\\nlines\n6\t<NA>\tback\\\\slash \\\\N\n7\t\\\\N\tNaN\n8\tnull\tnull\n9\tNone\t<NA>\n")
    assert read(src, ["id", "country", "txt"], quoting="backslash").to_pydict() == {
        "id": [str(i) for i in range(1, 10)],
        "country": ["NA", None, None, None, "nan", "<NA>", "\\N", "null", "None"],
        "txt": ["N/A", None, "None", 'say "hi", ok', "two\nlines", "back\\slash \\N", "NaN", "null", "<NA>"]}
    batch = tmp_path / "batch.tsv"  # mysql --batch -e 'SELECT id, text FROM posts': NULL as the word
    batch.write_text("id\ttext\n1\tNULL\n2\tNA\n3\tNone\n")
    assert read(batch, ["id", "text"], quoting="backslash").column("text").to_pylist() == [None, "NA", "None"]
    unload = tmp_path / "unload.csv"  # UNLOAD ... DELIMITER '|' ESCAPE: NULL as an empty field
    unload.write_text("id|text\n1|\n2|N/A\n")
    assert read(unload, ["id", "text"], delimiter="|", quoting="backslash").column("text").to_pylist() == [None, "N/A"]
    r_csv = tmp_path / "r.csv"  # R's write.csv(): NA unquoted is missing, "NA" quoted the text, as before
    r_csv.write_text('"id","text"\n"1",NA\n"2","NA"\n"3",N/A\n')
    assert read(r_csv, ["id", "text"]).column("text").to_pylist() == [None, "NA", None]


@pytest.mark.parametrize("body, columns, line, footer", [
    ("id,text\n1,a cat\n2,a dog\n3,the mat\n(3 rows)\n\n", ["id", "text"], 5, "(3 rows)"),  # psql -A -F, -c '...'
    ("text\na cat\na dog\n(2 rows)\n", ["text"], 4, "(2 rows)"),  # one column: read as a row before
    ("text\na cat\n\n(2 rows)\n", ["text"], 4, "(2 rows)"),  # after a null, a blank line psql counts (session 17)
    ("id|text\n1|a cat\n(1 row)\n", ["id", "text"], 3, "(1 row)"),  # psql -A's own separator, --delimiter '|'
])
def test_psqls_row_count_footer_is_refused_naming_its_line(tmp_path, body, columns, line, footer):
    """(same hunt) psql's unaligned output (psql -A) ends with a footer, "(3 rows)": in a file of one column it was
    read as a row and embedded as a text, without a word; in a file of more columns it was "Expected 2 columns, got
    1" with nothing said of psql or what to do."""
    src = tmp_path / "psql.csv"
    src.write_text(body)
    with pytest.raises(ValueError) as info:
        read(src, columns, delimiter="|" if "|" in body else None)
    assert str(info.value) == (
        f"{src} holds psql's row count footer {footer!r} at line {line} (psql prints it after a query's rows, also "
        "in its unaligned output, psql -A), which would be read as a row of data: export the query as CSV instead: "
        "\\copy (SELECT ...) TO 'file.csv' WITH (FORMAT csv, HEADER) in psql, or psql --csv -c 'SELECT ...' > "
        "file.csv, which quote each value holding a comma and leave out the footer (or pass psql -P footer=off, or "
        "remove that line).")


@pytest.mark.parametrize("body, quoting, line", [
    ("text\na cat\n(1 row)\n\na dog\n", None, 3),  # rows after it: two outputs joined, or a query's output edited
    ("sep=,\ntext\na cat\n(1 row)\na dog\n", None, 4),  # Excel's sep= line, no record
    ('text\n"a cat\n(1 row)\na dog\n', "none", 3),  # no quotes: a quote opens no value in the lines counted
    ("text\na\rb\n(1 row)\na dog\n", None, 3),  # a lone CR read as its value's, as the reader reads it
    ('text\na\rb\n"c\nd"\n(2 rows)\nmore\n', None, 5),  # and a value over two lines after it
])
def test_a_footer_before_more_rows_is_named_by_its_own_line_as_the_reader_reads_the_file(tmp_path, body, quoting,
                                                                                        line):
    """(a mutation testing hunt, 2026-11-27, session 17) The footer's line was read only where it was the file's last
    record, where the end of the count gives the same line whatever rows it counted: the header, Excel's sep= line,
    the file's quoting and its lone CRs counted otherwise all passed."""
    src = tmp_path / "psql.csv"
    src.write_bytes(body.encode())
    with pytest.raises(ValueError, match=rf"holds psql's row count footer '\(\d rows?\)' at line {line} \("):
        read(src, ["text"], **({"quoting": quoting} if quoting else {}))


@pytest.mark.parametrize("body, line", [
    ('id,text\n1,a\rb\n2,say \\"hi\\"\n', 3),  # a lone CR read as its value's is no line end
    ('text,id\n\\"hi\\",1\n', 2),  # the problem the first byte of its line
])
def test_the_line_of_an_escaped_quote_counts_the_line_ends_the_reader_reads(tmp_path, body, line):
    """(a mutation testing hunt, 2026-11-27, session 17) The line named counts the line ends the reader ends rows at,
    up to the problem's first byte, which may follow one."""
    src = tmp_path / "data.csv"
    src.write_bytes(body.encode())
    with pytest.raises(ValueError, match=rf"data.csv: line {line} holds a quote escaped with a backslash"):
        read(src, ["text"])


def test_a_quote_never_closed_is_named_by_the_line_it_opens_a_value_at_after_the_files_delimiter(tmp_path):
    """(a mutation testing hunt, 2026-11-27, session 17) A quote opens a value only at its start, after the file's
    delimiter: where a record's first quote closed and a later one, on its next line, never did, that line is named.
    No test read the delimiter there: each quote left open was on its record's first line, the line named where no
    quote is found."""
    src = tmp_path / "open.csv"
    src.write_text('id;text;more\n1;a;b\n2;"two\nlines";"open\n3;x;y\n')
    with pytest.raises(ValueError, match=r'open.csv is malformed: a quote opened at line 4 is never closed, so '):
        read(src, ["id", "text", "more"], delimiter=";")


def test_a_text_that_only_looks_like_a_footer_is_read_as_a_text(tmp_path):
    src = tmp_path / "one.csv"  # not the count of the rows before it: a text, as written
    src.write_text("text\na cat\n(3 rows)\n(1 row)\n")
    assert read(src, ["text"]).column("text").to_pylist() == ["a cat", "(3 rows)", "(1 row)"]
    missing = tmp_path / "missing.csv"  # a missing text is no footer either
    missing.write_text("text\na cat\nNA\n\\N\n(3 rows)\n")
    with pytest.raises(ValueError, match=re.escape("holds psql's row count footer '(3 rows)' at line 5")):
        read(missing, ["text"])
    missing.write_text("text\na cat\nNA\n(1 row)\n")
    assert read(missing, ["text"]).column("text").to_pylist() == ["a cat", None, "(1 row)"]


PSQL = "psql's aligned output"
ASCII_BORDER = "a table drawn for the terminal ('+----+---------+' lines around it, as the mysql client, psql with"
BOX = "a table drawn for the terminal ('┌────┬─────────┐' lines around it, as DuckDB's CLI, sqlite3's .mode box"
EXPANDED = "psql's expanded output (a block of lines a record, the first "
COLUMNS = "a table drawn for the terminal in columns (its header over "


@pytest.mark.parametrize("body, what", [
    (" id |  text   \n----+---------\n  1 | a cat\n  2 | the mat\n(2 rows)\n", PSQL),
    (" text  \n-------\n a cat\n(1 row)\n", PSQL),
    ("+----+---------+\n| id | text    |\n+----+---------+\n|  1 | a cat   |\n+----+---------+\n", ASCII_BORDER),
    ("|    |   id | text    |\n|---:|-----:|:--------|\n|  0 |    1 | a cat   |\n", "a Markdown table"),  # to_markdown()
    ("| id | text |\n| --- | --- |\n| 1 | a cat |\n", "a Markdown table"),
    # each below as PostgreSQL 15's psql and sqlite3 3.40 print it (session 13)
    (" id | 标题  | n \n----+-------+---\n  1 | a cat | 2\n", PSQL),  # a name of CJK characters, two columns each
    (" cafe\u0301 | text  | n \n------+-------+---\n    1 | a cat | 3\n", PSQL),  # an accent: no column of its own
    (" id ║  text   ║     标题     \n════╬═════════╬══════════════\n  1 ║ a cat   ║ x\n", PSQL),  # linestyle unicode
    (" id │  text   \n────┼─────────\n  1 │ a cat\n", PSQL),
    ("┌────┬─────────┐\n│ id │  text   │\n├────┼─────────┤\n│ 1  │ a cat   │\n", BOX),  # sqlite3 .mode box, DuckDB
    ("+----+---------+\n| id |  text   |\n+----+---------+\n| 1  | a cat   |\n", ASCII_BORDER),  # sqlite3 .mode table
    ("─[ RECORD 1 ]──────\nid   │ 1\ntext │ a cat\n", EXPANDED + "'─[ RECORD 1 ]──────'"),  # psql -x
    ("+-[ RECORD 1 ]--------+\n| id   | 1            |\n| text | a cat        |\n",
     EXPANDED + "'+-[ RECORD 1 ]--------+'"),
    ("-[ RECORD 1 ]-\nid   | 1\ntext | a cat\n", EXPANDED + "'-[ RECORD 1 ]-'"),
    ("id  text       标题     \n-- ------- ------------\n 1 a cat   x\n", COLUMNS + "'-- ------- ------------'"),
    ("id  text   \n--  -------\n1   a cat  \n", COLUMNS + "'--  -------'"),  # sqlite3 .mode column
    ("a  标题\n-  --\n1  x \n", COLUMNS + "'-  --'"),
    ("id  t\n--  -\n1   x\n", COLUMNS + "'--  -'"),  # a name of one letter over the last run
    ("id | text\n--- | ---\n1 | a cat\n", "a Markdown table"),  # GitHub's, without the bars at each end
])
def test_a_table_drawn_for_the_terminal_is_refused_as_what_it_is(tmp_path, body, what):
    """(same hunt) psql's and mysql's tables drawn for the terminal (a query's output pasted or redirected without
    -A or --batch), and a Markdown table (pandas' to_markdown(), a notebook's), were read as a header of names with
    spaces around them: "column(s) ['text'] not found" with advice on delimiters and spaces, then rows of dashes.
    (found by a mutation testing hunt, 2026-11-27, session 13) so were the siblings the first cases left out: psql's
    table under a name of CJK characters (two terminal columns each: told to pass --delimiter '|'), under
    \\pset linestyle unicode (a common ~/.psqlrc line), its expanded output (\\x) and \\pset border 0, sqlite3's
    .mode box, .mode column (and DuckDB's CLI, whose tables are drawn as .mode box), and GitHub's Markdown without
    the outer bars; sqlite3's .mode table and psql's \\pset border 2 were told they were the mysql client's, with
    mysql's command alone."""
    src = tmp_path / "query.csv"
    src.write_text(body)
    with pytest.raises(ValueError, match=f"^{re.escape(f'{src} is {what}')}.*, not CSV: (export the query|write the "
                                         "data frame as CSV)"):
        read(src, ["text"])


def test_each_drawn_table_is_told_the_commands_that_export_it():
    from bertfeat.exports import drawn_table

    psql = "psql --csv -c 'SELECT ...' > file.csv"
    sqlite = "sqlite3 -csv -header file.db 'SELECT ...' > file.csv"
    said = drawn_table("q.txt", ["+----+------+", "| id | text |"])
    assert said == ("q.txt is a table drawn for the terminal ('+----+------+' lines around it, as the mysql client, "
                    "psql with \\pset border 2 and sqlite3's .mode table draw it), not CSV: export the query with "
                    "mysql --batch -e 'SELECT ...' > file.tsv (tabs, a header first; read it with quoting='backslash', "
                    "as the client escapes tabs and line breaks in values) or SELECT ... INTO OUTFILE, "
                    f"{psql}, or {sqlite}.")
    assert drawn_table("q.txt", ["╭─" + "─" * 50 + "╮", "│ x │"]) == (
        f"q.txt is a table drawn for the terminal ({'╭' + '─' * 39!r} lines around it, as DuckDB's CLI, sqlite3's "
        ".mode box and psql with \\pset linestyle unicode draw it), not CSV: export the query with duckdb -csv -c "
        f"'SELECT ...' > file.csv, {sqlite}, or {psql}.")
    assert drawn_table("q.txt", ["-[ RECORD 1 ]-+---", "id | 1"]) == (
        "q.txt is psql's expanded output (a block of lines a record, the first '-[ RECORD 1 ]-+---': \\x, psql -x or "
        "\\pset expanded, maybe in your ~/.psqlrc), not CSV: export the query with psql -P expanded=off --csv -c "
        "'SELECT ...' > file.csv (--csv alone keeps expanded output on: a line a column).")
    assert drawn_table("q.txt", ["id  text", "--  ----"]) == (
        "q.txt is a table drawn for the terminal in columns (its header over '--  ----', as sqlite3's .mode column "
        f"and psql with \\pset border 0 draw it), not CSV: export the query with {sqlite}, or {psql}.")
    assert drawn_table("q.txt", ["| id | text |", "|----|------|"]) == (
        "q.txt is a Markdown table (its header over '|----|------|', as pandas' to_markdown() and a table pasted from "
        "a notebook or a page write it), not CSV: write the data frame as CSV (df.to_csv('file.csv', index=False)) or "
        "parquet (df.to_parquet('file.parquet')) and pass that.")
    # a rule or border is shown to its 40th character
    wide = "-" * 30 + "+" + "-" * 30
    assert f"({'+' + '-' * 39!r} lines around it" in drawn_table("q.txt", ["+" + "-" * 60 + "+", "| x |"])
    assert f"the first {'-[ RECORD 1 ]' + '-' * 27!r}:" in drawn_table("q.txt", ["-[ RECORD 1 ]" + "-" * 50, "x"])
    assert f"its header over {'|' + '-' * 39!r}," in drawn_table("q.txt", ["| x | y |", "|" + "-" * 60 + "|"])
    assert f"its header over {wide[:40]!r})" in drawn_table("q.txt", [" " * 14 + "x" + " " * 15 + "| y", wide])
    assert f"its header over {wide.replace('+', ' ')[:40]!r}," in drawn_table(
        "q.txt", ["x" + " " * 30 + "y", wide.replace("+", " ")])
    assert drawn_table("q.txt", [" id | text", "----+-----"]).endswith(
        "export the query as CSV instead: \\copy (SELECT ...) TO 'file.csv' WITH (FORMAT csv, HEADER) in psql, or "
        "psql --csv -c 'SELECT ...' > file.csv, which quote each value holding a comma and leave out the footer.")


@pytest.mark.parametrize("body", [
    "text\n-- --\n",  # a text of dashes under a name that spans their gap
    "id,text\n--,----\n",  # a comma: CSV, not a table drawn in columns
    " id  text\n---+----\n",  # a cross under no bar
    "id,text\n1,--- | ---\n",  # a Markdown rule, but a value of a row
    "text\n┌ not a border\n",
    "text\n-[ RECORD 1 ] is a text\n",  # psql's record line second, not first
    "a\tb\n- -\n",  # a tab in a CSV's name: no table drawn in columns
    " text\na cat\n",  # a name after a space over a row of no rule
    "a     c\n- --- -\n", "    b\n--- -\n", "ab\n-- -\n", "a b\n- - -\n",  # a run of dashes with no name over it
])
def test_a_text_that_only_looks_like_a_drawn_table_is_read(tmp_path, body):
    src = tmp_path / "texts.csv"
    src.write_text(body)
    header = body.split("\n")[0]
    delimiter = "|" if "|" in header else ","
    table = read(src, header.split(delimiter), delimiter=delimiter)
    assert table.num_rows == 1
    tsv = tmp_path / "texts.tsv"  # a comma in a TSV's one name, over what would be the rule of two columns
    tsv.write_text("id, text\n--- ----\n")
    assert read(tsv, ["id, text"]).column("id, text").to_pylist() == ["--- ----"]


# -- how values are quoted: --quoting csv | none | backslash -----------------------------------------------------

def test_a_tsv_that_quotes_nothing_is_refused_where_a_quote_would_join_its_rows(tmp_path):
    """(same hunt) a TSV whose values are never quoted (PostgreSQL's \\copy, mysql --batch, cut, paste), with a text
    beginning with a quote: the CSV reading joined the rows up to the next quote into one value (ids 1 and 3 of 3,
    row 2 inside row 1's text), without a word."""
    src = tmp_path / "titles.tsv"
    src.write_text('id\ttext\n1\t"Hello world, she said\n2\tand he said no"\n3\tbar\n')
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value) == (
        f"{src} holds a quoted value opened at line 2 that holds a tab after a line break (at line 3), as rows read "
        "into one value do: in a TSV whose values are never quoted (a database's or a shell's export: \\copy ... TO, "
        "mysql --batch, cut, paste), a value beginning with \" opens no quote. Pass quoting='none', "
        "or quoting='backslash' for PostgreSQL's and MySQL's text exports, which escape tabs and line breaks; if that "
        "value is meant to be quoted, pass quoting='csv'.")
    assert read(src, ["id", "text"], quoting="none").to_pydict() == {
        "id": ["1", "2", "3"], "text": ['"Hello world, she said', 'and he said no"', "bar"]}
    assert read(src, ["id", "text"], quoting="csv").column("id").to_pylist() == ["1", "3"]  # as declared
    # a quoted value with a line break and no tab after it is a TSV's own (pandas quotes it so): read as before
    ok = tmp_path / "pandas.tsv"
    ok.write_text('id\ttext\n1\t"two\nlines"\n2\t"a\ttab"\n')
    assert read(ok, ["id", "text"]).column("text").to_pylist() == ["two\nlines", "a\ttab"]


def test_rows_joined_are_refused_where_either_unquoted_reading_gives_rows_and_named_by_line_after_a_bom(tmp_path):
    """(mutation testing hunt, 2026-11-27, session 14) The rows joined into a quoted value are refused where the
    file's lines read with no quotes give rows of the header's width as written (a shell's TSV, its line ending with
    a backslash, as a Windows folder's name does) or read with MySQL's escapes (a tab inside a value escaped): each
    reading alone passed every test. The lines named count from the file's first line where a UTF-8 byte order
    mark starts it (PowerShell's Export-Csv writes one): read from the mark, the quote was named at line 1."""
    refused = "holds a quoted value opened at line 2 that holds a tab after a line break (at line 3), as rows read "
    for name, body in [("shell.tsv", b'id\ttext\n1\t"C:\\\n2\tand he said no"\n3\tbar\n'),  # as written only
                       ("outfile.tsv", b'id\ttext\n1\t"a\\\tb\n2\tc"\n'),  # with MySQL's escapes only
                       ("bom.tsv", b'\xef\xbb\xbfid\ttext\n1\t"Hello world\n2\tand he said no"\n3\tbar\n')]:
        src = tmp_path / name
        src.write_bytes(body)
        with pytest.raises(ValueError) as info:
            read(src, ["id", "text"])
        assert str(info.value).startswith(f"{src} {refused}"), (name, str(info.value))
    # where the lines read with no quotes are no rows of the header's width, the quotes are the file's own (Python's
    # csv module quoted a value holding a line break and a tab): read, the lines after the header read to the end
    own = tmp_path / "python.tsv"
    own.write_bytes(b'id\ttext\tnote\n1\t"a\nx\tb"\tc\n2\td\te\n')
    assert read(own, ["id", "text", "note"]).to_pydict() == {"id": ["1", "2"], "text": ["a\nx\tb", "d"],
                                                            "note": ["c", "e"]}


def test_a_stray_quote_in_a_tsv_says_how_to_read_a_file_that_quotes_nothing(tmp_path):
    src = tmp_path / "titles.tsv"
    src.write_text('id\ttext\n1\t"Great" product\n2\tfine\n')
    with pytest.raises(ValueError, match=re.escape(
            "or remove a stray quote at line 2. If the file's values are never quoted (a database's or a shell's "
            "export), pass quoting='none', or quoting='backslash' for PostgreSQL's and MySQL's text exports.")):
        read(src, ["id", "text"])
    assert read(src, ["id", "text"], quoting="none").column("text").to_pylist() == ['"Great" product', "fine"]


COPY_TEXT = ("id\ttext\tnote\n"  # \copy (SELECT ...) TO 'copy.tsv' WITH (HEADER), PostgreSQL 15 and later
             "1\tline one\\nline two\t\\N\n"
             "2\ta\\ttab and a \\\\ backslash\tC:\\\\new\n"
             "3\t\\\\N is a text\t\\r\\b\\f\\v\n"
             "4\t\"quoted\" as written\t\\101\\x42\\0\n")
COPY_VALUES = {"id": ["1", "2", "3", "4"],
               "text": ["line one\nline two", "a\ttab and a \\ backslash", "\\N is a text", '"quoted" as written'],
               "note": [None, "C:\\new", "\r\b\f\v", "AB\0"]}


def test_a_database_text_export_is_read_with_its_escapes_under_quoting_backslash(tmp_path):
    """(same hunt) PostgreSQL's COPY text format escapes a line break, a tab and a backslash as \\n, \\t, \\\\: read
    as CSV each was embedded as two characters (and a quote opened a quoted value)."""
    src = tmp_path / "copy.tsv"
    src.write_text(COPY_TEXT)
    assert read(src, ["id", "text", "note"], quoting="backslash").to_pydict() == COPY_VALUES
    # MySQL's INTO OUTFILE and Redshift's UNLOAD ... ESCAPE put a backslash before the delimiter or line break itself
    outfile = tmp_path / "outfile.tsv"
    outfile.write_bytes(b"id\ttext\n1\ta\\\ttab\n2\ttwo\\\nlines\n3\tends with \\\\\n4\t\\N\n")
    assert read(outfile, ["id", "text"], quoting="backslash").to_pydict() == {
        "id": ["1", "2", "3", "4"], "text": ["a\ttab", "two\nlines", "ends with \\", None]}
    unload = tmp_path / "unload.csv"  # UNLOAD ('...') TO 's3://...' DELIMITER '|' ESCAPE
    unload.write_text("id|text\n1|a\\|b\n2|c\\\\\n")
    assert read(unload, ["id", "text"], delimiter="|", quoting="backslash").column("text").to_pylist() == [
        "a|b", "c\\"]


def test_octal_and_hex_escapes_are_bytes_of_the_files_utf8_as_copy_from_reads_them(tmp_path, capsys):
    """(found by a mutation testing hunt, 2026-11-27, session 13) PostgreSQL's COPY FROM reads \\ooo and \\xhh as
    bytes in the database's encoding, so an exporter writing 'café' as caf\\303\\251 means 'café' (PostgreSQL 15
    loads it so): each escape was read as a character of its own, 'cafÃ©', silently. Bytes that are no UTF-8 are
    refused, naming the text, as COPY FROM refuses them; past 255 an octal escape keeps its low byte, as there."""
    src = tmp_path / "copy.tsv"
    src.write_text("id\ttext\n1\tcaf\\303\\251\n2\t\\xc3\\xa9t\\xC3\\xA9\n3\t\\101\\x42\\0C\n4\t\\\\303x\\x\n"
                   "5\t\\342\\202\\254 5 \\xe2\\x82\\xac\n6\t\\501\n7\t\\303\\200 \\x7f\n")
    assert read(src, ["id", "text"], quoting="backslash").column("text").to_pylist() == [
        "café", "été", "AB\0C", "\\303xx", "€ 5 €", "A", "À \x7f"]  # 0x80 is a byte of UTF-8, 0x7f a character
    bad = tmp_path / "latin1.tsv"
    bad.write_text("id\ttext\n1\tfine\n2\tcaf\\351 au lait\n")
    with pytest.raises(ValueError) as info:
        read(bad, ["id", "text"], quoting="backslash")
    assert str(info.value) == (
        f"{bad}: the text of row 1 in column 'text' holds escaped bytes that are no UTF-8 (the first, 0xe9, in "
        "'caf\\\\351 au lait'): under quoting='backslash' an octal or hex escape is a byte of the file's UTF-8 text, "
        "as PostgreSQL's COPY FROM reads it into a UTF-8 database, which refuses these too. Export the texts again in "
        "UTF-8.")
    err = one_line_exit_2(capsys, main(["embed", str(bad), "--text-col", "text", "--out", str(tmp_path / "f.parquet"),
                                        "--quoting", "backslash", "--quiet"]))  # the command line says its flag
    assert "): under --quoting backslash an octal or hex escape is a byte" in err, err


def test_a_carriage_return_mysql_leaves_unescaped_in_a_value_is_part_of_it(tmp_path):
    """(found by a mutation testing hunt, 2026-11-27, session 13) MySQL escapes no carriage return, neither
    mysql --batch (\\n, \\t, \\0, \\\\) nor INTO OUTFILE (a backslash before the line break itself), so a text holding
    a Windows line break (a web form's) was written with a bare CR inside it, where pyarrow ends a row: the file was
    refused as 'Expected 2 columns, got 1'. A CR is part of the value where no LF follows it, once the file has shown
    its lines end with one; a CRLF file's rows still end at each CRLF."""
    batch = tmp_path / "batch.tsv"  # mysql --batch -e 'SELECT id, text FROM posts'
    batch.write_bytes(b"id\ttext\n1\tline one\r\\nline two\n2\tends with CR\r\n3\tnext\n")
    assert read(batch, ["id", "text"], quoting="backslash").to_pydict() == {
        "id": ["1", "2", "3"], "text": ["line one\r\nline two", "ends with CR", "next"]}
    outfile = tmp_path / "outfile.tsv"  # SELECT id, text INTO OUTFILE ...
    outfile.write_bytes(b"id\ttext\n1\tline one\r\\\nline two\n2\ta\rb\n")
    assert read(outfile, ["id", "text"], quoting="backslash").column("text").to_pylist() == [
        "line one\r\nline two", "a\rb"]
    crlf = tmp_path / "windows.tsv"  # the same rows with CRLF line ends: each CRLF ends a row, as before
    crlf.write_bytes(b"id\ttext\r\n1\ta\\tb\r\n2\tc\r\n")
    assert read(crlf, ["id", "text"], quoting="backslash").column("text").to_pylist() == ["a\tb", "c"]
    from bertfeat.escapes import EscapedBytes

    data = b"h\na\rb\r\n\\\rc\\\\\r\nd\r"  # an escaped CR, then an escaped backslash before a CRLF
    want = b"h\na\\rb\r\n\\rc\\\\\r\nd\r"  # a CR at the very end: no value follows it
    for cut in range(len(data) + 1):
        stream = EscapedBytes("\t")
        assert stream.rewrite(data[:cut]) + stream.rewrite(data[cut:]) + stream.rewrite(b"") == want, cut
    first = EscapedBytes("\t")  # a CR before the stream's first LF: a line end of its own (a file of CR line ends)
    assert first.rewrite(b"h\ra\rb") + first.rewrite(b"") == b"h\ra\rb"


def test_a_mysql_batch_file_with_a_texts_windows_line_break_read_without_quoting_says_to_pass_backslash(tmp_path):
    """(found by a CSV writers hunt, 2026-11-27, session 14; named by session 13) mysql --batch writes a text's CRLF
    as a lone CR and \\n (it escapes no CR); read without quoting=, the lone CR ended the row: 'Expected 2 columns,
    got 1' with nothing said of why. A lone CR is a value's own where lines end with LF (as Python's csv module and
    pandas write it), so the \\n is seen, and refused as the export's escape, here too: the lines the check reads the
    file as are the reader's, not split at the lone CR (split there, the file was no export's and read as written)."""
    batch = tmp_path / "batch.tsv"  # mysql --batch -e 'SELECT id, text FROM posts' > batch.tsv
    batch.write_bytes(b"id\ttext\n1\tline one\r\\nline two\n2\tplain\n")
    with pytest.raises(ValueError) as info:
        read(batch, ["id", "text"])
    assert str(info.value).startswith(
        f"{batch}: the text of row 0 in column 'text' holds '\\\\n' (a backslash and 'n': 'line one\\r\\\\nline two'), "
        "as a database's text export writes"), str(info.value)
    assert "Pass quoting='backslash'" in str(info.value)
    assert read(batch, ["id", "text"], quoting="backslash").column("text").to_pylist() == [
        "line one\r\nline two", "plain"]
    outfile = tmp_path / "outfile.tsv"  # SELECT ... INTO OUTFILE: a lone CR, then a backslash before the LF
    outfile.write_bytes(b"id\ttext\n1\tline one\r\\\nline two\n2\tplain\n")
    with pytest.raises(ValueError) as info:
        read(outfile, ["id", "text"])
    assert str(info.value).startswith(
        f"{outfile} is malformed at line 3: CSV parse error: Expected 2 columns, got 1: line two. The line before it ends "
        "with a backslash ('line one\\r\\\\'), as exports that escape"), str(info.value)


def test_a_mysql_export_whose_lines_end_with_crlf_keeps_each_values_line_feeds(tmp_path):
    """(found by a CSV writers hunt, 2026-11-27, session 14; named by session 13) MySQL's SELECT ... INTO OUTFILE ...
    LINES TERMINATED BY '\\r\\n' escapes the first byte of its line end, the CR, and no LF: a text's Windows line
    break is written as a backslash, a CR and an LF, a text's lone LF as itself. Each LF ended the row: 'Expected 2
    columns, got 1', after the advice to pass quoting='backslash' had been taken. Where the file's first line ends
    with CRLF, an LF no CR comes before is part of its value; every CRLF still ends a row."""
    outfile = tmp_path / "outfile.tsv"  # INTO OUTFILE '/tmp/outfile.tsv' LINES TERMINATED BY '\r\n'
    outfile.write_bytes(b"id\ttext\r\n1\tline one\\\r\nline two\r\n2\tunix\nbreak\r\n3\ta\\\tb\r\n"
                        b"4\t\\N\r\n5\tends with \\\\\r\n")
    assert read(outfile, ["id", "text"], quoting="backslash").to_pydict() == {
        "id": ["1", "2", "3", "4", "5"],
        "text": ["line one\r\nline two", "unix\nbreak", "a\tb", None, "ends with \\"]}
    from bertfeat.escapes import EscapedBytes

    data = outfile.read_bytes()
    whole = EscapedBytes("\t")
    want = whole.rewrite(data) + whole.rewrite(b"")
    for cut in range(len(data) + 1):  # wherever the read pieces are cut
        stream = EscapedBytes("\t")
        assert stream.rewrite(data[:cut]) + stream.rewrite(data[cut:]) + stream.rewrite(b"") == want, cut
    lf = EscapedBytes("\t")  # a file whose first line ends with a lone LF: each LF ends a row, as before
    assert lf.rewrite(b"h\na\nb\r\nc\\\nd\n") + lf.rewrite(b"") == b"h\na\nb\r\nc\\nd\n"


@pytest.mark.parametrize("name", ["outfile.tsv", "outfile.csv"])
def test_a_line_feed_alone_in_a_file_of_crlf_lines_read_without_quoting_says_why_and_what_to_pass(tmp_path, name):
    """(found by a CSV writers hunt, 2026-11-27, session 14) MySQL's INTO OUTFILE ... LINES TERMINATED BY '\\r\\n'
    writes a text's lone LF as itself; read without quoting= the LF ended the row: 'Expected 2 columns, got 1' with
    nothing said of why (quoting='backslash' reads it: the test above)."""
    sep = "\t" if name.endswith(".tsv") else ","
    src = tmp_path / name
    src.write_bytes(f"id{sep}text\r\n1{sep}unix\nbreak\r\n2{sep}b\r\n".encode())
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value) == (
        f"{src} is malformed at line 3: CSV parse error: Expected 2 columns, got 1: break. Line 2 ends with a line feed "
        "alone, where the file's lines end with CRLF, as MySQL's SELECT ... INTO OUTFILE ... LINES TERMINATED BY "
        "'\\r\\n' writes a line break inside a value (it escapes the CR, not the LF): pass quoting='backslash'; if a "
        "line was added with another line end, end it with CRLF as the others.")
    assert read(src, ["id", "text"], delimiter=sep, quoting="backslash").column("text").to_pylist() == [
        "unix\nbreak", "b"]
    src.write_bytes(f"id{sep}text\n1{sep}unix\nbreak\n".encode())  # lines of LF: no such line, nothing said of it
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value).endswith("got 1: break" + split_unquoted(sep)), str(info.value)  # (session 15's words)


def test_escapes_split_between_read_pieces_are_read_whole():
    from bertfeat.escapes import EscapedBytes

    data = b"a\\\tb\\\\\tc\\\nd\\n\\\\\\\ne\\"
    whole = EscapedBytes("\t")
    want = whole.rewrite(data) + whole.rewrite(b"")
    assert want == b"a\\tb\\\\\tc\\nd\\n\\\\\\ne\\"
    for cut in range(len(data) + 1):
        for second in range(cut, len(data) + 1):
            stream = EscapedBytes("\t")
            got = b"".join(stream.rewrite(p) for p in (data[:cut], data[cut:second], data[second:]) if p)
            assert got + stream.rewrite(b"") == want, (cut, second)
    assert stream.rewrite(b"") == b""  # read again after its end: nothing more
    # a backslash before a carriage return, a line break or the delimiter: an escape of each, whatever the delimiter
    for delimiter, escaped in (("\t", b"\\t"), ("|", b"\\\x1f"), (",", b"\\\x1f")):
        stream = EscapedBytes(delimiter)
        data = b"a\\\rb\\\nc\\" + delimiter.encode() + b"d\\\\e"
        assert stream.rewrite(data) + stream.rewrite(b"") == b"a\\rb\\nc" + escaped + b"d\\\\e", delimiter


def test_an_export_past_the_read_block_keeps_every_escape(tmp_path):
    from bertfeat import readers

    texts = [f"row {i}\\nsecond line\\t{'x' * (i % 7)}\\\\" for i in range(60_000)]
    src = tmp_path / "big.tsv"
    src.write_text("id\ttext\n" + "".join(f"{i}\t{t}\n" for i, t in enumerate(texts)))
    assert src.stat().st_size > 2 * readers.BLOCK_BYTES
    got = read(src, ["id", "text"], quoting="backslash").column("text").to_pylist()
    assert got == [t.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\") for t in texts]


def test_escapes_read_as_written_are_refused_where_the_quoting_was_not_declared(tmp_path):
    """(same hunt) the same export read without --quoting: its \\n were embedded as a backslash and an n."""
    src = tmp_path / "copy.tsv"
    src.write_text("id\ttext\n1\tfine\n2\tsaid \\\\no\n3\tline one\\nline two\n")
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value).startswith(
        f"{src}: the text of row 2 in column 'text' holds '\\\\n' (a backslash and 'n': 'line one\\\\nline two'), as "
        "a database's text export writes a line break")
    assert str(info.value).endswith(
        "Pass quoting='backslash' to read the file's escapes (and \\N as missing); if the backslashes are the "
        "text's own, pass quoting='csv' (or 'none') to read them as written.")
    assert read(src, ["id", "text"], quoting="csv").column("text").to_pylist()[2] == "line one\\nline two"
    # a backslash no such export writes alone (LaTeX's \alpha, a Windows path's \Users) shows the texts' own: as written
    own = tmp_path / "abstracts.tsv"
    own.write_text("id\ttext\n1\tthe angle $\\theta$ and $\\alpha$\n2\tsaved in C:\\Users\\new\n")
    assert read(own, ["id", "text"]).column("text").to_pylist() == ["the angle $\\theta$ and $\\alpha$",
                                                                    "saved in C:\\Users\\new"]


def test_each_escape_refusal_word_for_word_showing_twenty_characters_either_side(tmp_path):
    """(mutation testing hunt, 2026-11-27, session 14) The refusals of an escape read as written were read by their
    first and last words only: the export named, the two characters' and the cut line's words, and the twenty
    characters shown either side of the escape could change unseen."""
    src = tmp_path / "copy.tsv"
    src.write_text("id\ttext\n1\t" + "a" * 30 + "\\r" + "b" * 30 + "\n")
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value) == (
        f"{src}: the text of row 0 in column 'text' holds '\\\\r' (a backslash and 'r': '{'a' * 20}\\\\r{'b' * 20}'), "
        "as a database's text export writes a line break, a tab or a carriage return inside a value (PostgreSQL's "
        "\\copy ... TO and COPY ... TO STDOUT, mysql --batch, Snowflake's unloads): read as written it would be "
        "embedded as those two characters. Pass quoting='backslash' to read the file's escapes (and \\N as missing); "
        "if the backslashes are the text's own, pass quoting='csv' (or 'none') to read them as written.")
    outfile = tmp_path / "outfile.tsv"  # MySQL's INTO OUTFILE: a backslash before a line break inside a value
    outfile.write_text("text\nfine\n" + "c" * 30 + "\\\nrest of it\n")
    with pytest.raises(ValueError) as info:
        read(outfile, ["text"])
    assert str(info.value) == _ends_with_a_backslash(outfile)


def _ends_with_a_backslash(outfile) -> str:
    """The refusal of a one-column MySQL INTO OUTFILE export whose first text, 30 c's, ends with a backslash before a
    line break, read without quoting."""
    return (
        f"{outfile}: the text of row 1 in column 'text' ends with a backslash ('{'c' * 20}\\\\'), as MySQL's INTO "
        "OUTFILE writes one before a line break inside a value: read as written the rest of the text would be a row "
        "of its own. Pass quoting='backslash' to read the file's escapes (and \\N as missing); if the backslashes are "
        "the text's own, pass quoting='csv' (or 'none') to read them as written.")


@pytest.mark.parametrize("value_end", [b"\r", b"\r\n"])
def test_a_backslash_before_a_line_end_of_lone_cr_lines_is_refused_as_in_lf_lines(tmp_path, value_end):
    """(found by a CSV dialects hunt, continued, 2026-11-27, session 15) MySQL's INTO OUTFILE ... LINES TERMINATED BY
    '\\r' writes a backslash before a text's CR (the first byte of its line end; before a text's CRLF, the LF left as
    it is). Read without quoting, a file of one column of it gave the text 'ccc\\' and 'rest of it' as two rows,
    silently, where the same export of LF lines is refused: the check of a backslash before a line break read a line
    ending with a lone CR as not ended (exports.unquoted_rows stripped a LF only). Now refused alike, and read under
    quoting='backslash' as the table held it."""
    outfile = tmp_path / "outfile.tsv"
    outfile.write_bytes(b"text\rfine\r" + b"c" * 30 + b"\\" + value_end + b"rest of it\r")
    with pytest.raises(ValueError) as info:
        read(outfile, ["text"])
    assert str(info.value) == _ends_with_a_backslash(outfile)
    assert read(outfile, ["text"], quoting="backslash").column("text").to_pylist() == [
        "fine", "c" * 30 + value_end.decode() + "rest of it"]


@pytest.mark.parametrize("columns", [["text"], ["id", "text"], ["id", "text", "n"]])
def test_a_backslash_before_a_texts_carriage_return_of_crlf_lines_is_refused_not_kept(tmp_path, columns):
    """(found by a CSV leftovers hunt, 2026-11-27, session 16) MySQL's INTO OUTFILE ... LINES TERMINATED BY '\\r\\n'
    writes a backslash before a text's CR (the first byte of its line end; the LF of a text's CRLF left as it is).
    Read without quoting, the CR was read as its value's, as in any CRLF file, and the text kept the backslash
    ('a\\\\\\rb'), silently: the check of an export's escapes looked for a backslash and a letter, and took a backslash
    before a CR for the text's own. Now refused, saying what MySQL wrote and to pass quoting='backslash', which reads
    each text as the table held it; a text ending with its CR too, in the last column (whose backslash and CR come
    before the row's CRLF, and the check of an export's rows read its line as ended by the backslash)."""
    texts = ["plain", "a\rb", "ends\r", "c"]

    def escaped(text):  # as INTO OUTFILE escapes a value: a backslash, a tab and a CR after a backslash
        return text.replace("\\", "\\\\").replace("\t", "\\\t").replace("\r", "\\\r").encode()

    rows = [columns] + [[{"id": str(i), "text": t, "n": "1,5"}[c] for c in columns] for i, t in enumerate(texts)]
    outfile = tmp_path / "outfile.tsv"
    outfile.write_bytes(b"".join(b"\t".join(escaped(v) for v in row) + b"\r\n" for row in rows))
    assert b"a\\\rb" in outfile.read_bytes() and b"ends\\\r" in outfile.read_bytes()
    with pytest.raises(ValueError) as info:
        read(outfile, columns, text_cols=["text"])
    assert str(info.value) == (
        f"{outfile}: the text of row 1 in column 'text' holds a backslash before a carriage return ('a\\\\\\rb'), as "
        "MySQL's INTO OUTFILE ... LINES TERMINATED BY '\\r\\n' writes a carriage return inside a value (it escapes the "
        "first byte of its line end): read as written the text would keep the backslash. Pass quoting='backslash' to "
        "read the file's escapes (and \\N as missing); if the backslashes are the text's own, pass quoting='csv' (or "
        "'none') to read them as written.")
    assert read(outfile, columns, text_cols=["text"], quoting="backslash").column("text").to_pylist() == texts
    del texts[1]  # a text ending with its CR alone: refused too (the backslash and CR, then the row's CRLF)
    rows = [columns] + [[{"id": str(i), "text": t, "n": "1,5"}[c] for c in columns] for i, t in enumerate(texts)]
    outfile.write_bytes(b"".join(b"\t".join(escaped(v) for v in row) + b"\r\n" for row in rows))
    with pytest.raises(ValueError, match=re.escape("in column 'text' holds a backslash before a carriage return "
                                                   "('ends\\\\\\r')")):
        read(outfile, columns, text_cols=["text"])


@pytest.mark.parametrize("lines", ["\n", "\r\n"])
@pytest.mark.parametrize("columns", [["text"], ["id", "text"], ["id", "text", "n"]])
def test_mysqls_comma_separated_outfile_read_without_quoting_is_refused_where_its_escapes_would_cut_or_stay(
        tmp_path, lines, columns):
    """(found by a CSV writers hunt, 2026-11-27, session 17) MySQL's SELECT ... INTO OUTFILE 'f.csv' FIELDS
    TERMINATED BY ',' (no ENCLOSED BY: no value quoted) writes a backslash before a text's comma, backslash and the
    first byte of its line end. Read without quoting, the check of an export's escapes looked at TSVs only, so in a
    comma file a text's CR escaped before CRLF lines kept the backslash ('a\\\\\\rb'), and a text's line break escaped
    (LF lines; CRLF lines, its CR) cut a file of one column's text into two rows ('two\\\\' and 'lines'), silently,
    where the same bytes named .tsv were refused. Now refused alike, pointing to quoting='backslash', which reads each
    text as the table held it; a text's own backslash-n (two characters, which MySQL never writes in a comma file) is
    read as written."""
    def escaped(text):  # as INTO OUTFILE escapes a value: a backslash, the delimiter, its line end's first byte
        return text.replace("\\", "\\\\").replace(",", "\\,").replace(lines[0], "\\" + lines[0])

    texts = ["plain", "two\nlines" if lines == "\n" else "a\rb", "c:\\dir"]
    if columns != ["id", "text"]:  # (there a row cut by it, ragged, would be refused before the CR is looked at)
        texts.insert(2, "win\r\nline")
    if "n" in columns:  # (a comma escaped cuts a row: refused, ragged, as ever)
        texts[-1] += ", too"
    rows = [columns] + [[{"id": str(i), "text": t, "n": "1,5"}[c] for c in columns] for i, t in enumerate(texts)]
    outfile = tmp_path / "outfile.csv"
    outfile.write_bytes("".join(",".join(escaped(v) for v in row) + lines for row in rows).encode())
    assert b"\\" + lines[0].encode() in outfile.read_bytes() and b'"' not in outfile.read_bytes()
    if columns == ["text"] or columns == ["id", "text"] and lines == "\r\n":  # else cut rows, ragged
        with pytest.raises(ValueError) as info:
            read(outfile, columns, text_cols=["text"])
        said = ("ends with a backslash ('two\\\\'), as MySQL's INTO OUTFILE writes one before a line break inside a "
                "value: read as written the rest of the text would be a row of its own" if lines == "\n" else
                "holds a backslash before a carriage return ('a\\\\\\rb'), as MySQL's INTO OUTFILE ... LINES "
                "TERMINATED BY '\\r\\n' writes a carriage return inside a value (it escapes the first byte of its "
                "line end): read as written the text would keep the backslash")
        assert str(info.value) == (
            f"{outfile}: the text of row 1 in column 'text' {said}. Pass quoting='backslash' to read the file's "
            "escapes (and \\N as missing); if the backslashes are the text's own, pass quoting='csv' (or 'none') to "
            "read them as written.")
    else:  # a wider file's rows cut where a comma or line end is escaped, and refused so (session 12)
        with pytest.raises(ValueError, match="pass quoting='backslash'"):
            read(outfile, columns, text_cols=["text"])
    got = read(outfile, columns, text_cols=["text"], quoting="backslash")
    assert got.column("text").to_pylist() == texts
    if "n" in columns:
        assert got.column("n").to_pylist() == ["1,5"] * len(texts)
    one = tmp_path / "one.csv"  # a text's own backslash-n in a file of one column, never MySQL's in a comma file
    one.write_bytes(f"text{lines}plain{lines}print('a\\nb'){lines}".encode())
    assert read(one, ["text"]).column("text").to_pylist() == ["plain", "print('a\\nb')"]


def test_a_quoted_text_ending_with_a_backslash_in_any_text_column_shows_the_texts_own(tmp_path):
    """(mutation testing hunt, 2026-11-27, session 14) A quoted value ending with a backslash (a Windows folder's
    "C:\\") that escapes no line break shows no export wrote the file, whichever of the text columns holds it; only
    the last column's was read by a test."""
    src = tmp_path / "paths.tsv"
    src.write_text('id\tfolder\tnote\n1\t"C:\\"\tline\\nbreak\n')
    assert read(src, ["id", "folder", "note"], text_cols=["folder", "note"]).to_pydict() == {
        "id": ["1"], "folder": ["C:\\"], "note": ["line\\nbreak"]}


def test_an_escape_in_a_later_text_column_is_refused_naming_that_column(tmp_path):
    """(mutation testing hunt, 2026-11-27, session 14) Only the first text column's escapes were read by a test."""
    src = tmp_path / "copy.tsv"
    src.write_text("id\ttitle\tbody\n1\tfine\tline\\nbreak\n")
    with pytest.raises(ValueError, match=re.escape(f"{src}: the text of row 0 in column 'body' holds '\\\\n' (a "
                                                   "backslash and 'n': 'line\\\\nbreak')")):
        read(src, ["id", "title", "body"], text_cols=["title", "body"])


def test_a_text_showing_its_own_backslashes_ends_the_check_for_the_rest_of_the_file(tmp_path):
    """(mutation testing hunt, 2026-11-27, session 14) The check ends where a text shows its backslashes are its
    own, for the blocks read after too: a \\n past the first MiB of a file whose first row holds C:\\Users is the
    texts' own; watching on, it was refused (no test of it read past one block)."""
    from bertfeat import readers

    src = tmp_path / "paths.tsv"
    texts = ["saved in C:\\Users\\me"] + ["plain text " * 20] * 6000 + ["line\\nbreak", "a\\ttab"]
    src.write_text("id\ttext\n" + "".join(f"{i}\t{t}\n" for i, t in enumerate(texts)))
    assert src.stat().st_size > readers.BLOCK_BYTES
    assert read(src, ["id", "text"]).column("text").to_pylist() == texts


def test_a_backslash_before_x_or_a_digit_other_than_0_shows_the_texts_own_backslashes(tmp_path):
    """(review of session 12) PostgreSQL's COPY TO writes no octal or hex escape and MySQL's exports only \\0 (NUL),
    so a text holding \\x or \\1 to \\7 alone is no export's: a Windows path (C:\\new\\table\\x.txt) or a regex
    (\\1) first in the file was refused for its \\n and \\t, where \\Users beside them was read as written."""
    for text in ("C:\\new\\table\\x.txt", "replace with \\1 then\\tab", "C:\\2024\\new"):
        src = tmp_path / "paths.tsv"
        src.write_text(f"id\ttext\n1\t{text}\n2\tmore \\n\n")
        assert read(src, ["id", "text"]).column("text").to_pylist() == [text, "more \\n"], text
    # (mutation testing hunt, 2026-11-27, session 14) \N inside a text: the exports write it as a whole value only
    # (their NULL), so a text holding it (a Windows path's \Node or \News) is no export's; it was refused for \n
    for text in ("C:\\Node\\new", "the \\N marker", "a \\\\\\N"):
        src = tmp_path / "nodes.tsv"
        src.write_text(f"id\ttext\n1\t{text}\n2\tmore \\n\n")
        assert read(src, ["id", "text"]).column("text").to_pylist() == [text, "more \\n"], text
    # \0 is MySQL's NUL, \N its NULL (a whole value): as before, no sign of the texts' own
    for first in ("a\\0b", "\\N"):
        src = tmp_path / "mysql.tsv"
        src.write_text(f"id\ttext\n1\t{first}\n2\tline one\\nline two\n")
        with pytest.raises(ValueError, match="holds '\\\\\\\\n'"):
            read(src, ["id", "text"])


def test_a_backslash_before_the_delimiter_is_not_taken_for_r_row_names(tmp_path):
    """(same hunt) an unload escaping its delimiter (a\\|b) was told it was written by R's write.table()."""
    src = tmp_path / "unload.csv"
    src.write_text("id|text\n1|a\\|b\n2|c\n")
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"], delimiter="|")
    assert "write.table" not in str(info.value)
    assert str(info.value).startswith(f"{src} is malformed at line 2: ")  # the hint added to the problem's words
    assert str(info.value).endswith(
        "A backslash comes before the delimiter there ('a\\\\|b'), as exports that escape their delimiters, tabs and "
        "line breaks with a backslash write them (MySQL's INTO OUTFILE, Redshift's UNLOAD ... ESCAPE, PostgreSQL's "
        "COPY text format): pass quoting='backslash'.")


def test_quoting_is_checked_and_recorded(tmp_path):
    src = tmp_path / "a.tsv"
    src.write_text("id\ttext\n1\ta\n")
    for given in ("posix", "CSV", 1, ["csv"]):
        with pytest.raises(ValueError) as info:
            InputReader(str(src), ["text"], 10, ["text"], quoting=given)
        assert str(info.value) == (
            f"quoting={given!r} is not valid: expected 'csv' (\" quotes a value, the default), 'none' (no quoting: \" "
            "is a plain character), 'backslash' (no quoting, backslash escapes, \\N missing: PostgreSQL's COPY text "
            "format, MySQL's INTO OUTFILE and mysql --batch) or 'csv-backslash' (\" quotes a value, backslash "
            "escapes, \\N missing: MySQL's INTO OUTFILE ... ENCLOSED BY '\"', and pandas' to_csv and Python's csv "
            "module with an escapechar).")
    assert InputReader(str(src), ["text"], 10, ["text"]).reading()["quoting"] == "csv"
    assert InputReader(str(src), ["text"], 10, ["text"], quoting="none").reading()["quoting"] == "none"
    escaped = InputReader(str(src), ["text"], 10, ["text"], quoting="csv-backslash")
    assert escaped.reading()["quoting"] == "csv-backslash"
    pq.write_table(pa.table({"text": ["a"]}), tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"quoting='none' applies to CSV input only"):
        InputReader(str(tmp_path / "a.parquet"), ["text"], 10, ["text"], quoting="none")


def test_embed_and_probe_read_a_copy_export_with_quoting_backslash(tiny_bert, tmp_path, capsys):
    from bertfeat import BertEmbedder

    src = tmp_path / "copy.tsv"
    src.write_text(COPY_TEXT)
    out = tmp_path / "f.parquet"
    args = ["embed", str(src), "--text-col", "text", "--id-col", "id", "--out", str(out), "--model", tiny_bert,
            "--pooling", "mean", "--quiet"]
    err = one_line_exit_2(capsys, main(args))
    assert "a quoted value (opened at line 5) has more text after its closing quote" in err, err
    assert err.endswith("or --quoting backslash for PostgreSQL's and MySQL's text exports."), err  # its flags
    assert main([*args, "--quoting", "backslash"]) == 0
    got = pq.read_table(out)
    want = BertEmbedder(tiny_bert, pooling="mean").fit_transform(COPY_VALUES["text"])
    X = got.select([c for c in got.column_names if c != "id"]).to_pandas().to_numpy()
    assert abs(X - want).max() < 1e-5
    manifest = json.loads((tmp_path / "f.parquet.manifest.json").read_text())
    assert manifest["reading"] == {"delimiter": "\t", "infer_types": False, "quoting": "backslash"}
    parquet = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ["1"], "text": ["a cat"]}), parquet)
    err = one_line_exit_2(capsys, main(["embed", str(parquet), "--text-col", "text", "--out", str(tmp_path / "p"),
                                        "--quoting", "none"]))
    assert err.endswith("--quoting applies to CSV input only, and " + repr(str(parquet)) + " is parquet; drop "
                        "--quoting.")
    labels = tmp_path / "labels.tsv"
    labels.write_text("text\tlabel\n" + "".join(f"{t}\\nmore\t{i % 2}\n" for i, t in enumerate(
        ["a cat", "a dog", "the mat", "the park", "a fox", "the dog", "a mat", "the cat"])))
    assert main(["probe", str(labels), "--text-col", "text", "--label-col", "label", "--model", tiny_bert,
                 "--cv", "2", "--unions", "0", "--quoting", "backslash"]) == 0
    assert main(["probe", str(labels), "--text-col", "text", "--label-col", "label", "--model", tiny_bert,
                 "--cv", "2", "--unions", "0"]) == 2
    assert "Pass --quoting backslash" in capsys.readouterr().err


def test_rows_read_into_a_quoted_value_are_found_whatever_the_read_pieces():
    from bertfeat.quotes import QuoteScanner

    data = b'id\ttext\n1\t"Hello ""you""\n22\tsaid no"\n3\tbar\n'
    want = (data.index(b'"'), data.index(b"\t", data.index(b"22")))
    for cut in range(1, len(data) + 1):
        scanner = QuoteScanner("\t", watch_rows=True)
        for i in range(0, len(data), cut):
            scanner.feed(data[i:i + cut])
        assert scanner.rows_joined == want, cut
    for other in (b'id\ttext\n1\t"an\n\tindented line"\n', b'id\ttext\n1\t"two\nlines"\t"a\ttab"\n'):
        scanner = QuoteScanner("\t", watch_rows=True)
        scanner.feed(other)
        assert scanner.rows_joined is None
    pandas = b'id\ttext\n1\t"Name:\nAda\tLovelace"\n'  # a TSV's own quoted value that holds one: refused, saying so
    scanner = QuoteScanner("\t", watch_rows=True)
    scanner.feed(pandas)
    assert scanner.rows_joined is not None


# -- other formats given by mistake or hope ------------------------------------------------------------------------

def _write(kind, path):
    table = pa.table({"id": [1, 2], "text": ["a cat", "the mat"]})
    if kind == "feather":
        import pyarrow.feather as feather

        feather.write_feather(table, path)
    elif kind == "orc":
        import pyarrow.orc as orc

        orc.write_table(table, path)
    elif kind == "jsonl":
        path.write_text('{"id": 1, "text": "a cat"}\n{"id": 2, "text": "the mat"}\n')
    else:
        path.write_text('[{"id": 1, "text": "a cat"}, {"id": 2, "text": "the mat"}]')


@pytest.mark.parametrize("kind, name, what", [
    ("feather", "x.arrow", "an Arrow IPC (Feather) file"), ("feather", "x.feather", "an Arrow IPC (Feather) file"),
    ("orc", "x.orc", "an ORC file"), ("jsonl", "x.jsonl", "JSON Lines (one record a line)"),
    ("json", "x.json", "JSON (an array of records)"),
    ("jsonl", "x.csv", "JSON Lines (one record a line)"), ("feather", "x.tsv", "an Arrow IPC (Feather) file"),
    ("jsonl", "x.parquet", "JSON Lines (one record a line)"), ("orc", "x.parquet", "an ORC file"),
])
def test_a_file_of_another_format_is_refused_with_the_command_that_converts_it(tmp_path, kind, name, what):
    """(same hunt) JSON Lines, JSON, Arrow IPC/Feather and ORC files were refused as "expected one CSV file ... or
    parquet files", with nothing said of what to do; under a .csv name, JSON Lines read as a header '{"id": 1' and
    Feather as a header of binary; under a .parquet name, "text, not parquet: if it is CSV, name it .csv"."""
    import shlex

    src = tmp_path / name
    _write(kind, src)
    with pytest.raises(ValueError) as info:
        read(src, ["text"])
    said = str(info.value)
    assert f"is {what}, which bertfeat does not read (its first bytes say so): convert it to parquet first " in said
    command = shlex.split(said[said.index("(python -c ") + 1:said.rindex(") and pass ")])
    assert command[:2] == ["python", "-c"]
    exec(command[2], {})  # the command as given makes the parquet file it names, which reads as the data
    out = shlex.split(said[said.rindex(") and pass ") + len(") and pass "):-1])[0]
    assert out == str(src.with_suffix(".converted.parquet" if name.endswith(".parquet") else ".parquet"))
    assert read(out, ["text"]).column("text").to_pylist() == ["a cat", "the mat"]


def test_an_avro_file_and_a_text_of_one_line_each_say_what_to_do(tmp_path):
    avro = tmp_path / "x.avro"
    avro.write_bytes(b"Obj\x01\x04\x14avro.codec\x08null")
    with pytest.raises(ValueError, match=re.escape("it is an Avro file, which bertfeat does not read (its first bytes "
                                                   "say so): convert it to parquet first (with Spark")):
        read(avro, ["text"])
    lines = tmp_path / "texts.txt"
    lines.write_text('a cat\n"Great" product\n')
    with pytest.raises(ValueError, match=re.escape(
            "if it holds one text a line and no header, put one first and read it without quoting: (echo text; cat "
            "texts.txt) > texts.tsv, then pass text_cols='text' and quoting='none'.")):
        read(lines, ["text"])


def test_the_spark_engine_stages_a_csv_with_the_quoting_given(tmp_path, monkeypatch):
    """The Spark engine reads a CSV through the local reader (bertfeat.spark stages it as parquet): quoting= reaches
    it there, and the Ray engine, which reads parquet only, refuses it by name."""
    pytest.importorskip("pyspark")
    import bertfeat.ray as bray
    import bertfeat.spark as bspark

    class Seen(Exception):
        pass

    def reader(*args, **kw):
        raise Seen(kw)

    monkeypatch.setattr(bspark, "InputReader", reader)
    with pytest.raises(Seen) as info:
        bspark.embed_files(str(tmp_path / "copy.tsv"), str(tmp_path / "out"), "text", quoting="backslash")
    assert info.value.args[0]["quoting"] == "backslash"
    with pytest.raises(TypeError, match=r"^quoting= applies to CSV input, and the Ray engine reads parquet only; drop "
                                        r"quoting=\.$"):
        bray.embed_parquet(str(tmp_path / "in.parquet"), str(tmp_path / "out"), "text", quoting="none")


@pytest.mark.parametrize("name", ["copy.tsv", "part-000.csv.gz"])
def test_an_export_without_a_header_says_how_to_put_one_first(tmp_path, name):
    """(same hunt) PostgreSQL's COPY (without HEADER), MySQL's INTO OUTFILE and warehouse unloads' parts write no
    header: the first row was read as the names, "column(s) ['text'] not found ...; it has columns ['1', 'a cat']",
    with nothing said of why or what to do."""
    import gzip
    import subprocess

    src = tmp_path / name
    body = "1\ta cat\n2\tthe mat\n" if name.endswith(".tsv") else "1,a cat\n2,the mat\n"
    src.write_bytes(gzip.compress(body.encode()) if name.endswith(".gz") else body.encode())
    with pytest.raises(ValueError) as info:
        read(src, ["text"])
    said = str(info.value)
    assert said.startswith(f"column(s) ['text'] not found in {src}; it has columns ['1', 'a cat']. Its first line "
                           "reads as a row of data, not names: a database's export")
    command = said[said.index("each column: ") + len("each column: "):said.index(", and pass that file")]
    subprocess.run(["bash", "-c", command], check=True)  # the command as given writes the file to pass
    out = command.rsplit("> ", 1)[1]
    assert read(out, ["id", "text"]).to_pydict() == {"id": ["1", "2"], "text": ["a cat", "the mat"]}


def test_an_export_without_a_header_is_told_the_whole_command_naming_every_column(tmp_path, monkeypatch):
    """(a mutation testing hunt, 2026-11-27, session 13) the names past the second, the tab written as \\t (what a
    user reads, where a tab would look like spaces) and the file the command writes were read by no test."""
    import subprocess

    monkeypatch.chdir(tmp_path)
    src = tmp_path / "copy.tsv"  # COPY t TO '/tmp/copy.tsv' (no HEADER): four columns, one NULL
    src.write_text("1\ta cat\tx\t\\N\n2\tthe mat\ty\tz\n")
    with pytest.raises(ValueError) as info:
        read("copy.tsv", ["text"])
    assert str(info.value) == (
        "column(s) ['text'] not found in copy.tsv; it has columns ['1', 'a cat', 'x', '\\\\N']. Its first line reads as "
        "a row of data, not names: a database's export (PostgreSQL's COPY without HEADER, MySQL's INTO OUTFILE, a "
        "warehouse unload's parts) writes no header line. Put one first, naming each column: (printf "
        "'id\\ttext\\tcol3\\tcol4\\n'; cat copy.tsv) > copy-header.tsv, and pass that file; or export the query again "
        "with its header (COPY ... WITH (HEADER), mysql --batch).")
    said = str(info.value)
    subprocess.run(["bash", "-c", said[said.index("(printf"):said.index(", and pass")]], check=True)
    assert read("copy-header.tsv", ["id", "text", "col3", "col4"]).to_pydict() == {
        "id": ["1", "2"], "text": ["a cat", "the mat"], "col3": ["x", "y"], "col4": [None, "z"]}
    three = tmp_path / "unload.csv"
    three.write_text("1,a cat,x\n")
    with pytest.raises(ValueError, match=re.escape("(printf 'id,text,col3\\n'; cat unload.csv) > unload-header.csv,")):
        read("unload.csv", ["text"])


def test_a_backslash_before_a_line_break_is_refused_where_the_quoting_was_not_declared(tmp_path):
    """(same hunt) MySQL's INTO OUTFILE writes a line break inside a value as a backslash and the line break itself:
    in a TSV of one column the text was read as two rows, silently; in one of more columns "Expected 2 columns, got 1"
    with nothing said of why."""
    one = tmp_path / "one.tsv"
    one.write_bytes(b"text\nfirst\ntwo\\\nlines\n")
    with pytest.raises(ValueError) as info:
        read(one, ["text"])
    assert str(info.value).startswith(
        f"{one}: the text of row 1 in column 'text' ends with a backslash ('two\\\\'), as MySQL's INTO OUTFILE writes "
        "one before a line break inside a value: read as written the rest of the text would be a row of its own. Pass "
        "quoting='backslash'")
    assert read(one, ["text"], quoting="backslash").column("text").to_pylist() == ["first", "two\nlines"]
    two = tmp_path / "two.tsv"
    for header, row in ((b"id\ttext", b"1\t"), (b"id\tx\ttext", b"1\ta\t")):  # the last value, of any number
        two.write_bytes(header + b"\n" + row + b"two\\\nlines\n")
        with pytest.raises(ValueError) as info:
            read(two, header.decode().split("\t"))
        assert str(info.value).endswith(
            "The line before it ends with a backslash ('two\\\\'), as exports that escape their delimiters, tabs and "
            "line breaks with a backslash write one before a line break inside a value (MySQL's INTO OUTFILE, "
            "Redshift's UNLOAD ... ESCAPE): pass quoting='backslash'.")


@pytest.mark.parametrize("text, backslash, read_as", [
    ('1\t"a\n2\tb"\n', False, (True, False)),  # a TSV that quotes nothing: two rows, its quotes the texts' own
    ("1\ta\tb\n", False, (False, False)),  # three values, not two
    ("1\ta\n\n2\tb\n", False, (True, False)),  # a blank line is no row
    ("1\ta\\\nb\n", True, (True, True)),  # MySQL's line break inside a value
    ("1\ta\\\r\nb\r\n", True, (True, True)),
    ("1\ta\\\\\nb\n", True, (False, False)),  # an escaped backslash, then the line break: "b" is a row of one value
    ("1\ta\\\tb\t2\n", True, (False, False)),  # an escaped tab: 1, "a<tab>b" and 2, three values
    ("1\ta\\\n", True, (False, True)),  # the file ends inside the row: no export ends so
    ("1\ta\\", True, (False, True)),  # a backslash escaping nothing
])
def test_a_tsvs_lines_are_read_as_rows_with_no_quotes(text, backslash, read_as):
    """(session 14) The readings a TSV whose quoting was not declared is checked against before it is asked which it
    is: its lines with no quotes, as written or with MySQL's backslash escapes, each row of the header's width."""
    assert exports.unquoted_rows(io.StringIO(text, newline=""), 2, backslash) == read_as
    # (a CSV writers hunt, 2026-11-27, session 14; hypothesis) where the lines end with LF, a backslash before a CRLF
    # escapes the CR, and the LF ends the row: "a<CR>", then "b", a row of one value, as MySQL reads it
    crlf = text.endswith("\r\n")
    assert exports.unquoted_rows(io.StringIO(text, newline=""), 2, backslash, crlf) == read_as
    assert exports.unquoted_rows(io.StringIO("1\ta\\\r\nb\n", newline=""), 2, True, cr_ends=False) == (False, False)
    assert exports.unquoted_rows(io.StringIO("1\ta\\\r\n2\tb\n", newline=""), 2, True, cr_ends=False) == (True, False)
    # (CSV dialects, continued, session 15) where they end with a lone CR, a backslash before it escapes the line end
    assert exports.unquoted_rows(io.StringIO("1\ta\\\rb\r", newline=""), 2, True, cr_ends=True) == (True, True)


@pytest.mark.parametrize("backslash", [False, True])
@pytest.mark.parametrize("text, read_as", [
    ("", (True, False)),  # a header alone: no row, none of another width
    ("\n1\ta\n", (True, False)),  # a blank line before the first row is no row
    ("1\ta\n\n2\tb\tc\n", (False, False)),  # the rows after a blank line are read too
    ("1\t\n2\tb\n", (True, False)),  # an empty last value: two values, its tab kept
    ("1\ta \n", (True, False)),
    ("1\ta\n \n", (False, False)),  # a line of one space is a row of one value, as the reader reads it
    ("1\ta\nX\n", (False, False)),
])
def test_unquoted_rows_reads_blank_lines_empty_values_and_short_lines_as_the_reader_does(text, backslash, read_as):
    """exports.unquoted_rows at the edges of a line, with and without MySQL's backslash reading."""
    for crlf in (True, False):
        assert exports.unquoted_rows(io.StringIO(text, newline=""), 2, backslash, crlf) == read_as


def test_a_backslash_ending_a_text_is_refused_only_where_mysqls_reading_gives_rows_of_the_headers_width(tmp_path):
    """(session 14) A TSV written by Python's csv module whose last text ends with a backslash was refused as MySQL's
    escaped line break (hypothesis found it): none ends a file, and a backslash ending a row further up joins it to
    the next into a row of twice the width. Such a file is read as written; where MySQL's reading does give rows of
    the header's width (its text of a tab and a line break), it is still asked, naming the tab a backslash before a
    column's end escapes there. A backslash ending a quoted value is no export's either, and a backslash and n
    further on is read as written."""
    last = tmp_path / "last.tsv"
    last.write_bytes(b"id\ttext\n1\tfirst\n2\tC:\\\n")
    assert read(last, ["id", "text"]).column("text").to_pylist() == ["first", "C:\\"]
    up = tmp_path / "up.tsv"
    up.write_bytes(b"id\ttext\n1\tC:\\\n2\tsecond\n")
    assert read(up, ["id", "text"]).column("text").to_pylist() == ["C:\\", "second"]
    quoted = tmp_path / "quoted.tsv"  # Python's csv.QUOTE_ALL: the backslash before a quote, no line break
    quoted.write_bytes(b'"id"\t"text"\n"1"\t"C:\\"\n"2"\t"x\\ny"\n')
    assert read(quoted, ["id", "text"]).column("text").to_pylist() == ["C:\\", "x\\ny"]
    tab = tmp_path / "tab.tsv"
    tab.write_bytes(b"text\tid\na\\\tb\\\nc\t1\n")  # MySQL's row: "a<tab>b<line break>c", 1
    with pytest.raises(ValueError) as info:
        read(tab, ["id", "text"])
    assert str(info.value).startswith(
        f"{tab}: the text of row 0 in column 'text' ends with a backslash ('a\\\\'), as MySQL's INTO OUTFILE writes "
        "one before a tab inside a value: read as written the rest of the text would be the next column's value. Pass "
        "quoting='backslash'")
    assert read(tab, ["text", "id"], quoting="csv").column("text").to_pylist() == ["a\\", "c"]


@pytest.mark.parametrize("body, line", [("id,text\n1,hello, world\n2,x\n(2 rows)\n", 2),
                                        ("id,text\n1,x\n2,hello, world\n(2 rows)\n\n", 3)])
def test_psqls_unaligned_output_with_a_value_holding_the_delimiter_says_so(tmp_path, body, line):
    """(same hunt) psql -A -F, quotes no value: a text holding a comma gave a row one field wider, told (on the first
    row) to write the file with R's row.names = FALSE, or nothing (further on)."""
    src = tmp_path / "psql.csv"
    src.write_text(body)
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert "write.table" not in str(info.value)
    assert str(info.value).startswith(f"{src} is malformed at line {line}: CSV parse error: ")
    assert str(info.value).endswith(
        "The file ends with psql's row count footer '(2 rows)' at line 4: it is psql's unaligned output (psql -A), "
        "which quotes no value, so a value holding ',' is split into two; export the query as CSV instead: \\copy "
        "(SELECT ...) TO 'file.csv' WITH (FORMAT csv, HEADER) in psql, or psql --csv -c 'SELECT ...' > file.csv, which "
        "quote each value holding a comma and leave out the footer.")


def test_a_quote_escaped_with_a_backslash_says_how_to_read_a_mysql_export(tmp_path):
    """(same hunt) MySQL's INTO OUTFILE ... ENCLOSED BY '"' escapes a quote inside a value as \\" (its default
    ESCAPED BY '\\\\'): refused as a quoted value with text after its closing quote, told to double its quotes, with
    nothing said of MySQL or of how to export it so that bertfeat reads it. (Session 15: told to pass
    quoting='csv-backslash', which reads it; before, to export the query again with mysql --batch.)"""
    src = tmp_path / "outfile.csv"
    src.write_bytes(b'id,text\n1,\\N\n2,"a \\"quoted\\" word"\n')
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value).endswith(
        "or remove a stray quote at line 3. A quote there is escaped with a backslash (\\\"), which CSV does not do (it "
        "doubles a quote inside a quoted value): R's write.table() writes one so by default (qmethod = \"escape\"): "
        "write the file with write.csv() or write.table(..., qmethod = \"double\"); MySQL's SELECT ... INTO OUTFILE ... "
        "ENCLOSED BY '\"' does too (its default ESCAPED BY, a backslash, escapes quotes and backslashes): pass "
        "quoting='csv-backslash', which reads its escapes as MySQL's LOAD DATA does; so do pandas' to_csv and Python's "
        "csv module with an escapechar and doublequote off, which escape a text's backslash too: pass "
        "quoting='csv-backslash' for theirs as well, or write the file again without an escapechar.")
    # what the refusal says to do (session 15; before, to export the query again with mysql --batch)
    assert read(src, ["id", "text"], quoting="csv-backslash").column("text").to_pylist() == [None, 'a "quoted" word']


@pytest.mark.parametrize("sep", [",", "\t", ";"])
def test_a_quote_escaped_with_a_backslash_in_a_value_not_quoted_is_refused_not_read_with_its_backslash(tmp_path, sep):
    """(found by a CSV writers hunt, 2026-11-27, session 14) pandas' to_csv(escapechar='\\\\', doublequote=False) and
    Python's csv module with an escapechar write a text's quote as \\" and quote only a value holding the delimiter or a
    line break: 'say "hi"' was written unquoted as say \\"hi\\", and read as written, backslashes and all, silently
    (CSV writers double a quote, and quote the value: no other writes \\" unquoted). Refused where the quoting was not
    declared, naming the line and what to do; quoting='csv' reads the backslashes as the texts' own, and a file that
    quotes no value (quoting=csv.QUOTE_NONE) reads right under quoting='backslash'."""
    import csv

    import pandas as pd

    frame = pd.DataFrame({"id": ["1", "2", "3"], "text": ["plain", 'say "hi"', "C:\\dir"]})
    src = tmp_path / ("pandas.tsv" if sep == "\t" else "pandas.csv")
    frame.to_csv(src, index=False, sep=sep, escapechar="\\", doublequote=False)
    assert b'say \\"hi\\"' in src.read_bytes()
    delimiter = ";" if sep == ";" else None
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"], delimiter=delimiter)
    assert str(info.value) == (
        f"{src}: line 3 holds a quote escaped with a backslash (\\\") in a value that is not quoted, as pandas' "
        "to_csv and Python's csv module write a quote with an escapechar and doublequote off (CSV quotes such a value "
        "and doubles the quote): read as written the text would keep the backslash. Pass quoting='csv-backslash', "
        "which reads a backslash as escaping the next character (those writers escape a text's backslash too), or "
        "write the file again without an escapechar (or as parquet); if it quotes no value (csv.QUOTE_NONE), pass "
        "quoting='backslash'; if the backslashes are the texts' own, pass quoting='csv'.")
    assert read(src, ["id", "text"], delimiter=delimiter, quoting="csv").column("text").to_pylist() == [
        "plain", 'say \\"hi\\"', "C:\\\\dir"]  # as written, as asked
    assert read(src, ["id", "text"], delimiter=delimiter, quoting="csv-backslash").column("text").to_pylist() == [
        "plain", 'say "hi"', "C:\\dir"]  # as the frame held them (session 15's reading)
    frame.to_csv(src, index=False, sep=sep, escapechar="\\", quoting=csv.QUOTE_NONE)
    assert read(src, ["id", "text"], delimiter=delimiter, quoting="backslash").column("text").to_pylist() == [
        "plain", 'say "hi"', "C:\\dir"]
    frame.loc[3] = ["4", f'a "b"{sep} c']  # quoted for its delimiter, its quotes escaped: refused as MySQL's, pandas named
    frame.to_csv(src, index=False, sep=sep, escapechar="\\", doublequote=False)
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"], delimiter=delimiter, quoting="csv")
    # (found by a docs against the program hunt, 2026-11-27, session 15) it said only to write the file again without
    # an escapechar, where quoting='csv-backslash' reads it as the frame held it (as docs/cli.md says)
    assert str(info.value).endswith(
        "so do pandas' to_csv and Python's csv module with an escapechar and doublequote off, which escape a text's "
        "backslash too: pass quoting='csv-backslash' for theirs as well, or write the file again without an "
        "escapechar."), str(info.value)
    assert read(src, ["id", "text"], delimiter=delimiter, quoting="csv-backslash").column("text").to_pylist() == [
        "plain", 'say "hi"', "C:\\dir", f'a "b"{sep} c']
    # further into the file than pyarrow reads at the start (read blocks made small): refused before its rows
    from bertfeat import readers

    far = tmp_path / "far.csv"
    far.write_text("id,text\n" + "".join(f"{i},row {i}\n" for i in range(20_000)) + 'x,say \\"hi\\"\n')
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(readers, "BLOCK_BYTES", 1 << 12)
        reader = InputReader(str(far), ["id", "text"], 1000, ["text"])
        delivered = []
        with pytest.raises(ValueError, match=r"far.csv: line 20002 holds a quote escaped with a backslash"):
            for batch in reader.batches():
                delivered.extend(batch.column("id").to_pylist())
    assert "x" not in delivered and 0 < len(delivered) < 20_000
    # a quote after a backslash where CSV writers put one: inside a quoted value, or opening one after a delimiter
    ok = tmp_path / "ok.csv"
    ok.write_text('id,text\n1,"a \\"""\n2,\\\n3,"x\\"\n')
    assert read(ok, ["id", "text"]).column("text").to_pylist() == ['a \\"', "\\", "x\\"]


@pytest.mark.parametrize("before, names, end", [
    ("", ["t"], "\n"), ("", ["id"], "\n"), ("", ["id", "text"], "\n"), ("\n\n", ["id", "text"], "\n"),
    ("\n", ["a", "t"], "\n"), ("\r\n", ["t"], "\r\n"), ("\ufeff\n", ["t"], "\n"), ("\ufeff", ["id"], "\n")])
def test_the_line_a_refusal_names_counts_blank_lines_before_the_header_and_a_header_of_one_or_two_letters(
        tmp_path, before, names, end):
    """(found by a mutation testing hunt, 2026-11-27, session 17) The line of a quote escaped with a backslash, and
    of rows read into one value, was counted from the problem's byte offset after a byte order mark was looked for in
    the file's first three bytes: where there was none, the line ends among those three bytes were never counted, so a
    file opening with blank lines (which the reader skips) or with a header of one or two letters ("t", "id") was told
    a line one or two before the one holding the problem."""
    blank = before.count("\n")

    def row(value):
        return ",".join(["1"] * (len(names) - 1) + [value])

    src = tmp_path / "data.csv"
    src.write_bytes((before + ",".join(names) + end + row("plain") + end + row('say \\"hi\\"') + end).encode())
    with pytest.raises(ValueError, match=rf"data.csv: line {blank + 3} holds a quote escaped with a backslash"):
        read(src, names)
    if len(names) == 2:  # rows read into one value: the line of its quote and the line of its tab
        tsv = tmp_path / "data.tsv"
        tsv.write_bytes((before + "\t".join(names) + end + '1\t"a' + end + 'b\tc"' + end + "2\tx" + end).encode())
        with pytest.raises(ValueError, match=rf"data.tsv holds a quoted value opened at line {blank + 2} that holds a "
                                             rf"tab after a line break \(at line {blank + 3}\)"):
            read(tsv, names)


@pytest.mark.parametrize("name", ["write_table.csv", "write_table.tsv"])
def test_a_quote_rs_write_table_escapes_with_a_backslash_says_how_to_write_it_from_r(tmp_path, name):
    """(found by a CSV writers hunt, 2026-11-27, session 14) R's write.table() escapes a quote inside a quoted value
    as \\" by default (qmethod = "escape"; write.csv() doubles it): its file was refused naming MySQL's INTO OUTFILE
    alone, told to export a query again, with nothing said of R."""
    sep = "\t" if name.endswith(".tsv") else ","
    src = tmp_path / name  # write.table(df, name, sep = sep, row.names = FALSE), as R 4 writes it
    src.write_text(f'"id"{sep}"text"\n1{sep}"plain"\n2{sep}"say \\"hi\\""\n3{sep}"C:\\dir"\n4{sep}NA\n')
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    said = str(info.value)
    assert said.startswith(f"{src} is malformed at line 3: a quoted value (opened at line 3) has more text"), said
    assert ("R's write.table() writes one so by default (qmethod = \"escape\"): write the file with write.csv() or "
            "write.table(..., qmethod = \"double\")") in said
    src.write_text(f'"id"{sep}"text"\n1{sep}"plain"\n2{sep}"say ""hi"""\n3{sep}"C:\\dir"\n4{sep}NA\n')  # so written
    assert read(src, ["id", "text"]).column("text").to_pylist() == ["plain", 'say "hi"', "C:\\dir", None]

    # R's writing of the text a\"b, "a\\"b": an escaped backslash and a closing quote under quoting='csv-backslash'
    src.write_text(f'"id"{sep}"text"\n1{sep}"a\\\\"b"\n')
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"], quoting="csv-backslash")
    assert str(info.value).endswith(
        "or remove a stray quote at line 2. Under quoting='csv-backslash' a backslash escapes the next character, so "
        "a backslash before a quote that closes its value is escaped too (\\\\\"): R's write.table() escapes a quote "
        "and no backslash (qmethod = \"escape\"): write the file with write.csv() or write.table(..., qmethod = "
        "\"double\") and read it with no quoting."), str(info.value)


@pytest.mark.parametrize("writer", ["write_table_tab", "write_table_comma", "write_table_line_break", "polars_comma",
                                    "polars_line_break"])
def test_a_file_that_quotes_nothing_split_at_a_values_delimiter_or_line_break_says_why(tmp_path, writer):
    """(found by a CSV dialects hunt, 2026-11-27, session 15) R's write.table(quote = FALSE) and polars'
    write_csv(quote_style='never') write a value holding the delimiter or a line break as it is: the file was refused
    with pyarrow's bare 'Expected 2 columns, got 3' and nothing said of why or what to do. The refusal now says that
    no value up to that line is quoted, what that does to such a value, and how to write the file again; a file that
    quotes a value before its ragged row is told nothing of it."""
    import polars as pl

    sep = "\t" if writer == "write_table_tab" else ","
    texts = {"write_table_tab": "has\ttab", "write_table_comma": "a, b", "write_table_line_break": "two\nlines",
             "polars_comma": "a, b", "polars_line_break": "two\nlines"}
    src = tmp_path / ("out.tsv" if sep == "\t" else "out.csv")
    if writer.startswith("polars"):
        pl.DataFrame({"id": ["1", "2", "3"], "text": ["plain", texts[writer], "c"]}).write_csv(src, quote_style="never")
    else:  # write.table(df, name, sep = sep, quote = FALSE, row.names = FALSE), as R 4 writes it
        src.write_text(f"id{sep}text\n1{sep}plain\n2{sep}{texts[writer]}\n3{sep}c\n")
    assert b'"' not in src.read_bytes()
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    line, got = (4, "got 1: lines") if writer.endswith("line_break") else (3, f"got 3: 2{sep}{texts[writer]}")
    assert str(info.value) == (
        f"{src} is malformed at line {line}: CSV parse error: Expected 2 columns, {got}. No value up to that line is "
        f"quoted, so where a value there holds the delimiter ({'a tab' if sep == chr(9) else repr(sep)}) or a line "
        "break, it was split: writers told to "
        "quote nothing write such a value as it is (R's write.table() with quote = FALSE, polars' write_csv() with the "
        "quote style never), and no reader can tell where it ends. Write the file again quoting such values (R's "
        "write.csv(), or write.table() with its default quote = TRUE; polars' write_csv() with its default quote "
        "style), or as parquet; or, if the row lacks or has a field too many, mend it.")
    if writer == "write_table_tab":  # read with quoting='none' (cut and paste's TSV): told so, whatever it quotes
        with pytest.raises(ValueError) as info:
            read(src, ["id", "text"], quoting="none")
        assert str(info.value).endswith(
            f"{got}. Under quoting='none' no value is quoted, so where a value there holds the delimiter (a tab) or a "
            "line break, it was split: writers told to quote nothing write such a value as it is (R's write.table() "
            "with quote = FALSE, polars' write_csv() with the quote style never), and no reader can tell where it "
            "ends. Write the file again quoting such values (R's write.csv(), or write.table() with its default quote "
            "= TRUE; polars' write_csv() with its default quote style) and read it without quoting='none', or as "
            "parquet; or, if the row lacks or has a field too many, mend it."), str(info.value)
    src.write_text(f'id{sep}text\n1{sep}"plain"\n2{sep}{texts[writer]}\n3{sep}c\n')  # a quote before: no such hint
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value).endswith(got), str(info.value)


@pytest.mark.parametrize("sep", [",", "\t"])
def test_a_file_that_quotes_nothing_says_why_where_a_text_holds_a_quote_inside_it(tmp_path, sep):
    """(found by a CSV writers hunt, 2026-11-27, session 17) session 15 told a file that quotes nothing (polars'
    write_csv(quote_style='never'), R's write.table(quote = FALSE)) why its row was ragged only where the file held no
    quote at all: a review's 'a 12" pizza' or 'said "hi"' before the split row, a quote inside a text and no value
    quoted, left the bare 'Expected 2 columns, got 3'. A value that begins with a quote is what quotes it."""
    import polars as pl

    src = tmp_path / ("out.tsv" if sep == "\t" else "out.csv")
    split = "a\tb" if sep == "\t" else "a, b"
    texts = ['a 12" pizza "hot" ok', split, "c"]
    pl.DataFrame({"id": ["1", "2", "3"], "text": texts}).write_csv(src, quote_style="never", separator=sep)
    assert src.read_bytes().count(b'"') == 3
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value) == (
        f"{src} is malformed at line 3: CSV parse error: Expected 2 columns, got 3: 2{sep}{split}" + split_unquoted(sep))
    src.write_text(f'id{sep}text\n1{sep}"a 12"" pizza"\n2{sep}{split}\n3{sep}c\n')  # a quoted value: no such hint
    with pytest.raises(ValueError) as info:
        read(src, ["id", "text"])
    assert str(info.value).endswith(f"Expected 2 columns, got 3: 2{sep}{split}"), str(info.value)
