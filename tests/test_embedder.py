"""BertEmbedder's contract on the tiny BERT: inputs, outputs, errors, scikit-learn integration."""

import copy
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from bertfeat import BertEmbedder, ModelNotAvailableError, TruncationWarning
from bertfeat.hub import hub_download_command

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "statistics meets text", "glmnet loves features"]


@pytest.fixture
def emb(tiny_bert):
    return BertEmbedder(tiny_bert)


def fit_refusal(model, exc, X=TEXTS, **params):
    """The text of the ``exc`` that ``BertEmbedder(model, **params).fit(X)`` raises."""
    with pytest.raises(exc) as info:
        BertEmbedder(model, **params).fit(X)
    return str(info.value)


def test_output_is_float32_with_one_row_per_text(emb):
    X = emb.fit_transform(TEXTS)
    assert X.dtype == np.float32 and X.shape == (4, 64)  # default: CLS and mean of the last four layers
    assert np.isfinite(X).all()
    names = emb.get_feature_names_out().tolist()
    assert names[:2] == ["text_cls_00", "text_cls_01"] and names[32] == "text_mean_00"
    assert emb.recipe_.layers == (1, 2, 3) and emb.recipe_.pooling == ("cls", "mean")


def test_fit_transform_equals_fit_then_transform(tiny_bert):
    a = BertEmbedder(tiny_bert, pooling="cls+max").fit_transform(TEXTS)
    b = BertEmbedder(tiny_bert, pooling="cls+max").fit(TEXTS).transform(TEXTS)
    np.testing.assert_array_equal(a, b)


def test_fit_trains_nothing_and_does_not_load_the_model(tiny_bert, monkeypatch):
    import bertfeat.backend

    def no_load(*a, **k):
        raise AssertionError("fit must not load the model")

    monkeypatch.setattr(bertfeat.backend, "get_backend", no_load)
    est = BertEmbedder(tiny_bert, pooling="mean+max", layers=[1, 2], layer_agg="concat").fit(["anything"])
    assert est.recipe_.n_features == 4 * 32 and est.recipe_.layers == (1, 2)


def test_a_texts_vector_does_not_depend_on_its_batch(tiny_bert):
    """Padding, batch size and neighbours must not change a text's vector beyond 1e-5 (fp32)."""
    texts = [
        "dog", "the quick brown fox jumps over the lazy dog and then the cat sat on the mat", "text",
        "frozen embeddings for linear models", "emma woodhouse handsome clever and rich",
    ]
    for pooling in ("cls", "mean", "max"):
        alone = np.vstack([BertEmbedder(tiny_bert, pooling=pooling).fit_transform([t]) for t in texts])
        for budget in (8, 40, 10_000):
            together = BertEmbedder(tiny_bert, pooling=pooling, batch_tokens=budget).fit_transform(texts)
            assert np.abs(together - alone).max() <= 1e-5, (pooling, budget)


def test_model_is_loaded_once_per_process(tiny_bert, monkeypatch):
    import bertfeat.backend
    from bertfeat.backend import TorchBackend, clear_backends, get_backend
    from bertfeat.models import resolve_model

    loads = []
    monkeypatch.setattr(bertfeat.backend, "TorchBackend", lambda *a, **k: loads.append(a) or TorchBackend(*a, **k))
    clear_backends()
    a = BertEmbedder(tiny_bert, device="cpu", dtype="float32").fit(TEXTS)
    b = clone(a).set_params(pooling="cls").fit(TEXTS)
    a.transform(TEXTS), b.transform(TEXTS), a.transform(TEXTS[:1])
    assert len(loads) == 1  # three transforms by two estimators, one model load
    spec = resolve_model(tiny_bert)
    assert get_backend(spec, "cpu", "float32") is get_backend(spec, "cpu", "float32")


@pytest.fixture(scope="module")
def three_models(tiny_bert, tmp_path_factory):
    """Three tiny BERTs of other weights: the session's and two more."""
    from tests.conftest import build_tiny_bert

    return [tiny_bert] + [str(build_tiny_bert(tmp_path_factory.mktemp(f"seed{s}"), seed=s)) for s in (1, 2)]


@pytest.fixture
def counted_loads(monkeypatch):
    """The models loaded from now on (a weak reference to each backend), in order, none kept from earlier tests."""
    import gc
    import weakref

    import bertfeat.backend

    loads = []

    def counted(*a, **k):
        backend = TorchBackend(*a, **k)
        loads.append(weakref.ref(backend))
        return backend

    TorchBackend = bertfeat.backend.TorchBackend
    bertfeat.backend.clear_backends()
    gc.collect()
    monkeypatch.setattr(bertfeat.backend, "TorchBackend", counted)
    yield loads
    bertfeat.backend.clear_backends()


def test_a_long_life_keeps_the_two_models_used_last_not_every_model_ever_used(three_models, counted_loads):
    """A notebook, a service or an R session embedding with one model after another (a fresh estimator each call,
    as bf_embed() makes): two models used in turn load once each, and a third frees the one used least recently;
    every model stayed loaded for the process's life (146 MB a MiniLM)."""
    import gc

    first, second, third = three_models
    for _ in range(10):  # two models used in turn: loaded once each
        for model in (first, second):
            BertEmbedder(model, device="cpu", dtype="float32").fit_transform(TEXTS)
    assert len(counted_loads) == 2
    BertEmbedder(third, device="cpu", dtype="float32").fit_transform(TEXTS)
    gc.collect()
    assert [ref() is not None for ref in counted_loads] == [False, True, True]  # the first model is gone
    BertEmbedder(second, device="cpu", dtype="float32").fit_transform(TEXTS)
    assert len(counted_loads) == 3  # the second is still loaded


def test_a_model_used_again_and_again_keeps_the_other_model_used_last_loaded(three_models, counted_loads):
    """(found by the mutation testing hunt, 2026-11-27, session 14) A notebook embedding several times with one model
    after using another: the model used again is moved to the end of the models kept, not added to them once more,
    which would leave it kept twice and push out the other (a reload of 146 MB a MiniLM the next time it is used).
    The two models used in turn never showed it: each call put the other in front."""
    first, second, _ = three_models
    for model in (first, second, second, second, first, first, second):
        BertEmbedder(model, device="cpu", dtype="float32").fit_transform(TEXTS)
    assert len(counted_loads) == 2  # each loaded once, however often it ran in a row


def test_a_fitted_estimator_keeps_its_model_loaded(three_models, counted_loads):
    """Three models side by side (a FeatureUnion of three estimators) load once each, however often they run: each
    estimator holds the model it used. Dropped with the estimators, the models go."""
    import gc

    embedders = [BertEmbedder(m, device="cpu", dtype="float32").fit(TEXTS) for m in three_models]
    want = [e.transform(TEXTS) for e in embedders]
    for _ in range(5):
        for e, w in zip(embedders, want):
            np.testing.assert_array_equal(e.transform(TEXTS), w)
    assert len(counted_loads) == 3
    assert len(pickle.dumps(embedders[0])) < 50_000  # the model is held, never pickled
    assert copy.deepcopy(embedders[0]).transform(TEXTS[:1]) is not None and len(counted_loads) == 3
    del embedders, e
    gc.collect()
    assert sum(ref() is not None for ref in counted_loads) == 2  # the two used last


def test_a_model_whose_files_changed_frees_the_model_loaded_from_the_old_files(tiny_bert, tmp_path, counted_loads):
    """A service that saves a retrained model over its folder: the next load replaces the model of the old files,
    which no estimator can use again (it is refused, its files changed), not kept beside it."""
    import gc
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "model"
    shutil.copytree(tiny_bert, folder)
    for round in range(3):
        weights = load_file(folder / "model.safetensors")
        name = next(iter(weights))
        weights[name] = weights[name] + torch.full_like(weights[name], 1e-3)
        save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
        BertEmbedder(str(folder), device="cpu", dtype="float32").fit_transform(TEXTS)
        gc.collect()
        assert [ref() is not None for ref in counted_loads] == [False] * round + [True]


# -- inputs ---------------------------------------------------------------------------------------------------


def test_every_1d_container_gives_the_same_features(emb):
    import polars as pl

    want = emb.fit_transform(TEXTS)
    for X in (tuple(TEXTS), iter(TEXTS), np.array(TEXTS), np.array(TEXTS, dtype=object), pd.Series(TEXTS),
              pd.Series(TEXTS, dtype="string"), pd.Series(TEXTS, dtype="category"), pl.Series(TEXTS)):
        np.testing.assert_array_equal(clone(emb).fit_transform(X), want)


def test_dataframe_columns_are_embedded_side_by_side(tiny_bert):
    import polars as pl

    df = pd.DataFrame({"title": TEXTS, "body": TEXTS[::-1]})
    est = BertEmbedder(tiny_bert, pooling="mean")
    X = est.fit_transform(df)
    single = BertEmbedder(tiny_bert, pooling="mean").fit_transform(TEXTS)
    np.testing.assert_array_equal(X[:, :32], single)
    np.testing.assert_array_equal(X[:, 32:], single[::-1])
    names = est.get_feature_names_out()
    assert names[0] == "title_mean_00" and names[32] == "body_mean_00" and len(names) == 64
    assert est.n_features_in_ == 2 and est.feature_names_in_.tolist() == ["title", "body"]
    np.testing.assert_array_equal(BertEmbedder(tiny_bert, pooling="mean").fit_transform(pl.from_pandas(df)), X)


def test_columns_selects_text_columns(tiny_bert):
    df = pd.DataFrame({"id": [1, 2, 3, 4], "review": TEXTS})
    est = BertEmbedder(tiny_bert, columns="review")
    X = est.fit_transform(df)
    assert X.shape == (4, 64) and est.text_columns_ == ["review"]
    assert est.get_feature_names_out()[0] == "review_cls_00"
    with pytest.raises(ValueError, match=r"columns='nope'.*not found.*\['id', 'review'\]"):
        BertEmbedder(tiny_bert, columns="nope").fit(df)


def test_named_series_names_the_features(emb):
    emb.fit(pd.Series(TEXTS, name="review"))
    assert emb.get_feature_names_out()[-1] == "review_mean_31"


def test_bare_string_is_rejected_like_scikit_learn(emb):
    with pytest.raises(TypeError, match="Iterable over raw text documents expected, string object received."):
        emb.fit("just one text")


def test_numeric_column_is_rejected_by_name(tiny_bert):
    df = pd.DataFrame({"review": TEXTS, "stars": [1, 2, 3, 4]})
    with pytest.raises(TypeError, match=r"column 'stars' holds int64 values, not text"):
        BertEmbedder(tiny_bert).fit(df)


def test_non_text_value_names_row_and_column(tiny_bert):
    df = pd.DataFrame({"a": TEXTS, "b": ["x", "y", 3, "z"]})
    est = BertEmbedder(tiny_bert).fit(df)
    with pytest.raises(TypeError, match=r"row 2 of column 'b' holds int 3, not a string"):
        est.transform(df)


