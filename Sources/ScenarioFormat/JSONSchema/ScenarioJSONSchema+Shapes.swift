import ATT
import BLERuntime
import Controller
import GATT
import HCI

/// What each key's value may be, in JSONValue Schema, as YAML 1.2 reads it (see ScenarioJSONSchema):
/// the scalar forms of docs/scenarios.md section 4 as ScalarSyntax and SchemaReader parse them.
enum Shapes {
    typealias J = JSONValue

    static func ref(_ name: String) -> J { ScenarioJSONSchema.ref(name) }

    static func object(_ members: [(String, J)]) -> J { .obj(members) }

    /// An integer in `range`, as a number or as the text the lab reads (decimal or 0x…; YAML reads
    /// `-0x10` and `0X10` as text).
    static func integer(_ range: ClosedRange<Int64>, _ description: String) -> J {
        let numeral = range.lowerBound < 0 ? "^-?(0[xX][0-9a-fA-F]+|[0-9]+)$" : "^(0[xX][0-9a-fA-F]+|[0-9]+)$"
        return object([
            ("description", .string(description)),
            ("anyOf", [object([("type", "integer"), ("minimum", .int(range.lowerBound)), ("maximum", .int(range.upperBound))]),
                       object([("type", "string"), ("pattern", .string(numeral))])]),
        ])
    }

    /// One of `names`, exactly as written.
    static func names(_ names: [String], _ description: String) -> J {
        object([("description", .string(description)), ("type", "string"), ("enum", .array(names.map { .string($0) }))])
    }

    /// One of `names` in any case (the lab lowercases before it compares), offered in lower case.
    static func namesAnyCase(_ names: [String], _ description: String, also: [J] = []) -> J {
        let pattern = "^(" + names.map(anyCase).joined(separator: "|") + ")$"
        return object([
            ("description", .string(description)),
            ("anyOf", .array([object([("enum", .array(names.map { .string($0) }))]), object([("type", "string"), ("pattern", .string(pattern))])] + also)),
        ])
    }

    /// `read` → `[rR][eE][aA][dD]`: a regular expression without flags that ignores case.
    static func anyCase(_ name: String) -> String {
        name.map { c -> String in
            let lower = c.lowercased(), upper = c.uppercased()
            if lower != upper { return "[\(lower)\(upper)]" }
            return ".+*?()[]{}|^$\\/".contains(c) ? "\\\(c)" : String(c)
        }.joined()
    }

    /// A list of `item`, or one `item` alone (SchemaReader.items).
    static func listOrOne(_ item: J, _ description: String) -> J {
        object([("description", .string(description)), ("anyOf", [item, object([("type", "array"), ("items", item)])])])
    }

    static func list(_ item: J, _ description: String, minItems: Int64 = 0) -> J {
        var members: [(String, J)] = [("description", .string(description)), ("type", "array"), ("items", item)]
        if minItems > 0 { members.append(("minItems", .int(minItems))) }
        return object(members)
    }

    static let hex = "[0-9A-Fa-f]"
    static let uuidPattern = "(\(hex){4}|\(hex){8}|\(hex){32}|\(hex){8}-\(hex){4}-\(hex){4}-\(hex){4}-\(hex){12})"
    static let numeral = "(0[xX][0-9a-fA-F]+|[0-9]+)"
    /// A value scalar (ScalarSyntax.bytes): `text:` anything, `hex:` an even number of digits
    /// with spaces anywhere, `u8:`/`u16:`/`u32:` a number that fits (decimal or 0x…, leading
    /// zeros allowed, as ScalarSyntax.unsigned reads it).
    static var valueScalarPattern: String {
        let unsigned = [(8, 1), (16, 2), (32, 4)].map { bits, octets in
            "u\(bits):(0[xX]0*\(hex){1,\(2 * octets)}|\(decimal(atMost: (1 << UInt64(bits)) - 1)))$"
        }
        return "^(text:|hex:( *\(hex) *\(hex))* *$|" + unsigned.joined(separator: "|") + ")"
    }

