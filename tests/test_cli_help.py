"""The command line's reference: docs/cli-help.md is every command's ``--help`` text, word for word, and the synopsis
in docs/cli.md names every option there is.

The help is the only documentation many users read, and the options' defaults are stated in it: a help text lost,
a default stated wrongly, an option renamed or dropped without the docs following fails here. When the help is
changed on purpose, rewrite the reference with ``python tests/test_cli_help.py`` and read the diff.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest

from bertfeat.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "cli-help.md"
SYNOPSIS = ROOT / "docs" / "cli.md"
WIDTH = 100  # the terminal width the reference is rendered at (argparse wraps to $COLUMNS)
PYTHON = "3.11"  # argparse's layout changes between Python versions (3.13 merges an option's metavars, ...)

HEADER = f"""\
# Command line reference

Every command's `--help`, as the program prints it at {WIDTH} columns (Python {PYTHON}). Written by
`python tests/test_cli_help.py` and checked by `tests/test_cli_help.py`, so it is always the program's own text.
docs/cli.md explains the options at length.
"""


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def helps(parser: argparse.ArgumentParser, words: tuple[str, ...] = ("bertfeat",)):
    """(command words, help text) for the parser and every command under it, depth first, in the parser's order."""
    yield words, parser.format_help()
    for name, child in subcommands(parser).items():
        yield from helps(child, words + (name,))


def render() -> str:
    blocks = [HEADER]
    for words, text in helps(build_parser()):
        blocks.append(f"## {' '.join(words)}\n\n```\n{text.rstrip()}\n```\n")
    return "\n".join(blocks)


def options(parser: argparse.ArgumentParser) -> set[str]:
    """The long options a user can type (``--help`` and ``--version`` aside)."""
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--")} - {"--help", "--version"}


@pytest.fixture
def columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.delenv("PYTHON_COLORS", raising=False)


@pytest.mark.skipif(f"{sys.version_info[0]}.{sys.version_info[1]}" != PYTHON,
                    reason=f"the reference is argparse's layout on Python {PYTHON}")
def test_the_reference_is_every_commands_own_help(columns):
    want = render()
    got = REFERENCE.read_text(encoding="utf-8")
    assert got == want, ("docs/cli-help.md is not the program's help: rewrite it with `python tests/test_cli_help.py` "
                         "and check the diff")


def test_the_reference_holds_every_command(columns):
    words = [" ".join(w) for w, _ in helps(build_parser())]
    assert words == ["bertfeat", "bertfeat embed", "bertfeat info", "bertfeat cache", "bertfeat cache info",
                     "bertfeat cache compact", "bertfeat cache clear", "bertfeat probe"]
    headings = re.findall(r"^## (.+)$", REFERENCE.read_text(encoding="utf-8"), flags=re.M)
    assert headings == words


def test_every_option_has_a_help_text():
    for name, sub in subcommands(build_parser()).items():
        for child in [sub, *subcommands(sub).values()]:
            for action in child._actions:
                assert action.help and action.help == action.help.strip(), (name, action.option_strings, action.dest)


def _stated_defaults():
    import inspect

    import bertfeat
    from bertfeat import files, ray

    embedder = inspect.signature(bertfeat.BertEmbedder).parameters
    parsers = subcommands(build_parser())

    def parsed(command, dest):
        return parsers[command].get_default(dest)

    # (command, option, what its help says, the default the code uses, the value that text stands for)
    return [
        ("embed", "--chunk-chars", "(default 1,000,000)", files.CHUNK_CHARS, 1_000_000),
        ("embed", "--checkpoint-every", "(default 30)", files.CHECKPOINT_SECONDS, 30),
        ("embed", "--pooling", "(default: cls+mean)", parsed("embed", "pooling"), "cls+mean"),
        ("embed", "--pooling", "(default: cls+mean)", embedder["pooling"].default, "cls+mean"),
        ("embed", "--model", "'default' (the default: the bundled all-MiniLM-L6-v2)", parsed("embed", "model"),
         "default"),
        ("embed", "--gpus-per-worker", "default 0 = CPU workers",
         inspect.signature(ray.plan_workers).parameters["gpus_per_worker"].default, 0),
        ("probe", "--unions", "(default 3; 0 for none)", parsed("probe", "unions"), 3),
        ("probe", "--missing", "(default: error)", parsed("probe", "missing"), "error"),
    ]


