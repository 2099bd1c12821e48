"""Docs run: every Python block of README.md (and of the docs pages in RUNNABLE_DOCS) executes, and the docstring examples pass as doctests."""

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNNABLE_DOCS = ["README.md", "docs/cache.md", "docs/performance.md"]  # docs/ray.md's blocks need a cluster's data
README_BLOCKS = [
    (f"{doc}-{i}", block)
    for doc in RUNNABLE_DOCS
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), flags=re.S))
]


def test_readme_has_python_examples():
    assert len(README_BLOCKS) >= 2


@pytest.mark.parametrize("block", [b for _, b in README_BLOCKS], ids=[name for name, _ in README_BLOCKS])
def test_readme_python_block_runs(block, capsys, tmp_path, monkeypatch):
    """Run the block in a fresh folder (with data/); where a print line carries its output in a comment, the
    output must match."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").symlink_to(ROOT / "data")
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    shown = [c.split(":")[0] if c.startswith("(") else c
             for c in re.findall(r"^print\(.*\)\s+#\s*(.*?)\s*$", block, flags=re.M)]
    for expected in shown:
        assert expected in printed, (expected, printed)


MODULES = ["bertfeat.batching", "bertfeat.models", "bertfeat.model_files", "bertfeat.embedder", "bertfeat.encode",
           "bertfeat.union", "bertfeat.arrow", "bertfeat.inputs", "bertfeat.cache", "bertfeat.tokens",
           "bertfeat.probe_ridge", "bertfeat.fork_safe", "bertfeat.recent", "bertfeat.spelling"]
# each runs a small probe on the bundled model (a few seconds once the model is loaded)
PROBE_MODULES = ["bertfeat.probe", "bertfeat._r"]
# every example there needs a cluster (marked +SKIP); only the imports would run (embed_dataset's is in ray_dataset)
CLUSTER_MODULES = ["bertfeat.ray_dataset", "bertfeat.spark"]


@pytest.mark.parametrize("name", MODULES + [pytest.param(m, marks=pytest.mark.slow) for m in PROBE_MODULES])
def test_docstring_examples(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # the probe's examples read data/fine_foods.csv.gz, as from a checkout
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_every_module_with_docstring_examples_has_them_run():
    """The examples of bertfeat.probe, bertfeat._r and bertfeat.tokens ran nowhere (a comment here said test_probe.py
    and test_r_bridge.py covered the first two; neither runs a doctest), so they could rot unseen."""
    with_examples = sorted(f"bertfeat.{p.stem}" for p in (ROOT / "bertfeat").glob("*.py") if ">>> " in p.read_text())
    assert "bertfeat.tokens" in with_examples
    assert with_examples == sorted(MODULES + PROBE_MODULES + CLUSTER_MODULES)
    for name in CLUSTER_MODULES:
        lines = [line for line in (ROOT / "bertfeat" / f"{name.split('.')[1]}.py").read_text().splitlines()
                 if ">>> " in line]
        assert all("doctest: +SKIP" in line or line.split(">>> ")[1].startswith(("import ", "from ")) for line in lines)


def _readme_parameter_table() -> dict[str, str]:
    """The README's table of BertEmbedder parameters: name -> the default it states."""
    text = (ROOT / "README.md").read_text()
    table = text.split("### Parameters", 1)[1].split("\n\n", 2)[1]
    return dict(re.findall(r"^\| `(\w+)` \| (.*?) \|", table, flags=re.M))


def test_the_readme_parameter_table_is_every_parameter_with_its_default():
    """Users read the README's table as the parameter list: every BertEmbedder parameter is in it, in the
    signature's order, and a default written as a value (a string, a bool, None) is the signature's default."""
    import inspect

    from bertfeat import BertEmbedder

    signature = inspect.signature(BertEmbedder.__init__).parameters
    table = _readme_parameter_table()
    assert list(table) == [name for name in signature if name != "self"]
    for name, stated in table.items():
        literal = re.fullmatch(r'`(".*"|True|False|None)`', stated)
        if literal:
            assert eval(literal.group(1)) == signature[name].default, (name, stated)
        else:  # a default computed at fit, said in words
            assert signature[name].default is None, (name, stated)


