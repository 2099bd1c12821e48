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
from bertfeat.cli import build_parser, main
from bertfeat.encode import encode
from bertfeat.exceptions import CacheWarning
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


def test_info_advises_compacting_a_namespace_of_many_shards(cache_dir, capsys):
    # Each store adds a shard and nothing merges them but `compact`; a lookup spread over 2,000 of them took 100
    # times as long, and `cache info` printed "in 2000 shards" without a word of what that costs or what to do.
    from bertfeat.cli.cache import MANY_SHARDS

    cache = Cache(cache_dir)
    for i in range(MANY_SHARDS - 2):  # with the fixture's 2 shards: MANY_SHARDS
        cache.store(MEAN, [bytes([i]) * 16], np.ones((1, 4), np.float32), np.ones(1, np.int64))
    assert main(["cache", "info", str(cache_dir)]) == 0
    assert "shards: each is opened" not in capsys.readouterr().out
    cache.store(MEAN, [b"\xff" * 16], np.ones((1, 4), np.float32), np.ones(1, np.int64))
    assert main(["cache", "info", str(cache_dir)]) == 0
    out = capsys.readouterr().out
    fp = MEAN.fingerprint()
    assert out.count("shards: each is opened") == 1
    assert (f"  {MANY_SHARDS + 1} shards: each is opened and read apart, so lookups and every new process are slower "
            f"than with one; `bertfeat cache compact {cache_dir} --namespace {fp[:8]}` merges them") in out
    assert main(["cache", "compact", str(cache_dir), "--namespace", fp[:8]]) == 0
    capsys.readouterr()
    assert main(["cache", "info", str(cache_dir)]) == 0
    assert "shards: each is opened" not in capsys.readouterr().out


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


@pytest.mark.parametrize("action", ["compact", "clear"])
def test_compact_and_clear_where_flock_is_refused_say_to_run_them_alone_in_one_line(cache_dir, capsys, monkeypatch,
                                                                                     action):
    """docs/cache.md says to run them while no other job uses a cache whose filesystem refuses flock; they said
    nothing there. Now one line, once for the two namespaces, and the work is done."""
    import errno
    import fcntl

    def refused(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    from bertfeat.exceptions import NoLockWarning

    monkeypatch.setattr(fcntl, "flock", refused)
    with pytest.warns(NoLockWarning) as record:
        assert main(["cache", action, str(cache_dir), *(["--yes"] if action == "clear" else [])]) == 0
    assert [str(r.message) for r in record] == [
        f"the filesystem of the cache {cache_dir} does not support flock locks (No locks available), so no lock keeps "
        f"other jobs off it while it is {action}ed: run this only while no other job or session uses the cache."]
    out = capsys.readouterr().out
    assert shard_count(cache_dir, MEAN) == (1 if action == "compact" else 0)
    assert ("cleared 2 namespaces" if action == "clear" else f"{MEAN.fingerprint()}: 2 -> 1 shards") in out


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


def test_a_url_for_the_cache_is_refused_by_every_caller_before_any_folder_is_made(tiny_bert, tmp_path, monkeypatch,
                                                                                 capsys):
    from bertfeat import BertEmbedder
    from bertfeat.exceptions import CacheError

    monkeypatch.chdir(tmp_path)
    assert main(["cache", "info", "s3://bucket/cache"]) == 2
    assert "DIR s3://bucket/cache is a URL" in capsys.readouterr().err
    (tmp_path / "in.csv").write_text("text\nhello\n")
    assert main(["embed", "in.csv", "--text-col", "text", "--out", "out.parquet", "--model", str(tiny_bert),
                 "--cache-dir", "gs://bucket/cache"]) == 2
    assert "--cache-dir gs://bucket/cache is a URL" in capsys.readouterr().err
    with pytest.raises(CacheError, match="is a URL"):
        BertEmbedder(cache_dir="s3://bucket/cache").fit(["a"])
    assert sorted(os.listdir(tmp_path)) == ["in.csv"]


def test_a_cache_dir_whose_name_is_not_utf8_is_refused_before_anything_is_embedded(tiny_bert, tmp_path, monkeypatch,
                                                                                  capsys):
    # pyarrow failed to write the first shard, after the model had run, with "'utf-8' codec can't encode character
    # '\udce9' ... surrogates not allowed", naming neither the folder nor what to do
    from bertfeat import BertEmbedder
    from bertfeat.exceptions import CacheError

    monkeypatch.chdir(tmp_path)
    bad = os.fsdecode(b"cach\xe9")
    (tmp_path / "in.csv").write_text("text\nhello\n")
    assert main(["embed", "in.csv", "--text-col", "text", "--out", "out.parquet", "--model", str(tiny_bert),
                 "--cache-dir", bad, "--quiet"]) == 2
    err = capsys.readouterr().err
    # the name as bash reads it back, its byte that is not UTF-8 as that byte
    assert "--cache-dir $'cach\\xe9' (b'" in err and "cach\\xe9') is not a UTF-8 name" in err, err
    assert "rename it (convmv -f latin1 -t utf8 renames folders from Latin-1) or pass another directory." in err
    with pytest.raises(CacheError, match="is not a UTF-8 name"):
        BertEmbedder(model=str(tiny_bert), cache_dir=bad).fit_transform(["a"])
    assert sorted(os.listdir(tmp_path)) == ["in.csv"]


@pytest.mark.parametrize("written", ["[1, 2]", '"mean"', ""])
def test_info_of_a_recipe_file_that_holds_no_recipe_says_it_is_missing_and_a_store_writes_it_again(cache_dir, capsys,
                                                                                                 written):
    """A recipe.json holding JSON that is no object (a list, a string) failed `cache info` with a traceback
    ("AttributeError: 'list' object has no attribute 'get'"); one left empty (renamed unflushed by an older bertfeat
    before a power cut) was said missing for good. Now each is said missing, and the next store writes it again."""
    path = cache_dir / MEAN.fingerprint() / "recipe.json"
    whole = path.read_text()
    path.write_text(written)
    assert main(["cache", "info", str(cache_dir)]) == 0
    assert f"{MEAN.fingerprint()}  (recipe.json missing)" in capsys.readouterr().out
    encode(["a text never stored"], MEAN, CountingBackend, cache=Cache(cache_dir))
    assert path.read_text() == whole


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


# -- the text a person reads, word for word ---------------------------------------------------------------------------


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1023, "1,023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (1024 ** 2 - 1, "1,024.0 KiB"),
    (1024 ** 2, "1.0 MiB"), (5 * 1024 ** 3, "5.0 GiB"), (1024 ** 4, "1.0 TiB"), (3 * 1024 ** 5, "3,072.0 TiB"),
])
def test_sizes_are_shown_in_binary_units(n, text):
    from bertfeat.cli.cache import _size

    assert _size(n) == text


