"""What :mod:`bertfeat.hardware` reports and measures, read by value: the cores a process may use, the thread counts it
sets and shares out, the CPU's name, id and instruction sets, the matrix-product rates (a fake clock times fake
routes, so a rate is an exact number), the bf16-is-slower verdict and its warning word for word, and the facts
``bertfeat info`` and a job's manifest record.

The measurements on this machine's own CPU are in ``test_ladder.py``; these pin each step, so that the mutation tests
(``scripts/mutants.sh hardware``) have a test for each.
"""

from __future__ import annotations

import os
import platform
import sys
import threading
import types

import pytest

from bertfeat import fork_safe, hardware, os_cpu

torch = pytest.importorskip("torch")


@pytest.fixture
def torch_threads():
    """torch's thread count (and the count new threads start with) set back after the test."""
    before = torch.get_num_threads()
    yield before
    setter = threading.Thread(target=torch.set_num_threads, args=(before,))
    setter.start()
    setter.join()
    torch.set_num_threads(before)


def _new_thread_count() -> int:
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    return seen[0]


# -- cores and threads ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("quota, cores", [(None, 3), (10.0, 3), (3.0, 3), (2.01, 3), (2.0, 2), (1.2, 2), (0.3, 1)])
def test_allotted_cores_are_this_process_affinity_capped_by_the_quota_rounded_up(monkeypatch, quota, cores):
    asked = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: asked.append(pid) or {0, 5, 7}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(hardware, "cgroup_cpu_quota", lambda: quota)
    assert hardware.allotted_cores() == cores
    assert asked == [0]  # this process's own affinity


@pytest.mark.parametrize("slurm, cap", [("2", 2), ("3", 3), ("16", 16), ("1", 1), (" 2\n", 2), ("0", None),
                                        ("-4", None), ("", None), ("two", None), ("2(x3)", None)])
def test_a_slurm_tasks_cpus_cap_the_cores_where_slurm_set_no_affinity(monkeypatch, slurm, cap):
    """A Slurm job asked for ``--cpus-per-task=2`` on a node whose Slurm confines tasks by neither cgroup nor
    affinity sees every core: SLURM_CPUS_PER_TASK is its share. Not a positive whole number: no cap."""
    cap = cap or 1000
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5, 7}, raising=False)
    monkeypatch.setattr(hardware, "cgroup_cpu_quota", lambda: None)
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", slurm)
    assert hardware.allotted_cores() == min(3, cap)
    monkeypatch.setattr(hardware, "cgroup_cpu_quota", lambda: 1.5)  # the tightest of the three binds
    assert hardware.allotted_cores() == min(2, cap)
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # macOS
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(hardware, "cgroup_cpu_quota", lambda: None)
    assert hardware.allotted_cores() == min(64, cap)


@pytest.mark.parametrize("count, quota, cores", [(6, None, 6), (None, None, 1), (6, 2.5, 3), (None, 4.0, 1)])
def test_without_an_affinity_call_the_cores_are_the_machines(monkeypatch, count, quota, cores):
    """macOS has no sched_getaffinity: os.cpu_count(), or one where even that is unknown."""
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: count)
    monkeypatch.setattr(hardware, "cgroup_cpu_quota", lambda: quota)
    assert hardware.allotted_cores() == cores


def _cgroups(tmp_path, monkeypatch, files: dict, membership: str | None):
    for name, text in files.items():
        (tmp_path / "cg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cg" / name).write_text(text + "\n")
    (tmp_path / "cg").mkdir(exist_ok=True)
    if membership is not None:
        (tmp_path / "self").write_text(membership)
    monkeypatch.setattr(hardware, "CGROUP_ROOT", str(tmp_path / "cg"))
    monkeypatch.setattr(hardware, "SELF_CGROUP", str(tmp_path / "self"))


@pytest.mark.parametrize("files, membership, quota", [
    # v1 mounted as "cpuacct,cpu" (the other order of the joined controllers)
    ({"cpuacct,cpu/job/cpu.cfs_quota_us": "150000", "cpuacct,cpu/job/cpu.cfs_period_us": "100000"},
     "3:cpuacct,cpu:/job\n", 1.5),
    ({"cpuacct/job/cpu.cfs_quota_us": "150000", "cpuacct/job/cpu.cfs_period_us": "100000"},
     "3:cpuacct:/job\n", None),  # cpuacct alone accounts, it does not limit
    # a cpuset line after the cpu one is not the cpu controller's
    ({"cpu/mine/cpu.cfs_quota_us": "300000", "cpu/mine/cpu.cfs_period_us": "100000"},
     "4:cpu:/mine\n5:cpuset:/other\n", 3.0),
    # both hierarchies (a hybrid host): the tightest of the two
    ({"cpu.max": "250000 100000", "cpu/cpu.cfs_quota_us": "150000", "cpu/cpu.cfs_period_us": "100000"},
     "0::/\n4:cpu:/\n", 1.5),
    ({"cpu.max": "120000 100000", "cpu/cpu.cfs_quota_us": "150000", "cpu/cpu.cfs_period_us": "100000"},
     "0::/\n4:cpu:\n", 1.2),  # an empty path is the root
    # "." and ".." in the membership are not walked above the mount
    ({"a/cpu.max": "200000 100000", "cpu.max": "max 100000"}, "0::/./a/../a\n", 2.0),
    ({"cpu.max": "50000 100000"}, "0::\n", 0.5),
    ({"job:1/cpu.max": "150000 100000"}, "0::/job:1\n", 1.5),  # a colon in the path is the path's
    ({"cpu/a:b/cpu.cfs_quota_us": "250000", "cpu/a:b/cpu.cfs_period_us": "100000"}, "4:cpu:/a:b\n", 2.5),
    ({"cpu.max": "50000 100000"}, None, 0.5),  # no /proc/self/cgroup: the mount's root
    # what cannot be read as a quota is no quota
    ({"cpu.max": "150000 0"}, "0::/\n", None),
    ({"cpu.max": "150000"}, "0::/\n", None),
    ({"cpu.max": "lots 100000"}, "0::/\n", None),
    ({"cpu.max": ""}, "0::/\n", None),
    ({"cpu/cpu.cfs_quota_us": "0", "cpu/cpu.cfs_period_us": "100000"}, "4:cpu:/\n", None),
    ({"cpu/cpu.cfs_quota_us": "150000", "cpu/cpu.cfs_period_us": "0"}, "4:cpu:/\n", None),
    ({"cpu/cpu.cfs_quota_us": "150000", "cpu/cpu.cfs_period_us": "-5"}, "4:cpu:/\n", None),
    ({"cpu/cpu.cfs_quota_us": "150000"}, "4:cpu:/\n", None),
    ({"cpu/cpu.cfs_quota_us": "", "cpu/cpu.cfs_period_us": "100000"}, "4:cpu:/\n", None),
    ({"cpu/cpu.cfs_quota_us": "x", "cpu/cpu.cfs_period_us": "100000"}, "4:cpu:/\n", None),
])
def test_the_quota_of_every_cgroup_layout_and_none_where_it_is_not_a_number(tmp_path, monkeypatch, files, membership,
                                                                           quota):
    _cgroups(tmp_path, monkeypatch, files, membership)
    assert hardware.cgroup_cpu_quota() == quota


