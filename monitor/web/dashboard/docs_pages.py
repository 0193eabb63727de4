"""``/docs`` (Swagger UI), ``/redoc`` (ReDoc) and ``/runbooks``, all served from herowatch's own files, so
they work on a cluster with no internet access.

Swagger UI and ReDoc are vendored in ``static/`` (see static/README.md), started by ``static/api_docs.js``
and ReDoc's ``spec-url`` attribute: no inline script. The runbooks are ``runbooks.md`` beside this module,
rendered with markdown-it (raw HTML in it is escaped, not passed through); each heading gets the id
GitHub would give it, so ``/runbooks#progress-stalled`` links land on the right section.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from markdown_it import MarkdownIt
from markupsafe import Markup

from monitor.web.context import ApiContext, context
from monitor.web.dashboard.pages import guard, page

router = APIRouter(include_in_schema=False)
RUNBOOKS = Path(__file__).with_name("runbooks.md")

_DOCS = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>herowatch API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/static/swagger-ui-bundle.js"></script><script src="/static/api_docs.js"></script>
</body></html>"""

_REDOC = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>herowatch API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml"></head>
<body><redoc spec-url="/openapi.json"></redoc><script src="/static/redoc.standalone.js"></script>
</body></html>"""


# Both viewers inject inline styles (and ReDoc a blob: worker), so they get their own policy rather than
# the dashboard's; it still keeps every fetch on this server (ReDoc's footer logo would come from a CDN).
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; worker-src blob:; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'"
)


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui() -> HTMLResponse:
    return HTMLResponse(_DOCS, headers={"Content-Security-Policy": DOCS_CSP})


@router.get("/redoc", response_class=HTMLResponse)
def redoc() -> HTMLResponse:
    return HTMLResponse(_REDOC, headers={"Content-Security-Policy": DOCS_CSP})


def slug(text: str) -> str:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@functools.cache
def runbooks_html() -> Markup:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(RUNBOOKS.read_text(encoding="utf-8"))
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            tok.attrSet("id", slug(tokens[i + 1].content))
    return Markup(md.renderer.render(tokens, md.options, {}))  # noqa: S704 - our own file, raw HTML off


@router.get("/runbooks", response_class=HTMLResponse)
def runbooks(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    return guard(request, ctx) or page(request, ctx, "runbooks.html", body=runbooks_html())
