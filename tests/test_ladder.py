"""The guarded ladder of CPU forward passes, on whatever CPU runs the tests.

Each arrangement (oneDNN-fused, plain torch ops, the transformers forward pass) in each dtype is built, run on probe
sequences and compared with transformers inside one guard; anything that raises or disagrees falls to the next rung.
The CPU features a rung needs are simulated missing with monkeypatching, so every fallback runs on every machine.
A reduced precision that is slower than float32 here warns with the measured rates and keeps the dtype.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import bertfeat.fastbert as fastbert
from bertfeat import BertEmbedder
from bertfeat import hardware
from bertfeat.backend import TorchBackend, _FastBert, build_ladder
from bertfeat.exceptions import SlowDtypeWarning
from bertfeat.models import resolve_model
from tests.conftest import TINY_SENTENCES

torch = pytest.importorskip("torch")

PROBE = [[2, 10, 11, 12, 3], [2, 13, 14, 3]]
TEXTS = TINY_SENTENCES + ["cat", "the lazy dog sat in the park on the mat " * 3]


def transformers_model(path, dtype=None):
    """The model as bertfeat loads it: SDPA attention where the installed transformers has it for BERT, eager
    attention where it refuses it with a ValueError (transformers 4.40, the floor)."""
    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(path, attn_implementation="sdpa").eval()
    except ValueError:
        return AutoModel.from_pretrained(path, attn_implementation="eager").eval()


def reference(path, texts, layer=-1):
    """CLS and mean of one layer from a plain transformers float32 forward pass, one text at a time."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = transformers_model(path)
    rows = []
    with torch.inference_mode():
        for text in texts:
            enc = tok([text], return_tensors="pt")
            h = model(**enc, output_hidden_states=True).hidden_states[layer][0]
            rows.append(torch.cat([h[0], h.mean(0)]).numpy())
    return np.stack(rows)


def fresh_backend(path, dtype="float32") -> TorchBackend:
    """A backend of its own (not the process-wide one), so monkeypatched failures stay in the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlowDtypeWarning)
        return TorchBackend(resolve_model(path), "cpu", dtype)


def cosines(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture
def packing_refuses_low_precision(monkeypatch):
    """oneDNN's weight packing raising for bfloat16/float16 exactly as it does on AVX2-only CPUs (Zen 1-3, old Xeons)."""
    real = torch.ops.mkldnn._reorder_linear_weight

    def reorder(weight, *args):
        if weight.dtype in (torch.bfloat16, torch.float16):
            raise RuntimeError("mkldnn_reorder_linear_weight: bf16 path needs the cpu support avx_ne_convert or "
                               "avx512bw, avx512vl and avx512dq")
        return real(weight, *args)

    monkeypatch.setattr(torch.ops.mkldnn, "_reorder_linear_weight", reorder)


def _onednn_packs_bfloat16() -> bool:
    try:
        torch.ops.mkldnn._reorder_linear_weight(torch.ones(16, 16, dtype=torch.bfloat16), None)
    except RuntimeError:  # AVX2-only x86 (Zen 1-3, old Xeons): oneDNN has no bf16 kernels for this CPU
        return False
    return True


@pytest.fixture
def onednn_runs_low_precision(monkeypatch):
    """oneDNN's packed linear in bfloat16/float16 on every CPU: the real ops where this CPU has oneDNN's bf16
    kernels, elsewhere a stand-in that keeps their contract (weights "packed" as they are, the product and GELU by
    plain torch math), so the check of a low-precision oneDNN rung runs on AVX2-only machines too."""
    if not fastbert._onednn_linear_available() or _onednn_packs_bfloat16():
        return
    import torch.nn.functional as F

    mkldnn = torch.ops.mkldnn
    real_reorder, real_linear = mkldnn._reorder_linear_weight, mkldnn._linear_pointwise
    low = (torch.bfloat16, torch.float16)

    class Linear:
        binary = real_linear.binary

        def __call__(self, x, weight, bias, attr, scalars, algorithm):
            if weight.dtype not in low:
                return real_linear(x, weight, bias, attr, scalars, algorithm)
            y = F.linear(x, weight, bias)
            return F.gelu(y) if attr == "gelu" else y

    monkeypatch.setattr(mkldnn, "_reorder_linear_weight",
                        lambda weight, *a: weight if weight.dtype in low else real_reorder(weight, *a))
    monkeypatch.setattr(mkldnn, "_linear_pointwise", Linear())


# -- which rung, and why ------------------------------------------------------------------------------------------


def test_float32_takes_the_first_rung_in_this_cpus_order(tiny_bert, caplog):
    first, why = fastbert.preferred_kernels()
    with caplog.at_level(logging.DEBUG, logger="bertfeat"):
        ladder = build_ladder(_FastBert, transformers_model(tiny_bert), torch.float32, PROBE)
    assert ladder.fast is not None and ladder.fast.rung == ladder.rung
    if fastbert._onednn_linear_available():  # the first passes its check: nothing else is tried
        assert ladder.rung == f"{first}-float32" and ladder.passed_over == []
    else:
        assert ladder.rung == "torch-float32"
    line = [r.getMessage() for r in caplog.records if "forward pass" in r.getMessage()][-1]
    assert line.endswith(f"{ladder.describe()}") and why in line


@pytest.mark.parametrize("machine, flags, first", [
    ("x86_64", ["avx2", "fma", "f16c"], "torch"),  # Zen 1-3, Haswell-Broadwell: MKL sgemm measured faster
    ("x86_64", ["avx2", "fma", "avx512f", "avx512bw", "avx512_bf16"], "onednn"),  # Zen 4-5, Xeon
    ("AMD64", [], "torch"),
    ("aarch64", ["asimd", "bf16"], "onednn"),
    ("arm64", [], "onednn"),
])
def test_the_order_is_a_property_of_the_cpu(monkeypatch, machine, flags, first):
    monkeypatch.delenv(fastbert.KERNELS_ENV, raising=False)
    got, why = fastbert.preferred_kernels(flags, machine)
    assert got == first and why
    assert [name for name, _ in fastbert.rungs("float32", True, got)] == [
        f"{got}-float32", f"{({'onednn', 'torch'} - {got}).pop()}-float32"]
    assert fastbert.rungs("bfloat16", False, got) == [("torch-bfloat16", False)]


