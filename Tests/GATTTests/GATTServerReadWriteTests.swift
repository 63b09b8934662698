import ATT
import BLEWire
@testable import GATT
import WireTestSupport
import XCTest

/// Reads, writes and property enforcement, octet for octet.
final class GATTServerReadWriteTests: XCTestCase {
    /// FFF0: FFF1 read+write, FFF2 write only, FFF3 read only 60 octets, FFF4 write-without-response only.
    func makeDatabase() throws -> GATTDatabase {
        try GATTDatabase(services: [GATTService(uuid: 0xFFF0, characteristics: [
            GATTCharacteristic(uuid: 0xFFF1, properties: [.read, .write], value: Array("init".utf8)),       // 0x0003
            GATTCharacteristic(uuid: 0xFFF2, properties: [.write]),                                          // 0x0005
            GATTCharacteristic(uuid: 0xFFF3, properties: [.read], value: Array(0x30...0x6B)),               // 0x0007
            GATTCharacteristic(uuid: 0xFFF4, properties: [.writeWithoutResponse], value: [0xAA],            // 0x0009
                               descriptors: [.userDescription("cmd"),                                        // 0x000A
                                             GATTDescriptor(uuid: 0x2904, value: [1], isWritable: true)]),  // 0x000B
        ])], includeStandardServices: false)
    }

    // MARK: Reads

