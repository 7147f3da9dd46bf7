"""Compiled fast paths (C++ on CPU) of the library's attention kernels, with their fallbacks.

The C++ sources live in ``nn/csrc/``. They are compiled on first use with
``torch.utils.cpp_extension.load`` (a C++ compiler and ``ninja`` are needed: ``pip install
'graph-transformers[kernels]'`` brings ``ninja``; the build takes
about a minute once and is cached under ``$TORCH_EXTENSIONS_DIR``, default
``~/.cache/torch_extensions``). Where they cannot be built the plain PyTorch path runs instead,
with one warning; the two paths agree to float rounding (``tests/nn/test_fused.py`` holds them to
1e-10 in float64, forward and gradients).

The environment variable ``GRAPH_TRANSFORMERS_KERNELS`` chooses:

* ``auto`` (default): build / load the kernels on first use; fall back with a warning on failure;
* ``off``: never use them (the plain PyTorch path everywhere);
* ``require``: raise :class:`FusedKernelError` when they cannot be built (benchmarks, tests).

Kernels:

* :func:`fused_sparse_attention` — GT's neighbourhood attention (:func:`~graph_transformers.nn.
  sparse_attention`): scores, clamp, exp, segment softmax and aggregation in one pass over each
  node's incoming edges, and a matching backward; float32 / float64 CPU tensors.
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
import warnings
from pathlib import Path

import torch
from torch import Tensor

log = logging.getLogger(__name__)

CSRC = Path(__file__).resolve().parent / "csrc"
#: the environment variable that chooses (see the module docstring)
ENV = "GRAPH_TRANSFORMERS_KERNELS"
_MODES = ("auto", "off", "require")
_lock = threading.Lock()
_state: dict[str, object] = {}  # "ops": the loaded namespace, or "error": why it is unavailable


class FusedKernelError(RuntimeError):
    """The compiled kernels were required (``GRAPH_TRANSFORMERS_KERNELS=require``) but could not
    be built or loaded."""


def kernel_mode() -> str:
    """The value of ``GRAPH_TRANSFORMERS_KERNELS`` (``auto`` when unset).

    Raises:
        ValueError: for a value other than ``auto``, ``off``, ``require``.
    """
    mode = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if mode not in _MODES:
        raise ValueError(f"{ENV} must be one of {', '.join(_MODES)}, got {mode!r}")
    return mode


#: vector instructions the kernels are compiled for, by the CPU capability torch detects (the
#: capability is part of the extension's name, so each build is cached apart)
_ISA_FLAGS = {"AVX512": ["-mavx2", "-mfma", "-mavx512f", "-mavx512dq", "-mavx512bw",
                         "-mavx512vl"],
              "AVX2": ["-mavx2", "-mfma"]}


def _ninja_on_path() -> None:
    """Puts the ``ninja`` of the pip wheel (the ``kernels`` extra) on ``PATH`` when no other
    ``ninja`` is there: ``torch.utils.cpp_extension`` runs it by name."""
    if shutil.which("ninja"):
        return
    try:
        import ninja
    except ImportError:
        return
    os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")


def _is_cached(name: str, source: Path) -> bool:
    """Whether ``torch.utils.cpp_extension`` finds the extension ``name`` built from ``source``
    already (its library in the build folder, newer than the source), so that loading it builds
    nothing; ``False`` when that cannot be told."""
    try:
        from torch.utils.cpp_extension import _get_build_directory
        lib = Path(_get_build_directory(name, verbose=False)) / f"{name}.so"
        return lib.is_file() and lib.stat().st_mtime >= source.stat().st_mtime
    except Exception:  # noqa: BLE001 - a private helper of torch: any failure means "unknown"
        return False


def _build():
    from torch.utils.cpp_extension import load

    _ninja_on_path()
    capability = torch.backends.cpu.get_cpu_capability()
    isa = _ISA_FLAGS.get(capability, [])
    name = "graph_transformers_kernels" + (f"_{capability.lower()}" if isa else "")
    source = CSRC / "sparse_attention.cpp"
    if _is_cached(name, source):  # every run after the first: nothing to say
        log.debug("loading the fused CPU kernels (%s) built before", capability)
    else:
        log.info("building the fused CPU kernels (%s; about a minute, once: cached by "
                 "torch.utils.cpp_extension)", capability)
    # OpenMP through at::parallel_for: the library resolves to the libgomp torch has loaded
    load(name=name, sources=[str(source)],
         extra_cflags=["-O3", "-fopenmp", *isa], extra_ldflags=["-fopenmp"],
         is_python_module=False, verbose=False)
    _register_fakes()
    return torch.ops.graph_transformers


def _register_fakes() -> None:
    """Shape-only ("fake") versions of the three ops, so that ``torch.compile`` traces them into
    its graph as opaque kernels instead of breaking the graph (or, as before, taking the plain
    PyTorch path, which inductor's CPU code runs about 5x slower than the kernels; figures in
    ``docs/speed.md``). The shapes are those the C++ functions allocate."""
    lib = "graph_transformers::"

    @torch.library.register_fake(lib + "csr_index")
    def _(index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
        return index.new_empty(index.shape[0]), index.new_empty(num_nodes + 1)

    @torch.library.register_fake(lib + "sparse_attention_forward")
    def _(q, k, v, gate, src, perm, rowptr, scale, clamp, return_scores):
        n, h, d = q.shape
        e = src.shape[0]
        return (q.new_empty(n, h, d), q.new_empty((e, h, d) if return_scores else (0,)),
                q.new_empty(e, h), q.new_empty(e, h))

    @torch.library.register_fake(lib + "sparse_attention_backward")
    def _(grad_out, grad_per_dim, q, k, v, gate, src, perm, rowptr, dst, perm_src, rowptr_src,
          out, scores, weights, scale, clamp):
        n, h, d = q.shape
        dg = q.new_empty((src.shape[0], h, d) if gate is not None else (0,))
        return q.new_empty(n, h, d), q.new_empty(n, h, d), q.new_empty(n, h, d), dg


def load_kernels():
    """The compiled ops (``torch.ops.graph_transformers``), building them on first call; ``None``
    when ``GRAPH_TRANSFORMERS_KERNELS=off`` or the build failed (``auto``, warned once).

    Raises:
        FusedKernelError: when the mode is ``require`` and the kernels cannot be built.
    """
    mode = kernel_mode()
    if mode == "off":
        return None
    with _lock:
        if "ops" not in _state and "error" not in _state:
            try:
                _state["ops"] = _build()
            except Exception as err:  # no compiler, no ninja, a failed compile: all fall back
                _state["error"] = f"{type(err).__name__}: {str(err).strip().splitlines()[-1:]}"
                if mode == "auto":
                    warnings.warn(f"the fused CPU kernels could not be built ({_state['error']}); "
                                  f"using the plain PyTorch path (set {ENV}=off to silence)",
                                  RuntimeWarning, stacklevel=3)
    if "error" in _state:
        if mode == "require":
            raise FusedKernelError(f"{ENV}=require but the fused kernels are unavailable: "
                                   f"{_state['error']}")
        return None
    return _state["ops"]


def _loaded_kernels():
    """:func:`load_kernels`, or while ``torch.compile`` traces only the kernels loaded before
    (the loader's lock and build cannot be traced)."""
    return _state.get("ops") if torch.compiler.is_compiling() else load_kernels()


def kernels_available() -> bool:
    """Whether the compiled kernels are in use (building them if needed); see
    :func:`load_kernels`."""
    return load_kernels() is not None


def csr_index(index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """Edges grouped by the node ids ``index [num_edges]`` (targets or sources), by the compiled
    counting sort: ``(perm [num_edges], rowptr [num_nodes + 1])`` with
    ``perm[rowptr[i]:rowptr[i+1]]`` the ids of the edges at node ``i`` in their original order
    (stable, so per-node sums run in the order of ``index_add_``).

    Raises:
        RuntimeError: for ids outside ``[0, num_nodes)``.
    """
    return torch.ops.graph_transformers.csr_index(index, num_nodes)


class _SparseAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, gate, edge_index, scale, clamp, return_scores):
        src, dst = edge_index[0], edge_index[1]
        perm, rowptr = csr_index(dst, q.size(0))        # target side: forward and dq, dg
        perm_src, rowptr_src = csr_index(src, q.size(0))  # source side: dk, dv
        out, per_dim, scores, weights = torch.ops.graph_transformers.sparse_attention_forward(
            q, k, v, gate, src, perm, rowptr, scale, clamp, return_scores)
        ctx.save_for_backward(q, k, v, gate, src, dst, perm, rowptr, perm_src, rowptr_src, out,
                              scores, weights)
        ctx.scale, ctx.clamp, ctx.return_scores = scale, clamp, return_scores
        if not return_scores:
            ctx.mark_non_differentiable(per_dim)
        return out, per_dim

    @staticmethod
    def backward(ctx, grad_out, grad_per_dim):
        (q, k, v, gate, src, dst, perm, rowptr, perm_src, rowptr_src, out, scores,
         weights) = ctx.saved_tensors
        if grad_out is None:
            grad_out = torch.zeros_like(out)
        if not ctx.return_scores:
            grad_per_dim = None
        dq, dk, dv, dg = torch.ops.graph_transformers.sparse_attention_backward(
            grad_out, grad_per_dim, q, k, v, gate, src, perm, rowptr, dst, perm_src, rowptr_src,
            out, scores, weights, ctx.scale, ctx.clamp)
        return dq, dk, dv, (dg if gate is not None else None), None, None, None, None


def fused_sparse_attention(q: Tensor, k: Tensor, v: Tensor, edge_index: Tensor, scale: float,
                           edge_gate: Tensor | None = None, clamp: float = 5.0,
                           return_scores: bool = False) -> tuple[Tensor, Tensor | None]:
    """GT's neighbourhood attention, fused (the equations of
    :func:`~graph_transformers.nn.attention.sparse_attention`, without the attention weights).

    Args:
        q: queries ``[num_nodes, num_heads, head_dim]``, a float32 / float64 CPU tensor (rows
            may be strided, as the views of a fused QKV projection).
        k: keys, as ``q``.
        v: values, as ``q``.
        edge_index: ``[2, num_edges]``, messages ``edge_index[0] → edge_index[1]``.
        scale: score scale (``1/sqrt(head_dim)``).
        edge_gate: optional ``[num_edges, num_heads, head_dim]`` multiplier of the scores.
        clamp: scores are clamped to ``[-clamp, clamp]`` before ``exp``.
        return_scores: also return the per-dimension scores ``[num_edges, num_heads, head_dim]``.

    Returns:
        ``(out [num_nodes, num_heads, head_dim], per_dim_scores or None)``.

    Raises:
        FusedKernelError / RuntimeError: when the kernels are unavailable, or (from the kernel)
            for mismatched shapes, dtypes or node ids outside ``[0, num_nodes)``.
    """
    if _loaded_kernels() is None:
        raise FusedKernelError(f"the fused kernels are unavailable ({ENV}={kernel_mode()}): "
                               "use graph_transformers.nn.attention.sparse_attention")
    out, per_dim = _SparseAttention.apply(q, k, v, edge_gate, edge_index, float(scale),
                                          float(clamp), return_scores)
    return out, (per_dim if return_scores else None)


def use_fused_sparse_attention(q: Tensor, return_weights: bool) -> bool:
    """Whether :func:`~graph_transformers.nn.attention.sparse_attention` takes the fused path for
    these inputs: CPU, float32 / float64, no attention weights asked for, and kernels available.
    While ``torch.compile`` traces, only kernels loaded before count (:func:`load_kernels`; the
    trainer loads them before a CPU run's first compiled step): the loader's lock and build
    cannot be traced, and without them the plain path is the graph's."""
    if return_weights or q.device.type != "cpu" or q.dtype not in (torch.float32, torch.float64):
        return False
    return _loaded_kernels() is not None


__all__ = ["ENV", "FusedKernelError", "csr_index", "fused_sparse_attention",
           "kernel_mode", "kernels_available", "load_kernels", "use_fused_sparse_attention"]
