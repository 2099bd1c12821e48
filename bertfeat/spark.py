"""The Spark engine: the per-batch Arrow core run by Spark's own scheduler, through ``mapInArrow``.

:func:`embed_dataframe` adds the featurization to a Spark DataFrame (lazily, like any Spark transformation);
:func:`embed_files` runs a whole job, CSV/parquet in and a directory of parquet out, with the same columns, schema
metadata and manifest as the single-machine ``bertfeat embed``. Every Python worker keeps one
:class:`~bertfeat.arrow.ArrowFeaturizer` (one model load) for all the batches and tasks it runs, sets its torch
threads from ``spark.task.cpus``, and reads and writes the shared cache. See docs/spark.md.

This module, :mod:`bertfeat.spark_input` (what the job reads: the input's files, staged where Spark cannot read
them as they are) and :mod:`bertfeat.spark_session` (the session a job runs in, and the JVM it starts) are the only
ones that import pyspark, and only when one of their functions is called:
``import bertfeat`` never does.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat import locks
from bertfeat.arrow import at_input_row, first_refused
from bertfeat.counts import (add_passes, driver_says, forward_passes, keep_machine, keep_note, machines_facts,
                             passes_since, say_notes)
from bertfeat.encode import EncodeStats
from bertfeat.engine_options import refuse_other_engines_options
from bertfeat.exceptions import TruncationWarning
from bertfeat.flush import file_to_disk, naming
from bertfeat.inputs import column_names
from bertfeat.sources import FOLDER_OUTPUT, output_path, recorded_path
from bertfeat.files import (InputReader, _atomic_write_bytes, _Paths, job_counts, print_summary,
                            refuse_local_options)
from bertfeat.output import (absolute_paths, check_folder_output, job_lock, own_files, remove_stale_temps,
                             replace_output)
from bertfeat.links import link_docs
from bertfeat.recipe import _is_int
from bertfeat.worker_recipe import (check_fixed_dtype, check_worker_recipe, check_worker_tokenization, driver_recipe,
                                    fix_auto_dtype, libraries)
# the session's side of a job; require_java and JAVA_HINT are imported from here too (the command line, users)
from bertfeat.spark_session import (JAVA_HINT, _conf, _job_ended, _job_master, _own_session, _session,  # noqa: F401
                                    context, master_of, require_java)
from bertfeat.spark_input import (_check_visible, _first_rows, _hadoop_literal, _local_path, _parquet_files,
                                  _spark_schema, _stage)

__doc__ = link_docs(__doc__)  # its docs as addresses: an installed bertfeat has no docs/ folder

INSTALL_HINT = "pip install 'bertfeat[spark]'"
_MISTAKE = "[bertfeat-mistake]"  # marks a user's mistake in a worker's traceback, which is all Spark passes on


def require_spark():
    """Import and return ``pyspark`` (4.x), or say how to install it."""
    try:
        import pyspark
        import pyspark.sql  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"the Spark engine needs pyspark 4.x, which cannot be imported here ({exc}). Install it with "
            f"{INSTALL_HINT} (and a Java runtime), or use the local engine."
        ) from exc
    return pyspark


# -- what each Python worker keeps -----------------------------------------------------------------------------

_WORKER: dict = {"key": None, "featurizer": None, "loads": 0, "tokenization": None}


def _worker_featurizer(spec: dict):
    """This worker's featurizer for ``spec``, built once and reused by every later batch and task it runs.

    Spark reuses its Python workers across tasks (``spark.python.worker.reuse``, on by default), so the model is
    loaded once per worker process, not once per task. One recipe is kept: a job with another replaces it.
    """
    from bertfeat.arrow import ArrowFeaturizer
    from bertfeat.hardware import set_threads

    threads, device = _task_resources(spec["params"].get("device", "auto"))
    _check_fixed_dtype(spec, device)
    set_threads(threads)
    key = json.dumps([spec["text_cols"], spec["keep_cols"], spec["layout"], spec["params"], device], sort_keys=True,
                     default=str)
    expected = spec.get("expected")
    if _WORKER["key"] == key and expected is not None:
        try:  # this worker's model, read by an earlier task: the files may have been put right since
            check_worker_recipe(_WORKER["featurizer"].recipe, expected, "a Spark task")
            if expected.get("tokenization") != _WORKER.get("tokenization"):  # checked against another driver's ids
                check_worker_tokenization(spec["params"], expected, "a Spark task")
                _WORKER["tokenization"] = expected.get("tokenization")
        except ValueError:
            _WORKER.update(key=None, featurizer=None, tokenization=None)
    if _WORKER["key"] != key:
        _WORKER.update(key=None, featurizer=None, tokenization=None)
        featurizer = ArrowFeaturizer(spec["text_cols"], spec["keep_cols"], layout=spec["layout"],
                                     **{**spec["params"], "device": device})
        _WORKER["loads"] += 1
        # the driver's recipe, before any text is embedded: this node's copy of the model may be another
        if expected is not None:
            check_worker_recipe(featurizer.recipe, expected, "a Spark task")
            check_worker_tokenization(spec["params"], expected, "a Spark task")  # this node's libraries
        _WORKER.update(key=key, featurizer=featurizer, tokenization=(expected or {}).get("tokenization"))
    # what decides its numbers beside the recipe: its dtype and its libraries (torch's arithmetic)
    info = {"host": socket.gethostname(), "pid": os.getpid(), "threads": threads, "device": device,
            "loads": _WORKER["loads"], "dtype": getattr(getattr(_WORKER["featurizer"], "recipe", None), "dtype", None),
            "libraries": libraries()}
    return _WORKER["featurizer"], info


def _check_fixed_dtype(spec: dict, device: str) -> None:
    """Refuse a task whose GPU would choose another dtype than the one the driver fixed ``dtype="auto"`` as
    (:func:`_fixed_auto_dtype`): its features would be of another recipe than the output's metadata names."""
    check_fixed_dtype(spec.get("auto_dtype"), device, "Spark", "task")


