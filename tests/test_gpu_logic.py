"""The GPU path's logic, checked on CPU: device and dtype choice without CUDA, the out-of-memory retry and its cap,
batches in flight, process-wide flags, memory sizing, finite output. What needs a real GPU is in
benchmarks/gpu_check.py and the tests marked ``gpu``.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import types
import weakref

import numpy as np
import pytest

from bertfeat import BertEmbedder, devices, gpu
from bertfeat import backend as backend_mod
from bertfeat.backend import TorchBackend, get_backend
from bertfeat.devices import resolve_device, resolve_dtype
from bertfeat.encode import encode
from bertfeat.gpu import HeldFlag, MemoryCap, gpu_batch_tokens
from bertfeat.models import resolve_model
from tests.conftest import TINY_SENTENCES, CountingBackend, make_recipe

torch = pytest.importorskip("torch")


@pytest.fixture
def tiny_backend(tiny_bert, monkeypatch):
    backend = get_backend(resolve_model(tiny_bert), "cpu", "float32")
    monkeypatch.setattr(backend, "memory_cap", MemoryCap(patience=10**6))
    return backend


@pytest.fixture
def no_cuda_init(monkeypatch):
    """Fail the test if anything starts CUDA (or asks torch's emulation-counting bf16 check)."""
    def refuse(*args, **kwargs):
        raise AssertionError("CUDA was initialised")

    monkeypatch.setattr(torch.cuda, "_lazy_init", refuse)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", refuse)
    monkeypatch.setattr(torch.cuda, "get_device_capability", refuse)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)


def two_gpus(monkeypatch, capabilities=((8, 0), (7, 5))):
    """A machine with an A100-class cuda:0 and a T4-class cuda:1, as bertfeat sees it through NVML."""
    monkeypatch.setattr(gpu, "device_count", lambda: len(capabilities))
    monkeypatch.setattr(gpu, "_nvml_capability", lambda index: capabilities[index])


# -- item 1: the test suite stays on CPU ------------------------------------------------------------------------


