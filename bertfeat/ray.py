"""The Ray Data runner: the per-batch core on a pool of actors, one model per actor, over a cluster's CPUs or GPUs.

:func:`embed_dataset` adds the featurization to a Ray Dataset (lazily, like any Ray Data transform);
:func:`embed_parquet` runs a whole job, parquet in and a directory of parquet out, with the same schema, metadata
and manifest as the single-machine ``bertfeat embed``. Each actor holds one :class:`~bertfeat.arrow.ArrowFeaturizer`
(so one model load), sets its torch thread count from its CPU allotment, and reads and writes the shared cache, so
a rerun or a resumed job embeds only the texts no earlier run finished. See docs/ray.md.

This is the only module that imports Ray, and only when one of its functions is called: ``import bertfeat``
never does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import socket
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat.arrow import first_refused
from bertfeat.counts import (add_passes, forward_passes, keep_machine, keep_note, machines_facts, passes_since,
                             say_notes)
from bertfeat.encode import EncodeStats
from bertfeat.exceptions import SlowDtypeWarning, TruncationWarning
from bertfeat.sources import FOLDER_OUTPUT, output_path
from bertfeat.files import (
    PARQUET_SUFFIXES, DistinctCounter, InputReader, _atomic_write_bytes, _Paths, job_counts, print_summary,
    refuse_local_options,
)
from bertfeat.output import absolute_paths, check_folder_output, job_lock, remove_stale_temps, replace_output
from bertfeat.recipe import _is_int
from bertfeat.started_by_jobs import StartedByJobs
from bertfeat.worker_recipe import (check_fixed_dtype, check_worker_recipe, check_worker_tokenization, driver_recipe,
                                    fix_auto_dtype, libraries)

INSTALL_HINT = "pip install 'bertfeat[ray]'"
# a column the workers add to a file job's batches, with the batch's counts on its first row (null on the others);
# the sink takes it off before writing
STATS_COL = "__bertfeat_batch_stats__"


def require_ray():
    """Import and return ``ray`` (with Ray Data), or say how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"the Ray engine needs Ray Data, which cannot be imported here ({exc}). Install it with {INSTALL_HINT} "
            "(or pip install 'ray[data]'), or use the local engine."
        ) from exc
    return ray


# -- how many workers, and what each gets ------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerPlan:
    """The actor pool: its size, each actor's Ray resources, torch threads and device."""

    num_workers: int
    cpus: float
    gpus: float
    threads: int
    device: str


