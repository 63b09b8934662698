import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// A libdbus error (`DBusError` in C), freed when done.
struct LibDBusError {
    var raw = CDBus.DBusError()

    init() { dbus_error_init(&raw) }

    var isSet: Bool { raw.name != nil }
    var name: String { raw.name.map { String(cString: $0) } ?? "" }
    var message: String { raw.message.map { String(cString: $0) } ?? "" }

    mutating func free() { dbus_error_free(&raw) }
}

/// Name checks before names reach libdbus, which aborts the process on an invalid one.
enum DBusNames {
    static func check(_ name: String, kind: String, _ validate: (UnsafePointer<CChar>, UnsafeMutablePointer<CDBus.DBusError>) -> dbus_bool_t) throws {
        var error = LibDBusError()
        defer { error.free() }
        let ok = name.withCString { validate($0, &error.raw) }
        if ok == 0 || name.utf8.contains(0) {
            throw DBusError.invalidName(name, reason: error.isSet ? "\(kind): \(error.message)" : "\(kind) holds a NUL byte")
        }
    }
    static func interface(_ name: String) throws { try check(name, kind: "interface name") { dbus_validate_interface($0, $1) } }
    static func member(_ name: String) throws { try check(name, kind: "member name") { dbus_validate_member($0, $1) } }
    static func busName(_ name: String) throws { try check(name, kind: "bus name") { dbus_validate_bus_name($0, $1) } }
    static func errorName(_ name: String) throws { try check(name, kind: "error name") { dbus_validate_error_name($0, $1) } }
}

/// A D-Bus message (method call, method return, error or signal) over libdbus's `DBusMessage`.
/// Its body is built from and read into `DBusValue`s.
public final class DBusMessage: CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case methodCall, methodReturn, error, signal, other(Int32)
    }

    let raw: OpaquePointer

    /// Takes over a reference the caller owns.
    init(owning raw: OpaquePointer) { self.raw = raw }

    /// Adds a reference of its own.
    init(retaining raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit { dbus_message_unref(raw) }

    // MARK: Making messages

    public static func methodCall(destination: String?, path: DBusObjectPath, interface: String?, member: String,
                                  arguments: [DBusValue] = []) throws -> DBusMessage {
        if let destination { try DBusNames.busName(destination) }
        if let interface { try DBusNames.interface(interface) }
        try DBusNames.member(member)
        guard let raw = dbus_message_new_method_call(destination, path.rawValue, interface, member) else { throw DBusError.outOfMemory }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    public static func signal(path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = []) throws -> DBusMessage {
        try DBusNames.interface(interface)
        try DBusNames.member(member)
        guard let raw = dbus_message_new_signal(path.rawValue, interface, member) else { throw DBusError.outOfMemory }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    /// The reply to a method call.
    public static func methodReturn(to call: DBusMessage, arguments: [DBusValue] = []) throws -> DBusMessage {
        guard let raw = dbus_message_new_method_return(call.raw) else { throw DBusError.outOfMemory }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    /// An error reply to a method call.
    public static func errorReply(to call: DBusMessage, _ error: DBusErrorReply) throws -> DBusMessage {
        try DBusNames.errorName(error.name)
        let text = String(error.message.map { $0 == "\0" ? " " : $0 })
        guard let raw = dbus_message_new_error(call.raw, error.name, text) else { throw DBusError.outOfMemory }
        return DBusMessage(owning: raw)
    }

    // MARK: Header

    public var kind: Kind {
        switch dbus_message_get_type(raw) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: return .methodCall
        case DBUS_MESSAGE_TYPE_METHOD_RETURN: return .methodReturn
        case DBUS_MESSAGE_TYPE_ERROR: return .error
        case DBUS_MESSAGE_TYPE_SIGNAL: return .signal
        case let other: return .other(other)
        }
    }

    private static func string(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }

    public var path: DBusObjectPath? { DBusMessage.string(dbus_message_get_path(raw)).map(DBusObjectPath.init(validated:)) }
    public var interface: String? { DBusMessage.string(dbus_message_get_interface(raw)) }
    public var member: String? { DBusMessage.string(dbus_message_get_member(raw)) }
    public var errorName: String? { DBusMessage.string(dbus_message_get_error_name(raw)) }
    public var sender: String? { DBusMessage.string(dbus_message_get_sender(raw)) }
    public var destination: String? { DBusMessage.string(dbus_message_get_destination(raw)) }
    /// The body's signature ("" when it is empty).
    public var signature: String { DBusMessage.string(dbus_message_get_signature(raw)) ?? "" }
    public var serial: UInt32 {
        get { dbus_message_get_serial(raw) }
        set { dbus_message_set_serial(raw, newValue) }
    }
    public var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }
    /// Whether the caller said it wants no reply (NO_REPLY_EXPECTED).
    public var expectsReply: Bool { dbus_message_get_no_reply(raw) == 0 }

    public var description: String {
        var parts: [String] = []
        switch kind {
        case .methodCall: parts.append("method call")
        case .methodReturn: parts.append("method return to #\(replySerial)")
        case .error: parts.append("error \(errorName ?? "?") to #\(replySerial)")
        case .signal: parts.append("signal")
        case .other(let t): parts.append("message type \(t)")
        }
        if let path { parts.append(path.rawValue) }
        if let member { parts.append((interface.map { $0 + "." } ?? "") + member) }
        parts.append("(\(signature))")
        return parts.joined(separator: " ")
    }

    /// "org.bluez.Device1.Connect on /org/bluez/hci0/dev_…" for errors and logs.
    var callDescription: String {
        "\((interface.map { $0 + "." } ?? ""))\(member ?? "?") on \(path?.rawValue ?? "?")" + (destination.map { " at \($0)" } ?? "")
    }

    // MARK: Body

    /// Appends `values` to the body, each checked first (`DBusValue.validate`).
    public func append(_ values: [DBusValue]) throws {
        for v in values { try v.validate() }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iter)
        for v in values { try DBusMarshal.append(v, to: &iter) }
    }

    /// The body's values.
    public func arguments() throws -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iter) != 0 else { return [] }
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != cdbus_type_invalid {
            values.append(try DBusMarshal.read(&iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    /// The body's values, after checking that its signature is `expected`.
    public func arguments(expecting expected: String) throws -> [DBusValue] {
        guard signature == expected else {
            throw DBusError.unexpectedSignature(expected: expected, actual: signature, in: "\(self)")
        }
        return try arguments()
    }

    /// For an error message: its name and first string argument as the message.
    public var errorReply: DBusErrorReply? {
        guard kind == .error else { return nil }
        var text = ""
        if let first = try? arguments().first, case .string(let s) = first { text = s }
        return DBusErrorReply(name: errorName ?? DBusErrorReply.failed, message: text)
    }

    // MARK: Wire form (D-Bus Specification, "Message Format")

    /// The message as it goes on the wire (libdbus writes this machine's byte order: 'l' here).
    /// Give it a serial first: a message with serial 0 is not valid on the wire.
    public func marshal() throws -> [UInt8] {
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(raw, &buffer, &length) != 0, let buffer else { throw DBusError.outOfMemory }
        defer { dbus_free(buffer) }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) { Array(UnsafeBufferPointer(start: $0, count: Int(length))) }
    }

    /// A message from its wire form; `DBusError.malformedMessage` says what libdbus found wrong.
    public convenience init(marshalled bytes: [UInt8]) throws {
        var error = LibDBusError()
        defer { error.free() }
        let raw = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32(clamping: $0.count), &error.raw) }
        }
        guard let raw else {
            throw DBusError.malformedMessage(error.isSet ? "\(error.message) (\(error.name))" : "rejected by libdbus")
        }
        self.init(owning: raw)
    }

    /// The body bytes of the wire form (after the header and its padding to 8).
    public func marshalledBody() throws -> [UInt8] {
        let bytes = try marshal()
        guard bytes.count >= 16 else { throw DBusError.malformedMessage("shorter than a header") }
        let bigEndian = bytes[0] == UInt8(ascii: "B")
        func u32(_ at: Int) -> Int {
            let b = bytes[at..<at + 4].map(Int.init)
            return bigEndian ? (b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]) : (b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0])
        }
        let bodyLength = u32(4)
        return Array(bytes.suffix(bodyLength))
    }
}

