import Controller

extension CBLab {
    /// The RSSI noise of `phoneAirModel`: ± this many dB around the air's value.
    public static let phoneRSSINoise: Int8 = 3

    /// The air a `CBLab` has unless told otherwise: `AirModel`'s defaults, with RSSI readings
    /// that fluctuate as a phone's do. Every reading — the RSSI of each advertising report
    /// (`centralManager(_:didDiscover:advertisementData:rssi:)`) and of each `readRSSI()` — is the
    /// device's RSSI (`lab.setRSSI`, a spec's `rssi`) plus a uniform draw in ±`phoneRSSINoise` dB,
    /// from a generator seeded by the lab's seed: the same seed gives the same readings. Code that
    /// wants exact readings makes its lab with `CBLab(seed:model: AirModel())` (noise 0), or sets
    /// `rssiNoise` of the model it passes.
    public static var phoneAirModel: AirModel {
        var model = AirModel()
        model.rssiNoise = phoneRSSINoise
        return model
    }

    /// The air's RSSI noise: ± dB around the device's RSSI per reading (0: exact readings).
    public var rssiNoise: Int8 { air.model.rssiNoise }
}

extension CBLab {
    /// A lab on `phoneAirModel` with RSSI noise of ± `rssiNoise` dB instead (0: exact readings).
    public convenience init(seed: UInt64 = 1, rssiNoise: Int8) {
        var model = CBLab.phoneAirModel
        model.rssiNoise = rssiNoise
        self.init(seed: seed, model: model)
    }
}
