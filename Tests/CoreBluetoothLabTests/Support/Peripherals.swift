import BLELab
import BLERuntime
import BLEWire
import GATT
import ScenarioFormat

/// Simulated peripherals the tests place in the lab, built with `PeripheralSpec`.
enum Peripherals {
    /// An HM-10 serial module: advertises FFE0 and "HMSoft"; FFE1 carries the serial data. A
    /// real HM-10's FFE1 is read, write-without-response, notify; `ffe1` lets a test change it.
    static func hm10(id: String = "hm10", ffe1: CharacteristicProperties = [.read, .writeWithoutResponse, .notify]) -> PeripheralSpec {
        PeripheralSpec(id: id, rssi: -50,
                       advertising: AdvertisingSpec(name: "HMSoft", services: [0xFFE0]),
                       services: [ServiceSpec(uuid: 0xFFE0, characteristics: [
                           CharacteristicSpec(uuid: 0xFFE1, properties: ffe1, value: Array("ready".utf8)),
                       ])])
    }

    /// A peripheral with one characteristic per combination the easy-to-get-wrong tests need,
    /// in service FFF0:
    /// - FFF1 read, write-without-response (no `write`)
    /// - FFF2 read, write (no `write-without-response`)
    /// - FFF3 read only
    /// - FFF4 read, notify
    /// - FFF5 read, indicate
    /// - FFF6 write, plus a user description descriptor
    static func probe(id: String = "probe", name: String = "Probe", rssi: Int8 = -55) -> PeripheralSpec {
        PeripheralSpec(id: id, rssi: rssi,
                       advertising: AdvertisingSpec(name: name, services: [0xFFF0], txPower: 4,
                                                    manufacturerData: .init(companyID: 0x004C, data: [0x01, 0x02]),
                                                    serviceData: [.init(uuid: 0xFFF0, data: [0xAB])]),
                       services: [ServiceSpec(uuid: 0xFFF0, characteristics: [
                           CharacteristicSpec(uuid: 0xFFF1, properties: [.read, .writeWithoutResponse], value: [0x01]),
                           CharacteristicSpec(uuid: 0xFFF2, properties: [.read, .write], value: [0x02]),
                           CharacteristicSpec(uuid: 0xFFF3, properties: [.read], value: [0x03]),
                           CharacteristicSpec(uuid: 0xFFF4, properties: [.read, .notify], value: [0x04]),
                           CharacteristicSpec(uuid: 0xFFF5, properties: [.read, .indicate], value: [0x05]),
                           CharacteristicSpec(uuid: 0xFFF6, properties: [.write], value: [], descriptors: [.userDescription("Setpoint")]),
                       ])])
    }

    static let fff0 = CharacteristicRef(0xFFF1, in: 0xFFF0)

    static func ref(_ uuid: UInt16) -> CharacteristicRef { CharacteristicRef(BluetoothUUID(uuid16: uuid)) }
}
