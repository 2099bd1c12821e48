"""The benchmarks' peak-memory figures (benchmarks/common.py, bench_cli_memory.py) in MiB on every OS:
``ru_maxrss`` is KiB on Linux and bytes on macOS."""

from __future__ import annotations

import sys
import types

import pytest

from benchmarks import bench_cli_memory, common


@pytest.mark.parametrize("platform, maxrss", [("linux", 512 * 1024), ("darwin", 512 * 1024 * 1024)])
def test_ru_maxrss_is_read_in_mib_on_linux_and_macos(monkeypatch, platform, maxrss):
    monkeypatch.setattr(sys, "platform", platform)
    assert common.maxrss_mib(maxrss) == 512.0


def test_bench_cli_memorys_child_peak_is_in_mib_on_macos(monkeypatch, tmp_path):
    """bench_cli_memory divided the child's ru_maxrss by 1024 everywhere: on a Mac, where it is bytes, a 512 MiB
    child was reported as 524,288 MB."""
    out = tmp_path / "out.parquet"
    (tmp_path / "out.parquet.manifest.json").write_text('{"counts": {"rows": 10, "tokens": 70}}')
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(bench_cli_memory.subprocess, "Popen", lambda argv, env: types.SimpleNamespace(pid=4242))
    usage = types.SimpleNamespace(ru_maxrss=512 * 1024 * 1024)
    monkeypatch.setattr(bench_cli_memory.os, "wait4", lambda pid, options: (pid, 0, usage), raising=False)
    monkeypatch.setattr(bench_cli_memory.os, "waitstatus_to_exitcode", lambda status: status)
    result = bench_cli_memory.run(tmp_path / "in.csv", out, "model", 100)
    assert result["peak_rss_mb"] == 512.0 and result["rows"] == 10 and result["tokens"] == 70
