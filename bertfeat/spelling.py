"""How a message names an option on each surface: written once, in Python's spelling, rendered where it is read.

bertfeat's errors and warnings are raised by the Python API and read by three kinds of users: a Python user, who
passes keyword arguments (``missing='zero'``); a command line user, who types flags (``--missing zero``); an R user,
who types R (``missing = "zero"``). Each message is written once, in Python's spelling: ``name=value`` with the value
as Python writes it (``{value!r}``), or a bare ``name=`` where the option is named without a value ("pass prefix=
instead"). The command line renders it in its flags here (:func:`for_command_line`, from the command's own parser, so
a flag is named only where the command has it), at the one place a command's errors and warnings become lines; the R
package renders it in R (:func:`bertfeat._r.r_advice`). This module holds the grammar both read.
"""

from __future__ import annotations

import argparse
import re

# A Python literal as bertfeat's messages write one ({value!r}): a quoted string, True/False/None, a number, a list
# or tuple of those
STRING = r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"'
SCALAR = rf"""{STRING}|True|False|None|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"""
LITERAL = re.compile(rf"""{SCALAR}|\[(?:\s*(?:{SCALAR})\s*,?)*\]|\((?:\s*(?:{SCALAR})\s*,?)*\)""")
# name=value, or a bare name= ("pass cache_dir= as well"), where name is no part of an option (--max-length=8), a
# dotted name or a URL query, and value no part of a folder's name (a hive partition's year=2024/, dt=2024-01-01/)
KEYWORD = re.compile(rf"""(?<![\w.\-?&/])([a-z_][a-z0-9_]*)=(?:({LITERAL.pattern})(?![\w/\-])|(?=[\s,;.):]|$))""")
# a list of quoted names or choices standing alone (Python's "expected one of ['cls', 'mean']")
STRING_LIST = re.compile(rf"""\[\s*(?:{STRING})(?:\s*,\s*(?:{STRING}))*\s*\]""")
# one quoted text standing alone (a path, a name, a row's text: Python's {value!r}); an apostrophe inside or after a
# word (the model's limit, the users' texts) opens no quote
QUOTED = re.compile(r"(?<![\w'\"])'(?:[^'\\\n]|\\.)*'(?![\w'])")
QUOTED_TEXT = rf"""({QUOTED.pattern}|"(?:[^"\\\n]|\\.)*")"""
# a quoted text (kept as it is: a path, a prefix or a row's text of the user's, "set a=1") or a name=value
QUOTED_OR_KEYWORD = re.compile(rf"""{QUOTED_TEXT}|{KEYWORD.pattern}""")

# Advice for Python users alone, which the other surfaces leave out: the cache path a pickled pipeline keeps and how
# to set it (bertfeat.cache's refusals of a cache_dir; R's step gives its own)
SET_PARAMS_ASIDE = " (est.set_params(cache_dir=...), or <step>__cache_dir=... for a Pipeline)"
PICKLED_NOTE = "A pickled pipeline keeps the cache path of the machine it was fitted on. "
# the probe's poolings, in CLS pooling's refusal: the command line's and R's probes take none (they leave out CLS
# pooling where it is refused)
PROBE_POOLINGS_ASIDE = " (to the probe: poolings=('mean', 'max'))"
PYTHON_ONLY = (SET_PARAMS_ASIDE, PICKLED_NOTE, PROBE_POOLINGS_ASIDE)


# a quoted text of SQL's, after MySQL's TERMINATED BY, ENCLOSED BY or ESCAPED BY ('\\r\\n', '"'): typed into the
# database as written, on every surface (bash's $'\\r\\n' is no SQL)
_SQL_QUOTED = re.compile(r"(?<= BY )'(?:[^'\\\n]|\\.)*'")
_SQL_HELD = re.compile("\ue010(\\d+)\ue011")


def keeping_sql(render, message: str) -> str:
    """``render(message)`` (a surface's spelling of it) with each of its quoted texts of SQL kept as written."""
    held = _SQL_QUOTED.findall(message)
    if not held:
        return render(message)
    at = iter(range(len(held)))
    rendered = render(_SQL_QUOTED.sub(lambda m: f"\ue010{next(at)}\ue011", message))
    return _SQL_HELD.sub(lambda m: held[int(m.group(1))], rendered)


def without_python_only(message: str) -> str:
    """``message`` less the advice that only a Python user can follow (:data:`PYTHON_ONLY`)."""
    for python in PYTHON_ONLY:
        message = message.replace(python, "")
    return message


