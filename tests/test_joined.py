"""bertfeat.joined: CSV files joined with cat, each file's header left as a line of data. No model: these read only.

(found by a files hunt, 2026-11-27, session 11) ``cat a.csv b.csv > all.csv`` left b's header as a row: its text
column's name (``text``) was embedded beside the id ``id``, without a word; under ``--infer-types`` a numeric id
column failed with advice about types; files whose columns came in other orders were read into each other's
columns."""

import re

import pyarrow as pa
import pytest

from bertfeat import joined
from bertfeat.readers import InputReader


def reader(path, columns, chunk_rows=1000, **kw):
    kw.setdefault("infer_types", False)
    return InputReader(str(path), columns, chunk_rows, [columns[-1]], **kw)


def rows(path, columns, **kw):
    r = reader(path, columns, **kw)
    return pa.Table.from_batches(list(r.batches()), schema=r.schema).to_pylist()


def refusal(path, columns, **kw):
    """The refusal of reading ``path`` to the end, and the rows delivered before it."""
    delivered = []
    with pytest.raises(ValueError) as info:
        for batch in reader(path, columns, **kw).batches():
            delivered.append(batch.num_rows)
    return re.sub(r"(CSV parse error|In CSV column #\d+): Row #\d+: ", r"\1: ", str(info.value)), sum(delivered)


def same_order(path, line):
    return (f"{path} repeats its header at line {line} (as joining CSV files with cat leaves each file's header), "
            "which would be read as a row of data: join the files again keeping the first one's header only "
            "(awk 'FNR > 1 || NR == 1' a.csv b.csv > all.csv), or remove that line and any other repeating the "
            "header.")


@pytest.mark.parametrize("content, columns, line", [
    (b"id,text\n1,a\n2,b\nid,text\n3,c\n", ["id", "text"], 4),
    (b"id,text\r\n1,a\r\nid,text\n3,c\n", ["text"], 3),  # one file CRLF, the other LF; the id column not read
    # Excel's "CSV UTF-8", each file with its byte order mark
    (b"\xef\xbb\xbfid,text\r\n1,a\r\n\xef\xbb\xbfid,text\r\n3,c\r\n", ["id", "text"], 3),
    # R's write.csv: names quoted, row names under an empty name; blank lines between the files
    (b'"","id","text"\n"1",1,"a"\n\n\n"","id","text"\n"1",3,"c"\n', ["id", "text"], 5),
    # pandas' to_csv: its index under an empty name, read by --id-col ''
    (b",text\n0,a\n,text\n0,c\n", ["", "text"], 3),
    (b'id,text\n1,"two\nlines"\nid,text\n3,c\n', ["id", "text"], 4),  # lines counted as an editor shows them
    (b"sep=;\nid;text\n1;a\nid;text\n", ["id", "text"], 4),
])
def test_a_header_repeated_further_on_is_refused_naming_its_line(tmp_path, content, columns, line):
    src = tmp_path / "all.csv"
    src.write_bytes(content)
    assert refusal(src, columns) == (same_order(src, line), 0)


def test_a_repeated_header_past_the_first_chunks_is_refused_before_the_rows_that_hold_it(tmp_path):
    src = tmp_path / "all.tsv"
    one = "id\ttext\n" + "".join(f"{i}\trow {i}\n" for i in range(150_000))  # past pyarrow's 1 MB read block
    src.write_text(one + one.replace("id\ttext\n", "id\ttext\r\n", 1))
    message, delivered = refusal(src, ["id", "text"], chunk_rows=10_000)
    assert message == same_order(src, 150_002)
    assert 0 < delivered <= 150_000  # the rows before it, never the header's row


def test_gzip_files_joined_with_cat_repeat_their_header_as_plain_ones_do(tmp_path):
    import gzip

    src = tmp_path / "all.csv.gz"
    src.write_bytes(gzip.compress(b"id,text\n1,a\n") + gzip.compress(b"id,text\n2,b\n"))  # two gzip members
    assert refusal(src, ["id", "text"]) == (same_order(src, 3), 0)


