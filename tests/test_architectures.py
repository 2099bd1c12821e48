"""The compatibility matrix: every encoder family gives what a plain transformers forward pass gives.

For each family a tiny random-weight model (tests/tiny_encoders.py) goes through ``BertEmbedder(device="cpu")``
and is compared, CLS and mean of several layers, truncated and chunked, with the transformers model run one text
(or one window) at a time on the tokenizer's own special tokens. The families bertfeat reimplements on CPU
(:mod:`bertfeat.fastbert`) must take that fused path; the others must keep the transformers one.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from bertfeat import BertEmbedder
from bertfeat.backend import _FastBert, clear_backends, get_backend
import bertfeat.models as models
from bertfeat.models import resolve_model
from tests.conftest import TINY_SENTENCES
from tests.tiny_encoders import FAMILIES, HIDDEN, PADDING_SEEN, build_tiny_encoder

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

MAX_LENGTH = 16  # short enough that the long texts below are truncated or cut into several windows
LAYERS = [0, 1, 3]
TEXTS = TINY_SENTENCES[:4] + [
    "!",  # one token: the shortest text there is (a lone accent, which WordPiece drops, is blank: missing)
    "cat",
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of "
    "a wife.",
    "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to unite some "
    "of the best blessings of existence.",
    "the lazy dog sat in the park on the mat " * 3,
]


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """model_type -> path of its tiny model, built on first use."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    built: dict[str, str] = {}

    def get(model_type: str) -> str:
        if model_type not in built:
            built[model_type] = build_tiny_encoder(tmp_path_factory.mktemp(model_type), model_type, corpus=TEXTS)
        return built[model_type]

    yield get
    clear_backends()
    reference_model.cache_clear()


@functools.lru_cache(maxsize=None)
def reference_model(path):
    """The tokenizer and the transformers model with its plain (eager) attention."""
    from transformers import AutoModel, AutoTokenizer

    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path, attn_implementation="eager").eval()


def reference_features(path, texts, layers, max_length, long_text="truncate", stride=0):
    """CLS and mean of ``layers`` (pooling-major) from the transformers model, one sequence at a time.

    Truncation is the tokenizer's own; a chunked text is cut into windows of ``max_length - 2`` content tokens
    sharing ``stride`` tokens, each wrapped in the tokenizer's CLS/SEP (or <s>/</s>), and the windows' vectors are
    averaged weighted by their token counts.
    """
    tok, model = reference_model(path)

    def pooled(ids):
        ids_t = torch.tensor([ids])
        out = model(input_ids=ids_t, attention_mask=torch.ones_like(ids_t), output_hidden_states=True)
        # the last layer is the model's output (ModernBERT's after its final norm, which transformers 4.x leaves out
        # of its last hidden state), as bertfeat reads it
        hidden = [*out.hidden_states[:-1], out.last_hidden_state]
        return torch.cat([hidden[k][0, 0] for k in layers] + [hidden[k][0].mean(dim=0) for k in layers]).double()

    rows = []
    with torch.inference_mode():
        for text in texts:
            if long_text == "truncate":
                sequences = [tok(text, truncation=True, max_length=max_length)["input_ids"]]
            else:
                content, window = tok(text, add_special_tokens=False)["input_ids"], max_length - 2
                starts = [0]
                while starts[-1] + window < len(content):
                    starts.append(starts[-1] + window - stride)
                sequences = [[tok.cls_token_id] + content[s:s + window] + [tok.sep_token_id] for s in starts]
            weights = torch.tensor([len(s) for s in sequences], dtype=torch.float64)
            vectors = torch.stack([pooled(s) for s in sequences])
            rows.append(((vectors * weights[:, None]).sum(0) / weights.sum()).float().numpy())
    return np.stack(rows)


@pytest.mark.parametrize("model_type", list(FAMILIES))
def test_family_matches_transformers(tiny_encoder, model_type):
    path = tiny_encoder(model_type)
    kwargs = dict(model=path, pooling="cls+mean", layers=LAYERS, layer_agg="concat", max_length=MAX_LENGTH,
                  device="cpu")
    with pytest.warns(UserWarning):  # the long texts are truncated, and bertfeat says so
        truncated = BertEmbedder(**kwargs).fit_transform(TEXTS)
    np.testing.assert_allclose(truncated, reference_features(path, TEXTS, LAYERS, MAX_LENGTH), atol=1e-5, rtol=0)
    chunked = BertEmbedder(**kwargs, long_text="chunk", stride=3).fit_transform(TEXTS)
    np.testing.assert_allclose(chunked, reference_features(path, TEXTS, LAYERS, MAX_LENGTH, "chunk", 3),
                               atol=1e-5, rtol=0)
    assert not np.allclose(truncated, chunked)  # the long texts really were windowed


@pytest.mark.parametrize("model_type", list(FAMILIES))
def test_family_takes_the_expected_cpu_path(tiny_encoder, model_type):
    backend = get_backend(resolve_model(tiny_encoder(model_type)), "cpu", "float32")
    assert (backend.fast is not None) == FAMILIES[model_type][1]
    assert (backend.model is None) == FAMILIES[model_type][1]  # the fused path frees the transformers module
    # found at load, by padding the probe: only where padding changes the real tokens is a batch split by length
    assert backend.one_length_per_pass == (model_type in PADDING_SEEN)


def test_a_model_run_one_length_per_pass_says_so_once_at_load(tiny_encoder, caplog):
    """Splitting batches by length is slower: the log says which model and why, when it loads, and not otherwise."""
    import logging

    from bertfeat.backend import TorchBackend

    with caplog.at_level(logging.WARNING, logger="bertfeat"):
        TorchBackend(resolve_model(tiny_encoder("bert")), "cpu", "float32")
        assert not [r for r in caplog.records if "pass of its own" in r.getMessage()]
        TorchBackend(resolve_model(tiny_encoder(sorted(PADDING_SEEN)[0])), "cpu", "float32")
    said = [r.getMessage() for r in caplog.records if "pass of its own" in r.getMessage()]
    assert len(said) == 1 and sorted(PADDING_SEEN)[0] in said[0]


FUSED = [t for t, (_, fused) in FAMILIES.items() if fused]


def padded_batch(tok, texts):
    enc = tok(texts, padding=True, return_tensors="pt", return_token_type_ids=False)
    return enc["input_ids"], enc["attention_mask"]


@pytest.mark.parametrize("model_type", FUSED)
def test_fused_pass_matches_every_hidden_state(tiny_encoder, model_type):
    """Every layer, every real token, padded batch: within 1e-5 of transformers, with and without oneDNN."""
    from bertfeat.fastbert import _onednn_linear_available

    tok, model = reference_model(tiny_encoder(model_type))
    ids, mask = padded_batch(tok, [TEXTS[6], TEXTS[0], "cat"])
    # a pad id inside a text: RoBERTa-style models give it the padding position and do not count it
    ids[1, 2] = tok.pad_token_id
    layers = list(range(model.config.num_hidden_layers + 1))
    with torch.inference_mode():
        want = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        for onednn in (True, False) if _onednn_linear_available() else (False,):
            got = _FastBert(model, torch.float32, onednn)(ids, mask, layers)
            real = mask.bool()
            for k in layers:
                assert (got[k][real] - want[k][real]).abs().max().item() <= 1e-5, (model_type, onednn, k)


@pytest.mark.parametrize("model_type", FUSED)
def test_fused_families_run_in_bfloat16(tiny_encoder, model_type):
    """The low-precision arrangement (plain torch ops: the oneDNN bf16 kernels need AVX512 or AMX) of each family
    stays within a cosine of 0.999 of float32, and really runs in bfloat16."""
    tok, model = reference_model(tiny_encoder(model_type))
    ids, mask = padded_batch(tok, TEXTS[:6])
    with torch.inference_mode():
        fp32 = _FastBert(model, torch.float32, False)(ids, mask, [1, 3])
        bf16 = _FastBert(model, torch.bfloat16, False)(ids, mask, [1, 3])
    real = mask.bool()
    for k in (1, 3):
        a, b = fp32[k][real], bf16[k][real]
        assert b.dtype == torch.float32 and not torch.equal(a, b)
        assert torch.nn.functional.cosine_similarity(a, b, dim=-1).min().item() >= 0.999


