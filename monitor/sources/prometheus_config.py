"""Settings of a Prometheus target, its default queries, and the PromQL template language.

A target runs named PromQL queries once per run, with the run's labels substituted.

Templates
    ``{name}`` is replaced by the value of ``name`` escaped for a double-quoted PromQL string
    (``job="{job}"``); ``{name:re}`` by the value escaped as a literal regular expression first
    (``pod=~"{run:re}-.*"``: a run id ``llama.70b`` must not also match ``llama-70b``'s pods);
    ``{name:hosts}`` by a Slurm host list (a Slurm job's ``hosts``: ``node[01-04]``) as a regular
    expression of its hosts (``Hostname=~"{hosts:hosts}"``: the job's GPUs, for the fleet hints).
    ``{selector}`` (a name from ``selectors``) is replaced by that selector, itself rendered first.
    PromQL's own braces never clash: a label matcher always holds an operator (``{job="x"}``).

Values for a run, later ones winning: ``job`` = the run's name; the watch's labels; the labels the
watch already knows for the run (``Target.known_runs``, e.g. found by a W&B source); ``run_labels[run]``
from this config; and ``run`` = the run's name. The name is the run's own id at its source (a W&B run's
8-character id, or the name under ``runs``), never herowatch's source-qualified run id
(``wandb:entity/project/id``, monitor.run_ids): that id never reaches PromQL.

Query kinds (what the value of an alias means)
    ``gauge``   the query's value as read. It must return at most one series per run (aggregate it:
                ``min(...)``, ``avg(...)``); several series are reported as a configuration error.
    ``counter`` a cumulative count that never decreases. The query may return one series (``sum(...)``)
                or one per pod/container/GPU; the source follows each series: a drop is a counter
                reset (the process restarted and counts again from zero, so the new value is all new
                increments), and a series that disappears (a replaced pod) keeps what it counted.
                The first read of a run starts from the raw values then present, so without resets
                or replaced series the alias equals the raw ``sum`` of the counters.
    ``events``  a count of events from a series that holds the code of the last event (DCGM's
                ``DCGM_FI_DEV_XID_ERRORS`` holds the last XID, not a count): every change of a series
                to a non-zero value is one event, a series first seen non-zero counts as one. Two
                identical codes in a row on the same GPU between two reads cannot be told apart.

Default aliases, used by the rules (override any of them per watch under ``queries``, or drop one
with ``null``):
    ``oom_kills_total``              counter: OOM kills in the run's containers (cAdvisor's
                                     ``container_oom_events_total``). With kube-state-metrics only,
                                     ``sum(kube_pod_container_status_last_terminated_reason{
                                     reason="OOMKilled", {pod_selector}})`` as a gauge counts the
                                     containers whose last termination was an OOM kill.
    ``restarts_total``               counter: container restarts (kube-state-metrics'
                                     ``kube_pod_container_status_restarts_total``).
    ``gpu_sm_active_ratio``          gauge 0..1: mean SM activity over the run's GPUs (DCGM profiling
                                     field ``DCGM_FI_PROF_SM_ACTIVE``).
    ``xid_errors_total``             events: XID errors seen on the run's GPUs (``DCGM_FI_DEV_XID_ERRORS``).
    ``host_memory_available_bytes``  gauge: the lowest MemAvailable over the run's nodes (node-exporter's
                                     ``node_memory_MemAvailable_bytes``): the node closest to the OOM killer.

Per-GPU and per-host series for the fleet raster and culprit hints: ``fleet`` (``fleet_config``; off
unless set, ``fleet: {}`` for the dcgm-exporter and node-exporter defaults).

Default selectors: ``pod_selector`` = ``pod=~"{run:re}-.*"`` (Kubernetes pods named after the run, as
JobSet and the Kubeflow training operators name them; cAdvisor, kube-state-metrics and dcgm-exporter
with pod mapping all carry ``pod``), ``node_selector`` = ``job="{job}"`` (node-exporter scraped under
a job per run, or any ``job`` the run's labels give). Override them under ``selectors``, e.g.
``pod_selector: 'namespace="train", pod=~"{run:re}-.*"'``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from monitor.durations import Duration
from monitor.run_ids import qualify
from monitor.sources.base import Target
from monitor.sources.bounded import answer_limit_field
from monitor.sources.fleet_config import FleetSettings
from monitor.sources.prometheus_templates import (  # noqa: F401 - the template language's home is there
    TemplateError,
    check_template,
    promql_regex,
    promql_string,
    render,
)
from monitor.sources.registry import SourceTarget, register

QueryKind = Literal["gauge", "counter", "events"]

# Prometheus refuses range queries of more than 11,000 points per series.
MAX_RANGE_POINTS = 11_000

TOKEN_ENV = "HEROWATCH_PROMETHEUS_TOKEN"

_SECRET_HEADER = re.compile(r"authorization|cookie|token|secret|password|api[-_]?key", re.IGNORECASE)


class QuerySpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expr: str = Field(min_length=1, description="PromQL template")
    kind: QueryKind = "gauge"

    @field_validator("expr")
    @classmethod
    def _template(cls, v: str) -> str:
        check_template(v)
        return v


DEFAULT_SELECTORS: dict[str, str] = {
    "pod_selector": 'pod=~"{run:re}-.*"',
    "node_selector": 'job="{job}"',
}

DEFAULT_QUERIES: dict[str, QuerySpec] = {
    "oom_kills_total": QuerySpec(expr="container_oom_events_total{{pod_selector}}", kind="counter"),
    "restarts_total": QuerySpec(
        expr="kube_pod_container_status_restarts_total{{pod_selector}}", kind="counter"
    ),
    "gpu_sm_active_ratio": QuerySpec(expr="avg(DCGM_FI_PROF_SM_ACTIVE{{pod_selector}})"),
    "xid_errors_total": QuerySpec(expr="DCGM_FI_DEV_XID_ERRORS{{pod_selector}}", kind="events"),
    "host_memory_available_bytes": QuerySpec(expr="min(node_memory_MemAvailable_bytes{{node_selector}})"),
}


class PrometheusTarget(SourceTarget):
    finds_runs: ClassVar[bool] = False  # it reads the runs its watch's tracker found (or those listed)

    """Runs read from a Prometheus server's HTTP API. See the module docstring for templates and aliases.

    The bearer token, if the server needs one, comes from the environment (HEROWATCH_PROMETHEUS_TOKEN),
    never from this file.
    """

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="base URL of the server, e.g. http://prometheus:9090")
    runs: list[str] = Field(
        default_factory=list,
        description="run ids to watch; runs another source of the same watch finds are watched as well",
    )
    run_labels: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="run id -> values for its query templates, e.g. {job: trainer-a}"
    )
    selectors: dict[str, str] = Field(
        default_factory=dict, description="selector name -> label matchers template, merged over the defaults"
    )
    queries: dict[str, str | QuerySpec | None] = Field(
        default_factory=dict,
        description="alias -> PromQL template (or {expr, kind}); merged over the defaults, null drops one",
    )
    mode: Literal["range", "instant"] = Field(
        default="range", description="after the warm-up: every step since the last read, or one value at now"
    )
    step: Duration = Field(default=15.0, description="resolution of range queries")
    lookback: Duration = Field(
        default=3600.0,
        description="how far back the first read of a run goes; also the most one poll catches up",
    )
    timeout: Duration = Field(default=10.0, description="per request, and the server's evaluation timeout")
    retries: int = Field(default=2, ge=0, le=10, description="extra attempts after a failed request")
    backoff: Duration = Field(default=0.5, description="first retry delay; doubles each time, with jitter")
    max_concurrency: int = Field(default=4, ge=1, le=64, description="requests in flight to this server")
    max_answer_bytes: int = answer_limit_field()
    headers: dict[str, str] = Field(
        default_factory=dict, description="extra request headers, e.g. X-Scope-OrgID; no credentials"
    )
    forget_after: Duration = Field(
        default=21600.0, description="a counter series unseen this long is no longer followed"
    )
    fleet: FleetSettings | None = Field(
        default=None,
        description="per-GPU and per-host series for the fleet raster and culprit hints: {} (or true) "
        "for the defaults (monitor/sources/fleet_config.py); off when absent",
    )

    @field_validator("fleet", mode="before")
    @classmethod
    def _fleet(cls, v: Any) -> Any:
        return {} if v is True else None if v is False else v

    def promises(self) -> frozenset[str]:
        """What this source queries for every run (coverage): its aliases."""
        return frozenset(self.all_queries())

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        import httpx

        try:
            url = httpx.URL(v)
        except Exception as exc:  # noqa: BLE001 - any parse failure is a config error
            raise ValueError(f"not a URL: {exc}") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("use an http:// or https:// URL, e.g. http://prometheus:9090")
        if url.userinfo:
            raise ValueError(f"no credentials in the URL: put a bearer token in {TOKEN_ENV}")
        return v.rstrip("/")

    @field_validator("headers")
    @classmethod
    def _headers(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if _SECRET_HEADER.search(name):
                raise ValueError(
                    f"header {name!r} looks like a credential: put a bearer token in {TOKEN_ENV}"
                )
        return v

    @field_validator("selectors")
    @classmethod
    def _selectors(cls, v: dict[str, str]) -> dict[str, str]:
        for text in v.values():
            check_template(text)
        return v

    @field_validator("queries")
    @classmethod
    def _queries(cls, v: dict[str, str | QuerySpec | None]) -> dict[str, str | QuerySpec | None]:
        for alias, q in v.items():
            if not alias:
                raise ValueError("an alias cannot be empty")
            if isinstance(q, str):
                if not q.strip():
                    raise ValueError(f"query {alias!r} is empty")
                check_template(q)
        return v

    @field_validator("step", "timeout")
    @classmethod
    def _positive(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("must be more than 0s")
        return v

    @model_validator(mode="after")
    def _points(self) -> PrometheusTarget:
        if self.lookback < self.step:
            raise ValueError("lookback must be at least one step")
        if self.lookback / self.step > MAX_RANGE_POINTS:
            raise ValueError(
                f"lookback / step gives more than {MAX_RANGE_POINTS} points, the most Prometheus returns"
            )
        return self

    def for_backfill(self, run: str | None = None) -> PrometheusTarget:
        """As far back as one range query reaches."""
        return self.model_copy(update={"lookback": self.step * MAX_RANGE_POINTS})

    def all_selectors(self) -> dict[str, str]:
        return {**DEFAULT_SELECTORS, **self.selectors}

    def all_queries(self) -> dict[str, QuerySpec]:
        """The default queries with this target's overrides; a bare string keeps the default's kind."""
        out = dict(DEFAULT_QUERIES)
        for alias, q in self.queries.items():
            if q is None:
                out.pop(alias, None)
            elif isinstance(q, str):
                kind = DEFAULT_QUERIES[alias].kind if alias in DEFAULT_QUERIES else "gauge"
                out[alias] = QuerySpec(expr=q, kind=kind)
            else:
                out[alias] = q
        return out


register(
    "prometheus",
    PrometheusTarget,
    "monitor.sources.prometheus_source:PrometheusSource",
    "named PromQL per run (OOM kills, restarts, GPU and host metrics)",
)


def query_runs(target: Target, source: str) -> dict[str, str]:
    """The runs a target queries, id -> name: those the watch knows (found by another source: their name
    there) and those the config lists (``prometheus:<watch>/<name>``, unless a known run already has
    that name: then it is that run, read by both sources)."""
    cfg: PrometheusTarget = target.config
    runs = {run: target.name_of(run) for run in target.known_runs}
    found = {name for run, name in runs.items() if not run.startswith(f"{source}:")}
    # a run first read here under an id of its own, that a tracker of the watch has found since: read it
    # as the tracker's run only
    runs = {run: name for run, name in runs.items() if not (run.startswith(f"{source}:") and name in found)}
    taken = set(runs.values())
    for name in cfg.runs:
        if name not in taken:
            runs[qualify(source, target.watch, name)] = name
    return runs


def template_values(target: Target, run: str, name: str) -> dict[str, str]:
    """What ``{job}``, ``{run}`` and the other names in a query template stand for, for the run ``run``
    (herowatch's id) whose name at its source is ``name`` (see the module's docstring)."""
    cfg: PrometheusTarget = target.config
    return {
        "job": name,
        **dict(target.labels),
        **dict(target.known_runs.get(run, {})),
        **cfg.run_labels.get(name, {}),
        "run": name,
    }
