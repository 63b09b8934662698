import ScenarioFormat

/// `blelab import`: a capture in, a scenario out.
///
/// A central's capture (the phone's btsnoop_hci.log, PacketLogger on an iPhone or Mac, btmon on a
/// Linux central, the lab's own `--capture` files): advertising reports give the peripherals, LE
/// Connection Complete and the ATT PDUs on each connection give the database and the central's
/// operations. A peripheral's capture: its own advertising commands give the one peripheral, the
/// other side of its connections the central. docs/import.md describes what becomes what.
public enum CaptureImporter {
    /// What an import produced: the scenario, its text and the analysis behind it.
    public struct Result {
        /// The scenario file, ready to write: `scenario` as `ScenarioWriter` writes it, with `comments`.
        public var yaml: String
        /// The scenario the importer built; reading `yaml` gives it back.
        public var scenario: Scenario
        /// Where each part came from in the capture, and what the scenario does not reproduce.
        public var comments: ScenarioComments
        public var file: CaptureFile
        public var transcript: HCITranscript
        /// One per connection, in `transcript.connections` order.
        public var sessions: [GATTSession]
        /// The scenario's peripheral ids, with their addresses, in declaration order.
        public var peripheralIDs: [String]
    }

    /// Imports the capture `bytes`; `source` names it in the scenario (the file's name). Throws
    /// `CaptureError` for anything unreadable, with the byte offset. By default the reading is
    /// tolerant (`CaptureFile.decode(_:strict:)`): records that do not decode are skipped and
    /// listed under "Not reproduced"; `strict: true` makes the first of them the error.
    public static func importCapture(_ bytes: [UInt8], source: String, strict: Bool = false) throws -> Result {
        try importCapture(CaptureFile.decode(bytes, strict: strict), source: source)
    }

    /// Imports a capture already read (`CaptureFile.decode`); its `skipped` records lead the
    /// "Not reproduced" list.
    public static func importCapture(_ file: CaptureFile, source: String) throws -> Result {
        var transcript = try HCIStreamAnalysis.analyse(file)
        transcript.notes.insert(contentsOf: file.skippedNotes, at: 0)
        let sessions = transcript.connections.map { GATTSession.analyse($0.att, resumed: $0.startedBeforeCapture) }
        var imported = ImportedScenario(transcript: transcript, sessions: sessions, source: source, format: file.format,
                                        recordCount: file.recordCount)
        let (scenario, comments) = imported.build()
        // A scenario declares at least one peripheral: scans that heard nothing give none.
        guard !scenario.peripherals.isEmpty else {
            throw CaptureError.nothingHeard(packets: file.packets.count, scans: transcript.scans.count)
        }
        return Result(yaml: ScenarioWriter.write(scenario, comments: comments), scenario: scenario, comments: comments, file: file,
                      transcript: transcript, sessions: sessions, peripheralIDs: imported.peripherals.map(\.id))
    }
}
