"""Tiny random-weight encoders of every family bertfeat is tested on, each with a tokenizer of its family's layout.

BERT-style families get a WordPiece tokenizer (``[PAD]=0 [UNK] [CLS] [SEP] [MASK]``, ``[CLS] text [SEP]``);
RoBERTa-style ones (RoBERTa, XLM-RoBERTa, CamemBERT, MPNet) a byte-level BPE with RoBERTa's ids
(``<s>=0 <pad>=1 </s>=2``, ``<s> text </s>``), so padding_idx + 1 position offsets and non-zero pad ids are
exercised as real checkpoints have them. Hidden size 32, 3 layers, 4 heads: each builds and runs in well under a
second. Nothing reaches a model hub.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import TINY_SENTENCES

HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS = 32, 3, 4, 37, 64

# model_type -> (tokenizer style, does bertfeat run it through its fused CPU pass?)
FAMILIES = {
    "bert": ("wordpiece", True),
    "roberta": ("bpe", True),
    "xlm-roberta": ("bpe", True),
    "camembert": ("bpe", True),
    "distilbert": ("wordpiece", True),
    "mpnet": ("bpe", True),
    "electra": ("wordpiece", False),
    "albert": ("wordpiece", False),
    "deberta-v2": ("wordpiece", False),
    "modernbert": ("wordpiece", False),
    "convbert": ("wordpiece", False),
    "yoso": ("wordpiece", False),
    "big_bird": ("wordpiece", False),
    # beyond the families above (archs hunt, session 13): each runs as transformers runs it
    "roberta-prelayernorm": ("bpe", False),
    "xlm-roberta-xl": ("bpe", False),
    "ibert": ("bpe", False),
    "longformer": ("bpe", False),
    "ernie": ("wordpiece", False),
    "roformer": ("wordpiece", False),
    "rembert": ("wordpiece", False),
    "mobilebert": ("wordpiece", False),
    "fnet": ("wordpiece", False),
    "xlm": ("wordpiece", False),
    "flaubert": ("wordpiece", False),
}
# Families whose real tokens see the padding beside them (ConvBERT's span convolution, YOSO's hashed attention, ...):
# bertfeat runs each length of a batch alone for them.
PADDING_SEEN = {"convbert", "yoso", "fnet"}  # FNet: a Fourier transform over every position, padding too


def build_tokenizer(path, style: str, corpus: list[str], max_length: int):
    """Train a small tokenizer of ``style`` ("wordpiece", "bpe" (byte-level), "sentencepiece" (unigram with
    Metaspace) or "bpe-no-unk" (a BPE of characters with no unknown token and no byte fallback, so a character it
    never saw is dropped, as in tokenizer.json files of that kind)) on ``corpus`` and save it to ``path``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if style == "wordpiece":
        specials = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=list(specials.values()))
    elif style == "sentencepiece":
        specials = {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"}
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
        tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
        trainer = trainers.UnigramTrainer(vocab_size=300, special_tokens=list(specials.values()), unk_token="<unk>")
    elif style == "bpe-no-unk":
        specials = {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"}
        tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=list(specials.values()))
    else:
        specials = {"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"}
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=list(specials.values()),
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus * 2, trainer)
    cls, sep = specials["cls"], specials["sep"]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, tok.token_to_id(cls)), (sep, tok.token_to_id(sep))],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, model_max_length=max_length, unk_token=specials["unk"], pad_token=specials["pad"],
        cls_token=cls, sep_token=sep, bos_token=cls, eos_token=sep, mask_token=specials["mask"],
    )
    fast.save_pretrained(str(path))
    return fast


