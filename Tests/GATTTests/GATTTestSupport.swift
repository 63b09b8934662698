import ATT
import BLERuntime
import BLEWire
@testable import GATT
import WireTestSupport
import XCTest

/// HM-10 style serial service plus a heart rate service, after the GAP and GATT services:
///
///     0x0001 «Primary Service» 1800          0x000A «Primary Service» FFE0
///     0x0002 «Characteristic» 2A00 (read)    0x000B «Characteristic» FFE1 (read, write-without-response, notify)
///     0x0003 Device Name "BLELab"            0x000C FFE1 value "ready"
///     0x0004 «Characteristic» 2A01 (read)    0x000D CCCD
///     0x0005 Appearance                      0x000E «Primary Service» 180D
///     0x0006 «Primary Service» 1801          0x000F «Characteristic» 2A37 (notify)
///     0x0007 «Characteristic» 2A05 (indicate) 0x0010 Heart Rate Measurement
///     0x0008 Service Changed                 0x0011 CCCD
///     0x0009 CCCD
func makeHM10Database(extra: [GATTService] = []) throws -> GATTDatabase {
    try GATTDatabase(services: [
        GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: 0xFFE1, properties: [.read, .writeWithoutResponse, .notify], value: Array("ready".utf8)),
        ]),
        GATTService(uuid: 0x180D, characteristics: [
            GATTCharacteristic(uuid: 0x2A37, properties: [.notify], value: [0x00, 0x48]),
        ]),
    ] + extra)
}

/// A server on one bearer whose client is the test, speaking raw octets.
final class ServerHarness {
    let loop = VirtualEventLoop()
    var sent: [[UInt8]] = []
    lazy var bearer = ATTBearer(loop: loop) { [unowned self] in self.sent.append($0) }
    let server: GATTServer
    private(set) var connection: GATTServerConnection?

    init(database: GATTDatabase) {
        server = GATTServer(database: database)
        connection = server.attach(bearer)
    }

    /// Feeds one request; returns what the server sent in answer, as spaced hex.
    @discardableResult
    func exchange(_ hex: String) -> [String] {
        let before = sent.count
        bearer.receive(bytes(hex))
        loop.runUntilIdle()
        return sent[before...].map(\.spacedHex)
    }
}

/// A central and a peripheral bearer wired back to back through a virtual loop: what one sends,
/// the other receives in a later task, in order.
final class BackToBackLink {
    let loop = VirtualEventLoop()
    var centralSent: [[UInt8]] = []
    var peripheralSent: [[UInt8]] = []
    private(set) var central: ATTBearer
    private(set) var peripheral: ATTBearer
    let server: GATTServer
    let client: GATTClient

    init(database: GATTDatabase, centralMTU: UInt16 = 517, peripheralMTU: UInt16 = 517) {
        let loop = self.loop
        final class Ends { weak var central: ATTBearer?; weak var peripheral: ATTBearer? }
        let ends = Ends()
        central = ATTBearer(loop: loop, preferredMTU: centralMTU) { pdu in loop.execute { ends.peripheral?.receive(pdu) } }
        peripheral = ATTBearer(loop: loop, preferredMTU: peripheralMTU) { pdu in loop.execute { ends.central?.receive(pdu) } }
        ends.central = central
        ends.peripheral = peripheral
        server = GATTServer(database: database)
        client = GATTClient(bearer: central)
        server.attach(peripheral)
        central.onPDUSent = { [unowned self] in self.centralSent.append($0) }
        peripheral.onPDUSent = { [unowned self] in self.peripheralSent.append($0) }
    }

    var connection: GATTServerConnection? { server.connection(for: peripheral) }

    /// Runs the loop until `body`'s completion has been called, and returns its result.
    func await<T>(_ body: (@escaping (T) -> Void) -> Void, file: StaticString = #filePath, line: UInt = #line) -> T? {
        var result: T?
        body { result = $0 }
        loop.run(until: loop.now + .seconds(120)) { result != nil }
        if result == nil { XCTFail("procedure did not complete", file: file, line: line) }
        return result
    }
}
