"""The Ray engine on a Ray Dataset: :func:`embed_dataset` adds the featurization to a Dataset, lazily, as an actor
pool of :class:`~bertfeat.ray_actor.RayFeaturizer` sized by :func:`~bertfeat.ray_plan.plan_workers`, after checking
the parameters, the model and the columns on the driver, before any actor starts."""

from __future__ import annotations

import warnings

import pyarrow as pa

from bertfeat.engine_options import refuse_other_engines_options
from bertfeat.files import refuse_local_options
from bertfeat.inputs import column_names
from bertfeat.links import with_doc_links
from bertfeat.output import absolute_paths
from bertfeat.ray_actor import RayFeaturizer, _auto_dtype_of_a_gpu
from bertfeat.ray_plan import _cluster_nodes, check_pool, plan_workers
from bertfeat.recipe import _is_int
from bertfeat.worker_recipe import driver_recipe, fix_auto_dtype

INSTALL_HINT = "pip install 'bertfeat[ray]'"


class _Required:
    """The default of a parameter that must be given, by position or by name (``text_cols``, whose old name
    ``text_col`` is still read): shown as what it is in ``help()``."""

    def __repr__(self):
        return "<required>"


REQUIRED = _Required()


def text_columns(text_cols, params: dict, function: str) -> list:
    """The text columns of a call of ``function``: ``text_cols``, the name the Spark engine and
    :func:`bertfeat.files.embed_file` give them, or ``text_col=``, the Ray engine's old name of them, taken out of
    ``params`` and read with a FutureWarning naming the new one."""
    if "text_col" not in params:
        if text_cols is REQUIRED:
            raise TypeError(f"{function}() missing 1 required argument: 'text_cols' (the text column or columns to "
                            "embed).")
        return column_names(text_cols, "text_cols")
    old = params.pop("text_col")
    if text_cols is not REQUIRED:
        raise TypeError(f"{function}() got text_cols={text_cols!r} and text_col={old!r}, its old name: pass "
                        "text_cols= alone.")
    warnings.warn(f"text_col= is now text_cols= in {function}(), as in bertfeat.spark and bertfeat.files.embed_file; "
                  "text_col= will be removed in a future version: pass text_cols=.", FutureWarning, stacklevel=3)
    return column_names(old, "text_col")


