import ATT
import BLELab
import BLERuntime
import BLEWire
import DBus
import Foundation
import GATT
import ScenarioEngine
import ScenarioFormat
import XCTest
@testable import BlueZLab

/// What `--peripheral bluez` skips, and why; and the D-Bus error ↔ ATT code table of
/// bluetoothd 5.66's GATT server.
final class BlueZPeripheralSupportTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func load(_ relative: String) throws -> Scenario {
        try Scenario.load(path: Self.repository.appendingPathComponent(relative).path)
    }

    func reason(_ relative: String) throws -> String? {
        let scenario = try load(relative)
        let provider = BlueZPeripheralProvider()
        guard let spec = provider.served(in: scenario) else { return "serves nothing" }
        return provider.unsupported(spec, in: scenario)
    }

    func testEverySeedScenarioCanBeServed() throws {
        let seeds = try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("scenarios/seeds").path)
            .filter { $0.hasSuffix(".yaml") }.sorted()
        XCTAssertFalse(seeds.isEmpty)
        for seed in seeds {
            XCTAssertNil(try reason("scenarios/seeds/\(seed)"), seed)
        }
    }

    func testServesTheSelectedPeripheralOrTheFirst() throws {
        let scenario = try load("scenarios/seeds/hm10-serial.yaml")
        XCTAssertEqual(BlueZPeripheralProvider().served(in: scenario)?.id, "hm10")
        XCTAssertEqual(BlueZPeripheralProvider(select: "curtain").served(in: scenario)?.id, "curtain")
        XCTAssertNil(BlueZPeripheralProvider(select: "nope").served(in: scenario))
        XCTAssertEqual(BlueZPeripheralProvider(adapter: "/org/bluez/hci1").description, "BlueZ (bluetoothd) on hci1")
    }

    /// Each field and regression scenario: served, or skipped with the reason that applies.
    func testFieldAndRegressionScenarios() throws {
        let expected: [String: String?] = [
            "field/air-out-of-range.yaml": "needs the embedded simulator's air",
            "field/air-power-off.yaml": "Adapter1.Powered=false",
            "field/att-error-response.yaml": "(flaws:",
            "field/att-late-response.yaml": "(flaws:",
            "field/att-malformed-response.yaml": "(flaws:",
            "field/att-no-response.yaml": "(flaws:",
            "field/att-service-changed.yaml": "whole applications",
            "field/att-unknown-handle-notification.yaml": "its own characteristics' handles",
            "field/link-connection-update.yaml": "new connection parameters",
            "field/link-dropped-write-response.yaml": "needs the embedded simulator's air",
            "field/link-loss-reconnect.yaml": "needs the embedded simulator's air",
            "field/link-lossy-serial.yaml": "link: faults",
            "field/link-mtu-limit.yaml": "mtu: 23",
            "field/link-notification-burst.yaml": nil,
            "field/link-slow-peripheral.yaml": "link: faults",
            "regressions/indication-needs-confirmation.yaml": nil,
            "regressions/notify-before-subscribe.yaml": nil,
            "regressions/peripheral-disconnects-mid-flow.yaml": nil,
            "regressions/scan-filter-excludes-others.yaml": nil,
            "regressions/unsubscribe-stops-notifications.yaml": nil,
            "regressions/write-command-silently-lost.yaml": "a Write Command to FFE1, which has write but not write-without-response",
            "regressions/write-request-not-permitted.yaml": "a Write Request to FFE1, which has write-without-response but not write",
        ]
        for (file, fragment) in expected.sorted(by: { $0.key < $1.key }) {
            let got = try reason("scenarios/\(file)")
            if let fragment {
                XCTAssertTrue(got?.contains(fragment) == true, "\(file): \(got ?? "served")")
            } else {
                XCTAssertNil(got, file)
            }
        }
    }

    static func uuid(_ s: String) -> BluetoothUUID { BluetoothUUID(string: s)! }

    func spec(_ characteristics: [CharacteristicSpec]) -> PeripheralSpec {
        PeripheralSpec(id: "p", services: [ServiceSpec(uuid: Self.uuid("FFF0"), characteristics: characteristics)])
    }

    func reason(_ spec: PeripheralSpec) -> String? {
        BlueZPeripheralSupport.unsupported(spec, in: Scenario(name: "t", file: "t.yaml", peripherals: [spec], steps: []))
    }

    func testRespondErrorOnlyWithCodesBluetoothdCanSend() {
        func read(_ code: ATTErrorCode) -> String? {
            reason(spec([CharacteristicSpec(uuid: Self.uuid("FFF1"), properties: [.read], onRead: [.respondError(code)])]))
        }
        func write(_ code: ATTErrorCode, _ properties: CharacteristicProperties = [.write]) -> String? {
            reason(spec([CharacteristicSpec(uuid: Self.uuid("FFF1"), properties: properties, onWrite: [.respondError(code)])]))
        }
        for code in [0x02, 0x06, 0x07, 0x08, 0x0D, 0x0E, 0x80, 0x9F, 0xFE].map({ ATTErrorCode(UInt8($0)) }) { XCTAssertNil(read(code), code.name) }
        for code in [0x03, 0x06, 0x07, 0x08, 0x0D, 0x0E, 0x80, 0x9F, 0xFE].map({ ATTErrorCode(UInt8($0)) }) { XCTAssertNil(write(code), code.name) }
        for code in [0x01, 0x03, 0x05, 0x0F, 0x13, 0xA0, 0xFD, 0xFF].map({ ATTErrorCode(UInt8($0)) }) {
            XCTAssertTrue(read(code)?.contains("cannot reach the link") == true, code.name)
        }
        XCTAssertTrue(write(.readNotPermitted)?.contains("cannot reach the link") == true)
        XCTAssertTrue(write(.insufficientEncryption)?.contains("dbus_error_to_att_ecode") == true)
        // With write-without-response too, bluetoothd answers the Write Request itself.
        XCTAssertTrue(write(.writeNotPermitted, [.write, .writeWithoutResponse])?.contains("answers every write") == true)
        XCTAssertNil(write(.writeNotPermitted, [.writeWithoutResponse]))
        // Anywhere else respond-error answers nothing, as on the simulator.
        XCTAssertNil(reason(PeripheralSpec(id: "p", services: [], onConnect: [.respondError(.invalidHandle)])))
    }

    func testNotifyAndIndicateMustMatchWhatTheCentralCanEnable() {
        let ref = CharacteristicRef(Self.uuid("FFF1"))
        func with(_ properties: CharacteristicProperties, _ action: PeripheralAction) -> String? {
            reason(spec([CharacteristicSpec(uuid: Self.uuid("FFF1"), properties: properties, onWrite: [action])]))
        }
        XCTAssertNil(with([.notify, .write], .notify(ref, nil)))
        XCTAssertNil(with([.indicate, .write], .indicate(ref, nil)))
        XCTAssertNil(with([.notify, .indicate, .write], .notify(ref, nil)))
        XCTAssertNotNil(with([.indicate, .write], .notify(ref, nil)))
        XCTAssertNotNil(with([.indicate, .write], .notifyEvery(ref, interval: .seconds(1), value: nil, count: 2)))
        XCTAssertNotNil(with([.notify, .indicate, .write], .indicate(ref, nil)))
        XCTAssertNotNil(with([.notify, .write], .indicate(ref, nil)))
    }

    func testDelaysPastBluetoothdsReplyTimeoutAndDisconnectReasons() {
        let slow = CharacteristicSpec(uuid: Self.uuid("FFF1"), properties: [.read],
                                      onRead: [.delay(.seconds(20)), .delay(.seconds(5)), .respondError(.unlikelyError)])
        XCTAssertTrue(reason(spec([slow]))?.contains("waits 25") == true)
        var fine = slow
        fine.onRead = [.delay(.seconds(24)), .respondError(.unlikelyError)]
        XCTAssertNil(reason(spec([fine])))
        // bluetoothd does not wait for the application's answer to a write when the
        // characteristic has write-without-response.
        let both = CharacteristicSpec(uuid: Self.uuid("FFF1"), properties: [.write, .writeWithoutResponse],
                                      onWrite: [.delay(.milliseconds(10)), .notify(CharacteristicRef(Self.uuid("FFF1")), nil)])
        XCTAssertTrue(reason(spec([both]))?.contains("itself, at once") == true)
        var commandOnly = both
        commandOnly.properties = [.writeWithoutResponse]
        XCTAssertNil(reason(spec([commandOnly])))
        // A delay in a step or on-connect keeps no request waiting.
        XCTAssertNil(reason(PeripheralSpec(id: "p", onConnect: [.delay(.seconds(60)), .disconnect(nil)])))
        XCTAssertNil(reason(PeripheralSpec(id: "p", onConnect: [.disconnect(.remoteUserTerminatedConnection)])))
        XCTAssertTrue(reason(PeripheralSpec(id: "p", onConnect: [.disconnect(.remoteDeviceTerminatedPowerOff)]))?
            .contains("MGMT Disconnect, which always sends Remote User Terminated Connection (0x13)") == true)
    }

    /// bluetoothd 5.66's dbus_error_to_att_ecode, as src/gatt-database.c has it.
    func testTheDBusErrorToATTCodeTable() {
        func code(_ name: String, _ message: String, _ operation: BlueZServerErrors.Operation = .read) -> UInt8 {
            BlueZServerErrors.attCode(for: DBusErrorReply(name: name, message: message), in: operation).rawValue
        }
        XCTAssertEqual(code("org.bluez.Error.Failed", "0x85"), 0x85)
        XCTAssertEqual(code("org.bluez.Error.Failed", "159"), 0x9F)
        XCTAssertEqual(code("org.bluez.Error.Failed", "0x7f"), 0x0E, "a number outside 0x80-0x9F")
        XCTAssertEqual(code("org.bluez.Error.Failed", "0xff"), 0x0E)
        XCTAssertEqual(code("org.bluez.Error.Failed", ""), 0x0E, "strtol of nothing is 0")
        XCTAssertEqual(code("org.bluez.Error.Failed", "Operation failed"), 0x80)
        XCTAssertEqual(code("org.bluez.Error.NotSupported", ""), 0x06)
        XCTAssertEqual(code("org.bluez.Error.NotAuthorized", ""), 0x08)
        XCTAssertEqual(code("org.bluez.Error.InvalidValueLength", ""), 0x0D)
        XCTAssertEqual(code("org.bluez.Error.InvalidOffset", ""), 0x07)
        XCTAssertEqual(code("org.bluez.Error.InProgress", ""), 0xFE)
        XCTAssertEqual(code("org.bluez.Error.NotPermitted", "", .read), 0x02)
        XCTAssertEqual(code("org.bluez.Error.NotPermitted", "", .write), 0x03)
        XCTAssertEqual(code("org.freedesktop.DBus.Error.NoReply", "timeout"), 0x0E)
        XCTAssertEqual(code("org.bluez.Error.NotReady", ""), 0x0E)

        // And back: every sendable code's reply maps to that code.
        for raw in 0...255 {
            let c = ATTErrorCode(UInt8(raw))
            for operation in [BlueZServerErrors.Operation.read, .write] {
                guard let reply = BlueZServerErrors.reply(for: c, in: operation) else {
                    XCTAssertNotNil(BlueZServerErrors.unsendable(c, in: operation))
                    continue
                }
                XCTAssertEqual(BlueZServerErrors.attCode(for: reply, in: operation), c, "0x\(String(raw, radix: 16)) \(operation)")
            }
        }
        let sendable = (0...255).filter { BlueZServerErrors.reply(for: ATTErrorCode(UInt8($0)), in: .read) != nil }
        XCTAssertEqual(sendable, [0x02, 0x06, 0x07, 0x08, 0x0D, 0x0E] + Array(0x80...0x9F) + [0xFE])
    }
}
