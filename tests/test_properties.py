"""Property-based: whatever unicode comes in (whitespace-only, control characters, very long), finite vectors come
back, one per text, in input order; blank texts (only whitespace, control or format characters) are missing."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bertfeat import BertEmbedder
from bertfeat.inputs import is_blank

texts_strategy = st.lists(
    st.one_of(
        st.text(max_size=60),
        st.text(alphabet=st.sampled_from(" \t\n\r\x0b\x0c\u00a0\u2003\u3000"), max_size=20),
        st.text(alphabet=st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "So", "Lo", "Mn"]), max_size=30),
        st.builds(lambda w, n: " ".join([w] * n), st.sampled_from(["cat", "glmnet", "é", "字"]), st.integers(50, 400)),
    ),
    min_size=1,
    max_size=8,
)


@pytest.fixture(scope="module")
def fitted(tiny_bert):
    return {
        mode: BertEmbedder(tiny_bert, pooling="cls+mean+max", long_text=mode, max_length=32, missing="zero").fit(["x"])
        for mode in ("truncate", "chunk")
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=texts_strategy)
def test_any_unicode_gives_finite_vectors_in_order(fitted, texts):
    import warnings

    for mode, est in fitted.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X = est.transform(texts)
        assert X.shape == (len(texts), 96) and X.dtype == np.float32
        assert np.isfinite(X).all()
        blank = np.array([is_blank(t) for t in texts])
        assert not X[blank].any() and X[~blank].any(axis=1).all()
        # order: each row is the vector of that text alone
        for i in {0, len(texts) - 1}:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                alone = est.transform([texts[i]])[0]
            assert np.abs(X[i] - alone).max() <= 1e-5


WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in", "park", "statistics", "meets", "text", "glmnet"]


@pytest.fixture(scope="module")
def paths(tiny_bert, tmp_path_factory):
    """A model of each forward pass: the fused one (BERT), and the transformers one (ELECTRA, whose embeddings a
    product projects to the hidden size: the half-precision stream it kept before its layer norms took float32)."""
    from tests.tiny_encoders import build_tiny_encoder

    return {"bert": tiny_bert,
            "electra": build_tiny_encoder(tmp_path_factory.mktemp("electra"), "electra", corpus=[" ".join(WORDS)])}


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join), min_size=2,
                      max_size=8).flatmap(lambda t: st.permutations(t + t[:2])),
       budget=st.integers(4, 120))
def test_a_texts_vector_does_not_depend_on_its_batch_order_or_copies_on_either_forward_pass(paths, texts, budget):
    """Whatever the texts beside it, their order, its copies and the token budget (so its batch and padding): a
    text's vector is its vector alone, to 1e-5 in float32 (README) and to a cosine of 0.9999 in bfloat16
    (docs/performance.md's bound), and copies of a text are one vector, bit for bit."""
    import warnings

    for name, path in paths.items():
        for dtype in ("float32", "bfloat16"):
            kw = dict(model=path, pooling="cls+mean+max", layers=[1, 3], layer_agg="concat", max_length=16,
                      dtype=dtype, device="cpu")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # truncation, and bfloat16 slower on this CPU
                X = BertEmbedder(**kw, batch_tokens=budget).fit(["x"]).transform(texts)
                est = BertEmbedder(**kw).fit(["x"])
                each = {t: est.transform([t])[0] for t in dict.fromkeys(texts)}
            alone = np.vstack([each[t] for t in texts])
            for i, t in enumerate(texts):
                assert (X[i].view(np.uint32) == X[texts.index(t)].view(np.uint32)).all()
            if dtype == "float32":
                assert np.abs(X - alone).max() <= 1e-5, name
            else:
                cosine = (X * alone).sum(1) / np.linalg.norm(X, axis=1) / np.linalg.norm(alone, axis=1)
                assert cosine.min() >= 0.9999, name
