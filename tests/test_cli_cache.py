"""``bertfeat cache info|compact|clear DIR`` through :func:`bertfeat.cli.main` (and once as ``python -m bertfeat``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bertfeat.cache import Cache, open_cache
from bertfeat.cli import main
from bertfeat.encode import encode
from tests.conftest import CountingBackend, make_recipe

REPO = Path(__file__).resolve().parents[1]
TEXTS = [f"a text {i}" for i in range(30)]
MEAN = make_recipe()
CHUNKED = make_recipe(pooling=("cls", "max"), layers=(1, 2), layer_agg="concat", long_text="chunk", stride=3,
                      normalize=True)


@pytest.fixture
def cache_dir(tmp_path):
    open_cache(tmp_path / "cache")  # marks the directory as a cache
    cache = Cache(tmp_path / "cache")  # writes like another process would: the CLI's cache object has seen nothing
    for recipe in (MEAN, CHUNKED):
        encode(TEXTS[:20], recipe, CountingBackend, cache=cache)
        encode(TEXTS, recipe, CountingBackend, cache=cache)  # a second shard of 10 rows
    return tmp_path / "cache"


def shard_count(root, recipe):
    return len(list((root / recipe.fingerprint()).glob("shard-*.parquet")))


def test_info_shows_recipes_rows_and_bytes(cache_dir, capsys):
    assert main(["cache", "info", str(cache_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{cache_dir}: 2 recipes, 60 rows" in out
    assert f"{MEAN.fingerprint()}  counting-fake" in out
    assert "pooling mean, layers 3 (mean), 4 features, max_length 16, long_text truncate" in out
    assert "pooling cls+max, layers 1,2 (concat), 16 features" in out
    assert "long_text chunk (stride 3), normalize yes, dtype float32" in out
    assert out.count("30 rows in 2 shards") == 2
    assert "KiB" in out


def test_info_json_agrees_with_the_files(cache_dir, capsys):
    assert main(["cache", "info", str(cache_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_fp = {ns["fingerprint"]: ns for ns in data["namespaces"]}
    assert set(by_fp) == {MEAN.fingerprint(), CHUNKED.fingerprint()}
    ns = by_fp[CHUNKED.fingerprint()]
    assert (ns["rows"], ns["shards"], ns["n_features"]) == (30, 2, 16)
    assert ns["recipe"]["layers"] == [1, 2]
    files = list((cache_dir / CHUNKED.fingerprint()).glob("shard-*.parquet"))
    assert ns["bytes"] == sum(f.stat().st_size for f in files)


def test_compact_merges_shards_and_keeps_every_vector(cache_dir, capsys):
    before, _ = encode(TEXTS, MEAN, CountingBackend)
    assert main(["cache", "compact", str(cache_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{MEAN.fingerprint()}: 2 -> 1 shards, 30 rows" in out
    assert shard_count(cache_dir, MEAN) == shard_count(cache_dir, CHUNKED) == 1
    backend = CountingBackend()
    after, stats = encode(TEXTS, MEAN, lambda: backend, cache=open_cache(cache_dir))
    assert stats.cache_hits == 30 and backend.rows == 0
    np.testing.assert_array_equal(after, before)


def test_clear_needs_yes(cache_dir, capsys):
    assert main(["cache", "clear", str(cache_dir)]) == 2
    assert "add --yes to confirm" in capsys.readouterr().err
    assert shard_count(cache_dir, MEAN) == 2

    assert main(["cache", "clear", str(cache_dir), "--yes"]) == 0
    assert "cleared 2 namespaces" in capsys.readouterr().out
    assert not (cache_dir / MEAN.fingerprint()).exists()
    assert main(["cache", "info", str(cache_dir)]) == 0  # still a cache, now empty
    assert f"{cache_dir}: 0 recipes, 0 rows" in capsys.readouterr().out


def test_clear_one_namespace_by_fingerprint_prefix(cache_dir, capsys):
    assert main(["cache", "clear", str(cache_dir), "--namespace", CHUNKED.fingerprint()[:8]]) == 0
    assert "cleared 1 namespace" in capsys.readouterr().out
    assert not (cache_dir / CHUNKED.fingerprint()).exists()
    assert shard_count(cache_dir, MEAN) == 2

    assert main(["cache", "clear", str(cache_dir), "--namespace", "ffffffff"]) == 2
    assert "matches no namespace" in capsys.readouterr().err
    assert main(["cache", "compact", str(cache_dir), "--namespace", "abc"]) == 2
    assert "at least 6 characters" in capsys.readouterr().err


def test_a_directory_that_is_not_a_cache_is_refused_and_left_alone(tmp_path, capsys):
    assert main(["cache", "info", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"meow")
    assert main(["cache", "clear", str(tmp_path / "photos"), "--yes"]) == 2
    assert "not a bertfeat cache" in capsys.readouterr().err
    assert (tmp_path / "photos" / "cat.jpg").exists()


def test_info_reports_a_corrupt_shard(cache_dir, capsys):
    shard = sorted((cache_dir / MEAN.fingerprint()).glob("shard-*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[:50])
    with pytest.warns(UserWarning, match=shard.name):
        assert main(["cache", "info", str(cache_dir)]) == 0
    assert f"1 corrupt shard(s), ignored until `compact` removes them: {shard.name}" in capsys.readouterr().out


def test_python_dash_m_bertfeat_cache_info(cache_dir):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "bertfeat", "cache", "info", str(cache_dir)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert MEAN.fingerprint() in done.stdout and "2 recipes, 60 rows" in done.stdout


def test_help_carries_examples(capsys):
    with pytest.raises(SystemExit):
        main(["cache", "--help"])
    assert "bertfeat cache clear ~/.cache/bertfeat --yes" in capsys.readouterr().out
