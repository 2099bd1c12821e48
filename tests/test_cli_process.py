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


def test_a_path_given_with_a_tilde_is_read_and_written_in_the_home_folder(tiny_bert, tmp_path):
    """``--out=~/f.parquet`` (the shell expands no ``~`` after ``=``), a quoted ``'~/in.csv'``, R's ``"~/..."``: the
    model and --cache-dir already read ``~`` as the home folder, the input and --out did not. Before: 'input
    '~/in.csv' does not exist', and for --out 'the folder of --out '~/f.parquet' does not exist; create it first',
    whose advice (mkdir ~) makes a folder named ~ in the working directory."""
    import pandas as pd

    from bertfeat.sources import input_path, output_path

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    pd.DataFrame({"id": ["1", "2"], "review": ["the cat sat", "a dog ran"]}).to_csv(home / "in.csv", index=False)
    argv, env = command("embed", "~/in.csv", "--text-col", "review", "--id-col", "id", "--model", tiny_bert,
                        "--out=~/f.parquet", "--quiet", HOME=str(home))
    proc = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert pd.read_parquet(home / "f.parquet")["id"].tolist() == ["1", "2"]
    assert (home / "f.parquet.manifest.json").exists() and list(work.iterdir()) == []
    # the Ray and Spark engines take their paths from the same two functions
    assert input_path("~/in.csv") == os.path.expanduser("~/in.csv")
    assert output_path("~/out", "out", "a path", "parquet") == os.path.expanduser("~/out")
    assert input_path("./~") == "./~"  # a file named ~ is still reachable


def test_a_log_gets_progress_lines_while_a_long_chunk_runs_not_only_when_it_ends(tiny_bert, tmp_path, capsys):
    """docs/cli.md: 'Otherwise (logs, CI): a line every 10 seconds'. A line came only when a chunk finished, and a
    chunk of the default 10,000 rows takes minutes on a CPU: a Slurm log showed nothing for that long. Now the
    model's batches within a chunk move the count (here every batch: progress_every=0)."""
    import re

    import pandas as pd

    from bertfeat.files import embed_file

    texts = [f"the cat sat on the mat {i} " + "a dog ran " * (i % 7) for i in range(60)]
    pd.DataFrame({"review": texts}).to_parquet(tmp_path / "in.parquet")
    embed_file(tmp_path / "in.parquet", tmp_path / "f.parquet", "review", model=tiny_bert, batch_tokens=64,
               progress_every=0)  # one chunk of 60 rows, many batches
    lines = capsys.readouterr().err.splitlines()
    counts = [int(m.group(1).replace(",", "")) for line in lines
              if (m := re.match(r"bertfeat embed: ([\d,]+) / 60 \(", line))]
    assert len(counts) > 3 and counts[0] < 60 and counts == sorted(counts) and counts[-1] == 60, lines


def test_a_job_with_its_standard_error_closed_runs_and_writes_its_output(tiny_bert, tmp_path):
    """``bertfeat embed ... 2>&-`` (a daemon, a service manager's unit without a log, pythonw): Python starts with
    ``sys.stderr`` None. Before, the progress report called ``None.isatty()``: the job failed before reading a row,
    exit 1, its traceback lost with the closed stream, so the job failed without a word. Now it runs quietly, and
    the summary is not moved onto standard output either."""
    import pandas as pd

    pd.DataFrame({"review": ["the cat sat", "a dog ran"]}).to_csv(tmp_path / "in.csv", index=False)
    argv, env = command("embed", tmp_path / "in.csv", "--text-col", "review", "--model", tiny_bert,
                        "--out", tmp_path / "f.parquet")
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True, timeout=300,
                          preexec_fn=lambda: os.close(2))
    assert (proc.returncode, proc.stdout) == (0, "")
    assert len(pd.read_parquet(tmp_path / "f.parquet")) == 2


