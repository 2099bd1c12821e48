"""Loading a model's files for :mod:`bertfeat.backend`: its tokenizer (once per process for the same files, shared by
a worker's tokenization check and the model's backend), its config, and its weights, checked against the config and
the tokenizer and for NaN or infinity before any text runs (the checks ``bertfeat info`` runs too), with transformers'
load-time bars and logs kept quiet. Also what the tokenizer puts around a text (``[CLS]`` / ``[SEP]``).
"""

from __future__ import annotations

import functools

from bertfeat.exceptions import ModelNotAvailableError
from bertfeat.fork_safe import ForkSafeLock
from bertfeat.models import ModelSpec
from bertfeat.recent import keep_recent
from bertfeat.shared_setting import SharedSetting
from bertfeat.tokens import ContentTokenizer

# ((path, tokenizer sha256, lowercase, trust_remote_code), (transformers tokenizer, its ContentTokenizer)), the one used
# least recently first: a Ray or Spark worker's check of its tokenization (bertfeat.worker_recipe) loads them before
# its model does, and building them is not free (1.1 s for a 250,000-token vocabulary: loading, copying the Rust
# tokenizer, the probe check)
_TOKENIZERS: list[tuple] = []
_TOKENIZERS_KEPT = 4
_TOKENIZERS_LOCK = ForkSafeLock()  # not backend's _LOCK, which get_backend holds while a backend loads its tokenizer


def load_tokenizer(spec: ModelSpec, trust_remote_code: bool = False) -> tuple:
    """The model's transformers tokenizer and its :class:`~bertfeat.tokens.ContentTokenizer` (lowercasing where the
    model's sentence-transformers config says so), loaded once per process for the same tokenizer files and shared
    by every caller: the worker's tokenization check and the model's backend. Neither changes them after. The
    :data:`_TOKENIZERS_KEPT` used last are kept."""
    key = (spec.path, spec.tokenizer_sha256, spec.st_do_lower_case, trust_remote_code)
    with _TOKENIZERS_LOCK:
        found = _kept_tokenizer(key)
    if found is not None:
        return found
    tokenizer = _auto_tokenizer(spec.path, spec.name, trust_remote_code)
    loaded = (tokenizer, ContentTokenizer(tokenizer, lowercase=spec.st_do_lower_case))
    with _TOKENIZERS_LOCK:
        found = _kept_tokenizer(key)  # two threads loading at once: both take the first kept
        if found is None:
            keep_recent(_TOKENIZERS, (key, loaded), _TOKENIZERS_KEPT)
    return found or loaded


def _auto_tokenizer(path: str, name: str, trust_remote_code: bool):
    """transformers' tokenizer of the model folder ``path`` (the model ``name``); a folder holding the tokenizer's
    settings but no vocabulary refused saying so, where transformers said "Couldn't instantiate the backend tokenizer"
    and to install sentencepiece or tiktoken, which cannot help there."""
    from pathlib import Path

    from transformers import AutoTokenizer

    from bertfeat.hub import load_options
    from bertfeat.model_folder import no_vocabulary

    try:
        with _quiet_transformers():
            return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code, **load_options())
    except ValueError as exc:
        refusal = no_vocabulary(Path(path), name) if "instantiate the backend tokenizer" in str(exc) else None
        if refusal is None:
            raise
        raise ModelNotAvailableError(refusal) from None


def _kept_tokenizer(key: tuple) -> tuple | None:
    """The tokenizers kept for ``key``, made the ones used last; None where none are (holding the lock)."""
    entry = next((entry for entry in _TOKENIZERS if entry[0] == key), None)
    if entry is None:
        return None
    keep_recent(_TOKENIZERS, entry, _TOKENIZERS_KEPT)
    return entry[1]


def forget_tokenizers() -> None:
    """Drop every tokenizer kept (:func:`bertfeat.backend.clear_backends`)."""
    with _TOKENIZERS_LOCK:
        _TOKENIZERS.clear()


def _silence_transformers() -> tuple[int, bool]:
    """Silence transformers' load-time progress bars and info logs: the user's verbosity and bar setting before."""
    from transformers.utils import logging as hf_logging

    saved = (hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled())
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    return saved


def _lift_silence(saved: tuple[int, bool]) -> None:
    from transformers.utils import logging as hf_logging

    level, bar = saved
    hf_logging.set_verbosity(level)
    if bar:
        hf_logging.enable_progress_bar()