def test_a_cgroup_and_each_parent_up_to_the_mount():
    assert hardware._up_to("/m", "/a/b/c") == ["/m/a/b/c", "/m/a/b", "/m/a", "/m"]
    assert hardware._up_to("/m", "/") == ["/m"]
    assert hardware._up_to("/m", "a/./../b/") == ["/m/a/b", "/m/a", "/m"]


def test_set_threads_sets_the_count_given_or_the_allotted_cores(monkeypatch, torch_threads):
    monkeypatch.setattr(hardware, "allotted_cores", lambda: 1)
    assert hardware.set_threads() == 1 and torch.get_num_threads() == 1
    assert hardware.set_threads("2") == 2 and torch.get_num_threads() == 2
    assert hardware.set_threads(0) == 0 and torch.get_num_threads() == 1  # never below one
    assert hardware._threads() == 1


def test_threads_are_limited_to_the_allotted_cores_only_when_more(monkeypatch, torch_threads):
    torch.set_num_threads(3)
    monkeypatch.setattr(hardware, "allotted_cores", lambda: 3)
    hardware.limit_threads_to_allotted_cores()
    assert torch.get_num_threads() == 3
    monkeypatch.setattr(hardware, "allotted_cores", lambda: 2)
    hardware.limit_threads_to_allotted_cores()
    assert torch.get_num_threads() == 2
    torch.set_num_threads(1)  # a lower count (OMP_NUM_THREADS, the user's own) is kept
    monkeypatch.setattr(hardware, "set_threads", lambda n=None: pytest.fail("a lower count was raised"))
    hardware.limit_threads_to_allotted_cores()
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize("threads, workers", [(0, 1), (1, 1), (3, 3), (4, 4), (5, 4), (64, 4)])
def test_cpu_workers_one_per_thread_up_to_four(threads, workers):
    assert hardware._cpu_workers(threads) == workers


@pytest.mark.parametrize("threads, workers, share", [(4, 2, 2), (7, 2, 3), (2, 4, 1), (1, 1, 1), (8, 3, 2)])
def test_each_worker_shares_the_threads_at_least_one(threads, workers, share):
    assert hardware._share(threads, workers) == share


def test_overlapping_calls_share_the_first_calls_count_and_the_last_sets_it_back(monkeypatch, torch_threads):
    torch.set_num_threads(4)
    assert hardware._SHARED["calls"] == 0  # its "threads": the count the last calls shared out, whatever ran before
    with hardware.threads_shared_by(2) as outer:
        assert outer == (2, 4) and hardware._SHARED == {"calls": 1, "threads": 4}
        torch.set_num_threads(1)  # as a worker of the first call does
        with hardware.threads_shared_by(3) as inner:
            assert inner == (1, 4) and hardware._SHARED == {"calls": 2, "threads": 4}  # 4 // 3, not 1 // 3
        assert hardware._SHARED == {"calls": 1, "threads": 4}
        assert torch.get_num_threads() == 1  # not set back while a call runs
    assert hardware._SHARED["calls"] == 0
    assert _new_thread_count() == 4
    assert torch.get_num_threads() == 1  # the calling thread's own count is left as it is

    torch.set_num_threads(4)
    setters = []
    monkeypatch.setattr(torch, "set_num_threads", lambda n: setters.append((n, threading.current_thread().name)))
    with pytest.raises(KeyError):
        with hardware.threads_shared_by(2):
            raise KeyError("a failed call ends too")
    assert setters == [(4, "bertfeat-threads")] and hardware._SHARED["calls"] == 0


def test_a_forked_child_starts_with_no_call_running():
    hardware._SHARED.update(calls=2, threads=8)
    try:
        assert hardware._SHARED_LOCK.acquire(blocking=False)  # held, as by a parent's thread at the fork
        hardware._SHARED_LOCK._renew()  # what the ForkSafeLock hook does in the child
        assert hardware._SHARED == {"calls": 0, "threads": 0}
        assert hardware._SHARED_LOCK.acquire(blocking=False)  # the child's lock is free
        hardware._SHARED_LOCK.release()
    finally:
        hardware._SHARED.update(calls=0, threads=0)


def test_a_forked_child_of_a_process_that_ran_torch_runs_torch_on_one_thread_once(monkeypatch, torch_threads):
    """In a child forked after torch ran (its pid differs from the one bertfeat last ran torch in, or the fork hook
    saw torch imported before any run: bertfeat.fork_safe.forked_after_torch), the first CPU load or call sets one
    thread, and only that one."""
    import os as _os

    torch.set_num_threads(2)
    monkeypatch.setattr(hardware, "_TORCH_PID", _os.getpid())
    assert hardware.one_thread_in_a_forked_child() is False and torch.get_num_threads() == 2  # the same process
    monkeypatch.setattr(hardware, "_TORCH_PID", _os.getpid() + 1)  # the parent's pid: a forked child
    assert hardware.one_thread_in_a_forked_child() is True and torch.get_num_threads() == 1
    torch.set_num_threads(2)  # a count the user sets in the child afterwards is theirs
    assert hardware.one_thread_in_a_forked_child() is False and torch.get_num_threads() == 2
    monkeypatch.setattr(hardware, "_TORCH_PID", None)
    monkeypatch.setattr(fork_safe, "forked_after_torch", True)  # the fork hook's mark: torch imported before it
    assert hardware.one_thread_in_a_forked_child() is True
    assert torch.get_num_threads() == 1
    torch.set_num_threads(2)
    assert hardware.one_thread_in_a_forked_child() is False and torch.get_num_threads() == 2  # once
    monkeypatch.setattr(hardware, "_TORCH_PID", None)
    monkeypatch.setattr(fork_safe, "forked_after_torch", False)
    assert hardware.one_thread_in_a_forked_child() is False  # torch's first run in this process


