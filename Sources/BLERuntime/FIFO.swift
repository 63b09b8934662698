/// A first-in first-out queue over an array with a moving head: O(1) amortised `append` and
/// `popFirst` without the shifting of `Array.removeFirst()`. A popped element's slot is cleared at
/// once, so the caller holds the only reference (an array it pops can be mutated in place).
/// Shared by the loop, the HCI driver's ACL queues, the simulated link and the ATT bearer.
public struct FIFO<Element> {
    private var slots: [Element?] = []
    private var head = 0

    public init() {}

    public var isEmpty: Bool { head >= slots.count }
    public var count: Int { slots.count - head }
    /// The element `popFirst()` would return.
    public var first: Element? { head < slots.count ? slots[head] : nil }

    public mutating func append(_ element: Element) { slots.append(element) }

    public mutating func popFirst() -> Element? {
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

    public mutating func removeAll() {
        slots.removeAll(keepingCapacity: true)
        head = 0
    }

    /// Empties the queue, returning what it held in order.
    public mutating func drain() -> [Element] {
        let rest = slots[head...].compactMap { $0 }
        removeAll()
        return rest
    }
}
