import BLELab
import BLERuntime
import ScenarioEngine
import ScenarioFormat

/// `blelab run --html FILE`: one self-contained page (inline CSS and JS, the data embedded as
/// JSON, nothing fetched) with the run's summary, failures first, and per scenario a message
/// sequence chart of the central and its peripherals drawn from the run's timeline, the steps
/// with their verdicts beside it, the capture files and the reproduce line (docs/report.md).
///
/// The page is built here, in Swift, down to the chart's rows (`ChartMessage`): the inline script
/// only draws them, one page of `pageSize` rows at a time, and only for the scenarios opened, so
/// that a run of a thousand scenarios or a scenario of fifty thousand PDUs stays a light page.
public enum HTMLReport {
    /// Rows the chart draws at once; the rest are a page away (previous/next, a step, the failure).
    public static let pageSize = 200

    /// What the page links to for one run: each device's capture (a path relative to the page)
    /// and the line that runs it again.
    public struct Links {
        public var captures: [(device: String, path: String)]
        public var reproduce: String

        public init(captures: [(device: String, path: String)] = [], reproduce: String) {
            self.captures = captures
            self.reproduce = reproduce
        }
    }

    /// The page for `runs` (in run order; `links` parallel to them), `wall` the whole run's wall time.
    public static func render(_ runs: [ScenarioRun], links: [Links], tier: TransportTier, wall: TimeSpan) -> String {
        let order = displayOrder(runs)
        let failed = runs.filter { $0.result.failure != nil }.count
        let skipped = runs.filter(\.result.isSkipped).count
        let passed = runs.count - failed - skipped
        let virtual = runs.reduce(TimeSpan.zero) { $0 + $1.result.virtualTime }
        var tiers: [String: (passed: Int, failed: Int, skipped: Int)] = [:]
        var tierOrder: [String] = []
        for run in runs {
            let name = run.result.tier.rawValue
            if tiers[name] == nil { tierOrder.append(name) }
            var counts = tiers[name] ?? (0, 0, 0)
            if run.result.failure != nil { counts.failed += 1 } else if run.result.isSkipped { counts.skipped += 1 } else { counts.passed += 1 }
            tiers[name] = counts
        }
        if tierOrder.isEmpty { tierOrder = [tier.rawValue] }

        var html = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <link rel="icon" href="data:,">
        <title>BLELab run: \(passed) passed, \(failed) failed\(skipped > 0 ? ", \(skipped) skipped" : "")</title>
        <style>\(HTMLReportAssets.css)</style>
        </head>
        <body>
        <header><h1>BLELab run report</h1><span class="tool">blelab · \(escape(tier.rawValue)) tier</span></header>
        <section id="summary" class="summary \(failed > 0 ? "red" : "green")">
        <div class="counts">
        <span class="count passed"><b>\(passed)</b> passed</span>
        <span class="count failed"><b>\(failed)</b> failed</span>
        <span class="count skipped"><b>\(skipped)</b> skipped</span>
        <span class="count total"><b>\(runs.count)</b> run\(runs.count == 1 ? "" : "s")</span>
        </div>
        <div class="times">wall <b>\(escape(ConsoleReporter.wall(wall)))</b> · virtual <b>\(escape(virtual.description))</b></div>
        <table class="tiers"><tr><th>tier</th><th>passed</th><th>failed</th><th>skipped</th></tr>

        """
        for name in tierOrder {
            let c = tiers[name] ?? (0, 0, 0)
            html += "<tr><td>\(escape(name))</td><td>\(c.passed)</td><td>\(c.failed)</td><td>\(c.skipped)</td></tr>\n"
        }
        html += """
        </table>
        </section>
        <nav class="tools"><input id="filter" type="search" placeholder="Filter scenarios by name, file or tag" autocomplete="off">
        <label><input id="only-failed" type="checkbox"> failed only</label>
        <button id="expand-failed" type="button">open failures</button><button id="collapse-all" type="button">close all</button>
        <span id="shown"></span></nav>
        <main id="scenarios">

        """
        for (position, index) in order.enumerated() {
            let run = runs[index], r = run.result
            let outcome = r.failure != nil ? "failed" : r.isSkipped ? "skipped" : "passed"
            let search = ([run.displayName, r.file] + r.tags).joined(separator: " ").lowercased()
            // The first few failures open; everything else starts closed (a thousand charts are not drawn).
            let open = outcome == "failed" && position < 3 ? " open" : ""
            html += "<details class=\"scenario \(outcome)\" data-index=\"\(position)\" data-search=\"\(escape(search))\"\(open)>"
            html += "<summary><span class=\"badge \(outcome)\">\(outcome.uppercased())</span> <span class=\"name\">\(escape(run.displayName))</span>"
            html += " <span class=\"file\">\(escape(r.file))</span>"
            html += " <span class=\"time\">\(escape(r.virtualTime.description)) virtual · \(escape(ConsoleReporter.wall(run.wallTime))) wall</span></summary>"
            html += "<div class=\"body\"></div></details>\n"
        }
        let data = JSONValue.object([
            ("tool", "blelab"),
            ("tier", .string(tier.rawValue)),
            ("page_size", .int(Int64(pageSize))),
            ("scenarios", .array(order.map { scenario(runs[$0], links: $0 < links.count ? links[$0] : Links(reproduce: "")) })),
        ])
        html += """
        </main>
        <footer>Generated by blelab. Times on the chart are virtual (the lab's clock). Solid arrows: requests, responses, notifications; dashed: commands (no response); ✗: the failed expectation.</footer>
        <script type="application/json" id="report-data">\(scriptSafe(data.render()))</script>
        <script>\(HTMLReportAssets.js)</script>
        </body>
        </html>

        """
        return html
    }

    /// Failures first, then the others, each in run order.
    static func displayOrder(_ runs: [ScenarioRun]) -> [Int] {
        runs.indices.filter { runs[$0].result.failure != nil } + runs.indices.filter { runs[$0].result.failure == nil }
    }

    // MARK: Data

    private static func scenario(_ run: ScenarioRun, links: Links) -> JSONValue {
        let r = run.result
        let chart = chart(r)
        let (outcome, failure) = RunReports.verdict(r)
        return .object([
            ("name", .string(run.displayName)),
            ("file", .string(r.file)),
            ("tags", .array(r.tags.map { .string($0) })),
            ("seed", .string(String(r.seed))),
            ("tier", .string(r.tier.rawValue)),
            ("outcome", .string(outcome)),
            ("virtual", .string(r.virtualTime.description)),
            ("wall", .string(ConsoleReporter.wall(run.wallTime))),
            ("failure", failure),
            ("reproduce", .string(links.reproduce)),
            ("captures", .array(links.captures.map { .object([("device", .string($0.device)), ("path", .string($0.path))]) })),
            ("lanes", .array(chart.lanes.map { .string($0) })),
            // [time_ns, from lane, to lane, kind, label, step, detail]
            ("messages", .array(chart.messages.map { m in
                .array([.int(m.time), .int(Int64(m.from)), .int(Int64(m.to)), .string(m.kind.rawValue), .string(m.label),
                        m.step.map { .int(Int64($0)) } ?? .null, m.detail.map { .string($0) } ?? .null])
            })),
            ("failure_page", chart.failureIndex.map { .int(Int64($0 / pageSize)) } ?? .null),
            ("failure_row", chart.failureIndex.map { .int(Int64($0)) } ?? .null),
            ("steps", .array(r.steps.map { s in
                .object([
                    ("index", .int(Int64(s.step.index))),
                    ("line", .int(Int64(s.step.location.line))),
                    ("text", .string(s.step.text)),
                    ("start", .string(s.start.description)),
                    ("outcome", .string(s.outcome.rawValue)),
                    ("note", s.note.map { .string($0) } ?? .null),
                    ("page", chart.stepRows[s.step.index].map { .int(Int64($0 / pageSize)) } ?? .null),
                    ("row", chart.stepRows[s.step.index].map { .int(Int64($0)) } ?? .null),
                ])
            })),
        ])
    }

    // MARK: Chart

    /// One row of the chart: an arrow between two lanes, or a mark on one (`from == to`).
    struct ChartMessage: Equatable {
        enum Kind: String {
            case request, response, writeRequest = "write-request", writeCommand = "write-command", notification, indication,
                 confirmation, error, advertising, connect, disconnect, security, fault, violation, note, step, failure
            /// A `pair`, `encrypt`, `bond` or `unpair` step.
            case securityStep = "security-step"
        }

        var time: Int64
        var from: Int
        var to: Int
        var kind: Kind
        var label: String
        var step: Int? = nil
        var detail: String? = nil
    }

    struct Chart {
        /// `central` first, then each peripheral as it first appears.
        var lanes: [String]
        var messages: [ChartMessage]
        /// The row of the failure mark.
        var failureIndex: Int?
        /// Each step's first row (its start).
        var stepRows: [Int: Int]
    }

    /// The chart of one run, from its timeline. An ATT PDU is in the timeline twice, sent by one
    /// host and received by the other: drawn once, from the peripheral's record (which names the
    /// peripheral); the central's record of it is matched by its octets and dropped, and one with
    /// no match (another stack served the peripheral) is drawn to the only peripheral, or to `peer`.
    static func chart(_ r: ScenarioResult) -> Chart {
        var lanes = ["central"]
        func lane(_ device: String) -> Int {
            if let i = lanes.firstIndex(of: device) { return i }
            lanes.append(device)
            return lanes.count - 1
        }
        var scans: Set<Int> = []
        for e in r.events {
            switch e.kind {
            case .stepStarted: if let step = e.step, e.text.hasPrefix("scan") { scans.insert(step) }
            case .stepEnded: if let step = e.step, scans.contains(step) { for (name, _) in discovered(e.text) { _ = lane(name) } }
            default: if e.device != "central" { _ = lane(e.device) }
            }
        }
        let peripheralLanes = lanes.count - 1

        // Peripheral-side PDUs still to be matched with the central's record of them, by octets
        // and direction (as the central saw it).
        var pending: [String: Int] = [:]
        for e in r.events where e.kind == .att && e.device != "central" {
            pending[attKey(e.bytes ?? [], centralSent: e.direction == "received"), default: 0] += 1
        }

        var messages: [ChartMessage] = []
        var stepRows: [Int: Int] = [:]
        var currentStep: Int?
        for e in r.events {
            let t = e.time.nanoseconds
            let here = lane(e.device)
            switch e.kind {
            case .stepStarted:
                currentStep = e.step
                if let step = e.step, stepRows[step] == nil { stepRows[step] = messages.count }
                let securityStep = ["pair", "encrypt", "bond", "unpair"].contains { e.text.hasPrefix($0) }
                messages.append(ChartMessage(time: t, from: 0, to: 0, kind: securityStep ? .securityStep : .step,
                                             label: "step \(e.step.map(String.init) ?? "?"): \(e.text)", step: e.step))
            case .stepEnded:
                // Advertising seen: what a scan discovered (not the expectations that quote it).
                if let step = e.step, scans.contains(step) {
                    for (name, rssi) in discovered(e.text) {
                        messages.append(ChartMessage(time: t, from: lane(name), to: 0, kind: .advertising, label: "advertising seen (\(rssi))", step: step))
                    }
                }
            case .att:
                let bytes = e.bytes ?? []
                if e.device == "central" {
                    let key = attKey(bytes, centralSent: e.direction == "sent")
                    if let n = pending[key], n > 0 {
                        pending[key] = n - 1
                        continue
                    }
                    let peer = peripheralLanes == 1 ? 1 : lane("peer")
                    let (from, to) = e.direction == "sent" ? (0, peer) : (peer, 0)
                    messages.append(ChartMessage(time: t, from: from, to: to, kind: attKind(bytes), label: e.text, step: currentStep, detail: hex(bytes)))
                } else {
                    let (from, to) = e.direction == "sent" ? (here, 0) : (0, here)
                    messages.append(ChartMessage(time: t, from: from, to: to, kind: attKind(bytes), label: e.text, step: currentStep, detail: hex(bytes)))
                }
            case .peripheral, .central:
                guard let (kind, label) = classify(e.text) else { continue }
                let toCentral = kind == .connect || kind == .disconnect
                var to = toCentral && here != 0 ? 0 : here
                // The central's pairing or encryption with a peripheral: between the two.
                if kind == .security, here == 0,
                   let peer = lanes.indices.dropFirst().first(where: { e.text.contains("with \(lanes[$0])") || e.text.contains("to \(lanes[$0]) ") }) {
                    to = peer
                }
                messages.append(ChartMessage(time: t, from: here, to: to, kind: kind, label: label, step: currentStep))
            case .protocolViolation:
                var label = "protocol violation"
                if let layer = e.layer { label += " (\(layer)\(e.violation.map { " \($0)" } ?? ""))" }
                label += ": \(e.text)"
                if let answer = e.answer { label += " → \(answer)" }
                messages.append(ChartMessage(time: t, from: here, to: here, kind: .violation, label: label, step: currentStep,
                                             detail: e.bytes.map(hex)))
            }
        }
        var failureIndex: Int?
        if let f = r.failure {
            let t = f.time.nanoseconds
            // After everything that happened by then: the mark is where the run stopped believing.
            let at = messages.firstIndex { $0.time > t } ?? messages.count
            messages.insert(ChartMessage(time: t, from: 0, to: 0, kind: .failure,
                                         label: "expected \(f.expected); seen \(f.seen)", step: f.step?.index,
                                         detail: f.step.map { "step \($0.index) (\($0.location.fileAndLine)): \($0.text)" }), at: at)
            for (step, row) in stepRows where row >= at { stepRows[step] = row + 1 }
            failureIndex = at
        }
        return Chart(lanes: lanes, messages: messages, failureIndex: failureIndex, stepRows: stepRows)
    }

    /// The peripherals a scan step's end names, with their RSSI: `passed: discovered strap
    /// (-59 dBm), uart (-57 dBm)` → strap, -59 dBm; uart, -57 dBm.
    static func discovered(_ text: String) -> [(name: String, rssi: String)] {
        let prefix = "passed: discovered "
        guard text.hasPrefix(prefix) else { return [] }
        return text.dropFirst(prefix.count).split(separator: ")").compactMap { item in
            var part = item
            while part.first == "," || part.first == " " { part.removeFirst() }
            guard let open = part.lastIndex(of: "("), open > part.startIndex else { return nil }
            let name = part[..<open].dropLast()   // the space before "("
            return name.isEmpty ? nil : (String(name), String(part[part.index(after: open)...]))
        }
    }

    private static func attKey(_ bytes: [UInt8], centralSent: Bool) -> String {
        (centralSent ? ">" : "<") + hex(bytes)
    }

    /// The kind of an ATT PDU by its opcode (Core Spec Vol 3, Part F, 3.4.8): a Write Request
    /// (0x12) waits for its response, a Write Command (0x52) and a Signed Write Command (0xD2) do not.
    static func attKind(_ bytes: [UInt8]) -> ChartMessage.Kind {
        guard let op = bytes.first else { return .note }
        switch op {
        case 0x01: return .error
        case 0x12, 0x16, 0x18: return .writeRequest
        case 0x52, 0xD2: return .writeCommand
        case 0x1B, 0x23: return .notification
        case 0x1D: return .indication
        case 0x1E: return .confirmation
        default: return op & 1 == 0 ? .request : .response
        }
    }

    /// What a peripheral's or the central's activity line is on the chart; nil for what the
    /// chart already shows as a PDU (a notification sent, an error answered).
    static func classify(_ text: String) -> (ChartMessage.Kind, String)? {
        if text.hasPrefix("connected to ") { return (.connect, text) }
        if text.hasPrefix("disconnected from ") || text.hasSuffix(" disconnected") { return (.disconnect, text) }
        if text.hasPrefix("air: ") || text.hasPrefix("controller powered off") { return (.fault, text) }
        if text.hasPrefix("protocol violation") { return (.violation, text) }
        if text.hasPrefix("auto-pair") || text.hasPrefix("OOB data") || text.contains("encrypt") || text.contains("pairing") { return (.security, text) }
        if text.hasPrefix("answered the request with ") { return nil }
        if (text.hasPrefix("notify ") || text.hasPrefix("indicate ")) && !text.hasSuffix("→ 0 central(s)") { return nil }
        return (.note, text)
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
    }

    // MARK: Escaping

    /// `text` for HTML text and attribute values: `& < > " '` as entity references (XML's
    /// escaping, which HTML reads the same; line breaks kept), characters XML forbids as U+FFFD.
    static func escape(_ text: String) -> String { XMLText.escapeContent(text) }

    /// JSON safe inside `<script>`: no `<` (so no `</script>` or `<!--`), `>`, `&`, nor the line
    /// separators JavaScript once refused in strings; each one as its `\u` escape, which is the
    /// same JSON. Only strings hold such characters, so the text stays valid JSON.
    static func scriptSafe(_ json: String) -> String {
        var out = ""
        out.reserveCapacity(json.utf8.count)
        for c in json.unicodeScalars {
            switch c {
            case "<": out += "\\u003c"
            case ">": out += "\\u003e"
            case "&": out += "\\u0026"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    // MARK: Paths

    /// `path` relative to the folder of the page at `page`, for a link (`build/e2e/report.html`
    /// and `build/e2e/captures/x.btsnoop` → `captures/x.btsnoop`). A relative path is taken from
    /// `cwd` when the other is absolute.
    static func relativePath(_ path: String, fromPageAt page: String, cwd: String) -> String {
        func components(_ p: String) -> [String] {
            let absolute = p.hasPrefix("/") ? p : cwd + "/" + p
            var parts: [String] = []
            for part in absolute.split(separator: "/") {
                if part == "." || part.isEmpty { continue }
                if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
                parts.append(String(part))
            }
            return parts
        }
        let target = components(path)
        let folder = components(page).dropLast()
        var common = 0
        while common < folder.count, common < target.count - 1, folder[folder.startIndex + common] == target[common] { common += 1 }
        let up = Array(repeating: "..", count: folder.count - common)
        return (up + target[common...]).joined(separator: "/")
    }
}
