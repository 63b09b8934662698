// swift-tools-version:6.0
import PackageDescription

// Layers, bottom to top (see docs/architecture.md, whose picture `make graph` draws from these
// edges). Imports only point down; the controller branch (Controller) and the host branch (HostLink,
// ATT, GATT, GAP) never import each other and run together only in BLELab.
let package = Package(
    name: "BLELab",
    products: [
        .library(name: "BLELab", targets: ["BLELab"]),
        .library(name: "CoreBluetoothLab", targets: ["CoreBluetoothLab"]),
        .library(name: "ScenarioEngine", targets: ["ScenarioEngine"]),
        // The modules whose types CoreBluetoothLab's and BLELab's public API names, so that an
        // app's own test target can import them (`make check-edges` checks that every module
        // CoreBluetoothLabTests, the app tests' stand-in, depends on is a product):
        // PeripheralSpec, time (Instant, TimeSpan), UUIDs and addresses, HCI status codes, ATT
        // opcodes and errors, GATT properties, the air model, GAP and pairing settings.
        .library(name: "ScenarioFormat", targets: ["ScenarioFormat"]),
        .library(name: "BLERuntime", targets: ["BLERuntime"]),
        .library(name: "BLEWire", targets: ["BLEWire"]),
        .library(name: "HCI", targets: ["HCI"]),
        .library(name: "ATT", targets: ["ATT"]),
        .library(name: "GATT", targets: ["GATT"]),
        .library(name: "Controller", targets: ["Controller"]),
        .library(name: "GAP", targets: ["GAP"]),
        .library(name: "SMP", targets: ["SMP"]),
        .executable(name: "blelab", targets: ["blelab"]),
        .executable(name: "blelab-bench", targets: ["BLELabBench"]),
    ],
    targets: [
        .target(name: "BLEWire"),
        .target(name: "HCI", dependencies: ["BLEWire"]),
        .target(name: "BLERuntime", linkerSettings: [.linkedLibrary("m")]),
        .target(name: "Transport", dependencies: ["HCI", "BLERuntime", "BLEWire"]),
        .target(name: "Controller", dependencies: ["BLECrypto", "HCI", "BLERuntime", "BLEWire"]),
        .target(name: "HostLink", dependencies: ["HCI", "Transport", "BLERuntime", "BLEWire"]),
        .target(name: "ATT", dependencies: ["BLEWire", "BLERuntime"]),
        .target(name: "GATT", dependencies: ["ATT", "BLERuntime", "BLEWire"]),
        .target(name: "GAP", dependencies: ["SMP", "BLECrypto", "HostLink", "GATT", "ATT", "Transport", "HCI", "BLERuntime", "BLEWire"]),
        .target(name: "YAMLSubset"),
        // The scenario format (docs/scenarios.md): the model (a scenario, its peripherals as data,
        // the central's steps), the schema reader and the writer back to YAML. Below BLELab, which
        // runs the peripherals it describes, and CaptureImport, which builds scenarios as its values.
        .target(name: "ScenarioFormat", dependencies: ["YAMLSubset", "GATT", "ATT", "Controller", "HCI", "BLERuntime", "BLEWire"]),
        .target(name: "BLELab", dependencies: ["ScenarioFormat", "GAP", "SMP", "GATT", "ATT", "HostLink", "Controller", "Transport", "HCI", "BLERuntime", "BLEWire"]),
        // `blelab import`: btsnoop, PacketLogger, pcap and pcapng captures read from the central's side and
        // built as a scenario of the format (docs/import.md). Below BLELabCLI, which hooks it into the CLI.
        .target(name: "CaptureImport", dependencies: ["ScenarioFormat", "Transport", "HCI", "ATT", "GATT", "Controller", "BLEWire", "BLERuntime"]),
        // The runner: a scenario's steps on a lab (docs/architecture.md), and the seats another stack plays.
        .target(name: "ScenarioEngine", dependencies: ["ScenarioFormat", "BLELab", "GAP", "SMP", "GATT", "ATT", "HostLink", "Controller", "Transport", "HCI", "BLERuntime", "BLEWire"]),
        // `blelab`'s commands and reports (console, JUnit, JSON timeline), over an injected console;
        // what the executable offers beyond the sim (transports, seats) is passed in as values.
        .target(name: "BLELabCLI", dependencies: ["ScenarioEngine", "CaptureImport", "ScenarioFormat", "BLELab", "Transport", "HCI", "BLERuntime"]),
        .target(name: "CoreBluetoothLab", dependencies: ["BLELab", "ScenarioFormat", "GAP", "SMP", "GATT", "ATT", "HostLink", "Controller",
                                                         "Transport", "HCI", "BLERuntime", "BLEWire"]),
        // The socket and vhci tiers: connectors to RootCanal, Bumble, any H4 socket and the HCI
        // user channel, and the helper processes they need (docs/tiers.md).
        // `blelab hostile` (LabTiers/Hostile): BLELab's host in one role against a hostile peer.
        .target(name: "LabTiers", dependencies: ["ScenarioFormat", "BLELab", "GAP", "GATT", "HostLink", "HCI", "Transport", "BLERuntime", "BLEWire"]),
        // BuildInfo runs tools/build-info.sh before each build: the git commit `blelab --version` names.
        .executableTarget(name: "blelab", dependencies: ["BLELabCLI", "LabTiers", "BlueZLab", "BLERuntime"], plugins: ["BuildInfo"]),
        .plugin(name: "BuildInfo", capability: .buildTool()),
        // D-Bus over libdbus (Debian libdbus-1-dev; tools/install-deps.sh): a generic client and
        // object exporter (docs/bluez.md). Runs on BLERuntime's SystemEventLoop.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        // OpenSSL's libcrypto: AES-128, AES-CMAC and P-256 for the Security Manager's toolbox.
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The toolbox of Core Vol 3 Part H 2.2 (e, ah, c1, s1, f4, f5, f6, g2, h6, h7) and P-256 keys.
        .target(name: "BLECrypto", dependencies: ["CCrypto"]),
        // The Security Manager Protocol (Core Vol 3 Part H): its commands and a pairing, in
        // either role, as a state machine over BLECrypto (LE legacy and Secure Connections).
        .target(name: "SMP", dependencies: ["BLECrypto", "HostLink"]),
        .target(name: "DBus", dependencies: ["CDBus", "BLERuntime"]),
        // BlueZ over D-Bus: bluetoothd's API as typed proxies and names (BlueZClient, BlueZError),
        // and the BlueZ roles: bluetoothd as a scenario's central or peripheral.
        .target(name: "BlueZLab", dependencies: ["ScenarioFormat", "DBus", "ScenarioEngine", "BLELab", "GATT", "ATT", "HCI", "BLEWire", "BLERuntime"]),
        // Examples: one small delegate-based app per seed system, written against CoreBluetooth's
        // API (they import CoreBluetooth on Apple's platforms, CoreBluetoothLab elsewhere).
        .target(name: "HM10Serial", dependencies: ["CoreBluetoothLab"], path: "Examples/HM10Serial"),
        .target(name: "BLEScanner", dependencies: ["CoreBluetoothLab"], path: "Examples/BLEScanner"),
        .target(name: "SmartCurtain", dependencies: ["CoreBluetoothLab"], path: "Examples/SmartCurtain"),
        .target(name: "BatteryLevel", dependencies: ["CoreBluetoothLab"], path: "Examples/BatteryLevel"),
        .target(name: "HeartRatePeripheral", dependencies: ["CoreBluetoothLab"], path: "Examples/HeartRatePeripheral"),
        .target(name: "L2CAPStream", dependencies: ["CoreBluetoothLab"], path: "Examples/L2CAPStream"),
        // An async/await HM-10 client (seed 000): continuations and an AsyncStream over the delegates,
        // sleeping on an injected clock (docs/corebluetooth.md, "Swift concurrency").
        .target(name: "HM10Async", dependencies: ["CoreBluetoothLab"], path: "Examples/HM10Async"),
        .executableTarget(name: "BLELabBench", dependencies: ["BLELabCLI", "ScenarioFormat", "BLELab", "ScenarioEngine", "LabTiers", "GAP", "GATT", "HostLink", "BLERuntime", "BLEWire"]),

        // Hex test vectors and decode-error assertions, shared by the byte-level test targets, and
        // `TestTools` (tshark, btmon, git… run from a test), shared by every target that runs them.
        .target(name: "WireTestSupport", dependencies: ["BLEWire"], path: "Tests/WireTestSupport"),
        // What several test targets share: scenario text helpers, `blelab` in process, temporary folders.
        .target(name: "BLELabTestSupport", dependencies: ["BLELabCLI", "ScenarioEngine", "ScenarioFormat", "BLELab", "Controller", "Transport", "BLERuntime", "BLEWire"], path: "Tests/BLELabTestSupport"),
        .testTarget(name: "BLEWireTests", dependencies: ["WireTestSupport", "BLEWire"]),
        .testTarget(name: "BLECryptoTests", dependencies: ["BLECrypto"]),
        .testTarget(name: "SMPTests", dependencies: ["SMP", "BLECrypto", "HostLink"]),
        .testTarget(name: "HCITests", dependencies: ["WireTestSupport", "HCI", "BLEWire"], exclude: ["Fixtures"]),
        .testTarget(name: "BLERuntimeTests", dependencies: ["BLERuntime"]),
        .testTarget(name: "TransportTests", dependencies: ["WireTestSupport", "Transport", "HCI", "BLERuntime"], exclude: ["Fixtures"]),
        .testTarget(name: "ControllerTests", dependencies: ["BLECrypto", "Controller", "HCI", "BLEWire", "BLERuntime"]),
        .testTarget(name: "HostLinkTests", dependencies: ["HostLink", "HCI", "Transport", "BLERuntime", "BLEWire"]),
        .testTarget(name: "ATTTests", dependencies: ["WireTestSupport", "ATT", "BLERuntime", "BLEWire"]),
        .testTarget(name: "GATTTests", dependencies: ["WireTestSupport", "GATT", "ATT", "BLERuntime", "BLEWire"]),
        .testTarget(name: "BLELabTests", dependencies: ["ScenarioFormat", "BLELab", "GAP", "SMP", "BLECrypto", "GATT", "ATT", "HostLink", "Controller", "Transport", "HCI", "BLERuntime", "BLEWire", "WireTestSupport"]),
        .testTarget(name: "YAMLSubsetTests", dependencies: ["YAMLSubset"]),
        // The format alone: every scenario written and read back (no lab, no runner).
        .testTarget(name: "ScenarioFormatTests", dependencies: ["ScenarioFormat", "GATT", "ATT", "Controller", "HCI", "BLERuntime", "BLEWire"]),
        .testTarget(name: "ScenarioEngineTests", dependencies: ["BLELabTestSupport", "WireTestSupport", "BLELabCLI", "ScenarioFormat", "ScenarioEngine", "BLELab", "YAMLSubset", "GAP", "GATT", "ATT", "Controller", "Transport", "HCI", "BLERuntime", "BLEWire"], exclude: ["Fixtures"]),
        // `blelab`'s commands and reports, on the sim (the CLI's own tests; Fixtures shared with ScenarioEngineTests).
        .testTarget(name: "BLELabCLITests", dependencies: ["BLELabCLI", "BLELabTestSupport", "WireTestSupport", "ScenarioEngine", "ScenarioFormat", "BLELab", "Transport", "HCI", "BLERuntime"]),
        // Needs the venv (make venv): RootCanal and Bumble. `make test` skips it; `make test-tiers` runs it.
        .testTarget(name: "TierTests", dependencies: ["WireTestSupport", "BLELabCLI", "ScenarioFormat", "LabTiers", "ScenarioEngine", "CaptureImport", "BLELab", "GAP", "SMP", "GATT", "ATT", "HostLink", "Transport", "HCI", "BLERuntime", "BLEWire"], exclude: ["Fixtures"]),
        .testTarget(name: "CaptureImportTests", dependencies: ["BLELabTestSupport", "WireTestSupport", "BLELabCLI", "ScenarioFormat", "CaptureImport", "ScenarioEngine", "BLELab", "Controller", "Transport", "HCI", "GATT", "BLEWire", "BLERuntime"]),
        // A private dbus-daemon per test (package dbus-daemon), and the bus test case DBusTests and
        // BlueZLabTests share: each test starts its own daemon.
        .target(name: "DBusTestSupport", dependencies: ["DBus", "BLERuntime"], path: "Tests/DBusTestSupport"),
        .testTarget(name: "DBusTests", dependencies: ["DBusTestSupport", "DBus", "BLERuntime"]),
        .testTarget(name: "BlueZLabTests", dependencies: ["DBusTestSupport", "ScenarioFormat", "BlueZLab", "DBus", "ScenarioEngine", "BLELab", "GATT", "ATT", "BLEWire", "BLERuntime", "Transport"]),
        .testTarget(name: "CoreBluetoothLabTests", dependencies: [
            "CoreBluetoothLab", "BLELab", "ScenarioFormat", "GATT", "ATT", "HCI", "BLERuntime", "BLEWire",
            "HM10Serial", "BLEScanner", "SmartCurtain", "BatteryLevel", "HeartRatePeripheral", "L2CAPStream", "HM10Async",
        ]),
    ],
    swiftLanguageModes: [.v5]
)

