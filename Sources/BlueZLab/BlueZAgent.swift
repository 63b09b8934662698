import BLERuntime
import DBus
import ScenarioFormat

/// An org.bluez.Agent1 object (BlueZ doc/org.bluez.Agent.rst): the "user" bluetoothd asks during
/// a pairing — to type a passkey, to confirm six digits, to allow a pairing it did not start —
/// answering from a scenario's settings instead of a dialog. Registered with
/// org.bluez.AgentManager1 (RegisterAgent with its IO capability, then RequestDefaultAgent), it
/// serves every pairing on the adapter: the ones its own connection starts with Device1.Pair
/// (bluetoothd takes the caller's agent) and the ones a peer or the kernel starts (the default
/// agent). The IO capability it registers with is what bluetoothd gives the kernel's Security
/// Manager (mgmt Pair Device, Set IO Capability), so it decides the pairing method with the
/// peer's (Core Vol 3 Part H 2.3.5.1).
///
/// Answers (`Answers`):
/// - RequestPasskey: the passkey the user types, or org.bluez.Error.Rejected when there is none
///   (the user dismissed the dialog: the kernel sends Pairing Failed, Passkey Entry Failed).
/// - RequestConfirmation (Numeric Comparison) and RequestAuthorization (a Just Works pairing the
///   peer started): the user's yes, or Rejected for no.
/// - RequestPinCode: BR/EDR only; Rejected unless a PIN is given.
/// - AuthorizeService: allowed unless `authorizeServices` is false (Rejected).
/// - DisplayPasskey, DisplayPinCode, Cancel, Release: noted, answered.
///
/// Every call bluetoothd made is kept in `requests`, in order, and handed to `onRequest`.
public final class BlueZAgent {
    /// The capabilities AgentManager1.RegisterAgent takes.
    public enum Capability: String, CaseIterable, Sendable {
        case displayOnly = "DisplayOnly"
        case displayYesNo = "DisplayYesNo"
        case keyboardOnly = "KeyboardOnly"
        case noInputNoOutput = "NoInputNoOutput"
        case keyboardDisplay = "KeyboardDisplay"

        /// A scenario's `io` (Vol 3 Part H 2.3.2) as BlueZ names it.
        public init(_ io: IOCapabilityName) {
            switch io {
            case .displayOnly: self = .displayOnly
            case .displayYesNo: self = .displayYesNo
            case .keyboardOnly: self = .keyboardOnly
            case .noInputNoOutput: self = .noInputNoOutput
            case .keyboardDisplay: self = .keyboardDisplay
            }
        }
    }

    /// What the user answers.
    public struct Answers: Hashable, Sendable {
        /// The passkey typed (0–999999); nil: the dialog is dismissed.
        public var passkey: UInt32?
        /// Yes to Numeric Comparison and to a pairing the peer started.
        public var confirm: Bool
        public var pinCode: String?
        public var authorizeServices: Bool

        public init(passkey: UInt32? = nil, confirm: Bool = true, pinCode: String? = nil, authorizeServices: Bool = true) {
            self.passkey = passkey
            self.confirm = confirm
            self.pinCode = pinCode
            self.authorizeServices = authorizeServices
        }

        /// A scenario's settings (`security:` or a `pair` step): `passkey` typed, `confirm`.
        public init(_ settings: SecuritySpec) {
            self.init(passkey: settings.passkey, confirm: settings.confirm ?? true)
        }
    }

    /// A call bluetoothd made, with its arguments.
    public enum Request: Hashable, Sendable, CustomStringConvertible {
        case release
        case requestPinCode(device: DBusObjectPath)
        case displayPinCode(device: DBusObjectPath, pinCode: String)
        case requestPasskey(device: DBusObjectPath)
        case displayPasskey(device: DBusObjectPath, passkey: UInt32, entered: UInt16)
        case requestConfirmation(device: DBusObjectPath, passkey: UInt32)
        case requestAuthorization(device: DBusObjectPath)
        case authorizeService(device: DBusObjectPath, uuid: String)
        case cancel

