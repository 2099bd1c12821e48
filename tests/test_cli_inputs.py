"""Mistakes about the model, the cache directory and the probe's labels: a clear ValueError/CacheError in Python, one
line on stderr and exit 2 in the CLI (issue 12)."""

import json
import os
import re
import shutil

import pandas as pd
import pytest

from bertfeat.cli import main
from bertfeat.csv_problems import split_unquoted


def _one_line_exit_2(capsys, code, pattern):
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert re.search(pattern, err), err


@pytest.fixture
def layers_mismatch(tiny_bert, tmp_path):
    """The tiny BERT with a config that claims five layers while its weights hold three."""
    copy = shutil.copytree(tiny_bert, tmp_path / "five-layers")
    config = json.loads((copy / "config.json").read_text())
    config["num_hidden_layers"] = 5
    (copy / "config.json").write_text(json.dumps(config))
    return str(copy)


@pytest.fixture
def texts_csv(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"id": range(4), "text": ["a cat", "a dog", "the mat", "the park"], "label": list("aabb")}).to_csv(
        path, index=False)
    return path


def test_info_refuses_a_model_whose_weights_do_not_fit(layers_mismatch, capsys):
    _one_line_exit_2(capsys, main(["info", layers_mismatch]), r"do not fit its config.json.*encoder\.layer\.3\.")


def test_info_says_the_weights_were_checked(tiny_bert, capsys):
    assert main(["info", tiny_bert]) == 0
    assert re.search(r"weights: .*\d+ tensors, all fit config.json and the tokenizer", capsys.readouterr().out)


def test_embed_refuses_a_model_whose_weights_do_not_fit(layers_mismatch, texts_csv, tmp_path, capsys):
    out = tmp_path / "o.parquet"
    code = main(["embed", str(texts_csv), "--text-col", "text", "--out", str(out), "--model", layers_mismatch,
                 "--quiet"])
    _one_line_exit_2(capsys, code, r"do not fit its config.json.*encoder\.layer\.3\.")
    assert not out.exists()


@pytest.mark.parametrize("command", ["embed", "probe"])
@pytest.mark.parametrize("setup, pattern", [
    ("file", r"--cache-dir /.* exists but is not a directory\. Pass a writable directory on this machine, or no "
             r"--cache-dir to run without a cache\.$"),
    ("under-file", r"does not exist and cannot be created"),
    ("empty", r"--cache-dir '' is (not valid|empty)"),
])
def test_unusable_cache_dir_is_one_line_exit_2(tiny_bert, texts_csv, tmp_path, capsys, monkeypatch, command, setup,
                                              pattern):
    monkeypatch.chdir(tmp_path)  # where an empty --cache-dir would put a cache
    (tmp_path / "afile").write_text("x")
    cache_dir = {"file": tmp_path / "afile", "under-file": tmp_path / "afile" / "cache", "empty": ""}[setup]
    out = tmp_path / "o.parquet"
    args = (["embed", str(texts_csv), "--text-col", "text", "--out", str(out), "--quiet"] if command == "embed" else
            ["probe", str(texts_csv), "--text-col", "text", "--label-col", "label", "--cv", "2", "--no-baseline"])
    _one_line_exit_2(capsys, main([*args, "--model", tiny_bert, "--cache-dir", str(cache_dir)]), pattern)
    assert sorted(os.listdir(tmp_path)) == ["afile", "t.csv"]  # no output, no partial, no cache


# -- the probe's labels ------------------------------------------------------------------------------------------

PROBE_TEXTS = ["a cat", "a dog", "the mat", "the park", "more text", "less text"]


@pytest.mark.parametrize("labels, pattern", [
    (["x", "x", "x", "y", "x", "x"], r"class\(es\) 'y' \(1\) of the labels y have fewer members than the 2 "
                                     r"cross-validation folds.*cannot be cross-validated"),
    (["x", "x", "y", "y", "x", "z"], r"class\(es\) 'z' \(1\)"),
    (["x", None, "y", "y", "x", "x"], r"labels y have 1 missing value\(s\) \(rows 1\).*drop those rows or fill"),
    ([1.0, 0.0, float("nan"), 1.0, 0.0, 1.0], r"labels y have 1 missing value\(s\) \(rows 2\)"),
    ([1, "a", 1, "a", 1, "a"], r"the labels y mix types \(int, str\)"),
])
def test_probe_refuses_labels_it_cannot_score_before_embedding(tiny_bert, monkeypatch, labels, pattern):
    import numpy as np

    import bertfeat.encode
    from bertfeat import probe

    monkeypatch.setattr(bertfeat.encode, "encode", lambda *a, **k: pytest.fail("embedded before checking labels"))
    with pytest.raises(ValueError, match=pattern):
        probe(PROBE_TEXTS, np.asarray(labels, dtype=object), model=tiny_bert, cv=2, baseline=False)


