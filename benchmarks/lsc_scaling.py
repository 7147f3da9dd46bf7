"""Processing and reading an OGB-LSC-sized molecule set: the memory-mapped store of
``pcqm4mv2`` (:mod:`graph_transformers.data.ondisk`) built from a generated SMILES stream in the
official layout, with its peak memory and throughput, and one data epoch over the store.

The stream: ``--num-molecules`` rows of ``pcqm4m-v2/raw/data.csv.gz`` (``idx,smiles,homolumogap``)
cycling through the 29,445 real ZINC molecules of the shared data (JT-VAE's ZINC validation and
test SMILES; ZINC molecules have 23 heavy atoms on average, PCQM4Mv2's 14, so per molecule this
is heavier than the real set), a gap drawn per row, and a ``split_dict.pt`` with the official
proportions (train 90.0 %, valid 2.0 %, test-dev 4.0 %, test-challenge 4.0 %).

Measured, in this order, in one process:

1. **processing**: ``load_pcqm4mv2`` of every split (featurization with OGB's ``smiles2graph``
   columns in ``--workers`` spawned worker processes, chunks appended to the store, checksums):
   wall seconds, molecules per second, the parent's peak resident set (``VmHWM``) and the
   largest worker's (``RUSAGE_CHILDREN`` ``ru_maxrss``), the store's size on disk;
2. **opening** the train store in a new process (a second run's start: mapping the files and
   hashing them against the manifest);
3. **one data epoch** over the train split: a shuffled PyG ``DataLoader`` (``--batch-size``
   graphs, the random access a training epoch makes) collating every batch, in graphs per
   second, with the peak resident set after it. The model's own step is not included (it is
   the same as on any in-memory set: see ``docs/speed.md``).

The figures for the 3.7 M molecules of PCQM4Mv2 are extrapolated linearly from the measured
ones (processing and the epoch are linear in the number of molecules; the peak memory is not:
it is bounded by the chunks in flight, which the JSON shows by its independence of N when the
script is run at two sizes). Writes ``lsc_scaling.json`` and ``lsc_scaling.md`` under ``--out``.

Usage::

    PYTHONPATH=src python benchmarks/lsc_scaling.py [--num-molecules 200000] [--workers 2]
        [--chunk-size 5000] [--batch-size 256] [--work /tmp/lsc-scaling] [--out benchmarks/results]

Needs RDKit (``pip install 'graph-transformers[chem]'``) and the shared data (ZINC SMILES).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from isolated import cpu_name, reset_peak_rss, status_kib  # noqa: E402

REAL_MOLECULES = 3_746_620  # PCQM4Mv2, all four splits
FRACTIONS = {"train": 0.9, "valid": 0.02, "test-dev": 0.04, "test-challenge": 0.04}


def zinc_smiles(data_dir: Path) -> list[str]:
    """The ZINC-full validation and test SMILES of the shared data (one per line).

    Raises:
        FileNotFoundError: the shared data has no ``ZINC/jtvae_zinc_*.txt.gz``.
    """
    out: list[str] = []
    for name in ("jtvae_zinc_valid.txt.gz", "jtvae_zinc_test.txt.gz"):
        with gzip.open(data_dir / "ZINC" / name, "rt") as f:
            out += [line.strip() for line in f if line.strip()]
    return out


def write_stream(root: Path, smiles: list[str], n: int, seed: int = 0) -> dict[str, int]:
    """``root/pcqm4m-v2/raw/data.csv.gz`` with ``n`` rows and ``root/pcqm4m-v2/split_dict.pt``
    with the official split proportions; returns the split sizes."""
    folder = root / "pcqm4m-v2"
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    gaps = rng.normal(5.7, 1.2, n)
    with gzip.open(folder / "raw" / "data.csv.gz", "wt", compresslevel=1) as f:
        f.write("idx,smiles,homolumogap\n")
        for i in range(n):
            f.write(f"{i},{smiles[i % len(smiles)]},{gaps[i]:.6f}\n")
    perm = rng.permutation(n)
    sizes, start, split = {}, 0, {}
    for k, frac in FRACTIONS.items():
        size = n - start if k == "test-challenge" else int(round(frac * n))
        split[k] = torch.from_numpy(np.sort(perm[start:start + size]))
        sizes[k], start = size, start + size
    torch.save(split, folder / "split_dict.pt")
    return sizes


def dir_bytes(path: Path) -> int:
    """The total size of the files below ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def open_in_new_process(cache: Path, raw: Path, options: dict) -> float:
    """Seconds a fresh process takes to open the built train store (mapping the files and
    checking them against the manifest), after its imports."""
    import subprocess
    code = ("import sys, time; from graph_transformers.datasets.molecules.pcqm4m import "
            "load_pcqm4mv2; t = time.perf_counter(); "
            f"load_pcqm4mv2({str(cache)!r}, 'train', data_dir={str(raw)!r}, **{options!r}); "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    """Runs the measurement and writes the JSON and Markdown reports; returns the JSON dict."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-molecules", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--data-dir", type=Path,
                        default=Path(os.environ.get("GRAPH_TRANSFORMERS_DATA", "../shared/data")))
    parser.add_argument("--work", type=Path, default=Path("/tmp/lsc-scaling"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)

    from torch_geometric.loader import DataLoader

    from graph_transformers.datasets.molecules.pcqm4m import load_pcqm4mv2

    shutil.rmtree(args.work, ignore_errors=True)
    raw, cache = args.work / "data", args.work / "cache"
    t0 = time.perf_counter()
    sizes = write_stream(raw, zinc_smiles(args.data_dir), args.num_molecules)
    write_s = time.perf_counter() - t0

    reset_peak_rss()
    options = {"num_workers": args.workers, "chunk_size": args.chunk_size}
    t0 = time.perf_counter()
    splits = {s: load_pcqm4mv2(cache, s, data_dir=raw, **options)
              for s in ("train", "val", "test")}
    process_s = time.perf_counter() - t0
    # test-challenge, the fourth official split, through the option that selects it
    t1 = time.perf_counter()
    load_pcqm4mv2(cache, "test", data_dir=raw, test_split="test-challenge", **options)
    process_s += time.perf_counter() - t1
    parent_peak_kib = status_kib("VmHWM")
    worker_peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    store_bytes = dir_bytes(cache)

    open_s = open_in_new_process(cache, raw, options)
    train = load_pcqm4mv2(cache, "train", data_dir=raw, **options)

    reset_peak_rss()
    torch.manual_seed(0)
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=True)
    t0, graphs, nodes = time.perf_counter(), 0, 0
    for batch in loader:
        graphs += batch.num_graphs
        nodes += batch.num_nodes
    epoch_s = time.perf_counter() - t0
    epoch_peak_kib = status_kib("VmHWM")

    n = args.num_molecules
    scale = REAL_MOLECULES / n
    result = {
        "num_molecules": n, "split_sizes": sizes,
        "stored_graphs": {k: len(v) for k, v in splits.items()},
        "write_csv_s": round(write_s, 2),
        "processing": {"wall_s": round(process_s, 2),
                       "molecules_per_s": round(n / process_s, 1),
                       "parent_peak_rss_mib": round(parent_peak_kib / 1024, 1),
                       "largest_worker_peak_rss_mib": round(worker_peak_kib / 1024, 1),
                       "store_mib": round(store_bytes / 2**20, 1),
                       "store_bytes_per_molecule": round(store_bytes / n, 1)},
        "open_train_store_s": round(open_s, 2),
        "data_epoch": {"graphs": graphs, "nodes": nodes, "wall_s": round(epoch_s, 2),
                       "graphs_per_s": round(graphs / epoch_s, 1),
                       "peak_rss_mib": round(epoch_peak_kib / 1024, 1),
                       "batch_size": args.batch_size},
        "extrapolated_to_pcqm4mv2": {
            "molecules": REAL_MOLECULES,
            "processing_h": round(process_s * scale / 3600, 2),
            "store_gib": round(store_bytes * scale / 2**30, 2),
            "data_epoch_min": round(epoch_s * scale / 60, 1),
            "rule": "linear in the number of molecules (peak memory: bounded by the chunks "
                    "in flight, not extrapolated)"},
        "meta": {"cpu": cpu_name(), "cores": os.cpu_count(), "workers": args.workers,
                 "chunk_size": args.chunk_size, "torch_threads": torch.get_num_threads(),
                 "load_average": [round(x, 2) for x in os.getloadavg()],
                 "molecule_source": "ZINC-full val+test SMILES (JT-VAE files), cycled"},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lsc_scaling.json").write_text(json.dumps(result, indent=2) + "\n")
    p, e, x = result["processing"], result["data_epoch"], result["extrapolated_to_pcqm4mv2"]
    md = [f"# OGB-LSC-sized store: {n:,} generated molecules ({result['meta']['cpu']}, "
          f"{args.workers} workers, load {result['meta']['load_average'][0]})", "",
          "| measured | value |", "|---|---:|",
          f"| processing (4 splits) | {p['wall_s']} s, {p['molecules_per_s']:,} molecules/s |",
          f"| peak RSS, parent / largest worker | {p['parent_peak_rss_mib']} / "
          f"{p['largest_worker_peak_rss_mib']} MiB |",
          f"| store on disk | {p['store_mib']} MiB ({p['store_bytes_per_molecule']} B/molecule) |",
          f"| opening the train store | {result['open_train_store_s']} s |",
          f"| data epoch (train, batch {e['batch_size']}, shuffled) | {e['wall_s']} s, "
          f"{e['graphs_per_s']:,} graphs/s, peak RSS {e['peak_rss_mib']} MiB |", "",
          f"Extrapolated linearly to PCQM4Mv2's {REAL_MOLECULES:,} molecules: processing "
          f"{x['processing_h']} h, store {x['store_gib']} GiB, one data epoch "
          f"{x['data_epoch_min']} min (without the model's step).", ""]
    (args.out / "lsc_scaling.md").write_text("\n".join(md))
    print("\n".join(md))
    return result


if __name__ == "__main__":
    main()
