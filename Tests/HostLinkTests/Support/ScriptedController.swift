import BLERuntime
import BLEWire
import Transport
import XCTest

/// Octets from hex, with `|` allowed between fields for readability:
/// `"02 | 01 00 | 07 00 | 03 00 04 00 | 0a 10 00"`.
func hex(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
    guard let bytes = [UInt8](hex: String(text.map { $0 == "|" ? " " : $0 })) else {
        XCTFail("not hex: \(text)", file: file, line: line)
        return []
    }
    return bytes
}

/// A controller played from a script (send / expect / reply), in the manner of a transcript test.
///
/// Every H4 frame the host sends is recorded; `expectSent` checks them in order, so a test reads
/// as the HCI trace it describes. Frames from the "controller" go through `loop.execute`, as from
/// a real transport, so the host never sees a frame inside its own call. Nothing here advances
/// the clock: `settle()` runs only what is due now, so a pending 2 s command timer or 30 s RTX
/// timer fires only when a test lets time pass with `loop.advance(by:)`.
final class ScriptedController: HCITransport {
    let loop: VirtualEventLoop
    var onFrame: (([UInt8]) -> Void)?
    var onClose: ((TransportError) -> Void)?
    let endpointDescription = "scripted controller"

    /// Every frame the host sent, in order.
    private(set) var sent: [[UInt8]] = []
    /// How many of `sent` the test has already matched.
    private var matched = 0

    init(loop: VirtualEventLoop) { self.loop = loop }

    func send(_ frame: [UInt8]) { sent.append(frame) }

    /// Frames sent and not yet matched by `expectSent`.
    var unmatched: [[UInt8]] { Array(sent[matched...]) }

    /// Returns the unmatched frames and marks them matched, for checks on their shape rather
    /// than exact bytes.
    func takeSent() -> [[UInt8]] {
        defer { matched = sent.count }
        return unmatched
    }

    /// The next frame the host sent must be `hexFrame` (H4 indicator first).
    func expectSent(_ hexFrame: String, file: StaticString = #filePath, line: UInt = #line) {
        expectSent(hex(hexFrame, file: file, line: line), file: file, line: line)
    }

    func expectSent(_ frame: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        guard matched < sent.count else {
            XCTFail("expected the host to send [\(frame.spacedHex)], but it sent nothing more", file: file, line: line)
            return
        }
        let actual = sent[matched]
        matched += 1
        // Compared as text so a failure shows both frames octet by octet.
        XCTAssertEqual(actual.spacedHex, frame.spacedHex, file: file, line: line)
    }

    /// The host has sent nothing since the last matched frame.
    func expectNothingSent(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(unmatched.map(\.spacedHex), [], "the host sent frames it should not have", file: file, line: line)
    }

    /// The controller sends `hexFrame` (H4 indicator first); the host handles it before this returns.
    func reply(_ hexFrame: String, file: StaticString = #filePath, line: UInt = #line) {
        reply(hex(hexFrame, file: file, line: line))
    }

    func reply(_ frame: [UInt8]) {
        loop.execute { [weak self] in self?.onFrame?(frame) }
        settle()
    }

    /// The link to the controller fails, as a closed socket would.
    func close(_ error: TransportError) {
        loop.execute { [weak self] in self?.onClose?(error) }
        settle()
    }

    /// Runs what is due now without moving the clock.
    func settle() { loop.run(until: loop.now) }
}