        public var device: DBusObjectPath? {
            switch self {
            case let .requestPinCode(d), let .displayPinCode(d, _), let .requestPasskey(d), let .displayPasskey(d, _, _),
                 let .requestConfirmation(d, _), let .requestAuthorization(d), let .authorizeService(d, _):
                return d
            case .release, .cancel:
                return nil
            }
        }

        public var description: String {
            switch self {
            case .release: return "Release"
            case let .requestPinCode(d): return "RequestPinCode(\(d))"
            case let .displayPinCode(d, pin): return "DisplayPinCode(\(d), \(pin))"
            case let .requestPasskey(d): return "RequestPasskey(\(d))"
            case let .displayPasskey(d, passkey, entered): return "DisplayPasskey(\(d), \(BlueZAgent.digits(passkey)), entered \(entered))"
            case let .requestConfirmation(d, passkey): return "RequestConfirmation(\(d), \(BlueZAgent.digits(passkey)))"
            case let .requestAuthorization(d): return "RequestAuthorization(\(d))"
            case let .authorizeService(d, uuid): return "AuthorizeService(\(d), \(uuid))"
            case .cancel: return "Cancel"
            }
        }
    }

    public static let interface = "org.bluez.Agent1"
    public static let managerInterface = "org.bluez.AgentManager1"
    /// Where bluetoothd serves AgentManager1.
    public static let managerPath: DBusObjectPath = "/org/bluez"

    public let connection: DBusConnection
    public let path: DBusObjectPath
    /// bluetoothd's name (a fake's in tests).
    public let service: String
    public var timeout: TimeSpan
    /// The capability it is registered with (or will be, by `register`).
    public private(set) var capability: Capability
    public var answers: Answers
    public private(set) var requests: [Request] = []
    public var onRequest: ((Request) -> Void)?
    /// Registered with AgentManager1 (false again after Release or `unregister`).
    public private(set) var registered = false
    private var exported = false

    public init(connection: DBusConnection, path: DBusObjectPath = "/org/blelab/agent", capability: Capability = .noInputNoOutput,
                answers: Answers = Answers(), service: String = BlueZName.service, timeout: TimeSpan = .seconds(10)) {
        self.connection = connection
        self.path = path
        self.capability = capability
        self.answers = answers
        self.service = service
        self.timeout = timeout
    }

    /// "004711": a passkey as a user sees it.
    public static func digits(_ passkey: UInt32) -> String {
        let text = String(passkey)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }

    // MARK: Exporting and registering

    /// Exports the Agent1 object on the connection (once).
    public func export() throws {
        guard !exported else { return }
        try connection.export(DBusExportedObject(path: path, interfaces: [agentInterface()]))
        exported = true
    }

    /// Exports the object if needed, then AgentManager1.RegisterAgent(path, capability) and, when
    /// `makeDefault`, RequestDefaultAgent(path) — the default agent answers the pairings no
    /// client started (a peer's Pairing Request, the kernel's pairing on an ATT security error).
    public func register(makeDefault: Bool = true, completion: @escaping (Result<Void, DBusError>) -> Void) {
        do { try export() } catch let error as DBusError { return completion(.failure(error)) } catch {
            return completion(.failure(.invalidValue("\(error)")))
        }
        manager("RegisterAgent", [.objectPath(path), .string(capability.rawValue)]) { [self] result in
            if case .failure = result { return completion(result) }
            registered = true
            guard makeDefault else { return completion(.success(())) }
            manager("RequestDefaultAgent", [.objectPath(path)], completion: completion)
        }
    }

    /// AgentManager1.UnregisterAgent(path).
    public func unregister(completion: @escaping (Result<Void, DBusError>) -> Void) {
        guard registered else { return completion(.success(())) }
        registered = false
        manager("UnregisterAgent", [.objectPath(path)], completion: completion)
    }

    /// Registers again with `capability` when it differs (bluetoothd reads the capability only at
    /// RegisterAgent), keeping it the default; sets the answers either way.
    public func use(_ capability: Capability, answers: Answers, completion: @escaping (Result<Void, DBusError>) -> Void) {
        self.answers = answers
        guard capability != self.capability || !registered else { return completion(.success(())) }
        self.capability = capability
        unregister { [self] _ in register(completion: completion) }
    }

