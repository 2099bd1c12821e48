"""The ``bertfeat`` command as a Unix process: a reader of its output that goes away (``| head -1``), paths as shells
pass them (``~``), progress in a log. Each test runs the real command in a child process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def command(*args, **env):
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env}
    full.pop("BERTFEAT_DEBUG", None)
    return [sys.executable, "-m", "bertfeat", *map(str, args)], full


@pytest.mark.parametrize("which", ["info", "cache info"])
def test_a_reader_that_stops_reading_ends_the_command_quietly_as_sigpipe_would(tiny_bert, tmp_path, which):
    """``bertfeat info | head -1``: head exits after its line. Before, the command said 'error: [Errno 32] Broken
    pipe' and exited 2 (or Python printed 'Exception ignored ... BrokenPipeError' at exit); a Unix tool ends
    silently, with 141 (128 + SIGPIPE) where the shell's pipefail asks."""
    from bertfeat.cache import open_cache

    open_cache(tmp_path / "cache")
    argv, env = command(*(["info", tiny_bert, "--no-machine", "--json"] if which == "info"
                          else ["cache", "info", tmp_path / "cache"]))
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a byte
    try:
        proc = subprocess.run(argv, env=env, stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (141, "")
