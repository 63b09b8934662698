import BLERuntime
@testable import BlueZLab
import DBus
import DBusTestSupport
import ScenarioFormat
import XCTest

/// bluetoothd's AgentManager1 on the private bus: it records what the agent registered, and
/// plays bluetoothd's side of a pairing by calling the agent's Agent1 methods (the fake
/// bluetoothds of the seat tests serve it too).
final class FakeAgentManager {
    let connection: DBusConnection
    var registered: [(path: DBusObjectPath, capability: String, sender: String?)] = []
    var defaultAgent: DBusObjectPath?
    var unregistered: [DBusObjectPath] = []

    init(connection: DBusConnection) throws {
        self.connection = connection
        try connection.export(DBusExportedObject(path: BlueZAgent.managerPath, interfaces: [
            DBusInterface(BlueZAgent.managerInterface, methods: [
                DBusMethod("RegisterAgent", inputs: [DBusArgument("agent", .objectPath), DBusArgument("capability", .string)]) { [unowned self] call in
                    let path = try! call.arguments[0].asObjectPath(), capability = try! call.arguments[1].asString()
                    // bluetoothd refuses a capability it does not know (src/agent.c parse_io_capability).
                    guard BlueZAgent.Capability(rawValue: capability) != nil else {
                        call.fail(.invalidArguments, "Invalid arguments in method call"); return
                    }
                    guard !registered.contains(where: { $0.sender == call.sender }) else { call.fail(.alreadyExists, "Already Exists"); return }
                    registered.append((path, capability, call.sender))
                    call.reply()
                },
                DBusMethod("UnregisterAgent", inputs: [DBusArgument("agent", .objectPath)]) { [unowned self] call in
                    let path = try! call.arguments[0].asObjectPath()
                    guard let i = registered.firstIndex(where: { $0.path == path && $0.sender == call.sender }) else {
                        call.fail(.doesNotExist, "Does Not Exist"); return
                    }
                    registered.remove(at: i)
                    unregistered.append(path)
                    if defaultAgent == path { defaultAgent = nil }
                    call.reply()
                },
                DBusMethod("RequestDefaultAgent", inputs: [DBusArgument("agent", .objectPath)]) { [unowned self] call in
                    let path = try! call.arguments[0].asObjectPath()
                    guard registered.contains(where: { $0.path == path && $0.sender == call.sender }) else {
                        call.fail(.doesNotExist, "Does Not Exist"); return
                    }
                    defaultAgent = path
                    call.reply()
                },
            ]),
        ]))
    }
}

final class BlueZAgentTests: BusTestCase {
    private var fake: FakeAgentManager!
    private var agentConnection: DBusConnection!
    private let device: DBusObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"

    override func setUpWithError() throws {
        try super.setUpWithError()
        let server = try connect()
        let owned: Result<DBusConnection.NameRequestResult, DBusError>? = wait { done in server.requestName(BlueZName.service, completion: done) }
        XCTAssertEqual(try owned?.get(), .primaryOwner)
        fake = try FakeAgentManager(connection: server)
        agentConnection = try connect()
    }

    override func tearDown() {
        fake = nil
        agentConnection = nil
        super.tearDown()
    }

    private func registered(_ agent: BlueZAgent, makeDefault: Bool = true, file: StaticString = #filePath, line: UInt = #line) {
        let result: Result<Void, DBusError>? = wait(file: file, line: line) { agent.register(makeDefault: makeDefault, completion: $0) }
        if case let .failure(error)? = result { XCTFail("register: \(error)", file: file, line: line) }
    }

    /// bluetoothd calling the agent: the method, its arguments, what came back.
    private func ask(_ agent: BlueZAgent, _ member: String, _ arguments: [DBusValue], reply: String = "",
                     file: StaticString = #filePath, line: UInt = #line) -> Result<[DBusValue], DBusError>? {
        callResult(fake.connection, destination: agentConnection.uniqueName, path: agent.path, interface: BlueZAgent.interface,
                   member: member, arguments: arguments, replySignature: reply, file: file, line: line)
    }

