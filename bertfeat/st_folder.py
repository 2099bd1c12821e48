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
from pathlib import Path

from bertfeat.exceptions import ModelNotAvailableError


def modules(root: Path) -> list | None:
    """The entries of ``root/modules.json``, or None where the folder has none (not a sentence-transformers model)."""
    f = root / "modules.json"
    if not f.is_file():
        return None
    try:
        entries = json.loads(f.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return entries if isinstance(entries, list) else None


def _is_transformer(entry) -> bool:
    return isinstance(entry, dict) and str(entry.get("type", "")).endswith("Transformer")


def encoder_folder(root: Path, name: str, entries: list | None) -> Path:
    """The folder holding the model's encoder: where its Transformer module lies (``root`` itself for a model that is
    no sentence-transformers model). A model whose first module is no Transformer (a static embedding, a router of
    several encoders, an old save's ``models.BERT``) has no encoder bertfeat can read, and is refused saying so."""
    if not entries:
        return root
    first = entries[0]
    kind = first.get("type") if isinstance(first, dict) else None
    sub = first.get("path") if isinstance(first, dict) else None
    if not _is_transformer(first) or not isinstance(sub, str):
        where = root / sub if isinstance(sub, str) and sub else root
        hint = (f" Its folder {where} holds a config.json: pass model={str(where)!r} to embed with that encoder "
                "alone (without the model's own settings)." if sub and (where / "config.json").is_file() else "")
        raise ModelNotAvailableError(
            f"model={name!r}: the first module in {root / 'modules.json'} is {kind!r} (path {sub!r}), not a "
            "sentence-transformers Transformer: bertfeat embeds texts with the hidden states of a transformer "
            "encoder, which this model does not start with (a static embedding, a router of several encoders, or an "
            f"old save whose modules sentence-transformers no longer loads).{hint}"
        )
    folder = (root / sub) if sub else root
    if not folder.is_dir():
        raise ModelNotAvailableError(
            f"model={name!r}: {root / 'modules.json'} puts the model's Transformer in {sub!r}, but there is no folder "
            f"{folder}: the copy or download is incomplete. Copy or download the whole model folder."
        )
    return folder


def sentence_transformers_config(root: Path, encoder: Path, entries: list | None):
    """The model's own pooling, normalization, length and lowercasing, and the modules of its own that bertfeat does
    not apply, when it is a sentence-transformers model (``entries`` from :func:`modules`)."""
    if entries is None:
        return None, False, None, (), False
    try:
        pooling, normalize, not_applied = None, False, []
        for i, m in enumerate(entries):
            kind = m.get("type", "")
            if not kind.endswith(("Transformer", "Pooling", "Normalize")) or (i and kind.endswith("Transformer")):
                not_applied.append(f"{kind.rsplit('.', 1)[-1]} ({m.get('path') or m.get('name', '?')})")
            if kind.endswith("Pooling") and (root / m.get("path", "") / "config.json").is_file():
                cfg = json.loads((root / m["path"] / "config.json").read_text(encoding="utf-8"))
                # sentence-transformers' names, bertfeat's three among them; the others (last token, weighted mean,
                # mean over sqrt(length)) are reported as named, for `bertfeat info` to say bertfeat does not offer them
                modes = [("cls", "pooling_mode_cls_token"), ("mean", "pooling_mode_mean_tokens"),
                         ("max", "pooling_mode_max_tokens"),
                         ("mean_sqrt_len_tokens", "pooling_mode_mean_sqrt_len_tokens"),
                         ("weightedmean", "pooling_mode_weightedmean_tokens"), ("lasttoken", "pooling_mode_lasttoken")]
                pooling = tuple(p for p, key in modes if cfg.get(key)) or None
                if cfg.get("pooling_mode"):
                    pooling = tuple(p for p in str(cfg["pooling_mode"]).split("+") if p) or None
            if kind.endswith("Normalize"):
                normalize = True
        st_max, lower = None, False
        sb = encoder / "sentence_bert_config.json"  # the Transformer module's own file, in its folder
        if sb.is_file():
            sb_config = json.loads(sb.read_text(encoding="utf-8"))
            st_max, lower = sb_config.get("max_seq_length"), bool(sb_config.get("do_lower_case"))
        return pooling, normalize, st_max, tuple(not_applied), lower
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, False, None, (), False


def prompts(root: Path, name: str) -> dict:
    """``prompts`` and ``default_prompt_name`` from a sentence-transformers config, when the model has one."""
    f = root / "config_sentence_transformers.json"
    if not f.is_file():
        return {}
    try:
        cfg = json.loads(f.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ModelNotAvailableError(f"model={name!r}: {f} is not valid JSON ({exc}).") from None
    found = cfg.get("prompts") or {}
    if not isinstance(found, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        raise ModelNotAvailableError(f"model={name!r}: \"prompts\" in {f} should map names to strings.")
    default = cfg.get("default_prompt_name")
    return {"prompts": tuple(found.items()), "default_prompt_name": default if default in found else None}
