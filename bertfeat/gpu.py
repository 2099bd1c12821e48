"""What a CUDA GPU offers and how much of it a forward pass may take, decided without initialising CUDA where possible.

``fit()`` resolves ``dtype="auto"`` on the GPU it will run on; doing that through torch's CUDA runtime would
initialise CUDA in the parent process, after which a forked child (R's ``parallel``, ``multiprocessing``) cannot
use the GPU. The device count and compute capability are therefore read through NVML (as
``torch.cuda.device_count`` does), falling back to torch only where NVML cannot answer.

The rest is torch-free arithmetic, tested on CPU: the token budget that fits in memory
(:func:`gpu_batch_tokens`), what an out-of-memory error teaches (:class:`MemoryCap`), and process-wide torch flags
held while any forward pass needs them (:class:`HeldFlag`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

from bertfeat.fork_safe import ForkSafeLock

# Compute capability from which bfloat16 runs on tensor cores (Ampere). Older GPUs (T4, V100) emulate it, slowly.
NATIVE_BF16_CAPABILITY = (8, 0)

# Largest padded-token budget of one forward pass on a GPU.
MAX_GPU_BATCH_TOKENS = 32768


def device_index(device: str) -> int:
    """The CUDA ordinal of ``"cuda"`` / ``"cuda:N"``: ``"cuda"`` is torch's current device (0 until CUDA starts)."""
    import torch

    dev = torch.device(device)
    if dev.index is not None:
        return int(dev.index)
    return int(torch.cuda.current_device()) if torch.cuda.is_initialized() else 0


def compute_capability(index: int) -> tuple[int, int]:
    """``(major, minor)`` of CUDA device ``index``, read through NVML so that CUDA stays uninitialised."""
    import torch

    if not torch.cuda.is_initialized():
        found = _nvml_capability(index)
        if found is not None:
            return found
    return tuple(torch.cuda.get_device_capability(index))  # initialises CUDA: only where NVML cannot answer


def _nvml_capability(index: int) -> tuple[int, int] | None:
    """NVML's answer for the ``index``-th visible device (CUDA_VISIBLE_DEVICES honoured), or None."""
    import ctypes

    import torch

    try:
        nvml_index = torch.cuda._get_nvml_device_index(index)
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        if lib.nvmlInit_v2() != 0:
            return None
        handle = ctypes.c_void_p()
        major, minor = ctypes.c_int(), ctypes.c_int()
        if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(nvml_index), ctypes.byref(handle)) != 0:
            return None
        if lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor)) != 0:
            return None
        return major.value, minor.value
    except (OSError, RuntimeError, AttributeError, ValueError):
        return None


def native_bf16(index: int) -> bool:
    """Whether CUDA device ``index`` runs bfloat16 natively (not ``torch.cuda.is_bf16_supported()``'s emulation)."""
    import torch

    if torch.version.hip:
        import inspect

        # torch 2.1's has no including_emulation (a TypeError that failed every dtype="auto" job on ROCm): its
        # answer there is True for every AMD GPU, emulation or not, and the only one that torch gives
        if "including_emulation" not in inspect.signature(torch.cuda.is_bf16_supported).parameters:
            return bool(torch.cuda.is_bf16_supported())
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    return compute_capability(index) >= NATIVE_BF16_CAPABILITY


def auto_dtype(device: str) -> str:
    """``dtype="auto"`` on a CUDA device: bfloat16 where it is native, float16 elsewhere."""
    return "bfloat16" if native_bf16(device_index(device)) else "float16"


