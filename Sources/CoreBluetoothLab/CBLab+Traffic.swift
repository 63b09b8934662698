import ATT
import BLELab
import BLERuntime
import Foundation
import GATT
import Transport

/// What crossed the links: the evidence behind "the app wrote with a Write Command", taken from
/// the ATT PDUs in the receiving device's HCI packet log, not from what any API believed.
extension CBLab {
    /// One ATT write of a characteristic value, as the device holding the characteristic
    /// received it.
    public struct ATTWrite: CustomStringConvertible {
        public let time: Instant
        /// Write Request (0x12), Write Command (0x52), or Prepare Write Request (0x16, a part of
        /// a long write).
        public let opcode: ATTOpcode
        public let handle: UInt16
        public let value: Data
        /// The lab device that received it.
        public let receiver: String

        /// The write type that produces this opcode.
        public var writeType: CBCharacteristicWriteType { opcode == .writeCommand ? .withoutResponse : .withResponse }

        public var description: String {
            "\(time) \(receiver) ← \(opcode) handle 0x\(String(handle, radix: 16)) [\(value.map { String(format: "%02x", $0) }.joined(separator: " "))]"
        }
    }

    /// Every ATT write to the value of a characteristic with `uuid`, received by any device in
    /// the lab, in order of time.
    public func attWrites(to uuid: CBUUID) -> [ATTWrite] {
        let held = lock.enter(); defer { held.leave() }
        var writes: [ATTWrite] = []
        for device in lab.devices {
            let database = device.host.gattServer.database
            let handles = Set(database.services.flatMap(\.characteristics).filter { $0.uuid == uuid.bluetoothUUID }.map(\.valueHandle))
            guard !handles.isEmpty else { continue }
            for record in device.traffic.received {
                let write: (UInt16, [UInt8])?
                switch record.pdu {
                case let .writeRequest(r)?: write = (r.handle, r.value)
                case let .writeCommand(c)?: write = (c.handle, c.value)
                case let .prepareWriteRequest(p)?: write = (p.handle, p.partValue)
                default: write = nil
                }
                guard let (handle, value) = write, handles.contains(handle), let opcode = record.opcode else { continue }
                writes.append(ATTWrite(time: record.time, opcode: opcode, handle: handle, value: Data(value), receiver: device.name))
            }
        }
        return writes.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
    }

    /// The ATT PDUs a manager's host sent and received, in order.
    public func attTraffic(of manager: CBManager) -> [ATTTraffic.Record] {
        let held = lock.enter(); defer { held.leave() }
        return manager.device?.traffic.records ?? []
    }
}