def test_under_infer_types_a_repeated_header_is_refused_as_such_not_as_a_type_that_does_not_hold(tmp_path):
    src = tmp_path / "all.csv"
    one = "id,when,text\n" + "".join(f"{i},2024-01-{i % 28 + 1:02d},row {i}\n" for i in range(100_000))
    src.write_text(one + one)  # the second header past the first block, which typed id and when
    for columns in (["id", "text"], ["when", "text"]):
        assert refusal(src, columns, infer_types=True)[0] == same_order(src, 100_002)
    # in the first block: id and when read as text, refused as the default reading refuses it
    src.write_text("id,text\n1,a\nid,text\n2,b\n")
    assert refusal(src, ["id", "text"], infer_types=True) == (same_order(src, 3), 0)


def test_a_header_repeated_in_another_order_says_the_rows_after_it_would_mix_columns(tmp_path):
    src = tmp_path / "all.csv"
    src.write_bytes(b"id,text,label\n1,a,0\ntext,label,id\nc,1,3\n")
    assert refusal(src, ["id", "text"]) == (
        f"{src} repeats its header's names in another order at line 3 (['text', 'label', 'id'], where the header has "
        "['id', 'text', 'label']), as joining with cat files whose columns come in other orders leaves them: every "
        "row after it is in that line's order, and would be read into the wrong columns. Join the files by column "
        "name instead (pandas.concat of each file's pandas.read_csv, then to_csv), or put their columns in one "
        "order first.", 0)


def test_rows_that_hold_header_names_but_are_no_header_are_read_as_written(tmp_path):
    src = tmp_path / "a.csv"
    # the columns read hold their names, another does not; names twice; a name with more than spaces or case
    src.write_bytes(b'id,text,n\n1,a,2\nid,text,3\ntext,text,n\nid," texts",n\n')
    assert rows(src, ["id", "text"]) == [{"id": "1", "text": "a"}, {"id": "id", "text": "text"},
                                         {"id": "text", "text": "text"}, {"id": "id", "text": " texts"}]
    # a file of one column: a text that is its name is a text (no header can be told from it)
    src.write_bytes(b"word\ncat\nword\n")
    assert rows(src, ["word"]) == [{"word": "cat"}, {"word": "word"}]


def test_the_file_is_searched_once_whatever_number_of_rows_may_repeat_the_header(tmp_path, monkeypatch):
    src = tmp_path / "a.csv"
    src.write_text("id,text,n\n" + "id,text,0\n" * 5 + "".join(f"{i},t,{i}\n" for i in range(20)) + "id,text,1\n")
    opened = []
    real = joined.Watch._start

    def counting(self):
        opened.append(1)
        return real(self)

    monkeypatch.setattr(joined.Watch, "_start", counting)
    assert len(rows(src, ["id", "text"], chunk_rows=3)) == 26
    assert opened == [1]


@pytest.mark.parametrize("content, columns, line, names", [
    (b"id,text\n1,a\nID,Text\n3,c\n", ["id", "text"], 3, ["ID", "Text"]),  # another export's case
    (b"id,text\n1,a\nid , text\n3,c\n", ["text"], 3, ["id ", " text"]),  # spaces around the delimiter
    (b'id,text,n\n1,a,2\nid," Text\t",N\n3,c,4\n', ["id", "text"], 3, ["id", " Text\t", "N"]),
    (b"\xef\xbb\xbfid,text\n1,a\n\xef\xbb\xbfId ,text\n", ["id", "text"], 3, ["Id ", "text"]),
])
def test_a_header_repeated_in_another_case_or_with_spaces_is_refused_showing_how_it_is_written(tmp_path, content,
                                                                                              columns, line, names):
    """(found by a hunt, session 11) A repeated header was found only as written: another file's export saying
    ``Text`` or ``id , text`` was read as a row of data (its text embedded), without a word."""
    src = tmp_path / "all.csv"
    src.write_bytes(content)
    header = ["id", "text", "n"] if len(names) == 3 else ["id", "text"]
    assert refusal(src, columns) == (same_order(src, line).replace(
        f"at line {line} (", f"at line {line}, written otherwise ({names}, where the header has {header}) ("), 0)


def excel_line(path, line, sep):
    return (f"{path} holds Excel's delimiter line '{sep}' again at line {line} (as joining with cat files exported "
            "for Excel leaves each file's first line), which would be read as a row of data (a missing text), the "
            "header after it too: join the files again keeping the first one's 'sep=' line and header only (awk "
            "'FNR > 2 || NR <= 2' a.csv b.csv > all.csv, where each file starts with both), or remove that line and "
            "the header after it.")


