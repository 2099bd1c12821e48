"""``bertfeat cache info|compact|clear DIR``: look after an embedding cache directory (see docs/cache.md)."""

from __future__ import annotations

import argparse
import json
import shlex

from bertfeat.cli import UsageError

EXAMPLES = """\
examples:
  bertfeat cache info ~/.cache/bertfeat             recipes, rows and bytes per namespace
  bertfeat cache info ~/.cache/bertfeat --json      the same, as JSON
  bertfeat cache compact ~/.cache/bertfeat          merge shards, drop duplicates and corrupt shards
  bertfeat cache clear ~/.cache/bertfeat --yes      delete every cached vector
  bertfeat cache clear ~/.cache/bertfeat --namespace 3f2a9c1e   delete one recipe's vectors

DIR is the cache_dir given to BertEmbedder (or to bf_embed() in R). compact and clear are safe while other jobs
use the cache: they read and write whole shards only, and hold a lock for a moment.
"""


# Past this many shards `cache info` advises compacting: each job, chunk or batch that stores adds one, and a lookup
# spread over 2,000 small shards took 1.5 s where the compacted namespace answered in 13 ms (docs/cache.md).
MANY_SHARDS = 100


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "cache",
        help="show, compact or clear an embedding cache directory",
        description="Show, compact or clear a bertfeat embedding cache directory.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", help="what to do with the cache")
    actions.required = True
    info = actions.add_parser("info", help="recipes, rows and bytes per namespace", epilog=EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    info.add_argument("dir", metavar="DIR", help="the cache directory")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    compact = actions.add_parser("compact", help="merge each namespace's shards into one", epilog=EXAMPLES,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    compact.add_argument("dir", metavar="DIR", help="the cache directory")
    compact.add_argument("--namespace", metavar="FINGERPRINT",
                         help="compact only this recipe (a unique prefix of 6+ characters will do)")
    clear = actions.add_parser("clear", help="delete cached vectors (all, or one namespace)", epilog=EXAMPLES,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    clear.add_argument("dir", metavar="DIR", help="the cache directory")
    clear.add_argument("--namespace", metavar="FINGERPRINT",
                       help="delete only this recipe (a unique prefix of 6+ characters will do)")
    clear.add_argument("--yes", action="store_true", help="confirm deleting every namespace")
    parser.set_defaults(func=run)


def run(args) -> int:
    import warnings

    from bertfeat.exceptions import CacheWarning, NoLockWarning

    # A corrupt shard is what info lists and compact removes, and an unlocked cache what they work on anyway: their
    # warnings are this command's report, shown where warnings are errors too (python -W error, PYTHONWARNINGS=error:
    # compact stopped on the shard it was run to remove).
    # The filters are the process's (catch_warnings puts back the whole list, another thread's changes too), which a
    # command may touch: it owns its process, as embed's pandas notice filter does. No library call or fit runs this
    # (the R package has no cache command; its run_cli records the process's warnings around a command anyway), so
    # unlike info's notes (prompts.notes_held, in info's thread only) it is left a filter.
    with warnings.catch_warnings():
        warnings.simplefilter("always", CacheWarning)
        warnings.simplefilter("always", NoLockWarning)
        return _run(args)


def _run(args) -> int:
    from bertfeat.cache import open_cache
    from bertfeat.exceptions import CacheError

    try:
        cache = open_cache(args.dir, create=False)
        namespace = cache.resolve(args.namespace) if getattr(args, "namespace", None) else None
        if args.action == "info":
            infos = cache.info()
            if args.json:
                print(json.dumps({"dir": cache.root, "namespaces": [i.to_dict() for i in infos]}, indent=2))
            else:
                print(_format_info(cache.root, infos))
        elif args.action == "compact":
            for r in cache.compact(namespace):
                print(f"{r.fingerprint}: {r.shards_before} -> {r.shards_after} shards, {r.rows:,} rows, "
                      f"{r.duplicates_dropped:,} duplicates dropped, {len(r.corrupt_removed)} corrupt shards removed, "
                      f"{r.temp_removed} dead temp files removed, {_size(r.bytes_before)} -> {_size(r.bytes_after)}")
        else:
            if namespace is None and not args.yes:
                raise UsageError(f"this deletes every cached vector in {cache.root}; add --yes to confirm, or pass "
                                 "--namespace FINGERPRINT to delete one recipe's vectors.")
            removed = cache.clear(namespace)
            print(f"cleared {len(removed)} namespace{'s' if len(removed) != 1 else ''} in {cache.root}")
    except CacheError as exc:
        raise UsageError(str(exc)) from None
    except BrokenPipeError:
        raise  # the output's reader has gone (`| head -1`): main() ends quietly
    except OSError as exc:  # compact or clear on a read-only or full filesystem
        raise UsageError(_os_error(args, exc)) from None
    return 0


def _os_error(args, exc: OSError) -> str:
    import errno
    import os

    where = f" ({os.fsdecode(exc.filename)})" if exc.filename else ""
    hint = {errno.ENOSPC: "free some space on its disk and run it again",
            errno.EDQUOT: "free some space on its disk and run it again"}.get(
        exc.errno, "the cache can still be read (lookups, cache info), but compacting or clearing it needs write "
                   "access to its directory" if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else "")
    what = f"cannot {args.action} the cache in {args.dir}: {exc.strerror or exc}{where}"
    return what + (f"; {hint}." if hint else ".")


def _format_info(root: str, infos) -> str:
    rows = sum(i.rows for i in infos)
    size = sum(i.bytes for i in infos)
    lines = [f"{root}: {len(infos)} recipe{'s' if len(infos) != 1 else ''}, {rows:,} rows, {_size(size)}"]
    for i in infos:
        r = i.recipe or {}
        lines.append(f"\n{i.fingerprint}  {r.get('model', '(recipe.json missing)')}")
        if r:
            layers = ",".join(str(x) for x in r.get("layers", []))
            lines.append(
                f"  pooling {'+'.join(r.get('pooling', []))}, layers {layers} ({r.get('layer_agg')}), "
                f"{i.n_features} features, max_length {r.get('max_length')}, long_text {r.get('long_text')}"
                + (f" (stride {r.get('stride')})" if r.get("long_text") == "chunk" else "")
                + f", normalize {'yes' if r.get('normalize') else 'no'}, dtype {r.get('dtype')}"
                + (f", prefix {r['prefix']!r}" if r.get("prefix") else "")  # 'query: ' and 'passage: ' differ here only
                # the same prefix pooled with the text, or left out as the model's pooling leaves its prompt out
                + (" (left out of pooling)" if r.get("prefix") and r.get("pool_prefix") is False else "")
            )
        dup = i.stored_rows - i.rows
        lines.append(
            f"  {i.rows:,} rows in {i.shards} shard{'s' if i.shards != 1 else ''}, {_size(i.bytes)}"
            + (f"; {dup:,} duplicate rows" if dup else "")
        )
        if i.shards > MANY_SHARDS:
            lines.append(f"  {i.shards:,} shards: each is opened and read apart, so lookups and every new process "
                         f"are slower than with one; `bertfeat cache compact {shlex.quote(root)} --namespace "
                         f"{i.fingerprint[:8]}` merges them")
        if i.corrupt:
            lines.append(f"  {len(i.corrupt)} corrupt shard(s), ignored until `compact` removes them: "
                         + ", ".join(i.corrupt))
        if i.temp_files:
            lines.append(f"  {i.temp_files} temporary file(s) from writers running now or killed")
    return "\n".join(lines)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"
