"""graph-transformers: transformer networks on graphs (GT, EGT, GRPE, GPS) on PyTorch Geometric."""
__version__ = "0.1.0"