def test_every_statement_of_the_blank_text_rule_names_what_the_rule_counts_as_blank():
    """The blank-text rule (``bertfeat.inputs.is_blank``) is stated in the README, docs/cli.md, docs/r.md and the
    docstrings of the classes that apply it; each statement names what the code counts as blank beyond whitespace:
    private-use characters, the replacement character and combining marks (a lone accent)."""
    from bertfeat import BertEmbedder
    from bertfeat.inputs import is_blank
    from bertfeat.union import MissingText

    assert all(is_blank(c) for c in ["\ue000", "\ufffd", "\u0301", "\u200b", "\x00"])
    statements = {
        "README.md": (ROOT / "README.md").read_text().split("- Empty and blank texts are missing", 1)[1][:700],
        "docs/cli.md": next(line for line in (ROOT / "docs/cli.md").read_text().splitlines()
                            if line.startswith("| empty and blank texts |")),
        "docs/r.md": (ROOT / "docs/r.md").read_text().split("## Missing values", 1)[1][:900],
        "BertEmbedder": BertEmbedder.__doc__.split("missing : ", 1)[1][:600],
        "MissingText": MissingText.__doc__,
    }
    for where, text in statements.items():
        text = " ".join(text.split()).lower()
        for said in (("private-use", "private use"), ("u+fffd", "replacement"), ("combining", r"\p{m}")):
            assert any(s in text for s in said), (where, said[0])


def test_every_statement_of_reduced_precision_on_cpu_says_it_may_be_slower_warns_and_is_kept():
    """bfloat16/float16 on CPU is slower than float32 on some CPUs (AVX2-only; a Xeon with AVX512-BF16 but no AMX,
    docs/performance.md): the README's table, the docstring and ``--dtype``'s help each say that it warns where it
    is slower and that the dtype is never switched, and none promises speed from AVX512-BF16 alone."""
    from bertfeat import BertEmbedder
    from bertfeat.cli._options import HELP

    readme = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| `dtype` |"))
    statements = {"README.md": readme, "--dtype": HELP["dtype"],
                  "BertEmbedder": BertEmbedder.__doc__.split("dtype : ", 1)[1].split("missing : ", 1)[0]}
    for where, text in statements.items():
        text = " ".join(text.split())
        assert "slower" in text and "never switched" in text, where
        assert "faster on CPUs with AVX512-BF16" not in text, where


def test_every_function_the_r_package_exports_is_in_docs_r_md_and_the_readme():
    """docs/r.md opens with the table of what the R package offers, and the README's R section names its
    functions: each function r-bridge/NAMESPACE exports is in both."""
    exported = re.findall(r"^export\((\w+)\)$", (ROOT / "r-bridge/NAMESPACE").read_text(), flags=re.M)
    assert "bf_embed" in exported
    table = (ROOT / "docs/r.md").read_text().split("| R | what it does |", 1)[1].split("\n\n", 1)[0]
    in_table = re.findall(r"^\| `(\w+)\(", table, flags=re.M)
    readme = (ROOT / "README.md").read_text().split("## From R", 1)[1].split("\n## ", 1)[0]
    for name in exported:
        assert name in in_table, f"docs/r.md's table lacks {name}()"
        assert f"{name}(" in readme, f"the README's R section lacks {name}()"


def test_docs_r_md_lists_every_parameter_bf_embed_takes_in_its_dots():
    """docs/r.md says what `...` of bf_embed() takes; that list is r-bridge's DOTS_PARAMS (and `columns`)."""
    source = (ROOT / "r-bridge/R/embed.R").read_text()
    taken = re.findall(r'"(\w+)"', source.split("DOTS_PARAMS <- c(", 1)[1].split(")", 1)[0])
    assert "max_length" in taken
    said = (ROOT / "docs/r.md").read_text().split("`...` takes the other parameters", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"`(\w+)`", said)) >= {*taken, "columns"}


PUBLIC_CALLABLES = ["bertfeat.BertEmbedder", "bertfeat.probe", "bertfeat.arrow.ArrowFeaturizer",
                    "bertfeat.union.MissingText", "bertfeat.ray.embed_dataset", "bertfeat.spark.embed_dataframe",
                    "bertfeat.files.embed_file"]


