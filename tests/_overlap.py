"""Two calls overlapping in two threads in the one order a scheduler cannot be trusted to give: the second begins
inside the first and ends after it (what made a call that saved and put back a process-wide setting leave the
other's in place for good)."""

import threading


class Overlap:
    """Threads ``"first"`` and ``"second"``, held where each is inside its call: the code under test calls
    :meth:`inside` there (a patched function), and :meth:`run` starts them."""

    def __init__(self):
        self._first_in, self._second_in, self._first_done = threading.Event(), threading.Event(), threading.Event()

    def inside(self) -> str:
        """In either thread, inside its call: the first waits there for the second to come in, the second for the
        first to have ended. Returns the thread's name."""
        name = threading.current_thread().name
        if name == "first":
            self._first_in.set()
            assert self._second_in.wait(30)
        else:
            self._second_in.set()
            assert self._first_done.wait(30)
        return name

    def run(self, first, second, while_both=None) -> None:
        """``first()`` and ``second()`` in their threads, overlapping so; ``while_both()`` runs in this thread while
        both are inside their calls."""
        one = threading.Thread(target=first, name="first")
        two = threading.Thread(target=second, name="second")
        one.start()
        assert self._first_in.wait(30)
        two.start()
        assert self._second_in.wait(30)
        if while_both is not None:
            while_both()
        one.join(30)
        self._first_done.set()
        two.join(30)