    func testRegistersWithTheScenarioCapabilityAndBecomesTheDefault() {
        for io in IOCapabilityName.allCases {
            XCTAssertEqual(BlueZAgent.Capability(io).rawValue,
                           ["no-input-no-output": "NoInputNoOutput", "display-only": "DisplayOnly", "display-yes-no": "DisplayYesNo",
                            "keyboard-only": "KeyboardOnly", "keyboard-display": "KeyboardDisplay"][io.rawValue])
        }
        let agent = BlueZAgent(connection: agentConnection, capability: BlueZAgent.Capability(.keyboardOnly))
        registered(agent)
        XCTAssertTrue(agent.registered)
        XCTAssertEqual(fake.registered.map(\.capability), ["KeyboardOnly"])
        XCTAssertEqual(fake.registered.first?.path, agent.path)
        XCTAssertEqual(fake.registered.first?.sender, agentConnection.uniqueName)
        XCTAssertEqual(fake.defaultAgent, agent.path)
    }

    func testNotTheDefaultWhenNotAsked() {
        let agent = BlueZAgent(connection: agentConnection)
        registered(agent, makeDefault: false)
        XCTAssertEqual(fake.registered.map(\.capability), ["NoInputNoOutput"])
        XCTAssertNil(fake.defaultAgent)
    }

    func testAnotherCapabilityRegistersAgainAndStaysDefault() {
        let agent = BlueZAgent(connection: agentConnection)
        registered(agent)
        let result: Result<Void, DBusError>? = wait { agent.use(.displayYesNo, answers: .init(confirm: false), completion: $0) }
        XCTAssertNoThrow(try result?.get())
        XCTAssertEqual(fake.unregistered, [agent.path])
        XCTAssertEqual(fake.registered.map(\.capability), ["DisplayYesNo"])
        XCTAssertEqual(fake.defaultAgent, agent.path)
        XCTAssertEqual(agent.answers.confirm, false)
        // The same capability again: no new registration, only new answers.
        let again: Result<Void, DBusError>? = wait { agent.use(.displayYesNo, answers: .init(passkey: 7), completion: $0) }
        XCTAssertNoThrow(try again?.get())
        XCTAssertEqual(fake.unregistered.count, 1)
        XCTAssertEqual(agent.answers.passkey, 7)
    }

    func testRegisterRefusedIsAnError() {
        let agent = BlueZAgent(connection: agentConnection)
        registered(agent)
        // A second agent on the same connection: bluetoothd allows one per client.
        let second = BlueZAgent(connection: agentConnection, path: "/org/blelab/agent2")
        let result: Result<Void, DBusError>? = wait { second.register(completion: $0) }
        guard case let .failure(error)? = result else { return XCTFail("registered twice: \(String(describing: result))") }
        XCTAssertEqual(error.bluez, .alreadyExists)
        XCTAssertFalse(second.registered)
    }

    func testRequestPasskeyAnswersTheScenarioPasskey() {
        let agent = BlueZAgent(connection: agentConnection, capability: .keyboardOnly,
                               answers: BlueZAgent.Answers(SecuritySpec(io: .keyboardOnly, passkey: 42137)))
        registered(agent)
        let values = success(ask(agent, "RequestPasskey", [.objectPath(device)], reply: "u"))
        XCTAssertEqual(values, [.uint32(42137)])
        XCTAssertEqual(agent.requests, [.requestPasskey(device: device)])
    }

    func testRequestPasskeyWithoutOneIsRejected() {
        let agent = BlueZAgent(connection: agentConnection, capability: .keyboardOnly)
        registered(agent)
        let error = failure(ask(agent, "RequestPasskey", [.objectPath(device)], reply: "u"))
        XCTAssertEqual(error?.bluez, .rejected)
        if case let .remote(reply)? = error { XCTAssertEqual(reply.name, "org.bluez.Error.Rejected") }
    }

