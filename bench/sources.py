"""What a poll of the TensorBoard and MLflow sources costs, against the limits they approach.

TensorBoard: a log dir of ``--runs`` run directories holding ``--gigabytes`` of real event files (one
Megatron-style file written by TensorBoard's own writer, copied into every run). Then, in one process,
side by side:

- reading ``--sample`` whole files (as a backfill does) against reading the same bytes once (``cat``)
  and against TensorBoard's record reader and Event parse alone (the floor of any reader built on it);
- the first poll (the last ``warmup_bytes`` of each file);
- polls after ``--advancing`` runs grew by ``--new-kb`` each, and after nothing grew: the poll's time as
  a ratio to reading the new bytes once, the bytes it read against the bytes that were new, and the
  listing alone (the fixed cost of looking).

MLflow: a real ``mlflow server`` (SQLite), ``--mlflow-runs`` runs logging 4 keys; a poll after
``--mlflow-advancing`` of them logged 15 more steps, against the requests a per-run history read would
make (one ``get-history`` per run and key): once for runs logging in step with each other (their moved
keys share reads: monitor.sources.mlflow_history), once for runs each at its own step. Then a poll with
the rewind probe due (monitor.sources.mlflow_rewind) and a run resumed below its top into the same run.

Logs: a 1 GB Megatron job log, a poll's cost against the new bytes (bench/sources_logs.py).

    .venv/bin/python bench/sources.py [--runs 200] [--gigabytes 1] [--advancing 10] [--new-kb 256]
                                      [--warmup-kb 1024] [--sample 20]
                                      [--mlflow-runs 200] [--mlflow-advancing 10] [--skip-mlflow]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tensorboard.compat.proto import event_pb2  # noqa: E402
from tensorboard.compat.tensorflow_stub import errors  # noqa: E402

from monitor.sources.base import Target  # noqa: E402
from monitor.sources.tensorboard_config import TensorboardTarget  # noqa: E402
from monitor.sources.tensorboard_events import open_at, read_events  # noqa: E402
from monitor.sources.tensorboard_source import Storage, TensorboardSource  # noqa: E402
from tests.tb_support import TbRun  # noqa: E402

TAGS = ("lm loss", "grad-norm", "learning-rate", "loss-scale", "iteration-time", "batch-size", "params-norm")


def megatron_file(folder: Path, megabytes: float) -> Path:
    """One event file of about ``megabytes``, Megatron's tags at every step."""
    run = TbRun(folder, "template")
    step = 0
    while True:
        for _ in range(2000):
            step += 1
            run.log(step, {t: 2.0 + math.sin(step + i) for i, t in enumerate(TAGS)}, t=1.7e9 + step)
        run.flush()
        if run.files()[0].stat().st_size >= megabytes * 1e6:
            run.close()
            return run.files()[0]


def timed(fn):  # noqa: ANN001, ANN201
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def read_raw(paths: list[tuple[Path, int]]) -> int:
    """Read each (file, from offset) once, as ``cat`` would: the I/O floor."""
    n = 0
    for path, offset in paths:
        with path.open("rb") as f:
            f.seek(offset)
            while chunk := f.read(1 << 20):
                n += len(chunk)
    return n


def reader_only(paths: list[tuple[Path, int]]) -> int:
    """TensorBoard's record reader and the Event parse, nothing else: the floor of any reader built on it."""
    n = 0
    for path, offset in paths:
        reader = open_at(str(path), offset)
        while True:
            try:
                reader.GetNext()
            except (errors.OutOfRangeError, errors.DataLossError):
                break
            n += len(event_pb2.Event.FromString(reader.record()).summary.value)
        reader.file_handle.close()
    return n


def source_reads(paths: list[tuple[Path, int]]) -> int:
    """What the source does with each file (records to rows of scalars), rows dropped as they come."""
    return sum(read_events(str(p), o, 1 << 62, lambda _t: True).read for p, o in paths)


def append_steps(path: Path, kb: int, start: int) -> None:
    """About ``kb`` KiB of new steps at the end of an event file, as its writer would append them."""
    scratch = Path(tempfile.mkdtemp())
    run = TbRun(scratch, "x")
    step = start
    while True:
        for _ in range(200):
            step += 1
            run.log(step, {t: 1.5 for t in TAGS}, t=1.8e9 + step)
        run.flush()
        if run.files()[0].stat().st_size >= kb * 1024:
            break
    run.close()
    data = run.files()[0].read_bytes()
    first = int.from_bytes(data[:8], "little") + 16  # skip the new file's file-version record
    with path.open("ab") as f:
        f.write(data[first:])
    shutil.rmtree(scratch)


