"""bertfeat: frozen BERT-family text embeddings as features for statistical models.

``import bertfeat`` is light: torch and transformers load only when a model is first needed.
"""

from bertfeat._version import __version__
from bertfeat.embedder import BertEmbedder
from bertfeat.exceptions import CacheError, ModelNotAvailableError, TruncationWarning

__all__ = ["BertEmbedder", "CacheError", "ModelNotAvailableError", "TruncationWarning", "__version__"]
