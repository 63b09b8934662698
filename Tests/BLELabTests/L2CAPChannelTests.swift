import BLELab
import BLERuntime
import BLEWire
import GAP
import HCI
import HostLink
import SMP
import Transport
import XCTest

/// LE credit based channels between two hosts on the simulated controller and air (Core 5.4,
/// Vol 3, Part A, 4.22–4.24, 3.4.3, 10.1): what each side delivers, and the signaling and
/// K-frames each host's capture shows it sent.
final class L2CAPChannelTests: XCTestCase {
    private struct Pair {
        let lab: Lab
        let central: LabDevice
        let peripheral: LabDevice
        let toPeripheral: Connection
        let toCentral: Connection
    }

    private func connectedPair(seed: UInt64 = 9, peripheralConfiguration: HostConfiguration = .init(),
                               centralConfiguration: HostConfiguration = .init()) throws -> Pair {
        let lab = Lab(seed: seed)
        let peripheral = try lab.addDevice("peripheral", configuration: peripheralConfiguration)
        let central = try lab.addDevice("central", configuration: centralConfiguration)
        try lab.powerOn()
        try lab.wait { done in
            peripheral.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "P"), interval: .milliseconds(50)), completion: done)
        }.get()
        var incoming: Connection?
        peripheral.host.onConnection = { incoming = $0 }
        let connection = try lab.wait("connect") { done in central.host.connect(to: peripheral.address, completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(1)) { incoming != nil })
        return Pair(lab: lab, central: central, peripheral: peripheral, toPeripheral: connection, toCentral: try XCTUnwrap(incoming))
    }

    /// The whole L2CAP frames `device`'s host sent to its controller, in order.
    private func framesSent(by device: LabDevice) -> [L2CAPBasicFrame] {
        var reassembler = L2CAPReassembler<UInt16>()
        return device.log.packets.filter { $0.direction == .hostToController }.compactMap { packet in
            guard case let .acl(acl)? = try? HCIPacket(h4: packet.frame) else { return nil }
            return reassembler.feed(acl.data, boundary: acl.boundary, stream: acl.handle).frame
        }
    }

    private func signaling(sentBy device: LabDevice, code: UInt8) -> [LESignalingPDU] {
        framesSent(by: device).filter { $0.channel == L2CAPChannelID.leSignaling && $0.payload.first == code }
            .compactMap { try? LESignalingPDU(decoding: $0.payload) }
    }

    private func open(_ p: Pair, psm: UInt16, parameters: L2CAPChannelParameters = .init())
        throws -> Result<L2CAPCreditBasedChannel, L2CAPChannelError> {
        try p.lab.wait("open") { done in p.toPeripheral.openL2CAPChannel(psm: psm, parameters: parameters, completion: done) }
    }

    func testSDUsCrossTheChannelBothWaysWhole() throws {
        let p = try connectedPair()
        var served: [L2CAPCreditBasedChannel] = []
        var atPeripheral: [[UInt8]] = []
        let psm = try p.peripheral.host.publishL2CAPChannel(parameters: L2CAPChannelParameters(mtu: 2048, mps: 100, initialCredits: 6)) { connection, channel in
            XCTAssertTrue(connection === p.toCentral)
            channel.onSDU = { atPeripheral.append($0) }
            served.append(channel)
        }
        XCTAssertEqual(psm, 0x0080, "the lowest dynamic SPSM")
        let channel = try open(p, psm: psm, parameters: L2CAPChannelParameters(mtu: 600, mps: 60, initialCredits: 3)).get()
        XCTAssertEqual(served.count, 1)
        XCTAssertEqual([channel.remoteMTU, channel.remoteMPS, channel.sendCredits], [2048, 100, 6])
        var atCentral: [[UInt8]] = []
        channel.onSDU = { atCentral.append($0) }

        var random = SeededRandom(seed: 4, stream: "sdus")
        let sdus = [1, 98, 99, 2048, 700].map { n in (0..<n).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        for sdu in sdus { try channel.send(sdu) }
        let back = (0..<600).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try served[0].send(back)
        XCTAssertTrue(p.lab.run(within: .seconds(10)) { atPeripheral.count == sdus.count && atCentral.count == 1 })
        XCTAssertEqual(atPeripheral, sdus)
        XCTAssertEqual(atCentral, [back])

        // On the central's side of the wire: the request, and K-frames none longer than the
        // peripheral's MPS (100) plus the 4-octet basic header, the first of each SDU with its length.
        let request = signaling(sentBy: p.central, code: LESignalingPDU.Code.leCreditBasedConnectionRequest)
        XCTAssertEqual(request.count, 1)
        guard case let .leCreditBasedConnectionRequest(_, r)? = request.first else { return XCTFail() }
        XCTAssertEqual([r.spsm, r.sourceCID, r.mtu, r.mps, r.initialCredits], [0x0080, 0x0040, 600, 60, 3])
        let kFrames = framesSent(by: p.central).filter { $0.channel == channel.remoteCID }
        XCTAssertEqual(kFrames.map(\.payload.count).max(), 100)
        // 1 + 98 (each one K-frame: 100 with the length), 99 (two), 2048 (21), 700 (8)
        XCTAssertEqual(kFrames.count, 1 + 1 + 2 + 21 + 8)
        XCTAssertEqual(Array(kFrames[0].payload), [0x01, 0x00] + sdus[0])
        // The peripheral gave 6 credits; 33 K-frames needed more, in LE Flow Control Credit.
        let credits = signaling(sentBy: p.peripheral, code: LESignalingPDU.Code.flowControlCreditIndication)
        let granted = credits.reduce(0) { sum, pdu in
            guard case let .flowControlCreditIndication(_, cid, n) = pdu else { return sum }
            XCTAssertEqual(cid, served[0].localCID)
            return sum + Int(n)
        }
        XCTAssertGreaterThanOrEqual(6 + granted, kFrames.count)
        XCTAssertEqual(served[0].receivedKFrames, kFrames.count)
    }

    func testUnpublishedSPSMIsRefusedOverTheAir() throws {
        let p = try connectedPair()
        let result = try open(p, psm: 0x0085)
        guard case .failure(.refused(.spsmNotSupported)) = result else { return XCTFail("\(result)") }
        let responses = signaling(sentBy: p.peripheral, code: LESignalingPDU.Code.leCreditBasedConnectionResponse)
        XCTAssertEqual(responses.map(\.encoded).map(\.spacedHex), ["15 01 0a 00 00 00 00 00 00 00 00 00 02 00"])
    }

    func testUnpublishStopsNewChannelsButKeepsOpenOnes() throws {
        let p = try connectedPair()
        var served: [L2CAPCreditBasedChannel] = []
        let psm = try p.peripheral.host.publishL2CAPChannel(psm: 0x00c0) { _, channel in served.append(channel) }
        XCTAssertEqual(p.peripheral.host.publishedL2CAPChannels, [0x00c0])
        let first = try open(p, psm: psm).get()
        p.peripheral.host.unpublishL2CAPChannel(psm)
        guard case .failure(.refused(.spsmNotSupported)) = try open(p, psm: psm) else { return XCTFail() }
        XCTAssertTrue(first.isOpen)
        XCTAssertTrue(served[0].isOpen)
    }

    func testPublishingChecksItsSPSM() throws {
        let p = try connectedPair()
        XCTAssertEqual(try p.peripheral.host.publishL2CAPChannel(psm: 0x0025) { _, _ in }, 0x0025)
        XCTAssertThrowsError(try p.peripheral.host.publishL2CAPChannel(psm: 0x0025) { _, _ in })
        XCTAssertThrowsError(try p.peripheral.host.publishL2CAPChannel(psm: 0x0100) { _, _ in })
        XCTAssertEqual(try p.peripheral.host.publishL2CAPChannel { _, _ in }, 0x0080)
        XCTAssertEqual(try p.peripheral.host.publishL2CAPChannel { _, _ in }, 0x0081)
    }

    func testEncryptionRequiredRefusesAnUnencryptedLink() throws {
        let p = try connectedPair()
        let psm = try p.peripheral.host.publishL2CAPChannel(requiresEncryption: true) { _, _ in }
        guard case .failure(.refused(.insufficientAuthentication)) = try open(p, psm: psm) else { return XCTFail() }
    }

    func testEncryptionRequiredAcceptsAfterPairing() throws {
        var secure = HostConfiguration()
        secure.security = SecuritySettings()
        let p = try connectedPair(peripheralConfiguration: secure, centralConfiguration: secure)
        let psm = try p.peripheral.host.publishL2CAPChannel(requiresEncryption: true) { _, _ in }
        _ = try p.lab.wait("pairing") { done in p.toPeripheral.pair(completion: done) }.get()
        XCTAssertTrue(p.lab.run(within: .seconds(2)) { p.toCentral.security.encrypted })
        let channel = try open(p, psm: psm).get()
        XCTAssertTrue(channel.isOpen)
    }

    func testPeripheralDisconnectsTheChannelAndBothEndsClose() throws {
        let p = try connectedPair()
        var served: L2CAPCreditBasedChannel?
        let psm = try p.peripheral.host.publishL2CAPChannel { _, channel in served = channel }
        let channel = try open(p, psm: psm).get()
        var closes: [String] = []
        channel.onClose = { closes.append("central \($0)") }
        served?.onClose = { closes.append("peripheral \($0)") }
        served?.disconnect()
        XCTAssertTrue(p.lab.run(within: .seconds(1)) { closes.count == 2 })
        XCTAssertEqual(closes, ["central \(L2CAPChannelCloseReason.peer)", "peripheral \(L2CAPChannelCloseReason.local)"])
        XCTAssertTrue(p.toPeripheral.l2capChannels.isEmpty)
        XCTAssertTrue(p.toCentral.l2capChannels.isEmpty)
        XCTAssertTrue(p.toPeripheral.isConnected, "the LE link stays")
    }

    func testLinkLossClosesTheChannelsOnBothSides() throws {
        let p = try connectedPair()
        var served: L2CAPCreditBasedChannel?
        let psm = try p.peripheral.host.publishL2CAPChannel { _, channel in served = channel }
        let channel = try open(p, psm: psm).get()
        var closes: [L2CAPChannelCloseReason] = []
        channel.onClose = { closes.append($0) }
        served?.onClose = { closes.append($0) }
        p.toPeripheral.disconnect()
        XCTAssertTrue(p.lab.run(within: .seconds(5)) { closes.count == 2 })
        XCTAssertEqual(Set(closes.map(\.description)), Set([L2CAPChannelCloseReason.linkClosed(.connectionTerminatedByLocalHost).description,
                                                             L2CAPChannelCloseReason.linkClosed(.remoteUserTerminatedConnection).description]))
    }

    func testSameSeedSameCaptureBytes() throws {
        func run() throws -> [UInt8] {
            let p = try connectedPair(seed: 21)
            let psm = try p.peripheral.host.publishL2CAPChannel { _, channel in channel.onSDU = { _ in } }
            let channel = try open(p, psm: psm).get()
            try channel.send(Array(repeating: 0x5a, count: 1500))
            p.lab.run(for: .seconds(2))
            return p.central.log.serialized + p.peripheral.log.serialized
        }
        XCTAssertEqual(try run(), try run())
    }
}
