"""Embeddings side by side with TF-IDF: the scaling that lets one L2 penalty serve both blocks, and the union itself.

TF-IDF rows are L2-normalized, so each has squared norm 1. :class:`BlockScaler` standardizes the embedding
columns and divides them by the square root of their number, so an embedding row's expected squared norm is 1 as
well. With both blocks on that footing, a single penalty (one ``C`` of a logistic regression, one ``alpha`` of a
ridge) weighs them alike: neither block is cheaper to use just because of its scale or its width. The scaling is
learned in ``fit``, from the training rows only, so inside a cross-validation fold nothing leaks from the test rows.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

# The TF-IDF that the probe's baseline and unions use: word 1-2 grams, seen in at least 2 texts, sublinear counts.
TFIDF_PARAMS = {"ngram_range": (1, 2), "min_df": 2, "sublinear_tf": True}


class BlockScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Standardize each column, then divide by ``sqrt(n_columns)``: rows of expected squared norm 1.

    Put after a :class:`~bertfeat.BertEmbedder` in a union with TF-IDF (whose rows have norm 1), so that one
    penalty weighs both blocks alike. Constant columns are centred and left unscaled.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(3.0, 5.0, size=(2000, 16))
    >>> Z = BlockScaler().fit_transform(X)
    >>> round(float((Z ** 2).sum(axis=1).mean()), 2)
    1.0
    """

    def fit(self, X, y=None):
        """Learn each column's mean and scale from ``X``; returns self.

        All or nothing: a fit that fails (bad rows, a MemoryError, Ctrl-C) leaves the scaler as it was, unfitted or
        fitted as before, never the new names or mean beside the old scale."""
        from sklearn.base import clone

        new = clone(self)  # validate_data writes n_features_in_ and feature_names_in_ as it goes: on a copy
        X = validate_data(new, X, dtype=(np.float64, np.float32))
        # A constant column is found by equality, not by a standard deviation of 0: the mean of one value repeated
        # is rounded (0.1 in float32 over 1,000 rows: off by 1e-6), so its deviation came out tiny, not 0, and a new
        # row's difference was divided by it (a feature of 50,000 where the others are near 1).
        constant = (X == X[:1]).all(axis=0)
        mean = X.mean(axis=0, dtype=np.float64)
        mean[constant] = X[0, constant]
        sd = X.std(axis=0, dtype=np.float64)
        sd[constant] = 1.0
        new.mean_, new.scale_ = mean, sd * np.sqrt(X.shape[1])
        if not hasattr(new, "feature_names_in_"):
            self.__dict__.pop("feature_names_in_", None)  # a refit on an array: the old names no longer apply
        self.__dict__.update(vars(new))  # set at once, last
        return self

    def transform(self, X):
        check_is_fitted(self, "scale_")
        Z = check_array(X, dtype=(np.float64, np.float32))
        if Z.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Z.shape[1]} columns, but BlockScaler was fitted with {self.n_features_in_}.")
        validate_data(self, X, reset=False, skip_check_array=True)  # the names fit saw, if any, in their order
        # in Z's own dtype and one new matrix: float32 features take no float64 copy of the whole matrix
        out = Z - self.mean_.astype(Z.dtype)
        out /= self.scale_.astype(Z.dtype)
        return out


class MissingText(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """One column of texts read as :class:`~bertfeat.BertEmbedder` reads it, for a ``TfidfVectorizer`` after it.

    A missing text (None, NaN, pd.NA) or a blank one (only whitespace, control, invisible format, private-use or
    replacement characters and combining marks with no letter: :func:`bertfeat.inputs.is_blank`) becomes the empty
    document under ``missing="zero"`` (an all-zero TF-IDF row, as the embedder gives a zero vector), and an error
    naming the row under ``missing="error"``; a value that is no text is refused, as the embedder refuses it.
    Stateless: ``fit`` only checks the parameter. Its output is a list of texts for the vectorizer, not features:
    ``set_output`` and ``sklearn.set_config(transform_output=...)`` leave it a list (a frame of one column would be
    read by ``TfidfVectorizer`` as the one document holding the column's name).

    Parameters
    ----------
    missing : {"error", "zero"}, default="zero"
        What a missing or blank text becomes: an error naming the row, or the empty document.

    Examples
    --------
    >>> MissingText(missing="zero").fit_transform(["a good film", None, " "])
    ['a good film', '', '']
    """

    def __init__(self, missing="zero"):
        self.missing = missing

    def fit(self, X=None, y=None):
        from bertfeat import recipe

        recipe.check_choice("missing", self.missing, ("error", "zero"))
        return self

    def transform(self, X):
        from bertfeat.embedder import _row_namer
        from bertfeat.encode import split_missing
        from bertfeat.inputs import one_text_column

        self.fit()
        texts = one_text_column(X, "MissingText reads one column of texts, as TfidfVectorizer does", "X")
        _, is_missing = split_missing(texts, self.missing, _row_namer(["text"], len(texts), X))
        return ["" if gone else text for text, gone in zip(texts, is_missing)]

    def get_feature_names_out(self, input_features=None):
        return np.asarray(input_features if input_features is not None else ["text"], dtype=object)

    def set_output(self, *, transform=None):
        """Nothing to set: the texts stay a list, the input ``TfidfVectorizer`` reads, whatever ``transform`` asks
        (a pipeline's or union's ``set_output`` reaches this step too). Returns self."""
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False  # stateless: check_is_fitted passes, transform works unfitted
        return tags


def tfidf(missing="error"):
    """The probe's TF-IDF, unfitted: the vectorizer alone, or after :class:`MissingText` when ``missing`` is not
    ``"error"`` (the probe's policy, so that the recommended estimator reads missing texts as the probe did)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import make_pipeline

    vectorizer = TfidfVectorizer(**TFIDF_PARAMS)
    return vectorizer if missing == "error" else make_pipeline(MissingText(missing=missing), vectorizer)


def tfidf_union(embedder):
    """TF-IDF and ``embedder`` (scaled by :class:`BlockScaler`) side by side: an unfitted transformer of texts.

    The TF-IDF reads missing texts by the embedder's ``missing`` policy (see :func:`tfidf`)."""
    from sklearn.pipeline import make_pipeline, make_union

    return make_union(tfidf(embedder.missing), make_pipeline(embedder, BlockScaler()))


def stack(tfidf_block, embedding_block):
    """The union's features from its two fitted blocks: sparse TF-IDF columns first, as :func:`tfidf_union` orders them."""
    from scipy import sparse

    return sparse.hstack([tfidf_block, sparse.csr_matrix(embedding_block)], format="csr")
