"""``bertfeat embed``: featurize a CSV/parquet file (or a directory/glob of parquet) into a parquet file (DESCRIPTION).

``--engine ray`` runs the same per-batch core on a Ray cluster (bertfeat.ray) and writes a directory of parquet;
``--engine spark`` does the same on Spark (bertfeat.spark).
"""

from __future__ import annotations

import argparse

from bertfeat.cli._options import add_recipe_options, positive_int, recipe_params
from bertfeat.engine_options import what_engine_takes
from bertfeat.escapes import QUOTINGS
from bertfeat.links import docs_url

# --help's description: not read from the docstring, which python -OO (PYTHONOPTIMIZE=2) strips
DESCRIPTION = "featurize a CSV/parquet file (or a directory/glob of parquet) into a parquet file."

ENGINES = ("local", "ray", "spark")
RAY_FLAGS = ("num_workers", "gpus_per_worker", "cpus_per_worker")

EXAMPLES = f"""
examples:
  bertfeat embed reviews.csv --text-col review --id-col id --out features.parquet
  bertfeat embed data/ --text-col title --text-col body --keep-col label --out f.parquet --pooling cls+mean
  bertfeat embed 'shards/*.parquet' --text-col text --out f.parquet --long-text chunk --cache-dir ~/.bertfeat
  bertfeat embed 'shards/*.parquet' --text-col text --id-col id --out features/ --engine ray --gpus-per-worker 1
  bertfeat embed reviews.csv --text-col review --id-col id --out features/ --engine spark --master 'local[4]'

A killed run resumes where it stopped when the same command is run again; the output appears at --out only when
complete, with a provenance manifest beside it (<out>.manifest.json).

--engine ray runs on the Ray cluster this machine belongs to (RAY_ADDRESS, or the one `ray start` made here; else
a local one on this machine's cores), reads parquet only, and writes --out as a directory of parquet files with the
same columns and metadata. See {docs_url("ray.md")}

--engine spark runs on Spark (--master URL, or the Spark Connect server SPARK_REMOTE names, or spark-submit's
master, or local[*]), reads CSV or parquet, and writes --out as a directory of parquet files with the same columns
and metadata. See {docs_url("spark.md")}
"""


