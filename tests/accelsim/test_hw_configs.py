"""Hardware configs: the bundled YAMLs, field checking, and byte-size parsing."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from accelsim.hw import HardwareConfigError, format_bytes, list_configs, load_hw, parse_bytes

BUNDLED = Path(__file__).resolve().parents[2] / "hw_configs"


def test_bundled_configs_are_listed_and_load():
    assert {"pixel6", "tpuv4"} <= set(list_configs())
    for name in list_configs():
        hw = load_hw(name)
        assert hw.name == name
        assert hw.source.endswith(f"{name}.yaml")


def test_pixel6_numbers():
    hw = load_hw("pixel6")
    assert (hw.n_pe, hw.capacity_scope, hw.dtype) == (16, "per_pe", "int8")
    assert hw.sram_bytes_per_pe == 2 * 2**20
    assert hw.clock_hz == 1066e6
    assert hw.peak_macs_per_cycle == 16 * 4 * 64
    assert (hw.compute.kind, hw.compute.units, hw.compute.cores_per_unit, hw.compute.lanes_per_core) == (
        "lanes", 16, 4, 64)
    assert hw.dram_bandwidth_bytes_per_s == 51.2e9
    assert hw.capacity_label == "per PE (16 PEs)"


def test_tpuv4_numbers():
    hw = load_hw("tpuv4")
    assert (hw.n_pe, hw.capacity_scope, hw.dtype) == (1, "chip", "bf16")
    assert hw.sram_bytes_per_pe == 128 * 2**20
    assert hw.clock_hz == 1050e6
    assert hw.peak_macs_per_cycle == 2 * 4 * 128 * 128
    c = hw.compute
    assert (c.kind, c.rows, c.cols, c.units, c.dataflow, c.fold_overlap) == ("systolic", 128, 128, 8, "ws", True)
    assert hw.dram_bandwidth_bytes_per_s == 1.2e12
    assert hw.dram_bytes == 32 * 2**30
    assert hw.capacity_label == "chip"


def test_every_number_in_the_bundled_yaml_has_a_comment():
    for path in BUNDLED.glob("*.yaml"):
        for line in path.read_text().splitlines():
            if line and not line.startswith("#") and ":" in line:
                key, _, rest = line.partition(":")
                if key.strip() not in ("name", "description") and rest.strip():  # not a block header
                    assert "#" in rest, f"{path.name}: field {key.strip()!r} has no source comment"


def test_load_by_path_equals_load_by_name():
    assert load_hw(BUNDLED / "pixel6.yaml") == load_hw("pixel6")


def _write(tmp_path: Path, change: dict, drop: str | None = None) -> Path:
    data = yaml.safe_load((BUNDLED / "pixel6.yaml").read_text())
    data.update(change)
    if drop:
        del data[drop]
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_unknown_field_is_named_with_the_file(tmp_path):
    path = _write(tmp_path, {"sram_byte_per_pe": 1024})
    with pytest.raises(HardwareConfigError, match=r"custom\.yaml: unknown field 'sram_byte_per_pe'"):
        load_hw(path)


def test_missing_field_is_named(tmp_path):
    path = _write(tmp_path, {}, drop="clock_hz")
    with pytest.raises(HardwareConfigError, match=r"custom\.yaml: missing field 'clock_hz'"):
        load_hw(path)


def test_negative_number_is_named(tmp_path):
    path = _write(tmp_path, {"dram_latency_cycles": -5})
    with pytest.raises(HardwareConfigError, match=r"field 'dram_latency_cycles' must be non-negative"):
        load_hw(path)
    path = _write(tmp_path, {"n_pe": 0})
    with pytest.raises(HardwareConfigError, match=r"field 'n_pe' must be positive"):
        load_hw(path)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("n_pe", "sixteen", "field 'n_pe' must be an integer"),
        ("n_pe", 2.5, "field 'n_pe' must be an integer"),
        ("clock_hz", "fast", "field 'clock_hz' must be a finite number"),
        ("sram_bytes_per_pe", "2 furlongs", "field 'sram_bytes_per_pe'"),
        ("capacity_scope", "global", "field 'capacity_scope' must be one of per_pe, chip"),
        ("dtype", 8, "field 'dtype' must be a non-empty string"),
        ("dtype", "int9", "field 'dtype' must be one of int8"),
    ],
)
def test_wrong_type_is_named(tmp_path, field, value, message):
    with pytest.raises(HardwareConfigError, match=message):
        load_hw(_write(tmp_path, {field: value}))


def test_chip_scope_requires_one_pe(tmp_path):
    with pytest.raises(HardwareConfigError, match="field 'n_pe' must be 1"):
        load_hw(_write(tmp_path, {"capacity_scope": "chip"}))


def test_float_literal_without_exponent_sign_is_accepted(tmp_path):
    # YAML 1.1 reads 1.2e12 as a string; the loader accepts it as the number it means
    path = _write(tmp_path, {})
    text = path.read_text().replace("bytes_per_s: 51200000000", "bytes_per_s: 5.12e10")
    assert "5.12e10" in text
    path.write_text(text)
    assert load_hw(path).dram_bandwidth_bytes_per_s == 51.2e9


def test_unknown_config_name_lists_the_bundled_ones():
    with pytest.raises(HardwareConfigError, match="unknown hardware config 'pixel7'.*pixel6"):
        load_hw("pixel7")


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(HardwareConfigError, match="cannot read"):
        load_hw(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(HardwareConfigError, match="not valid YAML"):
        load_hw(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(HardwareConfigError, match="must be a mapping of fields"):
        load_hw(bad)


def test_with_sram_overrides_only_the_scratchpad():
    hw = load_hw("tpuv4")
    small = hw.with_sram("8MiB")
    assert small.sram_bytes_per_pe == 8 * 2**20
    assert small.clock_hz == hw.clock_hz
    with pytest.raises(HardwareConfigError, match="sram must be positive"):
        hw.with_sram(0)
    with pytest.raises(ValueError, match="sram 'lots'"):
        hw.with_sram("lots")


def test_per_pe_sizes_split_and_align():
    hw = load_hw("pixel6")  # 16 PEs, 64-byte alignment
    assert hw.share_bytes(1000) == 63
    assert hw.onchip_bytes(1000) == 64
    assert hw.onchip_bytes(16 * 64 + 1) == 128
    assert hw.onchip_bytes(0) == 0
    assert hw.chip_bytes(63) == 1008
    tpu = load_hw("tpuv4")  # chip scope, 512-byte alignment
    assert tpu.share_bytes(1000) == 1000
    assert tpu.onchip_bytes(1000) == 1024


def test_dma_cycle_formula():
    hw = load_hw("tpuv4")
    # 1.2 TB/s at 1.05 GHz is 8000/7 bytes per cycle: 8000 bytes take exactly 7 cycles
    assert hw.dma_cycles(8000) == hw.dram_latency_cycles + 7
    assert hw.dma_cycles(8001) == hw.dram_latency_cycles + 8


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (4096, 4096), ("4096", 4096), ("8MiB", 8 * 2**20), ("512KiB", 512 * 1024), ("1.5GiB", 3 * 2**29),
        ("2MB", 2_000_000), ("2 mb", 2_000_000), ("1048576", 2**20), ("64B", 64), ("1TiB", 2**40), (0, 0),
    ],
)
def test_parse_bytes_accepts(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("8 apples", "unknown unit 'apples'"),
        ("8M", "unknown unit 'M'"),
        ("MiB", "is not a byte count"),
        ("-3", "is not a byte count"),
        (-3, "is negative"),
        ("1.3B", "not a whole number of bytes"),
        ("", "is not a byte count"),
        (True, "is not a byte count"),
        (1.5, "not a non-negative whole number"),
        # int() and float() skip '_': 1_0_0 read as 100 would hide a typo
        ("1_048_576", r"^size '1_048_576' is not a byte count: write it in ASCII digits, without '_' separators$"),
        ("1_024KiB", "without '_' separators"),
        ("1.5_0GiB", "without '_' separators"),
    ],
)
def test_parse_bytes_rejects_junk_clearly(text, message):
    with pytest.raises(ValueError, match=message):
        parse_bytes(text)


def test_format_bytes():
    assert format_bytes(2 * 2**20) == "2 MiB"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(12) == "12 B"


# ------------------------------------------------------------------------------------------
# the typed schema: blocks, physical ranges, duplicate keys, overrides


def test_every_field_is_declared_once_and_described():
    from accelsim.hw import describe_fields, schema_fields

    names = [name for name, _, _ in describe_fields()]
    assert len(names) == len(set(names)) == len(schema_fields())
    for key in ("compute.rows", "compute.cols", "compute.units", "compute.dataflow", "compute.fold_overlap",
                "dma.channels", "dma.prefetch_depth", "energy.pj_per_mac", "sram_bytes_per_pe",
                "dram_bandwidth_bytes_per_s"):
        assert key in names
    # every field of the bundled configs round-trips through to_dict
    for name in list_configs():
        hw = load_hw(name)
        from accelsim.hw import config_from_dict

        assert config_from_dict(hw.to_dict(), "again") == hw
        # in the schema's order, as the YAML files and the reference page list them
        compute = hw.to_dict()["compute"]
        order = [n.removeprefix("compute.") for n in names if n.startswith("compute.")]
        assert list(compute) == [n for n in order if n in compute]


def test_duplicate_yaml_key_is_refused_with_both_lines(tmp_path):
    path = tmp_path / "dup.yaml"
    text = (BUNDLED / "pixel6.yaml").read_text().replace("n_pe: 16", "n_pe: 16\nn_pe: 1")
    path.write_text(text)
    with pytest.raises(HardwareConfigError, match=r"dup\.yaml: duplicate key 'n_pe' at line \d+ \(first at line \d+\)"):
        load_hw(path)
    # inside a block too
    path.write_text((BUNDLED / "tpuv4.yaml").read_text().replace("  rows: 128", "  rows: 128\n  rows: 64"))
    with pytest.raises(HardwareConfigError, match="duplicate key 'rows'"):
        load_hw(path)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("clock_hz", 1e-300, "field 'clock_hz' must be at least 1,000"),
        ("clock_hz", 1e30, "field 'clock_hz' must be at most 1e\\+11"),
        ("dram_bandwidth_bytes_per_s", 0, "field 'dram_bandwidth_bytes_per_s' must be at least 1,000"),
        ("sram_bytes_per_pe", "1EiB", "unknown unit"),
        ("sram_bytes_per_pe", 2**60, "field 'sram_bytes_per_pe' must be at most"),
        ("n_pe", 10**9, "field 'n_pe' must be at most"),
        ("clock_hz", float("nan"), "field 'clock_hz' must be a finite number"),
    ],
)
def test_absurd_values_are_refused(tmp_path, field, value, message):
    with pytest.raises(HardwareConfigError, match=message):
        load_hw(_write(tmp_path, {field: value}))


def _write_block(tmp_path: Path, block: str, change: dict, drop: str | None = None, base: str = "tpuv4") -> Path:
    data = yaml.safe_load((BUNDLED / f"{base}.yaml").read_text())
    data[block].update(change)
    if drop:
        del data[block][drop]
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_block_fields_are_checked_with_dotted_names(tmp_path):
    with pytest.raises(HardwareConfigError, match=r"custom\.yaml: field 'compute.rows' must be positive"):
        load_hw(_write_block(tmp_path, "compute", {"rows": 0}))
    with pytest.raises(HardwareConfigError, match="field 'compute.dataflow' must be one of ws, os"):
        load_hw(_write_block(tmp_path, "compute", {"dataflow": "is"}))
    with pytest.raises(HardwareConfigError, match="field 'compute.fold_overlap' must be true or false"):
        load_hw(_write_block(tmp_path, "compute", {"fold_overlap": "maybe"}))
    with pytest.raises(HardwareConfigError, match=r"missing field 'compute.cols' \(needed by compute.kind"):
        load_hw(_write_block(tmp_path, "compute", {}, drop="cols"))
    with pytest.raises(HardwareConfigError, match="field 'compute.rows' does not apply to compute.kind 'lanes'"):
        load_hw(_write_block(tmp_path, "compute", {"rows": 128}, base="pixel6"))
    with pytest.raises(HardwareConfigError, match="unknown field 'compute.rowz' \\(did you mean compute.rows"):
        load_hw(_write_block(tmp_path, "compute", {"rowz": 1}))
    with pytest.raises(HardwareConfigError, match="field 'energy.pj_per_dram_byte' must be non-negative"):
        load_hw(_write_block(tmp_path, "energy", {"pj_per_dram_byte": -1}))
    with pytest.raises(HardwareConfigError, match="missing block 'dma'"):
        data = yaml.safe_load((BUNDLED / "tpuv4.yaml").read_text())
        del data["dma"]
        (tmp_path / "custom.yaml").write_text(yaml.safe_dump(data))
        load_hw(tmp_path / "custom.yaml")


def test_old_macs_per_cycle_field_points_to_the_compute_block(tmp_path):
    with pytest.raises(HardwareConfigError, match="unknown field 'macs_per_cycle' \\(the compute block replaced it"):
        load_hw(_write(tmp_path, {"macs_per_cycle": 4096}))


def test_binary_and_broken_yaml_give_one_line(tmp_path):
    binary = tmp_path / "blob.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(HardwareConfigError, match=r"blob\.yaml: not a text file") as info:
        load_hw(binary)
    assert "\n" not in str(info.value)
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: pixel6\ncompute: {kind: lanes\n")
    with pytest.raises(HardwareConfigError, match=r"broken\.yaml: not valid YAML at line \d+, column \d+") as info:
        load_hw(broken)
    assert "\n" not in str(info.value)


def test_overrides_parse_units_and_types():
    hw = load_hw("tpuv4", overrides={
        "compute.rows": "256", "compute.fold_overlap": "false", "dram_bandwidth_bytes_per_s": "25.6e9",
        "sram_bytes_per_pe": "8MiB", "dma.channels": 2, "energy.pj_per_mac": "0.5",
    })
    assert hw.compute.rows == 256 and hw.compute.fold_overlap is False
    assert hw.dram_bandwidth_bytes_per_s == 25.6e9 and hw.sram_bytes_per_pe == 8 * 2**20
    assert hw.dma.channels == 2 and hw.energy.pj_per_mac == 0.5
    assert hw.peak_macs_per_cycle == 8 * 256 * 128
    assert "with --set" in hw.source
    # the original is untouched
    assert load_hw("tpuv4").compute.rows == 128


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"compute.rowz": 1}, "--set compute.rowz: unknown field \\(did you mean compute.rows\\?\\)"),
        ({"nonsense": 1}, "--set nonsense: unknown field"),
        ({"compute.rows": "many"}, "--set compute.rows=many: field 'compute.rows' must be an integer"),
        ({"sram_bytes_per_pe": "8 furlongs"}, "--set sram_bytes_per_pe=8 furlongs: field 'sram_bytes_per_pe'"),
        ({"compute.fold_overlap": "perhaps"}, "must be true or false"),
        ({"clock_hz": "0"}, "field 'clock_hz' must be at least 1,000"),
        ({"compute.kind": "systolic"}, "missing field 'compute.rows' \\(needed by compute.kind 'systolic'\\)"),
    ],
)
def test_bad_overrides_name_the_key(overrides, message):
    with pytest.raises(HardwareConfigError, match=message):
        load_hw("pixel6", overrides=overrides)


def test_switching_compute_kind_by_override_drops_the_old_kinds_fields():
    hw = load_hw("pixel6", overrides={"compute.kind": "systolic", "compute.rows": 32, "compute.cols": 32,
                                      "compute.dataflow": "os", "compute.fold_overlap": "no"})
    assert hw.compute.kind == "systolic" and not hasattr(hw.compute, "lanes_per_core")
    assert hw.peak_macs_per_cycle == 16 * 32 * 32
    assert "lanes_per_core" not in hw.to_dict()["compute"]
    # a field of the old kind given again with the switch is refused, as in a file
    with pytest.raises(HardwareConfigError, match="field 'compute.lanes_per_core' does not apply to compute.kind "
                                                  "'ideal' \\(it is a field of lanes\\)"):
        load_hw("pixel6", overrides={"compute.kind": "ideal", "compute.macs_per_cycle": 8,
                                     "compute.lanes_per_core": 8})


# ------------------------------------------------------------------------------------------
# compute kinds are types: one record per kind, with only its own fields


def _kind_fields():
    """(kind, its record type, the fields of its own: the ones another kind does not have)."""
    from accelsim.hw import COMPUTE_KINDS, ComputeBlock

    shared = {f.name for f in dataclasses.fields(ComputeBlock)}
    return [(kind, record, sorted({f.name for f in dataclasses.fields(record)} - shared))
            for kind, record in COMPUTE_KINDS.items()]


def test_each_compute_kind_is_a_record_with_only_its_own_fields():
    from accelsim.hw import IdealCompute, LanesCompute, SystolicCompute

    own = {kind: (record, names) for kind, record, names in _kind_fields()}
    assert own == {"systolic": (SystolicCompute, ["cols", "dataflow", "fold_overlap", "rows"]),
                   "lanes": (LanesCompute, ["cores_per_unit", "lanes_per_core"]),
                   "ideal": (IdealCompute, ["macs_per_cycle"])}
    lanes = load_hw("pixel6").compute
    assert isinstance(lanes, LanesCompute) and lanes.kind == "lanes"
    assert not hasattr(lanes, "rows") and not hasattr(lanes, "macs_per_cycle")
    tpu = load_hw("tpuv4").compute
    assert isinstance(tpu, SystolicCompute) and not hasattr(tpu, "lanes_per_core")
    # the fields every kind has, and the kind itself, which the type holds
    for kind, record, _ in _kind_fields():
        assert record.kind == kind
        assert {"units", "vector_elements_per_cycle", "pack_groups"} <= {f.name for f in dataclasses.fields(record)}


def test_the_reference_marks_each_kinds_own_fields_from_the_types():
    from accelsim.hw import describe_fields

    described = {name: kind for name, kind, _ in describe_fields()}
    for kind, _, names in _kind_fields():
        for name in names:
            assert described[f"compute.{name}"].endswith(f" (compute.kind {kind})"), name
    assert described["compute.kind"] == "systolic | lanes | ideal"
    assert described["compute.units"] == "int in [1, 65,536]"
    assert described["compute.pack_groups"] == "bool (optional, default True)"


#: (bundled config, a field of another kind than the config's, that kind)
_OTHER_KINDS_FIELDS = [(base, name, kind) for base in ("pixel6", "tpuv4") for kind, _, names in _kind_fields()
                       if kind != load_hw(base).compute.kind for name in names]


@pytest.mark.parametrize(("base", "name", "owner"), _OTHER_KINDS_FIELDS)
def test_a_record_refuses_another_kinds_field_in_a_file_and_by_set(tmp_path, base, name, owner):
    hw = load_hw(base)
    value = {"dataflow": "ws", "fold_overlap": True}.get(name, 4)
    message = f"field 'compute.{name}' does not apply to compute.kind '{hw.compute.kind}' (it is a field of {owner})"
    with pytest.raises(HardwareConfigError, match=r"custom\.yaml: " + re.escape(message)):
        load_hw(_write_block(tmp_path, "compute", {name: value}, base=base))
    # --set of the field alone: the config keeps its kind, so the field does not apply either
    with pytest.raises(HardwareConfigError, match=re.escape(message)):
        load_hw(base, overrides={f"compute.{name}": str(value)})


@pytest.mark.parametrize("kind", ["systolic", "lanes", "ideal"])
def test_a_record_asks_for_each_of_its_own_fields(tmp_path, kind):
    own = {k: names for k, _, names in _kind_fields()}[kind]
    base = "tpuv4" if kind == "systolic" else "pixel6"
    data = yaml.safe_load((BUNDLED / f"{base}.yaml").read_text())
    values = {"dataflow": "os", "fold_overlap": False}
    data["compute"] = {"kind": kind, "units": 2, "vector_elements_per_cycle": 8} | {n: values.get(n, 4) for n in own}
    path = tmp_path / "custom.yaml"
    for name in own:
        path.write_text(yaml.safe_dump(data | {"compute": {k: v for k, v in data["compute"].items() if k != name}}))
        with pytest.raises(HardwareConfigError,
                           match=re.escape(f"missing field 'compute.{name}' (needed by compute.kind '{kind}')")):
            load_hw(path)
    path.write_text(yaml.safe_dump(data))
    hw = load_hw(path)
    assert hw.compute.kind == kind and hw.compute.pack_groups is True
    assert hw.to_dict()["compute"] == data["compute"] | {"pack_groups": True}
    assert load_hw(path, overrides={"compute.units": 3}).compute.units == 3


def test_parse_overrides_from_the_command_line():
    from accelsim.hw import parse_overrides

    assert parse_overrides(["compute.rows=256", "sram_bytes_per_pe = 8MiB"]) == {
        "compute.rows": "256", "sram_bytes_per_pe": "8MiB"}
    with pytest.raises(HardwareConfigError, match="expected KEY=VALUE"):
        parse_overrides(["compute.rows"])
    with pytest.raises(HardwareConfigError, match="--set compute.rows: given twice"):
        parse_overrides(["compute.rows=1", "compute.rows=2"])


@pytest.mark.parametrize("key, value", [("dram_latency_cycles", "٣"), ("dram_latency_cycles", "１２"),
                                        ("sram_bytes_per_pe", "٣MiB"), ("clock_hz", "１e9")])
def test_a_number_in_other_digits_than_ascii_is_refused_naming_the_field(key, value):
    # int(), float() and an unflagged \d read any Unicode digit ("٣" as 3): every numeric field refuses them
    with pytest.raises(HardwareConfigError, match=key):
        load_hw("pixel6", {key: value})


@pytest.mark.parametrize("key", ["? [a, b]\n: 1\n", "? {a: 1}\n: 1\n"])
def test_a_yaml_key_that_is_a_list_or_a_mapping_is_one_error_naming_the_line(tmp_path, key):
    path = tmp_path / "odd.yaml"
    path.write_text(key + (BUNDLED / "pixel6.yaml").read_text())
    with pytest.raises(HardwareConfigError, match=r"odd.yaml: the key at line 1 is a (list|dict), not a field name"):
        load_hw(path)


@pytest.mark.parametrize("name", ["../../../../esc", "a/b", ".hidden", "..", "pixel 6"])
def test_a_config_name_that_is_not_a_plain_folder_name_is_refused(name):
    # the name becomes part of report folders (accelsim-out/MODEL-NAME): a path in it would escape
    with pytest.raises(HardwareConfigError, match="field 'name' must be letters"):
        load_hw("pixel6", {"name": name})
    assert load_hw("pixel6", {"name": "pixel6-8MiB_v2.1"}).name == "pixel6-8MiB_v2.1"


@pytest.mark.parametrize(("key", "value", "message"), [
    ("clock_hz", "1_066_000_000",
     "field 'clock_hz' must be a number in ASCII digits (no '_' separators), got '1_066_000_000'"),
    ("dram_bandwidth_bytes_per_s", "25_6e9", "field 'dram_bandwidth_bytes_per_s' must be a number in ASCII digits"),
    ("compute.units", "1_6", "field 'compute.units' must be an integer in ASCII digits (no '_' separators), got '1_6'"),
    ("sram_bytes_per_pe", "1_024KiB", "field 'sram_bytes_per_pe': sram_bytes_per_pe '1_024KiB' is not a byte count"),
])
def test_a_number_as_text_with_underscore_separators_is_refused_but_a_yaml_integer_with_them_loads(key, value,
                                                                                                  message):
    with pytest.raises(HardwareConfigError, match=re.escape(f"--set {key}={value}: {message}")) as info:
        load_hw("pixel6", {key: value})
    assert "\n" not in str(info.value)
    # the bundled files write clock_hz: 1_066_000_000, which YAML itself reads as an integer: still loaded
    assert "clock_hz: 1_066_000_000" in (BUNDLED / "pixel6.yaml").read_text()
    assert load_hw("pixel6").clock_hz == 1_066_000_000 and load_hw("tpuv4").clock_hz == 1_050_000_000


def test_an_alignment_larger_than_the_scratchpad_is_refused_naming_both_fields(tmp_path):
    # every tensor takes at least one alignment unit: name the field, not an M_R inflated by it
    with pytest.raises(HardwareConfigError, match=re.escape(
            "with --set alignment=4MiB: field 'alignment' (4 MiB) is larger than the scratchpad, sram_bytes_per_pe "
            "(2 MiB): every tensor would take at least one alignment unit; lower alignment or raise "
            "sram_bytes_per_pe")):
        load_hw("pixel6", {"alignment": "4MiB"})
    with pytest.raises(HardwareConfigError, match=re.escape("field 'alignment' (64 B) is larger than the scratchpad, "
                                                            "sram_bytes_per_pe (32 B)")):
        load_hw("pixel6").with_sram(32)
    path = tmp_path / "wide.yaml"
    path.write_text((BUNDLED / "tpuv4.yaml").read_text().replace("alignment: 512", "alignment: 268435456"))
    with pytest.raises(HardwareConfigError, match=r"wide\.yaml: field 'alignment' \(256 MiB\) is larger"):
        load_hw(path)
    # equal passes: one tensor fits
    assert load_hw("pixel6", {"alignment": "2MiB"}).alignment == 2 * 2**20
    assert load_hw("pixel6", {"alignment": "64"}).with_sram(64).sram_bytes_per_pe == 64
