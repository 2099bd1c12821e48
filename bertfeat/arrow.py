"""The per-batch core over Arrow data: a record batch of text columns in, a record batch of features out.

:class:`ArrowFeaturizer` is what the CLI calls per chunk of a file and what a distributed engine calls per
partition (it is a plain callable class, so Ray Data's ``map_batches`` can hold one per actor). It wraps a fitted
:class:`~bertfeat.BertEmbedder`, so every caller shares the estimator's data path, cache and feature names.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa

from bertfeat._version import __version__
from bertfeat.encode import JOIN_ITEMS, TAKE_FIELD, EncodeStats
from bertfeat.utf8 import invalid_values

LAYOUTS = ("columns", "list")
_TEXT_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_null)
if hasattr(pa.types, "is_string_view"):
    _TEXT_TYPES += (pa.types.is_string_view,)


def is_text_type(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return is_text_type(t.value_type)
    return any(check(t) for check in _TEXT_TYPES)


# the list types, of any size or layout (the views: pyarrow 16+, where this pyarrow has them)
_LIST_TYPES = tuple(getattr(pa.types, f"is_{name}") for name in (
    "list", "large_list", "fixed_size_list", "list_view", "large_list_view") if hasattr(pa.types, f"is_{name}"))


def is_list_type(t: pa.DataType) -> bool:
    """Whether ``t`` is a list type, of any size or layout (``list_view`` too): the one reading of "a column of
    lists" for the refusal of a text column (:func:`nested_kind`) and for R's reading of a kept column."""
    return any(check(t) for check in _LIST_TYPES)


def nested_kind(t: pa.DataType) -> str:
    """"records" for a struct type, "lists" for a list type (:func:`is_list_type`), else "": values no one text is."""
    if pa.types.is_struct(t):
        return "records"
    return "lists" if is_list_type(t) else ""


def is_bytes_type(t: pa.DataType) -> bool:
    """Whether ``t`` holds bytes (binary of any size or layout, or a dictionary of them): text without its UTF-8
    mark for a text column, raw bytes for R's reading of a kept column."""
    if pa.types.is_dictionary(t):
        return is_bytes_type(t.value_type)
    return (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or getattr(pa.types, "is_binary_view", lambda _: False)(t))


# a parquet column of text stored as bytes without its UTF-8 mark; Spark reads it as text only under
# spark.sql.parquet.binaryAsString, pandas as bytes objects: told how to write it again as strings
_BYTES = ("bytes not marked as text (as Impala and older Hive write strings in parquet); if they are UTF-8 text, write "
          "the column again as strings: with pyarrow, t = pq.read_table(f); t = t.set_column("
          "t.schema.get_field_index('{c}'), '{c}', t['{c}'].cast(pa.string())); pq.write_table(t, f).")


