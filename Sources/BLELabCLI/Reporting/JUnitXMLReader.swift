/// Reading JUnit XML back, so the files CI shards wrote can be merged into one report
/// (`JUnitReport.merged`). A small XML 1.0 reader of its own keeps the CLI free of
/// FoundationXML and libxml2 (the CLI is built with a static standard library for the micro-VM).
/// It reads elements, attributes, character data, CDATA sections, comments, processing
/// instructions and the predefined and numeric character references; a DOCTYPE is refused.

/// A JUnit XML document that could not be read; `offset` counts UTF-8 octets from the start.
public struct JUnitParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var offset: Int

    public init(_ message: String, at offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "JUnit XML: \(message) at offset \(offset)" }
}

extension JUnitReport {
    /// Reads a JUnit XML document: a `<testsuites>` root, or a single `<testsuite>` root as some
    /// tools write. Suites nested in suites are flattened in document order; elements this model
    /// has no place for (`system-err`, …) are ignored. Reading what `xml` rendered
    /// and rendering it again gives the same text.
    public init(xml: String) throws {
        var reader = XMLReader(Array(xml.utf8))
        let root = try reader.document()
        var suites: [JUnitSuite] = []
        switch root.name {
        case "testsuites":
            for child in root.children where child.name == "testsuite" { JUnitReport.collect(child, into: &suites) }
            self.init(name: root.attribute("name") ?? "blelab", suites: suites,
                      time: root.attribute("time").flatMap(Double.init))
        case "testsuite":
            JUnitReport.collect(root, into: &suites)
            self.init(name: root.attribute("name") ?? "blelab", suites: suites)
        default:
            throw JUnitParseError("root element is <\(root.name)>, not <testsuites> or <testsuite>", at: root.offset)
        }
    }

    private static func collect(_ element: XMLNode, into suites: inout [JUnitSuite]) {
        var suite = JUnitSuite(name: element.attribute("name") ?? "", timestamp: element.attribute("timestamp"),
                               time: element.attribute("time").flatMap(Double.init))
        var nested: [JUnitSuite] = []
        for child in element.children {
            switch child.name {
            case "testcase": suite.cases.append(testCase(child))
            case "testsuite": collect(child, into: &nested)
            case "properties": suite.properties += properties(child)
            default: continue
            }
        }
        suites.append(suite)
        suites += nested
    }

    private static func properties(_ element: XMLNode) -> [JUnitProperty] {
        element.children.filter { $0.name == "property" }.map { JUnitProperty($0.attribute("name") ?? "", $0.attribute("value") ?? $0.text) }
    }

    private static func testCase(_ element: XMLNode) -> JUnitCase {
        var result = JUnitCase(name: element.attribute("name") ?? "", className: element.attribute("classname") ?? "",
                               time: element.attribute("time").flatMap(Double.init) ?? 0)
        for child in element.children {
            switch child.name {
            case "failure" where result.outcome == .passed:
                result.outcome = .failed(message: child.attribute("message") ?? "", details: child.text,
                                         type: child.attribute("type") ?? "failure")
            case "error" where result.outcome == .passed:
                result.outcome = .error(message: child.attribute("message") ?? "", details: child.text,
                                        type: child.attribute("type") ?? "error")
            case "skipped" where result.outcome == .passed:
                result.outcome = .skipped(reason: child.attribute("message") ?? child.text)
            case "system-out":
                result.output = (result.output ?? "") + child.text
            case "properties":
                result.properties += properties(child)
            default:
                continue
            }
        }
        return result
    }
}

/// An element: name, attributes in document order, child elements, and its own character data.
struct XMLNode {
    var name: String
    var attributes: [(name: String, value: String)] = []
    var children: [XMLNode] = []
    var text = ""
    var offset: Int

    func attribute(_ name: String) -> String? { attributes.first { $0.name == name }?.value }
}

