"""Checkpoints inside a chunk (bertfeat.journal): a killed ``bertfeat embed`` loses seconds of work, not a chunk, and
the resumed output is byte-identical to an uninterrupted run's."""

import json
import signal
import time

import numpy as np
import pytest

from bertfeat.backend import TorchBackend
from bertfeat.batching import TokenSeqs
from bertfeat.files import embed_file
from bertfeat.journal import BatchJournal, batch_key
from tests.conftest import assert_same_output
from tests.test_cli_files import frame, run_cli


_FORWARD = TorchBackend.forward


class _Killed(KeyboardInterrupt):
    pass


def _count_forward(monkeypatch, die_after=None):
    """Count the model's forward passes; with ``die_after``, stop the job (as Ctrl-C does) in the next one."""
    calls = []

    def forward(self, units, pooling, layer_groups, skip=0):
        if die_after is not None and len(calls) == die_after:
            raise _Killed()
        calls.append(len(units))
        return _FORWARD(self, units, pooling, layer_groups, skip)

    monkeypatch.setattr(TorchBackend, "forward", forward)
    return calls


def _job(tmp_path, tiny_bert, **kw):
    src = tmp_path / "in.parquet"
    if not src.exists():
        frame(300, seed=11).to_parquet(src)
    # one chunk of many batches: a kill inside it used to lose all of it
    return dict(input=str(src), text_cols="review", keep_cols="id", model=tiny_bert, quiet=True, batch_tokens=96,
                **kw)


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache-dir"])
def test_a_kill_inside_a_chunk_keeps_the_saved_batches_and_the_output_is_byte_identical(tiny_bert, tmp_path,
                                                                                         monkeypatch, cache):
    extra = {"cache_dir": str(tmp_path / "cache")} if cache else {}
    reference = tmp_path / "ref.parquet"
    ref_calls = _count_forward(monkeypatch)
    ref_extra = {"cache_dir": str(tmp_path / "ref-cache")} if cache else {}
    embed_file(out=str(reference), **_job(tmp_path, tiny_bert, **ref_extra))
    total = len(ref_calls)
    assert total >= 10, "the test needs a chunk of many batches"

    out = tmp_path / "out.parquet"
    _count_forward(monkeypatch, die_after=7)
    with pytest.raises(_Killed):
        embed_file(out=str(out), checkpoint_seconds=0, **_job(tmp_path, tiny_bert, **extra))
    journal = tmp_path / "out.parquet.partial" / "part-000000.journal"
    assert not out.exists() and len(list(journal.glob("*.npz"))) == 7  # saved after every batch with 0 seconds

    calls = _count_forward(monkeypatch)
    manifest = embed_file(out=str(out), checkpoint_seconds=0, **_job(tmp_path, tiny_bert, **extra))
    assert len(calls) == total - 7, "the rerun must run only the batches no checkpoint holds"
    assert manifest["this_run"]["batches_resumed"] == 7
    assert_same_output(out, reference)
    ref_manifest = json.loads((tmp_path / "ref.parquet.manifest.json").read_text())
    assert manifest["counts"] == ref_manifest["counts"]
    assert not (tmp_path / "out.parquet.partial").exists()


def test_ctrl_c_saves_the_finished_batches_whatever_the_interval(tiny_bert, tmp_path, monkeypatch, capsys):
    ref_calls = _count_forward(monkeypatch)
    embed_file(out=str(tmp_path / "ref.parquet"), **_job(tmp_path, tiny_bert))
    out = tmp_path / "out.parquet"
    _count_forward(monkeypatch, die_after=5)
    with pytest.raises(_Killed):
        embed_file(out=str(out), checkpoint_seconds=1e9, **_job(tmp_path, tiny_bert))
    assert len(list((tmp_path / "out.parquet.partial" / "part-000000.journal").glob("*.npz"))) == 1
    calls = _count_forward(monkeypatch)
    manifest = embed_file(out=str(out), **{**_job(tmp_path, tiny_bert), "quiet": False})
    assert manifest["this_run"]["batches_resumed"] == 5 and len(calls) == len(ref_calls) - 5
    err = capsys.readouterr().err
    assert "5 batches of an unfinished chunk came from the killed run's checkpoint" in err
    assert_same_output(out, tmp_path / "ref.parquet")