def plan_workers(node_cpus, node_gpus, num_workers=None, gpus_per_worker=0, cpus_per_worker=None,
                 device: str = "auto") -> WorkerPlan:
    """Size the actor pool from the cluster's nodes (their CPU and GPU counts) and the user's choices.

    With GPUs: one actor per ``gpus_per_worker`` GPUs in the cluster, one CPU each unless told otherwise. Without,
    the nodes' CPUs less one each (left to Ray Data's read and write tasks, which would otherwise starve and stall
    the job) are the actors': by default one actor per node on nodes of one size, and on nodes of different sizes as
    many as fit node by node (:func:`_fill_nodes`); with ``num_workers``, shared among them, whole CPUs where there
    are enough, and no more each than lets every actor find a node with that many spare.
    """
    if num_workers is not None and (not _is_int(num_workers) or num_workers < 1):
        raise ValueError(f"num_workers={num_workers!r} is not valid: expected a positive int, or None for the default.")
    if not _is_number(gpus_per_worker) or gpus_per_worker < 0:
        raise ValueError(f"gpus_per_worker={gpus_per_worker!r} is not valid: expected a number >= 0 (0 = CPU only).")
    if cpus_per_worker is not None and (not _is_number(cpus_per_worker) or cpus_per_worker <= 0):
        raise ValueError(f"cpus_per_worker={cpus_per_worker!r} is not valid: expected a number > 0, or None.")
    device = worker_device(device, gpus_per_worker)
    gpus = float(gpus_per_worker)
    if gpus > 0:
        if num_workers is None:
            # how many shares fit, node by node (a share cannot span two nodes: two nodes of one GPU hold four
            # workers of 0.4, not five), read past float error: 1 // 0.1 is 9.0, yet ten workers of 0.1 fit one GPU
            num_workers = sum(_whole(g / gpus) for g in node_gpus)
            if num_workers < 1:
                raise ValueError(
                    f"gpus_per_worker={gpus_per_worker} but the Ray cluster has {sum(node_gpus):g} GPU(s). Pass "
                    "num_workers= explicitly (an autoscaling cluster then adds GPU nodes), or gpus_per_worker=0 for "
                    "CPU workers."
                )
        cpus = 1.0 if cpus_per_worker is None else float(cpus_per_worker)
    else:
        spare = [c - 1 for c in node_cpus if c >= 2]
        if num_workers is None and cpus_per_worker is None and spare:
            num_workers, cpus = _fill_nodes(spare)
            return WorkerPlan(num_workers=num_workers, cpus=cpus, gpus=0.0, threads=max(1, int(cpus)), device=device)
        if num_workers is None:
            num_workers = max(1, len(spare))
        if cpus_per_worker is None:
            if not spare:
                raise ValueError(
                    f"the Ray cluster has {sum(node_cpus):g} CPU(s), too few to keep one per node for reading and "
                    "writing; pass cpus_per_worker= explicitly (a fraction such as 0.5 lets workers share a CPU)."
                )
            share = sum(spare) / num_workers
            if share >= 1:
                # whole CPUs, as many as lets every actor find a node: on nodes of different sizes (16 and 4 CPUs)
                # the share (9) fits the big node once and the small one never, so one actor ran the job and the
                # other waited for a node for good
                cpus = float(min(_whole(share), max(spare)))
                while cpus > 1 and sum(_whole(c / cpus) for c in spare) < num_workers:
                    cpus -= 1
            else:
                cpus = _whole(share * 100) / 100
        else:
            cpus = float(cpus_per_worker)
    return WorkerPlan(num_workers=int(num_workers), cpus=cpus, gpus=gpus, threads=max(1, int(cpus)), device=device)


FILLED = 0.85  # the part of the nodes' spare CPUs the default CPU actors use at least


def _fill_nodes(spare: list[float]) -> tuple[int, float]:
    """The default CPU pool on nodes with ``spare`` CPUs each: ``(actors, CPUs each)``. The biggest actor (fewest
    model copies) such that the actors that fit node by node use :data:`FILLED` of the spare CPUs: one actor per
    node on nodes of one size; on nodes of 16 and 4 CPUs six of 3 (one actor per node, 9 each, fitted the small node
    never, and two of 7 both went to the big node, the small one idle). A node too small to matter (16 and 2: one
    spare CPU of 16) is left to the reads rather than every actor cut to one CPU."""
    for cpus in range(max(1, _whole(max(spare))), 0, -1):
        fit = sum(_whole(s / cpus) for s in spare)
        if fit * cpus >= FILLED * sum(spare) or cpus == 1:
            return max(1, fit), float(cpus)


def _whole(x: float) -> int:
    """``floor(x)``, but a quotient a hair under a whole number (float error: 0.29 * 100 is 28.999...) counts as it."""
    return math.floor(x + 1e-9)


def worker_device(device, gpus_per_worker) -> str:
    """The device each actor uses: the GPU Ray gave it, or the CPU when it asked Ray for none."""
    if not isinstance(device, str):
        raise ValueError(f"device={device!r} is not valid: expected 'auto', 'cpu', 'cuda' or 'mps'.")
    from bertfeat.devices import device_type

    device_type(device)  # a spelling no worker runs on ('gpu', 'CUDA'), refused before Ray starts
    if gpus_per_worker:
        if _is_number(gpus_per_worker) and gpus_per_worker > 1:
            raise ValueError(
                f"gpus_per_worker={gpus_per_worker:g} is not supported: a worker runs one model on one GPU, so it "
                "would leave the others idle. Pass gpus_per_worker=1 (one worker per GPU) or a fraction such as 0.5 "
                "(workers sharing a GPU)."
            )
        if device not in ("auto", "cuda"):
            raise ValueError(
                f"device={device!r} does not go with gpus_per_worker={gpus_per_worker:g}: Ray gives each worker its "
                "GPU(s) and hides the others, so leave device='auto'."
            )
        return "cuda"
    if device.startswith("cuda"):
        raise ValueError(
            f"device={device!r} needs GPUs from Ray: pass gpus_per_worker=1, one GPU per worker."
        )
    return "cpu" if device == "auto" else device  # a worker that asked Ray for no GPU must not take one


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(x)


