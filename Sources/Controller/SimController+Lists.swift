import BLECrypto
import BLERuntime
import BLEWire
import HCI

// The Filter Accept List (Core 5.4, Vol 6, Part B, 4.3.1; Vol 4, Part E, 7.8.14–7.8.17) and the
// resolving list with controller-based address resolution (Vol 6, Part B, 4.7; Vol 4, Part E,
// 7.8.38–7.8.45).
//
// - A scanner with Scanning_Filter_Policy 0x01 reports only advertisers on the accept list; an
//   initiator with Initiator_Filter_Policy 0x01 connects to the first advertiser on it.
// - With address resolution enabled, an advertiser's resolvable private address that a resolving
//   list entry's peer IRK resolves is reported as that entry's identity, with Address_Type 0x02
//   (public identity) or 0x03 (random identity) (7.7.65.2, 7.7.65.1); the accept list and LE Create
//   Connection's peer (types 0x02/0x03) match the identity. Own_Address_Type 0x02/0x03 then uses
//   a resolvable private address made from the first entry's non-zero local IRK, new every
//   RPA_Timeout; without such an entry, the public or random address (as the specification says).
// - The lists may not change while they are in use (Command Disallowed, 0x0C): the accept list
//   while a filter policy uses it, the resolving list while resolution is enabled and the device
//   advertises, scans or initiates.

struct ControllerLists {
    static let acceptListCapacity = 16
    static let resolvingListCapacity = 8

    struct AcceptEntry: Equatable {
        /// 0x00 public, 0x01 random, 0xFF anonymous advertisements.
        var type: UInt8
        var address: BDAddr
    }

    struct ResolvingEntry {
        var identity: LEAddress
        /// Most significant octet first (HCI carries them least significant first).
        var peerIRK: [UInt8]
        var localIRK: [UInt8]
    }

    var acceptList: [AcceptEntry] = []
    var resolvingList: [ResolvingEntry] = []
    var resolutionEnabled = false
    /// RPA_Timeout in seconds (default 900, 7.8.45).
    var rpaTimeout: UInt16 = 900
    var localRPA: (address: BDAddr, until: Instant)?
    /// Which peer IRK resolves each address heard; forgotten whenever the resolving list changes.
    var resolution = RPAResolutionCache()
}

extension SimController {
    func executeListCommand(_ command: HCICommand) {
        let opcode = command.opcode
        switch command {
        case .leReadFilterAcceptListSize:
            sendCommandComplete(opcode, [HCIStatus.success.rawValue, UInt8(ControllerLists.acceptListCapacity)])
        case .leReadResolvingListSize:
            sendCommandComplete(opcode, [HCIStatus.success.rawValue, UInt8(ControllerLists.resolvingListCapacity)])
        case .leClearFilterAcceptList:
            sendCommandComplete(opcode, [changeAcceptList { $0.removeAll() }.rawValue])
        case let .leAddDeviceToFilterAcceptList(type, address):
            guard type <= 0x01 || type == 0xFF else { return sendCommandComplete(opcode, [HCIStatus.invalidCommandParameters.rawValue]) }
            let entry = ControllerLists.AcceptEntry(type: type, address: address)
            if lists.acceptList.contains(entry) { return sendCommandComplete(opcode, [HCIStatus.success.rawValue]) }
            guard lists.acceptList.count < ControllerLists.acceptListCapacity else {
                return sendCommandComplete(opcode, [HCIStatus.memoryCapacityExceeded.rawValue])
            }
            sendCommandComplete(opcode, [changeAcceptList { $0.append(entry) }.rawValue])
        case let .leRemoveDeviceFromFilterAcceptList(type, address):
            guard type <= 0x01 || type == 0xFF else { return sendCommandComplete(opcode, [HCIStatus.invalidCommandParameters.rawValue]) }
            sendCommandComplete(opcode, [changeAcceptList { $0.removeAll { $0 == .init(type: type, address: address) } }.rawValue])
        case let .leAddDeviceToResolvingList(type, identity, peerIRK, localIRK):
            guard type <= 0x01 else { return sendCommandComplete(opcode, [HCIStatus.invalidCommandParameters.rawValue]) }
            let address = LEAddress(identity, type: AddressType(rawValue: type))
            guard !lists.resolvingList.contains(where: { $0.identity == address }) else {
                return sendCommandComplete(opcode, [HCIStatus.invalidCommandParameters.rawValue])
            }
            guard lists.resolvingList.count < ControllerLists.resolvingListCapacity else {
                return sendCommandComplete(opcode, [HCIStatus.memoryCapacityExceeded.rawValue])
            }
            let entry = ControllerLists.ResolvingEntry(identity: address, peerIRK: peerIRK.reversed(), localIRK: localIRK.reversed())
            sendCommandComplete(opcode, [changeResolvingList { $0.append(entry) }.rawValue])
        case let .leRemoveDeviceFromResolvingList(type, identity):
            let address = LEAddress(identity, type: AddressType(rawValue: type & 0x01))
            guard resolvingListMayChange else { return sendCommandComplete(opcode, [HCIStatus.commandDisallowed.rawValue]) }
            guard let i = lists.resolvingList.firstIndex(where: { $0.identity == address }) else {
                return sendCommandComplete(opcode, [HCIStatus.unknownConnectionIdentifier.rawValue])
            }
            lists.resolvingList.remove(at: i)
            lists.resolution.invalidate()
            lists.localRPA = nil
            sendCommandComplete(opcode, [HCIStatus.success.rawValue])
        case .leClearResolvingList:
            sendCommandComplete(opcode, [changeResolvingList { $0.removeAll() }.rawValue])
        case let .leSetAddressResolutionEnable(enable):
            guard !isAdvertising, !isScanning, initiating == nil else {
                return sendCommandComplete(opcode, [HCIStatus.commandDisallowed.rawValue])
            }
            lists.resolutionEnabled = enable
            lists.localRPA = nil
            sendCommandComplete(opcode, [HCIStatus.success.rawValue])
        case let .leSetResolvablePrivateAddressTimeout(seconds):
            guard (0x0001...0x0E10).contains(seconds) else { return sendCommandComplete(opcode, [HCIStatus.invalidCommandParameters.rawValue]) }
            lists.rpaTimeout = seconds
            sendCommandComplete(opcode, [HCIStatus.success.rawValue])
        default:
            break
        }
    }

