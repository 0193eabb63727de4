"""A real multi-process JAX job on CPU, one process per "node" (as ``srun`` starts them): gloo
collectives over loopback, a tiny linear model trained with the loss averaged across processes
(``process_allgather``), rank 0 logging its steps to herowatch, a checkpoint saved and restored; after
the restore the process ``--stuck`` blocks in ``read_chunk`` (it opens a FIFO no one ever writes: a read
that never returns) while the others wait for it in ``sync_global_devices``.

    JAX_PROCESS_ID=I python tests/live/jax_job.py --port P --processes N --stuck 1 --dir D --run R --url U
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np


def read_chunk(path: Path) -> bytes:
    with open(path, "rb") as f:  # a FIFO without a writer: open() itself never returns
        return f.read(1 << 20)


def restore(ckpt: Path, me: int, stuck: int) -> np.ndarray:
    w = np.load(ckpt / f"w-{me}.npy")
    if me == stuck:
        fifo = ckpt / "shard-17.chunk"
        if not fifo.exists():
            os.mkfifo(fifo)
        read_chunk(fifo)
    return w


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--processes", type=int, required=True)
    p.add_argument("--stuck", type=int, default=1)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--dir", required=True)
    p.add_argument("--run", default="")
    p.add_argument("--url", default="")
    args = p.parse_args()
    me = int(os.environ["JAX_PROCESS_ID"])

    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{args.port}", num_processes=args.processes, process_id=me)
    rng = np.random.default_rng(me)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
    w = jnp.zeros(4)
    loss_grad = jax.jit(jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2)))
    pusher = None
    if me == 0 and args.run:
        from monitor.cli.push_client import Pusher

        pusher = Pusher(args.run, url=args.url)
    for step in range(1, args.steps + 1):
        loss, grad = loss_grad(w)
        w = w - 0.05 * grad
        losses = multihost_utils.process_allgather(jnp.array([loss]))  # every process, every step
        if pusher is not None:
            pusher.log(step, {"train/loss": float(np.mean(losses))})
            pusher.flush()
    ckpt = Path(args.dir)
    ckpt.mkdir(parents=True, exist_ok=True)
    np.save(ckpt / f"w-{me}.npy", np.asarray(w))
    multihost_utils.sync_global_devices("saved")
    w = restore(ckpt, me, args.stuck)
    (ckpt / f"restored-{me}").write_text("restored")
    multihost_utils.sync_global_devices("restored")  # the others wait here for the stuck one, forever


if __name__ == "__main__":
    main()