def _config(model_type: str, tok):
    import transformers as tf

    ids = dict(pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
    common = dict(vocab_size=len(tok), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  intermediate_size=INTERMEDIATE, max_position_embeddings=POSITIONS, **ids)
    if model_type == "bert":
        return tf.BertConfig(**common)
    if model_type in ("roberta", "xlm-roberta", "camembert"):
        # as the real checkpoints: positions start at padding_idx + 1, one token type
        cls = {"roberta": tf.RobertaConfig, "xlm-roberta": tf.XLMRobertaConfig, "camembert": tf.CamembertConfig}
        return cls[model_type](**{**common, "max_position_embeddings": POSITIONS + 2}, type_vocab_size=1)
    if model_type == "distilbert":
        return tf.DistilBertConfig(vocab_size=len(tok), dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS,
                                   hidden_dim=INTERMEDIATE, max_position_embeddings=POSITIONS,
                                   pad_token_id=tok.pad_token_id)
    if model_type == "mpnet":
        return tf.MPNetConfig(**{**common, "max_position_embeddings": POSITIONS + 2})
    if model_type == "electra":
        return tf.ElectraConfig(**common, embedding_size=16)
    if model_type == "albert":
        return tf.AlbertConfig(**common, embedding_size=16)
    if model_type == "deberta-v2":
        return tf.DebertaV2Config(**common, relative_attention=True, position_buckets=8, max_relative_positions=-1,
                                  pos_att_type=["p2c", "c2p"], position_biased_input=False, type_vocab_size=0)
    if model_type == "modernbert":
        if not hasattr(tf, "ModernBertConfig"):
            pytest.skip(f"ModernBERT is in transformers from 4.48 on, not in {tf.__version__}")
        # a local window shorter than the test texts, so local and global layers both matter
        return tf.ModernBertConfig(**{**common, "intermediate_size": 40}, cls_token_id=tok.cls_token_id,
                                   sep_token_id=tok.sep_token_id, local_attention=8, global_attn_every_n_layers=2)
    if model_type == "convbert":
        return tf.ConvBertConfig(**common, embedding_size=HIDDEN, conv_kernel_size=3)
    if model_type == "yoso":
        return tf.YosoConfig(**common)
    if model_type == "big_bird":
        # block-sparse attention from 36 tokens on (blocks of 4, 2 random blocks), as real checkpoints from 704
        return tf.BigBirdConfig(**common, attention_type="block_sparse", block_size=4, num_random_blocks=2)
    if model_type in ("roberta-prelayernorm", "xlm-roberta-xl", "ibert", "longformer"):
        # RoBERTa's embeddings (positions from padding_idx + 1, one token type); Longformer's local window shorter
        # than the test texts, so the window and its padding to a multiple of it both matter
        window = dict(attention_window=8) if model_type == "longformer" else {}
        return tf.AutoConfig.for_model(model_type, **{**common, "max_position_embeddings": POSITIONS + 2},
                                       type_vocab_size=1, **window)
    if model_type in ("ernie", "roformer", "fnet"):
        return tf.AutoConfig.for_model(model_type, **common)
    if model_type == "rembert":  # embeddings narrower than the layers, projected up
        return tf.RemBertConfig(**common, input_embedding_size=16, output_embedding_size=16)
    if model_type == "mobilebert":  # bottlenecks around each layer, several feed-forward networks
        return tf.MobileBertConfig(**common, embedding_size=16, true_hidden_size=16, intra_bottleneck_size=16,
                                   num_feedforward_networks=2)
    if model_type in ("xlm", "flaubert"):  # their own names for the sizes; the pad id their lengths are counted by
        return tf.AutoConfig.for_model(model_type, vocab_size=len(tok), emb_dim=HIDDEN, n_layers=LAYERS,
                                       n_heads=HEADS, max_position_embeddings=POSITIONS, pad_index=tok.pad_token_id,
                                       **ids)
    if model_type == "deberta":  # DeBERTa (v1): relative positions, as its checkpoints
        return tf.DebertaConfig(**common, relative_attention=True, max_relative_positions=-1,
                                pos_att_type=["p2c", "c2p"], position_biased_input=False)
    if model_type == "xmod":  # X-MOD: RoBERTa's embeddings, a language adapter in every layer
        return tf.XmodConfig(**{**common, "max_position_embeddings": POSITIONS + 2}, type_vocab_size=1,
                             languages=["en_XX", "de_DE"], default_language="en_XX")
    raise ValueError(f"no tiny config for model_type={model_type!r}")


def build_tiny_encoder(path, model_type: str, corpus: list[str] | None = None, seed: int = 0,
                       style: str | None = None, **config) -> str:
    """A tiny random-weight ``model_type`` encoder and its tokenizer (``style``, by default the family's in
    :data:`FAMILIES`), saved to ``path`` (safetensors); ``config`` overrides attributes of the family's tiny config
    (``max_position_embeddings=16``, ...)."""
    import torch
    from transformers import AutoModel

    style = style or FAMILIES[model_type][0]
    tok = build_tokenizer(path, style, list(corpus or []) + TINY_SENTENCES, POSITIONS)
    model_config = _config(model_type, tok)
    for key, value in config.items():
        setattr(model_config, key, value)
    torch.manual_seed(seed)
    model = AutoModel.from_config(model_config)
    # random init leaves tiny layer-norm and bias spreads; widen them so every weight shapes the output
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif "relative_attention_bias" in name:  # MPNet's per-head bias of each relative distance
                p.copy_(0.5 * torch.randn_like(p))
    model.save_pretrained(str(path), safe_serialization=True)
    return str(Path(path))


def build_tiny_decoder(path, model_type: str = "llama", corpus: list[str] | None = None, seed: int = 0) -> str:
    """A tiny random-weight causal decoder (Llama's layout unless ``model_type`` says otherwise) with the tokenizer
    decoder embedders save: a BOS token before the text and nothing after it, no pad token, left padding."""
    import torch
    from tokenizers import processors
    from transformers import AutoConfig, AutoModel, PreTrainedTokenizerFast

    bpe = build_tokenizer(path, "bpe", list(corpus or []) + TINY_SENTENCES, POSITIONS).backend_tokenizer
    bos = bpe.token_to_id("<s>")
    bpe.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", bos)])
    for f in Path(path).iterdir():  # the encoder tokenizer's files: replaced by the decoder's
        f.unlink()
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, model_max_length=POSITIONS, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>", padding_side="left")
    tok.save_pretrained(str(path))
    config = AutoConfig.for_model(model_type, vocab_size=len(tok), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                                  num_attention_heads=HEADS, num_key_value_heads=2, intermediate_size=INTERMEDIATE,
                                  max_position_embeddings=POSITIONS, bos_token_id=bos, eos_token_id=tok.eos_token_id)
    torch.manual_seed(seed)
    AutoModel.from_config(config).save_pretrained(str(path), safe_serialization=True)
    return str(Path(path))
