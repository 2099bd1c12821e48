"""What the text exports of database clients leave in a file that is no CSV data: psql's row count footer
(``(3 rows)`` after ``psql -A -F,``'s rows), and a table drawn for the terminal (psql's aligned output, the mysql
client's ``+----+`` borders) or for a page (a Markdown table, pandas' ``to_markdown()``). Read as CSV, a footer in a file of one column was embedded as a text, and in a file of
more columns was a ragged row with nothing said of why; a drawn table read as a header of names with spaces around
them and rows of dashes. Each is refused naming what it is and how to export the data instead."""

from __future__ import annotations

import re

_FOOTER = re.compile(r"\((\d+) rows?\)")
# psql's aligned output: a header " id | text " over "----+------"; mysql's: "+----+------+" around it all
_PSQL_RULE = re.compile(r"-+(\+-+)*")
_MYSQL_RULE = re.compile(r"\+(-+\+)+")
# a Markdown table's rule under its header: "|---|:---:|" (pandas' to_markdown(), a table pasted from a notebook)
_MARKDOWN_RULE = re.compile(r"\|?(\s*:?-{3,}:?\s*\|)+(\s*:?-{3,}:?\s*)?")

_EXPORT = ("export the query as CSV instead: \\copy (SELECT ...) TO 'file.csv' WITH (FORMAT csv, HEADER) in psql, "
           "or psql --csv -c 'SELECT ...' > file.csv, which quote each value holding a comma and leave out the footer")


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
            f"output (psql -A), which quotes no value, so a value holding {delimiter!r} is split into two; {_EXPORT}.")


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
    line ends removed) where they are a table drawn for the terminal by psql or the mysql client; None otherwise."""
    if lines and _MYSQL_RULE.fullmatch(lines[0].strip()):
        return (f"{path} is the mysql client's table output (drawn for the terminal: {lines[0].strip()[:40]!r} "
                "lines around it), not CSV: export the query with mysql --batch -e 'SELECT ...' > file.tsv (tabs, a "
                "header first; read it with quoting='backslash', as the client escapes tabs and line breaks in "
                "values), or with SELECT ... INTO OUTFILE.")
    if len(lines) == 2 and lines[0].lstrip().startswith("|") and _MARKDOWN_RULE.fullmatch(lines[1].strip()):
        return (f"{path} is a Markdown table (its header over {lines[1].strip()[:40]!r}, as pandas' to_markdown() and "
                "a table pasted from a notebook or a page write it), not CSV: write the data frame as CSV "
                "(df.to_csv('file.csv', index=False)) or parquet (df.to_parquet('file.parquet')) and pass that.")
    if len(lines) == 2 and _psql_rule(*lines):
        return (f"{path} is psql's aligned output (a table drawn for the terminal: its header over "
                f"{lines[1].strip()[:40]!r}), not CSV: {_EXPORT}.")
    return None


def _psql_rule(header: str, rule: str) -> bool:
    """Whether ``rule`` is the line of dashes psql's aligned output draws under its ``header``: a ``+`` under each
    ``|`` between the names, which psql centres with a space either side."""
    return (_PSQL_RULE.fullmatch(rule) is not None and header.startswith(" ")
            and [i for i, c in enumerate(rule) if c == "+"] == [i for i, c in enumerate(header[:len(rule)]) if c == "|"])
