import BLERuntime
import FuzzSupport
import GAP
import HCI
import Transport

/// BLELab's host (HCI driver, GAP, L2CAP, ATT, GATT) fed whatever a controller may send: each
/// message is one H4 frame (events and ACL data). The host powers on first; connections the
/// controller announces get a GATT discovery as an app would start.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let loop = VirtualEventLoop()
    let transport = InProcessTransport(loop: loop, endpoint: "fuzz") { _ in }
    let host = BLEHost(loop: loop, transport: transport)
    host.onViolation = { _ = $0.description }
    host.onConnection = { connection in
        connection.client.discoverAll { _ in }
    }
    host.powerOn()
    for message in fuzzMessages(data, size) {
        transport.deliverToHost(message)
        loop.run(until: loop.now + .seconds(1))
    }
    loop.run(until: loop.now + .seconds(60))
    transport.close()
    loop.run(until: loop.now + .seconds(60))
    return 0
}
