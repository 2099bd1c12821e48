"""The fused CPU forward pass (:mod:`bertfeat.fastbert`) read by value: the check each rung must pass, the reasons a
rung is passed over and the debug line naming them, which kernels this CPU tries first and why, and the pass itself
against transformers' own forward pass at 1e-5 for every way a batch can be asked for.

``test_ladder.py`` runs the ladder end to end (every fallback simulated); these pin each step's values, so that the
mutation tests (``scripts/mutants.sh fastbert``) have a test for each.
"""

from __future__ import annotations

import logging

import pytest

import bertfeat.fastbert as fastbert
from bertfeat import hardware
from bertfeat.fastbert import Ladder, _FastBert, build_ladder

torch = pytest.importorskip("torch")

PROBE = [[2, 10, 11, 12, 3], [2, 13, 14, 3]]


def transformers_model(path):
    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(path, attn_implementation="sdpa").eval()
    except ValueError:  # transformers 4.40 (the floor) has no SDPA for BERT
        return AutoModel.from_pretrained(path, attn_implementation="eager").eval()


def states(*layers, tokens=2, hidden=3):
    """``{k: (1, tokens, hidden)}`` hidden states from the rows given per layer."""
    return {k: torch.tensor([rows], dtype=torch.float32) for k, rows in enumerate(layers)} if layers else {}


# -- the check a rung must pass ------------------------------------------------------------------------------------


def test_float32_is_held_to_1e4_absolute_plus_1e4_relative_on_real_tokens_only():
    real = torch.tensor([[True, True, False]])
    want = {0: torch.tensor([[[0.0, 10.0], [0.0, 0.0], [5.0, 5.0]]])}
    ok = {0: torch.tensor([[[0.9e-4, 10.0 + 1.05e-3], [-0.9e-4, 0.0], [99.0, -99.0]]])}  # a pad token's garbage
    assert fastbert._disagreement(ok, want, [0], real, low=False) is None
    off_abs = {0: torch.tensor([[[1.5e-4, 10.0], [0.0, 0.0], [5.0, 5.0]]])}
    assert fastbert._disagreement(off_abs, want, [0], real, low=False) == "max abs diff 1.50e-04 with transformers at layer 0"
    off_rel = {0: torch.tensor([[[0.0, 10.0 + 1.25e-3], [0.0, 0.0], [5.0, 5.0]]])}  # 1e-4 + 1e-4 * 10 < 1.25e-3
    got = fastbert._disagreement(off_rel, want, [0], real, low=False)
    assert got.startswith("max abs diff 1.2") and got.endswith("e-03 with transformers at layer 0")


def test_the_first_layer_that_disagrees_is_named():
    real = torch.ones(1, 2, dtype=torch.bool)
    want = {k: torch.full((1, 2, 3), float(k)) for k in range(4)}
    got = {k: v.clone() for k, v in want.items()}
    got[2][0, 1, 0] += 0.5
    got[3][0, 0, 0] += 0.25
    assert fastbert._disagreement(got, want, [0, 1, 2, 3], real, low=False) == (
        "max abs diff 5.00e-01 with transformers at layer 2")
    assert fastbert._disagreement(got, want, [0, 1, 3], real, low=False) == (
        "max abs diff 2.50e-01 with transformers at layer 3")  # only the layers asked for are compared
    assert fastbert._disagreement(got, want, [0, 1], real, low=False) is None


@pytest.mark.parametrize("low", [False, True])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_value_at_a_real_token_is_named_with_its_layer(low, bad):
    real = torch.tensor([[True, False]])
    want = {k: torch.ones(1, 2, 3) for k in range(3)}
    got = {k: v.clone() for k, v in want.items()}
    got[1][0, 1, 0] = bad  # a pad token's: not read
    assert fastbert._disagreement(got, want, [0, 1, 2], real, low=low) is None
    got[2][0, 0, 2] = bad
    assert fastbert._disagreement(got, want, [0, 1, 2], real, low=low) == "non-finite values at layer 2"