def _info(fingerprint, recipe, **kw):
    from bertfeat.cache import NamespaceInfo

    values = dict(n_features=8, rows=3, stored_rows=3, shards=1, bytes=2048)
    values.update(kw)
    return NamespaceInfo(fingerprint=fingerprint, recipe=recipe, **values)


def test_info_text_word_for_word():
    from bertfeat.cli.cache import _format_info

    chunked = dict(model="m/chunked", pooling=["cls", "max"], layers=[-2, -1], layer_agg="concat", max_length=128,
                   long_text="chunk", stride=32, normalize=True, dtype="bfloat16")
    plain = dict(model="m/plain", pooling=["mean"], layers=[6], layer_agg="mean", max_length=256,
                 long_text="truncate", stride=None, normalize=False, dtype="float32")
    infos = [
        _info("aaaa1111", chunked, n_features=1536, rows=1_234, stored_rows=1_300, shards=2, bytes=3 * 1024 ** 2,
              corrupt=["shard-1.parquet", "shard-2.parquet"], temp_files=2),
        _info("bbbb2222", plain, n_features=384),
        _info("cccc3333", None, n_features=None, rows=0, stored_rows=0, shards=0, bytes=0),
    ]
    assert _format_info("/c", infos).split("\n") == [
        "/c: 3 recipes, 1,237 rows, 3.0 MiB",
        "",
        "aaaa1111  m/chunked",
        "  pooling cls+max, layers -2,-1 (concat), 1536 features, max_length 128, long_text chunk (stride 32), "
        "normalize yes, dtype bfloat16",
        "  1,234 rows in 2 shards, 3.0 MiB; 66 duplicate rows",
        "  2 corrupt shard(s), ignored until `compact` removes them: shard-1.parquet, shard-2.parquet",
        "  2 temporary file(s) from writers running now or killed",
        "",
        "bbbb2222  m/plain",
        "  pooling mean, layers 6 (mean), 384 features, max_length 256, long_text truncate, normalize no, "
        "dtype float32",
        "  3 rows in 1 shard, 2.0 KiB",
        "",
        "cccc3333  (recipe.json missing)",
        "  0 rows in 0 shards, 0 B",
    ]
    assert _format_info("/c", infos[1:2]).split("\n")[0] == "/c: 1 recipe, 3 rows, 2.0 KiB"


