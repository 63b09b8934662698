import BLELab
@testable import BLELabCLI
import BLELabTestSupport
import BLERuntime
import Foundation
@testable import ScenarioEngine
import XCTest

/// `blelab run --html`: the page's structure, escaping, order (failures first), the chart drawn
/// from a timeline and its paging. The page in a real browser: `make report-check`.
final class HTMLReportTests: XCTestCase {
    private let f = ScenarioText.fixtures

    private func result(_ name: String, outcome: ScenarioResult.Outcome = .passed, timeline: [TimelineEvent] = [],
                        file: String = "scenarios/x.yaml") -> ScenarioResult {
        ScenarioResult(name: name, file: file, tags: ["t"], seed: 7, tier: .sim, outcome: outcome, virtualTime: .milliseconds(1500),
                       steps: [], timeline: timeline, captures: [])
    }

    private func failure(at ms: Int64, expected: String = "a notification", seen: String = "none") -> ScenarioFailure {
        ScenarioFailure(kind: .expectation, step: nil, expected: expected, seen: seen, time: Instant(nanoseconds: ms * 1_000_000), recentPackets: [])
    }

    private func render(_ results: [ScenarioResult]) -> String {
        HTMLReport.render(results.map { ScenarioRun(result: $0) }, links: results.map { HTMLReport.Links(reproduce: "blelab run \($0.file) --seed 7") },
                          tier: .sim, wall: .milliseconds(12))
    }

