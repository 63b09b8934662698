import BLECrypto
import BLELab
import BLERuntime
import BLEWire
import GAP
import HCI
import SMP
import XCTest

/// Host-based LE privacy (Vol 3 Part C 10.7, Vol 6 Part B 1.3.2.2): a peripheral advertising from
/// a rotating resolvable private address, a bonded central resolving it, an unbonded one not.
final class PrivacyTests: XCTestCase {
    func testAnRPAHasTheFormOfTheSpecificationAndResolvesWithItsIRKOnly() throws {
        let irk = Array(UInt8(1)...16)
        var n: UInt8 = 0
        let address = try ResolvablePrivateAddress.make(irk: irk) { n &+= 37; return n }
        let rpa = LEAddress(address, type: .random)
        XCTAssertEqual(address.rawValue >> 46, 0b01, "the two top bits of prand are 0b01")
        XCTAssertTrue(ResolvablePrivateAddress.resolves(rpa, with: irk))
        XCTAssertFalse(ResolvablePrivateAddress.resolves(rpa, with: irk.reversed()))
        // The hash is ah(IRK, prand) (Vol 3 Part H 2.2.2), as the toolbox computes it.
        let prand = [UInt8(address.rawValue >> 40 & 0xFF), UInt8(address.rawValue >> 32 & 0xFF), UInt8(address.rawValue >> 24 & 0xFF)]
        let hash = try SecurityToolbox.ah(irk, prand)
        XCTAssertEqual(address.rawValue & 0xFF_FFFF, UInt64(hash[0]) << 16 | UInt64(hash[1]) << 8 | UInt64(hash[2]))
        // A static random address (top bits 0b11) is not resolvable.
        XCTAssertFalse(ResolvablePrivateAddress.isResolvable(LEAddress(BDAddr(string: "C0:11:22:33:44:55")!, type: .random)))
    }

    private func lab(seed: UInt64 = 9) throws -> (Lab, LabDevice, LabDevice, LabDevice) {
        let lab = Lab(seed: seed)
        var pc = HostConfiguration(deviceName: "Tag")
        pc.security = SecuritySettings()
        pc.privacy = PrivacySettings(rotation: .seconds(2))
        var cc = HostConfiguration()
        cc.security = SecuritySettings()
        let tag = try lab.addDevice("tag", configuration: pc)
        let bonded = try lab.addDevice("bonded", configuration: cc)
        let stranger = try lab.addDevice("stranger", configuration: cc)
        try lab.powerOn()
        return (lab, tag, bonded, stranger)
    }

    /// The reports of the next second of scanning by `device`.
    private func scan(_ lab: Lab, _ device: LabDevice) throws -> [ScanReport] {
        var reports: [ScanReport] = []
        try lab.wait { done in device.host.startScanning(ScanConfiguration(allowDuplicates: true), onReport: { reports.append($0) }, completion: done) }.get()
        lab.run(for: .milliseconds(900))
        try lab.wait { done in device.host.stopScanning(completion: done) }.get()
        return reports.filter { $0.localName == "Tag" }
    }

    func testABondedCentralFindsTheSameDeviceBehindEachNewAddressAndAStrangerDoesNot() throws {
        let (lab, tag, bonded, stranger) = try lab()
        try lab.wait { done in tag.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "Tag")), completion: done) }.get()
        let first = try XCTUnwrap(tag.host.resolvablePrivateAddress)
        XCTAssertEqual(tag.address, LEAddress(first, type: .random))

        // Pair and bond: the tag gives its IRK and identity (its public address).
        let connection = try lab.wait { done in bonded.host.connect(to: tag.address, completion: done) }.get()
        let outcome = try lab.wait(within: .seconds(5), "pairing") { done in connection.pair(completion: done) }.get()
        let identity = try XCTUnwrap(outcome.peerIdentity)
        XCTAssertEqual(identity.irk, tag.host.identityResolvingKey)
        try lab.wait { done in connection.disconnect(completion: done) }.get()
        XCTAssertTrue(lab.run(within: .seconds(2)) { tag.host.connections.isEmpty })
        try lab.wait { done in tag.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "Tag")), completion: done) }.get()

        // After rotations the tag advertises from other addresses.
        lab.run(for: .seconds(5))
        XCTAssertGreaterThanOrEqual(tag.host.privateAddressHistory.count, 3)
        let bondedSaw = try scan(lab, bonded)
        let strangerSaw = try scan(lab, stranger)
        XCTAssertFalse(bondedSaw.isEmpty)
        XCTAssertFalse(strangerSaw.isEmpty)
        XCTAssertTrue(bondedSaw.allSatisfy { $0.address != LEAddress(first, type: .random) })
        let publicIdentity = LEAddress(try XCTUnwrap(tag.host.publicAddress), type: .public)
        XCTAssertEqual(Set(bondedSaw.compactMap(\.identity)), [publicIdentity])
        XCTAssertTrue(strangerSaw.allSatisfy { $0.identity == nil })
        // Each address the bonded central heard was resolved once (ah with the bond's IRK), its
        // other reports answered from the cache; the scan also heard devices other than the tag.
        let counts = bonded.host.resolutionCounts
        XCTAssertGreaterThan(bondedSaw.count, Set(bondedSaw.map(\.address)).count)
        XCTAssertEqual(counts.misses, Set(bondedSaw.map(\.address)).count)
        XCTAssertGreaterThanOrEqual(counts.hits, bondedSaw.count - Set(bondedSaw.map(\.address)).count)
        // A new bond (here: the same keys stored again) makes the host resolve afresh.
        let misses = counts.misses
        bonded.host.bonds.store(try XCTUnwrap(bonded.host.bonds.bonds.last))
        XCTAssertEqual(bonded.host.resolvedIdentity(of: try XCTUnwrap(bondedSaw.last).address), publicIdentity)
        XCTAssertEqual(bonded.host.resolutionCounts.misses, misses + 1)

        // Reconnecting to the new address, the bond is found through the IRK and encrypts.
        let again = try lab.wait { done in bonded.host.connect(to: try! XCTUnwrap(bondedSaw.last).address, completion: done) }.get()
        let security = try lab.wait(within: .seconds(5), "encryption") { done in again.encrypt(completion: done) }.get()
        XCTAssertTrue(security.encrypted)
    }

    func testTheAddressChangesEveryRotationAndDiffersEachTime() throws {
        let (lab, tag, _, stranger) = try lab()
        try lab.wait { done in tag.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "Tag")), completion: done) }.get()
        var seen: [LEAddress] = []
        for _ in 0..<3 {
            seen.append(contentsOf: try scan(lab, stranger).map(\.address))
            lab.run(for: .seconds(1))
        }
        let distinct = Set(seen)
        XCTAssertGreaterThanOrEqual(distinct.count, 2, "\(seen)")
        XCTAssertTrue(distinct.allSatisfy { ResolvablePrivateAddress.resolves($0, with: tag.host.identityResolvingKey ?? []) })
        XCTAssertEqual(Set(tag.host.privateAddressHistory.map { LEAddress($0, type: .random) }).isSuperset(of: distinct), true)
    }
}
