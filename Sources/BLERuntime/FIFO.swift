/// A first-in first-out queue over an array with a moving head: O(1) amortised `append` and
/// `popFirst` without the shifting of `Array.removeFirst()`. A popped element's slot is cleared at
/// once, so the caller holds the only reference (an array it pops can be mutated in place).
/// Shared by the loop, the HCI driver's ACL queues, the simulated link and the ATT bearer.
/// Inlinable, so that the modules that use it get it specialized to their element type rather
/// than run generic code through metadata look-ups on every packet.
public struct FIFO<Element> {
    @usableFromInline var slots: [Element?] = []
    @usableFromInline var head = 0

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { head >= slots.count }
    @inlinable public var count: Int { slots.count - head }
    /// The element `popFirst()` would return.
    @inlinable public var first: Element? { head < slots.count ? slots[head] : nil }

    @inlinable public mutating func append(_ element: Element) { slots.append(element) }

    @inlinable public mutating func popFirst() -> Element? {
        guard head < slots.count else { return nil }
        let element = slots[head]
        slots[head] = nil
        head += 1
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
        return element
    }

    @inlinable public mutating func removeAll() {
        slots.removeAll(keepingCapacity: true)
        head = 0
    }

    /// Empties the queue, returning what it held in order.
    @inlinable public mutating func drain() -> [Element] {
        let rest = slots[head...].compactMap { $0 }
        removeAll()
        return rest
    }
}