@pytest.mark.parametrize("path", PUBLIC_CALLABLES)
def test_the_docstring_documents_every_parameter_with_its_default(path):
    """``help()`` is where many users read the parameters: the numpydoc Parameters section of each public callable
    names every parameter (one entry may name several, ``a, b : ...``), and a ``default=`` it states is the
    signature's."""
    import inspect

    module, name = path.rsplit(".", 1)
    obj = getattr(importlib.import_module(module), name)
    doc = inspect.getdoc(obj)
    section = re.search(r"^Parameters\n-+\n(.*?)(?:^\w[\w ]*\n-+\n|\Z)", doc, flags=re.S | re.M)
    assert section, f"{path} has no Parameters section"
    entries = re.findall(r"^(\w+(?:, \w+)*) :(.*)$", section.group(1), flags=re.M)
    documented = {n for names, _ in entries for n in names.split(", ")}
    signature = inspect.signature(obj).parameters
    params = {n for n, p in signature.items() if n != "self" and not n.startswith("_")
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    assert params - documented == set(), f"{path} leaves undocumented: {sorted(params - documented)}"
    assert documented - params == set(), f"{path} documents no such parameter: {sorted(documented - params)}"
    for names, rest in entries:
        stated = re.search(r"default=(.+)$", rest)
        if stated:
            for n in names.split(", "):
                default = signature[n].default
                assert stated.group(1).strip() in (repr(default), f'"{default}"', str(default)), (n, stated.group(1))


def test_the_readmes_layout_names_every_module():
    """The README's Layout section is the map of bertfeat/ ('one module per idea'): every module is on it."""
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1]
    modules = sorted(p.name for p in (ROOT / "bertfeat").glob("*.py")
                     if p.name not in ("__init__.py", "__main__.py", "_version.py"))
    assert "encode.py" in modules
    assert [m for m in modules if f"`{m}`" not in layout] == []


def test_the_python_cache_operations_docs_cache_md_names_refuse_what_the_commands_refuse(tmp_path):
    """docs/cache.md gives the Python form of `bertfeat cache info|compact|clear`, which refuse a directory that is
    not a cache and never create one; the form it shows does the same."""
    from bertfeat.exceptions import CacheError

    text = " ".join((ROOT / "docs/cache.md").read_text().split())
    call = re.search(r"`bertfeat\.cache\.(open_cache\(DIR[^)]*\))\.info\(\)`", text).group(1)
    from bertfeat.cache import open_cache  # noqa: F401 (the call below names it)

    mistyped = tmp_path / "not-a-cache"
    with pytest.raises(CacheError, match="not-a-cache"):
        eval(call, {"open_cache": open_cache, "DIR": mistyped}).info()
    assert not mistyped.exists()


def test_the_readmes_versions_paragraph_names_the_floors_pyproject_declares():
    """Users on a platform's pinned versions read the floors in the README: they must be the ones pip enforces."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    deps = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    floors = dict(re.findall(r'^\s*"([a-z-]+)>=([0-9.]+)"', deps, re.M))
    readme = (ROOT / "README.md").read_text()
    paragraph = readme.split("**Versions.**", 1)[1].split("\n\n", 1)[0]
    python = re.search(r'requires-python = ">=([0-9.]+)"', pyproject).group(1)
    assert f"Python >= {python}" in paragraph
    for name in ("torch", "transformers", "sentence-transformers", "scikit-learn", "pandas", "pyarrow", "numpy"):
        assert f"{name} >= {floors[name]}" in paragraph, name


def test_the_gpu_figures_docs_performance_md_quotes_are_the_recorded_runs():
    """docs/performance.md said "no GPU measurement is recorded yet" of a text's vector alone against in a batch in
    half precision, and that gpu_check takes about 5 minutes, after benchmarks/RESULTS.md recorded two runs (an
    H200, 95 s, and an H100, 88 s). The figures it quotes now are each run's rows."""
    doc = " ".join((ROOT / "docs/performance.md").read_text().split())
    results = (ROOT / "benchmarks/RESULTS.md").read_text()
    assert "no GPU measurement" not in doc
    said = re.search(r"max abs diff of ([\d.e-]+) in bfloat16 and ([\d.e-]+) in float16", doc)
    runs = re.findall(r"^\| bert-base (bfloat16|float16): a text alone vs in a batch, min cosine \| (.*?) \|.*"
                      r"max abs diff ([\d.e+-]+);", results, flags=re.M)
    assert said and {dtype for dtype, _, _ in runs} == {"bfloat16", "float16"} and len(runs) >= 4
    for dtype, cosine, diff in runs:
        assert cosine == "1 (rounded)"
        assert float(f"{float(diff):.1e}") == float(said.group(1 if dtype == "bfloat16" else 2)), (dtype, diff)
    seconds = [int(s) for s in re.findall(r"benchmarks\.gpu_check`, at \w+ \((\d+) s\)|^(\d+) s in all\.", results,
                                          flags=re.M) for s in s if s]
    stated = int(re.search(r"benchmarks\.gpu_check +# (\d+) s on", doc).group(1))
    assert seconds and all(abs(s - stated) <= 10 for s in seconds), (seconds, stated)


