"""Turning what users pass (lists, arrays, pandas/polars Series and DataFrames) into named text columns, and the
one rule for what counts as a blank text.

Only the container is checked here; :func:`bertfeat.encode.split_missing` checks each value.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import numpy as np

_DEFAULT_NAME = "text"

# Unicode categories with nothing to read in them: separators (spaces, line and paragraph separators), control
# characters (tab, newline, NUL), format characters (zero-width space, zero-width joiner, BOM, soft hyphen),
# private-use characters, and combining marks, which sit on a letter and say nothing alone (an accent, an emoji's
# variation selector). A BERT tokenizer drops every one of them (marks where it strips accents), and U+FFFD, the
# replacement character a decoder leaves for bytes it could not read (errors="replace"); unassigned code points
# (Cn) are not among them: a newer Unicode than Python's may have assigned them (an emoji), and tokenizers keep them.
_NOTHING_TO_READ = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Mn", "Mc", "Me"})
_REPLACEMENT = "\ufffd"
_category = unicodedata.category


def is_blank(text: str) -> bool:
    r"""True when ``text`` has nothing to read: empty, or only whitespace, control, format, private-use and
    replacement characters (U+FFFD) and combining marks with no letter to sit on.

    A BERT tokenizer drops every such character, so all blank texts would get one and the same ``[CLS] [SEP]``
    vector, which says nothing about the row; bertfeat treats them as missing instead (the ``missing=`` policy).
    The R package applies the same rule (``r-bridge/R/embed.R``) and the CLI goes through this function.

    Examples
    --------
    >>> [is_blank(t) for t in ["", " ", "\t\n", "\u200b", "\x00", "\ufeff", "\ufffd", "\u0301", "a", " . ", "e\u0301"]]
    [True, True, True, True, True, True, True, True, False, False, False]
    """
    for c in text:  # a plain loop: stops at the first visible character, usually the first (~1 us a text)
        if _category(c) not in _NOTHING_TO_READ and c != _REPLACEMENT:
            return False
    return True


def unicode_form_hint(absent: list, names: list, r: bool = False) -> str:
    """What to do where a name asked for is a column's name written in another Unicode form: ``"texte_é"`` with the
    accent as one character (NFC, as typed) and as ``e`` plus a combining accent (NFD, as macOS writes names and
    some exports headers), which print alike, so "not found" beside a list showing the same name says nothing; or
    with an invisible character more or less (a byte order mark left by reading a UTF-8 CSV file with one as plain
    UTF-8, a zero-width space); "" where there is none. ``r=True``: the name to pass as R writes it."""
    pairs = [(a, n) for a in absent if isinstance(a, str) for n in names
             if isinstance(n, str) and a != n and _visible(a) == _visible(n)]
    if not pairs:
        return ""
    a, n = pairs[0]
    how = ("in another Unicode form" if unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", n) else
           "with an invisible character")
    bom = (" (a byte order mark first in a name is what reading a UTF-8 CSV file with one as plain UTF-8 leaves: "
           + ("read.csv(..., fileEncoding = \"UTF-8-BOM\")" if r else "pandas.read_csv(..., encoding='utf-8-sig')")
           + " leaves it out)" if n.startswith("\ufeff") else "")
    return (f" {n!r} is that name {how} (code points {_escaped(n)}; {_escaped(a)} was given), "
            "which prints alike: names must match as written. Pass the name as the data writes it ("
            + (f'"{_escaped(n, chr(34))}"' if r else f"in Python '{_escaped(n)}', in bash $'{_escaped(n)}'")
            + f"), or rename the column{bom}.")


def _visible(name: str) -> str:
    """``name`` as it prints: in one Unicode form (NFC), less the format characters that print as nothing (a byte
    order mark, a zero-width space or joiner, a left-to-right mark)."""
    return "".join(c for c in unicodedata.normalize("NFC", name) if unicodedata.category(c) != "Cf")


def _escaped(name: str, quote: str = "'") -> str:
    """``name`` with every character past ASCII, and ``quote`` or a backslash, escaped as Python, R and bash's
    ``$'...'`` all read it (``\\u00e9``, never ``\\xe9``, which bash reads as a byte)."""
    return "".join(c if 32 <= ord(c) < 127 and c not in quote + "\\" else
                   f"\\{c}" if c in quote + "\\" else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else
                   f"\\U{ord(c):08x}" for c in name)


def text_columns(X, columns=None) -> tuple[list[str], list[list], list[str] | None]:
    """Return ``(names, values, all_columns)``: the embedded columns' names and values, and X's columns.

    ``all_columns`` is None unless X is a DataFrame; then it is every column of X, as scikit-learn records it.
    """
    if isinstance(X, (str, bytes)):
        raise TypeError("Iterable over raw text documents expected, string object received.")
    kind = type(X).__module__.split(".")[0]
    if kind == "polars" and type(X).__name__ == "LazyFrame":
        raise TypeError("X is a polars LazyFrame, whose rows are not computed yet; call .collect() on it and pass "
                        "the DataFrame.")
    if kind == "pandas" and hasattr(X, "columns"):
        return _pandas_frame(X, columns)
    if kind == "polars" and hasattr(X, "columns"):
        return _polars_frame(X, columns)
    if kind != "pyarrow" and hasattr(X, "columns") and not isinstance(X, np.ndarray):
        # a frame of another library (pyspark.pandas, modin, cudf, narwhals): iterated as a list of texts, it gave its
        # column names
        how = "X.collect().to_pandas()" if hasattr(X, "collect") and not hasattr(X, "to_pandas") else "X.to_pandas()"
        raise TypeError(f"X is a {type(X).__module__}.{type(X).__qualname__}, a DataFrame bertfeat does not read (it "
                        f"reads pandas and polars frames); convert it first, for example with {how}.")
    if columns is not None:
        raise ValueError(
            f"columns={columns!r} selects DataFrame columns, but X is a {type(X).__name__}; pass a DataFrame, "
            "or leave columns=None for 1-D text input."
        )
    if kind in ("pandas", "polars") and hasattr(X, "name"):  # a Series
        name = X.name if X.name is not None and not (isinstance(X.name, str) and X.name == "") else _DEFAULT_NAME
        return [feature_column_name(name)], [X.to_list()], None
    if isinstance(X, np.ndarray):
        if X.ndim == 1:
            return [_DEFAULT_NAME], [X.tolist()], None
        if X.ndim == 2:
            return [f"x{j}" for j in range(X.shape[1])], [X[:, j].tolist() for j in range(X.shape[1])], None
        raise ValueError(f"Expected 1-D or 2-D text input, got an array with shape {X.shape}.")
    if kind == "scipy" and type(X).__module__.startswith("scipy.sparse"):  # iterated, it gave one matrix a row
        raise TypeError(
            f"X is a scipy sparse {type(X).__name__}, numbers (such as a vectorizer's output), and sparse input is not "
            "supported: bertfeat embeds texts. Pass the texts themselves (a list, an array, a Series, or a DataFrame "
            "of text columns); in a pipeline, put the embedder before the vectorizer, or beside it in a FeatureUnion."
        )
    if kind == "pyarrow":  # iterating one gives pyarrow scalars, not strings
        raise TypeError(f"X is a pyarrow {type(X).__name__}; pass X.to_pandas(), whose texts and nulls bertfeat reads "
                        "(nulls follow missing=).")
    if isinstance(X, (list, tuple)) and X and isinstance(X[0], (list, tuple)):
        raise TypeError(
            f"X is a list of {type(X[0]).__name__}s, each a row of several texts; pass np.array(X, dtype=object) or a "
            "DataFrame, whose columns are embedded side by side."
        )
    if isinstance(X, (set, frozenset, dict)):
        raise TypeError(
            f"X is a {type(X).__name__}, which has no row order; pass a list, an array, a Series or a DataFrame."
        )
    if isinstance(X, Iterable):
        return [_DEFAULT_NAME], [list(X)], None
    raise TypeError(
        f"X is a {type(X).__name__}; expected an iterable of texts (list, numpy array, pandas or polars Series) or "
        "a DataFrame of text columns."
    )


def feature_column_name(label) -> str:
    """The name a column's features carry, from its label: ``str(label)``, but a pandas MultiIndex column's levels
    joined by ``_``, the level pandas pads with ``""`` left out (``('review', 'title')`` -> ``review_title``,
    ``('note', '')`` -> ``note``). Its repr, ``('review', 'title')``, put quotes, a comma and spaces in every feature
    name (LightGBM refuses such names). Two columns whose names come out alike are refused
    (:func:`_check_unique_names`).

    Examples
    --------
    >>> [feature_column_name(c) for c in ["review", 0, ("review", "title"), ("note", ""), ("score", 2024)]]
    ['review', '0', 'review_title', 'note', 'score_2024']
    """
    if isinstance(label, tuple):
        return "_".join(str(level) for level in label if not (isinstance(level, str) and level == ""))
    return str(label)


def column_names(value, parameter: str) -> list:
    """A job's column argument, one name (``'review'``) or several (``['title', 'body']``), as a list; refused,
    naming ``parameter``, where it is neither (None, a number, bytes), which ``list()`` failed on as "'NoneType'
    object is not iterable" (bytes: read as the names 114, 101, ...), or where it is a set, whose order, which the
    features' columns would follow, changes from one process to the next. The names themselves are checked against
    the input's columns later."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (set, frozenset)):
        raise TypeError(f"{parameter}={value!r} is not valid: a set has no order, and the features' columns follow the "
                        "order of the names given; pass a list.")
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"{parameter}={value!r} is not valid: expected a column name or a list of column names.")
    return list(value)