# transformers' settings are the process's: loads that overlap (threads) share one silence, the first to begin sets
# it and the last to end lifts it; a child forked while a thread loaded runs no load, and has the silence lifted
_QUIET = SharedSetting(_silence_transformers, _lift_silence, lift_in_forked_child=True)


def _quiet_transformers():
    """Silence transformers' load-time progress bars and info logs, restoring the user's settings after.

    The settings are the process's: loads that overlap (threads) share one silence, which the first to begin sets and
    the last to end lifts, putting back what the first found. Each saving and putting back its own, a load that began
    inside another's silence put that silence back after it, for good (every transformers warning lost)."""
    return _QUIET.held()


def load_checked_model(spec: ModelSpec, dtype, tokenizer, trust_remote_code: bool = False):
    """The model's encoder from its safetensors weights, refused (naming the weights) if they do not fit its config
    or the tokenizer; see :func:`check_weights_fit`."""
    from transformers import AutoModel

    from bertfeat.hub import load_options

    # Mis-shaped weights are loaded (as random) and reported rather than raised, so that the one check below names
    # them along with missing and unused ones; the check refuses the model either way. No attention maps: bertfeat
    # reads none, and a config.json asking for them ("output_attentions": true) made transformers 5 refuse the SDPA
    # kernel asked for below, and transformers 4 keep every layer's maps (batch x heads x tokens^2) on each pass.
    kwargs = dict(_dtype_argument(dtype), use_safetensors=True, trust_remote_code=trust_remote_code,
                  output_loading_info=True, ignore_mismatched_sizes=True, output_attentions=False, **load_options())
    try:
        model, info = AutoModel.from_pretrained(spec.path, attn_implementation="sdpa", **kwargs)
    except (ValueError, ImportError):  # architectures without an SDPA kernel
        model, info = AutoModel.from_pretrained(spec.path, attn_implementation="eager", **kwargs)
    # bertfeat reads the forward pass's outputs by name; a config saying "return_dict": false (a model saved for
    # TorchScript or ONNX export) makes it return tuples
    model.config.return_dict = True
    encoder = getattr(model, "base_model", model)
    check_weights_fit(spec.name, spec.path, info.get("missing_keys", ()), info.get("unexpected_keys", ()),
                      info.get("mismatched_keys", ()), [n for n, _ in encoder.named_children()],
                      getattr(model, "base_model_prefix", ""))
    rows = _embedding_rows(model)
    if rows is not None:
        check_vocab_fits(spec.name, len(tokenizer), rows, getattr(model.config, "vocab_size", None),
                         getattr(tokenizer, "added_tokens_decoder", None))
    check_weights_finite(spec.name, spec.path, encoder.named_parameters())
    return model


def _dtype_argument(dtype) -> dict:
    """``from_pretrained``'s dtype argument under the name the installed transformers takes: ``dtype=`` since 4.56,
    ``torch_dtype=`` before (where ``dtype=`` reaches the model's constructor, a TypeError naming ``__init__``)."""
    import transformers
    from packaging.version import Version

    return {"dtype" if Version(transformers.__version__).release >= (4, 56) else "torch_dtype": dtype}


def check_weights_finite(name: str, path: str, named_tensors) -> None:
    """Refuse a model whose weights hold NaN or infinity, naming the tensors that do.

    Such a checkpoint (a damaged download or conversion, a training run that diverged) loads without a complaint,
    and its NaN reaches the features of every text whose pass reads it; the load-time checks against transformers
    cannot see it, since transformers computes the same NaN (and NaN equals nothing, so it even read as padding
    changing the outputs). The modules bertfeat never reads (the pooler: it pools hidden states) are not checked.
    """
    import torch

    from bertfeat.hub import hub_download_command

    bad = []
    for key, tensor in named_tensors:
        if key.split(".", 1)[0] in _UNREAD_MODULES or not tensor.is_floating_point():
            continue
        if not bool(torch.isfinite(tensor).all()):  # counted only then: one pass over the weights of a sound model
            bad.append(f"{int((~torch.isfinite(tensor)).sum())} of {tensor.numel()} values of {key}")
    if bad:
        raise ModelNotAvailableError(
            f"model={name!r}: the weights in {path} hold NaN or infinite values ({_listed(bad)}), so every text whose "
            "pass reads them would get NaN features: the checkpoint is damaged (a failed download or conversion, or a "
            f"training run that diverged). Get the files again (for a Hugging Face model: {hub_download_command()} "
            "<name> --force-download) or use another checkpoint."
        )


