"""bertfeat.engine_options: one cluster engine's options given to the other's Python API, and a file job's given to
a lazy one, refused by name with what to do, before anything is read or started."""

import contextlib

import pytest

from bertfeat.engine_options import refuse_other_engines_options


def _calls():
    """Each cluster engine's public functions, as ``(name, call(tmp_path, **options))``, where it is installed."""
    with contextlib.suppress(ImportError):
        __import__("ray.data")
        from bertfeat import ray as bray

        yield "bertfeat.ray.embed_parquet", lambda p, **kw: bray.embed_parquet(p / "in.parquet", p / "o", "t", **kw)
        yield "bertfeat.ray.embed_dataset", lambda p, **kw: bray.embed_dataset(None, "t", **kw)
    with contextlib.suppress(ImportError):
        __import__("pyspark")
        from bertfeat import spark

        yield "bertfeat.spark.embed_files", lambda p, **kw: spark.embed_files(p / "in.parquet", p / "o", "t", **kw)
        yield "bertfeat.spark.embed_dataframe", lambda p, **kw: spark.embed_dataframe(None, "t", **kw)


def test_the_other_engines_options_are_refused_by_name_with_what_this_engine_takes(tmp_path):
    """(found by the Ray and Spark hunt, 2026-11-27, session 16) a job moved from Ray to Spark kept
    ``num_workers=4`` (or ``gpus_per_worker=1``, ``batch_rows=`` given to ``embed_dataframe``), one moved from Spark
    to Ray ``master=``: each reached BertEmbedder, "BertEmbedder.__init__() got an unexpected keyword argument
    'num_workers'", naming neither whose option it is nor what the engine takes (the local engine refused them by
    name since session 5)."""
    calls = list(_calls())
    if not calls:
        pytest.skip("neither Ray nor pyspark is installed")
    said = {}
    for name, call in calls:
        ray = name.startswith("bertfeat.ray")
        lazy = name.endswith(("embed_dataset", "embed_dataframe"))
        options = {"master": "local[2]", "resource_profile": object()} if ray else {
            "num_workers": 4, "gpus_per_worker": 1, "cpus_per_worker": 2, "preserve_order": False}
        if lazy:
            options.update(overwrite=True, quiet=True)
        if lazy and not ray:
            options["batch_rows"] = 5
        for option, value in options.items():
            with pytest.raises(TypeError) as info:
                call(tmp_path, model="default", **{option: value})
            said[name, option] = str(info.value)
            assert str(info.value).startswith(f"{option}= is not an option of {name}: ")
            assert str(info.value).endswith(f"; drop {option}=.")
    assert not any(tmp_path.iterdir())  # nothing read, written or started
    if ("bertfeat.spark.embed_dataframe", "num_workers") in said:
        assert said["bertfeat.spark.embed_dataframe", "num_workers"] == (
            "num_workers= is not an option of bertfeat.spark.embed_dataframe: it is bertfeat.ray's; Spark runs as "
            "many tasks at once as its executors have cores (spark.executor.instances, spark.executor.cores): set "
            "those on the session; drop num_workers=.")
        assert said["bertfeat.spark.embed_dataframe", "batch_rows"] == (
            "batch_rows= is not an option of bertfeat.spark.embed_dataframe: a DataFrame goes to the Spark engine in "
            "Arrow batches of spark.sql.execution.arrow.maxRecordsPerBatch rows: set that option of the session; "
            "drop batch_rows=.")
    if ("bertfeat.ray.embed_dataset", "quiet") in said:
        assert said["bertfeat.ray.embed_dataset", "quiet"] == (
            "quiet= is not an option of bertfeat.ray.embed_dataset: the Ray engine's lazy API prints nothing: its "
            "Dataset runs when you use it; drop quiet=.")


def test_an_engines_own_options_and_bertembedder_parameters_pass():
    for engine in ("ray", "spark"):
        refuse_other_engines_options({"model": "default", "pooling": "mean", "cache_dir": "c"}, engine, "f", lazy=True)
    refuse_other_engines_options({"batch_rows": 5}, "spark", "bertfeat.spark.embed_files")  # a file job's own
    refuse_other_engines_options({"num_workers": 2}, "ray", "bertfeat.ray.embed_parquet")
    refuse_other_engines_options({"quiet": True, "overwrite": True}, "ray", "bertfeat.ray.embed_parquet")


def test_an_option_of_the_engines_other_function_is_refused_saying_what_does_its_work(tmp_path):
    """(found by a review of session 16's engine work, 2026-11-27, session 17) the refusals above covered the other
    engine's options and a file job's quiet=/overwrite=/batch_rows=, not the options of the same engine's other
    function: ``ray.embed_dataset(ds, "t", preserve_order=False)`` (embed_parquet's) started Ray, then failed with
    "BertEmbedder.__init__() got an unexpected keyword argument 'preserve_order'"; ``spark.embed_dataframe(sdf, "t",
    master="local[2]")`` (embed_files') and ``spark.embed_files(..., resource_profile=p)`` (embed_dataframe's) the
    same, the latter after reading its input; ``files.embed_file(..., resource_profile=p)`` too. Each is refused by
    name, before anything is read or started, saying what does its work there."""
    said = {}
    for name, call in _calls():
        options = {"bertfeat.ray.embed_dataset": {"preserve_order": False},
                   "bertfeat.spark.embed_dataframe": {"master": "local[2]"},
                   "bertfeat.spark.embed_files": {"resource_profile": object()}}.get(name, {})
        for option, value in options.items():
            with pytest.raises(TypeError) as info:
                call(tmp_path, model="default", **{option: value})
            said[name] = str(info.value)
    assert not any(tmp_path.iterdir())  # nothing read, written or started
    if "bertfeat.ray.embed_dataset" in said:
        assert said["bertfeat.ray.embed_dataset"] == (
            "preserve_order= is not an option of bertfeat.ray.embed_dataset: it is bertfeat.ray.embed_parquet's; the "
            "Dataset it returns keeps the rows' order where its DataContext has execution_options.preserve_order = "
            "True: set that; drop preserve_order=.")
    if "bertfeat.spark.embed_dataframe" in said:
        assert said["bertfeat.spark.embed_dataframe"] == (
            "master= is not an option of bertfeat.spark.embed_dataframe: it is bertfeat.spark.embed_files'; the "
            "DataFrame runs on the session that made it: start that session on the master "
            "(SparkSession.builder.master(...)); drop master=.")
    if "bertfeat.spark.embed_files" in said:
        assert said["bertfeat.spark.embed_files"] == (
            "resource_profile= is not an option of bertfeat.spark.embed_files: it is "
            "bertfeat.spark.embed_dataframe's; a file job's tasks get GPUs as the session gives every task "
            "(spark.executor.resource.gpu.amount, spark.task.resource.gpu.amount); drop resource_profile=.")
    # and the local engine's, the mirror (it refused the other cluster options already)
    from bertfeat.files import embed_file

    src = tmp_path / "in.csv"
    src.write_text("t\na\n")
    with pytest.raises(TypeError) as info:
        embed_file(str(src), str(tmp_path / "o.parquet"), "t", resource_profile=object())
    assert str(info.value) == ("resource_profile= is not an option of the local engine (bertfeat.files.embed_file): "
                               "it is bertfeat.spark.embed_dataframe's; the local engine runs on this machine, on the "
                               "device= it is given.")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
