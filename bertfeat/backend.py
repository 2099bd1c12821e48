"""Loading and running the model: the only module that touches torch and transformers.

A :class:`TorchBackend` tokenizes texts (content tokens, no special tokens) and runs padded batches of token
sequences through the frozen model, returning pooled float32 blocks. Backends are cached once per process and never
pickled. Device and dtype are resolved here; an out-of-memory error halves the batch and retries.

On CPU, BERT, RoBERTa / XLM-RoBERTa / CamemBERT, DistilBERT and MPNet models run through :class:`_FastBert`, a
forward pass over the same weights that fuses bias, GELU and residual adds into oneDNN matrix multiplies, computes
Q, K and V in one product, and stops at the highest layer asked for. In float32 it matches the transformers forward pass within 1e-5 (measured 3.8e-6 on MiniLM); with
``dtype="bfloat16"`` the products run in bfloat16 while layer norms and the residual stream stay in float32.
Other architectures, and every GPU, use the transformers model itself. The fused pass lives in
:mod:`bertfeat.fastbert` and the CPU facts (allotted cores, threads, oneDNN knobs) in :mod:`bertfeat.hardware`.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from bertfeat.fastbert import _FastBert, _onednn_linear_available  # noqa: F401 (re-exported)
from bertfeat.hardware import (  # noqa: F401 (re-exported)
    ONEDNN_CACHE_CAPACITY,
    _bound_onednn_cache,
    _cpu_workers,
    _limit_threads_to_allotted_cores,
    allotted_cores,
    set_threads,
)
from bertfeat.models import ModelSpec

_REGISTRY: dict[tuple, "TorchBackend"] = {}
_LOCK = threading.Lock()

# Padded tokens per forward pass. On CPU, per thread of a worker: a small budget keeps a layer's activations in
# cache (1024 tokens x 1536 floats = 6 MB for MiniLM's feed-forward) while the products stay large enough to run
# at the core's full rate; measured on MiniLM, 1024 tokens per thread took 7% less CPU time than 4096 and 24% less
# than 8192, and sorted lengths keep padding near 1%. On GPU large products are what fill the device;
# TorchBackend lowers this to fit free memory.
DEFAULT_BATCH_TOKENS = {"cpu": 1024, "cuda": 32768, "mps": 16384}

# Texts tokenized and planned ahead per step when tokenization overlaps the model (GPU); see encode._run_model.
PREFETCH_CHUNK_TEXTS = 8192


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` if available, then ``"mps"``, then ``"cpu"``; anything else is checked and returned."""
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if not isinstance(device, str):
        raise ValueError(f"device={device!r} is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'.")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'.") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was asked for, but torch sees no CUDA GPU here; pass device='cpu' or 'auto'.")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device={device!r} was asked for, but MPS is not available here; pass device='cpu' or 'auto'.")
    return device


def resolve_dtype(dtype: str, device: str) -> str:
    """``"auto"`` -> bfloat16 (or float16 where bf16 is unsupported) on GPU, float32 on CPU."""
    if dtype != "auto":
        return dtype
    if device.startswith("cuda"):
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if device.startswith("mps"):
        return "float16"
    return "float32"


def get_backend(spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool = False) -> "TorchBackend":
    """The process-wide backend for this model, device and dtype: loaded on first use, then reused."""
    key = (spec.path, spec.weights_sha256, device, dtype, trust_remote_code)
    with _LOCK:
        backend = _REGISTRY.get(key)
        if backend is None:
            backend = _REGISTRY[key] = TorchBackend(spec, device, dtype, trust_remote_code)
    return backend


def clear_backends() -> None:
    """Drop every loaded model (frees memory; the next transform loads again)."""
    with _LOCK:
        _REGISTRY.clear()


@contextlib.contextmanager
def _quiet_transformers():
    """Silence transformers' load-time progress bars and info logs, restoring the user's settings after."""
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    level = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bar:
            hf_logging.enable_progress_bar()


def _is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    # MPS and some allocators raise a plain RuntimeError
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


