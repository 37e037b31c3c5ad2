"""DeepGEMM's ``deep_gemm.utils.dist``: small torch.distributed helpers of its multi-GPU tests."""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple

_DEFAULT_PORT = "8361"


def init_dist(local_rank: int, num_local_ranks: int) -> Tuple[int, int, Any]:
    """Joins the NCCL process group from ``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/``RANK``
    (one node by default) and makes ``local_rank`` the current device. Returns (rank, world size, group)."""
    import torch
    import torch.distributed as dist

    addr = os.getenv("MASTER_ADDR", "127.0.0.1")
    port = int(os.getenv("MASTER_PORT", _DEFAULT_PORT))
    nodes = int(os.getenv("WORLD_SIZE", "1"))
    node = int(os.getenv("RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl", init_method="tcp://%s:%d" % (addr, port),
                            world_size=nodes * num_local_ranks, rank=node * num_local_ranks + local_rank)
    group = dist.new_group(list(range(nodes * num_local_ranks)))
    return dist.get_rank(), dist.get_world_size(), group


def uneven_all_gather(tensor: Any, dim: int = 0, group: Optional[Any] = None) -> Any:
    """Concatenates every rank's ``tensor`` along ``dim`` where the ranks' sizes along it differ."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size(group)
    size = torch.tensor([tensor.size(dim)], dtype=torch.int64, device=tensor.device)
    sizes = [torch.empty_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    counts = [int(s.item()) for s in sizes]
    longest = max(counts)
    shape = list(tensor.shape)
    shape[dim] = longest
    padded = torch.zeros(shape, dtype=tensor.dtype, device=tensor.device)
    padded.narrow(dim, 0, tensor.size(dim)).copy_(tensor)
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded, group=group)
    return torch.cat([p.narrow(dim, 0, c) for p, c in zip(parts, counts)], dim=dim)