def _documented_command_lines():
    """(doc, line) for each whole ``bertfeat ...`` command in a code block of the README, docs/*.md (the generated
    reference aside) and the shell scripts users copy from, continuation lines joined and comments dropped."""
    sources = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")
                                    if p.name != "cli-help.md"), "examples/cli_featurize.sh", "scripts/main.sh"]
    for doc in sources:
        text = (ROOT / doc).read_text(encoding="utf-8")
        blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S) if doc.endswith(".md") else [text]
        for block in blocks:
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                found = re.match(r"\s*(?:\S+ -m )?bertfeat ((?:embed|info|cache|probe)\b.*)", line)
                if found:  # what follows two spaces and a word or a '#' says what the command does
                    yield doc, re.split(r"\s{2,}(?=#|[a-z])", found.group(1))[0].strip()


def test_every_command_line_the_docs_show_is_one_the_parser_takes():
    """Users copy the docs' command lines: each takes only options that exist, with values they accept (parsed, not
    run; the synopsis blocks, in brackets, are test_cli_help.py's)."""
    import argparse
    import contextlib
    import io
    import shlex

    from bertfeat.cli import build_parser

    parser = build_parser()
    stack = [parser]
    while stack:  # the docs write options whole: argparse would take '--prompt' for '--prompt-name'
        p = stack.pop()
        p.allow_abbrev = False
        stack += [c for a in p._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices.values()]
    checked = []
    for doc, command in _documented_command_lines():
        if "[" in command.replace("'local[4]'", "") or "..." in command:  # a synopsis, or a command left open
            continue
        words = shlex.split(command.replace('"$OUT"', "f.parquet").replace('"$WORK/reviews.csv"', "r.csv"))
        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                parser.parse_args(words)
        except SystemExit:
            pytest.fail(f"{doc} shows a command bertfeat refuses: bertfeat {command}\n{err.getvalue()}")
        checked.append(doc)
    assert {"README.md", "docs/ray.md", "docs/spark.md", "examples/cli_featurize.sh", "scripts/main.sh"} <= set(checked)
    assert len(checked) >= 12