def test_onednn_kernel_cache_is_capped_at_64_unless_set(monkeypatch):
    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    hardware._bound_onednn_cache()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "64"
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "512")
    hardware._bound_onednn_cache()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "512"


# -- what the CPU is -----------------------------------------------------------------------------------------------

X86 = ("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
       "model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\nflags\t\t: fpu avx2 fma avx512f amx_bf16\n\n"
       "processor\t: 1\nmodel name\t: Another\n")


@pytest.mark.parametrize("cpuinfo, name", [
    (X86, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"),
    ("Model name\t: Cortex-A72\n", "Cortex-A72"),
    ("Processor\t: ARMv7\nHardware\t: BCM2835\n", "BCM2835"),
    ("model name\t: Name: with a colon \n", "Name: with a colon"),
])
def test_the_cpu_is_named_from_cpuinfo(monkeypatch, cpuinfo, name):
    assert hardware.cpu_model(cpuinfo) == name
    monkeypatch.setattr(hardware, "_cpuinfo_text", lambda: cpuinfo)
    assert hardware.cpu_model() == name


def test_without_a_name_in_cpuinfo_the_cpu_is_named_by_the_os(monkeypatch):
    import subprocess

    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "processor", lambda: "aarch64")
    assert hardware.cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\n") == "aarch64"
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert hardware.cpu_model("") == "unknown"
    # macOS: sysctl's brand string, asked for with a timeout
    asked = []

    def sysctl(argv, **kwargs):
        asked.append((argv, kwargs))
        return types.SimpleNamespace(stdout="Apple M2 Pro\n")

    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(subprocess, "run", sysctl)
    assert hardware.cpu_model("") == "Apple M2 Pro"
    assert asked == [(["sysctl", "-n", "machdep.cpu.brand_string"],
                      {"capture_output": True, "text": True, "timeout": 5})]
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: types.SimpleNamespace(stdout=" \n"))
    assert hardware.cpu_model("") == "unknown"
    for error in (OSError("no sysctl"), subprocess.TimeoutExpired("sysctl", 5)):
        def fails(argv, error=error, **kw):
            raise error

        monkeypatch.setattr(subprocess, "run", fails)
        monkeypatch.setattr(platform, "processor", lambda: "i386")
        assert hardware.cpu_model("") == "i386"


# a Graviton3's /proc/cpuinfo (one of its cores): no "model name", the core named by its implementer and part codes
GRAVITON3 = ("processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp "
             "asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc "
             "flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng\nCPU implementer\t: 0x41\n"
             "CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd40\nCPU revision\t: 1\n\n"
             "processor\t: 1\nBogoMIPS\t: 2100.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd40\n")


@pytest.mark.parametrize("implementer, part, name", [
    ("0x41", "0xd0c", "ARM Neoverse-N1"),  # Graviton2, Ampere Altra
    ("0x41", "0xd40", "ARM Neoverse-V1"),  # Graviton3
    ("0x41", "0xd4f", "ARM Neoverse-V2"),  # Graviton4, NVIDIA Grace
    ("0x41", "0xd08", "ARM Cortex-A72"),  # Raspberry Pi 4
    ("0x41", "0xd0b", "ARM Cortex-A76"),  # Raspberry Pi 5
    ("0xc0", "0xac3", "Ampere Ampere-1"),
    ("0x41", "0xfff", "ARM part 0xfff"),  # a part this table does not know yet
    ("0x99", "0x001", "implementer 0x99 part 0x001"),
])
def test_an_arm_core_is_named_from_its_implementer_and_part(monkeypatch, implementer, part, name):
    """ARM's /proc/cpuinfo has no "model name": `bertfeat info`, every manifest and the slow-dtype warning named a
    Graviton3 "aarch64" (platform.processor()), as every other ARM server, and its cpu_id was null, so two
    generations of ARM machine could not be told apart in their manifests."""
    monkeypatch.setattr(platform, "processor", lambda: "aarch64")
    text = GRAVITON3.replace("0x41", implementer).replace("0xd40", part)
    assert hardware.cpu_model(text) == name


def test_an_arm_cores_id_is_its_implementer_part_variant_and_revision():
    assert hardware.cpu_id(GRAVITON3) == "implementer 0x41 part 0xd40 r1p1"
    assert hardware.cpu_id("CPU implementer\t: 0x41\nCPU part\t: 0xd0c\n") == "implementer 0x41 part 0xd0c"
    assert hardware.cpu_id("processor\t: 0\nBogoMIPS\t: 50.00\n") is None


def test_windows_names_the_cpu_from_its_registry_and_its_id_from_the_processor_identifier(monkeypatch):
    """Windows has no /proc/cpuinfo: `bertfeat info`, every manifest and the slow-dtype warning named the CPU by
    platform.processor()'s identifier ("Intel64 Family 6 Model 106 Stepping 6, GenuineIntel"), and its cpu_id was
    null, where the same CPU under Linux reads "GenuineIntel family 6 model 106"."""
    opened = []

    class Key:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def open_key(root, path):
        opened.append((root, path))
        return Key()

    def query(key, name):  # as Windows answers: the value of the key opened, its name read in any case
        if not isinstance(key, Key) or name.lower() != "processornamestring":
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz  ", 1

    winreg = types.SimpleNamespace(HKEY_LOCAL_MACHINE="HKLM", OpenKey=open_key, QueryValueEx=query)
    monkeypatch.setitem(sys.modules, "winreg", winreg)
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    monkeypatch.setattr(platform, "processor", lambda: "Intel64 Family 6 Model 106 Stepping 6, GenuineIntel")
    assert hardware.cpu_model("") == "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"
    assert opened == [("HKLM", r"HARDWARE\DESCRIPTION\System\CentralProcessor\0")]
    assert hardware.cpu_id("") == "GenuineIntel family 6 model 106"
    monkeypatch.setattr(platform, "processor", lambda: "AMD64 Family 25 Model 1 Stepping 1, AuthenticAMD")
    assert hardware.cpu_id("") == "AuthenticAMD family 25 model 1"
    monkeypatch.setattr(platform, "processor", lambda: "ARMv8 (64-bit) Family 8 Model D4B Revision 0, Qualcomm")
    assert hardware.cpu_id("") is None  # an ARM Windows machine's identifier is no x86 family and model

    def missing(root, path):
        raise OSError("no such key")

    monkeypatch.setattr(winreg, "OpenKey", missing)
    monkeypatch.setattr(platform, "processor", lambda: "Intel64 Family 6 Model 106 Stepping 6, GenuineIntel")
    assert hardware.cpu_model("") == "Intel64 Family 6 Model 106 Stepping 6, GenuineIntel"  # the identifier, then
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    assert hardware.cpu_id("") is None  # only Windows' identifier is read so


