"""bertfeat.tokens: the Rust tokenizer called directly gives transformers' own content ids, or is not used."""

from __future__ import annotations

import json

import numpy as np

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bertfeat.tokens import ContentTokenizer
from tests.conftest import TINY_SENTENCES
from tests.tiny_encoders import build_tokenizer

STYLES = ["wordpiece", "bpe", "sentencepiece"]


def transformers_ids(tok, texts):
    return tok(list(texts), add_special_tokens=False, truncation=False, return_attention_mask=False,
               return_token_type_ids=False, verbose=False)["input_ids"]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    from transformers import AutoTokenizer

    out = {}
    for style in STYLES:
        path = tmp_path_factory.mktemp(style)
        build_tokenizer(path, style, TINY_SENTENCES, 64)
        out[style] = AutoTokenizer.from_pretrained(str(path))
    return out


@pytest.mark.parametrize("style", STYLES)
def test_each_tokenizer_family_is_read_directly_and_gives_transformers_ids(tokenizers, style):
    tok = tokenizers[style]
    content = ContentTokenizer(tok)
    assert content.direct
    texts = TINY_SENTENCES + ["", "  spaced   out  ", "Émma [CLS] <s> ünïcode 東京 \U0001f600", "x" * 500]
    assert content(texts) == transformers_ids(tok, texts)
    assert content([]) == []


def test_the_bundled_tokenizer_is_read_directly():
    from bertfeat.backend import get_backend
    from bertfeat.models import resolve_model

    backend = get_backend(resolve_model("default"), "cpu", "float32")
    assert backend.content_tokens.direct
    texts = ["Emma Woodhouse, handsome, clever, and rich", "[SEP] inside [MASK] text", "naïve café"]
    assert backend.tokenize(texts) == transformers_ids(backend.tokenizer, texts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "<s>", "</s>", "<pad>", "<mask>", "<unk>",
                              "the", "cat", " ", "\n", "é", "##s", "\u2581", "\u0120", "😀"]), max_size=12).map("".join),
), min_size=1, max_size=6))
def test_any_text_gets_transformers_ids(tokenizers, texts):
    for tok in tokenizers.values():
        assert ContentTokenizer(tok)(texts) == transformers_ids(tok, texts)


def test_a_tokenizer_file_that_truncates_is_not_truncated(tmp_path, tokenizers):
    # tokenizer.json may carry truncation (and padding) settings; transformers' call with truncation=False turns
    # them off, and so must the direct route, or long texts would lose tokens silently
    from transformers import AutoTokenizer

    tokenizers["wordpiece"].save_pretrained(str(tmp_path))
    spec = json.loads((tmp_path / "tokenizer.json").read_text())
    spec["truncation"] = {"direction": "Right", "max_length": 4, "strategy": "LongestFirst", "stride": 0}
    spec["padding"] = {"strategy": {"Fixed": 30}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
                       "pad_type_id": 0, "pad_token": "[PAD]"}
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    tok = AutoTokenizer.from_pretrained(str(tmp_path))
    content = ContentTokenizer(tok)
    assert content.direct
    texts = ["the quick brown fox jumps over the lazy dog", "a dog"]
    got = content(texts)
    assert [len(ids) for ids in got] == [len(ids) for ids in transformers_ids(tok, texts)]
    assert len(got[0]) > 4 and len(got[1]) < 30
    assert got == transformers_ids(tok, texts)


def test_split_special_tokens_is_honoured(tmp_path, tokenizers):
    from transformers import AutoTokenizer

    tokenizers["wordpiece"].save_pretrained(str(tmp_path))
    tok = AutoTokenizer.from_pretrained(str(tmp_path), split_special_tokens=True)
    content = ContentTokenizer(tok)
    text = ["before [CLS] after"]
    if tok.cls_token_id in transformers_ids(tok, text)[0]:  # bertfeat follows transformers' own call: it does too
        import transformers

        pytest.skip(f"transformers {transformers.__version__} does not split special tokens with a fast tokenizer")
    assert content.direct
    assert content(text) == transformers_ids(tok, text)
    assert tok.cls_token_id not in content(text)[0]  # written in the text, the marker is text, not the token
    assert tok.cls_token_id in ContentTokenizer(tokenizers["wordpiece"])(text)[0]


