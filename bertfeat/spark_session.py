"""The Spark session a job runs in: the active one (yours, spark-submit's, Databricks'), or one the job starts, and
stops, in a JVM it launches quietly where asked; the SQL options set for one job and put back after it; and the Java
a local driver needs.

Imported by :mod:`bertfeat.spark`, which runs the job; pyspark is imported only when a function here is called.
"""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

from bertfeat.exceptions import SparkSessionWarning, notice
from bertfeat.fork_safe import ForkSafeLock
from bertfeat.started_by_jobs import StartedByJobs

JAVA_HINT = "install Java 17 or later (Debian/Ubuntu: apt-get install default-jre-headless) or set JAVA_HOME"


def require_java() -> str:
    """The ``java`` a local Spark driver will start, or an error saying how to get one."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={home!r} has no bin/java" if home else "no JAVA_HOME and no java on PATH"
        raise RuntimeError(f"the Spark engine needs Java to start Spark, and none was found ({where}): {JAVA_HINT}.")
    return java


def context(session):
    """``session``'s SparkContext, or None for a Spark Connect session (Spark 3.4+ ``remote``, Databricks serverless),
    which has none: reading ``sparkContext`` there raises pyspark's ``JVM_ATTRIBUTE_NOT_SUPPORTED`` (an
    AttributeError)."""
    try:
        return session.sparkContext
    except AttributeError:
        return None


def master_of(session) -> str | None:
    """The master URL ``session``'s tasks run on, or None for a Spark Connect session (its server's, unknown here)."""
    sc = context(session)
    return None if sc is None else sc.master


def running_session():
    """The Spark session this process already has, or None: the one active in this thread, else the one another
    thread made (pyspark's active session is per thread, so called from a worker thread, a notebook's background job
    or a web service's request, ``getActiveSession()`` said None while the builder would hand back the user's
    session, which a job taking it for its own then stopped)."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    try:
        session = SparkSession.active()  # this thread's, else the process's default session (Connect's too)
    except PySparkRuntimeError:  # NO_ACTIVE_OR_DEFAULT_SESSION
        return None
    sc = context(session)
    if sc is not None and getattr(sc, "_jsc", None) is None:  # its SparkContext was stopped: nothing runs on it
        return None
    return session


def connect_url(master: str | None) -> str | None:
    """The Spark Connect server a session a job starts talks to, or None for a session of a JVM here: ``master``
    where it is one (``sc://HOST:15002``, as ``SparkSession.builder.remote`` takes it), else, without ``master``, the
    ``SPARK_REMOTE`` pyspark's builder reads (a ``local`` one is a server pyspark starts in a JVM here)."""
    if master is not None:
        return master if master.startswith("sc://") else None
    remote = os.environ.get("SPARK_REMOTE")
    return remote if remote and not remote.startswith("local") else None


def _job_master(master: str | None, quiet: bool = False) -> str | None:
    """The master URL a job given ``master`` runs on, as :func:`_session` will pick it, before it starts: the named
    one, the active session's (None for a Spark Connect session, :func:`master_of`), or the one Spark's configuration
    names (read from the JVM, which the job needs anyway, launched as the job's ``quiet`` says: launched here without
    it, the job's session found it running and a quiet job printed Spark's start-up lines); None for a Spark Connect
    server's (:func:`connect_url`)."""
    from pyspark import SparkConf

    if master is not None:
        return None if connect_url(master) is not None else master
    active = running_session()
    if active is not None:
        return master_of(active)
    if connect_url(None) is not None:  # a Spark Connect server's tasks: no master here, and no JVM
        return None
    require_java()
    if local_connect() is not None:  # its server's JVM is the builder's to launch (_local_connect_session)
        return local_connect()
    _launch_jvm(quiet)
    return SparkConf().get("spark.master", "local[*]")


def local_connect(master: str | None = None) -> str | None:
    """The master of the Spark Connect server pyspark's builder starts here for a job given ``master``, as the builder
    reads it: ``SPARK_REMOTE``'s ``local[...]`` (without ``master``), or under ``SPARK_API_MODE=connect`` (Spark 4's
    API mode) ``master``, else ``MASTER``'s, else ``local``; None where it starts none."""
    remote = os.environ.get("SPARK_REMOTE")
    if remote:
        return remote if master is None and remote.startswith("local") else None
    if os.environ.get("SPARK_API_MODE", "").lower() == "connect":
        url = master or os.environ.get("MASTER", "local")
        return None if url.startswith("sc://") else url
    return None


