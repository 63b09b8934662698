import ATT
import BLELab
import BLERuntime
import BLEWire
import Foundation
import GAP
import GATT
import HCI
import LabTiers
import SMP
import XCTest

/// Pairing and encryption between BLELab's Security Manager and Bumble's (bumble.smp), each on
/// its own controller: RootCanal's link layer, or Bumble's lab controllers. The two stacks derive
/// their keys independently; a pairing that completes and a link that then reads an attribute
/// needing encryption prove they derived the same ones (the controllers encrypt with each side's
/// own key, and RootCanal's link layer checks that both keys are equal).
final class SecurityInteropTests: TierTestCase {
    static let secret = BluetoothUUID(string: "B1E1AB04-0000-4C0A-B1E1-AB0000000000")!

    /// Our central and Bumble's peripheral (tools/bumble_peripheral.py --secret), paired with
    /// `ours` against Bumble's `bumbleArguments`.
    private func ourCentral(transport: String, ours: SecuritySettings, bumble bumbleArguments: [String],
                            check: (Result<PairingResult, PairingFailure>, Connection, GATTRemoteCharacteristic, Lab, BumblePeer) throws -> Void) throws {
        let backend = try Tiers.backend(transport)
        try backend.prepare(deviceCount: 2)
        defer { backend.shutDown() }
        let lab = try backend.makeLab(seed: 1)
        defer { lab.shutDown() }
        var configuration = HostConfiguration()
        configuration.security = ours
        let central = try lab.addDevice("central", configuration: configuration)
        let peerEndpoint = backend.rootCanal?.endpoint ?? backend.bumble!.endpoints[1]
        let peripheral = try BumblePeer("bumble_peripheral.py", [peerEndpoint.argument, "--secret", "text:open", "--once"] + bumbleArguments,
                                        name: "bumble-secure-peripheral")
        defer { print(peripheral.stop()) }
        try peripheral.waitFor("advertising")
        try lab.powerOn()
        var found: ScanReport?
        try lab.wait { done in
            central.host.startScanning(ScanConfiguration(services: [InteropTests.service]), onReport: { found = found ?? $0 }, completion: done)
        }.get()
        lab.runUntil("Bumble's advertising") { found != nil }
        try lab.wait { done in central.host.stopScanning(completion: done) }.get()
        let connection = try lab.wait(within: .seconds(10), "the connection") { done in
            central.host.connect(to: try! XCTUnwrap(found).address, completion: done)
        }.get()
        let services = try lab.wait(within: .seconds(10), "discovery") { done in connection.client.discoverAll(completion: done) }.get()
        let secret = try XCTUnwrap(services.first { $0.uuid == InteropTests.service }?.characteristic(Self.secret), "\(services)")
        // Bumble's server refuses the secret on an unencrypted link.
        let refused = try lab.wait(within: .seconds(10), "the refused read") { done in connection.client.read(handle: secret.valueHandle, completion: done) }
        XCTAssertEqual(refused.failureCode, .insufficientEncryption, peripheral.log)
        let result = try lab.wait(within: .seconds(20), "the pairing") { done in connection.pair(completion: done) }
        try check(result, connection, secret, lab, peripheral)
    }

    private func readSecret(_ connection: Connection, _ secret: GATTRemoteCharacteristic, _ lab: Lab) throws -> [UInt8] {
        try lab.wait(within: .seconds(10), "the read") { done in connection.client.read(handle: secret.valueHandle, completion: done) }.get()
    }

    func testSecureConnectionsJustWorksWithBumbleOnRootCanal() throws {
        try ourCentral(transport: "rootcanal", ours: SecuritySettings(), bumble: ["--pairing", "no-input-no-output"]) { result, connection, secret, lab, bumble in
            guard case let .success(outcome) = result else { return XCTFail("\(result)\n\(bumble.log)") }
            XCTAssertEqual(outcome.method, .justWorks)
            XCTAssertTrue(outcome.secureConnections)
            XCTAssertEqual(connection.security.level, 2)
            XCTAssertEqual(try readSecret(connection, secret, lab), Array("open".utf8))
            _ = try bumble.waitFor("pairing")
            XCTAssertEqual(bumble.lines.events("encryption").last?["enabled"] as? Bool, true, bumble.log)
        }
    }

    func testSecureConnectionsJustWorksWithBumbleControllers() throws {
        try ourCentral(transport: "bumble", ours: SecuritySettings(), bumble: ["--pairing", "no-input-no-output"]) { result, connection, secret, lab, bumble in
            guard case .success = result else { return XCTFail("\(result)\n\(bumble.log)") }
            XCTAssertEqual(try readSecret(connection, secret, lab), Array("open".utf8))
        }
    }

