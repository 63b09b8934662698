import BLELab
import BLERuntime
import BLEWire
import Foundation
import GAP
import HCI
import HostLink
import LabTiers
import XCTest

/// BLELab's LE credit based channels (Core 5.4 Vol 3 Part A 4.22–4.24, 3.4.3, 10.1) against
/// Bumble's (tools/bumble_peripheral.py --l2cap-psm): our central opens a channel to Bumble's
/// peripheral on RootCanal or the Bumble lab controllers, sends SDUs larger than Bumble's MPS,
/// and Bumble echoes each back, segmented to our MPS within the credits we grant. Both sides'
/// accounts are checked: the SDUs and K-frames on our HCI, and Bumble's JSON lines.
final class L2CAPInteropTests: TierTestCase {
    func testOurChannelToBumblesPSMThroughRootCanal() throws {
        try ourChannelToBumble(transport: "rootcanal")
    }

    func testOurChannelToBumblesPSMThroughBumbleControllers() throws {
        try ourChannelToBumble(transport: "bumble")
    }

    private func ourChannelToBumble(transport: String) throws {
        let backend = try Tiers.backend(transport)
        try backend.prepare(deviceCount: 2)
        defer { backend.shutDown() }
        let lab = try backend.makeLab(seed: 1)
        defer { lab.shutDown() }
        let central = try lab.addDevice("central")
        let peerEndpoint = backend.rootCanal?.endpoint ?? backend.bumble!.endpoints[1]
        // Bumble: PSM 0x0081, MTU 2048, MPS 100, 4 credits; it disconnects after the fourth SDU.
        let peripheral = try BumblePeer("bumble_peripheral.py", [peerEndpoint.argument, "--l2cap-psm", "0x81", "--l2cap-mtu", "2048",
                                                                 "--l2cap-mps", "100", "--l2cap-credits", "4",
                                                                 "--l2cap-disconnect-after", "4"], name: "bumble-l2cap")
        defer { print(peripheral.stop()) }
        try peripheral.waitFor("advertising")
        try lab.powerOn()

        var found: ScanReport?
        try lab.wait { done in
            central.host.startScanning(ScanConfiguration(services: [InteropTests.service], active: true),
                                       onReport: { if found == nil { found = $0 } }, completion: done)
        }.get()
        lab.runUntil("Bumble's advertising") { found != nil }
        try lab.wait { done in central.host.stopScanning(completion: done) }.get()
        let address = try XCTUnwrap(found?.address, peripheral.log)
        let connection = try lab.wait(within: .seconds(10), "the connection") { done in central.host.connect(to: address, completion: done) }.get()

        // A PSM Bumble does not serve: refused, "SPSM not supported" (0x0002).
        let refused = try lab.wait(within: .seconds(10), "the refusal") { done in connection.openL2CAPChannel(psm: 0x0085, completion: done) }
        guard case .failure(.refused(.spsmNotSupported)) = refused else { return XCTFail("\(refused)\n\(peripheral.log)") }

        // Ours: MTU 2048, MPS 64, 3 credits: Bumble must segment its echoes to 64 and wait for our credits.
        let channel = try lab.wait(within: .seconds(10), "the channel") { done in
            connection.openL2CAPChannel(psm: 0x0081, parameters: L2CAPChannelParameters(mtu: 2048, mps: 64, initialCredits: 3), completion: done)
        }.get()
        XCTAssertEqual([channel.remoteMTU, channel.remoteMPS, channel.sendCredits], [2048, 100, 4])
        var echoes: [[UInt8]] = []
        var closed: L2CAPChannelCloseReason?
        channel.onSDU = { echoes.append($0) }
        channel.onClose = { closed = $0 }
        let open = try peripheral.waitFor("l2cap-open")
        XCTAssertEqual(open["psm"] as? Int, 0x81)
        XCTAssertEqual(open["peer_cid"] as? Int, Int(channel.localCID))
        XCTAssertEqual(open["cid"] as? Int, Int(channel.remoteCID))
        // Bumble's names: `credits` are those we granted it, `peer_credits` those it granted us.
        XCTAssertEqual([open["peer_mtu"], open["peer_mps"], open["credits"], open["peer_credits"]].map { $0 as? Int }, [2048, 64, 3, 4])

        var random = SeededRandom(seed: 5, stream: "sdus")
        let sdus = [5, 98, 300, 2048].map { n in (0..<n).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        // One at a time: Bumble's channel.write() packs what is queued into SDUs up to our MTU,
        // so echoes of SDUs sent back to back would not keep their bounds.
        for (i, sdu) in sdus.enumerated() {
            try channel.send(sdu)
            lab.runUntil("echo \(i + 1)", seconds: 10) { echoes.count == i + 1 }
        }
        XCTAssertEqual(echoes, sdus, "Bumble echoed every SDU whole, in order")
        XCTAssertEqual(peripheral.lines.events("l2cap-sdu").map { $0["length"] as? Int }, sdus.map(\.count))

        // Bumble then disconnects the channel: we answer and close it; the LE link stays.
        lab.runUntil("Bumble's Disconnection Request", seconds: 10) { closed != nil }
        XCTAssertEqual(closed, .peer)
        XCTAssertTrue(connection.isConnected)
        _ = try peripheral.waitFor("l2cap-closed")

        // On our HCI: K-frames we sent no longer than Bumble's MPS, those we received no longer
        // than ours, and the credits we granted.
        var reassembler = L2CAPReassembler<Int>()
        var sentSizes: [Int] = [], receivedSizes: [Int] = [], creditsGranted = 0
        for packet in central.log.packets {
            guard case let .acl(acl)? = try? HCIPacket(h4: packet.frame) else { continue }
            let outbound = packet.direction == .hostToController
            guard let frame = reassembler.feed(acl.data, boundary: acl.boundary, stream: outbound ? 0 : 1).frame else { continue }
            if outbound, frame.channel == channel.remoteCID { sentSizes.append(frame.payload.count) }
            if !outbound, frame.channel == channel.localCID { receivedSizes.append(frame.payload.count) }
            if outbound, frame.channel == L2CAPChannelID.leSignaling,
               case let .flowControlCreditIndication(_, cid, credits)? = try? LESignalingPDU(decoding: frame.payload) {
                XCTAssertEqual(cid, channel.localCID)
                creditsGranted += Int(credits)
            }
        }
        XCTAssertEqual(sentSizes.max(), 100)
        XCTAssertEqual(receivedSizes.max(), 64)
        XCTAssertEqual(receivedSizes.reduce(0, +), sdus.reduce(0) { $0 + $1.count + 2 })
        XCTAssertGreaterThanOrEqual(3 + creditsGranted, receivedSizes.count, "Bumble sent within our credits")
        print("interop (\(transport)) L2CAP CoC → Bumble: sent K-frames \(sentSizes), received \(receivedSizes), granted \(creditsGranted) credits")
    }

    // MARK: Bumble's central, our published PSM

    func testBumblesChannelToOurPSMThroughRootCanal() throws {
        try bumbleChannelToUs(transport: "rootcanal")
    }

    func testBumblesChannelToOurPSMThroughBumbleControllers() throws {
        try bumbleChannelToUs(transport: "bumble")
    }

    /// Our host publishes PSM 0x0080 (MTU 1024, MPS 50, 2 credits) and echoes every SDU; Bumble's
    /// central opens a channel to it, sends SDUs up to our MTU (in K-frames of our MPS, within our
    /// credits), checks each echo, and disconnects the channel.
    private func bumbleChannelToUs(transport: String) throws {
        let backend = try Tiers.backend(transport)
        try backend.prepare(deviceCount: 2)
        defer { backend.shutDown() }
        let lab = try backend.makeLab(seed: 1)
        defer { lab.shutDown() }
        let ours = try lab.addDevice("ours")
        try lab.powerOn()
        var received: [[UInt8]] = []
        var served: [L2CAPCreditBasedChannel] = []
        var closes: [L2CAPChannelCloseReason] = []
        let psm = try ours.host.publishL2CAPChannel(parameters: L2CAPChannelParameters(mtu: 1024, mps: 50, initialCredits: 2)) { _, channel in
            served.append(channel)
            channel.onSDU = { sdu in
                received.append(sdu)
                try? channel.send(sdu)
            }
            channel.onClose = { closes.append($0) }
        }
        XCTAssertEqual(psm, 0x0080)
        try lab.wait(within: .seconds(5), "advertising") { done in
            ours.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "BLELabL2CAP"), interval: .milliseconds(50)), completion: done)
        }.get()

        let peerEndpoint = backend.rootCanal?.endpoint ?? backend.bumble!.endpoints[1]
        let sizes = [1, 48, 49, 300, 1024]
        let central = try BumblePeer("bumble_central.py", [
            peerEndpoint.argument, "--target", "BLELabL2CAP", "--l2cap-psm", "0x80", "--l2cap-mtu", "1500", "--l2cap-mps", "80",
            "--l2cap-credits", "3", "--timeout", "40",
        ] + sizes.flatMap { ["--l2cap-sdu", "\($0)"] }, name: "bumble-l2cap-central")
        defer { print(central.stop()) }
        let ticker = Ticker(lab.loop)
        lab.runUntil("Bumble's central to finish", seconds: 45) { !central.process.isRunning }
        ticker.stop()
        XCTAssertEqual(central.process.exit, .exited(0), central.log)

        let open = try XCTUnwrap(central.lines.first("l2cap-open"), central.log)
        XCTAssertEqual([open["peer_mtu"], open["peer_mps"], open["credits"]].map { $0 as? Int }, [1024, 50, 2])
        XCTAssertEqual(received.map(\.count), sizes)
        XCTAssertEqual(received, sizes.map { n in (0..<n).map { UInt8(truncatingIfNeeded: 7 * $0 + n) } }, "what Bumble sent")
        let echoes = central.lines.events("l2cap-sdu")
        XCTAssertEqual(echoes.map { $0["length"] as? Int }, sizes)
        XCTAssertEqual(echoes.map { $0["matches"] as? Bool }, Array(repeating: true, count: sizes.count), central.log)
        XCTAssertEqual(served.count, 1)
        XCTAssertEqual(closes.first, .peer, "Bumble disconnected the channel")
        XCTAssertEqual(served.first?.remoteMPS, 80)
        XCTAssertLessThanOrEqual(served.first?.receivedKFrames ?? .max, 2 + (served.first?.creditsGranted ?? 0))
    }
}
