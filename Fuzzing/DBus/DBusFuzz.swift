import DBus
import FuzzSupport

/// A D-Bus message from the wire (libdbus's demarshal), its header fields and arguments read as
/// `DBusValue`s, and the BlueZ signals the client decodes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let message = try? DBusMessage(marshalled: fuzzBytes(data, size)) else { return 0 }
    _ = message.description
    _ = message.errorReply
    _ = try? message.arguments()
    _ = try? DBusInterfacesAdded(message)
    _ = try? DBusInterfacesRemoved(message)
    _ = try? DBusPropertiesChanged(message)
    return 0
}
