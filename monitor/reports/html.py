"""The report as HTML: ``body`` for the dashboard's /reports page, ``document`` for a self-contained,
printable file (styles and pictures inline, no script, nothing fetched)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from monitor.reports import markdown
from monitor.reports import words as w
from monitor.reports.model import BADPUT, BUCKETS, Page, PagedIncident, Report
from monitor.reports.pictures import Pictures

_env = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
)
_env.globals.update(w=w, BADPUT=BADPUT, BUCKETS=BUCKETS)


def body(r: Report, pics: Pictures) -> Markup:
    by_id = {p.alert_id: p for p in r.pages}

    def pages_of(x: PagedIncident) -> list[Page]:
        return [by_id[i] for i in x.pages if i in by_id]

    return Markup(
        _env.get_template("report_body.html").render(
            r=r,
            pics=pics,
            summary=markdown.summary_lines(r),
            pages_note=markdown.PAGES_NOTE.replace("**", "").replace("`", ""),
            pages_of=pages_of,
        )
    )


def document(r: Report, pics: Pictures) -> str:
    css = (Path(__file__).parent / "templates" / "report.css").read_text(encoding="utf-8")
    return _env.get_template("report.html").render(r=r, body=body(r, pics), css=Markup(css))
