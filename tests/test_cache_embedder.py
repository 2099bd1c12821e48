"""The cache through BertEmbedder and a real (tiny) BERT: warm runs never load the model; estimators share the cache."""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

import bertfeat.backend
from bertfeat import BertEmbedder
from bertfeat.cache import open_cache
from bertfeat.exceptions import CacheError
from tests.conftest import TINY_SENTENCES

REPO = Path(__file__).resolve().parents[1]
TEXTS = TINY_SENTENCES + ["the cat ran in the park", "a dog sat on the mat", TINY_SENTENCES[0]]


def refuse_model(monkeypatch):
    """Make loading any model impossible from here on, so a passing run proves every vector came from the cache."""
    bertfeat.backend.clear_backends()
    monkeypatch.setattr(bertfeat.backend, "get_backend", lambda *a, **k: pytest.fail("the model was loaded"))


def bits(x):
    return np.ascontiguousarray(x).view(np.uint32)


def test_warm_transform_never_loads_the_model_and_matches_bit_for_bit(tiny_bert, tmp_path, monkeypatch, caplog):
    cold_est = BertEmbedder(tiny_bert, pooling="cls+mean", layers=[1, 3], cache_dir=tmp_path, dtype="float32")
    with caplog.at_level(logging.INFO, logger="bertfeat"):
        cold = cold_est.fit_transform(TEXTS)
    assert (cold_est.stats_.cache_hits, cold_est.stats_.cache_misses, cold_est.stats_.cache_new) == (0, 10, 10)
    assert "bertfeat cache: 0 hits, 10 misses, 10 new rows" in caplog.messages
    uncached = BertEmbedder(tiny_bert, pooling="cls+mean", layers=[1, 3], dtype="float32").fit_transform(TEXTS)
    assert bits(cold).tolist() == bits(uncached).tolist()

    refuse_model(monkeypatch)
    caplog.clear()
    warm_est = BertEmbedder(tiny_bert, pooling="cls+mean", layers=[1, 3], cache_dir=tmp_path, dtype="float32")
    with caplog.at_level(logging.INFO, logger="bertfeat"):
        warm = warm_est.fit_transform(TEXTS)
    assert bits(warm).tolist() == bits(cold).tolist()
    assert (warm_est.stats_.cache_hits, warm_est.stats_.cache_misses, warm_est.stats_.cache_new) == (10, 0, 0)
    assert "bertfeat cache: 10 hits, 0 misses, 0 new rows" in caplog.messages


def test_partly_warm_transform_reports_hits_misses_and_new_rows(tiny_bert, tmp_path, caplog):
    est = BertEmbedder(tiny_bert, cache_dir=tmp_path, dtype="float32").fit(TEXTS)
    est.transform(TEXTS[:4])
    with caplog.at_level(logging.INFO, logger="bertfeat"):
        est.transform(TEXTS)
    assert (est.stats_.cache_hits, est.stats_.cache_misses, est.stats_.cache_new) == (4, 6, 6)
    assert caplog.messages[-1] == "bertfeat cache: 4 hits, 6 misses, 6 new rows"


