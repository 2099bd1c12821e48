"""A setting of the whole process that calls overlapping in threads share: the first to begin puts it in place,
saving what it found, and the last to end puts that back. Each call saving and putting back its own, a call that
began inside another's left that other's setting in place for good.

Used for transformers' logging silenced during a model load (:mod:`bertfeat.backend`) and for the one-line warning
format of a running command (:mod:`bertfeat.cli`). A child forked while a thread held the lock gets it unheld
(:mod:`bertfeat.fork_safe`), and, where asked, the setting put back: it runs none of those calls.
"""

from __future__ import annotations

import contextlib
from typing import Callable

from bertfeat.fork_safe import ForkSafeLock


class SharedSetting:
    """``apply()`` puts the setting in place and returns what it replaced; ``restore(saved)`` puts that back."""

    def __init__(self, apply: Callable[[], object], restore: Callable[[object], None], *,
                 lift_in_forked_child: bool = False):
        self.users = 0  # the calls now inside held()
        self.saved = None  # what the first of them found
        self._apply, self._restore, self._lift = apply, restore, lift_in_forked_child
        self.lock = ForkSafeLock(in_child=self._in_forked_child)

    @contextlib.contextmanager
    def held(self):
        """The setting in place for the ``with``'s length, shared with the calls of other threads inside it."""
        with self.lock:
            if self.users == 0:
                self.saved = self._apply()
            self.users += 1
        try:
            yield
        finally:
            with self.lock:
                self.users -= 1
                if self.users == 0:
                    self._restore(self.saved)

    def _in_forked_child(self) -> None:
        if self._lift:
            if self.users:
                self._restore(self.saved)
            self.users = 0
