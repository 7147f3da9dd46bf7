"""ZINC-12k's raw files (``docs/datasets.md``, "Raw files"): the exact val / test splits
(``zinc_subset_{val,test}.npz``, or the benchmark's ``molecules/{split}.pickle`` +
``{split}.index``), the exact train split when the benchmark's pickle is there (local or
downloaded with :func:`download_zinc`), else the **reconstructed** train split: 10,000 molecules
sampled with a fixed seed (:data:`RECONSTRUCTED_TRAIN_SEED`) from the ZINC-full validation
SMILES (JT-VAE ``valid.txt``), excluding the val subset and any molecule equal to a val/test
subset molecule, featurized and labelled by
:mod:`graph_transformers.datasets.molecules.zinc_chemistry` (:func:`load_split`,
:func:`load_zinc_graphs`). The dataset is :mod:`graph_transformers.datasets.molecules.zinc`.
"""
from __future__ import annotations

import gzip
import http.client
import logging
import os
import pickle
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ...data.cache import DATA_ENV, DataNotFoundError, check_sha256, sha256_of
from ...data.download import OFFLINE_ENV, fetch_url, offline
from ...data.generated import SPLITS, check_split
from .zinc_chemistry import (largest_ring_bond_graph, largest_ring_jtvae, mol_to_zinc_graph,
                             parse_molecule, penalized_logp_of_mol)

__all__ = ["NUM_TRAIN", "RECONSTRUCTED_TRAIN_SEED", "ZINC_INDEX_URL", "ZINC_URL",
           "download_zinc", "find_file", "load_split", "load_zinc_graphs", "zinc_dir"]

log = logging.getLogger(__name__)

#: Seed of ``numpy.random.default_rng`` for the reconstructed train split.
RECONSTRUCTED_TRAIN_SEED = 0
#: Size of the benchmark's train split.
NUM_TRAIN = 10_000

#: The benchmark's ``molecules.zip`` (ZINC-full pickles), as used by PyG's ``datasets.ZINC``.
ZINC_URL = "https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1"
#: The subset indices (benchmarking-gnns repository), as used by PyG's ``datasets.ZINC``.
ZINC_INDEX_URL = (
    "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/molecules/"
    "{}.index"
)
#: Set to ``1`` to forbid any download attempt (same as ``download=False``).



# sha256 of the raw files as docs/datasets.md lists them (the .index files are verbatim copies
# of benchmarking-gnns data/molecules/*.index, so the downloaded ones must match too).
_SHA256 = {
    "train.index": "575d6acd72ac207a95947e2bdd16411ef6fc3faa88c2f55a2c496ea43022a6d8",
    "val.index": "fe48c38157f0d38e7fc441903a143392eda080511a79e8fb8f60f5c1b0a9c164",
    "test.index": "6aa50d98976044fb36089afef5b4c991b429ca1c8e009d33a0319e42a2d9b525",
    "zinc_subset_val.npz": "112e728dbb0f6ce7bb82bd40f215e5acfec84f731484c5fc7d59083b1e6c6815",
    "zinc_subset_test.npz": "7b9dfc5c6ddc6a26e6b7bedb22169647bd1ecb4feef7fa7445236ccfa3b0d647",
    "jtvae_zinc_valid.txt.gz": "f38fd990587108d5d295487855df889897fcbd1f653f4a67a87c4e21bc7ce175",
    "jtvae_zinc_test.txt.gz": "12df97094b8fa4e99e561dd6fe4462e000aaab5ba61d5294ed7795e43f81ed93",
}
# Members of molecules.zip. Its sha256 is not known here (the archive could not be obtained), so
# download_zinc checks its structure instead of a checksum.
_ZIP_MEMBERS = ("train.pickle", "val.pickle", "test.pickle")



def zinc_dir(data_dir: str | os.PathLike) -> Path:
    """``data_dir/ZINC`` if it exists, else ``data_dir`` itself when it holds ZINC files."""
    d = Path(data_dir).expanduser()
    if (d / "ZINC").is_dir():
        return d / "ZINC"
    if any((d / n).exists() for n in ("val.index", "molecules", "zinc_subset_val.npz")):
        return d
    return d / "ZINC"


def find_file(dirs: Sequence[Path], *names: str) -> Path | None:
    """First existing ``dir/name`` or ``dir/molecules/name`` (dirs in order, then names)."""
    for d in dirs:
        for name in names:
            for p in (d / name, d / "molecules" / name):
                if p.is_file():
                    return p
    return None


def _check_sha(path: Path) -> None:
    check_sha256(path, _SHA256.get(path.name), "ZINC")