def _fixed_auto_dtype(params: dict, session, profile=None) -> tuple[dict, str | None]:
    """``params`` with ``dtype="auto"`` fixed for the device the tasks will run on
    (:func:`~bertfeat.worker_recipe.fix_auto_dtype`), so that the provenance the driver writes before any task runs
    is the recipe they run: GPU tasks where ``device="cuda"``, or ``"auto"`` with a GPU for each task (the resource
    ``profile`` the tasks run under asks one, else ``spark.task.resource.gpu.amount``; a driver without a GPU asks
    a task, :func:`_ask_a_task`); and that choice for GPU tasks (else None), which a task whose GPU chooses otherwise
    is refused for (:func:`_check_fixed_dtype`)."""
    if params.get("dtype", "auto") != "auto":
        return params, None
    from bertfeat.devices import device_type

    device = params.get("device", "auto")
    kind = device_type(device)
    if kind == "auto":  # a task uses the GPU Spark assigns it (_task_resources), else the CPU, never MPS
        if profile is not None:  # stage-level scheduling: the stage's own requests, not the session's
            request = profile.taskResources.get("gpu")
            amount = None if request is None else request.amount
        else:
            amount = session.conf.get("spark.task.resource.gpu.amount", None)
        kind = "cuda" if amount is not None and float(amount) > 0 else "cpu"
    return fix_auto_dtype(params, kind, ask=lambda: _ask_a_task(session, device, profile))


def _ask_a_task(session, device: str, profile=None) -> str:
    """What ``dtype="auto"`` is in a task of ``session`` with ``device``: a one-task Spark job, given the GPU Spark
    gives every task (``spark.task.resource.gpu.amount``). A driver without a GPU (Databricks' CPU driver) guessed
    bfloat16, so a cluster of T4s or V100s, which run float16, failed in every task asking for ``--dtype float16``.
    A DataFrame job, not an RDD one: a Spark Connect session (Databricks serverless) has no SparkContext."""
    one = session.range(0, 1, 1, 1)  # one row in one partition: one task
    asking = partial(_task_auto_dtypes, device=device)
    if profile is not None:  # the resources the job's tasks get
        one = one.mapInArrow(asking, "dtype string", profile=profile)
    else:
        one = one.mapInArrow(asking, "dtype string")
    try:
        (row,) = one.collect()
    except Exception as exc:
        mistake = _mistake_in(exc)
        if mistake is None:
            raise
        raise mistake from None  # the task's device cannot be used: said as the job's tasks would say it
    return row["dtype"]


def _task_auto_dtypes(batches, device: str):
    """The function of :func:`_ask_a_task`'s ``mapInArrow``: one row, :func:`_task_auto_dtype` in this task."""
    for _ in batches:  # the job's one row, read as Spark hands it
        pass
    yield pa.record_batch([pa.array([_task_auto_dtype(device)], pa.string())], names=["dtype"])


def _task_auto_dtype(device: str) -> str:
    """In a Spark task: ``dtype="auto"`` on the device this task runs ``device`` on (:func:`_task_resources`)."""
    from bertfeat.devices import resolve_dtype

    try:
        _, here = _task_resources(device)
    except ValueError as exc:
        raise _marked(exc, np.empty(0, dtype=np.int64)) from None
    return resolve_dtype("auto", here)


def _task_resources(device: str) -> tuple[int, str]:
    """torch threads from the task's CPUs (``spark.task.cpus``), and the GPU Spark assigned it, if any."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    if tc is None:  # not in a Spark task (a direct call): whatever this process has
        return max(1, os.cpu_count() or 1), "cpu" if device == "auto" else device
    threads = max(1, int(tc.cpus()))
    gpus = tc.resources().get("gpu")
    assigned = f"cuda:{gpus.addresses[0]}" if gpus is not None and gpus.addresses else None
    if device == "auto":
        # the GPU Spark's resource scheduling gave this task; without one, the CPU, not a GPU another task may hold
        return threads, assigned or "cpu"
    if device == "cuda" and assigned:  # Spark hides no GPU from a task: "cuda" would put every task on GPU 0
        return threads, assigned
    if assigned is None and device != "cpu":
        from bertfeat.devices import resolve_device

        try:  # the executor's GPU, asked before any work: not a model load failing in every task
            resolve_device(device)
        except ValueError as exc:
            raise ValueError(
                f"{exc} (in a Spark task on host {socket.gethostname()!r}, which Spark assigned no GPU: give the "
                "executors GPUs with spark.executor.resource.gpu.amount and spark.task.resource.gpu.amount, or pass "
                "device='auto' to use a GPU where Spark assigns one)"
            ) from None
    return threads, device


def _for_spark(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Spark has no fixed-size lists: the list layout's columns go out as variable-size lists of float32."""
    arrays, fields = [], []
    for field, col in zip(batch.schema, batch.columns):
        if pa.types.is_fixed_size_list(field.type):
            col = col.cast(pa.list_(pa.float32()))
            field = pa.field(field.name, col.type)
        arrays.append(col)
        fields.append(field)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _embed_partition(batches, spec: dict):
    """The function of :func:`embed_dataframe`'s ``mapInArrow``. A bad text's "row i" is the i-th of the Arrow
    batch, and a DataFrame numbers no rows: said so, with the row's kept columns (its id), where the bare "row 0"
    sent its user to the DataFrame's first row. (A file job's driver names the input's row instead.)"""
    from bertfeat.arrow import in_a_batch

    featurizer, _ = _worker_featurizer(spec)
    for batch in batches:
        batch = _renamed(batch, spec.get("names", {}))
        try:
            out = featurizer(batch)
        except (ValueError, TypeError) as exc:
            named = in_a_batch(exc, batch, featurizer.keep_cols, "Spark sent this task", "DataFrame")
            if named is exc:
                raise
            raise named from None
        yield _for_spark(out)


