import BLELab
import BLERuntime
import BLEWire
import GAP
import GATT
import HCI
import HostLink
import SMP
import Transport
import WireTestSupport
import XCTest
import Foundation

/// Pairing, encryption and bonds between two BLELab hosts on the sim: SMP over L2CAP, the keys on
/// HCI (LE Enable Encryption, LE Long Term Key Request), and the link layer's procedure.
final class SecurityTests: XCTestCase {
    private func connected(central centralSettings: SecuritySettings? = SecuritySettings(),
                           peripheral peripheralSettings: SecuritySettings? = SecuritySettings(),
                           seed: UInt64 = 7) throws -> (Lab, LabDevice, LabDevice, Connection) {
        let lab = Lab(seed: seed)
        var pc = HostConfiguration(deviceName: "P")
        pc.security = peripheralSettings
        var cc = HostConfiguration()
        cc.security = centralSettings
        let peripheral = try lab.addDevice("peripheral", configuration: pc)
        let central = try lab.addDevice("central", configuration: cc)
        try lab.powerOn()
        try lab.wait { done in peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P")), completion: done) }.get()
        let connection = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(1)) { !peripheral.host.connections.isEmpty })
        return (lab, peripheral, central, connection)
    }

    private func peripheralSide(_ peripheral: LabDevice) throws -> Connection { try XCTUnwrap(peripheral.host.connections.values.first) }

    private func commands(_ device: LabDevice) -> [HCICommand] {
        device.log.packets.compactMap { if case let .command(c)? = try? HCIPacket(h4: $0.frame) { return c } else { return nil } }
    }

    private func events(_ device: LabDevice) -> [HCIEvent] {
        device.log.packets.compactMap { if case let .event(e)? = try? HCIPacket(h4: $0.frame) { return e } else { return nil } }
    }

    func testSecureConnectionsJustWorksEncryptsTheLinkAndBondsBothSides() throws {
        let (lab, peripheral, central, connection) = try connected()
        let result = try lab.wait(within: .seconds(5), "pairing") { done in connection.pair(completion: done) }
        guard case let .success(outcome) = result else { return XCTFail("pairing failed: \(result)") }
        XCTAssertEqual(outcome.method, .justWorks)
        XCTAssertTrue(outcome.secureConnections)
        XCTAssertEqual(connection.security.level, 2)
        XCTAssertEqual(try peripheralSide(peripheral).security, connection.security)
        XCTAssertEqual(central.host.bonds.bonds.count, 1)
        XCTAssertEqual(peripheral.host.bonds.bonds.first?.longTermKey, central.host.bonds.bonds.first?.longTermKey)
        // On HCI: the central's LE Enable Encryption with EDIV 0 and Rand 0, the peripheral's host
        // answering its controller's request with the same key, Encryption Change on both.
        guard case let .leEnableEncryption(_, rand, ediv, key)? = commands(central).first(where: {
            if case .leEnableEncryption = $0 { return true } else { return false }
        }) else { return XCTFail("no LE Enable Encryption") }
        XCTAssertEqual(rand, [UInt8](repeating: 0, count: 8))
        XCTAssertEqual(ediv, 0)
        XCTAssertTrue(commands(peripheral).contains(.leLongTermKeyRequestReply(handle: try peripheralSide(peripheral).handle, longTermKey: key)))
        XCTAssertTrue(events(central).contains(.encryptionChange(EncryptionChange(handle: connection.handle, encryptionEnabled: 1))))
    }

    func testAReconnectionEncryptsWithTheBondAndAForgottenBondIsKeyMissing() throws {
        let (lab, peripheral, central, connection) = try connected(central: .make(sc: false), peripheral: .make(sc: false))
        _ = try lab.wait(within: .seconds(5), "pairing") { done in connection.pair(completion: done) }.get()
        let bond = try XCTUnwrap(central.host.bonds.bond(for: peripheral.address))
        XCTAssertNotEqual(bond.ediv == 0 && bond.rand.allSatisfy { $0 == 0 }, true, "legacy keys carry an EDIV and Rand")
        try lab.wait { done in connection.disconnect(completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(2)) { peripheral.host.connections.isEmpty })

        func reconnect() throws -> Connection {
            try lab.wait { done in peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P")), completion: done) }.get()
            return try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        }
        let again = try reconnect()
        let encrypted = try lab.wait(within: .seconds(5), "encryption") { done in again.encrypt(completion: done) }.get()
        XCTAssertTrue(encrypted.encrypted)
        XCTAssertFalse(encrypted.secureConnections)
        XCTAssertTrue(commands(central).contains { if case let .leEnableEncryption(_, _, e, _) = $0 { return e == bond.ediv } else { return false } })

        // A factory reset of the peripheral: its controller's request gets a negative reply.
        try lab.wait { done in again.disconnect(completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(2)) { peripheral.host.connections.isEmpty })
        peripheral.host.bonds.forgetAll()
        let third = try reconnect()
        let refused = try lab.wait(within: .seconds(5), "encryption") { done in third.encrypt(completion: done) }
        guard case .failure(.status(.pinOrKeyMissing)) = refused else { return XCTFail("expected PIN or Key Missing, got \(refused)") }
        XCTAssertFalse(third.security.encrypted)
    }

    func testPasskeyEntryGivesAnAuthenticatedLevel4Link() throws {
        let (lab, peripheral, _, connection) = try connected(
            central: .make(io: .keyboardOnly, mitm: true, passkey: 123_456),
            peripheral: .make(io: .displayOnly, mitm: true, passkey: 123_456))
        let outcome = try lab.wait(within: .seconds(5), "pairing") { done in connection.pair(completion: done) }.get()
        XCTAssertEqual(outcome.method, .passkeyEntry)
        XCTAssertEqual(connection.security.level, 4)
        XCTAssertEqual(try peripheralSide(peripheral).security.level, 4)
    }

    func testAWrongPasskeyFailsAndLeavesTheLinkUnencrypted() throws {
        let (lab, peripheral, _, connection) = try connected(
            central: .make(io: .keyboardOnly, mitm: true, passkey: 111_111),
            peripheral: .make(io: .displayOnly, mitm: true, passkey: 123_456))
        var peripheralResult: Result<PairingResult, PairingFailure>?
        peripheral.host.onPairing = { _, result in peripheralResult = result }
        let result = try lab.wait(within: .seconds(5), "pairing") { done in connection.pair(completion: done) }
        guard case .failure(.received(.confirmValueFailed)) = result else { return XCTFail("got \(result)") }
        guard case .failure(.sent(.confirmValueFailed))? = peripheralResult else { return XCTFail("peripheral: \(String(describing: peripheralResult))") }
        XCTAssertFalse(connection.security.encrypted)
        XCTAssertTrue(connection.isConnected)
    }

    func testAPeripheralsSecurityRequestMakesTheCentralPair() throws {
        let (lab, peripheral, central, connection) = try connected()
        var peripheralResult: Result<PairingResult, PairingFailure>?
        var centralResult: Result<PairingResult, PairingFailure>?
        central.host.onPairing = { _, result in centralResult = result }
        try peripheralSide(peripheral).pair { peripheralResult = $0 }
        XCTAssertTrue(lab.run(within: .seconds(5)) { peripheralResult != nil && centralResult != nil })
        guard case .success? = peripheralResult, case .success? = centralResult else { return XCTFail("\(String(describing: peripheralResult))") }
        XCTAssertTrue(connection.security.encrypted)
        XCTAssertEqual(commands(central).filter { if case .leEnableEncryption = $0 { return true } else { return false } }.count, 1)
        XCTAssertEqual(central.host.bonds.bonds.count, 1)
    }

    func testAHostWithoutSecurityStillRefusesPairing() throws {
        let (lab, _, _, connection) = try connected(peripheral: nil)
        let result = try lab.wait(within: .seconds(5), "pairing") { done in connection.pair(completion: done) }
        guard case .failure(.received(.pairingNotSupported)) = result else { return XCTFail("got \(result)") }
    }

    func testTheSameSeedPairsWithTheSameBytes() throws {
        func keys(seed: UInt64) throws -> [UInt8] {
            let (lab, _, central, connection) = try connected(seed: seed)
            _ = try lab.wait(within: .seconds(5), "pairing") { done in connection.pair(completion: done) }.get()
            return try XCTUnwrap(central.host.bonds.bonds.first?.longTermKey)
        }
        XCTAssertEqual(try keys(seed: 11), try keys(seed: 11))
        XCTAssertNotEqual(try keys(seed: 11), try keys(seed: 12))
    }
}

