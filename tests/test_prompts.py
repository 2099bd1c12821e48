"""prefix= and prompt_name=: part of the recipe, inside max_length, repeated in every chunk window, from ST configs."""

import json
import shutil
import warnings

import numpy as np
import pytest

from bertfeat import BertEmbedder, ModelNotAvailableError
from bertfeat.encode import encode
from tests.conftest import CountingBackend, make_recipe

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "glmnet loves numeric features"]


@pytest.fixture
def prompted_bert(tiny_bert, tmp_path):
    """The tiny BERT with a sentence-transformers config that defines two prompts."""
    path = tmp_path / "prompted"
    shutil.copytree(tiny_bert, path)
    (path / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": {"query": "query: ", "classification": "classification: "}, "default_prompt_name": None}))
    return str(path)


def test_prefix_is_in_the_fingerprint_and_an_empty_one_changes_nothing():
    plain = make_recipe()
    assert make_recipe(prefix="").fingerprint() == plain.fingerprint()
    assert "prefix" not in plain.key_dict()  # fingerprints of recipes without a prefix are the ones they always had
    assert make_recipe(prefix="query: ").fingerprint() != plain.fingerprint()
    assert make_recipe(prefix="query: ").fingerprint() != make_recipe(prefix="passage: ").fingerprint()


def test_prefix_features_equal_embedding_the_prefixed_texts(tiny_bert):
    est = BertEmbedder(tiny_bert, prefix="statistics meets ", pooling="cls+mean+max").fit(TEXTS)
    got = est.transform(TEXTS)
    want = BertEmbedder(tiny_bert, pooling="cls+mean+max").fit_transform(["statistics meets " + t for t in TEXTS])
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    assert not np.allclose(got, BertEmbedder(tiny_bert, pooling="cls+mean+max").fit_transform(TEXTS), atol=1e-3)
    assert est.recipe_.prefix == "statistics meets "


@pytest.fixture(scope="module")
def tokenizer_families(tmp_path_factory):
    """A tiny encoder for each tokenizer kind: WordPiece (BERT), byte-level BPE (RoBERTa), and SentencePiece's
    unigram model with "▁" for spaces (XLM-R, as the real one and multilingual-e5)."""
    from tests.tiny_encoders import build_tiny_encoder

    root = tmp_path_factory.mktemp("families")
    corpus = ["query: passage: the cat", "query:the dog"]
    return {family: build_tiny_encoder(root / family, family, corpus=corpus,
                                       style="sentencepiece" if family == "xlm-roberta" else None)
            for family in ("bert", "roberta", "xlm-roberta")}


@pytest.mark.parametrize("family", ["bert", "roberta", "xlm-roberta"])
@pytest.mark.parametrize("prefix", ["query: ", "passage:", "query: query: "])
def test_a_prefix_gives_the_vectors_of_the_prefixed_texts_with_every_tokenizer(tokenizer_families, family, prefix):
    """The prefix is tokenized with the text, as sentence-transformers does: tokenized alone and put before the
    text's own tokens it gave a lone-space token and took the first word's space marker away on byte-level BPE and
    SentencePiece (a mean-pooled difference of 0.25 on RoBERTa; multilingual-e5's "query: " is one such prefix)."""
    path = tokenizer_families[family]
    texts = TEXTS + ["the quick brown fox jumps over the lazy dog " * 3]  # truncated at max_length=24
    got = BertEmbedder(path, prefix=prefix, pooling="cls+mean", max_length=24).fit_transform(texts)
    want = BertEmbedder(path, pooling="cls+mean", max_length=24).fit_transform([prefix + t for t in texts])
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_the_prefix_is_cut_from_each_text_as_the_tokenizer_joins_them():
    from bertfeat.batching import split_prefix

    alone = [7, 8, 9]  # "query: " alone: "query", ":", and a lone space
    joint = [[7, 8, 10, 11], [7, 8, 9, 12], [7, 13], []]  # the space joined the word; or not; or merged further
    heads, rest = split_prefix(joint, alone)
    assert heads == [[7, 8], [7, 8, 9], [7], []]
    assert rest == [[10, 11], [12], [13], []]


def test_a_recipe_with_a_prefix_has_a_new_fingerprint_since_the_prefix_is_tokenized_with_the_text():
    from bertfeat.recipe import PREFIX_FORMAT

    assert make_recipe(prefix="query: ").key_dict()["prefix_format"] == PREFIX_FORMAT == 1
    assert "prefix_format" not in make_recipe().key_dict()


def test_prefix_tokens_count_toward_max_length(tiny_bert):
    # "the" is one token of the tiny vocabulary: 6 content tokens + [CLS] [SEP] = 8
    text = "the the the the the the"
    assert BertEmbedder(tiny_bert, max_length=8).fit([text]).transform([text]) is not None
    est = BertEmbedder(tiny_bert, max_length=8)
    est.fit_transform([text])
    assert est.stats_.truncated == 0
    est = BertEmbedder(tiny_bert, max_length=8, prefix="cat ")
    with pytest.warns(UserWarning, match="truncated"):
        est.fit_transform([text])
    assert est.stats_.truncated == 1


class RecordingBackend(CountingBackend):
    def __init__(self):
        super().__init__()
        self.units = []

    def forward(self, units, pooling, layer_groups):
        self.units.extend(list(u) for u in units)
        return super().forward(units, pooling, layer_groups)


def test_every_chunk_window_starts_with_the_prefix():
    backend = RecordingBackend()
    prefix_ids = backend.tokenize(["q:"])[0]
    recipe = make_recipe(prefix="q:", long_text="chunk", max_length=8, stride=1)
    text = "abcdefghijklmn"  # 14 content tokens; windows of 8 - 2 special - 2 prefix = 4
    X, stats = encode([text], recipe, lambda: backend)
    assert len(backend.units) > 3 and stats.chunked == 1
    ids = backend.tokenize([text])[0]
    assert all(u[:2] == prefix_ids and 3 <= len(u) <= 6 for u in backend.units)
    assert [t for u in backend.units for t in u[2:]][:4] == ids[:4]  # the text's own tokens follow the prefix
    assert max(len(u) for u in backend.units) + backend.n_special == 8


def test_a_prefix_that_leaves_no_room_is_an_error():
    recipe = make_recipe(prefix="0123456789abcdef", max_length=8)
    with pytest.raises(ValueError, match=r"prefix='0123456789abcdef' takes 16 tokens.*larger max_length"):
        encode(["x"], recipe, lambda: CountingBackend())


def test_prompt_name_from_the_sentence_transformers_config(prompted_bert):
    by_name = BertEmbedder(prompted_bert, prompt_name="query").fit(TEXTS)
    by_prefix = BertEmbedder(prompted_bert, prefix="query: ").fit(TEXTS)
    assert by_name.recipe_.prefix == "query: "
    assert by_name.recipe_.fingerprint() == by_prefix.recipe_.fingerprint()
    np.testing.assert_array_equal(by_name.transform(TEXTS), by_prefix.transform(TEXTS))
    other = BertEmbedder(prompted_bert, prompt_name="classification").fit(TEXTS)
    assert other.recipe_.fingerprint() != by_name.recipe_.fingerprint()
    with pytest.raises(ValueError, match=r"prompt_name='passage' is not a prompt.*\['query', 'classification'\]"):
        BertEmbedder(prompted_bert, prompt_name="passage").fit(TEXTS)


def test_prompt_errors(tiny_bert, prompted_bert):
    with pytest.raises(ValueError, match="defines none"):
        BertEmbedder(tiny_bert, prompt_name="query").fit(TEXTS)
    with pytest.raises(ValueError, match="pass only one of them"):
        BertEmbedder(prompted_bert, prefix="x: ", prompt_name="query").fit(TEXTS)
    with pytest.raises(ValueError, match="prefix=3 is not valid"):
        BertEmbedder(tiny_bert, prefix=3).fit(TEXTS)


def test_a_model_with_prompts_used_without_one_gets_one_note(prompted_bert):
    with pytest.warns(UserWarning, match=r"defines prompts.*'query' \('query: '\).*prompt_name="):
        BertEmbedder(prompted_bert).fit(TEXTS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BertEmbedder(prompted_bert).fit(TEXTS)  # once per model and process
        BertEmbedder(prompted_bert, prompt_name="query").fit(TEXTS)


def test_cli_prefix_prompt_name_and_info(prompted_bert, tmp_path, capsys):
    import pandas as pd
    import pyarrow.parquet as pq

    from bertfeat.cli import main

    pd.DataFrame({"text": TEXTS}).to_csv(tmp_path / "d.csv", index=False)
    common = ["embed", str(tmp_path / "d.csv"), "--text-col", "text", "--model", prompted_bert, "--quiet"]
    assert main(common + ["--out", str(tmp_path / "a.parquet"), "--prompt-name", "query"]) == 0
    assert main(common + ["--out", str(tmp_path / "b.parquet"), "--prefix", "query: "]) == 0
    a, b = pq.read_table(tmp_path / "a.parquet").to_pandas(), pq.read_table(tmp_path / "b.parquet").to_pandas()
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    want = BertEmbedder(prompted_bert, prefix="query: ").fit_transform(TEXTS)
    np.testing.assert_allclose(a.filter(like="text_").to_numpy(dtype=np.float32), want, atol=1e-6)
    assert main(common + ["--out", str(tmp_path / "c.parquet"), "--prefix", "a", "--prompt-name", "query"]) == 2
    assert "pass only one" in capsys.readouterr().err
    assert main(["info", prompted_bert]) == 0
    out = capsys.readouterr().out
    assert "prompts:" in out and "query = 'query: '" in out and "classification" in out
    assert main(["info", prompted_bert, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["prompts"] == {"query": "query: ", "classification": "classification: "}


def test_a_prefix_that_is_not_valid_unicode_is_refused_naming_it_on_every_path(tiny_bert, tmp_path, capsys):
    # a lone surrogate: a command line or a file read with errors="surrogateescape", a JSON "\\ud800" escape. The
    # tokenizer failed on it with "TextEncodeInput must be Union[TextInputSequence, Tuple[...]]", naming nothing
    import pandas as pd

    from bertfeat.cli import main

    with pytest.raises(ValueError, match=r"prefix='caf\\udce9: ' is not valid Unicode: it holds the lone surrogate "
                                         r"'\\udce9' at position 3.*Pass the text as UTF-8"):
        BertEmbedder(tiny_bert, prefix="caf\udce9: ").fit(TEXTS)
    prompted = tmp_path / "prompted"
    shutil.copytree(tiny_bert, prompted)
    (prompted / "config_sentence_transformers.json").write_text('{"prompts": {"query": "q\\ud800: "}}')
    with pytest.raises(ValueError, match=r"prompt_name='query' gives the prefix 'q\\ud800: ' \(from .*"
                                         r"config_sentence_transformers.json\), which is not valid Unicode"):
        BertEmbedder(str(prompted), prompt_name="query").fit(TEXTS)
    pd.DataFrame({"text": TEXTS}).to_csv(tmp_path / "d.csv", index=False)
    # what Python makes of `--prefix $'caf\xe9: '` in a UTF-8 locale
    assert main(["embed", str(tmp_path / "d.csv"), "--text-col", "text", "--model", tiny_bert, "--quiet",
                 "--out", str(tmp_path / "o.parquet"), "--prefix", "caf\udce9: "]) == 2
    assert "is not valid Unicode: it holds the lone surrogate" in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists()


def test_the_room_a_prefix_leaves_is_checked_at_its_exact_bounds():
    from bertfeat.encode import prefix_tokens

    backend = CountingBackend()  # one token per character, 2 special tokens: "ab:" takes 3, max_length 6 leaves 1
    assert prefix_tokens(make_recipe(prefix="ab:", max_length=6), backend) == backend.tokenize(["ab:"])[0]
    assert prefix_tokens(make_recipe(prefix="ab:", max_length=6, long_text="chunk", stride=0), backend)
    assert prefix_tokens(make_recipe(prefix="ab:", max_length=6, long_text="truncate", stride=3), backend)  # no windows
    hint = "; pass a larger max_length or a shorter prefix."  # no stride: none applies, or it is not what fails
    for max_length, left in ((5, 0), (4, 0)):
        for long_text in ("truncate", "chunk"):
            with pytest.raises(ValueError) as info:
                prefix_tokens(make_recipe(prefix="ab:", max_length=max_length, long_text=long_text), backend)
            assert str(info.value) == (f"prefix='ab:' takes 3 tokens, which leaves {left} of max_length={max_length} "
                                       "for the text" + hint)
    with pytest.raises(ValueError) as info:  # a stride equal to the room left would never advance
        prefix_tokens(make_recipe(prefix="ab:", max_length=6, long_text="chunk", stride=1), backend)
    assert str(info.value) == ("prefix='ab:' takes 3 tokens, which leaves 1 of max_length=6 for the text (and stride=1 "
                               "must be below that); pass a larger max_length, a smaller stride, or a shorter prefix.")


def test_a_model_that_returns_fewer_batches_than_it_was_sent_is_an_error():
    backend = CountingBackend()

    def forward_batches(sequences, pooling, groups):  # answers the first batch and stops
        for units in sequences:
            yield backend.forward(units, pooling, groups)
            return

    backend.forward_batches = forward_batches
    with pytest.raises(RuntimeError) as info:
        encode([f"text {i}" for i in range(30)], make_recipe(), lambda: backend, batch_tokens=20)
    assert str(info.value) == "bertfeat: the model returned fewer batches than were sent to it."


def test_prompt_refusals_and_the_note_word_for_word(tiny_bert, prompted_bert, monkeypatch):
    import bertfeat.prompts

    for bad in ("", 3):
        with pytest.raises(ValueError) as info:
            BertEmbedder(prompted_bert, prompt_name=bad).fit(TEXTS)
        assert str(info.value) == (f"prompt_name={bad!r} is not valid: expected the name of one of the model's "
                                   "prompts (`bertfeat info MODEL` lists them) or None.")
    with pytest.raises(ValueError) as info:
        BertEmbedder(prompted_bert, prefix="x: ", prompt_name="query").fit(TEXTS)
    assert str(info.value) == ("prefix='x: ' and prompt_name='query' both set the text put before each text; pass "
                               "only one of them.")
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())  # the note comes once per process
    with pytest.warns(UserWarning) as record:
        BertEmbedder(prompted_bert).fit(TEXTS)
    assert [str(w.message) for w in record] == [
        f"model={prompted_bert!r} defines prompts that its authors put before texts: 'query' ('query: '), "
        "'classification' ('classification: '). Pass prompt_name= (or prefix=) to use one; without one, texts are "
        "embedded as they are."]


def test_the_prompts_note_points_at_the_callers_line(prompted_bert, monkeypatch):
    """Deselected under mutmut (its trampoline adds a frame); scripts/plant_mutants.py runs it on _resolve_prefix."""
    import bertfeat.prompts

    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        BertEmbedder(prompted_bert).fit(TEXTS)
    assert [w.filename for w in caught if "defines prompts" in str(w.message)] == [__file__]


def test_fits_of_one_model_in_two_threads_at_once_give_its_note_once(prompted_bert, monkeypatch):
    """(found by a concurrency hunt, 2026-11-27) the note is given once per model and process, but two fits at once
    (GridSearchCV's candidates under joblib's threading backend, a web service's threads) each found it not yet
    given and each gave it. Here the second fit runs while the first is giving it (the first waits a second for it)."""
    import threading

    import bertfeat.prompts

    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    showing, second_done = threading.Event(), threading.Event()
    shown = []

    def show(message, category, *args, **kwargs):
        if threading.current_thread().name == "first":
            showing.set()
            second_done.wait(1)  # the second fit, if it does not wait for this note, gives its own meanwhile
        shown.append((threading.current_thread().name, str(message)[:40]))

    def fit(name):
        if name == "second":
            assert showing.wait(30)
        BertEmbedder(prompted_bert).fit(TEXTS)
        if name == "second":
            second_done.set()

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", show)
        threads = [threading.Thread(target=fit, args=(name,), name=name) for name in ("first", "second")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert shown == [("first", f"model={prompted_bert!r} defines prompts"[:40])]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork is POSIX")
@pytest.mark.parametrize("lock", ["bertfeat.prompts:_NOTED_LOCK", "bertfeat.cli:_FORMAT.lock"])
def test_a_child_forked_while_another_thread_held_a_notes_or_formats_lock_is_not_stuck_on_it(lock):
    """The locks session 11 put around the process's notes (prompts._NOTED_LOCK) and the command's warning format
    (cli._FORMAT's lock) were copied, held, into a child forked while another thread held them (a note being given, a
    command beginning): the child's first note or command waited on them forever. backend's load lock is renewed in
    the child; these were not (session 11 review)."""
    import importlib
    import os
    import signal
    from types import SimpleNamespace

    from bertfeat.cli import _one_line_warnings
    from bertfeat.prompts import _note_once

    module, names = lock.split(":")
    held = importlib.import_module(module)
    for name in names.split("."):
        held = getattr(held, name)
    with held:  # another thread's note or command, at the fork
        pid = os.fork()
        if pid == 0:  # the child: one note and one command's format, or killed by the alarm where stuck
            signal.alarm(5)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _note_once("prompts", SimpleNamespace(path="/forked/child/model"), "a note in the child")
                with _one_line_warnings("embed"):
                    pass
            os._exit(0 if [str(w.message) for w in caught] == ["a note in the child"] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_note_made_an_error_by_the_warnings_filter_stays_one_on_the_next_call(prompted_bert, monkeypatch):
    """``pytest -W error`` or ``PYTHONWARNINGS=error`` (some CI): the note was marked given before it was raised, so
    the first fit of the model failed and every later one passed silently: a suite red or green by the order of
    its tests. Now a note that did not go through is not counted as given."""
    import bertfeat.prompts

    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            with pytest.raises(UserWarning, match="defines prompts"):
                BertEmbedder(prompted_bert).fit(TEXTS)
    with pytest.warns(UserWarning, match="defines prompts"):
        BertEmbedder(prompted_bert).fit(TEXTS)


def test_a_tokenizer_with_more_special_tokens_leaves_less_room_and_says_so():
    """fit checks the stride against max_length - 2; a tokenizer adding three special tokens ([CLS] [MASK] ...
    [SEP]) leaves less, and the windowing failed with its internal message at transform."""
    class ThreeSpecial(CountingBackend):
        n_special = 3

    recipe = make_recipe(long_text="chunk", max_length=4, stride=1)
    with pytest.raises(ValueError) as info:
        encode(["abcdefgh"], recipe, lambda: ThreeSpecial())
    assert str(info.value) == ("max_length=4 leaves 1 tokens for the text once this tokenizer's 3 special tokens are "
                               "added (and stride=1 must be below that); pass a larger max_length or a smaller stride.")
    for long_text in ("truncate", "chunk"):  # no room at all: the stride is not what fails, nor named
        with pytest.raises(ValueError) as info:
            encode(["abc"], make_recipe(max_length=3, long_text=long_text), lambda: ThreeSpecial())
        assert str(info.value) == ("max_length=3 leaves 0 tokens for the text once this tokenizer's 3 special tokens "
                                   "are added; pass a larger max_length.")
    X, _ = encode(["abcdefgh"], make_recipe(long_text="chunk", max_length=4, stride=0), lambda: ThreeSpecial())
    assert X.shape[0] == 1


@pytest.fixture
def bert_with_nothing_before_the_text(tiny_bert, tmp_path):
    """The tiny BERT with a tokenizer that puts only [SEP] after the text, nothing before it (as GPT-2's adds
    nothing and XLNet's puts its <cls> last)."""
    path = tmp_path / "no-cls"
    shutil.copytree(tiny_bert, path)
    spec = json.loads((path / "tokenizer.json").read_text())
    sep = spec["post_processor"]["special_tokens"]["[SEP]"]
    spec["post_processor"] = {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                                                        {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                              "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                              "special_tokens": {"[SEP]": sep}}
    (path / "tokenizer.json").write_text(json.dumps(spec))
    return str(path)


def test_cls_pooling_is_refused_where_the_tokenizer_puts_nothing_before_the_text(bert_with_nothing_before_the_text,
                                                                                  tmp_path):
    """The first token was the text's first word, and pooling='cls' read its state without a word: texts that
    begin alike got near-alike 'CLS' vectors."""
    from transformers import AutoTokenizer

    path = bert_with_nothing_before_the_text
    tok = AutoTokenizer.from_pretrained(path)
    assert tok("a cat")["input_ids"] == tok("a cat", add_special_tokens=False)["input_ids"] + [tok.sep_token_id]
    message = (r"^pooling='cls\+mean' reads the CLS token, the first of each sequence, but .*'s tokenizer puts no "
               r"special token before the text, so the first token is the text's first word\. Pass pooling='mean'")
    for route in (dict(), dict(cache_dir=str(tmp_path / "cache"), cache_all_layers=True)):
        with pytest.raises(ValueError, match=message):
            BertEmbedder(path, pooling="cls+mean", **route).fit_transform(TEXTS)
        # pooling that reads every token is what the model gives; all-layers caching stores CLS blocks it never uses
        X = BertEmbedder(path, pooling="mean", **route).fit_transform(TEXTS)
        assert X.shape == (3, 32) and np.isfinite(X).all()


def test_the_probe_scores_no_cls_pooling_where_the_tokenizer_puts_nothing_before_the_text(
        bert_with_nothing_before_the_text, tmp_path):
    """The probe's default poolings left out CLS pooling, which the command line and R cannot (they take no
    poolings): scored without it, saying so (review of session 13); CLS pooling alone is refused."""
    from bertfeat.exceptions import ModelNoteWarning
    from bertfeat.probe import probe

    texts = [f"{w} sat on the {v}" for w in ("the cat", "a dog", "emma", "a man") for v in ("mat", "park", "log")]
    y = [0, 1] * 6
    with pytest.raises(ValueError, match=r"poolings=\('mean', 'max'\)"):
        probe(texts, y, model=bert_with_nothing_before_the_text, cv=3, baseline=False, poolings=("cls",))
    note = (r"has a tokenizer that puts no special token before the text \(its first token is the text's first "
            r"word\), so the probe leaves out its CLS pooling and scores its mean and max pooling\.$")
    with pytest.warns(ModelNoteWarning, match=note):
        result = probe(texts, y, model=bert_with_nothing_before_the_text, cv=3, baseline=False,
                       cache_dir=str(tmp_path / "cache"))
    assert set(result.table["pooling"].dropna()) == {"mean", "max", "mean+max"}


def test_cls_pooling_follows_what_the_tokenizer_puts_first_where_its_class_overrides_tokenizer_json(tiny_bert,
                                                                                                  tmp_path):
    """tokenizer.json's post processor is what most tokenizers put around a text, but a tokenizer class may build its
    own: transformers 5's BertTokenizer puts [CLS] text [SEP] whatever the file says (a WordPiece trained with the
    tokenizers library and saved through BertTokenizerFast has none in its file). fit refused CLS pooling, the
    default cls+mean with it, saying the tokenizer puts no special token before the text, while every text ran with
    [CLS] first. fit now follows the tokenizer where the file says nothing goes first; where the tokenizer agrees
    (transformers 4's BertTokenizerFast keeps the file's none), it refuses as before."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from bertfeat.models import resolve_model

    path = tmp_path / "class-builds-its-own"
    shutil.copytree(tiny_bert, path)
    spec = json.loads((path / "tokenizer.json").read_text())
    spec["post_processor"] = None
    (path / "tokenizer.json").write_text(json.dumps(spec))
    config = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "BertTokenizer"}))
    assert resolve_model(str(path)).special_first is False  # what the file says
    tok = AutoTokenizer.from_pretrained(path)
    ids = tok(TEXTS[0])["input_ids"]
    if ids[0] != tok.cls_token_id:  # the tokenizer keeps the file's none: refused as before
        with pytest.raises(ValueError, match=r"^pooling='cls\+mean' reads the CLS token"):
            BertEmbedder(str(path)).fit(TEXTS)
        return
    got = BertEmbedder(str(path), pooling="cls", layers=-1, device="cpu").fit_transform(TEXTS)
    model = AutoModel.from_pretrained(path).eval()
    with torch.inference_mode():
        want = np.stack([model(**tok(t, return_tensors="pt")).last_hidden_state[0, 0].numpy() for t in TEXTS])
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_cls_pooling_asks_a_tokenizer_class_that_builds_its_own_first_token_before_a_warm_cache_answers(tmp_path):
    """The other way round: tokenizer.json's template puts <s> first, but transformers 5's GPTNeoXTokenizer (as
    Llama's, Gemma's, Cohere's: classes whose first token is their add_bos_token setting) rebuilds the processor
    and puts nothing there. fit trusted the file and allowed CLS pooling; the load refused it, but a run the cache
    answered whole never loads: the all-layers rows a pooling='mean' run stored hold CLS blocks of the text's first
    word, and pooling='cls' read them without a word. fit now asks such a class's tokenizer (no weights loaded)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from bertfeat.backend import clear_backends
    from bertfeat.models import resolve_model
    from tests.tiny_encoders import build_tiny_encoder

    path = build_tiny_encoder(tmp_path / "neox-tokenizer", "roberta")
    settings = json.loads((tmp_path / "neox-tokenizer" / "tokenizer_config.json").read_text())
    (tmp_path / "neox-tokenizer" / "tokenizer_config.json").write_text(
        json.dumps({**settings, "tokenizer_class": "GPTNeoXTokenizer"}))
    assert json.loads((tmp_path / "neox-tokenizer" / "tokenizer.json").read_text())["post_processor"]["single"][0] == {
        "SpecialToken": {"id": "<s>", "type_id": 0}}  # what the file says
    assert resolve_model(path).special_first is None  # the file does not decide for this class
    tok = AutoTokenizer.from_pretrained(path)
    cache = str(tmp_path / "cache")
    BertEmbedder(path, pooling="mean", cache_dir=cache, cache_all_layers=True).fit_transform(TEXTS)
    clear_backends()
    if tok(TEXTS[0])["input_ids"][0] != tok.bos_token_id:  # transformers 5: nothing first
        with pytest.raises(ValueError, match=r"^pooling='cls' reads the CLS token, .*puts no special token before"):
            BertEmbedder(path, pooling="cls", cache_dir=cache, cache_all_layers=True).fit(TEXTS)
        return
    got = BertEmbedder(path, pooling="cls", layers=-1, cache_dir=cache, cache_all_layers=True).fit_transform(TEXTS)
    model = AutoModel.from_pretrained(path).eval()
    with torch.inference_mode():
        want = np.stack([model(**tok(t, return_tensors="pt")).last_hidden_state[0, 0].numpy() for t in TEXTS])
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_cls_pooling_asks_a_tokenizer_that_ships_its_own_code_before_a_warm_cache_answers(tiny_bert, tmp_path,
                                                                                            monkeypatch):
    """The same from a tokenizer class the model ships as code (tokenizer_config.json's auto_map, run under
    trust_remote_code=True), which builds its own post processor: tokenizer.json says [CLS] goes first, the class
    puts nothing there. fit allowed CLS pooling and the all-layers rows of a pooling='mean' run answered it (the
    text's first word's state), silently; now the tokenizer is asked at fit."""
    from bertfeat.backend import clear_backends
    from bertfeat.models import resolve_model

    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "modules"))  # transformers copies the code there
    path = shutil.copytree(tiny_bert, tmp_path / "ships-its-tokenizer")
    settings = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps(
        {**settings, "auto_map": {"AutoTokenizer": [None, "tokenization_last.SepLast"]}}))
    (path / "tokenization_last.py").write_text(
        "from tokenizers import processors\nfrom transformers import PreTrainedTokenizerFast\n\n\n"
        "class SepLast(PreTrainedTokenizerFast):\n"  # (an __init__ of its own makes transformers 5 add <s> and </s>)
        "    def __call__(self, *args, **kwargs):\n"
        "        sep = self.convert_tokens_to_ids('[SEP]')\n"
        "        self._tokenizer.post_processor = processors.TemplateProcessing(\n"
        "            single='$A [SEP]', pair='$A [SEP] $B:1 [SEP]:1', special_tokens=[('[SEP]', sep)])\n"
        "        return super().__call__(*args, **kwargs)\n")
    assert resolve_model(str(path), trust_remote_code=True).special_first is None  # the file does not decide
    assert resolve_model(str(path)).special_first is True  # (without the code, transformers would not run it)
    cache = str(tmp_path / "cache")
    BertEmbedder(str(path), pooling="mean", cache_dir=cache, cache_all_layers=True,
                 trust_remote_code=True).fit_transform(TEXTS)
    clear_backends()
    with pytest.raises(ValueError, match=r"^pooling='cls' reads the CLS token, .*puts no special token before"):
        BertEmbedder(str(path), pooling="cls", cache_dir=cache, cache_all_layers=True, trust_remote_code=True).fit(TEXTS)


def test_cls_pooling_is_refused_at_fit_from_tokenizer_json_so_a_warm_cache_cannot_answer(
        bert_with_nothing_before_the_text, tmp_path):
    """The refusal came at the model's load, which a run answered wholly from the cache never reaches: the all-layers
    rows a pooling='mean' run stored hold CLS blocks too, and pooling='cls' then read them (the first word's
    state) without a word. tokenizer.json says what goes before a text, so fit refuses, before any work."""
    from bertfeat.models import resolve_model

    path, cache = bert_with_nothing_before_the_text, str(tmp_path / "cache")
    assert resolve_model(path).special_first is False
    BertEmbedder(path, pooling="mean", cache_dir=cache, cache_all_layers=True).fit_transform(TEXTS)
    with pytest.raises(ValueError, match=r"^pooling='cls' reads the CLS token"):
        BertEmbedder(path, pooling="cls", cache_dir=cache, cache_all_layers=True).fit(TEXTS)
    # what each kind of post processor says: BERT's template and processors, RoBERTa's, GPT-2's byte level alone
    from bertfeat.models import _special_first

    for post, said in ((None, False), ({"type": "ByteLevel"}, False), ({"type": "BertProcessing"}, True),
                       ({"type": "RobertaProcessing"}, True),
                       ({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "TemplateProcessing",
                        "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}]}]}, True),
                       ({"type": "Sequence", "processors": [{"type": "ByteLevel"}]}, False),
                       ({"type": "SomethingNew"}, None)):
        folder = tmp_path / f"tok-{said}-{len(json.dumps(post))}"
        folder.mkdir()
        (folder / "tokenizer.json").write_text(json.dumps({"post_processor": post}))
        assert _special_first(folder) is said, post
    assert _special_first(tmp_path) is None  # no tokenizer.json: the load-time check decides
    assert resolve_model("default").special_first is True


def test_cls_pooling_is_refused_at_fit_where_tokenizer_json_does_not_tell(bert_with_nothing_before_the_text, tiny_bert,
                                                                           tmp_path, monkeypatch):
    """Where tokenizer.json does not say what goes before a text (none at all: a slow-only tokenizer; a post
    processor bertfeat does not know), the refusal came at the model's load only, which a run answered wholly from
    the all-layers cache never reaches: pooling='cls' then read the first word's state from the rows a
    pooling='mean' run stored, without a word. Fit now asks the tokenizer itself (no weights loaded)."""
    import bertfeat.models
    from bertfeat.models import resolve_model

    monkeypatch.setattr(bertfeat.models, "_special_first", lambda root, tokenizer=None: None)
    bertfeat.models._describe_cached.cache_clear()
    try:
        path, cache = bert_with_nothing_before_the_text, str(tmp_path / "cache")
        assert resolve_model(path).special_first is None
        BertEmbedder(path, pooling="mean", cache_dir=cache, cache_all_layers=True).fit_transform(TEXTS)
        import bertfeat.backend

        def no_model(*args, **kwargs):
            raise AssertionError("the model was loaded")

        with monkeypatch.context() as m:
            m.setattr(bertfeat.backend, "get_backend", no_model)
            with pytest.raises(ValueError, match=r"^pooling='cls' reads the CLS token"):
                BertEmbedder(path, pooling="cls", cache_dir=cache, cache_all_layers=True).fit_transform(TEXTS)
        # a tokenizer that puts [CLS] first is asked too, and passes
        X = BertEmbedder(tiny_bert, pooling="cls", dtype="float32").fit_transform(TEXTS)
        assert X.shape == (3, 32) and np.isfinite(X).all()
    finally:  # the specs described without tokenizer.json's answer (tiny_bert's is shared) are not kept
        bertfeat.models._describe_cached.cache_clear()


def _instructor_folder(tiny_bert, path, pooling_mode: str = "mean", include_prompt: bool = False):
    """The tiny BERT as a sentence-transformers model whose Pooling config says ``include_prompt`` (INSTRUCTOR-style
    models: false, the text pooled without its prompt's tokens), with the prompt "query: "."""
    model = path if path.exists() else shutil.copytree(tiny_bert, path)
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (model / "1_Pooling").mkdir(exist_ok=True)
    (model / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode": pooling_mode, "include_prompt": include_prompt}))
    (model / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    return model


def test_a_model_that_pools_without_its_prompt_gets_its_own_encode_vectors(tiny_bert, tmp_path):
    # "include_prompt": false in 1_Pooling/config.json: sentence-transformers pools a text's tokens without its
    # prompt's (its [CLS] and the prompt's tokens are masked out of the pooling, not out of attention). bertfeat
    # pooled the prefix with the text and only warned: 0.1-1 off the model's own encode()
    from sentence_transformers import SentenceTransformer

    texts = TEXTS + ["", "the quick brown fox jumps over the lazy dog " * 3]  # one empty (missing), one truncated
    for how in ("mean", "max"):
        model = _instructor_folder(tiny_bert, tmp_path / "instructor", how)
        peer = SentenceTransformer(str(model), device="cpu")
        peer.max_seq_length = 24
        for kw, st_kw in (({"prompt_name": "query"}, {"prompt_name": "query"}),
                          ({"prefix": "passage: "}, {"prompt": "passage: "})):
            mine = BertEmbedder(str(model), pooling=how, layers=-1, dtype="float32", missing="zero", max_length=24,
                                **kw).fit_transform(texts)
            own = peer.encode(texts, **st_kw)
            np.testing.assert_allclose(mine[[0, 1, 2, 4]], own[[0, 1, 2, 4]], atol=1e-5, rtol=0, err_msg=f"{how} {kw}")
    # CLS pooling reads the first token, whichever way the prompt is pooled: the same vectors as a model that pools
    # its prompt (sentence-transformers 3 reads token 0 as well; 6 reads the first token after the prompt instead)
    cls = BertEmbedder(str(model), pooling="cls+mean", layers=-1, dtype="float32", prompt_name="query")
    pooled = _instructor_folder(tiny_bert, tmp_path / "pooled", include_prompt=True)
    with_prompt = BertEmbedder(str(pooled), pooling="cls+mean", layers=-1, dtype="float32", prompt_name="query")
    a, b = cls.fit_transform(TEXTS), with_prompt.fit_transform(TEXTS)
    np.testing.assert_allclose(a[:, :32], b[:, :32], atol=1e-6, rtol=0)
    assert np.abs(a[:, 32:] - b[:, 32:]).max() > 1e-3  # the mean differs: the prompt is left out
    assert cls.recipe_.fingerprint() != with_prompt.recipe_.fingerprint()  # only the pooling of the prefix differs


@pytest.mark.parametrize("family", ["roberta", "xlm-roberta"])
def test_a_prompt_left_out_of_pooling_matches_encode_with_every_tokenizer(tokenizer_families, family, tmp_path):
    # byte-level BPE and SentencePiece: <s> first, and a prefix whose trailing space may join the text's first word
    from sentence_transformers import SentenceTransformer

    model = _instructor_folder(None, shutil.copytree(tokenizer_families[family], tmp_path / family))
    peer = SentenceTransformer(str(model), device="cpu")
    peer.max_seq_length = 24
    texts = TEXTS + ["query: the dog", "x", "the quick brown fox jumps over the lazy dog " * 3]
    stripped = []
    for prefix in ("query: ", "passage:", "query: query: "):
        if peer.tokenize([prefix])["input_ids"].shape[-1] != len(peer.tokenizer(prefix)["input_ids"]):
            stripped.append(prefix)  # sentence-transformers 3 strips each text, the prompt too, before tokenizing
            continue
        mine = BertEmbedder(str(model), pooling="mean", layers=-1, dtype="float32", prefix=prefix,
                            max_length=24).fit_transform(texts)
        np.testing.assert_allclose(mine, peer.encode(texts, prompt=prefix), atol=1e-5, rtol=0, err_msg=prefix)
    if stripped:
        import sentence_transformers

        pytest.skip(f"sentence-transformers {sentence_transformers.__version__} strips the prompt before counting "
                    f"its tokens, so its encode() pools one token more of {stripped} than newer releases, whose rule "
                    "bertfeat follows; the other prompts were checked")


def test_a_prompt_of_no_tokens_left_out_of_pooling_still_leaves_out_the_first_token(tiny_bert, tmp_path):
    # a prefix the tokenizer reads as nothing (" ", a zero-width space): sentence-transformers still counts the
    # prompt's length as [CLS] (the prompt tokenized alone, less its [SEP]) and masks it out of mean and max
    # pooling; bertfeat left nothing out (no prefix tokens: skip 0), so its mean held [CLS], 0.35 off encode()
    from sentence_transformers import SentenceTransformer

    model = _instructor_folder(tiny_bert, tmp_path / "instructor")
    peer = SentenceTransformer(str(model), device="cpu")
    for prefix in (" ", "\u200b"):
        mine = BertEmbedder(str(model), pooling="mean", layers=-1, dtype="float32", prefix=prefix).fit_transform(TEXTS)
        np.testing.assert_allclose(mine, peer.encode(TEXTS, prompt=prefix), atol=1e-5, rtol=0, err_msg=repr(prefix))


def test_a_prompt_left_out_of_pooling_is_left_out_of_every_window_and_keys_its_own_cache(tiny_bert, tmp_path):
    # long_text="chunk" puts the prefix before every window: each window's mean leaves out its [CLS] and the
    # prefix's tokens, and the windows are weighted by the tokens they pool; the cache filled while the prompt was
    # pooled must not answer (the recipe key holds pool_prefix), nor the all-layers cache of the other recipe
    import torch
    from transformers import AutoModel, AutoTokenizer

    from bertfeat.batching import split_windows

    model = _instructor_folder(tiny_bert, tmp_path / "instructor")
    text = "the quick brown fox jumps over the lazy dog " * 4
    prefix, max_length, stride = "query: ", 20, 3
    tok = AutoTokenizer.from_pretrained(str(model))
    bert = AutoModel.from_pretrained(str(model)).eval()
    alone = tok(prefix, add_special_tokens=False)["input_ids"]
    rest = tok(prefix + text, add_special_tokens=False)["input_ids"][len(alone):]
    skip = 1 + len(alone)  # [CLS] and the prompt, as sentence-transformers counts a prompt's length
    means, weights = [], []
    for a, b in split_windows(len(rest), max_length - 2 - len(alone), stride):
        ids = [tok.cls_token_id] + alone + rest[a:b] + [tok.sep_token_id]
        with torch.no_grad():
            hidden = bert(input_ids=torch.tensor([ids])).last_hidden_state[0]
        means.append(hidden[skip:].mean(dim=0).numpy())
        weights.append(len(ids) - skip)
    assert len(means) > 2
    want = np.average(means, axis=0, weights=weights)

    def embed(**kw):
        return BertEmbedder(str(model), pooling="mean", layers=-1, dtype="float32", prompt_name="query",
                            long_text="chunk", max_length=max_length, stride=stride, cache_dir=tmp_path / "cache",
                            **kw).fit_transform([text])[0]

    pooled = _instructor_folder(tiny_bert, tmp_path / "pooled", include_prompt=True)
    for kw in ({}, {"cache_all_layers": True}):
        # the cache first holds the vectors of the same files with the prompt pooled
        before = BertEmbedder(str(pooled), pooling="mean", layers=-1, dtype="float32", prompt_name="query",
                              long_text="chunk", max_length=max_length, stride=stride, cache_dir=tmp_path / "cache",
                              **kw).fit_transform([text])[0]
        assert np.abs(before - want).max() > 1e-3
        np.testing.assert_allclose(embed(**kw), want, atol=1e-5, rtol=0, err_msg=str(kw))
        np.testing.assert_allclose(embed(**kw), want, atol=1e-5, rtol=0, err_msg=f"{kw}, from the cache")


def test_bertfeat_info_says_the_prompt_is_left_out_of_pooling(tiny_bert, tmp_path):
    import contextlib
    import io

    from bertfeat.cli import main

    model = _instructor_folder(tiny_bert, tmp_path / "instructor")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", str(model), "--no-machine"]) == 0
    assert ("prompt:       include_prompt=False in its Pooling config: the model pools a text without its prompt; "
            "so does bertfeat: a --prefix/--prompt-name is attended to but left out of mean and max pooling (cls "
            "reads the first token)") in out.getvalue().splitlines()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", str(tiny_bert), "--no-machine"]) == 0
    assert "prompt:  " not in out.getvalue()


def test_prompts_named_or_valued_empty_are_read_as_sentence_transformers_reads_them(prompted_bert, monkeypatch):
    # {"": "search: "} is a prompt sentence-transformers takes by prompt_name="" (and puts before every text as its
    # default_prompt_name ""), but bertfeat refused prompt_name="" ("not valid: expected the name of one of the model's
    # prompts") while `bertfeat info` listed it, and its note left that default out; {"document": null}, the empty
    # prompt there, had the whole model refused ("should map names to strings")
    from pathlib import Path

    from sentence_transformers import SentenceTransformer

    import bertfeat.prompts
    from bertfeat.models import resolve_model

    folder = Path(prompted_bert)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32}))
    config = folder / "config_sentence_transformers.json"
    config.write_text(json.dumps({"prompts": {"": "search: ", "query": "query: ", "document": None},
                                  "default_prompt_name": ""}))
    assert dict(resolve_model(prompted_bert).prompts) == {"": "search: ", "query": "query: ", "document": ""}
    peer = SentenceTransformer(prompted_bert, device="cpu")
    for name in ("", "document", "query"):
        mine = BertEmbedder(prompted_bert, pooling="mean", layers=-1, dtype="float32",
                            prompt_name=name).fit_transform(TEXTS)
        np.testing.assert_allclose(mine, peer.encode(TEXTS, prompt_name=name), atol=1e-5, rtol=0, err_msg=repr(name))
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    with pytest.warns(UserWarning, match=r"where sentence-transformers' encode\(\) puts the model's default prompt '' "
                                         r"before every text \(its default_prompt_name\): pass prompt_name=''"):
        BertEmbedder(prompted_bert).fit(TEXTS)
    config.write_text(json.dumps({"prompts": {"query": "query: "}}))
    with pytest.raises(ValueError, match=r"prompt_name='' is not valid"):  # no prompt of that name
        BertEmbedder(prompted_bert, prompt_name="").fit(TEXTS[:1])
    config.write_text(json.dumps({"prompts": {"query": 7}}))  # no text at all: still refused, naming the file
    with pytest.raises(ModelNotAvailableError, match=r"\"prompts\" in .*config_sentence_transformers.json should map "
                                                     r"names to strings"):
        resolve_model(prompted_bert)


def test_empty_prompts_are_no_prompts_to_note(prompted_bert, monkeypatch):
    # sentence-transformers 5 and 6 save "prompts": {"query": "", "document": ""} in every model's
    # config_sentence_transformers.json (encode_query and encode_document read them): every such model got the note
    # that its authors put prompts before texts and to pass prompt_name=, which puts nothing before them (the same
    # vectors), and under -W error its fit failed on that note
    import warnings
    from pathlib import Path

    import bertfeat.prompts

    config = Path(prompted_bert) / "config_sentence_transformers.json"
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    for default in (None, "query"):
        config.write_text(json.dumps({"prompts": {"query": "", "document": ""}, "default_prompt_name": default}))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            plain = BertEmbedder(prompted_bert, pooling="mean", dtype="float32").fit_transform(TEXTS)
        named = BertEmbedder(prompted_bert, pooling="mean", dtype="float32", prompt_name="query").fit_transform(TEXTS)
        np.testing.assert_array_equal(plain, named)  # what the note advised changes nothing
    # beside a prompt with a text, an empty one is not named either, nor an empty default
    config.write_text(json.dumps({"prompts": {"query": "", "passage": "passage: "}, "default_prompt_name": "query"}))
    with pytest.warns(UserWarning) as record:
        BertEmbedder(prompted_bert, pooling="mean", dtype="float32").fit(TEXTS)
    assert [str(w.message) for w in record] == [
        f"model={prompted_bert!r} defines prompts that its authors put before texts: 'passage' ('passage: '). Pass "
        "prompt_name= (or prefix=) to use one; without one, texts are embedded as they are."]


def test_the_prompts_note_names_the_prompt_sentence_transformers_puts_by_default(prompted_bert, monkeypatch):
    # default_prompt_name: sentence-transformers' encode() puts that prompt before every text unless told otherwise;
    # the note said only "without one, texts are embedded as they are", so a user comparing with encode() got other
    # vectors with no word of the default that made them differ
    from pathlib import Path

    from sentence_transformers import SentenceTransformer

    import bertfeat.prompts

    config = Path(prompted_bert) / "config_sentence_transformers.json"
    config.write_text(json.dumps({"prompts": {"query": "query: ", "classification": "classification: "},
                                  "default_prompt_name": "query"}))
    (config.parent / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (config.parent / "1_Pooling").mkdir()
    (config.parent / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32}))
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    with pytest.warns(UserWarning) as record:
        plain = BertEmbedder(prompted_bert, pooling="mean", layers=-1, dtype="float32").fit_transform(TEXTS)
    assert [str(w.message) for w in record] == [
        f"model={prompted_bert!r} defines prompts that its authors put before texts: 'query' ('query: '), "
        "'classification' ('classification: '). Pass prompt_name= (or prefix=) to use one; without one, texts are "
        "embedded as they are, where sentence-transformers' encode() puts the model's default prompt 'query' before "
        "every text (its default_prompt_name): pass prompt_name='query' for what the model's authors meant."]
    peer = SentenceTransformer(prompted_bert, device="cpu").encode(TEXTS)  # its default prompt, mean pooling
    assert np.abs(plain - peer).max() > 1e-3
    advised = BertEmbedder(prompted_bert, pooling="mean", layers=-1, prompt_name="query", dtype="float32")
    assert np.abs(advised.fit_transform(TEXTS) - peer).max() <= 1e-5


def test_the_room_refusal_advises_a_larger_max_length_only_below_the_models_limit(tiny_bert):
    """A prefix leaving no room at max_length=64, the tiny BERT's limit, was told to "pass a larger max_length",
    which fit refuses (expected an int from 4 to the model's limit of 64 tokens); below the limit the advice names
    it (as the truncation warning does since the docs hunt)."""
    prefix = "the cat " * 40
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, prefix=prefix).fit_transform(TEXTS)  # max_length: the model's limit
    assert str(info.value).endswith("for the text; pass a shorter prefix (max_length is already the model's limit).")
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, prefix=prefix, max_length=64, long_text="chunk", stride=0).fit_transform(TEXTS)
    assert str(info.value).endswith("; pass a shorter prefix (max_length is already the model's limit).")
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, prefix=prefix, max_length=32).fit_transform(TEXTS)
    assert str(info.value).endswith("; pass a larger max_length (up to the model's limit of 64) or a shorter prefix.")
    with pytest.raises(ValueError, match=r"the model's limit of 64 tokens"):  # the limit advised is fit's
        BertEmbedder(tiny_bert, max_length=65).fit(TEXTS)
