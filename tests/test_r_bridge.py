"""bertfeat._r, the Python end of the R package: the byte payload, the missing mask, and one call per request."""

import os
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from bertfeat import BertEmbedder
from bertfeat import _r


def _unpack(buf, n, d):
    """What R's readBin(size = 4, endian = "little") + matrix(nrow = n) do with the payload."""
    return np.frombuffer(bytes(buf), dtype="<f4").reshape(d, n).T


def test_matrix_payload_is_column_major_little_endian_float32():
    X = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    buf, n, d = _r.matrix_payload(X)
    assert isinstance(buf, bytearray) and len(buf) == 6 * 4 and (n, d) == (2, 3)
    np.testing.assert_array_equal(np.frombuffer(bytes(buf), dtype="<f4")[:2], X[:, 0].astype(np.float32))
    np.testing.assert_array_equal(_unpack(buf, n, d), X.astype(np.float32))


def test_matrix_payload_rejects_non_2d():
    with pytest.raises(ValueError, match="2-D"):
        _r.matrix_payload(np.zeros(3))


def test_build_input_puts_none_under_the_mask_only():
    # reticulate sends NA as the string "NA": the mask, not the text, says what is missing
    out = _r._build_input([["a", "NA", "NA"]], [[False, True, False]], None)
    assert out == ["a", None, "NA"]


def test_build_input_accepts_reticulate_scalars():
    # a length-1 R vector arrives as a bare str / bool
    assert _r._build_input("only", True, None) == [None]
    frame = _r._build_input([["x", "y"], ["u", "v"]], [[False, False], [True, False]], ["a", "b"])
    assert list(frame.columns) == ["a", "b"] and frame["b"].tolist() == [None, "v"]
    assert frame["b"].dtype == object


def test_build_input_checks_lengths():
    with pytest.raises(ValueError, match="missing mask of length 1"):
        _r._build_input([["a", "b"]], [[False]], None)
    with pytest.raises(ValueError, match="one mask"):
        _r._build_input([["a"], ["b"]], [[False]], ["x", "y"])


def test_embed_matches_bert_embedder_and_keeps_the_na_string(tiny_bert):
    params = {"model": tiny_bert, "pooling": "cls+mean", "layers": [-1, -2], "missing": "zero"}
    texts = ["the cat sat", "NA", "", "a dog ran"]
    mask = [False, False, True, False]
    buf, n, d, names, fp, stats, warns = _r.embed([texts], [mask], None, params)
    got = _unpack(buf, n, d)
    ref_embedder = BertEmbedder(**params)
    ref = ref_embedder.fit_transform(["the cat sat", "NA", None, "a dog ran"])
    np.testing.assert_array_equal(got, ref)
    assert names == list(ref_embedder.get_feature_names_out()) and names[0] == "text_cls_00"
    assert fp == ref_embedder.recipe_.fingerprint()
    assert not got[2].any() and got[1].any()  # the NA row is zeros; the text "NA" is embedded
    assert stats["rows"] == 4 and stats["missing"] == 1 and warns == []


def test_embed_data_frame_columns_side_by_side(tiny_bert):
    params = {"model": tiny_bert, "missing": "nan", "pooling": "mean"}
    buf, n, d, names, _, stats, _ = _r.embed(
        [["the cat", "a dog"], ["park", "mat"]], [[False, False], [False, True]], ["title", "body"], params
    )
    got = _unpack(buf, n, d)
    assert (n, d) == (2, 64) and names[0] == "title_mean_00" and names[32] == "body_mean_00"
    assert np.isnan(got[1, 32:]).all() and not np.isnan(got[1, :32]).any()
    # what Python gives for the same data frame, bit for bit (the same texts in the same batches: a text's last bits
    # can move with the texts padded beside it, so a reference embedded alone is compared to a tolerance)
    frame = pd.DataFrame({"title": ["the cat", "a dog"], "body": ["park", None]})
    np.testing.assert_array_equal(got, BertEmbedder(**params).fit_transform(frame))
    alone = BertEmbedder(model=tiny_bert, pooling="mean").fit_transform(["park", "the cat"])
    np.testing.assert_allclose(got[0, 32:], alone[0], rtol=0, atol=1e-5)
    np.testing.assert_allclose(got[0, :32], alone[1], rtol=0, atol=1e-5)
    assert stats["rows"] == 4  # both columns went through one encode call


def test_embed_returns_warnings_for_r(tiny_bert):
    long = "the quick brown fox jumps over the lazy dog " * 4
    *_, warns = _r.embed([[long, "a cat"]], [[False, False]], None, {"model": tiny_bert, "max_length": 8})
    assert [w[0] for w in warns] == ["TruncationWarning"] and "1 of 2 texts" in warns[0][1]


def test_embed_reports_missing_under_error_policy(tiny_bert):
    with pytest.raises(ValueError, match="missing"):
        _r.embed([["a", "b"]], [[False, True]], None, {"model": tiny_bert})


