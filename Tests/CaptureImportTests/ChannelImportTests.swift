import Bluetooth
import Capture
import CaptureImport
import CaptureTestSupport
import Profile
import Replica
import Testing

/// LE credit-based channels in a capture: the signalling that opens them (request and response), their K-frames put
/// together into SDUs, and the profile that replays them (`channels`, `open` and `sdu` rules).
@Suite struct ChannelImportTests {
    static let le16 = LockSession.le16
    static let phone = HCIDirection.hostToController
    static let device = HCIDirection.controllerToHost

    /// The lock's session, then a channel on PSM 0x0081: the phone's request (its CID 0x0040, MTU 1024, MPS 100), the
    /// device's response (its CID 0x0045), the device's greeting, two requests answered (one with a 300-byte SDU in
    /// K-frames of 100), a refused second request, a K-frame that fits no SDU.
    static func script() -> CaptureScript {
        var s = LockSession.script()
        let handle: UInt16 = 0x40
        let disconnection = s.packets.removeLast()  // the channel's traffic goes before it
        func signal(_ code: UInt8, _ identifier: UInt8, _ body: [UInt8], from: HCIDirection) {
            s.l2cap(handle: handle, channel: 5, [code, identifier] + le16(UInt16(body.count)) + body, from: from)
        }
        func sdu(_ value: [UInt8], to channel: UInt16, from: HCIDirection, mps: Int = 100) {
            let framed = le16(UInt16(value.count)) + value
            var offset = 0
            repeat {
                s.l2cap(handle: handle, channel: channel, Array(framed[offset..<min(framed.count, offset + mps)]), from: from)
                offset += mps
            } while offset < framed.count
        }
        signal(0x14, 7, le16(0x81) + le16(0x40) + le16(1024) + le16(100) + le16(8), from: phone)
        signal(0x15, 7, le16(0x45) + le16(2048) + le16(100) + le16(4) + le16(0), from: device)
        sdu(Array("hello".utf8), to: 0x40, from: device)
        sdu([0x01], to: 0x45, from: phone)
        sdu([0x81, 0x01], to: 0x40, from: device)
        sdu([0x02], to: 0x45, from: phone)
        sdu((0..<300).map { UInt8($0 & 0xFF) }, to: 0x40, from: device)
        sdu([0xEE], to: 0x40, from: device)
        // Another request, refused (no credits, result 0x0006): nothing is recorded on its channel.
        signal(0x14, 8, le16(0x81) + le16(0x41) + le16(1024) + le16(100) + le16(8), from: phone)
        signal(0x15, 8, le16(0) + le16(0) + le16(0) + le16(0) + le16(6), from: device)
        s.l2cap(handle: handle, channel: 0x41, le16(2) + [1, 2], from: device)
        // A K-frame longer than the SDU it starts: dropped, reported.
        s.l2cap(handle: handle, channel: 0x45, le16(1) + [1, 2, 3], from: phone)
        s.packets.append(disconnection)
        return s
    }

    @Test func kFramesBecomeSDUsOfTheirChannel() throws {
        let trace = try CaptureTrace.read(bytes: Self.script().btsnoop())
        let sdus = trace.channelSDUs
        #expect(sdus.map(\.psm) == Array(repeating: 0x81, count: 6))
        #expect(sdus.map(\.value.count) == [5, 1, 2, 1, 300, 1])
        #expect(
            sdus.map(\.direction) == [
                .peripheralToCentral, .centralToPeripheral, .peripheralToCentral, .centralToPeripheral, .peripheralToCentral,
                .peripheralToCentral,
            ])
        #expect(sdus[4].value == (0..<300).map { UInt8($0 & 0xFF) }, "an SDU put together from four K-frames")
        #expect(trace.problems.contains { $0.description.contains("L2CAP channel 0x0045") }, "the K-frame longer than its SDU")
        let undecoded = trace.notes.compactMap { note -> UInt16? in
            if case .undecodedChannel(_, let channel, _, _) = note { channel } else { nil }
        }
        #expect(undecoded == [0x41], "an app's channel is decoded; the refused one's is not a channel")
    }

    @Test func theProfileListensOnThePSMAndReplaysTheSDUs() throws {
        let trace = try CaptureTrace.read(bytes: Self.script().btsnoop())
        let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "coc.btsnoop")
        #expect(replica.channels.map(\.psm) == [0x81])
        let result = ReplicaProfile(replica).build()
        let profile = try ProfileLoader.load(json: result.text, file: "coc.json")
        let channel = try #require(profile.channels.first)
        #expect(channel.psm == .fixed(0x81) && channel.id == "psm0081" && channel.mtu == 2048)
        var engine = BehaviourEngine(profile: profile, environment: EngineEnvironment(adapterAddress: .zero))
        let link = ChannelLink(id: 1, central: CentralID(address: BluetoothAddress("11:22:33:44:55:66")!))
        #expect(
            engine.handle(.channelOpen(channel: "psm0081", link: link)).effects == [
                .send(channel: "psm0081", value: Array("hello".utf8), links: [1])
            ])
        #expect(
            engine.handle(.sdu(channel: "psm0081", link: link, value: [0x01])).effects == [
                .send(channel: "psm0081", value: [0x81, 0x01], links: [1])
            ])
        #expect(
            engine.handle(.sdu(channel: "psm0081", link: link, value: [0x02])).effects == [
                .send(channel: "psm0081", value: (0..<300).map { UInt8($0 & 0xFF) }, links: [1]),
                .send(channel: "psm0081", value: [0xEE], links: [1]),
            ])
        #expect(result.report.contains { $0.contains("channel \"psm0081\" (PSM 0x0081): 6 SDUs") }, "\(result.report)")
    }

    /// An enhanced credit-based request (0x17) for two channels and its response (0x18) naming the device's two: the
    /// SDUs of both are the PSM's.
    @Test func anEnhancedRequestsChannelsAreDecodedToo() throws {
        var s = LockSession.script()
        let disconnection = s.packets.removeLast()
        let handle: UInt16 = 0x40
        func signal(_ code: UInt8, _ identifier: UInt8, _ body: [UInt8], from: HCIDirection) {
            s.l2cap(handle: handle, channel: 5, [code, identifier] + Self.le16(UInt16(body.count)) + body, from: from)
        }
        let le16 = Self.le16
        signal(0x17, 9, le16(0x82) + le16(512) + le16(512) + le16(8) + le16(0x50) + le16(0x51), from: Self.phone)
        signal(0x18, 9, le16(1024) + le16(512) + le16(4) + le16(0) + le16(0x60) + le16(0x61), from: Self.device)
        s.l2cap(handle: handle, channel: 0x60, le16(1) + [0x0A], from: Self.phone)
        s.l2cap(handle: handle, channel: 0x61, le16(1) + [0x0B], from: Self.phone)
        s.l2cap(handle: handle, channel: 0x51, le16(2) + [0x8B, 0x0B], from: Self.device)
        s.l2cap(handle: handle, channel: 0x50, le16(2) + [0x8A, 0x0A], from: Self.device)
        s.packets.append(disconnection)
        let trace = try CaptureTrace.read(bytes: s.btsnoop())
        #expect(trace.channelSDUs.map(\.psm) == [0x82, 0x82, 0x82, 0x82])
        #expect(trace.channelSDUs.map(\.channel) == [0x60, 0x61, 0x51, 0x50])
        #expect(trace.channelSDUs.map(\.value) == [[0x0A], [0x0B], [0x8B, 0x0B], [0x8A, 0x0A]])
    }
}
