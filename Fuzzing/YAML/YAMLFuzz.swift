import FuzzSupport
import YAMLSubset

/// The YAML subset parser on any text (invalid UTF-8 repaired first: the readers reject it
/// before parsing).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzBytes(data, size), as: UTF8.self)
    _ = try? parseYAML(text, file: "fuzz.yaml")
    return 0
}
