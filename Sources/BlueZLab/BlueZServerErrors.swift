import ATT
import DBus

/// How a GATT application's error reply becomes an ATT Error Response in bluetoothd's GATT
/// server. bluetoothd 5.66, src/gatt-database.c, dbus_error_to_att_ecode (called from
/// read_reply_cb and write_reply_cb with the request's "permission" code: Read Not Permitted
/// for ReadValue, Write Not Permitted for WriteValue):
///
/// | D-Bus error of ReadValue/WriteValue | ATT error on the link |
/// | --- | --- |
/// | org.bluez.Error.Failed, message a number 0x80…0x9F (strtol, base 0) | that number (Application Error) |
/// | org.bluez.Error.Failed, message a number outside 0x80…0x9F | 0x0E Unlikely Error |
/// | org.bluez.Error.Failed, any other message | 0x80 |
/// | org.bluez.Error.NotSupported | 0x06 Request Not Supported |
/// | org.bluez.Error.NotAuthorized | 0x08 Insufficient Authorization |
/// | org.bluez.Error.InvalidValueLength | 0x0D Invalid Attribute Value Length |
/// | org.bluez.Error.InvalidOffset | 0x07 Invalid Offset |
/// | org.bluez.Error.InProgress | 0xFE Procedure Already in Progress |
/// | org.bluez.Error.NotPermitted | 0x02 Read Not Permitted (read), 0x03 Write Not Permitted (write) |
/// | anything else (including a NoReply after bluetoothd's 25 s call timeout) | 0x0E Unlikely Error |
///
/// Every other code (Invalid Handle, Insufficient Authentication/Encryption, Value Not Allowed,
/// 0xE0…0xFD, 0xFF…) cannot be produced by a D-Bus application.
public enum BlueZServerErrors {
    /// Which request the error answers.
    public enum Operation: Sendable {
        case read, write
    }

    /// The error reply that makes bluetoothd 5.66 answer `operation` with `code`, or nil when no
    /// reply can.
    public static func reply(for code: ATTErrorCode, in operation: Operation) -> DBusErrorReply? {
        switch code.rawValue {
        case 0x02 where operation == .read: return DBusErrorReply(.notPermitted, message: "Read not permitted")
        case 0x03 where operation == .write: return DBusErrorReply(.notPermitted, message: "Write not permitted")
        case 0x06: return DBusErrorReply(.notSupported, message: "Request not supported")
        case 0x07: return DBusErrorReply(.invalidOffset, message: "Invalid offset")
        case 0x08: return DBusErrorReply(.notAuthorized, message: "Insufficient authorization")
        case 0x0D: return DBusErrorReply(.invalidValueLength, message: "Invalid attribute value length")
        // Any name bluetoothd does not know ends as Unlikely Error.
        case 0x0E: return DBusErrorReply(name: DBusErrorReply.failed, message: "Unlikely error")
        case 0x80...0x9F: return DBusErrorReply(.failed, message: "0x" + hex2(code.rawValue))
        case 0xFE: return DBusErrorReply(.inProgress, message: "Procedure already in progress")
        default: return nil
        }
    }

    /// What bluetoothd 5.66 sends on the link for an application's error reply to `operation`
    /// (dbus_error_to_att_ecode, written out from the table above).
    public static func attCode(for reply: DBusErrorReply, in operation: Operation) -> ATTErrorCode {
        switch reply.name {
        case "org.bluez.Error.Failed":
            guard let number = strtolBase0(reply.message) else { return ATTErrorCode(0x80) }
            return (0x80...0x9F).contains(number) ? ATTErrorCode(UInt8(number)) : .unlikelyError
        case "org.bluez.Error.NotSupported": return .requestNotSupported
        case "org.bluez.Error.NotAuthorized": return .insufficientAuthorization
        case "org.bluez.Error.InvalidValueLength": return .invalidAttributeValueLength
        case "org.bluez.Error.InvalidOffset": return .invalidOffset
        case "org.bluez.Error.InProgress": return .procedureAlreadyInProgress
        case "org.bluez.Error.NotPermitted": return operation == .read ? .readNotPermitted : .writeNotPermitted
        default: return .unlikelyError
        }
    }

    /// Why `code` cannot be sent in answer to `operation`, or nil when it can.
    public static func unsendable(_ code: ATTErrorCode, in operation: Operation) -> String? {
        guard reply(for: code, in: operation) == nil else { return nil }
        var text = "bluetoothd 5.66 turns a GATT application's D-Bus error into an ATT error only for "
        text += operation == .read ? "0x02 (NotPermitted), " : "0x03 (NotPermitted), "
        text += "0x06, 0x07, 0x08, 0x0D, 0x0E, 0x80-0x9F and 0xFE (src/gatt-database.c, dbus_error_to_att_ecode); "
        text += "respond-error \(code.name) (0x\(hex2(code.rawValue))) in on-\(operation == .read ? "read" : "write") cannot reach the link"
        return text
    }

    /// strtol(s, &end, 0) that must consume the whole string: 0x-prefixed hex, 0-prefixed octal or decimal.
    static func strtolBase0(_ s: String) -> Int? {
        var text = Substring(s)
        var negative = false
        if text.first == "-" || text.first == "+" {
            negative = text.first == "-"
            text = text.dropFirst()
        }
        let value: Int?
        if text.hasPrefix("0x") || text.hasPrefix("0X") {
            value = Int(text.dropFirst(2), radix: 16)
        } else if text.hasPrefix("0"), text.count > 1 {
            value = Int(text.dropFirst(), radix: 8)
        } else if text.isEmpty {
            // strtol of "" consumes nothing and leaves end at the terminator: 0.
            value = 0
        } else {
            value = Int(text, radix: 10)
        }
        return value.map { negative ? -$0 : $0 }
    }

    static func hex2(_ v: UInt8) -> String {
        let s = String(v, radix: 16)
        return s.count == 1 ? "0" + s : s
    }
}