def gpu_batch_tokens(free_bytes: int, config, element_size: int, ceiling: int = MAX_GPU_BATCH_TOKENS,
                     in_flight: int = 2, share: float = 1.0) -> int:
    """Padded tokens per batch for ``in_flight`` batches running at once in ``share`` of ``free_bytes``: a power
    of two from 1024 to ``ceiling``.

    Per token a layer holds its input, Q/K/V, the attention output and the feed-forward activation, and every
    hidden state may be kept for layer pooling; a factor of 3 covers the allocator and transient copies. Half of
    the memory is left as headroom, so one process with two batches in flight budgets a quarter of it per batch.
    """
    h = int(config.hidden_size)
    inter = int(getattr(config, "intermediate_size", 4 * h))
    layers = int(config.num_hidden_layers)
    per_token = 3 * element_size * (6 * h + 2 * inter + (layers + 1) * h) + 4 * h
    usable = free_bytes * min(1.0, max(share, 0.0)) / 2 / max(1, in_flight)
    fit = max(1, int(usable // per_token))
    return int(min(ceiling, max(1024, 2 ** int(math.log2(fit)))))


def usable_bytes(device: str, share: float = 1.0) -> int:
    """Bytes this process may still fill on ``device``: free memory plus what torch's allocator holds unused, but
    no more than ``share`` of the card less what this process has allocated (actors sharing a GPU each get
    theirs, whenever each of them looks)."""
    import torch

    dev = torch.device(device)
    free, total = torch.cuda.mem_get_info(dev)
    allocated = torch.cuda.memory_allocated(dev)
    cached = torch.cuda.memory_reserved(dev) - allocated
    return int(max(0, min(free + cached, share * total - allocated)))


class MemoryCap:
    """The largest padded batch (rows x longest) to try, learned from out-of-memory errors, and how it recovers.

    After an error the cap is half the batch that failed, and the caller should run one batch at a time
    (``capped``), since the other batch in flight (or another process) may have caused it. Every ``patience``
    successful batches the cap doubles; once it is above the failed size it is lifted. Each error doubles
    ``patience`` (up to ``max_patience``), so memory that is really too small costs fewer and fewer retries.
    Thread-safe: the batches in flight share one cap.
    """

    def __init__(self, patience: int = 8, max_patience: int = 1024):
        self.patience = self._start = patience
        self.max_patience = max_patience
        self.limit: int | None = None
        self.failed_at: int | None = None
        self.errors = 0
        self._streak = 0
        self._lock = ForkSafeLock()

    @property
    def capped(self) -> bool:
        return self.limit is not None

    def fits(self, padded_tokens: int) -> bool:
        limit = self.limit
        return limit is None or padded_tokens <= limit

    def failed(self, padded_tokens: int, rows: int) -> None:
        """A batch of ``rows`` rows and ``padded_tokens`` padded tokens ran out of memory."""
        with self._lock:
            fitted = (rows // 2) * (padded_tokens // max(rows, 1))
            self.limit = fitted if self.limit is None else min(self.limit, fitted)
            self.failed_at = padded_tokens if self.failed_at is None else min(self.failed_at, padded_tokens)
            if self.errors:
                self.patience = min(self.max_patience, self.patience * 2)
            self.errors += 1
            self._streak = 0

    def succeeded(self) -> None:
        with self._lock:
            if self.limit is None:
                return
            self._streak += 1
            if self._streak >= self.patience:
                self._streak = 0
                self.limit *= 2
                if self.limit >= self.failed_at:
                    self.limit = self.failed_at = None

    def reset(self) -> None:
        with self._lock:
            self.limit = self.failed_at = None
            self.errors = self._streak = 0
            self.patience = self._start


class HeldFlag:
    """A process-wide setting (a torch backend flag) held at ``value`` while any caller is inside :meth:`held`.

    The first caller in saves the current value and sets ``value``; the last one out puts the saved value back.
    Two batches in flight on two threads, each entering and leaving on its own, so never restore it under the
    other's feet, as a plain save-set-restore context would.
    """

    def __init__(self, get: Callable[[], object], set: Callable[[object], None], value):
        self._get, self._set, self.value = get, set, value
        self._lock = ForkSafeLock()
        self._holders = 0
        self._saved = None

    @contextlib.contextmanager
    def held(self):
        with self._lock:
            if self._holders == 0:
                self._saved = self._get()
                if self._saved != self.value:
                    self._set(self.value)
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0 and self._saved != self.value:
                    self._set(self._saved)


def device_count() -> int:
    """CUDA GPUs torch can use here, counted through NVML (as ``torch.cuda.device_count`` does) so that CUDA is not
    initialised: ``torch.cuda.is_available()`` starts the CUDA driver, which a forked child cannot then use.

    Every device decision in bertfeat goes through this function (the test suite pins it to 0 outside tests
    marked ``gpu``)."""
    import torch

    return int(torch.cuda.device_count())


def cuda_available() -> bool:
    return device_count() > 0


_HELD: dict[str, HeldFlag] = {}
_HELD_LOCK = ForkSafeLock()


def held_flag(name: str) -> HeldFlag:
    """The process's one :class:`HeldFlag` for ``name``:

    ``"ieee_float32"``: cuBLAS float32 products in full float32, no TF32 (a user's TF32 setting would otherwise make
    ``dtype="float32"`` on GPU inexact); ``"no_flash_attention"``: the flash and cuDNN attention kernels off, so
    that padded and unpadded batches run the same (memory-efficient) attention kernel in half precision.
    """
    import torch

    with _HELD_LOCK:
        if name not in _HELD:
            if name == "ieee_float32":
                matmul = torch.backends.cuda.matmul
                if _has_fp32_precision(matmul):
                    _HELD[name] = HeldFlag(lambda: matmul.fp32_precision,
                                           lambda v: setattr(matmul, "fp32_precision", v), "ieee")
                else:  # torch before 2.9: the same IEEE float32 products are allow_tf32=False
                    _HELD[name] = HeldFlag(lambda: matmul.allow_tf32, lambda v: setattr(matmul, "allow_tf32", v),
                                           False)
            elif name == "no_flash_attention":
                cuda = torch.backends.cuda
                # torch before 2.3 or so has no cuDNN attention kernel, so no switch for it: flash alone is turned off
                cudnn = hasattr(cuda, "enable_cudnn_sdp") and hasattr(cuda, "cudnn_sdp_enabled")

                def set_kernels(v):
                    cuda.enable_flash_sdp(v[0])
                    if cudnn:
                        cuda.enable_cudnn_sdp(v[1])

                _HELD[name] = HeldFlag(lambda: (cuda.flash_sdp_enabled(), cudnn and cuda.cudnn_sdp_enabled()),
                                       set_kernels, (False, False))
            else:
                raise KeyError(name)
        return _HELD[name]


def _has_fp32_precision(matmul) -> bool:
    """Whether torch has ``torch.backends.cuda.matmul.fp32_precision`` (2.9 on); before, asking for it raised
    AttributeError (2.8) or AssertionError (2.1) "Unknown attribute fp32_precision", and failed every GPU job."""
    try:
        matmul.fp32_precision
    except (AttributeError, AssertionError):
        return False
    return True


_MEMORY_SHARE = 1.0


def set_memory_share(fraction: float) -> None:
    """The fraction of each GPU's memory this process may budget for (a Ray actor given ``num_gpus=0.5`` shares
    its card with another actor): 1 by default."""
    global _MEMORY_SHARE
    if not 0 < fraction <= 1:
        raise ValueError(f"memory share {fraction!r} is not valid: expected a fraction in (0, 1].")
    _MEMORY_SHARE = float(fraction)


def memory_share() -> float:
    return _MEMORY_SHARE