@pytest.mark.parametrize("model_type", list(FAMILIES) + ["convbert+projection", "deberta-v2+projection"])
def test_half_precision_keeps_every_layers_state_in_float32_on_every_path(tiny_encoder, model_type, monkeypatch,
                                                                          tmp_path):
    """bfloat16 means products and attention in bfloat16, the residual stream and the layer norms in float32, on the
    fused pass and the transformers one alike (docs/performance.md), as CUDA's autocast runs a GPU. CPU autocast
    runs a layer norm in its input's dtype, so a model whose embeddings a product projects to the hidden size
    (ALBERT and ELECTRA here; ConvBERT and DeBERTa-v2 given an ``embedding_size``: "+projection") kept every layer's
    state in bfloat16: each rounded to bfloat16, a text's vector moving by a bfloat16 step with the texts batched
    beside it (0.19 on a 12-layer ALBERT, past the documented 2.2e-2), and not the arithmetic a GPU runs for the
    same recipe and cache."""
    import bertfeat.pooling as pooling

    family, projected = model_type.split("+")[0], model_type.endswith("+projection")
    path = (build_tiny_encoder(tmp_path, family, corpus=TEXTS, embedding_size=HIDDEN // 2) if projected
            else tiny_encoder(model_type))

    states = {}
    real = pooling.pool_blocks

    def spy(hidden, mask, how, groups, *skip):
        states.update({layer: hidden[layer].dtype for group in groups for layer in group})
        return real(hidden, mask, how, groups, *skip)

    monkeypatch.setattr(pooling, "pool_blocks", spy)
    X = BertEmbedder(model=path, pooling="cls", layers=[1, 2, 3], layer_agg="concat", max_length=MAX_LENGTH,
                     dtype="bfloat16", device="cpu").fit_transform(TEXTS[:6])
    if not FAMILIES[family][1]:  # the fused pass's states are float32 by construction; it never pools here
        assert states == {1: torch.float32, 2: torch.float32, 3: torch.float32}
    # a CLS vector is a state's first row as it is: rounded to bfloat16, every value would be a bfloat16 value
    rounded = torch.from_numpy(X).to(torch.bfloat16).float().numpy()
    assert (rounded != X).mean() > 0.5


def test_supports_only_what_it_reimplements():
    from transformers import AutoConfig, DistilBertConfig, MPNetConfig, RobertaConfig

    assert _FastBert.supports(RobertaConfig())
    assert _FastBert.supports(AutoConfig.for_model("xlm-roberta"))
    assert _FastBert.supports(DistilBertConfig())
    assert _FastBert.supports(MPNetConfig())
    assert not _FastBert.supports(RobertaConfig(hidden_act="relu"))
    assert not _FastBert.supports(DistilBertConfig(activation="relu"))
    assert not _FastBert.supports(RobertaConfig(position_embedding_type="relative_key"))
    assert not _FastBert.supports(RobertaConfig(is_decoder=True))
    assert not _FastBert.supports(AutoConfig.for_model("roberta-prelayernorm"))  # pre-norm: other math
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    for model_type in ("electra", "albert", "deberta-v2", "modernbert"):
        if model_type in CONFIG_MAPPING:  # ModernBERT: transformers 4.48 on
            assert not _FastBert.supports(AutoConfig.for_model(model_type))


@pytest.mark.parametrize("model_type", ["roberta", "mpnet"])
def test_length_limit_leaves_room_for_the_position_offset(tiny_encoder, model_type, tmp_path):
    """Without a tokenizer limit, the model's own limit is its positions minus those reserved below padding_idx + 1
    (MPNet's padding_idx is fixed at 1): the longest window must not index past the position table."""
    import json
    import shutil

    path = tmp_path / model_type
    shutil.copytree(tiny_encoder(model_type), path)
    config = json.loads((path / "tokenizer_config.json").read_text())
    config.pop("model_max_length", None)
    (path / "tokenizer_config.json").write_text(json.dumps(config))
    assert resolve_model(str(path)).max_length == json.loads((path / "config.json").read_text())[
        "max_position_embeddings"] - 2
    X = BertEmbedder(model=str(path), pooling="mean", long_text="chunk").fit_transform(["the cat sat on the mat " * 20])
    assert X.shape == (1, 32) and np.isfinite(X).all()


@pytest.mark.parametrize("model_type", ["bert", "roberta", "distilbert", "electra"])
def test_a_model_with_fewer_positions_than_the_load_checks_probe_loads_and_matches(model_type, tmp_path):
    """The load-time checks run probe sentences through the model (the fused pass against transformers, a reduced
    precision's trial run); on a tiny vocabulary they take about 40 tokens. A model with 16 positions must load in
    either dtype and give transformers' vectors, never fail inside transformers' embeddings."""
    import warnings

    positions = 16 + (2 if model_type == "roberta" else 0)  # RoBERTa's positions start at padding_idx + 1
    path = build_tiny_encoder(tmp_path / model_type, model_type, corpus=TEXTS, max_position_embeddings=positions)
    spec = resolve_model(path)
    assert spec.max_length == 16
    tok = reference_model(path)[0]
    probes = get_backend(spec, "cpu", "float32")._probe_ids()
    assert len(tok("a somewhat longer probe sentence, with punctuation and numbers 42")["input_ids"]) > 16
    assert max(map(len, probes)) == 16  # the probe really was cut to the model's length
    assert (get_backend(spec, "cpu", "float32").fast is not None) == FAMILIES[model_type][1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a slower dtype on this CPU is said so; here only loading matters
        assert get_backend(spec, "cpu", "bfloat16").rung.endswith("bfloat16")
    X = BertEmbedder(model=path, pooling="cls+mean", layers=LAYERS, layer_agg="concat", long_text="chunk", stride=3,
                     device="cpu").fit_transform(TEXTS)
    np.testing.assert_allclose(X, reference_features(path, TEXTS, LAYERS, 16, "chunk", 3), atol=1e-5, rtol=0)
    reference_model.cache_clear()


# RoBERTa-style embeddings in other families: positions from padding_idx + 1, so 2 fewer usable than the table holds
OFFSET_FAMILIES = {
    "xmod": dict(languages=["en_XX"], default_language="en_XX"),
    "esm": dict(position_embedding_type="absolute", token_dropout=False, mask_token_id=4),
    "luke": dict(entity_vocab_size=8, entity_emb_size=16),
    "lilt": dict(hidden_size=36, channel_shrink_ratio=1),  # its layout embeddings take a sixth of the hidden size
    "markuplm": {},
}


@pytest.mark.parametrize("model_type", list(OFFSET_FAMILIES))
def test_other_families_counting_positions_from_padding_idx_leave_room_for_it(model_type, tmp_path):
    """Without a tokenizer limit, a text of max_position_embeddings tokens indexed past the position table of these
    families ("index out of range in self" mid-transform): their limit is the table less padding_idx + 1."""
    import json

    from transformers import AutoConfig, AutoModel

    from tests.tiny_encoders import HEADS, HIDDEN, INTERMEDIATE, build_tokenizer

    tok = build_tokenizer(tmp_path, "bpe", TEXTS + TINY_SENTENCES, 64)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    config.pop("model_max_length", None)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    torch.manual_seed(0)
    kwargs = dict(vocab_size=len(tok), hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS,
                  intermediate_size=INTERMEDIATE, max_position_embeddings=40, pad_token_id=tok.pad_token_id)
    model = AutoModel.from_config(AutoConfig.for_model(model_type, **{**kwargs, **OFFSET_FAMILIES[model_type]}))
    model.save_pretrained(str(tmp_path), safe_serialization=True)
    assert resolve_model(str(tmp_path)).max_length == 40 - (tok.pad_token_id + 1)
    long_text = "the cat sat on the mat " * 20
    X = BertEmbedder(model=str(tmp_path), pooling="mean", long_text="chunk").fit_transform([long_text])
    assert X.shape[0] == 1 and np.isfinite(X).all()


def test_big_bird_runs_full_attention_so_a_long_text_neither_fails_nor_depends_on_its_batch(tiny_encoder):
    """BigBird's block-sparse attention (from 36 tokens on here, 704 in real checkpoints) pads a batch to a multiple
    of its block and sees that padding, and its hidden states below the last keep the padded length: every recipe
    with more than the last layer failed on a long text (`The size of tensor a (41) must match the size of tensor b
    (44)`). transformers itself takes full attention, for good, at the first input too short for blocks; bertfeat
    takes it at load, so every text gets the vector full attention gives it alone."""
    path = tiny_encoder("big_bird")
    backend = get_backend(resolve_model(path), "cpu", "float32")
    assert backend._load_model(torch.float32).attention_type == "original_full"  # at load, before any input
    texts = [" ".join(TEXTS[6:]), TEXTS[7], "cat", TEXTS[6]]
    reference_model(path)[1].set_attention_type("original_full")
    with pytest.warns(UserWarning, match="1 of 4 texts were longer than max_length=60"):  # the first text alone
        X = BertEmbedder(model=path, pooling="cls+mean", layers=LAYERS, layer_agg="concat", max_length=60,
                         device="cpu").fit_transform(texts)
    np.testing.assert_allclose(X, reference_features(path, texts, LAYERS, 60), atol=1e-5, rtol=0)
    reference_model.cache_clear()


def test_a_model_with_other_than_one_hidden_state_per_layer_is_refused(tmp_path):
    """bertfeat reads hidden state k as layer k. An ALBERT with two layers in each group (inner_group_num=2) gives
    one per inner layer, 2 x 3 + 1 here: layers=[-1] was the last of them and layers=[-1, 0] read the fourth as the
    last layer, 1.19 apart, silently."""
    from bertfeat import ModelNotAvailableError

    path = build_tiny_encoder(tmp_path / "albert", "albert", corpus=TEXTS, inner_group_num=2)
    tok, model = reference_model(path)
    with torch.inference_mode():
        states = model(input_ids=torch.tensor([tok(TEXTS[0])["input_ids"]]), output_hidden_states=True).hidden_states
    if len(states) == 4:
        import transformers

        pytest.skip(f"transformers {transformers.__version__} gives this ALBERT one hidden state per layer: the load "
                    "has nothing to refuse")
    embedder = BertEmbedder(model=path, pooling="mean", layers=[-1, 0], layer_agg="concat", device="cpu")
    with pytest.raises(ModelNotAvailableError, match=r"gives 7 hidden states for num_hidden_layers=3 \(4 expected"):
        with pytest.MonkeyPatch.context() as mp:  # the check at load is the net for models the config does not tell
            mp.setattr(models, "_check_one_state_per_layer", lambda name, config: None)
            embedder.fit_transform(TEXTS[:2])


@pytest.mark.parametrize("model_type", ["bert", "electra"])  # the fused CPU pass, and transformers' own
def test_a_config_that_asks_for_tuples_gives_the_same_vectors(tmp_path, model_type):
    # "return_dict": false in config.json (a model saved for TorchScript or ONNX export): transformers' forward pass
    # then returns tuples, and every fit failed with "AttributeError: 'tuple' object has no attribute
    # 'hidden_states'", where sentence-transformers embeds the model as any other
    import json
    import shutil

    path = build_tiny_encoder(tmp_path / model_type, model_type, corpus=TEXTS)
    tuples = shutil.copytree(path, tmp_path / f"{model_type}-tuples")
    config = json.loads((tuples / "config.json").read_text())
    (tuples / "config.json").write_text(json.dumps({**config, "return_dict": False}))
    for layers in (-1, [0, -1]):
        want = BertEmbedder(path, pooling="mean", layers=layers, dtype="float32").fit_transform(TEXTS)
        got = BertEmbedder(str(tuples), pooling="mean", layers=layers, dtype="float32").fit_transform(TEXTS)
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)


@pytest.mark.parametrize("model_type", ["bert", "electra"])  # the fused CPU pass, and transformers' own
def test_a_config_that_asks_for_attentions_gives_the_same_vectors_without_computing_them(tmp_path, model_type):
    # "output_attentions": true in config.json (a model saved after a look at its attention maps): bertfeat asks
    # transformers for its SDPA kernel, which transformers 5 then refuses to configure ("The `output_attentions`
    # attribute is not supported when using the `attn_implementation` set to sdpa"), so every fit failed with
    # huggingface_hub's StrictDataclassClassValidationError, where transformers loads it as asked; transformers 4 ran
    # it eagerly, keeping every layer's attention maps (batch x heads x tokens^2). bertfeat reads no attention map.
    import json
    import shutil

    from bertfeat.backend import loaded_backend
    from bertfeat.models import resolve_model

    path = build_tiny_encoder(tmp_path / model_type, model_type, corpus=TEXTS)
    looks = shutil.copytree(path, tmp_path / f"{model_type}-attentions")
    config = json.loads((looks / "config.json").read_text())
    (looks / "config.json").write_text(json.dumps({**config, "output_attentions": True, "output_hidden_states": True}))
    for layers in (-1, [0, -1]):
        want = BertEmbedder(path, pooling="mean", layers=layers, dtype="float32").fit_transform(TEXTS)
        got = BertEmbedder(str(looks), pooling="mean", layers=layers, dtype="float32").fit_transform(TEXTS)
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    backend = loaded_backend(resolve_model(str(looks)), "cpu", "float32")
    if backend.fast is None:  # transformers' own pass (the fused one computes no attention map to keep)
        assert backend.model.config.output_attentions is False


def test_an_albert_with_several_layers_per_group_is_refused_from_its_config_so_cached_runs_refuse_too(tmp_path):
    """The ALBERT above was refused at load only, and a run whose every text is cached never loads the model: a
    cache filled by an older bertfeat (which read state k as layer k) still answered, silently. The config, read
    for the fingerprint anyway, now refuses it at fit, before any cache is read."""
    from bertfeat import ModelNotAvailableError
    from bertfeat.backend import TorchBackend

    path = build_tiny_encoder(tmp_path / "albert", "albert", corpus=TEXTS, inner_group_num=2)
    cache = tmp_path / "cache"
    with pytest.MonkeyPatch.context() as mp:  # an older bertfeat, with neither check, fills the cache
        mp.setattr(models, "_check_one_state_per_layer", lambda name, config: None)
        mp.setattr(TorchBackend, "_check_model_runs", lambda self: None)
        BertEmbedder(model=path, pooling="mean", cache_dir=cache, device="cpu").fit_transform(TEXTS[:2])
    models._describe_cached.cache_clear()
    message = (r"is an ALBERT with inner_group_num=2 in its config.json: transformers gives one hidden state per "
               r"inner layer \(7 for num_hidden_layers=3\)")
    with pytest.raises(ModelNotAvailableError, match=message):
        BertEmbedder(model=path, pooling="mean", cache_dir=cache, device="cpu").fit(TEXTS[:2])
    with pytest.raises(ModelNotAvailableError, match=message):
        models.resolve_model(path)  # bertfeat info, the CLI and R resolve the model through it too


def test_the_last_layer_is_the_models_output_whatever_else_is_asked_for(tmp_path):
    """A model may give its last hidden state before a final norm (ModernBERT with tie_last_hidden_states=False):
    layers=[-1] read last_hidden_state and layers=[-1, 0] the hidden state before the norm, 0.18 apart."""
    path = build_tiny_encoder(tmp_path / "modernbert", "modernbert", corpus=TEXTS, tie_last_hidden_states=False)
    tok, model = reference_model(path)
    with torch.inference_mode():
        ids = torch.tensor([tok(TEXTS[0])["input_ids"]])
        out = model(input_ids=ids, output_hidden_states=True)
    if torch.allclose(out.hidden_states[-1], out.last_hidden_state, atol=1e-3):  # transformers 5.17, for one
        pytest.skip(f"transformers {transformers.__version__} gives ModernBERT's normed output as its last hidden "
                    "state: the case does not arise")
    want = out.last_hidden_state[0].mean(dim=0).numpy()
    alone = BertEmbedder(model=path, pooling="mean", layers=[-1], device="cpu").fit_transform(TEXTS[:1])
    both = BertEmbedder(model=path, pooling="mean", layers=[-1, 0], layer_agg="concat",
                        device="cpu").fit_transform(TEXTS[:1])
    np.testing.assert_allclose(alone[0], want, atol=1e-5, rtol=0)
    np.testing.assert_allclose(both[0, :HIDDEN], want, atol=1e-5, rtol=0)
    reference_model.cache_clear()


@pytest.mark.parametrize("model_type, config", [
    ("mpnet", dict(relative_attention_num_buckets=16)),  # transformers looks up 32 buckets whatever this says
    ("bert", dict(type_vocab_size=0)),  # BERT adds token type 0's embedding to every token
    ("roberta", dict(pad_token_id=None)),  # RoBERTa counts positions from pad_token_id
    ("electra", dict(type_vocab_size=0)),
])
def test_a_config_transformers_cannot_run_is_refused_at_load_saying_so(model_type, config, tmp_path):
    """Each failed with a bare IndexError, TypeError or RuntimeError from inside the model (or bertfeat's own
    reading of its weights) at the first transform."""
    from bertfeat import ModelNotAvailableError

    path = build_tiny_encoder(tmp_path / model_type, model_type, corpus=TEXTS, **config)
    with pytest.raises(ModelNotAvailableError, match=r"transformers' forward pass of this model fails on a short "
                                                     r"probe text \((IndexError|RuntimeError|TypeError): ") as refused:
        BertEmbedder(model=path, device="cpu").fit_transform(["a cat"])
    assert str(refused.value) == _probe_failure(path, refused.value.__cause__)


def _probe_failure(name, cause) -> str:
    """The load's refusal of a model whose forward pass fails on its probe text with ``cause``, word for word."""
    first = str(cause).splitlines()[0][:200] if str(cause) else ""
    return (f"model={name!r}: transformers' forward pass of this model fails on a short probe text "
            f"({type(cause).__name__}: {first}), so no text can be embedded with it: its config.json asks for what "
            "transformers cannot run with these weights (check it against the config the model was trained with), "
            "or the model needs more than text as input.")


class _ProbedModel:
    """What :meth:`LoadChecks._check_model_runs` reads, with a model that raises ``raised`` or gives hidden states of
    the ``lengths`` given (the embeddings' and each layer's, then the last layer's output)."""

    device, config = "cpu", type("Config", (), {"model_type": "funnel"})()

    def __init__(self, raised=None, lengths=(6, 6, 6, 6), last=6, layers=3):
        from types import SimpleNamespace

        from bertfeat.load_checks import LoadChecks

        self.spec = SimpleNamespace(name="org/model", num_layers=layers)
        self.raised, self.lengths, self.last, self.calls = raised, lengths, last, []
        self.check = LoadChecks._check_model_runs.__get__(self)

    def _probe_ids(self):
        return [[1, 7, 8, 9, 10, 2], [1, 7, 8, 9, 10, 11, 12, 2]]

    def model(self, input_ids, attention_mask, output_hidden_states):
        from types import SimpleNamespace

        self.calls.append((input_ids.tolist(), attention_mask.tolist(), output_hidden_states))
        if self.raised is not None:
            raise self.raised
        return SimpleNamespace(hidden_states=tuple(torch.zeros(1, n, 4) for n in self.lengths),
                               last_hidden_state=torch.zeros(1, self.last, 4))


@pytest.mark.parametrize("raised", [
    ValueError("a value this config holds that transformers refuses\nand a second line"),
    IndexError("index out of range in self " + "x" * 300),
    TypeError(),
    RuntimeError("mat1 and mat2 shapes cannot be multiplied (6x32 and 16x32)"),
])
def test_a_forward_pass_that_fails_on_the_probe_is_refused_naming_its_errors_first_line(raised):
    """(a mutation testing hunt, 2026-11-27, session 16) The load's refusal of a model transformers cannot run, word
    for word, for each error a config makes transformers raise: its first line, cut at 200 characters, or nothing
    for an error without words; the short probe runs unpadded, all of it attended, every hidden state asked for.
    Out of memory is the machine's state, not the model's fault, and an error no config causes is no refusal of
    the model: each is raised as it is."""
    from bertfeat import ModelNotAvailableError

    probed = _ProbedModel(raised)
    with pytest.raises(ModelNotAvailableError) as refused:
        probed.check()
    assert str(refused.value) == _probe_failure("org/model", raised) and refused.value.__cause__ is raised
    assert probed.calls == [([[1, 7, 8, 9, 10, 2]], [[1] * 6], True)]
    if isinstance(raised, IndexError):
        assert f"(IndexError: index out of range in self {'x' * 173}), so" in str(refused.value)  # 200 of 327
    for kept in (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), MemoryError(), KeyError("k")):
        with pytest.raises(type(kept)) as met:
            _ProbedModel(kept).check()
        assert met.value is kept


