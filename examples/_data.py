"""Loading the two labelled datasets shipped in data/ (see data/README.md), for the examples."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parent.parent / "data"


def fine_foods(n_train: int | None = None, n_test: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The published train/test split of the 5,000 fine-food reviews (label: score == "great"), optionally cut."""
    df = pd.read_csv(DATA / "fine_foods.csv.gz")
    df["great"] = (df["score"] == "great").astype(int)
    df["n_words"] = df["review"].str.split().str.len()
    df["n_exclaim"] = df["review"].str.count("!")
    train = df[df["split"] == "train"].reset_index(drop=True)
    test = df[df["split"] == "test"].reset_index(drop=True)
    return train.head(n_train) if n_train else train, test.head(n_test) if n_test else test