// The fuzz harnesses (Fuzzing/, docs/fuzzing.md): one libFuzzer executable per decoder that reads
// outside input, declared only when BLELAB_FUZZ=1 so that the normal build and tests never see
// them. `make fuzz` builds them with `--sanitize fuzzer --sanitize address` into build/fuzz.
if Context.environment["BLELAB_FUZZ"] == "1" {
    let harnesses: [(product: String, directory: String, dependencies: [Target.Dependency])] = [
        ("h4", "H4", ["HCI"]),
        ("hci-event", "HCIEvent", ["HCI"]),
        ("hci-command", "HCICommand", ["HCI"]),
        ("l2cap", "L2CAP", ["HostLink", "HCI", "Transport", "BLERuntime"]),
        ("att-pdu", "ATTPDU", ["ATT"]),
        ("gatt-client", "GATTClient", ["GATT", "ATT", "BLERuntime"]),
        ("gatt-server", "GATTServer", ["GATT", "ATT", "BLERuntime", "BLEWire"]),
        ("advertising-data", "AdvertisingData", ["BLEWire"]),
        ("yaml", "YAML", ["YAMLSubset"]),
        ("scenario", "Scenario", ["ScenarioFormat"]),
        ("btsnoop", "BTSnoop", ["Transport"]),
        ("packetlogger", "PacketLogger", ["CaptureImport"]),
        ("pcap", "Pcap", ["CaptureImport"]),
        ("air", "Air", ["CaptureImport", "Controller"]),
        ("dbus", "DBus", ["DBus"]),
        ("capture-import", "CaptureImport", ["CaptureImport"]),
        ("host", "Host", ["GAP", "HCI", "Transport", "BLERuntime"]),
        ("smp", "SMP", ["SMP"]),
    ]
    package.targets.append(.target(name: "FuzzSupport", path: "Fuzzing/Support"))
    for harness in harnesses {
        let target = "Fuzz" + harness.directory
        // libFuzzer brings `main`; the harness only defines LLVMFuzzerTestOneInput.
        package.targets.append(.executableTarget(name: target, dependencies: ["FuzzSupport"] + harness.dependencies,
                                                 path: "Fuzzing/" + harness.directory,
                                                 swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
        package.products.append(.executable(name: "fuzz-" + harness.product, targets: [target]))
    }
}

// `make test-tsan` (part of `make test`): the CoreBluetoothLab tests under the thread sanitizer, in a
// build path of their own. With BLELAB_TSAN=1 the package keeps only the targets those tests need,
// so that the sanitized build compiles no other test target, tool or tier.
if Context.environment["BLELAB_TSAN"] == "1" {
    var needed: Set<String> = []
    var pending = ["CoreBluetoothLabTests"]
    while let name = pending.popLast() {
        guard needed.insert(name).inserted, let target = package.targets.first(where: { $0.name == name }) else { continue }
        for dependency in target.dependencies {
            switch dependency {
            case let .byNameItem(name, _), let .targetItem(name, _): pending.append(name)
            default: break
            }
        }
    }
    package.targets.removeAll { !needed.contains($0.name) }
    package.products.removeAll { product in
        let targets = (product as? Product.Library)?.targets ?? (product as? Product.Executable)?.targets ?? []
        return !targets.allSatisfy(needed.contains)
    }
}
