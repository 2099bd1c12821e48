"""bertfeat.spelling: a message written once in Python's spelling, read on the command line in the command's flags."""

import re

import pytest

from bertfeat.cli import _command_parser, build_parser
from bertfeat.spelling import for_command_line


def parser_of(*command):
    parser = build_parser()
    args, _ = parser.parse_known_args([*command, *{"embed": ["in.csv", "--text-col", "t", "--out", "o.parquet"],
                                                   "probe": ["in.csv", "--text-col", "t", "--label-col", "y"],
                                                   "cache": ["d"], "info": []}[command[0]]])
    return _command_parser(parser, args)


@pytest.mark.parametrize("command, python, cli", [
    # a choice, a number, a path, the value of an option that names text
    (["embed"], "row 3 is missing (None) and missing='error'. Pass missing='zero' for a zero vector.",
     "row 3 is missing (None) and --missing error. Pass --missing zero for a zero vector."),
    (["embed"], "max_length=3 is not valid: expected an int from 4 to 64, or max_length=None for that limit.",
     "--max-length 3 is not valid: expected an int from 4 to 64, or no --max-length for that limit."),
    (["embed"], "model='/models/my bert' is not a local directory; pass model='default'.",
     "--model '/models/my bert' is not a local directory; pass --model default."),
    (["embed"], "pass prefix='query: ' instead", "pass --prefix 'query: ' instead"),
    (["embed"], "the header holds ';': pass delimiter=';', or delimiter='\\t'.",
     "the header holds ';': pass --delimiter ';', or --delimiter tab."),
    # a flag alone, a list, negative layers (which the command reads only after =), a bare name
    (["embed"], "output 'o.parquet' exists; pass overwrite=True to replace it.",
     "output 'o.parquet' exists; pass --overwrite to replace it."),
    (["embed"], "layers=[-2, -1] names layer 5; pass layers=[1, 2].",
     "--layers=-2,-1 names layer 5; pass --layers 1,2."),
    (["embed"], "prompt_name='q' is not a prompt of the model; pass prefix= instead.",
     "--prompt-name q is not a prompt of the model; pass --prefix instead."),
    (["embed"], "drop infer_types= to read kept columns as written",
     "drop --infer-types to read kept columns as written"),
    # the API's names for options the command names otherwise
    (["embed"], "batch_rows=0 is not valid; checkpoint_seconds=-1 neither", "--chunk-rows 0 is not valid; "
     "--checkpoint-every=-1 neither"),
    (["embed"], "then pass text_cols='text' and quoting='none'.", "then pass --text-col text and --quoting none."),
    (["probe"], "pass baseline=False and unions=0 to score the embeddings alone; lower cv= or add texts.",
     "pass --no-baseline and --unions 0 to score the embeddings alone; lower --cv or add texts."),
    (["probe"], "model=['default', '/m'] repeats; random_state=-1 is not valid",
     "--model default --model /m repeats; --random-state=-1 is not valid"),
    # the command's own argument, named as its --help names it
    (["info"], "model='nope/x' is not in the cache. Pass model='default' for the bundled model.",
     "MODEL nope/x is not in the cache. Pass MODEL default for the bundled model."),
    # said in both spellings (as messages were written before): once, as the flag
    (["embed"], "pass --overwrite (overwrite=True) to replace it; pass task='x' (--task x)",
     "pass --overwrite to replace it; pass task='x' (--task x)"),
    (["probe"], "pass task='regression' (--task regression); lower cv (--cv)", "pass --task regression; lower --cv"),
    # lists of names, Python's advice for a pickled pipeline and Python code left out
    (["embed"], "column(s) ['nope'] not found; it has columns ['id', 'review'].",
     "column(s) 'nope' not found; it has columns 'id', 'review'."),
    (["embed"], "cache_dir='/c' cannot be made. A pickled pipeline keeps the cache path of the machine it was fitted "
     "on. Pass a writable directory on this machine (est.set_params(cache_dir=...), or <step>__cache_dir=... for a "
     "Pipeline), or cache_dir=None to run without a cache.",
     "--cache-dir /c cannot be made. Pass a writable directory on this machine, or no --cache-dir to run without a "
     "cache."),
    (["embed"], "constant. Pass pooling='mean' (or 'max'), which pool every token of the text (to the probe: "
     "poolings=('mean', 'max')).", "constant. Pass --pooling mean (or 'max'), which pool every token of the text."),
    (["probe"], "Pass task='regression', or give the classes as strings (y.astype(str)) to score them as classes.",
     "Pass --task regression, or give the classes as strings to score them as classes."),
    (["probe"], "class(es) 0 (2) of the labels y have fewer members than the 5 folds; lower cv= to at most 2.",
     "class(es) 0 (2) of the labels (--label-col) have fewer members than the 5 folds; lower --cv to at most 2."),
    # (scikit-learn and R hunt, session 16) the probe's texts by the command's own name, not Python's argument
    (["probe"], "the probe would rank noise: check that texts is the column of texts you mean, or drop the rows",
     "the probe would rank noise: check that --text-col names the column of texts you mean, or drop the rows"),
    # what the command has no flag for stays as Python writes it; quoted texts are the user's own words
    (["embed"], "trust_remote_code=True runs the model's code", "trust_remote_code=True runs the model's code"),
    (["embed"], "row 2 ('set missing=None') is blank", "row 2 ('set missing=None') is blank"),
    (["cache", "info"], "cache_dir='/c' is not a cache", "DIR /c is not a cache"),
    # an alternative that leaves out the command's own argument: none for bertfeat cache, whose DIR is the cache
    (["cache", "info"], "cache_dir='' is empty; pass a directory path, or cache_dir=None for no cache.",
     "DIR '' is empty; pass a directory path."),
    (["embed"], "cache_dir='' is empty; pass a directory path, or cache_dir=None for no cache.",
     "--cache-dir '' is empty; pass a directory path, or no --cache-dir for no cache."),
    (["info"], "cache_dir='/c' is not a cache", "cache_dir='/c' is not a cache"),
    # (mutation testing hunt, 2026-11-27, session 14) an on/off flag turned off, and one named as its negation; a
    # command's argument named without a value; a repeated option's value that begins with a dash, which argparse
    # reads as another option after a space; another program's flag after a word is left as written
    (["probe"], "with baseline=True and normalize=False", "with no --no-baseline and no --normalize"),
    (["embed"], "overwrite=False keeps it", "no --overwrite keeps it"),
    (["info"], "pass model= to describe another", "pass MODEL to describe another"),
    (["embed"], "text_cols=['-x', 'b'] not found", "--text-col=-x --text-col b not found"),
    (["embed"], "export it with psql's csv (--csv) output", "export it with psql's csv (--csv) output"),
    # a quoted text that is no Python value (Python writes an empty text as ''): CSV's doubled quote, as written
    (["embed"], "write.csv(), which names the row names' column \"\").", "write.csv(), which names the row names' "
     "column \"\")."),
    # the configuration variable and the dotted name or URL query that only end with an option's name
    (["embed"], "set config.max_length=512, see https://example.org/embed?stride=0&max_length=8",
     "set config.max_length=512, see https://example.org/embed?stride=0&max_length=8"),
    (["embed"], "names the same layer twice (as [-1, -1])", "names the same layer twice (as -1,-1)"),
    # a bare name before a comma, a full stop or the end; a number in exponent form; the API's keep_cols
    (["embed"], "pass prompt_name=, or prefix=. Or drop infer_types=", "pass --prompt-name, or --prefix. Or drop "
     "--infer-types"),
    (["embed"], "gpus_per_worker=1e-05 is not a share", "--gpus-per-worker 1e-05 is not a share"),
    (["embed"], "keep_cols=['id', 'id'] names a column twice", "--keep-col id --keep-col id names a column twice"),
])
def test_a_python_message_reads_in_the_commands_flags(command, python, cli):
    assert for_command_line(python, parser_of(*command)) == cli


