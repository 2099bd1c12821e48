"""Choose pooling and layers by evidence: one embedding pass keeps every layer's pooled vectors, then a
cross-validated linear model scores each pooling x layer choice.

The pass embeds with CLS, mean and max pooling of every layer (``layer_agg="concat"``); each candidate's features
are then sliced or averaged from that matrix exactly as :class:`~bertfeat.BertEmbedder` would compute them, so the
probe costs one embedding pass plus the model fits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

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
    """The probe's table (sorted, best first), its recommendation, and what it cost."""

    table: "object"  # pandas.DataFrame
    metric: str
    task: str
    recommended: dict
    best: dict
    num_layers: int
    baseline: dict | None = None
    seconds: dict = field(default_factory=dict)

    def plot(self, path):
        """Score by layer for each pooling (single layers, with standard errors), plus last-k means; saves a PNG."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        t = self.table
        fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
        for i, p in enumerate(ALL_POOLINGS):
            single = t[(t["pooling"] == p) & (t["n_layers"] == 1)].sort_values("layer")
            if single.empty:
                continue
            color = f"C{i}"
            ax.errorbar(single["layer"], single["score"], yerr=single["std_err"], marker="o", capsize=3, color=color,
                        label=f"{p}, single layer")
            means = t[(t["pooling"] == p) & (t["layer_agg"] == "mean") & (t["n_layers"] > 1)]
            for _, row in means.iterrows():
                ax.hlines(row["score"], self.num_layers - row["n_layers"] + 1, self.num_layers, colors=color,
                          linestyles="dashed", alpha=0.7)
        if self.baseline:
            ax.axhline(self.baseline["score"], color="grey", linestyle=":", label=self.baseline["name"])
        ax.set_xlabel("layer (0 = embedding output); dashed: mean of the last k layers")
        ax.set_ylabel(f"cross-validated {self.metric}")
        ax.set_title(f"bertfeat probe: recommended {self.recommended['pooling']} of layers "
                     f"{self.recommended['layers']}")
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return path

    def __repr__(self) -> str:
        cols = ["candidate", "n_features", "score", "std_err"]
        return (f"ProbeResult({self.task}, metric={self.metric}, recommended={self.recommended})\n"
                f"{self.table[cols].head(10).to_string(index=False)}")


def probe(
    texts,
    y,
    *,
    model: str = "default",
    poolings=ALL_POOLINGS,
    max_length: int | None = None,
    long_text: str = "truncate",
    stride: int | None = None,
    normalize: bool = False,
    cv: int = 5,
    task: str = "auto",
    baseline: bool = True,
    random_state: int = 0,
    plot: str | None = None,
    cache_dir: str | None = None,
    device: str = "auto",
    dtype: str = "auto",
    batch_tokens: int | None = None,
    missing: str = "error",
    progress: bool = False,
) -> ProbeResult:
    """Score every pooling x layer choice of ``model`` on ``texts`` and labels ``y`` with one embedding pass.

    A cross-validated linear model (logistic regression for classes, ridge for numbers) scores each candidate;
    the table is sorted by score with standard errors across folds. ``recommended`` applies the one-standard-error
    rule: the candidate with the fewest features whose score is within one standard error of the best.

    Examples
    --------
    >>> import pandas as pd
    >>> from bertfeat import probe
    >>> df = pd.read_csv("data/fine_foods.csv.gz").head(60)
    >>> result = probe(df["review"], df["score"], cv=3, baseline=False)
    >>> result.metric, sorted(result.recommended)
    ('roc_auc', ['layer_agg', 'layers', 'pooling'])
    """
    import pandas as pd

    from bertfeat.embedder import BertEmbedder

    poolings = tuple(poolings)
    y = np.asarray(y)
    _check_labels(y, task, cv)  # before the embedding pass, which is the expensive part
    t0 = time.perf_counter()
    spec_est = BertEmbedder(model, pooling="+".join(poolings), layers=0, max_length=max_length,
                            long_text=long_text, stride=stride, device=device, dtype=dtype,
                            batch_tokens=batch_tokens, missing=missing, cache_dir=cache_dir, progress=progress)
    num_layers = spec_est.fit(["x"]).recipe_.num_layers
    est = spec_est.set_params(layers=list(range(num_layers + 1)), layer_agg="concat")
    X_all = est.fit_transform(texts)
    if len(y) != len(X_all):
        raise ValueError(f"y has {len(y)} labels but there are {len(X_all)} texts; pass one label per text.")
    n, d = len(X_all), est.recipe_.hidden_size
    blocks = X_all.reshape(n, len(poolings), num_layers + 1, d)
    t_embed = time.perf_counter() - t0

    task = _task(y) if task == "auto" else task
    model_factory, splitter, metric = _scorer(task, y, cv, random_state)
    rows = []
    t1 = time.perf_counter()
    for cand in default_candidates(num_layers, poolings):
        X = candidate_features(blocks, poolings, cand, normalize)
        scores = _cv_scores(model_factory, X, y, splitter, metric)
        rows.append({
            "candidate": cand.label(num_layers), **{k: str(v) for k, v in cand.params(num_layers).items()
                                                     if k != "pooling"},
            "pooling": "+".join(cand.pooling), "layer": cand.layers[0] if len(cand.layers) == 1 else None,
            "n_layers": len(cand.layers), "n_features": X.shape[1], "score": scores.mean(),
            "std_err": scores.std(ddof=1) / np.sqrt(len(scores)), "params": cand.params(num_layers),
        })
    table = pd.DataFrame(rows).sort_values(["score", "n_features"], ascending=[False, True]).reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    best = table.iloc[0]
    within = table[table["score"] >= best["score"] - best["std_err"]]
    recommended = within.sort_values(["n_features", "score"], ascending=[True, False]).iloc[0]["params"]
    base = None
    if baseline and task == "classification" or baseline and task == "regression":
        base = _tfidf_baseline(texts, y, model_factory, splitter, metric, missing)
    result = ProbeResult(
        table=table, metric=metric, task=task, recommended=dict(recommended), best=dict(best["params"]),
        num_layers=num_layers, baseline=base,
        seconds={"embed": round(t_embed, 2), "fits": round(time.perf_counter() - t1, 2)},
    )
    if plot:
        result.plot(plot)
    return result


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
    if (_task(y) if task == "auto" else task) != "classification":
        return
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
            + (f", or lower cv (--cv) to at most {fewest}." if fewest >= 2 else
               " (a class with one member cannot be cross-validated).")
        )


def _task(y: np.ndarray) -> str:
    if y.dtype.kind in "fc" and len(np.unique(y)) > 10:
        return "regression"
    return "classification"


def _scorer(task, y, cv, random_state):
    from sklearn.linear_model import LogisticRegression, RidgeCV
    from sklearn.model_selection import KFold, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if task == "classification":
        n_classes = len(np.unique(y))
        if n_classes < 2:
            raise ValueError("y has a single class; the probe needs at least two classes to score features.")
        metric = "roc_auc" if n_classes == 2 else "accuracy"
        return (lambda: make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=2000)),
                StratifiedKFold(cv, shuffle=True, random_state=random_state), metric)
    if task == "regression":
        return (lambda: make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-2, 4, 13))),
                KFold(cv, shuffle=True, random_state=random_state), "r2")
    raise ValueError(f"task={task!r} is not valid: expected 'auto', 'classification' or 'regression'.")


def _cv_scores(model_factory, X, y, splitter, metric) -> np.ndarray:
    from sklearn.model_selection import cross_val_score

    return cross_val_score(model_factory(), X, y, cv=splitter, scoring=metric)


def _tfidf_baseline(texts, y, model_factory, splitter, metric, missing) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression, RidgeCV
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline

    docs = ["" if not isinstance(t, str) else t for t in texts]
    clf = LogisticRegression(C=10.0, max_iter=2000) if metric != "r2" else RidgeCV(alphas=np.logspace(-2, 4, 13))
    pipe = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True), clf)
    scores = cross_val_score(pipe, docs, y, cv=splitter, scoring=metric)
    return {"name": "TF-IDF (1-2 grams) baseline", "score": float(scores.mean()),
            "std_err": float(scores.std(ddof=1) / np.sqrt(len(scores)))}