/// Values to and from libdbus's message iterators.
enum DBusMarshal {
    static func code(_ c: Character) -> Int32 { Int32(c.asciiValue!) }

    private static func check(_ ok: dbus_bool_t) throws {
        if ok == 0 { throw DBusError.outOfMemory }
    }

    private static func appendBasic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ type: Character, _ value: T) throws {
        var v = value
        try check(dbus_message_iter_append_basic(&iter, code(type), &v))
    }

    private static func appendString(_ iter: inout DBusMessageIter, _ type: Character, _ s: String) throws {
        try s.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            try check(dbus_message_iter_append_basic(&iter, code(type), &pointer))
        }
    }

    /// Appends a value already checked by `DBusValue.validate`.
    static func append(_ value: DBusValue, to iter: inout DBusMessageIter) throws {
        switch value {
        case .byte(let v): try appendBasic(&iter, "y", v)
        case .boolean(let v): try appendBasic(&iter, "b", dbus_bool_t(v ? 1 : 0))
        case .int16(let v): try appendBasic(&iter, "n", v)
        case .uint16(let v): try appendBasic(&iter, "q", v)
        case .int32(let v): try appendBasic(&iter, "i", v)
        case .uint32(let v): try appendBasic(&iter, "u", v)
        case .int64(let v): try appendBasic(&iter, "x", v)
        case .uint64(let v): try appendBasic(&iter, "t", v)
        case .double(let v): try appendBasic(&iter, "d", v)
        case .string(let s): try appendString(&iter, "s", s)
        case .objectPath(let p): try appendString(&iter, "o", p.rawValue)
        case .signature(let g): try appendString(&iter, "g", g.rawValue)
        case .unixFD(let fd): try appendBasic(&iter, "h", fd)
        case .array(let element, let items):
            try container(&iter, "a", element.signature) { sub in
                if element == .byte {
                    // One copy for byte arrays (values, advertising data) instead of one call per byte.
                    let bytes = items.map { if case .byte(let b) = $0 { return b }; return 0 }
                    try bytes.withUnsafeBufferPointer { buffer in
                        var base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)   // any non-null pointer for zero bytes
                        try check(dbus_message_iter_append_fixed_array(&sub, code("y"), &base, Int32(buffer.count)))
                    }
                } else {
                    for item in items { try append(item, to: &sub) }
                }
            }
        case .dictionary(let key, let valueType, let entries):
            try container(&iter, "a", "{" + key.signature + valueType.signature + "}") { sub in
                for entry in entries {
                    try container(&sub, "e", nil) { pair in
                        try append(entry.key, to: &pair)
                        try append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            try container(&iter, "r", nil) { sub in
                for f in fields { try append(f, to: &sub) }
            }
        case .variant(let inner):
            try container(&iter, "v", inner.signature) { sub in try append(inner, to: &sub) }
        }
    }

    private static func container(_ iter: inout DBusMessageIter, _ type: Character, _ signature: String?,
                                  _ body: (inout DBusMessageIter) throws -> Void) throws {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, code(type), $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iter, code(type), nil, &sub)
        }
        try check(opened)
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iter, &sub)
            throw error
        }
        try check(dbus_message_iter_close_container(&iter, &sub))
    }

    private static func readBasic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
        var v = initial
        dbus_message_iter_get_basic(&iter, &v)
        return v
    }

    private static func readString(_ iter: inout DBusMessageIter) -> String {
        var p: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iter, &p)
        return p.map { String(cString: $0) } ?? ""
    }

    /// The current value of a reader iterator. libdbus has validated the whole message, so what
    /// is read is well formed; a type code this code does not know is still an error, not a trap.
    static func read(_ iter: inout DBusMessageIter) throws -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iter)
        switch UInt8(truncatingIfNeeded: type) {
        case UInt8(ascii: "y"): return .byte(readBasic(&iter, UInt8(0)))
        case UInt8(ascii: "b"): return .boolean(readBasic(&iter, dbus_bool_t(0)) != 0)
        case UInt8(ascii: "n"): return .int16(readBasic(&iter, Int16(0)))
        case UInt8(ascii: "q"): return .uint16(readBasic(&iter, UInt16(0)))
        case UInt8(ascii: "i"): return .int32(readBasic(&iter, Int32(0)))
        case UInt8(ascii: "u"): return .uint32(readBasic(&iter, UInt32(0)))
        case UInt8(ascii: "x"): return .int64(readBasic(&iter, Int64(0)))
        case UInt8(ascii: "t"): return .uint64(readBasic(&iter, UInt64(0)))
        case UInt8(ascii: "d"): return .double(readBasic(&iter, Double(0)))
        case UInt8(ascii: "s"): return .string(readString(&iter))
        case UInt8(ascii: "o"): return .objectPath(DBusObjectPath(validated: readString(&iter)))
        case UInt8(ascii: "g"): return .signature(try DBusSignature(readString(&iter)))
        case UInt8(ascii: "h"): return .unixFD(readBasic(&iter, Int32(-1)))
        case UInt8(ascii: "v"):
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try read(&sub))
        case UInt8(ascii: "r"):
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            var fields: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != cdbus_type_invalid {
                fields.append(try read(&sub))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case UInt8(ascii: "a"):
            let arrayType = try DBusType.parseSingle(signature(of: &iter))
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            switch arrayType {
            case .array(.byte):
                var base: UnsafePointer<UInt8>?
                var count: Int32 = 0
                withUnsafeMutablePointer(to: &base) { p in
                    dbus_message_iter_get_fixed_array(&sub, UnsafeMutableRawPointer(p), &count)
                }
                let bytes = base.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
                return .bytes(bytes)
            case .array(let element):
                var items: [DBusValue] = []
                while dbus_message_iter_get_arg_type(&sub) != cdbus_type_invalid {
                    items.append(try read(&sub))
                    dbus_message_iter_next(&sub)
                }
                return .array(element, items)
            case .dictionary(let key, let value):
                var entries: [DBusDictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) != cdbus_type_invalid {
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    let k = try read(&pair)
                    guard dbus_message_iter_next(&pair) != 0 else { throw DBusError.malformedMessage("a dict entry without a value") }
                    entries.append(DBusDictEntry(k, try read(&pair)))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(key: key, value: value, entries)
            default:
                throw DBusError.malformedMessage("array with signature \(arrayType.signature)")
            }
        default:
            throw DBusError.malformedMessage("unknown type code \(type)")
        }
    }

    private static func signature(of iter: inout DBusMessageIter) -> String {
        guard let s = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(s) }
        return String(cString: s)
    }
}