def _cluster_nodes(ray) -> tuple[list[float], list[float]]:
    alive = [n for n in ray.nodes() if n.get("Alive")]
    return ([float(n["Resources"].get("CPU", 0)) for n in alive], [float(n["Resources"].get("GPU", 0)) for n in alive])


# -- the actor -----------------------------------------------------------------------------------------------------


def _auto_dtype_of_a_gpu() -> str:
    """What ``dtype="auto"`` is on the GPU this Ray task runs on (:func:`bertfeat.gpu.auto_dtype`): the driver's
    answer for its GPU workers where it has no GPU of its own."""
    from bertfeat.devices import resolve_dtype

    return resolve_dtype("auto", "cuda")


class RayFeaturizer:
    """What each actor holds: one :class:`~bertfeat.arrow.ArrowFeaturizer`, called on every batch Ray sends it.

    Parameters
    ----------
    text_cols, keep_cols, layout, params
        As for :class:`~bertfeat.arrow.ArrowFeaturizer` (``params`` are BertEmbedder parameters).
    threads : int
        torch threads for this actor: Ray starts workers with one, whatever CPUs the actor reserved.
    gpu_share : float
        The fraction of a GPU Ray gave this actor: it sizes its batches for that share of the card's memory, not
        for what is free when it happens to look (another actor on the card may not have started yet).
    expected : dict, optional
        The driver's recipe (:func:`~bertfeat.worker_recipe.driver_recipe`): the actor refuses to start where its
        own differs (this node's copy of the model is another), before it embeds anything.
    auto_dtype : str, optional
        What the driver fixed ``dtype="auto"`` as for GPU workers (:func:`~bertfeat.worker_recipe.fix_auto_dtype`):
        an actor whose GPU would choose another refuses to start.
    collector : ray.actor.ActorHandle, optional
        A job's :class:`JobCounts` actor, told about this worker and the counts of every batch.
    """

    def __init__(self, text_cols, keep_cols, layout, threads, params, collector=None, gpu_share=0.0, expected=None,
                 auto_dtype=None):
        from bertfeat import gpu
        from bertfeat.arrow import ArrowFeaturizer
        from bertfeat.backend import set_threads

        self.collector = collector
        self.threads = set_threads(threads)
        if 0 < gpu_share < 1:
            gpu.set_memory_share(gpu_share)
        with self._reporting_mistakes():
            # before the model loads: a GPU that would run another dtype than the driver fixed "auto" as
            check_fixed_dtype(auto_dtype, params.get("device", "auto"), "Ray", "worker")
            self.featurizer = ArrowFeaturizer(text_cols, keep_cols, layout=layout, **params)
            # the driver's recipe, before any text is embedded: this node's copy of the model may be another
            check_worker_recipe(self.featurizer.recipe, expected, "a Ray worker")
            check_worker_tokenization(params, expected, "a Ray worker")  # this node's transformers and tokenizers
        self.truncation_warned = False
        self.machine_told = False
        if collector is not None:
            import ray

            # what decides its numbers beside the recipe: its dtype and its libraries (torch's arithmetic)
            info = {"host": socket.gethostname(), "pid": os.getpid(), "device": params.get("device", "auto"),
                    "threads": self.threads, "dtype": self.featurizer.recipe.dtype, "libraries": libraries()}
            ray.get(collector.add_worker.remote(info))

    @contextlib.contextmanager
    def _reporting_mistakes(self):
        """Hand a bad-input error to the job as raised: Ray passes on only its text, wrapped in its own errors."""
        try:
            yield
        except (ValueError, TypeError) as exc:
            if self.collector is not None:
                import ray

                ray.get(self.collector.add_mistake.remote(exc))
            raise

    @contextlib.contextmanager
    def _naming_the_row(self, table: pa.Table):
        """In a Dataset job, a bad text's "row i" is the i-th of the batch Ray sent: say so, with the row's kept
        columns (its id), since a Dataset numbers no rows. (A file job's driver names the input's row instead.)"""
        try:
            yield
        except (ValueError, TypeError) as exc:
            from bertfeat.arrow import reworded, row_named

            row = row_named(exc)
            if self.collector is not None or row is None or row >= table.num_rows:
                raise
            kept = ", ".join(f"{c}={table.column(c)[row].as_py()!r}" for c in self.featurizer.keep_cols)
            note = (f" (row {row} of the batch of {table.num_rows} rows Ray sent this worker, not of the Dataset, "
                    "which numbers no rows" + (f"; that row has {kept})" if kept else ")"))
            named = reworded(exc, f"{exc}{note}")
            if named is exc:
                raise
            raise named from None

    def __call__(self, table: pa.Table) -> pa.Table:
        job = self.collector is not None  # a file job: its manifest counts the forward passes
        before = forward_passes(self.featurizer.recipe) if job else {}
        with warnings.catch_warnings(record=True) as caught, self._reporting_mistakes(), self._naming_the_row(table):
            warnings.simplefilter("always", TruncationWarning)
            batch = self.featurizer(table)
        passes = passes_since(before, self.featurizer.recipe) if job else {}
        truncated = [w for w in caught if issubclass(w.category, TruncationWarning)]
        for w in caught:
            if job and issubclass(w.category, SlowDtypeWarning):  # said by the driver (a quiet job forwards no log)
                import ray

                ray.get(self.collector.add_note.remote(socket.gethostname(), str(w.message)))
            elif w not in truncated:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if truncated and not self.truncation_warned:
            # one warning per worker instead of one per batch; the job's manifest has the full count
            self.truncation_warned = True
            warnings.warn(f"{truncated[0].message} (warned once per Ray worker)", TruncationWarning, stacklevel=2)
        out = pa.Table.from_batches([batch])
        if self.collector is not None:
            import ray

            hashes = self.featurizer.text_hashes(table)
            # waited for, so that every distinct text is counted before the job reads the count (a set: a batch Ray
            # retries adds nothing to it)
            ray.get(self.collector.add_texts.remote(hashes))
            if out.num_rows and not self.machine_told:
                # after a batch: where the model ran, torch is loaded and its rates are measured, as the local
                # engine's manifest has them
                from bertfeat.hardware import run_facts

                facts = run_facts(*self.featurizer.product_shape())
                # told again after a batch answered from the cache (no torch, no rates) until the model has run
                self.machine_told = "matmul_gflops" in facts
                ray.get(self.collector.add_machine.remote(socket.gethostname(), facts))
            if out.num_rows:
                # the batch's counts travel with its first row to the file that row is written to, so a batch Ray
                # retries is counted once, as its rows are written once (see _ordered_parquet_sink); so do the
                # forward passes that ran it
                stats = json.dumps({**self.featurizer.embedder.stats_.to_dict(), "forward_pass": passes,
                                    "worker": [socket.gethostname(), os.getpid()]})
                out = out.append_column(pa.field(STATS_COL, pa.string()),
                                        pa.array([stats] + [None] * (out.num_rows - 1), pa.string()))
        return out


