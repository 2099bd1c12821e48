"""The frozen description of an embedding recipe, its parsing from user parameters, and its fingerprint.

A :class:`Recipe` says everything that decides the numbers in an embedding: the model's content (weights, tokenizer
and config hashes), pooling, layers, layer aggregation, window length, long-text handling, normalization, dtype, the
text prefix (a model prompt such as "query: ") and whether it is pooled, and bertfeat's embedding-format version. Its :meth:`Recipe.fingerprint` keys the cache and is written into provenance.
Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import warnings
from dataclasses import asdict, dataclass, field, replace

POOLINGS = ("cls", "mean", "max")
LAYER_AGGS = ("mean", "concat")
LONG_TEXT_MODES = ("truncate", "chunk")
DTYPES = ("auto", "float32", "bfloat16", "float16")
MISSING_POLICIES = ("error", "zero", "nan")

# Bump when a code change alters the vectors produced for an unchanged recipe, so old cache rows are never reused.
# 2: under long_text="chunk", several layers averaged (layer_agg="mean") are each combined across windows first and
#    averaged after, so max pooling is the max over all of a text's tokens per layer, as when derived from the
#    all-layers recipe (Recipe.all_layers).
FORMAT_VERSION = 2
# The same for recipes with a prefix only (the others keep their fingerprints and cache entries):
# 1: the prefix is tokenized together with each text (prefix + text), as sentence-transformers reads a prompt; before,
#    it was tokenized alone and put before the text's own tokens, which differs on byte-level BPE and SentencePiece
#    tokenizers (RoBERTa, XLM-R, multilingual-e5's "query: ").
PREFIX_FORMAT = 1
# The same for the models of one family (model_type in config.json): a change that alters that family's vectors
# only. The other families keep their fingerprints and cache entries.
# 1 (2026-11-26): big_bird runs full attention from load (block-sparse attention saw the padding of a batch);
#   convbert and yoso run each length of a batch in a pass of its own (their vectors depended on the texts batched
#   with them); modernbert's last layer is its output after the final norm also when other layers are asked for.
MODEL_FORMATS = {"big_bird": 1, "convbert": 1, "yoso": 1, "modernbert": 1}
# The same for a family's bfloat16 and float16 recipes only (its float32 vectors unchanged, their key kept), where
# larger than the family's MODEL_FORMATS:
# 1 (2026-11-27; convbert's 2, past its 1 above): a model whose embeddings a product projects to the hidden size
#   (albert, electra; convbert and deberta-v2 given an embedding_size) keeps its residual stream in float32 after
#   each layer norm on CPU, as on a GPU (backend._norms_in_float32); before, CPU autocast left it in half precision,
#   rounded at every layer.
LOW_PRECISION_MODEL_FORMATS = {"albert": 1, "electra": 1, "deberta-v2": 1, "convbert": 2}


def model_format(model_type: str, dtype: str = "float32") -> int:
    """The vector format of a model family in ``dtype`` (:data:`MODEL_FORMATS`, and in half precision
    :data:`LOW_PRECISION_MODEL_FORMATS` where larger; 0 where its vectors never changed)."""
    low = LOW_PRECISION_MODEL_FORMATS.get(model_type, 0) if dtype in ("bfloat16", "float16") else 0
    return max(MODEL_FORMATS.get(model_type, 0), low)


def parse_pooling(pooling) -> tuple[str, ...]:
    """Parse ``"mean"``, ``"cls+mean"`` or ``["cls", "mean"]`` into a tuple of pooling names, in the given order."""
    if isinstance(pooling, str):
        parts = [p.strip() for p in pooling.split("+")]
    elif isinstance(pooling, (list, tuple)) and all(isinstance(p, str) for p in pooling):
        parts = [p.strip() for p in pooling]
    else:
        raise ValueError(
            f"pooling={pooling!r} is not valid: expected one of {list(POOLINGS)} or a '+'-joined combination "
            "such as 'cls+mean'."
        )
    bad = [p for p in parts if p not in POOLINGS]
    if not parts or bad:
        raise ValueError(
            f"pooling={pooling!r} is not valid: unknown pooling {bad or parts!r}; valid choices are "
            f"{list(POOLINGS)}, alone or joined with '+' (for example 'cls+mean')."
        )
    if len(set(parts)) != len(parts):
        raise ValueError(f"pooling={pooling!r} names a pooling twice; name each of {list(POOLINGS)} at most once.")
    return tuple(parts)


DEFAULT_LAST_LAYERS = 4


def default_layers(num_layers: int) -> tuple[int, ...]:
    """The evidence-based default (docs/defaults.md): the last four transformer layers, or all of them if fewer."""
    return tuple(range(max(1, num_layers - DEFAULT_LAST_LAYERS + 1), num_layers + 1))


def parse_layers(layers, num_layers: int, layer_agg: str = "mean") -> tuple[int, ...]:
    """Turn ``layers`` (an int or a list of ints, negative counting from the last; a numpy array of ints is read as its
    list) into absolute indices.

    Index 0 is the embedding output and ``num_layers`` the last transformer layer, as in Hugging Face's
    ``hidden_states``. ``None`` is :func:`default_layers`. With ``layer_agg="mean"`` the order does not matter and
    the result is sorted, so equal recipes have equal fingerprints; with ``"concat"`` the user's order is kept (it
    orders the features).
    """
    if layers is None:
        return default_layers(num_layers)
    valid = f"valid indices are 0..{num_layers} (0 is the embedding output) or -{num_layers + 1}..-1"
    given = layers
    if getattr(layers, "ndim", None) in (0, 1) and hasattr(layers, "tolist"):  # a numpy array: read as its list
        layers = layers.tolist()
    items = [layers] if _is_int(layers) else layers
    if isinstance(layers, str) or not isinstance(items, (list, tuple, range)) or not all(_is_int(i) for i in items):
        raise ValueError(
            f"layers={given!r} is not valid: expected an int, a list of ints, or None (the last four layers, or all "
            f"of a model with fewer); {valid}."
        )
    if len(items) == 0:
        raise ValueError(f"layers={given!r} is empty: name at least one layer; {valid}.")
    out = []
    for i in items:
        i = int(i)
        if not -(num_layers + 1) <= i <= num_layers:
            raise ValueError(f"layers={given!r}: layer {i} is out of range; the model has {num_layers} layers, so {valid}.")
        out.append(i % (num_layers + 1))
    if len(set(out)) != len(out):
        raise ValueError(f"layers={given!r} names the same layer twice (as {out}); name each layer once.")
    return tuple(sorted(out)) if layer_agg == "mean" else tuple(out)


def check_choice(name: str, value, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is not valid: expected one of {list(choices)}.")
    return value


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


@dataclass(frozen=True)
class Recipe:
    """Everything that decides an embedding's numbers. Hashable, picklable, and torch-free.

    ``model`` is for people (the name or path as given); the cache key uses the content hashes instead, so the
    same weights reached from two virtualenvs (say Python and R) share one cache.
    """

    model: str
    weights_sha256: str
    tokenizer_sha256: str
    config_sha256: str
    hidden_size: int
    num_layers: int
    pooling: tuple[str, ...]
    layers: tuple[int, ...]
    layer_agg: str
    max_length: int
    long_text: str
    stride: int
    normalize: bool
    dtype: str
    # Prepended to every text (and every long-text window), its tokens inside max_length: a model prompt such as
    # "query: ". Resolved from prompt_name= when that was given, so the fingerprint holds the text that decides
    # the numbers.
    prefix: str = ""
    # False where the model's pooling leaves the prefix out (sentence-transformers' "include_prompt": false): the
    # first token and the prefix's are attended to but not mean- or max-pooled. Only with a prefix; True (pooled
    # with the text, as ever) stays out of the key.
    pool_prefix: bool = True
    format_version: int = FORMAT_VERSION
    # :func:`model_format` of the model's family; 0 (most families) stays out of the key
    model_format: int = 0
    _fingerprint: str = field(default="", init=False, repr=False, compare=False)

    def __setstate__(self, state):
        # A recipe unpickled (inside a fitted estimator) describes the vectors this bertfeat computes for it: its
        # fingerprint is recomputed under this version's key rules, and its format is this version's. Kept as
        # pickled, a recipe of an older (or newer) format looked up the other code's vectors in the cache and wrote
        # this code's beside them under the same key, silently; a recipe fitted anew keys them apart.
        state = dict(state)
        state.pop("_fingerprint", None)
        pickled = state.get("format_version", FORMAT_VERSION)
        state["format_version"] = FORMAT_VERSION
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_fingerprint", "")
        if pickled != FORMAT_VERSION:
            from bertfeat.exceptions import user_stacklevel

            warnings.warn(
                f"This embedding recipe was pickled by a bertfeat of embedding format {pickled}, and this bertfeat "
                f"computes format {FORMAT_VERSION}: for some recipes (see FORMAT_VERSION in bertfeat/recipe.py) its "
                "features may differ from those at fit. Fit again with this bertfeat, or load the pipeline with the "
                "bertfeat it was fitted with.",
                UserWarning, stacklevel=user_stacklevel(),
            )

    @property
    def layer_groups(self) -> tuple[tuple[int, ...], ...]:
        """Layers pooled into one block each: all together for ``"mean"``, one each for ``"concat"``."""
        if self.layer_agg == "mean":
            return (self.layers,)
        return tuple((layer,) for layer in self.layers)

    @property
    def n_blocks(self) -> int:
        return len(self.pooling) * len(self.layer_groups)

    @property
    def n_features(self) -> int:
        return self.n_blocks * self.hidden_size

    def all_layers(self) -> "Recipe":
        """The recipe every pooling/layers/layer_agg/normalize choice can be derived from, with the same model,
        window, long-text handling and dtype: CLS, mean and max pooling of every layer, concatenated, unnormalized.

        :func:`bertfeat.encode.derive` turns its vectors into this recipe's (see ``BertEmbedder(cache_all_layers=)``).
        """
        return replace(self, pooling=POOLINGS, layers=tuple(range(self.num_layers + 1)), layer_agg="concat",
                       normalize=False)

    def key_dict(self) -> dict:
        """The fields that decide the vectors: the model's display name is left out on purpose."""
        d = asdict(self)
        d.pop("model")
        d.pop("_fingerprint")
        if not self.prefix:  # recipes without a prefix keep the fingerprints (and cache entries) they always had
            d.pop("prefix")
        else:
            d["prefix_format"] = PREFIX_FORMAT
        if self.pool_prefix or not self.prefix:  # recipes that pool their prefix keep their fingerprints
            d.pop("pool_prefix")
        if not self.model_format:  # families whose vectors never changed keep their fingerprints
            d.pop("model_format")
        d["pooling"] = list(self.pooling)
        d["layers"] = list(self.layers)
        return d

    def fingerprint(self) -> str:
        if not self._fingerprint:
            blob = json.dumps(self.key_dict(), sort_keys=True, separators=(",", ":")).encode()
            object.__setattr__(self, "_fingerprint", hashlib.sha256(blob).hexdigest()[:32])
        return self._fingerprint

    def to_dict(self) -> dict:
        d = self.key_dict()
        d["model"] = self.model
        d["fingerprint"] = self.fingerprint()
        return d

    def feature_names(self, column: str) -> list[str]:
        """Stable, sortable names: ``{column}_{pooling}_{index}``, plus ``_l{layer}`` when layers are concatenated.

        The index is zero-padded to the width of the largest index, and the layer to the width of the model's last
        layer (``l02``, ``l10`` on a 12-layer model; ``l2`` under 10 layers, as ever), so names sort in feature order
        (layers listed in ascending order).
        """
        width = len(str(self.hidden_size - 1))
        layer_width = len(str(self.num_layers))
        names = []
        for pool in self.pooling:
            for group in self.layer_groups:
                tag = f"{pool}_l{group[0]:0{layer_width}d}" if self.layer_agg == "concat" else pool
                names.extend(f"{column}_{tag}_{i:0{width}d}" for i in range(self.hidden_size))
        return names
