"""The ``bertfeat`` command line: one module per command, each a thin layer over the public API.

Each command module defines ``add_parser(subparsers)`` (its options and ``--help`` text with examples) and
``run(args) -> int``. User mistakes raise :class:`UsageError` (or a ValueError/TypeError/FileNotFoundError from the
API) and become a one-line message and exit code 2, never a traceback (set BERTFEAT_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# command name -> module under bertfeat.cli that defines add_parser() and run()
COMMANDS: dict[str, str] = {"embed": "embed", "info": "info", "cache": "cache", "probe": "probe"}


class UsageError(Exception):
    """A mistake in how the command was called: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    from bertfeat import __version__

    parser = argparse.ArgumentParser(
        prog="bertfeat",
        description="Frozen BERT-family text embeddings as features for statistical models.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"bertfeat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in COMMANDS.items():
        importlib.import_module(f"bertfeat.cli.{module}").add_parser(sub)
    return parser


def _one_line_warnings(command: str) -> None:
    """bertfeat's own warnings (truncation, a dtype slower than float32 here, cache trouble) as one stderr line each,
    not Python's two-line ``file:line: Category: message`` + source form."""
    import warnings

    plain = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__module__.startswith("bertfeat"):
            print(f"bertfeat {command}: warning: {message}", file=file or sys.stderr)
        else:
            plain(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _one_line_warnings(args.command)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"bertfeat {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, FileNotFoundError, FileExistsError, PermissionError) as exc:
        if os.environ.get("BERTFEAT_DEBUG"):
            raise
        print(f"bertfeat {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bertfeat {args.command}: interrupted", file=sys.stderr)
        return 130
