"""Pooling math checked against a hand computation: each text run alone (no padding) through the tiny BERT,
then CLS / mean / max and layer aggregation computed in numpy, compared with BertEmbedder on mixed batches."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bertfeat import BertEmbedder
from bertfeat.pooling import combine_windows, l2_normalize, pool_blocks, pool_tokens

# The last text is one content token, the shortest there is (a lone accent, which this tokenizer strips leaving
# [CLS] [SEP] only, is blank: missing).
TEXTS = ["the cat sat on the mat", "dog", "statistics meets text at last and glmnet loves numeric features", "!"]


@pytest.fixture(scope="module")
def hand(tiny_bert):
    """Per text: the hidden states of every layer, from one unpadded forward pass."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModel.from_pretrained(tiny_bert).eval()

    def states(ids):
        with torch.no_grad():
            out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
        return [h[0].numpy().astype(np.float64) for h in out.hidden_states]

    return tok, states


def expected(states, pooling, layers, agg):
    blocks = []
    for how in pooling:
        per_layer = []
        for layer in layers:
            h = states[layer]
            per_layer.append({"cls": h[0], "mean": h.mean(0), "max": h.max(0)}[how])
        blocks.extend([np.mean(per_layer, axis=0)] if agg == "mean" else per_layer)
    return np.concatenate(blocks)


@pytest.mark.parametrize("pooling, layers, agg", [
    ("cls", -1, "mean"),
    ("mean", -1, "mean"),
    ("max", -1, "mean"),
    ("cls+mean+max", [0, 2], "mean"),
    ("mean+max", [-1, 1, 0], "concat"),
    ("cls", [1, 2, 3], "mean"),
])
def test_pooling_matches_hand_computation(tiny_bert, hand, pooling, layers, agg):
    tok, states = hand
    est = BertEmbedder(tiny_bert, pooling=pooling, layers=layers, layer_agg=agg, batch_tokens=10_000)
    got = est.fit_transform(TEXTS)
    layer_idx = [l % 4 for l in ([layers] if isinstance(layers, int) else layers)]
    for i, text in enumerate(TEXTS):
        ids = tok(text)["input_ids"]
        want = expected(states(ids), pooling.split("+"), layer_idx, agg)
        np.testing.assert_allclose(got[i], want, atol=1e-5, rtol=0)


def test_chunked_long_text_is_the_token_weighted_mean_of_its_windows(tiny_bert, hand):
    tok, states = hand
    text = " ".join(["the quick brown fox jumps over the lazy dog"] * 4)
    content = tok(text, add_special_tokens=False)["input_ids"]
    cls_id, sep_id = tok.cls_token_id, tok.sep_token_id
    max_length, stride = 16, 4
    window = max_length - 2
    assert len(content) > 2 * window  # really several windows
    spans, start = [], 0
    while True:
        end = min(start + window, len(content))
        spans.append(content[start:end])
        if end == len(content):
            break
        start = end - stride
    est = BertEmbedder(tiny_bert, pooling="cls+mean+max", layers=-1, max_length=max_length, long_text="chunk",
                       stride=stride)
    got = est.fit_transform([text, "dog"])[0]
    per_window = [states([cls_id] + w + [sep_id])[-1] for w in spans]
    weights = np.array([len(w) + 2 for w in spans], dtype=np.float64)
    cls = np.average([h[0] for h in per_window], axis=0, weights=weights)
    mean = np.average([h.mean(0) for h in per_window], axis=0, weights=weights)
    mx = np.max([h.max(0) for h in per_window], axis=0)
    np.testing.assert_allclose(got, np.concatenate([cls, mean, mx]), atol=1e-5, rtol=0)
    assert est.stats_.chunked == 1 and est.stats_.truncated == 0


def test_chunk_mode_equals_truncate_mode_for_texts_that_fit(tiny_bert):
    short = ["the cat sat", "a dog ran in the park"]
    a = BertEmbedder(tiny_bert, long_text="chunk", max_length=32).fit_transform(short)
    b = BertEmbedder(tiny_bert, long_text="truncate", max_length=32).fit_transform(short)
    np.testing.assert_array_equal(a, b)


def test_pool_functions_do_not_write_into_inputs():
    torch.manual_seed(1)
    hidden = torch.randn(2, 5, 3)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    h0, m0 = hidden.clone(), mask.clone()
    for how in ("cls", "mean", "max"):
        pool_tokens(hidden, mask, how)
    pool_blocks([hidden, hidden], mask, ("cls", "mean", "max"), ((0, 1),))
    assert torch.equal(hidden, h0) and torch.equal(mask, m0)


