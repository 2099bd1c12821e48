"""bertfeat.readers at scale: what reading a CSV file holds in memory, and how often it reads the file, where a value
is long or the file is large. Each test reads a small file with a small read block, and counts what the reader
holds (tracemalloc, which sees Python's allocations) or opens, never the time it takes. No model."""

import tracemalloc

from bertfeat.readers import InputReader


def csv_reader(path, columns, chunk_rows=1000, text_cols=None, **kw):
    return InputReader(str(path), columns, chunk_rows, text_cols or [columns[-1]], **kw)


def test_the_header_check_holds_no_value_of_the_first_row_whole(tmp_path):
    """Whether a CSV file has rows after its header is the first character past it that ends no line: parsing the
    whole first record to tell held it in Python's csv module (4 bytes a character) and its line beside it, 1.2 GB
    of memory for a first text of 200 MB, more than pyarrow's whole read of it."""
    big = "lorem ipsum dolor sit amet " * 150_000  # 4 MB
    for name, body in (("quoted.csv", f'1,"{big}"\n2,b\n'), ("line_breaks.csv", f'1,"{big}\n{big}"\n'),
                       ("unquoted.csv", f"1,{big}\n")):
        src = tmp_path / name
        src.write_text("id,text\n" + body)
        reader = csv_reader(src, ["id", "text"])
        assert reader.has_rows
        tracemalloc.start()
        try:
            assert reader._csv_header() == ["id", "text"] and reader.has_rows
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20, (name, peak)  # was 20 MB and more: the 4 MB line, and 16 MB in the csv module
    for body, rows in (("", False), ("\n\r\n\r\n", False), ("\n\n\r\n1,a", True), ('\n"",""\n', True), ("\n,\n", True)):
        src = tmp_path / "few.csv"
        src.write_text("id,text" + body)
        assert csv_reader(src, ["id", "text"]).has_rows is rows, body