@pytest.mark.parametrize("system, machine, answer, translated", [
    ("Darwin", "x86_64", "1\n", True),  # an x86_64 Python (an old Anaconda) under Rosetta on Apple silicon
    ("Darwin", "x86_64", "0\n", False),  # an Intel Mac
    ("Darwin", "x86_64", OSError("no sysctl"), False),
    ("Darwin", "arm64", None, False),  # native: not asked
    ("Linux", "x86_64", None, False),
])
def test_a_python_running_under_rosetta_is_told_apart(monkeypatch, system, machine, answer, translated):
    import subprocess

    asked = []

    def run(argv, **kwargs):
        asked.append(argv)
        if answer is None:
            pytest.fail("sysctl asked where no Rosetta can run")
        if isinstance(answer, BaseException):
            raise answer
        return _as_run_answers(answer, **kwargs)

    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(os_cpu, "_ROSETTA", [], raising=False)
    assert os_cpu.under_rosetta() is translated and os_cpu.under_rosetta() is translated
    assert asked == ([] if answer is None else [["sysctl", "-n", "sysctl.proc_translated"]])  # once per process


def test_cpu_id_of_an_incomplete_block():
    assert hardware.cpu_id("cpu family\t: 25\n") == "unknown family 25 model ?"
    assert hardware.cpu_id("vendor_id : AuthenticAMD\ncpu family : 26\nmodel : 2\n") == "AuthenticAMD family 26 model 2"
    assert hardware.cpu_id("\n\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t: 17\n") == (
        "AuthenticAMD family 25 model 17")  # blank lines before the first block
    assert hardware.cpu_id("") is None
    # a value holding a colon (a VM's model name) is read whole, and only the first processor's block is read
    kvm = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz: KVM\n"
           "cpu family\t: 6\nmodel\t\t: 85\n")
    assert hardware.cpu_id(kvm) == "GenuineIntel family 6 model 85"
    assert hardware.cpu_id("processor\t: 0\nvendor_id\t: X\n\nprocessor\t: 1\ncpu family\t: 6\nmodel\t: 1\n") is None
    assert hardware.cpu_id("vendor_id\t: X\na line without a colon\ncpu family\t: 6\nmodel\t: 1\n") == "X family 6 model 1"


def test_cpu_flags_and_cpu_id_read_this_machines_cpuinfo():
    text = hardware._cpuinfo_text()
    assert hardware.cpu_flags() == hardware.cpu_flags(text)
    assert hardware.cpu_id() == hardware.cpu_id(text)
    assert hardware.native_dtypes() == hardware.native_dtypes(hardware.cpu_flags(text))
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            assert text == f.read()


def test_cpuinfo_that_cannot_be_read_is_empty(monkeypatch):
    import builtins

    real_open = builtins.open

    def refuse(path, *args, **kwargs):
        if path == "/proc/cpuinfo":
            raise PermissionError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refuse)
    assert hardware._cpuinfo_text() == ""


# what `sysctl hw.optional` (Apple silicon) and `sysctl machdep.cpu.features machdep.cpu.leaf7_features` (an Intel
# Mac) print, cut to the keys that matter and a few beside them
M1_SYSCTL = ("hw.optional.arm.FEAT_FP16: 1\nhw.optional.arm.FEAT_BF16: 0\nhw.optional.arm.FEAT_I8MM: 0\n"
             "hw.optional.arm.FEAT_DotProd: 1\nhw.optional.AdvSIMD: 1\nhw.optional.neon: 1\nhw.optional.neon_fp16: 1\n"
             "hw.optional.arm.FEAT_SME: 0\n")
M2_SYSCTL = M1_SYSCTL.replace("FEAT_BF16: 0", "FEAT_BF16: 1").replace("FEAT_I8MM: 0", "FEAT_I8MM: 1")
M4_SYSCTL = M2_SYSCTL.replace("FEAT_SME: 0", "FEAT_SME: 1")
MACOS_11_M1_SYSCTL = "hw.optional.neon: 1\nhw.optional.neon_hpfp: 1\nhw.optional.neon_fp16: 1\n"  # no FEAT_ keys yet
INTEL_MAC_SYSCTL = ("machdep.cpu.features: FPU VME DE PSE TSC MSR SSE SSE2 SSE3 PCLMULQDQ SSSE3 FMA CX16 SSE4.1 SSE4.2 "
                    "POPCNT AES XSAVE OSXSAVE AVX1.0 RDRAND F16C\nmachdep.cpu.leaf7_features: RDWRFSGS BMI1 AVX2 SMEP "
                    "BMI2 ERMS AVX512F AVX512DQ RDSEED ADX SMAP AVX512IFMA CLFSOPT AVX512CD AVX512BW AVX512VL "
                    "AVX512VBMI AVX512VNNI\n")


def _as_run_answers(stdout, capture_output=False, text=False, timeout=None, **kwargs):
    """What subprocess.run gives back for a command that prints ``stdout``, asked as bertfeat asks (mutation
    testing hunt, 2026-11-27, session 14: the fakes gave the text whatever was asked, so sysctl's answer asked
    without capture_output or text, which crashes `bertfeat info` on a Mac, or without a timeout, which a sysctl that
    never answers hangs, passed): the text only where it is captured, and as bytes unless ``text``."""
    assert timeout is not None, "a command that never answers would hang the caller"
    return types.SimpleNamespace(stdout=(stdout if text else stdout.encode()) if capture_output else None,
                                 returncode=0)


def _mac(monkeypatch, machine, sysctl):
    """A Mac (``machine``: arm64 or x86_64) whose sysctl prints ``sysctl`` (an exception: sysctl fails); returns the
    commands run."""
    import subprocess

    asked = []

    def run(argv, **kwargs):
        asked.append(argv)
        if isinstance(sysctl, BaseException):
            raise sysctl
        return _as_run_answers(sysctl, **kwargs)

    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(os_cpu, "_SYSCTL", {})
    return asked


