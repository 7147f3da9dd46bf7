"""LapPE's ``basis="canonical"``: the repeated eigenvalues of CSL's circulant graphs are found as
their closed-form spectrum says, and the encoding is the same whatever orthonormal basis of each
eigenspace the eigensolver returns (another LAPACK is simulated by rotating the solver's output
within each eigenspace); spectra without repeated eigenvalues keep the plain encoding."""
from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch

import graph_transformers.encodings.lappe as lappe
from graph_transformers.data.registry import build_pre_transform
from graph_transformers.datasets.synthetic.csl import (CSL_NUM_NODES, CSL_SKIP_LENGTHS, csl_graph,
                                                       generate_csl)
from graph_transformers.encodings.lappe import (AddLaplacianPE, canonical_eigenbasis,
                                                eigenvalue_groups, laplacian_pe,
                                                normalized_laplacian)
from graph_transformers.training.config import ConfigError, build_config, load_config
from graph_transformers.training.model_sections import EncodingsConfig

REPO = Path(__file__).resolve().parents[2]
N = CSL_NUM_NODES


def _edge_index(g: nx.Graph) -> torch.Tensor:
    ei = torch.tensor(list(g.edges), dtype=torch.long).t()
    return torch.cat([ei, ei.flip(0)], dim=1)


def _csl_spectrum(n: int, skip: int) -> np.ndarray:
    """Closed form: CSL is 4-regular, so ``D^-1/2 A D^-1/2 = A / 4``; ``A`` is the circulant with
    connection set ``{±1, ±skip}``, whose eigenvalues are ``sum_c ω^(j c) = 2 cos(2πj/n) +
    2 cos(2πj·skip/n)`` (``j = 0 … n-1``, eigenvector ``ω^(j x)``), hence ``λ_j = 1 - (cos(2πj/n)
    + cos(2πj·skip/n)) / 2``."""
    j = np.arange(n)
    return 1.0 - (np.cos(2 * np.pi * j / n) + np.cos(2 * np.pi * j * skip / n)) / 2.0


def _orbit_multiplicities(n: int, skip: int) -> list[int]:
    """Multiplicities by number theory (``n`` prime): ``λ_j = λ_(a j)`` when the multiplier ``a``
    maps the connection set ``{±1, ±skip}`` to itself: ``a = -1`` always; ``a = ±skip`` too when
    ``skip² ≡ ±1 (mod n)``. The non-trivial eigenvalues are the orbits of ``j = 1 … n-1`` under
    that group, each orbit one eigenvalue (checked against the closed form below)."""
    mults = [n - 1]
    if pow(skip, 2, n) in (1, n - 1):
        mults += [skip % n, (-skip) % n]
    seen: set[int] = set()
    sizes = []
    for j in range(1, n):
        if j in seen:
            continue
        orbit = {j}
        while True:  # close the orbit under the multipliers
            grown = orbit | {(a * x) % n for a in mults for x in orbit}
            if grown == orbit:
                break
            orbit = grown
        seen |= orbit
        sizes.append(len(orbit))
    return sizes


def _rotating_solver(monkeypatch, seed: int, noise: float = 0.0) -> None:
    """Replace the eigensolver by one returning ``vecs[:, group] @ Q`` for a Haar-random orthogonal
    ``Q`` (rotations and reflections) per repeated eigenvalue, ``±1`` per simple one: another
    valid output, as another LAPACK build or thread count may give; ``noise`` adds that much
    Gaussian noise to the vectors (another rounding)."""
    solve = lappe.smallest_eigenpairs
    rng = np.random.default_rng(seed)

    def rotated(lap, count, tol=lappe.EIGSH_TOL):
        vals, vecs = solve(lap, count, tol)
        vecs = vecs.copy()
        for group in eigenvalue_groups(vals):
            q, r = np.linalg.qr(rng.standard_normal((group.size, group.size)))
            vecs[:, group] = vecs[:, group] @ (q * np.sign(np.diag(r)))
        return vals, vecs + noise * rng.standard_normal(vecs.shape)

    monkeypatch.setattr(lappe, "smallest_eigenpairs", rotated)


@pytest.mark.parametrize("skip", CSL_SKIP_LENGTHS)
def test_csl_repeated_eigenvalues_are_the_circulant_spectrum(skip):
    closed = np.sort(_csl_spectrum(N, skip))
    vals, _ = lappe.smallest_eigenpairs(normalized_laplacian(csl_graph(N, skip), N), N)
    np.testing.assert_allclose(vals, closed, atol=1e-12)
    groups = eigenvalue_groups(vals)
    assert [g.size for g in groups] == [1] + sorted(_orbit_multiplicities(N, skip))
    # each group is one closed-form value, distinct groups clearly apart
    centres = np.array([closed[g].mean() for g in groups])
    assert all(np.ptp(closed[g]) < 1e-12 for g in groups)
    assert np.diff(centres).min() > 1e-4
    # 9² = 81 ≡ -1 (mod 41): the skip-9 class has 4-fold eigenvalues, the other classes 2-fold
    assert {g.size for g in groups[1:]} == ({4} if skip == 9 else {2})


