"""Recorded traces: JSON Lines of samples (the contract is docs/trace-format.md).

``iter_trace`` is a fast, strict parser: an iterator of Samples whose errors name the line number
and the field, never a traceback. ``TraceWriter``/``format_sample`` write the same format back
(``herowatch record`` uses them); what the writer writes, the parser reads back unchanged.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from monitor.samples import ALERT_METRIC, NON_FINITE_WORDS, JobAlert, Sample, alert_from_dict, alert_to_dict
from monitor.sources.registry import kinds as source_kinds

STATES = frozenset({"running", "crashed", "finished", "failed", "killed", "preempted", "pending", "unknown"})


@functools.cache
def _source_names() -> frozenset[str]:
    """The registered source kinds (monitor.sources.registry): what a sample's ``source`` may say."""
    return frozenset(source_kinds())


KNOWN_FIELDS = ("t", "run", "step", "metrics", "state", "source", "labels", "source_error", "alert")
_DECODER = json.JSONDecoder()


class TraceError(ValueError):
    """A line of a trace that does not follow the format: where, which field, what is wrong."""

    def __init__(self, path: str, line: int, field: str, message: str) -> None:
        self.path, self.line, self.field, self.message = path, line, field, message
        super().__init__(str(self))

    def __str__(self) -> str:
        field = f" {self.field}:" if self.field else ""
        return f"{self.path}:{self.line}:{field} {self.message}"


class _Bad(Exception):
    def __init__(self, field: str, message: str) -> None:
        self.field, self.message = field, message


def parse_time(value: object) -> float:
    """Epoch seconds from a number or an RFC 3339 string (which must carry its offset, e.g. Z)."""
    if type(value) is float or type(value) is int:
        if type(value) is int and abs(value) > 1e300:  # float() of a 400-digit int is OverflowError
            raise ValueError("must be a finite number of seconds")
        if not math.isfinite(value):
            raise ValueError("must be a finite number of seconds")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            dt = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not an RFC 3339 time (e.g. 2024-05-01T12:00:00Z)") from None
        if dt.tzinfo is None:
            raise ValueError(f"{value!r} has no UTC offset: RFC 3339 needs one (e.g. Z or +02:00)")
        return dt.timestamp()
    raise ValueError(f"expected epoch seconds or an RFC 3339 string, got {_show(value)}")


