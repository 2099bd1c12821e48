"""The fused CPU forward pass for post-norm BERT-family encoders (see :class:`_FastBert`).

Only :mod:`bertfeat.backend` builds it; it runs over the transformers model's own weights and is checked against
that model at load time before it is used. Which families it covers, and where each keeps its weights, is
:mod:`bertfeat.architectures`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from bertfeat import architectures

log = logging.getLogger("bertfeat")

# How close a low-precision arrangement must stay to the float32 transformers forward pass on the probe sequences:
# the cosine of every real token's hidden state at every layer. bfloat16 keeps about 3 significant digits, which
# on MiniLM gives cosines above 0.9999; a wrong arrangement (a kernel that mis-computes, NaN, a transposed weight)
# falls far below.
LOW_PRECISION_MIN_COSINE = 0.99
# ... and the relative error of what each layer adds to the hidden state. Measured for correct kernels: bfloat16
# 0.001-0.002 on the tiny test models, 0.005-0.010 on MiniLM and base-size random models; float16 under 0.0015. A
# scrambled kernel gives about 1, a 5% mis-scaled one about 0.05.
LOW_PRECISION_MAX_STEP_ERROR = 0.1


class _FastBert:
    """A BERT-family encoder's forward pass on CPU over the transformers model's own weights, for pooling.

    Same math as ``BertModel`` (erf GELU, post-norm) and its relatives in :mod:`bertfeat.architectures`: positions
    from 0 (BERT, DistilBERT) or from padding_idx + 1 (RoBERTa, XLM-RoBERTa, CamemBERT, MPNet), token type 0 where
    the family has token types, MPNet's relative-position bias added to the attention scores. Arranged for CPU
    speed: Q/K/V in one product; bias, GELU and the residual add fused into oneDNN's matrix multiply; layers above
    the highest one asked for skipped; only the asked-for hidden states kept. With a low-precision ``dtype`` the
    products and attention run in that dtype while embeddings, layer norms and the residual stream stay float32,
    which keeps bfloat16 features within a cosine of 0.9999 of float32 ones.
    """

    rung = ""  # set by build_ladder: which arrangement this is ("onednn-float32", "torch-bfloat16", ...)

    def __init__(self, model, dtype, onednn: bool):
        import torch

        c = model.config
        w = architectures.encoder_weights(model)
        if w is None:
            raise ValueError(f"{type(model).__name__} is not an encoder the fused CPU pass covers")
        self.hidden, self.heads = int(c.hidden_size), int(c.num_attention_heads)
        self.eps = float(w.eps)
        self.dtype = dtype
        self.low = dtype != torch.float32
        self.onednn = onednn
        self.word = w.word
        self.position = w.position
        self.type0 = w.type0
        self.padding_idx = w.padding_idx
        self.relative_bias = w.relative_bias
        self.norm0 = w.embedding_norm
        self.layers = []
        for layer in w.layers:
            qkv_w = torch.cat([layer.query[0], layer.key[0], layer.value[0]])
            qkv_b = torch.cat([layer.query[1], layer.key[1], layer.value[1]])
            self.layers.append((
                self._weights(qkv_w, qkv_b),
                self._weights(*layer.attention_out),
                layer.attention_norm,
                self._weights(*layer.up),
                self._weights(*layer.down),
                layer.output_norm,
            ))

    @staticmethod
    def supports(config) -> bool:
        """An encoder of a family this class reimplements (:func:`bertfeat.architectures.supports`), and nothing
        it does not."""
        return architectures.supports(config)

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
        import torch.nn.functional as F

        batch, tokens = ids.shape
        h, heads = self.hidden, self.heads
        # key mask only: padded query rows still see the real keys, so no row of the softmax is empty
        keys = None if bool(mask.all()) else mask.bool()[:, None, None, :]
        scores_mask = self._attention_bias(keys, tokens)
        x = F.layer_norm(self._embed(ids), (h,), *self.norm0, self.eps)
        wanted = set(layers)
        out = {0: x} if 0 in wanted else {}
        for i, (qkv_wb, out_wb, norm1, up_wb, down_wb, norm2) in enumerate(self.layers[: max(layers)], start=1):
            xin = x.to(self.dtype) if self.low else x
            qkv = self._linear(xin, qkv_wb).view(batch, tokens, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
            ctx = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=scores_mask)
            ctx = ctx.transpose(1, 2).reshape(batch, tokens, h)
            x = F.layer_norm(self._linear_add(ctx, out_wb, x), (h,), *norm1, self.eps)
            xin = x.to(self.dtype) if self.low else x
            x = F.layer_norm(self._linear_add(self._linear(xin, up_wb, gelu=True), down_wb, x), (h,), *norm2, self.eps)
            if i in wanted:
                out[i] = x
        return out

    def _embed(self, ids):
        """Word + position (+ token type 0) embeddings, before the layer norm."""
        import torch.nn.functional as F

        if self.padding_idx is None:
            fixed = self.position[: ids.shape[1]]
            return F.embedding(ids, self.word) + (fixed if self.type0 is None else fixed + self.type0)
        # RoBERTa's rule (fairseq's make_positions): pad tokens sit at padding_idx, the others count from past it
        real = ids.ne(self.padding_idx)
        x = F.embedding(ids, self.word)
        if self.type0 is not None:
            x = x + self.type0
        return x + F.embedding(real.cumsum(1) * real + self.padding_idx, self.position)

    def _attention_bias(self, keys, tokens: int):
        """The attention mask as SDPA takes it: the boolean key mask, or MPNet's relative-position bias with the
        padded keys at -inf (one (batch or 1, heads, tokens, tokens) tensor, shared by every layer)."""
        import torch
        import torch.nn.functional as F

        if self.relative_bias is None:
            return keys
        buckets = architectures.mpnet_relative_buckets(tokens, device=self.relative_bias.device)
        bias = F.embedding(buckets, self.relative_bias).permute(2, 0, 1).unsqueeze(0)
        if keys is not None:
            bias = torch.where(keys, bias, float("-inf"))
        return bias.to(self.dtype) if self.low else bias


def _onednn_linear_available() -> bool:
    import torch

    return bool(
        torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
    )


# Which arrangement the ladder tries first is a property of the CPU, never a timing taken at load: the two float32
# arrangements round differently (a few ULPs on MiniLM), so a choice that followed a moment's load could give two
# processes on one machine two roundings of one recipe, mixed into one resumed output or one shared cache. Measured:
# on AVX2-only AMD EPYCs (Zen 1, Zen 3) plain torch ops (MKL sgemm) ran MiniLM 11-16% faster than oneDNN's packed
# kernels (27.5 vs 37.4 ms for 512 tokens through one layer on Zen 3); on AVX-512 machines (Zen 4, Zen 5, Xeon) the
# fused oneDNN pass was the faster. This variable overrides the per-CPU order for a machine measured otherwise.
KERNELS_ENV = "BERTFEAT_CPU_KERNELS"
KERNELS = ("onednn", "torch")
_X86 = ("x86_64", "amd64", "i386", "i686", "x86")


def preferred_kernels(flags: list[str] | None = None, machine: str | None = None) -> tuple[str, str]:
    """Which arrangement this CPU tries first, ``"onednn"`` or ``"torch"``, and why: plain torch ops on x86 CPUs
    without AVX-512 (and on x86 where the OS lists no instruction sets: Windows, a Mac whose sysctl does not
    answer), oneDNN's fused kernels elsewhere, unless :data:`KERNELS_ENV` names one. The same answer in every process on one machine, so one recipe
    gives the same bytes in each."""
    import os
    import platform

    from bertfeat.hardware import cpu_flags, flags_listed

    raw = os.environ.get(KERNELS_ENV, "")
    if raw.strip():
        choice = raw.strip().lower()
        if choice not in KERNELS:
            raise ValueError(f"{KERNELS_ENV}={raw!r} is not valid: set it to 'onednn' (oneDNN's fused kernels first) "
                             "or 'torch' (plain torch ops first), or unset it for this CPU's default.")
        return choice, f"{KERNELS_ENV}={choice}"
    arch = (platform.machine() if machine is None else machine).lower()
    listed = flags is not None or flags_listed()
    flags = cpu_flags() if flags is None else flags
    if arch in _X86 and "avx512f" not in flags:
        # Windows lists no instruction sets (nor a Mac whose sysctl does not answer): the AVX2 order, saying why
        return "torch", ("x86 without AVX-512" if listed else "x86 whose instruction sets this OS does not list") + (
            ": plain torch ops first")
    return "onednn", ("AVX-512" if arch in _X86 else arch or "this CPU") + ": oneDNN's fused kernels first"


@dataclass
class Ladder:
    """What :func:`build_ladder` chose: the fast path (None: the transformers forward pass), the rung's name, why
    each rung tried before it was passed over, and why the rungs were tried in that order."""

    fast: "_FastBert | None"
    rung: str
    passed_over: list[tuple[str, str]] = field(default_factory=list)
    order: str = ""

    def describe(self) -> str:
        why = "; ".join(f"{name}: {reason}" for name, reason in self.passed_over)
        notes = [n for n in (self.order, f"passed over {why}" if why else "") if n]
        return f"{self.rung}" + (f" ({'; '.join(notes)})" if notes else "")


def rungs(dtype_name: str, onednn: bool, first: str = "onednn") -> list[tuple[str, bool]]:
    """The arrangements tried for ``dtype_name``, in order: ``[(name, uses_onednn), ...]``; ``first`` is
    ``"onednn"`` or ``"torch"`` (:func:`preferred_kernels`)."""
    kinds = ([("onednn", True)] if onednn else []) + [("torch", False)]
    kinds.sort(key=lambda kind: kind[0] != first)
    return [(f"{kind}-{dtype_name}", flag) for kind, flag in kinds]


def build_ladder(cls, model, dtype, probe_ids: list[list[int]]) -> Ladder:
    """Walk the ladder of fast arrangements for ``dtype`` and keep the first that reproduces ``model``.

    The order is this CPU's (:func:`preferred_kernels`): oneDNN-fused then plain torch ops, or the other way round
    on x86 without AVX-512; then the transformers forward pass itself (``fast=None``). Each rung is built and run
    on the probe sequences inside one guard, then compared with the transformers forward pass in float32 at every
    layer: float32 rungs to 1e-4, reduced-precision rungs to a per-token cosine of
    :data:`LOW_PRECISION_MIN_COSINE` and a per-layer step error of :data:`LOW_PRECISION_MAX_STEP_ERROR`. A rung that
    raises (a private oneDNN op missing, or refusing this CPU, as the bfloat16 weight packing does on AVX2-only
    machines) or disagrees falls to the next; running out of memory is raised (the load fails, and the next one
    tries again), not taken for the rung's fault. A reduced precision is only tried once a float32 arrangement has shown
    the architecture's math is reproduced. One debug line says which rung runs and why.
    """
    import torch

    dtype_name = str(dtype).replace("torch.", "")
    if architectures.encoder_weights(model) is None:
        return _chosen(Ladder(None, f"transformers-{dtype_name}", [("fast path", "not a layout bertfeat reimplements")]))
    first, order = preferred_kernels()
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
                from bertfeat.backend import _is_oom  # imported here: backend imports this module

                if _is_oom(exc):  # the machine's state now, not the rung's fault: passed over, it was for good
                    raise
                passed.append((name, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"))
                return None
            problem = _disagreement(got, want, layers, real, low=rung_dtype != torch.float32)
            if problem:
                passed.append((name, problem))
                return None
            fast.rung = name
            return fast

        def first_passing(rung_dtype, name_of_dtype):
            return next((f for f in (attempt(name, rung_dtype, flag)
                                     for name, flag in rungs(name_of_dtype, onednn, first)) if f), None)

        exact = first_passing(torch.float32, "float32")
        if exact is None:
            return _chosen(Ladder(None, "transformers-float32", passed, order))
        if dtype == torch.float32:
            return _chosen(Ladder(exact, exact.rung, passed, order))
        low = first_passing(dtype, dtype_name)
        if low is not None:
            return _chosen(Ladder(low, low.rung, passed, order))
    return _chosen(Ladder(None, f"transformers-{dtype_name}", passed, order))


def _disagreement(got: dict, want, layers, real, low: bool) -> str | None:
    """Why ``got`` does not reproduce ``want`` at some layer, or None when it does.

    Reduced precision is held to two bounds per real token: the cosine of the hidden state (0.99), and the relative
    error of what each layer adds to it, ``got[k] - got[k-1]`` against ``want[k] - want[k-1]`` (at most
    :data:`LOW_PRECISION_MAX_STEP_ERROR`). The second is what catches a wrong kernel on models whose layers change
    the residual stream little (a tiny random BERT with every projection scrambled keeps a hidden-state cosine of
    0.9997, and a step error near 1).
    """
    import torch

    for k in layers:
        a, b = got[k][real].float(), want[k][real].float()
        if not torch.isfinite(a).all():
            return f"non-finite values at layer {k}"
        if low:
            cos = torch.nn.functional.cosine_similarity(a, b, dim=-1).min().item()
            if cos < LOW_PRECISION_MIN_COSINE:
                return f"cosine {cos:.4f} with transformers at layer {k}"
            if k - 1 in got:
                step = _step_error(a - got[k - 1][real].float(), b - want[k - 1][real].float(), b)
                if step > LOW_PRECISION_MAX_STEP_ERROR:
                    return f"relative error {step:.3f} in what layer {k} adds, against transformers"
        elif not torch.allclose(a, b, atol=1e-4, rtol=1e-4):
            return f"max abs diff {(a - b).abs().max().item():.2e} with transformers at layer {k}"
    return None


def _step_error(got_step, want_step, want_state) -> float:
    """The largest per-token relative error of one layer's contribution; the denominator is floored at a thousandth
    of the hidden state's norm, so a layer that adds (almost) nothing does not turn rounding into a large ratio."""
    scale = want_step.norm(dim=-1).clamp_min(1e-3 * want_state.norm(dim=-1)).clamp_min(1e-12)
    return ((got_step - want_step).norm(dim=-1) / scale).max().item()


def _chosen(ladder: Ladder) -> Ladder:
    log.debug("bertfeat CPU forward pass: %s", ladder.describe())
    return ladder
