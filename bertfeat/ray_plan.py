"""How many Ray workers a job runs, and what each gets: the actor pool's size, each actor's Ray resources (CPUs,
GPUs), its torch threads and its device, from the cluster's nodes and the user's choices. Plain arithmetic on node
sizes: no Ray is imported here (:func:`_cluster_nodes` reads a running Ray it is handed)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bertfeat.recipe import _is_int


@dataclass(frozen=True)
class WorkerPlan:
    """The actor pool: its size, each actor's Ray resources, torch threads and device."""

    num_workers: int
    cpus: float
    gpus: float
    threads: int
    device: str


def plan_workers(node_cpus, node_gpus, num_workers=None, gpus_per_worker=0, cpus_per_worker=None,
                 device: str = "auto") -> WorkerPlan:
    """Size the actor pool from the cluster's nodes (their CPU and GPU counts) and the user's choices.

    With GPUs: one actor per ``gpus_per_worker`` GPUs in the cluster, one CPU each unless told otherwise. Without,
    the nodes' CPUs less one each (left to Ray Data's read and write tasks, which would otherwise starve and stall
    the job) are the actors': by default one actor per node on nodes of one size, and on nodes of different sizes as
    many as fit node by node (:func:`_fill_nodes`); with ``num_workers``, shared among them, whole CPUs where there
    are enough, and no more each than lets every actor find a node with that many spare.
    """
    device = check_pool(num_workers, gpus_per_worker, cpus_per_worker, device)
    gpus = float(gpus_per_worker)
    if gpus > 0:
        if num_workers is None:
            # how many shares fit, node by node (a share cannot span two nodes: two nodes of one GPU hold four
            # workers of 0.4, not five), read past float error: 1 // 0.1 is 9.0, yet ten workers of 0.1 fit one GPU
            num_workers = sum(_whole(g / gpus) for g in node_gpus)
            if num_workers < 1:
                raise ValueError(
                    f"gpus_per_worker={gpus_per_worker} but the Ray cluster has {sum(node_gpus):g} GPU(s). Pass "
                    "num_workers= explicitly (an autoscaling cluster then adds GPU nodes), or gpus_per_worker=0 for "
                    "CPU workers."
                )
        cpus = 1.0 if cpus_per_worker is None else float(cpus_per_worker)
    else:
        spare = [c - 1 for c in node_cpus if c >= 2]
        if num_workers is None and cpus_per_worker is None and spare:
            num_workers, cpus = _fill_nodes(spare)
            return WorkerPlan(num_workers=num_workers, cpus=cpus, gpus=0.0, threads=max(1, int(cpus)), device=device)
        if num_workers is None:
            num_workers = max(1, len(spare))
        if cpus_per_worker is None:
            if not spare:
                raise ValueError(
                    f"the Ray cluster has {sum(node_cpus):g} CPU(s), too few to keep one per node for reading and "
                    "writing; pass cpus_per_worker= explicitly (a fraction such as 0.5 lets workers share a CPU)."
                )
            share = sum(spare) / num_workers
            if share >= 1:
                # whole CPUs, as many as lets every actor find a node: on nodes of different sizes (16 and 4 CPUs)
                # the share (9) fits the big node once and the small one never, so one actor ran the job and the
                # other waited for a node for good
                cpus = float(min(_whole(share), max(spare)))
                while cpus > 1 and sum(_whole(c / cpus) for c in spare) < num_workers:
                    cpus -= 1
            else:
                cpus = _whole(share * 100) / 100
                if cpus == 0:
                    # 0.0 asks Ray for no CPU at all: it then places every actor, each with its model copy, on
                    # whichever node, none bounded by CPUs (a node's memory is what runs out)
                    raise ValueError(
                        f"num_workers={num_workers} is too many for the Ray cluster's {sum(spare):g} spare CPU(s) "
                        "(one per node is kept for reading and writing): they hold at most "
                        f"{_whole(sum(spare) * 100)} workers, 0.01 CPU each. Pass a smaller num_workers=, or "
                        "cpus_per_worker= explicitly."
                    )
        else:
            cpus = float(cpus_per_worker)
    return WorkerPlan(num_workers=int(num_workers), cpus=cpus, gpus=gpus, threads=max(1, int(cpus)), device=device)


