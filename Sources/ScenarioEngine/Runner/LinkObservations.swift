import ATT
import BLELab
import BLERuntime
import ScenarioFormat
import Transport

/// What crossed the link, per peripheral and characteristic value handle, rebuilt from the ATT
/// PDUs on the HCI of the central (notifications and indications it received) and of each
/// peripheral (writes it received). Handles are the peripheral's own database handles, which are
/// the handles on the link.
final class LinkObservations {
    struct Arrival {
        var time: Instant
        var value: [UInt8]
        var isIndication: Bool
    }

    struct ReceivedWrite {
        var time: Instant
        var value: [UInt8]
        /// Nil when an external peripheral's stack did not say which PDU it was.
        var method: WriteMethod?
        /// The PDU(s) in spec terms, for reports.
        var description: String
    }

    struct Key: Hashable {
        var peripheral: String
        var handle: UInt16
    }

    private(set) var arrivals: [Key: [Arrival]] = [:]
    private(set) var writes: [Key: [ReceivedWrite]] = [:]
    /// The central's connection handles, to tell which peripheral a notification came from.
    private var peripheralByCentralHandle: [UInt16: String] = [:]
    /// Prepare Write Request parts per peripheral, until Execute Write.
    private var prepared: [String: [(handle: UInt16, offset: UInt16, part: [UInt8])]] = [:]

    func connected(_ peripheral: String, centralHandle: UInt16) {
        peripheralByCentralHandle[centralHandle] = peripheral
    }

    func watchCentral(_ traffic: ATTTraffic) {
        traffic.observe { [weak self] record in
            guard let self else { return }
            guard !record.wasSent, let peripheral = self.peripheralByCentralHandle[record.connectionHandle] else { return }
            switch record.pdu {
            case let .handleValueNotification(n)?:
                self.arrivals[Key(peripheral: peripheral, handle: n.handle), default: []]
                    .append(Arrival(time: record.time, value: n.value, isIndication: false))
            case let .handleValueIndication(i)?:
                self.arrivals[Key(peripheral: peripheral, handle: i.handle), default: []]
                    .append(Arrival(time: record.time, value: i.value, isIndication: true))
            default:
                break
            }
        }
    }

    func watchPeripheral(_ id: String, traffic: ATTTraffic) {
        traffic.observe { [weak self] record in
            guard let self else { return }
            guard !record.wasSent, let pdu = record.pdu else { return }
            let time = record.time
            switch pdu {
            case let .writeRequest(w):
                self.add(ReceivedWrite(time: time, value: w.value, method: .request, description: pdu.description), id, w.handle)
            case let .writeCommand(w):
                self.add(ReceivedWrite(time: time, value: w.value, method: .command, description: pdu.description), id, w.handle)
            case let .prepareWriteRequest(p):
                self.prepared[id, default: []].append((p.handle, p.offset, p.partValue))
            case let .executeWriteRequest(e):
                let parts = self.prepared.removeValue(forKey: id) ?? []
                guard e.flags == .write else { return }
                var byHandle: [(UInt16, [UInt8])] = []
                for part in parts {
                    if let i = byHandle.firstIndex(where: { $0.0 == part.handle }) {
                        byHandle[i].1 += part.part
                    } else {
                        byHandle.append((part.handle, part.part))
                    }
                }
                for (handle, value) in byHandle {
                    self.add(ReceivedWrite(time: time, value: value, method: .request,
                                           description: "Prepare Write Requests + Execute Write Request handle \(hex4(handle)), \(value.count) octets"),
                             id, handle)
                }
            default:
                break
            }
        }
    }

    /// A value an external central's stack delivered to its application.
    func delivered(_ peripheral: String, handle: UInt16, time: Instant, value: [UInt8]) {
        arrivals[Key(peripheral: peripheral, handle: handle), default: []].append(Arrival(time: time, value: value, isIndication: false))
    }

    /// A write an external peripheral's application was handed.
    func received(_ peripheral: String, handle: UInt16, time: Instant, value: [UInt8], method: WriteMethod?, description: String) {
        add(ReceivedWrite(time: time, value: value, method: method, description: description), peripheral, handle)
    }

    private func add(_ write: ReceivedWrite, _ peripheral: String, _ handle: UInt16) {
        writes[Key(peripheral: peripheral, handle: handle), default: []].append(write)
    }

    func arrivals(_ peripheral: String, _ handle: UInt16) -> [Arrival] { arrivals[Key(peripheral: peripheral, handle: handle)] ?? [] }

    func writes(_ peripheral: String, _ handle: UInt16) -> [ReceivedWrite] { writes[Key(peripheral: peripheral, handle: handle)] ?? [] }
}

func hex4(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 4 - s.count)) + s
}
