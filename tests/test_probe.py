"""The probe: one embedding pass, candidate features equal to BertEmbedder's, sorted scores, plot, CLI."""

import copy
import json

import numpy as np
import pandas as pd
import pytest

from bertfeat import BertEmbedder
from bertfeat.probe import Candidate, candidate_features, default_candidates, probe
from bertfeat.probe_chance import CONSTANT_WHY
from tests.conftest import shared_scope

WORDS_POS = "lovely delightful wonderful charming great superb".split()
WORDS_NEG = "dull tedious awful boring poor dreadful".split()


def labelled(n=60, seed=0, own=1.0):
    """Texts of four sentiment words and a tail; with ``own`` < 1 each word comes from the other side's list with
    probability 1 - own, so candidates score apart (with 1.0 every candidate scores a perfect 1.0)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    lists = (WORDS_NEG, WORDS_POS)
    texts = [" ".join(rng.choice(lists[label if rng.random() < own else 1 - label]) for _ in range(4)) + " the cat sat"
             for label in y]
    return texts, y


def assert_ranked(t):
    """The table's order: score descending, then fewer features first; rank 1, 2, ... in that order."""
    keys = list(zip(-t["score"], t["n_features"]))
    assert keys == sorted(keys) and list(t["rank"]) == list(range(1, len(t) + 1)) and list(t.index) == list(range(len(t)))


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
    assert_ranked(t)
    assert (t["score"] == t["score"].iloc[0]).sum() > 1  # ties at the top: their order (fewer features first) shows
    # every candidate but cls of layer 0, one vector for every text (left out, saying why), + 3 unions + TF-IDF
    assert (t["std_err"] >= 0).all() and len(t) == len(default_candidates(3)) - 1 + 3 + 1
    assert t["kind"].value_counts().to_dict() == {"embedding": len(default_candidates(3)) - 1, "union": 3, "tfidf": 1}
    assert [left["candidate"] for left in result.left_out] == ["cls, layer 0"]
    assert result.metric == "roc_auc" and 0.5 < t["score"].iloc[0] <= 1.0
    assert result.baseline["score"] > 0.5
    best = t.iloc[0]
    rec = t[t["rank"] == result.recommended_rank].iloc[0]
    assert best["score"] - best["std_err"] <= rec["score"] and rec["kind"] == result.recommended_kind
    within = t[t["score"] >= best["score"] - best["std_err"]]  # the one-SE rule: the fewest features among these
    assert (within["n_features"] >= rec["n_features"]).all()
    if result.recommended is not None:
        assert {"model", "pooling", "layers", "layer_agg"} <= set(result.recommended)
        BertEmbedder(**result.recommended).fit(texts)  # the recommendation is valid as given
    png = (tmp_path / "probe.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_the_plot_leaves_the_callers_matplotlib_backend_and_figures_as_they_were(tiny_bert, tmp_path):
    """A notebook runs the probe with a plot, then plots on: its backend (inline there; svg stands in for it) and
    its open figures are as they were. The plot switched the process to Agg, so plt.show() showed nothing after."""
    import matplotlib
    import matplotlib.pyplot as plt

    before = matplotlib.get_backend()
    plt.switch_backend("svg")
    try:
        mine = plt.figure()
        texts, y = labelled(30)
        result = probe(texts, y, model=tiny_bert, cv=2, unions=1, baseline=False, plot=str(tmp_path / "p.png"))
        for path in (tmp_path / "p.png", tmp_path / "again.png", tmp_path / "p.svg"):
            result.plot(path)
            assert matplotlib.get_backend() == "svg" and matplotlib.rcParams["backend"] == "svg"
            assert plt.get_fignums() == [mine.number]  # the probe's figure is none of pyplot's, and none was closed
        assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / "p.svg").read_text().lstrip().startswith("<?xml")
    finally:
        plt.close("all")
        plt.switch_backend(before)


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
    assert "features = " in out and "import" in out  # the recommendation as Python code
    report = json.loads((tmp_path / "p.json").read_text())
    assert report["code"] in out and len(report["table"]) == len(default_candidates(3)) - 1 + 3 + 1  # less cls, layer 0
    assert (tmp_path / "p.png").exists()
    assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "nope",
                 "--model", tiny_bert]) == 2
    assert "column(s) 'nope' not found" in capsys.readouterr().err


def test_the_probe_command_run_again_leaves_out_its_cache_in_the_input_folder(tiny_bert, tmp_path, capsys):
    """`bertfeat probe data --cache-dir data/cache` run again read its cache's shards as input: "column(s) 'text',
    'label' not found in data; it has columns 'key', 'n_tokens', 'vector'". A job leaves out its own cache_dir, as
    `bertfeat embed` does."""
    from bertfeat.cli import main

    texts, y = labelled(40)
    folder = tmp_path / "data"
    folder.mkdir()
    pd.DataFrame({"text": texts, "label": y}).to_parquet(folder / "a.parquet")
    argv = ["probe", str(folder), "--text-col", "text", "--label-col", "label", "--model", tiny_bert, "--cv", "3",
            "--unions", "0", "--cache-dir", str(folder / "cache"), "--json", str(tmp_path / "p.json")]
    assert main(argv) == 0
    first = json.loads((tmp_path / "p.json").read_text())
    assert list((folder / "cache").glob("*/shard-*.parquet"))
    assert main(argv) == 0, capsys.readouterr().err
    again = json.loads((tmp_path / "p.json").read_text())
    (first,), (again,) = first["models"].values(), again["models"].values()
    assert (first["texts"], first["cache_hits"], again["texts"], again["cache_hits"]) == (40, 0, 40, first["unique"])


def test_probe_command_with_missing_texts(tiny_bert, tmp_path, capsys):
    from bertfeat.cli import main

    texts, y = labelled(24, seed=4, own=0.8)
    texts[2] = None  # an empty CSV field: a missing text
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    args = ["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--model", tiny_bert,
            "--cv", "2", "--unions", "1", "--json", str(tmp_path / "p.json")]
    assert main(args) == 2
    assert "row 2 is missing (None) and --missing error. Pass --missing zero" in capsys.readouterr().err
    assert main(args + ["--missing", "zero"]) == 0
    report = json.loads((tmp_path / "p.json").read_text())
    # the printed code reads missing texts as the probe did, when its recommendation holds a TF-IDF
    assert report["code"] in capsys.readouterr().out
    assert report["missing"] == "zero"
    assert ("MissingText(missing='zero')" in report["code"]) == (report["recommended_kind"] != "embedding")
    with pytest.raises(SystemExit):  # rows of NaN: no choice of the probe's (argparse says which are)
        main(args + ["--missing", "nan"])
    assert "argument --missing: invalid choice: 'nan'" in capsys.readouterr().err


def test_bertfeat_probe_is_the_function_even_after_importing_the_module():
    import importlib

    import bertfeat

    importlib.import_module("bertfeat.probe")
    assert callable(bertfeat.probe) and bertfeat.probe.__name__ == "probe"


# -- unions, the ready estimator, several models, prefixes --------------------------------------------------------


def test_union_scaling_and_tfidf_are_fitted_on_the_training_folds_only(monkeypatch):
    import bertfeat.union
    from bertfeat.probe import _scorer, _tfidf_folds, union_scores

    n = 40
    y = np.arange(n) % 2
    X = np.column_stack([np.arange(n, dtype=np.float32), np.random.default_rng(0).normal(size=(n, 3))])
    docs = [f"row{i} {'good' if label else 'bad'} text" for i, label in enumerate(y)]
    scoring = _scorer("classification", y, 4, 0)
    folds = list(scoring["splitter"].split(X, y))
    fitted_rows, fitted_docs = [], []
    real_fit, real_tfidf = bertfeat.union.BlockScaler.fit, bertfeat.union.tfidf

    def recording_fit(self, Z, y=None):
        fitted_rows.append(sorted(Z[:, 0].astype(int).tolist()))  # column 0 holds each row's index
        return real_fit(self, Z, y)

    class RecordingTfidf:
        def __init__(self, missing):
            assert missing == "zero"  # the probe's policy reaches each fold's TF-IDF
            self.vec = real_tfidf(missing)

        def fit_transform(self, d):
            fitted_docs.append(sorted(int(t.split()[0][3:]) for t in d))
            return self.vec.fit_transform(d)

        def transform(self, d):
            return self.vec.transform(d)

    monkeypatch.setattr(bertfeat.union.BlockScaler, "fit", recording_fit)
    monkeypatch.setattr(bertfeat.union, "tfidf", RecordingTfidf)
    scores = union_scores(X, y, folds, _tfidf_folds(docs, folds, "zero"), scoring)
    train_sets = [sorted(train.tolist()) for train, _ in folds]
    assert len(scores) == 4 and fitted_rows == train_sets and fitted_docs == train_sets


def test_block_scaler_puts_the_block_on_tfidf_footing():
    from bertfeat.union import BlockScaler, tfidf

    rng = np.random.default_rng(0)
    E = rng.normal(5.0, 30.0, size=(500, 64)).astype(np.float32)
    Z = BlockScaler().fit_transform(E)
    assert Z.dtype == np.float32 and abs(float((Z ** 2).sum(axis=1).mean()) - 1.0) < 1e-3
    T = tfidf().fit_transform([" ".join(rng.choice(WORDS_POS + WORDS_NEG, 5)) for _ in range(500)])
    np.testing.assert_allclose(np.asarray(T.multiply(T).sum(axis=1)).ravel(), 1.0, atol=1e-6)
    scaler = BlockScaler().fit(E[:250])  # learned state comes from fit's rows only
    np.testing.assert_allclose(scaler.mean_, E[:250].mean(axis=0), rtol=1e-5)



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_scaler_leaves_a_constant_column_centred_and_unscaled_whatever_its_rounding(dtype):
    """(found by a non-finite numbers hunt) a constant column's mean is rounded (0.1 in float32 over 1,000 rows: off
    by 1e-6; in float64 over 7 rows by 1e-17), so its standard deviation was that rounding, not 0: the training rows
    came out 0.5 in it, and a new row's 0.2 came out 52,429 (float32) where the docstring says constant columns are
    centred and left unscaled."""
    from bertfeat.union import BlockScaler

    for rows, value in ((1000, 0.1), (7, 0.1), (1000, 123.456)):
        X = np.random.default_rng(0).normal(size=(rows, 4)).astype(dtype)
        X[:, 0] = value
        scaler = BlockScaler().fit(X)
        assert scaler.transform(X)[:, 0].tolist() == [0.0] * rows
        new = X[:2].copy()
        new[:, 0] = [value + 0.1, value]
        Z = scaler.transform(new)
        np.testing.assert_allclose(Z[:, 0], [0.1 / 2, 0.0], rtol=1e-4, atol=1e-6)  # centred, divided by sqrt(4) only
        np.testing.assert_allclose(Z[:, 1:], scaler.transform(X[:2])[:, 1:])

def test_a_block_scaler_whose_refit_fails_is_its_earlier_fit_whole(monkeypatch):
    """A refit that failed half-way (bad rows, a MemoryError computing the scale, Ctrl-C) left a fitted BlockScaler
    half new fit, half old: the new data's column names with the old scale (refused on the very frame it was fitted
    on), or the new mean with the old scale (a silently wrong transform). Now all or nothing, as BertEmbedder.fit."""
    from bertfeat.union import BlockScaler

    rng = np.random.default_rng(0)
    old = pd.DataFrame(rng.normal(5.0, 3.0, size=(50, 3)), columns=["a", "b", "c"])
    new = pd.DataFrame(rng.normal(-2.0, 9.0, size=(50, 3)), columns=["x", "y", "z"])
    scaler = BlockScaler().fit(old)
    want = scaler.transform(old)
    before = {k: copy.deepcopy(v) for k, v in vars(scaler).items()}
    bad = new.copy()
    bad.iloc[3, 1] = np.nan

    def memory_error(*args, **kwargs):
        raise MemoryError()

    for failing, exc in ((lambda: scaler.fit(bad), ValueError), (lambda: scaler.fit(new), MemoryError)):
        with monkeypatch.context() as patch:
            if exc is MemoryError:
                patch.setattr(np, "sqrt", memory_error)  # after the mean, before the scale
            with pytest.raises(exc):
                failing()
        assert sorted(vars(scaler)) == sorted(before), exc
        for k, v in before.items():
            np.testing.assert_array_equal(vars(scaler)[k], v)
    fresh = BlockScaler()
    with monkeypatch.context() as patch, pytest.raises(MemoryError):
        patch.setattr(np, "sqrt", memory_error)
        fresh.fit(new)
    assert vars(fresh) == {}  # an unfitted one stays unfitted
    np.testing.assert_array_equal(scaler.transform(old), want)


