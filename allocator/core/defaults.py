"""The allocator's defaults that other packages and the command line name, in a module that
imports nothing, so that reading one costs no import of the allocator's machinery."""

#: the method of ``allocator.solve`` when none is named; also the default of ``accelsim alloc``,
#: ``accelsim run``, ``accelsim.compile_and_simulate`` and ``scheduler.make_schedule``, so that the
#: library and the command line give the same answer by default
DEFAULT_METHOD = "auto"
