"""Where a scan's work runs: a thread pool of this process (`local`) or a
Ray cluster through Ray Data (`ray`). Both take a list of URLs and yield
`(index, result)` as results come, never holding more than a window of
work in flight; neither schedules anything itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

from gguf_validate.scan import _work

#: Files in flight per thread of the local engine (submitted, not done).
LOCAL_WINDOW_PER_THREAD = 2

#: Files per Ray task at least and at most (each task reads them with its
#: own threads): a chunk is cut into about `RAY_TASKS_PER_PROCESS` tasks per
#: task slot, so Ray's scheduling is paid a few times per chunk, not per file.
RAY_MIN_BATCH_FILES = 32
RAY_MAX_BATCH_FILES = 512
RAY_TASKS_PER_PROCESS = 4


class Engine(Protocol):
    """Runs `kind` work (`probe`, `judge`) on URLs."""

    name: str
    #: Processes the work is spread over (a rate cap is split among them).
    processes: int

    def map(self, kind: str, settings: _work.Settings, urls: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]: ...

    def close(self) -> None: ...


class LocalEngine:
    """A thread pool in this process: `concurrency` files read at once."""

    name = "local"
    processes = 1

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="gguf-scan")

    def map(self, kind: str, settings: _work.Settings, urls: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        fn = _work.WORK[kind]
        window = self.concurrency * LOCAL_WINDOW_PER_THREAD
        running: dict[Future[dict[str, Any]], int] = {}
        it = iter(enumerate(urls))
        while True:
            for i, u in it:
                running[self._pool.submit(fn, settings, u)] = i
                if len(running) >= window:
                    break
            if not running:
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in done:
                yield running.pop(f), f.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayEngine:
    """Ray Data: URLs in batches (`batch_size`), `concurrency` tasks
    at once, each reading its batch with `threads` threads. Joins the
    cluster at `RAY_ADDRESS` when set (`ray start` / KubeRay), else starts
    a local one (`num_cpus`)."""

    name = "ray"

    def __init__(self, concurrency: int, threads: int, num_cpus: int | None = None) -> None:
        import ray

        # Ray's own annotations do not cover pyarrow batches: used untyped.
        self._ray: Any = ray
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if os.environ.get("RAY_ADDRESS"):
                kwargs["address"] = os.environ["RAY_ADDRESS"]
            else:
                kwargs["num_cpus"] = num_cpus or os.cpu_count() or 1
            ray.init(**kwargs)
            self._started = True
        self.processes = max(1, concurrency)
        self.threads = max(1, threads)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False

    def map(self, kind: str, settings: _work.Settings, urls: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        if not urls:
            return
        ds = self._ray.data.from_items([{"i": i, "url": u} for i, u in enumerate(urls)])
        ds = ds.map_batches(
            _work.ray_batch,
            fn_kwargs={"kind": kind, "settings": settings, "threads": self.threads},
            batch_size=self.batch_size(len(urls)),
            batch_format="pyarrow",
            compute=self._ray.data.TaskPoolStrategy(size=self.processes),
            # I/O-bound: a task waits on the network, not a core.
            num_cpus=0.5,
        )
        for batch in ds.iter_batches(batch_format="pyarrow", batch_size=None):
            for i, r in zip(batch.column("i").to_pylist(), batch.column("result").to_pylist(), strict=True):
                yield int(i), json.loads(r)

    def batch_size(self, n: int) -> int:
        """Files per task for a map over `n` URLs."""
        per = -(-n // (self.processes * RAY_TASKS_PER_PROCESS))
        return max(RAY_MIN_BATCH_FILES, min(RAY_MAX_BATCH_FILES, per))

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


def make(name: str, concurrency: int, threads: int) -> Engine:
    """The engine called `name`."""
    if name == "local":
        return LocalEngine(concurrency)
    if name == "ray":
        return RayEngine(concurrency, threads)
    raise ValueError(f"engine `{name}`: expected `local` or `ray`")
