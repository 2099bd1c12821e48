"""What each Ray actor holds and reports to: :class:`RayFeaturizer`, one model per actor called on every batch Ray
sends it, and :class:`JobCounts`, the small actor of a file job that every worker tells its distinct texts, machine
and first mistake. A file job's additive counts travel with the written rows instead, in :data:`STATS_COL`."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import warnings

import numpy as np
import pyarrow as pa

from bertfeat.counts import driver_says, forward_passes, keep_machine, keep_note, passes_since
from bertfeat.exceptions import TruncationWarning
from bertfeat.files import DistinctCounter
from bertfeat.worker_recipe import check_fixed_dtype, check_worker_recipe, check_worker_tokenization, libraries

# a column the workers add to a file job's batches, with the batch's counts on its first row (null on the others);
# the sink takes it off before writing
STATS_COL = "__bertfeat_batch_stats__"


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
            from bertfeat.arrow import in_a_batch

            named = exc if self.collector is not None else in_a_batch(
                exc, table, self.featurizer.keep_cols, "Ray sent this worker", "Dataset")
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
            kind = driver_says(w.category) if job else None
            if kind is not None:  # a slow dtype, a read-only cache: said by the driver (a quiet job forwards no log)
                import ray

                ray.get(self.collector.add_note.remote(socket.gethostname(), str(w.message), kind))
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
                # retries is counted once, as its rows are written once (see ray_files._ordered_parquet_sink); so do
                # the forward passes that ran it
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
        self.notes: dict[tuple[str, str], str] = {}
        self.mistake: Exception | None = None

    def add_worker(self, info: dict) -> None:
        self.workers.append(info)

    def add_machine(self, host: str, facts: dict) -> None:
        """The facts of a machine the workers ran on (the first worker there to report them having run the model:
        :func:`bertfeat.counts.keep_machine`)."""
        keep_machine(self.machines, host, facts)

    def add_note(self, host: str, message: str, kind: str) -> None:
        """A worker's SlowDtypeWarning or CacheWarning (:func:`bertfeat.counts.keep_note`), for the driver to say."""
        keep_note(self.notes, host, message, kind)

    def notes_report(self) -> dict[tuple[str, str], str]:
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