@pytest.mark.parametrize("lengths, last, layers, refusal", [
    ((6, 6, 6, 6), 6, 3, None),
    ((6, 3, 2, 2), 2, 3, "gives hidden states of 2, 3, 6 positions for a probe of 6 tokens"),
    ((6, 6, 6, 6), 8, 3, "gives hidden states of 6, 8 positions for a probe of 6 tokens"),  # the output alone
    ((6,) * 7, 6, 3, "gives 7 hidden states for num_hidden_layers=3 (4 expected"),
    ((6,) * 3, 6, 3, "gives 3 hidden states for num_hidden_layers=3 (4 expected"),
    ((6,) * 7, 6, 6, None),
])
def test_hidden_states_other_than_one_vector_per_token_per_layer_are_refused_word_for_word(lengths, last, layers,
                                                                                           refusal):
    """(a mutation testing hunt, 2026-11-27, session 16) The load's two refusals of hidden states bertfeat cannot
    read, word for word (whole models read their first words only), the last layer's output counted with the
    others, and a model of one state per layer and per token passed."""
    from bertfeat import ModelNotAvailableError

    probed = _ProbedModel(lengths=lengths, last=last, layers=layers)
    if refusal is None:
        assert probed.check() is None
        return
    with pytest.raises(ModelNotAvailableError) as refused:
        probed.check()
    if "positions" in refusal:
        assert str(refused.value) == (
            f"model='org/model' (funnel) {refusal}, so they do not hold one vector per token of the text (its layers "
            "change the sequence's length: a Funnel Transformer and CANINE shorten it, a Reformer pads it to its "
            "attention chunks): bertfeat's pooling (a mask per token) and layers= cannot read them. bertfeat embeds "
            "with encoders that keep one state per token in every layer.")
    else:
        assert str(refused.value) == (
            f"model='org/model' {refusal}: the embeddings and one per layer), so bertfeat cannot tell which is layer "
            "k (an ALBERT with inner_group_num > 1 gives one per inner layer). bertfeat embeds with models that give "
            "one hidden state per layer.")