def test_block_scaler_transforms_float32_in_float32_with_one_new_matrix():
    """A stack of float32 embeddings is scaled in float32 into one new matrix: no float64 copy of it (the fitted
    mean and scale are float64 since the constant-column fix; subtracting them from float32 features made a float64
    matrix twice the input's size, then a third copy cast back: 3x the input's bytes at its peak)."""
    import tracemalloc

    from bertfeat.union import BlockScaler

    X = np.random.default_rng(0).normal(size=(20_000, 64)).astype(np.float32)
    scaler = BlockScaler().fit(X)
    tracemalloc.start()
    try:
        Z = scaler.transform(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert Z.dtype == np.float32
    assert peak < 1.2 * X.nbytes, f"transform held {peak / X.nbytes:.2f}x the input's bytes at its peak"
    np.testing.assert_allclose(Z, (X - X.mean(axis=0, dtype=np.float64)) / (X.std(axis=0, dtype=np.float64) * 8),
                               rtol=1e-4, atol=1e-6)


def test_the_union_names_its_features_block_by_block(tiny_bert):
    from sklearn.exceptions import NotFittedError

    from bertfeat.union import BlockScaler, MissingText, tfidf_union

    scaler = BlockScaler()
    with pytest.raises(NotFittedError):
        scaler.get_feature_names_out()
    scaler.fit(np.arange(6.0).reshape(2, 3))
    assert scaler.get_feature_names_out().tolist() == ["x0", "x1", "x2"]
    assert scaler.get_feature_names_out(["a", "b", "c"]).dtype == object
    assert scaler.get_feature_names_out(["a", "b", "c"]).tolist() == ["a", "b", "c"]
    names = MissingText().get_feature_names_out()
    assert names.dtype == object and names.tolist() == ["text"]
    texts, _ = labelled(12)
    for missing, tfidf_step in (("error", "tfidfvectorizer"), ("zero", "pipeline-1")):
        union = tfidf_union(BertEmbedder(tiny_bert, pooling="mean", layers=-1, missing=missing)).fit(texts)
        names = union.get_feature_names_out().tolist()
        width = len(names) - 32  # the TF-IDF's vocabulary, then the embedding's 32 columns, scaled
        assert names[:width] == [f"{tfidf_step}__{w}" for w in union.transformer_list[0][1].get_feature_names_out()]
        assert names[width:] == [f"{union.transformer_list[1][0]}__text_mean_{i:02d}" for i in range(32)]



def test_block_scaler_by_value_and_the_stack_it_feeds():
    from scipy import sparse

    from bertfeat.union import BlockScaler, stack

    X = np.array([[1, 2, 7], [3, 6, 7]])  # integers, and a constant column
    scaler = BlockScaler().fit(X)
    root3 = np.sqrt(3)
    np.testing.assert_allclose(scaler.mean_, [2.0, 4.0, 7.0])
    np.testing.assert_allclose(scaler.scale_, [root3, 2 * root3, root3])  # a constant column is divided by 1 * sqrt(3)
    Z = scaler.transform(np.array([[2, 4, 8], [4, 8, 7]]))
    assert Z.dtype == np.float64  # integers are scaled as floats, never cut back to integers
    np.testing.assert_allclose(Z, [[0.0, 0.0, 1 / root3], [2 / root3, 2 / root3, 0.0]])
    assert BlockScaler().fit_transform(X).dtype == np.float64
    with pytest.raises(ValueError) as info:
        scaler.transform(np.zeros((2, 4)))
    assert str(info.value) == "X has 4 columns, but BlockScaler was fitted with 3."
    stacked = stack(sparse.csr_matrix(np.eye(2)), np.array([[5.0], [6.0]], dtype=np.float32))
    assert stacked.format == "csr" and stacked.toarray().tolist() == [[1.0, 0.0, 5.0], [0.0, 1.0, 6.0]]


@pytest.mark.parametrize("missing", ["error", "zero"])
def test_the_code_of_tfidf_and_union_rows_word_for_word(missing):
    from bertfeat.probe import ProbeResult

    table = pd.DataFrame({"rank": [1, 2], "kind": ["tfidf", "union"], "candidate": ["TF-IDF", "TF-IDF + x"],
                          "n_features": [100, 132], "score": [0.9, 0.8], "std_err": [0.01, 0.02],
                          "params": [None, {"model": "default", "pooling": "mean", "missing": missing}]})
    result = ProbeResult(table=table, metric="roc_auc", task="classification", recommended=None, best=None,
                         num_layers=6, recommended_kind="tfidf", missing=missing)
    vectorizer = "TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)"
    if missing == "error":
        assert result.code(1) == f"from sklearn.feature_extraction.text import TfidfVectorizer\n\nfeatures = {vectorizer}\n"
        assert result.code(2) == (
            "from sklearn.feature_extraction.text import TfidfVectorizer\n"
            "from sklearn.pipeline import make_pipeline, make_union\n\n"
            "from bertfeat import BertEmbedder\nfrom bertfeat.union import BlockScaler\n\n"
            f"features = make_union(\n    {vectorizer},\n"
            "    make_pipeline(BertEmbedder(pooling='mean', missing='error'), BlockScaler()),\n)\n")
    else:
        tfidf = f"make_pipeline(MissingText(missing='zero'), {vectorizer})"
        assert result.code(1) == ("from sklearn.feature_extraction.text import TfidfVectorizer\n"
                                  "from sklearn.pipeline import make_pipeline\n\n"
                                  f"from bertfeat.union import MissingText\n\nfeatures = {tfidf}\n")
        assert result.code(2) == (
            "from sklearn.feature_extraction.text import TfidfVectorizer\n"
            "from sklearn.pipeline import make_pipeline, make_union\n\n"
            "from bertfeat import BertEmbedder\nfrom bertfeat.union import BlockScaler, MissingText\n\n"
            f"features = make_union(\n    {tfidf},\n"
            "    make_pipeline(BertEmbedder(pooling='mean', missing='zero'), BlockScaler()),\n)\n")


@pytest.fixture(scope=shared_scope)
def probed(tiny_bert):
    texts, y = labelled(60, seed=2, own=0.7)  # noisy: TF-IDF, unions and embeddings score apart
    return texts, y, probe(texts, y, model=tiny_bert, cv=3, poolings=("mean", "max"))


def test_the_ready_estimator_reproduces_the_probe_score(probed):
    from sklearn.model_selection import cross_val_score

    texts, y, result = probed
    t = result.table
    ranks = {result.recommended_rank, int(t.loc[t["kind"] == "union", "rank"].iloc[0]),
             int(t.loc[t["kind"] == "embedding", "rank"].iloc[0]), int(t.loc[t["kind"] == "tfidf", "rank"].iloc[0])}
    for rank in ranks:
        row = t[t["rank"] == rank].iloc[0]
        scores = cross_val_score(result.pipeline(rank), texts, y, cv=result.cv, scoring=result.metric)
        assert abs(scores.mean() - row["score"]) <= max(row["std_err"], 1e-9), (rank, row["candidate"])
        assert abs(scores.mean() - row["score"]) < 1e-3  # the same features, folds and model, up to float rounding
        # the standard error of the mean over the folds
        assert row["std_err"] == pytest.approx(scores.std(ddof=1) / np.sqrt(len(scores)), abs=2e-3)


def test_each_rows_pipeline_is_its_features_then_the_model_it_was_scored_with(probed):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    _, _, result = probed
    t = result.table
    kinds = (("embedding", [BertEmbedder, StandardScaler, LogisticRegression]),
             ("union", ["FeatureUnion", LogisticRegression]), ("tfidf", ["TfidfVectorizer", LogisticRegression]))
    for kind, steps in kinds:
        # a row of this kind other than the recommended one (TF-IDF has one row), so the wrong row's pipeline shows
        ranks = [int(r) for r in t.loc[t["kind"] == kind, "rank"] if r != result.recommended_rank or kind == "tfidf"]
        rank = ranks[-1]
        pipe = result.pipeline(rank)
        got = [type(step).__name__ for _, step in pipe.steps]
        assert got == [s if isinstance(s, str) else s.__name__ for s in steps]
        assert repr(pipe.steps[0][1]) == repr(result.estimator(rank))
        C = result.classifier_params["C_embedding" if kind == "embedding" else "C_sparse"]
        assert (pipe.steps[-1][1].C, pipe.steps[-1][1].max_iter) == (C, 2000)


def test_each_rows_columns_describe_its_candidate_and_the_model_facts_are_kept(probed, tiny_bert):
    texts, _, result = probed
    for row in result.table.to_dict("records"):
        if row["kind"] == "tfidf":
            assert all(pd.isna(row[k]) for k in ("layers", "layer_agg", "pooling", "layer", "n_layers"))
            continue
        p = row["params"]
        layers = p["layers"] if isinstance(p["layers"], list) else [p["layers"]]
        assert (row["layers"], row["layer_agg"], row["pooling"], row["n_layers"]) == (
            str(p["layers"]), p["layer_agg"], p["pooling"], len(layers))
        # "layer" is the single layer's absolute index (0 = embeddings), else None
        if len(layers) == 1:
            assert row["layer"] == layers[0] + 4
        else:
            assert pd.isna(row["layer"])
    info = result.models[tiny_bert]
    assert {k: info[k] for k in ("num_layers", "hidden_size", "texts", "unique", "cache_hits")} == {
        "num_layers": 3, "hidden_size": 32, "texts": len(texts), "unique": len(set(texts)), "cache_hits": 0}



@pytest.mark.parametrize("output", ["pandas", "polars"])
def test_the_probe_scores_alike_under_scikit_learns_pandas_or_polars_output(probed, tiny_bert, output):
    """``sklearn.set_config(transform_output="pandas")`` (or "polars"), a notebook's first line, made the probe's own
    embedding pass return a frame, and the probe failed after it with "'DataFrame' object has no attribute
    'reshape'". The setting is the user's for their features; the probe's work inside is its own."""
    import sklearn

    texts, y, result = probed
    with sklearn.config_context(transform_output=output):
        got = probe(texts, y, model=tiny_bert, cv=3, poolings=("mean", "max"))
        assert sklearn.get_config()["transform_output"] == output  # the caller's setting, as it was
    columns = ["kind", "candidate", "n_features", "score", "std_err"]
    pd.testing.assert_frame_equal(got.table[columns], result.table[columns])
    assert got.recommended == result.recommended

def test_candidate_labels_name_their_aggregation():
    assert Candidate(("mean",), (3, 4, 5, 6)).label(6) == "mean, mean of layers [-4, -3, -2, -1]"
    assert Candidate(("cls", "max"), (5, 6), "concat").label(6) == "cls+max, concat of layers [-2, -1]"
    assert Candidate(("max",), (2,)).label(6) == "max, layer 2"


def test_union_and_baseline_rows_by_value(probed, tiny_bert):
    _, _, result = probed
    t = result.table
    tfidf = t[t["kind"] == "tfidf"].iloc[0]
    assert tfidf["candidate"] == "TF-IDF (1-2 grams)" and pd.isna(tfidf["model"]) and pd.isna(tfidf["embed_s_per_1k"])
    assert result.baseline == {"name": "TF-IDF (1-2 grams) baseline", "score": tfidf["score"],
                               "std_err": tfidf["std_err"]}
    emb = t[t["kind"] == "embedding"]
    # the unions are built on the three best embedding rows (score, then fewer features), one each
    best3 = emb.sort_values(["score", "n_features"], ascending=[False, True]).head(3)
    unions = t[t["kind"] == "union"]
    assert sorted(unions["candidate"]) == sorted("TF-IDF + " + best3["candidate"])
    for _, u in unions.iterrows():
        e = emb[emb["candidate"] == u["candidate"].removeprefix("TF-IDF + ")].iloc[0]
        assert u["model"] == tiny_bert and u["params"] == e["params"]
        assert u["n_features"] == tfidf["n_features"] + e["n_features"]
        assert u["embed_s_per_1k"] == e["embed_s_per_1k"] == result.models[tiny_bert]["embed_s_per_1k"]
    info = result.models[tiny_bert]
    assert info["embed_s_per_1k"] == round(info["embed_seconds"] * 1000 / 60, 3)
    assert result.seconds["embed"] == info["embed_seconds"] == round(info["embed_seconds"], 2)


def test_code_leaves_out_the_default_model_and_repr_shows_the_table():
    from bertfeat.probe import ProbeResult

    table = pd.DataFrame({"rank": [1, 2], "kind": ["embedding", "union"], "candidate": ["mean, layer 6", "TF-IDF + x"],
                          "n_features": [384, 1000], "score": [0.9, 0.8], "std_err": [0.01, 0.02],
                          "params": [{"model": "default", "pooling": "mean"}, {"model": "/m", "pooling": "cls"}]})
    result = ProbeResult(table=table, metric="roc_auc", task="classification", recommended={"pooling": "mean"},
                         best=None, num_layers=6)
    assert result.code(1) == "from bertfeat import BertEmbedder\n\nfeatures = BertEmbedder(pooling='mean')\n"
    assert "BertEmbedder(model='/m', pooling='cls')" in result.code(2)
    shown = table[["kind", "candidate", "n_features", "score", "std_err"]]
    assert repr(result) == ("ProbeResult(classification, metric=roc_auc, recommended=embedding {'pooling': 'mean'})\n"
                            + shown.to_string(index=False))
    # a long table: its first ten rows
    long = ProbeResult(table=pd.concat([table] * 6, ignore_index=True), metric="r2", task="regression",
                       recommended=None, best=None, num_layers=6, recommended_kind="tfidf")
    assert repr(long) == ("ProbeResult(regression, metric=r2, recommended=tfidf None)\n"
                          + pd.concat([shown] * 6, ignore_index=True).head(10).to_string(index=False))
    # several models compared: the model column comes first
    models = ProbeResult(table=table.assign(model=["default", "/m"]), metric="roc_auc", task="classification",
                         recommended={"pooling": "mean"}, best=None, num_layers=6)
    assert repr(models).splitlines()[1:] == table.assign(model=["default", "/m"])[
        ["model", "kind", "candidate", "n_features", "score", "std_err"]].to_string(index=False).splitlines()


def test_the_estimator_kinds_and_their_code(probed):
    from sklearn.base import clone
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    texts, y, result = probed
    t = result.table
    for kind, cls in (("embedding", BertEmbedder), ("union", FeatureUnion), ("tfidf", TfidfVectorizer)):
        rank = int(t.loc[t["kind"] == kind, "rank"].iloc[0])
        est = result.estimator(rank)
        assert isinstance(est, cls) and not hasattr(est, "vocabulary_") and not hasattr(est, "recipe_")
        namespace = {}
        exec(result.code(rank), namespace)  # the printed code builds the same estimator
        assert repr(namespace["features"]) == repr(est) and namespace["features"].get_params().keys() == \
            est.get_params().keys()
        clone(est)
    union = result.estimator(int(t.loc[t["kind"] == "union", "rank"].iloc[0]))
    Z = union.fit_transform(texts)
    assert Z.shape[0] == len(texts) and Z.shape[1] > 32  # TF-IDF columns, then the tiny BERT's 32 (mean or max)
    with pytest.raises(ValueError, match="rank=999 is not in the table"):
        result.estimator(999)


def test_two_models_in_one_probe_share_a_cache_and_cost_one_pass_each(tiny_bert, tmp_path, monkeypatch):
    import bertfeat.backend
    from tests.conftest import build_tiny_bert

    other = build_tiny_bert(tmp_path / "other", num_layers=2, seed=1)
    calls = {}
    real = bertfeat.backend.TorchBackend.forward

    def counting(self, units, *a, **k):
        calls[self.spec.path] = calls.get(self.spec.path, 0) + len(units)
        return real(self, units, *a, **k)

    monkeypatch.setattr(bertfeat.backend.TorchBackend, "forward", counting)
    texts, y = labelled(45, seed=3)
    cache = str(tmp_path / "cache")
    result = probe(texts, y, model=[tiny_bert, other], cv=3, cache_dir=cache, unions=1, poolings=("mean",),
                   plot=str(tmp_path / "two.png"))
    assert sorted(calls.values()) == [len(set(texts))] * 2  # one pass per model
    t = result.table
    assert set(t["model"].dropna()) == {tiny_bert, other}
    assert (t[t["model"] == other]["kind"] == "embedding").sum() == len(default_candidates(2, ("mean",)))
    assert (t[t["model"] == tiny_bert]["kind"] == "embedding").sum() == len(default_candidates(3, ("mean",)))
    assert (t["kind"] == "union").sum() == 2 and (t["kind"] == "tfidf").sum() == 1
    assert t.loc[t["kind"] != "tfidf", "embed_s_per_1k"].gt(0).all()
    assert {info["num_layers"] for info in result.models.values()} == {2, 3}
    # each model's rows are labelled with its name, and each pass is timed under it
    for name in (tiny_bert, other):
        rows = t[t["model"] == name]
        assert rows["candidate"].str.startswith(f"{name}: ").all()
        union = rows[rows["kind"] == "union"].iloc[0]
        assert union["candidate"].startswith(f"{name}: TF-IDF + ")
    assert sorted(result.seconds) == ["embed " + n for n in sorted((tiny_bert, other))] + ["fits"]
    assert result.seconds[f"embed {other}"] == result.models[other]["embed_seconds"]
    calls.clear()
    again = probe(texts, y, model=[tiny_bert, other], cv=3, cache_dir=cache, unions=0, baseline=False,
                  poolings=("mean",))
    assert calls == {} and all(info["cache_hits"] == len(set(texts)) for info in again.models.values())
    # the recommended estimator carries the cache: its features come from the probe's rows, without the model
    emb_rank = int(t.loc[t["kind"] == "embedding", "rank"].iloc[0])
    result.estimator(emb_rank).fit_transform(texts)
    assert calls == {}
    assert (tmp_path / "two.png").read_bytes()[:4] == b"\x89PNG"


def test_probe_prefix_reaches_the_features_and_the_recommendation(tiny_bert):
    texts, _ = labelled(30, seed=4)
    y = np.random.default_rng(99).integers(0, 2, 30)  # labels unrelated to the words: scores move with the features
    plain = probe(texts, y, model=tiny_bert, cv=3, unions=0, baseline=False, poolings=("mean",))
    prefixed = probe(texts, y, model=tiny_bert, cv=3, unions=0, baseline=False, poolings=("mean",),
                     prefix="statistics ")
    assert plain.models[tiny_bert]["fingerprint"] != prefixed.models[tiny_bert]["fingerprint"]
    assert prefixed.recommended["prefix"] == "statistics " and "prefix" not in plain.recommended
    assert not np.allclose(plain.table.sort_values("candidate")["score"],
                           prefixed.table.sort_values("candidate")["score"])


def test_probe_argument_errors(tiny_bert):
    texts, y = labelled(10)
    with pytest.raises(ValueError, match="unions=-1 is not valid"):
        probe(texts, y, model=tiny_bert, unions=-1)
    with pytest.raises(ValueError, match="names a model twice"):
        probe(texts, y, model=[tiny_bert, tiny_bert])
    with pytest.raises(ValueError, match="model=3 is not valid"):
        probe(texts, y, model=3)


def _cands(cands):
    return [("+".join(c.pooling), c.layers, c.layer_agg) for c in cands]


def test_default_candidates_exactly():
    def per_pooling(p, top, means, concats):
        return ([(p, (layer,), "mean") for layer in range(top + 1)]
                + [(p, tuple(range(top - k + 1, top + 1)), "mean") for k in means]
                + [(p, tuple(range(top - k + 1, top + 1)), "concat") for k in concats])

    # 6 layers: means of the last 2, 3, 4 and all 6; concats of the last 2 and 4; both combinations, at the top
    # layer and over the last four
    assert _cands(default_candidates(6)) == (
        per_pooling("cls", 6, [2, 3, 4, 6], [2, 4]) + per_pooling("mean", 6, [2, 3, 4, 6], [2, 4])
        + per_pooling("max", 6, [2, 3, 4, 6], [2, 4])
        + [("cls+mean", (6,), "mean"), ("cls+mean", (3, 4, 5, 6), "mean"),
           ("mean+max", (6,), "mean"), ("mean+max", (3, 4, 5, 6), "mean")])
    # 4 layers, two poolings: the last four are all layers but the embeddings; no cls, so one combination
    assert _cands(default_candidates(4, ("mean", "max"))) == (
        per_pooling("mean", 4, [2, 3, 4], [2, 4]) + per_pooling("max", 4, [2, 3, 4], [2, 4])
        + [("mean+max", (4,), "mean"), ("mean+max", (1, 2, 3, 4), "mean")])
    # 3 layers: no mean or concat of 4, no combination over four layers
    assert _cands(default_candidates(3, ("mean", "max"))) == (
        per_pooling("mean", 3, [2, 3], [2]) + per_pooling("max", 3, [2, 3], [2]) + [("mean+max", (3,), "mean")])
    # one pooling: nothing to combine
    assert _cands(default_candidates(2, ("cls",))) == per_pooling("cls", 2, [2], [2])


@pytest.mark.parametrize("cv", [1, 0, True, 2.0, "3", None])
def test_cv_must_be_an_int_of_at_least_two(cv):
    from bertfeat.probe import _check_labels

    with pytest.raises(ValueError) as info:
        _check_labels(np.array([0, 1] * 5), "auto", cv)
    assert str(info.value) == f"cv={cv!r} is not valid: expected an int of at least 2 (cross-validation folds)."


def test_missing_labels_are_refused_naming_the_first_five_rows():
    from bertfeat.probe import _check_labels

    y = np.array([0, 1, None, 1, None, 0, None, None, None, None, 1, 0], dtype=object)
    with pytest.raises(ValueError) as info:
        _check_labels(y, "auto", 2)
    assert str(info.value) == (
        "the labels y have 6 missing value(s) (rows 2, 4, 6, 7, 8, ...); the probe scores features against a label "
        "for every text: drop those rows or fill their labels first.")
    with pytest.raises(ValueError, match=r"\(rows 1\);"):
        _check_labels(np.array([0.5, np.nan, 1.5, 2.5]), "regression", 2)
    with pytest.raises(ValueError, match=r"^y has shape \(4, 1\); pass one label per text"):
        _check_labels(np.zeros((4, 1)), "auto", 2)
    _check_labels(np.array([0, 1, 0, 1]), "auto", 2)  # complete labels pass


def test_rare_classes_and_mixed_label_types_are_refused_saying_what_to_do():
    from bertfeat.probe import _check_labels

    y = np.array(["a"] * 5 + ["b"] * 2)
    with pytest.raises(ValueError) as info:
        _check_labels(y, "auto", 3)
    assert str(info.value) == (
        "class(es) 'b' (2) of the labels y have fewer members than the 3 cross-validation folds, so some folds would "
        "not contain them and their scores would be undefined. Drop or merge the rare classes, or lower cv= to "
        "at most 2.")
    _check_labels(y, "auto", 2)  # two members are enough for two folds
    many = np.array([0] * 9 + [1, 2, 3, 4, 5, 6, 7])
    with pytest.raises(ValueError) as info:
        _check_labels(many, "classification", 2)
    assert str(info.value) == (
        "class(es) 1 (1), 2 (1), 3 (1), 4 (1), 5 (1), ... of the labels y have fewer members than the 2 "
        "cross-validation folds, so some folds would not contain them and their scores would be undefined. Drop or "
        "merge the rare classes (a class with one member cannot be cross-validated).")
    _check_labels(np.array(["a"] * 4), "classification", 5)  # one class: refused elsewhere, not as rare
    _check_labels(np.arange(11.0) + 0.5, "auto", 5)  # more than ten distinct numbers: a regression, no classes
    with pytest.raises(ValueError) as info:
        _check_labels(np.array([1, "a", 2, "b"], dtype=object), "classification", 2)
    assert str(info.value) == "the labels y mix types (int, str); pass labels of one type."


def test_a_rare_class_that_is_a_time_is_named_as_its_time_not_as_numpy_stores_it():
    # a datetime64[ns] class was named 1577923200000000000 (its nanoseconds, from .tolist()), a pandas time as
    # datetime.datetime(2020, 1, 2, 0, 0) or Timestamp('2020-01-02 00:00:00')
    from bertfeat.probe import _check_labels
    from bertfeat.probe_folds import COPIES_KEPT, _grouped

    days = ["2020-01-01"] * 10 + ["2020-01-02"] * 2
    for y in (np.array(days, dtype="datetime64[ns]"), np.asarray(pd.Series(pd.to_datetime(days))),
              np.array([pd.Timestamp(d) for d in days], dtype=object)):
        with pytest.raises(ValueError, match=r"^class\(es\) 2020-01-02[ T]00:00:00(\.0+)? \(2\) of the labels y have "):
            _check_labels(y, "auto", 3)
        with pytest.raises(ValueError, match=r"^class\(es\) 2020-01-02[ T]00:00:00(\.0+)? \(1\) of the labels y have "):
            _grouped("classification", y, 2, 0, np.array([0] * 5 + [1] * 5 + [2, 2]), kept=COPIES_KEPT)
    # other labels as before: a string quoted, a number as Python writes it
    with pytest.raises(ValueError, match=r"^class\(es\) 'b' \(1\) of the labels"):
        _check_labels(np.array(["a"] * 4 + ["b"]), "auto", 2)
    with pytest.raises(ValueError, match=r"^class\(es\) 2\.0 \(1\) of the labels"):
        _check_labels(np.array([1.0] * 4 + [2.0]), "auto", 2)


def test_the_embedding_options_reach_every_row_and_the_recommendation(tiny_bert):
    texts, y = labelled(24, seed=4, own=0.8)
    y = y + np.linspace(0, 0.5, len(y))  # a regression: r2 moves with any change in the features, unlike roc_auc
    texts[3] = None  # missing="zero": a zero vector, and an empty document for TF-IDF
    # texts longer than max_length: the chunking, its stride and the prefix all change the features
    options = dict(max_length=12, long_text="chunk", stride=3, normalize=True, prefix="query: ", dtype="float32",
                   missing="zero")
    result = probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), unions=1, **options)
    for params in result.table["params"]:
        if params is not None:
            assert {k: params[k] for k in options} == options and params["model"] == tiny_bert
    if result.recommended is not None:  # None when TF-IDF alone is recommended
        assert {k: result.recommended[k] for k in options} == options
    # the recommended estimator computes the features the probe scored
    emb = result.table[result.table["kind"] == "embedding"].iloc[0]
    est = result.estimator(int(emb["rank"]))
    assert {k: est.get_params()[k] for k in options} == options
    # and the probe scored the features these options give: its score is reproduced
    from sklearn.model_selection import cross_val_score

    row = result.table[result.table["kind"] == "embedding"].iloc[0]
    scores = cross_val_score(result.pipeline(int(row["rank"])), texts, y, cv=result.cv, scoring=result.metric,
                             error_score="raise")
    assert abs(scores.mean() - row["score"]) < 1e-3


