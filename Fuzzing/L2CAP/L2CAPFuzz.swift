import BLERuntime
import FuzzSupport
import HCI
import HostLink
import Transport

/// ACL reassembly in the HCI driver and L2CAP on the link above it (basic frames, the LE
/// signaling channel, SMP): each message is one ACL data packet from the controller (without its
/// H4 indicator). The link is the central's when the first octet is even, else the peripheral's.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let messages = fuzzMessages(data, size)
    guard let first = messages.first?.first else { return 0 }
    let loop = VirtualEventLoop()
    let transport = InProcessTransport(loop: loop, endpoint: "fuzz") { _ in }
    let driver = HCIDriver(loop: loop, transport: transport)
    driver.setLEBuffers(packetLength: 27, count: 8)
    let link = L2CAPLink(handle: 0x0001, role: first & 1 == 0 ? .central : .peripheral, driver: driver)
    driver.onL2CAPFrame = { [unowned link] handle, frame in
        if handle == link.handle { link.receive(frame: frame) }
    }
    link.onViolation = { _ = $0.description }
    for message in messages.dropFirst() {
        transport.deliverToHost([H4PacketType.acl.rawValue] + message)
        loop.run(until: loop.now + .seconds(1))
    }
    if first & 2 != 0 {
        link.requestConnectionParameterUpdate(ConnectionParameterUpdate(intervalMin: 24, intervalMax: 40, latency: 0, timeout: 400)) { _ in }
    }
    loop.run(until: loop.now + .seconds(60))
    link.close(reason: .remoteUserTerminatedConnection)
    _ = loop.runUntilIdle()
    return 0
}