def _listed(items, n: int = 3) -> str:
    return "; ".join(items[:n]) + (f"; and {len(items) - n} more tensor(s)" if len(items) > n else "")


def check_model_files(spec: ModelSpec, trust_remote_code: bool = False) -> dict:
    """Load the model once on the CPU and check that its weights fit its config and tokenizer (``bertfeat info``).

    Returns the counts checked (weight tensors, tokenizer tokens, embedding rows); raises
    :class:`~bertfeat.exceptions.ModelNotAvailableError` naming the weights that do not fit.
    """
    import torch

    tokenizer = _auto_tokenizer(spec.path, spec.name, trust_remote_code)
    with _quiet_transformers():
        model = load_checked_model(spec, torch.float32, tokenizer, trust_remote_code)
    return _checked_counts(model, tokenizer)


def _checked_counts(model, tokenizer) -> dict:
    """What :func:`load_checked_model` checked: weight tensors, tokenizer tokens, embedding rows."""
    return {"tensors": len(model.state_dict()), "tokenizer_tokens": len(tokenizer),
            "embedding_rows": _embedding_rows(model)}


def _embedding_rows(model) -> int | None:
    """The rows of the model's token embedding table; None where it has none to tell: I-BERT's ``QuantEmbedding``
    keeps its table as a plain ``weight`` (no ``num_embeddings``: the load failed with an AttributeError), and a
    model without a token table (CANINE hashes characters) has transformers raise NotImplementedError."""
    try:
        embeddings = model.get_input_embeddings()
    except NotImplementedError:
        return None
    rows = getattr(embeddings, "num_embeddings", None)
    weight = getattr(embeddings, "weight", None)
    if rows is None and weight is not None and getattr(weight, "dim", lambda: 0)() == 2:
        rows = weight.shape[0]
    return None if rows is None else int(rows)


def _load_config(path: str, trust_remote_code: bool):
    from transformers import AutoConfig

    from bertfeat.hub import load_options

    return AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code, **load_options())


def tokenizer_puts_token_first(spec: ModelSpec, trust_remote_code: bool = False) -> bool:
    """Whether the model's tokenizer puts a special token before a text, asked of the tokenizer itself (no weights
    loaded): for a model whose tokenizer.json does not tell (``spec.special_first`` None), so that ``pooling="cls"``
    is judged at fit, before a run answered wholly from the cache, which never loads the model."""
    return _puts_token_first(spec.path, spec.tokenizer_sha256, trust_remote_code, spec.name)


@functools.lru_cache(maxsize=16)
def _puts_token_first(path: str, tokenizer_sha256: str, trust_remote_code: bool, name: str) -> bool:
    tokenizer = _auto_tokenizer(path, name, trust_remote_code)
    return bool(_special_tokens_around(tokenizer)[0])


