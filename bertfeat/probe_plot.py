"""The probe's plot: score by layer for each pooling, one panel per model, with the TF-IDF and best-union scores."""

from __future__ import annotations

POOLINGS = ("cls", "mean", "max")


def plot_probe(result, path):
    """Save ``result`` (a :class:`bertfeat.probe.ProbeResult`) as a PNG at ``path``; returns ``path``.

    Drawn on a figure of its own, never pyplot's: the caller's backend (a notebook's inline one) and open figures are
    the caller's. ``matplotlib.use("Agg")`` here switched a notebook to Agg for the session after one probe, where
    ``plt.show()`` then showed nothing."""
    from matplotlib.figure import Figure

    t = result.table
    models = list(result.models) or [None]
    fig = Figure(figsize=(7 * len(models), 4.4), dpi=120)
    axes = fig.subplots(1, len(models), sharey=True, squeeze=False)
    tfidf = t[t["kind"] == "tfidf"]
    for ax, model in zip(axes[0], models):
        mine = t[t["model"] == model] if model is not None else t
        num_layers = result.models[model]["num_layers"] if model is not None else result.num_layers
        emb = mine[mine["kind"] == "embedding"]
        for i, p in enumerate(POOLINGS):
            single = emb[(emb["pooling"] == p) & (emb["n_layers"] == 1)].sort_values("layer")
            if single.empty:
                continue
            color = f"C{i}"
            ax.errorbar(single["layer"], single["score"], yerr=single["std_err"], marker="o", capsize=3,
                        color=color, label=f"{p}, single layer")
            means = emb[(emb["pooling"] == p) & (emb["layer_agg"] == "mean") & (emb["n_layers"] > 1)]
            for _, row in means.iterrows():
                ax.hlines(row["score"], num_layers - row["n_layers"] + 1, num_layers, colors=color,
                          linestyles="dashed", alpha=0.7)
        union = mine[mine["kind"] == "union"]
        if not union.empty:
            top = union.iloc[0]  # the table is sorted, best first
            ax.axhspan(top["score"] - top["std_err"], top["score"] + top["std_err"], color="black", alpha=0.08)
            ax.axhline(top["score"], color="black", linestyle="-.", label=f"best union: {top['candidate']}")
        if not tfidf.empty:
            ax.axhline(tfidf.iloc[0]["score"], color="grey", linestyle=":", label="TF-IDF (1-2 grams)")
        if result.chance is not None:
            ax.axhline(result.chance["score"], color="red", linestyle=":", label=result.chance["name"])
        ax.set_xlabel("layer (0 = embedding output); dashed: mean of the last k layers")
        if model is not None and len(models) > 1:
            ax.set_title(f"{model} ({result.models[model]['embed_s_per_1k']:.1f} s per 1,000 texts)", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"cross-validated {result.metric}")
    rec = result.table[result.table["rank"] == result.recommended_rank].iloc[0]
    fig.suptitle(f"bertfeat probe: recommended {rec['kind']}: {rec['candidate']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)  # by the suffix's canvas (png: Agg), without a backend
    return path
