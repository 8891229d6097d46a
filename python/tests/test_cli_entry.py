"""The `ridge` console script runs the command-line tool that ships inside the package."""
import subprocess
import sys

import ridge
from ridge import _cli


def run_console_script(*args):
    code = "import sys, ridge._cli; sys.argv[0] = 'ridge'; ridge._cli.main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)


def test_the_package_ships_the_command_line_tool():
    assert _cli.executable().is_file(), f"{_cli.executable()} is missing from the package"


def test_the_console_script_runs_the_tool():
    done = run_console_script("--version")
    assert done.returncode == 0, done.stderr
    assert "ridge" in done.stdout and ridge.__version__ in done.stdout


def test_the_tool_keeps_its_exit_codes():
    done = run_console_script("no-such-command")
    assert done.returncode == 2, (done.returncode, done.stderr)


def test_the_tool_works_without_a_gpu_for_model_only_work():
    done = run_console_script("amdahl", "--fraction", "0.3", "--speedup", "3")
    assert done.returncode == 0, done.stderr
    assert "1.25" in done.stdout