# the session a job of this process started and the jobs running on it: the last of them to end stops it
_STARTED = StartedByJobs()


def _session(master: str | None, quiet: bool):
    """``(session, started)``: the Spark session this process has (:func:`running_session`), or a new one this job
    starts, on ``master`` or else the master the Spark configuration names. Each job calls :func:`_job_ended` as it
    ends: a session a job started is stopped by the last job running on it."""
    spark, started, _ = _STARTED.begin(lambda: _new_or_running_session(master, quiet))
    return spark, started


def _job_ended(spark, started: bool) -> None:
    """A job on ``spark`` (``_session``'s answer, ``started`` or not) has ended: a session a job started is stopped
    (:func:`_stop`) when no other job of the process runs on it, holding the registry's lock (a job of another thread
    starting meanwhile found it still running, took it for the user's and ran on it as it stopped); the user's
    session never."""
    _STARTED.end(spark, _stop, started)


def _new_or_running_session(master: str | None, quiet: bool):
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    active = running_session()
    if active is not None and master is None:
        return active, False
    if active is not None:
        running = master_of(active)
        if running is None:
            raise ValueError(
                f"master={master!r}, but this process already has a Spark Connect session, whose tasks run where its "
                "server sends them; drop master= to use it, or stop it first."
            )
        if running != master:
            raise ValueError(
                f"master={master!r}, but this process already has a Spark session on {running!r}; drop master= to "
                "use it, or stop it first."
            )
        return active, False
    remote = connect_url(master)
    if remote is not None:  # a session of a Spark Connect server: no Java, no JVM here; its options are the server's
        # pyspark's builder marks the process as Spark Connect's (SPARK_CONNECT_MODE_ENABLED), and its stop() leaves
        # the mark: the user's next SparkSession.builder.getOrCreate() failed (CONNECT_URL_NOT_SET). Taken off by _stop
        _CONNECT_MODE["unset"] = "SPARK_CONNECT_MODE_ENABLED" not in os.environ
        return (SparkSession.builder if master is None else SparkSession.builder.remote(remote)).getOrCreate(), True
    if master is not None and os.environ.get("SPARK_REMOTE"):  # the builder refused the two together, a traceback
        raise ValueError(
            f"master={master!r}, but SPARK_REMOTE={os.environ['SPARK_REMOTE']!r} names a Spark Connect server, and "
            f"pyspark runs a session on one or the other: drop master= to run on that server, or unset SPARK_REMOTE "
            f"to run on {master!r}."
        )
    require_java()
    if local_connect(master) is not None:
        return _local_connect_session(quiet, master), True
    # the JVM first (spark-submit's own, when it started this process): its configuration holds the master that
    # spark-submit, spark-defaults.conf or PYSPARK_SUBMIT_ARGS gave (local[*] when none did), never overridden here
    _launch_jvm(quiet)
    configured = SparkConf()
    builder = SparkSession.builder.appName("bertfeat embed")
    if master is not None:
        builder = builder.master(master)
    target = master if master is not None else configured.get("spark.master", "local[*]")
    python = None  # local workers run this environment, or the interpreter the configuration names
    if target.startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        python = configured.get("spark.pyspark.python", None)
        if python is None:
            python = sys.executable
            builder = builder.config("spark.pyspark.python", python)
    builder = builder.config("spark.ui.showConsoleProgress", "false" if quiet else "true")
    spark = builder.getOrCreate()
    if context(spark) is None:  # the configuration made it a Spark Connect session (spark.api.mode=connect): the
        return spark, True  # workers' Python and the log level are its server's
    if python is not None:
        # pyspark starts its Python workers with SparkContext.pythonExec, which it reads from PYSPARK_PYTHON alone
        # (else `python3` on PATH): spark.pyspark.python is read by spark-submit only, which sets PYSPARK_PYTHON
        spark.sparkContext.pythonExec = python
    if quiet:  # a JVM this job did not start (spark-submit's) logs from here on as _launch_jvm's would
        # put back by _stop: the JVM outlives the job, and the user's later sessions in this process log through it
        _QUIET_JVM["restore"] = "WARN" if _QUIET_JVM["launched"] else _root_level(spark.sparkContext)
        spark.sparkContext.setLogLevel("FATAL")
    elif _QUIET_JVM["launched"]:  # started by an earlier quiet job of this process: Spark's own level again
        spark.sparkContext.setLogLevel("WARN")
    return spark, True