def test_every_recommended_estimator_takes_the_missing_texts_the_probe_took(tiny_bert):
    from sklearn.model_selection import cross_val_score

    texts, y = labelled(24, seed=4, own=0.8)
    texts[3], texts[7], texts[11] = None, float("nan"), " \u200b "  # missing and blank: zero vectors, empty documents
    result = probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), unions=1, missing="zero")
    assert result.missing == "zero"
    t = result.table
    for kind in ("union", "tfidf", "embedding"):
        row = t[t["kind"] == kind].iloc[0]
        # each kind's pipeline fits on these texts and reproduces the score the probe gave it
        scores = cross_val_score(result.pipeline(int(row["rank"])), texts, y, cv=result.cv, scoring=result.metric,
                                 error_score="raise")
        assert abs(scores.mean() - row["score"]) < 1e-3, kind
        namespace = {}
        exec(result.code(int(row["rank"])), namespace)  # and so does the printed code's estimator
        assert repr(namespace["features"]) == repr(result.estimator(int(row["rank"])))


def test_missing_text_reads_texts_as_bertembedder_does_for_tfidf():
    import pickle

    from sklearn.base import clone

    from bertfeat.union import MissingText, tfidf

    texts = ["good film", None, float("nan"), pd.NA, "", " \t", "\u200b", "bad film"]
    assert MissingText(missing="zero").fit(texts).transform(texts) == ["good film", "", "", "", "", "", "", "bad film"]
    assert MissingText().transform(pd.Series(texts)) == MissingText().transform(np.array(texts, dtype=object))
    assert MissingText().fit_transform(pd.Series(texts, name="review"))[0] == "good film"
    assert MissingText().get_feature_names_out(["review"]).tolist() == ["review"]
    # missing="error" and values that are no text get the embedder's own errors, naming the row
    with pytest.raises(ValueError) as info:
        MissingText(missing="error").transform(["good", None])
    assert str(info.value).startswith("row 1 is missing (None) and missing='error'.")
    with pytest.raises(ValueError, match="row 0 is blank"):
        MissingText(missing="error").transform([" "])
    with pytest.raises(TypeError, match="row 2 \\(index 12\\) holds int 5, not a string"):
        MissingText().transform(pd.Series(["a", "b", 5], index=[10, 11, 12]))
    with pytest.raises(ValueError) as info:
        MissingText().transform(pd.DataFrame({"a": ["x"], "b": ["y"]}))
    assert str(info.value) == ("MissingText reads one column of texts, as TfidfVectorizer does; X has 2 columns "
                               "(['a', 'b']). Pass one, for example X['a'].")
    for bad in ("nan", "none", None):
        with pytest.raises(ValueError, match=f"missing={bad!r} is not valid"):
            MissingText(missing=bad).fit(["a"])
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(MissingText())  # stateless: nothing to fit
    est = MissingText(missing="zero")
    assert clone(est).get_params() == {"missing": "zero"} and pickle.loads(pickle.dumps(est)).missing == "zero"
    # the probe's TF-IDF: the vectorizer alone under missing="error", after MissingText otherwise
    assert type(tfidf()).__name__ == "TfidfVectorizer"
    pipe = tfidf("zero")
    assert [type(s).__name__ for _, s in pipe.steps] == ["MissingText", "TfidfVectorizer"]
    X = pipe.fit_transform(["good film", None, "good film", "bad film"])
    assert X.shape[0] == 4 and X[1].nnz == 0 and X[0].nnz > 0  # the missing text: an empty row



@pytest.mark.parametrize("output", ["pandas", "polars"])
def test_missing_text_gives_tfidf_its_texts_whatever_scikit_learns_output_setting(output):
    """``sklearn.set_config(transform_output="pandas")``, a notebook's first line, wrapped MissingText's texts in a
    frame of one column named 'text', which TfidfVectorizer iterates as its column names: one document, the word
    'text' (pandas: refused "max_df corresponds to < documents than min_df", or a vocabulary of one word where
    min_df=1; polars: a ShapeError). Its output is texts for the vectorizer, not features: never wrapped."""
    import sklearn
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import make_pipeline

    from bertfeat.union import MissingText, tfidf

    texts = ["good film", None, "good film", "bad film", " ", "a bad bad film"]
    read = ["good film", "", "good film", "bad film", "", "a bad bad film"]
    want = tfidf("zero").fit_transform(texts).toarray()
    with sklearn.config_context(transform_output=output):
        assert MissingText(missing="zero").fit_transform(texts) == read
        assert MissingText(missing="zero").fit(texts).transform(pd.Series(texts, name="review")) == read
        np.testing.assert_array_equal(tfidf("zero").fit_transform(texts).toarray(), want)
        plain = make_pipeline(MissingText(missing="zero"), TfidfVectorizer()).fit(texts)
        assert sorted(plain[-1].vocabulary_) == ["bad", "film", "good"]
    # asked of the step itself (a pipeline's or a union's set_output reaches it): still the texts
    assert MissingText(missing="zero").set_output(transform=output).fit_transform(texts) == read

