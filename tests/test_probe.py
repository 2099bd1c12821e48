"""The probe: one embedding pass, candidate features equal to BertEmbedder's, sorted scores, plot, CLI."""

import json

import numpy as np
import pandas as pd
import pytest

from bertfeat import BertEmbedder
from bertfeat.probe import Candidate, candidate_features, default_candidates, probe

WORDS_POS = "lovely delightful wonderful charming great superb".split()
WORDS_NEG = "dull tedious awful boring poor dreadful".split()


def labelled(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    texts = [" ".join(rng.choice(WORDS_POS if label else WORDS_NEG, 4)) + " the cat sat" for label in y]
    return texts, y


def test_candidates_cover_single_layers_last_k_means_concats_and_combos():
    cands = default_candidates(6)
    labels = {c.label(6) for c in cands}
    assert "mean, layer 0" in labels and "cls, layer 6" in labels
    assert "mean, mean of layers [-4, -3, -2, -1]" in labels
    assert "max, concat of layers [-2, -1]" in labels
    assert "cls+mean, layer 6" in labels
    assert len(labels) == len(cands)


@pytest.mark.parametrize("cand", [Candidate(("mean",), (3,)), Candidate(("cls", "max"), (1, 2, 3)),
                                  Candidate(("max",), (2, 3), "concat"), Candidate(("cls",), (0,))])
@pytest.mark.parametrize("normalize", [False, True])
def test_candidate_features_equal_what_bertembedder_computes(tiny_bert, cand, normalize):
    texts, _ = labelled(12)
    full = BertEmbedder(tiny_bert, pooling="cls+mean+max", layers=[0, 1, 2, 3], layer_agg="concat")
    blocks = full.fit_transform(texts).reshape(12, 3, 4, 32)
    got = candidate_features(blocks, ("cls", "mean", "max"), cand, normalize)
    params = cand.params(3)
    want = BertEmbedder(tiny_bert, normalize=normalize, **params).fit_transform(texts)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_probe_runs_one_embedding_pass_and_ranks_candidates(tiny_bert, monkeypatch, tmp_path):
    import bertfeat.backend

    calls = []
    real = bertfeat.backend.TorchBackend.forward

    def counting(self, units, *a, **k):
        calls.append(len(units))
        return real(self, units, *a, **k)

    monkeypatch.setattr(bertfeat.backend.TorchBackend, "forward", counting)
    texts, y = labelled(60)
    result = probe(texts, y, model=tiny_bert, cv=3, plot=str(tmp_path / "probe.png"))
    assert sum(calls) == len(set(texts))  # every distinct text through the model once, for all candidates
    t = result.table
    assert list(t["score"]) == sorted(t["score"], reverse=True)
    assert (t["std_err"] >= 0).all() and len(t) == len(default_candidates(3))
    assert result.metric == "roc_auc" and 0.5 < t["score"].iloc[0] <= 1.0
    assert result.baseline["score"] > 0.5
    best = t.iloc[0]
    assert best["score"] - best["std_err"] <= t.loc[t["params"].map(str) == str(result.recommended), "score"].iloc[0]
    assert set(result.recommended) == {"pooling", "layers", "layer_agg"}
    BertEmbedder(tiny_bert, **result.recommended).fit(texts)  # the recommendation is valid as given
    png = (tmp_path / "probe.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_probe_regression_and_multiclass_metrics(tiny_bert):
    texts, y = labelled(45, seed=1)
    reg = probe(texts, y + np.random.default_rng(0).normal(size=45) * 0.1 + np.arange(45) / 7, model=tiny_bert,
                cv=3, baseline=False)
    assert reg.task == "regression" and reg.metric == "r2"
    multi = probe(texts, np.arange(45) % 3, model=tiny_bert, cv=3, baseline=False)
    assert multi.metric == "accuracy"


def test_probe_errors(tiny_bert):
    texts, y = labelled(10)
    with pytest.raises(ValueError, match="y has 9 labels but there are 10 texts"):
        probe(texts, y[:9], model=tiny_bert, cv=2)
    with pytest.raises(ValueError, match="single class"):
        probe(texts, np.zeros(10), model=tiny_bert, cv=2)


def test_probe_command(tiny_bert, tmp_path, capsys):
    from bertfeat.cli import main

    texts, y = labelled(40)
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    code = main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--model", tiny_bert,
                 "--cv", "3", "--plot", str(tmp_path / "p.png"), "--json", str(tmp_path / "p.json")])
    out = capsys.readouterr().out
    assert code == 0 and "recommended:" in out and "roc_auc" in out
    report = json.loads((tmp_path / "p.json").read_text())
    assert report["recommended"] and len(report["table"]) == len(default_candidates(3))
    assert (tmp_path / "p.png").exists()
    assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "nope",
                 "--model", tiny_bert]) == 2
    assert "column(s) ['nope'] not found" in capsys.readouterr().err


def test_bertfeat_probe_is_the_function_even_after_importing_the_module():
    import importlib

    import bertfeat

    importlib.import_module("bertfeat.probe")
    assert callable(bertfeat.probe) and bertfeat.probe.__name__ == "probe"
