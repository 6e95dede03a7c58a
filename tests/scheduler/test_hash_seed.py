"""The COSMA models do not depend on Python's string hashing: the same graph gives the same
CP-SAT models, and so the same schedule, in processes with different ``PYTHONHASHSEED``.

(The part models of ``cosma_dnc`` used to add their precedence constraints in the order a
subgraph view iterates a set of operator names, which changes with the hash seed.)
"""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import hashlib
from ortools.sat.python import cp_model
from frontend.synthetic import random_dag
from scheduler import min_capacity
from scheduler.cosma import CosmaOptions, cosma_dnc

digests = []
solve = cp_model.CpSolver.solve
def recording(self, model, *args, **kwargs):
    digests.append(hashlib.sha256(str(model.Proto()).encode()).hexdigest()[:12])
    return solve(self, model, *args, **kwargs)
cp_model.CpSolver.solve = recording
graph = random_dag(20, seed=1)
need = min_capacity(graph)[0]
result = cosma_dnc(graph, need * 3 // 2, 5, options=CosmaOptions(deterministic_time=2.0))
print(" ".join(digests), result.order, result.noncompulsory_bytes)
"""


def _run(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_cosma_dnc_builds_the_same_models_whatever_the_hash_seed():
    first = _run("0")
    assert len(first.split()) > 4  # several part models were built and solved
    for seed in ("1", "2", "3"):
        assert _run(seed) == first, seed
