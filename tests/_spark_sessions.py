"""The real Spark sessions of the files that run real Spark jobs (``test_spark.py``: a local session;
``test_spark_connect.py``: a Spark Connect server in this process's JVM and its client), made one way: skipped where
Spark cannot run here, their Python workers running this interpreter and this checkout, offline."""

import contextlib
import os
import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def require_spark(connect: bool = False) -> None:
    """Skip the calling test file where Spark's tests cannot run: ``BERTFEAT_SKIP_SPARK=1``, no pyspark, with
    ``connect`` no Spark Connect client, or no Java."""
    if os.environ.get("BERTFEAT_SKIP_SPARK") == "1":
        pytest.skip("BERTFEAT_SKIP_SPARK=1: the Spark engine's tests are skipped", allow_module_level=True)
    pytest.importorskip("pyspark", reason="pyspark is an optional extra: pip install 'bertfeat[spark]'")
    for module in ("grpc", "grpc_status", "google.rpc", "zstandard") if connect else ():
        pytest.importorskip(module, reason=f"Spark Connect needs {module} (pip install 'pyspark[connect]', or the dev "
                                           "extra): these tests need a real Connect session")
    import bertfeat.spark as bspark

    try:
        bspark.require_java()
    except RuntimeError as exc:
        pytest.skip(str(exc), allow_module_level=True)


@contextlib.contextmanager
def _workers_here():
    """The environment the session's Python workers inherit, for the ``with``'s length: this interpreter, this
    checkout, offline."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYSPARK_PYTHON", sys.executable)
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield mp


@contextlib.contextmanager
def local_session():
    """A local Spark session: two cores, and a second attempt for a failed task."""
    from pyspark.sql import SparkSession

    with _workers_here():
        session = (SparkSession.builder.master("local[2,2]").appName("bertfeat tests")
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
        try:
            yield session
        finally:
            session.stop()


def free_port() -> int:
    """A TCP port no one listens on now (the system's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def connect_session():
    """A Spark Connect session on a local server in this process's JVM (pyspark's local remote mode), on a free port:
    on its default, 15002, the server failed to start where another test run or the user's own server had it
    (``BindException``), and a client would have talked to that other server."""
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    port = free_port()
    with _workers_here() as mp:
        # the local remote mode connects its client to sc://localhost, at the default port: this one instead
        mp.setattr(DefaultChannelBuilder, "default_port", staticmethod(lambda: port))
        session = (SparkSession.builder.remote("local[2]").config("spark.connect.grpc.binding.port", str(port))
                   .getOrCreate())
        try:
            session.range(1).count()  # the server makes the user's session at its first request
            yield session
        finally:
            session.stop()  # the local server too (pyspark's local remote mode)
