"""What-if sweeps: models × a grid of hardware fields and run options, resumable, in parallel.

``accelsim sweep MODEL... --hw HW --grid KEY=V1,V2 [--grid ...] --out DIR`` and
``accelsim.sweep(models, hw, grid, out_dir=...)`` run the cartesian product of the grid for
every model and give one row per point (a pandas DataFrame; ``DIR/results.csv``).

Decisions (recorded here and in the README):

* **A point** is a model (a zoo name, a user model ``path/to/file.py:FUNCTION`` or a ``.json``
  graph, mixed freely), a hardware config with overrides (any field ``--set`` accepts, dotted:
  ``compute.rows``, ``dram_bandwidth_bytes_per_s``, ``sram_bytes_per_pe``) and run options
  (``RUN_KEYS``: ``sram``, ``scheduler``, ``allocator``, ``budget``, ``dtype``, ``weights``,
  ``batch``). ``input_shape``, ``batch`` and ``model_options`` (``--input-shape``, ``--batch``,
  ``--model-option``) apply to every model of the sweep that is traced; each is refused, naming
  the model, where it cannot apply (a ``.json`` graph, an option the family does not take).
  Values are parsed as ``--set`` parses them (units: ``256KiB``, ``25.6e9``; ASCII digits only),
  all of them before any work: an unknown key or a bad value raises ``ValueError`` naming it
  (exit 2).
* **One name per field**: a run key that sets a hardware field is the same field
  (``FIELD_ALIASES``: ``sram`` is ``sram_bytes_per_pe``). A field given twice, under either
  name, on the grid or once on the grid and once in ``--set`` or a run option (``--dtype``
  and ``--set dtype``), is refused naming both spellings: one would silently win, and the
  rows would be labelled with values never used. Two points that are one configuration
  (``allocator=online,online-first-fit``) are refused too.
* **A limit on the grid**: a sweep of more than ``MAX_POINTS`` (100,000) points, counted as
  models x the product of the value counts before any value is parsed or any point made, is
  refused naming the count, the limit and ``--max-points`` (``max_points=``), which raises it.
* **Nothing half-made**: every check that can refuse a sweep runs before ``DIR`` is created:
  the options and grid, every ``.json`` graph loaded and checked, the folder, ``points/`` (a
  folder) and ``results.csv`` (UTF-8 CSV of this grid, every row complete with a hash and
  numbers in ASCII: otherwise an error naming the file and line), the trace cache, Dask (the
  address answers, the cluster starts) and the tracing of every model.
* **Its hash** (``point_hash``) is over the effective configuration: the model, the storage
  dtype, the complete hardware config after the overrides (``HardwareConfig.to_dict``) and
  every run option, with the model's effective inputs in place of the options that choose
  them (``model_inputs``): a zoo model's input shapes and build options in effect (so
  ``--input-shape`` spelling out the default is the default point, and the default points keep
  the hashes they had), a user model's file digest (SHA-256 of its bytes: editing the file
  makes new points) with the shapes and batch asked. Two spellings of the same point
  (``256KiB`` and ``262144``) have one hash; a change to the bundled config changes it, so
  results never mix.
* **Results** are appended to ``DIR/results.csv`` as each point finishes (flushed, so Ctrl-C
  loses no finished point), and the full ``report.json`` of each point goes to
  ``DIR/points/HASH.json``, with a light page ``DIR/points/HASH.html`` (its settings, status
  and figures). When the sweep ends, ``results.csv`` is rewritten in grid order and
  ``DIR/index.html`` shows the table, each row opening its point's page (``index_html``).
  A failing point (below M_R, allocator failed, timeout) is a row whose ``status`` is the
  one-line reason; it never stops the others.
* **Raw numbers in the file, human units on screen**: ``results.csv`` keeps the numbers as
  they are, for machines; ``index.html``, the point pages and the progress lines write them in
  human units (``format_cell``: ``256 KiB``, ``25.6 GB/s``, ``1.86 mJ``) and a status as one
  short word (``status_word``) where the full reason would not fit.
* **Budgets** are work, as in ``accelsim run``, so a point gives the same row on any worker
  and machine; its ``deterministic`` column is False when a wall-clock safety net among the
  base options (``timeout``, ``time_limit``) ended one of its searches.
* **Resume**: the points whose hash is already in ``results.csv`` are not run again (failed
  ones included: a point fails the same way twice; delete its row to retry it), except those
  whose worker died (``WORKER_DIED``), which depends on the machine. Rows of other points
  (an earlier sweep of other values into the same folder) are kept, after this grid's.
* **Tracing**: each (model, dtype, batch) is traced once through the trace cache
  (``frontend.cache``), in the parent process, before the points run, so a cache entry's
  warning (not used, traced again) is printed once; workers get the graph as JSON (with the
  task on Dask, or when the cache could not save it; from the cache file locally) and keep it
  per process, so a point costs only its scheduling, allocation and simulation.
* **Executors**: ``local`` runs ``jobs`` worker processes (``spawn``: a forked copy of a
  process that already runs OR-Tools or numba threads can deadlock); ``jobs=1`` runs in this
  process. ``dask`` uses a ``distributed.LocalCluster`` of ``jobs`` single-threaded worker
  processes, or the scheduler at ``dask_address``. Both run the same ``run_point``, so they
  give identical numbers.
* **Dask fails fast**: ``dask_address`` is checked before anything is made
  (``check_dask_address``): a malformed address at once; then a plain TCP connection (a
  closed port is refused at once) and Dask's ``identity`` request, both within
  ``DASK_CONNECT_TIMEOUT`` (10 s), so a service that is not a Dask scheduler (an HTTP server,
  the dashboard's port 8787), which accepts the connection and never answers, is refused
  naming ``--dask-address`` instead of hanging.
* **Dask stops quietly**: the local cluster's threads and worker processes start with Ctrl-C
  held back (SIGINT blocked, which they inherit), so Ctrl-C reaches this process only; the
  sweep stops with every finished point in ``results.csv`` (``SweepInterrupted``: one line,
  exit 130) and the cluster is shut down with logging off (a worker stopped mid-task logs
  warnings that say nothing a user needs). The local cluster's own log lines are silenced at
  all times: every failure is in a point's row.
* **Dead workers** are reported per point. Locally, at most ``jobs`` points are in flight; when
  a worker process dies, each of them is run again alone, and one whose worker dies there too
  is a row whose status begins ``worker died`` (the others go on in a fresh pool). On Dask, a
  task that ends with ``KilledWorker`` (its worker
  process died ``allowed-failures`` + 1 times, e.g. out of memory), a closed connection to its
  worker or a cancellation by Dask is a row whose status begins ``worker died`` and says
  which; the other points go on, and a re-run runs it again.

The modules: ``grid`` (keys, values, points, hashes), ``executors`` (``run_point``, the local
and Dask executors, dead workers), ``results`` (``results.csv`` and ``points/``, how a column
reads), ``run`` (the checks, ``run_sweep`` / ``sweep``, progress), ``plots`` (the figures) and
``index_html`` (``index.html`` and the point pages).
"""