def test_transform_checks_the_columns_seen_in_fit(tiny_bert):
    est = BertEmbedder(tiny_bert).fit(pd.DataFrame({"a": TEXTS}))
    with pytest.raises(ValueError, match=r"columns of X \(\['b'\]\) differ from those seen in fit \(\['a'\]\)"):
        est.transform(pd.DataFrame({"b": TEXTS}))
    with pytest.raises(ValueError, match="X has 2 columns, but BertEmbedder is expecting 1"):
        BertEmbedder(tiny_bert).fit(TEXTS).transform(np.array([TEXTS, TEXTS]).T)


@pytest.mark.parametrize("names", [("a", "b"), (0, 1)], ids=["str-names", "int-names"])
def test_reordered_columns_are_refused_never_swapped(tiny_bert, names):
    """The same columns in another order must not put column a's features under b's names (int names included,
    which scikit-learn does not record in feature_names_in_)."""
    first, second = names
    df = pd.DataFrame({first: TEXTS, second: TEXTS[::-1]})
    est = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(df)
    expected = est.transform(df)
    with pytest.raises(ValueError, match=r"are those seen in fit but in another order.*Reorder them first"):
        est.transform(df[[second, first]])
    # put back in the fitted order, the frame gives the fitted features, column by column
    np.testing.assert_array_equal(est.transform(df[[second, first]][[first, second]]), expected)
    # a selection by name is not affected by the frame's column order
    sel = BertEmbedder(tiny_bert, columns=[str(second)] if isinstance(second, str) else [second], pooling="mean",
                       layers=-1).fit(df)
    np.testing.assert_array_equal(sel.transform(df), expected[:, 32:])


def test_unordered_and_empty_input_are_rejected(emb):
    with pytest.raises(TypeError, match="no row order"):
        emb.fit(set(TEXTS))
    with pytest.raises(ValueError, match="0 sample"):
        emb.fit([])


def test_transform_before_fit_says_fit_first(emb):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        emb.transform(TEXTS)


def test_a_failed_or_interrupted_fit_changes_nothing(tiny_bert, monkeypatch):
    # A fit that fails half-way (bad input, an unusable cache, Ctrl-C in a notebook) used to keep the recipe it had
    # built: a fresh estimator then passed transform's fitted check and crashed with "'BertEmbedder' object has no
    # attribute 'text_columns_'", and a fitted one was left half old fit, half new.
    from sklearn.exceptions import NotFittedError

    frame = pd.DataFrame({"a": TEXTS})
    for X, params in (([], {}), (pd.DataFrame({"b": TEXTS}), {"columns": ["a"]})):
        est = BertEmbedder(tiny_bert, **params)
        with pytest.raises(ValueError):
            est.fit(X)
        with pytest.raises(NotFittedError):
            est.transform(frame)
        with pytest.raises(NotFittedError):
            est.get_feature_names_out()

    est = BertEmbedder(tiny_bert, pooling="mean")
    monkeypatch.setattr(BertEmbedder, "_cache", lambda self: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        est.fit(frame)
    monkeypatch.undo()
    with pytest.raises(NotFittedError):
        est.transform(frame)

    # a fitted estimator whose refit fails is still its earlier fit, whole: set_params is refused as not refitted
    fitted = BertEmbedder(tiny_bert, pooling="mean").fit(frame)
    before = {k: copy.deepcopy(v) for k, v in vars(fitted).items()}
    fitted.set_params(pooling="max")
    with pytest.raises(ValueError, match="0 sample"):
        fitted.fit(frame.iloc[:0])
    after = vars(fitted)
    assert sorted(after) == sorted(before)
    assert after["recipe_"].fingerprint() == before["recipe_"].fingerprint()
    assert after["_recipe_params"] == before["_recipe_params"]
    with pytest.raises(ValueError, match="pooling"):
        fitted.transform(frame)
    fitted.set_params(pooling="mean")
    np.testing.assert_array_equal(fitted.transform(frame), BertEmbedder(tiny_bert, pooling="mean").fit_transform(frame))


def test_a_failed_transform_leaves_no_stats_or_mask_of_the_call_before(tiny_bert, monkeypatch):
    # stats_ and missing_ describe the last transform; after one that failed (a text refused, a model that would not
    # load, Ctrl-C) they still held the call before's counts and mask, read after the error as this call's
    import bertfeat.encode

    est = BertEmbedder(tiny_bert, missing="zero").fit(TEXTS)
    est.transform(TEXTS + [None])
    assert est.stats_.rows == 5 and est.missing_.shape == (5, 1)
    for failing in (lambda: est.transform(TEXTS + [3]), lambda: est.set_params(missing="error").transform([None])):
        with pytest.raises((TypeError, ValueError)):
            failing()
        assert not hasattr(est, "stats_") and not hasattr(est, "missing_")
        est.set_params(missing="zero").transform(TEXTS + [None])
    monkeypatch.setattr(bertfeat.encode, "_run_model", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        est.transform(["a text never seen"])
    assert not hasattr(est, "stats_") and not hasattr(est, "missing_")
    monkeypatch.undo()
    np.testing.assert_array_equal(est.transform(TEXTS), BertEmbedder(tiny_bert).fit_transform(TEXTS))
    assert est.stats_.rows == 4 and est.missing_.shape == (4, 1)


def test_a_fit_in_another_thread_during_a_transform_never_mixes_two_recipes_in_its_output_or_cache(tiny_bert, tmp_path,
                                                                                                  monkeypatch):
    # the docstring asks for fit and set_params before the transforms, but a service that refits beside its requests
    # got, from a transform that was running: the vectors of the fit's new model (loaded lazily, mid-call) pooled and
    # cached under the old recipe's key, so every later call of the old recipe, in any process, read the other model's
    # vectors from the cache; and columns named after the new recipe (set_output's names are read after the call).
    # Now the call keeps the recipe and model it started with, and refuses its output if the estimator was fitted again
    # meanwhile, saying why; the cache holds the old recipe's own vectors only
    import threading

    import bertfeat.encode
    from tests.conftest import build_tiny_bert

    other = build_tiny_bert(tmp_path / "other", seed=1)
    cache = str(tmp_path / "cache")
    texts = ["a cat sat", "a dog ran"]
    want = BertEmbedder(tiny_bert, pooling="cls").fit(TEXTS).transform(texts)
    est = BertEmbedder(tiny_bert, pooling="cls", cache_dir=cache).set_output(transform="pandas").fit(TEXTS)
    real = bertfeat.encode.encode
    in_call, refitted = threading.Event(), threading.Event()

    def encode(*args, **kwargs):
        if threading.current_thread().name == "request":
            in_call.set()
            assert refitted.wait(30)  # the model is not loaded yet: encode loads it for the texts the cache lacks
        return real(*args, **kwargs)

    monkeypatch.setattr(bertfeat.encode, "encode", encode)
    result = {}

    def request():
        try:
            result["out"] = est.transform(texts)
        except BaseException as exc:  # noqa: BLE001 - read in the test's thread
            result["error"] = exc

    thread = threading.Thread(target=request, name="request")
    thread.start()
    assert in_call.wait(30)
    est.set_params(model=other, pooling="mean").fit(TEXTS)
    refitted.set()
    thread.join(30)
    assert "out" not in result, "a transform raced by a fit returned an output"
    assert str(result["error"]) == (
        "this BertEmbedder was fitted again while this transform ran, so its output, the features of the recipe it "
        "started with, would pass for the new fit's; run fit and set_params before the transforms that use them, or "
        "give each thread an estimator of its own (sklearn.base.clone).")
    monkeypatch.setattr(bertfeat.encode, "encode", real)
    again = BertEmbedder(tiny_bert, pooling="cls", cache_dir=cache).fit(TEXTS)
    np.testing.assert_array_equal(again.transform(texts), want)  # the cache kept the old recipe's own vectors
    assert list(est.transform(texts).columns) == list(est.get_feature_names_out())  # the new fit, whole


def test_each_thread_reads_the_stats_and_mask_of_its_own_transform(tiny_bert, monkeypatch):
    # a web service's request threads share one fitted embedder: a request reading stats_ or missing_ after its
    # transform got another request's (a mask of another length, which rows of its own were missing), or, with the
    # other's call running, no attribute at all. Each thread now reads its own last call's; a thread that made none
    # (a caller that ran transform in an executor) reads the last call of any thread, as one thread always did
    import threading

    import bertfeat.encode

    est = BertEmbedder(tiny_bert, missing="zero").fit(TEXTS)
    real = bertfeat.encode.encode
    b_in_call, a_read, b_done = threading.Event(), threading.Event(), threading.Event()

    def encode(*args, **kwargs):
        if threading.current_thread().name == "b" and not a_read.is_set():
            b_in_call.set()
            assert a_read.wait(30)  # B's call is running while A reads
        return real(*args, **kwargs)

    monkeypatch.setattr(bertfeat.encode, "encode", encode)
    seen, errors = {}, []

    def a():
        try:
            est.transform(["a cat", None, "a dog"])
            threading.Thread(target=b, name="b").start()
            assert b_in_call.wait(30)
            seen["a, b running"] = (est.stats_.rows, est.stats_.missing, est.missing_.ravel().tolist())
            a_read.set()
            assert b_done.wait(30)
            seen["a, b done"] = (est.stats_.rows, est.stats_.missing, est.missing_.ravel().tolist())
        except BaseException as exc:  # noqa: BLE001 - read in the test's thread
            errors.append(exc)
            a_read.set()

    def b():
        try:
            est.transform(["x", "y", None, None, "z"])
            seen["b"] = (est.stats_.rows, est.stats_.missing, est.missing_.ravel().tolist())
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            b_done.set()

    thread_a = threading.Thread(target=a, name="a")
    thread_a.start()
    thread_a.join(60)
    assert not errors, errors
    assert seen == {"a, b running": (3, 1, [False, True, False]), "a, b done": (3, 1, [False, True, False]),
                    "b": (5, 2, [False, False, True, True, False])}
    # this thread made no call: it reads the last call of any thread (B's)
    assert (est.stats_.rows, est.missing_.shape) == (5, (5, 1))
    # a failed call in a thread leaves that thread no stats_, though another thread's call succeeded since
    failed = {}

    def fails():
        try:
            est.transform(["a", 3])
        except (TypeError, ValueError):
            refused.set()
        done.wait(30)
        failed["has"] = hasattr(est, "stats_"), hasattr(est, "missing_")

    refused, done = threading.Event(), threading.Event()
    thread = threading.Thread(target=fails)
    thread.start()
    assert refused.wait(30)
    est.transform(["one", "two"])
    done.set()
    thread.join(60)
    assert failed == {"has": (False, False)}
    assert est.stats_.rows == 2  # this thread's own call
    # pickled and copied as before: the counts of the last call, never the mask, nor any thread's record
    again = pickle.loads(pickle.dumps(est))
    assert again.stats_.rows == 2 and not hasattr(again, "missing_")
    assert copy.deepcopy(est).stats_.rows == 2


# -- missing values ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index, shown", [([10, 11, 12], "12"), ([0.5, 1.5, 2.5], "2.5"), ([True, False, True], "True"),
                                          (pd.to_datetime(["2020-01-01"] * 3), "Timestamp('2020-01-01 00:00:00')")])
