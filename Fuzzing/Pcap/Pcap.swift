import CaptureImport
import FuzzSupport

/// The pcap/pcapng reader on a whole file, then its link-type decoding into HCI packets.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    _ = PcapReader.looksLikePcap(bytes)
    if let file = try? PcapReader.decode(bytes) {
        _ = try? PcapHCI.captureFile(file)
        _ = file.linkTypes.map(\.description)
    }
    if let readable = try? PcapReader.decodeReadable(bytes) {
        _ = try? PcapHCI.captureFile(readable.file, strict: false)
        _ = (readable.skipped + [readable.stop].compactMap { $0 }).map(\.description)
    }
    _ = (try? CaptureFile.decode(bytes)).map { "\($0.format)" }
    _ = (try? CaptureFile.decode(bytes, strict: false)).map { $0.skipped.map(\.description) }
    return 0
}
