#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLERuntime
@testable import Transport
import XCTest

/// The HCI user channel can only be opened where the kernel has Bluetooth (the vhci micro-VM);
/// here we check the address encoding, the error texts, and that these machines (CONFIG_BT unset,
/// see ARCHITECTURE.md "Verified facts") get the "no Bluetooth support" error.
final class HCIUserChannelTests: XCTestCase {
    func testTheSocketAddressIsSixOctetsInHostOrder() {
        XCTAssertEqual(HCISocketAddress.size, 6)
        let address = HCISocketAddress(device: 0x0102)
        XCTAssertEqual(address.family, 31)
        XCTAssertEqual(address.channel, 1)
        // x86-64 and arm64 are little-endian: hci_family 31, hci_dev 0x0102, hci_channel 1.
        XCTAssertEqual(address.bytes, [31, 0x00, 0x02, 0x01, 0x01, 0x00])
        XCTAssertEqual(HCISocketAddress(device: 0).bytes, [0x1F, 0x00, 0x00, 0x00, 0x01, 0x00])
        XCTAssertEqual(HCISocketAddress(device: 1, channel: 0).bytes, [0x1F, 0x00, 0x01, 0x00, 0x00, 0x00])
    }

    func testTheConstantsAreTheKernels() {
        XCTAssertEqual(LinuxBluetooth.addressFamily, 31)   // AF_BLUETOOTH
        XCTAssertEqual(LinuxBluetooth.protocolHCI, 1)      // BTPROTO_HCI
        XCTAssertEqual(LinuxBluetooth.channelUser, 1)      // HCI_CHANNEL_USER
    }

    func testOpeningOnAKernelWithoutBluetoothSaysSoWithTheErrno() throws {
        try XCTSkipIf(kernelHasBluetooth(), "this kernel has Bluetooth; the vhci tier exercises the user channel")
        let loop = SystemEventLoop()
        XCTAssertThrowsError(try HCIUserChannelTransport(device: 0, loop: loop)) { error in
            XCTAssertEqual(error as? HCIUserChannelError, .noBluetoothSupport(device: 0, errno: EAFNOSUPPORT))
            XCTAssertEqual((error as? HCIUserChannelError)?.errno, EAFNOSUPPORT)
            XCTAssertEqual("\(error)", "hci0 (HCI user channel): this kernel has no Bluetooth support (CONFIG_BT); "
                           + "use the vhci micro-VM tier (make e2e-vhci) (errno 97: Address family not supported by protocol)")
        }
        XCTAssertEqual(loop.watchCount, 0)
    }

    /// True when socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI) works here.
    private func kernelHasBluetooth() -> Bool {
        let fd = socket(31, Int32(SOCK_RAW.rawValue), 1)
        if fd >= 0 { close(fd) }
        return fd >= 0
    }

    func testEachErrnoBecomesItsAdvice() {
        let cases: [(HCIUserChannelError, String)] = [
            (.noBluetoothSupport(device: 0, errno: EPROTONOSUPPORT),
             "hci0 (HCI user channel): this kernel has no Bluetooth support (CONFIG_BT); use the vhci micro-VM tier (make e2e-vhci) (errno \(EPROTONOSUPPORT): Protocol not supported)"),
            (.deviceBusy(device: 1, errno: EBUSY),
             "hci1 (HCI user channel): hci1 is busy or up: bring it down (hciconfig hci1 down / btmgmt power off) or stop bluetoothd (errno \(EBUSY): Device or resource busy)"),
            (.needsNetAdmin(device: 0, errno: EPERM),
             "hci0 (HCI user channel): needs CAP_NET_ADMIN (run as root or with --cap-add NET_ADMIN) (errno \(EPERM): Operation not permitted)"),
            (.noSuchDevice(device: 3, errno: ENODEV),
             "hci3 (HCI user channel): no controller hci3 (errno \(ENODEV): No such device)"),
        ]
        for (error, text) in cases { XCTAssertEqual(error.description, text) }
        XCTAssertEqual(HCIUserChannelError.deviceBusy(device: 2, errno: EUSERS).message,
                       "hci2 is busy or up: bring it down (hciconfig hci2 down / btmgmt power off) or stop bluetoothd")
        XCTAssertEqual(HCIUserChannelError.needsNetAdmin(device: 0, errno: EACCES).message,
                       "needs CAP_NET_ADMIN (run as root or with --cap-add NET_ADMIN)")
        XCTAssertEqual(HCIUserChannelError.system(device: 0, operation: "bind", errno: ERFKILL, message: "Operation not possible due to RF-kill").description,
                       "hci0 (HCI user channel): bind failed: Operation not possible due to RF-kill (errno \(ERFKILL): Operation not possible due to RF-kill)")
    }

