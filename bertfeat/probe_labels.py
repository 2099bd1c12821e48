"""The probe's labels and folds: which labels it can score (checked before any work), which task they are, and
folds that keep the copies of a text together."""

from __future__ import annotations

import re

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
    rare = [(v, c) for v, c in zip(values.tolist(), counts.tolist()) if c < cv]
    if len(values) >= 2 and rare:
        shown = ", ".join(f"{v!r} ({c})" for v, c in rare[:5]) + (", ..." if len(rare) > 5 else "")
        fewest = int(min(counts))
        raise ValueError(
            f"class(es) {shown} of the labels y have fewer members than the {cv} cross-validation folds, so some "
            "folds would not contain them and their scores would be undefined. Drop or merge the rare classes"
            + (f", or lower cv (--cv) to at most {fewest}" if fewest >= 2 else
               " (a class with one member cannot be cross-validated)")
            # integers are classes under "auto" (floats of more than ten values are not): many of them may be a
            # price or a count, a regression its user never named
            + ("; or, if the labels are numbers to predict, pass task='regression' (--task regression)."
               if task == "auto" and y.dtype.kind in "iu" and len(values) > 10 else ".")
        )
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):  # scikit-learn's splitters read them as a regression
        fractional = np.unique(y[y != np.round(y)])
        why = "ten or fewer distinct numbers are classes under task='auto'" if task == "auto" else f"task={task!r}"
        raise ValueError(
            f"the labels y are read as classes ({why}), and {len(fractional)} of them are fractional numbers such as "
            f"{fractional[0]:g}, which scikit-learn's classifiers refuse. Pass task='regression' (--task regression) "
            "to score them as numbers, or give the classes as strings (y.astype(str)) to score them as classes.")


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
        raise ValueError(f"task='regression' needs numeric labels, and y holds {y.dtype} values such as "
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
                         f"one-text fold is undefined), and there are {len(y)}; lower cv (--cv) or add texts.")


def _check_folds(task: str, y: np.ndarray, folds) -> None:
    """A regression's test folds each need labels that differ: R^2 of a constant target is undefined (scikit-learn
    scores it 0 or 1, which would enter every row's mean as if measured)."""
    if task != "regression":
        return
    lone = sum(len(test) < 2 for _, test in folds)
    if lone:  # only copies kept together can leave one: _check_numbers counts two texts per fold
        raise ValueError(f"a regression needs two texts in every fold (R^2 of a one-text fold is undefined), and with "
                         f"the copies of a text kept in one fold, {lone} of the {len(folds)} folds hold one text; "
                         "lower cv (--cv) or add texts.")
    flat = [k for k, (_, test) in enumerate(folds, start=1) if np.all(y[test] == y[test][0])]
    if flat:
        raise ValueError(f"{len(flat)} of the {len(folds)} cross-validation folds hold test labels that are all one "
                         f"value (fold {flat[0]}: all {y[folds[flat[0] - 1][1]][0]:g}), where R^2 is undefined "
                         "(scikit-learn would score it 0 or 1); lower cv (--cv), or add texts with other labels.")


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


# Logistic regression's C: on standardized embedding features, and on TF-IDF (and unions, whose blocks both have
# rows of squared norm about 1, see bertfeat.union).
def _text_groups(texts) -> np.ndarray | None:
    """The group of each text, copies of one text together; None when every text is distinct. A copy is a text of the
    same words (:func:`_copy_key`), so texts that differ only in case, spacing or punctuation are copies too: split
    across folds, TF-IDF saw the very row it was scored on (pure noise scored ROC AUC 1.0). A missing text (None, NaN, a blank string) is no text, and no copy of another: each is a group of its
    own, so the missing texts spread across the folds as they will come in use, and every model is trained on some."""
    from bertfeat.batching import unique_strings
    from bertfeat.inputs import is_blank

    present = [i for i, t in enumerate(texts) if isinstance(t, str) and not is_blank(t)]
    uniques, inverse = unique_strings([_copy_key(texts[i]) for i in present])
    if len(uniques) == len(present):
        return None
    groups = len(uniques) + np.arange(len(texts))
    groups[present] = inverse
    return groups


_WORD = re.compile(r"\w+")


def _copy_key(text: str) -> str:
    """What makes two texts copies: the same words, lowercased as the probe's TF-IDF lowercases them, in order (case,
    spacing and punctuation do not count; every word does, one letter or digit too, so "item 1" and "item 2" stay
    two texts); a text with no word (only punctuation) by its casefolded text with spaces collapsed."""
    found = _WORD.findall(text.lower())
    return "\x00".join(found) if found else "\x01" + " ".join(text.casefold().split())


def _grouped(task, y, cv, random_state, groups):
    from sklearn.model_selection import GroupKFold, PredefinedSplit, StratifiedGroupKFold

    n_groups = len(np.unique(groups))
    if n_groups < cv:
        raise ValueError(f"the texts hold {n_groups} distinct texts, fewer than the {cv} cross-validation folds "
                         "(copies of a text, texts that differ only in case, spacing or punctuation among them, stay "
                         "in one fold); lower cv (--cv) or add texts.")
    if task == "classification":
        per_class = {label: len(np.unique(groups[y == label])) for label in np.unique(y).tolist()}
        rare = {label: n for label, n in per_class.items() if n < cv}
        if rare:
            shown = ", ".join(f"{label!r} ({n})" for label, n in list(rare.items())[:5])
            raise ValueError(f"class(es) {shown} of the labels y have fewer distinct texts than the {cv} "
                             "cross-validation folds (copies of a text, texts that differ only in case, spacing or "
                             "punctuation among them, stay in one fold); lower cv (--cv) or drop or "
                             "merge the rare classes.")
        splits = _every_class_in_every_fold(StratifiedGroupKFold, y, cv, random_state, groups)
    else:
        splits = GroupKFold(cv, shuffle=True, random_state=random_state).split(y, y, groups)
    test_fold = np.empty(len(y), dtype=int)
    for k, (_, test) in enumerate(splits):
        test_fold[test] = k
    return PredefinedSplit(test_fold)


def _every_class_in_every_fold(splitter, y, cv, random_state, groups, tries: int = 50) -> list:
    """Grouped stratified folds whose test parts each hold every class. StratifiedGroupKFold only balances the classes
    as the groups allow: with copies of texts, a fold could hold one class, where ROC AUC is undefined (every row's
    score NaN, then an IndexError after every fit). The seeded shuffle comes first; if it leaves such a fold, further
    shuffles drawn from ``random_state`` (so the same call gives the same folds, which ``result.cv`` holds)."""
    classes = len(np.unique(y))
    seeds = [int(random_state)] + np.random.RandomState(int(random_state) % 2**32).randint(2**31 - 1, size=tries - 1
                                                                                           ).tolist()
    for seed in seeds:
        splits = list(splitter(cv, shuffle=True, random_state=seed).split(y, y, groups))
        lacking = [k for k, (_, test) in enumerate(splits, start=1) if len(np.unique(y[test])) < classes]
        if not lacking:
            return splits
    raise ValueError(f"with the copies of each text kept in one fold, {tries} shuffles into {cv} cross-validation folds "
                     f"each left a fold without some class (fold {lacking[0]}, the last), where the score is undefined; "
                     "lower cv (--cv), or drop copies of texts whose labels differ.")
