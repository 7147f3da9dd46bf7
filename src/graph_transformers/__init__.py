"""graph-transformers: transformer networks on graphs (GT, EGT, GRPE, GPS) on PyTorch Geometric."""
__version__ = "0.1.0"

__all__ = ["train"]


def __getattr__(name: str):
    # the training stack (Lightning, the data registry) loads on first use, not on import
    if name == "train":
        from .api import train
        return train
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
