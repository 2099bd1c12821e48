"""The probe's labels: which labels it can score (checked before any work) and which task they are. The folds that
keep the copies of a text (and a group's texts) together are :mod:`bertfeat.probe_folds`."""

from __future__ import annotations

import numpy as np


def _check_labels(y: np.ndarray, task: str, cv: int) -> None:
    """Every text needs a label, and with classes every class needs a member in each of the ``cv`` folds."""
    import pandas as pd

    if not isinstance(cv, (int, np.integer)) or isinstance(cv, bool) or cv < 2:
        raise ValueError(f"cv={cv!r} is not valid: expected an int of at least 2 (cross-validation folds).")
    missing = np.flatnonzero(pd.isna(y)) if y.ndim == 1 else np.array([], dtype=int)
    if y.ndim != 1:
        raise ValueError(f"y has shape {y.shape}; pass one label per text (a 1-D array, list or Series).")
    if len(missing):
        rows = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise ValueError(
            f"the labels y have {len(missing)} missing value(s) (rows {rows}); the probe scores features against a label for "
            "every text: drop those rows or fill their labels first."
        )
    if (_task(y) if task == "auto" else task) == "regression":
        _check_numbers(y, cv)
        return
    if (_task(y) if task == "auto" else task) != "classification":
        return
    bad = np.flatnonzero(~np.isfinite(y)) if y.dtype.kind == "f" else []
    if len(bad):  # scikit-learn refuses them as classes too ("Input y contains infinity"), naming no row
        raise ValueError(f"the labels y are not finite (row {bad[0]}: {y.tolist()[bad[0]]!r}); scikit-learn's "
                         "classifiers take finite labels only: drop or fix those rows.")
    try:
        values, counts = np.unique(y, return_counts=True)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in y.tolist()})
        raise ValueError(f"the labels y mix types ({', '.join(kinds)}); pass labels of one type.") from None
    rare = [(v, c) for v, c in zip(labels_of(values), counts.tolist()) if c < cv]
    if len(values) >= 2 and rare:
        shown = ", ".join(f"{shown_label(v)} ({c})" for v, c in rare[:5]) + (", ..." if len(rare) > 5 else "")
        fewest = int(min(counts))
        raise ValueError(
            f"class(es) {shown} of the labels y have fewer members than the {cv} cross-validation folds, so some "
            "folds would not contain them and their scores would be undefined. Drop or merge the rare classes"
            + (f", or lower cv= to at most {fewest}" if fewest >= 2 else
               " (a class with one member cannot be cross-validated)")
            # integers are classes under "auto" (floats of more than ten values are not): many of them may be a
            # price or a count, a regression its user never named
            + ("; or, if the labels are numbers to predict, pass task='regression'."
               if task == "auto" and y.dtype.kind in "iu" and len(values) > 10 else ".")
        )
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):  # scikit-learn's splitters read them as a regression
        fractional = np.unique(y[y != np.round(y)])
        why = "ten or fewer distinct numbers are classes under task='auto'" if task == "auto" else f"task={task!r}"
        raise ValueError(
            f"the labels y are read as classes ({why}), and {len(fractional)} of them are fractional numbers such as "
            f"{fractional[0]:g}, which scikit-learn's classifiers refuse. Pass task='regression' "
            "to score them as numbers, or give the classes as strings (y.astype(str)) to score them as classes.")


def labels_of(values: np.ndarray) -> list:
    """``values`` as Python objects to show, where ``.tolist()`` would turn a datetime64[ns] into its nanoseconds."""
    return list(values) if values.dtype.kind in "mM" else values.tolist()


def shown_label(v) -> str:
    """A class as a refusal names it: as Python writes it ('b', 2, 2.0, True), and a time as its text (2020-01-02...),
    not 1577923200000000000 or Timestamp('2020-01-02 00:00:00')."""
    import datetime

    if isinstance(v, (np.datetime64, np.timedelta64, datetime.date, datetime.time, datetime.timedelta)):
        return str(v)
    return repr(v)


def _decimals_as_numbers(y: np.ndarray) -> np.ndarray:
    """Labels that are ``decimal.Decimal`` or ``fractions.Fraction`` objects (a database's prices) as float64, as the
    probe command reads a parquet decimal column: numpy keeps them as objects, which read as classes under
    task='auto' and as "not numeric" under task='regression'. A missing label (None, NaN) becomes NaN."""
    import decimal
    import fractions
    import numbers

    import pandas as pd

    if y.dtype != object or y.ndim != 1:
        return y
    present = [v for v in y.tolist() if not (v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)))]
    exact = (decimal.Decimal, fractions.Fraction)
    if not any(isinstance(v, exact) for v in present) or not all(
        isinstance(v, exact) or (isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))) for v in present
    ):
        return y
    return np.array([np.nan if v is None or v is pd.NA else float(v) for v in y.tolist()], dtype=np.float64)


def _check_numbers(y: np.ndarray, cv: int) -> None:
    """Regression labels: numbers, finite, not all one value, and two in every fold (R^2 of one text is undefined)."""
    if y.dtype.kind not in "biuf":
        # numpy's name for a list of strings (<U1) says nothing to a user, nor to an R user
        what = "strings" if y.dtype.kind == "U" or all(isinstance(v, str) for v in y.tolist()) else f"{y.dtype} values"
        raise ValueError(f"task='regression' needs numeric labels, and y holds {what} such as "
                         f"{y.tolist()[0]!r}; convert them to numbers, or score them as classes (task='auto').")
    values = y.astype(float)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise ValueError(f"the labels y are not finite (row {bad[0]}: {y.tolist()[bad[0]]!r}); a regression needs "
                         "finite numbers: drop or fix those rows.")
    if np.all(values == values[0]):
        raise ValueError(f"the labels y are all {values[0]:g}: there is nothing to predict, and R^2 is undefined on a "
                         "constant target.")
    if len(y) < 2 * cv:
        raise ValueError(f"a regression needs at least {2 * cv} texts for cv={cv}: two in every fold (R^2 of a "
                         f"one-text fold is undefined), and there are {len(y)}; lower cv= or add texts.")


def _check_label_types(y) -> None:
    """Labels of several kinds (strings and numbers, or booleans and numbers) would be merged by ``np.asarray``."""
    import numbers

    import pandas as pd

    if getattr(y, "dtype", object) != object:
        return
    kinds, names = set(), set()
    for v in y:
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            continue
        kind = ("bool" if isinstance(v, (bool, np.bool_)) else "number" if isinstance(v, numbers.Number)
                else "str" if isinstance(v, str) else type(v).__name__)
        kinds.add(kind)
        names.add(type(v).__name__)
    if len(kinds) > 1:
        raise ValueError(f"the labels y mix types ({', '.join(sorted(names))}); pass labels of one type.")


def _task(y: np.ndarray) -> str:
    if y.dtype.kind in "fc" and len(np.unique(y)) > 10:
        return "regression"
    return "classification"