@pytest.mark.parametrize("model_type", ["bert", "roberta", "electra"])  # fused (WordPiece, BPE), transformers' own
def test_a_tokenizer_that_pads_left_has_no_pad_token_or_no_length_limit_gives_the_models_own_vectors(
        tiny_encoder, model_type, tmp_path):
    # (guard, models users bring hunt, session 10) tokenizer_config.json's "padding_side": "left" (what decoder
    # embedders save), no pad token, and a model_max_length of 1e30 (what a tokenizer saved without a limit says):
    # bertfeat pads every batch on the right itself (CLS pooling reads token 0; left padding would read a pad, and
    # move a BERT's positions), pads with id 0 where there is no pad token (masked, never attended to), and takes
    # the model's position table as its limit: each text's vectors are those of the text run alone by transformers,
    # truncated and in windows. (sentence-transformers' own encode() pads left there, so a BERT's text in a batch
    # gets other vectors than alone, and fails without a pad token.)
    import json
    import shutil

    path = tiny_encoder(model_type)
    model = shutil.copytree(path, tmp_path / "m")
    f = model / "tokenizer_config.json"
    config = {k: v for k, v in json.loads(f.read_text()).items() if k != "pad_token"}
    f.write_text(json.dumps({**config, "padding_side": "left", "model_max_length": 1e30}))
    tok = transformers.AutoTokenizer.from_pretrained(str(model))
    assert tok.padding_side == "left" and tok.pad_token is None
    kwargs = dict(model=str(model), pooling="cls+mean", layers=LAYERS, layer_agg="concat", device="cpu")
    spec_limit = BertEmbedder(**kwargs).fit(["x"]).recipe_.max_length
    assert spec_limit == BertEmbedder(path).fit(["x"]).recipe_.max_length  # the position table's, not 1e30
    with pytest.warns(UserWarning):  # the long texts are truncated, and bertfeat says so
        truncated = BertEmbedder(**kwargs, max_length=MAX_LENGTH).fit_transform(TEXTS)
    np.testing.assert_allclose(truncated, reference_features(path, TEXTS, LAYERS, MAX_LENGTH), atol=1e-5, rtol=0)
    chunked = BertEmbedder(**kwargs, max_length=MAX_LENGTH, long_text="chunk", stride=3).fit_transform(TEXTS)
    np.testing.assert_allclose(chunked, reference_features(path, TEXTS, LAYERS, MAX_LENGTH, "chunk", 3),
                               atol=1e-5, rtol=0)


