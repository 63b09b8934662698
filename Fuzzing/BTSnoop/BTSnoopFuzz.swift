import FuzzSupport
import Transport

/// The btsnoop reader on a whole file, each record turned into the packet it logs.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    // What a tolerant reading keeps before a defect must decode as a whole file does.
    _ = (try? BTSnoopReader.decodeReadable(bytes)).map { $0.file.loggedPackets() }
    guard let file = try? BTSnoopReader.decode(bytes) else { return 0 }
    _ = file.loggedPackets()
    return 0
}