class TorchBackend:
    """A frozen Hugging Face encoder and its tokenizer on one device, in one dtype.

    Attributes used by :func:`bertfeat.encode._run_model`: ``default_batch_tokens`` (token budget of one forward
    pass), ``prefetch`` (tokenize the next chunk in a background thread while the model runs; on for GPUs) and
    ``chunk_texts`` (texts per such chunk; 0 plans all texts at once).
    """

    def __init__(self, spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool = False):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.spec = spec
        self.device = device
        self.dtype = dtype
        self.torch_dtype = getattr(torch, dtype)
        device_type = torch.device(device).type
        if device_type == "cpu":
            _bound_onednn_cache()
            _limit_threads_to_allotted_cores()
        with _quiet_transformers():
            self.tokenizer = AutoTokenizer.from_pretrained(spec.path, trust_remote_code=trust_remote_code)
            config = _load_config(spec.path, trust_remote_code)
            fast = device_type == "cpu" and _FastBert.supports(config)
            # The fast CPU path keeps layer norms and the residual stream in float32, so it loads float32 weights.
            load_dtype = torch.float32 if fast else self.torch_dtype
            kwargs = dict(dtype=load_dtype, use_safetensors=True, trust_remote_code=trust_remote_code)
            try:
                model = AutoModel.from_pretrained(spec.path, attn_implementation="sdpa", **kwargs)
            except (ValueError, ImportError):  # architectures without an SDPA kernel
                model = AutoModel.from_pretrained(spec.path, attn_implementation="eager", **kwargs)
        model.eval().requires_grad_(False)
        self.model = model.to(device)
        self.prefix, self.suffix = _special_tokens_around(self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self.config = config
        self.fast = _FastBert.build_checked(model, self.torch_dtype, self._probe_ids()) if fast else None
        if self.fast is not None:
            # The fast path holds its own (packed) copies of the layer weights and shares the embeddings and norms:
            # dropping the transformers module frees the originals.
            self.model = None
        elif fast and load_dtype != self.torch_dtype:
            self.model = model.to(self.torch_dtype)
        # Batches in flight at once. On CPU each worker runs its own batch on its share of the cores, so small ops
        # (layer norm, attention) never wait on each other's threads and a core taken by another process delays
        # one batch, not every operation. On GPU a second worker pads and launches the next batch while the
        # current one's results come back.
        self.workers = _cpu_workers(torch.get_num_threads()) if device_type == "cpu" else 2 if device_type == "cuda" else 1
        self.default_batch_tokens = DEFAULT_BATCH_TOKENS.get(device_type, 8192)
        if device_type == "cpu":
            self.default_batch_tokens *= max(1, torch.get_num_threads() // self.workers)
        if device_type == "cuda":
            self.default_batch_tokens = gpu_batch_tokens(
                torch.cuda.mem_get_info(torch.device(device))[0], config, torch.tensor([], dtype=self.torch_dtype).element_size()
            )
        self.prefetch = device_type == "cuda"
        self.chunk_texts = PREFETCH_CHUNK_TEXTS if self.prefetch else 0
        self._max_padded_tokens: int | None = None  # lowered after an out-of-memory error

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Content token ids of each text: no special tokens, no truncation."""
        if not texts:
            return []
        enc = self.tokenizer(
            list(texts), add_special_tokens=False, truncation=False, return_attention_mask=False,
            return_token_type_ids=False, verbose=False,
        )
        return enc["input_ids"]

    def forward_batches(self, batches: Iterable[Sequence[Sequence[int]]], pooling: Sequence[str],
                        layer_groups) -> Iterator[np.ndarray]:
        """:meth:`forward` over each batch, yielded in order, with up to ``self.workers`` batches running at once.

        On CPU the workers share the cores torch was using (a worker gets ``threads // workers`` of them; torch's
        thread count is restored afterwards). Results do not depend on the number of workers.
        """
        if self.workers <= 1:
            for units in batches:
                yield self.forward(units, pooling, layer_groups)
            return
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        with self._threads_per_worker(), ThreadPoolExecutor(self.workers, thread_name_prefix="bertfeat") as pool:
            pending: deque = deque()
            try:
                for units in batches:
                    pending.append(pool.submit(self.forward, units, pooling, layer_groups))
                    if len(pending) > self.workers:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for future in pending:
                    future.cancel()

    @contextlib.contextmanager
    def _threads_per_worker(self):
        """Give each CPU worker thread its share of torch's threads; workers started inside inherit the count."""
        import torch

        if not self.device.startswith("cpu"):
            yield
            return
        before = torch.get_num_threads()
        torch.set_num_threads(max(1, before // self.workers))
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def forward(self, units: Sequence[Sequence[int]], pooling: Sequence[str], layer_groups) -> np.ndarray:
        """Pool a batch of content-token sequences: returns (len(units), n_blocks, hidden) float32.

        On an out-of-memory error the batch is halved and retried, down to one sequence, so no row is lost; later
        batches are split to the size that fitted, so the error is not paid again on every batch.
        """
        import torch

        longest = max(len(u) for u in units) + self.n_special if len(units) else 0
        cap = self._max_padded_tokens
        if cap is not None and len(units) > 1 and len(units) * longest > cap:
            return self._halves(units, pooling, layer_groups)
        try:
            return self._forward(units, pooling, layer_groups)
        except RuntimeError as exc:  # torch.cuda.OutOfMemoryError included
            if not _is_oom(exc) or len(units) == 1:
                raise
            if self.device.startswith("cuda"):
                torch.cuda.empty_cache()
            fitted = (len(units) // 2) * longest
            self._max_padded_tokens = fitted if cap is None else min(cap, fitted)
            return self._halves(units, pooling, layer_groups)

    def _halves(self, units, pooling, layer_groups) -> np.ndarray:
        half = len(units) // 2
        return np.concatenate([
            self.forward(units[:half], pooling, layer_groups),
            self.forward(units[half:], pooling, layer_groups),
        ])

    def _forward(self, units, pooling, layer_groups) -> np.ndarray:
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
        with torch.inference_mode():
            if self.fast is not None:
                hidden = self.fast(input_ids, attention, needed)
            elif needed == [self.spec.num_layers]:
                out = self.model(input_ids=input_ids, attention_mask=attention)
                hidden = {self.spec.num_layers: out.last_hidden_state}
            else:
                out = self.model(input_ids=input_ids, attention_mask=attention, output_hidden_states=True)
                hidden = out.hidden_states
            pooled = pool_blocks(hidden, attention, pooling, layer_groups)
        return pooled.cpu().numpy()

    def _pad(self, units) -> tuple[np.ndarray, np.ndarray]:
        """``[prefix] + units + [suffix]``, right-padded to the longest: int64 ids and attention mask."""
        lengths = [len(u) for u in units]
        longest = max(1, max(lengths) + self.n_special)
        ids = np.full((len(units), longest), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(units), longest), dtype=np.int64)
        p = len(self.prefix)
        ids[:, :p] = self.prefix
        for i, u in enumerate(units):
            ids[i, p : p + lengths[i]] = u
            ids[i, p + lengths[i] : p + lengths[i] + len(self.suffix)] = self.suffix
            mask[i, : lengths[i] + self.n_special] = 1
        mask[:, 0] = 1  # an empty text with a tokenizer that adds no special tokens still gets one position
        return ids, mask

    def _probe_ids(self) -> list[list[int]]:
        """Two real token sequences of different lengths, to check the fast path against the model."""
        words = self.tokenize(["a short probe", "a somewhat longer probe sentence, with punctuation and numbers 42"])
        return [self.prefix + w + self.suffix for w in words]


def _load_config(path: str, trust_remote_code: bool):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)


def _special_tokens_around(tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a single sequence (``[CLS]`` / ``[SEP]`` for BERT)."""
    probe = "hello"
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return list(full[:i]), list(full[i + len(bare):])
    raise RuntimeError(f"cannot tell which special tokens {type(tokenizer).__name__} adds around a text")


def gpu_batch_tokens(free_bytes: int, config, element_size: int, ceiling: int = DEFAULT_BATCH_TOKENS["cuda"]) -> int:
    """Padded tokens per batch that fit in a quarter of ``free_bytes``: a power of two from 1024 to ``ceiling``.

    Per token a layer holds its input, Q/K/V, the attention output and the feed-forward activation, and every
    hidden state may be kept for layer pooling; a factor of 3 covers the allocator and transient copies.
    """
    h = int(config.hidden_size)
    inter = int(getattr(config, "intermediate_size", 4 * h))
    layers = int(config.num_hidden_layers)
    per_token = 3 * element_size * (6 * h + 2 * inter + (layers + 1) * h) + 4 * h
    fit = max(1, free_bytes // 4 // per_token)
    return int(min(ceiling, max(1024, 2 ** int(math.log2(fit)))))