def test_probe_suggests_fewer_folds_when_that_would_do(tiny_bert):
    from bertfeat import probe

    with pytest.raises(ValueError, match=r"'y' \(2\).*lower cv= to at most 2"):
        probe(PROBE_TEXTS, ["x", "x", "x", "y", "y", "x"], model=tiny_bert, cv=3, baseline=False)


@pytest.mark.parametrize("labels, pattern", [
    (["x", "x", "x", "y", "x", "x"], r"class\(es\) 'y' \(1\)"),
    (["x", "", "y", "y", "x", "x"], r"1 missing value\(s\) \(rows 1\)"),
])
def test_probe_command_label_mistakes_are_one_line_exit_2(tiny_bert, tmp_path, capsys, labels, pattern):
    path = tmp_path / "l.csv"
    path.write_text("text,label\n" + "".join(f"{t},{v}\n" for t, v in zip(PROBE_TEXTS, labels)))
    code = main(["probe", str(path), "--text-col", "text", "--label-col", "label", "--model", tiny_bert, "--cv", "2",
                 "--no-baseline"])
    _one_line_exit_2(capsys, code, pattern)


# -- blank texts: the same policy as in Python (issue 12, item 7) ------------------------------------------------


def test_blank_csv_fields_are_missing_like_empty_ones(tiny_bert, tmp_path, capsys):
    import numpy as np
    import pyarrow.parquet as pq

    from bertfeat import BertEmbedder

    src = tmp_path / "b.csv"
    src.write_text('id,text\n1,a cat\n2,\n3,""\n4, \n5,"\t\n"\n6,\u200b\n7,\ufeff\n8,a dog\n', encoding="utf-8")
    out = tmp_path / "o.parquet"
    code = main(["embed", str(src), "--text-col", "text", "--out", str(out), "--model", tiny_bert, "--quiet"])
    _one_line_exit_2(capsys, code, r"row 1 is missing \(None\)")
    # without the empty field, the first blank is the error, in the same words as in Python
    src.write_text('id,text\n1,a cat\n3,""\n4, \n', encoding="utf-8")
    code = main(["embed", str(src), "--text-col", "text", "--out", str(out), "--model", tiny_bert, "--quiet"])
    _one_line_exit_2(capsys, code, r"row 1 is blank \(''\): bertfeat treats empty texts")
    src.write_text('id,text\n1,a cat\n2,\n3,""\n4, \n5,"\t\n"\n6,\u200b\n7,\ufeff\n8,a dog\n', encoding="utf-8")
    assert main(["embed", str(src), "--text-col", "text", "--out", str(out), "--model", tiny_bert, "--quiet",
                 "--missing", "zero"]) == 0
    X = pq.read_table(out).to_pandas().to_numpy()
    assert not X[1:7].any() and X[0].any() and X[7].any()
    np.testing.assert_allclose(X, BertEmbedder(tiny_bert, missing="zero").fit_transform(
        ["a cat", None, "", " ", "\t\n", "\u200b", "\ufeff", "a dog"]), atol=1e-5)
    manifest = json.loads((tmp_path / "o.parquet.manifest.json").read_text())
    assert manifest["counts"]["missing"] == 6


def test_an_error_that_echoes_a_files_bytes_shows_its_control_characters_escaped(tiny_bert, tmp_path, capsys):
    """(found by a files hunt, 2026-11-27, session 11) a ragged row's excerpt went to the terminal as its bytes: an
    ANSI escape in a hostile CSV ran in the user's terminal (ESC [2J cleared the screen; OSC 52 sets the clipboard),
    a backspace or a NUL hid the text; in R, bf_embed_file() passes the line on as its error. Line breaks were
    already one line (whitespace collapsed)."""
    src = tmp_path / "bad.csv"
    src.write_bytes(b"id,text\n1,a\n2,\x1b[2Jboom\x08,extra\x7f\xc2\x9b\n")
    code = main(["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o.parquet"), "--model", tiny_bert,
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert re.fullmatch(rf"bertfeat embed: error: {re.escape(str(src))} is malformed at line 3: CSV parse error: "
                        r"(Row #\d+: )?Expected 2 columns, got 3: 2,\\x1b\[2Jboom\\x08,extra\\x7f\\x9b"
                        + re.escape(split_unquoted(",")) + "\n", err), err  # (a file quoting nothing, session 15)
