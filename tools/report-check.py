#!/usr/bin/env python3
"""tools/report-check.py BLELAB OUT_DIR [REPORT.html…] — `blelab run --html` in a real browser.

Makes a failing run of its own in OUT_DIR: the deliberately failing fixture under a hostile name
(`</script>` and markup: the page must show it as text, never run it), a heart-rate scenario that
notifies every 10 ms (thousands of chart rows: one page of them is drawn) and a passing seed
scenario. Then loads that report and every REPORT.html given (make e2e's) in headless Chromium
(Debian `chromium`) and fails unless, for each: no console message at all (errors, warnings,
uncaught exceptions), the script ran (`data-ready`), the summary is there, an opened scenario has
a non-empty message sequence chart of at most one page of rows, and a PNG screenshot is not one
colour. For the failing run also: the failure is listed first and opened, the pager shows pages,
the hostile name is text. Prints each report's time in the browser and the whole check's.
"""
import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOSTILE = "Deliberately failing echo </script><script>document.title='PWNED'</script> <b>&amp;</b>"
PAGE_SIZE = 200


def fail(message):
    print(f"report-check: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def make_failing_run(blelab, out):
    scenarios = os.path.join(out, "scenarios")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(scenarios)
    with open(os.path.join(ROOT, "Tests/ScenarioEngineTests/Fixtures/failing/deliberate-failure.yaml")) as f:
        text = f.read()
    # A YAML double-quoted string: the name as the page must show it.
    quoted = '"' + HOSTILE.replace("\\", "\\\\").replace('"', '\\"') + '"'
    text = re.sub(r"^scenario: .*$", "scenario: " + quoted, text, count=1, flags=re.M)
    with open(os.path.join(scenarios, "a-failing.yaml"), "w") as f:
        f.write(text)
    with open(os.path.join(ROOT, "scenarios/seeds/heart-rate.yaml")) as f:
        text = f.read()
    text = text.replace("interval: 1s", "interval: 10ms").replace("count: 60, within: 61s", "count: 3000, within: 31s")
    text = re.sub(r"^scenario: .*$", "scenario: Heart-rate sensor notifies every 10 ms (a long chart)", text, count=1, flags=re.M)
    with open(os.path.join(scenarios, "b-long.yaml"), "w") as f:
        f.write(text)
    shutil.copy(os.path.join(ROOT, "scenarios/seeds/hm10-serial.yaml"), os.path.join(scenarios, "c-passing.yaml"))
    report = os.path.join(out, "report.html")
    run = subprocess.run([blelab, "run", scenarios, "--html", report, "--capture", os.path.join(out, "captures")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode != 1:
        fail(f"the failing run exited {run.returncode}, not 1:\n{run.stdout}{run.stderr}")
    if "2 passed, 1 failed" not in run.stdout:
        fail(f"the failing run did not give 2 passed, 1 failed:\n{run.stdout}")
    return report


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    fail("no Chromium: install Debian's chromium (make report-check does)")


def browse(browser, report, flags, fragment=""):
    with tempfile.TemporaryDirectory(prefix="report-check-") as profile:
        run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                              "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", "--window-size=1400,1100",
                              *flags, "file://" + os.path.abspath(report) + fragment],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    if console:
        fail(f"{report}: console messages:\n" + "\n".join(console))
    if run.returncode != 0:
        fail(f"{report}: chromium exited {run.returncode}:\n{run.stderr[-2000:]}")
    return run.stdout


class DOM(html.parser.HTMLParser):
    """What the checks read from the DOM Chromium dumps after the script ran."""

    def __init__(self):
        super().__init__()
        self.stack = []
        self.title = ""
        self.ready = False
        self.summary = False
        self.scenarios = []      # (outcome, open, name)
        self.charts = []         # rows per chart
        self.pagers = []
        self.scripts = 0
        self._text = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "body" and a.get("data-ready") == "1":
            self.ready = True
        if a.get("id") == "summary":
            self.summary = True
        if tag == "script":
            self.scripts += 1
        if tag == "details" and "scenario" in classes:
            self.scenarios.append([next(c for c in classes if c not in ("scenario", "hidden")), "open" in a, "", "hidden" in classes,
                                   a.get("data-search") or ""])
        if tag == "svg" and "msc" in classes and a.get("role") == "img":  # not the lanes' header
            self.charts.append(0)
        if tag == "g" and "row" in classes and self.charts:
            self.charts[-1] += 1
        if tag == "span" and "name" in classes and self.scenarios and not self.scenarios[-1][2]:
            self._text = ("name", "")
        if tag == "title" and not self.stack:
            self._text = ("title", "")
        if tag == "div" and "pager" in classes:
            self._text = ("pager", "")
        if tag not in ("meta", "link", "br", "input", "img", "line", "rect", "circle", "path"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        if self._text and ((self._text[0] == "name" and tag == "span") or (self._text[0] == "title" and tag == "title")
                           or (self._text[0] == "pager" and tag == "div")):
            kind, text = self._text
            if kind == "name":
                self.scenarios[-1][2] = text
            elif kind == "title":
                self.title = text
            else:
                self.pagers.append(text)
            self._text = None

    def handle_data(self, data):
        if self._text:
            self._text = (self._text[0], self._text[1] + data)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()


def png_colours(path):
    """The distinct RGB(A) pixel values of an 8-bit PNG (RGB or RGBA, not interlaced)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                fail(f"{path}: a PNG this check cannot read (depth {depth}, colour type {colour})")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    previous = bytearray(stride)
    colours = set()
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = previous[i]
            corner = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
        if y % 4 == 0:
            for x in range(0, stride, bpp * 4):
                colours.add(bytes(line[x:x + bpp]))
        previous = line
    return colours


def check(browser, report, failing, shots, filter=None):
    started = time.monotonic()
    png = os.path.join(shots, os.path.basename(report)[:-len(".html")] + ".png")
    dom = DOM()
    # One browser start: the DOM after the script ran, and a screenshot.
    dom.feed(browse(browser, report, ["--dump-dom", f"--screenshot={png}"], "#filter=" + filter if filter else ""))
    if not dom.ready:
        fail(f"{report}: the page's script did not run to its end (no data-ready)")
    if not dom.summary:
        fail(f"{report}: no #summary")
    if dom.scripts != 2:
        fail(f"{report}: {dom.scripts} script elements, not 2 (the data and the code): something in the data became markup")
    if not dom.scenarios:
        fail(f"{report}: no scenarios listed")
    if failing:
        if "PWNED" in dom.title:
            fail(f"{report}: a scenario's name ran as script")
        outcome, opened, name = dom.scenarios[0][:3]
        if outcome != "failed" or not opened:
            fail(f"{report}: the first scenario listed is {outcome} ({'open' if opened else 'closed'}), not the failure, opened")
        if name.strip() != HOSTILE:
            fail(f"{report}: the failing scenario's name shows as {name!r}, not as the text {HOSTILE!r}")
        if [s[0] for s in dom.scenarios] != ["failed", "passed", "passed"]:
            fail(f"{report}: scenarios listed as {[s[0] for s in dom.scenarios]}")
        if not dom.charts or dom.charts[0] == 0:
            fail(f"{report}: the failure's chart is empty")
    elif not dom.charts or dom.charts[0] == 0:
        fail(f"{report}: the opened scenario's chart is empty")
    if filter:
        # The filter box (given in the address: #filter=…) hides exactly the scenarios without it.
        shown = [s for s in dom.scenarios if not s[3]]
        wrong = [s[2] for s in dom.scenarios if s[3] == (filter in s[4])]
        if not shown or len(shown) == len(dom.scenarios) or wrong:
            fail(f"{report}#filter={filter}: {len(shown)} of {len(dom.scenarios)} shown; wrongly shown or hidden: {wrong}")
    for rows in dom.charts:
        if rows == 0 or rows > PAGE_SIZE:
            fail(f"{report}: a chart of {rows} rows (expected 1 to {PAGE_SIZE})")
    colours = png_colours(png)
    if len(colours) < 8:
        fail(f"{report}: the screenshot {png} has {len(colours)} colour(s)")
    print(f"report-check: {report}: {len(dom.scenarios)} scenarios, charts drawn {dom.charts}, "
          f"screenshot {png} ({len(colours)} colours sampled), {time.monotonic() - started:.1f} s")
    return dom


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    started = time.monotonic()
    blelab, out, reports = sys.argv[1], sys.argv[2], sys.argv[3:]
    browser = chromium()
    failing = make_failing_run(blelab, out)
    # The long scenario opened too, so that its chart and pager are drawn.
    with open(failing) as f:
        page = f.read()
    long_report = os.path.join(out, "long.html")
    with open(long_report, "w") as f:
        f.write(re.sub(r'(<details class="scenario passed" data-index="1")', r"\1 open", page, count=1))
    shots = out
    check(browser, failing, True, shots)
    dom = check(browser, long_report, True, shots)
    pages = [p for p in dom.pagers if "page 1 of" in p]
    if not pages or not any(int(re.search(r"page 1 of (\d+)", p).group(1)) > 10 for p in pages):
        fail(f"{long_report}: no pager over many pages: {dom.pagers}")
    for report in reports:
        # A copy with the first scenario the filter keeps opened, so that a report of passes
        # draws a chart too.
        with open(report) as f:
            page = f.read()
        opened = os.path.join(out, os.path.basename(os.path.dirname(os.path.abspath(report))) + "-" + os.path.basename(report))
        with open(opened, "w") as f:
            f.write(re.sub(r'(<details class="scenario \w+" data-index="\d+" data-search="[^"]*curtain[^"]*")', r"\1 open", page, count=1))
        check(browser, opened, False, shots, filter="curtain")
    print(f"report_check_s: {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
