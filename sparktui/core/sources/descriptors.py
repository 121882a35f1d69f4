"""Open descriptors: enough for the files a session follows, or a clear reason why not.

A followed file keeps its descriptor open while it is followed (so that a file rotated away is still read to
its end), so a session that follows thousands of files takes thousands of descriptors, more than the soft
limit a shell usually gives (``ulimit -n``: often 1024). :func:`make_room` raises the soft limit for them, up
to the hard limit (``ulimit -Hn``), as any process may. Where even the hard limit is too low, the followed
files take at most all but :data:`RESERVE` of them (:func:`take`), so the spool, connections and the terminal
still get theirs; a file that finds none left, or that the system refuses to open for want of them, says
so, with what to do (:func:`why_not`), and the session goes on with the others.
"""

from __future__ import annotations

import errno
import resource

#: Descriptors kept for all else a session opens: the spool's files (``spool.OPEN_SOURCES`` sources, two
#: each), connections, pipes, the terminal, Python's own; a quarter of a lower limit (see :func:`reserve`).
RESERVE = 256

_followed = 0  # the files this process follows, as the last make_room was told
_taken = 0  # descriptors held by followed files now


def make_room(files: int) -> int:
    """Raise this process's soft limit on open descriptors to fit ``files`` followed files and
    :data:`RESERVE` more, up to the hard limit (never lowered); returns the soft limit now."""
    global _followed
    _followed = files
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = files + RESERVE
    if soft != resource.RLIM_INFINITY and soft < want:
        raised = want if hard == resource.RLIM_INFINITY else min(want, hard)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            except (ValueError, OSError):
                return soft
            return raised
    return soft


def take() -> bool:
    """Take a descriptor for a followed file, unless followed files hold all but :func:`reserve` of the soft
    limit already; :func:`give` it back when the file is closed."""
    global _taken
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and _taken >= soft - reserve(soft):
        return False
    _taken += 1
    return True


def reserve(soft: int) -> int:
    """The descriptors of a soft limit of ``soft`` that followed files leave to the rest: :data:`RESERVE`, or a
    quarter of a limit under 1,024 (so that ``ulimit -n 256`` still follows about 190 files)."""
    return min(RESERVE, soft // 4)


def give() -> None:
    global _taken
    _taken -= 1


def none_left() -> str:
    """Why a followed file is not opened when :func:`take` finds no descriptor for it."""
    return "no open file left for it" + _advice()


def why_not(exc: OSError) -> str:
    """What to add to the error of a file that could not be opened: for running out of descriptors, how
    many this process may open and for how many followed files; nothing for another error."""
    if exc.errno == errno.ENFILE:
        return " (the whole system is out of open files: see fs.file-max)"
    return _advice() if exc.errno == errno.EMFILE else ""


def _advice() -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return (
        f" (this session follows {_followed} files and may open {soft} files,"
        f" {reserve(soft)} of them kept for the rest;"
        f" the hard limit is {'unlimited' if hard == resource.RLIM_INFINITY else hard}: raise it"
        " (ulimit -Hn, systemd's LimitNOFILE=), or follow fewer files)"
    )
