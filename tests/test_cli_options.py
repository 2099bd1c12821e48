"""The command line as a translator: each option's value checked as it is parsed; each command's options arriving,
value by value, at the API function it calls (spied on, so no model runs); the probe's and info's printouts; and
what main() makes of a failing command."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import stat

import pandas as pd
import pytest

from bertfeat.cli import main
from bertfeat.cli._options import int_list, non_negative_int, positive_int
from bertfeat.cli.embed import non_negative_float, positive_float

# -- option values ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("parse, text, value", [
    (int_list, "-1", -1), (int_list, "7", 7), (int_list, "-4,-3,-2,-1", [-4, -3, -2, -1]), (int_list, "3,", [3]),
    (int_list, " 2 , 5", [2, 5]),
    (positive_int, "1", 1), (positive_int, "10000", 10_000),
    (non_negative_int, "0", 0), (non_negative_int, "3", 3),
    (non_negative_float, "0", 0.0), (non_negative_float, "2.5", 2.5), (non_negative_float, "1e-3", 0.001),
    (positive_float, "0.5", 0.5), (positive_float, "4", 4.0),
])
def test_option_values_parse(parse, text, value):
    got = parse(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("parse, text, message", [
    (int_list, "last", "expected an int or comma-separated ints such as -4,-3,-2,-1, got 'last'"),
    (int_list, "1,two", "expected an int or comma-separated ints such as -4,-3,-2,-1, got '1,two'"),
    (int_list, ",", "expected at least one layer index"),
    (int_list, "", "expected at least one layer index"),
    (positive_int, "0", "expected a positive integer, got '0'"),
    (positive_int, "-3", "expected a positive integer, got '-3'"),
    (positive_int, "1.5", "expected a positive integer, got '1.5'"),
    (non_negative_int, "-1", "expected an integer >= 0, got '-1'"),
    (non_negative_int, "many", "expected an integer >= 0, got 'many'"),
    (non_negative_float, "-0.1", "expected a number >= 0, got '-0.1'"),
    (non_negative_float, "nan", "expected a number >= 0, got 'nan'"),
    (non_negative_float, "inf", "expected a number >= 0, got 'inf'"),
    (non_negative_float, "soon", "expected a number >= 0, got 'soon'"),
    (positive_float, "0", "expected a number > 0, got '0'"),
    (positive_float, "-2", "expected a number >= 0, got '-2'"),
])
def test_option_values_are_refused_with_what_was_expected(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        parse(text)
    assert str(err.value) == message


def test_a_refused_option_value_is_one_line_naming_the_option(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["embed", "x.csv", "--text-col", "t", "--out", "o.parquet", "--unknown-thing"])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit):
        main(["embed", "x.csv", "--text-col", "t", "--out", "o.parquet", "--checkpoint-every", "inf"])
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == ("bertfeat embed: error: argument --checkpoint-every: expected a number >= 0, got 'inf' "
                       "(see bertfeat embed --help)")


def test_a_probe_seed_past_the_folds_range_is_refused_as_the_option_it_is(tmp_path, capsys):
    """--random-state 4294967296 passed argparse (any integer >= 0) and was refused by probe() after the input was
    read, in the Python API's words: "random_state=4294967296 is not valid ... so that result.cv gives the very
    folds", a keyword and an attribute the command line has neither of (session 11 review)."""
    path = tmp_path / "d.csv"
    pd.DataFrame({"text": ["a b", "c d"], "label": [0, 1]}).to_csv(path, index=False)
    for seed in ("4294967296", "-1"):
        with pytest.raises(SystemExit) as exit_:
            main(["probe", str(path), "--text-col", "text", "--label-col", "label", "--random-state", seed])
        assert exit_.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"bertfeat probe: error: argument --random-state: expected an integer from 0 to 4294967295 (2**32 - 1), "
            f"got '{seed}' (see bertfeat probe --help)")


# -- each command's options, value by value, at the function it calls -------------------------------------------------

RECIPE_ARGS = ["--model", "some/model", "--pooling", "cls+max", "--layers=-3,-1", "--layer-agg", "concat",
               "--max-length", "64", "--long-text", "chunk", "--stride", "8", "--normalize", "--missing", "zero",
               "--device", "cpu", "--dtype", "float32", "--batch-tokens", "999", "--cache-dir", "/c", "--prefix", "q: "]
RECIPE = dict(model="some/model", pooling="cls+max", layers=[-3, -1], layer_agg="concat", max_length=64,
              long_text="chunk", stride=8, normalize=True, missing="zero", device="cpu", dtype="float32",
              batch_tokens=999, cache_dir="/c", prefix="q: ", prompt_name=None)
DEFAULT_RECIPE = dict(model="default", pooling="cls+mean", layers=None, layer_agg="mean", max_length=None,
                      long_text="truncate", stride=None, normalize=False, missing="error", device="auto", dtype="auto",
                      batch_tokens=None, cache_dir=None, prefix=None, prompt_name=None)


class Spy:
    def __init__(self, returns=None):
        self.calls, self.returns = [], returns

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self.returns


@pytest.fixture
def csv_input(tmp_path):
    path = tmp_path / "in.tsv"
    path.write_text("id\ttitle\tbody\n1\ta\tb\n")
    return str(path)


@pytest.fixture
def parquet_input(tmp_path):
    path = tmp_path / "in.parquet"
    pd.DataFrame({"id": [1], "title": ["a"], "body": ["b"]}).to_parquet(path)
    return str(path)


def test_embed_options_reach_embed_file(csv_input, monkeypatch):
    import bertfeat.files

    spy = Spy()
    monkeypatch.setattr(bertfeat.files, "embed_file", spy)
    assert main(["embed", csv_input, "--text-col", "title", "--text-col", "body", "--out", "o.parquet",
                 "--keep-col", "id", "--keep-col", "title", "--delimiter", "tab", "--infer-types",
                 "--quoting", "backslash", "--layout", "list", "--chunk-rows", "7", "--chunk-chars", "500", "--checkpoint-every", "2.5",
                 "--overwrite", "--quiet", *RECIPE_ARGS]) == 0
    assert spy.calls == [((csv_input, "o.parquet", ["title", "body"]), dict(
        keep_cols=["id", "title"], layout="list", overwrite=True, chunk_rows=7, quiet=True, delimiter="\t",
        infer_types=True, quoting="backslash", chunk_chars=500, checkpoint_seconds=2.5, **RECIPE))]


def test_embed_defaults_reach_embed_file(csv_input, monkeypatch):
    import bertfeat.files

    spy = Spy()
    monkeypatch.setattr(bertfeat.files, "embed_file", spy)
    assert main(["embed", csv_input, "--text-col", "title", "--out", "o.parquet", "--id-col", "id",
                 "--delimiter", "\\t", "--prompt-name", "query"]) == 0
    assert main(["embed", csv_input, "--text-col", "title", "--out", "o.parquet", "--delimiter", ";"]) == 0
    (_, first), (_, second) = spy.calls
    assert first == dict(keep_cols=["id"], layout="columns", overwrite=False, chunk_rows=10_000, quiet=False,
                         delimiter="\t", infer_types=False, quoting=None,
                         **dict(DEFAULT_RECIPE, prompt_name="query"))
    assert second["delimiter"] == ";" and second["keep_cols"] == []


EMBED_REFUSALS = [
    (["--text-col", "title", "--text-col", "title"], "--text-col names a column twice: 'title', 'title'."),
    (["--keep-col", "id", "--keep-col", "id"], "--keep-col names a column twice: 'id', 'id'."),
    (["--stride", "4"], "--stride applies to --long-text chunk only; drop --stride or add --long-text chunk."),
    (["--chunk-chars", "9", "--engine", "ray"], "--chunk-chars applies to the local engine only (--engine ray reads "
     "its input in batches of --chunk-rows rows); drop --chunk-chars."),
    (["--checkpoint-every", "5", "--engine", "spark"], "--checkpoint-every applies to the local engine only (--engine "
     "spark reads its input in batches of --chunk-rows rows); drop --checkpoint-every."),
    (["--master", "local[2]"], "--master applies to --engine spark only; add --engine spark or drop --master."),
    # where another engine is given, "add --engine spark" said to switch engines: now what that engine takes instead
    (["--master", "local[2]", "--engine", "ray"], "--master applies to --engine spark only, not --engine ray (the Ray "
     "engine joins the cluster RAY_ADDRESS names, or the one this process joined with ray.init(address=...)); drop "
     "--master."),
    (["--num-workers", "2"], "--num-workers applies to --engine ray only; add --engine ray or drop --num-workers."),
    (["--cpus-per-worker", "2", "--gpus-per-worker", "1", "--engine", "spark"], "--gpus-per-worker applies to "
     "--engine ray only, not --engine spark (Spark gives a task a GPU through its resource scheduling "
     "(spark.executor.resource.gpu.amount, spark.task.resource.gpu.amount)); drop --gpus-per-worker."),
    (["--num-workers", "2", "--engine", "spark"], "--num-workers applies to --engine ray only, not --engine spark "
     "(Spark runs as many tasks at once as its executors have cores (spark.executor.instances, spark.executor.cores): "
     "set those on the session); drop --num-workers."),
    (["--cpus-per-worker", "2"], "--cpus-per-worker applies to --engine ray only; add --engine ray or drop "
     "--cpus-per-worker."),
]


@pytest.mark.parametrize("args, message", EMBED_REFUSALS, ids=[" ".join(a) for a, _ in EMBED_REFUSALS])
def test_options_that_do_not_go_together_are_refused_before_any_work(csv_input, monkeypatch, capsys, args, message):
    import bertfeat.files
    import bertfeat.ray
    import bertfeat.spark

    spy = Spy()
    for module, name in ((bertfeat.files, "embed_file"), (bertfeat.ray, "embed_parquet"),
                         (bertfeat.spark, "embed_files")):
        monkeypatch.setattr(module, name, spy)
    if "--text-col" not in args:
        args = ["--text-col", "title", *args]
    assert main(["embed", csv_input, "--out", "o.parquet", *args]) == 2
    assert capsys.readouterr().err == f"bertfeat embed: error: {message}\n"
    assert spy.calls == []


GIVEN_TWICE = [
    # a column option beside the options that take several (--text-col, --keep-col): the first column was not kept
    ("embed", ["--id-col", "id", "--id-col", "title"], "argument --id-col: given twice, 'id' then 'title', and it "
     "takes one column: to keep several, pass --keep-col for each"),
    # probe's --model takes several models, embed's one: the first was never run
    ("embed", ["--model", "default", "--model", "./e5"], "argument --model: given twice, 'default' then './e5', and "
     "a job embeds with one model: `bertfeat probe` compares models, --model repeated"),
    ("embed", ["--pooling", "cls", "--pooling", "mean"], "argument --pooling: given twice, 'cls' then 'mean': "
     "several poolings are one value, --pooling cls+mean"),
    ("embed", ["--layers=-1", "--layers=-2"], "argument --layers: given twice, -1 then -2: several layers are one "
     "value, --layers=-2,-1"),
    ("embed", ["--out", "b.parquet"], "argument --out: given twice, 'o.parquet' then 'b.parquet': pass it once"),
    ("embed", ["--device", "cpu", "--device", "cuda"], "argument --device: given twice, 'cpu' then 'cuda': pass it "
     "once"),
    # embed's --text-col takes several columns, the probe's one: only the last was scored
    ("probe", ["--text-col", "title", "--text-col", "body"], "argument --text-col: given twice, 'title' then "
     "'body', and the probe scores one text column: run it once for each"),
    ("probe", ["--label-col", "id", "--label-col", "title"], "argument --label-col: given twice, 'id' then "
     "'title': pass it once"),
    ("cache", ["--namespace", "3f2a9c", "--namespace", "77aa01"], "argument --namespace: given twice, '3f2a9c' then "
     "'77aa01': pass it once"),
]


