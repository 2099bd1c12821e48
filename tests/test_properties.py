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
