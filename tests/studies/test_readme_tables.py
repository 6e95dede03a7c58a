"""The README's benchmark tables are exactly what the measured CSVs in docs/bench give."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_readme_tables_match_the_bench_csvs(study):
    module = study("readme_tables")
    readme = (REPO / "README.md").read_text()
    assert module.render(readme) == readme, "run python studies/readme_tables.py after re-measuring"


def test_every_generated_table_is_in_the_readme_and_not_empty(study):
    module = study("readme_tables")
    readme = (REPO / "README.md").read_text()
    for name in module.TABLES:
        start, end = f"<!-- table:{name} -->\n", f"<!-- /table:{name} -->"
        assert start in readme and end in readme, name
        body = readme.split(start, 1)[1].split(end, 1)[0]
        assert body.count("\n") >= 3, name  # a header, a rule and at least one measured row
