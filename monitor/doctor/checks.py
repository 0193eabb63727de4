"""The checks of ``herowatch doctor``, as ``serve`` would meet the set-up: each source polled once with
the watch's own settings (the runs a watch picks up, their history, the Prometheus queries per run),
each run's keys judged against every rule's inputs by the very coverage code the engine runs (with
the detected trainer profile and the fix), and each receiver asked whether it could deliver
(``check()`` of its notifier: Slack's auth, membership and scopes, a webhook's reachability).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from monitor.config.schema import Watch, WatchConfig
from monitor.doctor.report import FAIL, OK, WARN, Report
from monitor.doctor.slack_doors import check_slack_doors
from monitor.doctor.source_checks import check_push, no_runs_fix, source_fix
from monitor.engine.blind_watch import promised
from monitor.engine.blindness import absent_watched, describe
from monitor.engine.evaluator import Evaluator
from monitor.profiles import Vocabulary
from monitor.rules.loader import RuleSet
from monitor.settings import Settings
from monitor.sources.base import PollResult, Target
from monitor.sources.registry import make_source

Progress = Callable[[str], None]


def check_all(cfg: WatchConfig, rules: RuleSet, settings: Settings, progress: Progress) -> Report:
    report = Report()
    for n, watch in enumerate(cfg.watch, 1):
        progress(f"[{n}/{len(cfg.watch)}] watch {watch.name}: reading its sources")
        check_watch(watch, rules, settings, report, progress)
        check_push(watch, settings, report)
    progress("checking the receivers")
    check_receivers(cfg, settings, report)
    check_slack_doors(cfg, settings, report)
    return report


def _poll(
    kind: str, watch: Watch, settings: Settings, known: dict[str, dict[str, str]], names: dict[str, str]
) -> PollResult:
    source = make_source(kind, settings)
    try:
        target = Target(watch.name, watch.targets()[kind], watch.labels, known, names)
        return source.poll(target, {}, time.time()).validated()
    except Exception as exc:  # noqa: BLE001 - a source bug is reported, not raised
        return PollResult(error=f"{type(exc).__name__}: {exc}")
    finally:
        source.close()


def check_watch(watch: Watch, rules: RuleSet, settings: Settings, report: Report, progress: Progress) -> None:
    results: dict[str, PollResult] = {}
    known: dict[str, dict[str, str]] = {}
    titles: dict[str, str] = {}
    names: dict[str, str] = {}  # run id -> its name at its source (what query templates get)
    targets = watch.targets()
    kinds = sorted(targets, key=lambda k: not targets[k].finds_runs)  # trackers first: they find runs
    for kind in kinds:
        progress(f"watch {watch.name}: polling {kind}")
        res = results[kind] = _poll(kind, watch, settings, known, names)
        subject = f"watch {watch.name}: {kind}"
        if res.error:
            report.add(FAIL, subject, f"cannot be read: {res.error}", _source_fix(kind))
            continue
        for info in res.runs:
            known.setdefault(info.run, {k: str(v) for k, v in info.labels.items()})
        runs = sorted({i.run for i in res.runs} | set(res.cursors))
        for info in res.runs:
            titles.setdefault(info.run, info.display_name or info.name or info.run)
            if info.name:
                names.setdefault(info.run, info.name)
        if kind != "prometheus":
            if runs:
                listed = ", ".join(titles.get(r, r) for r in runs[:8]) + (
                    f" and {len(runs) - 8} more" if len(runs) > 8 else ""
                )
                report.add(OK, subject, f"answers; {len(runs)} run(s) this watch picks up: {listed}")
            else:
                report.add(
                    WARN, subject, "answers, but no run matches the watch's selector yet", _selector_fix(kind)
                )
    runs = sorted({r for res in results.values() for r in (*res.cursors, *(i.run for i in res.runs))})
    for run in runs:
        progress(f"watch {watch.name}: judging run {titles.get(run, run)}")
        check_run(watch, run, rules, results, report, titles.get(run, run))


def check_run(
    watch: Watch, run: str, rules: RuleSet, results: dict[str, PollResult], report: Report, title: str = ""
) -> None:
    specs = rules.for_run(watch.rules.overrides, watch.rules.disabled)
    ev = Evaluator(lambda _run: specs)
    vocab = Vocabulary()
    samples = sorted((s for res in results.values() for s in res.samples if s.run == run), key=lambda s: s.t)
    for s in vocab.translate(run, samples, watch.metrics_profile, None, watch.metrics):
        ev.observe(s)
    now = max((s.t for s in samples), default=time.time())
    gaps = {a: why for res in results.values() for a, why in res.gaps.get(run, {}).items()}
    logged = {k for res in results.values() for k in res.logged.get(run, ())}
    keys = sorted(set(vocab.keys(run)) | logged)
    cov = ev.coverage(run, now, frozenset(), promised(watch))
    blind = describe(
        cov, keys, gaps, vocab.renames(run), absent_watched(ev.detectors(run)), vocab.shapes(run)
    )
    unlogged = sorted(
        {i.name for r in cov.rules for i in r.inputs if i.state == "unused" and i.name[:1] != "@"}
    )
    profile = vocab.describe(run) or {}
    counts = _series_counts(results.get("prometheus"), run, gaps)
    report.runs[run] = {
        "watch": watch.name,
        "title": title or run,
        "coverage": cov.to_json(),
        "blind": blind.text if blind else None,
        "profile": profile,
        "keys": keys[:100],
        "series": counts,
        "gaps": gaps,
        "unlogged": unlogged,
    }
    subject = f"run {title or run}"
    said = f"metric names: {profile.get('explain') or 'no sample'}"
    if blind is not None:
        n = len(cov.blind())
        report.add(
            FAIL, subject, f"{n} rule(s) would be watched blind: {blind.text}", _blind_fix(blind.text, gaps)
        )
    elif cov.state == "warming":
        report.add(
            WARN,
            subject,
            f"too young to judge every rule ({said})",
            "run doctor again after a few more steps",
        )
    else:
        seen = sum(1 for r in cov.rules if r.state == "covered")
        report.add(OK, subject, f"{seen} rule(s) get their inputs; {said}")
    if unlogged and cov.state != "warming":
        report.add(OK, subject, "not logged (optional: shown, never paged): " + ", ".join(unlogged))
    if counts:
        report.add(OK if all(counts.values()) else WARN, subject, "series per query: " + _counts(counts))


def _series_counts(res: PollResult | None, run: str, gaps: dict[str, str]) -> dict[str, int]:
    """alias -> series (0 for a query with no series; >0 when values came)."""
    if res is None or res.error:
        return {}
    out: dict[str, int] = {}
    for s in res.samples:
        if s.run == run:
            for alias in s.metrics:
                out[alias] = max(out.get(alias, 0), 1)
    for alias in gaps:
        out.setdefault(alias, 0)
    return dict(sorted(out.items()))


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{a} {'none' if n == 0 else 'ok'}" for a, n in counts.items())


def _blind_fix(text: str, gaps: dict[str, str]) -> str:
    if "map them with" in text or "metrics_profile" in text:
        return "add the mapping to the watch (metrics: {run_key: rule_name}) or set metrics_profile"
    if gaps:
        return (
            "fix the query or its selector under prometheus.queries/selectors (or drop the alias with null)"
        )
    return "log the missing inputs, or disable the rules for this watch (rules.disabled)"


def _source_fix(kind: str) -> str:
    return {
        "wandb": "check WANDB_API_KEY, the entity and project (and WANDB_BASE_URL for a dedicated server)",
        "prometheus": "check prometheus.url and HEROWATCH_PROMETHEUS_TOKEN",
    }.get(kind) or source_fix(kind)


def _selector_fix(kind: str) -> str:
    return "check tags, run_ids, name_pattern and states" if kind == "wandb" else no_runs_fix(kind)


# ---- receivers ------------------------------------------------------------------------------------
def check_receivers(cfg: WatchConfig, settings: Settings, report: Report) -> None:
    from monitor.service import build_notifiers

    for r in cfg.receivers:
        subject = f"receiver {r.name} ({r.kind})"
        if r.kind == "dashboard":
            report.add(OK, subject, "shown on the dashboard, never sent")
            continue
        try:
            notifier = build_notifiers(_only(cfg, r.name), settings)[r.name]
        except ValueError as exc:
            report.add(FAIL, subject, str(exc), "see docs/deploy.md for the receiver's settings")
            continue
        check = getattr(notifier, "check", None)
        if check is None:
            report.add(WARN, subject, "this kind of receiver cannot be checked without sending")
            continue
        try:
            got = check()
        except Exception as exc:  # noqa: BLE001 - a check that breaks is reported
            report.add(FAIL, subject, f"the check failed: {type(exc).__name__}: {exc}")
            continue
        for p in got.problems:
            report.add(FAIL if p.fatal else WARN, subject, p.what, p.fix)
        if got.ok:
            report.add(OK, subject, "; ".join(got.facts) or "can deliver")


def _only(cfg: WatchConfig, name: str) -> Any:
    return cfg.model_copy(update={"receivers": [r for r in cfg.receivers if r.name == name]})
