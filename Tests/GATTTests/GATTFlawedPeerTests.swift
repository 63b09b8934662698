import XCTest
import BLEWire
import BLERuntime
import ATT
@testable import GATT

/// A GATT client and server meeting flawed peers: Service Changed and re-discovery (Core 5.4
/// Vol 3 Part G 7.1), notifications for undiscovered handles, and random or damaged PDUs fed to
/// both roles (every one a typed error or an answer; nothing crashes or hangs).
final class GATTFlawedPeerTests: XCTestCase {
    func testServiceChangedIsReportedWithItsRangeAndRediscoverySeesTheNewDatabase() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        let before = try XCTUnwrap(link.await { link.client.discoverAll(completion: $0) }?.get())
        XCTAssertEqual(before.map(\.uuid), [0x1800, 0x1801, 0xFFE0, 0x180D])
        XCTAssertEqual(link.client.serviceChangedValueHandle, 0x0008)
        _ = link.await { link.client.write([0x02, 0x00], handle: 0x0009, completion: $0) }
        var ranges: [ATTHandleRange] = []
        link.client.onServiceChanged = { ranges.append($0) }

        let added = try link.server.addService(GATTService(uuid: 0x180F, characteristics: [
            GATTCharacteristic(uuid: 0x2A19, properties: [.read, .notify], value: [100]),
        ]))
        XCTAssertEqual(added.range, ATTHandleRange(start: 0x0012, end: 0x0015))
        link.server.indicateServiceChanged(added.range)
        link.loop.runUntilIdle()
        // Handle Value Indication of 0x0008 with the Affected Attribute Handle Range 0x0012..0x0015,
        // and the central's Handle Value Confirmation.
        XCTAssertEqual(link.peripheralSent.last?.spacedHex, "1d 08 00 12 00 15 00")
        XCTAssertEqual(link.centralSent.last?.spacedHex, "1e")
        XCTAssertEqual(ranges, [added.range])

        let found = try XCTUnwrap(link.await { link.client.rediscover(added.range, completion: $0) }?.get())
        XCTAssertEqual(found.map(\.uuid), [0x180F])
        XCTAssertEqual(found.first?.characteristics.first?.configurationHandle, 0x0015)
        XCTAssertEqual(link.client.services.map(\.uuid), [0x1800, 0x1801, 0xFFE0, 0x180D, 0x180F])
        XCTAssertEqual(link.centralSent.last { $0.first == 0x10 && $0[1...2] == [0x12, 0x00] }?.spacedHex,
                       "10 12 00 15 00 00 28", "Read By Group Type limited to the range")
        XCTAssertEqual(link.client.characteristic(valueHandle: 0x0014)?.uuid, 0x2A19)