@pytest.mark.parametrize("setting", ["onednn", "torch", " Torch "])
def test_the_order_can_be_set_for_a_machine_measured_otherwise(tiny_bert, monkeypatch, setting):
    monkeypatch.setenv(fastbert.KERNELS_ENV, setting)
    for machine, flags in (("x86_64", ["avx2"]), ("x86_64", ["avx512f"]), ("aarch64", [])):
        assert fastbert.preferred_kernels(flags, machine) == (setting.strip().lower(),
                                                              f"{fastbert.KERNELS_ENV}={setting.strip().lower()}")
    if fastbert._onednn_linear_available():
        ladder = build_ladder(_FastBert, transformers_model(tiny_bert), torch.float32, PROBE)
        assert ladder.rung == f"{setting.strip().lower()}-float32"


@pytest.mark.parametrize("setting", ["mkl", "oneDNN-fused", "0"])
def test_an_unknown_order_setting_is_refused_with_the_choices(tiny_bert, monkeypatch, setting):
    monkeypatch.setenv(fastbert.KERNELS_ENV, setting)
    with pytest.raises(ValueError) as err:
        fresh_backend(tiny_bert)
    assert str(err.value) == (f"{fastbert.KERNELS_ENV}={setting!r} is not valid: set it to 'onednn' (oneDNN's "
                              "fused kernels first) or 'torch' (plain torch ops first), or unset it for this CPU's "
                              "default.")
    monkeypatch.setenv(fastbert.KERNELS_ENV, "  ")  # blank: this CPU's default, as when unset
    blank = fastbert.preferred_kernels()
    monkeypatch.delenv(fastbert.KERNELS_ENV)
    assert blank == fastbert.preferred_kernels() and blank[0] in fastbert.KERNELS


def test_bf16_packing_refused_as_on_avx2_falls_to_plain_torch_bf16(tiny_bert, packing_refuses_low_precision, caplog,
                                                                    monkeypatch):
    if not fastbert._onednn_linear_available():
        pytest.skip("no oneDNN linear ops in this torch build: the rung being refused does not exist here")
    monkeypatch.setenv(fastbert.KERNELS_ENV, "onednn")  # the refused rung is tried first, as on an AVX-512 CPU
    with caplog.at_level(logging.DEBUG, logger="bertfeat"):
        ladder = build_ladder(_FastBert, transformers_model(tiny_bert), torch.bfloat16, PROBE)
    assert ladder.rung == "torch-bfloat16" and ladder.fast.low and not ladder.fast.onednn
    assert [name for name, _ in ladder.passed_over] == ["onednn-bfloat16"]
    assert "avx512bw" in ladder.passed_over[0][1]
    # one debug line says which rung runs and why
    lines = [r.getMessage() for r in caplog.records if "forward pass" in r.getMessage()]
    assert len(lines) == 1 and "torch-bfloat16" in lines[0] and "onednn-bfloat16" in lines[0]


def test_bf16_on_a_cpu_that_refuses_packing_gives_bf16_features_not_a_crash(tiny_bert, packing_refuses_low_precision):
    backend = fresh_backend(tiny_bert, "bfloat16")
    assert backend.rung.endswith("bfloat16") and backend.dtype == "bfloat16"
    emb = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1, dtype="float32").fit(["x"])
    from bertfeat.encode import encode

    fp32, _ = encode(TEXTS, emb.recipe_, lambda: fresh_backend(tiny_bert, "float32"))
    bf16, _ = encode(TEXTS, emb.recipe_, lambda: backend)
    assert cosines(fp32, bf16).min() >= 0.999 and not np.array_equal(fp32, bf16)


def test_without_onednn_ops_every_dtype_uses_plain_torch(tiny_bert, monkeypatch):
    monkeypatch.setattr(fastbert, "_onednn_linear_available", lambda: False)
    model = transformers_model(tiny_bert)
    f32 = build_ladder(_FastBert, model, torch.float32, PROBE)
    bf16 = build_ladder(_FastBert, model, torch.bfloat16, PROBE)
    assert (f32.rung, bf16.rung) == ("torch-float32", "torch-bfloat16")
    assert not f32.fast.onednn and not bf16.fast.onednn
    backend = fresh_backend(tiny_bert, "float32")
    assert backend.rung == "torch-float32"
    X = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1).fit(["x"])
    from bertfeat.encode import encode

    got, _ = encode(TEXTS, X.recipe_, lambda: backend)
    np.testing.assert_allclose(got, reference(tiny_bert, TEXTS), atol=1e-5, rtol=0)


def test_a_rung_that_disagrees_falls_to_the_next(tiny_bert, monkeypatch):
    monkeypatch.setenv(fastbert.KERNELS_ENV, "onednn")
    real = _FastBert._linear

    def off_when_fused(self, x, wb, gelu=False):
        y = real(self, x, wb, gelu)
        return y * 1.01 if self.onednn else y  # the fused kernel mis-computes by 1%

    monkeypatch.setattr(_FastBert, "_linear", off_when_fused)
    monkeypatch.setattr(fastbert, "_onednn_linear_available", lambda: True)
    ladder = build_ladder(_FastBert, transformers_model(tiny_bert), torch.float32, PROBE)
    assert ladder.rung == "torch-float32"
    assert ladder.passed_over[0][0] == "onednn-float32" and "max abs diff" in ladder.passed_over[0][1]


@pytest.mark.parametrize("garbled", ["onednn-bfloat16", "torch-bfloat16"])
def test_a_low_precision_rung_that_disagrees_falls_to_the_next(tiny_bert, monkeypatch, garbled,
                                                              onednn_runs_low_precision):
    """A garbled low-precision kernel is caught by the check itself. On a tiny random BERT each layer changes the
    residual stream little, so a kernel that scrambles every projection still leaves the hidden states' cosine near
    0.9997: the check must look at what each layer adds. The garbled rung is tried first; on a CPU where oneDNN
    refuses bfloat16 (AVX2 only), its ops are stood in for, so that the check, not the refusal, passes it over."""
    monkeypatch.setenv(fastbert.KERNELS_ENV, garbled.split("-")[0])
    real = _FastBert._linear

    def broken_low(self, x, wb, gelu=False):
        y = real(self, x, wb, gelu)
        return y.flip(-1) if self.low and self.onednn == garbled.startswith("onednn") else y

    monkeypatch.setattr(_FastBert, "_linear", broken_low)
    ladder = build_ladder(_FastBert, transformers_model(tiny_bert), torch.bfloat16, PROBE)
    assert ladder.rung != garbled
    reasons = dict(ladder.passed_over)
    if garbled == "torch-bfloat16" or fastbert._onednn_linear_available():
        assert garbled in reasons and "relative error" in reasons[garbled], ladder.describe()
    if garbled == "torch-bfloat16":
        assert ladder.rung in ("onednn-bfloat16", "transformers-bfloat16"), ladder.describe()
    else:
        assert ladder.rung == "torch-bfloat16", ladder.describe()

