"""The ``bertfeat`` command line: one module per command, each a thin layer over the public API.

Each command module defines ``add_parser(subparsers)`` (its options and ``--help`` text with examples) and
``run(args) -> int``. User mistakes raise :class:`UsageError` (or a ValueError/TypeError/FileNotFoundError from the
API) and become a one-line message and exit code 2, never a traceback (set BERTFEAT_DEBUG=1 to see one). Messages
name options as the API does, ``missing='zero'``, and are read in the command's flags, ``--missing zero``
(:mod:`bertfeat.spelling`), or in R's syntax where R's ``bf_embed_file()`` runs the command.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import functools
import importlib
import os
import re
import signal
import sys
from pathlib import Path

from bertfeat.shared_setting import SharedSetting

# command name -> module under bertfeat.cli that defines add_parser() and run()
COMMANDS: dict[str, str] = {"embed": "embed", "info": "info", "cache": "cache", "probe": "probe"}


class UsageError(Exception):
    """A mistake in how the command was called: printed as one line, exit code 2. Its message names options as the
    API's do (``stride= applies to long_text='chunk' only``), for each caller to read in its own syntax."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (what schedulers and ``kill`` send), handled like Ctrl-C: cleanup runs, then one line."""

    signal_name, how, code = "SIGTERM", "terminated", 143


class HungUp(Terminated):
    """SIGHUP (the terminal closed, an ssh connection dropped), handled as SIGTERM is: Python's default ends the
    process at once, losing the batches since the last checkpoint."""

    signal_name, how, code = "SIGHUP", "hung up", 129


def _on_sigterm(signum, frame):
    raise HungUp() if signum == getattr(signal, "SIGHUP", None) else Terminated()


def _stop_signals() -> list:
    """The signals a command stops on cleanly: SIGTERM, and SIGHUP unless ignored (``nohup`` ignores it for a job
    meant to outlive its terminal: it runs on); neither where a handler Python did not set holds it, which Python
    could not put back after (a host's own, where the host runs the command in its process: an R front end's, where
    R's ``bf_embed_file()`` does; Rscript's are the defaults), the host's own handling of it gone for good."""
    stops = []
    if signal.getsignal(signal.SIGTERM) is not None:
        stops.append(signal.SIGTERM)
    hangup = getattr(signal, "SIGHUP", None)  # none on Windows
    if hangup is not None and signal.getsignal(hangup) not in (signal.SIG_IGN, None):
        stops.append(hangup)
    return stops


