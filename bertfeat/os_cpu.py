"""The CPU as the systems without Linux's x86 /proc/cpuinfo describe it, named as :mod:`bertfeat.hardware` names
it there: macOS's instruction sets (sysctl) and whether Rosetta translates this Python, ARM cores (cpuinfo's
implementer and part codes), and Windows's CPU name (its registry) and id (its processor identifier).
"""

from __future__ import annotations

import re

# -- macOS: instruction sets ----------------------------------------------------------------------------------------

# macOS lists the CPU's instruction sets through sysctl: Apple silicon as hw.optional keys set to 1 (not every M-series
# core has the same: the M1 has no bf16 or i8mm, the M2 brought them, the M4 sme), an Intel Mac as the words of
# machdep.cpu.features and leaf7_features. Named here as Linux names them.
_APPLE_SILICON_KEYS = {
    "hw.optional.AdvSIMD": ("asimd",), "hw.optional.neon": ("asimd",),
    "hw.optional.arm.FEAT_FP16": ("asimdhp", "fphp"), "hw.optional.neon_fp16": ("asimdhp", "fphp"),  # macOS 11's name
    "hw.optional.arm.FEAT_BF16": ("bf16",), "hw.optional.arm.FEAT_I8MM": ("i8mm",),
    "hw.optional.arm.FEAT_SME": ("sme",),
}
_INTEL_MAC_KEYS = ("machdep.cpu.features", "machdep.cpu.leaf7_features")
_INTEL_MAC_NAMES = {"avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16",
                    "avxvnni": "avx_vnni"}
# sysctl's answers, asked once per process and machine name (Rosetta runs an x86_64 Python on Apple silicon)
_SYSCTL: dict[str, set[str] | str | None] = {}


def mac_flags(machine: str) -> set[str] | None:
    """The instruction sets macOS's sysctl lists for the CPU, named as Linux names them; None where it lists none."""
    if machine not in _SYSCTL:
        import subprocess

        keys = ["hw.optional"] if machine == "arm64" else list(_INTEL_MAC_KEYS)
        try:
            out = subprocess.run(["sysctl", *keys], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _SYSCTL[machine] = _sysctl_flags(out)
    return _SYSCTL[machine]


def _sysctl_flags(text: str) -> set[str] | None:
    """The flags in sysctl's ``key: value`` lines (:data:`_APPLE_SILICON_KEYS`, :data:`_INTEL_MAC_KEYS`); None where
    it printed none of those keys."""
    found, listed = set(), False
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key in _APPLE_SILICON_KEYS:
            listed = True
            if value == "1":
                found.update(_APPLE_SILICON_KEYS[key])
        elif key in _INTEL_MAC_KEYS:
            listed = True
            found.update(_INTEL_MAC_NAMES.get(word, word) for word in value.lower().split())
    return found if listed else None


_MAC_ID_KEYS = ("machdep.cpu.vendor", "machdep.cpu.family", "machdep.cpu.model")


def mac_cpu_id(machine: str) -> str | None:
    """``"<vendor> family F model M"``, as /proc/cpuinfo gives it, from an Intel Mac's sysctl; None where it has
    none (Apple silicon). Asked once per process and machine name."""
    key = f"{machine} id"
    if key not in _SYSCTL:
        import subprocess

        try:
            out = subprocess.run(["sysctl", *_MAC_ID_KEYS], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        fields = dict((part.strip() for part in line.partition(":")[::2]) for line in out.splitlines())
        vendor, family, model = (fields.get(k) for k in _MAC_ID_KEYS)
        _SYSCTL[key] = f"{vendor} family {family} model {model}" if vendor and family and model else None
    return _SYSCTL[key]


# whether this process runs translated by Rosetta (asked once; an empty list: not asked yet)
_ROSETTA: list[bool] = []
ROSETTA = "this Python is x86_64 code that Rosetta translates on Apple silicon"


def under_rosetta() -> bool:
    """Whether this Python is x86_64 code Rosetta translates on Apple silicon (an old Anaconda, say): slower than
    native, and torch has no Apple GPU (MPS) there, nor x86_64 wheels after torch 2.2."""
    import platform

    if not _ROSETTA:
        translated = False
        if platform.system() == "Darwin" and platform.machine() == "x86_64":
            import subprocess

            try:
                translated = subprocess.run(["sysctl", "-n", "sysctl.proc_translated"], capture_output=True,
                                            text=True, timeout=5).stdout.strip() == "1"
            except (OSError, subprocess.SubprocessError):
                pass
        _ROSETTA.append(translated)
    return _ROSETTA[0]


# -- ARM: the core's name -------------------------------------------------------------------------------------------

# ARM's /proc/cpuinfo names no model: a core is its implementer's and part's codes, named here as lscpu names the
# cores bertfeat's users run on (servers, and the Raspberry Pis).
_ARM_IMPLEMENTERS = {0x41: "ARM", 0x48: "HiSilicon", 0x4E: "NVIDIA", 0x51: "Qualcomm", 0x61: "Apple", 0xC0: "Ampere"}
_ARM_PARTS = {
    (0x41, 0xD03): "Cortex-A53", (0x41, 0xD07): "Cortex-A57", (0x41, 0xD08): "Cortex-A72", (0x41, 0xD0B): "Cortex-A76",
    (0x41, 0xD0C): "Neoverse-N1", (0x41, 0xD40): "Neoverse-V1", (0x41, 0xD49): "Neoverse-N2",
    (0x41, 0xD4F): "Neoverse-V2", (0x41, 0xD84): "Neoverse-V3", (0x41, 0xD8E): "Neoverse-N3",
    (0xC0, 0xAC3): "Ampere-1", (0xC0, 0xAC4): "Ampere-1a",
}


def arm_core(fields: dict[str, str]) -> str | None:
    """An ARM core's name from its cpuinfo ``fields`` ("ARM Neoverse-V1"; a part not named here by its code); None
    where they hold no ARM codes."""
    try:
        implementer, part = int(fields["CPU implementer"], 16), int(fields["CPU part"], 16)
    except (KeyError, ValueError):
        return None
    vendor = _ARM_IMPLEMENTERS.get(implementer, f"implementer {fields['CPU implementer']}")
    return f"{vendor} {_ARM_PARTS.get((implementer, part)) or 'part ' + fields['CPU part']}"


# -- Windows: the CPU's name and id ---------------------------------------------------------------------------------


def windows_cpu_name() -> str | None:
    """The marketing name Windows keeps in its registry (platform.processor() there is an identifier: "Intel64
    Family 6 Model 106 Stepping 6, GenuineIntel")."""
    try:
        import winreg

        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"HARDWARE\DESCRIPTION\System\CentralProcessor\0") as key:
            return str(winreg.QueryValueEx(key, "ProcessorNameString")[0]).strip() or None
    except (ImportError, OSError):
        return None


# Windows' processor identifier: "Intel64 Family 6 Model 106 Stepping 6, GenuineIntel"; the model is in decimal, as
# /proc/cpuinfo gives it
_WINDOWS_X86_ID = re.compile(r"(?:Intel64|AMD64|x86) Family (\d+) Model (\d+) .*?, (\w+)\s*$")


def windows_cpu_id(identifier: str) -> str | None:
    """``"<vendor> family F model M"``, as /proc/cpuinfo gives it, from an x86 CPU's Windows ``identifier``
    (platform.processor()); None for another (an ARM Windows machine's)."""
    found = _WINDOWS_X86_ID.match(identifier)
    return f"{found[3]} family {found[1]} model {found[2]}" if found else None