def test_a_tokenizer_class_that_rewrites_text_in_python_keeps_transformers_call(tokenizers):
    tok = tokenizers["bpe"]

    class Shouting(type(tok)):  # a class that changes the text before its Rust tokenizer sees it
        def __call__(self, text, *args, **kwargs):
            return super().__call__([t.upper() for t in text], *args, **kwargs)

    shouting = Shouting.__new__(Shouting)
    shouting.__dict__.update(tok.__dict__)
    content = ContentTokenizer(shouting)
    assert not content.direct
    texts = ["the cat sat on the mat"]
    assert content(texts) == transformers_ids(shouting, texts) != transformers_ids(tok, texts)


def test_a_tokenizer_without_a_rust_tokenizer_keeps_transformers_call():
    calls = []

    def slow(texts, **kwargs):
        calls.append(list(texts))
        return {"input_ids": [[len(t)] for t in texts]}

    content = ContentTokenizer(slow)
    assert not content.direct
    assert content(["ab", "abc"]) == [[2], [3]] and calls[-1] == ["ab", "abc"]


def test_the_direct_route_reads_its_own_copy_of_the_rust_tokenizer(tokenizers):
    # transformers' call sets truncation on the tokenizer it shares with every caller (a user's truncating call
    # leaves it on for the next); the direct route's copy is not touched by that
    tok = tokenizers["wordpiece"]
    content = ContentTokenizer(tok)
    tok._tokenizer.enable_truncation(3)
    try:
        assert content.direct and len(content(["the quick brown fox jumps"])[0]) > 3
    finally:
        tok._tokenizer.no_truncation()


def test_the_probe_texts_write_every_special_and_added_token(tokenizers, tmp_path):
    from transformers import AutoTokenizer

    from bertfeat.tokens import _special_texts

    tokenizers["bpe"].save_pretrained(str(tmp_path))
    tok = AutoTokenizer.from_pretrained(str(tmp_path))
    tok.add_tokens(["<extra_word>"])
    tokens = sorted(set(tok.all_special_tokens) | {"<extra_word>"})
    assert {"<s>", "</s>", "<pad>", "<mask>", "<unk>"} <= set(tokens)
    assert _special_texts(tok) == [f"before {t} after" for t in tokens] + ["".join(tokens)]


def test_a_direct_route_that_reads_special_tokens_otherwise_is_not_taken(tokenizers, monkeypatch):
    # only the probe texts with special tokens written in them tell this copy from transformers' call
    import bertfeat.tokens as tokens

    tok = tokenizers["wordpiece"]
    make_copy = tokens._private_rust_copy

    def splitting_copy(tokenizer):
        copy = make_copy(tokenizer)
        copy.encode_special_tokens = True
        return copy

    monkeypatch.setattr(tokens, "_private_rust_copy", splitting_copy)
    assert not ContentTokenizer(tok).direct


def test_a_direct_route_that_fails_its_check_is_not_taken(tokenizers, monkeypatch):
    import bertfeat.tokens as tokens

    class Broken:
        def encode_batch(self, *args, **kwargs):
            raise RuntimeError("no")

    monkeypatch.setattr(tokens, "_private_rust_copy", lambda tokenizer: Broken())
    content = ContentTokenizer(tokenizers["wordpiece"])
    assert not content.direct
    assert content(["the cat"]) == transformers_ids(tokenizers["wordpiece"], ["the cat"])


def test_a_tokenizer_without_split_special_tokens_reads_special_tokens_as_tokens(tokenizers):
    # an object holding a Rust tokenizer but no transformers attributes: special tokens in the text stay tokens
    rust = tokenizers["wordpiece"]._tokenizer

    class Plain:
        _tokenizer = rust
        all_special_tokens = ["[CLS]", "[SEP]"]

        def __call__(self, texts, **kwargs):
            return {"input_ids": [e.ids for e in rust.encode_batch(texts, add_special_tokens=False)]}

    content = ContentTokenizer(Plain())
    assert content.direct
    assert rust.token_to_id("[CLS]") in content(["before [CLS] after"])[0]
    from bertfeat.tokens import _special_texts

    assert _special_texts(Plain()) == ["before [CLS] after", "before [SEP] after", "[CLS][SEP]"]


def test_transformers_call_says_nothing_about_texts_longer_than_the_model(tmp_path, tokenizers):
    # bertfeat counts and reports truncation itself; transformers' own too-long warning would be noise
    import logging

    from transformers import AutoTokenizer

    tokenizers["wordpiece"].save_pretrained(str(tmp_path))
    fresh = AutoTokenizer.from_pretrained(str(tmp_path))  # the warning is given once per tokenizer object
    content = ContentTokenizer(fresh)
    content._rust = None
    said = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logger = logging.getLogger("transformers")  # transformers' loggers stop there (no propagation to the root)
    logger.addHandler(handler)
    try:
        assert len(content(["the cat " * 100])[0]) > fresh.model_max_length
        control = AutoTokenizer.from_pretrained(str(tmp_path))  # transformers' default on a fresh object: it warns
        control(["the cat " * 100], add_special_tokens=False)
    finally:
        logger.removeHandler(handler)
    assert len(said) == 1 and "longer than the specified maximum" in said[0]