class ArrowFeaturizer:
    """Callable: Arrow table or record batch -> record batch of kept columns followed by the features.

    Parameters
    ----------
    text_cols : list of str
        Text columns to embed (features of each, side by side).
    keep_cols : list of str
        Columns copied through unchanged, before the features (ids, labels).
    layout : {"columns", "list"}
        One float32 column per feature (named like ``get_feature_names_out``), or one
        ``fixed_size_list<float32>`` column per text column named ``{column}_embedding``.
    **params
        Any :class:`~bertfeat.BertEmbedder` parameter (model, pooling, layers, cache_dir, ...).

    Examples
    --------
    >>> import pyarrow as pa
    >>> f = ArrowFeaturizer(["review"], keep_cols=["id"])
    >>> out = f(pa.table({"id": [1, 2], "review": ["Lovely.", "Dull."]}))
    >>> out.num_rows, out.schema.names[:2], out.schema.field(1).type
    (2, ['id', 'review_cls_000'], DataType(float))
    """

    def __init__(self, text_cols, keep_cols=(), layout: str = "columns", **params):
        from bertfeat.embedder import BertEmbedder

        if layout not in LAYOUTS:
            raise ValueError(f"layout={layout!r} is not valid: expected one of {list(LAYOUTS)}.")
        self.text_cols = list(text_cols)
        self.keep_cols = list(keep_cols)
        self.layout = layout
        self.params = params
        if not self.text_cols:
            raise ValueError("name at least one text column to embed.")
        self.embedder = BertEmbedder(columns=self.text_cols, **params)
        import pandas as pd

        self.embedder.fit(pd.DataFrame({c: ["fit reads the model's shape only"] for c in self.text_cols}))
        self.feature_names = [str(n) for n in self.embedder.get_feature_names_out()]
        clash = sorted(set(self.keep_cols) & set(self.output_feature_columns()))
        if clash:
            raise ValueError(f"kept column(s) {clash} would clash with feature column names; rename them first.")
        self.stats = EncodeStats()
        # False: a caller that reports truncation itself (counted in self.stats) gets no warning per batch
        self.warn_truncation = True
        self._checking_model = None  # loaded by check_texts only where it must tokenize

    @property
    def recipe(self):
        return self.embedder.recipe_

    def output_feature_columns(self) -> list[str]:
        if self.layout == "list":
            return [f"{c}_embedding" for c in self.text_cols]
        return self.feature_names

    def check_schema(self, schema: pa.Schema) -> None:
        """Fail before any work if a column is missing or a text column is not text."""
        names = schema.names
        absent = [c for c in self.text_cols + self.keep_cols if c not in names]
        if absent:
            from bertfeat.inputs import unicode_form_hint

            raise ValueError(f"column(s) {absent} not found; the input has columns {names}."
                             f"{unicode_form_hint(absent, names)}")
        for c in self.text_cols:
            t = schema.field(c).type
            if not is_text_type(t):
                nested = nested_kind(t)
                # cast to a string (as Spark casts), a row of items or fields would be embedded as "[a, cat]"
                if nested:
                    raise TypeError(f"text column {c!r} holds {t} values, not text: "
                                    f"{TAKE_FIELD if nested == 'records' else JOIN_ITEMS} Then write the file again.")
                raise TypeError(f"text column {c!r} holds {t} values, " + (_BYTES.format(c=c) if is_bytes_type(t) else
                                "not text; embed a string column (or cast it to string first)."))

    def output_schema(self, input_schema: pa.Schema) -> pa.Schema:
        fields = [input_schema.field(c) for c in self.keep_cols]
        f = self.recipe.n_features
        if self.layout == "list":
            fields += [pa.field(n, pa.list_(pa.float32(), f)) for n in self.output_feature_columns()]
        else:
            fields += [pa.field(n, pa.float32()) for n in self.feature_names]
        return pa.schema(fields, metadata={b"bertfeat": json.dumps(self.provenance()).encode()})

    def check_texts(self, batch, first_row: int = 0) -> None:
        """The core's checks of a batch's texts, without embedding anything: a missing text, a blank one, or one the
        tokenizer drops whole (under ``missing="error"``; this one loads the model, on the CPU). Raises the error
        ``__call__`` would, naming the row as it does; returns None when it finds none. (Arrow's string columns hold
        nothing else the core refuses: values that are not strings are refused by :meth:`check_schema`; strings that
        are not UTF-8 by ``__call__``.)"""
        from bertfeat.embedder import _row_namer
        from bertfeat.encode import dropped_texts, refuse_dropped_rows, split_missing

        n = batch.num_rows
        texts = [v for c in self.text_cols for v in batch.column(c).to_pylist()]
        row_name = _row_namer(self.text_cols, n, None)
        try:
            split_missing(texts, self.embedder.missing, row_name)
            if self.embedder.missing == "error" and texts:  # then every text is present and not blank
                refuse_dropped_rows(texts, dropped_texts(texts, self.recipe, self._model()), row_name)
        except (ValueError, TypeError) as exc:
            raise_at_input_row(exc, range(first_row, first_row + n))
            raise

    def _model(self):
        """The embedder's model (its tokenizer is what :meth:`check_texts` needs), loaded once."""
        if self._checking_model is None:
            self._checking_model = self.embedder._backend_loader()()
        return self._checking_model

    def product_shape(self) -> tuple[int, int | None]:
        """The model's hidden size and feed-forward width: the products whose rates a job's manifest records
        (:func:`bertfeat.hardware.run_facts`). Where the model never loaded here (every text answered from the
        cache) the width is read from its config.json, as ``bertfeat info`` reads it: a process that has torch
        measures the rates all the same (R's, a notebook's); None where the model cannot be resolved now."""
        from bertfeat.embedder import _HELD_MODEL
        from bertfeat.models import feed_forward_width, resolve_model

        hidden = self.recipe.hidden_size
        width = getattr(self.embedder.__dict__.get(_HELD_MODEL), "ffn_width", None)
        if width is None:
            try:
                spec = resolve_model(self.embedder.model, trust_remote_code=self.embedder.trust_remote_code)
            except (OSError, ValueError):  # a fact of the manifest, never a job's failure
                return hidden, None
            width = feed_forward_width(spec.path, hidden)
        return hidden, width

    def text_hashes(self, batch) -> np.ndarray:
        """The 64-bit hashes of the distinct texts of ``batch`` that the last call embedded (a text read as missing,
        blank or dropped whole by the tokenizer, is none): what a job's ``unique_texts`` counts. Call it after
        ``self(batch)``."""
        from bertfeat.counts import text_hashes

        gone = self.embedder.missing_
        return np.concatenate([text_hashes([v for v, out in zip(batch.column(c).to_pylist(), gone[:, j]) if not out])
                               for j, c in enumerate(self.text_cols)])

    def provenance(self) -> dict:
        """What the parquet metadata and manifest record: model, hashes, recipe, dims, version, options."""
        r = self.recipe
        return {
            "bertfeat_version": __version__,
            "model": self.params.get("model", "default"),
            "model_label": r.model,
            "weights_sha256": r.weights_sha256,
            "tokenizer_sha256": r.tokenizer_sha256,
            "config_sha256": r.config_sha256,
            "recipe_fingerprint": r.fingerprint(),
            "pooling": list(r.pooling),
            "layers": list(r.layers),
            "num_layers": r.num_layers,  # the model's: concatenated layers' names pad to its width (l02 ... l12)
            "layer_agg": r.layer_agg,
            "max_length": r.max_length,
            "long_text": r.long_text,
            "stride": r.stride if r.long_text == "chunk" else None,  # as BertEmbedder takes it back (truncate: none)
            "normalize": r.normalize,
            "dtype": r.dtype,
            "prefix": r.prefix,  # the text put before every text (from prefix= or prompt_name=); "" for none
            # False where the prefix (and the first token) were left out of mean and max pooling, as the model's
            # sentence-transformers Pooling config says ("include_prompt": false): other vectors from the same prefix
            "pool_prefix": r.pool_prefix,
            "dims": r.n_features,
            "text_columns": self.text_cols,
            "keep_columns": self.keep_cols,
            "layout": self.layout,
            "missing": self.embedder.missing,
        }

    def __call__(self, batch, first_row: int = 0) -> pa.RecordBatch:
        """Features of ``batch``; a mistake in its texts names the row as ``first_row`` + its place in the batch
        (the batch's first row's number in the whole input: a file's rows, not the chunk's)."""
        if isinstance(batch, pa.Table):
            batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else pa.RecordBatch.from_pylist(
                [], schema=batch.schema)
        self.check_schema(batch.schema)
        problem = invalid_values(batch.select(list(dict.fromkeys(self.text_cols + self.keep_cols))))
        if problem:  # the cluster engines' own readers do not check UTF-8 (the local engine's reader did already)
            column, row, detail = problem
            where = f"row {row}: column {column!r}" if row is not None else f"column {column!r}"
            exc = ValueError(f"{where} {detail}")
            raise_at_input_row(exc, range(first_row, first_row + batch.num_rows))
            raise exc
        frame = {c: batch.column(c).to_pylist() for c in self.text_cols}
        import pandas as pd

        try:
            features = self.embedder._transform(pd.DataFrame(frame, dtype=object),
                                                warn_truncation=self.warn_truncation)
        except (ValueError, TypeError) as exc:
            raise_at_input_row(exc, range(first_row, first_row + batch.num_rows))
            raise
        self.stats += self.embedder.stats_
        arrays = [batch.column(c) for c in self.keep_cols]
        f = self.recipe.n_features
        if self.layout == "list":
            for j in range(len(self.text_cols)):
                block = np.ascontiguousarray(features[:, j * f:(j + 1) * f]).ravel()
                arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(block, pa.float32()), f))
        else:
            columns_first = np.ascontiguousarray(features.T)
            arrays.extend(pa.array(columns_first[k], pa.float32()) for k in range(columns_first.shape[0]))
        return pa.RecordBatch.from_arrays(arrays, schema=self.output_schema(batch.schema))


