"""What a run shows and keeps: one metrics.jsonl line per epoch (mirrored to wandb or
tensorboard when asked), and a live rich dashboard on a terminal or plain progress lines
elsewhere, with the machine's CPU, memory and GPU use."""

import contextlib
import json
import math
import sys
import time
from pathlib import Path

import torch

from pufferlib.checkpoint import write_atomic
from pufferlib.config import ConfigError


class MetricsLog:
    """Appends one JSON line per epoch to <run>/metrics.jsonl; mirrors to wandb/tensorboard if on."""

    def __init__(self, run_dir, config, resume_epoch=None):
        path = Path(run_dir) / "metrics.jsonl"
        if resume_epoch is not None and path.exists():
            # A crash after the checkpoint left lines of epochs that the resumed run repeats.
            lines = [line for line in path.read_text().splitlines(keepends=True)
                     if line.strip() and json.loads(line)["epoch"] <= resume_epoch]
            write_atomic(path, "".join(lines))
        self.file = open(path, "a")
        train = config["train"]
        self.wandb = self.tensorboard = None
        if train["wandb"]:
            try:
                import wandb
            except ImportError:
                raise ConfigError("--train.wandb true needs the wandb package: pip install wandb") from None
            self.wandb = wandb.init(project=train["wandb_project"], name=Path(run_dir).name, config=config, dir=str(run_dir))
        if train["tensorboard"]:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ConfigError("--train.tensorboard true needs the tensorboard package: pip install tensorboard") from None
            self.tensorboard = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))

    def log(self, metrics):
        self.file.write(json.dumps(metrics) + "\n")
        self.file.flush()
        numeric = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if self.wandb:
            self.wandb.log(numeric, step=metrics["step"])
        if self.tensorboard:
            for key, value in numeric.items():
                self.tensorboard.add_scalar(key, value, metrics["step"])

    def close(self):
        self.file.close()
        if self.wandb:
            self.wandb.finish()
        if self.tensorboard:
            self.tensorboard.close()


def epoch_metrics(trainer, sps):
    """One metrics.jsonl line. JSON has no NaN: a NaN (explained variance of constant returns, say)
    is written as the string "nan", distinct from null (no data)."""
    metrics = dict(step=trainer.global_step, epoch=trainer.epoch, time=round(trainer.seconds(), 3), sps=round(sps, 1))
    metrics.update({f"losses/{k}": v for k, v in trainer.losses.items()})
    metrics.update({f"env/{k}": v for k, v in trainer.episode_stats.items()})
    metrics.update({f"timing/{k}": round(v, 4) for k, v in trainer.timings.items()})
    return {k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in metrics.items()}


def human(number):
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(number) >= size:
            return f"{number / size:.1f}{unit}"
    return f"{number:.0f}" if float(number).is_integer() else f"{number:.3g}"


def duration(seconds):
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class SystemUsage:
    """CPU and memory of this process (psutil), and GPU memory and load when training on CUDA."""

    def __init__(self, device):
        self.device = device
        try:
            import psutil

            self.psutil, self.process = psutil, psutil.Process()
            self.process.cpu_percent()  # the first reading only starts the interval
        except ImportError:
            self.psutil = None

    def read(self):
        usage = {}
        if self.psutil:
            usage["CPU"] = f"{self.process.cpu_percent():.0f}%"
            usage["RAM"] = f"{self.process.memory_info().rss / 2**30:.2f} GiB ({self.psutil.virtual_memory().percent:.0f}% of system)"
        else:
            usage["CPU"] = "(pip install psutil)"
        if self.device.startswith("cuda"):
            usage["GPU RAM"] = f"{torch.cuda.memory_allocated() / 2**30:.2f} GiB"
            with contextlib.suppress(Exception):  # needs pynvml, which not every install has
                usage["GPU"] = f"{torch.cuda.utilization()}%"
        return usage


