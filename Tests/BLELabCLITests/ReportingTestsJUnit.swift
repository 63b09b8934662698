import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import ScenarioEngine
import XCTest
@testable import BLELabCLI

/// JUnit XML: exact output, escaping, what an independent XML parser makes of it, merging shards,
/// and reading files back.
final class ReportingTestsJUnit: XCTestCase {
    private let sample = JUnitReport(suites: [
        JUnitSuite(name: "scenarios", cases: [
            JUnitCase(name: "heart-rate", className: "scenarios.heart_rate", time: 1.25),
            JUnitCase(name: "curtain", className: "scenarios.curtain", time: 0.5,
                      outcome: .failed(message: "expected Write Command, saw Write Request",
                                       details: "at 0.500s: ATT Write Request (0x12)\nhandle 0x0003")),
            JUnitCase(name: "battery", className: "scenarios.battery", time: 0.0004, outcome: .skipped(reason: "needs vhci")),
            JUnitCase(name: "serial", className: "scenarios.serial", time: 2.0006,
                      outcome: .error(message: "lab stopped", details: ""), output: "console line 1\nline 2"),
        ], timestamp: "2000-01-01T00:00:00"),
        JUnitSuite(name: "empty"),
    ])

    func testExactXMLOfASmallReport() {
        XCTAssertEqual(sample.xml, """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuites name="blelab" tests="4" failures="1" errors="1" skipped="1" time="3.751">
          <testsuite name="scenarios" tests="4" failures="1" errors="1" skipped="1" time="3.751" timestamp="2000-01-01T00:00:00">
            <testcase name="heart-rate" classname="scenarios.heart_rate" time="1.250"/>
            <testcase name="curtain" classname="scenarios.curtain" time="0.500">
              <failure message="expected Write Command, saw Write Request" type="failure">at 0.500s: ATT Write Request (0x12)
        handle 0x0003</failure>
            </testcase>
            <testcase name="battery" classname="scenarios.battery" time="0.000">
              <skipped message="needs vhci"/>
            </testcase>
            <testcase name="serial" classname="scenarios.serial" time="2.001">
              <error message="lab stopped" type="error"/>
              <system-out>console line 1
        line 2</system-out>
            </testcase>
          </testsuite>
          <testsuite name="empty" tests="0" failures="0" errors="0" skipped="0" time="0.000"/>
        </testsuites>

        """)
        XCTAssertFalse(sample.succeeded)
        XCTAssertEqual([sample.tests, sample.failures, sample.errors, sample.skipped], [4, 1, 1, 1])
    }

    func testEmptyReport() {
        XCTAssertEqual(JUnitReport().xml, """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuites name="blelab" tests="0" failures="0" errors="0" skipped="0" time="0.000"/>

        """)
        XCTAssertTrue(JUnitReport().succeeded)
    }

    func testTimesHaveThreeDecimals() {
        XCTAssertEqual(JUnitReport.seconds(0), "0.000")
        XCTAssertEqual(JUnitReport.seconds(0.0004), "0.000")
        XCTAssertEqual(JUnitReport.seconds(0.0005), "0.001")   // half away from zero
        XCTAssertEqual(JUnitReport.seconds(1), "1.000")
        XCTAssertEqual(JUnitReport.seconds(12.3456), "12.346")
        XCTAssertEqual(JUnitReport.seconds(59.9996), "60.000")
        XCTAssertEqual(JUnitReport.seconds(86_400.25), "86400.250")
        XCTAssertEqual(JUnitReport.seconds(-1), "0.000")
        XCTAssertEqual(JUnitReport.seconds(.nan), "0.000")
        XCTAssertEqual(JUnitReport.seconds(.infinity), "0.000")
        XCTAssertEqual(JUnitReport.seconds(1e300), "9000000000000.000")
    }

    func testEscapingOfEverySpecialCharacter() {
        XCTAssertEqual(XMLText.escape("a & b < c > d \" e ' f"), "a &amp; b &lt; c &gt; d &quot; e &apos; f")
        XCTAssertEqual(XMLText.escape("]]>"), "]]&gt;")
        XCTAssertEqual(XMLText.escape("tab\tlf\ncr\r"), "tab&#9;lf&#10;cr&#13;")
        XCTAssertEqual(XMLText.escapeContent("tab\tlf\ncr\r"), "tab\tlf\ncr&#13;")
        // C0 controls XML 1.0 forbids, and U+FFFE/U+FFFF, become U+FFFD.
        XCTAssertEqual(XMLText.escape("\u{0}\u{1}\u{8}\u{B}\u{C}\u{E}\u{1B}\u{1F}"), String(repeating: "\u{FFFD}", count: 8))
        XCTAssertEqual(XMLText.escape("\u{FFFE}\u{FFFF}"), "\u{FFFD}\u{FFFD}")
        // Allowed characters pass: DEL, C1 controls, BMP and astral characters.
        XCTAssertEqual(XMLText.escape("\u{7F}\u{85}µ→😀\u{FFFD}\u{10FFFF}"), "\u{7F}\u{85}µ→😀\u{FFFD}\u{10FFFF}")
        for control in 0..<0x20 {
            let scalar = Unicode.Scalar(UInt8(control))
            XCTAssertEqual(XMLText.isAllowed(scalar), control == 9 || control == 10 || control == 13, "U+\(control)")
        }
    }

