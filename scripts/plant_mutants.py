"""Run mutmut's mutants of one function by hand, outside mutmut, against the tests mutmut cannot run.

Some tests cannot pass under mutmut at all: mutmut calls every mutated function through a trampoline in its own
module, which adds a stack frame outside bertfeat (so the test of a warning's stacklevel, for one, fails for the
unmutated code too and is deselected in scripts/mutants.sh). This script takes the mutants mutmut generated for a
top-level function (from ``.mutants/<module>/mutants/``, so run ``scripts/mutants.sh <module>`` first), puts each
one in place of the function (``name``, or ``Class.method``) in a scratch copy of the project, with no
trampoline, and runs the given tests:

    .venv/bin/python scripts/plant_mutants.py embedder bertfeat/embedder.py transform \\
        tests/test_embedder.py::test_truncation_warning_points_at_the_callers_line

``--only=55,60`` (first) runs just those mutants. mutmut's copy of the original, put in place the same way, runs
first as a control. It prints each mutant as killed or survived and exits 1 if any survived.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _scope(tree: ast.Module, cls: str | None) -> list[ast.stmt]:
    """The statements a function is looked up in: the module's, or those of class ``cls``."""
    if cls is None:
        return tree.body
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return node.body
    raise SystemExit(f"no class {cls!r} in the source")


def _mutants(mutated_source: str, target: str) -> dict[str, str]:
    """The source of each mutant mutmut made of ``target`` (``function`` or ``Class.method``), renamed back."""
    cls, _, function = target.rpartition(".")
    cls = cls or None
    prefix = f"x\u01c1{cls}\u01c1{function}__mutmut_" if cls else f"x_{function}__mutmut_"
    found = {}
    for node in _scope(ast.parse(mutated_source), cls):
        name = node.name if isinstance(node, ast.FunctionDef) else ""
        number = name[len(prefix):]
        if name.startswith(prefix) and (number.isdigit() or number == "orig"):
            text = ast.get_source_segment(mutated_source, node, padded=True)
            found[node.name] = text.replace(f"def {node.name}(", f"def {function}(", 1)
    return dict(sorted(found.items(), key=lambda kv: int(kv[0][len(prefix):]) if kv[0][-1].isdigit() else -1))


def _replace_function(source: str, target: str, new: str) -> str:
    cls, _, function = target.rpartition(".")
    for node in _scope(ast.parse(source), cls or None):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            lines = source.splitlines(keepends=True)
            start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            return "".join(lines[:start]) + new + "\n" + "".join(lines[node.end_lineno:])
    raise SystemExit(f"no function {target!r} in the source")


def _pytest(scratch: str, tests: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                          cwd=scratch, env=env, capture_output=True, text=True)


def main(argv: list[str]) -> int:
    only = None
    if argv[:1] and argv[0].startswith("--only="):  # --only=3,17: just those mutants
        only = {int(n) for n in argv[0].split("=", 1)[1].split(",")}
        argv = argv[1:]
    if len(argv) < 4:
        print(__doc__)
        return 2
    module, file, function, tests = argv[0], argv[1], argv[2], argv[3:]  # function: name or Class.method
    mutated = ROOT / ".mutants" / module / "mutants" / file
    if not mutated.exists():
        print(f"{mutated} is missing: run scripts/mutants.sh {module} first.", file=sys.stderr)
        return 2
    mutants = _mutants(mutated.read_text(), function)
    control = {k: mutants.pop(k) for k in list(mutants) if k.endswith("_orig")}  # mutmut's copy of the original
    if only is not None:
        mutants = {k: v for k, v in mutants.items() if int(k.rsplit("_", 1)[1]) in only}
    if not mutants:
        print(f"mutmut made no mutants of {function!r} in {mutated}.", file=sys.stderr)
        return 2
    original = (ROOT / file).read_text()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    survived = []
    with tempfile.TemporaryDirectory(prefix="plant-") as scratch:
        for part in ("bertfeat", "tests", "pyproject.toml"):
            src = ROOT / part
            (shutil.copytree if src.is_dir() else shutil.copy)(src, Path(scratch) / part)
        # the untouched code, then mutmut's copy of the original put in place the way each mutant will be, must
        # pass: else a "killed" below could be a failing test or a broken substitution
        checks = [("the unmutated code", None)] + [("the original put back in place", t) for t in control.values()]
        for what, text in checks:
            if text is not None:
                (Path(scratch) / file).write_text(_replace_function(original, function, text))
            run = _pytest(scratch, tests, env)
            if run.returncode != 0:
                print(f"the tests fail on {what}:\n{run.stdout[-2000:]}", file=sys.stderr)
                return 2
        for name, text in mutants.items():
            (Path(scratch) / file).write_text(_replace_function(original, function, text))
            verdict = "killed" if _pytest(scratch, tests, env).returncode != 0 else "survived"
            print(f"{name}: {verdict}", flush=True)
            if verdict == "survived":
                survived.append(name)
    print(f"{len(mutants) - len(survived)} of {len(mutants)} killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