# Python's words in a message (code, an argument's name in a phrase), as each other surface says them: the probe's
# labels are y in Python and R, the --label-col column on the command line; its texts are x in R, --text-col there
PYTHON_WORDS = {" (y.astype(str))": {"r": " (as.character(y))", "cli": ""},
                "the labels y ": {"r": "the labels y ", "cli": "the labels (--label-col) "},
                "check that texts is the column": {"r": "check that `x` is the column",
                                                   "cli": "check that --text-col names the column"}}

# The Python names of options the command line spells otherwise (the API's argument -> the command's option dest)
CLI_NAMES = {"batch_rows": "chunk_rows", "checkpoint_seconds": "checkpoint_every", "keep_cols": "keep_col",
             "text_cols": "text_col", "baseline": "no_baseline", "cache_dir": "dir"}
# a value the command line takes in a word of its own (--delimiter tab)
CLI_WORDS = {("delimiter", "\t"): "tab"}


def delimiter_named(delimiter: str) -> str:
    """A CSV file's delimiter as a message names it on every surface: a tab in words, ``a tab`` (the command line's word
    for it is ``tab``; Python's ``'\\t'`` would read as bash's ``$'\\t'`` there, and as R's ``"\\t"`` in R), any other
    as Python writes it (``';'``)."""
    return "a tab" if delimiter == "\t" else repr(delimiter)


# a name followed by its flag ("lower cv (--cv)")
_NAME_ASIDE = re.compile(r"(?<![\w-])([a-z_]+) \((--[a-z][\w-]*)\)")
# an alternative that leaves an option out ("pass a directory path, or cache_dir=None for no cache")
_NONE_ALTERNATIVE = re.compile(r",? or (?:leave )?([a-z_][a-z0-9_]*)=None\b[^.;:]*")
# a value the shell reads back as written, unquoted
_BARE = re.compile(r"(?=.*\w)[\w./:+@%,=~-]+")
# a list of numbers standing alone ("the same layer twice (as [1, 1])"), as the command line writes one: 1,1
NUMBER_LIST = re.compile(r"(?<![\w\]])\[(-?\d+(?:, -?\d+)*)\]")


def cli_option(name: str, parser: argparse.ArgumentParser | None):
    """The action of ``parser`` that the API's argument ``name`` is given by; None where the command has none."""
    if parser is None:
        return None
    for dest in (name, CLI_NAMES.get(name)):
        for action in parser._actions:  # an option, or the command's own argument (bertfeat info MODEL)
            if action.dest == dest and not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                return action
    return None


def _is_argument(name: str, parser: argparse.ArgumentParser) -> bool:
    """Whether the API's argument ``name`` is the command's own argument, taken by its place (bertfeat cache's DIR,
    the cache itself): the command has no run without it."""
    action = cli_option(name, parser)
    return action is not None and not action.option_strings


_SH_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def sh_value(literal: str) -> str:
    """A quoted text of the command line's (Python's repr of a path or a value) as a shell reads it back: in single
    quotes; in double quotes, ``"$`\\`` escaped, where it holds an apostrophe (as R's ``shQuote()``); in bash's
    ``$'...'`` where it holds a character a line cannot show (a tab, a line break, U+200B). Python's repr differs
    from each where the text holds a backslash (doubled), a ``$`` beside an apostrophe (expanded) or such a
    character (``\\t``, read by a shell as a backslash and a t). Words in quotes that are no Python literal
    (pyarrow's ``';' expected after '"'``), or not as Python writes a text (CSV's doubled quote ``""``: Python writes
    an empty text ``''``), are left as they are."""
    import ast

    try:
        text = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal
    if not isinstance(text, str) or repr(text) != literal:
        return literal
    if not text.isprintable():
        from bertfeat.inputs import _escaped

        # a tab or a line break as bash writes it; a byte the locale could not decode (a surrogate, \udce9) as the
        # byte it is, which bash reads back as that byte
        return "$'" + "".join(_SH_ESCAPES.get(c) or (f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else
                                                     _escaped(c)) for c in text) + "'"
    if "'" not in text:
        return f"'{text}'"
    return '"' + re.sub(r'(["$`\\])', r"\\\1", text) + '"'


def _shell_word(text: str) -> str:
    return text if _BARE.fullmatch(text) else sh_value(repr(text))


