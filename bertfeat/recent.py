"""The few objects a process keeps though nothing else holds them: the models (:data:`bertfeat.backend.MODELS_KEPT`),
the caches (:data:`bertfeat.cache.CACHES_KEPT`) and the tokenizers (:data:`bertfeat.model_files._TOKENIZERS_KEPT`)
used last. Each list is guarded by its owner's lock."""

from __future__ import annotations


def keep_recent(recent: list, item, keep: int) -> None:
    """Make ``item`` the one used last in ``recent`` (least recently used first), dropping the oldest past
    ``keep``: those stay only while something else holds them.

    Examples
    --------
    >>> recent = []
    >>> for item in "abcaa":
    ...     keep_recent(recent, item, 2)
    >>> recent
    ['c', 'a']
    """
    forget(recent, item)
    recent.append(item)
    del recent[:max(0, len(recent) - keep)]


def forget(recent: list, item) -> None:
    """Take ``item`` out of ``recent`` where it is there."""
    if item in recent:
        recent.remove(item)
