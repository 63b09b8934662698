import XCTest
import YAMLSubset

/// Every example of the format's original specification, copied here, parsed to the
/// tree written out by hand. The trees were also checked against PyYAML 6.0.3 with its
/// BaseLoader, which keeps every scalar a string as the subset does.
final class ScenarioFormatExampleTests: XCTestCase {
    /// The example under "Shape", verbatim.
    static let shapeExample = """
    scenario: HM-10 serial bridge echoes what the app writes   # required, one line
    tags: [seed, serial]          # optional; `blelab run --tag serial`
    timeout: 10s                  # optional; whole-scenario budget (virtual time on the sim tier)
    seed: 42                      # optional; all randomness (advertising jitter, RSSI noise, generators)
    requires: [sim]               # optional; tiers this scenario can run on (default: all)
    
    peripherals:                  # one or more, keyed by an id used in steps
      hm10:
        address: C0:11:22:33:44:55/random    # optional; default derived from the id and seed
        rssi: -48                             # optional; what scanners report (dBm), ±noise from seed
        advertise:
          name: HMSoft                        # Complete Local Name AD
          services: [FFE0]                    # Complete List of 16/128-bit Service UUIDs AD
          interval: 100ms
          connectable: true                   # default true
          manufacturer-data: hex:4c000215     # optional AD; also service-data, tx-power, flags
          scan-response: { name: HMSoft-long-name }   # optional
        gatt:
          - service: FFE0
            characteristics:
              - uuid: FFE1
                properties: [read, write-without-response, notify]
                value: text:ready
                on-write:                     # actions run when a central writes this value
                  - notify: FFE1
                    value: written            # `written` = the bytes just written
      curtain:
        advertise: { name: Smart_Curtain, services: [FFF0] }
        gatt:
          - service: FFF0
            characteristics:
              - { uuid: FFF1, properties: [write-without-response] }
              - { uuid: FFF2, properties: [read, notify], value: hex:00 }
    
    central:                      # the scripted central: steps run in order
      - scan: { services: [FFE0], for: 1s }
      - expect: { discovered: hm10 }
      - expect: { not-discovered: curtain }   # scan filtering
      - connect: hm10
      - discover: all
      - subscribe: FFE1
      - write: { characteristic: FFE1, value: text:hello }     # type defaults to prefer-request
      - expect: { write-sent-as: command }    # observed on the link: ATT Write Command
      - expect: { notification: FFE1, value: text:hello, within: 500ms }
      - disconnect
    """

    func testShapeExampleParsesToTheExpectedTree() {
        let expected: Tree = [
            "scenario": "HM-10 serial bridge echoes what the app writes",
            "tags": ["seed", "serial"],
            "timeout": "10s",
            "seed": "42",
            "requires": ["sim"],
            "peripherals": [
                "hm10": [
                    "address": "C0:11:22:33:44:55/random",
                    "rssi": "-48",
                    "advertise": [
                        "name": "HMSoft",
                        "services": ["FFE0"],
                        "interval": "100ms",
                        "connectable": "true",
                        "manufacturer-data": "hex:4c000215",
                        "scan-response": ["name": "HMSoft-long-name"],
                    ],
                    "gatt": [
                        [
                            "service": "FFE0",
                            "characteristics": [
                                [
                                    "uuid": "FFE1",
                                    "properties": ["read", "write-without-response", "notify"],
                                    "value": "text:ready",
                                    "on-write": [
                                        ["notify": "FFE1", "value": "written"],
                                    ],
                                ],
                            ],
                        ],
                    ],
                ],
                "curtain": [
                    "advertise": ["name": "Smart_Curtain", "services": ["FFF0"]],
                    "gatt": [
                        [
                            "service": "FFF0",
                            "characteristics": [
                                ["uuid": "FFF1", "properties": ["write-without-response"]],
                                ["uuid": "FFF2", "properties": ["read", "notify"], "value": "hex:00"],
                            ],
                        ],
                    ],
                ],
            ],
            "central": [
                ["scan": ["services": ["FFE0"], "for": "1s"]],
                ["expect": ["discovered": "hm10"]],
                ["expect": ["not-discovered": "curtain"]],
                ["connect": "hm10"],
                ["discover": "all"],
                ["subscribe": "FFE1"],
                ["write": ["characteristic": "FFE1", "value": "text:hello"]],
                ["expect": ["write-sent-as": "command"]],
                ["expect": ["notification": "FFE1", "value": "text:hello", "within": "500ms"]],
                "disconnect",
            ],
        ]
        assertTree(Self.shapeExample, expected)
    }

