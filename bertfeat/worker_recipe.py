"""What every worker of a Ray or Spark job must share with the driver: the recipe the driver checked and names.

The driver of a cluster job loads the model from ``--model`` once, checks the parameters against it, and writes the
recipe's provenance (model hashes, dtype, fingerprint) into the output. Each worker then loads the model again, from
the same path on its own node: on a cluster that path may hold other files (a node's local copy left stale by an
update, a Hugging Face name downloaded by each node at another revision), and the worker computes another recipe's
vectors. Found at the end of a file job, after hours of work, or never in a lazy Dataset/DataFrame job. So the driver
sends its recipe (:func:`driver_recipe`) and each worker compares its own with it (:func:`check_worker_recipe`)
once its model is read, before it embeds anything.

Torch-free: a recipe's fields are plain values.
"""

from __future__ import annotations

import socket

from bertfeat import __version__

MODEL_FILES = (("weights_sha256", "weights"), ("config_sha256", "config"), ("tokenizer_sha256", "tokenizer files"))


def driver_recipe(recipe, dtype: str | None = None, params: dict | None = None) -> dict:
    """The driver's recipe as plain values for the workers: its key fields (:meth:`Recipe.key_dict`), the model as
    named, and this bertfeat's version. ``dtype``: the dtype the workers run (``dtype="auto"`` fixed on the driver
    for their device), or None where each worker resolves ``"auto"`` for its own device (then left out). With the
    job's ``params``, also the ids this environment's tokenizer gives :data:`~bertfeat.tokens.PROBES`
    (:func:`tokenization`), and the library versions that gave them."""
    expected = {**recipe.key_dict(), "model": recipe.model, "bertfeat_version": __version__}
    if params is not None:
        expected["tokenization"] = tokenization(params)
        expected["libraries"] = libraries()
    if dtype is None:
        expected.pop("dtype")
    else:
        expected["dtype"] = dtype
    return expected


def check_worker_recipe(recipe, expected: dict | None, worker: str) -> None:
    """Refuse, before any text is embedded, a worker whose recipe is not the driver's ``expected`` one
    (:func:`driver_recipe`): other model files at the same path, or another bertfeat computing other vectors.
    ``worker`` names it for the message ("a Ray worker", "a Spark task"). None: nothing to compare."""
    if expected is None:
        return
    where = f"{worker} on host {socket.gethostname()!r}"
    own = recipe.key_dict()
    files = [(key, name) for key, name in MODEL_FILES if own.get(key) != expected.get(key)]
    if files:
        differ = "; ".join(f"{name}: sha256 {own.get(key, '')[:12]}... here, {expected.get(key, '')[:12]}... on "
                           "the driver" for key, name in files)
        raise ValueError(
            f"{where} read other model files at {expected['model']!r} than the driver did ({differ}): that node's "
            "copy of the model is stale or another version, and its vectors would be another model's. Make the "
            "model the same on every node (put it on a filesystem every node mounts, or copy it to each node "
            "again), then run the job again; nothing was embedded by this worker."
        )
    other = sorted(k for k in (set(own) | set(expected)) - {"model", "bertfeat_version", "tokenization", "libraries"}
                   if k != "dtype" or "dtype" in expected if own.get(k) != expected.get(k))
    if other or expected.get("bertfeat_version") != __version__:  # the version: the output's metadata names it
        said = "".join(f"{k}={own.get(k)!r} here, {expected.get(k)!r} on the driver; " for k in other)
        raise ValueError(
            f"{where} computes another recipe than the driver from the same model files ({said}bertfeat "
            f"{__version__} here, {expected.get('bertfeat_version')} on the driver): install the same bertfeat "
            "(and the same environment) on every node, then run the job again; nothing was embedded by this worker."
        )


