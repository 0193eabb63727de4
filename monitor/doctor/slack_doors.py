"""``herowatch doctor``: can Slack's buttons and ``/herowatch`` reach herowatch? Either Socket Mode
(``SLACK_APP_TOKEN``: herowatch opens a websocket to Slack, checked by connecting once) or Slack's
HTTP calls to ``server.external_url`` (``SLACK_SIGNING_SECRET``: only the settings can be checked
from here, not whether the internet reaches that address). A Slack receiver with buttons and neither
set is a warning: its buttons would do nothing."""

from __future__ import annotations

from alerts.notifiers.slack.socket_check import check_socket_mode
from monitor.config.schema import WatchConfig
from monitor.doctor.report import FAIL, OK, WARN, Report
from monitor.settings import Settings

SUBJECT = "slack buttons and /herowatch"
ENDPOINT = "/api/slack/interactions"


def check_slack_doors(cfg: WatchConfig, settings: Settings, report: Report) -> None:
    buttons = [r.name for r in cfg.receivers if r.kind == "slack" and getattr(r, "actions", False)]
    token, secret = settings.slack_app_token, settings.slack_signing_secret
    if token is None and secret is None:
        if buttons:
            report.add(
                WARN,
                SUBJECT,
                f"the buttons of {', '.join(buttons)} would do nothing and /herowatch would not be answered: "
                "neither SLACK_APP_TOKEN nor SLACK_SIGNING_SECRET is set",
                "set SLACK_APP_TOKEN (Socket Mode, no inbound port) or SLACK_SIGNING_SECRET and "
                "server.external_url (Slack calls herowatch); `herowatch slack manifest` sets up the app",
            )
        return
    if token is not None:
        got = check_socket_mode(token.get_secret_value(), settings.slack_api_url)
        for p in got.problems:
            report.add(FAIL if p.fatal else WARN, f"{SUBJECT} (Socket Mode)", p.what, p.fix)
        if got.ok:
            report.add(OK, f"{SUBJECT} (Socket Mode)", "; ".join(got.facts))
    if secret is not None:
        _http(cfg, report)


def _http(cfg: WatchConfig, report: Report) -> None:
    subject = f"{SUBJECT} (HTTP)"
    url = cfg.server.external_url
    if not url:
        report.add(
            WARN,
            subject,
            f"SLACK_SIGNING_SECRET is set, but not server.external_url: where does Slack post ({ENDPOINT})?",
            "set server.external_url to herowatch's public https address, or use Socket Mode instead",
        )
    elif not url.lower().startswith("https://"):
        report.add(
            FAIL,
            subject,
            f"Slack only calls https:// URLs, and server.external_url is {url}",
            "serve herowatch behind TLS (docs/deploy.md), or use Socket Mode (SLACK_APP_TOKEN)",
        )
    else:
        report.add(
            OK,
            subject,
            f"Slack posts to {url.rstrip('/')}{ENDPOINT}, signed with SLACK_SIGNING_SECRET (whether the "
            "internet reaches it cannot be checked from here)",
        )
