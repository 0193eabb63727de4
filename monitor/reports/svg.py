"""The report's pictures as inline SVG (a self-contained HTML file carries them): goodput as stacked
bars per run, the incident timeline (a lane per run, coloured by cause), and a loss curve with the
incidents shaded. Text from runs and rules is escaped; sizes are bounded (lanes and points capped)."""

from __future__ import annotations

from markupsafe import Markup, escape

from monitor.reports import words as w
from monitor.reports.model import BUCKETS, Incident, Report

MAX_LANES = 40
GAP_FACTOR = 3.0  # a gap between points longer than this x their median spacing breaks a line
LEFT = 180


def _svg(width: int, height: int, body: list[str], title: str) -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
        f'role="img" aria-label="{escape(title)}" font-family="sans-serif" font-size="12">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _label(run) -> str:
    text = run.name or run.run
    return text if len(text) <= 26 else text[:25] + "…"


def legend(keys: tuple[str, ...], x: int, y: int, width: int = 900) -> tuple[list[str], int]:
    """Coloured keys from ``x`` on, wrapped onto more lines before they would leave ``width``: the
    elements, and how many pixels the lines below the first take."""
    out, pos, line = [], x, 0
    for k in keys:
        word = w.BUCKET_WORDS.get(k, k)
        wide = 24 + 7 * len(word)
        if pos > x and pos + wide > width:
            pos, line = x, line + 1
        top = y + 18 * line
        out.append(f'<rect x="{pos}" y="{top - 10}" width="12" height="12" fill="{w.COLORS[k]}"/>')
        out.append(f'<text x="{pos + 16}" y="{top}">{escape(word)}</text>')
        pos += wide
    return out, 18 * line


def goodput_bars(r: Report, width: int = 900) -> Markup:
    runs = r.runs[:MAX_LANES]
    body, extra = legend(("productive", *r.badput_shown()), LEFT, 16, width)  # the buckets with any time
    height = 40 + extra + 26 * max(1, len(runs))
    span = width - LEFT - 70
    for i, run in enumerate(runs):
        y = 30 + extra + 26 * i
        body.append(f'<text x="{LEFT - 8}" y="{y + 14}" text-anchor="end">{escape(_label(run))}</text>')
        total, x = run.hours.total() or 1.0, float(LEFT)
        for b in BUCKETS:
            h = max(0.0, getattr(run.hours, b))
            wd = span * h / total
            if wd > 0:
                tip = f"{w.BUCKET_WORDS[b]}: {w.hours(h)}"
                body.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{wd:.1f}" height="18" fill="{w.COLORS[b]}">'
                    f"<title>{escape(tip)}</title></rect>"
                )
            x += wd
        body.append(f'<text x="{LEFT + span + 6}" y="{y + 14}">{w.pct(run.goodput)}</text>')
    return _svg(width, height, body, "Goodput per run: where the watched hours went")