class JobCounts:
    """A job's distinct texts, workers and first mistake, kept by one small actor (no CPU reserved) that every worker
    reports to. The additive counts (rows embedded, cache hits, missing, ...) are not kept here: a batch Ray retries
    would report them twice; they travel with the written rows instead (:data:`STATS_COL`)."""

    def __init__(self):
        self.distinct = DistinctCounter()
        self.workers: list[dict] = []
        self.machines: dict[str, dict] = {}
        self.notes: dict[str, str] = {}
        self.mistake: Exception | None = None

    def add_worker(self, info: dict) -> None:
        self.workers.append(info)

    def add_machine(self, host: str, facts: dict) -> None:
        """The facts of a machine the workers ran on (the first worker there to report them having run the model:
        :func:`bertfeat.counts.keep_machine`)."""
        keep_machine(self.machines, host, facts)

    def add_note(self, host: str, message: str) -> None:
        """A worker's SlowDtypeWarning (:func:`bertfeat.counts.keep_note`), for the driver to say."""
        keep_note(self.notes, host, message)

    def notes_report(self) -> dict[str, str]:
        return self.notes

    def add_texts(self, hashes: np.ndarray) -> None:
        self.distinct.add(hashes)

    def add_mistake(self, exc: Exception) -> None:
        if self.mistake is None:
            self.mistake = exc

    def report(self) -> tuple[DistinctCounter, list[dict]]:
        return self.distinct, self.workers

    def machines_report(self) -> dict[str, dict]:
        return self.machines

    def first_mistake(self) -> Exception | None:
        return self.mistake


