"""One torch-engine fit spread over the processes of a ``torch.distributed`` group.

Run the same script under ``torchrun`` (or any launcher that initialises the default
process group): every process calls ``ConditionalTSNE(backend="torch", ...).fit`` with
the same data, prior and ``random_state``, and every process ends with the same map. Each
process owns a contiguous block of points (:class:`Shard`) and computes, per iteration:

* the attraction of its block's rows of P (the costliest part: P's non-zeros);
* the FFT repulsion's charges of its points; the charges and the self-pairs are summed
  over the processes (one all-reduce of the grid), every process transforms the whole
  grid and gathers the forces on its own points;
* then the gradient's blocks are gathered (all-gather), and every process takes the same
  optimiser step on the whole map, which is small next to P.

What is not sharded yet (``docs/distributed.rst`` has the plan): the neighbour search
and P (built by every process, checked to agree), the exact repulsion (computed whole by
every process), and the map itself (replicated: 16 bytes a point in 2-D). The sums over
processes add in another order than one process does, so the map agrees with the
one-process fit to rounding, not bit for bit.
"""

from __future__ import annotations

from .device import load_torch

__all__ = ["Shard"]


class Shard:
    """The block of points this process owns in a process group of ``world`` processes.

    Parameters
    ----------
    rank, world : int
        This process's rank and the group's size.
    group : torch.distributed process group, optional
        Default: the default group.
    """

    def __init__(self, rank: int, world: int, group=None):
        if not 0 <= rank < world:
            raise ValueError(f"rank {rank} outside a group of {world}")
        self.rank, self.world, self.group = int(rank), int(world), group

    @classmethod
    def current(cls) -> Shard | None:
        """The default process group's shard, or None outside one (or in a group of 1)."""
        torch = load_torch()
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            return None
        world = dist.get_world_size()
        return None if world < 2 else cls(dist.get_rank(), world)

    def bounds(self, n: int, rank: int | None = None) -> tuple[int, int]:
        """``(lo, hi)``: the points of ``rank`` (this one by default) among ``n``, in
        blocks of ``ceil(n / world)``."""
        r = self.rank if rank is None else rank
        size = self._block(n)
        return min(n, r * size), min(n, (r + 1) * size)

    def _block(self, n: int) -> int:
        return -(-n // self.world)

    def all_reduce(self, tensor) -> None:
        """Sum ``tensor`` over the processes, in place."""
        load_torch().distributed.all_reduce(tensor, group=self.group)

    def gather_rows(self, block, n: int):
        """The (n, ...) tensor made of every process's block of rows (this one's is
        ``block``)."""
        torch = load_torch()
        padded = torch.zeros((self._block(n), *block.shape[1:]), dtype=block.dtype,
                             device=block.device)
        padded[:len(block)] = block
        parts = [torch.empty_like(padded) for _ in range(self.world)]
        torch.distributed.all_gather(parts, padded, group=self.group)
        return torch.cat([p[:hi - lo] for p, (lo, hi) in
                          zip(parts, (self.bounds(n, r) for r in range(self.world)),
                              strict=True)])

    def check_same(self, *values: float, what: str) -> None:
        """Raise if the processes disagree on ``values`` (floats, e.g. P's size and sum)."""
        torch = load_torch()
        mine = torch.tensor(values, dtype=torch.float64)
        low, high = mine.clone(), mine.clone()
        torch.distributed.all_reduce(low, op=torch.distributed.ReduceOp.MIN, group=self.group)
        torch.distributed.all_reduce(high, op=torch.distributed.ReduceOp.MAX, group=self.group)
        if not torch.equal(low, high):
            raise RuntimeError(f"the processes built different {what}: give every process "
                               "the same data, prior and random_state")
