import CaptureImport
import FuzzSupport

/// `blelab import` on a whole capture (btsnoop or PacketLogger): read, analysed as HCI, ATT and
/// GATT, built as a scenario and written as YAML.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    _ = try? CaptureImporter.importCapture(fuzzBytes(data, size), source: "fuzz.btsnoop")
    return 0
}
