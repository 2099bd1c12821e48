"""What the text exports of database clients leave in a file that is no CSV data: psql's row count footer
(``(3 rows)`` after ``psql -A -F,``'s rows), and a table drawn for the terminal (psql's aligned and expanded output,
the ``+----+`` borders of the mysql client and sqlite3's .mode table, the box drawing of DuckDB's CLI, sqlite3's .mode
box and psql's unicode line style, sqlite3's .mode column) or for a page (a Markdown table, pandas' ``to_markdown()``).
Read as CSV, a footer in a file of one column was embedded as a text, and in a file of more columns was a ragged row
with nothing said of why; a drawn table read as a header of names with spaces around them and rows of dashes. Each is
refused naming what it is and how to export the data instead."""

from __future__ import annotations

import re
import unicodedata

from bertfeat.spelling import delimiter_named

_FOOTER = re.compile(r"\((\d+) rows?\)")
# psql's aligned output: a header " id | text " over "----+------" (or "────┼──────" under \pset linestyle unicode)
_BARS, _CROSSES = "|│┃║", "+┼╋╪╫╬"
_RULE = re.compile(r"[-─━═]+([+┼╋╪╫╬][-─━═]+)*")
# "+----+------+" around it all: the mysql client's, psql's \pset border 2, sqlite3's .mode table
_ASCII_BORDER = re.compile(r"\+(-+\+)+")
# "┌────┬──────┐" around it all: DuckDB's CLI, sqlite3's .mode box, psql's \pset linestyle unicode with border 2
_BOX_BORDER = re.compile(r"[┌╭╔╒╓┏][─━═┬┯┳╤╥╦]+[┐╮╗╕╖┓]")
# psql's expanded output (\x): "-[ RECORD 1 ]-+-----", "─[ RECORD 1 ]─", "+-[ RECORD 1 ]---+"
_EXPANDED = re.compile(r"[-─━═+┌╔]*\[ RECORD 1 \]")
# sqlite3's .mode column ("--  -------") and psql's \pset border 0 ("-- -------"): a run of dashes a column
_COLUMN_RULE = re.compile(r"-+( +-+)+")
# a Markdown table's rule under its header: "|---|:---:|" (pandas' to_markdown(), a table pasted from a notebook)
_MARKDOWN_RULE = re.compile(r"\|?(\s*:?-{3,}:?\s*\|)+(\s*:?-{3,}:?\s*)?")

_EXPORT = ("export the query as CSV instead: \\copy (SELECT ...) TO 'file.csv' WITH (FORMAT csv, HEADER) in psql, "
           "or psql --csv -c 'SELECT ...' > file.csv, which quote each value holding a comma and leave out the footer")
_PSQL_CSV = "psql --csv -c 'SELECT ...' > file.csv"
_SQLITE_CSV = "sqlite3 -csv -header file.db 'SELECT ...' > file.csv"


def unquoted_rows(lines, width: int, backslash: bool, cr_ends: bool = True,
                  delimiter: str = "\t") -> tuple[bool, bool]:
    """How the lines of a TSV (``lines``, its header left out, each with its line end; another ``delimiter``'s file
    alike) read where no value is quoted: ``(fits, joined)``, whether each row has ``width`` values and ends with a
    line break (no backslash escaping it), and whether a line break was escaped. With ``backslash``, as MySQL's SELECT
    ... INTO OUTFILE writes them: a backslash escapes the character after it, the delimiter or a line break among
    them; without, as a TSV that escapes neither (a shell's, or one that writes them as two characters: PostgreSQL's
    COPY, mysql --batch). Where no such reading fits, no such export wrote the file: its quotes and backslashes are
    the file's own. ``cr_ends``: whether the file's lines end with CRLF or a lone CR (a backslash before the CR
    escapes the line end); where they end with LF, a backslash before a CRLF escapes the CR, and the LF ends the row
    (MySQL escapes the first byte of its line end, and leaves a text's CR as written)."""
    # a backslash and the character it escapes (none at a line's end), or the delimiter
    escape_or_delimiter = re.compile(r"\\.?|" + re.escape(delimiter), re.S)
    values, joined, open_row = 1, False, False
    for line in lines:
        # (where lines end with CR: its own end only, as a backslash and a CR before it are a text's CR, escaped)
        body = (line.rstrip("\r\n") if not backslash else line.removesuffix("\n") if not cr_ends
                else line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith(("\r", "\n")) else line)
        if not body.rstrip("\r") and not open_row:
            continue  # a blank line: no row, as the reader skips it
        if backslash:
            tokens = escape_or_delimiter.findall(body)
            values += tokens.count(delimiter)
            if tokens and tokens[-1] == "\\":  # a backslash before the line break (or ending the file)
                joined = open_row = True
                continue
        else:
            values += body.count(delimiter)
        if values != width:
            return False, joined
        values, open_row = 1, False
    return not open_row, joined


