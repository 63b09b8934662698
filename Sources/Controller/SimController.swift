import BLERuntime
import BLEWire
import HCI

/// One simulated LE controller: the HCI behaviour of Core 5.4, Vol 4, Part E for BLELab's LE subset
/// over a link layer (Vol 6, Part B) on a shared `SimAir`. The host talks to it only in H4 frames.
///
/// ## Host side
/// - `receive(fromHost:)` takes exactly one whole H4 frame (indicator first); the transport frames
///   the byte stream. Every command packet is answered at once with Command Complete or Command
///   Status, whichever Part E, 7 gives for it, with Num_HCI_Command_Packets = 1 (the controller
///   holds one command at a time). ACL packets go to their connection's queue.
/// - `toHost` receives H4 frames (events and ACL data). It is never called from inside
///   `receive(fromHost:)` or any other controller method: frames are queued in the order the
///   controller produces them and handed over from one task the controller queues with
///   `loop.execute`, at the same virtual time. So a host may send from inside `toHost`, and the
///   order of everything a host sees is a pure function of the inputs and the seed.
///
/// ## What is dropped, never crashing (each counted in `counters`)
/// - a frame with an unknown packet indicator, an empty frame, or an event/SCO/ISO packet from the host;
/// - a command packet shorter than its 3-octet header (no opcode to answer);
/// - an ACL packet that is malformed, for an unknown handle, with a PB flag other than 0b00/0b01 or
///   a BC flag other than 0b00 (Vol 4, Part E, 5.4.2), longer than LE_ACL_Data_Packet_Length, or
///   beyond Total_Num_LE_ACL_Data_Packets unacknowledged packets (the host broke flow control,
///   Part E, 4.1.1; a Data Buffer Overflow event, 7.7.26, reports it when unmasked);
/// - anything at all while the device is powered off.
public final class SimController {
    public let name: String
    /// The public device address (BD_ADDR).
    public let address: BDAddr
    /// Receives H4 frames for the host; see the type's documentation for when it is called.
    public var toHost: (([UInt8]) -> Void)?

    /// Debug counters of what the controller dropped and passed.
    public struct Counters: Hashable, Sendable {
        /// Frames whose indicator is unknown or not host-to-controller (event, SCO, ISO), or empty.
        public var framesDroppedBadIndicator = 0
        /// Command packets too short to carry an opcode.
        public var commandsDroppedTruncated = 0
        /// Frames from the host ignored because the device was powered off.
        public var framesDroppedPoweredOff = 0
        public var aclDroppedMalformed = 0
        public var aclDroppedUnknownHandle = 0
        public var aclDroppedBadFlags = 0
        public var aclDroppedTooLong = 0
        /// ACL packets beyond the controller's buffers (host flow-control violation).
        public var aclDroppedBufferOverflow = 0
        /// ACL packets accepted from the host.
        public var aclFromHost = 0
        /// ACL packets handed to the host.
        public var aclToHost = 0
        /// ACL packets accepted but discarded because their connection ended first.
        public var aclDiscardedOnDisconnect = 0
        /// Events not sent because the host masked them.
        public var eventsMasked = 0
        /// Frames produced while `toHost` was nil.
        public var framesDroppedNoHost = 0
        public init() {}
    }

    public internal(set) var counters = Counters()

    unowned let air: SimAir
    /// Its place in the air's attach order (ties between receivers are broken in this order).
    let attachIndex: Int
    let loop: EventLoop
    let model: AirModel
    var radio: RadioState

    // MARK: HCI state (all restored by Reset)
    var eventMask = EventMask.defaultMask
    /// LE Rand, and the SKD and IV halves of the encryption procedures (SimLink+Encryption.swift).
    lazy var encryptionRandom = SeededRandom(seed: air.seed, stream: "encryption/\(address)")
    var leEventMask = EventMask.leDefaultMask
    /// The Filter Accept List and the resolving list (SimController+Lists.swift).
    var lists = ControllerLists()
    /// Set by LE Set Random Address; none after Reset (Vol 4, Part E, 7.8.4).
    public internal(set) var randomAddress: BDAddr?

    // Advertising (SimController+Advertising.swift)
    var advertisingParameters = SimController.defaultAdvertisingParameters
    var advertisingData: [UInt8] = []
    var scanResponseData: [UInt8] = []
    public internal(set) var isAdvertising = false
    /// One timer for all advertising events, rescheduled for each (SimController+Advertising.swift).
    let advertisingTimer = LoopTimer()
    /// End of high duty cycle directed advertising (1.28 s after it started).
    var advertisingDeadline: Instant = .distantFuture

    // Scanning and initiating (SimController+Scanning.swift)
    var scanParameters = SimController.defaultScanParameters
    public internal(set) var isScanning = false {
        didSet { if oldValue != isScanning { air.listeningChanged(self) } }
    }
    var filterDuplicates = false
    var scanStart: Instant = .zero
    var reportedDuplicates = Set<UInt64>()
    var initiating: LECreateConnectionParameters? {
        didSet { if (oldValue == nil) != (initiating == nil) { air.listeningChanged(self) } }
    }
    /// When LE Create Connection was accepted: the initiator's scan windows count from here.
    var initiatingStart: Instant = .zero

