"""``bertfeat info``: what a model is (layers, hidden size, max length, its own pooling and prompts), the default
recipe, and this machine (CPU, instruction sets, threads, measured float32/bfloat16/float16 product rates, the fastest
dtype, and the arrangement of the forward pass this model takes here in float32: the fused CPU pass's rung or
transformers' own pass, and why)."""

from __future__ import annotations

import argparse
import json

# --help's description: not read from the docstring, which python -OO (PYTHONOPTIMIZE=2) strips
DESCRIPTION = ("what a model is (layers, hidden size, max length, its own pooling and prompts), the default recipe,\n"
               "and this machine (CPU, instruction sets, threads, measured float32/bfloat16/float16 product rates,\n"
               "the fastest dtype, the forward pass this model takes here).")

EXAMPLES = """
examples:
  bertfeat info
  bertfeat info sentence-transformers/all-mpnet-base-v2
  bertfeat info ./my-model --json
  bertfeat info intfloat/e5-base-v2          # lists its prompts, for --prompt-name
"""


def add_parser(sub) -> None:
    p = sub.add_parser("info", help="describe a model and bertfeat's default recipe for it",
                       description=DESCRIPTION, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", default="default", metavar="MODEL",
                   help="'default' (the default: the bundled all-MiniLM-L6-v2), a Hugging Face name, or a local "
                        "directory")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--no-machine", action="store_true",
                   help="skip the machine report (it measures matrix products for about a second)")
    p.set_defaults(func=run)


def describe(model: str = "default", machine: bool = True) -> dict:
    from bertfeat.backend import get_backend, loaded_backend
    from bertfeat.devices import resolve_device
    from bertfeat.embedder import BertEmbedder
    from bertfeat.encode import first_token_fault
    from bertfeat.model_files import check_model_files
    from bertfeat.models import resolve_model
    from bertfeat.prompts import notes_held

    spec = resolve_model(model)
    # the default pooling reads the CLS token: for a model where that is refused (a causal decoder, its family named
    # in config.json or found by the loaded model; a tokenizer that puts nothing before the text) the default recipe
    # is mean pooling, which it runs, and not a refusal of info nor a recipe `bertfeat embed` refuses
    fault = first_token_fault(spec)  # config.json and the tokenizer's files
    backend = loaded_backend(spec, "cpu", "float32")  # one this process loaded already answers at no cost
    if backend is not None or machine or (fault is None and not _runs_fused(spec)):
        # Loads the weights once, on the CPU: a model whose weights do not fit its config is an error here, not a
        # normal model. The machine report's forward-pass line reads this load; and only the loaded model finds a
        # causal decoder of a family config.json does not name (its first token's probe). A family the fused CPU
        # pass runs is a bidirectional encoder, whose answer config.json and the tokenizer give: without the
        # machine report it is not loaded whole (the fused pass's set-up, about a second), its weights checked alone
        backend = get_backend(spec, "cpu", "float32")
        fault = first_token_fault(spec, backend)
    pooling = None if fault is None else "mean"
    with notes_held():  # the notes about prompts and modules not applied: info lists them below
        recipe = BertEmbedder(model, **({"pooling": pooling} if pooling else {})).fit(["x"]).recipe_
    checked = backend.checked if backend is not None else check_model_files(spec)
    return {
        "model": spec.label,
        "path": spec.path,
        "model_type": spec.model_type,
        "layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "max_length": spec.max_length,
        "weights_sha256": spec.weights_sha256,
        "weights_tensors": checked["tensors"],
        "revision": spec.revision,
        "own_pooling": {
            "pooling": "+".join(spec.st_pooling) if spec.st_pooling else None,
            "normalize": spec.st_normalize,
            "max_seq_length": spec.st_max_seq_length,
            "do_lower_case": spec.st_do_lower_case,
            "not_applied": list(spec.st_not_applied),
            "include_prompt": spec.st_include_prompt,
            "settings_file": spec.st_settings_file,
        },
        "prompts": dict(spec.prompts),
        "default_prompt_name": spec.default_prompt_name,
        "default_recipe": {k: v for k, v in recipe.to_dict().items() if not k.endswith("sha256")},
        # the device the default recipe's dtype="auto" was resolved for (a GPU's bfloat16; the machine report below
        # is this CPU's)
        "default_device": resolve_device("auto"),
        **({"machine": {**_machine(spec), "forward_pass": _forward_pass(backend)}} if machine else {}),
    }


def _runs_fused(spec) -> bool:
    """Whether the fused CPU pass runs this model (:func:`bertfeat.architectures.supports`): a bidirectional encoder
    by construction, read from config.json alone."""
    from bertfeat.architectures import supports
    from bertfeat.model_files import _load_config

    return supports(_load_config(spec.path, False))


def _machine(spec) -> dict:
    from bertfeat.hardware import limit_threads_to_allotted_cores, machine_report
    from bertfeat.models import feed_forward_width

    limit_threads_to_allotted_cores()  # the count bertfeat's CPU backend runs with: OMP_NUM_THREADS's if lower
    return machine_report(spec.hidden_size, feed_forward_width(spec.path, spec.hidden_size))


