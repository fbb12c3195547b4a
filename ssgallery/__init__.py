"""ssgallery: compress biometric face galleries into super-sparse virtual prototypes."""

__version__ = "0.1.0"

# The estimators pull in scikit-learn: export them lazily so that `import ssgallery`
# (and the verify path) stays light.
_LAZY = {
    "SuperSparseRegressor": "ssgallery.learn.learner",
    "SuperSparseDistiller": "ssgallery.learn.supersparse",
    "select_n_prototypes": "ssgallery.learn.mselect",
}

__all__ = ["SuperSparseDistiller", "SuperSparseRegressor", "__version__", "select_n_prototypes"]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ssgallery' has no attribute {name!r}")
