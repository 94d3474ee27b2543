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
import torch.distributed.nn  # noqa: F401  (see TorchrunWorld.close)

from pufferlib.config import ConfigError
from pufferlib.environment import mean_infos

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


class World:
    """One process: rank 0 of 1."""

    rank, size, local_rank = 0, 1, 0

    def place(self, config):
        """Points the config's training and env devices at this rank's GPU."""

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

    def close(self, completed=True):
        pass


class TorchrunWorld(World):
    """A rank of a torchrun job: the process group, and the collectives the trainer needs."""

    def __init__(self, device, timeout_s):
        variables = torchrun_variables(required=True)
        self.rank, self.size, self.local_rank = variables["RANK"], variables["WORLD_SIZE"], variables["LOCAL_RANK"]
        self.timeout_s = timeout_s
        self.cuda = str(device).startswith("cuda")
        if self.cuda:
            if self.local_rank >= torch.cuda.device_count():
                raise ConfigError(f"LOCAL_RANK {self.local_rank}: this host has {torch.cuda.device_count()} GPUs")
            torch.cuda.set_device(self.local_rank)
        self.device = torch.device(f"cuda:{self.local_rank}") if self.cuda else torch.device("cpu")
        # A collective that waits longer than this raises instead of hanging on a dead rank.
        try:
            dist.init_process_group("nccl" if self.cuda else "gloo", timeout=datetime.timedelta(seconds=timeout_s))
        except dist.DistNetworkError as error:
            if "EADDRINUSE" not in str(error):
                raise self.not_started(error) from None
            raise ConfigError(
                f"MASTER_PORT {os.environ['MASTER_PORT']} is in use on this host: another job holds it, or two "
                "processes were given RANK 0. Pick a free port (torchrun --master-port, or --rdzv-endpoint HOST:PORT)"
            ) from None
        except (dist.DistError, RuntimeError) as error:
            raise self.not_started(error) from None

    def not_started(self, error):
        """The error for ranks that could not form their group, with what to check."""
        return ConfigError(
            f"rank {self.rank} of WORLD_SIZE {self.size} could not start with the other ranks at "
            f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} within {self.timeout_s:g} s "
            f"({str(error).strip()}). Every rank needs the same WORLD_SIZE, MASTER_ADDR and MASTER_PORT and its "
            f"own RANK from 0 to {self.size - 1}, all {self.size} must be started, and MASTER_ADDR:MASTER_PORT must "
            "be reachable from each (torchrun sets all of them; --train.distributed-timeout sets the wait)"
        )

    def check_same_config(self, config):
        """Every rank must train with the same settings: compared by hash at start."""
        mine = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]
        hashes = [None] * self.size
        try:
            dist.all_gather_object(hashes, mine)
        except (dist.DistError, RuntimeError) as error:  # the first collective: where a bad WORLD_SIZE shows
            raise self.not_started(error) from None
        if len(set(hashes)) > 1:
            raise ConfigError(f"ranks were started with different configs (hashes by rank: {hashes}); give every rank the same flags")

    def place(self, config):
        if self.cuda:  # one GPU per rank: this rank's
            config["train"]["device"] = str(self.device)
            if config["vec"]["device"] != "cpu":
                config["vec"]["device"] = str(self.device)

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

    def close(self, completed=True):
        """Leaves the group. A process that exits without this aborts (SIGABRT) on gloo's threads.

        ``destroy_process_group`` joins gloo's threads only when nothing else holds the group.
        ``torch.distributed.nn``'s functions take the default group as a default argument: imported
        after the group exists (``torch._dynamo`` imports it on first use), they would keep it, and a
        gloo thread could then release its last barrier while the interpreter exits, aborting the
        process. This module imports it first, when the default is still None.

        ``completed``: training ended on every rank, so wait for all of them; a rank that failed
        leaves at once, so that torchrun learns of it and stops the others."""
        if dist.is_initialized():
            if completed:
                dist.barrier()  # rank 0 may still be scoring the final policy: leave together
            dist.destroy_process_group()


def torchrun_variables(required):
    """torchrun's variables as integers (MASTER_ADDR as given): all of them, or {} when none is set
    and ``required`` is false. Some but not all, or values that cannot be a job's, are errors."""
    present = [name for name in TORCHRUN_VARIABLES if name in os.environ]
    if not present and not required:
        return {}
    missing = [name for name in TORCHRUN_VARIABLES if name not in os.environ]
    if missing:
        given = " ".join(f"{name}={os.environ[name]}" for name in present)
        raise ConfigError(
            f"data-parallel training needs torchrun's variables; missing {', '.join(missing)}"
            + (f" (set: {given})" if given else "")
            + ". Launch with: torchrun --nproc-per-node N -m pufferlib.cli train ENV ..."
            + (f", or unset {' '.join(present)} (or pass --train.distributed off) to train in one process" if given else "")
        )
    values = {"MASTER_ADDR": os.environ["MASTER_ADDR"]}
    numbers = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"] + (["LOCAL_WORLD_SIZE"] if "LOCAL_WORLD_SIZE" in os.environ else [])
    for name in numbers:
        try:
            values[name] = int(os.environ[name])
        except ValueError:
            raise ConfigError(f"{name}={os.environ[name]!r}: torchrun's {name} is a whole number") from None
    rank, size, local_rank = values["RANK"], values["WORLD_SIZE"], values["LOCAL_RANK"]
    if size < 1:
        raise ConfigError(f"WORLD_SIZE={size}: a job has at least one rank")
    if not 0 <= rank < size:
        raise ConfigError(f"RANK={rank} is outside WORLD_SIZE={size}: ranks are numbered 0 to {size - 1}")
    local_size = values.get("LOCAL_WORLD_SIZE", size)
    if not 0 <= local_rank < local_size or local_size > size:
        raise ConfigError(
            f"LOCAL_RANK={local_rank} with LOCAL_WORLD_SIZE={local_size} and WORLD_SIZE={size}: a host's ranks are "
            "numbered 0 to LOCAL_WORLD_SIZE - 1, and a host has no more ranks than the job"
        )
    if not 0 < values["MASTER_PORT"] < 65536:
        raise ConfigError(f"MASTER_PORT={values['MASTER_PORT']} is not a TCP port (1 to 65535)")
    return values


def make_world(config, device):
    """The World a config asks for: [train] distributed auto (torchrun's variables present), on, off.

    Under torchrun every rank makes its World here; an error is raised alike on every rank."""
    mode = config["train"]["distributed"]
    if mode not in ("auto", "on", "off", True, False):
        raise ConfigError(f"--train.distributed {mode!r}: valid are auto, on, off")
    if mode in ("off", False):
        return World()
    variables = torchrun_variables(required=mode in ("on", True))
    if not variables or (mode == "auto" and variables["WORLD_SIZE"] == 1):
        return World()
    world = TorchrunWorld(device, config["train"]["distributed_timeout"])
    try:
        world.check_same_config(config)
    except BaseException:
        world.close(completed=False)
        raise
    return world
