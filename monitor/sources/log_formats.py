"""Progress lines of training logs: one parser per trainer's printed line, pure (text in, numbers out).

Each format names a ``hint``: text every progress line of that trainer contains. A line without it is
skipped before any regular expression runs (most of a job's output is not progress). A parsed line is a
``Progress``: its step, its metrics under the canonical names of ``monitor.profiles`` (``train/loss``,
``grad/norm/total``, ...; keys no mapping knows keep their printed name), and the line's own
timestamp when it has one.

The lines each parser reads, from the trainers' code (tests/sources/log_lines.py holds real ones):

- ``megatron``: Megatron-LM / Megatron-DeepSpeed ``training_log``:
  `` iteration     1100/    5000 | consumed samples: ... | lm loss: 5.015918E+00 | grad norm: 1.851 |``;
- ``torchtitan``: ``MetricsProcessor.log``: ``step: 14  loss:  3.24405  grad_norm:  0.8319  memory: ...
  tps: 7,282  tflops: 0.52  mfu: 0.17%`` (``validate step:`` lines are the eval loss);
- ``hf``: the Hugging Face Trainer's ``{'loss': 0.3751, 'grad_norm': 19.9, 'learning_rate': 8.5e-06,
  'epoch': 0.04}`` (no step in it: the progress bar's ``N/M [`` on the same line, else a count);
- ``llmc``: llm.c's ``step    1/19560 | loss 11.010252 (+nanz)| norm 15.1374 (+nanz)| lr 8.57e-07 |
  4688.25 ms | 28.8% bf16 MFU | 111830 tok/s`` and its log file's ``s:120 trl:3.2811 lr:0.0006 norm:0.27``;
- ``nanogpt``: nanoGPT's ``iter 120: loss 3.2800, time 98.00ms, mfu 41.00%`` and ``step 250: train loss
  1.5440, val loss 1.7220``;
- ``levanter``: Levanter's progress bar ``train:  12%|...| 120/1000 [01:23<10:12, 1.44it/s, loss=3.28]``;
- ``regex:<pattern>``: a custom line; named group ``step`` is the step, every other named group a metric
  (``__`` in a group name stands for ``/``: ``(?P<train__loss>...)`` is ``train/loss``).
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

NUM = r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|NaN|Inf|-nan)"


def number(text: str) -> float | None:
    """A printed number: ``5.098124E+00``, ``7,282``, ``nan``; None for anything else."""
    text = text.strip().rstrip("%").replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Progress:
    step: int | None  # None: the format has no step in the line (the reader counts)
    metrics: dict[str, float] = field(default_factory=dict)
    t: float | None = None  # the line's own time (epoch seconds), if it prints one
    total: int | None = None  # the run's last step, if the line says it (``1100/5000``)


_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")


def line_time(head: str, utc: bool) -> float | None:
    """The first ``YYYY-MM-DD HH:MM:SS[.fff]`` in ``head`` (a line's start), as epoch seconds: local
    time of this host unless ``utc``."""
    m = _STAMP.search(head)
    if not m:
        return None
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    try:
        parts = (y, mo, d, h, mi, s, 0, 0, -1)
        base = calendar.timegm(parts) if utc else time.mktime(parts)
    except (OverflowError, ValueError):
        return None
    return base + frac


def _pairs(parts: list[str], names: dict[str, str], scale: dict[str, float]) -> dict[str, float]:
    """``key: value`` fields -> metrics, mapped names first; unknown numeric keys keep their name."""
    out: dict[str, float] = {}
    for part in parts:
        key, sep, value = part.partition(":")
        if not sep:
            continue
        key = key.strip()
        x = number(value.split()[0]) if value.split() else None
        if x is None or not key or len(key) > 60:
            continue
        name = names.get(key, key)
        out[name] = x * scale.get(key, 1.0)
    return out


# ---- Megatron-LM / Megatron-DeepSpeed --------------------------------------------------------------
_MEGATRON = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|(.*)")
MEGATRON_NAMES = {
    "lm loss": "train/loss",
    "grad norm": "grad/norm/total",
    "learning rate": "optim/learning_rate",
    "loss scale": "optim/loss_scale",
    "elapsed time per iteration (ms)": "throughput/duration",
    "elapsed time per iteration (s)": "throughput/duration",
    "TFLOPs": "throughput/tflops_per_device",
    "throughput per GPU (TFLOP/s/GPU)": "throughput/tflops_per_device",
    "number of skipped iterations": "optim/skipped_step",
    "tokens per second": "throughput/tokens_per_second",
}
_MEGATRON_SCALE = {"elapsed time per iteration (ms)": 1e-3}
_MEGATRON_VALID = re.compile(
    r"(?:valid|validation) loss at iteration\s+(\d+)\s*\|\s*lm loss value:\s*(" + NUM + ")"
)


def megatron(line: str) -> Progress | None:
    m = _MEGATRON.search(line)
    if m is None:
        v = _MEGATRON_VALID.search(line)
        if v is None or (loss := number(v.group(2))) is None:
            return None
        return Progress(int(v.group(1)), {"eval/loss": loss})
    metrics = _pairs(m.group(3).split("|"), MEGATRON_NAMES, _MEGATRON_SCALE)
    return Progress(int(m.group(1)), metrics, total=int(m.group(2)))


# ---- torchtitan ------------------------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TITAN = re.compile(r"(validate )?step:\s*(\d+)\s+(.*)")
_TITAN_PAIR = re.compile(r"([A-Za-z_]+):\s*(" + NUM + ")")
TITAN_NAMES = {
    "loss": "train/loss",
    "grad_norm": "grad/norm/total",
    "tps": "throughput/tokens_per_second_per_device",
    "tflops": "throughput/tflops_per_device",
    "mfu": "throughput/mfu",
    "memory": "memory/max_reserved(GiB)",
}


def torchtitan(line: str) -> Progress | None:
    m = _TITAN.search(_ANSI.sub("", line))
    if m is None:
        return None
    fields = [f"{k}: {v}" for k, v in _TITAN_PAIR.findall(m.group(3))]
    metrics = _pairs(fields, TITAN_NAMES, {})
    if m.group(1):  # a validation line: its loss is the eval loss
        metrics = {"eval/loss": metrics["train/loss"]} if "train/loss" in metrics else {}
    if not metrics:
        return None
    return Progress(int(m.group(2)), metrics)


# ---- Hugging Face Trainer --------------------------------------------------------------------------
_HF_DICT = re.compile(r"\{'(?:loss|eval_loss)':[^{}]*\}")
_HF_PAIR = re.compile(r"'([^']{1,60})':\s*(" + NUM + r")")
_TQDM_STEP = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")
HF_NAMES = {
    "loss": "train/loss",
    "grad_norm": "grad/norm/total",
    "learning_rate": "optim/learning_rate",
    "eval_loss": "eval/loss",
}


def hf(line: str) -> Progress | None:
    m = _HF_DICT.search(line)
    if m is None:
        return None
    metrics: dict[str, float] = {}
    for key, value in _HF_PAIR.findall(m.group(0)):
        x = number(value)
        if x is not None:
            metrics[HF_NAMES.get(key, key)] = x
    bars = _TQDM_STEP.findall(line[: m.start()])
    step, total = (int(bars[-1][0]), int(bars[-1][1])) if bars else (None, None)
    return Progress(step, metrics, total=total) if metrics else None


# ---- llm.c -----------------------------------------------------------------------------------------
_LLMC = re.compile(r"step\s+(\d+)/(\d+)\s*\|(.*)")
_LLMC_FILE = re.compile(r"^s:(\d+) (tr|te)l:(" + NUM + r")(.*)")
_LLMC_PARTS = (
    (re.compile(r"^(?:train )?loss (" + NUM + ")"), "train/loss", 1.0),
    (re.compile(r"^norm (" + NUM + ")"), "grad/norm/total", 1.0),
    (re.compile(r"^lr (" + NUM + ")"), "optim/learning_rate", 1.0),
    (re.compile(r"^\(?(" + NUM + r") ms"), "throughput/duration", 1e-3),
    (re.compile(r"^(" + NUM + r")% \w+ MFU"), "throughput/mfu", 1.0),
    (re.compile(r"^(" + NUM + r") tok/s"), "throughput/tokens_per_second", 1.0),
)


def llmc(line: str) -> Progress | None:
    m = _LLMC.search(line)
    if m is not None:
        metrics: dict[str, float] = {}
        for part in m.group(3).split("|"):
            part = part.strip()
            for rx, name, factor in _LLMC_PARTS:
                hit = rx.match(part)
                if hit and (x := number(hit.group(1))) is not None:
                    metrics[name] = x * factor
                    break
        if "throughput/mfu" in metrics and metrics["throughput/mfu"] < 0:
            del metrics["throughput/mfu"]  # -100%: llm.c's "not measured"
        return Progress(int(m.group(1)), metrics, total=int(m.group(2))) if metrics else None
    f = _LLMC_FILE.match(line.strip())
    if f is None or (x := number(f.group(3))) is None:
        return None
    metrics = {"train/loss" if f.group(2) == "tr" else "eval/loss": x}
    for key, value in re.findall(r"(lr|norm):(" + NUM + ")", f.group(4)):
        if (v := number(value)) is not None:
            metrics["optim/learning_rate" if key == "lr" else "grad/norm/total"] = v
    return Progress(int(f.group(1)), metrics)


# ---- nanoGPT ---------------------------------------------------------------------------------------
_NANO_ITER = re.compile(r"iter (\d+): loss (" + NUM + r"), time (" + NUM + r")ms(?:, mfu (" + NUM + r")%)?")
_NANO_EVAL = re.compile(r"step (\d+): train loss (" + NUM + r"), val loss (" + NUM + r")")


def nanogpt(line: str) -> Progress | None:
    m = _NANO_ITER.search(line)
    if m is not None:
        metrics = {"train/loss": number(m.group(2)), "throughput/duration": (number(m.group(3)) or 0) / 1e3}
        mfu = number(m.group(4)) if m.group(4) else None
        if mfu is not None and mfu >= 0:  # -100%: not measured yet
            metrics["throughput/mfu"] = mfu
        return Progress(int(m.group(1)), {k: v for k, v in metrics.items() if v is not None})
    e = _NANO_EVAL.search(line)
    if e is None or (val := number(e.group(3))) is None:
        return None
    return Progress(int(e.group(1)), {"eval/loss": val})


# ---- Levanter --------------------------------------------------------------------------------------
_LEVANTER = re.compile(r"(\d+)/(\d+)\s*\[[^\]]*?\bloss=(" + NUM + r")[^\]]*\]")


def levanter(line: str) -> Progress | None:
    found = _LEVANTER.findall(line)  # a progress bar redrawn with \r: its last state counts
    if not found or (loss := number(found[-1][2])) is None:
        return None
    return Progress(int(found[-1][0]), {"train/loss": loss}, total=int(found[-1][1]))


# ---- the formats -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LineFormat:
    name: str
    hints: tuple[str, ...]  # a progress line contains one of these (a cheap test before any regex)
    parse: Callable[[str], Progress | None]

    def read(self, line: str) -> Progress | None:
        if not any(h in line for h in self.hints):
            return None
        return self.parse(line)


FORMATS: dict[str, LineFormat] = {
    f.name: f
    for f in (
        LineFormat("megatron", ("iteration",), megatron),
        LineFormat("torchtitan", ("step:",), torchtitan),
        LineFormat("hf", ("{'loss'", "{'eval_loss'"), hf),
        LineFormat("llmc", ("step ", "s:"), llmc),
        LineFormat("nanogpt", ("iter ", "train loss"), nanogpt),
        LineFormat("levanter", ("loss=",), levanter),
    )
}


def custom(pattern: str) -> LineFormat:
    """A ``regex:`` format: its named group ``step`` is the step, the others metrics."""
    rx = re.compile(pattern)
    names = {g: g.replace("__", "/") for g in rx.groupindex if g != "step"}

    def parse(line: str) -> Progress | None:
        m = rx.search(line)
        if m is None:
            return None
        metrics = {
            names[g]: x for g in names if m.group(g) is not None and (x := number(m.group(g))) is not None
        }
        raw = m.group("step")
        return Progress(int(raw) if raw and raw.isdigit() else None, metrics) if metrics else None

    return LineFormat(f"regex:{pattern}", ("",), parse)


def check_custom(pattern: str) -> str:
    """The pattern if it is a usable ``regex:`` format; ValueError says why not."""
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    if "step" not in rx.groupindex:
        raise ValueError("name the step: a group (?P<step>\\d+)")
    if len(rx.groupindex) < 2:
        raise ValueError("name at least one metric group, e.g. (?P<train__loss>[0-9.eE+-]+)")
    return pattern


def format_of(name: str) -> LineFormat:
    return custom(name.removeprefix("regex:")) if name.startswith("regex:") else FORMATS[name]


def detect(lines: list[str]) -> tuple[LineFormat | None, int]:
    """The trainer format whose progress lines are among ``lines`` and how many it parsed (the most
    wins; a tie decides nothing); (None, 0): none."""
    counts = sorted(
        ((sum(1 for line in lines if f.read(line) is not None), f.name) for f in FORMATS.values()),
        reverse=True,
    )
    (n, best), (second, _) = counts[0], counts[1]
    if n == 0 or n == second:
        return None, 0
    return FORMATS[best], n