def _local_connect_session(quiet: bool, master: str | None = None):
    """A session of the Spark Connect server pyspark starts here (:func:`local_connect`), on ``master`` where given
    (``SPARK_API_MODE=connect``), else on the one its environment names. Its JVM is the
    builder's to launch, with the server's jars and plugin: one launched here first had neither, and the server
    failed to start (Java's ``ClassNotFoundException: org.apache.spark.sql.connect.SparkConnectPlugin``, a traceback).
    The builder is given no other option: a Connect session takes none of a JVM's (each was a "Failed to set ...
    CANNOT_MODIFY_CONFIG" warning), and the server starts its Python workers with the ``PYSPARK_PYTHON`` of its JVM's
    environment, given this Python for the launch where the user set none (else ``python3`` on PATH: "No module named
    'pyarrow'"); a quiet job's launch logs fatal errors only, as :func:`_launch_jvm`'s does."""
    from pyspark.sql import SparkSession

    _CONNECT_MODE["unset"] = "SPARK_CONNECT_MODE_ENABLED" not in os.environ  # taken off by _stop
    python = None if os.environ.get("PYSPARK_PYTHON") else sys.executable
    # a quiet job's stages drew no progress bar: a JVM system property, which the server's configuration reads
    progress = ["-Dspark.ui.showConsoleProgress=false"] if quiet else []
    builder = SparkSession.builder if master is None else SparkSession.builder.master(master)
    return _launch_jvm(quiet, builder.getOrCreate, python, progress)


def _root_level(sc) -> str:
    """The level the JVM's root logger (log4j2) logs at, as ``setLogLevel`` takes it."""
    return str(sc._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())


def _stop(spark) -> None:
    """Stop a session the job started, the JVM's log level first put back where a quiet job set it: the JVM stays
    with the process, so a session the user makes later (a spark-submit script's next step, a notebook's next cell)
    logged fatal errors only, its task failures unsaid. A JVM a quiet job launched (:func:`_launch_jvm`) gets
    Spark's own level (WARN), spark-submit's the level it had before the job."""
    level = _QUIET_JVM.pop("restore", None)
    try:
        if level is not None:
            spark.sparkContext.setLogLevel(level)
    finally:  # a JVM that went away with the job: stopped all the same
        try:
            spark.stop()
        finally:
            if _CONNECT_MODE.pop("unset", False):  # the mark the builder put on the process for the job's session
                os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


_CONNECT_MODE: dict = {}


QUIET_LOG4J = Path(__file__).with_name("spark_quiet.log4j2.properties")
_QUIET_JVM = {"launched": False}
_LAUNCHING = ForkSafeLock()