    /// Every special character in every place text goes: suite and case names, messages, details,
    /// output. Foundation's parser (libxml2) must read the document and give back the texts, with
    /// only the forbidden characters replaced.
    func testNastyTextSurvivesAnIndependentParser() throws {
        let nasty = "a&b<c>d\"e'f ]]> g\th\ni\r\nj \u{1B}[31mred\u{1B}[0m \u{0}end µ😀"
        let expected = nasty.replacingOccurrences(of: "\u{1B}", with: "\u{FFFD}").replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")
        let report = JUnitReport(name: nasty, suites: [JUnitSuite(name: nasty, cases: [
            JUnitCase(name: nasty, className: nasty, time: 0.001, outcome: .failed(message: nasty, details: nasty, type: nasty), output: nasty),
            JUnitCase(name: "x", className: "y", time: 0, outcome: .error(message: nasty, details: nasty)),
            JUnitCase(name: "z", className: "y", time: 0, outcome: .skipped(reason: nasty)),
        ])])
        let xml = report.xml
        XCTAssertFalse(xml.contains("]]>"))
        XCTAssertFalse(xml.unicodeScalars.contains { !XMLText.isAllowed($0) })

        let document = try XMLDocument(xmlString: xml, options: [])
        let root = try XCTUnwrap(document.rootElement())
        XCTAssertEqual(root.attribute(forName: "name")?.stringValue, expected)
        let suite = try XCTUnwrap(root.elements(forName: "testsuite").first)
        XCTAssertEqual(suite.attribute(forName: "name")?.stringValue, expected)
        let cases = suite.elements(forName: "testcase")
        XCTAssertEqual(cases.count, 3)
        XCTAssertEqual(cases[0].attribute(forName: "name")?.stringValue, expected)
        XCTAssertEqual(cases[0].attribute(forName: "classname")?.stringValue, expected)
        let failure = try XCTUnwrap(cases[0].elements(forName: "failure").first)
        XCTAssertEqual(failure.attribute(forName: "message")?.stringValue, expected)
        XCTAssertEqual(failure.attribute(forName: "type")?.stringValue, expected)
        XCTAssertEqual(failure.stringValue, expected)
        XCTAssertEqual(cases[0].elements(forName: "system-out").first?.stringValue, expected)
        XCTAssertEqual(cases[1].elements(forName: "error").first?.stringValue, expected)
        XCTAssertEqual(cases[2].elements(forName: "skipped").first?.attribute(forName: "message")?.stringValue, expected)

        // Our own reader agrees with libxml2.
        let back = try JUnitReport(xml: xml)
        XCTAssertEqual(back.suites.first?.cases.first?.outcome, .failed(message: expected, details: expected, type: expected))
        XCTAssertEqual(back.suites.first?.cases.first?.output, expected)
        XCTAssertEqual(back.name, expected)
    }

    func testCountsMatchWhatAnXMLParserSees() throws {
        let document = try XMLDocument(xmlString: sample.xml, options: [])
        let root = try XCTUnwrap(document.rootElement())
        XCTAssertEqual(root.name, "testsuites")
        func int(_ element: XMLElement, _ name: String) -> Int? { element.attribute(forName: name)?.stringValue.flatMap { Int($0) } }
        XCTAssertEqual(int(root, "tests"), try document.nodes(forXPath: "//testcase").count)
        XCTAssertEqual(int(root, "failures"), try document.nodes(forXPath: "//testcase/failure").count)
        XCTAssertEqual(int(root, "errors"), try document.nodes(forXPath: "//testcase/error").count)
        XCTAssertEqual(int(root, "skipped"), try document.nodes(forXPath: "//testcase/skipped").count)
        for suite in root.elements(forName: "testsuite") {
            let cases = suite.elements(forName: "testcase")
            XCTAssertEqual(int(suite, "tests"), cases.count)
            XCTAssertEqual(int(suite, "failures"), cases.filter { !$0.elements(forName: "failure").isEmpty }.count)
            XCTAssertEqual(int(suite, "errors"), cases.filter { !$0.elements(forName: "error").isEmpty }.count)
            XCTAssertEqual(int(suite, "skipped"), cases.filter { !$0.elements(forName: "skipped").isEmpty }.count)
            let caseTime = cases.compactMap { $0.attribute(forName: "time")?.stringValue.flatMap(Double.init) }.reduce(0, +)
            let suiteTime = try XCTUnwrap(suite.attribute(forName: "time")?.stringValue.flatMap(Double.init))
            XCTAssertEqual(suiteTime, caseTime, accuracy: 0.002)
        }
        // And a SAX parser walks the whole document without error.
        let parser = XMLParser(data: Data(sample.xml.utf8))
        let counter = ElementCounter()
        parser.delegate = counter
        XCTAssertTrue(parser.parse(), "\(String(describing: parser.parserError))")
        XCTAssertEqual(counter.counts["testcase"], 4)
        XCTAssertEqual(counter.counts["testsuite"], 2)
    }