def add_parser(sub) -> None:
    p = sub.add_parser(
        "embed", help="featurize a CSV/parquet file into a parquet file of embeddings",
        description=DESCRIPTION, epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="INPUT", help="a CSV file, a parquet file, or a directory or glob of parquet")
    p.add_argument("--text-col", action="append", required=True, metavar="COL",
                   help="text column to embed (repeat for several)")
    p.add_argument("--out", required=True, metavar="PATH",
                   help="output parquet file (with --engine ray or spark: a directory of parquet files)")
    keep = p.add_mutually_exclusive_group()
    keep.add_argument("--id-col", metavar="COL", help="an id column to copy into the output",
                      twice=", and it takes one column: to keep several, pass --keep-col for each")
    keep.add_argument("--keep-col", action="append", default=[], metavar="COL",
                      help="a column to copy into the output (repeat for several)")
    c = p.add_argument_group("CSV input")
    c.add_argument("--delimiter", default=None, metavar="CHAR",
                   help="field delimiter (default: tab for .tsv, else comma); 'tab' or '\\t' for a tab")
    c.add_argument("--quoting", choices=QUOTINGS, default=None,
                   help="how values are quoted: csv (\" quotes a value; the default), none (no quoting: \" is a plain "
                        "character), backslash (no quoting; \\t, \\n, \\\\ escapes and \\N missing, as PostgreSQL's "
                        "\\copy ... TO, MySQL's INTO OUTFILE and mysql --batch write), csv-backslash (\" quotes a "
                        "value and \\\" in it is a quote, \\\\ a backslash, \\N missing, as MySQL's INTO OUTFILE ... "
                        "ENCLOSED BY '\"' and pandas' to_csv and Python's csv module with an escapechar write)")
    c.add_argument("--infer-types", action="store_true",
                   help="read kept columns as numbers, booleans, ... where they look like it (default: as written, "
                        "as text, so an id 007 stays 007)")
    add_recipe_options(p)
    o = p.add_argument_group("output")
    o.add_argument("--layout", choices=("columns", "list"), default="columns",
                   help="one float32 column per dimension, or one fixed-size-list column per text column "
                        "(default: columns)")
    o.add_argument("--chunk-rows", type=positive_int, default=10_000,
                   help="rows per chunk (default 10,000; memory bound, resume unit and output row group; with "
                        "--engine ray or spark, rows per batch sent to a worker)")
    o.add_argument("--chunk-chars", type=positive_int, default=None, metavar="N",
                   help="text characters per chunk at most (default 1,000,000): bounds its memory whatever the text "
                        "lengths (local engine only)")
    o.add_argument("--checkpoint-every", type=non_negative_float, default=None, metavar="SECONDS",
                   help="save the running chunk's finished batches this often (default 30): about the most work a "
                        "kill can lose; the output does not depend on it (local engine only)")
    o.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    o.add_argument("--quiet", action="store_true", help="no progress and no summary")
    e = p.add_argument_group("engine")
    e.add_argument("--engine", choices=ENGINES, default="local",
                   help="local (the default): this process; ray: a pool of Ray workers across a cluster (needs "
                        "bertfeat[ray]); spark: Spark tasks on a Spark cluster (needs bertfeat[spark] and Java)")
    e.add_argument("--master", default=None, metavar="URL",
                   help="Spark master with --engine spark: local[N], spark://host:7077, yarn, k8s://..., or a Spark "
                        "Connect server, sc://host:15002 (no Java needed here) (default: SPARK_REMOTE's server, else "
                        "the one spark-submit was given, else local[*])")
    e.add_argument("--num-workers", type=positive_int, default=None, metavar="N",
                   help="Ray workers, each holding one model (default: one per GPU; without GPUs one per node, or "
                        "on nodes of different sizes as many as fit each node)")
    e.add_argument("--gpus-per-worker", type=non_negative_float, default=None, metavar="G",
                   help="GPUs per Ray worker (1 = one worker per GPU; default 0 = CPU workers)")
    e.add_argument("--cpus-per-worker", type=positive_float, default=None, metavar="C",
                   help="CPUs per Ray worker, and its torch threads (default: 1 with GPUs; else the cluster's CPUs "
                        "less one per node, shared among the workers)")
    p.set_defaults(func=run)


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from bertfeat.cli import UsageError
    from bertfeat.files import embed_file, resolve_input
    from bertfeat.sources import FILE_OUTPUT, FOLDER_OUTPUT, output_path

    try:  # the engines refuse the same, naming their argument `out`
        local = args.engine == "local"
        output_path(args.out, "out=", "a path", FILE_OUTPUT if local else FOLDER_OUTPUT, one_file=local)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    keep = [args.id_col] if args.id_col is not None else list(args.keep_col)  # '' is a name (pandas' index)
    if len(set(args.text_col)) != len(args.text_col):
        raise UsageError(f"text_col= names a column twice: {args.text_col}.")
    if len(set(keep)) != len(keep):
        raise UsageError(f"{'id_col' if args.id_col is not None else 'keep_col'}= names a column twice: {keep}.")
    params = recipe_params(args)
    # (the refusals name options as the API does, name=value: the command line says them in its flags, R in R's)
    local_only = [name for name in ("chunk_chars", "checkpoint_every") if getattr(args, name) is not None]
    if args.engine in ("ray", "spark") and local_only:
        raise UsageError(f"{local_only[0]}= applies to the local engine only (engine={args.engine!r} reads its input "
                         f"in batches of chunk_rows= rows); drop {local_only[0]}=.")
    # the local and Spark engines read a CSV with the same reader (Spark's is staged through it); Ray reads parquet
    csv_options = {"delimiter": args.delimiter is not None, "infer_types": args.infer_types,
                   "quoting": args.quoting is not None}
    given = [name for name, on in csv_options.items() if on]
    if given and resolve_input(args.input)[0] != "csv":
        raise UsageError(f"{given[0]}= applies to CSV input only, and {args.input!r} is parquet; drop {given[0]}=.")
    # where the other cluster engine is given, "add engine='spark'" would say to switch: say what that one takes
    if args.master is not None and args.engine == "ray":
        raise UsageError("master= applies to engine='spark' only, not engine='ray' "
                         f"({what_engine_takes('master', 'ray')}); drop master=.")
    if args.master is not None and args.engine != "spark":
        raise UsageError("master= applies to engine='spark' only; add engine='spark' or drop master=.")
    if args.engine == "ray":
        return _run_ray(args, keep, params)
    given = [name for name in RAY_FLAGS if getattr(args, name) is not None]
    if given and args.engine == "spark":
        raise UsageError(f"{given[0]}= applies to engine='ray' only, not engine='spark' "
                         f"({what_engine_takes(given[0], 'spark')}); drop {given[0]}=.")
    if given:
        raise UsageError(f"{given[0]}= applies to engine='ray' only; add engine='ray' or drop {given[0]}=.")
    if args.engine == "spark":
        return _run_spark(args, keep, params)
    extra = {} if args.chunk_chars is None else {"chunk_chars": args.chunk_chars}
    if args.checkpoint_every is not None:
        extra["checkpoint_seconds"] = args.checkpoint_every
    embed_file(
        args.input, args.out, args.text_col, keep_cols=keep, layout=args.layout, overwrite=args.overwrite,
        chunk_rows=args.chunk_rows, quiet=args.quiet, delimiter=_delimiter(args.delimiter),
        infer_types=args.infer_types, quoting=args.quoting, **extra, **params,
    )
    return 0


