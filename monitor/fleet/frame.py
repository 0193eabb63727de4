"""``FleetFrame``: one fleet metric of one run as a source read it in one poll: every member (a GPU on
a host, or a host), a few timestamps, a value per member and timestamp (NaN where there was none).

Members are ``(host, device)``; ``device`` is None for per-host metrics (network, disks). A host name
read from a label like node-exporter's ``instance`` ("node-17:9100") loses its port, so that a host's
GPUs and its network counters carry the same name ("node-17").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MAX_MEMBERS = 16_384  # hard limit at the boundary; the configured limit (``max_members``) is lower
MAX_TIMES = 11_000  # as many points as one Prometheus range query returns
MAX_NAME = 200

Member = tuple[str, str | None]

_PORT = re.compile(r":\d{1,5}$")
_DIGITS = re.compile(r"(\d+)")


def host_name(value: str) -> str:
    """A host label's value as a host name: without a ``:port`` suffix, at most 200 characters."""
    return _PORT.sub("", value.strip())[:MAX_NAME]


def natural_key(member: Member) -> tuple:
    """Sort key: node-2 before node-10, GPU 2 before GPU 10."""

    def split(text: str) -> tuple:
        return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(text))

    host, device = member
    return (split(host), () if device is None else split(device))


def member_name(member: Member, device_word: str | None) -> str:
    """ "node-17 GPU 3", or "node-17" for a host."""
    host, device = member
    if device is None:
        return host
    return f"{host} {device_word or 'device'} {device}"


@dataclass(frozen=True)
class FleetFrame:
    run: str
    metric: str  # the fleet metric's name in the config, e.g. "sm_active"
    label: str  # how people call it, e.g. "SM active"
    unit: str  # ratio | fraction | celsius | bytes_per_second | "" (see ``units``)
    device_word: str | None  # what a member's device is called ("GPU"); None: members are hosts
    step: float  # seconds between the frame's timestamps (the source's resolution)
    members: tuple[Member, ...]
    times: tuple[float, ...]
    values: tuple[tuple[float, ...], ...]  # values[i][j]: member i at times[j]

    @property
    def empty(self) -> bool:
        return not self.members or not self.times


def clean_frame(frame: object) -> FleetFrame | None:
    """The frame as the engine may trust it (sizes agree, times finite and increasing, values floats
    with NaN for anything else), or None when nothing usable is in it. Applied where a source's data
    enters herowatch (``PollResult.validated``)."""
    if not isinstance(frame, FleetFrame):
        return None
    if not isinstance(frame.run, str) or not 0 < len(frame.run) <= MAX_NAME:
        return None
    if not isinstance(frame.metric, str) or not 0 < len(frame.metric) <= MAX_NAME:
        return None
    if not (isinstance(frame.step, int | float) and math.isfinite(frame.step) and frame.step > 0):
        return None
    times = tuple(float(t) for t in frame.times[:MAX_TIMES])
    if not times or not all(math.isfinite(t) for t in times):
        return None
    if any(b <= a for a, b in zip(times, times[1:], strict=False)):
        return None
    members: list[Member] = []
    rows: list[tuple[float, ...]] = []
    seen: set[Member] = set()
    for member, row in zip(frame.members[:MAX_MEMBERS], frame.values, strict=False):
        host, device = member
        key = (str(host)[:MAX_NAME], None if device is None else str(device)[:MAX_NAME])
        if not key[0] or key in seen:
            continue
        seen.add(key)
        members.append(key)
        values = [_number(v) for v in tuple(row)[: len(times)]]
        rows.append(tuple(values) + (math.nan,) * (len(times) - len(values)))
    if not members:
        return None
    return FleetFrame(
        frame.run,
        frame.metric,
        str(frame.label)[:MAX_NAME],
        str(frame.unit)[:32],
        None if frame.device_word is None else str(frame.device_word)[:32],
        float(frame.step),
        tuple(members),
        times,
        tuple(rows),
    )


def _number(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return math.nan
    f = float(v)
    return f if math.isfinite(f) else math.nan