def _launch_jvm(quiet: bool, start=None, python: str | None = None, java_options=()):
    """Start the JVM this process's Spark runs in, unless it runs already (spark-submit's, an earlier job's), with
    ``start`` (pyspark's gateway launch by default; a local Spark Connect server's builder); returns what it returns.
    ``python``: the ``PYSPARK_PYTHON`` of the launch's environment; ``java_options``: more of its JVM's options.

    ``quiet``: with :data:`QUIET_LOG4J` (fatal errors only), so that ``--quiet`` shows no JVM lines: Spark's WARN
    lines at start, and a failed task's ERROR lines with its traceback, which the job's own error says again. It
    goes in ``SPARK_SUBMIT_OPTS`` for the launch only, ahead of the driver's ``spark.driver.extraJavaOptions``, so a
    log4j configuration the user gave there still wins. It is the process's environment for the launch's length (a
    child process another thread starts meanwhile has it too): pyspark's ``launch_gateway`` gives the launcher a copy
    of ``os.environ``, overwriting any ``env`` passed in ``popen_kwargs``, and a ``--conf`` of the driver's Java
    options would replace those spark-defaults.conf gives (EMR's among them)."""
    from pyspark import SparkContext

    start = start or SparkContext._ensure_initialized
    # one launch at a time: two jobs' launches at once (their first jobs asking the master, _job_master) each saved
    # what the other had set, and the last to put it back left the quiet option in the environment for good
    with _LAUNCHING:
        if SparkContext._gateway is not None:
            return start()
        launch = {"PYSPARK_PYTHON": python} if python else {}
        options = [f'"-Dlog4j2.configurationFile={QUIET_LOG4J}"'] if quiet else []
        if options or java_options:
            launch["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [os.environ.get("SPARK_SUBMIT_OPTS"), *options,
                                                                *java_options]))
        saved = {key: os.environ.get(key) for key in launch}
        os.environ.update(launch)
        try:
            started = start()
            _QUIET_JVM["launched"] = _QUIET_JVM["launched"] or quiet
            return started
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _job_session(spark, started: bool):
    """The session a job's queries run in: ``spark`` where the job started it (and stops it), else a session of the
    job's own beside the user's (``newSession()``: their SparkContext), so that the options a job sets
    (:class:`_conf`) are never the user's session's, not even while it runs: another thread's queries on it (a
    notebook's, a service's) ran with case-sensitive names meanwhile, and an option that thread set during the job was
    put back when it ended. ``newSession()`` starts from the cluster's configuration, so the settings made on the
    user's session since (``spark.conf.set``: a storage account's key, ``fs.s3a.*``, the session time zone) are
    carried over first (:func:`_carry_settings`): the job reads and writes with them, as the local engine does.

    A Spark Connect client without ``newSession()`` (pyspark before 4.3 raises ``NOT_IMPLEMENTED``) gets the user's
    session itself, the job's options set on it for the job's length and put back after (:class:`_conf`)."""
    if started:
        return spark
    from pyspark.errors import PySparkNotImplementedError

    try:
        job = spark.newSession()
    except PySparkNotImplementedError:
        return spark
    _carry_settings(spark, job)
    return job


@contextmanager
def _own_session(spark, started: bool):
    """The job's session (:func:`_job_session`) for the ``with``'s length, then ended (:func:`_end_job_session`)."""
    job = _job_session(spark, started)
    try:
        yield job
    finally:
        _end_job_session(job, spark)


def _end_job_session(job, spark) -> None:
    """End the session of a job's own beside the user's ``spark`` (:func:`_job_session`). On Spark Connect,
    ``newSession()`` is a new session on the server, which keeps it (its settings, its plans) until the session has
    been idle for ``spark.connect.session.manager.defaultSessionTimeout`` (an hour by default) unless the client
    releases it: each job left one more on the server, on a shared cluster among everyone's. It is released here and
    its channel closed; never by ``stop()``, which in pyspark's local remote mode stops the server under the user's
    session too. A classic ``newSession()`` shares the user's SparkContext and holds nothing of its own."""
    if job is spark or context(job) is not None:
        return
    client = job.client
    try:
        client.release_session()
    except Exception as exc:  # the server gone: the job has failed, or its output is whole; either way said as is
        # a notice: where warnings are errors it is logged, never raised in place of the job's result or error
        notice(f"the Spark job's own Spark Connect session {job.session_id} could not be released ({exc}); the "
               "server closes it once it has been idle for spark.connect.session.manager.defaultSessionTimeout.",
               SparkSessionWarning)
    finally:
        client.close()


def _carry_settings(users, job) -> None:
    """Give ``job`` (a new session beside ``users``) the runtime settings of ``users``: each key whose value differs
    is set, each key ``users`` has not is unset; a key Spark lets no session change (static SQL options, the Spark
    core's, which are the cluster's anyway) is left as it is."""
    from pyspark.errors import AnalysisException

    wanted, have = dict(users.conf.getAll), dict(job.conf.getAll)  # pyspark 4: a property, classic and Connect
    for key, value in wanted.items():
        if have.get(key) != value:
            try:
                job.conf.set(key, value)
            except AnalysisException:  # CANNOT_MODIFY_STATIC_CONFIG, CANNOT_MODIFY_CONFIG
                pass
    for key in have.keys() - wanted.keys():
        try:
            job.conf.unset(key)
        except AnalysisException:
            pass


class _conf:
    """Set Spark SQL options for one job and put the caller's back after it."""

    def __init__(self, spark, options: dict):
        self.spark, self.options = spark, options

    def __enter__(self):
        self.saved = {k: self.spark.conf.get(k, None) for k in self.options}
        for k, v in self.options.items():
            self.spark.conf.set(k, v)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)
        return False
