"""What this machine's CPU gives the model: the cores this process may use, torch's thread count, oneDNN's knobs,
the instruction sets that decide which precisions run natively, and measured matrix-multiply rates per dtype.

Torch is imported inside the functions that need it, so reading the allotted cores stays cheap.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import platform
import threading
import time

from bertfeat import fork_safe, os_cpu
from bertfeat.fork_safe import ForkSafeLock

# Instruction sets that decide how fast float32, bfloat16 and float16 products run (x86 names as in
# /proc/cpuinfo; ARM names as in its "Features" line).
X86_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16",
             "avx512_fp16", "avx_vnni", "avx_ne_convert", "amx_tile", "amx_bf16", "amx_fp16", "amx_int8")
ARM_FLAGS = ("asimd", "asimdhp", "fphp", "bf16", "i8mm", "sve", "sve2", "sme")
# A CPU multiplies bfloat16 natively with a bf16 dot-product instruction; float16 with fp16 arithmetic. Without
# them torch still runs those dtypes, converting to float32 around the products: correct, but slower than float32.
NATIVE = {
    "bfloat16": ("avx512_bf16", "amx_bf16", "avx_ne_convert", "bf16"),
    "float16": ("avx512_fp16", "amx_fp16", "asimdhp", "fphp"),
}


def allotted_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup CPU quota (containers, systemd's CPUQuota=)
    when there is one (:func:`cgroup_cpu_quota`), and by a Slurm task's CPUs (:func:`slurm_task_cpus`)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cgroup_cpu_quota()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    slurm = slurm_task_cpus()
    if slurm is not None:
        n = min(n, slurm)
    return max(1, n)


def slurm_task_cpus() -> int | None:
    """The CPUs Slurm gave each task of this job (``SLURM_CPUS_PER_TASK``, from ``--cpus-per-task``); None outside
    such a job or where it is not a positive whole number.

    Slurm confines a task to its CPUs only where the cluster runs its cgroup or affinity plugin (then the affinity
    or the quota says as much); without them a job of 4 CPUs sees, and torch would start a thread on, every core of
    the node, slowing its neighbours' jobs and its own. R's parallelly reads the variable the same way."""
    try:
        n = int(os.environ.get("SLURM_CPUS_PER_TASK", "").strip())
    except ValueError:
        return None
    return n if n > 0 else None


# Where the cgroup filesystems are mounted, and the file naming this process's cgroups (tests point them elsewhere).
CGROUP_ROOT = "/sys/fs/cgroup"
SELF_CGROUP = "/proc/self/cgroup"


def cgroup_cpu_quota() -> float | None:
    """CPUs' worth of time the cgroup CPU quota gives this process (1.5 for a container limited to 1.5 CPUs), the
    tightest of its cgroup's and its parents'; None where none is set or there are no cgroups.

    Read under cgroup v2 (``cpu.max``) and v1 (``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``, still the layout of
    many Kubernetes nodes), in the process's own cgroup as ``/proc/self/cgroup`` names it and up to the mount's root,
    which is the container's own cgroup where the container sees only its own.
    """
    try:
        with open(SELF_CGROUP) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    v2_path, v1_path = "/", "/"
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":
            v2_path = path or "/"
        elif "cpu" in controllers.split(","):
            v1_path = path or "/"
    quotas = [_v2_quota(d) for d in _up_to(CGROUP_ROOT, v2_path)]
    v1_mounts = {os.path.realpath(os.path.join(CGROUP_ROOT, name)) for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu")}
    quotas += [_v1_quota(d) for mount in sorted(v1_mounts) for d in _up_to(mount, v1_path)]
    found = [q for q in quotas if q is not None]
    return min(found) if found else None


def _up_to(mount: str, path: str) -> list[str]:
    """``mount/path`` and each of its parents up to ``mount`` itself (a limit on a parent cgroup binds too)."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    return [os.path.join(mount, *parts[:i]) for i in range(len(parts), -1, -1)]


def _read_numbers(path: str) -> list[str] | None:
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return None


def _v2_quota(directory: str) -> float | None:
    fields = _read_numbers(os.path.join(directory, "cpu.max"))  # "150000 100000", or "max 100000" for none
    try:
        return int(fields[0]) / int(fields[1]) if fields and fields[0] != "max" else None
    except (ValueError, IndexError, ZeroDivisionError):
        return None


