import BLELab
import BLERuntime
import CoreBluetoothLab
import Foundation
import XCTest

/// Reads an input stream on `hasBytesAvailable` and writes `outgoing` to an output stream on
/// `hasSpaceAvailable`, as a stream-driven app does; records every event.
final class StreamEnd: NSObject, StreamDelegate {
    private(set) var received: [UInt8] = []
    private(set) var events: [String] = []
    var outgoing: [UInt8] = []
    private(set) var written = 0
    /// When false, `hasBytesAvailable` is recorded but nothing is read.
    var reads = true
    private(set) var zeroWrites = 0

    func attach(_ channel: CBL2CAPChannel) {
        channel.inputStream.delegate = self
        channel.outputStream.delegate = self
        channel.inputStream.open()
        channel.outputStream.open()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        let side = aStream is InputStream ? "in" : "out"
        switch eventCode {
        case .openCompleted: events.append("\(side) open")
        case .hasBytesAvailable:
            events.append("in bytes")
            if reads { drain(aStream as! InputStream) }
        case .hasSpaceAvailable:
            events.append("out space")
            pump(aStream as! OutputStream)
        case .endEncountered: events.append("\(side) end")
        case .errorOccurred: events.append("\(side) error")
        default: events.append("\(side) \(eventCode.rawValue)")
        }
    }

    func drain(_ input: InputStream) {
        var chunk = [UInt8](repeating: 0, count: 1000)
        while input.hasBytesAvailable {
            let n = input.read(&chunk, maxLength: chunk.count)
            guard n > 0 else { break }
            received += chunk[0..<n]
        }
    }

    func pump(_ output: OutputStream) {
        while written < outgoing.count, output.hasSpaceAvailable {
            let n = outgoing[written...].withUnsafeBufferPointer { output.write($0.baseAddress!, maxLength: $0.count) }
            if n == 0 { zeroWrites += 1 }
            guard n > 0 else { break }
            written += n
        }
    }

    func count(_ event: String) -> Int { events.filter { $0 == event }.count }
}

/// CoreBluetooth's L2CAP API on the lab's credit based channels: `publishL2CAPChannel`,
/// `openL2CAPChannel`, `CBL2CAPChannel` and its streams.
final class CBL2CAPChannelTests: LabTestCase {
    private var manager: CBPeripheralManager!
    private var managerRecorder: PeripheralManagerRecorder!
    private var central: CBCentralManager?
    private var centralRecorder: CentralRecorder!
    private var peripheral: CBPeripheral!

    override func tearDown() {
        manager = nil
        managerRecorder = nil
        central = nil
        centralRecorder = nil
        peripheral = nil
        super.tearDown()
    }