def test_a_job_with_its_standard_output_closed_ends_with_success(tiny_bert, tmp_path):
    """``bertfeat embed ... >&-`` (a daemon closes both streams): the job wrote its output and manifest, then the
    command's last flush of standard output (None) failed: a traceback and exit 1, so a scheduler marked a finished
    job failed."""
    import pandas as pd

    pd.DataFrame({"review": ["the cat sat", "a dog ran"]}).to_csv(tmp_path / "in.csv", index=False)
    argv, env = command("embed", tmp_path / "in.csv", "--text-col", "review", "--model", tiny_bert,
                        "--out", tmp_path / "f.parquet")
    proc = subprocess.run(argv, env=env, stderr=subprocess.PIPE, text=True, timeout=300,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("bertfeat embed: wrote ")
    assert len(pd.read_parquet(tmp_path / "f.parquet")) == 2


def test_progress_bars_of_the_python_api_run_where_standard_error_is_none(tiny_bert, monkeypatch):
    """``BertEmbedder(progress=True)`` under pythonw or a daemon (``sys.stderr`` None): tqdm wrote to None and the
    transform failed with ``'NoneType' object has no attribute 'write'``."""
    from bertfeat import BertEmbedder

    monkeypatch.setattr(sys, "stderr", None)
    assert BertEmbedder(model=tiny_bert, progress=True).fit_transform(["the cat sat", "a dog ran"]).shape[0] == 2


def test_names_an_ascii_standard_output_cannot_show_are_escaped_not_an_error(tmp_path):
    """A cron job or a container that sets ``PYTHONIOENCODING=ascii`` gives standard output an ASCII encoding that
    fails on what it cannot encode. Before, ``bertfeat cache clear`` of a cache under ``/data/café`` deleted the
    vectors and then reported 'error: 'ascii' codec can't encode character', exit 2, for work it had done; ``cache
    info`` showed nothing. Now what ASCII cannot show is written as Python's backslash escape (``caf\\xe9``), as
    standard error already does."""
    from bertfeat.cache import open_cache

    root = tmp_path / "café" / "cache"
    open_cache(root)
    for action in (["info"], ["clear", "--yes"]):
        argv, env = command("cache", *action, root, PYTHONIOENCODING="ascii")
        proc = subprocess.run(argv, env=env, capture_output=True, timeout=300)
        assert (proc.returncode, proc.stderr) == (0, b""), proc.stderr
        assert b"caf\\xe9" in proc.stdout, proc.stdout


def test_the_escape_writes_a_byte_the_locale_decoded_back_as_that_byte():
    """In a C locale without UTF-8 mode standard output is ASCII with ``surrogateescape``: a file name's bytes come
    back as they were, but a column or model name (read from a file, always UTF-8) failed to print."""
    import io

    from bertfeat.cli import _showable_output

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="surrogateescape")
    old, sys.stdout = sys.stdout, stream
    try:
        _showable_output()
        print("caf\udcc3\udca9 prix_\u20ac", end="")
        stream.flush()
    finally:
        sys.stdout = old
    assert raw.getvalue() == b"caf\xc3\xa9 prix_\\u20ac"


def test_a_command_run_in_process_escapes_while_it_runs_and_leaves_standard_output_as_it_was(tmp_path, monkeypatch):
    """``main()`` called in a process that goes on (a notebook, a service, tests) set its escaping error handler on
    the caller's standard output for good: after one command, what the caller printed later was escaped where it
    had failed before. Now the command's output is escaped and the stream's handler put back, call after call."""
    import io

    from bertfeat.cache import open_cache
    from bertfeat.cli import main

    root = tmp_path / "café" / "cache"
    open_cache(root)
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", stream)
    for _ in range(3):
        assert main(["cache", "info", str(root)]) == 0
        assert stream.errors == "strict"
    with pytest.raises(SystemExit):
        main(["cache", "info", "--no-such-option"])
    assert stream.errors == "strict"
    stream.flush()
    assert raw.getvalue().count(b"caf\\xe9") == 3
    with pytest.raises(UnicodeEncodeError):
        print("caf\u00e9")  # the caller's own stream fails as it did before any command


C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}  # cron, bare containers, R in a C locale: ASCII names


def test_a_utf8_name_in_an_ascii_locale_is_refused_for_the_locale_not_for_its_name(tmp_path):
    """In a C locale without UTF-8 mode Python reads file names as ASCII: the bytes of ``café`` come as surrogates.
    Before, ``--cache-dir`` and ``--out`` under such a folder were refused as 'not a UTF-8 name' with the advice to
    rename it from Latin-1 (convmv would garble a name that is UTF-8 already); Python embedded in R in a C locale
    (reticulate), given the name as text, failed in the system call with 'ascii' codec can't encode character. Now
    the refusal says the name is UTF-8 and the locale is why, and how to run in a UTF-8 locale."""
    import pandas as pd

    folder = tmp_path / "café"
    folder.mkdir()
    pd.DataFrame({"review": ["the cat sat"]}).to_csv(tmp_path / "in.csv", index=False)
    for args in (["cache", "info", folder], ["embed", tmp_path / "in.csv", "--text-col", "review", "--model",
                                             "default", "--out", folder / "f.parquet"]):
        argv, env = command(*args, **C_LOCALE)
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, errors="replace", timeout=300)
        assert proc.returncode == 2 and "has a UTF-8 name" in proc.stderr and "LANG=C.UTF-8" in proc.stderr, proc.stderr
        assert "convmv" not in proc.stderr
    calls = (f"from bertfeat.cache import open_cache; open_cache({ascii(str(folder / 'c'))})",
             f"from bertfeat.sources import output_path; output_path({ascii(str(folder / 'f.parquet'))}, '--out', 'a path', "
             "'parquet')",
             f"from bertfeat.sources import input_path; input_path({ascii(str(folder / 'in.csv'))})")
    for call in calls:  # the name as text, as R passes it
        env = {**os.environ, "PYTHONPATH": str(ROOT), **C_LOCALE}
        proc = subprocess.run([sys.executable, "-c", call], env=env, capture_output=True, text=True, errors="replace",
                              timeout=300)
        assert proc.returncode == 1 and "has a UTF-8 name" in proc.stderr and "LANG=C.UTF-8" in proc.stderr, proc.stderr


