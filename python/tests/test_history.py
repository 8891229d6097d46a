"""ridge.History: the run history of `ridge history`, from Python, on two stored H200 runs (the
gate's run-1 and run-2: the same report measured twice on one H200)."""
import inspect
import json
import os
import subprocess
from pathlib import Path

import pytest

import ridge
from ridge import _cli, _ridge

GATE = Path(__file__).resolve().parents[2] / "results" / "h200" / "gate"
RUN_FILES = [GATE / "run-1.results.json.gz", GATE / "run-2.results.json.gz"]
# The record the step is injected into: a 3.2 GB add, about 0.93 ms on the H200, judged by the threshold alone.
STEPPED = {"name": "bandwidth.add", "method": "graph_replay", "elements": 268435456, "variant": "scalar"}

needs_history = pytest.mark.skipif(not _ridge.have_history,
                                   reason="this ridge was built without SQLite (libsqlite3-dev): no run history")


def stored_run(index: int, *, day: int, slower: float = 1.0) -> ridge.Results:
    """Stored run `index` (0 or 1) as a run of day `day`; the stepped record's samples times `slower`."""
    run = ridge.Results.load(RUN_FILES[index])
    run.context["timestamp_utc"] = f"2026-12-{day:02d}T12:00:00Z"
    for record in run.records:
        if is_stepped(record):
            record["samples_ms"] = [s * slower for s in record["samples_ms"]]
    return run


def is_stepped(record: dict) -> bool:
    params = record.get("params", {})
    return (record["name"], record["method"], params.get("elements"), params.get("variant")) == \
        (STEPPED["name"], STEPPED["method"], STEPPED["elements"], STEPPED["variant"])


def stepped_history(path, runs=6, slower_from=5, slower=1.2) -> ridge.History:
    """`runs` runs at commits c0, c1, ... alternating the two stored runs; from commit
    `slower_from` on, the stepped record is `slower` times slower."""
    history = ridge.History(path)
    for i in range(runs):
        history.add(stored_run(i % 2, day=i + 1, slower=slower if i >= slower_from else 1.0), commit=f"c{i}",
                    branch="main")
    return history


@needs_history
def test_adding_the_same_run_twice_changes_nothing(tmp_path):
    history = ridge.History(tmp_path / "h.db")
    first = history.add(ridge.Results.load(RUN_FILES[0]), commit="aaa", branch="main")
    assert first.added and first.run_id == 1 and first.commit == "aaa" and len(first.content_hash) == 16
    again = history.add(ridge.Results.load(RUN_FILES[0]), commit="bbb")
    assert not again.added and again.run_id == first.run_id and again.content_hash == first.content_hash
    # The same run read from its file (as `ridge history add` reads it) is the same run.
    from_file = history.add(RUN_FILES[0])
    assert not from_file.added and from_file.run_id == first.run_id
    assert history.add(RUN_FILES[1], commit="aaa").added
    assert history.schema_version == _ridge.history_schema_version


@needs_history
def test_runs_are_a_frame_one_row_per_run(tmp_path):
    pytest.importorskip("pandas")
    history = ridge.History(tmp_path / "h.db")
    history.add(RUN_FILES[0], commit="aaa", branch="main")
    history.add(RUN_FILES[1], commit="bbb", branch="main")
    runs = history.runs
    assert list(runs["commit"]) == ["aaa", "bbb"] and list(runs["id"]) == [1, 2]
    first = ridge.Results.load(RUN_FILES[0])
    assert runs["records"].iloc[0] == len(first.records)
    assert runs["gpu"].iloc[0] == first.context["device"]["name"]
    assert runs["machine"].iloc[0] == first.context["hostname"]
    assert runs["source"].iloc[0] == str(RUN_FILES[0])
    for column in ("branch", "run_time_utc", "driver_version", "ridge_version", "ridge_build"):
        assert column in runs.columns
    assert history.load_run(1).records == first.records


