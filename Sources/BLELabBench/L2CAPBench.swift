import BLELab
import BLERuntime
import GAP
import HostLink

/// 1 MiB through an LE credit based channel (Core 5.4 Vol 3 Part A 10.1) between two hosts on
/// the sim, central to peripheral, at a 7.5 ms connection interval and the sim's default link
/// (27-octet LL payloads, `AirModel.maxPDUsPerEvent` per event): SDUs of the peripheral's MTU
/// (2048) in K-frames of its MPS (247), within its 16 credits, topped up as SDUs arrive.
/// `l2cap_coc_throughput` is what the simulated link carries per virtual second (kB = 1000
/// octets of SDU data); `l2cap_coc_throughput_wall`, how fast the lab simulates it.
func benchL2CAPThroughput() throws {
    let total = 1 << 20
    var bestWall = 0.0
    var virtualSeconds = 0.0
    for round in 0..<BenchMode.rounds(3) {
        let lab = Lab(seed: 31 + UInt64(round))
        let params = ConnectionParameters(interval: .microseconds(7500), supervisionTimeout: .seconds(4))
        let sink = try lab.addDevice("sink", recordsTraffic: false)
        let source = try lab.addDevice("source", configuration: HostConfiguration(connectionParameters: params), recordsTraffic: false)
        try lab.powerOn()
        var received = 0
        let psm = try sink.host.publishL2CAPChannel(parameters: L2CAPChannelParameters(mtu: 2048, mps: 247, initialCredits: 16)) { _, channel in
            channel.onSDU = { received += $0.count }
        }
        try lab.wait { done in
            sink.host.startAdvertising(AdvertisingConfiguration(data: .make(name: "sink"), interval: .milliseconds(20)), completion: done)
        }.get()
        let connection = try lab.wait("connect") { done in source.host.connect(to: sink.address, completion: done) }.get()
        let channel = try lab.wait("open") { done in
            connection.openL2CAPChannel(psm: psm, parameters: L2CAPChannelParameters(mtu: 2048, mps: 247, initialCredits: 16), completion: done)
        }.get()
        let sdu = [UInt8](repeating: 0xA5, count: channel.remoteMTU)
        var queued = 0
        // Keep a few SDUs queued, as an app writing on "space available" does.
        func feed() {
            while queued < total, channel.unsentOctets < 4 * sdu.count {
                let n = min(sdu.count, total - queued)
                try? channel.send(n == sdu.count ? sdu : Array(sdu.prefix(n)))
                queued += n
            }
        }
        channel.onSendProgress = { feed() }
        let start = lab.loop.now
        let wall = wallSeconds {
            feed()
            _ = lab.run(within: .seconds(100_000), until: { received == total })
        }
        guard received == total else { throw BenchError(description: "l2cap: \(received) of \(total) octets delivered") }
        virtualSeconds = (lab.loop.now - start).seconds
        bestWall = max(bestWall, Double(total) / wall)
    }
    print("l2cap_coc_throughput: \(String(format2: Double(total) / virtualSeconds / 1000)) kB/s")
    print("l2cap_coc_throughput_wall: \(Int(bestWall / 1000)) kB/s")
}