# -- bertfeat.architectures by value, without a model: which configurations take the fused pass, where each family's
# weights are read from, and MPNet's buckets (fast: these pin what the slow matrix above only reaches whole)


def _config(**kw):
    from types import SimpleNamespace

    return SimpleNamespace(**{"model_type": "bert", "hidden_act": "gelu", "hidden_size": 32,
                              "num_attention_heads": 4, **kw})


def test_supports_reads_each_setting_with_transformers_defaults_where_a_config_lacks_it():
    from transformers import BertConfig, CamembertConfig

    from bertfeat.architectures import supports

    assert supports(BertConfig()) and supports(CamembertConfig())
    assert supports(_config())  # no position_embedding_type, is_decoder, add_cross_attention: the defaults
    for model_type in ("roberta", "xlm-roberta", "camembert", "mpnet"):
        assert supports(_config(model_type=model_type))
    assert supports(_config(model_type="distilbert", hidden_act="relu", activation="gelu"))  # its own key
    assert not supports(_config(model_type="distilbert"))  # no "activation": not known to be GELU
    assert not supports(_config(model_type=None)) and not supports(_config(model_type="electra"))
    assert not supports(_config(hidden_act="gelu_new"))  # the tanh approximation: other math
    assert not supports(_config(position_embedding_type="relative_key_query"))
    assert supports(_config(position_embedding_type="absolute", is_decoder=False, add_cross_attention=False))
    assert not supports(_config(is_decoder=True))
    assert not supports(_config(add_cross_attention=True))
    assert not supports(_config(hidden_size=30))  # 30 does not split into 4 heads
    from types import SimpleNamespace

    assert not supports(SimpleNamespace(hidden_act="gelu"))  # no model_type at all


def _module(**kw):
    from types import SimpleNamespace

    return SimpleNamespace(**kw)


def _lin(name):
    return _module(weight=f"{name}.w", bias=f"{name}.b")


def _norm(name, eps=None):
    return _module(weight=f"{name}.w", bias=f"{name}.b", **({} if eps is None else {"eps": eps}))


def _bert_like():
    layer = _module(
        attention=_module(self=_module(query=_lin("q"), key=_lin("k"), value=_lin("v")),
                          output=_module(dense=_lin("o"), LayerNorm=_norm("ln1"))),
        intermediate=_module(dense=_lin("up")), output=_module(dense=_lin("down"), LayerNorm=_norm("ln2")))
    emb = _module(word_embeddings=_module(weight="word"), position_embeddings=_module(weight="pos"),
                  token_type_embeddings=_module(weight=["type0", "type1"]), LayerNorm=_norm("emb", 1e-7),
                  padding_idx=1.0)
    return _module(config=_module(model_type="bert"), embeddings=emb, encoder=_module(layer=[layer, layer]))


def _layer_fields(w):
    return (w.query, w.key, w.value, w.attention_out, w.attention_norm, w.up, w.down, w.output_norm)


PLAIN_LAYER = (("q.w", "q.b"), ("k.w", "k.b"), ("v.w", "v.b"), ("o.w", "o.b"), ("ln1.w", "ln1.b"), ("up.w", "up.b"),
               ("down.w", "down.b"), ("ln2.w", "ln2.b"))


@pytest.mark.parametrize("model_type, padding_idx", [("bert", None), ("roberta", 1), ("xlm-roberta", 1),
                                                     ("camembert", 1)])
def test_bert_and_roberta_weights_are_read_from_their_modules(model_type, padding_idx):
    from bertfeat.architectures import encoder_weights

    model = _bert_like()
    model.config.model_type = model_type
    w = encoder_weights(model)
    assert (w.word, w.position, w.type0, w.embedding_norm, w.eps, w.relative_bias) == (
        "word", "pos", "type0", ("emb.w", "emb.b"), 1e-7, None)
    assert w.padding_idx == padding_idx and type(w.padding_idx) is (int if padding_idx else type(None))
    assert [_layer_fields(layer) for layer in w.layers] == [PLAIN_LAYER, PLAIN_LAYER]


def test_distilbert_and_mpnet_weights_are_read_from_their_modules():
    from bertfeat.architectures import encoder_weights

    emb = _module(word_embeddings=_module(weight="word"), position_embeddings=_module(weight="pos"),
                  LayerNorm=_norm("emb", 1e-12), padding_idx=1)
    distil = _module(config=_module(model_type="distilbert"), embeddings=emb, transformer=_module(layer=[_module(
        attention=_module(q_lin=_lin("q"), k_lin=_lin("k"), v_lin=_lin("v"), out_lin=_lin("o")),
        sa_layer_norm=_norm("ln1"), ffn=_module(lin1=_lin("up"), lin2=_lin("down")),
        output_layer_norm=_norm("ln2"))]))
    w = encoder_weights(distil)
    assert (w.word, w.position, w.type0, w.embedding_norm, w.eps, w.padding_idx, w.relative_bias) == (
        "word", "pos", None, ("emb.w", "emb.b"), 1e-12, None, None)
    assert [_layer_fields(layer) for layer in w.layers] == [PLAIN_LAYER]
    mpnet = _module(config=_module(model_type="mpnet"), embeddings=emb, encoder=_module(
        relative_attention_bias=_module(weight="bias"), layer=[_module(
            attention=_module(attn=_module(q=_lin("q"), k=_lin("k"), v=_lin("v"), o=_lin("o")), LayerNorm=_norm("ln1")),
            intermediate=_module(dense=_lin("up")), output=_module(dense=_lin("down"), LayerNorm=_norm("ln2")))]))
    w = encoder_weights(mpnet)
    assert (w.word, w.position, w.type0, w.embedding_norm, w.eps, w.padding_idx, w.relative_bias) == (
        "word", "pos", None, ("emb.w", "emb.b"), 1e-12, 1, "bias")
    assert [_layer_fields(layer) for layer in w.layers] == [PLAIN_LAYER]


def test_a_model_not_laid_out_as_its_family_has_no_weights_for_the_fused_pass():
    from bertfeat.architectures import encoder_weights

    assert encoder_weights(_module(config=_module(model_type="bert"))) is None  # no embeddings module
    electra = _bert_like()  # laid out as BERT, of a family the fused pass does not know
    electra.config.model_type = "electra"
    assert encoder_weights(electra) is None
    assert encoder_weights(_module(config=_module())) is None  # no model_type


def test_mpnet_buckets_are_transformers_own_past_max_distance():
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    from bertfeat.architectures import mpnet_relative_buckets

    tokens = 300  # past max_distance (128) both ways, so the clamp to the last bucket is reached
    position = torch.arange(tokens)
    want = MPNetEncoder.relative_position_bucket(position[None, :] - position[:, None])  # key - query
    got = mpnet_relative_buckets(tokens)
    assert got.dtype == torch.long and got.shape == (tokens, tokens)
    assert torch.equal(got, want)
    assert set(got.unique().tolist()) == set(range(32)) - {16}  # 16: a key before the query at distance 0
    assert mpnet_relative_buckets(4, device="meta").device.type == "meta"  # built on the model's device
    assert torch.equal(mpnet_relative_buckets(20, num_buckets=64, max_distance=16),
                       MPNetEncoder.relative_position_bucket(position[None, :20] - position[:20, None], 64, 16))


