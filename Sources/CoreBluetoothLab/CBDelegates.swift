import Foundation

// The delegate protocols, with Apple's method names and signatures.
//
// Apple declares them in Objective-C with `@optional` methods. Swift on Linux has no Objective-C
// runtime, so the optional methods are ordinary requirements with empty default implementations
// in protocol extensions. Two consequences differ from Apple's platforms:
// - a method whose signature does not match exactly (a typo, a different parameter type) is not
//   a witness: the empty default runs instead, silently — as an unmatched selector is never
//   called on Apple's platforms, but without the compiler's near-miss warning there;
// - a subclass that implements a method its superclass did not cannot be found through the
//   protocol (Swift's witness table belongs to the conforming class). Implement every callback
//   in the class that declares the conformance.

/// The methods a central manager's delegate receives.
public protocol CBCentralManagerDelegate: NSObjectProtocol {
    /// Tells the delegate the central manager's state updated. Required.
    func centralManagerDidUpdateState(_ central: CBCentralManager)
    /// Tells the delegate the system is about to restore the central manager: a new manager
    /// made with the `CBCentralManagerOptionRestoreIdentifierKey` of an earlier one in the same
    /// lab (the app relaunched), before `centralManagerDidUpdateState` (see
    /// `CBCentralManager+Restoration.swift`).
    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any])
    /// Tells the delegate the central manager discovered a peripheral while scanning.
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber)
    /// Tells the delegate that the central manager connected to a peripheral.
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral)
    /// Tells the delegate the central manager failed to create a connection with a peripheral.
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?)
    /// Tells the delegate that the central manager disconnected from a peripheral: error nil when
    /// the app asked for it with `cancelPeripheralConnection(_:)`.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?)
    /// iOS 17: the disconnection, with its time (the lab's virtual time in seconds) and whether
    /// the system is reconnecting (`CBConnectPeripheralOptionEnableAutoReconnect`). The lab
    /// always calls this one; its default implementation calls
    /// `centralManager(_:didDisconnectPeripheral:error:)`, so a delegate that implements it
    /// gets it instead of the older method, as on iOS.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                        timestamp: CFAbsoluteTime, isReconnecting: Bool, error: Error?)
    /// A connection or disconnection matching `registerForConnectionEvents(options:)`.
    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral)
    /// ANCS authorization changed: never called (the lab has no ANCS).
    func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral)
}

public extension CBCentralManagerDelegate {
    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {}
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {}
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {}
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {}
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {}
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                        timestamp: CFAbsoluteTime, isReconnecting: Bool, error: Error?) {
        centralManager(central, didDisconnectPeripheral: peripheral, error: error)
    }
    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {}
    func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral) {}
}

/// The methods a remote peripheral's delegate receives.
public protocol CBPeripheralDelegate: NSObjectProtocol {
    /// Tells the delegate that a peripheral's name changed. Not raised by the lab.
    func peripheralDidUpdateName(_ peripheral: CBPeripheral)
    /// Tells the delegate that a peripheral's services changed (a Service Changed indication).
    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService])
    /// Tells the delegate the value of the peripheral's received signal strength indicator (RSSI).
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: Error?)
    /// Tells the delegate that peripheral service discovery succeeded (or failed).
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?)
    /// Tells the delegate that discovering included services within a service finished.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: Error?)
    /// Tells the delegate that the peripheral found characteristics for a service.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?)
    /// Tells the delegate that retrieving the specified characteristic's value succeeded, or
    /// that the characteristic's value changed (a notification or indication).
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?)
    /// Tells the delegate that the peripheral successfully set a value for the characteristic.
    /// Only for writes of type `.withResponse`, never for `.withoutResponse`.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?)
    /// Tells the delegate that the peripheral received a request to start or stop providing
    /// notifications for a specified characteristic's value.
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?)
    /// Tells the delegate that the peripheral found descriptors for a characteristic.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: Error?)
    /// Tells the delegate that retrieving a specified characteristic descriptor's value succeeded.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: Error?)
    /// Tells the delegate that the peripheral successfully set a value for the descriptor.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: Error?)
    /// Tells the delegate that a peripheral is again ready to send characteristic updates
    /// (after `canSendWriteWithoutResponse` was false).
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral)
    /// Tells the delegate that an L2CAP channel opened (`openL2CAPChannel(_:)`), or why not.
    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: Error?)
}

public extension CBPeripheralDelegate {
    func peripheralDidUpdateName(_ peripheral: CBPeripheral) {}
    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {}
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: Error?) {}
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: Error?) {}
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {}
    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: Error?) {}
}

/// The methods a peripheral manager's delegate receives.
public protocol CBPeripheralManagerDelegate: NSObjectProtocol {
    /// Tells the delegate the peripheral manager's state updated. Required.
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager)
    /// State restoration is not supported by the lab: never called.
    func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any])
    /// Tells the delegate the peripheral manager started advertising the local peripheral's data.
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?)
    /// Tells the delegate the peripheral manager published a service to the local GATT database.
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?)
    /// Tells the delegate that a remote central device subscribed to a characteristic's value.
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic)
    /// Tells the delegate that a remote central device unsubscribed from a characteristic's value
    /// (also when it disconnects while subscribed).
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic)
    /// Tells the delegate that a local peripheral device is ready to send characteristic value
    /// updates (after `updateValue(_:for:onSubscribedCentrals:)` returned false).
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager)
    /// Tells the delegate that a local peripheral received an Attribute Protocol (ATT) read request.
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest)
    /// Tells the delegate that a local peripheral received an Attribute Protocol (ATT) write request.
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest])
    /// Tells the delegate that the peripheral manager published an L2CAP channel (its PSM), or why not.
    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?)
    /// Tells the delegate that the peripheral manager stopped publishing an L2CAP channel.
    func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?)
    /// Tells the delegate that a central opened an L2CAP channel to a published PSM.
    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: Error?)
}

public extension CBPeripheralManagerDelegate {
    func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any]) {}
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {}
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: Error?) {}
}
