"""The Python package as users install it: the sdist and the wheel built from this tree, not the editable checkout.

Every other test imports bertfeat from the source tree, which has every file whether or not the package declares
it: a data file left out of ``package-data`` or a subpackage left out of ``packages.find`` passes them all and fails
at a user's first run. Here the sdist is built from a copy of the tree, the wheel from the unpacked sdist (as
``python -m build`` and ``pip install bertfeat-X.tar.gz`` do) and from the tree (as ``pip install .`` does), and the
wheel is imported from a folder of its own, from a directory that is not the tree, with the editable install out of
reach (``-S``: no ``.pth`` file is read, so its finder cannot fill in what the wheel lacks).
"""

from __future__ import annotations

import argparse
import ast
import email
import importlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

import bertfeat
from bertfeat import links

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bertfeat"
# what the build reads: pyproject.toml, the readme, the license, MANIFEST.in's rules, the package and tests/
# (setuptools puts tests/test*.py in an sdist unless MANIFEST.in prunes them)
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "bertfeat", "tests")
BUILD = """
import sys
from setuptools import build_meta
print(getattr(build_meta, sys.argv[1])(sys.argv[2]))
"""


def _build(what: str, source: Path, out: Path) -> tuple[Path, str]:
    proc = subprocess.run([sys.executable, "-c", BUILD, what, str(out)], cwd=source, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / proc.stdout.strip().splitlines()[-1], proc.stderr


def _package_files(root: Path) -> set[str]:
    """The package's files: its modules and the data it reads (not bytecode, nor an editor's hidden or backup files)."""
    return {p.relative_to(root.parent).as_posix() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and not p.name.startswith(".")
            and not p.name.endswith("~")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("packaging")
    tree = tmp / "tree"
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif (ROOT / name).exists():
            tree.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    sdist, sdist_log = _build("build_sdist", tree, tmp / "sdist")
    with tarfile.open(sdist) as tar:
        # the "data" filter (3.12's default) where this Python has it: before 3.10.12 and 3.11.4 it does not
        tar.extractall(tmp / "unpacked", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (unpacked,) = (tmp / "unpacked").iterdir()
    wheel, wheel_log = _build("build_wheel", unpacked, tmp / "wheel")
    wheel_of_tree, _ = _build("build_wheel", tree, tmp / "wheel-of-tree")
    site = tmp / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    return {"sdist": sdist, "wheel": wheel, "wheel_of_tree": wheel_of_tree, "site": site, "tmp": tmp,
            "log": sdist_log + wheel_log}


def _wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def _sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tar:
        return {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}


def _metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(zf.read(name))


def test_the_wheel_holds_every_module_and_data_file_of_the_package_built_either_way(built):
    want = _package_files(PACKAGE)
    assert "bertfeat/cli/embed.py" in want and "bertfeat/spark_quiet.log4j2.properties" in want
    for wheel in (built["wheel"], built["wheel_of_tree"]):
        have = {n for n in _wheel_names(wheel) if n.startswith("bertfeat/")}
        assert have == want, f"{wheel.name}: missing {sorted(want - have)}, extra {sorted(have - want)}"


def _files_read_beside_modules() -> set[str]:
    """The files the package opens beside its own modules: ``Path(__file__).with_name("x")`` and the like."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        for line in source.splitlines():
            if "__file__" in line:
                for name in re.findall(r"""(?:with_name|joinpath|/)\s*\(?\s*["']([^"']+)["']""", line):
                    found.add((path.parent / name).relative_to(ROOT).as_posix())
    return found


def test_every_file_the_package_reads_beside_its_modules_is_in_the_wheel(built):
    read = _files_read_beside_modules()
    assert "bertfeat/spark_quiet.log4j2.properties" in read  # the scan finds what the Spark engine reads
    assert read <= _wheel_names(built["wheel"])


def test_the_installed_wheel_runs_from_outside_the_tree_without_the_editable_install(built):
    site = built["site"]
    (entry_points,) = site.glob("*.dist-info/entry_points.txt")
    scripts = dict(re.findall(r"^(\S+)\s*=\s*(\S+)$", entry_points.read_text(), re.M))
    assert scripts == {"bertfeat": "bertfeat.cli:main"}
    check = f"""
import importlib, pathlib, sys
import bertfeat
assert pathlib.Path(bertfeat.__file__).parent == pathlib.Path({str(site / 'bertfeat')!r}), bertfeat.__file__
module, _, name = {scripts['bertfeat']!r}.partition(":")
main = getattr(importlib.import_module(module), name)
from bertfeat import spark_session
assert spark_session.QUIET_LOG4J.is_file(), spark_session.QUIET_LOG4J
for sub in {sorted(p.stem for p in PACKAGE.glob('cli/*.py') if p.stem != '__init__')!r}:
    importlib.import_module("bertfeat.cli." + sub)
sys.exit(main(["--version"]))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]]))
    proc = subprocess.run([sys.executable, "-S", "-c", check], cwd=built["tmp"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == f"bertfeat {bertfeat.__version__}"


@pytest.mark.slow
def test_the_installed_wheel_embeds_with_the_bundled_model_as_the_tree_does(built, tmp_path):
    # what a user runs first after `pip install`: `python -m bertfeat` (the wheel's __main__), `info` and an embed of
    # a CSV on the bundled model, from a folder that is not the tree, the editable install out of reach
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(built["site"]), sysconfig.get_paths()["purelib"]]))

    def bertfeat_command(*args):
        proc = subprocess.run([sys.executable, "-S", "-m", "bertfeat", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout

    assert bertfeat_command("--help").startswith("usage: bertfeat ")
    info = bertfeat_command("info", "--no-machine")
    assert "all-MiniLM-L6-v2" in info and "768 features per text column" in info
    (tmp_path / "in.csv").write_text("id,text\n1,a cat sat\n2,the dog ran\n3,\n", encoding="utf-8")
    bertfeat_command("embed", "in.csv", "--text-col", "text", "--id-col", "id", "--out", "out.parquet",
                     "--missing", "zero", "--quiet")
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "out.parquet")
    assert table.column("id").to_pylist() == ["1", "2", "3"] and table.num_columns == 1 + 768  # ids as written
    features = np.column_stack([table.column(i).to_numpy() for i in range(1, table.num_columns)])
    expected = bertfeat.BertEmbedder().fit_transform(["a cat sat", "the dog ran"])
    np.testing.assert_allclose(features[:2], expected, atol=1e-5)
    assert not features[2].any()  # the missing text, as --missing zero says


def test_the_metadata_names_the_version_python_and_license_and_the_build_is_warned_of_nothing(built):
    meta = _metadata(built["wheel"])
    assert (meta["Name"], meta["Version"], meta["Requires-Python"]) == ("bertfeat", bertfeat.__version__, ">=3.10")
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License") and "Permission is hereby granted" in license_text
    (shipped,) = built["site"].glob("*.dist-info/licenses/LICENSE")
    assert shipped.read_text() == license_text
    # setuptools' deprecations become errors on a date it names: a build that warns today fails in a later pip
    assert "Deprecat" not in built["log"], built["log"][-3000:]


def test_the_sdist_holds_what_builds_the_package_and_no_test_suite_cut_from_what_it_needs(built):
    names = _sdist_names(built["sdist"])
    assert {"pyproject.toml", "README.md", "LICENSE"} <= names
    assert _package_files(PACKAGE) <= names
    # the suite needs its conftest, helpers, docs/, examples/, data/ and r-bridge/: setuptools' default took
    # tests/test*.py alone, 70 files none of which could be collected; the checkout is where the tests run
    assert not {n for n in names if n.startswith("tests/")}


def _rd_section(text: str, name: str) -> str:
    """The body of an Rd file's top-level ``\\name{...}`` section, braces matched (Rd escapes ``\\{`` and ``\\}``)."""
    start = text.find("\\" + name + "{")
    if start < 0:
        return ""
    depth, i = 0, start + len(name) + 1
    for i in range(i, len(text)):
        if text[i] == "\\" and text[i + 1] in "{}%\\":
            continue
        if text[i] == "{" and text[i - 1] != "\\":
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                break
    return text[start + len(name) + 2:i]


def test_the_r_packages_help_pages_keep_r_cmd_checks_line_widths():
    # `R CMD check --as-cran`: "\examples lines wider than 100 characters ... will be truncated in the PDF manual"
    # (a NOTE bf_probe.Rd and install_bertfeat.Rd gave); \usage lines past 90 are a NOTE too
    wide = []
    for rd in sorted((ROOT / "r-bridge" / "man").glob("*.Rd")):
        text = rd.read_text(encoding="utf-8")
        for section, limit in (("examples", 100), ("usage", 90)):
            body = _rd_section(text, section)
            wide += [(rd.name, section, line) for line in body.splitlines() if len(line) > limit]
    assert "install_bertfeat(" in _rd_section((ROOT / "r-bridge/man/install_bertfeat.Rd").read_text(), "examples")
    assert not wide


# -- what users read names what they have -------------------------------------------------------------------------

# a path of the repository's docs folder (docs/ray.md), which neither the wheel nor the sdist holds
REPOSITORY_DOCS_PATH = re.compile(r"(?<![\w./-])docs/[\w./-]*\w")
DOCS_ADDRESS = re.compile(re.escape(links.REPOSITORY) + r"/blob/([^/\s]+)/docs/([\w./-]*\w)")


def _documented_modules() -> list[str]:
    """bertfeat and every module of it the README and docs name (``bertfeat.ray.embed_parquet``): what ``help()``
    shows a user who follows them."""
    named = {"bertfeat"}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        named |= {"bertfeat." + m for m in re.findall(r"\bbertfeat\.([a-z_]+)\b", doc.read_text(encoding="utf-8"))
                  if (PACKAGE / f"{m}.py").is_file()}
    return sorted(named)


def _messages(path: Path) -> list[str]:
    """The string constants of a module that are no docstring: its messages, help texts and the like."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def _what_users_read() -> dict[str, str]:
    import pydoc

    from bertfeat.cli import build_parser

    texts = {}

    def helps(parser, words):
        texts[" ".join(words) + " --help"] = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    helps(child, words + (name,))

    helps(build_parser(), ("bertfeat",))
    for name in _documented_modules():
        texts[f"help({name})"] = pydoc.render_doc(importlib.import_module(name), renderer=pydoc.plaintext)
    texts["help(bertfeat.BertEmbedder)"] = pydoc.render_doc(bertfeat.BertEmbedder, renderer=pydoc.plaintext)
    for path in sorted(PACKAGE.rglob("*.py")):
        texts[f"a message in {path.relative_to(ROOT)}"] = "\n".join(_messages(path))
    for rd in sorted((ROOT / "r-bridge" / "man").glob("*.Rd")):
        texts[f"R's ?{rd.stem}"] = rd.read_text(encoding="utf-8")
    for r in sorted((ROOT / "r-bridge" / "R").glob("*.R")):  # R's messages: its code, not its comments
        code = [line.split("#", 1)[0] for line in r.read_text(encoding="utf-8").splitlines()]
        texts[f"a message in r-bridge/R/{r.name}"] = "\n".join(code)
    return texts


def test_every_doc_a_help_text_docstring_or_message_names_is_an_address_of_this_versions_docs():
    # `bertfeat embed --help` said "See docs/ray.md." and help(BertEmbedder) "(docs/defaults.md)": paths in the
    # repository, which the wheel and the sdist do not hold, so a pip-installed user had nothing to follow
    texts = _what_users_read()
    assert {"bertfeat embed --help", "help(bertfeat.ray)", "help(bertfeat.spark)", "help(bertfeat.files)",
            "help(bertfeat.cache)", "help(bertfeat.BertEmbedder)", "R's ?bf_embed"} <= set(texts)
    bare = {(where, path) for where, text in texts.items()
            for path in REPOSITORY_DOCS_PATH.findall(DOCS_ADDRESS.sub("", text))}
    assert not bare, f"docs named as paths an installed bertfeat lacks: {sorted(bare)}"
    named = {}
    for where, text in texts.items():
        for version, page in DOCS_ADDRESS.findall(text.replace("\\url{", " ")):
            named.setdefault((version, page), where)
    assert ("v" + bertfeat.__version__, "ray.md") in named and ("v" + bertfeat.__version__, "defaults.md") in named
    for (version, page), where in named.items():
        assert version == "v" + bertfeat.__version__, f"{where} names the docs of {version}"
        assert (ROOT / "docs" / page).is_file(), f"{where} names docs/{page}, which does not exist"


def test_the_projects_addresses_are_one_in_the_code_the_metadata_and_the_r_package(built):
    urls = dict(value.split(", ", 1) for value in _metadata(built["wheel"]).get_all("Project-URL") or [])
    assert urls == {"Homepage": links.REPOSITORY, "Documentation": links.DOCUMENTATION, "Issues": links.ISSUES}
    assert links.docs_url("ray.md") == f"{links.REPOSITORY}/blob/v{bertfeat.__version__}/docs/ray.md"
    description = (ROOT / "r-bridge" / "DESCRIPTION").read_text(encoding="utf-8")
    fields = dict(re.findall(r"^([\w@/]+):\s*(.*(?:\n[ \t].*)*)", description, re.M))
    assert [u.strip() for u in fields["URL"].split(",")] == [links.REPOSITORY, links.DOCUMENTATION]
    assert fields["BugReports"] == links.ISSUES


def test_the_r_package_and_the_python_package_have_one_version():
    # released together: install_bertfeat() installs bertfeat==<the R package's version> from PyPI, and the R
    # package's check at import refuses a Python side whose functions take other arguments than it passes
    description = (ROOT / "r-bridge" / "DESCRIPTION").read_text(encoding="utf-8")
    assert re.search(r"^Version:\s*(\S+)$", description, re.M)[1] == bertfeat.__version__


def test_the_readme_the_package_index_shows_links_only_to_addresses_of_this_versions_files(built):
    # the README is the wheel's long description, the package's page on the index: its links `docs/cache.md`,
    # `benchmarks/RESULTS.md` were relative, which the index resolves against its own pages (nothing there)
    readme = _metadata(built["wheel"]).get_payload()
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert len(targets) >= 10
    relative = [t for t in targets if not re.match(r"[a-z]+:|#", t)]
    assert not relative, f"links the package index cannot follow: {relative}"
    # and a page named in the prose is a link (its text may name the page by its path)
    assert not REPOSITORY_DOCS_PATH.findall(re.sub(r"\[[^\]]*\]\([^)]*\)", "", readme))
    for target in targets:
        if target.startswith(links.REPOSITORY + "/blob/"):
            version, path = re.match(re.escape(links.REPOSITORY) + r"/blob/([^/]+)/([^#]+)", target).groups()
            assert version == "v" + bertfeat.__version__, target
            assert (ROOT / path).is_file(), target
