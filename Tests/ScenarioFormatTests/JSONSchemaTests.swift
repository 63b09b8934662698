import BLERuntime
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
