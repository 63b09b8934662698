import Foundation

/// A request that uses the Attribute Protocol (ATT): a read or write of a local peripheral
/// manager's characteristic by a connected central, answered with
/// `CBPeripheralManager.respond(to:withResult:)`.
public class CBATTRequest: NSObject {
    /// The remote central device that originated the request.
    public let central: CBCentral
    /// The characteristic to read or write the value of.
    public let characteristic: CBCharacteristic
    /// The zero-based index of the first byte for the read or write (a Read Blob's Value Offset).
    public let offset: Int
    /// For a read: set it to the characteristic's value from `offset` on before responding.
    /// For a write: the value written.
    public var value: Data?

    /// Sends the answer on the link; cleared once used (only the first response counts).
    var answer: ((CBATTError.Code) -> Void)?

    init(central: CBCentral, characteristic: CBCharacteristic, offset: Int, value: Data?) {
        self.central = central
        self.characteristic = characteristic
        self.offset = offset
        self.value = value
        super.init()
    }

    public override var description: String {
        "<CBATTRequest: central = \(central.identifier.uuidString), characteristic = \(characteristic.uuid), offset = \(offset), value = \(value.map { "\($0.count) bytes" } ?? "(null)")>"
    }
}