def test_reduced_precision_is_held_to_a_cosine_of_099_per_token():
    real = torch.ones(1, 2, dtype=torch.bool)
    want = {0: torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])}
    # cosines 0.995 and 0.98: the second token fails, and the smallest cosine is named to 4 decimals
    c1, c2 = 0.995, 0.98
    got = {0: torch.tensor([[[c1, (1 - c1 ** 2) ** 0.5], [(1 - c2 ** 2) ** 0.5, c2]]]) * 3.0}  # scale is not read
    assert fastbert._disagreement(got, want, [0], real, low=True) == "cosine 0.9800 with transformers at layer 0"
    got[0][0, 1] = torch.tensor([(1 - 0.991 ** 2) ** 0.5, 0.991])
    assert fastbert._disagreement(got, want, [0], real, low=True) is None
    assert fastbert._disagreement(got, want, [0], real, low=False).startswith("max abs diff")  # float32 is not


def test_reduced_precision_is_held_to_a_step_error_of_01_of_what_each_layer_adds():
    """A layer adding [1, 0] to [10, 0]: got adding [1, 0.08] has a step error of 0.08 and passes, [1, 0.12] 0.12 and
    fails, though its hidden state's cosine is 0.99994."""
    real = torch.ones(1, 1, dtype=torch.bool)
    want = {0: torch.tensor([[[10.0, 0.0]]]), 1: torch.tensor([[[11.0, 0.0]]])}
    ok = {0: want[0].clone(), 1: torch.tensor([[[11.0, 0.08]]])}
    assert fastbert._disagreement(ok, want, [0, 1], real, low=True) is None
    off = {0: want[0].clone(), 1: torch.tensor([[[11.0, 0.12]]])}
    assert fastbert._disagreement(off, want, [0, 1], real, low=True) == (
        "relative error 0.120 in what layer 1 adds, against transformers")
    # the step is taken against the layer below only where got has it (layers asked for with a gap: no step)
    assert fastbert._disagreement({1: off[1]}, want, [1], real, low=True) is None
    # got's own layer below, not want's: a layer below that is off by what this one adds back
    shifted = {0: torch.tensor([[[10.0, 0.5]]]), 1: torch.tensor([[[11.0, 0.0]]])}
    assert fastbert._disagreement(shifted, want, [0, 1], real, low=True) == (
        "relative error 0.500 in what layer 1 adds, against transformers")


def test_the_step_error_is_relative_to_a_thousandth_of_the_hidden_state_at_least():
    state = torch.tensor([[1000.0, 0.0], [3.0, 4.0]])  # norms 1000 and 5
    want_step = torch.tensor([[0.0, 0.0], [0.0, 2.0]])  # the first layer adds nothing: floored at 1000 / 1000 = 1
    got_step = torch.tensor([[0.5, 0.0], [0.0, 2.1]])
    assert fastbert._step_error(got_step, want_step, state) == pytest.approx(0.5)  # 0.5 / 1, not 0.5 / 0
    got_step = torch.tensor([[0.0, 0.0], [0.0, 2.5]])
    assert fastbert._step_error(got_step, want_step, state) == pytest.approx(0.25)  # the largest token's
    zero = torch.zeros(1, 2)  # nothing anywhere: floored at 1e-12, finite
    assert fastbert._step_error(torch.tensor([[1e-13, 0.0]]), zero, zero) == pytest.approx(0.1)


# -- the rungs, the order, the reasons -----------------------------------------------------------------------------


