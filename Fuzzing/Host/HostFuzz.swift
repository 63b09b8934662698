import BLERuntime
import BLEWire
import FuzzSupport
import GAP
import HCI
import Transport

/// BLELab's host (HCI driver, GAP, L2CAP, ATT, GATT) fed whatever a controller may send: each
/// non-empty message is one H4 frame (events and ACL data). The host powers on, then connects as
/// central when the input's length is odd, advertises as peripheral when it is even (the seeds,
/// tools/fuzz-seeds.py, are padded with an empty message to match the capture they come from);
/// each connection the controller announces gets a GATT discovery, as an app would start.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let loop = VirtualEventLoop()
    let transport = InProcessTransport(loop: loop, endpoint: "fuzz") { _ in }
    let host = BLEHost(loop: loop, transport: transport)
    host.onViolation = { _ = $0.description }
    host.onConnection = { connection in
        connection.client.discoverAll { _ in }
    }
    let central = size % 2 == 1
    host.powerOn { [unowned host] result in
        guard case .success = result else { return }
        if central {
            host.connect(to: LEAddress(BDAddr(rawValue: 0xB0_0000_0001), type: .public)) { _ in }
        } else {
            host.startAdvertising(AdvertisingConfiguration(data: AdvertisingData.make(name: "fuzz"))) { _ in }
        }
    }
    for message in fuzzMessages(data, size) where !message.isEmpty {
        transport.deliverToHost(message)
        loop.run(until: loop.now + .seconds(1))
    }
    loop.run(until: loop.now + .seconds(60))
    transport.close()
    loop.run(until: loop.now + .seconds(60))
    return 0
}
