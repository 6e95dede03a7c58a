"""accelsim bench: rows per instance and method, validated, with the warm-up reported apart."""

from pathlib import Path

import pytest

from accelsim.cli import main
from allocator.search import bench


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_capacity_from_name_and_minimize_rows(tmp_path, capsys):
    folder = tmp_path / "instances"
    folder.mkdir()
    write(folder, "tiny.12.csv", "id,lower,upper,size\na,0,3,4\nb,3,9,4\nc,0,9,4\nd,9,21,4\ne,0,21,4\n")
    csv_out = tmp_path / "rows.csv"
    assert main(["bench", str(folder), "--method", "minimalloc,first-fit", "--capacity-from-name",
                 "--csv", str(csv_out)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("warm-up (code loading / numba compilation, not in the times below): minimalloc")
    assert "tiny.12.csv  minimalloc" in out and "solved" in out
    assert len(csv_out.read_text().splitlines()) == 3
    bench.warm_up(["minimalloc"], "minimize")  # as the CLI does: no compiling inside the 5 s below
    rows = bench.run(bench.instance_files([folder]), ["minimalloc"], minimize=True, timeout=5)
    assert rows[0].status == "optimal" and rows[0].peak == rows[0].lower_bound == 12


def test_bad_input_is_named(tmp_path, capsys):
    write(tmp_path, "noname.csv", "id,lower,upper,size\na,0,1,1\n")
    assert main(["bench", str(tmp_path / "noname.csv"), "--capacity-from-name"]) == 1  # a bad instance: its row
    captured = capsys.readouterr()
    assert "noname.csv: no capacity in the file name" in captured.err
    assert "error" in captured.out.splitlines()[-2] and "no capacity in the file name" in captured.out
    assert main(["bench", str(tmp_path / "missing.csv"), "--capacity", "8"]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown allocator method"):
        bench.run([tmp_path / "noname.csv"], ["nope"], capacity=8)


def test_shared_example_folder(benchmarks):
    rows = bench.run(bench.instance_files([benchmarks / "minimalloc" / "examples"]), ["greedy-by-size"],
                     from_name=True)
    assert rows[0].instance == "input.12.csv" and rows[0].capacity == 12


def test_plot_draws_quality_versus_time(tmp_path, capsys):
    folder = tmp_path / "instances"
    folder.mkdir()
    write(folder, "tiny.csv", "id,lower,upper,size\na,0,3,4\nb,3,9,4\nc,0,9,4\nd,9,21,4\ne,0,21,4\n")
    image = tmp_path / "plot.png"
    csv_out = tmp_path / "rows.csv"
    assert main(["bench", str(folder), "--method", "minimalloc,first-fit", "--minimize", "--timeout", "2",
                 "--plot", str(image), "--csv", str(csv_out)]) == 0
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.stat().st_size > 5000
    assert "plot written to" in capsys.readouterr().out
    assert csv_out.read_text().splitlines()[0] == ",".join(bench.CSV_FIELDS)  # the trace stays out of the CSV
    rows = bench.run([folder / "tiny.csv"], ["minimalloc"], minimize=True, timeout=2)
    assert rows[0].trace and rows[0].trace[-1][1] == rows[0].over_load_percent == 0.0


def test_load_fractions_strategies_and_summary(tmp_path, capsys):
    path = write(tmp_path, "tiny.csv", "id,lower,upper,size\na,0,3,4\nb,3,9,4\nc,0,9,4\nd,9,21,4\ne,0,21,4\n")
    assert main(["bench", str(path), "--method", "telamalloc:max-size,telamalloc:telamalloc", "--load-fraction",
                 "1.0,2", "--summary"]) == 0
    out = capsys.readouterr().out
    assert "tiny.csv  telamalloc:max-size" in out
    assert "2 configurations; 2 placed by every method" in out
    assert "telamalloc:max-size: 0 failed" in out
    rows = bench.run([path], ["telamalloc:lowest-position"], load_fractions=[1.0, 1.5])
    assert [r.capacity for r in rows] == [12, 18]
    assert all(r.status == "solved" and r.nodes >= 5 for r in rows)
    summary = bench.strategy_summary([rows[0], bench.BenchRow("tiny.csv", "x", 5, 12, 12, "failed", None, None,
                                                              None, 0.1, 500)])
    assert "1 configurations; 0 placed by every method" in summary and "x: 1 failed" in summary
    with pytest.raises(ValueError, match="unknown strategy"):
        bench.parse_method("telamalloc:max-width")
    with pytest.raises(ValueError, match="only telamalloc"):
        bench.parse_method("first-fit:max-size")
    assert main(["bench", str(path), "--load-fraction", "1,x"]) == 2
    assert "'x' is not a number" in capsys.readouterr().err
