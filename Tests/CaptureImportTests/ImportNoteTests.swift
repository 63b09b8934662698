import BLEWire
import XCTest
@testable import CaptureImport

/// The notes an import writes about what it leaves out say which reason applies.
final class ImportNoteTests: XCTestCase {
    private func notes(_ data: [UInt8]) -> [String] {
        let address = LEAddress(BDAddr(string: "C0:00:00:00:00:01")!, type: .random)
        var p = ImportedPeripheral(id: "p", address: address)
        p.reports = [AdvertisingObservation(mark: CaptureMark(record: 1, time: 0), address: address, connectable: true,
                                            isScanResponse: false, data: data, rssi: -60, scan: 0)]
        return p.advertising().comments
    }

    /// "(a second one, or no room in 31 octets)" named two reasons for one note.
    func testServiceDataLeftOutSaysWhy() {
        // Two Service Data structures for 180F.
        XCTAssertEqual(notes([0x04, 0x16, 0x0F, 0x18, 0x01, 0x04, 0x16, 0x0F, 0x18, 0x02]), [
            "service data for 180F (hex:02) is not reproduced: a second one for that UUID, and a scenario takes one value per service UUID",
        ])
        // A name of 20 octets, then service data of 10 octets: 3 (flags) + 22 + 12 > 31.
        let name: [UInt8] = [21, 0x09] + Array("ABCDEFGHIJKLMNOPQRST".utf8)
        let data: [UInt8] = [11, 0x16, 0x0F, 0x18] + [UInt8](repeating: 0xAA, count: 8)
        XCTAssertEqual(notes(name + data), [
            "service data for 180F (hex:aa aa aa aa aa aa aa aa) is not reproduced: it takes 12 octets and 6 of the 31 are left",
        ])
    }
}