def series_label(X):
    """The name of a pandas or polars Series (None for any other X, or a Series with no name: None, or polars'
    "")."""
    kind = type(X).__module__.split(".")[0]
    if kind in ("pandas", "polars") and hasattr(X, "name") and not hasattr(X, "columns"):
        return X.name if X.name not in (None, "") else None
    return None


def one_text_column(X, needs: str, name: str) -> list:
    """The values of X's one text column (:func:`text_columns`); X of several columns is refused.

    ``needs`` says who needs one column ("the probe scores one column of texts"), ``name`` what X is called in the
    caller's signature.
    """
    names, values, _ = text_columns(X)
    if len(values) != 1:
        raise ValueError(f"{needs}; {name} has {len(values)} columns ({names}). Pass one, for example "
                         f"{name}[{names[0]!r}].")
    return values[0]


def _selected(all_columns: list, columns) -> list:
    if columns is None:
        return list(all_columns)
    if isinstance(columns, (set, frozenset)):
        # a set of strings iterates in an order that changes with each process's hash seed: a fitted embedder
        # loaded elsewhere would read the columns in another order under the names it was fitted with
        raise ValueError(
            f"columns={columns!r} is not valid: a {type(columns).__name__} has no fixed order, so the features could "
            f"come out in another order in another process; pass a list, such as columns={sorted(columns, key=str)!r}."
        )
    # one name (a str, pandas' default 0, 1, ..., or a MultiIndex column's tuple, as X[('review', 'title')] reads it)
    # or a list of names
    one = (isinstance(columns, (str, bytes)) or not isinstance(columns, Iterable)
           or (isinstance(columns, tuple) and columns in all_columns))
    wanted = [columns] if one else list(columns)
    if not one and wanted and all(isinstance(c, (bool, np.bool_)) for c in wanted):
        # a boolean mask, as ColumnTransformer takes: True == 1 would even find a column named 1
        raise ValueError(
            f"columns={columns!r} is not valid: it holds True/False, but BertEmbedder selects columns by name; pass "
            "the names, such as df.columns[mask].tolist()."
        )
    missing = [c for c in wanted if c not in all_columns]
    if missing or not wanted:
        raise ValueError(
            f"columns={columns!r}: {'no column given' if not wanted else f'column(s) {missing} not found'}; "
            f"the DataFrame has columns {list(all_columns)}.{unicode_form_hint(missing, list(all_columns))}"
        )
    twice = [c for i, c in enumerate(wanted) if c in wanted[:i]]
    if twice:
        raise ValueError(f"columns={columns!r} names column {twice[0]!r} more than once; name each column once.")
    return wanted


