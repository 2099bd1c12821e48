"""Warnings and errors that bertfeat raises on purpose, so callers can filter or catch them by class, and where
its warnings point."""

import sys


class TruncationWarning(UserWarning):
    """Some texts were longer than ``max_length`` tokens and were cut (``long_text="truncate"``)."""


class ModelNoteWarning(UserWarning):
    """A note, once per model and process, where the model's own embeddings differ from bertfeat's features: prompts
    its authors put before texts, what sentence-transformers computes them with that bertfeat does not apply."""


class ModelNotAvailableError(ValueError):
    """The requested model cannot be used: it is neither a local directory nor reachable (offline, or not on the
    hub), or its files do not fit together (weights that are not safetensors, a missing shard, weights missing or
    left unused by its config, a tokenizer larger than its embedding table)."""


class CacheError(RuntimeError):
    """The embedding cache cannot be used as configured (for example its directory is unusable)."""


class CacheWarning(UserWarning):
    """A cache shard could not be read (it is ignored and its texts recomputed) or new rows could not be written."""


class NoLockWarning(UserWarning):
    """The filesystem of ``--out`` refuses ``flock`` locks: the job runs without the lock that keeps a second job off
    its output."""


class SlowDtypeWarning(UserWarning):
    """A reduced precision (``dtype="bfloat16"`` or ``"float16"``) runs slower than float32 on this CPU.

    bertfeat keeps the dtype that was asked for (it is part of the recipe and of the cache key); the message gives
    the two measured rates so the choice can be made with numbers.
    """


class SparkSessionWarning(UserWarning):
    """The session a Spark job opened for itself on a Spark Connect server could not be released as the job ended
    (the server gone): the server closes it once it has been idle for its timeout. The job's output, or its error,
    stands."""


# the packages whose frames lie between a user's line and bertfeat's warning; contextlib's: a warning raised in
# bertfeat's own context manager (a job's lock, the cache's) as it is entered (a user's context manager is a frame
# of the user's module below contextlib's)
_NOT_THE_USERS = ("bertfeat", "sklearn", "joblib", "pickle", "contextlib")


def user_stacklevel() -> int:
    """The ``stacklevel`` for a warning raised by the caller of this function that points at the first frame outside
    bertfeat, scikit-learn, joblib, pickle and contextlib, so the warning names the user's line however deep inside
    bertfeat it was raised (a transform is often reached through set_output's wrapper or a Pipeline, a cache read
    through encode; a Pipeline fits its steps through joblib's Memory, a union, a ColumnTransformer and
    cross-validation through its Parallel; joblib.load unpickles a fitted model in Python's pickle.py, which calls
    ``__setstate__``; a warning raised as bertfeat's own context manager is entered comes through contextlib's)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _NOT_THE_USERS:
        frame = frame.f_back
        level += 1
    return level


def notice(message: str, category: type[Warning]) -> bool:
    """Warn ``message`` from where bertfeat goes on (or is already raising something else): where warnings are
    errors (``python -W error``), it goes to the ``bertfeat`` logger instead of being raised, so a notice never stops
    the work it reports on, nor takes the place of the error that stopped it. The caller's filters are untouched.
    Returns whether it was warned (False: logged)."""
    import warnings

    try:
        warnings.warn(message, category, stacklevel=user_stacklevel())
    except category:
        import logging

        logging.getLogger("bertfeat").warning("%s", message)
        return False
    return True