def _read_index(path: Path) -> list[int]:
    _check_sha(path)
    return [int(t) for t in path.read_text().strip().split(",")]


def _read_smiles(path: Path) -> list[str]:
    _check_sha(path)
    with gzip.open(path, "rt") as f:
        return f.read().split()


def _graphs_from_npz(path: Path) -> list[Data]:
    _check_sha(path)
    z = np.load(path)
    x = torch.from_numpy(z["x"].astype(np.int64))
    ei = torch.from_numpy(z["edge_index"].astype(np.int64))
    ea = torch.from_numpy(z["edge_attr"].astype(np.int64))
    y = torch.from_numpy(z["y"].astype(np.float32))
    nptr, eptr = z["node_ptr"].tolist(), z["edge_ptr"].tolist()
    out = []
    for i in range(len(nptr) - 1):
        out.append(
            Data(
                x=x[nptr[i]:nptr[i + 1]].view(-1, 1).clone(),
                edge_index=ei[:, eptr[i]:eptr[i + 1]].clone(),
                edge_attr=ea[eptr[i]:eptr[i + 1]].clone(),
                y=y[i:i + 1].clone(),
            )
        )
    return out


def _graphs_from_pickle(pickle_path: Path, index_path: Path) -> list[Data]:
    """The benchmark's format (PyG ``datasets.ZINC.process``): a list of dicts with
    ``atom_type [n]``, ``bond_type [n, n]`` (adjacency of bond types) and
    ``logP_SA_cycle_normalized``; the subset is ``mols[i] for i in index``."""
    idx = _read_index(index_path)
    with open(pickle_path, "rb") as f:
        mols = pickle.load(f)  # noqa: S301 - the benchmark's own format (as PyG reads it)
    out = []
    for i in idx:
        mol = mols[i]
        adj = torch.as_tensor(mol["bond_type"])
        edge_index = adj.nonzero(as_tuple=False).t().contiguous()
        out.append(
            Data(
                x=torch.as_tensor(mol["atom_type"]).to(torch.long).view(-1, 1),
                edge_index=edge_index,
                edge_attr=adj[edge_index[0], edge_index[1]].to(torch.long),
                y=torch.as_tensor(mol["logP_SA_cycle_normalized"]).to(torch.float).view(1),
            )
        )
    return out


def _canonical_key(mol) -> str:
    """Non-isomeric canonical SMILES: stereoisomers count as the same molecule (stricter)."""
    from rdkit import Chem

    return Chem.MolToSmiles(mol, isomericSmiles=False)


def _draw_train(valid: Sequence[str], order: Sequence[int], excluded: set[str]
                ) -> tuple[list[Data], list[int], dict[str, int], list[dict[str, int]]]:
    """Featurizes the molecules ``valid[pos]`` for ``pos`` in ``order`` until :data:`NUM_TRAIN`
    are kept, skipping those in ``excluded`` (val/test molecules), repeats and unparsable ones.

    Returns:
        ``(graphs, positions, skipped, rule_sensitive)``: the graphs (``y`` the penalized logP
        target), their positions in ``valid``, the skip counts (``overlap``, ``duplicate``,
        ``invalid``), and the molecules whose ring term depends on the largest-ring rule.
    """
    graphs: list[Data] = []
    positions: list[int] = []
    skipped = {"overlap": 0, "duplicate": 0, "invalid": 0}
    rule_sensitive: list[dict[str, int]] = []
    seen: set[str] = set()
    for pos in order:
        if len(graphs) == NUM_TRAIN:
            break
        smi = valid[pos]
        try:
            mol = parse_molecule(smi)
            key = _canonical_key(mol)
            if key in excluded:
                skipped["overlap"] += 1
                continue
            if key in seen:
                skipped["duplicate"] += 1
                continue
            data = mol_to_zinc_graph(mol, smi)
            ring = largest_ring_jtvae(mol)
            y = penalized_logp_of_mol(mol, ring)
            ring_v1 = largest_ring_bond_graph(mol)
        except ValueError:
            skipped["invalid"] += 1
            continue
        seen.add(key)
        data.y = torch.tensor([y], dtype=torch.float32)
        if max(ring - 6, 0) != max(ring_v1 - 6, 0):
            rule_sensitive.append(
                {"index": len(graphs), "source_position": pos, "largest_ring": ring,
                 "largest_ring_current_networkx": ring_v1}
            )
        graphs.append(data)
        positions.append(pos)
    return graphs, positions, skipped, rule_sensitive


