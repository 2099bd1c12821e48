"""A sentence-transformers model folder: which folder holds its encoder, and what the model's own files say.

``modules.json`` lists the model's modules in order; the first is its Transformer, whose files (config.json, the
weights, the tokenizer, ``sentence_bert_config.json``) lie in the folder its ``path`` names: ``""`` (the model's own
folder, as sentence-transformers saves today) or a subfolder (``0_Transformer``, ``0_BERT``: older saves, and models
some repositories carry both ways). bertfeat reads the encoder from where sentence-transformers does, and the model's
own pooling, normalization, length, lowercasing and prompts from the files sentence-transformers reads them from.
Files only: no torch, no weights.
"""

from __future__ import annotations

import json
from pathlib import Path, PureWindowsPath

from bertfeat.exceptions import ModelNotAvailableError


# What Git LFS leaves in place of a large file where a repository is cloned without git-lfs (a Hugging Face model's
# weights, and its tokenizer.json on multilingual models): a few lines of text naming the file's content
LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def lfs_pointer_refusal(f: Path, name: str, head: bytes) -> ModelNotAvailableError | None:
    """The refusal of ``f`` where its first bytes ``head`` are a Git LFS pointer's; None where they are not."""
    if not head.startswith(LFS_POINTER):
        return None
    return ModelNotAvailableError(
        f"model={name!r}: {f} is a Git LFS pointer ({f.stat().st_size} bytes naming the file's content), not the file "
        "itself: the model was cloned with git where git-lfs was not installed. Run `git lfs install` and then "
        "`git lfs pull` in the model's folder, or download the model again."
    )


def read_json(f: Path, name: str, kind: type, what: str):
    """``f`` parsed, where it is JSON of ``kind`` (dict: an object, list: an array); else an error naming the file and
    what is wrong. A model file that cannot be read is never taken as absent: its settings would be replaced by
    defaults, and the model embedded otherwise than its own, silently."""
    data = f.read_bytes()
    pointer = lfs_pointer_refusal(f, name, data[:len(LFS_POINTER)])
    if pointer is not None:
        raise pointer
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError as exc:  # a JSONDecodeError, or bytes that are not UTF-8
        problem = f"is not valid JSON ({exc})"
    else:
        if isinstance(value, kind):
            return value
        problem = f"holds a JSON {_json_type(value)} where {what} should be a JSON {_json_type(kind())}"
    raise ModelNotAvailableError(
        f"model={name!r}: {f} {problem}. The file is damaged (a truncated download or copy, an edit gone wrong): "
        "download or copy the model again, or fix the file; sentence-transformers and transformers cannot load it "
        "either."
    )


def _json_type(value) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def modules(root: Path, name: str) -> list | None:
    """The entries of ``root/modules.json`` (each an object with a ``type`` and a ``path``), or None where the folder
    has none (not a sentence-transformers model)."""
    f = root / "modules.json"
    if not f.is_file():
        return None
    entries = read_json(f, name, list, "the list of the model's modules")
    for i, entry in enumerate(entries):
        if not (isinstance(entry, dict) and isinstance(entry.get("type"), str) and isinstance(entry.get("path"), str)):
            raise ModelNotAvailableError(
                f"model={name!r}: entry {i} of {f} is {json.dumps(entry)[:120]}, not an object with a \"type\" (the "
                "module's class) and a \"path\" (its folder) as sentence-transformers writes: the file is damaged. "
                "Download or copy the model again, or fix the file."
            )
        if not inside(entry["path"]):
            raise ModelNotAvailableError(
                f"model={name!r}: entry {i} of {f} puts its module in {entry['path']!r}, outside the model's folder "
                "(a path from the root or through '..'), where sentence-transformers refuses to look: a model reads "
                "its modules from its own folder. Fix the file, or download the model again."
            )
    return entries


def inside(path: str) -> bool:
    """Whether a module's ``path`` stays inside the model's folder, as sentence-transformers requires: no root, no
    drive, no ``..`` (in POSIX or Windows syntax)."""
    folder = PureWindowsPath(path)  # its anchors and separators include POSIX ones
    return not (folder.anchor or ".." in folder.parts or "\0" in path)