# -- the public API ------------------------------------------------------------------------------------------------


def embed_dataframe(sdf, text_cols, *, keep_cols=(), layout: str = "columns", resource_profile=None, **recipe):
    """Embed the text column(s) of a Spark DataFrame: returns a DataFrame of the kept columns, then the features.

    Lazy, like any Spark transformation: nothing runs until an action (``write.parquet``, ``count``, ``collect``
    ...), but for GPU tasks under a driver without a GPU one task, run now, says what ``dtype="auto"`` is there.
    The feature columns are named as in Python, the CLI and R (``review_mean_000`` ...), float32 (``FloatType``),
    or with ``layout="list"`` one ``array<float>`` column per text column (``review_embedding``).
    The provenance (model, hashes, recipe fingerprint) is in the field metadata, key ``bertfeat``, of the first
    feature column (``layout="columns"``) or of each embedding column (``layout="list"``). Rows keep their
    partitions and their order within them.

    Parameters
    ----------
    sdf : pyspark.sql.DataFrame
        Input with the text column(s) and any kept columns.
    text_cols : str or list of str
        Text column(s) to embed (features of each, side by side).
    keep_cols : str or list of str
        Columns copied through unchanged, before the features (ids, labels).
    layout : {"columns", "list"}
        One float column per feature, or one array column per text column.
    resource_profile : pyspark.resource.ResourceProfile, optional
        Stage-level scheduling: the resources each embedding task asks for (a GPU where the rest of the job runs on
        CPUs), given to ``mapInArrow``; with a GPU in it, ``dtype="auto"`` is the GPU's choice, as with
        ``spark.task.resource.gpu.amount``.
    **recipe
        Any :class:`~bertfeat.BertEmbedder` parameter (model, pooling, layers, cache_dir, batch_tokens, ...). On a
        cluster, ``model`` and ``cache_dir`` must be paths every executor can read (a shared filesystem); with
        ``cache_dir`` every worker reads and writes that cache, so a rerun skips the texts already embedded.

    Each Arrow batch (``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, 10,000 by default) is one call of the
    per-batch core: the unit of deduplication and of a cache lookup. Each Python worker loads the model once and
    runs torch with ``spark.task.cpus`` threads; with ``device="auto"`` it uses the GPU Spark assigned the task
    (``spark.task.resource.gpu.amount``), else the CPU.

    Examples
    --------
    >>> from bertfeat.spark import embed_dataframe
    >>> sdf = spark.read.parquet("reviews/")  # doctest: +SKIP
    >>> feats = embed_dataframe(sdf, "review", keep_cols="id", pooling="mean")  # doctest: +SKIP
    >>> feats.write.parquet("features/")  # doctest: +SKIP
    """
    refuse_local_options(recipe, "spark", reads="dataset",
                         rows="a DataFrame goes to the Spark engine in Arrow batches of "
                         "spark.sql.execution.arrow.maxRecordsPerBatch rows; set that option of the session instead.")
    refuse_other_engines_options(recipe, "spark", "bertfeat.spark.embed_dataframe", lazy=True)
    require_spark()
    from pyspark.sql.types import ArrayType, FloatType, StructField, StructType

    # both arguments' values judged before the DataFrame is asked anything
    text_cols, keep_cols = column_names(text_cols, "text_cols"), column_names(keep_cols, "keep_cols")
    text_cols = _as_spark_reads(text_cols, "text_cols", sdf)
    keep_cols = _as_spark_reads(keep_cols, "keep_cols", sdf)
    master = lambda: master_of(sdf.sparkSession)  # noqa: E731
    _check_device(recipe.get("device", "auto"), master)  # before a task is asked for its dtype
    # the metadata is the driver's, written before any task runs: its dtype="auto" must be what the tasks run
    fixed, gpu_guess = _fixed_auto_dtype(recipe, sdf.sparkSession, resource_profile)
    schema = _arrow_schema(sdf.schema)
    _refuse_nested_texts(schema, text_cols)
    checker = _checked_featurizer(text_cols, keep_cols, layout, fixed, schema, master)
    _refuse_case_twins(keep_cols, checker.output_feature_columns(), sdf.sparkSession)
    provenance = {"bertfeat": json.dumps(checker.provenance())}
    fields = [sdf.schema[c] for c in keep_cols]
    for k, name in enumerate(checker.output_feature_columns()):
        meta = provenance if layout == "list" or k == 0 else {}
        kind = ArrayType(FloatType(), containsNull=False) if layout == "list" else FloatType()
        fields.append(StructField(name, kind, nullable=True, metadata=meta))
    spec = {"text_cols": text_cols, "keep_cols": keep_cols, "layout": layout, "params": absolute_paths(fixed),
            "auto_dtype": gpu_guess,
            "expected": driver_recipe(checker.recipe, checker.recipe.dtype, absolute_paths(fixed))}
    aliases = _aliases(dict.fromkeys(keep_cols + text_cols))
    spec["names"] = {alias: name for name, alias in aliases.items()}
    selected = sdf.selectExpr(*[f"{_quoted(c)} AS {alias}" for c, alias in aliases.items()])
    if resource_profile is None:
        return selected.mapInArrow(partial(_embed_partition, spec=spec), StructType(fields))
    return selected.mapInArrow(partial(_embed_partition, spec=spec), StructType(fields), profile=resource_profile)