def _cli_value(literal: str, dest: str) -> list:
    """A Python literal as the words of an option's value: a string bare or shell-quoted, a list as its items."""
    import ast

    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return [literal]
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    return [CLI_WORDS.get((dest, v)) or _shell_word(v) if isinstance(v, str) else str(v) for v in items]


def _cli_keyword(name: str, literal: str | None, action) -> str:
    if not action.option_strings:  # an argument the command takes by its place: named as its --help names it
        return action.metavar or action.dest.upper() if literal is None else " ".join(
            [action.metavar or action.dest.upper(), *_cli_value(literal, action.dest)])
    flag = action.option_strings[-1]
    negated = action.dest == "no_" + name  # baseline=False is --no-baseline
    if literal is None:
        return flag
    if literal in ("True", "False") and isinstance(action, argparse._StoreTrueAction):
        return flag if (literal == "True") != negated else f"no {flag}"
    if literal == "None":
        return f"no {flag}"
    words = _cli_value(literal, action.dest)
    if isinstance(action, argparse._AppendAction):
        return " ".join(f"{flag}={w}" if w.startswith("-") else f"{flag} {w}" for w in words)
    value = ",".join(words)
    return f"{flag}={value}" if value.startswith("-") else f"{flag} {value}"


def for_command_line(message: str, parser: argparse.ArgumentParser | None) -> str:
    """A message in Python's spelling as the command line user reads it: each ``name=value`` whose argument the
    command takes as a flag in that flag's syntax (``missing='zero'`` as ``--missing zero``, ``overwrite=True`` as
    ``--overwrite``, ``stride=None`` as ``no --stride``, ``layers=[-2, -1]`` as ``--layers=-2,-1``, a bare
    ``prefix=`` as ``--prefix``), a list of quoted names as the names, and a name the message gives in both spellings
    said once, as a flag. An alternative that leaves out the command's own argument (``or cache_dir=None for no
    cache`` to ``bertfeat cache``, whose DIR is the cache) is left out. A name the command has no flag for is left as
    Python writes it. A quoted text (a path the user pastes back, a column's name) is quoted as a shell reads it
    (:func:`sh_value`).

    Examples
    --------
    >>> p = argparse.ArgumentParser(prog="bertfeat embed")
    >>> _ = p.add_argument("--missing"), p.add_argument("--overwrite", action="store_true"), p.add_argument("--layers")
    >>> for_command_line("missing='error'. Pass missing='zero' for a zero vector.", p)
    '--missing error. Pass --missing zero for a zero vector.'
    >>> for_command_line("output 'o.parquet' exists; pass --overwrite (overwrite=True) to replace it.", p)
    "output 'o.parquet' exists; pass --overwrite to replace it."
    >>> for_command_line("layers=[-2, -1] is not valid; columns ['a', 'b'] exist; trust_remote_code=True", p)
    "--layers=-2,-1 is not valid; columns 'a', 'b' exist; trust_remote_code=True"
    """
    if parser is None:
        return message
    return keeping_sql(lambda text: _for_command_line(text, parser), message)


def _for_command_line(message: str, parser: argparse.ArgumentParser) -> str:
    message = without_python_only(message)
    message = _NONE_ALTERNATIVE.sub(lambda m: "" if _is_argument(m.group(1), parser) else m.group(0), message)

    def keyword(match):
        if match.group(1) is not None:  # a quoted text (a path, a name): the user's own, quoted as a shell reads it
            return sh_value(match.group(1))
        action = cli_option(match.group(2), parser)
        return match.group(0) if action is None else _cli_keyword(match.group(2), match.group(3), action)

    text = QUOTED_OR_KEYWORD.sub(keyword, message)
    # said in both spellings ("pass --overwrite (overwrite=True)", "task='regression' (--task regression)"): once
    text = re.sub(r"(--[a-z][\w-]*(?:[ =][^\s(),;]+)?) \(\1\)", r"\1", text)
    text = _NAME_ASIDE.sub(lambda m: m.group(2) if (getattr(cli_option(m.group(1), parser), "option_strings", None)
                                                     or [None])[-1] == m.group(2) else m.group(0), text)
    for python, spelled in PYTHON_WORDS.items():
        text = text.replace(python, spelled["cli"])
    text = NUMBER_LIST.sub(lambda m: m.group(1).replace(", ", ","), text)
    return STRING_LIST.sub(lambda m: ", ".join(s.group(0) for s in re.finditer(STRING, m.group(0)[1:-1])), text)