def encoder_folder(root: Path, name: str, entries: list | None) -> Path:
    """The folder holding the model's encoder: where its Transformer module lies (``root`` itself for a model that is
    no sentence-transformers model; ``entries`` from :func:`modules`). A model whose first module is no Transformer
    (a static embedding, a router of several encoders, an old save's ``models.BERT``) has no encoder bertfeat can
    read, and is refused saying so."""
    if not entries:
        return root
    kind, sub = entries[0]["type"], entries[0]["path"]  # strings: :func:`modules` checked every entry
    folder = root / sub if sub else root
    if not kind.endswith("Transformer"):
        hint = (f" Its folder {folder} holds a config.json: pass model={str(folder)!r} to embed with that encoder "
                "alone (without the model's own settings)." if sub and (folder / "config.json").is_file() else "")
        raise ModelNotAvailableError(
            f"model={name!r}: the first module in {root / 'modules.json'} is {kind!r} (path {sub!r}), not a "
            "sentence-transformers Transformer: bertfeat embeds texts with the hidden states of a transformer "
            "encoder, which this model does not start with (a static embedding, a router of several encoders, or an "
            f"old save whose modules sentence-transformers no longer loads).{hint}"
        )
    if not folder.is_dir():
        raise ModelNotAvailableError(
            f"model={name!r}: {root / 'modules.json'} puts the model's Transformer in {sub!r}, but there is no folder "
            f"{folder}: the copy or download is incomplete. Copy or download the whole model folder."
        )
    return folder


def sentence_transformers_config(root: Path, encoder: Path, entries: list | None, name: str):
    """The model's own pooling, normalization, length and lowercasing, and the modules of its own that bertfeat does
    not apply, when it is a sentence-transformers model (``entries`` from :func:`modules`), as the ``st_*`` fields
    of :class:`bertfeat.models.ModelSpec`."""
    if entries is None:
        return {}
    pooling, normalize, not_applied, include_prompt = None, False, [], True
    for i, m in enumerate(entries):
        kind = m["type"].rsplit(".", 1)[-1]  # the class: "WeightedLayerPooling" is no Pooling
        if kind == "Normalize":
            normalize = True
        elif i and not (kind == "Pooling" and pooling is None):  # Dense, LayerNorm, a second Pooling, ...
            not_applied.append(f"{kind} ({m['path'] or m.get('name', '?')})")
        elif kind == "Pooling":
            f = root / m["path"] / "config.json"
            if not f.is_file():
                raise ModelNotAvailableError(
                    f"model={name!r}: {root / 'modules.json'} names a Pooling module in {m['path']!r}, but there is "
                    f"no {f}: the copy or download is incomplete. Copy or download the whole model folder."
                )
            cfg = read_json(f, name, dict, "the Pooling module's settings")
            pooling = _pooling_modes(cfg, f, name)
            # false: sentence-transformers pools a text's tokens without its prompt's (INSTRUCTOR-style models)
            include_prompt = cfg.get("include_prompt", True)
            if not isinstance(include_prompt, bool):  # read by its truth there: "false" would pool the prompt
                raise ModelNotAvailableError(
                    f"model={name!r}: {f} says \"include_prompt\": {json.dumps(include_prompt)}, where true or false "
                    "is expected: fix the file, or download the model again."
                )
    st_max, lower = None, False
    sb, sb_config = transformer_settings(encoder, name)
    if sb is not None:
        st_max, lower = sb_config.get("max_seq_length"), sb_config.get("do_lower_case")
        lower = False if lower is None else lower
        if not (st_max is None or (isinstance(st_max, int) and not isinstance(st_max, bool) and st_max > 0)):
            raise ModelNotAvailableError(
                f"model={name!r}: {sb} says \"max_seq_length\": {json.dumps(st_max)}, where a positive whole number "
                "(or null) is expected: fix the file, or download the model again."
            )
        if not isinstance(lower, bool):  # "false" would be truthy: lowercase every text against the author's word
            raise ModelNotAvailableError(
                f"model={name!r}: {sb} says \"do_lower_case\": {json.dumps(lower)}, where true or false is "
                "expected: fix the file, or download the model again."
            )
        not_applied += _load_settings_not_applied(sb, sb_config, name)
    return {"st_pooling": pooling, "st_normalize": normalize, "st_max_seq_length": st_max,
            "st_not_applied": tuple(not_applied), "st_do_lower_case": lower, "st_include_prompt": include_prompt,
            "st_settings_file": sb.name if sb is not None else None}


