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
from pufferlib.config import ConfigError, view


class MetricsLog:
    """Appends one JSON line per epoch to <run>/metrics.jsonl; mirrors to wandb/tensorboard if on,
    with the run's config (wandb's run config; TensorBoard's text tab, as JSON). ``group`` gathers
    runs in wandb (a sweep's trials)."""

    def __init__(self, run_dir, config, resume_epoch=None, group=None):
        path = Path(run_dir) / "metrics.jsonl"
        if resume_epoch is not None and path.exists():
            # A crash after the checkpoint left lines of epochs that the resumed run repeats.
            lines = [line for line in path.read_text().splitlines(keepends=True)
                     if line.strip() and json.loads(line)["epoch"] <= resume_epoch]
            write_atomic(path, "".join(lines))
        self.file = open(path, "a")
        train = view(config, "train")
        self.wandb = self.tensorboard = None
        if train.wandb:
            try:
                import wandb
            except ImportError:
                raise ConfigError("--train.wandb true needs the wandb package: pip install wandb") from None
            self.wandb = wandb.init(project=train.wandb_project, name=Path(run_dir).name, group=group, config=config,
                                    dir=str(run_dir))
        if train.tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ConfigError("--train.tensorboard true needs the tensorboard package: pip install tensorboard") from None
            self.tensorboard = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))
            # Four leading spaces: TensorBoard's text tab renders markdown, and this keeps the JSON verbatim.
            self.tensorboard.add_text("config", "\n".join("    " + line for line in json.dumps(config, indent=2).splitlines()))

    def record_trial(self, params, results):
        """A sweep trial's searched values and its results (score, cost): wandb's run summary, and
        TensorBoard's HParams tab, where the trials of a sweep line up as a table."""
        if self.wandb:
            self.wandb.summary.update({**params, **results})
        if self.tensorboard:
            # HParams takes numbers, strings and booleans; a categorical may hold None.
            values = {key: "None" if value is None else value for key, value in params.items()}
            self.tensorboard.add_hparams(values, results, run_name=".")

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
    """This process's CPU and memory (psutil), and GPU memory and load when training on CUDA."""

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
            # cpu_percent counts one fully busy core as 100%.
            usage["Process CPU"] = f"{self.process.cpu_percent():.0f}%"
            rss, total = self.process.memory_info().rss, self.psutil.virtual_memory().total
            usage["Process RAM"] = f"{rss / 2**30:.2f} GiB ({rss / total:.1%} of {total / 2**30:.0f} GiB)"
        else:
            usage["Process CPU"] = "(pip install psutil)"
        if self.device.startswith("cuda"):
            usage["GPU RAM"] = f"{torch.cuda.memory_allocated() / 2**30:.2f} GiB"
            with contextlib.suppress(Exception):  # needs pynvml, which not every install has
                usage["GPU"] = f"{torch.cuda.utilization()}%"
        return usage


# Labels that read better than their key; other keys show with spaces for underscores.
LABELS = {"explained_variance": "explained var", "importance_weight": "importance wt", "learning_rate": "learning rate",
          "episode_return": "return", "episode_length": "length", "approx_kl": "approx KL"}
LABEL_WIDTH, VALUE_WIDTH, GAP = 22, 10, 3
WIDE = 160  # from this width the sections sit side by side; below it they stack


def abbreviate(name, width=LABEL_WIDTH):
    """A metric's label in at most ``width`` characters, never cut: underscores become spaces and
    the longest words give up letters, one at a time, for a period ("ach./defeat fire elem.")."""
    words = LABELS.get(name, name).replace("_", " ").replace("/", "/ ").split(" ")
    cores = [word.rstrip("/") for word in words]
    keep = [len(core) for core in cores]

    def shown(k):
        short = cores[k] if keep[k] == len(cores[k]) else cores[k][:keep[k]] + "."
        return short + ("/" if words[k].endswith("/") else "")

    def label():
        return " ".join(shown(k) for k in range(len(words))).replace("/ ", "/")

    for shortest in (3, 1):
        while len(label()) > width:
            candidates = [k for k in range(len(words)) if keep[k] > shortest]
            if not candidates:
                break
            k = max(candidates, key=lambda k: (len(shown(k)), -k))
            keep[k] -= 2 if keep[k] == len(cores[k]) else 1  # the first letter dropped pays for the period
    return label()


