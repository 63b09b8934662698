import FuzzSupport
import HCI

/// An HCI command packet (opcode, length, parameters) decoded as the simulated controller reads
/// what a host sends, re-encoded and described.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let command = try? HCICommand(decoding: bytes) else { return 0 }
    _ = command.encoded
    _ = "\(command)"
    return 0
}