def test_groups_on_a_permuted_csl_graph_and_bad_input():
    graph = generate_csl(0)[5 * 15]  # class 5 (skip 9), nodes randomly relabelled
    vals, _ = lappe.smallest_eigenpairs(normalized_laplacian(graph.edge_index, N), N)
    assert [g.size for g in eigenvalue_groups(vals)] == [1] + [4] * 10
    assert [g.tolist() for g in eigenvalue_groups(np.array([0.0, 0.5, 0.5 + 1e-9, 1.0]))] == [
        [0], [1, 2], [3]]
    with pytest.raises(ValueError, match="ascending"):
        eigenvalue_groups(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="span 1 dimensions, not 2"):
        canonical_eigenbasis(np.ones((5, 2)) / 5 ** 0.5)


@pytest.mark.parametrize("k", [3, 20])
@pytest.mark.parametrize("seed", [0, 1])
def test_canonical_encoding_ignores_the_solvers_basis(monkeypatch, k, seed):
    graphs = [generate_csl(0)[c * 15 + 3] for c in range(len(CSL_SKIP_LENGTHS))]
    plain = [laplacian_pe(g.edge_index, N, k) for g in graphs]
    canonical = [laplacian_pe(g.edge_index, N, k, basis="canonical") for g in graphs]
    _rotating_solver(monkeypatch, seed)
    for g, before, canon in zip(graphs, plain, canonical):
        # the simulated other LAPACK does change the plain encoding (the issue) …
        assert (laplacian_pe(g.edge_index, N, k) - before).abs().max() > 0.05
        # … not the canonical one (k = 3 cuts a 2- or 4-fold eigenvalue: still the same)
        again = laplacian_pe(g.edge_index, N, k, basis="canonical")
        torch.testing.assert_close(again, canon, atol=1e-6, rtol=0)


def test_canonical_encoding_is_the_same_from_arpack(monkeypatch):
    graph = generate_csl(0)[2 * 15]
    dense = laplacian_pe(graph.edge_index, N, 20, basis="canonical")
    monkeypatch.setattr(lappe, "DENSE_EIGEN_MAX_NODES", 0)  # ARPACK instead of LAPACK
    arpack = laplacian_pe(graph.edge_index, N, 20, basis="canonical")
    torch.testing.assert_close(arpack, dense, atol=1e-6, rtol=0)


def test_canonical_basis_is_gram_schmidt_of_the_projected_unit_vectors():
    """Naive reference: ``P e_0, P e_1, …`` (``P`` the eigenspace's projector) orthonormalized
    by classical Gram-Schmidt; the result is an orthonormal eigenbasis of each eigenspace."""
    graph = generate_csl(0)[5 * 15 + 1]
    lap = normalized_laplacian(graph.edge_index, N).toarray()
    vals, vecs = np.linalg.eigh(lap)
    pe = laplacian_pe(graph.edge_index, N, 20, basis="canonical").double().numpy()
    col = 0
    for group in eigenvalue_groups(vals)[1:]:
        if col >= 20:
            break
        proj = vecs[:, group] @ vecs[:, group].T
        basis = []
        for i in range(group.size):  # the first nodes are pivots on this graph
            v = proj[:, i].copy()
            for b in basis:
                v -= (b @ proj[:, i]) * b
            basis.append(v / np.linalg.norm(v))
        ref = np.stack(basis, axis=1)
        np.testing.assert_allclose(canonical_eigenbasis(vecs[:, group]), ref, atol=1e-10)
        np.testing.assert_allclose(pe[:, col:col + group.size], ref, atol=1e-6)
        np.testing.assert_allclose(lap @ ref, vals[group].mean() * ref, atol=1e-10)
        np.testing.assert_allclose(ref.T @ ref, np.eye(group.size), atol=1e-10)
        assert all(ref[i, c] == pytest.approx(0, abs=1e-12) for c in range(group.size)
                   for i in range(c))  # b_c vanishes on the earlier pivots
        # … and the encoding holds those zeros as zeros, not as rounding noise of either solver
        assert all(pe[i, col + c] == 0.0 for c in range(group.size) for i in range(c))
        col += group.size
    assert col == 20


def test_simple_spectrum_keeps_the_plain_encoding():
    g = nx.gnm_random_graph(30, 70, seed=3)
    assert nx.is_connected(g)
    ei = _edge_index(g)
    vals = np.linalg.eigvalsh(normalized_laplacian(ei, 30).toarray())
    assert np.diff(vals).min() > 1e-3  # no repeated eigenvalue
    torch.testing.assert_close(laplacian_pe(ei, 30, 12, basis="canonical"),
                               laplacian_pe(ei, 30, 12), atol=1e-7, rtol=0)


