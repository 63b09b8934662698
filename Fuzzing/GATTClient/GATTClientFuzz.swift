import ATT
import BLERuntime
import FuzzSupport
import GATT

/// The GATT client fed a server's responses, notifications and indications: each message is one
/// ATT PDU from the peer. The client exchanges the MTU, discovers everything, then subscribes to,
/// reads, writes and long-writes the characteristics it found, as an app does.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let loop = VirtualEventLoop()
    let bearer = ATTBearer(loop: loop) { _ in }
    let client = GATTClient(bearer: bearer)
    client.onNotification = { _ in }
    client.onServiceChanged = { [unowned client] range in client.rediscover(range) { _ in } }
    bearer.observeViolations { _ = "\($0)" }
    client.exchangeMTU { _ in }
    client.discoverAll { result in
        guard case let .success(services) = result else { return }
        for characteristic in services.flatMap(\.characteristics) {
            client.subscribe(to: characteristic) { _ in }
            client.read(handle: characteristic.valueHandle) { _ in }
            client.write([0x01], handle: characteristic.valueHandle) { _ in }
            client.writeLong(Array(repeating: 0x55, count: 40), handle: characteristic.valueHandle) { _ in }
        }
    }
    client.read(uuid: 0x2A00) { _ in }
    client.readMultiple(handles: [0x0003, 0x0005]) { _ in }
    for message in fuzzMessages(data, size) {
        bearer.receive(message)
        loop.run(until: loop.now + .seconds(1))
    }
    bearer.close(reason: 0x13)
    _ = loop.runUntilIdle()
    return 0
}