@pytest.mark.parametrize("command, args, message", GIVEN_TWICE, ids=[" ".join(a[:2]) for _, a, _ in GIVEN_TWICE])
def test_an_option_of_one_value_given_twice_is_refused_not_read_as_its_last(csv_input, monkeypatch, capsys,
                                                                          command, args, message):
    """argparse keeps an option's last value: ``--id-col user --id-col item`` wrote only ``item`` beside the
    features, ``bertfeat embed --model a --model b`` embedded with ``b`` alone, and ``bertfeat probe --text-col
    title --text-col body`` scored ``body`` alone, without a word, where a sibling option or the other command takes
    the option repeated for several. Two values of an option that takes one are refused, naming both."""
    import sys

    import bertfeat.files

    spy = Spy()
    monkeypatch.setattr(bertfeat.files, "embed_file", spy)
    monkeypatch.setattr(sys.modules["bertfeat.probe"], "probe", spy)
    argv = {"embed": ["embed", csv_input, "--text-col", "title", "--out", "o.parquet"],
            "probe": ["probe", csv_input, "--text-col", "title", "--label-col", "id"],
            "cache": ["cache", "clear", str(csv_input)]}[command]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, *args])
    assert exit_.value.code == 2
    prog = "bertfeat cache clear" if command == "cache" else f"bertfeat {command}"
    assert capsys.readouterr().err == f"{prog}: error: {message} (see {prog} --help)\n"
    assert spy.calls == []


def test_an_option_given_twice_with_the_same_value_is_that_value(csv_input, monkeypatch):
    import bertfeat.files

    spy = Spy()
    monkeypatch.setattr(bertfeat.files, "embed_file", spy)
    assert main(["embed", csv_input, "--text-col", "title", "--out", "o.parquet", "--id-col", "id", "--id-col", "id",
                 "--device", "cpu", "--device=cpu", "--layers=-2,-1", "--layers=-2,-1"]) == 0
    (_, kwargs), = spy.calls
    assert (kwargs["keep_cols"], kwargs["device"], kwargs["layers"]) == (["id"], "cpu", [-2, -1])


@pytest.mark.parametrize("engine", [[], ["--engine", "ray"], ["--engine", "spark"]])
def test_csv_options_with_parquet_input_are_refused(parquet_input, capsys, engine):
    for flag in (["--delimiter", ";"], ["--infer-types"], ["--quoting", "none"]):
        assert main(["embed", parquet_input, "--text-col", "title", "--out", "o.parquet", *flag, *engine]) == 2
        assert capsys.readouterr().err == (f"bertfeat embed: error: {flag[0]} applies to CSV input only, and "
                                           f"{parquet_input!r} is parquet; drop {flag[0]}.\n")


def test_csv_options_with_the_ray_engine_say_it_reads_parquet(csv_input, capsys):
    # the Ray engine reads parquet only; it was told that --delimiter "applies to the local engine only", and the
    # Spark engine, which takes it, was told the same
    assert main(["embed", csv_input, "--text-col", "title", "--out", "o", "--delimiter", ";", "--engine", "ray"]) == 2
    assert capsys.readouterr().err == (f"bertfeat embed: error: --engine ray reads parquet input only, and "
                                       f"{csv_input!r} is CSV; convert it to parquet first, or drop --engine ray.\n")


def test_embed_options_reach_the_ray_engine(parquet_input, monkeypatch):
    pytest.importorskip("ray")
    import bertfeat.ray

    spy = Spy()
    monkeypatch.setattr(bertfeat.ray, "embed_parquet", spy)
    assert main(["embed", parquet_input, "--text-col", "title", "--out", "o", "--keep-col", "id", "--engine", "ray",
                 "--layout", "list", "--chunk-rows", "7", "--overwrite", "--quiet", "--num-workers", "3",
                 "--cpus-per-worker", "1.5", *RECIPE_ARGS]) == 0
    assert main(["embed", parquet_input, "--text-col", "title", "--out", "o", "--engine", "ray",
                 "--gpus-per-worker", "0.5"]) == 0
    assert spy.calls[0] == ((parquet_input, "o", ["title"]), dict(
        keep_cols=["id"], layout="list", overwrite=True, batch_rows=7, quiet=True, num_workers=3, gpus_per_worker=0,
        cpus_per_worker=1.5, **RECIPE))
    assert spy.calls[1][1] == dict(keep_cols=[], layout="columns", overwrite=False, batch_rows=10_000, quiet=False,
                                   num_workers=None, gpus_per_worker=0.5, cpus_per_worker=None, **DEFAULT_RECIPE)


def test_embed_options_reach_the_spark_engine(csv_input, monkeypatch):
    pytest.importorskip("pyspark")
    import bertfeat.spark
    import bertfeat.spark_session

    spy = Spy()
    monkeypatch.setattr(bertfeat.spark, "embed_files", spy)
    monkeypatch.setattr(bertfeat.spark_session, "require_java", lambda: None)
    assert main(["embed", csv_input, "--text-col", "title", "--out", "o", "--id-col", "id", "--engine", "spark",
                 "--master", "local[2]", "--layout", "list", "--chunk-rows", "7", "--overwrite", "--quiet",
                 *RECIPE_ARGS]) == 0
    assert main(["embed", csv_input, "--text-col", "title", "--out", "o", "--engine", "spark", "--delimiter", ";",
                 "--infer-types", "--quoting", "none"]) == 0
    assert spy.calls == [((csv_input, "o", ["title"]), dict(
        keep_cols=["id"], layout="list", overwrite=True, batch_rows=7, master="local[2]", quiet=True, delimiter=None,
        infer_types=False, quoting=None, **RECIPE)), ((csv_input, "o", ["title"]), dict(
        keep_cols=[], layout="columns", overwrite=False, batch_rows=10_000, master=None, quiet=False, delimiter=";",
        infer_types=True, quoting="none", **DEFAULT_RECIPE))]


def test_the_ray_engine_refuses_csv_and_a_device_ray_does_not_give_in_one_line(csv_input, parquet_input, monkeypatch,
                                                                               capsys):
    pytest.importorskip("ray")
    import bertfeat.ray

    spy = Spy()
    monkeypatch.setattr(bertfeat.ray, "embed_parquet", spy)
    assert main(["embed", csv_input, "--text-col", "title", "--out", "o", "--engine", "ray"]) == 2
    assert capsys.readouterr().err == (f"bertfeat embed: error: --engine ray reads parquet input only, and "
                                       f"{csv_input!r} is CSV; convert it to parquet first, or drop --engine ray.\n")
    assert main(["embed", parquet_input, "--text-col", "title", "--out", "o", "--engine", "ray",
                 "--gpus-per-worker", "1", "--device", "cpu"]) == 2
    assert capsys.readouterr().err == (
        "bertfeat embed: error: --device cpu does not go with --gpus-per-worker 1: Ray gives each worker its GPU(s) and "
        "hides the others, so leave --device auto.\n")
    assert spy.calls == []


def test_the_spark_engine_looks_for_java_only_without_a_running_session(csv_input, monkeypatch, capsys):
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    import bertfeat.spark
    import bertfeat.spark_session

    spy, looked = Spy(), []

    def no_java():
        looked.append(True)
        raise RuntimeError("the Spark engine needs Java to start Spark, and none was found")

    monkeypatch.setattr(bertfeat.spark, "embed_files", spy)
    monkeypatch.setattr(bertfeat.spark_session, "require_java", no_java)
    args = ["embed", csv_input, "--text-col", "title", "--out", "o", "--engine", "spark"]
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    assert main(args) == 2 and looked == [True] and spy.calls == []
    assert capsys.readouterr().err == ("bertfeat embed: error: the Spark engine needs Java to start Spark, and none "
                                       "was found\n")
    # a session already running (spark-submit, Databricks) has its JVM: Java is not looked for
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: object()))
    assert main(args) == 0 and looked == [True] and len(spy.calls) == 1


