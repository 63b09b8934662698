import BLELab
import BLERuntime
import CoreBluetoothLab
import Dispatch
import Foundation
import ScenarioFormat
import XCTest

/// CoreBluetooth's API is safe to call from any thread or task; so is the lab's. Here threads and
/// tasks read characteristic values and states and write while the test thread runs the loop.
/// `make test-tsan` runs these under the thread sanitizer (filter `ThreadSafetyTests`): before the
/// lab lock, the value reads raced the loop's assignments (one run crashed converting
/// `characteristic.value` to `[UInt8]`).
final class ThreadSafetyTests: LabTestCase {
    /// Each thread's work, counted, so that the test can wait for all of them without sleeping.
    private final class Workers: @unchecked Sendable {
        let group = DispatchGroup()
        var finished: Bool { group.wait(timeout: .now()) == .success }

        func start(_ count: Int = 1, _ body: @escaping @Sendable (Int) -> Void) {
            for index in 0..<count {
                group.enter()
                let thread = Thread { body(index); self.group.leave() }
                thread.stackSize = 1 << 20
                thread.start()
            }
        }

        func task(_ body: @escaping @Sendable () async -> Void) {
            group.enter()
            Task.detached { await body(); self.group.leave() }
        }
    }

    /// Values a thread saw, kept in its own box (each box written by one thread, read after it ended).
    private final class Seen: @unchecked Sendable {
        var values: [[UInt8]] = []
    }

    private struct Unchecked<T>: @unchecked Sendable { let value: T }

