/// A FIFO over an array with a moving head: O(1) amortised push and pop without the shifting of
/// `removeFirst()`. Internal plumbing for the bearer's request and indication queues.
struct ATTQueue<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head >= items.count }
    var count: Int { items.count - head }

    mutating func push(_ element: Element) { items.append(element) }

    mutating func pop() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Empties the queue, returning what it held in order.
    mutating func drain() -> [Element] {
        let rest = Array(items[head...])
        items.removeAll()
        head = 0
        return rest
    }
}
