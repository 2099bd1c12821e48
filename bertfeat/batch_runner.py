"""Running batches through a loaded model: :class:`BatchRunner`, the part of
:class:`~bertfeat.backend.TorchBackend` that pads token sequences, runs them on the fused CPU pass or the
transformers model in the recipe's arithmetic, pools them, halves a batch that runs out of memory, leaves a fused
pass that fails on a real batch, runs several batches at once, and counts each pass by the arrangement that ran it
(:func:`forward_passes`, a job's manifest's forward pass)."""

from __future__ import annotations

import contextlib
import contextvars
import gc
import logging
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from bertfeat.counts import count_own_pass
from bertfeat.fork_safe import ForkSafeLock
from bertfeat.hardware import limit_threads_to_allotted_cores, set_worker_threads, threads_shared_by
from bertfeat.models import ModelSpec

log = logging.getLogger("bertfeat")

# Batches run in this process, by model files, dtype and the arrangement that ran them (a rung of
# :func:`bertfeat.fastbert.build_ladder`, or ``transformers-<dtype>``): what a job's manifest records as its forward
# pass (:func:`forward_passes`). A count, not a flag, so a job can tell its own batches from an earlier job's.
_PASSES: dict[tuple, int] = {}
# not bertfeat.backend's _LOCK, which a model's load holds for seconds: every batch takes this one
_PASSES_LOCK = ForkSafeLock()


def forward_passes(weights_sha256: str, config_sha256: str, tokenizer_sha256: str, dtype: str) -> dict[str, int]:
    """How many passes of this model and dtype each arrangement of the forward pass has run in this process (one per
    batch; more where a batch was split, in halves for memory or by length for a model that sees its padding):
    ``{"onednn-float32": 12}``; a fallback after a failed batch shows as a second entry. Subtract a count taken
    before a job to get the job's own."""
    model = (weights_sha256, config_sha256, tokenizer_sha256, dtype)
    with _PASSES_LOCK:
        return {key[-1]: n for key, n in _PASSES.items() if key[:-1] == model}


def _count_pass(spec: ModelSpec, dtype: str, rung: str) -> None:
    model = (spec.weights_sha256, spec.config_sha256, spec.tokenizer_sha256, dtype)
    with _PASSES_LOCK:
        _PASSES[(*model, rung)] = _PASSES.get((*model, rung), 0) + 1
    count_own_pass(model, rung)  # the calls counting their own: a job's manifest


def _is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)):  # MemoryError: Python's own (numpy's copies)
        return True
    # MPS and some allocators raise a plain RuntimeError; torch's CPU allocator says "DefaultCPUAllocator: can't
    # allocate memory" (no "out of memory"), and read as a fault of the fast path it left the process on the slow one
    message = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in message or "can't allocate memory" in message)