def test_every_statement_of_the_master_a_spark_job_takes_by_default_names_a_connect_servers_first():
    """Without ``--master`` (``master=``) a Spark job runs on the Spark Connect server ``SPARK_REMOTE`` names before
    it asks for spark-submit's master, else ``local[*]`` (``spark_session._job_master``; docs/spark.md). The epilog of
    ``bertfeat embed --help`` and ``help(bertfeat.spark.embed_files)`` said "spark-submit's master, or local[*]": a
    user with ``SPARK_REMOTE`` set read that the job would run here, where it ran on the server."""
    from bertfeat.cli import build_parser
    from bertfeat.cli.embed import EXAMPLES
    from bertfeat.spark import embed_files

    embed = next(a for a in build_parser()._actions if a.dest == "command").choices["embed"]
    master_help = next(a.help for a in embed._actions if "--master" in a.option_strings)
    statements = {
        "embed --help's epilog": EXAMPLES.split("--engine spark runs on Spark", 1)[1].split("\n\n", 1)[0],
        "--master": master_help,
        "embed_files": embed_files.__doc__.split("``master`` is", 1)[1].split("Other parameters", 1)[0],
        "docs/cli.md": (ROOT / "docs/cli.md").read_text().split("`--engine spark` runs", 1)[1].split("reads CSV", 1)[0],
        "docs/spark.md": next(line for line in (ROOT / "docs/spark.md").read_text().splitlines()
                              if line.startswith("| `--master URL` |")),
    }
    for where, text in statements.items():
        text = " ".join(text.split())
        order = [text.find(said) for said in ("SPARK_REMOTE", "spark-submit", "local[*]")]
        assert -1 not in order and order == sorted(order), (where, text)


def test_docs_cli_md_names_every_csv_reading_option_of_embed_file_from_python():
    """docs/cli.md's "From Python" gives the command's Python form, ``embed_file(...)``, with its CSV reading options;
    it named ``delimiter=`` and ``infer_types=`` but not ``quoting=`` (``--quoting``, session 12's), so a database
    export read from Python took the option's default, CSV's quotes. Each keyword it names is one embed_file takes,
    and each CSV reading option (``files._CSV_OPTIONS``, those the engines refuse where no CSV is read) is named."""
    import inspect

    from bertfeat.files import _CSV_OPTIONS, embed_file

    text = " ".join((ROOT / "docs/cli.md").read_text().split("## From Python", 1)[1].split())
    call = re.search(r"`bertfeat\.files\.embed_file\((.*?)\)`", text).group(1)
    named = set(re.findall(r"(\w+)=\.\.\.", call))
    signature = inspect.signature(embed_file).parameters
    assert named <= set(signature), sorted(named - set(signature))
    assert "quoting" in _CSV_OPTIONS and set(_CSV_OPTIONS) <= set(signature)
    assert set(_CSV_OPTIONS) <= named, sorted(set(_CSV_OPTIONS) - named)


def test_docs_cli_md_says_each_csv_option_applies_to_csv_only():
    """docs/cli.md's Parquet section says which options apply to CSV only: it named `--delimiter` and
    `--infer-types`, not `--quoting`, which a parquet input refuses as well."""
    from bertfeat.files import _CSV_OPTIONS

    text = " ".join((ROOT / "docs/cli.md").read_text().split("### Parquet", 1)[1].split("## Output", 1)[0].split())
    sentence = next(s for s in text.split(". ") if "apply to CSV only" in s)
    said = {o.lstrip("-").replace("-", "_") for o in re.findall(r"`(--[a-z-]+)`", sentence)}
    assert said == set(_CSV_OPTIONS), sentence


def test_every_list_of_the_probes_fold_facts_says_what_copies_kept_together_false_means():
    """``result.folds["copies_kept_together"]`` (also in ``--json`` and R's ``p$folds``) is whether any texts were
    copies of one another; it is False where every text is distinct (``probe._text_groups`` is None), while copies
    are kept in one fold always. The docstring, docs/cli.md, docs/r.md and bf_probe()'s help listed the field by its
    name alone, which reads ``false`` as "copies were not kept together": each now says what False means."""
    from bertfeat import probe

    statements = {
        "help(probe)": probe.__doc__,
        "docs/cli.md": (ROOT / "docs/cli.md").read_text(),
        "docs/r.md": (ROOT / "docs/r.md").read_text(),
        "bf_probe.Rd": (ROOT / "r-bridge/man/bf_probe.Rd").read_text(),
        "R/probe.R": (ROOT / "r-bridge/R/probe.R").read_text(),
    }
    for where, text in statements.items():
        text = " ".join(text.replace("#'", " ").split())
        said = re.search(r"copies_kept_together(.{0,160})", text)
        assert said and "distinct" in said.group(1), (where, said and said.group(0))