/// A cursor over UTF-8 octets that reads one XML document.
struct XMLReader {
    private let bytes: [UInt8]
    private var i = 0
    /// Deeper nesting than any report has; keeps hostile input from exhausting the stack.
    private let maximumDepth = 64

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() throws -> XMLNode {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }   // byte order mark
        var root: XMLNode?
        while true {
            skipWhitespace()
            if i >= bytes.count { break }
            if try skipMisc() { continue }
            guard peek("<") else { throw JUnitParseError("text outside the root element", at: i) }
            guard root == nil else { throw JUnitParseError("a second root element", at: i) }
            root = try element(depth: 0)
        }
        guard let root else { throw JUnitParseError("no root element", at: i) }
        return root
    }

    /// Skips a comment or processing instruction (the XML declaration is one); refuses a DOCTYPE.
    private mutating func skipMisc() throws -> Bool {
        if peek("<?") { try skip(past: "?>", what: "processing instruction"); return true }
        if peek("<!--") { try skip(past: "-->", what: "comment"); return true }
        if peek("<!") { throw JUnitParseError("DOCTYPE and other declarations are not supported", at: i) }
        return false
    }

    private mutating func element(depth: Int) throws -> XMLNode {
        guard depth < maximumDepth else { throw JUnitParseError("elements nested deeper than \(maximumDepth)", at: i) }
        let start = i
        i += 1   // "<"
        var node = XMLNode(name: try name(), offset: start)
        while true {
            let hadSpace = skipWhitespace()
            guard i < bytes.count else { throw JUnitParseError("unterminated start tag <\(node.name)>", at: start) }
            if peek("/>") { i += 2; return node }
            if peek(">") { i += 1; break }
            guard hadSpace else { throw JUnitParseError("expected whitespace before an attribute", at: i) }
            let nameStart = i
            let attributeName = try name()
            skipWhitespace()
            guard peek("=") else { throw JUnitParseError("expected '=' after attribute \(attributeName)", at: i) }
            i += 1
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") else {
                throw JUnitParseError("expected a quoted value for attribute \(attributeName)", at: i)
            }
            let value = try characters(until: bytes[i], inAttribute: true)
            guard !node.attributes.contains(where: { $0.name == attributeName }) else {
                throw JUnitParseError("attribute \(attributeName) repeated", at: nameStart)
            }
            node.attributes.append((attributeName, value))
        }
        // Content: character data, CDATA, comments, instructions, children, then the end tag.
        while true {
            guard i < bytes.count else { throw JUnitParseError("<\(node.name)> is never closed", at: start) }
            if peek("</") {
                i += 2
                let closing = try name()
                guard closing == node.name else {
                    throw JUnitParseError("</\(closing)> closes <\(node.name)>", at: i - closing.utf8.count - 2)
                }
                skipWhitespace()
                guard peek(">") else { throw JUnitParseError("expected '>' to end </\(closing)>", at: i) }
                i += 1
                return node
            }
            if peek("<![CDATA[") {
                i += 9
                let begin = i
                try skip(past: "]]>", what: "CDATA section")
                node.text += String(decoding: bytes[begin..<(i - 3)], as: UTF8.self)
                continue
            }
            if try skipMisc() { continue }
            if peek("<") {
                node.children.append(try element(depth: depth + 1))
                continue
            }
            node.text += try characters(until: UInt8(ascii: "<"), inAttribute: false)
        }
    }

    /// Character data up to (not including) `terminator`; for an attribute, skips the opening quote
    /// and consumes the closing one, and normalizes literal white space to spaces (XML 1.0, 3.3.3).
    private mutating func characters(until terminator: UInt8, inAttribute: Bool) throws -> String {
        let start = i
        if inAttribute { i += 1 }
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else {
                if inAttribute { throw JUnitParseError("unterminated attribute value", at: start) }
                break
            }
            let b = bytes[i]
            if b == terminator {
                if inAttribute { i += 1 }
                break
            }
            if b == UInt8(ascii: "<") { throw JUnitParseError("'<' in an attribute value", at: i) }
            if b == UInt8(ascii: "&") {
                out += try reference()
                continue
            }
            if b == 0x0D {   // line ends: CR LF and lone CR read as LF (XML 1.0, 2.11)
                i += 1
                if i < bytes.count, bytes[i] == 0x0A { i += 1 }
                out.append(inAttribute ? 0x20 : 0x0A)
                continue
            }
            out.append(inAttribute && (b == 0x09 || b == 0x0A) ? 0x20 : b)
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&#N;` `&#xH;` → the character's UTF-8 octets.
    private mutating func reference() throws -> [UInt8] {
        let start = i
        guard let semicolon = bytes[i...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
            throw JUnitParseError("'&' that starts no reference", at: start)
        }
        let body = String(decoding: bytes[(i + 1)..<semicolon], as: UTF8.self)
        i = semicolon + 1
        switch body {
        case "amp": return [UInt8(ascii: "&")]
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default:
            var value: UInt32?
            if body.hasPrefix("#x") { value = UInt32(body.dropFirst(2), radix: 16) } else if body.hasPrefix("#") { value = UInt32(body.dropFirst(), radix: 10) }
            guard let value, let scalar = Unicode.Scalar(value), XMLText.isAllowed(scalar) else {
                throw JUnitParseError("unknown or invalid reference &\(body);", at: start)
            }
            return Array(String(Character(scalar)).utf8)
        }
    }

    private mutating func name() throws -> String {
        let start = i
        while i < bytes.count {
            let b = bytes[i]
            let isNameByte = b >= 0x80 || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) ||
                (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) ||
                b == UInt8(ascii: "_") || b == UInt8(ascii: ":") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
            guard isNameByte else { break }
            i += 1
        }
        guard i > start else { throw JUnitParseError("expected a name", at: start) }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let start = i
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
        return i > start
    }

    private func peek(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard i + count <= bytes.count else { return false }
        return literal.withUTF8Buffer { lit in (0..<count).allSatisfy { bytes[i + $0] == lit[$0] } }
    }

    private mutating func skip(past terminator: StaticString, what: String) throws {
        let start = i
        while i < bytes.count {
            if peek(terminator) { i += terminator.utf8CodeUnitCount; return }
            i += 1
        }
        throw JUnitParseError("unterminated \(what)", at: start)
    }
}