# -- the public API ------------------------------------------------------------------------------------------------


def embed_dataset(ds, text_col, keep_cols=(), *, num_workers=None, gpus_per_worker=0, cpus_per_worker=None,
                  batch_rows: int = 10_000, layout: str = "columns", _collector=None, **params):
    """Embed the text column(s) of a Ray Dataset: returns a Dataset of the kept columns followed by the features.

    Lazy, like every Ray Data transform: nothing runs until the result is consumed (``write_parquet``,
    ``iter_batches``, ``materialize``...). The columns, their names and types, and the schema metadata (key
    ``bertfeat``) are those of the single-machine ``bertfeat embed``. Rows keep their order only when the
    Dataset's ``DataContext`` has ``execution_options.preserve_order = True`` (on a Ray before 2.54, set it on the
    process's ``ray.data.DataContext.get_current()`` too: Rays to 2.4x write a Dataset on a copy of that one,
    docs/ray.md, "Versions").

    Where the process has no Ray yet, this starts it (``ray.init()`` with Ray's defaults, as Ray Data does when a
    Dataset first runs) and leaves it running, since the Dataset it returns runs on it later; stop it with
    ``ray.shutdown()`` when done. (:func:`embed_parquet`, which runs its job to the end, stops the Ray it started.)

    Parameters
    ----------
    ds : ray.data.Dataset
        Input with the text column(s) and any kept columns.
    text_col : str or list of str
        Text column(s) to embed (features of each, side by side).
    keep_cols : str or list of str
        Columns copied through unchanged, before the features (ids, labels).
    num_workers : int, optional
        Actors in the pool, each with its own model. Default: one per ``gpus_per_worker`` GPUs in the cluster
        (counted node by node: a share cannot span two nodes), or without GPUs one per node on nodes of one size,
        and on nodes of different sizes as many as fit node by node (16 and 4 CPUs: six of 3 CPUs).
    gpus_per_worker : float, default=0
        GPUs Ray gives each actor (1 = one actor per GPU; 0 = CPU only).
    cpus_per_worker : float, optional
        CPUs Ray reserves for each actor; its torch thread count is the whole part of it (at least 1). Default: 1
        with GPUs; without, the cluster's CPUs less one per node (for reading and writing), shared among the actors,
        and no more each than lets every actor find a node with that many to spare.
    batch_rows : int, default=10000
        Rows per call of the per-batch core (the unit of deduplication and of a cache lookup).
    layout : {"columns", "list"}
        One float32 column per feature, or one ``fixed_size_list<float32>`` column per text column.
    **params
        Any :class:`~bertfeat.BertEmbedder` parameter (model, pooling, layers, cache_dir, batch_tokens, ...). With
        ``cache_dir`` every actor reads and writes that cache, so a rerun skips the texts already embedded. On a
        cluster, ``model`` and ``cache_dir`` must be paths every node can read (a shared filesystem).

    Examples
    --------
    >>> import ray, bertfeat.ray
    >>> ds = ray.data.read_parquet("reviews/")  # doctest: +SKIP
    >>> feats = bertfeat.ray.embed_dataset(ds, "review", keep_cols="id", gpus_per_worker=1)  # doctest: +SKIP
    >>> feats.write_parquet("s3://bucket/features/")  # doctest: +SKIP
    """
    from bertfeat.arrow import ArrowFeaturizer

    refuse_local_options(params, "ray", reads="dataset")
    ray = require_ray()
    text_cols = [text_col] if isinstance(text_col, str) else list(text_col)
    keep_cols = [keep_cols] if isinstance(keep_cols, str) else list(keep_cols)
    if not _is_int(batch_rows) or batch_rows < 1:
        raise ValueError(f"batch_rows={batch_rows!r} is not valid: expected a positive number of rows.")
    if not ray.is_initialized():  # left running: the lazy result runs on it after this returns
        ray.init()
    plan = plan_workers(*_cluster_nodes(ray), num_workers, gpus_per_worker, cpus_per_worker,
                        params.get("device", "auto"))
    from bertfeat.devices import device_type

    # dtype="auto" fixed once for the workers' device: left to each, GPUs of two kinds ran two recipes
    # (a driver without a GPU asks one GPU of the cluster, so that a cluster of T4s runs float16 as before)
    params, gpu_guess = fix_auto_dtype(params, device_type(plan.device), ask=lambda: ray.get(
        ray.remote(num_gpus=min(plan.gpus, 1.0) or 1.0, num_cpus=0)(_auto_dtype_of_a_gpu).remote()))
    # checked here, before any actor starts: the parameters, the model, the feature names against kept columns,
    # and the columns when the schema is known without running anything
    checker = ArrowFeaturizer(text_cols, keep_cols, layout=layout, **{**params, "device": "cpu"})
    schema = _known_schema(ds)
    if schema is not None:
        checker.check_schema(schema)
    actor_params = absolute_paths({**params, "device": plan.device})
    return ds.select_columns(list(dict.fromkeys(keep_cols + text_cols))).map_batches(
        RayFeaturizer,
        fn_constructor_kwargs=dict(text_cols=text_cols, keep_cols=keep_cols, layout=layout, threads=plan.threads,
                                   params=actor_params, collector=_collector, gpu_share=plan.gpus,
                                   expected=driver_recipe(checker.recipe, checker.recipe.dtype, actor_params),
                                   auto_dtype=gpu_guess),
        batch_format="pyarrow",
        batch_size=batch_rows,
        compute=ray.data.ActorPoolStrategy(size=plan.num_workers),
        num_cpus=plan.cpus,
        num_gpus=plan.gpus,
    )


