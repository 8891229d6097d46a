"""ridge.report() writes the folder `ridge report` writes, through the same library function."""
import json
import subprocess
import sys

import pytest

import ridge
from ridge import _cli


def cli_report(folder, *args):
    return subprocess.run([str(_cli.executable()), "report", "-o", str(folder), *args], capture_output=True, text=True,
                          timeout=600)


def section_summary(folder):
    """Each section's key, title, status and data (its model values), without its time."""
    doc = json.loads((folder / "results.json").read_text())
    return [{k: s[k] for k in ("key", "title", "status", "records", "data")} for s in doc["report"]["sections"]]


def test_python_and_cli_write_the_same_model_only_folder(tmp_path):
    if ridge.device_count() > 0:
        pytest.skip("a GPU is usable: the GPU test below compares the measured reports")
    r = ridge.report(tmp_path / "py", predictions={"hbm_tb_per_s": 4.1}, progress=False)
    done = cli_report(tmp_path / "cli", "--predict", "hbm_tb_per_s=4.1")
    assert done.returncode == 0, done.stderr
    assert r.ok and not r.gpu and "model only" in r.subject
    assert [s.key for s in r.sections] == ["model_roofline", "decode_ceilings", "amdahl", "predictions"]
    assert sorted(p.name for p in (tmp_path / "py").iterdir()) == sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert section_summary(tmp_path / "py") == section_summary(tmp_path / "cli")
    assert sorted(r.files) == sorted(p.name for p in r.folder.iterdir())
    assert "hbm_tb_per_s" in (tmp_path / "py" / "report.md").read_text()
    assert r.results.context["predictions"] == {"hbm_tb_per_s": 4.1}


def test_a_non_empty_folder_is_refused_and_force_keeps_the_users_files(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(ridge.UsageError, match="force"):
        ridge.report(folder, progress=False)
    assert not (folder / "report.md").exists()
    if ridge.device_count() > 0:
        return  # the forced rewrite below would run the whole GPU report
    r = ridge.report(folder, force=True, progress=False)
    assert (folder / "notes.txt").read_text() == "mine" and r.kept_files == ["notes.txt"]
    assert (folder / "report.html").is_file()


@pytest.mark.parametrize("kwargs, error", [
    ({"predictions": ["4.2"]}, ridge.UsageError),
    ({"predictions": {"hbm_tb_per_s": float("nan")}}, ridge.UsageError),
    ({"predictions": "hbm_tb_per_s=4"}, TypeError),
    ({"model": "h9000"}, ridge.UsageError),
    ({"device": "0"}, TypeError),
    ({"device": True}, TypeError),
    ({"device": -1}, ridge.UsageError),
])
def test_bad_arguments_are_refused_before_any_work(tmp_path, kwargs, error):
    with pytest.raises(error):
        ridge.report(tmp_path / "r", progress=False, **kwargs)
    assert not (tmp_path / "r").exists()


def test_progress_goes_to_stderr(tmp_path, capsys):
    if ridge.device_count() > 0:
        pytest.skip("the GPU report is run once, below")
    ridge.report(tmp_path / "r")
    err = capsys.readouterr().err
    assert "[1/4] Roofline (datasheet model) ..." in err and "Predictions done in" in err


@pytest.mark.gpu
def test_python_and_cli_reports_match_record_for_record(tmp_path):
    r = ridge.report(tmp_path / "py", quick=True, progress=False)
    done = cli_report(tmp_path / "cli", "--quick")
    assert done.returncode == 0, done.stderr
    assert r.gpu and r.ok
    cli = ridge.Results.load(tmp_path / "cli")
    assert len(r.results) == len(cli) > 0
    assert [s["key"] for s in section_summary(tmp_path / "py")] == [s["key"] for s in section_summary(tmp_path / "cli")]
    comparison = ridge.compare(tmp_path / "cli", tmp_path / "py")
    assert len(comparison.rows) == len(cli), "ridge compare did not match every record"
    assert all(row.get("verdict") != "missing" for row in comparison.rows), comparison.text


def test_a_folder_name_that_is_not_utf8_is_written_as_given(tmp_path):
    if ridge.device_count() > 0:
        pytest.skip("the GPU report is run once, above")
    import os
    folder = os.fsencode(tmp_path) + b"/r\xff"
    r = ridge.report(folder, progress=False)
    assert os.fsencode(r.folder) == folder and os.path.isfile(folder + b"/report.md")