_ROW = re.compile(r"^row (\d+)")


def row_named(exc: Exception) -> int | None:
    """The batch row a mistake of the core is about (its message starts "row i"), or None."""
    m = _ROW.match(str(exc))
    return None if m is None else int(m.group(1))


def reworded(exc: Exception, message: str) -> Exception:
    """``exc``'s type with another message; ``exc`` itself for an error type that wants other arguments."""
    try:
        return type(exc)(message)
    except Exception:
        return exc


def in_a_batch(exc: Exception, batch, keep_cols, sent: str, whole: str) -> Exception:
    """A mistake the core raised about "row i" of a batch a cluster engine sent a worker, where the whole (a Ray
    Dataset, a Spark DataFrame) numbers no rows: said to be the batch's row (``sent``: who sent the batch to whom,
    "Ray sent this worker"; ``whole``: what the batch is of, "Dataset"), with the row's ``keep_cols`` (its id), by
    which a user finds it. Any other error is returned as it is (also one whose type wants other arguments)."""
    row = row_named(exc)
    if row is None or row >= batch.num_rows:
        return exc
    kept = ", ".join(f"{c}={batch.column(c)[row].as_py()!r}" for c in keep_cols)
    return reworded(exc, f"{exc} (row {row} of the batch of {batch.num_rows} rows {sent}, not of the {whole}, which "
                         "numbers no rows" + (f"; that row has {kept})" if kept else ")"))