def test_a_model_folder_with_a_utf8_name_in_an_ascii_locale_is_refused_for_the_locale(tiny_bert, tmp_path):
    """(the sibling of the --out and --cache-dir refusals above, found reading the session's diff) a ``--model``
    folder under ``café/`` in a C locale was told it "is not a UTF-8 path ... rename it (convmv -f latin1 -t utf8
    ...)", which would garble a name that is UTF-8 already; given as text (R), it was "no model directory there"."""
    import shutil

    model = shutil.copytree(tiny_bert, tmp_path / "café" / "m")
    argv, env = command("info", model, "--no-machine", **C_LOCALE)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, errors="replace", timeout=300)
    assert proc.returncode == 2 and "has a UTF-8 name" in proc.stderr and "LANG=C.UTF-8" in proc.stderr, proc.stderr
    assert "convmv" not in proc.stderr
    env = {**os.environ, "PYTHONPATH": str(ROOT), **C_LOCALE}
    proc = subprocess.run([sys.executable, "-c", f"from bertfeat.models import resolve_model; "
                           f"resolve_model({ascii(str(model))})"], env=env, capture_output=True, text=True,
                          errors="replace", timeout=300)
    assert proc.returncode == 1 and "has a UTF-8 name" in proc.stderr and "LANG=C.UTF-8" in proc.stderr, proc.stderr


def test_a_column_name_on_the_command_line_of_an_ascii_locale_is_read_as_utf8(tiny_bert, tmp_path):
    """``--text-col texte_é --keep-col note_à`` in a C locale without UTF-8 mode came as surrogate escapes: 'column(s)
    ['texte_\\udcc3\\udca9'] not found ...; it has columns ['texte_é', ...]'."""
    import pandas as pd

    pd.DataFrame({"texte_é": ["le chat", "un chien"], "note_à": [1, 2]}).to_csv(tmp_path / "in.csv", index=False)
    argv, env = command("embed", tmp_path / "in.csv", "--text-col", "texte_é", "--keep-col", "note_à", "--model",
                        tiny_bert, "--out", tmp_path / "f.parquet", "--quiet", **C_LOCALE)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, errors="replace", timeout=300)
    assert (proc.returncode, proc.stderr) == (0, "")
    got = pd.read_parquet(tmp_path / "f.parquet")
    assert got["note_à"].tolist() == ["1", "2"] and any(c.startswith("texte_é_") for c in got.columns)


def test_a_warning_the_warnings_filter_makes_an_error_ends_the_command_in_one_line(tiny_bert, tmp_path):
    """``PYTHONWARNINGS=error`` (some CI) turns a bertfeat note into an exception: here the CacheWarning of a damaged
    shard. Before, the command ended with a 20-line traceback, against its promise of one line and exit code 2; the
    job's own cleanup still ran (no lock or parts left beside --out), as now."""
    import pandas as pd

    from bertfeat import BertEmbedder

    BertEmbedder(model=tiny_bert, cache_dir=tmp_path / "cache").fit_transform(["the cat sat"])
    shard = next((tmp_path / "cache").rglob("shard-*.parquet"))
    shard.write_bytes(b"not parquet")
    pd.DataFrame({"review": ["the cat sat"]}).to_csv(tmp_path / "in.csv", index=False)
    argv, env = command("embed", tmp_path / "in.csv", "--text-col", "review", "--model", tiny_bert, "--cache-dir",
                        tmp_path / "cache", "--out", tmp_path / "f.parquet", "--quiet", PYTHONWARNINGS="error")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("bertfeat embed: error: CacheWarning made an error by the warnings filter")
    assert "unreadable shard" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "in.csv"]


def test_info_reports_and_measures_at_the_thread_count_omp_num_threads_leaves_the_job(tiny_bert):
    """docs/performance.md: ``OMP_NUM_THREADS=n`` sets the threads (to leave cores to other work), and the backend
    keeps a count lower than the allotted cores. ``bertfeat info`` set torch's count to every allotted core first:
    under ``OMP_NUM_THREADS=1`` it said "2 threads" and measured the dtypes' GFLOP/s with 2, not what a job runs."""
    import json

    argv, env = command("info", tiny_bert, "--json", OMP_NUM_THREADS="1")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["machine"]["threads"] == 1