def test_the_probe_texts_of_an_object_with_no_token_lists():
    from bertfeat.tokens import _special_texts

    assert _special_texts(object()) == [""]


@pytest.mark.parametrize("style", STYLES)
def test_the_head_of_a_long_text_gives_its_first_tokens(tokenizers, style):
    """Under long_text="truncate" a long text's head is tokenized, not the text (bertfeat.tokens.head_tokens): its
    first keep + 1 tokens are the whole text's, where a cut splits a word, runs of spaces, or a word past WordPiece's
    100-character limit (one [UNK] whole, pieces once cut: the second cut, or a longer head, tells)."""
    from bertfeat.tokens import head_tokens

    content = ContentTokenizer(tokenizers[style])
    words = " ".join(TINY_SENTENCES)
    texts = [
        (words + " ") * 200,
        " " * 420 + "x" * 150 + " cat" * 500,  # cut at 488 characters inside a word that is one [UNK] whole
        "é" * 3000,
        "\n\r\n  " * 300 + words * 40,
        "the cat " * 30 + "y" * 5000 + " emma",
        "short",
    ]
    full = content(texts)
    tokenized = []

    def spy(some):
        tokenized.extend(some)
        return content(some)

    for keep in (1, 60, 300):
        for ids, whole in zip(head_tokens(spy, texts, keep), full):  # the text's tokens, or its first keep + 1
            assert ids == whole or (len(ids) == keep + 1 < len(whole) and ids == whole[:keep + 1]), keep
    assert max(map(len, tokenized)) < len(texts[0]), "a long text was tokenized whole"


def test_lowercase_reads_each_text_lowercased_on_both_routes(tokenizers):
    # do_lower_case (sentence_bert_config.json): a cased tokenizer (byte-level BPE) must see "the cat", not "The CAT"
    import copy

    tok = copy.deepcopy(tokenizers["bpe"])
    texts = ["The CAT sat", "Query: EMMA Woodhouse"]
    lowered = transformers_ids(tokenizers["bpe"], [t.lower() for t in texts])
    assert transformers_ids(tokenizers["bpe"], texts) != lowered
    content = ContentTokenizer(tok, lowercase=True)
    assert content.direct and content(texts) == lowered
    assert transformers_ids(tok, texts) == lowered  # the tokenizer itself: what the backend's special-token probe reads
    ContentTokenizer(tok, lowercase=True)  # a second time (another backend of the same tokenizer): one step, not two
    steps = [n["type"] for n in json.loads(tok.backend_tokenizer.normalizer.__getstate__())["normalizers"]]
    assert steps.count("Lowercase") == 1
    calls = []

    def slow(texts, **kwargs):
        calls.append(list(texts))
        return {"input_ids": [[len(t)] for t in texts]}

    assert ContentTokenizer(slow, lowercase=True)(["AbC"]) == [[3]] and calls[-1] == ["abc"]



def test_a_slow_tokenizer_is_lowercased_as_a_fast_one_of_the_same_files(tokenizers):
    # a slow tokenizer (no Rust normalizer to put Lowercase in) had its texts lowercased by str.lower(), which makes a
    # word-final capital sigma "ς" where the fast tokenizer's Lowercase normalizer makes "σ": two vectors for one
    # recipe (the fingerprint hashes the files, not which class reads them), in a cache shared by both
    import copy

    texts = ["ΟΔΟΣ ΣΑΣ", "Η ΟΔΟΣ.", "ΣΟΦΙΑ ΚΑΙ ΟΔΥΣΣΕΑΣ", "The CAT İstanbul ΑΣ"]
    fast = ContentTokenizer(copy.deepcopy(tokenizers["bpe"]), lowercase=True)
    assert fast.direct

    def slow(texts, **kwargs):  # the same files read by a tokenizer that does not lowercase by itself
        return {"input_ids": transformers_ids(tokenizers["bpe"], texts)}

    assert ContentTokenizer(slow, lowercase=True)(texts) == fast(texts)
    assert fast(texts) != transformers_ids(tokenizers["bpe"], [t.lower() for t in texts])  # what it was


