/// An object path (`o`): `/` or `/`-separated elements of `[A-Za-z0-9_]`, no trailing `/`.
public struct DBusObjectPath: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    /// Throws `DBusError.invalidObjectPath` unless `rawValue` is a valid object path.
    public init(_ rawValue: String) throws {
        guard DBusObjectPath.isValid(rawValue) else { throw DBusError.invalidObjectPath(rawValue) }
        self.rawValue = rawValue
    }

    /// For literals in code: an invalid literal is a programming error and traps.
    public init(stringLiteral value: String) {
        precondition(DBusObjectPath.isValid(value), "'\(value)' is not a D-Bus object path")
        rawValue = value
    }

    /// Skips the check: only for paths libdbus has already validated.
    init(validated: String) { rawValue = validated }

    public static let root = DBusObjectPath(validated: "/")

    public static func isValid(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousSlash = true
        for b in bytes.dropFirst() {
            if b == UInt8(ascii: "/") {
                if previousSlash { return false }
                previousSlash = true
            } else {
                let ok = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "_")
                if !ok { return false }
                previousSlash = false
            }
        }
        return true
    }

    /// `self/element`; throws when `element` is not a valid path element.
    public func appending(_ element: String) throws -> DBusObjectPath {
        try DBusObjectPath(rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// True when `self` is `ancestor` or lies below it.
    public func isDescendant(of ancestor: DBusObjectPath, strictly: Bool = false) -> Bool {
        if rawValue == ancestor.rawValue { return !strictly }
        if ancestor.rawValue == "/" { return true }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    public var description: String { rawValue }
    public static func < (a: DBusObjectPath, b: DBusObjectPath) -> Bool { a.rawValue < b.rawValue }
}

/// A signature value (`g`).
public struct DBusSignature: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public let types: [DBusType]

    public init(_ rawValue: String) throws {
        types = try DBusType.parse(rawValue)
        self.rawValue = rawValue
    }

    public init(_ types: [DBusType]) {
        self.types = types
        rawValue = types.map(\.signature).joined()
    }

    public var description: String { rawValue }
}

/// One entry of a dictionary value (`{KV}` inside `a{KV}`).
public struct DBusDictEntry: Hashable, Sendable {
    public var key: DBusValue
    public var value: DBusValue
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// A D-Bus value of any type. Containers carry their element types, so an empty array or dict
/// still has a signature. Values built in Swift are checked when appended to a message
/// (`DBusError.invalidValue`); values read from a message are whatever the peer sent, and the
/// typed accessors (`propertyMap()`, `managedObjects()`…) throw `DBusError.unexpectedType`
/// rather than trusting it.
public indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    /// A file descriptor (`h`). Appending dups it (the caller keeps its own); one read from a
    /// message is a new descriptor the reader owns and must close.
    case unixFD(Int32)
    /// An array whose elements all have type `element`.
    case array(DBusType, [DBusValue])
    /// `a{KV}`, entries in order (D-Bus keeps the order; duplicates are allowed on the wire).
    case dictionary(key: DBusType, value: DBusType, [DBusDictEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    public var type: DBusType {
        switch self {
        case .byte: return .byte
        case .boolean: return .boolean
        case .int16: return .int16
        case .uint16: return .uint16
        case .int32: return .int32
        case .uint32: return .uint32
        case .int64: return .int64
        case .uint64: return .uint64
        case .double: return .double
        case .string: return .string
        case .objectPath: return .objectPath
        case .signature: return .signature
        case .unixFD: return .unixFD
        case .array(let element, _): return .array(element)
        case .dictionary(let key, let value, _): return .dictionary(key: key, value: value)
        case .structure(let fields): return .structure(fields.map(\.type))
        case .variant: return .variant
        }
    }

    public var signature: String { type.signature }

    /// Checks that the value can be sent: elements match their array's type, keys are basic, no
    /// empty struct, strings hold no NUL, the signature is valid (limits included). libdbus
    /// aborts the process on such input, so every value is checked before it reaches libdbus.
    public func validate() throws {
        _ = try DBusType.parseSingle(signature)
        try validateContents()
    }

    private func validateContents() throws {
        switch self {
        case .string(let s):
            guard !s.utf8.contains(0) else { throw DBusError.invalidValue("a string holds a NUL byte: \(s.debugDescription)") }
        case .array(.byte, let items):
            // The common large case (values, advertising data): no per-element type to build.
            for item in items {
                guard case .byte = item else { throw DBusError.invalidValue("an array of y holds a \(item.signature)") }
            }
        case .array(let element, let items):
            for item in items {
                guard item.type == element else {
                    throw DBusError.invalidValue("an array of \(element.signature) holds a \(item.signature)")
                }
                try item.validateContents()
            }
        case .dictionary(let key, let value, let entries):
            for entry in entries {
                guard entry.key.type == key, entry.value.type == value else {
                    throw DBusError.invalidValue("a dict a{\(key.signature)\(value.signature)} holds an entry {\(entry.key.signature)\(entry.value.signature)}")
                }
                try entry.key.validateContents()
                try entry.value.validateContents()
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError.invalidValue("a struct has at least one field") }
            for f in fields { try f.validateContents() }
        case .variant(let inner):
            try inner.validate()
        default:
            break
        }
    }
}

// MARK: Building the values BlueZ uses

extension DBusValue {
    /// `ay`
    public static func bytes(_ bytes: [UInt8]) -> DBusValue { .array(.byte, bytes.map(DBusValue.byte)) }
    /// `as`
    public static func strings(_ strings: [String]) -> DBusValue { .array(.string, strings.map(DBusValue.string)) }
    /// `ao`
    public static func objectPaths(_ paths: [DBusObjectPath]) -> DBusValue { .array(.objectPath, paths.map(DBusValue.objectPath)) }

    /// `a{sv}`, keys in sorted order so the bytes do not depend on dictionary order.
    public static func propertyMap(_ properties: [String: DBusValue]) -> DBusValue {
        .dictionary(key: .string, value: .variant, properties.keys.sorted().map { DBusDictEntry(.string($0), .variant(properties[$0]!)) })
    }

    /// `a{sa{sv}}`: interfaces and their properties (ObjectManager.InterfacesAdded).
    public static func interfaceMap(_ interfaces: [String: [String: DBusValue]]) -> DBusValue {
        .dictionary(key: .string, value: .dictionary(key: .string, value: .variant),
                    interfaces.keys.sorted().map { DBusDictEntry(.string($0), .propertyMap(interfaces[$0]!)) })
    }

    /// `a{oa{sa{sv}}}`: ObjectManager.GetManagedObjects's reply.
    public static func managedObjects(_ objects: [DBusObjectPath: [String: [String: DBusValue]]]) -> DBusValue {
        .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)),
                    objects.keys.sorted().map { DBusDictEntry(.objectPath($0), .interfaceMap(objects[$0]!)) })
    }
}

