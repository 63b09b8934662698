import BLERuntime
import CaptureImport
import GATT
import ScenarioEngine
import ScenarioFormat
import Transport
import XCTest

/// Captures as phones leave them: logging started with the app already connected (no advertising,
/// no LE Connection Complete, no discovery: iOS's usual case), an app that used its GATT cache
/// before (or instead of) discovering, a CCCD written by handle, a large ATT_MTU negotiated before
/// the capture, the peripheral asking for the MTU exchange itself, and a connection on a fast
/// interval with several notifications per connection event. Each is written byte by byte (HCI
/// as a phone's controller gives it), imported, and replayed.
final class MidConnectionTests: XCTestCase {
    var packets: [LoggedPacket] = []
    var now: Int64 = 0                                   // microseconds

    func at(_ ms: Int64) { now = ms * 1000 }
    func sent(_ frame: [UInt8]) { packets.append(LoggedPacket(time: Instant(nanoseconds: now * 1000), direction: .hostToController, frame: frame)) }
    func received(_ frame: [UInt8]) { packets.append(LoggedPacket(time: Instant(nanoseconds: now * 1000), direction: .controllerToHost, frame: frame)) }
    func event(_ code: UInt8, _ p: [UInt8]) -> [UInt8] { [0x04, code, UInt8(p.count)] + p }
    func command(_ opcode: UInt16, _ p: [UInt8]) -> [UInt8] { [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(p.count)] + p }
    /// One ATT PDU in one ACL packet on `handle` (PB 0b10: first automatically flushable).
    func att(_ pdu: [UInt8], handle: UInt16 = 0x0040) -> [UInt8] {
        let l2cap = [UInt8(pdu.count & 0xFF), UInt8(pdu.count >> 8), 0x04, 0x00] + pdu
        return [0x02, UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20, UInt8(l2cap.count & 0xFF), UInt8(l2cap.count >> 8)] + l2cap
    }
    func exchange(_ request: [UInt8], _ response: [UInt8], after: Int64 = 30) {
        sent(att(request))
        now += after * 1000
        received(att(response))
        now += 1000
    }

    // MARK: Captures

    /// An iOS-like log: the app is connected and subscribed before the first record. It writes
    /// commands to 0x0010, subscribes a second characteristic by writing 01 00 to its CCCD
    /// (0x0016) without ever discovering it, and gets 200-octet notifications of 0x0012 (an
    /// ATT_MTU exchanged before the log began) and short ones of 0x0015.
    func midConnectionCapture() -> [UInt8] {
        packets = []
        at(0)
        sent(command(0x0C03, []))                                        // a note that the log is HCI: Reset is not sent; start with an ATT PDU
        packets.removeAll()
        sent(att([0x52, 0x10, 0x00] + Array("hello".utf8)))              // Write Command to 0x0010
        now += 20_000
        for k in 0..<3 {
            received(att([0x1B, 0x12, 0x00] + [UInt8](repeating: UInt8(k), count: 200)))
            now += 100_000
        }
        exchange([0x12, 0x16, 0x00, 0x01, 0x00], [0x13])                  // Write Request 01 00 to 0x0016: a CCCD
        for k in 0..<2 {
            now += 50_000
            received(att([0x1B, 0x15, 0x00, 0xA0 + UInt8(k)]))
        }
        now += 200_000
        sent(att([0x52, 0x10, 0x00] + Array("bye".utf8)))
        return BTSnoopWriter.encode(packets)
    }