def test_without_a_command_the_message_is_as_python_wrote_it():
    said = "missing='error'. Pass missing='zero'."
    assert for_command_line(said, None) == said


# a Python keyword argument as the API's messages write one
PYTHON_KEYWORD = re.compile(r"(?<![\w.\-])[a-z_]+=(?:'|\[|True|False|None|\d)")


@pytest.fixture
def files(tmp_path):
    import pandas as pd

    pd.DataFrame({"id": [1, 2, 3, 4], "review": ["a cat", "the dog", None, "a dog ran"], "y": [0, 1, 0, 1]}).to_csv(
        tmp_path / "m.csv", index=False)
    return tmp_path


@pytest.mark.parametrize("extra, said", [
    ([], "row 2 of column 'review' is missing (None) and --missing error. Pass --missing zero for a zero vector, "
         "--missing nan for a row of NaN, or fill the missing texts first."),
    (["--pooling", "foo"], "--pooling foo is not valid: unknown pooling 'foo'; valid choices are 'cls', 'mean', "
                           "'max', alone or joined with '+' (for example 'cls+mean')."),
    (["--layers=1,1"], "--layers 1,1 names the same layer twice (as 1,1); name each layer once."),
    (["--max-length", "2"], "--max-length 2 is not valid: expected an int from 4 to the model's limit of 64 tokens, "
                            "or no --max-length for that limit."),
    (["--long-text", "chunk", "--max-length", "8", "--stride", "9"],
     "--stride 9 is not valid: expected an int from 0 to 5 (tokens shared by consecutive windows of --max-length 8), "
     "or no --stride for a quarter of the window."),
    (["--device", "gpu"], "--device gpu is not valid: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'."),
    (["--prompt-name", "query"], "--prompt-name query is not a prompt of --model "),
    (["--text-col", "nope"], "column(s) 'nope' not found in "),
    (["--delimiter", ";"], "The header reads as one column holding ',': if the file is separated by ',', pass "
                           "--delimiter ','."),
])
def test_the_apis_refusals_reach_the_command_line_in_its_flags(tiny_bert, files, capsys, extra, said):
    """`bertfeat embed` said `missing='zero'`, `pooling='foo'`, `max_length=2 ... or None` and lists as Python writes
    them: the API's words, which a command line user cannot type."""
    from bertfeat.cli import main

    text_col = [] if "--text-col" in extra else ["--text-col", "review"]
    assert main(["embed", str(files / "m.csv"), *text_col, "--out", str(files / "o.parquet"), "--model", tiny_bert,
                 "--quiet", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertfeat embed: error: ") and said in err, err
    assert not PYTHON_KEYWORD.search(err) and "[" not in err, err


@pytest.mark.parametrize("command", ["embed", "probe"])
def test_the_command_line_names_a_tab_delimiter_by_its_own_word_tab(tiny_bert, tmp_path, capsys, command):
    """`--delimiter tab` is the command's word for a tab (its --help: "'tab' or '\\t' for a tab"), yet its refusals
    wrote one as bash's `$'\\t'`: `--delimiter ab is not valid: ... (',' or $'\\t' or ';')`, and a TSV named .csv
    "reads as one column holding $'\\t': if the file is separated by $'\\t', pass --delimiter tab". One word now."""
    from bertfeat.cli import main

    tabs = tmp_path / "tabs.csv"
    tabs.write_text("id\ttext\ty\n1\ta cat\t0\n2\ta dog\t1\n")
    args = ["--out", str(tmp_path / "o.parquet"), "--quiet"] if command == "embed" else ["--label-col", "y"]
    for extra, said in [
        (["--delimiter", "ab"], "--delimiter ab is not valid: expected one ASCII character other than a quote or a "
                                "line break (',' or ';', or --delimiter tab for a tab)."),
        ([], "The header reads as one column holding a tab: if the file is separated by tabs, pass --delimiter tab."),
    ]:
        assert main([command, str(tabs), "--text-col", "text", "--model", tiny_bert, *args, *extra]) == 2
        err = capsys.readouterr().err
        assert err.rstrip().endswith(said) and "\\t" not in err.replace("$'id\\ttext\\ty'", ""), err


@pytest.mark.parametrize("command", ["embed", "probe"])
def test_every_refusal_that_names_a_delimiter_names_a_tab_in_words(tiny_bert, tmp_path, capsys, command):
    """(found by a CSV leftovers hunt, 2026-11-27, session 16) session 15 named a tab `tab` in two refusals; two more
    show the delimiter, by Python's repr: psql's unaligned output split at a value's tab ("a value holding '\\t' is
    split into two") and a ragged row of a file that quotes nothing ("holds the delimiter ('\\t')"), which the command
    line wrote as bash's `$'\\t'` beside its own word `tab`, and R as "\\t". Each now says "a tab", on each surface."""
    from bertfeat._r import r_advice
    from bertfeat.cli import main
    from bertfeat.readers import InputReader

    psql = tmp_path / "psql.tsv"  # psql -A -F $'\t': its footer last, a value's tab split
    psql.write_bytes(b"id\ttext\ty\n1\ta cat\t0\n2\ta\tdog\t1\n3\tan owl\t0\n(3 rows)\n")
    bare = tmp_path / "bare.tsv"  # R's write.table(sep = "\t", quote = FALSE): a value's tab split
    bare.write_bytes(b"id\ttext\ty\n1\ta cat\t0\n2\ta\tdog\t1\n3\tan owl\t0\n")
    args = ["--out", str(tmp_path / "o.parquet"), "--quiet"] if command == "embed" else ["--label-col", "y"]
    for src, quoting, said in [
            (psql, [], "which quotes no value, so a value holding a tab is split into two; "),
            (bare, [], "so where a value there holds the delimiter (a tab) or a line break, it was split: "),
            (bare, ["--quoting", "none"], "so where a value there holds the delimiter (a tab) or a line break, it "
                                          "was split: ")]:
        with pytest.raises(ValueError) as info:
            list(InputReader(str(src), ["id", "text", "y"], 10, ["text"], quoting="none" if quoting else None).batches())
        assert said in str(info.value) and said in r_advice(str(info.value)), str(info.value)
        assert "'\\t'" not in str(info.value) and '"\\t"' not in r_advice(str(info.value))
        assert main([command, str(src), "--text-col", "text", "--model", tiny_bert, *args, *quoting]) == 2
        err = capsys.readouterr().err
        assert said in err and "$'\\t'" not in err, err


@pytest.mark.parametrize("command", ["embed", "probe"])
def test_sql_a_refusal_gives_is_written_as_sql_on_every_surface(tiny_bert, tmp_path, capsys, command):
    """(found by a CSV leftovers hunt, 2026-11-27, session 16) the refusals that name MySQL's clauses quote SQL's
    literals (LINES TERMINATED BY '\\r\\n', ENCLOSED BY '"'), which the command line rendered as a shell value, as it
    renders a quoted path ("LINES TERMINATED BY $'\\r\\n'": no SQL), and R as an R string ("\\r\\n", "\\""). The SQL is
    now kept as written on each surface; the user's own texts beside it are rendered as before."""
    from bertfeat._r import r_advice
    from bertfeat.cli import main
    from bertfeat.readers import InputReader

    lone_lf = tmp_path / "outfile.tsv"  # INTO OUTFILE ... LINES TERMINATED BY '\r\n': a text's LF as written
    lone_lf.write_bytes(b"id\ttext\ty\r\n1\ttwo\nlines\t0\r\n2\tok\t1\r\n")
    cr = tmp_path / "cr.tsv"  # the same export, a text's CR after a backslash
    cr.write_bytes(b"id\ttext\ty\r\n1\ta\\\rb\t0\r\n2\tok\t1\r\n")
    escaped = tmp_path / "escaped.csv"  # ... ENCLOSED BY '"': a text's quote after a backslash
    escaped.write_bytes(b'"id","text","y"\n"1","say \\"hi\\" now","0"\n"2","x" y","1"\n')
    args = ["--out", str(tmp_path / "o.parquet"), "--quiet"] if command == "embed" else ["--label-col", "y"]
    for src, sql in [(lone_lf, "LINES TERMINATED BY '\\r\\n' writes"), (cr, "LINES TERMINATED BY '\\r\\n' writes"),
                     (escaped, "ENCLOSED BY '\"' does too")]:
        with pytest.raises(ValueError) as info:
            list(InputReader(str(src), ["id", "text", "y"], 10, ["text"]).batches())
        assert sql in str(info.value) and sql in r_advice(str(info.value)), r_advice(str(info.value))
        assert main([command, str(src), "--text-col", "text", "--model", tiny_bert, *args]) == 2
        err = capsys.readouterr().err
        assert sql in err and "--quoting" in err, err
    assert r_advice("pass quoting='csv' for 'f.csv', as MySQL's ENCLOSED BY '\"' and 'x'") == (
        'pass quoting = "csv" for "f.csv", as MySQL\'s ENCLOSED BY \'"\' and "x"')


def test_the_apis_warnings_reach_the_command_line_in_its_flags(tiny_bert, files, monkeypatch):
    """The warning lines too: `bertfeat embed: warning: model='...' defines prompts ... Pass prompt_name= (or
    prefix=)`."""
    import json
    import shutil
    import warnings

    import bertfeat.prompts
    from bertfeat.cli import main

    model = shutil.copytree(tiny_bert, files / "with prompts")
    (model / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    monkeypatch.setattr(bertfeat.prompts, "_NOTED", set())
    shown = []
    with warnings.catch_warnings():  # as the command line shows a warning where no test records it
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", lambda message, category, filename, lineno, file=None,
                            line=None: shown.append(warnings.formatwarning(message, category, filename, lineno, line)))
        assert main(["embed", str(files / "m.csv"), "--text-col", "review", "--out", str(files / "o.parquet"),
                     "--model", str(model), "--missing", "zero", "--quiet"]) == 0
    assert shown == [f"bertfeat embed: warning: --model '{model}' defines prompts that its authors put before texts: "
                     "'query' ('query: '). Pass --prompt-name (or --prefix) to use one; without one, texts are "
                     "embedded as they are.\n"]


def test_the_command_lines_quoted_texts_are_quoted_as_a_shell_reads_them():
    """A path a message quotes is pasted back into a shell: in Python's quotes, "/data/it's $HOME.parquet" named the
    user's home folder, 'C:\\\\runs' doubled its backslashes and '/data/a\\tb.csv' read as a backslash and a t (moved
    here with the command line's spelling from R's bf_embed_file(), which now reads R's quotes)."""
    import subprocess

    def shell_reads(shell, word):
        return subprocess.run([shell, "-c", f"printf '%s' {word}"], capture_output=True, check=True,
                              env={"HOME": "/home/u", "LANG": "C.UTF-8"}).stdout.decode()

    parser = parser_of("embed")
    for path in ("/data/it's $HOME.parquet", "C:\\runs\\o.parquet", "/data/a\tb.csv", "/data/caf\u00e9 `x`.csv",
                 "/data/\u200bzero.csv", "o.parquet", "/data/it's \"so\".csv"):
        said = for_command_line(f"output {path!r} exists; pass overwrite=True to replace it.", parser)
        head, tail = "output ", " exists; pass --overwrite to replace it."
        assert said.startswith(head) and said.endswith(tail), said
        quoted = said[len(head):-len(tail)]
        # a character a line cannot show (a tab, U+200B) in bash's $'...'
        shell = "bash" if quoted.startswith("$'") else "sh"
        assert (shell == "bash") == (not path.isprintable()) and quoted.isprintable(), quoted
        assert shell_reads(shell, quoted) == path, (path, quoted)
    # pyarrow's own words (not Python's repr of a text) read alike
    said = "in.csv has a malformed header: ';' expected after '\"'."
    assert for_command_line(said, parser) == said
    # a hive partition's folder is no option (bertfeat embed --keep-col year on a folder of year=2024/ files)
    said = "column(s) ['year'] not found; 'year' is in the names of folders (year=2024/), not in the files"
    assert for_command_line(said, parser) == "column(s) 'year' not found; 'year' is in the names of folders " \
                                             "(year=2024/), not in the files"


def test_the_csv_refusals_tell_a_command_line_user_to_double_quotes_as_csv_does(tiny_bert, files, capsys):
    """(mutation testing hunt, 2026-11-27, session 14) The refusals of a CSV quote left open or closed early told a
    command line user to double each quote as '' (the Python message's "" taken for Python's empty text and quoted
    for a shell), and the refusal of MySQL's \\" wrote its default ESCAPED BY '\\\\' (MySQL's backslash) as
    '\\', which MySQL reads as a quote escaped, its text never closed."""
    from bertfeat.cli import main

    src = files / "outfile.csv"
    src.write_bytes(b'id,text\n1,\\N\n2,"a \\"quoted\\" word"\n')
    opened = files / "open.csv"
    opened.write_text('id,text\n1,"open\n2,b\n')
    said = []
    for path in (src, opened):
        assert main(["embed", str(path), "--text-col", "text", "--out", str(files / "o.parquet"), "--model",
                     tiny_bert, "--quiet"]) == 2
        said.append(capsys.readouterr().err)
    assert said[0].endswith(  # (the CSV writers hunt's R and pandas hints, merged beside this test, now word for word)
        "double each quote inside it (\"\"), or remove a stray quote at line 3. A quote there is escaped with a "
        "backslash (\\\"), which CSV does not do (it doubles a quote inside a quoted value): R's write.table() writes "
        "one so by default (qmethod = \"escape\"): write the file with write.csv() or write.table(..., qmethod = "
        "\"double\"); MySQL's SELECT ... INTO OUTFILE ... ENCLOSED BY '\"' does too (its default ESCAPED BY, a "
        "backslash, escapes quotes and backslashes): pass --quoting csv-backslash, which reads its escapes as MySQL's "
        "LOAD DATA does; so do pandas' to_csv and Python's csv module with an escapechar and doublequote off, which "
        "escape a text's backslash too: pass --quoting csv-backslash for theirs as well, or write the file again "
        "without an escapechar.\n"), said[0]
    assert said[1].endswith("close the quote (or double it, \"\", inside a quoted value).\n"), said[1]


def test_a_path_the_locale_could_not_decode_is_given_back_as_its_bytes():
    """(mutation testing hunt, 2026-11-27, session 14) A file name that is no UTF-8 (a Latin-1 name under a UTF-8
    locale: Python reads its bytes as surrogates, caf\\udce9) is named in bash's $'...' by its bytes, which bash
    reads back as those bytes, and a tab or line break as bash writes them; no test read either word for word."""
    import subprocess

    parser = parser_of("embed")
    for path, shown in [("/data/caf\udce9.csv", "$'/data/caf\\xe9.csv'"),
                        ("/d/\udc80\udcff.csv", "$'/d/\\x80\\xff.csv'"),  # the first and last byte so read
                        ("/data/a\tb\nc\r.csv", "$'/data/a\\tb\\nc\\r.csv'")]:
        said = for_command_line(f"output {path!r} exists; pass overwrite=True to replace it.", parser)
        assert said == f"output {shown} exists; pass --overwrite to replace it."
        read = subprocess.run(["bash", "-c", f"printf '%s' {shown}"], capture_output=True, check=True).stdout
        assert read == path.encode("utf-8", "surrogateescape"), (path, read)


def _command_line_flags() -> set:
    import argparse

    found = set()

    def walk(parser):
        for action in parser._actions:
            found.update(s for s in action.option_strings if s.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)

    walk(build_parser())
    return found - {"--help", "--version"}


def test_no_message_the_api_raises_or_warns_names_a_flag_of_the_command_line():
    """(found by a review of session 13's merged work, 2026-11-27, session 13) The spelling hunt wrote every message
    once, in the API's spelling, for each surface to render; two were left naming a flag, which a Python user of
    embed_file and R's bf_embed_file() read as written: the mutation hunt's new refusal of escaped bytes that are no
    UTF-8 ('under --quoting backslash'), and the local engine's refusal of an output ending with a slash ('with
    --engine ray or spark'). Every string in a raise or warning of the package outside the command line's own modules
    is read for bertfeat's flags (other programs' flags, mysql --batch or psql --csv, are no bertfeat flag)."""
    import ast
    from pathlib import Path

    import bertfeat

    flags = _command_line_flags()
    package = Path(bertfeat.__file__).parent
    named = []
    for path in sorted(package.rglob("*.py")):
        if path.parent.name == "cli":  # the commands' own lines (bertfeat cache's) are the command line's
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            said = isinstance(node, ast.Raise) or (isinstance(node, ast.Call)
                                                   and ast.unparse(node.func).endswith("warn"))
            for part in ast.walk(node) if said else ():
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    named += [f"{path.name}:{part.lineno} {m.group(0)}" for m in
                              re.finditer(r"(?<![\w-])--[a-z][a-z-]*", part.value) if m.group(0) in flags]
    assert named == []