def _reads_any_case(session) -> bool:
    """Whether ``session`` reads column names in any case: Spark's default, ``spark.sql.caseSensitive`` false."""
    return str(session.conf.get("spark.sql.caseSensitive", "false")).lower() != "true"


def _as_spark_reads(names: list, what: str, sdf) -> list:
    """The DataFrame's own names of the columns ``names`` (``what``: ``text_cols`` or ``keep_cols``) name, as its
    session reads them: in any case by default (``embed_dataframe(sdf, "REVIEW")`` was refused "not found" beside a
    column ``review`` that Spark itself would select), and a name two columns answer to (``Text`` beside ``text``,
    which failed with Spark's own ``AMBIGUOUS_REFERENCE``) refused naming both. A name no column answers to is left
    for the featurizer's refusal, which lists the columns. A column named twice is refused (two kept ``id`` made an
    output schema of two ``id`` fields for batches holding one)."""
    any_case = _reads_any_case(sdf.sparkSession)
    columns = list(sdf.schema.names)
    resolved = []
    for name in names:
        found = [c for c in columns if (c.lower() == name.lower() if any_case else c == name)]
        if len(found) > 1:
            raise ValueError(
                f"{what}={name!r} names the columns {found} of this DataFrame, which differ in case only, and this "
                "Spark session reads column names in any case (spark.sql.caseSensitive is false), so it cannot tell "
                "which is meant. Set spark.conf.set('spark.sql.caseSensitive', 'true') to read names as written, or "
                "drop or rename one of them first."
            )
        resolved.append(found[0] if found else name)
    twice = [c for c in dict.fromkeys(resolved) if resolved.count(c) > 1]
    if twice:
        how = " (this Spark session reads column names in any case)" if any_case else ""
        raise ValueError(f"{what}={names!r} names column {twice[0]!r} more than once{how}; name each column once.")
    return resolved


def _refuse_case_twins(keep_cols, features, session) -> None:
    """Refuse output columns whose names differ in case only where the session reads names in any case (Spark's
    default, ``spark.sql.caseSensitive`` false): a kept ``Review_mean_01`` beside the feature ``review_mean_01``
    (two kept ``Text`` and ``text`` alike) made a DataFrame Spark cannot write (``COLUMN_ALREADY_EXISTS`` at
    ``write.parquet``) nor select from (``AMBIGUOUS_REFERENCE``). The local engine's output, which pandas and
    pyarrow read by exact name, keeps both."""
    if not _reads_any_case(session):
        return
    first: dict = {}
    for name in [*dict.fromkeys(keep_cols), *features]:
        first.setdefault(name.lower(), []).append(name)
    twins = [names for names in first.values() if len(names) > 1]
    if twins:
        kept = [n for names in twins for n in names if n in keep_cols]
        raise ValueError(
            f"the output's columns {twins} differ in case only, and this Spark session reads column names in any "
            "case (spark.sql.caseSensitive is false): it could neither write nor select them. Rename the kept "
            f"column(s) {kept} first."
        )


def _quoted(name: str) -> str:
    """``name`` as Spark reads a column's name as written: a bare ``user.id`` is field ``id`` of a column ``user``,
    and a backtick in a name is a syntax error."""
    return "`" + name.replace("`", "``") + "`"


def _aliases(columns) -> dict:
    """The name each column goes through ``mapInArrow`` under (the task gives the input's back, :func:`_renamed`):
    pyspark's ``mapInArrow`` looks each column up by its bare name, so ``user.id`` failed the job."""
    return {c: f"_bertfeat_col{k}" for k, c in enumerate(columns)}


def _renamed(batch: pa.RecordBatch, names: dict) -> pa.RecordBatch:
    """``batch`` with the input's column names back (``names``: alias -> name; other columns as they are)."""
    return batch.rename_columns([names.get(n, n) for n in batch.schema.names])


def _tasks_recipe(checker, fixed: dict):
    """The recipe the tasks run: the driver's checked one (computed for its CPU), or where ``dtype="auto"`` was fixed
    as another dtype for them (:func:`_fixed_auto_dtype`), that dtype's, which may differ in more than its dtype (a
    family's half-precision format, :data:`bertfeat.recipe.LOW_PRECISION_MODEL_FORMATS`)."""
    from bertfeat.arrow import ArrowFeaturizer

    if fixed.get("dtype", checker.recipe.dtype) == checker.recipe.dtype:
        return checker.recipe
    return ArrowFeaturizer(checker.text_cols, checker.keep_cols, layout=checker.layout,
                           **{**fixed, "device": "cpu"}).recipe


