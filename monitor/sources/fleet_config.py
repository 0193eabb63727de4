"""Settings of a Prometheus target's fleet queries: per-member series (one per GPU, or per host) for
the run's fleet raster and the culprit hints on alerts (``monitor.fleet``).

Off unless the target says ``fleet: {}`` (or ``fleet: true``): the defaults below then read the
run's GPUs from dcgm-exporter (members named by its ``Hostname`` and ``gpu`` labels) and its hosts
from node-exporter (``instance``, its ``:port`` dropped so that a host's GPUs and its network carry
the same name). Each metric costs one range query per run and poll, whatever the number of members.

A query must return one series per member, carrying the member's labels: ``sum by (instance)``
(not ``sum``) for per-host rates. Templates are those of the target's queries (``{pod_selector}``,
``{node_selector}``, ``{run}``...).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from monitor.durations import Duration
from monitor.fleet.units import KNOWN_UNITS
from monitor.sources.prometheus_templates import check_template

_NET_DEVICES = 'device!~"lo|veth.*|docker.*|cali.*|flannel.*|cni.*|virbr.*"'
# DCGM clock event reasons: bit 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power
# brake (idle, application clocks, SW power cap and sync boost are not slowdowns worth naming).
_SLOWDOWN = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{pod_selector}}"


class FleetQuery(BaseModel):
    """One fleet metric: a PromQL template returning one series per member."""

    model_config = ConfigDict(extra="forbid")

    expr: str = Field(min_length=1, description="PromQL template, one series per member")
    label: str = Field(min_length=1, max_length=60, description='what people call it, e.g. "SM active"')
    unit: str = Field(default="", description="ratio, fraction, celsius, bytes_per_second, watts, megahertz")
    host: str = Field(default="Hostname", min_length=1, description="the label naming the member's host")
    device: str | None = Field(
        default="gpu", description="the label naming the device on the host; null: one member per host"
    )
    device_word: str = Field(default="GPU", max_length=32, description='what a device is called ("GPU")')

    @field_validator("expr")
    @classmethod
    def _template(cls, v: str) -> str:
        check_template(v)
        return v

    @field_validator("unit")
    @classmethod
    def _unit(cls, v: str) -> str:
        if v not in KNOWN_UNITS:
            raise ValueError(f"unknown unit {v!r}; known: {', '.join(sorted(u for u in KNOWN_UNITS if u))}")
        return v


def _gpu(expr: str, label: str, unit: str) -> FleetQuery:
    return FleetQuery(expr=expr, label=label, unit=unit)


def _host(expr: str, label: str) -> FleetQuery:
    return FleetQuery(expr=expr, label=label, unit="bytes_per_second", host="instance", device=None)


def _net(direction: str) -> str:
    selector = f"{{{{node_selector}}, {_NET_DEVICES}}}"
    return f"sum by (instance) (rate(node_network_{direction}_bytes_total{selector}[2m]))"


DEFAULT_FLEET: dict[str, FleetQuery] = {
    "sm_active": _gpu("DCGM_FI_PROF_SM_ACTIVE{{pod_selector}}", "SM active", "ratio"),
    "gpu_temp": _gpu("DCGM_FI_DEV_GPU_TEMP{{pod_selector}}", "GPU temperature", "celsius"),
    "gpu_slowdown": _gpu(
        f"clamp_max(floor({_SLOWDOWN} / 8) % 2 + floor({_SLOWDOWN} / 32) % 8, 1)",
        "clock slowdown",
        "fraction",
    ),
    "net_rx": _host(_net("receive"), "network rx"),
    "net_tx": _host(_net("transmit"), "network tx"),
    "disk_read": _host(
        "sum by (instance) (rate(node_disk_read_bytes_total{{node_selector}}[2m]))", "disk read"
    ),
    "disk_write": _host(
        "sum by (instance) (rate(node_disk_written_bytes_total{{node_selector}}[2m]))", "disk write"
    ),
}


class FleetSettings(BaseModel):
    """Per-member queries of a Prometheus target and the bounds of the raster they fill."""

    model_config = ConfigDict(extra="forbid")

    metrics: dict[str, FleetQuery | None] = Field(
        default_factory=dict, description="name -> query; merged over the defaults, null drops one"
    )
    recent: Duration = Field(default=3600.0, description="how far back the raster keeps every step")
    columns: int = Field(
        default=256, ge=16, le=4096, description="older columns kept (they merge as the run grows)"
    )
    max_members: int = Field(default=4096, ge=1, le=16384, description="rows kept per metric")

    @field_validator("metrics")
    @classmethod
    def _names(cls, v: dict[str, FleetQuery | None]) -> dict[str, FleetQuery | None]:
        for name in v:
            if not name or len(name) > 60 or not all(c.isalnum() or c in "_-" for c in name):
                raise ValueError(f"fleet metric name {name!r}: use letters, digits, '_' and '-' (at most 60)")
        return v

    @field_validator("recent")
    @classmethod
    def _recent(cls, v: float) -> float:
        if v < 60:
            raise ValueError("must be at least 1m")
        return v

    def all_metrics(self) -> dict[str, FleetQuery]:
        out = dict(DEFAULT_FLEET)
        for name, q in self.metrics.items():
            if q is None:
                out.pop(name, None)
            else:
                out[name] = q
        return out