def _delimiter(text):
    return "\t" if text in ("tab", "\\t") else text


def _run_ray(args: argparse.Namespace, keep: list, params: dict) -> int:
    from bertfeat.cli import UsageError
    from bertfeat.files import resolve_input

    kind, _ = resolve_input(args.input)
    if kind != "parquet":
        raise UsageError(f"engine='ray' reads parquet input only, and {args.input!r} is CSV; convert it to parquet "
                         "first, or drop engine='ray'.")
    from bertfeat.ray import embed_parquet, require_ray, worker_device

    gpus = args.gpus_per_worker or 0
    try:
        worker_device(params["device"], gpus)
        require_ray()
    except (ValueError, ImportError) as exc:
        raise UsageError(str(exc)) from None
    embed_parquet(
        args.input, args.out, args.text_col, keep_cols=keep, layout=args.layout, overwrite=args.overwrite,
        batch_rows=args.chunk_rows, quiet=args.quiet, num_workers=args.num_workers, gpus_per_worker=gpus,
        cpus_per_worker=args.cpus_per_worker, **params,
    )
    return 0


# pyspark's notice, at its import and at each pandas UDF, that it does not fully support the installed pandas (3.x): a
# notice about versions that bertfeat's Spark path is tested with, not about the job, which --quiet leaves out
PANDAS_NOTICE = r"PySpark does not yet fully support pandas"


def _run_spark(args: argparse.Namespace, keep: list, params: dict) -> int:
    import warnings

    from bertfeat.cli import UsageError
    from bertfeat.spark import embed_files, require_spark
    from bertfeat.spark_session import connect_url, require_java, running_session

    # the command owns its process, so it may filter the process's warnings; bertfeat.spark.embed_files, a library
    # call, leaves them as they are (catch_warnings puts back the whole list, another thread's changes too)
    with warnings.catch_warnings():
        if args.quiet:  # pyspark's import (require_spark) says it once, the job's pandas UDF again
            warnings.filterwarnings("ignore", message=PANDAS_NOTICE, category=FutureWarning)
        try:
            require_spark()
            if running_session() is None and connect_url(args.master) is None:  # a Connect server needs none here
                require_java()
        except (ImportError, RuntimeError) as exc:
            raise UsageError(str(exc)) from None
        embed_files(
            args.input, args.out, args.text_col, keep_cols=keep, layout=args.layout, overwrite=args.overwrite,
            batch_rows=args.chunk_rows, master=args.master, quiet=args.quiet, delimiter=_delimiter(args.delimiter),
            infer_types=args.infer_types, quoting=args.quoting, **params,
        )
    return 0