    /// The JSON the page embeds, parsed by Foundation.
    private func embedded(_ page: String) throws -> [String: Any] {
        let open = #"<script type="application/json" id="report-data">"#
        let start = try XCTUnwrap(page.range(of: open)).upperBound
        let end = try XCTUnwrap(page.range(of: "</script>", range: start..<page.endIndex)).lowerBound
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(page[start..<end].utf8)) as? [String: Any])
    }

    private func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    func testSummaryCountsAndFailuresFirst() throws {
        let page = render([
            result("first passes", file: "a.yaml"),
            result("second fails", outcome: .failed(failure(at: 5)), file: "b.yaml"),
            result("third skipped", outcome: .skipped(reason: "needs vhci"), file: "c.yaml"),
            result("fourth fails", outcome: .failed(failure(at: 9)), file: "d.yaml"),
        ])
        XCTAssertTrue(page.hasPrefix("<!DOCTYPE html>"))
        XCTAssertEqual(count(#"<section id="summary""#, in: page), 1)
        XCTAssertTrue(page.contains(#"<span class="count passed"><b>1</b> passed</span>"#))
        XCTAssertTrue(page.contains(#"<span class="count failed"><b>2</b> failed</span>"#))
        XCTAssertTrue(page.contains(#"<span class="count skipped"><b>1</b> skipped</span>"#))
        XCTAssertTrue(page.contains("<tr><td>sim</td><td>1</td><td>2</td><td>1</td></tr>"), "per tier")
        XCTAssertTrue(page.contains("wall <b>12.0ms</b> · virtual <b>6s</b>"), "wall and virtual time")
        // Failures first, each group in run order; the embedded data in the same order.
        let names = page.components(separatedBy: #"<span class="name">"#).dropFirst().map { $0.components(separatedBy: "<").first ?? "" }
        XCTAssertEqual(names, ["second fails", "fourth fails", "first passes", "third skipped"])
        let scenarios = try XCTUnwrap(try embedded(page)["scenarios"] as? [[String: Any]])
        XCTAssertEqual(scenarios.map { $0["name"] as? String }, ["second fails", "fourth fails", "first passes", "third skipped"])
        XCTAssertEqual(scenarios.map { $0["outcome"] as? String }, ["failed", "failed", "passed", "skipped"])
        XCTAssertEqual(scenarios[0]["reproduce"] as? String, "blelab run b.yaml --seed 7")
        // Only the first failures start open.
        XCTAssertEqual(count(#"<details class="scenario failed" data-index="0" data-search="second fails b.yaml t" open>"#, in: page), 1)
        XCTAssertEqual(count(" open>", in: page), 2)
    }

    func testSelfContained() {
        let page = render([result("one")])
        // The SVG namespace is a name, not a fetch; nothing else may point outside the page.
        let outside = page.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "")
        XCTAssertFalse(outside.contains("http:"))
        XCTAssertFalse(outside.contains("https:"))
        XCTAssertFalse(outside.contains("src="))
        XCTAssertFalse(outside.contains("@import"))
        XCTAssertEqual(count("<script", in: page), 2, "the data and the code, inline")
        XCTAssertEqual(count("<style>", in: page), 1)
    }

    func testNamesAndValuesAreEscapedAndTheDataCannotCloseItsScript() throws {
        let hostile = #"</script><script>alert("x")</script> <!-- & 'q' → é \u2028"# + "\u{2028}"
        let failed = result(hostile, outcome: .failed(failure(at: 3, expected: "value </SCRIPT>", seen: "<b>bold</b>")),
                            timeline: [TimelineEvent(time: .zero, device: "p</script>", kind: .peripheral, text: "connected to <x>")],
                            file: "dir/</script>.yaml")
        let page = render([failed])
        XCTAssertEqual(count("<script", in: page), 2)
        XCTAssertEqual(count("</script>", in: page), 2)
        XCTAssertFalse(page.lowercased().contains("</script><script>alert"))
        XCTAssertFalse(page.contains("<b>bold</b>"))
        XCTAssertFalse(page.contains("<!--"))
        XCTAssertTrue(page.contains(#"<span class="name">&lt;/script&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &lt;!-- &amp; &apos;q&apos; → é"#))
        XCTAssertTrue(page.contains("<title>BLELab run: 0 passed, 1 failed</title>"))
        // The embedded JSON gives back every string exactly.
        let scenario = try XCTUnwrap((try embedded(page)["scenarios"] as? [[String: Any]])?.first)
        XCTAssertEqual(scenario["name"] as? String, hostile)
        XCTAssertEqual(scenario["file"] as? String, "dir/</script>.yaml")
        XCTAssertEqual(scenario["lanes"] as? [String], ["central", "p</script>"])
        let failure = try XCTUnwrap(scenario["failure"] as? [String: Any])
        XCTAssertEqual(failure["expected"] as? String, "value </SCRIPT>")
        XCTAssertEqual(failure["seen"] as? String, "<b>bold</b>")

        XCTAssertEqual(HTMLReport.scriptSafe(#"{"a":"</script>&<!--\#u{2028}"}"#), #"{"a":"\u003c/script\u003e\u0026\u003c!--\u2028"}"#)
        XCTAssertEqual(HTMLReport.escape(#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;")
    }

    // MARK: Chart

    private func att(_ ms: Int64, _ device: String, _ direction: String, _ bytes: [UInt8], _ text: String) -> TimelineEvent {
        TimelineEvent(time: Instant(nanoseconds: ms * 1_000_000), device: device, kind: .att, text: text, direction: direction, bytes: bytes)
    }

    func testChartDrawsEachPDUOnceBetweenTheRightLanes() {
        let writeRequest: [UInt8] = [0x12, 0x0d, 0x00, 0x01, 0x00], writeCommand: [UInt8] = [0x52, 0x0c, 0x00, 0x68]
        let timeline: [TimelineEvent] = [
            TimelineEvent(time: .zero, device: "central", kind: .stepStarted, text: "connect: hm10", step: 1),
            TimelineEvent(time: .zero, device: "hm10", kind: .peripheral, text: "connected to 1B:B8:D3:5B:F6:44/public"),
            TimelineEvent(time: .zero, device: "central", kind: .stepStarted, text: "pair: hm10", step: 2),
            att(1, "central", "sent", writeRequest, "Write Request handle 0x000d value 01 00"),
            att(2, "hm10", "received", writeRequest, "Write Request handle 0x000d value 01 00"),
            att(3, "hm10", "sent", [0x13], "Write Response"),
            att(4, "central", "received", [0x13], "Write Response"),
            att(5, "central", "sent", writeCommand, "Write Command handle 0x000c value 68"),
            att(6, "hm10", "received", writeCommand, "Write Command handle 0x000c value 68"),
            att(7, "hm10", "sent", [0x1b, 0x0c, 0x00, 0x68], "Handle Value Notification handle 0x000c value 68"),
            TimelineEvent(time: Instant(nanoseconds: 7_000_000), device: "hm10", kind: .peripheral, text: "notify FFE0/FFE1 68 → 1 central(s)"),
            att(8, "central", "received", [0x1b, 0x0c, 0x00, 0x68], "Handle Value Notification handle 0x000c value 68"),
            att(9, "hm10", "sent", [0x01, 0x0a, 0x0d, 0x00, 0x0f], "Error Response to Read Request handle 0x000d: Insufficient Encryption"),
            TimelineEvent(time: Instant(nanoseconds: 9_000_000), device: "hm10", kind: .peripheral, text: "answered the request with Insufficient Encryption"),
            TimelineEvent(time: Instant(nanoseconds: 10_000_000), device: "hm10", kind: .peripheral, text: "air: Write Response dropped"),
            TimelineEvent(time: Instant(nanoseconds: 11_000_000), device: "central", kind: .protocolViolation, text: "unsolicited response",
                          layer: "att", violation: "unexpected-response", answer: "none"),
            TimelineEvent(time: Instant(nanoseconds: 20_000_000), device: "hm10", kind: .peripheral, text: "disconnected from 1B:B8:D3:5B:F6:44/public: Remote User Terminated Connection"),
        ]
        let chart = HTMLReport.chart(result("c", outcome: .failed(failure(at: 10)), timeline: timeline))
        XCTAssertEqual(chart.lanes, ["central", "hm10"])
        typealias K = HTMLReport.ChartMessage.Kind
        let rows = chart.messages.map { "\($0.kind.rawValue) \($0.from)→\($0.to)" }
        XCTAssertEqual(rows, [
            "step 0→0", "connect 1→0", "security-step 0→0",
            "write-request 0→1", "response 1→0", "write-command 0→1", "notification 1→0", "error 1→0",
            "fault 1→1",
            "failure 0→0",          // at 10 ms: after what happened by then, before what came later
            "violation 0→0", "disconnect 1→0",
        ])
        XCTAssertEqual(chart.failureIndex, 9)
        XCTAssertEqual(chart.messages[3].label, "Write Request handle 0x000d value 01 00")
        XCTAssertEqual(chart.messages[3].detail, "12 0d 00 01 00")
        XCTAssertEqual(chart.messages[3].step, 2)
        XCTAssertEqual(chart.messages[10].label, "protocol violation (att unexpected-response): unsolicited response → none")
        XCTAssertEqual(chart.stepRows, [1: 0, 2: 2])
        XCTAssertEqual(HTMLReport.attKind([0xD2]), K.writeCommand)
        XCTAssertEqual(HTMLReport.attKind([0x1D]), K.indication)
        XCTAssertEqual(HTMLReport.attKind([0x0A]), K.request)
        XCTAssertEqual(HTMLReport.attKind([0x0B]), K.response)
    }

    func testAPDUOnlyTheCentralSawGoesToItsOnlyPeripheralOrToPeer() {
        let one = HTMLReport.chart(result("seat", timeline: [
            TimelineEvent(time: .zero, device: "lamp", kind: .peripheral, text: "connected to x"),
            att(1, "central", "sent", [0x0a, 0x03, 0x00], "Read Request handle 0x0003"),
        ]))
        XCTAssertEqual(one.messages.last.map { [$0.from, $0.to] }, [0, 1])
        let two = HTMLReport.chart(result("two", timeline: [
            TimelineEvent(time: .zero, device: "a", kind: .peripheral, text: "connected to x"),
            TimelineEvent(time: .zero, device: "b", kind: .peripheral, text: "connected to x"),
            att(1, "central", "received", [0x0b, 0x01], "Read Response value 01"),
        ]))
        XCTAssertEqual(two.lanes, ["central", "a", "b", "peer"])
        XCTAssertEqual(two.messages.last.map { [$0.from, $0.to] }, [3, 0])
    }

    func testALongScenarioIsPagedAndOpensAtItsFailure() throws {
        var timeline: [TimelineEvent] = []
        for i in 0..<25_000 {
            let bytes: [UInt8] = [0x1b, 0x0c, 0x00, UInt8(i & 0xFF)]
            timeline.append(att(Int64(i), "sensor", "sent", bytes, "Handle Value Notification"))
            timeline.append(att(Int64(i), "central", "received", bytes, "Handle Value Notification"))
        }
        let page = render([result("long", outcome: .failed(failure(at: 20_000)), timeline: timeline)])
        let scenario = try XCTUnwrap((try embedded(page)["scenarios"] as? [[String: Any]])?.first)
        let messages = try XCTUnwrap(scenario["messages"] as? [[Any]])
        XCTAssertEqual(messages.count, 25_001, "each notification once, and the failure")
        XCTAssertEqual(try embedded(page)["page_size"] as? Int, HTMLReport.pageSize)
        // The failure follows the 20,001 notifications sent by 20 s: row 20,001, page 100.
        XCTAssertEqual(messages[20_001][3] as? String, "failure")
        XCTAssertEqual(scenario["failure_page"] as? Int, 20_001 / HTMLReport.pageSize)
        // The page itself draws no rows: the script draws one page of them, when opened.
        XCTAssertFalse(page.contains("<svg"))
        XCTAssertFalse(page.contains("<tr><td>Handle"))
    }

    func testWhatAScanDiscovered() {
        XCTAssertEqual(HTMLReport.discovered("passed: discovered strap (-59 dBm), uart (-57 dBm)").map { "\($0.name) \($0.rssi)" },
                       ["strap -59 dBm", "uart -57 dBm"])
        XCTAssertEqual(HTMLReport.discovered("passed: discovered curtain (-59 dBm)").map(\.name), ["curtain"])
        XCTAssertTrue(HTMLReport.discovered("passed: nothing discovered").isEmpty)
        XCTAssertTrue(HTMLReport.discovered("passed: the last scan discovered curtain (-59 dBm)").isEmpty)
    }

    func testRelativeLinks() {
        XCTAssertEqual(HTMLReport.relativePath("build/e2e/captures/a.central.btsnoop", fromPageAt: "build/e2e/report.html", cwd: "/w"),
                       "captures/a.central.btsnoop")
        XCTAssertEqual(HTMLReport.relativePath("/tmp/cap/a.btsnoop", fromPageAt: "out/r.html", cwd: "/tmp"), "../cap/a.btsnoop")
        XCTAssertEqual(HTMLReport.relativePath("./cap/x.btsnoop", fromPageAt: "/w/r.html", cwd: "/w"), "cap/x.btsnoop")
        XCTAssertEqual(HTMLReport.relativePath("a.btsnoop", fromPageAt: "report.html", cwd: "/"), "a.btsnoop")
        XCTAssertEqual(HTMLReport.relativePath("/a/b/c.btsnoop", fromPageAt: "/x/y/r.html", cwd: "/"), "../../a/b/c.btsnoop")
    }

    // MARK: Through the command line

    func testPairingAndEncryptionAreOnTheChartBetweenTheCentralAndThePeripheral() throws {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/BLELabCLITests/HTMLReportTests.swift
        let file = parts.joined(separator: "/") + "/scenarios/security/fail-wrong-passkey.yaml"
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["run", "--html", "r.html", file]), .passed)
        let page = String(decoding: try XCTUnwrap(cli.files["r.html"]), as: UTF8.self)
        let scenario = try XCTUnwrap((try embedded(page)["scenarios"] as? [[String: Any]])?.first)
        XCTAssertEqual(scenario["lanes"] as? [String], ["central", "lock"])
        let rows = try XCTUnwrap(scenario["messages"] as? [[Any]]).map { "\($0[3]) \($0[1])→\($0[2]) \($0[4])" }
        // Three pair steps: two pairings the peripheral refuses, then one that encrypts the link.
        XCTAssertEqual(rows.filter { $0.hasPrefix("security-step 0→0 step ") }.count, 3, "\(rows)")
        XCTAssertEqual(rows.filter { $0.hasPrefix("security 0→1 pairing with lock failed: ") }.count, 2, "\(rows)")
        XCTAssertEqual(rows.filter { $0.hasPrefix("security 0→1 pairing with lock: paired by passkey-entry") }.count, 1, "\(rows)")
        XCTAssertEqual(rows.filter { $0.hasPrefix("security 0→1 link to lock encrypted: ") }.count, 1, "\(rows)")
    }

    func testRunWritesTheReportWithCapturesStepsAndTheReproduceLine() throws {
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["run", "--html", "out/report.html", "--capture", "out/captures", f + "/passing", f + "/failing"]), .failed)
        let page = String(decoding: try XCTUnwrap(cli.files["out/report.html"]), as: UTF8.self)
        let scenarios = try XCTUnwrap(try embedded(page)["scenarios"] as? [[String: Any]])
        XCTAssertEqual(scenarios.map { $0["outcome"] as? String }, ["failed", "passed", "passed"])
        let failed = scenarios[0]
        XCTAssertEqual(failed["reproduce"] as? String, "blelab run \(f)/failing/deliberate-failure.yaml --seed 42")
        let captures = try XCTUnwrap(failed["captures"] as? [[String: String]])
        XCTAssertEqual(captures.map { $0["path"] ?? "" }, ["captures/deliberate-failure.hm10.btsnoop", "captures/deliberate-failure.central.btsnoop"])
        for capture in captures { XCTAssertNotNil(cli.files["out/" + capture["path"]!]) }
        let steps = try XCTUnwrap(failed["steps"] as? [[String: Any]])
        XCTAssertEqual(steps.map { $0["outcome"] as? String }, ["passed", "passed", "passed", "passed", "passed", "failed", "not-run"])
        XCTAssertEqual(steps[0]["note"] as? String, "discovered hm10 (-59 dBm)")
        XCTAssertEqual(steps[5]["page"] as? Int, 0)
        let kinds = try XCTUnwrap(failed["messages"] as? [[Any]]).map { $0[3] as? String ?? "" }
        XCTAssertEqual(kinds.filter { $0 == "write-command" }.count, 1, "the write of hello")
        XCTAssertEqual(kinds.filter { $0 == "notification" }.count, 1, "its echo")
        XCTAssertEqual(kinds.filter { $0 == "advertising" }.count, 1, "the scan found hm10")
        XCTAssertEqual(kinds.filter { $0 == "failure" }.count, 1)
        XCTAssertEqual(kinds.last, "failure", "nothing happened after the failed expectation")
        // The scan fixture: one scan, then two expectations that quote what it discovered.
        let scan = try XCTUnwrap(scenarios.first { ($0["file"] as? String)?.hasSuffix("nested/scan.yaml") == true })
        let advertising = try XCTUnwrap(scan["messages"] as? [[Any]]).filter { $0[3] as? String == "advertising" }
        XCTAssertEqual(advertising.map { "\($0[1])→\($0[2]) step \($0[5])" }, ["1→0 step 1"], "the scan's; not the expectations'")
    }
}