def test_a_rows_index_label_is_shown_as_python_shows_it(tiny_bert, index, shown):
    # numpy scalars of a numeric index are shown as the plain numbers they hold, never as np.int64(12)
    data = pd.Series(["dog", "cat", None], index=index)
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert).fit_transform(data)
    assert str(info.value).startswith(f"row 2 (index {shown}) is missing (")


def test_missing_policies(tiny_bert):
    data = pd.Series(["dog", None, "cat", np.nan], index=["a", "b", "c", "d"])
    with pytest.raises(ValueError, match=r"row 1 \(index 'b'\) is missing \((None|nan)\) and missing='error'"):
        BertEmbedder(tiny_bert).fit_transform(data)
    zero = BertEmbedder(tiny_bert, missing="zero").fit_transform(data)
    assert not zero[[1, 3]].any() and zero[[0, 2]].all(axis=1).any()
    nan = BertEmbedder(tiny_bert, missing="nan").fit_transform(data)
    assert np.isnan(nan[[1, 3]]).all() and np.isfinite(nan[[0, 2]]).all()
    np.testing.assert_array_equal(nan[[0, 2]], zero[[0, 2]])


def test_the_string_NA_is_text_not_missing(tiny_bert):
    est = BertEmbedder(tiny_bert, missing="zero")
    X = est.fit_transform(["NA", None])
    assert not X[1].any() and est.stats_.missing == 1
    np.testing.assert_array_equal(X[0], est.transform(["NA"])[0])


# -- long texts ---------------------------------------------------------------------------------------------------


def test_truncation_warns_once_with_the_count(tiny_bert):
    long = " ".join(["the quick brown fox jumps over the lazy dog"] * 5)
    est = BertEmbedder(tiny_bert, max_length=16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit_transform([long, "dog", long + " cat"])
    mine = [w for w in caught if issubclass(w.category, TruncationWarning)]
    assert len(mine) == 1
    assert "2 of 3 texts were longer than max_length=16 tokens and were truncated" in str(mine[0].message)
    assert est.stats_.truncated == 2


def test_a_text_of_exactly_max_length_tokens_is_not_truncated(tiny_bert):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    words = "the quick brown fox jumps over the lazy dog the cat sat on the mat a dog ran in the park".split()
    # the shortest prefixes of 16 and 17 tokens, special tokens included
    sizes = {len(tok(" ".join(words[:k]))["input_ids"]): " ".join(words[:k]) for k in range(1, len(words) + 1)}
    exact, over = sizes[16], sizes[17]
    est = BertEmbedder(tiny_bert, max_length=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)
        X = est.fit_transform([exact, "dog"])
    assert est.stats_.truncated == 0
    # nothing was cut: the full model pass over the 16 tokens gives the same vector with a larger window
    np.testing.assert_allclose(X[0], BertEmbedder(tiny_bert, max_length=64).fit_transform([exact])[0], atol=1e-5)
    with pytest.warns(TruncationWarning, match="1 of 2 texts were longer than max_length=16"):
        est.transform([over, "dog"])
    assert est.stats_.truncated == 1


def test_no_warning_when_chunking(tiny_bert):
    long = " ".join(["the quick brown fox jumps over the lazy dog"] * 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)
        est = BertEmbedder(tiny_bert, max_length=16, long_text="chunk")
        est.fit_transform([long])
    assert est.stats_.chunked == 1


# -- parameters and errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("params, message", [
    (dict(pooling="avg"), r"pooling='avg'.*valid choices are \['cls', 'mean', 'max'\]"),
    (dict(layers=9), r"layer 9 is out of range; the model has 3 layers, so valid indices are 0..3"),
    (dict(layers="last"), r"layers='last' is not valid"),
    (dict(layer_agg="sum"), r"layer_agg='sum' is not valid: expected one of \['mean', 'concat'\]"),
    (dict(long_text="split"), r"long_text='split' is not valid: expected one of \['truncate', 'chunk'\]"),
    (dict(dtype="int8"), r"dtype='int8' is not valid"),
    (dict(missing="drop"), r"missing='drop' is not valid: expected one of \['error', 'zero', 'nan'\]"),
    (dict(max_length=65), r"max_length=65 is not valid: expected an int from 4 to the model's limit of 64"),
    (dict(max_length=16, long_text="chunk", stride=14), r"stride=14 is not valid: expected an int from 0 to 13"),
    (dict(batch_tokens=0), r"batch_tokens=0 is not valid"),
    (dict(normalize="yes"), r"normalize='yes' is not valid"),
    (dict(device="tpu"), r"device='tpu' is not valid"),
])
def test_bad_parameters_name_the_value_and_the_choices(tiny_bert, params, message):
    with pytest.raises(ValueError, match=message):
        BertEmbedder(tiny_bert, **params).fit_transform(TEXTS)


@pytest.mark.parametrize("device", ["gpu", "CUDA", "cuda:01", "xpu", " cpu"])
def test_a_device_no_model_runs_on_is_refused_at_fit_whatever_the_dtype_and_the_cache(tiny_bert, tmp_path, device):
    """With an explicit dtype, fit never looked at the device (only dtype='auto' resolves it): device='gpu' was
    refused at the first transform that loaded the model, and accepted, silently, by every transform answered from
    the cache (`bertfeat embed --device gpu` on a warm cache wrote its output; on a cold one it failed)."""
    warm = BertEmbedder(tiny_bert, dtype="float32", cache_dir=tmp_path).fit_transform(TEXTS)
    est = BertEmbedder(tiny_bert, dtype="float32", cache_dir=tmp_path, device=device)
    with pytest.raises(ValueError, match=rf"^device={device!r} is not (valid|supported): expected 'auto', 'cpu'"):
        est.fit(TEXTS)
    est.set_params(device="cpu").fit(TEXTS)
    est.set_params(device=device)  # after fit: refused at transform, which the cache would answer
    with pytest.raises(ValueError, match=rf"^device={device!r} is not"):
        est.transform(TEXTS)
    assert np.array_equal(est.set_params(device="cpu:0").transform(TEXTS), warm)  # torch's own spelling of the CPU


@pytest.mark.parametrize("device, says", [("cuda", "torch sees no CUDA GPU here"),
                                           ("cuda:1", "torch sees no CUDA GPU here"),
                                           ("mps", "MPS is not available here")])
def test_a_gpu_this_machine_has_not_is_refused_at_fit_whatever_the_dtype_and_the_cache(tiny_bert, tmp_path, device,
                                                                                     says):
    """dtype='auto' refused device='cuda' on a CPU at fit (resolving it), an explicit dtype only where a transform
    loaded the model: `bertfeat embed --device cuda --dtype float32` failed on a cold cache and wrote its output on a
    warm one. Refused at fit and at transform alike now, saying what to pass (device is set without a refit)."""
    BertEmbedder(tiny_bert, dtype="float32", cache_dir=tmp_path).fit_transform(TEXTS)  # the cache is warm
    for dtype in ("auto", "float32", "bfloat16"):
        with pytest.raises(ValueError, match=rf"^device={device!r} was asked for, but {says}; pass device='cpu'"):
            BertEmbedder(tiny_bert, dtype=dtype, cache_dir=tmp_path, device=device).fit(TEXTS)
    est = BertEmbedder(tiny_bert, dtype="float32", cache_dir=tmp_path).fit(TEXTS).set_params(device=device)
    with pytest.raises(ValueError, match=rf"^device={device!r} was asked for"):
        est.transform(TEXTS)


def test_torch_objects_for_device_and_dtype_are_refused_saying_what_to_write(tiny_bert):
    """A torch.device, as torch code holds one, was told only the list of strings ('auto', 'cpu', ...)."""
    import torch

    with pytest.raises(ValueError) as err:
        BertEmbedder(tiny_bert, device=torch.device("cuda", 1)).fit(TEXTS)
    assert str(err.value) == ("device=device(type='cuda', index=1) is not valid: pass the device as a string, "
                              "device='cuda:1'.")
    with pytest.raises(ValueError, match=r"^dtype=torch.float32 is not valid: expected one of \['auto', 'float32'"):
        BertEmbedder(tiny_bert, dtype=torch.float32).fit(TEXTS)


def test_cuda_without_a_gpu_says_what_to_pass(tiny_bert):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match=r"device='cuda' was asked for, but torch sees no CUDA GPU here; pass device='cpu'"):
        BertEmbedder(tiny_bert, device="cuda").fit_transform(TEXTS)


def test_hub_model_offline_says_so_and_what_to_pass_instead():
    with pytest.raises(ModelNotAvailableError, match=r"not in the Hugging Face cache.*HF_HUB_OFFLINE.*model='default'"):
        BertEmbedder("someone/not-a-cached-model").fit(TEXTS)


def test_missing_local_directory_is_reported(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="looks like a local path, but there is no model directory"):
        BertEmbedder(str(tmp_path / "nope")).fit(TEXTS)


def test_bfloat16_on_cpu_is_close_to_float32(tiny_bert):
    a = BertEmbedder(tiny_bert, dtype="float32").fit_transform(TEXTS)
    b = BertEmbedder(tiny_bert, dtype="bfloat16").fit_transform(TEXTS)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert b.dtype == np.float32 and cos.min() > 0.99 and not np.array_equal(a, b)


