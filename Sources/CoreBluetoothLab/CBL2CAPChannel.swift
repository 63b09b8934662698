import BLERuntime
import Foundation
import HostLink

/// A type that represents a PSM (Protocol/Service Multiplexer) value: the SPSM of an LE credit
/// based channel (Core 5.4, Vol 3, Part A, 4.22).
public typealias CBL2CAPPSM = UInt16

/// A live L2CAP connection-oriented channel to a remote device: an LE credit based channel of
/// the host stack (HostLink's `L2CAPCreditBasedChannel`) with Foundation streams on top.
///
/// - `outputStream`: each `write(_:maxLength:)` takes what fits in the channel's send buffer
///   (`CBLab.l2capSendBufferSize`, 0 when it is full) and sends it as SDUs of at most the peer's
///   MTU; the K-frames go out as the peer's credits allow. `hasSpaceAvailable` comes after
///   `open()`, and after a write once there is room again.
/// - `inputStream`: SDUs as they arrive, as one byte stream. The peer gets an SDU's credits back
///   only once the app has read all its octets, so an app that does not read stops the sender.
///   `hasBytesAvailable` comes when octets arrive that the app was not told about yet.
/// - Stream events go to each stream's `delegate` on the manager's queue, from the lab's loop
///   (`schedule(in:forMode:)` is accepted and ignored: there is no run loop to drive them).
///   When the channel closes (either side, or the link ends) both streams end
///   (`endEncountered`, after the octets still buffered were read).
/// - As on iOS, the app must keep the channel object: when it is released, the channel is
///   disconnected. Closing both streams disconnects it too, once what was written has been sent.
public class CBL2CAPChannel: NSObject {
    /// The peer connected to the channel: a `CBPeripheral` for a central, a `CBCentral` for a
    /// peripheral manager.
    public private(set) var peer: CBPeer!
    /// A stream for reading data from the channel's peer.
    public private(set) var inputStream: InputStream!
    /// A stream for writing data to the channel's peer.
    public private(set) var outputStream: OutputStream!
    /// The PSM of the channel.
    public let psm: CBL2CAPPSM

    /// The stack's channel (for tests and the lab's own tools).
    let channel: L2CAPCreditBasedChannel

    init(peer: CBPeer, channel: L2CAPCreditBasedChannel, loop: EventLoop, callbacks: DelegateQueue, sendBufferSize: Int, lock: LabLock?) {
        self.peer = peer
        self.channel = channel
        psm = channel.psm
        let input = L2CAPInputStream(channel: channel, loop: loop, callbacks: callbacks, lock: lock)
        let output = L2CAPOutputStream(channel: channel, loop: loop, callbacks: callbacks, capacity: sendBufferSize, lock: lock)
        inputStream = input
        outputStream = output
        super.init()
        channel.releasesOnDelivery = false
        // Weak: the stack's channel outlives this object (the link holds it until the peer
        // answers the disconnection), and the streams may be gone by then.
        channel.onSDU = { [weak input] sdu in input?.received(sdu) }
        channel.onSendProgress = { [weak output] in output?.sendProgressed() }
        channel.onClose = { [weak input, weak output] _ in
            input?.channelClosed()
            output?.channelClosed()
        }
        let closeWhenBothClosed = { [weak input, weak output, weak channel] in
            guard let input, let output, input.streamStatus == .closed, output.streamStatus == .closed else { return }
            output.whenSent { channel?.disconnect() }
        }
        input.onClose = closeWhenBothClosed
        output.onClose = closeWhenBothClosed
    }

    deinit {
        // iOS closes a channel the app no longer holds.
        channel.disconnect()
    }

    public override var description: String {
        "<CBL2CAPChannel: PSM = \(psm), peer = \(peer.identifier.uuidString)>"
    }
}