# -- decoders a user may pass (archs hunt, session 13)


def test_cls_pooling_of_a_causal_decoder_is_refused_since_every_text_would_get_one_vector(tiny_encoder, tmp_path,
                                                                                            monkeypatch):
    """A decoder's first token (the BOS that Llama's, Mistral's and Gemma's tokenizers put before a text) attends to
    nothing after it, so its state is the same for every text: the default pooling='cls+mean' gave every text one
    CLS block (half of each vector constant), silently. Refused at fit from config.json (so a run the all-layers
    cache answers whole is refused too) and, for a decoder family bertfeat does not list, at load by the probe;
    mean pooling gives transformers' own vectors."""
    from tests.tiny_encoders import build_tiny_decoder

    path = build_tiny_decoder(tmp_path / "llama", corpus=TEXTS)
    assert resolve_model(path).causal and not resolve_model(tiny_encoder("bert")).causal
    cache = str(tmp_path / "cache")
    kwargs = dict(layers=LAYERS, layer_agg="concat", max_length=MAX_LENGTH, device="cpu")
    with pytest.warns(UserWarning):  # the long texts are truncated
        X = BertEmbedder(path, pooling="mean", cache_dir=cache, cache_all_layers=True, **kwargs).fit_transform(TEXTS)
    want = reference_features(path, TEXTS, LAYERS, MAX_LENGTH)
    np.testing.assert_allclose(X, want[:, len(LAYERS) * HIDDEN:], atol=1e-5, rtol=0)
    assert np.ptp(want[:, :len(LAYERS) * HIDDEN], axis=0).max() < 1e-5  # what CLS pooling would have given
    message = (r"^pooling='cls\+mean' reads the CLS token, the first of each sequence, but .* is a causal decoder "
               r"\(model_type 'llama'\): each token attends only to the tokens before it, .* Pass pooling='mean'")
    with pytest.raises(ValueError, match=message):
        BertEmbedder(path, pooling="cls+mean", cache_dir=cache, cache_all_layers=True, **kwargs).fit(TEXTS)
    # a decoder family the list lacks: the probe at load finds that the first token sees nothing after it
    monkeypatch.setattr(models, "_CAUSAL_TYPES", frozenset())
    models._describe_cached.cache_clear()
    try:
        assert not resolve_model(path).causal
        with pytest.raises(ValueError, match=message):
            BertEmbedder(path, pooling="cls+mean", **kwargs).fit_transform(TEXTS)
        assert get_backend(resolve_model(path), "cpu", "float32").first_token_sees_text is False
    finally:
        models._describe_cached.cache_clear()
    assert get_backend(resolve_model(tiny_encoder("bert")), "cpu", "float32").first_token_sees_text is True
    assert get_backend(resolve_model(tiny_encoder("modernbert")), "cpu", "float32").first_token_sees_text is True
    reference_model.cache_clear()


def test_a_load_runs_no_decoder_probe_until_a_recipe_pools_the_cls_token(tiny_encoder, monkeypatch):
    """(found by a review of session 13's merged work, 2026-11-27, session 13) The decoder probe ran at every load,
    two forward passes of the longer probe where the load's check had run one of the shorter (on the bundled MiniLM,
    CPU: 25 ms against 6; a large model on CPU pays seconds, an R user at the first bf_embed()), for recipes that
    never read it: mean or max pooling, and every model the fused CPU pass runs, a bidirectional encoder by
    construction. Now asked once per loaded model, where a recipe first pools the CLS token."""
    from bertfeat import backend
    from bertfeat.encode import check_cls_pooling

    probes = []
    real = backend.TorchBackend._first_token_probes
    monkeypatch.setattr(backend.TorchBackend, "_first_token_probes",
                        lambda self: probes.append(self.spec.name) or real(self))
    model = backend.TorchBackend(resolve_model(tiny_encoder("modernbert")), "cpu", "float32")
    assert model.fast is None and probes == []  # transformers' pass, and the load probed nothing
    check_cls_pooling(("mean", "max"), model.spec, model)
    assert probes == []
    check_cls_pooling(("cls", "mean"), model.spec, model)
    check_cls_pooling(("cls",), model.spec, model)
    assert model.first_token_sees_text is True and len(probes) == 1  # found once, at the first CLS pooling
    fused = backend.TorchBackend(resolve_model(tiny_encoder("bert")), "cpu", "float32")
    assert fused.fast is not None
    check_cls_pooling(("cls", "mean"), fused.spec, fused)
    assert fused.first_token_sees_text is True and len(probes) == 1


class _FirstTokenStandIn:
    """What :meth:`LoadChecks._first_token_probed` reads, with a model that gives the first token of its two probes
    the states it is handed, and a tokenizer that gives each word an id of its own."""

    device, prefix, suffix, n_special = "cpu", [1], [2], 2

    def __init__(self, *first_states):
        from types import SimpleNamespace

        from bertfeat.load_checks import LoadChecks

        self.spec, self.probed, self._states = SimpleNamespace(max_length=64), [], iter(first_states)
        self.probe = LoadChecks._first_token_probed.__get__(self)
        self._first_token_probes = LoadChecks._first_token_probes.__get__(self)
        self._probe_content = LoadChecks._probe_content.__get__(self)

    def tokenize(self, texts):
        return [[sum(map(ord, word)) for word in text.split()] for text in texts]

    def model(self, input_ids, attention_mask, **kwargs):
        from types import SimpleNamespace

        self.probed.append(input_ids[0].tolist())
        assert attention_mask.tolist() == torch.ones_like(input_ids).tolist()
        state = torch.zeros(1, input_ids.shape[1], 3)
        state[0, 0] = torch.tensor(next(self._states))
        return SimpleNamespace(last_hidden_state=state)


@pytest.mark.parametrize("first, again, sees", [
    ([0.5, -0.25, 0.0], [0.5 + 1.5e-5, -0.25, 0.0], True),  # below 1, an absolute 1e-5: a change a little past it
    ([0.5, -0.25, 0.0], [0.5 + 0.8e-5, -0.25, 0.0], False),  # past 1e-5 of 0.5, within 1e-5
    ([1.0, 0.0, 0.0], [1.0, 1.5e-5, 0.0], True),
    ([50.0, 3.0, -2.0], [50.0, 3.0 + 4e-4, -2.0], False),  # 1e-5 of the state's largest value: 5e-4 at 50
    ([50.0, 3.0, -2.0], [50.0, 3.0 + 6e-4, -2.0], True),
    ([-50.0, 3.0, -2.0], [-50.0, 3.0 + 4e-4, -2.0], False),
    ([7.0, 7.0, 7.0], [7.0, 7.0, 7.0], False),
])
def test_the_decoder_probe_tells_a_first_token_that_sees_the_text_past_float32s_rounding_of_its_state(
        first, again, sees):
    """(a mutation testing hunt, 2026-11-27, session 16) The decoder probe reads a first token as seeing the text
    after it where its last state differs between the two probes by more than float32's rounding of it: 1e-5 of
    its largest magnitude, and no less than 1e-5. Only whole models read it (the tiny decoder, whose first state
    does not change at all, and encoders, whose first state changes far past it): no test read the bound itself.
    The probes share their first (special) token, differ after it, and have one length."""
    stand_in = _FirstTokenStandIn(first, again)
    assert stand_in.probe() is sees
    short, other = stand_in.probed
    assert len(short) == len(other) and short[0] == other[0] == 1 and short[-1] == other[-1] == 2
    assert all(a != b for a, b in zip(short[1:-1], other[1:-1]))


