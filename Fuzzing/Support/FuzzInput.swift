/// Splits one fuzzer input into the messages a harness feeds one at a time: each message is a
/// length octet followed by that many octets (the last one takes what is left when short). The
/// seed corpora (tools/fuzz-seeds.py) are written in this form, so the fuzzer starts from real
/// traffic and mutates lengths and contents alike.
public func fuzzMessages(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [[UInt8]] {
    guard let data, size > 0 else { return [] }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var messages: [[UInt8]] = []
    var i = 0
    while i < size {
        let length = Int(bytes[i])
        i += 1
        let end = min(size, i + length)
        messages.append(Array(bytes[i..<end]))
        i = end
    }
    return messages
}

/// The whole input as octets.
public func fuzzBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}
