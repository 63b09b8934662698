import CoreBluetoothLab
import Foundation
import XCTest

/// CBUUID, the option sets and the errors, without a lab.
final class ValueTypeTests: XCTestCase {
    func testCBUUIDStringForms() {
        XCTAssertEqual(CBUUID(string: "180d").uuidString, "180D")
        XCTAssertEqual(CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB"), CBUUID(string: "180D"))
        XCTAssertEqual(CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB").uuidString, "180D")
        XCTAssertEqual(CBUUID(string: "6e400001-b5a3-f393-e0a9-e50e24dcca9e").uuidString, "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        XCTAssertEqual(CBUUID(string: "12345678").uuidString, "12345678")
        XCTAssertNotEqual(CBUUID(string: "FFE0"), CBUUID(string: "FFE1"))
    }

    func testCBUUIDDescriptionNamesWhatCoreBluetoothNames() {
        XCTAssertEqual(CBUUID(string: "180D").description, "Heart Rate")
        XCTAssertEqual(CBUUID(string: "180F").description, "Battery")
        XCTAssertEqual(CBUUID(string: "180A").description, "Device Information")
        XCTAssertEqual(CBUUID(string: "2A19").description, "Battery Level")
        XCTAssertEqual(CBUUID(string: "2A29").description, "Manufacturer Name String")
        XCTAssertEqual(CBUUID(string: "2902").description, "Client Characteristic Configuration")
        XCTAssertEqual(CBUUID(string: "2A37").description, "2A37", "CoreBluetooth prints Heart Rate Measurement as hex")
        XCTAssertEqual(CBUUID(string: "FFE0").description, "FFE0")
        XCTAssertEqual("\(CBUUID(string: "180D"))", "Heart Rate")
    }

    func testCBUUIDDataAndInitializers() {
        XCTAssertEqual(CBUUID(string: "180D").data, Data([0x18, 0x0D]))
        XCTAssertEqual(CBUUID(data: Data([0x18, 0x0D])), CBUUID(string: "180D"))
        let nordic = CBUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        XCTAssertEqual(nordic.data.count, 16)
        XCTAssertEqual(CBUUID(data: nordic.data), nordic)
        XCTAssertEqual(CBUUID(nsuuid: UUID(uuidString: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!), nordic)
        XCTAssertEqual([CBUUID(string: "180D"): 1][CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")], 1, "hashable as a key")
    }

    func testOptionSetsHaveApplesRawValues() {
        XCTAssertEqual(CBCharacteristicProperties([.read, .writeWithoutResponse, .notify]).rawValue, 0x16)
        XCTAssertEqual(CBCharacteristicProperties.indicateEncryptionRequired.rawValue, 0x200)
        XCTAssertEqual(CBAttributePermissions([.readable, .writeable]).rawValue, 0x03)
        XCTAssertEqual(CBManagerState.poweredOn.rawValue, 5)
        XCTAssertEqual(CBCharacteristicWriteType.withoutResponse.rawValue, 1)
        XCTAssertEqual(CBPeripheralState.connected.rawValue, 2)
    }

    func testErrorsBridgeToNSErrorWithApplesDomainsAndCodes() {
        let att: Error = CBATTError(.writeNotPermitted)
        XCTAssertEqual((att as NSError).domain, "CBATTErrorDomain")
        XCTAssertEqual((att as NSError).code, 3)
        XCTAssertEqual(att.localizedDescription, "Writing is not permitted.")
        guard case CBATTError.writeNotPermitted = att else { return XCTFail("pattern match on the code") }
        let cb: Error = CBError(.peripheralDisconnected)
        XCTAssertEqual((cb as NSError).domain, "CBErrorDomain")
        XCTAssertEqual((cb as NSError).code, 7)
        XCTAssertEqual((cb as? CBError)?.code, CBError.peripheralDisconnected)
        do {
            throw CBError(.connectionTimeout)
        } catch CBError.connectionTimeout {
        } catch {
            XCTFail("catch by code")
        }
    }

    /// Like the `NS_ENUM` Apple's SDK imports, any raw value makes a `CBATTError.Code`.
    func testAnyRawValueMakesACBATTErrorCode() throws {
        XCTAssertEqual(CBATTError.Code(rawValue: 3), .writeNotPermitted)
        let application = try XCTUnwrap(CBATTError.Code(rawValue: 0x80))
        XCTAssertEqual(application.rawValue, 0x80)
        XCTAssertNotNil(CBATTError.Code(rawValue: 0x9F))
        XCTAssertNotNil(CBATTError.Code(rawValue: 0xFE))
        let error = CBATTError(application)
        XCTAssertEqual(error.code, application)
        XCTAssertEqual(error.errorCode, 0x80)
        XCTAssertEqual((error as NSError).code, 0x80)
        XCTAssertEqual(error.localizedDescription, "Unknown ATT error.")
        XCTAssertNotEqual(error, CBATTError(.unlikelyError))
        guard case application = error as Error else { return XCTFail("pattern match on an unnamed code") }
        XCTAssertEqual("\(CBATTError.Code.insufficientEncryption)", "insufficientEncryption")
        XCTAssertEqual("\(application)", "CBATTError.Code(rawValue: 128)")
    }

    /// Printed, the errors read as Apple's bridged errors print: the NSError form with iOS's text.
    func testErrorsPrintLikeApplesNotAsStructDumps() {
        XCTAssertEqual("\(CBATTError(.writeNotPermitted))",
                       "Error Domain=CBATTErrorDomain Code=3 \"Writing is not permitted.\" UserInfo={NSLocalizedDescription=Writing is not permitted.}")
        XCTAssertEqual(String(describing: CBError(.connectionTimeout) as Error),
                       "Error Domain=CBErrorDomain Code=6 \"The connection has timed out unexpectedly.\" UserInfo={NSLocalizedDescription=The connection has timed out unexpectedly.}")
        XCTAssertEqual(String(reflecting: CBATTError(CBATTError.Code(rawValue: 0x80)!)),
                       "Error Domain=CBATTErrorDomain Code=128 \"Unknown ATT error.\" UserInfo={NSLocalizedDescription=Unknown ATT error.}")
        XCTAssertEqual("\(CBError(.unknown, userInfo: [NSLocalizedDescriptionKey: "Custom."]))",
                       "Error Domain=CBErrorDomain Code=0 \"Custom.\" UserInfo={NSLocalizedDescription=Custom.}")
    }
}