@pytest.fixture
def no_work(monkeypatch):
    """The probe's two expensive steps (TF-IDF of the folds, the embedding pass) fail the test if they start."""
    import sys

    probe_module = sys.modules["bertfeat.probe"]  # the package's name "probe" is the function

    def work(*a, **k):
        raise AssertionError("a text or a choice was not checked before the work")

    monkeypatch.setattr(probe_module, "_tfidf_folds", work)
    monkeypatch.setattr(probe_module, "_embed_all_layers", work)


def test_the_probe_checks_every_text_before_any_work(tiny_bert, no_work):
    texts, y = labelled(12)
    texts[5] = None
    with pytest.raises(ValueError) as info:
        probe(texts, y, model=tiny_bert, cv=2)
    assert str(info.value).startswith("row 5 is missing (None) and missing='error'.")
    texts[5] = 3.5
    with pytest.raises(TypeError, match="row 5 holds float 3.5, not a string"):
        probe(texts, y, model=tiny_bert, cv=2, missing="zero")
    # a Series's own labels are named beside the position, as the embedder names them
    with pytest.raises(TypeError, match=r"^row 5 \(index 105\) holds float 3.5, not a string"):
        probe(pd.Series(texts, index=range(100, 112)), y, model=tiny_bert, cv=2, missing="zero")
    # missing="nan" would give rows of NaN, which no linear model of the probe (or the recommended pipeline) scores
    with pytest.raises(ValueError) as info:
        probe(labelled(12)[0], y, model=tiny_bert, cv=2, missing="nan")
    assert str(info.value) == (
        "missing='nan' is not valid for the probe: its linear models cannot score rows of NaN. Pass missing='zero' "
        "(a zero vector and an empty TF-IDF document for each missing text) or drop the missing texts first.")
    # two text columns: the probe scores one
    frame = pd.DataFrame({"a": labelled(12)[0], "b": labelled(12)[0]})
    with pytest.raises(ValueError) as info:
        probe(frame, y, model=tiny_bert, cv=2)
    assert str(info.value) == ("the probe scores one column of texts; texts has 2 columns (['a', 'b']). Pass one, "
                               "for example texts['a'].")


def test_probe_defaults_and_the_unions_refusal(tiny_bert):
    import inspect

    defaults = {k: p.default for k, p in inspect.signature(probe).parameters.items() if p.default is not p.empty}
    assert {k: defaults[k] for k in ("model", "normalize", "cv", "task", "baseline", "unions", "random_state",
                                     "progress", "missing", "dtype", "device")} == {
        "model": "default", "normalize": False, "cv": 5, "task": "auto", "baseline": True, "unions": 3,
        "random_state": 0, "progress": False, "missing": "error", "dtype": "auto", "device": "auto"}
    texts, y = labelled(10)
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError) as info:
            probe(texts, y, model=tiny_bert, unions=bad)
        assert str(info.value) == (f"unions={bad!r} is not valid: expected how many of each model's best candidates to "
                                   "score side by side with TF-IDF (an int >= 0; 0 for none).")


def test_numbers_with_more_than_ten_values_are_a_regression():
    from bertfeat.probe import _task

    assert _task(np.arange(10.0)) == "classification"  # ten distinct numbers: read as classes
    assert _task(np.arange(11.0)) == "regression"
    assert _task(np.arange(11.0) + 0j) == "regression"
    assert _task(np.arange(30)) == "classification"  # integers are classes


def test_tfidf_is_computed_only_when_a_baseline_or_a_union_needs_it(tiny_bert, monkeypatch):
    import sys

    probe_module = sys.modules["bertfeat.probe"]  # the package's name "probe" is the function
    calls = []
    real = probe_module._tfidf_folds
    monkeypatch.setattr(probe_module, "_tfidf_folds", lambda texts, folds, missing: calls.append(1) or real(texts, folds, missing))
    texts, y = labelled(12)
    result = probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), baseline=False, unions=0)
    assert calls == [] and set(result.table["kind"]) == {"embedding"}
    result = probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), baseline=False, unions=1)
    assert calls == [1] and sorted(result.table["kind"].unique()) == ["embedding", "union"]


# -- what probe() passes on, what it checks first, and the result it returns, by value ---------------------------------

TABLE_COLUMNS = ["rank", "model", "kind", "candidate", "layers", "layer_agg", "pooling", "layer", "n_layers",
                 "n_features", "score", "std_err", "embed_s_per_1k", "params"]


def _one_se_row(t):
    """The one-standard-error rule, computed here: of the rows within a standard error of the best, those of the
    fewest features, and of those the best score."""
    best = t.iloc[0]
    within = t[t["score"] >= best["score"] - best["std_err"]]
    fewest = within[within["n_features"] == within["n_features"].min()]
    return fewest[fewest["score"] == fewest["score"].max()].iloc[0], fewest


def test_the_result_names_its_best_and_recommended_rows(probed, tiny_bert):
    texts, y, result = probed
    t = result.table
    assert list(t.columns) == TABLE_COLUMNS
    assert_ranked(t)
    assert result.best == (None if t.iloc[0]["params"] is None else t.iloc[0]["params"])
    assert result.num_layers == 3 and result.missing == "error"
    rec, _ = _one_se_row(t)
    assert (result.recommended_rank, result.recommended_kind, result.recommended) == (
        int(rec["rank"]), rec["kind"], rec["params"])
    assert result.recommended_rank != 1  # not the best row: the rule shows
    # embeddings alone, scored by r2 (which ties less than roc_auc): many candidates of the fewest features (32),
    # scored apart, within a standard error of the best
    y = y + np.linspace(0, 0.5, len(y))
    result = probe(texts, y, model=tiny_bert, cv=3, poolings=("mean", "max"), baseline=False, unions=0)
    assert result.best == result.table.iloc[0]["params"]
    rec, fewest = _one_se_row(result.table)
    assert len(fewest) > 1 and fewest["score"].nunique() > 1  # so a wrong tie-break shows
    assert (result.recommended_rank, result.recommended_kind, result.recommended) == (
        int(rec["rank"]), rec["kind"], rec["params"])


def test_the_probe_with_every_default(capfd):
    # the bundled model, 5 stratified shuffled folds of seed 0, three unions and the TF-IDF baseline, no progress
    from sklearn.model_selection import StratifiedKFold

    texts, y = labelled(40, seed=1, own=0.8)
    result = probe(texts, y)
    assert isinstance(result.cv, StratifiedKFold)
    assert (result.cv.n_splits, result.cv.shuffle, result.cv.random_state) == (5, True, 0)
    assert list(result.models) == ["default"] and result.num_layers == 6 and result.task == "classification"
    t = result.table
    # every candidate but cls of layer 0, the embedding layer's one CLS vector for every text (left out, saying why)
    assert t["kind"].value_counts().to_dict() == {"embedding": len(default_candidates(6)) - 1, "union": 3, "tfidf": 1}
    assert result.left_out == [{"model": "default", "candidate": "cls, layer 0", "why": CONSTANT_WHY}]
    for row in t.to_dict("records"):
        if row["kind"] != "tfidf":  # only what the candidate sets, and the model: every other option at its default
            assert set(row["params"]) == {"model", "pooling", "layers", "layer_agg"}, row["params"]
            assert row["params"]["model"] == "default"
    assert "features = BertEmbedder(" in result.code(int(t.loc[t["kind"] == "embedding", "rank"].iloc[0]))
    assert "model=" not in result.code(int(t.loc[t["kind"] == "embedding", "rank"].iloc[0]))
    assert capfd.readouterr().err == ""  # progress=False


def test_probe_passes_every_option_to_its_one_embedding_pass(tiny_bert, tmp_path, monkeypatch):
    import shutil
    import sys

    import bertfeat.embedder

    prompted = tmp_path / "prompted"  # a model with a prompt, so prompt_name has somewhere to go
    shutil.copytree(tiny_bert, prompted)
    (prompted / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    probe_module = sys.modules["bertfeat.probe"]
    passes, normalized, pooled = [], [], []
    real_pass, real_features = probe_module._embed_all_layers, probe_module.candidate_features
    real_fit_transform = bertfeat.embedder.BertEmbedder.fit_transform

    def recording_pass(texts, model, poolings, params):
        passes.append((model, poolings, params))
        return real_pass(texts, model, poolings, params)

    def recording_features(blocks, poolings, cand, normalize):
        normalized.append(normalize)
        return real_features(blocks, poolings, cand, normalize)

    def recording_fit_transform(self, X, y=None):
        pooled.append((self.pooling, self.cache_all_layers) if self.cache_dir else self.pooling)
        return real_fit_transform(self, X, y)

    monkeypatch.setattr(probe_module, "_embed_all_layers", recording_pass)
    monkeypatch.setattr(probe_module, "candidate_features", recording_features)
    monkeypatch.setattr(bertfeat.embedder.BertEmbedder, "fit_transform", recording_fit_transform)
    texts, y = labelled(24, seed=4, own=0.8)
    options = dict(max_length=12, long_text="chunk", stride=3, prompt_name="query", dtype="float32", missing="zero")
    result = probe(texts, y, model=str(prompted), cv=2, poolings=("mean", "max"), unions=1, normalize=True,
                   device="cpu", batch_tokens=512, progress=True, **options)
    assert passes == [(str(prompted), ("mean", "max"), dict(
        options, prefix=None, device="cpu", batch_tokens=512, cache_dir=None, progress=True))]
    assert pooled == ["mean+max"]  # without a cache, only the poolings asked for are computed
    assert normalized and all(n is True for n in normalized)
    for params in result.table["params"].dropna():
        assert {k: params[k] for k in options} == options and params["normalize"] is True
    # with a cache the pass fills every pooling's rows, the ones BertEmbedder(cache_all_layers=True) reads
    passes.clear(), pooled.clear()
    probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), unions=0, baseline=False, cache_dir=str(tmp_path / "c"))
    assert pooled == [("mean", True)] and passes[0][2]["cache_dir"] == str(tmp_path / "c")
    later = BertEmbedder(tiny_bert, pooling="cls+max", layers=[1, 2], cache_dir=str(tmp_path / "c"),
                         cache_all_layers=True)
    later.fit_transform(texts)
    assert later.stats_.cache_hits == later.stats_.unique > 0


def test_the_probe_times_its_parts_with_one_clock(tiny_bert, monkeypatch):
    import sys
    import types

    probe_module = sys.modules["bertfeat.probe"]
    # each call to the clock advances it by the next step; a part's time is the step its end call takes
    steps = iter([100.0, 0.011, 5.0, 2.3456, 5.0, 0.102, 5.0, 0.2003])
    now = [0.0]

    def clock():
        now[0] += next(steps)
        return now[0]

    monkeypatch.setattr(probe_module, "time", types.SimpleNamespace(perf_counter=clock))
    texts, y = labelled(24, seed=4, own=0.8)
    result = probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), unions=1)
    info = result.models[tiny_bert]
    assert info["embed_seconds"] == 2.35 and info["embed_s_per_1k"] == round(2.35 * 1000 / 24, 3) == 97.917
    # the fits: TF-IDF (0.011), the embedding rows and unions (0.102), the baseline (0.2003)
    assert result.seconds == {"embed": 2.35, "fits": 0.31}
    assert set(result.table.loc[result.table["kind"] != "tfidf", "embed_s_per_1k"]) == {97.917}


def test_every_choice_is_checked_before_any_work(tiny_bert, no_work, tmp_path):
    import torch

    texts, y = labelled(12)
    refused = [
        (dict(max_length=0), ValueError, "max_length=0 is not valid"),
        (dict(batch_tokens=0), ValueError, "batch_tokens=0 is not valid"),
        (dict(model=[tiny_bert, str(tmp_path / "absent")]), Exception, ""),
        (dict(task="bogus"), ValueError, "task='bogus' is not valid: expected 'auto', 'classification' or "
                                         "'regression'."),
    ]
    if not torch.cuda.is_available():
        refused.append((dict(device="cuda"), ValueError, "device='cuda' was asked for, but torch sees no CUDA GPU"))
    for options, error, message in refused:
        with pytest.raises(error) as info:
            probe(texts, y, **{"model": tiny_bert, "cv": 2, **options})
        assert str(info.value).startswith(message), options
    with pytest.raises(ValueError) as info:
        probe(texts, np.zeros(12), model=tiny_bert, cv=2)
    assert str(info.value) == "y has a single class; the probe needs at least two classes to score features."
    # a class too rare for the folds, with the task named: refused before the work too
    rare = np.array([0] * 6 + [1] * 5 + [2])
    with pytest.raises(ValueError, match=r"^class\(es\) 2 \(1\) of the labels y have fewer members than the 2"):
        probe(texts, rare, model=tiny_bert, cv=2, task="classification")


def test_the_task_named_is_the_task_scored(tiny_bert):
    from sklearn.model_selection import KFold

    texts, y = labelled(24, seed=4, own=0.8)  # labels 0 and 1: classes, unless told otherwise
    result = probe(texts, y, model=tiny_bert, cv=3, poolings=("mean",), unions=0, baseline=False, task="regression")
    assert (result.task, result.metric) == ("regression", "r2")
    assert isinstance(result.cv, KFold) and (result.cv.n_splits, result.cv.random_state) == (3, 0)
    result = probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), unions=0, baseline=False, random_state=7)
    assert (result.task, result.cv.n_splits, result.cv.random_state) == ("classification", 2, 7)


def test_embeddings_without_signal_leave_tfidf_recommended(tiny_bert, monkeypatch):
    import sys

    from sklearn.feature_extraction.text import TfidfVectorizer

    probe_module = sys.modules["bertfeat.probe"]
    real = probe_module._embed_all_layers

    def noise(*a, **k):  # the model's facts, but vectors that say nothing about the labels
        blocks, poolings, info = real(*a, **k)
        return np.random.default_rng(0).normal(size=blocks.shape).astype(np.float32), poolings, info

    monkeypatch.setattr(probe_module, "_embed_all_layers", noise)
    texts, y = labelled(40, seed=3)  # the words give the label away: TF-IDF scores 1.0 in every fold
    result = probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), unions=1)
    tfidf_row = result.table[result.table["kind"] == "tfidf"].iloc[0]
    assert tfidf_row["score"] == 1.0  # the union ties with it, but has more features
    assert (result.recommended_kind, result.recommended, result.recommended_rank) == ("tfidf", None,
                                                                                       int(tfidf_row["rank"]))
    assert isinstance(result.estimator(), TfidfVectorizer) and result.best == (
        None if result.table.iloc[0]["kind"] == "tfidf" else result.table.iloc[0]["params"])
    no_baseline = probe(texts, y, model=tiny_bert, cv=2, poolings=("mean",), unions=0, baseline=False)
    assert no_baseline.baseline is None and no_baseline.recommended_kind == "embedding"


