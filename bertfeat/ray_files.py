"""The Ray engine's file job: :func:`embed_parquet`, parquet in and a folder of parquet out with the local engine's
schema, metadata and manifest. The job's checks before Ray starts, its run on
:func:`~bertfeat.ray_dataset.embed_dataset`, the sink that writes each write task's rows in order with the counts of
the batches they came from, and the manifest made from what was written (a batch Ray retries counted once)."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import pyarrow.parquet as pq

from bertfeat.arrow import first_refused
from bertfeat.counts import add_passes, machines_facts, say_notes
from bertfeat.encode import EncodeStats
from bertfeat.files import (
    PARQUET_SUFFIXES, InputReader, _atomic_write_bytes, _Paths, job_counts, print_summary, refuse_local_options,
)
from bertfeat.flush import file_to_disk, naming
from bertfeat.engine_options import refuse_other_engines_options
from bertfeat.inputs import column_names
from bertfeat.output import check_folder_output, job_lock, own_files, remove_stale_temps, replace_output
from bertfeat.ray_actor import STATS_COL, JobCounts
from bertfeat.ray_dataset import REQUIRED, embed_dataset, require_ray, text_columns
from bertfeat.ray_plan import _cluster_nodes, check_pool, plan_workers
from bertfeat.ray_session import _job_context, _job_ended, _process_settings, _ray_for_job
from bertfeat.recipe import _is_int
from bertfeat.sources import FOLDER_OUTPUT, output_path, recorded_path


def embed_parquet(input, out, text_cols=REQUIRED, *, keep_cols=(), layout: str = "columns", overwrite: bool = False,
                  batch_rows: int = 10_000, num_workers=None, gpus_per_worker=0, cpus_per_worker=None,
                  preserve_order: bool = True, quiet: bool = False, **params) -> dict:
    """Embed the text columns of parquet input on Ray into a directory of parquet files; returns the manifest.

    ``input`` is a parquet file, a directory or a glob of parquet files (as for ``bertfeat embed``). ``out`` is a
    directory: it appears only when complete (written as ``<out>.partial/data/``, then renamed), with the manifest
    beside it in ``<out>.manifest.json``. Rows keep the input order unless ``preserve_order=False`` (which lets a
    slow batch not hold back the writes of later ones). Without ``cache_dir`` a run-private cache in
    ``<out>.partial/cache`` deduplicates texts across batches and workers, and is kept by an interrupted run, so
    running the same command again embeds only what is left. Other parameters as for :func:`embed_dataset`.
    """
    text_cols = text_columns(text_cols, params, "embed_parquet")
    refuse_local_options(params, "ray", reads="parquet")
    refuse_other_engines_options(params, "ray", "bertfeat.ray.embed_parquet")
    ray = require_ray()
    t0 = time.perf_counter()
    keep_cols = column_names(keep_cols, "keep_cols")
    if not _is_int(batch_rows) or batch_rows < 1:
        raise ValueError(f"batch_rows={batch_rows!r} is not valid: expected a positive number of rows.")
    if STATS_COL in keep_cols + text_cols:  # it would be dropped with the counts, or make two columns of one name
        raise ValueError(f"column {STATS_COL!r} has the name the Ray engine carries each batch's counts in; rename "
                         "it, or use the local or Spark engine.")
    paths = _Paths.of(Path(output_path(out, "out", "the path of the folder to write",
                                     FOLDER_OUTPUT)))
    reader = InputReader(input, keep_cols + text_cols, batch_rows, text_cols, exclude=own_files(paths, params))
    if reader.kind != "parquet":
        raise ValueError(
            f"input {reader.path!r} is CSV: the Ray engine reads parquet only. Convert it to parquet first, or use "
            "the local engine (bertfeat.files.embed_file)."
        )
    check_folder_output(paths, reader, overwrite)
    queried = [str(f) for f in reader.files if "?" in str(f.resolve())]
    if queried:  # Ray Data reads a path as a URL: it found no such file, and among others left it out unread
        raise ValueError(
            f"Ray cannot read input file(s) {queried[:3]}: Ray Data takes a '?' in a path for the start of a URL "
            "query. Rename them (or their folder), or use the local or Spark engine."
        )
    with job_lock(paths):  # a second job on the same --out is refused, never interleaved
        remove_stale_temps(paths)  # what a killed run left beside --out
        check_folder_output(paths, reader, overwrite)  # again: a job on this --out may have finished since
        return _embed_parquet_job(ray, t0, input, paths, reader, text_cols, keep_cols, layout, batch_rows, num_workers,
                                  gpus_per_worker, cpus_per_worker, preserve_order, quiet, params)


def _embed_parquet_job(ray, t0, input, paths, reader, text_cols, keep_cols, layout, batch_rows, num_workers,
                       gpus_per_worker, cpus_per_worker, preserve_order, quiet, params) -> dict:
    if not reader.total_rows:
        raise ValueError(f"input {reader.path!r} has no rows to embed.")
    fingerprint = reader.fingerprint()  # the input as it is before it is read: checked again once it was
    check_pool(num_workers, gpus_per_worker, cpus_per_worker, params.get("device", "auto"))  # before Ray starts
    from bertfeat.arrow import ArrowFeaturizer

    # the parameters, the model and the columns are checked before Ray starts or anything is written
    checker = ArrowFeaturizer(text_cols, keep_cols, layout=layout, **{**params, "device": "cpu"})
    checker.check_schema(reader.schema)
    user_cache = params.get("cache_dir")
    if user_cache is None:
        # kept when a run dies, so that a rerun answers finished texts from it (the cache is keyed by recipe, so a
        # different job's leftovers can never answer for this one)
        params = {**params, "cache_dir": str(paths.partial / "cache")}
    data_dir = paths.partial / "data"
    shutil.rmtree(data_dir, ignore_errors=True)  # files of a dead run: rewritten, their texts come from the cache
    paths.partial.mkdir(parents=True, exist_ok=True)

    started = _ray_for_job(ray, quiet)
    try:
        with _process_settings(quiet, ray, preserve_order):
            plan = plan_workers(*_cluster_nodes(ray), num_workers, gpus_per_worker, cpus_per_worker,
                                params.get("device", "auto"))
            collector = ray.remote(num_cpus=0)(JobCounts).remote()
            # exactly the files the local engine would read: no hive partition columns, every parquet suffix; and
            # its one type per column (files whose types differ, widened as bertfeat.schemas says), so that every
            # block, and so every part file, has the local engine's types
            ds = ray.data.read_parquet([str(f.resolve()) for f in reader.files],
                                       **_without_partition_columns(ray.data.read_parquet),
                                       file_extensions=[s.lstrip(".") for s in PARQUET_SUFFIXES],
                                       schema=reader.schema)
            # the job's order and progress options on the dataset's own context, never the process's
            feats = embed_dataset(_job_context(ds, preserve_order, quiet), text_cols, keep_cols,
                                  num_workers=plan.num_workers,
                                  gpus_per_worker=gpus_per_worker, cpus_per_worker=plan.cpus, batch_rows=batch_rows,
                                  layout=layout, _collector=collector, **params)
            try:
                feats.write_datasink(_ordered_parquet_sink(ray, data_dir.resolve()))
            except Exception:
                mistake = ray.get(collector.first_mistake.remote())
                if mistake is None:
                    raise
                # the user's mistake, as the local engine reports it, not Ray's wrapping
                # Ray numbers no rows: the driver finds the input's first bad text
                raise first_refused(mistake, reader, checker) from None
            distinct, workers = ray.get(collector.report.remote())
            machines = ray.get(collector.machines_report.remote())
            notes = ray.get(collector.notes_report.remote())
            ray.kill(collector)
    finally:
        if started:
            _job_ended(ray)

    totals, batches, passes, by_worker = _written_stats(data_dir)
    # each actor's own forward passes, by rung: on CPUs of different kinds the fused pass may differ by node
    workers = [{**w, "forward_pass": by_worker.get((w["host"], w["pid"]), {})} for w in workers]
    files, provenance = _check_written(data_dir, reader.total_rows)
    reader.check_unchanged(fingerprint)
    paths.manifest.unlink(missing_ok=True)  # an earlier output's: never beside features it does not describe
    replace_output(data_dir, paths.out)
    manifest = {
        "output": recorded_path(paths.out),
        "engine": "ray",
        "input": fingerprint,
        "provenance": provenance,
        # every count from what was written: a batch Ray retries is written, and counted, once
        "counts": {**job_counts(totals, distinct, len(text_cols), 0, batches), "rows": reader.total_rows,
                   "texts": reader.total_rows * len(text_cols)},
        "timing": {"seconds": round(time.perf_counter() - t0, 3), "embed_seconds": round(totals.seconds, 3),
                   # as the local engine's: the machine(s) the workers ran on, and the forward passes of the
                   # batches written (a batch Ray retries counted once)
                   "machine": machines_facts(machines), "forward_pass": passes},
        "chunk_rows": batch_rows,
        "cache_dir": recorded_path(user_cache),
        "ray": {**asdict(plan), "files": len(files), "preserve_order": preserve_order, "workers": workers},
    }
    _atomic_write_bytes(paths.manifest, json.dumps(manifest, indent=2).encode())
    # removed only now: a run stopped before its manifest leaves its cache for the rerun (check_folder_output)
    shutil.rmtree(paths.partial, ignore_errors=True)
    if not quiet:
        print_summary(manifest)
    # said once the output is whole: where warnings are errors, it stops nothing half-way
    say_notes(notes, "a Ray worker")
    return manifest


def _ordered_parquet_sink(ray, directory: Path):
    """A Ray Data sink that writes each write task's blocks, in the order they come, to one parquet file named by
    the task's index (``part-000000-<uuid>.parquet``), so sorted file names give the input order.

    Ray's own ``write_parquet`` hands a task's blocks to ``pyarrow.dataset.write_dataset`` with threads on, which
    does not keep row order: a rerun of the same job could write the same rows in another order.
    """
    import uuid

    from ray.data.block import BlockAccessor

    write_id = uuid.uuid4().hex[:12]

    class OrderedParquetSink(ray.data.Datasink):
        def write(self, blocks, ctx) -> None:
            path = directory / f"part-{ctx.task_idx:06d}-{write_id}.parquet"
            writer = None
            stats: list[str] = []
            try:
                for block in blocks:
                    table = BlockAccessor.for_block(block).to_arrow()
                    if table.num_rows == 0:
                        continue
                    if STATS_COL in table.column_names:  # the counts of the batches these rows came from
                        stats += [s for s in table.column(STATS_COL).to_pylist() if s is not None]
                        table = table.drop_columns([STATS_COL])
                    with naming(path):  # a full disk's error from pyarrow names no file
                        writer = writer or pq.ParquetWriter(path, table.schema)
                        writer.write_table(table)
            finally:
                if writer is not None:
                    writer.close()
            if writer is not None:  # on disk before the folder is put in place, as the other engines' parts are
                file_to_disk(path)
            if stats:  # beside its file, rewritten with it when Ray retries this write
                _atomic_write_bytes(_stats_file(path), json.dumps(stats).encode())

        def get_name(self) -> str:
            return "BertfeatParquet"

    directory.mkdir(parents=True, exist_ok=True)
    return OrderedParquetSink()


def _stats_file(data_file: Path) -> Path:
    return data_file.with_name(data_file.name[:-len(".parquet")] + ".stats.json")


def _written_stats(data_dir: Path) -> tuple[EncodeStats, int, dict[str, int], dict[tuple, dict[str, int]]]:
    """The summed counts of the batches whose rows were written, the number of batches, their forward passes by
    arrangement, and those of each worker (``(host, pid)``) that ran them; removes the stats files (what is left in
    the folder is the output)."""
    totals, batches, passes, by_worker = EncodeStats(), 0, {}, {}
    for f in sorted(data_dir.glob("*.stats.json")):
        for stats in json.loads(f.read_text()):
            stats = json.loads(stats)
            ran = stats.pop("forward_pass", {})
            add_passes(passes, ran)
            worker = stats.pop("worker", None)
            if worker is not None:
                add_passes(by_worker.setdefault(tuple(worker), {}), ran)
            totals += EncodeStats(**stats)
            batches += 1
        f.unlink()
    return totals, batches, passes, by_worker


def _check_written(data_dir: Path, expected_rows: int) -> tuple[list[Path], dict]:
    """The written files and their common provenance; fails loudly rather than leave a wrong output."""
    from bertfeat.output import check_written

    files = sorted(data_dir.glob("*.parquet"))
    return files, check_written(files, data_dir, expected_rows, "the Ray workers")


def _without_partition_columns(read_parquet) -> dict:
    """``read_parquet``'s argument for reading no hive partition columns, under the name the installed Ray takes:
    ``partitioning=None`` where it names that parameter; before (Ray 2.30 and older) that name fell into the
    arguments Ray passes on to pyarrow's ``Fragment.to_batches``, a TypeError failing every parquet job, and the
    same setting is pyarrow's dataset's, ``dataset_kwargs={"partitioning": None}``."""
    import inspect

    if "partitioning" in inspect.signature(read_parquet).parameters:
        return {"partitioning": None}
    return {"dataset_kwargs": {"partitioning": None}}

