"""One forward pass for every pooling/layers choice: the all-layers recipe in the cache, derived features, and a
GridSearchCV over pooling and layers that runs the model once per distinct text."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

import bertfeat.backend
from bertfeat import BertEmbedder, probe
from bertfeat.backend import TorchBackend
from bertfeat.encode import derive, encode
from bertfeat.pooling import average_layers
from tests.conftest import TINY_SENTENCES, CountingBackend, make_recipe

TEXTS = TINY_SENTENCES + [
    "the cat ran in the park",
    "a dog sat on the mat",
    "glmnet meets the lazy dog",
    "features for statistics at last",
]
LABELS = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]

CHOICES = [
    dict(pooling="cls", layers=-1),
    dict(pooling="mean", layers=[-2, -1]),
    dict(pooling="max", layers=[0, 2], layer_agg="concat"),
    dict(pooling="cls+mean+max", layers=None, normalize=True),
    dict(pooling="mean+cls", layers=[3, 1], layer_agg="concat", normalize=True),
]


@pytest.fixture
def forward_rows(monkeypatch):
    """Count the sequences every real backend sends through the model."""
    rows = []
    original = TorchBackend.forward

    def counting(self, units, pooling, layer_groups, skip=0):
        rows.append(len(units))
        return original(self, units, pooling, layer_groups, skip)

    monkeypatch.setattr(TorchBackend, "forward", counting)
    return rows


def test_average_layers_picks_poolings_and_averages_groups_in_order():
    rng = np.random.default_rng(0)
    blocks = rng.normal(size=(5, 3, 4, 6)).astype(np.float32)  # (n, poolings, layers, dim)
    out = average_layers(blocks, [2, 0], [[1, 3], [0]])
    assert out.shape == (5, 4, 6) and out.dtype == np.float32
    np.testing.assert_array_equal(out[:, 0], (blocks[:, 2, 1] + blocks[:, 2, 3]) / np.float32(2))
    np.testing.assert_array_equal(out[:, 1], blocks[:, 2, 0])
    np.testing.assert_array_equal(out[:, 2], (blocks[:, 0, 1] + blocks[:, 0, 3]) / np.float32(2))
    np.testing.assert_array_equal(out[:, 3], blocks[:, 0, 0])


def test_all_layers_recipe_has_every_pooling_and_layer_and_its_own_fingerprint():
    recipe = make_recipe(pooling=("mean",), layers=(1, 2), normalize=True)
    base = recipe.all_layers()
    assert base.pooling == ("cls", "mean", "max")
    assert base.layers == tuple(range(recipe.num_layers + 1))
    assert (base.layer_agg, base.normalize) == ("concat", False)
    assert base.fingerprint() != recipe.fingerprint()
    assert base.all_layers() == base
    # recipes that differ only in pooling/layers/normalize share the base; a different window does not
    assert make_recipe(pooling=("cls",), layers=(3,)).all_layers().fingerprint() == base.fingerprint()
    assert make_recipe(max_length=recipe.max_length + 1).all_layers().fingerprint() != base.fingerprint()


def test_derive_rejects_a_source_it_cannot_derive_from():
    import re

    recipe = make_recipe(pooling=("mean",), layers=(1,))
    X = np.zeros((2, recipe.all_layers().n_features), dtype=np.float32)
    with pytest.raises(ValueError, match="^" + re.escape(
            "derive() needs a source recipe with layer_agg='concat' and normalize=False.") + "$"):
        derive(X, recipe, recipe)
    with pytest.raises(ValueError, match=re.escape(
            "derive() needs a source recipe with the same model, window, long-text handling, dtype and prefix.")):
        derive(X, make_recipe(max_length=99).all_layers(), recipe)
    # a concat source that lacks a pooling, or a layer, of the target: named, one or both
    narrow = make_recipe(pooling=("mean",), layers=(1, 2), layer_agg="concat", normalize=False)
    for target, lacks in ((make_recipe(pooling=("max",), layers=(1,)), "pooling ['max'] / layers []"),
                          (make_recipe(pooling=("mean",), layers=(3,)), "pooling [] / layers [3]"),
                          (make_recipe(pooling=("cls",), layers=(3,)), "pooling ['cls'] / layers [3]")):
        with pytest.raises(ValueError, match=re.escape(f"derive(): the source recipe lacks {lacks}.")):
            derive(np.zeros((2, narrow.n_features), dtype=np.float32), narrow, target)


@pytest.mark.parametrize("long_text", ["truncate", "chunk"])
def test_derived_features_equal_direct_ones(tiny_bert, long_text):
    texts = TEXTS + ["the quick brown fox jumps over the lazy dog and the cat sat on the mat " * 3]
    for choice in CHOICES:
        params = dict(model=tiny_bert, max_length=16, long_text=long_text, dtype="float32", **choice)
        direct = BertEmbedder(**params).fit_transform(texts)
        base_est = BertEmbedder(**params).fit(texts)
        base = base_est.recipe_.all_layers()
        X_base, _ = encode(texts, base, base_est._backend_loader())
        np.testing.assert_allclose(derive(X_base, base, base_est.recipe_), direct, atol=2e-6, rtol=0,
                                   err_msg=str(choice))


def test_chunked_max_of_averaged_layers_is_the_layer_average_of_each_layers_max(tiny_bert):
    """Under long_text="chunk", layers are averaged after windows are combined, so max pooling of a mean of layers
    is the mean over layers of each layer's max over all of the text's tokens."""
    texts = ["the quick brown fox jumps over the lazy dog and the cat sat on the mat " * 3, "a dog ran"]
    common = dict(model=tiny_bert, pooling="max", max_length=12, long_text="chunk", dtype="float32")
    per_layer = BertEmbedder(**common, layers=[1, 3], layer_agg="concat").fit_transform(texts)
    averaged = BertEmbedder(**common, layers=[1, 3], layer_agg="mean").fit_transform(texts)
    d = per_layer.shape[1] // 2
    np.testing.assert_allclose(averaged, (per_layer[:, :d] + per_layer[:, d:]) / 2, atol=1e-6, rtol=0)


def test_grid_search_over_pooling_and_layers_runs_the_model_once_per_distinct_text(tiny_bert, tmp_path, forward_rows):
    pipe = Pipeline([
        ("emb", BertEmbedder(tiny_bert, cache_dir=tmp_path, cache_all_layers=True, dtype="float32")),
        ("clf", LogisticRegression(max_iter=500)),
    ])
    grid = {"emb__pooling": ["cls", "mean", "cls+mean", "max"], "emb__layers": [-1, [-2, -1], None, 0],
            "emb__layer_agg": ["mean", "concat"], "emb__normalize": [False, True]}
    search = GridSearchCV(pipe, grid, cv=3).fit(TEXTS, LABELS)
    assert len(search.cv_results_["params"]) == 64
    # 64 candidates x 3 folds x (fit + score) and the refit: every distinct text went through the model once
    assert sum(forward_rows) == len(set(TEXTS))
    # and each candidate saw the features it asked for
    best = search.best_estimator_.named_steps["emb"]
    fresh = BertEmbedder(tiny_bert, dtype="float32", **{k.split("__")[1]: v for k, v in search.best_params_.items()})
    np.testing.assert_allclose(best.transform(TEXTS), fresh.fit_transform(TEXTS), atol=2e-6, rtol=0)
    assert sum(forward_rows) == 2 * len(set(TEXTS))  # the fresh estimator had no cache


def test_without_cache_all_layers_each_candidate_runs_the_model(tiny_bert, tmp_path, forward_rows):
    """The contrast that makes the test above mean something."""
    for pooling in ["cls", "mean"]:
        BertEmbedder(tiny_bert, pooling=pooling, cache_dir=tmp_path, dtype="float32").fit_transform(TEXTS)
    assert sum(forward_rows) == 2 * len(set(TEXTS))


def test_probe_fills_the_entries_cache_all_layers_reads(tiny_bert, tmp_path, monkeypatch):
    y = np.array(LABELS)
    probe(TEXTS, y, model=tiny_bert, cv=2, baseline=False, cache_dir=tmp_path, dtype="float32")
    bertfeat.backend.clear_backends()
    monkeypatch.setattr(bertfeat.backend, "get_backend", lambda *a, **k: pytest.fail("the model was loaded"))
    est = BertEmbedder(tiny_bert, pooling="mean", layers=[-2, -1], cache_dir=tmp_path, cache_all_layers=True,
                       dtype="float32")
    X = est.fit_transform(TEXTS)
    assert est.stats_.cache_hits == len(set(TEXTS)) and est.stats_.cache_misses == 0
    assert X.shape == (len(TEXTS), 32)


def test_missing_rows_stay_missing_through_derivation(tiny_bert, tmp_path):
    texts = ["a dog ran", None, "the cat sat"]
    for policy, check in [("zero", lambda r: (r == 0).all()), ("nan", lambda r: np.isnan(r).all())]:
        X = BertEmbedder(tiny_bert, pooling="mean", normalize=True, missing=policy, cache_dir=tmp_path,
                         cache_all_layers=True).fit_transform(texts)
        assert check(X[1]) and np.isfinite(X[[0, 2]]).all()


def test_cache_all_layers_needs_a_cache_dir(tiny_bert):
    with pytest.raises(ValueError, match="cache_all_layers=True .* pass cache_dir="):
        BertEmbedder(tiny_bert, cache_all_layers=True).fit(TEXTS)
    with pytest.raises(ValueError, match="cache_all_layers='yes' is not valid"):
        BertEmbedder(tiny_bert, cache_all_layers="yes", cache_dir="x").fit(TEXTS)


def test_counting_backend_sees_one_pass_for_many_recipes(tmp_path):
    """The encode-level contract, with the fake backend: recipes that differ in pooling/layers share the base."""
    from bertfeat.cache import open_cache

    backend = CountingBackend()
    cache = open_cache(tmp_path)
    for pooling, layers in [(("cls",), (3,)), (("mean", "max"), (1, 2)), (("max",), (0,))]:
        X, stats = encode(TEXTS, make_recipe(pooling=pooling, layers=layers), lambda: backend, cache=cache,
                          all_layers=True)
        assert X.shape == (len(TEXTS), len(pooling) * 4)
    assert backend.rows == len(set(TEXTS))