@pytest.mark.parametrize("command, option, text, default, means", _stated_defaults())
def test_a_default_the_help_states_is_the_one_the_code_uses(command, option, text, default, means):
    parser = subcommands(build_parser())[command]
    action = next(a for a in parser._actions if option in a.option_strings)
    assert text in action.help
    assert default == means


# options whose default (None) stands for a value worked out at run time, which the help must say
COMPUTED_DEFAULTS = {"stride", "batch_tokens", "max_length", "layers", "delimiter", "num_workers", "cpus_per_worker",
                     "master", "chunk_chars", "checkpoint_every", "model"}


def test_every_option_that_takes_a_value_states_its_default():
    """docs/cli.md promises every command's --help 'with each option's default': an option that takes a value and
    falls back to one (a literal default, or one worked out at run time) says so, and a default it writes as a
    plain value is the value the parser uses."""
    for words, parser in [(("bertfeat", name), sub) for name, sub in subcommands(build_parser()).items()]:
        for action in parser._actions:
            if action.nargs == 0 or action.required or isinstance(action, argparse._SubParsersAction) or (
                    action.dest == "help"):
                continue
            if action.default in (None, []) and action.dest not in COMPUTED_DEFAULTS:
                continue  # none: no cache, no prefix, no plot, ...
            assert re.search(r"\bdefault\b(?!')", action.help), (words, action.option_strings or action.dest)
            stated = re.search(r"\(default:? ([\w.,+-]+?)[);]", action.help)
            if stated and action.default is not None:
                assert stated.group(1).replace(",", "") == str(action.default), (words, action.dest, stated.group(1))


@pytest.mark.parametrize("command", ["embed", "info", "probe"])
def test_the_synopsis_names_only_options_that_exist(command):
    """docs/cli.md's synopsis block: every option it shows for a command is one the command takes, and every option
    the command takes is shown. probe's ended with '...' for eight options, of which `--top` was named in no doc."""
    block = SYNOPSIS.read_text(encoding="utf-8").split("```")[1]
    lines = block.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"bertfeat {command}"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("bertfeat ")), len(lines))
    shown = set(re.findall(r"--[a-z][a-z-]*", " ".join(lines[start:end])))
    takes = options(subcommands(build_parser())[command])
    assert shown <= takes, f"docs/cli.md shows options bertfeat {command} does not take: {sorted(shown - takes)}"
    assert shown == takes, f"docs/cli.md's synopsis misses options of bertfeat {command}: {sorted(takes - shown)}"


@pytest.mark.parametrize("command", ["info", "compact", "clear"])
def test_docs_cache_md_shows_every_option_of_each_cache_command(command):
    """docs/cache.md's block of `bertfeat cache` commands is their synopsis (docs/cli.md has none): each option a
    cache command takes is shown on a line of that command, and no option it does not take."""
    text = (ROOT / "docs" / "cache.md").read_text(encoding="utf-8")
    block = next(b for b in text.split("```")[1::2] if "bertfeat cache info DIR" in b)
    lines = [line for line in block.splitlines() if line.startswith(f"bertfeat cache {command} ")]
    shown = {o for line in lines for o in re.findall(r"--[a-z][a-z-]*", line.split("  ")[0])}
    takes = options(subcommands(subcommands(build_parser())["cache"])[command])
    assert lines and shown == takes, (command, sorted(shown), sorted(takes))


def test_every_example_in_the_help_is_one_whole_command_that_parses(columns):
    """Users copy the examples of ``--help``: each is a command the parser takes, shown as it is typed. A backslash
    at the end of a line inside a Python string joins the lines, so probe's third example once read
    ``--model ./e5-small       --prompt-name query`` on one line of 155 characters; and probe's description, in a
    raw layout, ran to 131 characters where every other line keeps within the 120 the help texts are wrapped to."""
    import shlex

    parser = build_parser()
    examples = 0
    for words, text in helps(parser):
        assert max(len(line) for line in text.splitlines()) <= 120, (words, max(text.splitlines(), key=len))
        if "examples:\n" not in text:
            continue
        block = re.sub(r"\\\n\s*", " ", text.split("examples:\n", 1)[1].split("\n\n", 1)[0])  # a shell's continuation
        for line in block.splitlines():
            command = re.split(r"\s{2,}(?:#|[a-z])", line.strip(), maxsplit=1)[0]  # cache's examples say what each does
            assert command.startswith("bertfeat ") and "   " not in command, (words, line)
            try:
                parser.parse_args(shlex.split(command)[1:])
            except SystemExit:
                pytest.fail(f"{' '.join(words)} --help shows an example the parser refuses: {command}")
            examples += 1
    assert examples >= 12