def _checked_featurizer(text_cols, keep_cols, layout, params, schema: pa.Schema, master):
    """The parameters, the model, the feature names and the columns, checked on the driver before any task runs.
    ``master``: a callable giving the master URL the tasks run on (asked only for a GPU device)."""
    from bertfeat.arrow import ArrowFeaturizer

    _check_device(params.get("device", "auto"), master)
    checker = ArrowFeaturizer(text_cols, keep_cols, layout=layout, **{**params, "device": "cpu"})
    checker.check_schema(schema)
    return checker


def _refuse_nested_texts(schema: pa.Schema, text_cols) -> None:
    """Refuse a text column of arrays or structs of a Spark DataFrame with Spark's way to make it text (the
    featurizer's own refusal names pandas' and polars' ways, for a file to write again)."""
    from bertfeat.arrow import nested_kind
    from bertfeat.encode import LIST_WHY, RECORD_WHY

    functions = " (from pyspark.sql import functions as F)"
    for c in text_cols:
        nested = nested_kind(schema.field(c).type) if c in schema.names else ""
        if nested == "records":
            raise TypeError(f"text column {c!r} holds {schema.field(c).type} values, not text: {RECORD_WHY} Take the "
                            f"field that holds the text first: sdf.withColumn({c!r}, F.col({c!r}).getField('field'))"
                            f"{functions}.")
        if nested == "lists":
            raise TypeError(f"text column {c!r} holds {schema.field(c).type} values, not text: {LIST_WHY} Join each "
                            f"row's items into one text first: sdf.withColumn({c!r}, F.concat_ws(' ', {c!r}))"
                            f"{functions}, or embed the items as texts of their own (F.explode).")


def _check_device(device, master) -> None:
    """Refuse on the driver a device no task can run on: a spelling bertfeat does not know, and a GPU this machine
    has not where a local master runs the tasks here. On a cluster the executors' GPUs are not the driver's (a
    Databricks driver often has none): there each task checks its own (:func:`_task_resources`), as on a Spark
    Connect session's server (``master()`` None)."""
    from bertfeat.devices import device_type, resolve_device

    if device_type(device) in ("auto", "cpu"):
        return
    url = master()
    if url is not None and url.startswith("local"):
        try:
            resolve_device(device)
        except ValueError as exc:
            raise ValueError(f"Spark master {url!r} runs the tasks on this machine: {exc}") from None


