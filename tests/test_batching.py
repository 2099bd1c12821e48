import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bertfeat.batching import make_units, plan_batches, restore_order, split_windows, unique_strings


def test_unique_strings_first_seen_order_and_inverse():
    uniques, inverse = unique_strings(["b", "a", "b", "", "a"])
    assert uniques == ["b", "a", ""]
    assert [uniques[i] for i in inverse] == ["b", "a", "b", "", "a"]


@given(st.lists(st.integers(0, 600), max_size=200), st.integers(1, 3000), st.one_of(st.none(), st.integers(1, 50)))
def test_plan_batches_is_a_permutation_within_budget(lengths, budget, max_rows):
    batches = plan_batches(lengths, budget, max_rows)
    flat = np.concatenate(batches) if batches else np.array([], dtype=int)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    for b in batches:
        padded = len(b) * max(1, max(lengths[i] for i in b))
        assert padded <= budget or len(b) == 1
        if max_rows:
            assert len(b) <= max_rows
    # longest first: batches never get longer
    longest = [max(lengths[i] for i in b) for b in batches]
    assert longest == sorted(longest, reverse=True)


@given(st.lists(st.integers(0, 100), min_size=1, max_size=100), st.integers(1, 500))
def test_restore_order_undoes_the_plan(values, budget):
    batches = plan_batches(values, budget)
    results = [np.asarray(values)[b][:, None] * 10 for b in batches]
    assert restore_order(batches, results)[:, 0].tolist() == [v * 10 for v in values]


@given(st.integers(0, 500), st.integers(1, 64), st.data())
def test_windows_cover_every_token_with_the_stride_overlap(n, window, data):
    stride = data.draw(st.integers(0, window - 1))
    spans = split_windows(n, window, stride)
    assert spans[0][0] == 0 and spans[-1][1] == n
    for (a, b), (c, d) in zip(spans, spans[1:]):
        assert c == b - stride and d > b
    assert all(0 <= b - a <= window for a, b in spans)


def test_make_units_truncates_or_chunks_and_counts():
    tokens = [[1, 2, 3], list(range(10)), []]
    cut = make_units(tokens, window=4, long_text="truncate", stride=0)
    assert cut.ids.tolist() == [[1, 2, 3], [0, 1, 2, 3], []]
    assert (cut.n_truncated, cut.n_chunked) == (1, 0)
    chunks = make_units(tokens, window=4, long_text="chunk", stride=1)
    assert chunks.ids.tolist() == [[1, 2, 3], [0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9], []]
    assert chunks.owner.tolist() == [0, 1, 1, 1, 2]
    assert chunks.starts.tolist() == [0, 1, 4, 5]
    assert (chunks.n_truncated, chunks.n_chunked) == (0, 1)
    exact = make_units([[1, 2, 3, 4]], window=4, long_text="truncate", stride=0)  # exactly the window: whole
    assert exact.ids.tolist() == [[1, 2, 3, 4]] and exact.n_truncated == 0
    exact = make_units([[1, 2, 3, 4]], window=4, long_text="chunk", stride=1)
    assert exact.ids.tolist() == [[1, 2, 3, 4]] and exact.n_chunked == 0


@pytest.mark.parametrize("window, stride", [(0, 0), (4, 4), (4, 5), (4, -1)])
def test_split_windows_rejects_windows_that_would_not_advance(window, stride):
    with pytest.raises(ValueError, match=rf"need window >= 1 and 0 <= stride < window, got window={window}, "
                                         rf"stride={stride}"):
        split_windows(10, window, stride)


def test_make_units_counts_every_long_text_and_owner_is_int64_even_when_empty():
    units = make_units([list(range(9)), [1], list(range(7))], window=4, long_text="truncate", stride=0)
    assert units.n_truncated == 2 and units.ids.tolist()[2] == [0, 1, 2, 3]
    chunks = make_units([list(range(9)), [1], list(range(7))], window=4, long_text="chunk", stride=0)
    assert chunks.n_chunked == 2 and chunks.owner.tolist() == [0, 0, 0, 1, 2, 2]
    empty = make_units([], window=4, long_text="chunk", stride=0)
    assert empty.owner.dtype == np.int64 and empty.starts.tolist() == [0] and empty.ids.tolist() == []


def test_plan_batches_fills_the_budget_with_one_token_sequences_and_names_a_bad_budget():
    assert [b.tolist() for b in plan_batches([1, 1, 1, 1, 1], token_budget=4)] == [[0, 1, 2, 3], [4]]
    with pytest.raises(ValueError, match="token_budget must be a positive number of tokens, got 0"):
        plan_batches([3], token_budget=0)


def _pad_by_hand(seqs, prefix, suffix, pad_id):
    longest = max(1, max(len(s) for s in seqs) + len(prefix) + len(suffix))
    ids = [prefix + s + suffix + [pad_id] * (longest - len(prefix + s + suffix)) for s in seqs]
    mask = [[1] * max(1, len(prefix + s + suffix)) + [0] * (longest - max(1, len(prefix + s + suffix))) for s in seqs]
    return ids, mask


@pytest.mark.parametrize("prefix, suffix", [([101], [102]), ([], []), ([0], []), ([], [2, 3])])
def test_pad_batch_matches_padding_by_hand(prefix, suffix):
    from bertfeat.batching import TokenSeqs, pad_batch

    rng = np.random.default_rng(0)
    seqs = [rng.integers(5, 1000, size=n).tolist() for n in [0, 3, 17, 1, 0, 9]]
    units = make_units(seqs, window=8, long_text="chunk", stride=2).ids
    picked = units[np.array([4, 0, 2, 6])]  # a batch is any subset of spans, in any order
    ids, mask = pad_batch(picked, prefix, suffix, pad_id=-1)
    want_ids, want_mask = _pad_by_hand(picked.tolist(), prefix, suffix, -1)
    assert ids.tolist() == want_ids and mask.tolist() == want_mask
    assert ids.dtype == np.int64 and TokenSeqs.from_lists(seqs).flat.dtype == np.int32


def test_make_units_spans_share_the_texts_token_array():
    from bertfeat.batching import TokenSeqs

    seqs = TokenSeqs.from_lists([[1, 2, 3, 4, 5, 6], [7]])
    units = make_units(seqs, window=4, long_text="chunk", stride=1)
    assert units.ids.flat is seqs.flat  # windows are spans, not copies
    assert units.ids.tolist() == [[1, 2, 3, 4], [4, 5, 6], [7]]
