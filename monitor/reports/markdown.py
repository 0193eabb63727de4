"""The report as Markdown, for a wiki page or a Slack post (GitHub-flavoured tables)."""

from __future__ import annotations

from monitor.reports import words as w
from monitor.reports.model import LOST_TIME, Report

MAX_PAGES = 60  # rows (incidents) of the page table; the rest are counted
PAGES_NOTE = (
    "One row per incident: the pages of a run whose spans (symptom to resolution, stretched over the goodput "
    "incident under them) overlap, folded; the JSON's `pages` lists each page. "
    "**Likely noise**: every page of it resolved within 10 minutes of firing without an acknowledgement, "
    "or was marked as noise by a person "
    '(an ack or silence comment starting "noise" or "false alarm").'
)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def summary_lines(r: Report) -> list[str]:
    """The headline: goodput, GPU-hours lost and to what, the costliest incident, the noisiest rule."""
    t, g = r.totals, r.gpu_totals
    lines = [f"Goodput {w.pct(t.ratio())} of {w.hours(t.total())} watched over {len(r.runs)} run(s)."]
    if t.source_blind > 0:
        lines[0] = lines[0][:-1] + (
            f"; herowatch could not see {w.hours(t.source_blind)} of it (source blind), "
            "left out of the goodput."
        )
    lost = sorted(((getattr(t, b), b) for b in LOST_TIME), reverse=True)
    parts = [f"{w.BUCKET_WORDS[b]} {w.hours(h)}" for h, b in lost if h > 0]
    if g is not None:
        lines.append(f"Lost {w.gpu_hours(g.badput())}: " + ", ".join(parts) + ".")
    elif parts:
        lines.append(f"Lost {w.hours(t.badput())}: " + ", ".join(parts) + ". (hours only: no GPU count)")
    if r.costliest:
        c = r.costliest[0]
        cost = w.gpu_hours(c.lost_gpu_hours) if c.lost_gpu_hours is not None else w.hours(c.lost_hours)
        rules = f" ({', '.join(c.rules)})" if c.rules else " (no page)"
        lines.append(
            f"Costliest: {c.kind} of {r.name_of(c.run)} at {w.when(c.start, r.timezone)}, "
            f"{cost}{w.in_all(c)}{rules}{w.culprit(c.culprit)}."
        )
    for rec in r.recurring[:3]:
        lines.append(f"Recurring: {rec.summary} ({r.name_of(rec.run)}).")
    noisy = [q for q in r.quality if q.noise and q.noise_share and q.noise_share >= 0.5]
    if noisy:
        q = max(noisy, key=lambda q: q.noise)
        lines.append(
            f"Noisiest rule: {q.rule}, {q.noise} of {q.pages} pages likely noise "
            "(gone within 10 min without an ack, or marked as noise)."
        )
    return lines


def render(r: Report) -> str:
    tz = r.timezone
    out = [f"# herowatch report: {r.period.label}", ""]
    out += [f"- {line}" for line in summary_lines(r)]
    out += [
        "",
        f"_{r.gpu_note}. Generated {w.when(r.generated_at, tz)} {tz}._",
        "",
        "## Where the time went",
        "",
    ]
    shown = r.badput_shown()
    out.append(
        f"| run | watched | goodput | {w.BEFORE_HEADER} | "
        + "".join(f"{w.BUCKET_WORDS[b]} | " for b in shown)
        + "GPUs |"
    )
    out.append("|---" * (5 + len(shown)) + "|")
    for run in r.runs:
        cells = [
            run.name or run.run,
            w.hours(run.watched_hours),
            w.pct(run.goodput),
            w.before(run),
            *(
                w.gpu_hours(getattr(run.gpu_hours, b)) if run.gpu_hours else w.hours(getattr(run.hours, b))
                for b in shown
            ),
            f"{run.gpus} ({run.gpus_from})" if run.gpus else "hours only",
        ]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out += ["", f"_{w.before_note(r.previous.start, r.previous.end, r.timezone)}_"]
    if r.not_accounted:
        out += ["", f"Not accounted in this period (no goodput ledger): {', '.join(r.not_accounted)}."]
    out += [
        "",
        "## Progress",
        "",
        "| run | steps made | tokens | ETA at start | ETA at end |",
        "|---|---|---|---|---|",
    ]
    for run in r.runs:
        tokens = f"{run.tokens_made:.3g}" if run.tokens_made else "—"
        steps = f"{run.steps_made:,}" if run.steps_made is not None else "—"
        etas = (w.hours(run.eta_start_hours), w.hours(run.eta_end_hours))
        out.append(f"| {_cell(run.name or run.run)} | {steps} | {tokens} | {etas[0]} | {etas[1]} |")
    out += ["", "## Costliest incidents", ""]
    for c in r.costliest or []:
        cost = w.gpu_hours(c.lost_gpu_hours) if c.lost_gpu_hours is not None else w.hours(c.lost_hours)
        out.append(
            f"1. **{c.kind}** of {_cell(r.name_of(c.run))}, {w.when(c.start, tz)} to {w.when(c.end, tz)}: "
            f"{w.hours(c.lost_hours)} lost ({cost}){w.in_all(c)}; pages: {', '.join(c.rules) or 'none'}"
            f"{_cell(w.culprit(c.culprit))}"
        )
    if not r.costliest:
        out.append("None.")
    out += ["", "## Recurring causes", ""]
    out += [f"- {_cell(x.summary)} on {_cell(r.name_of(x.run))}" for x in r.recurring] or ["None."]
    out += ["", "## Pages", "", PAGES_NOTE, ""]
    out.append("| began | run | rules | pages | first – last page | detect | ack | by | resolved | badput |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for x in r.paged[:MAX_PAGES]:
        cost = w.gpu_hours(x.badput_gpu_hours) if x.badput_gpu_hours is not None else w.hours(x.badput_hours)
        rules = ", ".join(x.rules) + (f" ({x.kind})" if x.kind else "")
        rules += " — likely noise" if x.noise else ""
        rules += w.culprit(x.culprit)
        resolved = w.when(x.end, tz) if x.end else "open"
        out.append(
            f"| {w.when(x.start, tz)} | {_cell(r.name_of(x.run))} | {_cell(rules)} | {x.count} | "
            f"{w.when(x.first_fired, tz)} – {w.when(x.last_fired, tz)} | {w.dur(x.detect_seconds)} | "
            f"{w.dur(x.ack_seconds)} | {_cell(x.acked_by or '—')} | {resolved} | "
            f"{cost} |"
        )
    if len(r.paged) > MAX_PAGES:
        out.append(f"\n…and {len(r.paged) - MAX_PAGES} more incidents (the JSON has them all).")
    out += ["", "## Alert quality", "", "| rule | pages | acknowledged | likely noise | median detect |"]
    out.append("|---|---|---|---|---|")
    for q in r.quality:
        out.append(
            f"| {_cell(q.rule)} | {q.pages} | {w.pct(q.acked_share)} | {w.pct(q.noise_share)} | "
            f"{w.dur(q.median_detect_seconds)} |"
        )
    out += ["", "## What herowatch could not see", "", w.BLIND_NOTE, ""]
    out += [
        f"- {_cell(r.name_of(b.run))}: {_cell(b.input)} unseen for {w.hours(b.hours)}" for b in r.blind
    ] or ["None."]
    out += ["", "## Silences", ""]
    out += [
        f"- {_cell(', '.join(x.matchers))} by {_cell(x.created_by)}: {w.hours(x.hours)}"
        + (f" ({_cell(x.comment)})" if x.comment else "")
        for x in r.silences
    ] or ["None."]
    return "\n".join(out) + "\n"
