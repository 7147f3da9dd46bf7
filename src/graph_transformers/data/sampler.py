"""Size-bucketed batching: batches of graphs of similar size, to limit padding in dense models."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler


def graph_sizes(dataset) -> list[int]:
    """Number of nodes of every graph of a PyG dataset (read from the collated storage when the
    dataset is an unindexed ``InMemoryDataset``, else graph by graph)."""
    slices = getattr(dataset, "slices", None)
    if slices is not None and getattr(dataset, "_indices", None) is None and "x" in slices:
        return torch.diff(slices["x"]).tolist()
    return [int(dataset[i].num_nodes) for i in range(len(dataset))]


class SizeBucketBatchSampler(Sampler[list[int]]):
    """Yields batches of indices whose graphs have similar sizes.

    Each epoch: shuffle all indices, cut them into windows of ``window`` batches, sort each window
    by graph size (ties broken at random), cut it into batches, and shuffle the order of all
    batches. Batches stay random draws of the data (each window is a random sample), while the
    padding of a dense batch ``B · max(n)²`` shrinks towards ``Σ n²``.

    Args:
        sizes: number of nodes of each graph.
        batch_size: graphs per batch (the last batch of a window may be smaller).
        window: batches per sorting window (1 = plain random batches).
        shuffle: reshuffle every epoch; ``False`` gives one fixed size-sorted order.
        seed: base seed; epoch ``t`` uses ``seed + t``.
        drop_last: drop the smaller last batch of each window.

    Raises:
        ValueError: for a non-positive ``batch_size`` or ``window``.
    """

    def __init__(self, sizes: Sequence[int], batch_size: int, window: int = 50,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if batch_size < 1 or window < 1:
            raise ValueError(f"batch_size and window must be >= 1, got {batch_size}, {window}")
        self.sizes = torch.as_tensor(list(sizes), dtype=torch.long)
        self.batch_size, self.window = batch_size, window
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch that seeds the next iteration (as ``DistributedSampler``)."""
        self.epoch = epoch

    def state_dict(self) -> dict[str, int]:
        """``{"epoch", "seed"}``: what the next iteration draws from (saved in checkpoints so a
        resumed run draws the same batches as an uninterrupted one)."""
        return {"epoch": int(self.epoch), "seed": int(self.seed)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Restores :meth:`state_dict`."""
        self.epoch = int(state["epoch"])
        self.seed = int(state.get("seed", self.seed))

    def _batches(self) -> list[list[int]]:
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        n = self.sizes.numel()
        order = torch.randperm(n, generator=g) if self.shuffle else torch.arange(n)
        span = self.batch_size * self.window
        batches: list[list[int]] = []
        for start in range(0, n, span):
            idx = order[start:start + span]
            # sort by size; random keys in [0, 1) break ties without biasing sizes
            key = self.sizes[idx].double() + (torch.rand(idx.numel(), generator=g, dtype=torch.double)
                                              if self.shuffle else 0.0)
            idx = idx[torch.argsort(key)]
            for b in range(0, idx.numel(), self.batch_size):
                chunk = idx[b:b + self.batch_size]
                if self.drop_last and chunk.numel() < self.batch_size:
                    continue
                batches.append(chunk.tolist())
        if self.shuffle:
            perm = torch.randperm(len(batches), generator=g).tolist()
            batches = [batches[p] for p in perm]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        batches = self._batches()
        if self.shuffle:
            self.epoch += 1  # a fresh draw next epoch even if nobody calls set_epoch
        return iter(batches)

    def __len__(self) -> int:
        n = self.sizes.numel()
        span = self.batch_size * self.window
        full, rest = divmod(n, span)
        per_window = self.window
        last = rest // self.batch_size + (0 if self.drop_last or rest % self.batch_size == 0
                                          else 1)
        return full * per_window + last


def padding_ratio(sizes: Sequence[int], batches: Sequence[Sequence[int]]) -> float:
    """``Σ_batches B·max(n)² / Σ n²``: how many padded pairs a dense model computes per real pair
    (1.0 = no padding)."""
    s = torch.as_tensor(list(sizes), dtype=torch.float64)
    padded = sum(len(b) * float(s[torch.as_tensor(list(b), dtype=torch.long)].max()) ** 2
                 for b in batches if len(b))
    real = float((s ** 2).sum())
    return padded / real
