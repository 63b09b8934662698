import BLERuntime
import BLEWire
@testable import Controller
import XCTest

/// The per-device random streams are labelled "advDelay/<address>" and "rssi/<address>"; the
/// controller composes the labels as bytes. They must be exactly the interpolated Strings, or
/// every seeded run would change.
final class StreamLabelTests: XCTestCase {
    func testLabelsAreTheBytesOfTheInterpolatedString() {
        let addresses: [UInt64] = [0, 1, 0x0A, 0xF0_0F_00_AB_CD_EF, 0x3F_FF_FF_FF_FF_FF, 0xFF_FF_FF_FF_FF_FF, 0x12_34_56_78_9A_BC]
        for raw in addresses {
            let address = BDAddr(rawValue: raw)
            for prefix: StaticString in ["advDelay/", "rssi/"] {
                XCTAssertEqual(String(decoding: SimController.streamLabel(prefix, address), as: UTF8.self),
                               "\(prefix)\(address)")
            }
        }
    }

    func testAControllersStreamsAreTheOnesTheStringLabelsName() {
        let loop = VirtualEventLoop()
        let air = SimAir(loop: loop, seed: 9)
        let address = BDAddr(rawValue: 0x00_1B_DC_0F_A2_07)
        let controller = SimController(air: air, address: address, name: "device")
        var advertising = SeededRandom(seed: 9, stream: "advDelay/\(address)")
        var rssi = SeededRandom(seed: 9, stream: "rssi/\(address)")
        XCTAssertEqual(controller.radio.advertisingRandom.next(), advertising.next())
        XCTAssertEqual(controller.radio.rssiRandom.next(), rssi.next())
    }
}