def test_describe_names_the_rung_then_the_order_and_each_rung_passed_over():
    assert Ladder(None, "transformers-float32").describe() == "transformers-float32"
    assert Ladder(None, "torch-float32", order="AVX-512: oneDNN's fused kernels first").describe() == (
        "torch-float32 (AVX-512: oneDNN's fused kernels first)")
    passed = [("onednn-float32", "max abs diff 1.00e-02 with transformers at layer 1"), ("torch-float32", "TypeError: x")]
    assert Ladder(None, "transformers-float32", passed).describe() == (
        "transformers-float32 (passed over onednn-float32: max abs diff 1.00e-02 with transformers at layer 1; "
        "torch-float32: TypeError: x)")
    assert Ladder(None, "transformers-float32", passed, "why").describe() == (
        "transformers-float32 (why; passed over onednn-float32: max abs diff 1.00e-02 with transformers at layer 1; "
        "torch-float32: TypeError: x)")
    fresh = Ladder(None, "x")
    fresh.passed_over.append(("a", "b"))
    assert Ladder(None, "y").passed_over == []  # each ladder its own list


@pytest.mark.parametrize("machine, flags, want", [
    ("x86_64", ["avx2", "fma"], ("torch", "x86 without AVX-512: plain torch ops first")),
    ("AMD64", ["avx2"], ("torch", "x86 without AVX-512: plain torch ops first")),
    ("i686", [], ("torch", "x86 without AVX-512: plain torch ops first")),
    ("x86_64", ["avx2", "avx512f"], ("onednn", "AVX-512: oneDNN's fused kernels first")),
    ("aarch64", ["asimd"], ("onednn", "aarch64: oneDNN's fused kernels first")),
    ("ARM64", [], ("onednn", "arm64: oneDNN's fused kernels first")),
    ("", [], ("onednn", "this CPU: oneDNN's fused kernels first")),
])
def test_the_order_and_why_word_for_word(monkeypatch, machine, flags, want):
    monkeypatch.delenv(fastbert.KERNELS_ENV, raising=False)
    assert fastbert.preferred_kernels(flags, machine) == want
    # what is not given is read from this machine: its platform and its /proc/cpuinfo flags
    import platform

    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(hardware, "cpu_flags", lambda cpuinfo=None: flags)
    assert fastbert.preferred_kernels() == want


@pytest.mark.parametrize("machine", ["x86_64", "AMD64"])
def test_on_x86_whose_os_lists_no_instruction_sets_the_reason_says_so(monkeypatch, machine):
    """Windows and Intel Macs list none: plain torch ops first, and the reason does not claim the CPU lacks AVX-512."""
    import platform

    monkeypatch.delenv(fastbert.KERNELS_ENV, raising=False)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(hardware, "cpu_flags", lambda cpuinfo=None: [])
    monkeypatch.setattr(hardware, "flags_listed", lambda cpuinfo=None: False)
    assert fastbert.preferred_kernels() == ("torch", "x86 whose instruction sets this OS does not list: plain torch "
                                                     "ops first")
    # flags given are taken as listed
    assert fastbert.preferred_kernels([], machine) == ("torch", "x86 without AVX-512: plain torch ops first")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert fastbert.preferred_kernels() == ("onednn", "arm64: oneDNN's fused kernels first")


def test_the_setting_beats_the_cpu_and_blank_is_unset(monkeypatch):
    monkeypatch.setenv(fastbert.KERNELS_ENV, "\tTORCH\n")
    assert fastbert.preferred_kernels(["avx512f"], "x86_64") == ("torch", "BERTFEAT_CPU_KERNELS=torch")
    monkeypatch.setenv(fastbert.KERNELS_ENV, "onednn")
    assert fastbert.preferred_kernels(["avx2"], "x86_64") == ("onednn", "BERTFEAT_CPU_KERNELS=onednn")
    monkeypatch.setenv(fastbert.KERNELS_ENV, " \t")
    assert fastbert.preferred_kernels(["avx2"], "x86_64") == ("torch", "x86 without AVX-512: plain torch ops first")
    monkeypatch.setenv(fastbert.KERNELS_ENV, "mkl ")
    with pytest.raises(ValueError) as err:
        fastbert.preferred_kernels(["avx2"], "x86_64")
    assert str(err.value) == ("BERTFEAT_CPU_KERNELS='mkl ' is not valid: set it to 'onednn' (oneDNN's fused kernels "
                              "first) or 'torch' (plain torch ops first), or unset it for this CPU's default.")