def _check_unique_names(cols: list, names: list) -> None:
    """Features are named after ``str(column)``: two columns whose names read alike (1 and "1") would share names."""
    seen = {}
    for c, name in zip(cols, names):
        if name in seen:
            # a MultiIndex column is renamed by its last level's value (rename with its tuple renames nothing)
            how = (f"columns={{{c[-1]!r}: ...}}, level={len(c) - 1}" if isinstance(c, tuple) else
                   f"columns={{{seen[name]!r}: ...}}")
            raise ValueError(
                f"columns {seen[name]!r} and {c!r} of the DataFrame would both name their features '{name}_...'; "
                f"rename one of them first (df.rename({how}))."
            )
        seen[name] = c


def _pandas_frame(X, columns):
    import pandas as pd

    cols = _selected(list(X.columns), columns)
    names, values = [], []
    for c in cols:
        s = X[c]
        if isinstance(s, pd.DataFrame):
            raise ValueError(f"column {c!r} appears more than once in the DataFrame; give each column a unique name.")
        dtype = s.dtype
        nested = _arrow_nested(dtype)
        if nested:
            raise TypeError(
                f"column {c!r} holds {dtype} values, {nested} rather than one text per row; "
                + ("join each row's items into one text first: df[col].astype(object).str.join(' ') (a missing row "
                   "stays missing), or embed the items as texts of their own." if nested == "lists" else
                   "take the field that holds the text first: df[col].struct.field('field').")
            )
        if _numbers_or_times(dtype) and not s.isna().all():
            raise TypeError(
                f"column {c!r} holds {dtype} values, not text. Embed text columns only (select them with "
                "columns=, or a ColumnTransformer), or convert with df[col].astype('string') if the values are labels "
                "(it keeps a missing value missing, where astype(str) makes it the text 'nan')."
            )
        names.append(feature_column_name(c))
        values.append(s.to_list())
    _check_unique_names(cols, names)
    return names, values, list(X.columns)