class Revision:
    """A value JSON cannot hold (the report writes its text)."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


def probe_result():
    from sklearn.model_selection import StratifiedKFold

    from bertfeat.probe import ProbeResult

    table = pd.DataFrame({
        "rank": [1, 2, 3],
        "model": ["m/a", "m/b", "m/a"],
        "kind": ["union", "embedding", "tfidf"],
        "candidate": ["tfidf + cls L6", "mean L5", "tfidf"],
        "n_features": [1384, 384, 1000],
        "score": [0.91234, 0.9, 0.85],
        "std_err": [0.01, 0.02, 0.03],
        "params": [dict(model="m/a", pooling="cls", layers=6), dict(model="m/b", pooling="mean", layers=5), None],
    })
    return ProbeResult(
        table=table, metric="roc_auc", task="classification", recommended=dict(model="m/b", pooling="mean", layers=5),
        best=dict(model="m/a", pooling="cls", layers=6), num_layers=6,
        baseline=dict(name="tfidf + logistic", score=0.85, std_err=0.03), seconds=dict(fits=12.4),
        recommended_kind="embedding", recommended_rank=2,
        models={"m/a": dict(embed_seconds=3.2, embed_s_per_1k=0.8),
                "m/b": dict(embed_seconds=10.6, embed_s_per_1k=2.65, revision=Revision("v2"))},
        cv=StratifiedKFold(4, shuffle=True, random_state=7), random_state=7, classifier_params={"C_sparse": 10.0},
        chance={"name": "chance (every text scored alike)", "score": 0.5, "std_err": 0.0},
        folds={"n_splits": 4, "random_state": 7, "copies_kept_together": False, "n_groups": 2, "n_fold_groups": 2},
    )


def test_probe_options_reach_probe_and_its_result_is_printed(tmp_path, monkeypatch, capsys):
    probe_module = importlib.import_module("bertfeat.probe")  # bertfeat.probe is the function

    path = tmp_path / "d.csv"
    pd.DataFrame({"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 0, 1], "other": 1,
                  "who": ["u", "u", "v", "v"]}).to_csv(path, index=False)
    spy = Spy(probe_result())
    monkeypatch.setattr(probe_module, "probe", spy)
    report = tmp_path / "r.json"
    assert main(["probe", str(path), "--text-col", "text", "--label-col", "label", "--model", "m/a", "--model", "m/b",
                 "--task", "classification", "--cv", "4", "--random-state", "7", "--group-col", "who",
                 "--max-length", "32", "--long-text", "chunk",
                 "--normalize", "--prefix", "q: ", "--missing", "zero", "--device", "cpu", "--dtype", "float32",
                 "--cache-dir", "/c", "--no-baseline", "--unions", "0", "--plot", "p.png", "--json", str(report),
                 "--top", "2"]) == 0
    (args, kwargs), = spy.calls
    assert args[0] == ["a b", "c d", "e f", "g h"] and args[1].tolist() == [0, 1, 0, 1]
    assert kwargs == dict(model=["m/a", "m/b"], task="classification", cv=4, random_state=7,
                          groups=["u", "u", "v", "v"], max_length=32, long_text="chunk",
                          normalize=True, unions=0, prefix="q: ", prompt_name=None, missing="zero", device="cpu",
                          dtype="float32", cache_dir="/c", baseline=False, plot="p.png")
    out = capsys.readouterr().out.split("\n")
    result = probe_result()
    assert out[0] == ("bertfeat probe: 4 texts in 2 groups of who, each in one fold, classification, 4-fold "
                      "cross-validated roc_auc (embedding: m/a 3 s "
                      "(0.80 s per 1,000 texts), m/b 11 s (2.65 s per 1,000 texts); fits 12 s)")
    # the table as pandas lays it out (the top 2 rows), numbers to 4 places
    assert [line.split() for line in out[1:4]] == [
        ["rank", "model", "kind", "candidate", "n_features", "score", "std_err"],
        ["1", "m/a", "union", "tfidf", "+", "cls", "L6", "1384", "0.9123", "0.0100"],
        ["2", "m/b", "embedding", "mean", "L5", "384", "0.9000", "0.0200"],
    ]
    assert "\n".join(out[4:]) == (
        "tfidf + logistic: 0.8500 +/- 0.0300\n"
        "chance (every text scored alike): 0.5000 +/- 0.0000\n"
        "recommended: rank 2, embedding: mean L5 (the fewest features within one standard error of the best); as "
        "Python code:\n\n"
        f"{result.code()}\n"
        "plot: p.png\n"
    )
    assert report.read_text().startswith('{\n  "task": "classification",\n  "metric": "roc_auc",\n')
    saved = json.loads(report.read_text())
    assert saved["models"]["m/b"]["revision"] == "v2"
    assert {k: saved[k] for k in ("task", "metric", "recommended", "recommended_kind", "code", "missing", "models",
                                  "best", "baseline", "seconds")} == dict(
        task="classification", metric="roc_auc", recommended=result.recommended, recommended_kind="embedding",
        code=result.code(), missing="error", models=json.loads(json.dumps(result.models, default=str)),
        best=result.best, baseline=result.baseline, seconds=result.seconds)
    # what the scores were measured with (session 10)
    assert saved["folds"] == {"n_splits": 4, "random_state": 7, "copies_kept_together": False, "n_groups": 2,
                              "n_fold_groups": 2, "group_col": "who"}
    assert saved["chance"] == {"name": "chance (every text scored alike)", "score": 0.5, "std_err": 0.0}
    assert saved["linear_model"] == {"C_sparse": 10.0} and saved["tfidf"]["min_df"] == 2
    assert saved["table"][2] == dict(rank=3, model="m/a", kind="tfidf", candidate="tfidf", n_features=1000,
                                     score=0.85, std_err=0.03, params="null")
    assert json.loads(saved["table"][0]["params"]) == dict(model="m/a", pooling="cls", layers=6)




def test_probe_refuses_one_file_for_its_json_and_its_plot_before_any_work(tmp_path, monkeypatch, capsys):
    """``--json p.png --plot p.png`` (or two names of one file) wrote the plot, then the JSON over it, after the
    work: one of the two reports lost. Now refused before the input is read."""
    probe_module = importlib.import_module("bertfeat.probe")
    pd.DataFrame({"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 0, 1]}).to_csv(tmp_path / "d.csv", index=False)
    spy = Spy(probe_result())
    monkeypatch.setattr(probe_module, "probe", spy)
    monkeypatch.chdir(tmp_path)
    argv = ["probe", "d.csv", "--text-col", "text", "--label-col", "label"]
    for json_path, plot in (("r.png", "r.png"), ("r.png", "./r.png"), (str(tmp_path / "r.svg"), "r.svg")):
        assert main([*argv, "--json", json_path, "--plot", plot]) == 2
        assert capsys.readouterr().err == (f"bertfeat probe: error: --json {json_path!r} and --plot {plot!r} name "
                                           "one file; write the JSON and the plot to two files.\n")
    assert spy.calls == [] and sorted(os.listdir(tmp_path)) == ["d.csv"]


def test_probe_writes_its_json_through_a_link_and_into_a_pipe_as_a_stream(tmp_path, monkeypatch, capsys):
    """The JSON put in place whole (a rename) must not replace what a --json names that is no plain file: a link
    (``reports/latest.json`` pointing at a dated file) is written through and stays, and a named pipe (or
    ``/dev/stdout`` into ``| jq``, ``/dev/null``: run as root, a rename over it replaced the device) is written to as
    a stream."""
    import threading

    probe_module = importlib.import_module("bertfeat.probe")
    pd.DataFrame({"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 0, 1]}).to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.setattr(probe_module, "probe", Spy(probe_result()))
    argv = ["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--json"]
    (tmp_path / "dated.json").write_text("{}")
    (tmp_path / "latest.json").symlink_to(tmp_path / "dated.json")
    assert main([*argv, str(tmp_path / "latest.json")]) == 0
    assert (tmp_path / "latest.json").is_symlink()
    assert json.loads((tmp_path / "dated.json").read_text())["task"] == "classification"
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    read = []
    reader = threading.Thread(target=lambda: read.append(pipe.read_text()), daemon=True)
    reader.start()
    assert main([*argv, str(pipe)]) == 0
    reader.join(timeout=30)
    assert json.loads(read[0])["task"] == "classification"
    assert pipe.is_fifo() and sorted(os.listdir(tmp_path)) == ["d.csv", "dated.json", "latest.json", "pipe"]


@pytest.mark.parametrize("stdout", ["file", "pipe"])
def test_probe_json_to_dev_stdout_is_written_after_the_table_not_over_it(tmp_path, stdout):
    """``--json /dev/stdout > report.txt``: the JSON, put in place whole, was renamed over the file the shell had
    opened for standard output, so the table printed before it, and the lines after, went to a file no longer there:
    report.txt held the JSON alone. Into a pipe it was written through a second open of /dev/stdout, ahead of the
    table still in Python's buffer. Now a --json that is standard output's file is written to standard output, after
    the table, as a terminal shows it."""
    import subprocess
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pd.DataFrame({"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 0, 1]}).to_csv(tmp_path / "d.csv", index=False)
    code = ("import importlib, sys; from tests.test_cli_options import Spy, probe_result; "
            "importlib.import_module('bertfeat.probe').probe = Spy(probe_result()); from bertfeat.cli import main; "
            f"sys.exit(main(['probe', {str(tmp_path / 'd.csv')!r}, '--text-col', 'text', '--label-col', 'label', "
            "'--json', '/dev/stdout']))")
    env = dict(os.environ, PYTHONPATH=repo)
    if stdout == "file":
        with open(tmp_path / "report.txt", "w") as out:
            subprocess.run([sys.executable, "-c", code], stdout=out, cwd=repo, env=env, check=True, timeout=120)
        got = (tmp_path / "report.txt").read_text()
    else:
        got = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, cwd=repo, env=env, check=True,
                             text=True, timeout=120).stdout
    assert got.startswith("bertfeat probe: ")  # the table first
    report = json.loads(got[got.index("\n{") + 1:])  # then the JSON, whole
    assert report["task"] == "classification"
    assert sorted(os.listdir(tmp_path)) == ["d.csv"] + (["report.txt"] if stdout == "file" else [])


def test_probe_replacing_its_json_keeps_the_files_permissions(tmp_path, monkeypatch, capsys):
    """The JSON put in place whole (a rename of a new file) took the new file's permissions: a report a team shares
    (group-writable, 0o664, under a umask of 0o022) became 0o644, so the next teammate's run was refused, where
    open(path, 'w') had kept its mode. Now the file replaced keeps its mode; a new one takes the umask's."""
    probe_module = importlib.import_module("bertfeat.probe")
    pd.DataFrame({"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 0, 1]}).to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.setattr(probe_module, "probe", Spy(probe_result()))
    argv = ["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--json"]
    shared, new = tmp_path / "shared.json", tmp_path / "new.json"
    shared.write_text("{}")
    os.chmod(shared, 0o664)
    umask = os.umask(0o022)
    try:
        assert main([*argv, str(shared)]) == 0 and main([*argv, str(new)]) == 0
    finally:
        os.umask(umask)
    assert json.loads(shared.read_text())["task"] == "classification"
    assert (stat.S_IMODE(shared.stat().st_mode), stat.S_IMODE(new.stat().st_mode)) == (0o664, 0o644)


def test_probe_writes_its_json_whole_or_not_at_all(tmp_path, monkeypatch, capsys):
    """The JSON was written into the file as it was encoded: stopped midway (Ctrl-C, a full disk, a crash), it left
    half a JSON under the name a script then parses, an earlier run's report lost. Now it is put in place whole."""
    import json as json_module

    probe_module = importlib.import_module("bertfeat.probe")
    pd.DataFrame({"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 0, 1]}).to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.setattr(probe_module, "probe", Spy(probe_result()))
    report = tmp_path / "p.json"
    report.write_text('{"earlier": "run"}')
    encode = json_module.JSONEncoder.iterencode

    def stopped(self, o, *args, **kwargs):  # Ctrl-C after the first pieces of the JSON
        for n, piece in enumerate(encode(self, o, *args, **kwargs)):
            if n == 20:
                raise KeyboardInterrupt
            yield piece

    monkeypatch.setattr(json_module.JSONEncoder, "iterencode", stopped)
    argv = ["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--json", str(report)]
    assert main(argv) == 130
    assert report.read_text() == '{"earlier": "run"}' and sorted(os.listdir(tmp_path)) == ["d.csv", "p.json"]
    monkeypatch.setattr(json_module.JSONEncoder, "iterencode", encode)
    assert main(argv) == 0
    assert json_module.loads(report.read_text())["recommended"] == dict(model="m/b", pooling="mean", layers=5)
    assert sorted(os.listdir(tmp_path)) == ["d.csv", "p.json"]

@pytest.mark.parametrize("kind", ["csv", "parquet", "folder"])
def test_probe_refuses_to_write_its_json_over_its_input_or_into_a_folder_before_any_work(tmp_path, monkeypatch,
                                                                                       capsys, kind):
    """``bertfeat probe data.csv ... --json data.csv`` (a completion of the wrong name) wrote the JSON over the
    labelled data after every model had run, the data lost; ``--json reports`` (a folder) or ``--plot figs/`` failed
    only after the work ("Is a directory"). Each is refused before the input is read, the input left whole."""
    probe_module = importlib.import_module("bertfeat.probe")  # bertfeat.probe is the function

    frame = pd.DataFrame({"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 0, 1]})
    if kind == "csv":
        given = tmp_path / "d.csv"
        frame.to_csv(given, index=False)
        target = given
    else:
        given = tmp_path / "d.parquet"
        frame.to_parquet(given)
        target = given
        if kind == "folder":  # a file of a folder input, named by another path (a link into it)
            given = tmp_path / "data"
            given.mkdir()
            target = given / "d.parquet"
            (tmp_path / "d.parquet").rename(target)
            (tmp_path / "lnk").symlink_to(given)
    before = target.read_bytes()
    spy = Spy(probe_result())
    monkeypatch.setattr(probe_module, "probe", spy)
    json_path = target if kind != "folder" else tmp_path / "lnk" / "d.parquet"
    (tmp_path / "reports").mkdir()
    (tmp_path / "figs").mkdir()
    argv = ["probe", str(given), "--text-col", "text", "--label-col", "label"]
    assert main([*argv, "--json", str(json_path)]) == 2
    assert capsys.readouterr().err == (f"bertfeat probe: error: --json {str(json_path)!r} is the input file "
                                       f"{str(target)!r}; write the JSON to another file.\n")
    assert main([*argv, "--json", str(tmp_path / "reports")]) == 2
    assert capsys.readouterr().err == (f"bertfeat probe: error: --json {str(tmp_path / 'reports')!r} is a folder; "
                                       "name a file in it to write the JSON to.\n")
    assert main([*argv, "--plot", str(tmp_path / "figs") + "/"]) == 2
    assert capsys.readouterr().err == (f"bertfeat probe: error: --plot {str(tmp_path / 'figs') + '/'!r} is a folder; "
                                       "name a file in it to write the plot to.\n")
    assert spy.calls == [] and target.read_bytes() == before


def test_probe_writes_its_json_and_plot_given_with_a_tilde_in_the_home_folder(tmp_path, monkeypatch, capsys):
    """``--json=~/probe.json`` (a ``~`` the shell leaves as written, as after ``=`` or in quotes) was refused before
    the work, "its folder '.../~' does not exist; create it first", advice that makes a folder named ``~`` in the
    working directory; INPUT, ``--out``, ``--model`` and ``--cache-dir`` read it as the home folder. So does the
    Python API's ``plot=``."""
    probe_module = importlib.import_module("bertfeat.probe")  # bertfeat.probe is the function

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 0, 1]}).to_csv("d.csv", index=False)
    spy = Spy(probe_result())
    monkeypatch.setattr(probe_module, "probe", spy)
    assert main(["probe", "d.csv", "--text-col", "text", "--label-col", "label", "--json=~/r.json",
                 "--plot=~/p.png"]) == 0
    assert json.loads((home / "r.json").read_text())["task"] == "classification"
    assert spy.calls[0][1]["plot"] == str(home / "p.png")
    assert not (tmp_path / "~").exists()
    monkeypatch.undo()  # the real probe: its plot= refused before any work, naming the home folder's missing folder
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(ValueError, match=f"its folder {str(home / 'figs')!r} does not exist"):
        probe_module.probe(["a b", "c d", "e f", "g h"], [0, 1, 0, 1], plot="~/figs/p.png")


def test_probe_reads_a_csv_of_another_delimiter_as_its_refusal_says(tmp_path, monkeypatch, capsys):
    """A ';'-separated CSV (a European Excel export) was refused by the probe with "pass --delimiter ';'", an option
    only embed had: "unrecognized arguments: --delimiter ;". The probe now takes --delimiter as embed does."""
    probe_module = importlib.import_module("bertfeat.probe")
    path = tmp_path / "semi.csv"
    path.write_text("text;label\na b;0\nc, d;1\ne f;0\ng h;1\n")
    assert main(["probe", str(path), "--text-col", "text", "--label-col", "label"]) == 2
    assert capsys.readouterr().err.endswith("pass --delimiter ';'.\n")
    spy = Spy(probe_result())
    monkeypatch.setattr(probe_module, "probe", spy)
    assert main(["probe", str(path), "--text-col", "text", "--label-col", "label", "--delimiter", ";"]) == 0
    (args, _), = spy.calls
    assert args[0] == ["a b", "c, d", "e f", "g h"] and args[1].tolist() == [0, 1, 0, 1]
    tabs = tmp_path / "tabs.csv"
    tabs.write_text("text\tlabel\na b\t0\nc d\t1\n")
    assert main(["probe", str(tabs), "--text-col", "text", "--label-col", "label", "--delimiter", "tab"]) == 0
    assert spy.calls[-1][0][0] == ["a b", "c d"]
    pd.DataFrame({"text": ["a"], "label": [0]}).to_parquet(tmp_path / "p.parquet")
    assert main(["probe", str(tmp_path / "p.parquet"), "--text-col", "text", "--label-col", "label", "--delimiter",
                 ";"]) == 2
    assert capsys.readouterr().err == (f"bertfeat probe: error: --delimiter applies to CSV input only, and "
                                       f"{str(tmp_path / 'p.parquet')!r} is parquet; drop --delimiter.\n")


def test_probe_reads_csv_labels_by_every_value_not_by_the_first_block(tmp_path, monkeypatch, capsys):
    """The probe read a CSV's labels with --infer-types' guess from the first 1 MB block: a label column of whole
    numbers there and 'unknown' (or 2.5) further on failed after the whole read with "drop infer_types
    (--infer-types) to read kept columns as written", an option the probe does not have. Now the labels are read as
    written and are numbers where every one is (whole numbers as int64, else float64), else classes as written."""
    probe_module = importlib.import_module("bertfeat.probe")
    spy = Spy(probe_result())
    monkeypatch.setattr(probe_module, "probe", spy)
    path = tmp_path / "labels.csv"
    head = "".join(f"text {i},{i % 3}\n" for i in range(120_000))  # past the first read block
    for last, want in (("unknown", ["0", "1", "2", "unknown"]), ("2.5", [0.0, 1.0, 2.0, 2.5]), ("2", [0, 1, 2])):
        path.write_text("text,label\n" + head + f"late,{last}\n")
        assert main(["probe", str(path), "--text-col", "text", "--label-col", "label"]) == 0, capsys.readouterr().err
        labels = spy.calls[-1][0][1]
        assert len(labels) == 120_001 and sorted(set(labels.tolist())) == want
        assert type(labels.tolist()[-1]) is type(want[-1])
    path.write_text("text,label\na,1\nb,\nc,NA\nd,2\n")  # missing labels stay missing (the probe refuses them)
    assert main(["probe", str(path), "--text-col", "text", "--label-col", "label"]) == 0
    assert pd.isna(spy.calls[-1][0][1][1:3]).all() and spy.calls[-1][0][1][[0, 3]].tolist() == [1, 2]


def test_probe_reads_csv_labels_with_spaces_or_a_plus_sign_as_the_numbers_pandas_and_r_read(tmp_path, monkeypatch):
    """A CSV written "text, label" (a space after each comma) or with right-aligned numbers held labels " 0.5": the
    probe read them as classes as written (" 0.5", " 1.25", ...: refused as rare classes, or, with --task regression,
    as "not numeric"), and " 1" beside "1" as two classes, where pandas.read_csv and R's read.csv read the numbers
    0.5 and 1, so the API on pandas' frame and R's bf_probe() scored another task. Spaces around a number, and a plus
    sign before one, are read as pandas and R read them; a column with any other text stays as written."""
    probe_module = importlib.import_module("bertfeat.probe")
    spy = Spy(probe_result())
    monkeypatch.setattr(probe_module, "probe", spy)
    path = tmp_path / "spaced.csv"
    for labels, want in (([" 0.5", " 1.25 ", "2", "+3", "-4"], [0.5, 1.25, 2.0, 3.0, -4.0]),
                         ([" 1", "1", "+2 ", "\t3", "-4"], [1, 1, 2, 3, -4]),
                         ([" 1", "1", "one"], [" 1", "1", "one"])):
        path.write_text("text,label\n" + "".join(f"t{i},{v}\n" for i, v in enumerate(labels)))
        assert main(["probe", str(path), "--text-col", "text", "--label-col", "label"]) == 0
        got = spy.calls[-1][0][1]
        assert got.tolist() == want and type(got.tolist()[0]) is type(want[0])
        assert got.tolist() == pd.read_csv(path)["label"].tolist() or want[-1] == "one"


def test_probe_defaults_reach_probe_and_one_model_has_no_model_column(tmp_path, monkeypatch, capsys):
    probe_module = importlib.import_module("bertfeat.probe")  # bertfeat.probe is the function

    path = tmp_path / "d.csv"
    pd.DataFrame({"text": ["a", "b"], "label": [0.5, 1.5]}).to_csv(path, index=False)
    result = probe_result()
    result.models = {"m/b": result.models["m/b"]}
    result.baseline = None
    spy = Spy(result)
    monkeypatch.setattr(probe_module, "probe", spy)
    assert main(["probe", str(path), "--text-col", "text", "--label-col", "label"]) == 0
    (args, kwargs), = spy.calls
    assert args[1].dtype.kind == "f" and args[1].tolist() == [0.5, 1.5]  # numbers stay numbers: a regression
    assert kwargs == dict(model=["default"], task="auto", cv=5, random_state=0, groups=None, max_length=None,
                          long_text="truncate", normalize=False, unions=3, prefix=None, prompt_name=None,
                          missing="error", device="auto", dtype="auto", cache_dir=None, baseline=True, plot=None)
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["rank", "kind", "candidate", "n_features", "score", "std_err"]
    # header, table, no baseline, the chance line, no plot
    assert len(out) == 1 + 4 + 1 + 3 + len(result.code().splitlines())
    assert out[5] == "chance (every text scored alike): 0.5000 +/- 0.0000"
    assert not any(line.startswith(("plot:", "tfidf + logistic")) for line in out)


def test_probe_refuses_a_file_without_rows(tmp_path, capsys):
    path = tmp_path / "d.csv"
    path.write_text("text,label\n")
    assert main(["probe", str(path), "--text-col", "text", "--label-col", "label"]) == 2
    assert f"input {str(path)!r} has no rows." in capsys.readouterr().err


# -- bertfeat info's text ---------------------------------------------------------------------------------------------

INFO = {
    "model": "org/model", "path": "/models/org-model", "model_type": "bert", "layers": 12, "hidden_size": 768,
    "max_length": 512, "weights_sha256": "0123456789abcdef" + "f" * 48, "weights_tensors": 199, "revision": "abc123",
    "own_pooling": {"pooling": "cls", "normalize": True, "max_seq_length": 256, "do_lower_case": False,
                    "not_applied": [], "include_prompt": True},
    "prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": "query",
    "default_recipe": {"pooling": ["cls", "mean"], "layers": [9, 10, 11, 12], "layer_agg": "concat",
                       "max_length": 512, "long_text": "truncate", "normalize": False, "dtype": "auto",
                       "hidden_size": 768},
    "default_device": "cpu",
    "machine": {"cpu": "Some CPU", "arch": "x86_64", "allotted_cores": 2, "threads": 2, "torch": "2.13.0",
                "torch_cpu_capability": "AVX512", "flags": ["avx2", "avx512f"],
                "native_dtypes": ["float32", "bfloat16"],
                "matmul_shape": [64, 768, 3072], "matmul_gflops": {"float32": 401.4, "bfloat16": 0.0},
                "fastest_dtype": "float32", "cpu_kernels": "onednn",
                "forward_pass": "onednn-float32 (AVX-512: oneDNN's fused kernels first)"},
}


def test_info_text_word_for_word(monkeypatch, capsys):
    import bertfeat.cli.info as info_module

    seen = []
    monkeypatch.setattr(info_module, "describe", lambda model, machine: seen.append((model, machine)) or INFO)
    assert main(["info", "org/model"]) == 0
    assert capsys.readouterr().out.split("\n") == [
        "model:        org/model",
        "path:         /models/org-model",
        "type:         bert, 12 layers, hidden size 768, max length 512 tokens",
        "weights:      sha256 0123456789abcdef... (revision abc123), 199 tensors, all fit config.json and the "
        "tokenizer",
        "own pooling:  cls, normalize=True, max_seq_length=256",
        "prompts:      query = 'query: ' (the model's default); passage = 'passage: '  (use with --prompt-name NAME / "
        "prompt_name=)",
        "default recipe: pooling=cls+mean layers=[9, 10, 11, 12] layer_agg=concat max_length=512 long_text=truncate "
        "normalize=False dtype=auto on device='auto' (cpu here) -> 6144 features per text column",
        "machine:      Some CPU (x86_64), 2 cores allotted, 2 threads, torch 2.13.0 (AVX512)",
        "instructions: avx2 avx512f",
        "native dtypes: float32, bfloat16 (this CPU)",
        "matmul GFLOP/s at this model's shape (64, 768, 3072): float32 401, bfloat16 n/a; fastest on this CPU: "
        "dtype='float32'",
        "CPU kernels:  onednn (BERTFEAT_CPU_KERNELS=onednn|torch to change)",
        "forward pass: onednn-float32 (AVX-512: oneDNN's fused kernels first), float32 on this CPU",
        "",
    ]
    bare = dict(INFO, revision=None, prompts={},
                own_pooling=dict(pooling=None, normalize=None, max_seq_length=None, do_lower_case=False,
                                 not_applied=[], include_prompt=True),
                default_recipe=dict(INFO["default_recipe"], layer_agg="mean"))
    bare.pop("machine")
    monkeypatch.setattr(info_module, "describe", lambda model, machine: seen.append((model, machine)) or bare)
    assert main(["info", "--no-machine"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[3] == "weights:      sha256 0123456789abcdef..., 199 tensors, all fit config.json and the tokenizer"
    assert lines[4:7] == [
        "own pooling:  none declared (not a sentence-transformers model)",
        "prompts:      none",
        "default recipe: pooling=cls+mean layers=[9, 10, 11, 12] layer_agg=mean max_length=512 long_text=truncate "
        "normalize=False dtype=auto on device='auto' (cpu here) -> 1536 features per text column",
    ]
    assert len(lines) == 8 and seen == [("org/model", True), ("default", False)]
    assert main(["info", "--json", "--no-machine"]) == 0
    assert capsys.readouterr().out == json.dumps(bare, indent=2) + "\n"
    machine = dict(INFO["machine"], flags=[])
    monkeypatch.setattr(info_module, "describe", lambda model, **kw: dict(INFO, machine=machine))
    assert main(["info"]) == 0
    assert "instructions: none of those bertfeat looks for\n" in capsys.readouterr().out
    # where the OS lists none (Windows), nothing is said of the CPU's instruction sets or of its native dtypes
    machine = dict(INFO["machine"], flags=None, native_dtypes=None)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert ("instructions: not listed by this OS (nothing is known of them here; the rates measured below say which "
            "dtype runs fastest)\n") in out
    assert "native dtypes: not known (this OS lists no instruction sets)\n" in out
    assert "Rosetta" not in out
    # an x86_64 Python under Rosetta on Apple silicon: runs translated, without the Apple GPU
    machine = dict(INFO["machine"], rosetta=True)
    assert main(["info"]) == 0
    assert ("\nrosetta:      this Python is x86_64 code that Rosetta translates on Apple silicon, slower than native "
            "and without the Apple GPU (MPS): install an arm64 Python (python.org's, Miniforge's) to run natively and "
            "use device='mps'\n") in capsys.readouterr().out


def test_info_names_the_device_its_default_recipe_is_for_and_loads_the_model_once(tiny_bert, monkeypatch, capsys):
    """On a GPU machine (an H100 host) the default recipe's line said dtype=bfloat16, the recipe resolved for
    device='auto' (the GPU), right above the CPU's lines ending "fastest here: dtype='float32'", neither saying which
    device it spoke of; and info loaded the model twice (the weights check, then the forward-pass line)."""
    import bertfeat.backend
    import bertfeat.gpu
    import bertfeat.model_files

    monkeypatch.setattr(bertfeat.gpu, "device_count", lambda: 1)
    monkeypatch.setattr(bertfeat.gpu, "cuda_available", lambda: True)
    monkeypatch.setattr(bertfeat.gpu, "native_bf16", lambda index: True)
    loads = []
    real = bertfeat.model_files.load_checked_model
    counted = lambda *a, **kw: loads.append(a[0].path) or real(*a, **kw)  # noqa: E731
    # where it is looked up: the backend's load, and the weights check of info without the machine report
    monkeypatch.setattr(bertfeat.backend, "load_checked_model", counted)
    monkeypatch.setattr(bertfeat.model_files, "load_checked_model", counted)
    monkeypatch.setattr(bertfeat.backend, "_REGISTRY", {})  # a model loaded by another test would not be loaded
    assert main(["info", tiny_bert, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["default_device"] == "cuda" and info["default_recipe"]["dtype"] == "bfloat16"
    assert info["weights_tensors"] > 0 and loads == [tiny_bert]
    assert main(["info", tiny_bert]) == 0
    lines = capsys.readouterr().out.splitlines()
    recipe = next(line for line in lines if line.startswith("default recipe:"))
    assert recipe.endswith(" dtype=bfloat16 on device='auto' (cuda here) -> 64 features per text column")
    assert any(line.endswith(f"fastest on this CPU: dtype={info['machine']['fastest_dtype']!r}") for line in lines)
    assert any(line.startswith("native dtypes: ") and line.endswith(" (this CPU)") for line in lines)
    monkeypatch.setattr(bertfeat.gpu, "device_count", lambda: 0)
    monkeypatch.setattr(bertfeat.gpu, "cuda_available", lambda: False)
    assert main(["info", tiny_bert, "--no-machine", "--json"]) == 0
    assert loads == [tiny_bert] and capsys.readouterr().out  # the model this process loaded on the CPU, checked there
    monkeypatch.setattr(bertfeat.backend, "_REGISTRY", {})
    assert main(["info", tiny_bert, "--no-machine", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["default_device"] == "cpu" and info["default_recipe"]["dtype"] == "float32"
    assert loads == [tiny_bert, tiny_bert]  # without the machine report: the model's load and its checks alone


@pytest.mark.parametrize("config, size", [
    ({"intermediate_size": 1536}, 1536), ({"ffn_dim": 1000}, 1000), ({"hidden_dim": 1200}, 1200),
    ({"intermediate_size": None, "ffn_dim": 900}, 900), ({}, 4 * 96), (None, 4 * 96), ("{not json", 4 * 96),
    ("[1536]", 4 * 96),
])
def test_the_machine_report_reads_the_feed_forward_width_from_config(tmp_path, config, size):
    from bertfeat.models import feed_forward_width

    if config is not None:
        (tmp_path / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    assert feed_forward_width(str(tmp_path), 96) == size



def test_the_feed_forward_width_is_read_from_a_utf8_config_whatever_the_locale(tmp_path, monkeypatch):
    """config.json was read in the locale's encoding: on Windows (cp1252) a model whose labels are not Latin
    ("id2label": {"0": "负面"}) failed to decode, and `bertfeat info` measured its rates at 4 x hidden, not the
    model's width."""
    from pathlib import Path

    from bertfeat.models import feed_forward_width

    (tmp_path / "config.json").write_text(json.dumps({"intermediate_size": 1000, "id2label": {"0": "负面"}},
                                                     ensure_ascii=False), encoding="utf-8")
    real = Path.read_text
    # Windows' locale encoding where none is named
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None, errors=None: real(self, encoding or "cp1252",
                                                                                        errors))
    assert feed_forward_width(str(tmp_path), 96) == 1000


def test_info_without_the_machine_report_has_no_machine_key(tiny_bert):
    from bertfeat.cli.info import describe

    info = describe(tiny_bert, machine=False)
    assert "machine" not in info and info["weights_tensors"] > 0 and info["layers"] == 3
    assert not any(k.endswith("sha256") for k in info["default_recipe"])


def test_info_reports_a_sentence_transformers_models_own_pooling(tiny_bert, tmp_path):
    import inspect
    import shutil

    from bertfeat.cli.info import describe

    model = tmp_path / "st-model"
    shutil.copytree(tiny_bert, model)
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True}))
    (model / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 48}))
    info = describe(str(model), machine=False)
    assert info["own_pooling"] == {"pooling": "cls+mean", "normalize": True, "max_seq_length": 48,
                                   "do_lower_case": False, "not_applied": [], "include_prompt": True,
                                   "settings_file": "sentence_bert_config.json"}
    assert describe(tiny_bert, machine=False)["own_pooling"] == {"pooling": None, "normalize": False,
                                                                 "max_seq_length": None, "do_lower_case": False,
                                                                 "not_applied": [], "include_prompt": True,
                                                                 "settings_file": None}
    # describe() is what `bertfeat info` runs with no arguments: the bundled model and the machine report
    defaults = {k: p.default for k, p in inspect.signature(describe).parameters.items()}
    assert defaults == {"model": "default", "machine": True}
    assert describe(machine=False)["model"] == describe("default", machine=False)["model"]
    # a pooling bertfeat does not offer (last token, weighted mean: decoder embedders) was "none declared (not a
    # sentence-transformers model)", a false statement, and the user was never told the model pools otherwise
    import contextlib
    import io

    from bertfeat.cli import main

    for name, config, said in (("last", {"pooling_mode_lasttoken": True}, "lasttoken"),
                               ("weighted", {"pooling_mode": "weightedmean"}, "weightedmean")):
        other = tmp_path / name
        shutil.copytree(model, other)
        (other / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **config}))
        assert describe(str(other), machine=False)["own_pooling"]["pooling"] == said
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["info", str(other), "--no-machine"]) == 0
        own = next(line for line in out.getvalue().splitlines() if line.startswith("own pooling:"))
        assert own == (f"own pooling:  {said} (not a pooling bertfeat offers: cls, mean, max), normalize=True, "
                       "max_seq_length=48")
        assert "lowercase:" not in out.getvalue()
    # do_lower_case (sentence-transformers lowercases every text first): said, as bertfeat now does it too
    (model / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 48, "do_lower_case": True}))
    assert describe(str(model), machine=False)["own_pooling"]["do_lower_case"] is True
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", str(model), "--no-machine"]) == 0
    assert ("lowercase:    do_lower_case=True in sentence_bert_config.json: every text (its prefix with it) is "
            "lowercased before the tokenizer, as sentence-transformers does") in out.getvalue().splitlines()
    # an edit to a module's file is seen in the same process (the description was kept for the model's top files)
    (other / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32,
                                                                 "pooling_mode_max_tokens": True}))
    assert describe(str(other), machine=False)["own_pooling"]["pooling"] == "max"


