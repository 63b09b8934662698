import ATT
import FuzzSupport

/// One ATT PDU decoded, re-encoded (and the re-encoding decoded again) and described.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    _ = ATTPDU.describe(bytes)
    guard let pdu = try? ATTPDU(decoding: bytes) else { return 0 }
    let encoded = pdu.encoded
    _ = try? ATTPDU(decoding: encoded)
    _ = pdu.description
    return 0
}