    /// A central's capture with advertising and a connection, where the app reads 0x0003 (the
    /// Device Name in the peripheral's database) and writes 0x000C before any discovery, from its
    /// GATT cache, then discovers, then writes again. `peripheralAsksMTU`: the peripheral sends
    /// an Exchange MTU Request of 185 first, and the phone answers 247. `interval`: the connection
    /// interval (1.25 ms units); `burst`: notifications of 0x000E per connection event, 4 events.
    /// `scanEnabled: false`: the log starts during the scan (no LE Set Scan Enable before the report).
    func cachedHandleCapture(peripheralAsksMTU: Bool = false, interval: UInt16 = 0x0018, burst: Int = 0, scanEnabled: Bool = true) -> [UInt8] {
        packets = []
        let peer: [UInt8] = [0x56, 0x34, 0x12, 0x00, 0x11, 0xD0]      // D0:11:00:12:34:56
        at(0)
        if scanEnabled {
            sent(command(0x200C, [0x01, 0x00]))                           // LE Set Scan Enable
            received(event(0x0E, [0x01, 0x0C, 0x20, 0x00]))
        }
        at(20)
        let adv: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x09] + Array("Lock".utf8)
        received(event(0x3E, [0x02, 0x01, 0x00, 0x01] + peer + [UInt8(adv.count)] + adv + [0xC4]))
        at(100)
        sent(command(0x200C, [0x00, 0x00]))
        received(event(0x0E, [0x01, 0x0C, 0x20, 0x00]))
        sent(command(0x200D, [0x60, 0x00, 0x30, 0x00, 0x00, 0x01] + peer + [0x00, UInt8(interval & 0xFF), UInt8(interval >> 8),
                                                                             UInt8(interval & 0xFF), UInt8(interval >> 8), 0x00, 0x00, 0xC8, 0x00, 0x00, 0x00, 0x00, 0x00]))
        received(event(0x0F, [0x00, 0x01, 0x0D, 0x20]))
        at(150)
        // LE Connection Complete: handle 0x0040, central, peer random, the interval, latency 0, timeout 2 s.
        received(event(0x3E, [0x01, 0x00, 0x40, 0x00, 0x00, 0x01] + peer + [UInt8(interval & 0xFF), UInt8(interval >> 8), 0x00, 0x00, 0xC8, 0x00, 0x00]))
        at(200)
        if peripheralAsksMTU {
            received(att([0x02, 0xB9, 0x00]))                             // the peripheral's Exchange MTU Request, 185
            now += 1000
            sent(att([0x03, 0xF7, 0x00]))                                 // the phone's GATT server answers 247
            now += 40_000
        }
        exchange([0x0A, 0x03, 0x00], [0x0B] + Array("Lock".utf8))         // Read 0x0003 from the cache
        exchange([0x12, 0x0C, 0x00, 0x01], [0x13])                        // Write Request 0x000C from the cache
        // Discovery: GAP 1-5 (2A00 at 3), the lock service FFF0 at 0x0008-0x000F.
        exchange([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], [0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18, 0x08, 0x00, 0x0F, 0x00, 0xF0, 0xFF])
        exchange([0x10, 0x10, 0x00, 0xFF, 0xFF, 0x00, 0x28], [0x01, 0x10, 0x10, 0x00, 0x0A])
        exchange([0x08, 0x01, 0x00, 0x05, 0x00, 0x03, 0x28], [0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A, 0x04, 0x00, 0x02, 0x05, 0x00, 0x01, 0x2A])
        exchange([0x08, 0x05, 0x00, 0x05, 0x00, 0x03, 0x28], [0x01, 0x08, 0x05, 0x00, 0x0A])
        exchange([0x08, 0x08, 0x00, 0x0F, 0x00, 0x03, 0x28], [0x09, 0x07, 0x0B, 0x00, 0x08, 0x0C, 0x00, 0xF1, 0xFF, 0x0D, 0x00, 0x10, 0x0E, 0x00, 0xF2, 0xFF])
        exchange([0x08, 0x0E, 0x00, 0x0F, 0x00, 0x03, 0x28], [0x01, 0x08, 0x0E, 0x00, 0x0A])
        exchange([0x04, 0x0F, 0x00, 0x0F, 0x00], [0x05, 0x01, 0x0F, 0x00, 0x02, 0x29])
        exchange([0x12, 0x0C, 0x00, 0x02], [0x13])                        // a write after discovery
        if burst > 0 {
            exchange([0x12, 0x0F, 0x00, 0x01, 0x00], [0x13])              // subscribe FFF2
            let step = Int64(interval) * 1250
            var n: UInt8 = 0
            for _ in 0..<4 {
                now += step
                for _ in 0..<burst {
                    received(att([0x1B, 0x0E, 0x00, n]))
                    n += 1
                }
            }
        }
        now += 500_000
        sent(command(0x0406, [0x40, 0x00, 0x13]))                         // Disconnect
        received(event(0x0F, [0x00, 0x01, 0x06, 0x04]))
        now += 60_000
        received(event(0x05, [0x00, 0x40, 0x00, 0x16]))
        return BTSnoopWriter.encode(packets)
    }

    // MARK: Tests

    func testACaptureStartingMidConnectionRebuildsThePeripheralAndReplays() throws {
        let (result, scenario) = try importAndLoad(midConnectionCapture(), source: "ios.btsnoop")
        let yaml = result.yaml
        XCTAssertTrue(result.transcript.connections[0].startedBeforeCapture)
        let p = try XCTUnwrap(scenario.peripherals.first, yaml)
        XCTAssertEqual(p.address?.description, "C0:00:00:00:00:40/random", yaml)
        // One placeholder service holding what the traffic used: 0x0010 written with commands,
        // 0x0012 and 0x0015 notified, 0x0016 its CCCD (so 0x0015 notifies).
        let characteristics = p.services.flatMap(\.characteristics)
        XCTAssertEqual(characteristics.map(\.uuid), [0x0010, 0x0012, 0x0015].map { GATTSession.placeholderUUID(handle: $0) }, yaml)
        XCTAssertEqual(characteristics.map(\.properties), [.writeWithoutResponse, .notify, .notify], yaml)
        XCTAssertTrue(GATTSession.isPlaceholder(p.services[0].uuid))
        XCTAssertEqual(GATTSession.placeholderUUID(handle: 0x0012).description, "B1E1AB00-0000-4000-8000-000000000012")
        // The central connects with the database as known, exchanges the MTU the 200-octet
        // notifications need, subscribes to what it was already subscribed to, and subscribes to
        // 0x0015 where the capture wrote its CCCD.
        XCTAssertTrue(yaml.contains("gatt-cache: true"), yaml)
        XCTAssertTrue(yaml.contains("  - mtu: 203"), yaml)
        XCTAssertTrue(yaml.contains("  - subscribe: { characteristic: B1E1AB00-0000-4000-8000-000000000012, type: notifications }"), yaml)
        XCTAssertTrue(yaml.contains("  - subscribe: B1E1AB00-0000-4000-8000-000000000015"), yaml)
        XCTAssertTrue(yaml.contains("the capture starts inside the connection on handle 0x0040"), yaml)
        XCTAssertTrue(yaml.contains("placeholder UUID (B1E1AB00-0000-4000-8000-00000000HHHH"), yaml)
        let replay = runWithCaptures(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(yaml)")
        // The replay's notifications carry the whole 200 octets.
        let again = try HCIStreamAnalysis.analyse(CaptureFile.decode(centralCapture(replay)))
        let notified = again.connections[0].att.filter { $0.bytes.first == 0x1B }.map(\.bytes.count)
        XCTAssertEqual(notified.filter { $0 == 203 }.count, 3, "\(notified)")
        // At the capture's handles: the rebuilt service keeps them.
        XCTAssertEqual(p.services[0].handle, 0x000E)
        XCTAssertEqual(characteristics.map(\.handle), [0x0010, 0x0012, 0x0015])
        let handles = Set(again.connections[0].att.filter { $0.bytes.first == 0x1B || $0.bytes.first == 0x52 }.map { UInt16($0.bytes[1]) | UInt16($0.bytes[2]) << 8 })
        XCTAssertEqual(handles, [0x0010, 0x0012, 0x0015])
    }

    func testTheSummaryOfAResumedCaptureSaysWhatIsNotInIt() throws {
        let text = try CaptureSummary.make(CaptureFile.decode(midConnectionCapture()), source: "ios.btsnoop").text
        XCTAssertTrue(text.contains("Connections: 1"), text)
        XCTAssertTrue(text.contains("already open when the capture starts: its first ATT PDU at record 1"), text)
        XCTAssertTrue(text.contains("*characteristic B1E1AB00-0000-4000-8000-000000000012 value handle 0x0012 [notify]"), text)
        XCTAssertTrue(text.contains("*characteristic B1E1AB00-0000-4000-8000-000000000015 value handle 0x0015 [notify] descriptors 2902 0x0016"), text)
        XCTAssertFalse(text.contains("parameters: interval"), text)
    }

    func testAnAppUsingItsGATTCacheReplaysWithGattCache() throws {
        let (result, scenario) = try importAndLoad(cachedHandleCapture(), source: "cached.btsnoop")
        let yaml = result.yaml
        XCTAssertTrue(result.sessions[0].usesCachedHandles)
        XCTAssertTrue(yaml.contains("  - connect: { peripheral: lock, gatt-cache: true }") || yaml.contains("gatt-cache: true"), yaml)
        // The write before discovery went to FFF1 (discovery found it later): a write step by name.
        XCTAssertTrue(yaml.contains("  - write: { characteristic: FFF1, value: hex:01, type: request }"), yaml)
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(yaml)")
        // Without the cache the same steps fail: a read before discovery has nothing to go to.
        var uncached = scenario
        for k in uncached.steps.indices { uncached.steps[k].gattCache = false }
        let failed = ScenarioRunner().run(uncached)
        XCTAssertFalse(failed.passed)
        XCTAssertTrue(failed.failure?.report().contains("nothing discovered yet") ?? false, failed.failure?.report() ?? "")
    }

    func testACaptureStartingDuringAScanTakesTheScanUpAtTheFirstReport() throws {
        let (result, scenario) = try importAndLoad(cachedHandleCapture(scanEnabled: false), source: "mid-scan.btsnoop")
        XCTAssertEqual(result.transcript.scans.count, 1)
        XCTAssertTrue(result.transcript.scans[0].startedBeforeCapture)
        XCTAssertTrue(result.yaml.contains("the capture starts during a scan (advertising reports before any LE Set Scan Enable)"), result.yaml)
        XCTAssertTrue(result.yaml.contains("  - expect: { discovered: lock }"), result.yaml)
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(result.yaml)")
    }

    func testThePeripheralsOwnMTUExchangeBecomesTheCentralsWithTheSameResult() throws {
        let (result, scenario) = try importAndLoad(cachedHandleCapture(peripheralAsksMTU: true), source: "mtu.btsnoop")
        let yaml = result.yaml
        XCTAssertFalse(yaml.contains("send-pdu: hex:02"), yaml)
        XCTAssertTrue(yaml.contains("  - mtu: 247"), yaml)
        XCTAssertTrue(yaml.contains("    mtu: 185"), yaml)
        XCTAssertTrue(yaml.contains("the peripheral asked for the ATT_MTU exchange"), yaml)
        let replay = ScenarioRunner().run(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(yaml)")
    }

    func testTheReplayConnectsWithTheCapturesParameters() throws {
        // 7.5 ms, six notifications per connection event: the replay's link runs at 7.5 ms too.
        let (result, scenario) = try importAndLoad(cachedHandleCapture(interval: 6, burst: 6), source: "fast.btsnoop")
        let yaml = result.yaml
        XCTAssertTrue(yaml.contains("interval: 7.5ms, latency: 0, timeout: 2s"), yaml)
        let connect = try XCTUnwrap(scenario.steps.first { if case .connect = $0.action { return true } else { return false } })
        XCTAssertEqual(connect.connectParameters, ConnectionUpdateRequest(interval: 6, latency: 0, timeout: 200))
        let replay = runWithCaptures(scenario)
        XCTAssertTrue(replay.passed, "\(replay.failure?.report() ?? "")\n\(yaml)")
        let again = try HCIStreamAnalysis.analyse(CaptureFile.decode(centralCapture(replay)))
        XCTAssertEqual(again.connections.first?.interval, 6, "the replay's connection is not at 7.5 ms")
        XCTAssertEqual(again.connections.first?.att.filter { $0.bytes.first == 0x1B }.count, 24)
    }

    /// A capture that uses the last handle, 0xFFFF (Vol 3 Part F 3.4.1: handles run 0x0001 to
    /// 0xFFFF), with no discovery in it: read, notified, or its value at 0xFFFE subscribed through
    /// a CCCD at 0xFFFF. The fuzzer (Fuzzing/CaptureImport) found that the importer trapped
    /// looking one handle past it for a CCCD (`handle + 1` overflowed). Each imports: the
    /// characteristic is declared at its handle and the summary lists it.
    func testACaptureUsingTheLastHandleImportsWithoutTrapping() throws {
        let uses: [(String, () -> Void)] = [
            ("read", { self.exchange([0x0A, 0xFF, 0xFF], [0x0B, 0x2A]) }),
            ("notified", { for k in 0..<2 { self.received(self.att([0x1B, 0xFF, 0xFF, UInt8(k)])); self.now += 50_000 } }),
            ("subscribed", {
                self.exchange([0x12, 0xFF, 0xFF, 0x01, 0x00], [0x13])
                for k in 0..<2 { self.now += 50_000; self.received(self.att([0x1B, 0xFE, 0xFF, UInt8(k)])) }
            }),
        ]
        for (use, traffic) in uses {
            packets = []
            at(0)
            sent(att([0x52, 0x10, 0x00, 0x01]))                           // a Write Command first: the log starts mid-connection
            now += 20_000
            traffic()
            let bytes = BTSnoopWriter.encode(packets)
            let result = try CaptureImporter.importCapture(bytes, source: "\(use).btsnoop")
            let valueHandle: UInt16 = use == "subscribed" ? 0xFFFE : 0xFFFF
            let declared = result.transcript.connections.isEmpty ? [] : result.sessions[0].database.services.flatMap(\.characteristics).map(\.valueHandle)
            XCTAssertTrue(declared.contains(valueHandle), "\(use): \(declared)\n\(result.yaml)")
            XCTAssertTrue(result.yaml.contains(GATTSession.placeholderUUID(handle: valueHandle).description), "\(use)\n\(result.yaml)")
            let summary = try CaptureSummary.make(CaptureFile.decode(bytes), source: "\(use).btsnoop").text
            XCTAssertTrue(summary.contains("value handle 0x\(String(valueHandle, radix: 16))"), "\(use)\n\(summary)")
        }
    }
}
