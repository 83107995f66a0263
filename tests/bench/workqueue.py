"""Work queue throughput: add → get → done cycles per second through PriorityQueue with 1 and 8
worker tasks, against asyncio.Queue put → get on the same loop. Real clock.

Usage: python -m tests.bench.queue [--quick]
The last stdout line is a JSON object: pq_ops_per_s, pq_ops_per_s_8_workers,
asyncio_queue_ops_per_s, ratio (pq / asyncio, one worker each).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from runtime.workqueue import LOW, NORMAL, PriorityQueue, ShutDown

PRIORITIES = (NORMAL, NORMAL, NORMAL, 5, LOW)


async def bench_pq(n: int, workers: int) -> float:
    queue: PriorityQueue[str] = PriorityQueue("bench")
    keys = [f"ns/obj-{i}" for i in range(n)]
    finished = 0

    async def worker() -> None:
        nonlocal finished
        while True:
            try:
                key, _ = await queue.get()
            except ShutDown:
                return
            queue.done(key)
            finished += 1

    start = time.perf_counter()
    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for i, key in enumerate(keys):
        queue.add(key, priority=PRIORITIES[i % len(PRIORITIES)])
        if i % 64 == 63:
            await asyncio.sleep(0)  # let workers run, as event handlers would
    await queue.shutdown(drain=True)
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    assert finished == n, (finished, n)
    return n / elapsed


async def bench_asyncio_queue(n: int) -> float:
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    keys = [f"ns/obj-{i}" for i in range(n)]
    finished = 0

    async def worker() -> None:
        nonlocal finished
        while await queue.get() is not None:
            queue.task_done()
            finished += 1

    start = time.perf_counter()
    task = asyncio.create_task(worker())
    for i, key in enumerate(keys):
        queue.put_nowait(key)
        if i % 64 == 63:
            await asyncio.sleep(0)
    queue.put_nowait(None)
    await task
    elapsed = time.perf_counter() - start
    assert finished == n
    return n / elapsed


async def main(quick: bool) -> dict[str, float]:
    n = 20_000 if quick else 200_000
    rounds = 1 if quick else 3
    pq1 = max([await bench_pq(n, 1) for _ in range(rounds)])
    pq8 = max([await bench_pq(n, 8) for _ in range(rounds)])
    aq = max([await bench_asyncio_queue(n) for _ in range(rounds)])
    return {
        "items": n,
        "pq_ops_per_s": round(pq1),
        "pq_ops_per_s_8_workers": round(pq8),
        "asyncio_queue_ops_per_s": round(aq),
        "ratio": round(pq1 / aq, 3),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    args = parser.parse_args()
    result = asyncio.run(main(args.quick))
    print(f"PriorityQueue, 1 worker:  {result['pq_ops_per_s']:>10,} ops/s")
    print(f"PriorityQueue, 8 workers: {result['pq_ops_per_s_8_workers']:>10,} ops/s")
    print(f"asyncio.Queue, 1 worker:  {result['asyncio_queue_ops_per_s']:>10,} ops/s")
    print(json.dumps(result))