def test_normalize_gives_unit_blocks(tiny_bert):
    X = BertEmbedder(tiny_bert, pooling="cls+mean", normalize=True).fit_transform(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(X[:, :32], axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(X[:, 32:], axis=1), 1, atol=1e-6)


# -- scikit-learn integration -------------------------------------------------------------------------------------


def test_set_output_pandas_and_polars(tiny_bert):
    import polars as pl

    s = pd.Series(TEXTS, index=[10, 11, 12, 13], name="review")
    out = BertEmbedder(tiny_bert).set_output(transform="pandas").fit_transform(s)
    assert isinstance(out, pd.DataFrame) and out.index.tolist() == [10, 11, 12, 13]
    assert out.columns[0] == "review_cls_00" and out.dtypes.iloc[0] == np.float32
    pout = BertEmbedder(tiny_bert).set_output(transform="polars").fit_transform(s)
    assert isinstance(pout, pl.DataFrame) and pout.columns == out.columns.tolist()
    np.testing.assert_array_equal(pout.to_numpy(), out.to_numpy())


def test_clone_get_set_params(tiny_bert):
    est = BertEmbedder(tiny_bert, pooling="cls", layers=[1, 2])
    params = est.get_params()
    assert params["pooling"] == "cls" and params["layers"] == [1, 2] and params["model"] == tiny_bert
    c = clone(est)
    assert c.get_params() == params and c is not est
    c.set_params(pooling="max")
    assert c.pooling == "max" and est.pooling == "cls"


def test_pickle_round_trip_is_small_and_gives_the_same_features(tiny_bert):
    est = BertEmbedder(tiny_bert).fit(TEXTS)
    before = est.transform(TEXTS)
    blob = pickle.dumps(est)
    assert len(blob) < 10_000  # no weights, no tokenizer, no tensors
    again = pickle.loads(blob)
    np.testing.assert_array_equal(again.transform(TEXTS), before)


def test_pipeline_and_column_transformer(tiny_bert):
    df = pd.DataFrame({"review": TEXTS * 5, "stars": np.arange(20.0)})
    y = np.array([0, 1] * 10)
    ct = ColumnTransformer([("bert", BertEmbedder(tiny_bert, pooling="mean"), "review"),
                            ("num", "passthrough", ["stars"])])
    pipe = make_pipeline(ct, LogisticRegression(max_iter=500)).fit(df, y)
    assert pipe.predict(df).shape == (20,)
    names = ct.get_feature_names_out()
    assert names[0] == "bert__review_mean_00" and names[-1] == "num__stars" and len(names) == 33


def test_grid_search_over_pooling_and_layers(tiny_bert):
    X = TEXTS * 4
    y = [0, 1, 0, 1] * 4
    pipe = make_pipeline(BertEmbedder(tiny_bert), LogisticRegression(max_iter=200))
    grid = GridSearchCV(pipe, {"bertembedder__pooling": ["cls", "mean+max"], "bertembedder__layers": [-1, [1, 2]]},
                        cv=2).fit(X, y)
    assert len(grid.cv_results_["params"]) == 4
    best = grid.best_estimator_.named_steps["bertembedder"]
    assert best.recipe_.n_features in (32, 64)


SKLEARN_CHECKS = [
    "check_no_attributes_set_in_init", "check_parameters_default_constructible", "check_get_params_invariance",
    "check_set_params", "check_estimator_repr", "check_estimator_cloneable", "check_estimators_unfitted",
    "check_transformers_unfitted", "check_do_not_raise_errors_in_init_or_set_params", "check_mixin_order",
    "check_valid_tag_types", "check_estimator_tags_renamed", "check_get_feature_names_out_error",
    # sparse input refused as sparse (input_tags.sparse is False): it passed fit as a column of texts
    # (check_estimator_sparse_array fails in the check itself: it makes a 1-D csr_array, for one_d_array, which
    # scipy cannot convert to lil; test_inputs.py refuses a csr_array)
    "check_estimator_sparse_tag", "check_estimator_sparse_matrix",
]


@pytest.mark.parametrize("check", SKLEARN_CHECKS)
def test_sklearn_checks_by_name(check, tiny_bert):
    """The checks that apply, called by name: parametrize_with_checks and check_estimator run every check on
    numbers (BertEmbedder's input_tags.two_d_array is True, for 2-D arrays of texts), which an embedder of texts
    refuses."""
    import sklearn.utils.estimator_checks as checks

    getattr(checks, check)("BertEmbedder", BertEmbedder(tiny_bert))


def test_truncation_warning_points_at_the_callers_line(tiny_bert):
    from sklearn.pipeline import make_pipeline

    long = " ".join(["the quick brown fox jumps over the lazy dog"] * 5)
    pipe = make_pipeline(BertEmbedder(tiny_bert, max_length=16))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.fit_transform([long])
    mine = [w for w in caught if issubclass(w.category, TruncationWarning)]
    assert mine and mine[0].filename == __file__
    # code run by exec() with bare globals (no __name__, as some notebook and R bridges run it) is user code too
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec("pipe.fit_transform([long])", {"pipe": pipe, "long": long})
    mine = [w for w in caught if issubclass(w.category, TruncationWarning)]
    assert mine and mine[0].filename == "<string>"
    # the note that X lost its column names points at the caller too, through a Pipeline as well
    df = pd.DataFrame({"a": TEXTS, "b": TEXTS})
    pipe = make_pipeline(BertEmbedder(tiny_bert)).fit(df)
    for call in (lambda: pipe.transform(df.to_numpy()), lambda: pipe[0].transform(df.to_numpy())):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        mine = [w for w in caught if "has no column names" in str(w.message)]
        assert mine and mine[0].filename == __file__



@pytest.mark.parametrize("call", ["pipeline_fit", "union", "column_transformer", "cross_val_score"])
def test_a_warning_raised_inside_scikit_learns_joblib_calls_points_at_the_callers_line(tiny_bert, call):
    """make_pipeline(BertEmbedder(), LogisticRegression()).fit(...), the README's first example, fits the embedder
    through joblib's Memory (Pipeline's cache, even with memory=None), and a union, a ColumnTransformer and
    cross_val_score through joblib's Parallel: the truncation warning named joblib/memory.py or joblib/parallel.py
    as where it came from, not the caller's line."""
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline, make_union

    long = " ".join(["the quick brown fox jumps over the lazy dog"] * 5)
    texts, y = [long, "a cat sat", long + " again", "a dog ran"], [0, 1, 0, 1]

    def embedder(**params):
        return BertEmbedder(tiny_bert, max_length=16, **{"pooling": "mean", "layers": -1, **params})

    calls = {
        "pipeline_fit": lambda: make_pipeline(embedder(), LogisticRegression()).fit(texts, y),
        "union": lambda: make_union(embedder(), embedder(pooling="max")).fit_transform(texts),
        "column_transformer": lambda: make_column_transformer((embedder(), "review")).fit_transform(
            pd.DataFrame({"review": texts})),
        "cross_val_score": lambda: cross_val_score(make_pipeline(embedder(), LogisticRegression()), texts, y, cv=2),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls[call]()
    mine = [w for w in caught if issubclass(w.category, TruncationWarning)]
    assert mine and {w.filename for w in mine} == {__file__}, [(w.filename, w.lineno) for w in mine]

# -- the token budget ------------------------------------------------------------------------------------------


def record_forward_passes(monkeypatch):
    """Spy on every model pass: a list of (rows, padded length) per pass, special tokens included."""
    from bertfeat.backend import TorchBackend

    passes = []
    real = TorchBackend._forward

    def spy(self, units, pooling, layer_groups, skip=0):
        passes.append((len(units), max(len(u) for u in units) + self.n_special))
        return real(self, units, pooling, layer_groups, skip)

    monkeypatch.setattr(TorchBackend, "_forward", spy)
    return passes


def test_batch_tokens_bounds_every_forward_pass(tiny_bert, monkeypatch):
    texts = [" ".join(["the cat sat on the mat"] * k) for k in range(1, 9)]  # 8 to 51 tokens
    passes = record_forward_passes(monkeypatch)
    big = BertEmbedder(tiny_bert, pooling="mean", batch_tokens=100_000).fit_transform(texts)
    assert len(passes) == 1  # control: with room for everything, one pass
    passes.clear()
    small = BertEmbedder(tiny_bert, pooling="mean", batch_tokens=60).fit_transform(texts)
    assert len(passes) > 1 and sum(rows for rows, _ in passes) == len(texts)
    assert all(rows * length <= 60 for rows, length in passes), passes
    np.testing.assert_allclose(small, big, atol=1e-5)


# -- get_feature_names_out(input_features) and the model loader -------------------------------------------------------

def test_feature_names_out_follow_input_features_and_refuse_others(tiny_bert):
    one = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(TEXTS)  # 1-D input: no feature_names_in_
    names = one.get_feature_names_out()
    assert names.dtype == object and names[0] == "text_mean_00" and len(names) == 32
    # scikit-learn passes the input's name down (a ColumnTransformer, a Pipeline): the features are named after it
    assert one.get_feature_names_out(["review"])[0] == "review_mean_00"
    with pytest.raises(ValueError) as info:
        one.get_feature_names_out(["review", "title"])
    assert str(info.value) == "input_features=['review', 'title'] does not match the input seen in fit (1)."
    df = pd.DataFrame({"title": TEXTS, "body": TEXTS})
    two = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(df)
    assert list(two.get_feature_names_out(["title", "body"])) == list(two.get_feature_names_out())
    with pytest.raises(ValueError) as info:  # the right count, other names
        two.get_feature_names_out(["body", "title"])
    assert str(info.value) == ("input_features=['body', 'title'] does not match the input seen in fit "
                               "(['title', 'body']).")
    # with columns= the features are named after the selected columns, whatever names the input had
    sel = BertEmbedder(tiny_bert, columns=["body"], pooling="mean", layers=-1).fit(df)
    assert sel.get_feature_names_out(["title", "body"])[0] == "body_mean_00"


def test_a_multiindex_columns_features_are_named_after_its_levels_joined(tiny_bert):
    # they were named after the tuple's repr, "('review', 'title')_mean_00": quotes, a comma and spaces in every
    # name, which LightGBM refuses as a feature name (its JSON characters) and no one can type as a column
    cols = pd.MultiIndex.from_tuples([("review", "title"), ("review", "body"), ("note", "")])
    df = pd.DataFrame({c: TEXTS for c in cols})
    flat = pd.DataFrame({"review_title": TEXTS, "review_body": TEXTS, "note": TEXTS})
    emb = BertEmbedder(tiny_bert, pooling="mean", layers=-1).set_output(transform="pandas")
    out, want = emb.fit_transform(df), clone(emb).fit_transform(flat)
    names = list(emb.get_feature_names_out())
    assert names[:2] == ["review_title_mean_00", "review_title_mean_01"] and names[32] == "review_body_mean_00"
    assert names[64] == "note_mean_00"  # the level pandas pads with "" is left out
    assert names == list(out.columns) == list(want.columns)
    np.testing.assert_array_equal(out.to_numpy(), want.to_numpy())
    assert emb.transform(df).shape == (4, 96)  # and transform reads the frame as fit did
    with pytest.raises(ValueError, match=r"^The columns of X \(\[\('review', 'body'\), \('review', 'title'\), \('note', "
                       r"''\)\]\) are those seen in fit but in another order"):
        emb.transform(df[[("review", "body"), ("review", "title"), ("note", "")]])
    # a refusal naming a row names its column as X labels it, which X[...] finds
    holed = df.astype(object)
    holed.iloc[1, 1] = None
    with pytest.raises(ValueError, match=r"^row 1 of column \('review', 'body'\) is missing"):
        clone(emb).fit_transform(holed)
    # one column of it, as a Series or selected by columns=, is named alike
    one = BertEmbedder(tiny_bert, pooling="mean", layers=-1)
    assert one.fit(df[("review", "body")]).get_feature_names_out()[0] == "review_body_mean_00"
    picked = BertEmbedder(tiny_bert, columns=[("review", "body")], pooling="mean", layers=-1).fit(df)
    assert picked.get_feature_names_out()[0] == "review_body_mean_00"
    # and one column's tuple alone is that column, as df[("review", "body")] reads it (it was read as the two names
    # 'review' and 'body', "not found")
    one_label = BertEmbedder(tiny_bert, columns=("review", "body"), pooling="mean", layers=-1).fit(df)
    assert list(one_label.get_feature_names_out()) == list(picked.get_feature_names_out())
    assert list(one.get_feature_names_out([("review", "body")])[:1]) == ["review_body_mean_00"]
    # two columns whose joined names are alike are refused, as two columns 1 and "1" are
    twins = pd.DataFrame({("a", "b_c"): TEXTS, ("a_b", "c"): TEXTS})
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert).fit(twins)
    # with advice that renames one on a MultiIndex (df.rename(columns={('a', 'b_c'): ...}) renames nothing there)
    assert str(info.value) == ("columns ('a', 'b_c') and ('a_b', 'c') of the DataFrame would both name their features "
                               "'a_b_c_...'; rename one of them first (df.rename(columns={'c': ...}, level=1)).")
    assert twins.rename(columns={"c": "d"}, level=1).columns.tolist() == [("a", "b_c"), ("a_b", "d")]


@pytest.mark.parametrize("output", ["default", "pandas", "polars"])
def test_a_transform_of_no_rows_gives_no_rows_of_the_fitted_width_names_and_dtype(tiny_bert, output):
    # a filter upstream that leaves no rows (a day without reviews) is no error at transform, as in scikit-learn;
    # fit on no rows is (test_input_containers_are_named_and_refused_word_for_word)
    df = pd.DataFrame({"title": TEXTS, "body": TEXTS}, index=range(10, 14))
    emb = BertEmbedder(tiny_bert, pooling="cls+mean", layers=-1).set_output(transform=output).fit(df)
    out = emb.transform(df.iloc[:0])
    assert out.shape == (0, 128) and emb.missing_.shape == (0, 2) and emb.stats_.rows == 0
    if output == "default":
        assert out.dtype == np.float32
    else:
        assert list(out.columns) == list(emb.get_feature_names_out())
        assert set(map(str, out.dtypes)) == ({"float32"} if output == "pandas" else {"Float32"})


def test_a_numpy_array_of_layers_embeds_as_its_list(tiny_bert):
    """BertEmbedder(layers=np.arange(-2, 0)) (a grid built with numpy) was refused at fit; now the same vectors,
    names and fingerprint as layers=[-2, -1], and it clones and pickles."""
    import pickle

    import numpy as np
    from sklearn.base import clone

    from bertfeat import BertEmbedder

    texts = ["a short text", "another one, longer than the first"]
    as_list = BertEmbedder(model=tiny_bert, layers=[-2, -1], layer_agg="concat").fit(texts)
    as_array = clone(BertEmbedder(model=tiny_bert, layers=np.arange(-2, 0), layer_agg="concat")).fit(texts)
    np.testing.assert_array_equal(as_array.transform(texts), as_list.transform(texts))
    assert list(as_array.get_feature_names_out()) == list(as_list.get_feature_names_out())
    assert as_array.recipe_.fingerprint() == as_list.recipe_.fingerprint()
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(as_array)).transform(texts), as_list.transform(texts))


