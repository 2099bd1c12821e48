"""``BertEmbedder``: a scikit-learn transformer that turns text columns into frozen BERT-family features."""

from __future__ import annotations

import copy
import inspect
import logging
import os
import threading
import warnings
from collections.abc import Iterator

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from bertfeat import recipe as rcp
from bertfeat.exceptions import TruncationWarning, user_stacklevel
from bertfeat.links import with_doc_links
from bertfeat.prompts import _note_modules_not_applied, _resolve_prefix

logger = logging.getLogger("bertfeat")


@with_doc_links
class BertEmbedder(TransformerMixin, BaseEstimator):
    """Frozen embeddings of one or more text columns from a BERT-family model.

    Nothing is trained: ``fit`` only checks the parameters and reads the model's shape. The model loads lazily on
    the first ``transform`` that needs it, once per process, and is never pickled. The estimator holds the model it
    used while it lives; the process keeps the two models used last besides (:data:`bertfeat.backend.MODELS_KEPT`).
    One fitted estimator may ``transform`` from several threads at once (a web service's requests), each reading its
    own ``stats_`` and ``missing_``; ``fit`` and ``set_params`` change what those calls read, so run them before (a
    call that a ``fit`` in another thread overtakes keeps the model and recipe it started with, and raises
    ``ValueError`` where that fit changed the recipe or the columns rather than return features the estimator no
    longer describes).

    Parameters
    ----------
    model : str, default="default"
        ``"default"`` is the bundled all-MiniLM-L6-v2 (no network needed). Anything else is a Hugging Face model
        name or a local directory holding config.json, the tokenizer and ``model.safetensors``.
    columns : str or list of str, default=None
        With DataFrame input, the text columns to embed, by name and in the order given (a list, not a set); None
        embeds every column. Their names name the features, so they must read as distinct strings, and a change
        after ``fit`` needs a new ``fit``.
    pooling : str or list of str, default="cls+mean"
        ``"cls"``, ``"mean"``, ``"max"``, or a ``+``-joined combination such as ``"cls+mean"`` (concatenated).
        The default, with the default layers, is the choice that stayed closest to the best on two real labelled
        datasets (docs/defaults.md).
    layers : int, list of int or None, default=None
        Hidden layers to read: 0 is the embedding output, 1..L the transformer layers, negatives count from the
        last (-1 is the last layer); a tuple, range or numpy array of ints is read as its list. None is the last
        four transformer layers (all of them if the model has fewer).
    layer_agg : {"mean", "concat"}, default="mean"
        How several layers combine: their pooled vectors averaged, or concatenated.
    max_length : int, default=None
        Tokens per window, special tokens included; None is the model's own limit.
    long_text : {"truncate", "chunk"}, default="truncate"
        ``"truncate"`` keeps the first ``max_length`` tokens and warns with the count of truncated texts;
        ``"chunk"`` embeds overlapping windows and averages them weighted by token count (max pooling takes the
        max over windows).
    stride : int, default=None
        Tokens shared by consecutive windows in chunk mode; None is a quarter of ``max_length - 2`` (rounded down).
        Setting it without ``long_text="chunk"`` is an error.
    normalize : bool, default=False
        L2-normalize each pooled block (each pooling, and each layer under ``layer_agg="concat"``).
    prefix : str, default=None
        Text put before every text, such as ``"query: "`` for E5 or ``"classification: "`` for nomic-embed. Its
        tokens count toward ``max_length`` and are pooled with the text's (not where the model's sentence-transformers
        Pooling config says ``"include_prompt": false``: then, as there, the first token and the prefix's are left
        out of mean and max pooling), and under ``long_text="chunk"`` every window starts with it. Part of the
        recipe fingerprint. None (or "") adds nothing.
    prompt_name : str, default=None
        The name of a prompt in the model's sentence-transformers config (``config_sentence_transformers.json``
        "prompts"; ``bertfeat info MODEL`` lists them), used as ``prefix``. Pass one of ``prefix`` and
        ``prompt_name``. A model that defines prompts, used with neither, gets a one-time note naming them (those
        that put something before a text: sentence-transformers 5 and later save empty ones in every model).
    batch_tokens : int, default=None
        Token budget of one forward pass (rows x padded length); None picks one for the device.
    device : str, default="auto"
        ``"auto"`` (cuda, then mps, then cpu), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    dtype : {"auto", "float32", "bfloat16", "float16"}, default="auto"
        ``"auto"`` is bfloat16 (or float16) on GPU and float32 on CPU; on an Apple GPU float16, or float32 where
        its torch has no autocast there (a half dtype torch will not run there is refused). bfloat16 and float16 on
        CPU run on every CPU: faster than float32 on some (AMD Zen 4 and Zen 5, Intel with AMX), slower on others
        (AVX2-only CPUs, an Intel Xeon with AVX512-BF16 but no AMX), where a
        :class:`~bertfeat.exceptions.SlowDtypeWarning` gives the measured rates; the dtype is never switched. It is fixed at ``fit``, so a fitted pipeline gives the same
        features anywhere.
    missing : {"error", "zero", "nan"}, default="error"
        What a missing text (None, NaN, pd.NA) gets: an error naming the row, a zero vector, or a row of NaN.
        Empty and blank texts (only whitespace, control, format, private-use and replacement characters and lone
        combining marks, which a tokenizer drops, so they would all get the same vector) are missing too, and so is
        a text of which the model's tokenizer keeps no token at all (one with no unknown token drops the characters
        it does not know): found once tokenized, so under "error" it is refused after its batch ran, and nothing is
        cached. The default is an error so that no missing value is embedded silently.
    cache_dir : str, default=None
        Directory of a persistent embedding cache shared by runs, CV folds, the CLI and R. ``fit`` creates it
        if needed and raises :class:`~bertfeat.CacheError` if it is a file or cannot be written; an empty path is
        refused (it would make the current directory a cache).
    cache_all_layers : bool, default=False
        With ``cache_dir``: cache each text's CLS, mean and max vectors of every layer (one cache entry per text
        and model/window/dtype) and derive this estimator's features from them. A ``GridSearchCV`` over
        ``pooling``, ``layers``, ``layer_agg`` and ``normalize`` then runs the model once per distinct text, not
        once per candidate, and :func:`bertfeat.probe` with the same ``cache_dir`` fills the same entries. The
        features equal those computed directly up to float rounding (about 1e-7). Costs 3 x (layers + 1) x hidden
        floats per text in the cache (32 KB for the default model) instead of one recipe's.
    progress : bool, default=False
        Show a progress bar while embedding.
    trust_remote_code : bool, default=False
        Allow models that ship their own modelling code. Weights always load from safetensors.

    Attributes
    ----------
    recipe_ : bertfeat.recipe.Recipe
        Everything that decides the numbers, with the model's content hashes.
    text_columns_ : list of str
        Names of the embedded columns (``"text"`` for unnamed 1-D input).
    n_features_in_ : int
        Number of text columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names seen in ``fit``, when the input was a DataFrame.
    stats_ : bertfeat.encode.EncodeStats
        Counts of the last ``transform``: rows, distinct texts, cache hits/misses, truncated, chunked, missing.
        A ``transform`` that fails (or is interrupted) leaves no ``stats_`` and no ``missing_``, rather than the
        call before's. Called from several threads (a web service's requests), each thread reads those of its own
        last call; a thread that made none (one that ran ``transform`` in an executor) reads the last call of any
        thread.
    missing_ : ndarray of bool, shape (n_rows, n_columns)
        Which texts of the last ``transform`` were read as missing (None, NaN, blank, or dropped whole by the
        tokenizer): the rows ``missing=`` filled; per thread, as ``stats_``. Of a call in this process: not pickled
        (nor copied by ``copy.deepcopy``).

    Examples
    --------
    >>> from bertfeat import BertEmbedder
    >>> X = BertEmbedder().fit_transform(["A cat sat.", "A dog ran."])
    >>> X.shape, X.dtype
    ((2, 768), dtype('float32'))
    >>> BertEmbedder(pooling="mean", layers=-1).fit(["x"]).get_feature_names_out()[:2].tolist()
    ['text_mean_000', 'text_mean_001']
    """

    def __init__(
        self,
        model="default",
        *,
        columns=None,
        pooling="cls+mean",
        layers=None,
        layer_agg="mean",
        max_length=None,
        long_text="truncate",
        stride=None,
        normalize=False,
        prefix=None,
        prompt_name=None,
        batch_tokens=None,
        device="auto",
        dtype="auto",
        missing="error",
        cache_dir=None,
        cache_all_layers=False,
        progress=False,
        trust_remote_code=False,
    ):
        self.model = model
        self.columns = columns
        self.pooling = pooling
        self.layers = layers
        self.layer_agg = layer_agg
        self.max_length = max_length
        self.long_text = long_text
        self.stride = stride
        self.normalize = normalize
        self.prefix = prefix
        self.prompt_name = prompt_name
        self.batch_tokens = batch_tokens
        self.device = device
        self.dtype = dtype
        self.missing = missing
        self.cache_dir = cache_dir
        self.cache_all_layers = cache_all_layers
        self.progress = progress
        self.trust_remote_code = trust_remote_code

    # -- scikit-learn API -------------------------------------------------------------------------------------

    def fit(self, X, y=None):
        """Check parameters and input, and read the model's shape. Trains nothing; returns self.

        All or nothing: a fit that fails (or is interrupted) leaves the estimator as it was, unfitted or fitted as
        before, never half of each."""
        from bertfeat.inputs import text_columns

        self._check_runtime_params()
        recipe, spec = self._recipe_and_spec()
        self._cache()  # a cache_dir that is a file or unwritable is a CacheError now, before any work
        names, values, all_columns = text_columns(X, self.columns)
        if not values and len(X):  # rows, but no column: not a lack of samples
            raise ValueError(f"Found array with 0 feature(s) (shape=({len(X)}, 0)) while a minimum of 1 is required by "
                             f"{type(self).__name__}.")
        if not values or len(values[0]) == 0:
            raise ValueError(f"Found array with 0 sample(s) while a minimum of 1 is required by {type(self).__name__}.")
        fitted = {
            # the values the recipe was built from, to refuse a transform after set_params changed one (no refit)
            "_recipe_params": copy.deepcopy({name: getattr(self, name) for name in _RECIPE_PARAMS}),
            # a relative model path is read from the working directory: where it pointed, to say so if that changes
            "_model_dir_in_fit": _relative_model_dir(self.model),
            # the model's folder and revision: named if its files are not the fitted ones at transform
            "_model_files_in_fit": (spec.folder, spec.revision),
            # the longest max_length the model takes: the truncation warning advises a larger one only below it
            "_model_max_length": spec.max_length,
            "text_columns_": names,
            "n_features_in_": len(all_columns) if all_columns is not None else len(names),
            # X's column labels, checked at transform also where scikit-learn records none (int names)
            "_column_labels_in": list(all_columns) if all_columns is not None else None,
        }
        if all_columns is not None and all(isinstance(c, str) for c in all_columns):
            fitted["feature_names_in_"] = np.asarray(all_columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        fitted["recipe_"] = recipe  # what check_is_fitted reads
        self.__dict__.update(fitted)  # set at once, last
        self.__dict__.pop(_HELD_MODEL, None)  # the model of an earlier fit, which this one may not use
        return self

    def transform(self, X):
        """Embed every text column of ``X``: returns a float32 array (n_rows, n_columns x features per column)."""
        return self._transform(X)

    def _transform(self, X, warn_truncation: bool = True):
        """:meth:`transform`; ``warn_truncation=False`` for a caller that reports truncation itself (a file job's
        summary), so that it need not change the process's warnings filters to silence it."""
        from bertfeat.encode import encode
        from bertfeat.inputs import series_label, text_columns

        # stats_ and missing_ are the last call's: a call that fails leaves none, not the call before's (read after
        # the error, they would pass for this one's); in this thread, and of any thread for one that made no call
        calls = self.__dict__.get(_CALLS) or self.__dict__.setdefault(_CALLS, threading.local())
        calls.last = None
        for name in _PER_CALL:
            self.__dict__.pop(name, None)
        check_is_fitted(self, "recipe_")
        self._check_runtime_params()
        self._check_same_recipe()
        # the fit this call embeds by, read once: a fit in another thread meanwhile (which the docstring asks to run
        # before) must not lend this call its model, loaded lazily mid-call, whose vectors would be cached under
        # this recipe's key, nor its width or names (refused below)
        recipe, fitted_columns, model = self.recipe_, self.text_columns_, self.model
        names, values, all_columns = text_columns(X, self.columns)
        self._check_same_columns(names, all_columns, series_label(X))
        n_rows = len(values[0]) if values else 0
        flat = [v for col in values for v in col]
        row_name = _row_namer(names, n_rows, X)
        cache = self._cache()
        if cache is not None:  # refused as a call without the cache would be, where the cache could answer it whole
            self._model_as_fitted(recipe, model)
        out, stats, is_missing = encode(
            flat, recipe, self._backend_loader(recipe, model), cache=cache, batch_tokens=self.batch_tokens,
            missing=self.missing, row_name=row_name, progress=bool(self.progress),
            all_layers=bool(self.cache_all_layers), return_missing=True,
        )
        self._check_not_fitted_meanwhile(recipe, fitted_columns)
        calls.last = {"stats_": stats, "missing_": is_missing.reshape(len(names), n_rows).T}
        self.__dict__.update(calls.last)  # the last call of any thread
        if stats.truncated and warn_truncation:
            # a larger max_length is advice only below the model's limit (None: fitted by a bertfeat that kept none)
            limit = getattr(self, "_model_max_length", None)
            larger = (" (max_length is already the model's limit)" if limit is not None and
                      recipe.max_length >= limit else
                      ", or a larger max_length (up to the model's limit" + (f" of {limit})" if limit else ")"))
            warnings.warn(
                f"{stats.truncated} of {stats.rows - stats.missing} texts were longer than max_length="
                f"{recipe.max_length} tokens and were truncated. Pass long_text='chunk' to embed them in "
                f"full{larger}.",
                TruncationWarning,
                stacklevel=user_stacklevel(),
            )
        if self.cache_dir is not None:
            logger.info("bertfeat cache: %d hits, %d misses, %d new rows", stats.cache_hits, stats.cache_misses,
                        stats.cache_new)
        # columns side by side: (n_columns * n_rows, F) -> (n_rows, n_columns * F)
        f = recipe.n_features
        features = out.reshape(len(names), n_rows, f).transpose(1, 0, 2).reshape(n_rows, len(names) * f)
        return _with_series_index(self, X, features)

    def fit_transform(self, X, y=None, **fit_params):
        """``fit(X).transform(X)``, reading a one-pass iterator (e.g. a generator of texts) only once."""
        if isinstance(X, Iterator):
            X = list(X)
        return self.fit(X, y).transform(X)

    def get_feature_names_out(self, input_features=None):
        """Names ``{column}_{pooling}_{index}`` (``_l{layer}`` added under ``layer_agg="concat"``), zero-padded; a
        pandas MultiIndex column is named by its levels joined by ``_`` (``review_title_mean_000``)."""
        from bertfeat.inputs import feature_column_name

        check_is_fitted(self, "recipe_")
        self._check_same_recipe()
        columns = self.text_columns_
        if input_features is not None:
            input_features = [feature_column_name(c) for c in input_features]
            expected = getattr(self, "feature_names_in_", None)
            if (expected is not None and input_features != list(expected)) or len(input_features) != self.n_features_in_:
                raise ValueError(
                    f"input_features={input_features!r} does not match the input seen in fit "
                    f"({list(expected) if expected is not None else self.n_features_in_})."
                )
            if self.columns is None:  # every input column is a text column: name the features after input_features
                columns = input_features
        return np.asarray([n for c in columns for n in self.recipe_.feature_names(c)], dtype=object)

    @property
    def stats_(self):
        return self._of_this_threads_call("stats_")

    @property
    def missing_(self):
        return self._of_this_threads_call("missing_")

    def _of_this_threads_call(self, name: str):
        """``name`` (``stats_``, ``missing_``) of this thread's last transform: another thread's call, made or
        failed meanwhile, must not answer for it (a web service's request threads share one fitted embedder). A
        thread that made no call reads the last call of any thread: one that ran ``transform`` in an executor and
        reads it after. A call that failed leaves none."""
        last = getattr(self.__dict__.get(_CALLS), "last", _NO_CALL)
        value = self.__dict__.get(name) if last is _NO_CALL else None if last is None else last[name]
        if value is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return value

    def __getstate__(self):
        # missing_ is of the last transform, not fitted state: Pipeline.fit leaves the training set's mask here, and
        # pickled it made a pipeline fitted on 10M rows carry 10 MB (per text column) of which rows were missing
        # a copy: scikit-learn's __getstate__ returns this estimator's own __dict__, and popping from it took
        # missing_ off the live estimator (joblib.dump or copy.deepcopy of a fitted pipeline lost the caller's mask)
        state = dict(super().__getstate__())
        state.pop("missing_", None)
        state.pop(_CALLS, None)  # each thread's last call: of this process
        state.pop(_HELD_MODEL, None)  # the model is never pickled (nor copied by copy.deepcopy)
        return state

    def __setstate__(self, state):
        # A pickle of an older bertfeat lacks the parameters added since (prefix, prompt_name, ...): each takes its
        # default, which is what that version did (a new parameter's default must keep the old behaviour). Without
        # it repr, get_params and clone of the loaded pipeline fail on the absent attribute.
        state = dict(state)
        params = inspect.signature(type(self).__init__).parameters
        for name, param in params.items():
            if param.default is not param.empty:
                state.setdefault(name, param.default)
        # and a pickle of a newer bertfeat may have parameters this one lacks: not read here, so said
        unknown = [n for n in state if n not in params and not n.startswith("_") and not n.endswith("_")]
        if unknown:
            warnings.warn(
                f"This {type(self).__name__} was pickled by a newer bertfeat, with parameters this one does not have: "
                f"{', '.join(f'{n}={state[n]!r}' for n in unknown)}. They are ignored here, so where one of them "
                "decided the features they differ from those at fit; load the pipeline with the bertfeat it was "
                "fitted with (or a newer one).",
                UserWarning, stacklevel=user_stacklevel(),
            )
        if "recipe_" in state and "_recipe_params" not in state:
            # fitted by a version that did not record what its recipe was built from: the parameters pickled are the
            # fitted ones, so a set_params after loading is refused as it is after a fit here (_check_same_recipe)
            state["_recipe_params"] = copy.deepcopy({name: state[name] for name in _RECIPE_PARAMS})
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = True
        tags.input_tags.allow_nan = self.missing != "error"
        tags.transformer_tags.preserves_dtype = []
        tags.requires_fit = True
        tags.non_deterministic = False
        return tags

    # -- helpers ------------------------------------------------------------------------------------------------

    def _check_runtime_params(self):
        from bertfeat.devices import device_type, resolve_device

        rcp.check_choice("missing", self.missing, rcp.MISSING_POLICIES)
        # a spelling no model runs on, or a GPU this machine has not: refused whatever the dtype, even where every
        # text would come from the cache (a CPU device is checked without importing torch)
        if device_type(self.device) in ("cuda", "mps"):
            resolve_device(self.device)
        if self.batch_tokens is not None and (not rcp._is_int(self.batch_tokens) or self.batch_tokens < 1):
            raise ValueError(f"batch_tokens={self.batch_tokens!r} is not valid: expected a positive int or None.")
        if self.cache_dir is not None and not isinstance(self.cache_dir, (str, bytes)) and not hasattr(
            self.cache_dir, "__fspath__"
        ):
            raise ValueError(f"cache_dir={self.cache_dir!r} is not valid: expected a directory path or None.")
        if isinstance(self.cache_dir, (str, bytes)) and os.fsdecode(self.cache_dir).strip() == "":
            raise ValueError(
                f"cache_dir={self.cache_dir!r} is not valid: an empty path would make the current directory a cache. "
                "Pass a directory path, or cache_dir=None for no cache."
            )
        for name in ("progress", "trust_remote_code"):  # a truthy string such as "no" must not mean True
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name}={getattr(self, name)!r} is not valid: expected True or False.")
        if not isinstance(self.cache_all_layers, (bool, np.bool_)):
            raise ValueError(f"cache_all_layers={self.cache_all_layers!r} is not valid: expected True or False.")
        if self.cache_all_layers and self.cache_dir is None:
            raise ValueError(
                "cache_all_layers=True stores every layer in the cache, but cache_dir is None: pass cache_dir= as "
                "well (without a cache there is nothing to share, and cache_all_layers=False is faster)."
            )

    def _build_recipe(self, auto_dtype: str | None = None) -> rcp.Recipe:
        """The recipe these parameters give; ``auto_dtype`` is what ``dtype="auto"`` stands for (None: this machine's
        choice, as at fit)."""
        return self._recipe_and_spec(auto_dtype)[0]

    def _recipe_and_spec(self, auto_dtype: str | None = None):
        """:meth:`_build_recipe`, and the resolved model it was built from."""
        from bertfeat.models import resolve_model

        pooling = rcp.parse_pooling(self.pooling)
        layer_agg = rcp.check_choice("layer_agg", self.layer_agg, rcp.LAYER_AGGS)
        long_text = rcp.check_choice("long_text", self.long_text, rcp.LONG_TEXT_MODES)
        dtype = rcp.check_choice("dtype", self.dtype, rcp.DTYPES)
        if not isinstance(self.normalize, (bool, np.bool_)):
            raise ValueError(f"normalize={self.normalize!r} is not valid: expected True or False.")
        spec = resolve_model(self.model, trust_remote_code=self.trust_remote_code)
        if "cls" in pooling:
            from bertfeat.encode import check_cls_pooling

            # from config.json and the tokenizer's files, so that a run the cache answers whole is refused too
            check_cls_pooling(pooling, spec, trust_remote_code=self.trust_remote_code)
        layers = rcp.parse_layers(self.layers, spec.num_layers, layer_agg)
        max_length = spec.max_length if self.max_length is None else self.max_length
        if not rcp._is_int(max_length) or not 4 <= max_length <= spec.max_length:
            raise ValueError(
                f"max_length={self.max_length!r} is not valid: expected an int from 4 to the model's limit of "
                f"{spec.max_length} tokens, or max_length=None for that limit."
            )
        if self.stride is not None and long_text != "chunk":
            raise ValueError(
                f"stride={self.stride!r} applies to long_text='chunk' only (long_text={long_text!r} embeds one "
                "window per text); pass long_text='chunk' as well, or stride=None."
            )
        window = max_length - 2  # room for [CLS]/[SEP]; the stride must leave each window some new tokens
        stride = max(0, window // 4) if self.stride is None else self.stride
        if not rcp._is_int(stride) or not 0 <= stride < window:
            raise ValueError(
                f"stride={self.stride!r} is not valid: expected an int from 0 to {window - 1} (tokens shared by "
                f"consecutive windows of max_length={max_length}), or stride=None for a quarter of the window."
            )
        prefix = _resolve_prefix(self.prefix, self.prompt_name, spec)
        _note_modules_not_applied(spec)
        if dtype == "auto" and auto_dtype is not None:
            dtype = auto_dtype
        elif dtype == "auto":
            from bertfeat.devices import resolve_device, resolve_dtype

            dtype = resolve_dtype("auto", resolve_device(self.device))
        recipe = rcp.Recipe(
            model=spec.label,
            weights_sha256=spec.weights_sha256,
            tokenizer_sha256=spec.tokenizer_sha256,
            config_sha256=spec.config_sha256,
            hidden_size=spec.hidden_size,
            num_layers=spec.num_layers,
            pooling=pooling,
            layers=layers,
            layer_agg=layer_agg,
            max_length=int(max_length),
            long_text=long_text,
            stride=int(stride) if long_text == "chunk" else 0,
            normalize=bool(self.normalize),
            dtype=dtype,
            prefix=prefix,
            # the model's pooling leaves its prompt out (sentence-transformers' "include_prompt": false): so does
            # bertfeat's mean and max pooling, for any prefix
            pool_prefix=spec.st_include_prompt or not prefix,
            model_format=rcp.model_format(spec.model_type, dtype),
        )
        return recipe, spec

    def _check_same_recipe(self):
        """Refuse recipe parameters changed since fit (set_params does not refit): transform would silently return
        the fitted recipe's features. A value written otherwise that gives the same recipe is fine."""
        fitted = getattr(self, "_recipe_params", None)  # None: pickled by a version that did not record them
        if fitted is None:
            return
        changed = [name for name in _RECIPE_PARAMS if not _same_value(getattr(self, name), fitted[name])]
        # dtype="auto" stands for what fit chose (bfloat16 on a GPU), not for this machine's choice: a pipeline fitted
        # on a GPU and moved to a CPU keeps its recipe, and may still be pointed at its model's files elsewhere
        auto = self.recipe_.dtype if fitted["dtype"] == "auto" else None
        if not changed or self._build_recipe(auto).fingerprint() == self.recipe_.fingerprint():
            return

        def changes_the_recipe(name) -> bool:  # this parameter alone at its new value, the others as fitted
            alone = copy.copy(self)
            for other in changed:
                if other != name:
                    setattr(alone, other, fitted[other])
            try:
                return alone._build_recipe(auto).fingerprint() != self.recipe_.fingerprint()
            except ValueError:  # valid only with another change (stride with long_text="chunk"): a change
                return True

        changed = [name for name in changed if changes_the_recipe(name)] or changed
        raise ValueError(
            "; ".join(f"{name}={getattr(self, name)!r} was {fitted[name]!r}" for name in changed)
            + f" when this {type(self).__name__} was fitted, and its features are still that recipe's (set_params "
            f"does not refit); call fit again after changing {' and '.join(changed)}."
        )

    def _check_not_fitted_meanwhile(self, recipe, fitted_columns) -> None:
        """Refuse a transform's output where the estimator was fitted again while it ran (another thread) to another
        recipe or other columns: its features, the old fit's, would pass for the new fit's (scikit-learn's
        ``set_output`` names them after the call from the estimator as it is then)."""
        now = self.__dict__.get("recipe_")
        if now is recipe or (now is not None and now.fingerprint() == recipe.fingerprint()
                             and list(self.__dict__.get("text_columns_", ())) == list(fitted_columns)):
            return
        raise ValueError(
            f"this {type(self).__name__} was fitted again while this transform ran, so its output, the features of "
            "the recipe it started with, would pass for the new fit's; run fit and set_params before the "
            "transforms that use them, or give each thread an estimator of its own (sklearn.base.clone)."
        )

    def _check_same_columns(self, names, all_columns, series=None):
        from bertfeat.inputs import feature_column_name

        fitted = getattr(self, "feature_names_in_", None)
        labels_in = getattr(self, "_column_labels_in", None)
        if labels_in is not None and series is not None and len(labels_in) == 1:
            # a named Series after a fit on a one-column frame: that column if the names agree, else another column
            # whose features would carry the fitted column's name (refused, as a frame of another column is)
            if str(series) == str(labels_in[0]):
                return
            raise ValueError(
                f"X is a Series named {series!r}, but {type(self).__name__} was fitted on the column {labels_in!r}, "
                f"whose name its features carry; pass that column, or X.rename({labels_in[0]!r}) if this Series "
                "holds it, or fit again."
            )
        # Columns are read by position below, so the same columns in another order would put one column's
        # features under another's names. Refused, as scikit-learn refuses it, rather than reordered: a frame whose
        # columns moved is more often a mistake upstream than a choice. Non-string names (no feature_names_in_)
        # are checked through the text columns' names.
        # X without column names (an array) is read by position, with a warning below, as scikit-learn does.
        if all_columns is not None:
            fitted_order = list(fitted) if fitted is not None else list(self.text_columns_)
            given_order = list(all_columns) if fitted is not None else list(names)
            if given_order != fitted_order and sorted(map(str, given_order)) == sorted(map(str, fitted_order)):
                # shown as X's own labels (0, not '0'; a MultiIndex's tuples), so the advice works
                label = {feature_column_name(c): c for c in all_columns}
                given_order, fitted_order = [label[str(c)] for c in given_order], [label[str(c)] for c in fitted_order]
                raise ValueError(
                    f"The columns of X ({given_order}) are those seen in fit but in another order ({fitted_order}); "
                    f"features would land under the wrong column names. Reorder them first, for example "
                    f"X[{fitted_order!r}]."
                )
        if fitted is not None and all_columns is not None and list(all_columns) != list(fitted):
            raise ValueError(
                f"The columns of X ({list(all_columns)}) differ from those seen in fit ({list(fitted)}); pass the "
                "same columns in the same order."
            )
        if all_columns is not None and (fitted is not None or self.columns is not None) and (
            list(names) != list(self.text_columns_)
        ):
            # the same frame, but columns= changed since fit (set_params does not refit): the features are named
            # after the columns fit selected
            raise ValueError(
                f"columns={self.columns!r} selects the columns {list(names)} of X, but this {type(self).__name__} was "
                f"fitted on the columns {list(self.text_columns_)}, whose names its features carry; call fit again "
                "after changing columns."
            )
        if fitted is not None and all_columns is None and series is None:  # a named Series: refused by its count
            warnings.warn(
                f"X has no column names, but {type(self).__name__} was fitted with columns {list(fitted)}.",
                UserWarning, stacklevel=user_stacklevel(),
            )
        n_in = len(all_columns) if all_columns is not None else len(names)
        if n_in != self.n_features_in_ or len(names) != len(self.text_columns_):
            raise ValueError(
                f"X has {n_in} columns, but {type(self).__name__} is expecting {self.n_features_in_} columns as input."
            )
        if fitted is None and labels_in is not None and all_columns is not None and (
            list(map(str, all_columns)) != list(map(str, labels_in))
        ):
            raise ValueError(
                f"The columns of X ({list(all_columns)}) differ from those seen in fit ({labels_in}); pass the same "
                "columns in the same order."
            )

    def _backend_loader(self, recipe=None, model=None):
        """A callable that loads (or reuses) the model, checking it is still the one the recipe was fitted with;
        ``recipe`` and ``model`` (default: the estimator's now) those a transform read as it started."""
        recipe = self.recipe_ if recipe is None else recipe
        model = self.model if model is None else model
        device, trust = self.device, self.trust_remote_code
        as_fitted = self._model_as_fitted

        def load():
            from bertfeat.backend import get_backend
            from bertfeat.devices import resolve_device

            backend = get_backend(as_fitted(recipe, model), resolve_device(device), recipe.dtype, trust)
            # held while this estimator lives: the process keeps only the models used last (backend.MODELS_KEPT), and
            # estimators used side by side (a FeatureUnion of three models) must not load theirs again on each call
            self.__dict__[_HELD_MODEL] = backend
            return backend

        return load

    def _model_as_fitted(self, recipe=None, model=None):
        """The model resolved from its files now, refused where those differ from the files at fit: checked before
        every model load, and before a transform the cache may answer whole (whose answer must not depend on the
        cache: without it, the same call would be refused). ``recipe`` and ``model``: as :meth:`_backend_loader`."""
        recipe = self.recipe_ if recipe is None else recipe
        model = self.model if model is None else model
        trust = self.trust_remote_code
        fitted_dir, name = getattr(self, "_model_dir_in_fit", None), type(self).__name__
        fitted_files = getattr(self, "_model_files_in_fit", None)  # None: pickled by a version that did not record it

        from bertfeat.exceptions import ModelNotAvailableError
        from bertfeat.models import resolve_model

        try:
            spec = resolve_model(model, trust_remote_code=trust)
        except ModelNotAvailableError:
            if fitted_dir is None or _relative_model_dir(model) is not None:
                raise
            raise ModelNotAvailableError(
                f"model={model!r} is a relative path, read from the working directory ({os.getcwd()}), which "
                f"holds no such directory; when this {name} was fitted it was {fitted_dir}. Name the model by "
                f"its absolute path: set_params(model={fitted_dir!r}) (<step>__model= in a Pipeline)."
            ) from None
        changed = [what for what, now, then in (
            ("weights", spec.weights_sha256, recipe.weights_sha256),
            ("tokenizer", spec.tokenizer_sha256, recipe.tokenizer_sha256),
            ("config", spec.config_sha256, recipe.config_sha256),
        ) if now != then]
        if changed:
            raise ValueError(_model_changed(model, name, changed, (spec.folder, spec.revision), fitted_files))
        family_format = rcp.model_format(spec.model_type, recipe.dtype)
        if family_format != recipe.model_format:
            # a recipe pickled before its family's vectors changed keeps the old key: the vectors computed here
            # would be cached beside the old ones under it (a recipe fitted here is keyed anew)
            raise ValueError(
                f"model={model!r} is a {spec.model_type} model, whose vectors this bertfeat computes otherwise "
                f"than the bertfeat this {name} was fitted with did (the family's vector format: "
                f"{family_format} here, {recipe.model_format} at fit; MODEL_FORMATS in "
                "bertfeat/recipe.py): its features would not match those at fit, nor those in the cache. Fit again."
            )
        return spec

    def _cache(self):
        if self.cache_dir is None:
            return None
        from bertfeat.cache import open_cache

        return open_cache(self.cache_dir)


# What each transform sets, of that call alone (not fitted state): removed as a call starts.
_PER_CALL = ("stats_", "missing_")
# the attribute holding each thread's last call's _PER_CALL (a threading.local: None after a failed call)
_CALLS = "_calls"
_NO_CALL = object()  # this thread made no call
# the attribute holding the model the last transform used (never pickled)
_HELD_MODEL = "_model_held"

# The parameters that decide the recipe (the numbers), as opposed to those transform reads each time.
_RECIPE_PARAMS = ("model", "pooling", "layers", "layer_agg", "max_length", "long_text", "stride", "normalize", "prefix",
                  "prompt_name", "dtype")


def _same_value(a, b) -> bool:
    try:
        same = a == b
        return type(a) is type(b) and isinstance(same, (bool, np.bool_)) and bool(same)
    except Exception:  # noqa: BLE001 - values that cannot be compared count as changed
        return False


def _model_changed(model, name: str, changed: list[str], now: tuple, fitted: tuple | None) -> str:
    """Why a fitted estimator's model is refused at transform: which of its files changed, where they are now and
    where they were at fit (folder and hub revision), and what to do."""

    def where(folder, revision) -> str:
        return folder + (f", revision {revision}" if revision else "")

    text = f"model={model!r} now resolves to other files than when this {name} was fitted: its {' and '.join(changed)} "
    if fitted and fitted[0] != now[0]:
        text += f"changed (now {where(*now)}; at fit {where(*fitted)}), so its features "
    else:  # edited in place (or pickled by a version that did not record where)
        text += f"changed (in {where(*now)}), so its features "
    if fitted and fitted[0] != now[0] and os.path.isdir(fitted[0]):
        return text + (f"would not match. The fitted files are still there: set_params(model={fitted[0]!r}) "
                       "(<step>__model= in a Pipeline) to use them, or fit again.")
    if fitted and fitted[1] and now[1]:  # a hub name, whose fitted revision is gone from this machine's cache
        from bertfeat.hub import hub_download_command

        return text + (f"would not match. Download the fitted revision ({hub_download_command()} {model} --revision "
                       f"{fitted[1]}) and pass its folder as model=, or fit again.")
    return text + "would not match. Point model= at the files it was fitted with, or fit again."


def _relative_model_dir(model) -> str | None:
    """The directory a relative ``model`` path names from here (absolute), or None for anything else."""
    if not isinstance(model, (str, os.PathLike)) or model == "default" or os.path.isabs(os.path.expanduser(model)):
        return None
    from bertfeat.sources import absolute

    return absolute(os.fsdecode(os.fspath(model))) if os.path.isdir(model) else None  # lnk/.. as the system reads it


def _row_namer(names, n_rows, X):
    index = getattr(X, "index", None)
    if callable(index):  # list.index and tuple.index are methods, not row labels
        index = None
    show_index = index is not None and not (
        hasattr(index, "equals") and len(index) == n_rows and _is_default_index(index)
    )

    # a column named as X labels it (a MultiIndex's tuple), not as its features are named, so that X[col] finds it
    from bertfeat.inputs import feature_column_name

    labels = {feature_column_name(c): c for c in getattr(X, "columns", ()) if isinstance(c, tuple)}

    def row_name(i: int) -> str:
        col, row = names[i // n_rows], i % n_rows
        col = labels.get(col, col)
        label = index[row] if show_index else None
        # numpy scalars of a numeric index (or a MultiIndex's levels): shown as the number, not np.int64(12)
        if isinstance(label, tuple):
            label = tuple(v.item() if isinstance(v, np.generic) else v for v in label)
        elif isinstance(label, np.generic):
            label = label.item()
        where = f"row {row}" + (f" (index {label!r})" if show_index else "")
        return f"{where} of column {col!r}" if len(names) > 1 or col != "text" else where

    return row_name


def _with_series_index(estimator, X, features):
    """Under ``set_output(transform="pandas")``, a pandas Series' index on the output's rows. scikit-learn puts a
    DataFrame's index on them itself, but a Series' only from 1.8: 1.6 and 1.7 gave a RangeIndex, which
    ``pd.concat`` or ``join`` with the input's frame then paired with other rows' texts. A frame returned here keeps
    its index under every version (scikit-learn names its columns)."""
    import sys

    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(X, pd.Series):
        return features
    from sklearn.utils._set_output import _get_output_config

    if _get_output_config("transform", estimator)["dense"] != "pandas":
        return features
    return pd.DataFrame(features, index=X.index, copy=False)


def _is_default_index(index) -> bool:
    try:
        return bool((np.asarray(index) == np.arange(len(index))).all())
    except Exception:
        return False