def test_tests_not_marked_gpu_run_on_cpu_even_where_torch_sees_a_gpu(tiny_bert, monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cpu"
    assert BertEmbedder(model=tiny_bert).fit(["x"]).recipe_.dtype == "float32"
    child = subprocess.run([sys.executable, "-c", "import os; print(repr(os.environ['CUDA_VISIBLE_DEVICES']))"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == "''"  # the CLI, R and Ray processes a test starts see no GPU either


# -- item 4 and 10: device and dtype --------------------------------------------------------------------------------


def test_auto_dtype_is_bf16_only_where_native_and_asks_the_named_gpu(monkeypatch, no_cuda_init):
    two_gpus(monkeypatch)
    assert resolve_dtype("auto", "cuda:0") == "bfloat16"
    assert resolve_dtype("auto", "cuda:1") == "float16"  # T4 / V100 emulate bf16: fp16 there
    assert resolve_dtype("auto", "cuda") == "bfloat16"  # "cuda" is device 0 before CUDA starts
    assert resolve_dtype("float32", "cuda:1") == "float32"


def test_fit_on_a_named_gpu_resolves_its_dtype_without_starting_cuda(tiny_bert, monkeypatch, no_cuda_init):
    two_gpus(monkeypatch)
    assert BertEmbedder(model=tiny_bert, device="cuda:1").fit(["x"]).recipe_.dtype == "float16"
    assert BertEmbedder(model=tiny_bert, device="cuda:0").fit(["x"]).recipe_.dtype == "bfloat16"


def test_compute_capability_comes_from_nvml_before_cuda_starts(monkeypatch, no_cuda_init):
    monkeypatch.setattr(gpu, "_nvml_capability", lambda index: (7, 0) if index == 3 else None)
    assert gpu.compute_capability(3) == (7, 0)
    assert gpu.native_bf16(3) is False


@pytest.mark.parametrize("native", [True, False])
def test_auto_dtype_on_rocm_asks_torch_through_the_signature_it_has(monkeypatch, native):
    """(found by a dependency floors hunt, 2026-11-27, session 11) on ROCm bertfeat asked
    ``torch.cuda.is_bf16_supported(including_emulation=False)``, an argument torch 2.1 lacks (inside ``torch>=2.1``),
    so every ``dtype="auto"`` job on an AMD GPU failed with a TypeError. Both signatures are faked here."""
    monkeypatch.setattr(torch.version, "hip", "5.6.31061")
    monkeypatch.setattr(gpu, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: native)  # torch 2.1: no argument
    assert resolve_dtype("auto", "cuda:0") == ("bfloat16" if native else "float16")
    asked = []
    monkeypatch.setattr(torch.cuda, "is_bf16_supported",
                        lambda including_emulation=True: asked.append(including_emulation) or native)
    assert resolve_dtype("auto", "cuda:0") == ("bfloat16" if native else "float16")
    assert asked == [False]  # the newer torch is asked for native bfloat16, not its emulation


def test_cuda_n_is_checked_against_the_device_count(monkeypatch):
    two_gpus(monkeypatch)
    assert resolve_device("cuda:1") == "cuda:1"
    with pytest.raises(ValueError, match=r"device='cuda:2'.*sees 2 CUDA GPU\(s\).*cuda:0 to cuda:1"):
        resolve_device("cuda:2")
    monkeypatch.setattr(gpu, "device_count", lambda: 0)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        resolve_device("cuda")


def test_cuda_and_cuda_0_share_one_loaded_model(monkeypatch):
    loads = []

    class FakeBackend:
        def __init__(self, spec, device, dtype, trust):
            loads.append(device)

    monkeypatch.setattr(backend_mod, "TorchBackend", FakeBackend)
    monkeypatch.setattr(backend_mod, "_REGISTRY", {})
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    spec = types.SimpleNamespace(path="/m", weights_sha256="w", config_sha256="c", tokenizer_sha256="t")
    assert get_backend(spec, "cuda", "bfloat16") is get_backend(spec, "cuda:0", "bfloat16")
    assert get_backend(spec, "cuda:1", "bfloat16") is not get_backend(spec, "cuda:0", "bfloat16")
    assert loads == ["cuda:0", "cuda:1"]


def test_a_local_jobs_manifest_names_the_device_its_passes_ran_on(monkeypatch):
    """The local engine's manifest named no device: on a GPU host its timing held this host's CPU facts and a
    forward pass "transformers-bfloat16" (a CPU's name too), never that a GPU ran it (Ray's and Spark's name each
    worker's device). timing.device is now where the passes ran (tests/test_arrow.py: "cpu" for a CPU job)."""
    from bertfeat.files import _ran_on

    monkeypatch.setattr(gpu, "device_count", lambda: 2)
    monkeypatch.setattr(gpu, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    ran = {device: _ran_on(types.SimpleNamespace(embedder=types.SimpleNamespace(device=device)))
           for device in ("auto", "cuda", "cuda:1", "cpu", "cpu:0")}
    assert ran == {"auto": "cuda:0", "cuda": "cuda:0", "cuda:1": "cuda:1", "cpu": "cpu", "cpu:0": "cpu"}


# -- Apple GPUs (MPS), checked on CPU ------------------------------------------------------------------------------


def an_apple_gpu(monkeypatch, refuses=()):
    """A Mac with an Apple GPU and no CUDA, as bertfeat sees it, whose torch's autocast on MPS refuses ``refuses``:
    ``"mps"``, the device itself (torch before MPS autocast: "unsupported autocast device_type"), or dtypes it turns
    autocast off for with a warning (bfloat16 before macOS 14; a torch whose MPS autocast took one dtype only)."""
    import warnings

    monkeypatch.setattr(gpu, "cuda_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    real = torch.autocast

    def autocast(device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type == "mps" and "mps" in refuses:
            raise RuntimeError("User specified an unsupported autocast device_type 'mps'")
        if device_type == "mps" and dtype in refuses:
            warnings.warn("In MPS autocast, but the target dtype torch.bfloat16 is not supported on macOS versions "
                          "below 14. Disabling autocast.")
            enabled = False
        return real(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    monkeypatch.setattr(torch, "autocast", autocast)


def test_auto_takes_the_apple_gpu_in_float16_where_torchs_autocast_runs_it(monkeypatch):
    an_apple_gpu(monkeypatch)
    assert resolve_device("auto") == "mps" and resolve_dtype("auto", "mps") == "float16"
    assert devices.half_precision_refusal("mps", "bfloat16") is None
    assert devices.half_precision_refusal("mps", "float32") is None


def test_auto_takes_float32_on_an_apple_gpu_whose_torch_has_no_autocast_there(monkeypatch):
    """torch ran no autocast on MPS before 2.5 (bertfeat asks torch>=2.1): `BertEmbedder()` on a Mac resolved
    dtype='auto' to float16 there and failed at its first batch with torch's "User specified an unsupported autocast
    device_type 'mps'"."""
    an_apple_gpu(monkeypatch, refuses=("mps",))
    assert resolve_dtype("auto", "mps") == "float32"
    an_apple_gpu(monkeypatch, refuses=(torch.float16,))  # a torch whose MPS autocast takes bfloat16 only
    assert resolve_dtype("auto", "mps") == "float32"



def test_the_apple_gpu_asked_for_under_rosetta_is_refused_saying_why(monkeypatch):
    """An x86_64 Python (an old Anaconda) on Apple silicon runs under Rosetta, where torch has no MPS: device='mps'
    was refused "MPS is not available here", with nothing of why or what to do."""
    from bertfeat import os_cpu

    monkeypatch.setattr(gpu, "cuda_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(os_cpu, "under_rosetta", lambda: True)
    with pytest.raises(ValueError) as err:
        resolve_device("mps")
    assert str(err.value) == (
        "device='mps' was asked for, but MPS is not available here: this Python is x86_64 code that Rosetta "
        "translates on Apple silicon, where torch has no Apple GPU; install an arm64 Python (python.org's, "
        "Miniforge's) and bertfeat in it, or pass device='cpu'.")
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(os_cpu, "under_rosetta", lambda: False)
    with pytest.raises(ValueError, match=r"^device='mps' was asked for, but MPS is not available here; pass "
                                         r"device='cpu' or device='auto'\.$"):
        resolve_device("mps")

@pytest.mark.parametrize("refuses, dtype, why, instead", [
    (("mps",), "float16", "User specified an unsupported autocast device_type 'mps'", "Pass dtype='float32'"),
    ((torch.bfloat16,), "bfloat16", "In MPS autocast, but the target dtype torch.bfloat16 is not supported on macOS "
                                    "versions below 14. Disabling autocast.", "Pass dtype='float16' or 'float32'"),
])
def test_a_half_dtype_torch_will_not_run_on_the_apple_gpu_is_refused_before_the_model_loads(
        tiny_bert, monkeypatch, refuses, dtype, why, instead):
    """Where torch turns its MPS autocast off for a dtype (bfloat16 before macOS 14), it warned and ran the model in
    float32: float32 vectors under a bfloat16 recipe, cached as bfloat16's; where it had none, its error came at the
    first batch. Now refused at the load, in one line, before any weight reaches the device."""
    an_apple_gpu(monkeypatch, refuses)
    monkeypatch.setattr(backend_mod, "_REGISTRY", {})
    monkeypatch.setattr(backend_mod, "load_checked_model",
                        lambda *a, **kw: pytest.fail("the model was loaded for a dtype that cannot run"))
    with pytest.raises(ValueError) as err:
        BertEmbedder(model=tiny_bert, device="mps", dtype=dtype).fit_transform(["a text"])
    assert str(err.value) == (
        f"dtype={dtype!r} cannot run on device='mps' with torch {torch.__version__}: bertfeat runs half precision on "
        f"a GPU under torch's autocast, which does not run it here ({why}), so the model would compute float32 "
        f"vectors under a {dtype} recipe. {instead}, or a newer torch (bfloat16 on an Apple GPU needs macOS 14).")


# -- item 2 and 3: the out-of-memory retry ----------------------------------------------------------------------------


class Activation:
    """Stands for a failed batch's tensors: alive exactly as long as something refers to it."""


def test_oom_retry_runs_after_the_failed_batch_is_released(tiny_backend, monkeypatch):
    failed: list[weakref.ref] = []
    alive_at_retry, alive_at_empty_cache = [], []

    def small_gpu(units, pooling, groups, skip=0):
        activation = Activation()  # noqa: F841 (held by this frame, as a layer's locals hold its tensors)
        if len(units) > 2:
            failed.append(weakref.ref(activation))
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        alive_at_retry.append(any(ref() is not None for ref in failed))
        return np.zeros((len(units), 1, 32), dtype=np.float32)

    monkeypatch.setattr(tiny_backend, "_forward", small_gpu)
    monkeypatch.setattr(tiny_backend, "device", "cuda:0")  # so the retry empties the CUDA cache
    monkeypatch.setattr(torch.cuda, "empty_cache",
                        lambda: alive_at_empty_cache.append(any(ref() is not None for ref in failed)))
    units = [[5, 6, 7], [8, 9], [10], [11, 12, 13, 14]]
    out = tiny_backend.forward(units, ("mean",), ((3,),))
    assert out.shape == (4, 1, 32)
    assert failed and alive_at_retry and alive_at_empty_cache
    assert not any(alive_at_empty_cache), "the cache was emptied while the failed batch was still referenced"
    assert not any(alive_at_retry), "the halves ran beside the failed batch"


def test_an_apple_gpus_oom_retry_empties_its_cache_after_the_failed_batch_is_released(tiny_backend, monkeypatch):
    """An out-of-memory error on an Apple GPU (MPS's own words, a plain RuntimeError) halved the batch and ran the
    halves beside the blocks torch's MPS allocator kept cached from the failed one: only CUDA's cache was emptied."""
    failed: list[weakref.ref] = []
    emptied = []

    def small_gpu(units, pooling, groups, skip=0):
        activation = Activation()  # noqa: F841 (held by this frame, as a layer's locals hold its tensors)
        if len(units) > 2:
            failed.append(weakref.ref(activation))
            raise RuntimeError("MPS backend out of memory (MPS allocated: 8.50 GB, other allocations: 512.00 MB, max "
                               "allowed: 9.07 GB). Tried to allocate 256.00 MB on private pool.")
        return np.zeros((len(units), 1, 32), dtype=np.float32)

    monkeypatch.setattr(tiny_backend, "_forward", small_gpu)
    monkeypatch.setattr(tiny_backend, "device", "mps")
    monkeypatch.setattr(torch.mps, "empty_cache", lambda: emptied.append(any(ref() is not None for ref in failed)))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: pytest.fail("CUDA's cache emptied for an Apple GPU"))
    out = tiny_backend.forward([[5, 6, 7], [8, 9], [10], [11, 12, 13, 14]], ("mean",), ((3,),))
    assert out.shape == (4, 1, 32) and len(failed) == 1
    assert emptied == [False]  # once, after the failed batch's tensors were gone


def test_memory_cap_halves_then_recovers_after_successful_batches():
    cap = MemoryCap(patience=3)
    assert not cap.capped and cap.fits(10**9)
    cap.failed(padded_tokens=1600, rows=16)  # 16 rows x 100 tokens ran out
    assert cap.capped and cap.limit == 800 and not cap.fits(801)
    for _ in range(3):
        cap.succeeded()
    assert cap.limit == 1600 or not cap.capped  # doubled back to the failed size: lifted
    assert not cap.capped and cap.fits(1600)
    cap.failed(1600, 16)
    assert cap.patience == 6  # a second error: twice the successes before the next try
    for _ in range(5):
        cap.succeeded()
    assert cap.capped
    cap.succeeded()
    assert not cap.capped


def test_a_transient_oom_stops_costing_throughput(tiny_backend, monkeypatch):
    """An error caused by someone else's memory (here: only the first attempt fails) lowers the cap for a while,
    then the backend runs full batches again, with the same vectors."""
    recipe = BertEmbedder(model=tiny_backend.spec.path, pooling="mean", layers=-1).fit(["x"]).recipe_
    texts = [f"dog {i} " * (i % 7 + 1) for i in range(60)]
    monkeypatch.setattr(tiny_backend, "workers", 1)
    expected, _ = encode(texts, recipe, lambda: tiny_backend, batch_tokens=64)
    monkeypatch.setattr(tiny_backend, "memory_cap", MemoryCap(patience=2))
    real = tiny_backend._forward
    sizes, errors = [], []

    def flaky(units, pooling, groups, skip=0):
        if not errors and len(units) > 1:
            errors.append(len(units))
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (another process, simulated)")
        sizes.append(len(units))
        return real(units, pooling, groups, skip)

    monkeypatch.setattr(tiny_backend, "_forward", flaky)
    got, stats = encode(texts, recipe, lambda: tiny_backend, batch_tokens=64)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)  # other batches: the last bits may move
    assert errors and not tiny_backend.memory_cap.capped
    assert max(sizes[-3:]) > errors[0] // 2  # full-size batches again at the end


def test_one_batch_in_flight_while_an_oom_cap_holds(tiny_backend, monkeypatch):
    active, peak = [0], []
    lock = threading.Lock()

    def slow(units, pooling, groups, skip=0):
        with lock:
            active[0] += 1
            peak.append(active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return np.zeros((len(units), 1, 32), dtype=np.float32)

    monkeypatch.setattr(tiny_backend, "_forward", slow)
    monkeypatch.setattr(tiny_backend, "workers", 2)
    batches = [[[5, 6]] for _ in range(8)]
    list(tiny_backend.forward_batches(batches, ("mean",), ((3,),)))
    assert max(peak) == 2
    peak.clear()
    tiny_backend.memory_cap.failed(padded_tokens=1000, rows=10)
    list(tiny_backend.forward_batches(batches, ("mean",), ((3,),)))
    assert max(peak) == 1


# -- item 5, 6 and 10: one arithmetic per dtype -----------------------------------------------------------------------


def test_process_wide_flag_is_restored_only_when_the_last_holder_leaves():
    state = {"v": "user"}
    flag = HeldFlag(lambda: state["v"], lambda v: state.update(v=v), "ours")
    seen = []
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with flag.held():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second():
        first_in.wait(5)
        with flag.held():
            second_in.set()
            first_out.wait(5)
            seen.append(state["v"])  # the first holder has left; this one still runs with the flag

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == ["ours"] and state["v"] == "user"


def _numerics_of(device, dtype):
    fake = types.SimpleNamespace(fast=None, device=device, torch_dtype=getattr(torch, dtype))
    return TorchBackend._numerics(fake)


def test_gpu_float32_turns_off_a_users_tf32_while_it_runs():
    matmul = torch.backends.cuda.matmul
    # the installed torch's own switch: fp32_precision from torch 2.9 on, allow_tf32 before (2.1, the floor)
    name, tf32, ieee = ("fp32_precision", "tf32", "ieee") if gpu._has_fp32_precision(matmul) else ("allow_tf32", True,
                                                                                                   False)
    before = getattr(matmul, name)
    setattr(matmul, name, tf32)
    try:
        with _numerics_of("cuda:0", "float32"):
            assert getattr(matmul, name) == ieee
        assert getattr(matmul, name) == tf32
    finally:
        setattr(matmul, name, before)


def test_gpu_half_precision_runs_autocast_with_one_attention_kernel():
    import warnings

    cuda = torch.backends.cuda
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU build warns that CUDA autocast is unavailable
        with _numerics_of("cuda:0", "bfloat16"):
            # torch 2.1 (the floor) has no cuDNN attention kernel, so no switch for it
            assert not cuda.flash_sdp_enabled() and not getattr(cuda, "cudnn_sdp_enabled", lambda: False)()
    assert cuda.flash_sdp_enabled()


class _OldCuBLAS:
    """torch.backends.cuda.matmul before torch 2.9 (no fp32_precision): 2.8 raises AttributeError for a name it does
    not know, 2.1 AssertionError."""

    def __init__(self, unknown):
        object.__setattr__(self, "state", {"allow_tf32": True})
        object.__setattr__(self, "unknown", unknown)

    def __getattr__(self, name):
        if name == "allow_tf32":
            return self.state[name]
        raise self.unknown("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            self.state[name] = value
            return
        raise self.unknown("Unknown attribute " + name)


@pytest.mark.parametrize("unknown", [AttributeError, AssertionError])
def test_the_gpu_flags_are_held_through_the_switches_an_older_torch_has(monkeypatch, unknown):
    """(found by a versions users bring hunt, 2026-11-26) torch>=2.1 is allowed, but every GPU job asked for
    torch.backends.cuda.matmul.fp32_precision (torch 2.9 on) and, in half precision, the cuDNN attention switch
    (not in torch 2.1): on torch 2.1-2.8 each failed at load with "Unknown attribute fp32_precision". An older
    torch's own switches are held instead: allow_tf32=False (the same IEEE float32 products), flash attention off."""
    matmul = _OldCuBLAS(unknown)
    flash = {"on": True}
    old_cuda = types.SimpleNamespace(matmul=matmul, flash_sdp_enabled=lambda: flash["on"],
                                     enable_flash_sdp=lambda v: flash.update(on=v))  # torch 2.1: no cudnn_sdp
    monkeypatch.setattr(torch.backends, "cuda", old_cuda)
    monkeypatch.setattr(gpu, "_HELD", {})
    with gpu.held_flag("ieee_float32").held():
        assert matmul.allow_tf32 is False
    assert matmul.allow_tf32 is True  # the user's setting back
    with gpu.held_flag("no_flash_attention").held():
        assert flash["on"] is False
    assert flash["on"] is True


def test_low_precision_keeps_float32_weights_norms_and_residuals(tiny_bert, tmp_path):
    """The transformers path (other architectures; every GPU) in bf16 is autocast over float32 weights, the design
    of the fast CPU path, not a whole-model conversion."""
    import json
    import shutil

    path = tmp_path / "tanh-gelu"
    shutil.copytree(tiny_bert, path)
    config = json.loads((path / "config.json").read_text())
    config["hidden_act"] = "gelu_new"  # not the fast path's architecture
    (path / "config.json").write_text(json.dumps(config))
    backend = get_backend(resolve_model(str(path)), "cpu", "bfloat16")
    assert backend.fast is None
    assert {p.dtype for p in backend.model.parameters()} == {torch.float32}
    hidden = {}

    def record(module, args, out):
        hidden.setdefault("norm", (args[0].dtype, out.dtype))

    handle = backend.model.encoder.layer[0].output.LayerNorm.register_forward_hook(record)
    try:
        kwargs = dict(model=str(path), pooling="cls+mean", layers=-1)
        bf16 = BertEmbedder(**kwargs, dtype="bfloat16").fit_transform(TINY_SENTENCES)
    finally:
        handle.remove()
    assert hidden["norm"] == (torch.float32, torch.float32)  # residual stream and norm in float32
    fp32 = BertEmbedder(**kwargs, dtype="float32").fit_transform(TINY_SENTENCES)
    cos = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    assert cos.min() >= 0.999 and not np.array_equal(fp32, bf16)


# -- item 7: finite features only ----------------------------------------------------------------------------------


def test_mean_pooling_ignores_overflowed_padding():
    from bertfeat.pooling import pool_tokens

    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [float("inf"), float("-inf")]]], dtype=torch.float16)
    mask = torch.tensor([[1, 1, 0]])
    np.testing.assert_array_equal(pool_tokens(hidden, mask, "mean").numpy(), [[2.0, 3.0]])
    np.testing.assert_array_equal(pool_tokens(hidden, mask, "max").numpy(), [[3.0, 4.0]])


def test_non_finite_vectors_are_refused_before_the_cache(monkeypatch):
    backend = CountingBackend()
    forward = backend.forward

    def overflowing(units, pooling, groups, *skip):
        out = forward(units, pooling, groups, *skip)
        out[[len(u) == 3 for u in units]] = np.nan  # the text "bad" overflowed
        return out

    backend.forward = overflowing
    stored = []
    cache = types.SimpleNamespace(
        lookup=lambda recipe, keys: (np.zeros(len(keys), bool), np.zeros((0, 4), np.float32), np.zeros(0, np.int64)),
        store=lambda *args: stored.append(args) or 0,
    )
    with pytest.raises(ValueError) as info:
        encode(["fine text", "ok", "bad", "bad"], make_recipe(dtype="float16"), lambda: backend, cache=cache)
    assert str(info.value) == (
        "row 2 (and 0 other distinct text(s)) got non-finite features (NaN or inf) in dtype='float16': the model's "
        "activations left that dtype's range. Nothing was cached. Pass dtype='bfloat16' (float32's range, on GPUs "
        "from Ampere on) or dtype='float32'.")
    # the count names the other distinct texts that overflowed, not their rows
    with pytest.raises(ValueError, match=r"^row 1 \(and 1 other distinct text\(s\)\) got non-finite"):
        encode(["fine text", "bad", "bad", "baz", "bad"], make_recipe(dtype="float16"), lambda: backend, cache=cache)
    assert stored == []


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_non_finite_vectors_in_float32s_range_are_not_told_to_pass_float32(dtype):
    """(found by a non-finite numbers hunt) NaN features in float32 (or bfloat16, float32's range) were refused with
    the float16 advice: "left that dtype's range ... Pass dtype='bfloat16' ... or dtype='float32'"."""
    backend = CountingBackend()
    forward = backend.forward
    backend.forward = lambda units, pooling, groups, *skip: np.where(
        np.array([len(u) == 3 for u in units])[:, None, None], np.inf, forward(units, pooling, groups, *skip))
    with pytest.raises(ValueError) as info:
        encode(["fine text", "bad"], make_recipe(dtype=dtype), lambda: backend)
    assert str(info.value) == (
        f"row 1 (and 0 other distinct text(s)) got non-finite features (NaN or inf) in dtype={dtype!r}: the model's "
        "activations left float32's range, which no other dtype widens: its forward pass is not finite for this "
        "text. Nothing was cached. Check the model's config.json against the one it was trained with (layer_norm_eps, hidden_act), or "
        "use another model.")


# -- item 9: sizing -------------------------------------------------------------------------------------------------


def test_gpu_budget_counts_batches_in_flight_and_the_processes_share():
    from transformers import BertConfig

    base = BertConfig()
    one = gpu_batch_tokens(2**33, base, 2, in_flight=1)
    two = gpu_batch_tokens(2**33, base, 2, in_flight=2)
    half_card = gpu_batch_tokens(2**33, base, 2, in_flight=2, share=0.5)
    assert one == 2 * two and two == 2 * half_card
    assert gpu_batch_tokens(2**40, base, 2) == gpu.MAX_GPU_BATCH_TOKENS


def test_usable_memory_is_free_plus_own_cache_within_the_share(monkeypatch):
    gib = 2**30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda dev: (30 * gib, 80 * gib))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda dev: 2 * gib)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda dev: 12 * gib)
    assert gpu.usable_bytes("cuda:0") == 40 * gib  # 30 free + 10 cached by this process
    assert gpu.usable_bytes("cuda:0", share=0.25) == 18 * gib  # a quarter of the card less what it holds


def test_gpu_budget_is_sampled_at_every_call(monkeypatch):
    from transformers import BertConfig

    free = iter([2**34, 2**31])
    monkeypatch.setattr(gpu, "usable_bytes", lambda device, share: next(free))
    fake = types.SimpleNamespace(device="cuda:0", dtype="bfloat16", config=BertConfig(), workers=2)
    budget = TorchBackend.default_batch_tokens.fget
    assert budget(fake) > budget(fake)


def test_memory_share_is_checked():
    with pytest.raises(ValueError, match="fraction in"):
        gpu.set_memory_share(1.5)



# -- on a real GPU (skipped without one; benchmarks/gpu_check.py runs these and more) -----------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_float32_is_exact_and_half_precision_keeps_float32_weights(tiny_bert):
    kwargs = dict(model=tiny_bert, pooling="cls+mean", layers=-1)
    cpu = BertEmbedder(**kwargs, device="cpu", dtype="float32").fit_transform(TINY_SENTENCES)
    cuda = BertEmbedder(**kwargs, device="cuda", dtype="float32").fit_transform(TINY_SENTENCES)
    np.testing.assert_allclose(cuda, cpu, atol=1e-5, rtol=0)
    half = BertEmbedder(**kwargs, device="cuda:0", dtype="float16").fit_transform(TINY_SENTENCES)
    backend = get_backend(resolve_model(tiny_bert), "cuda", "float16")
    assert backend.device == "cuda:0" and {p.dtype for p in backend.model.parameters()} == {torch.float32}
    assert np.isfinite(half).all()