def test_concatenated_layer_names_sort_in_feature_order_and_name_their_columns(tiny_bert, tmp_path):
    """A model of 10 or more layers: the layer in a concatenated feature's name is zero-padded (``l02``, ``l10``), so
    names sort in feature order, and each column holds the layer its name says; under 10 layers the names are
    ``l1``..``l9`` as ever."""
    from tests.conftest import build_tiny_bert

    deep = build_tiny_bert(tmp_path / "deep", num_layers=12, hidden=8)
    emb = BertEmbedder(deep, pooling="cls+mean", layers=[2, 10], layer_agg="concat").set_output(transform="pandas")
    got = emb.fit_transform(pd.DataFrame({"review": TEXTS}))
    names = list(got.columns)
    assert names[:2] == ["review_cls_l02_0", "review_cls_l02_1"] and names[8] == "review_cls_l10_0"
    assert names[-1] == "review_mean_l10_7" and sorted(names) == names
    for layer in (2, 10):  # the columns named after a layer are that layer's features
        alone = BertEmbedder(deep, pooling="cls+mean", layers=layer).set_output(transform="pandas")
        one = alone.fit_transform(pd.DataFrame({"review": TEXTS}))
        for pool in ("cls", "mean"):
            np.testing.assert_array_equal(got[[f"review_{pool}_l{layer:02d}_{i}" for i in range(8)]].to_numpy(),
                                          one[[f"review_{pool}_{i}" for i in range(8)]].to_numpy())
    every = BertEmbedder(deep, pooling="max", layers=list(range(13)), layer_agg="concat").fit(TEXTS)
    assert list(every.get_feature_names_out()) == sorted(every.get_feature_names_out())
    shallow = BertEmbedder(tiny_bert, pooling="max", layers=[1, 3], layer_agg="concat").fit(TEXTS)  # 3 layers
    assert list(shallow.get_feature_names_out()[[0, 32]]) == ["text_max_l1_00", "text_max_l3_00"]


def test_the_loader_checks_the_files_and_passes_every_setting_on(tiny_bert, monkeypatch):
    import bertfeat.backend
    import bertfeat.models

    resolved, backends = [], []
    real_resolve = bertfeat.models.resolve_model

    def resolve(model, trust_remote_code=False):
        resolved.append((model, trust_remote_code))
        return real_resolve(model, trust_remote_code=trust_remote_code)

    def backend(spec, device, dtype, trust):
        backends.append((spec.path, device, dtype, trust))
        return "a backend"

    monkeypatch.setattr(bertfeat.models, "resolve_model", resolve)
    monkeypatch.setattr(bertfeat.backend, "get_backend", backend)
    est = BertEmbedder(tiny_bert, device="cpu", dtype="float32", trust_remote_code=True).fit(TEXTS)
    assert resolved == [(tiny_bert, True)]  # at fit, as given
    assert est._backend_loader()() == "a backend"
    assert resolved[1:] == [(tiny_bert, True)]  # a model with its own code must load as it was resolved at fit
    assert [b[1:] for b in backends] == [("cpu", "float32", True)]
    BertEmbedder(tiny_bert).fit(TEXTS)
    assert resolved[2:] == [(tiny_bert, False)]  # and not trusted unless asked


# -- transform's column checks, warnings and wiring ------------------------------------------------------------------

def test_an_array_after_a_frame_is_read_by_position_with_a_warning(tiny_bert):
    """As scikit-learn does: X without column names, after a fit on named columns, is read by position, with a
    warning naming the fitted columns (this crashed with a TypeError before)."""
    df = pd.DataFrame({"a": TEXTS, "b": TEXTS[::-1]})
    est = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(df)
    with pytest.warns(UserWarning) as record:
        got = est.transform(df.to_numpy())
    assert [str(w.message) for w in record] == [
        "X has no column names, but BertEmbedder was fitted with columns ['a', 'b']."]
    np.testing.assert_array_equal(got, est.transform(df))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a frame, or a 1-D fit given 1-D input, warns nothing
        est.transform(df)
        BertEmbedder(tiny_bert).fit(TEXTS).transform(np.asarray(TEXTS))


