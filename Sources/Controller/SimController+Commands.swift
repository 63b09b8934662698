import BLEWire
import HCI

// HCI command dispatch (Core 5.4, Vol 4, Part E, 7) and the informational and controller-setup
// commands. Advertising, scanning and connection commands live in their own files.

extension SimController {
    /// The values Read Local Version Information returns (7.4.1): HCI and LMP version 5.4 (0x0D),
    /// company identifier 0xFFFF (reserved for tests, Assigned Numbers 7.1), subversions 0x0001.
    public static let localVersion = ReadLocalVersionInformationReturn(
        hciVersion: 0x0D, hciSubversion: 0x0001, lmpVersion: 0x0D, companyIdentifier: 0xFFFF, lmpSubversion: 0x0001)

    /// Commands whose "Event(s) generated" in Part E, 7 is Command Status; every other command
    /// of the subset completes with Command Complete.
    static func answersWithCommandStatus(_ opcode: HCIOpcode) -> Bool {
        opcode == .disconnect || opcode == .leCreateConnection || opcode == .leConnectionUpdate || opcode == .leEnableEncryption
    }

    func receiveCommand(_ frame: [UInt8]) {
        guard frame.count >= 4 else {
            counters.commandsDroppedTruncated += 1
            return
        }
        let opcode = HCIOpcode(rawValue: UInt16(frame[1]) | UInt16(frame[2]) << 8)
        let command: HCICommand
        do {
            command = try HCICommand(decoding: frame, from: 1)
        } catch {
            // Part E, 4.5: the error is reported in the event the command normally generates,
            // Command Complete or Command Status, with Invalid HCI Command Parameters (0x12).
            // A command the sim does not implement is unknown to it, whatever its parameters.
            reject(opcode, SupportedCommands.supports(opcode) ? .invalidCommandParameters : .unknownCommand)
            return
        }
        execute(command)
    }

    /// Answers `opcode` with `status` alone, in the event that command normally generates.
    func reject(_ opcode: HCIOpcode, _ status: HCIStatus) {
        if Self.answersWithCommandStatus(opcode) {
            sendCommandStatus(opcode, status)
        } else {
            sendCommandComplete(opcode, [status.rawValue])
        }
    }

    private func complete(_ opcode: HCIOpcode, _ status: HCIStatus) {
        sendCommandComplete(opcode, [status.rawValue])
    }

