/// LE fixed channel identifiers (Core 5.4, Vol 3, Part A, 2.1).
public enum L2CAPChannelID {
    /// Attribute Protocol.
    public static let att: UInt16 = 0x0004
    /// LE signaling channel.
    public static let leSignaling: UInt16 = 0x0005
    /// Security Manager Protocol.
    public static let smp: UInt16 = 0x0006
}
