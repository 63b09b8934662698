import CaptureImport
import FuzzSupport

/// The PacketLogger reader on a whole file.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    _ = PacketLoggerReader.looksLikePacketLogger(bytes)
    _ = try? PacketLoggerReader.decode(bytes)
    _ = (try? PacketLoggerReader.decodeReadable(bytes)).map { $0.stop?.description }
    return 0
}
