// The UUID constants of Apple's CBUUID.h beyond the six descriptors in CBUUID.swift.

/// The string representation of the UUID for the Valid Range descriptor (0x2906). Deprecated by
/// Apple but still in its SDK.
public let CBUUIDCharacteristicValidRangeString = "2906"
/// The string representation of the UUID for the Observation Schedule descriptor (0x2910).
public let CBUUIDCharacteristicObservationScheduleString = "2910"
/// The PSM of an L2CAP channel associated with the GATT service containing this characteristic:
/// Apple's own 128-bit UUID, under which a peripheral publishes the PSM it listens on.
public let CBUUIDL2CAPPSMCharacteristicString = "ABDD3056-28FA-441D-A470-55A75A52553A"
