import XCTest
import BLECrypto
import BLERuntime
import BLEWire
import HCI
import Controller

/// Resolvable private addresses on the sim controller's HCI, octet by octet (Core Vol 6 Part B
/// 1.3.2.2 and 1.3.2.3; Vol 3 Part C 10.8.2.3; Vol 4 Part E 7.7.65.2): an RPA made by the shared
/// implementation (BLECrypto's `ResolvablePrivateAddress`) goes on air as the advertiser's AdvA,
/// a scanner without the IRK reports it as it is (Address_Type 0x01), and one with the IRK in
/// its resolving list reports the identity (Address_Type 0x02) — and stops doing so once the
/// entry is gone (the resolution cache forgets with the list).
final class PrivateAddressTests: XCTestCase {
    /// Vol 3 Part H Appendix D.7 (ah): IRK ec0234a3 57c8ad05 341010a6 0a397d9b, prand 708194,
    /// hash 0dfbaa; the RPA 70:81:94:0D:FB:AA.
    let irk: [UInt8] = [0xEC, 0x02, 0x34, 0xA3, 0x57, 0xC8, 0xAD, 0x05, 0x34, 0x10, 0x10, 0xA6, 0x0A, 0x39, 0x7D, 0x9B]

    /// The LE Advertising Report frames (04 3E … 02) the host received, from their first octet.
    private func reportFrames(_ host: TestHost) -> [[UInt8]] {
        host.received.map(\.frame).filter { $0.count > 4 && $0[0] == 0x04 && $0[1] == 0x3E && $0[3] == 0x02 }
    }

    func testTheSpecificationsRPAGoesOnAirAndIsReportedAsItIsOrAsTheIdentity() throws {
        // The random part drawn: 22 bits of the draw, the top two set to 0b01 (1.3.2.2).
        let raw = try ResolvablePrivateAddress.make(irk: irk, draw: { 0xFFFF_FFFF_FFF0_8194 })
        XCTAssertEqual(raw, 0x7081_940D_FBAA)
        let lab = TestLab()
        let central = lab.device("central", "C0:00:00:00:00:0C")
        let tag = lab.device("tag", "00:1B:DC:00:00:0E")
        central.bringUp()
        tag.bringUp()
        tag.send(.leSetRandomAddress(BDAddr(rawValue: raw)))
        lab.settle()
        tag.clear()
        tag.advertise(ownAddressType: .random)

        central.scan()
        lab.run(for: .milliseconds(500))
        // Subevent 02, one report, ADV_IND (00), Address_Type 01 (random), the RPA least
        // significant octet first, Data_Length 3, flags, RSSI.
        let plain = try XCTUnwrap(reportFrames(central).first)
        XCTAssertEqual(Array(plain[3..<13]), hex("02 01 00 01 aa fb 0d 94 81 70"))

        let resolved = try rescan(central, lab, after: [
            .leAddDeviceToResolvingList(peerIdentityType: 0x00, peerIdentity: tag.address, peerIRK: irk.reversed(),
                                        localIRK: [UInt8](repeating: 0, count: 16)),
            .leSetAddressResolutionEnable(true),
        ])
        XCTAssertGreaterThan(resolved.count, 1, "several advertising events heard")
        // Address_Type 02 (Public Identity Address) and the tag's public address, in every report.
        XCTAssertEqual(Set(resolved.map { Array($0[3..<13]) }), [hex("02 01 00 02 0e 00 00 dc 1b 00")])

        // The entry removed: the same RPA is reported as it is again, not from a stale answer.
        let again = try rescan(central, lab, after: [
            .leSetAddressResolutionEnable(false),
            .leRemoveDeviceFromResolvingList(peerIdentityType: 0x00, peerIdentity: tag.address),
            .leSetAddressResolutionEnable(true),
        ])
        XCTAssertEqual(Set(again.map { Array($0[3..<13]) }), [hex("02 01 00 01 aa fb 0d 94 81 70")])
    }

    /// Stops the scan, sends `commands` (each must succeed), scans again for 500 ms and returns
    /// the reports' frames.
    private func rescan(_ central: TestHost, _ lab: TestLab, after commands: [HCICommand]) throws -> [[UInt8]] {
        central.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        for command in commands { central.send(command) }
        lab.settle()
        central.expectAllSucceeded()
        central.clear()
        central.scan()
        lab.run(for: .milliseconds(500))
        return reportFrames(central)
    }
}
