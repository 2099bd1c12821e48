"""``bertfeat embed`` and ``bertfeat info`` on small CSV and parquet files, with the tiny BERT."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bertfeat import BertEmbedder
from bertfeat.cli import main
from tests.conftest import assert_same_output

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the cat sat on mat a dog ran in park statistics meets text glmnet loves numeric features frozen".split()


def make_frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(1, 12))) for _ in range(n)]
    return pd.DataFrame({"id": np.arange(n), "review": texts, "title": [t[:10] for t in texts],
                         "stars": rng.integers(1, 6, n)})


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "reviews.csv"
    make_frame(57).to_csv(path, index=False)
    return path


def embed(*args) -> int:
    return main(["embed", *map(str, args)])


def test_csv_to_parquet_matches_the_estimator(tiny_bert, csv_file, tmp_path, capsys):
    out = tmp_path / "f.parquet"
    assert embed(csv_file, "--text-col", "review", "--id-col", "id", "--out", out, "--model", tiny_bert,
                 "--chunk-rows", "20", "--pooling", "cls+mean") == 0
    table = pq.read_table(out)
    df = pd.read_csv(csv_file, dtype={"id": str})  # CSV kept columns come out as written: text
    est = BertEmbedder(tiny_bert, pooling="cls+mean").fit(df["review"])
    assert table.column_names == ["id"] + est.get_feature_names_out().tolist()
    assert table.column("id").to_pylist() == df["id"].tolist()
    features = np.column_stack([table.column(c).to_numpy() for c in table.column_names[1:]])
    assert features.dtype == np.float32
    # chunks of 20 batch differently from one transform of 57: equal within the batch-invariance bound
    np.testing.assert_allclose(features, est.transform(df["review"]), atol=1e-5, rtol=0)
    assert pq.ParquetFile(out).metadata.num_row_groups == 3  # one per finished chunk of 20 rows
    meta = json.loads(table.schema.metadata[b"bertfeat"])
    assert meta["pooling"] == ["cls", "mean"] and meta["dims"] == 64 and meta["model"] == tiny_bert
    assert meta["weights_sha256"] == est.recipe_.weights_sha256 and meta["bertfeat_version"]
    manifest = json.loads((tmp_path / "f.parquet.manifest.json").read_text())
    assert manifest["counts"]["rows"] == 57 and manifest["counts"]["missing"] == 0
    assert manifest["counts"]["unique_texts"] == df["review"].nunique() and manifest["counts"]["unique_texts_exact"]
    assert manifest["provenance"] == meta and manifest["timing"]["seconds"] > 0
    assert not (tmp_path / "f.parquet.partial").exists()
    assert "wrote" in capsys.readouterr().err


def test_parquet_directory_glob_and_list_layout(tiny_bert, tmp_path):
    df = make_frame(30)
    (tmp_path / "in").mkdir()
    df.iloc[:12].to_parquet(tmp_path / "in" / "a.parquet")
    df.iloc[12:].to_parquet(tmp_path / "in" / "b.parquet")
    outs = []
    for i, source in enumerate([tmp_path / "in", str(tmp_path / "in" / "*.parquet")]):
        out = tmp_path / f"o{i}.parquet"
        assert embed(source, "--text-col", "review", "--text-col", "title", "--keep-col", "id", "--keep-col", "stars",
                     "--out", out, "--model", tiny_bert, "--layout", "list", "--quiet") == 0
        outs.append(pq.read_table(out))
    assert outs[0].equals(outs[1])
    t = outs[0]
    assert t.column_names == ["id", "stars", "review_embedding", "title_embedding"]
    assert t.schema.field("review_embedding").type == pa.list_(pa.float32(), 64)
    want = BertEmbedder(tiny_bert).fit_transform(df[["review", "title"]])
    got = np.hstack([np.stack(t.column(c).to_numpy(zero_copy_only=False)) for c in ("review_embedding",
                                                                                     "title_embedding")])
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_missing_texts_follow_the_policy(tiny_bert, tmp_path):
    src = tmp_path / "m.csv"
    src.write_text('id,text\n1,hello there\n2,\n3,"a, quoted\nmultiline text"\n')
    out = tmp_path / "o.parquet"
    assert embed(src, "--text-col", "text", "--out", out, "--model", tiny_bert, "--quiet") == 2
    assert embed(src, "--text-col", "text", "--out", out, "--model", tiny_bert, "--missing", "zero", "--quiet") == 0
    t = pq.read_table(out).to_pandas().to_numpy()
    assert not t[1].any()
    # the quoted field is one text, comma and newline included, not a split or shifted row
    want = BertEmbedder(tiny_bert).fit_transform(["hello there", "a, quoted\nmultiline text"])
    np.testing.assert_allclose(t[[0, 2]], want, atol=1e-5, rtol=0)
    manifest = json.loads((tmp_path / "o.parquet.manifest.json").read_text())
    assert manifest["counts"]["missing"] == 1


@pytest.mark.parametrize("setup, args, message", [
    (None, ["nope.csv", "--text-col", "review"], "input 'nope.csv' does not exist"),
    ("bad", ["bad.csv", "--text-col", "text"], r"is malformed at line 4"),
    ("csv", ["reviews.csv", "--text-col", "body"], r"column\(s\) 'body' not found .* columns 'id', 'review'"),
    ("empty", ["empty.csv", "--text-col", "text"], "has no rows to embed"),
    ("ints", ["ints.parquet", "--text-col", "stars"], "text column 'stars' holds int64 values, not text"),
    ("exists", ["reviews.csv", "--text-col", "review"], "exists; pass --overwrite"),
    ("csv", ["reviews.csv", "--text-col", "review", "--stride", "3"], "--stride applies to --long-text chunk only"),
    ("csv", ["reviews.csv", "--text-col", "review", "--text-col", "review"], "names a column twice"),
    ("csv", ["reviews.csv", "--text-col", "review", "--pooling", "avg"], r"--pooling avg is not valid"),
])
def test_user_mistakes_exit_2_with_one_clear_line(tiny_bert, tmp_path, capsys, monkeypatch, setup, args, message):
    monkeypatch.chdir(tmp_path)
    df = make_frame(5)
    if setup in ("csv", "exists"):
        df.to_csv("reviews.csv", index=False)
    if setup == "exists":
        Path("out.parquet").write_bytes(b"precious")
    if setup == "bad":
        Path("bad.csv").write_text("id,text\n1,fine\n2,also fine\n3,too,many\n")
    if setup == "empty":
        Path("empty.csv").write_text("id,text\n")
    if setup == "ints":
        df.to_parquet("ints.parquet")
    code = main(["embed", *args, "--out", "out.parquet", "--model", tiny_bert, "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert __import__("re").search(message, err), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    if setup == "exists":
        assert Path("out.parquet").read_bytes() == b"precious"
    else:
        assert not Path("out.parquet").exists()


def test_conflicting_keep_flags_are_rejected_before_work(tiny_bert, csv_file, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        embed(csv_file, "--text-col", "review", "--id-col", "id", "--keep-col", "stars", "--out", tmp_path / "o.pq")
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_progress_log_lines_when_not_a_terminal(tiny_bert, csv_file, tmp_path, capsys):
    from bertfeat.files import embed_file

    embed_file(str(csv_file), str(tmp_path / "o.parquet"), "review", chunk_rows=10, model=tiny_bert,
               progress_every=0.0)
    err = capsys.readouterr().err
    assert "bertfeat embed: 10 rows" in err and "rows/s" in err and "wrote" in err
    embed_file(str(csv_file), str(tmp_path / "q.parquet"), "review", model=tiny_bert, quiet=True)
    assert capsys.readouterr().err == ""


def _run_cli(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "bertfeat", *map(str, args)], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.parametrize("with_cache", [False, True], ids=["no-cache", "cache-dir"])
def test_killed_run_resumes_without_redoing_finished_chunks(tiny_bert, tmp_path, with_cache):
    src = tmp_path / "big.parquet"
    make_frame(2400, seed=1).to_parquet(src)
    args = [src, "--text-col", "review", "--id-col", "id", "--model", tiny_bert, "--chunk-rows", "40", "--quiet",
            "--batch-tokens", "256"]
    reference = tmp_path / "ref.parquet"
    # with a cache, the reference gets a cache of its own, so texts repeated across chunks are deduplicated alike
    ref_cache = ["--cache-dir", tmp_path / "ref-cache"] if with_cache else []
    assert _run_cli(["embed", *args, *ref_cache, "--out", reference]).wait(timeout=600) == 0
    if with_cache:
        args += ["--cache-dir", tmp_path / "cache"]

    out = tmp_path / "out.parquet"
    proc = _run_cli(["embed", *args, "--out", out])
    partial = tmp_path / "out.parquet.partial"
    deadline = time.time() + 300
    while not (partial / "part-000003.json").exists():
        assert proc.poll() is None, "the run finished before it could be killed"
        assert time.time() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists(), "an unfinished output must never sit at the final path"
    finished = len(list(partial.glob("part-*.json")))
    assert 4 <= finished < 55

    again = _run_cli(["embed", *args, "--out", out])
    assert again.wait(timeout=600) == 0, again.stderr.read()
    manifest = json.loads((tmp_path / "out.parquet.manifest.json").read_text())
    assert manifest["counts"]["rows_resumed"] >= 40 * finished
    assert manifest["counts"]["rows"] == 2400
    assert_same_output(out, reference, chunk_rows=40)


def test_stale_partial_from_another_job_is_discarded(tiny_bert, csv_file, tmp_path):
    out = tmp_path / "o.parquet"
    partial = tmp_path / "o.parquet.partial"
    partial.mkdir()
    (partial / "state.json").write_text('{"version": 1, "input": "something else"}')
    (partial / "part-000000.json").write_text("{}")
    assert embed(csv_file, "--text-col", "review", "--out", out, "--model", tiny_bert, "--quiet") == 0
    assert pq.read_table(out).num_rows == 57


def test_info_describes_the_model(tiny_bert, capsys):
    assert main(["info", tiny_bert, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["layers"], info["hidden_size"], info["max_length"]) == (3, 32, 64)
    assert info["default_recipe"]["pooling"] == ["cls", "mean"] and info["default_recipe"]["layers"] == [1, 2, 3]
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert "6 layers, hidden size 384, max length 512" in text and "own pooling:  mean, normalize=True" in text


def test_module_entry_point_and_help():
    proc = _run_cli(["embed", "--help"])
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "examples:" in out and "--text-col" in out


def test_texts_repeated_across_chunks_are_embedded_once_with_a_cache(tiny_bert, tmp_path):
    from bertfeat.files import embed_file

    df = make_frame(40)
    df = pd.concat([df, df, df], ignore_index=True)  # every text three times, in different chunks
    src = tmp_path / "dup.parquet"
    df.to_parquet(src)
    distinct = df["review"].nunique()
    plain = embed_file(str(src), str(tmp_path / "o.parquet"), "review", chunk_rows=40, model=tiny_bert, quiet=True)
    assert plain["counts"]["rows"] == 120 and plain["counts"]["unique_texts"] == distinct
    assert plain["counts"]["embedded"] == 3 * distinct  # dedup is per chunk without a cache: memory stays bounded
    cached = embed_file(str(src), str(tmp_path / "c.parquet"), "review", chunk_rows=40, model=tiny_bert, quiet=True,
                        cache_dir=str(tmp_path / "cache"))
    assert cached["counts"]["embedded"] == distinct and cached["counts"]["cache_hits"] == 2 * distinct
    assert plain["cache_dir"] is None and not (tmp_path / "o.parquet.partial").exists()


def test_user_cache_makes_a_rerun_embed_nothing(tiny_bert, csv_file, tmp_path, monkeypatch):
    from bertfeat.files import embed_file

    cache = tmp_path / "cache"
    first = embed_file(str(csv_file), str(tmp_path / "a.parquet"), "review", model=tiny_bert, quiet=True,
                       cache_dir=str(cache))
    assert first["counts"]["embedded"] > 0
    import bertfeat.backend

    monkeypatch.setattr(bertfeat.backend, "get_backend", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    second = embed_file(str(csv_file), str(tmp_path / "b.parquet"), "review", model=tiny_bert, quiet=True,
                        cache_dir=str(cache))
    assert second["counts"]["embedded"] == 0 and second["counts"]["cache_hits"] == first["counts"]["embedded"]
    assert pq.read_table(tmp_path / "a.parquet").equals(pq.read_table(tmp_path / "b.parquet"))


def test_csv_missing_markers_unquoted_are_missing_quoted_are_text_unless_blank(tiny_bert, tmp_path):
    from bertfeat.files import embed_file

    src = tmp_path / "na.csv"
    src.write_text('id,text\n1,NA\n2,"NA"\n3,\n4,""\n5,hello\n')
    embed_file(str(src), str(tmp_path / "o.parquet"), "text", model=tiny_bert, missing="zero", quiet=True)
    X = pq.read_table(tmp_path / "o.parquet").to_pandas().to_numpy()
    assert not X[0].any() and not X[2].any()  # unquoted NA and empty field: missing
    assert not X[3].any()                     # quoted "": an empty text, missing like every blank text
    assert X[1].any() and X[4].any()          # quoted "NA" is a text
    np.testing.assert_allclose(X[[1, 4]], BertEmbedder(tiny_bert).fit_transform(["NA", "hello"]), atol=1e-5)


def test_reading_parquet_streams_with_bounded_arrow_memory(tmp_path):
    """Arrow memory while reading stays near one chunk, whatever the file size (pyarrow's pre_buffer would cache
    every column chunk read so far)."""
    from bertfeat.files import InputReader

    rng = np.random.default_rng(0)
    words = np.array(WORDS)
    src = tmp_path / "big.parquet"
    with pq.ParquetWriter(src, pa.schema([("id", pa.int64()), ("text", pa.string())])) as writer:
        for start in range(0, 600_000, 200_000):
            texts = [" ".join(words[rng.integers(0, len(words), 8)]) for _ in range(200_000)]
            writer.write_table(pa.table({"id": np.arange(start, start + 200_000), "text": texts}))
    base = pa.total_allocated_bytes()
    peak, rows = 0, 0
    for batch in InputReader(str(src), ["id", "text"], 10_000, ["text"]).batches():
        peak = max(peak, pa.total_allocated_bytes() - base)
        rows += batch.num_rows
    assert rows == 600_000
    # streaming holds about 7.5 MB here; pyarrow's pre_buffer held 18 MB, growing with the file
    assert peak < 12 * 2**20, f"{peak / 2**20:.0f} MB of Arrow memory held while streaming 600,000 rows"


def test_batch_tokens_bounds_every_forward_pass_of_the_cli(tiny_bert, tmp_path, monkeypatch):
    from tests.test_embedder import record_forward_passes

    src = tmp_path / "long.csv"
    texts = [" ".join(["the cat sat on the mat"] * k) for k in range(1, 9)]  # 8 to 51 tokens
    pd.DataFrame({"review": texts}).to_csv(src, index=False)
    passes = record_forward_passes(monkeypatch)
    assert embed(src, "--text-col", "review", "--out", tmp_path / "big.parquet", "--model", tiny_bert,
                 "--pooling", "mean", "--batch-tokens", "100000", "--quiet") == 0
    assert len(passes) == 1
    passes.clear()
    assert embed(src, "--text-col", "review", "--out", tmp_path / "small.parquet", "--model", tiny_bert,
                 "--pooling", "mean", "--batch-tokens", "60", "--quiet") == 0
    assert len(passes) > 1 and sum(rows for rows, _ in passes) == len(texts)
    assert all(rows * length <= 60 for rows, length in passes), passes
    big, small = (pq.read_table(tmp_path / f"{n}.parquet").to_pandas().to_numpy() for n in ("big", "small"))
    np.testing.assert_allclose(small, big, atol=1e-5)


def test_the_summary_line_of_a_chunk_job_counts_the_chunked_texts(tiny_bert, tmp_path, capsys):
    """Under --long-text chunk the summary line said "0 truncated" and never how many texts were cut into windows
    (the manifest's counts.chunked): it says how many were chunked, and the manifest agrees."""
    src = tmp_path / "in.csv"
    pd.DataFrame({"review": ["the cat sat on the mat " * 6, "dog", "a dog ran in the park " * 5]}).to_csv(src,
                                                                                                      index=False)
    out = tmp_path / "o.parquet"
    assert embed(src, "--text-col", "review", "--out", out, "--model", tiny_bert, "--max-length", "16",
                 "--long-text", "chunk") == 0
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    assert summary.endswith(", 2 chunked, 0 missing"), summary
    manifest = json.loads((tmp_path / "o.parquet.manifest.json").read_text())
    assert (manifest["counts"]["chunked"], manifest["counts"]["truncated"]) == (2, 0)


def test_manifest_counts_a_text_of_exactly_max_length_tokens_as_not_truncated(tiny_bert, tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    words = "the quick brown fox jumps over the lazy dog the cat sat on the mat a dog ran in the park".split()
    sizes = {len(tok(" ".join(words[:k]))["input_ids"]): " ".join(words[:k]) for k in range(1, len(words) + 1)}
    src = tmp_path / "in.csv"
    pd.DataFrame({"review": [sizes[16], sizes[17], "dog"]}).to_csv(src, index=False)
    out = tmp_path / "o.parquet"
    assert embed(src, "--text-col", "review", "--out", out, "--model", tiny_bert, "--max-length", "16",
                 "--quiet") == 0
    manifest = json.loads((tmp_path / "o.parquet.manifest.json").read_text())
    assert manifest["counts"]["truncated"] == 1  # the 17-token text only
