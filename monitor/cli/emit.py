"""`herowatch emit run|started|exit|log|alert|resolve`: a job script reports to a push watch
(``POST /api/ingest``).

The wrapper (``herowatch emit run -- python train.py ...``) reports ``started``, runs the command with
its signals forwarded, reports its exit (the code, and ``signal N`` when a signal ended it), and exits
with the command's own code: a crash is never recorded as a success by a wrapper that swallowed it.
Beside the command it keeps a long poll open to herowatch and, when asked (a hang, or on demand),
captures the Python stacks of its process tree with py-spy (``monitor.stacks``, docs/stacks.md). A
herowatch it cannot reach never delays or changes the command.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading

import typer

from monitor.cli.push_client import RUN_ENV, TOKEN_ENV, URL_ENV, Pusher, PushFailed
from monitor.cli.style import typer_app

NODE_ENV = "HEROWATCH_NODE"

emit_app = typer_app(
    help="Report a job's life to a push watch of a running herowatch (POST /api/ingest).\n\n"
    f"The server is `--url` (env `{URL_ENV}`, default `http://127.0.0.1:8080`), the run `--run` (env "
    f"`{RUN_ENV}`); the watch's ingest token comes from `{TOKEN_ENV}` (never the API token).\n\n"
    "Examples:\n\n"
    "    herowatch emit run --run hero-70b -- torchrun train.py   # started, then the exit and its code\n"
    "    herowatch emit started --run hero-70b\n"
    "    herowatch emit log --run hero-70b --step 1200 train/loss=2.31\n"
    "    herowatch emit exit --run hero-70b --code 137 --cause oom-killed\n"
    "    herowatch emit alert --run hero-70b --title 'Shard corrupt' --text 'shard 17' --level error\n",
    no_args_is_help=True,
)
RUN_OPTION = typer.Option(None, "--run", help=f"the run's name [env {RUN_ENV}]")
URL_OPTION = typer.Option(None, "--url", help=f"herowatch's address [env {URL_ENV}]")


def _pusher(run: str | None, url: str | None, deadline: float = 60.0) -> Pusher:
    try:
        return Pusher(run, url=url, deadline=deadline)
    except ValueError as exc:
        typer.echo(f"herowatch emit: {exc}", err=True)
        raise typer.Exit(2) from None


def _send(what: str, call) -> bool:  # noqa: ANN001 - a bound method of Pusher
    try:
        call()
        return True
    except PushFailed as exc:
        typer.echo(f"herowatch emit: could not report {what}: {exc}", err=True)
        return False


@emit_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run_(
    ctx: typer.Context,
    run: str = RUN_OPTION,
    url: str = URL_OPTION,
    node: str = typer.Option(
        None, "--node", help=f"this node's name in captures [env {NODE_ENV}; default: the host name]"
    ),
    stacks: bool = typer.Option(
        True, "--stacks/--no-stacks", help="answer herowatch's stack captures (py-spy) of this process tree"
    ),
    py_spy: str = typer.Option(
        None, "--py-spy", help="how to run py-spy, e.g. 'sudo -n py-spy' [default: py-spy on PATH]"
    ),
    stack_timeout: float = typer.Option(10.0, "--stack-timeout", help="seconds per process for py-spy"),
    flight_recorder: str = typer.Option(
        None,
        "--flight-recorder",
        help="where the job writes PyTorch flight recorder JSON dumps (<prefix><rank>, or a directory) "
        "[default: TORCH_FR_DUMP_TEMP_FILE from the environment]",
    ),
) -> None:
    """Run COMMAND (after `--`), reporting its start and its exit; exit with its code.

    While it runs, herowatch may ask for the Python stacks of every process under this wrapper (when a
    hang alert of the run starts, or on demand): they are read with `py-spy dump` (root or
    CAP_SYS_PTRACE needed; without it the push says so) and sent with the node's name and the ranks the
    processes' environments give (RANK, LOCAL_RANK, SLURM_PROCID, JAX_PROCESS_ID)."""
    command = list(ctx.args)
    if not command:
        typer.echo("herowatch emit run: give the command after --, e.g. -- python train.py", err=True)
        raise typer.Exit(2)
    hw = _pusher(run, url)
    started = threading.Thread(target=_send, args=("the start", hw.started), daemon=True)
    started.start()  # the job starts now, whether or not herowatch answers
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        typer.echo(f"herowatch emit run: cannot start {command[0]!r}: {exc}", err=True)
        started.join(hw.deadline)
        _send("the exit", lambda: hw.exit(127, "exit"))
        raise typer.Exit(127) from None
    forwarded = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
    for sig in forwarded:  # the scheduler's signals are the job's: pass them on, report what they did
        signal.signal(sig, lambda n, _f: child.send_signal(n))
    agent = None
    if stacks:
        from monitor.stacks.agent import StackAgent  # here: `emit --help` and `emit log` stay light
        from monitor.stacks.capture import Limits, py_spy_command

        agent = StackAgent(
            url=hw.url,
            token=hw.token,
            run=hw.run,
            node=node or os.environ.get(NODE_ENV) or socket.gethostname(),
            root=os.getpid(),
            py_spy=py_spy_command(py_spy),
            limits=Limits(timeout=stack_timeout),
            say=lambda text: typer.echo(f"herowatch emit run: {text}", err=True),
            flight=flight_recorder,
        )
        agent.start()
    code = child.wait()
    for sig in forwarded:
        signal.signal(sig, signal.SIG_DFL)
    if agent is not None:
        agent.stop()
    if agent is not None and not agent.reached.is_set():
        started.join(5.0)  # herowatch never answered: do not hold the job's end long
        hw.deadline = min(hw.deadline, 10.0)
    else:
        started.join(hw.deadline)
    if code < 0:
        name = next((s.name for s in signal.Signals if s.value == -code), str(-code))
        _send("the exit", lambda: hw.exit(128 - code, f"signal {-code}"))
        typer.echo(f"herowatch emit run: {command[0]} was ended by {name}", err=True)
        code = 128 - code
    else:
        _send("the exit", lambda: hw.exit(code, "exit"))
    hw.close()
    raise typer.Exit(code)


