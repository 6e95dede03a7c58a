"""Running points: ``run_point`` (one point, in a worker) and the executors that run many: local
spawned processes (``run_local``, with its dead-worker handling) and Dask (``DaskExecutor``).
See ``accelsim.sweeps``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from accelsim.errors import one_line
from accelsim.sweeps.grid import Base, Point, effective, generation_of
from accelsim.sweeps.results import STATUS_CHARS

#: seconds a Dask scheduler at ``dask_address`` has to answer (connect and handshake)
DASK_CONNECT_TIMEOUT = 10.0
#: how the status of a point whose Dask worker died (or whose task Dask lost) begins; unlike a
#: point that failed by itself, a re-run runs it again
WORKER_DIED = "worker died"


# --------------------------------------------------------------------------------------------
# running one point (in a worker)

#: graphs already loaded in this process, by their source (a cache file or a tag)
_GRAPHS: dict[str, Any] = {}


@dataclass(frozen=True)
class Task:
    """Everything a worker needs for one point; plain data, so it pickles to any worker."""

    point: Point
    base: Base
    hash: str
    graph_key: str  #: identifies the graph (the cache file's path)
    graph_json: dict[str, Any] | None = None  #: the graph itself when the worker cannot read the file


def _graph(task: Task) -> Any:
    import frontend
    from frontend.graph import graph_from_json

    if task.graph_key not in _GRAPHS:
        if task.graph_json is not None:
            _GRAPHS[task.graph_key] = graph_from_json(task.graph_json)
        else:
            _GRAPHS[task.graph_key] = frontend.load_graph(task.graph_key)
    return _GRAPHS[task.graph_key]


def run_point(task: Task) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Compile and simulate one point: its ``results.csv`` row and its ``report.json`` content
    (None when it failed). Never raises for a point that cannot run: the row says why."""
    from accelsim.pipeline import CompileError, RunOptions, compile_and_simulate
    from accelsim.sim import SimulationError

    began = time.perf_counter()
    row: dict[str, Any] = {"model": task.point.model_name, "hw": task.base.hw}
    row.update({k: _cell(v) for k, v in task.point.settings})
    report = None
    try:
        config, options = effective(task.point, task.base)
        steps = generation_of(options)
        if steps is not None:
            report = _generation_point(task, config, options, steps, row)
        else:
            graph = _graph(task)
            for traced in ("dtype", "input_shape", "batch", "model_options", "trace_method", "host"):  # traced already
                options.pop(traced, None)
            result = compile_and_simulate(graph, hw=config, options=RunOptions(**options))
            report = result.to_dict()
            row.update(status="ok" if result.ok else f"memory check failed: {result.memory_check}",
                       cycles=result.cycles, seconds=result.seconds, utilization=result.utilization,
                       dram_read_bytes=result.dram_read_bytes, dram_write_bytes=result.dram_write_bytes,
                       noncompulsory_bytes=result.noncompulsory_bytes, energy_j=result.energy.get("total"),
                       peak_bytes=result.peak_bytes, min_capacity_bytes=result.min_capacity_bytes,
                       scheduler_status=result.scheduler_status, deterministic=result.deterministic)
    except (ValueError, CompileError, SimulationError) as exc:
        row["status"] = one_line(exc, STATUS_CHARS)
    row["wall_s"] = round(time.perf_counter() - began, 4)
    row["hash"] = task.hash
    return row, report


def _generation_point(task: Task, config: Any, options: dict[str, Any], steps: tuple[int, int],
                      row: dict[str, Any]) -> dict[str, Any]:
    """A point of ``--grid decode=...``: ``accelsim.generation.generate`` on the point's model; fills
    ``row`` (cycles and seconds the whole generation's, the prefill and every step, with TTFT, the
    time per token and tokens/s; the prefill's M_R and scheduler status) and returns the report."""
    from accelsim.generation import generate
    from accelsim.pipeline import RunOptions

    result = generate(task.point.model, config, RunOptions(**options), prefill=steps[0], decode=steps[1])
    cycles = int(result.prefill.cycles) + sum(result.step_cycles)
    row.update(status="ok" if result.memory_check == "ok" else f"memory check failed: {result.memory_check}",
               cycles=cycles, seconds=cycles / result.clock_hz, ttft_s=result.ttft_s, tpot_s=result.tpot_s,
               tokens_per_s=result.tokens_per_s, min_capacity_bytes=result.prefill.min_capacity_bytes,
               scheduler_status=result.prefill.scheduler_status,
               deterministic=result.prefill.deterministic and result.decode.deterministic)
    return result.to_dict()


def _cell(value: Any) -> Any:
    return value if isinstance(value, int | float | str) else str(value)


# --------------------------------------------------------------------------------------------
# executors


Work = Callable[[Task], tuple[dict[str, Any], dict[str, Any] | None]]


