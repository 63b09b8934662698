import BLELab
import BLELabTestSupport
import HCI
@testable import ScenarioEngine
import Transport
import XCTest

/// Every device's capture holds what happened up to the scenario's end, including the frames the
/// controllers produced at its last instant: a link both ends saw close is closed in both files.
final class FinalInstantCaptureTests: XCTestCase {
    static var root: String { DocsExampleTests.root }

    /// The times (µs since the lab's epoch) of the Disconnection Complete events in a btsnoop file.
    private func disconnections(_ path: String) throws -> [Int64] {
        let file = try BTSnoopReader.read(path: path)
        return file.records.compactMap { r in
            guard r.packetType == .event, let frame = r.h4Frame, frame.count >= 2, frame[1] == HCIEvent.Code.disconnectionComplete else { return nil }
            return r.timestamp
        }
    }

    private func captures(of scenario: String) throws -> (dir: String, base: String) {
        let dir = try temporaryDirectory()
        let cli = CLIHarness()
        XCTAssertEqual(cli.run(["run", "--capture", dir, Self.root + "/" + scenario], writesFiles: true), .passed, cli.out + cli.err)
        let name = String(scenario.split(separator: "/").last!.dropLast(".yaml".count))
        return (dir, dir + "/" + name)
    }

    /// The central ends the link in the scenario's last step: the peripheral's file has its
    /// Disconnection Complete, at the same instant as the central's.
    func testTheCentralsLastDisconnectIsInThePeripheralsCapture() throws {
        let (dir, base) = try captures(of: "scenarios/seeds/hm10-serial.yaml")
        defer { removeTree(dir) }
        let central = try disconnections(base + ".central.btsnoop")
        XCTAssertEqual(central.count, 1)
        XCTAssertEqual(try disconnections(base + ".hm10.btsnoop"), central)
        // After that event the file holds the peripheral advertising again (resume-after-disconnect,
        // on by default): its four advertising commands, each answered, and nothing else.
        let records = try BTSnoopReader.read(path: base + ".hm10.btsnoop").records
        guard let end = records.lastIndex(where: { $0.h4Frame?.prefix(2) == [H4PacketType.event.rawValue, HCIEvent.Code.disconnectionComplete] }) else {
            return XCTFail("no Disconnection Complete in the peripheral's capture")
        }
        let after = records[(end + 1)...].compactMap { $0.h4Frame.flatMap { try? HCIPacket(h4: $0) } }
        let commands = after.compactMap { packet -> UInt16? in if case let .command(c) = packet { return c.opcode.rawValue } else { return nil } }
        XCTAssertEqual(commands, [0x2006, 0x2008, 0x2009, 0x200A])
        XCTAssertEqual(after.count, 8)
    }

    /// The peripheral ends the link and the last step waits for the central to hear of it.
    func testThePeripheralsLastDisconnectIsInBothCaptures() throws {
        let (dir, base) = try captures(of: "scenarios/regressions/peripheral-disconnects-mid-flow.yaml")
        defer { removeTree(dir) }
        let central = try disconnections(base + ".central.btsnoop")
        XCTAssertEqual(central.count, 1)
        XCTAssertEqual(try disconnections(base + ".lock.btsnoop"), central)
    }
}