@pytest.mark.parametrize("command", ["embed", "info", "probe", "cache"])
def test_the_help_is_the_same_under_python_oo_and_each_description_is_whole(command):
    """``python -OO`` / ``PYTHONOPTIMIZE=2`` (some Docker images and deployments) strips docstrings, and embed, info
    and probe took their --help description from their module's docstring: every ``bertfeat`` command, even
    ``--help``, failed with "'NoneType' object has no attribute 'splitlines'". And info's description was the
    docstring's first line only, a sentence cut at "the default"."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(WIDTH)}
    runs = [subprocess.run([sys.executable, *flag, "-m", "bertfeat", command, "--help"], env=env, capture_output=True,
                           text=True, timeout=120) for flag in ([], ["-OO"])]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr
    assert runs[1].stdout == runs[0].stdout
    parser = subcommands(build_parser())[command]
    assert parser.description is None or parser.description.rstrip().endswith("."), parser.description


def test_the_help_of_an_option_some_engines_refuse_or_read_otherwise_says_which(tmp_path, capsys):
    """--chunk-chars and --checkpoint-every are refused with --engine ray or spark, and --chunk-rows is Spark's rows
    per batch too (docs/cli.md, docs/spark.md); the help said nothing of the first two's engine, and named only Ray
    for the last, so a Spark user read '--chunk-rows' as the local engine's resume unit only."""
    from bertfeat.cli import main

    data = tmp_path / "in.csv"
    data.write_text("id,t\n1,a\n")
    embed = subcommands(build_parser())["embed"]
    helps = {s: a.help for a in embed._actions for s in a.option_strings}
    for option in ("--chunk-chars", "--checkpoint-every"):
        for engine in ("ray", "spark"):
            code = main(["embed", str(data), "--text-col", "t", "--out", str(tmp_path / "o"), "--engine", engine,
                         option, "5"])
            assert code == 2 and f"{option} applies to the local engine only" in capsys.readouterr().err
        assert "local engine only" in helps[option], option
    assert "--engine ray or spark" in " ".join(helps["--chunk-rows"].split())


if __name__ == "__main__":  # rewrite the reference from the program's help
    import os

    os.environ["COLUMNS"] = str(WIDTH)
    os.environ.pop("PYTHON_COLORS", None)
    REFERENCE.write_text(render(), encoding="utf-8")
    print(f"wrote {REFERENCE.relative_to(ROOT)}")


@pytest.mark.parametrize("command", ["embed", "probe"])
def test_the_dtype_help_says_what_auto_takes_on_each_device(command, monkeypatch):
    """`--dtype`'s help said auto is "bfloat16 or float16 on a GPU", where on an Apple GPU whose torch has no autocast
    there (before 2.5) it is float32 (session 13's fallback), and a user reading float16 could not tell why the
    manifest says float32. Each case of devices.resolve_dtype is named."""
    from bertfeat import devices, gpu

    [action] = [a for a in subcommands(build_parser())[command]._actions if "--dtype" in a.option_strings]
    text = " ".join(action.help.split())
    monkeypatch.setattr(gpu, "auto_dtype", lambda device: {"cuda:0": "bfloat16", "cuda:1": "float16"}[device])
    monkeypatch.setattr(devices, "half_precision_refusal",
                        lambda device, dtype: None if device == "mps:new" else "no autocast on MPS")
    said = {("cuda:0", "bfloat16"): "bfloat16 on a GPU that runs it natively",
            ("cuda:1", "float16"): "float16 on one that emulates it (T4, V100) and on an Apple GPU",
            ("mps:new", "float16"): "on an Apple GPU",
            ("mps:old", "float32"): "float32 where its torch has no autocast there (before 2.5)",
            ("cpu", "float32"): "float32 on a CPU"}
    for (device, dtype), words in said.items():
        assert devices.resolve_dtype("auto", device) == dtype, device
        assert words in text, (device, text)
