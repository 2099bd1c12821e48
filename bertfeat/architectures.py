"""Where each encoder family the fused CPU pass runs keeps its weights, and how it counts positions.

The fused pass (:mod:`bertfeat.fastbert`) computes one post-norm encoder: embeddings -> layer norm, then per layer
``LN(x + O(attention(QKV(x)))) -> LN(x + W2(gelu(W1(x))))``. BERT, RoBERTa / XLM-RoBERTa / CamemBERT, DistilBERT
and MPNet all compute exactly that and differ only in module names, in where positions start and in MPNet's
relative-position bias on the attention scores. An adapter per family reads those from the transformers model into
an :class:`EncoderWeights`; :func:`supports` says which configurations it covers. Anything else keeps the
transformers forward pass. Only :mod:`bertfeat.fastbert` uses this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Linear = tuple[Any, Any]  # (weight (out, in), bias (out,))
Norm = tuple[Any, Any]  # (weight, bias)


@dataclass
class LayerWeights:
    """One encoder layer, as the transformers modules hold them (not yet packed)."""

    query: Linear
    key: Linear
    value: Linear
    attention_out: Linear
    attention_norm: Norm
    up: Linear
    down: Linear
    output_norm: Norm


@dataclass
class EncoderWeights:
    """What the fused pass needs from a model.

    ``padding_idx`` None means positions ``0, 1, 2, ...``; an int means RoBERTa's rule: a token equal to
    ``padding_idx`` gets position ``padding_idx`` and the others count up from ``padding_idx + 1``, skipping it.
    ``type0`` is the token-type-0 embedding added to every token (None when the family has no token types).
    ``relative_bias`` is MPNet's (buckets, heads) table, looked up by :func:`mpnet_relative_buckets`.
    """

    word: Any
    position: Any
    type0: Any
    embedding_norm: Norm
    eps: float
    layers: list[LayerWeights]
    padding_idx: int | None = None
    relative_bias: Any = None


def _linear(module) -> Linear:
    return module.weight, module.bias


def _norm(module) -> Norm:
    return module.weight, module.bias


def _bert_layers(model) -> list[LayerWeights]:
    """``BertLayer`` and its copies (RoBERTa, XLM-RoBERTa, CamemBERT)."""
    return [
        LayerWeights(
            query=_linear(layer.attention.self.query), key=_linear(layer.attention.self.key),
            value=_linear(layer.attention.self.value), attention_out=_linear(layer.attention.output.dense),
            attention_norm=_norm(layer.attention.output.LayerNorm), up=_linear(layer.intermediate.dense),
            down=_linear(layer.output.dense), output_norm=_norm(layer.output.LayerNorm),
        )
        for layer in model.encoder.layer
    ]


def _bert(model) -> EncoderWeights:
    emb = model.embeddings
    return EncoderWeights(
        word=emb.word_embeddings.weight, position=emb.position_embeddings.weight,
        type0=emb.token_type_embeddings.weight[0], embedding_norm=_norm(emb.LayerNorm), eps=emb.LayerNorm.eps,
        layers=_bert_layers(model),
    )


def _roberta(model) -> EncoderWeights:
    # BERT's layers; positions from padding_idx + 1, token type 0 (RoBERTa's only type) as BERT's
    weights = _bert(model)
    weights.padding_idx = int(model.embeddings.padding_idx)
    return weights


def _distilbert(model) -> EncoderWeights:
    emb = model.embeddings
    return EncoderWeights(
        word=emb.word_embeddings.weight, position=emb.position_embeddings.weight, type0=None,
        embedding_norm=_norm(emb.LayerNorm), eps=emb.LayerNorm.eps,
        layers=[
            LayerWeights(
                query=_linear(layer.attention.q_lin), key=_linear(layer.attention.k_lin),
                value=_linear(layer.attention.v_lin), attention_out=_linear(layer.attention.out_lin),
                attention_norm=_norm(layer.sa_layer_norm), up=_linear(layer.ffn.lin1), down=_linear(layer.ffn.lin2),
                output_norm=_norm(layer.output_layer_norm),
            )
            for layer in model.transformer.layer
        ],
    )


def _mpnet(model) -> EncoderWeights:
    emb = model.embeddings
    return EncoderWeights(
        word=emb.word_embeddings.weight, position=emb.position_embeddings.weight, type0=None,
        embedding_norm=_norm(emb.LayerNorm), eps=emb.LayerNorm.eps, padding_idx=int(emb.padding_idx),
        relative_bias=model.encoder.relative_attention_bias.weight,
        layers=[
            LayerWeights(
                query=_linear(layer.attention.attn.q), key=_linear(layer.attention.attn.k),
                value=_linear(layer.attention.attn.v), attention_out=_linear(layer.attention.attn.o),
                attention_norm=_norm(layer.attention.LayerNorm), up=_linear(layer.intermediate.dense),
                down=_linear(layer.output.dense), output_norm=_norm(layer.output.LayerNorm),
            )
            for layer in model.encoder.layer
        ],
    )


# model_type -> (weights reader, the config key naming the feed-forward activation)
_FAMILIES: dict[str, tuple[Callable[[Any], EncoderWeights], str]] = {
    "bert": (_bert, "hidden_act"),
    "roberta": (_roberta, "hidden_act"),
    "xlm-roberta": (_roberta, "hidden_act"),
    "camembert": (_roberta, "hidden_act"),
    "distilbert": (_distilbert, "activation"),
    "mpnet": (_mpnet, "hidden_act"),
}


def supports(config) -> bool:
    """A post-norm encoder of a family above, with erf GELU and absolute (or MPNet's relative) positions."""
    family = _FAMILIES.get(getattr(config, "model_type", None))
    return (
        family is not None
        and getattr(config, family[1], None) == "gelu"
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and not getattr(config, "is_decoder", False)
        and not getattr(config, "add_cross_attention", False)
        and config.hidden_size % config.num_attention_heads == 0
    )


def encoder_weights(model) -> EncoderWeights | None:
    """The model's weights for the fused pass, or None when it is not laid out as its family should be."""
    family = _FAMILIES.get(getattr(model.config, "model_type", None))
    if family is None:
        return None
    try:
        return family[0](model)
    except AttributeError:  # a model class that shares the model_type but not the module layout
        return None


def mpnet_relative_buckets(tokens: int, device=None, num_buckets: int = 32, max_distance: int = 128):
    """MPNet's bucket of each (query, key) distance: (tokens, tokens) long, as ``MPNetEncoder.compute_position_bias``.

    Half the buckets are for keys before the query and half for keys after; within each half, distances below a
    quarter of ``num_buckets`` get their own bucket and longer ones share log-spaced buckets up to
    ``max_distance``. transformers always calls it with 32 buckets, whatever the config says, and so does this.
    """
    import math

    import torch

    position = torch.arange(tokens, dtype=torch.long, device=device)
    n = position[:, None] - position[None, :]  # query - key
    half = num_buckets // 2
    bucket = (n < 0).to(torch.long) * half
    n = n.abs()
    exact = half // 2
    large = exact + (torch.log(n.float() / exact) / math.log(max_distance / exact) * (half - exact)).to(torch.long)
    large = torch.clamp(large, max=half - 1)
    return bucket + torch.where(n < exact, n, large)
