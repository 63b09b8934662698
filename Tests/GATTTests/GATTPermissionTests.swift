import ATT
import BLEWire
@testable import GATT
import WireTestSupport
import XCTest

/// Attribute permissions beyond the properties (Core Vol 3 Part F 3.2.5) and the errors a server
/// answers when the link lacks them (Part C 10.3.1): octet for octet.
final class GATTPermissionTests: XCTestCase {
    /// 0x0003 encrypted read/write, 0x0005 authenticated read/write (its CCCD 0x0006 encrypted),
    /// 0x0008 authorized writes and 16-octet keys, 0x000A open.
    func makeHarness() throws -> ServerHarness {
        var encrypted = GATTCharacteristic(uuid: 0xFFF1, properties: [.read, .write], value: [1])
        encrypted.permissions = AttributePermissions(read: .encrypted, write: .encrypted)
        var authenticated = GATTCharacteristic(uuid: 0xFFF2, properties: [.read, .write, .notify], value: [2])
        authenticated.permissions = AttributePermissions(read: .authenticated, write: .authenticated)
        authenticated.configurationPermissions = AttributePermissions(write: .encrypted)
        var authorized = GATTCharacteristic(uuid: 0xFFF3, properties: [.read, .write, .writeWithoutResponse], value: [3])
        authorized.permissions = AttributePermissions(read: .encrypted, writeAuthorization: true, minimumKeySize: 16)
        let open = GATTCharacteristic(uuid: 0xFFF4, properties: [.read, .write], value: [4])
        return ServerHarness(database: try GATTDatabase(services: [
            GATTService(uuid: 0xFFF0, characteristics: [encrypted, authenticated, authorized, open]),
        ], includeStandardServices: false))
    }

    func security(_ level: Int, keySize: UInt8 = 16) -> LinkSecurity {
        var s = LinkSecurity()
        s.encrypted = level >= 2
        s.authenticated = level >= 3
        s.secureConnections = level == 4
        s.keySize = level >= 2 ? keySize : 0
        return s
    }

    func testAnUnencryptedLinkIsAskedToPairOrToEncrypt() throws {
        let h = try makeHarness()
        XCTAssertEqual(h.exchange("0a 03 00"), ["01 0a 03 00 05"])         // not encrypted, no bond: Insufficient Authentication
        XCTAssertEqual(h.exchange("12 03 00 09"), ["01 12 03 00 05"])
        XCTAssertEqual(h.exchange("0a 0a 00"), ["0b 04"])                  // open: read
        h.connection?.peerIsBonded = { true }
        XCTAssertEqual(h.exchange("0a 03 00"), ["01 0a 03 00 0f"])         // bonded: Insufficient Encryption
        XCTAssertEqual(h.exchange("16 03 00 00 00 09"), ["01 16 03 00 0f"]) // Prepare Write too
    }

    func testEncryptionAuthenticationKeySizeAndAuthorization() throws {
        let h = try makeHarness()
        h.connection?.security = security(2)
        XCTAssertEqual(h.exchange("0a 03 00"), ["0b 01"])
        XCTAssertEqual(h.exchange("12 03 00 07"), ["13"])
        XCTAssertEqual(h.exchange("0a 05 00"), ["01 0a 05 00 05"])         // unauthenticated key: Insufficient Authentication
        XCTAssertEqual(h.exchange("12 06 00 01 00"), ["13"])               // its CCCD asks encryption only
        h.connection?.security = security(3)
        XCTAssertEqual(h.exchange("0a 05 00"), ["0b 02"])
        h.connection?.security = security(2, keySize: 7)
        XCTAssertEqual(h.exchange("0a 08 00"), ["01 0a 08 00 0c"])         // 7-octet key, 16 needed
        h.connection?.security = security(2)
        XCTAssertEqual(h.exchange("0a 08 00"), ["0b 03"])
        XCTAssertEqual(h.exchange("12 08 00 05"), ["01 12 08 00 08"])      // nobody authorizes: Insufficient Authorization
        var asked: [GATTAuthorizationRequest] = []
        h.server.authorizes = { asked.append($0); return true }
        XCTAssertEqual(h.exchange("12 08 00 05"), ["13"])
        XCTAssertEqual(asked.map(\.handle), [0x0008])
        XCTAssertEqual(asked.map(\.isWrite), [true])
    }

    func testAProtectedCCCDRefusesASubscriptionOnAnOpenLink() throws {
        let h = try makeHarness()
        XCTAssertEqual(h.exchange("12 06 00 01 00"), ["01 12 06 00 05"])
        XCTAssertEqual(h.connection?.configuration(forValueHandle: 0x0005), [])
    }

    func testAWriteCommandThatLacksPermissionIsDroppedSilently() throws {
        let h = try makeHarness()
        h.connection?.security = security(2)
        XCTAssertEqual(h.exchange("52 08 00 09"), [])
        XCTAssertEqual(h.exchange("0a 08 00"), ["0b 03"], "the value did not change")
        h.server.authorizes = { _ in true }
        XCTAssertEqual(h.exchange("52 08 00 09"), [])
        XCTAssertEqual(h.exchange("0a 08 00"), ["0b 09"])
    }

    func testReadNotPermittedComesBeforeSecurity() throws {
        var c = GATTCharacteristic(uuid: 0xFFF9, properties: [.write], value: [1])
        c.permissions = AttributePermissions(read: .encrypted, write: .encrypted)
        let h = ServerHarness(database: try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: [c])],
                                                         includeStandardServices: false))
        XCTAssertEqual(h.exchange("0a 03 00"), ["01 0a 03 00 02"])
    }
}