def run_local(tasks: Sequence[Task], jobs: int, work: Work | None = None,
           ) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each task's ``work`` (``run_point``) result as it finishes, from ``jobs`` spawned workers.

    At most ``jobs`` tasks are in flight, so when a worker process dies (out of memory, a crash
    in compiled code: the pool breaks and every task in flight fails with it) the suspects are
    known: each is run again alone, in a fresh one-worker pool, and a task whose worker dies
    there too is a row whose status begins ``worker died``; the others' results stand, and the
    remaining tasks go on in a fresh pool.
    """
    work = work or run_point
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield work(task)
        return
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    todo = deque(tasks)
    pool = _pool(jobs)
    try:
        running: dict[Any, Task] = {}
        while todo or running:
            while todo and len(running) < jobs:
                task = todo.popleft()
                running[pool.submit(work, task)] = task
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            suspects: list[Task] = []
            for future in done:
                task = running.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    suspects.append(task)
                else:
                    yield result
            if suspects:  # the pool is broken: every task still in flight failed with it
                suspects.extend(running.values())
                running.clear()
                pool.shutdown(wait=False, cancel_futures=True)
                for task in suspects:
                    yield _alone(task, work)
                pool = _pool(jobs)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _pool(jobs: int) -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_setup)


def _alone(task: Task, work: Work) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``work(task)`` in a worker of its own: its result, or a ``worker died`` row when that worker dies too."""
    from concurrent.futures.process import BrokenProcessPool

    pool = _pool(1)
    try:
        return pool.submit(work, task).result()
    except BrokenProcessPool:
        return dead_worker_row(task, f"{WORKER_DIED}: its worker process died, also when it ran alone (out of "
                                     "memory or a crash in the worker process); a re-run runs it again"), None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _worker_setup() -> None:
    """A worker process: one thread for the numeric libraries (each process is one core's
    worth), and Ctrl-C left to the parent, which stops the sweep (no traceback per worker)."""
    import signal

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def check_dask_address(address: str, timeout: float = DASK_CONNECT_TIMEOUT) -> None:
    """Refuse ``address`` unless a Dask scheduler answers there within ``timeout`` seconds.

    A malformed address, a host that cannot be resolved, a closed port, a host that never
    answers, and a service that is not a Dask scheduler (an HTTP server such as the dashboard's
    port 8787 accepts the connection and then never completes Dask's handshake) all raise
    ``ValueError`` naming ``--dask-address``. The check opens a plain TCP connection first (a
    closed port is refused at once), then asks the scheduler who it is, all within ``timeout``.
    """
    _, host, port = parse_dask_address(address)

    def refuse(reason: str) -> ValueError:
        return ValueError(f"--dask-address {address}: {reason}")

    deadline = time.monotonic() + timeout
    if host is not None:
        import socket

        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except socket.gaierror as exc:
            raise refuse(f"cannot resolve the host {host!r} ({exc.strerror})") from None
        except TimeoutError:
            raise refuse(f"no answer within {timeout:g} s") from None
        except OSError as exc:
            raise refuse(f"cannot connect ({exc.strerror or one_line(exc, STATUS_CHARS)})") from None
    reply = _ask_identity(address.strip(), max(deadline - time.monotonic(), 0.1))
    if isinstance(reply, BaseException):
        if isinstance(reply, TimeoutError):  # asyncio's too, since Python 3.11
            raise refuse(f"no Dask scheduler answered within {timeout:g} s (another service listens there, e.g. "
                         "the dashboard's port 8787? a scheduler listens on 8786 by default)")
        raise refuse(f"cannot connect to a Dask scheduler ({one_line(reply, STATUS_CHARS)})")
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        what = reply.get("type") if isinstance(reply, dict) else type(reply).__name__
        raise refuse(f"the service there is not a Dask scheduler (it is a {what})")


def _ask_identity(address: str, timeout: float) -> Any:
    """The reply of the scheduler at ``address`` to Dask's ``identity`` request, or the exception
    that stopped it, within ``timeout`` seconds. It runs on its own thread and event loop, so it
    works from inside a running loop too (a notebook)."""
    import asyncio
    import threading

    from distributed.comm import connect
    from distributed.security import Security

    async def ask() -> Any:
        comm = await connect(address, timeout=timeout, **Security().get_connection_args("client"))
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(asyncio.run(asyncio.wait_for(ask(), timeout)))
        except Exception as exc:  # handed to the caller, which names the option
            outcome.append(exc)

    thread = threading.Thread(target=run, name="accelsim dask address check", daemon=True)
    thread.start()
    thread.join(timeout + 5)  # wait_for ends it at timeout; the margin is for a loop slow to stop
    return outcome[0] if outcome else TimeoutError()


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Hold Ctrl-C back (SIGINT blocked) while Dask starts its threads and worker processes.

    Both inherit the blocked signal, so a later Ctrl-C reaches this process only, which stops
    the sweep and closes the cluster; otherwise every worker gets it too and prints its own
    tracebacks while the cluster shuts down. A Ctrl-C pressed meanwhile arrives on release.

    multiprocessing's resource tracker is started first: starting it unblocks SIGINT in the
    thread that does it, which would otherwise be Dask's, the one that spawns the workers."""
    import signal
    import threading
    from multiprocessing import resource_tracker

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