    func testShapeExampleKeepsStylesAndMarks() throws {
        let root = try XCTUnwrap(parse(Self.shapeExample)?.mapping)
        XCTAssertEqual(root.style, .block)
        XCTAssertEqual(root.mark, Mark(line: 1, column: 1))
        XCTAssertEqual(root.keys, ["scenario", "tags", "timeout", "seed", "requires", "peripherals", "central"])

        let scenario = try XCTUnwrap(root.value(for: "scenario")?.scalar)
        XCTAssertEqual(scenario.style, .plain)
        XCTAssertEqual(scenario.mark, Mark(line: 1, column: 11))

        let tags = try XCTUnwrap(root["tags"]?.sequence)
        XCTAssertEqual(tags.style, .flow)
        XCTAssertEqual(tags.mark, Mark(line: 2, column: 7))
        XCTAssertEqual(tags.items.map(\.mark), [Mark(line: 2, column: 8), Mark(line: 2, column: 14)])

        let hm10 = try XCTUnwrap(root["peripherals"]?.mapping?["hm10"]?.mapping)
        XCTAssertEqual(hm10.mark, Mark(line: 9, column: 5))
        XCTAssertEqual(hm10.entry(for: "rssi")?.key.mark, Mark(line: 10, column: 5))
        let scanResponse = try XCTUnwrap(hm10["advertise"]?.mapping?["scan-response"]?.mapping)
        XCTAssertEqual(scanResponse.style, .flow)
        XCTAssertEqual(scanResponse.mark, Mark(line: 17, column: 22))

        let gatt = try XCTUnwrap(hm10["gatt"]?.sequence)
        XCTAssertEqual(gatt.style, .block)
        XCTAssertEqual(gatt.mark, Mark(line: 19, column: 7))
        let service = try XCTUnwrap(gatt.items.first?.mapping)
        XCTAssertEqual(service.mark, Mark(line: 19, column: 9), "a compact mapping starts at its first key")
        let characteristic = try XCTUnwrap(service["characteristics"]?.sequence?.items.first?.mapping)
        XCTAssertEqual(characteristic.keys, ["uuid", "properties", "value", "on-write"])
        XCTAssertEqual(characteristic.entry(for: "properties")?.key.mark, Mark(line: 22, column: 13))

        let central = try XCTUnwrap(root["central"]?.sequence)
        XCTAssertEqual(central.mark, Mark(line: 36, column: 3))
        let disconnect = try XCTUnwrap(central.items.last?.scalar)
        XCTAssertEqual(disconnect.text, "disconnect")
        XCTAssertEqual(disconnect.mark, Mark(line: 45, column: 5))
    }

