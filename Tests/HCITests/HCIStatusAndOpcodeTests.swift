@testable import HCI
import XCTest

/// Error codes (Core 5.4, Vol 1, Part F, 1.3) and command opcodes (Vol 4, Part E, 5.4.1).
final class HCIStatusAndOpcodeTests: XCTestCase {

    // MARK: HCIStatus

    func testNamesAndCodesMapBothWays() {
        XCTAssertEqual(HCIStatus(name: "remote-user-terminated"), HCIStatus(rawValue: 0x13))
        XCTAssertEqual(HCIStatus(rawValue: 0x13).name, "remote-user-terminated")
        XCTAssertEqual(HCIStatus.remoteUserTerminatedConnection.rawValue, 0x13)
        XCTAssertEqual(HCIStatus(name: "connection-timeout"), .connectionTimeout)
        XCTAssertEqual(HCIStatus.connectionTimeout.rawValue, 0x08)
        XCTAssertEqual(HCIStatus.connectionTimeout.name, "connection-timeout")
        XCTAssertEqual(HCIStatus(rawValue: 0x3E).name, "connection-failed-to-be-established")
    }

    func testAliasesAndCaseAreAccepted() {
        XCTAssertEqual(HCIStatus(name: "remote-user-terminated-connection"), .remoteUserTerminatedConnection)
        XCTAssertEqual(HCIStatus(name: "supervision-timeout"), .connectionTimeout)
        XCTAssertEqual(HCIStatus(name: "Remote-User-Terminated"), .remoteUserTerminatedConnection)
        XCTAssertEqual(HCIStatus(name: "local-host-terminated"), .connectionTerminatedByLocalHost)
    }

    func testHexCodesParse() {
        XCTAssertEqual(HCIStatus(name: "0x3e"), .connectionFailedToBeEstablished)
        XCTAssertEqual(HCIStatus(name: "0x3E"), .connectionFailedToBeEstablished)
        XCTAssertEqual(HCIStatus(name: "0x00"), .success)
        XCTAssertEqual(HCIStatus(name: "0xff"), HCIStatus(rawValue: 0xFF))
        XCTAssertNil(HCIStatus(name: "0x"))
        XCTAssertNil(HCIStatus(name: "0x100"))
        XCTAssertNil(HCIStatus(name: "0xzz"))
        XCTAssertNil(HCIStatus(name: "no-such-error"))
        XCTAssertNil(HCIStatus(name: ""))
    }

    func testUnknownCodesPrintAsHex() {
        XCTAssertEqual(HCIStatus(rawValue: 0x47).name, "0x47")
        XCTAssertEqual(HCIStatus(rawValue: 0x1B).name, "0x1b")
        XCTAssertEqual(HCIStatus(rawValue: 0xFF).name, "0xff")
        XCTAssertTrue(HCIStatus(rawValue: 0x47).description.contains("0x47"))
        XCTAssertEqual(HCIStatus.remoteUserTerminatedConnection.description, "remote-user-terminated (0x13)")
        XCTAssertEqual(HCIStatus.success.description, "success (0x00)")
    }

    func testEveryPrintedNameParsesBackToItsCode() {
        for raw in UInt8.min...UInt8.max {
            let status = HCIStatus(rawValue: raw)
            XCTAssertEqual(HCIStatus(name: status.name), status, status.name)
        }
    }

    func testEveryNameIsUniqueAndParses() {
        let names = HCIStatus.allNames
        XCTAssertEqual(Set(names).count, names.count, "a name must not mean two codes")
        XCTAssertTrue(names.contains("remote-user-terminated"))
        for name in names {
            guard let status = HCIStatus(name: name) else { XCTFail(name); continue }
            XCTAssertTrue(HCIStatus.names[status.rawValue]?.contains(name) ?? false, name)
        }
    }

    func testSuccess() {
        XCTAssertTrue(HCIStatus.success.isSuccess)
        XCTAssertFalse(HCIStatus.commandDisallowed.isSuccess)
    }

    // MARK: HCIOpcode

