"""frontend.cost on shapes alone (no torch)."""

import pytest

from frontend.cost import OpCall, elements, function_kind, macs, module_kind


def test_kinds_are_normalised():
    assert module_kind(["NonDynamicallyQuantizableLinear", "Linear", "Module"]) == "linear"
    assert module_kind(["BatchNorm3d", "_BatchNorm"]) == "batch_norm"
    assert module_kind(["MultiheadAttention", "Module"]) == "multi_head_attention"
    assert module_kind(["SqueezeExcitationThing", "Module"]) == "squeeze_excitation_thing"
    assert function_kind("iadd") == "add" and function_kind("relu_") == "relu"
    assert function_kind("cat") == "cat" and function_kind("concatenate") == "cat"
    assert function_kind("t") == "transpose" and function_kind("getitem") == "index"
    assert function_kind("shifted_window_attention") == "shifted_window_attention"


def test_ops_without_a_rule_cost_elements_not_macs():
    call = OpCall("relu", operands=[(2, 3)], outputs=[(2, 3)])
    assert macs(call) == 0 and elements(call) == 6
    assert elements(OpCall("max", operands=[(4, 5)], outputs=[(4,), (4,)])) == 8


def test_conv_transpose_counts_input_elements():
    call = OpCall("conv_transpose2d", operands=[(1, 4, 5, 5)], outputs=[(1, 6, 11, 11)],
                  params={"weight": (4, 3, 3, 3)})  # groups = 2: C_out / groups = 3
    assert macs(call) == 100 * 3 * 9


@pytest.mark.parametrize(
    ("equation", "shapes", "out", "expected"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)], (3, 5), 3 * 5 * 4),
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 6, 8)], (2, 3, 4, 6), 2 * 3 * 4 * 6 * 8),
        ("i,i", [(7,), (7,)], (), 7),
        ("...d,...d->...", [(2, 3, 4), (2, 3, 4)], (2, 3), 6 * 4),
    ],
)
def test_einsum_counts_contracted_indices(equation, shapes, out, expected):
    call = OpCall("einsum", operands=shapes, outputs=[out], arguments={"args": (equation, *shapes)})
    assert macs(call) == expected


def test_swin_window_attention_pads_to_whole_windows():
    # 7x7 windows over a 9x9 map: padded to 14x14 = 4 windows of 49 tokens
    args = {"input": (1, 9, 9, 32), "qkv_weight": (96, 32), "proj_weight": (32, 32),
            "window_size": [7, 7], "num_heads": 2, "shift_size": [3, 3]}
    call = OpCall("shifted_window_attention", operands=[(1, 9, 9, 32), (96, 32), (32, 32)],
                  outputs=[(1, 9, 9, 32)], arguments=args)
    tokens = 14 * 14
    assert macs(call) == tokens * 96 * 32 + 2 * tokens * 49 * 32 + tokens * 32 * 32
