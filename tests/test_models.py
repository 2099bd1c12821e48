import json
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


@pytest.mark.parametrize("bad", ["", None, 3])
def test_model_must_be_a_name_or_path(bad):
    with pytest.raises(ValueError, match="model="):
        resolve_model(bad)