def test_info_of_a_recipe_json_without_layers_or_pooling_still_prints():
    from bertfeat.cli.cache import _format_info

    text = _format_info("/c", [_info("dddd4444", {"model": "m/old"})])
    assert "  pooling , layers  (None), 8 features, max_length None, long_text None, normalize no, dtype None" in text


def test_info_json_is_indented_by_two_spaces(cache_dir, capsys):
    assert main(["cache", "info", str(cache_dir), "--json"]) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert data["dir"] == str(cache_dir)
    assert out.rstrip("\n") == json.dumps(data, indent=2)


def test_compact_with_a_namespace_leaves_the_others_alone(cache_dir, capsys):
    assert main(["cache", "compact", str(cache_dir), "--namespace", MEAN.fingerprint()[:8]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith(f"{MEAN.fingerprint()}: 2 -> 1 shards, 30 rows, 0 duplicates dropped, "
                                               "0 corrupt shards removed, 0 dead temp files removed, ")
    assert (shard_count(cache_dir, MEAN), shard_count(cache_dir, CHUNKED)) == (1, 2)


def test_clear_without_yes_says_how_to_confirm_word_for_word(cache_dir, capsys):
    assert main(["cache", "clear", str(cache_dir)]) == 2
    err = capsys.readouterr().err
    assert (f"this deletes every cached vector in {cache_dir}; add --yes to confirm, or pass --namespace FINGERPRINT "
            "to delete one recipe's vectors.") in err
    assert main(["cache", "clear", str(cache_dir), "--namespace", MEAN.fingerprint()]) == 0
    assert capsys.readouterr().out == f"cleared 1 namespace in {cache_dir}\n"
    assert main(["cache", "clear", str(cache_dir), "--yes"]) == 0
    assert capsys.readouterr().out == f"cleared 1 namespace in {cache_dir}\n"
    assert main(["cache", "clear", str(cache_dir), "--yes"]) == 0
    assert capsys.readouterr().out == f"cleared 0 namespaces in {cache_dir}\n"


def test_info_tells_apart_recipes_that_differ_by_their_prefix(tmp_path, capsys):
    """E5's 'query: ' and 'passage: ' recipes (or one with and one without a prefix) are different namespaces; the
    text of `cache info` names each prefix, so a user choosing which namespace to clear can tell them apart."""
    open_cache(tmp_path / "c")

    class Leading(CountingBackend):  # says which special tokens go before a text, as a prefix left out needs
        prefix = [1]

        def forward(self, units, pooling, layer_groups, skip=0):
            return super().forward(units, pooling, layer_groups)

    # the last: a model whose pooling leaves its prompt out ("include_prompt": false), the same prefix otherwise
    recipes = [make_recipe(prefix="query: "), make_recipe(prefix="passage: "), make_recipe(),
               make_recipe(prefix="query: ", pool_prefix=False)]
    for recipe in recipes:
        encode(TEXTS[:3], recipe, Leading, cache=Cache(tmp_path / "c"))
    assert main(["cache", "info", str(tmp_path / "c")]) == 0
    blocks = capsys.readouterr().out.split("\n\n")[1:]
    described = {block.split()[0]: block.split("\n")[1] for block in blocks}
    assert len(set(described.values())) == 4, described
    assert described[recipes[3].fingerprint()].endswith(", prefix 'query: ' (left out of pooling)")
    assert described[recipes[0].fingerprint()].endswith(", prefix 'query: '")
    assert described[recipes[1].fingerprint()].endswith(", prefix 'passage: '")
    assert "prefix" not in described[recipes[2].fingerprint()]


@pytest.mark.parametrize("action", ["compact", "clear"])
def test_the_namespace_help_states_the_shortest_prefix_the_cache_takes(cache_dir, capsys, action):
    """--namespace's help says a unique prefix of 6+ characters will do: 6 are taken, 5 refused."""
    from tests.test_cli_help import subcommands

    parser = subcommands(subcommands(build_parser())["cache"])[action]
    assert "a unique prefix of 6+ characters will do" in next(
        a.help for a in parser._actions if "--namespace" in a.option_strings)
    fingerprint = MEAN.fingerprint()
    assert main(["cache", action, str(cache_dir), "--namespace", fingerprint[:5]]) == 2
    assert "at least 6 characters" in capsys.readouterr().err
    assert main(["cache", action, str(cache_dir), "--namespace", fingerprint[:6]]) == 0


@pytest.mark.parametrize("action", ["compact", "info"])
def test_the_cache_commands_finish_where_warnings_are_errors_and_still_say_the_shard(cache_dir, capsys, action):
    """Where warnings are errors (``python -W error``, ``PYTHONWARNINGS=error``: CI), ``cache compact`` stopped on its
    own "ignoring unreadable shard" warning before removing that shard, the one thing it was run to do, and ``cache
    info`` before listing it: the tool's own maintenance reports the shard, it does not die on it."""
    import warnings

    shard = sorted((cache_dir / MEAN.fingerprint()).glob("shard-*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[:50])
    with pytest.warns(CacheWarning, match=f"ignoring unreadable shard {shard}"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["cache", action, str(cache_dir)]) == 0
    out = capsys.readouterr().out
    if action == "compact":
        assert f"{MEAN.fingerprint()}: 2 -> 1 shards, 10 rows, 0 duplicates dropped, 1 corrupt shards removed" in out
        assert not shard.exists()
    else:
        assert f"1 corrupt shard(s), ignored until `compact` removes them: {shard.name}" in out


def test_a_cache_path_refused_is_told_what_to_do_in_the_commands_words(tmp_path, capsys):
    """(found by a session 13 leftovers hunt, 2026-11-27, session 14) The cache's refusals of a path, written once in
    Python's spelling, end "or cache_dir=None for no cache": `bertfeat cache` names the cache by its argument DIR,
    and read "pass a directory path, or DIR None for no cache", a value no shell can type, for a command that has no
    run without a cache. That alternative is left out where the option it names is the command's own argument;
    `bertfeat embed` still reads "or no --cache-dir"."""
    afile = tmp_path / "afile"
    afile.write_text("")
    for args, said in ((["info", ""], "DIR '' is empty; pass a directory path."),
                       (["clear", str(afile), "--yes"], f"DIR {afile} ({afile}) exists but is not a directory. Pass a "
                                                        "writable directory on this machine.")):
        assert main(["cache", *args]) == 2
        assert capsys.readouterr().err == f"bertfeat cache: error: {said}\n"


def test_the_commands_the_cache_suggests_take_a_path_with_a_space_as_one_argument(tmp_path, capsys):
    """(found by a session 13 leftovers hunt, 2026-11-27, session 14) `cache info`'s advice to compact, the unreadable
    shard's warning and a fingerprint's refusal named `bertfeat cache ... DIR` with the path as it is: for a cache in
    "My Drive" pasted as told, the shell gave the command two arguments ("unrecognized arguments"). The path is now
    quoted as a shell reads it, as bertfeat's other suggested commands quote theirs."""
    import shlex

    from bertfeat.cli.cache import MANY_SHARDS

    root = tmp_path / "My Drive" / "cache"
    open_cache(root)
    cache = Cache(root)
    for i in range(MANY_SHARDS + 2):  # one of them made unreadable below
        cache.store(MEAN, [bytes([i]) * 16], np.ones((1, 4), np.float32), np.ones(1, np.int64))
    shard = sorted((root / MEAN.fingerprint()).glob("shard-*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[:50])
    with pytest.warns(CacheWarning) as said:
        assert main(["cache", "info", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"`bertfeat cache compact {shlex.quote(str(root))} --namespace {MEAN.fingerprint()[:8]}` merges them" in out
    assert [str(w.message).endswith(f"`bertfeat cache compact {shlex.quote(str(root))}` removes it.")
            for w in said] == [True]
    assert main(["cache", "compact", str(root), "--namespace", "abcdef"]) == 2
    assert capsys.readouterr().err.endswith(f"; `bertfeat cache info {shlex.quote(str(root))}` lists them.\n")
    for command in (f"cache compact {shlex.quote(str(root))}", f"cache info {shlex.quote(str(root))}"):
        assert build_parser().parse_args(shlex.split(command)).dir == str(root)  # one argument, the path
