"""``bertfeat probe``: score every pooling x layer choice, alone and beside TF-IDF, on a labelled file and recommend
the features, printed as Python code (DESCRIPTION)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from bertfeat.cli._options import HELP, add_prefix_options, non_negative_int, positive_int, prefix_params, seed
from bertfeat.escapes import QUOTINGS
from bertfeat.recipe import DTYPES, LONG_TEXT_MODES

# --help's description: not read from the docstring, which python -OO (PYTHONOPTIMIZE=2) strips
# (shown as written: the raw layout keeps the examples' lines)
DESCRIPTION = ("score every pooling x layer choice, alone and beside TF-IDF, on a labelled file and recommend the\n"
               "features, printed as Python code.")

EXAMPLES = """
examples:
  bertfeat probe reviews.csv --text-col review --label-col stars --plot probe.png
  bertfeat probe data.parquet --text-col text --label-col y --task regression --cv 10 --json probe.json
  bertfeat probe reviews.csv --text-col review --label-col stars --model default --model ./e5-small \\
      --prompt-name query --cache-dir ~/.cache/bertfeat
"""


def add_parser(sub) -> None:
    p = sub.add_parser("probe", help="choose pooling and layers by cross-validated evidence",
                       description=DESCRIPTION, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", metavar="INPUT", help="a CSV file, a parquet file, or a directory or glob of parquet")
    p.add_argument("--text-col", required=True, metavar="COL", help="the text column",
                   twice=", and the probe scores one text column: run it once for each")
    p.add_argument("--label-col", required=True, metavar="COL", help="classes (logistic) or numbers (ridge)")
    p.add_argument("--group-col", default=None, metavar="COL",
                   help="the group of each text (a customer, a book, a patient): each group's texts fall in one fold, "
                        "so no model is scored on a group it was trained on (default: none; copies of a text are "
                        "kept together always)")
    p.add_argument("--delimiter", default=None, metavar="CHAR",
                   help="a CSV's field delimiter (default: tab for .tsv, else comma); 'tab' or '\\t' for a tab")
    p.add_argument("--quoting", choices=QUOTINGS, default=None,
                   help="how a CSV's values are quoted: csv (\" quotes a value; the default), none (no quoting), "
                        "backslash (no quoting; backslash escapes and \\N missing, as PostgreSQL's \\copy ... TO and "
                        "mysql --batch write), csv-backslash (\" quotes a value, backslash escapes and \\N missing, as "
                        "MySQL's INTO OUTFILE ... ENCLOSED BY '\"' and pandas' to_csv and Python's csv module with an "
                        "escapechar write)")
    p.add_argument("--model", action="append", default=None, metavar="MODEL",
                   help="'default', a Hugging Face name or a local directory; repeat to compare models in one table "
                        "(default: 'default', the bundled model)")
    p.add_argument("--task", choices=("auto", "classification", "regression"), default="auto",
                   help="auto: regression for float labels with more than 10 distinct values, else classification "
                        "(default: auto)")
    p.add_argument("--cv", type=positive_int, default=5, help="cross-validation folds (default: 5)")
    p.add_argument("--random-state", type=seed, default=0, metavar="SEED",
                   help="seed of the folds' shuffle: the same seed gives the same folds and scores (default: 0)")
    p.add_argument("--max-length", type=positive_int, default=None, help=HELP["max_length"])
    p.add_argument("--long-text", choices=LONG_TEXT_MODES, default="truncate", help=HELP["long_text"])
    p.add_argument("--normalize", action="store_true", help=HELP["normalize"])
    add_prefix_options(p)
    p.add_argument("--missing", choices=("error", "zero"), default="error",
                   help="what a missing or blank text gets: an error naming the row, or a zero vector and an empty "
                   "TF-IDF document (default: error)")
    p.add_argument("--device", default="auto", help=HELP["device"])
    p.add_argument("--dtype", choices=DTYPES, default="auto", help=HELP["dtype"])
    p.add_argument("--cache-dir", default=None, help=HELP["cache_dir"])
    p.add_argument("--no-baseline", action="store_true", help="skip the TF-IDF baseline row")
    p.add_argument("--unions", type=non_negative_int, default=3, metavar="K",
                   help="score each model's K best candidates side by side with TF-IDF (default 3; 0 for none)")
    p.add_argument("--plot", metavar="PNG", help="save the score-by-layer plot here")
    p.add_argument("--json", metavar="PATH", help="save the full table and recommendation as JSON, with what the "
                   "scores were measured with: the folds (number, seed, groups), the linear models' and the TF-IDF's "
                   "settings, and the chance score")
    p.add_argument("--top", type=positive_int, default=15, help="rows of the table to print (default: 15)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bertfeat.cli import UsageError
    from bertfeat.cli.embed import _delimiter
    from bertfeat.files import InputReader, resolve_input
    from bertfeat.output import own_files
    from bertfeat.probe import _check_writable, chance_lines, probe

    for name in ("json", "plot"):  # --json=~/p.json: a ~ the shell leaves as written is the home folder, as in INPUT
        if getattr(args, name):
            setattr(args, name, os.path.expanduser(getattr(args, name)))
    if args.json:  # written after the work: refused before it
        _check_writable(args.json, f"--json {args.json!r}")
    if args.plot:  # probe() refuses it too, once the input is read
        _check_writable(args.plot, f"--plot {args.plot!r}", plot=True)
    if args.json and args.plot and _one_file(args.json, args.plot):  # the JSON, written last, replaced the plot
        raise UsageError(f"--json {args.json!r} and --plot {args.plot!r} name one file; write the JSON and the plot "
                         "to two files.")

    is_csv = resolve_input(args.input)[0] == "csv"
    given = [name for name in ("delimiter", "quoting") if getattr(args, name) is not None]
    if given and not is_csv:
        raise UsageError(f"{given[0]}= applies to CSV input only, and {args.input!r} is parquet; drop {given[0]}=.")
    columns = list(dict.fromkeys([args.text_col, args.label_col] + ([args.group_col] if args.group_col else [])))
    reader = InputReader(args.input, columns, 100_000, [args.text_col],  # a --cache-dir in the input folder left out
                         delimiter=_delimiter(args.delimiter), quoting=args.quoting,
                         exclude=own_files(None, {"cache_dir": args.cache_dir}))
    if args.json:
        _not_an_input(args.json, reader.files)
    import pyarrow as pa

    table = pa.Table.from_batches(list(reader.batches()), schema=reader.schema)
    if table.num_rows == 0:
        raise ValueError(f"input {args.input!r} has no rows.")
    labels = table.column(args.label_col)
    if is_csv:
        labels = _as_numbers(labels)
    if pa.types.is_decimal(labels.type):  # a database's prices: numbers, not Decimal objects read as classes
        labels = labels.cast(pa.float64())
    result = probe(
        table.column(args.text_col).to_pylist(), labels.to_numpy(zero_copy_only=False),
        model=args.model or ["default"], task=args.task, cv=args.cv, random_state=args.random_state,
        groups=None if args.group_col is None else table.column(args.group_col).to_pylist(),
        max_length=args.max_length,
        long_text=args.long_text, normalize=args.normalize, unions=args.unions, **prefix_params(args),
        missing=args.missing, device=args.device, dtype=args.dtype,
        cache_dir=args.cache_dir, baseline=not args.no_baseline, plot=args.plot,
    )
    t = result.table
    embed = ", ".join(f"{name} {info['embed_seconds']:.0f} s ({info['embed_s_per_1k']:.2f} s per 1,000 texts)"
                      for name, info in result.models.items())
    grouped = (f" in {result.folds['n_groups']} groups of {args.group_col}, each in one fold" + (
        f", joined into {result.folds['n_fold_groups']} by copies of a text"
        if result.folds["n_fold_groups"] != result.folds["n_groups"] else "") if args.group_col else "")
    print(f"bertfeat probe: {table.num_rows} texts{grouped}, {result.task}, {args.cv}-fold cross-validated "
          f"{result.metric} (embedding: {embed}; fits {result.seconds['fits']:.0f} s)")
    cols = ["rank"] + (["model"] if len(result.models) > 1 else []) + ["kind", "candidate", "n_features", "score",
                                                                        "std_err"]
    print(t[cols].head(args.top).to_string(index=False, float_format="%.4f"))
    if result.baseline:
        print(f"{result.baseline['name']}: {result.baseline['score']:.4f} +/- {result.baseline['std_err']:.4f}")
    for line in chance_lines(result):  # what a score must beat to mean anything: 0.60 accuracy on 60% majority
        print(line)
    rec = t[t["rank"] == result.recommended_rank].iloc[0]
    print(f"recommended: rank {rec['rank']}, {rec['kind']}: {rec['candidate']} (the fewest features within one "
          "standard error of the best); as Python code:\n")
    print(result.code())
    if args.plot:
        print(f"plot: {args.plot}")
    if args.json:
        # the table's empty cells (a TF-IDF row's model, a union's layer) as null: NaN is no JSON; layers as ints
        whole = {c: "Int64" for c in ("layer", "n_layers") if c in t.columns}
        records = (t.drop(columns=["params"]).assign(params=t["params"].map(json.dumps))
                   .astype(whole).astype(object))
        records = records.where(records.notna(), None).to_dict(orient="records")
        from bertfeat.union import TFIDF_PARAMS

        # what the scores were measured with, so that they can be measured again: the folds (their seed; copies of a
        # text and the groups of --group-col kept together), the linear models' settings and the TF-IDF's
        folds = {**result.folds, "group_col": args.group_col}
        report = json.dumps({"task": result.task, "metric": result.metric, "folds": folds,
                             "linear_model": result.classifier_params, "tfidf": TFIDF_PARAMS,
                             "recommended": result.recommended, "recommended_kind": result.recommended_kind,
                             "code": result.code(), "missing": result.missing, "models": result.models,
                             "best": result.best, "baseline": result.baseline, "chance": result.chance,
                             "left_out": result.left_out, "seconds": result.seconds, "table": records},
                            indent=2, default=str)
        _write_json(args.json, report)
    return 0


def _write_json(path: str, report: str) -> None:
    """Put the JSON at ``path`` whole or not at all (a stop midway, Ctrl-C or a full disk, left half a JSON that a
    script then parsed), through a link (the file it points to replaced, the link kept); what is no plain file (a
    named pipe, ``/dev/null``) is written to as a stream: a rename would replace it; standard output's own file
    (``/dev/stdout``, into a file, a pipe or a terminal) through standard output, after the table."""
    from bertfeat.flush import atomic_write_bytes

    if _standard_output(path):  # /dev/stdout > report.txt: renamed over, the shell's file (and the table) was lost
        sys.stdout.write(report)
        sys.stdout.flush()
        return
    target = os.path.realpath(path)
    if os.path.exists(path) and (not os.path.isfile(path) or not os.access(os.path.dirname(target), os.W_OK)):
        with open(path, "w") as fh:  # (a file of one's own in a folder one cannot write: written in place too)
            fh.write(report)
    else:
        atomic_write_bytes(target, report.encode(), keep_mode=True)  # as open(path, "w") kept it


def _standard_output(path: str) -> bool:
    """Whether ``path`` is the file standard output writes to (``/dev/stdout``, ``/dev/fd/1``, or a name of that file):
    written there after the table, not put in place by a rename."""
    try:
        here, there = os.fstat(sys.stdout.fileno()), os.stat(path)
    except (AttributeError, OSError, ValueError):  # no standard output (closed), or not a file's (a test's capture)
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _one_file(one: str, other: str) -> bool:
    """Whether two output paths name one file: by name, or by the file it is (a link, another case where the file
    system ignores it)."""
    from pathlib import Path

    from bertfeat.sources import SameFiles, absolute

    return SameFiles()(Path(absolute(one)).resolve(), Path(absolute(other)).resolve())


def _not_an_input(path: str, files) -> None:
    """Refuse a ``--json`` that is a file of the input (``--json data.csv``, a completion of the wrong name), by name
    or by the file it is (a link, another case where the file system ignores it): the JSON, written after the work,
    replaced the labelled data."""
    from pathlib import Path

    from bertfeat.cli import UsageError
    from bertfeat.sources import SameFiles, absolute

    same, target = SameFiles(), Path(absolute(path)).resolve()
    for f in files:
        if same(Path(f).resolve(), target):
            raise UsageError(f"--json {path!r} is the input file {str(f)!r}; write the JSON to another file.")


def _as_numbers(labels):
    """A CSV's labels, read as written, as numbers where every one is a number (a regression task needs them): whole
    numbers as int64, else float64; else as written (classes). Every value counts, not the first block's, as
    --infer-types would guess from it: a column of whole numbers there and 'unknown' or 2.5 further on failed.
    A number is read as pandas.read_csv and R's read.csv read it: spaces around it (a file written "text, label")
    and a plus sign before it are no part of it; arrow's cast took " 0.5" for text (a class) and "+3" for a decimal."""
    import pyarrow as pa
    import pyarrow.compute as pc

    bare = pc.replace_substring_regex(pc.utf8_trim_whitespace(labels), r"^\+([0-9.])", r"\1")
    for to in (pa.int64(), pa.float64()):
        try:
            return bare.cast(to)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return labels