def _reconstruct_train(dirs: Sequence[Path]) -> tuple[list[Data], dict[str, Any]]:
    need = {
        n: find_file(dirs, n)
        for n in ("jtvae_zinc_valid.txt.gz", "val.index", "jtvae_zinc_test.txt.gz", "test.index")
    }
    missing = [n for n, p in need.items() if p is None]
    if missing:
        raise FileNotFoundError(", ".join(missing))
    t0 = time.perf_counter()
    valid = _read_smiles(need["jtvae_zinc_valid.txt.gz"])
    test = _read_smiles(need["jtvae_zinc_test.txt.gz"])
    val_idx = _read_index(need["val.index"])
    test_idx = _read_index(need["test.index"])
    excluded = {_canonical_key(parse_molecule(valid[i])) for i in val_idx}
    excluded |= {_canonical_key(parse_molecule(test[i])) for i in test_idx}

    val_set = set(val_idx)
    candidates = np.array([p for p in range(len(valid)) if p not in val_set], dtype=np.int64)
    order = np.random.default_rng(RECONSTRUCTED_TRAIN_SEED).permutation(candidates)
    graphs, positions, skipped, rule_sensitive = _draw_train(valid, order.tolist(), excluded)
    if len(graphs) < NUM_TRAIN:
        raise RuntimeError(f"ZINC: only {len(graphs)} molecules available for the train split")
    info = {
        "recipe": (
            f"{NUM_TRAIN} molecules drawn with numpy default_rng({RECONSTRUCTED_TRAIN_SEED}) "
            "from ZINC-full val (JT-VAE valid.txt) excluding val.index and any molecule whose "
            "non-isomeric canonical SMILES equals a val/test subset molecule or an earlier draw; "
            "featurized with smiles_to_graph, target = penalized_logp_target"
        ),
        "target_rule": (
            "normalized penalized logP (JT-VAE constants); ring term from largest_ring_jtvae: "
            "networkx cycle basis of the adjacency-matrix graph in SMILES atom order, rooted at "
            "atom 0 (reproduces the ring term of all 2,000 exact val/test targets)"
        ),
        "ring_rule_sensitive": rule_sensitive,
        "seed": RECONSTRUCTED_TRAIN_SEED,
        "source": str(need["jtvae_zinc_valid.txt.gz"]),
        "source_sha256": _SHA256["jtvae_zinc_valid.txt.gz"],
        "skipped_overlap": skipped["overlap"],
        "skipped_duplicate": skipped["duplicate"],
        "skipped_invalid": skipped["invalid"],
        "source_positions": positions,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return graphs, info


def _how_to_get(dirs: Sequence[Path]) -> str:
    looked = ", ".join(str(d) for d in dirs) if dirs else "(no directory)"
    return (
        f"Looked in: {looked}. To get the data, pass --data-dir (data_dir=...) or set "
        f"${DATA_ENV} to a folder whose ZINC/ holds "
        "zinc_subset_{val,test}.npz, jtvae_zinc_{valid,test}.txt.gz and {train,val,test}.index "
        "(docs/datasets.md, 'Raw files'), or put the benchmark's molecules.zip contents "
        f"(molecules/{{train,val,test}}.pickle + {{train,val,test}}.index) there, or allow the "
        f"download of {ZINC_URL} (needs network; download=True and ${OFFLINE_ENV} unset)."
    )


def load_split(
    dirs: Sequence[Path],
    split: str,
    download_dir: Path | None = None,
    download: bool = False,
) -> tuple[list[Data], dict[str, Any]]:
    """Graphs of ``split`` plus a provenance dict (``"provenance"``: ``"exact"`` or
    ``"reconstructed"``, where the graphs came from)."""
    check_split("ZINC", split)
    dirs = list(dirs)
    search = dirs + ([download_dir] if download_dir is not None else [])

    def exact_from_pickle() -> tuple[list[Data], dict[str, Any]] | None:
        pk, ix = find_file(search, f"{split}.pickle"), find_file(search, f"{split}.index")
        if pk is None or ix is None:
            return None
        return _graphs_from_pickle(pk, ix), {"provenance": "exact", "source": str(pk)}

    if split != "train":
        npz = find_file(search, f"zinc_subset_{split}.npz")
        if npz is not None:
            return _graphs_from_npz(npz), {"provenance": "exact", "source": str(npz)}
    got = exact_from_pickle()
    if got is not None:
        return got

    download_error = "download disabled"
    if download and download_dir is not None and not offline():
        try:
            download_zinc(download_dir)
        except (DataNotFoundError, OSError, ValueError) as e:
            download_error = f"download failed: {e}"
            log.info("ZINC: %s", download_error)
        else:
            got = exact_from_pickle()
            if got is not None:
                return got
            download_error = "download finished but the split's files are missing"

    if split == "train":
        try:
            graphs, info = _reconstruct_train(search)
        except FileNotFoundError as e:
            raise DataNotFoundError(
                f"ZINC train: neither the exact train graphs (molecules/train.pickle + "
                f"train.index) nor the inputs of the reconstructed split (missing: {e}) were "
                f"found; {download_error}. {_how_to_get(search)}"
            ) from None
        info = {"provenance": "reconstructed", "exact_unavailable": download_error, **info}
        return graphs, info
    raise DataNotFoundError(
        f"ZINC {split}: neither zinc_subset_{split}.npz nor molecules/{split}.pickle + "
        f"{split}.index were found; {download_error}. {_how_to_get(search)}"
    )


def load_zinc_graphs(data_dir: str | os.PathLike, split: str) -> list[Data]:
    r"""Load one ZINC-12k split from local raw files (no download, no cache).

    Args:
        data_dir: the data directory holding ``ZINC/`` (or the ``ZINC`` folder itself).
        split (str): ``"train"``, ``"val"`` or ``"test"``.

    Returns:
        ``list[Data]`` with ``x [n, 1]`` long, ``edge_index [2, e]`` long (local ids, both
        directions), ``edge_attr [e]`` long, ``y [1]`` float32. ``val``/``test`` (1,000 each) are
        the exact benchmark graphs; ``train`` (10,000) is exact when
        ``molecules/train.pickle`` + ``train.index`` are present, otherwise the reconstructed
        split (see the module docstring; a few tens of seconds to build).

    Raises:
        ValueError: unknown split, or a raw file whose sha256 is not the pinned one.
        DataNotFoundError: the needed files are not there (the message says what to provide).
    """
    return load_split([zinc_dir(data_dir)], split)[0]


_fetch = fetch_url  # module-level name, so tests can replace the transport


def download_zinc(dest_dir: str | os.PathLike, timeout: float = 15.0) -> Path:
    r"""Download the benchmark's raw files (PyG ``datasets.ZINC``'s sources) into ``dest_dir``.

    Fetches :data:`ZINC_URL` (``molecules.zip``: ZINC-full ``{train,val,test}.pickle``) and
    extracts it to ``dest_dir/molecules/``, then fetches ``{train,val,test}.index`` from the
    benchmarking-gnns repository into ``dest_dir``. The index files are checked against pinned
    sha256s. The archive's sha256 is not known (it could not be obtained when this was written),
    so its structure is checked instead: a valid zip holding ``molecules/{train,val,test}.pickle``.

    Args:
        dest_dir: target folder (created if needed).
        timeout (float): socket timeout in seconds for connecting and for each read, so a closed
            or stalled network fails fast instead of hanging.

    Returns:
        ``dest_dir`` as a :class:`~pathlib.Path`.

    Raises:
        DataNotFoundError: the network is unreachable, or a fetched file fails its check.
    """
    dest = Path(dest_dir).expanduser()
    dest.mkdir(parents=True, exist_ok=True)
    zpath = dest / "molecules.zip"
    try:
        for split in SPLITS:
            ipath = dest / f"{split}.index"
            if not ipath.is_file() or sha256_of(ipath) != _SHA256[ipath.name]:
                _fetch(ZINC_INDEX_URL.format(split), ipath, timeout)
                _check_sha(ipath)
        if not all((dest / "molecules" / m).is_file() for m in _ZIP_MEMBERS):
            _fetch(ZINC_URL, zpath, timeout)
            try:
                with zipfile.ZipFile(zpath) as zf:
                    names = set(zf.namelist())
                    wanted = [f"molecules/{m}" for m in _ZIP_MEMBERS]
                    absent = [w for w in wanted if w not in names]
                    if absent:
                        raise ValueError(f"{ZINC_URL} is not the benchmark's archive: no {absent}")
                    for w in wanted + [n for n in ("molecules/atom_dict.pickle",
                                                   "molecules/bond_dict.pickle") if n in names]:
                        zf.extract(w, dest)
            except zipfile.BadZipFile as e:
                raise ValueError(f"{ZINC_URL} did not give a zip archive: {e}") from e
            finally:
                zpath.unlink(missing_ok=True)
    except (OSError, http.client.HTTPException, ValueError) as e:  # URLError is an OSError
        raise DataNotFoundError(f"ZINC: could not download into {dest}: {e}") from e
    return dest
