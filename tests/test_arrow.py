"""Provenance: every field of the parquet schema metadata and of the manifest, each checked by a test of its own.

One ``embed_file`` job runs once per module with a recipe where no field sits at its default, on a small CSV whose
counts are known by construction (two chunks, a duplicate within and across chunks, a missing text, a long text,
two texts already in the cache), so a field that is dropped, swapped with a neighbour or computed from the wrong
total fails its own test.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import bertfeat
from bertfeat import BertEmbedder
from bertfeat.batching import split_windows
from bertfeat.files import CHUNK_CHARS, embed_file
from bertfeat.hardware import cpu_flags
from bertfeat.models import resolve_model
from bertfeat.worker_recipe import libraries
from tests.conftest import shared_scope

LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 3)
ROWS = [  # id, title, body; chunk_rows=4 cuts after row 3
    (10, "the cat sat", "a dog ran in the park"),
    (11, "the cat sat", "glmnet loves features"),  # title repeated within the chunk
    (12, "statistics", None),  # missing
    (13, "emma woodhouse", LONG),  # longer than max_length: chunked
    (14, "the cat sat", "frozen embeddings"),  # repeated across chunks: a cache hit in chunk 2
    (15, "pride and prejudice", "a dog ran in the park"),  # a cache hit in chunk 2
    (16, "jane austen", "the quick brown fox"),  # both put in the cache before the job
]
PREWARMED = ["jane austen", "the quick brown fox"]
PARAMS = dict(pooling="mean+max", layers=[1, 2], layer_agg="concat", max_length=16, long_text="chunk", stride=3,
              normalize=True, missing="zero", dtype="float32", device="cpu")


@pytest.fixture(scope=shared_scope)
def job(tiny_bert, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("provenance")
    src = tmp / "in.csv"
    pd.DataFrame(ROWS, columns=["id", "title", "body"]).to_csv(src, index=False)
    cache = tmp / "cache"
    BertEmbedder(tiny_bert, cache_dir=str(cache), **PARAMS).fit_transform(PREWARMED)
    out = tmp / "out.parquet"
    started = time.perf_counter()
    returned = embed_file(str(src), str(out), ["title", "body"], keep_cols=["id"], layout="list", chunk_rows=4,
                          quiet=True, model=tiny_bert, cache_dir=str(cache), **PARAMS)
    wall = time.perf_counter() - started
    manifest = json.loads(Path(f"{out}.manifest.json").read_text())
    metadata = json.loads(pq.read_schema(out).metadata[b"bertfeat"])
    return dict(src=src, out=out, cache=cache, model=tiny_bert, manifest=manifest, returned=returned,
                metadata=metadata, wall=wall, manifest_text=Path(f"{out}.manifest.json").read_text())


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tokens_sent(model: str, texts: list[str]) -> int:
    """Tokens the model saw for ``texts``: every chunk window of 14 content tokens (stride 3) plus 2 specials."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    n = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    return sum(b - a + 2 for k in n for a, b in split_windows(k, window=14, stride=3))


# -- the parquet metadata (the manifest's "provenance" holds the same) ---------------------------------------------

EXPECTED_PROVENANCE = {
    "bertfeat_version": lambda j: bertfeat.__version__,
    "model": lambda j: j["model"],
    "model_label": lambda j: resolve_model(j["model"]).label,
    # the weights hash is the sha256 over (file name, file sha256), computed here from the file itself
    "weights_sha256": lambda j: hashlib.sha256(
        b"model.safetensors" + _file_sha256(Path(j["model"]) / "model.safetensors").encode()).hexdigest(),
    "tokenizer_sha256": lambda j: resolve_model(j["model"]).tokenizer_sha256,
    "config_sha256": lambda j: resolve_model(j["model"]).config_sha256,
    "recipe_fingerprint": lambda j: BertEmbedder(j["model"], **PARAMS).fit(["x"]).recipe_.fingerprint(),
    "pooling": lambda j: ["mean", "max"],
    "layers": lambda j: [1, 2],
    "num_layers": lambda j: 3,  # the tiny BERT's: a reader of the list layout names concatenated layers by it
    "layer_agg": lambda j: "concat",
    "max_length": lambda j: 16,
    "long_text": lambda j: "chunk",
    "stride": lambda j: 3,
    "normalize": lambda j: True,
    "dtype": lambda j: "float32",
    "prefix": lambda j: "",  # a job with one: test_files_job.py::test_a_prefix_is_recorded_and_the_record_reproduces_...
    "pool_prefix": lambda j: True,  # left out: test_files_job.py::test_whether_the_prefix_was_pooled_is_recorded
    "dims": lambda j: 2 * 2 * 32,  # poolings x layers (concatenated) x hidden size, per text column
    "text_columns": lambda j: ["title", "body"],
    "keep_columns": lambda j: ["id"],
    "layout": lambda j: "list",
    "missing": lambda j: "zero",
}


def test_every_provenance_field_has_its_test(job):
    assert sorted(job["metadata"]) == sorted(EXPECTED_PROVENANCE)


@pytest.mark.parametrize("field", sorted(EXPECTED_PROVENANCE))
def test_provenance_field_in_the_parquet_metadata(job, field):
    assert job["metadata"][field] == EXPECTED_PROVENANCE[field](job)


def test_the_manifest_and_the_returned_manifest_carry_the_same_provenance(job):
    assert job["manifest"]["provenance"] == job["metadata"]
    assert job["returned"] == job["manifest"]