# the public callables users call from the docs' Python, by the name a call spells them with
DOCUMENTED_CALLABLES = {
    "BertEmbedder": "bertfeat.BertEmbedder", "probe": "bertfeat.probe", "embed_file": "bertfeat.files.embed_file",
    "embed_dataset": "bertfeat.ray.embed_dataset", "embed_parquet": "bertfeat.ray.embed_parquet",
    "embed_dataframe": "bertfeat.spark.embed_dataframe", "embed_files": "bertfeat.spark.embed_files",
    "ArrowFeaturizer": "bertfeat.arrow.ArrowFeaturizer", "MissingText": "bertfeat.union.MissingText",
    "open_cache": "bertfeat.cache.open_cache",
}


def test_every_keyword_of_a_bertfeat_call_the_docs_show_is_one_it_takes():
    """docs/ray.md's and docs/spark.md's Python (and any block test_readme_python_block_runs does not run) cannot run
    here: each call to a public callable in a code block or inline code of the README, docs/*.md and examples/*.py is
    parsed, and each keyword it passes is a parameter of that callable, or a BertEmbedder parameter where it takes
    ``**params``. A parameter renamed leaves a doc a user copies from failing with 'unexpected keyword'."""
    import ast
    import inspect

    from bertfeat import BertEmbedder

    embedder = set(inspect.signature(BertEmbedder).parameters)
    docs = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
            *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").glob("*.py"))]
    seen, wrong = set(), []
    for doc in docs:
        text = (ROOT / doc).read_text(encoding="utf-8")
        pieces = (re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S) + re.findall(r"`([^`\n]*\w\([^`\n]*\))`", text)
                  if doc.endswith(".md") else [text])
        for piece in pieces:
            try:
                tree = ast.parse(piece)
            except SyntaxError:  # shell, R, output
                continue
            for node in ast.walk(tree):
                func = getattr(node, "func", None)
                name = getattr(func, "attr", None) or getattr(func, "id", None)
                if not isinstance(node, ast.Call) or name not in DOCUMENTED_CALLABLES:
                    continue
                module, attr = DOCUMENTED_CALLABLES[name].rsplit(".", 1)
                params = inspect.signature(getattr(importlib.import_module(module), attr)).parameters
                takes = set(params) | (embedder if any(p.kind == p.VAR_KEYWORD for p in params.values()) else set())
                wrong += [f"{doc}: {name}({kw.arg}=...)" for kw in node.keywords if kw.arg and kw.arg not in takes]
                seen.add((doc, name))
    assert wrong == []
    assert {doc for doc, _ in seen} >= {"README.md", "docs/ray.md", "docs/spark.md", "docs/cache.md"}, sorted(seen)
    assert {name for _, name in seen} >= {"BertEmbedder", "probe", "embed_dataset", "embed_parquet", "embed_dataframe"}


def test_the_families_the_docs_say_run_the_fused_cpu_pass_are_the_ones_it_takes():
    """The README's Speed section and docs/performance.md name the families bertfeat runs its own CPU forward pass for;
    they are ``architectures._FAMILIES``: a family added there, or taken out, without the docs following fails here."""
    from bertfeat.architectures import _FAMILIES

    shown = {"bert": "BERT", "roberta": "RoBERTa", "xlm-roberta": "XLM-RoBERTa", "camembert": "CamemBERT",
             "distilbert": "DistilBERT", "mpnet": "MPNet"}  # model_type -> the name the docs write
    assert set(shown) == set(_FAMILIES), "name each family of architectures._FAMILIES as the docs write it"
    statements = {
        "README.md": (ROOT / "README.md").read_text().split("## Speed", 1)[1].split("(fused oneDNN", 1)[0],
        "docs/performance.md": (ROOT / "docs/performance.md").read_text().split("A leaner encoder forward pass on CPU",
                                                                              1)[1].split("bertfeat runs", 1)[0],
    }
    for where, text in statements.items():
        text = " ".join(text.split())
        named = {name for name in re.findall(r"\b(?:XLM-)?[A-Z][A-Za-z]*BERT[a-z]*\b|\bMPNet\b|\bBERT\b", text)}
        assert named == set(shown.values()), (where, sorted(named))


