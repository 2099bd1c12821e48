"""The fused CPU forward pass for BERT-architecture encoders (see :class:`_FastBert`).

Only :mod:`bertfeat.backend` builds it; it runs over the transformers model's own weights and is checked against
that model at load time before it is used.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

log = logging.getLogger("bertfeat")

# How close a low-precision arrangement must stay to the float32 transformers forward pass on the probe sequences:
# the cosine of every real token's hidden state at every layer. bfloat16 keeps about 3 significant digits, which
# on MiniLM gives cosines above 0.9999; a wrong arrangement (a kernel that mis-computes, NaN, a transposed weight)
# falls far below.
LOW_PRECISION_MIN_COSINE = 0.99


class _FastBert:
    """BERT's forward pass on CPU over the transformers model's own weights, for pooling.

    Same math as ``BertModel`` (absolute positions, token type 0, erf GELU, post-norm), arranged for CPU speed:
    Q/K/V in one product; bias, GELU and the residual add fused into oneDNN's matrix multiply; layers above the
    highest one asked for skipped; only the asked-for hidden states kept. With a low-precision ``dtype`` the
    products and attention run in that dtype while embeddings, layer norms and the residual stream stay float32,
    which keeps bfloat16 features within a cosine of 0.9999 of float32 ones.
    """

    rung = ""  # set by build_ladder: which arrangement this is ("onednn-float32", "torch-bfloat16", ...)

    def __init__(self, model, dtype, onednn: bool):
        import torch

        c = model.config
        self.hidden, self.heads = int(c.hidden_size), int(c.num_attention_heads)
        self.eps = float(c.layer_norm_eps)
        self.dtype = dtype
        self.low = dtype != torch.float32
        self.onednn = onednn
        emb = model.embeddings
        self.word = emb.word_embeddings.weight
        self.position = emb.position_embeddings.weight
        self.type0 = emb.token_type_embeddings.weight[0]
        self.norm0 = (emb.LayerNorm.weight, emb.LayerNorm.bias)
        self.layers = []
        for layer in model.encoder.layer:
            att = layer.attention.self
            qkv_w = torch.cat([att.query.weight, att.key.weight, att.value.weight])
            qkv_b = torch.cat([att.query.bias, att.key.bias, att.value.bias])
            out = layer.attention.output
            self.layers.append((
                self._weights(qkv_w, qkv_b),
                self._weights(out.dense.weight, out.dense.bias),
                (out.LayerNorm.weight, out.LayerNorm.bias),
                self._weights(layer.intermediate.dense.weight, layer.intermediate.dense.bias),
                self._weights(layer.output.dense.weight, layer.output.dense.bias),
                (layer.output.LayerNorm.weight, layer.output.LayerNorm.bias),
            ))

    @staticmethod
    def supports(config) -> bool:
        """A plain BERT encoder: what this class reimplements, and nothing it does not."""
        return (
            getattr(config, "model_type", None) == "bert"
            and getattr(config, "hidden_act", None) == "gelu"
            and getattr(config, "position_embedding_type", "absolute") == "absolute"
            and not getattr(config, "is_decoder", False)
            and not getattr(config, "add_cross_attention", False)
            and config.hidden_size % config.num_attention_heads == 0
        )

    @classmethod
    def build_checked(cls, model, dtype, probe_ids: list[list[int]]) -> "_FastBert | None":
        """The fast path for ``dtype``, or None when no arrangement of it reproduces ``model`` (see :func:`build_ladder`)."""
        return build_ladder(cls, model, dtype, probe_ids).fast

    def _weights(self, weight, bias):
        import torch

        weight, bias = weight.detach().to(self.dtype).contiguous(), bias.detach().to(self.dtype)
        if self.onednn:  # packed once into oneDNN's blocked layout, not reordered on every call (-6% CPU time)
            weight = torch.ops.mkldnn._reorder_linear_weight(weight, None)
        return weight, bias

    def _linear(self, x, wb, gelu: bool = False):
        import torch
        import torch.nn.functional as F

        if self.onednn:
            return torch.ops.mkldnn._linear_pointwise(x, wb[0], wb[1], "gelu" if gelu else "none", [], "none" if gelu else "")
        y = F.linear(x, wb[0], wb[1])
        return F.gelu(y) if gelu else y

    def _linear_add(self, x, wb, residual):
        import torch

        if self.onednn and not self.low:
            return torch.ops.mkldnn._linear_pointwise.binary(x, residual, wb[0], wb[1], "add")
        return torch.add(residual, self._linear(x, wb))  # float32 residual + low-precision product, in one pass

    def __call__(self, ids, mask, layers: Sequence[int]) -> dict:
        """Hidden states ``{layer: (batch, tokens, hidden) float32}`` for each of ``layers`` (0 = embeddings)."""
        import torch
        import torch.nn.functional as F

        batch, tokens = ids.shape
        h, heads = self.hidden, self.heads
        # key mask only: padded query rows still see the real keys, so no row of the softmax is empty
        keys = None if bool(mask.all()) else mask.bool()[:, None, None, :]
        x = F.embedding(ids, self.word) + (self.position[:tokens] + self.type0)
        x = F.layer_norm(x, (h,), *self.norm0, self.eps)
        wanted = set(layers)
        out = {0: x} if 0 in wanted else {}
        for i, (qkv_wb, out_wb, norm1, up_wb, down_wb, norm2) in enumerate(self.layers[: max(layers)], start=1):
            xin = x.to(self.dtype) if self.low else x
            qkv = self._linear(xin, qkv_wb).view(batch, tokens, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
            ctx = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=keys)
            ctx = ctx.transpose(1, 2).reshape(batch, tokens, h)
            x = F.layer_norm(self._linear_add(ctx, out_wb, x), (h,), *norm1, self.eps)
            xin = x.to(self.dtype) if self.low else x
            x = F.layer_norm(self._linear_add(self._linear(xin, up_wb, gelu=True), down_wb, x), (h,), *norm2, self.eps)
            if i in wanted:
                out[i] = x
        return out


def _onednn_linear_available() -> bool:
    import torch

    return bool(
        torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
    )


@dataclass
class Ladder:
    """What :func:`build_ladder` chose: the fast path (None: the transformers forward pass), the rung's name, and why
    each rung above it was passed over."""

    fast: "_FastBert | None"
    rung: str
    passed_over: list[tuple[str, str]] = field(default_factory=list)

    def describe(self) -> str:
        why = "; ".join(f"{name}: {reason}" for name, reason in self.passed_over)
        return f"{self.rung}" + (f" (passed over {why})" if why else "")


def rungs(dtype_name: str, onednn: bool) -> list[tuple[str, bool]]:
    """The arrangements tried for ``dtype_name``, fastest first: ``[(name, uses_onednn), ...]``."""
    kinds = ([("onednn", True)] if onednn else []) + [("torch", False)]
    return [(f"{kind}-{dtype_name}", flag) for kind, flag in kinds]


def build_ladder(cls, model, dtype, probe_ids: list[list[int]]) -> Ladder:
    """Walk the ladder of fast arrangements for ``dtype`` and keep the first that reproduces ``model``.

    Every rung is built and run on the probe sequences inside one guard, then compared with the transformers
    forward pass in float32 at every layer: float32 rungs to 1e-4, reduced-precision rungs to a per-token cosine of
    :data:`LOW_PRECISION_MIN_COSINE`. A rung that raises (a private oneDNN op missing, or refusing this CPU, as the
    bfloat16 weight packing does on AVX2-only machines) or disagrees falls to the next: oneDNN-fused, then plain
    torch ops, then the transformers forward pass itself (``fast=None``). A reduced precision is only tried once a
    float32 arrangement has shown the architecture's math is reproduced. One debug line says which rung runs and why.
    """
    import torch

    dtype_name = str(dtype).replace("torch.", "")
    if not all(hasattr(model, a) for a in ("embeddings", "encoder")):
        return _chosen(Ladder(None, f"transformers-{dtype_name}", [("fast path", "the model has no BERT layout")]))
    longest = max(len(p) for p in probe_ids)
    ids = torch.zeros((len(probe_ids), longest), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(probe_ids):
        ids[i, : len(p)] = torch.tensor(p)
        mask[i, : len(p)] = 1
    layers = list(range(model.config.num_hidden_layers + 1))
    real = mask.bool()
    passed: list[tuple[str, str]] = []
    onednn = _onednn_linear_available()
    if not onednn:
        passed.append(("onednn", "torch has no oneDNN linear ops here"))
    with torch.inference_mode():
        want = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states

        def attempt(name, rung_dtype, use_onednn):
            try:
                fast = cls(model, rung_dtype, use_onednn)
                got = fast(ids, mask, layers)
            except (RuntimeError, NotImplementedError, TypeError, AttributeError) as exc:
                passed.append((name, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"))
                return None
            problem = _disagreement(got, want, layers, real, low=rung_dtype != torch.float32)
            if problem:
                passed.append((name, problem))
                return None
            fast.rung = name
            return fast

        math_ok = None
        for name, use_onednn in rungs("float32", onednn):
            math_ok = attempt(name, torch.float32, use_onednn)
            if math_ok is not None:
                break
        if math_ok is None or dtype == torch.float32:
            return _chosen(Ladder(math_ok, math_ok.rung if math_ok else "transformers-float32", passed))
        for name, use_onednn in rungs(dtype_name, onednn):
            fast = attempt(name, dtype, use_onednn)
            if fast is not None:
                return _chosen(Ladder(fast, name, passed))
    return _chosen(Ladder(None, f"transformers-{dtype_name}", passed))


def _disagreement(got: dict, want, layers, real, low: bool) -> str | None:
    """Why ``got`` does not reproduce ``want`` at some layer, or None when it does."""
    import torch

    for k in layers:
        a, b = got[k][real].float(), want[k][real].float()
        if not torch.isfinite(a).all():
            return f"non-finite values at layer {k}"
        if low:
            cos = torch.nn.functional.cosine_similarity(a, b, dim=-1).min().item()
            if cos < LOW_PRECISION_MIN_COSINE:
                return f"cosine {cos:.4f} with transformers at layer {k}"
        elif not torch.allclose(a, b, atol=1e-4, rtol=1e-4):
            return f"max abs diff {(a - b).abs().max().item():.2e} with transformers at layer {k}"
    return None


def _chosen(ladder: Ladder) -> Ladder:
    log.debug("bertfeat CPU forward pass: %s", ladder.describe())
    return ladder
