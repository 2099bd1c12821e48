"""The probe's folds: the texts that must fall in one fold, and grouped folds that keep them there.

Two things keep texts together. Copies of a text (the same words; :func:`_copy_key`): split across folds, a model is
scored on a text it was trained on. And the user's ``groups`` (several reviews of one customer, the paragraphs of one
book, the notes of one patient), as scikit-learn's ``GroupKFold``: a group split across folds lets a model learn the
group's own words and inflates every score, silently. Both hold at once: a text's copies in two groups join them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set as AbstractSet

import numpy as np

COPIES_KEPT = ("copies of a text, texts that differ only in case, spacing or punctuation among them, stay in one "
               "fold")
GROUPS_KEPT = "each group, with the copies of a text, stays in one fold"


def groups_kept(n_given: int, n_units: int) -> tuple[str, str]:
    """How the folds keep the user's groups and what to do, as a refusal says them: where copies of a text in several
    groups joined them (a stock phrase such as "Great product!" written by many customers ties them all), say so,
    or the user reads "2 groups" of the 40 they passed and cannot tell why."""
    if n_units == n_given:
        return GROUPS_KEPT, "pass finer groups"
    return (f"{GROUPS_KEPT}, and the {n_given} groups given are {n_units} once the groups that share a copy of a text "
            "are joined", "drop the texts repeated across groups (stock phrases such as 'Great product!')")


def _text_groups(texts) -> np.ndarray | None:
    """The group of each text, copies of one text together; None when every text is distinct. A copy is a text of the
    same words (:func:`_copy_key`), so texts that differ only in case, spacing or punctuation are copies too: split
    across folds, TF-IDF saw the very row it was scored on (pure noise scored ROC AUC 1.0). A missing text (None, NaN,
    a blank string) is no text, and no copy of another: each is a group of its own, so the missing texts spread across
    the folds as they will come in use, and every model is trained on some."""
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


def _check_groups(groups, n: int) -> np.ndarray:
    """The user's ``groups`` as codes 0, 1, ... (one per text); refused before any work: not one value per text, or a
    missing value (a text of no known group cannot be kept with its group)."""
    import pandas as pd

    if isinstance(groups, (str, bytes, Mapping, AbstractSet)) or not hasattr(groups, "__len__") or getattr(
            groups, "ndim", 1) != 1:
        raise ValueError(f"groups={groups!r} is not valid: pass one group per text (the customer, book or patient each "
                         "text belongs to) as a 1-D array, list or Series, such as df['customer_id'].")
    values = pd.Series(groups.tolist() if hasattr(groups, "tolist") else list(groups), dtype=object)
    if len(values) != n:
        raise ValueError(f"groups has {len(values)} values but there are {n} texts; pass one group per text.")
    missing = np.flatnonzero(values.isna().to_numpy())
    if len(missing):
        rows = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise ValueError(f"groups has {len(missing)} missing value(s) (rows {rows}); the folds keep each group's texts "
                         "together and cannot place a text of no group: fill them (a text alone in its group can "
                         "take a group of its own, such as its row number) or drop those rows.")
    try:
        codes, _ = pd.factorize(values)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in values})
        raise ValueError(f"groups holds values that are no labels ({', '.join(kinds)}); pass one string or number "
                         "per text.") from None
    return codes


def _fold_groups(copies, groups) -> np.ndarray | None:
    """What each text's fold must share: its copies' (``copies``, from :func:`_text_groups`), and with ``groups``
    (checked codes) its group's as well, a group joined with another where a text's copies are in both. None: every
    text is free."""
    if groups is None or copies is None:
        return groups if groups is not None else copies
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n_given, n_copies = int(groups.max()) + 1, int(copies.max()) + 1
    edges = coo_matrix((np.ones(len(groups)), (groups, n_given + copies)),
                       shape=(n_given + n_copies, n_given + n_copies))
    _, joined = connected_components(edges, directed=False)
    return joined[groups]


def _check_folds(task: str, y: np.ndarray, folds, grouped: bool = False) -> None:
    """A regression's test folds each need labels that differ: R^2 of a constant target is undefined (scikit-learn
    scores it 0 or 1, which would enter every row's mean as if measured)."""
    if task != "regression":
        return
    lone = sum(len(test) < 2 for _, test in folds)
    if lone:  # only copies or groups kept together can leave one: _check_numbers counts two texts per fold
        kept = "each group kept in one fold" if grouped else "the copies of a text kept in one fold"
        raise ValueError(f"a regression needs two texts in every fold (R^2 of a one-text fold is undefined), and with "
                         f"{kept}, {lone} of the {len(folds)} folds hold one text; lower cv= or add texts.")
    flat = [k for k, (_, test) in enumerate(folds, start=1) if np.all(y[test] == y[test][0])]
    if flat:
        raise ValueError(f"{len(flat)} of the {len(folds)} cross-validation folds hold test labels that are all one "
                         f"value (fold {flat[0]}: all {y[folds[flat[0] - 1][1]][0]:g}), where R^2 is undefined "
                         "(scikit-learn would score it 0 or 1); lower cv=, or add texts with other labels.")


def _grouped(task, y, cv, random_state, groups, kept=COPIES_KEPT, advice="pass finer groups"):
    from sklearn.model_selection import GroupKFold, PredefinedSplit, StratifiedGroupKFold

    from bertfeat.probe_labels import labels_of, shown_label

    n_groups = len(np.unique(groups))
    if n_groups < cv:
        what = "distinct texts" if kept == COPIES_KEPT else "groups"
        advice = "add texts" if kept == COPIES_KEPT else advice
        raise ValueError(f"the texts hold {n_groups} {what}, fewer than the {cv} cross-validation folds ({kept}); "
                         f"lower cv= or {advice}.")
    if task == "classification":
        per_class = {label: len(np.unique(groups[y == label])) for label in labels_of(np.unique(y))}
        rare = {label: n for label, n in per_class.items() if n < cv}
        if rare:
            shown = ", ".join(f"{shown_label(label)} ({n})" for label, n in list(rare.items())[:5])
            what = "distinct texts" if kept == COPIES_KEPT else "groups holding them"
            raise ValueError(f"class(es) {shown} of the labels y have fewer {what} than the {cv} "
                             f"cross-validation folds ({kept}); lower cv= or drop or merge the rare classes.")
        splits = _every_class_in_every_fold(StratifiedGroupKFold, y, cv, random_state, groups, kept=kept)
    else:
        splits = GroupKFold(cv, shuffle=True, random_state=random_state).split(y, y, groups)
    test_fold = np.empty(len(y), dtype=int)
    for k, (_, test) in enumerate(splits):
        test_fold[test] = k
    return PredefinedSplit(test_fold)


def _every_class_in_every_fold(splitter, y, cv, random_state, groups, tries: int = 50, kept=COPIES_KEPT) -> list:
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
    if kept == COPIES_KEPT:
        raise ValueError(f"with the copies of each text kept in one fold, {tries} shuffles into {cv} cross-validation "
                         f"folds each left a fold without some class (fold {lacking[0]}, the last), where the score is "
                         "undefined; lower cv=, or drop copies of texts whose labels differ.")
    raise ValueError(f"with each group kept in one fold (and the copies of a text), {tries} shuffles into {cv} "
                     f"cross-validation folds each left a fold without some class (fold {lacking[0]}, the last), where "
                     "the score is undefined; lower cv=, or merge the rare classes.")
