"""The `herowatch` command."""

from __future__ import annotations

import logging
import secrets
from importlib import resources
from pathlib import Path

import typer

from monitor import __version__
from monitor.cli.common import fail, settings_or_exit, setup_logging
from monitor.cli.lazy import Lazy, LazyGroup
from monitor.cli.style import typer_app

# Imported when they run, never for `--help` or `emit` (monitor/cli/lazy.py). `summary` is the line the
# listing shows: the first paragraph of the command's own help (tests/test_cli_startup.py compares them).
LAZY = (
    Lazy(
        "replay",
        "monitor.cli.replay:replay_command",
        "Replay a recorded trace through the rules on a simulated clock: which alerts would have "
        "fired, when.",
    ),
    Lazy(
        "report",
        "monitor.cli.report:report_command",
        "Where the GPU-hours went, which incidents cost them, which rules cried wolf.",
    ),
    Lazy(
        "record",
        "monitor.cli.history:record_command",
        "Record what the pollers read into a trace, for `herowatch replay` and for rule tests.",
    ),
    Lazy(
        "backfill",
        "monitor.cli.history:backfill_command",
        "Load runs' whole history (e.g. a finished run) into the database, for the dashboard and goodput.",
    ),
    Lazy("db", "monitor.cli.db:db_app", "Database schema: upgrade, downgrade, show the current revision."),
    Lazy(
        "rules",
        "monitor.cli.rules:rules_app",
        "Work with rule files: list the built-in packs, check rule files, unit-test rules.",
    ),
    Lazy(
        "silence",
        "monitor.cli.silence:silence_app",
        "Silence alerts by label matchers, through a running herowatch's API (like amtool). A silenced "
        "alert is still recorded and shown on the dashboard, but not sent.",
    ),
    Lazy("alert", "monitor.cli.alert:alert_app", "The alerts of a running herowatch, through its API."),
    Lazy("slack", "monitor.cli.slack:slack_app", "herowatch's Slack app: the manifest that creates it."),
    Lazy(
        "stacks",
        "monitor.cli.stacks:stacks_command",
        "Capture RUN's stacks now and say which ranks the others wait for, and where they are.",
    ),
    Lazy(
        "emit",
        "monitor.cli.emit:emit_app",
        "Report a job's life to a push watch of a running herowatch (POST /api/ingest).",
    ),
)

app = typer_app(
    name="herowatch",
    help="herowatch watches long GPU training runs (W&B, TensorBoard, MLflow, Prometheus, Slurm, the job's "
    "log lines, or what the job pushes) and pages on-call when one is in "
    "trouble: stalled steps, loss spikes, NaNs, throughput drops, OOM kills, restart loops.\n\n"
    "Start with `herowatch demo` (no account needed), then write a watch config "
    "(`herowatch example-config > herowatch.yaml`), check it with `herowatch check-config`, "
    "and run it with `herowatch serve --config`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=LazyGroup.with_entries(LAZY, first=("replay", "report", "record", "backfill")),
)
log = logging.getLogger("herowatch")


@app.command("check-config")
def check_config(
    config: Path = typer.Argument(..., help="the watch config file (YAML)"),
    explain: bool = typer.Option(
        False, "--explain", help="also say whose metric names each watch expects, and each run's detected one"
    ),
    database_url: str = typer.Option(None, "--database-url", help="[env HEROWATCH_DATABASE_URL]"),
) -> None:
    """Validate a watch config and its rule files without starting anything.

    Exit 0 when valid; exit 2 with every problem as FILE:LINE: FIELD: MESSAGE otherwise. --explain adds
    each watch's metrics profile and, from the database, the one detected for each run.
    """
    from monitor.config.errors import ConfigError

    try:
        cfg, rules = _load(config)
    except ConfigError as exc:
        raise fail(exc.render()) from None
    typer.echo(
        f"{config}: OK: {len(cfg.watch)} watch entr{'y' if len(cfg.watch) == 1 else 'ies'}, "
        f"{len(rules.rules)} rules, {len(cfg.receivers)} receiver(s)"
    )
    for w in cfg.watch:
        typer.echo(f"  {w.name}: {', '.join(w.targets())} every {w.poll_interval:g}s")
    from monitor.cli.loading import unset_secrets

    notes = unset_secrets(cfg)  # the file is valid; this environment could not run it
    for note in notes:
        typer.echo(f"  note: {note}")
    if notes:
        typer.echo("  (`herowatch doctor` checks every source and receiver before you trust them)")
    if explain:
        from monitor.cli.explain import explain as lines

        typer.echo("\n".join(lines(cfg, rules.rules, settings_or_exit(database_url).database_url)))