@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_no_memory_while_a_rung_is_built_fails_the_load_not_the_rung(tiny_bert, monkeypatch, dtype):
    # A rung is built at load (its own packed copies of every layer's weights) and any RuntimeError passed it over,
    # torch's CPU allocator's "can't allocate memory" included: a load on a machine short of memory for a moment
    # settled on a lower rung, or the transformers forward pass, for the rest of the process (the backend is kept
    # and reused), slower and with another rung's bits than a fresh process's. Now the load fails, saying so, and
    # the next one, with memory back, takes the rung a fresh process takes.
    want = fresh_backend(tiny_bert, dtype).rung
    real_init, met = _FastBert.__init__, []

    def short_of_memory(self, *args, **kwargs):
        if not met:
            try:
                torch.empty(1 << 60, dtype=torch.uint8)  # the allocator's own error, whatever its wording
            except RuntimeError as exc:
                met.append(str(exc))
                raise
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(_FastBert, "__init__", short_of_memory)
    with pytest.raises(RuntimeError) as info:
        fresh_backend(tiny_bert, dtype)
    assert met and str(info.value) == met[0]
    assert fresh_backend(tiny_bert, dtype).rung == want


def test_when_every_rung_fails_the_transformers_forward_runs(tiny_bert, monkeypatch):
    def crash(self, *args, **kwargs):
        raise RuntimeError("simulated: private op missing in this torch release")

    monkeypatch.setattr(_FastBert, "__call__", crash)
    for dtype in (torch.float32, torch.bfloat16):
        ladder = build_ladder(_FastBert, transformers_model(tiny_bert), dtype, PROBE)
        assert ladder.fast is None and ladder.rung == "transformers-float32"  # bf16 needs the float32 math first
    backend = fresh_backend(tiny_bert, "float32")
    assert backend.fast is None and backend.model is not None
    X = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1).fit(["x"])
    from bertfeat.encode import encode

    got, _ = encode(TEXTS, X.recipe_, lambda: backend)
    np.testing.assert_allclose(got, reference(tiny_bert, TEXTS), atol=1e-5, rtol=0)


# -- a failure at the first real batch ------------------------------------------------------------------------------


def test_a_fast_path_failing_at_the_first_batch_falls_back_once_losing_no_row(tiny_bert, monkeypatch, caplog):
    from bertfeat.encode import encode

    backend = fresh_backend(tiny_bert, "float32")
    assert backend.fast is not None
    rung = backend.rung
    recipe = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1).fit(["x"]).recipe_
    monkeypatch.setattr(backend, "workers", 1)
    calls = []

    def fails_on_real_batches(ids, mask, layers):
        calls.append(ids.shape[0])
        raise RuntimeError("could not create a primitive descriptor (simulated oneDNN failure)\nits second line")

    monkeypatch.setattr(backend, "fast", fails_on_real_batches)
    rows = []
    real_forward = backend.forward
    monkeypatch.setattr(backend, "forward", lambda units, *a: rows.append(len(units)) or real_forward(units, *a))
    with caplog.at_level(logging.WARNING, logger="bertfeat"):
        got, stats = encode(TEXTS, recipe, lambda: backend, batch_tokens=40)
    assert len(calls) == 1  # tried once, then never again
    assert backend.fast is None and backend.rung == "transformers-float32"
    assert sum(rows) == len(set(TEXTS))  # every distinct text sent once: none lost, none repeated
    np.testing.assert_allclose(got, reference(tiny_bert, TEXTS), atol=1e-5, rtol=0)
    # said once, word for word (a mutation testing hunt, session 16: only its three words were read)
    assert [r.getMessage() for r in caplog.records if "failed on a batch" in r.getMessage()] == [
        f"bertfeat: the fast CPU path ({rung}) failed on a batch (RuntimeError: could not create a primitive "
        "descriptor (simulated oneDNN failure)) that the transformers forward pass runs; using that from now on"]


def test_a_batch_the_cpu_has_no_memory_for_is_halved_and_the_fast_path_kept(tiny_bert, monkeypatch, caplog):
    # torch's CPU allocator says "can't allocate memory", never "out of memory": a batch too big for the RAM left
    # (another process's peak, a notebook holding big frames) was taken for a fast-path fault, so that one failed
    # call loaded the transformers model on top (more memory, at the worst time), failed all the same, and left the
    # process on the slow path for good, its vectors no longer a fresh process's.
    from bertfeat.encode import encode

    backend = fresh_backend(tiny_bert, "float32")
    recipe = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1).fit(["x"]).recipe_
    monkeypatch.setattr(backend, "workers", 1)
    want, _ = encode(TEXTS, recipe, lambda: backend, batch_tokens=10_000)
    real, limit, met = backend.fast, 64, []  # a row of the most tokens the model takes always fits

    def little_ram(ids, mask, layers):
        if ids.shape[0] * ids.shape[1] > limit:
            try:
                torch.empty(1 << 60, dtype=torch.uint8)  # the allocator's own error, whatever its wording
            except RuntimeError as exc:
                met.append(str(exc))
                raise
        return real(ids, mask, layers)

    little_ram.rung = real.rung
    monkeypatch.setattr(backend, "fast", little_ram)
    with caplog.at_level(logging.WARNING, logger="bertfeat"):
        got, _ = encode(TEXTS, recipe, lambda: backend, batch_tokens=10_000)
    assert met and backend.fast is little_ram and backend.model is None  # kept, and no second copy loaded
    assert not any("failed on a batch" in r.getMessage() for r in caplog.records)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)  # halves: other batches, the last bits may move
    assert backend.memory_cap.capped


def test_a_failure_of_the_transformers_path_itself_is_raised(tiny_bert, monkeypatch):
    backend = fresh_backend(tiny_bert, "float32")
    monkeypatch.setattr(backend, "fast", lambda *a: (_ for _ in ()).throw(RuntimeError("fast broke")))
    monkeypatch.setattr(TorchBackend, "_load_model", lambda self, dtype: _Broken())
    with pytest.raises(RuntimeError, match="transformers broke"):
        backend.forward([[5, 6, 7], [8]], ("mean",), ((3,),))