    func testNumericComparisonConfirmedOrRejected() {
        let agent = BlueZAgent(connection: agentConnection, capability: .displayYesNo)
        registered(agent)
        XCTAssertEqual(success(ask(agent, "RequestConfirmation", [.objectPath(device), .uint32(4711)])), [])
        agent.answers = BlueZAgent.Answers(SecuritySpec(confirm: false))
        XCTAssertEqual(failure(ask(agent, "RequestConfirmation", [.objectPath(device), .uint32(4711)]))?.bluez, .rejected)
        XCTAssertEqual(agent.requests, [.requestConfirmation(device: device, passkey: 4711), .requestConfirmation(device: device, passkey: 4711)])
        XCTAssertEqual(agent.requests.first?.description, "RequestConfirmation(\(device), 004711)")
    }

    func testAuthorizationFollowsConfirm() {
        let agent = BlueZAgent(connection: agentConnection)
        registered(agent)
        XCTAssertEqual(success(ask(agent, "RequestAuthorization", [.objectPath(device)])), [])
        agent.answers.confirm = false
        XCTAssertEqual(failure(ask(agent, "RequestAuthorization", [.objectPath(device)]))?.bluez, .rejected)
    }

    func testAuthorizeServiceAndPinCode() {
        let agent = BlueZAgent(connection: agentConnection)
        registered(agent)
        XCTAssertEqual(success(ask(agent, "AuthorizeService", [.objectPath(device), .string("0000180d-0000-1000-8000-00805f9b34fb")])), [])
        agent.answers.authorizeServices = false
        XCTAssertEqual(failure(ask(agent, "AuthorizeService", [.objectPath(device), .string("0000180d-0000-1000-8000-00805f9b34fb")]))?.bluez, .rejected)
        XCTAssertEqual(failure(ask(agent, "RequestPinCode", [.objectPath(device)], reply: "s"))?.bluez, .rejected)
        agent.answers.pinCode = "0000"
        XCTAssertEqual(success(ask(agent, "RequestPinCode", [.objectPath(device)], reply: "s")), [.string("0000")])
    }

    func testDisplaysCancelAndReleaseAreRecorded() {
        let agent = BlueZAgent(connection: agentConnection, capability: .displayOnly)
        registered(agent)
        var told: [BlueZAgent.Request] = []
        agent.onRequest = { told.append($0) }
        XCTAssertEqual(success(ask(agent, "DisplayPasskey", [.objectPath(device), .uint32(123456), .uint16(3)])), [])
        XCTAssertEqual(success(ask(agent, "DisplayPinCode", [.objectPath(device), .string("1234")])), [])
        XCTAssertEqual(success(ask(agent, "Cancel", [])), [])
        XCTAssertEqual(success(ask(agent, "Release", [])), [])
        let expected: [BlueZAgent.Request] = [.displayPasskey(device: device, passkey: 123456, entered: 3),
                                              .displayPinCode(device: device, pinCode: "1234"), .cancel, .release]
        XCTAssertEqual(told, expected)
        XCTAssertEqual(agent.requests, expected)
        XCTAssertFalse(agent.registered, "Release ends the registration")
    }

    func testWrongArgumentsAreRefusedBeforeTheAnswer() {
        let agent = BlueZAgent(connection: agentConnection, answers: .init(passkey: 1))
        registered(agent)
        let error = failure(ask(agent, "RequestPasskey", [.string("not a path")], reply: "u"))
        if case let .remote(reply)? = error { XCTAssertEqual(reply.name, "org.freedesktop.DBus.Error.InvalidArgs") } else { XCTFail("\(String(describing: error))") }
        XCTAssertEqual(agent.requests, [])
    }

    func testUnregisterAndClose() {
        let agent = BlueZAgent(connection: agentConnection)
        registered(agent)
        let result: Result<Void, DBusError>? = wait { agent.unregister(completion: $0) }
        XCTAssertNoThrow(try result?.get())
        XCTAssertEqual(fake.unregistered, [agent.path])
        XCTAssertFalse(agent.registered)
        agent.close()
        let gone = failure(ask(agent, "Cancel", []))
        if case let .remote(reply)? = gone { XCTAssertEqual(reply.name, "org.freedesktop.DBus.Error.UnknownObject") } else { XCTFail("\(String(describing: gone))") }
    }
}
