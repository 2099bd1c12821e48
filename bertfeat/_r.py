"""The Python end of the R package: one call in, one contiguous buffer out.

Two traps of reticulate (seen with 1.28 and numpy 2) shape this module. numpy arrays do not convert to R
matrices, so the features leave as a ``bytearray`` of little-endian float32 in column-major order (every
reticulate turns a bytearray into an R raw vector, which R reads with ``readBin``). An ``NA`` in an R character
vector arrives as the string ``"NA"``, so R sends each column with an explicit missing mask and the texts under
the mask are replaced by None here: a missing value is never embedded as the text "NA".

A third trap is R's own BLAS. torch's CPU wheels export the BLAS symbols of their bundled MKL (``sgemm_``...), and
inside an R process the copies in R's libblas, loaded first, take precedence: on Debian that is the reference BLAS,
and every matrix product runs several times slower. Inside R, torch is therefore imported with RTLD_DEEPBIND, so
it binds to its own symbols first.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

import numpy as np

from bertfeat.embedder import BertEmbedder
from bertfeat.sources import input_found  # noqa: F401  (R's pre-check of bf_embed_file()'s input)
from bertfeat.spelling import (NUMBER_LIST, PYTHON_WORDS, QUOTED, QUOTED_OR_KEYWORD, QUOTED_TEXT, SCALAR, STRING,
                               STRING_LIST, keeping_sql, without_python_only)


# How torch was imported in this process: "deepbind" (by this module, inside R), "plain", or None (not yet).
torch_import = None


def _import_torch() -> None:
    """Import torch; inside an R process (reticulate's rpytools is loaded) with RTLD_DEEPBIND where it exists."""
    global torch_import
    if torch_import is not None:
        return
    if "torch" in sys.modules or "rpytools" not in sys.modules or not hasattr(os, "RTLD_DEEPBIND"):
        torch_import = "plain"
        import torch  # noqa: F401
        return
    flags = sys.getdlopenflags()
    sys.setdlopenflags(flags | os.RTLD_DEEPBIND)
    try:
        import torch  # noqa: F401
    finally:
        sys.setdlopenflags(flags)
    torch_import = "deepbind"


def _as_list(value) -> list:
    # reticulate turns a length-1 R vector into a Python scalar and a length-0 one into an empty list.
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _build_input(texts, missing_masks, column_names):
    columns = [_as_list(c) for c in _as_list(texts)]
    masks = [_as_list(m) for m in _as_list(missing_masks)]
    names = None if column_names is None else [str(n) for n in _as_list(column_names)]
    if len(masks) != len(columns) or (names is not None and len(names) != len(columns)):
        raise ValueError(
            f"got {len(columns)} text columns, {len(masks)} missing masks and "
            f"{'no' if names is None else len(names)} column names; expected one mask (and one name) per column."
        )
    values = []
    for j, (col, mask) in enumerate(zip(columns, masks)):
        if len(mask) != len(col):
            raise ValueError(f"column {j}: {len(col)} texts but a missing mask of length {len(mask)}.")
        values.append([None if m else t for t, m in zip(col, mask)])
    if names is None:
        if len(values) != 1:
            raise ValueError(f"without column names, pass exactly one text column (got {len(values)}).")
        return values[0]
    import pandas as pd

    # object dtype: keep None as the missing marker rather than let pandas infer a string dtype.
    return pd.DataFrame({n: pd.Series(v, dtype=object) for n, v in zip(names, values)})


def column_form_hint(absent, names) -> str:
    """R's refusal of a column not found gets this: where a name asked for is a column's name in another Unicode form
    (they print alike), why, and the name to pass as R writes it; "" otherwise (:func:`bertfeat.inputs.unicode_form_hint`,
    which R, without Unicode normalization of its own, cannot tell)."""
    from bertfeat.inputs import unicode_form_hint

    return r_advice(unicode_form_hint(_as_list(absent), _as_list(names), r=True)).strip()


def matrix_payload(X) -> tuple[bytearray, int, int]:
    """``(buffer, n_rows, n_cols)``: ``X`` as little-endian float32 bytes in column-major (R's) order.

    Examples
    --------
    >>> buf, n, d = matrix_payload(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> np.frombuffer(bytes(buf), dtype="<f4").tolist(), n, d
    ([1.0, 3.0, 2.0, 4.0], 2, 2)
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {X.shape}.")
    # The transpose of a C-contiguous copy is column-major, so R fills its matrix without a transpose.
    return bytearray(np.ascontiguousarray(X.T, dtype="<f4")), int(X.shape[0]), int(X.shape[1])


def _recording(fn, *args, **kwargs):
    """``(fn(*args, **kwargs), warnings)``: the warnings it raised as ``(category name, message)``, for R to re-issue
    as R warnings (left to Python, they are printed on the process's stderr, out of reach of R's handlers), their
    advice in R's syntax (:func:`r_advice`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    return result, _for_r(caught)


def _for_r(caught) -> list[tuple[str, str]]:
    """Recorded warnings as R re-issues them: ``(category name, message)``, the advice in R's syntax."""
    return [(w.category.__name__, r_advice(str(w.message))) for w in caught]


# The grammar of a message in Python's spelling is bertfeat.spelling's: its literals, name=value, quoted texts.
# a run of two or more quoted choices ("expected 'auto', 'cpu' or 'mps'"): as R writes them, "cls", "mean". One quoted
# text alone ("the text 'None'") is quoted as R quotes it (below).
_CHOICE_RUN = re.compile(rf"""(?<![\w'"])(?:{STRING})(?:(?:, | or )(?:{STRING}))+(?![\w'"])""")
_CLI_ASIDE = re.compile(r" \((?:--[a-z][a-z-]*(?: [^()\s]+)?(?:,? ?| or ))+\)")
# True, False and None standing alone ("cache_dir is None", "or None for that limit"), not inside a quoted text
_CONSTANT = re.compile(r"(?<![\w'\"])(True|False|None)(?![\w'\"])")
# a quoted text (kept as it is: a path, a prefix or a row's text of the user's, "/runs/None/f.csv", "set a=1"), or
# a constant, or a name=value
_QUOTED_OR_CONSTANT = re.compile(rf"""{QUOTED_TEXT}|{_CONSTANT.pattern}""")
# or a list of numbers standing alone ("the same layer twice (as [6, 5, 6])"), which R writes c(6, 5, 6)
_QUOTED_OR_NUMBERS = re.compile(rf"""{QUOTED_TEXT}|{NUMBER_LIST.pattern}""")


def _r_value(literal: str) -> str:
    if literal in ("True", "False", "None"):
        return {"True": "TRUE", "False": "FALSE", "None": "NULL"}[literal]
    if literal[0] in "[(":
        items = [_r_value(m.group(0)) for m in re.finditer(SCALAR, literal[1:-1])]
        return items[0] if len(items) == 1 else f"c({', '.join(items)})"
    if literal[0] == "'":  # Python's repr of a string without a single quote in it
        return '"' + literal[1:-1].replace("\\'", "'").replace('"', '\\"') + '"'
    return literal


def r_advice(message: str, names: dict | None = None) -> str:
    """A message of the Python side as an R user reads it: ``missing='zero'`` as ``missing = "zero"``, ``True``,
    ``None`` and lists in R's syntax (a list of choices ``['cls', 'mean']`` as ``"cls", "mean"``, a quoted text
    ``'f.csv'`` as ``"f.csv"``), a bare ``cache_dir=`` as `` `cache_dir` ``, and the command line's flags given beside
    the Python names dropped; ``names`` maps a Python name to the R function's argument where they differ.
    ``bf_embed_file()`` runs the command line, whose lines come in R's syntax too (:func:`run_cli`), as the command
    line shows them in its flags (:mod:`bertfeat.spelling`).

    Examples
    --------
    >>> r_advice("stride=3 applies to long_text='chunk' only; pass long_text='chunk' as well, or leave stride=None.")
    'stride = 3 applies to long_text = "chunk" only; pass long_text = "chunk" as well, or leave stride = NULL.'
    >>> r_advice("layers=[1, -1] names the same layer twice (as [1, 1]); pass task='regression' (--task regression).")
    'layers = c(1, -1) names the same layer twice (as c(1, 1)); pass task = "regression".'
    >>> r_advice("output 'f.parquet' exists; pass overwrite=True to replace it.")
    'output "f.parquet" exists; pass overwrite = TRUE to replace it.'
    """
    return keeping_sql(lambda text: _r_advice(text, names), message)


def _r_advice(message: str, names: dict | None) -> str:
    message = _CLI_ASIDE.sub("", message)
    for python, spelled in PYTHON_WORDS.items():
        message = message.replace(python, spelled["r"])
    message = without_python_only(message)

    def keyword(match):
        if match.group(1) is not None:  # a quoted text: its words are the user's
            return match.group(1)
        name, value = (names or {}).get(match.group(2), match.group(2)), match.group(3)
        return f"`{name}`" if value is None else f"{name} = {_r_value(value)}"

    message = QUOTED_OR_KEYWORD.sub(keyword, message)
    message = _QUOTED_OR_NUMBERS.sub(lambda m: m.group(1) if m.group(1) is not None else
                                     _r_value(f"[{m.group(2)}]"), message)
    message = STRING_LIST.sub(lambda m: ", ".join(_r_value(s.group(0)) for s in re.finditer(STRING, m.group(0))),
                              message)
    message = _CHOICE_RUN.sub(lambda m: re.sub(STRING, lambda s: _r_value(s.group(0)), m.group(0)), message)
    message = _QUOTED_OR_CONSTANT.sub(lambda m: m.group(1) if m.group(1) is not None else _r_value(m.group(2)), message)
    return QUOTED.sub(lambda m: _r_value(m.group(0)), message)


def embed(texts, missing_masks, column_names=None, params=None):
    """Embed text columns for R in one :class:`BertEmbedder` call.

    Parameters
    ----------
    texts : list of list of str
        One list per column; texts under the mask are ignored (R sends "" there).
    missing_masks : list of list of bool
        True where R had ``NA``.
    column_names : list of str, default=None
        Names of the columns (a DataFrame is embedded); None embeds one unnamed column (features ``text_...``).
    params : dict, default=None
        Keyword arguments of :class:`BertEmbedder`.

    Returns
    -------
    tuple
        ``(buffer, n_rows, n_cols, feature_names, fingerprint, stats, warnings)``, where ``warnings`` is a list of
        ``(category name, message)`` raised while embedding, for R to re-issue as R warnings.

    Examples
    --------
    >>> buf, n, d, names, fp, stats, warns = embed([["a cat", "NA", ""]], [[False, False, True]],
    ...                                            params={"missing": "zero"})
    >>> n, d, names[0], stats["missing"]
    (3, 768, 'text_cls_000', 1)
    """
    X = _build_input(texts, missing_masks, column_names)
    _import_torch()
    embedder = BertEmbedder(**dict(params or {}))
    try:
        out, caught = _recording(embedder.fit_transform, X)
    except (ValueError, TypeError) as exc:
        # a text refused here (one the tokenizer drops whole, non-finite features) is named by R's row number
        from bertfeat.arrow import raise_at_input_row

        raise_at_input_row(exc, range(1, len(X) + 1))
        raise
    buf, n, d = matrix_payload(out)
    return (
        buf, n, d, [str(f) for f in embedder.get_feature_names_out()], embedder.recipe_.fingerprint(),
        embedder.stats_.to_dict(), caught,
    )


def describe(column_names=None, params=None):
    """``(feature_names, fingerprint, warnings, layers, dtype)`` of a recipe, without loading the model or embedding
    anything; ``warnings`` as in :func:`embed`, ``layers`` the model's layers the recipe reads (absolute indices, in
    feature order), which ``layers=None`` or negative ones leave unsaid, and ``dtype`` the precision, which
    ``dtype="auto"`` leaves to the machine (``bake()`` keeps it, as ``fit`` fixes it in Python).

    Examples
    --------
    >>> names, fp, warns, layers, dtype = describe(["review"], {"pooling": "cls+mean"})
    >>> len(names), names[0], names[-1], layers, dtype
    (768, 'review_cls_000', 'review_mean_383', [3, 4, 5, 6], 'float32')
    """
    names = None if column_names is None else [str(n) for n in _as_list(column_names)]
    n_cols = 1 if names is None else len(names)
    X = _build_input([[""]] * n_cols, [[False]] * n_cols, names)
    _import_torch()  # fit resolves dtype="auto" through the device, which needs torch
    embedder, caught = _recording(BertEmbedder(**dict(params or {})).fit, X)
    return ([str(f) for f in embedder.get_feature_names_out()], embedder.recipe_.fingerprint(), caught,
            [int(layer) for layer in embedder.recipe_.layers], embedder.recipe_.dtype)


def config() -> dict:
    """What the R package is using: Python, bertfeat, torch (and how it was imported), the ``"auto"`` device."""
    from importlib import metadata

    import bertfeat

    info = {
        "python": sys.executable,
        "python_version": sys.version.split()[0],
        "bertfeat_version": bertfeat.__version__,
        "bertfeat_path": bertfeat.__path__[0],
        "numpy_version": np.__version__,
        "torch_version": None,
        "device": None,
        "torch_import": None,
        "error": None,
    }
    try:
        info["torch_version"] = metadata.version("torch")
        _import_torch()
        info["torch_import"] = torch_import
        from bertfeat.devices import resolve_device

        info["device"] = resolve_device("auto")
    except Exception as exc:  # a broken torch is exactly what bf_config() is asked to show
        info["error"] = f"{type(exc).__name__}: {exc}"
    return info


class _Tee:
    """Writes to a buffer and, line by line, to ``emit`` (R's message(), so RStudio and knitr show progress live and
    suppressMessages() silences it) or, without one, to the process's own stream; lines that ``hold`` says yes to
    are kept back (R gives them itself). Lines written from another thread go to the stream: R may be called from
    its own thread only."""

    def __init__(self, mirror, hold=None, emit=None):
        import io

        self.buffer = io.StringIO()
        self.mirror = mirror
        self.hold = hold
        self.emit = emit
        self.line = ""

    def write(self, text):
        self.buffer.write(text)
        if self.mirror is not None or self.emit is not None:
            *done, self.line = (self.line + text).split("\n")
            self._show([line for line in done if not (self.hold and self.hold(line))])
        return len(text)

    def _show(self, lines, end="\n"):
        import threading

        if not lines:
            return
        if self.emit is not None and threading.current_thread() is threading.main_thread():
            for line in lines:
                self.emit(line)
        elif self.mirror is not None:
            self.mirror.write("".join(line + end for line in lines))
            self.mirror.flush()

    def close(self):
        """The last line, if it had no line break."""
        if self.line and not (self.hold and self.hold(self.line)):
            self._show([self.line], end="")
        self.line = ""

    def flush(self):
        pass

    def isatty(self):
        return False


# bf_embed_file()'s arguments that the command line (and the file API) name otherwise
BF_EMBED_FILE_NAMES = {"out": "output", "text_cols": "text_col", "keep_cols": "keep_col"}


def run_cli(args, on_line=None) -> tuple[int, str, str, str, list]:
    """Run ``bertfeat <args>`` in this process: ``(exit status, stdout, stderr, summary, warnings)``.

    In-process rather than a child process: R's LD_LIBRARY_PATH (Debian's libpython first) breaks a child Python
    built elsewhere, and the child would not share this session's loaded model. Each line of ``stderr`` (progress)
    is also given to ``on_line`` as it comes (R's message(); without it, written to the process's stderr), except
    ``bertfeat embed``'s summary line of a finished job, which is ``summary`` ("" when there is none), for R to give
    as a message of its own class (on the process's stderr it was out of reach of R's message handlers, and
    invisible in RStudio and knitr). ``warnings`` are the warnings the command gave, as in :func:`embed`, for R to
    give as R warnings of their classes, as ``bf_embed()`` gives them: written as the command line writes them
    (``bertfeat embed: warning: ...``), they reached R as progress messages, which ``suppressMessages()`` hid with
    the progress and ``suppressWarnings()``, ``options(warn = 2)`` and a handler of ``bertfeat_warning_model_note``
    never saw. The process's warnings filters decide which are given, as they decide which the command line writes:
    each once per run where Python's default says once. Its error lines name options as the R user passed them, in
    R's syntax (``quoting = "backslash"``, :func:`r_advice`), not in the command line's flags (``--quoting
    backslash``).
    """
    import contextlib

    from bertfeat.cli import main
    from bertfeat.files import SUMMARY_HEAD

    def is_summary(line):
        return line.startswith(SUMMARY_HEAD)

    from bertfeat.cli import SPELLING

    out, err = _Tee(sys.__stdout__), _Tee(sys.__stderr__, hold=is_summary, emit=on_line)
    # its error lines in R's syntax, as bf_embed()'s errors, the options named as bf_embed_file() names them
    spelling = SPELLING.set(lambda message: r_advice(message, BF_EMBED_FILE_NAMES))
    # recorded under the process's filters (not "always", as embed() records): a note the command line says once per
    # run is given once, not once per chunk
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as caught:
        _import_torch()
        try:
            status = main([str(a) for a in _as_list(args)])
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code if isinstance(exc.code, int) else 2
        finally:
            SPELLING.reset(spelling)
            out.close()
            err.close()
    stderr = err.buffer.getvalue()
    summary = "\n".join(line for line in stderr.splitlines() if is_summary(line))
    return int(status), out.buffer.getvalue(), stderr, summary, _for_r(caught)


def probe(texts, missing_mask, y, params=None):
    """Run :func:`bertfeat.probe` for R's ``bf_probe()``: the table as columns R turns into a tibble.

    Returns ``(columns, recommended, kind, code, metric, task, plot, chance, folds, notes, left_out, warnings)``:
    ``columns`` maps each table column to a list of floats (NaN where empty) or strings ("" where empty, NA in R),
    ``recommended`` the BertEmbedder keyword arguments of the recommended row (None for TF-IDF alone), ``chance`` the
    score of a model that ignores the texts (``ProbeResult.chance``), ``folds`` what the folds kept together
    (``ProbeResult.folds``), ``notes`` the lines Python prints under the table (:func:`bertfeat.probe_chance.
    chance_lines`: the candidates left out, chance, the note when no row beats chance clearly), ``left_out``
    ``ProbeResult.left_out``, ``warnings`` as in :func:`embed`.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.read_csv("data/fine_foods.csv.gz").head(40)
    >>> cols, rec, kind, code, metric, task, plot, chance, folds, notes, left_out, warns = probe(
    ...     df["review"].tolist(), [False] * 40, df["score"].tolist(), {"cv": 2, "unions": 1, "poolings": ["mean"]})
    >>> metric, "candidate" in cols, len(cols["score"]) == len(cols["rank"]), chance["score"], folds["n_splits"]
    ('roc_auc', True, True, 0.5, 2)
    """
    from bertfeat.probe import chance_lines, probe as run_probe

    X = _build_input([texts], [missing_mask], None)
    _import_torch()
    params = dict(params or {})
    if "model" in params:
        params["model"] = _as_list(params["model"])
    try:
        result, caught = _recording(run_probe, X, _r_labels(y, params.get("task", "auto")), **params)
    except (ValueError, TypeError) as exc:  # a text refused here is named by R's row number, as embed() names it
        from bertfeat.arrow import raise_at_input_row

        raise_at_input_row(exc, range(1, len(X) + 1))
        raise
    columns = {}
    for name in ["rank", "model", "kind", "candidate", "n_features", "score", "std_err", "embed_s_per_1k", "pooling",
                 "layers", "layer_agg", "layer", "n_layers"]:
        values = result.table[name]
        if name in ("model", "kind", "candidate", "pooling", "layers", "layer_agg"):
            columns[name] = ["" if v is None or v != v else str(v) for v in values]
        else:
            columns[name] = [float("nan") if v is None or v != v else float(v) for v in values]
    return (columns, result.recommended, result.recommended_kind, result.code(), result.metric, result.task,
            params.get("plot"), result.chance, result.folds, chance_lines(result), result.left_out, caught)


def _r_labels(y, task) -> np.ndarray:
    """``bf_probe()``'s labels as the probe reads them. R's numbers cross as doubles (so that integer and double read
    alike: a regression past 10 values, as its help says); whole ones that will be classes cross back as ints, so
    that a refusal naming a class shows it as R prints it (``2``, not Python's ``2.0``). The classes and the scores
    are the same either way."""
    y = np.asarray(_as_list(y))
    if y.dtype.kind != "f" or task == "regression" or not np.isfinite(y).all() or (np.abs(y) >= 2**53).any():
        return y
    if (y != np.round(y)).any() or (task == "auto" and len(np.unique(y)) > 10):
        return y
    return y.astype(np.int64)


def read_features(path):
    """``bertfeat embed``'s output for R's ``bf_read_features()``: ``(buffer, n_rows, n_cols, feature_names, kept,
    provenance)``, the features as in :func:`embed` and ``kept`` a list of ``(name, kind, values)`` for the kept
    columns, where ``kind`` says how R reads the values (see :func:`_kept_for_r`).

    ``path`` is the parquet file of the local engine or the folder of parquet files of the Ray and Spark engines (read
    in the sorted order of their names, which is the input's). A file written with ``--layout list`` (a list column
    per text column) gives the same matrix and names as the default layout. Raises ValueError for a file that is not
    bertfeat's output.
    """
    import json
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    if not files:
        raise ValueError(f"{str(path)!r} is a folder that holds no parquet files; name bertfeat embed's output.")
    try:
        table = pa.concat_tables([pq.read_table(f) for f in files])
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"{str(files[0])!r} cannot be read as parquet ({exc}); name bertfeat embed's "
                         "output.") from None
    meta = (table.schema.metadata or {}).get(b"bertfeat")
    if meta is None:
        raise ValueError(f"{str(path)!r} holds no bertfeat provenance (schema metadata 'bertfeat'): it was not written "
                         "by bertfeat embed (bf_embed_file()).")
    provenance = json.loads(meta)
    keep = list(provenance.get("keep_columns") or [])
    if provenance.get("layout", "columns") == "list":
        names, X = _list_layout(path, table, provenance)
    else:
        names = [n for n in table.column_names if n not in keep]
        X = np.column_stack([table.column(n).to_numpy(zero_copy_only=False) for n in names]) if names else np.zeros(
            (table.num_rows, 0))
    buf, n, d = matrix_payload(X)
    return buf, n, d, names, [_kept_for_r(n, table.column(n)) for n in keep], provenance


