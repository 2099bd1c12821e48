"""What a Ray or Spark worker checks against the driver before it embeds (bertfeat/worker_recipe.py), on recipes
alone: no model, no cluster. The engines' own tests run it in their worker functions (test_ray_worker.py,
test_spark_driver.py)."""

from __future__ import annotations

import re
import socket

import pytest

import bertfeat.worker_recipe as wr
from bertfeat import __version__
from bertfeat.hub import load_options
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
    # a field only one side's recipe has (a prefix the worker's copy of the model's prompts does not give)
    from bertfeat.recipe import PREFIX_FORMAT

    with pytest.raises(ValueError, match=re.escape(
            f"(prefix=None here, 'query: ' on the driver; prefix_format=None here, {PREFIX_FORMAT!r} on the driver; "
            f"bertfeat {__version__} here, {__version__} on the driver)")):
        wr.check_worker_recipe(recipe, wr.driver_recipe(make_recipe(prefix="query: "), "float32"), "a Ray worker")


def test_other_model_files_are_named_file_by_file():
    expected = wr.driver_recipe(make_recipe(), "float32")
    with pytest.raises(ValueError) as err:
        wr.check_worker_recipe(make_recipe(tokenizer_sha256="a" * 64, config_sha256="b" * 64), expected,
                               "a Spark task")
    assert str(err.value) == (
        f"a Spark task on host {HOST!r} read other model files at 'counting-fake' than the driver did (config: "
        "sha256 bbbbbbbbbbbb... here, cccccccccccc... on the driver; tokenizer files: sha256 aaaaaaaaaaaa... here, "
        "tttttttttttt... on the driver): that node's copy of the model is stale or another version, and its vectors "
        "would be another model's. Make the model the same on every node (put it on a filesystem every node mounts, "
        "or copy it to each node again), then run the job again; nothing was embedded by this worker.")
    # a hash the driver did not send (a driver whose recipe lacks it): named as differing, not a TypeError
    sent = {k: v for k, v in expected.items() if k != "weights_sha256"}
    with pytest.raises(ValueError, match=r"\(weights: sha256 wwwwwwwwwwww\.\.\. here, \.\.\. on the driver\)"):
        wr.check_worker_recipe(make_recipe(), sent, "a Spark task")


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
    # every field that differs, in order, and one that only the driver's recipe has (another bertfeat's field)
    with pytest.raises(ValueError) as err:
        wr.check_worker_recipe(make_recipe(pooling=("cls",), max_length=8), {**expected, "prompt": "q: "},
                               "a Ray worker")
    assert str(err.value).startswith(
        f"a Ray worker on host {HOST!r} computes another recipe than the driver from the same model files "
        "(max_length=8 here, 16 on the driver; pooling=['cls'] here, ['mean'] on the driver; prompt=None here, "
        f"'q: ' on the driver; bertfeat 0.0.9 here, {__version__} on the driver): ")


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


@pytest.fixture
def gpus(monkeypatch):
    """This machine's GPUs, as ``dtype="auto"`` sees them: ``gpus(n, {"cuda:1": "float16"})`` gives ``n`` GPUs,
    each choosing bfloat16 unless named; the devices asked are in ``asked``."""
    import bertfeat.gpu

    asked = []

    def have(n, choices=None):
        monkeypatch.setattr(bertfeat.gpu, "device_count", lambda: n)
        monkeypatch.setattr(bertfeat.gpu, "auto_dtype",
                            lambda device: asked.append(device) or (choices or {}).get(device, "bfloat16"))
        return asked

    return have