// MARK: Reading values (typed; a wrong type from a peer is an error, never a trap)

extension DBusValue {
    private func mismatch(_ expected: String) -> DBusError {
        .unexpectedType(expected: expected, actual: signature)
    }

    public func asByte() throws -> UInt8 { if case .byte(let v) = self { return v }; throw mismatch("y") }
    public func asBool() throws -> Bool { if case .boolean(let v) = self { return v }; throw mismatch("b") }
    public func asInt16() throws -> Int16 { if case .int16(let v) = self { return v }; throw mismatch("n") }
    public func asUInt16() throws -> UInt16 { if case .uint16(let v) = self { return v }; throw mismatch("q") }
    public func asInt32() throws -> Int32 { if case .int32(let v) = self { return v }; throw mismatch("i") }
    public func asUInt32() throws -> UInt32 { if case .uint32(let v) = self { return v }; throw mismatch("u") }
    public func asInt64() throws -> Int64 { if case .int64(let v) = self { return v }; throw mismatch("x") }
    public func asUInt64() throws -> UInt64 { if case .uint64(let v) = self { return v }; throw mismatch("t") }
    public func asDouble() throws -> Double { if case .double(let v) = self { return v }; throw mismatch("d") }
    public func asString() throws -> String { if case .string(let v) = self { return v }; throw mismatch("s") }
    public func asObjectPath() throws -> DBusObjectPath { if case .objectPath(let v) = self { return v }; throw mismatch("o") }
    public func asUnixFD() throws -> Int32 { if case .unixFD(let v) = self { return v }; throw mismatch("h") }

    /// The value inside a variant.
    public func unwrapVariant() throws -> DBusValue { if case .variant(let v) = self { return v }; throw mismatch("v") }

    /// `ay` → bytes.
    public func asBytes() throws -> [UInt8] {
        guard case .array(.byte, let items) = self else { throw mismatch("ay") }
        return try items.map { try $0.asByte() }
    }

    /// `as` → strings.
    public func asStrings() throws -> [String] {
        guard case .array(.string, let items) = self else { throw mismatch("as") }
        return try items.map { try $0.asString() }
    }

    /// `ao` → object paths.
    public func asObjectPaths() throws -> [DBusObjectPath] {
        guard case .array(.objectPath, let items) = self else { throw mismatch("ao") }
        return try items.map { try $0.asObjectPath() }
    }

    /// `a{sv}` → name → value (the variant unwrapped). A repeated key keeps the last value.
    public func asPropertyMap() throws -> [String: DBusValue] {
        guard case .dictionary(.string, .variant, let entries) = self else { throw mismatch("a{sv}") }
        var result: [String: DBusValue] = [:]
        for e in entries { result[try e.key.asString()] = try e.value.unwrapVariant() }
        return result
    }

    /// `a{sa{sv}}` → interface → properties.
    public func asInterfaceMap() throws -> [String: [String: DBusValue]] {
        guard case .dictionary(.string, .dictionary(.string, .variant), let entries) = self else { throw mismatch("a{sa{sv}}") }
        var result: [String: [String: DBusValue]] = [:]
        for e in entries { result[try e.key.asString()] = try e.value.asPropertyMap() }
        return result
    }

    /// `a{oa{sa{sv}}}` → object → interface → properties (ObjectManager.GetManagedObjects).
    public func asManagedObjects() throws -> [DBusObjectPath: [String: [String: DBusValue]]] {
        guard case .dictionary(.objectPath, .dictionary(.string, .dictionary(.string, .variant)), let entries) = self else {
            throw mismatch("a{oa{sa{sv}}}")
        }
        var result: [DBusObjectPath: [String: [String: DBusValue]]] = [:]
        for e in entries { result[try e.key.asObjectPath()] = try e.value.asInterfaceMap() }
        return result
    }
}