def test_candidate_params_and_models_given_as_paths(tiny_bert):
    from pathlib import Path

    from bertfeat.probe import _model_list

    assert Candidate(("mean",), (3,)).params(6) == {"pooling": "mean", "layers": -4, "layer_agg": "mean"}
    assert Candidate(("cls", "max"), (5, 6), "concat").params(6) == {"pooling": "cls+max", "layers": [-2, -1],
                                                                     "layer_agg": "concat"}
    assert _model_list(Path(tiny_bert)) == [tiny_bert] and _model_list(["default", Path(tiny_bert)]) == [
        "default", tiny_bert]
    assert _model_list(("a", "b")) == ["a", "b"]
    for bad in (3, [], ["default", 3], None, {"default"}):
        with pytest.raises(ValueError) as info:
            _model_list(bad)
        assert str(info.value) == (f"model={bad!r} is not valid: expected a model name or path, or a list of them such "
                                   "as ['default', 'sentence-transformers/all-mpnet-base-v2'].")
    with pytest.raises(ValueError, match=r"^model=\['a', 'a'\] names a model twice; name each model once.$"):
        _model_list(["a", "a"])


def test_label_checks_count_and_show_exactly_what_is_wrong():
    from bertfeat.probe import _check_labels

    five = np.array([np.nan] * 5 + [1.0] * 5)
    with pytest.raises(ValueError, match=r"\(rows 0, 1, 2, 3, 4\); the probe"):  # five shown: no "..."
        _check_labels(five, "auto", 2)
    with pytest.raises(ValueError) as info:
        _check_labels(np.array([[1.0, np.nan], [0.0, 1.0]]), "auto", 2)
    assert str(info.value) == "y has shape (2, 2); pass one label per text (a 1-D array, list or Series)."
    five_rare = np.array([0] * 9 + [1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match=r"^class\(es\) 1 \(1\), 2 \(1\), 3 \(1\), 4 \(1\), 5 \(1\) of the"):
        _check_labels(five_rare, "classification", 2)
    with pytest.raises(ValueError, match=r"^class\(es\) 1 \(1\), 2 \(1\), 3 \(1\), 4 \(1\), 5 \(1\), \.\.\. of"):
        _check_labels(np.append(five_rare, 6), "classification", 2)
    # numbers named classes are checked as classes, though more than ten of them would read as a regression
    with pytest.raises(ValueError, match=r"^class\(es\) 0\.5 \(1\), 1\.5 \(1\)"):
        _check_labels(np.arange(11.0) + 0.5, "classification", 2)


def test_block_scaler_carries_the_embedders_names_under_pandas_output(tiny_bert):
    """set_output(transform="pandas") named the scaled columns x0, x1, ... while get_feature_names_out gave the
    embedder's names: fit never recorded the names of the DataFrame it was given."""
    from sklearn.pipeline import make_pipeline

    from bertfeat.union import BlockScaler

    texts, _ = labelled(12)
    pipe = make_pipeline(BertEmbedder(tiny_bert, pooling="mean"), BlockScaler()).set_output(transform="pandas")
    out = pipe.fit_transform(pd.Series(texts, name="review"))
    assert list(out.columns) == list(pipe.get_feature_names_out()) == [f"review_mean_{i:02d}" for i in range(32)]
    scaler = pipe[-1]
    assert list(scaler.feature_names_in_) == list(out.columns)
    with pytest.raises(ValueError, match="feature names"):
        scaler.transform(out.rename(columns={"review_mean_00": "other"}))


# -- found by a probe hunt, 2026-11-25 -----------------------------------------------------------------------------


class NoModel:
    """Fails the test if the probe reaches its embedding pass: every refusal here must come before any work."""

    def __init__(self, monkeypatch):
        import importlib

        def refuse(*a, **kw):
            raise AssertionError("the probe embedded before refusing")

        # the module, not the function bertfeat exports under the same name
        monkeypatch.setattr(importlib.import_module("bertfeat.probe"), "_embed_all_layers", refuse)


@pytest.mark.parametrize("y, task, message", [
    # a fold of one text: R^2 undefined, every score NaN, then an IndexError after all the work
    (np.random.default_rng(0).normal(size=15), "auto", r"at least 20 texts for cv=10: two in every fold"),
    (np.full(30, 2.5), "regression", r"the labels y are all 2\.5"),  # scored a perfect 1.0 everywhere
    (["a", "b"] * 15, "regression", r"task='regression' needs numeric labels"),  # failed after the model ran
    (np.r_[np.arange(29.0), np.inf], "auto", r"not finite \(row 29"),
    # classes (ten or fewer values) with inf among them: scikit-learn's "Input y contains infinity" after the model ran
    (np.r_[[0.0, 1.0] * 13, [np.inf] * 4], "auto",
     r"^the labels y are not finite \(row 26: inf\); scikit-learn's classifiers take finite labels only: drop or fix"),
    ([str(i % 2) if i % 3 else i % 2 for i in range(30)], "auto", r"the labels y mix types \(int, str\)"),  # 1 == "1"
])
def test_labels_the_probe_cannot_score_are_refused_before_any_work(tiny_bert, monkeypatch, y, task, message):
    NoModel(monkeypatch)
    texts, _ = labelled(len(y), seed=2)
    with pytest.raises(ValueError, match=message):
        probe(texts, y, model=tiny_bert, cv=10 if len(y) == 15 else 3, task=task, poolings=("mean",), unions=0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(poolings=("mean", "avg")), r"poolings=\('mean', 'avg'\) is not valid: expected some of \['cls', 'mean', 'max'\]"),
    (dict(poolings="mean+max"), r"poolings='mean\+max' is not valid: expected some of"),
    (dict(poolings=()), r"poolings=\(\) is not valid"),
    (dict(random_state=None), r"random_state=None is not valid: expected an int"),
])
def test_options_the_probe_would_misread_are_refused_before_any_work(tiny_bert, monkeypatch, kwargs, message):
    NoModel(monkeypatch)
    texts, y = labelled(24)
    with pytest.raises(ValueError, match=message):
        probe(texts, y, model=tiny_bert, cv=3, unions=0, **kwargs)


def test_the_code_of_a_row_runs_whatever_types_the_options_came_in(tiny_bert, tmp_path):
    """A pathlib cache_dir or numpy ints went into the code as PosixPath(...) and np.int64(16): NameError."""
    import pathlib

    texts, y = labelled(24, own=0.8)
    result = probe(texts, y, model=tiny_bert, cv=3, poolings=("mean",), unions=1, baseline=False,
                   cache_dir=pathlib.Path(tmp_path / "c"), max_length=np.int64(16), long_text="chunk",
                   stride=np.int64(3))
    for rank in result.table["rank"]:
        scope = {}
        exec(result.code(int(rank)), scope)  # noqa: S102
        params = result.table.loc[result.table["rank"] == rank, "params"].iloc[0]
        assert type(params["max_length"]) is int and type(params["cache_dir"]) is str


def test_tfidf_with_no_words_says_how_to_score_the_embeddings_alone(tiny_bert, monkeypatch):
    texts = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]  # TF-IDF drops one-letter words: no vocabulary
    y = [0, 1, 0, 1, 0, 1, 0, 1, 0]
    with pytest.raises(ValueError, match=r"TF-IDF finds no words .*baseline=False and unions=0 to score the "
                                         r"embeddings alone\.$"):
        probe(texts, y, model=tiny_bert, cv=3, poolings=("mean",))
    result = probe(texts, y, model=tiny_bert, cv=3, poolings=("mean",), baseline=False, unions=0)
    assert set(result.table["kind"]) == {"embedding"}


def test_copies_of_a_text_stay_in_one_fold(tiny_bert):
    """A text repeated with its label was split across folds, so TF-IDF scored pure noise at ROC AUC 1.0."""
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(3)
    base = [" ".join(rng.choice(WORDS_POS + WORDS_NEG, 3)) + f" story {i}" for i in range(20)]
    noise = rng.integers(0, 2, 20)
    texts, y = [t for t in base for _ in range(3)], np.repeat(noise, 3)
    result = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=1)
    for train, test in result.cv.split(texts, y):
        assert not {texts[i] for i in train} & {texts[i] for i in test}
    tfidf = result.table[result.table["kind"] == "tfidf"].iloc[0]
    assert tfidf["score"] < 0.9  # noise: 1.0 when copies crossed folds
    for rank in result.table["rank"]:  # and every row is reproduced on the splitter it reports
        row = result.table[result.table["rank"] == rank].iloc[0]
        scores = cross_val_score(result.pipeline(int(rank)), texts, y, cv=result.cv, scoring=result.metric)
        assert abs(scores.mean() - row["score"]) < 1e-6


@pytest.mark.parametrize("variant", [str.upper, lambda t: "  " + t.capitalize().replace(" ", "   ") + "!!\n"])
def test_texts_that_differ_only_in_case_spacing_or_punctuation_stay_in_one_fold(tiny_bert, variant):
    """Copies were texts equal character for character: a review scraped twice, once in capitals or with another
    space or full stop, fell in two folds, and TF-IDF (which lowercases and reads words only) scored pure noise at
    ROC AUC 1.0, the union 0.99 (session 10)."""
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(300)]
    base = [" ".join(rng.choice(vocab, 6)) for _ in range(40)]
    noise = rng.integers(0, 2, 40)
    texts, y = base + [variant(t) for t in base], np.concatenate([noise, noise])
    assert len(set(texts)) == 80
    result = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=1)
    for train, test in result.cv.split(texts, y):
        assert not {t.casefold().strip(" .!\n") for t in np.asarray(texts)[train]} & {
            t.casefold().strip(" .!\n") for t in np.asarray(texts)[test]}
    t = result.table
    assert t[t["kind"] == "tfidf"]["score"].iloc[0] < 0.75 and t[t["kind"] == "union"]["score"].iloc[0] < 0.75


def test_texts_of_no_word_are_copies_only_when_equal_but_for_case_and_spacing_and_every_word_counts():
    from bertfeat.probe_folds import _text_groups

    groups = _text_groups(["!!", "?", " !! ", "a", "A", "the cat", "The  CAT.", None, None, "b", "item 1", "item 2"])
    assert groups[0] == groups[2] and groups[3] == groups[4] and groups[5] == groups[6]
    # missing texts are no copies of each other, and a word of one letter or digit counts
    assert len({groups[i] for i in (0, 1, 3, 5, 7, 8, 9, 10, 11)}) == 9


@pytest.mark.parametrize("baseline, unions", [(False, 0), (True, 1)])
def test_texts_all_missing_are_refused_not_ranked_as_chance(tiny_bert, monkeypatch, baseline, unions):
    """Under missing='zero' a column of no text (None and blanks: the wrong column, an unfilled one) gave a table of
    0.5 scores and a recommendation, silently; with the TF-IDF its refusal advised baseline=False, which led there."""
    NoModel(monkeypatch)
    texts = [None, " ", "", np.nan, "\u200b"] * 6
    with pytest.raises(ValueError, match=r"^all 30 texts are missing or blank, so every candidate would be scored on "
                                         r"zero vectors and the probe would rank noise: check that texts is the column"):
        probe(texts, np.arange(30) % 2, model=tiny_bert, cv=3, poolings=("mean",), missing="zero",
              baseline=baseline, unions=unions)


def test_a_regression_with_copies_chooses_its_penalty_leaving_each_texts_copies_out_together(tiny_bert):
    """RidgeCV chose alpha by leave-one-out inside each training fold, where a text's copies predicted it: on noise
    labels, every text three times, it chose alpha 0.01 (10,000 for the texts once each) and the embeddings scored
    R^2 near -11 where the honest figure is near -0.5 (session 10)."""
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(0)
    base = [" ".join(rng.choice(WORDS_POS + WORDS_NEG, 4)) + f" tail{i}" for i in range(20)]
    texts, y = [t for t in base for _ in range(3)], np.repeat(rng.normal(size=20), 3)
    result = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), baseline=False, unions=0)
    assert result.metric == "r2" and (result.table["score"] > -2).all(), result.table["score"].min()
    for rank in (1, len(result.table)):  # the reported pipeline reproduces the rows, its alpha from whole texts
        pipe = result.pipeline(rank)
        scores = cross_val_score(pipe, texts, y, cv=result.cv, scoring="r2")
        assert abs(scores.mean() - result.table["score"].iloc[rank - 1]) < 1e-6
        assert pipe.fit(texts, y)[-1].alpha_ == max(result.classifier_params["alphas"])


@pytest.mark.parametrize("dense", [True, False])
def test_distinct_rows_ridge_is_ridgecv_fitted_on_all_rows_with_copies_left_out_together(dense):
    from scipy import sparse
    from sklearn.linear_model import RidgeCV

    from bertfeat.probe_ridge import DistinctRowsRidgeCV

    rng = np.random.default_rng(1)
    X1, y1 = rng.normal(size=(30, 6)), rng.normal(size=30)
    X, y = np.repeat(X1, [1, 2, 3] * 10, axis=0), np.repeat(y1, [1, 2, 3] * 10) + rng.normal(size=60) * 0.1
    as_given = (lambda a: a) if dense else sparse.csr_matrix
    alphas = (0.01, 1.0, 100.0, 10000.0)
    once = DistinctRowsRidgeCV(alphas=alphas).fit(as_given(X1), y1)  # no copies: RidgeCV itself
    plain = RidgeCV(alphas=alphas).fit(as_given(X1), y1)
    assert once.alpha_ == plain.alpha_ and np.allclose(once.predict(as_given(X1)), plain.predict(as_given(X1)))
    copies = DistinctRowsRidgeCV(alphas=alphas).fit(as_given(X), y)
    assert copies.alpha_ == 10000.0 and RidgeCV(alphas=alphas).fit(as_given(X), y).alpha_ <= 100.0  # copies leak
    same = RidgeCV(alphas=[copies.alpha_]).fit(as_given(X), y)  # at its alpha, the ridge of every row
    np.testing.assert_allclose(copies.coef_, same.coef_, atol=1e-10)
    np.testing.assert_allclose(copies.predict(as_given(X1)), same.predict(as_given(X1)), atol=1e-10)