def test_masked_pooling_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, -100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    assert pool_tokens(hidden, mask, "mean").tolist() == [[2.0, 3.0]]
    assert pool_tokens(hidden, mask, "max").tolist() == [[3.0, 4.0]]
    assert pool_tokens(hidden, mask, "cls").tolist() == [[1.0, 2.0]]


def test_combine_windows_weighted_mean_and_max():
    vectors = np.array([[[1.0, 0.0], [1.0, 5.0]],   # text 0 window 0: mean block, max block
                        [[3.0, 2.0], [0.0, 9.0]],   # text 0 window 1
                        [[7.0, 7.0], [7.0, 7.0]]], dtype=np.float32)  # text 1
    out = combine_windows(vectors, np.array([0, 2, 3]), np.array([1, 3, 5]), ("mean", "max"))
    np.testing.assert_allclose(out[0, 0], [2.5, 1.5])
    np.testing.assert_allclose(out[0, 1], [1.0, 9.0])
    np.testing.assert_array_equal(out[1], vectors[2])


@pytest.mark.parametrize("seed", range(3))
def test_windows_combined_a_batch_at_a_time_are_combined_all_at_once_to_the_bit(seed):
    """encode combines each batch of windows as it comes back (WindowCombiner), in the plan's batches: each text's
    vectors are combine_windows' bytes over every window at once, for cls, mean and max, whatever the batch sizes."""
    from bertfeat.batching import plan_batches
    from bertfeat.pooling import WindowCombiner

    rng = np.random.default_rng(seed)
    for trial in range(40):
        counts = rng.integers(1, 12, size=rng.integers(1, 9))
        starts = np.concatenate([[0], np.cumsum(counts)])
        lengths = np.concatenate([[50] * (c - 1) + [rng.integers(3, 51)] for c in counts])  # the last is shortest
        pooling = [("mean",), ("max",), ("cls", "mean", "max"), ("mean", "max")][trial % 4]
        n_blocks = len(pooling) * int(rng.integers(1, 4))
        scale = 10 ** rng.uniform(-3, 3, size=(starts[-1], n_blocks, 8))
        vectors = (rng.standard_normal((starts[-1], n_blocks, 8)) * scale).astype(np.float32)
        combiner = WindowCombiner(starts, lengths, pooling)
        for batch in plan_batches(lengths, int(rng.integers(50, 400))):
            combiner.add(batch, vectors[batch])
        assert combiner.result().tobytes() == combine_windows(vectors, starts, lengths, pooling).tobytes()


def test_combine_windows_when_every_text_has_several_windows():
    # no text with a single window: the shortcut for "all single" must not fire, and texts with exactly two windows
    # each are combined like any others
    vectors = np.array([[[1.0, 0.0]], [[3.0, 4.0]], [[0.0, 6.0]], [[2.0, 2.0]]], dtype=np.float32)
    for pooling, want in ((("mean",), [[[2.5, 3.0]], [[1.0, 4.0]]]), (("max",), [[[3.0, 4.0]], [[2.0, 6.0]]])):
        out = combine_windows(vectors, np.array([0, 2, 4]), np.array([1, 3, 1, 1]), pooling)
        assert out.shape == (2, 1, 2)
        np.testing.assert_allclose(out, want)
    out = combine_windows(vectors, np.array([0, 3, 4]), np.array([1, 1, 2, 5]), ("mean",))  # 3 windows, then 1
    np.testing.assert_allclose(out, [[[1.0, 4.0]], [[2.0, 2.0]]])  # weights 1, 1, 2


def test_pool_tokens_names_an_unknown_pooling():
    with pytest.raises(ValueError, match=r"^unknown pooling 'avg'$"):
        pool_tokens(torch.zeros(1, 2, 3), torch.ones(1, 2), "avg")


def test_l2_normalize_leaves_zero_vectors():
    v = np.array([[[3.0, 4.0]], [[0.0, 0.0]]], dtype=np.float32)
    np.testing.assert_allclose(l2_normalize(v), [[[0.6, 0.8]], [[0.0, 0.0]]])


def test_l2_normalize_scales_short_vectors_up_each_block_alone_and_returns_float32():
    # norms below 1 are divided too (the floor only guards zero), per block, whatever the input dtype
    v = np.array([[[0.003, 0.004], [30.0, 40.0]], [[0.0, 2.0], [1e-3, 0.0]]], dtype=np.float64)
    out = l2_normalize(v)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[[0.6, 0.8], [0.6, 0.8]], [[0.0, 1.0], [1.0, 0.0]]], rtol=1e-6)