def _known_schema(ds) -> pa.Schema | None:
    try:
        schema = ds.schema(fetch_if_missing=False)
    except TypeError:  # Ray versions without fetch_if_missing
        return None
    base = getattr(schema, "base_schema", schema)
    return base if isinstance(base, pa.Schema) else None


def embed_parquet(input, out, text_col, *, keep_cols=(), layout: str = "columns", overwrite: bool = False,
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
    refuse_local_options(params, "ray", reads="parquet")
    ray = require_ray()
    t0 = time.perf_counter()
    text_cols = [text_col] if isinstance(text_col, str) else list(text_col)
    keep_cols = [keep_cols] if isinstance(keep_cols, str) else list(keep_cols)
    if not _is_int(batch_rows) or batch_rows < 1:
        raise ValueError(f"batch_rows={batch_rows!r} is not valid: expected a positive number of rows.")
    if STATS_COL in keep_cols + text_cols:  # it would be dropped with the counts, or make two columns of one name
        raise ValueError(f"column {STATS_COL!r} has the name the Ray engine carries each batch's counts in; rename "
                         "it, or use the local or Spark engine.")
    paths = _Paths.of(Path(output_path(out, "out", "the path of the folder to write",
                                     FOLDER_OUTPUT)))
    reader = InputReader(input, keep_cols + text_cols, batch_rows, text_cols, exclude=[paths.out, paths.partial])
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
    worker_device(params.get("device", "auto"), gpus_per_worker)
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
    shutil.rmtree(paths.partial, ignore_errors=True)
    manifest = {
        "output": str(paths.out),
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
        "cache_dir": None if user_cache is None else str(user_cache),
        "ray": {**asdict(plan), "files": len(files), "preserve_order": preserve_order, "workers": workers},
    }
    _atomic_write_bytes(paths.manifest, json.dumps(manifest, indent=2).encode())
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
                    writer = writer or pq.ParquetWriter(path, table.schema)
                    writer.write_table(table)
            finally:
                if writer is not None:
                    writer.close()
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


def _job_context(ds, preserve_order: bool, quiet: bool):
    """``ds`` with the job's order and progress options, set on its own ``DataContext``: the copy Ray took of the
    current one when ``ds`` was read (so the user's other settings reach the job), which the datasets made from it
    share. The process's ``DataContext.get_current()`` is every thread's: set there for the job's length, another
    thread's datasets made meanwhile ran with the job's order and without progress bars, and a setting that thread
    made during the job was put back when it ended; only a Ray before 2.54, which reads the process's as it runs a
    dataset, gets them there too (:class:`_process_settings`)."""
    ctx = ds.context
    ctx.execution_options.preserve_order = preserve_order
    if quiet:
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        # Ray 2.11 to 2.2x draw each operator's bar where this says so, whatever enable_progress_bars says
        ctx.execution_options.verbose_progress = False
    return ds


# Ray Data runs a dataset on the dataset's own DataContext from 2.54 on. Before, a write (through ``materialize``)
# ran on a fresh copy of the process's DataContext.get_current() (2.11 to 2.4x), and progress bars were decided by the
# process's as a dataset started (to 2.53): there the dataset's own context alone left a job's rows out of input order
# and a quiet job drawing its progress bars
RUNS_ON_ITS_OWN_CONTEXT = (2, 54)


def _runs_on_the_processes_context(ray) -> bool:
    from packaging.version import Version

    return Version(ray.__version__).release < RUNS_ON_ITS_OWN_CONTEXT


class _process_settings:
    """The process-wide settings a file job needs for its length: for a quiet job, Ray Data's logger (``ray.data``)
    at CRITICAL; on a Ray before 2.54 (``ray``, which runs a dataset on the process's ``DataContext``), the job's
    order and progress options there as :func:`_job_context` sets them on the dataset's own. Each is put back after
    unless another thread set it meanwhile: that thread's value stays (its datasets made meanwhile on such a Ray run
    with the job's, which no setting of the job's own context can avoid there)."""

    def __init__(self, quiet: bool, ray=None, preserve_order: bool = True):
        self.settings = []  # (get, set, the job's value)
        if quiet:
            log = logging.getLogger("ray.data")
            self.settings.append((lambda: log.level, log.setLevel, logging.CRITICAL))  # a failed job still raises
        if ray is not None and _runs_on_the_processes_context(ray):
            ctx = ray.data.DataContext.get_current()
            self._attribute(ctx.execution_options, "preserve_order", preserve_order)
            if quiet:
                for obj, name in ((ctx, "enable_progress_bars"), (ctx, "print_on_execution_start"),
                                  (ctx.execution_options, "verbose_progress")):
                    self._attribute(obj, name, False)

    def _attribute(self, obj, name: str, value) -> None:
        self.settings.append((lambda: getattr(obj, name), lambda v: setattr(obj, name, v), value))

    def __enter__(self):
        self.saved = [get() for get, _, _ in self.settings]
        for _, set_, value in self.settings:
            set_(value)
        return self

    def __exit__(self, *exc):
        for (get, set_, value), saved in zip(self.settings, self.saved):
            if get() == value:
                set_(saved)
        return False


# the file jobs of this process running on a Ray one of them started: the last of them to end stops it
_STARTED_RAY = StartedByJobs()
# the level of the "ray" logger before a job started Ray, and the one ray.init set it to
_RAY_LOG: dict[str, int] = {}


def _ray_for_job(ray, quiet: bool) -> bool:
    """Start Ray for a file job where the process has none, and count the job on a Ray a job started: True where
    :func:`_job_ended` must be called as it ends. A Ray the caller started is theirs: never counted, never stopped."""

    def find_or_start():
        if ray.is_initialized():
            return ray, False
        # ray.init sets the level of the "ray" logger (the process's) and leaves it after shutdown: a quiet job's
        # ERROR is put back as Ray stops (_job_ended), unless another thread set a level meanwhile
        level = logging.getLogger("ray").level
        ray.init(logging_level=logging.ERROR if quiet else logging.INFO, log_to_driver=not quiet)
        _RAY_LOG.update(level=level, set=logging.getLogger("ray").level)
        return ray, True

    return _STARTED_RAY.begin(find_or_start)[2]


def _job_ended(ray) -> None:
    """A job on a Ray a job started has ended: the last one stops it."""
    _STARTED_RAY.end(ray, _stop_ray)


def _stop_ray(ray) -> None:
    ray.shutdown()
    log = logging.getLogger("ray")
    if log.level == _RAY_LOG["set"]:
        log.setLevel(_RAY_LOG["level"])
