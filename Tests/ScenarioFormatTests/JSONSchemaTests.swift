import BLERuntime
import Foundation
@testable import ScenarioFormat
import XCTest

/// The JSONValue Schema of the format (ScenarioJSONSchema): the shipped file is the generated one, the
/// generator covers every key list of the schema code, and the keyword forms it probes are the
/// ones the code enforces. Whether real files validate against it is `make schema-check`'s
/// (check-jsonschema on scenarios/ and the broken fixtures).
final class JSONSchemaTests: XCTestCase {
    private static var root: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    func testTheShippedSchemaIsTheGeneratedOne() throws {
        let path = Self.root + "/schema/blelab-scenario.schema.json"
        let shipped = try String(contentsOfFile: path, encoding: .utf8)
        // Not XCTAssertEqual: a 140 kB diff in the log says less than the fix.
        XCTAssertTrue(shipped == ScenarioJSONSchema.text,
                      "schema/blelab-scenario.schema.json is not what the schema code gives: run `make schema` and commit it")
    }

    private var schema: JSONValue { ScenarioJSONSchema.document }

    private func properties(_ def: String) -> [String] {
        guard case let .object(members)? = schema["$defs"]?[def]?["properties"] else { return [] }
        return members.map(\.0)
    }

    /// The keys of every mapping are the lists the schema code checks keys against.
    func testEveryMappingHasTheKeysOfItsList() {
        guard case let .object(top)? = schema["properties"] else { return XCTFail("no properties") }
        XCTAssertEqual(top.map(\.0), ScenarioSchema.keys)
        XCTAssertEqual(properties("peripheral"), PeripheralSchema.keys)
        XCTAssertEqual(properties("advertise"), PeripheralSchema.advertiseKeys)
        XCTAssertEqual(properties("scan-response"), PeripheralSchema.scanResponseKeys)
        XCTAssertEqual(properties("service"), PeripheralSchema.serviceKeys)
        XCTAssertEqual(properties("characteristic"), PeripheralSchema.characteristicKeys)
        XCTAssertEqual(properties("descriptor"), DescriptorSchema.keys)
        XCTAssertEqual(properties("link"), FaultSyntax.linkKeys)
        XCTAssertEqual(properties("flaw"), FlawSchema.keys)
        XCTAssertEqual(schema["$defs"]?["peripheral"]?["additionalProperties"], .bool(false))
    }

    /// The keywords each item's anyOf requires, in order (in `else`, for lists with bare keywords).
    private func keywords(_ def: String) -> [String] {
        let list = schema["$defs"]?[def]
        guard case let .array(items)? = (list?["else"] ?? list)?["anyOf"] else { return [] }
        return items.compactMap { item -> String? in
            guard case let .array(required)? = item["required"], case let .string(k)? = required.first else { return nil }
            return k
        }
    }

    func testEveryKeywordHasItsItem() {
        XCTAssertEqual(keywords("step"), CentralSchema.keywords)
        XCTAssertEqual(keywords("expectation"), ExpectationSchema.kinds)
        XCTAssertEqual(keywords("action"), ActionSchema.keywords)
    }

    /// A step with a key its keyword does not take: the error lists the keys the code allows,
    /// which must be the fields the probe found for it.
    func testProbedFieldsAreTheOnesTheCodeAllows() throws {
        var checked = 0
        for keyword in CentralSchema.keywords where !["peripheral", "expect"].contains(keyword) {
            guard case let .fields(_, allowed)? = KeywordProbe.form(of: keyword, at: .step) else { continue }
            let text = """
            scenario: s
            peripherals:
              p:
                gatt:
                  - service: FFE0
                    characteristics:
                      - { uuid: FFE1, properties: [read, write, notify] }
            central:
              - \(keyword): { zzz-not-a-key: 1 }
            """
            XCTAssertThrowsError(try Scenario.parse(text, file: "s.yaml")) { error in
                let messages = (error as? ScenarioErrors)?.errors.map(\.description) ?? []
                XCTAssertTrue(messages.contains { $0.contains("unknown key 'zzz-not-a-key'") && $0.contains("(\(allowed.joined(separator: ", ")))") },
                              "\(keyword): \(allowed) not in \(messages)")
            }
            checked += 1
        }
        XCTAssertGreaterThan(checked, 20)
    }

    /// The value pattern takes exactly the u8:, u16: and u32: numbers ScalarSyntax.bytes takes:
    /// every u8 and u16 spelling from 0 to past the limit, and u32's edges.
    func testUnsignedValuePatternsMatchTheParser() throws {
        let regex = try NSRegularExpression(pattern: Shapes.valueScalarPattern)
        func matches(_ text: String) -> Bool {
            regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
        func parses(_ text: String) -> Bool {
            if case .success = ScalarSyntax.bytes(text) { return true }
            return false
        }
        var texts: [String] = []
        for n in 0...70_000 {
            texts += ["u16:\(n)"]
            if n < 300 { texts += ["u8:\(n)", "u8:00\(n)", "u8:0x\(String(n, radix: 16))", "u8:0X00\(String(n, radix: 16, uppercase: true))"] }
        }
        texts += ["u16:0xffff", "u16:0x10000", "u16:0x0000ffff", "u32:4294967295", "u32:4294967296", "u32:0004294967295", "u32:9999999999",
                  "u32:4294967290", "u32:4294967300", "u32:429496729", "u32:0xFFFFFFFF", "u32:0x100000000", "u32:18446744073709551616",
                  "u8:", "u8:-1", "u8:+1", "u8:0x", "u8:1.0", "u8: 1", "u16:65536", "u16:99999", "u16:100000"]
        var wrong: [String] = []
        for text in texts where matches(text) != parses(text) { wrong.append("\(text): schema \(matches(text)), lab \(parses(text))") }
        XCTAssertEqual(wrong, [])
        XCTAssertEqual(Shapes.decimal(atMost: 255), "0*([0-9]{1,2}|[0-1][0-9]{2}|2[0-4][0-9]|25[0-4]|255)")
    }

    func testTheProbeReadsFormsAndBareActions() {
        XCTAssertEqual(KeywordProbe.form(of: "notify", at: .action), .fields(primary: "characteristic", allowed: ["characteristic", "value"]))
        XCTAssertEqual(KeywordProbe.form(of: "delay", at: .action), .valueOnly)
        XCTAssertEqual(KeywordProbe.form(of: "mtu", at: .step), .fields(primary: "size", allowed: ["size", "peripheral"]))
        XCTAssertNil(KeywordProbe.form(of: "no-such-keyword", at: .step))
        XCTAssertTrue(KeywordProbe.acceptsBareAction("disconnect"))
        XCTAssertTrue(KeywordProbe.acceptsBareAction("stop-advertising"))
        XCTAssertFalse(KeywordProbe.acceptsBareAction("notify"))
        XCTAssertFalse(KeywordProbe.acceptsBareAction("delay"))
    }
}
