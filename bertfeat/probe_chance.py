"""The probe's chance reference: what a model that ignores the texts scores, and whether the table beats it.

The table's best row is the highest of k scores on the same folds, so on labels the texts do not predict it still
lands above chance: the best of k rows of noise scores about ``sqrt(2 ln k)`` standard errors above it (the expected
maximum of k independent normal draws), 2.8 for the 46 rows of the bundled model's default table. And a row's
standard error, the fold scores' spread over the square root of the folds, understates how far its score moves
between draws of the texts and folds (the folds share training texts): on noise labels a row's score moved 1.2 to
2.0 times its standard error between draws, 1.7 typically. So the table beats chance only where its best row clears
:func:`chance_bar`: ``2 * sqrt(2 ln k)`` standard errors above chance, the standard error a typical row's (the median
of the table's, steadier than the best row's own, which on noise is often the row whose few folds happened to agree).

Measured on the bundled model, 120 food reviews, 5 folds, 30 draws of random labels and folds (the README's probe
section gives the rest, planted signals too): the old bar (the best row one of its own standard errors above chance)
left the note out on 83% of draws; this bar on 3%. A constant candidate (features the same for every text, such as the
embedding layer's CLS vector) can score only chance and is left out of the table by name (:func:`constant`).
"""

from __future__ import annotations

import math

import numpy as np

CHANCE_NAMES = {"roc_auc": "chance (every text scored alike)",
                "accuracy": "chance (always the training folds' most frequent class)",
                "r2": "chance (always the training folds' mean label)"}

CONSTANT_WHY = "its features are the same for every text, so it scores chance whatever the labels"

# how many times its fold standard error a row's score moves between draws of noise labels and folds: 1.2 to 2.0,
# 1.7 typically, measured (see the module's docstring); rounded up
UNDERSTATEMENT = 2.0


def std_err(scores: np.ndarray) -> float:
    """The fold scores' standard deviation over the square root of the folds, as if the folds were independent."""
    return float(np.std(scores, ddof=1) / np.sqrt(len(scores)))


def fit_score(model, X_train, y_train, X_test, y_test, metric, groups=None) -> float:
    """One fold's score, each row's and chance's: ``model`` fitted on the training rows, scored by ``metric`` on the
    test rows. ``groups``: the training rows' groups, for a regression's ridge (its alpha chosen leaving each out
    together)."""
    from sklearn.metrics import get_scorer

    model.fit(X_train, y_train, **({} if groups is None else {f"{model.steps[-1][0]}__groups": groups}))
    return float(get_scorer(metric)(model, X_test, y_test))


def chance_score(task, y, folds, metric) -> dict:
    """The score of a model that ignores the texts, on the probe's folds: what a row must beat to say anything. ROC
    AUC's is 0.5 whatever the balance of the classes; accuracy's is the share of the most frequent class (0.60 where
    it holds 60% of the texts), R^2's about 0 (a little below, the training folds' mean missing each test fold's)."""
    from sklearn.dummy import DummyClassifier, DummyRegressor

    X = np.zeros((len(y), 1))
    scores = np.asarray([fit_score(DummyClassifier(strategy="prior") if task == "classification" else DummyRegressor(),
                                   X[train], y[train], X[test], y[test], metric) for train, test in folds])
    return {"name": CHANCE_NAMES[metric], "score": float(scores.mean()), "std_err": std_err(scores)}


def constant(X, rtol: float = 1e-6) -> bool:
    """Whether every text has the same features (the embedding layer's CLS vector is one vector for every text, its
    position and token the same): such a candidate scores chance whatever the labels, and on noise labels, where every
    row scores about chance, the one-standard-error rule could recommend it. Values that differ by float32 rounding
    alone (a kernel that sums in another order for another batch) are the same: the scaler before the linear model
    would blow that rounding up to unit variance, features of noise. The rounding is judged against the features'
    largest value, not each column's own: a LayerNorm's output has columns near zero, where its scale and shift nearly
    cancel, and there a last bit rounded otherwise is a large share of the value (the bundled model's, up to 3.2e-4)."""
    if len(X) == 0:
        return True
    X = np.asarray(X, dtype=np.float64)
    return bool(np.all(np.ptp(X, axis=0) <= rtol * np.abs(X).max()))


def chance_bar(table, chance: dict) -> dict:
    """Whether the table's best row beats chance by more than the best of its rows would on noise labels.

    Returns ``{"beaten", "bar", "rows", "std_err", "margin"}``: ``bar`` the score the best row must exceed, chance's
    score plus ``margin`` (``2 * sqrt(2 ln rows)``) standard errors, ``std_err`` the median of the rows' (with
    chance's own, which accuracy's has, added in quadrature).
    """
    rows = len(table)
    margin = UNDERSTATEMENT * math.sqrt(2 * math.log(rows)) if rows > 1 else UNDERSTATEMENT
    se = math.hypot(float(np.median(table["std_err"])), chance["std_err"])
    bar = chance["score"] + margin * se
    return {"beaten": bool(table["score"].iloc[0] > bar), "bar": float(bar), "rows": int(rows), "std_err": float(se),
            "margin": float(margin)}


def chance_lines(result) -> list[str]:
    """The chance reference as printed beside the table, what was left out for scoring only chance, and a note when
    no row clearly beats chance: a 10-class accuracy of 0.60 reads as a fair model until one sees that always
    answering the majority class scores 0.60."""
    lines = [f"left out: {left['candidate']} ({left['why']})" for left in getattr(result, "left_out", None) or []]
    if result.chance is None:
        return lines
    chance, best = result.chance, result.table.iloc[0]
    lines.append(f"{chance['name']}: {chance['score']:.4f} +/- {chance['std_err']:.4f}")
    verdict = chance_bar(result.table, chance)
    if not verdict["beaten"]:
        none_can = "; no score can, with so few texts" if verdict["bar"] >= 1 else ""
        lines.append(f"note: no row beats chance clearly: the best, rank 1, scores {best['score']:.4f}, not above "
                     f"{verdict['bar']:.4f}, chance plus {verdict['margin']:.1f} standard errors of "
                     f"{verdict['std_err']:.4f} (the best of {verdict['rows']} rows scored on labels the texts do not "
                     f"predict seldom passes it{none_can}): these texts may not "
                     "predict these labels, and the recommendation is then noise; or they predict them too weakly to "
                     "show with this many texts (a real but weak signal falls under the bar on some draws of texts "
                     "and folds): more labelled texts would tell the two apart.")
    return lines
