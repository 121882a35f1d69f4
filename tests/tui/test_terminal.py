"""The cockpit in a real terminal (tmux): `sparktui demo` fills the screen, names the hang, and keys work; a log
piped in never types keys; SIGTERM and SIGHUP end it with the terminal given back."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ..waiting import wait_until

TMUX = shutil.which("tmux")


def screen(session: str) -> str:
    return subprocess.run([TMUX or "tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session: str, *texts: str, seconds: float = 30) -> str:
    """The screen once one of ``texts`` is on it."""

    def shown() -> str:
        now = screen(session)
        return now if any(text in now for text in texts) else ""

    try:
        return wait_until(shown, seconds, f"one of {texts!r} on the screen")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the screen was:\n{screen(session)}") from None


@pytest.mark.skipif(TMUX is None, reason="tmux is installed by the test command (tools/test.sh)")
def test_demo_in_tmux() -> None:
    assert TMUX is not None
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    command = f"{sys.executable} -m sparktui demo --speed 60"
    subprocess.run([TMUX, "new-session", "-d", "-s", session, "-x", "170", "-y", "48", command], check=True)
    try:
        shown = wait_for(session, "A later NCCL communicator never completed")
        assert "spark-a" in shown and "spark-b" in shown
        assert "communicators ready" in shown
        subprocess.run([TMUX, "send-keys", "-t", session, "?"], check=True)
        wait_for(session, "sparktui: keys")
        subprocess.run([TMUX, "send-keys", "-t", session, "Escape"], check=True)
        # the help closed: the ESC was taken alone (one followed at once by a key reads as alt+key)
        wait_until(lambda: "sparktui: keys" not in screen(session), 10, "the help closed")
        subprocess.run([TMUX, "send-keys", "-t", session, "q"], check=True)
        wait_until(lambda: session not in tmux("list-sessions"), 10, "the session ended by q")
    finally:
        subprocess.run([TMUX, "kill-session", "-t", session], capture_output=True)


HANG = Path(__file__).resolve().parents[1] / "fixtures" / "nccl" / "two-hosts-second-group-not-joined" / "rank0.log"
needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is installed by the test command (tools/test.sh)")


def tmux(*args: str) -> str:
    assert TMUX is not None
    return subprocess.run([TMUX, *args], capture_output=True, text=True, check=False).stdout


def start(session: str, line: str, where: Path) -> None:
    """A bash line in a new tmux session of its own, from ``where``, with a home of its own."""
    env = f"HOME={shlex.quote(str(where))} XDG_STATE_HOME={shlex.quote(str(where / 'state'))}"
    command = f"cd {shlex.quote(str(where))} && {env} exec bash -c {shlex.quote(line)}"
    tmux("new-session", "-d", "-s", session, "-x", "170", "-y", "48", command)
    tmux("set-option", "-t", session, "remain-on-exit", "on")  # the pane stays to be looked at once it ends


def ended(session: str, seconds: float = 15) -> None:
    """Once the session's command has ended (its pane stays, dead); fails with the screen if not in time."""
    try:
        wait_until(
            lambda: tmux("display-message", "-p", "-t", session, "#{pane_dead}").strip() == "1", seconds, "the end"
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the screen was:\n{screen(session)}") from None


def waits_for_a_writer(pid: int) -> bool:
    """Whether a thread of process ``pid`` waits in open() for a FIFO's writer (its wchan)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            if (task / "wchan").read_text() == "wait_for_partner":
                return True
    return False


@needs_tmux
def test_a_log_piped_into_the_cockpit_never_types_keys(tmp_path: Path) -> None:
    """The trial's repro: the `x` bytes of the log once exported a report, and `cat rank0.log | sparktui -` typed
    into the palette; the keys now come from the terminal, and `-` reads the whole log."""
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    sparktui = f"{shlex.quote(sys.executable)} -m sparktui"
    log = f"sleep 2; printf 'xxxx'; sleep 1; printf 'x\\n:'; cat {shlex.quote(str(HANG))}; sleep 60"
    line = f"({log}) | ({sparktui} -; echo $? > ended)"  # bash waits for the pipe's writer: its end is written
    start(session, line, tmp_path)
    try:
        # Where the x bytes came in a read of their own, they name no node, and the log after them is spark-a's,
        # a node of its own: go to it (where they came with the log, the stream is spark-a's from its start).
        shown = wait_for(session, "communicators ready", "of 2 nodes in view", seconds=40)
        if "communicators ready" not in shown:
            tmux("send-keys", "-t", session, "]")
            shown = wait_for(session, "communicators ready", seconds=20)  # the log after the x bytes is read
        assert "stdin" in shown
        assert not list(tmp_path.glob("sparktui-report-*")), "log bytes were taken for the export key"
        assert "Command palette" not in shown and "Search for commands" not in shown
        tmux("send-keys", "-t", session, "q")  # the keyboard is the terminal's, while the pipe is still open
        wait_until(lambda: (tmp_path / "ended").exists(), 15, "the cockpit ended by q")
        assert (tmp_path / "ended").read_text() == "0\n"
    finally:
        tmux("kill-session", "-t", session)
    assert not list(tmp_path.glob("sparktui-report-*"))


def test_the_cockpit_with_no_terminal_refuses_in_one_line(tmp_path: Path) -> None:
    """No terminal at all (a new session, standard input a pipe): one line, exit 2, not a screen of escapes."""
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "-"],
        input=HANG.read_bytes(),
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    err = done.stderr.decode()
    assert err.count("\n") == 1 and "needs a terminal" in err and "sparktui diagnose" in err, err


@needs_tmux
@pytest.mark.parametrize("name", ["TERM", "HUP"])
def test_sigterm_and_sighup_end_the_cockpit_with_the_terminal_given_back(tmp_path: Path, name: str) -> None:
    """The trial's repro: `kill -TERM <cockpit pid>` left the pane in the alternate screen with mouse reporting
    on; the signal now ends the cockpit as `q` does."""
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    start(session, f"{shlex.quote(sys.executable)} -m sparktui demo --speed 60; echo $? > ended", tmp_path)
    try:
        wait_for(session, "communicators ready")
        modes = "#{alternate_on} #{mouse_any_flag}"
        assert tmux("display-message", "-p", "-t", session, modes).split() == ["1", "1"]  # the cockpit's own
        shell = tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip()
        pid = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True, check=True).stdout.split()
        assert len(pid) == 1
        subprocess.run(["kill", f"-{name}", pid[0]], check=True)
        ended(session)
        assert tmux("display-message", "-p", "-t", session, modes).split() == ["0", "0"]
        assert (tmp_path / "ended").read_text() == "0\n"  # ended as q ends it
    finally:
        tmux("kill-session", "-t", session)


@needs_tmux
def test_q_ends_a_cockpit_on_a_fifo_with_no_writer(tmp_path: Path) -> None:
    """The trial's repro: `q` blanked the screen and never exited (the FIFO's open() waited on a thread that the
    exit waits for)."""
    fifo = tmp_path / "rank0.fifo"
    os.mkfifo(fifo)
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    start(session, f"{shlex.quote(sys.executable)} -m sparktui {fifo}; echo $? > ended", tmp_path)
    try:
        wait_for(session, "rank0.fifo")
        tmux("send-keys", "-t", session, "q")
        ended(session)
        assert (tmp_path / "ended").read_text() == "0\n"
    finally:
        tmux("kill-session", "-t", session)


def test_ctrl_c_ends_diagnose_on_a_fifo_with_no_writer(tmp_path: Path) -> None:
    """The trial's repro: ctrl+c on `diagnose FIFO` printed its summary, then hung."""
    fifo = tmp_path / "rank0.fifo"
    os.mkfifo(fifo)
    env = {**os.environ, "HOME": str(tmp_path)}
    command = [sys.executable, "-m", "sparktui", "diagnose", str(fifo)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path) as run:
        wait_until(lambda: waits_for_a_writer(run.pid), 30, "diagnose waiting for the FIFO's writer")
        run.send_signal(signal.SIGINT)
        try:
            _out, err = run.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            run.kill()
            raise AssertionError("diagnose did not end after ctrl+c") from None
    assert b"Traceback" not in err
    # Trial 12b N44: the FIFO was tried and never read, which is said (exit 2), not taken for a quiet log.
    assert run.returncode == 2, err
    assert b"rank0.fifo: never read: it never opened" in err, err