    func testOGFAndOCFSplit() {
        let createConnection = HCIOpcode(rawValue: 0x200D)
        XCTAssertEqual(createConnection.ogf, 0x08)   // LE Controller commands
        XCTAssertEqual(createConnection.ocf, 0x00D)
        XCTAssertEqual(HCIOpcode(rawValue: 0x0406).ogf, 0x01)   // Link Control
        XCTAssertEqual(HCIOpcode(rawValue: 0x0406).ocf, 0x006)
        XCTAssertEqual(HCIOpcode(rawValue: 0xFC00).ogf, 0x3F)   // vendor-specific
        XCTAssertEqual(HCIOpcode(rawValue: 0xFFFF).ocf, 0x3FF)
        XCTAssertEqual(HCIOpcode(ogf: 0x3F, ocf: 0x3FF).rawValue, 0xFFFF)
        XCTAssertEqual(HCIOpcode(ogf: 0x01, ocf: 0x0406).rawValue, 0x0406, "OCF is limited to 10 bits")
        for raw in stride(from: 0, through: 0xFFFF, by: 7) {
            let opcode = HCIOpcode(rawValue: UInt16(raw))
            XCTAssertEqual(HCIOpcode(ogf: opcode.ogf, ocf: opcode.ocf), opcode)
        }
    }

    func testNamedOpcodesHaveTheirSpecValuesAndNames() {
        let table: [(HCIOpcode, UInt16, String)] = [
            (.disconnect, 0x0406, "Disconnect"),
            (.setEventMask, 0x0C01, "Set Event Mask"),
            (.reset, 0x0C03, "Reset"),
            (.readLocalVersionInformation, 0x1001, "Read Local Version Information"),
            (.readLocalSupportedCommands, 0x1002, "Read Local Supported Commands"),
            (.readLocalSupportedFeatures, 0x1003, "Read Local Supported Features"),
            (.readBufferSize, 0x1005, "Read Buffer Size"),
            (.readBDAddr, 0x1009, "Read BD_ADDR"),
            (.readRSSI, 0x1405, "Read RSSI"),
            (.leSetEventMask, 0x2001, "LE Set Event Mask"),
            (.leReadBufferSize, 0x2002, "LE Read Buffer Size"),
            (.leReadLocalSupportedFeatures, 0x2003, "LE Read Local Supported Features"),
            (.leSetRandomAddress, 0x2005, "LE Set Random Address"),
            (.leSetAdvertisingParameters, 0x2006, "LE Set Advertising Parameters"),
            (.leReadAdvertisingPhysicalChannelTxPower, 0x2007, "LE Read Advertising Physical Channel Tx Power"),
            (.leSetAdvertisingData, 0x2008, "LE Set Advertising Data"),
            (.leSetScanResponseData, 0x2009, "LE Set Scan Response Data"),
            (.leSetAdvertisingEnable, 0x200A, "LE Set Advertising Enable"),
            (.leSetScanParameters, 0x200B, "LE Set Scan Parameters"),
            (.leSetScanEnable, 0x200C, "LE Set Scan Enable"),
            (.leCreateConnection, 0x200D, "LE Create Connection"),
            (.leCreateConnectionCancel, 0x200E, "LE Create Connection Cancel"),
            (.leConnectionUpdate, 0x2013, "LE Connection Update"),
            (.leSetAdvertisingSetRandomAddress, 0x2035, "LE Set Advertising Set Random Address"),
            (.leSetExtendedAdvertisingParameters, 0x2036, "LE Set Extended Advertising Parameters"),
            (.leSetExtendedAdvertisingData, 0x2037, "LE Set Extended Advertising Data"),
            (.leSetExtendedScanResponseData, 0x2038, "LE Set Extended Scan Response Data"),
            (.leSetExtendedAdvertisingEnable, 0x2039, "LE Set Extended Advertising Enable"),
            (.leSetExtendedScanParameters, 0x2041, "LE Set Extended Scan Parameters"),
            (.leSetExtendedScanEnable, 0x2042, "LE Set Extended Scan Enable"),
            (.leExtendedCreateConnection, 0x2043, "LE Extended Create Connection"),
        ]
        for (opcode, raw, name) in table {
            XCTAssertEqual(opcode.rawValue, raw, name)
            XCTAssertEqual(opcode.name, name)
            XCTAssertEqual(opcode.description, name)
        }
    }

    func testUnnamedOpcodesPrintOGFAndOCF() {
        XCTAssertNil(HCIOpcode(rawValue: 0x2060).name)
        XCTAssertEqual(HCIOpcode(rawValue: 0x2060).description, "Opcode 0x2060 (OGF 0x8, OCF 0x60)")
        XCTAssertEqual(HCIOpcode(rawValue: 0xFC01).description, "Opcode 0xfc01 (OGF 0x3f, OCF 0x1)")
    }
}