    func testThreadsAndTasksHammerTheLabWhileTheLoopRuns() throws {
        let hm10 = try lab.addPeripheral(Peripherals.hm10())
        let recorder = CentralRecorder()
        // Callbacks on a queue of their own: the callbacks that call the API (discovery) run on
        // that queue's thread while the test thread drives the loop.
        let delegateQueue = DispatchQueue(label: "thread-safety.delegate")
        let central = poweredCentral(recorder, queue: delegateQueue)
        let peripheral = try connectAndDiscover("HMSoft", with: central, recorder)
        let ffe1 = try characteristic("FFE1", of: peripheral)
        peripheral.setNotifyValue(true, for: ffe1)
        XCTAssertTrue(lab.run(within: .seconds(2)) { ffe1.isNotifying })
        // Four-octet notifications every 2 ms, each a new value object on the central's side.
        hm10.perform([.notifyEvery(Peripherals.ref(0xFFE1), interval: .milliseconds(2),
                                   value: .bytes([0xA0, 0xA1, 0xA2, 0xA3]), count: nil)])

        let shared = Unchecked(value: (central, peripheral, ffe1))
        let workers = Workers()
        let readers = (0..<3).map { _ in Seen() }
        workers.start(3) { index in
            let (central, peripheral, ffe1) = shared.value
            for _ in 0..<3_000 {
                if let value = ffe1.value { readers[index].values.append([UInt8](value)) }
                _ = central.state
                _ = peripheral.state
                _ = ffe1.isNotifying
                _ = peripheral.services?.first?.characteristics?.count
                _ = peripheral.canSendWriteWithoutResponse
            }
        }
        let writesPerThread = 300
        // The writers behave as an app must: a write without response only while
        // `canSendWriteWithoutResponse` (beyond the transmit queue, writes are dropped, as on
        // iOS). The check and the write are one step for the two writers (`writers`), else both
        // could see the last free slot; when the queue is full a writer waits for the loop,
        // which other threads' calls interleave with, to send some.
        let writers = NSLock()
        workers.start(2) { index in
            let (_, peripheral, ffe1) = shared.value
            for n in 0..<writesPerThread {
                var sent = false
                while !sent {
                    writers.lock()
                    if peripheral.canSendWriteWithoutResponse {
                        peripheral.writeValue(Data([UInt8(index), UInt8(n & 0xFF)]), for: ffe1, type: .withoutResponse)
                        sent = true
                    }
                    writers.unlock()
                    if !sent { sched_yield() }
                }
                if n % 50 == 0 { peripheral.readValue(for: ffe1) }
            }
        }
        // The app's own work on its delegate queue, as CoreBluetooth apps do: while that queue's
        // thread waits for the lab, the loop must not wait for that queue (it gives the lock up).
        let queueSeen = Seen()
        workers.start { _ in
            let (_, peripheral, ffe1) = shared.value
            for n in 0..<300 {
                delegateQueue.sync {
                    if let value = ffe1.value { queueSeen.values.append([UInt8](value)) }
                    if n % 30 == 0 { peripheral.readRSSI() }
                }
            }
        }
        let taskSeen = Seen()
        workers.task {
            let (central, _, ffe1) = shared.value
            for _ in 0..<2_000 {
                if let value = ffe1.value { taskSeen.values.append([UInt8](value)) }
                _ = central.isScanning
                await Task.yield()
            }
        }

        // The test thread drives the loop until every worker is done.
        var slices = 0
        while !workers.finished {
            lab.run(for: .milliseconds(3))
            slices += 1
        }
        // Every write without response from the two threads crosses the link, as Write Commands,
        // in its thread's order (those queued in the host go out a few per connection event), or
        // is reported dropped: a Read Request the loop sends from the ATT queue can take the last
        // free slot between a writer's check of canSendWriteWithoutResponse and its write (the
        // race an iOS app has too), and the lab then drops the write and counts it.
        let ffe1UUID = CBUUID(string: "FFE1")
        lab.run(for: .seconds(1))
        let writes = lab.attWrites(to: ffe1UUID)
        let dropped = lab.warnings.reduce(0) { sum, warning in
            guard let range = warning.range(of: #"\d+ writes without response to .* were dropped"#, options: .regularExpression),
                  let count = Int(warning[range].prefix { $0.isNumber }) else { return sum }
            return sum + count
        }
        XCTAssertEqual(writes.count + dropped, 2 * writesPerThread, "each write arrived or was reported dropped")
        XCTAssertLessThanOrEqual(dropped, 2 * writesPerThread / 50, "only where a read took the slot")
        XCTAssertEqual(Set(writes.map(\.opcode)), [.writeCommand])
        for index in 0..<2 {
            let mine = writes.filter { $0.value.first == UInt8(index) }.map { Int($0.value[1]) }
            // A subsequence of 0, 1, 2… (mod 256): in the thread's order, none twice.
            var next = 0
            for value in mine {
                while next < writesPerThread, next & 0xFF != value { next += 1 }
                XCTAssertLessThan(next, writesPerThread, "thread \(index)'s writes, in its order: \(mine)")
                next += 1
            }
        }
        // Whatever a reader saw was a whole value the peripheral had: "ready", a notification, or
        // (read back) a write of one of the threads.
        func possible(_ value: [UInt8]) -> Bool {
            value == Array("ready".utf8) || value == [0xA0, 0xA1, 0xA2, 0xA3] || (value.count == 2 && value[0] < 2)
        }
        for seen in readers + [taskSeen, queueSeen] {
            XCTAssertEqual(Set(seen.values).filter { !possible($0) }, [])
        }
        XCTAssertGreaterThan(recorder.count("value FFE1 a0a1a2a3"), 0, "notifications arrived meanwhile")
        XCTAssertEqual(recorder.count("rssi"), 10, "each RSSI read made on the delegate queue answered there")
        XCTAssertGreaterThan(slices, 0)
    }

    /// A peripheral manager's app on its own thread: `updateValue` until it returns false, then
    /// wait for `peripheralManagerIsReady` (called from the loop) and go on, while another thread
    /// reads the managers' states. Every update reaches the central, in order.
    func testAPeripheralManagerNotifiesFromAnotherThreadWhileTheLoopRuns() throws {
        let serviceUUID = CBUUID(string: "A0E1F3D2-0000-4000-8000-00000000AB01")
        let notifying = CBMutableCharacteristic(type: CBUUID(string: "A0E1F3D2-0000-4000-8000-00000000AB02"),
                                                properties: [.notify], value: nil, permissions: [.readable])
        let service = CBMutableService(type: serviceUUID, primary: true)
        service.characteristics = [notifying]
        let managerRecorder = PeripheralManagerRecorder()
        managerRecorder.onStateUpdate = { pm in
            guard pm.state == .poweredOn else { return }
            pm.add(service)
            pm.startAdvertising([CBAdvertisementDataLocalNameKey: "Lab PM", CBAdvertisementDataServiceUUIDsKey: [serviceUUID]])
        }
        let manager = lab.attach { CBPeripheralManager(delegate: managerRecorder, queue: nil) }
        XCTAssertTrue(lab.run(within: .seconds(5)) { manager.isAdvertising })
        let recorder = CentralRecorder()
        let central = poweredCentral(recorder)
        let peripheral = try connectAndDiscover("Lab PM", with: central, recorder)
        let characteristic = try self.characteristic("A0E1F3D2-0000-4000-8000-00000000AB02", of: peripheral)
        peripheral.setNotifyValue(true, for: characteristic)
        XCTAssertTrue(lab.run(within: .seconds(2)) { managerRecorder.count("subscribed") == 1 })

        let ready = DispatchSemaphore(value: 0)
        managerRecorder.onReady = { _ in ready.signal() }
        let updates = 200
        let shared = Unchecked(value: (manager, central, notifying))
        let workers = Workers()
        let refusals = Seen()
        workers.start { _ in
            let (manager, _, notifying) = shared.value
            var sent = 0
            while sent < updates {
                if manager.updateValue(Data([UInt8(sent & 0xFF), UInt8(sent >> 8)]), for: notifying, onSubscribedCentrals: nil) {
                    sent += 1
                } else {
                    refusals.values.append([UInt8(sent & 0xFF)])
                    ready.wait()
                }
            }
        }
        workers.start { _ in
            let (manager, central, _) = shared.value
            for _ in 0..<2_000 {
                _ = manager.isAdvertising
                _ = manager.state
                _ = central.state
                _ = central.isScanning
            }
        }
        while !workers.finished { lab.run(for: .milliseconds(3)) }
        XCTAssertTrue(lab.run(within: .seconds(30)) { recorder.count("value") >= updates })
        let values = recorder.events.filter { $0.hasPrefix("value") }
        XCTAssertEqual(values, (0..<updates).map { "value A0E1F3D2-0000-4000-8000-00000000AB02 " + String(format: "%02x%02x", $0 & 0xFF, $0 >> 8) },
                       "none lost, in order")
        XCTAssertFalse(refusals.values.isEmpty, "the link filled up at least once")
    }
}
