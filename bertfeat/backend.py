"""Loading and running the model: the torch and transformers code, with :mod:`bertfeat.devices` (which device and
dtype) and :mod:`bertfeat.model_files` (the tokenizer, config and checked weights it loads).

A :class:`TorchBackend` tokenizes texts (content tokens, no special tokens) and runs padded batches of token
sequences through the frozen model, returning pooled float32 blocks. Backends are shared by every caller in the process
and never pickled: the :data:`MODELS_KEPT` used last stay loaded, and any one an estimator in memory has used
(:func:`get_backend`). An out-of-memory error halves the batch and retries.

On CPU, BERT-architecture models run through :class:`_FastBert`, a forward pass over the same weights that fuses
bias, GELU and residual adds into oneDNN matrix multiplies, computes Q, K and V in one product, and stops at the
highest layer asked for. In float32 it matches the transformers forward pass within 1e-5 (measured 3.8e-6 on MiniLM); with
``dtype="bfloat16"`` the products run in bfloat16 while layer norms and the residual stream stay in float32.
Other architectures, and every GPU, use the transformers model itself, with the same design in low precision:
float32 weights under autocast (see :meth:`TorchBackend._numerics`). The fused pass lives in
:mod:`bertfeat.fastbert` and the CPU facts (allotted cores, threads, oneDNN knobs) in :mod:`bertfeat.hardware`.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import logging
import weakref
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from bertfeat.counts import count_own_pass
from bertfeat.devices import (
    _autocast_runs_on_cpu,
    _refuse_half_precision_autocast_will_not_run,
    _torch_lacks_dtype_on_cpu,
    device_key,
)
from bertfeat.devices import (  # noqa: F401 (re-exported)
    device_type,
    half_precision_refusal,
    resolve_device,
    resolve_dtype,
)
from bertfeat.fastbert import _FastBert, _onednn_linear_available, build_ladder  # noqa: F401 (re-exported)
from bertfeat.fork_safe import ForkSafeLock
from bertfeat.hardware import (  # noqa: F401 (re-exported)
    ONEDNN_CACHE_CAPACITY,
    _bound_onednn_cache,
    _cpu_workers,
    limit_threads_to_allotted_cores,
    allotted_cores,
    call_threads,
    set_threads,
    set_worker_threads,
    threads_shared_by,
)
from bertfeat.gpu import MAX_GPU_BATCH_TOKENS, MemoryCap, gpu_batch_tokens  # noqa: F401 (re-exported)
from bertfeat.model_files import (
    _checked_counts,
    _load_config,
    _quiet_transformers,
    _special_tokens_around,
    forget_tokenizers,
    load_checked_model,
    load_tokenizer,
)
from bertfeat.model_files import (  # noqa: F401 (re-exported)
    check_model_files,
    check_weights_finite,
    tokenizer_puts_token_first,
)
from bertfeat.models import ModelSpec, feed_forward_width
from bertfeat.recent import forget, keep_recent

log = logging.getLogger("bertfeat")

# Every loaded backend, while anything holds it: the models used last (_RECENT), an estimator that used one, a call
# running it. A registry of strong references kept every model a long-lived process ever used (a notebook trying
# models, an R session, a service whose model was retrained in place: 146 MB a MiniLM, for good).
_REGISTRY: "weakref.WeakValueDictionary[tuple, TorchBackend]" = weakref.WeakValueDictionary()
_LOCK = ForkSafeLock()
# Models kept loaded though no estimator holds them (R's bf_embed() and the command line make one per call): two used
# in turn load once each; a third replaces the one used least recently.
MODELS_KEPT = 2
_RECENT: list["TorchBackend"] = []  # least recently used first

# Batches run in this process, by model files, dtype and the arrangement that ran them (a rung of
# :func:`bertfeat.fastbert.build_ladder`, or ``transformers-<dtype>``): what a job's manifest records as its forward
# pass (:func:`forward_passes`). A count, not a flag, so a job can tell its own batches from an earlier job's.
_PASSES: dict[tuple, int] = {}
_PASSES_LOCK = ForkSafeLock()  # not _LOCK, which a model's load holds for seconds: every batch takes this one

# Padded tokens per forward pass. On CPU, per thread of a worker: a small budget keeps a layer's activations in
# cache (1024 tokens x 1536 floats = 6 MB for MiniLM's feed-forward) while the products stay large enough to run
# at the core's full rate; measured on MiniLM, 1024 tokens per thread took 7% less CPU time than 4096 and 24% less
# than 8192, and sorted lengths keep padding near 1%. On GPU large products are what fill the device;
# TorchBackend lowers this to fit free memory.
DEFAULT_BATCH_TOKENS = {"cpu": 1024, "cuda": MAX_GPU_BATCH_TOKENS, "mps": 16384}

# Texts tokenized and planned ahead per step when tokenization overlaps the model (GPU); see encode._run_model.
PREFETCH_CHUNK_TEXTS = 8192


def get_backend(spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool = False) -> "TorchBackend":
    """The process-wide backend for this model, device and dtype: loaded on first use, then reused.

    ``"cuda"`` is the GPU ``"cuda:N"`` it names, and ``"cpu:N"`` (``"mps:0"``) the one CPU (Apple GPU) torch has,
    so each device shares one copy of the model, whichever way it was spelled. The :data:`MODELS_KEPT` backends used
    last stay loaded; an older one goes once nothing else holds it (a :class:`~bertfeat.BertEmbedder` holds the one it
    used), and one loaded from a folder's earlier files goes when the folder's new files load.
    """
    device = device_key(device)
    # every file hash: a config or tokenizer edited in place must not reuse the model loaded from the old one
    key = (spec.path, spec.weights_sha256, spec.config_sha256, spec.tokenizer_sha256, device, dtype, trust_remote_code)
    with _LOCK:
        backend = _REGISTRY.get(key)
        if backend is None:
            _forget_replaced(key)
            backend = _REGISTRY[key] = TorchBackend(spec, device, dtype, trust_remote_code)
        _used(backend)
    return backend


def _used(backend: "TorchBackend") -> None:
    """Keep ``backend`` among the :data:`MODELS_KEPT` used last (holding ``_LOCK``)."""
    keep_recent(_RECENT, backend, MODELS_KEPT)


def _forget_replaced(key: tuple) -> None:
    """Drop the backends of the folder of ``key`` loaded from other files (holding ``_LOCK``): a model saved again
    over its folder. No estimator can use them again (one fitted on the old files is refused), so none are kept."""
    for old in [k for k in list(_REGISTRY.keys()) if k[0] == key[0] and k[4:] == key[4:] and k != key]:
        forget(_RECENT, _REGISTRY.pop(old, None))


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


def clear_backends() -> None:
    """Drop every loaded model and tokenizer (frees memory; the next transform loads again)."""
    with _LOCK:
        _REGISTRY.clear()
        _RECENT.clear()
    forget_tokenizers()


def _is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)):  # MemoryError: Python's own (numpy's copies)
        return True
    # MPS and some allocators raise a plain RuntimeError; torch's CPU allocator says "DefaultCPUAllocator: can't
    # allocate memory" (no "out of memory"), and read as a fault of the fast path it left the process on the slow one
    message = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in message or "can't allocate memory" in message)


class TorchBackend:
    """A frozen Hugging Face encoder and its tokenizer on one device, in one dtype.

    Attributes used by :func:`bertfeat.encode._run_model`: ``default_batch_tokens`` (token budget of one forward
    pass), ``prefetch`` (tokenize the next chunk in a background thread while the model runs; on for GPUs) and
    ``chunk_texts`` (texts per such chunk; 0 plans all texts at once).
    """

    def __init__(self, spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool = False):
        import torch

        self.spec = spec
        self.device = device
        self.dtype = dtype
        self.torch_dtype = getattr(torch, dtype)
        kind = torch.device(device).type
        if kind == "cpu":
            _bound_onednn_cache()
            limit_threads_to_allotted_cores()
        _refuse_half_precision_autocast_will_not_run(device, dtype)
        self.tokenizer, self.content_tokens = load_tokenizer(spec, trust_remote_code)
        with _quiet_transformers():
            config = _load_config(spec.path, trust_remote_code)
        self.config = config
        self.trust_remote_code = trust_remote_code
        fast = kind == "cpu" and _FastBert.supports(config)
        # Weights stay float32 on every path: a low dtype runs the products only, with embeddings, layer norms and
        # the residual stream in float32 (the fast CPU path by construction, the others under autocast), so a
        # recipe's dtype means one arithmetic on CPU and GPU alike.
        model = self._load_model(torch.float32)
        self.checked = _checked_counts(model, self.tokenizer)  # the weights check's counts (bertfeat info)
        self.ffn_width = feed_forward_width(spec.path, spec.hidden_size)  # the products' shape, for measured rates
        self.model = model.to(device)
        self.prefix, self.suffix = _special_tokens_around(self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self._first_token_sees_text = None  # found where a recipe first pools the CLS token (first_token_sees_text)
        self._check_model_runs()
        self.ladder = build_ladder(_FastBert, model, self.torch_dtype, self._probe_ids()) if fast else None
        self.fast = self.ladder.fast if self.ladder else None
        self.rung = self.ladder.rung if self.ladder else f"transformers-{dtype}"
        if self.fast is not None:
            # The fast path holds its own (packed) copies of the layer weights and shares the embeddings and norms:
            # dropping the transformers module frees the originals.
            self.model = None
        # A model whose real tokens see the padding beside them runs each length in a pass of its own, so that a
        # text's vector never depends on the texts batched with it (the fused pass masks padding by construction).
        self.one_length_per_pass = self.fast is None and self._padding_changes_outputs()
        if self.one_length_per_pass:  # said once per load: a slower way to run, and the reason for it
            log.warning("bertfeat: padding after a text changes its tokens' hidden states in %s (%s), so each length "
                        "in a batch runs in a pass of its own: the same vectors, more passes",
                        spec.name, getattr(config, "model_type", "?"))
        if kind == "cpu" and dtype != "float32":
            self._check_reduced_precision()
        self._fallback_lock = ForkSafeLock()
        # Batches in flight at once. On CPU each worker runs its own batch on its share of the cores, so small ops
        # (layer norm, attention) never wait on each other's threads and a core taken by another process delays
        # one batch, not every operation. On GPU a second worker pads and launches the next batch while the
        # current one's results come back. None on CPU: from the calling thread's count at each call (workers_now).
        self.workers = None if kind == "cpu" else 2 if kind == "cuda" else 1
        self.default_batch_tokens = DEFAULT_BATCH_TOKENS.get(kind, 8192)
        self.prefetch = kind == "cuda"
        self.chunk_texts = PREFETCH_CHUNK_TEXTS if self.prefetch else 0
        self.memory_cap = MemoryCap()  # learned from out-of-memory errors, recovers after successful batches

    def workers_now(self) -> int:
        """Batches in flight at once for a call from this thread: ``workers`` where set; on CPU (None) one per torch
        thread of the calling thread up to 4 (:func:`bertfeat.hardware._cpu_workers`), read at each call, so that a
        count set after the load (in a forked child, in a thread of its own) is the one the call runs on."""
        return self.workers if self.workers is not None else _cpu_workers(call_threads())

    @property
    def default_batch_tokens(self) -> int:
        """Token budget of one forward pass. On GPU, what fits now in this process's share of the card's memory
        (free, plus what torch holds unused), sampled again at every call rather than once at load; on CPU, the
        budget per thread times each worker's threads at this call."""
        if self.device.startswith("cuda"):
            from bertfeat import gpu

            element_size = 4 if self.dtype == "float32" else 2
            return gpu.gpu_batch_tokens(gpu.usable_bytes(self.device, gpu.memory_share()), self.config, element_size,
                                        in_flight=self.workers)
        if self.device.startswith("cpu"):
            return self._default_batch_tokens * max(1, call_threads() // self.workers_now())
        return self._default_batch_tokens

    @default_batch_tokens.setter
    def default_batch_tokens(self, value: int) -> None:
        self._default_batch_tokens = value

    def _load_model(self, load_dtype):
        """The transformers model in ``load_dtype`` (SDPA attention where the architecture has it), frozen, refused
        if its weights do not fit its config or tokenizer (:func:`load_checked_model`); in a low dtype, its layer
        norms take float32 (:func:`_norms_in_float32`)."""
        import torch

        with _quiet_transformers():
            model = load_checked_model(self.spec, load_dtype, self.tokenizer, self.trust_remote_code)
        if getattr(model, "attention_type", None) == "block_sparse" and hasattr(model, "set_attention_type"):
            # BigBird's block-sparse attention pads a batch to a multiple of its block and sees that padding (a
            # text's vector would depend on its batch), and keeps it in the hidden states below the last. transformers
            # takes full attention itself, for good, at the first input too short for blocks; here from the start.
            model.set_attention_type("original_full")
        if self.torch_dtype != torch.float32:
            _norms_in_float32(model)
        return model.eval().requires_grad_(False)

    def _check_reduced_precision(self) -> None:
        """bfloat16 / float16 on CPU: run it once (a CPU that cannot is told so in one line, never a raw crash) and
        warn, with the measured rates, when it is slower than float32 here. The dtype is never switched."""
        if self.fast is None:  # the transformers forward pass in this dtype is the bottom rung: prove it runs
            self._check_dtype_runs(self.model)
        self._warn_if_slow()

    def _check_dtype_runs(self, model) -> None:
        """Run the transformers ``model`` once in this dtype: a CPU that cannot is told so in one line, and a torch
        that has no such kernels on CPU (float16 before the releases that added it) is named as the cause."""
        import torch

        from bertfeat.hardware import cpu_flags, cpu_model

        ids, mask = self._pad(self._probe_content())
        try:
            with torch.inference_mode(), self._numerics():
                model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
        except RuntimeError as exc:
            if _is_oom(exc):  # no memory for the trial: the machine's state, not the dtype's fault
                raise
            first = str(exc).splitlines()[0]
            if _torch_lacks_dtype_on_cpu(first, self.dtype):
                other = "'bfloat16' or 'float32'" if self.dtype == "float16" else "'float32'"
                raise ValueError(
                    f"dtype={self.dtype!r} cannot run on CPU with torch {torch.__version__}, which has no "
                    f"{self.dtype} {'autocast' if 'Autocast' in first else 'kernels'} there ({first}); the CPU is not "
                    f"the cause. Pass dtype={other}, or install a newer torch."
                ) from None
            if _autocast_runs_on_cpu(self.torch_dtype):  # this CPU runs the dtype: the model's own code fails in it
                raise ValueError(
                    f"dtype={self.dtype!r} cannot run model={self.spec.name!r} "
                    f"({getattr(self.config, 'model_type', '?')}): transformers' forward pass of it fails under "
                    f"{self.dtype} autocast ({first}). This CPU runs {self.dtype} products; the model's code is the "
                    "cause, and fails so on a GPU too. Pass dtype='float32'."
                ) from None
            raise ValueError(
                f"dtype={self.dtype!r} cannot run on this CPU ({cpu_model()}; instruction sets: "
                f"{', '.join(cpu_flags()) or 'none reported'}): {first}. "
                "Pass dtype='float32', the fast mode here."
            ) from None

    def _warn_if_slow(self) -> None:
        """A :class:`~bertfeat.exceptions.SlowDtypeWarning`, with the measured rates, where this dtype is slower
        than float32 here."""
        import warnings

        from bertfeat.exceptions import SlowDtypeWarning, user_stacklevel
        from bertfeat.hardware import dtype_rates, slow_dtype_message

        rates = dtype_rates(self.spec.hidden_size, self.ffn_width, ("float32", self.dtype))
        message = slow_dtype_message(self.dtype, rates)
        if message:
            warnings.warn(message, SlowDtypeWarning, stacklevel=user_stacklevel())

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Content token ids of each text: no special tokens, no truncation (:mod:`bertfeat.tokens`)."""
        return self.content_tokens(texts)

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

    def _check_model_runs(self) -> None:
        """Refuse, saying why, a transformers model that fails on a short probe text (a config transformers cannot
        run: MPNet with fewer than 32 relative-position buckets, BERT with no token type, RoBERTa with no
        pad_token_id), or whose forward pass gives other than the embeddings and one hidden state per layer, each
        of one vector per token: bertfeat reads hidden state k as layer k, and pools it with a mask per token."""
        import torch

        from bertfeat.exceptions import ModelNotAvailableError

        ids = torch.tensor([self._probe_ids()[0]], device=self.device)
        try:
            with torch.inference_mode():
                states = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
        except (RuntimeError, IndexError, TypeError, ValueError) as exc:
            if _is_oom(exc):
                raise
            raise ModelNotAvailableError(
                f"model={self.spec.name!r}: transformers' forward pass of this model fails on a short probe text "
                f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}), so no text can be "
                "embedded with it: its config.json asks for what transformers cannot run with these weights (check it "
                "against the config the model was trained with), or the model needs more than text as input."
            ) from exc
        tokens = ids.shape[1]
        lengths = sorted({int(h.shape[1]) for h in (*states.hidden_states, states.last_hidden_state)})
        if lengths != [tokens]:
            raise ModelNotAvailableError(
                f"model={self.spec.name!r} ({getattr(self.config, 'model_type', '?')}) gives hidden states of "
                f"{', '.join(map(str, lengths))} positions for a probe of {tokens} tokens, so they do not hold one "
                "vector per token of the text (its layers change the sequence's length: a Funnel Transformer and "
                "CANINE shorten it, a Reformer pads it to its attention chunks): bertfeat's pooling (a mask per token) "
                "and layers= cannot read them. bertfeat embeds with encoders that keep one state per token in every "
                "layer."
            )
        want = self.spec.num_layers + 1
        if len(states.hidden_states) != want:
            raise ModelNotAvailableError(
                f"model={self.spec.name!r} gives {len(states.hidden_states)} hidden states for num_hidden_layers="
                f"{self.spec.num_layers} ({want} expected: the embeddings and one per layer), so bertfeat cannot tell "
                "which is layer k (an ALBERT with inner_group_num > 1 gives one per inner layer). bertfeat embeds "
                "with models that give one hidden state per layer."
            )

    @property
    def first_token_sees_text(self) -> bool:
        """Whether the model's first token sees the text after it: False for a causal decoder, whose CLS pooling
        :func:`bertfeat.encode.check_cls_pooling` refuses (every text would get one CLS vector). Found once, where a
        recipe first pools the CLS token, not at every load (two forward passes most recipes never need): True for
        a model the fused CPU pass runs, a bidirectional encoder by construction
        (:func:`bertfeat.architectures.supports`), else probed (:meth:`_first_token_probed`)."""
        if self._first_token_sees_text is None:
            self._first_token_sees_text = self.fast is not None or self._first_token_probed()
        return self._first_token_sees_text

    def _first_token_probed(self) -> bool:
        """Whether the first token's last state differs between two probes that share it and differ in every token
        after it (to float32's rounding): where it does not, it attends to no token after it (a causal decoder). Cut
        to a tiny max_length the probes may be one sequence, which tells nothing."""
        import torch

        probes = [torch.tensor([ids], device=self.device) for ids in self._first_token_probes()]
        with torch.inference_mode():
            states, other = (self.model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
                             for ids in probes)
        first, again = states.last_hidden_state[0, 0].float(), other.last_hidden_state[0, 0].float()
        return torch.equal(*probes) or bool((first - again).abs().max() > 1e-5 * max(1.0, float(first.abs().max())))

    def _padding_changes_outputs(self) -> bool:
        """Whether padding after a sequence changes its real tokens' hidden states in the transformers model, as
        ConvBERT's span convolutions and YOSO's hashed attention let it: the short probe alone against the short
        probe padded to the long one's length, every layer, in float32, to the fast path's load-time bound."""
        import torch

        short, long = self._probe_ids()
        if len(short) >= len(long):
            short, long = long, short
        n = len(short)
        ids = torch.tensor([short + [self.pad_id] * (len(long) - n)], device=self.device)
        mask = torch.ones_like(ids)
        mask[0, n:] = 0
        held = contextlib.ExitStack()
        if self.device.startswith("cuda"):
            from bertfeat import gpu

            held.enter_context(gpu.held_flag("ieee_float32").held())
        with held, torch.inference_mode():
            alone = self.model(input_ids=ids[:, :n], attention_mask=mask[:, :n], output_hidden_states=True)
            padded = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        return not all(torch.allclose(a[0], p[0, :n], atol=1e-4, rtol=1e-4)
                       for a, p in zip(alone.hidden_states, padded.hidden_states))

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
                    failure = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
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

    def _probe_ids(self) -> list[list[int]]:
        """Two real token sequences of different lengths, to check the fast path against the model."""
        return [self.prefix + w + self.suffix for w in self._probe_content()]

    def _first_token_probes(self) -> list[list[int]]:
        """The longer probe, and another text cut to its length: one length, the same first (special) token, other
        tokens after it (neither reversed nor reordered: a tiny DeBERTa-v2, whose positions are relative, or a model
        without positions, gives its first token nearly the same state for the same tokens in another order)."""
        content = self._probe_content()[1]
        other = self.tokenize(["zebras quietly jumped over seven wooden fences yesterday; nobody saw them again"])[0]
        n = min(len(content), len(other))
        return [self.prefix + words[:n] + self.suffix for words in (content, other)]

    def _probe_content(self) -> list[list[int]]:
        """The probes' content tokens, cut to fit the model: a fine-grained tokenizer makes the longer one some 40
        tokens, more than a small model's position table holds."""
        words = self.tokenize(["a short probe", "a somewhat longer probe sentence, with punctuation and numbers 42"])
        room = max(1, self.spec.max_length - self.n_special)
        return [w[:room] for w in words]


def _norms_in_float32(model) -> None:
    """Give every layer norm of ``model`` its input in float32, so that under autocast the residual stream stays
    float32 after each norm on every device, as the fused CPU pass keeps it.

    CUDA's autocast runs a layer norm in float32; CPU's runs it in its input's dtype. A model whose embeddings a
    product projects to the hidden size (ALBERT, ELECTRA-small, ConvBERT-small, a DeBERTa-v2 with an
    ``embedding_size``: a half-precision state into the first layer norm) then kept every layer's state in half
    precision on CPU, rounded at each layer (0.05-0.18 off float32 on ALBERT and ELECTRA test models, against 0.002
    for the families whose stream stays float32), a text's vector moving by a half-precision step of its values with
    the texts batched beside it, and not the arithmetic its GPU runs for the same recipe
    (:data:`bertfeat.recipe.LOW_PRECISION_MODEL_FORMATS` keys those recipes anew).
    """
    import torch

    def to_float32(module, args):
        return (args[0].float(), *args[1:])

    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.register_forward_pre_hook(to_float32)


def _as_token_seqs(units):
    from bertfeat.batching import TokenSeqs

    return units if isinstance(units, TokenSeqs) else TokenSeqs.from_lists(units)


