/// Comments for `ScenarioWriter` to put in the file it writes: where a part of the scenario came
/// from, what could not be reproduced (`blelab import` says which capture record each step came
/// from). They are not part of the scenario: reading the file back drops them.
public struct ScenarioComments: Equatable, Sendable {
    /// Where a comment goes. Indices are 0-based positions in the scenario's lists (a
    /// peripheral's `services` and `flaws`, a service's `characteristics`, a characteristic's
    /// `descriptors`); peripherals are named by id, steps by their 1-based `CentralStep.index`.
    /// A site the scenario does not have (`mtu` of a peripheral without one) gets no comment.
    public enum Site: Hashable, Sendable {
        /// The top of the file, above `scenario:`.
        case file
        /// A peripheral's `ID:` line.
        case peripheral(String)
        /// Its `advertise:` key.
        case advertise(String)
        /// Its `mtu:` key.
        case mtu(String)
        /// One rule of its `flaws:`.
        case flaw(String, Int)
        /// One `- service:` of its `gatt:`.
        case service(String, Int)
        /// One characteristic of a service.
        case characteristic(String, service: Int, Int)
        /// Where a characteristic's `descriptors:` go, whether it has any (above them, or at that
        /// place among its keys).
        case descriptors(String, service: Int, characteristic: Int)
        /// One of a characteristic's `descriptors:`.
        case descriptor(String, service: Int, characteristic: Int, Int)
        /// A characteristic's triggers (`on-read`, `on-write`, `on-subscribe`, `on-unsubscribe`).
        case triggers(String, service: Int, characteristic: Int)
        /// The central step with this index.
        case step(Int)
        /// After the last step.
        case end
    }

    public struct Comment: Equatable, Sendable {
        /// Lines above the site's line.
        public var above: [String] = []
        /// Text at the end of the site's line.
        public var inline: String?

        public init(above: [String] = [], inline: String? = nil) {
            self.above = above
            self.inline = inline
        }
    }

    public private(set) var sites: [Site: Comment] = [:]

    public init() {}

    public subscript(site: Site) -> Comment { sites[site] ?? Comment() }

    /// Adds lines above `site` (after those already there).
    public mutating func add(_ lines: [String], above site: Site) {
        guard !lines.isEmpty else { return }
        sites[site, default: Comment()].above += lines
    }

    public mutating func add(_ line: String, above site: Site) { add([line], above: site) }

    /// Puts `text` at the end of `site`'s line (after any text already there, with "; ").
    public mutating func add(inline text: String, at site: Site) {
        let current = sites[site]?.inline
        sites[site, default: Comment()].inline = current.map { $0 + "; " + text } ?? text
    }
}