def _special_tokens_around(tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a single sequence (``[CLS]`` / ``[SEP]`` for BERT)."""
    probe = "hello"
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return list(full[:i]), list(full[i + len(bare):])
    raise RuntimeError(f"cannot tell which special tokens {type(tokenizer).__name__} adds around a text")


# Parts of an encoder that bertfeat never reads (it pools hidden states): their weights may be absent, as many
# sentence-transformers saves drop the pooler, without changing any feature.
_UNREAD_MODULES = ("pooler",)


def check_weights_fit(name: str, path: str, missing, unexpected, mismatched, encoder_modules,
                      prefix: str = "") -> None:
    """Refuse a model whose weights file does not fit its config, naming the weights that do not fit.

    transformers loads such a model anyway, filling what is missing or mis-shaped with random numbers, so every
    process would compute different features. ``missing``, ``unexpected`` and ``mismatched`` come from
    ``from_pretrained(..., output_loading_info=True)``; ``encoder_modules`` are the names of the loaded encoder's
    top-level modules and ``prefix`` the name a task model keeps them under (``"bert"``). Unexpected weights outside
    those modules belong to heads of another task (BERT's ``cls.``, RoBERTa's ``lm_head.``) and are unused by
    design; unexpected weights inside them (a layer the config does not have, with or without the prefix) are an
    error, as are missing weights outside ``pooler``.

    Examples
    --------
    >>> check_weights_fit("m", "/m", [], ["cls.predictions.bias"], [], ["embeddings", "encoder", "pooler"])
    >>> try:
    ...     check_weights_fit("m", "/m", ["encoder.layer.3.output.dense.weight"], [], [], ["embeddings", "encoder"])
    ... except ValueError as exc:
    ...     print(str(exc)[:55])
    model='m': the weights in /m do not fit its config.json
    """
    top = set(encoder_modules)

    def module(key: str) -> str:
        if prefix and key.startswith(prefix + "."):
            key = key[len(prefix) + 1:]
        return key.split(".", 1)[0]

    missing = sorted(k for k in missing if module(k) not in _UNREAD_MODULES)
    unused = sorted(k for k in unexpected if module(k) in top)
    mismatched = sorted(mismatched, key=str)
    if not (missing or unused or mismatched):
        return
    parts = []
    if missing:
        parts.append(f"{len(missing)} weight(s) the config needs are not in the file ({_some(missing)})")
    if unused:
        parts.append(f"{len(unused)} weight(s) in the file are not used by the config ({_some(unused)})")
    elif unexpected and missing:
        parts.append(f"the file holds {len(unexpected)} weight(s) under other names ({_some(sorted(unexpected))})")
    if mismatched:
        # transformers gives (name, shape in the file, shape for the config), or the name alone (4.5x: 4.57 for one)
        shown = [k if isinstance(k, str) else f"{k[0]} {tuple(k[1])} in the file, {tuple(k[2])} for the config"
                 for k in mismatched[:3]]
        parts.append(f"{len(mismatched)} weight(s) have another shape than the config says ({'; '.join(shown)}"
                     f"{', ...' if len(mismatched) > 3 else ''})")
    hint = _prefix_hint(missing, unexpected) or (
        "Check config.json (num_hidden_layers, hidden_size, intermediate_size, vocab_size) against the weights, or "
        "re-save the model with transformers' save_pretrained()."
    )
    raise ModelNotAvailableError(
        f"model={name!r}: the weights in {path} do not fit its config.json, so part of the model would be random "
        f"and the features meaningless: {'; '.join(parts)}. {hint}"
    )


def _some(keys, n: int = 4) -> str:
    return ", ".join(keys[:n]) + (f", ... ({len(keys) - n} more)" if len(keys) > n else "")


def _prefix_hint(missing, unexpected) -> str | None:
    """When every weight carries one extra prefix (a wrapper module's name), say which."""
    if not missing or not unexpected:
        return None
    want = missing[0]
    for key in unexpected:
        if key.endswith("." + want):
            prefix = key[: -len(want)]
            if all(prefix + m in set(unexpected) for m in missing):
                return (f"Every weight name carries the prefix {prefix!r} (as a wrapper module saves them): re-save "
                        "the inner model with save_pretrained(), or strip the prefix from the keys of the "
                        "safetensors file.")
    return None


def check_vocab_fits(name: str, n_tokens: int, n_embeddings: int, vocab_size, added: dict | None = None) -> None:
    """Refuse a tokenizer that can produce ids past the model's embedding table (an index error mid-run, or a
    wrong row on some kernels). ``added``: the tokens the tokenizer adds beyond its vocabulary, by id
    (``added_tokens_decoder``), to name those past the table: tokens added after the weights were saved, or special
    tokens the vocabulary lacks, where the files and weights are one model's.

    Examples
    --------
    >>> check_vocab_fits("m", 30522, 30522, 30522)
    """
    if n_tokens <= n_embeddings:
        return
    said = (f"model={name!r}: the tokenizer has {n_tokens} tokens, but the model's embedding table has {n_embeddings} "
            f"rows (config.json vocab_size={vocab_size}), so token ids from {n_embeddings} on have no embedding")
    past = sorted(i for i in (added or {}) if i >= n_embeddings)
    if past:
        raise ModelNotAvailableError(
            f"{said}: {', '.join(repr(str(added[i])) for i in past[:5])}{', ...' if len(past) > 5 else ''} (ids "
            f"{', '.join(map(str, past[:5]))}{', ...' if len(past) > 5 else ''}), tokens the tokenizer adds beyond "
            "its vocabulary (tokens added to it after these weights were saved, or special tokens its vocabulary "
            "lacks). Use the tokenizer saved with these weights, or weights saved after "
            "model.resize_token_embeddings(len(tokenizer)) and the training of the new rows."
        )
    raise ModelNotAvailableError(
        f"{said}. The tokenizer files and the weights come from different models: use the tokenizer saved with these "
        "weights."
    )
