"""bertfeat: frozen BERT-family text embeddings as features for statistical models.

``import bertfeat`` is light: torch and transformers load only when a model is first needed.
"""

from bertfeat._version import __version__
from bertfeat.embedder import BertEmbedder
from bertfeat.exceptions import CacheError, CacheWarning, ModelNotAvailableError, TruncationWarning


def probe(texts, y, **kwargs):
    """Score every pooling x layer choice with one embedding pass; see :func:`bertfeat.probe.probe`."""
    from bertfeat.probe import probe as _probe

    return _probe(texts, y, **kwargs)


__all__ = ["BertEmbedder", "CacheError", "CacheWarning", "ModelNotAvailableError", "TruncationWarning", "probe",
           "__version__"]