def test_every_test_the_test_suites_readme_names_exists():
    """tests/README.md's "Bugs users fear" table names the test that catches each bug (``test_x.py::test_name``, then
    ``::test_other`` of the same file); a test renamed since (two were: a cache test and a Spark test whose subject
    moved from the API to the command) left the table naming one that does not exist."""
    text = (ROOT / "tests" / "README.md").read_text(encoding="utf-8")
    defined = {p.name: set(re.findall(r"^(?:    )?def (test_\w+)", p.read_text(encoding="utf-8"), flags=re.M))
               for p in (ROOT / "tests").glob("test_*.py")}
    named, current = [], None
    for file, name, alone in re.findall(r"`(test_\w+\.py)?::(test_\w+)(?:\[[^\]`]*\])?`|`(test_\w+\.py)`", text):
        current = file or alone or current
        if name and current:
            named.append((current, name))
    assert len(named) > 100
    assert [f"{file}::{name}" for file, name in named if name not in defined.get(file, ())] == []


def test_every_statement_of_what_keeps_an_embed_dataset_in_order_names_the_rays_that_read_the_processes_context():
    """A Dataset from ``bertfeat.ray.embed_dataset`` keeps its rows in order where its ``DataContext`` says
    ``preserve_order``: the Dataset's own from Ray 2.54 on, the process's ``DataContext.get_current()`` before
    (``ray.RUNS_ON_ITS_OWN_CONTEXT``; the extra takes Ray 2.11 on). docs/ray.md's Versions section said so, while
    ``help(embed_dataset)`` and docs/ray.md's own paragraph on it named the Dataset's context alone: on Ray 2.11 to
    2.53 a user who set it there, as told, got rows out of order."""
    from bertfeat.ray import RUNS_ON_ITS_OWN_CONTEXT, embed_dataset

    version = ".".join(map(str, RUNS_ON_ITS_OWN_CONTEXT))
    statements = {
        "help(embed_dataset)": embed_dataset.__doc__,
        "docs/ray.md": (ROOT / "docs/ray.md").read_text().split("`embed_dataset` takes every", 1)[1],
    }
    for where, text in statements.items():
        text = " ".join(text.split())
        said = text.split("order only when", 1)[1][:300]
        assert version in said and "get_current()" in said, (where, said)


def _baked_steps():
    """Each ``step_bert_embed(<column>, ...)`` that an R example of the docs bakes, with the columns the comment on
    its ``bake(`` line names: (where, column, pooling, names in the comment)."""
    sources = {"README.md": (ROOT / "README.md").read_text(), "docs/r.md": (ROOT / "docs/r.md").read_text()}
    sources.update({str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "r-bridge/R").glob("*.R"))})
    found = []
    for where, text in sources.items():
        for step, rest in re.findall(r"step_bert_embed\((\w+)([^\n]*(?:\n[^\n]*){0,3}?\n[^\n]*bake\([^\n]*)", text):
            comment = rest.rsplit("bake(", 1)[1].split("#", 1)[1]
            pooling = re.search(r'pooling = "([\w+]+)"', rest)
            found.append((where, step, pooling.group(1) if pooling else "cls+mean",
                          re.findall(r"\b\w+_(?:cls|mean|max)_\d+\b", comment)))
    return found


def test_every_baked_steps_columns_the_docs_name_are_the_ones_its_pooling_makes():
    """(found by a docs against the program hunt, 2026-11-27, session 15) docs/r.md's recipes step asked for
    pooling = "mean" and said bake() gives `review_cls_000, ..., review_mean_383`: it gives review_mean_000 to
    review_mean_383, no CLS column. The first and last columns an R example's comment names are the first and last
    features of the step's pooling (default "cls+mean") on the default model (the names Python gives)."""
    from bertfeat.models import resolve_model

    hidden = resolve_model("default").hidden_size
    steps = _baked_steps()
    assert {where for where, *_ in steps} >= {"README.md", "docs/r.md", "r-bridge/R/step_bert_embed.R"}, steps
    for where, column, pooling, named in steps:
        made = [f"{column}_{p}_{i:03d}" for p in pooling.split("+") for i in range(hidden)]
        assert named and named[0] == made[0] and named[-1] == made[-1], (where, pooling, named, made[0], made[-1])
