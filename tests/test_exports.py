"""Text exports of databases and shells as `bertfeat embed` meets them: PostgreSQL's ``\\copy``/``COPY ... TO`` text
format and ``psql -A``, MySQL's ``INTO OUTFILE`` and ``mysql -B``, warehouse unloads. Each is read right or refused
naming what was seen and what to do; never embedded wrong (a ``\\N`` as a text, a ``(3 rows)`` footer as a row)."""

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat.cli import main
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