def test_rungs_in_the_order_asked_with_onednn_only_where_it_exists():
    assert fastbert.rungs("float32", True) == [("onednn-float32", True), ("torch-float32", False)]
    assert fastbert.rungs("bfloat16", True, "onednn") == [("onednn-bfloat16", True), ("torch-bfloat16", False)]
    assert fastbert.rungs("bfloat16", True, "torch") == [("torch-bfloat16", False), ("onednn-bfloat16", True)]
    assert fastbert.rungs("float16", False, "onednn") == [("torch-float16", False)]


def test_onednn_is_available_exactly_where_torch_has_mkldnn_and_both_private_ops(monkeypatch):
    mkldnn = torch.ops.mkldnn
    has = (torch.backends.mkldnn.is_available() and hasattr(mkldnn, "_linear_pointwise")
           and hasattr(mkldnn, "_reorder_linear_weight"))
    assert fastbert._onednn_linear_available() is has
    if not has:
        pytest.skip("this torch build has no oneDNN linear ops: the cases below need them")

    class Without:
        def __init__(self, missing):
            self.missing = missing

        def __getattr__(self, name):
            if name == self.missing:
                raise AttributeError(name)
            return getattr(mkldnn, name)

    for missing in ("_linear_pointwise", "_reorder_linear_weight"):
        monkeypatch.setattr(torch.ops, "mkldnn", Without(missing))
        assert fastbert._onednn_linear_available() is False, missing
    monkeypatch.setattr(torch.ops, "mkldnn", mkldnn)
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    assert fastbert._onednn_linear_available() is False


# -- the ladder's reasons and its one debug line -------------------------------------------------------------------


def test_a_model_not_laid_out_as_its_family_takes_the_transformers_pass_saying_why(tiny_bert, caplog):
    model = transformers_model(tiny_bert)
    model.config.model_type = "electra"  # laid out as BERT, of a family the fused pass does not reimplement
    with pytest.raises(ValueError) as err:
        _FastBert(model, torch.float32, False)
    assert str(err.value) == "BertModel is not an encoder the fused CPU pass covers"
    with caplog.at_level(logging.DEBUG, logger="bertfeat"):
        for dtype, name in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
            ladder = build_ladder(_FastBert, model, dtype, PROBE)
            assert (ladder.fast, ladder.rung, ladder.order) == (None, f"transformers-{name}", "")
            assert ladder.describe() == f"transformers-{name} (passed over fast path: not a layout bertfeat reimplements)"
    assert [r.getMessage() for r in caplog.records if r.name == "bertfeat"] == [
        "bertfeat CPU forward pass: transformers-float32 (passed over fast path: not a layout bertfeat reimplements)",
        "bertfeat CPU forward pass: transformers-bfloat16 (passed over fast path: not a layout bertfeat reimplements)",
    ]


def test_a_rung_that_raises_is_passed_over_with_the_first_line_of_its_error_cut_at_160(tiny_bert, monkeypatch):
    first, order = fastbert.preferred_kernels()
    monkeypatch.setattr(fastbert, "_onednn_linear_available", lambda: False)
    long = "x" * 170
    errors = iter([RuntimeError(long + "\nsecond line"), NotImplementedError(""), TypeError("t"), AttributeError("a")])

    def fail(self, *args, **kwargs):
        raise next(errors)

    monkeypatch.setattr(_FastBert, "__call__", fail)
    model = transformers_model(tiny_bert)
    ladder = build_ladder(_FastBert, model, torch.float32, PROBE)
    assert (ladder.fast, ladder.rung, ladder.order) == (None, "transformers-float32", order)
    assert ladder.passed_over == [("onednn", "torch has no oneDNN linear ops here"),
                                  ("torch-float32", "RuntimeError: " + "x" * 160)]
    ladder = build_ladder(_FastBert, model, torch.float32, PROBE)
    assert ladder.passed_over[1] == ("torch-float32", "NotImplementedError: ")
    for kind in ("TypeError: t", "AttributeError: a"):
        assert build_ladder(_FastBert, model, torch.bfloat16, PROBE).passed_over[1] == ("torch-float32", kind)