def _v1_quota(directory: str) -> float | None:
    quota = _read_numbers(os.path.join(directory, "cpu.cfs_quota_us"))  # -1 for none
    period = _read_numbers(os.path.join(directory, "cpu.cfs_period_us"))
    try:
        q, p = int(quota[0]), int(period[0])
        return q / p if q > 0 and p > 0 else None
    except (TypeError, ValueError, IndexError):
        return None


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads to ``n``, or to :func:`allotted_cores` when ``n`` is None; returns the count."""
    import torch

    n = allotted_cores() if n is None else int(n)
    torch.set_num_threads(max(1, n))
    return n


# The thread count the calls now running share out among their workers, and how many calls are running.
_SHARED = {"calls": 0, "threads": 0}


# The process bertfeat last ran torch in on CPU (its pid), to know a forked child at its first load or call, also
# under a fork Python's hooks never see (R's mclapply()); a child of a process that imported torch and never ran it
# here is known by bertfeat.fork_safe's hook (forked_after_torch), which `import bertfeat` registers.
_TORCH_PID: int | None = None


def _forget_calls_in_a_forked_child() -> None:
    """A child forked while a call ran holds none of its threads: it starts with no call running."""
    _SHARED.update(calls=0, threads=0)


_SHARED_LOCK = ForkSafeLock(in_child=_forget_calls_in_a_forked_child)


@contextlib.contextmanager
def threads_shared_by(workers: int):
    """Yield ``(share, threads)``: the torch threads each of ``workers`` threads running batches side by side sets
    for itself (with :func:`set_worker_threads`, first thing), a share of the calling thread's count, and that count.

    torch keeps a count per thread, and a thread starts with the count last set by any thread, so each set is also
    what the next new thread gets: a worker puts ``threads`` back for them once its own is set. The calling thread's
    own count is left as it is; calls that overlap (threads of a web service embedding at once) share out the first
    one's count rather than a count a worker of another call set, and the last to end sets that count back for new
    threads: never lowered for good."""
    threads = _call_begins()
    try:
        yield _share(threads, workers), threads
    finally:
        _call_ends(threads)


# threads_shared_by's steps, each a plain function (mutmut, which scores these, mutates no decorated function)
def _call_begins() -> int:
    """Count one more call running; returns the thread count the calls running share out (the first one's)."""
    import torch

    with _SHARED_LOCK:
        if _SHARED["calls"] == 0:
            _SHARED["threads"] = torch.get_num_threads()
        _SHARED["calls"] += 1
        return _SHARED["threads"]


def _share(threads: int, workers: int) -> int:
    """Each of ``workers``' share of ``threads``: at least one."""
    return max(1, threads // workers)


def _call_ends(threads: int) -> None:
    """Count one call fewer; the last to end sets ``threads`` back as the count new threads start with."""
    with _SHARED_LOCK:
        _SHARED["calls"] -= 1
        if _SHARED["calls"] == 0:
            _set_for_new_threads(threads)


def set_worker_threads(share: int | None, threads: int | None = None) -> None:
    """A batch worker thread's first act: ``share`` torch threads of its own (None: the count it starts with), and
    ``threads`` left as what a thread that first uses torch later starts with. Without that, a thread another part
    of the program started while a call ran (a web service's request thread) kept a worker's share for its life;
    now only one whose first use falls in the moments between the two sets does."""
    if share is None:
        return
    import torch

    # torch takes a thread's count from the one new threads start with at its first use (a get, not a set):
    # after the set below it would take ``threads`` put back meanwhile
    torch.get_num_threads()
    torch.set_num_threads(share)
    if threads is not None and threads != share:
        _set_for_new_threads(threads)


def _set_for_new_threads(threads: int) -> None:
    """Make ``threads`` the count a thread starts with, leaving every running thread's own count as it is: set in a
    thread of its own (torch.set_num_threads sets the calling thread's count and the one new threads take)."""
    import torch

    setter = threading.Thread(target=torch.set_num_threads, args=(threads,), name="bertfeat-threads")
    setter.start()
    setter.join()


def call_threads() -> int:
    """The torch threads a CPU call from this thread runs on: its count, or the cores the process may use where that
    is fewer (:func:`limit_threads_to_allotted_cores` lowers it so as the call starts)."""
    import torch

    return max(1, min(torch.get_num_threads(), allotted_cores()))


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


def limit_threads_to_allotted_cores() -> None:
    """torch starts one thread per core of the CPU affinity, which in a container with a CPU quota can be many
    more threads than cores; oversubscribed OpenMP threads wait on each other. A lower count set by the user (or by
    OMP_NUM_THREADS) is left alone. In a forked child, one thread (:func:`one_thread_in_a_forked_child`)."""
    import torch

    if one_thread_in_a_forked_child():
        return
    if torch.get_num_threads() > allotted_cores():
        set_threads()


def one_thread_in_a_forked_child() -> bool:
    """Set torch to one thread in a child forked after torch ran here (True), once, at its first CPU load or call.

    torch's OpenMP threads cannot be used again in a forked child from the thread that forked: a parallel region
    there waits for ever for the parent's threads (GNU OpenMP is not fork-safe). A child forked after its parent
    embedded (a ``multiprocessing`` fork pool, R's ``mclapply()``) that loaded another model hung in the load's
    first pass; so did one forked after the caller's own torch work, before bertfeat ran torch or imported this
    module (:data:`bertfeat.fork_safe.forked_after_torch`). On one thread no parallel region starts, as torch's
    DataLoader runs its workers; a child is one of several sharing the cores anyway. A count the user sets in the
    child afterwards is theirs."""
    import torch

    global _TORCH_PID
    pid, before = os.getpid(), _TORCH_PID
    _TORCH_PID = pid
    if before == pid or (before is None and not fork_safe.forked_after_torch):
        return False
    torch.set_num_threads(1)
    return True


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's marketing name, as the OS reports it (an ARM core, which /proc/cpuinfo gives codes for, as lscpu
    names it: "ARM Neoverse-V1"; "unknown" where it reports none); ``cpuinfo`` replaces /proc/cpuinfo's text, for
    tests."""
    text = _cpuinfo_text() if cpuinfo is None else cpuinfo
    for line in text.splitlines():
        if line.startswith(("model name", "Model name", "Hardware")):
            return line.split(":", 1)[1].strip()
    arm = os_cpu.arm_core(_first_block(text))
    if arm is not None:
        return arm
    if platform.system() == "Darwin":
        import subprocess

        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                                 timeout=5).stdout.strip()
            if out:
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    if platform.system() == "Windows":
        name = os_cpu.windows_cpu_name()
        if name:
            return name
    return platform.processor() or "unknown"


def cpu_id(cpuinfo: str | None = None) -> str | None:
    """``"<vendor> family F model M"`` from /proc/cpuinfo (x86; Windows' identifier, an Intel Mac's sysctl), or
    ``"implementer I part P rXpY"`` (ARM), which tells CPU generations apart where the marketing name does not (a KVM
    guest often reports just "AMD EPYC"); None where it is not reported (Apple silicon)."""
    fields = _first_block(_cpuinfo_text() if cpuinfo is None else cpuinfo)
    if "CPU implementer" in fields and "CPU part" in fields:  # ARM: the core's codes, and its rXpY stepping
        stepping = ""
        with contextlib.suppress(KeyError, ValueError):
            stepping = f" r{int(fields['CPU variant'], 16)}p{int(fields['CPU revision'])}"
        return f"implementer {fields['CPU implementer']} part {fields['CPU part']}{stepping}"
    if "cpu family" not in fields:
        if platform.system() == "Windows":
            return os_cpu.windows_cpu_id(platform.processor())
        return os_cpu.mac_cpu_id(platform.machine()) if platform.system() == "Darwin" else None
    return f"{fields.get('vendor_id', 'unknown')} family {fields['cpu family']} model {fields.get('model', '?')}"


def _first_block(text: str) -> dict[str, str]:
    """The ``key: value`` fields of /proc/cpuinfo's first processor block (``text``)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line:
            key, value = (part.strip() for part in line.split(":", 1))
            fields.setdefault(key, value)
        elif not line.strip() and fields:
            break
    return fields


def _cpuinfo_text() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """The instruction sets in :data:`X86_FLAGS` / :data:`ARM_FLAGS` that this CPU has, in that order.

    Read from /proc/cpuinfo (``cpuinfo`` replaces it, for tests); on macOS, which has no such file, from sysctl
    (:func:`bertfeat.os_cpu.mac_flags`).
    """
    found = _listed_flags(_cpuinfo_text() if cpuinfo is None else cpuinfo) or set()
    return [f for f in X86_FLAGS + ARM_FLAGS if f in found]


def flags_listed(cpuinfo: str | None = None) -> bool:
    """Whether this OS lists the CPU's instruction sets (a flags or Features line in /proc/cpuinfo, or macOS's
    sysctl). Where it does not (Windows, a Mac whose sysctl does not answer), :func:`cpu_flags`' empty list says
    nothing of the CPU: nothing may be said of its instruction sets then."""
    return _listed_flags(_cpuinfo_text() if cpuinfo is None else cpuinfo) is not None


def _listed_flags(text: str) -> set[str] | None:
    """Every flag the OS lists for the CPU (cpuinfo's ``text``), or None where it lists none."""
    lines = [line for line in text.splitlines() if line.startswith(("flags", "Features"))]
    if lines:
        return {flag for line in lines for flag in line.split(":", 1)[1].split()}
    if not text and platform.system() == "Darwin":
        return os_cpu.mac_flags(platform.machine())
    return None


def native_dtypes(flags: list[str] | None = None) -> list[str]:
    """The precisions this CPU multiplies natively: always float32, plus bfloat16 / float16 where it has them."""
    flags = cpu_flags() if flags is None else flags
    return ["float32"] + [d for d, needs in NATIVE.items() if any(f in flags for f in needs)]


def product_routes(x, w, b=None) -> list:
    """Callables computing ``x @ w.T (+ b)`` by each route bertfeat's CPU path uses: a plain ``linear`` and, where
    torch has it and oneDNN accepts the dtype on this CPU, oneDNN's packed weights. A route may still raise when
    called (a kernel missing at this size): callers time the ones that run."""
    import torch
    import torch.nn.functional as F

    routes = [lambda: F.linear(x, w, b)]
    if (x.device.type == "cpu" and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")):
        try:
            packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
            routes.append(lambda: torch.ops.mkldnn._linear_pointwise(x, packed, b, "none", [], ""))
        except RuntimeError:  # oneDNN refuses this dtype on this CPU (bf16 without AVX-512/AVX-NE-CONVERT)
            pass
    return routes


@functools.lru_cache(maxsize=64)
def matmul_rate(dtype: str, hidden: int = 384, intermediate: int = 1536, tokens: int = 256,
                threads: int | None = None, seconds: float = 0.08) -> float | None:
    """Measured GFLOP/s of a feed-forward product of the model's own shape ((tokens, hidden) x (hidden,
    intermediate)) in ``dtype`` on the CPU, with torch's current threads; None if this CPU cannot run it.

    The best of the routes bertfeat's CPU path uses (a plain ``linear`` and, where torch has it, oneDNN's packed
    weights) after one warm-up call, timed for about ``seconds``. Measured once per process and shape, so a few
    tenths of a second at most. ``threads`` is part of the cache key only: pass torch's count.
    """
    return _measured_rate(dtype, hidden, intermediate, tokens, seconds)


def _measured_rate(dtype: str, hidden: int, intermediate: int, tokens: int, seconds: float) -> float | None:
    """:func:`matmul_rate`'s measurement, each time it is called (the cache is :func:`matmul_rate`'s; mutmut, which
    scores this module, mutates no decorated function)."""
    import torch

    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, hidden, generator=gen).to(dt)
    w = torch.randn(intermediate, hidden, generator=gen).to(dt)
    b = torch.zeros(intermediate, dtype=dt)
    flops = 2.0 * tokens * hidden * intermediate
    best = None
    with torch.inference_mode():
        for run in product_routes(x, w, b):
            try:
                run()
            except RuntimeError:
                continue
            n, start = 0, time.perf_counter()
            fastest = float("inf")
            while n < 2 or time.perf_counter() - start < seconds:
                t = time.perf_counter()
                run()
                fastest = min(fastest, time.perf_counter() - t)
                n += 1
            rate = flops / fastest / 1e9
            best = rate if best is None else max(best, rate)
    return best


def dtype_rates(hidden: int = 384, intermediate: int = 1536, dtypes=("float32", "bfloat16")) -> dict[str, float | None]:
    """:func:`matmul_rate` of each dtype at the current thread count: ``{"float32": GFLOP/s, ...}``."""
    import torch

    threads = torch.get_num_threads()
    return {d: matmul_rate(d, hidden, intermediate, threads=threads) for d in dtypes}


def machine_report(hidden: int = 384, intermediate: int = 1536) -> dict:
    """What decides speed here, for ``bertfeat info``, the benchmarks and the CLI manifest: CPU model, instruction
    sets, cores and threads, measured float32 / bfloat16 / float16 product rates at the model's shapes, which
    dtype is fastest on this machine, which kernels the CPU forward pass tries first, and whether Rosetta translates
    this Python (:func:`bertfeat.os_cpu.under_rosetta`)."""
    import torch

    flags, native = _listed_facts()
    rates = dtype_rates(hidden, intermediate, ("float32", "bfloat16", "float16"))
    fastest = max((d for d in rates if rates[d]), key=lambda d: rates[d])
    return {
        "cpu": cpu_model(),
        "cpu_id": cpu_id(),
        "arch": platform.machine(),
        "flags": flags,
        "torch_cpu_capability": _torch_capability(),
        "native_dtypes": native,
        "allotted_cores": allotted_cores(),
        "threads": torch.get_num_threads(),
        "matmul_gflops": {d: (float(f"{r:.3g}") if r else None) for d, r in rates.items()},
        "matmul_shape": [256, hidden, intermediate],
        "fastest_dtype": fastest,
        "cpu_kernels": _kernel_order(),
        "torch": torch.__version__,
        "rosetta": os_cpu.under_rosetta(),
    }


def _listed_facts() -> tuple[list[str] | None, list[str] | None]:
    """The report's ``flags`` and ``native_dtypes``: None, not known, where the OS lists no instruction sets (Windows),
    rather than an empty list said of a CPU that may have them all."""
    flags = cpu_flags()
    if not flags_listed():
        return None, None
    return flags, native_dtypes(flags)


def _kernel_order() -> str:
    """Which arrangement of the CPU forward pass this machine tries first, and why (``bertfeat.fastbert``)."""
    from bertfeat.fastbert import preferred_kernels

    first, why = preferred_kernels()
    return f"{first} ({why})"


def _torch_capability() -> str | None:
    import torch

    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return None


def gflops_text(rate: float | None) -> str:
    """A measured rate as people read it: whole GFLOP/s from 10 up, two significant digits below (a tiny model's
    0.43 is not shown as 0), ``n/a`` where the dtype did not run."""
    if rate is None:
        return "n/a"
    return f"{rate:.0f}" if rate >= 10 else f"{rate:.2g}"


def slow_dtype_message(dtype: str, rates: dict[str, float | None]) -> str | None:
    """The warning for a reduced precision that is slower than float32 here, or None when it is not slower."""
    low, fp32 = rates.get(dtype), rates.get("float32")
    if dtype == "float32" or not fp32 or (low is not None and low >= fp32):
        return None
    flags = cpu_flags()
    # the instructions of this CPU's kind (an ARM CPU is not told of x86's)
    arm = platform.machine().lower().startswith(("arm", "aarch"))
    needs = [f for f in NATIVE.get(dtype, ()) if f in (ARM_FLAGS if arm else X86_FLAGS)]
    missing = f"no {needs[0]}" if len(needs) == 1 else f"none of {'/'.join(needs)}"
    # where the OS lists no instruction sets (Windows), nothing is known of them: nothing is said
    native = ("" if any(f in flags for f in NATIVE.get(dtype, ())) or not flags_listed() or not needs
              else f" (this CPU has {missing})")
    low_text = f"{gflops_text(low)} GFLOP/s" if low else "not runnable"
    return (
        f"dtype={dtype!r} runs slower than float32 on this CPU{native}: measured {low_text} against {gflops_text(fp32)} "
        "GFLOP/s "
        f"for float32 on {cpu_model()} with {_threads()} threads. Continuing in {dtype} as asked (the dtype is part "
        f"of the recipe and the cache key); pass dtype='float32' for the faster mode here. `bertfeat info` shows "
        "these rates."
    )


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def run_facts(hidden: int | None = None, intermediate: int | None = None) -> dict:
    """The machine facts a CLI manifest records in its timing section: CPU, instruction sets, native dtypes, cores,
    the CPU forward pass's kernel order, and, when this process ran the model (torch is loaded), torch's threads and
    the measured float32 / bfloat16 product rates at the model's feed-forward shape, ``hidden`` x ``intermediate``
    (4 x ``hidden`` where that is not known); ``"rosetta": True`` where Rosetta translates this Python, as
    ``bertfeat info`` says (left out elsewhere). A run answered from the cache never imports torch for this."""
    import sys

    flags, native = _listed_facts()
    facts = {"cpu": cpu_model(), "cpu_id": cpu_id(), "arch": platform.machine(), "flags": flags,
             "native_dtypes": native, "allotted_cores": allotted_cores(), "cpu_kernels": _kernel_order()}
    if os_cpu.under_rosetta():  # the reason such a run is slow, in the manifest a bug report carries
        facts["rosetta"] = True
    if "torch" in sys.modules and hidden:
        rates = dtype_rates(int(hidden), int(intermediate or 4 * int(hidden)), ("float32", "bfloat16"))
        facts["threads"] = _threads()
        facts["matmul_gflops"] = {d: (float(f"{r:.3g}") if r else None) for d, r in rates.items()}
    return facts