    /// Decimal digits (leading zeros allowed) of a number from 0 to `max`, as a regular expression.
    static func decimal(atMost max: UInt64) -> String {
        let digits = Array(String(max)).map { Int(String($0))! }
        var alternatives: [String] = []
        if digits.count > 1 { alternatives.append("[0-9]{1,\(digits.count - 1)}") }
        // As many digits as max: equal to it up to position i, then a smaller digit, then any.
        for i in digits.indices where digits[i] > 0 {
            let rest = digits.count - i - 1
            let prefix = digits[..<i].map(String.init).joined()
            alternatives.append(prefix + (digits[i] == 1 ? "0" : "[0-\(digits[i] - 1)]") + (rest > 1 ? "[0-9]{\(rest)}" : rest == 1 ? "[0-9]" : ""))
        }
        alternatives.append(String(max))
        return "0*(" + alternatives.joined(separator: "|") + ")"
    }
    static let peripheralIDPattern = "^[A-Za-z0-9][A-Za-z0-9._-]*$"

    /// A peripheral id as a mapping key: a name the lab accepts, not `central`.
    static let peripheralIDName: J = object([
        ("pattern", .string(peripheralIDPattern)), ("not", object([("const", .string(PeripheralSchema.centralID))])),
    ])

    /// Any scalar: YAML may read the text the lab takes as a number, a boolean or null.
    static let scalarTypes: J = ["string", "number", "boolean", "null"]

    static var attErrorNames: [String] { ATTErrorCode.allNames }