def _arrow_schema(spark_schema) -> pa.Schema:
    """The Arrow types Spark hands ``mapInArrow`` for these columns (what the column checks read)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for f in spark_schema.fields:
        try:
            t = to_arrow_type(f.dataType)
        except Exception:  # a type Arrow cannot carry: not text, and named by Spark's own name
            t = pa.binary() if f.dataType.typeName() == "binary" else pa.struct([])
        fields.append(pa.field(f.name, t))
    return pa.schema(fields)


# -- a whole job: files in, a directory of parquet out -----------------------------------------------------------


def embed_files(input, out, text_cols, *, keep_cols=(), layout: str = "columns", overwrite: bool = False,
                batch_rows: int = 10_000, master: str | None = None, quiet: bool = False,
                delimiter: str | None = None, infer_types: bool = False, quoting: str | None = None,
                **params) -> dict:
    """Embed the text columns of a CSV/parquet input on Spark into a directory of parquet files; returns the manifest.

    ``input`` is a CSV file, a parquet file, or a directory or glob of parquet files (as for ``bertfeat embed``).
    ``out`` is a directory of ``part-NNNNNN.parquet`` files whose sorted names give the input's row order, with the
    local engine's columns, types and schema metadata; it appears only when complete (written as
    ``<out>.partial/data/``, then renamed), with the manifest beside it in ``<out>.manifest.json``.

    Parquet is read by Spark. A CSV file is first streamed by the driver into parquet under ``<out>.partial/input``
    (bounded memory), so that it is parsed exactly as the local engine parses it (missing markers, quoted text,
    column types; ``delimiter``, ``infer_types`` and ``quoting`` as for :func:`bertfeat.files.embed_file`). The rows are then
    range-partitioned by input row number into at least as many partitions as Spark has cores (and about
    ``batch_rows`` rows each), each task writes its partition's part file, and the
    manifest's counts come from the job's results, so a task Spark retries is counted once.

    Without ``cache_dir`` a run-private cache in ``<out>.partial/cache`` deduplicates texts across tasks and is
    kept by a job that dies, so running the same command again embeds only what is left. ``master`` is a Spark
    master URL (``local[4]``, ``spark://host:7077``, ``yarn``) or a Spark Connect server (``sc://host:15002``, no Java
    needed here); without it the session this process has (made in any thread), else the Connect server
    ``SPARK_REMOTE`` names, else ``spark-submit``'s master, else ``local[*]``. Other parameters: any
    :class:`~bertfeat.BertEmbedder` parameter.
    """
    refuse_local_options(params, "spark")
    refuse_other_engines_options(params, "spark", "bertfeat.spark.embed_files")
    require_spark()
    t0 = time.perf_counter()
    text_cols = column_names(text_cols, "text_cols")
    keep_cols = column_names(keep_cols, "keep_cols")
    if not _is_int(batch_rows) or batch_rows < 1:
        raise ValueError(f"batch_rows={batch_rows!r} is not valid: expected a positive number of rows.")
    paths = _Paths.of(Path(output_path(out, "out", "the path of the folder to write",
                                     FOLDER_OUTPUT)))
    # CSV kept columns as text unless infer_types, as the local engine reads them (007 stays 007)
    reader = InputReader(input, keep_cols + text_cols, batch_rows, text_cols, delimiter=delimiter,
                         infer_types=infer_types, quoting=quoting, exclude=own_files(paths, params))
    check_folder_output(paths, reader, overwrite)
    if not reader.has_rows:  # a header-only CSV too: before the model is resolved (a hub model's download)
        raise ValueError(f"input {reader.path!r} has no rows to embed.")
    checker = _checked_featurizer(text_cols, keep_cols, layout, params, reader.schema, lambda: _job_master(master, quiet))
    if reader.kind == "parquet":
        _check_visible(reader.files)
    with job_lock(paths):  # a second job on the same --out is refused, never interleaved
        remove_stale_temps(paths)  # what a killed run left beside --out
        # again, holding the lock: a job on this --out may have finished while the model loaded
        check_folder_output(paths, reader, overwrite)
        user_cache = params.get("cache_dir")
        if user_cache is None:
            # kept when a job dies, so that a rerun answers the finished texts from it (the cache is keyed by recipe,
            # so another job's leftovers can never answer for this one)
            params = {**params, "cache_dir": str(paths.partial / "cache")}
        data_dir, staged = paths.partial / "data", paths.partial / "input"
        for d in (data_dir, staged):
            shutil.rmtree(d, ignore_errors=True)  # files of a dead run: rewritten, their texts come from the cache
        paths.partial.mkdir(parents=True, exist_ok=True)
        fingerprint = reader.fingerprint()  # the input as it is before it is read: checked again once it was
        files, counts = _parquet_files(reader, staged)
        total_rows = int(sum(counts))
        if not total_rows:
            shutil.rmtree(paths.partial, ignore_errors=True)
            raise ValueError(f"input {reader.path!r} has no rows to embed.")

        t_start = time.perf_counter()
        spark, started = _session(master, quiet)
        start_seconds = time.perf_counter() - t_start
        try:
            # the user's session is never changed, not even while the job runs; the job's own ends with it
            with _own_session(spark, started) as job, _conf(job, {
                    "spark.sql.execution.arrow.maxRecordsPerBatch": str(batch_rows),
                    # pandas' datetime64[ns] columns: read as the whole numbers they are, and given back their type
                    # in the task, where Spark refuses them otherwise
                    "spark.sql.legacy.parquet.nanosAsLong": "true",
                    # names as written, as the local engine reads them: columns `Text` and `text` are two
                    "spark.sql.caseSensitive": "true"}):
                read_schema = None
                if reader.kind == "parquet":
                    read_schema = _spark_schema(job, reader.files, list(dict.fromkeys(keep_cols + text_cols)),
                                                reader.schema)
                    if read_schema is None:  # Spark cannot read the files as they are: staged, as a CSV is
                        files, counts = _stage(reader, staged)
                # dtype="auto" fixed once for the tasks' device: left to each, GPUs of two kinds ran two recipes
                fixed, gpu_guess = _fixed_auto_dtype(params, job)
                try:
                    result, partitions = _run_job(job, files, counts, reader.schema, text_cols, keep_cols, layout,
                                                  batch_rows, data_dir, absolute_paths(fixed),
                                                  read_schema=read_schema,
                                                  expected=driver_recipe(_tasks_recipe(checker, fixed),
                                                                         fixed.get("dtype"), absolute_paths(fixed)),
                                                  auto_dtype=gpu_guess)
                except (ValueError, TypeError) as mistake:  # a task's: its partition's first bad text, not the input's
                    raise first_refused(mistake, reader, checker) from None
            master_url = master_of(spark)
            task_cpus = int(spark.conf.get("spark.task.cpus", "1"))
        finally:
            _job_ended(spark, started)

        written, provenance = _check_written(data_dir, total_rows)
        reader.check_unchanged(fingerprint)
        paths.manifest.unlink(missing_ok=True)  # an earlier output's: never beside features it does not describe
        replace_output(data_dir, paths.out)
        parts = sorted((json.loads(s) for s in result["stats"]), key=lambda s: s["partition"])
        totals = EncodeStats()
        for s in parts:
            totals += EncodeStats(**s["stats"])
        by_worker: dict[tuple, dict[str, int]] = {}
        for s in parts:  # each Python worker's own forward passes, by rung: the fused pass may differ by CPU
            add_passes(by_worker.setdefault((s["worker"]["host"], s["worker"]["pid"]), {}), s.get("forward_pass", {}))
        workers = sorted(({**w, "forward_pass": by_worker[(w["host"], w["pid"])]}
                          for w in {(w["host"], w["pid"]): w for w in (s["worker"] for s in parts)}.values()),
                         key=lambda w: (w["host"], w["pid"]))
        passes, machines, notes = {}, {}, {}
        for s in parts:
            add_passes(passes, s.get("forward_pass", {}))
            if "machine" in s:
                keep_machine(machines, s["worker"]["host"], s["machine"])
            for kind, message in s.get("notes", []):
                keep_note(notes, s["worker"]["host"], message, kind)
        manifest = {
            "output": recorded_path(paths.out),
            "engine": "spark",
            "input": fingerprint,
            "provenance": provenance,
            "counts": job_counts(totals, _Exact(result["distinct"]), len(text_cols), 0, len(parts)),
            "timing": {"seconds": round(time.perf_counter() - t0, 3), "embed_seconds": round(totals.seconds, 3),
                       "spark_start_seconds": round(start_seconds, 3),
                       # as the local engine's: the machine(s) the tasks ran on, and the forward passes of the
                       # partitions written (a task Spark retried counted once)
                       "machine": machines_facts(machines), "forward_pass": passes},
            "chunk_rows": batch_rows,
            "reading": reader.reading(),
            "cache_dir": recorded_path(user_cache),
            "spark": {"master": master_url, "task_cpus": task_cpus, "partitions": partitions, "files": len(written),
                      "csv_staged": reader.kind == "csv", "staged": read_schema is None,
                      "retried_tasks": sum(s["attempt"] > 0 for s in parts),
                      "workers": workers},
        }
        _atomic_write_bytes(paths.manifest, json.dumps(manifest, indent=2).encode())
        # removed only now: a run stopped before its manifest leaves its cache for the rerun (check_folder_output)
        shutil.rmtree(paths.partial, ignore_errors=True)
        if not quiet:
            print_summary(manifest)
        # said once the output is whole: where warnings are errors, it stops nothing half-way
        say_notes(notes, "a Spark task")
        return manifest


class _Exact:
    """A distinct-text count Spark computed exactly, in the shape :func:`~bertfeat.files.job_counts` reads."""

    def __init__(self, n: int):
        self.n = int(n)

    def count(self) -> tuple[int, bool]:
        return self.n, True


def _run_job(spark, files, counts, input_schema, text_cols, keep_cols, layout, batch_rows, data_dir, params,
             read_schema=None, expected=None, auto_dtype=None):
    """Read, order, partition, embed and write; returns the collected counts and the number of partitions. With
    ``read_schema`` (:func:`_spark_schema`), Spark reads the files with it rather than guessing one."""
    from pyspark.sql import functions as F

    columns = list(dict.fromkeys(keep_cols + text_cols))
    own = _own_names(columns)
    read = spark.read if read_schema is None else spark.read.schema(read_schema)
    sdf = read.parquet(*[_hadoop_literal(str(f.resolve())) for f in files])
    meta = sdf.metadataColumn("_metadata")  # Spark's file metadata, even when the input has a column of that name
    aliases = _aliases(columns)
    sdf = sdf.select(*[F.col(_quoted(c)).alias(a) for c, a in aliases.items()],
                     meta.getField("file_path").alias(own["file"]), meta.getField("row_index").alias(own["index"]))
    row = F.element_at(_first_rows(files, counts), _local_path(F.col(own["file"]))) + F.col(own["index"])
    ordered = sdf.select(*aliases.values(), row.alias(own["row"]))
    total = int(sum(counts))
    partitions = _partitions(spark, total, batch_rows)
    # range partitions of the row number, sorted within: partition k holds the k-th stretch of the input, so the
    # part files' names give the input order (an explicit count, which adaptive execution does not coalesce)
    ordered = ordered.repartitionByRange(partitions, own["row"]).sortWithinPartitions(own["row"])
    spec = _task_spec(text_cols, keep_cols, layout, params, data_dir, input_schema, expected, auto_dtype)
    data_dir.mkdir(parents=True, exist_ok=True)
    results = ordered.mapInArrow(partial(_write_partition, spec=spec), "stats string, hash long")
    # one action: the per-partition counts, and the distinct texts counted by Spark (never gathered on the driver)
    row = results.agg(F.collect_list("stats").alias("stats"), F.count_distinct("hash").alias("distinct"))
    try:
        got = row.collect()[0]
    except Exception as exc:
        mistake = _mistake_in(exc)
        if mistake is None:
            raise
        raise mistake from None  # the user's mistake, as the local engine words it, not Spark's wrapping
    return {"stats": got["stats"], "distinct": got["distinct"]}, partitions


def _partitions(spark, total: int, batch_rows: int) -> int:
    """How many partitions a job of ``total`` rows has: about ``batch_rows`` rows each, and at least as many as Spark
    has cores; on a Spark Connect session, which has no SparkContext to say its cores, the rows alone decide."""
    sc = context(spark)
    return max(1 if sc is None else sc.defaultParallelism, math.ceil(total / batch_rows))


def _task_spec(text_cols, keep_cols, layout, params, data_dir: Path, input_schema: pa.Schema,
               expected: dict | None = None, auto_dtype: str | None = None) -> dict:
    """What each task of a job is sent (:func:`_write_partition` reads it): plain values that pickle small.
    ``expected``: the driver's recipe (:func:`~bertfeat.worker_recipe.driver_recipe`), which each task checks its own
    against before it embeds anything; ``auto_dtype``: what the driver fixed ``dtype="auto"`` as for GPU tasks."""
    return {"text_cols": text_cols, "keep_cols": keep_cols, "layout": layout, "params": params, "expected": expected,
            "auto_dtype": auto_dtype,
            "data_dir": str(data_dir.resolve()), "input_schema": input_schema.serialize().to_pybytes(),
            "row_col": _own_names(keep_cols + text_cols)["row"],
            "names": {a: c for c, a in _aliases(dict.fromkeys(keep_cols + text_cols)).items()}}


def _own_names(columns) -> dict:
    """The names of the columns a job adds (each row's file, index in it, and input row number): ``_bertfeat_file``
    ..., with a ``_`` more in front while an input column has that name in any case (Spark's names are
    case-insensitive by default), so that the user's columns are never shadowed or ambiguous."""
    taken = {c.lower() for c in columns}
    names = {}
    for key in ("file", "index", "row"):  # three different stems: the names never meet each other
        name = f"_bertfeat_{key}"
        while name.lower() in taken:
            name = "_" + name
        names[key] = name
    return names


def _write_partition(batches, spec: dict):
    """One task: embed its partition batch by batch into one part file; yields its counts and its texts' hashes."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    part, attempt = tc.partitionId(), tc.attemptNumber()
    try:
        featurizer, info = _worker_featurizer(spec)
    except (ValueError, TypeError) as exc:  # a model this executor cannot load, say: the user's to fix
        raise _marked(exc, np.empty(0, dtype=np.int64)) from None
    input_schema = pa.ipc.read_schema(pa.py_buffer(spec["input_schema"]))
    passes_before = forward_passes(featurizer.recipe)  # this worker ran other tasks before: this one's passes only
    row_col = spec["row_col"]
    final = Path(spec["data_dir"]) / f"part-{part:06d}.parquet"
    tmp = final.with_name(f".{final.name}.tmp-{tc.taskAttemptId()}")  # unique to this attempt in the application
    totals = EncodeStats()
    writer = None
    notes: list[str] = []
    try:
        for batch in batches:
            if batch.column(row_col).null_count:
                raise RuntimeError("Spark read rows of a file bertfeat did not list (their row numbers are unknown); "
                                   "report this as a bug.")
            rows = batch.column(row_col).to_numpy()
            batch = _as_input_types(_renamed(batch, spec["names"]), input_schema,
                                    featurizer.keep_cols + featurizer.text_cols)
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("ignore", TruncationWarning)  # counted in the manifest instead
                    result = featurizer(batch)
            except (ValueError, TypeError) as exc:
                raise _marked(exc, rows) from None
            for w in caught:  # a slow dtype, a read-only cache: said by the driver (an executor's log is unread)
                kind = driver_says(w.category)
                if kind is not None:
                    notes.append([kind, str(w.message)])
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            totals += featurizer.embedder.stats_
            with naming(tmp):  # a full disk's error from pyarrow names no file
                writer = writer or pq.ParquetWriter(tmp, result.schema)
                writer.write_batch(result, row_group_size=max(1, result.num_rows))
            hashes = featurizer.text_hashes(batch)
            yield pa.record_batch([pa.nulls(len(hashes), pa.string()), pa.array(hashes.view(np.int64))],
                                  names=["stats", "hash"])
        if writer is not None:
            writer.close()
            writer = None
            file_to_disk(tmp)
            # a retried or speculative attempt writes the same rows under the same name
            locks.retried(os.replace, tmp, final)
    finally:
        if writer is not None:
            writer.close()
        if tmp.exists():
            tmp.unlink()
    from bertfeat.hardware import run_facts

    # as the local engine's manifest has them: the forward passes that ran this partition, and the machine (its
    # rates measured once the model ran)
    stats = {"partition": part, "attempt": attempt, "stats": totals.to_dict(), "worker": info,
             "forward_pass": passes_since(passes_before, featurizer.recipe),
             "machine": run_facts(*featurizer.product_shape()), "notes": notes}
    yield pa.record_batch([pa.array([json.dumps(stats)]), pa.nulls(1, pa.int64())], names=["stats", "hash"])


def _as_input_types(batch: pa.RecordBatch, input_schema: pa.Schema, columns: list[str]) -> pa.RecordBatch:
    """The columns back in the input's Arrow types where Spark changed them (int32 ids read as int32, large_string
    as string...), so the output's kept columns have the local engine's types."""
    arrays, fields = [], []
    for name in columns:
        col, want = batch.column(name), input_schema.field(name)
        if pa.types.is_null(want.type) and col.null_count == len(col):
            col = pa.nulls(len(col))  # parquet's null type (a column all None), which Spark reads as int32
        elif col.type != want.type:
            try:
                col = col.cast(want.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                want = pa.field(name, col.type)  # Spark's type, where the input's cannot be restored
        arrays.append(col)
        fields.append(want)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _marked(exc: Exception, rows: np.ndarray) -> Exception:
    """The error with its row number made the input's (the core counts rows within its batch), and marked so that
    the driver can tell it from Spark's own failures and raise it as the local engine does."""
    message = str(at_input_row(exc, rows))
    return type(exc)(f"{_MISTAKE}{json.dumps({'type': type(exc).__name__, 'message': message})}{_MISTAKE}")


def _mistake_in(exc: Exception) -> Exception | None:
    """The user's mistake a worker raised, from the text of Spark's error, or None for any other failure."""
    m = re.search(re.escape(_MISTAKE) + r"(.*?)" + re.escape(_MISTAKE), str(exc), re.S)
    if m is None:
        return None
    try:
        found = json.loads(m.group(1))
    except ValueError:
        return None
    return (TypeError if found.get("type") == "TypeError" else ValueError)(found.get("message", ""))


def _check_written(data_dir: Path, expected_rows: int) -> tuple[list[Path], dict]:
    """The written part files and their common provenance; fails loudly rather than leave a wrong output."""
    from bertfeat.output import check_written

    for f in data_dir.iterdir():
        if not (f.name.startswith("part-") and f.name.endswith(".parquet")):
            shutil.rmtree(f) if f.is_dir() else f.unlink()  # what a killed attempt may have left (its temp file)
    files = sorted(data_dir.glob("part-*.parquet"))
    return files, check_written(files, data_dir, expected_rows, "the Spark tasks")