def fix_auto_dtype(params: dict, kind: str, ask=None) -> tuple[dict, str | None]:
    """``params`` with ``dtype="auto"`` fixed once, on the driver, for the device type ``kind`` the workers run on
    (``"cuda"``, ``"cpu"``, ``"mps"``), so that every worker runs the recipe the driver names: float32 on CPUs, and on
    GPUs this machine's GPU's choice; where the driver has no GPU, what ``ask()`` answers (the Ray and Spark engines
    ask one GPU of the cluster: a cluster of T4s runs float16, as each worker would choose), or else bfloat16 (native
    from Ampere on). Left to each worker, a cluster mixing GPU types ran two recipes (an A100 bfloat16, a T4 float16),
    refused only once every batch had run. Returns the fixed params and that choice for GPU workers (else None),
    which a worker whose GPU chooses otherwise is refused for (:func:`check_fixed_dtype`)."""
    if params.get("dtype", "auto") != "auto":
        return params, None
    from bertfeat import gpu
    from bertfeat.devices import resolve_dtype

    if kind == "cuda":
        if gpu.device_count() > 0:
            dtype = resolve_dtype("auto", "cuda")
        else:
            dtype = ask() if ask is not None else "bfloat16"
        return {**params, "dtype": dtype}, dtype
    return {**params, "dtype": resolve_dtype("auto", kind)}, None


def check_fixed_dtype(fixed: str | None, device: str, engine: str, worker: str) -> None:
    """Refuse a worker on GPU ``device`` that would choose another dtype than the one the driver fixed
    ``dtype="auto"`` as (``fixed``, :func:`fix_auto_dtype`): its features would be of another recipe than the
    output names. ``engine`` ("Spark", "Ray") and ``worker`` ("task", "worker") name them for the message."""
    if fixed is None or not device.startswith("cuda"):
        return
    from bertfeat.devices import resolve_dtype

    own = resolve_dtype("auto", device)
    if own != fixed:
        raise ValueError(
            f"dtype='auto' was fixed on the {engine} driver as {fixed!r} for {worker}s on a GPU (the output's metadata "
            f"names it), but this {worker}'s GPU ({device}) runs {own!r} for dtype='auto': pass dtype={own!r} "
            f"to run every {worker} in it, or dtype={fixed!r} to run this one as the others."
        )


def libraries() -> str:
    """The versions of the libraries that tokenize and run the model here, for a message."""
    from importlib.metadata import PackageNotFoundError, version

    def of(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "none"

    return ", ".join(f"{name} {of(name)}" for name in ("transformers", "tokenizers", "torch"))


def tokenization(params: dict) -> str:
    """A sha256 of the content token ids this environment's tokenizer gives :data:`~bertfeat.tokens.PROBES` for the
    model ``params`` name: the tokenizer files are in the recipe's fingerprint, but another transformers or
    tokenizers release can read the same files into other ids (upgrades have changed tokenization before)."""
    import hashlib
    import json

    from bertfeat.model_files import load_tokenizer
    from bertfeat.models import resolve_model
    from bertfeat.tokens import PROBES

    trust = bool(params.get("trust_remote_code", False))
    spec = resolve_model(params.get("model", "default"), trust_remote_code=trust)
    # the tokenizer the worker's model then uses, loaded once (bertfeat.model_files.load_tokenizer)
    ids = load_tokenizer(spec, trust)[1](PROBES)
    return hashlib.sha256(json.dumps([list(map(int, x)) for x in ids]).encode()).hexdigest()


def check_worker_tokenization(params: dict, expected: dict | None, worker: str) -> None:
    """Refuse a worker whose environment tokenizes the probe texts into other ids than the driver's did
    (:func:`tokenization`), before it embeds anything: the same recipe key would hold another tokenization's
    vectors, in its output and in a shared cache."""
    if expected is None or "tokenization" not in expected:
        return
    if tokenization(params) != expected["tokenization"]:
        raise ValueError(
            f"{worker} on host {socket.gethostname()!r} tokenizes texts into other ids than the driver from the same "
            f"tokenizer files of {expected['model']!r} ({libraries()} here; {expected['libraries']} on the driver): "
            "its vectors would be another tokenization's under the same recipe. Install the same transformers and "
            "tokenizers on every node, then run the job again; nothing was embedded by this worker."
        )