def require_ray():
    """Import and return ``ray`` (with Ray Data), or say how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"the Ray engine needs Ray Data, which cannot be imported here ({exc}). Install it with {INSTALL_HINT} "
            "(or pip install 'ray[data]'), or use the local engine."
        ) from exc
    return ray


@with_doc_links
def embed_dataset(ds, text_cols=REQUIRED, keep_cols=(), *, num_workers=None, gpus_per_worker=0, cpus_per_worker=None,
                  batch_rows: int = 10_000, layout: str = "columns", _collector=None, **params):
    """Embed the text column(s) of a Ray Dataset: returns a Dataset of the kept columns followed by the features.

    Lazy, like every Ray Data transform: nothing runs until the result is consumed (``write_parquet``,
    ``iter_batches``, ``materialize``...). The columns, their names and types, and the schema metadata (key
    ``bertfeat``) are those of the single-machine ``bertfeat embed``. Rows keep their order only when the
    Dataset's ``DataContext`` has ``execution_options.preserve_order = True`` (on a Ray before 2.54, set it on the
    process's ``ray.data.DataContext.get_current()`` too: Rays to 2.4x write a Dataset on a copy of that one,
    docs/ray.md, "Versions").

    Where the process has no Ray yet, this starts it (``ray.init()`` with Ray's defaults, as Ray Data does when a
    Dataset first runs) and leaves it running, since the Dataset it returns runs on it later; stop it with
    ``ray.shutdown()`` when done. (:func:`embed_parquet`, which runs its job to the end, stops the Ray it started.)

    Parameters
    ----------
    ds : ray.data.Dataset
        Input with the text column(s) and any kept columns.
    text_cols : str or list of str
        Text column(s) to embed (features of each, side by side). The name :mod:`bertfeat.spark` and
        :func:`bertfeat.files.embed_file` give it; its old name here, ``text_col``, is still read, with a
        FutureWarning.
    keep_cols : str or list of str
        Columns copied through unchanged, before the features (ids, labels).
    num_workers : int, optional
        Actors in the pool, each with its own model. Default: one per ``gpus_per_worker`` GPUs in the cluster
        (counted node by node: a share cannot span two nodes), or without GPUs one per node on nodes of one size,
        and on nodes of different sizes as many as fit node by node (16 and 4 CPUs: six of 3 CPUs).
    gpus_per_worker : float, default=0
        GPUs Ray gives each actor (1 = one actor per GPU; 0 = CPU only).
    cpus_per_worker : float, optional
        CPUs Ray reserves for each actor; its torch thread count is the whole part of it (at least 1). Default: 1
        with GPUs; without, the cluster's CPUs less one per node (for reading and writing), shared among the actors,
        and no more each than lets every actor find a node with that many to spare.
    batch_rows : int, default=10000
        Rows per call of the per-batch core (the unit of deduplication and of a cache lookup).
    layout : {"columns", "list"}
        One float32 column per feature, or one ``fixed_size_list<float32>`` column per text column.
    **params
        Any :class:`~bertfeat.BertEmbedder` parameter (model, pooling, layers, cache_dir, batch_tokens, ...). With
        ``cache_dir`` every actor reads and writes that cache, so a rerun skips the texts already embedded. On a
        cluster, ``model`` and ``cache_dir`` must be paths every node can read (a shared filesystem).

    Examples
    --------
    >>> import ray, bertfeat.ray
    >>> ds = ray.data.read_parquet("reviews/")  # doctest: +SKIP
    >>> feats = bertfeat.ray.embed_dataset(ds, "review", keep_cols="id", gpus_per_worker=1)  # doctest: +SKIP
    >>> feats.write_parquet("s3://bucket/features/")  # doctest: +SKIP
    """
    from bertfeat.arrow import ArrowFeaturizer

    text_cols = text_columns(text_cols, params, "embed_dataset")
    refuse_local_options(params, "ray", reads="dataset")
    refuse_other_engines_options(params, "ray", "bertfeat.ray.embed_dataset", lazy=True)
    ray = require_ray()
    keep_cols = column_names(keep_cols, "keep_cols")
    if not _is_int(batch_rows) or batch_rows < 1:
        raise ValueError(f"batch_rows={batch_rows!r} is not valid: expected a positive number of rows.")
    check_pool(num_workers, gpus_per_worker, cpus_per_worker, params.get("device", "auto"))  # before Ray starts
    if not ray.is_initialized():  # left running: the lazy result runs on it after this returns
        ray.init()
    plan = plan_workers(*_cluster_nodes(ray), num_workers, gpus_per_worker, cpus_per_worker,
                        params.get("device", "auto"))
    from bertfeat.devices import device_type

    # dtype="auto" fixed once for the workers' device: left to each, GPUs of two kinds ran two recipes
    # (a driver without a GPU asks one GPU of the cluster, so that a cluster of T4s runs float16 as before)
    params, gpu_guess = fix_auto_dtype(params, device_type(plan.device), ask=lambda: ray.get(
        ray.remote(num_gpus=min(plan.gpus, 1.0) or 1.0, num_cpus=0)(_auto_dtype_of_a_gpu).remote()))
    # checked here, before any actor starts: the parameters, the model, the feature names against kept columns,
    # and the columns when the schema is known without running anything
    checker = ArrowFeaturizer(text_cols, keep_cols, layout=layout, **{**params, "device": "cpu"})
    schema = _known_schema(ds)
    if schema is not None:
        checker.check_schema(schema)
    actor_params = absolute_paths({**params, "device": plan.device})
    return ds.select_columns(list(dict.fromkeys(keep_cols + text_cols))).map_batches(
        RayFeaturizer,
        fn_constructor_kwargs=dict(text_cols=text_cols, keep_cols=keep_cols, layout=layout, threads=plan.threads,
                                   params=actor_params, collector=_collector, gpu_share=plan.gpus,
                                   expected=driver_recipe(checker.recipe, checker.recipe.dtype, actor_params),
                                   auto_dtype=gpu_guess),
        batch_format="pyarrow",
        batch_size=batch_rows,
        compute=ray.data.ActorPoolStrategy(size=plan.num_workers),
        num_cpus=plan.cpus,
        num_gpus=plan.gpus,
    )


def _known_schema(ds) -> pa.Schema | None:
    try:
        schema = ds.schema(fetch_if_missing=False)
    except TypeError:  # Ray versions without fetch_if_missing
        return None
    base = getattr(schema, "base_schema", schema)
    return base if isinstance(base, pa.Schema) else None