@pytest.mark.parametrize("width", [8, 160])  # fewer features than rows, and more (the Gram matrix's way)
@pytest.mark.parametrize("dense", [True, False])
def test_distinct_rows_ridge_given_groups_chooses_alpha_leaving_each_group_out_together(dense, width):
    """(found by a hunt, session 11) With the probe's ``groups``, the ridge still chose alpha by leave-one-out inside
    a training fold: a customer's reviews (near-identical rows, one label) were each predicted from the customer's
    others, so a small alpha looked best where leaving each customer out chooses 10,000. Given ``groups`` it leaves
    each group out together, its errors those of refitting without the group; without groups nothing changes."""
    from scipy import sparse
    from sklearn.linear_model import Ridge, RidgeCV

    from bertfeat.probe_ridge import DistinctRowsRidgeCV, group_loo_errors

    rng = np.random.default_rng(2)
    g = np.repeat(np.arange(20), 4)
    X = (rng.normal(size=(20, width)) / np.sqrt(width / 8))[g] + 0.05 * rng.normal(size=(80, width))
    y = rng.normal(size=20)[g] + 0.05 * rng.normal(size=80)
    as_given = (lambda a: a) if dense else sparse.csr_matrix
    alphas = (0.01, 1.0, 100.0, 10000.0)
    alone = DistinctRowsRidgeCV(alphas=alphas).fit(as_given(X), y)
    grouped = DistinctRowsRidgeCV(alphas=alphas).fit(as_given(X), y, groups=[f"c{k}" for k in g])
    assert alone.alpha_ == 1.0 and grouped.alpha_ == 10000.0
    same = RidgeCV(alphas=[grouped.alpha_]).fit(as_given(X), y)  # at its alpha, the ridge of every row
    np.testing.assert_allclose(grouped.predict(as_given(X)), same.predict(as_given(X)), atol=1e-10)
    for alpha in alphas:
        refits = sum(((Ridge(alpha=alpha).fit(X[g != k], y[g != k]).predict(X[g == k]) - y[g == k]) ** 2).sum()
                     for k in range(20))
        np.testing.assert_allclose(group_loo_errors(as_given(X), y, g, [alpha]), [refits], rtol=1e-7)
    each = DistinctRowsRidgeCV(alphas=alphas).fit(as_given(X), y, groups=np.arange(80))  # groups of one: LOO
    assert each.alpha_ == alone.alpha_ == RidgeCV(alphas=alphas).fit(as_given(X), y).alpha_
    np.testing.assert_allclose(each.coef_, alone.coef_, atol=1e-10)


def test_a_regression_with_groups_chooses_each_ridge_alpha_leaving_groups_out_and_cross_val_score_agrees(tiny_bert):
    """The probe hands its groups (joined by copies) to the ridge of every regression row, TF-IDF and union too:
    each row is cross_val_score of its pipeline on ``result.cv`` with the groups as the ridge's fit parameter, and
    some row scores otherwise without them (the alpha leave-one-out chose)."""
    from sklearn.model_selection import cross_val_score

    texts, _, groups = customers(16, 4, seed=0)
    rng = np.random.default_rng(5)
    y = np.repeat(rng.normal(size=16), 4) + 0.01 * rng.normal(size=64)  # each customer's own number
    result = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=1, groups=groups)
    assert set(result.table["kind"]) == {"tfidf", "union", "embedding"}
    moved = 0
    for rank in result.table["rank"]:
        pipe = result.pipeline(int(rank))
        fit_groups = {f"{pipe.steps[-1][0]}__groups": np.asarray(groups)}
        kept = cross_val_score(pipe, texts, y, cv=result.cv, scoring="r2", params=fit_groups).mean()
        assert abs(kept - result.table[result.table["rank"] == rank]["score"].iloc[0]) < 1e-6
        moved += abs(kept - cross_val_score(pipe, texts, y, cv=result.cv, scoring="r2").mean()) > 0.01
    assert moved >= len(result.table) // 2, moved



def test_a_regression_with_groups_scores_alike_with_scikit_learns_metadata_routing_on(tiny_bert):
    """Under ``sklearn.set_config(enable_metadata_routing=True)`` the probe handed each ridge its groups as
    ``distinctrowsridgecv__groups``, which a routing Pipeline refuses: "Pipeline.fit got unexpected argument(s)
    {'distinctrowsridgecv__groups'}, which are not routed to any object", after the embedding pass. The setting is
    the caller's for their own pipelines; the probe's fits inside are its own. A row is scored again in routing's
    spelling as the README says."""
    import sklearn
    from sklearn.model_selection import cross_val_score

    texts, _, groups = customers(8, 4, seed=0)
    rng = np.random.default_rng(5)
    y = np.repeat(rng.normal(size=8), 4) + 0.01 * rng.normal(size=32)  # each customer's own number
    want = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=1, groups=groups)
    with sklearn.config_context(enable_metadata_routing=True):
        got = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=1, groups=groups)
        assert sklearn.get_config()["enable_metadata_routing"]  # the caller's setting, as it was
        pipe = got.pipeline(1)
        pipe.steps[-1][1].set_fit_request(groups=True)
        again = cross_val_score(pipe, texts, y, cv=got.cv, scoring="r2", params={"groups": np.asarray(groups)})
    columns = ["kind", "candidate", "n_features", "score", "std_err"]
    pd.testing.assert_frame_equal(got.table[columns], want.table[columns])
    assert abs(again.mean() - got.table["score"].iloc[0]) < 1e-6

def test_the_probe_commands_json_records_what_the_scores_were_measured_with(tiny_bert, tmp_path):
    """The JSON held the scores but not their folds' number and seed, the linear models' settings or the TF-IDF's
    (session 10): a reader could not measure them again. Measured again from the file alone, in Python, they agree."""
    from bertfeat.cli import main
    from bertfeat.probe import RIDGE_ALPHAS

    texts, y = labelled(30, own=0.8)
    texts[3] = texts[7]  # a copy: its folds are the copies' own
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--model", tiny_bert,
                 "--cv", "3", "--unions", "1", "--json", str(tmp_path / "p.json")]) == 0
    report = json.loads((tmp_path / "p.json").read_text())
    assert report["folds"] == {"n_splits": 3, "random_state": 0, "copies_kept_together": True, "n_groups": None,
                               "n_fold_groups": 29, "group_col": None}
    assert report["tfidf"] == {"ngram_range": [1, 2], "min_df": 2, "sublinear_tf": True}
    assert report["linear_model"] == {"C_embedding": 0.05, "C_sparse": 10.0, "alphas": list(RIDGE_ALPHAS)}
    again = probe(texts, y, model=tiny_bert, cv=report["folds"]["n_splits"], unions=1,
                  random_state=report["folds"]["random_state"])
    assert again.random_state == 0
    assert [(r["candidate"], r["score"]) for r in report["table"]] == list(zip(again.table["candidate"],
                                                                             again.table["score"]))


def test_distinct_rows_ridge_of_rows_all_alike_warns_nothing_and_predicts_the_mean():
    """Features that say nothing (the CLS of layer 0, the same for every text, standardized to zeros) are one distinct
    row: weighted leave-one-out of one row divided by zero, and R's bf_probe() showed 20 RuntimeWarnings."""
    import warnings

    from bertfeat.probe import RIDGE_ALPHAS
    from bertfeat.probe_ridge import DistinctRowsRidgeCV

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ridge = DistinctRowsRidgeCV(alphas=RIDGE_ALPHAS).fit(np.zeros((6, 4), np.float32), np.arange(6.0))
    np.testing.assert_allclose(ridge.predict(np.ones((2, 4), np.float32)), [2.5, 2.5], atol=1e-6)


def test_distinct_rows_ridge_leaves_copies_out_as_many_rows_as_features_and_reads_labels_as_numbers():
    """(mutation testing, session 11) as many distinct rows as features is no sign of "no copies"; labels held as
    Python objects are numbers to it, as to RidgeCV; a width it was not fitted on is refused in its own name."""
    from sklearn.linear_model import RidgeCV

    from bertfeat.probe_ridge import DistinctRowsRidgeCV

    rng = np.random.default_rng(1)
    alphas = (0.01, 1.0, 100.0, 10000.0)
    X1, y1 = rng.normal(size=(6, 6)), rng.normal(size=6)
    X, y = np.repeat(X1, 3, axis=0), np.repeat(y1, 3) + rng.normal(size=18) * 0.1
    ridge = DistinctRowsRidgeCV(alphas=alphas).fit(X, y)
    assert ridge.alpha_ == 10000.0 and RidgeCV(alphas=alphas).fit(X, y).alpha_ == 0.01  # the copies leak there
    as_objects = DistinctRowsRidgeCV(alphas=alphas).fit(X, y.astype(object))
    assert as_objects.alpha_ == ridge.alpha_
    np.testing.assert_allclose(as_objects.coef_, ridge.coef_, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"^X has 3 features, but DistinctRowsRidgeCV is expecting 6 features as "
                                         r"input\.$"):
        ridge.predict(X[:, :3])


def test_a_binary_label_as_ints_bools_or_strings_gives_the_same_scores_and_pick(tiny_bert):
    texts, y = labelled(24, own=0.8)
    results = [probe(texts, labels, model=tiny_bert, cv=3, poolings=("mean",), unions=1)
               for labels in (y, y.astype(bool), np.where(y, "pos", "neg"))]
    for result in results:
        assert result.metric == "roc_auc" and result.recommended_rank == results[0].recommended_rank
        np.testing.assert_allclose(result.table["score"], results[0].table["score"], rtol=0, atol=1e-12)
        assert result.table["candidate"].tolist() == results[0].table["candidate"].tolist()


def test_copies_kept_in_one_fold_leave_no_fold_without_a_class(tiny_bert):
    """With copies, StratifiedGroupKFold balanced the classes only as the copies allowed: here its seeded shuffle left
    a test fold of class 0 alone, ROC AUC was undefined (NaN) in every row, and the probe failed with "IndexError:
    single positional indexer is out-of-bounds" after the embedding pass and every fit (session 10)."""
    from sklearn.model_selection import StratifiedGroupKFold

    from bertfeat.probe_folds import _text_groups

    copy_of = [3, 5, 6, 3, 1, 3, 6, 1, 7, 1, 0, 8, 4, 0, 2, 4, 5, 8, 5]
    texts = [f"{WORDS_POS[g % 6]} {WORDS_NEG[g % 5]} story {g}" for g in copy_of]
    y = np.asarray([0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0])
    seeded = StratifiedGroupKFold(5, shuffle=True, random_state=0).split(y, y, _text_groups(texts))
    assert any(set(y[test]) != {0, 1} for _, test in seeded)  # the case: the seeded shuffle alone leaves such a fold
    result = probe(texts, y, model=tiny_bert, cv=5, poolings=("mean",), unions=1)
    folds = list(result.cv.split(texts, y))
    assert len(folds) == 5 and all(set(y[test]) == {0, 1} for _, test in folds)
    assert all(not {texts[i] for i in train} & {texts[i] for i in test} for train, test in folds)
    assert result.table["score"].notna().all() and result.metric == "roc_auc"
    again = probe(texts, y, model=tiny_bert, cv=5, poolings=("mean",), unions=1)  # the same folds, the same scores
    assert [t.tolist() for _, t in again.cv.split(texts, y)] == [t.tolist() for _, t in folds]
    assert again.table["score"].tolist() == result.table["score"].tolist()


def test_copies_no_shuffle_spreads_over_every_fold_are_refused_before_any_work(tiny_bert, monkeypatch):
    """Five texts of class 1 for five folds, four of them copied with class 0 labels too: no shuffle of
    StratifiedGroupKFold found folds each holding both classes, and the probe failed after all its work."""
    NoModel(monkeypatch)
    copy_of = [6, 8, 0, 8, 4, 3, 6, 5, 2, 2, 6, 5, 4, 3, 6, 3, 2, 8, 2, 2, 6, 5]
    y = [0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0]
    texts = [f"{WORDS_POS[g % 6]} {WORDS_NEG[g % 5]} story {g}" for g in copy_of]
    with pytest.raises(ValueError, match=r"^with the copies of each text kept in one fold, 50 shuffles into 5 "
                                         r"cross-validation folds each left a fold without some class \(fold \d, the "
                                         r"last\), where the score is undefined; lower cv=, or drop copies"):
        probe(texts, np.asarray(y), model=tiny_bert, cv=5, poolings=("mean",), unions=1)
    monkeypatch.undo()  # and lowering cv, as it says, scores
    assert probe(texts, np.asarray(y), model=tiny_bert, cv=3, poolings=("mean",), unions=0).table["score"].notna().all()


# -- found by a probe hunt on the labels users bring, 2026-11-26 ---------------------------------------------------


@pytest.mark.parametrize("y, task", [
    (np.where(labelled(30)[1], 4.5, 0.5), "auto"),  # half stars: two distinct numbers, read as classes
    (np.arange(30) % 3 + 0.25, "classification"),
])
def test_fractional_numbers_read_as_classes_are_refused_before_any_work(tiny_bert, monkeypatch, y, task):
    """Ten or fewer distinct numbers are classes, but scikit-learn refuses fractional ones: the probe failed with
    its splitter's "Supported target types are: ('binary', 'multiclass'). Got 'continuous' instead.", no word of
    what to do."""
    NoModel(monkeypatch)
    texts, _ = labelled(len(y), seed=2)
    with pytest.raises(ValueError) as info:
        probe(texts, y, model=tiny_bert, cv=3, task=task, poolings=("mean",), unions=0)
    assert str(info.value).startswith("the labels y are read as classes (") and str(info.value).endswith(
        "of them are fractional numbers such as 0.25, which scikit-learn's classifiers refuse. Pass task='regression' "
        "to score them as numbers, or give the classes as strings (y.astype(str)) to score them "
        "as classes.".replace("0.25", "0.5" if task == "auto" else "0.25"))
    monkeypatch.undo()  # and the two ways out it names both run
    assert probe(texts, y.astype(str), model=tiny_bert, cv=3, poolings=("mean",), unions=0).task == "classification"
    whole = probe(texts, np.round(y + 0.5), model=tiny_bert, cv=3, task=task, poolings=("mean",), unions=0)
    assert whole.task == "classification"  # whole numbers as floats are classes scikit-learn takes


def test_a_regression_whose_copies_leave_a_fold_of_one_text_is_refused_before_any_work(tiny_bert, monkeypatch):
    """20 texts pass the two-per-fold count for cv=10, but with one text copied 11 times (the copies stay in one
    fold) the other nine folds held one text each: R^2 undefined, and an IndexError after the embedding pass."""
    NoModel(monkeypatch)
    texts = ["the same review"] * 11 + labelled(9, seed=2)[0]
    y = np.r_[np.linspace(0.0, 1.0, 11), np.arange(9.0) * 3 + 0.1]
    with pytest.raises(ValueError) as info:
        probe(texts, y, model=tiny_bert, cv=10, task="regression", poolings=("mean",), unions=0)
    assert str(info.value) == (
        "a regression needs two texts in every fold (R^2 of a one-text fold is undefined), and with the copies of a "
        "text kept in one fold, 9 of the 10 folds hold one text; lower cv= or add texts.")
    monkeypatch.undo()
    result = probe(texts, y, model=tiny_bert, cv=5, task="regression", poolings=("mean",), unions=0, baseline=False)
    assert all(len(test) >= 2 for _, test in result.cv.split(texts, y)) and np.isfinite(result.table["score"]).all()


