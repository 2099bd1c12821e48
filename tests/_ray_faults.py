"""A Ray worker that dies once, the way a preempted node or an OOM-killed process does, after finishing a batch and
before handing it back: Ray restarts it and retries that batch. Imported by the Ray workers (tests/test_ray.py)."""

import os
from pathlib import Path

from bertfeat.ray import RayFeaturizer


class DiesOnceAfterItsSecondBatch(RayFeaturizer):
    def __init__(self, *args, params, **kwargs):
        super().__init__(*args, params=params, **kwargs)
        # the job's run-private cache is <out>.partial/cache: the marker goes beside <out>, so the test can see it
        self.marker = Path(params["cache_dir"]).parent.parent / "a-worker-died-here"
        self.calls = 0

    def __call__(self, table):
        out = super().__call__(table)  # embedded, counted and cached: everything but handed back
        self.calls += 1
        if self.calls == 2 and not self.marker.exists():
            self.marker.write_text(str(os.getpid()))
            os._exit(1)
        return out
