"""Loading and running the model: the torch and transformers code, with :mod:`bertfeat.devices` (which device and
dtype), :mod:`bertfeat.model_files` (the tokenizer, config and checked weights it loads),
:mod:`bertfeat.load_checks` (what the loaded model passes before it embeds anything) and
:mod:`bertfeat.batch_runner` (how it runs batches). This module holds the load and the process's loaded backends.

A :class:`TorchBackend` tokenizes texts (content tokens, no special tokens) and runs padded batches of token
sequences through the frozen model, returning pooled float32 blocks. Backends are shared by every caller in the process
and never pickled: the :data:`MODELS_KEPT` used last stay loaded, and any one an estimator in memory has used
(:func:`get_backend`). An out-of-memory error halves the batch and retries.

On CPU, BERT-architecture models run through :class:`_FastBert`, a forward pass over the same weights that fuses
bias, GELU and residual adds into oneDNN matrix multiplies, computes Q, K and V in one product, and stops at the
highest layer asked for. In float32 it matches the transformers forward pass within 1e-5 (measured 3.8e-6 on MiniLM); with
``dtype="bfloat16"`` the products run in bfloat16 while layer norms and the residual stream stay in float32.
Other architectures, and every GPU, use the transformers model itself, with the same design in low precision:
float32 weights under autocast (see :meth:`TorchBackend._numerics`). The fused pass lives in
:mod:`bertfeat.fastbert` and the CPU facts (allotted cores, threads, oneDNN knobs) in :mod:`bertfeat.hardware`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence

from bertfeat.batch_runner import BatchRunner
from bertfeat.batch_runner import _is_oom, forward_passes  # noqa: F401 (re-exported)
from bertfeat.devices import _refuse_half_precision_autocast_will_not_run, device_key
from bertfeat.devices import (  # noqa: F401 (re-exported)
    device_type,
    half_precision_refusal,
    resolve_device,
    resolve_dtype,
)
from bertfeat.fastbert import _FastBert, _onednn_linear_available, build_ladder  # noqa: F401 (re-exported)
from bertfeat.fork_safe import ForkSafeLock
from bertfeat.hardware import (  # noqa: F401 (re-exported)
    ONEDNN_CACHE_CAPACITY,
    _bound_onednn_cache,
    _cpu_workers,
    limit_threads_to_allotted_cores,
    allotted_cores,
    call_threads,
    set_threads,
    set_worker_threads,
    threads_shared_by,
)
from bertfeat.gpu import MAX_GPU_BATCH_TOKENS, MemoryCap, gpu_batch_tokens  # noqa: F401 (re-exported)
from bertfeat.load_checks import LoadChecks
from bertfeat.model_files import (
    _checked_counts,
    _load_config,
    _quiet_transformers,
    _special_tokens_around,
    forget_tokenizers,
    load_checked_model,
    load_tokenizer,
)
from bertfeat.model_files import (  # noqa: F401 (re-exported)
    check_model_files,
    check_weights_finite,
    tokenizer_puts_token_first,
)
from bertfeat.models import ModelSpec, feed_forward_width
from bertfeat.recent import forget, keep_recent

log = logging.getLogger("bertfeat")

# Every loaded backend, while anything holds it: the models used last (_RECENT), an estimator that used one, a call
# running it. A registry of strong references kept every model a long-lived process ever used (a notebook trying
# models, an R session, a service whose model was retrained in place: 146 MB a MiniLM, for good).
_REGISTRY: "weakref.WeakValueDictionary[tuple, TorchBackend]" = weakref.WeakValueDictionary()
_LOCK = ForkSafeLock()
# Models kept loaded though no estimator holds them (R's bf_embed() and the command line make one per call): two used
# in turn load once each; a third replaces the one used least recently.
MODELS_KEPT = 2
_RECENT: list["TorchBackend"] = []  # least recently used first

# Padded tokens per forward pass. On CPU, per thread of a worker: a small budget keeps a layer's activations in
# cache (1024 tokens x 1536 floats = 6 MB for MiniLM's feed-forward) while the products stay large enough to run
# at the core's full rate; measured on MiniLM, 1024 tokens per thread took 7% less CPU time than 4096 and 24% less
# than 8192, and sorted lengths keep padding near 1%. On GPU large products are what fill the device;
# TorchBackend lowers this to fit free memory.
DEFAULT_BATCH_TOKENS = {"cpu": 1024, "cuda": MAX_GPU_BATCH_TOKENS, "mps": 16384}

# Texts tokenized and planned ahead per step when tokenization overlaps the model (GPU); see encode._run_model.
PREFETCH_CHUNK_TEXTS = 8192


def get_backend(spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool = False) -> "TorchBackend":
    """The process-wide backend for this model, device and dtype: loaded on first use, then reused.

    ``"cuda"`` is the GPU ``"cuda:N"`` it names, and ``"cpu:N"`` (``"mps:0"``) the one CPU (Apple GPU) torch has,
    so each device shares one copy of the model, whichever way it was spelled. The :data:`MODELS_KEPT` backends used
    last stay loaded; an older one goes once nothing else holds it (a :class:`~bertfeat.BertEmbedder` holds the one it
    used), and one loaded from a folder's earlier files goes when the folder's new files load.
    """
    device = device_key(device)  # "cuda" loads as "cuda:0", the device its key names
    key = _key(spec, device, dtype, trust_remote_code)
    with _LOCK:
        backend = _REGISTRY.get(key)
        if backend is None:
            _forget_replaced(key)
            backend = _REGISTRY[key] = TorchBackend(spec, device, dtype, trust_remote_code)
        _used(backend)
    return backend


def loaded_backend(spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool = False):
    """The backend :func:`get_backend` would give, where this process has it loaded already; else None (nothing
    loaded)."""
    with _LOCK:
        return _REGISTRY.get(_key(spec, device, dtype, trust_remote_code))


def _key(spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool) -> tuple:
    # every file hash: a config or tokenizer edited in place must not reuse the model loaded from the old one
    return (spec.path, spec.weights_sha256, spec.config_sha256, spec.tokenizer_sha256, device_key(device), dtype,
            trust_remote_code)


def _used(backend: "TorchBackend") -> None:
    """Keep ``backend`` among the :data:`MODELS_KEPT` used last (holding ``_LOCK``)."""
    keep_recent(_RECENT, backend, MODELS_KEPT)


def _forget_replaced(key: tuple) -> None:
    """Drop the backends of the folder of ``key`` loaded from other files (holding ``_LOCK``): a model saved again
    over its folder. No estimator can use them again (one fitted on the old files is refused), so none are kept."""
    for old in [k for k in list(_REGISTRY.keys()) if k[0] == key[0] and k[4:] == key[4:] and k != key]:
        forget(_RECENT, _REGISTRY.pop(old, None))


def clear_backends() -> None:
    """Drop every loaded model and tokenizer (frees memory; the next transform loads again)."""
    with _LOCK:
        _REGISTRY.clear()
        _RECENT.clear()
    forget_tokenizers()


class TorchBackend(LoadChecks, BatchRunner):
    """A frozen Hugging Face encoder and its tokenizer on one device, in one dtype.

    Its load is here: the tokenizer, config and checked weights, the fused CPU pass's ladder, the budgets; the checks
    the loaded model passes before it embeds anything are :class:`~bertfeat.load_checks.LoadChecks`', and how it runs
    batches (:meth:`forward`, :meth:`forward_batches`) :class:`~bertfeat.batch_runner.BatchRunner`'s.

    Attributes used by :func:`bertfeat.encode._run_model`: ``default_batch_tokens`` (token budget of one forward
    pass), ``prefetch`` (tokenize the next chunk in a background thread while the model runs; on for GPUs) and
    ``chunk_texts`` (texts per such chunk; 0 plans all texts at once).
    """

    def __init__(self, spec: ModelSpec, device: str, dtype: str, trust_remote_code: bool = False):
        import torch

        self.spec = spec
        self.device = device
        self.dtype = dtype
        self.torch_dtype = getattr(torch, dtype)
        kind = torch.device(device).type
        if kind == "cpu":
            _bound_onednn_cache()
            limit_threads_to_allotted_cores()
        _refuse_half_precision_autocast_will_not_run(device, dtype)
        self.tokenizer, self.content_tokens = load_tokenizer(spec, trust_remote_code)
        with _quiet_transformers():
            config = _load_config(spec.path, trust_remote_code)
        self.config = config
        self.trust_remote_code = trust_remote_code
        fast = kind == "cpu" and _FastBert.supports(config)
        # Weights stay float32 on every path: a low dtype runs the products only, with embeddings, layer norms and
        # the residual stream in float32 (the fast CPU path by construction, the others under autocast), so a
        # recipe's dtype means one arithmetic on CPU and GPU alike.
        model = self._load_model(torch.float32)
        self.checked = _checked_counts(model, self.tokenizer)  # the weights check's counts (bertfeat info)
        self.ffn_width = feed_forward_width(spec.path, spec.hidden_size)  # the products' shape, for measured rates
        self.model = model.to(device)
        self.prefix, self.suffix = _special_tokens_around(self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self._first_token_sees_text = None  # found where a recipe first pools the CLS token (first_token_sees_text)
        self._check_model_runs()
        self.ladder = build_ladder(_FastBert, model, self.torch_dtype, self._probe_ids()) if fast else None
        self.fast = self.ladder.fast if self.ladder else None
        self.rung = self.ladder.rung if self.ladder else f"transformers-{dtype}"
        if self.fast is not None:
            # The fast path holds its own (packed) copies of the layer weights and shares the embeddings and norms:
            # dropping the transformers module frees the originals.
            self.model = None
        # A model whose real tokens see the padding beside them runs each length in a pass of its own, so that a
        # text's vector never depends on the texts batched with it (the fused pass masks padding by construction).
        self.one_length_per_pass = self.fast is None and self._padding_changes_outputs()
        if self.one_length_per_pass:  # said once per load: a slower way to run, and the reason for it
            log.warning("bertfeat: padding after a text changes its tokens' hidden states in %s (%s), so each length "
                        "in a batch runs in a pass of its own: the same vectors, more passes",
                        spec.name, getattr(config, "model_type", "?"))
        if kind == "cpu" and dtype != "float32":
            self._check_reduced_precision()
        self._fallback_lock = ForkSafeLock()
        # Batches in flight at once. On CPU each worker runs its own batch on its share of the cores, so small ops
        # (layer norm, attention) never wait on each other's threads and a core taken by another process delays
        # one batch, not every operation. On GPU a second worker pads and launches the next batch while the
        # current one's results come back. None on CPU: from the calling thread's count at each call (workers_now).
        self.workers = None if kind == "cpu" else 2 if kind == "cuda" else 1
        self.default_batch_tokens = DEFAULT_BATCH_TOKENS.get(kind, 8192)
        self.prefetch = kind == "cuda"
        self.chunk_texts = PREFETCH_CHUNK_TEXTS if self.prefetch else 0
        self.memory_cap = MemoryCap()  # learned from out-of-memory errors, recovers after successful batches

    def workers_now(self) -> int:
        """Batches in flight at once for a call from this thread: ``workers`` where set; on CPU (None) one per torch
        thread of the calling thread up to 4 (:func:`bertfeat.hardware._cpu_workers`), read at each call, so that a
        count set after the load (in a forked child, in a thread of its own) is the one the call runs on."""
        return self.workers if self.workers is not None else _cpu_workers(call_threads())

    @property
    def default_batch_tokens(self) -> int:
        """Token budget of one forward pass. On GPU, what fits now in this process's share of the card's memory
        (free, plus what torch holds unused), sampled again at every call rather than once at load; on CPU, the
        budget per thread times each worker's threads at this call."""
        if self.device.startswith("cuda"):
            from bertfeat import gpu

            element_size = 4 if self.dtype == "float32" else 2
            return gpu.gpu_batch_tokens(gpu.usable_bytes(self.device, gpu.memory_share()), self.config, element_size,
                                        in_flight=self.workers)
        if self.device.startswith("cpu"):
            return self._default_batch_tokens * max(1, call_threads() // self.workers_now())
        return self._default_batch_tokens

    @default_batch_tokens.setter
    def default_batch_tokens(self, value: int) -> None:
        self._default_batch_tokens = value

    def _load_model(self, load_dtype):
        """The transformers model in ``load_dtype`` (SDPA attention where the architecture has it), frozen, refused
        if its weights do not fit its config or tokenizer (:func:`load_checked_model`); in a low dtype, its layer
        norms take float32 (:func:`_norms_in_float32`)."""
        import torch

        with _quiet_transformers():
            model = load_checked_model(self.spec, load_dtype, self.tokenizer, self.trust_remote_code)
        if getattr(model, "attention_type", None) == "block_sparse" and hasattr(model, "set_attention_type"):
            # BigBird's block-sparse attention pads a batch to a multiple of its block and sees that padding (a
            # text's vector would depend on its batch), and keeps it in the hidden states below the last. transformers
            # takes full attention itself, for good, at the first input too short for blocks; here from the start.
            model.set_attention_type("original_full")
        if self.torch_dtype != torch.float32:
            _norms_in_float32(model)
        return model.eval().requires_grad_(False)

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Content token ids of each text: no special tokens, no truncation (:mod:`bertfeat.tokens`)."""
        return self.content_tokens(texts)

def _norms_in_float32(model) -> None:
    """Give every layer norm of ``model`` its input in float32, so that under autocast the residual stream stays
    float32 after each norm on every device, as the fused CPU pass keeps it.

    CUDA's autocast runs a layer norm in float32; CPU's runs it in its input's dtype. A model whose embeddings a
    product projects to the hidden size (ALBERT, ELECTRA-small, ConvBERT-small, a DeBERTa-v2 with an
    ``embedding_size``: a half-precision state into the first layer norm) then kept every layer's state in half
    precision on CPU, rounded at each layer (0.05-0.18 off float32 on ALBERT and ELECTRA test models, against 0.002
    for the families whose stream stays float32), a text's vector moving by a half-precision step of its values with
    the texts batched beside it, and not the arithmetic its GPU runs for the same recipe
    (:data:`bertfeat.recipe.LOW_PRECISION_MODEL_FORMATS` keys those recipes anew).
    """
    import torch

    def to_float32(module, args):
        return (args[0].float(), *args[1:])

    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.register_forward_pre_hook(to_float32)