    /// A peripheral manager advertising "L2" that publishes one channel, and a central connected to it.
    private func setUpPair(encryption: Bool = false) throws -> CBL2CAPPSM {
        managerRecorder = PeripheralManagerRecorder()
        managerRecorder.onStateUpdate = { pm in
            guard pm.state == .poweredOn else { return }
            pm.publishL2CAPChannel(withEncryption: encryption)
            pm.startAdvertising([CBAdvertisementDataLocalNameKey: "L2"])
        }
        manager = lab.attach { CBPeripheralManager(delegate: managerRecorder, queue: nil) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.manager.isAdvertising && !self.managerRecorder.publishedPSMs.isEmpty })
        centralRecorder = CentralRecorder()
        let central = poweredCentral(centralRecorder)
        self.central = central
        peripheral = try discover("L2", with: central, centralRecorder)
        central.connect(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.peripheral.state == .connected })
        peripheral.delegate = centralRecorder
        return try XCTUnwrap(managerRecorder.publishedPSMs.first)
    }

    private func openChannels(_ psm: CBL2CAPPSM) throws -> (central: CBL2CAPChannel, peripheral: CBL2CAPChannel) {
        peripheral.openL2CAPChannel(psm)
        XCTAssertTrue(lab.run(within: .seconds(5)) { !self.centralRecorder.channels.isEmpty && !self.managerRecorder.channels.isEmpty })
        return (try XCTUnwrap(centralRecorder.channels.first), try XCTUnwrap(managerRecorder.channels.first))
    }

    func testPublishingTakesTheLowestFreeDynamicPSM() throws {
        let first = try setUpPair()
        XCTAssertEqual(first, 0x0080)
        manager.publishL2CAPChannel(withEncryption: false)
        manager.unpublishL2CAPChannel(0x0080)
        manager.unpublishL2CAPChannel(0x0090)
        lab.run(for: .milliseconds(10))
        XCTAssertEqual(managerRecorder.events.filter { $0.contains("published") },
                       ["published 0x0080", "published 0x0081", "unpublished 0x0080", "unpublished 0x0090 error 1"])
    }

    func testCentralOpensAChannelAndBothSidesGetIt() throws {
        let psm = try setUpPair()
        let (mine, theirs) = try openChannels(psm)
        XCTAssertEqual(mine.psm, psm)
        XCTAssertEqual(theirs.psm, psm)
        XCTAssertTrue(mine.peer === peripheral)
        XCTAssertTrue(theirs.peer is CBCentral)
        XCTAssertEqual(centralRecorder.events.last, "open 0x0080")
        XCTAssertEqual(managerRecorder.events.last, "open 0x0080")
    }

    func testStreamsCarryBytesBothWaysInOrder() throws {
        let psm = try setUpPair()
        let (mine, theirs) = try openChannels(psm)
        let app = StreamEnd(), accessory = StreamEnd()
        var random = SeededRandom(seed: 3, stream: "payload")
        app.outgoing = (0..<50_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        accessory.outgoing = Array("pong".utf8)
        app.attach(mine)
        accessory.attach(theirs)
        XCTAssertTrue(lab.run(within: .seconds(60)) { accessory.received.count == 50_000 && app.received.count == 4 })
        XCTAssertEqual(accessory.received, app.outgoing)
        XCTAssertEqual(app.received, Array("pong".utf8))
        XCTAssertEqual(Array(app.events.prefix(2)), ["in open", "out open"])
        XCTAssertGreaterThan(app.count("out space"), 1, "space came back as the credits did")
    }

    func testAnAppThatDoesNotReadStopsItsSender() throws {
        let psm = try setUpPair()
        let (mine, theirs) = try openChannels(psm)
        let app = StreamEnd(), accessory = StreamEnd()
        accessory.reads = false
        app.outgoing = Array(repeating: 0x42, count: 100_000)
        app.attach(mine)
        accessory.attach(theirs)
        lab.run(for: .seconds(30))
        // The accessory holds 16 credits' worth of SDUs unread; the central's send buffer filled
        // behind them and stays full: write takes nothing more.
        XCTAssertLessThan(app.written, 100_000)
        XCTAssertFalse(mine.outputStream.hasSpaceAvailable)
        XCTAssertEqual(accessory.count("in bytes"), 1, "told once until it reads")
        let stalledAt = app.written
        lab.run(for: .seconds(10))
        XCTAssertEqual(app.written, stalledAt)
        // Reading lets everything through.
        accessory.reads = true
        accessory.drain(theirs.inputStream)
        XCTAssertTrue(lab.run(within: .seconds(60)) { accessory.received.count == 100_000 })
    }

    func testOpeningAnUnpublishedPSMFails() throws {
        _ = try setUpPair()
        peripheral.openL2CAPChannel(0x00f0)
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.centralRecorder.count("open") == 1 })
        XCTAssertEqual(centralRecorder.events.last, "open nil error CBErrorDomain 0")
        XCTAssertEqual((centralRecorder.errors["open nil"] as NSError?)?.localizedDescription,
                       "the peer refused the channel: 0x0002 (Connection refused – SPSM not supported)")
        XCTAssertTrue(managerRecorder.channels.isEmpty)
    }

    func testEncryptionRequiredMakesTheCentralPairFirst() throws {
        let psm = try setUpPair(encryption: true)
        let (mine, _) = try openChannels(psm)
        XCTAssertEqual(mine.psm, psm)
        XCTAssertEqual(centralRecorder.count("open"), 1, "one didOpen, after the pairing")
        XCTAssertTrue(lab.device(of: central!)?.host.connections.values.first?.security.encrypted ?? false)
    }

    func testDisconnectingThePeripheralEndsTheAccessorysStreams() throws {
        let psm = try setUpPair()
        let (mine, theirs) = try openChannels(psm)
        let app = StreamEnd(), accessory = StreamEnd()
        app.attach(mine)
        accessory.attach(theirs)
        lab.run(for: .milliseconds(10))
        central?.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { accessory.count("in end") == 1 && accessory.count("out end") == 1 })
        XCTAssertEqual(theirs.inputStream.streamStatus, .atEnd)
        XCTAssertEqual(theirs.outputStream.write([1], maxLength: 1), -1)
    }

    func testClosingBothStreamsDisconnectsTheChannelAfterTheLastByte() throws {
        let psm = try setUpPair()
        let (mine, theirs) = try openChannels(psm)
        let app = StreamEnd(), accessory = StreamEnd()
        app.attach(mine)
        accessory.attach(theirs)
        lab.run(for: .milliseconds(10))
        let message = Array(repeating: UInt8(0x33), count: 5000)
        XCTAssertEqual(mine.outputStream.write(message, maxLength: message.count), 5000)
        mine.outputStream.close()
        mine.inputStream.close()
        XCTAssertTrue(lab.run(within: .seconds(10)) { accessory.count("in end") == 1 })
        XCTAssertEqual(accessory.received, message, "everything written before the close arrived")
        XCTAssertEqual(peripheral.state, .connected, "the LE link stays")
    }

    func testReleasingTheChannelObjectClosesIt() throws {
        let psm = try setUpPair()
        centralRecorder = nil   // the app drops every reference
        var recorder: CentralRecorder? = CentralRecorder()
        peripheral.delegate = recorder
        var opened = false
        recorder?.onOpen = { _ in opened = true }
        peripheral.openL2CAPChannel(psm)
        XCTAssertTrue(lab.run(within: .seconds(5)) { opened && !self.managerRecorder.channels.isEmpty })
        let accessory = StreamEnd()
        accessory.attach(managerRecorder.channels[0])
        lab.run(for: .milliseconds(10))
        XCTAssertEqual(accessory.count("in end"), 0)
        // Only the recorder holds the central's channel; drop it.
        recorder = nil
        XCTAssertTrue(lab.run(within: .seconds(5)) { accessory.count("in end") == 1 })
    }

    func testOpeningWhileDisconnectedIsMisuse() throws {
        _ = try setUpPair()
        central?.cancelPeripheralConnection(peripheral)
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.peripheral.state == .disconnected })
        peripheral.openL2CAPChannel(0x0080)
        lab.run(for: .milliseconds(10))
        XCTAssertTrue(lab.warnings.last?.contains("API MISUSE") ?? false)
        XCTAssertEqual(centralRecorder.count("open"), 0)
    }

    func testAResetUnpublishesThePSMs() throws {
        _ = try setUpPair()
        XCTAssertEqual(lab.device(of: manager)?.host.publishedL2CAPChannels, [0x0080])
        lab.reset(manager)
        XCTAssertTrue(lab.run(within: .seconds(5)) { self.managerRecorder.count("published") == 2 }, "\(managerRecorder.events)")
        XCTAssertEqual(lab.device(of: manager)?.host.publishedL2CAPChannels, [0x0080], "published again by the app on power-on")
        XCTAssertEqual(managerRecorder.publishedPSMs, [0x0080, 0x0080], "the same PSM, free again")
    }
}
