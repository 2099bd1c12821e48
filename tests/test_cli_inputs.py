"""CLI mistakes about the model, the cache directory and the probe's labels: one line on stderr, exit 2 (issue 12)."""

import json
import os
import re
import shutil

import pandas as pd
import pytest

from bertfeat.cli import main


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
    pd.DataFrame({"id": range(4), "text": ["a cat", "a dog", "the mat", "the park"]}).to_csv(path, index=False)
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
    ("file", r"cache_dir=.*exists but is not a directory"),
    ("under-file", r"does not exist and cannot be created"),
    ("empty", r"cache_dir='' is (not valid|empty)"),
])
def test_unusable_cache_dir_is_one_line_exit_2(tiny_bert, texts_csv, tmp_path, capsys, monkeypatch, command, setup,
                                              pattern):
    monkeypatch.chdir(tmp_path)  # where an empty --cache-dir would put a cache
    (tmp_path / "afile").write_text("x")
    cache_dir = {"file": tmp_path / "afile", "under-file": tmp_path / "afile" / "cache", "empty": ""}[setup]
    out = tmp_path / "o.parquet"
    args = (["embed", str(texts_csv), "--text-col", "text", "--out", str(out), "--quiet"] if command == "embed" else
            ["probe", str(texts_csv), "--text-col", "text", "--label-col", "id", "--cv", "2", "--no-baseline"])
    _one_line_exit_2(capsys, main([*args, "--model", tiny_bert, "--cache-dir", str(cache_dir)]), pattern)
    assert sorted(os.listdir(tmp_path)) == ["afile", "t.csv"]  # no output, no partial, no cache
