import BLERuntime
import XCTest

final class FIFOTests: XCTestCase {
    func testFirstInFirstOutAcrossCompactions() {
        var q = FIFO<Int>()
        XCTAssertTrue(q.isEmpty)
        XCTAssertNil(q.popFirst())
        var expected: [Int] = []
        var popped: [Int] = []
        // Interleave pushes and pops so the head passes the compaction threshold many times.
        for i in 0..<1000 {
            q.append(i)
            expected.append(i)
            if i % 3 == 0, let x = q.popFirst() { popped.append(x) }
        }
        XCTAssertEqual(q.count, 1000 - popped.count)
        XCTAssertEqual(q.first, expected[popped.count])
        popped += q.drain()
        XCTAssertEqual(popped, expected)
        XCTAssertTrue(q.isEmpty)
        XCTAssertEqual(q.count, 0)
    }

    func testAPoppedElementIsNoLongerReferencedByTheQueue() {
        final class Box {}
        var q = FIFO<Box>()
        weak var weakBox: Box?
        do {
            let box = Box()
            weakBox = box
            q.append(box)
            q.append(Box())
        }
        var popped = q.popFirst()
        XCTAssertNotNil(weakBox)
        popped = nil
        XCTAssertNil(popped)
        XCTAssertNil(weakBox, "the queue kept no reference to the popped element")
        XCTAssertEqual(q.count, 1)
    }

    func testRemoveAll() {
        var q = FIFO<String>()
        q.append("a")
        q.append("b")
        q.removeAll()
        XCTAssertTrue(q.isEmpty)
        XCTAssertEqual(q.drain(), [])
    }
}
