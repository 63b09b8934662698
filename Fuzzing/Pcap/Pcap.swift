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
    _ = (try? CaptureFile.decode(bytes)).map { "\($0.format)" }
    return 0
}
