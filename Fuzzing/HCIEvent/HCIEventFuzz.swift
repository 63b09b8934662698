import FuzzSupport
import HCI

/// An HCI event packet (event code, length, parameters) decoded, re-encoded and described; the
/// Command Complete return parameters the host reads decoded too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let event = try? HCIEvent(decoding: bytes) else { return 0 }
    _ = event.encoded
    _ = "\(event)"
    if case let .commandComplete(complete) = event {
        let p = complete.returnParameters
        _ = try? ReadLocalVersionInformationReturn(decoding: p)
        _ = try? ReadBDAddrReturn(decoding: p)
        _ = try? BitFieldReturn(decoding: p)
        _ = try? LEReadBufferSizeReturn(decoding: p)
        _ = try? ReadBufferSizeReturn(decoding: p)
        _ = try? ReadRSSIReturn(decoding: p)
        _ = try? LEReadAdvertisingPhysicalChannelTxPowerReturn(decoding: p)
        _ = try? ConnectionHandleReturn(decoding: p)
    }
    return 0
}