    // Connections (SimController+Connections.swift)
    var links: [LinkEntry] = []
    /// ACL packets accepted from the host and not yet completed (all connections share the buffers).
    var aclOutstanding = 0

    // Host-bound frames, flushed by one `loop.execute` task.
    private var outbox: [[UInt8]] = []
    private var flushing: [[UInt8]] = []
    private var flushScheduled = false
    /// The task holds the controller through `flushGate`, which `deinit` empties (a flush may
    /// still be queued on the loop then): no weak reference to the controller, whose every
    /// retain would otherwise take the slow path through a side table.
    private let flushGate = FlushGate()
    private lazy var flushTask: () -> Void = { [flushGate] in flushGate.controller?.flushOutbox() }
    /// Each advertising event's task: one closure for them all (a crowd runs thousands a second).
    /// It holds the controller unowned (a crowd's advertising events would otherwise each pay a
    /// weak load): only `advertisingTimer` runs it, and `deinit` cancels that timer, so it never
    /// runs after the controller is gone.
    lazy var advertisingTask: () -> Void = { [unowned(unsafe) self] in self.advertisingEvent() }

    /// Attaches a new controller to `air`. `address` is its public address; `name` is for logs.
    public init(air: SimAir, address: BDAddr, name: String) {
        self.air = air
        self.loop = air.loop
        self.model = air.model
        self.address = address
        self.name = name
        attachIndex = air.controllers.count
        radio = RadioState(rssi: air.model.defaultRSSI,
                           advertisingRandom: SeededRandom(seed: air.seed, streamUTF8: Self.streamLabel("advDelay/", address)),
                           rssiRandom: SeededRandom(seed: air.seed, streamUTF8: Self.streamLabel("rssi/", address)))
        air.attach(self)
        flushGate.controller = self
    }