def test_describe_agrees_with_embed(tiny_bert):
    params = {"model": tiny_bert, "pooling": "max", "layers": [1, 2], "layer_agg": "concat"}
    names, fp, warns, layers, dtype = _r.describe(["review"], params)
    _, _, d, enames, efp, _, _ = _r.embed([["a cat"]], [[False]], ["review"], params)
    assert names == enames and fp == efp and len(names) == d == 64
    assert names[0] == "review_max_l1_00" and warns == [] and layers == [1, 2]
    # the dtype "auto" stands for here, which the R step's bake() keeps wherever it runs
    assert dtype == "float32" and _r.describe(None, {**params, "dtype": "bfloat16"})[4] == "bfloat16"
    # the layers the recipe reads, for the R step's tidy(): the default is the last four, all of a smaller model
    assert _r.describe(None, {"model": tiny_bert})[3] == [1, 2, 3]
    assert _r.describe(None, {"model": tiny_bert, "layers": [-1, 1], "layer_agg": "concat"})[3] == [3, 1]


def test_describe_and_probe_return_their_warnings_for_r(tiny_bert, tmp_path):
    # left to Python, they were printed on stderr: R's handlers never saw them
    import json
    import shutil

    prompted = tmp_path / "prompted"
    shutil.copytree(tiny_bert, prompted)
    (prompted / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # recorded, not raised
        _, _, warns, *_ = _r.describe(["review"], {"model": str(prompted)})
        assert [w[0] for w in warns] == ["ModelNoteWarning"] and "defines prompts" in warns[0][1]
        long = "the quick brown fox jumps over the lazy dog " * 4
        # each its own first word: cut to 8 tokens, texts alike but for their ends read alike, every candidate one
        # vector for every text, which the probe refuses (session 17)
        texts = [f"{word} {long}" for word in "lovely delightful wonderful charming dull tedious awful boring".split()]
        *_, warns = _r.probe(texts, [False] * 8, [0, 1] * 4, {"model": tiny_bert, "max_length": 8, "cv": 2,
                                                              "unions": 0, "baseline": False})
    assert "TruncationWarning" in [w[0] for w in warns]


def test_config_reports_versions():
    info = _r.config()
    assert info["bertfeat_version"] == __import__("bertfeat").__version__
    assert info["torch_version"] and info["device"] == "cpu" and info["error"] is None
    assert info["torch_import"] == "plain"  # outside R torch is imported as usual


def test_torch_is_imported_with_deepbind_only_inside_r():
    import subprocess

    code = (
        "import sys, types; sys.modules['rpytools'] = types.ModuleType('rpytools'); "  # what reticulate loads
        "from bertfeat import _r; _r._import_torch(); print(_r.torch_import)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    expected = "deepbind" if hasattr(os, "RTLD_DEEPBIND") else "plain"
    assert out.stdout.strip() == expected


def test_missing_in_a_plain_list_names_the_row(tiny_bert):
    # regression: a list's .index method was taken for a pandas index, turning this error into a TypeError
    with pytest.raises(ValueError, match=r"^row 1 is missing \(None\) and missing='error'"):
        BertEmbedder(model=tiny_bert).fit_transform(["a cat", None])


def test_run_cli_returns_the_summary_for_r_and_keeps_it_off_the_process_stderr(tiny_bert, tmp_path, capfd):
    # R gives the summary as a message; on the process's stderr it was out of reach of R's handlers
    src = tmp_path / "in.csv"
    src.write_text("review\na cat\na dog\n")
    out = tmp_path / "out.parquet"
    status, _, stderr, summary, _ = _r.run_cli(["embed", str(src), "--text-col", "review", "--out", str(out),
                                                "--model", tiny_bert, "--pooling", "mean"])
    assert status == 0 and summary.startswith(f"bertfeat embed: wrote {out} (2 rows x 32 dims") and summary in stderr
    assert "wrote" not in capfd.readouterr().err
    # what else the command writes reaches the process's stderr line by line, as it comes
    status, _, stderr, summary, _ = _r.run_cli(["embed", str(src), "--text-col", "review", "--out", str(out)])
    assert status == 2 and summary == "" and "exists" in stderr
    assert capfd.readouterr().err == stderr
    tee = _r._Tee(__import__("sys").__stderr__, hold=lambda line: line.startswith("held"))
    for piece in ["a", "b\nhel", "d back\nc\n", "no break"]:
        tee.write(piece)
    assert capfd.readouterr().err == "ab\nc\n"
    tee.close()
    assert capfd.readouterr().err == "no break" and tee.buffer.getvalue() == "ab\nheld back\nc\nno break"


def test_run_cli_gives_progress_to_r_line_by_line_as_it_comes(tiny_bert, tmp_path, capfd, monkeypatch):
    """bf_embed_file() passes R's message() as on_line: progress reached only the process's stderr, which RStudio
    and knitr never show, so a long job was silent there until its summary."""
    import threading

    import bertfeat.files

    real = bertfeat.files.Progress
    monkeypatch.setattr(bertfeat.files, "Progress", lambda total, quiet, every=10.0, stream=None:
                        real(total, quiet, 0.0, stream))  # a line after every chunk
    src = tmp_path / "in.csv"
    src.write_text("review\n" + "".join(f"text {i}\n" for i in range(6)))
    lines = []
    status, _, stderr, summary, _ = _r.run_cli(["embed", str(src), "--text-col", "review", "--out",
                                                str(tmp_path / "o.parquet"), "--model", tiny_bert, "--pooling",
                                                "mean", "--chunk-rows", "2"], on_line=lines.append)
    assert status == 0 and summary
    assert lines == [line for line in stderr.splitlines() if line != summary] and len(lines) == 3
    assert lines[-1].startswith("bertfeat embed: 6 rows, ")
    assert capfd.readouterr().err == ""  # given to R, not also on the process's stderr
    # a line written from another thread (a warning in a worker) goes to the stream: R runs on its thread only
    tee = _r._Tee(__import__("sys").__stderr__, emit=lines.append)
    worker = threading.Thread(target=tee.write, args=("from a worker\n",))
    worker.start(), worker.join()
    tee.write("from the main thread\nno break")
    tee.close()
    assert lines[-2:] == ["from the main thread", "no break"] and capfd.readouterr().err == "from a worker\n"


def test_run_cli_gives_the_commands_warnings_to_r_as_warnings_not_as_progress_lines(tiny_bert, tmp_path, capfd):
    """bf_embed_file() gives them as R warnings of their classes, as bf_embed() does: written as the command line
    writes them, they reached R as progress messages (suppressMessages() hid them, a warning handler never saw
    them), and a failed job's were lost with its stderr."""
    import json
    import shutil

    prompted = tmp_path / "prompted"  # a model of its own path: its note is said once per model and process
    shutil.copytree(tiny_bert, prompted)
    (prompted / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    src = tmp_path / "in.csv"
    src.write_text("review\na cat\na dog\n")
    lines = []
    status, _, stderr, summary, warns = _r.run_cli(["embed", str(src), "--text-col", "review", "--out",
                                                    str(tmp_path / "o.parquet"), "--model", str(prompted),
                                                    "--pooling", "mean"], on_line=lines.append)
    assert status == 0 and summary
    assert [w[0] for w in warns] == ["ModelNoteWarning"]
    # the message as bf_embed() gives it, its advice in R's syntax: not the command line's warning line
    assert warns[0][1].startswith(f'model = "{prompted}" defines prompts that its authors put before texts: "query" ')
    assert "Pass `prompt_name` (or `prefix`) to use one" in warns[0][1]
    assert "warning" not in stderr and lines == [] and capfd.readouterr().err == ""
    # a job that fails after a warning: the warning comes back beside the error
    again = tmp_path / "again"
    shutil.copytree(prompted, again)
    src.write_text('review\na cat\n""\n')
    status, _, stderr, summary, warns = _r.run_cli(["embed", str(src), "--text-col", "review", "--out",
                                                    str(tmp_path / "o2.parquet"), "--model", str(again)])
    assert status == 2 and "missing" in stderr and summary == ""
    assert [w[0] for w in warns] == ["ModelNoteWarning"] and "warning" not in stderr


@pytest.mark.parametrize("python, r", [
    ("layers=[9]: layer 9 is out of range; the model has 3 layers, so valid indices are 0..3",
     "layers = 9: layer 9 is out of range; the model has 3 layers, so valid indices are 0..3"),
    # (scikit-learn and R hunt, session 16) the probe's texts by bf_probe()'s argument, x, not Python's texts
    ("all 4 texts are missing or blank, so ...: check that texts is the column of texts you mean, or drop the rows",
     "all 4 texts are missing or blank, so ...: check that `x` is the column of texts you mean, or drop the rows"),
    # and a list of numbers standing alone as R writes it, not Python's [1, 1]
    ("layers=[1, 1] names the same layer twice (as [1, 1]); name each layer once.",
     "layers = c(1, 1) names the same layer twice (as c(1, 1)); name each layer once."),
    ("layers=[-1, -2, -1] names the same layer twice (as [6, 5, 6]); the text '[1, 2]' and [3]",
     "layers = c(-1, -2, -1) names the same layer twice (as c(6, 5, 6)); the text \"[1, 2]\" and 3"),
    ("stride=3 applies to long_text='chunk' only (long_text='truncate' embeds one window per text); pass "
     "long_text='chunk' as well, or leave stride=None.",
     'stride = 3 applies to long_text = "chunk" only (long_text = "truncate" embeds one window per text); pass '
     'long_text = "chunk" as well, or leave stride = NULL.'),
    ("cache_all_layers=True stores every layer in the cache, but cache_dir is None: pass cache_dir= as well (and "
     "cache_all_layers=False is faster).",
     "cache_all_layers = TRUE stores every layer in the cache, but cache_dir is NULL: pass `cache_dir` as well (and "
     "cache_all_layers = FALSE is faster)."),
    ("prompt_name='query' is not a prompt of model='/m/e5': it defines none; pass prefix= instead.",
     'prompt_name = "query" is not a prompt of model = "/m/e5": it defines none; pass `prefix` instead.'),
    ("max_length=100000 is not valid: expected an int from 4 to the model's limit of 64 tokens, or None for that "
     "limit.", "max_length = 100000 is not valid: expected an int from 4 to the model's limit of 64 tokens, or NULL "
     "for that limit."),
    ("the labels y are read as classes (ten or fewer distinct numbers are classes under task='auto'), and 2 of them "
     "are fractional. Pass task='regression' (--task regression) to score them as numbers, or give the classes as "
     "strings (y.astype(str)) to score them as classes.",
     'the labels y are read as classes (ten or fewer distinct numbers are classes under task = "auto"), and 2 of '
     'them are fractional. Pass task = "regression" to score them as numbers, or give the classes as strings '
     "(as.character(y)) to score them as classes."),
    ("Drop or merge the rare classes, or lower cv (--cv) to at most 3; or pass baseline=False, unions=0 "
     "(--no-baseline --unions 0).",
     "Drop or merge the rare classes, or lower cv to at most 3; or pass baseline = FALSE, unions = 0."),
    ("missing='nan' is not valid for the probe. Pass missing='zero' (a zero vector for each missing text).",
     'missing = "nan" is not valid for the probe. Pass missing = "zero" (a zero vector for each missing text).'),
    # the probe's poolings, which bf_probe() does not take (review of session 13): left out
    ("... would be constant. Pass pooling='mean' (or 'max'), which pool every token of the text (to the probe: "
     "poolings=('mean', 'max')).",
     '... would be constant. Pass pooling = "mean" (or "max"), which pool every token of the text.'),
    # a list of choices or of names, Python's ['cls', 'mean'], and a run of quoted choices, as R writes them
    ("long_text='chunky' is not valid: expected one of ['truncate', 'chunk'].",
     'long_text = "chunky" is not valid: expected one of "truncate", "chunk".'),
    ("device='gpu' is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'.",
     'device = "gpu" is not valid: expected "auto", "cpu", "cuda", "cuda:N" or "mps".'),
    ("pooling='avg' is not valid: expected one of ['cls', 'mean', 'max'] or a '+'-joined combination.",
     'pooling = "avg" is not valid: expected one of "cls", "mean", "max" or a "+"-joined combination.'),
    ("column(s) ['t\u00e9'] not found; it has columns ['id', \"it's\"]",
     'column(s) "t\u00e9" not found; it has columns "id", "it\'s"'),
    # left alone: options of the command line, names in code, a path with '='; a quoted text keeps its words (no
    # NULL, no `it = s`) in R's quotes
    ("--max-length=256 and the text 'None' and 'it=s' in /data/a=b/f.csv",
     '--max-length=256 and the text "None" and "it=s" in /data/a=b/f.csv'),
    # (review hunt, 2026-11-26, session 8) a hive partition folder named in the refusal of a kept column that is one:
    # it read "(year = 2024/)", a folder no one has
    ("'year' is in the names of folders (year=2024/), not in the files",
     '"year" is in the names of folders (year=2024/), not in the files'),
    ("'dt' is in the names of folders (dt=2024-01-01/), not in the files",
     '"dt" is in the names of folders (dt=2024-01-01/), not in the files'),
    # (R bridge hunt, session 9) one quoted text alone (a path, a row's text) reached R in Python's quotes; an
    # apostrophe in or after a word opens none, and a text holding quotes is escaped as R writes it
    ("row 3 ('\u03a9') gives no token; model '/m/x' not found",
     'row 3 ("\u03a9") gives no token; model "/m/x" not found'),
    ("the model's limit and the users' texts; the text 'it\\'s \"so\"' is long",
     'the model\'s limit and the users\' texts; the text "it\'s \\"so\\"" is long'),
    # (review hunt, 2026-11-26, session 9) True, False and None inside a quoted text of more than the one word (a
    # path, a prefix, a row's text) became TRUE, FALSE and NULL: a file "/runs/NULL/f.csv" no one has
    ("cannot read '/runs/None/f.csv'; the text 'a True story' and prefix='is False: ' and \"it's None\"; or None",
     'cannot read "/runs/None/f.csv"; the text "a True story" and prefix = "is False: " and "it\'s None"; or NULL'),
    # and a name=value inside one became R's "name = value": the text "set a = 1 and b = NULL"
    ("row 2: the text 'set a=1 and b=None' is long; pass max_length=512",
     'row 2: the text "set a=1 and b=None" is long; pass max_length = 512'),
])
def test_python_advice_reaches_r_users_in_r_syntax(python, r):
    assert _r.r_advice(python) == r


def test_the_command_lines_errors_reach_bf_embed_file_in_r_syntax(tiny_bert, tmp_path):
    """bf_embed_file() runs the command line, whose error lines named options in its flags, or in both spellings:
    R users read `--quoting backslash (quoting = "backslash")`, `pass --overwrite (overwrite = TRUE)`, and (after
    the command line named its flags alone) `--missing zero`, where they pass R's arguments (spelling hunt,
    2026-11-27, session 13). Now in R's syntax, as bf_embed()'s errors are; paths in R's quotes."""
    src, out = tmp_path / "in.csv", tmp_path / "it's.parquet"
    pd.DataFrame({"review": ["a cat", None]}).to_csv(src, index=False)
    args = ["embed", str(src), "--text-col", "review", "--model", tiny_bert, "--quiet"]

    def error_line(*extra):  # --out once: two values of it are refused
        status, _, stderr, _, _ = _r.run_cli([*args, *extra, *([] if "--out" in extra else ["--out", str(out)])])
        assert status == 2, stderr
        return stderr.strip()

    assert error_line() == ('bertfeat embed: error: row 1 of column "review" is blank (""): bertfeat treats empty '
                            "texts and texts of only whitespace, control, invisible or replacement characters as missing, "
                            'and missing = "error". Pass missing = "zero" for a zero vector, missing = "nan" for a row '
                            "of NaN, or drop or fill those rows first.")
    assert error_line("--stride", "3") == ('bertfeat embed: error: `stride` applies to long_text = "chunk" only; drop '
                                           '`stride` or add long_text = "chunk".')
    out.write_bytes(b"")
    assert error_line("--missing", "zero") == (
        f'bertfeat embed: error: output "{out}" exists; pass overwrite = TRUE to replace it.')
    # the output, which the command line calls --out, named as bf_embed_file() names it
    assert error_line("--out", str(tmp_path / "no" / "o.parquet")) == (
        f'bertfeat embed: error: the folder of output = "{tmp_path / "no" / "o.parquet"}" does not exist; create it '
        "first.")
    tsv = tmp_path / "copy.tsv"
    tsv.write_text("id\treview\n1\tLoved it.\\nWould watch again.\n")
    status, _, stderr, _, _ = _r.run_cli(["embed", str(tsv), "--text-col", "review", "--out",
                                          str(tmp_path / "f.parquet"), "--model", tiny_bert, "--quiet"])
    assert status == 2 and 'Pass quoting = "backslash" to read the file\'s escapes' in stderr, stderr
    assert "--quoting" not in stderr and "='" not in stderr, stderr


def test_argparses_refusals_reach_bf_embed_file_naming_its_arguments_in_r_syntax():
    """bf_embed_file(..., layers = "a") reached the command as --layers=a, and argparse's refusal named the flag:
    "argument --layers: ... got 'a' (see bertfeat embed --help)", and an unknown argument "unrecognized arguments:
    --no-such-option=1" (spelling hunt, 2026-11-27, session 13). The command line's own lines are as they were."""
    import contextlib
    import io

    from bertfeat.cli import main

    base = ["embed", "x.csv", "--text-col=t", "--out=o.parquet"]
    for extra, said in [
        (["--layers=a"], 'argument `layers`: expected an int or comma-separated ints such as -4,-3,-2,-1, got "a"'),
        (["--no-such-option=1"], "unrecognized arguments: no_such_option = 1"),
        (["--long-text=chunky"], 'argument `long_text`: invalid choice: "chunky" (choose from "truncate", "chunk")'),
        (["--max-length=x"], 'argument `max_length`: expected a positive integer, got "x"'),
    ]:
        status, _, stderr, _, _ = _r.run_cli([*base, *extra])
        assert (status, stderr.strip()) == (2, f"bertfeat embed: error: {said}"), stderr
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        main([*base, "--layers=a"])
    assert err.getvalue() == ("bertfeat embed: error: argument --layers: expected an int or comma-separated ints such "
                              "as -4,-3,-2,-1, got 'a' (see bertfeat embed --help)\n")


def test_the_cache_refusals_reach_r_without_the_pickled_pipelines_advice(tmp_path):
    """est.set_params(cache_dir=...) and <step>__cache_dir= are Python's; R's bf_embed() takes cache_dir per call and
    the step's bake() says how to set the prepped step's own."""
    from bertfeat.cache import open_cache
    from bertfeat.exceptions import CacheError

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for path in (blocker, blocker / "cache"):
        with pytest.raises(CacheError) as err:
            open_cache(path)
        advice = _r.r_advice(str(err.value))
        assert "set_params" not in advice and "Pipeline" not in advice and "pickled" not in advice, advice
        assert advice.endswith("Pass a writable directory on this machine, or cache_dir = NULL to run without a cache.")


def test_warnings_for_r_carry_r_syntax(tiny_bert):
    *_, warns = _r.embed([["the quick brown fox jumps over the lazy dog " * 10]], [[False]], None,
                         {"model": tiny_bert, "max_length": 8})
    assert warns == [("TruncationWarning", '1 of 1 texts were longer than max_length = 8 tokens and were truncated. '
                      'Pass long_text = "chunk" to embed them in full, or a larger max_length (up to the model\'s '
                      'limit of 64).')]


def test_a_text_the_tokenizer_drops_whole_is_named_by_rs_row_number(drops_characters):
    """Python's row 1 is R's row 2: a refusal only Python can make (the tokenizer keeps no token of the text) named
    the row before it, in a message R shows as is."""
    from tests.test_encode import DROPPED

    with pytest.raises(ValueError, match="^row 3 \\('\u03a9'\\) gives no token"):
        _r.embed([["a cat", "the cat", DROPPED[0]]], [[False, False, False]], None, {"model": drops_characters})
    with pytest.raises(ValueError, match="^row 2 of column 'b' \\('\u03a9'\\) gives no token"):
        _r.embed([["a cat", "the cat"], ["a dog", DROPPED[0]]], [[False, False], [False, False]], ["a", "b"],
                 {"model": drops_characters})
    X = _unpack(*_r.embed([["a cat", DROPPED[0]]], [[False, False]], None,
                          {"model": drops_characters, "missing": "nan"})[:3])
    assert np.isnan(X[1]).all() and not np.isnan(X[0]).any()
    # bf_probe() named it by Python's row ("row 4" for R's row 5) where bf_embed() says R's
    texts = [f"the cat sat {i}" for i in range(12)]
    texts[4] = DROPPED[0]
    with pytest.raises(ValueError, match="^row 5 \\('\u03a9'\\) gives no token"):
        _r.probe(texts, [False] * 12, ["a", "b"] * 6,
                 {"model": drops_characters, "cv": 2, "unions": 0, "poolings": ["mean"], "baseline": False})


def _features_file(path, ids, layout="columns"):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = {b"bertfeat": json.dumps({"layout": layout, "keep_columns": ["id"], "dims": 2}).encode()}
    table = pa.table({"id": pa.array(ids, pa.int64()), "t_mean_0": pa.array([float(i) for i in ids], pa.float32()),
                      "t_mean_1": pa.array([-float(i) for i in ids], pa.float32())}).replace_schema_metadata(meta)
    pq.write_table(table, path)


def test_read_features_reads_a_folder_in_the_order_of_its_names_and_refuses_what_is_not_the_columns_layout(tmp_path):
    """R's bf_read_features(): the Ray and Spark engines write a folder whose sorted names give the input order."""
    folder = tmp_path / "out"
    folder.mkdir()
    _features_file(folder / "part-000001.parquet", [3, 4])
    _features_file(folder / "part-000000.parquet", [1, 2])
    buf, n, d, names, kept, provenance = _r.read_features(str(folder))
    assert (n, d, names) == (4, 2, ["t_mean_0", "t_mean_1"]) and provenance["dims"] == 2
    assert np.frombuffer(bytes(buf), dtype="<f4").tolist() == [1, 2, 3, 4, -1, -2, -3, -4]  # column-major
    assert kept == [("id", "integer", [1, 2, 3, 4])]
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "other.parquet")
    with pytest.raises(ValueError, match="holds no bertfeat provenance"):
        _r.read_features(str(tmp_path / "other.parquet"))
    (tmp_path / "a.csv").write_text("a\n1\n")
    with pytest.raises(ValueError, match="cannot be read as parquet"):
        _r.read_features(str(tmp_path / "a.csv"))


def test_kept_columns_reach_r_as_values_r_holds_exactly():
    import datetime
    import decimal

    import pyarrow as pa

    def kind(values, type=None):
        return _r._kept_for_r("c", pa.chunked_array([pa.array(values, type)]))[1:]

    assert kind([1, None, 2**31 - 1]) == ("integer", [1, None, 2**31 - 1])
    assert kind([3_000_000_000, None]) == ("double", [3e9, None])
    assert kind([18446744073709551615], pa.uint64()) == ("character", ["18446744073709551615"])  # past 2**53
    assert kind([0.5, None]) == ("double", [0.5, None]) and kind([True, None]) == ("logical", [True, None])
    assert kind(["a", None]) == ("character", ["a", None])
    # dates and times as R's Date and POSIXct (api hunt, 2026-11-26, session 10: they were arrow's text, so an R
    # POSIXct id written by write.csv() as "2024-01-01 10:00:00" came back as "2024-01-01 10:00:00.000000000")
    assert kind([datetime.date(2026, 11, 26), None]) == ("date", [20783.0, None])
    assert kind([datetime.datetime(1970, 1, 2, 0, 0, 1, 500000), None], pa.timestamp("ms", tz="Europe/Paris")) == (
        "datetime", ["Europe/Paris", [86401.5, None]])
    assert kind([datetime.datetime(1970, 1, 2)], pa.timestamp("s", tz="+01:00")) == ("datetime", ["UTC", [86400.0]])
    # a time without a zone is a wall clock: R reads its text in the session's zone, as as.POSIXct() reads it
    assert kind([datetime.datetime(2024, 1, 1, 10, 0, 1, 500000), None], pa.timestamp("ns")) == (
        "datetime", ["", ["2024-01-01 10:00:01.500000000", None]])
    assert kind([decimal.Decimal("1.10")]) == ("character", ["1.10"])


def test_a_kept_duration_reaches_r_as_seconds_not_the_text_of_its_count():
    """A duration column (pandas' timedelta64, an R difftime the arrow package wrote) reached R as the text of its
    count in its unit, "5000000" for 5 seconds in microseconds, a number with no unit; now seconds, which R holds as a
    difftime, as the arrow R package reads it."""
    import datetime

    import pyarrow as pa

    for unit, scale in [("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9)]:
        column = pa.chunked_array([pa.array([5 * scale, None, -scale // 2 if scale > 1 else -2], pa.duration(unit))])
        assert _r._kept_for_r("c", column) == ("c", "duration", [5.0, None, -0.5 if scale > 1 else -2.0])
    days = pa.chunked_array([pa.array([datetime.timedelta(days=2, microseconds=3)])])
    assert _r._kept_for_r("c", days) == ("c", "duration", [172800.000003])


def test_kept_list_struct_and_binary_columns_reach_r_as_values_not_python_reprs():
    """A kept list column (tags a pandas frame wrote as lists) reached R as the text of Python's repr, "['x', 'y']",
    a struct as "{'a': 1, 'b': 'u'}" and bytes as the text "b'\\xff'" (api hunt, 2026-11-26, session 10): now each row
    of a list is described as its own vector (None where missing), a struct as the columns of a data frame, a map as
    a list of key/value frames and bytes as raw values, as the arrow R package reads them."""
    import pyarrow as pa

    def kind(values, type=None):
        return _r._kept_for_r("c", pa.chunked_array([pa.array(values, type)]))[1:]

    assert kind([["x", "y"], None, []], pa.list_(pa.string())) == (
        "list", [("character", ["x", "y"]), None, ("character", [])])
    assert kind([[1, None], [2**40], None], pa.large_list(pa.int64())) == (  # one kind for every row, past R's ints
        "list", [("double", [1.0, None]), ("double", [float(2**40)]), None])
    assert kind([[1.5, 2.0], None], pa.list_(pa.float64(), 2)) == ("list", [("double", [1.5, 2.0]), None])
    assert kind([[["a"], ["b", None]], None, [[]]], pa.list_(pa.list_(pa.string()))) == (
        "list", [("list", [("character", ["a"]), ("character", ["b", None])]), None, ("list", [("character", [])])])
    assert kind([{"a": 1, "b": "u"}, None, {"a": None, "b": "v"}]) == (
        "struct", (["a", "b"], [("integer", [1, None, None]), ("character", ["u", None, "v"])], 3))
    assert kind([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())) == (
        "list", [("struct", (["key", "value"], [("character", ["k"]), ("integer", [1])], 1)), None,
                 ("struct", (["key", "value"], [("character", []), ("integer", [])], 0))])
    assert kind([b"\x00a", None, b"\xff"]) == ("raw", [[0, 97], None, [255]])
    # (leftovers hunt, 2026-11-27, session 11) bytes of any layout, a dictionary of them too (a pandas categorical of
    # bytes written to parquet), as raw values: the dictionary's came as arrow's text where UTF-8 ("a") and as
    # Python's repr ("b'\\xff'") where not; and a list of any layout is a list, as the refusal of a text column reads it
    values = [b"\x00a", None, b"\xffa"]
    for column in (pa.array(values, pa.large_binary()), pa.array(values, pa.binary(2)),
                   pa.array(values, pa.binary()).dictionary_encode(),
                   *([pa.array(values, pa.binary_view())] if hasattr(pa, "binary_view") else [])):
        assert _r._kept_for_r("c", pa.chunked_array([column]))[1:] == ("raw", [[0, 97], None, [255, 97]]), column.type
    for name in ("list_view", "large_list_view"):
        if hasattr(pa, name):
            column = pa.chunked_array([pa.array([["x", "y"], None, []], getattr(pa, name)(pa.string()))])
            assert _r._kept_for_r("c", column)[1:] == ("list", [("character", ["x", "y"]), None, ("character", [])])
    from bertfeat.arrow import is_bytes_type, is_list_type, nested_kind

    # one reading of each question: the refusal of a text column and R's reading of a kept one
    for t in (pa.list_(pa.int8()), pa.large_list(pa.int8()), pa.list_(pa.int8(), 2),
              *(getattr(pa, n)(pa.int8()) for n in ("list_view", "large_list_view") if hasattr(pa, n))):
        assert is_list_type(t) and nested_kind(t) == "lists" and not is_bytes_type(t)
    assert not is_list_type(pa.map_(pa.string(), pa.int8())) and not is_list_type(pa.string())
    assert kind([["a cat", None]], pa.list_(pa.dictionary(pa.int8(), pa.string()))) == (
        "list", [("character", ["a cat", None])])
    sliced = pa.chunked_array([pa.array([["x"], ["y", "z"], None, ["w"]], pa.list_(pa.string())).slice(1)])
    assert _r._kept_for_r("c", sliced)[1:] == ("list", [("character", ["y", "z"]), None, ("character", ["w"])])


def test_read_features_reads_the_list_layout_as_the_matrix_and_names_of_the_columns_layout(tmp_path):
    """bf_read_features() refused a ``--layout list`` output ("write it again without layout": the whole model pass
    again); its list columns are the same matrix, named from the recorded recipe, also where concatenated layers pad
    to the width of a model of 10+ layers (l02, l10) and from Spark's variable-size lists."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from bertfeat.files import embed_file
    from tests.conftest import build_tiny_bert

    deep = str(build_tiny_bert(tmp_path / "deep", num_layers=10, hidden=8))
    src = tmp_path / "in.csv"
    pd.DataFrame({"id": [7, 8, 9], "title": ["a cat", None, "the dog"], "body": ["sat", "on it", "ran"]}).to_csv(
        src, index=False)
    got = {}
    for layout in ("columns", "list"):
        out = tmp_path / f"{layout}.parquet"
        embed_file(str(src), str(out), ["title", "body"], keep_cols=["id"], layout=layout, quiet=True, model=deep,
                   pooling="cls+mean", layers=[2, 10], layer_agg="concat", missing="nan")
        got[layout] = _r.read_features(str(out))
    (buf, n, d, names, kept, _), (lbuf, ln, ld, lnames, lkept, _) = got["columns"], got["list"]
    assert (ln, ld, lkept) == (n, d, kept) == (3, 2 * 2 * 2 * 8, [("id", "character", ["7", "8", "9"])])
    assert lnames == names and names[0] == "title_cls_l02_0" and "body_mean_l10_7" in names
    assert bytes(lbuf) == bytes(buf)
    # Spark's list layout: variable-size lists of float32
    table = pq.read_table(tmp_path / "list.parquet")
    spark = table.cast(pa.schema([f if not pa.types.is_fixed_size_list(f.type) else pa.field(f.name, pa.list_(pa.float32()))
                                  for f in table.schema], metadata=table.schema.metadata))
    pq.write_table(spark, tmp_path / "spark.parquet")
    assert bytes(_r.read_features(str(tmp_path / "spark.parquet"))[0]) == bytes(buf)
    # a list-layout file of concatenated layers by a bertfeat that did not record the model's layers: refused, saying
    meta = json.loads(table.schema.metadata[b"bertfeat"])
    del meta["num_layers"]
    pq.write_table(table.replace_schema_metadata({b"bertfeat": json.dumps(meta).encode()}), tmp_path / "old.parquet")
    with pytest.raises(ValueError, match="did not record the model's number of layers.*layout='columns'"):
        _r.read_features(str(tmp_path / "old.parquet"))


def test_the_probes_refusals_show_rs_whole_numbers_as_r_prints_them_and_its_labels_score_alike(tiny_bert):
    # bf_probe() sends numbers as doubles (integer and double read alike); a refusal naming a class showed Python's
    # float, "class(es) 2.0 (2)", where R prints 2
    texts = [f"the cat sat {i}" for i in range(12)]
    params = {"model": tiny_bert, "cv": 3, "unions": 0}
    for task in ("auto", "classification"):
        with pytest.raises(ValueError, match=r"^class\(es\) 2 \(2\) of the labels y have fewer members than the 3"):
            _r.probe(texts, [False] * 12, [1.0] * 10 + [2.0] * 2, {**params, "task": task})
    with pytest.raises(ValueError, match=r"^class\(es\) 1 \(1\) of the labels y have fewer groups holding them"):
        _r.probe(texts, [False] * 12, [1.0] * 6 + [2.0] * 6, {**params, "cv": 2, "groups": [1.0] * 6 + [2.0] * 5 + [3.0]})
    # only whole numbers that are classes cross back as ints: a regression, fractions and numbers past 10 values under
    # task='auto' (a regression) stay doubles, so the task is what bf_probe()'s help says
    assert _r._r_labels([1.0, 2.0, 2.0], "auto").dtype == np.int64
    assert _r._r_labels([1.0, 2.0, 2.0], "regression").dtype == np.float64
    assert _r._r_labels([1.0, 2.5, 2.0], "auto").dtype == np.float64
    assert _r._r_labels([float(v) for v in range(11)], "auto").dtype == np.float64
    assert _r._r_labels([float(v) for v in range(11)], "classification").dtype == np.int64
    assert _r._r_labels(["1", "2"], "auto").tolist() == ["1", "2"]
    # and they score as the doubles did: the same classes, folds and table
    y = [float(i % 2) for i in range(12)]
    run = {"model": tiny_bert, "cv": 2, "unions": 0, "poolings": ["mean"], "max_length": 8}
    got = _r.probe(texts, [False] * 12, y, run)
    from bertfeat import probe
    want = probe(texts, np.asarray(y), **run)
    assert got[0]["score"] == [float(v) for v in want.table["score"]] and got[4] == want.metric == "roc_auc"
