#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLELabCLI
import BLERuntime
import BlueZLab
import LabTiers

// The only code that touches the process: streams, the terminal check, the environment, the wall
// clock and the exit status. Everything else is `BLELabCLI`, which the tests drive.

func write(_ text: String, to stream: UnsafeMutablePointer<FILE>) {
    fputs(text, stream)
    fflush(stream)
}

var environment: [String: String] = [:]
if let value = getenv("NO_COLOR") { environment["NO_COLOR"] = String(cString: value) }

let console = Console(out: { write($0, to: stdout) }, err: { write($0, to: stderr) },
                      isTerminal: isatty(STDOUT_FILENO) == 1, environment: environment)

// --transport: sim (the default) and the socket and vhci tiers of LabTiers. Helpers the lab
// starts (RootCanal, Bumble) report on stderr, so stdout stays the run's report.
let transports = TransportOffer(backend: { value in
    let found = try TransportCatalog.backend(for: value)
    if let external = found as? RealControllerBackend {
        external.log = { write("blelab: \($0)\n", to: stderr) }
    }
    return found
}, summary: TransportCatalog.offered, helpLines: TransportCatalog.helpLines)

// --central and --peripheral: bluetoothd over D-Bus (BlueZLab, docs/bluez.md).
let seats = SeatOffer(roles: { try BlueZRoles.make(central: $0, peripheral: $1) },
                      centralValues: [("bluez[:hciN]", "bluetoothd over D-Bus on adapter hciN (default hci0; docs/bluez.md)")],
                      peripheralValues: [("bluez[:hciN[:ID]]", "bluetoothd on hciN serving peripheral ID (default: the first declared)")])

// `blelab hostile`: BLELab's host against a hostile peer (LabTiers/Hostile, docs/tiers.md).
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "hostile" {
    exit(HostileCommand.main(Array(CommandLine.arguments.dropFirst(2)), out: { write($0, to: stdout) }, err: { write($0, to: stderr) }))
}

// BuildInfo.swift is written before each build by tools/build-info.sh (the BuildInfo plugin).
let version = BLELabVersion.text(commit: buildCommit, localChanges: buildHadLocalChanges, note: buildInfoNote)

let cli = BLELabCLI(console: console, wallClock: {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Instant(nanoseconds: Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec))
}, version: version, transports: transports, seats: seats)

exit(cli.main(Array(CommandLine.arguments.dropFirst())).rawValue)
