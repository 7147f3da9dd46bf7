"""Size-bucketed batching (batches of graphs of similar size, to limit padding in dense models) and
the distributed (DDP) forms of the samplers training uses.

Under DDP every rank computes the same global list of batches for an epoch (seeded by
``seed + epoch``, never by the global RNG) and :func:`deal_batches` gives rank ``r`` the batches
``r, r + W, r + 2W, …``; see ``docs/scaling.md``.
"""
from __future__ import annotations

import abc

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import RandomSampler, Sampler

#: what :func:`deal_batches` does with the batches left over when their number is not a multiple
#: of the number of ranks
REMAINDERS = ("pad", "drop", "uneven")


def distributed_world() -> tuple[int, int]:
    """``(num_replicas, rank)`` of the initialized default ``torch.distributed`` process group,
    ``(1, 0)`` when there is none (a single process)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


def _check_world(num_replicas: int, rank: int) -> None:
    if num_replicas < 1:
        raise ValueError(f"num_replicas must be >= 1, got {num_replicas}")
    if not 0 <= rank < num_replicas:
        raise ValueError(f"rank must be in 0..{num_replicas - 1}, got {rank}")


def deal_batches(batches: Sequence[list[int]], num_replicas: int, rank: int,
                 remainder: str = "pad") -> list[list[int]]:
    """Rank ``rank``'s share of ``batches`` (a list every rank computes identically): the
    batches ``rank, rank + W, rank + 2W, …`` with ``W = num_replicas``.

    ``remainder`` says what happens when ``len(batches)`` is not a multiple of ``W``:

    - ``"pad"``: the list is extended by repeating its first batches (cyclically, as
      ``DistributedSampler`` pads indices) to the next multiple of ``W``; every rank gets
      ``ceil(len / W)`` batches, at most ``W - 1`` of them repeats.
    - ``"drop"``: the last ``len % W`` batches are dropped; every rank gets ``floor(len / W)``
      batches and no batch is seen twice (the dropped ones are random when the list is shuffled).
    - ``"uneven"``: nothing is added or dropped; ranks get ``ceil`` or ``floor(len / W)`` batches,
      every batch exactly once. For evaluation only: a training step with unequal counts would
      leave the other ranks waiting in DDP's gradient all-reduce.

    Args:
        batches: the global list of batches (lists of dataset indices).
        num_replicas: number of ranks ``W``.
        rank: this rank, ``0 <= rank < W``.
        remainder: ``"pad"``, ``"drop"`` or ``"uneven"``.

    Returns:
        The rank's batches, in the global order.

    Raises:
        ValueError: for ``num_replicas < 1``, a rank outside ``0..W-1`` or an unknown
            ``remainder``.
    """
    _check_world(num_replicas, rank)
    if remainder not in REMAINDERS:
        raise ValueError(f"remainder must be one of {REMAINDERS}, got {remainder!r}")
    batches = list(batches)
    n = len(batches)
    if remainder == "pad" and n % num_replicas and n:
        extra = num_replicas - n % num_replicas
        batches = batches + [batches[i % n] for i in range(extra)]
    elif remainder == "drop":
        batches = batches[:n - n % num_replicas]
    return batches[rank::num_replicas]


def dealt_length(num_batches: int, num_replicas: int, rank: int, remainder: str = "pad") -> int:
    """How many of ``num_batches`` batches :func:`deal_batches` gives ``rank``."""
    _check_world(num_replicas, rank)
    if remainder == "pad":
        return -(-num_batches // num_replicas)
    if remainder == "drop":
        return num_batches // num_replicas
    return len(range(rank, num_batches, num_replicas))


def graph_sizes(dataset) -> list[int]:
    """Number of nodes of every graph of a PyG dataset (read from the collated storage when the
    dataset is an unindexed ``InMemoryDataset``, else graph by graph)."""
    slices = getattr(dataset, "slices", None)
    if slices is not None and getattr(dataset, "_indices", None) is None and "x" in slices:
        return torch.diff(slices["x"]).tolist()
    return [int(dataset[i].num_nodes) for i in range(len(dataset))]



def epoch_batches(sampler: Any, batches: list[list[int]]) -> Iterator[list[int]]:
    """What a batch sampler's ``__iter__`` returns for this epoch's ``batches``: an iterator
    over them, the sampler's ``epoch`` advanced first when it shuffles (a fresh draw next epoch
    even if nobody calls ``set_epoch``); shared by :class:`SizeBucketBatchSampler` and the
    Cluster-GCN sampler (:mod:`graph_transformers.data.cluster`).

    Args:
        sampler: the sampler, with ``shuffle`` and ``epoch``.
        batches: this epoch's batches, drawn before the epoch advances.

    Returns:
        An iterator over ``batches``.
    """
    if sampler.shuffle:
        sampler.epoch += 1
    return iter(batches)

class EpochSeededBatchSampler(Sampler[list[int]], abc.ABC):
    """Base of the batch samplers whose epoch ``t`` draws with ``seed + t`` (the same on every
    rank of a DDP run): :class:`SizeBucketBatchSampler`, the Cluster-GCN sampler
    (:mod:`graph_transformers.data.cluster`) and the static-shape packing sampler
    (:mod:`graph_transformers.data.static_shapes`). Subclasses set ``shuffle``, ``seed`` and
    ``epoch = 0`` and implement ``batches()`` (this epoch's batches, without advancing it) and
    ``__len__``; iterating yields ``batches()`` through :func:`epoch_batches`.
    """

    shuffle: bool
    seed: int
    epoch: int

    @abc.abstractmethod
    def batches(self) -> list[list[int]]:
        """This epoch's batches (what the next iteration yields), without advancing the epoch."""

    def __iter__(self) -> Iterator[list[int]]:
        return epoch_batches(self, self.batches())

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch that seeds the next iteration (Lightning calls it every epoch, as for
        ``DistributedSampler``)."""
        self.epoch = epoch

    def state_dict(self) -> dict[str, int]:
        """``{"epoch", "seed"}``: what the next iteration draws from (saved in checkpoints so a
        resumed run draws the same batches as an uninterrupted one)."""
        return {"epoch": int(self.epoch), "seed": int(self.seed)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Restores :meth:`state_dict`."""
        self.epoch = int(state["epoch"])
        self.seed = int(state.get("seed", self.seed))


class SizeBucketBatchSampler(EpochSeededBatchSampler):
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

    def batches(self) -> list[list[int]]:
        """This epoch's batches, without advancing the epoch."""
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        n = self.sizes.numel()
        order = torch.randperm(n, generator=g) if self.shuffle else torch.arange(n)
        span = self.batch_size * self.window
        batches: list[list[int]] = []
        for start in range(0, n, span):
            idx = order[start:start + span]
            # sort by size; random keys in [0, 1) break ties without biasing sizes
            key = self.sizes[idx].double() + (
                torch.rand(idx.numel(), generator=g, dtype=torch.double) if self.shuffle else 0.0)
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


class EpochShuffleSampler(Sampler[int]):
    """Indices ``0..n-1`` in a random order per epoch.

    In a single process (``num_replicas`` resolved to 1) it is exactly PyTorch's
    ``RandomSampler`` (a draw from the global RNG, so single-process runs are unchanged by this
    class). Under DDP every rank must draw the *same* permutation, so it is drawn from a generator
    seeded by ``seed + epoch`` (as ``DistributedSampler``), independent of the per-rank global RNG.

    Args:
        num_samples: ``n``.
        seed: base seed of the distributed permutation.
        num_replicas: number of ranks; ``None`` reads the initialized process group when iterated
            (1 without one).

    Raises:
        ValueError: for a negative ``num_samples``.
    """

    def __init__(self, num_samples: int, seed: int = 0, num_replicas: int | None = None) -> None:
        if num_samples < 0:
            raise ValueError(f"num_samples must be >= 0, got {num_samples}")
        self.num_samples, self.seed, self.num_replicas = num_samples, seed, num_replicas
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch that seeds the next distributed permutation."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        # a generator, so that nothing is drawn before the first batch is asked for (as PyTorch's
        # own samplers: the loader draws its worker base seed first)
        world = self.num_replicas if self.num_replicas is not None else distributed_world()[0]
        if world == 1:
            yield from RandomSampler(range(self.num_samples))
            return
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1  # a fresh draw next epoch even if nobody calls set_epoch
        yield from torch.randperm(self.num_samples, generator=g).tolist()

    def __len__(self) -> int:
        return self.num_samples


class DistributedBatchSampler(Sampler[list[int]]):
    """Deals the batches of a batch sampler out to the ranks of a DDP run (:func:`deal_batches`).

    The wrapped ``sampler`` must yield the same batches on every rank (a fixed order, or one
    seeded by ``seed + epoch`` such as :class:`SizeBucketBatchSampler` or a ``BatchSampler`` over
    :class:`EpochShuffleSampler`); each epoch this sampler materializes its batches and yields
    this rank's share. With one rank it yields the wrapped batches unchanged.

    ``num_replicas`` / ``rank`` default to the initialized default process group, read when the
    sampler is iterated or measured, so loaders can be built before Lightning starts the processes.
    Lightning calls ``set_epoch`` on ``batch_sampler.sampler``, i.e. on the wrapped sampler;
    :meth:`set_epoch` here forwards it as well.

    Args:
        sampler: the global batch sampler (an iterable of index lists with ``len``).
        num_replicas: number of ranks ``W`` (``None``: from the process group).
        rank: this rank (``None``: from the process group).
        remainder: ``"pad"`` (training: equal batch counts, a few batches repeated), ``"drop"``
            (equal counts, a few dropped) or ``"uneven"`` (evaluation: every batch exactly once).

    Raises:
        ValueError: for an unknown ``remainder``; when iterated, for a rank outside ``0..W-1``.
    """

    def __init__(self, sampler: Iterable[list[int]], num_replicas: int | None = None,
                 rank: int | None = None, remainder: str = "pad") -> None:
        if remainder not in REMAINDERS:
            raise ValueError(f"remainder must be one of {REMAINDERS}, got {remainder!r}")
        self.sampler, self.num_replicas, self.rank = sampler, num_replicas, rank
        self.remainder = remainder

    def world(self) -> tuple[int, int]:
        """``(num_replicas, rank)``: the explicit values, else the process group's."""
        w, r = distributed_world()
        return (self.num_replicas if self.num_replicas is not None else w,
                self.rank if self.rank is not None else r)

    def set_epoch(self, epoch: int) -> None:
        """Forwards the epoch to the wrapped sampler (and to its index sampler)."""
        for obj in (self.sampler, getattr(self.sampler, "sampler", None)):
            if callable(getattr(obj, "set_epoch", None)):
                obj.set_epoch(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        w, r = self.world()
        if w == 1:
            yield from (list(b) for b in self.sampler)
            return
        yield from deal_batches([list(b) for b in self.sampler], w, r, self.remainder)

    def __len__(self) -> int:
        w, r = self.world()
        return dealt_length(len(self.sampler), w, r, self.remainder)


class DistributedSizeBucketBatchSampler(DistributedBatchSampler):
    """Size-bucketed batches under DDP: the batches of a :class:`SizeBucketBatchSampler` (the
    same on every rank: its order is seeded by ``seed + epoch``) dealt out by
    :func:`deal_batches`. Rank ``r`` gets global batches ``r, r + W, …``, so the ranks' batches
    of one epoch are disjoint and together cover every graph; with the default
    ``remainder="pad"`` every rank gets ``ceil(B / W)`` batches of the epoch's ``B``, the last
    ``B mod W`` slots filled by repeating the epoch's first batches (random ones, as the batch
    order is shuffled). Call :meth:`set_epoch` each epoch (Lightning does) for a new draw.

    Args:
        sizes, batch_size, window, shuffle, seed, drop_last: as :class:`SizeBucketBatchSampler`.
        num_replicas, rank, remainder: as :class:`DistributedBatchSampler`.

    Raises:
        ValueError: as :class:`SizeBucketBatchSampler` and :class:`DistributedBatchSampler`.
    """

    def __init__(self, sizes: Sequence[int], batch_size: int, window: int = 50,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False,
                 num_replicas: int | None = None, rank: int | None = None,
                 remainder: str = "pad") -> None:
        super().__init__(SizeBucketBatchSampler(sizes, batch_size, window=window, shuffle=shuffle,
                                                seed=seed, drop_last=drop_last),
                         num_replicas=num_replicas, rank=rank, remainder=remainder)
