import Foundation

/// The lock that makes a lab's API safe from any thread or task, as CoreBluetooth's is.
///
/// One per `CBLab`. The thread that runs the lab's loop (`run(for:)`, `run(within:until:)`) holds
/// it for the whole run, and every public entry point of the managers, peripherals, attributes and
/// the lab takes it first, so a call from another thread waits until the loop has stopped, then
/// runs alone; the loop's own callbacks re-enter it freely (it is recursive). Waiting threads get
/// it in the order they asked (tickets), so a thread hammering the API cannot starve the loop.
///
/// A delegate callback delivered on another queue (`queue.sync` from the loop thread) runs on that
/// queue's thread while the loop thread waits for it: the loop thread gives the lock up meanwhile
/// (`suspend()`, `reclaim(_:)`) and the callback takes it, so that neither the API calls the
/// callback makes nor a call already waiting on that queue's thread can deadlock. Other threads'
/// calls can then come in at that point too, as the callback's own could.
final class LabLock: @unchecked Sendable {
    private let condition = NSCondition()
    private var owner: pthread_t?
    private var depth = 0
    private var nextTicket: UInt64 = 0
    private var serving: UInt64 = 0

    /// Takes the lock (again, if this thread holds it) and returns it, for
    /// `let held = lock?.enter(); defer { held?.leave() }`.
    @discardableResult
    func enter() -> LabLock {
        let me = pthread_self()
        condition.lock()
        defer { condition.unlock() }
        if let owner, pthread_equal(owner, me) != 0 {
            depth += 1
            return self
        }
        let ticket = nextTicket
        nextTicket &+= 1
        while owner != nil || serving != ticket { condition.wait() }
        serving &+= 1
        owner = me
        depth = 1
        return self
    }

    func leave() {
        condition.lock()
        defer { condition.unlock() }
        depth -= 1
        if depth == 0 {
            owner = nil
            condition.broadcast()
        }
    }

    /// Runs `body` holding the lock.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        enter()
        defer { leave() }
        return try body()
    }

    /// Whether the calling thread holds the lock.
    var isHeldByCurrentThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let owner else { return false }
        return pthread_equal(owner, pthread_self()) != 0
    }

    /// Gives the lock up, however deeply this thread holds it, and returns how deeply, for
    /// `reclaim(_:)`: while the loop thread waits for a callback on another queue, that queue's
    /// thread — or any other — can take the lock.
    func suspend() -> Int {
        condition.lock()
        defer { condition.unlock() }
        let held = depth
        owner = nil
        depth = 0
        condition.broadcast()
        return held
    }

    /// Takes the lock back after `suspend()`, as deeply as it was held.
    func reclaim(_ held: Int) {
        enter()
        condition.lock()
        depth = held
        condition.unlock()
    }
}

// MARK: Where each object finds its lab's lock

/// An object of the API whose lab's lock guards its state.
protocol LabLocked: AnyObject {
    var labLock: LabLock? { get }
}

extension LabLocked {
    /// Runs `body` under the lab's lock (directly when the object has no lab).
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        guard let lock = labLock else { return try body() }
        return try lock.locked(body)
    }
}

extension CBManager: LabLocked {
    var labLock: LabLock? { cbLab?.lock }
}

extension CBPeripheral: LabLocked {
    var labLock: LabLock? { manager?.cbLab?.lock }
}

extension CBAttribute: LabLocked {
    /// The lock of the lab a remote attribute lives in, through its peripheral's central manager.
    /// Local attributes (`CBMutableService`…) belong to the app: nil.
    var labLock: LabLock? {
        switch self {
        case let service as CBService: return service.peripheral?.labLock
        case let characteristic as CBCharacteristic: return characteristic.service?.labLock
        case let descriptor as CBDescriptor: return descriptor.characteristic?.labLock
        default: return nil
        }
    }
}
