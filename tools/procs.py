"""Starting, waiting for and cleaning up the socket tier's helper processes (standard library only).

The pattern (docs/tiers.md, "Readiness and cleanup"), which BLELab's Swift side mirrors:
  1. start the helper in a new session (setsid: its own process group, no controlling terminal,
     so a terminal's Ctrl-C reaches only us and we decide the order of shutdown), stdin from
     /dev/null, stdout and stderr to log files (never to a pipe nobody drains: RootCanal logs
     every HCI command at debug level and would block on a full pipe);
  2. wait until it listens — poll without connecting (/proc/net/tcp, /proc/net/unix: a probe
     connection to RootCanal creates a controller, and one to a one-host-at-a-time endpoint
     could be taken for the host) — with a deadline, failing early if the process exits, and
     putting the tail of its log in the error;
  3. on success, failure, Ctrl-C or SIGTERM: killpg(SIGTERM) the whole group, wait up to a grace
     period, then killpg(SIGKILL); then check the group is empty (killpg(pgid, 0) fails with
     ESRCH), so nothing is left behind.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time


class StartError(Exception):
    pass


class Managed:
    """A helper process in its own session and process group, with its output in log files."""

    def __init__(self, name: str, argv: list, log_dir: str, env: dict = None, stdin=None):
        self.name, self.argv, self.log_dir = name, list(argv), log_dir
        os.makedirs(log_dir, exist_ok=True)
        self.out_path = os.path.join(log_dir, name + ".out")
        self.err_path = os.path.join(log_dir, name + ".err")
        self.env, self.stdin = env, stdin
        self.proc = None
        self.started = None

    def start(self):
        out = open(self.out_path, "wb")
        err = open(self.err_path, "wb")
        try:
            self.proc = subprocess.Popen(self.argv, stdin=self.stdin if self.stdin is not None else subprocess.DEVNULL,
                                         stdout=out, stderr=err, env=self.env, start_new_session=True,
                                         preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        except OSError as e:
            raise StartError("%s: cannot start %s: %s" % (self.name, self.argv[0], e)) from e
        finally:
            out.close()
            err.close()
        self.started = time.monotonic()
        return self

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def read_out(self) -> str:
        try:
            with open(self.out_path, "r", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 25) -> str:
        chunks = []
        for path in (self.err_path, self.out_path):
            try:
                with open(path, "r", errors="replace") as f:
                    text = f.read().splitlines()
            except FileNotFoundError:
                continue
            # RootCanal's start-up lists ~20 harmless "command validation failed" lines; skip them.
            text = [t for t in text if "validation failed" not in t]
            if text:
                chunks.append("--- %s (last %d lines)\n%s" % (path, min(lines, len(text)), "\n".join(text[-lines:])))
        return "\n".join(chunks) or "(no output)"

    def wait_until(self, predicate, timeout: float, what: str):
        """Polls predicate() every 10 ms until it returns a true value (returned), the process
        exits (StartError with its log) or the deadline passes (StartError with its log)."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if not self.alive():
                code = self.proc.poll()
                raise StartError("%s exited (status %s) before %s\n%s" % (self.name, code, what, self.tail()))
            if time.monotonic() > deadline:
                raise StartError("%s: no %s within %.1f s\n%s" % (self.name, what, timeout, self.tail()))
            time.sleep(0.01)

    def stop(self, grace: float = 3.0) -> str:
        """SIGTERM to the whole group, SIGKILL after `grace` seconds; returns what happened."""
        if self.proc is None:
            return "%s: never started" % self.name
        pgid = self.proc.pid  # start_new_session: the group id is the leader's pid
        t0 = time.monotonic()
        how = "SIGTERM"
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            how = "SIGKILL after %.1f s" % grace
        # The leader may be gone while children of the group live on: make sure.
        if group_alive(pgid):
            deadline = time.monotonic() + grace
            while group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if group_alive(pgid):
                how = "SIGKILL after %.1f s" % grace
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=5)
        time.sleep(0.01)
        left = group_alive(pgid)
        return "%s (pid %d): %s, gone in %.3f s, status %s%s" % (
            self.name, pgid, how, time.monotonic() - t0, self.proc.returncode,
            "; PROCESSES LEFT IN GROUP %d" % pgid if left else "; nothing left behind")


def _die_with_parent():
    """In the child, between fork and exec: ask the kernel for SIGTERM when our parent dies
    (prctl PR_SET_PDEATHSIG survives exec), so even a parent killed with SIGKILL leaves no
    helper behind. Only the helper itself gets it, not its own children: RootCanal is started
    as its binary (no wrapper) and bumble_controllers.py is one process, so that is enough."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort
        pass


def group_alive(pgid: int) -> bool:
    """True while any process (zombies of other parents aside) remains in process group pgid."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(…, 0) also succeeds for zombies; look for a live member.
    try:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
        return False
    except FileNotFoundError:  # no /proc: trust killpg
        return True


# ---------------------------------------------------------------------------------------------
# Readiness without connecting

