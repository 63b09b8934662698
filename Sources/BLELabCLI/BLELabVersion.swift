/// What `blelab --version` says: the release number, kept here and raised by hand when the
/// scenario format or the command line changes in a way users must know about, and the git
/// commit the executable was built from (tools/build-info.sh records it at build time), so
/// that a report names exactly what produced it.
public enum BLELabVersion {
    public static let number = "0.1.0"

    /// `blelab 0.1.0 (commit 8dd5bff0d379)`, `… (commit 8dd5bff0d379 with local changes)`
    /// when the sources differed from the commit, `… (commit unknown: NOTE)` without one.
    public static func text(commit: String, localChanges: Bool, note: String) -> String {
        guard !commit.isEmpty else { return "blelab \(number) (commit unknown: \(note.isEmpty ? "no git information" : note))" }
        return "blelab \(number) (commit \(commit)\(localChanges ? " with local changes" : ""))"
    }
}
