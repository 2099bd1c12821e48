"""bertfeat: frozen BERT-family text embeddings as features for statistical models.

``import bertfeat`` is light: scikit-learn loads when ``BertEmbedder`` is first named, torch and transformers only
when a model is first needed. (So the command line starts at once, and Ctrl-C while it starts is one line.)
"""

from bertfeat import fork_safe  # noqa: F401 (its fork hook, from the start: a child forked after the
# caller's own torch work runs torch on one thread, bertfeat.hardware.one_thread_in_a_forked_child)
from bertfeat._version import __version__
from bertfeat.exceptions import CacheError, CacheWarning, ModelNotAvailableError, TruncationWarning
from bertfeat.probe import probe  # binds bertfeat.probe to the function, not the module of the same name

__all__ = ["BertEmbedder", "CacheError", "CacheWarning", "ModelNotAvailableError", "TruncationWarning", "probe",
           "__version__"]


def __getattr__(name: str):
    if name == "BertEmbedder":  # its class statement imports scikit-learn (seconds): only when it is asked for
        from bertfeat.embedder import BertEmbedder

        return BertEmbedder
    raise AttributeError(f"module 'bertfeat' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"BertEmbedder"})