def test_another_error_of_a_rung_is_raised_not_passed_over(tiny_bert, monkeypatch):
    def fail(self, *args, **kwargs):
        raise ValueError("a fault of bertfeat's, not the CPU's")

    monkeypatch.setattr(_FastBert, "__call__", fail)
    with pytest.raises(ValueError, match="a fault of bertfeat's"):
        build_ladder(_FastBert, transformers_model(tiny_bert), torch.float32, PROBE)


def test_each_rung_is_checked_on_the_probe_padded_at_every_layer(tiny_bert, monkeypatch):
    """The rung runs on the probe sequences padded into one batch (ids 0 past each end, mask 0 there), asked for every
    layer, and is compared with transformers at every layer on the real tokens; the rung that passes is named."""
    seen = []
    real_call = _FastBert.__call__

    def spy(self, ids, mask, layers):
        seen.append((ids.tolist(), mask.tolist(), list(layers), self.dtype, self.onednn))
        return real_call(self, ids, mask, layers)

    monkeypatch.setattr(_FastBert, "__call__", spy)
    monkeypatch.setenv(fastbert.KERNELS_ENV, "torch")
    model = transformers_model(tiny_bert)
    ladder = build_ladder(_FastBert, model, torch.bfloat16, PROBE)
    padded = [[2, 10, 11, 12, 3], [2, 13, 14, 3, 0]]
    assert seen[0] == (padded, [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]], [0, 1, 2, 3], torch.float32, False)
    assert seen[1][:4] == (padded, [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]], [0, 1, 2, 3], torch.bfloat16)
    assert (ladder.rung, ladder.fast.rung, ladder.fast.dtype, ladder.fast.low) == (
        "torch-bfloat16", "torch-bfloat16", torch.bfloat16, True)
    assert ladder.passed_over == [] and ladder.order == "BERTFEAT_CPU_KERNELS=torch"
    f32 = build_ladder(_FastBert, model, torch.float32, PROBE)
    assert (f32.fast.dtype, f32.fast.low, f32.fast.rung) == (torch.float32, False, "torch-float32")
    built = _FastBert.build_checked(model, torch.bfloat16, PROBE)  # the ladder's fast path, for the dtype asked
    assert (built.dtype, built.low, built.rung) == (torch.bfloat16, True, "torch-bfloat16")


def test_what_a_rung_leaves_at_padding_is_never_read(tiny_bert, monkeypatch):
    """(a mutation testing hunt, 2026-11-27, session 13: build_ladder 42, 88, the mask dropped) a rung is judged on
    the probe's real tokens only: one that leaves the padded positions unwritten (NaN there) is kept."""
    real_call = _FastBert.__call__

    def unwritten_padding(self, ids, mask, layers):
        pad = ~mask.bool()[..., None]
        return {k: v.masked_fill(pad, float("nan")) for k, v in real_call(self, ids, mask, layers).items()}

    monkeypatch.setattr(_FastBert, "__call__", unwritten_padding)
    monkeypatch.setenv(fastbert.KERNELS_ENV, "torch")
    model = transformers_model(tiny_bert)
    for dtype, rung in ((torch.float32, "torch-float32"), (torch.bfloat16, "torch-bfloat16")):
        ladder = build_ladder(_FastBert, model, dtype, PROBE)
        assert (ladder.rung, ladder.fast.rung, ladder.passed_over) == (rung, rung, [])


