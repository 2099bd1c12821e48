"""The Ray Data runner: the per-batch core on a pool of actors, one model per actor, over a cluster's CPUs or GPUs.

:func:`embed_dataset` adds the featurization to a Ray Dataset (lazily, like any Ray Data transform);
:func:`embed_parquet` runs a whole job, parquet in and a directory of parquet out, with the same schema, metadata
and manifest as the single-machine ``bertfeat embed``. Each actor holds one :class:`~bertfeat.arrow.ArrowFeaturizer`
(so one model load), sets its torch thread count from its CPU allotment, and reads and writes the shared cache, so
a rerun or a resumed job embeds only the texts no earlier run finished. See docs/ray.md.

This module is the Ray engine's public face; the engine lives in five modules of one idea each:
:mod:`bertfeat.ray_plan` (how many workers, and what each gets), :mod:`bertfeat.ray_actor` (what each actor holds,
and the job's counting actor), :mod:`bertfeat.ray_dataset` (:func:`embed_dataset`), :mod:`bertfeat.ray_files`
(:func:`embed_parquet`'s job, its ordered sink and the counts of what was written) and :mod:`bertfeat.ray_session`
(the Ray a job starts and the process settings it puts back). They are the only modules that import Ray, and only
when one of their functions is called: ``import bertfeat`` never does.
"""

from bertfeat.links import link_docs
from bertfeat.ray_actor import STATS_COL, JobCounts, RayFeaturizer  # noqa: F401 (re-exported)
from bertfeat.ray_dataset import INSTALL_HINT, embed_dataset, require_ray  # noqa: F401 (re-exported)
from bertfeat.ray_files import embed_parquet  # noqa: F401 (re-exported)
from bertfeat.ray_plan import FILLED, WorkerPlan, plan_workers, worker_device  # noqa: F401 (re-exported)
from bertfeat.ray_session import RUNS_ON_ITS_OWN_CONTEXT  # noqa: F401 (re-exported)

__doc__ = link_docs(__doc__)  # its docs as addresses: an installed bertfeat has no docs/ folder

__all__ = ["embed_dataset", "embed_parquet", "require_ray", "plan_workers", "worker_device", "WorkerPlan",
           "RayFeaturizer", "JobCounts", "STATS_COL", "INSTALL_HINT", "FILLED", "RUNS_ON_ITS_OWN_CONTEXT"]