@emit_app.command("started")
def started(run: str = RUN_OPTION, url: str = URL_OPTION) -> None:
    """The run (re)started: its state is running."""
    hw = _pusher(run, url)
    if not _send("the start", hw.started):
        raise typer.Exit(1)


@emit_app.command("exit")
def exit_(
    code: int = typer.Option(..., "--code", help="the job's exit code"),
    cause: str = typer.Option("exit", "--cause", help="exit, oom-killed, or 'signal N'"),
    run: str = RUN_OPTION,
    url: str = URL_OPTION,
) -> None:
    """The run ended: 0 (cause exit) is finished; anything else pages run_crashed at once, with the code."""
    hw = _pusher(run, url)
    if not _send("the exit", lambda: hw.exit(code, cause)):
        raise typer.Exit(1)


@emit_app.command("log")
def log_(
    values: list[str] = typer.Argument(..., help="NAME=VALUE pairs, e.g. train/loss=2.31"),
    step: int = typer.Option(None, "--step", help="the training step"),
    run: str = RUN_OPTION,
    url: str = URL_OPTION,
) -> None:
    """One sample: metrics at a step."""
    metrics = {}
    for pair in values:
        name, sep, text = pair.rpartition("=")
        try:
            metrics[name] = float(text)
        except ValueError:
            name = ""
        if not sep or not name:
            typer.echo(f"herowatch emit log: {pair!r} is not NAME=NUMBER", err=True)
            raise typer.Exit(2)
    hw = _pusher(run, url)
    hw.log(step, metrics)
    if not _send("the sample", hw.flush):
        raise typer.Exit(1)


@emit_app.command("alert")
def alert_(
    title: str = typer.Option(..., "--title", help="what the alert is, at most 64 characters (its identity)"),
    text: str = typer.Option("", "--text", help="what to tell on-call"),
    level: str = typer.Option("info", "--level", help="info (never notifies), warn or error (pages)"),
    wait: float = typer.Option(
        None, "--wait", help="seconds within which a repeat of this title is dropped [default 60]"
    ),
    run: str = RUN_OPTION,
    url: str = URL_OPTION,
) -> None:
    """A custom alert, as W&B's wandb.alert; it resolves 1h after the last send of its title."""
    if level.strip().lower() not in ("info", "warn", "error"):
        typer.echo(f"herowatch emit alert: --level {level!r}: expected info, warn or error", err=True)
        raise typer.Exit(2)
    hw = _pusher(run, url)
    if not _send("the alert", lambda: hw.alert(title, text, level, wait)):
        raise typer.Exit(1)


@emit_app.command("resolve")
def resolve_(
    title: str = typer.Option(..., "--title", help="the title of the alert that is over"),
    run: str = RUN_OPTION,
    url: str = URL_OPTION,
) -> None:
    """The alert of this title is over: it resolves now."""
    hw = _pusher(run, url)
    if not _send("the resolve", lambda: hw.resolve(title)):
        raise typer.Exit(1)
