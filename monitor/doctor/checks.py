"""The checks of ``herowatch doctor``, as ``serve`` would meet the set-up: each source polled once with
the watch's own settings (the runs a watch picks up, their history, the Prometheus queries per run),
each run's keys judged against every rule's inputs by the very coverage code the engine runs (with
the detected trainer profile and the fix), and each receiver asked whether it could deliver
(``check()`` of its notifier: Slack's auth, membership and scopes, a webhook's reachability).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from alerts.reachability import Cause, cause_in, fix_for
from monitor.config.schema import Watch, WatchConfig
from monitor.doctor.receivers import check_receivers
from monitor.doctor.report import FAIL, OK, UNCHECKED, WARN, Report
from monitor.doctor.slack_doors import check_slack_doors
from monitor.doctor.source_checks import Reach, check_for
from monitor.doctor.source_hints import NO_RUNS_FIXES, SOURCE_FIXES
from monitor.engine.blind_watch import promised
from monitor.engine.blindness import absent_watched, describe
from monitor.engine.evaluator import Evaluator
from monitor.profiles import Vocabulary
from monitor.rules.loader import RuleSet
from monitor.settings import Settings
from monitor.sources.base import PollResult, Target
from monitor.sources.prometheus_config import TOKEN_ENV
from monitor.sources.registry import make_source

Progress = Callable[[str], None]


def check_all(cfg: WatchConfig, rules: RuleSet, settings: Settings, progress: Progress) -> Report:
    report = Report()
    for n, watch in enumerate(cfg.watch, 1):
        progress(f"[{n}/{len(cfg.watch)}] watch {watch.name}: reading its sources")
        check_watch(watch, rules, settings, report, progress)
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


def _look(kind: str, watch: Watch, settings: Settings) -> Reach:
    """The kind's own look before polling (``source_checks``); a kind without one is simply polled."""
    check = check_for(kind)
    if check is None:
        return Reach()
    try:
        return check(watch.targets()[kind], settings)
    except Exception as exc:  # noqa: BLE001 - a check that breaks is reported, not raised
        return Reach(None, facts=[f"its look failed ({type(exc).__name__}: {exc}); polled anyway"])


def check_watch(watch: Watch, rules: RuleSet, settings: Settings, report: Report, progress: Progress) -> None:
    results: dict[str, PollResult] = {}
    known: dict[str, dict[str, str]] = {}
    titles: dict[str, str] = {}
    names: dict[str, str] = {}  # run id -> its name at its source (what query templates get)
    unseen: list[str] = []  # trackers that could not be read: the runs they would find are unknown
    targets = watch.targets()
    kinds = sorted(targets, key=lambda k: not targets[k].finds_runs)  # trackers first: they find runs
    for kind in kinds:
        subject = f"watch {watch.name}: {kind}"
        progress(f"watch {watch.name}: looking at {kind}")
        reach = _look(kind, watch, settings)
        if reach.cause is not None:
            report.add(UNCHECKED, subject, reach.what, reach.fix, str(reach.cause))
            unseen.append(kind)
            continue
        progress(f"watch {watch.name}: polling {kind}")
        res = _poll(kind, watch, settings, known, names)
        if res.error:
            cause = cause_in(res.error)
            if cause is not None:
                report.add(
                    UNCHECKED, subject, f"cannot be read: {res.error}", _source_fix(kind, cause), str(cause)
                )
            else:
                report.add(FAIL, subject, f"cannot be read: {res.error}", _source_fix(kind, None))
            unseen.append(kind)
            continue
        results[kind] = res
        for info in res.runs:
            known.setdefault(info.run, {k: str(v) for k, v in info.labels.items()})
        runs = sorted({i.run for i in res.runs} | set(res.cursors))
        for info in res.runs:
            titles.setdefault(info.run, info.display_name or info.name or info.run)
            if info.name:
                names.setdefault(info.run, info.name)
        answered = "; ".join(reach.facts) or "answers"
        if runs:
            listed = ", ".join(titles.get(r, r) for r in runs[:8]) + (
                f" and {len(runs) - 8} more" if len(runs) > 8 else ""
            )
            verb = "picks up" if targets[kind].finds_runs else "reads"
            report.add(OK, subject, f"{answered}; {len(runs)} run(s) this watch {verb}: {listed}")
        elif not targets[kind].finds_runs and unseen:
            report.add(
                UNCHECKED,
                subject,
                f"{answered}, but its per-run queries were not checked: no run is known, since "
                f"{' and '.join(unseen)} could not be read",
                f"fix {' and '.join(unseen)} first (above), then run doctor again",
                "no run to check",
            )
        else:
            report.add(WARN, subject, f"{answered}, but no run matches the watch yet", _selector_fix(kind))
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
    # one look is all doctor gets: what Prometheus does not hold now is reported, no grace to wait out
    cov = ev.coverage(run, now, frozenset(), promised(watch), look_grace=0.0)
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


def _source_fix(kind: str, cause: Cause | None) -> str:
    if cause is not None and cause != Cause.AUTH:
        return fix_for(cause)
    return {
        "wandb": "check WANDB_API_KEY, the entity and project (and base_url for a dedicated server)",
        "prometheus": f"check prometheus.url, its queries and {TOKEN_ENV}",
        **SOURCE_FIXES,
    }.get(kind, "check the source's settings")


def _selector_fix(kind: str) -> str:
    return {
        "wandb": "check tags, run_ids, name_pattern and states",
        "prometheus": "list the runs under prometheus.runs, or add a tracker (wandb) that finds them",
        **NO_RUNS_FIXES,
    }.get(kind, "")
