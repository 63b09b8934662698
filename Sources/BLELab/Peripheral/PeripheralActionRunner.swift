import ATT
import BLERuntime
import ScenarioFormat

/// How a scenario's peripheral runs its actions, whoever serves it (`SimulatedPeripheral`, or
/// another stack's peripheral such as BlueZLab's): the order, the delays, the answer to the request
/// a trigger runs for, the seeded value sources and the repeating notifications. The peripheral
/// only says what one action does on its stack (`execute`).
///
/// The actions of an `on-read` or `on-write` trigger run in order; leading `delay`s postpone the
/// answer, and the request is answered just before the first other action — with that error if it
/// is `respond-error`, else normally (a write is stored then) — so the remaining actions see the
/// new value. What follows a `delay` runs later, on the loop.
public final class PeripheralActionRunner {
    /// Where actions run: their site (which names generator state), the value a write trigger
    /// received, and the request to answer.
    public struct Context {
        public var site: String
        public var written: [UInt8]?
        /// Answers the request in progress (nil error: success); nil when there is none or it
        /// was answered.
        public var answer: ((ATTErrorCode?) -> Void)?
        /// Collects what the actions did, up to the first `delay` (`SimulatedPeripheral.perform(_:site:report:)`).
        var reporter: ActionReporter?

        public init(site: String, written: [UInt8]? = nil, answer: ((ATTErrorCode?) -> Void)? = nil) {
            self.site = site
            self.written = written
            self.answer = answer
        }

        init(site: String, written: [UInt8]?, answer: ((ATTErrorCode?) -> Void)?, reporter: ActionReporter?) {
            self.init(site: site, written: written, answer: answer)
            self.reporter = reporter
        }
    }

    public let loop: EventLoop
    private var random: SeededRandom
    /// Generator state per action site (counter values, sequence positions).
    private var generatorState: [String: Int] = [:]
    private var repeating: [CharacteristicRef: LoopTimer] = [:]

    /// Does one action on the peripheral's stack, at `site` (never a `delay`, nor the
    /// `respond-error` that answered a request).
    public var execute: (_ action: PeripheralAction, _ context: Context, _ site: String) -> Void = { _, _, _ in }
    /// The request was answered with `code` (a `respond-error`).
    public var answered: (_ code: ATTErrorCode) -> Void = { _ in }

    /// `seed` is the lab's: every stack serving peripheral `id` draws the same values from it.
    public init(loop: EventLoop, seed: UInt64, peripheral id: String) {
        self.loop = loop
        random = SeededRandom(seed: seed, stream: "peripheral:\(id)")
    }

    /// Runs `actions`, numbering their sites from `index`.
    public func run(_ actions: ArraySlice<PeripheralAction>, context: Context, index: Int = 0) {
        var context = context
        var index = index
        for (offset, action) in zip(actions.indices, actions) {
            if case let .delay(span) = action {
                let rest = actions[(offset + 1)...]
                let next = index + 1
                var carried = context
                carried.reporter = nil
                loop.schedule(after: span) { [weak self] in self?.run(rest, context: carried, index: next) }
                if !rest.isEmpty { context.reporter?.report.deferred = span }
                context.reporter?.seal()
                return
            }
            if let answer = context.answer {
                context.answer = nil
                if case let .respondError(code) = action {
                    answered(code)
                    answer(code)
                    index += 1
                    continue
                }
                answer(nil)
            }
            execute(action, context, "\(context.site)#\(index)")
            index += 1
        }
        // Only delays, or nothing: answer now.
        if let answer = context.answer { answer(nil) }
        context.reporter?.seal()
    }

    // MARK: Values

    /// The bytes of `source`; nil source: the stored value.
    public func resolve(_ source: ValueSource?, stored: () -> [UInt8], context: Context, site: String) -> [UInt8] {
        guard let source else { return stored() }
        var part = 0
        return resolve(source, context: context, site: site, part: &part)
    }

    /// The bytes of `source` at `site`; `part` numbers the generators of a concatenation.
    public func resolve(_ source: ValueSource, context: Context, site: String, part: inout Int) -> [UInt8] {
        let key = "\(site).\(part)"
        part += 1
        switch source {
        case let .bytes(b): return b
        case .written: return context.written ?? []
        case let .randomU8(range):
            return [UInt8(random.int(in: Int64(range.lowerBound)...Int64(range.upperBound)))]
        case let .counterU8(start):
            let n = generatorState[key, default: 0]
            generatorState[key] = n + 1
            return [UInt8(truncatingIfNeeded: Int(start) + n)]
        case let .sequence(list):
            guard !list.isEmpty else { return [] }
            let n = generatorState[key, default: 0]
            generatorState[key] = n + 1
            return list[n % list.count]
        case let .concatenation(parts):
            return parts.flatMap { resolve($0, context: context, site: site, part: &part) }
        }
    }

    // MARK: notify-every

    /// `notify-every`: `fire` every `interval`, `count` times (nil: until stopped), replacing one
    /// already running on `ref`. `fire` returns false to stop.
    public func startRepeating(_ ref: CharacteristicRef, interval: TimeSpan, count: Int?, site: String,
                               _ fire: @escaping (Context) -> Bool) {
        repeating[ref]?.cancel()
        tick(ref, interval: interval, remaining: count, site: site, fire)
    }

    /// `stop-notifying`: false when no `notify-every` runs on `ref`.
    @discardableResult
    public func stopRepeating(_ ref: CharacteristicRef) -> Bool {
        guard let timer = repeating.removeValue(forKey: ref) else { return false }
        timer.cancel()
        return true
    }

    /// Stops every `notify-every` (the peripheral stops).
    public func stopAllRepeating() {
        for timer in repeating.values { timer.cancel() }
        repeating.removeAll()
    }

    private func tick(_ ref: CharacteristicRef, interval: TimeSpan, remaining: Int?, site: String, _ fire: @escaping (Context) -> Bool) {
        if let remaining, remaining <= 0 {
            repeating[ref] = nil
            return
        }
        repeating[ref] = loop.schedule(after: interval) { [weak self] in
            guard let self, fire(Context(site: site)) else { return }
            self.tick(ref, interval: interval, remaining: remaining.map { $0 - 1 }, site: site, fire)
        }
    }
}
