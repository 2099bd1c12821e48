"""Options shared by several commands, defined once: the embedding recipe and the run settings."""

from __future__ import annotations

import argparse

from bertfeat.recipe import DTYPES, LAYER_AGGS, LONG_TEXT_MODES, MISSING_POLICIES, POOLINGS


def int_list(text: str):
    """``"-1"`` -> -1; ``"-4,-3,-2,-1"`` -> [-4, -3, -2, -1]."""
    try:
        values = [int(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int or comma-separated ints such as -4,-3,-2,-1, got {text!r}")
    if not values:
        raise argparse.ArgumentTypeError("expected at least one layer index")
    return values[0] if len(values) == 1 and "," not in text else values


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def seed(text: str) -> int:
    """A shuffle seed as numpy takes one, 0 to 2**32 - 1: refused here, as the option it is, rather than by the API
    in its own words (``random_state=``) once the input is read."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to {2**32 - 1} (2**32 - 1), got {text!r}")
    return value


# the help of the options that embed and probe share, so that the two say the same
HELP = {
    "model": "'default' (the default: the bundled all-MiniLM-L6-v2), a Hugging Face name, or a local directory",
    "layer_agg": "several --layers averaged (mean) or side by side (concat) (default: mean)",
    "max_length": "tokens per window (default: model limit)",
    "long_text": "a text longer than --max-length: truncated (with a count) or embedded in overlapping windows whose "
                 "vectors are averaged (chunk) (default: truncate)",
    "normalize": "L2-normalize each pooled block",
    "device": "auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps (default: auto)",
    "dtype": "auto (the default): bfloat16 on a GPU that runs it natively, float16 on one that emulates it (T4, "
             "V100) and on an Apple GPU (float32 where its torch has no autocast there (before 2.5)), float32 on a "
             "CPU; a reduced precision slower than "
             "float32 on this CPU is warned about, with the measured rates (`bertfeat info` shows them), never "
             "switched",
    "cache_dir": "persistent embedding cache shared with Python and R",
}


def add_recipe_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("embedding recipe (as in BertEmbedder)")
    g.add_argument("--model", default="default", help=HELP["model"],
                   twice=", and a job embeds with one model: `bertfeat probe` compares models, --model repeated")
    g.add_argument("--pooling", default="cls+mean",
                   help=f"{', '.join(POOLINGS)} or a combination like cls+mean (default: cls+mean)",
                   twice=": several poolings are one value, --pooling cls+mean")
    g.add_argument("--layers", type=int_list, default=None, metavar="L[,L...]",
                   twice=": several layers are one value, --layers=-2,-1",
                   help="layer index or comma list; 0 = embeddings, -1 = last (write --layers=-1 or "
                        "--layers=-2,-1); default: the last four layers (all of a model with fewer)")
    g.add_argument("--layer-agg", choices=LAYER_AGGS, default="mean", help=HELP["layer_agg"])
    g.add_argument("--max-length", type=positive_int, default=None, help=HELP["max_length"])
    g.add_argument("--long-text", choices=LONG_TEXT_MODES, default="truncate", help=HELP["long_text"])
    g.add_argument("--stride", type=int, default=None,
                   help="tokens shared by windows (with --long-text chunk; default: a quarter of the window)")
    g.add_argument("--normalize", action="store_true", help=HELP["normalize"])
    add_prefix_options(g)
    g.add_argument("--missing", choices=MISSING_POLICIES, default="error",
                   help="what a missing or blank text gets: an error, a zero vector, or NaN (default: error)")
    r = parser.add_argument_group("run settings")
    r.add_argument("--device", default="auto", help=HELP["device"])
    r.add_argument("--dtype", choices=DTYPES, default="auto", help=HELP["dtype"])
    r.add_argument("--batch-tokens", type=positive_int, default=None,
                   help="token budget of one forward pass (default: chosen for the device)")
    r.add_argument("--cache-dir", default=None, help=HELP["cache_dir"])


def add_prefix_options(group) -> None:
    group.add_argument("--prefix", default=None, metavar="TEXT",
                       help="text put before every text, such as 'query: ' (its tokens count toward --max-length)")
    group.add_argument("--prompt-name", default=None, metavar="NAME",
                       help="a prompt from the model's sentence-transformers config, used as --prefix "
                            "(`bertfeat info MODEL` lists them)")


def prefix_params(args: argparse.Namespace) -> dict:
    from bertfeat.cli import UsageError

    if args.prefix and args.prompt_name:
        raise UsageError("prefix= and prompt_name= both set the text put before each text; pass only one.")
    return dict(prefix=args.prefix, prompt_name=args.prompt_name)


def recipe_params(args: argparse.Namespace) -> dict:
    """BertEmbedder keyword arguments from the parsed options; rejects combinations that make no sense."""
    from bertfeat.cli import UsageError

    if args.stride is not None and args.long_text != "chunk":
        raise UsageError("stride= applies to long_text='chunk' only; drop stride= or add long_text='chunk'.")
    return dict(
        model=args.model, pooling=args.pooling, layers=args.layers, layer_agg=args.layer_agg,
        max_length=args.max_length, long_text=args.long_text, stride=args.stride, normalize=args.normalize,
        missing=args.missing, device=args.device, dtype=args.dtype, batch_tokens=args.batch_tokens,
        cache_dir=args.cache_dir, **prefix_params(args),
    )
