import FuzzSupport
import HCI

/// The H4 framer on a byte stream cut anywhere (each message one read), every frame it emits
/// decoded as an HCI packet.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var framer = H4Framer()
    for chunk in fuzzMessages(data, size) {
        do {
            try framer.feed(chunk) { frame in
                if let packet = try? HCIPacket(h4: frame) { _ = packet.h4 }
            }
        } catch {
            break
        }
    }
    return 0
}