def footer_rows(value) -> int | None:
    """The count of rows psql's footer ``value`` gives (``(3 rows)``, ``(1 row)``), or None where it is no footer."""
    found = _FOOTER.fullmatch(value) if isinstance(value, str) else None
    return None if found is None else int(found[1])


def footer_refusal(path, line: int, value: str) -> str:
    """What to tell a user whose CSV file ``path`` holds psql's row count footer ``value`` at ``line``."""
    return (f"{path} holds psql's row count footer {value!r} at line {line} (psql prints it after a query's rows, "
            f"also in its unaligned output, psql -A), which would be read as a row of data: {_EXPORT} (or pass "
            "psql -P footer=off, or remove that line).")


def unaligned_refusal(path, problem: str, line: int, footer: str, delimiter: str) -> str:
    """What to tell a user whose CSV file ``path`` has a row of other width (``problem``, pyarrow's words with its
    line) and ends with psql's footer ``footer`` at ``line``: psql's unaligned output quotes no value, so a value
    holding the delimiter was split (not R's row names)."""
    return (f"{problem}. The file ends with psql's row count footer {footer!r} at line {line}: it is psql's unaligned "
            f"output (psql -A), which quotes no value, so a value holding {delimiter_named(delimiter)} is split into "
            f"two; {_EXPORT}.")


def no_header(path, delimiter: str, columns: int) -> str:
    """What to tell a user whose CSV file ``path`` (of ``columns`` columns) begins with a row of data, not names, as
    PostgreSQL's COPY (before version 15's HEADER) and MySQL's INTO OUTFILE write it, and warehouse unloads' parts."""
    import os
    import shlex
    from pathlib import Path

    from bertfeat.sniff import _DECOMPRESS
    from bertfeat.sources import _codec

    given = os.fsdecode(path)
    codec = _codec(Path(given))
    stem, suffix = os.path.splitext(given[:given.rfind(".")] if codec else given)  # a gzip part: written plain
    sep = "\\t" if delimiter == "\t" else delimiter
    names = sep.join(["id", "text", *[f"col{i}" for i in range(3, columns + 1)]][:columns])
    read = _DECOMPRESS[codec] if codec else "cat"
    return (f" Its first line reads as a row of data, not names: a database's export (PostgreSQL's COPY without "
            "HEADER, MySQL's INTO OUTFILE, a warehouse unload's parts) writes no header line. Put one first, naming "
            f"each column: (printf {shlex.quote(names + chr(92) + 'n')}; {read} {shlex.quote(given)}) > "
            f"{shlex.quote(stem + '-header' + suffix)}, and pass that file; or export the query again with its header "
            "(COPY ... WITH (HEADER), mysql --batch).")


