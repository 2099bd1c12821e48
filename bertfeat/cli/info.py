"""``bertfeat info``: what a model is (layers, hidden size, max length, its own pooling and prompts) and the default
recipe."""

from __future__ import annotations

import argparse
import json
import warnings

EXAMPLES = """
examples:
  bertfeat info
  bertfeat info sentence-transformers/all-mpnet-base-v2
  bertfeat info ./my-model --json
  bertfeat info intfloat/e5-base-v2          # lists its prompts, for --prompt-name
"""


def add_parser(sub) -> None:
    p = sub.add_parser("info", help="describe a model and bertfeat's default recipe for it",
                       description=__doc__.splitlines()[0].split(": ", 1)[1], epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", default="default", metavar="MODEL",
                   help="'default' (bundled all-MiniLM-L6-v2), a Hugging Face name, or a local directory")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def describe(model: str = "default") -> dict:
    from bertfeat.embedder import BertEmbedder
    from bertfeat.models import resolve_model

    spec = resolve_model(model)
    with warnings.catch_warnings():  # the note about prompts: info lists them below
        warnings.simplefilter("ignore", UserWarning)
        recipe = BertEmbedder(model).fit(["x"]).recipe_
    return {
        "model": spec.label,
        "path": spec.path,
        "model_type": spec.model_type,
        "layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "max_length": spec.max_length,
        "weights_sha256": spec.weights_sha256,
        "revision": spec.revision,
        "own_pooling": {
            "pooling": "+".join(spec.st_pooling) if spec.st_pooling else None,
            "normalize": spec.st_normalize,
            "max_seq_length": spec.st_max_seq_length,
        },
        "prompts": dict(spec.prompts),
        "default_prompt_name": spec.default_prompt_name,
        "default_recipe": {k: v for k, v in recipe.to_dict().items() if not k.endswith("sha256")},
    }


def run(args: argparse.Namespace) -> int:
    info = describe(args.model)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    own = info["own_pooling"]
    r = info["default_recipe"]
    lines = [
        f"model:        {info['model']}",
        f"path:         {info['path']}",
        f"type:         {info['model_type']}, {info['layers']} layers, hidden size {info['hidden_size']}, "
        f"max length {info['max_length']} tokens",
        f"weights:      sha256 {info['weights_sha256'][:16]}..." + (f" (revision {info['revision']})"
                                                                   if info["revision"] else ""),
        "own pooling:  " + (f"{own['pooling']}, normalize={own['normalize']}, max_seq_length={own['max_seq_length']}"
                            if own["pooling"] else "none declared (not a sentence-transformers model)"),
        "prompts:      " + ("; ".join(f"{k} = {v!r}" + (" (the model's default)" if k == info["default_prompt_name"]
                                                         else "") for k, v in info["prompts"].items())
                            + "  (use with --prompt-name NAME / prompt_name=)" if info["prompts"] else "none"),
        f"default recipe: pooling={'+'.join(r['pooling'])} layers={r['layers']} layer_agg={r['layer_agg']} "
        f"max_length={r['max_length']} long_text={r['long_text']} normalize={r['normalize']} dtype={r['dtype']} "
        f"-> {r['hidden_size'] * len(r['pooling']) * (len(r['layers']) if r['layer_agg'] == 'concat' else 1)} "
        f"features per text column",
    ]
    print("\n".join(lines))
    return 0
