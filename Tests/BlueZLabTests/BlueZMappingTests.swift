import ATT
import BLEWire
import DBus
import GATT
import XCTest
@testable import BlueZLab

final class BlueZMappingTests: XCTestCase {
    func testFlagsRoundTripInPropertyBitOrder() {
        let p: CharacteristicProperties = [.read, .writeWithoutResponse, .notify]
        XCTAssertEqual(BlueZMapping.flags(p), ["read", "write-without-response", "notify"])
        XCTAssertEqual(BlueZMapping.properties(["notify", "read", "write-without-response", "reliable-write"]), p)
    }

    func testUUIDsAreBlueZsLowerCase128BitForm() {
        XCTAssertEqual(BlueZMapping.uuidString(BluetoothUUID(string: "FFE1")!), "0000ffe1-0000-1000-8000-00805f9b34fb")
        XCTAssertEqual(BlueZMapping.uuid("0000ffe1-0000-1000-8000-00805f9b34fb"), BluetoothUUID(string: "FFE1"))
    }

    func testAddressesCarryTheirType() {
        XCTAssertEqual(BlueZMapping.address("C0:11:22:33:44:55", type: "random"), LEAddress(string: "C0:11:22:33:44:55/random"))
        XCTAssertEqual(BlueZMapping.address("00:AA:01:00:00:23", type: "public"), LEAddress(string: "00:AA:01:00:00:23"))
        XCTAssertNil(BlueZMapping.address("not an address", type: nil))
    }

    /// bluetoothd 5.66's create_gatt_dbus_error: the code in the text, or a name for a few.
    func testATTErrorsFromBluetoothdReplies() {
        func code(_ name: String, _ message: String) -> ATTErrorCode? {
            BlueZMapping.attError(DBusErrorReply(name: name, message: message))
        }
        XCTAssertEqual(code("org.bluez.Error.Failed", "Operation failed with ATT error: 0x80"), ATTErrorCode(rawValue: 0x80))
        XCTAssertEqual(code("org.bluez.Error.Failed", "Operation failed with ATT error: 0x0e"), ATTErrorCode(rawValue: 0x0E))
        XCTAssertEqual(code("org.bluez.Error.NotPermitted", "Write not permitted"), .writeNotPermitted)
        XCTAssertEqual(code("org.bluez.Error.NotPermitted", "Read not permitted"), .readNotPermitted)
        XCTAssertEqual(code("org.bluez.Error.NotPermitted", "Not paired"), .insufficientAuthentication)
        XCTAssertEqual(code("org.bluez.Error.InvalidArguments", "Invalid Length"), .invalidAttributeValueLength)
        XCTAssertEqual(code("org.bluez.Error.NotSupported", "Operation is not supported"), .requestNotSupported)
        XCTAssertNil(code("org.bluez.Error.Failed", "Not connected"))
        XCTAssertNil(code("org.bluez.Error.InProgress", "In Progress"))
    }
}
