import FuzzSupport
import Transport

/// The btsnoop reader on a whole file, each record turned into the packet it logs.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let file = try? BTSnoopReader.decode(fuzzBytes(data, size)) else { return 0 }
    _ = file.loggedPackets()
    return 0
}
