"""What a pack declares for the pages: the kind of run it is for, and the panels that show its health.

A pack (or a rule file) may declare, beside its ``rules``:

- ``run_kind``: the kind of run the pack watches (``pretraining``, ``sft``, ``rl``, or a new one), the
  canonical metrics that mark such a run (``evidence``) and the one the overview shows for it
  (``headline``: its sparkline and figure). A run's kind is set in the watch config, or inferred from
  the evidence of the kinds in force (``Layouts.infer``).
- ``panels``: the charts of the run page, in order. A panel draws one or more series (a metric, its
  transform, the band around it) against the run's time axis, and reference lines (a rule's own
  baseline, the highest a metric reached, a value from the watch config). A panel is for the pack's kind
  (or the ``kinds`` it names; every kind when the pack declares none) and is drawn when the run logged
  any of its metrics. A new pack brings its panels with it: the page template knows none of them.

Pure data, validated where the YAML is read (monitor.rules.loader: file:line:field errors).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

OTHER = "other"  # a run no declared kind fits
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _kind_name(v: str) -> str:
    if not _NAME.match(v):
        raise ValueError("a kind is a lower-case word of letters, digits, '_' or '-' (e.g. rl, sft)")
    return v


class RunKind(_Strict):
    name: str = Field(description="pretraining, sft, rl, or a kind of your own")
    evidence: list[str] = Field(min_length=1, description="canonical metrics only such runs log")
    min_evidence: int = Field(default=1, ge=1, description="how many of them make a run this kind")
    headline: str = Field(description="the metric the overview shows for such a run (sparkline, figure)")
    headline_label: str | None = Field(default=None, description="its name on the overview (default: title)")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _kind_name(v)

    @model_validator(mode="after")
    def _enough(self) -> RunKind:
        if self.min_evidence > len(self.evidence):
            raise ValueError(f"min_evidence {self.min_evidence} is more than the {len(self.evidence)} given")
        return self


class Band(_Strict):
    """The shaded band around a series: ``std`` (mean ± a standard deviation logged beside it), or
    ``min`` and ``max`` metrics (the batch's shortest and longest response). None of them: the min..max
    of the series' own values in each bucket."""

    std: str | None = None
    min: str | None = None
    max: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Band:
        if self.std is not None and (self.min is not None or self.max is not None):
            raise ValueError("give std, or min and max, not both")
        if (self.min is None) != (self.max is None):
            raise ValueError("give both min and max")
        if self.std is None and self.min is None:
            raise ValueError("give std, or min and max (leave band out for the bucket's own min..max)")
        return self


class Series(_Strict):
    metric: str = Field(description="a canonical metric name (monitor/profiles)")
    label: str | None = Field(default=None, description="its name in the legend (default: the metric)")
    transform: Literal["none", "percent", "rate"] = Field(
        default="none", description="percent: a share 0..1 shown x100; rate: per second of a running total"
    )
    axis: Literal["left", "right"] = "left"
    band: Band | None = None


class Line(_Strict):
    """A horizontal reference line; exactly one source of its value. None known yet: not drawn."""

    label: str
    rule: str | None = Field(default=None, description="a rule whose detector publishes ``figure``")
    figure: str = Field(default="baseline", description="baseline or threshold (a spike rule's)")
    highest_of: str | None = Field(default=None, description="the highest value this metric reached ...")
    when: str | None = Field(default=None, description="... in buckets where this metric was above zero")
    setting: str | None = Field(default=None, description="a value of the watch's ``references``")
    axis: Literal["left", "right"] = "left"

    @model_validator(mode="after")
    def _one_source(self) -> Line:
        given = [k for k in ("rule", "highest_of", "setting") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("say where the value comes from: one of rule, highest_of or setting")
        if self.when is not None and self.highest_of is None:
            raise ValueError("when goes with highest_of")
        return self


class Panel(_Strict):
    id: str = Field(description="unique on the page: the chart's element is chart-<id>")
    title: str
    unit: str = Field(default="", description="of the left axis (shown after the title)")
    right_unit: str = Field(default="", description="of the right axis, if a series uses it")
    log: bool = Field(default=False, description="a logarithmic left axis")
    series: list[Series] = Field(min_length=1, max_length=6)
    lines: list[Line] = Field(default_factory=list, max_length=6)
    kinds: list[str] | None = Field(default=None, description="default: the pack's run_kind, else every kind")

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not re.match(r"^[a-z0-9][a-z0-9_-]{0,47}$", v):
            raise ValueError("use lower-case letters, digits, '_' or '-' (it names the chart's element)")
        return v

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else [_kind_name(k) for k in v]

    def metrics(self) -> list[str]:
        """Every metric the panel reads (its series, their bands, its lines)."""
        out: list[str] = []
        for s in self.series:
            out.append(s.metric)
            if s.band is not None:
                out.extend(m for m in (s.band.std, s.band.min, s.band.max) if m)
        for line in self.lines:
            out.extend(m for m in (line.highest_of, line.when) if m)
        return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Layout:
    """What one pack or rule file declares for the pages."""

    origin: str  # "pack rl", or the rule file's path
    kind: RunKind | None = None
    panels: tuple[Panel, ...] = ()

    def panel_kinds(self, panel: Panel) -> list[str] | None:
        if panel.kinds is not None:
            return panel.kinds
        return [self.kind.name] if self.kind is not None else None


@dataclass(frozen=True)
class Layouts:
    """The layouts of the packs and rule files in force, in their order."""

    layouts: tuple[Layout, ...] = ()

    def kinds(self) -> list[RunKind]:
        seen: dict[str, RunKind] = {}
        for layout in self.layouts:
            if layout.kind is not None and layout.kind.name not in seen:
                seen[layout.kind.name] = layout.kind
        return list(seen.values())

    def kind_names(self) -> list[str]:
        return [k.name for k in self.kinds()] + [OTHER]

    def evidence(self) -> frozenset[str]:
        """Every metric some kind's inference or headline needs: what a run's stats keep track of."""
        return frozenset(m for k in self.kinds() for m in (*k.evidence, k.headline))

    def infer(self, seen: Iterable[str]) -> tuple[str, list[str]]:
        """The run's kind from the metrics it logged, and the evidence for it. The kind with the most of
        its evidence present wins (at least its ``min_evidence``); ties go to the kind that asks for more
        evidence (the more specific claim: an RL run built on the Hugging Face Trainer also logs an SFT
        run's epochs and token count), then to the larger share of its evidence, then to the kind
        declared first. None fits: ``other``."""
        present = set(seen)
        best: tuple[int, int, float, int] | None = None
        found: tuple[str, list[str]] = (OTHER, [])
        for order, kind in enumerate(self.kinds()):
            hits = [m for m in kind.evidence if m in present]
            if len(hits) < kind.min_evidence:
                continue
            score = (len(hits), kind.min_evidence, len(hits) / len(kind.evidence), -order)
            if best is None or score > best:
                best, found = score, (kind.name, hits)
        return found

    def headline(self, kind: str | None) -> tuple[str, str]:
        """The metric the overview shows for a run of ``kind`` and its label (the loss when the kind
        declares none)."""
        for k in self.kinds():
            if k.name == kind:
                return k.headline, k.headline_label or _title(k.headline)
        return "train/loss", "Loss"

    def panels_for(self, kind: str | None) -> list[Panel]:
        """The panels for a run of ``kind``, in pack order (ids unique: the first wins). A run of no
        declared kind gets every panel."""
        out: dict[str, Panel] = {}
        for layout in self.layouts:
            for panel in layout.panels:
                kinds = layout.panel_kinds(panel)
                if kind in (None, OTHER) or kinds is None or kind in kinds:
                    out.setdefault(panel.id, panel)
        return list(out.values())

    def rules_drawn(self) -> frozenset[str]:
        """The rules whose figures some panel draws as a line (the engine stores those figures)."""
        return frozenset(ln.rule for lay in self.layouts for p in lay.panels for ln in p.lines if ln.rule)


def _title(metric: str) -> str:
    last = metric.rstrip("/").split("/")
    words = last[-2] if last[-1] in ("mean", "total") and len(last) > 1 else last[-1]
    return words.replace("_", " ").capitalize()


def layout_problems(
    layouts: Layouts, rules: Iterable[str], watch_kinds: dict[str, str]
) -> list[tuple[str, str]]:
    """(field, message) for what refers to nothing: a line's rule that is not loaded, a panel's kind no
    pack declares, a watch's ``kind`` (its config field -> the kind) no pack declares."""
    names, kinds = set(rules), set(layouts.kind_names())
    out = []
    for layout in layouts.layouts:
        for panel in layout.panels:
            where = f"{layout.origin}: panel {panel.id!r}"
            for line in panel.lines:
                if line.rule and line.rule not in names:
                    out.append(
                        ("rules", f"{where} draws a figure of rule {line.rule!r}, which is not loaded")
                    )
            for k in panel.kinds or ():
                if k not in kinds:
                    out.append(("rules", f"{where} is for kind {k!r}, which no pack in force declares"))
    for field, kind in watch_kinds.items():
        if kind not in kinds:
            known = ", ".join(sorted(kinds))
            out.append((field, f"kind {kind!r} is not declared by the packs in force (known: {known})"))
    return out
