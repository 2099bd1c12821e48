"""A Hugging Face model name to its snapshot folder in the Hugging Face cache: read from the cache where it holds the
whole snapshot, completed or fetched by a download where downloads are on (one fetched file by file, which may lack
a sentence-transformers model's modules.json and pooling, downloaded once), refused naming what is missing and the
download command where they are off; and the code a model's auto_map keeps in other hub repositories, for its
fingerprint. Used by :mod:`bertfeat.models`; imports no torch.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from bertfeat import st_folder
from bertfeat.exceptions import ModelNotAvailableError
from bertfeat.model_folder import _TOKENIZER_FILES, variant_advice

# What a model directory needs for bertfeat: config, tokenizer files and safetensors weights.
_HUB_PATTERNS = [
    "config.json", "*.safetensors", "*.safetensors.index.json", "tokenizer*", "vocab*", "merges.txt",
    "special_tokens_map.json", "added_tokens.json", "*.model", "bpe.codes", "dict.txt", "entity_vocab.json",
    "word_shape.json", "word_pronunciation.json", "modules.json", "sentence_*_config.json", "*_Pooling/config.json",
    "config_sentence_transformers.json",
    "*.py",  # a model's own code (auto_map), run only with trust_remote_code=True; hashed into its fingerprint
]
# the same files in a sentence-transformers model's Transformer subfolder (0_Transformer/config.json, ...)
_HUB_PATTERNS += [f"*/{p}" for p in _HUB_PATTERNS if not p.startswith("*")]


def hub_download_command() -> str:
    """The command that downloads a model with the installed huggingface_hub: ``hf download`` from 0.34 (from 1.0,
    what transformers 5 takes, the only one), ``huggingface-cli download`` before."""
    from importlib import metadata

    try:
        version = metadata.version("huggingface_hub")
    except metadata.PackageNotFoundError:
        return "hf download"
    release = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    return "hf download" if release >= (0, 34) else "huggingface-cli download"


def _from_hub(name: str) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - huggingface_hub comes with transformers
        raise ModelNotAvailableError(f"model={name!r}: huggingface_hub is not installed to fetch it.") from exc
    try:
        cached = Path(snapshot_download(name, allow_patterns=_HUB_PATTERNS, local_files_only=True))
    except Exception as exc:
        # huggingface_hub (2.x) refuses a snapshot that the repository's file list it keeps finds incomplete
        # (IncompleteSnapshotError), saying where it is: that part is in the cache, and may hold all bertfeat reads
        partial = getattr(exc, "snapshot_path", None)
        cached = Path(partial) if isinstance(partial, str) and Path(partial).is_dir() else None
        lacking = snapshot_lacks(cached) if cached is not None else []
        if cached is not None and not lacking and _downloads_off() is not None:
            return cached  # it lacks files bertfeat does not read (another variant's weights, say)
    else:
        # the cache answers for any part of a snapshot (huggingface_hub checks one only against a file list of its
        # own downloads, and before 1.x not at all): another library may have fetched the files it reads alone
        # (transformers' AutoTokenizer, AutoConfig), or a download stopped midway; a download completes it
        lacking = snapshot_lacks(cached)
        if not lacking and not (_downloads_off() is None and _fetched_file_by_file(name, cached)):
            return cached
        if not lacking:  # it may lack sentence-transformers files no check can name: the download brings any there are
            try:
                return Path(snapshot_download(name, allow_patterns=_HUB_PATTERNS))
            except Exception:
                return cached  # (as transformers would read it)
    variable = _downloads_off()
    offline = variable is not None
    fix = (
        f"Pass model='default' for the bundled all-MiniLM-L6-v2, or a local directory holding config.json, the "
        f"tokenizer files and model.safetensors; or, on a machine with network access, run "
        f"`{hub_download_command()} {name}` once so it is in the Hugging Face cache."
    )
    if offline and cached is not None:
        # a variant's weights alone (from_pretrained(name, variant="fp16") fetches no others): where the repository
        # has no model.safetensors either, the download the fix advises brings none
        variants = sorted(f.name for f in [*cached.glob("model.*.safetensors"), *cached.glob("*/model.*.safetensors")])
        held = (f" It holds {variants}, a variant's weights, which transformers does not read as the model's: "
                f"{variant_advice(name, variants)}" if variants else "")
        raise ModelNotAvailableError(
            f"model={name!r} is in the Hugging Face cache only in part: its snapshot {cached} lacks "
            f"{', '.join(lacking)} (another library fetched only the files it reads, or a download stopped midway), "
            f"and downloads are off ({variable} is set). {fix}{held}"
        )
    if offline:
        raise ModelNotAvailableError(
            f"model={name!r} is not a local directory and is not in the Hugging Face cache, and downloads are off "
            f"({variable} is set). {fix}"
        )
    try:
        return Path(snapshot_download(name, allow_patterns=_HUB_PATTERNS))
    except Exception as exc:
        raise ModelNotAvailableError(
            f"model={name!r} is not a local directory, is not in the Hugging Face cache, and could not be "
            f"downloaded ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). {fix}"
        ) from exc


def _downloads_off() -> str | None:
    """The variable that turns the hub's downloads off, where one does; None where downloads are on. Read as
    huggingface_hub reads it: TRANSFORMERS_OFFLINE counts where HF_HUB_OFFLINE is not set."""
    variable = "HF_HUB_OFFLINE" if os.environ.get("HF_HUB_OFFLINE") else "TRANSFORMERS_OFFLINE"
    return variable if os.environ.get(variable, "").lower() in {"1", "true", "yes", "on"} else None


def load_options() -> dict:
    """transformers' ``from_pretrained`` arguments that make its loads follow bertfeat's reading of downloads: where
    they are off, ``local_files_only``. huggingface_hub reads HF_HUB_OFFLINE once, at its import, and bertfeat at each
    resolve: set after that import (a notebook's ``os.environ``), transformers would fetch and run the hub's newest
    code for a model that keeps it in another repository, where bertfeat fingerprinted the cache's copy."""
    return {"local_files_only": True} if _downloads_off() else {}


def _fetched_file_by_file(name: str, snapshot: Path) -> bool:
    """Whether the hub snapshot ``snapshot`` of ``name`` holds no modules.json and may lack it: a sentence-transformers
    model's snapshot that transformers' ``from_pretrained`` fetched (config.json, the weights, the tokenizer, file by
    file) lacks its modules.json, 1_Pooling/ and sentence_bert_config.json, and read so it was a plain model, silently
    (its do_lower_case, include_prompt and prompts lost). huggingface_hub keeps the repository's file list beside a
    snapshot it downloaded whole (and checks the snapshot against it); without that list (or without a huggingface_hub
    that tells, before 1.x: False, as before) the snapshot may lack files."""
    if (snapshot / "modules.json").is_file():
        return False
    try:
        from huggingface_hub import get_cached_repo_tree
    except ImportError:
        return False
    try:
        get_cached_repo_tree(name, revision=snapshot.name)
    except Exception:  # CachedRepoTreeNotFoundError: no file list kept for this snapshot
        return True
    return False


def snapshot_lacks(root: Path) -> list[str]:
    """The files a model's description needs that the hub snapshot ``root`` lacks, by their path in it: config.json,
    the tokenizer's files, the safetensors weights (every shard its index lists; not where it holds pickled weights
    alone, which no download makes safetensors), where its modules.json (if any) puts its Transformer and its
    Pooling's config.json; [] where it holds them (or cannot tell: a damaged modules.json is for the description to
    name)."""
    try:
        entries = st_folder.modules(root, str(root)) or []
    except ModelNotAvailableError:
        entries = []
    sub = entries[0]["path"] if entries and entries[0]["type"].endswith("Transformer") else ""
    prefix = f"{sub.rstrip('/')}/" if sub else ""
    encoder = root / sub if sub else root
    lacking = [] if (encoder / "config.json").is_file() else [prefix + "config.json"]
    index = encoder / "model.safetensors.index.json"
    if (encoder / "model.safetensors").is_file():
        pass
    elif index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            shards = []  # a damaged index: for the description to name
        lacking += [prefix + s for s in shards if isinstance(s, str) and not (encoder / s).is_file()]
    elif not any(encoder.glob("*.bin")) and not any(encoder.glob("*.pt*")):
        # (pickled weights alone, a model published without safetensors that transformers fetched: no download brings
        # safetensors, and the description refuses the pickles saying how to convert them)
        lacking.append(prefix + "model.safetensors")
    if not any((encoder / f).is_file() for f in _TOKENIZER_FILES):
        lacking.append("the tokenizer's files")
    lacking += [f"{m['path'].rstrip('/')}/config.json" for m in entries[1:]
                if m["type"].rsplit(".", 1)[-1] == "Pooling" and not (root / m["path"] / "config.json").is_file()]
    return lacking


def _remote_code(files: list[Path]) -> tuple | None:
    """The Python files of the repositories that the auto_map of the model's config.json or tokenizer_config.json
    (``files``: the described files, its Transformer's among them) names a class in, as ``"org/repo--module.Class"``
    (jina-embeddings-v2 and nomic-embed-text keep their code so): transformers fetches that code from the hub at the
    repository's newest revision and runs it, so it decides the vectors as the weights do. Read at that revision where
    downloads are on, from the Hugging Face cache's snapshot where they are off (:func:`_code_snapshot`); () where it
    cannot be had; None where no repository is named."""
    repos = set()
    for f in files:
        if f.name not in ("config.json", "tokenizer_config.json"):  # the model's classes, the tokenizer's
            continue
        try:
            auto_map = json.loads(f.read_text(encoding="utf-8")).get("auto_map")
        except (OSError, ValueError, AttributeError):  # for the description to name
            continue
        for ref in (auto_map or {}).values() if isinstance(auto_map, dict) else ():
            for one in ref if isinstance(ref, list) else [ref]:
                if isinstance(one, str) and "--" in one:
                    repos.add(one.split("--", 1)[0])
    if not repos:
        return None
    found = []
    for repo in sorted(repos):
        folder = _code_snapshot(repo)
        if folder is None:
            return ()
        found += sorted(folder.glob("*.py"))
    return tuple(found)


def _code_snapshot(repo: str) -> Path | None:
    """The Hugging Face cache's snapshot of ``repo``'s Python files at the repository's newest revision where downloads
    are on: transformers asks the hub for that revision at each load and runs it, so the snapshot the cache kept may
    be older than the code the model runs (the hub is asked, and sends only what changed). The snapshot the cache
    holds where downloads are off or the hub does not answer (transformers then runs that one); None where neither
    can be had."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return None
    if not _downloads_off():
        try:
            return Path(snapshot_download(repo, allow_patterns=["*.py"]))
        except Exception:
            pass
    try:
        return Path(snapshot_download(repo, allow_patterns=["*.py"], local_files_only=True))
    except Exception:
        return None
