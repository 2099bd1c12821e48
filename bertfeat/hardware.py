"""What this machine's CPU gives the model: the cores this process may use, torch's thread count, oneDNN's knobs.

Torch is imported inside the functions that need it, so reading the allotted cores stays cheap.
"""

from __future__ import annotations

import math
import os


def allotted_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup CPU quota (containers) when there is one."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            n = min(n, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads to ``n``, or to :func:`allotted_cores` when ``n`` is None; returns the count."""
    import torch

    n = allotted_cores() if n is None else int(n)
    torch.set_num_threads(max(1, n))
    return n


def _cpu_workers(threads: int) -> int:
    """Batches run side by side on CPU: one per thread up to 4, then threads shared out among 4 workers."""
    return max(1, min(threads, 4))


# oneDNN keeps one compiled kernel per matrix shape, up to 1,024 by default. Token-budget batches come in many
# (rows, length) shapes, so over a long run that cache alone grew the CLI's memory by about 150 MB (1,000,000 rows:
# 901 MB peak against 746 MB for 100,000); 64 kernels cost no measurable speed on MiniLM (8,074 vs 8,006 tokens/s).
ONEDNN_CACHE_CAPACITY = 64


def _bound_onednn_cache() -> None:
    """Cap oneDNN's kernel cache (read once, when oneDNN first runs) unless the user has set it."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(ONEDNN_CACHE_CAPACITY))


def _limit_threads_to_allotted_cores() -> None:
    """torch starts one thread per core of the CPU affinity, which in a container with a CPU quota can be many
    more threads than cores; oversubscribed OpenMP threads wait on each other. A lower count set by the user (or by
    OMP_NUM_THREADS) is left alone."""
    import torch

    if torch.get_num_threads() > allotted_cores():
        set_threads()