# What sentence-transformers passes from the Transformer's settings file to AutoConfig, AutoTokenizer and AutoModel
# (the older names, then those of sentence-transformers 6), and the settings among them that change no vector bertfeat
# gives: trust_remote_code (sentence-transformers drops it), where to download from, the dtype (bertfeat's dtype=),
# the attention's implementation (the same math), the padding side (bertfeat pads each text on its right and pools
# each text alone: what a text batched alone gets), the pooler (never read)
_LOAD_SETTINGS = ("config_args", "tokenizer_args", "model_args", "config_kwargs", "processor_kwargs", "model_kwargs")
_SAME_VECTORS = {"trust_remote_code", "cache_dir", "revision", "token", "use_auth_token", "local_files_only",
                 "subfolder", "torch_dtype", "dtype", "attn_implementation", "low_cpu_mem_usage", "device_map",
                 "padding_side", "add_pooling_layer"}
# and the tokenizer's call settings that give each text the same tokens (bertfeat pads and batches itself)
_SAME_TOKENS = {"padding", "padding_side", "pad_to_multiple_of", "return_tensors", "return_attention_mask",
                "return_token_type_ids", "verbose"}


def _load_settings_not_applied(sb: Path, settings: dict, name: str) -> list[str]:
    """The settings ``sb`` (the Transformer's settings file) gives sentence-transformers to load the encoder and its
    tokenizer with, or to call the tokenizer with, which bertfeat does not apply (it loads and calls them as
    config.json and the tokenizer files say), as
    ``'config_args {"layer_norm_eps": 0.001} (sentence_bert_config.json)'``; those that change no vector left out."""
    found = []
    for key in _LOAD_SETTINGS:
        value = settings.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):  # sentence-transformers fails on it too
            raise ModelNotAvailableError(
                f"model={name!r}: {sb} says {json.dumps(key)}: {json.dumps(value)[:120]}, where an object of settings "
                "(or null) is expected: fix the file, or download the model again."
            )
        other = {k: v for k, v in value.items() if k not in _SAME_VECTORS}
        if other:
            found.append(f"{key} {json.dumps(other, sort_keys=True)} ({sb.name})")
    # sentence-transformers 6: which of the model's outputs are its token embeddings (a "fill-mask" Transformer's are
    # the masked-LM head's logits, SPLADE's; bertfeat's are always the encoder's hidden states)
    task = settings.get("transformer_task")
    if task not in (None, "feature-extraction"):
        found.append(f"transformer_task {json.dumps(task)} ({sb.name})")
    modalities = settings.get("modality_config")
    if modalities is not None and not isinstance(modalities, dict):  # sentence-transformers fails on it too
        raise ModelNotAvailableError(
            f"model={name!r}: {sb} says \"modality_config\": {json.dumps(modalities)[:120]}, where an object of "
            "settings per modality (or null) is expected: fix the file, or download the model again."
        )
    text = (modalities or {}).get("text") if task in (None, "feature-extraction") else None
    output = text.get("method_output_name", "last_hidden_state") if isinstance(text, dict) else "last_hidden_state"
    if output != "last_hidden_state":
        found.append(f"modality_config {json.dumps({'text': text}, sort_keys=True)} ({sb.name})")
    # sentence-transformers 6: what its tokenizer is called with, by modality ("text", and "common" to every one)
    calls = settings.get("processing_kwargs")
    if calls is not None:
        if not (isinstance(calls, dict) and all(isinstance(v, dict) for v in calls.values())):
            raise ModelNotAvailableError(
                f"model={name!r}: {sb} says \"processing_kwargs\": {json.dumps(calls)[:120]}, where an object of "
                "settings per modality (or null) is expected: fix the file, or download the model again."
            )
        other = {bucket: kept for bucket in ("common", "text")
                 if (kept := {k: v for k, v in calls.get(bucket, {}).items() if k not in _SAME_TOKENS})}
        if other:
            found.append(f"processing_kwargs {json.dumps(other, sort_keys=True)} ({sb.name})")
    return found