    func testLegacyPasskeyEntryWithBumbleDisplaying() throws {
        var ours = SecuritySettings()
        ours.io = .keyboardOnly
        ours.mitm = true
        ours.secureConnections = false
        ours.passkey = 123_456
        try ourCentral(transport: "rootcanal", ours: ours,
                       bumble: ["--pairing", "display-only", "--legacy", "--mitm", "--passkey", "123456"]) { result, connection, secret, lab, bumble in
            guard case let .success(outcome) = result else { return XCTFail("\(result)\n\(bumble.log)") }
            XCTAssertEqual(outcome.method, .passkeyEntry)
            XCTAssertFalse(outcome.secureConnections)
            XCTAssertTrue(connection.security.authenticated)
            XCTAssertEqual(try readSecret(connection, secret, lab), Array("open".utf8))
            XCTAssertEqual(bumble.lines.first("passkey-shown")?["passkey"] as? Int, 123_456, bumble.log)
        }
    }

    func testSecureConnectionsPasskeyTypedWrongIsConfirmValueFailed() throws {
        var ours = SecuritySettings()
        ours.io = .keyboardOnly
        ours.mitm = true
        ours.passkey = 654_321
        try ourCentral(transport: "rootcanal", ours: ours,
                       bumble: ["--pairing", "display-only", "--mitm", "--passkey", "123456"]) { result, connection, _, _, bumble in
            guard case let .failure(failure) = result else { return XCTFail("paired with the wrong passkey: \(result)") }
            XCTAssertEqual(failure.reason, .confirmValueFailed, "\(failure)\n\(bumble.log)")
            XCTAssertFalse(connection.security.encrypted)
        }
    }

    func testNumericComparisonWithBumble() throws {
        var ours = SecuritySettings()
        ours.io = .displayYesNo
        ours.mitm = true
        try ourCentral(transport: "rootcanal", ours: ours, bumble: ["--pairing", "display-yes-no", "--mitm"]) { result, connection, secret, lab, bumble in
            guard case let .success(outcome) = result else { return XCTFail("\(result)\n\(bumble.log)") }
            XCTAssertEqual(outcome.method, .numericComparison)
            XCTAssertEqual(connection.security.level, 4)
            let number = try XCTUnwrap(bumble.lines.first("compare")?["number"] as? Int, bumble.log)
            XCTAssertEqual(UInt32(number), connection.pairing?.lastNumericComparison)
            XCTAssertEqual(try readSecret(connection, secret, lab), Array("open".utf8))
        }
    }

    /// Bumble's central (tools/bumble_central.py --pair-first) pairs with our peripheral, then
    /// reads its characteristic that needs encryption.
    func testABumbleCentralPairsWithOurPeripheral() throws {
        let backend = try Tiers.backend("rootcanal")
        try backend.prepare(deviceCount: 2)
        defer { backend.shutDown() }
        let lab = try backend.makeLab(seed: 1)
        defer { lab.shutDown() }
        var configuration = HostConfiguration(deviceName: "BLELabLock")
        configuration.security = SecuritySettings()
        let ours = try lab.addDevice("lock", configuration: configuration)
        var secret = GATTCharacteristic(uuid: Self.secret, properties: [.read], value: Array("open".utf8))
        secret.permissions = AttributePermissions(read: .encrypted)
        _ = try ours.host.gattServer.addService(GATTService(uuid: InteropTests.service, characteristics: [secret]))
        var paired: Result<PairingResult, PairingFailure>?
        ours.host.onPairing = { _, result in paired = result }
        try lab.powerOn()
        try lab.wait { done in
            ours.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "BLELabLock")), completion: done)
        }.get()
        let peerEndpoint = backend.rootCanal!.endpoint
        let central = try BumblePeer("bumble_central.py", [
            peerEndpoint.argument, "--target", "BLELabLock", "--no-defaults", "--pairing", "no-input-no-output", "--pair-first",
            "--read", Self.secret.description, "--timeout", "40",
        ], name: "bumble-pairing-central")
        defer { print(central.stop()) }
        let ticker = Ticker(lab.loop)
        lab.runUntil("Bumble's central to finish", seconds: 45) { !central.process.isRunning }
        ticker.stop()
        XCTAssertEqual(central.process.exit, .exited(0), central.log)
        XCTAssertEqual(central.lines.first("paired")?["encrypted"] as? Bool, true, central.log)
        XCTAssertEqual(central.lines.first("read")?["value_text"] as? String, "open", central.log)
        guard case let .success(outcome)? = paired else { return XCTFail("our side: \(String(describing: paired))") }
        XCTAssertTrue(outcome.secureConnections)
        XCTAssertEqual(ours.host.bonds.bonds.count, 1)
    }
}