def test_a_series_after_a_frame_is_its_column_when_named_so_and_refused_when_named_otherwise(tiny_bert):
    """A Series named as the one column fit saw is that column: no "no column names" warning (it had one). A Series
    named otherwise is refused as a frame of another column is (its features would carry the fitted column's name);
    a Series with no name is read by position with the warning, as an array is."""
    df = pd.DataFrame({"review": TEXTS})
    est = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(df)
    want = est.transform(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(est.transform(df["review"]), want)
    for other in (df["review"].rename("title"), df["review"].rename(0)):
        with pytest.raises(ValueError) as info:
            est.transform(other)
        assert str(info.value) == (
            f"X is a Series named {other.name!r}, but BertEmbedder was fitted on the column ['review'], whose name its "
            "features carry; pass that column, or X.rename('review') if this Series holds it, or fit again.")
    with pytest.warns(UserWarning, match=r"^X has no column names, but BertEmbedder was fitted with columns"):
        np.testing.assert_array_equal(est.transform(df["review"].rename(None)), want)
    # int column names (scikit-learn records none): the Series's name is checked against them all the same
    ints = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(pd.DataFrame({7: TEXTS}))
    np.testing.assert_array_equal(ints.transform(pd.Series(TEXTS, name=7)), want)
    with pytest.raises(ValueError, match=r"^X is a Series named 8, but BertEmbedder was fitted on the column \[7\]"):
        ints.transform(pd.Series(TEXTS, name=8))
    two = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(pd.DataFrame({"review": TEXTS, "title": TEXTS}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a named Series has a name: refused by its count, with no word of names
        with pytest.raises(ValueError, match=r"^X has 1 columns, but BertEmbedder is expecting 2 columns as input"):
            two.transform(df["review"])
    polars = pytest.importorskip("polars")
    np.testing.assert_array_equal(est.transform(polars.Series("review", TEXTS)), want)
    with pytest.raises(ValueError, match=r"^X is a Series named 'title'"):
        est.transform(polars.Series("title", TEXTS))


def test_a_frame_with_other_columns_is_refused_word_for_word(tiny_bert):
    df = pd.DataFrame({"a": TEXTS, "b": TEXTS})
    est = BertEmbedder(tiny_bert, columns=["a"]).fit(df)
    with pytest.raises(ValueError) as info:
        est.transform(df[["a"]])
    assert str(info.value) == ("The columns of X (['a']) differ from those seen in fit (['a', 'b']); pass the same "
                               "columns in the same order.")
    # with a selection the whole frame's order is still checked, as scikit-learn checks feature_names_in_
    with pytest.raises(ValueError) as info:
        est.transform(df[["b", "a"]])
    assert str(info.value) == ("The columns of X (['b', 'a']) are those seen in fit but in another order (['a', "
                               "'b']); features would land under the wrong column names. Reorder them first, for "
                               "example X[['a', 'b']].")
    # int column names (no feature_names_in_): a frame with fewer columns is refused by its count
    ints = pd.DataFrame({0: TEXTS, 1: TEXTS})
    est = BertEmbedder(tiny_bert, columns=[0]).fit(ints)
    with pytest.raises(ValueError) as info:
        est.transform(ints[[0]])
    assert str(info.value) == "X has 1 columns, but BertEmbedder is expecting 2 columns as input."


def test_the_truncation_warning_counts_the_texts_embedded(tiny_bert):
    long = " ".join(["the quick brown fox jumps over the lazy dog"] * 5)
    with pytest.warns(TruncationWarning) as record:
        BertEmbedder(tiny_bert, max_length=16, missing="zero").fit_transform([long, None, "a cat", long])
    assert [str(w.message) for w in record] == [
        "2 of 3 texts were longer than max_length=16 tokens and were truncated. Pass long_text='chunk' to embed them "
        "in full, or a larger max_length (up to the model's limit of 64)."]


def test_the_truncation_warning_advises_a_larger_max_length_only_below_the_models_limit(tiny_bert):
    """At the default max_length, the model's limit, the warning told users to pass a larger max_length, which fit
    refuses ('expected an int from 4 to the model's limit of 64 tokens'): what every user with long texts and the
    defaults was told (bf_probe()'s example in R gives it)."""
    long = " ".join(["the quick brown fox jumps over the lazy dog"] * 10)
    for max_length in (None, 64):
        with pytest.warns(TruncationWarning) as record:
            BertEmbedder(tiny_bert, max_length=max_length).fit_transform([long])
        assert [str(w.message) for w in record] == [
            "1 of 1 texts were longer than max_length=64 tokens and were truncated. Pass long_text='chunk' to embed "
            "them in full (max_length is already the model's limit)."]
    old = BertEmbedder(tiny_bert, max_length=16).fit(["a"])
    del old.__dict__["_model_max_length"]  # fitted and pickled by a bertfeat that kept no limit: the advice as before
    with pytest.warns(TruncationWarning, match=r"or a larger max_length \(up to the model's limit\)\.$"):
        old.transform([long])


def test_row_names_in_messages_name_the_column_unless_it_is_the_only_unnamed_one(tiny_bert):
    cases = [
        (["a cat", None], r"^row 1 is missing"),
        (pd.Series(["a cat", None], name="review"), r"^row 1 of column 'review' is missing"),
        (pd.DataFrame({"text": ["a cat", None], "body": ["x", "y"]}), r"^row 1 of column 'text' is missing"),
    ]
    for X, message in cases:
        with pytest.raises(ValueError, match=message):
            BertEmbedder(tiny_bert).fit_transform(X)


def test_sklearn_tags_say_what_input_is_taken(tiny_bert):
    tags = BertEmbedder(tiny_bert).__sklearn_tags__()
    assert (tags.input_tags.string, tags.input_tags.one_d_array, tags.input_tags.two_d_array) == (True, True, True)
    assert tags.input_tags.allow_nan is False  # missing="error": a NaN is refused
    assert tags.transformer_tags.preserves_dtype == [] and tags.requires_fit and not tags.non_deterministic
    for policy in ("zero", "nan"):
        assert BertEmbedder(tiny_bert, missing=policy).__sklearn_tags__().input_tags.allow_nan is True


def test_transform_uses_the_cache_shows_progress_and_shares_all_layers(tiny_bert, tmp_path, capsys, caplog):
    import logging

    cache = str(tmp_path / "cache")
    with caplog.at_level(logging.INFO, logger="bertfeat"):
        first = BertEmbedder(tiny_bert, cache_dir=cache, progress=True).fit_transform(TEXTS)
    assert caplog.messages[-1] == "bertfeat cache: 0 hits, 4 misses, 4 new rows"
    assert "0/4 [" in capsys.readouterr().err  # the bar, on stderr, counting the 4 texts
    with caplog.at_level(logging.INFO, logger="bertfeat"):
        est = BertEmbedder(tiny_bert, cache_dir=cache)
        np.testing.assert_array_equal(est.fit_transform(TEXTS), first)
    assert caplog.messages[-1] == "bertfeat cache: 4 hits, 0 misses, 0 new rows" and est.stats_.cache_hits == 4
    assert capsys.readouterr().err == ""  # progress=False: no bar
    # cache_all_layers: one pass fills every layer and pooling; another recipe is then served from the cache
    BertEmbedder(tiny_bert, cache_dir=cache, cache_all_layers=True, pooling="cls").fit_transform(TEXTS)
    other = BertEmbedder(tiny_bert, cache_dir=cache, cache_all_layers=True, pooling="max", layers=[1])
    got = other.fit_transform(TEXTS)
    assert other.stats_.cache_hits == 4 and other.stats_.cache_misses == 0
    np.testing.assert_allclose(got, BertEmbedder(tiny_bert, pooling="max", layers=[1]).fit_transform(TEXTS),
                               atol=1e-6)


def test_a_model_whose_files_changed_since_fit_is_refused(tiny_bert, tmp_path):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    est = BertEmbedder(str(model)).fit(TEXTS)
    config = model / "config.json"
    config.write_text(config.read_text().replace("{", '{"edited_after_fit": true, ', 1))
    with pytest.raises(ValueError) as info:
        est.transform(TEXTS)
    assert str(info.value) == (f"model={str(model)!r} now resolves to other files than when this BertEmbedder was "
                               f"fitted: its config changed (in {model}), so its features would not match. Point "
                               "model= at the files it was fitted with, or fit again.")


# -- fit: the containers it takes, the recipe it builds, word for word -------------------------------------------------

def test_input_containers_are_named_and_refused_word_for_word(tiny_bert):
    import polars as pl

    def refusal(exc, X, **params):
        return fit_refusal(tiny_bert, exc, X, **params)

    assert refusal(TypeError, "one text") == "Iterable over raw text documents expected, string object received."
    assert refusal(ValueError, ["x"], columns=["a"]) == (
        "columns=['a'] selects DataFrame columns, but X is a list; pass a DataFrame, or leave columns=None for 1-D "
        "text input.")
    assert refusal(ValueError, np.array([[["x"]]])) == (
        "Expected 1-D or 2-D text input, got an array with shape (1, 1, 1).")
    assert refusal(TypeError, {"x", "y"}) == (
        "X is a set, which has no row order; pass a list, an array, a Series or a DataFrame.")
    assert refusal(TypeError, 5) == (
        "X is a int; expected an iterable of texts (list, numpy array, pandas or polars Series) or a DataFrame of "
        "text columns.")
    assert refusal(ValueError, []) == "Found array with 0 sample(s) while a minimum of 1 is required by BertEmbedder."

    def first_name(X):
        return BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(X).get_feature_names_out()[0]

    assert first_name(pl.Series("review", ["a cat"])) == "review_mean_00"  # a polars Series's name, like pandas'
    assert first_name(pd.Series(["a cat"], name="")) == "text_mean_00"  # an empty name is no name
    assert first_name(pd.Series(["a cat"], name="body")) == "body_mean_00"

    class Texts(list):  # a list that happens to carry a name attribute is still just a list
        name = "not a series"

    assert first_name(Texts(["a cat"])) == "text_mean_00"


def test_fit_builds_the_recipe_from_the_parameters(tiny_bert):
    from bertfeat.models import resolve_model

    spec = resolve_model(tiny_bert)
    r = BertEmbedder(tiny_bert).fit(TEXTS).recipe_
    assert (r.model, r.num_layers, r.hidden_size) == (spec.label, 3, 32)
    assert r.stride == 0  # truncate: no stride in the recipe, whatever the default would be
    assert BertEmbedder(tiny_bert, layers=[3, 1], layer_agg="concat").fit(TEXTS).recipe_.layers == (3, 1)
    assert BertEmbedder(tiny_bert, layers=[3, 1]).fit(TEXTS).recipe_.layers == (1, 3)  # mean: order-free, sorted
    # the default stride is a quarter of the window (max_length minus the two special tokens), rounded down
    assert BertEmbedder(tiny_bert, long_text="chunk", max_length=16).fit(TEXTS).recipe_.stride == 3
    assert BertEmbedder(tiny_bert, long_text="chunk", max_length=5).fit(TEXTS).recipe_.stride == 0
    assert BertEmbedder(tiny_bert, long_text="chunk", max_length=16, stride=0).fit(TEXTS).recipe_.stride == 0
    assert BertEmbedder(tiny_bert, long_text="chunk", max_length=16, stride=13).fit(TEXTS).recipe_.stride == 13
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, long_text="chunk", max_length=16, stride=14).fit(TEXTS)
    assert str(info.value) == ("stride=14 is not valid: expected an int from 0 to 13 (tokens shared by consecutive "
                               "windows of max_length=16), or stride=None for a quarter of the window.")
    assert BertEmbedder(tiny_bert, max_length=4).fit(TEXTS).recipe_.max_length == 4  # the smallest window
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, max_length=3).fit(TEXTS)
    assert str(info.value) == ("max_length=3 is not valid: expected an int from 4 to the model's limit of 64 tokens, "
                               "or max_length=None for that limit.")
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, stride=2).fit(TEXTS)
    assert str(info.value) == ("stride=2 applies to long_text='chunk' only (long_text='truncate' embeds one window per "
                               "text); pass long_text='chunk' as well, or stride=None.")


def test_runtime_parameters_are_checked_at_their_bounds_word_for_word(tiny_bert, tmp_path):
    from pathlib import Path

    def refusal(**params):
        return fit_refusal(tiny_bert, ValueError, **params)

    BertEmbedder(tiny_bert, batch_tokens=1).fit(TEXTS)  # the smallest budget (one sequence a pass)
    assert refusal(batch_tokens=0) == "batch_tokens=0 is not valid: expected a positive int or None."
    assert refusal(cache_dir=3) == "cache_dir=3 is not valid: expected a directory path or None."
    BertEmbedder(tiny_bert, cache_dir=Path(tmp_path / "c1")).fit(TEXTS)  # a path object is a path
    assert (tmp_path / "c1").is_dir()
    assert refusal(cache_dir=" ") == ("cache_dir=' ' is not valid: an empty path would make the current directory a "
                                      "cache. Pass a directory path, or cache_dir=None for no cache.")
    assert refusal(cache_all_layers="yes") == "cache_all_layers='yes' is not valid: expected True or False."
    assert refusal(cache_all_layers=True) == (
        "cache_all_layers=True stores every layer in the cache, but cache_dir is None: pass cache_dir= as well "
        "(without a cache there is nothing to share, and cache_all_layers=False is faster).")
    BertEmbedder(tiny_bert, cache_all_layers=True, cache_dir=str(tmp_path / "c2")).fit(TEXTS)


def test_a_refit_on_unnamed_input_forgets_the_old_column_names(tiny_bert):
    est = BertEmbedder(tiny_bert).fit(pd.DataFrame({"a": TEXTS}))
    assert list(est.feature_names_in_) == ["a"]
    est.fit(TEXTS)
    assert not hasattr(est, "feature_names_in_") and est.text_columns_ == ["text"]
    est.transform(TEXTS)  # no warning about lost names: they were forgotten


def test_columns_changed_after_fit_are_refused_never_read_under_the_fitted_names(tiny_bert):
    """(found by a scikit-learn inputs hunt, 2026-11-26) set_params does not refit: after set_params(columns=["b"])
    transform embedded column b under a's feature names, silently; set back to None it said "X has 2 columns, but
    BertEmbedder is expecting 2 columns as input"."""
    df = pd.DataFrame({"a": TEXTS, "b": TEXTS[::-1]})
    est = BertEmbedder(tiny_bert, columns=["a"], pooling="mean", layers=-1).fit(df)
    expected = est.transform(df)
    for columns, selected in ((["b"], ["b"]), (None, ["a", "b"]), (["b", "a"], ["b", "a"])):
        est.set_params(columns=columns)
        with pytest.raises(ValueError) as info:
            est.transform(df)
        assert str(info.value) == (
            f"columns={columns!r} selects the columns {selected} of X, but this BertEmbedder was fitted on the columns "
            "['a'], whose names its features carry; call fit again after changing columns.")
    est.set_params(columns="a")  # the same selection, written otherwise
    np.testing.assert_array_equal(est.transform(df), expected)
    ints = pd.DataFrame({0: TEXTS, 1: TEXTS})  # names no scikit-learn check records
    est = BertEmbedder(tiny_bert, columns=[0]).fit(ints).set_params(columns=[1])
    with pytest.raises(ValueError, match=r"^columns=\[1\] selects the columns \['1'\] of X, but this BertEmbedder was "
                                         r"fitted on the columns \['0'\]"):
        est.transform(ints)


