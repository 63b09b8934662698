import BLEWire
import FuzzSupport

/// Advertising data (AD structures, Core Supplement Part A) decoded and described.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let ad = try? AdvertisingData(decoding: bytes) else { return 0 }
    _ = "\(ad)"
    return 0
}