def test_dtype_auto_is_fixed_for_the_workers_device_and_a_dtype_given_is_left_as_it_is(gpus):
    asked = gpus(1, {"cuda": "float16"})  # the driver's own GPU, a T4
    params = {"model": "m", "dtype": "auto"}
    assert wr.fix_auto_dtype(params, "cuda") == ({"model": "m", "dtype": "float16"}, "float16")
    assert asked == ["cuda"] and params == {"model": "m", "dtype": "auto"}  # the caller's params untouched
    assert wr.fix_auto_dtype({"model": "m"}, "cuda", ask=lambda: 1 / 0) == ({"model": "m", "dtype": "float16"},
                                                                          "float16")  # the driver's GPU, not ask
    assert wr.fix_auto_dtype({"model": "m"}, "cpu") == ({"model": "m", "dtype": "float32"}, None)
    assert wr.fix_auto_dtype({"model": "m"}, "mps") == ({"model": "m", "dtype": "float16"}, None)
    given = {"model": "m", "dtype": "float16"}
    assert wr.fix_auto_dtype(given, "cuda", ask=lambda: 1 / 0)[0] is given
    assert wr.fix_auto_dtype(given, "cuda")[1] is None and wr.fix_auto_dtype(given, "cpu") == (given, None)

    gpus(0)  # a driver without a GPU asks one of the cluster, else guesses bfloat16
    assert wr.fix_auto_dtype({"dtype": "auto"}, "cuda", ask=lambda: "float16") == ({"dtype": "float16"}, "float16")
    assert wr.fix_auto_dtype({"dtype": "auto"}, "cuda") == ({"dtype": "bfloat16"}, "bfloat16")
    assert asked == ["cuda", "cuda"]


def test_a_gpu_worker_that_would_choose_another_dtype_than_the_driver_fixed_is_refused_word_for_word(gpus):
    asked = gpus(2, {"cuda:1": "float16"})
    wr.check_fixed_dtype("bfloat16", "cuda:0", "Ray", "worker")
    wr.check_fixed_dtype("float16", "cuda:1", "Ray", "worker")
    wr.check_fixed_dtype(None, "cuda:1", "Ray", "worker")  # dtype given, or CPU workers: nothing fixed
    wr.check_fixed_dtype("bfloat16", "cpu", "Ray", "worker")  # not a GPU: not asked
    assert asked == ["cuda:0", "cuda:1"]
    with pytest.raises(ValueError) as err:
        wr.check_fixed_dtype("bfloat16", "cuda:1", "Spark", "task")
    assert str(err.value) == (
        "dtype='auto' was fixed on the Spark driver as 'bfloat16' for tasks on a GPU (the output's metadata names it), "
        "but this task's GPU (cuda:1) runs 'float16' for dtype='auto': pass dtype='float16' to run "
        "every task in it, or dtype='bfloat16' to run this one as the others.")


def test_the_libraries_named_in_a_refusal_are_each_with_its_version_or_none(monkeypatch):
    import importlib.metadata

    def version(name):
        if name == "torch":
            raise importlib.metadata.PackageNotFoundError(name)
        return {"transformers": "4.99.1", "tokenizers": "0.30.2"}[name]

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert wr.libraries() == "transformers 4.99.1, tokenizers 0.30.2, torch none"


def test_the_probe_ids_are_the_named_models_read_as_the_embedder_reads_it(tiny_bert, monkeypatch):
    """The model the job names (the bundled one where it names none), its tokenizer loaded with remote code only where
    the job allows it, and the probe texts lowercased where the model's sentence-transformers config says so, as the
    embedder does: the hash the workers compare is that of the ids their embedders would give."""
    import dataclasses
    import hashlib
    import json

    import transformers

    import bertfeat.backend
    import bertfeat.model_files
    import bertfeat.models
    import bertfeat.tokens

    seen, real_resolve, real_load = [], bertfeat.models.resolve_model, transformers.AutoTokenizer.from_pretrained
    spec = dataclasses.replace(real_resolve(tiny_bert), st_do_lower_case=True)

    def resolve(model, *, trust_remote_code=False):
        seen.append(("model", model, trust_remote_code))
        return spec

    def load(path, **kwargs):
        seen.append(("tokenizer", path, kwargs))
        return real_load(path)

    class Content(bertfeat.tokens.ContentTokenizer):
        def __init__(self, tokenizer, lowercase=False):
            seen.append(("lowercase", lowercase))
            super().__init__(tokenizer, lowercase=lowercase)

    monkeypatch.setattr(bertfeat.models, "resolve_model", resolve)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", load)
    monkeypatch.setattr(bertfeat.tokens, "ContentTokenizer", Content)
    monkeypatch.setattr(bertfeat.model_files, "ContentTokenizer", Content)  # the loader the model's backend shares
    bertfeat.backend.clear_backends()  # no tokenizer kept from an earlier test
    digest = wr.tokenization({})
    # (local_files_only where downloads are off, as the tests run: bertfeat.hub.load_options)
    assert seen == [("model", "default", False),
                    ("tokenizer", spec.path, {"trust_remote_code": False, **load_options()}), ("lowercase", True)]
    ids = Content(real_load(spec.path), lowercase=True)(bertfeat.tokens.PROBES)
    assert digest == hashlib.sha256(json.dumps([list(map(int, x)) for x in ids]).encode()).hexdigest()
    seen.clear()
    assert wr.tokenization({"model": "my-model", "trust_remote_code": True}) == digest
    assert seen == [("model", "my-model", True),
                    ("tokenizer", spec.path, {"trust_remote_code": True, **load_options()}), ("lowercase", True)]