extension SecuritySettings {
    static func make(io: IOCapability = .noInputNoOutput, mitm: Bool = false, sc: Bool = true, passkey: UInt32? = nil) -> SecuritySettings {
        var settings = SecuritySettings()
        settings.io = io
        settings.mitm = mitm
        settings.secureConnections = sc
        settings.passkey = passkey
        return settings
    }
}

/// The GATT server's permissions on a real link: what a phone meets before and after pairing.
final class SecuredAttributeTests: XCTestCase {
    func testAnEncryptedCharacteristicAsksToPairThenToEncryptThenReads() throws {
        let lab = Lab(seed: 5)
        var pc = HostConfiguration(deviceName: "Lock")
        pc.security = SecuritySettings()
        var cc = HostConfiguration()
        cc.security = SecuritySettings()
        let lock = try lab.addDevice("lock", configuration: pc)
        let phone = try lab.addDevice("phone", configuration: cc)
        var secret = GATTCharacteristic(uuid: 0xFFF1, properties: [.read], value: Array("open".utf8))
        secret.permissions = AttributePermissions(read: .encrypted)
        let handles = try lock.host.gattServer.addService(GATTService(uuid: 0xFFF0, characteristics: [secret]))
        let valueHandle = handles.characteristics[0].valueHandle
        try lab.powerOn()

        func connect() throws -> Connection {
            try lab.wait { done in lock.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "Lock")), completion: done) }.get()
            return try lab.wait { done in phone.host.connect(to: lock.address, completion: done) }.get()
        }
        let first = try connect()
        let refused = try lab.wait { done in first.client.read(handle: valueHandle, completion: done) }
        XCTAssertEqual(refused.failureValue, .att(.insufficientAuthentication, handle: valueHandle))
        _ = try lab.wait(within: .seconds(5), "pairing") { done in first.pair(completion: done) }.get()
        XCTAssertEqual(try lab.wait { done in first.client.read(handle: valueHandle, completion: done) }.get(), Array("open".utf8))
        try lab.wait { done in first.disconnect(completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(2)) { lock.host.connections.isEmpty })

        // Bonded, not yet encrypted: Insufficient Encryption, the phone's cue to encrypt.
        let second = try connect()
        let again = try lab.wait { done in second.client.read(handle: valueHandle, completion: done) }
        XCTAssertEqual(again.failureValue, .att(.insufficientEncryption, handle: valueHandle))
        _ = try lab.wait(within: .seconds(5), "encryption") { done in second.encrypt(completion: done) }.get()
        XCTAssertEqual(try lab.wait { done in second.client.read(handle: valueHandle, completion: done) }.get(), Array("open".utf8))
    }
}

