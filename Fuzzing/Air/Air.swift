import CaptureImport
import Controller
import FuzzSupport

/// Air captures: the pcap/pcapng reader, then the link-layer decoding and the central's HCI view
/// made from it (`AirCaptureHCI`), then the HCI analysis the importer runs on that view; and the
/// link-layer PDU decoders on the bare input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    if let file = try? PcapReader.decode(bytes), let capture = try? AirCaptureHCI.captureFile(file) {
        _ = capture.airNotes.count
        _ = (try? HCIStreamAnalysis.analyse(capture)).map(\.notes.count)
    }
    if let pdu = try? AdvertisingChannelPDU(decoding: bytes) {
        _ = pdu.encoded
        _ = try? ConnectIndication(decoding: pdu)
    }
    if let pdu = try? DataChannelPDU(decoding: bytes) {
        _ = pdu.encoded
        _ = (try? LLControlPDU(decoding: pdu.payload)).map { "\($0)" }
    }
    _ = LinkLayer.crc24(bytes, initial: LinkLayer.advertisingCRCInit)
    return 0
}