@app.command()
def doctor(
    config: Path = typer.Option(..., "--config", "-c", help="the watch config file (YAML)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON document instead of the report"),
) -> None:
    """Check a set-up before trusting it: look at every source and receiver as `serve` would.

    Each is reported ok, warn, FAIL (a problem found) or ???? (could not check, with the cause:
    connection refused, timeout, DNS, TLS, auth, missing secret). W&B: the runs the watch picks up,
    each run's keys against every rule's inputs. Prometheus: each query per run. Slack: the token,
    the channel, the scopes, the buttons' way in. Webhooks, Alertmanager, PagerDuty: reachable.
    Nothing is posted.

    Exit 0 ready; 1 a problem found; 2 an unusable config; 3 something could not be checked.
    --json: ok, exit, problems, warnings, unchecked, items (level, subject, what, fix, cause), runs.
    """
    from monitor.config.errors import ConfigError

    try:
        cfg, rules = _load(config)
    except ConfigError as exc:
        raise fail(exc.render()) from None
    from monitor.cli.doctor import run_doctor

    raise typer.Exit(run_doctor(cfg, rules, settings_or_exit(), as_json))


@app.command("example-config")
def example_config() -> None:
    """Print a commented example watch config to start from."""
    typer.echo(
        resources.files("monitor.config").joinpath("example.yaml").read_text(encoding="utf-8"), nl=False
    )


def _serve(service, settings, host: str, port: int) -> None:  # noqa: ANN001
    import uvicorn

    from monitor.service import DatabaseInUse
    from monitor.web.app import create_app

    try:
        service.claim_database()
    except DatabaseInUse as exc:
        raise fail(str(exc)) from None
    api = create_app(service, on_start=service.start, on_stop=service.stop)
    typer.echo(
        f"herowatch {__version__}: API and dashboard on http://{host}:{port}  (Ctrl-C stops)", err=True
    )
    # proxy_headers=False: X-Forwarded-* are believed only from HEROWATCH_TRUSTED_PROXIES
    # (monitor/web/proxy.py), not from what uvicorn trusts by default (127.0.0.1: every local user).
    # The door before the app: headers within HEROWATCH_HEADER_TIMEOUT, at most HEROWATCH_MAX_CONNECTIONS
    # open connections, below the open-file limit (monitor/web/connections.py).
    from monitor.web.connections import (
        ACCEPT_BATCH,
        Guard,
        connection_cap,
        guarded_protocol,
        raise_file_limit,
    )

    guard = Guard(connection_cap(settings.max_connections, raise_file_limit()), settings.header_timeout)
    uvicorn.run(
        api,
        host=host,
        port=port,
        log_level="warning",
        proxy_headers=False,
        server_header=False,
        http=guarded_protocol(guard),
        timeout_keep_alive=5,
        backlog=ACCEPT_BATCH,
    )