class _PaddedModel:
    """What :meth:`LoadChecks._padding_changes_outputs` reads, with a model whose token ``i`` holds ``base * (i + 1)``
    in every layer, moved by ``seen`` in layer ``layer`` where the batch holds padding."""

    device, prefix, suffix, pad_id = "cpu", [1], [2], 0

    def __init__(self, base, seen, layer=1, content=([7, 8], [7, 8, 9, 10, 11])):
        from bertfeat.load_checks import LoadChecks

        self.base, self.seen, self.layer, self.content, self.calls = base, seen, layer, content, []
        self.check = LoadChecks._padding_changes_outputs.__get__(self)
        self._probe_ids = LoadChecks._probe_ids.__get__(self)

    def _probe_content(self):
        return [list(words) for words in self.content]

    def model(self, input_ids, attention_mask, output_hidden_states):
        from types import SimpleNamespace

        self.calls.append((input_ids.tolist(), attention_mask.tolist()))
        padded = bool((attention_mask == 0).any())
        states = []
        for k in range(4):
            state = self.base * torch.arange(1.0, input_ids.shape[1] + 1)[None, :, None].repeat(1, 1, 3)
            states.append(state + (self.seen if padded and k == self.layer else 0.0))
        return SimpleNamespace(hidden_states=tuple(states))


@pytest.mark.parametrize("base, seen, changes", [
    (2.5, 0.0, False),
    (2.5, 3e-4, False),  # within 1e-4 + 1e-4 of each value (2.5 for the first token: 3.5e-4)
    (2.5, 5e-4, True),
    (0.0, 5e-4, True),  # values of 0: the absolute 1e-4 alone
    (0.0, 0.5e-4, False),
])
def test_the_padding_check_compares_every_layer_of_the_short_probe_alone_and_padded_to_float32s_rounding(
        base, seen, changes):
    """(a mutation testing hunt, 2026-11-27, session 16) Whether padding changes a text's states, which decides
    whether each length runs alone (ConvBERT, YOSO), was read through whole models only, whose padding moves their
    states far past any bound: the bound itself (1e-4 absolute and relative) was read by none. The short probe runs
    alone, then padded to the long one's length with the pad id and a mask of zeros there, whichever of the two
    the probes give first; every layer is compared."""
    for content in (([7, 8], [7, 8, 9, 10, 11]), ([7, 8, 9, 10, 11], [7, 8])):
        model = _PaddedModel(base, seen, content=content)
        assert model.check() is changes
        assert model.calls == [([[1, 7, 8, 2]], [[1, 1, 1, 1]]), ([[1, 7, 8, 2, 0, 0, 0]], [[1, 1, 1, 1, 0, 0, 0]])]
    assert _PaddedModel(base, seen, layer=3).check() is changes  # the last layer, not only the first compared
    assert _PaddedModel(base, seen, layer=0).check() is changes


def test_the_causal_families_read_from_config_are_decoders_in_transformers():
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    known = [t for t in models._CAUSAL_TYPES if t in CONFIG_MAPPING]
    assert len(known) > 30  # the installed transformers has most of them
    assert all(t in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and t not in MODEL_FOR_MASKED_LM_MAPPING_NAMES for t in known)
    assert models._is_causal({"model_type": "qwen2"}) and models._is_causal({"model_type": "bert", "is_decoder": True})
    assert not models._is_causal({"model_type": "bert"}) and not models._is_causal({"model_type": "bert",
                                                                                      "is_decoder": False})
    assert models._is_causal({"model_type": "xlm", "causal": True}) and not models._is_causal({"model_type": "xlm"})


def test_a_decoder_of_a_family_bertfeat_does_not_list_is_told_apart_alike_by_fit_info_and_the_probe(tmp_path):
    """(found by a session 13 leftovers hunt, 2026-11-27, session 14) "CLS pooling is refused where the first token
    sees no text" was decided in three places, and for a decoder of a family config.json does not name (one not in
    _CAUSAL_TYPES: found only by the probe at load) only the embedding pass knew: `bertfeat info` showed the default
    recipe as pooling=cls+mean, which `bertfeat embed` then refused, and the probe (whose default poolings hold
    'cls') failed whole, told to pass poolings=('mean', 'max'), where a listed decoder is scored without its CLS
    pooling. One predicate (encode.first_token_fault) now answers all three, from the loaded model where there is
    one."""
    from bertfeat.cli.info import describe
    from bertfeat.encode import first_token_fault
    from bertfeat.exceptions import ModelNoteWarning
    from bertfeat.probe import probe
    from tests.tiny_encoders import build_tiny_decoder

    path = build_tiny_decoder(tmp_path / "llama", corpus=TEXTS)
    texts = [f"{w} the {v} sat on the mat" for w in ("a", "my", "one", "her", "no", "this") for v in ("cat", "dog")]
    y = [0, 1] * 6
    note = (r"is a causal decoder \(model_type 'llama'\), whose first token attends to no token after it, so the "
            r"probe leaves out its CLS pooling and scores its mean and max pooling\.$")
    for listed in (True, False):
        models._describe_cached.cache_clear()
        clear_backends()
        with pytest.MonkeyPatch.context() as m:
            if not listed:
                m.setattr(models, "_CAUSAL_TYPES", frozenset())
            spec = resolve_model(path)
            assert spec.causal is listed
            assert first_token_fault(spec) == ("causal" if listed else None)  # config.json and tokenizer alone
            assert first_token_fault(spec, get_backend(spec, "cpu", "float32")) == "causal"
            assert describe(path, machine=False)["default_recipe"]["pooling"] == ["mean"]
            with pytest.warns(ModelNoteWarning, match=note):
                result = probe(texts, y, model=path, cv=2, unions=0, baseline=False, max_length=MAX_LENGTH)
            assert set(result.table["pooling"]) == {"mean", "max", "mean+max"}
            with pytest.raises(ValueError, match=r"^pooling='cls' reads the CLS token, .* is a causal decoder "
                                                 r"\(model_type 'llama'\)"):
                probe(texts, y, model=path, poolings=["cls"], cv=2, unions=0, baseline=False, max_length=MAX_LENGTH)
    models._describe_cached.cache_clear()
    clear_backends()
    encoder = resolve_model(build_tiny_encoder(tmp_path / "bert", "bert", corpus=TEXTS))
    assert first_token_fault(encoder) is None
    assert first_token_fault(encoder, get_backend(encoder, "cpu", "float32")) is None


def _shortening_model(path, model_type: str, **config) -> str:
    """A tiny Funnel Transformer (blocks of one layer, each pooling the sequence to half) or CANINE (characters, its
    own tokenizer), saved to ``path``."""
    from transformers import AutoConfig, AutoModel, CanineTokenizer

    from tests.tiny_encoders import HEADS, INTERMEDIATE, build_tokenizer

    if model_type == "canine":
        tok = CanineTokenizer(model_max_length=64)
        tok.save_pretrained(str(path))
        kwargs = dict(hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS, intermediate_size=INTERMEDIATE,
                      num_hash_buckets=64, num_hash_functions=2, local_transformer_stride=8)
    else:
        tok = build_tokenizer(path, "wordpiece", TEXTS, 64)
        kwargs = dict(vocab_size=len(tok), block_sizes=[1, 1, 1], d_model=HIDDEN, n_head=HEADS, d_head=8,
                      d_inner=INTERMEDIATE, pad_token_id=tok.pad_token_id, architectures=["FunnelBaseModel"])
    torch.manual_seed(0)
    model_config = AutoConfig.for_model(model_type, **{**kwargs, **config})
    AutoModel.from_config(model_config).save_pretrained(str(path), safe_serialization=True)
    return str(path)