class Dashboard:
    """Live rich dashboard on a terminal; a plain line every `print_interval` seconds otherwise;
    nothing at all in mode "off" (the other ranks of a data-parallel run)."""

    def __init__(self, trainer, run_dir, mode, print_interval):
        self.trainer = trainer
        self.run_dir = run_dir
        self.silent = mode == "off"
        self.live = mode == "rich" or (mode == "auto" and sys.stdout.isatty())
        self.print_interval = print_interval
        self.last = 0.0
        self.sps = 0.0
        self.messages = []
        self.usage = SystemUsage(trainer.device)
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self.console = Console()
            self.display = Live(console=self.console, auto_refresh=False, transient=False)
            self.display.start()

    def say(self, message):
        """A message that stays: printed now in plain mode, kept under the dashboard in rich mode."""
        if self.silent:
            return
        if self.live:
            self.messages.append(message)
            self.refresh(force=True)
        else:
            print(message, flush=True)

    def refresh(self, sps=None, force=False):
        """Redraws (rich) or prints a line (plain), at most every 0.25 s / print_interval."""
        self.sps = self.sps if sps is None else sps
        sps = self.sps
        now = time.time()
        if self.silent or (not force and now - self.last < (0.25 if self.live else self.print_interval)):
            return
        self.last = now
        if self.live:
            self.display.update(self.render(sps), refresh=True)
        else:
            print(self.line(sps), flush=True)

    def remaining(self, sps):
        steps_left = self.trainer.total_epochs * self.trainer.batch_size * self.trainer.world.size - self.trainer.global_step
        return steps_left / sps if sps > 0 else float("nan")

    def line(self, sps):
        t = self.trainer
        total = t.total_epochs * t.batch_size * t.world.size
        env = " ".join(f"{k} {v:.3g}" for k, v in list(t.env_stats.items())[:4])
        losses = " ".join(f"{k.split('_')[0]} {t.losses[k]:.3g}" for k in ("policy_loss", "value_loss", "entropy") if k in t.losses)
        left = self.remaining(sps)
        return (
            f"[{t.config['base']['env_name']}] epoch {t.epoch}/{t.total_epochs} step {human(t.global_step)}/{human(total)} "
            f"{human(sps)} SPS {duration(t.seconds())} elapsed {duration(left) if left == left else '?'} left | {env} | {losses}"
        )

    def render(self, sps):
        from rich.console import Group
        from rich.panel import Panel
        from rich.table import Table

        t = self.trainer
        total = t.total_epochs * t.batch_size * t.world.size
        left = self.remaining(sps)
        summary = Table.grid(padding=(0, 3))
        for _ in range(4):
            summary.add_column()
        summary.add_row(f"[bold]SPS[/] {human(sps)}", f"[bold]Steps[/] {human(t.global_step)} / {human(total)}",
                        f"[bold]Epoch[/] {t.epoch} / {t.total_epochs}",
                        f"[bold]Time[/] {duration(t.seconds())} (left {duration(left) if left == left else '?'})")
        usage = list(self.usage.read().items())[:4]
        summary.add_row(*[f"[bold]{k}[/] {v}" for k, v in usage] + [""] * (4 - len(usage)))

        def table(title, rows):
            grid = Table(title=title, title_justify="left", show_header=False, box=None, padding=(0, 2))
            grid.add_column(style="cyan")
            grid.add_column(justify="right")
            for key, value in rows:
                grid.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
            return grid

        columns = Table.grid(padding=(0, 6))
        columns.add_row(table("Losses", t.losses.items()), table("Environment", t.env_stats.items()),
                        table("Time per epoch (s)", t.timings.items()))
        title = f"PuffeRL · {t.config['base']['env_name']} · {t.device} · {self.run_dir}"
        return Panel(Group(summary, "", columns, *self.messages), title=title, border_style="magenta")

    def close(self):
        if self.live:
            self.display.stop()

