import ATT
import BLELab
import BLERuntime
import BLEWire
import CoreBluetoothLab
import Foundation
import ScenarioFormat
import XCTest

/// The classic bug: writing without response in a loop, ignoring `canSendWriteWithoutResponse`.
/// iOS drops what does not fit its transmit queue; so does the lab, with an "API MISUSE" warning,
/// and an app that waits for `peripheralIsReady(toSendWriteWithoutResponse:)` loses nothing.
final class WriteWithoutResponseFloodTests: ConnectedProbeTestCase {
    private var fff1: CBCharacteristic!

    override func setUpWithError() throws {
        try super.setUpWithError()
        fff1 = try characteristic("FFF1", of: peripheral)
        lab.run(for: .seconds(1))
    }

    override func tearDown() {
        fff1 = nil
        super.tearDown()
    }

    private func value(_ k: Int) -> Data { Data([UInt8(k >> 8), UInt8(k & 0xFF)]) }

    private func crossed() -> [Int] {
        lab.attWrites(to: CBUUID(string: "FFF1")).map { Int($0.value[0]) << 8 | Int($0.value[1]) }
    }

    func testWritesIgnoringCanSendWriteWithoutResponseAreDroppedWithAMisuseWarning() throws {
        let issued = 2000
        var mayWrite: [Bool] = []
        for k in 0..<issued {
            mayWrite.append(peripheral.canSendWriteWithoutResponse)
            peripheral.writeValue(value(k), for: fff1, type: .withoutResponse)
        }
        let accepted = mayWrite.prefix { $0 }.count
        XCTAssertEqual(mayWrite.dropFirst(accepted).filter { $0 }.count, 0, "once full, the queue cannot drain while the app loops")
        XCTAssertEqual(accepted, 8 + lab.transmitQueueLimit, "the controller's 8 ACL buffers, then the host queue up to the limit")
        XCTAssertTrue(lab.run(within: .seconds(10)) { self.recorder.count("ready") == 1 })
        lab.run(for: .seconds(2))

        let arrived = crossed()
        XCTAssertLessThan(arrived.count, issued)
        XCTAssertEqual(arrived, Array(0..<accepted), "exactly the writes made while there was room, in order")
        XCTAssertEqual(probe.value(of: CharacteristicRef(0xFFF1)).map { Data($0) }, value(accepted - 1))
        let misuse = lab.warnings.filter { $0.contains("API MISUSE") }
        XCTAssertEqual(misuse.count, 1, "one warning for the burst, not one per write: \(misuse)")
        XCTAssertTrue(misuse.first?.contains("while canSendWriteWithoutResponse is false") ?? false)
        XCTAssertTrue(lab.warnings.last?.contains("\(issued - accepted) writes without response") ?? false,
                      "the count comes once the link has room: \(lab.warnings.last ?? "")")
        XCTAssertEqual(recorder.count("wrote"), 0)
    }

    /// Waiting for `peripheralIsReady(toSendWriteWithoutResponse:)` whenever the flag is false:
    /// all 2,000 writes arrive, in order, without a warning.
    func testAnAppThatWaitsForPeripheralIsReadyLosesNothing() throws {
        let total = 2000
        var next = 0
        let writeWhileAllowed: (CBPeripheral) -> Void = { p in
            while next < total, p.canSendWriteWithoutResponse {
                p.writeValue(self.value(next), for: self.fff1, type: .withoutResponse)
                next += 1
            }
        }
        recorder.onReady = writeWhileAllowed
        let warningsBefore = lab.warnings.count
        writeWhileAllowed(peripheral)
        XCTAssertLessThan(next, total, "the app had to wait")
        XCTAssertTrue(lab.run(within: .seconds(120)) { next == total && self.crossed().count == total })
        lab.run(for: .seconds(1))
        XCTAssertEqual(crossed(), Array(0..<total))
        XCTAssertGreaterThan(recorder.count("ready"), 1)
        XCTAssertEqual(Array(lab.warnings.dropFirst(warningsBefore)), [])
        XCTAssertEqual(probe.value(of: CharacteristicRef(0xFFF1)).map { Data($0) }, value(total - 1))
    }
}
