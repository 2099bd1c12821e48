import dataclasses
import warnings

import pytest

from bertfeat.recipe import Recipe, parse_layers, parse_pooling
from tests.conftest import make_recipe


@pytest.mark.parametrize("given, expected", [
    ("mean", ("mean",)),
    ("cls+mean", ("cls", "mean")),
    (" max + cls ", ("max", "cls")),
    (["cls", "max"], ("cls", "max")),
])
def test_parse_pooling(given, expected):
    assert parse_pooling(given) == expected


@pytest.mark.parametrize("bad", ["avg", "cls+", "mean+mean", "", 3, ["cls", 1], None])
def test_parse_pooling_rejects_and_lists_choices(bad):
    with pytest.raises(ValueError, match=r"pooling=.*(valid choices are \['cls', 'mean', 'max'\]|expected one of|twice)"):
        parse_pooling(bad)


@pytest.mark.parametrize("given, agg, expected", [
    (-1, "mean", (6,)),
    (0, "mean", (0,)),
    ([-1, -2, -3, -4], "mean", (3, 4, 5, 6)),
    ([6, 1], "concat", (6, 1)),
    (range(1, 3), "mean", (1, 2)),
])
def test_parse_layers(given, agg, expected):
    assert parse_layers(given, 6, agg) == expected


def test_none_is_the_last_four_layers_or_all_of_fewer():
    assert parse_layers(None, 6) == (3, 4, 5, 6)
    assert parse_layers(None, 12) == (9, 10, 11, 12)
    assert parse_layers(None, 2) == (1, 2)


def test_parse_layers_out_of_range_says_how_many_layers():
    with pytest.raises(ValueError, match=r"layer 7 is out of range; the model has 6 layers, so valid indices are 0..6"):
        parse_layers(7, 6)
    with pytest.raises(ValueError, match=r"layer -8 is out of range"):
        parse_layers([-8], 6)


@pytest.mark.parametrize("bad", ["last", 1.5, True, [], [1, 1], [-1, 6], {1}])
def test_parse_layers_rejects(bad):
    with pytest.raises(ValueError, match="layers="):
        parse_layers(bad, 6)


def test_parse_layers_reads_a_numpy_array_of_ints_as_its_list():
    """``layers=np.arange(-4, 0)`` (a grid of layer sets built with numpy, an R vector reaching Python as an array) was
    refused "expected an int, a list of ints", where a tuple, a range and a list of numpy ints were read: a 1-D
    array of ints is read as its list, the same layers and fingerprint; floats and a 2-D array are still refused."""
    import numpy as np

    assert parse_layers(np.arange(-4, 0), 6) == parse_layers([-4, -3, -2, -1], 6) == (3, 4, 5, 6)
    assert parse_layers(np.array([6, 1], dtype=np.int32), 6, "concat") == (6, 1)
    assert parse_layers(np.array(2), 6) == (2,)  # a 0-d array of an int: that int
    for bad in (np.array([1.0, 2.0]), np.array([[1, 2]]), np.array([], dtype=int), np.array([True, False])):
        with pytest.raises(ValueError, match="layers="):
            parse_layers(bad, 6)


def test_every_key_field_changes_the_fingerprint():
    base = make_recipe()
    changes = dict(
        weights_sha256="x" * 64, tokenizer_sha256="y" * 64, config_sha256="z" * 64, hidden_size=8, num_layers=4,
        pooling=("cls",), layers=(2,), layer_agg="concat", max_length=32, long_text="chunk", stride=3,
        normalize=True, dtype="bfloat16", prefix="query: ", pool_prefix=False, format_version=99, model_format=1,
    )
    key_fields = {f.name for f in dataclasses.fields(Recipe)} - {"model", "_fingerprint"}
    assert set(changes) == key_fields, "every key field needs a case here"
    seen = {base.fingerprint()}
    # whether the prefix is pooled says something only where there is one (after prefix="query: " alone, below)
    assert dataclasses.replace(base, pool_prefix=False).fingerprint() == base.fingerprint()
    for name, value in changes.items():
        also = {"prefix": "query: "} if name == "pool_prefix" else {}
        fp = dataclasses.replace(base, **{name: value}, **also).fingerprint()
        assert fp not in seen, name
        seen.add(fp)