def _list_layout(path, table, provenance) -> tuple[list[str], np.ndarray]:
    """``(feature names, matrix)`` of a ``--layout list`` output: its ``{column}_embedding`` list columns (fixed-size
    lists; Spark writes variable-size ones) side by side, named as the default layout names its columns, from the
    recipe the provenance records."""
    from bertfeat.recipe import Recipe

    columns, dims = list(provenance["text_columns"]), int(provenance["dims"])
    concat = provenance.get("layer_agg") == "concat"
    if concat and "num_layers" not in provenance:  # the names pad the layer to the model's width, unrecorded before
        raise ValueError(f"{str(path)!r} was written with layout='list' and layer_agg='concat' by a bertfeat that did not "
                         "record the model's number of layers, which names the features; write it again with "
                         "layout='columns' (the default), or with this bertfeat.")
    blocks = len(provenance["pooling"]) * (len(provenance["layers"]) if concat else 1)
    recipe = Recipe(model=provenance.get("model_label", ""), weights_sha256="", tokenizer_sha256="", config_sha256="",
                    hidden_size=dims // blocks, num_layers=int(provenance.get("num_layers") or 0),
                    pooling=tuple(provenance["pooling"]), layers=tuple(provenance["layers"]),
                    layer_agg=provenance.get("layer_agg", "mean"), max_length=0, long_text="", stride=0,
                    normalize=False, dtype="")
    blocks_out = []
    for c in columns:
        column = table.column(f"{c}_embedding").combine_chunks()
        lengths = column.value_lengths() if hasattr(column, "value_lengths") else None
        if column.null_count or (lengths is not None and set(lengths.to_pylist()) - {dims}):
            raise ValueError(f"{str(path)!r}: column {c + '_embedding'!r} holds rows that are not {dims} features each; "
                             "name bertfeat embed's output as it wrote it.")
        values = column.flatten().to_numpy(zero_copy_only=False)
        blocks_out.append(values.reshape(len(column), dims))
    X = np.hstack(blocks_out) if blocks_out else np.zeros((table.num_rows, 0))
    return [n for c in columns for n in recipe.feature_names(c)], X