LONG_TEXTS = [
    (" ".join(TINY_SENTENCES) + " ") * 60,
    "\n\r\n  " * 300 + " ".join(TINY_SENTENCES) * 40,
    "the cat " * 30 + "y" * 5000 + " emma" * 300,  # a stretch with no place to cut, longer than a piece
    " " * 700 + "cat " * 400 + "   ",  # whitespace first and last
    ("x" * 150 + " cat\t") * 40,  # words past WordPiece's 100-character limit: one [UNK] each
    "Émma [CLS] <s> </s> ünïcode 東京 \U0001f600 " * 100,  # special tokens written in the text, accents, scripts
    "東京タワーは高い。" * 300 + "ありがとう！本当？" * 100 + "猫が座った、" * 50,  # no spaces: cut after 。！？ (6)
    "é" * 3000,  # no whitespace at all: tokenized whole
    "short",
]


@pytest.mark.parametrize("style", STYLES)
def test_a_long_text_tokenized_in_pieces_gives_the_whole_texts_ids(tokenizers, style):
    """Under long_text="chunk" every token of a text is embedded, and a 5 MB text held 620 MB of token encodings
    for 6 MB of ids (MiniLM's tokenizer). A long text is tokenized in pieces cut before whitespace, each cut checked
    (bertfeat.tokens.all_tokens): its ids are exactly the whole text's, for WordPiece, byte-level BPE and SentencePiece
    (Metaspace, unigram), and the pieces are tokenized, never the text (but a text of Japanese under SentencePiece,
    whose Metaspace marks a text's start, so that every cut with no space after it fails its check)."""
    from bertfeat.tokens import all_tokens

    content = ContentTokenizer(tokenizers[style])
    whole = transformers_ids(tokenizers[style], LONG_TEXTS)
    tokenized = []

    def spy(some):
        tokenized.extend(some)
        return content(some)

    got = all_tokens(spy, LONG_TEXTS, piece=300, seam=40)
    assert [list(map(int, ids)) for ids in got] == whole
    assert all(isinstance(ids, np.ndarray) and ids.dtype == np.int32 for ids in got[:-2])
    expected_whole = set(LONG_TEXTS[-2:]) | ({LONG_TEXTS[6]} if style == "sentencepiece" else set())
    assert set(tokenized) & set(LONG_TEXTS) == expected_whole, "a text with places to cut was tokenized whole"
    assert max(map(len, tokenized)) < 6000 < len(LONG_TEXTS[0])


def test_the_bundled_tokenizer_gives_a_long_texts_ids_in_pieces():
    from transformers import AutoTokenizer

    from bertfeat.models import resolve_model
    from bertfeat.tokens import all_tokens

    tok = AutoTokenizer.from_pretrained(resolve_model("default").path)
    content = ContentTokenizer(tok)
    text = "".join(LONG_TEXTS[:7]) + " Emma Woodhouse, handsome, clever, and rich (naïve café). " * 500
    got = all_tokens(content, [text], piece=2000, seam=100)[0]
    assert got.tolist() == transformers_ids(tok, [text])[0]


def test_a_cut_that_changes_the_tokens_is_moved_or_the_text_tokenized_whole(tokenizers):
    """A tokenizer that strips whitespace at a text's ends (a Strip normalizer) before SentencePiece's Metaspace loses
    the lone-space token a piece starting with a double space should give: such cuts fail their check, and where no
    cut holds, the text is tokenized whole."""
    import copy

    from tokenizers import normalizers

    from bertfeat.tokens import all_tokens

    tok = copy.deepcopy(tokenizers["sentencepiece"])
    tok.backend_tokenizer.normalizer = normalizers.Strip()
    content = ContentTokenizer(tok)
    texts = ["the cat  sat " * 200, "emma  woodhouse  " * 200]  # a double space where the cuts would be, or everywhere
    tokenized = []

    def spy(some):
        tokenized.extend(some)
        return content(some)

    got = all_tokens(spy, texts, piece=300, seam=40)
    assert [ids.tolist() for ids in got] == transformers_ids(tok, texts)
    assert texts[1] in tokenized and texts[0] not in tokenized