def check_pool(num_workers=None, gpus_per_worker=0, cpus_per_worker=None, device: str = "auto") -> str:
    """Refuse the user's choices for the pool where no cluster could run them, before Ray starts (a file job
    refused them once it had started Ray); returns each actor's device (:func:`worker_device`)."""
    if num_workers is not None and (not _is_int(num_workers) or num_workers < 1):
        raise ValueError(f"num_workers={num_workers!r} is not valid: expected a positive int, or None for the default.")
    _check_gpus(gpus_per_worker)
    if cpus_per_worker is not None and (not _is_number(cpus_per_worker) or cpus_per_worker <= 0):
        raise ValueError(f"cpus_per_worker={cpus_per_worker!r} is not valid: expected a number > 0, or None.")
    return worker_device(device, gpus_per_worker)


FILLED = 0.85  # the part of the nodes' spare CPUs the default CPU actors use at least


def _fill_nodes(spare: list[float]) -> tuple[int, float]:
    """The default CPU pool on nodes with ``spare`` CPUs each: ``(actors, CPUs each)``. The biggest actor (fewest
    model copies) such that the actors that fit node by node use :data:`FILLED` of the spare CPUs: one actor per
    node on nodes of one size; on nodes of 16 and 4 CPUs six of 3 (one actor per node, 9 each, fitted the small node
    never, and two of 7 both went to the big node, the small one idle). A node too small to matter (16 and 2: one
    spare CPU of 16) is left to the reads rather than every actor cut to one CPU."""
    for cpus in range(max(1, _whole(max(spare))), 0, -1):
        fit = sum(_whole(s / cpus) for s in spare)
        if fit * cpus >= FILLED * sum(spare) or cpus == 1:
            return max(1, fit), float(cpus)


def _whole(x: float) -> int:
    """``floor(x)``, but a quotient a hair under a whole number (float error: 0.29 * 100 is 28.999...) counts as it."""
    return math.floor(x + 1e-9)


def worker_device(device, gpus_per_worker) -> str:
    """The device each actor uses: the GPU Ray gave it, or the CPU when it asked Ray for none."""
    if not isinstance(device, str):
        raise ValueError(f"device={device!r} is not valid: expected 'auto', 'cpu', 'cuda' or 'mps'.")
    from bertfeat.devices import device_type

    device_type(device)  # a spelling no worker runs on ('gpu', 'CUDA'), refused before Ray starts
    # before it is read beside the device: embed_parquet and the command call this first, and a count that is no count
    # was told to leave device='auto' (-1 beside 'cpu') or failed formatting it ('1')
    _check_gpus(gpus_per_worker)
    if gpus_per_worker:
        if gpus_per_worker > 1:
            raise ValueError(
                f"gpus_per_worker={gpus_per_worker:g} is not supported: a worker runs one model on one GPU, so it "
                "would leave the others idle. Pass gpus_per_worker=1 (one worker per GPU) or a fraction such as 0.5 "
                "(workers sharing a GPU)."
            )
        if device not in ("auto", "cuda"):
            raise ValueError(
                f"device={device!r} does not go with gpus_per_worker={gpus_per_worker:g}: Ray gives each worker its "
                "GPU(s) and hides the others, so leave device='auto'."
            )
        return "cuda"
    if device.startswith("cuda"):
        raise ValueError(
            f"device={device!r} needs GPUs from Ray: pass gpus_per_worker=1, one GPU per worker."
        )
    return "cpu" if device == "auto" else device  # a worker that asked Ray for no GPU must not take one


def _check_gpus(gpus_per_worker) -> None:
    if not _is_number(gpus_per_worker) or gpus_per_worker < 0:
        raise ValueError(f"gpus_per_worker={gpus_per_worker!r} is not valid: expected a number >= 0 (0 = CPU only).")


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(x)


def _cluster_nodes(ray) -> tuple[list[float], list[float]]:
    alive = [n for n in ray.nodes() if n.get("Alive")]
    return ([float(n["Resources"].get("CPU", 0)) for n in alive], [float(n["Resources"].get("GPU", 0)) for n in alive])

