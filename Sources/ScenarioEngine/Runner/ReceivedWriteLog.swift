import ScenarioFormat

/// What a `peripheral-received` expectation asks of the writes a peripheral received: a value,
/// a method, both or neither.
struct WriteFilter: Hashable {
    var value: [UInt8]?
    var via: WriteMethod?

    func matches(_ w: LinkObservations.ReceivedWrite) -> Bool {
        (value == nil || w.value == value) && (via == nil || w.method == via)
    }
}

/// Which received writes a scenario's expectations can ask about, decided from the scenario
/// before it runs: the filters of each peripheral's `peripheral-received` expectations, and
/// whether a `write-sent-as` may be judged on a peripheral's side (when the lab does not see
/// the central's HCI it looks at the first write the peripheral received after the write step).
struct WriteQuestions {
    var filters: [String: [WriteFilter]] = [:]
    var asksMethod = false

    init() {}

    init(_ scenario: Scenario) {
        for step in scenario.steps {
            switch step.action {
            case let .expect(.peripheralReceived(e)):
                let filter = WriteFilter(value: e.value, via: e.via)
                if !(filters[e.peripheral] ?? []).contains(filter) { filters[e.peripheral, default: []].append(filter) }
            case .expect(.writeSentAs):
                asksMethod = true
            default:
                break
            }
        }
    }
}

/// The writes of one characteristic a peripheral received. Counted all; kept in full only from
/// the session's floor on (`keep(from:)`: nothing before it is asked again; none kept while
/// nothing is asked), up to `kept` of them; and for each filter of the scenario's expectations
/// on the peripheral, the latest write that matches it. Memory stays bounded however many writes
/// arrive; `peripheral-received` is judged on that latest match (exactly as on the whole list),
/// its failure lists the kept writes (all of them, up to `kept`), and `write-sent-as` reads the
/// first write after its write step.
struct ReceivedWriteLog {
    static let defaultKept = 4096

    let kept: Int
    let filters: [WriteFilter]
    /// Every write so far.
    private(set) var count = 0
    /// Writes from `base` on, while `floor` is set; contiguous while `base + entries.count == count`.
    private var entries: [LinkObservations.ReceivedWrite] = []
    private var base = 0
    private var floor: Int?
    /// For each filter, the latest write that matches it and its index.
    private var latest: [WriteFilter: (index: Int, write: LinkObservations.ReceivedWrite)] = [:]

    init(filters: [WriteFilter], kept: Int = Self.defaultKept, floor: Int?) {
        self.filters = filters
        self.kept = kept
        self.floor = floor
    }

    mutating func append(_ write: LinkObservations.ReceivedWrite) {
        for f in filters where f.matches(write) { latest[f] = (count, write) }
        if floor != nil, base + entries.count == count, entries.count < kept { entries.append(write) }
        count += 1
    }

    /// Only writes from `floor` on are asked about (none: nil). A floor never goes back before
    /// what was dropped.
    mutating func keep(from floor: Int?) {
        self.floor = floor
        let start = floor ?? count
        guard start > base else { return }
        if start <= base + entries.count { entries.removeFirst(start - base) } else { entries.removeAll() }
        base = start
    }

    /// The writes from `mark` on that are kept (all of them unless more than `kept` came), and
    /// how many came.
    func since(_ mark: Int) -> (kept: ArraySlice<LinkObservations.ReceivedWrite>, count: Int) {
        let from = max(mark, base) - base
        return (entries[min(from, entries.count)...], max(0, count - mark))
    }

    /// Write `index`, when kept.
    func write(_ index: Int) -> LinkObservations.ReceivedWrite? {
        guard index >= base, index < base + entries.count else { return nil }
        return entries[index - base]
    }

    /// The latest write from `mark` on that `filter` matches.
    func latest(_ filter: WriteFilter, since mark: Int) -> LinkObservations.ReceivedWrite? {
        if filters.contains(filter) {
            guard let hit = latest[filter], hit.index >= mark else { return nil }
            return hit.write
        }
        return since(mark).kept.last { filter.matches($0) }
    }

    /// Writes kept in full (for tests: bounded).
    var keptCount: Int { entries.count }
}