def test_a_reduced_precision_no_rung_reproduces_takes_the_transformers_pass_in_that_dtype(tiny_bert, monkeypatch):
    """(a mutation testing hunt, 2026-11-27, session 13: build_ladder 156-163, the ladder's last line, which no test
    reached) float32 reproduced but every bfloat16 rung passed over: the transformers pass in bfloat16, each rung
    passed over named with why, in the CPU's order. Each bfloat16 rung fails as it is built, before oneDNN packs a
    weight: on an AVX2-only CPU (Zen 1-3) the packing itself refuses bfloat16 with the CPU's own words, which a
    failure planted later, at the rung's run, never reaches."""
    real_init = _FastBert.__init__

    def no_bfloat16(self, model, dtype, use_onednn):
        if dtype == torch.bfloat16:
            raise RuntimeError("bf16 packing is not supported on this CPU")
        real_init(self, model, dtype, use_onednn)

    monkeypatch.setattr(_FastBert, "__init__", no_bfloat16)
    monkeypatch.setenv(fastbert.KERNELS_ENV, "torch")
    monkeypatch.setattr(fastbert, "_onednn_linear_available", lambda: True)
    ladder = build_ladder(_FastBert, transformers_model(tiny_bert), torch.bfloat16, PROBE)
    why = "RuntimeError: bf16 packing is not supported on this CPU"
    assert (ladder.fast, ladder.rung, ladder.order) == (None, "transformers-bfloat16", "BERTFEAT_CPU_KERNELS=torch")
    assert ladder.passed_over == [("torch-bfloat16", why), ("onednn-bfloat16", why)]
    assert ladder.describe() == (f"transformers-bfloat16 (BERTFEAT_CPU_KERNELS=torch; passed over torch-bfloat16: {why}; "
                                 f"onednn-bfloat16: {why})")


# -- the pass itself against transformers --------------------------------------------------------------------------


def _hidden(model, ids, mask):
    with torch.inference_mode():
        return model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states


@pytest.mark.parametrize("onednn", [False, True])
def test_only_the_layers_asked_for_come_back_each_equal_to_transformers(tiny_bert, onednn):
    if onednn and not fastbert._onednn_linear_available():
        pytest.skip("no oneDNN linear ops in this torch build")
    model = transformers_model(tiny_bert)
    ids = torch.tensor([[2, 10, 11, 12, 3], [2, 13, 14, 3, 0]])
    for mask in (torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]), torch.ones(2, 5, dtype=torch.long)):
        want = _hidden(model, ids, mask)
        fast = _FastBert(model, torch.float32, onednn)
        assert (fast.hidden, fast.heads, fast.eps, fast.low, fast.onednn) == (
            32, 4, model.config.layer_norm_eps, False, onednn)
        for layers in ([0], [2], [1, 3], [3, 0], [0, 1, 2, 3]):
            with torch.inference_mode():
                got = fast(ids, mask, layers)
            assert sorted(got) == sorted(layers)
            real = mask.bool()
            for k in layers:
                assert got[k].dtype == torch.float32 and got[k].shape == (2, 5, 32)
                assert (got[k][real] - want[k][real]).abs().max().item() <= 1e-5, (layers, k)


def test_reduced_precision_runs_its_products_in_that_dtype_and_keeps_float32_states(tiny_bert, monkeypatch):
    import torch.nn.functional as F

    model = transformers_model(tiny_bert)
    fast = _FastBert(model, torch.bfloat16, False)
    assert fast.low and fast.dtype == torch.bfloat16
    assert all(wb[0].dtype == torch.bfloat16 and wb[1].dtype == torch.bfloat16
               for layer in fast.layers for wb in (layer[0], layer[1], layer[3], layer[4]))
    assert all(layer[2][0].dtype == torch.float32 for layer in fast.layers)  # layer norms stay float32
    ids, mask = torch.tensor([[2, 10, 11, 3], [2, 12, 3, 0]]), torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    want = _hidden(model, ids, mask)
    dtypes = []
    sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda q, k, v, **kw: dtypes.append(q.dtype) or sdpa(q, k, v, **kw))
    with torch.inference_mode():
        got = fast(ids, mask, [0, 2])
    assert dtypes == [torch.bfloat16, torch.bfloat16]  # layers 1 and 2 run, layer 3 is skipped
    assert got[0].dtype == got[2].dtype == torch.float32
    real = mask.bool()
    assert (got[0][real] - want[0][real]).abs().max().item() <= 1e-6  # the embeddings are float32 math
    cos = torch.nn.functional.cosine_similarity(got[2][real], want[2][real], dim=-1)
    assert cos.min().item() > 0.999 and not torch.equal(got[2][real], want[2][real])