class _StoreOnce(argparse._StoreAction):
    """argparse's ``store``, refusing a second value: argparse keeps the last, so ``--id-col user --id-col item`` kept
    ``item`` alone, ``embed --model a --model b`` ran ``b`` alone and ``probe --text-col title --text-col body``
    scored ``body`` alone, silently, where a sibling option (``--keep-col``, ``--text-col``) or the other command
    (``probe --model``) takes the option repeated for several. The same value again is that value. ``twice=``: what
    to pass instead, where a second value is more than a slip."""

    def __init__(self, option_strings, dest, twice: str | None = None, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.twice = twice

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given_once", {})  # the options this parse has met, and their values
        if self.dest in given and given[self.dest] != values:
            def shown(value):
                return repr(value) if isinstance(value, str) else str(value)

            raise argparse.ArgumentError(self, f"given twice, {shown(given[self.dest])} then {shown(values)}"
                                               + (self.twice or ": pass it once"))
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake in one line (the error and where to read more) instead of the usage block,
    and an option of one value given two refused (:class:`_StoreOnce`)."""

    _argv: list[str] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_known_args(self, args=None, namespace=None):
        self._argv = list(sys.argv[1:] if args is None else args)  # for error(): what this parser was given
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        if SPELLING.get() is not None:  # a caller that runs the command in its process: its options, not their flags
            self.exit(2, f"{self.prog}: error: {_spelled(_flags_as_python(message), self)}\n")
        self.exit(2, f"{self.prog}: error: {message}{self.dash_hint(message)} (see {self.prog} --help)\n")

    def dash_hint(self, message: str, unknown=()) -> str:
        """How to pass a file name starting with a dash, where that is why argparse failed: such a name is read as an
        option, so the input (``-x.csv``) goes missing and an option's value (``--out -d.parquet``) is absent."""
        if message.startswith("the following arguments are required") and any(
                a.option_strings == [] and a.metavar and a.metavar in message for a in self._actions):
            named = [t for t in self._argv if self._unknown_dash(t)]
            if named:
                return (f"; {named[0]!r} was read as an option: a file name starting with a dash is written "
                        f"./{named[0]} (or put -- before it)")
        expected = re.match(r"argument (--[\w-]+)(?:/\S+)?: expected one argument", message)
        if expected:
            after = self._argv[self._argv.index(expected[1]) + 1:] if expected[1] in self._argv else []
            if after and self._unknown_dash(after[0]):
                return f"; {after[0]!r} was read as an option: write a value starting with a dash {expected[1]}={after[0]}"
        named = [t for t in unknown if self._unknown_dash(t) and os.path.lexists(t)]
        if named:
            return f"; {named[0]!r} is a file, read as an option: write it ./{named[0]}"
        return ""

    def _unknown_dash(self, token: str) -> bool:
        """A token argparse reads as an option that this parser does not have (nor abbreviates)."""
        if not token.startswith("-") or token in ("-", "--") or re.fullmatch(r"-\d+(\.\d*)?", token):
            return False
        name = token.split("=", 1)[0]
        return not any(o == name or (name.startswith("--") and o.startswith(name))
                       for o in self._option_string_actions)


_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def _flags_as_python(message: str) -> str:
    """argparse's words for an option (``argument --max-length:``, ``unrecognized arguments: --no-such=1``) in the
    API's spelling (``max_length=:``, ``no_such=1``), for a caller that renders that spelling in its own (R's
    ``bf_embed_file()`` gave ``max_length = 256``, which reached the command as ``--max-length=256``)."""
    def python(match):
        name, value = match.group(1).replace("-", "_"), match.group(2)
        if value is None:
            return f"{name}="
        return f"{name}={value if _NUMBER.fullmatch(value) else repr(value)}"

    return re.sub(r"(?<![\w-])--([a-z][a-z0-9-]*)(?:/\S+)?(?:=(\S+))?", python, message)


def build_parser() -> argparse.ArgumentParser:
    from bertfeat import __version__

    parser = _Parser(
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


# How a command's errors and warning lines name options (the API's messages write them as its keyword arguments,
# missing='zero'): None for the command line's flags (bertfeat.spelling.for_command_line, from the command's
# parser), or the spelling of the caller that runs the command in its process (R's bf_embed_file(): bertfeat._r.run_cli)
SPELLING: contextvars.ContextVar = contextvars.ContextVar("bertfeat_spelling", default=None)


def _spelled(message: str, parser: argparse.ArgumentParser | None) -> str:
    spell = SPELLING.get()
    if spell is not None:
        return spell(message)
    from bertfeat.spelling import for_command_line

    return for_command_line(message, parser)


# The command each thread's main() runs (its warnings' prefix) and its parser (their flags)
_COMMAND: contextvars.ContextVar[tuple[str, argparse.ArgumentParser | None] | None] = contextvars.ContextVar(
    "bertfeat_command", default=None)


def _one_line_format():
    """The command's format in place of ``warnings.formatwarning``, which it returns (and calls for others' warnings)."""
    import warnings

    plain = warnings.formatwarning
    warnings.formatwarning = functools.partial(_formatted, plain)
    return plain


def _plain_format(plain) -> None:
    import warnings

    warnings.formatwarning = plain


# The format is the process's: the commands now running (threads) share it (a child forked meanwhile gets a lock of its
# own, and the commands it counts need no change: the format prefixes only a thread running one)
_FORMAT = SharedSetting(_one_line_format, _plain_format)


@contextlib.contextmanager
def _one_line_warnings(command: str, parser: argparse.ArgumentParser | None = None):
    """bertfeat's own warnings (truncation, a dtype slower than float32 here, cache trouble) raised by the command as
    one stderr line each, not Python's two-line ``file:line: Category: message`` + source form.

    Only the formatting changes (``warnings.formatwarning``), so filters and callers that record warnings
    (``warnings.catch_warnings(record=True)``, pytest) see them as before. The format is the process's: commands that
    overlap (threads) share it, the first to begin puts it in place and the last to end puts back what the first
    found, and it formats as a command's line only the warnings of a thread running one (each its own command's).
    """
    token = _COMMAND.set((command, parser))
    try:
        with _FORMAT.held():
            yield
    finally:
        _COMMAND.reset(token)


def _formatted(plain, message, category, filename, lineno, line=None):
    running = _COMMAND.get()
    if running is None or not category.__module__.startswith("bertfeat"):
        return plain(message, category, filename, lineno, line)
    command, parser = running
    text = _spelled(str(message), parser)
    for own in (f"bertfeat {command}: ", "bertfeat: "):  # said once: not "bertfeat cache: ... bertfeat cache:"
        text = text[len(own):] if text.startswith(own) else text
    return f"bertfeat {command}: warning: {text}\n"


def _escape(exc: UnicodeError):
    """The codec error handler of :func:`_showable_output`: a name the locale decoded byte by byte (a surrogate
    ``\\udce9``) is written back as its own byte, as ``surrogateescape`` does; any other character this encoding
    cannot show as its backslash escape (``\\xe9``), as ``backslashreplace`` does."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for ch in exc.object[exc.start:exc.end]:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(code - 0xDC00)
        else:
            out += ch.encode("ascii", "backslashreplace")
    return bytes(out), exc.end


def _showable_output():
    """Standard output in an encoding that cannot show every character (``PYTHONIOENCODING=ascii``, a C locale
    without Python's UTF-8 mode, as cron and bare containers have) fails on a non-ASCII path, column name or model
    name with 'ascii' codec can't encode character, after the command did its work (``cache clear`` deleted, then
    said error). What it cannot show is escaped instead, as standard error already does.

    Returns what puts the stream's error handler back: :func:`main` run in a process that goes on (the R package,
    a notebook, a test) leaves the caller's standard output as it found it, not escaping for good."""
    import codecs

    stream = sys.stdout
    if getattr(stream, "errors", None) not in ("strict", "surrogateescape") or not hasattr(stream, "reconfigure"):
        return lambda: None
    try:
        codecs.lookup_error("bertfeat.escape")
    except LookupError:
        codecs.register_error("bertfeat.escape", _escape)
    errors = stream.errors
    try:
        stream.reconfigure(errors="bertfeat.escape")
    except (ValueError, OSError, AttributeError):  # a stream that cannot be reconfigured: as it is
        return lambda: None

    def put_back():
        if sys.stdout is stream and stream.errors == "bertfeat.escape":  # not a stream the command did not set
            with contextlib.suppress(ValueError, OSError, AttributeError):
                stream.reconfigure(errors=errors)

    return put_back


def main(argv=None) -> int:
    put_back = _showable_output()
    try:
        return _main(argv)
    finally:
        put_back()


def _main(argv) -> int:
    try:
        parser = build_parser()
        args, unknown = parser.parse_known_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while the command line starts: nothing ran yet
        print("bertfeat: interrupted", file=sys.stderr)
        return 130
    if unknown:  # argparse blames the top parser, whose --help lists no command's options
        command = _command_parser(parser, args)
        message = f"unrecognized arguments: {' '.join(unknown)}"
        command.error(message + command.dash_hint(message, unknown) + _expanded_glob_hint(command, args, unknown))
    vars(args).pop("_given_once", None)  # the parse's own record (_StoreOnce), no option
    _texts_as_utf8(args)
    command = _command_parser(parser, args)
    with _one_line_warnings(args.command, command):
        return _run_command(args, command)


def _run_command(args: argparse.Namespace, command: argparse.ArgumentParser) -> int:
    """Run the parsed command: its exit code, a mistake or a stop told in one line, in the command's flags
    (:func:`_spelled`: the API's messages name its keyword arguments)."""
    from bertfeat.exceptions import CacheError  # a --cache-dir that cannot be used is the caller's to fix

    previous = {}
    with contextlib.suppress(ValueError):  # only the main thread may set a handler
        for stop in _stop_signals():
            previous[stop] = signal.signal(stop, _on_sigterm)
    try:
        code = int(args.func(args) or 0)
        if sys.stdout is not None:  # None: standard output closed (>&-, a daemon), where print writes nothing
            sys.stdout.flush()  # what is still buffered goes now, while a reader gone can be told apart (below)
        return code
    except UsageError as exc:
        print(f"bertfeat {args.command}: error: {_spelled(str(exc), command)}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, CacheError) as exc:
        # OSError: besides a missing file or an existing output, a full disk or a read-only filesystem
        if isinstance(exc, BrokenPipeError) and _output_reader_gone():
            return _quiet_after_reader_gone()
        if os.environ.get("BERTFEAT_DEBUG"):
            raise
        print(f"bertfeat {args.command}: error: {_spelled(_one_line(exc), command)}", file=sys.stderr)
        return 2
    except Warning as exc:  # -W error or PYTHONWARNINGS=error (CI) made a note an exception: the job stopped there
        if os.environ.get("BERTFEAT_DEBUG"):
            raise
        print(f"bertfeat {args.command}: error: {type(exc).__name__} made an error by the warnings filter (python -W "
              f"error, PYTHONWARNINGS): {_spelled(_one_line(exc), command)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        how = f"{exc.how} ({exc.signal_name})" if isinstance(exc, Terminated) else "interrupted"
        hint = "; run the same command again to resume" if args.command == "embed" else ""
        with contextlib.suppress(OSError, ValueError):  # after a hangup, a terminal gone may refuse the line (EIO)
            print(f"bertfeat {args.command}: {how}{hint}", file=sys.stderr)
        return exc.code if isinstance(exc, Terminated) else 130
    finally:
        for stop, handler in previous.items():
            if handler is not None:
                signal.signal(stop, handler)


# options whose values are text compared with a file's column names or fed to the model, never file names
_TEXT_OPTIONS = ("text_col", "id_col", "keep_col", "label_col", "prefix", "prompt_name", "delimiter")


def _texts_as_utf8(args: argparse.Namespace) -> None:
    """Python decodes the command line in the locale's character set: in a C locale without its UTF-8 mode
    (``PYTHONUTF8=0``) ``--text-col texte_é`` came as ``'texte_\\udcc3\\udca9'``, refused as not found beside the
    file's ``'texte_é'``, and ``--prefix`` put those escapes before every text. A column name or a text is UTF-8, as
    the file's are: its bytes are read so. File names stay as the system gave them."""
    def utf8(value):
        if isinstance(value, list):
            return [utf8(v) for v in value]
        if isinstance(value, str) and any("\udc80" <= ch <= "\udcff" for ch in value):
            with contextlib.suppress(UnicodeError):
                return os.fsencode(value).decode("utf-8")
        return value

    for name in _TEXT_OPTIONS:
        if getattr(args, name, None) is not None:
            setattr(args, name, utf8(getattr(args, name)))


def _expanded_glob_hint(command: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> str:
    """Why files followed the INPUT, where they did: ``bertfeat embed data/*.parquet`` unquoted reaches bertfeat as
    every file the shell's glob matched, and argparse names only the ones past the first."""
    from bertfeat.sources import _ONE_CSV, _kind

    given = getattr(args, "input", None)
    extra = [t for t in unknown if not t.startswith("-") and os.path.lexists(t)]
    if not isinstance(given, str) or not extra:
        return ""
    files = [given, *extra]
    said = (f"; {command.prog} reads one INPUT and was given {len(files)} files: a shell expands an unquoted glob "
            "into its files")
    if any(_kind(Path(f)) == "csv" for f in files):
        return f"{said}, but a CSV input is one file: {_ONE_CSV}"
    folders = {os.path.dirname(f) for f in files}
    suffixes = {Path(f).suffix for f in files}
    pattern = (os.path.join(folders.pop(), "*" + suffixes.pop()) if len(folders) == 1 and len(suffixes) == 1
               else "data/*.parquet")
    return (f"{said}, so quote it ({pattern!r}) for bertfeat to read the files as one input, or pass their folder")


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command ``args`` ran (``bertfeat cache clear``'s for that action): the one whose --help
    lists the options."""
    for dest in ("command", "action"):
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers or getattr(args, dest, None) not in subparsers[0].choices:
            break
        parser = subparsers[0].choices[getattr(args, dest)]
    return parser


def _output_reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has exited (``bertfeat info | head -1`` once head has its
    line), not some other pipe or socket that broke."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() (Windows), no file descriptor (output captured)
        return False


def _quiet_after_reader_gone() -> int:
    """End as a Unix tool killed by SIGPIPE does: no message (no one reads), exit 141 (128 + SIGPIPE, what the
    shell's pipefail sees). Standard output goes to /dev/null so that Python's flush at exit finds nothing to fail."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 128 + 13


# Control characters that are no whitespace (which _one_line collapses): an error can echo a file's bytes (a ragged
# row's excerpt, a header), and a terminal runs them (ESC [2J clears the screen; OSC 52 sets the clipboard).
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x9f]")


def _one_line(exc: BaseException) -> str:
    """An error's message as one line a terminal shows as written: whitespace collapsed, control characters as
    their backslash escapes (``\\x1b``)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)