@app.command()
def serve(
    config: Path = typer.Option(..., "--config", "-c", help="the watch config file (YAML)"),
    listen: str = typer.Option(
        None, help="host:port to serve on [env HEROWATCH_LISTEN, default 127.0.0.1:8080]"
    ),
    database_url: str = typer.Option(
        None,
        "--database-url",
        help="SQLAlchemy URL [env HEROWATCH_DATABASE_URL, default an SQLite file in the user's data folder]",
    ),
    log_level: str = typer.Option("INFO", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Watch the runs of a config: poll, evaluate rules, send alerts, serve the API.

    SQLite databases are migrated at start; a PostgreSQL database must be migrated first with
    `herowatch db upgrade`.
    """
    from alerts.clock import SystemClock
    from monitor.config.errors import ConfigError
    from monitor.service import SchemaNotReady, build_service

    setup_logging(log_level)
    settings = settings_or_exit(database_url, listen)
    try:
        cfg, _ = _load(config)
        service = build_service(cfg, settings, SystemClock(), base_dir=config.parent, config_path=str(config))
    except ConfigError as exc:  # found while building (a receiver's secret is missing): with its line
        from monitor.config.yamlpos import add_lines

        located = add_lines(exc, config.read_text(encoding="utf-8")) if exc.path == str(config) else exc
        raise fail(located.render()) from None
    except SchemaNotReady as exc:
        raise fail(str(exc)) from None
    _serve(service, settings, settings.host, settings.port)


@app.command()
def demo(
    port: int = typer.Option(8080, help="port to serve the API and dashboard on"),
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    speed: float = typer.Option(30.0, min=1.0, help="how much faster than real time the simulated runs go"),
    database_url: str = typer.Option(
        None, "--database-url", help="database for the demo [default: a fresh demo.db in the data folder]"
    ),
) -> None:
    """Run herowatch on three simulated runs (two pretraining, one RL) on a fast clock. No account needed.

    One pretraining run loops through incidents (stall, loss spike, NaN, OOM kill, throughput drop,
    source outage) every 5 simulated hours, 10 real minutes at the default 30x; the RL run's policy
    collapses once a loop: acknowledge, silence and watch each resolve on the dashboard. The first
    alert prints here within about a minute.
    """
    from alerts.clock import ScaledClock
    from alerts.notifiers.console import ConsoleNotifier
    from monitor.cli import demo_history, demo_people, demo_text
    from monitor.config.loader import parse_config
    from monitor.service import DatabaseInUse, build_service, lock_sqlite
    from monitor.settings import data_dir

    setup_logging("WARNING")
    fresh = database_url is None
    if fresh:
        db_file = data_dir() / "demo.db"
        db_file.parent.mkdir(parents=True, exist_ok=True)
        database_url = f"sqlite:///{db_file}"
    settings = settings_or_exit(database_url)
    try:  # before any file is touched: a second demo must not delete the running one's database
        lock = lock_sqlite(settings.database_url)
    except DatabaseInUse as exc:
        raise fail(str(exc)) from None
    if fresh:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_file}{suffix}").unlink(missing_ok=True)
    if settings.api_token is None:  # a one-time token, so that the dashboard's ack and silence work
        from pydantic import SecretStr

        settings.api_token = SecretStr(secrets.token_urlsafe(32))
        login = f"log in with the one-time token {settings.api_token.get_secret_value()}"
    else:  # the operator's own token: never printed
        login = "log in with your HEROWATCH_API_TOKEN"
    text = resources.files("monitor.config").joinpath("demo.yaml").read_text(encoding="utf-8")
    cfg = parse_config(text, "<demo config>")
    clock = ScaledClock(speed)
    demo_text.simulated_log_times(clock, speed)  # herowatch's own log lines carry the demo's time too
    service = build_service(cfg, settings, clock, speed=speed, auto_migrate=True)
    service.socket_mode = None  # simulated runs: never answer a real Slack (SLACK_APP_TOKEN) from here
    service.claim_database(held=lock)
    service.dispatcher.notifiers["console"] = ConsoleNotifier(time_note=demo_text.clock_note(speed))
    person = demo_people.issue(service, f"http://{host}:{port}")  # acks that carry a person's name
    typer.echo(demo_text.intro(cfg, speed, f"http://{host}:{port}", login) + "\n" + person, err=True)
    demo_history.start(cfg, settings, clock.time())  # the runs' past, for /reports, played in the background
    _serve(service, settings, host, port)


@app.command()
def version() -> None:
    """Print herowatch's version."""
    typer.echo(__version__)


def _load(config: Path):  # noqa: ANN202
    from monitor.cli.loading import load  # lazy: the rules and sources stay out of a plain --help

    return load(config)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