        // Removing FFE0 (0x000A..0x000D) and saying so drops it from the client's view.
        XCTAssertNotNil(link.server.removeService(at: 0x000A))
        link.server.indicateServiceChanged(ATTHandleRange(start: 0x000A, end: 0x000D))
        link.loop.runUntilIdle()
        XCTAssertEqual(ranges.last, ATTHandleRange(start: 0x000A, end: 0x000D))
        let none = try XCTUnwrap(link.await { link.client.rediscover(ATTHandleRange(start: 0x000A, end: 0x000D), completion: $0) }?.get())
        XCTAssertEqual(none, [])
        XCTAssertEqual(link.client.services.map(\.uuid), [0x1800, 0x1801, 0x180D, 0x180F])
        XCTAssertNil(link.client.characteristic(valueHandle: 0x000C))
    }

    func testAServiceChangedValueOfTheWrongLengthIsAViolationNotARange() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        _ = link.await { link.client.discoverAll(completion: $0) }
        var ranges: [ATTHandleRange] = []
        var violations: [ATTProtocolViolation] = []
        link.client.onServiceChanged = { ranges.append($0) }
        link.central.observeViolations { violations.append($0.violation) }
        link.peripheral.sendIndication(handle: 0x0008, value: [0x0A, 0x00])
        link.loop.runUntilIdle()
        XCTAssertEqual(ranges, [])
        XCTAssertEqual(violations.count, 1)
        XCTAssertEqual(link.centralSent.last?.spacedHex, "1e", "confirmed all the same (Part F, 3.4.7.2)")
    }

    func testNotificationsForUndiscoveredHandlesReachNoCharacteristic() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        _ = link.await { link.client.discoverAll(serviceUUIDs: [0xFFE0], completion: $0) }
        var received: [GATTNotification] = []
        link.client.onNotification = { received.append($0) }
        link.peripheral.sendNotification(handle: 0x00F0, value: [0xDE])
        link.peripheral.sendIndication(handle: 0x0010, value: [0x00, 0x48])   // 2A37: not discovered here
        link.loop.runUntilIdle()
        XCTAssertEqual(received.map(\.handle), [0x00F0, 0x0010])
        XCTAssertNil(link.client.characteristic(valueHandle: 0x00F0))
        XCTAssertNil(link.client.characteristic(valueHandle: 0x0010))
        XCTAssertEqual(link.client.characteristic(valueHandle: 0x000C)?.uuid, 0xFFE1)
        XCTAssertEqual(link.centralSent.last?.spacedHex, "1e")
        XCTAssertTrue(link.central.isOpen)
    }

    // MARK: Fuzz

    /// Plausible response octets to damage: every response opcode with a few parameters.
    static let responseSeeds: [[UInt8]] = [
        [0x01, 0x10, 0x01, 0x00, 0x0A], [0x03, 0xF7, 0x00], [0x05, 0x01, 0x03, 0x00, 0x02, 0x29],
        [0x07, 0x01, 0x00, 0x05, 0x00], [0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A],
        [0x0B, 0x41, 0x42], [0x0D, 0x43], [0x0F, 0x01, 0x02],
        [0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18], [0x13], [0x17, 0x0C, 0x00, 0x00, 0x00, 0x41], [0x19],
        [0x1B, 0x0C, 0x00, 0x01], [0x1D, 0x08, 0x00, 0x01, 0x00, 0xFF, 0xFF], [0x1E], [0x52, 0x0C, 0x00],
    ]

    static func damaged(_ random: inout SeededRandom) -> [UInt8] {
        switch random.int(in: 0...4) {
        case 0:   // random octets
            return (0..<random.int(in: 0...24)).map { _ in UInt8(random.int(in: 0...255)) }
        case 1:   // a response cut short
            let seed = responseSeeds[Int(random.int(in: 0...Int64(responseSeeds.count - 1)))]
            return Array(seed.prefix(Int(random.int(in: 0...Int64(seed.count)))))
        case 2:   // a response with octets added
            let seed = responseSeeds[Int(random.int(in: 0...Int64(responseSeeds.count - 1)))]
            return seed + (0..<random.int(in: 1...6)).map { _ in UInt8(random.int(in: 0...255)) }
        case 3:   // another response's opcode over these parameters
            var seed = responseSeeds[Int(random.int(in: 0...Int64(responseSeeds.count - 1)))]
            seed[0] = responseSeeds[Int(random.int(in: 0...Int64(responseSeeds.count - 1)))][0]
            return seed
        default:  // a well-formed one
            return responseSeeds[Int(random.int(in: 0...Int64(responseSeeds.count - 1)))]
        }
    }

    func testAClientFedRandomAndDamagedResponsesFinishesEveryProcedureOnce() {
        var random = SeededRandom(seed: 0xF1A5, stream: "gatt-client-fuzz")
        for round in 0..<300 {
            let loop = VirtualEventLoop()
            var sent: [[UInt8]] = []
            let bearer = ATTBearer(loop: loop) { sent.append($0) }
            let client = GATTClient(bearer: bearer)
            var completions = [Int](repeating: 0, count: 5)
            client.discoverAll { _ in completions[0] += 1 }
            client.read(handle: 0x0003) { _ in completions[1] += 1 }
            client.write(Array(repeating: 0x41, count: 40), handle: 0x000C) { _ in completions[2] += 1 }
            client.readMultiple(handles: [0x0003, 0x0005]) { _ in completions[3] += 1 }
            client.rediscover(ATTHandleRange(start: 0x000A, end: 0x0020)) { _ in completions[4] += 1 }
            for _ in 0..<random.int(in: 1...40) {
                bearer.receive(Self.damaged(&random))
                loop.advance(by: .milliseconds(random.int(in: 0...50)))
            }
            // Whatever arrived, the 30 s transaction timeout (Part F, 3.3.3) ends what is left.
            loop.advance(by: .seconds(31))
            XCTAssertEqual(completions, [1, 1, 1, 1, 1], "round \(round)")
            XCTAssertFalse(bearer.hasOutstandingRequest, "round \(round)")
            XCTAssertTrue(sent.allSatisfy { $0.count <= bearer.mtu }, "round \(round)")
        }
    }

    func testAServerFedRandomAndDamagedRequestsAnswersEachRequestOnceInOrder() throws {
        var random = SeededRandom(seed: 0x5E4F, stream: "gatt-server-fuzz")
        let requestSeeds: [[UInt8]] = [
            [0x02, 0xF7, 0x00], [0x04, 0x01, 0x00, 0xFF, 0xFF], [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0xE0, 0xFF],
            [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28], [0x0A, 0x0C, 0x00], [0x0C, 0x0C, 0x00, 0x02, 0x00],
            [0x0E, 0x03, 0x00, 0x0C, 0x00], [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], [0x12, 0x0D, 0x00, 0x01, 0x00],
            [0x16, 0x0C, 0x00, 0x00, 0x00, 0x41], [0x18, 0x01], [0x52, 0x0C, 0x00, 0x41], [0xD2, 0x0C, 0x00],
        ]
        for round in 0..<200 {
            let h = ServerHarness(database: try makeHM10Database())
            var requests: [ATTOpcode] = []
            for _ in 0..<random.int(in: 1...30) {
                var pdu: [UInt8]
                switch random.int(in: 0...3) {
                case 0: pdu = (0..<random.int(in: 0...24)).map { _ in UInt8(random.int(in: 0...255)) }
                case 1:
                    let seed = requestSeeds[Int(random.int(in: 0...Int64(requestSeeds.count - 1)))]
                    pdu = Array(seed.prefix(Int(random.int(in: 1...Int64(seed.count)))))
                case 2:
                    pdu = requestSeeds[Int(random.int(in: 0...Int64(requestSeeds.count - 1)))]
                    for i in 1..<pdu.count where random.int(in: 0...3) == 0 { pdu[i] = UInt8(random.int(in: 0...255)) }
                default: pdu = requestSeeds[Int(random.int(in: 0...Int64(requestSeeds.count - 1)))]
                }
                if let first = pdu.first, ATTOpcode(first).method == .request { requests.append(ATTOpcode(first)) }
                h.bearer.receive(pdu)
                h.loop.runUntilIdle()
            }
            let answers = h.sent.filter { ATTOpcode($0[0]).method == .response }
            XCTAssertEqual(answers.count, requests.count, "round \(round): one answer per request")
            for (request, answer) in zip(requests, answers) {
                if answer[0] == ATTOpcode.errorResponse.rawValue {
                    XCTAssertEqual(answer.count, 5, "round \(round)")
                    XCTAssertEqual(answer[1], request.rawValue, "round \(round): the Error Response names its request")
                } else {
                    XCTAssertEqual(answer[0], request.responseOpcode?.rawValue, "round \(round)")
                }
                XCTAssertNoThrow(try ATTPDU(decoding: answer), "round \(round): the server's own answers decode")
            }
            XCTAssertTrue(h.bearer.isOpen, "round \(round)")
        }
    }
}