    /// The UTF-8 of "\(prefix)\(address)" (`BDAddr.description`: six upper-case hex octets,
    /// most significant first, joined by colons), made without the Strings that interpolation
    /// would: a crowd makes two per device.
    static func streamLabel(_ prefix: StaticString, _ address: BDAddr) -> [UInt8] {
        let hex: StaticString = "0123456789ABCDEF"
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.utf8CodeUnitCount + 17)
        prefix.withUTF8Buffer { bytes.append(contentsOf: $0) }
        hex.withUTF8Buffer { digits in
            for i in (0..<6).reversed() {
                let octet = Int(truncatingIfNeeded: address.rawValue >> (8 * UInt64(i))) & 0xFF
                bytes.append(digits[octet >> 4])
                bytes.append(digits[octet & 0x0F])
                if i > 0 { bytes.append(UInt8(ascii: ":")) }
            }
        }
        return bytes
    }

    deinit {
        // The advertising task holds this controller unowned: it must not run any more.
        advertisingTimer.cancel()
        flushGate.controller = nil
    }

    public var isInitiating: Bool { initiating != nil }
    /// Handles of this controller's open connections, in the order they were created.
    public var connectionHandles: [UInt16] { links.map(\.handle) }

    // MARK: From the host

    /// Takes one whole H4 frame from the host (indicator first).
    public func receive(fromHost frame: [UInt8]) {
        guard radio.isPoweredOn else {
            counters.framesDroppedPoweredOff += 1
            return
        }
        guard let indicator = frame.first else {
            counters.framesDroppedBadIndicator += 1
            return
        }
        switch indicator {
        case H4PacketType.acl.rawValue: receiveACL(frame)
        case H4PacketType.command.rawValue: receiveCommand(frame)
        default: counters.framesDroppedBadIndicator += 1
        }
    }

    // MARK: To the host

    /// Queues `frame` for the host.
    @inline(__always)
    func sendToHost(_ frame: [UInt8]) {
        outbox.append(frame)
        if !flushScheduled {
            flushScheduled = true
            loop.execute(flushTask)
        }
    }

    private func flushOutbox() {
        flushScheduled = false
        swap(&outbox, &flushing)
        for frame in flushing {
            // A host callback may power the device off mid-batch: nothing more reaches the host.
            guard radio.isPoweredOn else { break }
            if let toHost {
                toHost(frame)
            } else {
                counters.framesDroppedNoHost += 1
            }
        }
        flushing.removeAll(keepingCapacity: true)
    }

    /// Power-off: frames produced but not yet handed over are lost with the device.
    func discardPendingHostFrames() {
        outbox.removeAll(keepingCapacity: true)
    }

    func sendEvent(_ event: HCIEvent) {
        sendToHost(event.h4Frame)
    }

    /// Sends an LE Meta subevent if both the LE Meta bit of the event mask and `bit` of the LE
    /// event mask are set (Vol 4, Part E, 7.3.1 and 7.8.1).
    func sendLEMeta(_ event: LEMetaEvent, bit: UInt64) {
        guard eventMask & EventMask.leMeta != 0, leEventMask & bit != 0 else {
            counters.eventsMasked += 1
            return
        }
        sendEvent(.leMeta(event))
    }

    /// Whether the host lets LE Meta subevent `bit` through (both masks).
    func wants(leMetaBit bit: UInt64) -> Bool {
        eventMask & EventMask.leMeta != 0 && leEventMask & bit != 0
    }

    /// Sends `event` if `bit` of the event mask is set (7.3.1).
    func sendMaskedEvent(_ event: HCIEvent, bit: UInt64) {
        guard eventMask & bit != 0 else {
            counters.eventsMasked += 1
            return
        }
        sendEvent(event)
    }

    func sendDisconnectionComplete(handle: UInt16, reason: HCIStatus) {
        guard eventMask & EventMask.disconnectionComplete != 0 else {
            counters.eventsMasked += 1
            return
        }
        sendEvent(.disconnectionComplete(DisconnectionComplete(handle: handle, reason: reason)))
    }

    /// Command Complete (7.7.14); never masked.
    func sendCommandComplete(_ opcode: HCIOpcode, _ returnParameters: [UInt8]) {
        var frame = ByteWriter(capacity: 6 + returnParameters.count)
        frame.write(H4PacketType.event.rawValue)
        frame.write(HCIEvent.Code.commandComplete)
        frame.write(UInt8(truncatingIfNeeded: 3 + returnParameters.count))
        frame.write(UInt8(1))
        frame.writeUInt16LE(opcode.rawValue)
        frame.write(bytes: returnParameters)
        sendToHost(frame.bytes)
    }

    /// Command Status (7.7.15); never masked.
    func sendCommandStatus(_ opcode: HCIOpcode, _ status: HCIStatus) {
        sendToHost([H4PacketType.event.rawValue, HCIEvent.Code.commandStatus, 4, status.rawValue, 1,
                    UInt8(truncatingIfNeeded: opcode.rawValue), UInt8(truncatingIfNeeded: opcode.rawValue >> 8)])
    }

    /// Number Of Completed Packets (7.7.19) for one handle; never masked.
    func sendCompletedPackets(handle: UInt16, count: Int) {
        let n = UInt16(truncatingIfNeeded: count)
        sendToHost([H4PacketType.event.rawValue, HCIEvent.Code.numberOfCompletedPackets, 5, 1,
                    UInt8(truncatingIfNeeded: handle), UInt8(truncatingIfNeeded: handle >> 8),
                    UInt8(truncatingIfNeeded: n), UInt8(truncatingIfNeeded: n >> 8)])
    }

    // MARK: Addresses

    /// The address this device uses on the air for `ownAddressType` (Own_Address_Type of 7.8.5,
    /// 7.8.10, 7.8.12): public for 0x00, the random address for 0x01, nil if that is not set.
    /// 0x02 and 0x03 use a resolvable private address when resolution is enabled and the resolving
    /// list has a local IRK (SimController+Lists.swift), else public and random, as the
    /// specification prescribes for a peer that has no entry.
    func airAddress(ownAddressType: AddressType) -> LEAddress? {
        if ownAddressType.rawValue >= 0x02, let rpa = localPrivateAddress() { return LEAddress(rpa, type: .random) }
        switch ownAddressType.rawValue {
        case 0x00, 0x02: return LEAddress(address, type: .public)
        case 0x01, 0x03: return randomAddress.map { LEAddress($0, type: .random) }
        default: return nil
        }
    }

    // MARK: Reset

    /// Everything HCI Reset (Vol 4, Part E, 7.3.2) and power-off clear: advertising, scanning and
    /// initiating stop; connections are dropped without any event to this host (the link layer just
    /// goes silent, so peers time out); masks, random address and parameters return to defaults.
    func dropAllState() {
        stopAdvertising()
        isScanning = false
        filterDuplicates = false
        reportedDuplicates.removeAll()
        initiating = nil
        let dropped = links
        links.removeAll()
        aclOutstanding = 0
        for entry in dropped { entry.link.detach(self) }
        eventMask = EventMask.defaultMask
        leEventMask = EventMask.leDefaultMask
        randomAddress = nil
        lists = ControllerLists()
        advertisingParameters = Self.defaultAdvertisingParameters
        advertisingData = []
        scanResponseData = []
        scanParameters = Self.defaultScanParameters
    }

    /// Defaults of LE Set Advertising Parameters (7.8.5): 1.28 s, ADV_IND, public, all channels.
    static let defaultAdvertisingParameters = LEAdvertisingParameters()
    /// Defaults of LE Set Scan Parameters (7.8.10): passive, 10 ms interval and window, public.
    static let defaultScanParameters = LEScanParameters(active: false, interval: 0x0010, window: 0x0010)
}

extension SimController: CustomStringConvertible {
    public var description: String { "\(name) (\(address))" }
}

/// The controller a queued flush runs on, until the controller goes.
private final class FlushGate {
    unowned(unsafe) var controller: SimController?
}