def test_a_driver_that_sent_no_probe_ids_has_its_workers_tokenize_nothing(monkeypatch):
    monkeypatch.setattr(wr, "tokenization", lambda params: 1 / 0)  # a worker tokenizing would fail here
    wr.check_worker_tokenization({"model": "m"}, None, "a Ray worker")
    wr.check_worker_tokenization({"model": "m"}, wr.driver_recipe(make_recipe(), "float32"), "a Ray worker")


def test_a_worker_loads_its_models_tokenizer_once_for_its_check_and_its_model(tiny_bert, monkeypatch):
    """Each Ray worker and Spark worker process checks the ids its tokenizer gives the probe texts (tokenization)
    before it embeds, and then loads the model: the check loaded the tokenizer and built its ContentTokenizer (a
    private copy of the Rust tokenizer, checked against transformers' call), and the model's load did both again:
    1.1 s more per worker on a 250,000-token vocabulary (XLM-R's size; measured on the 2-core dev machine), 50 ms
    on MiniLM's. Now the second takes the first's, for the same tokenizer files."""
    import hashlib
    import json

    import transformers

    from bertfeat.backend import clear_backends, get_backend
    from bertfeat.models import resolve_model
    from bertfeat.tokens import PROBES

    loads, real = [], transformers.AutoTokenizer.from_pretrained
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        lambda path, **kwargs: loads.append(path) or real(path, **kwargs))
    spec = resolve_model(tiny_bert)
    clear_backends()  # a model loaded by an earlier test holds its tokenizer
    try:
        digest = wr.tokenization({"model": tiny_bert})
        backend = get_backend(spec, "cpu", "float32")
        assert loads == [spec.path]
        ids = backend.content_tokens(PROBES)  # the check's ids are the model's tokenizer's
        assert digest == hashlib.sha256(json.dumps([list(map(int, x)) for x in ids]).encode()).hexdigest()
        assert wr.tokenization({"model": tiny_bert}) == digest and loads == [spec.path]
        clear_backends()  # dropped with the models: a later load reads the files again
        assert wr.tokenization({"model": tiny_bert}) == digest and loads == [spec.path] * 2
        wr.tokenization({"model": tiny_bert, "trust_remote_code": True})  # loaded otherwise: a tokenizer of its own
        assert loads == [spec.path] * 3
    finally:
        clear_backends()


def test_the_tokenizers_kept_are_the_ones_used_last(tiny_bert, tmp_path, monkeypatch):
    """(found by a session 13 leftovers hunt, 2026-11-27, session 14) The tokenizers a process keeps dropped the one
    loaded first once a fifth was loaded, though it was the one used all along (a worker's model checked between
    trying others): its next use loaded it again (1.1 s on a 250,000-token vocabulary). Now the one used least
    recently goes (bertfeat.recent.keep_recent, as for the models and caches kept)."""
    import shutil

    import transformers

    from bertfeat import model_files
    from bertfeat.models import resolve_model

    monkeypatch.setattr(model_files, "_TOKENIZERS", [])
    loads, real = [], transformers.AutoTokenizer.from_pretrained
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        lambda path, **kwargs: loads.append(path) or real(path, **kwargs))
    specs = [resolve_model(shutil.copytree(tiny_bert, tmp_path / f"copy{i}"))
             for i in range(model_files._TOKENIZERS_KEPT + 1)]
    used = model_files.load_tokenizer(specs[0])
    for spec in specs[1:]:
        model_files.load_tokenizer(spec)
        assert model_files.load_tokenizer(specs[0]) is used  # kept: used after each other one
    assert loads == [spec.path for spec in specs]
    model_files.load_tokenizer(specs[1])  # the one used least recently was dropped
    assert loads == [spec.path for spec in specs] + [specs[1].path]
    for spec in specs[-model_files._TOKENIZERS_KEPT + 2:]:  # the others stay: no load
        model_files.load_tokenizer(spec)
    assert len(loads) == len(specs) + 1
