"""benchmarks/bf16_routes.py: every route it times computes the product it names (a route that computed something
else, or skipped the bias, would report a rate for the wrong work)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from benchmarks.bf16_routes import layer_shapes, main, routes  # noqa: E402


@pytest.mark.parametrize("post", [None, "gelu", "add"])
def test_every_route_computes_the_product_it_names(post):
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 48, generator=gen)
    w = torch.randn(96, 48, generator=gen) / 7
    b = torch.randn(96, generator=gen)
    want = x @ w.T + b
    fused = {None: want, "gelu": F.gelu(want), "add": want + 1}[post]
    before = torch.backends.mkldnn.matmul.fp32_precision
    got = {name: fn().float() for name, fn in routes(x, w, b, post).items()}
    assert torch.backends.mkldnn.matmul.fp32_precision == before  # the implicit-bf16 route sets it back
    assert {"fp32 linear", "bf16 linear"} <= set(got)
    for name, value in got.items():
        target = fused if name == "fp32 packed + post-op" else want
        exact = name.startswith("fp32") and "bf16" not in name
        tol = 1e-4 if exact else 3e-2 * float(target.abs().max())  # bf16 keeps about 3 significant digits
        assert value.shape == target.shape, name
        assert (value - target).abs().max() <= tol, name


def test_each_layer_product_gets_the_fused_pass_post_op():
    shapes = layer_shapes(384, 1536)
    assert shapes == {"qkv": (384, 1152, None), "attn out": (384, 384, "add"), "ffn in": (384, 1536, "gelu"),
                      "ffn out": (1536, 384, "add")}


def test_main_prints_one_row_per_route(capsys):
    main(["--hidden", "32", "--tokens", "16", "--seconds", "0.001"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| route")]
    names = [r.split(" | ")[0].lstrip("| ") for r in rows]
    assert "fp32 packed" in names or "fp32 linear" in names
    best = [r for r in rows if r.startswith("| fp32 linear") or r.startswith("| fp32 packed |")]
    assert any(r.rstrip(" |").endswith("1.00") for r in best)  # the best fp32 route is the 1.00x reference