    /// The named scalar forms, in `$defs`.
    static var definitions: [(String, J)] {
        [
            ("text", object([("description", "text (any scalar)"), ("type", scalarTypes)])),
            ("duration", object([
                ("description", "a duration such as 250ms, 1s, 1.5s or 2m (units us, µs, ms, s, m, h)"),
                ("type", "string"), ("pattern", "^[0-9]+(\\.[0-9]+)?(ms|us|µs|s|m|h)$"),
            ])),
            ("boolean", object([
                ("description", "true or false (YAML 1.2: yes, no, on and off are not booleans)"),
                ("anyOf", [object([("type", "boolean")]), object([("enum", ["true", "True", "TRUE", "false", "False", "FALSE"])])]),
            ])),
            ("uuid", object([
                ("description", "a UUID: 16-bit like 180D, 32-bit, or 128-bit like 6E400001-B5A3-F393-E0A9-E50E24DCCA9E"),
                // 1800 and 00002A37 read as numbers in YAML, 1E00 as a float.
                ("anyOf", [object([("type", "string"), ("pattern", .string("^\(uuidPattern)$"))]), object([("type", "number"), ("minimum", 0)])]),
            ])),
            ("uuids", listOrOne(ref("uuid"), "a list of UUIDs such as [FFE0, 180D], or one")),
            ("characteristic-ref", object([
                ("description", "a characteristic UUID such as FFE1, or SERVICE/CHARACTERISTIC such as 180F/2A19"),
                ("anyOf", [object([("type", "string"), ("pattern", .string("^\(uuidPattern)(/\(uuidPattern))?$"))]),
                           object([("type", "number"), ("minimum", 0)])]),
            ])),
            ("peripheral-id", object([
                ("description", "a peripheral declared under peripherals:"),
                ("anyOf", [object([("type", "string"), ("pattern", .string(peripheralIDPattern))]),
                           object([("type", ["number", "boolean", "null"])])]),
            ])),
            ("value", object([
                ("description", "a value such as text:hello, hex:4c000215, u8:7, u16:500, u32:1, or a list of them (concatenated)"),
                ("anyOf", [object([("type", "string"), ("pattern", .string(valueScalarPattern))]),
                           object([("type", "array"), ("items", ref("value"))])]),
            ])),
            ("action-value", object([
                ("description", "a value (text:…, hex:…, u8:…, u16:…, u32:…), written (the bytes just written, in on-write), a generator ({ random-u8: [59, 61] }, { counter-u8: 0 }, { sequence: [text:a, text:b] }), or a list of these"),
                ("anyOf", [
                    object([("type", "string"), ("pattern", .string(valueScalarPattern))]),
                    object([("const", "written")]),
                    object([("type", "array"), ("items", ref("action-value"))]),
                    object([
                        ("type", "object"), ("minProperties", 1), ("maxProperties", 1),
                        ("properties", object([
                            ("random-u8", object([("type", "array"), ("items", integer(0...255, "a number from 0 to 255")),
                                                  ("minItems", 2), ("maxItems", 2)])),
                            ("counter-u8", integer(0...255, "a start value from 0 to 255")),
                            ("sequence", object([("type", "array"), ("items", ref("value")), ("minItems", 1)])),
                        ])),
                        ("additionalProperties", false),
                    ]),
                ]),
            ])),
            ("dbm", object([
                ("description", "an RSSI in dBm from -127 to 20 (such as -70 or -70dBm)"),
                ("anyOf", [object([("type", "integer"), ("minimum", -127), ("maximum", 20)]),
                           object([("type", "string"), ("pattern", .string("^-?\(numeral)([dD][bB][mM])?$"))])]),
            ])),
            ("att-error", namesAnyCase(attErrorNames, "an ATT error name such as write-not-permitted or insufficient-authentication, or 0xNN",
                                       also: [object([("type", "string"), ("pattern", "^0[xX][0-9a-fA-F]{1,2}$")]),
                                              object([("type", "integer"), ("minimum", 0), ("maximum", 255)])])),
            ("hci-status", namesAnyCase(HCIStatus.allNames, "an HCI status such as remote-user-terminated or connection-timeout, or 0xNN",
                                        also: [object([("type", "string"), ("pattern", "^0[xX][+-]?[0-9a-fA-F]+$")]),
                                               object([("type", "integer"), ("minimum", 0), ("maximum", 255)])])),
            ("att-request", object([
                ("description", .string("an ATT request (\(FlawSchema.requestNames.joined(separator: ", ")), any, or 0xNN)")),
                ("anyOf", [object([("enum", .array((FlawSchema.requestNames + ["any"]).map { .string($0) }))]),
                           object([("type", "string"), ("pattern", .string("^\(numeral)$"))]),
                           object([("type", "integer"), ("minimum", 0), ("maximum", 255)])]),
            ])),
        ]
    }