@needs_history
def test_an_empty_history_has_the_columns_and_no_rows(tmp_path):
    pytest.importorskip("pandas")
    history = ridge.History(tmp_path / "h.db")
    assert len(history.runs) == 0 and "commit" in history.runs.columns
    assert len(history.series()) == 0 and "median_ms" not in history.series().columns


@needs_history
def test_series_gives_one_row_per_run_per_record(tmp_path):
    pytest.importorskip("pandas")
    history = stepped_history(tmp_path / "h.db", runs=3, slower_from=2, slower=2.0)
    rows = history.series("bandwidth.add", method="graph_replay")
    stepped = rows[(rows["param.elements"] == STEPPED["elements"]) & (rows["param.variant"] == STEPPED["variant"])]
    assert list(stepped["commit"]) == ["c0", "c1", "c2"] and stepped["series"].nunique() == 1
    medians = [ridge.Results.load(f).to_pandas() for f in RUN_FILES]
    expected = [m[(m["name"] == "bandwidth.add") & (m["method"] == "graph_replay") &
                  (m["param.elements"] == STEPPED["elements"]) & (m["param.variant"] == STEPPED["variant"])]
                ["median_ms"].iloc[0] for m in medians]
    assert stepped["median_ms"].iloc[0] == pytest.approx(expected[0])
    assert stepped["median_ms"].iloc[1] == pytest.approx(expected[1])
    assert stepped["median_ms"].iloc[2] == pytest.approx(2 * expected[0])
    assert set(rows["name"]) == {"bandwidth.add"} and set(rows["method"]) == {"graph_replay"}
    assert {"run_id", "run_time_utc", "machine", "gpu", "driver_version", "min_ms", "max_ms"} <= set(rows.columns)
    assert "samples_ms" not in rows.columns
    with_samples = history.series("bandwidth.add", samples=True)
    assert all(len(s) > 0 for s in with_samples["samples_ms"])
    assert len(history.series(gpu="no such GPU")) == 0
    assert len(history.series()) == 3 * len(ridge.Results.load(RUN_FILES[0]).records)


@needs_history
def test_check_finds_a_step_injected_at_the_newest_commit(tmp_path):
    history = stepped_history(tmp_path / "h.db")
    check = history.check()
    assert isinstance(check, ridge.HistoryCheck) and not check.nothing_compared
    assert check.runs == 6 and check.newest_commit == "c5" and check.series_judged > 0
    found = [c for c in check.changes if (c.name, c.method, c.params.get("elements"), c.params.get("variant")) ==
             (STEPPED["name"], STEPPED["method"], STEPPED["elements"], STEPPED["variant"])]
    assert len(found) == 1, check.text
    step = found[0]
    assert isinstance(step, ridge.HistoryChange)
    assert step.regression and step.at_newest_commit and step.commit == "c5" and step.previous_commit == "c4"
    assert step.ratio == pytest.approx(1.2, rel=0.02) and step.ratio_ci_low <= step.ratio <= step.ratio_ci_high
    assert step.p_value < step.alpha and step.runs_after == 1
    assert check.regression_at_newest and step in check.regressions
    assert "REGRESSION" in check.text and "c5" in check.text


@needs_history
def test_check_with_a_threshold_above_the_step_finds_no_regression_at_the_newest_commit(tmp_path):
    history = stepped_history(tmp_path / "h.db")
    check = history.check(threshold=0.5)
    assert not check.regression_at_newest and not check.nothing_compared
    assert check.data["threshold"] == 0.5


@needs_history
def test_check_since_reviews_only_later_commits(tmp_path):
    history = stepped_history(tmp_path / "h.db", runs=6, slower_from=3)
    everything = history.check()
    assert any(c.commit == "c3" and c.regression for c in everything.changes), everything.text
    late = history.check(since="c3")
    assert all(c.commit in ("c4", "c5") for c in late.changes) and 0 < late.candidates < everything.candidates
    with pytest.raises(ridge.UsageError, match="since: commit 'nosuch' is not in the history"):
        history.check(since="nosuch")