def test_a_checkpoint_of_another_batch_plan_is_not_used(tiny_bert, tmp_path, monkeypatch):
    """--batch-tokens is not part of the job (it changes no feature beyond rounding): a rerun with another one plans
    other batches, finds none of them in the checkpoint and embeds everything, rather than misplace a saved batch."""
    out = tmp_path / "out.parquet"
    _count_forward(monkeypatch, die_after=6)
    with pytest.raises(_Killed):
        embed_file(out=str(out), checkpoint_seconds=0, **_job(tmp_path, tiny_bert))
    _count_forward(monkeypatch)
    manifest = embed_file(out=str(out), checkpoint_seconds=0, **{**_job(tmp_path, tiny_bert), "batch_tokens": 200})
    assert manifest["this_run"]["batches_resumed"] == 0
    embed_file(out=str(tmp_path / "ref.parquet"), **{**_job(tmp_path, tiny_bert), "batch_tokens": 200})
    assert_same_output(out, tmp_path / "ref.parquet")


def test_sigkill_loses_at_most_the_batches_since_the_last_checkpoint(tiny_bert, tmp_path):
    src = tmp_path / "in.parquet"
    frame(900, seed=4).to_parquet(src)
    args = [src, "--text-col", "review", "--id-col", "id", "--model", tiny_bert, "--batch-tokens", "48", "--quiet"]
    reference = tmp_path / "ref.parquet"
    assert run_cli("embed", *args, "--out", reference).wait(timeout=600) == 0

    out = tmp_path / "out.parquet"
    proc = run_cli("embed", *args, "--out", out, "--checkpoint-every", "0")
    journal = tmp_path / "out.parquet.partial" / "part-000000.journal"
    deadline = time.time() + 300
    while len(list(journal.glob("*.npz"))) < 3:
        assert proc.poll() is None, "the run finished before it could be killed"
        assert time.time() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    saved = len(list(journal.glob("*.npz")))
    assert not out.exists()

    again = run_cli("embed", *args, "--out", out)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    manifest = json.loads((tmp_path / "out.parquet.manifest.json").read_text())
    assert manifest["this_run"]["batches_resumed"] >= saved >= 3
    assert manifest["this_run"]["chunks_resumed"] == 0
    assert_same_output(out, reference)