def test_a_family_whose_vectors_changed_gets_new_fingerprints_and_no_other(tmp_path):
    """MODEL_FORMATS: the families whose vectors a change altered key their recipes anew (their old cache rows are
    never reused); every other family keeps its fingerprint, pinned below."""
    from bertfeat import BertEmbedder
    from bertfeat.recipe import MODEL_FORMATS, model_format
    from tests.tiny_encoders import build_tiny_encoder

    assert model_format("bert") == 0 and "model_format" not in make_recipe().key_dict()
    assert {t: model_format(t) for t in ("big_bird", "convbert", "yoso", "modernbert")} == dict.fromkeys(
        ("big_bird", "convbert", "yoso", "modernbert"), 1) == MODEL_FORMATS
    assert make_recipe(model_format=1).key_dict()["model_format"] == 1
    for model_type, changed in (("convbert", 1), ("roberta", 0)):
        recipe = BertEmbedder(model=build_tiny_encoder(tmp_path / model_type, model_type), device="cpu",
                              pooling="mean", layers=-1).fit(["x"]).recipe_
        assert recipe.model_format == changed
        assert ("model_format" in recipe.key_dict()) == bool(changed)


def test_a_familys_half_precision_vectors_that_changed_get_new_fingerprints_and_its_float32_ones_keep_theirs(
        tmp_path):
    """LOW_PRECISION_MODEL_FORMATS: the bfloat16 and float16 vectors on CPU of models whose embeddings are projected
    (ALBERT, ELECTRA, and ConvBERT and DeBERTa-v2 with an embedding_size) changed (their residual stream kept in
    float32 after each layer norm, backend._norms_in_float32), so those recipes are keyed anew and their old cache
    rows, rounded to bfloat16 at every layer, never answer; float32 recipes, unchanged, keep their key (ConvBERT's
    format of 2026-11-26 in both). A pipeline pickled before is refused at its load, saying to fit again."""
    import pickle

    from bertfeat import BertEmbedder
    from bertfeat.backend import clear_backends
    from bertfeat.recipe import LOW_PRECISION_MODEL_FORMATS, model_format
    from tests.tiny_encoders import build_tiny_encoder

    assert LOW_PRECISION_MODEL_FORMATS == {"albert": 1, "electra": 1, "deberta-v2": 1, "convbert": 2}
    for model_type in ("albert", "electra", "deberta-v2"):
        assert [model_format(model_type, d) for d in ("float32", "bfloat16", "float16")] == [0, 1, 1]
    assert [model_format("convbert", d) for d in ("float32", "bfloat16", "float16")] == [1, 2, 2]
    assert model_format("bert", "bfloat16") == 0 and model_format("modernbert", "bfloat16") == 1
    path = build_tiny_encoder(tmp_path / "albert", "albert")
    for dtype, changed in (("float32", 0), ("bfloat16", 1)):
        est = BertEmbedder(model=path, device="cpu", pooling="mean", layers=-1, dtype=dtype).fit(["x"])
        assert est.recipe_.model_format == changed
        assert ("model_format" in est.recipe_.key_dict()) == bool(changed)
    before = pickle.loads(pickle.dumps(est))  # as fitted before the change: the old format, its old key
    object.__setattr__(before.recipe_, "model_format", 0)
    object.__setattr__(before.recipe_, "_fingerprint", "")
    clear_backends()
    with pytest.raises(ValueError, match=r"albert model, .*vector format: 1 here, 0 at fit; .* Fit again\.$"):
        before.transform(["the cat sat"])


def test_display_name_does_not_change_the_fingerprint():
    assert make_recipe(model="a").fingerprint() == make_recipe(model="/elsewhere/b").fingerprint()


def test_feature_names_are_zero_padded_and_carry_column_pooling_and_layer():
    r = make_recipe(hidden_size=12, pooling=("cls", "mean"))
    names = r.feature_names("review")
    assert names[:2] == ["review_cls_00", "review_cls_01"]
    assert names[-1] == "review_mean_11"
    assert len(names) == r.n_features == 24
    concat = make_recipe(layers=(3, 1), layer_agg="concat").feature_names("t")
    assert concat[0] == "t_mean_l3_0" and concat[4] == "t_mean_l1_0"
    assert sorted(names) == names[:12] + names[12:]  # sortable within each block


