import FuzzSupport
import ScenarioFormat

/// The scenario schema reader (YAML subset, then the schema) on any text; what it accepts is
/// written back and read again.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzBytes(data, size), as: UTF8.self)
    guard let scenario = try? Scenario.parse(text, file: "fuzz.yaml") else { return 0 }
    _ = try? Scenario.parse(ScenarioWriter.write(scenario), file: "written.yaml")
    return 0
}