def _numbers_or_times(dtype) -> bool:
    """Whether a pandas column of ``dtype`` holds numbers, booleans or times (never text)."""
    import pandas as pd

    try:
        return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype)
    except NotImplementedError:  # pyarrow's string_view and binary_view, for which pandas 3 has no scalar type to ask
        return False


def _arrow_nested(dtype) -> str:
    """"lists" or "records" for a pandas ArrowDtype of pyarrow lists or structs (whose values pandas' .str cannot
    join), else ""."""
    arrow = getattr(dtype, "pyarrow_dtype", None)
    if arrow is None:
        return ""
    from bertfeat.arrow import nested_kind

    return nested_kind(arrow)


def _polars_frame(X, columns):
    import polars as pl

    cols = _selected(list(X.columns), columns)
    names, values = [], []
    for c in cols:
        s = X[c]
        if s.dtype not in (pl.String, pl.Categorical, pl.Null) and not isinstance(s.dtype, pl.Enum) and (
            s.null_count() < len(s)
        ):
            nested = {pl.List: ("lists", "list"), pl.Array: ("arrays", "arr"), pl.Struct: ("records", "")}.get(
                type(s.dtype))
            if nested:  # which polars cannot cast to a string, and whose repr would say nothing
                what, namespace = nested
                raise TypeError(
                    f"column {c!r} holds {s.dtype} values, {what} rather than one text per row; "
                    + (f"join each row's items into one text first: pl.col(col).{namespace}.join(' ') (a missing "
                       "row stays missing), or embed the items as texts of their own." if namespace else
                       "take the field that holds the text first: pl.col(col).struct.field('field').")
                )
            raise TypeError(
                f"column {c!r} holds {s.dtype} values, not text. Embed text columns only (select them with "
                "columns=), or cast with pl.col(col).cast(pl.String) if the values are labels."
            )
        names.append(str(c))
        values.append(s.to_list())
    return names, values, list(X.columns)