def test_info_reads_max_seq_length_and_lowercasing_where_sentence_transformers_does(tiny_bert, tmp_path):
    # (leftovers hunt) a model saved by sentence-transformers 6 keeps its length in the tokenizer (model_max_length in
    # tokenizer_config.json; its sentence_bert_config.json has no max_seq_length), and `bertfeat info` showed
    # max_seq_length=None where sentence-transformers reads 20 (capped at max_position_embeddings); and an older
    # save's sentence_roberta_config.json with do_lower_case was said to be "in sentence_bert_config.json".
    import contextlib
    import io
    import shutil

    from bertfeat.cli.info import describe

    model = tmp_path / "st6"
    shutil.copytree(tiny_bert, model)
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": "mean"}))
    (model / "sentence_bert_config.json").write_text(json.dumps({"transformer_task": "feature-extraction"}))
    tok_config = json.loads((model / "tokenizer_config.json").read_text())
    max_pos = json.loads((model / "config.json").read_text())["max_position_embeddings"]
    for kept, read in ((20, 20), (None, max_pos), (10**30, max_pos), (max_pos + 100, max_pos)):
        (model / "tokenizer_config.json").write_text(json.dumps(
            {**{k: v for k, v in tok_config.items() if k != "model_max_length"},
             **({"model_max_length": kept} if kept is not None else {})}))
        assert describe(str(model), machine=False)["own_pooling"]["max_seq_length"] == read, kept
    (model / "sentence_bert_config.json").unlink()
    (model / "sentence_roberta_config.json").write_text(json.dumps({"max_seq_length": 16, "do_lower_case": True}))
    assert describe(str(model), machine=False)["own_pooling"]["max_seq_length"] == 16
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", str(model), "--no-machine"]) == 0
    assert ("lowercase:    do_lower_case=True in sentence_roberta_config.json: every text (its prefix with it) is "
            "lowercased before the tokenizer, as sentence-transformers does") in out.getvalue().splitlines()
    assert describe(tiny_bert, machine=False)["own_pooling"]["max_seq_length"] is None  # no s-t model: none