@pytest.mark.parametrize("sysctl, flags", [
    (M1_SYSCTL, ["asimd", "asimdhp", "fphp"]),  # the M1 has no bf16 or i8mm: the M2 brought them
    (MACOS_11_M1_SYSCTL, ["asimd", "asimdhp", "fphp"]),
    (M2_SYSCTL, ["asimd", "asimdhp", "fphp", "bf16", "i8mm"]),
    (M4_SYSCTL, ["asimd", "asimdhp", "fphp", "bf16", "i8mm", "sme"]),
], ids=["M1", "M1 on macOS 11", "M2", "M4"])
def test_apple_silicon_lists_the_instruction_sets_sysctl_gives_and_an_m1_has_no_bf16(monkeypatch, sysctl, flags):
    """An M1 was said to have bf16 and i8mm, assumed of every M-series core: `bertfeat info` and every manifest
    said it multiplies bfloat16 natively, and a bfloat16 measured slower than float32 there was not told why."""
    asked = _mac(monkeypatch, "arm64", sysctl)
    assert hardware.cpu_flags("") == flags and hardware.flags_listed("") is True
    assert hardware.cpu_flags("Features\t: fp asimd\n") == ["asimd"]  # a cpuinfo (Asahi Linux) is read as on Linux
    assert hardware.native_dtypes(flags) == (["float32", "bfloat16", "float16"] if "bf16" in flags
                                             else ["float32", "float16"])
    assert asked == [["sysctl", "hw.optional"]]  # asked once per process
    monkeypatch.setattr(hardware, "_cpuinfo_text", lambda: "")
    monkeypatch.setattr(hardware, "cpu_model", lambda cpuinfo=None: "Apple M1")
    monkeypatch.setattr(hardware, "_threads", lambda: 8)
    message = hardware.slow_dtype_message("bfloat16", {"float32": 200.0, "bfloat16": 40.0})
    # an ARM CPU is told of ARM's instruction, not of x86's too ("none of avx512_bf16/amx_bf16/avx_ne_convert/bf16")
    assert message.startswith("dtype='bfloat16' runs slower than float32 on this CPU" + (
        " (this CPU has no bf16): " if "bf16" not in flags else ": "))
    text = hardware.slow_dtype_message("float16", {"float32": 200.0, "float16": 40.0})
    assert text.startswith("dtype='float16' runs slower than float32 on this CPU: ")  # asimdhp and fphp, it has them
    monkeypatch.setattr(hardware, "cpu_flags", lambda cpuinfo=None: ["asimd"])
    text = hardware.slow_dtype_message("float16", {"float32": 200.0, "float16": 40.0})
    assert text.startswith("dtype='float16' runs slower than float32 on this CPU (this CPU has none of asimdhp/fphp): ")


def test_an_intel_mac_lists_its_instruction_sets_through_sysctl(monkeypatch):
    """An Intel Mac's AVX-512 (iMac Pro, Mac Pro 2019, the 2020 Ice Lake laptops) was not seen: its kernel order was
    the AVX2 one, plain torch ops first."""
    from bertfeat import fastbert

    asked = _mac(monkeypatch, "x86_64", INTEL_MAC_SYSCTL)
    monkeypatch.delenv("BERTFEAT_CPU_KERNELS", raising=False)
    assert hardware.cpu_flags("") == ["avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq",
                                      "avx512_vnni"]
    assert hardware.flags_listed("") is True
    monkeypatch.setattr(hardware, "_cpuinfo_text", lambda: "")
    assert fastbert.preferred_kernels() == ("onednn", "AVX-512: oneDNN's fused kernels first")
    assert asked == [["sysctl", "machdep.cpu.features", "machdep.cpu.leaf7_features"]]
    _mac(monkeypatch, "x86_64", INTEL_MAC_SYSCTL.replace(" AVX512F AVX512DQ", "").replace(" AVX512CD AVX512BW "
                                                                                           "AVX512VL", ""))
    assert fastbert.preferred_kernels() == ("torch", "x86 without AVX-512: plain torch ops first")


@pytest.mark.parametrize("machine", ["arm64", "x86_64"])
def test_a_mac_whose_sysctl_does_not_answer_lists_nothing(monkeypatch, machine):
    import subprocess

    for answer in (OSError("no sysctl"), subprocess.TimeoutExpired("sysctl", 5), "", "sysctl: unknown oid\n"):
        _mac(monkeypatch, machine, answer)
        assert hardware.cpu_flags("") == [] and hardware.flags_listed("") is False


def test_flags_are_read_from_flags_and_features_lines_only():
    text = "model name\t: avx2 fma\nflags\t\t: fma\nFeatures\t: bf16 asimd\nflagsx: sve\n"
    assert hardware.cpu_flags(text) == ["fma", "asimd", "bf16", "sve"]
    assert hardware.cpu_flags("flags:avx2 f16c\n") == ["avx2", "f16c"]  # no space around the colon
    assert hardware.native_dtypes(["avx2", "fma"]) == ["float32"]
    assert hardware.native_dtypes(["avx_ne_convert"]) == ["float32", "bfloat16"]
    assert hardware.native_dtypes(["fphp"]) == ["float32", "float16"]


# -- the rates and the verdict -------------------------------------------------------------------------------------