def tcp_listening(port: int, host: str = "127.0.0.1") -> bool:
    """True when some socket listens on TCP `port` (Linux: /proc/net/tcp{,6}; elsewhere a connect)."""
    found_proc = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        found_proc = True
        for line in lines:
            parts = line.split()
            if len(parts) > 3 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                return True
    if found_proc:
        return False
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def unix_listening(path: str) -> bool:
    """True when a unix stream socket listens at `path` (Linux: /proc/net/unix; else a connect)."""
    try:
        with open("/proc/net/unix") as f:
            for line in f.read().splitlines()[1:]:
                parts = line.split()
                # Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 = listening
                if len(parts) >= 8 and parts[-1] == path and int(parts[3], 16) & 0x10000:
                    return True
        return False
    except OSError:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return True
        except OSError:
            return False
        finally:
            s.close()


def endpoint_listening(endpoint: str) -> bool:
    if endpoint.startswith("unix:"):
        return unix_listening(endpoint[5:])
    host, _, port = endpoint.split(":", 1)[1].rpartition(":")
    return tcp_listening(int(port), host)


# ---------------------------------------------------------------------------------------------
# The two tools

def venv_python(venv: str) -> str:
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        raise StartError("no venv at %s: run tools/setup-venv.sh (make venv) first" % venv)
    return python


def rootcanal_binary(venv: str) -> str:
    """The RootCanal executable inside the venv's rootcanal package. `python -m rootcanal` only
    runs it as a child (subprocess.call): signalling that wrapper alone leaves the binary running."""
    out = subprocess.run([venv_python(venv), "-c",
                          "import rootcanal.binaries as b; print(b.get_package_binary_resource_path('rootcanal'))"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise StartError("cannot locate RootCanal in %s: %s" % (venv, out.stderr.strip()))
    return out.stdout.strip()


HCI_OPEN_RE = re.compile(r"Opening an HCI with port (\d+)")
LISTENING_RE = re.compile(r"Listening on: (\d+)")


def rootcanal_hci_port(log_text: str):
    """From RootCanal's log: the port of the listener opened right after 'Opening an HCI with port'."""
    m = HCI_OPEN_RE.search(log_text)
    if not m:
        return None
    n = LISTENING_RE.search(log_text, m.end())
    return int(n.group(1)) if n else None


def start_rootcanal(venv: str, log_dir: str, hci_port: int = 0, timeout: float = 10.0):
    """Starts RootCanal with every port free (0: the kernel picks, so runs never collide) or the
    HCI port given; returns (Managed, "tcp:127.0.0.1:PORT") once that port listens."""
    binary = rootcanal_binary(venv)
    argv = [binary, "--hci_port=%d" % hci_port, "--test_port=0", "--link_port=0", "--link_ble_port=0"]
    proc = Managed("rootcanal", argv, log_dir).start()
    try:
        def ready():
            text = proc.read_out() + open(proc.err_path, errors="replace").read()
            if "Error binding" in text:
                raise StartError("RootCanal could not bind a port (it keeps running regardless)\n" + proc.tail())
            port = rootcanal_hci_port(text)
            return port if port and tcp_listening(port) else None
        port = proc.wait_until(ready, timeout, "HCI port listening")
    except BaseException:
        proc.stop()
        raise
    proc.ready_after = time.monotonic() - proc.started
    return proc, "tcp:127.0.0.1:%d" % port


def start_bumble(venv: str, log_dir: str, count: int, unix_dir: str = None, stock: bool = False,
                 base_port: int = 0, timeout: float = 20.0):
    """Starts tools/bumble_controllers.py; returns (Managed, [endpoint, ...]) once each listens."""
    import json
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bumble_controllers.py")
    argv = [venv_python(venv), script, str(count)]
    if unix_dir:
        argv += ["--unix-dir", unix_dir]
    else:
        argv += ["--base-port", str(base_port)]
    if stock:
        argv.append("--stock")
    proc = Managed("bumble-controllers", argv, log_dir).start()
    try:
        def ready():
            lines = [json.loads(l) for l in proc.read_out().splitlines() if l.startswith("{")]
            if not any(l.get("event") == "ready" for l in lines):
                return None
            endpoints = [l["endpoint"] for l in lines if l.get("event") == "listening"]
            return endpoints if all(endpoint_listening(e) for e in endpoints) else None
        endpoints = proc.wait_until(ready, timeout, "'ready' line")
    except BaseException:
        proc.stop()
        raise
    proc.ready_after = time.monotonic() - proc.started
    return proc, endpoints


class Signals:
    """Turns SIGINT, SIGTERM and SIGHUP into KeyboardInterrupt so `finally` blocks clean up.
    SIGINT too: a shell without job control starts background commands with SIGINT ignored,
    and Python then installs no Ctrl-C handler of its own."""

    def __enter__(self):
        self.saved = {}
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self.saved[sig] = signal.signal(sig, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        return False


def note(text: str):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