def test_a_batch_that_fails_the_transformers_path_too_keeps_the_fast_path(tiny_bert, monkeypatch, caplog):
    # A batch the fast path failed on (not for memory) left the process on the transformers forward pass for good,
    # even where that pass failed the same batch too: the fault was the batch's, yet every later call ran on the
    # slow path (and another rung's bits). Now the fast path is dropped only where the transformers pass runs the
    # batch it failed; else the batch's error is raised and the next call is a fresh backend's, bit for bit.
    from bertfeat.backend import forward_passes
    from bertfeat.encode import encode

    recipe = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1).fit(["x"]).recipe_
    want, _ = encode(TEXTS, recipe, lambda: fresh_backend(tiny_bert, "float32"), batch_tokens=10_000)
    backend = fresh_backend(tiny_bert, "float32")
    monkeypatch.setattr(backend, "workers", 1)
    poison = backend.tokenize(["zebra"])[0][0]  # a text holding this token fails on both paths
    real_fast, real_load = backend.fast, TorchBackend._load_model

    def fast(ids, mask, layers):
        if (ids == poison).any():
            raise RuntimeError("simulated: an op fails on this batch")
        return real_fast(ids, mask, layers)

    fast.rung = real_fast.rung

    class FailsToo(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, **kwargs):
            if (input_ids == poison).any():
                raise RuntimeError("simulated: the same op fails in transformers")
            return self.model(input_ids=input_ids, **kwargs)

    monkeypatch.setattr(backend, "fast", fast)
    monkeypatch.setattr(TorchBackend, "_load_model", lambda self, dtype: FailsToo(real_load(self, dtype)))
    count = (recipe.weights_sha256, recipe.config_sha256, recipe.tokenizer_sha256, "float32")
    for _ in range(2):
        with pytest.raises(RuntimeError, match="same op fails in transformers"):
            encode(["zebra"], recipe, lambda: backend, batch_tokens=10_000)
        assert backend.fast is fast and backend.model is None and backend.rung == real_fast.rung
    before = forward_passes(*count)
    with caplog.at_level(logging.WARNING, logger="bertfeat"):
        got, _ = encode(TEXTS, recipe, lambda: backend, batch_tokens=10_000)
    np.testing.assert_array_equal(got, want)
    after = forward_passes(*count)
    assert {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)} == {real_fast.rung: 1}
    assert not any("failed on a batch" in r.getMessage() for r in caplog.records)
    # a batch the transformers pass runs: the fast path's fault, left for good, the batch's rows kept
    monkeypatch.setattr(TorchBackend, "_load_model", real_load)
    got, _ = encode(["zebra"] + TEXTS, recipe, lambda: backend, batch_tokens=10_000)
    assert backend.fast is None and backend.rung == "transformers-float32"
    np.testing.assert_allclose(got[1:], want, atol=1e-5, rtol=0)


def test_a_fast_path_failure_whose_transformers_trial_runs_out_of_memory_loads_the_model_once(tiny_bert, monkeypatch):
    # The fast path failed on a batch (not for memory) and the transformers trial of that batch ran out of memory:
    # the trial model was thrown away, the batch halved, and each half failed the fast path again and loaded the
    # whole model again (a batch of 8 rows: 4 loads, each while memory was short). A trial that fails for memory
    # has not shown the fault to be the batch's: the backend stays on the transformers pass, loaded once, and halves
    # the batch there, as before the trial.
    from bertfeat.encode import encode

    recipe = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1).fit(["x"]).recipe_
    backend = fresh_backend(tiny_bert, "float32")
    monkeypatch.setattr(backend, "workers", 1)
    monkeypatch.setattr(backend, "fast", lambda *a: (_ for _ in ()).throw(RuntimeError("simulated oneDNN failure")))
    real_load, loads = TorchBackend._load_model, []

    class LittleRam(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, **kwargs):
            if input_ids.shape[0] > 1:
                raise RuntimeError("DefaultCPUAllocator: can't allocate memory (simulated)")
            return self.model(input_ids=input_ids, **kwargs)

    monkeypatch.setattr(TorchBackend, "_load_model",
                        lambda self, dtype: loads.append(dtype) or LittleRam(real_load(self, dtype)))
    texts = [f"text number {i}" for i in range(8)]
    got, _ = encode(texts, recipe, lambda: backend, batch_tokens=10_000)
    assert len(loads) == 1
    assert backend.fast is None and backend.rung == "transformers-float32"
    np.testing.assert_allclose(got, reference(tiny_bert, texts), atol=1e-5, rtol=0)


class _Broken(torch.nn.Module if torch else object):
    def forward(self, **kwargs):
        raise RuntimeError("transformers broke")


# -- reduced precision is never a trap -----------------------------------------------------------------------------


def test_slower_bf16_warns_with_both_measured_rates_and_keeps_the_dtype(tiny_bert, monkeypatch):
    monkeypatch.setattr(hardware, "dtype_rates", lambda h, i, dtypes: {"float32": 120.0, "bfloat16": 14.0})
    with pytest.warns(SlowDtypeWarning) as record:
        backend = TorchBackend(resolve_model(tiny_bert), "cpu", "bfloat16")
    message = str(record[0].message)
    assert "14 GFLOP/s" in message and "120 GFLOP/s" in message and "dtype='float32'" in message
    assert backend.dtype == "bfloat16" and backend.rung.endswith("bfloat16")


def test_the_slow_dtype_warning_points_at_the_callers_line(tiny_bert, monkeypatch):
    import sys

    from sklearn.pipeline import make_pipeline

    from bertfeat import BertEmbedder
    from bertfeat.backend import clear_backends

    monkeypatch.setattr(hardware, "dtype_rates", lambda h, i, dtypes: {"float32": 120.0, "bfloat16": 14.0})
    clear_backends()
    pipe = make_pipeline(BertEmbedder(tiny_bert, dtype="bfloat16"))
    try:
        with pytest.warns(SlowDtypeWarning) as record:
            pipe.fit_transform(["a"]); line = sys._getframe().f_lineno  # noqa: E702
    finally:
        clear_backends()
    [mine] = [w for w in record if issubclass(w.category, SlowDtypeWarning)]
    assert (mine.filename, mine.lineno) == (__file__, line)


