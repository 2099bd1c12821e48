"""What a model folder must hold for bertfeat, and the refusals of one that does not, each saying what to pass or do:
no config.json (the Hugging Face cache's own folder, a model one folder down, a peft adapter), no tokenizer files,
weights that are not safetensors, shards without their index, a damaged header, a Git LFS pointer in place of a
file. Read at description, before any weights load (:mod:`bertfeat.models`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bertfeat import st_folder
from bertfeat.exceptions import ModelNotAvailableError

# Every file an encoder's tokenizer reads (its class's VOCAB_FILES_NAMES): each is in the fingerprint.
_TOKENIZER_FILES = (
    "tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model",
    "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "spm.model", "sentencepiece.model",
    "tokenizer.model", "bpe.codes", "dict.txt", "entity_vocab.json", "word_shape.json", "word_pronunciation.json",
)


def _tokenizer_files(root: Path, name: str) -> list[Path]:
    """The tokenizer's files in ``root`` (:data:`_TOKENIZER_FILES`), refused where there are none or one is a Git LFS
    pointer."""
    tok_files = [root / f for f in _TOKENIZER_FILES if (root / f).is_file()]
    for f in tok_files:  # a vocabulary or SentencePiece model a clone without git-lfs left as its pointer
        with open(f, "rb") as fh:
            pointer = st_folder.lfs_pointer_refusal(f, name, fh.read(len(st_folder.LFS_POINTER)))
        if pointer is not None:
            raise pointer
    if not tok_files:
        raise ModelNotAvailableError(
            f"model={name!r}: {root} holds no tokenizer files (tokenizer.json or vocab), as a model saved without its "
            "tokenizer has none: save the tokenizer the model was trained with there, "
            "AutoTokenizer.from_pretrained(name).save_pretrained(dir)."
        )
    return tok_files


# the tokenizer's settings, which hold no vocabulary (_TOKENIZER_FILES' others hold one)
_TOKENIZER_SETTINGS = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")


def no_vocabulary(root: Path, name: str) -> str | None:
    """The refusal of a folder holding the tokenizer's settings but no vocabulary (a copy of the *.json files alone
    leaves vocab.txt behind), where transformers cannot build its tokenizer; None where it holds one."""
    present = sorted(f for f in _TOKENIZER_FILES if (root / f).is_file())
    if not present or any(f not in _TOKENIZER_SETTINGS for f in present):
        return None
    return (f"model={name!r}: {root} holds the tokenizer's settings ({', '.join(present)}) but no vocabulary for it to "
            "read (tokenizer.json, vocab.txt, vocab.json and merges.txt, or a SentencePiece model such as "
            "spiece.model), as a copy of the *.json files alone or a download stopped midway leaves: copy the "
            "tokenizer's files from where the model came from, or save them there, "
            "AutoTokenizer.from_pretrained(name).save_pretrained(dir).")


def _no_config(name: str, root: Path, top: Path) -> str:
    """The refusal of a folder without config.json, saying which folder to pass: the model's snapshot where ``root``
    is the folder the Hugging Face cache keeps a model in (``models--org--name``), the subfolders holding a
    config.json where the model lies one level down (a zip unpacked into a folder of its own). ``top`` is the folder
    named, ``root`` the one its modules.json puts its Transformer in (the same for other models)."""
    if root != top:
        return (f"model={name!r}: {root}, where {top / 'modules.json'} puts the model's Transformer, has no "
                "config.json: the copy or download is incomplete. Copy or download the whole model folder.")
    adapter = root / "adapter_config.json"
    if adapter.is_file():  # a LoRA fine-tune saved by peft: the adapter's weights alone
        base = st_folder.read_json(adapter, name, dict, "the adapter's settings").get("base_model_name_or_path")
        named = isinstance(base, str) and base
        of = f"its base model {base!r}" if named else "its base model (adapter_config.json names none)"
        return (f"model={name!r}: {root} holds a peft adapter (adapter_config.json), not a whole model: its weights "
                f"are changes to {of}. Merge them into that model once, PeftModel.from_pretrained("
                "AutoModel.from_pretrained(base), dir).merge_and_unload().save_pretrained(out), save the tokenizer in "
                "out too, and pass out as the model.")
    repo = re.fullmatch(r"models--(.+)", root.name)
    if repo and (root / "snapshots").is_dir():
        hub_name = repo.group(1).replace("--", "/")
        ref = root / "refs" / "main"
        commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else ""
        snapshot = root / "snapshots" / commit
        where = (f"its snapshot folder, model={str(snapshot)!r}" if commit and snapshot.is_dir() else
                 f"a snapshot folder under {root / 'snapshots'}")
        return (f"model={name!r}: {root} is the folder the Hugging Face cache keeps a model in, not a model folder: "
                f"pass the model's name, model={hub_name!r} (read from this cache), or {where}.")
    said = f"model={name!r}: {root} has no config.json, so it is no Hugging Face model folder"
    below = sorted(str(sub) for sub in root.iterdir() if sub.is_dir() and (sub / "config.json").is_file())
    if below:
        return (f"{said}; its subfolder{'s' if len(below) > 1 else ''} {', '.join(map(repr, below))} "
                f"hold{'' if len(below) > 1 else 's'} one: pass the model's own folder.")
    return (f"{said}: pass the folder that holds the model's config.json, tokenizer files and model.safetensors, as "
            "save_pretrained() writes them.")


def _weights_files(root: Path, name: str) -> list[Path]:
    single = root / "model.safetensors"
    if single.is_file():
        _check_safetensors(single, name)
        return [single]
    index = root / "model.safetensors.index.json"
    if index.is_file():
        listed = st_folder.read_json(index, name, dict, "the index of the weights' shards")  # a pointer, no JSON
        try:
            shards = sorted(set(listed["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelNotAvailableError(
                f"model={name!r}: {index} is not a valid safetensors index (it needs a 'weight_map' of weight name "
                f"-> shard file; {type(exc).__name__}: {exc}). Re-save the model with save_pretrained()."
            ) from None
        absent = [s for s in shards if not (root / s).is_file()]
        if absent:
            raise ModelNotAvailableError(
                f"model={name!r}: {index.name} lists weight shard(s) {absent} that are not in {root}, so part of the "
                "model would be random. Copy or download the missing shard(s) (an interrupted download leaves this)."
            )
        for s in shards:
            _check_safetensors(root / s, name)
        return [root / s for s in shards]
    others = sorted(p.name for p in root.glob("*.bin")) + sorted(p.name for p in root.glob("*.pt*"))
    named = sorted(p.name for p in root.glob("*.safetensors") if p.is_file())
    shards = [n for n in named if re.fullmatch(r"model-\d+-of-\d+\.safetensors", n)]
    if shards:  # copied without their index
        raise ModelNotAvailableError(
            f"model={name!r}: {root} holds no model.safetensors weights. It has {shards}, shards without "
            "model.safetensors.index.json, which says which weights each holds: copy the index from where the shards "
            "came from."
        )
    hub = hub_snapshot_of(root)
    if named and not others:  # a variant's file (model.fp16.safetensors), a file renamed
        said = (f"model={name!r}: {root} holds no model.safetensors weights. It has {named}, which transformers does "
                "not read as the model's weights (it reads model.safetensors, or model.safetensors.index.json and its "
                "shards)")
        raise ModelNotAvailableError(f"{said}: {variant_advice(hub, named)}" if hub else
                                     f"{said}: where it holds the whole model, rename it model.safetensors.")
    hint = (
        f" It has {others}: bertfeat loads safetensors only, because pickled weights can run code. " + (
            f"{root} is the Hugging Face cache's copy of {hub!r}, which the cache keeps as it is: where you trust the "
            f"model, convert it once into a folder of your own with transformers (which saves safetensors), "
            f"{_save_into_out(hub)}." if hub else
            "Convert once with transformers (which saves safetensors): AutoModel.from_pretrained(dir)"
            ".save_pretrained(dir).")
        if others else
        # a hub model published with pickled weights alone (many older ones): the download fetched none of them
        " Copy its weights there as model.safetensors (or model.safetensors.index.json and its shards). A model "
        "published with pickled weights only (pytorch_model.bin, as many older Hugging Face models are) is not "
        "loaded, because pickled weights can run code: where you trust it, convert it once with transformers, "
        "AutoModel.from_pretrained(name).save_pretrained(dir) and AutoTokenizer.from_pretrained(name)"
        ".save_pretrained(dir) (transformers saves safetensors), and pass that folder as the model."
    )
    raise ModelNotAvailableError(f"model={name!r}: {root} holds no model.safetensors weights.{hint}")


def hub_snapshot_of(root: Path) -> str | None:
    """The hub name of the model whose Hugging Face cache snapshot ``root`` is
    (``models--org--name/snapshots/<commit>``, or its Transformer's subfolder there); None for a folder of the user's own. The cache keeps a snapshot as the hub
    has it (its files are links to blobs it shares), so a refusal sends the user to a folder of their own."""
    for folder in (root, root.parent):
        repo = re.fullmatch(r"models--(.+)", folder.parent.parent.name)
        if folder.parent.name == "snapshots" and repo:
            return repo.group(1).replace("--", "/")
    return None


def variant_advice(hub: str, variants: list[str]) -> str:
    """What to do with a hub model whose weights the cache holds as a variant's file alone
    (``model.fp16.safetensors``, which ``from_pretrained(name, variant="fp16")`` fetches): load that variant and save
    it into a folder of one's own."""
    found = [m.group(1) for v in variants if (m := re.fullmatch(r"model\.(.+)\.safetensors", v))]
    if not found:  # not a variant's name: no from_pretrained reads it
        return ("the Hugging Face cache keeps the files as the hub has them: copy the snapshot into a folder of your "
                "own (its files are links: copy what they point to) and, where the file holds the whole model, "
                "rename it model.safetensors there.")
    return ("where the repository publishes no model.safetensors, load the variant and save it into a folder of your "
            f"own once with transformers, {_save_into_out(hub, f', variant={found[0]!r}')} (the Hugging Face cache "
            "keeps the snapshot as the hub has it).")


def _save_into_out(hub: str, variant: str = "") -> str:
    return (f"AutoModel.from_pretrained({hub!r}{variant}).save_pretrained(out) and AutoTokenizer.from_pretrained("
            f"{hub!r}).save_pretrained(out), and pass out as the model")


def _check_safetensors(f: Path, name: str) -> None:
    """Refuse a weights file whose header is not safetensors (a renamed pickle, an HTML error page, a truncated
    download) here, with its name, rather than as a deserializer message at load time. Reads the header only."""
    size = f.stat().st_size
    with open(f, "rb") as fh:
        pointer = st_folder.lfs_pointer_refusal(f, name, fh.read(len(st_folder.LFS_POINTER)))
        if pointer is not None:
            raise pointer
        fh.seek(0)
        head = fh.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        problem = None
        if n <= 1 or 8 + n > size or n > 100 << 20:
            problem = "its first 8 bytes do not give a header length that fits the file"
        else:
            try:
                header = json.loads(fh.read(n).decode("utf-8"))
                if not isinstance(header, dict):
                    problem = "its header is not a JSON object"
            except (UnicodeDecodeError, ValueError):
                problem = "its header is not JSON"
    hub = hub_snapshot_of(f.parent)
    if problem and hub:  # the cache's copy: a download keeps its blob, and nothing may be written into the snapshot
        from bertfeat.hub import hub_download_command

        cached = next(p for p in f.parents if p.name == "models--" + hub.replace("/", "--"))
        raise ModelNotAvailableError(
            f"model={name!r}: {f} is not a safetensors file ({problem}; {size} bytes). It may be a damaged download: "
            f"the Hugging Face cache's copy of {hub!r} is damaged, and a download keeps the files the cache holds, so "
            f"delete {cached} (the cache's folder of the model) and download it again, "
            f"`{hub_download_command()} {hub}`."
        )
    if problem:
        raise ModelNotAvailableError(
            f"model={name!r}: {f} is not a safetensors file ({problem}; {size} bytes). It may be a renamed pickle "
            "(.bin) file or a damaged download: download it again, or, where it is a pickle, rename it "
            "pytorch_model.bin and convert once with transformers (which saves safetensors): "
            "AutoModel.from_pretrained(dir).save_pretrained(dir)."
        )