def timeline(r: Report, width: int = 900) -> Markup:
    runs = [run.run for run in r.runs[:MAX_LANES]]
    lanes = {run: i for i, run in enumerate(runs)}
    height = 56 + 22 * max(1, len(runs))
    span, t0, t1 = width - LEFT - 20, r.period.start, r.period.end
    body, _ = legend(("stall", "restart", "down", "startup"), LEFT, 16, width)  # one line: four short words

    def x(t: float) -> float:
        return LEFT + span * (min(max(t, t0), t1) - t0) / (t1 - t0)

    days = int((t1 - t0) // 86400)
    for d in range(days + 1):
        xd = x(t0 + d * 86400)
        body.append(f'<line x1="{xd:.1f}" y1="26" x2="{xd:.1f}" y2="{height - 18}" stroke="#ddd"/>')
        if d < days:
            body.append(
                f'<text x="{xd + 3:.1f}" y="{height - 4}" fill="#666">'
                f"{w.when(t0 + d * 86400, r.timezone)[:10]}</text>"
            )
    for run in r.runs[:MAX_LANES]:
        y = 30 + 22 * lanes[run.run]
        body.append(f'<text x="{LEFT - 8}" y="{y + 12}" text-anchor="end">{escape(_label(run))}</text>')
    for inc in r.incidents:
        if inc.run not in lanes:
            continue
        y = 30 + 22 * lanes[inc.run]
        a, b = x(inc.start), x(inc.end)
        pages = ", ".join(inc.rules) or "no page"
        cost = f"{w.hours(inc.lost_hours)} lost{w.in_all(inc)}"
        tip = f"{inc.kind} {w.when(inc.start, r.timezone)}, {cost}; {pages}"
        body.append(
            f'<rect x="{a:.1f}" y="{y}" width="{max(2.0, b - a):.1f}" height="16" '
            f'fill="{w.COLORS.get(inc.kind, "#333")}"><title>{escape(tip)}</title></rect>'
        )
    return _svg(width, height, body, "Incident timeline: a lane per run, coloured by cause")


def loss_curve(
    points: list[tuple[float, float]],
    incidents: list[Incident],
    t0: float,
    t1: float,
    title: str,
    width: int = 900,
    label: str = "loss",
) -> Markup:
    """The run's headline metric (``label``) against time, the incidents shaded; the line is broken
    where nothing was stored (``segments``), never drawn straight across a hang."""
    height, top, bottom = 220, 20, 190
    span = width - 70 - 20
    body: list[str] = []

    def x(t: float) -> float:
        return 70 + span * (min(max(t, t0), t1) - t0) / (t1 - t0)

    for inc in incidents:
        a, b = x(inc.start), x(inc.end)
        body.append(
            f'<rect x="{a:.1f}" y="{top}" width="{max(2.0, b - a):.1f}" height="{bottom - top}" '
            f'fill="{w.COLORS.get(inc.kind, "#333")}" opacity="0.25"><title>{escape(inc.kind)}</title></rect>'
        )
    ys = [v for _, v in points]
    if ys:
        lo, hi = min(ys), max(ys)
        hi = hi if hi > lo else lo + 1.0

        def y(v: float) -> float:
            return bottom - (bottom - top) * (v - lo) / (hi - lo)

        step = max(1, len(points) // 1500)
        for part in segments([t for t, _ in points], incidents):
            pts = [points[i] for i in part[::step]]
            if pts[-1] != points[part[-1]]:
                pts.append(points[part[-1]])  # a thinned segment still ends where the data did
            if len(pts) == 1:
                t, v = pts[0]
                body.append(f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="1.5" fill="#1f77b4"/>')
                continue
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
            body.append(
                f'<polyline class="metric" points="{path}" fill="none" stroke="#1f77b4" stroke-width="1.2"/>'
            )
        body.append(f'<text x="64" y="{top + 10}" text-anchor="end">{hi:.3g}</text>')
        body.append(f'<text x="64" y="{bottom}" text-anchor="end">{lo:.3g}</text>')
    else:
        body.append(
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#666">'
            f"no {escape(label)} logged</text>"
        )
    body.append(f'<line x1="70" y1="{bottom}" x2="{70 + span}" y2="{bottom}" stroke="#999"/>')
    body.append(f'<text x="70" y="{height - 8}" fill="#666">{escape(title)}</text>')
    return _svg(width, height, body, title)


def incident_curve(
    buckets: list[tuple[float, float, float, float]],
    inc: Incident,
    margin: float,
    run_name: str,
    label: str,
    tz: str = "UTC",
    width: int = 600,
) -> Markup:
    """The run's headline metric around one incident, from its stored buckets ``(time, min, mean, max)``:
    the mean of each bucket as a point on a line, its min..max as a whisker, the line broken where no
    bucket was written (across a hang, across a gap wider than the run's own bucket spacing), the
    incident shaded and its cause named on it."""
    height, top, bottom, left = 240, 34, 200, 64
    span = width - left - 16
    times = [b[0] for b in buckets]
    t0 = min([inc.start - margin, *times])
    t1 = max([inc.end + margin, *times])
    cause = inc.kind + (f": {', '.join(inc.rules)}" if inc.rules else ", no page")
    cost = w.gpu_hours(inc.lost_gpu_hours) if inc.lost_gpu_hours is not None else w.hours(inc.lost_hours)
    title = f"{run_name}: {cause}, {cost} lost{w.culprit(inc.culprit)}; {label} around it"

    def x(t: float) -> float:
        return left + span * (t - t0) / ((t1 - t0) or 1.0)

    a, b = x(inc.start), x(inc.end)
    body = [
        f'<rect x="{a:.1f}" y="{top}" width="{max(2.0, b - a):.1f}" height="{bottom - top}" '
        f'fill="{w.COLORS.get(inc.kind, "#333")}" opacity="0.25" class="incident"/>',
        f'<text x="{a:.1f}" y="{top - 6}" fill="{w.COLORS.get(inc.kind, "#333")}" font-weight="bold" '
        f'class="cause">{escape(cause)}</text>',
    ]
    if buckets:
        lo, hi = min(v[1] for v in buckets), max(v[3] for v in buckets)
        hi = hi if hi > lo else lo + 1.0

        def y(v: float) -> float:
            return bottom - (bottom - top) * (v - lo) / (hi - lo)

        for t, mn, _, mx in buckets:
            body.append(
                f'<line x1="{x(t):.1f}" y1="{y(mn):.1f}" x2="{x(t):.1f}" y2="{y(mx):.1f}" stroke="#aec7e8"/>'
            )
        for idx in segments([b[0] for b in buckets], [inc]):
            part = [buckets[i] for i in idx]
            pts = " ".join(f"{x(t):.1f},{y(m):.1f}" for t, _, m, _ in part)
            if len(part) == 1:
                t, _, m, _ = part[0]
                body.append(f'<circle cx="{x(t):.1f}" cy="{y(m):.1f}" r="2" fill="#1f77b4"/>')
            else:
                body.append(
                    f'<polyline class="metric" points="{pts}" fill="none" stroke="#1f77b4" '
                    'stroke-width="1.4"/>'
                )
        body.append(f'<text x="{left - 6}" y="{top + 10}" text-anchor="end">{hi:.3g}</text>')
        body.append(f'<text x="{left - 6}" y="{bottom}" text-anchor="end">{lo:.3g}</text>')
    else:
        body.append(
            f'<text x="{width / 2}" y="{(top + bottom) / 2}" text-anchor="middle" fill="#666">'
            f"no {escape(label)} stored around it</text>"
        )
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{left + span}" y2="{bottom}" stroke="#999"/>')
    body.append(f'<text x="{left}" y="{bottom + 16}" fill="#666">{w.when(t0, tz)}</text>')
    body.append(
        f'<text x="{left + span}" y="{bottom + 16}" fill="#666" text-anchor="end">{w.when(t1, tz)}</text>'
    )
    body.append(f'<text x="{left}" y="{height - 6}" fill="#666">{escape(title)}</text>')
    return _svg(width, height, body, title)


def segments(times: list[float], incidents: list[Incident]) -> list[list[int]]:
    """The indices of ``times`` (sorted) split where a line must not be drawn: across an incident at
    least one spacing long (nothing was logged during it, or what was is its own), and across a gap
    longer than ``GAP_FACTOR`` x the median spacing of the points (the run's own step or bucket
    interval: a hang herowatch saw no incident for, an outage, a stretch whose buckets were dropped)."""
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    usual = gaps[len(gaps) // 2] if gaps else 0.0
    limit = GAP_FACTOR * usual
    wide = [inc for inc in incidents if inc.end - inc.start >= usual]
    out: list[list[int]] = []
    for i, t in enumerate(times):
        if out:
            prev = times[out[-1][-1]]
            crosses = any(prev < inc.start and t > inc.end for inc in wide)
            if not (crosses or (limit > 0 and t - prev > limit)):
                out[-1].append(i)
                continue
        out.append([i])
    return out
