"""A stand-in for a node's launcher and its ranks (plain Python, no framework): ``--ranks N`` processes,
each with RANK and LOCAL_RANK in its environment as torchrun sets them. The job's rank 0 pushes a step
every 0.2 s for ``--steps`` steps; then every rank hangs: most in ``barrier`` (waiting for the others),
the ranks of ``--read`` in ``read_chunk`` (a read that never returns), those of ``--load`` in
``load_shard``.

    python tests/live/stacks_job.py --ranks 8 --base 16 --read 17 --load 40,41 --run job --url ...
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time


def barrier() -> None:
    while True:
        time.sleep(0.05)  # polls for the peers that never come


def read_chunk() -> None:
    time.sleep(3600)  # a checkpoint read that never returns


def load_shard() -> None:
    read_chunk_of_shard()


def read_chunk_of_shard() -> None:
    time.sleep(3600)


def rank_main(args: argparse.Namespace) -> None:
    rank = int(os.environ["RANK"])
    if rank == 0 and args.steps:
        from monitor.cli.push_client import Pusher

        hw = Pusher(args.run, url=args.url)
        for step in range(1, args.steps + 1):
            hw.log(step, {"train/loss": 3.0 - step * 0.01})
            hw.flush()
            time.sleep(0.2)
        hw.close()
    if rank in args.read:
        read_chunk()
    elif rank in args.load:
        load_shard()
    else:
        barrier()


def numbers(text: str) -> set[int]:
    return {int(x) for x in text.split(",") if x}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--base", type=int, default=0)
    p.add_argument("--read", type=numbers, default=set())
    p.add_argument("--load", type=numbers, default=set())
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--run", default="")
    p.add_argument("--url", default="")
    p.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank:
        rank_main(args)
        return
    children = []
    for i in range(args.ranks):
        env = {**os.environ, "RANK": str(args.base + i), "LOCAL_RANK": str(i)}
        children.append(subprocess.Popen([sys.executable, __file__, "--rank", *sys.argv[1:]], env=env))

    def end(signum: int, _frame: object) -> None:  # as torchrun does: the ranks go with the launcher
        for c in children:
            c.kill()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, end)
    for c in children:
        c.wait()


if __name__ == "__main__":
    main()
