import Bluetooth
import Capture
import CaptureImport
import CaptureTestSupport
import Profile
import Replica
import Testing

/// `gattemu import` bounded by its input: names kept distinct and capped, and a name too long to advertise
/// shortened to what a scan response holds.
@Suite struct ImportBoundsTests {
    static let device = BluetoothAddress("C0:11:22:33:44:55")!
    static let phone = HCIDirection.hostToController, answer = HCIDirection.controllerToHost

    /// A connection whose central reads the GAP Device Name (Read By Type 0x2A00) once per name, optionally
    /// after advertising without a name.
    static func script(names: [String], advertising: [UInt8]? = nil) -> CaptureScript {
        var s = CaptureScript()
        if let advertising {
            s.event(SyntheticHCI.legacyAdvertisingReports([(type: 0x00, addressType: 1, address: device, data: advertising, rssi: -50)]))
        }
        s.command(SyntheticHCI.leCreateConnection(peer: device, peerType: 1))
        s.event(SyntheticHCI.leConnectionComplete(handle: 0x40, role: 0, peer: device, peerType: 1))
        s.att(handle: 0x40, .exchangeMTURequest, [0x05, 0x02], from: phone)
        s.att(handle: 0x40, .exchangeMTUResponse, [0x05, 0x02], from: answer)
        for name in names {
            s.att(handle: 0x40, .readByTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x2A], from: phone)
            s.att(handle: 0x40, .readByTypeResponse, [UInt8(2 + name.utf8.count), 3, 0] + Array(name.utf8), from: answer)
        }
        s.att(handle: 0x40, .writeRequest, [9, 0, 1], from: phone)
        s.att(handle: 0x40, .writeResponse, [], from: answer)
        s.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        return s
    }

    /// Thousands of distinct GAP names read: the device keeps the first ``DistinctNames/limit``, each once,
    /// so choosing and naming the device stays linear in the capture.
    @Test func distinctNamesAreCapped() throws {
        let names = (0..<2_000).map { "Name-\($0)" }
        let bytes = Self.script(names: names + names.prefix(10)).btsnoop()
        for scope in [CaptureTrace.Scope.all, .survey] {
            let trace = try CaptureTrace.read(bytes: bytes, scope: scope)
            let choice = try #require(CaptureImport.choices(in: trace).first)
            #expect(choice.names == Array(names.prefix(DistinctNames.limit)))
            #expect(try CaptureImport.select("Name-7", in: trace) == choice)
        }
        let trace = try CaptureTrace.read(bytes: bytes)
        let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "names")
        #expect(replica.name == "Name-9", "the last name read")
    }

    /// A GAP Device Name longer than the 29 bytes a scan response has room for, and no advertised name:
    /// the profile advertises it shortened (whole characters) and loads; the device keeps its whole name.
    @Test func aLongGAPNameIsAdvertisedShortened() throws {
        let long = String(repeating: "Lock-", count: 8) + "Ä"  // 42 bytes
        let flagsAndService: [UInt8] = [2, 0x01, 0x06, 3, 0x03, 0x0F, 0x18]
        for (what, advertising) in [("advertised without a name", Optional(flagsAndService)), ("no advertising", nil)] {
            let trace = try CaptureTrace.read(bytes: Self.script(names: [long], advertising: advertising).btsnoop())
            let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "long")
            #expect(replica.name == long, "\(what)")
            let result = ReplicaProfile(replica).build()
            let errors = ProfileValidator.validate(json: result.text, file: "long.json").filter { $0.severity == .error }
            #expect(errors.isEmpty, "\(what): \(errors)")
            // What BlueZ is given: a name over 29 bytes overflows the scan response, and `gattemu import` refuses the profile.
            let profile = try ProfileLoader.load(json: result.text, file: "long.json")
            let advertised = profile.advertisements(variant: nil, environment: EngineEnvironment(adapterAddress: .zero)).map(
                \.localName)
            #expect(advertised == ["Lock-Lock-Lock-Lock-Lock-Lock"], "\(what)")
            #expect(result.report.contains { $0.contains("shortened") }, "\(what): \(result.report)")
        }
        // Multi-byte characters are never cut in half.
        #expect(AdvertisingData.scanResponseName(String(repeating: "Ä", count: 20)) == String(repeating: "Ä", count: 14))
        #expect(AdvertisingData.scanResponseName("Short") == "Short")
    }
}
