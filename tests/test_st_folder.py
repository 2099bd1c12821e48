"""bertfeat.st_folder by value, on folders of JSON files alone (no weights, no torch): which folder holds the encoder,
the model's own pooling, normalization, length, lowercasing and prompts, and each refusal word for word.
tests/test_models.py reads the same files through whole models; these pin each value and message exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bertfeat import st_folder
from bertfeat.exceptions import ModelNotAvailableError

TRANSFORMER = "sentence_transformers.models.Transformer"
DAMAGED = ("The file is damaged (a truncated download or copy, an edit gone wrong): download or copy the model again, "
           "or fix the file; sentence-transformers and transformers cannot load it either.")
FIX = "fix the file, or download the model again."


def _write(path: Path, value) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return path


def _refusal(call, *args) -> str:
    with pytest.raises(ModelNotAvailableError) as refused:
        call(*args)
    return str(refused.value)


@pytest.mark.parametrize("value, said", [
    ({"a": 1}, "object"), ([1], "array"), ("x", "string"), (True, "boolean"), (None, "null"), (3, "number"),
    (2.5, "number"),
])
def test_read_json_names_what_the_file_holds_and_what_it_should(tmp_path, value, said):
    f = _write(tmp_path / "m.json", json.dumps(value))
    want = dict if said != "object" else list
    assert _refusal(st_folder.read_json, f, "my-model", want, "the thing") == (
        f"model='my-model': {f} holds a JSON {said} where the thing should be a JSON "
        f"{'object' if want is dict else 'array'}. {DAMAGED}")
    if isinstance(value, (dict, list)):
        assert st_folder.read_json(f, "my-model", type(value), "x") == value


def test_read_json_refuses_bad_json_and_bytes_that_are_not_utf8(tmp_path):
    f = _write(tmp_path / "m.json", '{"a": ')
    try:
        json.loads('{"a": ')
    except ValueError as exc:
        why = str(exc)
    assert _refusal(st_folder.read_json, f, "m", dict, "x") == f"model='m': {f} is not valid JSON ({why}). {DAMAGED}"
    f.write_bytes(b'{"a": "caf\xe9"}')
    assert f"model='m': {f} is not valid JSON ('utf-8' codec can't decode byte 0xe9" in _refusal(
        st_folder.read_json, f, "m", dict, "x")


def test_modules_reads_the_entries_or_none_without_the_file(tmp_path):
    assert st_folder.modules(tmp_path, "m") is None
    entries = [{"idx": 0, "path": "", "type": TRANSFORMER}, {"idx": 1, "path": "1_Pooling", "type": "x.Pooling"}]
    _write(tmp_path / "modules.json", entries)
    assert st_folder.modules(tmp_path, "m") == entries
    _write(tmp_path / "sub" / "modules.json", {"0": TRANSFORMER})
    assert "holds a JSON object where the list of the model's modules should be a JSON array" in _refusal(
        st_folder.modules, tmp_path / "sub", "m")


def test_a_modules_folder_named_like_the_file_is_no_modules_file(tmp_path):
    (tmp_path / "modules.json").mkdir()
    assert st_folder.modules(tmp_path, "m") is None


@pytest.mark.parametrize("entry", [
    "just a string", {"path": ""}, {"type": TRANSFORMER}, {"type": 3, "path": ""}, {"type": TRANSFORMER, "path": None},
    {"type": TRANSFORMER, "path": "x" * 200},
])
def test_an_entry_without_a_type_and_path_is_refused_word_for_word(tmp_path, entry):
    f = _write(tmp_path / "modules.json", [{"type": TRANSFORMER, "path": ""}, entry])
    if isinstance(entry, dict) and isinstance(entry.get("path"), str) and entry.get("type") == TRANSFORMER:
        assert st_folder.modules(tmp_path, "m")[1] == entry  # a long path is a path
        return
    assert _refusal(st_folder.modules, tmp_path, "m") == (
        f"model='m': entry 1 of {f} is {json.dumps(entry)[:120]}, not an object with a \"type\" (the module's class) "
        "and a \"path\" (its folder) as sentence-transformers writes: the file is damaged. Download or copy the model "
        "again, or fix the file.")


def test_an_entry_outside_the_folder_is_refused_word_for_word(tmp_path):
    f = _write(tmp_path / "modules.json", [{"type": TRANSFORMER, "path": "../x"}])
    assert _refusal(st_folder.modules, tmp_path, "m") == (
        f"model='m': entry 0 of {f} puts its module in '../x', outside the model's folder (a path from the root or "
        "through '..'), where sentence-transformers refuses to look: a model reads its modules from its own folder. "
        "Fix the file, or download the model again.")


@pytest.mark.parametrize("path, ok", [
    ("", True), ("0_Transformer", True), ("a/b", True), ("a..b", True), ("..a", True),
    ("/abs", False), ("\\abs", False), ("C:\\x", False), ("C:x", False), ("//server/share", False), ("..", False),
    ("a/../b", False), ("a\\..\\b", False), ("a\0b", False),
])
def test_inside_refuses_a_root_a_drive_dot_dot_and_nul(path, ok):
    assert st_folder.inside(path) is ok


def test_the_encoder_folder_is_where_the_first_module_lies(tmp_path):
    assert st_folder.encoder_folder(tmp_path, "m", None) == tmp_path
    assert st_folder.encoder_folder(tmp_path, "m", []) == tmp_path
    assert st_folder.encoder_folder(tmp_path, "m", [{"type": TRANSFORMER, "path": ""}]) == tmp_path
    (tmp_path / "0_Transformer").mkdir()
    assert st_folder.encoder_folder(tmp_path, "m", [{"type": TRANSFORMER, "path": "0_Transformer"}]) == (
        tmp_path / "0_Transformer")
    assert st_folder.encoder_folder(tmp_path, "m", [{"type": "my.Transformer", "path": "0_Transformer"}]) == (
        tmp_path / "0_Transformer")


def test_a_first_module_that_is_no_transformer_is_refused_with_the_encoders_folder_when_it_has_one(tmp_path):
    head = (f"model='m': the first module in {tmp_path / 'modules.json'} is 'x.models.BERT' (path '0_BERT'), not a "
            "sentence-transformers Transformer: bertfeat embeds texts with the hidden states of a transformer "
            "encoder, which this model does not start with (a static embedding, a router of several encoders, or an "
            "old save whose modules sentence-transformers no longer loads).")
    entries = [{"type": "x.models.BERT", "path": "0_BERT"}]
    assert _refusal(st_folder.encoder_folder, tmp_path, "m", entries) == head
    (tmp_path / "0_BERT").mkdir()
    assert _refusal(st_folder.encoder_folder, tmp_path, "m", entries) == head  # a folder without a config.json
    _write(tmp_path / "0_BERT" / "config.json", {})
    assert _refusal(st_folder.encoder_folder, tmp_path, "m", entries) == head + (
        f" Its folder {tmp_path / '0_BERT'} holds a config.json: pass model={str(tmp_path / '0_BERT')!r} to embed "
        "with that encoder alone (without the model's own settings).")
    _write(tmp_path / "config.json", {})  # the model's own folder is no encoder to point at
    assert _refusal(st_folder.encoder_folder, tmp_path, "m", [{"type": "x.StaticEmbedding", "path": ""}]).endswith(
        "no longer loads).")


def test_a_transformer_folder_that_is_missing_is_refused_word_for_word(tmp_path):
    _write(tmp_path / "0_Transformer", "a file, not a folder")
    assert _refusal(st_folder.encoder_folder, tmp_path, "m", [{"type": TRANSFORMER, "path": "0_Transformer"}]) == (
        f"model='m': {tmp_path / 'modules.json'} puts the model's Transformer in '0_Transformer', but there is no "
        f"folder {tmp_path / '0_Transformer'}: the copy or download is incomplete. Copy or download the whole model "
        "folder.")


def _st(root: Path, modules: list, pooling: dict | None = None, settings: dict | None = None) -> list:
    _write(root / "modules.json", modules)
    if pooling is not None:
        _write(root / "1_Pooling" / "config.json", pooling)
    if settings is not None:
        _write(root / "sentence_bert_config.json", settings)
    return st_folder.modules(root, "m")


def test_sentence_transformers_config_reads_every_setting(tmp_path):
    assert st_folder.sentence_transformers_config(tmp_path, tmp_path, None, "m") == {}
    entries = _st(tmp_path, [
        {"type": TRANSFORMER, "path": ""}, {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"},
        {"type": "sentence_transformers.models.Dense", "path": "2_Dense"},
        {"type": "sentence_transformers.models.Pooling", "path": "3_Pooling"},  # a second Pooling is not applied
        {"type": "my.WeightedLayerPooling", "path": "", "name": "wlp"},  # no Pooling, though its name ends so
        {"type": "sentence_transformers.models.LayerNorm", "path": ""},
        {"type": "sentence_transformers.models.Normalize", "path": "5_Normalize"},
    ], pooling={"pooling_mode_cls_token": True, "include_prompt": False},
        settings={"max_seq_length": 128, "do_lower_case": True})
    assert st_folder.sentence_transformers_config(tmp_path, tmp_path, entries, "m") == {
        "st_pooling": ("cls",), "st_normalize": True, "st_max_seq_length": 128,
        "st_not_applied": ("Dense (2_Dense)", "Pooling (3_Pooling)", "WeightedLayerPooling (wlp)", "LayerNorm (?)"),
        "st_do_lower_case": True, "st_include_prompt": False, "st_settings_file": "sentence_bert_config.json",
    }


def test_sentence_transformers_config_defaults(tmp_path):
    entries = _st(tmp_path / "a", [{"type": TRANSFORMER, "path": ""}])
    assert st_folder.sentence_transformers_config(tmp_path / "a", tmp_path / "a", entries, "m") == {
        "st_pooling": None, "st_normalize": False, "st_max_seq_length": None, "st_not_applied": (),
        "st_do_lower_case": False, "st_include_prompt": True, "st_settings_file": None,
    }
    entries = _st(tmp_path / "b", [{"type": TRANSFORMER, "path": ""}, {"type": "x.Pooling", "path": "1_Pooling"}],
                  pooling={}, settings={"do_lower_case": None, "max_seq_length": None})
    got = st_folder.sentence_transformers_config(tmp_path / "b", tmp_path / "b", entries, "m")
    assert (got["st_pooling"], got["st_include_prompt"], got["st_do_lower_case"], got["st_max_seq_length"],
            got["st_settings_file"]) == (("mean",), True, False, None, "sentence_bert_config.json")


def test_a_pooling_module_without_its_config_is_refused_word_for_word(tmp_path):
    entries = _st(tmp_path, [{"type": TRANSFORMER, "path": ""}, {"type": "x.Pooling", "path": "1_Pooling"}])
    assert _refusal(st_folder.sentence_transformers_config, tmp_path, tmp_path, entries, "m") == (
        f"model='m': {tmp_path / 'modules.json'} names a Pooling module in '1_Pooling', but there is no "
        f"{tmp_path / '1_Pooling' / 'config.json'}: the copy or download is incomplete. Copy or download the whole "
        "model folder.")


@pytest.mark.parametrize("pooling, settings, said", [
    ({"include_prompt": "false"}, None, '1_Pooling/config.json says "include_prompt": "false", where true or false is '
                                        'expected: '),
    ({"include_prompt": 0}, None, '1_Pooling/config.json says "include_prompt": 0, where true or false is expected: '),
    ({}, {"max_seq_length": 0}, 'sentence_bert_config.json says "max_seq_length": 0, where a positive whole number '
                                '(or null) is expected: '),
    ({}, {"max_seq_length": -3}, 'says "max_seq_length": -3, where a positive whole number (or null) is expected: '),
    ({}, {"max_seq_length": True}, 'says "max_seq_length": true, where a positive whole number (or null) is '
                                   'expected: '),
    ({}, {"max_seq_length": 64.0}, 'says "max_seq_length": 64.0, where a positive whole number (or null) is '
                                   'expected: '),
    ({}, {"do_lower_case": "false"}, 'sentence_bert_config.json says "do_lower_case": "false", where true or false '
                                     'is expected: '),
    ({}, {"do_lower_case": 1}, 'says "do_lower_case": 1, where true or false is expected: '),
])
def test_settings_of_the_wrong_type_are_refused_word_for_word(tmp_path, pooling, settings, said):
    entries = _st(tmp_path, [{"type": TRANSFORMER, "path": ""}, {"type": "x.Pooling", "path": "1_Pooling"}],
                  pooling=pooling, settings=settings)
    message = _refusal(st_folder.sentence_transformers_config, tmp_path, tmp_path, entries, "m")
    assert message.startswith(f"model='m': {tmp_path}/") and message.endswith(said + FIX), message


def test_settings_max_seq_length_of_one_is_taken(tmp_path):
    entries = _st(tmp_path, [{"type": TRANSFORMER, "path": ""}], settings={"max_seq_length": 1})
    assert st_folder.sentence_transformers_config(tmp_path, tmp_path, entries, "m")["st_max_seq_length"] == 1


def test_the_transformer_settings_are_the_first_file_in_sentence_transformers_order_that_holds_any(tmp_path):
    assert st_folder.transformer_settings(tmp_path, "m") == (None, {})
    assert st_folder.TRANSFORMER_SETTINGS == (
        "sentence_bert_config.json", "sentence_roberta_config.json", "sentence_distilbert_config.json",
        "sentence_camembert_config.json", "sentence_albert_config.json", "sentence_xlm-roberta_config.json",
        "sentence_xlnet_config.json")
    _write(tmp_path / "sentence_xlnet_config.json", {"max_seq_length": 7})
    _write(tmp_path / "sentence_roberta_config.json", {"max_seq_length": 9})
    _write(tmp_path / "sentence_bert_config.json", {})  # empty: passed over
    assert st_folder.transformer_settings(tmp_path, "m") == (tmp_path / "sentence_roberta_config.json",
                                                             {"max_seq_length": 9})
    (tmp_path / "sentence_roberta_config.json").unlink()
    assert st_folder.transformer_settings(tmp_path, "m") == (tmp_path / "sentence_xlnet_config.json",
                                                             {"max_seq_length": 7})
    _write(tmp_path / "sentence_bert_config.json", [])
    assert ("sentence_bert_config.json holds a JSON array where the Transformer module's settings should be a JSON "
            "object") in _refusal(st_folder.transformer_settings, tmp_path, "m")


def test_prompts_are_read_with_their_default(tmp_path):
    assert st_folder.prompts(tmp_path, "m") == {}
    f = _write(tmp_path / "config_sentence_transformers.json", {})
    assert st_folder.prompts(tmp_path, "m") == {"prompts": (), "default_prompt_name": None}
    _write(f, {"prompts": None})
    assert st_folder.prompts(tmp_path, "m") == {"prompts": (), "default_prompt_name": None}
    _write(f, {"prompts": {"query": "query: ", "none": None, "empty": ""}, "default_prompt_name": "query"})
    assert st_folder.prompts(tmp_path, "m") == {
        "prompts": (("query", "query: "), ("none", ""), ("empty", "")), "default_prompt_name": "query"}


@pytest.mark.parametrize("cfg, said", [
    ({"prompts": ["query: "]}, '"prompts" in {f} should map names to strings.'),
    ({"prompts": {"q": 3}}, '"prompts" in {f} should map names to strings.'),
    ({"prompts": {"q": ["a"]}}, '"prompts" in {f} should map names to strings.'),
    ({"prompts": {"q": "a"}, "default_prompt_name": 1},
     '{f} says "default_prompt_name": 1, where the name of one of its prompts or null is expected: ' + FIX),
    ({"prompts": {"q": "a", "p": "b"}, "default_prompt_name": "x"},
     '{f} says "default_prompt_name": "x", which names none of its prompts ([\'q\', \'p\']); sentence-transformers '
     'refuses to load it too: fix the file (name one of the prompts, or null), or download the model again.'),
])
def test_prompts_of_the_wrong_shape_are_refused_word_for_word(tmp_path, cfg, said):
    f = _write(tmp_path / "config_sentence_transformers.json", cfg)
    assert _refusal(st_folder.prompts, tmp_path, "m") == "model='m': " + said.format(f=f)


@pytest.mark.parametrize("cfg, modes", [
    ({}, ("mean",)),
    ({"pooling_mode_mean_tokens": False}, ("mean",)),
    ({"pooling_mode_cls_token": True}, ("cls",)),
    ({"pooling_mode_max_tokens": True}, ("max",)),
    ({"pooling_mode_mean_sqrt_len_tokens": True}, ("mean_sqrt_len_tokens",)),
    ({"pooling_mode_weightedmean_tokens": True}, ("weightedmean",)),
    ({"pooling_mode_lasttoken": True}, ("lasttoken",)),
    # sentence-transformers' concatenation order, whatever the file's order
    ({"pooling_mode_lasttoken": True, "pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True,
      "pooling_mode_max_tokens": True}, ("cls", "max", "mean", "lasttoken")),
    ({"pooling_mode": "max", "pooling_mode_cls_token": True}, ("max",)),  # the new key wins
    ({"pooling_mode": ["mean", "cls"]}, ("mean", "cls")),
])
def test_pooling_modes_as_sentence_transformers_reads_them(tmp_path, cfg, modes):
    assert st_folder._pooling_modes(cfg, tmp_path / "c.json", "m") == modes


@pytest.mark.parametrize("mode", ["average", [], ["mean", 3], {"mean": True}, 1, ["mean", "avg"]])
def test_an_unknown_pooling_mode_is_refused_word_for_word(tmp_path, mode):
    f = tmp_path / "c.json"
    assert _refusal(st_folder._pooling_modes, {"pooling_mode": mode}, f, "m") == (
        f"model='m': {f} says \"pooling_mode\": {json.dumps(mode)}, where sentence-transformers expects one of "
        "['cls', 'max', 'mean', 'mean_sqrt_len_tokens', 'weightedmean', 'lasttoken'] or a list of them: " + FIX)


@pytest.mark.parametrize("file, what", [
    ("modules.json", "the list of the model's modules should be a JSON array"),
    ("1_Pooling/config.json", "the Pooling module's settings should be a JSON object"),
    ("sentence_bert_config.json", "the Transformer module's settings should be a JSON object"),
    ("config_sentence_transformers.json", "the model's sentence-transformers settings (its prompts) should be a JSON "
                                          "object"),
])
def test_each_file_of_the_wrong_kind_is_refused_naming_the_model_the_file_and_what_it_holds(tmp_path, file, what):
    _write(tmp_path / "modules.json", [{"type": TRANSFORMER, "path": ""}, {"type": "x.Pooling", "path": "1_Pooling"}])
    _write(tmp_path / "1_Pooling" / "config.json", {})
    f = _write(tmp_path / file, '"text"' if file == "modules.json" else "[1]")

    def read():
        entries = st_folder.modules(tmp_path, "org/the-model")
        st_folder.sentence_transformers_config(tmp_path, tmp_path, entries, "org/the-model")
        st_folder.prompts(tmp_path, "org/the-model")

    held = "string" if file == "modules.json" else "array"
    assert _refusal(read) == f"model='org/the-model': {f} holds a JSON {held} where {what}. {DAMAGED}"


def test_a_pooling_mode_refusal_names_the_model_and_its_pooling_file(tmp_path):
    entries = _st(tmp_path, [{"type": TRANSFORMER, "path": ""}, {"type": "x.Pooling", "path": "1_Pooling"}],
                  pooling={"pooling_mode": "avg"})
    assert _refusal(st_folder.sentence_transformers_config, tmp_path, tmp_path, entries, "org/m").startswith(
        f"model='org/m': {tmp_path / '1_Pooling' / 'config.json'} says \"pooling_mode\": \"avg\", where ")


def test_a_long_entry_is_shown_cut_at_120_characters(tmp_path):
    entry = {"type": 3, "path": "x" * 200}
    f = _write(tmp_path / "modules.json", [entry])
    assert f"entry 0 of {f} is {json.dumps(entry)[:120]}, not an object" in _refusal(st_folder.modules, tmp_path, "m")
    assert json.dumps(entry)[:121] not in _refusal(st_folder.modules, tmp_path, "m")


def test_a_module_type_without_a_dot_is_its_class(tmp_path):
    entries = _st(tmp_path, [{"type": "Transformer", "path": ""}, {"type": "Normalize", "path": ""},
                             {"type": "Dense", "path": "2_Dense"}])
    got = st_folder.sentence_transformers_config(tmp_path, tmp_path, entries, "m")
    assert (got["st_normalize"], got["st_not_applied"]) == (True, ("Dense (2_Dense)",))
