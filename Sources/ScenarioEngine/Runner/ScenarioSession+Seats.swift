import ATT
import BLELab
import BLERuntime
import BLEWire
import GATT
import HCI
import ScenarioFormat

/// The seats' set-up and end, and what the session does for a seat another stack plays
/// (ScenarioRoles.swift): with another stack in the central's seat, what crossed the link is
/// judged on the HCI of BLELab's peripherals (the writes they received, and by which ATT PDU)
/// and on the values the central's stack delivered to its application.
extension ScenarioSession {
    // MARK: Set-up and end

    func addExternalPeripheral(_ spec: PeripheralSpec, provider: PeripheralSeatProvider) throws {
        let peripheral: ProvidedPeripheralSeat
        do { peripheral = try provider.makePeripheral(spec, lab: lab) } catch {
            throw StepFailure(kind: .setup, expected: "\(spec.id) served by \(provider.description)", seen: "\(error)")
        }
        seat(peripheral, as: spec.id)
        let id = spec.id
        let providerName = provider.description   // the name, not the provider (see beginCentral)
        peripheral.onActivity = { [weak self] activity in
            guard let self else { return }
            self.record(TimelineEvent(time: activity.time, device: id, kind: .peripheral, text: Self.describe(activity)))
        }
        peripheral.onWrite = { [weak self] write in
            guard let self else { return }
            guard let handle = self.valueHandle(write.characteristic, on: id) else { return }
            // bluetoothd 5.66 does not tell a GATT application which PDU carried a write: take it
            // from the central's side of the link, the last write PDU it sent for the handle.
            let sent = write.method == nil ? self.central.lastWriteSent(to: handle) : nil
            let method = write.method ?? sent?.method
            let how = sent.map { "\($0.description) from the central" }
                ?? method.map { $0 == .request ? "a request" : "a command" } ?? "a write of unstated type"
            self.observations.received(id, handle: handle, time: self.now, value: write.value, method: method,
                                       description: "\(providerName) handed the application \(write.value.count) octets (\(how))")
        }
    }

    func beginCentral() throws {
        let seat: CentralSeat = central
        // The seat's name, not the seat: a closure the seat keeps must not hold the seat (that
        // cycle kept every run's central, and through it the run's whole lab, alive for good).
        let seatName = seat.description
        seat.onValue = { [weak self] address, ref, value in
            guard let self else { return }
            guard let id = self.peripheralID(at: address), let handle = self.valueHandle(ref, on: id) else { return }
            self.observations.delivered(id, handle: handle, time: self.now, value: value)
            self.record(TimelineEvent(time: self.now, device: "central", kind: .att, text: "\(seatName) delivered \(ref) = \(ValueText.describe(value))",
                                      direction: "received", bytes: value))
        }
        seat.onDisconnected = { [weak self] address in
            guard let self else { return }
            guard let id = self.peripheralID(at: address) else { return }
            self.record(TimelineEvent(time: self.now, device: "central", kind: .peripheral, text: "\(seatName): \(id) disconnected"))
        }
        if !seat.knowsItsLinks { keepAnnouncing() }
        let result = try operate("\(seat.description) to start", limit: .seconds(20)) { done in seat.begin(lab: lab, completion: done) }
        if case let .failure(error) = result {
            throw StepFailure(kind: .setup, expected: "the central played by \(seat.description)", seen: "\(error)")
        }
    }

    /// Lets the seats disconnect and unregister (bounded), also after failures.
    func endRoles() {
        guard let lab else { return }
        var pending = 0
        if let central {
            pending += 1
            central.end { pending -= 1 }
        }
        for (_, peripheral) in peripheralSeats.sorted(by: { $0.key < $1.key }) {
            pending += 1
            peripheral.stopServing { pending -= 1 }
        }
        if pending > 0 { lab.run(within: .seconds(10)) { pending == 0 } }
    }

    // MARK: Advertising for a scanning stack

    /// Has every peripheral announce itself again, now that the central's stack scans
    /// (`PeripheralSeat.announceAgain`).
    func reannounceAdvertising() {
        for spec in scenario.peripherals { peripheralSeats[spec.id]?.announceAgain() }
    }

    /// With the central's seat left to a program outside the lab, nobody says when it scans:
    /// re-announce every second (see `reannounceAdvertising`), as a real advertiser's events keep
    /// coming.
    private func keepAnnouncing() {
        lab.loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self, self.lab != nil, self.current != nil || self.stepRecords.isEmpty else { return }
            self.reannounceAdvertising()
            self.keepAnnouncing()
        }
    }

    /// Whether the peripheral's own host has a connection (it may hear of one a little after the
    /// central does: both LE Connection Complete events can fall on one instant, the central's
    /// handled first).
    func peripheralHasLink(_ id: String) -> Bool {
        peripheralSeats[id]?.hasLink ?? false
    }
}