    /// Unexports the object (after `unregister`).
    public func close() {
        guard exported else { return }
        connection.unexport(path)
        exported = false
    }

    private func manager(_ member: String, _ arguments: [DBusValue], completion: @escaping (Result<Void, DBusError>) -> Void) {
        connection.call(destination: service, path: Self.managerPath, interface: Self.managerInterface, member: member,
                        arguments: arguments, replySignature: "", timeout: timeout) { completion($0.map { _ in () }) }
    }

    // MARK: The calls bluetoothd makes

    private func agentInterface() -> DBusInterface {
        let device = DBusArgument("device", .objectPath)
        return DBusInterface(Self.interface, methods: [
            DBusMethod("Release") { [weak self] call in
                self?.registered = false
                self?.note(.release)
                call.reply()
            },
            DBusMethod("RequestPinCode", inputs: [device], outputs: [DBusArgument("pincode", .string)]) { [weak self] call in
                guard let self, let d = try? call.arguments[0].asObjectPath() else { return }
                note(.requestPinCode(device: d))
                guard let pin = answers.pinCode else { return reject(call, "no PIN code to enter") }
                call.reply([.string(pin)])
            },
            DBusMethod("DisplayPinCode", inputs: [device, DBusArgument("pincode", .string)]) { [weak self] call in
                guard let self, let d = try? call.arguments[0].asObjectPath(), let pin = try? call.arguments[1].asString() else { return }
                note(.displayPinCode(device: d, pinCode: pin))
                call.reply()
            },
            DBusMethod("RequestPasskey", inputs: [device], outputs: [DBusArgument("passkey", .uint32)]) { [weak self] call in
                guard let self, let d = try? call.arguments[0].asObjectPath() else { return }
                note(.requestPasskey(device: d))
                guard let passkey = answers.passkey else { return reject(call, "the user typed no passkey") }
                call.reply([.uint32(passkey)])
            },
            DBusMethod("DisplayPasskey", inputs: [device, DBusArgument("passkey", .uint32), DBusArgument("entered", .uint16)]) { [weak self] call in
                guard let self, let d = try? call.arguments[0].asObjectPath(), let passkey = try? call.arguments[1].asUInt32(),
                      let entered = try? call.arguments[2].asUInt16() else { return }
                note(.displayPasskey(device: d, passkey: passkey, entered: entered))
                call.reply()
            },
            DBusMethod("RequestConfirmation", inputs: [device, DBusArgument("passkey", .uint32)]) { [weak self] call in
                guard let self, let d = try? call.arguments[0].asObjectPath(), let passkey = try? call.arguments[1].asUInt32() else { return }
                note(.requestConfirmation(device: d, passkey: passkey))
                if answers.confirm { call.reply() } else { reject(call, "the user said the numbers differ") }
            },
            DBusMethod("RequestAuthorization", inputs: [device]) { [weak self] call in
                guard let self, let d = try? call.arguments[0].asObjectPath() else { return }
                note(.requestAuthorization(device: d))
                if answers.confirm { call.reply() } else { reject(call, "the user refused the pairing") }
            },
            DBusMethod("AuthorizeService", inputs: [device, DBusArgument("uuid", .string)]) { [weak self] call in
                guard let self, let d = try? call.arguments[0].asObjectPath(), let uuid = try? call.arguments[1].asString() else { return }
                note(.authorizeService(device: d, uuid: uuid))
                if answers.authorizeServices { call.reply() } else { reject(call, "the user refused the service") }
            },
            DBusMethod("Cancel") { [weak self] call in
                self?.note(.cancel)
                call.reply()
            },
        ])
    }

    private func note(_ request: Request) {
        requests.append(request)
        onRequest?(request)
    }

    private func reject(_ call: DBusMethodInvocation, _ why: String) {
        call.fail(.rejected, why)
    }
}
