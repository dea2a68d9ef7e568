"""A crash inside compiled code ends a command with one line and exit status 4, never a bare signal.

The command line runs the command in a forked child (``bayesrepro/cli/contained.py``). Here the command's
``main`` is replaced, inside a fresh interpreter that starts the command line as the script does, by work that
crashes the way a native library does: a read of address 0 (SIGSEGV), an abort (SIGABRT), a kill by the
operating system (SIGKILL).
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from bayesrepro.cli.contained import crash_message
from bayesrepro.errors import EXIT_NATIVE_CRASH

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the command runs in the process itself without fork")

CRASHES = {
    "segfault": "import ctypes; ctypes.string_at(0)",
    "abort": "import os; os.abort()",
    "oom_kill": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
}


def command_line(work: str, extra: str = "") -> list[str]:
    """``python`` starting the command line as the console script does, its ``main`` replaced by ``work``."""
    script = (f"import sys\nimport bayesrepro.cli as cli\n{extra}\n"
              f"def main(argv=None):\n    print('before the work', flush=True)\n    {work}\n    return 0\n"
              f"cli.main = main\nsys.exit(cli.console_main())\n")
    return [sys.executable, "-c", script]


@pytest.mark.parametrize("crash, signal_name, words", [
    ("segfault", "SIGSEGV", "crashed inside a compiled library"),
    ("abort", "SIGABRT", "crashed inside a compiled library"),
    ("oom_kill", "SIGKILL", "for want of memory"),
])
def test_a_native_crash_is_one_line_and_status_4(crash, signal_name, words):
    done = subprocess.run(command_line(CRASHES[crash]), capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BAYESREPRO_DEBUG": ""})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == EXIT_NATIVE_CRASH, done
    assert len(lines) == 1 and lines[0].startswith("bayesrepro: error: "), done.stderr
    assert signal_name in lines[0] and words in lines[0]
    assert done.stdout == "before the work\n"   # what the command wrote before it crashed, once


def test_the_debug_variable_shows_where_the_crash_happened():
    done = subprocess.run(command_line(CRASHES["segfault"]), capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BAYESREPRO_DEBUG": "1"})
    assert done.returncode == EXIT_NATIVE_CRASH
    assert "Fatal Python error: Segmentation fault" in done.stderr and "in main" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("bayesrepro: error: ")


@pytest.mark.parametrize("status", [0, 2, 3, 130, 141])
def test_the_commands_own_exit_status_passes_through(status):
    done = subprocess.run(command_line(f"return {status}"), capture_output=True, text=True, timeout=120)
    assert done.returncode == status and done.stderr == ""


def test_a_signal_sent_to_the_command_ends_its_work_and_the_command_by_that_signal(tmp_path):
    pid_file = tmp_path / "worker.pid"
    work = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    process = subprocess.Popen(command_line(work), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    assert worker != process.pid
    process.send_signal(signal.SIGTERM)   # as `timeout` or a job scheduler sends it: to the command's process only
    _, err = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGTERM and err == ""
    assert not _alive(worker)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_the_work_ends_when_the_command_is_killed_outright(tmp_path):
    pid_file = tmp_path / "worker.pid"
    work = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    process = subprocess.Popen(command_line(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    process.kill()
    process.wait(timeout=60)
    deadline = time.monotonic() + 30
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


def test_the_line_names_the_signal_for_any_signal():
    assert "SIGBUS" in crash_message(signal.SIGBUS) and "please report it" in crash_message(signal.SIGBUS)
    assert "--max-memory" in crash_message(signal.SIGKILL)
    realtime = signal.SIGRTMIN + 3 if hasattr(signal, "SIGRTMIN") else 77   # a signal without a name
    assert f"signal {int(realtime)}" in crash_message(realtime)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:   # a zombie (ended, not yet reaped by init) is not alive
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


COUNT_INTERRUPTS = """import signal, time
    got = []
    signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    print('ready', flush=True)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        time.sleep(0.02)
    print('interrupts', len(got), flush=True)"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux tells a terminal's signal from a process's")
@pytest.mark.parametrize("sender", ["terminal", "process"])
def test_a_ctrl_c_reaches_the_work_once(sender):
    import pty

    pid, terminal = pty.fork()
    if pid == 0:   # the command, in a new session whose controlling terminal is the pseudo-terminal
        os.execv(sys.executable, command_line(COUNT_INTERRUPTS))
    shown = b""
    while b"ready" not in shown:
        shown += os.read(terminal, 1024)
    if sender == "terminal":
        os.write(terminal, b"\x03")   # Ctrl-C typed there: the kernel signals the whole foreground group
    else:
        os.kill(pid, signal.SIGINT)   # to the command's process alone
    while True:
        try:
            data = os.read(terminal, 1024)
        except OSError:   # the terminal's other end closed
            break
        if not data:
            break
        shown += data
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"interrupts 1" in shown, shown