@pytest.mark.parametrize("content, columns, line, sep", [
    (b"sep=;\nid;text\n1;a\nsep=;\nid;text\n3;c\n", ["id", "text"], 4, "sep=;"),
    (b"sep=;\nid;text\n1;a\nsep=;\nid;text\n3;c\n", ["text"], 4, "sep=;"),  # read as a missing text before
    # Excel's "CSV UTF-8" with CRLF, three columns: the line is too short a row, a parse error before
    (b"\xef\xbb\xbfsep=;\r\nid;text;n\r\n1;a;1\r\n\xef\xbb\xbfsep=;\r\nid;text;n\r\n3;c;2\r\n", ["text"], 4, "sep=;"),
    (b"id,text\nsep=,\nid,text\n3,c\n", ["id", "text"], 2, "sep=,"),  # the first file had none
    (b"id\ttext\n1\ta\nsep=\t\nid\ttext\n", ["text"], 3, "sep=\t"),  # (read as a TSV file: all.tsv)
])
def test_excels_delimiter_line_repeated_further_on_is_refused_naming_its_line(tmp_path, content, columns, line, sep):
    """(found by a hunt, session 11) Files exported for Excel, joined with cat, leave each file's ``sep=;`` line: it
    was read as a row (an id ``sep=`` and a missing text), which stopped a job as a missing text with no word of
    why, or, in a file of three columns, as a malformed row."""
    src = tmp_path / ("all.tsv" if sep == "sep=\t" else "all.csv")
    src.write_bytes(content)
    assert refusal(src, columns) == (excel_line(src, line, sep), 0)


def test_a_text_that_holds_sep_on_a_line_of_its_own_is_read_as_written(tmp_path):
    src = tmp_path / "a.csv"
    src.write_bytes(b'id,text\n1,"a\nsep=,"\n2,"sep=x"\n3,c\n')
    assert rows(src, ["id", "text"]) == [{"id": "1", "text": "a\nsep=,"}, {"id": "2", "text": "sep=x"},
                                         {"id": "3", "text": "c"}]


def test_a_text_longer_than_pythons_csv_field_limit_hides_no_repeated_header(tmp_path):
    """(found by a files at scale hunt, 2026-11-27, session 15) The re-read that makes sure of a repeated header ran
    Python's csv module at its field limit (131,072 characters): a text longer than that, anywhere before the header
    (or in the rows after a text that is a column's name), ended the re-read as a problem it left to the read proper,
    which read the header as a row of data, without a word."""
    src = tmp_path / "all.csv"
    src.write_text("id,text\n1," + "x" * 200_000 + "\n2,b\nid,text\n3,c\n")
    for columns in (["id", "text"], ["text"]):
        assert refusal(src, columns) == (same_order(src, 4), 0)
    src.write_text("id,text\n1,ID\n2," + "x" * 200_000 + "\n3,c\nid,text\n4,d\n")  # a text that is a name, first
    assert refusal(src, ["text"])[0] == same_order(src, 5)


@pytest.mark.parametrize("quoting, sep", [("backslash", "\t"), ("csv-backslash", ",")])
def test_escaped_exports_of_lone_cr_lines_joined_with_cat_are_refused_at_the_second_header(tmp_path, quoting, sep):
    """(found by a CSV leftovers hunt, 2026-11-27, session 16) two exports of lines ending with a lone CR, each
    holding a text's line feed as written (MySQL's INTO OUTFILE ... LINES TERMINATED BY '\\r', pandas' to_csv with
    lineterminator='\\r' and an escapechar), joined with cat: the re-read that makes sure of a repeated header gave
    Python's csv module the file split at that LF, counted the text's two halves as two rows, and stopped one row
    short of the second file's header, which was read as a row of data (the text 'text'), without a word. It now
    splits lines as the reader does (bertfeat.line_ends); the line named is the one an editor shows (the LF ends
    one)."""
    one, other = f"id{sep}text\r1{sep}two\nlines\r2{sep}ok\r", f"id{sep}text\r3{sep}z\r"
    src = tmp_path / ("all.tsv" if sep == "\t" else "all.csv")
    src.write_bytes((one + other).encode())
    assert refusal(src, ["id", "text"], quoting=quoting) == (same_order(src, 5), 0)
    src.write_bytes(one.encode())  # one export alone: read as written
    assert rows(src, ["id", "text"], quoting=quoting) == [{"id": "1", "text": "two\nlines"}, {"id": "2", "text": "ok"}]
