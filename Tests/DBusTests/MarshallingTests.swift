@testable import DBus
import XCTest

/// Values into message bodies and back, byte for byte against the D-Bus Specification's
/// "Marshaling (Wire Format)": little-endian here ('l'), each value aligned to its type's
/// boundary from the start of the body (1 for y g v, 2 for n q, 4 for b i u s o h and array
/// lengths, 8 for x t d, structs and dict entries).
final class MarshallingTests: XCTestCase {
    /// The body bytes of a signal carrying `values`, after checking its signature, and the values
    /// read back from the demarshalled wire form.
    private func wire(_ values: [DBusValue], signature: String, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let message = try DBusMessage.signal(path: "/t", interface: "org.example.T", member: "S", arguments: values)
        message.serial = 1
        XCTAssertEqual(message.signature, signature, file: file, line: line)
        let bytes = try message.marshal()
        XCTAssertEqual(bytes[0], UInt8(ascii: "l"), "libdbus writes the machine's byte order", file: file, line: line)
        let back = try DBusMessage(marshalled: bytes)
        XCTAssertEqual(try back.arguments(), values, "round trip", file: file, line: line)
        XCTAssertEqual(try back.marshal(), bytes, "re-marshalled bytes", file: file, line: line)
        return try message.marshalledBody()
    }