/// The events both streams share: `status`, `delegate`, and events posted on the lab's loop.
private final class StreamEvents {
    let loop: EventLoop
    let callbacks: DelegateQueue
    var status: Stream.Status = .notOpen
    weak var delegate: StreamDelegate?

    init(loop: EventLoop, callbacks: DelegateQueue) {
        self.loop = loop
        self.callbacks = callbacks
    }

    /// Delivers `event` to the delegate on a later turn of the loop (never inside the app's
    /// own call), unless the stream was closed by then.
    func post(_ event: Stream.Event, from stream: Stream, then: @escaping () -> Void = {}) {
        loop.execute { [weak self, weak stream] in
            guard let self, let stream, self.status != .closed, self.status != .notOpen else { return }
            then()
            self.callbacks.run { self.delegate?.stream(stream, handle: event) }
        }
    }
}

/// The channel's received SDUs as one byte stream.
final class L2CAPInputStream: InputStream, LabLocked {
    private let channel: L2CAPCreditBasedChannel
    private let events: StreamEvents
    private var buffer: [UInt8] = []
    private var head = 0
    /// Total octets read, and where each delivered SDU ends in that count (credits go back
    /// when the app has read past an SDU's end).
    private var consumed = 0
    private var received = 0
    private var sduEnds = FIFO<Int>()
    /// A `hasBytesAvailable` was posted and the app has not read since.
    private var signalled = false
    private var ended = false
    var onClose: () -> Void = {}

    /// The lab's lock: the app reads from any thread, as it may on iOS.
    let labLock: LabLock?

    init(channel: L2CAPCreditBasedChannel, loop: EventLoop, callbacks: DelegateQueue, lock: LabLock?) {
        self.channel = channel
        labLock = lock
        events = StreamEvents(loop: loop, callbacks: callbacks)
        super.init(data: Data())
    }

    override var delegate: StreamDelegate? {
        get { events.delegate }
        set { events.delegate = newValue }
    }
    override var streamStatus: Stream.Status { events.status }
    override var streamError: Error? { nil }

    override func open() {
        let held = labLock?.enter(); defer { held?.leave() }
        guard events.status == .notOpen else { return }
        events.status = .open
        events.post(.openCompleted, from: self)
        if buffered > 0 { signal() } else if ended { endNow() }
    }

    override func close() {
        let held = labLock?.enter(); defer { held?.leave() }
        guard events.status != .closed else { return }
        events.status = .closed
        onClose()
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }

    private var buffered: Int { buffer.count - head }

    override var hasBytesAvailable: Bool { locked { events.status == .open && buffered > 0 } }

    override func read(_ destination: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let held = labLock?.enter(); defer { held?.leave() }
        guard events.status == .open || events.status == .atEnd else { return events.status == .closed ? 0 : -1 }
        let n = min(len, buffered)
        guard n > 0 else { return 0 }
        buffer.withUnsafeBufferPointer { source in
            destination.update(from: source.baseAddress! + head, count: n)
        }
        head += n
        consumed += n
        if head == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 4096, head * 2 >= buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
        var released = 0
        while let end = sduEnds.first, end <= consumed {
            _ = sduEnds.popFirst()
            released += 1
        }
        if released > 0 { channel.releaseDelivered(released) }
        signalled = false
        if buffered > 0 { signal() } else if ended { endNow() }
        return n
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    func received(_ sdu: [UInt8]) {
        buffer.append(contentsOf: sdu)
        received += sdu.count
        sduEnds.append(received)
        // An empty SDU holds nothing to read: its credit goes back at once.
        if sdu.isEmpty, received <= consumed {
            _ = sduEnds.popFirst()
            channel.releaseDelivered(1)
        }
        if events.status == .open, buffered > 0 { signal() }
    }

    private func signal() {
        guard !signalled else { return }
        signalled = true
        events.post(.hasBytesAvailable, from: self)
    }

    func channelClosed() {
        ended = true
        if events.status == .open, buffered == 0 { endNow() }
    }

    private func endNow() {
        events.status = .atEnd
        events.loop.execute { [weak self] in
            guard let self, self.events.status == .atEnd else { return }
            self.events.callbacks.run { self.events.delegate?.stream(self, handle: .endEncountered) }
        }
    }
}

/// Octets written become SDUs on the channel.
final class L2CAPOutputStream: OutputStream, LabLocked {
    private let channel: L2CAPCreditBasedChannel
    private let events: StreamEvents
    /// Octets the channel may hold unsent before `write` takes no more.
    let capacity: Int
    /// The app wrote since the last `hasSpaceAvailable`: it is owed another once there is room.
    private var owesSpace = false
    private var sentWaiters: [() -> Void] = []
    var onClose: () -> Void = {}