def test_product_routes_are_plain_linear_and_onednns_packed_weights_each_computing_the_product(monkeypatch):
    gen = torch.Generator().manual_seed(1)
    x, w, b = torch.randn(5, 8, generator=gen), torch.randn(6, 8, generator=gen), torch.randn(6, generator=gen)
    want = x @ w.T + b
    onednn = (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
              and hasattr(torch.ops.mkldnn, "_linear_pointwise"))
    routes = hardware.product_routes(x, w, b)
    assert len(routes) == (2 if onednn else 1)
    for route in routes:
        torch.testing.assert_close(route(), want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(hardware.product_routes(x, w)[-1](), x @ w.T, atol=1e-5, rtol=1e-5)
    if not onednn:
        return
    meta = torch.empty(5, 8, device="meta")
    assert len(hardware.product_routes(meta, w.to("meta"))) == 1  # oneDNN's routes are the CPU's
    assert len(hardware.product_routes(meta, w)) == 1  # the input's device decides, not the weight's

    def refuse(weight, *args):
        raise RuntimeError("mkldnn_reorder_linear_weight: bf16 path needs the cpu support avx_ne_convert")

    monkeypatch.setattr(torch.ops.mkldnn, "_reorder_linear_weight", refuse)
    assert len(hardware.product_routes(x, w, b)) == 1
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    assert len(hardware.product_routes(x, w, b)) == 1


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now


def fake_routes(clock, *durations, fails_warmup=()):
    """Routes that each take their own sequence of durations (the last repeated), or raise at their warm-up."""
    routes, calls = [], []
    for i, times in enumerate(durations):
        times = list(times)

        def run(i=i, times=times):
            calls.append(i)
            if i in fails_warmup:
                raise RuntimeError("no kernel at this size")
            clock.now += times.pop(0) if len(times) > 1 else times[0]

        routes.append(run)
    return routes, calls


def test_the_rate_is_the_best_call_of_the_best_route_after_a_warm_up(monkeypatch):
    clock = FakeClock()  # durations in powers of two: every sum is exact, so the time limit is met exactly
    monkeypatch.setattr(hardware, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    seen = []
    routes, calls = fake_routes(clock, [1.0, 0.25, 0.125, 0.25], [1.0, 0.5], [0.0625], fails_warmup=(2,))
    monkeypatch.setattr(hardware, "product_routes", lambda x, w, b: seen.append((x, w, b)) or routes)
    rate = hardware._measured_rate("float32", 16, 24, 8, 0.625)
    flops = 2.0 * 8 * 16 * 24
    assert rate == flops / 0.125 / 1e9  # route 0's best call; route 2 never ran
    # timed until `seconds` have passed since the warm-up: 0.25 + 0.125 + 0.25 = 0.625, and 2 x 0.5 = 1.0
    assert calls == [0] * 4 + [1] * 3 + [2]
    [(x, w, b)] = seen
    assert (x.shape, w.shape, b.shape) == ((8, 16), (24, 16), (24,))
    assert x.dtype == w.dtype == b.dtype == torch.float32 and not b.any()
    gen = torch.Generator().manual_seed(0)
    assert torch.equal(x, torch.randn(8, 16, generator=gen)) and torch.equal(w, torch.randn(24, 16, generator=gen))


def test_a_slow_route_is_still_timed_twice(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(hardware, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    routes, calls = fake_routes(clock, [5.0, 2.0, 1.0, 3.0])
    monkeypatch.setattr(hardware, "product_routes", lambda x, w, b: routes)
    rate = hardware._measured_rate("bfloat16", 4, 4, 2, 0.08)
    assert calls == [0, 0, 0] and rate == pytest.approx(2.0 * 2 * 4 * 4 / 1.0 / 1e9)


def test_no_route_that_runs_is_no_rate(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(hardware, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    routes, calls = fake_routes(clock, [0.1], [0.1], fails_warmup=(0, 1))
    monkeypatch.setattr(hardware, "product_routes", lambda x, w, b: routes)
    assert hardware._measured_rate("float16", 4, 4, 2, 0.08) is None and calls == [0, 1]


def test_the_products_run_in_the_dtype_asked_for_in_inference_mode(monkeypatch):
    seen = []

    def routes(x, w, b):
        def run():
            seen.append((x.dtype, w.dtype, b.dtype, torch.is_inference_mode_enabled()))
        return [run]

    monkeypatch.setattr(hardware, "product_routes", routes)
    assert hardware._measured_rate("bfloat16", 4, 4, 2, 0.0) > 0
    assert seen[0] == (torch.bfloat16, torch.bfloat16, torch.bfloat16, True) and len(seen) == 3


def test_a_rate_is_measured_once_per_dtype_shape_and_thread_count(monkeypatch):
    measured = []
    monkeypatch.setattr(hardware, "_measured_rate", lambda *a: measured.append(a) or 50.0 + len(measured))
    hardware.matmul_rate.cache_clear()
    try:
        assert hardware.matmul_rate("float32", 8, 16, threads=2) == 51.0
        assert hardware.matmul_rate("float32", 8, 16, threads=2) == 51.0
        assert hardware.matmul_rate("float32", 8, 16, threads=3) == 52.0
        assert hardware.matmul_rate("bfloat16") == 53.0
        assert measured == [("float32", 8, 16, 256, 0.08), ("float32", 8, 16, 256, 0.08),
                            ("bfloat16", 384, 1536, 256, 0.08)]
        monkeypatch.setattr(torch, "get_num_threads", lambda: 7)
        assert hardware.dtype_rates(8, 16, ("float32", "float16")) == {"float32": 54.0, "float16": 55.0}
        assert measured[-2:] == [("float32", 8, 16, 256, 0.08), ("float16", 8, 16, 256, 0.08)]
        assert hardware.dtype_rates(8, 16, ("float32",)) == {"float32": 54.0}  # threads 7: measured already
        monkeypatch.setattr(torch, "get_num_threads", lambda: 8)
        assert hardware.dtype_rates(8, 16, ("float32",)) == {"float32": 56.0}  # another count: measured again
        assert hardware.dtype_rates() == {"float32": 57.0, "bfloat16": 58.0}  # MiniLM's shape by default
        assert measured[-2:] == [("float32", 384, 1536, 256, 0.08), ("bfloat16", 384, 1536, 256, 0.08)]
    finally:
        hardware.matmul_rate.cache_clear()


def _machine(monkeypatch, rates):
    monkeypatch.setattr(hardware, "cpu_flags", lambda cpuinfo=None: ["avx2", "fma"])
    monkeypatch.setattr(hardware, "cpu_model", lambda cpuinfo=None: "AMD EPYC 7B13")
    monkeypatch.setattr(hardware, "cpu_id", lambda cpuinfo=None: "AuthenticAMD family 25 model 1")
    monkeypatch.setattr(hardware, "allotted_cores", lambda: 6)
    monkeypatch.setattr(hardware, "_threads", lambda: 5)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 5)
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(hardware, "_torch_capability", lambda: "AVX2")
    asked = []
    monkeypatch.setattr(hardware, "dtype_rates", lambda h, i, dtypes: asked.append((h, i, dtypes)) or
                        {d: rates[d] for d in dtypes})
    return asked


def test_the_machine_report_word_for_word(monkeypatch):
    monkeypatch.delenv("BERTFEAT_CPU_KERNELS", raising=False)
    asked = _machine(monkeypatch, {"float32": 123.456, "bfloat16": 0.012345, "float16": None})
    report = hardware.machine_report(32, 37)
    assert asked == [(32, 37, ("float32", "bfloat16", "float16"))]
    assert report == {
        "cpu": "AMD EPYC 7B13", "cpu_id": "AuthenticAMD family 25 model 1", "arch": "x86_64", "flags": ["avx2", "fma"],
        "torch_cpu_capability": "AVX2", "native_dtypes": ["float32"], "allotted_cores": 6, "threads": 5,
        "matmul_gflops": {"float32": 123.0, "bfloat16": 0.0123, "float16": None}, "matmul_shape": [256, 32, 37],
        "fastest_dtype": "float32", "cpu_kernels": "torch (x86 without AVX-512: plain torch ops first)",
        "torch": torch.__version__, "rosetta": False,
    }
    _machine(monkeypatch, {"float32": 100.0, "bfloat16": 291.7, "float16": 150.0})
    report = hardware.machine_report()
    assert report["fastest_dtype"] == "bfloat16" and report["matmul_shape"] == [256, 384, 1536]
    assert report["matmul_gflops"] == {"float32": 100.0, "bfloat16": 292.0, "float16": 150.0}
    _machine(monkeypatch, {"float32": 100.0, "bfloat16": 0.0, "float16": 99.0})
    assert hardware.machine_report()["matmul_gflops"]["bfloat16"] is None


def test_the_run_facts_word_for_word(monkeypatch):
    import sys

    monkeypatch.setenv("BERTFEAT_CPU_KERNELS", "onednn")
    asked = _machine(monkeypatch, {"float32": 46.25, "bfloat16": 0.4321})
    facts = {"cpu": "AMD EPYC 7B13", "cpu_id": "AuthenticAMD family 25 model 1", "arch": "x86_64",
             "flags": ["avx2", "fma"], "native_dtypes": ["float32"], "allotted_cores": 6,
             "cpu_kernels": "onednn (BERTFEAT_CPU_KERNELS=onednn)"}
    assert hardware.run_facts() == facts and hardware.run_facts(0) == facts and asked == []
    assert hardware.run_facts("32") == {**facts, "threads": 5, "matmul_gflops": {"float32": 46.2, "bfloat16": 0.432}}
    assert asked == [(32, 128, ("float32", "bfloat16"))]  # a model whose feed-forward width is not known: 4 x hidden
    assert hardware.run_facts(32, 37)["matmul_gflops"] == {"float32": 46.2, "bfloat16": 0.432}
    assert asked[1:] == [(32, 37, ("float32", "bfloat16"))]  # the model's own width (TinyBERT: 312 and 1200)
    del asked[1:]
    _machine(monkeypatch, {"float32": 46.25, "bfloat16": None})  # bf16 did not run here
    assert hardware.run_facts(32)["matmul_gflops"] == {"float32": 46.2, "bfloat16": None}
    asked = _machine(monkeypatch, {"float32": 46.25, "bfloat16": 0.0})
    assert hardware.run_facts(32)["matmul_gflops"] == {"float32": 46.2, "bfloat16": None}
    monkeypatch.delitem(sys.modules, "torch")  # a run answered from the cache never imported torch
    assert hardware.run_facts(32) == facts and len(asked) == 1


def test_a_manifest_of_a_python_rosetta_translates_says_so_as_info_does(monkeypatch):
    """(found by a review of session 13's merged work, 2026-11-27, session 13) The other operating systems hunt told
    an x86_64 Python on Apple silicon apart in `bertfeat info` (its rosetta: line, the report's "rosetta" key), and
    not in a job's manifest, whose machine entry docs/cli.md calls the facts info prints: a slow run's manifest, the
    one put in a bug report, named an "x86_64" machine and its rates without the reason they are slow."""
    from bertfeat import os_cpu

    _machine(monkeypatch, {"float32": 46.25, "bfloat16": 0.4321})
    monkeypatch.setattr(os_cpu, "under_rosetta", lambda: True)
    assert hardware.run_facts()["rosetta"] is True and hardware.run_facts(32)["rosetta"] is True
    monkeypatch.setattr(os_cpu, "under_rosetta", lambda: False)  # said only where it is so (every other machine)
    assert "rosetta" not in hardware.run_facts() and "rosetta" not in hardware.run_facts(32)


def test_where_the_os_lists_no_instruction_sets_the_report_and_the_facts_say_none_are_known(monkeypatch):
    """On Windows (no /proc/cpuinfo, no sysctl) `bertfeat info` said "instructions: none of those bertfeat looks for"
    and "native dtypes: float32 (this CPU)", and every manifest "flags": [] and "native_dtypes": ["float32"], of CPUs
    that may multiply bfloat16 natively (a Xeon with AMX): the claim session 12 took out of the kernel order and the
    slow-dtype warning. Now null: not known."""
    monkeypatch.delenv("BERTFEAT_CPU_KERNELS", raising=False)
    _machine(monkeypatch, {"float32": 100.0, "bfloat16": 291.7, "float16": 150.0})
    monkeypatch.setattr(hardware, "cpu_flags", lambda cpuinfo=None: [])
    monkeypatch.setattr(hardware, "flags_listed", lambda cpuinfo=None: False)
    monkeypatch.setattr(platform, "machine", lambda: "AMD64")
    report = hardware.machine_report()
    assert report["flags"] is None and report["native_dtypes"] is None
    assert report["fastest_dtype"] == "bfloat16"  # what was measured is said all the same
    assert report["cpu_kernels"] == "torch (x86 whose instruction sets this OS does not list: plain torch ops first)"
    facts = hardware.run_facts()
    assert facts["flags"] is None and facts["native_dtypes"] is None
    # listed, and none of them: an empty list, and float32 alone
    monkeypatch.setattr(hardware, "flags_listed", lambda cpuinfo=None: True)
    assert hardware.machine_report()["flags"] == [] and hardware.run_facts()["native_dtypes"] == ["float32"]


def test_torch_capability_is_torchs_own_or_none(monkeypatch):
    assert hardware._torch_capability() == str(torch.backends.cpu.get_cpu_capability())

    def missing():
        raise RuntimeError("no capability")

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", missing)
    assert hardware._torch_capability() is None
    monkeypatch.delattr(torch.backends.cpu, "get_cpu_capability")
    assert hardware._torch_capability() is None


@pytest.mark.parametrize("rate, text", [(None, "n/a"), (221.4, "221"), (10.0, "10"), (10.5, "10"), (9.94, "9.9"),
                                        (0.43, "0.43"), (0.0, "0")])
def test_gflops_as_people_read_them(rate, text):
    assert hardware.gflops_text(rate) == text


def test_the_slow_dtype_warning_word_for_word(monkeypatch):
    _machine(monkeypatch, {})
    assert hardware.slow_dtype_message("bfloat16", {"float32": 120.0, "bfloat16": 14.0}) == (
        "dtype='bfloat16' runs slower than float32 on this CPU (this CPU has none of "
        "avx512_bf16/amx_bf16/avx_ne_convert): measured 14 GFLOP/s against 120 GFLOP/s for float32 on AMD EPYC "
        "7B13 with 5 threads. Continuing in bfloat16 as asked (the dtype is part of the recipe and the cache key); "
        "pass dtype='float32' for the faster mode here. `bertfeat info` shows these rates.")
    text = hardware.slow_dtype_message("float16", {"float32": 120.0, "float16": None})
    assert text.startswith("dtype='float16' runs slower than float32 on this CPU (this CPU has none of "
                           "avx512_fp16/amx_fp16): measured not runnable against 120 GFLOP/s for float32")
    monkeypatch.setattr(hardware, "cpu_flags", lambda cpuinfo=None: ["avx512_bf16"])
    assert hardware.slow_dtype_message("bfloat16", {"float32": 292.0, "bfloat16": 153.0}).startswith(
        "dtype='bfloat16' runs slower than float32 on this CPU: measured 153 GFLOP/s against 292 GFLOP/s")


@pytest.mark.parametrize("dtype, rates", [
    ("bfloat16", {"float32": 100.0, "bfloat16": 100.0}),  # as fast is not slower
    ("bfloat16", {"float32": 100.0, "bfloat16": 100.5}),
    ("float32", {"float32": 100.0}),
    ("float32", {"float32": 100.0, "bfloat16": 300.0}),
    ("bfloat16", {"float32": None, "bfloat16": 10.0}),  # float32 not measured: nothing to compare with
    ("bfloat16", {"float32": 0.0, "bfloat16": None}),
    ("bfloat16", {"bfloat16": 10.0}),
])
def test_no_slow_dtype_warning_unless_measured_slower_than_float32(monkeypatch, dtype, rates):
    _machine(monkeypatch, {})
    assert hardware.slow_dtype_message(dtype, rates) is None


@pytest.mark.parametrize("system, machine", [("Windows", "AMD64"), ("Darwin", "x86_64")])
def test_where_the_os_lists_no_instruction_sets_nothing_is_said_of_them(monkeypatch, system, machine):
    """(found by a mutation testing hunt of fastbert and hardware, 2026-11-27, session 12) Windows and Intel Macs
    have no /proc/cpuinfo, and the empty list of flags was read as a CPU that has none of them: the kernel order said
    "x86 without AVX-512" and the slow-dtype warning "this CPU has none of avx512_bf16/amx_bf16/avx_ne_convert/bf16",
    of CPUs that may have all of them (a Xeon with AVX512-BF16 and no AMX measures bf16 slower than float32)."""
    from bertfeat import fastbert

    monkeypatch.setattr(hardware, "_cpuinfo_text", lambda: "")
    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(os_cpu, "_SYSCTL", {machine: None})  # an Intel Mac whose sysctl lists none
    monkeypatch.setattr(hardware, "cpu_model", lambda cpuinfo=None: "Intel(R) Xeon(R) Gold 6338")
    monkeypatch.setattr(hardware, "_threads", lambda: 8)
    monkeypatch.delenv("BERTFEAT_CPU_KERNELS", raising=False)
    assert hardware.cpu_flags() == [] and hardware.flags_listed() is False
    assert fastbert.preferred_kernels() == (
        "torch", "x86 whose instruction sets this OS does not list: plain torch ops first")
    assert hardware.slow_dtype_message("bfloat16", {"float32": 292.0, "bfloat16": 153.0}).startswith(
        "dtype='bfloat16' runs slower than float32 on this CPU: measured 153 GFLOP/s against 292 GFLOP/s for float32 "
        "on Intel(R) Xeon(R) Gold 6338 with 8 threads.")
    # flags given (as the tests give them) are taken as listed
    assert fastbert.preferred_kernels([], machine) == ("torch", "x86 without AVX-512: plain torch ops first")


@pytest.mark.parametrize("cpuinfo, system, machine, listed", [
    ("processor\t: 0\nflags\t\t: fpu\n", "Linux", "x86_64", True),  # listed, though none bertfeat looks for
    ("processor\t: 0\nFeatures\t: fp\n", "Linux", "aarch64", True),
    ("processor\t: 0\nmodel name\t: QEMU\n", "Linux", "x86_64", False),  # a cpuinfo without a flags line
    ("", "Linux", "x86_64", False),
    ("", "Darwin", "arm64", True),  # a Mac whose sysctl lists them
    ("", "Darwin", "x86_64", False),  # a Mac whose sysctl does not
    ("", "Windows", "AMD64", False),
])
def test_flags_are_listed_where_cpuinfo_has_a_flags_line_or_a_macs_sysctl_lists_them(monkeypatch, cpuinfo, system,
                                                                                      machine, listed):
    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(os_cpu, "_SYSCTL", {"arm64": {"asimd"}, "x86_64": None})  # sysctl's answers, read once
    assert hardware.flags_listed(cpuinfo) is listed
    monkeypatch.setattr(hardware, "_cpuinfo_text", lambda: cpuinfo)
    assert hardware.flags_listed() is listed


def test_an_intel_mac_has_its_cpu_id_from_sysctl(monkeypatch):
    """An Intel Mac's cpu_id (manifests, `bertfeat info`) was null: macOS has no /proc/cpuinfo, and only Windows was
    asked otherwise. sysctl gives the vendor, family and model, as /proc/cpuinfo names them."""
    asked = _mac(monkeypatch, "x86_64", "machdep.cpu.vendor: GenuineIntel\nmachdep.cpu.family: 6\n"
                                        "machdep.cpu.model: 158\n")
    monkeypatch.setattr(hardware, "_cpuinfo_text", lambda: "")
    assert hardware.cpu_id() == "GenuineIntel family 6 model 158"
    assert hardware.cpu_id() == "GenuineIntel family 6 model 158"
    assert asked == [["sysctl", "machdep.cpu.vendor", "machdep.cpu.family", "machdep.cpu.model"]]  # asked once
    for answer in ("", "sysctl: unknown oid 'machdep.cpu.vendor'\n", OSError("no sysctl")):  # Apple silicon has none
        _mac(monkeypatch, "arm64", answer)
        assert hardware.cpu_id() is None
