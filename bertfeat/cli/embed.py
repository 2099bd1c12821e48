"""``bertfeat embed``: featurize a CSV/parquet file (or a directory/glob of parquet) into a parquet file."""

from __future__ import annotations

import argparse

from bertfeat.cli._options import add_recipe_options, positive_int, recipe_params

EXAMPLES = """
examples:
  bertfeat embed reviews.csv --text-col review --id-col id --out features.parquet
  bertfeat embed data/ --text-col title --text-col body --keep-col label --out f.parquet --pooling cls+mean
  bertfeat embed 'shards/*.parquet' --text-col text --out f.parquet --long-text chunk --cache-dir ~/.bertfeat

A killed run resumes where it stopped when the same command is run again; the output appears at --out only when
complete, with a provenance manifest beside it (<out>.manifest.json).
"""


def add_parser(sub) -> None:
    p = sub.add_parser(
        "embed", help="featurize a CSV/parquet file into a parquet file of embeddings",
        description=__doc__.splitlines()[0].split(": ", 1)[1], epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="INPUT", help="a CSV file, a parquet file, or a directory or glob of parquet")
    p.add_argument("--text-col", action="append", required=True, metavar="COL",
                   help="text column to embed (repeat for several)")
    p.add_argument("--out", required=True, metavar="PATH", help="output parquet file")
    keep = p.add_mutually_exclusive_group()
    keep.add_argument("--id-col", metavar="COL", help="an id column to copy into the output")
    keep.add_argument("--keep-col", action="append", default=[], metavar="COL",
                      help="a column to copy into the output (repeat for several)")
    add_recipe_options(p)
    o = p.add_argument_group("output")
    o.add_argument("--layout", choices=("columns", "list"), default="columns",
                   help="one float32 column per dimension, or one fixed-size-list column per text column")
    o.add_argument("--chunk-rows", type=positive_int, default=10_000,
                   help="rows per chunk (memory bound, resume unit and output row group)")
    o.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    o.add_argument("--quiet", action="store_true", help="no progress and no summary")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bertfeat.cli import UsageError
    from bertfeat.files import embed_file

    keep = [args.id_col] if args.id_col else list(args.keep_col)
    if len(set(args.text_col)) != len(args.text_col):
        raise UsageError(f"--text-col names a column twice: {args.text_col}.")
    if len(set(keep)) != len(keep):
        raise UsageError(f"--keep-col names a column twice: {keep}.")
    embed_file(
        args.input, args.out, args.text_col, keep_cols=keep, layout=args.layout, overwrite=args.overwrite,
        chunk_rows=args.chunk_rows, quiet=args.quiet, **recipe_params(args),
    )
    return 0
