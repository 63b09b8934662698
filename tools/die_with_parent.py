#!/usr/bin/env python3
"""Run a program that dies with its parent: exec COMMAND with PR_SET_PDEATHSIG = SIGTERM.

    die_with_parent.py PARENT_PID COMMAND [ARG ...]

For helpers that have no such option of their own (RootCanal), started by a parent that cannot
set it between fork and exec (BLELab's Swift side uses posix_spawn). The kernel keeps the
setting across execve(2) (not for set-user-ID binaries), so when the parent dies, even by
SIGKILL, COMMAND gets SIGTERM. PARENT_PID closes the race with a parent that died before the
prctl: if our parent is no longer that process, exit 1 without running COMMAND.
Standard library only; Linux (elsewhere COMMAND is simply exec'ed).
"""

import ctypes
import os
import signal
import sys


def main() -> int:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.stderr.write(__doc__)
        return 2
    parent, command = int(sys.argv[1]), sys.argv[2:]
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            sys.stderr.write("die_with_parent: prctl(PR_SET_PDEATHSIG) failed: %s\n" % os.strerror(ctypes.get_errno()))
            return 1
        if os.getppid() != parent:
            sys.stderr.write("die_with_parent: the parent (pid %d) is gone already; not starting %s\n" % (parent, command[0]))
            return 1
    try:
        os.execv(command[0], command)
    except OSError as err:
        sys.stderr.write("die_with_parent: cannot run %s: %s\n" % (command[0], err))
        return 127


if __name__ == "__main__":
    sys.exit(main())