    func testSameReportRendersIdentically() {
        XCTAssertEqual(sample.xml, sample.xml)
        var changed = sample
        changed.suites[0].cases[0].time += 0.001
        XCTAssertNotEqual(sample.xml, changed.xml)
    }

    func testMergingShards() {
        let shard1 = JUnitReport(suites: [
            JUnitSuite(name: "scenarios", cases: [JUnitCase(name: "a", className: "s.a", time: 1)], timestamp: "2000-01-01T00:00:00"),
            JUnitSuite(name: "sim", cases: [JUnitCase(name: "b", className: "t.b", time: 0.5, outcome: .skipped(reason: "r"))]),
        ])
        let shard2 = JUnitReport(suites: [
            JUnitSuite(name: "scenarios", cases: [JUnitCase(name: "c", className: "s.c", time: 2,
                                                           outcome: .failed(message: "m", details: "d"))],
                       timestamp: "2000-01-01T00:05:00"),
            JUnitSuite(name: "socket", cases: [JUnitCase(name: "d", className: "u.d", time: 0.25)]),
        ])
        let merged = JUnitReport.merged([shard1, shard2], name: "ci")
        XCTAssertEqual(merged.name, "ci")
        XCTAssertEqual(merged.suites.map(\.name), ["scenarios", "sim", "socket"])
        XCTAssertEqual(merged.suites[0].cases.map(\.name), ["a", "c"])
        XCTAssertEqual(merged.suites[0].timestamp, "2000-01-01T00:00:00")
        XCTAssertEqual(merged.suites[0].time, 3)
        XCTAssertEqual([merged.tests, merged.failures, merged.errors, merged.skipped], [4, 1, 0, 1])
        XCTAssertEqual(merged.time, 3.75)
        XCTAssertEqual(JUnitReport.merged([shard1]), shard1)
        XCTAssertEqual(JUnitReport.merged([]).suites, [])
        // Merging is associative on the rendered result.
        let shard3 = JUnitReport(suites: [JUnitSuite(name: "sim", cases: [JUnitCase(name: "e", className: "t.e", time: 1)])])
        XCTAssertEqual(JUnitReport.merged([JUnitReport.merged([shard1, shard2]), shard3]).xml,
                       JUnitReport.merged([shard1, JUnitReport.merged([shard2, shard3])]).xml)
    }

    func testMergingShardFilesReadBack() throws {
        let a = JUnitReport(suites: [JUnitSuite(name: "scenarios", cases: [sample.suites[0].cases[0], sample.suites[0].cases[1]])])
        let b = JUnitReport(suites: [JUnitSuite(name: "scenarios", cases: [sample.suites[0].cases[3]])])
        let merged = JUnitReport.merged([try JUnitReport(xml: a.xml), try JUnitReport(xml: b.xml)])
        XCTAssertEqual(merged.suites.map(\.name), ["scenarios"])
        XCTAssertEqual(merged.suites[0].cases.map(\.name), ["heart-rate", "curtain", "serial"])
        XCTAssertEqual([merged.tests, merged.failures, merged.errors], [3, 1, 1])
        XCTAssertEqual(JUnitReport.seconds(merged.time), "3.751")
    }

    func testReadingBackGivesTheSameText() throws {
        XCTAssertEqual(try JUnitReport(xml: sample.xml).xml, sample.xml)
        XCTAssertEqual(try JUnitReport(xml: JUnitReport().xml).xml, JUnitReport().xml)
        let back = try JUnitReport(xml: sample.xml)
        XCTAssertEqual(back.suites[0].cases[1].outcome, sample.suites[0].cases[1].outcome)
        XCTAssertEqual(back.suites[0].cases[3].output, "console line 1\nline 2")
        XCTAssertEqual(back.suites[0].timestamp, "2000-01-01T00:00:00")
    }

