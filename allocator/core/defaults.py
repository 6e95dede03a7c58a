"""The allocator's defaults that other packages and the command line name, in a module that
imports nothing, so that reading one costs no import of the allocator's machinery."""

#: the method of ``allocator.solve`` when none is named; also the default of ``accelsim alloc``,
#: ``accelsim run``, ``accelsim.compile_and_simulate`` and ``scheduler.make_schedule``, so that the
#: library and the command line give the same answer by default
DEFAULT_METHOD = "auto"

#: the method that places a problem without a capacity when a caller only needs to see where a
#: placement reaches: one greedy pass, deterministic and fast. The scheduler's allocation-aware
#: spill loop locates with it where a residency plan overflows when the chosen method returned no
#: placement (``scheduler.spill_loop``)
UNBOUNDED_METHOD = "best-fit"
