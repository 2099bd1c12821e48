"""Texts to content token ids (no special tokens, no truncation), without transformers' per-text wrapper.

A fast transformers tokenizer hands the batch to its Rust tokenizer, which encodes it on every core with the GIL
released, and then turns each encoding into a Python dict of lists and regroups them, one text at a time, holding the
GIL. On 20,000 Austen paragraphs (2-core Zen 4) the Rust encoding took 1.5 s and transformers' whole call 2.4 to 3.0
s; the ids read straight from the encodings took 0.3 s more. On a GPU that wrapper is host time the model waits for,
and GIL time the threads launching its kernels cannot have.

:class:`ContentTokenizer` calls the Rust tokenizer itself where that gives transformers' own ids: a private copy of
it (so no other caller's settings reach it, nor its settings theirs) with truncation and padding off and special
tokens written in a text treated as transformers treats them (``split_special_tokens``), encoded without offsets.
At construction it is checked against transformers' call on texts that exercise normalisation, accents, scripts,
emoji, whitespace and every special and added token written in the text; a tokenizer whose ids differ there (a class
that rewrites text in Python first, say), or a slow tokenizer with no Rust one, keeps transformers' call.

A model whose sentence-transformers config says ``do_lower_case`` has its texts lowercased before its tokenizer, as
sentence-transformers does (:func:`lowercase_first`), the prefix with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

PROBES = [
    "",
    " ",
    "a short probe",
    "  Leading and trailing spaces, and  double  spaces.  ",
    "Line\nbreaks\tand\r\ntabs",
    "Accents: café, naïve, Ærøskøbing; ÉMMA WOODHOUSE",
    "CJK 東京タワー and Hangul 한국어, Arabic مرحبا, Devanagari नमस्ते",
    "emoji \U0001f600\U0001f44d\U0001f3fd and symbols \u2122 \u00a9 \u2026 \u201cquotes\u201d",
    "numbers 1,234.56 and 0x1F, e-mail me@example.org, https://example.org/a?b=c",
    "control\u0000chars\u200bzero\u00a0width",
    "UPPER lower MiXeD",
]


class ContentTokenizer:
    """``tokenizer``'s content token ids of each text, as ``tokenizer(texts, add_special_tokens=False,
    truncation=False)["input_ids"]`` gives them; by the Rust tokenizer directly when :attr:`direct` is True."""

    def __init__(self, tokenizer, lowercase: bool = False):
        self.tokenizer = tokenizer
        # where the tokenizer cannot lowercase by itself (a slow one), each text is lowercased here
        self._lower = lowercase and not lowercase_first(tokenizer)
        self._rust = _private_rust_copy(tokenizer)
        if self._rust is not None:
            probes = PROBES + _special_texts(tokenizer)
            try:
                same = self._direct(probes) == self._by_transformers(probes)
            except Exception:  # noqa: BLE001 - any failure of the direct route means: keep transformers' call
                same = False
            if not same:
                self._rust = None

    @property
    def direct(self) -> bool:
        return self._rust is not None

    def __call__(self, texts: Sequence[str]) -> list[list[int]]:
        if not texts:
            return []
        if self._lower:
            texts = [lowercase(t) for t in texts]
        if self._rust is not None:
            return self._direct(texts)
        return self._by_transformers(texts)

    def _direct(self, texts: Sequence[str]) -> list[list[int]]:
        encode = getattr(self._rust, "encode_batch_fast", None) or self._rust.encode_batch  # no offsets, where it can
        return [e.ids for e in encode(list(texts), add_special_tokens=False)]

    def _by_transformers(self, texts: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(
            list(texts), add_special_tokens=False, truncation=False, return_attention_mask=False,
            return_token_type_ids=False, verbose=False,
        )
        return enc["input_ids"]


def lowercase_first(tokenizer) -> bool:
    """Make ``tokenizer`` lowercase every text first, as sentence-transformers does for a model whose
    sentence_bert_config.json says ``do_lower_case`` (whether or not the tokenizer is cased): a ``Lowercase``
    normalizer put before the tokenizer's own, unless it has one. Returns False for a tokenizer with no Rust
    normalizer to extend (a slow one), whose texts the caller lowercases with :func:`lowercase`, as that normalizer
    does, so that one recipe (whose fingerprint does not tell a slow tokenizer from a fast one of the same files)
    gives one vector."""
    rust = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if rust is None:
        return False
    from tokenizers.normalizers import Lowercase
    from tokenizers.normalizers import Sequence as NormalizerSequence

    normalizer = rust.normalizer
    # its steps read from its JSON form: a Sequence is iterable only from tokenizers 0.20 (transformers 4.40-4.44
    # take 0.19), and a Sequence put inside another is flattened into it
    steps = json.loads(normalizer.__getstate__()) if normalizer is not None else {}
    steps = steps.get("normalizers", []) if steps.get("type") == "Sequence" else [steps] if steps else []
    if not any(step.get("type") == "Lowercase" for step in steps):
        rust.normalizer = NormalizerSequence([Lowercase(), normalizer] if normalizer is not None else [Lowercase()])
    return True


def lowercase(text: str) -> str:
    """``text`` lowercased as the tokenizers library's ``Lowercase`` normalizer does, one character at a time:
    ``str.lower()`` but for a word-final capital sigma, which ``str.lower()`` makes "ς" (Unicode's Final_Sigma rule)
    and that normalizer "σ" (as does every other capital sigma). Characters newer than this Python's Unicode
    tables are left as they are.

    >>> lowercase("ΟΔΟΣ Σας"), "ΟΔΟΣ Σας".lower()
    ('οδοσ σας', 'οδος σας')
    """
    return text.replace("\u03a3", "\u03c3").lower()  # only a capital sigma lowercases by its context


def _private_rust_copy(tokenizer):
    """A copy of ``tokenizer``'s Rust tokenizer set up as transformers' call with no truncation sets its own, or
    None (a slow tokenizer, or one that cannot be copied)."""
    rust = getattr(tokenizer, "_tokenizer", None)
    if rust is None:
        return None
    try:  # anything else that is no tokenizers.Tokenizer fails here, or at the check against transformers' call
        copy = type(rust).from_str(rust.to_str())
        copy.no_truncation()
        copy.no_padding()
        if hasattr(copy, "encode_special_tokens"):
            copy.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
    except Exception:  # noqa: BLE001 - not copyable: transformers' call it is
        return None
    return copy


def _special_texts(tokenizer) -> list[str]:
    """Texts with each special and added token written between words, then all of them run together."""
    tokens = set(getattr(tokenizer, "all_special_tokens", []) or [])
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    tokens |= {str(t) for t in decoder.values()}
    tokens = sorted(t for t in tokens if t)
    return [f"before {t} after" for t in tokens] + ["".join(tokens)]


# where a long text is cut into pieces: before a space, tab or line break that follows a character that is not
# whitespace, or after a full stop, exclamation or question mark of Chinese and Japanese, which write no spaces
_CUT = re.compile(r"(?<=\S)[ \t\n\r]|(?<=[\u3002\uff01\uff1f])(?=\S)")
PIECE_CHARS = 1 << 16  # a text longer than twice this is tokenized in pieces of about this many characters
SEAM_CHARS = 1 << 10  # the text checked on each side of a cut
PIECES_PER_CALL = 4  # pieces tokenized together (the Rust tokenizer encodes a batch's texts in parallel)
GROUP_CHARS = 1 << 20  # characters tokenized together, at most (a longer text or piece goes alone)
ARRAY_TOKENS = 1024  # a text of more tokens has them as an int32 array, not a list of Python ints (36 bytes each)


def head_tokens(tokenize, texts: Sequence[str], keep: int) -> list[list[int]]:
    """``tokenize(texts)`` where only each text's first ``keep`` tokens are wanted (``long_text="truncate"``): a long
    text gives its first ``keep + 1`` tokens (one more, so it still reads as longer than ``keep``), found by
    tokenizing its head, so time and memory follow ``keep``, not the text (a 50 MB text held 9 GB of token encodings
    for one window of 64 tokens). Texts go to ``tokenize`` :data:`GROUP_CHARS` characters at a time, and no text
    keeps more than ``keep + 1`` tokens, so memory follows ``keep`` and not the number of texts either.

    A text longer than ``2 * chars`` characters is cut at ``chars`` and at ``2 * chars``; where both heads give the
    same first ``keep + 1`` tokens (a cut changes only the tokens about it: the word it splits, and a word past a
    WordPiece's 100-character limit, which the other cut splits elsewhere), those are the text's. Otherwise ``chars``
    grows fourfold and the text is tried again, up to tokenizing it whole. ``tokenize`` returns lists of token ids.

    Examples
    --------
    >>> chars = lambda texts: [[ord(c) for c in t] for t in texts]
    >>> [len(ids) for ids in head_tokens(chars, ["ab", "x" * 100_000], keep=5)]
    [2, 6]
    """
    out: list = [None] * len(texts)
    todo = list(range(len(texts)))
    chars = max(256, 8 * (keep + 1))  # most tokenizers' tokens span a character or more
    while todo:
        whole = [i for i in todo if len(texts[i]) <= 2 * chars]
        for group in _groups(whole, lambda i: len(texts[i]), GROUP_CHARS):  # a bounded number of encodings at a time
            for i, ids in zip(group, tokenize([texts[i] for i in group])):
                out[i] = ids if len(ids) <= keep + 1 else list(ids[:keep + 1])
        cut = [i for i in todo if len(texts[i]) > 2 * chars]
        todo = []
        for group in _groups(cut, lambda i: 3 * chars, GROUP_CHARS):
            short = tokenize([texts[i][:chars] for i in group])
            longer = tokenize([texts[i][:2 * chars] for i in group])
            for i, a, b in zip(group, short, longer):
                if len(a) > keep and list(a[:keep + 1]) == list(b[:keep + 1]):
                    out[i] = list(a[:keep + 1])
                else:
                    todo.append(i)
        chars *= 4
    return out


def all_tokens(tokenize, texts: Sequence[str], piece: int | None = None, seam: int | None = None) -> list:
    """``tokenize(texts)`` where every token is wanted (``long_text="chunk"``), in memory that follows the ids, not
    the tokenizer's encodings (about 400 bytes a token: a 5 MB text of 1.5 million tokens held 620 MB). A text longer
    than ``2 * piece`` characters (default :data:`PIECE_CHARS`) is tokenized in pieces of about ``piece`` characters,
    a few at a time, and its ids come back as one int32 array (4 bytes a token). Shorter texts are tokenized
    :data:`GROUP_CHARS` characters at a time (all at once, 100 texts of 100,000 characters held 384 MB of encodings,
    and a transform of 1,000 such documents ten times that), their ids as ``tokenize`` gives them, or an int32 array
    past :data:`ARRAY_TOKENS` tokens.

    A piece ends before a space, tab or line break that follows a character that is not whitespace (or after a
    Chinese or Japanese full stop, exclamation or question mark: ``。！？``), and each cut is checked: the ``seam``
    characters on either side of it, tokenized together, must give the ids of the two sides tokenized apart (what
    fails for a tokenizer whose tokens span whitespace, or that strips it at a text's ends, or a SentencePiece
    Metaspace that marks a text's start, cut where no space follows). A cut that fails moves to the next such place,
    up to 8 times; then the text is tokenized whole, as it would be without pieces. A text with no place to cut is
    tokenized whole too.

    Examples
    --------
    >>> words = lambda texts: [[len(w) for w in t.split()] for t in texts]
    >>> ids = all_tokens(words, ["a bb", "ccc dddd " * 100], piece=40, seam=8)
    >>> ids[0], ids[1].tolist() == [3, 4] * 100
    ([1, 2], True)
    """
    import numpy as np

    piece, seam = piece or PIECE_CHARS, seam or SEAM_CHARS
    out: list = [None] * len(texts)
    short = [i for i, t in enumerate(texts) if len(t) <= 2 * piece]
    for group in _groups(short, lambda i: len(texts[i]), GROUP_CHARS):
        for i, ids in zip(group, tokenize([texts[i] for i in group])):
            out[i] = np.asarray(ids, dtype=np.int32) if len(ids) > ARRAY_TOKENS else ids
    for i, text in enumerate(texts):
        if out[i] is None:
            bounds = _checked_cuts(tokenize, text, piece, seam)
            if bounds is None:
                out[i] = np.asarray(tokenize([text])[0], dtype=np.int32)
                continue
            parts = []
            for k in range(0, len(bounds) - 1, PIECES_PER_CALL):
                ends = bounds[k:k + PIECES_PER_CALL + 1]
                parts += [np.asarray(ids, dtype=np.int32)
                          for ids in tokenize([text[a:b] for a, b in zip(ends, ends[1:])])]
            out[i] = np.concatenate(parts)
    return out


def _groups(indices: list[int], size, chars: int):
    """``indices`` in runs whose ``size(i)`` (the characters tokenized for text ``i``) add up to at most ``chars``
    (a larger one makes a run of its own)."""
    group, total = [], 0
    for i in indices:
        if group and total + size(i) > chars:
            yield group
            group, total = [], 0
        group.append(i)
        total += size(i)
    if group:
        yield group


def _checked_cuts(tokenize, text: str, piece: int, seam: int) -> list[int] | None:
    """``[0, cut, ..., len(text)]``: cuts about ``piece`` characters apart, each checked (:func:`all_tokens`); None
    where a cut fails its check 8 times, or there is no place to cut."""
    bounds = [0]
    tries = 0
    at = piece
    while len(text) - bounds[-1] > 2 * piece or tries:
        found = _CUT.search(text, at)
        if found is None or found.start() >= len(text) - 1:
            break
        cut = found.start()
        a, b = max(bounds[-1], cut - seam), min(len(text), cut + seam)
        both, left, right = tokenize([text[a:b], text[a:cut], text[cut:b]])
        if list(both) == list(left) + list(right):
            bounds.append(cut)
            tries = 0
            at = cut + piece
        else:
            tries += 1
            if tries == 8:
                return None
            at = cut + 1
    if len(bounds) == 1:
        return None
    return bounds + [len(text)]