from accelsim.sweeps.executors import (
    DASK_CONNECT_TIMEOUT,
    WORKER_DIED,
    DaskExecutor,
    Task,
    check_dask_address,
    dead_worker_reason,
    dead_worker_row,
    parse_dask_address,
    run_local,
    run_point,
)
from accelsim.sweeps.grid import (
    FIELD_ALIASES,
    INPUT_OPTIONS,
    MAX_POINTS,
    ONLINE,
    OPTION_FLAGS,
    RUN_KEYS,
    Base,
    Point,
    check_grid_size,
    check_one_name,
    config_hash,
    effective,
    field_name,
    grid_points,
    model_inputs,
    parse_grid,
    parse_grid_value,
    point_hash,
)
from accelsim.sweeps.results import METRICS, STATUS_CHARS, check_results_folder, read_results
from accelsim.sweeps.run import (
    EXECUTORS,
    Progress,
    SweepInterrupted,
    SweepOutcome,
    SweepPlan,
    check_sweep,
    run_sweep,
    sweep,
)

__all__ = [
    "DASK_CONNECT_TIMEOUT", "EXECUTORS", "FIELD_ALIASES", "INPUT_OPTIONS", "MAX_POINTS", "METRICS", "ONLINE",
    "OPTION_FLAGS", "RUN_KEYS",
    "STATUS_CHARS", "WORKER_DIED", "Base", "DaskExecutor", "Point", "Progress", "SweepInterrupted", "SweepOutcome",
    "SweepPlan", "Task", "check_dask_address", "check_grid_size", "check_one_name", "check_results_folder",
    "check_sweep", "config_hash", "dead_worker_reason", "dead_worker_row", "effective", "field_name", "grid_points",
    "model_inputs", "parse_dask_address", "parse_grid", "parse_grid_value", "point_hash", "read_results", "run_local",
    "run_point", "run_sweep", "sweep",
]