    /// Properties of a suite and of a case (xunit2, as pytest writes them): before the cases, and
    /// before a case's outcome; read back as written.
    func testPropertiesAndSkippedReason() throws {
        let report = JUnitReport(suites: [JUnitSuite(name: "blelab.sim", cases: [
            JUnitCase(name: "a", className: "s.a", time: 0.0123, outcome: .skipped(reason: "needs the vhci tier"),
                      properties: [JUnitProperty("seed", "42"), JUnitProperty("reproduce", "blelab run \"a b.yaml\" --seed 42")]),
        ], properties: [JUnitProperty("tier", "sim")])])
        XCTAssertEqual(report.xml, """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuites name="blelab" tests="1" failures="0" errors="0" skipped="1" time="0.012">
          <testsuite name="blelab.sim" tests="1" failures="0" errors="0" skipped="1" time="0.012">
            <properties>
              <property name="tier" value="sim"/>
            </properties>
            <testcase name="a" classname="s.a" time="0.012">
              <properties>
                <property name="seed" value="42"/>
                <property name="reproduce" value="blelab run &quot;a b.yaml&quot; --seed 42"/>
              </properties>
              <skipped message="needs the vhci tier"/>
            </testcase>
          </testsuite>
        </testsuites>

        """)
        let back = try JUnitReport(xml: report.xml)
        XCTAssertEqual(back.suites[0].properties, report.suites[0].properties)
        XCTAssertEqual(back.suites[0].cases[0].properties, report.suites[0].cases[0].properties)
        XCTAssertEqual(back.xml, report.xml)
    }

    func testReadingOtherToolsJUnit() throws {
        // A bare <testsuite> root with properties, system-err, CDATA, comments, single quotes,
        // character references and CR LF line ends, as other tools write.
        let xml = "\u{FEFF}<?xml version='1.0' encoding='UTF-8'?>\r\n<!-- generated -->\r\n" +
            "<testsuite name='pytest' tests='3' time='1.5' hostname='ci'>\r\n" +
            "  <properties><property name='k' value='v'/></properties>\r\n" +
            "  <testcase classname='t.m' name='ok' time='0.5'><system-err>noise</system-err></testcase>\r\n" +
            "  <testcase classname='t.m' name='bad' time='1'>\r\n" +
            "    <failure message='x &lt; y &#x26; &#38;' type='AssertionError'><![CDATA[a < b & ]] c]]>\r\nmore</failure>\r\n" +
            "  </testcase>\r\n" +
            "  <testcase classname='t.m' name='skip'><skipped>no reason attribute</skipped></testcase>\r\n" +
            "</testsuite>\r\n"
        let report = try JUnitReport(xml: xml)
        XCTAssertEqual(report.name, "pytest")
        XCTAssertEqual(report.suites.count, 1)
        XCTAssertEqual(report.suites[0].time, 1.5)
        XCTAssertEqual(report.suites[0].cases.map(\.name), ["ok", "bad", "skip"])
        XCTAssertEqual(report.suites[0].cases[1].outcome, .failed(message: "x < y & &", details: "a < b & ]] c\nmore", type: "AssertionError"))
        XCTAssertEqual(report.suites[0].cases[2].outcome, .skipped(reason: "no reason attribute"))
        XCTAssertNil(report.suites[0].cases[0].output)
    }

    func testMalformedJUnitIsATypedErrorWithAnOffset() {
        let cases: [(String, String, Int)] = [
            ("", "no root element", 0),
            ("<testsuites>", "never closed", 0),
            ("<testsuites></testsuite>", "closes", 12),
            ("<testsuites a='1' a='2'/>", "repeated", 18),
            ("<testsuites a=1/>", "quoted value", 14),
            ("<testsuites a='&bogus;'/>", "reference", 15),
            ("<testsuites a='&#0;'/>", "reference", 15),
            ("<testsuites/><testsuites/>", "second root", 13),
            ("junk<testsuites/>", "outside the root", 0),
            ("<!DOCTYPE x><testsuites/>", "DOCTYPE", 0),
            ("<testsuites><!-- open", "unterminated comment", 12),
            ("<html/>", "not <testsuites>", 0),
            ("<testsuites a='<'/>", "'<' in an attribute", 15),
            ("<testsuites", "unterminated start tag", 0),
        ]
        for (xml, fragment, offset) in cases {
            XCTAssertThrowsError(try JUnitReport(xml: xml), xml) { error in
                guard let error = error as? JUnitParseError else { return XCTFail("\(xml): \(error)") }
                XCTAssertTrue(error.message.contains(fragment), "\(xml): \(error)")
                XCTAssertEqual(error.offset, offset, "\(xml): \(error)")
            }
        }
        // Nesting is bounded instead of recursing without limit.
        let deep = String(repeating: "<testsuite>", count: 10_000)
        XCTAssertThrowsError(try JUnitReport(xml: deep)) { error in
            XCTAssertTrue("\(error)".contains("nested deeper"), "\(error)")
        }
    }
}

private final class ElementCounter: NSObject, XMLParserDelegate {
    var counts: [String: Int] = [:]
    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        counts[name, default: 0] += 1
    }
}