class BatchRunner:
    """How a :class:`~bertfeat.backend.TorchBackend` runs batches: its :meth:`forward` and :meth:`forward_batches`.

    It runs on what the backend's load set: ``spec``, ``device``, ``dtype`` and ``torch_dtype``, the transformers
    ``model`` (None while the fused pass runs), ``fast`` and ``rung`` (the fused pass and its rung, or None),
    ``prefix``, ``suffix`` and ``pad_id``, ``one_length_per_pass``, ``memory_cap``, ``_fallback_lock``, and
    ``workers_now()``; leaving the fused pass, it loads the transformers model again (``_load_model``) and checks
    it as the load does (:class:`~bertfeat.load_checks.LoadChecks`).
    """

    def forward_batches(self, batches: Iterable[Sequence[Sequence[int]]], pooling: Sequence[str],
                        layer_groups, skip: int = 0) -> Iterator[np.ndarray]:
        """:meth:`forward` over each batch, yielded in order, with up to :meth:`workers_now` batches running at once.

        On CPU the workers share the cores torch is using in the calling thread, lowered first to the cores the
        process may use where it is more (as the load does the loading thread's: a thread that used torch before a
        load in another thread kept torch's count for the host's cores under a CPU quota). Each worker sets
        ``threads // workers`` of them for itself; the caller's count, and the count new threads start with, are
        left as they were. Results do not depend on the number of workers.
        """
        if self.device.startswith("cpu"):
            limit_threads_to_allotted_cores()
        workers = self.workers_now()
        if workers <= 1:
            for units in batches:
                yield self.forward(units, pooling, layer_groups, skip)
            return
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        with self._threads_per_worker(workers) as threads, ThreadPoolExecutor(
            workers, thread_name_prefix="bertfeat", initializer=set_worker_threads, initargs=threads
        ) as pool:
            pending: deque = deque()
            try:
                for units in batches:
                    while len(pending) >= self._queue_limit(workers):
                        yield pending.popleft().result()
                    # in a copy of the caller's context: a job counting its own passes (counts.own_passes) sees them
                    pending.append(pool.submit(contextvars.copy_context().run, self.forward, units, pooling,
                                               layer_groups, skip))
                while pending:
                    yield pending.popleft().result()
            finally:
                for future in pending:
                    future.cancel()

    def _queue_limit(self, workers: int) -> int:
        """Batches submitted and not yet collected: one per worker plus one queued, or a single one while an
        out-of-memory cap holds (the batch beside it may be what ran out)."""
        return 1 if self.memory_cap.capped else workers + 1

    @contextlib.contextmanager
    def _threads_per_worker(self, workers: int):
        """Yield ``(share, threads)``: the torch threads each worker thread sets for itself, a share of the caller's
        on CPU (:func:`bertfeat.hardware.threads_shared_by`), and the count new threads keep; None, None elsewhere."""
        if not self.device.startswith("cpu"):
            yield None, None
            return
        with threads_shared_by(workers) as threads:
            yield threads

    def forward(self, units: Sequence[Sequence[int]], pooling: Sequence[str], layer_groups,
                skip: int = 0) -> np.ndarray:
        """Pool a batch of content-token sequences: returns (len(units), n_blocks, hidden) float32. ``skip``: the
        first positions left out of mean and max pooling (:func:`bertfeat.pooling.pool_blocks`).

        On an out-of-memory error the batch is halved and retried, down to one sequence, so no row is lost; later
        batches are split to the size that fitted (:class:`~bertfeat.gpu.MemoryCap`) until enough batches have
        succeeded to try larger ones again.
        """
        units = _as_token_seqs(units)
        rows = len(units)
        if self.one_length_per_pass and rows > 1 and units.length.min() != units.length.max():
            return self._by_length(units, pooling, layer_groups, skip)
        padded = rows * (int(units.length.max()) + self.n_special) if rows else 0
        if rows > 1 and not self.memory_cap.fits(padded):
            return self._halves(units, pooling, layer_groups, skip)
        try:
            result = self._forward(units, pooling, layer_groups, skip)
        except (RuntimeError, MemoryError) as exc:  # torch.cuda.OutOfMemoryError included
            if not _is_oom(exc) or rows == 1:
                raise
            # retried below, after this block: inside it the traceback keeps the failed batch's tensors alive, so
            # emptying the cache would free nothing and the halves would run beside the dead batch
        else:
            self.memory_cap.succeeded()
            return result
        self.memory_cap.failed(padded, rows)
        self._release_memory()
        return self._halves(units, pooling, layer_groups, skip)

    def _release_memory(self) -> None:
        """Free what a failed batch left: its tensors (cycles included), then the allocator's cached blocks."""
        gc.collect()
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()
        elif self.device.startswith("mps"):
            import torch

            torch.mps.empty_cache()

    def _by_length(self, units, pooling, layer_groups, skip: int = 0) -> np.ndarray:
        """:meth:`forward` of each length in the batch alone, so that no sequence is padded, in the batch's order."""
        out = None
        for n in np.unique(units.length):
            rows = np.flatnonzero(units.length == n)
            part = self.forward(units[rows], pooling, layer_groups, skip)
            if out is None:
                out = np.empty((len(units), *part.shape[1:]), dtype=part.dtype)
            out[rows] = part
        return out

    def _halves(self, units, pooling, layer_groups, skip: int = 0) -> np.ndarray:
        half = len(units) // 2
        return np.concatenate([
            self.forward(units[:half], pooling, layer_groups, skip),
            self.forward(units[half:], pooling, layer_groups, skip),
        ])

    def _forward(self, units, pooling, layer_groups, skip: int = 0, trial=None) -> np.ndarray:
        """One pass of ``units``: on the fast path where there is one, else on the transformers model (``trial``, a
        transformers model not yet this backend's, runs the pass instead of either)."""
        import torch

        from bertfeat.pooling import pool_blocks

        ids, mask = self._pad(units)
        on_gpu = self.device.startswith("cuda")
        input_ids = torch.from_numpy(ids)
        attention = torch.from_numpy(mask)
        if on_gpu:
            input_ids, attention = input_ids.pin_memory(), attention.pin_memory()
        input_ids = input_ids.to(self.device, non_blocking=on_gpu)
        attention = attention.to(self.device, non_blocking=on_gpu)
        needed = sorted({layer for group in layer_groups for layer in group})
        fast = self.fast if trial is None else None  # read once: another worker may leave the fast path meanwhile
        model = self.model if trial is None else trial
        with torch.inference_mode(), self._numerics(fast):
            failure = None
            if fast is not None:
                try:
                    hidden = fast(input_ids, attention, needed)
                except RuntimeError as exc:
                    if _is_oom(exc):
                        raise
                    said = str(exc).strip().splitlines()
                    failure = type(exc).__name__ + (f": {said[0][:200]}" if said else "")  # the warning's words
            elif needed == [self.spec.num_layers]:
                out = model(input_ids=input_ids, attention_mask=attention)
                hidden = {self.spec.num_layers: out.last_hidden_state}
            else:
                out = model(input_ids=input_ids, attention_mask=attention, output_hidden_states=True)
                # the last layer is the model's output, as when it is asked for alone: a model may give the state
                # before a final norm as its last hidden state (ModernBERT with tie_last_hidden_states=False)
                hidden = (*out.hidden_states[:-1], out.last_hidden_state)
            if failure is None:
                pooled = pool_blocks(hidden, attention, pooling, layer_groups, skip)
        if failure is not None:  # outside the except block, so the failed batch's tensors are gone
            return self._leave_fast_path(fast, failure, units, pooling, layer_groups, skip)
        _count_pass(self.spec, self.dtype, (getattr(fast, "rung", "") or self.rung) if fast is not None
                    else f"transformers-{self.dtype}")
        return pooled.cpu().numpy()

    def _numerics(self, fast=None):
        """The arithmetic of a transformers forward pass (the fast CPU path sets its own).

        A low dtype runs as autocast over the float32 weights: products and attention in that dtype, embeddings,
        layer norms and the residual stream in float32, the design of the fast CPU path, so that one recipe means
        one arithmetic on every device. On GPU, half precision keeps the flash and cuDNN attention kernels off, so
        padded and unpadded batches run the same kernel; float32 turns TF32 off while it runs, so a user's TF32
        setting cannot make it inexact.
        """
        import torch

        from bertfeat import gpu

        on_gpu = self.device.startswith("cuda")
        stack = contextlib.ExitStack()
        if fast is not None:
            return stack
        if self.torch_dtype == torch.float32:
            if on_gpu:
                stack.enter_context(gpu.held_flag("ieee_float32").held())
            return stack
        stack.enter_context(torch.autocast(torch.device(self.device).type, dtype=self.torch_dtype))
        if on_gpu:
            stack.enter_context(gpu.held_flag("no_flash_attention").held())
        return stack

    def _leave_fast_path(self, fast, failure: str, units, pooling, layer_groups, skip: int = 0) -> np.ndarray:
        """The fast path failed on a real batch after passing its load-time check: run the batch on the transformers
        forward pass, and if that succeeds, stay on it for the rest of this backend's life (once). If the batch fails
        there too, the fault was the batch's, not the fast path's: its error is raised and the fast path kept, so a
        bad batch does not cost every later call the fast path. If the transformers pass has no memory for the batch,
        that shows no fault of the batch: the backend stays on it, and :meth:`forward` halves the batch there (thrown
        away, the model was loaded again for each half the fast path failed). No row is lost or repeated."""
        import torch

        with self._fallback_lock:
            if self.fast is not fast:  # another worker thread already fell back
                trial = None
            else:
                trial = self._load_model(torch.float32).to(self.device)  # low dtypes: autocast
                if self.torch_dtype != torch.float32:
                    self._check_dtype_runs(trial)
                try:
                    result = self._forward(units, pooling, layer_groups, skip, trial=trial)
                except (RuntimeError, MemoryError) as exc:
                    if not _is_oom(exc):
                        raise  # the batch's fault: the fast path is kept
                    self._stay_on(trial, failure, "that the transformers forward pass has no memory for at once")
                    raise
                self._stay_on(trial, failure, "that the transformers forward pass runs")
        return self._forward(units, pooling, layer_groups, skip) if trial is None else result

    def _stay_on(self, model, failure: str, how: str) -> None:
        """Leave the fast path for the transformers forward pass of ``model``, for the rest of this backend's life."""
        import torch

        log.warning("bertfeat: the fast CPU path (%s) failed on a batch (%s) %s; using that from now on", self.rung,
                    failure, how)
        self.model, self.fast, self.rung = model, None, f"transformers-{self.dtype}"
        if self.torch_dtype != torch.float32:
            self._warn_if_slow()

    def _pad(self, units) -> tuple[np.ndarray, np.ndarray]:
        """``[prefix] + units + [suffix]``, right-padded to the longest: int64 ids and attention mask."""
        from bertfeat.batching import pad_batch

        return pad_batch(_as_token_seqs(units), self.prefix, self.suffix, self.pad_id)


def _as_token_seqs(units):
    from bertfeat.batching import TokenSeqs

    return units if isinstance(units, TokenSeqs) else TokenSeqs.from_lists(units)