def test_the_recorded_provenance_reproduces_the_features(job):
    """The metadata is enough to recompute the output: the recipe it names gives the stored vectors."""
    import numpy as np

    m = job["metadata"]
    est = BertEmbedder(m["model"], columns=m["text_columns"], pooling="+".join(m["pooling"]), layers=m["layers"],
                       layer_agg=m["layer_agg"], max_length=m["max_length"], long_text=m["long_text"],
                       stride=m["stride"], normalize=m["normalize"], dtype=m["dtype"], missing=m["missing"],
                       prefix=m["prefix"] or None)
    frame = pd.DataFrame(ROWS, columns=["id", "title", "body"])
    expected = est.fit_transform(frame)
    table = pq.read_table(job["out"])
    got = np.hstack([np.stack(table.column(f"{c}_embedding").to_pylist()) for c in m["text_columns"]])
    assert est.recipe_.fingerprint() == m["recipe_fingerprint"] and got.shape[1] == 2 * m["dims"]
    np.testing.assert_allclose(got, expected, atol=1e-5)


# -- the manifest ------------------------------------------------------------------------------------------------

EXPECTED_COUNTS = {
    "rows": lambda j: 7,
    "texts": lambda j: 14,
    "unique_texts": lambda j: 10,  # distinct present texts over the whole job, both columns
    "unique_texts_exact": lambda j: True,
    # chunk 1 runs its 6 distinct texts; chunk 2 has 6, of which 4 come from the cache (2 from chunk 1, 2 prewarmed)
    "embedded": lambda j: 6 + 2,
    "cache_hits": lambda j: 4,
    "truncated": lambda j: 0,
    "chunked": lambda j: 1,
    "missing": lambda j: 1,
    "tokens": lambda j: _tokens_sent(j["model"], [
        "the cat sat", "statistics", "emma woodhouse", "a dog ran in the park", "glmnet loves features", LONG,
        "pride and prejudice", "frozen embeddings"]),
    "rows_resumed": lambda j: 0,
    "chunks": lambda j: 2,
}


def test_every_count_has_its_test(job):
    assert sorted(job["manifest"]["counts"]) == sorted(EXPECTED_COUNTS)


@pytest.mark.parametrize("field", sorted(EXPECTED_COUNTS))
def test_manifest_count(job, field):
    assert job["manifest"]["counts"][field] == EXPECTED_COUNTS[field](job)


EXPECTED_MANIFEST = {
    "output": lambda j: str(j["out"]),
    "engine": lambda j: "local",
    "input": lambda j: {"path": str(j["src"].resolve()), "files": [
        [str(j["src"].resolve()), j["src"].stat().st_size, j["src"].stat().st_mtime_ns]],
        "identity": [j["src"].stat().st_ctime_ns]},
    "chunk_rows": lambda j: 4,
    "chunk_chars": lambda j: CHUNK_CHARS,  # the default: these rows are far below it, so --chunk-rows cuts
    # a .csv, kept columns read as text, quoted as CSV is
    "reading": lambda j: {"delimiter": ",", "infer_types": False, "quoting": "csv"},
    # no earlier run: this run did the whole job, the same counts as the job's
    "this_run": lambda j: {"rows": 7, "embedded": 6 + 2, "cache_hits": 4, "chunks": 2, "rows_resumed": 0,
                           "chunks_resumed": 0, "batches_resumed": 0},
    "cache_dir": lambda j: str(j["cache"]),
}


def test_every_manifest_field_has_its_test(job):
    assert sorted(job["manifest"]) == sorted([*EXPECTED_MANIFEST, "provenance", "counts", "timing"])


@pytest.mark.parametrize("field", sorted(EXPECTED_MANIFEST))
def test_manifest_field(job, field):
    assert job["manifest"][field] == EXPECTED_MANIFEST[field](job)


def test_manifest_timing(job):
    timing = job["manifest"]["timing"]
    assert sorted(timing) == ["checkpoint_seconds", "device", "embed_seconds", "forward_pass", "libraries", "machine",
                              "seconds", "slowest_chunk_seconds"]
    assert sum(timing["forward_pass"].values()) >= 1  # which arrangement ran: tests/test_ladder.py
    assert timing["device"] == "cpu"  # where it ran (conftest: no GPU); a GPU's: tests/test_ladder.py
    assert timing["checkpoint_seconds"] == 30.0
    assert 0 < timing["embed_seconds"] <= timing["seconds"]
    assert 0 < timing["slowest_chunk_seconds"] <= timing["embed_seconds"]
    assert timing["machine"]["flags"] == cpu_flags()  # the rest: tests/test_ladder.py
    # this process ran the model: its threads and the measured matmul rates at the model's shape are there too
    assert {"threads", "matmul_gflops"} <= set(timing["machine"])
    assert sorted(timing["machine"]["matmul_gflops"]) == ["bfloat16", "float32"]
    # the versions of what tokenized the texts and ran the model, as each Ray and Spark worker's entry records its
    # own: another transformers, tokenizers or torch can give other ids or other last bits from the same recipe
    from importlib.metadata import version

    assert timing["libraries"] == libraries() == (f"transformers {version('transformers')}, tokenizers "
                                                  f"{version('tokenizers')}, torch {version('torch')}")
    # the job's own time, in milliseconds: no more than the call took
    assert timing["seconds"] <= round(job["wall"], 3) + 0.001
    for key in ("seconds", "embed_seconds", "slowest_chunk_seconds"):
        assert timing[key] == round(timing[key], 3)


def test_the_manifest_file_is_the_returned_manifest_indented_and_its_counts_are_ints(job):
    assert job["manifest_text"] == json.dumps(job["returned"], indent=2)
    counts = {**job["manifest"]["counts"], **{f"this_run.{k}": v for k, v in job["manifest"]["this_run"].items()}}
    assert {k: type(v).__name__ for k, v in counts.items() if type(v) is not int} == {"unique_texts_exact": "bool"}
