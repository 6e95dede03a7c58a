"""The range of every value an allocation problem may hold, in a module that imports nothing:
``allocator.core.problem`` checks problems against it and re-exports it (``allocator.MAX_VALUE``),
and the compiled kernels (``allocator.core.problem_kernels``) read it without importing
``allocator.core.problem`` back."""

#: The largest start, end, size, alignment, fixed offset (and fixed end) or capacity a problem
#: may hold: 2**62 - 1. Two reasons fix it. The compiled kernels compute in int64, and adding
#: two values of at most 2**62 - 1 (an offset and a size, a running sum and a size) stays below
#: 2**63, so one addition can never overflow. CP-SAT requires every variable's domain to lie
#: within +-(2**63 - 1) // 2, which is exactly this value. ``Problem`` also bounds two sums,
#: each at most ``MAX_VALUE``: over all buffers, size plus ``alignment - 1`` (the most padding
#: aligning a buffer can add); and the highest pinned end plus that same sum over the free
#: buffers. So stacking every buffer, or every free buffer above the pinned ones, stays in
#: range: any placement that puts each buffer at the lowest aligned offset above the buffers
#: it meets, and so any peak such a method reports, is at most ``MAX_VALUE`` too.
MAX_VALUE = 2**62 - 1
