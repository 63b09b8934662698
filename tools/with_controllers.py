#!/usr/bin/env python3
"""Run a command against freshly started virtual controllers, then clean up whatever happens.

    with_controllers.py [options] rootcanal [--hci-port P] -- COMMAND [ARG ...]
    with_controllers.py [options] bumble N [--unix] [--stock] -- COMMAND [ARG ...]

Starts RootCanal (its binary from the venv, every port chosen by the kernel unless --hci-port)
or N Bumble controllers (tools/bumble_controllers.py; TCP, or unix sockets with --unix) in
their own process group, waits until they listen, runs COMMAND, and on its end, on a failure,
on Ctrl-C or on SIGTERM stops the whole group (SIGTERM, then SIGKILL after 3 s) and checks
that nothing is left. Exits with COMMAND's status (1 when the controllers did not start).

In COMMAND's arguments, {ep0}, {ep1}, … become the endpoints (with RootCanal every {epN} is its
one HCI port: each connection there is a new controller), {endpoints} their comma-separated
list and {python} the venv's Python. The environment gets BLELAB_H4_ENDPOINTS (that list) and
BLELAB_VENV_PYTHON.

Options: --venv DIR (default $BUILD_DIR/venv or build/venv), --log-dir DIR (default
$BUILD_DIR/tiers/logs), --timeout S (to listen; 20).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procs import Signals, StartError, note, start_bumble, start_rootcanal, venv_python  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def substitute(arg: str, endpoints: list, python: str, same_endpoint: bool) -> str:
    def ep(m):
        i = int(m.group(1))
        if same_endpoint:
            return endpoints[0]
        if i >= len(endpoints):
            raise SystemExit("with_controllers: {ep%d} but only %d endpoint(s)" % (i, len(endpoints)))
        return endpoints[i]
    arg = re.sub(r"\{ep(\d+)\}", ep, arg)
    return arg.replace("{endpoints}", ",".join(endpoints)).replace("{python}", python)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    own, command = argv[:split], argv[split + 1:]
    build = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--venv", default=os.environ.get("VENV", os.path.join(build, "venv")))
    ap.add_argument("--log-dir", default=os.path.join(build, "tiers", "logs"))
    ap.add_argument("--timeout", type=float, default=20.0)
    sub = ap.add_subparsers(dest="tool", required=True)
    rc = sub.add_parser("rootcanal")
    rc.add_argument("--hci-port", type=int, default=0)
    bu = sub.add_parser("bumble")
    bu.add_argument("count", type=int)
    bu.add_argument("--unix", action="store_true")
    bu.add_argument("--stock", action="store_true")
    args = ap.parse_args(own)
    if not command:
        ap.error("no COMMAND after --")

    helper = None
    child = None
    status = 1
    unix_dir = None
    with Signals():
        try:
            python = venv_python(args.venv)
            t0 = time.monotonic()
            if args.tool == "rootcanal":
                helper, endpoint = start_rootcanal(args.venv, args.log_dir, args.hci_port, args.timeout)
                endpoints = [endpoint]
            else:
                if args.unix:
                    # Short paths: a unix socket path holds at most 107 bytes.
                    unix_dir = tempfile.mkdtemp(prefix="blelab-h4-")
                helper, endpoints = start_bumble(args.venv, args.log_dir, args.count, unix_dir=unix_dir,
                                                 stock=args.stock, timeout=args.timeout)
            note("with_controllers: %s (pid %d) listening after %.3f s on %s; logs in %s"
                 % (helper.name, helper.pid, time.monotonic() - t0, " ".join(endpoints), args.log_dir))
            same = args.tool == "rootcanal"
            cmd = [substitute(a, endpoints, python, same) for a in command]
            env = dict(os.environ, BLELAB_H4_ENDPOINTS=",".join(endpoints), BLELAB_VENV_PYTHON=python)
            child = subprocess.Popen(cmd, env=env)
            status = child.wait()
            if helper is not None and not helper.alive():
                note("with_controllers: %s died while the command ran (status %s)\n%s"
                     % (helper.name, helper.proc.returncode, helper.tail()))
                status = status or 1
        except StartError as err:
            note("with_controllers: %s" % err)
            status = 1
        except KeyboardInterrupt as err:
            note("with_controllers: interrupted (%s); cleaning up" % (err or "Ctrl-C"))
            status = 130
        finally:
            if child is not None and child.poll() is None:
                child.terminate()
                try:
                    child.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
            if helper is not None:
                note("with_controllers: stopped " + helper.stop())
            if unix_dir:
                for name in os.listdir(unix_dir):
                    os.unlink(os.path.join(unix_dir, name))
                os.rmdir(unix_dir)
    return status


if __name__ == "__main__":
    sys.exit(main())