@pytest.mark.parametrize("y", ["label", 3, {0: 1, 1: 0}, {0, 1}, (v for v in [0, 1])])
def test_labels_that_are_no_sequence_of_labels_are_refused_saying_what_to_pass(tiny_bert, monkeypatch, y):
    """A column name (as for --label-col), a dict, a set or a generator failed with a bare TypeError (`len() of
    unsized object`, `'int' object is not iterable`)."""
    NoModel(monkeypatch)
    texts, _ = labelled(12)
    if y == "label":  # beside the frame it names a column of: refused for the label, not for the frame's column
        texts = pd.DataFrame({"text": texts, "label": [0, 1] * 6})
    with pytest.raises(ValueError) as info:
        probe(texts, y, model=tiny_bert, cv=3, poolings=("mean",), unions=0)
    assert str(info.value) == (
        f"y={y!r} is not valid: pass the labels themselves, one per text, as a 1-D array, list or Series (such as "
        "df['label'], not the column's name).")


def test_the_probe_commands_json_is_json_that_any_reader_takes(tiny_bert, tmp_path):
    """The table's empty cells (a TF-IDF row's model, pooling, layer; a union's layer) went into the file as NaN,
    which is no JSON (jq, JavaScript's JSON.parse refuse it), and layer numbers as 3.0."""
    from bertfeat.cli import main

    texts, y = labelled(30, own=0.8)
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--model", tiny_bert,
                 "--cv", "3", "--unions", "1", "--json", str(tmp_path / "p.json")]) == 0

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    report = json.loads((tmp_path / "p.json").read_text(), parse_constant=refuse)
    rows = {row["kind"]: row for row in reversed(report["table"])}
    assert {k: rows["tfidf"][k] for k in ("model", "pooling", "layer", "n_layers", "layers", "embed_s_per_1k")} == dict(
        model=None, pooling=None, layer=None, n_layers=None, layers=None, embed_s_per_1k=None)
    single = [row for row in report["table"] if row["kind"] == "embedding" and row["n_layers"] == 1]
    assert single and all(type(row["layer"]) is int and type(row["n_layers"]) is int for row in single)


def test_whole_numbers_read_as_rare_classes_are_told_they_may_be_a_regression(tiny_bert, monkeypatch):
    """Prices or counts in whole numbers are classes under task='auto' (integers are classes): the refusal of their
    many rare classes said only to drop or merge them, never that task='regression' scores them as numbers."""
    NoModel(monkeypatch)
    texts, _ = labelled(30, seed=2)
    prices = np.arange(30) * 7 + 100
    with pytest.raises(ValueError) as info:
        probe(texts, prices, model=tiny_bert, cv=3, poolings=("mean",), unions=0)
    assert str(info.value).endswith(
        "Drop or merge the rare classes (a class with one member cannot be cross-validated); or, if the labels "
        "are numbers to predict, pass task='regression'.")
    with pytest.raises(ValueError) as info:  # two classes of ints, one of them rare: classes, no hint
        probe(texts, np.r_[np.zeros(28, int), 1, 1], model=tiny_bert, cv=3, poolings=("mean",), unions=0)
    assert str(info.value).endswith("or lower cv= to at most 2.")
    with pytest.raises(ValueError) as info:  # classes asked for by name: they are classes
        probe(texts, prices, model=tiny_bert, cv=3, task="classification", poolings=("mean",), unions=0)
    assert str(info.value).endswith("(a class with one member cannot be cross-validated).")
    with pytest.raises(ValueError) as info:  # labels that are no numbers: no regression to offer
        probe(texts, prices.astype(str), model=tiny_bert, cv=3, poolings=("mean",), unions=0)
    assert str(info.value).endswith("(a class with one member cannot be cross-validated).")
    monkeypatch.undo()
    assert probe(texts, prices, model=tiny_bert, cv=3, task="regression", poolings=("mean",), unions=0,
                 baseline=False).metric == "r2"


def test_a_regression_fold_whose_labels_are_all_one_value_is_refused_before_any_work(tiny_bert, monkeypatch):
    """A target of mostly zeros (27 of 30): three of the five test folds held only zeros, where R^2 is undefined and
    scikit-learn scores 0.0, so every row's mean and standard error were made of those zeros, silently."""
    NoModel(monkeypatch)
    texts, _ = labelled(30, seed=2)
    y = np.zeros(30)
    y[[3, 11, 25]] = [1.0, 2.5, 4.0]
    with pytest.raises(ValueError) as info:
        probe(texts, y, model=tiny_bert, cv=5, task="regression", poolings=("mean",), unions=0)
    assert str(info.value) == (
        "3 of the 5 cross-validation folds hold test labels that are all one value (fold 1: all 0), where R^2 is "
        "undefined (scikit-learn would score it 0 or 1); lower cv=, or add texts with other labels.")
    y[[0, 7, 14, 21, 28]] = 0.5  # what "lower cv" cannot fix, more labels that differ can
    monkeypatch.undo()
    result = probe(texts, y, model=tiny_bert, cv=5, task="regression", poolings=("mean",), unions=0, baseline=False)
    assert all(len(np.unique(y[test])) > 1 for _, test in result.cv.split(texts, y))


def test_labels_whose_index_orders_the_same_rows_otherwise_are_refused_not_paired_by_position(tiny_bert, monkeypatch):
    """Texts shuffled (df.sample) beside labels in the frame's order: the probe paired row i with row i, each text
    with another text's label, where pandas (and the user) would pair them by index; the scores were noise."""
    NoModel(monkeypatch)
    texts, y = labelled(24)
    frame = pd.DataFrame({"text": texts, "label": y})
    shuffled = frame.sample(frac=1, random_state=0)
    for x in (shuffled["text"], shuffled[["text"]]):
        with pytest.raises(ValueError) as info:
            probe(x, frame["label"], model=tiny_bert, cv=3, poolings=("mean",), unions=0)
        assert str(info.value) == (
            "texts and y hold the same index labels in another order, and the probe pairs them by position (row i "
            "with row i), not by index: align them first (y.loc[texts.index]), or pass y.to_numpy() if their "
            "positions pair them.")
    monkeypatch.undo()  # both ways out run; indexes of other labels (a frame filtered, then reset) pair by position
    for labels in (frame["label"].loc[shuffled.index], frame["label"].to_numpy()[shuffled.index],
                   pd.Series(shuffled["label"].to_numpy(), index=np.arange(24) + 100)):
        assert probe(shuffled["text"], labels, model=tiny_bert, cv=3, poolings=("mean",), unions=0,
                     baseline=False).table["score"].max() == 1.0  # each text with its own label: separable


def test_the_probe_command_reads_a_decimal_label_column_as_numbers(tiny_bert, tmp_path, capsys):
    """A parquet decimal column (prices from a database) reached the probe as Decimal objects: read as 30 classes of
    one member under --task auto, and refused under --task regression as not numeric, with advice ("convert them to
    numbers") a command-line user cannot follow."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    from bertfeat.cli import main

    texts, _ = labelled(30, seed=2, own=0.8)
    prices = [decimal.Decimal(i * 7 + 100) / 4 for i in range(30)]
    pq.write_table(pa.table({"text": texts, "price": pa.array(prices, pa.decimal128(10, 2))}), tmp_path / "d.parquet")
    args = ["probe", str(tmp_path / "d.parquet"), "--text-col", "text", "--label-col", "price", "--model", tiny_bert,
            "--cv", "3", "--unions", "0", "--no-baseline", "--json", str(tmp_path / "p.json")]
    for task in ("auto", "regression"):
        assert main(args + ["--task", task]) == 0, capsys.readouterr().err
        report = json.loads((tmp_path / "p.json").read_text())
        assert (report["task"], report["metric"]) == ("regression", "r2")


def test_decimal_labels_are_numbers_in_the_python_api_as_in_the_command(tiny_bert, monkeypatch):
    """decimal.Decimal labels (a database's prices, read by pandas or SQLAlchemy as Decimal objects) were classes
    under task='auto', 30 classes of one member, and "not numeric" under task='regression'; the command line reads
    a decimal column as numbers (test_the_probe_command_reads_a_decimal_label_column_as_numbers)."""
    import decimal

    texts, _ = labelled(30, seed=2, own=0.8)
    prices = [decimal.Decimal(i * 7 + 100) / 4 for i in range(30)]
    mixed = [float(p) if i % 2 else p for i, p in enumerate(prices)]  # Decimal beside float: numbers too
    for y in (prices, pd.Series(prices), np.asarray(prices, dtype=object), mixed):
        for task in ("auto", "regression"):
            result = probe(texts, y, model=tiny_bert, cv=3, task=task, poolings=("mean",), unions=0, baseline=False)
            assert (result.task, result.metric) == ("regression", "r2")
    NoModel(monkeypatch)
    halves = [decimal.Decimal(i % 4) / 2 for i in range(30)]  # four values: classes, and fractional, as floats are
    with pytest.raises(ValueError, match=r"are read as classes .* fractional numbers such as 0.5"):
        probe(texts, halves, model=tiny_bert, cv=3, poolings=("mean",), unions=0)
    with pytest.raises(ValueError, match=r"the labels y are not finite \(row 3: inf\)"):
        probe(texts, prices[:3] + [decimal.Decimal("Infinity")] + prices[4:], model=tiny_bert, cv=3,
              task="regression", poolings=("mean",), unions=0)


def test_missing_texts_are_spread_across_folds_not_kept_together_as_copies(tiny_bert):
    """Under missing="zero" every None was read as a copy of the text "None": all 16 missing texts of 48 fell in one
    test fold, scored by models that never saw a missing text, and no other fold held one (blank strings alike)."""
    texts, y = labelled(48, seed=5, own=0.9)
    for i in range(0, 48, 3):
        texts[i] = None if i % 2 else (np.nan if i % 4 else "  ")
    texts[1] = texts[4] = texts[7] = "the same review"  # copies still stay together
    result = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=0, missing="zero")
    gone = np.array([not isinstance(t, str) or not t.strip() for t in texts])
    for train, test in result.cv.split(texts, y):
        assert 2 <= gone[test].sum() <= 6 and gone[train].sum() >= 10
        assert len({texts[i] for i in test} & {"the same review"}) == 0 or {1, 4, 7} <= set(test)


def test_output_files_that_cannot_be_written_are_refused_before_any_work(tiny_bert, no_work, tmp_path, capsys):
    """A plot or a --json in a folder that does not exist, or a plot in a format matplotlib lacks, failed after the
    embedding pass and every fit: the work was lost for a file name."""
    from bertfeat.cli import main

    texts, y = labelled(12)
    for plot, message in [(tmp_path / "absent" / "p.png", f"plot={str(tmp_path / 'absent' / 'p.png')!r} cannot be "
                           f"written: its folder {str(tmp_path / 'absent')!r} does not exist; create it first."),
                          (tmp_path / "p.pdfx", f"plot={str(tmp_path / 'p.pdfx')!r} cannot be written: matplotlib "
                           "saves no '.pdfx' files; name a .png, .svg or .pdf file.")]:
        with pytest.raises(ValueError) as info:
            probe(texts, y, model=tiny_bert, cv=2, plot=str(plot))
        assert str(info.value) == message
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    json_path = str(tmp_path / "absent" / "p.json")
    assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--model", tiny_bert,
                 "--cv", "2", "--json", json_path]) == 2
    assert capsys.readouterr().err.strip() == (
        f"bertfeat probe: error: --json {json_path!r} cannot be written: its folder {str(tmp_path / 'absent')!r} "
        "does not exist; create it first.")


def test_output_files_in_a_read_only_folder_are_refused_before_any_work(tiny_bert, no_work, tmp_path, capsys,
                                                                       monkeypatch):
    """A --json or a plot in a folder that cannot be written (a read-only mount, a folder of another user) failed
    after the embedding pass and every fit, with "[Errno 30] Read-only file system" (the work lost for a file name),
    where ``bertfeat embed`` refuses such an --out before its work."""
    import os
    import sys

    from bertfeat.cli import main

    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access  # root writes a folder of mode 555: the refusal is os.access's, as on a read-only mount
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if os.fspath(p) == str(ro) else real_access(p, mode,
                                                                                                           **kw))
    texts, y = labelled(12)
    with pytest.raises(PermissionError) as info:
        probe(texts, y, model=tiny_bert, cv=2, plot=str(ro / "p.png"))
    assert str(info.value) == (f"plot={str(ro / 'p.png')!r} cannot be written: its folder {str(ro)!r} is not writable "
                               "(read-only filesystem or no permission); write the plot elsewhere.")
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    for flag, what in (("--json", "JSON"), ("--plot", "plot")):
        path = str(ro / f"p.{'json' if flag == '--json' else 'png'}")
        assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--model",
                     tiny_bert, "--cv", "2", flag, path]) == 2
        assert capsys.readouterr().err == (f"bertfeat probe: error: {flag} {path!r} cannot be written: its folder "
                                           f"{str(ro)!r} is not writable (read-only filesystem or no permission); "
                                           f"write the {what} elsewhere.\n")
    assert os.listdir(ro) == []
    (ro / "own.json").write_text("{}")  # a file one may write in a folder one may not (and /dev/stdout): written
    sys.modules["bertfeat.probe"]._check_writable(str(ro / "own.json"), "--json")


def _chance_by_hand(metric, y, folds):
    """A model that ignores the texts, scored by hand on each fold: the training part's most frequent class (accuracy),
    one score for every text (ROC AUC), the training part's mean label (R^2)."""
    scores = []
    for train, test in folds:
        if metric == "accuracy":
            values, counts = np.unique(y[train], return_counts=True)
            scores.append(np.mean(y[test] == values[np.argmax(counts)]))
        elif metric == "roc_auc":
            scores.append(0.5)
        else:
            scores.append(1 - np.sum((y[test] - y[train].mean()) ** 2) / np.sum((y[test] - y[test].mean()) ** 2))
    return np.mean(scores), np.std(scores, ddof=1) / np.sqrt(len(scores))


def noise_texts(n, seed=0):
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(200)]
    return [" ".join(rng.choice(vocab, 5)) for _ in range(n)]


