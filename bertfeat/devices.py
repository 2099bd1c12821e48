"""Which device and dtype a model runs on: ``device=`` spellings read (without torch where they can be), ``"auto"``
resolved to the GPU, Apple GPU or CPU this machine has, the dtype ``"auto"`` picks there, and whether torch's
autocast runs a half dtype on that device (refused, saying why, before a model loads). :mod:`bertfeat.backend` runs
the model on what these choose; the GPU's own facts (memory, native bfloat16) are :mod:`bertfeat.gpu`'s.
"""

from __future__ import annotations

import re

# The devices bertfeat runs on, as torch.device spells them: a type, and an optional ordinal without leading zeros
_DEVICE = re.compile(r"(cpu|cuda|mps)(:(0|[1-9][0-9]*))?")


def device_type(device) -> str:
    """The kind of device a ``device=`` names (``"auto"``, ``"cpu"``, ``"cuda"`` or ``"mps"``), refusing a spelling
    bertfeat does not run on; whether this machine has it is :func:`resolve_device`'s question. The Spark driver asks
    this alone: a cluster's executors may have GPUs the driver has not."""
    if device == "auto":
        return "auto"
    if isinstance(device, str) and _DEVICE.fullmatch(device):  # torch.device's own spelling, read without torch
        return device.split(":")[0]
    import torch

    if isinstance(device, torch.device):  # a parameter is a plain string: it pickles, clones and reaches R as one
        raise ValueError(f"device={device!r} is not valid: pass the device as a string, device={str(device)!r}.")
    if not isinstance(device, str):
        raise ValueError(f"device={device!r} is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'.")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'.") from exc
    if dev.type not in ("cpu", "cuda", "mps"):  # meta, xpu, ...: torch knows them, bertfeat does not run there
        raise ValueError(f"device={device!r} is not supported: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'.")
    return dev.type


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` if available, then ``"mps"``, then ``"cpu"``; anything else is checked and returned."""
    import torch

    from bertfeat import gpu

    if device == "auto":
        if gpu.cuda_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    kind = device_type(device)
    if kind == "cuda":
        count = gpu.device_count()  # through NVML: CUDA is not initialised
        if count == 0:
            raise ValueError(f"device={device!r} was asked for, but torch sees no CUDA GPU here; pass device='cpu' or device='auto'.")
        index = torch.device(device).index
        if index is not None and index >= count:
            raise ValueError(
                f"device={device!r} was asked for, but torch sees {count} CUDA GPU(s) here (cuda:0 to "
                f"cuda:{count - 1}); pass one of those, or check CUDA_VISIBLE_DEVICES."
            )
    if kind == "mps" and not torch.backends.mps.is_available():
        from bertfeat.os_cpu import ROSETTA, under_rosetta

        if under_rosetta():
            raise ValueError(
                f"device={device!r} was asked for, but MPS is not available here: {ROSETTA}, where torch has no Apple "
                "GPU; install an arm64 Python (python.org's, Miniforge's) and bertfeat in it, or pass device='cpu'."
            )
        raise ValueError(f"device={device!r} was asked for, but MPS is not available here; pass device='cpu' or device='auto'.")
    return device


def resolve_dtype(dtype: str, device: str) -> str:
    """``"auto"`` -> bfloat16 on GPUs that run it natively (float16 on those that only emulate it: T4, V100), float16
    on an Apple GPU (float32 where torch's autocast will not run it there: a torch before 2.5), float32 on CPU. Asks
    the GPU named by ``device`` (``cuda:N``), without initialising CUDA."""
    if dtype != "auto":
        return dtype
    if device.startswith("cuda"):
        from bertfeat import gpu

        return gpu.auto_dtype(device)
    if device.startswith("mps"):
        return "float16" if half_precision_refusal(device, "float16") is None else "float32"
    return "float32"


def half_precision_refusal(device: str, dtype: str) -> str | None:
    """Why torch's autocast, which runs bertfeat's half precision on a GPU, would not run ``dtype`` on the Apple GPU
    ``device``, in torch's words: a torch with no autocast on MPS (before 2.5), or a dtype it turns autocast off for
    with a warning (bfloat16 before macOS 14), where the model would compute float32 under a half-precision recipe.
    None where it runs, and for other devices (CUDA's refusal is :func:`bertfeat.gpu.auto_dtype`'s question)."""
    import warnings

    import torch

    if dtype == "float32" or not device.startswith("mps"):
        return None
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            with torch.autocast("mps", dtype=getattr(torch, dtype)):
                if torch.is_autocast_enabled("mps"):
                    return None
        except RuntimeError as exc:
            return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return next((str(w.message).replace("\n", " ").strip() for w in said), "autocast was turned off")


def device_key(device: str) -> str:
    """The device a model on ``device`` (resolved, :func:`resolve_device`) runs on, one name for each: ``"cuda"`` as
    the ``"cuda:N"`` it is, ``"cpu:N"`` as ``"cpu"``, ``"mps:0"`` as ``"mps"``."""
    kind = device_type(device)
    if kind == "cuda":
        from bertfeat.gpu import device_index

        return f"cuda:{device_index(device)}"
    return kind


def _refuse_half_precision_autocast_will_not_run(device: str, dtype: str) -> None:
    """Refuse, before any weight reaches the device, a half ``dtype`` torch's autocast would not run on ``device``
    (:func:`half_precision_refusal`), naming the dtypes that run there."""
    import torch

    why = half_precision_refusal(device, dtype)
    if why is None:
        return
    others = [d for d in ("float16", "bfloat16") if d != dtype and half_precision_refusal(device, d) is None]
    instead = " or ".join(repr(d) for d in [*others, "float32"])
    raise ValueError(
        f"dtype={dtype!r} cannot run on device={device!r} with torch {torch.__version__}: bertfeat runs half precision "
        f"on a GPU under torch's autocast, which does not run it here ({why}), so the model would compute float32 "
        f"vectors under a {dtype} recipe. Pass dtype={instead}, or a newer torch (bfloat16 on an Apple GPU needs "
        "macOS 14)."
    )


def _autocast_runs_on_cpu(torch_dtype) -> bool:
    """Whether this CPU runs a product and a matrix multiply under autocast in ``torch_dtype``: where it does, a model
    whose forward pass fails there fails for its own code (DeBERTa's masked_fill with float32's minimum into bfloat16
    scores, X-MOD's float32 index_put of bfloat16 adapters), not for the CPU."""
    import torch

    try:
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch_dtype):
            x = torch.ones(2, 8)
            y = torch.nn.functional.linear(x, torch.ones(8, 8))
            return bool(torch.isfinite((y @ y.T).float()).all())
    except RuntimeError:
        return False


def _torch_lacks_dtype_on_cpu(message: str, dtype: str) -> bool:
    """Whether torch's error says that torch itself has no ``dtype`` on CPU, whatever the CPU: torch 2.1 runs no
    float16 product there (``"addmm_impl_cpu_" not implemented for 'Half'``) and its CPU autocast takes bfloat16 only
    ("AutocastCPU only support Bfloat16")."""
    name = {"float16": "Half", "bfloat16": "BFloat16"}.get(dtype)
    return bool(name) and (f"not implemented for '{name}'" in message
                           or ("AutocastCPU only support" in message and dtype != "bfloat16"))
