import XCTest
import BLECrypto
import BLERuntime
import BLEWire
import HCI
import Controller

/// The Filter Accept List and the resolving list of the sim controller (Core 5.4, Vol 4, Part E,
/// 7.8.14–7.8.17, 7.8.38–7.8.45; Vol 6, Part B, 4.3.1 and 4.7).
final class ListTests: XCTestCase {
    let irk: [UInt8] = Array(0x10...0x1F)   // most significant octet first

    /// An RPA of `irk` (Vol 6 Part B 1.3.2.2), from a fixed prand.
    func rpa(_ irk: [UInt8], prand: UInt32 = 0x5A_1234) throws -> BDAddr {
        let hash = try SecurityToolbox.ah(irk, [UInt8(prand >> 16 & 0xFF), UInt8(prand >> 8 & 0xFF), UInt8(prand & 0xFF)])
        return BDAddr(rawValue: UInt64(prand) << 24 | UInt64(hash[0]) << 16 | UInt64(hash[1]) << 8 | UInt64(hash[2]))
    }

    func status(_ host: TestHost) -> UInt8? {
        guard case let .commandComplete(c)? = host.events.last?.event else { return nil }
        return c.returnParameters.first
    }

    func statuses(_ host: TestHost) -> [HCIStatus] {
        host.events.compactMap { item -> HCIStatus? in
            if case let .commandComplete(c) = item.event { return c.status }
            return nil
        }
    }

    func testScanningThroughTheAcceptListReportsOnlyItsDevices() {
        let lab = TestLab()
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        let listed = lab.device("listed", "C0:00:00:00:00:02")
        let other = lab.device("other", "C0:00:00:00:00:03")
        for h in [scanner, listed, other] { h.bringUp() }
        listed.advertise()
        other.advertise()
        scanner.send(.leAddDeviceToFilterAcceptList(addressType: 0x00, address: listed.address))
        scanner.send(.leSetScanParameters(LEScanParameters(active: false, interval: 0x0010, window: 0x0010, filterPolicy: 0x01)))
        scanner.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        lab.settle()
        scanner.expectAllSucceeded()
        scanner.clear()
        lab.run(for: .seconds(3))
        XCTAssertFalse(scanner.reports.isEmpty)
        XCTAssertEqual(Set(scanner.reports.map(\.report.sender)), [listed.publicAddress])
        // In use by the scan: the list may not change (7.8.16).
        scanner.send(.leClearFilterAcceptList)
        lab.settle()
        XCTAssertEqual(status(scanner), HCIStatus.commandDisallowed.rawValue)
    }

    func testAResolvedRPAIsReportedAsTheIdentityAndTheInitiatorConnectsToTheIdentity() throws {
        let lab = TestLab()
        let central = lab.device("central", "C0:00:00:00:00:0C")
        let tag = lab.device("tag", "00:1B:DC:00:00:0E")
        central.bringUp()
        tag.bringUp()
        let address = try rpa(irk)
        tag.send(.leSetRandomAddress(address))
        lab.settle()
        tag.clear()
        tag.advertise(ownAddressType: .random)

        // Without resolution: the RPA, type random.
        central.scan()
        lab.run(for: .seconds(1))
        XCTAssertEqual(central.reports.last?.report.sender, LEAddress(address, type: .random))
        central.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        central.send(.leAddDeviceToResolvingList(peerIdentityType: 0x00, peerIdentity: tag.address, peerIRK: irk.reversed(),
                                                 localIRK: [UInt8](repeating: 0, count: 16)))
        central.send(.leSetAddressResolutionEnable(true))
        lab.settle()
        central.expectAllSucceeded()
        central.clear()
        // With it: the identity, Public Identity Address (0x02).
        central.scan()
        lab.run(for: .seconds(1))
        XCTAssertEqual(central.reports.last?.report.sender, LEAddress(tag.address, type: AddressType(rawValue: 0x02)))
        central.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        lab.settle()
        central.clear()

        // LE Create Connection to the identity (peer type 0x02) reaches the RPA advertiser.
        central.send(.leCreateConnection(LECreateConnectionParameters(peer: LEAddress(tag.address, type: AddressType(rawValue: 0x02)))))
        lab.run(for: .seconds(2))
        XCTAssertEqual(central.connectionCompletes.first?.event.peer, LEAddress(tag.address, type: AddressType(rawValue: 0x02)))
        XCTAssertEqual(tag.connectionCompletes.first?.event.peer, central.publicAddress)
    }