def test_info_measures_the_machine_at_the_models_own_shapes(tiny_bert, monkeypatch):
    import bertfeat.hardware
    from bertfeat.cli.info import describe

    shapes = []
    monkeypatch.setattr(bertfeat.hardware, "machine_report", lambda *shape: shapes.append(shape) or {"cpu": "x"})
    machine = describe(tiny_bert)["machine"]
    assert machine.pop("forward_pass").startswith(("onednn-float32", "torch-float32")) and machine == {"cpu": "x"}
    assert shapes == [(32, 37)]  # the tiny BERT's hidden and feed-forward widths (tests/conftest.py)
    # a config that does not say its feed-forward width: BERT's own, four times the hidden size
    from types import SimpleNamespace

    from bertfeat.cli.info import _machine

    _machine(SimpleNamespace(path=str(tiny_bert) + "/no-such-folder", hidden_size=96))
    assert shapes[-1] == (96, 384)


# -- what main() makes of a command's failure -------------------------------------------------------------------------


@pytest.mark.parametrize("error, code, line", [
    (KeyboardInterrupt(), 130, "bertfeat cache: interrupted"),
    (ValueError("two\n   lines  of text"), 2, "bertfeat cache: error: two lines of text"),
    (OSError(28, "No space left on device"), 2, "bertfeat cache: error: [Errno 28] No space left on device"),
    (TypeError(), 2, "bertfeat cache: error: TypeError"),
])
def test_a_failing_command_is_one_line_and_an_exit_code(monkeypatch, capsys, error, code, line):
    import bertfeat.cli.cache

    def fail(args):
        raise error

    monkeypatch.setattr(bertfeat.cli.cache, "run", fail)
    monkeypatch.delenv("BERTFEAT_DEBUG", raising=False)
    assert main(["cache", "info", "x"]) == code
    assert capsys.readouterr().err == line + "\n"


def test_an_interrupted_embed_says_how_to_resume_and_sigterm_is_143(monkeypatch, capsys, csv_input):
    import signal

    import bertfeat.cli as cli
    import bertfeat.files

    def terminated(*args, **kwargs):
        raise cli.Terminated()

    def mine(signum, frame):
        pass

    monkeypatch.setattr(bertfeat.files, "embed_file", terminated)
    before = signal.signal(signal.SIGTERM, mine)
    try:
        assert main(["embed", csv_input, "--text-col", "title", "--out", "o.parquet"]) == 143
        assert signal.getsignal(signal.SIGTERM) is mine  # the handler main() set is taken back
    finally:
        signal.signal(signal.SIGTERM, before)
    assert capsys.readouterr().err == "bertfeat embed: terminated (SIGTERM); run the same command again to resume\n"


