import CaptureImport
import FuzzSupport

/// `blelab import` on a whole capture (btsnoop, PacketLogger, pcap or pcapng): read strictly and
/// tolerantly (records that do not decode skipped, a broken framing ending the reading),
/// analysed as HCI, ATT and GATT, built as a scenario and written as YAML; and `--summary`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    _ = try? CaptureImporter.importCapture(bytes, source: "fuzz.btsnoop", strict: true)
    if let file = try? CaptureFile.decode(bytes, strict: false) {
        _ = try? CaptureImporter.importCapture(file, source: "fuzz.btsnoop")
        _ = (try? CaptureSummary.make(file, source: "fuzz.btsnoop"))?.text
    }
    return 0
}
