"""Choose pooling and layers by evidence: one embedding pass keeps every layer's pooled vectors, then a
cross-validated linear model scores each pooling x layer choice.

The pass embeds with CLS, mean and max pooling of every layer (``layer_agg="concat"``); each candidate's features
are then sliced or averaged from that matrix exactly as :class:`~bertfeat.BertEmbedder` would compute them, so the
probe costs one embedding pass plus the model fits.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Set as AbstractSet
from dataclasses import dataclass, field

import numpy as np

from bertfeat.probe_chance import (
    CONSTANT_WHY, chance_bar, chance_lines, chance_score, constant, fit_score, std_err,
)
from bertfeat.probe_folds import _check_folds, _check_groups, _fold_groups, _grouped, _text_groups, groups_kept
from bertfeat.probe_labels import _check_label_types, _check_labels, _decimals_as_numbers, _task

ALL_POOLINGS = ("cls", "mean", "max")


@dataclass(frozen=True)
class Candidate:
    """One BertEmbedder configuration the probe scores."""

    pooling: tuple[str, ...]
    layers: tuple[int, ...]  # absolute indices, 0 = embedding output
    layer_agg: str = "mean"

    def label(self, num_layers: int) -> str:
        rel = _relative(self.layers, num_layers)
        if len(self.layers) == 1:
            where = f"layer {self.layers[0]}"
        elif self.layer_agg == "mean":
            where = f"mean of layers {rel}"
        else:
            where = f"concat of layers {rel}"
        return f"{'+'.join(self.pooling)}, {where}"

    def params(self, num_layers: int) -> dict:
        rel = _relative(self.layers, num_layers)
        return {"pooling": "+".join(self.pooling), "layers": rel[0] if len(rel) == 1 else rel,
                "layer_agg": self.layer_agg}


def _relative(layers, num_layers) -> list[int]:
    """Layers counted from the last (-1) when they are the top ones, which reads better and transfers across models."""
    return [layer - (num_layers + 1) for layer in layers]


def default_candidates(num_layers: int, poolings=ALL_POOLINGS) -> list[Candidate]:
    """Single layers, means of the last k layers, concatenations of the last 2 and 4, and pooling combinations."""
    top = num_layers
    out = []
    for p in poolings:
        out += [Candidate((p,), (layer,)) for layer in range(0, top + 1)]
        for k in sorted({2, 3, 4, top}):
            if 2 <= k <= top:
                out.append(Candidate((p,), tuple(range(top - k + 1, top + 1))))
        for k in (2, 4):
            if k <= top:
                out.append(Candidate((p,), tuple(range(top - k + 1, top + 1)), "concat"))
    combos = [c for c in (("cls", "mean"), ("mean", "max")) if set(c) <= set(poolings)]
    for combo in combos:
        out.append(Candidate(combo, (top,)))
        if top >= 4:
            out.append(Candidate(combo, tuple(range(top - 3, top + 1))))
    return out


def candidate_features(blocks: np.ndarray, poolings: tuple[str, ...], cand: Candidate, normalize: bool) -> np.ndarray:
    """Features of ``cand`` from ``blocks`` (n, n_poolings, n_layers + 1, dim), as BertEmbedder computes them."""
    from bertfeat.pooling import average_layers, l2_normalize

    groups = [list(cand.layers)] if cand.layer_agg == "mean" else [[layer] for layer in cand.layers]
    out = average_layers(blocks, [poolings.index(p) for p in cand.pooling], groups)
    if normalize:
        out = l2_normalize(out)
    return out.reshape(len(blocks), -1)


@dataclass
class ProbeResult:
    """The probe's table (sorted, best first), its recommendation, and what it cost.

    ``table`` has one row per candidate: ``kind`` is ``"embedding"`` (a BertEmbedder alone), ``"tfidf"`` (the
    TF-IDF baseline) or ``"union"`` (TF-IDF and a BertEmbedder side by side, see :mod:`bertfeat.union`);
    ``params`` holds each row's BertEmbedder keyword arguments. ``recommended`` is the recommended row's
    BertEmbedder keyword arguments (None when TF-IDF alone is recommended) and ``recommended_kind`` its kind;
    :meth:`estimator` gives it as an unfitted transformer and :meth:`code` as Python code. ``chance`` is the score
    of a model that ignores the texts on the same folds (``name``, ``score``, ``std_err``): ROC AUC 0.5, the most
    frequent class's share for accuracy (0.60 for a 10-class task whose majority class holds 60% of the texts), R^2
    about 0; a row is worth something only by how far it beats it. ``chance["beaten"]`` says whether the best row
    beats it clearly, scoring above ``chance["bar"]`` (:func:`bertfeat.probe_chance.chance_bar`: chance plus
    ``2 * sqrt(2 ln k)`` standard errors for a table of k rows; the best of k rows scored on noise lands about
    ``sqrt(2 ln k)`` above chance, and a fold standard error understates a score's spread); where it does not, the
    table reads as noise. ``left_out`` lists the candidates not scored, each with why (features the same for every
    text, such as the embedding layer's CLS vector, score chance whatever the labels).
    """

    table: "object"  # pandas.DataFrame
    metric: str
    task: str
    recommended: dict | None
    best: dict | None
    num_layers: int
    baseline: dict | None = None
    seconds: dict = field(default_factory=dict)
    recommended_kind: str = "embedding"
    recommended_rank: int = 1
    models: dict = field(default_factory=dict)
    cv: object = None  # the cross-validation splitter every row was scored with
    classifier_params: dict = field(default_factory=dict)
    missing: str = "error"  # the probe's missing-text policy, which its TF-IDF estimators apply as its embedders do
    random_state: int = 0  # the folds' shuffle seed
    chance: dict | None = None  # the score of a model that ignores the texts, on the same folds
    folds: dict = field(default_factory=dict)  # what the folds kept together: see probe()'s Returns
    left_out: list = field(default_factory=list)  # candidates not scored, each with why: see probe()'s Returns

    def _row(self, rank=None):
        rank = self.recommended_rank if rank is None else rank
        rows = self.table[self.table["rank"] == rank]
        if rows.empty:
            raise ValueError(f"rank={rank!r} is not in the table; ranks run from 1 to {len(self.table)}.")
        return rows.iloc[0]

    def estimator(self, rank=None):
        """The features of the recommended row (or of row ``rank``) as an unfitted scikit-learn transformer of texts.

        A :class:`~bertfeat.BertEmbedder`, a ``TfidfVectorizer``, or their union with the embedding block scaled
        by :class:`~bertfeat.union.BlockScaler`; it drops into a Pipeline or a ColumnTransformer.
        """
        from bertfeat.embedder import BertEmbedder
        from bertfeat.union import tfidf, tfidf_union

        row = self._row(rank)
        if row["kind"] == "tfidf":
            return tfidf(self.missing)
        embedder = BertEmbedder(**row["params"])
        return embedder if row["kind"] == "embedding" else tfidf_union(embedder)

    def pipeline(self, rank=None):
        """:meth:`estimator` followed by the linear model the probe scored it with (unfitted)."""
        from sklearn.pipeline import make_pipeline

        kind = self._row(rank)["kind"]
        return make_pipeline(self.estimator(rank), *_linear_model(self.task, kind, self.classifier_params))

    def code(self, rank=None) -> str:
        """Python code that builds :meth:`estimator` as ``features``."""
        from bertfeat.union import TFIDF_PARAMS

        row = self._row(rank)
        tfidf = f"TfidfVectorizer({_kwargs(TFIDF_PARAMS)})"
        imports = "from sklearn.feature_extraction.text import TfidfVectorizer\n"
        if self.missing != "error":  # the TF-IDF reads missing texts as the probe's did: see bertfeat.union.tfidf
            tfidf = f"make_pipeline(MissingText(missing={self.missing!r}), {tfidf})"
        if row["kind"] == "tfidf":
            if self.missing == "error":
                return f"{imports}\nfeatures = {tfidf}\n"
            return (f"{imports}from sklearn.pipeline import make_pipeline\n\nfrom bertfeat.union import MissingText\n\n"
                    f"features = {tfidf}\n")
        params = dict(row["params"])
        if params.get("model") == "default":
            params.pop("model")
        embedder = f"BertEmbedder({_kwargs(params)})"
        if row["kind"] == "embedding":
            return f"from bertfeat import BertEmbedder\n\nfeatures = {embedder}\n"
        blocks = "BlockScaler" if self.missing == "error" else "BlockScaler, MissingText"
        return (f"{imports}from sklearn.pipeline import make_pipeline, make_union\n\n"
                f"from bertfeat import BertEmbedder\nfrom bertfeat.union import {blocks}\n\n"
                f"features = make_union(\n    {tfidf},\n    make_pipeline({embedder}, BlockScaler()),\n)\n")

    def plot(self, path):
        """Score by layer for each pooling and model, with the TF-IDF and best-union scores; saves a PNG."""
        from bertfeat.probe_plot import plot_probe

        return plot_probe(self, path)

    def __repr__(self) -> str:
        cols = [c for c in ("model", "kind", "candidate", "n_features", "score", "std_err") if c in self.table]
        out = (f"ProbeResult({self.task}, metric={self.metric}, recommended={self.recommended_kind} "
               f"{self.recommended})\n{self.table[cols].head(10).to_string(index=False)}")
        return out + "".join(f"\n{line}" for line in chance_lines(self))


def _kwargs(d: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in d.items())


def _settings_of_its_own(func):
    """``func`` run with scikit-learn's settings that change what its own fits give at their defaults: the caller's
    (``sklearn.set_config(transform_output="pandas")``, a notebook's first line, or ``enable_metadata_routing=True``)
    are for their own pipelines, while the probe reads its embedding pass and each fold's scaled features as arrays,
    which a frame is not ("'DataFrame' object has no attribute 'reshape'"), and hands a regression's ridge its groups
    as ``<step>__groups``, which a routing Pipeline refuses. The settings are the caller's again when it returns."""

    @functools.wraps(func)
    def with_own_settings(*args, **kwargs):
        from sklearn import config_context

        with config_context(transform_output="default", enable_metadata_routing=False):
            return func(*args, **kwargs)

    return with_own_settings


@_settings_of_its_own
def probe(
    texts,
    y,
    *,
    model="default",
    poolings=ALL_POOLINGS,
    max_length: int | None = None,
    long_text: str = "truncate",
    stride: int | None = None,
    normalize: bool = False,
    prefix: str | None = None,
    prompt_name: str | None = None,
    cv: int = 5,
    groups=None,
    task: str = "auto",
    baseline: bool = True,
    unions: int = 3,
    random_state: int = 0,
    plot: str | None = None,
    cache_dir: str | None = None,
    device: str = "auto",
    dtype: str = "auto",
    batch_tokens: int | None = None,
    missing: str = "error",
    progress: bool = False,
) -> ProbeResult:
    """Score every pooling x layer choice of one or several models on ``texts`` and labels ``y``, alone and side
    by side with TF-IDF, with one embedding pass per model.

    A cross-validated linear model (logistic regression for classes, ridge for numbers) scores each candidate;
    the table is sorted by score with standard errors across folds (``std_err``: the fold scores' standard deviation
    over the square root of ``cv``, as if the folds were independent; their training parts overlap, so it
    understates the uncertainty: a yardstick between rows on the same folds, not a confidence interval). ``model``
    may be a list: every model's candidates go in one table, with each model's embedding time per 1,000 texts
    (``embed_s_per_1k``, this run's wall time: texts the cache answered cost almost nothing, and
    ``models[name]["cache_hits"]`` counts them). With ``cache_dir`` the pass fills the entries
    ``BertEmbedder(cache_all_layers=True)`` reads, so the recommended estimator, which carries that cache, does not
    run the model again on these texts. ``baseline`` adds TF-IDF alone
    (word 1-2 grams); ``unions`` scores that many of each model's best candidates side by side with the same
    TF-IDF (0 for none), the embedding block scaled inside each fold by :class:`~bertfeat.union.BlockScaler`.
    ``recommended`` applies the one-standard-error rule: the row with the fewest features whose score is within
    one standard error of the best, so a union is recommended only when it beats every smaller option clearly. The
    best row's score is the highest of many on the same folds, so it is optimistic (chosen and scored on the same
    data); for a held-out figure, run the probe inside an outer cross-validation (``benchmarks/evidence_unions.py``).

    Parameters
    ----------
    texts : list, array or pandas/polars Series of str
        One text column; missing and blank texts follow ``missing``.
    y : list, array or Series
        One label per text, paired by position (pandas texts and labels whose indexes order the rows otherwise
        are refused).
    model : str or list of str, default="default"
        As :class:`~bertfeat.BertEmbedder`'s ``model``; a list compares the models in one table.
    poolings : list of str, default=('cls', 'mean', 'max')
        The poolings scored, each alone and, where both are given, as ``"cls+mean"`` and ``"mean+max"``. A model
        whose CLS pooling :class:`~bertfeat.BertEmbedder` refuses (a causal decoder, a tokenizer that puts nothing
        before the text) is scored without it, with a :class:`~bertfeat.exceptions.ModelNoteWarning`.
    max_length, long_text, stride, normalize, prefix, prompt_name : as in :class:`~bertfeat.BertEmbedder`
        The recipe every candidate shares.
    cv : int, default=5
        Cross-validation folds; copies of one text always fall in one fold (texts that differ only in case, spacing
        or punctuation are copies too), and for classes every test fold holds every class (refused before any work
        where no shuffle of the copies allows it).
    groups : list, array or Series, default=None
        The group of each text, paired by position (the customer of a review, the book of a paragraph, the patient
        of a note): every group's texts fall in one fold, as scikit-learn's ``StratifiedGroupKFold`` (classes) and
        ``GroupKFold`` (numbers) keep them, so no model is scored on a group it was trained on (a group split
        across folds inflates every score, silently: its texts share words, names and style). Copies of a text
        stay together too, joining their groups. For numbers the ridge's alpha, chosen inside each training fold,
        leaves each group out together as well (``DistinctRowsRidgeCV.fit``'s ``groups``). Refused before any work:
        a missing group, fewer groups than ``cv``, a class in fewer groups than ``cv``.
    task : {"auto", "classification", "regression"}, default="auto"
        ``"auto"`` is a regression for float labels with more than 10 distinct values, else a classification
        (ROC AUC for two classes, accuracy for more; R^2 for a regression).
    baseline : bool, default=True
        Score TF-IDF alone (word 1-2 grams).
    unions : int, default=3
        Score each model's ``unions`` best candidates side by side with that TF-IDF; 0 for none.
    random_state : int, default=0
        Seed of the folds' shuffle (0 to 2**32 - 1): the same seed gives the same folds and the same scores, another
        seed another draw of them (how much the table moves between seeds shows how far to trust its order);
        ``result.cv`` gives the very folds every row was scored with.
    plot : str, default=None
        Save the score-by-layer plot to this file (its folder must exist; the format follows the suffix).
    cache_dir : str, default=None
        A :class:`~bertfeat.BertEmbedder` cache directory, filled with the entries ``cache_all_layers=True`` reads.
    device, dtype, batch_tokens, progress : as in :class:`~bertfeat.BertEmbedder`
    missing : {"error", "zero"}, default="error"
        A missing or blank text is an error naming the row, or a zero vector and an empty TF-IDF document
        (``"nan"`` is refused: no linear model scores rows of NaN).

    Returns
    -------
    ProbeResult
        ``table``, ``recommended``, ``estimator()``, ``code()``, ``cv``, ``folds`` (``n_splits``, ``random_state``,
        ``copies_kept_together``: whether some texts were copies of others, each kept in one fold, False where every
        text is distinct; ``n_groups``: the groups given, None without ``groups``, and ``n_fold_groups``: the units
        the folds kept whole, groups joined by copies), ``chance`` (the score of a model that
        ignores the texts, on the same folds: the reference every score is read against; ``beaten``, whether the
        best row scores above ``bar``, what the best of the table's rows seldom passes on labels the texts do not
        predict), ``left_out`` (candidates not scored: those whose features are the same for every text, which score
        chance whatever the labels, each with ``model``, ``candidate`` and ``why``) and the costs.

    Examples
    --------
    >>> import pandas as pd
    >>> from bertfeat import probe
    >>> df = pd.read_csv("data/fine_foods.csv.gz").head(40)
    >>> result = probe(df["review"], df["score"], cv=2, poolings=["mean"], baseline=False, unions=0)
    >>> result.metric, result.recommended_kind, sorted(result.recommended)
    ('roc_auc', 'embedding', ['layer_agg', 'layers', 'model', 'pooling'])
    """
    import pandas as pd

    models = _model_list(model)
    poolings = _check_poolings(poolings)
    if not isinstance(random_state, (int, np.integer)) or isinstance(random_state, bool) or not (
            0 <= random_state < 2**32):  # numpy's seeds: a negative one failed with numpy's "Seed must be between ..."
        raise ValueError(f"random_state={random_state!r} is not valid: expected an int from 0 to 2**32 - 1 (the folds' "
                         "shuffle seed), so that result.cv gives the very folds every row was scored with.")
    if not isinstance(unions, int) or isinstance(unions, bool) or unions < 0:
        raise ValueError(f"unions={unions!r} is not valid: expected how many of each model's best candidates to "
                         "score side by side with TF-IDF (an int >= 0; 0 for none).")
    if missing == "nan":
        raise ValueError("missing='nan' is not valid for the probe: its linear models cannot score rows of NaN. "
                         "Pass missing='zero' (a zero vector and an empty TF-IDF document for each missing text) or "
                         "drop the missing texts first.")
    # first: probe(df, 'label') would be refused for the frame's label column, as if texts were wrong
    if isinstance(y, (str, bytes, Mapping, AbstractSet)) or not hasattr(y, "__len__") or getattr(y, "ndim", 1) == 0:
        raise ValueError(f"y={y!r} is not valid: pass the labels themselves, one per text, as a 1-D array, list or "
                         "Series (such as df['label'], not the column's name).")
    if plot:  # a file name must not cost the work: the plot is saved after every fit
        import os

        given, plot = plot, os.path.expanduser(os.fspath(plot))  # "~/p.png" as model= and cache_dir= read it
        _check_writable(plot, f"plot={_plain(given)!r}", plot=True)
    from bertfeat.inputs import one_text_column

    given, texts = texts, one_text_column(texts, "the probe scores one column of texts", "texts")
    if isinstance(given, (pd.Series, pd.DataFrame)) and isinstance(y, pd.Series) and _reordered(given.index, y.index):
        raise ValueError("texts and y hold the same index labels in another order, and the probe pairs them by "
                         "position (row i with row i), not by index: align them first (y.loc[texts.index]), or pass "
                         "y.to_numpy() if their positions pair them.")
    _check_label_types(y)  # before np.asarray, which reads 1 and "1" as one class
    y = _decimals_as_numbers(np.asarray(y))
    if len(y) != len(texts):
        raise ValueError(f"y has {len(y)} labels but there are {len(texts)} texts; pass one label per text.")
    _check_labels(y, task, cv)  # before the embedding pass, which is the expensive part
    task = _task(y) if task == "auto" else task
    if groups is not None and isinstance(given, (pd.Series, pd.DataFrame)) and isinstance(groups, pd.Series) and (
            _reordered(given.index, groups.index)):
        raise ValueError("texts and groups hold the same index labels in another order, and the probe pairs them by "
                         "position (row i with row i), not by index: align them first (groups.loc[texts.index]), or "
                         "pass groups.to_numpy() if their positions pair them.")
    given_groups = None if groups is None else _check_groups(groups, len(texts))
    copies = _text_groups(texts)
    fold_groups = _fold_groups(copies, given_groups)
    n_groups = None if given_groups is None else int(given_groups.max()) + 1  # codes 0, 1, ...
    n_fold_groups = None if fold_groups is None else len(np.unique(fold_groups))
    scoring = _scorer(task, y, cv, random_state, fold_groups,
                      grouped=None if n_groups is None else (n_groups, n_fold_groups))
    folds = list(scoring["splitter"].split(np.zeros((len(y), 1)), y))
    _check_folds(task, y, folds, grouped=given_groups is not None)
    fold_facts = {"n_splits": len(folds), "random_state": int(random_state),
                  "copies_kept_together": copies is not None, "n_groups": n_groups, "n_fold_groups": n_fold_groups}
    # plain Python values (a pathlib cache_dir, numpy ints): the rows' params go into code() as written
    shared = {k: _plain(v) for k, v in dict(max_length=max_length, long_text=long_text, stride=stride,
                                            normalize=normalize, prefix=prefix, prompt_name=prompt_name, dtype=dtype,
                                            missing=missing, cache_dir=cache_dir).items()
              if v != _EMBEDDER_DEFAULTS[k]}
    if cache_dir is not None:  # the recommended BertEmbedder then derives its features from the probe's cache rows
        shared["cache_all_layers"] = True

    from bertfeat.embedder import BertEmbedder

    run = {name: _poolings_run_by(name, poolings) for name in models}  # CLS pooling left out where it is refused
    for name in models:  # every parameter and the cache directory checked before any work (TF-IDF included)
        BertEmbedder(name, pooling="+".join(run[name]), device=device, batch_tokens=batch_tokens,
                     **{k: v for k, v in shared.items() if k != "cache_all_layers"}).fit(["x"])

    from bertfeat.embedder import _row_namer
    from bertfeat.encode import split_missing

    _, is_missing = split_missing(texts, missing, _row_namer(["text"], len(texts), given))  # before any work
    if is_missing.all():  # under missing='zero' every row a zero vector: a table of chance scores and a pick of noise
        raise ValueError(f"all {len(texts)} texts are missing or blank, so every candidate would be scored on zero "
                         "vectors and the probe would rank noise: check that texts is the column of texts you mean, "
                         "or drop the rows without text first.")

    t_fits = 0.0
    need_tfidf = baseline or unions > 0
    t1 = time.perf_counter()
    tfidf_folds = _tfidf_folds(texts, folds, missing) if need_tfidf else None
    t_fits += time.perf_counter() - t1
    rows, model_info, seconds, left_out = [], {}, {}, []
    for name in models:
        t0 = time.perf_counter()
        blocks, run[name], info = _embed_all_layers(texts, name, run[name], dict(
            max_length=max_length, long_text=long_text, stride=stride, prefix=prefix, prompt_name=prompt_name,
            device=device, dtype=dtype, batch_tokens=batch_tokens, missing=missing, cache_dir=cache_dir,
            progress=progress))
        info["embed_seconds"] = round(time.perf_counter() - t0, 2)
        info["embed_s_per_1k"] = round(info["embed_seconds"] * 1000 / len(texts), 3)
        model_info[name] = info
        t1 = time.perf_counter()
        label = (lambda c: c) if len(models) == 1 else (lambda c, n=name: f"{n}: {c}")
        model_rows = []
        for cand in default_candidates(info["num_layers"], run[name]):
            X = candidate_features(blocks, run[name], cand, normalize)
            if constant(X):  # scores chance whatever the labels; on noise the smallest-row rule could pick it
                left_out.append({"model": name, "candidate": label(cand.label(info["num_layers"])),
                                 "why": CONSTANT_WHY})
                continue
            scores = np.asarray([fit_score(scoring["embedding"](), X[tr], y[tr], X[te], y[te], scoring["metric"],
                                            _inner(scoring, tr)) for tr, te in folds])
            params = {"model": name, **cand.params(info["num_layers"]), **shared}
            model_rows.append((cand, _table_row(name, "embedding", label(cand.label(info["num_layers"])), cand,
                                                X.shape[1], scores, info["embed_s_per_1k"], params)))
        rows += [row for _, row in model_rows]
        for cand, row in sorted(model_rows, key=lambda cr: (-cr[1]["score"], cr[1]["n_features"]))[:unions]:
            X = candidate_features(blocks, run[name], cand, normalize)
            scores = union_scores(X, y, folds, tfidf_folds, scoring)
            rows.append(_table_row(name, "union", label(f"TF-IDF + {cand.label(info['num_layers'])}"), cand,
                                   _tfidf_width(tfidf_folds) + X.shape[1], scores, info["embed_s_per_1k"],
                                   dict(row["params"])))
        t_fits += time.perf_counter() - t1
        seconds[f"embed {name}" if len(models) > 1 else "embed"] = info["embed_seconds"]

    base = None
    if baseline:
        t1 = time.perf_counter()
        scores = np.asarray([fit_score(scoring["sparse"](), t_train, y[train], t_test, y[test], scoring["metric"],
                                        _inner(scoring, train))
                             for (train, test), (t_train, t_test) in zip(folds, tfidf_folds)])
        t_fits += time.perf_counter() - t1
        rows.append(_table_row(None, "tfidf", "TF-IDF (1-2 grams)", None, _tfidf_width(tfidf_folds), scores, np.nan,
                               None))
        base = {"name": "TF-IDF (1-2 grams) baseline", "score": float(scores.mean()),
                "std_err": std_err(scores)}
    seconds["fits"] = round(t_fits, 2)
    if not rows:  # every candidate left out, no TF-IDF row: nothing was scored
        raise ValueError(f"every candidate's features are the same for every text ({len(left_out)} candidates, "
                         f"{len(texts)} texts), so none can score more than chance: the model reads these texts alike, "
                         "as texts truncated to the same first tokens (pass long_text='chunk' to embed them whole) or "
                         "texts of characters its tokenizer does not know; or drop baseline=False to score TF-IDF.")

    table = pd.DataFrame(rows).sort_values(["score", "n_features"], ascending=[False, True]).reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    best = table.iloc[0]
    within = table[table["score"] >= best["score"] - best["std_err"]]
    rec = within.sort_values(["n_features", "score"], ascending=[True, False]).iloc[0]
    first = model_info[models[0]]
    chance = chance_score(task, y, folds, scoring["metric"])
    verdict = chance_bar(table, chance)
    chance.update(beaten=verdict["beaten"], bar=verdict["bar"])
    result = ProbeResult(
        table=table, metric=scoring["metric"], task=task,
        recommended=None if rec["params"] is None else dict(rec["params"]),
        best=None if best["params"] is None else dict(best["params"]), num_layers=first["num_layers"],
        baseline=base, seconds=seconds, recommended_kind=rec["kind"], recommended_rank=int(rec["rank"]),
        models=model_info, cv=scoring["splitter"], classifier_params=scoring["classifier_params"], missing=missing,
        random_state=int(random_state), chance=chance, folds=fold_facts,
        left_out=left_out,
    )
    if plot:
        result.plot(plot)
    return result


def _reordered(a, b) -> bool:
    """Two indexes of the same unique labels in another order: pandas would pair their rows otherwise than position."""
    return (len(a) == len(b) and not a.equals(b) and a.is_unique and b.is_unique and bool(a.isin(b).all()))


def _check_writable(path, name: str, plot: bool = False) -> None:
    """Refuse an output file the probe could not write after its work: a folder, a missing or read-only folder, a
    format matplotlib lacks."""
    import os

    if os.fspath(path) == "-":  # the Unix name of standard output, which carries the table
        raise ValueError(f"{name} (standard output) cannot be written: the probe writes its {'plot' if plot else 'JSON'} "
                         "to a file; name the file to write (a file named '-' is ./-).")
    if os.path.isdir(os.fspath(path)):  # open() and savefig() fail on it after the work: "Is a directory"
        raise ValueError(f"{name} is a folder; name a file in it to write the {'plot' if plot else 'JSON'} to.")
    from bertfeat.sources import absolute

    folder = os.path.dirname(absolute(os.fsdecode(os.fspath(path))))  # lnk/.. as the system reads it
    if not os.path.isdir(folder):
        raise ValueError(f"{name} cannot be written: its folder {folder!r} does not exist; create it first.")
    given = os.fspath(path)  # a file there (/dev/stdout, a report of one's own) may be written where the folder is not
    if not os.access(folder, os.W_OK) and not (os.path.exists(given) and os.access(given, os.W_OK)):
        raise PermissionError(f"{name} cannot be written: its folder {folder!r} is not writable (read-only filesystem "
                              f"or no permission); write the {'plot' if plot else 'JSON'} elsewhere.")
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if plot and suffix:
        from matplotlib.backend_bases import FigureCanvasBase

        if suffix[1:] not in FigureCanvasBase.get_supported_filetypes():
            raise ValueError(f"{name} cannot be written: matplotlib saves no {suffix!r} files; name a .png, .svg or "
                             ".pdf file.")


def _check_poolings(poolings) -> tuple[str, ...]:
    from bertfeat.recipe import POOLINGS

    chosen = tuple(poolings) if isinstance(poolings, (list, tuple)) else None
    if not chosen or any(p not in POOLINGS for p in chosen) or len(set(chosen)) != len(chosen):
        raise ValueError(f"poolings={poolings!r} is not valid: expected some of {list(POOLINGS)}, each once, as a "
                         "list or tuple (the candidates combine them).")
    return chosen


def _poolings_run_by(model: str, poolings: tuple[str, ...]) -> tuple[str, ...]:
    """``poolings`` less ``"cls"`` for a model whose CLS pooling :class:`~bertfeat.BertEmbedder` refuses at fit (a
    causal decoder config.json names, a tokenizer that puts nothing before the text: :func:`bertfeat.encode.
    first_token_fault`), saying so: the probe's default poolings hold it, and the command line and R take no other.
    CLS pooling alone is left to the refusal; a decoder found only by the loaded model is left out at the embedding
    pass (:func:`_embed_all_layers`)."""
    if "cls" not in poolings or len(poolings) == 1:
        return poolings
    from bertfeat.encode import first_token_fault
    from bertfeat.models import resolve_model

    try:
        spec = resolve_model(model)
    except (ValueError, OSError):  # refused below by BertEmbedder's fit, in its own order
        return poolings
    fault = first_token_fault(spec)
    return poolings if fault is None else _without_cls(model, poolings, fault, spec.model_type)


def _without_cls(model: str, poolings: tuple[str, ...], fault: str, model_type: str | None) -> tuple[str, ...]:
    """``poolings`` less ``"cls"``, with a note saying why (``fault``: :func:`bertfeat.encode.first_token_fault`)."""
    import warnings

    from bertfeat.exceptions import ModelNoteWarning, user_stacklevel

    why = {"causal": f"is a causal decoder (model_type {model_type!r}), whose first token attends to no token after it",
           "nothing first": "has a tokenizer that puts no special token before the text (its first token is the "
                            "text's first word)"}[fault]
    rest = tuple(p for p in poolings if p != "cls")
    warnings.warn(f"model={model!r} {why}, so the probe leaves out its CLS pooling and scores its "
                  f"{' and '.join(rest)} pooling.", ModelNoteWarning, stacklevel=user_stacklevel())
    return rest


def _plain(value):
    """A numpy scalar as the Python number it holds, a path as its string; anything else as it is."""
    import os

    if isinstance(value, np.generic):
        return value.item()
    return os.fspath(value) if isinstance(value, os.PathLike) else value


_EMBEDDER_DEFAULTS = dict(max_length=None, long_text="truncate", stride=None, normalize=False, prefix=None,
                          prompt_name=None, dtype="auto", missing="error", cache_dir=None)


def _model_list(model) -> list[str]:
    models = [model] if isinstance(model, str) or hasattr(model, "__fspath__") else model
    if not isinstance(models, (list, tuple)) or not models or not all(
            isinstance(m, str) or hasattr(m, "__fspath__") for m in models):
        raise ValueError(f"model={model!r} is not valid: expected a model name or path, or a list of them such as "
                         "['default', 'sentence-transformers/all-mpnet-base-v2'].")
    models = [str(m) for m in models]
    if len(set(models)) != len(models):
        raise ValueError(f"model={model!r} names a model twice; name each model once.")
    return models


def _embed_all_layers(texts, model, poolings, params):
    """One embedding pass: ``(blocks (n, n_poolings, n_layers + 1, hidden), the poolings run, facts about the model
    and the pass)``: ``poolings`` less CLS pooling where the loaded model refuses it (:func:`_without_cls`)."""
    from bertfeat.embedder import BertEmbedder
    from bertfeat.encode import ClsPoolingRefused

    # With a cache, the pass fills the all-layers entries (every pooling), the ones BertEmbedder(cache_all_layers=
    # True) reads: the recommended estimator, and later probes with other poolings, then reuse these rows.
    cached = params.get("cache_dir") is not None
    spec_est = BertEmbedder(model, pooling="+".join(poolings), layers=0, cache_all_layers=cached, **params)
    num_layers = spec_est.fit(["x"]).recipe_.num_layers
    est = spec_est.set_params(layers=list(range(num_layers + 1)), layer_agg="concat")
    try:
        X_all = est.fit_transform(texts)
    except ClsPoolingRefused as refused:  # a decoder the loaded model finds, before any text runs: the rest is scored
        if len(poolings) == 1:
            raise
        poolings = _without_cls(model, poolings, refused.fault, refused.model_type)
        X_all = est.set_params(pooling="+".join(poolings)).fit_transform(texts)
    d = est.recipe_.hidden_size
    info = {"num_layers": num_layers, "hidden_size": d, "texts": len(texts), "unique": est.stats_.unique,
            "cache_hits": est.stats_.cache_hits, "fingerprint": est.recipe_.all_layers().fingerprint() if cached
            else est.recipe_.fingerprint()}
    return X_all.reshape(len(X_all), len(poolings), num_layers + 1, d), poolings, info


def _table_row(model, kind, label, cand, n_features, scores, s_per_1k, params) -> dict:
    return {
        "model": model, "kind": kind, "candidate": label,
        "layers": None if params is None else str(params["layers"]),
        "layer_agg": None if params is None else params["layer_agg"],
        "pooling": None if cand is None else "+".join(cand.pooling),
        "layer": cand.layers[0] if cand is not None and len(cand.layers) == 1 else None,
        "n_layers": None if cand is None else len(cand.layers),
        "n_features": int(n_features), "score": float(scores.mean()), "std_err": std_err(scores),
        "embed_s_per_1k": s_per_1k, "params": params,
    }


C_EMBEDDING = 0.05
C_SPARSE = 10.0
RIDGE_ALPHAS = tuple(np.logspace(-2, 4, 13))


def _linear_model(task: str, kind: str, params: dict) -> list:
    """The model a row of ``kind`` is scored with, as pipeline steps (a scaler first for embeddings alone)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from bertfeat.probe_ridge import DistinctRowsRidgeCV

    if task == "classification":
        model = LogisticRegression(C=params["C_embedding"] if kind == "embedding" else params["C_sparse"],
                                   max_iter=2000)
    else:  # RidgeCV's leave-one-out, copies of a text left out together (else it predicts a text from its copy)
        model = DistinctRowsRidgeCV(alphas=params["alphas"])
    return [StandardScaler(), model] if kind == "embedding" else [model]


def _scorer(task, y, cv, random_state, groups=None, grouped=None) -> dict:
    """The metric, the splitter and the models. With ``groups`` (copies of a text, and with ``grouped``, the user's
    groups too: ``(how many they are, how many units the folds keep whole once groups sharing a copy are joined)``),
    each group goes to one fold, or a model that has seen a text (or its group) in training is scored on it: the
    splitter is then a ``PredefinedSplit`` of those folds, which needs no groups to give them again."""
    from sklearn.model_selection import KFold, StratifiedKFold
    from sklearn.pipeline import make_pipeline

    params = {"C_embedding": C_EMBEDDING, "C_sparse": C_SPARSE, "alphas": RIDGE_ALPHAS}
    if task == "classification":
        n_classes = len(np.unique(y))
        if n_classes < 2:
            raise ValueError("y has a single class; the probe needs at least two classes to score features.")
        metric = "roc_auc" if n_classes == 2 else "accuracy"
        splitter = StratifiedKFold(cv, shuffle=True, random_state=random_state)
    elif task == "regression":
        metric, splitter = "r2", KFold(cv, shuffle=True, random_state=random_state)
    else:
        raise ValueError(f"task={task!r} is not valid: expected 'auto', 'classification' or 'regression'.")
    if groups is not None:
        splitter = (_grouped(task, y, cv, random_state, groups, *groups_kept(*grouped))
                    if grouped else _grouped(task, y, cv, random_state, groups))
    # the user's groups (joined by copies) also go to the ridge's alpha search, or it predicts a text from its
    # group-mates there and picks the smallest penalty; copies alone it leaves out together by itself
    inner = groups if grouped and task == "regression" else None
    return {"metric": metric, "splitter": splitter, "classifier_params": params, "inner_groups": inner,
            "embedding": lambda: make_pipeline(*_linear_model(task, "embedding", params)),
            "sparse": lambda: make_pipeline(*_linear_model(task, "sparse", params))}


def _tfidf_width(tfidf_folds) -> int:
    """TF-IDF columns, averaged over the folds (each fold learns its own vocabulary)."""
    return int(np.mean([t_train.shape[1] for t_train, _ in tfidf_folds]))


def _inner(scoring, train):
    """The groups the ridge's alpha search leaves out together in a training fold (:func:`_scorer`); None: none."""
    return None if scoring["inner_groups"] is None else scoring["inner_groups"][train]


def _tfidf_folds(texts, folds, missing) -> list:
    """Each fold's TF-IDF, its vocabulary and weights learned from the fold's training texts only.

    The TF-IDF is the recommended estimator's own (:func:`bertfeat.union.tfidf` with the probe's ``missing``), so a
    missing text is read here as that estimator will read it."""
    from bertfeat.union import tfidf

    out = []
    for k, (train, test) in enumerate(folds, start=1):
        vec = tfidf(missing)
        try:
            fitted = vec.fit_transform([texts[i] for i in train])
        except ValueError as exc:  # "empty vocabulary" / "After pruning, no terms remain": options the probe lacks
            raise ValueError(f"TF-IDF finds no words to count in the training texts of fold {k} ({exc}); pass "
                             "baseline=False and unions=0 to score the embeddings alone."
                             ) from None
        out.append((fitted, vec.transform([texts[i] for i in test])))
    return out


def union_scores(X, y, folds, tfidf_folds, scoring) -> np.ndarray:
    """Cross-validated scores of TF-IDF and the embedding features ``X`` side by side.

    In each fold the :class:`~bertfeat.union.BlockScaler` (like the TF-IDF in ``tfidf_folds``) is fitted on the
    training rows only, then applied to both training and test rows: nothing about the test rows reaches the model.
    """
    from bertfeat.union import BlockScaler, stack

    scores = []
    for (train, test), (t_train, t_test) in zip(folds, tfidf_folds):
        scaler = BlockScaler().fit(X[train])
        scores.append(fit_score(scoring["sparse"](), stack(t_train, scaler.transform(X[train])), y[train],
                                 stack(t_test, scaler.transform(X[test])), y[test], scoring["metric"],
                                 _inner(scoring, train)))
    return np.asarray(scores)