@needs_history
def test_one_run_is_nothing_to_judge(tmp_path):
    history = ridge.History(tmp_path / "h.db")
    history.add(RUN_FILES[0], commit="aaa")
    check = history.check()
    assert check.nothing_compared and not check.changes and not check.regression_at_newest


def test_check_defaults_are_the_libraries():
    defaults = _ridge.CheckOptions()
    params = inspect.signature(ridge.History.check).parameters
    assert params["threshold"].default == defaults.threshold
    assert params["alpha"].default == defaults.alpha
    assert params["window_runs"].default == defaults.window_runs


@needs_history
def test_bad_check_options_name_the_field(tmp_path):
    history = stepped_history(tmp_path / "h.db", runs=2)
    with pytest.raises(ridge.UsageError, match="^window_runs") as error:
        history.check(window_runs=0)
    assert "--" not in str(error.value)
    with pytest.raises(ridge.UsageError, match="threshold"):
        history.check(threshold=-1.0)


@needs_history
def test_export_and_import_round_trip(tmp_path):
    history = stepped_history(tmp_path / "h.db", runs=3)
    text = history.export_json_lines(tmp_path / "runs.jsonl")
    assert len(text.splitlines()) == 3 and (tmp_path / "runs.jsonl").read_text() == text
    copy = ridge.History(tmp_path / "copy.db")
    assert copy.import_json_lines(tmp_path / "runs.jsonl") == ridge.HistoryImport(added=3, already_present=0)
    assert copy.export_json_lines() == text
    assert copy.import_json_lines(tmp_path / "runs.jsonl") == ridge.HistoryImport(added=0, already_present=3)
    # The CLI reads the file Python wrote.
    done = subprocess.run([str(_cli.executable()), "history", "runs", str(tmp_path / "copy.db")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.count(" c") >= 3, done.stderr


@needs_history
def test_a_bad_line_imports_nothing(tmp_path):
    history = stepped_history(tmp_path / "h.db", runs=2)
    lines = history.export_json_lines().splitlines()
    (tmp_path / "bad.jsonl").write_text(lines[0] + "\n{not json\n" + lines[1] + "\n")
    copy = ridge.History(tmp_path / "copy.db")
    with pytest.raises(ridge.UsageError, match="bad.jsonl.*line 2"):
        copy.import_json_lines(tmp_path / "bad.jsonl")
    assert copy.export_json_lines() == ""
    (tmp_path / "latin1.jsonl").write_bytes(b"\xff\xfe\n")
    with pytest.raises(ridge.UsageError, match="not UTF-8"):
        copy.import_json_lines(tmp_path / "latin1.jsonl")


@needs_history
def test_a_folder_is_refused(tmp_path):
    with pytest.raises(ridge.NotAFileError) as error:
        ridge.History(tmp_path)
    assert isinstance(error.value, IsADirectoryError) and isinstance(error.value, ridge.UsageError)


@needs_history
def test_a_file_that_is_not_sqlite_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "notes.db"
    content = b"these are notes, not a database\n" * 200
    path.write_bytes(content)
    with pytest.raises(ridge.UsageError, match="not an SQLite database"):
        ridge.History(path)
    assert path.read_bytes() == content


@needs_history
def test_a_missing_file_is_refused_without_create(tmp_path):
    with pytest.raises(ridge.PathNotFoundError):
        ridge.History(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    ridge.History(tmp_path / "made.db").close()
    with ridge.History(tmp_path / "made.db", create=False) as history:
        assert history.path == tmp_path / "made.db"


@needs_history
def test_adding_what_is_not_a_run_is_refused(tmp_path):
    history = ridge.History(tmp_path / "h.db")
    (tmp_path / "x.json").write_text(json.dumps({"not": "a result file"}))
    with pytest.raises(ridge.UsageError):
        history.add(tmp_path / "x.json", commit="aaa")
    with pytest.raises(ridge.PathNotFoundError):
        history.add(tmp_path / "missing.json", commit="aaa")
    with pytest.raises(TypeError, match="expected Results"):
        history.add(42)
    assert history.export_json_lines() == ""


def test_without_sqlite_history_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(_ridge, "have_history", False)
    with pytest.raises(ridge.Error, match="built without SQLite: install libsqlite3-dev"):
        ridge.History(tmp_path / "h.db")
    assert not (tmp_path / "h.db").exists()


@needs_history
def test_the_report_adds_its_run_to_a_history(tmp_path):
    if ridge.device_count() > 0:
        pytest.skip("a GPU is usable: this test writes the model-only report (the CLI test covers the rest)")
    report = ridge.report(tmp_path / "report", history=tmp_path / "h.db", progress=False)
    assert report.history is not None and report.history.added and report.history.run_id == 1
    history = ridge.History(tmp_path / "h.db", create=False)
    # The folder added again is the same run: the report added what its results.json holds.
    assert not history.add(report.folder).added
    with pytest.raises(ridge.UsageError, match="not an SQLite database"):
        (tmp_path / "notes.txt").write_text("notes\n" * 100)
        ridge.report(tmp_path / "second", history=tmp_path / "notes.txt", progress=False)
    assert not (tmp_path / "second").exists()


HOSTILE = [
    ("path int", lambda t: ridge.History(5), TypeError),
    ("path nul", lambda t: ridge.History("a\0b"), ValueError),
    ("path in a missing folder", lambda t: ridge.History(t / "no" / "h.db"), ridge.UsageError),
    ("check nan threshold", lambda t: ridge.History(t / "h.db").check(threshold=float("nan")), ridge.UsageError),
    ("check alpha 0", lambda t: ridge.History(t / "h.db").check(alpha=0.0), ridge.UsageError),
    ("check negative window", lambda t: ridge.History(t / "h.db").check(window_runs=-1), TypeError),
    ("check window str", lambda t: ridge.History(t / "h.db").check(window_runs="5"), TypeError),
    ("check since int", lambda t: ridge.History(t / "h.db").check(since=5), TypeError),
    ("add None", lambda t: ridge.History(t / "h.db").add(None), TypeError),
    ("add commit int", lambda t: ridge.History(t / "h.db").add(RUN_FILES[0], commit=5), TypeError),
    ("import missing", lambda t: ridge.History(t / "h.db").import_json_lines(t / "none.jsonl"), FileNotFoundError),
    ("import folder", lambda t: ridge.History(t / "h.db").import_json_lines(t), IsADirectoryError),
    ("load_run missing", lambda t: ridge.History(t / "h.db").load_run(99), ridge.UsageError),
]


@needs_history
@pytest.mark.parametrize("name, call, expected", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_argument(tmp_path, name, call, expected):
    with pytest.raises(expected) as caught:
        call(tmp_path)
    assert str(caught.value), "an exception without a message"


@needs_history
def test_files_under_names_that_are_not_utf8(tmp_path):
    folder = os.fsencode(tmp_path)
    history = ridge.History(folder + b"/h\xe9.db")
    assert history.path == tmp_path / os.fsdecode(b"h\xe9.db")
    run = folder + b"/run\xff.json"
    ridge.Results.load(RUN_FILES[0]).write(run)
    assert history.add(run, commit="aaa").added
    # The source is the name as ridge's messages show it (\xNN), here inside JSON (\\xNN).
    assert "run\\\\xff.json" in history.export_json_lines()
    exported = folder + b"/runs\xff.jsonl"
    history.export_json_lines(exported)
    copy = ridge.History(os.fsdecode(folder + b"/copy\xff.db"))
    assert copy.import_json_lines(exported).added == 1


@needs_history
def test_check_takes_a_level_detector_by_name(tmp_path):
    history = stepped_history(tmp_path / "h.db")
    assert history.check(detector="run_medians").regression_at_newest
    # History keeps one number a run: the rank test, which needs raw samples, says so.
    with pytest.raises(ridge.UsageError, match="needs"):
        history.check(detector="rank_test")
    with pytest.raises(ridge.UsageError, match="rank_test, run_medians"):
        history.check(detector="nope")
