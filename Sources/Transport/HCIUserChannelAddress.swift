/// Linux Bluetooth socket constants that Glibc does not carry (it has no Bluetooth headers).
/// Values from the kernel's include/net/bluetooth/bluetooth.h and hci_sock.h, as BlueZ uses them.
public enum LinuxBluetooth {
    /// AF_BLUETOOTH (= PF_BLUETOOTH), socket(2)'s domain.
    public static let addressFamily: Int32 = 31
    /// BTPROTO_HCI, the protocol of raw HCI sockets (with SOCK_RAW).
    public static let protocolHCI: Int32 = 1
    /// HCI_CHANNEL_USER: exclusive access to one controller, bypassing the kernel's host stack
    /// (it needs CAP_NET_ADMIN and the controller down). Packets carry their H4 indicator.
    public static let channelUser: UInt16 = 1
}

/// `struct sockaddr_hci` from the kernel's include/net/bluetooth/hci_sock.h, the address
/// bind(2) takes for a BTPROTO_HCI socket:
///
///     struct sockaddr_hci {
///         sa_family_t    hci_family;   // AF_BLUETOOTH, u16
///         unsigned short hci_dev;      // controller index: N of hciN
///         unsigned short hci_channel;  // HCI_CHANNEL_USER = 1
///     };
///
/// Six octets, each field in host byte order, no padding. Built as bytes rather than as a Swift
/// struct so that the layout does not depend on Swift's struct layout.
public struct HCISocketAddress: Hashable, Sendable {
    public var family: UInt16
    public var device: UInt16
    public var channel: UInt16

    public init(device: UInt16, channel: UInt16 = LinuxBluetooth.channelUser) {
        self.family = UInt16(LinuxBluetooth.addressFamily)
        self.device = device
        self.channel = channel
    }

    /// sizeof(struct sockaddr_hci).
    public static let size = 6

    /// The octets bind(2) gets, fields in host byte order.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.size)
        for field in [family, device, channel] {
            withUnsafeBytes(of: field) { out.append(contentsOf: $0) }
        }
        return out
    }
}
