#!/usr/bin/env bash
# Re-measure every CSV in docs/bench (the README's allocator tables are rendered from them by
# studies/readme_tables.py). Run on a quiet machine; takes about a quarter of an hour on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1
# python -m accelsim runs the code of this checkout, whatever the editable install points to
B=benchmarks
OUT=docs/bench
ALL=first-fit,greedy-in-order,greedy-by-size,greedy-by-breadth,greedy-by-conflicts,best-fit,load-best-fit,telamalloc-heuristic,hill-climb,telamalloc,minimalloc,cpsat,mip
# 1. fit the challenging suite at 1,048,576 B with the exact search, two threads and one
python -m accelsim bench $B/minimalloc/challenging --method minimalloc --capacity-from-name --timeout 60 --threads 2 --csv $OUT/fit_2threads.csv
python -m accelsim bench $B/minimalloc/challenging --method minimalloc --capacity-from-name --timeout 60 --threads 1 --csv $OUT/fit_1thread.csv
# 2. minimise the peak with every method, 3 s each
python -m accelsim bench $B/minimalloc/challenging --method $ALL --minimize --timeout 3 --csv $OUT/minimize_challenging.csv
python -m accelsim bench $B/idealloc/somas_tensors/resnet50.csv $B/idealloc/iopddl/G_1.csv $B/idealloc/somas_tensors/pangu_2.6B.csv $B/idealloc/iopddl/S_1.csv \
    --method $ALL --minimize --timeout 3 --csv $OUT/minimize_traces.csv
# 2b. auto against its members, at the same time each: fitting the challenging suite at the capacity in
#     its names (10 s), and minimising the four large traces and the suite (3 s)
AUTO=best-fit,greedy-by-size,load-best-fit,minimalloc,auto
python -m accelsim bench $B/minimalloc/challenging --method $AUTO --capacity-from-name --timeout 10 --csv $OUT/auto_fit.csv
python -m accelsim bench $B/idealloc/somas_tensors/resnet50.csv $B/idealloc/iopddl/G_1.csv $B/idealloc/somas_tensors/pangu_2.6B.csv $B/idealloc/iopddl/S_1.csv \
    $B/minimalloc/challenging --method $AUTO --minimize --timeout 3 --csv $OUT/auto_minimize.csv
# 2c. idealloc on the idealloc traces and the challenging suite (10 s each; the README's idealloc paragraph)
python -m accelsim bench $B/idealloc/somas_tensors/resnet50.csv $B/idealloc/iopddl/G_1.csv $B/idealloc/somas_tensors/pangu_2.6B.csv $B/idealloc/iopddl/S_1.csv \
    --method idealloc,greedy-by-size --minimize --timeout 10 --threads 1 --csv $OUT/idealloc_traces.csv
python -m accelsim bench $B/minimalloc/challenging --method idealloc,greedy-by-size --minimize --timeout 10 --threads 1 --csv $OUT/idealloc_challenging.csv
# 2d. issue 14's anytime targets: minimise the suite and the traces, 10 s each on one thread
python -m accelsim bench $B/minimalloc/challenging $B/idealloc/somas_tensors $B/idealloc/iopddl \
    --method minimalloc,auto --minimize --timeout 10 --threads 1 --csv $OUT/minimize_10s.csv
# 2e. the 62,185-buffer stand-in of an IOPDDL trace (studies/iopddl_like.py), minimised in 10 s
mkdir -p /tmp/accelsim-huge
python studies/iopddl_like.py /tmp/accelsim-huge/iopddl_like_62185.csv
python -m accelsim bench /tmp/accelsim-huge/iopddl_like_62185.csv --method minimalloc,auto --minimize --timeout 10 --threads 1 --csv $OUT/huge_trace.csv
# 3. large generated instances: reading, LOAD and the one-shot greedy methods under --timeout 10
mkdir -p /tmp/accelsim-large
python studies/large_instances.py --buffers 300000 --csv /tmp/accelsim-large/random-300k.csv
python studies/large_instances.py --buffers 2000000 --csv /tmp/accelsim-large/random-2M.csv
python -m accelsim bench /tmp/accelsim-large --method greedy-by-size,best-fit,first-fit --load-fraction 1.5 --timeout 10 --csv $OUT/large.csv || true
# 4. time limits: every method on the 300,000-buffer instance under --timeout 10, placing it at
#    1.5 x LOAD and minimising its peak (each must stop within 10 % + 1 s of the limit)
python -m accelsim bench /tmp/accelsim-large/random-300k.csv --method $ALL --load-fraction 1.5 --timeout 10 --csv $OUT/limits_fit.csv || true
python -m accelsim bench /tmp/accelsim-large/random-300k.csv --method $ALL --minimize --timeout 10 --csv $OUT/limits_minimize.csv || true
# 5. TelaMalloc Table 1 microbenchmarks at LOAD, medians of 3
mkdir -p /tmp/accelsim-table1
python -m accelsim gen non-overlapping 1000 /tmp/accelsim-table1/non-overlapping-1K.csv
python -m accelsim gen non-overlapping 10000 /tmp/accelsim-table1/non-overlapping-10K.csv
python -m accelsim gen full-overlap 100 /tmp/accelsim-table1/full-overlap-100.csv
python -m accelsim gen full-overlap 1000 /tmp/accelsim-table1/full-overlap-1K.csv
python -m accelsim bench /tmp/accelsim-table1 --method telamalloc --load-fraction 1.0 --repeat 3 --csv $OUT/telamalloc_table1.csv
# 6. TelaMalloc §7.3: learned against default backtracking on the held-out generated runs (step counts;
#    studies/train_backtracking.py without --evaluate-only retrains the shipped model first, about 6 minutes)
python studies/train_backtracking.py --evaluate-only
# 7. issue 22's limit cases: 2M buffers under --timeout 10, run's allocate stage on 100,000 operators,
#    and how fast requests for too much (1M operators, 65M grid points, 1e9 generated buffers) are refused
python studies/limit_cases.py
python studies/readme_tables.py
