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

    /// `count` distinct advertisers (C1:00:00:…), one report each, ten to an event (its parameters hold 255 bytes).
    static func advertise(count: Int, into s: inout CaptureScript) {
        for batch in stride(from: 0, to: count, by: 10) {
            var reports: [(type: UInt8, addressType: UInt8, address: BluetoothAddress, data: [UInt8], rssi: Int8)] = []
            for n in batch..<min(batch + 10, count) {
                let bytes: [UInt8] = [0xC1, 0, 0, UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
                reports.append((type: 0x00, addressType: 1, address: BluetoothAddress(bytes: bytes)!, data: [2, 0x01, 0x06], rssi: -60))
            }
            s.event(SyntheticHCI.legacyAdvertisingReports(reports))
        }
    }

    /// A long snoop log with scanning on: 20,000 reports of one device (each with a counter in its manufacturer data)
    /// are counted, not kept; the advertisement imported is still the last one before the connection, and the reports
    /// after it do not change it.
    @Test func advertisingReportsAreCountedNotKept() throws {
        var s = CaptureScript()
        func report(_ n: Int) -> [UInt8] {
            [2, 0x01, 0x06, 5, 0x09] + Array("Lock".utf8) + [5, 0xFF, 0xFF, 0xFF, UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF)]
        }
        for batch in stride(from: 0, to: 10_000, by: 10) {  // ten reports: an event's parameters hold 255 bytes
            s.event(SyntheticHCI.legacyAdvertisingReports((batch..<batch + 10).map { (0x00, 1, Self.device, report($0), -50) }))
        }
        s.command(SyntheticHCI.leCreateConnection(peer: Self.device, peerType: 1))
        s.event(SyntheticHCI.leConnectionComplete(handle: 0x40, role: 0, peer: Self.device, peerType: 1))
        s.att(handle: 0x40, .writeRequest, [9, 0, 1], from: Self.phone)
        s.att(handle: 0x40, .writeResponse, [], from: Self.answer)
        s.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        for batch in stride(from: 10_000, to: 20_000, by: 10) {
            s.event(SyntheticHCI.legacyAdvertisingReports((batch..<batch + 10).map { (0x00, 1, Self.device, report($0), -50) }))
        }
        let trace = try CaptureTrace.read(bytes: s.btsnoop(), scope: .survey)
        let advertiser = try #require(trace.advertisers.first)
        #expect(trace.advertisers.count == 1 && advertiser.reportCount == 20_000)
        #expect(advertiser.reports.count == Advertiser.keptReports)
        let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "scanning")
        #expect(replica.advertisingData == advertiser.advertisingData?.advertisingData)
        #expect(
            replica.advertisingData?.manufacturerData.first?.data == [UInt8(9_999 & 0xFF), UInt8(9_999 >> 8)],
            "the last report before the connection")
        #expect(replica.advertisingProvenance?.contains("(20000 reports from this device in the capture)") == true)
    }

    /// Two real devices that validated and did not run: one advertising service data with no payload (AD 0x16 with only
    /// the 16-bit UUID: bluetoothd refused the advertisement), one whose name is padded with NULs (a D-Bus string
    /// cannot hold one). The profile written is one bluetoothd takes, and the report says what changed.
    @Test func advertisingBlueZCannotCarryIsAdaptedWithANote() throws {
        var s = CaptureScript()
        let advertising: [UInt8] = [2, 0x01, 0x06, 3, 0x03, 0x08, 0x18, 3, 0x16, 0x08, 0x18, 3, 0xFF, 0x59, 0x00]
        let response: [UInt8] = [9, 0x09] + Array("Meter".utf8) + [0, 0, 0]
        s.event(SyntheticHCI.legacyAdvertisingReports([(0x00, 1, Self.device, advertising, -50)]))
        s.event(SyntheticHCI.legacyAdvertisingReports([(0x04, 1, Self.device, response, -50)]))
        s.command(SyntheticHCI.leCreateConnection(peer: Self.device, peerType: 1))
        s.event(SyntheticHCI.leConnectionComplete(handle: 0x40, role: 0, peer: Self.device, peerType: 1))
        s.att(handle: 0x40, .writeRequest, [9, 0, 1], from: Self.phone)
        s.att(handle: 0x40, .writeResponse, [], from: Self.answer)
        s.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        let trace = try CaptureTrace.read(bytes: s.btsnoop())
        let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "meter")
        let result = ReplicaProfile(replica).build()
        let diagnostics = ProfileValidator.validate(json: result.text, file: "meter.json")
        #expect(diagnostics.filter { $0.severity == .error }.isEmpty, "\(diagnostics)\n\(result.text)")
        let profile = try ProfileLoader.load(json: result.text, file: "meter.json")
        let spec = profile.advertisement(variant: nil, environment: EngineEnvironment(adapterAddress: .zero))
        #expect(spec.localName == "Meter")
        #expect(spec.serviceData.isEmpty && spec.manufacturerData.isEmpty, "\(spec)")
        #expect(spec.serviceUUIDs == [BluetoothUUID(0x1808)])
        #expect(result.report.contains { $0.contains("service data of 1808 with no bytes left out") }, "\(result.report)")
        #expect(result.report.contains { $0.contains("manufacturer data of company 0x0059 with no bytes left out") }, "\(result.report)")
        #expect(result.report.contains { $0.contains("has NUL bytes") && $0.contains("advertised as \"Meter\"") }, "\(result.report)")
    }

    /// A million advertisers (a crowded room, or a made capture): the trace keeps the first
    /// ``CaptureTrace/maximumAdvertisers`` and counts the rest's reports; the device connected to past them is still
    /// found by its connection; and an error listing devices names the first ones and how many more.
    @Test func advertisersPastTheLimitAreCountedAndListsAreCapped() throws {
        var s = CaptureScript()
        let extra = 30
        let total = CaptureTrace.maximumAdvertisers + extra
        Self.advertise(count: total, into: &s)
        for n in 0..<60 {
            let address = BluetoothAddress(bytes: [0xD1, 0, 0, 0, 0, UInt8(n)])!
            let handle = UInt16(0x40 + n)
            s.event(SyntheticHCI.leConnectionComplete(handle: handle, role: 0, peer: address, peerType: 1))
            s.att(handle: handle, .writeRequest, [9, 0, 1], from: Self.phone)
            s.att(handle: handle, .writeResponse, [], from: Self.answer)
            s.event(SyntheticHCI.disconnectionComplete(handle: handle))
        }
        let trace = try CaptureTrace.read(bytes: s.btsnoop(), scope: .survey)
        #expect(trace.advertisers.count == CaptureTrace.maximumAdvertisers)
        #expect(trace.untrackedAdvertisingReports == extra)
        let choices = CaptureImport.choices(in: trace)
        #expect(choices.filter { !$0.connections.isEmpty }.count == 60, "each connected device is a choice")
        do {
            _ = try CaptureImport.select(nil, in: trace)
            Issue.record("60 connected devices: no choice to make alone")
        } catch {
            let lines = error.description.split(separator: "\n")
            #expect(lines.count == 1 + CaptureImport.SelectionError.listedChoices + 1, "\(lines.count) lines")
            #expect(lines.last?.contains("and 10 more (gattemu import --list shows them)") == true, "\(lines.last ?? "")")
        }
    }

    /// Only advertisers, more than the trace keeps: the error says there are more than it lists, and how many reports
    /// were not kept, rather than a count that is the limit's.
    @Test func anErrorAboutOnlyAdvertisersSaysSomeWereNotKept() throws {
        var s = CaptureScript()
        let total = CaptureTrace.maximumAdvertisers + 25
        Self.advertise(count: total, into: &s)
        let trace = try CaptureTrace.read(bytes: s.btsnoop(), scope: .survey)
        do {
            _ = try CaptureImport.select(nil, in: trace)
            Issue.record("10,025 advertisers: no choice to make alone")
        } catch {
            let text = error.description
            #expect(text.hasPrefix("the capture talks to \(CaptureTrace.maximumAdvertisers) or more peripherals;"), "\(text.prefix(200))")
            #expect(
                text.hasSuffix(
                    "… and 25 advertising reports of advertisers past the first 10000, not kept (a device the capture connected to is listed whatever its place)"
                ), "\(text.suffix(300))")
        }
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