def test_the_reorder_refusal_of_int_named_columns_shows_a_selection_that_works(tiny_bert):
    """(found by a scikit-learn inputs hunt, 2026-11-26) the refusal of int-named columns in another order said
    "Reorder them first, for example X[['0', '1']]", which is a KeyError on a frame whose columns are 0 and 1."""
    df = pd.DataFrame({0: TEXTS, 1: TEXTS[::-1]})
    est = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(df)
    swapped = df[[1, 0]]
    with pytest.raises(ValueError) as info:
        est.transform(swapped)
    assert str(info.value) == ("The columns of X ([1, 0]) are those seen in fit but in another order ([0, 1]); features "
                               "would land under the wrong column names. Reorder them first, for example X[[0, 1]].")
    X = swapped  # the advice, followed
    np.testing.assert_array_equal(est.transform(eval(str(info.value).rsplit("for example ", 1)[1].rstrip("."))),
                                  est.transform(df))


def test_numpy_scalars_in_refusals_are_shown_as_the_values_they_hold(tiny_bert):
    """(found by a scikit-learn inputs hunt, 2026-11-26) the sibling of the np.int64(12) row label: a MultiIndex
    row's label was shown as (np.int64(2), 'x'), and a value as 'holds float64 np.float64(1.5)'."""
    rows = pd.MultiIndex.from_tuples([(1, "x"), (2, "x")])
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert).fit_transform(pd.Series(["a cat", None], index=rows))
    assert str(info.value).startswith("row 1 (index (2, 'x')) is missing (")
    cases = [
        (["a cat", np.float64(1.5)], "row 1 holds float64 1.5, not a string"),
        (["a cat", np.int64(3)], "row 1 holds int64 3, not a string"),
        # numpy's own name for its type: bool from numpy 2, bool_ before
        (["a cat", np.bool_(True)], f"row 1 holds {type(np.bool_(True)).__name__} True, not a string"),
        (pd.Series([1.5, np.nan], dtype=pd.SparseDtype(float)), "row 0 holds float64 1.5, not a string"),
    ]
    for X, message in cases:
        with pytest.raises(TypeError) as info:
            BertEmbedder(tiny_bert).fit_transform(X)
        assert str(info.value).startswith(message)
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert).fit_transform(["a cat", np.float64("nan")])
    assert str(info.value).startswith("row 1 is missing (nan) and missing='error'")


def test_a_frame_with_rows_but_no_columns_is_refused_for_its_columns(tiny_bert):
    """(found by a scikit-learn inputs hunt, 2026-11-26) a DataFrame of 2 rows and no column was refused as
    "Found array with 0 sample(s)", which sends the user looking for lost rows."""
    for X in (pd.DataFrame(index=[0, 1]), np.empty((2, 0), dtype=object)):  # (polars keeps no rows without columns)
        with pytest.raises(ValueError) as info:
            BertEmbedder(tiny_bert).fit(X)
        assert str(info.value) == ("Found array with 0 feature(s) (shape=(2, 0)) while a minimum of 1 is required by "
                                   "BertEmbedder.")
    with pytest.raises(ValueError) as info:  # no rows is still said as scikit-learn says it
        BertEmbedder(tiny_bert).fit(pd.DataFrame({"a": []}, dtype=object))
    assert str(info.value) == "Found array with 0 sample(s) while a minimum of 1 is required by BertEmbedder."


def test_a_frame_with_other_int_named_columns_is_refused_like_other_string_named_ones(tiny_bert):
    """(found by a scikit-learn inputs hunt, 2026-11-26) scikit-learn records no names for int-named columns (as
    pd.DataFrame(array) or read_csv(header=None) make them), and a frame of columns [2, 3] after a fit on [0, 1] was
    embedded under the names 0_... and 1_..., silently, while string names were checked."""
    est = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(pd.DataFrame({0: TEXTS, 1: TEXTS}))
    with pytest.raises(ValueError) as info:
        est.transform(pd.DataFrame({2: TEXTS, 3: TEXTS}))
    assert str(info.value) == ("The columns of X ([2, 3]) differ from those seen in fit ([0, 1]); pass the same "
                               "columns in the same order.")
    selected = BertEmbedder(tiny_bert, columns=[1], pooling="mean", layers=-1).fit(pd.DataFrame({0: TEXTS, 1: TEXTS}))
    with pytest.raises(ValueError, match=r"^The columns of X \(\[1, 2\]\) differ from those seen in fit \(\[0, 1\]\)"):
        selected.transform(pd.DataFrame({1: TEXTS, 2: TEXTS}))  # column 1 is there, but the frame is another
    same = pd.DataFrame({np.int64(0): TEXTS, np.int64(1): TEXTS[::-1]})  # the same labels, another integer type
    np.testing.assert_array_equal(est.transform(same), est.transform(same.to_numpy()))
    # a fit on a list or an array names no columns: a frame after it is read as before
    BertEmbedder(tiny_bert).fit(TEXTS).transform(pd.DataFrame({"review": TEXTS}))
    BertEmbedder(tiny_bert).fit(np.asarray([TEXTS, TEXTS]).T).transform(pd.DataFrame({5: TEXTS, 6: TEXTS}))


@pytest.mark.parametrize("name, value", [
    ("pooling", "max"), ("layers", [0]), ("layer_agg", "concat"), ("max_length", 8), ("long_text", "chunk"),
    ("normalize", True), ("prefix", "the "), ("dtype", "bfloat16"),
])
def test_a_recipe_parameter_changed_after_fit_is_refused_never_ignored(tiny_bert, name, value):
    """(found by a vectors hunt, 2026-11-26) set_params does not refit: after set_params(pooling="max") (or layers,
    max_length, normalize, prefix, ...) transform silently returned the features of the recipe fit built, not of
    the one asked for; the sibling of columns= changed after fit."""
    text = ["the cat sat on the mat"]
    est = BertEmbedder(tiny_bert, pooling="cls", layers=[-1, -2], dtype="float32").fit(text)
    fitted = est.transform(text)
    before = est.get_params()[name]
    est.set_params(**{name: value})
    with pytest.raises(ValueError) as info:
        est.transform(text)
    assert str(info.value) == (
        f"{name}={value!r} was {before!r} when this BertEmbedder was fitted, and its features are still that "
        f"recipe's (set_params does not refit); call fit again after changing {name}.")
    est.set_params(**{name: before})  # set back: the fitted recipe again
    np.testing.assert_array_equal(est.transform(text), fitted)
    est.set_params(**{name: value}).fit(text)  # refitted: the new recipe
    assert est.transform(text).shape[0] == 1


def test_parameters_read_at_transform_may_change_after_fit(tiny_bert, tmp_path):
    text = ["the cat sat on the mat"]
    est = BertEmbedder(tiny_bert, layers=-1, dtype="float32").fit(text)
    fitted = est.transform(text)
    est.set_params(batch_tokens=7, missing="zero", progress=False, cache_dir=tmp_path, device="cpu")
    np.testing.assert_allclose(est.transform(text), fitted, atol=1e-5, rtol=0)
    est.set_params(layers=[3], pooling=["cls", "mean"], dtype="auto")  # the fitted recipe, written otherwise
    np.testing.assert_array_equal(est.transform(text), fitted)
    est.set_params(pooling="mean+cls", max_length=None, layers=0)  # two changes, both named
    with pytest.raises(ValueError) as info:
        est.transform(text)
    assert str(info.value) == (
        "pooling='mean+cls' was 'cls+mean'; layers=0 was -1 when this BertEmbedder was fitted, and its features are "
        "still that recipe's (set_params does not refit); call fit again after changing pooling and layers.")
    with pytest.raises(ValueError, match=r"^pooling='mean\+cls' was 'cls\+mean'; layers=0 was -1 when"):
        est.get_feature_names_out()


def test_another_model_set_after_fit_is_refused_even_when_the_cache_could_answer(tiny_bert, tmp_path):
    """Without the check, every text was a cache hit under the fitted recipe: another model's name answered with the
    tiny BERT's vectors and the model was never loaded to notice."""
    est = BertEmbedder(tiny_bert, cache_dir=tmp_path, dtype="float32").fit(TEXTS)
    est.transform(TEXTS)
    est.set_params(model="default")
    with pytest.raises(ValueError, match=r"^model='default' was .* when this BertEmbedder was fitted, and its features "
                                         r"are still that recipe's \(set_params does not refit\); call fit again after "
                                         r"changing model\.$"):
        est.transform(TEXTS)


def test_a_pipeline_fitted_on_a_gpu_takes_its_model_from_another_path_on_a_cpu(tiny_bert, tmp_path, monkeypatch):
    """(found by a scikit-learn across processes hunt, 2026-11-26) dtype="auto" is fixed at fit (bfloat16 on a GPU).
    Unpickled on a CPU machine where the model lives elsewhere, set_params(model=<the same files there>) was refused
    as another model ("call fit again"), since the check resolved "auto" again, to this CPU's float32; a refit
    would then have changed the features the pipeline's next step was trained on."""
    import shutil

    import bertfeat.gpu
    from bertfeat.exceptions import SlowDtypeWarning

    with monkeypatch.context() as on_a_gpu:
        on_a_gpu.setattr(bertfeat.gpu, "device_count", lambda: 1)
        on_a_gpu.setattr(bertfeat.gpu, "auto_dtype", lambda device: "bfloat16")
        est = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(TEXTS)
    assert est.recipe_.dtype == "bfloat16"
    est = pickle.loads(pickle.dumps(est))  # on a CPU machine now
    warnings.simplefilter("ignore", SlowDtypeWarning)
    there = est.transform(TEXTS)
    moved = shutil.copytree(tiny_bert, tmp_path / "model")
    est.set_params(model=str(moved))
    np.testing.assert_array_equal(est.transform(TEXTS), there)
    assert est.get_feature_names_out()[0] == "text_mean_00" and est.recipe_.dtype == "bfloat16"
    est.set_params(dtype="float32")  # a change of dtype is still a change
    with pytest.raises(ValueError, match=r"^dtype='float32' was 'auto' when this BertEmbedder was fitted"):
        est.transform(TEXTS)


def test_a_relative_model_path_read_from_another_directory_is_named_with_where_it_pointed(tiny_bert, tmp_path,
                                                                                         monkeypatch):
    """(found by a scikit-learn across processes hunt, 2026-11-26) a pipeline fitted with model="tiny-bert0" (a
    directory beside the script) and loaded by a process in another directory (a service, a Dask or Ray worker)
    was told the path is not in the Hugging Face cache and to run `huggingface-cli download tiny-bert0`."""
    import os

    from bertfeat import ModelNotAvailableError

    monkeypatch.chdir(os.path.dirname(tiny_bert))
    name = os.path.basename(tiny_bert)
    est = BertEmbedder(name, dtype="float32").fit(TEXTS)
    there = est.transform(TEXTS)
    est = pickle.loads(pickle.dumps(est))
    monkeypatch.chdir(tmp_path)  # another working directory
    with pytest.raises(ModelNotAvailableError) as info:
        est.transform(TEXTS)
    assert str(info.value) == (
        f"model={name!r} is a relative path, read from the working directory ({tmp_path}), which holds no such "
        f"directory; when this BertEmbedder was fitted it was {tiny_bert}. Name the model by its absolute path: "
        f"set_params(model={tiny_bert!r}) (<step>__model= in a Pipeline).")
    np.testing.assert_array_equal(est.set_params(model=tiny_bert).transform(TEXTS), there)