# The Transformer module's own settings file, in its folder, by the names sentence-transformers tries in turn (older
# releases saved it under the encoder family's name)
TRANSFORMER_SETTINGS = tuple(f"sentence_{family}_config.json" for family in (
    "bert", "roberta", "distilbert", "camembert", "albert", "xlm-roberta", "xlnet"))


def transformer_settings(encoder: Path, name: str) -> tuple[Path | None, dict]:
    """The Transformer module's settings file and what it holds: the first of :data:`TRANSFORMER_SETTINGS` in
    ``encoder`` that holds any, as sentence-transformers reads them (an empty one is passed over); (None, {}) if
    none does."""
    for file in TRANSFORMER_SETTINGS:
        f = encoder / file
        if f.is_file():
            settings = read_json(f, name, dict, "the Transformer module's settings")
            if settings:
                return f, settings
    return None, {}


def prompts(root: Path, name: str) -> dict:
    """``prompts`` and ``default_prompt_name`` from a sentence-transformers config, when the model has one."""
    f = root / "config_sentence_transformers.json"
    if not f.is_file():
        return {}
    cfg = read_json(f, name, dict, "the model's sentence-transformers settings (its prompts)")
    found = cfg.get("prompts") or {}
    if not isinstance(found, dict) or not all(isinstance(k, str) and isinstance(v, (str, type(None)))
                                              for k, v in found.items()):
        raise ModelNotAvailableError(f"model={name!r}: \"prompts\" in {f} should map names to strings.")
    # a null prompt is the empty one, as sentence-transformers reads it (no text put before a text)
    found = {k: "" if v is None else v for k, v in found.items()}
    default = cfg.get("default_prompt_name")
    if default is not None and not isinstance(default, str):
        raise ModelNotAvailableError(
            f"model={name!r}: {f} says \"default_prompt_name\": {json.dumps(default)}, where the name of one of its "
            "prompts or null is expected: fix the file, or download the model again."
        )
    if default is not None and default not in found:  # sentence-transformers refuses to load such a model
        raise ModelNotAvailableError(
            f"model={name!r}: {f} says \"default_prompt_name\": {json.dumps(default)}, which names none of its "
            f"prompts ({list(found)}); sentence-transformers refuses to load it too: fix the file (name one of the "
            "prompts, or null), or download the model again."
        )
    return {"prompts": tuple(found.items()), "default_prompt_name": default}


# sentence-transformers' poolings, in the order it concatenates them, with the keys older saves say them by; bertfeat's
# three are among them, the others are reported as named, for `bertfeat info` to say bertfeat does not offer them
ST_POOLINGS = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
_LEGACY_KEYS = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_tokens",
                "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


def _pooling_modes(cfg: dict, f: Path, name: str) -> tuple[str, ...]:
    """The poolings a Pooling module's config.json gives, as sentence-transformers reads it: ``pooling_mode`` (one
    name, or a list of them: what sentence-transformers 5 and later write), else the older ``pooling_mode_*_tokens``
    switches in its concatenation order, and ``mean`` where none is on."""
    mode = cfg.get("pooling_mode")
    if mode is None:
        return tuple(p for p, key in zip(ST_POOLINGS, _LEGACY_KEYS) if cfg.get(key)) or ("mean",)
    modes = (mode,) if isinstance(mode, str) else tuple(mode) if isinstance(mode, list) else ()
    if not modes or not all(isinstance(m, str) and m in ST_POOLINGS for m in modes):
        raise ModelNotAvailableError(
            f"model={name!r}: {f} says \"pooling_mode\": {json.dumps(mode)}, where sentence-transformers expects one "
            f"of {list(ST_POOLINGS)} or a list of them: fix the file, or download the model again."
        )
    return modes
