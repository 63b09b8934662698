import XCTest
import BLEWire
import BLERuntime
import ATT
@testable import GATT

/// A GATT client and server on two bearers wired back to back through a virtual loop.
final class GATTClientServerTests: XCTestCase {
    func testFullDiscoveryMatchesTheDatabase() throws {
        let db = try makeHM10Database()
        let link = BackToBackLink(database: db)
        let result = try XCTUnwrap(link.await { link.client.discoverAll(completion: $0) })
        let services = try result.get()
        XCTAssertEqual(services.map(\.uuid), db.services.map(\.uuid))
        XCTAssertEqual(services.map(\.range), db.services.map(\.range))
        for (remote, local) in zip(services, db.services) {
            XCTAssertEqual(remote.characteristics.map(\.uuid), local.characteristics.map(\.uuid))
            XCTAssertEqual(remote.characteristics.map(\.properties), local.characteristics.map(\.properties))
            XCTAssertEqual(remote.characteristics.map(\.declarationHandle), local.characteristics.map(\.declarationHandle))
            XCTAssertEqual(remote.characteristics.map(\.valueHandle), local.characteristics.map(\.valueHandle))
            XCTAssertEqual(remote.characteristics.map(\.endHandle), local.characteristics.map(\.endHandle))
            XCTAssertEqual(remote.characteristics.map { $0.descriptors.map { ATTHandleUUID(handle: $0.handle, uuid: $0.uuid) } },
                           local.characteristics.map(\.descriptors))
            XCTAssertEqual(remote.characteristics.map(\.configurationHandle), local.characteristics.map(\.configurationHandle))
        }
        XCTAssertEqual(link.client.services, services)
        // The procedure on the wire, as Part G 4.4.1, 4.6.1 and 4.7.1 describe it.
        XCTAssertEqual(link.centralSent.map { ATTPDU.describe($0) }, [
            "Read By Group Type Request handles 0x0001..0xffff type 2800",
            "Read By Group Type Request handles 0x000e..0xffff type 2800",
            "Read By Group Type Request handles 0x0012..0xffff type 2800",
            "Read By Type Request handles 0x0001..0x0005 type 2803",
            "Read By Type Request handles 0x0005..0x0005 type 2803",
            "Read By Type Request handles 0x0006..0x0009 type 2803",
            "Read By Type Request handles 0x0008..0x0009 type 2803",
            "Find Information Request handles 0x0009..0x0009",
            "Read By Type Request handles 0x000a..0x000d type 2803",
            "Read By Type Request handles 0x000c..0x000d type 2803",
            "Find Information Request handles 0x000d..0x000d",
            "Read By Type Request handles 0x000e..0x0011 type 2803",
            "Read By Type Request handles 0x0010..0x0011 type 2803",
            "Find Information Request handles 0x0011..0x0011",
        ])
    }

