"""An alert's labels and fingerprint, and its annotations rendered for a run: what the evaluator names
and says. Pure: the run's labels and title come from the callables it is given."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from alerts.model import Finding, fingerprint
from monitor.engine.alert_events import AlertKey
from monitor.rules.spec import RuleSpec
from monitor.samples import RUN_FACTS, scheduler_says

MAX_CACHED = 100_000  # label sets whose fingerprint is remembered


class AlertNaming:
    def __init__(
        self,
        labels_for_run: Callable[[str], Mapping[str, str]],
        title_for_run: Callable[[str], str],
    ) -> None:
        self._labels_for_run = labels_for_run
        self._title_for_run = title_for_run  # what ``{run}`` says in annotations (its display name)
        self._fp_cache: dict[tuple[tuple[str, str], ...], str] = {}

    def key(self, rule: RuleSpec, run: str, finding: Finding | None = None) -> AlertKey:
        """The alert instance of ``rule`` on ``run`` (and the finding's own labels): labels, fingerprint."""
        labels = {
            **{k: v for k, v in self._labels_for_run(run).items() if k not in RUN_FACTS},
            **rule.labels,
            "alertname": rule.name,
            "run": run,
            "severity": rule.severity.value,
        }
        if rule.metric:
            labels["metric"] = rule.metric
        if finding is not None and finding.extra_labels:
            labels.update(finding.extra_labels)
        cache_key = tuple(labels.items())
        fp = self._fp_cache.get(cache_key)
        if fp is None:
            if len(self._fp_cache) > MAX_CACHED:
                self._fp_cache.clear()
            fp = self._fp_cache[cache_key] = fingerprint(labels)
        return AlertKey(rule, run, labels, fp)

    def annotations(self, rule: RuleSpec, run: str, finding: Finding) -> dict[str, str]:
        """The rule's annotations for ``run``: ``{run}`` is what people call the run (its display name,
        with its project where that name is shared), ``{run_id}`` herowatch's id of it, ``{scheduler}``
        the scheduler's words on its state ("; Slurm says OUT_OF_MEMORY", "" without a scheduler)."""
        shown = self._title_for_run(run)
        says = scheduler_says(self._labels_for_run(run))
        values = {
            "scheduler": f"; {says}" if says else "",
            "run": shown,
            "run_id": run,
            "value": finding.value,
            "threshold": finding.threshold,
            "step": finding.step,
            "reason": finding.reason,
        }
        out = {k: rule.render(k, **values) for k in rule.annotations}
        out.setdefault("summary", f"{shown}: {rule.name}: {finding.reason}")
        return out