def test_the_journal_saves_by_time_and_skips_a_damaged_file(tmp_path, monkeypatch):
    now = [100.0]
    monkeypatch.setattr("bertfeat.journal.time.monotonic", lambda: now[0])
    folder = tmp_path / "partial" / "part-000000.journal"  # made at the first save, in the job's folder
    (tmp_path / "partial").mkdir()
    journal = BatchJournal(folder, every=30)
    journal.put("a", np.ones((2, 3), np.float32))
    now[0] += 29.5
    journal.put("b", np.zeros((1, 3), np.float32))
    assert not folder.exists()
    now[0] += 0.5  # exactly 30 s of work since the journal started
    journal.put("c", np.full((1, 3), 2, np.float32))
    assert len(list(folder.glob("*.npz"))) == 1 and journal.saved == 3
    journal.put("d", np.full((1, 3), 3, np.float32))
    journal.flush()
    assert len(list(folder.glob("*.npz"))) == 2 and journal.saved == 4
    (folder / "000000-1.npz").write_bytes(b"PK\x03\x04 torn")  # sorts first: the files after it still count
    np.savez(folder / "000000-2.npz", e=np.array([object()], dtype=object))  # a pickle: never loaded
    again = BatchJournal(folder, every=30)
    assert again.get("z") is None and again.get("e") is None
    np.testing.assert_array_equal(again.get("c"), np.full((1, 3), 2, np.float32))
    np.testing.assert_array_equal(again.get("a"), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(again.get("d"), np.full((1, 3), 3, np.float32))
    assert again.reused == 3 and again.get("a") is None  # each saved batch answers once
    with pytest.raises(ValueError, match="expected seconds >= 0"):
        BatchJournal(tmp_path / "k", every=-1)
    # the job's folder gone (removed while the job ran): the save fails, never makes it again
    gone = BatchJournal(tmp_path / "removed" / "part-000001.journal", every=0)
    with pytest.raises(FileNotFoundError):
        gone.put("a", np.ones(2, np.float32))
    assert not (tmp_path / "removed").exists()


def test_a_chunk_killed_twice_keeps_the_batches_of_both_runs(tmp_path):
    """A second killed run adds its files beside the first run's (same process id, as in a container), never over
    them: the third run finds every batch either saved."""
    folder = tmp_path / "j"
    first = BatchJournal(folder, every=0)
    for k in "abc":
        first.put(k, np.full(2, ord(k), np.float32))
    second = BatchJournal(folder, every=0)
    assert second.get("a") is not None  # reused: not saved again
    for k in "de":
        second.put(k, np.full(2, ord(k), np.float32))
    third = BatchJournal(folder, every=0)
    for k in "abcde":
        np.testing.assert_array_equal(third.get(k), np.full(2, ord(k), np.float32))


def test_a_batch_key_is_its_token_ids_and_what_is_pooled():
    seqs = TokenSeqs.from_lists([[5, 6, 7], [8], [9, 10]])
    key = batch_key(seqs[[0, 1]], ("mean",), [[1, 2]])
    assert key == batch_key(TokenSeqs.from_lists([[5, 6, 7], [8]]), ("mean",), [[1, 2]])
    assert key != batch_key(TokenSeqs.from_lists([[5, 6, 9], [8]]), ("mean",), [[1, 2]])  # one token differs
    assert key != batch_key(seqs[[1, 0]], ("mean",), [[1, 2]])  # order matters: results are per position
    assert key != batch_key(TokenSeqs.from_lists([[5, 6], [7, 8]]), ("mean",), [[1, 2]])  # same flat ids, split else
    assert key != batch_key(seqs[[0, 1]], ("cls",), [[1, 2]])
    assert key != batch_key(seqs[[0, 1]], ("mean",), [[1], [2]])


def test_checkpoint_seconds_is_checked(tiny_bert, tmp_path):
    for bad in (-1, float("nan"), float("inf"), "30", True):
        with pytest.raises(ValueError, match="checkpoint_seconds"):
            embed_file(out=str(tmp_path / "o.parquet"), checkpoint_seconds=bad, **_job(tmp_path, tiny_bert))
    assert not list(tmp_path.glob("o.parquet*"))


def test_batches_from_the_journal_count_on_the_progress_bar_and_give_the_same_features(tmp_path, progress_bars):
    import bertfeat.encode as enc
    from bertfeat import journal as journals
    from tests.conftest import CountingBackend, make_recipe

    texts = [f"text number {i}" for i in range(12)]
    first = CountingBackend()
    with journals.use(BatchJournal(tmp_path / "j", every=0)):
        want, _ = enc.encode(texts, make_recipe(), lambda: first, batch_tokens=40, progress=True)
    again = CountingBackend()
    with journals.use(BatchJournal(tmp_path / "j", every=0)) as journal:
        got, _ = enc.encode(texts, make_recipe(), lambda: again, batch_tokens=40, progress=True)
    assert first.forward_calls > 1 and again.forward_calls == 0 and journal.reused == first.forward_calls
    np.testing.assert_array_equal(got, want)
    again_bar = progress_bars[1].bar
    assert again_bar.total == again_bar.n == len(texts)  # every text counted, though none went to the model
