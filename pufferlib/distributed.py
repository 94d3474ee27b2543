"""Data-parallel training over torch.distributed: N ranks, one policy.

Launched by torchrun (``torchrun --nproc-per-node 2 -m pufferlib.cli train ENV``), every rank owns
its envs (seeded ``seed + rank * num_envs``), collects its own batch, and averages its gradients
with the other ranks' before each optimizer step, so the ranks keep identical weights and train
one policy on an N-times larger batch. Episode statistics are merged across ranks; decisions that
end training (solved, interrupted) are rank 0's, sent to all. NCCL carries CUDA tensors, gloo CPU
ones. A single process uses ``World()``: the same calls, doing nothing.
"""

import datetime
import hashlib
import json
import os

import torch
import torch.distributed as dist

from pufferlib.config import ConfigError
from pufferlib.environment import mean_infos

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


class World:
    """One process: rank 0 of 1."""

    rank, size, local_rank = 0, 1, 0

    @property
    def is_main(self):
        return self.rank == 0

    def average_gradients(self, parameters):
        pass

    def sum(self, count):
        return count

    def merge_stats(self, stats):
        return stats

    def decide(self, value):
        """Rank 0's ``value``, on every rank."""
        return value

    def same_weights(self, parameters):
        return True

    def close(self):
        pass


class TorchrunWorld(World):
    """A rank of a torchrun job: the process group, and the collectives the trainer needs."""

    def __init__(self, device, timeout_s):
        missing = [name for name in TORCHRUN_VARIABLES if name not in os.environ]
        if missing:
            raise ConfigError(
                f"--train.distributed on needs torchrun's variables; missing {', '.join(missing)}. "
                "Launch with: torchrun --nproc-per-node N -m pufferlib.cli train ENV ..."
            )
        try:
            self.rank, self.size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
            self.local_rank = int(os.environ["LOCAL_RANK"])
        except ValueError:
            raise ConfigError(f"torchrun variables must be integers: {[os.environ[v] for v in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK')]}") from None
        if not 0 <= self.rank < self.size:
            raise ConfigError(f"RANK {self.rank} is outside WORLD_SIZE {self.size}")
        self.cuda = str(device).startswith("cuda")
        if self.cuda:
            if self.local_rank >= torch.cuda.device_count():
                raise ConfigError(f"LOCAL_RANK {self.local_rank}: this host has {torch.cuda.device_count()} GPUs")
            torch.cuda.set_device(self.local_rank)
        # A collective that waits longer than this raises instead of hanging on a dead rank.
        dist.init_process_group("nccl" if self.cuda else "gloo", timeout=datetime.timedelta(seconds=timeout_s))
        self.device = torch.device(f"cuda:{self.local_rank}") if self.cuda else torch.device("cpu")

    def check_same_config(self, config):
        """Every rank must train with the same settings: compared by hash at start."""
        mine = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]
        hashes = [None] * self.size
        dist.all_gather_object(hashes, mine)
        if len(set(hashes)) > 1:
            raise ConfigError(f"ranks were started with different configs (hashes by rank: {hashes}); give every rank the same flags")

    def average_gradients(self, parameters):
        grads = [p.grad for p in parameters if p.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat /= self.size
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    def sum(self, count):
        total = torch.tensor([count], dtype=torch.int64, device=self.device)
        dist.all_reduce(total)
        return int(total.item())

    def merge_stats(self, stats):
        everyone = [None] * self.size
        dist.all_gather_object(everyone, stats)
        return mean_infos([s for s in everyone if s])

    def decide(self, value):
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def same_weights(self, parameters):
        """Whether every rank holds bitwise the weights rank 0 holds (a checksum compared once)."""
        checksum = torch.stack([p.detach().double().sum() for p in parameters]).sum().reshape(1)
        everyone = [torch.zeros_like(checksum) for _ in range(self.size)]
        dist.all_gather(everyone, checksum)
        return all(torch.equal(other, everyone[0]) for other in everyone)

    def close(self):
        if dist.is_initialized():
            dist.barrier()  # rank 0 may still be scoring the final policy: leave together
            dist.destroy_process_group()


def make_world(config, device):
    """The World a config asks for: [train] distributed auto (torchrun's variables present), on, off."""
    mode = config["train"]["distributed"]
    if mode not in ("auto", "on", "off", True, False):
        raise ConfigError(f"--train.distributed {mode!r}: valid are auto, on, off")
    wanted = mode in ("on", True) or (mode == "auto" and "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"] or 1) > 1)
    if not wanted:
        return World()
    world = TorchrunWorld(device, config["train"]["distributed_timeout"])
    world.check_same_config(config)
    return world
