"""The storage dtypes a run can choose, with their bytes per element.

A module of its own (re-exported by ``frontend.graph``) so that checking a dtype, as every
hardware config load does, imports neither networkx nor torch.
"""

#: bytes per element of the storage dtypes a run can choose
DTYPE_BYTES = {
    "int8": 1, "uint8": 1, "bool": 1, "fp8": 1,
    "int16": 2, "fp16": 2, "bf16": 2,
    "int32": 4, "fp32": 4,
    "int64": 8, "fp64": 8,
}

#: dtypes a tensor may have below a byte per element, with their bits (``frontend.precision``:
#: int4 weights, packed two to a byte); never a run's storage dtype
SUB_BYTE_BITS = {"int4": 4}