def test_one_cpu_spelled_two_ways_is_one_model_and_one_slow_dtype_warning(tiny_bert, monkeypatch):
    """device="cpu:0" (torch's spelling of the one CPU device) loaded a second copy of the model beside device="cpu"'s,
    and said the SlowDtypeWarning a second time (it is said once per process, at the model's load)."""
    from bertfeat import BertEmbedder
    from bertfeat.backend import clear_backends, get_backend

    monkeypatch.setattr(hardware, "dtype_rates", lambda h, i, dtypes: {"float32": 120.0, "bfloat16": 14.0})
    clear_backends()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for device in ("cpu", "cpu:0", "cpu"):
                BertEmbedder(tiny_bert, dtype="bfloat16", device=device).fit_transform(["a cat"])
        assert sum(issubclass(w.category, SlowDtypeWarning) for w in caught) == 1
        spec = resolve_model(tiny_bert)
        assert get_backend(spec, "cpu:0", "bfloat16") is get_backend(spec, "cpu", "bfloat16")
    finally:
        clear_backends()


def test_faster_bf16_does_not_warn(tiny_bert, monkeypatch):
    monkeypatch.setattr(hardware, "dtype_rates", lambda h, i, dtypes: {"float32": 120.0, "bfloat16": 300.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowDtypeWarning)
        TorchBackend(resolve_model(tiny_bert), "cpu", "bfloat16")


def test_float32_never_measures_or_warns(tiny_bert, monkeypatch):
    monkeypatch.setattr(hardware, "dtype_rates", lambda *a: pytest.fail("float32 should not measure rates"))
    TorchBackend(resolve_model(tiny_bert), "cpu", "float32")


@pytest.mark.parametrize("failure", ["bf16 kernel missing on this CPU",
                                     "DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes"])
def test_bf16_this_cpu_cannot_run_at_all_is_one_clear_error(tiny_bert, tmp_path, monkeypatch, failure):
    """The bottom rung (transformers in bf16) raising is a ValueError naming the CPU and the fix, not a raw crash.
    (Found reviewing session 8's merge) A machine out of memory during that one-text trial is no fault of the dtype:
    it was told "dtype='bfloat16' cannot run on this CPU ... pass dtype='float32'"; torch's own error is raised.
    (A mutation testing hunt, session 16) The refusal is read word for word, with the CPU's instruction sets and
    without any, and the trial is read to run as the batches do, padded with its mask."""
    import json
    import shutil

    path = tmp_path / "no-fast-path"
    shutil.copytree(tiny_bert, path)
    config = json.loads((path / "config.json").read_text())
    config["hidden_act"] = "gelu_new"  # no fast path: the transformers model runs in bf16 (autocast)
    (path / "config.json").write_text(json.dumps(config))
    real_load = TorchBackend._load_model

    trials = []

    def load(self, dtype):
        model = real_load(self, dtype)
        forward = model.forward

        def bf16_missing(**kw):
            if _cpu_autocast_dtype() == torch.bfloat16:
                trials.append(kw)
                raise RuntimeError(failure)
            return forward(**kw)

        model.forward = bf16_missing
        return model

    monkeypatch.setattr(TorchBackend, "_load_model", load)
    import bertfeat.load_checks

    # the CPU itself runs no bfloat16 (a product under autocast fails too): else the model's code is named instead;
    # the check is asked about the dtype the trial ran in
    asked = []
    monkeypatch.setattr(bertfeat.load_checks, "_autocast_runs_on_cpu", lambda dtype: asked.append(dtype) and False)
    if "allocate" in failure:
        with pytest.raises(RuntimeError, match="can't allocate memory"):
            TorchBackend(resolve_model(str(path)), "cpu", "bfloat16")
        return
    monkeypatch.setattr(hardware, "cpu_model", lambda: "AMD EPYC 7551 32-Core Processor")
    for flags, listed in ((["avx2", "fma", "f16c"], "avx2, fma, f16c"), ([], "none reported")):
        monkeypatch.setattr(hardware, "cpu_flags", lambda flags=flags: flags)
        with pytest.raises(ValueError) as refused:
            TorchBackend(resolve_model(str(path)), "cpu", "bfloat16")
        assert str(refused.value) == (f"dtype='bfloat16' cannot run on this CPU (AMD EPYC 7551 32-Core Processor; "
                                      f"instruction sets: {listed}): {failure}. Pass dtype='float32', the fast mode "
                                      "here.")
    assert asked == [torch.bfloat16, torch.bfloat16]
    # the trial is a batch as the model will run them: the probes padded to one length, with their attention mask
    ids, mask = trials[-1]["input_ids"], trials[-1].get("attention_mask")
    assert mask is not None and mask.shape == ids.shape == (2, ids.shape[1])
    assert mask[0].tolist() != mask[1].tolist() and set(mask.flatten().tolist()) == {0, 1}


def _cpu_autocast_dtype():
    """The CPU autocast dtype in force, or None, through torch 2.4's functions or torch 2.1's (the floor)."""
    if hasattr(torch, "get_autocast_dtype"):
        return torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None
    return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None


@pytest.mark.parametrize("dtype, failure, lacks, advice", [
    ("float16", "\"addmm_impl_cpu_\" not implemented for 'Half'", "kernels", "'bfloat16' or 'float32'"),
    ("float16", "Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype", "autocast",
     "'bfloat16' or 'float32'"),
    ("bfloat16", "\"addmm_impl_cpu_\" not implemented for 'BFloat16'", "kernels", "'float32'"),
])
def test_float16_that_this_torch_has_not_on_cpu_is_blamed_on_torch_not_the_cpu(tiny_bert, tmp_path, monkeypatch,
                                                                                  dtype, failure, lacks, advice):
    """(found by a dependency floors hunt, 2026-11-27, session 11) torch 2.1 (inside torch>=2.1) runs no float16
    product on CPU and its CPU autocast takes bfloat16 only (its two errors, faked here where torch has both), so
    dtype='float16' failed on every CPU, told "cannot run on this CPU (AMD EPYC; instruction sets: ... f16c,
    avx512f ...)" with nothing of torch: the cause is the torch release, and bfloat16 runs there. A torch without
    a bfloat16 kernel is told to pass float32 only, and each says whether torch lacks the kernels or the autocast
    (a mutation testing hunt, session 16: no test read the advice for bfloat16 or which of the two was named)."""
    import json
    import shutil

    path = tmp_path / "no-fast-path"
    shutil.copytree(tiny_bert, path)
    config = json.loads((path / "config.json").read_text())
    config["hidden_act"] = "gelu_new"  # no fast path: the transformers model runs in that dtype (autocast)
    (path / "config.json").write_text(json.dumps(config))
    real_load = TorchBackend._load_model

    def load(self, weights_dtype):
        model = real_load(self, weights_dtype)
        forward = model.forward

        def missing(**kw):
            if _cpu_autocast_dtype() == getattr(torch, dtype):
                raise RuntimeError(failure)
            return forward(**kw)

        model.forward = missing
        return model

    monkeypatch.setattr(TorchBackend, "_load_model", load)
    with pytest.raises(ValueError) as refused:
        TorchBackend(resolve_model(str(path)), "cpu", dtype)
    message = str(refused.value)
    assert message == (f"dtype={dtype!r} cannot run on CPU with torch {torch.__version__}, which has no {dtype} "
                       f"{lacks} there ({failure}); the CPU is not the cause. Pass dtype={advice}, or install a newer "
                       "torch.")
    assert "this CPU" not in message


def test_bf16_on_this_cpu_agrees_with_float32_and_warns_only_if_slower(tiny_bert):
    """Whatever CPU runs this: bf16 features agree with float32, and the warning fires exactly when bf16 measured
    slower here (on AVX2-only CPUs it always does)."""
    rates = hardware.dtype_rates(32, 37, ("float32", "bfloat16"))
    slower = rates["bfloat16"] is None or rates["bfloat16"] < rates["float32"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend = TorchBackend(resolve_model(tiny_bert), "cpu", "bfloat16")
    assert any(issubclass(w.category, SlowDtypeWarning) for w in caught) == slower
    recipe = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1).fit(["x"]).recipe_
    from bertfeat.encode import encode

    bf16, _ = encode(TEXTS, recipe, lambda: backend)
    assert cosines(reference(tiny_bert, TEXTS), bf16).min() >= 0.999


# -- the machine report ----------------------------------------------------------------------------------------------

ZEN1 = "processor\t: 0\nmodel name\t: AMD EPYC 7551 32-Core Processor\nflags\t\t: fpu sse2 avx fma f16c avx2\n"
XEON_BF16 = ("model name\t: Intel(R) Xeon(R) Platinum 8481C\nflags\t\t: avx2 fma f16c avx512f avx512bw avx512vl "
             "avx512dq avx512_vnni avx512_bf16 avx512_fp16\n")
SAPPHIRE_AMX = XEON_BF16.replace("avx512_fp16", "avx512_fp16 amx_tile amx_bf16 amx_int8")
GRAVITON3 = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp sve bf16 i8mm\n"


@pytest.mark.parametrize("cpuinfo, flags, native", [
    (ZEN1, ["avx2", "fma", "f16c"], ["float32"]),
    (XEON_BF16, ["avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16",
                 "avx512_fp16"], ["float32", "bfloat16", "float16"]),
    (SAPPHIRE_AMX, None, ["float32", "bfloat16", "float16"]),
    (GRAVITON3, ["asimd", "asimdhp", "fphp", "bf16", "i8mm", "sve"], ["float32", "bfloat16", "float16"]),
])
def test_cpu_flags_and_native_dtypes(cpuinfo, flags, native):
    got = hardware.cpu_flags(cpuinfo)
    if flags is not None:
        assert got == flags
    else:
        assert {"amx_tile", "amx_bf16", "amx_int8"} <= set(got)
    assert hardware.native_dtypes(got) == native


def test_cpu_id_tells_generations_apart():
    zen1 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n\n" \
           "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
    assert hardware.cpu_id(zen1) == "AuthenticAMD family 23 model 1"  # the first processor's block only
    assert hardware.cpu_id(GRAVITON3) is None


def test_machine_report_has_the_facts_a_bug_report_needs():
    report = hardware.machine_report()  # MiniLM's shapes
    assert report["cpu"] and report["threads"] >= 1 and report["allotted_cores"] >= 1
    assert report["matmul_gflops"]["float32"] > 0
    assert report["fastest_dtype"] in ("float32", "bfloat16", "float16")
    best = max((d for d, r in report["matmul_gflops"].items() if r), key=lambda d: report["matmul_gflops"][d])
    assert report["fastest_dtype"] == best
    assert report["native_dtypes"][0] == "float32"
    first, why = fastbert.preferred_kernels()
    assert report["cpu_kernels"] == f"{first} ({why})"


def test_slow_dtype_message_only_when_slower():
    assert hardware.slow_dtype_message("bfloat16", {"float32": 100.0, "bfloat16": 150.0}) is None
    assert hardware.slow_dtype_message("float32", {"float32": 100.0}) is None
    text = hardware.slow_dtype_message("float16", {"float32": 100.0, "float16": 20.0})
    assert "20 GFLOP/s" in text and "100 GFLOP/s" in text and "float16" in text


def test_a_slow_rate_under_one_gflops_is_shown_not_rounded_to_zero():
    # a tiny model's shapes on a CPU without bf16 kernels measured 0.4 GFLOP/s: the warning said "measured 0 GFLOP/s"
    text = hardware.slow_dtype_message("bfloat16", {"float32": 46.2, "bfloat16": 0.43})
    assert "measured 0.43 GFLOP/s against 46 GFLOP/s" in text
    assert hardware.gflops_text(221.4) == "221" and hardware.gflops_text(9.87) == "9.9"
    assert hardware.gflops_text(0.004) == "0.004" and hardware.gflops_text(None) == "n/a"


def test_bertfeat_info_reports_this_machine(capsys):
    import json

    from bertfeat.cli import main

    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    m = info["machine"]
    assert m["matmul_shape"] == [256, 384, 1536]  # MiniLM's own feed-forward shape
    assert m["matmul_gflops"]["float32"] > 0 and set(m["matmul_gflops"]) == {"float32", "bfloat16", "float16"}
    assert m["flags"] == hardware.cpu_flags() and m["native_dtypes"] == hardware.native_dtypes()
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert "native dtypes:" in text and f"fastest on this CPU: dtype={m['fastest_dtype']!r}" in text
    assert f"CPU kernels:  {m['cpu_kernels']} (BERTFEAT_CPU_KERNELS=onednn|torch to change)" in text
    assert f"forward pass: {m['forward_pass']}, float32 on this CPU" in text
    assert main(["info", "--json", "--no-machine"]) == 0
    assert "machine" not in json.loads(capsys.readouterr().out)


def test_cli_prints_a_slow_dtype_warning_as_one_line(tmp_path, monkeypatch, tiny_bert):
    from bertfeat.backend import clear_backends
    from bertfeat.cli import _one_line_warnings, main

    monkeypatch.setattr(hardware, "dtype_rates", lambda h, i, dtypes: {"float32": 120.0, "bfloat16": 14.0})
    clear_backends()
    (tmp_path / "in.csv").write_text("id,text\n1,hello world\n2,the cat sat\n")
    with pytest.warns(SlowDtypeWarning, match="14 GFLOP/s"):  # warned, and the run goes on in bfloat16
        rc = main(["embed", str(tmp_path / "in.csv"), "--text-col", "text", "--out", str(tmp_path / "out.parquet"),
                   "--model", tiny_bert, "--dtype", "bfloat16", "--quiet"])
    clear_backends()
    assert rc == 0 and (tmp_path / "out.parquet").exists()
    # how the CLI shows it: one line, no file:line, no category name; other warnings keep Python's format
    with _one_line_warnings("embed"):
        ours = warnings.formatwarning(SlowDtypeWarning("dtype='bfloat16' runs slower"), SlowDtypeWarning, "f.py", 3)
        theirs = warnings.formatwarning(DeprecationWarning("old"), DeprecationWarning, "f.py", 3)
    assert ours == "bertfeat embed: warning: dtype='bfloat16' runs slower\n"
    assert theirs.startswith("f.py:3: DeprecationWarning: old")


# -- no dtype, device or thread setting ends in a raw error ------------------------------------------------------------


@pytest.mark.parametrize("device", ["meta", "xpu", "tpu", "", "cuda:3", "mps", "ipu"])
def test_every_device_a_user_can_pass_is_run_or_refused_in_one_line(tiny_bert, device):
    if device == "cuda:3" and torch.cuda.is_available() or device == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has that device")
    with pytest.raises(ValueError, match=r"device=.*(expected|pass device='cpu')"):
        BertEmbedder(model=tiny_bert, device=device).fit_transform(["hello"])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_every_cpu_dtype_runs_and_stays_the_recipe_dtype(tiny_bert, dtype):
    if dtype == "float16":
        try:
            torch.ones(2, 2, dtype=torch.float16) @ torch.ones(2, 2, dtype=torch.float16)
        except RuntimeError as exc:  # torch 2.1 (the floor): refused, naming torch (the test above)
            pytest.skip(f"torch {torch.__version__} runs no float16 product on CPU ({exc})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlowDtypeWarning)
        emb = BertEmbedder(model=tiny_bert, device="cpu", dtype=dtype, pooling="mean", layers=-1)
        X = emb.fit_transform(TEXTS)
    assert emb.recipe_.dtype == dtype and X.dtype == np.float32 and np.isfinite(X).all()
    assert cosines(X, reference(tiny_bert, TEXTS)[:, 32:]).min() >= 0.999


def test_omp_threads_set_by_the_user_are_kept(tiny_bert, monkeypatch):
    from bertfeat.backend import clear_backends

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        clear_backends()  # a new backend, which sets its threads as it loads
        BertEmbedder(model=tiny_bert, device="cpu", pooling="mean", layers=-1).fit_transform(["hello"])
        assert torch.get_num_threads() == 1  # a lower count set by the user is left alone
    finally:
        torch.set_num_threads(before)


def test_the_cli_manifest_records_the_machine_it_ran_on(tmp_path, tiny_bert):
    import json

    from bertfeat.files import embed_file

    (tmp_path / "in.csv").write_text("id,text\n1,hello world\n2,the cat sat\n")
    embed_file(str(tmp_path / "in.csv"), str(tmp_path / "o.parquet"), "text", model=tiny_bert, quiet=True)
    m = json.loads((tmp_path / "o.parquet.manifest.json").read_text())["timing"]["machine"]
    assert m["flags"] == hardware.cpu_flags() and m["native_dtypes"] == hardware.native_dtypes()
    assert m["cpu"] == hardware.cpu_model() and m["threads"] >= 1
    assert set(m["matmul_gflops"]) == {"float32", "bfloat16"} and m["matmul_gflops"]["float32"] > 0
    assert m["cpu_kernels"] == "{} ({})".format(*fastbert.preferred_kernels())


# -- one choice per machine: the same rung, and so the same bytes, in every process -----------------------------------


@pytest.mark.parametrize("slow", ["onednn", "torch"])
def test_a_slow_moment_never_moves_the_choice(tiny_bert, monkeypatch, slow):
    """The rung is a property of the CPU, never of a moment's load: the two float32 rungs round differently, so a
    choice that followed timings could put two roundings of one recipe into one resumed output or one shared cache.
    Either rung is slowed here on every call after the check; the choice must be the unslowed one."""
    import time

    monkeypatch.setattr(fastbert, "_onednn_linear_available", lambda: True)
    model = transformers_model(tiny_bert)
    for dtype, name in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
        before = build_ladder(_FastBert, model, dtype, PROBE).rung
        real = _FastBert.__call__

        def slowed(self, ids, mask, layers):
            if self.onednn == (slow == "onednn") and ids.shape[0] > len(PROBE):
                time.sleep(0.05)
            return real(self, ids, mask, layers)

        monkeypatch.setattr(_FastBert, "__call__", slowed)
        assert build_ladder(_FastBert, model, dtype, PROBE).rung == before, name
        monkeypatch.setattr(_FastBert, "__call__", real)


SLOWED_RUN = """
import sys, time
import numpy as np
from bertfeat import BertEmbedder
from bertfeat.fastbert import _FastBert
real = _FastBert.__call__
def slowed(self, ids, mask, layers):
    if self.onednn == (sys.argv[1] == "onednn") and ids.shape[0] > 2:
        time.sleep(0.05)
    return real(self, ids, mask, layers)
_FastBert.__call__ = slowed
texts = ["the cat sat on the mat", "a long and winding review of a film " * 6, "short", "great value for money"]
np.save(sys.argv[2], BertEmbedder(pooling="cls+mean", layers=[-1]).fit_transform(texts))
"""


def test_two_processes_give_the_same_bytes_whichever_rung_a_moment_favours(tmp_path):
    """End to end, on the bundled MiniLM (whose two float32 rungs differ in the last bits on AVX-512 machines): one
    process that finds oneDNN slow and one that finds plain torch slow write byte-identical features."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
    outs = []
    for slow in ("onednn", "torch"):
        out = tmp_path / f"{slow}.npy"
        subprocess.run([sys.executable, "-c", SLOWED_RUN, slow, str(out)], env=env, cwd=root, check=True, timeout=300)
        outs.append(np.load(out))
    assert outs[0].tobytes() == outs[1].tobytes()


def test_counting_a_forward_pass_does_not_wait_for_another_models_load():
    """(found reviewing the merge) the count of forward passes took the backends' registry lock, which a model's
    load holds for seconds (from_pretrained, the checks, the ladder): every batch of a loaded model in a server's
    threads stalled while another thread loaded a second model."""
    import threading

    from bertfeat import backend, batch_runner
    from bertfeat.models import ModelSpec

    spec = ModelSpec.__new__(ModelSpec)
    for name in ("weights_sha256", "config_sha256", "tokenizer_sha256"):
        object.__setattr__(spec, name, "test-" + name)
    done = threading.Event()
    with backend._LOCK:  # a load in progress elsewhere
        worker = threading.Thread(target=lambda: (batch_runner._count_pass(spec, "float32", "torch-float32"), done.set()))
        worker.start()
        assert done.wait(5), "a batch's count waited for the registry lock"
    worker.join()
    assert backend.forward_passes("test-weights_sha256", "test-config_sha256", "test-tokenizer_sha256",
                                  "float32")["torch-float32"] >= 1


def test_two_loads_at_once_leave_transformers_logging_as_the_user_set_it(tiny_bert, monkeypatch):
    """(found by a concurrency hunt, 2026-11-27) each tokenizer or model load silenced transformers' logging and its
    progress bars, and put back what it found: two loads overlapping in two threads (a tokenizer loaded at one
    thread's fit while another loads its model), the second found the first's silence and, ending after it, put that
    back for good: every transformers warning of the process was lost from then on; and meanwhile the second's load
    ran loud. Here the second load begins while the first runs, and ends after it."""
    import transformers
    from transformers.utils import logging as hf_logging

    from bertfeat import model_files
    from tests._overlap import Overlap

    monkeypatch.setattr(model_files, "_TOKENIZERS", [])  # both load
    real = transformers.AutoTokenizer.from_pretrained
    overlap, seen = Overlap(), {}

    def from_pretrained(path, **kwargs):
        if overlap.inside() == "second":
            seen["level in the second load after the first ended"] = hf_logging.get_verbosity()
        return real(path, **kwargs)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", from_pretrained)
    spec = resolve_model(tiny_bert)
    bar = hf_logging.is_progress_bar_enabled()
    level = hf_logging.get_verbosity()
    try:
        hf_logging.set_verbosity_info()
        hf_logging.enable_progress_bar()
        overlap.run(lambda: model_files.load_tokenizer(spec), lambda: model_files.load_tokenizer(spec))
        after = (hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled())
    finally:
        hf_logging.set_verbosity(level)
        (hf_logging.enable_progress_bar if bar else hf_logging.disable_progress_bar)()
    assert (seen, after) == ({"level in the second load after the first ended": hf_logging.ERROR},
                             (hf_logging.INFO, True))


def _level_in_a_child(queue, path):
    from transformers.utils import logging as hf_logging

    from bertfeat import model_files
    from bertfeat.models import resolve_model

    found = hf_logging.get_verbosity()
    model_files._TOKENIZERS.clear()
    model_files.load_tokenizer(resolve_model(path))
    queue.put((found, hf_logging.get_verbosity()))


def test_a_child_forked_during_a_load_logs_as_the_user_set_it(tiny_bert, monkeypatch):
    """A process forked while a thread loads (multiprocessing's fork, a web server's workers) starts with no load
    running: the silence it inherited is lifted, and its own loads put back the user's level."""
    import multiprocessing
    import threading

    import transformers
    from transformers.utils import logging as hf_logging

    from bertfeat import model_files

    monkeypatch.setattr(model_files, "_TOKENIZERS", [])
    real = transformers.AutoTokenizer.from_pretrained
    inside, go = threading.Event(), threading.Event()

    def held(path, **kwargs):
        if threading.current_thread().name == "held":
            inside.set()
            assert go.wait(60)
        return real(path, **kwargs)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", held)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_info()
    load = threading.Thread(target=model_files.load_tokenizer, args=(resolve_model(tiny_bert),), name="held")
    try:
        load.start()
        assert inside.wait(30)
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_level_in_a_child, args=(queue, tiny_bert))
        child.start()
        got = queue.get(timeout=60)
        child.join(60)
    finally:
        go.set()
        load.join(30)
        after = hf_logging.get_verbosity()
        hf_logging.set_verbosity(level)
    assert got == (hf_logging.INFO, hf_logging.INFO) and after == hf_logging.INFO


def test_the_manifest_and_info_say_which_forward_pass_ran(tmp_path, tiny_bert):
    """Which arrangement ran (the fused pass, on which kernels, or transformers' own forward pass) decides the speed
    and the last bits of every vector, and was only a debug line: the manifest said which kernels this CPU tries
    first (`cpu_kernels`) even for a model that never takes the fused pass, and `bertfeat info` alike."""
    import json

    from bertfeat.backend import clear_backends, get_backend
    from bertfeat.cli.info import describe
    from bertfeat.files import embed_file
    from tests.tiny_encoders import build_tiny_encoder

    clear_backends()
    electra = build_tiny_encoder(tmp_path / "electra", "electra", corpus=TINY_SENTENCES)  # never fused
    (tmp_path / "in.csv").write_text("id,text\n" + "".join(f"{i},{t}\n" for i, t in enumerate(TINY_SENTENCES)))
    for model, cache in ((tiny_bert, None), (electra, tmp_path / "cache"), (electra, tmp_path / "cache")):
        out = tmp_path / f"o{len(list(tmp_path.glob('o*.parquet')))}.parquet"
        embed_file(str(tmp_path / "in.csv"), str(out), "text", model=model, quiet=True, cache_dir=cache)
        manifest = json.loads(out.with_name(out.name + ".manifest.json").read_text())
        ran = manifest["timing"]["forward_pass"]
        if cache is not None and (tmp_path / "o2.parquet").exists():  # the rerun: every text from the cache
            assert ran == {} and manifest["timing"]["device"] is None  # no model ran anywhere
            continue
        assert manifest["timing"]["device"] == "cpu"
        rung = get_backend(resolve_model(model), "cpu", "float32").rung
        assert rung.startswith("transformers-" if model == electra else ("onednn-", "torch-"))
        assert list(ran) == [rung] and ran[rung] >= 1  # the batches this run sent through it
    for model in (tiny_bert, electra):
        rung = get_backend(resolve_model(model), "cpu", "float32").rung
        assert describe(model)["machine"]["forward_pass"].startswith(rung)
    # why: the families the fused pass reimplements, named from the one list supports() reads
    assert describe(electra)["machine"]["forward_pass"] == (
        "transformers-float32 (model_type 'electra' with this config is not one the fused CPU pass reimplements: "
        "model_type bert, roberta, xlm-roberta, camembert, distilbert, mpnet with erf GELU and absolute positions)")
    clear_backends()
