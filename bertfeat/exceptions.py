"""Warnings and errors that bertfeat raises on purpose, so callers can filter or catch them by class."""


class TruncationWarning(UserWarning):
    """Some texts were longer than ``max_length`` tokens and were cut (``long_text="truncate"``)."""


class ModelNotAvailableError(ValueError):
    """The requested model is neither a local directory nor reachable (offline, or not on the hub)."""


class CacheError(RuntimeError):
    """The embedding cache cannot be used as configured (for example its directory is unusable)."""


class CacheWarning(UserWarning):
    """A cache shard could not be read (it is ignored and its texts recomputed) or new rows could not be written."""


class SlowDtypeWarning(UserWarning):
    """A reduced precision (``dtype="bfloat16"`` or ``"float16"``) runs slower than float32 on this CPU.

    bertfeat keeps the dtype that was asked for (it is part of the recipe and of the cache key); the message gives
    the two measured rates so the choice can be made with numbers.
    """