    /// Whether a filter policy uses the accept list now (7.8.15–7.8.17: it may not change then).
    private var acceptListInUse: Bool {
        (isAdvertising && advertisingParameters.filterPolicy != 0) || (isScanning && scanParameters.filterPolicy & 0x01 != 0)
            || (initiating?.initiatorFilterPolicy ?? 0) != 0
    }

    private var resolvingListMayChange: Bool {
        !lists.resolutionEnabled || (!isAdvertising && !isScanning && initiating == nil)
    }

    private func changeAcceptList(_ change: (inout [ControllerLists.AcceptEntry]) -> Void) -> HCIStatus {
        guard !acceptListInUse else { return .commandDisallowed }
        change(&lists.acceptList)
        return .success
    }

    private func changeResolvingList(_ change: (inout [ControllerLists.ResolvingEntry]) -> Void) -> HCIStatus {
        guard resolvingListMayChange else { return .commandDisallowed }
        change(&lists.resolvingList)
        lists.resolution.invalidate()
        lists.localRPA = nil
        return .success
    }

    // MARK: Resolution

    /// The identity (Address_Type 0x02/0x03) `address` resolves to with the resolving list, when
    /// resolution is enabled; nil otherwise. Each address is resolved once while the list stays
    /// the same (`RPAResolutionCache`): every advertising report of a device, while its RPA
    /// lasts, would otherwise cost an AES per entry.
    func resolvedIdentity(of address: LEAddress) -> LEAddress? {
        guard lists.resolutionEnabled, address.type == .random else { return nil }
        // An all-zero peer IRK resolves nothing (7.8.38): it stands in the list as no key.
        let list = lists.resolvingList
        guard let k = lists.resolution.index(resolving: address.address.rawValue,
                                             irks: { list.map { $0.peerIRK.contains { $0 != 0 } ? $0.peerIRK : [] } }) else { return nil }
        let entry = list[k]
        return LEAddress(entry.identity.address, type: AddressType(rawValue: entry.identity.type.rawValue | 0x02))
    }

    /// How this controller reports `address` to its host: its identity when resolved.
    func reportedAddress(_ address: LEAddress) -> LEAddress { resolvedIdentity(of: address) ?? address }

    /// Whether `address` (resolved first) is on the accept list.
    func isAccepted(_ address: LEAddress) -> Bool {
        let reported = reportedAddress(address)
        let type = reported.type.rawValue & 0x01
        return lists.acceptList.contains { $0.type == type && $0.address == reported.address }
    }

    /// Whether `address` is the device an LE Create Connection names: its on-air address, or
    /// (types 0x02/0x03) the identity it resolves to.
    func isTarget(_ address: LEAddress, of p: LECreateConnectionParameters) -> Bool {
        if address == Self.onAirPeer(p) { return true }
        guard p.peerAddressType.rawValue >= 0x02, let identity = resolvedIdentity(of: address) else { return false }
        return identity.address == p.peerAddress && identity.type.rawValue & 0x01 == p.peerAddressType.rawValue & 0x01
    }

    /// The address for Own_Address_Type 0x02/0x03 with resolution enabled: a resolvable private
    /// address from the first entry's non-zero local IRK, the same until RPA_Timeout passes; nil
    /// without such an entry (the caller falls back to the public or random address).
    func localPrivateAddress() -> BDAddr? {
        guard lists.resolutionEnabled, let irk = lists.resolvingList.first(where: { $0.localIRK.contains { $0 != 0 } })?.localIRK else {
            return nil
        }
        if let current = lists.localRPA, loop.now < current.until { return current.address }
        var random = encryptionRandom
        guard let raw = try? ResolvablePrivateAddress.make(irk: irk, draw: { random.next() }) else { return nil }
        encryptionRandom = random
        let address = BDAddr(rawValue: raw)
        lists.localRPA = (address, loop.now + .seconds(Int64(lists.rpaTimeout)))
        return address
    }
}