    /// The lab's lock: the app writes from any thread, as it may on iOS.
    let labLock: LabLock?

    init(channel: L2CAPCreditBasedChannel, loop: EventLoop, callbacks: DelegateQueue, capacity: Int, lock: LabLock?) {
        self.channel = channel
        labLock = lock
        events = StreamEvents(loop: loop, callbacks: callbacks)
        self.capacity = max(1, capacity)
        super.init(toMemory: ())
    }

    required init(toMemory: ()) {
        fatalError("an L2CAP channel's output stream is made by its channel")
    }

    override var delegate: StreamDelegate? {
        get { events.delegate }
        set { events.delegate = newValue }
    }
    override var streamStatus: Stream.Status { events.status }
    override var streamError: Error? { nil }

    override func open() {
        let held = labLock?.enter(); defer { held?.leave() }
        guard events.status == .notOpen else { return }
        guard channel.isOpen else {
            events.status = .open
            return channelClosed()
        }
        events.status = .open
        events.post(.openCompleted, from: self)
        owesSpace = true
        postSpaceIfRoom()
    }

    override func close() {
        let held = labLock?.enter(); defer { held?.leave() }
        guard events.status != .closed else { return }
        events.status = .closed
        onClose()
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }

    private var room: Int { channel.isOpen ? max(0, capacity - channel.unsentOctets) : 0 }

    override var hasSpaceAvailable: Bool { locked { events.status == .open && room > 0 } }

    /// Takes at most the room left in the send buffer; 0 when it is full, -1 when the stream is
    /// not open or the channel has closed.
    override func write(_ source: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        let held = labLock?.enter(); defer { held?.leave() }
        guard events.status == .open, channel.isOpen else { return -1 }
        let n = min(len, room)
        owesSpace = true
        guard n > 0 else { return 0 }
        let mtu = channel.remoteMTU
        var offset = 0
        while offset < n {
            let take = min(mtu, n - offset)
            do { try channel.send(Array(UnsafeBufferPointer(start: source + offset, count: take))) } catch { return offset > 0 ? offset : -1 }
            offset += take
        }
        postSpaceIfRoom()
        return n
    }

    func sendProgressed() {
        postSpaceIfRoom()
        if channel.unsentOctets == 0, !sentWaiters.isEmpty {
            let waiters = sentWaiters
            sentWaiters = []
            for waiter in waiters { waiter() }
        }
    }

    /// Runs `body` once every octet written has gone to the link.
    func whenSent(_ body: @escaping () -> Void) {
        if channel.unsentOctets == 0 || !channel.isOpen { body() } else { sentWaiters.append(body) }
    }

    private func postSpaceIfRoom() {
        guard owesSpace, events.status == .open, room > 0 else { return }
        owesSpace = false
        events.post(.hasSpaceAvailable, from: self)
    }

    func channelClosed() {
        sentWaiters = []
        guard events.status == .open else { return }
        events.status = .atEnd
        events.loop.execute { [weak self] in
            guard let self, self.events.status == .atEnd else { return }
            self.events.callbacks.run { self.events.delegate?.stream(self, handle: .endEncountered) }
        }
    }
}