def at_input_row(exc: Exception, rows) -> Exception:
    """A mistake the core raised about "row i" of a batch, said of the input's row ``rows[i]`` instead: the same
    type and words otherwise. Any other error (a row past ``rows``, or one that is its input's row already) is
    returned as it is, traceback and all."""
    row = row_named(exc)
    if row is None or row >= len(rows) or rows[row] == row:
        return exc
    return reworded(exc, f"row {rows[row]}{str(exc)[len(f'row {row}'):]}")


def raise_at_input_row(exc: Exception, rows) -> None:
    """Raise :func:`at_input_row` of ``exc`` in its place when it names another row; return when nothing changes."""
    found = at_input_row(exc, rows)
    if found is not exc:
        raise found from None


def first_refused(mistake: Exception, reader, checker: ArrowFeaturizer) -> Exception:
    """The mistake the local engine reports for an input where a cluster engine's worker refused a text
    (``mistake``, about a "row i"): the first text of the input the core refuses, found by reading the text columns
    again on the driver (``reader``: an :class:`~bertfeat.readers.InputReader`), batch by batch as the local engine
    reads them, with ``checker``'s checks. Workers run at once, so the one heard of first need not hold the input's
    first bad text. Any other mistake, or one the checks do not find, is returned as raised."""
    if row_named(mistake) is None:
        return mistake
    first_row = 0
    for batch in reader.batches():
        try:
            checker.check_texts(batch, first_row)
        except (ValueError, TypeError) as found:
            return found
        first_row += batch.num_rows
    return mistake
