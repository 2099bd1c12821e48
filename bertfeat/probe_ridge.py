"""The probe's regression model: a ridge whose penalty is chosen by leaving out every copy of a row at once.

``RidgeCV`` chooses its ``alpha`` by leave-one-out on the rows it is fitted on. When a text comes several times (a
review posted twice), its copies are rows of identical features, and leaving one out leaves the others in: the
left-out row is predicted from its own copy, so the smallest penalty looks best. The probe keeps copies in one fold,
but inside a training fold RidgeCV still saw them: on noise labels it chose alpha 0.01 where the copies once each
choose 10,000, and scored R^2 -9.7 where the honest figure is -0.5. :class:`DistinctRowsRidgeCV` fits the same
ridge (copies of a row are one row weighted by their number, with their mean label: the same loss, up to a constant),
so its leave-one-out leaves a row out with all its copies. Given ``groups`` (the probe's, when the user passed groups:
a customer's reviews share their words, and a review was predicted from its group-mates, so alpha 0.01 looked best
where leaving each customer out chooses 10,000), it leaves each group out together instead (:func:`group_loo_errors`).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data


def distinct_rows(X) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each set of identical rows of ``X`` (dense or CSR), and each row's set.

    Examples
    --------
    >>> first, inverse = distinct_rows(np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]]))
    >>> first.tolist(), inverse.tolist()
    ([0, 1], [0, 1, 0])
    """
    from scipy import sparse

    if sparse.issparse(X):
        X = sparse.csr_matrix(X)
        X.sum_duplicates()  # sorted indices, one entry per column: equal rows give equal bytes
        keys = (X.indices[a:b].tobytes() + b"|" + X.data[a:b].tobytes() for a, b in zip(X.indptr[:-1], X.indptr[1:]))
    else:
        X = np.ascontiguousarray(X)
        keys = (row.tobytes() for row in X)
    index: dict[bytes, int] = {}
    inverse = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=X.shape[0])
    first = np.full(len(index), -1, dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(inverse))[::-1]  # the last write of each set is its first row
    return first, inverse


def group_loo_errors(X, y, groups, alphas) -> np.ndarray:
    """The squared error summed over the rows of ``X`` (dense or CSR) when each group is left out together and
    predicted by the ridge (intercept unpenalized) fitted on the other groups, one sum per alpha; exact, from one
    eigendecomposition. For a linear smoother with hat matrix ``H``, leaving out the rows ``g`` leaves the residuals
    ``(I - H[g, g])^-1 e[g]``, ``e`` those of the fit on every row (leave-one-out's ``e / (1 - h)``, a row at a time).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> rng = np.random.default_rng(0)
    >>> X, y, groups = rng.normal(size=(8, 3)), rng.normal(size=8), np.array([0, 0, 1, 1, 1, 2, 3, 3])
    >>> refits = sum(((Ridge(alpha=1.0).fit(X[groups != g], y[groups != g]).predict(X[groups == g])
    ...                - y[groups == g]) ** 2).sum() for g in range(4))
    >>> bool(np.isclose(group_loo_errors(X, y, groups, [1.0])[0], refits))
    True
    """
    from scipy import sparse

    n = X.shape[0]
    mean = np.asarray(X.mean(axis=0)).ravel()
    if n <= X.shape[1]:  # the rows' centered Gram matrix, n x n (RidgeCV's choice too where rows are fewer)
        gram = X @ X.T
        gram = gram.toarray() if sparse.issparse(gram) else np.asarray(gram)
        shift = np.asarray(X @ mean).ravel()
        s, W = np.linalg.eigh(gram - shift[:, None] - shift[None, :] + mean @ mean)
    else:  # the features' centered covariance, p x p, and the rows' coordinates on its eigenvectors
        cov = X.T @ X
        cov = (cov.toarray() if sparse.issparse(cov) else np.asarray(cov)) - n * np.outer(mean, mean)
        s, V = np.linalg.eigh(cov)
        W = np.asarray(X @ V) - mean @ V
        keep = s > s.max(initial=0.0) * 1e-12
        s, W = s[keep], W[:, keep] / np.sqrt(s[keep])
    s = np.clip(s, 0.0, None)
    yc = y - y.mean()
    Wy = W.T @ yc
    order = np.argsort(groups, kind="stable")
    bounds = np.flatnonzero(np.diff(groups[order])) + 1
    members = np.split(order, bounds)
    by_size: dict[int, list] = {}
    for rows in members:
        by_size.setdefault(len(rows), []).append(rows)
    errors = []
    for alpha in alphas:
        shrink = s / (s + alpha)
        e = yc - W @ (shrink * Wy)
        total = 0.0
        for size, sets in by_size.items():  # groups of one size solved as one stack
            idx = np.asarray(sets)
            Wg = W[idx]
            block = np.eye(size) - 1.0 / n - np.einsum("gik,k,gjk->gij", Wg, shrink, Wg)
            total += float((np.linalg.solve(block, e[idx][..., None]) ** 2).sum())
        errors.append(total)
    return np.asarray(errors)


class DistinctRowsRidgeCV(RegressorMixin, BaseEstimator):
    """``RidgeCV`` (leave-one-out over ``alphas``) with copies of a row left out together.

    Identical rows become one row of weight their count and label their mean label: the ridge fitted for any one
    alpha is the one fitted on all the rows, and the leave-one-out that chooses alpha never predicts a row from its
    own copy. Without copies it is ``RidgeCV(alphas=alphas)``. ``fit(X, y, groups=...)`` leaves each group out
    together (copies of a row joining their groups), then fits the ridge of every row at the alpha chosen.

    Examples
    --------
    >>> X = np.repeat(np.random.default_rng(0).normal(size=(20, 5)), 3, axis=0)
    >>> y = np.repeat(np.random.default_rng(1).normal(size=20), 3)
    >>> float(DistinctRowsRidgeCV(alphas=(0.01, 1.0, 10000.0)).fit(X, y).alpha_)
    10000.0
    """

    def __init__(self, alphas=(0.1, 1.0, 10.0)):
        self.alphas = alphas

    def fit(self, X, y, groups=None):
        from sklearn.linear_model import RidgeCV

        given = X, y
        X, y = validate_data(self, X, y, accept_sparse="csr", y_numeric=True)
        first, inverse = distinct_rows(X)
        if groups is not None:
            from bertfeat.probe_folds import _check_groups, _fold_groups

            groups = _fold_groups(inverse, _check_groups(groups, X.shape[0]))
        if groups is not None and len(np.unique(groups)) > 1:
            y = y.astype(np.float64)
            errors = group_loo_errors(X, y, groups, self.alphas)
            ridge = RidgeCV(alphas=[self.alphas[int(np.argmin(errors))]]).fit(X, y)  # exact, sparse X too
        elif len(first) == X.shape[0] or len(first) == 1:  # no copies; or every row alike (features that say nothing,
            # a constant CLS of layer 0): no row to leave out, and every alpha predicts the mean label
            ridge = RidgeCV(alphas=self.alphas).fit(*given)
        else:
            counts = np.bincount(inverse).astype(np.float64)
            ridge = RidgeCV(alphas=self.alphas).fit(X[first], np.bincount(inverse, weights=y) / counts,
                                                    sample_weight=counts)
        self.ridge_, self.alpha_ = ridge, ridge.alpha_
        self.coef_, self.intercept_ = ridge.coef_, ridge.intercept_
        return self

    def predict(self, X):
        check_is_fitted(self, "ridge_")
        X = validate_data(self, X, accept_sparse="csr", reset=False)
        return self.ridge_.predict(X)