def test_a_long_texts_tokens_take_memory_for_their_ids_not_their_encodings(tmp_path):
    """The peak memory of tokenizing a 4 MB text for long_text="chunk" (the bundled tokenizer, in a process of its
    own): whole, its encodings took about 100 times its int32 ids (597 MB for 4 MB); in pieces, 9 MB."""
    import subprocess
    import sys
    from pathlib import Path

    from bertfeat.models import resolve_model

    script = tmp_path / "peak.py"
    script.write_text(
        "import sys\n"
        "from tokenizers import Tokenizer\n"
        "from bertfeat.tokens import all_tokens\n"
        "tok = Tokenizer.from_file(sys.argv[1])\n"
        "tok.no_truncation()\n"
        "def tokenize(texts):\n"
        "    return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]\n"
        "def peak():\n"
        "    return next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
        "text = ' '.join(f'emma{i % 1000} woodhouse, handsome clever and rich;' for i in range(90_000))\n"
        "tokenize([text[:100_000]])\n"
        "before = peak()\n"
        "ids = all_tokens(tokenize, [text])[0]\n"
        "print(len(text), ids.nbytes, (peak() - before) * 1024)\n"
    )
    tokenizer_json = Path(resolve_model("default").path) / "tokenizer.json"
    done = subprocess.run([sys.executable, str(script), str(tokenizer_json)], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parents[1])
    chars, ids_bytes, grown = map(int, done.stdout.split())
    assert chars > 4_000_000 and ids_bytes > 3_000_000
    assert grown < 16 * ids_bytes, f"{grown / 1e6:.0f} MB more for {ids_bytes / 1e6:.1f} MB of ids"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(["the", "cat", "emma", " ", "  ", "\n", "\t", "\r\n", "é", "x" * 30, "[CLS]",
                                      "<s>", "</s>", "\u2581", "\u0120", "😀", "東京", ",", "naïve", "\u00a0", "。", "！"]),
                     min_size=20, max_size=200).map("".join))
def test_any_long_text_in_pieces_gets_the_whole_texts_ids(tokenizers, text):
    """all_tokens with pieces of 20 characters (checked seams of 8): every cut it keeps changes no token."""
    from bertfeat.tokens import all_tokens

    for tok in tokenizers.values():
        got = all_tokens(ContentTokenizer(tok), [text], piece=20, seam=8)[0]
        assert list(map(int, got)) == transformers_ids(tok, [text])[0]


def test_many_shorter_texts_are_tokenized_a_bounded_number_of_characters_at_a_time(tokenizers, monkeypatch):
    """Texts under the piece size were tokenized in one call, all of them: a transform of 100 texts of 100,000
    characters (10 MB) held 384 MB of token encodings (78 MB now), a corpus of 1,000 such documents ten times that.
    Each call holds at most GROUP_CHARS characters (or one text), and a text of many tokens has them as an int32
    array, not Python ints."""
    import bertfeat.tokens
    from bertfeat.tokens import all_tokens

    monkeypatch.setattr(bertfeat.tokens, "GROUP_CHARS", 2000)
    monkeypatch.setattr(bertfeat.tokens, "ARRAY_TOKENS", 100)
    content = ContentTokenizer(tokenizers["wordpiece"])
    texts = [(" ".join(TINY_SENTENCES) + " ") * (1 + i % 5) for i in range(40)] + ["cat", "x" * 2500]
    calls = []

    def spy(some):
        calls.append(some)
        return content(some)

    got = all_tokens(spy, texts, piece=3000, seam=40)
    assert [list(map(int, ids)) for ids in got] == transformers_ids(tokenizers["wordpiece"], texts)
    assert len(calls) > 10 and all(sum(map(len, c)) <= 2000 or len(c) == 1 for c in calls)
    assert [isinstance(ids, np.ndarray) for ids in got] == [len(ids) > 100 for ids in got]


def test_the_heads_of_many_texts_are_tokenized_a_bounded_number_of_characters_at_a_time(tokenizers, monkeypatch):
    """Under long_text="truncate", texts up to twice the head's characters were tokenized in one call, all of them,
    and kept every token: 3,000 texts of 3,000 characters held 295 MB for windows of 254 tokens (73 MB now). Each
    call holds at most GROUP_CHARS characters (or one text), and no text keeps more than keep + 1 tokens."""
    import bertfeat.tokens
    from bertfeat.tokens import head_tokens

    monkeypatch.setattr(bertfeat.tokens, "GROUP_CHARS", 2000)
    content = ContentTokenizer(tokenizers["wordpiece"])
    texts = [(" ".join(TINY_SENTENCES) + " ") * (1 + i % 3) for i in range(30)] + ["cat", "the cat " * 3000]
    whole = transformers_ids(tokenizers["wordpiece"], texts)
    calls = []

    def spy(some):
        calls.append(some)
        return content(some)

    got = head_tokens(spy, texts, keep=40)
    assert got == [ids[:41] for ids in whole]
    assert len(calls) > 5 and all(sum(map(len, c)) <= 2000 or len(c) == 1 for c in calls)
