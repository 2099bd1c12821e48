import numpy as np

from bertfeat.encode import encode
from tests.conftest import CountingBackend, make_recipe


def test_counting_backend_embeds_each_distinct_text_once():
    backend = CountingBackend()
    out, stats = encode(["ab", "cd", "ab"], make_recipe(), lambda: backend)
    assert backend.rows == 2
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out[0], out[2])
    assert stats.unique == 2
