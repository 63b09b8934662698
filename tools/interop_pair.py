#!/usr/bin/env python3
"""Bumble central against Bumble peripheral through two controller endpoints; checks the ATT
opcodes on both sides. The interop scripts' own test, before BLELab's Swift side joins them.

    interop_pair.py PERIPHERAL_ENDPOINT CENTRAL_ENDPOINT [--python VENV_PYTHON] [--log-dir DIR]

(With RootCanal both endpoints are its one HCI port.) Starts tools/bumble_peripheral.py --echo
--once in its own process group, waits for its "advertising" line, runs tools/bumble_central.py
--target BumblePeriph --expect-notifications 2, then checks:
  - the central wrote the write-only characteristic with ATT Write Request (0x12) and the
    write-without-response one with ATT Write Command (0x52), both accepted;
  - the peripheral received exactly those opcodes on those characteristics;
  - the central got both echo notifications.
Prints PASS or FAIL lines and exits 0 or 1; the peripheral is stopped whatever happens.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bumble_common import WRITE_UUID, WWR_UUID  # noqa: E402
from procs import Managed, Signals, StartError, note  # noqa: E402


def events(text: str) -> list:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("peripheral")
    ap.add_argument("central")
    ap.add_argument("--python", default=os.environ.get("BLELAB_VENV_PYTHON", sys.executable))
    ap.add_argument("--log-dir", default=os.path.join(os.path.dirname(HERE), "build", "tiers", "logs"))
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args(argv)

    failures = []
    periph = Managed("bumble-peripheral", [args.python, os.path.join(HERE, "bumble_peripheral.py"), args.peripheral,
                                           "--echo", "--once"], args.log_dir)
    with Signals():
        try:
            t0 = time.monotonic()
            periph.start()
            periph.wait_until(lambda: any(e.get("event") == "advertising" for e in events(periph.read_out())),
                              args.timeout, "'advertising' line")
            note("interop_pair: peripheral advertising after %.2f s" % (time.monotonic() - t0))
            t1 = time.monotonic()
            central = subprocess.run([args.python, os.path.join(HERE, "bumble_central.py"), args.central,
                                      "--target", "BumblePeriph", "--expect-notifications", "2",
                                      "--timeout", str(args.timeout)],
                                     capture_output=True, text=True, timeout=args.timeout + 10)
            note("interop_pair: central finished in %.2f s (status %d)" % (time.monotonic() - t1, central.returncode))
            os.makedirs(args.log_dir, exist_ok=True)
            with open(os.path.join(args.log_dir, "bumble-central.out"), "w") as f:
                f.write(central.stdout)
            with open(os.path.join(args.log_dir, "bumble-central.err"), "w") as f:
                f.write(central.stderr)
            cev = events(central.stdout)
            # Give the peripheral a moment to log the last write and the disconnection.
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and not any(e.get("event") == "disconnected" for e in events(periph.read_out())):
                time.sleep(0.05)
            pev = events(periph.read_out())

            done = [e for e in cev if e.get("event") == "done"]
            if central.returncode != 0 or not done or not done[-1].get("ok"):
                failures.append("central failed (status %d): %s" % (central.returncode, done[-1] if done else central.stderr[-2000:]))
            for uuid, opcode in ((WRITE_UUID, "0x12"), (WWR_UUID, "0x52")):
                sent = [e for e in cev if e.get("event") == "write" and e.get("characteristic") == uuid]
                got = [e for e in pev if e.get("event") == "write" and e.get("characteristic") == uuid]
                if [e.get("opcode") for e in sent] != [opcode] or not all(e.get("ok") for e in sent):
                    failures.append("central's writes to %s: %s (want one %s, ok)" % (uuid, sent, opcode))
                if [e.get("opcode") for e in got] != [opcode] or not all(e.get("accepted") for e in got):
                    failures.append("peripheral's writes on %s: %s (want one %s, accepted)" % (uuid, got, opcode))
                else:
                    print("PASS: %s written with ATT opcode %s, seen as %s by the peripheral" % (uuid, opcode, got[0]["op"]))
            notes = [e for e in cev if e.get("event") == "notification"]
            if len(notes) != 2:
                failures.append("central got %d notifications, want 2" % len(notes))
            else:
                print("PASS: 2 notifications delivered (%s)" % ", ".join(n.get("value_text", n["value_hex"]) for n in notes))
        except (StartError, subprocess.TimeoutExpired) as err:
            failures.append(str(err))
        except KeyboardInterrupt:
            failures.append("interrupted")
        finally:
            note("interop_pair: stopped " + periph.stop())
    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        print("logs: %s/bumble-peripheral.out, bumble-central.out" % args.log_dir)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
