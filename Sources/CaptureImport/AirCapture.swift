import BLEWire
import Controller

// Air captures: link-layer packets a sniffer took off the air, no HCI (docs/import.md, "Air
// captures"). Three pcap link types carry them (tcpdump.org/linktypes.html):
//
// 251 BLUETOOTH_LE_LL: the packet as on air without preamble: access address (4, little-endian),
//     PDU header (2), payload, CRC (3). No channel, RSSI, direction or CRC verdict.
//
// 256 BLUETOOTH_LE_LL_WITH_PHDR: a 10-octet pseudo-header, little-endian, then the same packet:
//
//     offset  size  field
//     0       1     RF channel (0–39, 2402 + 2k MHz: 0 is advertising channel 37, 12 is 38, 39 is 39)
//     1       1     signal power (dBm, signed)
//     2       1     noise power (dBm, signed)
//     3       1     access address offenses
//     4       4     reference access address
//     8       2     flags: 0x0001 dewhitened, 0x0002 signal power valid, 0x0004 noise power valid,
//                   0x0008 decrypted, 0x0010 reference access address valid, 0x0020 offenses valid,
//                   0x0040 channel aliased, 0x0380 PDU type (0 advertising or data of unknown
//                   direction, 1 auxiliary advertising, 2 data central → peripheral, 3 data
//                   peripheral → central, 4/5 isochronous), 0x0400 CRC checked, 0x0800 CRC valid,
//                   0x1000 MIC checked, 0x2000 MIC valid, 0xC000 PHY
//
// 272 NORDIC_BLE (nRF Sniffer for Bluetooth LE, header versions 1–3): board id (1); a header —
//     header length (1, 6), payload length (1), protocol version (1), packet counter (2), packet
//     id (1; 0x06 a received packet) —; a packet header — its length (1, 10 for BLE packets), flags (1:
//     bit 0 CRC OK, bit 1 direction central → peripheral, bit 2 encrypted, bit 3 MIC OK), channel
//     index (1), RSSI (1, the magnitude of a negative dBm), event counter (2), timestamp (4) —; then
//     the packet as for 251. Packets of other ids (sniffer status messages) are skipped. The old
//     0.9.7 format (0xBEEF first) is refused.

/// One link-layer packet of an air capture, its link-type header read.
struct AirPacket {
    var record: Int
    var offset: Int
    /// Microseconds since the first packet.
    var time: Int64
    var accessAddress: UInt32
    /// Header and payload.
    var pdu: [UInt8]
    var crc: [UInt8]
    /// Nil: the capture does not say (251).
    var rssi: Int8?
    /// Data PDUs: sent by the central (true), the peripheral (false), or not said (nil).
    var fromCentral: Bool?
    /// The capture checked the CRC and found it wrong.
    var crcFailed: Bool
    /// The capture says whether the CRC was checked (256's flag, always for 272, never for 251).
    var crcChecked: Bool
    /// The sniffer's connection event counter (272).
    var eventCounter: UInt16?
    /// The sniffer says the packet is encrypted (272) and was not decrypted.
    var encrypted = false

    var isAdvertising: Bool { accessAddress == LinkLayer.advertisingAccessAddress }

    /// An advertising packet whose CRC holds: the capture's verdict when it checked, else CRC-24
    /// with CRCInit 0x555555 (Vol 6, Part B, 3.1.1).
    var advertisingCRCHolds: Bool {
        if crcChecked { return !crcFailed }
        return !crcFailed && LinkLayer.crcMatches(pdu, crc: crc, initial: LinkLayer.advertisingCRCInit)
    }
}

