"""The on-call dashboard: server-rendered pages (Jinja2), htmx refresh, vendored uPlot charts."""