# -- any recipe, every tokenizer kind, against a reference written from the documented rules ---------------------------

@pytest.fixture(scope="module")
def three_tokenizers(tmp_path_factory):
    """A tiny encoder per tokenizer kind, each with its transformers model: WordPiece (BERT), byte-level BPE
    (RoBERTa: positions from padding_idx + 1) and SentencePiece unigram (XLM-R)."""
    from transformers import AutoModel, AutoTokenizer

    from tests.tiny_encoders import build_tiny_encoder

    root = tmp_path_factory.mktemp("three")
    out = {}
    for family in ("bert", "roberta", "xlm-roberta"):
        path = build_tiny_encoder(root / family, family, corpus=["query: passage: the cat"],
                                  style="sentencepiece" if family == "xlm-roberta" else None)
        out[family] = (path, AutoTokenizer.from_pretrained(path),
                       AutoModel.from_pretrained(path, attn_implementation="eager").eval())
    return out


def reference_vector(tok, model, text, prefix, pooling, layers, agg, max_length, long_text, stride, normalize):
    """What a careful user computes by hand from README's rules: the prefix tokenized with the text and repeated at
    the head of every window; windows of max_length tokens, special tokens and the prefix included, consecutive
    ones sharing ``stride`` of the text's tokens; each window run alone (no padding); CLS and mean averaged over the
    windows weighted by their token counts, max the max; layers averaged or side by side; each block L2-normalized."""
    bare = tok("hello", add_special_tokens=False)["input_ids"]
    full = tok("hello")["input_ids"]
    before, after = full[:full.index(bare[0])], full[full.index(bare[0]) + len(bare):]
    joint = tok(prefix + text, add_special_tokens=False)["input_ids"]
    alone = tok(prefix, add_special_tokens=False)["input_ids"] if prefix else []
    k = 0
    while k < min(len(joint), len(alone)) and joint[k] == alone[k]:
        k += 1
    head, content = joint[:k], joint[k:]
    room = max_length - len(before) - len(after) - len(head)
    windows = [content[:room]]
    if long_text == "chunk" and len(content) > room:
        windows, start = [], 0
        while start + room < len(content):
            windows.append(content[start:start + room])
            start += room - stride
        windows.append(content[start:])
    states = [None] * len(windows)
    for n in {len(w) for w in windows}:  # windows of one length run together: no padding anywhere
        rows = [i for i, w in enumerate(windows) if len(w) == n]
        ids = torch.tensor([before + head + windows[i] + after for i in rows])
        with torch.inference_mode():
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
        for j, i in enumerate(rows):
            states[i] = [h[j].double().numpy() for h in out.hidden_states]
    weights = [len(before) + len(head) + len(w) + len(after) for w in windows]
    blocks = []
    for how in pooling:
        per_layer = []
        for layer in layers:
            each = [{"cls": s[layer][0], "mean": s[layer].mean(0), "max": s[layer].max(0)}[how] for s in states]
            per_layer.append(np.max(each, axis=0) if how == "max" else np.average(each, axis=0, weights=weights))
        group = [np.mean(per_layer, axis=0)] if agg == "mean" else per_layer
        blocks += [b / np.linalg.norm(b) for b in group] if normalize else group
    return np.concatenate(blocks)