def drawn_table(path, lines: list[str]) -> str | None:
    """What to tell a user whose CSV file ``path`` begins with ``lines`` (its first two lines that are not blank,
    line ends removed) where they are a table drawn for the terminal (by psql, the mysql client, sqlite3 or DuckDB's
    CLI) or for a page (Markdown); None otherwise."""
    first = lines[0].strip() if lines else ""
    if _ASCII_BORDER.fullmatch(first):
        return (f"{path} is a table drawn for the terminal ({first[:40]!r} lines around it, as the mysql client, psql "
                "with \\pset border 2 and sqlite3's .mode table draw it), not CSV: export the query with mysql --batch "
                "-e 'SELECT ...' > file.tsv (tabs, a header first; read it with quoting='backslash', as the client "
                f"escapes tabs and line breaks in values) or SELECT ... INTO OUTFILE, {_PSQL_CSV}, or {_SQLITE_CSV}.")
    if _BOX_BORDER.fullmatch(first):
        return (f"{path} is a table drawn for the terminal ({first[:40]!r} lines around it, as DuckDB's CLI, sqlite3's "
                ".mode box and psql with \\pset linestyle unicode draw it), not CSV: export the query with duckdb -csv "
                f"-c 'SELECT ...' > file.csv, {_SQLITE_CSV}, or {_PSQL_CSV}.")
    if _EXPANDED.match(first):
        return (f"{path} is psql's expanded output (a block of lines a record, the first {first[:40]!r}: \\x, psql -x "
                "or \\pset expanded, maybe in your ~/.psqlrc), not CSV: export the query with psql -P expanded=off "
                "--csv -c 'SELECT ...' > file.csv (--csv alone keeps expanded output on: a line a column).")
    if len(lines) != 2:
        return None
    header, rule = lines
    if "|" in header and _MARKDOWN_RULE.fullmatch(rule.strip()):
        return (f"{path} is a Markdown table (its header over {rule.strip()[:40]!r}, as pandas' to_markdown() and "
                "a table pasted from a notebook or a page write it), not CSV: write the data frame as CSV "
                "(df.to_csv('file.csv', index=False)) or parquet (df.to_parquet('file.parquet')) and pass that.")
    if _psql_rule(header, rule):
        return (f"{path} is psql's aligned output (a table drawn for the terminal: its header over "
                f"{rule.strip()[:40]!r}), not CSV: {_EXPORT}.")
    if _column_rule(header, rule):
        return (f"{path} is a table drawn for the terminal in columns (its header over {rule.strip()[:40]!r}, as "
                "sqlite3's .mode column and psql with \\pset border 0 draw it), not CSV: export the query with "
                f"{_SQLITE_CSV}, or {_PSQL_CSV}.")
    return None


def _columns(line: str, chars: str | None = None) -> list[int]:
    """The columns of the terminal where ``line`` shows one of ``chars`` (None: any character but a space), counted
    as psql and sqlite3 line up their tables: a wide character (CJK's) takes two, an accent none."""
    at, found = 0, []
    for c in line:
        if (c in chars) if chars is not None else not c.isspace():
            found.append(at)
        at += 0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
    return found


def _psql_rule(header: str, rule: str) -> bool:
    """Whether ``rule`` is the line psql's aligned output draws under its ``header`` (in ASCII or, under
    ``\\pset linestyle unicode``, box drawing): a cross under each bar between the names, which psql centres with a
    space either side."""
    if _RULE.fullmatch(rule) is None or not header.startswith(" "):
        return False
    width = len(rule)  # the rule is one terminal column a character
    return _columns(rule, _CROSSES) == [at for at in _columns(header, _BARS) if at < width]


def _column_rule(header: str, rule: str) -> bool:
    """Whether ``rule`` is the dashes sqlite3's column mode and psql's ``\\pset border 0`` draw under ``header``: a
    run of dashes a column (two at least), a name over each run and nothing over the spaces between them."""
    if _COLUMN_RULE.fullmatch(rule) is None or "," in header or "\t" in header:
        return False
    spaces = {at for at in range(len(rule)) if rule[at] == " "}
    shown = _columns(header)
    runs = [m.span() for m in re.finditer("-+", rule)]
    return (not spaces.intersection(shown)
            and all(any(start <= at < end for at in shown) for start, end in runs[:-1])
            and any(at >= runs[-1][0] for at in shown))
