"""Loading and running the model: the only module that touches torch and transformers.

A :class:`TorchBackend` tokenizes texts (content tokens, no special tokens) and runs padded batches of token
sequences through the frozen model, returning pooled float32 blocks. Backends are cached once per process and never
pickled. Device and dtype are resolved here; an out-of-memory error halves the batch and retries.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence

import numpy as np

from bertfeat.models import ModelSpec

_REGISTRY: dict[tuple, "TorchBackend"] = {}
_LOCK = threading.Lock()

# Padded tokens per forward pass. Large enough to keep the matrix units busy, small enough for the activations
# of every layer (kept for layer pooling) to stay in cache-friendly sizes on CPU and within memory on GPU.
DEFAULT_BATCH_TOKENS = {"cpu": 8192, "cuda": 65536, "mps": 16384}


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


class TorchBackend:
    """A frozen Hugging Face encoder and its tokenizer on one device, in one dtype."""

    def __init__(self, spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool = False):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.spec = spec
        self.device = device
        self.dtype = dtype
        self.torch_dtype = getattr(torch, dtype)
        with _quiet_transformers():
            self.tokenizer = AutoTokenizer.from_pretrained(spec.path, trust_remote_code=trust_remote_code)
            kwargs = dict(dtype=self.torch_dtype, use_safetensors=True, trust_remote_code=trust_remote_code)
            try:
                model = AutoModel.from_pretrained(spec.path, attn_implementation="sdpa", **kwargs)
            except (ValueError, ImportError):  # architectures without an SDPA kernel
                model = AutoModel.from_pretrained(spec.path, attn_implementation="eager", **kwargs)
        model.eval().requires_grad_(False)
        self.model = model.to(device)
        self.prefix, self.suffix = _special_tokens_around(self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self.default_batch_tokens = DEFAULT_BATCH_TOKENS.get(torch.device(device).type, 8192)

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

    def forward(self, units: Sequence[Sequence[int]], pooling: Sequence[str], layer_groups) -> np.ndarray:
        """Pool a batch of content-token sequences: returns (len(units), n_blocks, hidden) float32.

        On a CUDA out-of-memory error the batch is halved and retried, down to one sequence, so no row is lost.
        """
        import torch

        try:
            return self._forward(units, pooling, layer_groups)
        except torch.cuda.OutOfMemoryError:
            if len(units) == 1:
                raise
            if self.device.startswith("cuda"):
                torch.cuda.empty_cache()
            half = len(units) // 2
            return np.concatenate([
                self.forward(units[:half], pooling, layer_groups),
                self.forward(units[half:], pooling, layer_groups),
            ])

    def _forward(self, units, pooling, layer_groups) -> np.ndarray:
        import torch

        from bertfeat.pooling import pool_blocks

        seqs = [self.prefix + list(u) + self.suffix for u in units]
        longest = max(1, max(len(s) for s in seqs))
        ids = np.full((len(seqs), longest), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(seqs), longest), dtype=np.int64)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = s
            mask[i, : len(s)] = 1
        mask[:, 0] = 1  # an empty text with a tokenizer that adds no special tokens still gets one position
        on_gpu = self.device.startswith("cuda")
        input_ids = torch.from_numpy(ids)
        attention = torch.from_numpy(mask)
        if on_gpu:
            input_ids, attention = input_ids.pin_memory(), attention.pin_memory()
        input_ids = input_ids.to(self.device, non_blocking=on_gpu)
        attention = attention.to(self.device, non_blocking=on_gpu)
        needed = {layer for group in layer_groups for layer in group}
        only_last = needed == {self.spec.num_layers}
        with torch.inference_mode():
            out = self.model(input_ids=input_ids, attention_mask=attention, output_hidden_states=not only_last)
            hidden = {self.spec.num_layers: out.last_hidden_state} if only_last else out.hidden_states
            pooled = pool_blocks(hidden, attention, pooling, layer_groups)
        return pooled.cpu().numpy()


def _special_tokens_around(tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a single sequence (``[CLS]`` / ``[SEP]`` for BERT)."""
    probe = "hello"
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return list(full[:i]), list(full[i + len(bare):])
    raise RuntimeError(f"cannot tell which special tokens {type(tokenizer).__name__} adds around a text")


def set_threads(n: int | None = None) -> int:
    """Use every core this process may run on (``sched_getaffinity``), unless told otherwise."""
    import torch

    if n is None:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    torch.set_num_threads(max(1, n))
    return n