def show_value(value):
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def summary_columns(lengths, width):
    """The most columns that ``lengths`` (of cells in reading order) fit in, within ``width``."""
    for columns in range(len(lengths), 1, -1):
        widths = [max(lengths[c::columns]) for c in range(columns)]
        if sum(widths) + GAP * (columns - 1) <= width:
            return columns
    return 1


def pair_grid(pairs, columns):
    """Label-value pairs, ``columns`` pairs to a row."""
    from rich.table import Table

    table = Table.grid(padding=(0, GAP, 0, 0))
    for _ in range(columns):
        table.add_column(style="cyan", no_wrap=True, min_width=LABEL_WIDTH)
        table.add_column(justify="right", no_wrap=True, min_width=VALUE_WIDTH)
    for start in range(0, len(pairs), columns):
        row = pairs[start:start + columns]
        table.add_row(*[cell for pair in row for cell in pair], *[""] * (2 * (columns - len(row))))
    return table


def section(title, stats, width, max_lines=None):
    """A titled grid of ``stats`` in ``width`` columns of text; beyond ``max_lines`` lines (title
    included) the rest are counted, not shown. Returns (renderable, lines)."""
    from rich.console import Group
    from rich.text import Text

    columns = max(1, (width + GAP) // (LABEL_WIDTH + 1 + VALUE_WIDTH + GAP))
    pairs = [(abbreviate(key), show_value(value)) for key, value in stats.items()]
    hidden = 0
    if max_lines is not None and 1 + -(-len(pairs) // columns) > max_lines:
        shown = max(max_lines - 2, 0) * columns
        pairs, hidden = pairs[:shown], len(pairs) - shown
    parts = [Text(title, style="bold"), pair_grid(pairs, columns)]
    if hidden:
        parts.append(Text(f"+{hidden} more in metrics.jsonl", style="dim"))
    return Group(*parts), 1 + -(-len(pairs) // columns) + bool(hidden)
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

    def render(self, sps, width=None, height=None):
        """The dashboard for a terminal of ``width`` x ``height`` (the console's by default): the
        sections side by side from WIDE columns, stacked below it; environment statistics that
        do not fit the height are counted, not shown."""
        from rich.console import Group
        from rich.panel import Panel
        from rich.table import Table
        from rich.text import Text

        width = width or self.console.width
        height = height or self.console.height
        inner = width - 4  # the panel's borders and padding
        t = self.trainer
        total = t.total_epochs * t.batch_size * t.world.size
        left = self.remaining(sps)
        facts = [("SPS", human(sps)), ("Steps", f"{human(t.global_step)} / {human(total)}"),
                 ("Epoch", f"{t.epoch} / {t.total_epochs}"),
                 ("Time", f"{duration(t.seconds())}, {duration(left) if left == left else '?'} left"),
                 *self.usage.read().items()]
        cells = [f"[bold]{key}[/] {value}" for key, value in facts]
        per_row = summary_columns([len(f"{key} {value}") for key, value in facts], inner)
        summary = Table.grid(padding=(0, GAP, 0, 0))
        for _ in range(per_row):
            summary.add_column(no_wrap=True)
        for start in range(0, len(cells), per_row):
            row = cells[start:start + per_row]
            summary.add_row(*row, *[""] * (per_row - len(row)))
        texts = [Text(f"Run {self.run_dir}", overflow="fold")] + [Text(m, overflow="fold") for m in self.messages]
        # Lines left for the sections: the panel's borders, the summary, the run and the messages.
        room = height - 2 - -(-len(cells) // per_row) - sum(-(-len(text.plain) // inner) for text in texts)

        if width >= WIDE:
            pair = LABEL_WIDTH + 1 + VALUE_WIDTH
            losses, _ = section("Losses", t.losses, pair)
            timing, _ = section("Time per epoch (s)", t.timings, pair)
            environment, _ = section("Environment", t.env_stats, inner - 2 * (pair + GAP), max_lines=max(room, 3))
            body = Table.grid(padding=(0, GAP, 0, 0))
            body.add_row(losses, timing, environment)
            sections = [body]
        else:
            losses, losses_lines = section("Losses", t.losses, inner)
            timing, timing_lines = section("Time per epoch (s)", t.timings, inner)
            environment, _ = section("Environment", t.env_stats, inner, max_lines=max(room - losses_lines - timing_lines, 3))
            sections = [losses, environment, timing]
        title = f"PuffeRL · {t.config['base']['env_name']} · {t.device}"
        return Panel(Group(summary, *texts[:1], *sections, *texts[1:]), title=title, border_style="magenta")

    def close(self):
        if self.live:
            self.display.stop()