def test_each_rung_runs_the_ops_it_is_named_for(tiny_bert, monkeypatch):
    """The torch rungs call no oneDNN op (they are what runs where torch has none); the oneDNN float32 rung fuses
    GELU into the up projection and the residual add into the attention output and down projections."""
    model = transformers_model(tiny_bert)
    ids, mask = torch.tensor([[2, 10, 11, 12, 3], [2, 13, 3, 0, 0]]), torch.tensor([[1] * 5, [1, 1, 1, 0, 0]])
    want = _hidden(model, ids, mask)
    real = mask.bool()
    onednn = fastbert._onednn_linear_available()
    mkldnn = torch.ops.mkldnn

    class NoOneDNN:
        def __getattr__(self, name):
            raise AttributeError(f"this torch has no oneDNN op {name}")

    monkeypatch.setattr(torch.ops, "mkldnn", NoOneDNN())
    with torch.inference_mode():
        got = _FastBert(model, torch.float32, False)(ids, mask, [3])
        low = _FastBert(model, torch.bfloat16, False)(ids, mask, [3])
    assert (got[3][real] - want[3][real]).abs().max().item() <= 1e-5
    assert torch.nn.functional.cosine_similarity(low[3][real], want[3][real], dim=-1).min().item() > 0.999
    monkeypatch.setattr(torch.ops, "mkldnn", mkldnn)
    if not onednn:
        return
    calls = []
    linear = mkldnn._linear_pointwise

    class Spy:
        def __call__(self, x, w, b, attr, scalars, algorithm):
            calls.append(attr)
            return linear(x, w, b, attr, scalars, algorithm)

        def binary(self, x, other, w, b, attr):
            calls.append("binary " + attr)
            return linear.binary(x, other, w, b, attr)

    monkeypatch.setattr(mkldnn, "_linear_pointwise", Spy())
    with torch.inference_mode():
        got = _FastBert(model, torch.float32, True)(ids, mask, [3])
    assert calls == ["none", "binary add", "gelu", "binary add"] * 3  # per layer: QKV, out + x, up + GELU, down + x
    assert (got[3][real] - want[3][real]).abs().max().item() <= 1e-5


def test_mpnets_relative_position_bias_is_given_to_attention_in_the_dtype_it_runs_in(tmp_path, monkeypatch):
    """torch documents attention's float mask as of the query's type (a release may refuse another), so a bfloat16
    MPNet pass hands it the bias, padded keys at -inf, in bfloat16; float32 keeps it float32."""
    import torch.nn.functional as F

    from tests.conftest import TINY_SENTENCES
    from tests.tiny_encoders import build_tiny_encoder

    model = transformers_model(build_tiny_encoder(tmp_path, "mpnet", corpus=TINY_SENTENCES))
    ids, mask = torch.tensor([[0, 10, 11, 12, 2], [0, 13, 2, 1, 1]]), torch.tensor([[1] * 5, [1, 1, 1, 0, 0]])
    masks = []
    sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention",
                        lambda q, k, v, attn_mask=None, **kw: masks.append(attn_mask) or sdpa(q, k, v, attn_mask=attn_mask, **kw))
    with torch.inference_mode():
        for dtype in (torch.float32, torch.bfloat16):
            masks.clear()
            _FastBert(model, dtype, False)(ids, mask, [1])
            [bias] = masks
            assert bias.dtype == dtype and bias.shape == (2, 4, 5, 5)  # (batch, heads, queries, keys)
            assert torch.isinf(bias[1, :, :, 3:]).all() and torch.isfinite(bias[1, :, :, :3]).all()
            assert torch.isfinite(bias[0]).all()
