import ATT
import BLERuntime
import BLEWire
import FuzzSupport
import GATT

/// The GATT server on one bearer fed requests, commands and confirmations: each message is one
/// ATT PDU from the peer client. The database has the GAP and GATT services, a serial service
/// (read, write, write without response, notify), a heart rate service (notify) and a service
/// with a long writable value, a reliable-write characteristic and a read handler.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let loop = VirtualEventLoop()
    let database = try! GATTDatabase(services: [
        GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: 0xFFE1, properties: [.read, .write, .writeWithoutResponse, .notify], value: Array("ready".utf8)),
        ]),
        GATTService(uuid: 0x180D, characteristics: [
            GATTCharacteristic(uuid: 0x2A37, properties: [.notify, .indicate], value: [0x00, 0x48]),
        ]),
        GATTService(uuid: BluetoothUUID(string: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!, characteristics: [
            GATTCharacteristic(uuid: 0x2A3D, properties: [.read, .write], value: Array(repeating: 0x41, count: 100)),
            GATTCharacteristic(uuid: 0x2A3E, properties: [.read, .write, .extendedProperties], value: [1, 2, 3],
                               extendedProperties: [.reliableWrite]),
        ]),
    ])
    let server = GATTServer(database: database)
    var sent = 0
    let bearer = ATTBearer(loop: loop) { sent += $0.count }
    let connection = server.attach(bearer)
    server.onWrite = { _ in }
    server.onSubscriptionChange = { _ in }
    bearer.observeViolations { _ = "\($0)" }
    for message in fuzzMessages(data, size) {
        bearer.receive(message)
        loop.run(until: loop.now + .seconds(1))
        _ = server.notifyAll([0x01, 0x02], handle: 0x000C)
    }
    server.indicate([0x03], handle: 0x0010, to: connection) { _ in }
    loop.run(until: loop.now + .seconds(60))
    server.detach(bearer)
    bearer.close(reason: 0x13)
    _ = loop.runUntilIdle()
    return 0
}
