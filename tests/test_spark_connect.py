"""Real jobs on a real Spark Connect session (``SparkSession.builder.remote("local[2]")``: a Connect server in this
process's JVM, the client talking to it over gRPC, as on Databricks serverless and shared clusters): the vectors
equal the local engine's, the user's session is left as it was, and a job leaves no session behind on the server.
``tests/test_spark_driver.py`` covers the rest of Connect with stand-ins.

Needs pyspark's ``connect`` extra (grpcio, grpcio-status, googleapis-common-protos, zstandard: the dev extra installs
them) and Java; one session for the whole file (a JVM start costs 10-20 s). BERTFEAT_SKIP_SPARK=1 skips these tests.
"""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from bertfeat.cli import main
from tests._spark_sessions import connect_session, require_spark

require_spark(connect=True)

import bertfeat.spark as bspark  # noqa: E402


@pytest.fixture(scope="module")
def connect():
    """One Spark Connect session for this file, on a local server in this process's JVM."""
    with connect_session() as session:
        yield session


def server_sessions() -> set:
    """The ids of the sessions the local Connect server holds (its session manager, read through this process's
    JVM: pyspark's local remote mode runs the server there)."""
    from pyspark.sql.session import SparkSession as Classic

    jvm = Classic._activeSession._jvm
    service = getattr(getattr(jvm.org.apache.spark.sql.connect.service, "SparkConnectService$"), "MODULE$")
    active = service.sessionManager().listActiveSessions()
    return {active.apply(k).sessionId() for k in range(active.size())}


def test_the_stand_in_is_a_real_spark_connect_session(connect):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(connect, ConnectSession)
    assert bspark.context(connect) is None and bspark.master_of(connect) is None
    assert connect.session_id in server_sessions()


def test_a_file_job_matches_the_local_engine_and_leaves_no_session_on_the_server(tiny_bert, connect, tmp_path):
    """A file job on the user's Connect session ran in a ``newSession()`` of its own (a new session on the server)
    and never released it: each job left one more session on the server, holding its state until the server's idle
    timeout (an hour by default), on a shared cluster among everyone's. Its session is now released as it ends; the
    vectors equal the local engine's, and the user's session keeps its settings, none of the job's."""
    frame = pd.DataFrame({"id": np.arange(7), "review": ["a good film", "bad", "the plot was thin", "good good",
                                                         "fine acting", "a film", "thin"]})
    frame.to_parquet(tmp_path / "in.parquet", index=False)
    common = [str(tmp_path / "in.parquet"), "--text-col", "review", "--id-col", "id", "--model", tiny_bert,
              "--chunk-rows", "4", "--quiet"]
    assert main(["embed", *common, "--out", str(tmp_path / "local.parquet")]) == 0
    connect.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")  # the user's own, set at run time
    settings = dict(connect.conf.getAll)
    before = server_sessions()

    assert main(["embed", *common, "--out", str(tmp_path / "spark_out"), "--engine", "spark"]) == 0

    assert server_sessions() == before  # the user's session still there, the job's gone
    assert dict(connect.conf.getAll) == settings
    local, spark = pq.read_table(tmp_path / "local.parquet"), pq.read_table(tmp_path / "spark_out")
    assert spark.schema.names == local.schema.names and spark.schema.metadata == local.schema.metadata
    assert spark.column("id").to_pylist() == list(range(7))
    np.testing.assert_allclose(np.column_stack(spark.columns[1:]), np.column_stack(local.columns[1:]), atol=1e-6)
    manifest = (tmp_path / "spark_out.manifest.json").read_text()
    assert '"master": null' in manifest and '"partitions": 2' in manifest  # 7 rows / 4: no cores said by Connect


def test_embed_dataframe_on_a_connect_session_matches_the_local_engine(tiny_bert, connect):
    from bertfeat import BertEmbedder

    texts = ["a good film", "bad", "the plot was thin", "good good", "fine acting"]
    sdf = connect.createDataFrame(pd.DataFrame({"id": np.arange(5), "review": texts}))
    before = server_sessions()
    out = bspark.embed_dataframe(sdf, "review", keep_cols="id", model=tiny_bert, pooling="mean")
    got = out.toPandas().sort_values("id")
    embedder = BertEmbedder(tiny_bert, pooling="mean").fit(pd.Series(texts, name="review"))
    want = embedder.transform(pd.Series(texts, name="review"))
    assert list(got.columns) == ["id", *embedder.get_feature_names_out()]
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(), np.asarray(want), atol=1e-6)
    assert "bertfeat" in out.schema.fields[1].metadata
    assert server_sessions() == before