WORDS = ["the", "cat", "sat", "on", "a", "mat", "Emma", "Woodhouse,", "handsome", "clever;", "naïve", "café", "query:",
         "statistics", "东京", "x"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    family=st.sampled_from(["bert", "roberta", "xlm-roberta"]),
    texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join), min_size=1, max_size=3),
    prefix=st.sampled_from(["", "query: ", "q "]),
    pooling=st.lists(st.sampled_from(["cls", "mean", "max"]), min_size=1, max_size=3, unique=True),
    layers=st.lists(st.sampled_from([0, 1, 2, 3]), min_size=1, max_size=3, unique=True),
    agg=st.sampled_from(["mean", "concat"]),
    long_text=st.sampled_from(["chunk", "truncate"]),
    max_length=st.sampled_from([12, 16, 64]),
    stride=st.sampled_from([None, 0, 1, "max"]),
    normalize=st.booleans(),
    batch_tokens=st.sampled_from([None, 1, 40]),
)
def test_any_recipe_gives_what_a_careful_user_computes_by_hand(three_tokenizers, family, texts, prefix, pooling, layers,
                                                             agg, long_text, max_length, stride, normalize,
                                                             batch_tokens):
    """Windows, their weights, the prefix in every window, layers and normalization, on every tokenizer kind, in
    mixed batches, against :func:`reference_vector` (independent of bertfeat's windowing and pooling code)."""
    import warnings

    path, tok, model = three_tokenizers[family]
    kw = dict(pooling=pooling, layers=layers, layer_agg=agg, max_length=max_length, long_text=long_text,
              normalize=normalize, prefix=prefix or None, batch_tokens=batch_tokens, dtype="float32")
    if long_text == "chunk" and stride is not None:
        prefix_room = max_length - 2 - len(tok(prefix, add_special_tokens=False)["input_ids"] if prefix else [])
        kw["stride"] = prefix_room - 1 if stride == "max" else stride
    est = BertEmbedder(path, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = est.fit_transform(texts)
    for i, text in enumerate(texts):
        want = reference_vector(tok, model, text, prefix, pooling, sorted(layers) if agg == "mean" else layers, agg,
                                max_length, long_text, est.recipe_.stride, normalize)
        np.testing.assert_allclose(got[i], want, atol=2e-5, rtol=0)


@pytest.mark.parametrize("max_length, stride", [(8, 0), (8, 1), (8, 5), (12, 3), (64, 10)])
def test_windows_are_those_of_transformers_overflowing_tokens_with_the_same_stride(tiny_bert, max_length, stride):
    """``stride`` means what it means to a Hugging Face tokenizer (tokens shared by consecutive windows), so a user
    who cuts windows with ``return_overflowing_tokens=True`` gets bertfeat's, the last one included."""
    from transformers import AutoTokenizer

    from bertfeat.batching import split_windows

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    text = "emma woodhouse handsome clever and rich statistics meets text at last, the quick brown fox " * 2
    content = tok(text, add_special_tokens=False)["input_ids"]
    theirs = tok(text, max_length=max_length, stride=stride, truncation=True, return_overflowing_tokens=True)
    ours = [content[a:b] for a, b in split_windows(len(content), max_length - 2, stride)]
    assert [ids[1:-1] for ids in theirs["input_ids"]] == ours


@pytest.fixture(scope="module")
def fused_and_not(tmp_path_factory):
    """A tiny encoder of each family the fused CPU pass runs (BERT, RoBERTa, DistilBERT, MPNet) and of one it does
    not (ELECTRA), each with its transformers model for :func:`reference_vector`."""
    from transformers import AutoModel, AutoTokenizer

    from tests.tiny_encoders import build_tiny_encoder

    root = tmp_path_factory.mktemp("fused")
    out = {}
    for family in ("bert", "roberta", "distilbert", "mpnet", "electra"):
        path = build_tiny_encoder(root / family, family)
        out[family] = (path, AutoTokenizer.from_pretrained(path),
                       AutoModel.from_pretrained(path, attn_implementation="eager").eval())
    return out


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "mpnet", "electra"])
@pytest.mark.parametrize("max_length, stride", [(4, 0), (4, 1), (5, 0), (5, 2), (7, 4)])
def test_tiny_windows_at_every_length_around_them_give_the_reference_on_fused_and_unfused_families(
        fused_and_not, family, max_length, stride):
    """Windows of 2 to 5 text tokens, stride 0 up to its largest, texts one token under, at and over a window and
    up to several windows, in one batch with a one-token text (padding beside every length), every pooling and the
    first, a middle and the last layer: bertfeat (the fused CPU pass on the first four families, transformers' on
    ELECTRA) against :func:`reference_vector`, each window run alone through transformers (checked 2026-11-27,
    session 16: all within 1e-5)."""
    import warnings

    from bertfeat import backend

    path, tok, model = fused_and_not[family]
    n_layers = model.config.num_hidden_layers
    window = max_length - 2
    texts = [" ".join(["the"] * n) for n in range(1, 3 * window + 2)] + ["naïve café 东京"]
    est = BertEmbedder(path, pooling="cls+mean+max", layers=[0, 1, -1], layer_agg="concat", max_length=max_length,
                       long_text="chunk", stride=stride, dtype="float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = est.fit_transform(texts)
    fused = [b.fast is not None for b in backend._REGISTRY.values() if getattr(b, "spec", None) is not None
             and str(b.spec.path) == str(path)]
    assert fused == [family != "electra"]  # the pass this test means to check is the one that ran
    assert [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts[:-1]] == list(range(1, 3 * window + 2))
    for i, text in enumerate(texts):
        want = reference_vector(tok, model, text, "", ["cls", "mean", "max"], [0, 1, n_layers], "concat", max_length,
                                "chunk", stride, False)
        np.testing.assert_allclose(got[i], want, atol=1e-5, rtol=0, err_msg=f"{family} {text!r}")
