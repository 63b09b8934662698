import XCTest
import BLERuntime
import BLEWire
import HCI
import Controller

/// The sim's encryption commands and the Encryption Start and Pause procedures, event by event
/// (Core 5.4, Vol 4, Part E, 7.8.22–7.8.26, 7.7.8, 7.7.39, 7.7.65.5; Vol 6, Part B, 5.1.3).
final class EncryptionTests: XCTestCase {
    let rand = hex("01 02 03 04 05 06 07 08")                      // Random_Number, as on HCI
    let key = hex("00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff")   // Long_Term_Key, as on HCI

    /// The peripheral's host answers each LE Long Term Key Request with `answer` (nil: Negative Reply).
    private func answerKeyRequests(_ pair: ConnectedPair, with answer: [UInt8]?) {
        pair.peripheral.onFrame = { _, frame in
            guard frame.starts(with: [0x04, 0x3E, 0x0D, 0x05]) else { return }
            let handle = UInt16(frame[4]) | UInt16(frame[5]) << 8
            pair.peripheral.send(answer.map { .leLongTermKeyRequestReply(handle: handle, longTermKey: $0) }
                                 ?? .leLongTermKeyRequestNegativeReply(handle: handle))
        }
    }

    /// A connected pair whose peripheral answers with `answer`, and LE Enable Encryption sent just
    /// after anchor 1 (so LL_ENC_REQ goes at event 2).
    private func encrypting(answer: [UInt8]?, ediv: UInt16 = 1) -> (TestLab, ConnectedPair) {
        let lab = TestLab()
        let pair = lab.connectedPair()
        answerKeyRequests(pair, with: answer)
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: ediv, longTermKey: key))
        return (lab, pair)
    }

    /// LL_ENC_REQ and LL_ENC_RSP at event 2 (the peripheral's host asked), LL_START_ENC_REQ at
    /// event 3, both LL_START_ENC_RSP at event 4, where both hosts get Encryption Change.
    func testMatchingKeysEncryptTheLinkInThreeEvents() {
        let (lab, pair) = encrypting(answer: key, ediv: 0xBEEF)
        lab.run(until: pair.anchor(10))

        XCTAssertEqual(pair.central.received.first?.frame, hex("04 0f 04 00 01 19 20"))   // Command Status, success
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [
            hex("04 3e 0d 05 01 00 01 02 03 04 05 06 07 08 ef be"),   // LE Long Term Key Request: Rand, EDIV as sent
            hex("04 0e 06 01 1a 20 00 01 00"),                        // the Reply: Command Complete, success, handle 1
            hex("04 08 04 00 01 00 01"),                              // Encryption Change: success, handle 1, on
        ])
        XCTAssertEqual(pair.peripheral.received.first?.time, pair.anchor(2))
        XCTAssertEqual(pair.peripheral.received.last?.time, pair.anchor(4))
        XCTAssertEqual(pair.central.received.last?.frame, hex("04 08 04 00 01 00 01"))
        XCTAssertEqual(pair.central.received.last?.time, pair.anchor(4))
    }

    /// Data handed over after LL_ENC_REQ waits; it goes in the event that completes the
    /// procedure, after both LL_START_ENC_RSP (and after both hosts' Encryption Change).
    func testDataWaitsWhileEncryptionStarts() {
        let (lab, pair) = encrypting(answer: key)
        lab.run(until: pair.anchor(2) + .milliseconds(1))
        // Handed over after LL_ENC_REQ went: it may only go once LL_START_ENC_RSP has.
        pair.central.sendACL(handle: pair.centralHandle, [0x01, 0x00, 0x04, 0x00, 0x0A])
        pair.peripheral.sendACL(handle: pair.peripheralHandle, [0x01, 0x00, 0x04, 0x00, 0x0B])
        lab.run(until: pair.anchor(10))
        XCTAssertEqual(pair.peripheral.acl.map(\.time), [pair.anchor(4)])
        XCTAssertEqual(pair.central.acl.map(\.time), [pair.anchor(4)])
        // Each host heard of the encryption before the packet.
        let kinds = pair.peripheral.packets.map { packet -> String in
            if case .acl = packet.packet { return "acl" }
            if case .event(.encryptionChange) = packet.packet { return "encrypted" }
            return "other"
        }
        XCTAssertEqual(kinds.filter { $0 != "other" }, ["encrypted", "acl"])
    }

    func testANegativeReplyIsPINOrKeyMissingAtTheCentral() {
        let (lab, pair) = encrypting(answer: nil)
        lab.run(until: pair.anchor(10))
        // LL_REJECT_EXT_IND (PIN or Key Missing) at event 3; the link stays up, unencrypted.
        XCTAssertEqual(pair.central.received.last?.frame, hex("04 08 04 06 01 00 00"))
        XCTAssertEqual(pair.central.received.last?.time, pair.anchor(3))
        XCTAssertEqual(pair.peripheral.received.last?.frame, hex("04 0e 06 01 1b 20 00 01 00"))
        XCTAssertTrue(pair.central.disconnections.isEmpty)
        pair.central.sendACL(handle: pair.centralHandle, [0x01])
        lab.run(for: .milliseconds(100))
        XCTAssertEqual(pair.peripheral.acl.count, 1)
    }

    func testAHostThatMaskedTheRequestHasItsLinkLayerRefuse() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        pair.peripheral.send(.leSetEventMask(EventMask.leConnectionComplete | EventMask.leAdvertisingReport))
        lab.settle()
        pair.peripheral.clear()
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: 1, longTermKey: key))
        lab.run(until: pair.anchor(10))
        XCTAssertTrue(pair.peripheral.received.isEmpty)
        XCTAssertEqual(pair.central.received.last?.frame, hex("04 08 04 06 01 00 00"))
        XCTAssertEqual(pair.central.received.last?.time, pair.anchor(3))
    }

    /// Different keys: the peripheral cannot authenticate the central's LL_START_ENC_RSP and
    /// leaves with MIC Failure (0x3D); the central times out.
    func testDifferentKeysAreAMICFailure() {
        let lab = TestLab()
        let pair = lab.connectedPair(timeout: 0x0064)
        var other = key
        other[0] ^= 1
        answerKeyRequests(pair, with: other)
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: 1, longTermKey: key))
        lab.run(until: pair.anchor(4) + .seconds(2))
        XCTAssertEqual(pair.peripheral.disconnections.map(\.event.reason), [.connectionTerminatedMICFailure])
        XCTAssertEqual(pair.peripheral.disconnections.first?.time, pair.anchor(4))
        XCTAssertEqual(pair.central.disconnections.map(\.event.reason), [.connectionTimeout])
        XCTAssertFalse(pair.central.events.contains { if case .encryptionChange = $0.event { return true } else { return false } })
    }

    /// Encrypting an encrypted link pauses it first and ends in Encryption Key Refresh Complete,
    /// an event outside the default mask (bit 47, Vol 4 Part E 7.3.1): the hosts unmask it.
    func testASecondStartIsAKeyRefresh() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        for host in [pair.central, pair.peripheral] {
            host.send(.setEventMask(EventMask.defaultMask | EventMask.leMeta | EventMask.encryptionKeyRefreshComplete))
        }
        lab.settle()
        pair.central.clear()
        pair.peripheral.clear()
        answerKeyRequests(pair, with: key)
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: 1, longTermKey: key))
        lab.run(until: pair.anchor(5) + .milliseconds(1))
        pair.central.clear()
        pair.peripheral.clear()
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: 1, longTermKey: key))
        lab.run(until: pair.anchor(12))
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 0f 04 00 01 19 20"), hex("04 30 03 00 01 00")])
        XCTAssertEqual(pair.peripheral.received.last?.frame, hex("04 30 03 00 01 00"))
    }

    func testAKeyRefreshIsMaskedByDefault() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        answerKeyRequests(pair, with: key)
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: 1, longTermKey: key))
        lab.run(until: pair.anchor(5) + .milliseconds(1))
        pair.central.clear()
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: 1, longTermKey: key))
        let masked = pair.central.controller.counters.eventsMasked
        lab.run(until: pair.anchor(12))
        XCTAssertEqual(pair.central.received.map(\.frame), [hex("04 0f 04 00 01 19 20")])
        XCTAssertEqual(pair.central.controller.counters.eventsMasked, masked + 1)
    }

    func testWhoMayStartAndAnswer() {
        let lab = TestLab()
        let pair = lab.connectedPair()
        pair.peripheral.send(.leEnableEncryption(handle: pair.peripheralHandle, random: rand, ediv: 1, longTermKey: key))
        pair.central.send(.leEnableEncryption(handle: 0x0EEE, random: rand, ediv: 1, longTermKey: key))
        pair.central.send(.leLongTermKeyRequestReply(handle: pair.centralHandle, longTermKey: key))
        pair.peripheral.send(.leLongTermKeyRequestNegativeReply(handle: pair.peripheralHandle))
        lab.settle()
        XCTAssertEqual(pair.peripheral.received.map(\.frame), [
            hex("04 0f 04 0c 01 19 20"),               // a peripheral does not start encryption
            hex("04 0e 06 01 1b 20 0c 01 00"),         // no request waits
        ])
        XCTAssertEqual(pair.central.received.map(\.frame), [
            hex("04 0f 04 02 01 19 20"),               // no such connection
            hex("04 0e 06 01 1a 20 0c 01 00"),         // a central is never asked for a key
        ])
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: 1, longTermKey: key))
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: rand, ediv: 1, longTermKey: key))
        lab.settle()
        XCTAssertEqual(pair.central.received.suffix(2).map(\.frame), [hex("04 0f 04 00 01 19 20"), hex("04 0f 04 0c 01 19 20")])
    }

    /// LE Encrypt with FIPS-197 C.1's example, both ways least significant octet first on HCI.
    func testLEEncryptIsAES128InHCIByteOrder() {
        let lab = TestLab()
        let host = lab.device("a", "C0:00:00:00:00:01")
        host.bringUp()
        host.send(.leEncrypt(key: hex("0f 0e 0d 0c 0b 0a 09 08 07 06 05 04 03 02 01 00"),
                             plaintext: hex("ff ee dd cc bb aa 99 88 77 66 55 44 33 22 11 00")))
        lab.settle()
        XCTAssertEqual(host.received.last?.frame, hex("04 0e 14 01 17 20 00 5a c5 b4 70 80 b7 cd d8 30 04 7b 6a d8 e0 c4 69"))
    }

    func testLERandIsEightOctetsFromTheSeed() {
        func rands(seed: UInt64) -> [[UInt8]] {
            let lab = TestLab(seed: seed)
            let host = lab.device("a", "C0:00:00:00:00:01")
            host.bringUp()
            host.send(.leRand)
            host.send(.leRand)
            lab.settle()
            return host.received.map { Array($0.frame.dropFirst(7)) }
        }
        let first = rands(seed: 1)
        XCTAssertEqual(first.map(\.count), [8, 8])
        XCTAssertNotEqual(first[0], first[1])
        XCTAssertEqual(first, rands(seed: 1))
        XCTAssertNotEqual(first, rands(seed: 2))
    }
}