    func execute(_ command: HCICommand) {
        let opcode = command.opcode
        switch command {
        case .reset:
            dropAllState()
            complete(opcode, .success)
        case let .setEventMask(mask):
            eventMask = mask
            complete(opcode, .success)
        case let .leSetEventMask(mask):
            leEventMask = mask
            complete(opcode, .success)
        case .readLocalVersionInformation:
            sendCommandComplete(opcode, Self.localVersion.encoded)
        case .readLocalSupportedCommands:
            sendCommandComplete(opcode, BitFieldReturn(bits: SupportedCommands.bitmap).encoded)
        case .readLocalSupportedFeatures:
            sendCommandComplete(opcode, BitFieldReturn(bits: SupportedCommands.lmpFeatures).encoded)
        case .leReadLocalSupportedFeatures:
            sendCommandComplete(opcode, BitFieldReturn(bits: SupportedCommands.leFeatures).encoded)
        case .readBufferSize:
            // 7.4.5 / 7.8.2: no BR/EDR buffers; the host uses LE Read Buffer Size's.
            sendCommandComplete(opcode, ReadBufferSizeReturn(aclDataPacketLength: 0, synchronousDataPacketLength: 0,
                                                             totalNumACLDataPackets: 0, totalNumSynchronousDataPackets: 0).encoded)
        case .leReadBufferSize:
            sendCommandComplete(opcode, LEReadBufferSizeReturn(
                aclDataPacketLength: UInt16(clamping: model.aclBufferSize),
                totalNumACLDataPackets: UInt8(clamping: model.aclBufferCount)).encoded)
        case .readBDAddr:
            sendCommandComplete(opcode, ReadBDAddrReturn(address: address).encoded)
        case let .readRSSI(handle):
            readRSSI(handle: handle)
        case let .leSetRandomAddress(random):
            complete(opcode, setRandomAddress(random))
        case .leReadAdvertisingPhysicalChannelTxPower:
            sendCommandComplete(opcode, LEReadAdvertisingPhysicalChannelTxPowerReturn(txPowerLevel: model.advertisingTxPower).encoded)
        case let .leSetAdvertisingParameters(parameters):
            complete(opcode, setAdvertisingParameters(parameters))
        case let .leSetAdvertisingData(data):
            advertisingData = data
            complete(opcode, .success)
        case let .leSetScanResponseData(data):
            scanResponseData = data
            complete(opcode, .success)
        case let .leSetAdvertisingEnable(enable):
            complete(opcode, setAdvertisingEnable(enable))
        case let .leSetScanParameters(parameters):
            complete(opcode, setScanParameters(parameters))
        case let .leSetScanEnable(enable, filter):
            complete(opcode, setScanEnable(enable, filterDuplicates: filter))
        case let .leCreateConnection(parameters):
            sendCommandStatus(opcode, createConnection(parameters))
        case .leCreateConnectionCancel:
            createConnectionCancel()
        case let .disconnect(handle, reason):
            disconnect(handle: handle, reason: reason)
        case let .leConnectionUpdate(parameters):
            connectionUpdate(parameters)
        case let .leRemoteConnectionParameterRequestReply(parameters):
            remoteConnectionParameterRequestReply(parameters)
        case let .leRemoteConnectionParameterRequestNegativeReply(handle, reason):
            remoteConnectionParameterRequestNegativeReply(handle: handle, reason: reason)
        case .leReadFilterAcceptListSize, .leClearFilterAcceptList, .leAddDeviceToFilterAcceptList, .leRemoveDeviceFromFilterAcceptList,
             .leAddDeviceToResolvingList, .leRemoveDeviceFromResolvingList, .leClearResolvingList, .leReadResolvingListSize,
             .leSetAddressResolutionEnable, .leSetResolvablePrivateAddressTimeout:
            executeListCommand(command)
        case let .leEncrypt(key, plaintext):
            encrypt(key: key, plaintext: plaintext)
        case .leRand:
            var random = encryptionRandom
            sendCommandComplete(opcode, [HCIStatus.success.rawValue] + SimLink.octets(8, &random))
            encryptionRandom = random
        case let .leEnableEncryption(handle, random, ediv, key):
            sendCommandStatus(opcode, enableEncryption(handle: handle, random: random, ediv: ediv, key: key))
        case let .leLongTermKeyRequestReply(handle, key):
            answerKeyRequest(opcode, handle: handle, key: key)
        case let .leLongTermKeyRequestNegativeReply(handle):
            answerKeyRequest(opcode, handle: handle, key: nil)
        case .unknown, .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
             .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable, .leSetExtendedScanParameters, .leSetExtendedScanEnable,
             .leExtendedCreateConnection:
            // The sim does the legacy advertising, scanning and initiating commands only (its
            // Supported_Commands bits say so); the extended ones are unknown to it.
            // Part E, 4.5 lets a controller answer an opcode it does not support with either event;
            // Command Complete with Unknown HCI Command (0x01), as most controllers do.
            complete(opcode, .unknownCommand)
        }
    }

    /// 7.8.4. The address may not change while advertising, scanning or initiating
    /// use it (Command Disallowed, 0x0C).
    private func setRandomAddress(_ random: BDAddr) -> HCIStatus {
        guard !isAdvertising, !isScanning, initiating == nil else { return .commandDisallowed }
        randomAddress = random
        return .success
    }

    /// 7.5.4: the RSSI this controller measures for the peer of `handle`.
    private func readRSSI(handle: UInt16) {
        guard let entry = linkEntry(handle: handle) else {
            sendCommandComplete(.readRSSI, ReadRSSIReturn(status: .unknownConnectionIdentifier, handle: handle, rssi: 0).encoded)
            return
        }
        let peer = entry.isCentral ? entry.link.peripheral : entry.link.central
        sendCommandComplete(.readRSSI, ReadRSSIReturn(handle: handle, rssi: air.linkRSSIReading(of: peer)).encoded)
    }
}
