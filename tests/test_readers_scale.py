"""bertfeat.readers at scale: what reading a CSV file holds in memory, and how often it reads the file, where a value
is long or the file is large. Each test reads a small file with a small read block, and counts what the reader
holds (tracemalloc, which sees Python's allocations) or opens, never the time it takes. No model."""

import tracemalloc

import pyarrow as pa

from bertfeat import quotes
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


class _Searched:
    """A compiled pattern that counts the bytes it is asked to search."""

    def __init__(self, pattern):
        self.pattern, self.searched = pattern, 0

    def search(self, data, pos=0, endpos=None):
        self.searched += (len(data) if endpos is None else endpos) - pos
        return self.pattern.search(data, pos, len(data) if endpos is None else endpos)

    def match(self, data, pos=0, endpos=None):
        self.searched += (len(data) if endpos is None else endpos) - pos
        return self.pattern.match(data, pos, len(data) if endpos is None else endpos)


def test_a_tsvs_quoted_values_are_watched_for_rows_read_into_them_once_a_byte(monkeypatch):
    """In a TSV whose quoting was not declared, each quoted value is watched for a line break, a field and a tab (rows
    read into it: :attr:`QuoteScanner.rows_joined`). The watch searched the line since the value's last line break
    again at each quote: a JSON text (a doubled quote every 7 bytes) with a line break every 4.5 KB was searched 300
    times over, a 34 MB TSV of them read in 101 s (its quotes' scan alone 4.2 s for 3 MB, 0.12 s unwatched)."""
    counted = _Searched(quotes._RECORD_START)
    monkeypatch.setattr(quotes, "_RECORD_START", counted)
    line = '{""k"": ""v"", ' * 300 + "\n"
    data = ("id\ttext\n" + "".join(f'{i}\t"{line * 4}"\n' for i in range(50))).encode()
    scanner = quotes.QuoteScanner("\t", watch_rows=True)
    for at in range(0, len(data), 1 << 16):
        scanner.feed(data[at:at + (1 << 16)])
    assert scanner.rows_joined is None and not scanner.ends_open
    assert counted.searched <= 2 * len(data), counted.searched / len(data)  # was 300 times its bytes
    # (the quote that opened it, the tab): a first field of up to 4,095 bytes after the line break, quotes left out
    for text, joined in (('a\t"x\n1\tb"\n', (2, 6)), ('a\t"x\n\tb"\n', None), ('a\t"x\n""1\tb"\n', (2, 8)),
                         ('a\t"x\n' + "y" * 4096 + '""\t"\n', None), ('a\t"x\n' + "y" * 4095 + '""\t"\n', (2, 4102)),
                         ('a\t"x\n' + "y" * 4096 + '\t"\n', None), ('a\t"x\r\n""\t\ny\t"\n', (2, 11))):
        for piece in (1, 3, len(text)):  # fed whole, and split anywhere
            scanner = quotes.QuoteScanner("\t", watch_rows=True)
            raw = text.encode()
            for at in range(0, len(raw), piece):
                scanner.feed(raw[at:at + piece])
            assert scanner.rows_joined == joined, (text[:12], piece)


def test_a_text_that_is_a_columns_name_is_made_sure_of_reading_no_further_than_its_rows(tmp_path, monkeypatch):
    """A text equal to a column's name (``ID``) in a job that reads only the text column may be a repeated header
    (files joined with cat): making sure re-read the whole file with Python's csv module, once, whatever row held it
    (5M short rows: 0.99 s -> 7.7 s). Now it reads as far as the rows delivered, and on from there when a later
    batch asks: each line once, and no line past the rows read."""
    from bertfeat import csv_problems, readers

    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 16)  # batches of some 5,000 rows
    lines = []
    real = csv_problems._csv_lines

    def counted(fh, *ends):
        for line in real(fh, *ends):
            lines.append(1)
            yield line

    monkeypatch.setattr(csv_problems, "_csv_lines", counted)
    src = tmp_path / "a.csv"
    src.write_text("id,text\n1,ID\n" + "".join(f"{i},row {i}\n" for i in range(2, 200_001)))
    assert sum(b.num_rows for b in csv_reader(src, ["text"]).batches()) == 200_000
    assert 0 < len(lines) < 20_000  # the first batch's rows; was 200,001, the whole file
    # a name in every batch: read on from where it stopped, each line once (not again from the header each time)
    lines.clear()
    src.write_text("id,text\n" + "".join(f"{i},{'ID' if i % 1000 == 0 else 'row'}\n" for i in range(200_000)))
    assert sum(b.num_rows for b in csv_reader(src, ["text"]).batches()) == 200_000
    assert len(lines) == 200_001
    # and a header repeated past such a text is refused at its line, before the rows that hold it
    lines.clear()
    src.write_text("id,text\n1,ID\n" + "".join(f"{i},row\n" for i in range(2, 100_000)) + "id,text\n0,row\n")
    delivered = []
    try:
        for batch in csv_reader(src, ["text"]).batches():
            delivered.append(batch.num_rows)
        raise AssertionError("not refused")
    except ValueError as exc:
        assert f"{src} repeats its header at line 100001 " in str(exc)
    assert 0 < sum(delivered) < 99_999 and len(lines) == 100_001


def test_a_long_value_grows_no_block_for_the_rest_of_the_file(tmp_path, monkeypatch):
    """pyarrow refuses a record across three read pieces: a long value made the read start again with a block 8
    times bigger, for the rest of the file, which pyarrow reads 32 blocks ahead (a 25 MB text, then 140 MB of short
    rows: 64 MB blocks, a peak of 593 MB; 194 MB without the text). No record ends in a piece with no line end, nor
    in one inside a quoted value that holds no quote: the stream reads on to one where a record may end, so one piece
    holds the value, and the rows after it come in blocks as before."""
    from bertfeat import readers

    monkeypatch.setattr(readers, "BLOCK_BYTES", 1 << 16)
    big = "lorem ipsum, dolor " * 50_000  # 950 KB, some 15 blocks
    src = tmp_path / "a.csv"
    plain, lines = big.replace(",", ""), big.replace(", ", "\r\n")  # one not quoted; one of many lines, quoted
    src.write_text(f'id,text\n1,"{big}"\n2,{plain}\n3,"{lines}"\n'
                   + "".join(f"{i},row {i}\n" for i in range(4, 200_000)), newline="")
    blocks, pieces = [], {}  # pieces: each file object's, in the order the reads opened them
    real_open, real_read = InputReader._open_csv, readers._CountingFile.read
    monkeypatch.setattr(InputReader, "_open_csv", lambda self, block=readers.BLOCK_BYTES: (
        blocks.append(block), real_open(self, block))[1])
    # keyed by file: pyarrow's read-ahead of the schema's read may still be reading its file once the rows' is open
    monkeypatch.setattr(readers._CountingFile, "read", lambda self, n=-1: pieces.setdefault(self, []).append(
        real_read(self, n)) or pieces[self][-1])
    table = pa.Table.from_batches(list(csv_reader(src, ["id", "text"]).batches()))
    assert table.column("text").to_pylist()[:4] == [big, plain, lines, "row 4"] and table.num_rows == 199_999
    assert blocks == [1 << 16] * 2  # the schema's read and the rows' read: never again with a bigger block
    sizes = [len(p) for p in list(pieces.values())[-1]]  # the pieces of the rows' read
    assert sorted(sizes)[-3] > len(plain) and sorted(sizes)[-4] <= 1 << 16  # the three values whole, each in one piece
