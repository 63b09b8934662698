import BLEWire

// One-line descriptions in spec terms, used in logs and failure reports.

extension HCIEvent: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .disconnectionComplete(e):
            return "Disconnection Complete status \(e.status.name) handle 0x\(hex4(e.handle)) reason \(e.reason)"
        case let .commandComplete(e):
            return "Command Complete (\(e.opcode)) status \(e.status?.name ?? "-")" +
                (e.returnParameters.count > 1 ? " [\(e.returnParameters.dropFirst().spacedHex)]" : "")
        case let .commandStatus(e):
            return "Command Status (\(e.opcode)) status \(e.status.name)"
        case let .hardwareError(code):
            return "Hardware Error 0x\(hex2(code))"
        case let .encryptionChange(e):
            return "Encryption Change status \(e.status.name) handle 0x\(hex4(e.handle)) encryption \(e.encryptionEnabled == 0 ? "off" : "on")"
        case let .encryptionKeyRefreshComplete(status, handle):
            return "Encryption Key Refresh Complete status \(status.name) handle 0x\(hex4(handle))"
        case let .numberOfCompletedPackets(list):
            return "Number Of Completed Packets " + list.map { "handle 0x\(hex4($0.handle)): \($0.count)" }.joined(separator: ", ")
        case let .leMeta(e):
            return e.description
        case let .unknown(code, params):
            return "Event 0x\(hex2(code)) [\(params.spacedHex)]"
        }
    }
}

extension LEMetaEvent: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .connectionComplete(e):
            return "LE Connection Complete status \(e.status.name) handle 0x\(hex4(e.handle)) role \(e.role) peer \(e.peer) " +
                "interval \(Double(e.connectionInterval) * 1.25) ms timeout \(Int(e.supervisionTimeout) * 10) ms"
        case let .advertisingReport(list):
            return "LE Advertising Report " + list.map { r in
                let ad = (try? AdvertisingData(decoding: r.data))?.description ?? r.data.spacedHex
                return "\(r.eventType) \(r.sender) rssi \(r.rssi) [\(ad)]"
            }.joined(separator: "; ")
        case let .connectionUpdateComplete(e):
            return "LE Connection Update Complete status \(e.status.name) handle 0x\(hex4(e.handle)) " +
                "interval \(Double(e.connectionInterval) * 1.25) ms latency \(e.peripheralLatency) timeout \(Int(e.supervisionTimeout) * 10) ms"
        case let .remoteConnectionParameterRequest(e):
            return "LE Remote Connection Parameter Request handle 0x\(hex4(e.handle)) " +
                "interval \(Double(e.intervalMin) * 1.25)–\(Double(e.intervalMax) * 1.25) ms latency \(e.maxLatency) timeout \(Int(e.timeout) * 10) ms"
        case let .longTermKeyRequest(handle, random, ediv):
            return "LE Long Term Key Request handle 0x\(hex4(handle)) Rand \(random.spacedHex) EDIV 0x\(hex4(ediv))"
        case let .enhancedConnectionComplete(e):
            return "LE Enhanced Connection Complete\(e.version2 == nil ? "" : " [v2]") status \(e.status.name) handle 0x\(hex4(e.handle)) " +
                "role \(e.role) peer \(LEAddress(e.peerAddress, type: e.peerAddressType)) " +
                "interval \(Double(e.connectionInterval) * 1.25) ms timeout \(Int(e.supervisionTimeout) * 10) ms"
        case let .extendedAdvertisingReport(list):
            return "LE Extended Advertising Report " + list.map { r in
                let ad = (try? AdvertisingData(decoding: r.data))?.description ?? r.data.spacedHex
                return "\(r.eventType) \(LEAddress(r.address, type: r.addressType)) rssi \(r.rssi) [\(ad)]"
            }.joined(separator: "; ")
        case let .unknown(sub, params):
            return "LE Meta subevent 0x\(hex2(sub)) [\(params.spacedHex)]"
        }
    }
}

extension HCIACLData: CustomStringConvertible {
    public var description: String {
        "ACL handle 0x\(hex4(handle)) \(boundary) \(data.count) octets [\(data.prefix(32).spacedHex)\(data.count > 32 ? " …" : "")]"
    }
}

extension HCIPacket: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .command(c): return c.description
        case let .acl(a): return a.description
        case let .event(e): return e.description
        case let .other(type, bytes): return "\(type) [\(bytes.spacedHex)]"
        }
    }
}
