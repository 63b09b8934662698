import BLERuntime
import Foundation

/// A repeating timer on a lab's virtual clock, for app code that does periodic work (where an
/// app on Apple's platforms would use `Timer`): inject it into the app under test. The block runs
/// on the main queue's terms, from the thread driving the lab, at exact virtual instants.
public final class CBLabTimer {
    private weak var lab: CBLab?
    private var pending: LoopTimer?
    private let callbacks = DelegateQueue(nil)

    public init(lab: CBLab) {
        self.lab = lab
        callbacks.lock = lab.lock
    }

    /// Calls `block` every `interval` seconds of virtual time, the first time one interval from
    /// now, until `invalidate()`. Starting again replaces the previous schedule.
    public func start(every interval: TimeInterval, _ block: @escaping () -> Void) {
        let held = lab?.lock.enter(); defer { held?.leave() }
        invalidate()
        schedule(after: TimeSpan(seconds: interval), block)
    }

    private func schedule(after span: TimeSpan, _ block: @escaping () -> Void) {
        pending = lab?.loop.schedule(after: span) { [weak self] in
            guard let self else { return }
            self.schedule(after: span, block)
            self.callbacks.run(block)
        }
    }

    /// Stops the timer.
    public func invalidate() {
        let held = lab?.lock.enter(); defer { held?.leave() }
        pending?.cancel()
        pending = nil
    }

    public var isValid: Bool { lab?.lock.locked { pending?.isPending ?? false } ?? false }
}