def _forward_pass(backend) -> str:
    """Which arrangement of the forward pass this model takes on this CPU in float32 (``backend``: the model loaded
    there), and why (the fused pass's ladder, :func:`bertfeat.fastbert.build_ladder`, or transformers' own pass)."""
    spec = backend.spec
    if backend.ladder is not None and backend.ladder.rung == backend.rung:
        return backend.ladder.describe()
    if backend.ladder is not None:  # fell back after a failed batch in this process
        return f"{backend.rung} (the fused pass failed on a batch in this process)"
    from bertfeat.architectures import _FAMILIES

    return (f"{backend.rung} (model_type {spec.model_type!r} with this config is not one the fused CPU pass "
            f"reimplements: model_type {', '.join(_FAMILIES)} with erf GELU and absolute positions)")


def run(args: argparse.Namespace) -> int:
    info = describe(args.model, machine=not args.no_machine)
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
                                                                   if info["revision"] else "")
        + f", {info['weights_tensors']} tensors, all fit config.json and the tokenizer",
        "own pooling:  " + (f"{own['pooling']}{_not_offered(own['pooling'])}, normalize={own['normalize']}, "
                            f"max_seq_length={own['max_seq_length']}"
                            if own["pooling"] else "none declared (not a sentence-transformers model)"),
        *([f"lowercase:    do_lower_case=True in {own['settings_file']}: every text (its prefix with it) is "
           "lowercased before the tokenizer, as sentence-transformers does"] if own["do_lower_case"] else []),
        *([f"not applied:  {', '.join(own['not_applied'])}, with which sentence-transformers computes the model's "
           "sentence embeddings beside its pooling: bertfeat's features are the encoder's pooled hidden states, not "
           "those embeddings"] if own["not_applied"] else []),
        *(["prompt:       include_prompt=False in its Pooling config: the model pools a text without its prompt; "
           "so does bertfeat: a --prefix/--prompt-name is attended to but left out of mean and max pooling (cls "
           "reads the first token)"] if not own["include_prompt"] else []),
        "prompts:      " + ("; ".join(f"{k} = {v!r}" + (" (the model's default)" if k == info["default_prompt_name"]
                                                         else "") for k, v in info["prompts"].items())
                            + "  (use with --prompt-name NAME / prompt_name=)" if info["prompts"] else "none"),
        f"default recipe: pooling={'+'.join(r['pooling'])} layers={r['layers']} layer_agg={r['layer_agg']} "
        f"max_length={r['max_length']} long_text={r['long_text']} normalize={r['normalize']} dtype={r['dtype']} "
        f"on device='auto' ({info['default_device']} here) -> "
        f"{r['hidden_size'] * len(r['pooling']) * (len(r['layers']) if r['layer_agg'] == 'concat' else 1)} "
        f"features per text column",
    ]
    m = info.get("machine")
    if m:
        from bertfeat.hardware import gflops_text

        rates = ", ".join(f"{d} {gflops_text(r or None)}" for d, r in m["matmul_gflops"].items())
        lines += [
            f"machine:      {m['cpu']} ({m['arch']}), {m['allotted_cores']} cores allotted, {m['threads']} threads, "
            f"torch {m['torch']} ({m['torch_cpu_capability']})",
            f"instructions: {_instructions(m['flags'])}",
            "native dtypes: " + (f"{', '.join(m['native_dtypes'])} (this CPU)" if m["native_dtypes"] is not None
                                 else "not known (this OS lists no instruction sets)"),
            f"matmul GFLOP/s at this model's shape {tuple(m['matmul_shape'])}: {rates}; fastest on this CPU: "
            f"dtype={m['fastest_dtype']!r}",
            f"CPU kernels:  {m['cpu_kernels']} (BERTFEAT_CPU_KERNELS=onednn|torch to change)",
            f"forward pass: {m['forward_pass']}, float32 on this CPU",
        ]
        if m.get("rosetta"):
            from bertfeat.os_cpu import ROSETTA

            lines.append(f"rosetta:      {ROSETTA}, slower than native and without the Apple GPU (MPS): install an "
                         "arm64 Python (python.org's, Miniforge's) to run natively and use device='mps'")
    print("\n".join(lines))
    return 0


def _instructions(flags: list[str] | None) -> str:
    """The instruction sets line: None where the OS lists none (Windows), which says nothing of the CPU."""
    if flags is None:
        return "not listed by this OS (nothing is known of them here; the rates measured below say which dtype runs " \
               "fastest)"
    return " ".join(flags) or "none of those bertfeat looks for"


def _not_offered(pooling: str) -> str:
    """A note after a model's own pooling where bertfeat offers no pooling of that name (last token, weighted mean)."""
    from bertfeat.recipe import POOLINGS

    if set(pooling.split("+")) <= set(POOLINGS):
        return ""
    return f" (not a pooling bertfeat offers: {', '.join(POOLINGS)})"