/// Encryption faults (LinkFaults.encryption): what a controller that lost its keys, or a link
/// whose MIC check fails, does whatever the hosts answer.
final class EncryptionFaultTests: XCTestCase {
    let key = hex("00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff")

    private func start(_ fault: LinkFaults.EncryptionFault) -> ConnectedPair {
        let lab = TestLab()
        let pair = lab.connectedPair()
        lab.air.setLinkFaults(LinkFaults(encryption: fault), for: pair.peripheral.controller)
        pair.peripheral.onFrame = { [key] _, frame in
            guard frame.starts(with: [0x04, 0x3E, 0x0D, 0x05]) else { return }
            pair.peripheral.send(.leLongTermKeyRequestReply(handle: pair.peripheralHandle, longTermKey: key))
        }
        lab.run(until: pair.anchor(1) + .milliseconds(1))
        pair.central.send(.leEnableEncryption(handle: pair.centralHandle, random: hex("01 02 03 04 05 06 07 08"), ediv: 1, longTermKey: key))
        lab.run(until: pair.anchor(4) + .seconds(2))
        return pair
    }

    func testKeyMissingRefusesWithoutAskingThePeripheralsHost() {
        let pair = start(.keyMissing)
        XCTAssertTrue(pair.peripheral.received.isEmpty, "no LE Long Term Key Request")
        XCTAssertTrue(pair.central.events.contains { $0.event == .encryptionChange(EncryptionChange(status: .pinOrKeyMissing, handle: 1, encryptionEnabled: 0)) })
        XCTAssertTrue(pair.central.disconnections.isEmpty)
    }

    func testAMICFailureEndsTheLinkEvenWithEqualKeys() {
        let pair = start(.micFailure)
        XCTAssertEqual(pair.peripheral.disconnections.map(\.event.reason), [.connectionTerminatedMICFailure])
        XCTAssertEqual(pair.central.disconnections.map(\.event.reason), [.connectionTimeout])
    }
}
