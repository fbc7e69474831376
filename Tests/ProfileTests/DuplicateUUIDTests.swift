import Bluetooth
import Foundation
import Testing

@testable import Profile

/// GATT lets characteristics in a service, and services in a table, share a UUID (a HID device's Report
/// characteristics, a split keyboard's two Battery services): the profile tells them apart by `id`.
@Suite struct DuplicateUUIDTests {
    static let keyboard = Paths.repository.appendingPathComponent("Tests/Fixtures/hid/hid-keyboard.json").path

    @Test func aHIDTableWithSharedUUIDsValidates() throws {
        #expect(ProfileValidator.validate(path: Self.keyboard).map(\.description) == [])
        let profile = try ProfileLoader.load(path: Self.keyboard)
        let hid = try #require(profile.services.first { $0.id == "hid" })
        let reports = hid.characteristics.filter { $0.uuid.description == "00002a4d-0000-1000-8000-00805f9b34fb" }
        #expect(reports.map(\.id) == ["keyboard_input", "consumer_input", "leds_output"])
        #expect(
            reports.map { $0.descriptors.map(\.id) } == [
                ["keyboard_input_reference"], ["consumer_input_reference"], ["leds_output_reference"],
            ])
        let batteries = profile.services.filter { $0.uuid.description == "0000180f-0000-1000-8000-00805f9b34fb" }
        #expect(batteries.map(\.id) == ["battery_left", "battery_right"])
        #expect(batteries.map { $0.characteristics.map(\.id) } == [["battery_level_left"], ["battery_level_right"]])
    }

    /// Rules name characteristics by id: each of the three Reports is its own, not "the first 2A4D".
    @Test func rulesAddressEachDuplicateByID() throws {
        var engine = BehaviourEngine(profile: try ProfileLoader.load(path: Self.keyboard), environment: adapter)
        let outcome = engine.handle(.write(characteristic: "leds_output", central: phone, value: [0x02], withResponse: true))
        #expect(outcome.firedRules == ["caps_lock_on"])
        #expect(outcome.notifications.map(\.characteristic) == ["keyboard_input", "consumer_input"])
        #expect(outcome.notifications.map(\.value) == [[0, 0, 0x39, 0, 0, 0, 0, 0], [0xE9, 0x00]])
        #expect(engine.handle(.write(characteristic: "keyboard_input", central: phone, value: [0x02], withResponse: true)).firedRules == [])
    }

    /// Ids stay unique: two characteristics (or services) with one UUID and one id are still an error.
    @Test func idsMustStillBeUnique() {
        let json = """
            { "format": 1, "services": [
              { "id": "battery", "uuid": "180f", "characteristics": [ { "id": "level", "uuid": "2a19", "flags": ["read"] } ] },
              { "id": "battery", "uuid": "180f", "characteristics": [ { "id": "level", "uuid": "2a19", "flags": ["read"] } ] } ] }
            """
        #expect(
            problems(json) == [
                "test.json:3:11 services[1].id: duplicate service id \"battery\" (first used at services[0])",
                "test.json:3:67 services[1].characteristics[0].id: duplicate characteristic id \"level\" (first used at services[0].characteristics[0])",
            ])
    }

    /// A UUID where an id belongs is refused, never taken as "every characteristic with this UUID" nor "the first":
    /// with duplicates it would be ambiguous, so it is refused alike without them, and the hint names the ids.
    @Test func aUUIDWhereAnIDBelongsIsRefusedWithTheIDs() {
        let json = """
            { "format": 1, "services": [ { "id": "hid", "uuid": "1812", "characteristics": [
                { "id": "keyboard", "uuid": "2a4d", "flags": ["read", "notify"] },
                { "id": "leds", "uuid": "2a4d", "flags": ["read", "write"] },
                { "id": "control", "uuid": "2a4c", "flags": ["write-without-response"] } ] } ],
              "rules": [ { "id": "r", "on": { "write": "2A4D" }, "do": { "notify": "keyboard", "value": "00" } },
                         { "id": "s", "on": { "write": "0x2a4c" }, "do": { "log": "suspend" } } ],
              "faults": [ { "on": "notify", "characteristic": "00002a4d-0000-1000-8000-00805f9b34fb", "drop": true } ] }
            """
        #expect(
            problems(json) == [
                "test.json:5:44 rules[0].on.write: unknown characteristic \"2A4D\" (2 characteristics have this UUID; name one by its id: \"keyboard\", \"leds\")",
                "test.json:6:44 rules[1].on.write: unknown characteristic \"0x2a4c\" (characteristics are named by id: this UUID's is \"control\")",
                "test.json:7:13 faults[0].characteristic: unknown characteristic \"00002a4d-0000-1000-8000-00805f9b34fb\" (2 characteristics have this UUID; name one by its id: \"keyboard\", \"leds\")",
            ])
    }

    /// `firmware.characteristic` and `firmware.revision` name characteristics too: mcumgr's SMP UUID there is
    /// refused with the id that has it, like a rule's.
    @Test func aFirmwareCharacteristicGivenByItsUUIDIsRefusedWithTheID() {
        let json = """
            { "format": 1, "services": [ { "id": "smp", "uuid": "8d53dc1d-1db7-4cd3-868b-8a527460aa84", "characteristics": [
                { "id": "smpData", "uuid": "da2e7828-fbce-4e01-ae9e-261174997c48", "flags": ["write-without-response", "notify"] },
                { "id": "revision", "uuid": "2a26", "flags": ["read"] } ] } ],
              "firmware": { "characteristic": "DA2E7828-FBCE-4E01-AE9E-261174997C48", "version": "1.0.0", "revision": "2a26" } }
            """
        #expect(
            problems(json) == [
                "test.json:4:35 firmware.characteristic: unknown characteristic \"DA2E7828-FBCE-4E01-AE9E-261174997C48\" (characteristics are named by id: this UUID's is \"smpData\")",
                "test.json:4:107 firmware.revision: unknown characteristic \"2a26\" (characteristics are named by id: this UUID's is \"revision\")",
            ])
    }

    /// Services are named by id too: a UUID where a service's id belongs (an include, a channel's `publish`, a
    /// firmware version's service) is refused with the id that has it, as for characteristics.
    @Test func aServiceGivenByItsUUIDIsRefusedWithTheID() {
        let json = """
            { "format": 1, "services": [
                { "id": "battery", "uuid": "180f", "characteristics": [ { "id": "level", "uuid": "2a19", "flags": ["read"] } ] },
                { "id": "app", "uuid": "1bc50001-0200-d29e-e511-446c609db825", "includes": ["180f"], "characteristics": [
                  { "id": "smpData", "uuid": "da2e7828-fbce-4e01-ae9e-261174997c48", "flags": ["write-without-response", "notify"] } ] } ],
              "channels": [ { "id": "data", "psm": 128, "publish": "1BC50001-0200-D29E-E511-446C609DB825" } ],
              "firmware": { "characteristic": "smpData", "version": "1.0.0", "services": [ { "service": "180F", "from": "1.1.0" } ] } }
            """
        #expect(
            problems(json) == [
                "test.json:3:81 services[1].includes[0]: unknown service \"180f\" (services are named by id: this UUID's is \"battery\")",
                "test.json:5:56 channels[0].publish: unknown service \"1BC50001-0200-D29E-E511-446C609DB825\" (services are named by id: this UUID's is \"app\")",
                "test.json:6:93 firmware.services[0].service: unknown service \"180F\" (services are named by id: this UUID's is \"battery\")",
            ])
    }

    /// A hostile profile: a thousand characteristics with one UUID and a rule naming the UUID for each: each hint
    /// names five ids, not all of them (the ids by UUID are indexed once, not searched per rule).
    @Test func manySharedUUIDsKeepTheHintShort() {
        let count = 1_000
        let characteristics = (0..<count).map { #"{ "id": "r\#($0)", "uuid": "2a4d", "flags": ["write"] }"# }.joined(separator: ",")
        let rules = (0..<count).map { #"{ "id": "w\#($0)", "on": { "write": "2a4d" }, "do": { "log": "x" } }"# }.joined(separator: ",")
        let json =
            #"{ "format": 1, "services": [ { "id": "hid", "uuid": "1812", "characteristics": [\#(characteristics)] } ], "rules": [\#(rules)] }"#
        let found = problems(json)
        #expect(found.count == count)
        #expect(
            found.first?.hasSuffix(#"(1000 characteristics have this UUID; name one by its id: "r0", "r1", "r2", "r3", "r4", …)"#) == true,
            "\(found.first ?? "")")
    }

    /// An advertisement that names both Battery services by id advertises their UUID once.
    @Test func servicesSharingAUUIDAreAdvertisedOnce() throws {
        let profile = try loadProfile(
            """
            { "format": 1, "advertisements": [ { "localName": "Keys", "serviceUUIDs": ["hid", "battery_left", "battery_right", "180f"] } ],
              "services": [ { "id": "hid", "uuid": "1812" }, { "id": "battery_left", "uuid": "180f" }, { "id": "battery_right", "uuid": "180F" } ] }
            """)
        let advertisement = try #require(profile.advertisements(variant: nil, environment: adapter).first)
        #expect(
            advertisement.serviceUUIDs.map(\.description) == [
                "00001812-0000-1000-8000-00805f9b34fb", "0000180f-0000-1000-8000-00805f9b34fb",
            ])
    }
}
