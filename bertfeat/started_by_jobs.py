"""What a job of this process starts where the process has none (a Spark session, a local Ray) and the jobs running on
it: other threads' jobs that find it running share it, and the last of them to end stops it, never one under another
thread's job (two jobs from concurrent.futures, a web service's requests). What the caller started is theirs: never
counted, never stopped.

One registry each for :mod:`bertfeat.spark_session` and :mod:`bertfeat.ray`; imports neither Spark nor Ray.
"""

from __future__ import annotations

from typing import Callable

from bertfeat.fork_safe import ForkSafeLock


class StartedByJobs:
    """What a job started (``None`` while no job runs on one) and how many jobs run on it, behind one lock."""

    def __init__(self):
        self.lock = ForkSafeLock()
        self.what = None
        self.jobs = 0

    def begin(self, find_or_start: Callable[[], tuple[object, bool]]) -> tuple[object, bool, bool]:
        """A job begins: ``find_or_start()`` gives ``(what, started)``, what the job runs on and whether it started it
        now, called holding the lock (two jobs starting at once start one). Returns ``(what, started, counted)``,
        ``counted`` where the job runs on what a job started: then :meth:`end` must be called as it ends."""
        with self.lock:
            what, started = find_or_start()
            if started:
                self.what, self.jobs = what, 1
            elif self.jobs and what is self.what:  # another thread's job started it: this job keeps it running too
                self.jobs += 1
            else:
                return what, False, False
            return what, started, True

    def end(self, what, stop: Callable[[object], None], started: bool = False) -> None:
        """A job on ``what`` has ended: where it is what a job started, the last job on it calls ``stop(what)``, as
        does a job that says it ``started`` what this registry does not hold; never what the caller started. Stopped
        holding the lock, so a job starting meanwhile waits for it, then finds nothing running and starts its own (it
        found it still running, took it for the caller's and ran on it as it stopped)."""
        with self.lock:
            if what is self.what and self.jobs:
                self.jobs -= 1
                if self.jobs:
                    return
                self.what = None
            elif not started:
                return
            stop(what)