    func testReadAndReadErrors() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("0a 03 00"), ["0b 69 6e 69 74"])      // "init"
        XCTAssertEqual(h.exchange("0a 02 00"), ["0b 0a 03 00 f1 ff"])   // declarations are readable
        XCTAssertEqual(h.exchange("0a 05 00"), ["01 0a 05 00 02"])      // no `read`: Read Not Permitted
        XCTAssertEqual(h.exchange("0a 0c 00"), ["01 0a 0c 00 01"])      // no such handle: Invalid Handle
        XCTAssertEqual(h.exchange("0a 00 00"), ["01 0a 00 00 01"])
        XCTAssertEqual(h.exchange("0a 0a 00"), ["0b 63 6d 64"])         // User Description
        // A value longer than ATT_MTU - 1 is cut to 22 octets.
        XCTAssertEqual(h.exchange("0a 07 00"), ["0b " + Array(0x30...0x45).spacedHex])
    }

    func testReadBlob() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("0c 07 00 16 00"), ["0d " + Array(0x46...0x5B).spacedHex])
        XCTAssertEqual(h.exchange("0c 07 00 2c 00"), ["0d " + Array(0x5C...0x6B).spacedHex])
        XCTAssertEqual(h.exchange("0c 07 00 3c 00"), ["0d"])               // offset == length: nothing left
        XCTAssertEqual(h.exchange("0c 07 00 3d 00"), ["01 0c 07 00 07"])   // past the end: Invalid Offset
        XCTAssertEqual(h.exchange("0c 05 00 00 00"), ["01 0c 05 00 02"])
        XCTAssertEqual(h.exchange("0c 0c 00 00 00"), ["01 0c 0c 00 01"])
    }

    func testReadMultiple() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("0e 03 00 0a 00"), ["0f 69 6e 69 74 63 6d 64"])  // "init" + "cmd"
        XCTAssertEqual(h.exchange("0e 03 00 05 00 0c 00"), ["01 0e 05 00 02"])     // first failure wins
        XCTAssertEqual(h.exchange("0e 03 00 0c 00"), ["01 0e 0c 00 01"])
    }

    // MARK: Property enforcement

    func testWriteRequestWithoutWriteIsWriteNotPermittedAndChangesNothing() throws {
        let h = ServerHarness(database: try makeDatabase())
        var events: [GATTWriteEvent] = []
        h.server.onWrite = { events.append($0) }
        XCTAssertEqual(h.exchange("12 09 00 72 65 71"), ["01 12 09 00 03"])  // FFF4 has only write-without-response
        XCTAssertEqual(h.exchange("12 07 00 72 65 71"), ["01 12 07 00 03"])  // FFF3 is read-only
        XCTAssertEqual(h.server.value(at: 0x0009), [0xAA])
        XCTAssertEqual(h.server.value(at: 0x0007), Array(0x30...0x6B))
        XCTAssertTrue(events.isEmpty)
    }

    func testWriteCommandWithoutWriteWithoutResponseIsDroppedSilently() throws {
        let h = ServerHarness(database: try makeDatabase())
        var events: [GATTWriteEvent] = []
        h.server.onWrite = { events.append($0) }
        XCTAssertEqual(h.exchange("52 03 00 63 6d 64"), [])  // FFF1 has write but not write-without-response
        XCTAssertEqual(h.exchange("52 02 00 63 6d 64"), [])  // a declaration
        XCTAssertEqual(h.exchange("52 0c 00 63 6d 64"), [])  // no such handle
        XCTAssertEqual(h.exchange("52 0a 00 63 6d 64"), [])  // read-only descriptor
        XCTAssertEqual(h.sent, [], "a server never answers a command")
        XCTAssertEqual(h.server.value(at: 0x0003), Array("init".utf8))
        XCTAssertTrue(events.isEmpty)
        // With the property, it is applied, still without an answer.
        XCTAssertEqual(h.exchange("52 09 00 63 6d 64"), [])
        XCTAssertEqual(h.server.value(at: 0x0009), Array("cmd".utf8))
        XCTAssertEqual(events.map(\.method), [.command])
        XCTAssertEqual(events.map(\.uuid), [0xFFF4])
    }

    func testWriteRequest() throws {
        let h = ServerHarness(database: try makeDatabase())
        var events: [GATTWriteEvent] = []
        h.server.onWrite = { events.append($0) }
        XCTAssertEqual(h.exchange("12 03 00 72 65 71"), ["13"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("req".utf8))
        XCTAssertEqual(h.exchange("12 05 00"), ["13"])  // an empty value is a value
        XCTAssertEqual(h.exchange("12 0b 00 02"), ["13"])  // writable descriptor
        XCTAssertEqual(events.map { "\(hex4($0.handle)) \($0.method) \($0.value.spacedHex)" },
                       ["0x0003 request 72 65 71", "0x0005 request ", "0x000b request 02"])
        XCTAssertEqual(h.exchange("12 02 00 00"), ["01 12 02 00 03"])  // declarations are read-only
        XCTAssertEqual(h.exchange("12 01 00 00"), ["01 12 01 00 03"])
        XCTAssertEqual(h.exchange("12 0a 00 00"), ["01 12 0a 00 03"])  // read-only descriptor
        XCTAssertEqual(h.exchange("12 0c 00 00"), ["01 12 0c 00 01"])  // Invalid Handle
    }

    func testWriteRequestOverMaximumLengthIsRefused() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("02 05 02"), ["03 05 02"])  // ATT_MTU 517
        let long = Array(repeating: UInt8(0x55), count: 513)
        h.bearer.receive([0x12, 0x03, 0x00] + long)
        h.loop.runUntilIdle()
        XCTAssertEqual(h.sent.last?.spacedHex, "01 12 03 00 0d")
    }

    // MARK: Client Characteristic Configuration

    func testCCCDWritesAreCheckedAndKeptPerConnection() throws {
        let h = ServerHarness(database: try makeHM10Database())
        var events: [GATTSubscriptionEvent] = []
        h.server.onSubscriptionChange = { events.append($0) }
        XCTAssertEqual(h.exchange("0a 0d 00"), ["0b 00 00"])
        XCTAssertEqual(h.exchange("12 0d 00 01"), ["01 12 0d 00 0d"])        // one octet: Invalid Attribute Value Length
        XCTAssertEqual(h.exchange("12 0d 00 01 00 00"), ["01 12 0d 00 0d"])  // three octets
        XCTAssertEqual(h.exchange("12 0d 00 02 00"), ["01 12 0d 00 13"])     // indicate on a notify-only characteristic
        XCTAssertEqual(h.exchange("12 09 00 01 00"), ["01 12 09 00 13"])     // notify on Service Changed (indicate only)
        XCTAssertEqual(h.exchange("12 0d 00 01 00"), ["13"])
        XCTAssertEqual(h.exchange("0a 0d 00"), ["0b 01 00"])
        XCTAssertEqual(h.exchange("12 0d 00 01 00"), ["13"])                 // unchanged: no second event
        XCTAssertEqual(h.exchange("12 0d 00 00 00"), ["13"])
        XCTAssertEqual(events.map { "\(hex4($0.valueHandle)) \($0.characteristic) \($0.old)->\($0.new)" },
                       ["0x000c FFE1 none->notify", "0x000c FFE1 notify->none"])
        XCTAssertTrue(events[0].isSubscribe)
        XCTAssertTrue(events[1].isUnsubscribe)
        // Another connection has its own configuration.
        let other = ATTBearer(loop: h.loop) { _ in }
        let otherConnection = h.server.attach(other)
        XCTAssertEqual(h.exchange("12 0d 00 01 00"), ["13"])
        XCTAssertEqual(h.connection?.configuration(forValueHandle: 0x000C), .notification)
        XCTAssertEqual(otherConnection.configuration(forValueHandle: 0x000C), [])
    }

    // MARK: Queued writes

    func testPrepareAndExecuteWrite() throws {
        let h = ServerHarness(database: try makeDatabase())
        var events: [GATTWriteEvent] = []
        h.server.onWrite = { events.append($0) }
        XCTAssertEqual(h.exchange("16 03 00 00 00 41 42 43"), ["17 03 00 00 00 41 42 43"])
        XCTAssertEqual(h.exchange("16 03 00 03 00 44 45"), ["17 03 00 03 00 44 45"])
        XCTAssertEqual(h.exchange("16 05 00 00 00 5a"), ["17 05 00 00 00 5a"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("init".utf8), "nothing is written before Execute Write")
        XCTAssertEqual(h.connection?.preparedWriteCount, 3)
        XCTAssertEqual(h.exchange("18 01"), ["19"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("ABCDE".utf8))
        XCTAssertEqual(h.server.value(at: 0x0005), [0x5A])
        XCTAssertEqual(events.map(\.method), [.executeWrite, .executeWrite])
        XCTAssertEqual(h.connection?.preparedWriteCount, 0)
        XCTAssertEqual(h.exchange("18 01"), ["19"])  // an empty queue executes to nothing
    }

    func testPrepareWriteChecksPermissionsAtOnce() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("16 07 00 00 00 41"), ["01 16 07 00 03"])  // read-only
        XCTAssertEqual(h.exchange("16 09 00 00 00 41"), ["01 16 09 00 03"])  // write-without-response only
        XCTAssertEqual(h.exchange("16 02 00 00 00 41"), ["01 16 02 00 03"])  // declaration
        XCTAssertEqual(h.exchange("16 0c 00 00 00 41"), ["01 16 0c 00 01"])  // no such handle
        XCTAssertEqual(h.connection?.preparedWriteCount, 0)
    }

    func testExecuteWriteCancelDiscardsTheQueue() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("16 03 00 00 00 41 42 43"), ["17 03 00 00 00 41 42 43"])
        XCTAssertEqual(h.exchange("18 00"), ["19"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("init".utf8))
        XCTAssertEqual(h.exchange("18 01"), ["19"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("init".utf8))
    }

    func testPrepareQueueFull() throws {
        let h = ServerHarness(database: try makeDatabase())
        h.server.prepareQueueLimit = 2
        XCTAssertEqual(h.exchange("16 03 00 00 00 41"), ["17 03 00 00 00 41"])
        XCTAssertEqual(h.exchange("16 03 00 01 00 42"), ["17 03 00 01 00 42"])
        XCTAssertEqual(h.exchange("16 03 00 02 00 43"), ["01 16 03 00 09"])  // Prepare Queue Full
        XCTAssertEqual(h.exchange("18 01"), ["19"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("AB".utf8))
    }

    func testExecuteWriteChecksOffsetsAndLengthsAndWritesNothingOnError() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("16 05 00 00 00 5a"), ["17 05 00 00 00 5a"])
        XCTAssertEqual(h.exchange("16 03 00 05 00 41"), ["17 03 00 05 00 41"])  // "init" is 4 octets: offset 5 is past it
        XCTAssertEqual(h.exchange("18 01"), ["01 18 03 00 07"])                 // Invalid Offset, naming the handle
        XCTAssertEqual(h.server.value(at: 0x0005), [], "no part of a failed Execute Write is applied")
        XCTAssertEqual(h.connection?.preparedWriteCount, 0)

        XCTAssertEqual(h.exchange("02 05 02"), ["03 05 02"])  // ATT_MTU 517
        let part = Array(repeating: UInt8(0x55), count: 500)
        h.bearer.receive([0x16, 0x03, 0x00, 0x00, 0x00] + part)
        h.loop.runUntilIdle()
        h.bearer.receive([0x16, 0x03, 0x00, 0xF4, 0x01] + part)  // offset 500: 1000 octets in all
        h.loop.runUntilIdle()
        XCTAssertEqual(h.exchange("18 01"), ["01 18 03 00 0d"])  // Invalid Attribute Value Length
        XCTAssertEqual(h.server.value(at: 0x0003), Array("init".utf8))
    }

    func testMalformedUnknownAndUnsupportedPDUs() throws {
        let h = ServerHarness(database: try makeDatabase())
        XCTAssertEqual(h.exchange("0a 03"), ["01 0a 00 00 04"])                 // truncated Read Request: Invalid PDU
        XCTAssertEqual(h.exchange("08 01 00 ff ff 03"), ["01 08 01 00 04"])     // 1-octet type: Invalid PDU, naming the start handle
        XCTAssertEqual(h.exchange("18 02"), ["01 18 00 00 04"])                 // reserved Execute Write flags
        XCTAssertEqual(h.exchange("20 03 00 07 00"), ["01 20 00 00 06"])        // Read Multiple Variable: Request Not Supported
        XCTAssertEqual(h.exchange("d2 09 00 41 01 02 03 04 05 06 07 08 09 0a 0b 0c"), [])  // Signed Write: ignored
        XCTAssertEqual(h.exchange("7e 09 00"), [])                              // unknown command: ignored
        XCTAssertEqual(h.exchange("13"), [])                                    // a response to nothing: dropped
        XCTAssertEqual(h.server.value(at: 0x0009), [0xAA])
        XCTAssertEqual(h.exchange("0a 03 00"), ["0b 69 6e 69 74"], "the server carries on")
    }

    // MARK: Handlers

    func testReadHandlerAnswersLaterOrWithAnError() throws {
        let h = ServerHarness(database: try makeDatabase())
        var requests: [GATTReadRequest] = []
        h.server.setReadHandler({ request, respond in
            requests.append(request)
            h.loop.schedule(after: .milliseconds(100)) { respond(.value(Array("late".utf8))) }
        }, forHandle: 0x0003)
        h.server.readHandler = { _, respond in respond(.error(.unlikelyError)) }
        h.bearer.receive(bytes("0a 03 00"))
        h.loop.advance(by: .milliseconds(99))
        XCTAssertEqual(h.sent, [])
        h.loop.advance(by: .milliseconds(1))
        XCTAssertEqual(h.sent.map(\.spacedHex), ["0b 6c 61 74 65"])
        XCTAssertEqual(requests.map(\.opcode), [.readRequest])
        XCTAssertEqual(h.exchange("0a 07 00"), ["01 0a 07 00 0e"])  // server-wide handler: Unlikely Error
        XCTAssertEqual(h.exchange("0a 05 00"), ["01 0a 05 00 02"], "properties are enforced before any handler")
        XCTAssertEqual(h.exchange("0a 02 00"), ["0b 0a 03 00 f1 ff"], "declarations never reach a handler")
    }

    func testWriteHandlerDecidesWhetherTheValueIsStored() throws {
        let h = ServerHarness(database: try makeDatabase())
        var events: [GATTWriteEvent] = []
        h.server.onWrite = { events.append($0) }
        var seen: [GATTWriteMethod] = []
        h.server.writeHandler = { request, respond in
            seen.append(request.method)
            respond(request.value == [0x00] ? .error(ATTErrorCode(0x80)) : .accept)
            respond(.error(.unlikelyError))  // only the first answer counts
        }
        XCTAssertEqual(h.exchange("12 03 00 00"), ["01 12 03 00 80"])
        XCTAssertEqual(h.server.value(at: 0x0003), Array("init".utf8))
        XCTAssertEqual(h.exchange("12 03 00 01"), ["13"])
        XCTAssertEqual(h.server.value(at: 0x0003), [0x01])
        XCTAssertEqual(h.exchange("52 09 00 00"), [], "an error for a command is not sent")
        XCTAssertEqual(h.server.value(at: 0x0009), [0xAA])
        XCTAssertEqual(seen, [.request, .request, .command])
        XCTAssertEqual(events.map(\.value), [[0x01]])
    }

    func testReadEvents() throws {
        let h = ServerHarness(database: try makeDatabase())
        var events: [GATTReadEvent] = []
        h.server.onRead = { events.append($0) }
        h.exchange("0a 03 00")
        h.exchange("0c 07 00 16 00")
        h.exchange("0a 02 00")  // declaration: not an app-visible read
        XCTAssertEqual(events.map { "\(hex4($0.handle)) \($0.opcode) \($0.offset)" },
                       ["0x0003 Read Request 0", "0x0007 Read Blob Request 22"])
    }
}
