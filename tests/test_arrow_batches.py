"""The per-batch core over Arrow data (bertfeat/arrow.py), unit by unit: which Arrow types count as text, every
refusal word for word, and the record batch it returns checked by value against the estimator's own features, in
both layouts. The CLI, Ray and Spark call it per chunk or partition; ``test_arrow.py`` checks the provenance it
writes through a whole job."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from bertfeat import BertEmbedder
from bertfeat.arrow import ArrowFeaturizer, is_text_type

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "glmnet loves features", "emma woodhouse"]
TITLES = ["one", "two", "three", "four"]


@pytest.mark.parametrize("t, text", [
    (pa.string(), True),
    (pa.large_string(), True),
    (pa.null(), True),  # a column with every value missing: embedded by the missing-text policy
    (pa.dictionary(pa.int32(), pa.string()), True),
    (pa.dictionary(pa.int8(), pa.large_string()), True),
    (pa.int64(), False),
    (pa.float32(), False),
    (pa.binary(), False),
    (pa.large_binary(), False),
    (pa.bool_(), False),
    (pa.list_(pa.string()), False),
    (pa.dictionary(pa.int32(), pa.int64()), False),
])
def test_is_text_type(t, text):
    assert is_text_type(t) is text


@pytest.mark.skipif(not hasattr(pa, "string_view"), reason="this pyarrow has no string_view")
def test_string_view_is_text():
    assert is_text_type(pa.string_view())


def test_refusals_at_construction(tiny_bert):
    with pytest.raises(ValueError) as info:
        ArrowFeaturizer(["review"], layout="rows", model=tiny_bert)
    assert str(info.value) == "layout='rows' is not valid: expected one of ['columns', 'list']."
    with pytest.raises(ValueError) as info:
        ArrowFeaturizer([], model=tiny_bert)
    assert str(info.value) == "name at least one text column to embed."
    names = ArrowFeaturizer(["review"], model=tiny_bert).feature_names
    with pytest.raises(ValueError) as info:
        ArrowFeaturizer(["review"], keep_cols=["id", names[1], names[0]], model=tiny_bert)
    assert str(info.value) == (f"kept column(s) {[names[0], names[1]]} would clash with feature column names; rename "
                               "them first.")
    with pytest.raises(ValueError, match=r"^kept column\(s\) \['review_embedding'\] would clash"):
        ArrowFeaturizer(["review"], keep_cols=["review_embedding"], layout="list", model=tiny_bert)
    # a name that only the other layout would write is free
    free = ArrowFeaturizer(["review"], keep_cols=["review_embedding"], model=tiny_bert)
    assert free.keep_cols == ["review_embedding"]
    assert ArrowFeaturizer(["review"], keep_cols=[names[0]], layout="list",
                           model=tiny_bert).output_feature_columns() == ["review_embedding"]


def test_check_schema_says_when_a_name_is_a_columns_in_another_unicode_form(tiny_bert):
    """The cluster engines' own datasets (Ray's embed_dataset, Spark's embed_dataframe): a column "texte_e\\u0301"
    asked for as typed, "texte_\\u00e9", was "not found" beside a list that prints the same name."""
    nfd, nfc = "texte_e\u0301", "texte_\u00e9"
    with pytest.raises(ValueError) as info:
        ArrowFeaturizer([nfc], model=tiny_bert).check_schema(pa.schema([("id", pa.int64()), (nfd, pa.string())]))
    assert str(info.value) == (
        f"column(s) ['{nfc}'] not found; the input has columns ['id', '{nfd}']. '{nfd}' is that name in another "
        "Unicode form (code points texte_e\\u0301; texte_\\u00e9 was given), which prints alike: names must match as "
        "written. Pass the name as the data writes it (in Python 'texte_e\\u0301', in bash $'texte_e\\u0301'), or "
        "rename the column.")


def test_check_schema_names_what_is_missing_and_what_is_not_text(tiny_bert):
    f = ArrowFeaturizer(["title", "body"], keep_cols=["id", "label"], model=tiny_bert)
    schema = pa.schema([("id", pa.int64()), ("body", pa.string()), ("other", pa.string())])
    with pytest.raises(ValueError) as info:
        f.check_schema(schema)
    assert str(info.value) == "column(s) ['title', 'label'] not found; the input has columns ['id', 'body', 'other']."
    schema = pa.schema([("id", pa.int64()), ("label", pa.int8()), ("title", pa.string()), ("body", pa.int64())])
    with pytest.raises(TypeError) as info:
        f.check_schema(schema)
    assert str(info.value) == ("text column 'body' holds int64 values, not text; embed a string column (or cast it to "
                               "string first).")
    f.check_schema(pa.schema([("title", pa.large_string()), ("body", pa.dictionary(pa.int16(), pa.string())),
                              ("label", pa.int8()), ("id", pa.string())]))  # any order, any kept type
    # (api hunt, 2026-11-26, session 10) a list of items per row (tags) was told to "cast it to string first",
    # which Spark's cast does: each row's "[a, cat]", brackets and all, embedded; a struct alike
    # (leftovers hunt, 2026-11-27, session 11) a list_view (pyarrow 16+) was no list here, where R's reading of a kept
    # column took it for one: told to "cast it to string first", which arrow cannot
    views = [getattr(pa, name)(pa.string()) for name in ("list_view", "large_list_view") if hasattr(pa, name)]
    for t, advice in ((pa.list_(pa.string()), "df[col].str.join(' ')"), (pa.large_list(pa.string()), "str.join"),
                      (pa.list_(pa.string(), 2), "str.join"), *((v, "str.join") for v in views),
                      (pa.struct([("text", pa.string())]), "df[col].str.get('field')")):
        with pytest.raises(TypeError) as info:
            f.check_schema(pa.schema([("id", pa.int64()), ("label", pa.int8()), ("title", pa.string()), ("body", t)]))
        assert str(info.value).startswith(f"text column 'body' holds {t} values, ") and advice in str(info.value)
        assert "cast it to string" not in str(info.value)
    # text stored as bytes (Impala, older Hive; Spark reads them as strings only under binaryAsString): "cast it to
    # string first" said nothing of how, to a user with a parquet file
    for t in (pa.binary(), pa.large_binary(), pa.dictionary(pa.int32(), pa.binary())):
        with pytest.raises(TypeError) as info:
            f.check_schema(pa.schema([("title", pa.string()), ("body", t), ("label", pa.int8()), ("id", pa.string())]))
        assert str(info.value) == (
            f"text column 'body' holds {t} values, bytes not marked as text (as Impala and older Hive write strings "
            "in parquet); if they are UTF-8 text, write the column again as strings: with pyarrow, "
            "t = pq.read_table(f); t = t.set_column(t.schema.get_field_index('body'), 'body', "
            "t['body'].cast(pa.string())); pq.write_table(t, f).")


def test_columns_layout_is_the_estimators_features_column_by_column(tiny_bert):
    f = ArrowFeaturizer(["body"], keep_cols=["id", "label"], model=tiny_bert)
    ids = pa.array([7, 3, 9, 1], pa.int16())
    table = pa.concat_tables([  # two chunks: the featurizer must see the rows of both, in order
        pa.table({"label": ["a", "b"], "body": TEXTS[:2], "id": ids[:2]}),
        pa.table({"label": ["c", "d"], "body": TEXTS[2:], "id": ids[2:]}),
    ])
    out = f(table)
    want = BertEmbedder(tiny_bert).fit(TEXTS).transform(TEXTS)
    names = f.feature_names  # get_feature_names_out's, one column each
    assert names == list(BertEmbedder(tiny_bert, columns=["body"]).fit(pd.DataFrame({"body": TEXTS}))
                         .get_feature_names_out())
    assert len(names) == f.recipe.n_features
    assert out.schema.names == ["id", "label"] + names
    assert out.schema.field("id").type == pa.int16() and out.column(0).to_pylist() == [7, 3, 9, 1]
    assert out.column(1).to_pylist() == ["a", "b", "c", "d"]
    assert all(out.schema.field(n).type == pa.float32() for n in names)
    got = np.column_stack([out.column(n).to_numpy() for n in names])
    np.testing.assert_array_equal(got, want)
    assert json.loads(out.schema.metadata[b"bertfeat"]) == f.provenance()
    assert f.provenance()["model"] == tiny_bert  # the model as the user named it (the label is recorded beside it)


def test_list_layout_holds_each_text_columns_block(tiny_bert):
    f = ArrowFeaturizer(["title", "body"], keep_cols=["id"], layout="list", model=tiny_bert, pooling="mean+max")
    batch = pa.RecordBatch.from_pydict({"id": [1, 2, 3, 4], "title": TITLES, "body": TEXTS})
    out = f(batch)
    width = f.recipe.n_features
    assert width == 64
    assert out.schema.names == ["id", "title_embedding", "body_embedding"]
    for name in ["title_embedding", "body_embedding"]:
        assert out.schema.field(name).type == pa.list_(pa.float32(), width)
    frame = pd.DataFrame({"title": TITLES, "body": TEXTS})
    want = BertEmbedder(tiny_bert, columns=["title", "body"], pooling="mean+max").fit(frame).transform(frame)
    for j, name in enumerate(["title_embedding", "body_embedding"]):
        got = np.stack([np.asarray(row, np.float32) for row in out.column(name).to_pylist()])
        np.testing.assert_array_equal(got, want[:, j * width:(j + 1) * width])
    assert not np.array_equal(want[:, :width], want[:, width:])  # the two blocks differ: a swap would show


def test_dictionary_text_missing_values_and_the_stats(tiny_bert):
    f = ArrowFeaturizer(["body"], model=tiny_bert, missing="zero")
    body = pa.array(["a dog ran in the park", None, "a dog ran in the park"]).dictionary_encode()
    out = f(pa.table({"body": body}))
    got = np.column_stack([out.column(n).to_numpy() for n in f.feature_names])
    want = BertEmbedder(tiny_bert).fit(TEXTS).transform(["a dog ran in the park"])[0]
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[2], want)
    assert not got[1].any()  # missing="zero": a row of zeros, kept in place
    assert (f.stats.rows, f.stats.missing, f.stats.unique) == (3, 1, 1)
    f(pa.table({"body": pa.array(["new text"])}))
    assert (f.stats.rows, f.stats.missing, f.stats.unique) == (4, 1, 2)  # summed over calls, not replaced


def test_an_empty_table_gives_an_empty_batch_with_the_full_schema(tiny_bert):
    f = ArrowFeaturizer(["body"], keep_cols=["id"], model=tiny_bert)
    empty = pa.table({"id": pa.array([], pa.int64()), "body": pa.array([], pa.string())})
    out = f(empty)
    assert isinstance(out, pa.RecordBatch) and out.num_rows == 0
    assert out.schema == f.output_schema(empty.schema)
    assert out.schema.names == ["id"] + f.feature_names


def test_provenance_names_the_default_model_when_none_is_given():
    f = ArrowFeaturizer(["body"])  # the bundled model, as the docstring's example
    assert f.provenance()["model"] == "default"
    assert f.provenance()["model_label"] == f.recipe.model


# -- a mistake named by its row in the input ------------------------------------------------------------------------

BAD = [
    # (review, title, missing policy, the error's start when the batch is the input's first)
    (["fine", None], ["a", "b"], "error", "row 1 of column 'review' is missing (None) and missing='error'."),
    (["fine", "ok"], ["a", " \t"], "error", "row 1 of column 'title' is blank (' \\t'):"),
    (["fine", "ok"], ["a", ""], "error", "row 1 of column 'title' is blank (''):"),
    (["fine", None], [None, "b"], "error", "row 1 of column 'review' is missing"),  # column by column, as the core
    (["fine", "ok"], [None, None], "error", "row 0 of column 'title' is missing (None)"),  # a column of type null
]


@pytest.mark.parametrize("review, title, missing, start", BAD)
def test_check_texts_raises_what_embedding_the_batch_would_naming_the_inputs_row(tiny_bert, review, title, missing,
                                                                                start):
    featurizer = ArrowFeaturizer(["review", "title"], [], model=tiny_bert, missing=missing)
    batch = pa.table({"review": review, "title": title})
    for first_row in (0, 40):
        with pytest.raises(ValueError) as checked:
            featurizer.check_texts(batch, first_row)
        with pytest.raises(ValueError) as embedded:
            featurizer(batch, first_row)
        want = start.replace("row 1 ", f"row {1 + first_row} ").replace("row 0 ", f"row {first_row} ")
        assert str(checked.value).startswith(want) and str(checked.value) == str(embedded.value)
    # by default the rows are the batch's own, counted from 0 (what Spark's and Ray's workers renumber)
    with pytest.raises(ValueError) as checked:
        featurizer.check_texts(batch)
    with pytest.raises(ValueError) as embedded:
        featurizer(batch)
    assert str(checked.value).startswith(start) and str(checked.value) == str(embedded.value)


def test_check_texts_passes_texts_the_core_embeds(tiny_bert):
    featurizer = ArrowFeaturizer(["review"], [], model=tiny_bert, missing="zero")
    assert featurizer.check_texts(pa.table({"review": ["fine", None, "ok"]}), 10) is None
    strict = ArrowFeaturizer(["review"], [], model=tiny_bert)
    assert strict.check_texts(pa.table({"review": ["fine", "ok"]})) is None


@pytest.mark.parametrize("exc, rows, want", [
    (ValueError("row 2 is missing"), range(10, 15), ValueError("row 12 is missing")),
    (TypeError("row 0 of column 'a' holds int"), [7, 3], TypeError("row 7 of column 'a' holds int")),
    (ValueError("row 5 is missing"), range(10, 15), None),  # past the rows given: left as raised
    (ValueError("row 2 is missing"), range(0, 5), None),  # already the input's row: left as raised, traceback and all
    (ValueError("the row 2 is missing"), range(10, 15), None),  # a message that names no row first
    (ValueError("model not found"), range(3), None),
])
def test_at_input_row_renames_only_a_leading_row(exc, rows, want):
    from bertfeat.arrow import at_input_row, raise_at_input_row

    got = at_input_row(exc, rows)
    if want is None:
        assert got is exc
        assert raise_at_input_row(exc, rows) is None
    else:
        assert type(got) is type(want) and str(got) == str(want)
        with pytest.raises(type(want)) as info:
            raise_at_input_row(exc, rows)
        assert str(info.value) == str(want) and info.value.__suppress_context__


def test_at_input_row_leaves_an_error_type_that_wants_other_arguments():
    from bertfeat.arrow import at_input_row

    class Picky(ValueError):
        def __init__(self, message, code):
            super().__init__(message)

    exc = Picky("row 1 is missing", 4)
    assert at_input_row(exc, range(5, 9)) is exc


@pytest.mark.parametrize("column", ["id", "review"])
def test_a_string_that_is_not_utf8_is_refused_naming_its_input_row(tiny_bert, column):
    """The Ray and Spark engines hand Arrow batches read by their own readers, which do not check UTF-8: a text
    column failed with Python's bare decode error, and a kept one passed into an output no reader could open."""
    import numpy as np

    values = [b"fine", b"caf\xe9", b"ok"]
    offsets = np.cumsum([0] + [len(v) for v in values]).astype(np.int32)
    bad = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(values))])
    good = pa.array(["a", "b", "c"])
    batch = pa.RecordBatch.from_pydict({"id": bad if column == "id" else good, "review": bad if column == "review" else good})
    featurizer = ArrowFeaturizer(["review"], keep_cols=["id"], model=tiny_bert)
    with pytest.raises(ValueError, match=rf"^row 41: column '{column}' holds bytes that are not UTF-8 text"):
        featurizer(batch, first_row=40)
    assert featurizer(batch.slice(2), first_row=42).num_rows == 1  # the rows after it are fine