def _kept_for_r(name, column):
    """``(name, kind, values)`` of a kept column, as :func:`_r_values` describes it for R."""
    return (name, *_r_values(column))


# the counts per second of arrow's time units
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _r_values(column) -> tuple[str, object]:
    """``(kind, values)``: how R reads a pyarrow column. ``kind`` is "logical", "integer" (whole numbers within R's
    integer range), "double" (other numbers, and whole numbers past R's integers that a double holds exactly),
    "date" (days since 1970-01-01), "duration" (seconds, R's difftime) or "character" (text, and anything else as
    its text: decimals, whole numbers past 2**53, which a double would change), with ``values`` one per row, None
    where missing; "datetime" (``[zone, seconds since 1970 UTC]``, or ``["", texts]`` for a time without a zone, a
    wall clock); or, as the arrow R package reads them, "list" (a list column: per row the ``(kind, values)`` of
    its items, None where missing; a map is a list of key/value structs), "struct" (``(field names, (kind, values)
    per field, rows)``, a data frame column; a missing row is missing in every field) or "raw" (bytes, per row a list
    of byte values). A list read as its Python repr ("['x', 'y']") was a text R cannot take apart."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from bertfeat.arrow import is_bytes_type, is_list_type

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    t = column.type
    if pa.types.is_map(t):  # its storage: a list of key/value structs
        column = pa.ListArray.from_arrays(column.offsets, pa.StructArray.from_arrays(
            [column.keys, column.items], ["key", "value"]), mask=column.is_null())
        t = column.type
    if is_list_type(t):
        kind, items = _r_values(pc.list_flatten(column))  # one kind for every row's items
        rows, at = [], 0
        for n in pc.list_value_length(column).to_pylist():
            rows.append(None if n is None else _r_slice(kind, items, at, at + n))
            at += n or 0
        return "list", rows
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        return "struct", (names, [_r_values(pc.struct_field(column, [i])) for i in range(t.num_fields)], len(column))
    if pa.types.is_date(t):  # R's Date: days since 1970-01-01
        days = pc.cast(pc.cast(column, pa.date32()), pa.int32()).to_pylist()
        return "date", [None if d is None else float(d) for d in days]
    if pa.types.is_timestamp(t):
        if t.tz is None:  # a wall clock: its text, which R reads in the session's zone as as.POSIXct() reads it
            return "datetime", ["", pc.cast(column, pa.string()).to_pylist()]
        per_second = _PER_SECOND[t.unit]
        seconds = [None if v is None else v / per_second for v in pc.cast(column, pa.int64()).to_pylist()]
        # a zone as an offset (+01:00) is no zone R knows: the same instants, in UTC
        return "datetime", ["UTC" if t.tz[:1] in "+-" else t.tz, seconds]
    if pa.types.is_duration(t):  # R's difftime in seconds, as the arrow R package reads it (its text was the count
        # in its unit, "5000000" for 5 s in microseconds)
        per_second = _PER_SECOND[t.unit]
        return "duration", [None if v is None else v / per_second for v in pc.cast(column, pa.int64()).to_pylist()]
    values = column.to_pylist()
    if is_bytes_type(t):  # a dictionary of them too: cast to text, bytes that are not UTF-8 came as "b'\\xff'"
        return "raw", [None if v is None else list(v) for v in values]
    present = [v for v in values if v is not None]
    if pa.types.is_boolean(t):
        return "logical", values
    if pa.types.is_integer(t):
        if all(-(2**31) < v < 2**31 for v in present):
            return "integer", values
        if all(abs(v) <= 2**53 for v in present):
            return "double", [None if v is None else float(v) for v in values]
    elif pa.types.is_floating(t):
        return "double", [None if v is None else float(v) for v in values]
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        return "character", values
    try:  # arrow's own text of a value (a date as 2026-11-26, a decimal with its digits)
        return "character", pc.cast(column, pa.string()).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return "character", [None if v is None else str(v) for v in values]


def _r_slice(kind: str, values, start: int, stop: int) -> tuple[str, object]:
    """Rows ``start`` to ``stop`` of a ``(kind, values)`` description (a list column's row: a run of its items)."""
    if kind == "struct":
        names, fields, _ = values
        return kind, (names, [_r_slice(k, v, start, stop) for k, v in fields], stop - start)
    return kind, values[start:stop]
