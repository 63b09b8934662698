// The dictionary keys of CoreBluetooth, with the string values Apple's framework uses, so that
// code reading a dictionary by the literal string (`advertisementData["kCBAdvDataLocalName"]`)
// behaves as on Apple's platforms.

// MARK: Advertisement data (centralManager(_:didDiscover:advertisementData:rssi:), startAdvertising)

/// The local name of a peripheral (a `String`).
public let CBAdvertisementDataLocalNameKey = "kCBAdvDataLocalName"
/// The manufacturer data of a peripheral (`Data`: company identifier, little-endian, then data).
public let CBAdvertisementDataManufacturerDataKey = "kCBAdvDataManufacturerData"
/// A dictionary that contains service-specific advertisement data (`[CBUUID: Data]`).
public let CBAdvertisementDataServiceDataKey = "kCBAdvDataServiceData"
/// An array of service UUIDs (`[CBUUID]`).
public let CBAdvertisementDataServiceUUIDsKey = "kCBAdvDataServiceUUIDs"
/// An array of UUIDs found in the overflow area of the advertisement data (`[CBUUID]`).
public let CBAdvertisementDataOverflowServiceUUIDsKey = "kCBAdvDataHashedServiceUUIDs"
/// The transmit power of a peripheral (an `NSNumber`).
public let CBAdvertisementDataTxPowerLevelKey = "kCBAdvDataTxPowerLevel"
/// A Boolean value that indicates whether the advertising event type is connectable (an `NSNumber`).
public let CBAdvertisementDataIsConnectable = "kCBAdvDataIsConnectable"
/// An array of solicited service UUIDs (`[CBUUID]`).
public let CBAdvertisementDataSolicitedServiceUUIDsKey = "kCBAdvDataSolicitedServiceUUIDs"

// MARK: Central manager initialization and scanning

/// A Boolean value that specifies whether the system warns the user if the app instantiates the
/// central manager when Bluetooth service isn't available. Ignored by the lab.
public let CBCentralManagerOptionShowPowerAlertKey = "kCBInitOptionShowPowerAlert"
/// A string containing a unique identifier (UID) for the central manager to instantiate: a later
/// manager made with the same identifier in the same lab restores this one's device, links,
/// pending connects and scan (`CBCentralManager+Restoration.swift`).
public let CBCentralManagerOptionRestoreIdentifierKey = "kCBInitOptionRestoreIdentifier"
/// A Boolean value that specifies whether the scan should run without duplicate filtering.
public let CBCentralManagerScanOptionAllowDuplicatesKey = "kCBScanOptionAllowDuplicates"
/// An array of service UUIDs that you want to scan for (solicitation). Accepted, not used.
public let CBCentralManagerScanOptionSolicitedServiceUUIDsKey = "kCBScanOptionSolicitedServiceUUIDs"

// MARK: Connecting

/// Alert options, meaningful only for background apps on Apple's platforms (the system shows an
/// alert); accepted and ignored: the lab has no background and no alerts.
public let CBConnectPeripheralOptionNotifyOnConnectionKey = "kCBConnectOptionNotifyOnConnection"
public let CBConnectPeripheralOptionNotifyOnDisconnectionKey = "kCBConnectOptionNotifyOnDisconnection"
public let CBConnectPeripheralOptionNotifyOnNotificationKey = "kCBConnectOptionNotifyOnNotification"

// MARK: State restoration (`centralManager(_:willRestoreState:)`; peripheral managers are not restored)

public let CBCentralManagerRestoredStatePeripheralsKey = "kCBRestoredPeripherals"
public let CBCentralManagerRestoredStateScanServicesKey = "kCBRestoredScanServices"
public let CBCentralManagerRestoredStateScanOptionsKey = "kCBRestoredScanOptions"

// MARK: Peripheral manager

/// A Boolean value that specifies whether the system warns the user if Bluetooth is off. Ignored.
public let CBPeripheralManagerOptionShowPowerAlertKey = "kCBPeripheralManagerOptionShowPowerAlert"
/// A string containing a unique identifier (UID) for the peripheral manager. Accepted; peripheral
/// managers are not restored.
public let CBPeripheralManagerOptionRestoreIdentifierKey = "kCBPeripheralManagerOptionRestoreIdentifier"
public let CBPeripheralManagerRestoredStateServicesKey = "kCBRestoredServices"
public let CBPeripheralManagerRestoredStateAdvertisementDataKey = "kCBRestoredAdvertisementData"
