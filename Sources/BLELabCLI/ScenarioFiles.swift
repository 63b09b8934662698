import ScenarioFormat

/// Finding and loading scenario files for a command.
public enum ScenarioFiles {
    /// The scenario files in `paths`: files as given, folders searched recursively for `*.yaml`
    /// (hidden entries skipped). Sorted by path and without duplicates, so every run, shard and
    /// machine sees the same order. A path that does not exist is an error.
    public static func collect(_ paths: [String]) -> (files: [String], errors: [ScenarioError]) {
        var files: [String] = []
        var errors: [ScenarioError] = []
        for path in paths {
            switch FileText.kind(path) {
            case .missing:
                errors.append(ScenarioError(file: path, line: 0, column: 0, found: "no such file or directory",
                                            expected: "a scenario file or a folder of them"))
            case .file:
                files.append(path)
            case .directory:
                do { files += try yamlFiles(in: path) } catch let error as FileError {
                    errors.append(ScenarioError(file: error.path, line: 0, column: 0, found: error.reason, expected: "a readable folder"))
                } catch {
                    errors.append(ScenarioError(file: path, line: 0, column: 0, found: "\(error)", expected: "a readable folder"))
                }
            }
        }
        var seen: Set<String> = []
        return (files.filter { seen.insert($0).inserted }.sorted(by: pathOrder), errors)
    }

    /// Byte order of the UTF-8 paths: the same on every machine and locale.
    static func pathOrder(_ a: String, _ b: String) -> Bool { Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) }

    private static func yamlFiles(in directory: String) throws -> [String] {
        var out: [String] = []
        let base = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        for name in try FileText.entries(directory) where !name.hasPrefix(".") {
            let path = base + "/" + name
            switch FileText.kind(path) {
            case .directory: out += try yamlFiles(in: path)
            case .file where name.hasSuffix(".yaml"): out.append(path)
            default: break
            }
        }
        return out
    }

    /// Every file loaded: the scenarios that are valid, and every error of those that are not.
    public static func load(_ files: [String]) -> (scenarios: [Scenario], errors: [ScenarioError]) {
        var scenarios: [Scenario] = []
        var errors: [ScenarioError] = []
        for file in files {
            do { scenarios.append(try Scenario.load(path: file)) } catch let e as ScenarioErrors {
                errors += e.errors
            } catch {
                errors.append(ScenarioError(file: file, line: 0, column: 0, found: "\(error)", expected: "a scenario file"))
            }
        }
        return (scenarios, errors)
    }
}

/// Which scenarios a run takes: by tag, by name, and by shard (in that order, over the sorted list).
public struct ScenarioSelection: Equatable {
    public var tags: [String] = []
    public var filter: String?
    public var shard: Shard?

    public init(tags: [String] = [], filter: String? = nil, shard: Shard? = nil) {
        self.tags = tags
        self.filter = filter
        self.shard = shard
    }

    public func matches(_ scenario: Scenario) -> Bool {
        if !tags.isEmpty && !scenario.tags.contains(where: tags.contains) { return false }
        if let filter, !filter.isEmpty, !scenario.name.lowercased().contains(filter.lowercased()) { return false }
        return true
    }

    /// `scenarios` must be in sorted file order (as `ScenarioFiles` loads them).
    public func select(_ scenarios: [Scenario]) -> [Scenario] {
        let kept = scenarios.filter(matches)
        guard let shard else { return kept }
        return kept.enumerated().filter { shard.contains(position: $0.offset) }.map(\.element)
    }
}
