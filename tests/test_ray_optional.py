"""The Ray engine's parts that need no Ray cluster: the optional import, the worker plan, the actor body, CLI flags.

These run whether or not Ray is installed; tests/test_ray.py runs real jobs on a local cluster.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bertfeat.ray as bray
from bertfeat.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_import_bertfeat_never_imports_ray():
    code = ("import sys, bertfeat, bertfeat.ray, bertfeat.cli, bertfeat.cli.embed; "
            "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_missing_ray_says_how_to_install_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray looks like to `import ray`
    with pytest.raises(ImportError, match=r"pip install 'bertfeat\[ray\]'"):
        bray.require_ray()
    with pytest.raises(ImportError, match=r"pip install 'bertfeat\[ray\]'"):
        bray.embed_dataset(object(), "text")
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": ["a", "b"]}), src)
    code = main(["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--engine", "ray"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'bertfeat[ray]'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.partial").exists()


@pytest.mark.parametrize("nodes, gpus, kwargs, expected", [
    # the 2-core CI machine: one actor on one CPU, the other CPU left to Ray Data's read and write tasks
    ([2], [0], {}, (1, 1.0, 0.0, 1, "cpu")),
    # two actors there share the spare CPU instead of starving the reads
    ([2], [0], {"num_workers": 2}, (2, 0.5, 0.0, 1, "cpu")),
    ([16, 16], [0, 0], {}, (2, 15.0, 0.0, 15, "cpu")),
    ([16, 16], [0, 0], {"num_workers": 4}, (4, 7.0, 0.0, 7, "cpu")),
    ([8, 32], [0, 0], {"num_workers": 1}, (1, 31.0, 0.0, 31, "cpu")),  # no actor bigger than the biggest node
    ([2], [0], {"cpus_per_worker": 3.5}, (1, 3.5, 0.0, 3, "cpu")),
    ([16, 16], [4, 4], {"gpus_per_worker": 1}, (8, 1.0, 1.0, 1, "cuda")),
    ([16], [2], {"gpus_per_worker": 0.5, "cpus_per_worker": 2}, (4, 2.0, 0.5, 2, "cuda")),
    ([0], [0], {"gpus_per_worker": 1, "num_workers": 3}, (3, 1.0, 1.0, 1, "cuda")),  # GPU nodes yet to be added
    ([16], [1], {"gpus_per_worker": 1}, (1, 1.0, 1.0, 1, "cuda")),  # one GPU: one worker
    # fractions that float division cannot hold exactly: 1 // 0.1 is 9.0 in Python, but ten workers fit one GPU
    ([16], [1], {"gpus_per_worker": 0.1}, (10, 1.0, 0.1, 1, "cuda")),
    ([16, 16], [1, 1], {"gpus_per_worker": 0.1}, (20, 1.0, 0.1, 1, "cuda")),
    ([16], [2], {"gpus_per_worker": 0.2}, (10, 1.0, 0.2, 1, "cuda")),
    ([16], [1], {"gpus_per_worker": 0.4}, (2, 1.0, 0.4, 1, "cuda")),  # 2.5 workers' worth: two
    # a share cannot span two nodes: two nodes of one GPU hold four workers of 0.4 (the fifth of 2 / 0.4 waited for a
    # GPU for good), a node of 2 and one of 1 three of 0.75
    ([16, 16], [1, 1], {"gpus_per_worker": 0.4}, (4, 1.0, 0.4, 1, "cuda")),
    ([16, 16], [2, 1], {"gpus_per_worker": 0.75}, (3, 1.0, 0.75, 1, "cuda")),
    ([30], [0], {"num_workers": 100}, (100, 0.29, 0.0, 1, "cpu")),  # 29 spare CPUs: 0.29 each (0.29 * 100 < 29)
    ([30], [0], {"num_workers": 3}, (3, 9.0, 0.0, 9, "cpu")),  # 9.67 each: whole CPUs, rounded down
    ([4], [0], {"num_workers": 300}, (300, 0.01, 0.0, 1, "cpu")),  # 3 spare CPUs: the most workers, 0.01 each
    # nodes of different sizes: 9 CPUs each (the share) fit the 15 spare of one node once and the 3 of the other
    # never, so one actor waited for a node for good; then two of 7 both went to the big node, the small node idle
    # (14 of 18 spare CPUs used; 15 of 21 on three nodes); now as many actors as fit node by node, of the size that
    # uses most of the spare CPUs with the fewest model copies
    ([16, 4], [0, 0], {}, (6, 3.0, 0.0, 3, "cpu")),
    ([16, 4, 4], [0, 0, 0], {}, (7, 3.0, 0.0, 3, "cpu")),
    ([16, 8], [0, 0], {}, (3, 7.0, 0.0, 7, "cpu")),
    ([2, 2, 16], [0, 0, 0], {}, (1, 15.0, 0.0, 15, "cpu")),  # nodes too small to matter: not 17 actors of one CPU
    ([16, 4], [0, 0], {"cpus_per_worker": 2}, (2, 2.0, 0.0, 2, "cpu")),  # the user's size: one actor per node
    ([64, 8], [0, 0], {"num_workers": 4}, (4, 15.0, 0.0, 15, "cpu")),
])
def test_worker_plan(nodes, gpus, kwargs, expected):
    plan = bray.plan_workers(nodes, gpus, **kwargs)
    assert (plan.num_workers, plan.cpus, plan.gpus, plan.threads, plan.device) == expected


@pytest.mark.parametrize("kwargs, message", [
    ({"gpus_per_worker": 1}, r"gpus_per_worker=1 but the Ray cluster has 0 GPU\(s\)"),
    ({"device": "cuda"}, r"device='cuda' needs GPUs from Ray: pass gpus_per_worker=1"),
    ({"device": "cpu", "gpus_per_worker": 1}, r"device='cpu' does not go with gpus_per_worker=1"),
    ({"num_workers": 0}, r"num_workers=0 is not valid"),
    ({"cpus_per_worker": 0}, r"cpus_per_worker=0 is not valid"),
    ({"gpus_per_worker": -1}, r"gpus_per_worker=-1 is not valid"),
    ({"gpus_per_worker": 2}, r"gpus_per_worker=2 is not supported: a worker runs one model on one GPU.*gpus_per_worker=1"),
])
def test_worker_plan_errors_say_what_to_do(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bray.plan_workers([8], [0], **kwargs)


@pytest.mark.parametrize("nodes, num_workers", [([4], 301), ([4], 1000), ([4, 4], 700)])
def test_more_workers_than_a_hundredth_of_a_cpu_each_is_refused_not_given_none(nodes, num_workers):
    """Over 100 workers per spare CPU, the share rounded to 0.0 CPU each, which asks Ray for no CPU: every actor
    placed at once, each loading its model, wherever Ray likes (one node's memory runs out)."""
    spare = sum(nodes) - len(nodes)
    with pytest.raises(ValueError) as info:
        bray.plan_workers(nodes, [0] * len(nodes), num_workers=num_workers)
    assert str(info.value) == (
        f"num_workers={num_workers} is too many for the Ray cluster's {spare} spare CPU(s) (one per node is kept for "
        f"reading and writing): they hold at most {spare * 100} workers, 0.01 CPU each. Pass a smaller num_workers=, "
        "or cpus_per_worker= explicitly.")
    # the user's own share is theirs to choose
    assert bray.plan_workers(nodes, [0] * len(nodes), num_workers=num_workers, cpus_per_worker=0.001).cpus == 0.001


def test_a_one_cpu_cluster_needs_an_explicit_allotment():
    with pytest.raises(ValueError, match="pass cpus_per_worker= explicitly"):
        bray.plan_workers([1], [0])


@pytest.mark.parametrize("nodes, gpus, kwargs, expected", [
    # a share of 1 to 2 CPUs: whole CPUs, one each (not 1.5, which the shares' fractions would give)
    ([16], [0], {"num_workers": 10}, (10, 1.0, 0.0, 1, "cpu")),
    # fewer whole CPUs each until every actor finds a node: 3 of 2 fit nodes of 3 spare twice, of 1 six times
    ([4, 4], [0, 0], {"num_workers": 3}, (3, 1.0, 0.0, 1, "cpu")),
    ([6, 6], [0, 0], {"num_workers": 3}, (3, 2.0, 0.0, 2, "cpu")),  # 3 each fit twice, 2 each four times
    # nodes of fractional CPUs: one each stays one each, though 1.5 spare a node hold one actor each
    ([2.5, 2.5], [0, 0], {"num_workers": 3}, (3, 1.0, 0.0, 1, "cpu")),
    # a fraction of a CPU each is cut to the hundredth below, never above: 8 of 0.88 would need 7.04 of 7 spare
    ([8], [0], {"num_workers": 8}, (8, 0.87, 0.0, 1, "cpu")),
    ([2], [0], {"num_workers": 2, "cpus_per_worker": 0.5}, (2, 0.5, 0.0, 1, "cpu")),  # the user's fraction taken
    # the default pool, node by node: the biggest actor whose fit uses 85% of the spare CPUs, tried size by size
    ([10, 5], [0, 0], {}, (3, 4.0, 0.0, 4, "cpu")),  # 9 + 4 spare: 2 + 1 of 4 use 12 (3 of 3 would use 9)
    ([18, 4], [0, 0], {}, (1, 17.0, 0.0, 17, "cpu")),  # 17 of 20 spare is 85% exactly: enough
    ([4, 2, 2, 2, 2], [0, 0, 0, 0, 0], {}, (7, 1.0, 0.0, 1, "cpu")),  # one of 3 or 2 would use 3 of 7: one CPU each
])
def test_worker_plan_at_the_bounds_of_its_arithmetic(nodes, gpus, kwargs, expected):
    plan = bray.plan_workers(nodes, gpus, **kwargs)
    assert (plan.num_workers, plan.cpus, plan.gpus, plan.threads, plan.device) == expected


def test_worker_plan_refusals_of_the_cluster_word_for_word():
    with pytest.raises(ValueError) as info:
        bray.plan_workers([16, 16], [0, 0], gpus_per_worker=0.5)
    assert str(info.value) == (
        "gpus_per_worker=0.5 but the Ray cluster has 0 GPU(s). Pass num_workers= explicitly (an autoscaling cluster "
        "then adds GPU nodes), or gpus_per_worker=0 for CPU workers.")
    with pytest.raises(ValueError) as info:
        bray.plan_workers([1, 1.5], [0, 0], num_workers=2)
    assert str(info.value) == (
        "the Ray cluster has 2.5 CPU(s), too few to keep one per node for reading and writing; pass cpus_per_worker= "
        "explicitly (a fraction such as 0.5 lets workers share a CPU).")


def test_check_pool_defaults_are_plan_workers_cpu_actors():
    # the checks a job runs before Ray starts, with plan_workers' own defaults: CPU actors on the CPU
    from bertfeat.ray_plan import check_pool

    assert check_pool() == "cpu"
    assert check_pool(gpus_per_worker=1) == "cuda"


def test_actor_sets_its_threads_and_embeds_like_the_core(tiny_bert, monkeypatch):
    import torch

    from bertfeat.arrow import ArrowFeaturizer

    monkeypatch.setitem(sys.modules, "ray", None)  # the actor body itself needs no Ray when it reports nowhere
    before = torch.get_num_threads()
    table = pa.table({"id": [1, 2, 3], "review": ["the cat sat", "a dog ran", "the cat sat"]})
    try:
        actor = bray.RayFeaturizer(["review"], ["id"], "columns", threads=3, params={"model": tiny_bert})
        assert torch.get_num_threads() == 3 and actor.threads == 3
        got = actor(table)
    finally:
        torch.set_num_threads(before)
    want = ArrowFeaturizer(["review"], ["id"], model=tiny_bert)(table)
    assert isinstance(got, pa.Table) and got.schema.equals(want.schema, check_metadata=True)
    # 3 threads split the matrix products differently from the default: equal within float32 rounding
    np.testing.assert_allclose(np.column_stack(got.columns[1:]), np.column_stack(want.columns[1:]), atol=1e-5, rtol=0)


@pytest.mark.parametrize("args, message", [
    (["--num-workers", "2"], "--num-workers applies to --engine ray only; add --engine ray or drop --num-workers"),
    (["--gpus-per-worker", "1", "--engine", "local"], "--gpus-per-worker applies to --engine ray only"),
    # the API's words (device='cuda', gpus_per_worker=1) in the command's flags
    (["--engine", "ray", "--device", "cuda"], "--device cuda needs GPUs from Ray: pass --gpus-per-worker 1, one GPU "
                                              "per worker."),
    (["--engine", "ray", "--gpus-per-worker", "1", "--device", "cpu"],
     "--device cpu does not go with --gpus-per-worker 1"),
    (["--engine", "ray", "--gpus-per-worker", "2"], "--gpus-per-worker 2 is not supported"),
])
def test_conflicting_engine_flags_are_rejected_before_work(tmp_path, capsys, args, message):
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": ["a", "b"]}), src)
    code = main(["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--model", "nowhere", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not any(p.name.startswith("o") for p in tmp_path.iterdir())


def test_csv_input_with_the_ray_engine_is_a_usage_error(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("id,text\n1,hello\n")
    code = main(["embed", str(src), "--text-col", "text", "--out", str(tmp_path / "o"), "--engine", "ray"])
    err = capsys.readouterr().err
    assert code == 2 and "--engine ray reads parquet input only" in err and "convert it to parquet" in err


def test_actor_sharing_a_gpu_budgets_its_share_of_the_card(tiny_bert, monkeypatch):
    import torch

    from bertfeat import gpu

    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.setattr(gpu, "_MEMORY_SHARE", 1.0)
    before = torch.get_num_threads()
    try:
        bray.RayFeaturizer(["review"], [], "columns", threads=1, params={"model": tiny_bert}, gpu_share=0.5)
    finally:
        torch.set_num_threads(before)
    assert gpu.memory_share() == 0.5