class DaskExecutor:
    """Dask for one sweep: a ``LocalCluster`` of ``jobs`` single-threaded worker processes, or
    the scheduler at ``address`` (checked first, ``check_dask_address``). Made before the
    sweep's folder, so a sweep Dask refuses leaves nothing behind; ``close`` ends it."""

    def __init__(self, jobs: int, address: str | None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ValueError("--executor dask needs dask[distributed] installed (pip install 'dask[distributed]')"
                             ) from None
        self.cluster: Any = None
        self.client: Any = None
        try:
            if address is None:
                with _ctrl_c_held():
                    # Dask's own log lines are silenced: every failure is in a point's row
                    self.cluster = LocalCluster(n_workers=max(jobs, 1), threads_per_worker=1, processes=True,
                                                dashboard_address=None, silence_logs=logging.CRITICAL)
                    self.client = Client(self.cluster)
            else:
                check_dask_address(address)
                try:
                    self.client = Client(address, timeout=f"{DASK_CONNECT_TIMEOUT:g}s")
                except (OSError, TimeoutError, ValueError) as exc:
                    raise ValueError(f"--dask-address {address}: cannot connect to a Dask scheduler: "
                                     f"{one_line(exc, STATUS_CHARS)}") from None
        except BaseException:
            self.close(quiet=True)
            raise

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Each task's ``run_point`` result as it finishes; a task whose worker died (or that Dask
        lost) is a row whose status says so (``WORKER_DIED``), and the others go on."""
        from asyncio import CancelledError

        from distributed import as_completed

        futures = {self.client.submit(run_point, task, pure=False): task for task in tasks}
        for future in as_completed(futures):
            try:
                result = future.result()
            except (Exception, CancelledError) as exc:  # asyncio's CancelledError is no Exception
                reason = dead_worker_reason(exc)
                if reason is None:
                    raise
                yield dead_worker_row(futures[future], reason), None
            else:
                yield result

    def close(self, quiet: bool = False) -> None:
        """End the client (and the cluster this sweep started). ``quiet`` (after Ctrl-C): the
        shutdown of workers stopped mid-task logs warnings and tracebacks that say nothing a user
        needs, so logging is off until it is done."""
        if quiet:
            logging.disable(logging.CRITICAL)
        try:
            with _ctrl_c_held():  # a second Ctrl-C waits for the cluster to be down
                for part in (self.client, self.cluster):
                    if part is not None:
                        with contextlib.suppress(Exception):
                            part.close()
        finally:
            self.client = self.cluster = None
            if quiet:
                logging.disable(logging.NOTSET)


def dead_worker_reason(exc: BaseException) -> str | None:
    """The status of a point whose Dask task ended by ``exc`` without ``run_point`` returning:
    its worker died (``KilledWorker``: Dask retried it on ``allowed-failures`` + 1 workers that
    all died), the connection to it closed, or Dask cancelled it (a lost scheduler). None for
    any other exception, which is a bug and propagates."""
    import asyncio
    import concurrent.futures

    from distributed import KilledWorker
    from distributed.comm import CommClosedError

    if isinstance(exc, KilledWorker):
        tries = exc.allowed_failures + 1
        why = f"the Dask worker running it died ({tries} time{'s' if tries > 1 else ''}, KilledWorker: out of memory " \
              "or a crash in the worker process)"
    elif isinstance(exc, CommClosedError):
        why = f"the connection to its Dask worker closed ({type(exc).__name__}: {one_line(exc, STATUS_CHARS)})"
    elif isinstance(exc, concurrent.futures.CancelledError | asyncio.CancelledError):  # Dask's is the first
        why = f"Dask cancelled it ({one_line(exc, STATUS_CHARS)})"
    else:
        return None
    return f"{WORKER_DIED}: {why}; a re-run runs it again"


def dead_worker_row(task: Task, reason: str) -> dict[str, Any]:
    """The ``results.csv`` row of a point that did not come back from its worker."""
    row: dict[str, Any] = {"model": task.point.model_name, "hw": task.base.hw}
    row.update({k: _cell(v) for k, v in task.point.settings})
    row.update(status=reason, wall_s=0.0, hash=task.hash)
    return row


def parse_dask_address(address: Any) -> tuple[str, str | None, int | None]:
    """(scheme, host, port) of a ``--dask-address``; ``ValueError`` naming the option when it is
    not an address (``host`` and ``port`` are None for schemes other than tcp and tls)."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import backends

    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"--dask-address {address!r}: give a Dask scheduler's address, e.g. tcp://host:8786")
    try:
        scheme, location = parse_address(address.strip())
        if scheme not in backends:
            raise ValueError(f"unknown scheme {scheme!r}: use {', '.join(sorted(backends))}")
        if scheme not in ("tcp", "tls"):
            return scheme, None, None
        host, port = parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"--dask-address {address}: not an address ({one_line(exc, STATUS_CHARS)}); e.g. tcp://host:8786"
                         ) from None
    if not host or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"--dask-address {address}: not an address (host {host!r}, port {port!r}); "
                         "e.g. tcp://host:8786")
    return scheme, host, port