enum AirLinkHeader {
    /// The packet of `packet` under its link type; nil for a Nordic sniffer message that carries no
    /// packet. Malformed headers are `CaptureError.malformedPacket` naming the record and offset.
    static func read(_ packet: PcapPacket, time: Int64) throws -> AirPacket? {
        let data = packet.data
        func malformed(_ why: String) -> CaptureError {
            .malformedPacket(record: packet.number, offset: packet.offset, detail: "\(packet.linkType): \(why)")
        }
        if packet.originalLength > data.count {
            throw CaptureError.truncatedPacket(record: packet.number, offset: packet.offset, kept: data.count, original: packet.originalLength)
        }
        var start = 0
        var rssi: Int8?
        var fromCentral: Bool?
        var crcFailed = false
        var crcChecked = false
        var eventCounter: UInt16?
        var encrypted = false
        switch packet.linkType {
        case .bluetoothLELLWithPHDR:
            guard data.count >= 10 else { throw malformed("\(data.count) octets, shorter than the 10-octet pseudo-header") }
            let flags = UInt16(data[8]) | UInt16(data[9]) << 8
            if flags & 0x0002 != 0 { rssi = Int8(bitPattern: data[1]) }
            switch (flags >> 7) & 0x07 {
            case 2: fromCentral = true
            case 3: fromCentral = false
            default: break
            }
            crcChecked = flags & 0x0400 != 0
            crcFailed = crcChecked && flags & 0x0800 == 0
            start = 10
        case .nordicBLE:
            guard data.count >= 2 else { throw malformed("\(data.count) octets, shorter than the nRF Sniffer header") }
            if data[0] == 0xBE && data[1] == 0xEF {
                throw malformed("the nRF Sniffer 0.9.7 (legacy, 0xBEEF) format is not read; capture with nRF Sniffer 2 or later")
            }
            let headerLength = Int(data[1])
            guard headerLength >= 6, data.count >= 1 + headerLength + 1 else {
                throw malformed("nRF Sniffer header length \(headerLength) in \(data.count) octets")
            }
            guard data[6] == 0x06 else { return nil }   // packet id: not a received BLE packet
            let p = 1 + headerLength
            let packetHeaderLength = Int(data[p])
            guard packetHeaderLength >= 10, data.count >= p + packetHeaderLength else {
                throw malformed("nRF Sniffer packet header length \(packetHeaderLength) in \(data.count) octets")
            }
            let flags = data[p + 1]
            crcChecked = true
            crcFailed = flags & 0x01 == 0
            fromCentral = flags & 0x02 != 0
            encrypted = flags & 0x04 != 0 && flags & 0x08 == 0
            rssi = Int8(clamping: -Int(data[p + 3]))
            eventCounter = UInt16(data[p + 4]) | UInt16(data[p + 5]) << 8
            start = p + packetHeaderLength
        default:   // 251
            break
        }
        let rest = data.count - start
        guard rest >= 4 + 2 + 3 else { throw malformed("\(rest) octets of link-layer packet, fewer than access address, header and CRC (9)") }
        let aa = UInt32(data[start]) | UInt32(data[start + 1]) << 8 | UInt32(data[start + 2]) << 16 | UInt32(data[start + 3]) << 24
        let length = Int(data[start + 5])
        let cte = aa != LinkLayer.advertisingAccessAddress && data[start + 4] & 0x20 != 0 ? 1 : 0
        let pduLength = 2 + cte + length
        guard rest == 4 + pduLength + 3 else {
            throw malformed("the PDU header gives \(length) payload octets, so \(4 + pduLength + 3) octets of packet, but \(rest) follow the link-type header")
        }
        let pdu = Array(data[(start + 4)..<(start + 4 + pduLength)])
        let crc = Array(data[(start + 4 + pduLength)...])
        let directionFromPHDR = packet.linkType == .nordicBLE && aa == LinkLayer.advertisingAccessAddress ? nil : fromCentral
        return AirPacket(record: packet.number, offset: packet.offset, time: time, accessAddress: aa, pdu: pdu, crc: crc, rssi: rssi,
                         fromCentral: directionFromPHDR, crcFailed: crcFailed, crcChecked: crcChecked, eventCounter: eventCounter, encrypted: encrypted)
    }
}