@pytest.mark.parametrize("model_type", ["funnel", "canine"])
def test_a_model_whose_layers_shorten_the_sequence_is_refused_at_fit_saying_so(model_type, tmp_path, monkeypatch):
    """(archs hunt, session 13) A Funnel Transformer pools the sequence between its blocks and CANINE runs its deep
    layers on a quarter of the characters, so their hidden states hold no vector per token that a mask could pool.
    A Funnel was refused as 'config.json does not say how many layers or what hidden size the model has' (it says:
    block_sizes, d_model), and a CANINE passed fit and failed at the load with transformers' NotImplementedError
    ('get_input_embeddings not auto-handled'). Both are refused at fit now, naming the family and why; a
    shortening model of another family, at load, by its states' lengths."""
    import json

    from bertfeat import ModelNotAvailableError

    path = _shortening_model(tmp_path / model_type, model_type)
    with pytest.raises(ModelNotAvailableError, match=rf"model_type '{model_type}' in its config.json\): bertfeat's "
                                                     r"pooling \(a mask per token\) and layers= cannot read them"):
        BertEmbedder(model=path, device="cpu").fit(["a cat"])
    if model_type == "funnel":  # the check at load: a config giving a layer count, of a family not listed
        config = json.loads((tmp_path / model_type / "config.json").read_text())
        (tmp_path / model_type / "config.json").write_text(json.dumps({**config, "n_layers": 3}))
        monkeypatch.setattr(models, "_SHORTENING_TYPES", {})
        with pytest.raises(ModelNotAvailableError, match=r"\(funnel\) gives hidden states of \d+, \d+, \d+ positions "
                                                         r"for a probe of \d+ tokens, so they do not hold one vector"):
            BertEmbedder(model=path, pooling="mean", device="cpu").fit_transform(["a cat"])


@pytest.mark.parametrize("model_type, style", [("deberta", "wordpiece"), ("xmod", "bpe")])
def test_a_model_whose_code_fails_under_bfloat16_autocast_is_refused_naming_the_model_not_the_cpu(
        model_type, style, tmp_path):
    """(archs hunt, session 13) DeBERTa (v1) fills its bfloat16 attention scores with float32's minimum and X-MOD
    puts bfloat16 adapter outputs into a float32 tensor, so transformers' forward pass of either fails under
    bfloat16 autocast on any device. dtype='bfloat16' was refused as "cannot run on this CPU (AMD EPYC; instruction
    sets: ... avx512_bf16 ...)", on a CPU that runs bfloat16: the model's code is named now. float32 gives
    transformers' vectors."""
    import warnings

    from bertfeat.devices import _autocast_runs_on_cpu

    if not _autocast_runs_on_cpu(torch.bfloat16):
        pytest.skip("this CPU runs no bfloat16 product under autocast: the CPU is the cause here")
    path = build_tiny_encoder(tmp_path / model_type, model_type, corpus=TEXTS, style=style)
    with pytest.warns(UserWarning):  # the long texts are truncated
        X = BertEmbedder(model=path, pooling="cls+mean", layers=LAYERS, layer_agg="concat", max_length=MAX_LENGTH,
                         device="cpu").fit_transform(TEXTS)
    np.testing.assert_allclose(X, reference_features(path, TEXTS, LAYERS, MAX_LENGTH), atol=1e-5, rtol=0)
    with warnings.catch_warnings(), pytest.raises(ValueError) as refused:
        warnings.simplefilter("ignore")  # a slower dtype on this CPU is said so
        BertEmbedder(model=path, dtype="bfloat16", device="cpu").fit_transform(TEXTS[:2])
    assert re.match(rf"dtype='bfloat16' cannot run model='.*' \({model_type}\): transformers' forward pass of it fails "
                    r"under bfloat16 autocast \(.+\)\. This CPU runs bfloat16 products; the model's code is the "
                    r"cause, and fails so on a GPU too\. Pass dtype='float32'\.$", str(refused.value)), refused.value
    reference_model.cache_clear()


@pytest.mark.parametrize("chunk", [8, 64])
def test_a_reformer_whose_states_keep_its_chunk_padding_is_refused_at_fit_whatever_its_chunk_length(chunk, tmp_path):
    """A Reformer pads a sequence longer than its attention chunk to a multiple of it and gives its hidden states at
    that length: a recipe reading any layer failed mid-transform with a bare size mismatch between the states and
    the mask. The load's check of every state's length refused it only where the check's probe text was longer
    than a chunk (8 tokens here): with the released Reformers' chunks of 64 and 128 tokens it passed, and the first
    text longer than a chunk failed (found by a session 13 leftovers hunt, 2026-11-27, session 14: 'stack expects
    each tensor to be equal size', last layer alone too). Refused at fit now, from config.json, saying why."""
    from transformers import AutoModel, ReformerConfig

    from bertfeat import ModelNotAvailableError
    from tests.tiny_encoders import HEADS, build_tokenizer

    tok = build_tokenizer(tmp_path, "wordpiece", TEXTS, 128)
    config = ReformerConfig(vocab_size=len(tok), hidden_size=HIDDEN, num_attention_heads=HEADS, attention_head_size=8,
                            attn_layers=["local", "local"], axial_pos_shape=[8, 16], axial_pos_embds_dim=[16, 16],
                            feed_forward_size=37, local_attn_chunk_length=chunk, is_decoder=False,
                            pad_token_id=tok.pad_token_id, max_position_embeddings=128)
    torch.manual_seed(0)
    AutoModel.from_config(config).save_pretrained(str(tmp_path), safe_serialization=True)
    message = (r"^model='.*' is a Reformer, whose layers pad a sequence longer than its attention chunk to a multiple "
               r"of it, so its hidden states do not hold one vector per token of the text \(model_type 'reformer' in "
               r"its config.json\): bertfeat's pooling")
    for layers in (-1, [0, -1]):
        with pytest.raises(ModelNotAvailableError, match=message):
            BertEmbedder(model=str(tmp_path), pooling="mean", layers=layers, layer_agg="concat",
                         device="cpu").fit(TEXTS[:3])


def test_info_describes_a_decoder_with_the_pooling_it_runs(tmp_path):
    """`bertfeat info` fitted the default recipe, whose pooling reads the CLS token, and so failed with CLS pooling's
    refusal on every causal decoder and GPT-2-style tokenizer: no way to see a model's facts. Its default recipe
    there is mean pooling."""
    from bertfeat.cli.info import describe
    from tests.tiny_encoders import build_tiny_decoder

    path = build_tiny_decoder(tmp_path / "llama", corpus=TEXTS)
    info = describe(path, machine=False)
    assert (info["model_type"], info["default_recipe"]["pooling"], info["layers"]) == ("llama", ["mean"], 3)


@pytest.mark.parametrize("model_type", [*FAMILIES, "llama", "llama (unlisted)"])
def test_info_without_the_machine_report_says_what_the_loaded_model_says_loading_only_what_it_must(
        tiny_encoder, tmp_path, model_type, monkeypatch):
    """Session 14 made `bertfeat info --no-machine` load the whole backend (the fused pass's set-up included) to ask
    whether CLS pooling works, which config.json and the tokenizer answer for every family the fused pass runs: it
    went from 5.3-5.5 s to 6.2-7.0 s. Now the backend is loaded only where the answer needs the model run (a decoder
    of a family config.json does not name) and the weights are checked alone elsewhere, with the same default
    pooling and weights count as the loaded model gives, on every family."""
    import bertfeat.backend as backend_module
    from bertfeat.cli.info import describe
    from bertfeat.encode import first_token_fault
    from tests.tiny_encoders import build_tiny_decoder

    if model_type.startswith("llama"):
        path = build_tiny_decoder(tmp_path / "llama", corpus=TEXTS)
        if model_type != "llama":
            monkeypatch.setattr(models, "_CAUSAL_TYPES", frozenset())
    else:
        path = tiny_encoder(model_type)
    models._describe_cached.cache_clear()
    clear_backends()
    loads = []
    real_init = backend_module.TorchBackend.__init__

    def counting_init(self, *args, **kwargs):
        loads.append(args)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(backend_module.TorchBackend, "__init__", counting_init)
    info = describe(path, machine=False)
    fused = model_type in FAMILIES and FAMILIES[model_type][1]
    assert len(loads) == (0 if fused or model_type == "llama" else 1)
    spec = resolve_model(path)
    backend = get_backend(spec, "cpu", "float32")
    want = ["cls", "mean"] if first_token_fault(spec, backend) is None else ["mean"]
    assert (info["default_recipe"]["pooling"], info["weights_tensors"]) == (want, backend.checked["tensors"])
    assert (want == ["mean"]) == model_type.startswith("llama")