    func testDiscoverServiceByUUID() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        let found = try XCTUnwrap(link.await { link.client.discoverPrimaryServices(uuid: 0x180D, completion: $0) }).get()
        XCTAssertEqual(found, [GATTRemoteService(uuid: 0x180D, range: ATTHandleRange(start: 0x000E, end: 0x0011))])
        XCTAssertEqual(link.centralSent.map(\.spacedHex), ["06 01 00 ff ff 00 28 0d 18", "06 12 00 ff ff 00 28 0d 18"])
        let none = try XCTUnwrap(link.await { link.client.discoverPrimaryServices(uuid: 0x180F, completion: $0) }).get()
        XCTAssertEqual(none, [])
        let filtered = try XCTUnwrap(link.await { link.client.discoverAll(serviceUUIDs: [0xFFE0], completion: $0) }).get()
        XCTAssertEqual(filtered.map(\.uuid), [0xFFE0])
        XCTAssertEqual(filtered.first?.characteristics.first?.configurationHandle, 0x000D)
    }

    func testWriteRequestToACharacteristicWithoutWriteFailsWith0x03() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        let result = try XCTUnwrap(link.await { link.client.write(Array("hello".utf8), handle: 0x000C, completion: $0) })
        XCTAssertEqual(result.mapError { $0 }.failureValue, .att(.writeNotPermitted, handle: 0x000C))
        XCTAssertEqual(link.peripheralSent.map(\.spacedHex), ["01 12 0c 00 03"])
        XCTAssertEqual(link.server.value(at: 0x000C), Array("ready".utf8))
    }

    func testWriteCommandToACharacteristicWithoutWriteWithoutResponseSendsNothingBack() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        var writes = 0
        link.server.onWrite = { _ in writes += 1 }
        XCTAssertTrue(link.client.writeWithoutResponse([0x01], handle: 0x0010))  // 2A37: notify only
        link.loop.runUntilIdle()
        link.loop.advance(by: .seconds(60))
        XCTAssertEqual(link.centralSent.map(\.spacedHex), ["52 10 00 01"])
        XCTAssertEqual(link.peripheralSent, [], "no response of any kind")
        XCTAssertEqual(link.server.value(at: 0x0010), [0x00, 0x48])
        XCTAssertEqual(writes, 0)
        XCTAssertEqual(link.central.state, .open)
    }

    func testWriteCommandAndRequestAreReportedWithTheirMethod() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: 0xFFE1, properties: [.read, .write, .writeWithoutResponse, .notify]),
        ])])
        let link = BackToBackLink(database: db)
        var events: [String] = []
        link.server.onWrite = { events.append("\(String(decoding: $0.value, as: UTF8.self)) via \($0.method)") }
        let handle = try XCTUnwrap(db.characteristic(0xFFE1)?.valueHandle)
        link.client.writeWithoutResponse(Array("cmd".utf8), handle: handle)
        _ = link.await { link.client.write(Array("req".utf8), handle: handle, completion: $0) }
        _ = link.await { link.client.write(Array(repeating: 0x41, count: 30), handle: handle, completion: $0) }
        XCTAssertEqual(events, ["cmd via command", "req via request", String(repeating: "A", count: 30) + " via execute-write"])
    }

    func testNotifyBeforeSubscribeSendsNothing() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        var received: [GATTNotification] = []
        link.client.onNotification = { received.append($0) }
        let connection = try XCTUnwrap(link.connection)
        XCTAssertFalse(link.server.notify([0x00, 0x3C], handle: 0x0010, to: connection))
        XCTAssertFalse(link.server.notify([0x00, 0x3C], handle: 0x0010, to: link.peripheral))
        XCTAssertFalse(link.server.indicate([0x00, 0x3C], handle: 0x0010, to: connection))
        XCTAssertEqual(link.server.notifyAll([0x00, 0x3C], handle: 0x0010), 0)
        link.loop.runUntilIdle()
        XCTAssertEqual(link.peripheralSent, [])
        XCTAssertEqual(received, [])
    }

    func testSubscribeThenAHundredNotificationsArriveInOrder() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        let services = try XCTUnwrap(link.await { link.client.discoverAll(completion: $0) }).get()
        let heartRate = try XCTUnwrap(services.first { $0.uuid == 0x180D }?.characteristic(0x2A37))
        var subscriptions: [GATTSubscriptionEvent] = []
        link.server.onSubscriptionChange = { subscriptions.append($0) }
        XCTAssertNoThrow(try XCTUnwrap(link.await { link.client.subscribe(to: heartRate, completion: $0) }).get())
        XCTAssertEqual(link.centralSent.last?.spacedHex, "12 11 00 01 00")
        XCTAssertEqual(subscriptions.map(\.new), [.notification])

        var received: [GATTNotification] = []
        link.client.onNotification = { received.append($0) }
        let connection = try XCTUnwrap(link.connection)
        let sentBefore = link.peripheralSent.count
        for bpm in 0..<100 {
            XCTAssertTrue(link.server.notify([0x00, UInt8(bpm)], handle: heartRate.valueHandle, to: connection))
        }
        link.loop.runUntilIdle()
        XCTAssertEqual(Array(link.peripheralSent[sentBefore...]), (0..<100).map { [0x1B, 0x10, 0x00, 0x00, UInt8($0)] })
        XCTAssertEqual(received, (0..<100).map { GATTNotification(handle: 0x0010, value: [0x00, UInt8($0)], isIndication: false) })

        XCTAssertTrue(link.server.notify([0x00, 0x64], characteristic: 0x2A37, inService: 0x180D, to: connection))
        XCTAssertFalse(link.server.notify([0x00, 0x64], characteristic: 0x2A38, to: connection))
        link.loop.runUntilIdle()
        XCTAssertEqual(received.last?.value, [0x00, 0x64])

        XCTAssertNoThrow(try XCTUnwrap(link.await { link.client.unsubscribe(from: heartRate, completion: $0) }).get())
        XCTAssertFalse(link.server.notify([0x00, 0x01], handle: heartRate.valueHandle, to: connection))
        XCTAssertEqual(subscriptions.map(\.new), [.notification, []])
    }

    func testIndicationIsConfirmed() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0x1809, characteristics: [
            GATTCharacteristic(uuid: 0x2A1C, properties: [.indicate]),
        ])])
        let link = BackToBackLink(database: db)
        let services = try XCTUnwrap(link.await { link.client.discoverAll(serviceUUIDs: [0x1809], completion: $0) }).get()
        let temperature = try XCTUnwrap(services.first?.characteristic(0x2A1C))
        XCTAssertNoThrow(try XCTUnwrap(link.await { link.client.subscribe(to: temperature, completion: $0) }).get())
        XCTAssertEqual(link.centralSent.last?.spacedHex, "12 0d 00 02 00", "indicate only: the indication bit")
        var received: [GATTNotification] = []
        link.client.onNotification = { received.append($0) }
        let connection = try XCTUnwrap(link.connection)
        XCTAssertFalse(link.server.notify([1], handle: temperature.valueHandle, to: connection), "indications only")
        var confirmations: [Result<Void, GATTError>] = []
        for value in [[0x00, 0x6E, 0x01, 0x00, 0xFF], [0x00, 0x6F, 0x01, 0x00, 0xFF]] as [[UInt8]] {
            XCTAssertTrue(link.server.indicate(value, handle: temperature.valueHandle, to: connection) { confirmations.append($0) })
        }
        XCTAssertEqual(link.peripheral.queuedIndicationCount, 1)
        link.loop.runUntilIdle()
        XCTAssertEqual(confirmations.count, 2)
        XCTAssertTrue(confirmations.allSatisfy { if case .success = $0 { return true } else { return false } })
        XCTAssertEqual(received.map(\.isIndication), [true, true])
        XCTAssertEqual(received.map(\.value).last, [0x00, 0x6F, 0x01, 0x00, 0xFF])
        XCTAssertEqual(link.centralSent.suffix(2).map(\.spacedHex), ["1e", "1e"])
    }

    func testLongReadAcrossSeveralPDUs() throws {
        let value = Array(UInt8(0x30)...UInt8(0x6B))  // 60 octets, as in the reference traffic
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: 0xFFE4, properties: [.read], value: value),
        ])])
        let link = BackToBackLink(database: db)
        let handle = try XCTUnwrap(db.characteristic(0xFFE4)?.valueHandle)
        let read = try XCTUnwrap(link.await { link.client.read(handle: handle, completion: $0) }).get()
        XCTAssertEqual(read, value)
        XCTAssertEqual(link.centralSent.map(\.spacedHex), ["0a 0c 00", "0c 0c 00 16 00", "0c 0c 00 2c 00"])
        XCTAssertEqual(link.peripheralSent.map(\.count), [23, 23, 17])
    }

    func testLongReadOfExactlyMTUMinus1Octets() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: 0xFFE4, properties: [.read], value: Array(repeating: 7, count: 22)),
        ])])
        let link = BackToBackLink(database: db)
        let read = try XCTUnwrap(link.await { link.client.read(handle: 0x000C, completion: $0) }).get()
        XCTAssertEqual(read, Array(repeating: 7, count: 22))
        XCTAssertEqual(link.centralSent.map(\.spacedHex), ["0a 0c 00", "0c 0c 00 16 00"])
        XCTAssertEqual(link.peripheralSent.map(\.spacedHex), [["0b"] + Array(repeating: "07", count: 22)].map { $0.joined(separator: " ") } + ["0d"])
    }

    func testReadMultipleAndReadUsingCharacteristicUUID() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        let values = try XCTUnwrap(link.await { link.client.readMultiple(handles: [0x0003, 0x000C], completion: $0) }).get()
        XCTAssertEqual(values, Array("BLELabready".utf8))
        let byUUID = try XCTUnwrap(link.await { link.client.read(uuid: 0xFFE1, completion: $0) }).get()
        XCTAssertEqual(byUUID, [ATTHandleValue(handle: 0x000C, value: Array("ready".utf8))])
        let missing = try XCTUnwrap(link.await { link.client.read(uuid: 0xFFE9, completion: $0) })
        XCTAssertEqual(missing.failureValue, .att(.attributeNotFound, handle: 0x0001))
        let unreadable = try XCTUnwrap(link.await { link.client.readMultiple(handles: [0x0003, 0x0010], completion: $0) })
        XCTAssertEqual(unreadable.failureValue, .att(.readNotPermitted, handle: 0x0010))
    }

    func testLongWriteAcrossSeveralPDUs() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: 0xFFE1, properties: [.read, .write], value: Array("init".utf8)),
        ])])
        let link = BackToBackLink(database: db)
        let value = Array(UInt8(0)..<40)
        XCTAssertNoThrow(try XCTUnwrap(link.await { link.client.write(value, handle: 0x000C, completion: $0) }).get())
        XCTAssertEqual(link.server.value(at: 0x000C), value)
        // As in the reference traffic: parts of ATT_MTU - 5 = 18 octets, then Execute Write.
        XCTAssertEqual(link.centralSent.map { Array($0.prefix(5)).spacedHex }, [
            "16 0c 00 00 00", "16 0c 00 12 00", "16 0c 00 24 00", "18 01",
        ])
        XCTAssertEqual(link.centralSent.map(\.count), [23, 23, 9, 2])
        let read = try XCTUnwrap(link.await { link.client.read(handle: 0x000C, completion: $0) }).get()
        XCTAssertEqual(read, value)
    }

    func testLongWriteToACharacteristicWithoutWriteCancelsAndFails() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        let result = try XCTUnwrap(link.await { link.client.writeLong(Array(repeating: 1, count: 30), handle: 0x000C, completion: $0) })
        XCTAssertEqual(result.failureValue, .att(.writeNotPermitted, handle: 0x000C))
        XCTAssertEqual(link.centralSent.map { $0[0] }, [0x16, 0x18])
        XCTAssertEqual(link.centralSent.last, [0x18, 0x00])
    }

    func testMTUExchangeWidensReadsAndNotificationsAreCutToMTUMinus3() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: 0xFFE1, properties: [.read, .notify], value: Array(repeating: 9, count: 100)),
        ])])
        let link = BackToBackLink(database: db, centralMTU: 64, peripheralMTU: 517)
        XCTAssertEqual(try XCTUnwrap(link.await { link.client.exchangeMTU(completion: $0) }).get(), 64)
        XCTAssertEqual(link.peripheral.mtu, 64)
        let read = try XCTUnwrap(link.await { link.client.read(handle: 0x000C, completion: $0) }).get()
        XCTAssertEqual(read.count, 100)
        XCTAssertEqual(link.centralSent.count, 3, "Exchange MTU, Read, one Read Blob")
        let connection = try XCTUnwrap(link.connection)
        _ = link.await { link.client.write([0x01, 0x00], handle: 0x000D, completion: $0) }
        var received: [GATTNotification] = []
        link.client.onNotification = { received.append($0) }
        XCTAssertTrue(link.server.notify(Array(repeating: 5, count: 100), handle: 0x000C, to: connection))
        link.loop.runUntilIdle()
        XCTAssertEqual(received.first?.value.count, 61)
    }

    func testAnAppAnsweringLaterOrWithAnError() throws {
        let db = try GATTDatabase(services: [GATTService(uuid: 0xFFE0, characteristics: [
            GATTCharacteristic(uuid: 0xFFE1, properties: [.read, .write], value: [1]),
        ])])
        let link = BackToBackLink(database: db)
        link.server.writeHandler = { request, respond in
            link.loop.schedule(after: .milliseconds(100)) { respond(request.value == [0xEE] ? .error(.unlikelyError) : .accept) }
        }
        let start = link.loop.now
        XCTAssertNoThrow(try XCTUnwrap(link.await { link.client.write([2], handle: 0x000C, completion: $0) }).get())
        XCTAssertEqual(link.loop.now - start, .milliseconds(100))
        let failed = try XCTUnwrap(link.await { link.client.write([0xEE], handle: 0x000C, completion: $0) })
        XCTAssertEqual(failed.failureValue, .att(.unlikelyError, handle: 0x000C))
        XCTAssertEqual(failed.failureValue?.attErrorCode, .unlikelyError)
        XCTAssertEqual(link.server.value(at: 0x000C), [2])
    }

    func testAServerThatNeverAnswersTimesOutAfter30Seconds() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        link.server.readHandler = { _, _ in }  // never answers
        var failures: [ATTError] = []
        link.central.onFailure = { failures.append($0) }
        var first: Result<[UInt8], GATTError>?
        var second: Result<[UInt8], GATTError>?
        link.client.read(handle: 0x000C) { first = $0 }
        link.client.read(handle: 0x0003) { second = $0 }
        link.loop.advance(by: .milliseconds(29_999))
        XCTAssertNil(first)
        link.loop.advance(by: .milliseconds(1))
        XCTAssertEqual(first?.failureValue, .timeout)
        XCTAssertEqual(second?.failureValue, .timeout)
        XCTAssertEqual(failures, [.timeout(.readRequest)])
        XCTAssertEqual(link.centralSent.count, 1, "the queued read was never sent")
        XCTAssertFalse(link.client.writeWithoutResponse([1], handle: 0x000C))
    }

    func testDisconnectFailsPendingProceduresAndDetachesTheConnection() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        link.server.readHandler = { _, _ in }
        var result: Result<[UInt8], GATTError>?
        link.client.read(handle: 0x000C) { result = $0 }
        link.loop.advance(by: .milliseconds(10))  // not runUntilIdle: that would run into the 30 s timeout
        XCTAssertNil(result)
        link.central.close(reason: 0x13)
        link.peripheral.close(reason: 0x16)
        XCTAssertEqual(result?.failureValue, .linkLost(reason: 0x13))
        XCTAssertTrue(link.server.connections.isEmpty)
    }

    func testServiceChangedIsIndicatedToSubscribedClients() throws {
        let link = BackToBackLink(database: try makeHM10Database())
        _ = link.await { link.client.write([0x02, 0x00], handle: 0x0009, completion: $0) }
        var received: [GATTNotification] = []
        link.client.onNotification = { received.append($0) }
        let added = try link.server.addService(GATTService(uuid: 0x180F, characteristics: [
            GATTCharacteristic(uuid: 0x2A19, properties: [.read, .notify], value: [100]),
        ]))
        XCTAssertEqual(link.server.indicateServiceChanged(added.range), 1)
        link.loop.runUntilIdle()
        XCTAssertEqual(received, [GATTNotification(handle: 0x0008, value: [0x12, 0x00, 0x15, 0x00], isIndication: true)])
        // The client's configuration survived the change and covers the new CCCD too.
        XCTAssertEqual(link.connection?.configuration(forValueHandle: 0x0008), .indication)
        XCTAssertEqual(link.connection?.configuration(forValueHandle: 0x0014), [])
        _ = link.await { link.client.write([0x01, 0x00], handle: 0x0015, completion: $0) }
        XCTAssertEqual(link.connection?.configuration(forValueHandle: 0x0014), .notification)
        XCTAssertNotNil(link.server.removeService(at: 0x000A))
        XCTAssertEqual(link.connection?.configuration(forValueHandle: 0x0014), .notification)
        XCTAssertEqual(link.connection?.configuration(forValueHandle: 0x0008), .indication)
    }
}

extension Result {
    var failureValue: Failure? {
        if case let .failure(error) = self { return error }
        return nil
    }
}
