"""The Ray a file job runs on, and the settings it needs for its length: Ray started where the process has none
(and stopped by the last job to end on it), the job's order and progress options on its dataset's own
``DataContext`` (and on a Ray before 2.54 the process's), and a quiet job's silence, each put back after."""

from __future__ import annotations

import logging

from bertfeat.started_by_jobs import StartedByJobs


def _job_context(ds, preserve_order: bool, quiet: bool):
    """``ds`` with the job's order and progress options, set on its own ``DataContext``: the copy Ray took of the
    current one when ``ds`` was read (so the user's other settings reach the job), which the datasets made from it
    share. The process's ``DataContext.get_current()`` is every thread's: set there for the job's length, another
    thread's datasets made meanwhile ran with the job's order and without progress bars, and a setting that thread
    made during the job was put back when it ended; only a Ray before 2.54, which reads the process's as it runs a
    dataset, gets them there too (:class:`_process_settings`)."""
    ctx = ds.context
    ctx.execution_options.preserve_order = preserve_order
    if quiet:
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        # Ray 2.11 to 2.2x draw each operator's bar where this says so, whatever enable_progress_bars says
        ctx.execution_options.verbose_progress = False
    return ds


# Ray Data runs a dataset on the dataset's own DataContext from 2.54 on. Before, a write (through ``materialize``)
# ran on a fresh copy of the process's DataContext.get_current() (2.11 to 2.4x), and progress bars were decided by the
# process's as a dataset started (to 2.53): there the dataset's own context alone left a job's rows out of input order
# and a quiet job drawing its progress bars
RUNS_ON_ITS_OWN_CONTEXT = (2, 54)


def _runs_on_the_processes_context(ray) -> bool:
    from packaging.version import Version

    return Version(ray.__version__).release < RUNS_ON_ITS_OWN_CONTEXT


class _process_settings:
    """The process-wide settings a file job needs for its length: for a quiet job, Ray Data's logger (``ray.data``)
    at CRITICAL; on a Ray before 2.54 (``ray``, which runs a dataset on the process's ``DataContext``), the job's
    order and progress options there as :func:`_job_context` sets them on the dataset's own. Each is put back after
    unless another thread set it meanwhile: that thread's value stays (its datasets made meanwhile on such a Ray run
    with the job's, which no setting of the job's own context can avoid there)."""

    def __init__(self, quiet: bool, ray=None, preserve_order: bool = True):
        self.settings = []  # (get, set, the job's value)
        if quiet:
            log = logging.getLogger("ray.data")
            self.settings.append((lambda: log.level, log.setLevel, logging.CRITICAL))  # a failed job still raises
        if ray is not None and _runs_on_the_processes_context(ray):
            ctx = ray.data.DataContext.get_current()
            self._attribute(ctx.execution_options, "preserve_order", preserve_order)
            if quiet:
                for obj, name in ((ctx, "enable_progress_bars"), (ctx, "print_on_execution_start"),
                                  (ctx.execution_options, "verbose_progress")):
                    self._attribute(obj, name, False)

    def _attribute(self, obj, name: str, value) -> None:
        self.settings.append((lambda: getattr(obj, name), lambda v: setattr(obj, name, v), value))

    def __enter__(self):
        self.saved = [get() for get, _, _ in self.settings]
        for _, set_, value in self.settings:
            set_(value)
        return self

    def __exit__(self, *exc):
        for (get, set_, value), saved in zip(self.settings, self.saved):
            if get() == value:
                set_(saved)
        return False


# the file jobs of this process running on a Ray one of them started: the last of them to end stops it
_STARTED_RAY = StartedByJobs()
# the level of the "ray" logger before a job started Ray, and the one ray.init set it to
_RAY_LOG: dict[str, int] = {}


def _ray_for_job(ray, quiet: bool) -> bool:
    """Start Ray for a file job where the process has none, and count the job on a Ray a job started: True where
    :func:`_job_ended` must be called as it ends. A Ray the caller started is theirs: never counted, never stopped."""

    def find_or_start():
        if ray.is_initialized():
            return ray, False
        # ray.init sets the level of the "ray" logger (the process's) and leaves it after shutdown: a quiet job's
        # ERROR is put back as Ray stops (_job_ended), unless another thread set a level meanwhile
        level = logging.getLogger("ray").level
        ray.init(logging_level=logging.ERROR if quiet else logging.INFO, log_to_driver=not quiet)
        _RAY_LOG.update(level=level, set=logging.getLogger("ray").level)
        return ray, True

    return _STARTED_RAY.begin(find_or_start)[2]


def _job_ended(ray) -> None:
    """A job on a Ray a job started has ended: the last one stops it."""
    _STARTED_RAY.end(ray, _stop_ray)


def _stop_ray(ray) -> None:
    ray.shutdown()
    log = logging.getLogger("ray")
    if log.level == _RAY_LOG["set"]:
        log.setLevel(_RAY_LOG["level"])