    /// The shape of `key` in `context`: a mapping's name ("peripheral", "characteristic", …) or
    /// "PLACE KEYWORD" for the fields of a step, expectation or action keyword ("step scan"),
    /// "PLACE value" for a keyword that takes a value alone. Nil: no shape known.
    static func shape(_ key: String, context: String) -> J? {
        let keyword = context.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        let place = context.split(separator: " ").first.map(String.init) ?? context
        switch (context, key) {
        // The scenario.
        case ("scenario", "scenario"): return object([("description", "what the scenario checks, one line"), ("type", scalarTypes)])
        case ("scenario", "tags"):
            let tag = object([("anyOf", [object([("type", "string"), ("pattern", "^[^ ,]+$")]), object([("type", ["number", "boolean", "null"])])])])
            return listOrOne(tag, "tags such as [seed, serial], for blelab run --tag")
        case ("scenario", "timeout"): return described(ref("duration"), "the scenario's time limit on the virtual clock")
        case ("scenario", "seed"):
            // Below 2^64, more than JSON's integers here can say: no maximum.
            return object([("description", "the seed of the scenario's random choices (a non-negative integer below 2^64)"),
                           ("anyOf", [object([("type", "integer"), ("minimum", 0)]), object([("type", "string"), ("pattern", .string("^\(numeral)$"))])])])
        case ("scenario", "requires"):
            return listOrOne(names(TransportTier.all.map(\.rawValue), "a tier"), "the tiers the scenario can run on, such as [sim]")
        case ("scenario", "expect-failure"): return object([("description", "text the scenario's failure must contain"), ("type", scalarTypes)])
        case ("scenario", "peripherals"):
            return object([("description", "the simulated peripherals, by id"), ("type", "object"), ("minProperties", 1),
                           ("propertyNames", peripheralIDName), ("additionalProperties", ref("peripheral"))])
        case ("scenario", "central"): return list(ref("step"), "the steps of the scripted central", minItems: 1)

        // A peripheral.
        case ("peripheral", "address"):
            return object([("description", "an address such as C0:11:22:33:44:55/random or 00:1A:7D:DA:71:13/public"), ("type", "string"),
                           ("pattern", .string("^\(hex){2}([:-]\(hex){2}){5}(/(\(anyCase("random"))|\(anyCase("public"))))?$"))])
        case ("peripheral", "rssi"): return integer(-127...20, "an RSSI in dBm from -127 to 20")
        case ("peripheral", "advertise"): return ref("advertise")
        case ("peripheral", "gatt"): return list(ref("service"), "the GATT services (- service: FFE0)")
        case ("peripheral", "on-connect"), ("peripheral", "on-disconnect"), ("characteristic", "on-write"), ("characteristic", "on-read"),
             ("characteristic", "on-subscribe"), ("characteristic", "on-unsubscribe"):
            return ref("actions")
        case ("peripheral", "device-name"): return object([("description", "the Device Name characteristic's value (at most 248 octets)"), ("type", scalarTypes)])
        case ("peripheral", "flaws"): return list(ref("flaw"), "flawed answers to ATT requests")
        case ("peripheral", "security"): return ref("security")
        case ("peripheral", "link"): return ref("link")
        case ("peripheral", "privacy"):
            return object([("description", "privacy: { rotate: DURATION }: a resolvable private address that changes at that interval"),
                           ("type", "object"),
                           ("properties", object([("rotate", described(ref("duration"), "how often the address changes, 1s to 1h (15m recommended)"))])),
                           ("required", ["rotate"]), ("additionalProperties", false)])
        case ("peripheral", "mtu"): return integer(23...517, "the peripheral's ATT_MTU, from 23 to 517")

        // Advertising.
        case ("advertise", "connectable"), ("advertise", "resume-after-disconnect"): return ref("boolean")
        case ("advertise", "flags"), ("scan-response", "flags"):
            return object([("description", "flags from 0 to 0xFF, or one octet such as hex:06"),
                           ("anyOf", [integer(0...255, "flags"), ref("value")])])
        case ("advertise", "scan-response"): return ref("scan-response")
        case (_, "manufacturer-data"): return described(ref("value"), "the company identifier (2 octets, little-endian), then data")
        case (_, "service-data"):
            return object([("description", "service UUIDs and their data, such as { 180F: u8:100 }"), ("type", "object"),
                           ("propertyNames", object([("pattern", .string("^\(uuidPattern)$"))])), ("additionalProperties", ref("value"))])
        case (_, "tx-power"): return integer(-127...127, "a TX power in dBm from -127 to 127")
        case (_, "name"): return object([("description", "the complete local name"), ("type", scalarTypes)])
        case (_, "short-name"): return object([("description", "a shortened local name"), ("type", scalarTypes)])

        // GATT.
        case ("service", "handle"): return integer(1...0xFFFF, "a handle from 0x0001 to 0xFFFF")
        case ("characteristic", "handle"): return integer(2...0xFFFF, "a value handle from 0x0002 to 0xFFFF (its declaration takes the one before)")
        case ("service", "characteristics"): return list(ref("characteristic"), "the characteristics (- uuid: FFE1)")
        case ("characteristic", "descriptors"): return list(ref("descriptor"), "descriptors (- { uuid: 2901, value: text:Level })")
        case ("characteristic", "extended-properties"):
            return listOrOne(namesAnyCase(CharacteristicExtendedProperties.named.map(\.1), "an extended property"),
                             "extended properties such as [reliable-write, writable-auxiliaries]")
        case ("characteristic", "permissions"):
            return listOrOne(names(PermissionName.all, "a permission"), "permissions such as [encrypted-read, encrypted-write]")
        case ("descriptor", "permissions"): return listOrOne(names(DescriptorSchema.permissionNames, "a permission"), "permissions such as [read, write]")
        case (_, "properties"):
            return listOrOne(namesAnyCase(CharacteristicProperties.named.map(\.1), "a property"), "properties such as [read, notify]")
        case ("expect characteristic", "uuid"): return ref("characteristic-ref")
        case (_, "uuid"), (_, "service"), (_, "descriptor"): return ref("uuid")

        // Security.
        case (_, "io"): return names(IOCapabilityName.allCases.map(\.rawValue), "an IO capability")
        case (_, "passkey"):
            return object([("description", "a passkey of six digits, 000000 to 999999"),
                           ("anyOf", [object([("type", "string"), ("pattern", "^[0-9]{6}$")]),
                                      object([("type", "integer"), ("minimum", 0), ("maximum", 999_999)])])])
        case ("security", "request-security"): return names(["on-connect"], "on-connect: the peripheral sends Security Request when a central connects")
        case ("expect paired", "method"): return names(PairingMethodName.allCases.map(\.rawValue), "a pairing method")
        case (_, "oob"): return described(ref("boolean"), "out-of-band data, which the lab hands between its own devices")
        case ("expect addresses-seen", "count"): return integer(1...1_000_000, "a count of distinct addresses, 1 or more")
        case ("expect addresses-seen", "resolved"): return ref("boolean")
        case (_, "encryption") where context == "link" || context == "step link":
            return names(LinkFaults.EncryptionFault.allCases.map(\.rawValue), "an encryption fault: key-missing (0x06) or mic-failure (0x3D)")
        case ("expect pairing-failed", "reason"): return names(PairingFailureName.allNames, "an SMP Pairing Failed reason, or timeout")

        // Link faults.
        case (_, "loss"):
            return object([("description", "a loss rate from 0% to 100% such as 10%"), ("type", "string"), ("pattern", "^[0-9]+(\\.[0-9]*)?%$")])
        case (_, "drop"):
            return listOrOne(ref("drop"), "ATT PDUs to drop such as { att: 3, from: central }")
        case ("drop", "att"): return integer(1...1_000_000, "the number of the ATT PDU to drop, from 1")
        case ("drop", "from"): return names(["central", "peripheral"], "who sends it")
        case (_, "pdus-per-event"): return integer(1...32, "data PDUs per connection event, 1 to 32")
        case (_, "rate"):
            return object([("description", "a rate above 0 and up to 1000dB/s, such as 10dB/s"), ("type", "string"),
                           ("pattern", "^[0-9]+(\\.[0-9]*)?[dD][bB]/[sS]$")])
        case ("step power-off", "device"): return names([PeripheralSchema.centralID], "the central")
        case (_, "answer"): return names(["accept", "reject"], "the central's answer to connection parameter requests")
        case ("link", "latency"), ("step link", "latency"): return described(ref("duration"), "an added latency")
        case (_, "latency"): return integer(0...499, "a peripheral latency from 0 to 499 connection events")
        case ("action request-connection-update", "via"):
            return names(ConnectionUpdateRequest.Procedure.allCases.map(\.rawValue), "the procedure")

        // Flaws.
        case ("flaw", "request"), ("expect att-timeout", "request"): return listOrOne(ref("att-request"), "ATT requests")
        case ("flaw", "skip"): return integer(0...1_000_000, "requests to answer normally first")
        case ("flaw", "no-response"): return ref("boolean")
        case ("flaw", "malformed"):
            return object([("description", .string("\(FlawSchema.malformations.map(\.0).joined(separator: ", ")), or the octets to send (hex:…)")),
                           ("anyOf", [names(FlawSchema.malformations.map(\.0), "a malformation"), ref("value")])])
        case ("flaw", "respond-error"), ("action value", "respond-error"), (_, "code"): return ref("att-error")
        case (_, "handle"), (_, "start"), (_, "end"): return integer(1...0xFFFF, "a handle from 0x0001 to 0xFFFF")
        case (_, "octets"), (_, "bytes"): return ref("value")
        case ("expect response-time", "at-least"), ("expect response-time", "at-most"): return ref("duration")
        case ("expect malformed-response", "opcode"):
            return object([("description", "the opcode of the response that arrived: a name, 0xNN, or any"),
                           ("anyOf", [object([("enum", .array((ExpectationSchema.responseNames.map(\.0) + ["any"]).map { .string($0) }))]),
                                      object([("type", "string"), ("pattern", .string("^\(numeral)$"))]),
                                      object([("type", "integer"), ("minimum", 0), ("maximum", 255)])])])

        // Steps, expectations, actions.
        case (_, "peripheral"): return ref("peripheral-id")
        case (_, "peripherals"): return listOrOne(ref("peripheral-id"), "peripheral ids such as [sensor, strap]")
        case (_, "characteristic"): return ref("characteristic-ref")
        case ("step discover", "services"):
            return object([("description", "the services to discover"), ("anyOf", [ref("uuids"), object([("const", "all")])])])
        case (_, "services"): return ref("uuids")
        case (_, "names"): return listOrOne(ref("text"), "local names such as [Smart_Curtain]")
        case (_, "value") where place == "action": return ref("action-value")
        case (_, "value"): return ref("value")
        case (_, "in-order"): return list(ref("value"), "the values, in order")
        case (_, "within"), (_, "for"), (_, "after"), (_, "delay"), (_, "jitter"), (_, "interval"), (_, "window"),
             (_, "scan-interval"), (_, "scan-window"), (_, "timeout"):
            return ref("duration")
        case (_, "duplicates"), (_, "gatt-cache"), (_, "acquire"), (_, "secure-connections"), (_, "bonding"), (_, "mitm"),
             (_, "confirm"), (_, "bonded"), (_, "encrypted"), (_, "enabled"), (_, "indication"):
            return ref("boolean")
        case ("step scan", "min-rssi"), ("expect rssi", "at-least"), ("expect rssi", "at-most"): return ref("dbm")
        case (_, "size"): return integer(23...517, "an ATT_MTU from 23 to 517")
        case ("step write", "type"): return names(WriteType.allCases.map(\.rawValue), "the write type")
        case ("step subscribe", "type"): return names(CentralSchema.subscriptionTypes.map(\.0), "what to enable in the CCCD")
        case ("expect write-sent-as", "method"), ("expect peripheral-received", "via"):
            return names(WriteMethod.allCases.map(\.rawValue), "command (Write Command) or request (Write Request)")
        case ("expect rssi", "from"): return names(RSSIExpectation.Source.allCases.map(\.rawValue), "where the RSSI comes from")
        case ("expect connect-failed", "reason"):
            return object([("description", "timeout, or an HCI status"), ("anyOf", [object([("const", "timeout")]), ref("hci-status")])])
        case ("expect disconnected", "reason"), ("expect link-lost", "reason"), ("expect encryption-failed", "reason"),
             ("action disconnect", "reason"):
            return ref("hci-status")
        case ("expect notification", "count"): return integer(0...1_000_000, "a count from 0 to 1000000")
        case ("action burst", "count"): return integer(1...10_000, "a count from 1 to 10000")
        case ("action notify-every", "count"), ("flaw", "count"): return integer(1...1_000_000, "a count from 1 to 1000000")
        case ("action value", "delay"): return described(ref("duration"), "wait before the next action")
        case ("action value", "stop-advertising"), ("action value", "start-advertising"): return object([("type", "null")])
        default:
            _ = keyword
            return nil
        }
    }

    static func described(_ shape: J, _ description: String) -> J {
        object([("description", .string(description)), ("allOf", [shape])])
    }
}
