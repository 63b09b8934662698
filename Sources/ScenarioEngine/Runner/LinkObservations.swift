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

    private var arrivalLogs: [Key: ArrivalLog] = [:]
    /// How many arrivals of a characteristic are kept in full from the session's mark on (at
    /// least the longest `in-order` list of the scenario, so that it is judged on every value).
    let keptArrivals: Int
    /// The writes each peripheral received, per characteristic (`ReceivedWriteLog`).
    private var writeLogs: [Key: ReceivedWriteLog] = [:]
    /// What the scenario's expectations can ask of them.
    let writeQuestions: WriteQuestions
    /// The central's connection handles, to tell which peripheral a notification came from.
    private var peripheralByCentralHandle: [UInt16: String] = [:]
    /// Prepare Write Request parts per peripheral, until Execute Write.
    private var prepared: [String: [(handle: UInt16, offset: UInt16, part: [UInt8])]] = [:]

    init(keptArrivals: Int = ArrivalLog.defaultKept, writeQuestions: WriteQuestions = WriteQuestions()) {
        self.keptArrivals = max(keptArrivals, ArrivalLog.listed)
        self.writeQuestions = writeQuestions
    }

    func connected(_ peripheral: String, centralHandle: UInt16) {
        peripheralByCentralHandle[centralHandle] = peripheral
    }

    func watchCentral(_ traffic: ATTTraffic) {
        traffic.observe { [weak self] record in
            guard let self else { return }
            guard !record.wasSent, let peripheral = self.peripheralByCentralHandle[record.connectionHandle] else { return }
            switch record.pdu {
            case let .handleValueNotification(n)?:
                self.arrive(Key(peripheral: peripheral, handle: n.handle), time: record.time, value: n.value, isIndication: false)
            case let .handleValueIndication(i)?:
                self.arrive(Key(peripheral: peripheral, handle: i.handle), time: record.time, value: i.value, isIndication: true)
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
        arrive(Key(peripheral: peripheral, handle: handle), time: time, value: value, isIndication: false)
    }

    private func arrive(_ key: Key, time: Instant, value: [UInt8], isIndication: Bool) {
        arrivalLogs[key, default: ArrivalLog(kept: keptArrivals)].append(Arrival(time: time, value: value, isIndication: isIndication))
    }

    /// A write an external peripheral's application was handed.
    func received(_ peripheral: String, handle: UInt16, time: Instant, value: [UInt8], method: WriteMethod?, description: String) {
        add(ReceivedWrite(time: time, value: value, method: method, description: description), peripheral, handle)
    }

    private func add(_ write: ReceivedWrite, _ peripheral: String, _ handle: UInt16) {
        let key = Key(peripheral: peripheral, handle: handle)
        writeLogs[key, default: newWriteLog(key)].append(write)
    }

    /// Before any mark: a peripheral with `peripheral-received` expectations keeps its writes
    /// from the first on, any other none.
    private func newWriteLog(_ key: Key) -> ReceivedWriteLog {
        let filters = writeQuestions.filters[key.peripheral] ?? []
        return ReceivedWriteLog(filters: filters, floor: filters.isEmpty ? nil : 0)
    }

    /// Nothing before write `floor` of the characteristic is asked about any more (nil: nothing).
    func keepWrites(_ key: Key, from floor: Int?) {
        writeLogs[key, default: newWriteLog(key)].keep(from: floor)
    }

    /// How many notifications and indications of the characteristic have arrived so far.
    func arrivalCount(_ peripheral: String, _ handle: UInt16) -> Int { arrivalLogs[Key(peripheral: peripheral, handle: handle)]?.count ?? 0 }

    /// What arrived of the characteristic after the first `mark` arrivals.
    func arrivals(_ peripheral: String, _ handle: UInt16, since mark: Int) -> ArrivalsSince {
        arrivalLogs[Key(peripheral: peripheral, handle: handle)]?.since(mark) ?? ArrivalsSince(count: 0, indications: 0, listed: [], last: nil, values: [])
    }

    /// The session's mark for `key` moved to `mark`: nothing before it is asked for again, so
    /// it need not be kept.
    func forgetArrivals(_ key: Key, before mark: Int) {
        arrivalLogs[key]?.forget(before: mark)
    }

    /// How many writes of the characteristic the peripheral received so far.
    func writeCount(_ peripheral: String, _ handle: UInt16) -> Int { writeLogs[Key(peripheral: peripheral, handle: handle)]?.count ?? 0 }

    /// The writes from `mark` on that are kept, and how many came.
    func writes(_ peripheral: String, _ handle: UInt16, since mark: Int) -> (kept: ArraySlice<ReceivedWrite>, count: Int) {
        writeLogs[Key(peripheral: peripheral, handle: handle)]?.since(mark) ?? ([], 0)
    }

    /// Write `index` of the characteristic (from 0), when kept.
    func write(_ peripheral: String, _ handle: UInt16, at index: Int) -> ReceivedWrite? {
        writeLogs[Key(peripheral: peripheral, handle: handle)]?.write(index)
    }

    /// The latest write from `mark` on that `filter` matches.
    func latestWrite(_ peripheral: String, _ handle: UInt16, matching filter: WriteFilter, since mark: Int) -> ReceivedWrite? {
        writeLogs[Key(peripheral: peripheral, handle: handle)]?.latest(filter, since: mark)
    }

    /// Writes kept in full, over every characteristic (bounded however many arrive).
    var keptWrites: Int { writeLogs.values.reduce(0) { $0 + $1.keptCount } }
}

/// What arrived of one characteristic after a mark: enough to judge any `notification`
/// expectation and to describe it, without keeping a day-long stream.
struct ArrivalsSince {
    /// How many arrived (exact).
    var count: Int
    /// How many of them were indications.
    var indications: Int
    /// The first few (`ArrivalLog.listed`), for messages.
    var listed: [LinkObservations.Arrival]
    /// The latest.
    var last: LinkObservations.Arrival?
    /// Every value in order, when no more than the log keeps in full arrived (nil beyond that:
    /// more than any `in-order` list of the scenario holds).
    var values: [[UInt8]]?
}

/// The notifications and indications of one characteristic. Counted all; kept in full from the
/// session's mark on (`forget(before:)`) up to `kept` of them, plus the latest `kept` in a ring
/// (a mark may be set a little after the count it takes was read: the count before a subscribe
/// step). Memory stays bounded however long the stream runs; every expectation is still judged
/// on exact counts, the first values, the last value and, for `in-order`, all values.
struct ArrivalLog {
    /// How many of the first arrivals after a mark a message lists.
    static let listed = 10
    static let defaultKept = 4096

    let kept: Int
    /// Every arrival so far.
    private(set) var count = 0
    private var indicationsTotal = 0
    /// Arrivals from `base` on, at most `kept`; `headIsCurrent` while they reach the latest.
    private var head: [Entry] = []
    private var base = 0
    private var headIsCurrent = true
    /// The latest arrivals, at most `kept`, oldest at `ringStart`.
    private var ring: [Entry] = []
    private var ringStart = 0

    struct Entry {
        var arrival: LinkObservations.Arrival
        /// Indications before this one, of all arrivals.
        var indicationsBefore: Int
    }

    init(kept: Int) { self.kept = kept }

    mutating func append(_ arrival: LinkObservations.Arrival) {
        let entry = Entry(arrival: arrival, indicationsBefore: indicationsTotal)
        if headIsCurrent {
            if head.count < kept { head.append(entry) } else { headIsCurrent = false }
        }
        if ring.count < kept {
            ring.append(entry)
        } else {
            ring[ringStart] = entry
            ringStart = (ringStart + 1) % kept
        }
        count += 1
        if arrival.isIndication { indicationsTotal += 1 }
    }

    /// Arrival `index` (from 0), when still kept.
    private func entry(_ index: Int) -> Entry? {
        if index >= base, index < base + head.count { return head[index - base] }
        let oldest = count - ring.count
        guard index >= oldest, index < count else { return nil }
        return ring[(ringStart + index - oldest) % ring.count]
    }

    /// Drops what comes before `mark`; the head then starts at the mark, taken up again from the
    /// ring as far as the ring reaches back (it always does for a mark read a little earlier).
    mutating func forget(before mark: Int) {
        guard mark > base else { return }
        if mark <= base + head.count { head.removeFirst(mark - base) } else { head.removeAll() }
        base = mark
        var next = base + head.count
        let oldest = count - ring.count
        while next < count, head.count < kept, next >= oldest {
            head.append(ring[(ringStart + next - oldest) % ring.count])
            next += 1
        }
        headIsCurrent = next == count
    }

    func since(_ mark: Int) -> ArrivalsSince {
        let n = max(0, count - mark)
        let first = entry(mark)
        var listed: [LinkObservations.Arrival] = []
        for i in mark..<(mark + min(n, Self.listed)) {
            guard let e = entry(i) else { break }
            listed.append(e.arrival)
        }
        var values: [[UInt8]]? = []
        for i in mark..<(mark + n) {
            guard n <= kept, let e = entry(i) else { values = nil; break }
            values!.append(e.arrival.value)
        }
        let indications = n == 0 ? 0 : first.map { indicationsTotal - $0.indicationsBefore } ?? 0
        return ArrivalsSince(count: n, indications: indications, listed: listed, last: n == 0 ? nil : entry(count - 1)?.arrival,
                             values: values)
    }
}

func hex4(_ v: UInt16) -> String {
    let s = String(v, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 4 - s.count)) + s
}
