"""Root conftest: keeps torch to one thread on this 2-core machine before any test imports it."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
