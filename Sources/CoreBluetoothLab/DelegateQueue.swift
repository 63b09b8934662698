import Dispatch
import Foundation

/// Runs delegate callbacks on the queue a manager was given, the way CoreBluetooth does, without
/// giving up the lab's determinism.
///
/// Everything in a lab happens on the thread that drives its virtual loop (the test's). A
/// callback is run from there, synchronously:
/// - queue nil or `.main`: directly when the loop runs on the main thread (tests do), else with
///   `DispatchQueue.main.sync`;
/// - any other queue: directly when already on it, else with `queue.sync`.
///
/// Never `async`: a callback runs before the loop takes its next step, so what app code does in
/// it (start a write, stop scanning) happens at the same virtual instant on every run.
final class DelegateQueue {
    private let queue: DispatchQueue?
    /// Marks `queue` so that a callback made while already on it runs inline (`sync` would deadlock).
    private let key = DispatchSpecificKey<Int>()

    init(_ queue: DispatchQueue?) {
        // On Linux `DispatchQueue.main` is a new wrapper object on every access: compare labels.
        if let queue, queue.label != DispatchQueue.main.label {
            self.queue = queue
            queue.setSpecific(key: key, value: 1)
        } else {
            self.queue = nil
        }
    }

    /// The lab's lock: the loop thread gives it up while it waits for a callback on another
    /// queue, and the callback takes it there (LabLock.swift).
    var lock: LabLock?

    func run(_ work: () -> Void) {
        guard let queue else {
            if Thread.isMainThread { work() } else { handOff(to: DispatchQueue.main, work) }
            return
        }
        if DispatchQueue.getSpecific(key: key) == 1 { work() } else { handOff(to: queue, work) }
    }

    private func handOff(to queue: DispatchQueue, _ work: () -> Void) {
        guard let lock, lock.isHeldByCurrentThread else { return queue.sync(execute: work) }
        let held = lock.suspend()
        defer { lock.reclaim(held) }
        queue.sync { lock.locked(work) }
    }
}
