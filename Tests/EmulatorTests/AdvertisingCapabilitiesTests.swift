import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Emulator
import Profile
import Testing

/// A profile's advertising held to what an adapter offers: each problem located in the profile, with the adapter's
/// limit named; what bluetoothd would quietly not apply is a warning.
@Suite struct AdvertisingCapabilitiesTests {
    static let threeSets = #"""
        {"format": 1,
         "advertisements": [
           {"localName": "Reader", "serviceUUIDs": ["180f"], "secondaryChannel": "2M", "txPower": 4},
           {"type": "broadcast", "manufacturerData": {"0x004C": "02 15 {fill(0x11, 23)}"}, "secondaryChannel": "Coded",
            "scanResponse": {"serviceData": {"feaa": "10 00"}}},
           {"type": "broadcast", "serviceData": {"feaa": "20 00"},
            "variants": {"far": {"secondaryChannel": "Coded"}}}
         ]}
        """#

    static func profile(_ json: String = threeSets) throws -> DeviceProfile { try ProfileLoader.load(json: json, file: "rig.json") }

    static func bluetooth5(instances: Int = 3) -> AdvertisingCapabilities {
        var capabilities = AdvertisingCapabilities()
        capabilities.supportedInstances = instances
        capabilities.secondaryChannels = ["1M", "2M", "Coded"]
        capabilities.features = ["CanSetTxPower"]
        capabilities.maxAdvertisingDataLength = 251
        capabilities.maxScanResponseLength = 251
        capabilities.minTxPower = -20
        capabilities.maxTxPower = 10
        return capabilities
    }

    @Test func aBluetooth5AdapterTakesEverySet() throws {
        #expect(ProfileMapping.advertisingProblems(try Self.profile(), on: Self.bluetooth5(), adapter: "hci5").isEmpty)
    }

    @Test func moreSetsThanFreeInstancesIsLocatedAtTheFirstOneOver() throws {
        let problems = ProfileMapping.advertisingProblems(try Self.profile(), on: Self.bluetooth5(instances: 2), adapter: "hci5")
        #expect(problems.count == 1)
        let problem = try #require(problems.first)
        #expect(problem.severity == .error && problem.path == "advertisements[2]" && problem.line == 6)
        #expect(problem.message.contains("hci5 has 2 advertising instances free (SupportedInstances 2)"))
        #expect(problem.message.contains("the profile has 3 advertisements"))
    }

    @Test func aSecondaryChannelTheAdapterLacksIsLocatedInTheSetAndTheVariant() throws {
        var capabilities = Self.bluetooth5()
        capabilities.secondaryChannels = ["1M", "2M"]
        let problems = ProfileMapping.advertisingProblems(try Self.profile(), on: capabilities, adapter: "hci5")
        #expect(problems.map(\.path) == ["advertisements[1].secondaryChannel", "advertisements[2].variants.far.secondaryChannel"])
        #expect(problems[0].message == "hci5 offers the secondary channels 1M, 2M (SupportedSecondaryChannels), not Coded")
        #expect(problems[1].message.hasPrefix("variant \"far\": "))
        // A Bluetooth 4 controller: no extended advertising at all.
        var legacy = AdvertisingCapabilities()
        legacy.supportedInstances = 5
        let onLegacy = ProfileMapping.advertisingProblems(try Self.profile(), on: legacy, adapter: "hci0").filter { $0.severity == .error }
        #expect(onLegacy.count == 3)
        #expect(onLegacy.allSatisfy { $0.message.contains("hci0 has no extended advertising") })
        #expect(onLegacy.allSatisfy { $0.hint?.contains("legacy advertising") == true })
    }

    @Test func txPowerOutsideTheRangeIsAnErrorAndUnappliedOneAWarning() throws {
        var capabilities = Self.bluetooth5()
        capabilities.maxTxPower = 2
        let problems = ProfileMapping.advertisingProblems(try Self.profile(), on: capabilities, adapter: "hci5")
        #expect(problems.map(\.path) == ["advertisements[0].txPower"])
        #expect(problems.first?.message == "txPower 4 dBm is outside what hci5 can send (MinTxPower -20, MaxTxPower 2)")
        capabilities = Self.bluetooth5()
        capabilities.features = []
        let warnings = ProfileMapping.advertisingProblems(try Self.profile(), on: capabilities, adapter: "hci5", experimental: false)
        #expect(warnings.allSatisfy { $0.severity == .warning })
        #expect(warnings.map(\.path) == ["advertisements[0].txPower", "advertisements[1].scanResponse"])
        #expect(warnings.last?.message.contains("without -E") == true)
    }

    @Test func bytesBeyondTheAdaptersMaxAdvLenAreRefused() throws {
        var capabilities = Self.bluetooth5()
        capabilities.maxAdvertisingDataLength = 31
        let problems = ProfileMapping.advertisingProblems(try Self.profile(), on: capabilities, adapter: "hci5")
        #expect(problems.map(\.path) == ["advertisements[1]"])
        #expect(problems.first?.message.contains("advertising data needs 32 of 31 bytes") == true)
    }

    @Test func validationHoldsLegacySetsTo31AndExtendedOnesTo251() throws {
        #expect(ProfileMapping.advertisementDiagnostics(try Self.profile()).isEmpty)
        let long = try Self.profile(
            #"{"format": 1, "advertisements": [{"type": "broadcast", "manufacturerData": {"0xFFFF": "{fill(1, 40)}"}}]}"#)
        let problems = ProfileMapping.advertisementDiagnostics(long)
        #expect(problems.count == 1)
        #expect(problems.first?.hint?.contains("set secondaryChannel for extended advertising") == true)
        let extended = try Self.profile(
            #"{"format": 1, "advertisements": [{"type": "broadcast", "secondaryChannel": "1M", "manufacturerData": {"0xFFFF": "{fill(1, 244)}"}}]}"#
        )
        #expect(ProfileMapping.advertisementDiagnostics(extended).isEmpty)
        let tooLong = try Self.profile(
            #"{"format": 1, "advertisements": [{"type": "broadcast", "secondaryChannel": "1M", "manufacturerData": {"0xFFFF": "{fill(1, 245)}"}}]}"#
        )
        #expect(ProfileMapping.advertisementDiagnostics(tooLong).first?.message.contains("needs 252 of 251 bytes") == true)
    }

    /// On a running bluetoothd: the start is refused before anything is registered, with the located reason.
    @Test func anAdapterThatCannotAdvertiseTheProfileRefusesTheStart() async throws {
        let json =
            #"{"format": 1, "advertisements": [{"localName": "A"}, {"localName": "B"}, {"localName": "C"}, {"localName": "D"}, {"localName": "E"}]}"#
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let emulator = try Emulator(profile: try Self.profile(json), options: options, log: try EventLog(format: .text))
        do {
            try await emulator.start()
            Issue.record("five sets started on an adapter with four instances")
        } catch {
            #expect(error.description.contains("rig.json:1:"))
            #expect(error.description.contains("advertisements[4]: hci0 has 4 advertising instances free"))
        }
        #expect(bluetoothd.advertisements.isEmpty && bluetoothd.applications.isEmpty)
        await emulator.stop()
        _ = bus
    }
}

extension AdvertisingCapabilitiesTests {
    /// A beacon that nobody connects to rotates its payload: a timer that starts with the device (`"start": "run"`)
    /// sets the state its manufacturer data renders, and the set is updated on air each time; a reset starts it again.
    @Test func aBeaconCounterRotatesOnATimerThatStartsWithTheDevice() async throws {
        let json = #"""
            {"format": 1, "state": {"beat": 0},
             "advertisements": [{"type": "broadcast", "secondaryChannel": "1M", "manufacturerData": {"0xFFFF": "BE {u8(beat)}"}}],
             "timers": [{"id": "rotate", "every": "20ms", "start": "run"}],
             "rules": [{"on": {"timer": "rotate"}, "do": {"set": {"beat": {"increment": 1}}}}]}
            """#
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: try Self.profile(json), options: options, log: log)
        try await emulator.start()
        #expect(bluetoothd.advertisements.count == 1)
        func changes() -> [String] { log.events(since: 0).filter { $0.kind == .advertisementChanged }.compactMap(\.detail) }
        #expect(try await eventually { changes().count >= 3 }, "the counter moved on air without any central")
        #expect(changes().first?.contains("manufacturer 0xFFFF: be 01") == true, "\(changes())")
        await emulator.reset()
        let before = changes().count
        #expect(try await eventually { changes().count > before + 1 }, "a reset starts the timer again")
        await emulator.stop()
        _ = bus
    }
}