/// The repeated attempts rule (Vol 3 Part H 2.3.6) on a peripheral.
final class RepeatedAttemptsTests: XCTestCase {
    func testAFailedPasskeyMakesTheNextAttemptWaitAndTheWaitDoubles() throws {
        let lab = Lab(seed: 3)
        var pc = HostConfiguration(deviceName: "P")
        pc.security = .make(io: .displayOnly, mitm: true, passkey: 123_456)
        let peripheral = try lab.addDevice("peripheral", configuration: pc)
        var cc = HostConfiguration()
        cc.security = .make(io: .keyboardOnly, mitm: true, passkey: 1)   // the user types a wrong passkey
        let central = try lab.addDevice("central", configuration: cc)
        try lab.powerOn()
        try lab.wait { done in peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P")), completion: done) }.get()
        let connection = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        XCTAssertEqual(peripheral.host.repeatedAttemptsInterval, .seconds(2))

        func attempt(_ settings: SecuritySettings) throws -> Result<PairingResult, PairingFailure> {
            try lab.wait(within: .seconds(10), "pairing") { done in connection.pair(settings, completion: done) }
        }
        let wrong = SecuritySettings.make(io: .keyboardOnly, mitm: true, passkey: 1)
        let right = SecuritySettings.make(io: .keyboardOnly, mitm: true, passkey: 123_456)
        guard case .failure(.received(.confirmValueFailed)) = try attempt(wrong) else { return XCTFail("the first attempt") }
        // At once: refused without a pairing, even with the right passkey.
        guard case .failure(.received(.repeatedAttempts)) = try attempt(right) else { return XCTFail("the second attempt") }
        lab.run(for: .milliseconds(2_100))
        guard case .failure(.received(.confirmValueFailed)) = try attempt(wrong) else { return XCTFail("after 2 s") }
        // The wait doubled: 2.1 s is no longer enough, 4 s is.
        lab.run(for: .milliseconds(2_100))
        guard case .failure(.received(.repeatedAttempts)) = try attempt(right) else { return XCTFail("after 2 s more") }
        lab.run(for: .milliseconds(2_000))
        guard case .success = try attempt(right) else { return XCTFail("after 4 s") }
        XCTAssertTrue(connection.security.authenticated)
    }
}

/// A pairing's capture as Wireshark shows it: SMP on CID 0x0006 decoded by tshark (btsmp), the
/// same commands in the same order as our own reading of the file.
final class PairingCaptureTests: XCTestCase {
    func testTsharkDecodesTheSMPOfAPairing() throws {
        let lab = Lab(seed: 13)
        var pc = HostConfiguration(deviceName: "P")
        pc.security = .make(io: .displayOnly, mitm: true, passkey: 246_810)
        var cc = HostConfiguration()
        cc.security = .make(io: .keyboardOnly, mitm: true, passkey: 246_810)
        let peripheral = try lab.addDevice("peripheral", configuration: pc)
        let central = try lab.addDevice("central", configuration: cc)
        try lab.powerOn()
        try lab.wait { done in peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P")), completion: done) }.get()
        let connection = try lab.wait { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        _ = try lab.wait(within: .seconds(5), "pairing") { done in connection.pair(completion: done) }.get()

        let bytes = BTSnoopWriter.encode(central.log.packets)
        // Our reading: the SMP commands in the capture's ACL packets (one PDU per packet here:
        // 27-octet buffers carry the 69-octet Public Key in three fragments).
        let file = try BTSnoopReader.decode(bytes)
        var codes: [UInt8] = []
        var pending: [UInt8] = []
        for packet in file.loggedPackets() {
            guard case let .acl(acl)? = try? HCIPacket(h4: packet.frame) else { continue }
            pending = acl.boundary == .continuing ? pending + acl.data : acl.data
            guard pending.count >= 4 else { continue }
            let length = Int(pending[0]) | Int(pending[1]) << 8, cid = UInt16(pending[2]) | UInt16(pending[3]) << 8
            if pending.count == 4 + length, cid == 0x0006 { codes.append(pending[4]) }
        }
        // Request, Response, both public keys, 20 rounds of confirm and random, both DHKey checks.
        XCTAssertEqual(Array(codes.prefix(4)), [0x01, 0x02, 0x0C, 0x0C])
        XCTAssertEqual(codes.filter { $0 == 0x03 }.count, 40)
        XCTAssertEqual(codes.suffix(2), [0x0D, 0x0D])

        guard let tshark = TestTools.executableOnPath("tshark") else {
            print("PairingCaptureTests: tshark is not on PATH; the capture was checked with BTSnoopReader only")
            return
        }
        let path = NSTemporaryDirectory() + "blelab-pairing-\(getpid()).btsnoop"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try TestTools.runTool(tshark, ["-r", path, "-Y", "btsmp", "-T", "fields", "-e", "btsmp.opcode"])
        XCTAssertEqual(run.status, 0, run.output)
        let shown = run.output.split(separator: "\n").map { UInt8($0.dropFirst(2), radix: 16) ?? 0xFF }
        XCTAssertEqual(shown, codes, "tshark's SMP opcodes, in order, are ours")
    }
}