    func testBasicTypes() throws {
        XCTAssertEqual(try wire([.byte(0x2A)], signature: "y"), [0x2A])
        XCTAssertEqual(try wire([.boolean(true)], signature: "b"), [1, 0, 0, 0])            // BOOLEAN is a UINT32 0 or 1
        XCTAssertEqual(try wire([.boolean(false)], signature: "b"), [0, 0, 0, 0])
        XCTAssertEqual(try wire([.int16(-2)], signature: "n"), [0xFE, 0xFF])
        XCTAssertEqual(try wire([.uint16(0x1234)], signature: "q"), [0x34, 0x12])
        XCTAssertEqual(try wire([.int32(-1)], signature: "i"), [0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(try wire([.uint32(0xDEAD_BEEF)], signature: "u"), [0xEF, 0xBE, 0xAD, 0xDE])
        XCTAssertEqual(try wire([.int64(-2)], signature: "x"), [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(try wire([.uint64(0x0102_0304_0506_0708)], signature: "t"), [8, 7, 6, 5, 4, 3, 2, 1])
        XCTAssertEqual(try wire([.double(1.5)], signature: "d"), [0, 0, 0, 0, 0, 0, 0xF8, 0x3F])   // IEEE 754 0x3FF8000000000000
        XCTAssertEqual(try wire([.string("hi")], signature: "s"), [2, 0, 0, 0, 0x68, 0x69, 0])     // UINT32 length, bytes, NUL
        XCTAssertEqual(try wire([.string("")], signature: "s"), [0, 0, 0, 0, 0])
        XCTAssertEqual(try wire([.string("é")], signature: "s"), [2, 0, 0, 0, 0xC3, 0xA9, 0])       // length in UTF-8 bytes
        XCTAssertEqual(try wire([.objectPath("/a")], signature: "o"), [2, 0, 0, 0, 0x2F, 0x61, 0])
        XCTAssertEqual(try wire([.signature(try DBusSignature("a{sv}"))], signature: "g"),
                       [5, 0x61, 0x7B, 0x73, 0x76, 0x7D, 0])                                      // BYTE length, bytes, NUL
    }

    func testAlignmentBetweenValues() throws {
        // y at 0, then u aligned to 4 (3 padding bytes), then x aligned to 8 (0 here), then n.
        XCTAssertEqual(try wire([.byte(1), .uint32(2), .int64(3), .int16(4)], signature: "yuxn"),
                       [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0])
    }

    func testArrays() throws {
        XCTAssertEqual(try wire([.bytes([1, 2, 3])], signature: "ay"), [3, 0, 0, 0, 1, 2, 3])
        XCTAssertEqual(try wire([.bytes([])], signature: "ay"), [0, 0, 0, 0])
        // "a" (len 1), 2 padding bytes to align the next string, "bc" (len 2): 6 + 2 + 7 = 15 bytes.
        XCTAssertEqual(try wire([.strings(["a", "bc"])], signature: "as"),
                       [15, 0, 0, 0, 1, 0, 0, 0, 0x61, 0, 0, 0, 2, 0, 0, 0, 0x62, 0x63, 0])
        XCTAssertEqual(try wire([.objectPaths(["/x", "/"])], signature: "ao"),
                       [14, 0, 0, 0, 2, 0, 0, 0, 0x2F, 0x78, 0, 0, 1, 0, 0, 0, 0x2F, 0])
        // An empty array of 8-aligned elements still pads to the first element's boundary; the
        // length does not count that padding.
        XCTAssertEqual(try wire([.array(.uint64, [])], signature: "at"), [0, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try wire([.array(.uint64, [.uint64(9)])], signature: "at"), [8, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try wire([.array(.array(.byte), [.bytes([7]), .bytes([])])], signature: "aay"),
                       [12, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0])
    }

    func testDictStructAndVariant() throws {
        // a{sv} {"k": <uint32 7>}: length 16; pad to 8; "k"; signature "u"; pad to 4; 7.
        XCTAssertEqual(try wire([.propertyMap(["k": .uint32(7)])], signature: "a{sv}"),
                       [16, 0, 0, 0, 0, 0, 0, 0,
                        1, 0, 0, 0, 0x6B, 0,
                        1, 0x75, 0, 0, 0, 0,
                        7, 0, 0, 0])
        XCTAssertEqual(try wire([.propertyMap([:])], signature: "a{sv}"), [0, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(try wire([.structure([.int32(7), .string("x")])], signature: "(is)"),
                       [7, 0, 0, 0, 1, 0, 0, 0, 0x78, 0])
        // Variant: signature "s", pad to 4, then the string.
        XCTAssertEqual(try wire([.variant(.string("hi"))], signature: "v"), [1, 0x73, 0, 0, 2, 0, 0, 0, 0x68, 0x69, 0])
        XCTAssertEqual(try wire([.variant(.variant(.byte(5)))], signature: "v"), [1, 0x76, 0, 1, 0x79, 0, 5])
        XCTAssertEqual(try wire([.variant(.bytes([1, 2]))], signature: "v"), [2, 0x61, 0x79, 0, 2, 0, 0, 0, 1, 2])
    }

    func testManagedObjectsNesting() throws {
        let value = DBusValue.managedObjects(["/o": ["i": ["p": .byte(1)]]])
        XCTAssertEqual(value.signature, "a{oa{sa{sv}}}")
        XCTAssertEqual(try wire([value], signature: "a{oa{sa{sv}}}"), [
            42, 0, 0, 0, 0, 0, 0, 0,            // outer array: 42 bytes from the first entry at 8
            2, 0, 0, 0, 0x2F, 0x6F, 0, 0,       // "/o", 1 pad
            26, 0, 0, 0, 0, 0, 0, 0,            // a{sa{sv}}: 26 bytes from 24
            1, 0, 0, 0, 0x69, 0, 0, 0,          // "i", 2 pad
            10, 0, 0, 0, 0, 0, 0, 0,            // a{sv}: 10 bytes from 40
            1, 0, 0, 0, 0x70, 0,                // "p"
            1, 0x79, 0,                         // variant signature "y"
            1,                                  // the byte
        ])
        let back = try DBusMessage(marshalled: try DBusMessage.signal(path: "/", interface: "a.b", member: "C", arguments: [value])
            .withSerial().marshal())
        XCTAssertEqual(try back.arguments()[0].asManagedObjects(), ["/o": ["i": ["p": .byte(1)]]])
    }

    func testDeepAndMixedRoundTrip() throws {
        let advertisement = DBusValue.propertyMap([
            "Type": .string("peripheral"),
            "ServiceUUIDs": .strings(["0000180d-0000-1000-8000-00805f9b34fb"]),
            "ManufacturerData": .dictionary(key: .uint16, value: .variant, [DBusDictEntry(.uint16(0x004C), .variant(.bytes([2, 0x15])))]),
            "ServiceData": .dictionary(key: .string, value: .variant, []),
            "Includes": .strings([]),
            "Appearance": .uint16(0x0341),
            "Discoverable": .boolean(true),
            "MinInterval": .uint32(100),
            "TxPower": .int16(-4),
            "Nested": .structure([.array(.structure([.objectPath, .double]), [.structure([.objectPath("/a/b"), .double(-0.25)])]),
                                  .variant(.array(.variant, [.variant(.int64(.min)), .variant(.uint64(.max))]))]),
        ])
        _ = try wire([advertisement, .objectPath("/org/bluez/hci0"), .bytes(Array(0...255))], signature: "a{sv}oay")
    }

    func testTypedAccessorsRejectOtherTypes() throws {
        XCTAssertEqual(try DBusValue.strings(["a"]).asStrings(), ["a"])
        XCTAssertThrowsError(try DBusValue.strings(["a"]).asBytes()) { error in
            XCTAssertEqual(error as? DBusError, .unexpectedType(expected: "ay", actual: "as"))
        }
        XCTAssertThrowsError(try DBusValue.propertyMap([:]).asManagedObjects()) { error in
            XCTAssertEqual(error as? DBusError, .unexpectedType(expected: "a{oa{sa{sv}}}", actual: "a{sv}"))
        }
        XCTAssertThrowsError(try DBusValue.uint32(1).asString())
        XCTAssertThrowsError(try DBusValue.string("x").unwrapVariant())
    }

    func testSignatureParsing() throws {
        XCTAssertEqual(try DBusType.parse("sa{sv}as"), [.string, .propertyMap, .array(.string)])
        XCTAssertEqual(try DBusType.parseSingle("a{oa{sa{sv}}}").signature, "a{oa{sa{sv}}}")
        XCTAssertEqual(try DBusType.parse(""), [])
        for bad in ["a", "(", "()", "{sv}", "a{vs}", "a{s}", "a{svs}", "z", "(ii", String(repeating: "a", count: 33) + "y",
                    String(repeating: "(", count: 33) + "y" + String(repeating: ")", count: 33), String(repeating: "y", count: 256)] {
            XCTAssertThrowsError(try DBusType.parse(bad), bad) { error in
                guard case .invalidSignature(let s, _)? = error as? DBusError else { return XCTFail("\(error)") }
                XCTAssertEqual(s, bad)
            }
        }
    }

    /// libdbus aborts the process on invalid input: each of these must be a typed error instead.
    func testInvalidValuesAndNamesAreErrors() throws {
        func attempt(_ values: [DBusValue]) -> DBusError? {
            do {
                _ = try DBusMessage.signal(path: "/", interface: "a.b", member: "C", arguments: values)
                return nil
            } catch { return error as? DBusError }
        }
        guard case .invalidValue? = attempt([.string("a\0b")]) else { return XCTFail("NUL in a string") }
        guard case .invalidValue? = attempt([.array(.string, [.uint32(1)])]) else { return XCTFail("element type") }
        guard case .invalidValue? = attempt([.dictionary(key: .string, value: .variant, [DBusDictEntry(.string("k"), .string("v"))])]) else {
            return XCTFail("dict entry type")
        }
        guard case .invalidSignature? = attempt([.structure([])]) else { return XCTFail("empty struct") }
        guard case .invalidSignature? = attempt([.dictionary(key: .variant, value: .string, [])]) else { return XCTFail("variant key") }
        guard case .invalidValue? = attempt([.variant(.string("\0"))]) else { return XCTFail("NUL inside a variant") }

        // (From variables: a string literal is taken as a literal path, checked by a precondition.)
        for bad in ["relative", "/trailing/", "/a//b", "/a-b", "", "/é"] {
            XCTAssertThrowsError(try DBusObjectPath(bad), bad) { error in
                XCTAssertEqual(error as? DBusError, .invalidObjectPath(bad))
            }
        }
        let good = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF"
        XCTAssertEqual(try DBusObjectPath(good).rawValue, good)

        for (interface, member) in [("nodots", "M"), ("a.b", "1M"), ("a..b", "M"), ("a.b", "M.N"), ("a.b", "")] {
            XCTAssertThrowsError(try DBusMessage.signal(path: "/", interface: interface, member: member), "\(interface) \(member)") { error in
                guard case .invalidName? = error as? DBusError else { return XCTFail("\(error)") }
            }
        }
        XCTAssertThrowsError(try DBusMessage.methodCall(destination: "bad name", path: "/", interface: nil, member: "M"))
    }

    func testGarbageIsAMalformedMessage() throws {
        for garbage: [UInt8] in [[], [0x6C], Array(repeating: 0, count: 16), [0x6C, 1, 0, 1] + Array(repeating: 0xFF, count: 28)] {
            XCTAssertThrowsError(try DBusMessage(marshalled: garbage)) { error in
                guard case .malformedMessage? = error as? DBusError else { return XCTFail("\(error)") }
            }
        }
        // A valid message cut short, and one with a body that contradicts its signature.
        let good = try DBusMessage.signal(path: "/", interface: "a.b", member: "C", arguments: [.string("hello")]).withSerial().marshal()
        XCTAssertThrowsError(try DBusMessage(marshalled: Array(good.dropLast(3))))
        var lying = good
        lying[lying.count - 10] = 0x7F   // the string's length now runs past the body
        XCTAssertThrowsError(try DBusMessage(marshalled: lying))
    }

    func testArgumentsExpectingASignature() throws {
        let m = try DBusMessage.signal(path: "/", interface: "a.b", member: "C", arguments: [.string("x"), .uint32(1)])
        XCTAssertEqual(try m.arguments(expecting: "su"), [.string("x"), .uint32(1)])
        XCTAssertThrowsError(try m.arguments(expecting: "s")) { error in
            guard case .unexpectedSignature(let expected, let actual, _)? = error as? DBusError else { return XCTFail("\(error)") }
            XCTAssertEqual(expected, "s")
            XCTAssertEqual(actual, "su")
        }
    }

    func testMatchRuleText() throws {
        let rule = DBusMatchRule(sender: "org.bluez", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                 pathNamespace: "/org/bluez", arg0: "it's")
        XCTAssertEqual(rule.description, "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
                           + "member='PropertiesChanged',path_namespace='/org/bluez',arg0='it'\\''s'")
    }
}

extension DBusMessage {
    func withSerial(_ serial: UInt32 = 1) -> DBusMessage {
        self.serial = serial
        return self
    }
}