def test_simple_eigenvalue_sign_ties_are_broken_by_node_order(monkeypatch):
    """A path's eigenvectors are symmetric or antisymmetric (``|v_i| = |v_(n-1-i)|``): which of two
    tied entries is "largest" is the rounding's choice; the canonical sign makes the lowest
    node index of the tied entries positive, also under flipped and re-rounded solver output."""
    n = 9
    ei = _edge_index(nx.path_graph(n))
    pe = laplacian_pe(ei, n, n - 1, basis="canonical").double().numpy()
    for c in range(n - 1):
        top = np.abs(pe[:, c]).max()
        first = np.flatnonzero(np.abs(pe[:, c]) >= top * (1 - 1e-4))[0]
        assert pe[first, c] > 0
    _rotating_solver(monkeypatch, seed=4, noise=1e-13)
    np.testing.assert_allclose(laplacian_pe(ei, n, n - 1, basis="canonical").numpy(), pe,
                               atol=1e-6)


def test_arpack_asks_for_more_until_no_repeated_eigenvalue_is_cut(monkeypatch):
    """K_12 plus five K_2: eigenvalue 12/11 eleven times; ARPACK's first count (null space 6 +
    k 3 + 8 = 17) ends inside it, so the canonical path asks for more (21 = n - 1)."""
    g = nx.disjoint_union_all([nx.complete_graph(12)] + [nx.complete_graph(2)] * 5)
    ei, n = _edge_index(g), g.number_of_nodes()
    dense = laplacian_pe(ei, n, 3, basis="canonical")
    solve, counts = lappe.smallest_eigenpairs, []

    def spy(lap, count, tol=lappe.EIGSH_TOL):
        counts.append(count)
        return solve(lap, count, tol)

    monkeypatch.setattr(lappe, "smallest_eigenpairs", spy)
    monkeypatch.setattr(lappe, "DENSE_EIGEN_MAX_NODES", 10)
    torch.testing.assert_close(laplacian_pe(ei, n, 3, basis="canonical"), dense, atol=1e-6,
                               rtol=0)
    assert counts == [17, 21]
    # a star: its 1-eigenvalue fills the spectrum up to the top ARPACK cannot reach
    star = _edge_index(nx.star_graph(30))
    torch.testing.assert_close(laplacian_pe(star, 31, 2, basis="canonical"),
                               _dense(monkeypatch, star, 31, 2), atol=1e-6, rtol=0)
    monkeypatch.setattr(lappe, "DENSE_EIGEN_MAX_NODES", 5)
    with pytest.raises(ValueError, match="repeats past the 30 ARPACK can return"):
        laplacian_pe(star, 31, 2, basis="canonical")


def _dense(monkeypatch, ei, n, k):
    with monkeypatch.context() as m:
        m.setattr(lappe, "DENSE_EIGEN_MAX_NODES", 2048)
        return laplacian_pe(ei, n, k, basis="canonical")


def test_basis_option_in_the_config_the_cache_key_and_the_csl_configs():
    assert repr(build_pre_transform(EncodingsConfig(lap_pe={"k": 4}))) == \
        "AddLaplacianPE(k=4, attr_name='lap_pe')"  # the solver basis keeps its caches' names
    assert repr(build_pre_transform(EncodingsConfig(lap_pe={"k": 4, "basis": "canonical"}))) \
        == "AddLaplacianPE(k=4, basis='canonical', attr_name='lap_pe')"
    with pytest.raises(ConfigError, match="basis"):
        build_config({"encodings": {"lap_pe": {"basis": "qr"}}})
    with pytest.raises(ValueError, match="LapPE basis must be one of"):
        laplacian_pe(csl_graph(N, 2), N, 4, basis="qr")
    with pytest.raises(ValueError, match="LapPE basis must be one of"):
        AddLaplacianPE(4, basis="qr")
    # the shipped CSL configs use the canonical basis since benchmarks/csl_lapack.py showed their
    # result independent of the eigensolver's basis (docs/encodings.md)
    for path in (REPO / "src/graph_transformers/configs/csl_gt.yaml", REPO / "configs/csl/gt.yaml"):
        assert load_config(path).encodings.lap_pe.basis == "canonical"
    canon = build_config({"encodings": {"lap_pe": {"k": 4}}}, ["encodings.lap_pe.basis=canonical"])
    assert canon.encodings.lap_pe.basis == "canonical"
    # the transform writes the canonical encoding
    data = AddLaplacianPE(5, basis="canonical")(generate_csl(0)[0])
    torch.testing.assert_close(data.lap_pe, laplacian_pe(data.edge_index, N, 5, "canonical"))
    assert math.isclose(float(data.lap_pe[:, 0].norm()), 1.0, abs_tol=1e-6)