def test_the_fingerprint_is_pinned_so_caches_survive_upgrades():
    """A changed fingerprint orphans every user's cache: changing it must be a deliberate act (bump
    FORMAT_VERSION and update this value), never a side effect of reformatting the key."""
    import hashlib
    import json

    recipe = make_recipe()
    assert recipe.fingerprint() == "1a305d036eb15512d1e9613c1e616549"
    blob = json.dumps(recipe.key_dict(), sort_keys=True, separators=(",", ":")).encode()
    assert recipe.fingerprint() == hashlib.sha256(blob).hexdigest()[:32]
    assert recipe.key_dict()["pooling"] == ["mean"] and recipe.key_dict()["layers"] == [3]


def test_parse_layers_bounds_and_default_aggregation():
    assert parse_layers(-7, 6) == (0,)  # -(L + 1) is the embedding output
    with pytest.raises(ValueError, match=r"layer -8 is out of range; .* or -7\.\.-1\.$"):
        parse_layers(-8, 6)
    assert parse_layers([6, 1], 6) == (1, 6)  # the default layer_agg is "mean": order does not matter


def test_parse_pooling_errors_say_exactly_what_is_wrong():
    with pytest.raises(ValueError, match=r"expected one of \['cls', 'mean', 'max'\] or a '\+'-joined combination "
                                         r"such as 'cls\+mean'\.$"):
        parse_pooling(3)
    with pytest.raises(ValueError, match=r"unknown pooling \['avg'\]; valid"):
        parse_pooling("cls+avg")


def test_to_dict_is_the_key_with_the_models_name_and_the_fingerprint():
    """What the cache writes beside each namespace (recipe.json) and `bertfeat cache info` shows."""
    recipe = make_recipe(model="my-model")
    d = recipe.to_dict()
    assert d == {**recipe.key_dict(), "model": "my-model", "fingerprint": recipe.fingerprint()}
    assert list(d)[-2:] == ["model", "fingerprint"] and "model" not in recipe.key_dict()


class _PickledByAnOlderBertfeat:
    """Pickles as a Recipe whose state is ``state``: a recipe (inside a fitted BertEmbedder) as an older bertfeat
    wrote it, the fingerprint it computed included."""

    def __init__(self, state):
        self.state = state

    def __reduce__(self):
        import copyreg

        return copyreg._reconstructor, (Recipe, object, None), self.state


def _as_an_older_bertfeat_pickled_it(recipe: Recipe, fingerprint: str, **fields) -> Recipe:
    import pickle

    state = {**recipe.__dict__, **fields, "_fingerprint": fingerprint}
    return pickle.loads(pickle.dumps(_PickledByAnOlderBertfeat(state)))


def test_an_unpickled_recipe_keys_the_vectors_this_bertfeat_computes_not_those_of_the_one_that_pickled_it():
    """A recipe pickled with a fitted pipeline kept the fingerprint and format_version of the bertfeat that fitted
    it. Loaded after an upgrade that changed its vectors (FORMAT_VERSION 1 -> 2; a prefix tokenized with the text,
    PREFIX_FORMAT), its cache lookups answered the old code's vectors and wrote the new code's under the same key:
    one cache namespace of two kinds of vectors, silently, where a recipe fitted anew keys them apart."""
    import copy
    import pickle

    from bertfeat.recipe import FORMAT_VERSION

    now = make_recipe(long_text="chunk", stride=2, layers=(2, 3))
    for other in (FORMAT_VERSION - 1, FORMAT_VERSION + 1):  # pickled before an upgrade, or by a newer bertfeat
        pickled = dataclasses.replace(now, format_version=other)
        with pytest.warns(UserWarning, match=f"embedding format {other}.*this bertfeat computes format "
                                             f"{FORMAT_VERSION}.*may differ from those at fit"):
            loaded = _as_an_older_bertfeat_pickled_it(now, pickled.fingerprint(), format_version=other)
        assert loaded.format_version == FORMAT_VERSION and loaded.fingerprint() == now.fingerprint()
    # a prefix recipe pickled before its key held the prefix's format: the same fields, another key then
    with_prefix = make_recipe(prefix="query: ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same format: nothing to say
        loaded = _as_an_older_bertfeat_pickled_it(with_prefix, "0" * 32)
        assert loaded.fingerprint() == with_prefix.fingerprint() and loaded == with_prefix
        # this version's pickles and copies keep what they had
        for again in (pickle.loads(pickle.dumps(now)), copy.deepcopy(now), copy.copy(now)):
            assert again == now and again.fingerprint() == now.fingerprint()
