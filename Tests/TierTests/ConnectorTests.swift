import BLELab
import BLERuntime
import LabTiers
import Transport
import XCTest

/// The socket connector against a real RootCanal.
final class ConnectorTests: TierTestCase {
    /// RootCanal listens with a backlog of 1 and accepts on its own schedule; a connection made
    /// while its accept queue is full has its SYN dropped and retried after 1 s. The connector
    /// waits for the queue to empty first, so six devices in a row connect in well under that.
    func testManyDevicesConnectToRootCanalWithoutSYNRetries() throws {
        let backend = try Tiers.backend("rootcanal")
        try backend.prepare(deviceCount: 6)
        defer { backend.shutDown() }
        for round in 0..<10 {
            let lab = try backend.makeLab(seed: UInt64(round))
            defer { lab.shutDown() }
            var times: [Double] = []
            for i in 0..<6 {
                let start = WallClock.seconds()
                try lab.addDevice("device\(i)")
                times.append(WallClock.seconds() - start)
            }
            XCTAssertLessThan(times.max() ?? 0, 0.5, "round \(round): connect times \(times.map { Int($0 * 1000) }) ms")
            try lab.powerOn()
            // Each connection is its own controller, with its own address.
            XCTAssertEqual(Set(lab.devices.map(\.address)).count, 6)
        }
    }

    func testTooFewEndpointsSayWhichDeviceHasNone() throws {
        let connector = SocketControllerConnector(plan: .perDevice([.tcp(host: "127.0.0.1", port: 1)]), description: "H4 socket tcp 127.0.0.1:1")
        let lab = Lab(seed: 1, loop: SystemEventLoop(), connector: connector)
        XCTAssertThrowsError(try lab.addDevice("first")) { error in
            XCTAssertTrue("\(error)".hasPrefix("no controller for first from H4 socket tcp 127.0.0.1:1: tcp 127.0.0.1:1: connect failed: Connection refused"), "\(error)")
        }
        XCTAssertThrowsError(try connector.openController(for: "second", index: 1, on: lab.loop)) { error in
            XCTAssertEqual("\(error)", "no controller for second from H4 socket tcp 127.0.0.1:1: it is device 2, but only 1 endpoint(s) were given (one per device, in order)")
        }
    }
}
