"""What a Ray or Spark worker checks against the driver before it embeds (bertfeat/worker_recipe.py), on recipes
alone: no model, no cluster. The engines' own tests run it in their worker functions (test_ray_worker.py,
test_spark_driver.py)."""

from __future__ import annotations

import socket

import pytest

import bertfeat.worker_recipe as wr
from bertfeat import __version__
from tests.conftest import make_recipe

HOST = socket.gethostname()


def test_the_drivers_recipe_passes_and_names_the_dtype_only_where_the_driver_fixed_it():
    recipe = make_recipe()
    expected = wr.driver_recipe(recipe, "float32")
    assert expected == {**recipe.key_dict(), "model": "counting-fake", "bertfeat_version": __version__}
    wr.check_worker_recipe(recipe, expected, "a Ray worker")
    wr.check_worker_recipe(recipe, None, "a Ray worker")  # nothing to compare
    unfixed = wr.driver_recipe(recipe)
    assert "dtype" not in unfixed
    wr.check_worker_recipe(make_recipe(dtype="bfloat16"), unfixed, "a Ray worker")  # each worker resolves its own
    with pytest.raises(ValueError, match=r"dtype='bfloat16' here, 'float32' on the driver; "):
        wr.check_worker_recipe(make_recipe(dtype="bfloat16"), expected, "a Ray worker")


def test_other_model_files_are_named_file_by_file():
    expected = wr.driver_recipe(make_recipe(), "float32")
    with pytest.raises(ValueError) as err:
        wr.check_worker_recipe(make_recipe(tokenizer_sha256="a" * 64, config_sha256="b" * 64), expected,
                               "a Spark task")
    assert str(err.value).startswith(
        f"a Spark task on host {HOST!r} read other model files at 'counting-fake' than the driver did (config: "
        "sha256 bbbbbbbbbbbb... here, cccccccccccc... on the driver; tokenizer files: sha256 aaaaaaaaaaaa... here, "
        "tttttttttttt... on the driver): that node's copy of the model is stale or another version")


def test_another_bertfeat_on_a_worker_is_refused_before_it_embeds_not_at_the_final_check(monkeypatch):
    """A node with another bertfeat (an upgrade on some nodes only) whose recipe keys agree wrote files whose metadata
    names another version: the job was refused only by the final check of the written files, once every batch had
    run. It is refused as the worker starts now."""
    recipe = make_recipe()
    expected = wr.driver_recipe(recipe, "float32")
    monkeypatch.setattr(wr, "__version__", "0.0.9")  # this worker's bertfeat
    with pytest.raises(ValueError) as err:
        wr.check_worker_recipe(recipe, expected, "a Ray worker")
    assert str(err.value) == (
        f"a Ray worker on host {HOST!r} computes another recipe than the driver from the same model files (bertfeat "
        f"0.0.9 here, {__version__} on the driver): install the same bertfeat (and the same environment) on every "
        "node, then run the job again; nothing was embedded by this worker.")
    with pytest.raises(ValueError, match=r"\(pooling=\['cls'\] here, \['mean'\] on the driver; bertfeat 0.0.9 here"):
        wr.check_worker_recipe(make_recipe(pooling=("cls",)), expected, "a Ray worker")


def other_release(monkeypatch):
    """This process's tokenizer as another transformers/tokenizers release might read the same files: the ids of
    a text with an accent split otherwise."""
    from bertfeat.tokens import ContentTokenizer

    real = ContentTokenizer.__call__
    monkeypatch.setattr(ContentTokenizer, "__call__", lambda self, texts: [
        ids + [1] if "café" in text else ids for text, ids in zip(texts, real(self, texts))])


def test_a_worker_whose_libraries_tokenize_otherwise_is_refused_before_it_embeds(tiny_bert, monkeypatch):
    """A node whose transformers or tokenizers was upgraded (or not) reads the same tokenizer files into other ids:
    the recipe key, which hashes the files, was the same, so its vectors were written to the output and the shared
    cache under it, silently. Each worker now compares the ids its environment gives a set of probe texts with the
    driver's."""
    from bertfeat.arrow import ArrowFeaturizer

    params = {"model": tiny_bert}
    expected = wr.driver_recipe(ArrowFeaturizer(["t"], **params).recipe, "float32", params)
    assert set(expected) >= {"tokenization", "libraries"} and expected["libraries"].startswith("transformers ")
    wr.check_worker_tokenization(params, expected, "a Spark task")  # the same environment
    wr.check_worker_recipe(ArrowFeaturizer(["t"], **params).recipe, expected, "a Spark task")
    other_release(monkeypatch)
    with pytest.raises(ValueError) as err:
        wr.check_worker_tokenization(params, expected, "a Spark task")
    assert str(err.value) == (
        f"a Spark task on host {HOST!r} tokenizes texts into other ids than the driver from the same tokenizer files "
        f"of {tiny_bert!r} ({wr.libraries()} here; {wr.libraries()} on the driver): its vectors would be another "
        "tokenization's under the same recipe. Install the same transformers and tokenizers on every node, then run "
        "the job again; nothing was embedded by this worker.")