def tensorboard_bench(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="hw-bench-tb-"))
    try:
        per_run = args.gigabytes * 1000 / args.runs
        print(f"== TensorBoard: {args.runs} runs, {args.gigabytes:g} GB of events ({per_run:.1f} MB a run)")
        template = megatron_file(root / "template", per_run)
        logdir = root / "tb"
        for i in range(args.runs):
            (logdir / f"run-{i:03d}").mkdir(parents=True)
            shutil.copy(template, logdir / f"run-{i:03d}" / template.name)
        files = sorted(logdir.glob("*/*tfevents*"))
        total = sum(f.stat().st_size for f in files)
        cfg = TensorboardTarget(
            logdir=str(logdir), warmup_bytes=args.warmup_kb << 10
        )  # a tail on first sight
        src = TensorboardSource()
        target = Target("bench", cfg)
        read_raw([(f, 0) for f in files])  # warm the page cache: every figure below reads from memory
        sample = [(f, 0) for f in files[: args.sample]]
        size = sum(f.stat().st_size for f, _ in sample)
        t_cat, _ = timed(lambda: read_raw(sample))
        t_reader, _ = timed(lambda: reader_only(sample))
        t_source, _ = timed(lambda: source_reads(sample))
        rate = size / 1e6 / t_source
        print(
            f"reading {len(sample)} whole files, {size / 1e6:,.0f} MB (as backfill does): {t_source:7.1f} s"
        )
        print(f"  {rate:.1f} MB/s: all {total / 1e6:,.0f} MB would take {total / 1e6 / rate:,.0f} s")
        print(f"  vs cat of the same bytes: {t_cat:7.2f} s (ratio {t_source / t_cat:.0f}x)")
        print(
            f"  vs TensorBoard's reader and Event parse alone: {t_reader:.1f} s "
            f"(ratio {t_source / t_reader:.2f}x)"
        )
        t_first, first = timed(lambda: src.poll(target, {}, time.time()))
        assert first.error is None, first.error
        print(
            f"first poll (the last {cfg.warmup_bytes >> 10} KiB of each file, warmup_bytes): "
            f"{t_first:6.1f} s, read {src.bytes_read / 1e6:,.0f} MB, {len(first.samples):,} samples"
        )
        cursors, polls = first.cursors, 1
        while True:  # the backlog beyond the first poll's budget (poll_bytes, poll_time)
            before = src.bytes_read
            more = src.poll(target, cursors, time.time())
            cursors = more.cursors
            if src.bytes_read == before:
                break
            polls += 1
        print(f"  the first sight's backlog took {polls} poll(s), {src.bytes_read / 1e6:,.0f} MB in all")
        store = Storage(str(logdir))
        t_list, _ = timed(lambda: [store.event_files(r) for r in store.run_dirs("*")])
        before = src.bytes_read
        t_idle, idle = timed(lambda: src.poll(target, cursors, time.time()))
        print(
            f"poll, nothing new: {t_idle * 1000:7.1f} ms, {src.bytes_read - before} bytes read, "
            f"{idle.requests} listings and reads (listing alone: {t_list * 1000:.1f} ms)"
        )
        for kb in (args.new_kb, args.new_kb * 8):
            grown = files[: args.advancing]
            sizes = {f: f.stat().st_size for f in grown}
            for f in grown:
                append_steps(f, kb, start=10**7)
            new = sum(f.stat().st_size - sizes[f] for f in grown)
            read_raw([(f, sizes[f]) for f in grown])  # in the page cache, as just written
            t_new, _ = timed(lambda: read_raw([(f, sizes[f]) for f in grown]))  # noqa: B023
            t_new_parse, _ = timed(lambda: reader_only([(f, sizes[f]) for f in grown]))  # noqa: B023
            before = src.bytes_read
            t_poll, res = timed(lambda: src.poll(target, cursors, time.time()))  # noqa: B023
            cursors = res.cursors
            got = src.bytes_read - before
            print(
                f"poll, {args.advancing} of {args.runs} runs grew {kb} KiB ({new / 1e6:.2f} MB new): "
                f"{t_poll * 1000:7.1f} ms, read {got / 1e6:.2f} MB ({got / new:.2f}x the new bytes), "
                f"{len(res.samples):,} samples"
            )
            print(
                f"  vs reading the new bytes once: {t_new * 1000:6.1f} ms (ratio {t_poll / t_new:6.1f}x); "
                f"vs TensorBoard's reader alone over them: {t_new_parse * 1000:6.1f} ms "
                f"(ratio {t_poll / t_new_parse:5.2f}x); listing {t_list * 1000:.1f} ms"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def mlflow_bench(args: argparse.Namespace) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from monitor.sources.mlflow_config import MlflowTarget
    from monitor.sources.mlflow_source import MlflowSource
    from tests.mlflow_server import MlflowServer

    root = Path(tempfile.mkdtemp(prefix="hw-bench-mlflow-"))
    server = MlflowServer(root).start()
    try:
        print(f"== MLflow: {args.mlflow_runs} runs, 4 keys each, a real mlflow server (SQLite)")
        c = MlflowClient(server.url)
        exp = c.create_experiment("bench")
        keys = ("loss", "grad_norm", "learning_rate", "epoch")
        runs = [
            c.create_run(exp, run_name=f"r{i}", tags={"hero": "true"}).info.run_id
            for i in range(args.mlflow_runs)
        ]
        now = int(time.time() * 1000)

        def log(run_id: str, steps: range, t0: int = now) -> None:
            c.log_batch(run_id, metrics=[Metric(k, 1.0, t0 + s, s) for s in steps for k in keys])

        # half the runs in step with each other (a sweep started together), half each at its own step
        start = {r: 0 if i % 2 == 0 else 5000 * i for i, r in enumerate(runs)}
        for r in runs:
            log(r, range(start[r], start[r] + 50))
        src = MlflowSource()
        target = Target(
            "bench", MlflowTarget(tracking_uri=server.url, experiment="bench", filter="tags.hero = 'true'")
        )
        first = src.poll(target, {}, time.time())
        assert first.error is None, first.error
        print(f"first poll: {first.requests} requests (lookup, search, the history reads of every key)")
        idle = src.poll(target, first.cursors, time.time())
        print(f"poll, nothing new: {idle.requests} request(s)")
        naive = args.mlflow_runs * len(keys) + 1
        cursors = idle.cursors
        for label, chosen in (("in step", runs[0::2]), ("each at its own step", runs[1::2])):
            for r in chosen[: args.mlflow_advancing]:
                log(r, range(start[r] + 50, start[r] + 65))
            t, res = timed(lambda: src.poll(target, cursors, time.time()))  # noqa: B023
            cursors = res.cursors
            print(
                f"poll, {args.mlflow_advancing} of {args.mlflow_runs} runs ({label}) logged 15 steps: "
                f"{res.requests} requests in {t * 1000:.0f} ms; a history read of every run and key: "
                f"{naive} requests (ratio {naive / res.requests:.0f}x)"
            )
        # the probe for steps logged again below the top (a resume into the same run), due every
        # rewind_probe for every running run that has not moved: here all of them but the advanced
        later = time.time() + target.config.rewind_probe + 1
        t, res = timed(lambda: src.poll(target, cursors, later))
        cursors = res.cursors
        print(
            f"poll with the rewind probe due (every {target.config.rewind_probe:.0f} s), nothing new: "
            f"{res.requests} requests in {t * 1000:.0f} ms"
        )
        resumed = runs[0]
        restarted = now + 10**6  # the resumed process logs later
        log(resumed, range(start[resumed] + 40, start[resumed] + 50), restarted)  # 25 steps below its top
        t, res = timed(lambda: src.poll(target, cursors, later + 1))
        cursors = res.cursors
        got = [s.step for s in res.samples if s.step is not None]
        print(
            f"poll, 1 run resumed 25 steps below its top (probe not due): {res.requests} request(s), "
            f"{len(got)} steps read"
        )
        t, res = timed(lambda: src.poll(target, cursors, later + 2 * target.config.rewind_probe + 2))
        cursors = res.cursors
        got = [s.step for s in res.samples if s.step is not None]
        print(f"  probe due: {res.requests} requests, {len(got)} steps read ({got[0]}..{got[-1]})")
        log(resumed, range(start[resumed] + 50, start[resumed] + 60), restarted)
        t, res = timed(lambda: src.poll(target, cursors, later + 2 * target.config.rewind_probe + 3))
        got = [s.step for s in res.samples if s.step is not None]
        print(
            f"  next poll, it logged 10 more below its top: {res.requests} request(s), {len(got)} steps read"
        )
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--gigabytes", type=float, default=1.0)
    ap.add_argument("--advancing", type=int, default=10)
    ap.add_argument("--new-kb", type=int, default=256)
    ap.add_argument("--warmup-kb", type=int, default=1024, help="warmup_bytes of the first poll, KiB")
    ap.add_argument("--sample", type=int, default=20, help="whole files read for the backfill rate")
    ap.add_argument("--mlflow-runs", type=int, default=200)
    ap.add_argument("--mlflow-advancing", type=int, default=10)
    ap.add_argument("--skip-mlflow", action="store_true")
    ap.add_argument("--skip-tensorboard", action="store_true")
    ap.add_argument("--log-gb", type=float, default=1.0, help="the logs source's log file, GiB")
    ap.add_argument("--skip-logs", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("MLFLOW_TRACKING_URI", "")
    if not args.skip_tensorboard:
        tensorboard_bench(args)
    if not args.skip_mlflow:
        mlflow_bench(args)
    if not args.skip_logs:
        from sources_logs import logs_bench  # bench/sources_logs.py

        logs_bench(args.log_gb, args.new_kb)


if __name__ == "__main__":
    main()