def test_warm_transform_in_a_fresh_process_never_imports_torch(tiny_bert, tmp_path):
    BertEmbedder(tiny_bert, cache_dir=tmp_path, dtype="float32").fit_transform(TEXTS)
    script = (
        "import sys, numpy as np\n"
        "from bertfeat import BertEmbedder\n"
        f"est = BertEmbedder({tiny_bert!r}, cache_dir={str(tmp_path)!r}, dtype='float32')\n"
        f"X = est.fit_transform({TEXTS!r})\n"
        "assert est.stats_.cache_hits == 10 and est.stats_.cache_misses == 0, est.stats_\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules), X.shape)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] (11, 64)"  # default cls+mean: 2 x 32


def test_clone_and_pickle_keep_using_the_cache(tiny_bert, tmp_path, monkeypatch):
    est = BertEmbedder(tiny_bert, cache_dir=tmp_path, dtype="float32").fit(TEXTS)
    cold = est.transform(TEXTS)
    restored = pickle.loads(pickle.dumps(est))
    cloned = clone(est).fit(TEXTS)
    refuse_model(monkeypatch)
    for other in (restored, cloned):
        assert bits(other.transform(TEXTS)).tolist() == bits(cold).tolist()
        assert other.stats_.cache_hits == 10 and other.stats_.cache_misses == 0


@pytest.mark.parametrize("edit", ["weights", "vocabulary", "config"])
def test_model_files_changed_after_fit_are_refused_whether_or_not_the_cache_could_answer(tiny_bert, tmp_path, edit):
    # A fitted embedder whose model folder was edited in place (fine-tuned and saved over, a vocabulary entry
    # changed, layer_norm_eps edited) refused every transform without a cache, and one with a new text,
    # but answered a transform the cache held whole with the old files' vectors: the answer depended on the cache.
    import json

    folder = Path(shutil.copytree(tiny_bert, tmp_path / "model"))
    fitted = BertEmbedder(str(folder), cache_dir=tmp_path / "cache", dtype="float32").fit(TEXTS)
    fitted.transform(TEXTS)  # fills the cache
    if edit == "weights":
        with open(folder / "model.safetensors", "r+b") as fh:  # one weight's last byte, the header untouched
            fh.seek(-1, os.SEEK_END)
            last = fh.read(1)
            fh.seek(-1, os.SEEK_END)
            fh.write(bytes([last[0] ^ 1]))
    elif edit == "vocabulary":
        tokenizer = json.loads((folder / "tokenizer.json").read_text())
        vocab = tokenizer["model"]["vocab"]
        vocab["cat"], vocab["dog"] = vocab["dog"], vocab["cat"]
        (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    else:
        config = json.loads((folder / "config.json").read_text())
        config["layer_norm_eps"] = 0.1
        (folder / "config.json").write_text(json.dumps(config))
    uncached = clone(fitted).set_params(cache_dir=None)
    uncached.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_") or k.startswith("_")})
    expected = rf"now resolves to other files than when this BertEmbedder was fitted: its {edit[:6]}"
    with pytest.raises(ValueError, match=expected.replace("vocabu", "tokenizer")):
        uncached.transform(TEXTS)
    with pytest.raises(ValueError, match=expected.replace("vocabu", "tokenizer")):
        fitted.transform(TEXTS)
    assert not hasattr(fitted, "stats_")
    # fitted anew, the edited files are another recipe, with no cached row
    again = clone(fitted).fit(TEXTS)
    assert again.recipe_.fingerprint() != fitted.recipe_.fingerprint()
    again.transform(TEXTS)
    assert again.stats_.cache_hits == 0


def test_grid_search_over_poolings_hits_the_cache_on_the_second_fit(tiny_bert, tmp_path, monkeypatch):
    texts = np.array(TEXTS * 2, dtype=object)
    y = np.array([0, 1] * 11)
    pipe = Pipeline([("emb", BertEmbedder(tiny_bert, cache_dir=tmp_path, dtype="float32")),
                     ("clf", LogisticRegression(max_iter=200))])
    grid = {"emb__pooling": ["mean", "cls"]}
    first = GridSearchCV(pipe, grid, cv=2).fit(texts, y)
    infos = open_cache(tmp_path).info()
    assert sorted(tuple(i.recipe["pooling"]) for i in infos) == [("cls",), ("mean",)]
    assert all(i.rows == 10 for i in infos)

    refuse_model(monkeypatch)
    second = GridSearchCV(pipe, grid, cv=2).fit(texts, y)
    assert second.best_estimator_.named_steps["emb"].stats_.cache_hits == 10
    np.testing.assert_array_equal(first.cv_results_["mean_test_score"], second.cv_results_["mean_test_score"])


def test_pickled_pipeline_creates_a_missing_cache_dir_when_it_can(tiny_bert, tmp_path):
    est = BertEmbedder(tiny_bert, cache_dir=tmp_path / "elsewhere" / "cache", dtype="float32").fit(TEXTS)
    shutil.rmtree(tmp_path / "elsewhere")  # fit made it; on the machine the pickle travels to it does not exist
    restored = pickle.loads(pickle.dumps(est))
    assert restored.transform(TEXTS[:3]).shape == (3, 64)
    assert restored.stats_.cache_new == 3
    assert (tmp_path / "elsewhere" / "cache").is_dir()


def test_pickled_pipeline_with_an_unusable_cache_dir_says_what_to_do(tiny_bert, tmp_path):
    est = BertEmbedder(tiny_bert, cache_dir=str(tmp_path / "home" / "alice" / "cache"), dtype="float32").fit(TEXTS)
    shutil.rmtree(tmp_path / "home")
    (tmp_path / "home").write_text("a file where the other machine had a directory")
    restored = pickle.loads(pickle.dumps(est))
    with pytest.raises(CacheError, match=r"home/alice/cache.*cannot be created.*pickled pipeline.*set_params"):
        restored.transform(TEXTS)
    restored.set_params(cache_dir=tmp_path / "here")
    assert restored.transform(TEXTS).shape == (11, 64)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_a_transform_stopped_in_a_worker_thread_keeps_what_it_finished_and_leaves_no_state(tiny_bert, tmp_path,
                                                                                            monkeypatch, stop,
                                                                                            progress_bars):
    # Ctrl-C (or a batch the model fails on) in the middle of a transform, in a notebook that goes on: the batches
    # that came back are cached, with the vectors a run of the whole gives, and the process is as before: no
    # bertfeat thread left running, torch's thread count and the count of running calls as they were, the progress
    # bar closed.
    import threading

    import torch

    from bertfeat import hardware
    from bertfeat.encode import text_key

    texts = [f"{s} number {i}" for i, s in enumerate(TINY_SENTENCES * 8)]
    params = dict(model=tiny_bert, batch_tokens=96)
    want = BertEmbedder(**params).fit_transform(texts)
    backend = bertfeat.backend.get_backend(bertfeat.models.resolve_model(tiny_bert), "cpu", "float32")
    assert backend.workers_now() > 1 or torch.get_num_threads() == 1  # batches in worker threads wherever cores allow
    threads_before, shared_before = torch.get_num_threads(), dict(hardware._SHARED)
    real, calls = backend._forward, []

    def stops_at_the_fourth(*args):
        calls.append(threading.current_thread().name)
        if len(calls) == 4:
            raise stop("stopped at a batch (simulated)")
        return real(*args)

    monkeypatch.setattr(backend, "_forward", stops_at_the_fourth)
    est = BertEmbedder(cache_dir=str(tmp_path), progress=True, **params).fit(texts)
    with pytest.raises(stop):
        est.transform(texts)
    assert progress_bars[-1].shown and progress_bars[-1].bar.disable  # shown, then closed
    monkeypatch.setattr(backend, "_forward", real)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("bertfeat")]
    assert (torch.get_num_threads(), hardware._SHARED) == (threads_before, shared_before)

    recipe = est.recipe_
    found = open_cache(tmp_path).lookup(recipe, [text_key(t) for t in texts])[0]
    assert 0 < found.sum() < len(texts)
    got = est.transform(texts)
    assert est.stats_.cache_hits == found.sum()
    # cached from the batches a whole run has: the same bits
    assert bits(got[found]).tolist() == bits(want[found]).tolist()
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)  # the rest ran in other batches
