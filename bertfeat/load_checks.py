"""What a model passes as it loads, before it embeds anything: :class:`LoadChecks`, the part of
:class:`~bertfeat.backend.TorchBackend` that runs the transformers model on short probe texts and refuses, saying
why, one that fails on them or whose hidden states are not one vector per token per layer; finds whether padding
changes a text's states (a model that sees it runs each length alone) and whether its first token sees the text
after it (a causal decoder's does not); and proves a reduced precision runs on this CPU, warning where it is slower
than float32."""

from __future__ import annotations

import contextlib

from bertfeat.batch_runner import _is_oom
from bertfeat.devices import _autocast_runs_on_cpu, _torch_lacks_dtype_on_cpu


class LoadChecks:
    """The load-time checks of a :class:`~bertfeat.backend.TorchBackend`, and the probe texts they run.

    They run on what the backend's load set: ``spec``, ``config``, ``device``, ``dtype`` and ``torch_dtype``, the
    transformers ``model``, ``fast`` and ``rung``, ``prefix``, ``suffix`` and ``pad_id``, ``ffn_width``, and the
    backend's ``tokenize``, ``n_special``, ``_pad`` and ``_numerics``.
    """

    def _check_reduced_precision(self) -> None:
        """bfloat16 / float16 on CPU: run it once (a CPU that cannot is told so in one line, never a raw crash) and
        warn, with the measured rates, when it is slower than float32 here. The dtype is never switched."""
        if self.fast is None:  # the transformers forward pass in this dtype is the bottom rung: prove it runs
            self._check_dtype_runs(self.model)
        self._warn_if_slow()

    def _check_dtype_runs(self, model) -> None:
        """Run the transformers ``model`` once in this dtype: a CPU that cannot is told so in one line, and a torch
        that has no such kernels on CPU (float16 before the releases that added it) is named as the cause."""
        import torch

        from bertfeat.hardware import cpu_flags, cpu_model

        ids, mask = self._pad(self._probe_content())
        try:
            with torch.inference_mode(), self._numerics():
                model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
        except RuntimeError as exc:
            if _is_oom(exc):  # no memory for the trial: the machine's state, not the dtype's fault
                raise
            first = str(exc).splitlines()[0]
            if _torch_lacks_dtype_on_cpu(first, self.dtype):
                other = "'bfloat16' or 'float32'" if self.dtype == "float16" else "'float32'"
                raise ValueError(
                    f"dtype={self.dtype!r} cannot run on CPU with torch {torch.__version__}, which has no "
                    f"{self.dtype} {'autocast' if 'Autocast' in first else 'kernels'} there ({first}); the CPU is not "
                    f"the cause. Pass dtype={other}, or install a newer torch."
                ) from None
            if _autocast_runs_on_cpu(self.torch_dtype):  # this CPU runs the dtype: the model's own code fails in it
                raise ValueError(
                    f"dtype={self.dtype!r} cannot run model={self.spec.name!r} "
                    f"({getattr(self.config, 'model_type', '?')}): transformers' forward pass of it fails under "
                    f"{self.dtype} autocast ({first}). This CPU runs {self.dtype} products; the model's code is the "
                    "cause, and fails so on a GPU too. Pass dtype='float32'."
                ) from None
            raise ValueError(
                f"dtype={self.dtype!r} cannot run on this CPU ({cpu_model()}; instruction sets: "
                f"{', '.join(cpu_flags()) or 'none reported'}): {first}. "
                "Pass dtype='float32', the fast mode here."
            ) from None

    def _warn_if_slow(self) -> None:
        """A :class:`~bertfeat.exceptions.SlowDtypeWarning`, with the measured rates, where this dtype is slower
        than float32 here."""
        import warnings

        from bertfeat.exceptions import SlowDtypeWarning, user_stacklevel
        from bertfeat.hardware import dtype_rates, slow_dtype_message

        rates = dtype_rates(self.spec.hidden_size, self.ffn_width, ("float32", self.dtype))
        message = slow_dtype_message(self.dtype, rates)
        if message:
            warnings.warn(message, SlowDtypeWarning, stacklevel=user_stacklevel())

    def _check_model_runs(self) -> None:
        """Refuse, saying why, a transformers model that fails on a short probe text (a config transformers cannot
        run: MPNet with fewer than 32 relative-position buckets, BERT with no token type, RoBERTa with no
        pad_token_id), or whose forward pass gives other than the embeddings and one hidden state per layer, each
        of one vector per token: bertfeat reads hidden state k as layer k, and pools it with a mask per token."""
        import torch

        from bertfeat.exceptions import ModelNotAvailableError

        ids = torch.tensor([self._probe_ids()[0]], device=self.device)
        try:
            with torch.inference_mode():
                states = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
        except (RuntimeError, IndexError, TypeError, ValueError) as exc:
            if _is_oom(exc):
                raise
            raise ModelNotAvailableError(
                f"model={self.spec.name!r}: transformers' forward pass of this model fails on a short probe text "
                f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}), so no text can be "
                "embedded with it: its config.json asks for what transformers cannot run with these weights (check it "
                "against the config the model was trained with), or the model needs more than text as input."
            ) from exc
        tokens = ids.shape[1]
        lengths = sorted({int(h.shape[1]) for h in (*states.hidden_states, states.last_hidden_state)})
        if lengths != [tokens]:
            raise ModelNotAvailableError(
                f"model={self.spec.name!r} ({getattr(self.config, 'model_type', '?')}) gives hidden states of "
                f"{', '.join(map(str, lengths))} positions for a probe of {tokens} tokens, so they do not hold one "
                "vector per token of the text (its layers change the sequence's length: a Funnel Transformer and "
                "CANINE shorten it, a Reformer pads it to its attention chunks): bertfeat's pooling (a mask per token) "
                "and layers= cannot read them. bertfeat embeds with encoders that keep one state per token in every "
                "layer."
            )
        want = self.spec.num_layers + 1
        if len(states.hidden_states) != want:
            raise ModelNotAvailableError(
                f"model={self.spec.name!r} gives {len(states.hidden_states)} hidden states for num_hidden_layers="
                f"{self.spec.num_layers} ({want} expected: the embeddings and one per layer), so bertfeat cannot tell "
                "which is layer k (an ALBERT with inner_group_num > 1 gives one per inner layer). bertfeat embeds "
                "with models that give one hidden state per layer."
            )

    @property
    def first_token_sees_text(self) -> bool:
        """Whether the model's first token sees the text after it: False for a causal decoder, whose CLS pooling
        :func:`bertfeat.encode.check_cls_pooling` refuses (every text would get one CLS vector). Found once, where a
        recipe first pools the CLS token, not at every load (two forward passes most recipes never need): True for
        a model the fused CPU pass runs, a bidirectional encoder by construction
        (:func:`bertfeat.architectures.supports`), else probed (:meth:`_first_token_probed`)."""
        if self._first_token_sees_text is None:
            self._first_token_sees_text = self.fast is not None or self._first_token_probed()
        return self._first_token_sees_text

    def _first_token_probed(self) -> bool:
        """Whether the first token's last state differs between two probes that share it and differ in every token
        after it (to float32's rounding): where it does not, it attends to no token after it (a causal decoder). Cut
        to a tiny max_length the probes may be one sequence, which tells nothing."""
        import torch

        probes = [torch.tensor([ids], device=self.device) for ids in self._first_token_probes()]
        with torch.inference_mode():
            states, other = (self.model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
                             for ids in probes)
        first, again = states.last_hidden_state[0, 0].float(), other.last_hidden_state[0, 0].float()
        return torch.equal(*probes) or bool((first - again).abs().max() > 1e-5 * max(1.0, float(first.abs().max())))

    def _padding_changes_outputs(self) -> bool:
        """Whether padding after a sequence changes its real tokens' hidden states in the transformers model, as
        ConvBERT's span convolutions and YOSO's hashed attention let it: the short probe alone against the short
        probe padded to the long one's length, every layer, in float32, to the fast path's load-time bound."""
        import torch

        short, long = self._probe_ids()
        if len(short) >= len(long):
            short, long = long, short
        n = len(short)
        ids = torch.tensor([short + [self.pad_id] * (len(long) - n)], device=self.device)
        mask = torch.ones_like(ids)
        mask[0, n:] = 0
        held = contextlib.ExitStack()
        if self.device.startswith("cuda"):
            from bertfeat import gpu

            held.enter_context(gpu.held_flag("ieee_float32").held())
        with held, torch.inference_mode():
            alone = self.model(input_ids=ids[:, :n], attention_mask=mask[:, :n], output_hidden_states=True)
            padded = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        return not all(torch.allclose(a[0], p[0, :n], atol=1e-4, rtol=1e-4)
                       for a, p in zip(alone.hidden_states, padded.hidden_states))

    def _probe_ids(self) -> list[list[int]]:
        """Two real token sequences of different lengths, to check the fast path against the model."""
        return [self.prefix + w + self.suffix for w in self._probe_content()]

    def _first_token_probes(self) -> list[list[int]]:
        """The longer probe, and another text cut to its length: one length, the same first (special) token, other
        tokens after it (neither reversed nor reordered: a tiny DeBERTa-v2, whose positions are relative, or a model
        without positions, gives its first token nearly the same state for the same tokens in another order)."""
        content = self._probe_content()[1]
        other = self.tokenize(["zebras quietly jumped over seven wooden fences yesterday; nobody saw them again"])[0]
        n = min(len(content), len(other))
        return [self.prefix + words[:n] + self.suffix for words in (content, other)]

    def _probe_content(self) -> list[list[int]]:
        """The probes' content tokens, cut to fit the model: a fine-grained tokenizer makes the longer one some 40
        tokens, more than a small model's position table holds."""
        words = self.tokenize(["a short probe", "a somewhat longer probe sentence, with punctuation and numbers 42"])
        room = max(1, self.spec.max_length - self.n_special)
        return [w[:room] for w in words]