    func testTheKernelsErrnosMapToTheirCases() {
        XCTAssertEqual(HCIUserChannelError(failedCall: "socket", errno: EAFNOSUPPORT, device: 0), .noBluetoothSupport(device: 0, errno: EAFNOSUPPORT))
        XCTAssertEqual(HCIUserChannelError(failedCall: "socket", errno: EPROTONOSUPPORT, device: 0), .noBluetoothSupport(device: 0, errno: EPROTONOSUPPORT))
        XCTAssertEqual(HCIUserChannelError(failedCall: "bind", errno: EBUSY, device: 1), .deviceBusy(device: 1, errno: EBUSY))
        XCTAssertEqual(HCIUserChannelError(failedCall: "bind", errno: EUSERS, device: 1), .deviceBusy(device: 1, errno: EUSERS))
        XCTAssertEqual(HCIUserChannelError(failedCall: "bind", errno: EPERM, device: 0), .needsNetAdmin(device: 0, errno: EPERM))
        XCTAssertEqual(HCIUserChannelError(failedCall: "socket", errno: EACCES, device: 0), .needsNetAdmin(device: 0, errno: EACCES))
        XCTAssertEqual(HCIUserChannelError(failedCall: "bind", errno: ENODEV, device: 7), .noSuchDevice(device: 7, errno: ENODEV))
        XCTAssertEqual(HCIUserChannelError(failedCall: "bind", errno: EINVAL, device: 0),
                       .system(device: 0, operation: "bind", errno: EINVAL, message: "Invalid argument"))
    }
}

/// The user channel's packet handling, over a SOCK_SEQPACKET socketpair standing in for the
/// kernel (which, like it, keeps each write one packet).
final class HCIUserChannelPacketTests: XCTestCase {
    private var loop: SystemEventLoop!
    private var kernelSide: Int32 = -1
    private var transport: HCIUserChannelTransport!
    private var frames: [[UInt8]] = []
    private var closes: [TransportError] = []

    override func setUp() {
        loop = SystemEventLoop()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds), 0)
        kernelSide = fds[1]
        transport = HCIUserChannelTransport(packetSocket: fds[0], device: 0, loop: loop)
        frames = []
        closes = []
        transport.onFrame = { [unowned self] in self.frames.append($0) }
        transport.onClose = { [unowned self] in self.closes.append($0) }
    }

    override func tearDown() {
        transport = nil
        if kernelSide >= 0 { close(kernelSide) }
    }

    private func kernelSends(_ packet: [UInt8]) {
        XCTAssertEqual(packet.withUnsafeBytes { send(kernelSide, $0.baseAddress, $0.count, 0) }, packet.count)
    }

    private func wait(_ what: String, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        XCTAssertTrue(loop.run(until: loop.now + .seconds(2), orUntil: condition), "timed out waiting for \(what)", file: file, line: line)
    }

    func testEachPacketReadIsOneFrame() {
        kernelSends([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        kernelSends([0x02, 0x40, 0x20, 0x03, 0x00, 1, 2, 3])
        wait("two frames") { frames.count == 2 }
        XCTAssertEqual(frames, [[0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], [0x02, 0x40, 0x20, 0x03, 0x00, 1, 2, 3]])
        XCTAssertEqual(transport.packetsReceived, 2)
    }

    func testEachFrameSentIsOnePacket() {
        transport.send([0x01, 0x03, 0x0C, 0x00])
        transport.send([0x02, 0x40, 0x00, 0x01, 0x00, 9])
        var packets: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let n = recv(kernelSide, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            packets.append(Array(buffer[0 ..< n]))
        }
        XCTAssertEqual(packets, [[0x01, 0x03, 0x0C, 0x00], [0x02, 0x40, 0x00, 0x01, 0x00, 9]])
    }

    func testAPacketThatIsNotOneWholeH4PacketIsMalformed() {
        kernelSends([0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        kernelSends([0x04, 0x0E, 0x04, 0x01, 0x03])   // shorter than its length says
        wait("the failure") { !closes.isEmpty }
        XCTAssertEqual(frames.count, 1)
        XCTAssertEqual(closes, [.malformed(endpoint: "hci0 (HCI user channel)",
                                           detail: "packet 2 (5 octets, stream offset 7) is not one whole H4 packet: 04 0e 04 01 03")])
    }

    func testAnUnknownIndicatorIsMalformed() {
        kernelSends([0x09, 0x00])
        wait("the failure") { !closes.isEmpty }
        XCTAssertEqual(closes.first?.description,
                       "hci0 (HCI user channel): malformed HCI stream: packet 1 (2 octets, stream offset 0) is not one whole H4 packet: 09 00")
    }

    func testTheKernelClosingIsClosedOnce() {
        close(kernelSide)
        kernelSide = -1
        wait("the close") { !closes.isEmpty }
        transport.close()
        loop.run(until: loop.now + .milliseconds(5))
        XCTAssertEqual(closes, [.closed(endpoint: "hci0 (HCI user channel)")])
        XCTAssertEqual(loop.watchCount, 0)
    }
}