@pytest.mark.parametrize("labels, metric", [
    # ten classes, the first 60% of the texts: 0.60 accuracy is what always answering it scores
    (np.repeat(np.arange(10), [108] + [8] * 9), "accuracy"),
    (np.repeat([0, 1], [114, 6]), "roc_auc"),  # 95/5: ROC AUC's chance is 0.5 whatever the balance
    (np.random.default_rng(5).normal(size=120), "r2"),
])
def test_every_score_comes_with_the_chance_a_model_ignoring_the_texts_scores(tiny_bert, tmp_path, capsys, labels,
                                                                            metric):
    """The table gave scores alone: on a 10-class task whose majority class holds 60% of the texts, every row scored
    about 0.60 accuracy, which reads as a fair model, and always answering the majority class scores the same; nothing
    said so (session 11). The chance score is now measured on the probe's own folds, given in the result, printed
    beside the table (with a note when no row beats it by a standard error), in the JSON and in repr."""
    from bertfeat.cli import main

    texts = noise_texts(len(labels))
    result = probe(texts, labels, model=tiny_bert, cv=5, poolings=("mean",), unions=0)
    assert result.metric == metric
    score, std_err = _chance_by_hand(metric, labels, list(result.cv.split(texts, labels)))
    assert result.chance["score"] == pytest.approx(score, abs=1e-12)
    assert result.chance["std_err"] == pytest.approx(std_err, abs=1e-12)
    if metric == "accuracy":
        assert result.chance["score"] == pytest.approx(0.6, abs=0.01)
        assert result.chance["name"] == "chance (always the training folds' most frequent class)"
    assert result.chance["beaten"] is False  # noise texts: nothing beats chance (tests/test_probe_chance.py)
    assert result.table.iloc[0]["score"] <= result.chance["bar"]
    assert f"{result.chance['name']}: {score:.4f} +/- {std_err:.4f}" in repr(result)
    assert "\nnote: no row beats chance clearly: the best, rank 1, scores" in repr(result)

    pd.DataFrame({"text": texts, "label": labels}).to_csv(tmp_path / "d.csv", index=False)
    assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--model", tiny_bert,
                 "--unions", "0", "--json", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert f"{result.chance['name']}: {score:.4f} +/- {std_err:.4f}\n" in out
    assert "\nnote: no row beats chance clearly: the best, rank 1, scores" in out
    saved = json.loads((tmp_path / "p.json").read_text())["chance"]  # the command's table: every pooling, its bar
    assert {k: saved[k] for k in ("name", "score", "std_err")} == pytest.approx(
        {k: result.chance[k] for k in ("name", "score", "std_err")})
    assert saved["beaten"] is False and saved["bar"] > saved["score"]


def test_no_note_of_chance_where_the_best_row_beats_it(probed, tiny_bert):
    texts, y, result = probed
    assert result.chance == {"name": "chance (every text scored alike)", "score": 0.5, "std_err": 0.0,
                             "beaten": True, "bar": pytest.approx(result.chance["bar"])}
    assert result.table.iloc[0]["score"] > result.chance["bar"] > 0.5
    assert repr(result).endswith("\nchance (every text scored alike): 0.5000 +/- 0.0000")


def test_the_probe_command_draws_its_folds_from_the_seed_it_is_given(tiny_bert, tmp_path):
    """The command had no --random-state: every run drew the folds of seed 0, so a user could neither draw others to
    see how far the table's order holds nor match a Python probe run with another seed (session 11)."""
    from bertfeat.cli import main

    texts, y = labelled(30, own=0.8)
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    reports = {}
    for seed in (7, 7, 0):
        path = tmp_path / f"p{seed}.json"
        assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--model",
                     tiny_bert, "--cv", "3", "--unions", "1", "--random-state", str(seed), "--json", str(path)]) == 0
        reports.setdefault(seed, []).append(json.loads(path.read_text()))
    scored = {seed: [[(r["candidate"], r["score"], r["std_err"]) for r in report["table"]] for report in runs]
              for seed, runs in reports.items()}
    assert reports[7][0]["folds"]["random_state"] == 7 and scored[7][0] == scored[7][1]
    python = probe(texts, y, model=tiny_bert, cv=3, unions=1, random_state=7)
    assert [(r["candidate"], r["score"]) for r in reports[7][0]["table"]] == list(zip(python.table["candidate"],
                                                                                   python.table["score"]))
    assert sorted(s for _, s, _ in scored[7][0]) != sorted(s for _, s, _ in scored[0][0])


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_a_seed_numpy_cannot_take_is_refused_naming_the_range_before_any_work(tiny_bert, monkeypatch, seed):
    NoModel(monkeypatch)
    texts, y = labelled(12)
    with pytest.raises(ValueError, match=r"^random_state=%d is not valid: expected an int from 0 to 2\*\*32 - 1 "
                                         r"\(the folds' shuffle seed\)" % seed):
        probe(texts, y, model=tiny_bert, cv=2, random_state=seed)


def customers(n_customers=16, per=4, seed=0):
    """Reviews of customers who each sign with their own name and give one label, drawn at random: within a
    customer the label is known from the name; across customers the texts say nothing about it."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(300)]
    label = rng.permutation(np.arange(n_customers) % 2)
    texts, y, groups = [], [], []
    for c in range(n_customers):
        for _ in range(per):
            texts.append(f"{' '.join(rng.choice(vocab, 4))} signed customer{c} zz{c}")
            y.append(label[c])
            groups.append(f"c{c}")
    return texts, np.asarray(y), groups


def test_a_group_split_across_folds_inflates_every_score_and_groups_keep_each_in_one_fold(tiny_bert):
    """No way to keep a group's texts in one fold (session 11): a customer's reviews share their signature, so with
    labels that are the customer's and nothing else, TF-IDF scored ROC AUC about 1.0 where a new customer's reviews
    are read at chance. With ``groups`` every customer falls in one fold, and every row is reproduced by
    cross_val_score on the folds the result reports."""
    from sklearn.model_selection import cross_val_score

    texts, y, groups = customers()
    split = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=1)
    kept = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=1, groups=groups)
    tfidf = {name: r.table[r.table["kind"] == "tfidf"]["score"].iloc[0] for name, r in [("split", split),
                                                                                       ("kept", kept)]}
    assert tfidf["split"] > 0.95 and tfidf["kept"] < 0.75
    g = np.asarray(groups)
    for train, test in kept.cv.split(texts, y):
        assert not set(g[train]) & set(g[test])
    assert kept.folds == {"n_splits": 4, "random_state": 0, "copies_kept_together": False, "n_groups": 16,
                          "n_fold_groups": 16}
    assert split.folds["n_groups"] is None and split.folds["n_fold_groups"] is None
    for rank in kept.table["rank"]:
        row = kept.table[kept.table["rank"] == rank].iloc[0]
        scores = cross_val_score(kept.pipeline(int(rank)), texts, y, cv=kept.cv, scoring=kept.metric)
        assert abs(scores.mean() - row["score"]) < 1e-6
    again = probe(texts, y, model=tiny_bert, cv=4, poolings=("mean",), unions=1, groups=np.asarray(groups))
    assert again.table["score"].tolist() == kept.table["score"].tolist()  # the same seed: the same folds and scores


def test_groups_joined_by_a_copy_of_a_text_fall_in_one_fold_and_a_regression_keeps_its_groups(tiny_bert):
    texts, y, groups = customers(12, 3, seed=1)
    texts[5] = texts[30].upper()  # customer 1's text is a copy of customer 10's: the two customers are one unit
    noise = np.random.default_rng(2).normal(size=len(texts))
    result = probe(texts, noise, model=tiny_bert, cv=3, poolings=("mean",), unions=0, baseline=False, groups=groups)
    assert result.task == "regression" and result.folds["n_groups"] == 12 and result.folds["n_fold_groups"] == 11
    g = np.asarray(groups)
    folds = list(result.cv.split(texts, noise))
    for train, test in folds:
        assert not set(g[train]) & set(g[test])
    assert [k for k, (_, test) in enumerate(folds) if {"c1", "c10"} <= set(g[test])]


@pytest.mark.parametrize("groups, message", [
    (["a"] * 11 + [None], r"^groups has 1 missing value\(s\) \(rows 11\); the folds keep each group's texts together "
                          r"and cannot place a text of no group: fill them \(a text alone"),
    ([float("nan"), "a"] * 6, r"^groups has 6 missing value\(s\) \(rows 0, 2, 4, 6, 8, \.\.\.\)"),
    (["a", "b"] * 5, r"^groups has 10 values but there are 12 texts; pass one group per text\.$"),
    ("customer", r"^groups='customer' is not valid: pass one group per text"),
    (["a", "b", "c"] * 4, r"^the texts hold 3 groups, fewer than the 4 cross-validation folds \(each group, with the "
                          r"copies of a text, stays in one fold\); lower cv= or pass finer groups\.$"),
    # class 1's six texts in three groups: three for four folds
    ([f"g{i // 2}" if i < 6 else f"h{i}" for i in range(12)],
     r"^class\(es\) 1 \(3\) of the labels y have fewer groups holding them than the 4 cross-validation folds"),
])
def test_groups_the_folds_cannot_keep_are_refused_saying_what_to_do_before_any_work(tiny_bert, monkeypatch, groups,
                                                                                     message):
    NoModel(monkeypatch)
    texts = noise_texts(12)
    y = np.asarray([1] * 6 + [0] * 6)
    with pytest.raises(ValueError, match=message):
        probe(texts, y, model=tiny_bert, cv=4, groups=groups)


def test_the_probe_command_keeps_the_groups_of_its_group_column_in_one_fold(tiny_bert, tmp_path, capsys):
    from bertfeat.cli import main

    texts, y, groups = customers(12, 3)
    pd.DataFrame({"text": texts, "label": y, "customer": groups}).to_csv(tmp_path / "d.csv", index=False)
    assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--group-col",
                 "customer", "--model", tiny_bert, "--cv", "3", "--unions", "1", "--json", str(tmp_path / "p.json")]
                ) == 0
    assert capsys.readouterr().out.startswith("bertfeat probe: 36 texts in 12 groups of customer, each in one fold, ")
    report = json.loads((tmp_path / "p.json").read_text())
    assert report["folds"] == {"n_splits": 3, "random_state": 0, "copies_kept_together": False, "n_groups": 12,
                               "n_fold_groups": 12, "group_col": "customer"}
    python = probe(texts, y, model=tiny_bert, cv=3, unions=1, groups=groups)
    assert [(r["candidate"], r["score"]) for r in report["table"]] == list(zip(python.table["candidate"],
                                                                             python.table["score"]))
    pd.DataFrame({"text": texts, "label": y, "customer": groups[:-1] + [None]}).to_csv(tmp_path / "e.csv",
                                                                                     index=False)
    assert main(["probe", str(tmp_path / "e.csv"), "--text-col", "text", "--label-col", "label", "--group-col",
                 "customer", "--model", tiny_bert, "--cv", "3"]) == 2
    assert "groups has 1 missing value(s) (rows 35)" in capsys.readouterr().err


def test_the_probe_command_says_when_copies_of_a_text_join_its_groups(tiny_bert, tmp_path, capsys):
    """The command's first line said "in 12 groups of customer, each in one fold" where a text repeated across four
    customers had joined them into 9 units, which only --json's n_fold_groups told (session 11 review)."""
    from bertfeat.cli import main

    texts, y, groups = customers(12, 3)
    for k in (0, 3, 6, 9):  # one text of each of customers 0 to 3, all the same words
        texts[k] = "Great product!"
    pd.DataFrame({"text": texts, "label": y, "customer": groups}).to_csv(tmp_path / "d.csv", index=False)
    assert main(["probe", str(tmp_path / "d.csv"), "--text-col", "text", "--label-col", "label", "--group-col",
                 "customer", "--model", tiny_bert, "--cv", "3", "--unions", "0", "--no-baseline"]) == 0
    assert capsys.readouterr().out.startswith(
        "bertfeat probe: 36 texts in 12 groups of customer, each in one fold, joined into 9 by copies of a text, "
        "classification, ")


def test_groups_a_stock_phrase_ties_together_are_refused_saying_so(tiny_bert, monkeypatch):
    """A copy of a text in two groups joins them, so a stock phrase every customer wrote ties all their groups into
    one: the refusal said "the texts hold 1 groups" of the 12 passed, with no word of why (session 11)."""
    NoModel(monkeypatch)
    texts, y, groups = customers(12, 3)
    texts = [t if k % 3 else "Great product!" for k, t in enumerate(texts)]
    with pytest.raises(ValueError) as info:
        probe(texts, y, model=tiny_bert, cv=3, groups=groups)
    assert str(info.value) == (
        "the texts hold 1 groups, fewer than the 3 cross-validation folds (each group, with the copies of a text, stays "
        "in one fold, and the 12 groups given are 1 once the groups that share a copy of a text are joined); lower cv= "
        "or drop the texts repeated across groups (stock phrases such as 'Great product!').")


def test_the_probe_of_a_causal_decoder_scores_the_poolings_it_runs_and_says_so(tmp_path, capsys):
    """(found by a review of session 13's merged work, 2026-11-27, session 13) The encoder architectures hunt refused
    CLS pooling of a causal decoder at fit, and the probe's default poolings hold 'cls': `bertfeat probe` and R's
    bf_probe() on any decoder (gte-Qwen2, e5-mistral, a Llama) failed before any work, told to pass
    poolings=('mean', 'max'), which neither takes: no decoder could be probed there. The probe now leaves out the CLS
    pooling of a model that refuses it, saying so, and scores the rest; asked for CLS pooling alone, it refuses."""
    import warnings

    from bertfeat.cli import main
    from bertfeat.exceptions import ModelNoteWarning
    from tests.tiny_encoders import build_tiny_decoder

    texts, y = labelled(24)
    path = build_tiny_decoder(tmp_path / "llama", corpus=texts)
    note = (r"is a causal decoder \(model_type 'llama'\), whose first token attends to no token after it, so the "
            r"probe leaves out its CLS pooling and scores its mean and max pooling\.$")
    with pytest.warns(ModelNoteWarning, match=note):
        result = probe(texts, y, model=path, cv=2, unions=0, baseline=False)
    assert set(result.table["pooling"]) == {"mean", "max", "mean+max"}
    assert result.recommended["pooling"] in ("mean", "max", "mean+max")
    with pytest.raises(ValueError, match=r"^pooling='cls' reads the CLS token, .* is a causal decoder"):
        probe(texts, y, model=path, poolings=["cls"], cv=2, unions=0, baseline=False)
    csv = tmp_path / "labels.csv"
    pd.DataFrame({"text": texts, "label": y}).to_csv(csv, index=False)
    shown = []
    with warnings.catch_warnings():  # as the command line shows a warning where no test records it
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: shown.append(
            warnings.formatwarning(message, category, filename, lineno, line))
        assert main(["probe", str(csv), "--text-col", "text", "--label-col", "label", "--model", path, "--cv", "2",
                     "--unions", "0", "--no-baseline"]) == 0
    assert [line for line in shown if "CLS" in line] == [
        f"bertfeat probe: warning: --model {path} is a causal decoder (model_type 'llama'), whose first token attends "
        "to no token after it, so the probe leaves out its CLS pooling and scores its mean and max pooling.\n"]
    assert "mean+max" in capsys.readouterr().out