    /// The inline forms in the format's tables and prose, one per line, each as its own document.
    func testInlineFormsFromTheTables() {
        let cases: [(String, Tree)] = [
            ("[u8:0, u8:72]", ["u8:0", "u8:72"]),
            ("{ random-u8: [59, 61] }", ["random-u8": ["59", "61"]]),
            ("{ counter-u8: 0 }", ["counter-u8": "0"]),
            ("{ sequence: [text:a, text:b] }", ["sequence": ["text:a", "text:b"]]),
            ("scan: { services: [..], names: [..], for: 1s, duplicates: false }",
             ["scan": ["services": [".."], "names": [".."], "for": "1s", "duplicates": "false"]]),
            ("connect: ID", ["connect": "ID"]),
            ("{ peripheral: ID, within: 2s }", ["peripheral": "ID", "within": "2s"]),
            ("discover: all", ["discover": "all"]),
            ("{ services: [..] }", ["services": [".."]]),
            ("mtu: 247", ["mtu": "247"]),
            ("read: UUID", ["read": "UUID"]),
            ("write: { characteristic: UUID, value: V, type: T }",
             ["write": ["characteristic": "UUID", "value": "V", "type": "T"]]),
            ("subscribe: UUID", ["subscribe": "UUID"]),
            ("unsubscribe: UUID", ["unsubscribe": "UUID"]),
            ("wait: 2s", ["wait": "2s"]),
            ("disconnect", "disconnect"),
            ("peripheral: { ID: [actions] }", ["peripheral": ["ID": ["actions"]]]),
            ("discovered: ID", ["discovered": "ID"]),
            ("services: [..]", ["services": [".."]]),
            ("characteristic: { uuid: U, properties: [..] }", ["characteristic": ["uuid": "U", "properties": [".."]]]),
            ("write-sent-as: command|request", ["write-sent-as": "command|request"]),
            ("error: NAME|0xNN", ["error": "NAME|0xNN"]),
            ("peripheral-received: { characteristic: U, value: V, via: command|request }",
             ["peripheral-received": ["characteristic": "U", "value": "V", "via": "command|request"]]),
            ("in-order: [..]", ["in-order": [".."]]),
            ("no-notification: { characteristic: U, for: 1s }", ["no-notification": ["characteristic": "U", "for": "1s"]]),
            ("disconnected: { reason: NAME|0xNN, within: T }", ["disconnected": ["reason": "NAME|0xNN", "within": "T"]]),
            ("notify-every: { characteristic: U, interval: 1s, value: V, count: N }",
             ["notify-every": ["characteristic": "U", "interval": "1s", "value": "V", "count": "N"]]),
            ("set-value: { characteristic: U, value: V }", ["set-value": ["characteristic": "U", "value": "V"]]),
            ("respond-error: NAME|0xNN", ["respond-error": "NAME|0xNN"]),
            ("delay: 100ms", ["delay": "100ms"]),
            ("read: 180F/2A19", ["read": "180F/2A19"]),
            ("services: [6E400001-B5A3-F393-E0A9-E50E24DCCA9E, 180D]", ["services": ["6E400001-B5A3-F393-E0A9-E50E24DCCA9E", "180D"]]),
            ("durations: [250ms, 1s, 1.5s, 2m]", ["durations": ["250ms", "1s", "1.5s", "2m"]]),
            ("value: hex:01 02 ff", ["value": "hex:01 02 ff"]),
            ("manufacturer-data: hex:4c000215", ["manufacturer-data": "hex:4c000215"]),
            ("error: 0x03", ["error": "0x03"]),
        ]
        for (yaml, expected) in cases {
            assertTree(yaml, expected)
        }
    }

    /// A fuller file in the same format, using every step and action form the format names.
    static let everyStepExample = """
    # Curtain and heart-rate peripherals, every step form.
    ---
    scenario: "Curtain: write without response, heart rate notifies"
    tags: [curtain, heart-rate]
    timeout: 30s
    seed: 7
    requires: [sim, socket]

    peripherals:
      curtain:
        address: C0:11:22:33:44:66/random
        advertise: { name: Smart_Curtain, services: [FFF0], interval: 250ms }
        on-connect:
          - delay: 100ms
        gatt:
        - service: FFF0
          characteristics:
          - uuid: FFF1
            properties: [write-without-response]
            on-write:
            - set-value: { characteristic: FFF2, value: written }
            - notify: FFF2
          - { uuid: FFF2, properties: [read, notify], value: [u8:0, u8:72] }
      heart:
        advertise:
          name: 'Heart Rate'
          services: [180D]
        gatt:
          - service: 180D
            characteristics:
              - uuid: 2A37
                properties: [notify]
                on-subscribe:
                  - notify-every: { characteristic: 2A37, interval: 1s, value: { random-u8: [59, 61] }, count: 3 }
                  - stop-advertising
          - service: 180F
            characteristics:
              - { uuid: 2A19, properties: [read], value: { counter-u8: 0 } }

    central:
      - scan: { names: [Smart_Curtain, Heart Rate], for: 1s, duplicates: false }
      - connect: { peripheral: curtain, within: 2s }
      - mtu: 247
      - discover: { services: [FFF0] }
      - write: { characteristic: FFF1, value: "text:IOS_TEST\\n", type: command }
      - expect: { peripheral-received: { characteristic: FFF1, value: "text:IOS_TEST\\n", via: command } }
      - read: FFF2
      - expect: { value: "text:IOS_TEST\\n" }
      - disconnect
      - connect: heart
      - subscribe: 2A37
      - expect: { notification: 2A37, count: 3, within: 5s }
      - expect: { no-notification: { characteristic: 2A37, for: 2s } }
      - unsubscribe: 2A37
      - read: 180F/2A19
      - expect: { error: 0x03 }           # not an error the lab would raise; parsing only
      - wait: 2s
      - peripheral: { heart: [disconnect] }
      - expect: { disconnected: { reason: remote-user-terminated, within: 1s } }
    ...
    """