class _PickledByAnOlderBertfeat:
    """Pickles as a BertEmbedder whose state lacks ``missing_params``: what a bertfeat of before those parameters
    wrote (the pickle names the class and gives its __dict__; loading calls __setstate__ with that dict)."""

    def __init__(self, est, missing_params):
        self.state = {k: v for k, v in est.__getstate__().items() if k not in missing_params}

    def __reduce__(self):
        import copyreg

        return copyreg._reconstructor, (BertEmbedder, object, None), self.state


def test_a_pickle_of_an_older_bertfeat_lacking_newer_parameters_prints_clones_and_transforms(tiny_bert):
    """A pipeline pickled before prefix=, prompt_name= (2026-11-23) or cache_all_layers= existed, loaded by this
    bertfeat: its repr, get_params and clone failed with "'BertEmbedder' object has no attribute 'prefix'" (a
    notebook could not even show it). Each absent parameter takes its default, which is what that version did."""
    est = BertEmbedder(tiny_bert, pooling="mean").fit(TEXTS)
    want = est.transform(TEXTS)
    old = pickle.loads(pickle.dumps(_PickledByAnOlderBertfeat(
        est, {"prefix", "prompt_name", "cache_all_layers", "_recipe_params", "_model_dir_in_fit", "_column_labels_in"})))
    assert type(old) is BertEmbedder and "pooling='mean'" in repr(old)
    params = old.get_params()
    assert params["prefix"] is None and params["prompt_name"] is None and params["cache_all_layers"] is False
    assert params["pooling"] == "mean" and params["model"] == tiny_bert
    np.testing.assert_array_equal(old.transform(TEXTS), want)
    np.testing.assert_array_equal(clone(old).fit(TEXTS).transform(TEXTS), want)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(old)).transform(TEXTS), want)


def test_a_hub_model_whose_newest_revision_changed_since_fit_names_what_changed_and_the_fitted_revision(
        tiny_bert, tmp_path, monkeypatch):
    """A pipeline fitted on a hub name ("org/tiny") and loaded after the Hugging Face cache took a new revision (a
    later `huggingface-cli download` on that machine, or another machine's cache) was told it "now resolves to
    different files ... point model= at the original files": not which files changed, nor where the fitted ones are.
    Now the error names what changed and both revisions, and the fitted revision's folder, still in the cache."""
    import shutil

    import huggingface_hub.constants

    repo = tmp_path / "hub" / "models--org--tiny"
    first, second = repo / "snapshots" / ("1" * 40), repo / "snapshots" / ("2" * 40)
    shutil.copytree(tiny_bert, first)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("1" * 40)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    est = BertEmbedder("org/tiny").fit(TEXTS)
    want = est.transform(TEXTS)
    est = pickle.loads(pickle.dumps(est))
    bertfeat_backend = __import__("bertfeat.backend").backend
    bertfeat_backend.clear_backends()
    shutil.copytree(tiny_bert, second)  # the new revision: another tokenizer setting
    settings = second / "tokenizer_config.json"
    settings.write_text(settings.read_text().replace("{", '{"clean_up_tokenization_spaces": false, ', 1))
    (repo / "refs" / "main").write_text("2" * 40)
    with pytest.raises(ValueError) as info:
        est.transform(TEXTS)
    assert str(info.value) == (
        f"model='org/tiny' now resolves to other files than when this BertEmbedder was fitted: its tokenizer "
        f"changed (now {second}, revision {'2' * 40}; at fit {first}, revision {'1' * 40}), so its features would "
        f"not match. The fitted files are still there: set_params(model={str(first)!r}) (<step>__model= in a "
        "Pipeline) to use them, or fit again.")
    np.testing.assert_array_equal(est.set_params(model=str(first)).transform(TEXTS), want)
    shutil.rmtree(first)  # gone: no folder to name
    with pytest.raises(ValueError) as info:
        est.set_params(model="org/tiny").transform(TEXTS)
    assert str(info.value).endswith(
        f"so its features would not match. Download the fitted revision ({hub_download_command()} org/tiny --revision "
        f"{'1' * 40}) and pass its folder as model=, or fit again.")


def test_a_pickle_of_an_older_bertfeat_refuses_a_recipe_parameter_changed_after_loading(tiny_bert):
    """A pipeline pickled before bertfeat recorded the parameters its recipe was built from (2026-11-26): after
    loading, set_params(pooling="max") (or layers=, model=, ...) was never checked, so transform returned the fitted
    recipe's features under a parameter that says otherwise, silently, as before the vectors hunt's fix. The
    parameters pickled are those it was fitted with: they are now the ones checked."""
    est = BertEmbedder(tiny_bert, pooling="mean").fit(TEXTS)
    want = est.transform(TEXTS)
    old = pickle.loads(pickle.dumps(_PickledByAnOlderBertfeat(est, {"_recipe_params"})))
    np.testing.assert_array_equal(old.transform(TEXTS), want)
    old.set_params(pooling="max")
    with pytest.raises(ValueError, match=r"^pooling='max' was 'mean' when this BertEmbedder was fitted, .*call fit "
                                         r"again after changing pooling\.$"):
        old.transform(TEXTS)
    np.testing.assert_array_equal(old.fit(TEXTS).transform(TEXTS),
                                  BertEmbedder(tiny_bert, pooling="max").fit_transform(TEXTS))


def test_a_pickle_of_a_newer_bertfeat_with_parameters_this_one_lacks_says_they_are_ignored(tiny_bert):
    """A pipeline fitted by a newer bertfeat, whose BertEmbedder has a parameter this one lacks (say revision=),
    loaded here: the parameter was dropped without a word (get_params does not list it, transform does not read it),
    so a setting that decided the features was lost, silently. Now a warning names it."""
    est = BertEmbedder(tiny_bert).fit(TEXTS)
    want = est.transform(TEXTS)
    newer = _PickledByAnOlderBertfeat(est, set())
    newer.state = {**newer.state, "revision": "abc123", "_some_private_state": 1, "other_fitted_": 2}
    with pytest.warns(UserWarning, match=r"^This BertEmbedder was pickled by a newer bertfeat, with parameters this "
                                         r"one does not have: revision='abc123'\. They are ignored here, "):
        loaded = pickle.loads(pickle.dumps(newer))
    np.testing.assert_array_equal(loaded.transform(TEXTS), want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a pickle of this version: nothing to say
        pickle.loads(pickle.dumps(est))



def test_a_pickle_loaded_by_joblib_warns_at_the_callers_line(tiny_bert, tmp_path):
    """joblib.load, scikit-learn's own way to load a fitted model, unpickles in Python (pickle.py), and the warnings
    a loaded pickle gives (parameters of a newer bertfeat; a recipe of another embedding format) named pickle.py's
    line as where they came from, not the caller's (pickle.loads, which unpickles in C, named the caller's)."""
    import dataclasses

    import joblib

    from bertfeat.recipe import FORMAT_VERSION

    est = BertEmbedder(tiny_bert).fit(TEXTS)
    newer = _PickledByAnOlderBertfeat(est, set())
    newer.state = {**newer.state, "revision": "abc123",
                   "recipe_": dataclasses.replace(est.recipe_, format_version=FORMAT_VERSION + 1)}
    joblib.dump(newer, tmp_path / "model.joblib")
    for load in (lambda: joblib.load(tmp_path / "model.joblib"), lambda: pickle.loads(pickle.dumps(newer))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            load()
        said = [w for w in caught if "newer bertfeat" in str(w.message) or "embedding format" in str(w.message)]
        assert len(said) == 2 and {w.filename for w in said} == {__file__}, [(w.filename, w.lineno) for w in said]

def test_a_pipelines_pickle_does_not_grow_with_the_rows_it_was_fitted_or_used_on(tiny_bert):
    """Pipeline.fit calls the embedder's fit_transform on the training set, and missing_ (which texts of the last
    transform were missing) was pickled with it: a pipeline fitted on 200,000 rows pickled to 202 KB, not the few
    kilobytes README promises (10 MB at 10M rows, times the text columns), carrying which training rows were
    missing. missing_ is per call, not fitted state: it stays in this process."""
    pipe = make_pipeline(BertEmbedder(tiny_bert, missing="zero"), LogisticRegression())
    small = len(pickle.dumps(pipe.fit(TEXTS + [None], [0, 1, 0, 1, 0])))
    many = (TEXTS + [None]) * 4000
    pipe.fit(many, [0, 1, 0, 1, 0] * 4000)
    emb = pipe.named_steps["bertembedder"]
    assert emb.missing_.shape == (20_000, 1) and emb.missing_[4::5].all()  # still there in this process
    blob = pickle.dumps(pipe)
    assert len(blob) < small + 1000 < 10_000
    copy.deepcopy(pipe)
    # (found reviewing the merge) scikit-learn's __getstate__ hands back the estimator's own __dict__, so popping
    # missing_ from it took it off the live estimator: joblib.dump(pipe) or a deepcopy lost the caller's mask
    assert emb.missing_.shape == (20_000, 1) and emb.missing_[4::5].all()
    again = pickle.loads(blob)
    assert not hasattr(again.named_steps["bertembedder"], "missing_")
    np.testing.assert_array_equal(again.predict(many[:5]), pipe.predict(many[:5]))
    assert again.named_steps["bertembedder"].missing_.tolist() == [[False]] * 4 + [[True]]


def test_a_pipeline_fitted_before_its_model_familys_vectors_changed_is_refused_not_mixed(tiny_bert, tmp_path,
                                                                                         monkeypatch):
    """MODEL_FORMATS keys anew the recipes of a family whose vectors a bertfeat change altered (ConvBERT, YOSO,
    BigBird, ModernBERT on 2026-11-26), but a recipe pickled before keeps its family's old format (or none: it
    predates the field): such a pipeline looked up the old code's vectors in its cache and wrote this code's beside
    them under the same key, silently. Now the model's load refuses it, saying to fit again (here: bert's format
    bumped after the fit)."""
    import bertfeat.backend
    import bertfeat.recipe

    est = BertEmbedder(tiny_bert, cache_dir=str(tmp_path / "cache")).fit(TEXTS)
    est.transform(TEXTS[:2])
    est = pickle.loads(pickle.dumps(est))
    monkeypatch.setitem(bertfeat.recipe.MODEL_FORMATS, "bert", 1)  # this bertfeat changed bert's vectors
    bertfeat.backend.clear_backends()
    with pytest.raises(ValueError) as info:
        est.transform(TEXTS)
    assert str(info.value) == (
        f"model={tiny_bert!r} is a bert model, whose vectors this bertfeat computes otherwise than the bertfeat this "
        "BertEmbedder was fitted with did (the family's vector format: 1 here, 0 at fit; MODEL_FORMATS in "
        "bertfeat/recipe.py): its features would not match those at fit, nor those in the cache. Fit again.")
    fresh = BertEmbedder(tiny_bert, cache_dir=str(tmp_path / "cache")).fit(TEXTS)
    fresh.transform(TEXTS)
    assert fresh.stats_.cache_hits == 0  # the new format's key: no old vector answers it