    func testOwnAddressType2UsesAnRPAOfTheLocalIRKRenewedEveryTimeout() throws {
        let lab = TestLab()
        let tag = lab.device("tag", "00:1B:DC:00:00:0E")
        let scanner = lab.device("scanner", "C0:00:00:00:00:01")
        tag.bringUp()
        scanner.bringUp()
        tag.send(.leAddDeviceToResolvingList(peerIdentityType: 0x00, peerIdentity: scanner.address,
                                             peerIRK: [UInt8](repeating: 0, count: 16), localIRK: irk.reversed()))
        tag.send(.leSetResolvablePrivateAddressTimeout(2))
        tag.send(.leSetAddressResolutionEnable(true))
        lab.settle()
        tag.expectAllSucceeded()
        tag.clear()
        tag.advertise(ownAddressType: AddressType(rawValue: 0x02))
        scanner.scan()
        lab.run(for: .seconds(1))
        let first = try XCTUnwrap(scanner.reports.last?.report.sender)
        XCTAssertEqual(first.type, .random)
        XCTAssertEqual(first.address.rawValue >> 46, 0b01)
        let prand = [UInt8(first.address.rawValue >> 40 & 0xFF), UInt8(first.address.rawValue >> 32 & 0xFF), UInt8(first.address.rawValue >> 24 & 0xFF)]
        let hash = try SecurityToolbox.ah(irk, prand)
        XCTAssertEqual(first.address.rawValue & 0xFF_FFFF, UInt64(hash[0]) << 16 | UInt64(hash[1]) << 8 | UInt64(hash[2]))
        // Advertising again after RPA_Timeout takes a new one.
        lab.run(for: .seconds(2))
        tag.send(.leSetAdvertisingEnable(false))
        tag.send(.leSetAdvertisingEnable(true))
        lab.run(for: .seconds(1))
        XCTAssertNotEqual(scanner.reports.last?.report.sender, first)
    }

    func testCommandsAnswersAndLimits() {
        let lab = TestLab()
        let host = lab.device("a", "C0:00:00:00:00:01")
        host.bringUp()
        host.send(.leReadFilterAcceptListSize)
        host.send(.leReadResolvingListSize)
        lab.settle()
        XCTAssertEqual(host.received.map(\.frame), [hex("04 0e 05 01 0f 20 00 10"), hex("04 0e 05 01 2a 20 00 08")])
        host.clear()
        for i in 0..<16 { host.send(.leAddDeviceToFilterAcceptList(addressType: 0x00, address: BDAddr(rawValue: UInt64(i + 1)))) }
        host.send(.leAddDeviceToFilterAcceptList(addressType: 0x00, address: BDAddr(rawValue: 99)))
        host.send(.leAddDeviceToFilterAcceptList(addressType: 0x02, address: BDAddr(rawValue: 1)))
        lab.settle()
        XCTAssertEqual(status(host), HCIStatus.invalidCommandParameters.rawValue)
        XCTAssertEqual(statuses(host).suffix(2), [.memoryCapacityExceeded, .invalidCommandParameters])
        host.clear()
        let zero = [UInt8](repeating: 0, count: 16)
        host.send(.leAddDeviceToResolvingList(peerIdentityType: 0x00, peerIdentity: BDAddr(rawValue: 1), peerIRK: irk, localIRK: zero))
        host.send(.leAddDeviceToResolvingList(peerIdentityType: 0x00, peerIdentity: BDAddr(rawValue: 1), peerIRK: irk, localIRK: zero))
        host.send(.leRemoveDeviceFromResolvingList(peerIdentityType: 0x00, peerIdentity: BDAddr(rawValue: 2)))
        host.send(.leSetResolvablePrivateAddressTimeout(0))
        host.send(.leSetResolvablePrivateAddressTimeout(0x0E11))
        lab.settle()
        XCTAssertEqual(statuses(host), [.success, .invalidCommandParameters, .unknownConnectionIdentifier, .invalidCommandParameters,
                                        .invalidCommandParameters])
        // Resolution on while scanning: the resolving list is locked.
        host.send(.leSetAddressResolutionEnable(true))
        host.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        host.send(.leClearResolvingList)
        host.send(.leSetAddressResolutionEnable(false))
        lab.settle()
        XCTAssertEqual(statuses(host).suffix(2), [.commandDisallowed, .commandDisallowed])
        // Reset empties both lists.
        host.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        host.send(.reset)
        host.send(.leRemoveDeviceFromResolvingList(peerIdentityType: 0x00, peerIdentity: BDAddr(rawValue: 1)))
        lab.settle()
        XCTAssertEqual(status(host), HCIStatus.unknownConnectionIdentifier.rawValue)
    }
}