def test_ctrl_c_while_the_command_line_starts_is_one_line_and_130(monkeypatch, capsys):
    """Ctrl-C while ``bertfeat embed`` started (its options being built and parsed, before any command ran) printed
    Python's traceback; it is one line and exit code 130, as during a command."""
    import bertfeat.cli.probe

    def interrupted(sub):
        raise KeyboardInterrupt()

    monkeypatch.setattr(bertfeat.cli.probe, "add_parser", interrupted)
    assert main(["embed", "in.csv", "--text-col", "t", "--out", "o.parquet"]) == 130
    assert capsys.readouterr().err == "bertfeat: interrupted\n"


def test_the_command_line_starts_without_loading_scikit_learn_or_the_data_libraries():
    """The console script imports ``bertfeat.cli`` before ``main`` (and its Ctrl-C handling) runs: ``import bertfeat``
    loaded scikit-learn (with scipy and pandas, 2 s and more on a busy machine), so a Ctrl-C then was a traceback.
    The heavy libraries now load inside the command."""
    import subprocess
    import sys

    code = ("import sys, bertfeat.cli; bertfeat.cli.build_parser(); "
            "print(sorted(m for m in ('sklearn', 'scipy', 'pandas', 'pyarrow', 'torch', 'transformers') "
            "if m in sys.modules))")
    env = {k: v for k, v in __import__("os").environ.items() if k != "BERTFEAT_DEBUG"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout == "[]\n", done.stdout + done.stderr


def test_debug_shows_the_traceback_and_warnings_are_formatted_only_during_the_command(monkeypatch, capsys):
    import warnings

    import bertfeat.cli.cache
    from bertfeat.exceptions import CacheWarning

    formats = []

    def fail(args):
        formats.append(warnings.formatwarning(CacheWarning("a shard is damaged"), CacheWarning, "f.py", 3))
        formats.append(warnings.formatwarning(UserWarning("not ours"), UserWarning, "f.py", 3, "x = 1"))
        raise ValueError("boom")

    plain = warnings.formatwarning
    monkeypatch.setattr(bertfeat.cli.cache, "run", fail)
    monkeypatch.setenv("BERTFEAT_DEBUG", "1")
    with pytest.raises(ValueError, match="boom"):
        main(["cache", "compact", "x"])
    assert formats == ["bertfeat cache: warning: a shard is damaged\n", "f.py:3: UserWarning: not ours\n  x = 1\n"]
    assert warnings.formatwarning is plain

@pytest.mark.parametrize("message, line", [
    ("bertfeat cache: ignoring unreadable shard s.parquet",
     "bertfeat cache: warning: ignoring unreadable shard s.parquet\n"),
    ("bertfeat: the texts finished could not be kept",
     "bertfeat cache: warning: the texts finished could not be kept\n"),
    ("a shard is damaged", "bertfeat cache: warning: a shard is damaged\n"),
])
def test_a_warning_that_names_bertfeat_itself_is_not_prefixed_twice(monkeypatch, message, line):
    # `bertfeat cache compact` printed "bertfeat cache: warning: bertfeat cache: ignoring unreadable shard ...": the
    # command's prefix before the cache's own
    import warnings

    import bertfeat.cli.cache
    from bertfeat.exceptions import CacheWarning

    formats = []

    def run(args):
        formats.append(warnings.formatwarning(CacheWarning(message), CacheWarning, "f.py", 3))
        return 0

    monkeypatch.setattr(bertfeat.cli.cache, "run", run)
    assert main(["cache", "info", "x"]) == 0
    assert formats == [line]


@pytest.mark.parametrize("returned, code", [(None, 0), (0, 0), (3, 3)])
def test_a_commands_return_value_is_the_exit_code(monkeypatch, returned, code):
    import bertfeat.cli.cache

    monkeypatch.setattr(bertfeat.cli.cache, "run", lambda args: returned)
    assert main(["cache", "info", "x"]) == code


@pytest.mark.parametrize("before", ["default", "ignored"])
def test_sighup_is_handled_as_sigterm_unless_nohup_ignores_it_and_is_put_back(monkeypatch, capsys, csv_input, before):
    import signal

    import bertfeat.cli as cli
    import bertfeat.files

    seen = []

    def hung_up(*args, **kwargs):
        seen.append(signal.getsignal(signal.SIGHUP))
        if seen[0] == signal.SIG_IGN:
            return {}
        cli._on_sigterm(signal.SIGHUP, None)

    monkeypatch.setattr(bertfeat.files, "embed_file", hung_up)
    handler = signal.SIG_IGN if before == "ignored" else signal.SIG_DFL
    was = signal.signal(signal.SIGHUP, handler)
    try:
        code = main(["embed", csv_input, "--text-col", "title", "--out", "o.parquet", "--quiet"])
        assert signal.getsignal(signal.SIGHUP) == handler  # the handler main() set is taken back
    finally:
        signal.signal(signal.SIGHUP, was)
    if before == "ignored":  # nohup: the job runs on, its handler left as nohup set it
        assert seen == [signal.SIG_IGN]
    else:
        assert code == 129 and seen == [cli._on_sigterm]
        assert capsys.readouterr().err == "bertfeat embed: hung up (SIGHUP); run the same command again to resume\n"


def test_sighup_held_by_a_handler_python_did_not_set_is_left_to_it(monkeypatch):
    """Where the process is R's (``bf_embed_file()`` runs the command in it), SIGHUP may hold R's own handler, which
    Python reports as None and cannot put back: the command leaves it as it is, SIGTERM still handled."""
    import signal

    import bertfeat.cli as cli

    real = signal.getsignal
    monkeypatch.setattr(signal, "getsignal", lambda signum: None if signum == signal.SIGHUP else real(signum))
    assert cli._stop_signals() == [signal.SIGTERM]
    monkeypatch.setattr(signal, "getsignal", lambda signum: signal.SIG_DFL)
    assert cli._stop_signals() == [signal.SIGTERM, signal.SIGHUP]


def test_sigterm_held_by_a_handler_python_did_not_set_is_left_to_it_and_never_replaced(monkeypatch, csv_input):
    """The sibling of the test above: SIGTERM held by a host's own handler (Python reports None; an R front end or
    an application that embeds Python and runs the command in its process) was replaced by the command's and, as
    Python cannot put back a handler it did not set, never put back: after the command a SIGTERM to the host only
    set Python's flag, the host's own shutdown gone for good. Now it is left to the host, as SIGHUP is; where
    Python's or the default holds it (Rscript's: the default), the command handles it as before."""
    import signal

    import bertfeat.cli as cli
    import bertfeat.files

    real_get, real_set, set_here = signal.getsignal, signal.signal, []
    monkeypatch.setattr(signal, "getsignal",
                        lambda signum: None if signum == signal.SIGTERM else real_get(signum))
    monkeypatch.setattr(signal, "signal", lambda signum, handler: set_here.append(signum) or real_set(signum, handler))
    monkeypatch.setattr(bertfeat.files, "embed_file", lambda *args, **kwargs: {})
    was = real_set(signal.SIGHUP, signal.SIG_DFL)
    try:
        assert cli._stop_signals() == [signal.SIGHUP]
        assert main(["embed", csv_input, "--text-col", "title", "--out", "o.parquet", "--quiet"]) == 0
    finally:
        real_set(signal.SIGHUP, was)
    assert signal.SIGTERM not in set_here and set_here == [signal.SIGHUP, signal.SIGHUP]  # set, then put back


def test_a_failure_bertfeat_did_not_foresee_leaves_main_as_itself_for_exit_code_1_and_its_traceback(monkeypatch, capsys):
    """docs/cli.md's exit codes: 2 for a mistake or a refusal told in one line, 1 for what no message foresaw, with
    Python's traceback (``sys.exit(main())`` never runs: the interpreter prints it and exits 1), never a one-line
    'error' that hides a fault, nor 0. The SIGTERM handler is put back either way."""
    import signal
    import subprocess
    import sys

    import bertfeat.cli.cache

    def fails(args):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(bertfeat.cli.cache, "run", fails)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        main(["cache", "info", "x"])
    assert signal.getsignal(signal.SIGTERM) == before and capsys.readouterr().err == ""
    # and as a process: `python -m bertfeat` with its command failing so
    code = ("import sys, bertfeat.cli.cache as c\n"
            "def fails(args):\n    raise RuntimeError('unforeseen')\n"
            "c.run = fails\nsys.argv = ['bertfeat', 'cache', 'info', 'x']\nimport runpy\n"
            "runpy.run_module('bertfeat', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("Traceback") and "RuntimeError: unforeseen" in done.stderr


def test_main_runs_outside_the_main_thread_where_no_signal_handler_can_be_set(monkeypatch):
    import signal
    import threading

    import bertfeat.cli.cache

    monkeypatch.setattr(bertfeat.cli.cache, "run", lambda args: 0)
    before = signal.getsignal(signal.SIGTERM)
    results = []
    worker = threading.Thread(target=lambda: results.append(main(["cache", "info", "x"])))
    worker.start()
    worker.join()
    assert results == [0] and signal.getsignal(signal.SIGTERM) == before


def test_commands_run_in_two_threads_at_once_format_only_their_own_warnings_and_leave_pythons(monkeypatch):
    """(found by a concurrency hunt, 2026-11-27) main() put its one-line format in warnings.formatwarning and, ending,
    put back what it had found: two commands at once in two threads (a notebook, a test runner), the second found the
    first's format and, ending after it, left it in place for good, so every bertfeat warning of the process was
    printed as a command's line ever after; and while a command ran, another thread's bertfeat warnings (a transform
    of its own) were printed as the command's."""
    import warnings

    import bertfeat.cli.cache
    from bertfeat.exceptions import CacheWarning
    from tests._overlap import Overlap

    overlap, seen = Overlap(), {}

    def shown():
        return warnings.formatwarning(CacheWarning("a shard is damaged"), CacheWarning, "f.py", 3)

    def run(args):
        seen[overlap.inside()] = shown()
        return 0

    monkeypatch.setattr(bertfeat.cli.cache, "run", run)
    plain = warnings.formatwarning
    overlap.run(lambda: main(["cache", "info", "x"]), lambda: main(["cache", "info", "y"]),
                while_both=lambda: seen.update({"another thread while both run": shown()}))
    command = "bertfeat cache: warning: a shard is damaged\n"
    assert seen == {"first": command, "second": command,
                    "another thread while both run": "f.py:3: CacheWarning: a shard is damaged\n"}
    assert warnings.formatwarning is plain


def test_info_leaves_other_threads_warnings_and_the_processs_filters_alone(tiny_bert, tmp_path, monkeypatch):
    """(found by a concurrency hunt, 2026-11-27) `bertfeat info` (cli.info.describe) kept the model's notes out of its
    report with warnings.catch_warnings() and an "ignore UserWarning" filter: the filters are the process's, so while
    it ran every thread's UserWarnings (a TruncationWarning among them) were lost, and a filter another thread set
    meanwhile was undone as it ended; and the note, marked as said, was never said by a later fit of the process.
    Now the notes are held in its own thread only, and no filter is touched."""
    import shutil
    import threading
    import warnings

    import bertfeat.prompts
    from bertfeat.cli.info import describe
    from bertfeat.embedder import BertEmbedder
    from bertfeat.exceptions import ModelNoteWarning, TruncationWarning

    model = tmp_path / "prompted"
    shutil.copytree(tiny_bert, model)
    (model / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    inside, go = threading.Event(), threading.Event()
    real = BertEmbedder.fit

    def held(self, *args, **kwargs):
        inside.set()
        assert go.wait(30)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(BertEmbedder, "fit", held)
    got = {}
    worker = threading.Thread(target=lambda: got.update(info=describe(str(model), machine=False)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        worker.start()
        try:
            assert inside.wait(30)
            warnings.filterwarnings("error", message="set by another thread")  # while info runs
            warnings.warn("another thread's truncation", TruncationWarning)
        finally:
            go.set()
            worker.join(30)
        kept = [f for f in warnings.filters if f[1] is not None and f[1].pattern == "set by another thread"]
    assert got["info"]["prompts"] == {"query": "query: "}  # listed, not noted
    assert ([str(w.message) for w in caught], len(kept)) == (["another thread's truncation"], 1)
    monkeypatch.setattr(BertEmbedder, "fit", real)
    with pytest.warns(ModelNoteWarning, match="defines prompts"):
        BertEmbedder(str(model)).fit(["x"])  # still due


def test_prefix_and_prompt_name_together_are_refused(capsys, csv_input):
    assert main(["embed", csv_input, "--text-col", "title", "--out", "o.parquet", "--prefix", "q: ",
                 "--prompt-name", "query"]) == 2
    assert capsys.readouterr().err == ("bertfeat embed: error: --prefix and --prompt-name both set the text put before "
                                       "each text; pass only one.\n")


# -- the parser itself: version, a missing command, every default ------------------------------------------------------


def test_version_prints_the_packages_version(capsys):
    from bertfeat import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"bertfeat {__version__}\n"


def _usage_error(capsys, argv) -> str:
    """What ``bertfeat ARGV`` writes on stderr, once it has exited with argparse's status 2."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, line", [
    ([], "bertfeat: error: the following arguments are required: COMMAND (see bertfeat --help)"),
    (["cache"], "bertfeat cache: error: the following arguments are required: ACTION (see bertfeat cache --help)"),
    (["cache", "info"], "bertfeat cache info: error: the following arguments are required: DIR "
                        "(see bertfeat cache info --help)"),
])
def test_a_missing_command_or_action_is_one_line(capsys, argv, line):
    assert _usage_error(capsys, argv) == line + "\n"


@pytest.mark.parametrize("argv, line", [
    (["embed", "x.csv", "--text-col", "t", "--out", "o.parquet", "--text_col", "u"],
     "bertfeat embed: error: unrecognized arguments: --text_col u (see bertfeat embed --help)"),
    (["probe", "x.csv", "--text-col", "t", "--label-col", "y", "--folds", "3"],
     "bertfeat probe: error: unrecognized arguments: --folds 3 (see bertfeat probe --help)"),
    (["cache", "clear", "DIR", "--force"],
     "bertfeat cache clear: error: unrecognized arguments: --force (see bertfeat cache clear --help)"),
    (["info", "default", "extra"], "bertfeat info: error: unrecognized arguments: extra (see bertfeat info --help)"),
])
def test_an_unknown_option_is_blamed_on_the_command_whose_help_lists_the_options(capsys, argv, line):
    """docs/cli.md: a bad option gets argparse's message and `(see bertfeat embed --help)`; argparse itself reports
    a subcommand's unknown options as the top parser's, pointing at `bertfeat --help`, which lists no option."""
    assert _usage_error(capsys, argv) == line + "\n"


_AS_OPTION = "was read as an option"


@pytest.mark.parametrize("argv, line", [
    (["embed", "-x.csv", "--text-col", "t", "--out", "o.parquet"],
     "bertfeat embed: error: the following arguments are required: INPUT; '-x.csv' was read as an option: a file "
     "name starting with a dash is written ./-x.csv (or put -- before it) (see bertfeat embed --help)"),
    (["embed", "x.csv", "--text-col", "t", "--out", "-d.parquet"],
     "bertfeat embed: error: argument --out: expected one argument; '-d.parquet' was read as an option: write a "
     "value starting with a dash --out=-d.parquet (see bertfeat embed --help)"),
    (["probe", "-x.csv", "--text-col", "t", "--label-col", "y"],
     "bertfeat probe: error: the following arguments are required: INPUT; '-x.csv' was read as an option: a file "
     "name starting with a dash is written ./-x.csv (or put -- before it) (see bertfeat probe --help)"),
    (["cache", "info", "-cache"],
     "bertfeat cache info: error: the following arguments are required: DIR; '-cache' was read as an option: a "
     "file name starting with a dash is written ./-cache (or put -- before it) (see bertfeat cache info --help)"),
])
def test_a_name_starting_with_a_dash_gets_the_way_to_write_it(capsys, argv, line):
    # `bertfeat embed -x.csv` said only that INPUT was required, and `--out -d.parquet` "expected one argument"
    assert _usage_error(capsys, argv) == line + "\n"


@pytest.mark.parametrize("argv", [
    ["embed", "--text-col", "t", "--out", "o.parquet"],  # no input at all
    ["embed", "x.csv", "--text-col", "t", "--out", "--quiet"],  # a value forgotten, not a dashed one
    ["embed", "--text-c", "t", "--out", "o.parquet"],  # an abbreviated option is an option
    ["embed", "x.csv", "--text-col", "t", "--out", "o.parquet", "-y"],  # an unknown option, no such file
])
def test_the_dash_hint_is_given_only_where_a_dash_is_the_cause(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "error: " in err and _AS_OPTION not in err, err


def test_an_extra_name_starting_with_a_dash_that_is_a_file_gets_the_hint(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-x.csv").write_text("t\na\n")
    with pytest.raises(SystemExit):
        main(["embed", "in.csv", "-x.csv", "--text-col", "t", "--out", "o.parquet"])
    assert capsys.readouterr().err == ("bertfeat embed: error: unrecognized arguments: -x.csv; '-x.csv' is a file, "
                                       "read as an option: write it ./-x.csv (see bertfeat embed --help)\n")



def test_an_input_a_shell_expanded_into_several_files_gets_told_to_quote_the_glob(capsys, tmp_path, monkeypatch):
    """``bertfeat embed data/*.parquet ...`` unquoted: the shell hands over every file, and argparse said only
    "unrecognized arguments: data/b.parquet data/c.parquet", naming neither the cause nor what to do."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    for name in ("a.parquet", "b.parquet", "c.parquet", "x.csv", "y.csv"):
        (tmp_path / "data" / name).write_bytes(b"")
    for command in ("embed", "probe"):
        rest = ["--text-col", "t", *(["--out", "o.parquet"] if command == "embed" else ["--label-col", "y"])]
        with pytest.raises(SystemExit):
            main([command, "data/a.parquet", "data/b.parquet", "data/c.parquet", *rest])
        assert capsys.readouterr().err == (
            f"bertfeat {command}: error: unrecognized arguments: data/b.parquet data/c.parquet; bertfeat {command} "
            "reads one INPUT and was given 3 files: a shell expands an unquoted glob into its files, so quote it "
            f"('data/*.parquet') for bertfeat to read the files as one input, or pass their folder (see bertfeat "
            f"{command} --help)\n")
    with pytest.raises(SystemExit):
        main(["embed", "--text-col", "t", "data/x.csv", "data/y.csv", "--out", "o.parquet"])
    assert capsys.readouterr().err == (
        "bertfeat embed: error: unrecognized arguments: data/y.csv; bertfeat embed reads one INPUT and was given 2 "
        "files: a shell expands an unquoted glob into its files, but a CSV input is one file: embed each CSV file on "
        "its own, or join them into one CSV file (one header) first (see bertfeat embed --help)\n")
    with pytest.raises(SystemExit):  # an extra word that names no file: no such hint
        main(["embed", "data/a.parquet", "extra", "--text-col", "t", "--out", "o.parquet"])
    assert capsys.readouterr().err == (
        "bertfeat embed: error: unrecognized arguments: extra (see bertfeat embed --help)\n")

def _defaults(command: str) -> dict:
    from bertfeat.cli import build_parser
    from tests.test_cli_help import subcommands

    sub = subcommands(build_parser())[command]
    return {a.dest: a.default for a in sub._actions if a.option_strings and a.dest != "help"}


def test_every_embed_option_has_the_documented_default():
    assert _defaults("embed") == {
        "text_col": None, "out": None, "id_col": None, "keep_col": [], "delimiter": None, "infer_types": False,
        "quoting": None, "model": "default", "pooling": "cls+mean", "layers": None, "layer_agg": "mean", "max_length": None,
        "long_text": "truncate", "stride": None, "normalize": False, "prefix": None, "prompt_name": None,
        "missing": "error", "device": "auto", "dtype": "auto", "batch_tokens": None, "cache_dir": None,
        "layout": "columns", "chunk_rows": 10_000, "chunk_chars": None, "checkpoint_every": None, "overwrite": False,
        "quiet": False, "engine": "local", "master": None, "num_workers": None, "gpus_per_worker": None,
        "cpus_per_worker": None,
    }


def test_every_probe_option_has_the_documented_default():
    assert _defaults("probe") == {
        "text_col": None, "label_col": None, "group_col": None, "delimiter": None, "quoting": None, "model": None,
        "task": "auto",
        "cv": 5, "random_state": 0,
        "max_length": None, "long_text": "truncate", "normalize": False, "prefix": None, "prompt_name": None,
        "missing": "error",
        "device": "auto", "dtype": "auto", "cache_dir": None, "no_baseline": False, "unions": 3, "plot": None,
        "json": None, "top": 15,
    }


@pytest.mark.parametrize("argv, dest, value", [
    (["cache", "info", "d"], "dir", "d"), (["cache", "compact", "d"], "dir", "d"),
    (["cache", "clear", "d"], "dir", "d"),
    (["cache", "clear", "d"], "action", "clear"), (["info"], "command", "info"),
])
def test_positional_arguments_land_where_the_commands_read_them(argv, dest, value):
    from bertfeat.cli import build_parser

    assert getattr(build_parser().parse_args(argv), dest) == value


@pytest.mark.parametrize("out", ["features.csv", "features.tsv", "features.csv.gz", "FEATURES.CSV"])
def test_an_output_named_as_a_csv_file_is_refused_not_written_as_parquet_under_that_name(tmp_path, capsys, out):
    """`--out features.csv` (a user expecting a CSV back) wrote parquet bytes under the .csv name, silently:
    read_csv of it then fails or reads garbage. docs/cli.md: --out is a parquet file."""
    source = tmp_path / "in.csv"
    source.write_text("text\na cat\n")
    assert main(["embed", str(source), "--text-col", "text", "--out", str(tmp_path / out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bertfeat embed: error: --out ") and "writes parquet" in err and ".parquet" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_a_sentence_transformers_model_with_modules_bertfeat_does_not_apply_says_so(tiny_bert, tmp_path, monkeypatch):
    """A model whose sentence embeddings pass through a Dense projection after its pooling (distiluse, LaBSE) was
    described by `bertfeat info` as pooling "cls, normalize=True" and embedded without a word: features of another
    width and other values than the model card's embeddings, silently."""
    import contextlib
    import io
    import shutil
    import warnings

    import bertfeat.prompts
    from bertfeat import BertEmbedder
    from bertfeat.cli import main
    from bertfeat.cli.info import describe

    model = tmp_path / "st-dense"
    shutil.copytree(tiny_bert, model)
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 3, "name": "3", "path": "3_LayerNorm", "type": "sentence_transformers.models.LayerNorm"},
        {"idx": 4, "name": "4", "path": "4_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_cls_token": True}))
    (model / "2_Dense").mkdir()
    (model / "2_Dense" / "config.json").write_text(json.dumps({"in_features": 32, "out_features": 16}))
    assert describe(str(model), machine=False)["own_pooling"] == {
        "pooling": "cls", "normalize": True, "max_seq_length": 64, "do_lower_case": False,  # the tokenizer's, as
        "not_applied": ["Dense (2_Dense)", "LayerNorm (3_LayerNorm)"], "include_prompt": True,  # s-t reads it
        "settings_file": None}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", str(model), "--no-machine"]) == 0
    line = next(line for line in out.getvalue().splitlines() if line.startswith("not applied:"))
    assert line == ("not applied:  Dense (2_Dense), LayerNorm (3_LayerNorm), with which sentence-transformers "
                    "computes the model's sentence embeddings beside its pooling: bertfeat's features are the "
                    "encoder's pooled hidden states, not those embeddings")
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())  # the note comes once per model and process
    with pytest.warns(UserWarning, match=r"computes with Dense \(2_Dense\), LayerNorm \(3_LayerNorm\) as well as "
                                         r"its pooling; bertfeat does not apply those: "):
        BertEmbedder(str(model), pooling="cls", normalize=True).fit(["a cat"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BertEmbedder(str(model), pooling="cls", normalize=True).fit(["a cat"])  # noted once
        BertEmbedder(tiny_bert).fit(["a cat"])  # no such module: no note
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", tiny_bert, "--no-machine"]) == 0
    assert "not applied" not in out.getvalue()


POOLING_CONFIGS = [
    {"pooling_mode": ["cls", "mean"]},  # what sentence-transformers 5 and later write for two poolings
    {"pooling_mode": "max"},
    {"pooling_mode": ["lasttoken"]},
    {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True},
    {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": False},  # none on: sentence-transformers' mean
    {},
    {"pooling_mode": "cls", "pooling_mode_mean_tokens": True},  # pooling_mode wins
]


def _st_model_pooling(tiny_bert, tmp_path, config: dict):
    """The tiny BERT as a sentence-transformers model (Transformer, then Pooling) whose 1_Pooling/config.json holds
    ``config``."""
    import shutil

    model = shutil.copytree(tiny_bert, tmp_path / "st")
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **config}))
    return model


@pytest.mark.parametrize("config", POOLING_CONFIGS)
def test_info_reads_a_pooling_config_as_sentence_transformers_does(tiny_bert, tmp_path, config):
    # a list (["cls", "mean"], sentence-transformers' own save) was reported as the pooling "['cls', 'mean']", which
    # bertfeat "does not offer"; no switch on, or no key at all, as "none declared (not a sentence-transformers
    # model)", where sentence-transformers pools by mean; three switches in another order than it concatenates them
    import warnings

    Pooling = _newest_st_pooling()

    from bertfeat.cli.info import describe

    model = _st_model_pooling(tiny_bert, tmp_path, config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # its own note that the pooling_mode_* keys are old
        theirs = Pooling.load(str(model / "1_Pooling")).pooling_mode
    want = theirs if isinstance(theirs, str) else "+".join(theirs)
    assert describe(str(model), machine=False)["own_pooling"]["pooling"] == want


@pytest.mark.parametrize("mode", ["cls+mean", "avg", [], ["mean", 3], {"mean": True}])
def test_a_pooling_mode_sentence_transformers_refuses_is_refused_naming_the_file(tiny_bert, tmp_path, mode):
    Pooling = _newest_st_pooling()

    from bertfeat import ModelNotAvailableError
    from bertfeat.models import resolve_model

    model = _st_model_pooling(tiny_bert, tmp_path, {"pooling_mode": mode})
    if isinstance(mode, str):
        with pytest.raises(ValueError, match="Invalid pooling mode"):
            Pooling.load(str(model / "1_Pooling"))
    with pytest.raises(ModelNotAvailableError, match=r"1_Pooling/config.json says \"pooling_mode\": .*, where "
                                                     r"sentence-transformers expects one of \['cls', 'max', 'mean'"):
        resolve_model(str(model))


def test_a_second_pooling_or_a_weighted_layer_pooling_is_a_module_bertfeat_does_not_apply(tiny_bert, tmp_path):
    # WeightedLayerPooling (a weighted sum of layers, before the pooling) was read as the pooling and never named among
    # the modules bertfeat does not apply; a second Pooling took the place of the first
    import shutil

    from bertfeat.cli.info import describe

    model = shutil.copytree(tiny_bert, tmp_path / "st")
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_WeightedLayerPooling",
         "type": "sentence_transformers.models.WeightedLayerPooling"},
        {"idx": 2, "name": "2", "path": "2_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 3, "name": "3", "path": "3_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    for folder, config in (("1_WeightedLayerPooling", {"word_embedding_dimension": 32, "num_hidden_layers": 3}),
                           ("2_Pooling", {"pooling_mode": "cls"}), ("3_Pooling", {"pooling_mode": "max"})):
        (model / folder).mkdir()
        (model / folder / "config.json").write_text(json.dumps(config))
    own = describe(str(model), machine=False)["own_pooling"]
    assert (own["pooling"], own["not_applied"]) == (
        "cls", ["WeightedLayerPooling (1_WeightedLayerPooling)", "Pooling (3_Pooling)"])


def _newest_st_pooling():
    """sentence-transformers' Pooling as its module layout of 6.x has it: the reference these tests read a config
    with (its list-valued pooling_mode, its refusals); an older release reads another set of config keys."""
    modules = pytest.importorskip("sentence_transformers.sentence_transformer.modules",
                                  reason="the reference is sentence-transformers 6's Pooling")
    return modules.Pooling


def test_settings_sentence_transformers_loads_the_encoder_with_are_named_as_not_applied(tiny_bert, tmp_path,
                                                                                         monkeypatch):
    # sentence_bert_config.json's config_args (tokenizer_args, model_args; *_kwargs in newer saves) are passed by
    # sentence-transformers to AutoConfig (AutoTokenizer, AutoModel): a layer_norm_eps there gives encode() other
    # vectors than the encoder config.json describes. bertfeat loaded config.json alone and said nothing: its
    # features differed from the model's own embeddings, silently (0.001 here), and `bertfeat info` named nothing.
    # And a module before the pooling (WordWeights, WeightedLayerPooling, a CNN) was said to come "after" it.
    import contextlib
    import inspect
    import io
    import shutil

    import numpy as np
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Transformer

    import bertfeat.prompts
    from bertfeat import BertEmbedder
    from bertfeat.cli.info import describe

    model = shutil.copytree(tiny_bert, tmp_path / "st-args")
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (model / "1_Pooling").mkdir()
    # word_embedding_dimension: the name every release reads (sentence-transformers 6 also embedding_dimension)
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32,
                                                                 "pooling_mode": "mean"}))
    settings = {"max_seq_length": 32, "do_lower_case": False,
                # what changes no vector is not named: sentence-transformers drops trust_remote_code, bertfeat pads
                # each text on its right and has its own dtype=
                "config_args": {"layer_norm_eps": 1e-3, "trust_remote_code": True},
                "tokenizer_args": {"padding_side": "left"}, "model_kwargs": {"torch_dtype": "float16"}}
    if "model_kwargs" not in inspect.signature(Transformer.__init__).parameters:
        settings["model_args"] = settings.pop("model_kwargs")  # sentence-transformers 3's name (a TypeError there)
    (model / "sentence_bert_config.json").write_text(json.dumps(settings))
    texts = ["the cat sat on the mat", "a dog ran in the park"]
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    with pytest.warns(UserWarning) as noted:
        mine = BertEmbedder(str(model), pooling="mean", layers=-1, dtype="float32").fit_transform(texts)
    import torch  # the dtype itself: sentence-transformers 3 passes a name on, which transformers 4.40 refuses

    own = SentenceTransformer(str(model), device="cpu", model_kwargs={"torch_dtype": torch.float32}).encode(texts)
    assert np.abs(mine - own).max() > 1e-4  # the difference that was silent
    label = 'config_args {"layer_norm_eps": 0.001} (sentence_bert_config.json)'
    assert [str(w.message) for w in noted] == [
        f"model={str(model)!r} is a sentence-transformers model whose sentence embeddings sentence-transformers "
        f"computes with {label} as well as its pooling; bertfeat does not apply that: its features are the pooled "
        "hidden states of the encoder its config.json describes, not the model's own embeddings. For those, use "
        "sentence-transformers' encode()."]
    assert describe(str(model), machine=False)["own_pooling"]["not_applied"] == [label]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", str(model), "--no-machine"]) == 0
    line = next(line for line in out.getvalue().splitlines() if line.startswith("not applied:"))
    assert line == (f"not applied:  {label}, with which sentence-transformers computes the model's sentence "
                    "embeddings beside its pooling: bertfeat's features are the encoder's pooled hidden states, not "
                    "those embeddings")
    # settings that change nothing, or none: no note
    settings.pop("config_args")
    (model / "sentence_bert_config.json").write_text(json.dumps(settings))
    assert describe(str(model), machine=False)["own_pooling"]["not_applied"] == []
    # a module before the pooling and one after it, and tokenizer_args that do change the tokens
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_WordWeights", "type": "sentence_transformers.models.WordWeights"},
        {"idx": 2, "name": "2", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}]))
    (model / "sentence_bert_config.json").write_text(json.dumps({"tokenizer_args": {"do_lower_case": False}}))
    assert describe(str(model), machine=False)["own_pooling"]["not_applied"] == [
        "WordWeights (1_WordWeights)", "Dense (3_Dense)",
        'tokenizer_args {"do_lower_case": false} (sentence_bert_config.json)']
    # sentence-transformers 6's processing_kwargs: what its tokenizer is called with (0.15 off encode() for a
    # max_length of 6, 0.2 without special tokens, in a check of this test's making)
    (model / "sentence_bert_config.json").write_text(json.dumps({"processing_kwargs": {
        "text": {"max_length": 6, "padding_side": "left"}, "common": {"padding": True}, "image": {"size": 4}}}))
    assert describe(str(model), machine=False)["own_pooling"]["not_applied"] == [
        "WordWeights (1_WordWeights)", "Dense (3_Dense)",
        'processing_kwargs {"text": {"max_length": 6}} (sentence_bert_config.json)']
    # sentence-transformers 6's transformer_task: a "fill-mask" Transformer's token embeddings are masked-LM logits
    (model / "sentence_bert_config.json").write_text(json.dumps({"transformer_task": "fill-mask"}))
    assert describe(str(model), machine=False)["own_pooling"]["not_applied"][2:] == [
        'transformer_task "fill-mask" (sentence_bert_config.json)']
    (model / "sentence_bert_config.json").write_text(json.dumps({"modality_config": ["text"]}))
    with pytest.raises(ValueError, match=r"says \"modality_config\": \[\"text\"\], where an object of settings per "
                                         r"modality \(or null\) is expected: fix the file"):
        describe(str(model), machine=False)
    other_output = {"text": {"method": "forward", "method_output_name": "pooler_output"}}
    for task in ("feature-extraction", None):
        (model / "sentence_bert_config.json").write_text(json.dumps(
            {"modality_config": other_output, **({"transformer_task": task} if task else {})}))
        assert describe(str(model), machine=False)["own_pooling"]["not_applied"][2:] == [
            'modality_config {"text": {"method": "forward", "method_output_name": "pooler_output"}} '
            '(sentence_bert_config.json)']
    (model / "sentence_bert_config.json").write_text(json.dumps({"processing_kwargs": {"text": 6}}))
    with pytest.raises(ValueError, match=r"says \"processing_kwargs\": \{\"text\": 6\}, where an object of "
                                         r"settings per modality"):
        describe(str(model), machine=False)
    (model / "sentence_bert_config.json").write_text(json.dumps({"config_args": ["layer_norm_eps"]}))
    with pytest.raises(ValueError, match=r"sentence_bert_config.json says \"config_args\": \[\"layer_norm_eps\"\], "
                                         r"where an object of settings .* is expected"):
        describe(str(model), machine=False)


def test_the_models_notes_are_one_line_warnings_of_the_command(tiny_bert, tmp_path, monkeypatch):
    # the notes that a model defines prompts, or that sentence-transformers computes its embeddings with modules
    # bertfeat does not apply, were plain UserWarnings, which the command line printed in Python's two-line form
    # ("/.../bertfeat/__main__.py:5: UserWarning: model=... \n  sys.exit(main())"), where its own warnings are one
    # "bertfeat embed: warning: ..." line each
    import shutil
    import warnings

    import bertfeat.prompts

    model = shutil.copytree(tiny_bert, tmp_path / "st-dense")
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": "mean"}))
    (model / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    src = tmp_path / "in.csv"
    pd.DataFrame({"text": ["the cat sat"]}).to_csv(src, index=False)
    shown = []
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", lambda message, category, filename, lineno, file=None,
                            line=None: shown.append(warnings.formatwarning(message, category, filename, lineno, line)))
        assert main(["embed", str(src), "--out", str(tmp_path / "out.parquet"), "--text-col", "text", "--model",
                     str(model), "--quiet"]) == 0
    assert shown == [
        f"bertfeat embed: warning: --model {model} defines prompts that its authors put before texts: 'query' "
        "('query: '). Pass --prompt-name (or --prefix) to use one; without one, texts are embedded as they are.\n",
        f"bertfeat embed: warning: --model {model} is a sentence-transformers model whose sentence embeddings "
        "sentence-transformers computes with Dense (2_Dense) as well as its pooling; bertfeat does not apply that: its "
        "features are the pooled hidden states of the encoder its config.json describes, not the model's own "
        "embeddings. For those, use sentence-transformers' encode().\n"]