    func testEveryStepExampleParsesToTheExpectedTree() {
        let expected: Tree = [
            "scenario": "Curtain: write without response, heart rate notifies",
            "tags": ["curtain", "heart-rate"],
            "timeout": "30s",
            "seed": "7",
            "requires": ["sim", "socket"],
            "peripherals": [
                "curtain": [
                    "address": "C0:11:22:33:44:66/random",
                    "advertise": ["name": "Smart_Curtain", "services": ["FFF0"], "interval": "250ms"],
                    "on-connect": [["delay": "100ms"]],
                    "gatt": [
                        [
                            "service": "FFF0",
                            "characteristics": [
                                [
                                    "uuid": "FFF1",
                                    "properties": ["write-without-response"],
                                    "on-write": [
                                        ["set-value": ["characteristic": "FFF2", "value": "written"]],
                                        ["notify": "FFF2"],
                                    ],
                                ],
                                ["uuid": "FFF2", "properties": ["read", "notify"], "value": ["u8:0", "u8:72"]],
                            ],
                        ],
                    ],
                ],
                "heart": [
                    "advertise": ["name": "Heart Rate", "services": ["180D"]],
                    "gatt": [
                        [
                            "service": "180D",
                            "characteristics": [
                                [
                                    "uuid": "2A37",
                                    "properties": ["notify"],
                                    "on-subscribe": [
                                        ["notify-every": [
                                            "characteristic": "2A37", "interval": "1s",
                                            "value": ["random-u8": ["59", "61"]], "count": "3",
                                        ]],
                                        "stop-advertising",
                                    ],
                                ],
                            ],
                        ],
                        [
                            "service": "180F",
                            "characteristics": [
                                ["uuid": "2A19", "properties": ["read"], "value": ["counter-u8": "0"]],
                            ],
                        ],
                    ],
                ],
            ],
            "central": [
                ["scan": ["names": ["Smart_Curtain", "Heart Rate"], "for": "1s", "duplicates": "false"]],
                ["connect": ["peripheral": "curtain", "within": "2s"]],
                ["mtu": "247"],
                ["discover": ["services": ["FFF0"]]],
                ["write": ["characteristic": "FFF1", "value": "text:IOS_TEST\n", "type": "command"]],
                ["expect": ["peripheral-received": ["characteristic": "FFF1", "value": "text:IOS_TEST\n", "via": "command"]]],
                ["read": "FFF2"],
                ["expect": ["value": "text:IOS_TEST\n"]],
                "disconnect",
                ["connect": "heart"],
                ["subscribe": "2A37"],
                ["expect": ["notification": "2A37", "count": "3", "within": "5s"]],
                ["expect": ["no-notification": ["characteristic": "2A37", "for": "2s"]]],
                ["unsubscribe": "2A37"],
                ["read": "180F/2A19"],
                ["expect": ["error": "0x03"]],
                ["wait": "2s"],
                ["peripheral": ["heart": ["disconnect"]]],
                ["expect": ["disconnected": ["reason": "remote-user-terminated", "within": "1s"]]],
            ],
        ]
        assertTree(Self.everyStepExample, expected)
    }
}
