"""The sha256 of a model's files for its fingerprint (:class:`bertfeat.models.ModelSpec`): its weights, its tokenizer's
files (with the lowercasing and code that change its ids), its config without the keys that vary between saves, and
the code it ships or keeps in other repositories. Every file is read, and kept per process while its identity holds.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

# config.json keys that vary between saves of identical models and so must not change the fingerprint.
_VOLATILE_CONFIG_KEYS = {"transformers_version", "architectures", "torch_dtype", "dtype", "use_cache",
                         "gradient_checkpointing"}


def _tokenizer_sha256(files: list[Path], lowercase: bool, code_dir: Path | None = None) -> str:
    """The tokenizer's hash: its files', and, where the model lowercases texts before it (do_lower_case), that too,
    since the same files then give other ids; and where it runs its own code (``code_dir``: tokenizer_config.json's
    ``auto_map``, with trust_remote_code=True), the Python files there, since an edit to that code gives other ids
    from the same files. A model that does neither keeps the hash of its files alone (the default model's, and
    every cache of it, as before)."""
    files_sha256 = _hash_files(files)
    if lowercase:
        files_sha256 = hashlib.sha256(f"{files_sha256}\0do_lower_case".encode()).hexdigest()
    code = sorted(code_dir.glob("*.py")) if code_dir is not None else []
    if code:
        files_sha256 = hashlib.sha256(f"{files_sha256}\0code\0{_hash_files(code)}".encode()).hexdigest()
    return files_sha256


def _config_sha256(stable_config: dict, code_dir: Path | None, remote_code: tuple | None = None) -> str:
    """sha256 of the config, and of the modelling code beside it for a model that ships its own (``auto_map``):
    that code decides the vectors as much as the weights do, so an edit to it must not be answered from the cache;
    and of the code it keeps in other repositories (``remote_code``, :func:`_remote_code`; where that cannot be had,
    a mark no earlier fingerprint holds). A model without its own code keeps the hash of its config alone."""
    blob = json.dumps(stable_config, sort_keys=True).encode()
    code = sorted(code_dir.glob("*.py")) if code_dir is not None else []
    if code:
        blob += b"\0" + _hash_files(code).encode()
    if remote_code is not None:
        blob += b"\0remote code\0" + (_hash_files(list(remote_code)).encode() if remote_code else b"unavailable")
    return hashlib.sha256(blob).hexdigest()


def _hash_files(files: list[Path]) -> str:
    """sha256 over the files' names and contents.

    Every file is read, Hugging Face cache blobs included: a blob's name is the sha256 it had when downloaded, not
    proof of what it holds now, so trusting the name would let an edited or damaged blob pass as the original.
    (For an intact blob the two agree, so fingerprints are the same either way.) Within a process a file is re-read
    only when its identity, size or change time moves.
    """
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(_file_sha256(f).encode())
    return h.hexdigest()


def _file_sha256(f: Path) -> str:
    target = f.resolve()
    return _sha256_of(str(target), *_identity(target))


def _identity(f: Path) -> tuple:
    """What changes when a file's bytes may have: ctime moves on every write and, unlike mtime, cannot be set back."""
    st = f.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@functools.lru_cache(maxsize=64)
def _sha256_of(path: str, ino: int, size: int, mtime_ns: int, ctime_ns: int) -> str:
    """:func:`read_sha256`, kept while the file's identity holds."""
    return read_sha256(path)


def read_sha256(path) -> str:
    """The SHA-256 of the file ``path``'s bytes, read 4 MiB at a time, uncached (:mod:`bertfeat.resume` reads a
    finished output's with it; ``hashlib.file_digest`` is Python 3.11's)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()