def _show(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(value: object) -> float:
    t = type(value)
    if t is float:
        return value
    if t is int:
        try:
            return float(value)
        except OverflowError:  # e.g. 10**400 written out: no float holds it
            raise ValueError(f"{_show(value)} is out of range for a number") from None
    if value is None:
        return math.nan
    if t is bool:
        return 1.0 if value else 0.0
    if t is str:
        word = value.strip().lower()
        if word in NON_FINITE_WORDS:
            return NON_FINITE_WORDS[word]
    raise ValueError(f'expected a number, null, "NaN" or "Infinity", got {_show(value)}')


def _metrics(raw: object) -> Mapping[str, float]:
    if type(raw) is not dict:
        raise _Bad("metrics", f"expected an object of name -> number, got {_show(raw)}")
    for v in raw.values():
        if type(v) is not float:
            break
    else:
        return raw  # the fast path: every value already a float
    out = {}
    for name, v in raw.items():
        try:
            out[name] = _number(v)
        except ValueError as exc:
            raise _Bad(f"metrics.{name}", str(exc)) from None
    return out


def _sample(obj: object) -> Sample:
    if type(obj) is not dict:
        raise _Bad("", f"expected a JSON object per line, got {_show(obj)}")
    get = obj.get
    t = get("t")
    if type(t) is not float:
        if t is None:
            raise _Bad("t", "required field is missing")
        try:
            t = parse_time(t)
        except ValueError as exc:
            raise _Bad("t", str(exc)) from None
    elif t != t or t in (math.inf, -math.inf):
        raise _Bad("t", "must be a finite number of seconds")
    run = get("run")
    if type(run) is not str or not run:
        raise _Bad(
            "run",
            "required field is missing" if run is None else f"expected a non-empty string, got {_show(run)}",
        )
    step = get("step")
    if step is not None and type(step) is not int:
        if type(step) is float and step.is_integer():
            step = int(step)
        else:
            raise _Bad("step", f"expected an integer, got {_show(step)}")
    metrics = get("metrics")
    metrics = _metrics(metrics) if metrics is not None else {}
    state = get("state")
    if state is not None and (type(state) is not str or state not in STATES):
        raise _Bad("state", f"expected one of {', '.join(sorted(STATES))}, got {_show(state)}")
    source = get("source")
    if source is not None and (type(source) is not str or source not in _source_names()):
        raise _Bad("source", f"expected one of {', '.join(sorted(_source_names()))}, got {_show(source)}")
    labels = get("labels")
    if labels is not None:
        if type(labels) is not dict or not all(type(v) is str for v in labels.values()):
            raise _Bad("labels", f"expected an object of name -> string, got {_show(labels)}")
    error = get("source_error")
    if error is not None and type(error) is not str:
        raise _Bad("source_error", f"expected a string, got {_show(error)}")
    alert = get("alert")
    if alert is None:
        return Sample(t, run, step, metrics, state, source, labels, error)
    return _with_alert(Sample(t, run, step, metrics, state, source, labels, error), alert)


def _with_alert(sample: Sample, raw: object) -> Sample:
    """A line with a custom alert: the alert checked, and the metric that carries it to its rules."""
    try:
        alert: JobAlert = alert_from_dict(raw)
    except ValueError as exc:
        raise _Bad("alert", str(exc)) from None
    metrics = {**sample.metrics, ALERT_METRIC: alert.metric()}
    return Sample(
        sample.t,
        sample.run,
        sample.step,
        metrics,
        sample.state,
        sample.source,
        sample.labels,
        sample.source_error,
        alert,
    )


def _lines(source: str | Path | Iterable[str | bytes]) -> Iterator[str | bytes]:
    if isinstance(source, str | Path):
        with open(source, "rb") as fh:
            yield from fh
    else:
        yield from source


def iter_trace(
    source: str | Path | Iterable[str | bytes],
    path: str | None = None,
    on_error: Callable[[TraceError], None] | None = None,
) -> Iterator[Sample]:
    """The samples of a trace, in file order. ``source`` is a file path or an iterable of lines.

    A bad line raises TraceError (``path:line: field: message``); with ``on_error`` the error is
    passed to it instead and the line skipped. Blank lines are ignored. A run's samples must be in
    time order (but for a backlog after an outage: ``Backlogs``); runs may interleave freely.
    """
    name = path or (str(source) if isinstance(source, str | Path) else "<trace>")
    raw_decode = _DECODER.raw_decode  # json.loads without its two whitespace regex matches
    last_t: dict[str, float] = {}
    backlog = Backlogs()
    for lineno, line in enumerate(_lines(source), 1):
        try:
            if type(line) is bytes:
                line = line.decode("utf-8")
            obj, end = raw_decode(line)
            if end != len(line) and not line[end:].isspace():
                raise ValueError("extra data")
        except (ValueError, RecursionError):
            # the slow path: leading whitespace (which raw_decode refuses), a blank or a bad line
            try:
                if type(line) is bytes:
                    line = line.decode("utf-8", errors="strict")
                if not line.strip():
                    continue
                obj = json.loads(line)
            except UnicodeDecodeError:
                err = TraceError(name, lineno, "", "not UTF-8 text")
                if on_error is None:
                    raise err from None
                on_error(err)
                continue
            except (ValueError, RecursionError) as exc:
                msg = "nested too deeply" if isinstance(exc, RecursionError) else getattr(exc, "msg", exc)
                err = TraceError(name, lineno, "", f"not valid JSON: {msg}")
                if on_error is None:
                    raise err from None
                on_error(err)
                continue
        try:
            sample = _sample(obj)
        except _Bad as bad:
            err = TraceError(name, lineno, bad.field, bad.message)
        else:
            prev = last_t.get(sample.run)
            if prev is None or sample.t >= prev:
                last_t[sample.run] = sample.t
                backlog.note(sample, prev)
                yield sample
                continue
            if backlog.admits(sample):
                yield sample
                continue
            err = _order(name, lineno, sample, last_t)
        if on_error is None:
            raise err
        on_error(err)


class Backlogs:
    """The one exception to a run's time order: a backlog. After ``source_error`` lines (an outage),
    rows with a step may go back to the run's last line before the outage: they were logged during it
    and read when it ended, with their own times (a W&B backlog)."""

    def __init__(self) -> None:
        self._since: dict[str, float] = {}  # run -> the time of its last line before its latest outage
        self._erring: set[str] = set()

    def note(self, sample: Sample, prev: float | None) -> None:
        """A line in time order (``prev``: the run's line before it)."""
        run = sample.run
        if sample.source_error is None:
            if sample.step is not None:  # rows flow again (an answer with no news may be a flicker)
                self._erring.discard(run)
        elif run not in self._erring:
            self._erring.add(run)
            self._since[run] = sample.t if prev is None else prev

    def admits(self, sample: Sample) -> bool:
        """May this line, older than the run's latest, be read as part of a backlog?"""
        since = self._since.get(sample.run)
        return (
            since is not None
            and sample.step is not None
            and sample.source_error is None
            and sample.t >= since
        )


def _order(name: str, lineno: int, sample: Sample, last_t: dict[str, float]) -> TraceError | None:
    prev = last_t.get(sample.run)
    if prev is None or sample.t >= prev:
        last_t[sample.run] = sample.t
        return None
    return TraceError(
        name,
        lineno,
        "t",
        f"goes back in time for run {sample.run!r} ({sample.t!r} after {prev!r}): "
        "a run's lines must be in time order",
    )


def read_trace(source: str | Path | Iterable[str | bytes], path: str | None = None) -> list[Sample]:
    return list(iter_trace(source, path))


# ---- writing ---------------------------------------------------------------------------------
def _out_number(v: float) -> float | str:
    if v != v:
        return "NaN"
    if v == math.inf:
        return "Infinity"
    if v == -math.inf:
        return "-Infinity"
    return v


def sample_to_dict(sample: Sample) -> dict[str, Any]:
    out: dict[str, Any] = {"t": sample.t, "run": sample.run}
    if sample.step is not None:
        out["step"] = sample.step
    if sample.metrics:
        out["metrics"] = {k: _out_number(float(v)) for k, v in sample.metrics.items()}
    for name in ("state", "source", "labels", "source_error"):
        value = getattr(sample, name)
        if value is not None:
            out[name] = dict(value) if name == "labels" else value
    if sample.alert is not None:
        out["alert"] = alert_to_dict(sample.alert)
    return out


def format_sample(sample: Sample) -> str:
    """One trace line (without the newline). Non-finite values are written as "NaN"/"Infinity"."""
    return json.dumps(sample_to_dict(sample), separators=(",", ":"), allow_nan=False, ensure_ascii=False)


class TraceWriter:
    """Appends samples to a trace file (or any text stream), one line each."""

    def __init__(self, target: str | Path | IO[str], append: bool = False) -> None:
        if isinstance(target, str | Path):
            self._fh: IO[str] = open(target, "a" if append else "w", encoding="utf-8")  # noqa: SIM115
            self._owned = True
        else:
            self._fh, self._owned = target, False
        self.count = 0

    def write(self, sample: Sample) -> None:
        self._fh.write(format_sample(sample) + "\n")
        self.count += 1

    def write_all(self, samples: Iterable[Sample]) -> int:
        n = 0
        for sample in samples:
            self.write(sample)
            n += 1
        return n

    def flush(self) -> None:
        self._fh.flush()

    def close(self) -> None:
        if self._owned:
            self._fh.close()
        else:
            self._fh.flush()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
