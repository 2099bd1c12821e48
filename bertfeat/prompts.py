"""The text put before each text (``prefix=``, or a model's own prompt by ``prompt_name=``), and the notes
:meth:`BertEmbedder.fit <bertfeat.BertEmbedder.fit>` gives once per model and process where the model's own
embeddings differ from bertfeat's features: prompts its authors put before texts, sentence-transformers modules
bertfeat does not apply."""

from __future__ import annotations

import contextlib
import warnings
from contextvars import ContextVar

from bertfeat.exceptions import ModelNoteWarning, user_stacklevel
from bertfeat.fork_safe import ForkSafeLock

# (what, model path) of the notes given once per model and process (_note_once)
_NOTED: set[tuple[str, str]] = set()
_NOTED_LOCK = ForkSafeLock()  # a child forked while another thread gave a note gets it unheld
# True where the notes are held back (notes_held): in that thread (context) only
_HELD: ContextVar[bool] = ContextVar("bertfeat_notes_held", default=False)


@contextlib.contextmanager
def notes_held():
    """The model's notes left unsaid by the code in the block, in this thread only (`bertfeat info` lists what they
    say), and still said by the next fit that gives them. A warnings filter would hold back every thread's warnings
    while it is in place, and ``catch_warnings`` put back the whole list, undoing another thread's filters."""
    token = _HELD.set(True)
    try:
        yield
    finally:
        _HELD.reset(token)


def _note_once(what: str, spec, message: str) -> None:
    """A note (a :class:`~bertfeat.exceptions.ModelNoteWarning`, a UserWarning: not an error) about ``what`` of the
    model ``spec``, given once per model and process; the command line shows it as one line, as its own warnings."""
    if _HELD.get():
        return
    with _NOTED_LOCK:  # two fits at once (threads): the second waits for the first's note, and gives none
        if (what, spec.path) in _NOTED:
            return
        warnings.warn(message, ModelNoteWarning, stacklevel=user_stacklevel())
        _NOTED.add((what, spec.path))  # after: a note a warnings filter made an error is raised again next time


def _note_modules_not_applied(spec) -> None:
    """Once per model and process, a note that what sentence-transformers computes the model's embeddings with
    beside its pooling (a Dense projection after it, a WordWeights before it, settings it loads the encoder with) is
    not applied: its model card's embeddings are not what bertfeat gives."""
    if spec.st_not_applied:
        _note_once("modules", spec, (
            f"model={spec.name!r} is a sentence-transformers model whose sentence embeddings sentence-transformers "
            f"computes with {', '.join(spec.st_not_applied)} as well as its pooling; bertfeat does not apply "
            f"{'that' if len(spec.st_not_applied) == 1 else 'those'}: its features are the pooled hidden states of "
            "the encoder its config.json describes, not the model's own embeddings. For those, use "
            "sentence-transformers' encode()."))


def _resolve_prefix(prefix, prompt_name, spec) -> str:
    """The text put before every text: ``prefix``, or the model's prompt ``prompt_name``, or ""."""
    if prefix is not None and not isinstance(prefix, str):
        raise ValueError(f"prefix={prefix!r} is not valid: expected a string (such as 'query: ') or None.")
    # "" names a prompt like any other where the model has one of that name, as sentence-transformers reads it
    if prompt_name is not None and (not isinstance(prompt_name, str)
                                    or (not prompt_name and "" not in dict(spec.prompts))):
        raise ValueError(f"prompt_name={prompt_name!r} is not valid: expected the name of one of the model's prompts "
                         "(`bertfeat info MODEL` lists them) or None.")
    if prefix and prompt_name is not None:
        raise ValueError(f"prefix={prefix!r} and prompt_name={prompt_name!r} both set the text put before each "
                         "text; pass only one of them.")
    if prompt_name is not None:
        prompt = spec.prompt(prompt_name)
        return _valid_unicode(prompt, f"prompt_name={prompt_name!r} gives the prefix {prompt!r} (from {spec.name}'s "
                                      "config_sentence_transformers.json), which")
    # prompts that put something before a text: sentence-transformers 5 and 6 save an empty "query" and "document"
    # prompt in every model's config (encode_query, encode_document), which are no prompts to tell of
    worded = [(k, v) for k, v in spec.prompts if v]
    if not prefix and worded:
        # once per model and process: a note, not an error, since plain texts are a valid (if weaker) choice
        names = ", ".join(f"{k!r} ({v!r})" for k, v in worded)
        default = spec.default_prompt_name if dict(worded).get(spec.default_prompt_name) else None
        _note_once("prompts", spec, (
            f"model={spec.name!r} defines prompts that its authors put before texts: {names}. Pass prompt_name= "
            "(or prefix=) to use one; without one, texts are embedded as they are"
            + (f", where sentence-transformers' encode() puts the model's default prompt {default!r} before every "
               f"text (its default_prompt_name): pass prompt_name={default!r} for what the model's authors meant."
               if default is not None else ".")))
    return _valid_unicode(prefix or "", f"prefix={prefix!r}")


def _valid_unicode(value: str, what: str) -> str:
    """``value`` if it is valid Unicode; a lone surrogate (what ``errors="surrogateescape"`` makes of bytes that are
    not UTF-8: a command line in another encoding; a JSON escape such as ``\\ud800``) is refused here, naming it, where
    the tokenizer would fail with "TextEncodeInput must be Union[...]"."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} is not valid Unicode: it holds the lone surrogate {value[exc.start]!r} at position "
            f"{exc.start}, which no tokenizer can read; it usually comes from bytes that are not UTF-8 (a command line "
            "or a file in another encoding). Pass the text as UTF-8, or clean it first, for example "
            "s.encode('utf-8', 'replace').decode('utf-8')."
        ) from None
    return value
