"""bertfeat: frozen BERT-family text embeddings as features for statistical models.

``import bertfeat`` is light: torch and transformers load only when a model is first needed.
"""

from bertfeat._version import __version__
from bertfeat.embedder import BertEmbedder
from bertfeat.exceptions import CacheError, CacheWarning, ModelNotAvailableError, TruncationWarning
from bertfeat.probe import probe  # binds bertfeat.probe to the function, not the module of the same name

__all__ = ["BertEmbedder", "CacheError", "CacheWarning", "ModelNotAvailableError", "TruncationWarning", "probe",
           "__version__"]
